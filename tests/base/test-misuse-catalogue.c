// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The misuse catalogue (docs/misuse.md): one test per kind of misuse. Each
 * asserts exactly one WARN, naming the function and the reason, no crash
 * (ASan and UBSan watch), and no leak: the teardown puts every device and
 * compares the ledger with the one taken before the test.
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

struct fixture {
	struct device *dev;   /* initialized, not added */
	struct device *other; /* a second device, for foreign pointers */
	struct devres_ledger base;
	int warns;
};

static struct fixture fx;
static char last_warn[512];
static int freed_devices, made_devices;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (level == DEVRES_LOG_WARNING && !strncmp(line, "WARNING: ", 9))
		snprintf(last_warn, sizeof(last_warn), "%s", line);
}

static void free_dev(struct device *dev)
{
	freed_devices++;
	free(dev);
}

static struct device *new_dev(const char *name)
{
	struct device *dev = calloc(1, sizeof(*dev));

	assert_non_null(dev);
	dev->release = free_dev;
	device_initialize(dev);
	made_devices++;
	assert_int_equal(dev_set_name(dev, "%s", name), 0);
	return dev;
}

static int setup(void **state)
{
	(void)state;
	devres_ledger_snapshot(&fx.base);
	freed_devices = made_devices = 0;
	fx.dev = new_dev("victim");
	fx.other = new_dev("other");
	last_warn[0] = 0;
	devres_set_log_sink(sink, NULL);
	fx.warns = devres_warn_count();
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	if (fx.dev)
		put_device(fx.dev);
	put_device(fx.other);
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&fx.base, &now, stderr)) {
		fprintf(stderr, "leak: the ledger is not back at its "
				"baseline\n");
		return -1;
	}
	if (freed_devices != made_devices) {
		fprintf(stderr, "%d devices made, %d freed\n", made_devices,
			freed_devices);
		return -1;
	}
	return 0;
}

/* Exactly one WARN since the last check, from @func, saying @reason. */
static void one_warn(const char *func, const char *reason)
{
	char want[128];

	assert_int_equal(devres_warn_count() - fx.warns, 1);
	snprintf(want, sizeof(want), ": %s: ", func);
	if (!strstr(last_warn, want) || !strstr(last_warn, reason))
		fail_msg("WARN line '%s' does not name %s and '%s'", last_warn,
			 func, reason);
	fx.warns = devres_warn_count();
	last_warn[0] = 0;
}

static void no_warn(void)
{
	assert_int_equal(devres_warn_count() - fx.warns, 0);
}

static int released;

static void count_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	released++;
}

static void count_action(void *data)
{
	(void)data;
	released++;
}

static void stats_are(struct device *dev, int allocs)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, allocs);
}

/* 1. Adding a node twice. */
static void double_add(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(fx.dev, res);
	devres_add(fx.dev, res);
	one_warn("devres_add", "is already added");
	stats_are(fx.dev, 1);
}

/* 2. Adding a node to a second device. */
static void add_to_two_devices(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(fx.dev, res);
	devres_add(fx.other, res);
	one_warn("devres_add", "is already added");
	stats_are(fx.dev, 1);
	stats_are(fx.other, 0);
}

/* 3. Adding NULL (an unchecked devres_alloc() failure). */
static void add_null(void **state)
{
	(void)state;
	devres_add(fx.dev, NULL);
	one_warn("devres_add", "NULL resource");
	stats_are(fx.dev, 0);
}

/* 4. Freeing a node that is still on a device. */
static void free_while_added(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(fx.dev, res);
	devres_free(res);
	one_warn("devres_free", "is still on a device");
	released = 0;
	assert_int_equal(devres_release_all(fx.dev), 1);
	assert_int_equal(released, 1);
}

/* 5. devres_get() with a node that is already added. */
static void get_added_node(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(fx.dev, res);
	assert_null(devres_get(fx.dev, res, NULL, NULL));
	one_warn("devres_get", "is already added");
	stats_are(fx.dev, 1);
}

/* 6. devm_kfree() of another device's allocation. */
static void kfree_foreign(void **state)
{
	void *p = devm_kmalloc(fx.other, 16, GFP_KERNEL);

	(void)state;
	devm_kfree(fx.dev, p);
	one_warn("devm_kfree", "is not a managed allocation of this device");
	stats_are(fx.other, 1);
}

/* 7. devm_kfree() twice. */
static void kfree_twice(void **state)
{
	void *p = devm_kmalloc(fx.dev, 16, GFP_KERNEL);

	(void)state;
	devm_kfree(fx.dev, p);
	no_warn();
	devm_kfree(fx.dev, p);
	one_warn("devm_kfree", "is not a managed allocation of this device");
}

/* 8. devm_kfree() of memory from malloc(). */
static void kfree_unmanaged(void **state)
{
	void *p = malloc(16);

	(void)state;
	assert_non_null(p);
	devm_kfree(fx.dev, p);
	one_warn("devm_kfree", "is not a managed allocation of this device");
	free(p);
}

/* 9. devm_kfree() of a devres_alloc() node (not devm_kmalloc memory). */
static void kfree_devres_node(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(fx.dev, res);
	devm_kfree(fx.dev, res);
	one_warn("devm_kfree", "is not a managed allocation of this device");
	stats_are(fx.dev, 1);
}

/* 10. devm_krealloc() of memory the device does not manage. */
static void krealloc_foreign(void **state)
{
	void *p = devm_kmalloc(fx.other, 16, GFP_KERNEL);

	(void)state;
	assert_null(devm_krealloc(fx.dev, p, 64, GFP_KERNEL));
	one_warn("devm_krealloc", "is not a managed allocation of this device");
	stats_are(fx.other, 1);
	stats_are(fx.dev, 0);
}

/* 11. devm_free_pages() of an address the device does not manage. */
static void free_pages_foreign(void **state)
{
	unsigned long addr = devm_get_free_pages(fx.other, GFP_KERNEL, 0);

	(void)state;
	assert_true(addr != 0);
	devm_free_pages(fx.dev, addr);
	one_warn("devm_free_pages", "is not a managed page allocation");
	stats_are(fx.other, 1);
}

static int group_key;

/* 12. Closing a group that does not exist. */
static void close_unknown_group(void **state)
{
	(void)state;
	devres_close_group(fx.dev, &group_key);
	one_warn("devres_close_group", "no group");
}

/* 13. Closing a group twice. */
static void close_closed_group(void **state)
{
	void *id = devres_open_group(fx.dev, NULL, GFP_KERNEL);

	(void)state;
	assert_non_null(id);
	devres_close_group(fx.dev, id);
	no_warn();
	devres_close_group(fx.dev, id);
	one_warn("devres_close_group", "is already closed");
}

/* 14. Closing "the latest open group" when every group is closed. */
static void close_none_open(void **state)
{
	void *id = devres_open_group(fx.dev, &group_key, GFP_KERNEL);

	(void)state;
	devres_close_group(fx.dev, id);
	devres_close_group(fx.dev, NULL);
	one_warn("devres_close_group", "no group");
}

/* 15. Removing a group that does not exist. */
static void remove_unknown_group(void **state)
{
	(void)state;
	devres_remove_group(fx.dev, &group_key);
	one_warn("devres_remove_group", "no group");
}

/* 16. Releasing a group that does not exist (silent on an empty list). */
static void release_unknown_group(void **state)
{
	(void)state;
	assert_non_null(devm_kmalloc(fx.dev, 8, GFP_KERNEL));
	assert_int_equal(devres_release_group(fx.dev, &group_key), 0);
	one_warn("devres_release_group", "no group");
	stats_are(fx.dev, 1);
	/* The kernel's exception: an empty list is a release in progress. */
	devres_release_all(fx.dev);
	assert_int_equal(devres_release_group(fx.dev, &group_key), 0);
	no_warn();
}

/* 17. Removing an action that was never added. */
static void remove_absent_action(void **state)
{
	(void)state;
	devm_remove_action(fx.dev, count_action, &group_key);
	one_warn("devm_remove_action", "is not recorded");
}

/* 18. Releasing an action that was never added: it must not run. */
static void release_absent_action(void **state)
{
	(void)state;
	released = 0;
	assert_int_equal(devm_add_action(fx.dev, count_action, NULL), 0);
	devm_release_action(fx.dev, count_action, &group_key);
	one_warn("devm_release_action", "is not recorded");
	assert_int_equal(released, 0);
	assert_true(devm_is_action_added(fx.dev, count_action, NULL));
}

/* 19. A NULL action. */
static void add_null_action(void **state)
{
	(void)state;
	assert_int_equal(devm_add_action(fx.dev, NULL, NULL), -EINVAL);
	one_warn("devm_add_action_named", "NULL action");
	stats_are(fx.dev, 0);
}

/* 20. A NULL callback for devres_for_each_res(). */
static void for_each_null_fn(void **state)
{
	(void)state;
	devres_for_each_res(fx.dev, count_release, NULL, NULL, NULL, NULL);
	one_warn("devres_for_each_res", "NULL callback");
}

static int match_adds(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	assert_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	return 1;
}

/* 21. devres on the same device from a match callback (would deadlock). */
static void reenter_from_match(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(fx.dev, res);
	assert_ptr_equal(devres_find(fx.dev, count_release, match_adds, NULL),
			 res);
	one_warn("devm_kmalloc", "from a match or for-each callback");
	stats_are(fx.dev, 1);
}

static void fn_releases_all(struct device *dev, void *res, void *data)
{
	(void)res;
	*(int *)data = devres_release_all(dev);
}

/* 22. devres_release_all() from a for-each callback. */
static void release_all_from_for_each(void **state)
{
	void *res = devres_alloc(count_release, 8, GFP_KERNEL);
	int ret = 0;

	(void)state;
	devres_add(fx.dev, res);
	devres_for_each_res(fx.dev, count_release, NULL, NULL, fn_releases_all,
			    &ret);
	assert_int_equal(ret, -EDEADLK);
	one_warn("devres_release_all", "from a match or for-each callback");
	stats_are(fx.dev, 1);
}

/* 23. devres_release_all() on a device never initialized. */
static void release_all_uninitialized(void **state)
{
	struct device never;

	(void)state;
	memset(&never, 0, sizeof(never));
	assert_int_equal(devres_release_all(&never), -ENODEV);
	one_warn("devres_release_all", "not initialized");
}

/* 24. A NULL device. */
static void null_device(void **state)
{
	(void)state;
	assert_null(devm_kmalloc(NULL, 8, GFP_KERNEL));
	one_warn("devm_kmalloc", "NULL device");
}

/* 25. devres_dump() to a NULL FILE. */
static void dump_null_file(void **state)
{
	(void)state;
	devres_dump(fx.dev, NULL);
	one_warn("devres_dump", "NULL FILE");
}

/* 26. devres_get_stats() into NULL. */
static void stats_null(void **state)
{
	(void)state;
	devres_get_stats(fx.dev, NULL);
	one_warn("devres_get_stats", "NULL stats");
}

/* 27. devres_ledger_snapshot() into NULL. */
static void ledger_null(void **state)
{
	(void)state;
	devres_ledger_snapshot(NULL);
	one_warn("devres_ledger_snapshot", "NULL ledger");
}

/* 28. get_device() on a device never initialized. */
static void get_uninitialized(void **state)
{
	struct device never;

	(void)state;
	memset(&never, 0, sizeof(never));
	assert_ptr_equal(get_device(&never), &never);
	one_warn("get_device", "not initialized");
}

/* 29. dev_set_name() on a device never initialized. */
static void name_uninitialized(void **state)
{
	struct device never;

	(void)state;
	memset(&never, 0, sizeof(never));
	assert_int_equal(dev_set_name(&never, "x"), -EINVAL);
	one_warn("dev_set_name", "not initialized");
}

static void put_action(void *data)
{
	put_device(data);
}

/* 30. put_device() underflow: a put with no reference left. */
static void put_underflow(void **state)
{
	struct device *dev = fx.dev;

	(void)state;
	/* The release of the last reference runs the action, which puts. */
	assert_int_equal(devm_add_action(dev, put_action, dev), 0);
	fx.dev = NULL;
	put_device(dev);
	one_warn("put_device", "no reference left to put");
}

static int static_released;

static void static_release(struct device *dev)
{
	(void)dev;
	static_released++;
}

/* 31. put_device() of a device already released. */
static void put_after_release(void **state)
{
	static struct device dev;

	(void)state;
	memset(&dev, 0, sizeof(dev));
	dev.release = static_release;
	static_released = 0;
	device_initialize(&dev);
	put_device(&dev);
	assert_int_equal(static_released, 1);
	no_warn();
	put_device(&dev);
	one_warn("put_device", "device already released");
	assert_int_equal(static_released, 1);
}

/* 32. A device without a release function (the kernel WARNs too). */
static void no_release_function(void **state)
{
	static struct device dev;

	(void)state;
	memset(&dev, 0, sizeof(dev));
	device_initialize(&dev);
	assert_int_equal(dev_set_name(&dev, "orphan"), 0);
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	put_device(&dev);
	one_warn("put_device", "has no release function");
}

/* The driver model's misuses, on a bus of their own. */

static int catalogue_match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	return 1;
}

static const struct bus_type cat_bus = {
	.name = "catalogue",
	.match = catalogue_match,
};

static const struct bus_type other_bus = {
	.name = "catalogue-other",
};

static struct device *added(const char *name)
{
	struct device *dev = new_dev(name);

	dev->bus = &cat_bus;
	assert_int_equal(device_add(dev), 0);
	return dev;
}

static void gone(struct device *dev)
{
	device_del(dev);
	put_device(dev);
}

static int bus_setup(void **state)
{
	(void)state;
	if (bus_register(&cat_bus) || bus_register(&other_bus))
		return -1;
	return 0;
}

static int bus_teardown(void **state)
{
	(void)state;
	bus_unregister(&cat_bus);
	bus_unregister(&other_bus);
	return 0;
}

/* 33. A device whose owner puts it while it is still registered. */
static void put_while_registered(void **state)
{
	struct device *dev = added("registered");

	(void)state;
	put_device(dev); /* the owner's reference */
	no_warn();
	put_device(dev); /* the registration's: one too many */
	one_warn("put_device", "released while still registered");
}

/* 34. device_add() twice. */
static void add_device_twice(void **state)
{
	struct device *dev = added("twice");

	(void)state;
	assert_int_equal(device_add(dev), -EEXIST);
	one_warn("device_add", "device is already added");
	gone(dev);
}

/* 35. device_add() of a deleted device. */
static void add_deleted_device(void **state)
{
	struct device *dev = added("deleted");

	(void)state;
	device_del(dev);
	no_warn();
	assert_int_equal(device_add(dev), -ENODEV);
	one_warn("device_add", "device was deleted");
	put_device(dev);
}

/* 36. device_add() on a bus that is not registered. */
static void add_on_unregistered_bus(void **state)
{
	static const struct bus_type nowhere = { .name = "nowhere" };

	(void)state;
	fx.dev->bus = &nowhere;
	assert_int_equal(device_add(fx.dev), -EINVAL);
	one_warn("device_add", "bus is not registered");
}

/* 37. device_add() of a device without a name. */
static void add_nameless_device(void **state)
{
	struct device *dev = calloc(1, sizeof(*dev));

	(void)state;
	assert_non_null(dev);
	dev->release = free_dev;
	made_devices++;
	device_initialize(dev);
	assert_int_equal(device_add(dev), -EINVAL);
	one_warn("device_add", "device has no name");
	put_device(dev);
}

/* 38. device_del() twice. */
static void del_device_twice(void **state)
{
	struct device *dev = added("del-twice");

	(void)state;
	device_del(dev);
	no_warn();
	device_del(dev);
	one_warn("device_del", "device is already deleted");
	put_device(dev);
}

/* 39. device_del() of a device never added. */
static void del_never_added(void **state)
{
	(void)state;
	device_del(fx.dev);
	one_warn("device_del", "device was never added");
}

/* 40. Managed calls on a deleted device: allowed, released at the last put. */
static void devres_on_deleted_device(void **state)
{
	struct device *dev = added("late");

	(void)state;
	device_del(dev);
	released = 0;
	assert_int_equal(devm_add_action(dev, count_action, NULL), 0);
	no_warn();
	/* device_add again is the misuse. */
	assert_int_equal(device_add(dev), -ENODEV);
	one_warn("device_add", "device was deleted");
	put_device(dev);
	assert_int_equal(released, 1);
}

static struct device_driver cat_driver;

static int probe_deletes_itself(struct device *dev)
{
	device_del(dev);
	return 0;
}

static int probe_unregisters_driver(struct device *dev)
{
	(void)dev;
	driver_unregister(&cat_driver);
	return 0;
}

static int probe_returns_positive(struct device *dev)
{
	(void)dev;
	return 1;
}

static void with_probe(int (*probe)(struct device *))
{
	cat_driver = (struct device_driver){
		.name = "catalogue-drv",
		.bus = &cat_bus,
		.probe = probe,
	};
	assert_int_equal(driver_register(&cat_driver), 0);
}

/* 41. device_del() from the device's own probe (would deadlock). */
static void del_from_own_probe(void **state)
{
	struct device *dev;

	(void)state;
	with_probe(probe_deletes_itself);
	dev = added("self-deleting");
	one_warn("device_del", "called from the device's own probe or remove");
	assert_ptr_equal(dev->driver, &cat_driver);
	gone(dev);
	driver_unregister(&cat_driver);
	no_warn();
}

/* 42. driver_unregister() from the driver's own probe. */
static void unregister_from_own_probe(void **state)
{
	struct device *dev;

	(void)state;
	with_probe(probe_unregisters_driver);
	dev = added("unregistering");
	one_warn("driver_unregister", "called from the driver's own probe or "
				      "remove");
	gone(dev);
	driver_unregister(&cat_driver);
	no_warn();
}

/* 43. A probe that returns a positive value. */
static void probe_positive(void **state)
{
	struct device *dev;

	(void)state;
	with_probe(probe_returns_positive);
	dev = added("positive");
	one_warn("catalogue-drv", "probe returned 1");
	assert_null(dev->driver);
	gone(dev);
	driver_unregister(&cat_driver);
}

/* 44. Unregistering a driver that is not registered. */
static void unregister_unregistered_driver(void **state)
{
	static struct device_driver drv = {
		.name = "never-registered",
		.bus = &cat_bus,
	};

	(void)state;
	driver_unregister(&drv);
	one_warn("driver_unregister", "driver is not registered");
}

/* 45. Unregistering a driver twice. */
static void unregister_driver_twice(void **state)
{
	(void)state;
	with_probe(NULL);
	driver_unregister(&cat_driver);
	no_warn();
	driver_unregister(&cat_driver);
	one_warn("driver_unregister", "driver is not registered");
}

/* 46. Registering a driver twice. */
static void register_driver_twice(void **state)
{
	(void)state;
	with_probe(NULL);
	assert_int_equal(driver_register(&cat_driver), -EBUSY);
	one_warn("driver_register", "driver is already registered");
	driver_unregister(&cat_driver);
}

/* 47. Registering a driver with no bus. */
static void register_driver_without_bus(void **state)
{
	static struct device_driver drv = { .name = "busless" };

	(void)state;
	assert_int_equal(driver_register(&drv), -EINVAL);
	one_warn("driver_register", "has no bus");
}

/* 48. Binding a device to a driver of another bus. */
static void attach_driver_of_other_bus(void **state)
{
	static struct device_driver drv = {
		.name = "elsewhere",
		.bus = &other_bus,
	};
	struct device *dev = added("mismatched");

	(void)state;
	assert_int_equal(device_driver_attach(&drv, dev), -EINVAL);
	one_warn("device_driver_attach", "is of bus");
	gone(dev);
}

/* 49. Registering a bus twice. */
static void register_bus_twice(void **state)
{
	(void)state;
	assert_int_equal(bus_register(&cat_bus), -EBUSY);
	one_warn("bus_register", "is already registered");
}

/* 50. Unregistering a bus that still has devices. */
static void unregister_busy_bus(void **state)
{
	struct device *dev = added("on-bus");

	(void)state;
	bus_unregister(&cat_bus);
	one_warn("bus_unregister", "still has devices or drivers");
	gone(dev);
}

/* 51. Unregistering a bus that is not registered. */
static void unregister_unregistered_bus(void **state)
{
	static const struct bus_type never = { .name = "never" };

	(void)state;
	bus_unregister(&never);
	one_warn("bus_unregister", "bus is not registered");
}

/* 52. An action lookup with a NULL action (never a NULL-release node). */
static void null_action_lookup(void **state)
{
	void *p = devres_alloc(NULL, 0, GFP_KERNEL);
	struct devres_stats st;

	(void)state;
	assert_non_null(p);
	devres_add(fx.dev, p);
	devm_remove_action(fx.dev, NULL, NULL);
	one_warn("devm_remove_action", "NULL action");
	devm_release_action(fx.dev, NULL, NULL);
	one_warn("devm_release_action", "NULL action");
	assert_false(devm_is_action_added(fx.dev, NULL, p));
	one_warn("devm_is_action_added", "NULL action");
	devres_get_stats(fx.dev, &st);
	assert_int_equal(st.allocs, 1);
}

/* 53. devm_kmemdup() of a NULL source. */
static void kmemdup_null_source(void **state)
{
	struct devres_stats st;

	(void)state;
	assert_null(devm_kmemdup(fx.dev, NULL, 4, GFP_KERNEL));
	one_warn("devm_kmemdup", "NULL source");
	devres_get_stats(fx.dev, &st);
	assert_int_equal(st.allocs, 0);
}

/* 54. A log sink that dumps the device on every WARN, under its lock. */
static int dumping_calls;

static void dumping_sink(void *ctx, int level, const char *line)
{
	FILE *f = fopen("/dev/null", "w");

	dumping_calls++;
	sink(ctx, level, line);
	if (dumping_calls < 10 && f)
		devres_dump(fx.dev, f);
	if (f)
		fclose(f);
}

static void fn_allocates(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	assert_null(devm_kmalloc(dev, 8, GFP_KERNEL));
}

static void rel_nop(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void sink_dumps_locked_device(void **state)
{
	(void)state;
	devres_add(fx.dev, devres_alloc(rel_nop, 4, GFP_KERNEL));
	dumping_calls = 0;
	devres_set_log_sink(dumping_sink, NULL);
	devres_for_each_res(fx.dev, rel_nop, NULL, NULL, fn_allocates, NULL);
	devres_set_log_sink(sink, NULL);
	assert_int_equal(dumping_calls, 1);
	/* The sink's own dump is refused too: counted, not sent to it. */
	assert_int_equal(devres_warn_count() - fx.warns, 2);
	fx.warns++;
	one_warn("devm_kmalloc", "from a match or for-each callback");
}

/* 55. A driver writes before its allocation: the list is a cycle. */
static void underflow_breaks_list(void **state)
{
	char *p;
	void *saved;

	(void)state;
	p = devm_kmalloc(fx.dev, 8, GFP_KERNEL);
	assert_non_null(p);
	assert_int_equal(devres_check(fx.dev), 0);
	/* The node's header, in front of the data: its first word is next. */
	memcpy(&saved, p - 16, sizeof(saved));
	*(void **)(p - 16) = p - 16;
	assert_int_equal(devres_check(fx.dev), -EUCLEAN);
	one_warn("devres_check", "the list is a cycle");
	memcpy(p - 16, &saved, sizeof(saved));
	assert_int_equal(devres_check(fx.dev), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(double_add),
		T(add_to_two_devices),
		T(add_null),
		T(free_while_added),
		T(get_added_node),
		T(kfree_foreign),
		T(kfree_twice),
		T(kfree_unmanaged),
		T(kfree_devres_node),
		T(krealloc_foreign),
		T(free_pages_foreign),
		T(close_unknown_group),
		T(close_closed_group),
		T(close_none_open),
		T(remove_unknown_group),
		T(release_unknown_group),
		T(remove_absent_action),
		T(release_absent_action),
		T(add_null_action),
		T(for_each_null_fn),
		T(reenter_from_match),
		T(release_all_from_for_each),
		T(release_all_uninitialized),
		T(null_device),
		T(dump_null_file),
		T(stats_null),
		T(ledger_null),
		T(get_uninitialized),
		T(name_uninitialized),
		T(put_underflow),
		T(put_after_release),
		T(no_release_function),
		T(put_while_registered),
		T(add_device_twice),
		T(add_deleted_device),
		T(add_on_unregistered_bus),
		T(add_nameless_device),
		T(del_device_twice),
		T(del_never_added),
		T(devres_on_deleted_device),
		T(del_from_own_probe),
		T(unregister_from_own_probe),
		T(probe_positive),
		T(unregister_unregistered_driver),
		T(unregister_driver_twice),
		T(register_driver_twice),
		T(register_driver_without_bus),
		T(attach_driver_of_other_bus),
		T(register_bus_twice),
		T(unregister_busy_bus),
		T(unregister_unregistered_bus),
		T(null_action_lookup),
		T(kmemdup_null_source),
		T(sink_dumps_locked_device),
		T(underflow_breaks_list),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, bus_setup, bus_teardown);
}
