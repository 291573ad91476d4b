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

/* A release that waits for the end of the frames that use its device. */
struct devres__deferred {
	struct device *dev;
	struct devres__deferred *next;
	bool in_frame; /* one of a frame's own slots, not allocated */
};

/*
 * One per running pass of callbacks on @dev, on the stack of the function
 * that runs them. @up is the parent @dev had when the frame began: only
 * compared, never followed, as the callbacks may free @dev itself. @slot
 * holds the record of @dev's release (0) or @up's (1) when one could not
 * be allocated; @used says which are in use.
 */
struct devres__frame {
	const struct device *dev;
	const struct device *up;
	struct devres__frame *next;
	unsigned char used;
	struct devres__deferred slot[2];
};

HIDDEN void devres__frame_enter(struct devres__frame *f,
				const struct device *dev);
/* Ends @f, the innermost, then releases what waited only for it. */
HIDDEN void devres__frame_leave(struct devres__frame *f);

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
