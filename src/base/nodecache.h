/* SPDX-License-Identifier: MIT */
/*
 * The per-thread cache of small node chunks (nodecache.c): what
 * devres__alloc_node() takes first and devres__free_node() gives back.
 */
#ifndef DEVRES_NODECACHE_H
#define DEVRES_NODECACHE_H

#include <stdlib.h>
#include <string.h>
#include "internal.h"

/*
 * Nodes of up to NC_MAX data bytes are filed by class: a class-k chunk
 * holds 16 * k - 8 data bytes behind the header, which is what glibc gives
 * for a request of any size of that class anyway (its chunks grow by 16
 * bytes and carry 8 of their own), so a chunk of a class serves any size
 * of it at no extra heap. ASan builds have no per-thread cache; they keep
 * released chunks poisoned, in a process-wide quarantine of their own
 * (nodecache.c), so that a use after free is still reported.
 */
#if defined(__SANITIZE_ADDRESS__)
#define NC_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NC_OFF 1
#endif
#endif
#ifdef NC_OFF
#define NC_ON false
#else
#define NC_ON true
#endif
#define NC_MAX 248
#define NC_CLASSES ((NC_MAX + 23) / 16 + 1)
/* Bytes of chunks one thread may keep, past which they go to free(). */
#define NC_CAP ((size_t)16 << 20)

/*
 * What a thread is doing with its cache (busy), for a signal handler that
 * runs on it and allocates or frees a node too. NC_LISTS: it is changing
 * its lists, or holds the ASan quarantine's lock: the handler's chunk
 * comes from, and goes back to, the heap. NC_HEAP: it is inside malloc()
 * or free() for the cache (or in pthread_setspecific()): the handler's
 * chunk comes from the lists (the quarantine) or the allocation is
 * refused with one WARN, and its free is deferred, for the thread to
 * finish when it leaves the heap (nc_deferred). The flags are set with
 * compiler fences only: the handler runs on the same thread.
 */
#define NC_LISTS 1u
#define NC_HEAP 2u

/*
 * A thread's lists of chunks, by class: a slot of a process-wide pool
 * (nodecache.c), not the thread's own storage, so that the chunks of a
 * thread that ends with no destructor run (a raw SYS_exit: its storage
 * may be unmapped with its stack) are found and taken back.
 */
struct devres__nc_lists {
	struct devres__node *free[NC_CLASSES];
	size_t bytes; /* cached, in heap chunk bytes (glibc: 16 + request) */
} __attribute__((aligned(64)));

/*
 * The lists of a thread with no slot (not enrolled yet, refused one, or
 * ended): empty, and full (NC_CAP bytes), so that a get finds nothing and
 * a put goes the slow way. Never written.
 */
extern HIDDEN struct devres__nc_lists devres__nc_none;

struct devres__nodecache {
	struct devres__nc_lists *lists; /* its slot, or &devres__nc_none */
	bool enrolled; /* it has a slot; its thread drains it at exit */
	bool refused;  /* no slot to be had (or no key): it caches nothing */
	bool drained;  /* its thread has ended: puts go to the orphans */
	unsigned char busy; /* NC_LISTS, NC_HEAP */
	/* Chunks a handler freed while its thread was in the heap. */
	struct devres__node *deferred;
};

extern HIDDEN TLS_FAST struct devres__nodecache devres__nc;

HIDDEN struct devres__node *devres__nc_get_slow(size_t size, bool zero,
						uint32_t kind);
HIDDEN void devres__nc_put_slow(struct devres__node *n);

static inline size_t nc_class(size_t size)
{
	return (size + 23) >> 4;
}

/* The data bytes a chunk of class @cls holds. */
static inline size_t nc_room(size_t cls)
{
	return cls * 16 - 8;
}

/*
 * Zeroes the data of a node of @size bytes in a chunk of class @cls. The
 * small classes zero their whole room, 16 * cls - 8 bytes, a constant, in
 * a few inline stores (8 bytes, then a block of 16 for each class above
 * the first), where memset() is a call through the PLT for 8 to 56 bytes
 * (the chunk holds the room: fresh() asks for it, and a node resized in
 * place is filed by a class its chunk holds).
 */
static inline void nc_zero(void *p, size_t size, size_t cls)
{
	char *d = p;

	switch (cls) {
	case 4:
		__builtin_memset(d + 40, 0, 16);
		/* fall through */
	case 3:
		__builtin_memset(d + 24, 0, 16);
		/* fall through */
	case 2:
		__builtin_memset(d + 8, 0, 16);
		/* fall through */
	case 1:
		__builtin_memset(d, 0, 8);
		break;
	default:
		memset(p, 0, size);
	}
}

static inline void nc_busy_set(struct devres__nodecache *nc, unsigned int b)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	nc->busy = (unsigned char)b;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/*
 * A chunk for a node of @size data bytes (of @kind, for a refusal's
 * WARN); not counted, not filled. NULL when the heap has none, or when a
 * signal handler asks while its thread is inside the heap for the cache
 * and the cache has none to give (one WARN).
 */
static inline struct devres__node *devres__node_get(size_t size, bool zero,
						    uint32_t kind)
{
	struct devres__nodecache *nc = &devres__nc;
	struct devres__nc_lists *l;
	struct devres__node *n;
	size_t cls = nc_class(size);

	if (!NC_ON || size > NC_MAX || unlikely(nc->busy))
		return devres__nc_get_slow(size, zero, kind);
	nc_busy_set(nc, NC_LISTS);
	l = nc->lists;
	n = l->free[cls];
	if (unlikely(!n)) {
		nc_busy_set(nc, 0);
		return devres__nc_get_slow(size, zero, kind);
	}
	l->free[cls] = n->next;
	l->bytes -= (cls + 1) * 16;
	nc_busy_set(nc, 0);
	if (zero)
		nc_zero(n + 1, size, cls);
	return n;
}

/*
 * Gives a node's chunk back. Its class is the one its size has now: a
 * chunk holds at least that class's bytes, as resizing in place never
 * grows a node past the room of a class its chunk holds (nc_room_of()).
 */
static inline void devres__node_put(struct devres__node *n)
{
	struct devres__nodecache *nc = &devres__nc;
	struct devres__nc_lists *l = nc->lists;
	size_t cls = nc_class(n->size);

	/* A thread with no slot has full lists (devres__nc_none). */
	if (!NC_ON || n->size > NC_MAX || l->bytes >= NC_CAP ||
	    unlikely(nc->busy)) {
		devres__nc_put_slow(n);
		return;
	}
	nc_busy_set(nc, NC_LISTS);
	n->next = l->free[cls];
	l->free[cls] = n;
	l->bytes += (cls + 1) * 16;
	nc_busy_set(nc, 0);
}

/*
 * The data bytes a node in a heap chunk of @usable bytes may grow to in
 * place: the room of the largest class the chunk holds, so that the node
 * is filed by its size when it goes back. With glibc, all of it.
 */
static inline size_t nc_room_of(size_t usable)
{
	size_t room = usable - sizeof(struct devres__node);

	return room > NC_MAX ? room : nc_room((room + 8) >> 4);
}

#endif /* DEVRES_NODECACHE_H */
