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
 * probe that registers a driver, whose attach probes ...): the first
 * DRV_PINS_MAX in its thread-local storage, with no allocation. Deeper
 * pins go to overflow pages of as many, each a stack of its own in the
 * record, published once as it is made and kept until the thread's end:
 * the record has no limit. Only a page that cannot be allocated, or a
 * thread with no key to withdraw it by, leaves a pin counted but not
 * recorded, with one WARN.
 */
#include <pthread.h>
#include <stdlib.h>
#include "base.h"
#include "waits.h"

#define DRV_PINS_MAX 8

/* Pins past the first DRV_PINS_MAX, in the record as a stack of theirs. */
struct pin_page {
	void *set[DRV_PINS_MAX];
	unsigned int n;
	struct pin_page *next;
	struct devres__wait_keys stack;
};

/* A thread's pins, reached by one address (one TLS look-up a call). */
struct pins {
	void *set[DRV_PINS_MAX]; /* the sets, newest last */
	unsigned int n;
	/* Pins in the pages, which hold them only once set[] is full. */
	unsigned int deep;
	/* Overflowed pins, not recorded: their unpins find nothing there. */
	unsigned int unrecorded;
	bool armed;
	struct pin_page *pages;
	struct devres__wait_keys stack;
};

static TLS_FAST struct pins pins;

static pthread_key_t exit_key;
static bool have_key;

static void thread_end(void *arg)
{
	struct pins *p = &pins;
	struct pin_page *g, *next;

	(void)arg;
	p->armed = false;
	devres__wait_keys_withdraw(&p->stack);
	for (g = p->pages; g; g = next) {
		next = g->next;
		devres__wait_keys_withdraw(&g->stack);
		free(g);
	}
	p->pages = NULL;
	p->deep = 0;
}

__attribute__((constructor)) static void drv_pin_init(void)
{
	have_key = !pthread_key_create(&exit_key, thread_end);
}

/* Publishes @k, a stack of @keys, @depth deep, of this thread. */
static void publish(struct devres__wait_keys *k, void *const *keys,
		    const unsigned int *depth)
{
	k->thread = devres__wait_self();
	k->any = 0;
	k->keys = keys;
	k->depth = depth;
	devres__wait_keys_publish(k);
}

/* The thread's stack in the record, published at its first pin. */
static bool arm(struct pins *p)
{
	if (p->armed)
		return true;
	if (!have_key || pthread_setspecific(exit_key, &exit_key))
		return false;
	publish(&p->stack, p->set, &p->n);
	p->armed = true;
	return true;
}

/* The page of deep pin @k (from 0), made and published if @make. */
static struct pin_page *page_of(struct pins *p, unsigned int k, bool make)
{
	struct pin_page **at = &p->pages;

	for (unsigned int i = 0; i < k / DRV_PINS_MAX; i++) {
		if (!*at)
			return NULL;
		at = &(*at)->next;
	}
	if (!*at && make) {
		struct pin_page *g = calloc(1, sizeof(*g));

		if (!g)
			return NULL;
		publish(&g->stack, g->set, &g->n);
		*at = g;
	}
	return *at;
}

uintptr_t devres__drv_set(const struct driver_private *drvp)
{
	return (uintptr_t)&drvp->active;
}

/* A pin past the first DRV_PINS_MAX, or the thread's first. */
static void pin_slow(struct pins *p, void *set)
{
	struct pin_page *g = NULL;

	if (arm(p) && p->n < DRV_PINS_MAX) {
		__atomic_store_n(&p->set[p->n], set, __ATOMIC_RELAXED);
		__atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELAXED);
		return;
	}
	if (p->armed)
		g = page_of(p, p->deep, true);
	if (!g) {
		if (!p->unrecorded++)
			devres__warn(NULL, "driver pin",
				     "a driver pinned with no room in the "
				     "record of waits (no memory for a page "
				     "past %u pins, or no key): waits through "
				     "it are not found",
				     DRV_PINS_MAX + p->deep);
		return;
	}
	__atomic_store_n(&g->set[g->n], set, __ATOMIC_RELAXED);
	__atomic_store_n(&g->n, g->n + 1, __ATOMIC_RELAXED);
	p->deep++;
}

void devres__drv_pin_locked(struct driver_private *drvp)
{
	struct pins *p = &pins;

	drvp->active++;
	if (unlikely(p->n == DRV_PINS_MAX || !p->armed)) {
		pin_slow(p, (void *)devres__drv_set(drvp));
		return;
	}
	__atomic_store_n(&p->set[p->n], (void *)devres__drv_set(drvp),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELAXED);
}

/* Where pin @k (from 0) of all a thread's is, and the depth it counts in. */
static void **slot_of(struct pins *p, unsigned int k, unsigned int **depth)
{
	struct pin_page *g;

	if (k < DRV_PINS_MAX) {
		*depth = &p->n;
		return &p->set[k];
	}
	g = page_of(p, k - DRV_PINS_MAX, false);
	*depth = &g->n;
	return &g->set[(k - DRV_PINS_MAX) % DRV_PINS_MAX];
}

/*
 * An unpin with pins in the pages: the newest of all moves into the slot
 * let go, then the depth of its stack drops. Whether it found @set.
 */
static bool unpin_deep(struct pins *p, void *set)
{
	unsigned int total = DRV_PINS_MAX + p->deep, *depth, *top_depth;
	void **top = slot_of(p, total - 1, &top_depth);

	for (unsigned int k = total; k > 0; k--) {
		void **s = slot_of(p, k - 1, &depth);

		if (*s != set)
			continue;
		__atomic_store_n(s, *top, __ATOMIC_RELAXED);
		__atomic_store_n(top_depth, *top_depth - 1, __ATOMIC_RELAXED);
		p->deep--;
		return true;
	}
	return false;
}

/* An unpin with no pins in the pages. Whether it found @set. */
static bool unpin_first(struct pins *p, void *set)
{
	unsigned int i;

	for (i = p->n; i > 0 && p->set[i - 1] != set; i--)
		;
	if (!i)
		return false;
	/*
	 * The newest moves into the slot let go, then the depth drops: a
	 * walk meanwhile sees each set still pinned.
	 */
	__atomic_store_n(&p->set[i - 1], p->set[p->n - 1], __ATOMIC_RELAXED);
	__atomic_store_n(&p->n, p->n - 1, __ATOMIC_RELAXED);
	return true;
}

void devres__drv_unpin_locked(struct driver_private *drvp)
{
	struct pins *p = &pins;
	void *set = (void *)devres__drv_set(drvp);
	bool found = likely(!p->deep) ? unpin_first(p, set)
				      : unpin_deep(p, set);

	if (!found && p->unrecorded)
		p->unrecorded--;
	if (--drvp->active == 0 && drvp->dead)
		pthread_cond_broadcast(&devres__dm_cond);
}
