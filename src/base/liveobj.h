/* SPDX-License-Identifier: MIT */
/*
 * The free paths' side of live objects (liveobj.c, <devres/liveobj.h>):
 * while none is live, a free pays one relaxed load.
 */
#ifndef DEVRES_LIVEOBJ_INTERNAL_H
#define DEVRES_LIVEOBJ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "subsys.h"

/* How many objects are live, in this process and, copied, a parent's. */
extern HIDDEN unsigned int devres__liveobj_nr;
/* The lowest and the highest address of a live object. */
extern HIDDEN uintptr_t devres__liveobj_lo, devres__liveobj_hi;

static inline bool devres__liveobj_any(void)
{
	return unlikely(
		__atomic_load_n(&devres__liveobj_nr, __ATOMIC_RELAXED) != 0);
}

/*
 * Whether [@p, @p + @len) may hold a live object, without the lock: not
 * when it lies wholly below the lowest or above the highest. Sound
 * without a lock for every object made live before the free (by a thread
 * the freeing one synchronized with): each bound written while that
 * object is live is on its side of it.
 */
static inline bool devres__liveobj_near(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;

	return devres__liveobj_any() &&
	       a <= __atomic_load_n(&devres__liveobj_hi, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&devres__liveobj_lo, __ATOMIC_RELAXED) < a + len;
}

/*
 * Whether a live object lies in [@p, @p + @len). Takes only the record's
 * lock, a leaf: callable with a device's devres lock held.
 */
HIDDEN bool devres__liveobj_in(const void *p, size_t len);

/*
 * Before [@p, @p + @len), managed memory of @dev, is freed by @func: each
 * live object in it that is busy gets one WARN and its fixup, one that
 * frees itself its fixup only; none is live there on return. Called with
 * no lock of the library held: a fixup waits for the object's callback,
 * which may need any of them.
 */
HIDDEN void devres__liveobj_free(const struct device *dev, const void *p,
				 size_t len, const char *func);

/*
 * The call freeing the memory, while devres__liveobj_free() runs a fixup
 * in this thread: a fixup that WARNs itself names it.
 */
extern HIDDEN TLS_FAST const char *devres__liveobj_func;

/* Both at once, for the paths that hold no lock: the load, then the rest. */
static inline void devres__liveobj_check(const struct device *dev,
					 const void *p, size_t len,
					 const char *func)
{
	if (devres__liveobj_near(p, len))
		devres__liveobj_free(dev, p, len, func);
}

#endif /* DEVRES_LIVEOBJ_INTERNAL_H */
