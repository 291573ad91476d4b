// SPDX-License-Identifier: MIT
/*
 * Coherent buffers: memory the CPU and a device share for the life of a
 * driver (rings, descriptors). Each buffer is its own mapping, so that
 * freeing gives it back to the system at once and an overrun faults
 * instead of corrupting a neighbour. The kernel aligns a coherent buffer,
 * on both sides, to the smallest power of two of pages holding it; pools
 * rely on that for their boundary rule, so the mapping is carved at that
 * alignment out of a larger reservation.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "dma-internal.h"

static size_t pow2_at_least(size_t n)
{
	size_t p = devres__page_size();

	while (p < n && p << 1)
		p <<= 1;
	return p;
}

/* Zeroed, populated, @align-aligned anonymous memory, or NULL and errno. */
static void *map_mem(size_t len, size_t align)
{
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	size_t extra = align - devres__page_size();
	char *r, *a, *p;

	if (devres__should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	if (!extra) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 flags | MAP_POPULATE, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	if (len + extra < len) {
		errno = ENOMEM;
		return NULL;
	}
	r = mmap(NULL, len + extra, PROT_NONE, flags | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1));
	p = devres__mmap(a, len, PROT_READ | PROT_WRITE,
			 flags | MAP_FIXED | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		int err = errno;

		devres__munmap(r, len + extra);
		errno = err;
		return NULL;
	}
	if (a > r)
		devres__munmap(r, (size_t)(a - r));
	if (a + len < r + len + extra)
		devres__munmap(a + len, (size_t)(r + len + extra - (a + len)));
	return p;
}

/*
 * Best effort: a process may not be allowed to lock (RLIMIT_MEMLOCK). Not
 * a fault point: no caller can see this failure, so injecting it would
 * test nothing.
 */
static void lock_mem(struct device *dev, void *p, size_t len)
{
	int err;

	if (mlock(p, len) == 0)
		return;
	err = errno;
	if (__atomic_load_n(&devres__log_on, __ATOMIC_RELAXED)) {
		char buf[40];

		devres__print(DEVRES_LOG_DEBUG,
			      "%s: DMA buffer %p (%zu bytes) not locked: %s",
			      devres__dev_label(dev, buf, sizeof(buf)), p, len,
			      strerror(err));
	}
}

/* A buffer whose mapping is being made, for give_back(). */
struct alloc_owed {
	void *p;
	size_t len;
	struct dma_rec *rec; /* a managed buffer's, in the table */
};

/*
 * A buffer not mapped after all goes back: a failed map, or DMA ops that
 * end the thread inside it (mapping.c undoes the map; left, its memory
 * and counts were lost with the thread). A managed buffer's record is
 * taken out of the table first: if a plain call over the range took it
 * meanwhile, that call unmapped the memory, and it is not unmapped again.
 */
static void give_back(void *arg)
{
	struct alloc_owed *a = arg;

	if (a->rec)
		devres__map_remove_unmap(&a->rec->map, a->p, a->len, NULL);
	else
		devres__munmap(a->p, a->len);
	devres__ledger_add(DL_DMA_BUFFERS, -1);
	devres__ledger_add(DL_DMA_BYTES, -(long)a->len);
}

void *devres__dma_alloc(struct device *dev, size_t size, dma_addr_t *dma_handle,
			enum dma_kind kind, const struct dma_claim *claim,
			const char *func)
{
	struct alloc_owed a;
	size_t len, align;
	dma_addr_t h;
	void *p;
	int err;

	len = (size + devres__page_size() - 1) & ~(devres__page_size() - 1);
	if (!size || len < size)
		return NULL;
	align = pow2_at_least(len);
	if (align < len)
		return NULL;
	p = map_mem(len, align);
	if (!p)
		return NULL;
	devres__ledger_add(DL_DMA_BUFFERS, 1);
	devres__ledger_add(DL_DMA_BYTES, (long)len);
	lock_mem(dev, p, len);
	a = (struct alloc_owed){ p, len, NULL };
	if (claim && devres__dma_rec_add(claim->rec, p, size)) {
		give_back(&a);
		errno = ENOMEM;
		return NULL;
	}
	if (claim)
		a.rec = claim->rec;
	pthread_cleanup_push(give_back, &a);
	h = devres__dma_map(dev, p, size, align, dma_coherent_mask(dev), kind,
			    DMA_BIDIRECTIONAL, claim, func, &err);
	pthread_cleanup_pop(h == DMA_MAPPING_ERROR);
	if (h == DMA_MAPPING_ERROR) {
		errno = -err;
		return NULL;
	}
	*dma_handle = h;
	return p;
}

void *dma_alloc_coherent(struct device *dev, size_t size,
			 dma_addr_t *dma_handle, gfp_t gfp)
{
	(void)gfp;
	if (!devres__dev_ok(dev, __func__))
		return NULL;
	if (devres__arg_bad(dev, dma_handle, __func__, "dma_handle") ||
	    devres__dma_size_bad(dev, size, __func__) ||
	    devres__dma_from_ops(dev, __func__))
		return NULL;
	return devres__dma_alloc(dev, size, dma_handle, DK_COHERENT, NULL,
				 __func__);
}

/* What a free does once unlocked, whether the ops return or not. */
struct free_owed {
	struct device *dev;
	const char *func;
	void *cpu;
	size_t len;
	struct dma_rec *rec;
	bool done, owned;
	struct devres__hand hand;
	char why[160];
};

static void free_tail(void *arg)
{
	struct free_owed *o = arg;

	if (o->done) {
		/* A plain call that took the record out unmaps it itself. */
		if (o->rec)
			devres__dma_rec_put(o->rec, o->cpu, o->len);
		else
			devres__munmap(o->cpu, o->len);
		devres__ledger_add(DL_DMA_BUFFERS, -1);
		devres__ledger_add(DL_DMA_BYTES, -(long)o->len);
	}
	if (o->why[0])
		devres__warn(o->dev, o->func, "%s", o->why);
	if (o->owned)
		devres__warn_hand(&o->hand, o->func, "a coherent buffer");
}

void devres__dma_free(struct device *dev, size_t size, void *cpu_addr,
		      dma_addr_t dma_handle, enum dma_kind kind,
		      const void *node, const char *func)
{
	bool debug = __atomic_load_n(&devres__dma_debug, __ATOMIC_RELAXED);
	struct free_owed o = { .dev = dev, .func = func, .cpu = cpu_addr };
	bool orphan = false;
	char *why = o.why;
	struct dma_dev *s;
	struct dma_map *m;
	int err = errno;

	devres__dma_read_lock();
	s = dma_dev_peek(dev);
	if (s)
		pthread_mutex_lock(&s->lock);
	m = s ? devres__dma_take(s, dma_handle) : NULL;
	if (node && (!m || !devres__owned_by(&m->owner, node))) {
		/* Freed by hand, maybe reused since: not this node's. */
		if (m)
			devres__dma_keep(s, m);
		m = NULL;
	} else if (!m || m->kind != kind) {
		snprintf(why, sizeof(o.why), "handle %#llx is not a %s",
			 (unsigned long long)dma_handle,
			 m && m->kind == DK_POOL ? "coherent buffer of its own "
						   "(a pool's)"
						 : "coherent buffer");
		if (m)
			devres__dma_keep(s, m);
	} else if (m->cpu != cpu_addr) {
		snprintf(why, sizeof(o.why),
			 "CPU address %p is not %p, the buffer's at %#llx",
			 cpu_addr, m->cpu, (unsigned long long)dma_handle);
		devres__dma_keep(s, m);
	} else {
		if (debug && m->size != size)
			snprintf(why, sizeof(o.why),
				 "handle %#llx freed with size %zu, allocated "
				 "with %zu",
				 (unsigned long long)dma_handle, size, m->size);
		o.len = (m->size + devres__page_size() - 1) &
			~(devres__page_size() - 1);
		/* A managed buffer freed by hand: its node goes now. */
		o.owned = !node && m->owner.dev;
		if (o.owned)
			devres__disown(&m->owner, &o.hand);
		/* Unlinked here, taken out of the table once unlocked. */
		o.rec = m->rec;
		if (o.rec) {
			o.rec->m = NULL;
			m->rec = NULL;
		}
		o.done = true;
		/* Ops that end the thread: free_tail() runs as it unwinds. */
		devres__dma_forget_owed(s, m, free_tail, &o);
		orphan = s->orphan && !s->nmaps && !s->pins;
	}
	if (s)
		pthread_mutex_unlock(&s->lock);
	devres__dma_read_unlock();
	free_tail(&o);
	if (orphan)
		devres__dma_put_orphan(dev, s);
	errno = err;
}

void dma_free_coherent(struct device *dev, size_t size, void *cpu_addr,
		       dma_addr_t dma_handle)
{
	if (!devres__dev_ok(dev, __func__) ||
	    devres__dma_from_ops(dev, __func__))
		return;
	devres__dma_free(dev, size, cpu_addr, dma_handle, DK_COHERENT, NULL,
			 __func__);
}

/*
 * Links the buffer at @dma_handle with @rec, or (no record) leaves a
 * pool's buffer to the device.
 */
static void set_map(struct device *dev, dma_addr_t dma_handle,
		    struct dma_rec *rec)
{
	struct dma_dev *s;
	struct dma_map *m;

	devres__dma_read_lock();
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		m = devres__dma_lookup(s, dma_handle, 1);
		if (m && rec) {
			m->rec = rec;
			rec->m = m;
		} else if (m && m->kind == DK_POOL) {
			m->kind = DK_COHERENT;
			if (m->rec)
				m->rec->m = NULL;
			m->rec = NULL;
		}
		pthread_mutex_unlock(&s->lock);
	}
	devres__dma_read_unlock();
}

void devres__dma_link(struct device *dev, dma_addr_t dma_handle,
		      struct dma_rec *rec)
{
	set_map(dev, dma_handle, rec);
}

void devres__dma_disown(struct device *dev, dma_addr_t dma_handle)
{
	set_map(dev, dma_handle, NULL);
}
