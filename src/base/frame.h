/* SPDX-License-Identifier: MIT */
/*
 * Frames: the callbacks this thread is running on a device, so that the
 * last put_device() of that device (or of its parent) from inside one is
 * carried out when the frame ends instead of freeing what it still uses.
 */
#ifndef DEVRES_FRAME_H
#define DEVRES_FRAME_H

#include <stdbool.h>
#include "subsys.h"

struct device;
struct devres__held;

/* A release that waits for the end of the frames that use its device. */
struct devres__deferred {
	struct device *dev;
	struct devres__deferred *next;
	bool in_frame; /* one of a frame's own slots, not allocated */
};

/*
 * One per running pass of callbacks on @dev, on the stack of the function
 * that runs them. @up is the parent @dev had when the frame began: only
 * compared, never followed, as the callbacks may free @dev itself. @dev
 * is NULL in a frame that was not pushed (see devres__frame_enter()).
 * @slot holds the record of @dev's release (0) or @up's (1) when one
 * could not be allocated; @used says which are in use.
 */
struct devres__frame {
	const struct device *dev;
	const struct device *up;
	struct devres__frame *next;
	unsigned char used;
	struct devres__deferred slot[2];
};

/*
 * This thread's place in the driver model, in one object: each
 * thread-local variable of a shared library is reached through a call (a
 * TLS descriptor) per variable and function, and a bind or an unbind
 * touches all of these, in the same functions.
 */
/*
 * The device locks a thread holds, as its stack of keys in the record of
 * waits (held-keys.c): the first DEVRES_HELD_KEYS of them; @stack is
 * published at the first push (@armed) and points at @key and @n.
 */
#define DEVRES_HELD_KEYS 8
struct devres__held_keys {
	void *key[DEVRES_HELD_KEYS]; /* newest last */
	unsigned int n;
	bool armed;
	struct devres__wait_keys stack;
};

struct devres__dm_thread {
	struct devres__frame *frames;	   /* innermost first */
	struct devres__deferred *deferred; /* releases waiting for a frame */
	bool flushing;			   /* carrying those out */
	bool retry_wanted;		   /* dd.c: a deferred-probe retry */
	bool in_chain;			   /* devres.c: releasing a chain */
	struct devres__held *held;	   /* dd.c: device locks held */
	struct devres__late *late;	   /* devres.c: the chain's checks */
	struct devres__late_hold *hold;	   /* devres.c: and who holds them */
	const struct device *unbinding;	   /* group.c: releasing its binding */
	const void *unbound_head;	   /* group.c: its list's head then */
	unsigned long binds;		   /* dd.c: probes that bound here */
	bool retrigger; /* dd.c: another thread's retry missed a park */
	struct devres__held_keys keys; /* dd.c: device locks held, published */
};

extern HIDDEN TLS_FAST struct devres__dm_thread devres__dmt;

/*
 * This thread's devres__dmt. A function that uses it more than once takes
 * it here, once: the compiler would otherwise compute the address again
 * at each use after a call, through a call of its own.
 */
static DEVRES_INLINE struct devres__dm_thread *devres__dm_me(void)
{
	struct devres__dm_thread *t = &devres__dmt;

	__asm__("" : "+r"(t));
	return t;
}

/*
 * After @f ended with releases waiting: carries out those no frame uses
 * any more, and those held in @f's own slots (frame.c).
 */
HIDDEN void devres__frame_settle(struct devres__dm_thread *t,
				 struct devres__frame *f);

/*
 * Begins @f on @dev, for the thread @t. A frame on the same device, with
 * the same parent, is already the innermost when a pass runs inside
 * another (the release of a binding inside the unbind that holds the
 * device's lock): it holds back the same releases for longer, so @f is
 * left out of the list, and the common nesting costs a compare.
 */
static DEVRES_INLINE void devres__frame_push(struct devres__dm_thread *t,
					     struct devres__frame *f,
					     const struct device *dev)
{
	struct devres__frame *top = t->frames;
	/* The caller's own field, which the library never writes. */
	const struct device *up = dev->parent;

	if (top && top->dev == dev && top->up == up) {
		f->dev = NULL;
		return;
	}
	f->dev = dev;
	f->up = up;
	f->used = 0;
	f->next = top;
	t->frames = f;
}

/* Ends @f, the innermost, then releases what waited only for it. */
static DEVRES_INLINE void devres__frame_pop(struct devres__dm_thread *t,
					    struct devres__frame *f)
{
	if (!f->dev)
		return;
	t->frames = f->next;
	if (unlikely(t->deferred != NULL))
		devres__frame_settle(t, f);
}

static DEVRES_INLINE void devres__frame_enter(struct devres__frame *f,
					      const struct device *dev)
{
	devres__frame_push(&devres__dmt, f, dev);
}

static DEVRES_INLINE void devres__frame_leave(struct devres__frame *f)
{
	devres__frame_pop(&devres__dmt, f);
}

/*
 * Whether thread @t runs a pass of callbacks on @dev itself (its release
 * callbacks, probe or remove), not only on a child of it.
 */
static DEVRES_INLINE bool devres__frame_on(const struct devres__dm_thread *t,
					   const struct device *dev)
{
	for (const struct devres__frame *f = t->frames; f; f = f->next)
		if (f->dev == dev)
			return true;
	return false;
}

/*
 * held-keys.c: @t's stack of held keys published, at its first push;
 * false when it cannot be (no thread-exit key to withdraw it by).
 */
HIDDEN bool devres__held_keys_arm(struct devres__held_keys *h);

/*
 * @key (a device lock's set) pushed on @t's stack of held keys: two
 * relaxed stores, once the stack is published; false when not recorded
 * there (too deep, or not published): the caller joins the set as a
 * member instead (devres__wait_join()). Pops are in the reverse order of
 * the pushes that returned true.
 */
static DEVRES_INLINE bool devres__held_key_push(struct devres__dm_thread *t,
						void *key)
{
	struct devres__held_keys *h = &t->keys;

	if (unlikely(h->n >= DEVRES_HELD_KEYS) ||
	    (unlikely(!h->armed) && !devres__held_keys_arm(h)))
		return false;
	__atomic_store_n(&h->key[h->n], key, __ATOMIC_RELAXED);
	__atomic_store_n(&h->n, h->n + 1, __ATOMIC_RELAXED);
	return true;
}

static DEVRES_INLINE void devres__held_key_pop(struct devres__dm_thread *t)
{
	struct devres__held_keys *h = &t->keys;

	if (h->n)
		__atomic_store_n(&h->n, h->n - 1, __ATOMIC_RELAXED);
}

/*
 * Called by the last put of @dev: true when a frame of this thread still
 * runs on @dev or on a child of it, and the release now waits for that
 * frame to end.
 */
HIDDEN bool devres__release_deferred(struct device *dev);

/*
 * For tests: while @fail, no record of a deferred release is allocated
 * (as if malloc() failed), in any thread. Returns how many were refused
 * so far.
 */
HIDDEN unsigned long devres__frame_fail_records(bool fail);

#endif /* DEVRES_FRAME_H */
