// SPDX-License-Identifier: MIT
/*
 * fail-nth fault injection, with the kernel's semantics: arming n makes the
 * n-th fault-injectable call of this thread fail.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <devres/fault.h>
#include "internal.h"

TLS_FAST unsigned int devres__fail_nth;

__attribute__((constructor)) static void fault_init(void)
{
	const char *s = devres__getenv("DEVRES_FAIL_NTH");
	unsigned long n;
	char *end;

	if (!s || !*s)
		return;
	errno = 0;
	n = strtoul(s, &end, 10);
	/* A value that is not a count arms nothing rather than something. */
	if (*s == '-' || *end || errno || n > UINT_MAX) {
		devres__warn(NULL, "DEVRES_FAIL_NTH", "'%s' is not a count", s);
		return;
	}
	devres__fail_nth = (unsigned int)n;
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
