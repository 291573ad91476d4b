// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A mutex devm_mutex_init() made on test-dev, made again by another
 * owner (test-dev or other-dev, by hand or managed) while its managed
 * destroy is still to come, then test-dev's resources released: the new
 * owner's mutex must be untouched (live, its lock working, no WARN of a
 * destroyed mutex). The managed destroy found the mutex by its address
 * and destroyed it if any devm_mutex_init() had made it: a second
 * devm_mutex_init() left two destroys, and a mutex_init() by hand left
 * the first, and either destroyed the next owner's mutex. Now:
 *
 *  - devm_mutex_init() of a mutex whose managed destroy is to come, on
 *    the same device or another: -EBUSY, one WARN, nothing recorded;
 *  - mutex_init() of it: one WARN naming the device, made again by hand
 *    and its managed destroy dropped there (as mutex_destroy() does);
 *  - after mutex_destroy() by hand, or mutex_init() by hand, a
 *    devm_mutex_init() on the other device is the mutex's only record.
 *
 * Each cell: the WARNs counted and read, the records of the managed
 * destroy on each device, the mutex live or destroyed after each release.
 *
 * Then mutex_destroy() and mutex_init() by hand on one thread while
 * test-dev's release runs on another, 500 rounds each: the release had
 * taken the node off the device, and the plain call, first to the
 * mutex, WARNed a second time that its devm_remove_action() found no
 * action. Now the node is dropped quietly when it is gone: one WARN at
 * most a round, the mutex destroyed once (or, made again, live).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/mutex.h>
#include <pthread.h>
#include "kcompat/kctest.h"

static struct mutex m;

static bool recorded(struct device *dev)
{
	return devres_find(dev, kcompat_mutex_destroy, kcompat_mutex_match,
			   &m) != NULL;
}

static bool live(void)
{
	return !kcompat_lock_dead(&m.k);
}

/* The mutex locks and unlocks with no WARN: it works for its owner. */
static void works(void)
{
	int w0 = devres_warn_count();

	assert_true(live());
	mutex_lock(&m);
	mutex_unlock(&m);
	assert_int_equal(devres_warn_count(), w0);
}

static void second_devm_refused(struct device *second)
{
	int w0;

	memset(&m, 0, sizeof(m));
	assert_int_equal(devm_mutex_init(&tdev, &m), 0);
	w0 = devres_warn_count();
	start_capture();
	assert_int_equal(devm_mutex_init(second, &m), -EBUSY);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_true(kc_said("devm_mutex_init: mutex "));
	assert_true(kc_said("was made by devm_mutex_init() already, its "
			    "managed destroy to come: refused"));
	assert_true(recorded(&tdev));
	if (second != &tdev)
		assert_false(recorded(second));
	works();
	if (second != &tdev) {
		devres_release_all(second);
		works();
	}
	devres_release_all(&tdev);
	assert_false(live());
	assert_int_equal(devres_warn_count(), w0 + 1);
}

static void devm_twice_same_device(void **state)
{
	(void)state;
	second_devm_refused(&tdev);
}

static void devm_twice_other_device(void **state)
{
	(void)state;
	second_devm_refused(&other);
}

/* @second_devm: the new owner is other-dev's devm_mutex_init(). */
static void made_again_by_hand(bool second_devm)
{
	int w0;

	memset(&m, 0, sizeof(m));
	assert_int_equal(devm_mutex_init(&tdev, &m), 0);
	w0 = devres_warn_count();
	start_capture();
	mutex_init(&m);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_true(kc_said("WARNING: test-dev: mutex_init: mutex "));
	assert_true(kc_said("was made by devm_mutex_init(): made again here, "
			    "its managed destroy dropped"));
	assert_false(recorded(&tdev));
	if (second_devm) {
		assert_int_equal(devm_mutex_init(&other, &m), 0);
		assert_true(recorded(&other));
	}
	devres_release_all(&tdev);
	works();
	if (second_devm) {
		devres_release_all(&other);
		assert_false(live());
	} else {
		mutex_destroy(&m);
	}
	assert_int_equal(devres_warn_count(), w0 + 1);
}

static void init_by_hand_then_mine(void **state)
{
	(void)state;
	made_again_by_hand(false);
}

static void init_by_hand_then_others_devm(void **state)
{
	(void)state;
	made_again_by_hand(true);
}

/* Destroyed by hand, then other-dev's: test-dev's release leaves it. */
static void destroyed_by_hand_then_others_devm(void **state)
{
	int w0;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_int_equal(devm_mutex_init(&tdev, &m), 0);
	w0 = devres_warn_count();
	mutex_destroy(&m);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_false(recorded(&tdev));
	assert_int_equal(devm_mutex_init(&other, &m), 0);
	devres_release_all(&tdev);
	works();
	devres_release_all(&other);
	assert_false(live());
	/* Destroyed: made again by hand, quietly, and not managed. */
	mutex_init(&m);
	devres_release_all(&other);
	works();
	mutex_destroy(&m);
	assert_int_equal(devres_warn_count(), w0 + 1);
}

/* A plain mutex made managed: the kernel's re-init, no WARN. */
static void plain_then_devm(void **state)
{
	int w0 = devres_warn_count();

	(void)state;
	memset(&m, 0, sizeof(m));
	mutex_init(&m);
	assert_int_equal(devm_mutex_init(&tdev, &m), 0);
	assert_true(recorded(&tdev));
	devres_release_all(&tdev);
	assert_false(live());
	assert_int_equal(devres_warn_count(), w0);
}

static pthread_barrier_t go;
static bool by_init;

static void *hand(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	if (by_init)
		mutex_init(&m);
	else
		mutex_destroy(&m);
	return NULL;
}

/*
 * The plain call on one thread, test-dev's release on another, at once:
 * one WARN at most a round (the plain call's, or none when the release
 * came first), the managed destroy done once, no node left.
 */
static void race(bool init)
{
	int rounds = 500;

	by_init = init;
	assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
	for (int i = 0; i < rounds; i++) {
		pthread_t t;
		int w0;

		memset(&m, 0, sizeof(m));
		assert_int_equal(devm_mutex_init(&tdev, &m), 0);
		w0 = devres_warn_count();
		assert_int_equal(pthread_create(&t, NULL, hand, NULL), 0);
		pthread_barrier_wait(&go);
		devres_release_all(&tdev);
		assert_int_equal(pthread_join(t, NULL), 0);
		if (devres_warn_count() > w0 + 1)
			fail_msg("round %d: %d WARNs", i,
				 devres_warn_count() - w0);
		assert_false(recorded(&tdev));
		assert_true(live() == init);
		if (init)
			mutex_destroy(&m);
	}
	pthread_barrier_destroy(&go);
}

static void destroy_races_release(void **state)
{
	(void)state;
	race(false);
}

static void init_races_release(void **state)
{
	(void)state;
	race(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(devm_twice_same_device,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(devm_twice_other_device,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(init_by_hand_then_mine,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(init_by_hand_then_others_devm,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(
			destroyed_by_hand_then_others_devm, two_dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(plain_then_devm, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(destroy_races_release,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(init_races_release,
						two_dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
