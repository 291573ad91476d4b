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
 */
#include <errno.h>
#include <stdlib.h>
#include "base.h"
#include "frame.h"

struct devres__deferred {
	struct device *dev;
	struct devres__deferred *next;
};

TLS_FAST struct devres__dm_thread devres__dmt;

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
void devres__frame_flush(void)
{
	struct devres__dm_thread *t = &devres__dmt;
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
		free(d);
	}
	t->flushing = false;
	errno = err;
}

bool devres__release_deferred(struct device *dev)
{
	struct devres__dm_thread *t = &devres__dmt;
	struct devres__deferred *d, **pp;

	if (likely(!t->frames) || !in_use(t->frames, dev))
		return false;
	d = malloc(sizeof(*d));
	if (!d) {
		devres__warn(dev, "put_device",
			     "out of memory: the release of a device still "
			     "in use is left undone");
		return true;
	}
	d->dev = dev;
	d->next = NULL;
	/* Oldest first: a child put before its parent goes first. */
	for (pp = &t->deferred; *pp; pp = &(*pp)->next)
		;
	*pp = d;
	return true;
}
