// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * test-io-resource-lift-managed from three threads at once: one claims
 * ranges with devm_request_resource() and releases its device over and
 * over; another puts a bus window over some of them (insert_resource(),
 * which covers the ranges already there), takes it out with
 * release_resource() and frees it, as the kernel's
 * release_and_free_resource() does; a checker walks the tree
 * (tests/io/tree-check.h) and asserts its shape. Each managed range the
 * bus held stays in the tree (one WARN per lift) and its device's
 * release takes it out: no read of a freed bus (ASan), no race (TSan),
 * the tree and the ledger as they were at the end. Runs in a child
 * under an alarm: a hang is a failure, not a hung suite.
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

#define BASE 0x7d000000ull
#define SLOT 0x100ull
#define NSLOT 16
#define LIFTS 200
#define RUN_MS 1500
#define ALARM_S 60

static struct platform_device *owner;
static struct resource slots[NSLOT];
static int stop;
static int broken;
static int lifted;

static void *claimer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < NSLOT; i++)
			if (rand_r(&seed) % 2)
				(void)devm_request_resource(&owner->dev,
							    &iomem_resource,
							    &slots[i]);
		(void)devres_release_all(&owner->dev);
	}
	return NULL;
}

/* A bus window over slots 4 to 11: inserted, taken out and freed. */
static void *describer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		struct resource *bus = malloc(sizeof(*bus));

		if (!bus) {
			__atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		*bus = (struct resource)DEFINE_RES_MEM_NAMED(BASE + 4 * SLOT,
							     8 * SLOT, "bus");
		if (!insert_resource(&iomem_resource, bus) &&
		    release_resource(bus))
			__atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
		memset(bus, 0x5a, sizeof(*bus));
		free(bus);
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

/* Counts the lift WARNs; no other is expected. */
static void sink(void *data, int level, const char *line)
{
	(void)data;
	(void)level;
	if (strstr(line, "release_resource: bus ") && strstr(line, "holds "
								   "managed "
								   "range"))
		__atomic_add_fetch(&lifted, 1, __ATOMIC_RELAXED);
	else if (strncmp(line, "WARNING: ", 9) == 0)
		__atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
}

static int run(void)
{
	struct devres_ledger l0, l1;
	pthread_t c, d, k;
	int nodes0 = tree_check(&iomem_resource), w0, warns, ret;

	alarm(ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (int i = 0; i < NSLOT; i++)
		slots[i] = (struct resource)DEFINE_RES_MEM_NAMED(
			BASE + (resource_size_t)i * SLOT, SLOT, "slot");
	owner = platform_device_register_simple("lift-race", 0, NULL, 0);
	if (IS_ERR(owner))
		return 2;
	devres_ledger_snapshot(&l0);
	devres_set_log_sink(sink, NULL);
	w0 = devres_warn_count();
	pthread_create(&c, NULL, claimer, (void *)3);
	pthread_create(&d, NULL, describer, NULL);
	pthread_create(&k, NULL, checker, NULL);
	for (int ms = 0;
	     ms < RUN_MS && __atomic_load_n(&lifted, __ATOMIC_RELAXED) < LIFTS;
	     ms++)
		usleep(1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(c, NULL);
	pthread_join(d, NULL);
	pthread_join(k, NULL);
	(void)devres_release_all(&owner->dev);
	warns = devres_warn_count() - w0;
	devres_set_log_sink(NULL, NULL);
	if (broken || warns != lifted)
		fprintf(stderr, "broken %d, warns %d, lifts %d\n", broken,
			warns, lifted);
	ret = broken || warns != lifted || !lifted;
	devres_ledger_snapshot(&l1);
	if (devres_ledger_diff(&l0, &l1, stderr) ||
	    tree_check(&iomem_resource) != nodes0)
		ret |= fprintf(stderr, "ranges left\n") > 0;
	for (int i = 0; i < NSLOT; i++)
		if (slots[i].parent)
			ret |= fprintf(stderr, "slot %d still in\n", i) > 0;
	if (!request_mem_region(BASE, NSLOT * SLOT, "all"))
		ret |= fprintf(stderr, "the slots are not free\n") > 0;
	else
		release_mem_region(BASE, NSLOT * SLOT);
	platform_device_unregister(owner);
	fprintf(stderr, "%d lifts\n", lifted);
	return ret;
}

static void test_lift_managed_race(void **state)
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
		cmocka_unit_test(test_lift_managed_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
