// SPDX-License-Identifier: MIT
/* ctest-labels: stress kcompat tsan */
/*
 * A work item in managed memory that is freed while it is live: every way
 * the memory goes (devm_kfree(), kfree(), a devm_krealloc() that moves
 * it, the unbind that releases the binding, a group's release, a failed
 * probe's release) against every state of the item:
 *
 *  - pending: queued again behind a run still in its function, the
 *    queued run not begun;
 *  - delayed: a delayed work a minute before its timer;
 *  - running: its function runs in the item's thread;
 *  - requeue: its function queued the item again, and runs on;
 *  - requeue-self: its function queued the item again, then frees the
 *    memory itself (the free's cancel must not wait for its own thread);
 *  - self: its own function frees the memory, not queued (the kernel
 *    allows it);
 *  - idle: it ran and ended;
 *  - cancelled: a delayed work cancelled before its timer.
 *
 * The first five are each one WARN, and the item is cancelled and waited
 * for before the memory goes: no run begins later, the function that ran
 * has returned when the free returns, and neither ASan nor TSan sees the
 * thread touch the freed block. The last three are no WARN. The item sits
 * inside the block, not at its start. A running function ends only once
 * the WARN is counted, so the free meets it running, whatever the load;
 * meanwhile it allocates and frees managed memory (kmalloc(), and of the
 * device unless it unbinds), whose locks the free must not hold while it
 * waits.
 *
 * Not in the table: a failed probe's release made by the item's own
 * function, which would have to be running before the probe that makes
 * it.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <devres/liveobj.h>
#include "kcompat/kctest.h"

enum state {
	S_PENDING,
	S_DELAYED,
	S_RUNNING,
	S_REQUEUE,
	S_REQUEUE_SELF,
	S_SELF,
	S_IDLE,
	S_CANCELLED,
	S_NR
};
enum path {
	P_DEVM_KFREE,
	P_KFREE,
	P_KREALLOC,
	P_UNBIND,
	P_GROUP,
	P_PROBE,
	P_NR
};

static const char *const state_name[S_NR] = {
	"pending",	"delayed", "running", "requeue",
	"requeue-self", "self",	   "idle",    "cancelled",
};
static const char *const path_name[P_NR] = {
	"devm_kfree", "kfree", "devm_krealloc", "unbind", "group", "probe",
};

struct lo {
	char head[40]; /* the items are inside the block */
	struct work_struct work;
	struct delayed_work dwork;
	char tail[24];
};

static struct platform_device *pdev;
static enum state cur_state;
static enum path cur_path;
static struct lo *cur; /* the block, until it is freed */
static void *moved;    /* where devm_krealloc() moved it */
static void *group_id; /* the group that holds it */
static int warn_base;  /* the count before the free */
static int inside;     /* the function began */
static int done;       /* the function returned */
static int runs;       /* runs begun */
static int runs_late;  /* runs begun after the free returned */
static int freed;      /* the free returned */
static int go;	       /* a function that frees its item may */
static int group_ret;  /* what devres_release_group() returned */

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

static bool busy(enum state s)
{
	return s == S_PENDING || s == S_DELAYED || s == S_RUNNING ||
	       s == S_REQUEUE || s == S_REQUEUE_SELF;
}

/* Up to 20 s of yielding until @flag is set; whether it was. */
static bool wait_for(int *flag)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (LOAD(*flag))
			return true;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 20);
	return LOAD(*flag);
}

/*
 * The way cur_path frees @k; by the test thread, or by @k's own work (so
 * no cmocka assertion here).
 */
static void free_block(struct lo *k)
{
	switch (cur_path) {
	case P_DEVM_KFREE:
		devm_kfree(&pdev->dev, k);
		break;
	case P_KFREE:
		kfree(k);
		break;
	case P_KREALLOC:
		/* The item's copy is not INIT_WORK()ed: it is only freed. */
		STORE(moved,
		      devm_krealloc(&pdev->dev, k, 64 * 1024, GFP_KERNEL));
		break;
	case P_UNBIND:
		device_release_driver(&pdev->dev);
		break;
	case P_GROUP:
		STORE(group_ret, devres_release_group(&pdev->dev, group_id));
		break;
	default:
		break; /* P_PROBE: the driver core frees it, the probe fails */
	}
}

static void work_fn(struct work_struct *work)
{
	struct lo *k = container_of(work, struct lo, work);
	enum state s = LOAD(cur_state);
	struct timespec t0, t;

	if (LOAD(freed))
		__atomic_fetch_add(&runs_late, 1, __ATOMIC_SEQ_CST);
	if (__atomic_fetch_add(&runs, 1, __ATOMIC_SEQ_CST) && s == S_REQUEUE) {
		/* A run after the first: the test already met the item. */
		schedule_work(work);
		return;
	}
	if (s == S_REQUEUE || s == S_REQUEUE_SELF)
		schedule_work(work);
	if (s == S_SELF || s == S_REQUEUE_SELF) {
		STORE(inside, 1);
		/* Once the test is ready: an unbind waits for the bind. */
		(void)wait_for(&go);
		free_block(k);
		STORE(done, 1);
		return;
	}
	STORE(inside, 1);
	if (s != S_PENDING && s != S_RUNNING && s != S_REQUEUE) {
		STORE(done, 1);
		return;
	}
	/* Until the free met the item (its WARN), 20 s at most. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/*
		 * Not on a device being unbound: a block it took would go
		 * with the binding, before this frees it.
		 */
		if (LOAD(cur_path) != P_UNBIND && LOAD(cur_path) != P_PROBE)
			devm_kfree(&pdev->dev,
				   devm_kmalloc(&pdev->dev, 16, GFP_KERNEL));
		kfree(kmalloc(16, GFP_KERNEL));
		usleep(100);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (devres_warn_count() == LOAD(warn_base) &&
		 t.tv_sec - t0.tv_sec < 20);
	STORE(done, 1);
}

static void dwork_fn(struct work_struct *work)
{
	(void)work;
	__atomic_fetch_add(&runs, 1, __ATOMIC_SEQ_CST);
	if (LOAD(freed))
		__atomic_fetch_add(&runs_late, 1, __ATOMIC_SEQ_CST);
}

/* Puts @k's items in state @s. */
static void arrange(struct lo *k, enum state s)
{
	switch (s) {
	case S_DELAYED:
	case S_CANCELLED:
		INIT_DELAYED_WORK(&k->dwork, dwork_fn);
		assert_true(schedule_delayed_work(&k->dwork, 60000));
		if (s == S_CANCELLED)
			assert_true(cancel_delayed_work_sync(&k->dwork));
		return;
	default:
		INIT_WORK(&k->work, work_fn);
		assert_true(schedule_work(&k->work));
	}
	if (s == S_SELF || s == S_REQUEUE_SELF)
		return;
	if (s == S_IDLE) {
		flush_work(&k->work);
		assert_true(LOAD(done));
		return;
	}
	assert_true(wait_for(&inside));
	/* Queued again behind the run, which goes on until the WARN. */
	if (s == S_PENDING)
		assert_true(schedule_work(&k->work));
}

static int lo_probe(struct platform_device *p)
{
	struct lo *k = devm_kzalloc(&p->dev, sizeof(*k), GFP_KERNEL);

	if (!k)
		return -ENOMEM;
	STORE(cur, k);
	arrange(k, LOAD(cur_state));
	return LOAD(cur_path) == P_PROBE ? -EIO : 0;
}

static struct platform_driver lo_driver = {
	.probe = lo_probe,
	.driver = { .name = "kc-lo" },
};

static struct lo *alloc_block(void)
{
	struct lo *k = NULL;

	switch (cur_path) {
	case P_KFREE:
		k = kzalloc(sizeof(*k), GFP_KERNEL);
		break;
	case P_GROUP:
		group_id = devres_open_group(&pdev->dev, NULL, GFP_KERNEL);
		assert_non_null(group_id);
		k = devm_kzalloc(&pdev->dev, sizeof(*k), GFP_KERNEL);
		devres_close_group(&pdev->dev, group_id);
		break;
	default:
		k = devm_kzalloc(&pdev->dev, sizeof(*k), GFP_KERNEL);
	}
	assert_non_null(k);
	STORE(cur, k);
	return k;
}

static void run_cell(enum path p, enum state s)
{
	int expect = busy(s) ? 1 : 0, warns;
	struct lo *k;

	STORE(cur_path, p);
	STORE(cur_state, s);
	STORE(moved, NULL);
	STORE(inside, 0);
	STORE(done, 0);
	STORE(runs, 0);
	STORE(runs_late, 0);
	STORE(freed, 0);
	STORE(go, 0);
	STORE(group_ret, -1);
	warns = devres_warn_count();
	STORE(warn_base, warns);
	if (p == P_UNBIND || p == P_PROBE) {
		/* Binds, and so probes, pdev; a failed probe releases. */
		assert_int_equal(platform_driver_register(&lo_driver), 0);
		assert_int_equal(pdev->dev.driver != NULL, p == P_UNBIND);
		k = LOAD(cur);
	} else {
		k = alloc_block();
		arrange(k, s);
	}
	if (s == S_SELF || s == S_REQUEUE_SELF) {
		STORE(go, 1);
		assert_true(wait_for(&done));
	} else if (p != P_PROBE)
		free_block(k);
	STORE(freed, 1);
	if (devres_warn_count() - warns != expect)
		fprintf(stderr, "%s x %s: %d WARNs, expected %d\n",
			path_name[p], state_name[s],
			devres_warn_count() - warns, expect);
	assert_int_equal(devres_warn_count() - warns, expect);
	/* The item is no longer live: its address only is compared. */
	assert_false(devres_liveobj_active(&k->work));
	assert_false(devres_liveobj_active(&k->dwork.work));
	/* What ran had returned when the free returned; nothing runs later. */
	if (s == S_RUNNING || s == S_PENDING || s == S_REQUEUE)
		assert_true(LOAD(done));
	kcompat_work_wait_finishing();
	usleep(1000);
	assert_int_equal(LOAD(runs_late), 0);
	if (s == S_DELAYED || s == S_CANCELLED)
		assert_int_equal(LOAD(runs), 0);
	if (s == S_RUNNING || s == S_REQUEUE_SELF)
		assert_int_equal(LOAD(runs), 1);
	/*
	 * The queued run may begin between the WARN, which ends the first,
	 * and the cancel: it too ended before the memory went.
	 */
	if (s == S_PENDING)
		assert_in_range(LOAD(runs), 1, 2);
	if (p == P_GROUP)
		assert_int_equal(LOAD(group_ret), 1);
	if (p == P_KREALLOC) {
		assert_non_null(LOAD(moved));
		assert_ptr_not_equal(LOAD(moved), k);
		devm_kfree(&pdev->dev, LOAD(moved));
	}
	if (p == P_UNBIND || p == P_PROBE) {
		assert_null(pdev->dev.driver);
		platform_driver_unregister(&lo_driver);
	}
	assert_int_equal(devres_warn_count() - warns, expect);
}

static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kc-lo", NULL, true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, NULL);
}

#define ROUNDS 3

static void every_path_every_state(void **state)
{
	(void)state;
	for (int r = 0; r < ROUNDS; r++)
		for (int p = 0; p < P_NR; p++)
			for (int s = 0; s < S_NR; s++)
				if (!(p == P_PROBE &&
				      (s == S_SELF || s == S_REQUEUE_SELF)))
					run_cell((enum path)p, (enum state)s);
}

/* The WARN names the device, the call, the object, its state and the fix. */
static void the_warn_says_what_and_where(void **state)
{
	char obj[64];

	(void)state;
	run_cell(P_DEVM_KFREE, S_DELAYED);
	snprintf(obj, sizeof(obj), "work_struct %p while it is queued",
		 (void *)&LOAD(cur)->dwork.work);
	assert_true(kc_said("kc-lo: devm_kfree: frees "));
	assert_true(kc_said(obj));
	assert_true(kc_said("cancel_work_sync() or devm_work_autocancel() "
			    "must come first"));
	run_cell(P_UNBIND, S_RUNNING);
	assert_true(kc_said("kc-lo: driver binding: frees work_struct"));
	assert_true(kc_said("while it is running in another thread"));
	run_cell(P_GROUP, S_REQUEUE);
	assert_true(kc_said("kc-lo: devres_release_group: frees work_struct"));
}

/*
 * In a child of fork(), the parent's block with a live delayed work is
 * not the child's to free (docs/fork.md): kfree() and devm_kfree() are
 * refused with their own WARN before any live object is looked at, so no
 * fixup runs in the child (it would wait for a thread that is not there),
 * and the parent's item is still live there. The parent then cancels and
 * frees it: no WARN.
 */
static void fork_child_cannot_free_the_parents(void **state)
{
	struct lo *a = kzalloc(sizeof(*a), GFP_KERNEL);
	struct lo *b = devm_kzalloc(&pdev->dev, sizeof(*b), GFP_KERNEL);
	int status, warns;
	pid_t child;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	STORE(freed, 0);
	STORE(runs, 0);
	INIT_DELAYED_WORK(&a->dwork, dwork_fn);
	INIT_DELAYED_WORK(&b->dwork, dwork_fn);
	assert_true(schedule_delayed_work(&a->dwork, 60000));
	assert_true(schedule_delayed_work(&b->dwork, 60000));
	warns = devres_warn_count();
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		int w = devres_warn_count();
		bool ok;

		alarm(20);
		kfree(a);
		ok = devres_warn_count() == w + 1;
		devm_kfree(&pdev->dev, b);
		ok = ok && devres_warn_count() == w + 2;
		ok = ok && devres_liveobj_active(&a->dwork.work) &&
		     devres_liveobj_active(&b->dwork.work);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(devres_liveobj_active(&a->dwork.work));
	assert_true(cancel_delayed_work_sync(&a->dwork));
	assert_true(cancel_delayed_work_sync(&b->dwork));
	kfree(a);
	devm_kfree(&pdev->dev, b);
	assert_int_equal(devres_warn_count(), warns);
	assert_int_equal(LOAD(runs), 0);
	kcompat_work_wait_finishing();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_path_every_state, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_warn_says_what_and_where,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			fork_child_cannot_free_the_parents, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
