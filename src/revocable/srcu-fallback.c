// SPDX-License-Identifier: MIT
/*
 * The fallback read side: each handle counts its accesses in progress. A
 * reader increments the count and then loads the resource; the revoker
 * clears the resource and then reads the count (both sequentially
 * consistent), so either the reader sees the resource gone or the revoker
 * sees the reader. The revoker then sleeps on the count until it is zero;
 * the reader that brings it to zero wakes it when it has said it waits.
 */
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "rcu.h"

static long futex(int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

void devres__srcu_wake(struct rcu_readers *r)
{
	int saved = errno;

	futex(&r->count, FUTEX_WAKE_PRIVATE, INT_MAX);
	errno = saved;
}

void devres__srcu_sync(struct rcu_readers *r)
{
	int saved = errno, n;

	__atomic_or_fetch(&r->count, RCU_WAITING, __ATOMIC_SEQ_CST);
	/* EAGAIN (the count moved) and EINTR both mean: look again. */
	while ((n = __atomic_load_n(&r->count, __ATOMIC_SEQ_CST)) !=
	       RCU_WAITING)
		futex(&r->count, FUTEX_WAIT_PRIVATE, n);
	/* A handle is revoked once: later readers need not wake anyone. */
	__atomic_and_fetch(&r->count, ~RCU_WAITING, __ATOMIC_SEQ_CST);
	errno = saved;
}
