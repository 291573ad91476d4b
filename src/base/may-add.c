// SPDX-License-Identifier: MIT
/*
 * The question a layer above the library asks before a managed call of
 * its own acquires anything: would its node be taken? The library's own
 * managed calls ask it inline (devres__dev_ok_to_acquire()).
 */
#include <errno.h>
#include <devres/devres.h>
#include "subsys.h"

int devres_may_add(struct device *dev, const char *func)
{
	int err = errno;
	int ret = 0;

	/* A device of the parent process too: the error of a bad device. */
	if (devres__arg_bad(NULL, func, __func__, "func") ||
	    !devres__dev_ok(dev, func))
		ret = -EINVAL;
	else if (devres__dev_locked_here(dev, func))
		ret = -EDEADLK;
	errno = err;
	return ret;
}
