// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * The stack of open groups: d nested open groups, each
 * closed or removed, in every order (outermost first, innermost first,
 * every permutation of a few, random ones of many), by id or with a NULL
 * id when the group is the newest open one. After each step a NULL id must
 * name the newest group still open; afterwards every group releases what
 * the kernel's colour rule says it holds.
 *
 * O(1) without a clock: before each close or remove, the stack links of
 * every open group but the target and its two neighbours are cut (white
 * box: they live in the groups' close markers), and put back after. A
 * close or remove that walked the stack to find its group could not reach
 * it, and the stack would be broken afterwards (devres_check() says so).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"
#include "../../src/base/node.h"

#define DMAX 64

enum state {
	OPEN,
	CLOSED,
	REMOVED,
	GONE
};

/* The reference: what each group is, when it closed, what is released. */
struct ref {
	int d;
	void *id[DMAX];
	enum state st[DMAX];
	int closed_at[DMAX];
	bool rec_gone[DMAX];
	uint64_t rng;
};

static unsigned int rnd(struct ref *r, unsigned int n)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return (unsigned int)(r->rng % n);
}

static long live_groups(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.groups - ledger_base.groups;
}

/* A group opened with a NULL id is named by its own address. */
static struct devres__group *grp(struct ref *r, int i)
{
	return r->id[i];
}

static int newest_open(struct ref *r)
{
	for (int i = r->d - 1; i >= 0; i--)
		if (r->st[i] == OPEN)
			return i;
	return -1;
}

/* White box: the stack's top is the reference's newest open group. */
static void expect_top(struct device *dev, struct ref *r)
{
	int top = newest_open(r);

	assert_ptr_equal(dev->devres_open, top < 0 ? NULL : grp(r, top));
	assert_int_equal(devres_check(dev), 0);
}

/* Group i nests in group i - 1; record i is inside group i. */
static void open_nest(struct device *dev, struct ref *r, int d)
{
	memset(r->st, 0, sizeof(r->st));
	memset(r->rec_gone, 0, sizeof(r->rec_gone));
	r->d = d;
	reset_order();
	for (int i = 0; i < d; i++) {
		r->id[i] = devres_open_group(dev, NULL, GFP_KERNEL);
		assert_non_null(r->id[i]);
		add_rec(dev, i);
	}
	expect_top(dev, r);
}

struct cut {
	struct devres__group *g;
	struct devres__group *older, *newer;
};

/* Cuts the links of every open group but @g and its neighbours. */
static int cut_stack(struct ref *r, struct devres__group *g, struct cut *c)
{
	int n = 0;

	for (int i = 0; i < r->d; i++) {
		struct devres__group *h = grp(r, i);

		if (r->st[i] != OPEN || h == g || h == g->stack.older ||
		    h == g->stack.newer)
			continue;
		c[n++] = (struct cut){ h, h->stack.older, h->stack.newer };
		h->stack.older = NULL;
		h->stack.newer = NULL;
	}
	return n;
}

static void mend_stack(struct cut *c, int n)
{
	for (int i = 0; i < n; i++) {
		c[i].g->stack.older = c[i].older;
		c[i].g->stack.newer = c[i].newer;
	}
}

/* Closes (or removes) open group @i, by a NULL id when it is the newest. */
static void step(struct device *dev, struct ref *r, int i, bool remove,
		 int when)
{
	struct cut c[DMAX];
	void *id = r->id[i];
	int n;

	assert_int_equal(r->st[i], OPEN);
	if (i == newest_open(r) && rnd(r, 2))
		id = NULL;
	n = cut_stack(r, grp(r, i), c);
	if (remove)
		devres_remove_group(dev, id);
	else
		devres_close_group(dev, id);
	mend_stack(c, n);
	r->st[i] = remove ? REMOVED : CLOSED;
	r->closed_at[i] = when;
	expect_top(dev, r);
}

static bool nothing_left(struct ref *r)
{
	for (int i = 0; i < r->d; i++)
		if (!r->rec_gone[i] || r->st[i] == OPEN || r->st[i] == CLOSED)
			return false;
	return true;
}

/*
 * Releases group @i: the records from i on that are left, newest first.
 * Open, it takes every group newer than it; closed, those of them that
 * lie wholly inside (closed before it, or still open).
 */
static void release(struct device *dev, struct ref *r, int i)
{
	int want = 0, base = norder;
	void *id = r->id[i];

	if (r->st[i] == REMOVED || r->st[i] == GONE) {
		bool quiet = nothing_left(r);

		start_capture();
		assert_int_equal(devres_release_group(dev, id), 0);
		if (quiet)
			expect_no_warn();
		else
			expect_warn("devres_release_group", "no group");
		return;
	}
	if (i == newest_open(r) && rnd(r, 2))
		id = NULL;
	for (int j = r->d - 1; j >= i; j--)
		want += !r->rec_gone[j];
	assert_int_equal(devres_release_group(dev, id), want);
	assert_int_equal(norder, base + want);
	for (int j = r->d - 1; j >= i; j--) {
		if (r->rec_gone[j])
			continue;
		assert_int_equal(order[base++], j);
		r->rec_gone[j] = true;
	}
	for (int j = i + 1; j < r->d; j++)
		if (r->st[j] == OPEN ||
		    (r->st[j] == CLOSED && r->st[i] == OPEN) ||
		    (r->st[j] == CLOSED && r->closed_at[j] < r->closed_at[i]))
			r->st[j] = GONE;
	r->st[i] = GONE;
	expect_top(dev, r);
}

/*
 * One case: @d groups, the first @cut of @perm closed or removed (bit i of
 * @removes), then every group released in a random order, then the rest.
 */
static void run_case(struct device *dev, int d, const int *perm, int cut,
		     uint64_t removes, uint64_t seed)
{
	struct ref r = { .rng = seed | 1 };
	int rel[DMAX], left = d;
	long alive = 0;

	open_nest(dev, &r, d);
	for (int k = 0; k < cut; k++)
		step(dev, &r, perm[k], (removes >> perm[k]) & 1, k);
	if (newest_open(&r) < 0) {
		start_capture();
		devres_close_group(dev, NULL);
		expect_warn("devres_close_group", "no group");
	}
	for (int i = 0; i < d; i++)
		alive += r.st[i] == OPEN || r.st[i] == CLOSED;
	assert_int_equal(live_groups(), alive);
	for (int i = 0; i < d; i++)
		rel[i] = i;
	for (int i = d - 1; i > 0; i--) {
		int j = (int)rnd(&r, (unsigned int)i + 1), t = rel[i];

		rel[i] = rel[j];
		rel[j] = t;
	}
	for (int k = 0; k < d; k++)
		release(dev, &r, rel[k]);
	for (int i = 0; i < d; i++)
		left -= r.rec_gone[i];
	assert_int_equal(devres_release_all(dev), left);
	assert_int_equal(live_groups(), 0);
	/* Every record released once. */
	assert_int_equal(norder, d);
}

static void test_outermost_first(void **state)
{
	int perm[DMAX];

	for (int i = 0; i < DMAX; i++)
		perm[i] = i;
	for (int s = 0; s < 4; s++) {
		/* All closed, all removed, mixed twice. */
		uint64_t removes[] = { 0, ~0ull, 0x5555555555555555ull,
				       0x0f0f0f0f0f0f0f0full };

		run_case(*state, DMAX, perm, DMAX, removes[s], 7 + s);
		run_case(*state, DMAX, perm, DMAX / 2, removes[s], 11 + s);
	}
}

static void test_innermost_first(void **state)
{
	int perm[DMAX];

	for (int i = 0; i < DMAX; i++)
		perm[i] = DMAX - 1 - i;
	for (int s = 0; s < 4; s++) {
		uint64_t removes[] = { 0, ~0ull, 0xaaaaaaaaaaaaaaaaull,
				       0x3333333333333333ull };

		run_case(*state, DMAX, perm, DMAX, removes[s], 13 + s);
		run_case(*state, DMAX, perm, DMAX / 3, removes[s], 17 + s);
	}
}

/* Every order of 5 groups, every close/remove mix, cuts in turn. */
static void test_every_order(void **state)
{
	int perm[5] = { 0, 1, 2, 3, 4 };
	int n = 0, i, j, t;

	for (;;) {
		for (uint64_t m = 0; m < 32; m++)
			run_case(*state, 5, perm, (int)(m + (uint64_t)n) % 6, m,
				 (uint64_t)n * 32 + m);
		n++;
		/* The next permutation, in lexicographic order. */
		i = 3;
		j = 4;
		while (i >= 0 && perm[i] > perm[i + 1])
			i--;
		if (i < 0)
			break;
		while (perm[j] < perm[i])
			j--;
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
		for (j = 4, i++; i < j; i++, j--) {
			t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
	}
	assert_int_equal(n, 120);
}

static void test_random_orders(void **state)
{
	struct ref r = { .rng = 0x9e3779b97f4a7c15ull };
	int perm[DMAX];

	for (int c = 0; c < 200; c++) {
		int d = 1 + (int)rnd(&r, DMAX);
		uint64_t removes = r.rng;

		for (int i = 0; i < d; i++)
			perm[i] = i;
		for (int i = d - 1; i > 0; i--) {
			int j = (int)rnd(&r, (unsigned int)i + 1), t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
		}
		run_case(*state, d, perm, (int)rnd(&r, (unsigned int)d + 1),
			 removes, r.rng);
	}
}

/*
 * An open group's close marker holds stack links: a release_all must not
 * read them as the marker's count (ASan and the ledger would see it).
 */
static void test_release_all_open(void **state)
{
	struct device *dev = *state;
	struct ref r;

	open_nest(dev, &r, DMAX);
	devres_close_group(dev, r.id[DMAX / 2]);
	assert_int_equal(devres_release_all(dev), DMAX);
	assert_null(dev->devres_open);
	assert_int_equal(live_groups(), 0);
	assert_int_equal(devres_check(dev), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_outermost_first),  T(test_innermost_first),
		T(test_every_order),	  T(test_random_orders),
		T(test_release_all_open),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
