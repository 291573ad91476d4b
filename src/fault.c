// SPDX-License-Identifier: MIT
/*
 * fail-nth fault injection, with the kernel's semantics: arming n makes the
 * n-th fault-injectable call of this thread fail.
 */
#include <stdlib.h>
#include <devres/fault.h>
#include "internal.h"

TLS_FAST unsigned int devres__fail_nth;

__attribute__((constructor)) static void fault_init(void)
{
	const char *s = getenv("DEVRES_FAIL_NTH");

	if (s && *s)
		devres__fail_nth = (unsigned int)strtoul(s, NULL, 10);
}

bool devres__fail_now(void)
{
	return --devres__fail_nth == 0;
}

void devres_fail_nth(unsigned int n)
{
	devres__fail_nth = n;
}

unsigned int devres_fail_nth_get(void)
{
	return devres__fail_nth;
}
