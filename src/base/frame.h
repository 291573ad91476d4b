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
 * Whether this thread runs a pass of callbacks on @dev itself (its
 * release callbacks, probe or remove), not only on a child of it.
 */
HIDDEN bool devres__frame_on(const struct device *dev);

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
