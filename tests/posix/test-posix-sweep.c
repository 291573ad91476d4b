// SPDX-License-Identifier: MIT
/* ctest-labels: fault tsan */
/*
 * A setup function that acquires every kind of managed POSIX resource, swept
 * at each of its failure points: no leak by the ledger, and the kernel's own
 * view (/proc/self/fd, /proc/self/maps) agrees with the ledger after every
 * run and, after a successful one, before it is undone.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

#if defined(T_ASAN) || defined(T_TSAN)
/* The sanitizers' allocators map memory of their own at any time. */
#define EXACT_MAPS_COUNT 0
#else
#define EXACT_MAPS_COUNT 1
#endif

#define MARK "devres-sweep-mark"

/*
 * setup_all()'s fault points: two a call, one to adopt, five a thread (its
 * node, its handle, its eventfd, the record that catches a join or detach
 * by hand, made before the thread starts, and the thread itself).
 */
#define SETUP_POINTS 24

struct ctx {
	struct device *dev;
	size_t len;
	void *shared, *anon; /* the last successful run's mappings */
};

static int ticker(void *arg)
{
	int tfd = *(int *)arg;
	uint64_t ticks;

	while (devres_thread_wait_fd(tfd, POLLIN, -1) > 0)
		if (read(tfd, &ticks, sizeof(ticks)) < 0)
			break;
	return 0;
}

/* Acquires one of everything; no cleanup of its own anywhere. */
static int acquire_all(struct ctx *c)
{
	static const struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	struct device *dev = c->dev;
	struct devres_thread *t;
	int fd, dfd, mfd, efd, ret;
	static int tfd;
	void *p, *q;
	FILE *f;

	fd = devm_open(dev, "/dev/null", O_RDWR);
	if (fd < 0)
		return fd;
	dfd = devm_open(dev, "/tmp", O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return dfd;
	fd = devm_openat(dev, dfd, ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	/* Adopted: the descriptor is consumed even when this fails. */
	ret = devm_add_fd(dev, fcntl(fd, F_DUPFD_CLOEXEC, 0));
	if (ret)
		return ret;
	mfd = devm_memfd_create(dev, MARK, 0);
	if (mfd < 0)
		return mfd;
	if (ftruncate(mfd, (off_t)c->len))
		return -errno;
	p = devm_mmap(dev, NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      mfd, 0);
	if (IS_ERR(p))
		return (int)PTR_ERR(p);
	q = devm_mmap(dev, NULL, c->len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (IS_ERR(q))
		return (int)PTR_ERR(q);
	efd = devm_eventfd(dev, 0, EFD_NONBLOCK);
	if (efd < 0)
		return efd;
	tfd = devm_timerfd_create(dev, CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (tfd < 0)
		return tfd;
	if (timerfd_settime(tfd, 0, &its, NULL))
		return -errno;
	f = devm_fopen(dev, "/dev/null", "w");
	if (!f)
		return -errno;
	t = devm_thread_run(dev, ticker, &tfd, "ticker");
	if (IS_ERR(t))
		return (int)PTR_ERR(t);
	c->shared = p;
	c->anon = q;
	return 0;
}

/*
 * The device owns everything: when setting up fails half way, releasing
 * the owner is the whole error path, as the driver core does for a probe.
 */
static int setup_all(void *arg)
{
	struct ctx *c = arg;
	int ret = acquire_all(c);

	if (ret)
		devres_release_all(c->dev);
	return ret;
}

static void undo_all(void *arg)
{
	struct ctx *c = arg;

	assert_true(devres_release_all(c->dev) > 0);
}

static void test_sweep_everything(void **state)
{
	struct ctx c = { .dev = *state, .len = (size_t)2 * 4096 };
	struct devres_sweep_result r = { 0 };

	start_log_capture();
	assert_int_equal(devres_sweep(setup_all, undo_all, &c, &r), 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(r.points, SETUP_POINTS);
	assert_int_equal(count_prefix("sweep: 24 failure points, 0 leaks"), 1);
	assert_int_equal(count_prefix("WARNING"), 0);
}

struct maps {
	int lines;  /* every line */
	int marked; /* lines of the memfd named MARK */
	long marked_bytes;
};

/* Also tells whether [p, p + len) is wholly inside mapped lines. */
static struct maps read_maps(const void *p, size_t len, bool *ret_covered)
{
	uintptr_t want = (uintptr_t)p, end = want + len;
	struct maps m = { 0, 0, 0 };
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) != 2)
			continue;
		m.lines++;
		if (strstr(line, "memfd:" MARK)) {
			m.marked++;
			m.marked_bytes += (long)(hi - lo);
		}
		/* Lines are sorted: walk @want up through the ones it meets. */
		if (p && lo <= want && want < hi)
			want = hi < end ? hi : end;
	}
	fclose(f);
	if (ret_covered)
		*ret_covered = p && want == end;
	return m;
}

/*
 * The same sweep by hand, looking at the kernel's view after each run: the
 * descriptors and mappings it shows agree with the ledger's counts.
 */
static void test_proc_self_agrees_with_ledger(void **state)
{
	struct ctx c = { .dev = *state, .len = (size_t)3 * 4096 };
	struct devres_ledger base, now;
	struct maps m0, m;
	unsigned int n, successes = 0;
	bool covered;
	int fds0, ret;

	/* One run first: lazily made arenas and stack caches stay mapped. */
	assert_int_equal(setup_all(&c), 0);
	undo_all(&c);

	devres_ledger_snapshot(&base);
	fds0 = count_open_fds();
	m0 = read_maps(NULL, 0, NULL);
	assert_int_equal(m0.marked, 0);
	for (n = 1; n < 1000; n++) {
		bool reached;

		c.shared = c.anon = NULL;
		devres_fail_nth(n);
		ret = setup_all(&c);
		reached = devres_fail_nth_get() == 0;
		devres_fail_nth(0);
		if (ret == 0) {
			/* What is held now: the ledger and the kernel agree. */
			devres_ledger_snapshot(&now);
			assert_int_equal(count_open_fds() - fds0,
					 now.fds - base.fds);
			m = read_maps(c.anon, c.len, &covered);
			assert_true(covered);
			assert_int_equal(m.marked, 1);
			assert_int_equal(m.marked_bytes, (long)c.len);
			assert_int_equal(now.maps - base.maps, 2);
			assert_int_equal(now.map_bytes - base.map_bytes,
					 2 * (long)c.len);
			undo_all(&c);
			successes++;
		}
		/* After every run, failed or undone: all back, both views. */
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
		assert_int_equal(count_open_fds(), fds0);
		m = read_maps(c.anon, c.len, &covered);
		assert_false(covered);
		assert_int_equal(m.marked, 0);
		if (EXACT_MAPS_COUNT)
			assert_int_equal(m.lines, m0.lines);
		if (!reached)
			break;
	}
	assert_int_equal(n, SETUP_POINTS + 1);
	assert_int_equal(successes, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sweep_everything,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_proc_self_agrees_with_ledger, dev_setup,
			dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
