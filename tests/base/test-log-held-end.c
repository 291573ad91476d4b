// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * A thread that ends while the log holds its lines (a hold is taken
 * around a subsystem's lock, and a DMA op or a callback run under it may
 * call pthread_exit()): its held lines are sent as it ends, not lost, and
 * the buffer they were kept in (a page, mapped at the first held line) is
 * given back, not left behind. Many such threads, one after the other:
 * each one's WARN is seen once, and the process's mappings do not grow
 * by a page a thread.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "base/subsys.h"
#include "testlib.h"

#define THREADS 300

static struct device *dev;
static int not_managed;

/* A WARN held by the log, then the thread's end inside the hold. */
static void *ends_holding(void *arg)
{
	(void)arg;
	devres__log_hold();
	devm_kfree(dev, &not_managed);
	pthread_exit(NULL);
}

/* The process's mapped bytes (VmSize), in KiB. */
static long vm_kib(void)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void one(void)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, ends_holding, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void lines_sent_and_page_given_back(void **state)
{
	long before, after;

	(void)state;
	dev = heap_dev(NULL, "held-end");
	assert_non_null(dev);
	assert_int_equal(t_device_add(dev), 0);
	start_log_capture();
	/* The first thread's stack, kept by glibc for the next: counted. */
	one();
	assert_int_equal(count_prefix("WARNING: held-end: devm_kfree:"), 1);
	before = vm_kib();
	for (int i = 1; i < THREADS; i++)
		one();
	after = vm_kib();
	assert_int_equal(count_prefix("WARNING: held-end: devm_kfree:"),
			 THREADS);
	devres_set_log_sink(NULL, NULL);
	/* A page a thread would be 1196 KiB; a little slack for the heap. */
	if (after - before > 256)
		fail_msg("VmSize grew by %ld KiB over %d threads",
			 after - before, THREADS - 1);
	t_device_del(dev);
	put_device(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_sent_and_page_given_back),
	};

	/* One line a WARN: 300 of them fit in the capture. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
