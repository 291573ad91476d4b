/* SPDX-License-Identifier: MIT */
/*
 * The devres lock's membarrier registration (base/lock.c), made by a
 * child of fork() while it has one thread. The library registers at a
 * process's first biased lock; a child that has started a thread by then
 * waits there for an RCU grace period, 10 to 30 ms, which for a test that
 * runs hundreds of such children was most of its time. The library's own
 * registration then finds it made and returns at once: its path is the
 * same.
 */
#ifndef DEVRES_TESTS_MEMBARRIER_EARLY_H
#define DEVRES_TESTS_MEMBARRIER_EARLY_H

#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

static inline void membarrier_early(void)
{
	(void)syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		      0, 0);
}

#endif
