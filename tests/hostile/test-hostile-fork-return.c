/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * fork() from inside a callback the library runs, whose child does not
 * _exit() but returns from the callback into the library: an interrupt's
 * primary handler (on the dispatcher) and its thread function, a managed
 * thread's function, and a devm action run by devres_release_all() with,
 * released after it, a managed thread, a revocable another thread is
 * reading, an interrupt handler or a region. The parent is alone, or has
 * another thread at work on the same line and device (synchronize_irq()
 * waiting for the forking handler, devres_find() on the device, its lock;
 * the dev build only: under the sanitizers a child forked while another
 * thread allocates deadlocks in their allocators).
 *
 * The child is a process whose one thread is the one that forked. The
 * interrupt threads serve the parent's lines, which are no lines in the
 * child: each used to go on waiting for the parent's interrupts for ever,
 * every signal blocked, so that not even alarm() ended the child (and
 * the parent's handler, waiting for it, held its line for good). Now
 * each ends there with one WARN, and the child exits 0. A managed
 * thread's function returning in the child ends the child's thread (the
 * child exits 0, no WARN: the thread is the program's); a release pass
 * of the parent's device going on in the child refuses the parent's
 * managed thread, handler, region and revocable, each with its WARN (the
 * revocable used to wait for the parent's reader, which never ends its
 * access in the child, and the child hung). The parent then finishes
 * what it was doing with no WARN and the ledger back at its start.
 *
 * Each cell runs in a child of its own under an alarm; a child of a cell
 * that has not ended within 5 s is killed and fails the cell.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <devres/devres.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "base/fork-park.h"
#include "hostile/cell-child.h"

enum row {
	R_HANDLER,
	R_THREAD_FN,
	R_MANAGED,
	R_ACTION_THREAD,
	R_ACTION_REVOCABLE,
	R_ACTION_IRQ,
	R_ACTION_REGION,
	NR_ROWS
};
enum col {
	C_ALONE,
	C_BUSY,
	NR_COLS
};

static const char *const rows[] = {
	"a primary handler",
	"a thread function",
	"a managed thread's function",
	"a devm action, a managed thread after it",
	"a devm action, a revocable being read after it",
	"a devm action, an irq handler after it",
	"a devm action, a region after it",
};
static const char *const cols[] = { "alone", "another thread at work" };

/* What the child of the fork must print, once (NULL: nothing). */
static const char *const child_warn[] = {
	"irq 1: the handler of 'forker' forked and returned in the child",
	"irq 1: the thread function of 'forker' forked and returned",
	NULL,
	"devm_thread_run: thread 'later' belongs to process",
	": not revoked",
	"devm_irq_release: irq 1 is not a line",
	"region [0x100-0x10f] belongs to process",
};

static pid_t cell_pid;
static int warn_pipe[2] = { -1, -1 };
static int irq_no;
static struct device dev;
static int forked_status = -1;

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
static struct revocable *rv;
static int rv_res;
static volatile int reading;

/* In the child of the fork: every log line it makes, through the pipe. */
static void sink(void *ctx, int level, const char *line)
{
	size_t len = strlen(line);

	(void)ctx;
	(void)level;
	if (getpid() == cell_pid) {
		fprintf(stderr, "parent: %s\n", line);
		return;
	}
	if (write(warn_pipe[1], line, len) != (ssize_t)len ||
	    write(warn_pipe[1], "\n", 1) != 1)
		_exit(3);
}

/* The child of the fork, back in the cell's own code: it ends there. */
static void back_in_cell(void)
{
	if (getpid() != cell_pid)
		_exit(0);
}

/*
 * Forks; the parent waits for the child and records how it ended; the
 * child returns, with the callback, into the library.
 */
static void fork_and_return(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		return;
	__atomic_store_n(&forked_status,
			 pid > 0 ? child_wait_ms(pid, 5000) : -1,
			 __ATOMIC_RELEASE);
}

static irqreturn_t handler(int irq, void *id)
{
	(void)irq;
	(void)id;
	fork_and_return();
	return IRQ_HANDLED;
}

static irqreturn_t primary(int irq, void *id)
{
	(void)irq;
	(void)id;
	return IRQ_WAKE_THREAD;
}

static int managed_fn(void *arg)
{
	(void)arg;
	fork_and_return();
	if (getpid() != cell_pid)
		return 0;
	while (!devres_thread_should_stop())
		poll(NULL, 0, 1);
	return 0;
}

static int later_fn(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		poll(NULL, 0, 1);
	return 0;
}

static void forking_action(void *data)
{
	(void)data;
	fork_and_return();
}

static void dev_release_res(struct device *d, void *res)
{
	(void)d;
	(void)res;
}

static void rv_release(void *res)
{
	(void)res;
}

static irqreturn_t later_handler(int irq, void *id)
{
	(void)irq;
	(void)id;
	return IRQ_HANDLED;
}

/* In an access of the revocable until the fork is over. */
static void *reader(void *arg)
{
	void *res = revocable_try_access(rv);

	(void)arg;
	__atomic_store_n(&reading, 1, __ATOMIC_RELEASE);
	while (forked_now() == -1)
		poll(NULL, 0, 1);
	if (res)
		revocable_access_end(rv);
	return NULL;
}

static void *busy(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&busy_stop, __ATOMIC_ACQUIRE)) {
		if (irq_no > 0)
			synchronize_irq((unsigned int)irq_no);
		(void)devres_find(&dev, dev_release_res, NULL, NULL);
	}
	return NULL;
}

static void dev_release(struct device *d)
{
	(void)d;
}

#define CELL_CHECK(x)                                                          \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#x);                                           \
			return 1;                                              \
		}                                                              \
	} while (0)

/* The lines the child of the fork sent that contain @want: how many. */
static int count_lines(const char *want)
{
	static char buf[8192];
	ssize_t n;
	size_t got = 0;
	int count = 0;

	while (got < sizeof(buf) - 1 &&
	       (n = read(warn_pipe[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	for (char *p = buf; (p = strstr(p, want)); p++)
		count++;
	return count;
}

static int cell(int row, int col)
{
	struct devres_ledger before, after;
	struct devres_thread *t = NULL;
	pthread_t worker, rd;
	int warns, lines, st;

	alarm(20);
	cell_pid = getpid();
	CELL_CHECK(pipe2(warn_pipe, O_CLOEXEC | O_NONBLOCK) == 0);
	devres_set_log_sink(sink, NULL);
	devres_ledger_snapshot(&before);
	device_initialize(&dev);
	dev.release = dev_release;
	CELL_CHECK(dev_set_name(&dev, "fork-return") == 0);
	if (row == R_HANDLER || row == R_THREAD_FN || row == R_ACTION_IRQ) {
		irq_no = irq_line_create("fork-return");
		CELL_CHECK(irq_no > 0);
	}
	warns = devres_warn_count();
	if (col == C_BUSY)
		CELL_CHECK(pthread_create(&worker, NULL, busy, NULL) == 0);
	switch (row) {
	case R_HANDLER:
		CELL_CHECK(devm_request_irq(&dev, (unsigned int)irq_no, handler,
					    0, "forker", NULL) == 0);
		break;
	case R_THREAD_FN:
		CELL_CHECK(devm_request_threaded_irq(&dev, (unsigned int)irq_no,
						     primary, handler, 0,
						     "forker", NULL) == 0);
		break;
	case R_MANAGED:
		t = devm_thread_run(&dev, managed_fn, NULL, "forker");
		CELL_CHECK(!IS_ERR(t));
		break;
	case R_ACTION_THREAD:
		CELL_CHECK(!IS_ERR(
			devm_thread_run(&dev, later_fn, NULL, "later")));
		break;
	case R_ACTION_REVOCABLE:
		rv = devm_revocable_create(&dev, &rv_res, rv_release);
		CELL_CHECK(rv);
		CELL_CHECK(pthread_create(&rd, NULL, reader, NULL) == 0);
		while (!__atomic_load_n(&reading, __ATOMIC_ACQUIRE))
			poll(NULL, 0, 1);
		break;
	case R_ACTION_IRQ:
		CELL_CHECK(devm_request_irq(&dev, (unsigned int)irq_no,
					    later_handler, 0, "later",
					    NULL) == 0);
		break;
	case R_ACTION_REGION:
		CELL_CHECK(devm_request_region(&dev, 0x100, 0x10, "later"));
		break;
	}
	if (row >= R_ACTION_THREAD)
		CELL_CHECK(devm_add_action(&dev, forking_action, NULL) == 0);
	if (row == R_HANDLER || row == R_THREAD_FN) {
		CELL_CHECK(irq_line_raise(irq_no) == 0);
		for (int ms = 0; ms < 10000 && forked_now() == -1; ms++)
			poll(NULL, 0, 1);
		synchronize_irq((unsigned int)irq_no);
	} else if (row == R_MANAGED) {
		for (int ms = 0; ms < 10000 && forked_now() == -1; ms++)
			poll(NULL, 0, 1);
	}
	CELL_CHECK(devres_release_all(&dev) >= 0);
	back_in_cell();
	if (row == R_ACTION_REVOCABLE)
		CELL_CHECK(pthread_join(rd, NULL) == 0);
	if (col == C_BUSY) {
		__atomic_store_n(&busy_stop, 1, __ATOMIC_RELEASE);
		CELL_CHECK(pthread_join(worker, NULL) == 0);
	}
	if (irq_no > 0)
		CELL_CHECK(irq_line_destroy(irq_no) == 0);
	(void)devres_release_all(&dev);
	put_device(&dev);

	/* The child of the fork ended, in time, with status 0. */
	st = forked_now();
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "the child of the fork: status %#x\n",
			(unsigned int)st);
		return 1;
	}
	/* Its WARN, once; no other line. */
	lines = count_lines(child_warn[row] ? child_warn[row] : "\n");
	if (lines != (child_warn[row] ? 1 : 0)) {
		fprintf(stderr, "the child of the fork: %d lines '%s'\n", lines,
			child_warn[row] ? child_warn[row] : "(any)");
		return 1;
	}
	/* The parent: no WARN, nothing left. */
	CELL_CHECK(devres_warn_count() == warns);
	devres_set_log_sink(NULL, NULL);
	devres_ledger_snapshot(&after);
	CELL_CHECK(devres_ledger_diff(&before, &after, stderr) == 0);
	return 0;
}

static int one(int row, int col)
{
	if (col == C_BUSY && FORK_PARK)
		return 0;
	return cell(row, col);
}

static void fork_return_cells(void **state)
{
	(void)state;
	run_cells_in_children(one, rows, NR_ROWS, cols, NR_COLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_return_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
