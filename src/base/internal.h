/* SPDX-License-Identifier: MIT */
/*
 * The devres core's own definitions: the node, its kinds, groups. Nothing
 * here is API, and no subsystem includes it: subsystems use subsys.h.
 */
#ifndef DEVRES_INTERNAL_H
#define DEVRES_INTERNAL_H

#include <stdint.h>
#include "subsys.h"

/*
 * A node: 16 bytes of bookkeeping in front of the data area. The list runs
 * from the newest node (dev->devres_head) to the oldest through @next. The
 * release function and its name are per kind, not per node.
 *
 * A node taken off by key (devm_kfree, devm_remove_action, a group's
 * removal) is not unlinked at once, which would need its newer neighbour:
 * it is marked DR_DEAD where it lies, and unlinked and freed by the next
 * walk that passes it, or by a compaction once the dead outnumber the
 * living (see devres__compact_locked()). Every walker skips dead nodes.
 */
struct devres__node {
	struct devres__node *next;
	uint32_t kind; /* kind index | DR_ADDED while listed | DR_DEAD */
	/*
	 * Data bytes. In a group's open marker: scratch for a range walk;
	 * in its close marker: how many of its markers are still listed
	 * (a layer-owned group's: its owner's flags).
	 */
	uint32_t size;
};

#define DR_ADDED 0x80000000u
#define DR_DEAD 0x40000000u
#define DR_SLAB 0x20000000u /* carved from the device's blocks (slab.c) */
#define DR_KIND(n) ((n)->kind & ~(DR_ADDED | DR_DEAD | DR_SLAB))
#define DR_MAX_SIZE ((size_t)UINT32_MAX)

/* Reserved kinds. Kinds from DR_KIND_FIRST on are registered on use. */
enum {
	DR_KIND_NONE,
	DR_KIND_GROUP_OPEN,
	DR_KIND_GROUP_CLOSE,
	DR_KIND_OWNED, /* a layer-owned group's marker, invisible to groups */
	DR_KIND_KMALLOC,
	DR_KIND_FIRST,
};

static inline bool dr_is_marker(const struct devres__node *n)
{
	return DR_KIND(n) < DR_KIND_KMALLOC;
}

/*
 * A group: two markers and an id in 40 bytes (one 48-byte heap chunk).
 * While it is open its close marker is not listed, and its @next links
 * the device's stack of open groups (dev->devres_open), newest first.
 * A layer-owned group (below) has the same shape but lives in its owner's
 * storage; it is never closed, and its @label names it in dumps.
 */
struct devres__group {
	struct devres__node open;
	struct devres__node close;
	union {
		void *id;
		const char *label; /* a layer-owned group's */
	};
};

/* kind.c: release functions (or actions) and their names. */
struct devres__kind {
	dr_release_t release;
	void (*action)(void *);
	const char *name;
	struct devres__kind *hash_next;
	uint32_t id;
};

HIDDEN uint32_t devres__kind_get(dr_release_t release, void (*action)(void *),
				 const char *name);
HIDDEN uint32_t devres__kind_lookup(dr_release_t release,
				    void (*action)(void *));
#define DR_KIND_SEG_SHIFT 8
#define DR_KIND_NR_SEGS 256u
extern HIDDEN struct devres__kind *devres__kind_segs[];

/* Every release and every log line looks its kind up: inline. */
static inline const struct devres__kind *devres__kind(uint32_t id)
{
	struct devres__kind *seg = __atomic_load_n(
		&devres__kind_segs[id >> DR_KIND_SEG_SHIFT], __ATOMIC_ACQUIRE);

	return &seg[id & ((1u << DR_KIND_SEG_SHIFT) - 1)];
}

/*
 * group.c: a group owned by a layer above the devres core, which supplies
 * its storage and its rules (the driver core's binding is one). Opening it
 * allocates nothing. No group call, by id or with a NULL id, ever reaches
 * it; a group that encloses it releases the resources acquired after it but
 * leaves its marker in place; only its owner releases it. With
 * DEVRES_OWNED_KEEP, devres_release_all() also leaves its marker on the
 * list, where the owner's release finds it, so that the owner may reuse
 * the storage as soon as its release returns. Without it, a
 * devres_release_all() takes the marker with the rest, and the owner must
 * not reuse the storage while another thread may be releasing the
 * device's resources. The storage is zeroed before its first open.
 */
#define DEVRES_OWNED_KEEP 1u

HIDDEN int devres__owned_open(struct device *dev, struct devres__group *g,
			      const char *label, unsigned int flags);
HIDDEN int devres__owned_release(struct device *dev, struct devres__group *g);

/*
 * Invariant checks (check.c). Built in debug and sanitizer builds, where a
 * broken invariant prints what broke and aborts; compiled out when NDEBUG
 * is defined (release builds) unless DEVRES_CHECKS is defined explicitly.
 */
#if !defined(DEVRES_CHECKS) && !defined(NDEBUG)
#define DEVRES_CHECKS 1
#endif

HIDDEN void devres__bug(const struct device *dev, const char *func,
			const char *fmt, ...) DEVRES_PRINTF(3, 4)
	__attribute__((noreturn, cold));

#endif /* DEVRES_INTERNAL_H */
