// SPDX-License-Identifier: MIT
/*
 * Small managed memory of a device that several threads use at once: its
 * lock's bias was revoked (lock.c), or there is no bias (ThreadSanitizer
 * builds). The device's lock still serializes everything here.
 *
 * Why not the plain slab: there, a freed slot dies in place on the list
 * and a later compaction hands every dead slot to one free list per size
 * class, in list order, which the threads then take turns at. Two threads
 * that each allocate, use and free a small object on one device thus
 * walked through a pool of a hundred slots in address order, each slot
 * written last by the other CPU, and neighbouring 80-byte slots of two
 * threads shared a cache line: every object cost the line transfers of
 * its header and data. glibc's per-thread caches give each thread its own
 * chunk back instead.
 *
 * So, on a shared device:
 *  - devm_kfree() of one of the two newest nodes (what a thread that
 *    frees what it just took finds) unlinks it at once and puts its slot
 *    on a free list of the freeing thread's shard: that thread's next
 *    allocation of the class takes it back, still in its cache;
 *  - slots carved afresh start on a cache line and end before the next
 *    one's start, so no two share a line;
 *  - a thread takes, in order: its shard's list, the current block's
 *    tail, the common list (slots of compactions and krealloc), another
 *    shard's list (so memory stays bounded: no block is mapped while a
 *    slot of the class is free anywhere), a new block.
 *
 * Everything here runs with the device's lock held, and each thread that
 * waits for it waits for all of it: a holder preempted inside makes every
 * other thread wait a time slice. So the common case (slab.h) is short:
 * devm_kfree() compares the address with the two newest nodes' instead
 * of looking it up in the set of blocks and the bitmap, the freed slot
 * keeps its bit in the bitmap (its header says it is not listed), the
 * thread's shard keeps the counts that the slab's header would take, and
 * the ledger is counted once the lock is dropped. With the one line of
 * the bitmap and the one of the slab's counts no longer written, such a
 * critical section writes the device's lines and the thread's own only.
 */
#include <stdlib.h>
#include <string.h>
#include "slab.h"

static struct devres__shards *shards_of(struct devres__slab *s)
{
	/* Once a device's life; without it, slots go to the common list. */
	if (unlikely(!s->shards)) {
		s->shards = aligned_alloc(LINE, sizeof(*s->shards));
		if (s->shards)
			memset(s->shards, 0, sizeof(*s->shards));
	}
	return s->shards;
}

static void *pop(void **list)
{
	void *p = *list;

	if (p)
		*list = *(void **)p;
	return p;
}

/* A slot of @len bytes from the current block's tail, on a line of its own. */
static void *carve_line(struct devres__slab *s, size_t len)
{
	size_t step = (len + LINE - 1) & ~(size_t)(LINE - 1);
	char *p;

	if (!s->bump)
		return NULL;
	p = (char *)(((uintptr_t)s->bump + LINE - 1) & ~(uintptr_t)(LINE - 1));
	/* The block's end is line-aligned: a slot that fits, fits padded. */
	if (p > s->end || (size_t)(s->end - p) < len)
		return NULL;
	s->bump = p + step;
	return p;
}

void *devres__slab_carve_shared(struct devres__slab *s, size_t cls)
{
	struct devres__shards *sh = shards_of(s);
	size_t len = cls * GRANULE;
	struct shard *me = sh ? my_shard(sh) : NULL;
	void *p;

	if (sh && (p = pop(&me->free[cls])))
		return p;
	/*
	 * The tail before the common list: slots freed before the device
	 * was shared lie side by side, and two threads that took two of
	 * them would share a line for as long as they keep them.
	 */
	if ((p = carve_line(s, len)) || (p = pop(&s->free[cls])))
		return p;
	for (unsigned int i = 0; sh && i < NR_SHARDS; i++)
		if ((p = pop(&sh->shard[i].free[cls])))
			return p;
	if (!devres__slab_grow(s))
		return NULL;
	return carve_line(s, len);
}

/*
 * devm_kfree() of slab node @n of a shared device, found by a lookup
 * (slab_drop_newest() in slab.h finds the two newest by address): if it
 * is one of the two newest on the list, unlinks it, uncounts it and
 * keeps its slot for the calling thread. Returns false (nothing done)
 * otherwise: the caller kills it in place as on any device.
 */
bool devres__slab_drop(struct device *dev, struct devres__node *n)
{
	struct devres__slab *s = dev->devres_slab;
	struct devres__node *head = list_head(dev), *prev = NULL;
	struct devres__shards *sh;
	struct shard *me;
	size_t cls;

	assert_locked(dev, __func__);
	if (!dev_shared(dev) || !(sh = shards_of(s)))
		return false;
	if (head != n) {
		if (!head || head->next != n)
			return false;
		prev = head;
	}
	devres__slab_forget(dev, n);
	devres__ledger_add_node(-1, -(long)n->size);
	unlink_after(dev, prev, n);
	s->listed--;
	cls = class_of(n->size);
	me = my_shard(sh);
	*(void **)n = me->free[cls];
	me->free[cls] = n;
	return true;
}
