// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * The lifecycle calls of the driver model made from a second thread while
 * the first is inside a step of the device's life: the states that the
 * lifecycle matrix (tests/base/test-lifecycle.c) reaches from the device's
 * own callbacks, here with the step parked on another thread:
 *
 *   probing     its probe, run by platform_device_register()
 *   unbinding   its remove, run by device_release_driver()
 *   deleting    its remove, run by platform_device_del()
 *   releasing   a release callback of its last put_device()
 *   in release  its release function, after that last put
 *
 * Rows: those states; columns: every public lifecycle call on the device
 * (docs/driver-model.md, "Calls from another thread"). A call that waits
 * for the device's lock (deletion, binding) is let go with the step and
 * finds the state that follows; the others answer at once, as from the
 * state the table of the device's own callbacks gives. Each cell runs in
 * a child process under an alarm, the second thread's call once: its
 * return and the exact WARNs of that thread are the table's, the device
 * is then taken to its end and released as many times as it had lives,
 * and the ledger is back where it was.
 *
 * Before: device_del() and platform_device_del() from a thread with no
 * reference, while the last put released the device on another, took a
 * reference from zero and gave it back, so that the device was released
 * a second time beside the first (a double free of its names, SIGSEGV).
 * Now refused, one WARN: "device is being released".
 *
 * LIFE_THREADS_TABLE=1 prints what each cell got.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "hostile/cell-child.h"

#define CELL_ALARM_S 20

enum row {
	S_PROBING,
	S_UNBINDING,
	S_DELETING,
	S_RELEASING,
	S_IN_RELEASE,
	S_NR
};

static const char *const rows[S_NR] = {
	"probing (another thread)",    "unbinding (another thread)",
	"deleting (another thread)",   "releasing (another thread)",
	"in release (another thread)",
};

enum col {
	C_INITIALIZE,
	C_SET_NAME,
	C_ADD,
	C_REGISTER,
	C_DEL,
	C_UNREGISTER,
	C_GET,
	C_PUT,
	C_ATTACH,
	C_DRV_ATTACH,
	C_RELEASE_DRV,
	C_IS_BOUND,
	C_BOUND_GET,
	C_BOUND_PUT,
	C_FOR_EACH,
	C_FIND_NEXT,
	C_SWEEP,
	C_P_ADD_RES,
	C_P_ADD,
	C_P_REGISTER,
	C_P_DEL,
	C_P_UNREGISTER,
	C_P_PUT,
	C_NR
};

static const char *const cols[C_NR] = {
	"device_initialize",
	"dev_set_name",
	"device_add",
	"device_register",
	"device_del",
	"device_unregister",
	"get_device",
	"put_device",
	"device_attach",
	"device_driver_attach",
	"device_release_driver",
	"device_is_bound",
	"device_bound_get",
	"device_bound_put",
	"bus_for_each_dev",
	"driver_find_next_device",
	"driver_probe_sweep",
	"platform_device_add_resources",
	"platform_device_add",
	"platform_device_register",
	"platform_device_del",
	"platform_device_unregister",
	"platform_device_put",
};

/*
 * A cell: the call's return (0 for a void call, 1 for a device returned),
 * the WARNs of its thread, whether it waits for the parked step (then the
 * step is let go while it waits), and the releases of the device in all
 * (2 when the call began a new life on it).
 */
struct want {
	signed char ret, warns;
	bool waits;
	signed char lives;
};

/* clang-format off */
#define OK { 0, 0, false, 1 }
#define W { 0, 1, false, 1 }
#define WE(e) { -(e), 1, false, 1 }
#define E(e) { -(e), 0, false, 1 }
#define R(v) { (v), 0, false, 1 }
#define WR(v) { (v), 1, false, 1 }
#define WAIT(r, w) { (r), (w), true, 1 }
#define LIFE { 0, 0, false, 2 }

static const struct want table[S_NR][C_NR] = {
	/*              init  name          add           register      del         unregister  get   put   attach        drv_attach    release_drv  is_bound bound_get   bound_put for_each     find_next sweep         add_res       p_add         p_register    p_del       p_unregister p_put */
	[S_PROBING]   = { W,  WE(EBUSY),    WE(EEXIST),   WE(EEXIST),   WAIT(0, 0), WAIT(0, 0), R(1), OK,   WAIT(1, 0),   WAIT(-EBUSY, 0), WAIT(0, 0), OK,   E(ENODEV),  W,        OK,          OK,       WE(EBUSY),    WE(EINVAL),   WE(EEXIST),   WE(EEXIST),   WAIT(0, 0), WAIT(0, 0),  OK },
	[S_UNBINDING] = { W,  WE(EBUSY),    WE(EEXIST),   WE(EEXIST),   WAIT(0, 0), WAIT(0, 0), R(1), OK,   WAIT(1, 0),   WAIT(0, 0),   WAIT(0, 0),  R(1),     E(ENODEV),  W,        OK,          OK,       WE(EBUSY),    WE(EINVAL),   WE(EEXIST),   WE(EEXIST),   WAIT(0, 0), WAIT(0, 0),  OK },
	[S_DELETING]  = { W,  WE(EBUSY),    WE(EEXIST),   WE(EEXIST),   WAIT(0, 1), WAIT(0, 1), R(1), OK,   WAIT(-ENODEV, 0), WAIT(-ENODEV, 0), WAIT(0, 0), R(1), E(ENODEV), W,   WE(EINVAL),  OK,       WE(ENODEV),   WE(EINVAL),   WE(EEXIST),   WE(EEXIST),   WAIT(0, 1), WAIT(0, 1),  OK },
	[S_RELEASING] = { W,  WE(EBUSY),    WE(ENODEV),   WE(ENODEV),   W,          W,          WR(1),  W,     WE(ENODEV),   WE(ENODEV),   W,           OK,       E(ENODEV),  W,        WE(EINVAL),  OK,       WE(ENODEV),   WE(EINVAL),   WE(ENODEV),   WE(ENODEV),   W,          W,           W },
	[S_IN_RELEASE] = { LIFE, WE(EINVAL), WE(EINVAL),  LIFE,         W,          W,          WR(1),  W,     WE(EINVAL),   WE(EINVAL),   W,           W,        WE(EINVAL), W,        WE(EINVAL),  W,        WE(EINVAL),   OK,           WE(EINVAL),   LIFE,         W,          W,           W },
};
/* clang-format on */

static struct platform_device pd;
static int released;

/* The parked step: the first thread waits at the gate until it opens. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool parked, open_gate;
static enum row row;
static enum col col;

static void park(void)
{
	pthread_mutex_lock(&gate_lock);
	parked = true;
	pthread_cond_broadcast(&gate_cond);
	while (!open_gate)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void wait_parked(void)
{
	pthread_mutex_lock(&gate_lock);
	while (!parked)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void let_go(void)
{
	pthread_mutex_lock(&gate_lock);
	open_gate = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void pd_release(struct device *dev)
{
	(void)dev;
	/* Only the first life's release parks; a second life's is the end. */
	if (++released == 1 && row == S_IN_RELEASE)
		park();
}

static int pd_probe(struct platform_device *p)
{
	(void)p;
	if (row == S_PROBING && !parked)
		park();
	return 0;
}

static void pd_remove(struct platform_device *p)
{
	(void)p;
	if ((row == S_UNBINDING || row == S_DELETING) && !parked)
		park();
}

static void late_release(void *data)
{
	(void)data;
	if (row == S_RELEASING)
		park();
}

static struct platform_driver pd_drv = {
	.driver = { .name = "life-threads" },
	.probe = pd_probe,
	.remove = pd_remove,
};

/* A driver bound by hand, never registered. */
static int hand_probe(struct platform_device *p)
{
	(void)p;
	return 0;
}

static struct platform_driver hand_drv = {
	.driver = { .name = "life-threads-hand" },
	.probe = hand_probe,
};

/* The step of the first thread, and what it returned. */
static int step_ret;

static void *stepper(void *arg)
{
	(void)arg;
	switch (row) {
	case S_PROBING:
		step_ret = platform_device_register(&pd);
		break;
	case S_UNBINDING:
		device_release_driver(&pd.dev);
		break;
	case S_DELETING:
		platform_device_del(&pd);
		break;
	case S_RELEASING:
	case S_IN_RELEASE:
		put_device(&pd.dev);
		break;
	case S_NR:
		break;
	}
	return NULL;
}

/* The WARNs of the caller's thread only: the step's own are not counted. */
static __thread bool counting;
static int warns;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (counting && strncmp(line, "WARNING: ", 9) == 0)
		__atomic_add_fetch(&warns, 1, __ATOMIC_RELAXED);
}

static int one_dev(struct device *dev, void *data)
{
	(void)dev;
	(*(int *)data)++;
	return 0;
}

/* Whether the device still has a reference another one may be taken on. */
static bool alive(void)
{
	return row == S_PROBING || row == S_UNBINDING || row == S_DELETING;
}

static int got;

static void *caller(void *arg)
{
	static const struct resource res[] = {
		DEFINE_RES_MEM_NAMED(0, 0, "life-threads-res"),
	};
	struct devres_sweep_result r;
	struct device *dev = &pd.dev, *d;
	int n = 0, ret = 0;

	(void)arg;
	/* The calls that consume a reference get one of their own. */
	if (alive() && (col == C_PUT || col == C_UNREGISTER || col == C_P_PUT ||
			col == C_P_UNREGISTER))
		get_device(dev);
	counting = true;
	switch (col) {
	case C_INITIALIZE:
		device_initialize(dev);
		break;
	case C_SET_NAME:
		ret = dev_set_name(dev, "life-threads-renamed");
		break;
	case C_ADD:
		ret = device_add(dev);
		break;
	case C_REGISTER:
		ret = device_register(dev);
		break;
	case C_DEL:
		device_del(dev);
		break;
	case C_UNREGISTER:
		device_unregister(dev);
		break;
	case C_GET:
		ret = get_device(dev) == dev;
		break;
	case C_PUT:
		put_device(dev);
		break;
	case C_ATTACH:
		ret = device_attach(dev);
		break;
	case C_DRV_ATTACH:
		ret = device_driver_attach(&hand_drv.driver, dev);
		break;
	case C_RELEASE_DRV:
		device_release_driver(dev);
		break;
	case C_IS_BOUND:
		ret = device_is_bound(dev);
		break;
	case C_BOUND_GET:
		ret = device_bound_get(dev);
		if (!ret)
			device_bound_put(dev);
		break;
	case C_BOUND_PUT:
		device_bound_put(dev);
		break;
	case C_FOR_EACH:
		ret = bus_for_each_dev(pd_drv.driver.bus, dev, &n, one_dev);
		break;
	case C_FIND_NEXT:
		d = driver_find_next_device(&pd_drv.driver, dev);
		ret = d != NULL;
		break;
	case C_SWEEP:
		ret = driver_probe_sweep(&hand_drv.driver, dev, &r);
		break;
	case C_P_ADD_RES:
		ret = platform_device_add_resources(&pd, res, 1);
		break;
	case C_P_ADD:
		ret = platform_device_add(&pd);
		break;
	case C_P_REGISTER:
		ret = platform_device_register(&pd);
		break;
	case C_P_DEL:
		platform_device_del(&pd);
		break;
	case C_P_UNREGISTER:
		platform_device_unregister(&pd);
		break;
	case C_P_PUT:
		platform_device_put(&pd);
		break;
	case C_NR:
		break;
	}
	counting = false;
	/* What was taken is given back, unmeasured. */
	if (col == C_GET && alive())
		put_device(dev);
	if (col == C_FIND_NEXT && ret)
		put_device(dev);
	got = ret;
	return NULL;
}

/* Takes the device from wherever the cell left it to its release. */
static int finish(void)
{
	for (int i = 0; i < 4; i++) {
		/* The low four bits of the state word: docs/internals.md. */
		int now = __atomic_load_n(&pd.dev.state, __ATOMIC_ACQUIRE) &
			  0xf;

		if (now == 0 || now == 8) /* zeroed, released */
			return 0;
		if (now == 2 || now == 4) /* added, bound */
			platform_device_del(&pd);
		put_device(&pd.dev);
	}
	fprintf(stderr, "the device is still alive after four puts\n");
	return 1;
}

static int cell(int r, int c)
{
	const struct want *w = &table[r][c];
	struct devres_ledger base, now;
	pthread_t step, call;
	int bad = 0;

	alarm(CELL_ALARM_S);
	row = (enum row)r;
	col = (enum col)c;
	devres_ledger_snapshot(&base);
	devres_set_log_sink(sink, NULL);
	memset(&pd, 0, sizeof(pd));
	pd.name = "life-threads";
	pd.id = PLATFORM_DEVID_NONE;
	pd.dev.release = pd_release;
	pd.dev.init_name = "life-threads";
	if (platform_driver_register(&pd_drv))
		return 2;
	if (row != S_PROBING) {
		if (platform_device_register(&pd))
			return 3;
	}
	if (row == S_RELEASING || row == S_IN_RELEASE) {
		platform_device_del(&pd);
		if (devm_add_action(&pd.dev, late_release, NULL))
			return 4;
	}
	if (pthread_create(&step, NULL, stepper, NULL))
		return 5;
	wait_parked();
	if (pthread_create(&call, NULL, caller, NULL))
		return 6;
	if (w->waits) {
		/* It waits: the step goes on under it, whenever it waits. */
		usleep(20000);
		let_go();
		pthread_join(call, NULL);
	} else {
		/* It does not: answered with the step still parked. */
		pthread_join(call, NULL);
		let_go();
	}
	pthread_join(step, NULL);
	if (step_ret) {
		fprintf(stderr, "%s / %s: the step failed: %d\n", rows[r],
			cols[c], step_ret);
		bad = 1;
	}
	if (getenv("LIFE_THREADS_TABLE"))
		printf("%s / %s: %d, %d WARN(s)\n", rows[r], cols[c], got,
		       warns);
	fflush(stdout);
	if (got != w->ret || warns != w->warns) {
		fprintf(stderr, "%s / %s: %d and %d WARN(s), want %d and %d\n",
			rows[r], cols[c], got, warns, w->ret, w->warns);
		bad = 1;
	}
	bad |= finish();
	/* The library's copy of the resources is given back by the library. */
	if (platform_device_add_resources(&pd, NULL, 0))
		bad = 1;
	platform_driver_unregister(&pd_drv);
	devres_set_log_sink(NULL, NULL);
	if (released != w->lives) {
		fprintf(stderr, "%s / %s: released %d times, want %d\n",
			rows[r], cols[c], released, w->lives);
		bad = 1;
	}
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&base, &now, stderr)) {
		fprintf(stderr, "%s / %s: the ledger is not back\n", rows[r],
			cols[c]);
		bad = 1;
	}
	return bad;
}

static void every_cell(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, S_NR, cols, C_NR, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
