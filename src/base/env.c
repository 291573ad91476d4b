// SPDX-License-Identifier: MIT
/*
 * The environment, read the one way that is safe in a privileged process.
 *
 * A setuid or setgid program, or one with file capabilities, runs with
 * AT_SECURE: its environment was chosen by a less privileged user. Every
 * DEVRES_* knob (fail-nth, logging, a sysfs root ...) would let that user
 * steer the program, so none is honoured there (docs/security.md).
 */
#include <stdlib.h>
#include <sys/auxv.h>
#include "subsys.h"

const char *devres__getenv(const char *name)
{
	return secure_getenv(name);
}

bool devres__secure(void)
{
	return getauxval(AT_SECURE) != 0;
}
