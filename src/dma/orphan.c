// SPDX-License-Identifier: MIT
/*
 * A device released with unmanaged DMA state still live: coherent
 * buffers never freed, streaming mappings never unmapped. Its state was
 * left an orphan by the release of its resources (mapping.c), for those
 * handles to stay valid; nothing can use them once the device is gone, so
 * its final release gives each back through the call that would have
 * (the ops unmap it, the ledger drops its counts) and frees the state,
 * with one WARN, as the kernel's DMA debug says "device driver has
 * pending DMA allocations while released from device" (none when the
 * debug check of a release reported every one already). A device made
 * again in the same memory finds none of it.
 */
#include <errno.h>
#include "dma-internal.h"

/*
 * A mapping left, and the counts of all: of each kind, and of those the
 * debug check of a release (debug.c) has not reported already.
 */
struct left {
	unsigned long n[DK_POOL + 1];
	unsigned long unreported;
	size_t bytes;
	bool any, reported;
	dma_addr_t h;
	size_t size;
	void *cpu;
	unsigned char kind, dir;
};

static bool first_left(struct device *dev, struct left *l)
{
	struct dma_dev *s;
	bool found = false;

	devres__dma_read_lock();
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		if (s->maps) {
			const struct dma_map *m = (const void *)s->maps;

			l->h = m->node.start;
			l->size = m->size;
			l->cpu = m->cpu;
			l->kind = m->kind;
			l->dir = m->dir;
			/* Its epoch moved on: that check counted it. */
			l->reported = m->debug && m->epoch < s->epoch[m->bound];
			found = true;
		}
		pthread_mutex_unlock(&s->lock);
	}
	devres__dma_read_unlock();
	return found;
}

/* Gives back what l holds, by the call that would have; whether it went. */
static void give_back(struct device *dev, const struct left *l)
{
	if (dma_streaming(l->kind))
		devres__dma_unmap_streaming(dev, l->h, l->size, l->dir, l->kind,
					    "put_device");
	else
		devres__dma_free(dev, l->size, l->cpu, l->h, l->kind, NULL,
				 "put_device");
}

/* A state left without mappings: freed now. */
static void drop_state(struct device *dev)
{
	struct dma_dev *s;

	devres__dma_read_lock();
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		s->orphan = true;
		pthread_mutex_unlock(&s->lock);
	}
	devres__dma_read_unlock();
	if (s)
		devres__dma_put_orphan(dev, s);
}

static void dma_dev_gone(struct device *dev)
{
	struct left l = { 0 }, first = { 0 };
	int err = errno;

	if (likely(!dma_dev_peek(dev)))
		return;
	while (first_left(dev, &l)) {
		dma_addr_t h = l.h;

		if (!l.any || l.h < first.h)
			first = l;
		l.any = true;
		l.n[l.kind]++;
		l.unreported += !l.reported;
		l.bytes += l.size;
		give_back(dev, &l);
		/* Refused (it never is): left, rather than tried for ever. */
		if (first_left(dev, &l) && l.h == h)
			break;
	}
	drop_state(dev);
	/* One WARN: none when debug mode's check said it all. */
	if (l.unreported)
		devres__warn(dev, "put_device",
			     "device driver has pending DMA allocations while "
			     "released from device: %lu coherent buffer(s), "
			     "%lu streaming mapping(s), %lu pool chunk(s), "
			     "%zu bytes (lowest: %s, %zu bytes at %#llx): "
			     "freed",
			     l.n[DK_COHERENT], l.n[DK_SINGLE] + l.n[DK_PAGE],
			     l.n[DK_POOL], l.bytes,
			     devres__dma_kind_name[first.kind], first.size,
			     (unsigned long long)first.h);
	errno = err;
}

void devres__dma_orphan_arm(void)
{
	devres__dev_hook_arm(DEVRES_DEV_HOOK_DMA, dma_dev_gone);
}
