// SPDX-License-Identifier: MIT
/*
 * A driver's pins: a walker that matches or probes with a registered
 * driver (a search of a device's drivers, driver_register()'s attach,
 * device_driver_attach()) counts in the driver's @active, and
 * driver_unregister() waits until none is left. Each pinning thread is
 * also a member of the driver's set in the record of waits while it
 * pins (devres__drv_set()): a probe that waits for the thread
 * unregistering its driver closes a loop, and the later of the two waits
 * is refused.
 *
 * The membership is the thread's stack of pinned sets, published in the
 * record once (its first pin) and then changed with relaxed stores, no
 * lock (waits.h): a pin and an unpin cost two stores, not a turn of the
 * record's lock each. A thread's end withdraws it (a key's destructor),
 * so that the record never reads a gone thread's storage.
 *
 * A thread pins and unpins on itself; it holds a few pins at most (a
 * probe that registers a driver, whose attach probes ...). Past
 * DRV_PINS_MAX, or with no key to withdraw it by, a pin is counted but
 * not recorded.
 */
#include <pthread.h>
#include "base.h"
#include "waits.h"

#define DRV_PINS_MAX 8

/* A thread's pins, reached by one address (one TLS look-up a call). */
struct pins {
	void *set[DRV_PINS_MAX]; /* the sets, newest last */
	unsigned int n;
	/* Overflowed pins, not in set[]: their unpins find nothing there. */
	unsigned int unrecorded;
	bool armed;
	struct devres__wait_keys stack;
};

static TLS_FAST struct pins pins;

static pthread_key_t exit_key;
static bool have_key;

static void thread_end(void *arg)
{
	struct pins *p = &pins;

	(void)arg;
	p->armed = false;
	devres__wait_keys_withdraw(&p->stack);
}

__attribute__((constructor)) static void drv_pin_init(void)
{
	have_key = !pthread_key_create(&exit_key, thread_end);
}

/* The thread's stack in the record, published at its first pin. */
static bool arm(struct pins *p)
{
	if (p->armed)
		return true;
	if (!have_key || pthread_setspecific(exit_key, &exit_key))
		return false;
	p->stack.thread = devres__wait_self();
	p->stack.any = 0;
	p->stack.keys = p->set;
	p->stack.depth = &p->n;
	devres__wait_keys_publish(&p->stack);
	p->armed = true;
	return true;
}

uintptr_t devres__drv_set(const struct driver_private *drvp)
{
	return (uintptr_t)&drvp->active;
}

void devres__drv_pin_locked(struct driver_private *drvp)
{
	struct pins *p = &pins;

	drvp->active++;
	if (p->n == DRV_PINS_MAX || !arm(p)) {
		p->unrecorded++;
		return;
	}
	__atomic_store_n(&p->set[p->n], (void *)devres__drv_set(drvp),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELAXED);
}

void devres__drv_unpin_locked(struct driver_private *drvp)
{
	struct pins *p = &pins;
	void *set = (void *)devres__drv_set(drvp);
	unsigned int i;

	for (i = p->n; i > 0 && p->set[i - 1] != set; i--)
		;
	if (i > 0) {
		/*
		 * The newest moves into the slot let go, then the depth
		 * drops: a walk meanwhile sees each set still pinned.
		 */
		__atomic_store_n(&p->set[i - 1], p->set[p->n - 1],
				 __ATOMIC_RELAXED);
		__atomic_store_n(&p->n, p->n - 1, __ATOMIC_RELAXED);
	} else if (p->unrecorded) {
		p->unrecorded--;
	}
	if (--drvp->active == 0 && drvp->dead)
		pthread_cond_broadcast(&devres__dm_cond);
}
