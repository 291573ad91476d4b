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

/*
 * One per running pass of callbacks on @dev, on the stack of the function
 * that runs them. @up is the parent @dev had when the frame began: only
 * compared, never followed, as the callbacks may free @dev itself.
 */
struct devres__frame {
	const struct device *dev;
	const struct device *up;
	struct devres__frame *next;
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

#endif /* DEVRES_FRAME_H */
