// SPDX-License-Identifier: MIT
/*
 * Read-only mode (pci_sysfs_set_readonly()) against the writes already
 * under way when it is switched on. A write checks the mode, then opens
 * its file and writes it: checked alone, a write that saw the mode off
 * landed after the switch had returned, so a program that set the mode
 * could still find its device written. Each write to a device is made
 * between pci__write_begin() and pci__write_end(), counted in flight; the
 * switch sets the mode, then waits until no write counted before it is
 * left. A write is counted before it reads the mode, and the switch sets
 * the mode before it reads the count (both sequentially consistent): a
 * write either sees the mode, or is counted when the switch looks.
 *
 * A backend's operations are counted the same way, by their class
 * (bkops.c).
 *
 * In a child of fork() the count is the forking thread's own writes in
 * flight, each thread's kept beside the shared one: the other threads'
 * never end there, and the forking thread's (a fork from inside a
 * backend's operation, or from a signal handler that interrupted one)
 * end as their calls return. Dropped to zero, the count went below it at
 * the end of such a write, and every switch of the child waited for
 * ever.
 *
 * Mappings are the other half: pci__bars_protect() (bars.c) takes write
 * access away from every mapping made, under the mappings' lock.
 */
#include <pthread.h>
#include "pci.h"

static bool readonly;
static unsigned int writes;
/* This thread's part of @writes. */
static TLS_FAST unsigned int own_writes;
static pthread_mutex_t writes_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t writes_done = PTHREAD_COND_INITIALIZER;

bool pci__readonly(void)
{
	return __atomic_load_n(&readonly, __ATOMIC_SEQ_CST);
}

bool pci__write_begin(void)
{
	own_writes++;
	__atomic_add_fetch(&writes, 1, __ATOMIC_SEQ_CST);
	if (!pci__readonly())
		return true;
	pci__write_end();
	return false;
}

void pci__write_hold(void)
{
	own_writes++;
	__atomic_add_fetch(&writes, 1, __ATOMIC_SEQ_CST);
}

void pci__write_end(void)
{
	own_writes--;
	if (__atomic_sub_fetch(&writes, 1, __ATOMIC_SEQ_CST))
		return;
	/*
	 * Whatever the mode says now (a switch waiting may have been
	 * followed by one that clears it). Under the lock: a switch is
	 * either before its look at the count, or asleep.
	 */
	pthread_mutex_lock(&writes_lock);
	pthread_cond_broadcast(&writes_done);
	pthread_mutex_unlock(&writes_lock);
}

void pci__write_fork_child(void)
{
	/* The writes of other threads are not the child's; this one's are. */
	__atomic_store_n(&writes, own_writes, __ATOMIC_RELAXED);
	pthread_mutex_init(&writes_lock, NULL);
	pthread_cond_init(&writes_done, NULL);
}

void pci_sysfs_set_readonly(bool ro)
{
	int cancel;

	__atomic_store_n(&readonly, ro, __ATOMIC_SEQ_CST);
	if (!ro)
		return;
	/* No cancellation point: pthread_cond_wait() would be one. */
	cancel = devres__cancel_off();
	pthread_mutex_lock(&writes_lock);
	while (__atomic_load_n(&writes, __ATOMIC_SEQ_CST))
		pthread_cond_wait(&writes_done, &writes_lock);
	pthread_mutex_unlock(&writes_lock);
	/*
	 * No writable mapping outlives the switch: an mprotect() or
	 * mremap() that looked before the mode was set is waited for, and
	 * overridden by the protection made after; one that looks later
	 * finds the mode set and a BAR mapping refused (bars.c's look).
	 */
	devres__protect_settle();
	devres__cancel_restore(cancel);
	pci__bars_protect();
}
