// SPDX-License-Identifier: MIT
/*
 * The device's devres lock, beyond its inline fast paths (node.h).
 *
 * A ticket spinlock that yields, biased to the first thread that takes it: a
 * device is nearly always used by one thread (the one that probes it,
 * then the one that unbinds it), and the locked exchange of a plain
 * spinlock is a third of the cost of a managed allocation. The owner of
 * the bias takes the lock with a plain store of devres_bias_held and a
 * plain load of devres_bias_revoking (an asymmetric Dekker); any other
 * thread first revokes the bias, once for the device's life: it sets
 * revoking, makes every running thread of the process execute a full
 * barrier (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)), waits for the
 * owner to leave its critical section, and marks the bias revoked. From
 * then on every thread, the owner too, takes the atomic lock. The bias is
 * granted only while holding the atomic lock, and a thread that finds it
 * granted to another after taking the atomic lock lets go and revokes.
 *
 * Without membarrier (an old kernel, a seccomp filter) no bias is granted.
 * ThreadSanitizer builds never grant one (node.h).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include "node.h"

TLS_FAST char devres__self;

#define REVOKED ((void *)1)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void spin(unsigned int *spins)
{
	if (++*spins < 64)
		cpu_relax();
	else
		sched_yield();
}

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

#ifndef DR_NO_BIAS
/*
 * Registered by the process: once, without a system call per device. A
 * child of fork() has a new address space, not registered: it forgets
 * (and one that forks by other means registers in revoke_bias()).
 */
static bool registered;

static void forget_registration(void)
{
	__atomic_store_n(&registered, false, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void lock_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_registration);
}

static int bias_ok(void)
{
	if (__atomic_load_n(&registered, __ATOMIC_ACQUIRE))
		return 1;
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return 0;
	__atomic_store_n(&registered, true, __ATOMIC_RELEASE);
	return 1;
}
#endif

static void revoke_bias(struct device *dev)
{
	unsigned int spins = 0;
	int err = errno;

	if (__atomic_exchange_n(&dev->devres_bias_revoking, 1,
				__ATOMIC_SEQ_CST)) {
		/* Another thread revokes: wait for it to finish. */
		while (__atomic_load_n(&dev->devres_bias, __ATOMIC_ACQUIRE) !=
		       REVOKED)
			spin(&spins);
		return;
	}
	/*
	 * After the barrier the owner either saw revoking (and takes the
	 * atomic lock from now on) or its held = 1 is visible here.
	 * bias_ok() succeeded in this process when the bias was granted;
	 * a child of fork() registers again. Failing both, nothing else
	 * is safe: hold on until it works.
	 */
	while (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
		(void)membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
		spin(&spins);
	}
	while (__atomic_load_n(&dev->devres_bias_held, __ATOMIC_ACQUIRE))
		spin(&spins);
	__atomic_store_n(&dev->devres_bias, REVOKED, __ATOMIC_RELEASE);
	errno = err;
}

/* Takes a ticket and waits for it to be served (node.h). */
static void ticket_lock(struct device *dev, unsigned int *spins)
{
	unsigned int *l = (unsigned int *)&dev->devres_lock;
	unsigned int ticket =
		__atomic_fetch_add(l, DR_TICKET, __ATOMIC_ACQUIRE) >> 16;

	while ((__atomic_load_n(l, __ATOMIC_ACQUIRE) & (DR_TICKET - 1)) !=
	       ticket)
		spin(spins);
}

static bool biased_elsewhere(struct device *dev)
{
	void *b = __atomic_load_n(&dev->devres_bias, __ATOMIC_ACQUIRE);

	return b && b != REVOKED && b != (void *)&devres__self;
}

bool devres__lock_slow(struct device *dev, const char *func)
{
	unsigned int spins = 0;

	if (__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
	    &devres__self) {
		devres__warn(dev, func,
			     "devres called on this device from a match or "
			     "for-each callback");
		return false;
	}
	for (;;) {
		if (biased_elsewhere(dev))
			revoke_bias(dev);
		ticket_lock(dev, &spins);
		/* Granted to another while we waited: let go, revoke. */
		if (!biased_elsewhere(dev))
			break;
		ticket_unlock(dev);
	}
#ifndef DR_NO_BIAS
	/*
	 * The first taker gets the bias; it holds the atomic lock this time
	 * (unlock_dev() sees held == 0 and releases it).
	 */
	if (!__atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&dev->devres_bias_revoking, __ATOMIC_RELAXED) &&
	    bias_ok())
		__atomic_store_n(&dev->devres_bias, &devres__self,
				 __ATOMIC_RELEASE);
#endif
	__atomic_store_n(&dev->devres_owner, &devres__self, __ATOMIC_RELAXED);
	return true;
}
