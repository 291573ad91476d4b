// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
/*
 * A child of vfork() calls the library before its _exit(): it shares the
 * parent's memory and runs on the parent's stack, with no fork handler
 * run. Each call that takes a device is refused before any lock or
 * allocation, with one WARN written straight to stderr's descriptor, and
 * a log line goes out the same way (docs/fork.md). The parent then finds
 * its state as it was: the ledger, the device's resources and
 * references, the WARN count, the list whole; and its next calls succeed
 * within a second (no lock left held). A cell per call (and all of them),
 * each with the parent alone or with another thread at work on a device
 * of its own; each cell in a child process under an alarm.
 *
 * ThreadSanitizer turns vfork() into fork(): there the child has memory
 * of its own, and the parent's device is refused as any device of a
 * parent is ("belongs to process N"); the busy column is not run (a child
 * of a parent with threads starts none under it, and this one would).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10

enum {
	C_KMALLOC = 1,
	C_RELEASE = 2,
	C_LOG = 4,
	C_GET = 8
};

static const char *const rows[] = { "devm_kmalloc", "devres_release_all",
				    "dev_err", "get_device", "all four" };
static const int row_calls[] = { C_KMALLOC, C_RELEASE, C_LOG, C_GET,
				 C_KMALLOC | C_RELEASE | C_LOG | C_GET };
static const char *const cols[] = { "parent alone", "another thread busy" };

static struct device cdev, busy_dev;
static volatile int busy_stop;

/* Another thread of the parent, in and out of the library throughout. */
static void *busy(void *arg)
{
	struct devres_stats st;

	(void)arg;
	while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED)) {
		void *p = devm_kmalloc(&busy_dev, 48, GFP_KERNEL);

		devres_get_stats(&busy_dev, &st);
		devm_kfree(&busy_dev, p);
	}
	return NULL;
}

/*
 * In the child of vfork(): each call must be refused. What it finds
 * wrong, as bits of its exit status; nothing else written.
 */
static int child_calls(int calls)
{
	int bad = 0;

	if ((calls & C_KMALLOC) && devm_kmalloc(&cdev, 32, GFP_KERNEL))
		bad |= C_KMALLOC;
	if ((calls & C_RELEASE) && devres_release_all(&cdev) != -ENODEV)
		bad |= C_RELEASE;
	if (calls & C_LOG)
		dev_err(&cdev, "a line from the child of vfork()");
	if ((calls & C_GET) &&
	    (get_device(&cdev) != &cdev ||
	     __atomic_load_n(&cdev.refcount, __ATOMIC_RELAXED) != 1))
		bad |= C_GET;
	return bad;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cell_fail(const char *what)
{
	fprintf(stderr, "  %s\n", what);
	return 1;
}

/* What the child wrote to stderr: the WARNs and the line, one each. */
static int check_output(int fd, int calls)
{
	static char out[16384];
	ssize_t n = read(fd, out, sizeof(out) - 1);
	int warns = !!(calls & C_KMALLOC) + !!(calls & C_RELEASE) +
		    !!(calls & C_GET);
#ifdef T_TSAN
	const char *why = "device belongs to process";
#else
	const char *why = "called in a child of vfork(), which shares the "
			  "parent's memory: refused, nothing touched";
#endif

	out[n > 0 ? n : 0] = '\0';
	if (count_substr(out, why) != warns) {
		fprintf(stderr, "child's stderr:\n%s", out);
		return cell_fail("not one WARN for each call");
	}
	if (count_substr(out, "a line from the child of vfork()") !=
	    !!(calls & C_LOG))
		return cell_fail("the child's log line is not there once");
	return 0;
}

/* Out of line: nothing of the cell's frame is live across the vfork(). */
static __attribute__((noinline)) pid_t vfork_calls(int calls)
{
	pid_t pid;

	/* The event tested: calls a child of vfork() may not make. */
	/* NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.vfork) */
	pid = vfork();
	if (pid == 0) {
		/* NOLINTNEXTLINE(clang-analyzer-unix.Vfork) */
		int bad = child_calls(calls);

		_exit(bad);
	}
	return pid;
}

static int cell(int row, int col)
{
	struct devres_ledger before, after;
	struct devres_stats st;
	int calls = row_calls[row], fds[2], saved, warns, status, ret = 0;
	pthread_t thr;
	double t0;
	pid_t pid;
	void *p;

	alarm(CELL_ALARM_S);
	if (init_dev(&cdev, "vfork-cell") || init_dev(&busy_dev, "busy"))
		return cell_fail("init");
	if (!devm_kmalloc(&cdev, 64, GFP_KERNEL) ||
	    !devm_kmalloc(&cdev, 16, GFP_KERNEL))
		return cell_fail("the parent's resources");
	devres_ledger_snapshot(&before);
	warns = devres_warn_count();
	if (col == 1 && pthread_create(&thr, NULL, busy, NULL))
		return cell_fail("thread");
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return cell_fail("pipe");
	saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	pid = vfork_calls(calls);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[1]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return cell_fail("vfork");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "  child status %#x\n", status);
		ret = 1;
	}
	ret |= check_output(fds[0], calls);
	close(fds[0]);
	if (col == 1) {
		__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
		pthread_join(thr, NULL);
	}
	devres_ledger_snapshot(&after);
	if (devres_ledger_diff(&before, &after, stderr))
		ret |= cell_fail("the parent's ledger changed");
	devres_get_stats(&cdev, &st);
	if (st.allocs != 2 || st.total_size != 80)
		ret |= cell_fail("the parent's device changed");
	if (cdev.refcount != 1)
		ret |= cell_fail("the parent's reference count changed");
	if (devres_check(&cdev))
		ret |= cell_fail("the parent's list is broken");
	if (devres_warn_count() != warns)
		ret |= cell_fail("the parent's WARN count changed");

	/* No lock left held: the parent's next calls, within a second. */
	t0 = now_s();
	p = devm_kmalloc(&cdev, 8, GFP_KERNEL);
	devm_kfree(&cdev, p);
	dev_dbg(&cdev, "the parent goes on");
	if (get_device(&cdev) != &cdev)
		ret |= cell_fail("get_device");
	put_device(&cdev);
	devres_set_log_sink(NULL, NULL);
	if (!p || devres_release_all(&cdev) != 2 ||
	    devres_release_all(&busy_dev) != 0)
		ret |= cell_fail("the parent's calls after the child");
	if (now_s() - t0 > 1.0)
		ret |= cell_fail("the parent's calls took more than a second");
	if (devres_warn_count() != warns)
		ret |= cell_fail("the parent's calls WARNed");
	put_device(&cdev);
	put_device(&busy_dev);
	return ret;
}

static int one(int row, int col)
{
#ifdef T_TSAN
	if (col == 1)
		return 0;
#endif
	return cell(row, col);
}

static void test_vfork_child_calls(void **state)
{
	(void)state;
	run_cells_in_children(one, rows, (int)(sizeof(rows) / sizeof(*rows)),
			      cols, (int)(sizeof(cols) / sizeof(*cols)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vfork_child_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
