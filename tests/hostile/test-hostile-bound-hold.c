// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * A binding hold (device_bound_get()) is a reference to the device, as an
 * open sysfs file holds its kobject. Its holder may lose the device while
 * it holds it: a store() that unregisters its own device, or deletes it
 * and puts the owner's reference. Then it ends its hold: by
 * device_bound_put(), or by ending its thread (returned, pthread_exit(),
 * cancelled), which puts it for it. In every cell the device is released
 * exactly once, at the end of the hold, never before (that put, and the
 * one at the thread's end, used to read the freed device).
 *
 * And in a child of fork(), the forking thread's holds are the parent's:
 * forgotten. Its end, or a device_bound_put() of the parent's device
 * (refused, one WARN), used to leave each hold recorded, and its end
 * put them again for ever. The child's own devices hold and put as usual.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"
#include "base/thread-end.h"
#include "hostile/cell-child.h"

static int hbh_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static struct platform_driver hbh_drv = {
	.probe = hbh_probe,
	.driver = { .name = "hbh" },
};

static int released;

static void hbh_release(struct device *dev)
{
	released++;
	free(container_of(dev, struct platform_device, dev));
}

/* A device of its own, registered and bound; NULL when it is not. */
static struct platform_device *new_pdev(const char *name, int id)
{
	struct platform_device *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->name = name;
	p->id = id;
	p->dev.release = hbh_release;
	if (platform_device_register(p)) {
		put_device(&p->dev);
		return NULL;
	}
	if (!device_is_bound(&p->dev)) {
		platform_device_unregister(p);
		return NULL;
	}
	return p;
}

/* How the holder loses its device. */
enum loss {
	BY_PLATFORM_UNREGISTER,
	BY_DEVICE_UNREGISTER,
	BY_DEL_AND_PUT,
	NR_LOSS
};

static const char *const loss_name[] = {
	"platform_device_unregister()",
	"device_unregister()",
	"platform_device_del() and the owner's put",
};

/* How the hold ends: by device_bound_put(), or by one of the thread ends. */
#define BY_BOUND_PUT NR_ENDING

static const char *hold_end_name(int end)
{
	return end == BY_BOUND_PUT ? "device_bound_put()" : ending_name[end];
}

struct cell {
	enum loss loss;
	int end;
	struct platform_device *p;
	int released_at_loss; /* what the holder saw right after the loss */
};

static void *holder(void *arg)
{
	struct cell *c = arg;
	struct platform_device *p = c->p;

	if (device_bound_get(&p->dev))
		return (void *)2;
	switch (c->loss) {
	case BY_PLATFORM_UNREGISTER:
		platform_device_unregister(p);
		break;
	case BY_DEVICE_UNREGISTER:
		device_unregister(&p->dev);
		break;
	default:
		platform_device_del(p);
		platform_device_put(p);
		break;
	}
	c->released_at_loss = released;
	if (c->end == BY_BOUND_PUT) {
		device_bound_put(&p->dev);
		return NULL;
	}
	end_thread_by((enum ending)c->end);
	return NULL;
}

/*
 * One cell, in a child process of its own: a cell that hangs (a hold put
 * for ever) or crashes fails alone, and the next cells still run. The
 * child's exit status is the first check that failed, 0 when none did.
 */
static int cell_in_child(int loss, int end)
{
	struct cell c = { .loss = (enum loss)loss, .end = end };
	struct timespec when;
	pthread_t t;
	void *ret = NULL;

	alarm(5);
	released = 0;
	if (platform_driver_register(&hbh_drv))
		return 8;
	c.p = new_pdev("hbh", 1);
	if (!c.p)
		return 9;
	start_capture();
	if (pthread_create(&t, NULL, holder, &c))
		return 10;
	/* Not join_within(): a failure here is this child's exit status. */
	clock_gettime(CLOCK_REALTIME, &when);
	when.tv_sec += 2;
	if (pthread_timedjoin_np(t, &ret, &when))
		return 17; /* the holder did not end */
	devres_set_log_sink(NULL, NULL);
	if (ret != NULL && ret != PTHREAD_CANCELED)
		return 11;
	/* Not released under the hold; released once, at its end. */
	if (c.released_at_loss != 0)
		return 12;
	if (released != 1)
		return 13;
	/* The unbind from the holder, and a thread's end with the hold. */
	if (cap.n != (end == BY_BOUND_PUT ? 1 : 2))
		return 14;
	if (!strstr(cap.line[0], "not waiting for that call"))
		return 15;
	if (end != BY_BOUND_PUT && !strstr(cap.line[1], "device_bound_get: a "
							"thread ended holding "
							"1 binding"))
		return 16;
	platform_driver_unregister(&hbh_drv);
	return 0;
}

static void every_loss_every_end(void **state)
{
	struct devres_ledger before, after;
	int failed = 0;

	(void)state;
	devres_ledger_snapshot(&before);
	for (int l = 0; l < NR_LOSS; l++)
		for (int e = 0; e <= BY_BOUND_PUT; e++) {
			int status = run_cell_in_child(cell_in_child, l, e);

			print_message("%s, then %s: %s (status %#x)\n",
				      loss_name[l], hold_end_name(e),
				      status ? "FAILED" : "ok", status);
			failed += status != 0;
		}
	assert_int_equal(failed, 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* What the child does with the holds its forking thread inherited. */
enum child_act {
	CHILD_ENDS,	  /* its forking thread returns */
	CHILD_EXITS,	  /* pthread_exit() */
	CHILD_PUTS,	  /* device_bound_put() of the parent's device */
	CHILD_OWN_DEVICE, /* holds and puts a device of its own, then ends */
	NR_CHILD_ACT
};

static const char *const child_act_name[] = {
	"the thread returns",
	"pthread_exit()",
	"device_bound_put() of the parent's device",
	"a hold of the child's own device",
};

static const struct {
	const char *name;
	int holds;
} fork_holds[] = {
	{ "one hold", 1 },
	{ "two holds of one device", 2 },
};

static struct platform_driver hbh_child_drv = {
	.probe = hbh_probe,
	.driver = { .name = "hbh-child" },
};

static int child_warns;
static int child_expected;
static int child_base;

static void child_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0)
		child_warns++;
}

/* The child's verdict, once its last thread has ended. */
static void child_check(void)
{
	_exit(child_warns == child_expected &&
			      devres_warn_count() - child_base == child_expected
		      ? 0
		      : 3);
}

struct fork_cell {
	struct platform_device *p;
	int holds;
	enum child_act act;
};

static void child_runs(const struct fork_cell *fc)
{
	alarm(5);
	child_warns = 0;
	child_base = devres_warn_count();
	child_expected = fc->act == CHILD_PUTS;
	devres_set_log_sink(child_sink, NULL);
	if (atexit(child_check))
		_exit(4);
	if (fc->act == CHILD_PUTS)
		device_bound_put(&fc->p->dev);
	if (fc->act == CHILD_OWN_DEVICE) {
		struct platform_device *own;

		if (platform_driver_register(&hbh_child_drv))
			_exit(5);
		own = calloc(1, sizeof(*own));
		if (!own)
			_exit(5);
		own->name = "hbh-child";
		own->id = 2;
		own->dev.release = hbh_release;
		if (platform_device_register(own) ||
		    device_bound_get(&own->dev))
			_exit(6);
		device_bound_put(&own->dev);
		platform_device_unregister(own);
		platform_driver_unregister(&hbh_child_drv);
		if (released != 1)
			_exit(7);
	}
	if (fc->act == CHILD_EXITS)
		pthread_exit(NULL);
}

static void *forker(void *arg)
{
	const struct fork_cell *fc = arg;
	int status;
	pid_t pid;

	for (int i = 0; i < fc->holds; i++)
		if (device_bound_get(&fc->p->dev))
			return (void *)-1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return (void *)-1;
	if (pid == 0) {
		child_runs(fc);
		/* Returning ends the child's last thread: exit(0). */
		return NULL;
	}
	if (waitpid(pid, &status, 0) != pid)
		return (void *)-1;
	for (int i = 0; i < fc->holds; i++)
		device_bound_put(&fc->p->dev);
	return (void *)(intptr_t)status;
}

static void child_forgets_parent_holds(void **state)
{
	struct devres_ledger before, after;
	int failed = 0;

	(void)state;
	devres_ledger_snapshot(&before);
	assert_int_equal(platform_driver_register(&hbh_drv), 0);
	for (size_t h = 0; h < sizeof(fork_holds) / sizeof(fork_holds[0]); h++)
		for (int a = 0; a < NR_CHILD_ACT; a++) {
			struct fork_cell fc = { .holds = fork_holds[h].holds,
						.act = (enum child_act)a };
			pthread_t t;
			void *ret;

			print_message("%s, %s\n", fork_holds[h].name,
				      child_act_name[a]);
			released = 0;
			fc.p = new_pdev("hbh", 3);
			assert_non_null(fc.p);
			assert_int_equal(pthread_create(&t, NULL, forker, &fc),
					 0);
			assert_int_equal(pthread_join(t, &ret), 0);
			/* 0: exited 0; a signal (the alarm) or 3: it spun. */
			print_message("  %s (status %#x)\n",
				      ret ? "FAILED" : "ok",
				      (int)(intptr_t)ret);
			failed += ret != NULL;
			/* The parent's holds are its own, still. */
			platform_device_unregister(fc.p);
			assert_int_equal(released, 1);
		}
	platform_driver_unregister(&hbh_drv);
	assert_int_equal(failed, 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_loss_every_end),
		cmocka_unit_test(child_forgets_parent_holds),
	};

	/* One line a WARN: the cells count them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
