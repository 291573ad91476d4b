// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * Every managed acquisition that takes a device, alone and followed by
 * the managed call that gives it back (states-calls.h), made on a
 * platform device in each state of its life: zeroed, initialized and
 * never added, added and unbound, inside its probe, bound, inside a
 * release callback of its binding while the unbind releases it, inside
 * its remove(), deleted with a reference still held, inside a release
 * callback of its last put, released, and from another thread while
 * the device is being unbound.
 *
 * On a device alive the call works with no WARN (docs/devres.md: a
 * release callback may use devres on its own device; what it adds while
 * its pass runs is released by a later one; docs/driver-model.md: what
 * is acquired unbound or deleted is the device's, released at its
 * deletion or its last put). On a zeroed or released device it is
 * refused with one WARN, and so is the release call given nothing.
 * Either way, once the device is gone the ledger is back at its
 * baseline, the window, the line and the ports are free again (the
 * fixture's removal fails otherwise), and the device was released once.
 *
 * Each cell runs in a child of its own under an alarm (cell-child.h).
 * STATES_CALLS_TABLE=1 prints what each cell got.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"
#include "hostile/states-calls.h"

/* The device's states, in docs/driver-model.md's order where they are. */
enum st {
	S_ZEROED,
	S_INITIALIZED,
	S_ADDED,
	S_PROBING,
	S_BOUND,
	S_UNBIND_CB,
	S_PROBE_FAIL_CB,
	S_DEL_CB,
	S_REMOVE,
	S_DELETED_HELD,
	S_LAST_PUT,
	S_RELEASED,
	S_THREAD_REMOVE,
	S_THREAD_UNBIND_CB,
	S_RACE_UNBIND,
	NR_ST
};

static const char *const st_names[NR_ST] = {
	"zeroed",
	"initialized",
	"added",
	"probing",
	"bound",
	"in a binding's release callback at unbind",
	"in a binding's release callback at a failed probe",
	"in the device's release callback at its deletion",
	"in remove()",
	"deleted, a reference held",
	"in a release callback of the last put",
	"released",
	"another thread, during remove()",
	"another thread, during a binding's release callback",
	"another thread, racing the unbind",
};

/* The device state the library keeps in its low four bits. */
enum dev_state {
	D_ZEROED,
	D_INITIALIZED,
	D_ADDED,
	D_BOUND = 4,
	D_RELEASED = 8
};

static struct platform_device pd;
static int pd_released;
static enum st cur_st;
static const struct st_call *cur_call;
static int hook_runs;
static bool got;
static int got_warns;

static void pd_release(struct device *dev)
{
	(void)dev;
	pd_released++;
}

static bool dead(enum st st)
{
	return st == S_ZEROED || st == S_RELEASED;
}

/*
 * The call under test, its WARNs counted. On a dead device the release
 * is made too, given nothing: it must be refused with its own WARN.
 */
static void do_call(void)
{
	static struct st_slot s;
	int w0 = devres_warn_count();

	memset(&s, 0, sizeof(s));
	hook_runs++;
	got = cur_call->acq(&pd.dev, &s);
	if (cur_call->rel && (got || dead(cur_st)))
		cur_call->rel(&pd.dev, &s);
	got_warns = devres_warn_count() - w0;
}

static void hook(enum st st)
{
	if (cur_st == st)
		do_call();
}

static void *thread_call(void *arg)
{
	(void)arg;
	do_call();
	return NULL;
}

static pthread_t other;
static bool other_left;

/*
 * The call made by another thread while this one is inside the unbind:
 * it must not wait for the unbind (a devres call takes the device's
 * list lock only), so it is given 5 s before the unbind goes on without
 * it (and the cell fails).
 */
static void other_thread_hook(enum st st)
{
	struct timespec ts;

	if (cur_st != st)
		return;
	if (pthread_create(&other, NULL, thread_call, NULL)) {
		other_left = true;
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	other_left = pthread_timedjoin_np(other, NULL, &ts) != 0;
}

static void unbind_cb(void *data)
{
	(void)data;
	hook(S_UNBIND_CB);
	other_thread_hook(S_THREAD_UNBIND_CB);
}

static void last_put_cb(void *data)
{
	(void)data;
	hook(S_LAST_PUT);
}

static void probe_fail_cb(void *data)
{
	(void)data;
	hook(S_PROBE_FAIL_CB);
}

static void del_cb(void *data)
{
	(void)data;
	hook(S_DEL_CB);
}

static int st_probe(struct platform_device *pdev)
{
	/* First on the binding's list: the unbind releases it last. */
	if (devm_add_action(&pdev->dev, unbind_cb, NULL))
		return -ENOMEM;
	hook(S_PROBING);
	if (cur_st != S_PROBE_FAIL_CB)
		return 0;
	/* Last: the failed probe's release runs it first. */
	if (devm_add_action(&pdev->dev, probe_fail_cb, NULL))
		return -ENOMEM;
	return -EIO;
}

static void st_remove(struct platform_device *pdev)
{
	(void)pdev;
	hook(S_REMOVE);
	other_thread_hook(S_THREAD_REMOVE);
}

static struct platform_driver st_drv = {
	.driver = { .name = "st" },
	.probe = st_probe,
	.remove = st_remove,
};

static void zero(void)
{
	memset(&pd, 0, sizeof(pd));
	pd.name = "st";
	pd.id = PLATFORM_DEVID_NONE;
	pd.dev.release = pd_release;
	pd.dev.init_name = "st";
	pd_released = 0;
}

static int dev_state(void)
{
	return __atomic_load_n(&pd.dev.state, __ATOMIC_ACQUIRE) & 0xf;
}

static void *race_fn(void *arg)
{
	pthread_barrier_t *b = arg;

	pthread_barrier_wait(b);
	do_call();
	return NULL;
}

/* Brings pd to @st; where the call is made from inside, it is made. */
static int reach(enum st st)
{
	struct resource res[] = {
		DEFINE_RES_MEM_NAMED(ST_PDEV_MEM, 0x1000, "st-regs"),
		DEFINE_RES_IRQ_NAMED(st_line, "st-irq"),
	};
	pthread_barrier_t b;
	pthread_t t;

	zero();
	if (st == S_ZEROED)
		return 0;
	device_initialize(&pd.dev);
	if (platform_device_add_resources(&pd, res, 2))
		return -1;
	if (st == S_INITIALIZED)
		return 0;
	/* The device's own: released by device_del(). */
	if (st == S_DEL_CB && devm_add_action(&pd.dev, del_cb, NULL))
		return -1;
	if (st == S_LAST_PUT || st == S_RELEASED) {
		if (devm_add_action(&pd.dev, last_put_cb, NULL))
			return -1;
		put_device(&pd.dev);
		return pd_released == 1 ? 0 : -1;
	}
	/* The driver matches by name: "st" binds, "st-off" does not. */
	if (st == S_ADDED || st == S_DELETED_HELD)
		pd.name = "st-off";
	if (platform_device_add(&pd))
		return -1;
	if (st == S_UNBIND_CB || st == S_REMOVE || st == S_THREAD_REMOVE ||
	    st == S_THREAD_UNBIND_CB)
		device_release_driver(&pd.dev);
	if (other_left)
		pthread_join(other, NULL);
	if (st == S_DELETED_HELD) {
		get_device(&pd.dev);
		platform_device_del(&pd);
	}
	if (st == S_DEL_CB)
		platform_device_del(&pd);
	if (st == S_RACE_UNBIND) {
		if (pthread_barrier_init(&b, NULL, 2) ||
		    pthread_create(&t, NULL, race_fn, &b))
			return -1;
		pthread_barrier_wait(&b);
		device_release_driver(&pd.dev);
		pthread_join(t, NULL);
		pthread_barrier_destroy(&b);
	}
	return 0;
}

/* Takes pd from wherever it is to its release. */
static int finish(void)
{
	for (int i = 0; i < 4; i++) {
		int now = dev_state();

		if (now == D_ZEROED || now == D_RELEASED)
			return 0;
		if (now == D_ADDED || now == D_BOUND)
			platform_device_del(&pd);
		put_device(&pd.dev);
	}
	return -1;
}

/* What a cell must get, where it is not the rule (alive: got, no WARN). */
struct want {
	bool got;
	int warns;
};

static struct want expected(enum st st, const struct st_call *c)
{
	struct want w = { true, 0 };

	if (dead(st)) {
		w.got = false;
		w.warns = c->rel ? 2 : 1;
		/* devres_add() WARNs, and so does the lookup after it. */
		if (c->acq == st_node_acq)
			w.warns++;
		/* devm_kfree(dev, NULL) is a no-op, as the kernel's. */
		if (c->rel == st_kfree)
			w.warns--;
	}
	return w;
}

/*
 * Racing the unbind, a resource of the binding may be released by the
 * unbind before the release call: that call then finds nothing (one
 * WARN), and devm_krealloc() of the block nothing to grow (one more).
 * The group's acquisition is two calls: a group opened and released by
 * the unbind before its devres_close_group() is "no group" there (one
 * WARN, as the kernel's).
 */
static bool race_ok(const struct st_call *c)
{
	if (!c->rel && c->acq == st_group_acq)
		return got && got_warns <= 1;
	if (!c->rel && c->acq != st_krealloc_grow)
		return got && !got_warns;
	return got_warns <= 2;
}

static int cell_fail(const char *what)
{
	fprintf(stderr, "cell %s / %s: %s\n", st_names[cur_st], cur_call->name,
		what);
	return 1;
}

/* WARN lines go to stderr only with STATES_CALLS_WARNS=1. */
static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (getenv("STATES_CALLS_WARNS"))
		fprintf(stderr, "%s\n", line);
}

static int cell(int row, int col)
{
	struct devres_ledger base;
	struct want w;
	int ret = 0;

	alarm(10);
	cur_st = (enum st)row;
	cur_call = &st_calls[col];
	w = expected(cur_st, cur_call);
	devres_set_log_sink(sink, NULL);
	if (st_fixture_up() || platform_driver_register(&st_drv))
		return cell_fail("fixture");
	devres_ledger_snapshot(&base);
	if (reach(cur_st))
		return cell_fail("the state was not reached");
	if (cur_st <= S_BOUND && cur_st != S_PROBING)
		do_call();
	if (cur_st == S_DELETED_HELD || cur_st == S_RELEASED)
		do_call();
	if (finish())
		return cell_fail("the device is still alive after four puts");
	if (getenv("STATES_CALLS_TABLE"))
		printf("%s\t%s\tgot %d\twarns %d\n", st_names[cur_st],
		       cur_call->name, got, got_warns);
	fflush(stdout);
	if (hook_runs != 1)
		ret |= cell_fail("the call was not made once");
	if (other_left)
		ret |= cell_fail("the other thread's call waited for the "
				 "unbind");
	if (cur_st == S_RACE_UNBIND ? !race_ok(cur_call)
				    : got != w.got || got_warns != w.warns) {
		fprintf(stderr, "  got %d with %d WARN(s), want %d with %d\n",
			got, got_warns, w.got, w.warns);
		ret |= cell_fail("result");
	}
	if (pd_released != (cur_st != S_ZEROED))
		ret |= cell_fail("the device was not released once");
	/* The library's copy of the resources is given back by the owner. */
	if (platform_device_add_resources(&pd, NULL, 0))
		ret |= cell_fail("resources");
	platform_driver_unregister(&st_drv);
	return ret | st_cell_end(&base, cell_fail);
}

static void every_call_in_every_state(void **state)
{
	static const char *cols[ST_NCALLS];

	(void)state;
	for (int i = 0; i < ST_NCALLS; i++)
		cols[i] = st_calls[i].name;
	run_cells_in_children(cell, st_names, NR_ST, cols, ST_NCALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_in_every_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
