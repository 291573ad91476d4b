// SPDX-License-Identifier: MIT
/*
 * What a subsystem keeps for a device outside the device's list of
 * resources (a DMA state and its mappings, a pool), dropped at the
 * device's final release: each subsystem arms its hook at the first such
 * state it makes, and the release calls the armed hooks in rank order.
 * The core names no subsystem, and a process that never made such a state
 * pays one load at each release.
 */
#include "internal.h"

static void (*hooks[DEVRES_DEV_HOOK_NR])(struct device *dev);
static unsigned int armed;

void devres__dev_hook_arm(enum devres__dev_hook_rank rank,
			  void (*gone)(struct device *dev))
{
	if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE) & (1u << rank))
		return;
	__atomic_store_n(&hooks[rank], gone, __ATOMIC_RELAXED);
	__atomic_or_fetch(&armed, 1u << rank, __ATOMIC_RELEASE);
}

void devres__dev_hooks_run(struct device *dev)
{
	unsigned int mask = __atomic_load_n(&armed, __ATOMIC_ACQUIRE);

	if (likely(!mask))
		return;
	for (unsigned int i = 0; i < DEVRES_DEV_HOOK_NR; i++)
		if (mask & (1u << i))
			__atomic_load_n(&hooks[i], __ATOMIC_RELAXED)(dev);
}
