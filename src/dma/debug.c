// SPDX-License-Identifier: MIT
/*
 * DMA API debugging, as the kernel's CONFIG_DMA_API_DEBUG: the unmap, free
 * and sync checks sit in mapping.c and coherent.c behind devres__dma_debug;
 * this file holds the switch and the check for mappings still live when a
 * binding ends.
 *
 * The subsystem has no hook into unbind (layers call downward only), so the
 * first mapping made in debug mode while the device is bound adds a
 * sentinel node to the device, outside any group the driver has open: it
 * lands in the binding, and its release, at unbind or probe failure,
 * reports the mappings of that binding still live.
 * A mapping made while the device is not bound gets a sentinel of its own,
 * released with the device's own resources (device_del). The check itself
 * runs once every resource released with the sentinel is gone, so that
 * mappings undone by resources acquired before it (a pool made before
 * the first mapping) are not reported. Each mapping
 * records which sentinel it answers to by an epoch, bumped at each release,
 * so that a leak is reported once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dma-internal.h"

bool devres__dma_debug;

__attribute__((constructor)) static void dma_debug_init(void)
{
	const char *s = secure_getenv("DEVRES_DMA_DEBUG");

	if (s && *s && strcmp(s, "0") != 0)
		devres__dma_debug = true;
}

void devres_set_dma_debug(bool on)
{
	__atomic_store_n(&devres__dma_debug, on, __ATOMIC_RELAXED);
}

struct sentinel {
	bool bound;
};

struct leak_count {
	bool bound;
	unsigned long epoch;
	unsigned long n;
	const struct dma_map *first;
};

static void count_live(const struct rnode *t, struct leak_count *c)
{
	for (; t; t = t->r) {
		const struct dma_map *m = (const struct dma_map *)t;

		count_live(t->l, c);
		if (m->debug && m->bound == c->bound && m->epoch == c->epoch) {
			if (!c->first || m->node.start < c->first->node.start)
				c->first = m;
			c->n++;
		}
	}
}

/* The check of one binding (or of the device's own mappings). */
static void check_live(struct device *dev, bool bound)
{
	struct leak_count c = { .bound = bound };
	unsigned long long h = 0;
	const char *kind = "";
	struct dma_dev *s;
	size_t size = 0;
	int err = errno;

	devres__dma_read_lock();
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		c.epoch = s->epoch[c.bound];
		count_live(s->maps, &c);
		if (c.first) {
			h = c.first->node.start;
			size = c.first->size;
			kind = devres__dma_kind_name[c.first->kind];
		}
		s->epoch[c.bound]++;
		s->sentinel[c.bound] = false;
		pthread_mutex_unlock(&s->lock);
	}
	devres__dma_read_unlock();
	if (c.n)
		devres__warn(dev, "dma-debug",
			     "%lu DMA mapping(s) still live at %s (lowest: "
			     "%s, %zu bytes at %#llx)",
			     c.n, c.bound ? "unbind" : "device release", kind,
			     size, h);
	errno = err;
}

struct late_check {
	struct devres__late late;
	struct device *dev;
	bool bound;
};

static void late_check_run(struct devres__late *l)
{
	struct late_check *lc = container_of(l, struct late_check, late);

	check_live(lc->dev, lc->bound);
	free(lc);
}

/*
 * The sentinel was added at the first mapping, so what the driver
 * acquired before it (a pool, an action that unmaps) is released after
 * it: the check waits for the end of the whole release.
 */
static void sentinel_release(struct device *dev, void *res)
{
	bool bound = ((struct sentinel *)res)->bound;
	struct late_check *lc = malloc(sizeof(*lc));
	int err = errno;

	if (!lc) {
		/* Checked now: a pool still to be released may be counted. */
		check_live(dev, bound);
		return;
	}
	lc->late.fn = late_check_run;
	lc->dev = dev;
	lc->bound = bound;
	devres__after_chain(&lc->late);
	errno = err;
}

int devres__dma_debug_arm(struct device *dev, struct dma_dev *s, bool bound,
			  const char *func)
{
	struct sentinel *node;
	bool armed;

	pthread_mutex_lock(&s->lock);
	armed = s->sentinel[bound];
	pthread_mutex_unlock(&s->lock);
	/*
	 * Its node would be refused: see devres__dma_state(). The WARN is
	 * held, the states' lock being held: the caller sends it unlocked.
	 */
	if (!armed) {
		devres__log_hold();
		if (devres__dev_locked_here(dev, func))
			return -EDEADLK;
		devres__log_release();
	}
	pthread_mutex_lock(&s->lock);
	armed = s->sentinel[bound];
	s->sentinel[bound] = true;
	pthread_mutex_unlock(&s->lock);
	if (armed)
		return 0;
	node = devres_alloc(sentinel_release, sizeof(*node), GFP_KERNEL);
	if (!node) {
		pthread_mutex_lock(&s->lock);
		s->sentinel[bound] = false;
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	node->bound = bound;
	/*
	 * Not in the group open now: its release would run the check of the
	 * binding at that group's release, and none at unbind.
	 */
	devres__add_ungrouped(dev, node, bound);
	return 0;
}

/*
 * The kernel's DMA debug tracks the first cacheline of each mapping the
 * device may write: a second one there is "overlapping mappings aren't
 * supported" (what the device writes into one may be lost to the CPU's
 * cache maintenance of the other). Mappings of one device only: the
 * states are per device here. 64 bytes, x86-64's and arm64's line.
 */
#define DMA_DEBUG_LINE 64u

static bool line_taken(const struct rnode *n, uintptr_t line)
{
	for (; n; n = n->r) {
		const struct dma_map *m = (const struct dma_map *)n;

		if (dma_streaming(m->kind) && m->dir != DMA_TO_DEVICE &&
		    (uintptr_t)m->cpu / DMA_DEBUG_LINE == line)
			return true;
		if (line_taken(n->l, line))
			return true;
	}
	return false;
}

bool devres__dma_debug_overlap(const struct dma_dev *s, const void *cpu,
			       unsigned int dir)
{
	if (dir == DMA_TO_DEVICE)
		return false;
	return line_taken(s->maps, (uintptr_t)cpu / DMA_DEBUG_LINE);
}
