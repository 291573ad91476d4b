// SPDX-License-Identifier: MIT
/* ctest-labels: tsan stress timeout=600 */
/*
 * Readers hammer revocable_try_access() on the handle an "open file" keeps
 * while the driver is unbound and bound again, 1000 times: no access
 * begins after the release, no release runs while an access is in
 * progress, nothing is touched after it is freed (ASan, TSan), and nothing
 * leaks; revocations in parallel, some deferred, while readers stay.
 * Then again with DEVRES_REVOCABLE=fallback.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/revocable.h>
#include "testlib.h"

#define READERS 3
#define CYCLES 1000
#define ALIVE 0x11
#define GONE 0xdd

struct regs {
	int state;
	int inside; /* readers between try_access and access_end */
	unsigned int gen;
};

static const struct bus_type race_bus = { .name = "racebus" };

/* The "open file": the latest handle, with a reference of its own. */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct revocable *slot;

static unsigned int probes, releases, early_release, bad_reads;
static unsigned long accesses, refused, progress;
static int stop;

static void regs_release(void *res)
{
	struct regs *r = res;

	if (__atomic_load_n(&r->inside, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&early_release, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->state, GONE, __ATOMIC_RELAXED);
	__atomic_add_fetch(&releases, 1, __ATOMIC_RELAXED);
	free(r);
}

static int race_probe(struct device *dev)
{
	struct regs *r = malloc(sizeof(*r));
	struct revocable *h, *old;

	if (!r)
		return -ENOMEM;
	*r = (struct regs){ .state = ALIVE, .gen = ++probes };
	h = devm_revocable_create(dev, r, regs_release);
	if (!h) {
		free(r);
		return -ENOMEM;
	}
	pthread_mutex_lock(&slot_lock);
	old = slot;
	slot = revocable_get(h);
	pthread_mutex_unlock(&slot_lock);
	revocable_put(old);
	return 0;
}

static struct device_driver race_drv = {
	.name = "racer",
	.bus = &race_bus,
	.probe = race_probe,
};

static void *reader(void *arg)
{
	unsigned long n = 0, no = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct revocable *h;

		pthread_mutex_lock(&slot_lock);
		h = revocable_get(slot);
		pthread_mutex_unlock(&slot_lock);
		for (int k = 0; h && k < 64; k++) {
			struct regs *r = revocable_try_access(h);

			if (!r) {
				no++;
				continue;
			}
			__atomic_add_fetch(&r->inside, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&r->state, __ATOMIC_RELAXED) !=
			    ALIVE)
				__atomic_add_fetch(&bad_reads, 1,
						   __ATOMIC_RELAXED);
			__atomic_sub_fetch(&r->inside, 1, __ATOMIC_SEQ_CST);
			/*
			 * A plain read after the count, so that only the
			 * read side orders it before the free (TSan).
			 */
			if (r->gen == 0)
				__atomic_add_fetch(&bad_reads, 1,
						   __ATOMIC_RELAXED);
			revocable_access_end(h);
			__atomic_add_fetch(&progress, 1, __ATOMIC_RELAXED);
			n++;
		}
		revocable_put(h);
		sched_yield();
	}
	__atomic_add_fetch(&accesses, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&refused, no, __ATOMIC_RELAXED);
	return NULL;
}

static void unbind_rebind_while_reading(void **state)
{
	struct devres_ledger before, now;
	pthread_t t[READERS];
	struct device *dev;

	(void)state;
	devres_ledger_snapshot(&before);
	probes = releases = early_release = bad_reads = 0;
	accesses = refused = progress = 0;
	alarm(500);
	stop = 0;
	assert_int_equal(driver_register(&race_drv), 0);
	dev = heap_dev(&race_bus, "race.0");
	assert_int_equal(device_add(dev), 0);
	assert_true(device_is_bound(dev));
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, NULL), 0);
	for (int i = 0; i < CYCLES; i++) {
		unsigned long p = __atomic_load_n(&progress, __ATOMIC_RELAXED);

		/* Each binding is read before it goes (alarm: a hang). */
		while (__atomic_load_n(&progress, __ATOMIC_RELAXED) == p)
			sched_yield();
		device_release_driver(dev);
		assert_int_equal(device_attach(dev), 1);
	}
	device_del(dev);
	put_device(dev);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	driver_unregister(&race_drv);
	/* The last handle, kept past the device's end, refuses access. */
	assert_null(revocable_try_access(slot));
	revocable_put(slot);
	slot = NULL;
	fprintf(stderr, "%u bindings, %lu accesses, %lu refused\n", probes,
		accesses, refused);
	assert_int_equal(probes, CYCLES + 1);
	assert_int_equal(releases, probes);
	assert_int_equal(early_release, 0);
	assert_int_equal(bad_reads, 0);
	assert_true(accesses >= CYCLES);
	alarm(0);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
}

/*
 * Revocations in parallel, some from inside the revoking thread's own
 * access (finished when it ends), while readers hold accesses on a
 * handle that stays: grace periods overlap, none waits for another's
 * revoker, none returns while an access of its handle is in progress.
 */
#define REVOKERS 2
#define REVOKES 500

static struct revocable *steady;
static unsigned int errors;

static void counted_release(void *res)
{
	struct regs *r = res;

	if (__atomic_load_n(&r->inside, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&early_release, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&releases, 1, __ATOMIC_RELAXED);
	free(r);
}

static void *revoker(void *arg)
{
	struct device *dev = heap_dev(NULL, "revoker.%d", (int)(long)arg);

	for (int i = 0; i < REVOKES; i++) {
		struct regs *r = calloc(1, sizeof(*r)), *p;
		struct revocable *h;

		h = r ? revocable_get(
				devm_revocable_create(dev, r, counted_release))
		      : NULL;
		if (!h) {
			free(r);
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			break;
		}
		p = (i & 1) ? revocable_try_access(h) : NULL;
		if (p)
			__atomic_add_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
		if (devres_release_all(dev) != 1)
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
		if (p) {
			/* Deferred: still ours until the access ends. */
			__atomic_sub_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
			revocable_access_end(h);
		}
		if (revocable_try_access(h))
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
		revocable_put(h);
	}
	put_device(dev);
	return NULL;
}

static void *steady_reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct regs *r = revocable_try_access(steady);

		if (!r) {
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			break;
		}
		__atomic_add_fetch(&r->inside, 1, __ATOMIC_SEQ_CST);
		sched_yield();
		__atomic_sub_fetch(&r->inside, 1, __ATOMIC_SEQ_CST);
		revocable_access_end(steady);
	}
	return NULL;
}

static void parallel_revocations(void **state)
{
	struct devres_ledger before, now;
	pthread_t rd[2], rv[REVOKERS];
	struct device *dev;
	struct regs *r = calloc(1, sizeof(*r));

	(void)state;
	assert_non_null(r);
	alarm(500);
	devres_ledger_snapshot(&before);
	releases = early_release = errors = 0;
	stop = 0;
	dev = heap_dev(NULL, "steady");
	steady = devm_revocable_create(dev, r, counted_release);
	assert_non_null(steady);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&rd[i], NULL, steady_reader, NULL), 0);
	for (long i = 0; i < REVOKERS; i++)
		assert_int_equal(
			pthread_create(&rv[i], NULL, revoker, (void *)i), 0);
	for (int i = 0; i < REVOKERS; i++)
		assert_int_equal(pthread_join(rv[i], NULL), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(rd[i], NULL), 0);
	assert_int_equal(devres_release_all(dev), 1);
	put_device(dev);
	assert_int_equal(errors, 0);
	assert_int_equal(early_release, 0);
	assert_int_equal(releases, REVOKERS * REVOKES + 1);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
	alarm(0);
}

static void fallback_read_side(void **state)
{
	char *err = NULL;
	int status;

	(void)state;
	status = run_self("DEVRES_REVOCABLE=fallback", &err, "--child", NULL);
	fprintf(stderr, "%s", err ? err : "");
	free(err);
	assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unbind_rebind_while_reading),
		cmocka_unit_test(parallel_revocations),
		cmocka_unit_test(fallback_read_side),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]) - (argc > 1);

	(void)argv;
	return run_group_on_bus("revocable-race", tests, n, &race_bus);
}
