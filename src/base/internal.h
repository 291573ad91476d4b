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
/*
 * In a group's open marker: the group is open, and its close marker,
 * unlisted, holds the links of the stack of open groups (group.c).
 */
#define DR_STACKED 0x10000000u
/*
 * Which call of the devm_kmalloc family made a managed-memory node, for
 * log lines and dumps only: DR_KIND() leaves these bits out, so that to
 * lookups, the index, releases and checks every such node is of the one
 * kind DR_KIND_KMALLOC, as every kernel one is of devm_kmalloc_release.
 * Zero in a node of any other kind.
 */
#define DR_MAKER_SHIFT 24
#define DR_MAKER_MASK (0xfu << DR_MAKER_SHIFT)
#define DR_MAKER(mk) ((uint32_t)(mk) << DR_MAKER_SHIFT)
#define DR_FLAGS (DR_ADDED | DR_DEAD | DR_SLAB | DR_STACKED)
/*
 * The kind of a node given back to the heap or the node cache: dead, of no
 * kind, listed nowhere (no live node is of DR_KIND_NONE), so that the
 * node's second devres_free() or a devres_add() of it is caught.
 */
#define DR_FREED DR_DEAD
/*
 * One load, as every read of a node's kind word that another thread may
 * be claiming at once (node.h, kind_set()): the plain load's instruction.
 */
#define DR_KIND(n)                                                             \
	(__atomic_load_n(&(n)->kind, __ATOMIC_RELAXED) &                       \
	 ~(DR_FLAGS | DR_MAKER_MASK))
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

/* The makers (kmalloc.c), in the order of devres__maker_names[]. */
enum {
	DR_MK_KMALLOC,
	DR_MK_KZALLOC,
	DR_MK_KMALLOC_ARRAY,
	DR_MK_KCALLOC,
	DR_MK_KREALLOC,
	DR_MK_KMEMDUP,
	DR_MK_KSTRDUP,
	DR_MK_KSTRDUP_CONST,
	DR_MK_KVASPRINTF,
	DR_MK_KASPRINTF,
	DR_MK_NR,
};

_Static_assert(((DR_MK_NR - 1) << DR_MAKER_SHIFT) <= DR_MAKER_MASK, "makers");

static inline bool dr_is_marker(const struct devres__node *n)
{
	return DR_KIND(n) < DR_KIND_KMALLOC;
}

/*
 * A group: two markers and an id in 40 bytes (one 48-byte heap chunk).
 * While it is open (DR_STACKED in its open marker) its close marker is not
 * listed, and its 16 bytes are the links of the device's doubly linked
 * stack of open groups (dev->devres_open, newest first), so that closing
 * or removing any open group is O(1). The close marker becomes a node
 * again, {DR_KIND_GROUP_CLOSE, one marker listed}, when the group leaves
 * the stack. A layer-owned group (below) has the same shape but lives in
 * its owner's storage; it is never stacked nor closed, and its @label
 * names it in dumps.
 */
struct devres__group {
	struct devres__node open;
	union {
		struct devres__node close;
		struct {
			struct devres__group *older; /* over close.next */
			struct devres__group *newer; /* over close.kind, size */
		} stack;
	};
	union {
		void *id;
		const char *label; /* a layer-owned group's */
	};
};

/* The stack's links fit in the close marker: no byte more per group. */
_Static_assert(sizeof(struct devres__group) ==
		       2 * sizeof(struct devres__node) + sizeof(void *),
	       "a group is two markers and an id");

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

/*
 * The kind table's hash (kind.c): chains of entries, newest first, read
 * without a lock. Entries are never freed nor changed once published.
 */
#define DR_KIND_HASH_BITS 8
extern HIDDEN struct devres__kind *devres__kind_buckets[];

static inline unsigned int devres__kind_hash(dr_release_t release,
					     void (*action)(void *))
{
	uint64_t key = (uint64_t)(uintptr_t)release ^
		       ((uint64_t)(uintptr_t)action * 31u);

	return (unsigned int)((key * 0x9e3779b97f4a7c15ull) >>
			      (64 - DR_KIND_HASH_BITS));
}

/*
 * devres__kind_get() for the allocation paths (every devres_alloc() and
 * devm_add_action() looks its kind up): the first entry of the bucket is
 * tried inline, which is the kind itself unless another one registered
 * later shares its bucket; anything else takes the call.
 */
static inline uint32_t devres__kind_of(dr_release_t release,
				       void (*action)(void *), const char *name)
{
	const struct devres__kind *k = __atomic_load_n(
		&devres__kind_buckets[devres__kind_hash(release, action)],
		__ATOMIC_ACQUIRE);

	if (likely(k && k->release == release && k->action == action))
		return k->id;
	return devres__kind_get(release, action, name);
}
HIDDEN uint32_t devres__kind_lookup(dr_release_t release,
				    void (*action)(void *));
#define DR_KIND_SEG_SHIFT 8
#define DR_KIND_NR_SEGS 256u
_Static_assert(((uint64_t)DR_KIND_NR_SEGS << DR_KIND_SEG_SHIFT) <=
		       (1u << DR_MAKER_SHIFT),
	       "kind ids reach the maker bits");
extern HIDDEN struct devres__kind *devres__kind_segs[];
/* How many kinds are registered: ids below it are in use (kind.c). */
extern HIDDEN uint32_t devres__nr_kinds;

/* Every release and every log line looks its kind up: inline. */
static inline const struct devres__kind *devres__kind(uint32_t id)
{
	struct devres__kind *seg = __atomic_load_n(
		&devres__kind_segs[id >> DR_KIND_SEG_SHIFT], __ATOMIC_ACQUIRE);

	return &seg[id & ((1u << DR_KIND_SEG_SHIFT) - 1)];
}

extern HIDDEN const char *const devres__maker_names[DR_MK_NR];

/*
 * The name that log lines, dumps and WARNs give a node, from its kind word
 * (flags and all): its kind's, or for managed memory the call's.
 */
static inline const char *devres__kind_name(uint32_t word)
{
	uint32_t id = word & ~(DR_FLAGS | DR_MAKER_MASK);
	uint32_t mk = (word & DR_MAKER_MASK) >> DR_MAKER_SHIFT;

	if (id == DR_KIND_KMALLOC && mk < DR_MK_NR)
		return devres__maker_names[mk];
	return devres__kind(id)->name;
}

/*
 * log.c: a log line of a node from what dr_log_of() took (node.h): @kind is
 * its kind word without flags, @group a marker's group id or owner's label.
 */
HIDDEN void devres__log_node(const struct device *dev, const char *op,
			     const void *node, uint32_t kind, const void *group,
			     size_t size);

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

/*
 * pages.c: page-aligned blocks of 1 << @order pages for
 * devm_get_free_pages(), and their return, through a small cache.
 */
HIDDEN void *devres__pages_get(unsigned int order, bool zero);
HIDDEN void devres__pages_put(void *p, unsigned int order);

/* index.c: frees the table a device keeps between lookups, at its end. */
HIDDEN void devres__index_free(struct device *dev);

/*
 * devres.c: the release's last look at @dev's list, once @dev is marked
 * dead: what a call without a reference recorded meanwhile is released,
 * with one WARN (unless the release @left resources listed, WARNed), and
 * the index freed. From then on every record on @dev is refused.
 */
HIDDEN void devres__release_strays(struct device *dev, bool left);
/* dev-hooks.c: the armed hooks of subsys.h, at @dev's final release. */
HIDDEN void devres__dev_hooks_run(struct device *dev);

HIDDEN void devres__bug(const struct device *dev, const char *func,
			const char *fmt, ...) DEVRES_PRINTF(3, 4)
	__attribute__((noreturn, cold));

#endif /* DEVRES_INTERNAL_H */
