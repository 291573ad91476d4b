// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * fork() from inside a compat work function whose child does not _exit()
 * but returns, into the item's thread: a work item on the system's queue,
 * a delayed work, an item on a workqueue of the driver's own (rows); the
 * item not queued again, queued again by its function before the fork
 * (a poll that re-arms itself), or with another thread of the parent
 * queueing it again and again across the fork (the dev build only: under
 * the sanitizers a child forked while another thread allocates deadlocks
 * in their allocators) (columns).
 *
 * In the child that thread is the child's one thread, and every item it
 * serves is the parent's: it used to go on serving them, running the
 * parent's re-queued item again in the child (and taking the item's lock,
 * which a thread of the parent may have held at the fork, with every
 * signal blocked). Now it ends at once with one WARN; the child exits 0
 * having run the function once, and the parent's item runs on in the
 * parent, with no WARN there.
 *
 * Each cell runs in a child of its own under an alarm; the child of the
 * fork is killed if it has not ended within 5 s, and fails the cell.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/workqueue.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "base/fork-park.h"

enum row {
	R_WORK,
	R_DELAYED,
	R_OWN_QUEUE,
	NR_ROWS
};
enum col {
	C_ONCE,
	C_REARMED,
	C_BUSY,
	NR_COLS
};

static const char *const rows[] = { "work", "delayed work",
				    "work on a queue of its own" };
static const char *const cols[] = { "once", "re-armed before the fork",
				    "queued by another thread" };

static pid_t cell_pid;
static int row_now, col_now;
static int report[2] = { -1, -1 };
static struct work_struct work;
static struct delayed_work dwork;
static struct workqueue_struct *own_wq;
static int runs;
static int forked_status = -2;

static int forked_now(void)
{
	return __atomic_load_n(&forked_status, __ATOMIC_ACQUIRE);
}

/*
 * The child of the fork ends by its thread's end, which is exit(): its
 * copy of the parent's state is no leak of its own.
 */
/* NOLINTBEGIN(bugprone-reserved-identifier): the sanitizer's name. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return getpid() != cell_pid;
}
/* NOLINTEND(bugprone-reserved-identifier) */
static volatile int busy_stop;

/* The child of the fork: its log lines and its runs, through the pipe. */
static void sink(void *ctx, int level, const char *line)
{
	size_t len = strlen(line);

	(void)ctx;
	(void)level;
	if (getpid() == cell_pid) {
		fprintf(stderr, "parent: %s\n", line);
		return;
	}
	if (write(report[1], line, len) != (ssize_t)len ||
	    write(report[1], "\n", 1) != 1)
		_exit(3);
}

static void queue_it(void)
{
	if (row_now == R_WORK)
		schedule_work(&work);
	else if (row_now == R_DELAYED)
		schedule_delayed_work(&dwork, 0);
	else
		queue_work(own_wq, &work);
}

static void fn(struct work_struct *w)
{
	static const char ran[] = "RUN AGAIN\n";
	pid_t pid;

	(void)w;
	if (getpid() != cell_pid) {
		/* The parent's item run again in the child. */
		if (write(report[1], ran, sizeof(ran) - 1) < 0)
			_exit(3);
		return;
	}
	if (__atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED) > 1)
		return;
	if (col_now == C_REARMED)
		queue_it();
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		return;
	__atomic_store_n(&forked_status,
			 pid > 0 ? child_wait_ms(pid, 5000) : -1,
			 __ATOMIC_RELEASE);
}

static void *busy(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&busy_stop, __ATOMIC_ACQUIRE)) {
		queue_it();
		sched_yield();
	}
	return NULL;
}

/* What the child of the fork sent, read once. */
static char sent[8192];

static void read_sent(void)
{
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(sent) - 1 &&
	       (n = read(report[0], sent + got, sizeof(sent) - 1 - got)) > 0)
		got += (size_t)n;
	sent[got] = '\0';
}

/* How many times @want is in it. */
static int count(const char *want)
{
	int c = 0;

	for (const char *p = sent; (p = strstr(p, want)); p++)
		c++;
	return c;
}

static void cell(int row, int col, int unused)
{
	pthread_t worker;
	int warns, st;

	(void)unused;
	cell_pid = getpid();
	row_now = row;
	col_now = col;
	CHECK(pipe2(report, O_CLOEXEC | O_NONBLOCK) == 0);
	devres_set_log_sink(sink, NULL);
	INIT_WORK(&work, fn);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): in the header's macro */
	INIT_DELAYED_WORK(&dwork, fn);
	if (row == R_OWN_QUEUE) {
		own_wq = alloc_workqueue("fork-return", 0, 0);
		CHECK(own_wq);
	}
	warns = devres_warn_count();
	queue_it();
	if (col == C_BUSY)
		CHECK(pthread_create(&worker, NULL, busy, NULL) == 0);
	for (int ms = 0; ms < 10000 && forked_now() == -2; ms++)
		poll(NULL, 0, 1);
	if (col == C_BUSY) {
		__atomic_store_n(&busy_stop, 1, __ATOMIC_RELEASE);
		CHECK(pthread_join(worker, NULL) == 0);
	}
	if (row == R_DELAYED)
		flush_delayed_work(&dwork);
	else
		flush_work(&work);
	if (own_wq)
		destroy_workqueue(own_wq);
	st = forked_now();
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "cell %s / %s: the child of the fork: %#x\n",
			rows[row], cols[col], (unsigned int)st);
		_exit(1);
	}
	/* One WARN in the child, and no second run there. */
	read_sent();
	CHECK(count("forked and returned in the child: the thread is the "
		    "parent's") == 1);
	CHECK(count("RUN AGAIN") == 0);
	/* In the parent: the re-armed run too. */
	CHECK(__atomic_load_n(&runs, __ATOMIC_RELAXED) >=
	      (col == C_REARMED ? 2 : 1));
	CHECK(devres_warn_count() == warns);
	devres_set_log_sink(NULL, NULL);
}

static void fork_return_cells(void **state)
{
	int failed = 0;

	(void)state;
	for (int r = 0; r < NR_ROWS; r++) {
		for (int c = 0; c < NR_COLS; c++) {
			if (c == C_BUSY && FORK_PARK)
				continue;
			failed += in_child(cell, r, c, 0, rows[r]);
		}
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_return_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
