/* SPDX-License-Identifier: MIT */
/*
 * kmalloc() and friends. Unmanaged memory is still counted: every block
 * is a managed allocation of one hidden device ("kmalloc"), freed by
 * kfree(), so that each kmalloc() is a fault point and a block a driver
 * forgets to free shows in the ledger, and so in a sweep, as a leak.
 */
#ifndef KCOMPAT_LINUX_SLAB_H
#define KCOMPAT_LINUX_SLAB_H

#include <linux/kcompat_site.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <linux/compiler.h>
#include <linux/kcompat_held.h>
#include <linux/types.h>

/*
 * The kernel's flags that say whether an allocation may sleep to reclaim
 * memory: GFP_KERNEL may, GFP_ATOMIC and GFP_NOWAIT may not. Here none
 * sleeps, but one that may, made in atomic context, WARNs as the
 * kernel's DEBUG_ATOMIC_SLEEP reports it (<linux/kcompat_held.h>).
 */
#define __GFP_DIRECT_RECLAIM 0x400u
#define __GFP_KSWAPD_RECLAIM 0x800u
#define GFP_NOWAIT __GFP_KSWAPD_RECLAIM
#define GFP_NOIO (__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)
#define GFP_NOFS (GFP_NOIO | 0x40u)

static inline bool gfpflags_allow_blocking(gfp_t gfp)
{
	return (gfp & __GFP_DIRECT_RECLAIM) != 0;
}

/* @gfp, checked first for the allocation @id makes with it. */
static inline gfp_t kcompat_gfp(gfp_t gfp, enum kcompat_sleeper id)
{
	if (gfpflags_allow_blocking(gfp))
		kcompat_might_sleep(id);
	return gfp;
}

/* One heap device in the program, whichever file includes this first. */
__attribute__((weak)) struct device kcompat_heap;
__attribute__((weak)) pthread_once_t kcompat_heap_once = PTHREAD_ONCE_INIT;

static inline void kcompat_heap_release(struct device *dev)
{
	(void)dev;
}

static inline void kcompat_heap_init(void)
{
	kcompat_heap.init_name = "kmalloc";
	kcompat_heap.release = kcompat_heap_release;
	device_initialize(&kcompat_heap);
}

static inline struct device *kcompat_heap_dev(void)
{
	pthread_once(&kcompat_heap_once, kcompat_heap_init);
	return &kcompat_heap;
}

/*
 * In a child of fork(), the heap device is the parent's, which the library
 * refuses to the child (docs/fork.md): the child's copy is wiped, and a
 * heap device of its own is made at once, as at the program's start, so
 * that it is in every ledger baseline of the child too (made at the
 * child's first kmalloc(), a sweep in the child counted it as a leak of
 * the run that made it). The parent's blocks stay in the child's memory,
 * unreachable through kfree() (its WARN: not found).
 */
static inline void kcompat_heap_child(void)
{
	pthread_once_t once = PTHREAD_ONCE_INIT;

	memset(&kcompat_heap, 0, sizeof(kcompat_heap));
	kcompat_heap_once = once;
	(void)kcompat_heap_dev();
}

__attribute__((weak)) pthread_once_t kcompat_heap_fork_once = PTHREAD_ONCE_INIT;

static inline void kcompat_heap_atfork(void)
{
	(void)pthread_atfork(NULL, NULL, kcompat_heap_child);
}

/*
 * Made when the program starts, not at the first kmalloc(): the device is
 * then in every ledger baseline, so a sweep never counts it as a leak.
 */
__attribute__((constructor)) static void kcompat_heap_ctor(void)
{
	(void)kcompat_heap_dev();
	pthread_once(&kcompat_heap_fork_once, kcompat_heap_atfork);
}

static inline void *kmalloc(size_t size, gfp_t gfp)
{
	return devm_kmalloc(kcompat_heap_dev(), size,
			    kcompat_gfp(gfp, KCOMPAT_SLEEP_kmalloc));
}

static inline void *kzalloc(size_t size, gfp_t gfp)
{
	return devm_kzalloc(kcompat_heap_dev(), size,
			    kcompat_gfp(gfp, KCOMPAT_SLEEP_kzalloc));
}

static inline void *kmalloc_array(size_t n, size_t size, gfp_t gfp)
{
	return devm_kmalloc_array(kcompat_heap_dev(), n, size,
				  kcompat_gfp(gfp,
					      KCOMPAT_SLEEP_kmalloc_array));
}

static inline void *kcalloc(size_t n, size_t size, gfp_t gfp)
{
	return devm_kcalloc(kcompat_heap_dev(), n, size,
			    kcompat_gfp(gfp, KCOMPAT_SLEEP_kcalloc));
}

/*
 * A block kmalloc() did not make is left as it is: one WARN in
 * krealloc()'s name, with the call a devm_kmalloc() block wants.
 */
static inline void *krealloc(const void *p, size_t size, gfp_t gfp)
{
	struct device *heap = kcompat_heap_dev();

	gfp = kcompat_gfp(gfp, KCOMPAT_SLEEP_krealloc);
	if (!ZERO_OR_NULL_PTR(p) && !IS_ERR(p) && !devm_is_kmalloc(heap, p)) {
		devres_warn(NULL, "krealloc",
			    "%p is not a block of kmalloc(): if "
			    "devm_kmalloc() made it, use devm_krealloc(); "
			    "nothing changed",
			    p);
		return NULL;
	}
	return devm_krealloc(heap, (void *)p, size, gfp);
}

static inline char *kstrdup(const char *s, gfp_t gfp)
{
	return devm_kstrdup(kcompat_heap_dev(), s,
			    kcompat_gfp(gfp, KCOMPAT_SLEEP_kstrdup));
}

static inline void *kmemdup(const void *src, size_t len, gfp_t gfp)
{
	return devm_kmemdup(kcompat_heap_dev(), src, len,
			    kcompat_gfp(gfp, KCOMPAT_SLEEP_kmemdup));
}

/*
 * A work function may kfree() the memory its item lives in, as the kernel
 * allows: the free tells the item's thread, which then touches nothing of
 * it (<linux/workqueue.h>). A free of memory that holds an item still
 * queued, or running in another thread, WARNs and cancels it first.
 *
 * A block kmalloc() did not make is not freed: one WARN in kfree()'s
 * name, with the free a devm_kmalloc() block wants (the kernel's kfree()
 * of one frees it under its device, which then frees it again).
 */
static inline void kcompat_kfree(const void *p, const char *func)
{
	struct device *heap;

	if (ZERO_OR_NULL_PTR(p))
		return;
	if (IS_ERR(p)) {
		devres_warn_bad_arg(func, "p", p);
		return;
	}
	heap = kcompat_heap_dev();
	if (!devm_is_kmalloc(heap, p)) {
		devres_warn(NULL, func,
			    "%p is not a block of kmalloc(): if "
			    "devm_kmalloc() made it, use devm_kfree(); "
			    "nothing freed",
			    p);
		return;
	}
	devm_kfree(heap, p);
}

static inline void kfree(const void *p)
{
	kcompat_kfree(p, "kfree");
}

static inline void kvfree(const void *p)
{
	kcompat_kfree(p, "kvfree");
}

static inline void kfree_sensitive(const void *p)
{
	kcompat_kfree(p, "kfree_sensitive");
}

#define kvmalloc kmalloc
#define kvzalloc kzalloc
#define kvcalloc kcalloc
#define kvmalloc_array kmalloc_array

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#undef devm_add_action
#undef devm_add_action_or_reset
#define devm_add_action(dev, action, data)                                     \
	KCOMPAT_AT(devm_add_action,                                            \
		   devm_add_action_named(dev, action, data, #action))
#define devm_add_action_or_reset(dev, action, data)                            \
	KCOMPAT_AT(devm_add_action_or_reset,                                   \
		   devm_add_action_or_reset_named(dev, action, data, #action))
#define devm_kmalloc(dev, size, gfp)                                           \
	KCOMPAT_AT(devm_kmalloc,                                               \
		   devm_kmalloc(dev, size,                                     \
				kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_kmalloc)))
#define devm_kzalloc(dev, size, gfp)                                           \
	KCOMPAT_AT(devm_kzalloc,                                               \
		   devm_kzalloc(dev, size,                                     \
				kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_kzalloc)))
#define devm_kmalloc_array(dev, n, size, gfp)                                  \
	KCOMPAT_AT(                                                            \
		devm_kmalloc_array,                                            \
		devm_kmalloc_array(                                            \
			dev, n, size,                                          \
			kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_kmalloc_array)))
#define devm_kcalloc(dev, n, size, gfp)                                        \
	KCOMPAT_AT(devm_kcalloc,                                               \
		   devm_kcalloc(dev, n, size,                                  \
				kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_kcalloc)))
#define devm_krealloc(dev, p, size, gfp)                                       \
	KCOMPAT_AT(                                                            \
		devm_krealloc,                                                 \
		devm_krealloc(dev, p, size,                                    \
			      kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_krealloc)))
#define devm_kstrdup(dev, s, gfp)                                              \
	KCOMPAT_AT(devm_kstrdup,                                               \
		   devm_kstrdup(dev, s,                                        \
				kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_kstrdup)))
#define devm_kstrdup_const(dev, s, gfp)                                        \
	KCOMPAT_AT(devm_kstrdup_const, devm_kstrdup_const(dev, s, gfp))
#define devm_kmemdup(dev, src, len, gfp)                                       \
	KCOMPAT_AT(devm_kmemdup,                                               \
		   devm_kmemdup(dev, src, len,                                 \
				kcompat_gfp(gfp, KCOMPAT_SLEEP_devm_kmemdup)))
#define devm_kasprintf(...)                                                    \
	KCOMPAT_AT(devm_kasprintf, devm_kasprintf(__VA_ARGS__))
#define devm_kvasprintf(dev, gfp, fmt, ap)                                     \
	KCOMPAT_AT(devm_kvasprintf, devm_kvasprintf(dev, gfp, fmt, ap))
#define kmalloc(size, gfp) KCOMPAT_AT(kmalloc, kmalloc(size, gfp))
#define kzalloc(size, gfp) KCOMPAT_AT(kzalloc, kzalloc(size, gfp))
#define kmalloc_array(n, size, gfp)                                            \
	KCOMPAT_AT(kmalloc_array, kmalloc_array(n, size, gfp))
#define kcalloc(n, size, gfp) KCOMPAT_AT(kcalloc, kcalloc(n, size, gfp))
#define krealloc(p, size, gfp) KCOMPAT_AT(krealloc, krealloc(p, size, gfp))
#define kstrdup(s, gfp) KCOMPAT_AT(kstrdup, kstrdup(s, gfp))
#define kmemdup(src, len, gfp) KCOMPAT_AT(kmemdup, kmemdup(src, len, gfp))

#endif /* KCOMPAT_LINUX_SLAB_H */
