/* SPDX-License-Identifier: MIT */
/*
 * The lifecycle of a revocable handle as the states and pairs tests drive
 * it (docs/revocable.md, "States of a handle"): the states a test can
 * hold still, the calls, and the resource, which counts its releases.
 * The handle is made on tdev (testlib.h) with one reference of the
 * test's. Include after cmocka.h and testlib.h.
 */
#ifndef DEVRES_TESTS_REVOCABLE_LIFECYCLE_H
#define DEVRES_TESTS_REVOCABLE_LIFECYCLE_H

#include <stdio.h>
#include <stdlib.h>
#include <devres/revocable.h>

enum state {
	LIVE,
	REVOKED,
	FREED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = { "live", "revoked", "freed" };

enum call {
	ACCESS,
	END,
	GET_PUT,
	PUT,
	RELEASE,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"revocable_try_access+end", "revocable_access_end",
	"revocable_get+put",	    "revocable_put",
	"devres_release_all",
};

struct thing {
	int value;
	int released;
};

static struct thing thing;
static struct revocable *h;

static inline void thing_release(void *res)
{
	struct thing *t = res;

	__atomic_add_fetch(&t->released, 1, __ATOMIC_ACQ_REL);
}

static inline void reach(unsigned int s)
{
	thing.value = 42;
	thing.released = 0;
	h = devm_revocable_create(&tdev, &thing, thing_release);
	assert_non_null(h);
	assert_ptr_equal(revocable_get(h), h);
	if (s == LIVE)
		return;
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(thing.released, 1);
	if (s == FREED)
		revocable_put(h);
}

static inline int make(unsigned int c)
{
	struct thing *t;

	switch (c) {
	case ACCESS:
		t = revocable_try_access(h);
		if (!t)
			return 0;
		/* Released under an access: the value is gone. */
		if (__atomic_load_n(&t->released, __ATOMIC_ACQUIRE) ||
		    t->value != 42) {
			revocable_access_end(h);
			return -1;
		}
		revocable_access_end(h);
		return 1;
	case END:
		revocable_access_end(h);
		return 0;
	case GET_PUT:
		revocable_put(revocable_get(h));
		return 0;
	case PUT:
		revocable_put(h);
		return 0;
	case RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * Gives back what is left: the device's release, then the test's puts
 * until the handle is freed (a freed handle's access WARNs). Returns the
 * puts it took; -1 when 4 did not free it.
 */
static inline int give_back(int *ret_released)
{
	for (int puts = 0; puts < 4; puts++) {
		int w = devres_warn_count();
		struct thing *t;

		if (!puts)
			*ret_released = devres_release_all(&tdev);
		t = revocable_try_access(h);
		if (t)
			revocable_access_end(h);
		if (devres_warn_count() != w)
			return puts;
		revocable_put(h);
	}
	return -1;
}

/*
 * The test's binary again, in a child with DEVRES_REVOCABLE=fallback and
 * "--child" (which runs all but this test), so that both read sides are
 * tested.
 */
static inline void fallback_read_side(void **state)
{
	char *err = NULL;
	int status;

	(void)state;
	status = run_self("DEVRES_REVOCABLE=fallback", &err, "--child", NULL);
	if (status)
		fprintf(stderr, "%s", err);
	free(err);
	assert_int_equal(status, 0);
}

#endif /* DEVRES_TESTS_REVOCABLE_LIFECYCLE_H */
