// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=300 */
/*
 * The lifecycle under threads: each pair of lifecycle calls made at once
 * from two threads on the same device and driver, many rounds, then a
 * check that the state is one of the states, consistent with what the
 * device says, and that everything ends released once with the ledger at
 * its baseline. Then the two races of this class that used to go wrong:
 * driver_unregister() returning while a device_del() in another thread
 * still ran the driver's remove, and two probes registering drivers for
 * each other's device (each waited for the other's device lock). Last, a
 * child added while its parent is deleted.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static const struct bus_type rbus = { .name = "lcrace" };

static int rprobe(struct device *dev)
{
	return devm_kzalloc(dev, 24, GFP_KERNEL) ? 0 : -ENOMEM;
}

static void rremove(struct device *dev)
{
	(void)dev;
}

static struct device_driver rdrv = {
	.name = "lcrace",
	.bus = &rbus,
	.probe = rprobe,
	.remove = rremove,
};

enum op {
	O_ADD,
	O_DEL,
	O_ATTACH,
	O_RELEASE,
	O_DRV_ATTACH,
	O_GET_PUT,
	O_IS_BOUND,
	O_FOR_EACH,
	O_DRV_UNREGISTER,
	O_DRV_REGISTER,
	NR_OP
};

static const char *const op_names[NR_OP] = {
	"device_add",		"device_del",
	"device_attach",	"device_release_driver",
	"device_driver_attach", "get_device+put",
	"device_is_bound",	"bus_for_each_dev",
	"driver_unregister",	"driver_register",
};

static struct device *target;

static int count_fn(struct device *dev, void *data)
{
	(void)dev;
	__atomic_add_fetch((int *)data, 1, __ATOMIC_RELAXED);
	return 0;
}

static void run_op(enum op op)
{
	int n = 0;

	switch (op) {
	case O_ADD:
		device_add(target);
		break;
	case O_DEL:
		device_del(target);
		break;
	case O_ATTACH:
		device_attach(target);
		break;
	case O_RELEASE:
		device_release_driver(target);
		break;
	case O_DRV_ATTACH:
		device_driver_attach(&rdrv, target);
		break;
	case O_GET_PUT:
		put_device(get_device(target));
		break;
	case O_IS_BOUND:
		device_is_bound(target);
		break;
	case O_FOR_EACH:
		bus_for_each_dev(&rbus, NULL, &n, count_fn);
		break;
	case O_DRV_UNREGISTER:
		driver_unregister(&rdrv);
		break;
	case O_DRV_REGISTER:
		driver_register(&rdrv);
		break;
	case NR_OP:
		break;
	}
}

static pthread_barrier_t go, done;
static enum op ops[2];
static bool stop;

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&go);
		if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
			return NULL;
		run_op(ops[me]);
		pthread_barrier_wait(&done);
	}
}

static void quiet_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static bool drv_registered(void)
{
	/* Registered or not, registering again tells. */
	int ret = driver_register(&rdrv);

	return ret == 0 || ret == -EBUSY;
}

/*
 * The device's state as the header stores it, and whether it agrees with
 * what the device says of itself: the same order as docs/driver-model.md.
 */
static bool consistent(struct device *dev)
{
	/* The low four bits: the process that made it is kept above. */
	int st = __atomic_load_n(&dev->state, __ATOMIC_ACQUIRE) & 0xf;
	bool bound = device_is_bound(dev);

	switch (st) {
	case 1: /* initialized */
	case 2: /* added */
	case 6: /* deleted */
		return !bound && !dev->driver;
	case 4: /* bound */
		return bound && dev->driver == &rdrv;
	default: /* probing, unbinding: nobody is in a call now */
		return false;
	}
}

#ifdef T_TSAN
#define ROUNDS 6
#else
#define ROUNDS 30
#endif

static void every_pair_at_once(void **state)
{
	struct devres_ledger base, now;
	pthread_t t[2];
	int released;

	(void)state;
	assert_int_equal(pthread_barrier_init(&go, NULL, 3), 0);
	assert_int_equal(pthread_barrier_init(&done, NULL, 3), 0);
	stop = false;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker,
						(void *)(intptr_t)i),
				 0);
	devres_ledger_snapshot(&base);
	devres_set_log_sink(quiet_sink, NULL);
	for (int a = 0; a < NR_OP; a++) {
		for (int b = a; b < NR_OP; b++) {
			for (int round = 0; round < ROUNDS; round++) {
				released = heap_released;
				assert_int_equal(driver_register(&rdrv), 0);
				target = heap_dev(&rbus, "lcr");
				/* Half the rounds start bound, half not. */
				if (round & 1)
					assert_int_equal(device_add(target), 0);
				ops[0] = (enum op)a;
				ops[1] = (enum op)b;
				pthread_barrier_wait(&go);
				pthread_barrier_wait(&done);
				if (!consistent(target))
					fail_msg("%s with %s: state %d, "
						 "bound %d",
						 op_names[a], op_names[b],
						 target->state & 0xf,
						 device_is_bound(target));
				if (drv_registered())
					driver_unregister(&rdrv);
				if ((target->state & 0xf) == 2 ||
				    (target->state & 0xf) == 4)
					device_del(target);
				put_device(target);
				if (heap_released != released + 1)
					fail_msg("%s with %s: not released "
						 "once",
						 op_names[a], op_names[b]);
			}
		}
	}
	devres_set_log_sink(NULL, NULL);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	pthread_barrier_wait(&go);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&done);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
}

/* driver_unregister() waits for a remove that device_del() runs. */
static int in_remove, remove_may_end, unregister_done;

static void slow_remove(struct device *dev)
{
	(void)dev;
	__atomic_store_n(&in_remove, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&remove_may_end, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static struct device_driver slow_drv = {
	.name = "lcslow",
	.bus = &rbus,
	.remove = slow_remove,
};

static void *del_thread(void *arg)
{
	device_del(arg);
	return NULL;
}

static void *unregister_thread(void *arg)
{
	(void)arg;
	driver_unregister(&slow_drv);
	__atomic_store_n(&unregister_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void unregister_waits_for_remove_of_del(void **state)
{
	struct device *dev = heap_dev(&rbus, "lcslow-dev");
	pthread_t d, u;

	(void)state;
	in_remove = remove_may_end = unregister_done = 0;
	assert_int_equal(driver_register(&slow_drv), 0);
	assert_int_equal(device_add(dev), 0);
	assert_ptr_equal(dev->driver, &slow_drv);
	assert_int_equal(pthread_create(&d, NULL, del_thread, dev), 0);
	while (!__atomic_load_n(&in_remove, __ATOMIC_ACQUIRE))
		usleep(1000);
	assert_int_equal(pthread_create(&u, NULL, unregister_thread, NULL), 0);
	usleep(100 * 1000);
	/* The remove still runs the driver's code: it is not gone yet. */
	assert_int_equal(__atomic_load_n(&unregister_done, __ATOMIC_ACQUIRE),
			 0);
	__atomic_store_n(&remove_may_end, 1, __ATOMIC_RELEASE);
	pthread_join(d, NULL);
	pthread_join(u, NULL);
	assert_int_equal(unregister_done, 1);
	put_device(dev);
}

/*
 * device_add() of a child against device_del() of its parent: the child
 * is added before the parent is marked deleted (and holds it), or refused
 * with -ENOENT and one WARN, the parent taking no reference from it;
 * every device is released once. The kernel's order: a child refused
 * under a parent no longer in the tree.
 */
static pthread_barrier_t add_del;
#define CHILD_ROUNDS 200

static void *del_parent(void *arg)
{
	pthread_barrier_wait(&add_del);
	device_del(arg);
	return NULL;
}

static void *add_child(void *arg)
{
	pthread_barrier_wait(&add_del);
	return (void *)(intptr_t)device_add(arg);
}

static void child_add_races_parent_del(void **state)
{
	int added = 0, refused = 0, released0 = heap_released;
	struct devres_ledger base, now;

	(void)state;
	devres_ledger_snapshot(&base);
	devres_set_log_sink(quiet_sink, NULL);
	for (int i = 0; i < CHILD_ROUNDS; i++) {
		struct device *parent = heap_dev(NULL, "lcp-%d", i);
		struct device *child = heap_dev(NULL, "lcc-%d", i);
		pthread_t d, a;
		void *ret;
		int w0;

		child->parent = parent;
		assert_int_equal(device_add(parent), 0);
		assert_int_equal(pthread_barrier_init(&add_del, NULL, 2), 0);
		w0 = devres_warn_count();
		assert_int_equal(pthread_create(&d, NULL, del_parent, parent),
				 0);
		assert_int_equal(pthread_create(&a, NULL, add_child, child), 0);
		pthread_join(d, NULL);
		pthread_join(a, &ret);
		pthread_barrier_destroy(&add_del);
		if ((intptr_t)ret == 0) {
			added++;
			assert_int_equal(devres_warn_count(), w0);
			device_unregister(child);
		} else {
			refused++;
			assert_int_equal((intptr_t)ret, -ENOENT);
			assert_int_equal(devres_warn_count(), w0 + 1);
			put_device(child);
		}
		/* The child released first; then the parent's last put. */
		assert_int_equal(heap_released, released0 + 2 * i + 1);
		put_device(parent);
		assert_int_equal(heap_released, released0 + 2 * i + 2);
	}
	devres_set_log_sink(NULL, NULL);
	print_message("child added %d, refused %d of %d\n", added, refused,
		      CHILD_ROUNDS);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
}

/*
 * Two probes, each registering a driver for the other's device while the
 * other's probe holds that device's lock.
 */
static pthread_barrier_t both_probing;
static struct device *dev_x, *dev_y;

/* One device on each bus: a registration walks only its own. */
static const struct bus_type xbus = { .name = "lcx" };
static const struct bus_type ybus = { .name = "lcy" };

static int plain_probe(struct device *dev)
{
	(void)dev;
	return 0;
}

static struct device_driver x_late = { .name = "lcx-late",
				       .bus = &xbus,
				       .probe = plain_probe };
static struct device_driver y_late = { .name = "lcy-late",
				       .bus = &ybus,
				       .probe = plain_probe };

static int x_probe(struct device *dev)
{
	(void)dev;
	pthread_barrier_wait(&both_probing);
	return driver_register(&y_late);
}

static int y_probe(struct device *dev)
{
	(void)dev;
	pthread_barrier_wait(&both_probing);
	return driver_register(&x_late);
}

static struct device_driver x_first = { .name = "lcx-first",
					.bus = &xbus,
					.probe = x_probe };
static struct device_driver y_first = { .name = "lcy-first",
					.bus = &ybus,
					.probe = y_probe };

static void *register_thread(void *arg)
{
	return (void *)(intptr_t)driver_register(arg);
}

static void probes_register_for_each_other(void **state)
{
	struct timespec ts;
	pthread_t tx, ty;
	void *rx, *ry;

	(void)state;
	assert_int_equal(t_bus_register(&xbus), 0);
	assert_int_equal(t_bus_register(&ybus), 0);
	dev_x = heap_dev(&xbus, "x");
	dev_y = heap_dev(&ybus, "y");
	assert_int_equal(t_device_add(dev_x), 0);
	assert_int_equal(t_device_add(dev_y), 0);
	assert_int_equal(pthread_barrier_init(&both_probing, NULL, 2), 0);
	assert_int_equal(pthread_create(&tx, NULL, register_thread, &x_first),
			 0);
	assert_int_equal(pthread_create(&ty, NULL, register_thread, &y_first),
			 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	if (pthread_timedjoin_np(tx, &rx, &ts) ||
	    pthread_timedjoin_np(ty, &ry, &ts)) {
		/* Deadlocked: nothing can be cleaned up. */
		fprintf(stderr, "two probes registering drivers deadlocked\n");
		_exit(1);
	}
	assert_int_equal((intptr_t)rx, 0);
	assert_int_equal((intptr_t)ry, 0);
	assert_ptr_equal(dev_x->driver, &x_first);
	assert_ptr_equal(dev_y->driver, &y_first);
	pthread_barrier_destroy(&both_probing);
	t_device_unregister(dev_x);
	t_device_unregister(dev_y);
	driver_unregister(&x_late);
	driver_unregister(&y_late);
	driver_unregister(&x_first);
	driver_unregister(&y_first);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_pair_at_once),
		cmocka_unit_test(unregister_waits_for_remove_of_del),
		cmocka_unit_test(probes_register_for_each_other),
		cmocka_unit_test(child_add_races_parent_del),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &rbus);
}
