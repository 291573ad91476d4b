/* SPDX-License-Identifier: MIT */
/*
 * A table indexed by a number (a descriptor's), grown to any index and
 * read without a lock (growtab.c): a top array of chunk pointers, each
 * chunk 1 << @shift slots of @slot_size bytes, zeroed when made. A chunk
 * is made once and never freed, and a top outgrown (doubled) is kept on
 * its successor's older list, so that a reader that loaded either never
 * sees freed memory. Grown only under its owner's lock, which the table
 * does not know: the owner's lock makes a slot's contents consistent,
 * the table only its place. Included by subsys.h.
 */
#ifndef DEVRES_BASE_GROWTAB_H
#define DEVRES_BASE_GROWTAB_H

#include <stdbool.h>
#include <stddef.h>

struct devres__growtop {
	unsigned int n;		       /* chunks it has room for */
	struct devres__growtop *older; /* outgrown, kept for readers */
	void **chunk;		       /* n pointers, NULL: not made */
};

struct devres__growtab {
	/*
	 * The newest top: NULL until the first slot is made, or a static
	 * one given at the definition (the table then needs no memory for
	 * the indexes its chunks cover).
	 */
	struct devres__growtop *top;
	unsigned int shift; /* a chunk holds 1 << shift slots */
	size_t slot_size;
	unsigned int first_n; /* the first top's room, without a static one */
	const char *name;     /* what the WARN says it is */
	/* Slots refused for want of memory, and the index of the first. */
	unsigned long failed;
	unsigned int failed_at;
	bool warned;
};

/*
 * A top's room and its chunk at @k, read atomically: a reader outside
 * the writer's lock (an interposed close() ...) may be a sanitizer's
 * runtime, which sees no acquire of its own (seen-lock.h) and would take
 * a plain read of what the writer filled in before it published the top
 * for a race.
 */
static inline unsigned int devres__growtop_n(struct devres__growtop *top)
{
	return __atomic_load_n(&top->n, __ATOMIC_RELAXED);
}

static inline void *devres__growtop_chunk(struct devres__growtop *top,
					  unsigned int k)
{
	void **chunk = __atomic_load_n(&top->chunk, __ATOMIC_RELAXED);

	return __atomic_load_n(&chunk[k], __ATOMIC_ACQUIRE);
}

/**
 * devres__growtab_get() - the slot of an index, if made
 * @t: the table
 * @i: the index
 *
 * Reads the top, then the chunk of @i, each with one acquire load.
 *
 * Context: any thread, with or without the owner's lock; a slot once
 * made stays where it is for the life of the process.
 * Return: the slot of @i, or NULL when its chunk was not made.
 */
static inline void *devres__growtab_get(struct devres__growtab *t,
					unsigned int i)
{
	struct devres__growtop *top =
		__atomic_load_n(&t->top, __ATOMIC_ACQUIRE);
	void *c;

	if (!top || i >> t->shift >= devres__growtop_n(top))
		return NULL;
	c = devres__growtop_chunk(top, i >> t->shift);
	if (!c)
		return NULL;
	return (char *)c + (size_t)(i & ((1u << t->shift) - 1)) * t->slot_size;
}

/**
 * devres__growtab_make() - the slot of an index, made if need be
 * @t: the table
 * @i: the index
 *
 * Makes the chunk of @i, and a top with room for it (double the last,
 * or more), where they are missing. A top outgrown is kept for the
 * readers that may hold it. Without memory for either, @i's slot is not
 * made and the refusal is counted in @t->failed; devres__growtab_warn()
 * says so once, after the owner's lock is let go.
 *
 * Context: under the owner's lock.
 * Return: the slot of @i (zeroed when its chunk is new), or NULL without
 * memory for it.
 */
HIDDEN void *devres__growtab_make(struct devres__growtab *t, unsigned int i);

/**
 * devres__growtab_next() - the first slot made from an index on
 * @t: the table
 * @i: in, the first index to look at; out, the index of the slot found
 * @hi: the last index to look at (UINT_MAX for all)
 *
 * Skips each chunk not made whole.
 *
 * Context: under the owner's lock, or where a chunk made meanwhile may
 * be missed.
 * Return: the slot of the first index from *@i to @hi whose chunk is
 * made, or NULL when there is none.
 */
HIDDEN void *devres__growtab_next(struct devres__growtab *t, unsigned int *i,
				  unsigned int hi);

/**
 * devres__growtab_zero() - every slot made, zeroed
 * @t: the table
 *
 * Tops outgrown share their chunks with the newest: they are zeroed too.
 *
 * Context: under the owner's lock (a child of fork(), before any other
 * thread can look).
 */
HIDDEN void devres__growtab_zero(struct devres__growtab *t);

HIDDEN void devres__growtab_warn_once(struct devres__growtab *t);

/**
 * devres__growtab_warn() - one WARN for the slots refused, the first time
 * @t: the table
 *
 * Says, once in the life of the process, that an index could not be
 * given a slot for want of memory (so the owner does not record it);
 * one relaxed load when none was refused.
 *
 * Context: without the owner's lock (a log sink may call back into the
 * library); any thread.
 */
static inline void devres__growtab_warn(struct devres__growtab *t)
{
	if (unlikely(__atomic_load_n(&t->failed, __ATOMIC_RELAXED) != 0))
		devres__growtab_warn_once(t);
}

#endif /* DEVRES_BASE_GROWTAB_H */
