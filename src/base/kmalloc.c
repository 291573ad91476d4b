// SPDX-License-Identifier: MIT
/*
 * Managed memory: the devm_kmalloc family and managed pages.
 *
 * Fill, then publish: once a node is on the device's list, another thread
 * may release it (devres_release_all() is legal from any thread), so every
 * copy, format or zeroing is done before devres_add() and nothing touches
 * the node after it.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slab.h"
#include "liveobj.h"

#define MAX_PAGE_ORDER 20

/* Puts @n, filled, on @dev; returns its data, not to be touched here again. */
static void *publish(struct device *dev, struct devres__node *n,
		     const char *func)
{
	struct dr_log l = dr_log_of_res(n);
	void *data = node_data(n);

	if (!lock_dev(dev, func)) {
		devres__free_node(n);
		return NULL;
	}
	devres__index_add(dev, n);
	add_locked(dev, n);
	unlock_dev(dev);
	dr_log(dev, "ADD", l);
	return data;
}

/*
 * A small one is carved from the device's blocks under the lock, zeroed
 * there when asked, and listed in the same critical section: nothing is
 * filled after it is published. The lock is the only one taken. The
 * ledger, the calling thread's own, counts it once the lock is dropped:
 * what a critical section holds, every other thread of a shared device
 * may wait for (and for a whole time slice when its holder is preempted).
 */
static DEVRES_INLINE void *kmalloc_small(struct device *dev, size_t size,
					 bool zero, unsigned int mk,
					 const char *func)
{
	struct devres__node *n;
	struct dr_log l;
	void *data;

	/* Named by the caller's call, failing as memory does: -ENOMEM. */
	if (devres__should_fail_as(func, -ENOMEM))
		return NULL;
	if (!lock_dev(dev, func))
		return NULL;
	n = slab_alloc_fast(dev, size, zero, DR_MAKER(mk));
	if (unlikely(!n))
		n = devres__slab_alloc(dev, size, zero, DR_MAKER(mk));
	if (unlikely(!n)) {
		unlock_dev(dev);
		return NULL;
	}
	l = dr_log_of_res(n);
	data = node_data(n);
	add_locked(dev, n);
	unlock_dev(dev);
	devres__ledger_add_node(1, (long)size);
	dr_log(dev, "ADD", l);
	return data;
}

/*
 * Every call of the family that allocates afresh comes here with its
 * maker (DR_MK_*: the name its node's log lines and dump entries carry)
 * and its own name for its WARNs. Inlined into each, where both are
 * constants: naming the call costs the fast path nothing.
 */
static DEVRES_INLINE void *kmalloc_as(struct device *dev, size_t size,
				      gfp_t gfp, unsigned int mk,
				      const char *func)
{
	struct devres__node *n;

	if (!devres__dev_ok(dev, func))
		return NULL;
	if (unlikely(!size))
		return ZERO_SIZE_PTR;
	if (size <= DR_SLAB_MAX)
		return kmalloc_small(dev, size, gfp & __GFP_ZERO, mk, func);
	n = devres__alloc_node(DR_KIND_KMALLOC | DR_MAKER(mk), size,
			       gfp & __GFP_ZERO);
	return n ? publish(dev, n, func) : NULL;
}

void *devm_kmalloc(struct device *dev, size_t size, gfp_t gfp)
{
	return kmalloc_as(dev, size, gfp, DR_MK_KMALLOC, __func__);
}

void *devm_kzalloc(struct device *dev, size_t size, gfp_t gfp)
{
	return kmalloc_as(dev, size, gfp | __GFP_ZERO, DR_MK_KZALLOC, __func__);
}

static inline void *kmalloc_array_as(struct device *dev, size_t n, size_t size,
				     gfp_t gfp, unsigned int mk,
				     const char *func)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes))
		return NULL;
	return kmalloc_as(dev, bytes, gfp, mk, func);
}

void *devm_kmalloc_array(struct device *dev, size_t n, size_t size, gfp_t gfp)
{
	return kmalloc_array_as(dev, n, size, gfp, DR_MK_KMALLOC_ARRAY,
				__func__);
}

void *devm_kcalloc(struct device *dev, size_t n, size_t size, gfp_t gfp)
{
	return kmalloc_array_as(dev, n, size, gfp | __GFP_ZERO, DR_MK_KCALLOC,
				__func__);
}

static int match_ptr(struct device *dev, void *res, void *p)
{
	(void)dev;
	return res == p;
}

/* The listed managed allocation at @p, from the slab or not. */
static struct devres__node *find_kmalloc(struct device *dev, const void *p)
{
	struct devres__node *n = devres__slab_find(dev, p);

	return n ? n : devres__index_find(dev, DR_KIND_KMALLOC, p);
}

/* Whether @dev has managed memory at @p: the call that made it. Locked. */
static const char *has_kmalloc(struct device *dev, const void *p,
			       const void *unused)
{
	struct devres__node *n = find_kmalloc(dev, p);

	(void)unused;
	return n ? devres__kind_name(kind_load(n)) : NULL;
}

/* @p is not @dev's: the WARN names its owner, when a live device has it. */
static void warn_not_mine(struct device *dev, const void *p, const char *func,
			  const char *fix)
{
	struct devres__hand h;

	devres__warn_foreign(
		dev, func,
		devres__owner_of(dev, has_kmalloc, p, NULL, fix, &h) ? &h
								     : NULL,
		"%p is not a managed allocation of this device", p);
}

/* How far @n can grow in place: its heap chunk's, or its slot's, room. */
static size_t room_of(struct devres__node *n)
{
	return dr_slab(n) ? devres__slab_room(n)
			  : nc_room_of(malloc_usable_size(n));
}

/*
 * Where the part of @n that a resize to @new_size frees begins: all of
 * it when the block moves, the tail past @new_size when it shrinks in
 * place, nothing (the end) when it grows in place.
 */
static size_t freed_from(struct devres__node *n, size_t new_size)
{
	if (new_size > room_of(n))
		return 0;
	return new_size < n->size ? new_size : n->size;
}

/*
 * With @dev's lock held and @n found at @p: whether the part of it that
 * goes (all of it for a free, @new_size 0; what freed_from() says for a
 * resize) holds a live object. If so, the lock is dropped, each object's
 * fixup run (liveobj.c), and the lock taken again: the caller finds @n
 * anew. Nothing is held while a fixup waits for the object's thread,
 * which may need this lock. False, and the lock not held, when it cannot
 * be taken again.
 */
static bool fixed_live(struct device *dev, struct devres__node *n,
		       const void *p, size_t new_size, const char *func,
		       bool *ret_locked)
{
	size_t len = n->size, off;

	*ret_locked = true;
	if (likely(!devres__liveobj_any()))
		return false;
	off = new_size ? freed_from(n, new_size) : 0;
	if (off >= len || !devres__liveobj_in((const char *)p + off, len - off))
		return false;
	unlock_dev(dev);
	devres__liveobj_free(dev, (const char *)p + off, len - off, func);
	*ret_locked = lock_dev(dev, func);
	return *ret_locked;
}

/*
 * O(1): the index names the node without reading @p's memory (which may
 * be freed, foreign or another device's), and the node dies in place.
 * @func: the call the driver made, which its WARNs name; @fix: what gives
 * the memory back on the device that has it.
 */
static DEVRES_INLINE void kfree_as(struct device *dev, const void *p,
				   const char *func, const char *fix)
{
	struct devres__node *n, *dead = NULL;
	struct dr_log l;
	bool locked = true, shared;
	size_t size;

	if (ZERO_OR_NULL_PTR(p) || !devres__dev_ok(dev, func) ||
	    !lock_dev(dev, func))
		return;
	/*
	 * What a thread that frees what it just took finds on a device that
	 * threads share: one of the two newest, named by its address, its
	 * slot back to this thread (slab.h), and nothing more done under the
	 * lock. A live object in it needs the lookup's path. A device that
	 * becomes shared while fixed_live() lets the lock go is taken for
	 * one that is not, below: killing the node in place is right on any.
	 */
	shared = dev_shared(dev);
	if (unlikely(shared) && likely(!devres__liveobj_any()) &&
	    (size = slab_drop_newest(dev, p, &l))) {
		dead = compact_if_all_dead(dev);
		unlock_dev(dev);
		devres__free_dead(dead);
		devres__ledger_add_node(-1, -(long)size);
		dr_log(dev, "REM", l);
		return;
	}
	do
		n = find_kmalloc(dev, p);
	while (n && fixed_live(dev, n, p, 0, func, &locked));
	if (!locked)
		return;
	if (n && dr_slab(n) && unlikely(shared)) {
		/* Its slot back to this thread now (slab-shared.c), if it can. */
		l = dr_log_of_res(n);
		if (devres__slab_drop(dev, n)) {
			dead = compact_if_all_dead(dev);
			unlock_dev(dev);
			devres__free_dead(dead);
			dr_log(dev, "REM", l);
			return;
		}
	}
	if (n && dr_slab(n))
		devres__slab_forget(dev, n);
	else if (n)
		devres__index_del(dev, n);
	if (n) {
		l = dr_log_of_res(n);
		kill_locked(dev, n);
		dead = maybe_compact(dev);
	}
	unlock_dev(dev);
	if (!n) {
		warn_not_mine(dev, p, func, fix);
		return;
	}
	devres__free_dead(dead);
	dr_log(dev, "REM", l);
}

void devm_kfree(struct device *dev, const void *p)
{
	kfree_as(dev, p, __func__, "devm_kfree()");
}

bool devm_is_kmalloc(struct device *dev, const void *p)
{
	bool found;

	if (ZERO_OR_NULL_PTR(p) || !devres__dev_ok(dev, __func__) ||
	    devres__arg_bad(dev, p, __func__, "p") || !lock_dev(dev, __func__))
		return false;
	found = find_kmalloc(dev, p) != NULL;
	unlock_dev(dev);
	return found;
}

/*
 * A node devm_krealloc() resized or replaced is named after it from then
 * on, whether it moved or not: which it does is the allocator's business.
 */
static uint32_t realloced(uint32_t kind)
{
	return (kind & ~DR_MAKER_MASK) | DR_MAKER(DR_MK_KREALLOC);
}

/* Grows or shrinks @n in place when its heap chunk (or slot) has room. */
static bool resize_locked(struct device *dev, struct devres__node *n,
			  size_t new_size, bool zero)
{
	size_t old = n->size;

	assert_locked(dev, __func__);
	if (new_size > room_of(n))
		return false;
	if (zero && new_size > old)
		memset((char *)node_data(n) + old, 0, new_size - old);
	if (dr_slab(n))
		devres__slab_resized(dev, old, new_size);
	n->size = (uint32_t)new_size;
	kind_set(n, realloced(n->kind));
	devres__ledger_add(DL_NODE_BYTES, (long)new_size - (long)old);
	return true;
}

void *devm_krealloc(struct device *dev, void *ptr, size_t new_size, gfp_t gfp)
{
	struct devres__node *old, *new_node, *prev = NULL;
	bool zero = gfp & __GFP_ZERO, slab_old = false;
	size_t old_size;
	struct dr_log l;
	bool locked = true;

	if (!devres__dev_ok(dev, __func__))
		return NULL;
	if (unlikely(!new_size)) {
		/* Its WARN names this call, which the driver made. */
		kfree_as(dev, ptr, __func__, "devm_krealloc()");
		return ZERO_SIZE_PTR;
	}
	if (ZERO_OR_NULL_PTR(ptr))
		return kmalloc_as(dev, new_size, gfp, DR_MK_KREALLOC, __func__);
	if (new_size > DR_MAX_SIZE || !lock_dev(dev, __func__))
		return NULL;
	/* What a move or a shrink frees must hold no live object. */
	do
		old = find_kmalloc(dev, ptr);
	while (old && fixed_live(dev, old, ptr, new_size, __func__, &locked));
	if (!locked)
		return NULL;
	if (old && resize_locked(dev, old, new_size, zero)) {
		l = dr_log_of_res(old);
		unlock_dev(dev);
		/* Same node, new size: logged so that later lines add up. */
		dr_log(dev, "REPLACE", l);
		return ptr;
	}
	unlock_dev(dev);
	if (!old) {
		warn_not_mine(dev, ptr, __func__, "devm_krealloc()");
		return NULL;
	}

	/* Zeroed now: the tail past the old size must not be zeroed later. */
	new_node = devres__alloc_node(
		DR_KIND_KMALLOC | DR_MAKER(DR_MK_KREALLOC), new_size, zero);
	if (!new_node)
		return NULL;
	if (!lock_dev(dev, __func__)) {
		devres__free_node(new_node);
		return NULL;
	}
	/*
	 * Look again: another thread may have freed it meanwhile. The new
	 * node takes the old one's place in the list: a search, for the
	 * newer neighbour.
	 */
	old = find_kmalloc(dev, ptr);
	if (old) {
		devres__index_add(dev, new_node);
		old = devres__find_locked(dev, DR_KIND_KMALLOC, match_ptr, ptr,
					  &prev);
		if (dr_slab(old))
			devres__slab_forget(dev, old);
		else
			devres__index_del(dev, old);
		/* Another thread may have resized it in place meanwhile. */
		old_size = old->size < new_size ? old->size : new_size;
		memcpy(node_data(new_node), ptr, old_size);
		new_node->next = old->next;
		kind_set(new_node, realloced(old->kind & ~DR_SLAB));
		if (prev)
			prev->next = new_node;
		else
			set_head(dev, new_node);
		kind_clear(old, DR_ADDED);
		l = dr_log_of_res(new_node);
		if (dr_slab(old)) {
			/* Its slot goes back now, under the lock. */
			devres__ledger_add_node(-1, -(long)old->size);
			devres__slab_unlisted(dev);
			devres__slab_free(dev, dev->devres_slab, old);
			old = NULL;
			slab_old = true;
		}
	}
	unlock_dev(dev);
	if (slab_old) {
		dr_log(dev, "REPLACE", l);
		return node_data(new_node);
	}
	if (!old) {
		devres__free_node(new_node);
		devres__warn(dev, __func__, "%p was freed during the call",
			     ptr);
		return NULL;
	}
	dr_log(dev, "REPLACE", l);
	devres__free_node(old);
	return node_data(new_node);
}

static void *kmemdup(struct device *dev, const void *src, size_t len,
		     unsigned int mk, const char *func)
{
	struct devres__node *n;

	if (!devres__dev_ok(dev, func))
		return NULL;
	if (unlikely(!len))
		return ZERO_SIZE_PTR;
	if (devres__arg_bad(dev, src, func, "source"))
		return NULL;
	n = devres__alloc_node(DR_KIND_KMALLOC | DR_MAKER(mk), len, false);
	if (!n)
		return NULL;
	memcpy(node_data(n), src, len);
	return publish(dev, n, func);
}

char *devm_kstrdup(struct device *dev, const char *s, gfp_t gfp)
{
	(void)gfp;
	if (!s || devres__arg_bad(dev, s, __func__, "string"))
		return NULL;
	return kmemdup(dev, s, strlen(s) + 1, DR_MK_KSTRDUP, __func__);
}

const char *devm_kstrdup_const(struct device *dev, const char *s, gfp_t gfp)
{
	(void)gfp;
	if (!s || devres__arg_bad(dev, s, __func__, "string"))
		return NULL;
	return kmemdup(dev, s, strlen(s) + 1, DR_MK_KSTRDUP_CONST, __func__);
}

void *devm_kmemdup(struct device *dev, const void *src, size_t len, gfp_t gfp)
{
	(void)gfp;
	return kmemdup(dev, src, len, DR_MK_KMEMDUP, __func__);
}

static char *kvasprintf(struct device *dev, unsigned int mk, const char *func,
			const char *fmt, va_list ap)
{
	struct devres__node *n;
	va_list aq;
	int len;

	if (!devres__dev_ok(dev, func) ||
	    devres__arg_bad(dev, fmt, func, "format") ||
	    devres__fmt_bad(dev, func, fmt))
		return NULL;
	va_copy(aq, ap);
	len = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (len < 0)
		return NULL;
	n = devres__alloc_node(DR_KIND_KMALLOC | DR_MAKER(mk), (size_t)len + 1,
			       false);
	if (!n)
		return NULL;
	vsnprintf(node_data(n), (size_t)len + 1, fmt, ap);
	return publish(dev, n, func);
}

char *devm_kvasprintf(struct device *dev, gfp_t gfp, const char *fmt,
		      va_list ap)
{
	(void)gfp;
	return kvasprintf(dev, DR_MK_KVASPRINTF, __func__, fmt, ap);
}

char *devm_kasprintf(struct device *dev, gfp_t gfp, const char *fmt, ...)
{
	va_list ap;
	char *p;

	(void)gfp;
	va_start(ap, fmt);
	p = kvasprintf(dev, DR_MK_KASPRINTF, __func__, fmt, ap);
	va_end(ap);
	return p;
}

struct pages_devres {
	unsigned long addr;
	unsigned int order;
};

static void devm_pages_release(struct device *dev, void *res)
{
	struct pages_devres *pd = res;

	(void)dev;
	devres__pages_put((void *)pd->addr, pd->order);
}

static int match_pages(struct device *dev, void *res, void *addr)
{
	(void)dev;
	return ((struct pages_devres *)res)->addr == (uintptr_t)addr;
}

unsigned long devm_get_free_pages(struct device *dev, gfp_t gfp,
				  unsigned int order)
{
	struct pages_devres *dr;
	void *addr;

	if (!devres__dev_ok_to_acquire(dev, __func__) || order > MAX_PAGE_ORDER)
		return 0;
	dr = devres_alloc(devm_pages_release, sizeof(*dr), gfp);
	if (!dr)
		return 0;
	if (devres__should_fail_as(__func__, -ENOMEM) ||
	    !(addr = devres__pages_get(order, gfp & __GFP_ZERO))) {
		devres_free(dr);
		return 0;
	}
	dr->addr = (uintptr_t)addr;
	dr->order = order;
	if (unlikely(!devres__record(dev, dr, __func__))) {
		/* @dev released meanwhile: the pages go back now. */
		devres__pages_put(addr, order);
		devres_free(dr);
		return 0;
	}
	/* Not dr->addr: another thread may have released dr by now. */
	return (uintptr_t)addr;
}

void devm_free_pages(struct device *dev, unsigned long addr)
{
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__))
		return;
	if (!devres_release(dev, devm_pages_release, match_pages,
			    (void *)(uintptr_t)addr))
		return;
	devres__warn_foreign(
		dev, __func__,
		devres__owner_of_node(dev, devm_pages_release, match_pages,
				      (void *)(uintptr_t)addr,
				      "devm_get_free_pages",
				      "devm_free_pages()", &h)
			? &h
			: NULL,
		"%#lx is not a managed page allocation of this device", addr);
}
