// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * A device renamed by one thread while others read its name.
 *
 * dev_set_name() on a device initialized and not added is lawful, from
 * any thread; so are dev_name(), a WARN naming the device and dev_err()
 * on it. One thread renames the device in a loop (names of changing
 * lengths, so that freed memory is soon reused) while two others read
 * the name, each cell one way, the last cell all three ways at once:
 *
 *   dev_name() and strlen() of what it returned;
 *   devres_warn() on the device, its line naming the device;
 *   dev_err() on the device, its line naming the device.
 *
 * Every name read, and every line's name, is one the device was given,
 * whole; every WARN is counted; the device's release frees every name it
 * had (the sanitizers' leak check). Before, a rename freed the name it
 * replaced at once: a reader that had loaded the pointer read freed
 * memory (AddressSanitizer: heap-use-after-free; ThreadSanitizer: a data
 * race on the name and on the pointer).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"
#include "rounds.h"

#define PREFIX "rename-"
#define WARN_FUNC "rename_reader"
#define WARN_WHY "a WARN naming the device"
#define ERR_MSG "a line naming the device"
#define NR_READERS 3

enum way {
	W_NAME,
	W_WARN,
	W_ERR,
	NR_WAYS
};

static struct device dev;
static int done;	    /* the renamer has finished */
static long bad;	    /* names or lines not whole */
static long warn_lines;	    /* WARN lines seen by the sink */
static long err_lines;	    /* dev_err() lines seen by the sink */
static long calls[NR_WAYS]; /* reads made, each way */

/* The length of the name at @s: PREFIX and digits; 0 if not that. */
static size_t name_len(const char *s)
{
	size_t n = sizeof(PREFIX) - 1;

	if (strncmp(s, PREFIX, n) != 0 || !isdigit((unsigned char)s[n]))
		return 0;
	while (isdigit((unsigned char)s[n]))
		n++;
	return n;
}

static void count(long *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* Called by every reader thread: counts in atomics only. */
static void sink(void *ctx, int level, const char *line)
{
	size_t n;

	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0) {
		n = name_len(line + 9);
		if (!n ||
		    strcmp(line + 9 + n, ": " WARN_FUNC ": " WARN_WHY) != 0)
			count(&bad);
		count(&warn_lines);
	} else if (strstr(line, ERR_MSG)) {
		n = name_len(line);
		if (!n || strcmp(line + n, ": " ERR_MSG) != 0)
			count(&bad);
		count(&err_lines);
	}
	/* Anything else (a debug build's backtrace) is not ours. */
}

static void read_once(enum way w)
{
	const char *s;

	switch (w) {
	case W_NAME:
		s = dev_name(&dev);
		if (!name_len(s) || name_len(s) != strlen(s))
			count(&bad);
		break;
	case W_WARN:
		devres_warn(&dev, WARN_FUNC, WARN_WHY);
		break;
	case W_ERR:
		dev_err(&dev, ERR_MSG "\n");
		break;
	case NR_WAYS:
		break;
	}
	count(&calls[w]);
}

static void *reader(void *arg)
{
	enum way w = (enum way)(intptr_t)arg;

	/* One read at least, however the threads are scheduled. */
	do
		read_once(w);
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE));
	return NULL;
}

/* Each way of @ways has made MIN_READS reads. */
#define MIN_READS 200

static bool enough(const enum way *ways, int nr)
{
	for (int i = 0; i < nr; i++)
		if (__atomic_load_n(&calls[ways[i]], __ATOMIC_RELAXED) <
		    MIN_READS)
			return false;
	return true;
}

static int released;

static void dev_release(struct device *d)
{
	(void)d;
	released++;
}

/*
 * Renames @dev while the readers of @ways read it: the rounds, and on
 * until each way has read MIN_READS times (a WARN is slower than a rename).
 */
static void renamed_while_read(const enum way *ways, int nr)
{
	long rounds = test_race_rounds("RENAME_ROUNDS", 20000);
	struct devres_ledger base, now;
	pthread_t t[NR_READERS];
	int w0 = devres_warn_count();

	devres_ledger_snapshot(&base);
	memset(&dev, 0, sizeof(dev));
	dev.release = dev_release;
	device_initialize(&dev);
	assert_int_equal(dev_set_name(&dev, PREFIX "%d", 0), 0);
	done = 0;
	bad = warn_lines = err_lines = 0;
	memset(calls, 0, sizeof(calls));
	released = 0;
	devres_set_log_sink(sink, NULL);
	for (int i = 0; i < nr; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader,
						(void *)(intptr_t)ways[i]),
				 0);
	for (long r = 1; r <= rounds || !enough(ways, nr); r++)
		/* From 1 to 24 digits: names of changing sizes. */
		assert_int_equal(dev_set_name(&dev, PREFIX "%0*ld",
					      (int)(r % 24) + 1, r),
				 0);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++)
		pthread_join(t[i], NULL);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(bad, 0);
	assert_int_equal(warn_lines, calls[W_WARN]);
	assert_int_equal(err_lines, calls[W_ERR]);
	assert_int_equal(devres_warn_count() - w0, calls[W_WARN]);
	assert_int_not_equal(name_len(dev_name(&dev)), 0);
	put_device(&dev);
	assert_int_equal(released, 1);
	devres_ledger_snapshot(&now);
	assert_int_equal(now.devices, base.devices);
}

static void by_dev_name(void **state)
{
	static const enum way w[] = { W_NAME, W_NAME };

	(void)state;
	renamed_while_read(w, 2);
}

static void by_warn(void **state)
{
	static const enum way w[] = { W_WARN, W_WARN };

	(void)state;
	renamed_while_read(w, 2);
}

static void by_dev_err(void **state)
{
	static const enum way w[] = { W_ERR, W_ERR };

	(void)state;
	renamed_while_read(w, 2);
}

static void all_ways(void **state)
{
	static const enum way w[] = { W_NAME, W_WARN, W_ERR };

	(void)state;
	renamed_while_read(w, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(by_dev_name),
		cmocka_unit_test(by_warn),
		cmocka_unit_test(by_dev_err),
		cmocka_unit_test(all_ways),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
