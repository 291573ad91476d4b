// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of the core's calls on a node, a group and a managed
 * allocation, made at once from two threads, many rounds
 * (DEVRES_PAIRS_ROUNDS). The node N (a counting release) is loose (made,
 * not added), added, added in an open group, in a closed group, or added
 * before a group was opened; a managed allocation A is made last in each
 * state. The calls: devres_add() of N to the device and to another,
 * devres_get() of N (which adds it when nothing matches), devres_free(), devres_remove(), devres_destroy(), devres_release(),
 * devres_find() of N, a new group opened, the group closed, removed,
 * released, devres_release_all(), devm_kfree() of A. Each pair must end
 * as one of its two serial orders does (tests/pairs.h): the same returns
 * and WARNs, the device holding the same nodes, N on a device or not,
 * released as often (never twice), freed once. A node added twice or to
 * two devices, freed while listed, or a hang (alarm) fails the pair; the
 * ledger is back at its baseline after each state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"
#include "pairs.h"

enum state {
	LOOSE,
	ADDED,
	IN_OPEN,
	IN_CLOSED,
	BEFORE_OPEN,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"loose",
	"added",
	"in an open group",
	"in a closed group",
	"added before an open group",
};

enum call {
	ADD,
	ADD_OTHER,
	GET,
	FREE,
	REMOVE,
	DESTROY,
	RELEASE,
	FIND,
	OPEN,
	CLOSE,
	REMOVE_GROUP,
	RELEASE_GROUP,
	RELEASE_ALL,
	KFREE,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"devres_add",	       "devres_add(other)",    "devres_free",
	"devres_remove",       "devres_destroy",       "devres_release",
	"devres_find",	       "devres_open_group",    "devres_close_group",
	"devres_remove_group", "devres_release_group", "devres_release_all",
	"devm_kfree",
};

static void *node, *mem;
static int released, destroyed;
static char gid, gid2;

static void count_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
}

static int same(struct device *dev, void *res, void *data)
{
	(void)dev;
	return res == data;
}

static void reach(unsigned int s)
{
	released = destroyed = 0;
	node = devres_alloc(count_release, 16, GFP_KERNEL);
	assert_non_null(node);
	if (s == IN_OPEN || s == IN_CLOSED)
		assert_ptr_equal(devres_open_group(&tdev, &gid, GFP_KERNEL),
				 &gid);
	if (s != LOOSE)
		devres_add(&tdev, node);
	if (s == IN_CLOSED)
		devres_close_group(&tdev, &gid);
	if (s == BEFORE_OPEN)
		assert_ptr_equal(devres_open_group(&tdev, &gid, GFP_KERNEL),
				 &gid);
	mem = devm_kmalloc(&tdev, 16, GFP_KERNEL);
	assert_non_null(mem);
}

static int nodes(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return (int)st.allocs;
}

/* Either thread: what it returns is all it records. */
static int make(unsigned int c)
{
	int ret;

	switch (c) {
	case ADD:
		devres_add(&tdev, node);
		return 0;
	case ADD_OTHER:
		devres_add(&other, node);
		return 0;
	case GET:
		return devres_get(&tdev, node, same, node) == node;
	case FREE:
		devres_free(node);
		return 0;
	case REMOVE:
		return devres_remove(&tdev, count_release, same, node) != NULL;
	case DESTROY:
		ret = devres_destroy(&tdev, count_release, same, node);
		if (!ret)
			__atomic_store_n(&destroyed, 1, __ATOMIC_RELAXED);
		return ret;
	case RELEASE:
		return devres_release(&tdev, count_release, same, node);
	case FIND:
		return devres_find(&tdev, count_release, same, node) != NULL;
	case OPEN:
		return devres_open_group(&tdev, &gid2, GFP_KERNEL) == &gid2;
	case CLOSE:
		devres_close_group(&tdev, &gid);
		return 0;
	case REMOVE_GROUP:
		devres_remove_group(&tdev, &gid);
		return 0;
	case RELEASE_GROUP:
		return devres_release_group(&tdev, &gid);
	case RELEASE_ALL:
		return devres_release_all(&tdev);
	case KFREE:
		devm_kfree(&tdev, mem);
		return 0;
	default:
		fail();
	}
	return 0;
}

/*
 * What the pair left: the nodes on each device, whether N is found on
 * either, its releases so far; then both devices released, N freed by the
 * test when it is neither listed, released nor destroyed (a free of a node
 * freed already WARNs), and its releases in all, with the WARNs of all
 * this.
 */
static void undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();
	bool listed;

	o->after[0] = nodes(&tdev) * 16 + nodes(&other);
	o->after[1] = !!devres_find(&tdev, count_release, same, node) +
		      2 * !!devres_find(&other, count_release, same, node);
	listed = o->after[1];
	o->after[2] = __atomic_load_n(&released, __ATOMIC_RELAXED);
	devres_release_all(&tdev);
	devres_release_all(&other);
	if (!listed && !o->after[2] &&
	    !__atomic_load_n(&destroyed, __ATOMIC_RELAXED))
		devres_free(node);
	o->after[3] = __atomic_load_n(&released, __ATOMIC_RELAXED);
	o->after[4] = devres_warn_count() - w0;
}

#ifdef T_TSAN
#define ROUNDS 40
#else
#define ROUNDS 60
#endif

PAIRS_TEST(every_pair_in_every_state, ROUNDS,
	   PAIRS_NAMES(state_name, call_name), .reach = reach, .call = make,
	   .undo = undo)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						two_dev_setup, dev_teardown),
	};

	return pairs_group("core-pairs", tests, 1);
}
