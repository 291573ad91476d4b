// SPDX-License-Identifier: MIT
/*
 * A device's DMA state and its table of live mappings; streaming mappings,
 * masks, the choice of DMA ops, and dma_iova_to_virt().
 *
 * Every coherent buffer and streaming mapping of a device is recorded in a
 * treap by bus range, whatever the ops: unmap, free, sync and the device
 * model's translation all look there, so a bogus handle is caught before
 * the ops see it.
 *
 * Lifetime of the state: made at a device's first mapping, with a devres
 * node that frees it when the resources of the binding (or the device) it
 * was made in are released; a later mapping makes a new one. The node is
 * added before any managed buffer that uses the state, so those buffers are
 * released first. If unmanaged mappings are still live at that release, the
 * state is not freed (their handles must stay valid for their unmap): it
 * becomes an orphan, freed by the unmap that empties it, or at the latest
 * by the device's final release (orphan.c). A process-wide
 * rwlock keeps a state alive while a call uses it: users hold the read side
 * from lookup to last use; freeing takes the write side. No WARN is printed
 * with a lock held, so a log sink may call back into the library.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "dma-internal.h"

static pthread_rwlock_t states = PTHREAD_RWLOCK_INITIALIZER;

/* Read-held across fork(): no state is made or freed then (docs/fork.md). */
__attribute__((constructor)) static void states_atfork(void)
{
	devres__atfork_rwlock(DEVRES_FORK_DMA_STATES, &states);
}

void devres__dma_read_lock(void)
{
	pthread_rwlock_rdlock(&states);
}

void devres__dma_read_unlock(void)
{
	pthread_rwlock_unlock(&states);
}

static void free_state(struct dma_dev *s)
{
	if (s->iova_ready)
		devres__iova_destroy(&s->iova);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The node that frees a state; the state itself may outlive it. */
struct state_node {
	struct dma_dev *s;
};

static void dma_state_release(struct device *dev, void *res)
{
	struct dma_dev *s = ((struct state_node *)res)->s;
	bool gone;
	int err = errno;

	pthread_rwlock_wrlock(&states);
	/*
	 * Freed already, by the device's final release (orphan.c): a node
	 * recorded by a call without a reference while that release ran is
	 * released after the release's hooks. Compared, not read.
	 */
	if (dma_dev_peek(dev) != s) {
		pthread_rwlock_unlock(&states);
		errno = err;
		return;
	}
	pthread_mutex_lock(&s->lock);
	gone = s->nmaps == 0 && s->pins == 0;
	s->orphan = !gone;
	pthread_mutex_unlock(&s->lock);
	if (gone)
		__atomic_store_n((struct dma_dev **)&dev->dma_state, NULL,
				 __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&states);
	if (gone)
		free_state(s);
	errno = err;
}

void devres__dma_put_orphan(struct device *dev, struct dma_dev *s)
{
	bool gone = false;

	pthread_rwlock_wrlock(&states);
	if (dma_dev_peek(dev) == s) {
		pthread_mutex_lock(&s->lock);
		gone = s->orphan && !s->nmaps && !s->pins;
		pthread_mutex_unlock(&s->lock);
		if (gone)
			__atomic_store_n((struct dma_dev **)&dev->dma_state,
					 NULL, __ATOMIC_RELEASE);
	}
	pthread_rwlock_unlock(&states);
	if (gone)
		free_state(s);
}

/*
 * The device's state, made if it has none, and pinned: a release of the
 * device's resources on another thread, between this and the mapping
 * that will keep it, orphans it instead of freeing it (the mapping's
 * maker unpins it). Called and returns without the read lock.
 */
static struct dma_dev *make_state(struct device *dev, const char *func,
				  int *ret_err)
{
	struct state_node *node;
	struct dma_dev *s, *cur;

	/*
	 * From a match or for-each callback of @dev, devres_add() of the
	 * node would be refused, and a state published without it never
	 * freed with the device's resources: refused first, made never.
	 */
	if (devres__dev_locked_here(dev, func)) {
		*ret_err = -EDEADLK;
		return NULL;
	}
	/*
	 * No fault point: the state is made by the device's first DMA call
	 * only, and a sweep must meet the same points for the same call
	 * whatever the device did before (as the device's lookup index).
	 * Out of memory, the call still fails.
	 */
	devres__fault_hide();
	node = devres_alloc(dma_state_release, sizeof(*node), GFP_KERNEL);
	s = node ? calloc(1, sizeof(*s)) : NULL;
	devres__fault_show();
	if (!node) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	if (!s) {
		devres_free(node);
		*ret_err = -ENOMEM;
		return NULL;
	}
	/* What the state may outlive, the device's release drops. */
	devres__dma_orphan_arm();
	pthread_mutex_init(&s->lock, NULL);
	s->dev = dev;
	s->seed = (uint32_t)(uintptr_t)s | 1u;
	node->s = s;
	pthread_rwlock_wrlock(&states);
	cur = dma_dev_peek(dev);
	if (!cur)
		__atomic_store_n((struct dma_dev **)&dev->dma_state, s,
				 __ATOMIC_RELEASE);
	pthread_mutex_lock(&(cur ? cur : s)->lock);
	(cur ? cur : s)->pins++;
	pthread_mutex_unlock(&(cur ? cur : s)->lock);
	pthread_rwlock_unlock(&states);
	if (cur) {
		free_state(s);
		devres_free(node);
		return cur;
	}
	if (likely(devres__record(dev, node, func)))
		return s;
	/*
	 * Refused: @dev was released meanwhile, by a last put_device() on
	 * a thread whose reference this caller did not hold, and its final
	 * release may have looked for a state already. Given back as the
	 * node's release would: freed, or an orphan if another call pinned
	 * it (that call's unpin frees it). The call fails.
	 */
	pthread_mutex_lock(&s->lock);
	s->pins--;
	pthread_mutex_unlock(&s->lock);
	dma_state_release(dev, node);
	devres_free(node);
	*ret_err = -ENODEV;
	return NULL;
}

struct dma_dev *devres__dma_state(struct device *dev, const char *func,
				  int *ret_err, bool *ret_pinned)
{
	struct dma_dev *s = dma_dev_peek(dev);

	*ret_pinned = false;
	if (s)
		return s;
	/* Pinned, it cannot go before the read lock is taken again. */
	pthread_rwlock_unlock(&states);
	s = make_state(dev, func, ret_err);
	pthread_rwlock_rdlock(&states);
	*ret_pinned = s != NULL;
	return s;
}

/* The device whose DMA ops this thread is running, NULL outside them. */
static TLS_FAST struct device *in_ops;

/*
 * fork() from the ops: this thread holds the DMA states' read lock, and
 * the fork handlers take eight locks ranked before it (docs/fork.md), one
 * of which another thread may hold while it waits for the states' write
 * lock, or for this device's DMA lock: the fork would wait for ever. It
 * goes on (nothing here can refuse a fork) and says so, once a fork.
 */
static void fork_in_ops(void)
{
	char buf[40];

	if (unlikely(in_ops))
		devres__warn(in_ops, "fork",
			     "called from the DMA ops of %s, which hold the "
			     "DMA states' lock that the fork handlers take "
			     "after others: it may wait for ever",
			     devres__dev_label(in_ops, buf, sizeof(buf)));
}

__attribute__((constructor)) static void ops_atfork(void)
{
	devres__atfork(DEVRES_FORK_CHECK, fork_in_ops, NULL, NULL);
}

bool devres__dma_from_ops(struct device *dev, const char *func)
{
	char buf[40];

	if (likely(!in_ops))
		return false;
	devres__warn(dev, func,
		     "called from the DMA ops of %s, which run under its DMA "
		     "lock: refused",
		     devres__dev_label(in_ops, buf, sizeof(buf)));
	return true;
}

/*
 * One call of the program's ops, run with the device's DMA lock and the
 * states' read lock held; @m is the mapping being made or unmade, which
 * the caller frees after.
 */
struct ops_call {
	const struct devres_dma_ops *ops;
	struct device *dev, *outer;
	struct dma_dev *s;
	struct dma_map *m;
	bool pinned;  /* the caller pinned @s for @m (a map) */
	bool counted; /* @m is counted in s->nmaps (an unmap of a live one) */
	dma_owed_t owed; /* what the unmapping call does after, or NULL */
	void *owed_arg;
};

/*
 * The ops ended the thread (pthread_exit(), a cancellation point): left
 * held, the two locks hung every later DMA call on the device, and every
 * set_dma_ops() and device release in the process. They are released
 * here, the mapping in hand is freed, and what the calling map or unmap
 * had left to do (its counts, a buffer's memory, an emptied orphan state)
 * is done, as the caller would have. The WARN comes once the locks are
 * released, as a log sink may call back into the library.
 */
static void ops_ended(void *arg)
{
	struct ops_call *c = arg;
	bool orphan = false;

	in_ops = c->outer;
	if (c->pinned)
		c->s->pins--;
	if (c->counted)
		c->s->nmaps--;
	if (c->pinned || c->counted)
		orphan = c->s->orphan && !c->s->nmaps && !c->s->pins;
	free(c->m);
	pthread_mutex_unlock(&c->s->lock);
	devres__dma_read_unlock();
	devres__warn(c->dev, "dma_ops",
		     "the DMA ops '%s' ended the thread: the device's DMA "
		     "lock is released",
		     c->ops->name ? c->ops->name : "");
	if (c->owed)
		c->owed(c->owed_arg);
	if (orphan)
		devres__dma_put_orphan(c->dev, c->s);
}

/*
 * The program's ops, run with the device's DMA lock held: a DMA call they
 * made waited for that lock (or for the states' write lock) for ever. The
 * calls refuse instead (devres__dma_from_ops()).
 */
static int ops_map(struct ops_call *c, void *cpu, size_t size, size_t align,
		   uint64_t mask, dma_addr_t *ret_handle)
{
	int ret;

	c->outer = in_ops;
	in_ops = c->dev;
	pthread_cleanup_push(ops_ended, c);
	ret = c->ops->map(c->dev, cpu, size, align, mask, ret_handle);
	pthread_cleanup_pop(0);
	in_ops = c->outer;
	return ret;
}

static void ops_unmap(struct ops_call *c, dma_addr_t handle, void *cpu,
		      size_t size)
{
	c->outer = in_ops;
	in_ops = c->dev;
	pthread_cleanup_push(ops_ended, c);
	c->ops->unmap(c->dev, handle, cpu, size);
	pthread_cleanup_pop(0);
	in_ops = c->outer;
}

static const struct devres_dma_ops *ops_of(struct device *dev)
{
	const struct devres_dma_ops *ops =
		__atomic_load_n(&dev->dma_ops, __ATOMIC_ACQUIRE);

	return ops ? ops : devres_dma_iova_ops();
}

struct dma_map *devres__dma_lookup(struct dma_dev *s, dma_addr_t h, size_t len)
{
	struct rnode *n = devres__rt_floor(s->maps, h);

	if (!n || len == 0 || h + len < h || h + len > n->end)
		return NULL;
	return (struct dma_map *)n;
}

static void *span_start(const struct dma_map *m)
{
	return (void *)((uintptr_t)m->cpu &
			~(uintptr_t)(devres__page_size() - 1));
}

struct dma_map *devres__dma_take(struct dma_dev *s, dma_addr_t h)
{
	return (struct dma_map *)devres__rt_take(&s->maps, h);
}

void devres__dma_keep(struct dma_dev *s, struct dma_map *m)
{
	devres__rt_insert(&s->maps, &m->node);
}

void devres__dma_forget_owed(struct dma_dev *s, struct dma_map *m,
			     dma_owed_t owed, void *arg)
{
	struct ops_call c = { .ops = m->ops,
			      .dev = s->dev,
			      .s = s,
			      .m = m,
			      .counted = true,
			      .owed = owed,
			      .owed_arg = arg };

	ops_unmap(&c, m->base, span_start(m), m->span);
	s->nmaps--;
	free(m);
}

void devres__dma_forget(struct dma_dev *s, struct dma_map *m)
{
	devres__dma_forget_owed(s, m, NULL, NULL);
}

/*
 * A managed buffer takes its owner as it enters the table; locked. False
 * when the device refused the node: the buffer is left unowned, for the
 * caller to unmap and free.
 */
static bool claim_locked(struct dma_map *m, const struct dma_claim *c)
{
	c->dr->vaddr = m->cpu;
	c->dr->dma_handle = m->node.start;
	c->dr->size = m->size;
	m->owner = c->owner;
	m->rec = c->rec;
	c->rec->m = m;
	if (likely(devres__owner_add(&c->owner)))
		return true;
	m->owner = (struct devres__owner){ 0 };
	m->rec = NULL;
	c->rec->m = NULL;
	return false;
}

dma_addr_t devres__dma_map(struct device *dev, void *cpu, size_t size,
			   size_t align, uint64_t mask, enum dma_kind kind,
			   enum dma_data_direction dir,
			   const struct dma_claim *claim, const char *func,
			   int *ret_err)
{
	const struct devres_dma_ops *ops = NULL;
	uintptr_t first = (uintptr_t)cpu &
			  ~(uintptr_t)(devres__page_size() - 1);
	uintptr_t last = (uintptr_t)cpu + size - 1;
	bool bound = __atomic_load_n(&dev->driver, __ATOMIC_RELAXED) != NULL;
	bool debug = __atomic_load_n(&devres__dma_debug, __ATOMIC_RELAXED);
	struct dma_map *m;
	struct rnode *hit;
	bool pinned = false, orphan = false, overlap = false, held = false;
	struct ops_call c;
	struct dma_dev *s;
	dma_addr_t base, h;
	int ret = 0, bad = 0;

	if (last < (uintptr_t)cpu) {
		*ret_err = -EINVAL;
		return DMA_MAPPING_ERROR;
	}
	if (devres__should_fail() || !(m = calloc(1, sizeof(*m)))) {
		*ret_err = -ENOMEM;
		return DMA_MAPPING_ERROR;
	}
	m->cpu = cpu;
	m->size = size;
	m->span = (last | (devres__page_size() - 1)) - first + 1;
	m->kind = (unsigned char)kind;
	m->dir = (unsigned char)dir;
	m->bound = bound;
	m->debug = debug;
	pthread_rwlock_rdlock(&states);
	s = devres__dma_state(dev, func, &ret, &pinned);
	if (!s)
		goto fail;
	if (debug) {
		ret = devres__dma_debug_arm(dev, s, bound, func);
		held = ret == -EDEADLK;
		if (ret)
			goto fail;
	}
	ops = ops_of(dev);
	pthread_mutex_lock(&s->lock);
	c = (struct ops_call){
		.ops = ops, .dev = dev, .s = s, .m = m, .pinned = pinned
	};
	ret = ops_map(&c, (void *)first, m->span, align, mask, &base);
	if (unlikely(ret > 0 || ret < -MAX_ERRNO)) {
		/* Handed on, it made errno -1, or overflowed negating it. */
		bad = ret;
		ret = -EIO;
	}
	if (ret)
		goto fail_locked;
	h = base + ((uintptr_t)cpu - first);
	ret = -EIO;
	if (h < base || h + size - 1 < h || h + size - 1 > mask)
		goto fail_unmap;
	/*
	 * Two mappings may not share a bus byte: other ops may try (the
	 * same bytes twice without an IOMMU); the IOVA space never does.
	 */
	ret = -EBUSY;
	hit = ops == devres_dma_iova_ops()
		      ? NULL
		      : devres__rt_floor(s->maps, h + size - 1);
	if (hit && hit->end > h)
		goto fail_unmap;
	if (debug && dma_streaming(kind))
		overlap = devres__dma_debug_overlap(s, cpu, dir);
	m->ops = ops;
	m->base = base;
	m->node.start = h;
	m->node.end = h + size;
	m->node.prio = devres__rt_prio(&s->seed);
	m->epoch = s->epoch[bound];
	/* Not in the table yet: refused, nothing else has seen it. */
	if (claim && !claim_locked(m, claim)) {
		held = true;
		ret = -ENODEV;
		goto fail_unmap;
	}
	devres__rt_insert(&s->maps, &m->node);
	s->nmaps++;
	if (pinned)
		s->pins--;
	pthread_mutex_unlock(&s->lock);
	pthread_rwlock_unlock(&states);
	if (claim)
		devres__log_release();
	if (dma_streaming(kind))
		devres__ledger_add(DL_DMA_MAPS, 1);
	/* Mapped all the same, as the kernel's DMA debug lets it be. */
	if (overlap)
		devres__warn(dev, func,
			     "cacheline tracking EEXIST, overlapping mappings "
			     "aren't supported: %p (%zu bytes) begins in the "
			     "cacheline of another mapping the device may "
			     "write",
			     cpu, size);
	*ret_err = 0;
	return h;

fail_unmap:
	ops_unmap(&c, base, (void *)first, m->span);
fail_locked:
	pthread_mutex_unlock(&s->lock);
fail:
	if (pinned) {
		pthread_mutex_lock(&s->lock);
		orphan = --s->pins == 0 && s->orphan && !s->nmaps;
		pthread_mutex_unlock(&s->lock);
	}
	pthread_rwlock_unlock(&states);
	if (held)
		devres__log_release();
	if (orphan)
		devres__dma_put_orphan(dev, s);
	free(m);
	if (bad && ops)
		devres__warn(dev, devres__dma_kind_name[kind],
			     "the DMA ops '%s': map returned %d, not 0 or a "
			     "negative errno: taken as -EIO",
			     ops->name ? ops->name : "", bad);
	*ret_err = ret;
	return DMA_MAPPING_ERROR;
}

static bool dir_ok(enum dma_data_direction dir)
{
	return dir == DMA_BIDIRECTIONAL || dir == DMA_TO_DEVICE ||
	       dir == DMA_FROM_DEVICE;
}

const char *const devres__dma_kind_name[] = {
	"dma_alloc_coherent",
	"dma_map_single",
	"dma_map_page",
	"dma_pool_alloc",
};

bool devres__dma_size_bad(struct device *dev, size_t size, const char *func)
{
	if (likely(size && size <= DEVRES_DMA_SIZE_MAX))
		return false;
	devres__warn(dev, func, "size %zu not in [1, %zu]", size,
		     (size_t)DEVRES_DMA_SIZE_MAX);
	return true;
}

/*
 * The end of user space: 2^47 on x86-64 with four-level paging, 2^56
 * where the processor has five (LA57, which Linux then uses); above it an
 * address is non-canonical or the kernel's. 0 where it is not known.
 */
static uintptr_t user_top(void)
{
#if defined(__x86_64__)
	static uintptr_t top;
	uintptr_t t = __atomic_load_n(&top, __ATOMIC_RELAXED);
	unsigned int a, b, c, d;
	bool la57;

	if (!t) {
		la57 = __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
		       (c & (1u << 16));
		t = (uintptr_t)1 << (la57 ? 56 : 47);
		__atomic_store_n(&top, t, __ATOMIC_RELAXED);
	}
	return t;
#else
	return 0;
#endif
}

/*
 * True, with a WARN, when [@ptr, @ptr + @size) wraps the address space or
 * leaves user space: a device given a non-canonical or a kernel address
 * would be given memory the process does not have, and a device model
 * that reaches it through dma_iova_to_virt() would fault.
 */
static bool user_range_bad(struct device *dev, const void *ptr, size_t size,
			   const char *func)
{
	uintptr_t last = (uintptr_t)ptr + size - 1, top = user_top();

	if (likely(last >= (uintptr_t)ptr && (!top || last < top)))
		return false;
	devres__warn(dev, func,
		     "buffer %p (%zu bytes) is outside user space "
		     "(it wraps, or a non-canonical or kernel address)",
		     ptr, size);
	return true;
}

static dma_addr_t map_streaming(struct device *dev, void *ptr, size_t size,
				enum dma_data_direction dir, enum dma_kind kind,
				const char *func)
{
	int err;

	if (!devres__dev_ok(dev, func) || devres__dma_from_ops(dev, func))
		return DMA_MAPPING_ERROR;
	if (!dir_ok(dir)) {
		devres__warn(dev, func, "invalid direction %d", (int)dir);
		return DMA_MAPPING_ERROR;
	}
	if (devres__dma_size_bad(dev, size, func) ||
	    devres__arg_bad(dev, ptr, func, "buffer") ||
	    user_range_bad(dev, ptr, size, func))
		return DMA_MAPPING_ERROR;
	return devres__dma_map(dev, ptr, size, devres__page_size(),
			       dma_get_mask(dev), kind, dir, NULL, func, &err);
}

dma_addr_t dma_map_single(struct device *dev, void *ptr, size_t size,
			  enum dma_data_direction dir)
{
	return map_streaming(dev, ptr, size, dir, DK_SINGLE, __func__);
}

dma_addr_t dma_map_page(struct device *dev, struct page *page, size_t offset,
			size_t size, enum dma_data_direction dir)
{
	uintptr_t p = (uintptr_t)page;

	if (!devres__dev_ok(dev, __func__) ||
	    devres__arg_bad(dev, page, __func__, "page"))
		return DMA_MAPPING_ERROR;
	/*
	 * The sum in integers: a pointer moved past its object is undefined,
	 * and one that wraps names no buffer at all.
	 */
	if (offset > UINTPTR_MAX - p) {
		devres__warn(dev, __func__,
			     "offset %zu from page %p wraps the address space",
			     offset, (void *)page);
		return DMA_MAPPING_ERROR;
	}
	return map_streaming(dev, (void *)(p + offset), size, dir, DK_PAGE,
			     __func__);
}

/* What an unmap does once unlocked, whether its ops return or not. */
struct unmap_owed {
	struct device *dev;
	const char *func;
	bool done;
	char why[160];
};

static void unmap_tail(void *arg)
{
	struct unmap_owed *o = arg;

	if (o->done)
		devres__ledger_add(DL_DMA_MAPS, -1);
	if (o->why[0])
		devres__warn(o->dev, o->func, "%s", o->why);
}

void devres__dma_unmap_streaming(struct device *dev, dma_addr_t addr,
				 size_t size, enum dma_data_direction dir,
				 enum dma_kind kind, const char *func)
{
	bool debug = __atomic_load_n(&devres__dma_debug, __ATOMIC_RELAXED);
	struct unmap_owed o = { .dev = dev, .func = func };
	char *why = o.why;
	struct dma_dev *s;
	struct dma_map *m;
	bool orphan = false;

	if (!devres__dev_ok(dev, func) || devres__dma_from_ops(dev, func))
		return;
	pthread_rwlock_rdlock(&states);
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		m = devres__dma_take(s, addr);
		if (!m) {
			snprintf(why, sizeof(o.why),
				 "handle %#llx was never mapped",
				 (unsigned long long)addr);
		} else if (!dma_streaming(m->kind)) {
			devres__dma_keep(s, m);
			snprintf(why, sizeof(o.why),
				 "handle %#llx is a coherent buffer",
				 (unsigned long long)addr);
		} else {
			/* Never valid, as the kernel's BUG_ON() says: always. */
			if (!dir_ok(dir))
				snprintf(why, sizeof(o.why),
					 "handle %#llx unmapped with invalid "
					 "direction %d",
					 (unsigned long long)addr, (int)dir);
			else if (debug && m->size != size)
				snprintf(why, sizeof(o.why),
					 "handle %#llx unmapped with size %zu, "
					 "mapped with %zu",
					 (unsigned long long)addr, size,
					 m->size);
			else if (debug && m->dir != dir)
				snprintf(why, sizeof(o.why),
					 "handle %#llx unmapped with direction "
					 "%d, mapped with %d",
					 (unsigned long long)addr, (int)dir,
					 m->dir);
			else if (debug && m->kind != kind)
				snprintf(why, sizeof(o.why),
					 "handle %#llx was mapped with %s",
					 (unsigned long long)addr,
					 devres__dma_kind_name[m->kind]);
			else if (debug && m->debug && !m->checked)
				snprintf(why, sizeof(o.why),
					 "handle %#llx (%zu bytes, %s) "
					 "unmapped "
					 "without dma_mapping_error() checking "
					 "it",
					 (unsigned long long)addr, m->size,
					 devres__dma_kind_name[m->kind]);
			o.done = true;
			devres__dma_forget_owed(s, m, unmap_tail, &o);
			orphan = s->orphan && !s->nmaps && !s->pins;
		}
		pthread_mutex_unlock(&s->lock);
	} else {
		snprintf(why, sizeof(o.why), "handle %#llx was never mapped",
			 (unsigned long long)addr);
	}
	pthread_rwlock_unlock(&states);
	unmap_tail(&o);
	if (orphan)
		devres__dma_put_orphan(dev, s);
}

void dma_unmap_single(struct device *dev, dma_addr_t addr, size_t size,
		      enum dma_data_direction dir)
{
	devres__dma_unmap_streaming(dev, addr, size, dir, DK_SINGLE, __func__);
}

void dma_unmap_page(struct device *dev, dma_addr_t addr, size_t size,
		    enum dma_data_direction dir)
{
	devres__dma_unmap_streaming(dev, addr, size, dir, DK_PAGE, __func__);
}

/*
 * Debug mode, as the kernel's: a streaming mapping unmapped before
 * dma_mapping_error() saw its handle is reported at the unmap, since a
 * driver that does not check gives a failed mapping's DMA_MAPPING_ERROR
 * to its device. Only mappings made in debug mode are marked and checked.
 */
static void mark_checked(struct device *dev, dma_addr_t dma_addr)
{
	struct dma_dev *s;
	struct rnode *n;

	/* Inside the ops, whose locks it would wait for: not marked. */
	if (in_ops)
		return;
	pthread_rwlock_rdlock(&states);
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		n = devres__rt_floor(s->maps, dma_addr);
		if (n && n->start == dma_addr &&
		    dma_streaming(((struct dma_map *)n)->kind))
			((struct dma_map *)n)->checked = 1;
		pthread_mutex_unlock(&s->lock);
	}
	pthread_rwlock_unlock(&states);
}

int dma_mapping_error(struct device *dev, dma_addr_t dma_addr)
{
	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	if (dma_addr == DMA_MAPPING_ERROR)
		return -ENOMEM;
	if (__atomic_load_n(&devres__dma_debug, __ATOMIC_RELAXED))
		mark_checked(dev, dma_addr);
	return 0;
}

static void sync_check(struct device *dev, dma_addr_t addr, size_t size,
		       enum dma_data_direction dir, const char *func)
{
	struct dma_dev *s;
	struct dma_map *m;
	char why[160] = "";

	/*
	 * Memory is cache-coherent: a barrier is all a sync needs. (TSan
	 * does not model fences; the driver's doorbell orders for it.)
	 */
#ifndef __SANITIZE_THREAD__
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	if (!devres__dev_ok(dev, func))
		return;
	/* Never valid, debug mode or not (the kernel's BUG_ON()). */
	if (!dir_ok(dir)) {
		devres__warn(dev, func, "invalid direction %d", (int)dir);
		return;
	}
	if (!__atomic_load_n(&devres__dma_debug, __ATOMIC_RELAXED) ||
	    devres__dma_from_ops(dev, func))
		return;
	pthread_rwlock_rdlock(&states);
	s = dma_dev_peek(dev);
	if (s)
		pthread_mutex_lock(&s->lock);
	/*
	 * A sync of no bytes is checked as its first one: the kernel's DMA
	 * debug asks only that it lies in a mapping (check_sync()).
	 */
	m = s ? devres__dma_lookup(s, addr, size ? size : 1) : NULL;
	if (!m || !dma_streaming(m->kind))
		snprintf(why, sizeof(why),
			 "[%#llx, +%zu) is not inside a streaming mapping",
			 (unsigned long long)addr, size);
	else if (m->dir != DMA_BIDIRECTIONAL && m->dir != dir)
		snprintf(why, sizeof(why),
			 "handle %#llx synced with direction %d, mapped "
			 "with %d",
			 (unsigned long long)addr, (int)dir, m->dir);
	if (s)
		pthread_mutex_unlock(&s->lock);
	pthread_rwlock_unlock(&states);
	if (why[0])
		devres__warn(dev, func, "%s", why);
}

void dma_sync_single_for_cpu(struct device *dev, dma_addr_t addr, size_t size,
			     enum dma_data_direction dir)
{
	sync_check(dev, addr, size, dir, __func__);
}

void dma_sync_single_for_device(struct device *dev, dma_addr_t addr,
				size_t size, enum dma_data_direction dir)
{
	sync_check(dev, addr, size, dir, __func__);
}

void *dma_iova_to_virt(struct device *dev, dma_addr_t handle, size_t len)
{
	struct dma_dev *s;
	struct dma_map *m;
	void *p = NULL;

	if (!devres__dev_ok(dev, __func__) ||
	    devres__dma_from_ops(dev, __func__))
		return NULL;
	pthread_rwlock_rdlock(&states);
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		m = devres__dma_lookup(s, handle, len);
		if (m)
			p = (char *)m->cpu + (handle - m->node.start);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_rwlock_unlock(&states);
	return p;
}

void set_dma_ops(struct device *dev, const struct devres_dma_ops *ops)
{
	struct dma_dev *s;
	unsigned long live = 0;

	if (!devres__dev_ok(dev, __func__) ||
	    devres__opt_bad(dev, ops, __func__, "ops") ||
	    devres__dma_from_ops(dev, __func__))
		return;
	pthread_rwlock_wrlock(&states);
	s = dma_dev_peek(dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		live = s->nmaps;
		pthread_mutex_unlock(&s->lock);
	}
	if (!live)
		__atomic_store_n(&dev->dma_ops, ops, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&states);
	if (live)
		devres__warn(dev, __func__, "%lu mapping(s) still live", live);
}

const struct devres_dma_ops *get_dma_ops(struct device *dev)
{
	if (!devres__dev_ok(dev, __func__))
		return NULL;
	return ops_of(dev);
}

static int check_mask(struct device *dev, uint64_t mask)
{
	const struct devres_dma_ops *ops = ops_of(dev);

	if (!mask || (ops->dma_supported && !ops->dma_supported(dev, mask)))
		return -EIO;
	return 0;
}

/*
 * The masks are read by every map on any thread, and may be set while
 * another thread maps (a driver that narrows them after a failed probe
 * step, a device model that sets them late): each is read and written
 * whole, once per call, so a mapping honours the old mask or the new one.
 * Plain, the accesses raced (undefined behaviour; ThreadSanitizer reports
 * it).
 */
static uint64_t *mask_slot(struct device *dev)
{
	uint64_t *slot = __atomic_load_n(&dev->dma_mask, __ATOMIC_ACQUIRE);
	uint64_t *own = &dev->coherent_dma_mask;

	if (slot)
		return slot;
	/* Another setter may point it first: theirs is kept. */
	if (__atomic_compare_exchange_n(&dev->dma_mask, &slot, own, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return own;
	return slot;
}

int dma_set_mask(struct device *dev, uint64_t mask)
{
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	ret = check_mask(dev, mask);
	if (ret)
		return ret;
	__atomic_store_n(mask_slot(dev), mask, __ATOMIC_RELAXED);
	return 0;
}

int dma_set_coherent_mask(struct device *dev, uint64_t mask)
{
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	ret = check_mask(dev, mask);
	if (ret)
		return ret;
	__atomic_store_n(&dev->coherent_dma_mask, mask, __ATOMIC_RELAXED);
	return 0;
}

int dma_set_mask_and_coherent(struct device *dev, uint64_t mask)
{
	int ret = dma_set_mask(dev, mask);

	if (ret)
		return ret;
	return dma_set_coherent_mask(dev, mask);
}

uint64_t dma_get_mask(struct device *dev)
{
	uint64_t *slot;

	if (!devres__dev_ok(dev, __func__))
		return 0;
	slot = __atomic_load_n(&dev->dma_mask, __ATOMIC_ACQUIRE);
	return dma_default_mask(__atomic_load_n(
		slot ? slot : &dev->coherent_dma_mask, __ATOMIC_RELAXED));
}
