// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * The driver model's lifecycles turned against themselves, four ways.
 *
 * Starts raced: every call that starts an object's life from zeroed
 * memory (device_initialize(), device_register(),
 * platform_device_register(), driver_register(),
 * platform_driver_register(), bus_register()) made by two threads at once
 * on the same object, many rounds: exactly one succeeds, the other gets
 * its refusal and one WARN, and the ledger counts one device. Before, two
 * device_initialize() could both run, the device counted twice.
 *
 * A rename inside device_add(): another thread names the device "" while
 * the add is between its checks and the lock that makes the device added
 * (the add's first allocation hands over to that thread, as a scheduler
 * might). The add must see the new name: refused, "device has no name".
 * Before, the check ran first and a nameless device joined its bus.
 *
 * A registered child in its parent's managed memory: freed by
 * devm_kfree(), moved by devm_krealloc(), by a group's release, by
 * devres_release_all(), by the unbind of the binding that holds it, and a
 * platform device in a managed block. Each free WARNs once, naming the
 * child and the call, and unregisters the child first. Before, the memory
 * went with the child still on its bus: no WARN, memory in use freed.
 *
 * A child added from its parent's remove, when device_del(),
 * device_unregister() or platform_device_unregister() runs that remove:
 * accepted, as the kernel's sysfs still holds the parent's directory
 * there; after the delete, refused with -ENOENT. Before, -ENOENT both.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"
#include "rounds.h"

static const struct bus_type lbus = { .name = "mlife" };

static void quiet(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

/* The last WARN line, for the cells that check its text. */
static char last[512];

static void keep_last(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0)
		snprintf(last, sizeof(last), "%s", line + 9);
}

/* ---- starts raced ---- */

enum start {
	S_INITIALIZE,
	S_REGISTER,
	S_PDEV_REGISTER,
	S_DRV_REGISTER,
	S_PDRV_REGISTER,
	S_BUS_REGISTER,
	NR_START
};

static const char *const start_names[NR_START] = {
	"device_initialize",	    "device_register",
	"platform_device_register", "driver_register",
	"platform_driver_register", "bus_register",
};

static void nop_release(struct device *dev)
{
	(void)dev;
}

static union {
	struct device dev;
	struct platform_device pdev;
	struct device_driver drv;
	struct platform_driver pdrv;
	struct bus_type bus;
} obj;

static int pdrv_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static enum start cur_start;
static pthread_barrier_t at_once;

/* Fills in what an owner sets before the call; the rest stays zeroed. */
static void fill(enum start s)
{
	memset(&obj, 0, sizeof(obj));
	switch (s) {
	case S_INITIALIZE:
	case S_REGISTER:
		obj.dev.init_name = "mlife-dev";
		obj.dev.release = nop_release;
		break;
	case S_PDEV_REGISTER:
		obj.pdev.name = "mlife-pdev";
		obj.pdev.id = PLATFORM_DEVID_NONE;
		obj.pdev.dev.release = nop_release;
		break;
	case S_DRV_REGISTER:
		obj.drv.name = "mlife-drv";
		obj.drv.bus = &lbus;
		break;
	case S_PDRV_REGISTER:
		obj.pdrv.driver.name = "mlife-pdrv";
		obj.pdrv.probe = pdrv_probe;
		break;
	case S_BUS_REGISTER:
		obj.bus.name = "mlife-bus";
		break;
	case NR_START:
		break;
	}
}

/* 0, or the call's error; device_initialize() says nothing: 0. */
static int start_call(enum start s)
{
	switch (s) {
	case S_INITIALIZE:
		device_initialize(&obj.dev);
		return 0;
	case S_REGISTER:
		return device_register(&obj.dev);
	case S_PDEV_REGISTER:
		return platform_device_register(&obj.pdev);
	case S_DRV_REGISTER:
		return driver_register(&obj.drv);
	case S_PDRV_REGISTER:
		return platform_driver_register(&obj.pdrv);
	case S_BUS_REGISTER:
		return bus_register(&obj.bus);
	case NR_START:
		break;
	}
	return -EINVAL;
}

/* Ends the life the winner started. */
static void start_undo(enum start s)
{
	switch (s) {
	case S_INITIALIZE:
		put_device(&obj.dev);
		break;
	case S_REGISTER:
		device_unregister(&obj.dev);
		break;
	case S_PDEV_REGISTER:
		platform_device_unregister(&obj.pdev);
		break;
	case S_DRV_REGISTER:
		driver_unregister(&obj.drv);
		break;
	case S_PDRV_REGISTER:
		platform_driver_unregister(&obj.pdrv);
		break;
	case S_BUS_REGISTER:
		bus_unregister(&obj.bus);
		break;
	case NR_START:
		break;
	}
}

/* 1 for the calls whose winner counts a device in the ledger. */
static long starts_device(int s)
{
	return s == S_INITIALIZE || s == S_REGISTER || s == S_PDEV_REGISTER;
}

static void *racer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&at_once);
	return (void *)(intptr_t)start_call(cur_start);
}

static void starts_raced(void **state)
{
	long rounds = test_race_rounds("MLIFE_ROUNDS", 3000), all_bad = 0;

	(void)state;
	devres_set_log_sink(quiet, NULL);
	for (int s = 0; s < NR_START; s++) {
		long bad = 0;

		cur_start = (enum start)s;
		for (long r = 0; r < rounds; r++) {
			struct devres_ledger base, mid, now;
			pthread_t t;
			void *theirs;
			int mine, w0, ok;

			fill(cur_start);
			devres_ledger_snapshot(&base);
			assert_int_equal(
				pthread_barrier_init(&at_once, NULL, 2), 0);
			w0 = devres_warn_count();
			assert_int_equal(pthread_create(&t, NULL, racer, NULL),
					 0);
			mine = (int)(intptr_t)racer(NULL);
			pthread_join(t, &theirs);
			pthread_barrier_destroy(&at_once);
			devres_ledger_snapshot(&mid);
			ok = (mine == 0) + ((intptr_t)theirs == 0);
			/* device_initialize() returns nothing: WARNs tell. */
			if (cur_start == S_INITIALIZE)
				ok = 2 - (devres_warn_count() - w0);
			if (ok != 1 || devres_warn_count() != w0 + 1 ||
			    mid.devices - base.devices != starts_device(s))
				bad++;
			start_undo(cur_start);
			devres_ledger_snapshot(&now);
			/* A start counted twice leaves one device for ever. */
			if (now.devices != base.devices)
				bad++;
		}
		if (bad)
			print_error("%s: %ld of %ld rounds not exactly one "
				    "start with one WARN\n",
				    start_names[s], bad, rounds);
		all_bad += bad;
	}
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(all_bad, 0);
}

/* ---- a rename inside device_add() ---- */

/*
 * The adder's first allocation after arming hands over to the renamer
 * and waits for it: the dev build by this binary's own calloc() and
 * malloc(), the sanitizer builds by their allocator hooks.
 */
static pthread_mutex_t hand_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hand_cond = PTHREAD_COND_INITIALIZER;
static int hand_step; /* 1: the renamer's turn; 2: done */
static pthread_t adder;
static int armed;

static void hand_over(void)
{
	if (!__atomic_load_n(&armed, __ATOMIC_RELAXED) ||
	    !pthread_equal(pthread_self(), adder))
		return;
	__atomic_store_n(&armed, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&hand_lock);
	hand_step = 1;
	pthread_cond_broadcast(&hand_cond);
	while (hand_step != 2)
		pthread_cond_wait(&hand_cond, &hand_lock);
	pthread_mutex_unlock(&hand_lock);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
int __sanitizer_install_malloc_and_free_hooks(
	void (*on_malloc)(const volatile void *, size_t),
	void (*on_free)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	hand_over();
}

static void on_free(const volatile void *p)
{
	(void)p;
}

static void hooks_on(void)
{
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
/* glibc's own allocator, under the names it exports for this. */
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
void *__libc_malloc(size_t n);
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
void *__libc_calloc(size_t k, size_t n);

void *malloc(size_t n)
{
	void *p = __libc_malloc(n);

	hand_over();
	return p;
}

void *calloc(size_t k, size_t n)
{
	void *p = __libc_calloc(k, n);

	hand_over();
	return p;
}

static void hooks_on(void)
{
}
#endif

static struct device named;

static void *renamer(void *arg)
{
	int *ret = arg;

	pthread_mutex_lock(&hand_lock);
	while (hand_step != 1)
		pthread_cond_wait(&hand_cond, &hand_lock);
	pthread_mutex_unlock(&hand_lock);
	*ret = dev_set_name(&named, "%s", "");
	pthread_mutex_lock(&hand_lock);
	hand_step = 2;
	pthread_cond_broadcast(&hand_cond);
	pthread_mutex_unlock(&hand_lock);
	return NULL;
}

static void rename_inside_add(void **state)
{
	struct devres_ledger base, now;
	pthread_t t;
	int renamed = 1, ret, w0;

	(void)state;
	hooks_on();
	devres_ledger_snapshot(&base);
	memset(&named, 0, sizeof(named));
	named.release = nop_release;
	device_initialize(&named);
	assert_int_equal(dev_set_name(&named, "mlife-named"), 0);
	hand_step = 0;
	assert_int_equal(pthread_create(&t, NULL, renamer, &renamed), 0);
	devres_set_log_sink(keep_last, NULL);
	w0 = devres_warn_count();
	adder = pthread_self();
	__atomic_store_n(&armed, 1, __ATOMIC_RELAXED);
	ret = device_add(&named);
	__atomic_store_n(&armed, 0, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	devres_set_log_sink(NULL, NULL);
	/* The rename landed while the add ran: before its lock. */
	assert_int_equal(hand_step, 2);
	assert_int_equal(renamed, 0);
	if (ret == 0)
		device_del(&named);
	put_device(&named);
	assert_int_equal(ret, -EINVAL);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_non_null(strstr(last, "device_add: device has no name"));
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
}

/* ---- a registered child in its parent's managed memory ---- */

enum way {
	W_KFREE,
	W_KREALLOC,
	W_GROUP,
	W_RELEASE_ALL,
	W_UNBIND,
	W_PDEV,
	NR_WAY
};

static const char *const way_names[NR_WAY] = {
	"devm_kfree",	      "devm_krealloc", "devres_release_group",
	"devres_release_all", "unbind",	       "platform device",
};

/* The call the WARN names, where it is a call of the test's. */
static const char *const way_calls[NR_WAY] = {
	"devm_kfree",
	"devm_krealloc",
	"devres_release_group",
	"devres_release_all",
	NULL,
	"devm_kfree",
};

static int child_released;

static void child_release(struct device *dev)
{
	(void)dev;
	child_released++;
}

static struct device *parent;
static void *block;

/* A child device in a zeroed managed block of @owner, registered. */
static struct device *child_in(struct device *owner, size_t size)
{
	struct device *child;

	block = devm_kzalloc(owner, size, GFP_KERNEL);
	assert_non_null(block);
	child = block;
	child->parent = parent;
	child->release = child_release;
	device_initialize(child);
	assert_int_equal(dev_set_name(child, "mlife-child"), 0);
	assert_int_equal(device_add(child), 0);
	return child;
}

static int hold_probe(struct device *dev)
{
	(void)child_in(dev, sizeof(struct device));
	return 0;
}

static struct device_driver hold_drv = {
	.name = "mlife-hold",
	.bus = &lbus,
	.probe = hold_probe,
};

static void one_way(enum way w)
{
	struct platform_device *pdev;
	void *moved, *id;

	child_released = 0;
	switch (w) {
	case W_KFREE:
		(void)child_in(parent, sizeof(struct device));
		devm_kfree(parent, block);
		break;
	case W_KREALLOC:
		(void)child_in(parent, sizeof(struct device));
		/* Past the heap's mmap threshold: it moves. */
		moved = devm_krealloc(parent, block, 1 << 22, GFP_KERNEL);
		assert_non_null(moved);
		assert_ptr_not_equal(moved, block);
		devm_kfree(parent, moved);
		break;
	case W_GROUP:
		id = devres_open_group(parent, NULL, GFP_KERNEL);
		assert_non_null(id);
		(void)child_in(parent, sizeof(struct device));
		devres_close_group(parent, id);
		assert_int_equal(devres_release_group(parent, id), 1);
		break;
	case W_RELEASE_ALL:
		(void)child_in(parent, sizeof(struct device));
		assert_int_equal(devres_release_all(parent), 1);
		break;
	case W_UNBIND:
		assert_int_equal(driver_register(&hold_drv), 0);
		assert_true(device_is_bound(parent));
		device_release_driver(parent);
		assert_false(device_is_bound(parent));
		driver_unregister(&hold_drv);
		break;
	case W_PDEV:
		pdev = devm_kzalloc(parent, sizeof(*pdev), GFP_KERNEL);
		assert_non_null(pdev);
		pdev->name = "mlife-child";
		pdev->id = PLATFORM_DEVID_NONE;
		pdev->dev.parent = parent;
		pdev->dev.release = child_release;
		assert_int_equal(platform_device_register(pdev), 0);
		devm_kfree(parent, pdev);
		break;
	case NR_WAY:
		break;
	}
}

static void child_in_freed_memory(void **state)
{
	(void)state;
	for (int w = 0; w < NR_WAY; w++) {
		struct devres_ledger base, now;
		char want[128];
		int w0;

		devres_ledger_snapshot(&base);
		parent = heap_dev(&lbus, "mlife-parent");
		assert_int_equal(device_add(parent), 0);
		devres_set_log_sink(keep_last, NULL);
		last[0] = 0;
		w0 = devres_warn_count();
		one_way((enum way)w);
		devres_set_log_sink(NULL, NULL);
		if (devres_warn_count() != w0 + 1 || child_released != 1)
			print_error("%s: %d WARN(s), child released %d times; "
				    "last: %s\n",
				    way_names[w], devres_warn_count() - w0,
				    child_released, last);
		assert_int_equal(devres_warn_count(), w0 + 1);
		assert_int_equal(child_released, 1);
		snprintf(want, sizeof(want),
			 "mlife-child: %s: ", way_calls[w] ? way_calls[w] : "");
		assert_true(strncmp(last, want, strlen(want)) == 0 ||
			    (!way_calls[w] &&
			     strncmp(last, "mlife-child: ", 13) == 0));
		assert_non_null(strstr(last, "while it is registered: "
					     "device_unregister() must come "
					     "first"));
		/* The name is free again on the bus: the child is gone. */
		device_unregister(parent);
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
	}
}

/* ---- a child added from the parent's remove ---- */

enum del_by {
	BY_DEL,
	BY_UNREGISTER,
	BY_PDEV_UNREGISTER,
	NR_BY
};

static const char *const by_names[NR_BY] = {
	"device_del",
	"device_unregister",
	"platform_device_unregister",
};

static struct device *late_child;
static int late_ret;

static void add_child_in_remove(struct device *dev)
{
	late_child = heap_dev(NULL, "mlife-late");
	late_child->parent = dev;
	late_ret = device_add(late_child);
}

static int ok_probe(struct device *dev)
{
	(void)dev;
	return 0;
}

static struct device_driver remove_drv = {
	.name = "mlife-remove",
	.bus = &lbus,
	.probe = ok_probe,
	.remove = add_child_in_remove,
};

static int ok_pprobe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static void padd_child_in_remove(struct platform_device *pdev)
{
	add_child_in_remove(&pdev->dev);
}

static struct platform_driver premove_drv = {
	.driver = { .name = "mlife-premove" },
	.probe = ok_pprobe,
	.remove = padd_child_in_remove,
};

static void child_added_by_remove_of_del(void **state)
{
	(void)state;
	assert_int_equal(driver_register(&remove_drv), 0);
	assert_int_equal(platform_driver_register(&premove_drv), 0);
	for (int by = 0; by < NR_BY; by++) {
		struct platform_device *pdev = NULL;
		struct device *p, *after;
		int w0 = devres_warn_count(), ret;

		if (by == BY_PDEV_UNREGISTER) {
			pdev = platform_device_register_simple(
				"mlife-premove", PLATFORM_DEVID_NONE, NULL, 0);
			assert_false(IS_ERR(pdev));
			p = &pdev->dev;
		} else {
			p = heap_dev(&lbus, "mlife-removed");
			assert_int_equal(device_add(p), 0);
		}
		assert_true(device_is_bound(p));
		late_ret = 1;
		get_device(p); /* kept, for the add after the delete */
		if (by == BY_DEL)
			device_del(p);
		else if (by == BY_UNREGISTER)
			device_unregister(p);
		else
			platform_device_unregister(pdev);
		if (late_ret)
			print_error("%s: the child's add from remove got %d\n",
				    by_names[by], late_ret);
		assert_int_equal(late_ret, 0);
		assert_int_equal(devres_warn_count(), w0);
		/* After the delete: the parent's place is gone. */
		after = heap_dev(NULL, "mlife-after");
		after->parent = p;
		devres_set_log_sink(quiet, NULL);
		ret = device_add(after);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(ret, -ENOENT);
		assert_int_equal(devres_warn_count(), w0 + 1);
		put_device(after);
		/* The child is its owner's to delete, as in the kernel. */
		device_unregister(late_child);
		if (by == BY_DEL)
			put_device(p);
		put_device(p);
	}
	platform_driver_unregister(&premove_drv);
	driver_unregister(&remove_drv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(starts_raced),
		cmocka_unit_test(rename_inside_add),
		cmocka_unit_test(child_in_freed_memory),
		cmocka_unit_test(child_added_by_remove_of_del),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &lbus);
}
