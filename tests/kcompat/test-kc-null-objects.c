// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile kcompat tsan */
/*
 * The compat calls that take an object pointer, given NULL or an
 * ERR_PTR() where the kernel would oops: one WARN naming the call, and
 * the call's "nothing" (false, 0, no wait), never a crash or a hang.
 * Queues too: a NULL queue is no longer the system's (system_wq is), so
 * queue_work(NULL, ...), queue_delayed_work(), mod_delayed_work(),
 * flush_workqueue(), drain_workqueue() and destroy_workqueue() of NULL
 * WARN; before, they went on the system's queue or did nothing, silently.
 * Work items through the macros too (queue_work() on system_wq), which
 * the generated hostile-args table does not reach. Cells: the calls x
 * {NULL, ERR_PTR(-EINVAL)}, each in a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <stdlib.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

static struct work_struct ok_work;
static struct delayed_work ok_dwork;
static int named;
static const char *want;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strstr(line, want))
		named++;
}

static void nop_fn(struct work_struct *w)
{
	(void)w;
}

/* clang-format off */
#define CALLS(X)                                                               \
	X(queue_work_wq, "queue_work", !queue_work((struct workqueue_struct *)p, &ok_work)) \
	X(queue_delayed_work_wq, "queue_delayed_work", !queue_delayed_work((struct workqueue_struct *)p, &ok_dwork, 1)) \
	X(mod_delayed_work_wq, "mod_delayed_work", !mod_delayed_work((struct workqueue_struct *)p, &ok_dwork, 1)) \
	X(flush_workqueue, "flush_workqueue", (flush_workqueue((struct workqueue_struct *)p), 1)) \
	X(drain_workqueue, "drain_workqueue", (drain_workqueue((struct workqueue_struct *)p), 1)) \
	X(destroy_workqueue, "destroy_workqueue", (destroy_workqueue((struct workqueue_struct *)p), 1)) \
	X(queue_work_w, "queue_work", !queue_work(system_wq, (struct work_struct *)p)) \
	X(schedule_work, "schedule_work", !schedule_work((struct work_struct *)p)) \
	X(cancel_work_sync, "cancel_work_sync", !cancel_work_sync((struct work_struct *)p)) \
	X(flush_work, "flush_work", !flush_work((struct work_struct *)p)) \
	X(work_pending, "work_pending", !work_pending((struct work_struct *)p)) \
	X(complete, "complete", (complete((struct completion *)p), 1)) \
	X(complete_all, "complete_all", (complete_all((struct completion *)p), 1)) \
	X(wait_for_completion, "wait_for_completion", (wait_for_completion((struct completion *)p), 1)) \
	X(wait_for_completion_timeout, "wait_for_completion_timeout", !wait_for_completion_timeout((struct completion *)p, 1)) \
	X(reinit_completion, "reinit_completion", (reinit_completion((struct completion *)p), 1)) \
	X(completion_done, "completion_done", (completion_done((struct completion *)p), 1)) \
	X(mutex_lock, "mutex_lock", (mutex_lock((struct mutex *)p), 1)) \
	X(mutex_unlock, "mutex_unlock", (mutex_unlock((struct mutex *)p), 1)) \
	X(mutex_trylock, "mutex_trylock", !mutex_trylock((struct mutex *)p)) \
	X(spin_lock, "spin_lock", (spin_lock((spinlock_t *)p), 1)) \
	X(spin_unlock, "spin_unlock", (spin_unlock((spinlock_t *)p), 1))
/* clang-format on */

#define ENUM(name, func, expr) E_##name,
enum {
	CALLS(ENUM) N_CALLS
};

#define NAME(name, func, expr) #name,
static const char *const call_name[] = { CALLS(NAME) };

#define FUNC(name, func, expr) func,
static const char *const call_func[] = { CALLS(FUNC) };

#define CASE(name, func, expr)                                                 \
	case E_##name:                                                         \
		return (expr);

/* True when the call returned its "nothing" (void calls: true). */
static bool run_call(int c, void *p)
{
	switch (c) {
		CALLS(CASE)
	}
	return false;
}

static void cell(int c, int bad, int unused)
{
	void *p = bad ? ERR_PTR(-EINVAL) : NULL;
	int warns;

	(void)unused;
	INIT_WORK(&ok_work, nop_fn);
	INIT_DELAYED_WORK(&ok_dwork, nop_fn);
	want = call_func[c];
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	CHECK(run_call(c, p));
	CHECK(devres_warn_count() == warns + 1);
	devres_set_log_sink(NULL, NULL);
	CHECK(named == 1);
	/* Nothing was queued: the items are idle. */
	CHECK(!work_pending(&ok_work));
	CHECK(!delayed_work_pending(&ok_dwork));
}

static void bad_objects(void **state)
{
	char name[64];
	int bad = 0;

	(void)state;
	for (int c = 0; c < N_CALLS; c++) {
		for (int b = 0; b < 2; b++) {
			snprintf(name, sizeof(name), "%s/%s", call_name[c],
				 b ? "ERR_PTR" : "NULL");
			bad += in_child(cell, c, b, 0, name);
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_objects),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
