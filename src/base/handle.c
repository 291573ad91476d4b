// SPDX-License-Identifier: MIT
/*
 * Generation-checked handles (handle.h). Why a table of slots, rather
 * than the object's address kept dead for a while (a quarantine) or a
 * list of live objects searched by address: both tell a handle from a
 * freed object's only until the memory is reused for an object of the
 * same kind, and the list costs a search, under a lock, on every call.
 * A slot's generation is bumped when the object is freed and when the
 * slot is taken again, and the handle carries the generation it was
 * given: it matches its object's life and no other, for 2^31 lives of a
 * slot; then the slot is retired (devres__handle_del()). The slots are
 * never given back to malloc, so checking a stale handle reads only the
 * table.
 *
 * A handle is 1 | tag (7 bits) | generation (32) | index (20) | 0000,
 * from bit 63 down: above any user-space address, below the ERR_PTR()
 * range, never a bad pointer to devres__ptr_bad(), 16-byte aligned.
 *
 * Chunk k of a table holds 64 << k slots, so that the table grows with
 * the objects live at once, not with a fixed reservation, and an index
 * finds its chunk by one count of leading zeros. A free slot keeps its
 * object's memory as the object's free left it: a pool's lock, which a
 * call racing the destroy may still be waiting for, stays a lock.
 *
 * The workqueues of the kernel-compatibility headers
 * (include/kcompat/linux/kcompat_wq.h) keep a generation scheme of their
 * own: that code is compiled into the driver and can reach only exported
 * functions, and its lookups run under the queue table's lock, which it
 * takes anyway to count the items on a queue, so these lock-free lookups
 * would gain it nothing and cost it an exported call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "subsys.h"

_Static_assert(sizeof(uintptr_t) == 8, "handles are 64-bit values");

#define H_TOP 0x80u
#define H_MAX_SLOTS (1u << 20)
#define CHUNK0 64u

/* A slot's head, before its object; 16 bytes keep the object aligned. */
struct slot {
	uint32_t gen;  /* odd: live; atomic */
	uint32_t next; /* on the free list: the next free index + 1 */
	uint32_t idx;
	uint32_t pad;
};

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void handles_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_HANDLES, &handles_lock);
}

void devres__handles_lock(void)
{
	pthread_mutex_lock(&handles_lock);
	devres__lock_seen(&handles_lock);
}

void devres__handles_unlock(void)
{
	devres__unlock_seen(&handles_lock);
	pthread_mutex_unlock(&handles_lock);
}

static size_t stride(const struct devres__handles *t)
{
	return sizeof(struct slot) + ((t->size + 15) & ~(size_t)15);
}

/* Chunk k starts at index 64 * (2^k - 1). */
static unsigned int chunk_of(uint32_t idx, uint32_t *ret_off)
{
	unsigned int k = 31u - (unsigned int)__builtin_clz(idx / CHUNK0 + 1);

	*ret_off = idx - CHUNK0 * ((1u << k) - 1);
	return k;
}

static struct slot *slot_at(const struct devres__handles *t, uint32_t idx)
{
	uint32_t off;
	unsigned int k = chunk_of(idx, &off);
	unsigned char *c = __atomic_load_n(&t->chunk[k], __ATOMIC_ACQUIRE);

	return (struct slot *)(void *)(c + off * stride(t));
}

static void *encode(const struct devres__handles *t, uint32_t gen, uint32_t idx)
{
	uint64_t v = (uint64_t)(H_TOP | t->tag) << 56 | (uint64_t)gen << 24 |
		     (uint64_t)idx << 4;

	return (void *)(uintptr_t)v;
}

void *devres__handle_new(struct devres__handles *t, void **ret_obj,
			 bool *ret_used)
{
	struct slot *s = NULL;
	uint32_t idx, off, gen;
	unsigned int k;
	unsigned char *c;

	pthread_mutex_lock(&handles_lock);
	if (t->free) {
		idx = t->free - 1;
		s = slot_at(t, idx);
		t->free = s->next;
		*ret_used = true;
	} else if (t->nslots < H_MAX_SLOTS) {
		idx = t->nslots;
		k = chunk_of(idx, &off);
		c = t->chunk[k];
		if (!c) {
			c = calloc(CHUNK0 << k, stride(t));
			__atomic_store_n(&t->chunk[k], c, __ATOMIC_RELEASE);
		}
		if (c) {
			s = slot_at(t, idx);
			s->idx = idx;
			__atomic_store_n(&t->nslots, idx + 1, __ATOMIC_RELEASE);
			*ret_used = false;
		}
	}
	if (!s) {
		/* The caller tells the bound from a short memory, and WARNs. */
		int err = t->nslots < H_MAX_SLOTS ? ENOMEM : ENOSPC;

		pthread_mutex_unlock(&handles_lock);
		errno = err;
		return NULL;
	}
	gen = s->gen + 1;
	__atomic_store_n(&s->gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&handles_lock);
	*ret_obj = s + 1;
	return encode(t, gen, idx);
}

void *devres__handle_obj(const struct devres__handles *t, const void *h,
			 bool *ret_stale)
{
	uint64_t v = (uintptr_t)h;
	uint32_t gen = (uint32_t)(v >> 24), idx = (uint32_t)(v >> 4) & 0xfffff;
	const struct slot *s;
	uint32_t now;

	if (ret_stale)
		*ret_stale = false;
	if (v >> 56 != (H_TOP | t->tag) || (v & 15) || !(gen & 1) ||
	    idx >= __atomic_load_n(&t->nslots, __ATOMIC_ACQUIRE))
		return NULL;
	s = slot_at(t, idx);
	now = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
	if (likely(now == gen))
		return (void *)(s + 1);
	/* Older than the slot: its object was freed. Newer: forged. */
	if (ret_stale)
		*ret_stale = (int32_t)(now - gen) > 0;
	return NULL;
}

void *devres__handle_of(const struct devres__handles *t, const void *obj)
{
	const struct slot *s = (const struct slot *)obj - 1;

	return encode(t, __atomic_load_n(&s->gen, __ATOMIC_RELAXED), s->idx);
}

void devres__handle_del(struct devres__handles *t, void *obj)
{
	struct slot *s = (struct slot *)obj - 1;
	uint32_t gen;

	pthread_mutex_lock(&handles_lock);
	gen = s->gen + 1;
	__atomic_store_n(&s->gen, gen, __ATOMIC_RELEASE);
	/*
	 * The slot's 2^31st life ended: a new one would take the first's
	 * generation again, and a handle kept from then would find it.
	 * Retired instead: off the free list for good (its memory is the
	 * table's, kept anyway), and every handle of it stale.
	 */
	if (likely(gen)) {
		s->next = t->free;
		t->free = s->idx + 1;
	}
	pthread_mutex_unlock(&handles_lock);
	if (unlikely(!gen))
		devres__warn(NULL, "handles",
			     "slot %u of the table of handles of kind %u "
			     "retired after 2^31 objects: its generation "
			     "would wrap",
			     s->idx, t->tag);
}
