// SPDX-License-Identifier: MIT
/*
 * A treap of disjoint ranges: a binary search tree by start, a heap by a
 * random priority, so it stays balanced on average whatever the order of
 * insertion. Each node knows the largest range below it, which lets a
 * first-fit search skip every subtree too small to hold a block. Used for
 * the free ranges of an IOVA space and for a device's live mappings.
 * Recursion depth is the tree's height, O(log n) expected.
 */
#include "dma-internal.h"

static uint64_t len_of(const struct rnode *n)
{
	return n->end - n->start;
}

static void pull(struct rnode *n)
{
	uint64_t m = len_of(n);

	if (n->l && n->l->max > m)
		m = n->l->max;
	if (n->r && n->r->max > m)
		m = n->r->max;
	n->max = m;
}

uint32_t devres__rt_prio(uint32_t *seed)
{
	uint32_t x = *seed ? *seed : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*seed = x;
	return x;
}

static struct rnode *insert(struct rnode *t, struct rnode *n)
{
	struct rnode *c;

	if (!t)
		return n;
	if (n->start < t->start) {
		t->l = insert(t->l, n);
		if (t->l->prio > t->prio) {
			c = t->l;
			t->l = c->r;
			c->r = t;
			pull(t);
			t = c;
		}
	} else {
		t->r = insert(t->r, n);
		if (t->r->prio > t->prio) {
			c = t->r;
			t->r = c->l;
			c->l = t;
			pull(t);
			t = c;
		}
	}
	pull(t);
	return t;
}

void devres__rt_insert(struct rnode **root, struct rnode *n)
{
	n->l = NULL;
	n->r = NULL;
	n->max = len_of(n);
	*root = insert(*root, n);
}

static struct rnode *merge(struct rnode *a, struct rnode *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->r = merge(a->r, b);
		pull(a);
		return a;
	}
	b->l = merge(a, b->l);
	pull(b);
	return b;
}

static struct rnode *remove_key(struct rnode *t, uint64_t start)
{
	if (!t)
		return NULL;
	if (start == t->start)
		return merge(t->l, t->r);
	if (start < t->start)
		t->l = remove_key(t->l, start);
	else
		t->r = remove_key(t->r, start);
	pull(t);
	return t;
}

void devres__rt_remove(struct rnode **root, uint64_t start)
{
	*root = remove_key(*root, start);
}

static struct rnode *take(struct rnode *t, uint64_t start, struct rnode **out)
{
	if (!t)
		return NULL;
	if (start == t->start) {
		*out = t;
		return merge(t->l, t->r);
	}
	if (start < t->start)
		t->l = take(t->l, start, out);
	else
		t->r = take(t->r, start, out);
	pull(t);
	return t;
}

struct rnode *devres__rt_take(struct rnode **root, uint64_t start)
{
	struct rnode *n = NULL;

	*root = take(*root, start, &n);
	return n;
}

void devres__rt_update(struct rnode *t, uint64_t start)
{
	if (!t)
		return;
	if (start < t->start)
		devres__rt_update(t->l, start);
	else if (start > t->start)
		devres__rt_update(t->r, start);
	pull(t);
}

struct rnode *devres__rt_floor(struct rnode *t, uint64_t key)
{
	struct rnode *best = NULL;

	while (t) {
		if (t->start <= key) {
			best = t;
			t = t->r;
		} else {
			t = t->l;
		}
	}
	return best;
}

struct rnode *devres__rt_ceil(struct rnode *t, uint64_t key)
{
	struct rnode *best = NULL;

	while (t) {
		if (t->start >= key) {
			best = t;
			t = t->l;
		} else {
			t = t->r;
		}
	}
	return best;
}

struct rnode *devres__rt_fit_top(struct rnode *t, uint64_t len, uint64_t align,
				 uint64_t limit, uint64_t *ret)
{
	struct rnode *hit;
	uint64_t end, b;

	if (!t || t->max < len)
		return NULL;
	if (t->start < limit) {
		hit = devres__rt_fit_top(t->r, len, align, limit, ret);
		if (hit)
			return hit;
		end = t->end < limit ? t->end : limit;
		if (end - t->start >= len) {
			b = (end - len) & ~(align - 1);
			if (b >= t->start) {
				*ret = b;
				return t;
			}
		}
	}
	return devres__rt_fit_top(t->l, len, align, limit, ret);
}
