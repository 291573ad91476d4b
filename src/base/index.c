// SPDX-License-Identifier: MIT
/*
 * The device's index: an open-addressing table of the nodes that are
 * named by a key rather than found by a search. Managed memory by its
 * address (devm_kfree, devm_krealloc), actions by (function, argument)
 * (devm_remove_action, devm_release_action, devm_is_action_added) and
 * groups by id. A lookup never reads the caller's pointer, only listed
 * nodes, so a pointer that is not ours (freed, foreign, from another
 * device) is refused without touching it.
 *
 * Linear probing, tombstones on removal. A key may be recorded more than
 * once (the same action twice, two groups with one id): its entries sit in
 * one probe run, newest first, as the list would find them.
 *
 * The index is built on the first lookup, by one walk of the list, and
 * kept up to date from then on until devres_release_all() drops it: a
 * device whose resources are never looked up by key (most: they are all
 * released together) never pays for it. The walk is paid for by the adds
 * it indexes, so lookups stay amortized O(1).
 *
 * A dropped table of up to KEEP_CAP slots stays with the device, emptied
 * and dormant (not kept up to date, not looked in), for the next build:
 * a device that is filled, looked up in and released again and again
 * (bind and unbind, a reaper) allocates its table once. Under
 * AddressSanitizer that matters more than elsewhere: every block freed
 * sits in ASan's quarantine, so a table allocated per release is fresh
 * memory each time, page faults included. The table is ours, never the
 * caller's: reusing it hides no use after free. It is freed with the
 * device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"
#include "node.h"

struct devres__index {
	size_t cap; /* a power of two */
	size_t used;
	size_t tomb;
	bool live; /* built: false while it waits, empty, for a build */
	struct devres__node *slot[];
};

#define TOMB ((struct devres__node *)1)
/*
 * An entry of managed memory carries this bit in its slot: its key is the
 * node's own data address, so its hash is known from the slot alone. A
 * rebuild rehashes thousands of entries after a device grew while nothing
 * released it; reading each node's kind to learn its key was a cache miss
 * per entry. Nodes are heap chunks or parts of a group: aligned to 8 at
 * least, so the bit is free.
 */
#define MEM_TAG ((uintptr_t)2)
#define MIN_CAP 16
#define KEEP_CAP 256 /* slots: a dormant table holds 2 KiB at most */

/*
 * Managed memory: the address's low bits go first. Allocations are at
 * least 32 bytes apart and mostly made in address order, so consecutive
 * ones land in distinct, consecutive slots and the table is filled and
 * emptied in cache order. Other keys (an action's argument, a group's id)
 * may be as dense as an array of bytes: mixed, or linear probing would
 * pile them into one run.
 */
static size_t hash(uint32_t kind, const void *key)
{
	uint64_t k = (uint64_t)(uintptr_t)key;

	if (kind == DR_KIND_KMALLOC)
		return (size_t)((k >> 4) ^ (k >> 26));
	k = (k ^ ((uint64_t)kind << 32)) * 0x9e3779b97f4a7c15ull;
	return (size_t)(k ^ (k >> 29));
}

static const void *key_of(struct devres__node *n)
{
	switch (DR_KIND(n)) {
	case DR_KIND_KMALLOC:
		return node_data(n);
	case DR_KIND_GROUP_OPEN:
		return open_to_group(n)->id;
	default:
		return *(void **)node_data(n);
	}
}

static bool tagged(const struct devres__node *e)
{
	return (uintptr_t)e & MEM_TAG;
}

/* The node of an entry (not TOMB). */
static struct devres__node *node_of(struct devres__node *e)
{
	return (struct devres__node *)((uintptr_t)e & ~MEM_TAG);
}

/* The entry that records @n. */
static struct devres__node *entry_of(struct devres__node *n)
{
	if (DR_KIND(n) != DR_KIND_KMALLOC)
		return n;
	return (struct devres__node *)((uintptr_t)n | MEM_TAG);
}

/* Where an entry's run starts: no read of a node of managed memory. */
static size_t hash_of(struct devres__node *e)
{
	if (tagged(e))
		return hash(DR_KIND_KMALLOC, node_data(node_of(e)));
	return hash(DR_KIND(e), key_of(e));
}

/* The built table, or NULL (none, or a dormant one). */
static struct devres__index *idx_of(struct device *dev)
{
	struct devres__index *t = dev->devres_index;

	return t && t->live ? t : NULL;
}

/* Appends entry @e after those of its key (a table with no tombstones). */
static void append(struct devres__index *t, struct devres__node *e)
{
	size_t mask = t->cap - 1, i = hash_of(e) & mask;

	while (t->slot[i])
		i = (i + 1) & mask;
	t->slot[i] = e;
	t->used++;
}

/*
 * A new table for @need entries. The old one is walked from an empty slot,
 * so that each probe run is met whole and in order, and its entries are
 * appended: the order of a key's entries is kept.
 */
static int rebuild(struct device *dev, size_t need)
{
	struct devres__index *old = idx_of(dev), *t = dev->devres_index;
	size_t cap = MIN_CAP, start = 0;

	while (cap < need * 2)
		cap *= 2;
	/* A dormant table is empty: it serves if it is large enough. */
	if (!old && t && t->cap >= cap) {
		t->live = true;
		return 0;
	}
	t = devres__block_zalloc(sizeof(*t) +
				 cap * sizeof(struct devres__node *));
	if (!t)
		return -ENOMEM;
	t->cap = cap;
	t->live = true;
	if (!old)
		devres__block_free(dev->devres_index); /* dormant, too small */
	if (old) {
		while (old->slot[start])
			start++;
		for (size_t j = 1; j <= old->cap; j++) {
			struct devres__node *e =
				old->slot[(start + j) & (old->cap - 1)];

			if (e && e != TOMB)
				append(t, e);
		}
		devres__block_free(old);
	}
	dev->devres_index = t;
	return 0;
}

static void insert(struct device *dev, struct devres__node *n);

void devres__index_add(struct device *dev, struct devres__node *n)
{
	assert_locked(dev, __func__);
	/* Not built yet: the first lookup will find @n on the list. */
	if (idx_of(dev))
		insert(dev, n);
}

/* One walk of the list, newest first: each key's entries in list order. */
static int build(struct device *dev)
{
	size_t nr = 0;
	struct devres__index *t;

	for (struct devres__node *n = list_head(dev); n; n = n->next)
		nr += !dr_dead(n) && devres__indexed(n);
	if (rebuild(dev, nr + 1))
		return -ENOMEM;
	t = idx_of(dev);
	for (struct devres__node *n = list_head(dev); n; n = n->next)
		if (!dr_dead(n) && devres__indexed(n))
			append(t, entry_of(n));
	return 0;
}

/* Without memory for an index: the search it replaces. */
static struct devres__node *search(struct device *dev, uint32_t kind,
				   const void *key)
{
	for (struct devres__node *n = list_head(dev); n; n = n->next)
		if (!dr_dead(n) && DR_KIND(n) == kind && !dr_slab(n) &&
		    key_of(n) == key)
			return n;
	return NULL;
}

static void insert(struct device *dev, struct devres__node *n)
{
	struct devres__index *t = idx_of(dev);
	const void *key;
	size_t mask, i;
	uint32_t kind;

	/*
	 * A table that cannot grow goes dormant, as at a release: lookups
	 * search the list until the next one builds it again. The index
	 * never fails an add, so it is no fault point (the first lookup's
	 * table is not either): whether an add needs a growth depends on
	 * what the device held before (the dormant table's size, its
	 * tombstones), and a fault point there made the points of the same
	 * call on the same device differ from one sweep run to the next.
	 */
	if ((t->used + t->tomb + 1) * 4 > t->cap * 3) {
		if (rebuild(dev, t->used + 1)) {
			memset(t->slot, 0,
			       t->cap * sizeof(struct devres__node *));
			t->used = t->tomb = 0;
			t->live = false;
			return;
		}
		t = idx_of(dev);
	}
	/*
	 * The newest entry of a key comes first: it takes the place of the
	 * first older one, which moves to the next, and so on down the run.
	 * Managed memory is keyed by its own address, which no other listed
	 * node has: it has no older entry, and its probe reads no node; nor
	 * does another key's probe read one of managed memory.
	 */
	kind = DR_KIND(n);
	key = key_of(n);
	n = entry_of(n);
	mask = t->cap - 1;
	for (i = hash(kind, key) & mask;; i = (i + 1) & mask) {
		struct devres__node *e = t->slot[i];

		if (!e || e == TOMB) {
			if (e)
				t->tomb--;
			t->slot[i] = n;
			t->used++;
			return;
		}
		if (kind != DR_KIND_KMALLOC && !tagged(e) &&
		    DR_KIND(e) == kind && key_of(e) == key) {
			t->slot[i] = n;
			n = e;
		}
	}
}

struct devres__node *devres__index_find(struct device *dev, uint32_t kind,
					const void *key)
{
	struct devres__index *t = idx_of(dev);
	size_t mask, i;

	assert_locked(dev, __func__);
	if (!t) {
		if (!list_head(dev))
			return NULL;
		if (build(dev))
			return search(dev, kind, key);
		t = idx_of(dev);
	}
	mask = t->cap - 1;
	for (i = hash(kind, key) & mask; t->slot[i]; i = (i + 1) & mask) {
		struct devres__node *e = t->slot[i];

		if (e == TOMB)
			continue;
		/*
		 * Managed memory: the one node whose data is at @key, known
		 * from its slot, its header not read (a miss each).
		 */
		if (kind == DR_KIND_KMALLOC) {
			if (tagged(e) && node_data(node_of(e)) == key)
				return node_of(e);
			continue;
		}
		if (!tagged(e) && DR_KIND(e) == kind && key_of(e) == key)
			return e;
	}
	return NULL;
}

void devres__index_del(struct device *dev, struct devres__node *n)
{
	struct devres__index *t = idx_of(dev);
	size_t mask, i;

	assert_locked(dev, __func__);
	if (!t)
		return;
	n = entry_of(n);
	mask = t->cap - 1;
	for (i = hash_of(n) & mask; t->slot[i]; i = (i + 1) & mask) {
		if (t->slot[i] != n)
			continue;
		/* The end of a run needs no tombstone. */
		if (!t->slot[(i + 1) & mask]) {
			t->slot[i] = NULL;
		} else {
			t->slot[i] = TOMB;
			t->tomb++;
		}
		t->used--;
		return;
	}
}

/*
 * Everything was taken off the list: the index goes with it. A small
 * table stays, emptied and dormant (see the top); a large one is returned,
 * for devres__block_free() once the lock is dropped (it may be unmapped).
 */
void *devres__index_detach(struct device *dev)
{
	struct devres__index *t = dev->devres_index;

	assert_locked(dev, __func__);
	if (!t || t->cap > KEEP_CAP) {
		dev->devres_index = NULL;
		return t;
	}
	if (t->live && t->used + t->tomb)
		memset(t->slot, 0, t->cap * sizeof(struct devres__node *));
	t->used = t->tomb = 0;
	t->live = false;
	return NULL;
}

/* The device goes: so does a dormant table. Nobody else holds it now. */
void devres__index_free(struct device *dev)
{
	devres__block_free(__atomic_exchange_n(&dev->devres_index, NULL,
					       __ATOMIC_ACQ_REL));
}

/*
 * Whether the table's slots agree with its counts: a dormant table holds
 * nothing, a built one as many entries and tombstones as counted. An
 * entry left over from before a release_all would name freed memory.
 */
bool devres__index_sound(struct device *dev)
{
	struct devres__index *t = dev->devres_index;
	size_t used = 0, tomb = 0;

	assert_locked(dev, __func__);
	if (!t)
		return true;
	for (size_t i = 0; i < t->cap; i++) {
		used += t->slot[i] && t->slot[i] != TOMB;
		tomb += t->slot[i] == TOMB;
	}
	return used == t->used && tomb == t->tomb && (t->live || !used);
}

/* Entries, or -1 while the index is not built. */
long devres__index_count(struct device *dev)
{
	struct devres__index *t = idx_of(dev);

	return t ? (long)t->used : -1;
}

bool devres__indexed(const struct devres__node *n)
{
	uint32_t kind = DR_KIND(n);

	if (dr_slab(n))
		return false;
	return kind == DR_KIND_KMALLOC || kind == DR_KIND_GROUP_OPEN ||
	       (kind >= DR_KIND_FIRST && devres__kind(kind)->action);
}
