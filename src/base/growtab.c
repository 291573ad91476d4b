// SPDX-License-Identifier: MIT
/*
 * The growable two-level table of the descriptor tables (own-fd.c,
 * posix/fd-table.c): growtab.h. Its allocations do not go through the
 * fault-injection point: a table's memory is made once and kept for
 * the life of the process, so a sweep's failure points would depend on
 * which earlier call first reached an index's chunk, and a point failed
 * and absorbed in one run would be gone in the next, shifting the rest.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "subsys.h"

/* @i refused for want of memory (or of a size that can be had). */
static void *refused(struct devres__growtab *t, unsigned int i)
{
	if (!__atomic_load_n(&t->failed, __ATOMIC_RELAXED))
		__atomic_store_n(&t->failed_at, i, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->failed, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A top with room for chunk @k and all of @t's, published; or NULL. */
static struct devres__growtop *
grown(struct devres__growtab *t, struct devres__growtop *top, unsigned int k)
{
	unsigned int n = top ? top->n : t->first_n ? t->first_n : 1;
	struct devres__growtop *bigger;
	size_t bytes;

	while (n <= k) {
		if (n > UINT_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (__builtin_mul_overflow((size_t)n, sizeof(void *), &bytes) ||
	    __builtin_add_overflow(bytes, sizeof(*bigger), &bytes))
		return NULL;
	bigger = calloc(1, bytes);
	if (!bigger)
		return NULL;
	bigger->n = n;
	bigger->older = top;
	bigger->chunk = (void **)(bigger + 1);
	if (top)
		memcpy(bigger->chunk, top->chunk, top->n * sizeof(void *));
	__atomic_store_n(&t->top, bigger, __ATOMIC_RELEASE);
	return bigger;
}

void *devres__growtab_make(struct devres__growtab *t, unsigned int i)
{
	struct devres__growtop *top =
		__atomic_load_n(&t->top, __ATOMIC_ACQUIRE);
	unsigned int k = i >> t->shift;
	void *c;

	if (!top || k >= devres__growtop_n(top)) {
		top = grown(t, top, k);
		if (!top)
			return refused(t, i);
	}
	c = devres__growtop_chunk(top, k);
	if (!c) {
		size_t bytes;

		if (__builtin_mul_overflow(t->slot_size, (size_t)1 << t->shift,
					   &bytes))
			return refused(t, i);
		c = calloc(1, bytes);
		if (!c)
			return refused(t, i);
		__atomic_store_n(&top->chunk[k], c, __ATOMIC_RELEASE);
	}
	return (char *)c + (size_t)(i & ((1u << t->shift) - 1)) * t->slot_size;
}

void *devres__growtab_next(struct devres__growtab *t, unsigned int *i,
			   unsigned int hi)
{
	struct devres__growtop *top =
		__atomic_load_n(&t->top, __ATOMIC_ACQUIRE);
	unsigned int mask = (1u << t->shift) - 1;

	for (unsigned int k = *i; top && k <= hi;) {
		void *c;

		if (k >> t->shift >= devres__growtop_n(top))
			return NULL;
		c = devres__growtop_chunk(top, k >> t->shift);
		if (c) {
			*i = k;
			return (char *)c + (size_t)(k & mask) * t->slot_size;
		}
		/* The rest of the chunk: none. */
		if ((k | mask) >= hi) /* @hi may be UINT_MAX */
			return NULL;
		k = (k | mask) + 1;
	}
	return NULL;
}

void devres__growtab_zero(struct devres__growtab *t)
{
	struct devres__growtop *top = t->top;

	for (unsigned int k = 0; top && k < top->n; k++)
		if (top->chunk[k])
			memset(top->chunk[k], 0, t->slot_size << t->shift);
}

void devres__growtab_warn_once(struct devres__growtab *t)
{
	unsigned int at;

	if (!__atomic_load_n(&t->failed, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&t->warned, true, __ATOMIC_RELAXED))
		return;
	at = __atomic_load_n(&t->failed_at, __ATOMIC_RELAXED);
	devres__warn(NULL, t->name,
		     "fd %u not recorded: no memory for its room in the "
		     "table (said once; later numbers refused so are counted, "
		     "not said)",
		     at);
}
