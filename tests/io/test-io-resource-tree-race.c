// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The tree's shape under concurrent change: two threads claim and give
 * back overlapping regions (plain, and managed on a device whose
 * resources a third thread releases over and over), a fourth puts a
 * describing range over some of them (request_resource() or
 * insert_resource(), which covers regions already there) and takes it out
 * again with release_resource(), which leaves the regions inside it
 * claimed in its parent (LIFTS times, or for RUN_MS); meanwhile a checker walks the tree
 * (tests/io/tree-check.h) and asserts its shape. Then each thread's
 * claims are given back, and the tree and the ledger are as they were.
 * Runs in a child under an alarm: a hang is a failure, not a hung suite.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/platform.h>
#include "testlib.h"
#include "io/tree-check.h"

#define BASE 0x7c000000ull
#define SLOT 0x100ull
#define NSLOT 16
/* The run ends after this many lifts, or this long. */
#define LIFTS 200
#define RUN_MS 1500
#define ALARM_S 60

static struct platform_device *owner;
static int stop;
static int broken;
static int lifted;

static long regions_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.regions;
}

/*
 * Claims of 1 to 3 slots from a random one: they overlap each other's.
 * The plain claimer keeps up to NSLOT of them and gives each back later;
 * the managed one leaves them to the releaser.
 */
static void *claimer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	bool managed = (uintptr_t)arg & 1;
	resource_size_t held[NSLOT][2];
	int nheld = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		resource_size_t s = BASE + SLOT * (rand_r(&seed) % NSLOT);
		resource_size_t n = SLOT * (1 + rand_r(&seed) % 3);
		int k;

		if (s + n > BASE + SLOT * NSLOT)
			continue;
		if (managed) {
			(void)devm_request_mem_region(&owner->dev, s, n, "m");
			continue;
		}
		if (nheld < NSLOT && rand_r(&seed) % 2) {
			if (request_mem_region(s, n, "p")) {
				held[nheld][0] = s;
				held[nheld++][1] = n;
			}
			continue;
		}
		if (!nheld)
			continue;
		k = (int)(rand_r(&seed) % (unsigned int)nheld);
		release_mem_region(held[k][0], held[k][1]);
		held[k][0] = held[--nheld][0];
		held[k][1] = held[nheld][1];
	}
	while (nheld--)
		release_mem_region(held[nheld][0], held[nheld][1]);
	return NULL;
}

static void *releaser(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		(void)devres_release_all(&owner->dev);
	return NULL;
}

/* A bus window over slots 4 to 11, in and out. */
static void *describer(void *arg)
{
	static struct resource bus =
		DEFINE_RES_MEM_NAMED(BASE + 4 * SLOT, 8 * SLOT, "bus");
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int ret = rand_r(&seed) % 2
				  ? request_resource(&iomem_resource, &bus)
				  : insert_resource(&iomem_resource, &bus);

		if (!ret && release_resource(&bus))
			__atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *checker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		if (tree_check(&iomem_resource) < 0)
			__atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Counts the lift WARNs, and nothing else is expected. */
static void sink(void *data, int level, const char *line)
{
	static const char lift[] = "left claimed in its parent";

	(void)data;
	(void)level;
	if (strstr(line, "release_resource: bus ") && strstr(line, lift))
		__atomic_add_fetch(&lifted, 1, __ATOMIC_RELAXED);
	else if (strncmp(line, "WARNING: ", 9) == 0)
		__atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
}

static int run(void)
{
	pthread_t c[2], r, d, k;
	long regions0 = regions_now();
	int nodes0 = tree_check(&iomem_resource), w0, warns, ret;

	alarm(ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	owner = platform_device_register_simple("tree-race", 0, NULL, 0);
	if (!owner)
		return 2;
	devres_set_log_sink(sink, NULL);
	w0 = devres_warn_count();
	pthread_create(&r, NULL, releaser, NULL);
	pthread_create(&d, NULL, describer, (void *)7);
	pthread_create(&k, NULL, checker, NULL);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&c[i], NULL, claimer, (void *)(i + 2));
	for (int ms = 0;
	     ms < RUN_MS && __atomic_load_n(&lifted, __ATOMIC_RELAXED) < LIFTS;
	     ms++)
		usleep(1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	pthread_join(r, NULL);
	pthread_join(d, NULL);
	pthread_join(k, NULL);
	(void)devres_release_all(&owner->dev);
	warns = devres_warn_count() - w0;
	devres_set_log_sink(NULL, NULL);
	if (broken || warns != lifted)
		fprintf(stderr, "broken %d, warns %d, lifts %d\n", broken,
			warns, lifted);
	ret = broken || warns != lifted || !lifted;
	if (regions_now() != regions0 || tree_check(&iomem_resource) != nodes0)
		ret |= fprintf(stderr, "claims left\n") > 0;
	if (!request_mem_region(BASE, NSLOT * SLOT, "all"))
		ret |= fprintf(stderr, "the slots are not free\n") > 0;
	else
		release_mem_region(BASE, NSLOT * SLOT);
	platform_device_unregister(owner);
	fprintf(stderr, "%d lifts\n", lifted);
	return ret;
}

static void test_tree_race(void **state)
{
	int st = 0;
	pid_t pid;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(run());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
