// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * struct device: registration, names, references, the parent's reference,
 * resources of an unbound device, messages, and misuse.
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
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

struct tdev {
	struct device dev;
	int id;
};

/* The order devices were released in, by id. */
static int released[16];
static int nreleased;

static void tdev_release(struct device *dev)
{
	struct tdev *t = container_of(dev, struct tdev, dev);

	if (nreleased < 16)
		released[nreleased++] = t->id;
	free(t);
}

static struct device *new_dev(int id, const char *name)
{
	struct tdev *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->id = id;
	t->dev.release = tdev_release;
	device_initialize(&t->dev);
	if (name)
		assert_int_equal(dev_set_name(&t->dev, "%s", name), 0);
	return &t->dev;
}

static const struct bus_type tbus = { .name = "tbus" };

/* The log lines seen, backtraces left out. */
static char lines[8][512];
static int levels[8];
static int nlines;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (line[0] == ' ' || nlines >= 8)
		return;
	levels[nlines] = level;
	snprintf(lines[nlines++], sizeof(lines[0]), "%s", line);
}

static int setup(void **state)
{
	(void)state;
	nreleased = 0;
	nlines = 0;
	devres_set_log_sink(sink, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	/* What the test registered goes first, even after a failure. */
	t_undo_all();
	devres_set_log_sink(NULL, NULL);
	devres_set_dev_dbg(false);
	return 0;
}

static long devices_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.devices;
}

static void register_unregister(void **state)
{
	long before = devices_now();
	int warns = devres_warn_count();
	struct device *dev = new_dev(1, NULL);

	(void)state;
	assert_int_equal(dev_set_name(dev, "dev-%d.%s", 7, "x"), 0);
	assert_string_equal(dev_name(dev), "dev-7.x");
	/* One path component, as the kernel makes it, from any source. */
	assert_int_equal(dev_set_name(dev, "%s/%d/", "spi", 0), 0);
	assert_string_equal(dev_name(dev), "spi!0!");
	assert_int_equal(dev_set_name(dev, "dev-%d.%s", 7, "x"), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(devices_now(), before + 1);
	/* On no bus: registered, but nothing to bind to. */
	assert_int_equal(device_attach(dev), 0);
	assert_false(device_is_bound(dev));
	t_device_unregister(dev);
	assert_int_equal(devices_now(), before);
	assert_int_equal(nreleased, 1);
	assert_int_equal(devres_warn_count(), warns);
}

static void init_name_is_copied(void **state)
{
	char name[] = "early";
	struct tdev *t = calloc(1, sizeof(*t));

	(void)state;
	assert_non_null(t);
	t->dev.init_name = name;
	t->dev.release = tdev_release;
	assert_int_equal(device_register(&t->dev), 0);
	name[0] = 'X';
	assert_string_equal(dev_name(&t->dev), "early");
	t_device_unregister(&t->dev);
	assert_int_equal(nreleased, 1);
	/* An initial name with a '/' is made one path component too. */
	t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->dev.init_name = "i2c/3";
	t->dev.release = tdev_release;
	assert_int_equal(device_register(&t->dev), 0);
	assert_string_equal(dev_name(&t->dev), "i2c!3");
	t_device_unregister(&t->dev);
	assert_int_equal(nreleased, 2);
}

static void references(void **state)
{
	struct device *dev = new_dev(1, "refs");

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(get_device(dev), dev);
	t_device_unregister(dev);
	/* Our extra reference keeps it. */
	assert_int_equal(nreleased, 0);
	assert_string_equal(dev_name(dev), "refs");
	put_device(dev);
	assert_int_equal(nreleased, 1);
}

static void child_holds_parent(void **state)
{
	struct device *parent = new_dev(1, "parent");
	struct device *child = new_dev(2, "child");

	(void)state;
	assert_int_equal(t_device_add(parent), 0);
	child->parent = parent;
	assert_int_equal(t_device_add(child), 0);
	t_device_unregister(parent);
	assert_int_equal(nreleased, 0);
	get_device(child);
	t_device_unregister(child);
	assert_int_equal(nreleased, 0);
	/* The child's last put releases it, then its parent. */
	put_device(child);
	assert_int_equal(nreleased, 2);
	assert_int_equal(released[0], 2);
	assert_int_equal(released[1], 1);
}

static int actions_run;

static void count_action(void *data)
{
	(void)data;
	actions_run++;
}

static void unbound_resources_go_at_del(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;

	(void)state;
	actions_run = 0;
	devres_ledger_snapshot(&before);
	dev = new_dev(1, "res");
	/* Before device_add and after: both belong to the device. */
	assert_int_equal(devm_add_action(dev, count_action, NULL), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_non_null(devm_kzalloc(dev, 64, GFP_KERNEL));
	assert_int_equal(devm_add_action(dev, count_action, NULL), 0);
	get_device(dev);
	t_device_del(dev);
	assert_int_equal(actions_run, 2);
	/* Recorded after deletion: released at the last put. */
	assert_int_equal(devm_add_action(dev, count_action, NULL), 0);
	put_device(dev);
	assert_int_equal(actions_run, 2);
	put_device(dev);
	assert_int_equal(actions_run, 3);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* A driver's messages carry its name, as dev_driver_string() gives it. */
static int msg_probe(struct device *dev)
{
	dev_info(dev, "bound");
	return 0;
}

static struct device_driver msg_drv = {
	.name = "msgdrv",
	.bus = &tbus,
	.probe = msg_probe,
};

static void messages(void **state)
{
	struct device *dev = new_dev(1, "msg.0");
	struct device *loose = new_dev(2, "loose");

	(void)state;
	assert_int_equal(t_bus_register(&tbus), 0);
	dev->bus = &tbus;
	assert_int_equal(t_device_add(dev), 0);

	dev_err(dev, "failed with %d\n", -5);
	dev_warn(loose, "careful");
	dev_info(NULL, "nobody");
	assert_int_equal(nlines, 3);
	assert_string_equal(lines[0], "tbus msg.0: failed with -5");
	assert_int_equal(levels[0], DEVRES_LOG_ERR);
	assert_string_equal(lines[1], "loose: careful");
	assert_int_equal(levels[1], DEVRES_LOG_WARNING);
	assert_string_equal(lines[2], "(NULL device *): nobody");
	assert_int_equal(levels[2], DEVRES_LOG_INFO);

	/* Debug lines only when asked for. */
	dev_dbg(dev, "quiet");
	assert_int_equal(nlines, 3);
	devres_set_dev_dbg(true);
	dev_dbg(dev, "loud");
	assert_int_equal(nlines, 4);
	assert_string_equal(lines[3], "tbus msg.0: loud");
	assert_int_equal(levels[3], DEVRES_LOG_DEBUG);
	devres_set_dev_dbg(false);

	/* A deferral is no error worth shouting about. */
	assert_int_equal(dev_err_probe(dev, -EPROBE_DEFER, "later"),
			 -EPROBE_DEFER);
	assert_int_equal(nlines, 4);
	assert_int_equal(dev_err_probe(dev, -ENOMEM, "no %s\n", "memory"),
			 -ENOMEM);
	assert_int_equal(nlines, 5);
	assert_string_equal(lines[4], "tbus msg.0: error -ENOMEM: no memory");

	/* Bound: the driver's name, not the bus's; a deferral by its name. */
	assert_int_equal(t_driver_register(&msg_drv), 0);
	assert_int_equal(nlines, 6);
	assert_string_equal(lines[5], "msgdrv msg.0: bound");
	devres_set_dev_dbg(true);
	dev_err_probe(dev, -EPROBE_DEFER, "supplier %s", "clk");
	devres_set_dev_dbg(false);
	assert_int_equal(nlines, 7);
	assert_string_equal(lines[6], "msgdrv msg.0: error -EPROBE_DEFER: "
				      "supplier clk");
	t_driver_unregister(&msg_drv);
	dev_info(dev, "unbound");
	assert_string_equal(lines[7], "tbus msg.0: unbound");

	t_device_unregister(dev);
	put_device(loose);
	t_bus_unregister(&tbus);
}

static void bad_input(void **state)
{
	long before = devices_now();
	struct device *dev = new_dev(1, "bad");
	struct device *never = new_dev(2, "never");
	struct device *noname = new_dev(3, NULL);
	struct device *busless = new_dev(4, "busless");
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(t_device_add(NULL), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 1);

	assert_int_equal(t_device_add(noname), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 2);
	/* Counted from their init: four devices, until released. */
	assert_int_equal(devices_now(), before + 4);
	put_device(noname);

	/* A bus that was never registered. */
	busless->bus = &tbus;
	assert_int_equal(t_device_add(busless), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 3);
	assert_int_equal(devices_now(), before + 3);
	/* Never added: a misuse, said once. */
	assert_int_equal(device_attach(busless), -ENODEV);
	assert_int_equal(devres_warn_count(), warns + 4);
	put_device(busless);

	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(t_device_add(dev), -EEXIST);
	assert_int_equal(devres_warn_count(), warns + 5);
	assert_int_equal(devices_now(), before + 2);

	t_device_del(never);
	assert_int_equal(devres_warn_count(), warns + 6);
	put_device(never);

	get_device(dev);
	t_device_del(dev);
	assert_int_equal(devices_now(), before + 1);
	t_device_del(dev);
	assert_int_equal(devres_warn_count(), warns + 7);
	assert_int_equal(t_device_add(dev), -ENODEV);
	assert_int_equal(devres_warn_count(), warns + 8);
	assert_int_equal(device_attach(dev), -ENODEV);
	put_device(dev);
	assert_int_equal(devices_now(), before + 1);
	put_device(dev);
	assert_int_equal(devices_now(), before);
	assert_int_equal(nreleased, 4);
	assert_int_equal(devres_warn_count(), warns + 8);
}

static void put_too_often(void **state)
{
	long before = devices_now();
	struct device *dev = new_dev(1, "overput");
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(device_add(dev), 0); /* untracked: refs are ours */
	put_device(dev);
	assert_int_equal(nreleased, 0);
	/* This one drops the registration's own reference. */
	put_device(dev);
	assert_int_equal(nreleased, 1);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_int_equal(devices_now(), before);
}

static void register_failure_then_put(void **state)
{
	struct tdev *t = calloc(1, sizeof(*t));
	int warns = devres_warn_count();

	(void)state;
	assert_non_null(t);
	t->dev.release = tdev_release;
	t->dev.bus = &tbus; /* not registered */
	assert_int_equal(device_register(&t->dev), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 1);
	put_device(&t->dev);
	assert_int_equal(nreleased, 1);
}

static void stack_release(struct device *dev)
{
	(void)dev;
}

/* The child half of dbg_from_environment: one dev_dbg line to stderr. */
static int dbg_child(void)
{
	struct device dev = { .release = stack_release };

	device_initialize(&dev);
	if (dev_set_name(&dev, "dbg-dev"))
		return 2;
	dev_dbg(&dev, "debugging");
	put_device(&dev);
	return 0;
}

/* DEVRES_DEBUG=1 at start turns dev_dbg on; anything else leaves it off. */
static void dbg_from_environment(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(run_self("DEVRES_DEBUG=1", &err, "--dbg-child", NULL),
			 0);
	assert_non_null(strstr(err, "dbg-dev: debugging\n"));
	free(err);
	assert_int_equal(run_self("DEVRES_DEBUG=0", &err, "--dbg-child", NULL),
			 0);
	assert_null(strstr(err, "debugging"));
	free(err);
	assert_int_equal(run_self("DEVRES_DEBUG", &err, "--dbg-child", NULL),
			 0);
	assert_null(strstr(err, "debugging"));
	free(err);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(register_unregister, setup,
						teardown),
		cmocka_unit_test_setup_teardown(init_name_is_copied, setup,
						teardown),
		cmocka_unit_test_setup_teardown(references, setup, teardown),
		cmocka_unit_test_setup_teardown(child_holds_parent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(unbound_resources_go_at_del,
						setup, teardown),
		cmocka_unit_test_setup_teardown(messages, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(put_too_often, setup, teardown),
		cmocka_unit_test_setup_teardown(register_failure_then_put,
						setup, teardown),
		cmocka_unit_test(dbg_from_environment),
	};

	if (argc > 1 && strcmp(argv[1], "--dbg-child") == 0)
		return dbg_child();
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
