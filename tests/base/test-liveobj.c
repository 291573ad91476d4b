// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Live objects (<devres/liveobj.h>) against the core's free paths, with a
 * descriptor whose state the test sets: which blocks hold an object (its
 * first and last byte, not the byte past it), slab blocks and heap
 * blocks, many objects at once (past the 64 records that need no
 * allocation), each state's WARN and fixup, and every free path of the
 * core: devm_kfree(), devm_krealloc() moving, shrinking past the object
 * or not, devres_release_all() of a device of slab blocks only (which is
 * otherwise released without a walk), devres_release_group(),
 * devres_release() (after the node's release, which may make the object
 * idle) and devres_free().
 */
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/liveobj.h>
#include "testlib.h"

static enum devres_liveobj_state next_state = DEVRES_LIVEOBJ_PENDING;
static int fixups, self_fixups, states_asked;

static enum devres_liveobj_state state_of(void *obj)
{
	(void)obj;
	states_asked++;
	return next_state;
}

/* As a real fixup: the object is idle after it. */
static void fixup(void *obj, enum devres_liveobj_state st)
{
	if (st == DEVRES_LIVEOBJ_SELF)
		self_fixups++;
	else
		fixups++;
	devres_liveobj_deactivate(obj);
}

static const struct devres_liveobj_descr descr = {
	.name = "test object",
	.hint = "test_stop()",
	.state = state_of,
	.fixup_free = fixup,
};

static void reset(enum devres_liveobj_state st)
{
	next_state = st;
	fixups = self_fixups = states_asked = 0;
}

static void api(void **state)
{
	static char x[8];
	struct devres_liveobj_descr bad = descr;
	int warns = devres_warn_count();

	(void)state;
	assert_false(devres_liveobj_active(x));
	assert_int_equal(devres_liveobj_activate(x, &descr), 0);
	assert_int_equal(devres_liveobj_activate(x, &descr), 0);
	assert_true(devres_liveobj_active(x));
	assert_false(devres_liveobj_active(x + 1));
	devres_liveobj_deactivate(x);
	assert_false(devres_liveobj_active(x));
	devres_liveobj_deactivate(x); /* not active: nothing */
	assert_int_equal(devres_warn_count(), warns);
	/* Each refused with one WARN, nothing recorded. */
	assert_int_equal(devres_liveobj_activate(NULL, &descr), -EINVAL);
	assert_int_equal(devres_liveobj_activate(x, NULL), -EINVAL);
	bad.state = NULL;
	assert_int_equal(devres_liveobj_activate(x, &bad), -EINVAL);
	bad = descr;
	bad.fixup_free = NULL;
	assert_int_equal(devres_liveobj_activate(x, &bad), -EINVAL);
	bad = descr;
	bad.name = NULL;
	assert_int_equal(devres_liveobj_activate(x, &bad), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 5);
	assert_false(devres_liveobj_active(x));
	assert_false(devres_liveobj_active(NULL));
}

/* One object at @off in a block of @size freed by devm_kfree(). */
static int kfree_with_object_at(struct device *dev, size_t size, long off)
{
	char *p = devm_kmalloc(dev, size, GFP_KERNEL);
	int warns = devres_warn_count();
	char *obj = p + off;

	assert_non_null(p);
	reset(DEVRES_LIVEOBJ_PENDING);
	assert_int_equal(devres_liveobj_activate(obj, &descr), 0);
	devm_kfree(dev, p);
	assert_int_equal(fixups, devres_warn_count() - warns);
	/* Outside the block: still live, and its owner's to end. */
	if (devres_liveobj_active(obj)) {
		assert_int_equal(fixups, 0);
		devres_liveobj_deactivate(obj);
	}
	return devres_warn_count() - warns;
}

static void block_bounds(void **state)
{
	struct device *dev = *state;
	/* A slab block (outside ASan builds) and a heap block. */
	static const size_t size[] = { 48, 3000 };

	for (int i = 0; i < 2; i++) {
		long n = (long)size[i];

		assert_int_equal(kfree_with_object_at(dev, size[i], 0), 1);
		assert_int_equal(kfree_with_object_at(dev, size[i], n / 2), 1);
		assert_int_equal(kfree_with_object_at(dev, size[i], n - 1), 1);
		assert_int_equal(kfree_with_object_at(dev, size[i], n), 0);
		assert_int_equal(kfree_with_object_at(dev, size[i], -1), 0);
	}
	expect_stats(dev, 0, 0);
}

/* Each state: the WARN for those a thread uses, the fixup unless idle. */
static void states(void **state)
{
	struct device *dev = *state;
	static const struct {
		enum devres_liveobj_state st;
		int warns, fixups, self;
	} want[] = {
		{ DEVRES_LIVEOBJ_PENDING, 1, 1, 0 },
		{ DEVRES_LIVEOBJ_RUNNING, 1, 1, 0 },
		{ DEVRES_LIVEOBJ_SELF, 0, 0, 1 },
		{ DEVRES_LIVEOBJ_IDLE, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char *p = devm_kmalloc(dev, 200, GFP_KERNEL);
		int warns = devres_warn_count();

		assert_non_null(p);
		reset(want[i].st);
		assert_int_equal(devres_liveobj_activate(p + 8, &descr), 0);
		devm_kfree(dev, p);
		assert_int_equal(devres_warn_count() - warns, want[i].warns);
		assert_int_equal(fixups, want[i].fixups);
		assert_int_equal(self_fixups, want[i].self);
		assert_int_equal(states_asked, 1);
		/* Whatever the state, no record outlives the memory. */
		assert_false(devres_liveobj_active(p + 8));
	}
}

/* 300 objects in one block and 100 outside it: past the static records. */
static void many_objects(void **state)
{
	struct device *dev = *state;
	char *p = devm_kmalloc(dev, 3000, GFP_KERNEL);
	static char outside[100];
	int warns = devres_warn_count();

	assert_non_null(p);
	reset(DEVRES_LIVEOBJ_RUNNING);
	for (int i = 0; i < 100; i++)
		assert_int_equal(devres_liveobj_activate(&outside[i], &descr),
				 0);
	for (int i = 299; i >= 0; i--)
		assert_int_equal(devres_liveobj_activate(p + 10 * i, &descr),
				 0);
	devm_kfree(dev, p);
	assert_int_equal(devres_warn_count() - warns, 300);
	assert_int_equal(fixups, 300);
	for (int i = 0; i < 100; i++) {
		assert_true(devres_liveobj_active(&outside[i]));
		devres_liveobj_deactivate(&outside[i]);
	}
}

static void krealloc_paths(void **state)
{
	struct device *dev = *state;
	char *p = devm_kmalloc(dev, 1000, GFP_KERNEL), *q;
	int warns = devres_warn_count();

	assert_non_null(p);
	reset(DEVRES_LIVEOBJ_PENDING);
	/* Shrunk in place: the tail past 100 goes, the head stays. */
	assert_int_equal(devres_liveobj_activate(p + 50, &descr), 0);
	assert_int_equal(devres_liveobj_activate(p + 900, &descr), 0);
	q = devm_krealloc(dev, p, 100, GFP_KERNEL);
	assert_ptr_equal(q, p);
	assert_int_equal(devres_warn_count() - warns, 1);
	assert_false(devres_liveobj_active(p + 900));
	assert_true(devres_liveobj_active(p + 50));
	/* Moved: the whole old block goes. */
	q = devm_krealloc(dev, p, 1 << 20, GFP_KERNEL);
	assert_non_null(q);
	assert_ptr_not_equal(q, p);
	assert_int_equal(devres_warn_count() - warns, 2);
	assert_false(devres_liveobj_active(p + 50));
	assert_int_equal(fixups, 2);
	devm_kfree(dev, q);
	assert_int_equal(devres_warn_count() - warns, 2);
}

/* Only small blocks: released whole, without a walk, when none is live. */
static void release_all_of_slab_blocks(void **state)
{
	struct device *dev = *state;
	char *p[8];
	int warns = devres_warn_count();

	for (int i = 0; i < 8; i++)
		assert_non_null(p[i] = devm_kmalloc(dev, 32, GFP_KERNEL));
	reset(DEVRES_LIVEOBJ_PENDING);
	assert_int_equal(devres_liveobj_activate(p[3] + 4, &descr), 0);
	assert_int_equal(devres_release_all(dev), 8);
	assert_int_equal(devres_warn_count() - warns, 1);
	assert_int_equal(fixups, 1);
	assert_false(devres_liveobj_active(p[3] + 4));
}

static void release_group(void **state)
{
	struct device *dev = *state;
	char *before = devm_kmalloc(dev, 64, GFP_KERNEL), *in;
	int warns = devres_warn_count();
	void *id = devres_open_group(dev, NULL, GFP_KERNEL);

	assert_non_null(before);
	assert_non_null(id);
	in = devm_kmalloc(dev, 64, GFP_KERNEL);
	assert_non_null(in);
	devres_close_group(dev, id);
	reset(DEVRES_LIVEOBJ_RUNNING);
	assert_int_equal(devres_liveobj_activate(in, &descr), 0);
	assert_int_equal(devres_liveobj_activate(before, &descr), 0);
	assert_int_equal(devres_release_group(dev, id), 1);
	assert_int_equal(devres_warn_count() - warns, 1);
	/* Not in the group: untouched. */
	assert_true(devres_liveobj_active(before));
	devres_liveobj_deactivate(before);
	devm_kfree(dev, before);
	assert_int_equal(devres_warn_count() - warns, 1);
}

struct holder {
	char pad[16];
	char obj[16];
	bool stop; /* the release makes the object idle first */
};

static void holder_release(struct device *dev, void *res)
{
	struct holder *h = res;

	(void)dev;
	if (h->stop)
		devres_liveobj_deactivate(h->obj);
}

/* devres_release() checks after the node's release ran; devres_free(). */
static void release_and_free(void **state)
{
	struct device *dev = *state;
	int warns = devres_warn_count();
	struct holder *h;

	reset(DEVRES_LIVEOBJ_PENDING);
	for (int stop = 0; stop < 2; stop++) {
		h = devres_alloc(holder_release, sizeof(*h), GFP_KERNEL);
		assert_non_null(h);
		h->stop = stop;
		devres_add(dev, h);
		assert_int_equal(devres_liveobj_activate(h->obj, &descr), 0);
		assert_int_equal(
			devres_release(dev, holder_release, NULL, NULL), 0);
	}
	assert_int_equal(devres_warn_count() - warns, 1);
	h = devres_alloc(holder_release, sizeof(*h), GFP_KERNEL);
	assert_non_null(h);
	assert_int_equal(devres_liveobj_activate(h->obj, &descr), 0);
	devres_free(h);
	assert_int_equal(devres_warn_count() - warns, 2);
	assert_int_equal(fixups, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(api),
		cmocka_unit_test_setup_teardown(block_bounds, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(states, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(many_objects, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(krealloc_paths, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(release_all_of_slab_blocks,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(release_group, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(release_and_free, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
