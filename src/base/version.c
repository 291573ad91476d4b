// SPDX-License-Identifier: MIT
/* The version of the library that runs, from the build's <devres/version.h>. */
#include <devres/devres.h>
#include <devres/version.h>

const char *devres_version(void)
{
	return DEVRES_VERSION_STRING;
}
