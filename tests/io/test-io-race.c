// SPDX-License-Identifier: MIT
/* ctest-labels: tsan stress */
/*
 * Concurrency: threads requesting and releasing overlapping regions (no
 * two overlapping claims may ever be granted at once);
 * iomem_window_remove() racing devm_ioremap() and request_mem_region() on
 * the window (a window is never removed under a live mapping or a busy
 * region, and a mapping is never made of a window that is gone); managed
 * mappings made and dropped while another thread releases the device.
 * Threads count what they find wrong; the main thread asserts.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include "testlib.h"
#include "iotest.h"

#define NSLOT 16
#define SLOT 0x100ull
#define BASE 0xc0000000ull

static int iters(int n)
{
	const char *s = secure_getenv("IO_RACE_ITERS");

	return s ? atoi(s) : n;
}

static int errors;
static int owned[NSLOT];

static void bad(void)
{
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
}

static int get(int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void set(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Slot k claims [k, k + 2) slots: it overlaps k - 1 and k + 1. */
static void *claimer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	for (int i = 0; i < iters(20000); i++) {
		int k = (int)(rand_r(&seed) % (NSLOT - 1));
		resource_size_t start = BASE + k * SLOT;

		if (!request_mem_region(start, 2 * SLOT, "claim"))
			continue;
		if (__atomic_exchange_n(&owned[k], 1, __ATOMIC_ACQ_REL) ||
		    (k > 0 && get(&owned[k - 1])) || get(&owned[k + 1]))
			bad();
		set(&owned[k], 0);
		release_mem_region(start, 2 * SLOT);
	}
	return NULL;
}

static long regions_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.regions;
}

static void overlapping_claims(void **state)
{
	pthread_t t[4];
	long before = regions_now();
	struct resource probe = DEFINE_RES_MEM(BASE, NSLOT * SLOT);

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, claimer,
						(void *)(uintptr_t)(i + 1)),
				 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(errors, 0);
	assert_int_equal(regions_now(), before);
	/* Nothing is left in the range: all of it can be described again. */
	assert_int_equal(request_resource(&iomem_resource, &probe), 0);
	assert_int_equal(release_resource(&probe), 0);
}

#define WIN 0xd0000000ull
#define WIN_SIZE 0x2000u

static int memfd, stop, removed_ok, maps_ok, warns, tries;
/* Odd while a mapping (a claim) is held: bumped after taking, before giving. */
static int mapped, claimed;

static void count_warns(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)line;
	if (level == DEVRES_LOG_WARNING)
		__atomic_add_fetch(&warns, 1, __ATOMIC_RELAXED);
}

static int attempts;

/* Holds on until the remover has tried twice: each hold meets a removal. */
static void hold(void)
{
	int t0 = get(&attempts);

	while (get(&attempts) < t0 + 2 && !get(&stop))
		sched_yield();
}

static void *mapper(void *arg)
{
	struct device *dev = arg;

	while (!get(&stop)) {
		volatile uint32_t *p = devm_ioremap(dev, WIN + 0x100, 0x10);

		if (!p) {
			if (errno != ENXIO)
				bad();
			continue;
		}
		__atomic_add_fetch(&mapped, 1, __ATOMIC_ACQ_REL);
		hold();
		writel(1, p);
		__atomic_add_fetch(&maps_ok, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&mapped, 1, __ATOMIC_ACQ_REL);
		devm_iounmap(dev, (void *)p);
		/* Give the remover a chance: the window is free now. */
		sched_yield();
	}
	return NULL;
}

static void *region_user(void *arg)
{
	(void)arg;
	while (!get(&stop)) {
		if (!request_mem_region(WIN + 0x800, 0x10, "user"))
			continue;
		__atomic_add_fetch(&claimed, 1, __ATOMIC_ACQ_REL);
		hold();
		__atomic_add_fetch(&claimed, 1, __ATOMIC_ACQ_REL);
		release_mem_region(WIN + 0x800, 0x10);
		sched_yield();
	}
	return NULL;
}

static void *remover(void *arg)
{
	(void)arg;
	/* Enough tries, and enough of them won, within a bound. */
	for (tries = 0; tries < 50 * iters(20000); tries++) {
		int ret, m, c;

		if (tries >= iters(20000) && removed_ok >= 100)
			break;
		m = get(&mapped);
		c = get(&claimed);
		ret = iomem_window_remove(WIN);
		__atomic_add_fetch(&attempts, 1, __ATOMIC_ACQ_REL);
		/* A mutex is not fair: let the others take the locks. */
		sched_yield();
		if (ret == -EBUSY)
			continue;
		/* A mapping or a claim held all through the removal. */
		if (ret || ((m & 1) && m == get(&mapped)) ||
		    ((c & 1) && c == get(&claimed)))
			bad();
		__atomic_add_fetch(&removed_ok, 1, __ATOMIC_RELAXED);
		if (iomem_window_add(WIN, WIN_SIZE, memfd, 0, "racy"))
			bad();
	}
	set(&stop, 1);
	return NULL;
}

static void remove_racing_map(void **state)
{
	struct device *dev = *state;
	pthread_t t[3];

	memfd = dev_memfd(WIN_SIZE);
	assert_true(memfd >= 0);
	assert_int_equal(iomem_window_add(WIN, WIN_SIZE, memfd, 0, "racy"), 0);
	devres_set_log_sink(count_warns, NULL);
	assert_int_equal(pthread_create(&t[0], NULL, mapper, dev), 0);
	assert_int_equal(pthread_create(&t[1], NULL, region_user, NULL), 0);
	assert_int_equal(pthread_create(&t[2], NULL, remover, NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(errors, 0);
	/* Both sides won sometimes; every refusal was one WARN. */
	assert_true(removed_ok > 0);
	assert_true(maps_ok > 0);
	assert_int_equal(warns, tries - removed_ok);
	assert_int_equal(iomem_window_remove(WIN), 0);
	close(memfd);
}

static void *map_unmap(void *arg)
{
	struct device *dev = arg;

	while (!get(&stop)) {
		void *p = devm_ioremap(dev, WIN + 0x40, 0x10);

		if (!p)
			bad();
		/* Released under it by the other thread: one WARN, no harm. */
		devm_iounmap(dev, p);
	}
	return NULL;
}

static void unmap_racing_release(void **state)
{
	struct device *dev = *state;
	pthread_t t[2];

	memfd = dev_memfd(WIN_SIZE);
	assert_true(memfd >= 0);
	assert_int_equal(iomem_window_add(WIN, WIN_SIZE, memfd, 0, "racy"), 0);
	set(&stop, 0);
	warns = 0;
	devres_set_log_sink(count_warns, NULL);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, map_unmap, dev),
				 0);
	for (int i = 0; i < iters(20000) / 10; i++)
		devres_release_all(dev);
	set(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(errors, 0);
	devres_release_all(dev);
	assert_int_equal(iomem_window_remove(WIN), 0);
	close(memfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overlapping_claims),
		cmocka_unit_test_setup_teardown(remove_racing_map, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(unmap_racing_release, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
