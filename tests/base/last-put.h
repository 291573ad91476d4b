/* SPDX-License-Identifier: MIT */
/*
 * The matrix runner test-last-put and test-kc-last-put share: a kind of
 * callback (the test's) times a target (the device D the callback runs
 * on, its parent P, its child C), each cell built afresh, its callback
 * made to put the target's last reference once (lp_drop()), and checked
 * the same way: the release exactly once, when it should run (at the
 * put, or after the pass that ran the callback), the one WARN of a
 * registered D put once too often and no other, and every device given
 * back after. What differs between the two, how the devices are made,
 * the call that runs the callback and what the test still owns at the
 * end, each says in its struct lp_matrix.
 */
#ifndef DEVRES_TESTS_LAST_PUT_H
#define DEVRES_TESTS_LAST_PUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

enum target {
	T_SELF,
	T_PARENT,
	T_CHILD,
	T_NR
};

static const char *const target_names[T_NR] = { "self", "parent", "child" };

/* The cell being run, and what it saw. */
static struct {
	int kind;
	enum target target;
	struct device *P, *D, *C;
	int rel_p, rel_d, rel_c;
	int drops;
	int released_at_put; /* the target's releases seen right after */
} lp;

struct lp_matrix {
	const char *const *kind_names;
	/* Whether the cell can be made at all. */
	bool (*cell_exists)(int kind, enum target t);
	/* Makes lp.P, lp.D, lp.C, with D's release counted in lp.rel_d. */
	void (*build)(void);
	/* Before the capture of the WARNs: drivers registered. May be NULL. */
	void (*arm)(void);
	/* The call that runs the callback, which calls lp_drop(). */
	void (*trigger)(void);
	/* Whether lp_drop() puts D once too often: its WARN, and which. */
	bool (*overput)(void);
	const char *(*overput_line)(void);
	/* Whether P's release waits for D's (D registered holds it). */
	bool (*parent_held)(void);
	/* Whether the target is released at the put (no pass around it). */
	bool (*at_once)(void);
	/* What the test still owns goes; every device ends released. */
	void (*finish)(void);
	/* Says more when the WARNs are not those expected. May be NULL. */
	void (*report)(void);
};

static inline int *lp_count_of(const struct device *dev)
{
	return dev == lp.P ? &lp.rel_p : dev == lp.D ? &lp.rel_d : &lp.rel_c;
}

static inline struct device *lp_victim(void)
{
	return lp.target == T_SELF ? lp.D : lp.target == T_PARENT ? lp.P : lp.C;
}

/*
 * Puts the target's last reference, which the test handed to the
 * callback, and, of D, @extra more (a registered device's registration's
 * and the like: the put too many). Once: a match may be called again.
 */
static inline void lp_drop(int extra)
{
	struct device *v = lp_victim();
	int before = *lp_count_of(v);

	if (lp.drops++)
		return;
	if (v == lp.D)
		for (int i = 0; i < extra; i++)
			put_device(v);
	put_device(v);
	lp.released_at_put = *lp_count_of(v) - before;
}

/* The end of a matrix's finish(): P and C, unless the callback put it. */
static inline void lp_put_rest(void)
{
	if (lp.target != T_CHILD)
		put_device(lp.C);
	if (lp.target != T_PARENT)
		put_device(lp.P);
}

static inline void lp_release_p(struct device *dev)
{
	lp.rel_p++;
	free(dev);
}

static inline void lp_release_c(struct device *dev)
{
	lp.rel_c++;
	free(dev);
}

static inline void lp_check_cell(const struct lp_matrix *m)
{
	int warns = devres_warn_count();
	bool overput = m->overput();

	print_message("cell %s x %s\n", m->kind_names[lp.kind],
		      target_names[lp.target]);
	lp.rel_p = lp.rel_d = lp.rel_c = 0;
	lp.drops = 0;
	lp.released_at_put = -1;
	m->build();
	if (m->arm)
		m->arm();
	start_capture();
	m->trigger();
	assert_int_equal(lp.drops, 1);
	/* The first WARN of a kind comes with a backtrace: count WARNs. */
	devres_set_log_sink(NULL, NULL);
	if (count_prefix("WARNING: ") != (overput ? 1 : 0) && m->report)
		m->report();
	assert_int_equal(count_prefix("WARNING: "), overput ? 1 : 0);
	if (overput)
		assert_non_null(strstr(cap.line[0], m->overput_line()));
	if (m->parent_held()) {
		assert_int_equal(lp.released_at_put, 0);
	} else {
		assert_int_equal(lp.released_at_put, m->at_once() ? 1 : 0);
		assert_int_equal(*lp_count_of(lp_victim()), 1);
	}
	m->finish();
	assert_int_equal(lp.rel_p, 1);
	assert_int_equal(lp.rel_d, 1);
	assert_int_equal(lp.rel_c, 1);
	assert_int_equal(devres_warn_count() - warns, overput ? 1 : 0);
}

/* Every target of kind @k that exists. */
static inline void lp_run_kind(const struct lp_matrix *m, int k)
{
	lp.kind = k;
	for (lp.target = T_SELF; lp.target < T_NR; lp.target++)
		if (!m->cell_exists || m->cell_exists(k, lp.target))
			lp_check_cell(m);
}

/* test_<k>: one cmocka test of kind @k of matrix @m, over every target. */
#define LP_KIND_TEST(m, k)                                                     \
	static void test_##k(void **state)                                     \
	{                                                                      \
		(void)state;                                                   \
		lp_run_kind(&(m), k);                                          \
	}

#endif /* DEVRES_TESTS_LAST_PUT_H */
