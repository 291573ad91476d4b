// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A mutex devm_mutex_init() made on test-dev, made again by another
 * owner while test-dev's managed destroy is still to come (a second
 * devm_mutex_init() on test-dev or on other-dev, a mutex_init() by hand,
 * then or not other-dev's devm_mutex_init()), then test-dev's resources
 * released: the new owner's mutex must be untouched (live, its lock
 * working, no WARN). The managed destroy knew the mutex by its address
 * and destroyed it if any devm_mutex_init() had made it since: test-dev's
 * release destroyed other-dev's mutex. Now it destroys the mutex only
 * while it is still test-dev's; the kernel's re-init stays silent, and
 * the mutex is destroyed once, by its last owner's release.
 *
 * Then mutex_destroy() by hand on one thread while test-dev's release
 * runs on another, 500 rounds: the release had
 * taken the node off the device, and a mutex_destroy() first to the
 * mutex WARNed a second time that its devm_remove_action() found no
 * action. Now the node is dropped quietly when it is gone: one WARN at
 * most a round, the mutex destroyed once, the node gone.
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

/* A second devm_mutex_init() on @second: the mutex is @second's. */
static void devm_again(struct device *second)
{
	int w0 = devres_warn_count();

	memset(&m, 0, sizeof(m));
	assert_int_equal(devm_mutex_init(&tdev, &m), 0);
	assert_int_equal(devm_mutex_init(second, &m), 0);
	assert_true(recorded(second));
	if (second != &tdev) {
		devres_release_all(&tdev);
		works();
	}
	devres_release_all(second);
	assert_false(live());
	devres_release_all(&tdev);
	assert_false(live());
	assert_int_equal(devres_warn_count(), w0);
}

static void devm_twice_same_device(void **state)
{
	(void)state;
	devm_again(&tdev);
}

static void devm_twice_other_device(void **state)
{
	(void)state;
	devm_again(&other);
}

/* @second_devm: the new owner is other-dev's devm_mutex_init(). */
static void made_again_by_hand(bool second_devm)
{
	int w0;

	memset(&m, 0, sizeof(m));
	assert_int_equal(devm_mutex_init(&tdev, &m), 0);
	w0 = devres_warn_count();
	mutex_init(&m); /* the kernel's re-init: silent */
	if (second_devm)
		assert_int_equal(devm_mutex_init(&other, &m), 0);
	devres_release_all(&tdev);
	works();
	if (second_devm) {
		devres_release_all(&other);
		assert_false(live());
	} else {
		mutex_destroy(&m);
		assert_false(live());
	}
	assert_int_equal(devres_warn_count(), w0);
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
	start_capture();
	mutex_destroy(&m);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_true(kc_said("WARNING: test-dev: mutex_destroy: mutex "));
	assert_false(recorded(&tdev));
	assert_int_equal(devm_mutex_init(&other, &m), 0);
	devres_release_all(&tdev);
	works();
	devres_release_all(&other);
	assert_false(live());
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

static void *hand(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	mutex_destroy(&m);
	return NULL;
}

/*
 * mutex_destroy() on one thread, test-dev's release on another, at once:
 * one WARN at most a round (the plain call's, or none when the release
 * came first), the mutex destroyed once, no node left. (A mutex_init()
 * against the release is the caller's own race, on the mutex's memory,
 * as in the kernel.)
 */
static void destroy_races_release(void **state)
{
	(void)state;
	assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
	for (int i = 0; i < 500; i++) {
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
		assert_false(live());
	}
	pthread_barrier_destroy(&go);
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
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
