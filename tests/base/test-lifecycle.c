// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The lifecycle matrix: every public lifecycle call of the driver model on
 * an object in every state of its life, with the exact WARN count and
 * return value of each. The expectations are one table, lc_table[], and
 * docs/driver-model.md carries the same table: a test renders this one
 * and fails unless the document says the same. After each call the object
 * is taken to its end, must be released exactly once with the ledger back
 * where it was, and its memory must then carry a whole new life.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/platform.h>
#include <devres/fault.h>
#include "testlib.h"

/* The device states, in docs/driver-model.md's order. */
enum st {
	ZEROED,
	INITIALIZED,
	ADDED,
	PROBING,
	BOUND,
	UNBINDING,
	DELETED,
	RELEASING,
	RELEASED,
	NR_ST
};

static const char *const st_names[NR_ST] = {
	"zeroed",    "initialized", "added",	 "probing",  "bound",
	"unbinding", "deleted",	    "releasing", "released",
};

enum fn {
	F_INITIALIZE,
	F_SET_NAME,
	F_ADD,
	F_REGISTER,
	F_DEL,
	F_UNREGISTER,
	F_GET,
	F_PUT,
	F_ATTACH,
	F_DRV_ATTACH,
	F_RELEASE_DRV,
	F_IS_BOUND,
	F_BOUND_GET,
	F_FOR_EACH,
	F_SWEEP,
	F_FAIL_NTH,
	F_ADD_CHILD,
	F_REGISTER_CHILD,
	F_ADD_CHILD_DEL,
	P_ADD_RES,
	P_ADD,
	P_REGISTER,
	P_DEL,
	P_UNREGISTER,
	P_PUT,
	NR_FN
};

static const char *const fn_names[NR_FN] = {
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
	"bus_for_each_dev",
	"driver_probe_sweep",
	"driver_probe_fail_nth",
	"device_add",
	"device_register",
	"device_add",
	"platform_device_add_resources",
	"platform_device_add",
	"platform_device_register",
	"platform_device_del",
	"platform_device_unregister",
	"platform_device_put",
};

/* Void calls: their return is not a value; the table says "-". */
static bool is_void(enum fn f)
{
	switch (f) {
	case F_INITIALIZE:
	case F_DEL:
	case F_UNREGISTER:
	case F_GET:
	case F_PUT:
	case F_RELEASE_DRV:
	case P_DEL:
	case P_UNREGISTER:
	case P_PUT:
		return true;
	default:
		return false;
	}
}

struct want {
	signed char warns;
	short ret;
};

#define OK                                                                     \
	{                                                                      \
		0, 0                                                           \
	}
#define W                                                                      \
	{                                                                      \
		1, 0                                                           \
	}
#define WE(e)                                                                  \
	{                                                                      \
		1, -(e)                                                        \
	}
#define E(e)                                                                   \
	{                                                                      \
		0, -(e)                                                        \
	}
#define R(v)                                                                   \
	{                                                                      \
		0, v                                                           \
	}

/*
 * The matrix: [call][state]. PROBING, UNBINDING and RELEASING are reached
 * from inside the device's own probe, remove, and a release callback of
 * its last put; a call from another thread in those states waits for the
 * device's lock and finds the state that follows.
 */
/* clang-format off */
static const struct want lc_table[NR_FN][NR_ST] = {
	/*                zeroed  init          added          probing        bound          unbinding      deleted        releasing      released */
	[F_INITIALIZE] = { OK,    W,            W,             W,             W,             W,             W,             W,             OK },
	[F_SET_NAME]   = { WE(EINVAL), OK,      WE(EBUSY),     WE(EBUSY),     WE(EBUSY),     WE(EBUSY),     WE(EBUSY),     OK,            WE(EINVAL) },
	[F_ADD]        = { WE(EINVAL), OK,      WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(ENODEV),    WE(ENODEV),    WE(EINVAL) },
	[F_REGISTER]   = { OK,    WE(EINVAL),   WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(ENODEV),    WE(ENODEV),    OK },
	[F_DEL]        = { W,     W,            OK,            W,             OK,            W,             W,             W,             W },
	[F_UNREGISTER] = { W,     W,            OK,            W,             OK,            W,             W,             W,             W },
	[F_GET]        = { W,     OK,           OK,            OK,            OK,            OK,            OK,            W,             W },
	[F_PUT]        = { W,     OK,           OK,            OK,            OK,            OK,            OK,            W,             W },
	[F_ATTACH]     = { WE(EINVAL), WE(ENODEV), OK,         WE(EDEADLK),   R(1),          WE(EDEADLK),   E(ENODEV),     WE(ENODEV),    WE(EINVAL) },
	[F_DRV_ATTACH] = { WE(EINVAL), WE(ENODEV), OK,         WE(EDEADLK),   E(EBUSY),      WE(EDEADLK),   E(ENODEV),     WE(ENODEV),    WE(EINVAL) },
	[F_RELEASE_DRV] = { W,    OK,           OK,            W,             OK,            W,             OK,            OK,            W },
	[F_IS_BOUND]   = { W,     OK,           OK,            OK,            R(1),          R(1),          OK,            OK,            W },
	[F_BOUND_GET]  = { WE(EINVAL), E(ENODEV), E(ENODEV),    E(ENODEV),     OK,            E(ENODEV),     E(ENODEV),     E(ENODEV),     WE(EINVAL) },
	[F_FOR_EACH]   = { WE(EINVAL), WE(EINVAL), OK,         OK,            OK,            OK,            WE(EINVAL),    WE(EINVAL),    WE(EINVAL) },
	[F_SWEEP]      = { WE(EINVAL), WE(ENODEV), OK,         WE(EDEADLK),   WE(EBUSY),     WE(EDEADLK),   WE(ENODEV),    WE(ENODEV),    WE(EINVAL) },
	[F_FAIL_NTH]   = { WE(EINVAL), WE(ENODEV), OK,         WE(EDEADLK),   WE(EBUSY),     WE(EDEADLK),   WE(ENODEV),    WE(ENODEV),    WE(EINVAL) },
	[F_ADD_CHILD]  = { WE(EINVAL), OK,      OK,            OK,            OK,            OK,            WE(ENOENT),    WE(EINVAL),    WE(EINVAL) },
	[F_REGISTER_CHILD] = { WE(EINVAL), OK,  OK,            OK,            OK,            OK,            WE(ENOENT),    WE(EINVAL),    WE(EINVAL) },
	[F_ADD_CHILD_DEL] = { WE(EINVAL), OK,   OK,            OK,            OK,            OK,            WE(ENOENT),    WE(EINVAL),    WE(EINVAL) },
	[P_ADD_RES]    = { OK,    OK,           WE(EINVAL),    WE(EINVAL),    WE(EINVAL),    WE(EINVAL),    WE(EINVAL),    WE(EINVAL),    OK },
	[P_ADD]        = { WE(EINVAL), OK,      WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(ENODEV),    WE(ENODEV),    WE(EINVAL) },
	[P_REGISTER]   = { OK,    WE(EINVAL),   WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(EEXIST),    WE(ENODEV),    WE(ENODEV),    OK },
	[P_DEL]        = { W,     W,            OK,            W,             OK,            W,             W,             W,             W },
	[P_UNREGISTER] = { W,     W,            OK,            W,             OK,            W,             W,             W,             W },
	[P_PUT]        = { W,     OK,           OK,            OK,            OK,            OK,            OK,            W,             W },
};
/* clang-format on */

/* The object under test: a platform device, so that every call applies. */
static struct platform_device lc;
static int lc_released;

static void lc_release(struct device *dev)
{
	(void)dev;
	lc_released++;
}

/* A child of lc, for the calls that add one under it. */
static struct device lc_child;
static int lc_child_released;

static void lc_child_release(struct device *dev)
{
	(void)dev;
	lc_child_released++;
}

static void zero_child(void)
{
	memset(&lc_child, 0, sizeof(lc_child));
	lc_child.parent = &lc.dev;
	lc_child.init_name = "lc-child";
	lc_child.release = lc_child_release;
	lc_child_released = 0;
}

/* The last WARN line, for LIFECYCLE_WARNS=1. */
static char last_warn[256];
static bool in_call;

static enum fn cur_fn;
static enum st cur_st;
static bool hook_armed;
static int got_ret, got_warns;

static int count_fn(struct device *dev, void *data)
{
	(void)dev;
	(*(int *)data)++;
	return 0;
}

static int lc_probe(struct platform_device *pdev);
static void lc_remove(struct platform_device *pdev);

static struct platform_driver lc_drv = {
	.driver = { .name = "lc" },
	.probe = lc_probe,
	.remove = lc_remove,
};

/* A driver bound by hand, never registered, so never matched. */
static int hand_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static struct platform_driver hand_pdrv = {
	.driver = { .name = "hand" },
	.probe = hand_probe,
};

#define hand_drv (hand_pdrv.driver)

static bool alive(enum st st)
{
	return st != ZEROED && st != RELEASING && st != RELEASED;
}

/* Makes the call under test on lc, counting its WARNs. */
static void call(void)
{
	static const struct resource res[] = {
		DEFINE_RES_MEM_NAMED(0, 0, "lc-res"),
	};
	struct devres_sweep_result r;
	struct device *dev = &lc.dev;
	int before, n = 0, ret = 0;

	/* The calls that consume a reference get one of their own. */
	if (alive(cur_st) && (cur_fn == F_PUT || cur_fn == F_UNREGISTER ||
			      cur_fn == P_PUT || cur_fn == P_UNREGISTER))
		get_device(dev);
	before = devres_warn_count();
	in_call = true;
	last_warn[0] = '\0';
	switch (cur_fn) {
	case F_INITIALIZE:
		device_initialize(dev);
		break;
	case F_SET_NAME:
		ret = dev_set_name(dev, "lc-renamed");
		break;
	case F_ADD:
		ret = device_add(dev);
		break;
	case F_REGISTER:
		ret = device_register(dev);
		break;
	case F_DEL:
		device_del(dev);
		break;
	case F_UNREGISTER:
		device_unregister(dev);
		break;
	case F_GET:
		get_device(dev);
		break;
	case F_PUT:
		put_device(dev);
		break;
	case F_ATTACH:
		ret = device_attach(dev);
		break;
	case F_DRV_ATTACH:
		ret = device_driver_attach(&hand_drv, dev);
		break;
	case F_RELEASE_DRV:
		device_release_driver(dev);
		break;
	case F_IS_BOUND:
		ret = device_is_bound(dev);
		break;
	case F_BOUND_GET:
		/* Held, then let go: the object's end below would wait for it. */
		ret = device_bound_get(dev);
		if (!ret)
			device_bound_put(dev);
		break;
	case F_FOR_EACH:
		ret = bus_for_each_dev(dev->bus, dev, &n, count_fn);
		break;
	case F_SWEEP:
		ret = driver_probe_sweep(&hand_drv, dev, &r);
		break;
	case F_FAIL_NTH:
		ret = driver_probe_fail_nth(&hand_drv, dev, 1);
		break;
	case F_ADD_CHILD:
	case F_ADD_CHILD_DEL:
		device_initialize(&lc_child);
		ret = device_add(&lc_child);
		break;
	case F_REGISTER_CHILD:
		ret = device_register(&lc_child);
		break;
	case P_ADD_RES:
		ret = platform_device_add_resources(&lc, res, 1);
		break;
	case P_ADD:
		ret = platform_device_add(&lc);
		break;
	case P_REGISTER:
		ret = platform_device_register(&lc);
		break;
	case P_DEL:
		platform_device_del(&lc);
		break;
	case P_UNREGISTER:
		platform_device_unregister(&lc);
		break;
	case P_PUT:
		platform_device_put(&lc);
		break;
	case NR_FN:
		break;
	}
	in_call = false;
	got_warns = devres_warn_count() - before;
	got_ret = ret;
	/* A get that took a reference is given back, unmeasured. */
	if (cur_fn == F_GET && alive(cur_st))
		put_device(dev);
	/* A child made is given back: unregistered if added, else put. */
	if (cur_fn == F_ADD_CHILD || cur_fn == F_REGISTER_CHILD ||
	    cur_fn == F_ADD_CHILD_DEL) {
		if (ret)
			put_device(&lc_child);
		else
			device_unregister(&lc_child);
		assert_int_equal(lc_child_released, 1);
	}
}

static int lc_probe(struct platform_device *pdev)
{
	(void)pdev;
	if (hook_armed && cur_st == PROBING) {
		hook_armed = false;
		call();
	}
	return 0;
}

static void lc_remove(struct platform_device *pdev)
{
	(void)pdev;
	if (hook_armed && cur_st == UNBINDING) {
		hook_armed = false;
		call();
	}
}

static void in_release(void *data)
{
	(void)data;
	if (hook_armed && cur_st == RELEASING) {
		hook_armed = false;
		call();
	}
}

/* A platform device "lc" with no private state: only what owners set. */
static void zero(void)
{
	memset(&lc, 0, sizeof(lc));
	lc.name = "lc";
	lc.id = PLATFORM_DEVID_NONE;
	lc.dev.release = lc_release;
	lc.dev.init_name = "lc";
	lc_released = 0;
	zero_child();
}

static void quiet_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (in_call && strncmp(line, "WARNING: ", 9) == 0)
		snprintf(last_warn, sizeof(last_warn), "%s", line + 9);
}

/* Brings lc to @st and, where the call is made from inside, makes it. */
static void reach(enum st st)
{
	zero();
	if (st == ZEROED)
		return;
	device_initialize(&lc.dev);
	if (st == INITIALIZED) {
		/* Named, as platform_device_add() would: a rename is tried. */
		return;
	}
	if (st == RELEASING || st == RELEASED) {
		hook_armed = st == RELEASING;
		assert_int_equal(devm_add_action(&lc.dev, in_release, NULL), 0);
		put_device(&lc.dev);
		assert_int_equal(lc_released, 1);
		return;
	}
	/* The driver matches by name: "lc" binds, "lc-off" does not. */
	if (st == ADDED || st == DELETED)
		lc.name = "lc-off";
	hook_armed = st == PROBING;
	assert_int_equal(platform_device_add(&lc), 0);
	if (st == UNBINDING) {
		hook_armed = true;
		/* The same remove, run by the delete: the kernel's rule. */
		if (cur_fn == F_ADD_CHILD_DEL)
			platform_device_del(&lc);
		else
			device_release_driver(&lc.dev);
	}
	if (st == DELETED)
		platform_device_del(&lc);
	assert_false(hook_armed);
}

/*
 * Takes lc from wherever the call left it to its release. The state is
 * read from the device, as a debugger would: the order of the states in
 * the header is the one of enum st.
 */
static void finish(void)
{
	for (int i = 0; i < 4; i++) {
		/* The low four bits: the process that made it is above. */
		int now = __atomic_load_n(&lc.dev.state, __ATOMIC_ACQUIRE) &
			  0xf;

		if (now == ZEROED || now == RELEASED)
			return;
		if (now == ADDED || now == BOUND)
			platform_device_del(&lc);
		put_device(&lc.dev);
	}
	fail_msg("lc is still alive after four puts");
}

/* Calls that start a life: on a zeroed or released device, one more. */
static bool starts_life(enum fn f)
{
	return f == F_INITIALIZE || f == F_REGISTER || f == P_REGISTER;
}

static struct devres_ledger base;

static void check_cell(enum fn f, enum st st)
{
	const struct want *w = &lc_table[f][st];
	struct devres_ledger now;
	int expect_released;

	cur_fn = f;
	cur_st = st;
	devres_ledger_snapshot(&base);
	devres_set_log_sink(quiet_sink, NULL);
	reach(st);
	if (st != PROBING && st != UNBINDING && st != RELEASING)
		call();
	finish();
	devres_set_log_sink(NULL, NULL);
	if (got_ret != w->ret || got_warns != w->warns)
		print_error("%s in state %s: got %d with %d WARN(s), want %d "
			    "with %d\n",
			    fn_names[f], st_names[st], got_ret, got_warns,
			    w->ret, w->warns);
	assert_int_equal(got_ret, w->ret);
	assert_int_equal(got_warns, w->warns);
	if (got_warns && getenv("LIFECYCLE_WARNS"))
		printf("%s\t%s\t%s\n", fn_names[f], st_names[st], last_warn);
	/* Each life ends in one release; a zeroed device has had none. */
	if (st == ZEROED || st == RELEASED)
		expect_released = (st == RELEASED) + starts_life(f);
	else
		expect_released = 1;
	if (lc_released != expect_released)
		print_error("%s in state %s: released %d times\n", fn_names[f],
			    st_names[st], lc_released);
	assert_int_equal(lc_released, expect_released);
	/* The library's copy is given back by the library. */
	assert_int_equal(platform_device_add_resources(&lc, NULL, 0), 0);
	lc.resource = NULL;
	lc.num_resources = 0;
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);

	/* The same memory carries a whole life again: nothing corrupt. */
	zero();
	assert_int_equal(platform_device_register(&lc), 0);
	assert_true(device_is_bound(&lc.dev));
	platform_device_unregister(&lc);
	assert_int_equal(lc_released, 1);
}

static void every_call_in_every_state(void **state)
{
	(void)state;
	assert_int_equal(platform_driver_register(&lc_drv), 0);
	for (int f = 0; f < NR_FN; f++)
		for (int st = 0; st < NR_ST; st++)
			check_cell(f, st);
	platform_driver_unregister(&lc_drv);
}

/*
 * Drivers and buses: every registration call in every state. A driver is
 * unregistering while driver_unregister() runs its remove on a bound
 * device: the calls are made from there.
 */
enum dst {
	D_UNREGISTERED,
	D_REGISTERED,
	D_UNREGISTERING,
	NR_DST
};
enum dfn {
	D_REG,
	D_UNREG,
	D_ATTACH,
	D_PREG,
	D_PUNREG,
	NR_DFN
};

static const char *const dfn_names[NR_DFN] = {
	"driver_register",
	"driver_unregister",
	"device_driver_attach",
	"platform_driver_register",
	"platform_driver_unregister",
};

/* clang-format off */
static const struct want drv_table[NR_DFN][NR_DST] = {
	/*             unregistered registered   unregistering */
	[D_REG]    = { OK,          WE(EBUSY),   WE(EBUSY) },
	[D_UNREG]  = { W,           OK,          W },
	[D_ATTACH] = { OK,          OK,          E(ENODEV) },
	[D_PREG]   = { OK,          WE(EBUSY),   WE(EBUSY) },
	[D_PUNREG] = { W,           OK,          W },
};
/* clang-format on */

static struct platform_driver pd;
static struct platform_device *pd_dev, *pd_spare;
static enum dfn cur_dfn;
static enum dst cur_dst;
static bool pd_hook;

static void dcall(void)
{
	int before = devres_warn_count(), ret = 0;

	switch (cur_dfn) {
	case D_REG:
		ret = driver_register(&pd.driver);
		break;
	case D_UNREG:
		driver_unregister(&pd.driver);
		break;
	case D_ATTACH:
		ret = device_driver_attach(&pd.driver, &pd_spare->dev);
		break;
	case D_PREG:
		ret = platform_driver_register(&pd);
		break;
	case D_PUNREG:
		platform_driver_unregister(&pd);
		break;
	case NR_DFN:
		break;
	}
	got_warns = devres_warn_count() - before;
	got_ret = ret;
}

static void pd_remove(struct platform_device *pdev)
{
	if (pdev == pd_dev && pd_hook) {
		pd_hook = false;
		dcall();
	}
}

static void check_drv_cell(enum dfn f, enum dst st)
{
	const struct want *w = &drv_table[f][st];
	struct devres_ledger before, now;

	cur_dfn = f;
	cur_dst = st;
	devres_ledger_snapshot(&before);
	memset(&pd, 0, sizeof(pd));
	pd.driver.name = "lcd";
	pd.remove = pd_remove;
	pd_dev = platform_device_register_simple("lcd", 0, NULL, 0);
	pd_spare = platform_device_register_simple("lcd-spare", 0, NULL, 0);
	assert_false(IS_ERR(pd_dev));
	assert_false(IS_ERR(pd_spare));
	/* Unregistered after a life: it has its bus, as a driver_register()
	 * needs. */
	assert_int_equal(platform_driver_register(&pd), 0);
	platform_driver_unregister(&pd);
	devres_set_log_sink(quiet_sink, NULL);
	if (st != D_UNREGISTERED) {
		assert_int_equal(platform_driver_register(&pd), 0);
		assert_true(device_is_bound(&pd_dev->dev));
	}
	if (st == D_UNREGISTERING) {
		pd_hook = true;
		platform_driver_unregister(&pd);
		assert_false(pd_hook);
	} else {
		dcall();
	}
	devres_set_log_sink(NULL, NULL);
	if (got_ret != w->ret || got_warns != w->warns)
		print_error("%s on a driver %s: got %d with %d WARN(s), want "
			    "%d with %d\n",
			    dfn_names[f],
			    st == D_UNREGISTERED ? "unregistered"
			    : st == D_REGISTERED ? "registered"
						 : "unregistering",
			    got_ret, got_warns, w->ret, w->warns);
	assert_int_equal(got_ret, w->ret);
	assert_int_equal(got_warns, w->warns);
	/* Whatever it is now, it ends unregistered and still works. */
	devres_set_log_sink(quiet_sink, NULL);
	if (pd.driver.p)
		platform_driver_unregister(&pd);
	device_release_driver(&pd_spare->dev);
	devres_set_log_sink(NULL, NULL);
	assert_null(pd.driver.p);
	assert_false(device_is_bound(&pd_dev->dev));
	assert_int_equal(platform_driver_register(&pd), 0);
	assert_true(device_is_bound(&pd_dev->dev));
	platform_driver_unregister(&pd);
	platform_device_unregister(pd_dev);
	platform_device_unregister(pd_spare);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
}

static void every_driver_call_in_every_state(void **state)
{
	(void)state;
	for (int f = 0; f < NR_DFN; f++)
		for (int st = 0; st < NR_DST; st++)
			check_drv_cell(f, st);
}

enum bfn {
	B_REG,
	B_UNREG,
	B_FOR_EACH,
	NR_BFN
};

/* [call][unregistered, registered] */
static const struct want bus_table[NR_BFN][2] = {
	[B_REG] = { OK, WE(EBUSY) },
	[B_UNREG] = { W, OK },
	[B_FOR_EACH] = { WE(EINVAL), OK },
};

static const struct bus_type lbus = { .name = "lcstate" };

static void every_bus_call_in_every_state(void **state)
{
	(void)state;
	for (int f = 0; f < NR_BFN; f++) {
		for (int reg = 0; reg < 2; reg++) {
			const struct want *w = &bus_table[f][reg];
			int before, ret = 0, n = 0;

			if (reg)
				assert_int_equal(bus_register(&lbus), 0);
			devres_set_log_sink(quiet_sink, NULL);
			before = devres_warn_count();
			if (f == B_REG)
				ret = bus_register(&lbus);
			else if (f == B_UNREG)
				bus_unregister(&lbus);
			else
				ret = bus_for_each_dev(&lbus, NULL, &n,
						       count_fn);
			got_warns = devres_warn_count() - before;
			/* It ends unregistered, whatever the call did. */
			bus_unregister(&lbus);
			devres_set_log_sink(NULL, NULL);
			assert_int_equal(ret, w->ret);
			assert_int_equal(got_warns, w->warns);
			/* And registers again. */
			assert_int_equal(bus_register(&lbus), 0);
			bus_unregister(&lbus);
		}
	}
}

/* ---- The defects of this class, one test each. ---- */

static const struct bus_type dbus = { .name = "lcbus" };

static int actions;

static void count_action(void *data)
{
	(void)data;
	actions++;
}

/* The kernel: "tried to init an initialized object". */
static void init_of_live_device_keeps_it(void **state)
{
	struct device *dev = heap_dev(NULL, "live");
	int released = heap_released;

	(void)state;
	actions = 0;
	assert_non_null(devm_kzalloc(dev, 16, GFP_KERNEL));
	assert_int_equal(devm_add_action(dev, count_action, NULL), 0);
	get_device(dev);
	start_capture();
	device_initialize(dev);
	expect_warn_on("live", "device_initialize",
		       "tried to initialize an initialized device (state: "
		       "initialized)");
	/* Both references and both resources are still there. */
	assert_string_equal(dev_name(dev), "live");
	put_device(dev);
	assert_int_equal(heap_released, released);
	assert_int_equal(actions, 0);
	put_device(dev);
	assert_int_equal(heap_released, released + 1);
	assert_int_equal(actions, 1);
}

static void register_of_named_device_keeps_name(void **state)
{
	struct device *dev = heap_dev(&dbus, "named");

	(void)state;
	start_capture();
	assert_int_equal(device_register(dev), -EINVAL);
	expect_warn_on("named", "device_register",
		       "tried to initialize an initialized device");
	assert_string_equal(dev_name(dev), "named");
	assert_int_equal(t_device_add(dev), 0);
	assert_string_equal(dev_name(dev), "named");
	t_device_unregister(dev);
}

static void duplicate_name_on_a_bus(void **state)
{
	struct device *a = heap_dev(&dbus, "twin");
	struct device *b = heap_dev(&dbus, "twin");

	(void)state;
	assert_int_equal(t_device_add(a), 0);
	start_capture();
	assert_int_equal(device_add(b), -EEXIST);
	expect_warn_on("twin", "device_add",
		       "name is taken by another device of its bus (state: "
		       "initialized)");
	/* Once the first is gone the name is free. */
	t_device_unregister(a);
	assert_int_equal(t_device_add(b), 0);
	t_device_unregister(b);
}

static void auto_id_dies_with_its_device(void **state)
{
	struct platform_device *a, *b;
	int id;

	(void)state;
	a = platform_device_register_simple("lcauto", PLATFORM_DEVID_AUTO, NULL,
					    0);
	assert_false(IS_ERR(a));
	id = a->id;
	assert_true(a->id_auto);
	get_device(&a->dev);
	platform_device_unregister(a);
	/* Deleted: the id is no longer the device's. */
	assert_int_equal(a->id, PLATFORM_DEVID_AUTO);
	assert_false(a->id_auto);
	b = platform_device_register_simple("lcauto", PLATFORM_DEVID_AUTO, NULL,
					    0);
	assert_false(IS_ERR(b));
	assert_int_equal(b->id, id);
	platform_device_unregister(b);
	platform_device_put(a);
}

static int named_probe(struct device *dev)
{
	(void)dev;
	return 0;
}

static struct device_driver reg_drv = { .name = "lcreg",
					.bus = &dbus,
					.probe = named_probe };

static void driver_never_registered(void **state)
{
	struct device_driver copy;
	struct device_driver never = { .name = "never", .bus = &dbus };
	struct device *dev = heap_dev(&dbus, "lcreg-dev");

	(void)state;
	start_capture();
	driver_unregister(&never);
	expect_warn_on("(no device)", "driver_unregister",
		       "never: driver is not registered (state: "
		       "unregistered)");

	assert_int_equal(t_driver_register(&reg_drv), 0);
	/* A copy does not own the original's registration. */
	memcpy(&copy, &reg_drv, sizeof(copy));
	start_capture();
	driver_unregister(&copy);
	expect_warn_on("(no device)", "driver_unregister",
		       "lcreg: driver is not registered (state: "
		       "unregistered)");
	start_capture();
	assert_int_equal(driver_register(&copy), -EBUSY);
	expect_warn_on("(no device)", "driver_register",
		       "a driver of that name is registered");
	/* The original still binds. */
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(dev->driver, &reg_drv);
	t_device_unregister(dev);
	t_driver_unregister(&reg_drv);
}

/* Resource names live in the device, not in the caller's buffer. */
static void platform_keeps_copies(void **state)
{
	struct platform_device *pdev;
	struct resource res = DEFINE_RES_IRQ(7);
	char *name = strdup("lc-irq");
	struct resource *r;

	(void)state;
	assert_non_null(name);
	res.name = name;
	pdev = platform_device_register_simple("lccopy", 0, &res, 1);
	assert_false(IS_ERR(pdev));
	memset(name, 'x', strlen(name));
	free(name);
	r = platform_get_resource_byname(pdev, IORESOURCE_IRQ, "lc-irq");
	assert_non_null(r);
	assert_int_equal(r->start, 7);
	/* The device's own name is lent too: it cannot be renamed. */
	start_capture();
	assert_int_equal(dev_set_name(&pdev->dev, "other"), -EBUSY);
	expect_warn_on("lccopy.0", "dev_set_name",
		       "device was added: its name is in use (state: added)");
	platform_device_unregister(pdev);
}

/* A probe that builds a child it never adds nor puts: a leak. */
static struct device *orphan;

static int orphan_probe(struct device *dev)
{
	(void)dev;
	if (!orphan)
		orphan = heap_dev(NULL, "orphan");
	return 0;
}

static struct device_driver orphan_drv = { .name = "orphan",
					   .probe = orphan_probe };

static void never_added_device_is_counted(void **state)
{
	struct device *dev = heap_dev(&dbus, "parent");
	struct devres_sweep_result r;

	(void)state;
	orphan = NULL;
	assert_int_equal(t_device_add(dev), 0);
	start_capture();
	assert_int_equal(driver_probe_sweep(&orphan_drv, dev, &r), 1);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(r.leaks, 1);
	assert_non_null(orphan);
	put_device(orphan);
	t_device_unregister(dev);
}

static const char *errname(int err)
{
	switch (-err) {
	case EINVAL:
		return "-EINVAL";
	case EEXIST:
		return "-EEXIST";
	case EBUSY:
		return "-EBUSY";
	case ENODEV:
		return "-ENODEV";
	case EDEADLK:
		return "-EDEADLK";
	case ENOENT:
		return "-ENOENT";
	default:
		return "?";
	}
}

/* One row of the document's table, as lc_table[] says it. */
static void render_row(enum fn f, char *buf, size_t len)
{
	bool child = f == F_ADD_CHILD || f == F_REGISTER_CHILD;
	size_t n = (size_t)snprintf(buf, len, "| `%s()`%s |", fn_names[f],
				    f == F_ADD_CHILD_DEL ? " of a child (the "
							   "device its "
							   "parent, unbound by "
							   "`device_del()`)"
				    : child ? " of a child (the device its "
					      "parent)"
					    : "");

	for (int st = 0; st < NR_ST && n < len; st++) {
		const struct want *w = &lc_table[f][st];
		char cell[24];

		if (w->warns && is_void(f))
			snprintf(cell, sizeof(cell), "WARN");
		else if (w->warns && w->ret >= 0)
			snprintf(cell, sizeof(cell), "WARN false");
		else if (w->warns)
			snprintf(cell, sizeof(cell), "WARN %s",
				 errname(w->ret));
		else if (w->ret < 0)
			snprintf(cell, sizeof(cell), "%s", errname(w->ret));
		else
			snprintf(cell, sizeof(cell), "ok");
		n += (size_t)snprintf(buf + n, len - n, " %s |", cell);
	}
}

static void render_head(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "| call |");

	for (int st = 0; st < NR_ST; st++)
		n += (size_t)snprintf(buf + n, len - n, " %s |", st_names[st]);
}

/* docs/driver-model.md, from where the build compiled this file. */
static FILE *open_doc(void)
{
	static const char *const prefixes[] = { "", "../", "../../" };
	char path[1100], dir[512];
	FILE *f;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", __FILE__);
	slash = strstr(dir, "tests/base/test-lifecycle.c");
	if (!slash)
		return NULL;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++) {
		snprintf(path, sizeof(path), "%s%sdocs/driver-model.md",
			 dir[0] == '/' ? "" : prefixes[i], dir);
		f = fopen(path, "r");
		if (f)
			return f;
	}
	return NULL;
}

static void chomp(char *line)
{
	size_t len = strlen(line);

	while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
		line[--len] = '\0';
}

/* The document's table is lc_table[], row for row, cell for cell. */
static void doc_table_matches(void **state)
{
	char want[512], line[512];
	FILE *doc = open_doc();
	bool found = false;

	(void)state;
	if (!doc)
		fail_msg("docs/driver-model.md not found from %s", __FILE__);
	render_head(want, sizeof(want));
	while (fgets(line, sizeof(line), doc)) {
		chomp(line);
		if (strcmp(line, want) == 0) {
			found = true;
			break;
		}
	}
	if (!found)
		print_error("no line \"%s\" in docs/driver-model.md\n", want);
	assert_true(found);
	/* The separator line. */
	assert_non_null(fgets(line, sizeof(line), doc));
	for (int f = 0; f < NR_FN; f++) {
		render_row(f, want, sizeof(want));
		if (!fgets(line, sizeof(line), doc))
			line[0] = '\0';
		chomp(line);
		if (strcmp(line, want) != 0)
			print_error("docs/driver-model.md says\n%s\nthe test "
				    "says\n%s\n",
				    line, want);
		assert_string_equal(line, want);
	}
	fclose(doc);
}

/* LIFECYCLE_TABLE=1 prints the document's table from lc_table[]. */
static void print_table(void)
{
	char buf[512];

	render_head(buf, sizeof(buf));
	printf("%s\n|---|", buf);
	for (int st = 0; st < NR_ST; st++)
		printf("---|");
	printf("\n");
	for (int f = 0; f < NR_FN; f++) {
		render_row(f, buf, sizeof(buf));
		printf("%s\n", buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_in_every_state),
		cmocka_unit_test(doc_table_matches),
		cmocka_unit_test(every_driver_call_in_every_state),
		cmocka_unit_test(every_bus_call_in_every_state),
		cmocka_unit_test(init_of_live_device_keeps_it),
		cmocka_unit_test(register_of_named_device_keeps_name),
		cmocka_unit_test(duplicate_name_on_a_bus),
		cmocka_unit_test(auto_id_dies_with_its_device),
		cmocka_unit_test(driver_never_registered),
		cmocka_unit_test(platform_keeps_copies),
		cmocka_unit_test(never_added_device_is_counted),
	};

	if (getenv("LIFECYCLE_TABLE")) {
		print_table();
		return 0;
	}

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &dbus);
}
