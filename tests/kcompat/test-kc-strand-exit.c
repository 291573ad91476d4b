// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat fault tsan */
/*
 * A work item that no thread could be had for (the spawner's fault point
 * failed) and that nothing flushes, drains, destroys or cancels, up to
 * the program's exit: queued on the system's queue with schedule_work(),
 * queue_work() and schedule_delayed_work(), and on a queue of the
 * program's that is never destroyed. Each way runs in a child that
 * exits with exit(): the layer's exit handler takes the item back, with
 * one WARN naming it, and the child's own handler, which runs after it,
 * checks that the work never ran, that the item is no longer pending and
 * that the ledger is where it was before the queue call. The parent
 * reads the child's log: exactly that one WARN. Before, the item stayed
 * pending on the list of items waiting for a thread, without a word.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/workqueue.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>

enum way {
	SCHEDULE_WORK,
	QUEUE_WORK_SYSTEM,
	SCHEDULE_DELAYED_WORK,
	QUEUE_WORK_OWN,
	NR_WAYS
};

static const char *const way_name[] = {
	"schedule_work",
	"queue_work on system_wq",
	"schedule_delayed_work",
	"queue_work on a queue never destroyed",
};

static struct work_struct item;
static struct delayed_work ditem;
static struct devres_ledger before;
static volatile int ran;
static enum way way;

static void fn(struct work_struct *w)
{
	(void)w;
	ran = 1;
}

/* The child's last word, after the layer's exit handler. */
static void check_at_exit(void)
{
	struct devres_ledger now;
	struct work_struct *w = way == SCHEDULE_DELAYED_WORK ? &ditem.work
							     : &item;

	devres_ledger_snapshot(&now);
	if (ran)
		_exit(10);
	if (work_pending(w))
		_exit(11);
	if (devres_ledger_diff(&before, &now, stderr))
		_exit(12);
	_exit(0);
}

static void child(void)
{
	struct workqueue_struct *wq = NULL;
	bool queued = false;

	/* Registered first, so it runs after the layer's own. */
	if (atexit(check_at_exit))
		_exit(20);
	if (way == QUEUE_WORK_OWN && !(wq = alloc_workqueue("never", 0, 0)))
		_exit(21);
	INIT_WORK(&item, fn);
	INIT_DELAYED_WORK(&ditem, fn);
	devres_ledger_snapshot(&before);
	/* The spawner's record fails: the item waits for a thread. */
	devres_fail_nth(1);
	switch (way) {
	case SCHEDULE_WORK:
		queued = schedule_work(&item);
		break;
	case QUEUE_WORK_SYSTEM:
		queued = queue_work(system_wq, &item);
		break;
	case SCHEDULE_DELAYED_WORK:
		queued = schedule_delayed_work(&ditem, 1);
		break;
	case QUEUE_WORK_OWN:
		queued = queue_work(wq, &item);
		break;
	default:
		break;
	}
	if (!queued || devres_fail_nth_get())
		_exit(22);
	/* Still waiting: nothing else will start it. */
	usleep(50000);
	if (ran)
		_exit(23);
	exit(0);
}

static void strands(void **state)
{
	(void)state;
	for (way = 0; way < NR_WAYS; way++) {
		char log[4096] = "";
		int fds[2], status;
		ssize_t n, got = 0;
		pid_t pid;

		print_message("%s\n", way_name[way]);
		assert_int_equal(pipe(fds), 0);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			close(fds[0]);
			if (dup2(fds[1], STDERR_FILENO) < 0)
				_exit(30);
			child();
		}
		close(fds[1]);
		while ((n = read(fds[0], log + got, sizeof(log) - 1 - got)) > 0)
			got += n;
		close(fds[0]);
		log[got] = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("%s: child status %#x, log: %s", way_name[way],
				 status, log);
		/* One WARN, the exit handler's, and no other. */
		if (strstr(log, "WARNING: ") != log ||
		    strstr(log + 1, "WARNING: ") ||
		    !strstr(log, "(no device): exit: work ") ||
		    !strstr(log, "was queued, but no thread could be had for "
				 "it and nothing flushed it: taken back unrun"))
			fail_msg("%s: log: %s", way_name[way], log);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strands),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
