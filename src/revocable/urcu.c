// SPDX-License-Identifier: MIT
/*
 * The choice of read side, made once when the library is loaded, and the
 * urcu-bp grace period (see rcu.h for why the bulletproof flavour).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rcu.h"

bool devres__rcu_urcu;

__attribute__((constructor)) static void rcu_choose(void)
{
#ifdef DEVRES_HAVE_URCU
	const char *s = secure_getenv("DEVRES_REVOCABLE");

	devres__rcu_urcu = !(s && strcmp(s, "fallback") == 0);
#endif
}

/* The process that forks, for the child's handler. */
static int fork_parent;

/* liburcu-bp's registry lock, held across fork() as its manual asks. */
static void rcu_prepare(void)
{
	fork_parent = devres__pid_now();
#ifdef DEVRES_HAVE_URCU
	urcu_bp_before_fork();
#endif
}

static void rcu_parent(void)
{
#ifdef DEVRES_HAVE_URCU
	urcu_bp_after_fork_parent();
#endif
}

/*
 * The forking thread's accesses and queued revocations are its parent's:
 * forgotten (revocable.c), once liburcu-bp knows its registry again.
 */
static void rcu_child(void)
{
#ifdef DEVRES_HAVE_URCU
	urcu_bp_after_fork_child();
#endif
	devres__revocable_forked(fork_parent);
}

__attribute__((constructor)) static void rcu_atfork(void)
{
	devres__atfork(DEVRES_FORK_RCU, rcu_prepare, rcu_parent, rcu_child);
}

const char *devres__rcu_name(bool urcu)
{
	return urcu ? "urcu-bp" : "fallback";
}

void devres__urcu_sync(struct rcu_readers *r)
{
#ifdef DEVRES_HAVE_URCU
	int saved = errno, cancel = devres__cancel_off();

	urcu_bp_synchronize_rcu();
	devres__cancel_restore(cancel);
	tsan_acquire(r);
	errno = saved;
#else
	/* Never called: no handle uses urcu in this build. */
	devres__srcu_sync(r);
#endif
}
