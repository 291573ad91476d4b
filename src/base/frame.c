// SPDX-License-Identifier: MIT
/*
 * The last reference of a device put from a callback the library runs on
 * it (a release callback, probe, remove, a match, the device's own
 * release) must not free it there: the pass that called the callback goes
 * on using the device, its list, its lock. As the kernel's kobject release
 * would, the release is carried out after that pass: the put is recorded,
 * and the end of the last frame that uses the device releases it.
 *
 * A frame on a device also holds back its parent's release: the parent's
 * resources may hold the child's memory (a child allocated with
 * devm_kzalloc() on its parent), which its release would free under the
 * child's running pass. Only the frame's own thread defers: another
 * thread's last put waits for nothing, as it holds no frame here.
 *
 * The record of a deferred release is allocated; when it cannot be, the
 * outermost frame that uses the device holds it in a slot of its own (a
 * frame has one for its device and one for the parent), and its end
 * releases the device if no pass of releases will: nothing is left
 * unreleased for want of memory, and nothing is released early.
 */
#include <errno.h>
#include <stdlib.h>
#include "base.h"
#include "frame.h"

TLS_FAST struct devres__dm_thread devres__dmt;

static bool fail_records;
static unsigned long failed_records;

unsigned long devres__frame_fail_records(bool fail)
{
	__atomic_store_n(&fail_records, fail, __ATOMIC_RELAXED);
	return __atomic_load_n(&failed_records, __ATOMIC_RELAXED);
}

static bool in_use(const struct devres__frame *f, const struct device *dev)
{
	for (; f; f = f->next)
		if (f->dev == dev || f->up == dev)
			return true;
	return false;
}

/*
 * Releases, oldest first, each waiting device no frame uses any more. The
 * releases open frames of their own and may defer more: the loop, not a
 * nested call, takes those, so a long chain of parents needs no stack.
 */
static void flush(struct devres__dm_thread *t)
{
	int err = errno;

	t->flushing = true;
	for (;;) {
		struct devres__deferred **pp = &t->deferred, *d;

		while ((d = *pp) && in_use(t->frames, d->dev))
			pp = &d->next;
		if (!d)
			break;
		*pp = d->next;
		devres__last_put(d->dev);
		if (!d->in_frame)
			free(d);
	}
	t->flushing = false;
	errno = err;
}

/*
 * Takes @f's slots still waiting off the list and releases their devices:
 * @f was the outermost frame using each, so nothing uses them now. A
 * flush normally took them already; not when a pass of releases was
 * running when @f ended, as it would find them only after @f, on this
 * stack, is gone. That costs a nested release, only when out of memory.
 */
static void release_slots(struct devres__dm_thread *t, struct devres__frame *f)
{
	int err = errno;

	for (int i = 0; i < 2; i++) {
		struct devres__deferred **pp = &t->deferred;

		if (!(f->used & (1u << i)))
			continue;
		while (*pp && *pp != &f->slot[i])
			pp = &(*pp)->next;
		if (!*pp)
			continue; /* released by a flush */
		*pp = f->slot[i].next;
		devres__last_put(f->slot[i].dev);
	}
	errno = err;
}

void devres__frame_settle(struct devres__dm_thread *t, struct devres__frame *f)
{
	if (!t->flushing)
		flush(t);
	if (unlikely(f->used))
		release_slots(t, f);
}

/* The outermost frame of this thread that uses @dev. */
static struct devres__frame *outermost(struct devres__dm_thread *t,
				       const struct device *dev)
{
	struct devres__frame *last = NULL;

	for (struct devres__frame *f = t->frames; f; f = f->next)
		if (f->dev == dev || f->up == dev)
			last = f;
	return last;
}

static struct devres__deferred *new_record(struct devres__dm_thread *t,
					   struct device *dev)
{
	struct devres__deferred *d = NULL;
	struct devres__frame *f;
	int i;

	if (!__atomic_load_n(&fail_records, __ATOMIC_RELAXED))
		d = malloc(sizeof(*d));
	else
		__atomic_add_fetch(&failed_records, 1, __ATOMIC_RELAXED);
	if (d) {
		d->in_frame = false;
		return d;
	}
	/*
	 * A device's last put happens once, and a frame has one slot for
	 * its device and one for the parent: the slot is free.
	 */
	f = outermost(t, dev);
	i = f->dev == dev ? 0 : 1;
	f->used |= (unsigned char)(1u << i);
	f->slot[i].in_frame = true;
	return &f->slot[i];
}

bool devres__release_deferred(struct device *dev)
{
	struct devres__dm_thread *t = &devres__dmt;
	struct devres__deferred *d, **pp;

	if (likely(!t->frames) || !in_use(t->frames, dev))
		return false;
	d = new_record(t, dev);
	d->dev = dev;
	d->next = NULL;
	/* Oldest first: a child put before its parent goes first. */
	for (pp = &t->deferred; *pp; pp = &(*pp)->next)
		;
	*pp = d;
	return true;
}
