// SPDX-License-Identifier: MIT
/*
 * The hook a layer above the library sets to be told when the library
 * calls code that must not sleep (devres_atomic_hook_set()): the compat
 * headers count the context per thread there, so that their might_sleep()
 * stays one load of their own. The subsystems that call such code read
 * it once around the call (devres__atomic_hook()).
 */
#include "subsys.h"

HIDDEN devres_atomic_hook_t devres__atomic_hook_fn;

devres_atomic_hook_t devres_atomic_hook_set(devres_atomic_hook_t hook)
{
	/* A bad one would be called from every interrupt: refused. */
	if (devres__opt_bad(NULL, (const void *)(uintptr_t)hook, __func__,
			    "hook"))
		return NULL;
	return __atomic_exchange_n(&devres__atomic_hook_fn, hook,
				   __ATOMIC_ACQ_REL);
}
