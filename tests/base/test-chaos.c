// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=300 */
/*
 * Concurrency chaos: threads hammer a few shared devices with every devres
 * operation at once (adds, lookups, removes, groups, release_all, actions,
 * managed memory) while devices are bound, unbound, deleted and replaced
 * under them. Every resource carries an id; its release callback counts it.
 * At the end every resource must have been released exactly once (or not at
 * all, when a thread took it off with devres_remove/devres_destroy/
 * devm_remove_action), every device freed, and the ledger back at its
 * baseline.
 *
 * CHAOS_THREADS (default 8) threads of CHAOS_OPS operations each (default
 * 10^6, 2 * 10^5 under ThreadSanitizer); CHAOS_SEED picks the random
 * streams.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

/* ThreadSanitizer is some 15 times slower: a fifth of the operations. */
#ifdef T_TSAN
#define DEFAULT_OPS 200000
#else
#define DEFAULT_OPS 1000000
#endif

#define NDEV 3
#define MAX_THREADS 64
#define RING 16

struct item {
	uint64_t id;
	struct device *dev;
};

struct cdev {
	struct device dev;
	bool added;
};

struct slot {
	pthread_mutex_t lock;
	struct cdev *cd;
};

struct mine {
	uint64_t id;
	struct device *dev;
	bool action;
};

struct worker {
	pthread_t thread;
	uint64_t rng;
	unsigned long ops;
	struct mine ring[RING];
	unsigned int nring;
	void *groups[4];
	struct device *group_dev[4];
};

static struct slot slots[NDEV];
static uint8_t *released; /* per id: release callbacks run */
static uint8_t *expect;	  /* per id: 1, or 0 once a thread took it off */
static uint64_t next_id, max_ids;
static unsigned long wrong_dev, devices_made, devices_freed, binds, probes;
static __thread unsigned long my_warns;

/* The driver model: a bus with one driver whose probe acquires resources. */

static int chaos_match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	return 1;
}

static const struct bus_type chaos_bus = {
	.name = "chaos",
	.match = chaos_match,
};

static uint64_t new_id(void)
{
	uint64_t id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);

	if (id >= max_ids)
		return 0;
	__atomic_store_n(&expect[id], 1, __ATOMIC_RELAXED);
	return id;
}

static void count_release(uint64_t id)
{
	__atomic_add_fetch(&released[id], 1, __ATOMIC_RELAXED);
}

static void chaos_release(struct device *dev, void *res)
{
	struct item *it = res;

	if (it->dev != dev)
		__atomic_add_fetch(&wrong_dev, 1, __ATOMIC_RELAXED);
	count_release(it->id);
}

static void chaos_action(void *data)
{
	count_release((uintptr_t)data);
}

static int match_id(struct device *dev, void *res, void *data)
{
	(void)dev;
	return ((struct item *)res)->id == *(uint64_t *)data;
}

static void count_item(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	++*(unsigned long *)data;
}

/* Records a counted resource on @dev; returns its id, or 0. */
static uint64_t add_item(struct device *dev)
{
	uint64_t id = new_id();
	struct item *it;

	if (!id)
		return 0;
	it = devres_alloc(chaos_release, sizeof(*it), GFP_KERNEL);
	if (!it) {
		__atomic_store_n(&expect[id], 0, __ATOMIC_RELAXED);
		return 0;
	}
	it->id = id;
	it->dev = dev;
	devres_add(dev, it);
	return id;
}

static uint64_t add_action(struct device *dev)
{
	uint64_t id = new_id();

	if (!id)
		return 0;
	if (devm_add_action(dev, chaos_action, (void *)(uintptr_t)id)) {
		__atomic_store_n(&expect[id], 0, __ATOMIC_RELAXED);
		return 0;
	}
	return id;
}

static int chaos_probe(struct device *dev)
{
	void *g = devres_open_group(dev, NULL, GFP_KERNEL);

	__atomic_add_fetch(&probes, 1, __ATOMIC_RELAXED);
	add_item(dev);
	if (!devm_kzalloc(dev, 64, GFP_KERNEL))
		return -ENOMEM;
	add_action(dev);
	if (g)
		devres_close_group(dev, g);
	add_item(dev);
	return 0;
}

static void chaos_remove(struct device *dev)
{
	(void)dev;
}

static struct device_driver chaos_driver = {
	.name = "chaos",
	.bus = &chaos_bus,
	.probe = chaos_probe,
	.remove = chaos_remove,
};

static void cdev_release(struct device *dev)
{
	__atomic_add_fetch(&devices_freed, 1, __ATOMIC_RELAXED);
	free(container_of(dev, struct cdev, dev));
}

static struct cdev *new_cdev(void)
{
	struct cdev *cd = calloc(1, sizeof(*cd));
	unsigned long n;

	if (!cd)
		return NULL;
	cd->dev.release = cdev_release;
	cd->dev.bus = &chaos_bus;
	device_initialize(&cd->dev);
	n = __atomic_add_fetch(&devices_made, 1, __ATOMIC_RELAXED);
	if (dev_set_name(&cd->dev, "chaos%lu", n) || device_add(&cd->dev)) {
		put_device(&cd->dev);
		return NULL;
	}
	cd->added = true;
	return cd;
}

/* Deletes a device: its resources go now, late ones at its last put. */
static void retire(struct cdev *cd)
{
	if (cd->added)
		device_del(&cd->dev);
	put_device(&cd->dev);
}

static struct device *grab(unsigned int i)
{
	struct device *dev;

	pthread_mutex_lock(&slots[i].lock);
	dev = get_device(&slots[i].cd->dev);
	pthread_mutex_unlock(&slots[i].lock);
	return dev;
}

/* Replaces the device in slot @i while other threads still use the old one. */
static void replace(unsigned int i)
{
	struct cdev *cd = new_cdev(), *old;

	if (!cd)
		return;
	pthread_mutex_lock(&slots[i].lock);
	old = slots[i].cd;
	slots[i].cd = cd;
	pthread_mutex_unlock(&slots[i].lock);
	retire(old);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void remember(struct worker *w, uint64_t id, struct device *dev,
		     bool action)
{
	if (id)
		w->ring[w->nring++ % RING] = (struct mine){ id, dev, action };
}

/* One of this thread's resources on @dev, or NULL. */
static struct mine *pick_mine(struct worker *w, struct device *dev, uint64_t x,
			      bool action)
{
	for (unsigned int k = 0; k < RING; k++) {
		struct mine *m = &w->ring[(x + k) % RING];

		if (m->id && m->dev == dev && m->action == action)
			return m;
	}
	return NULL;
}

static void take_item(struct worker *w, struct device *dev, uint64_t x)
{
	struct mine *m = pick_mine(w, dev, x, false);
	struct item *it;
	uint64_t id;

	if (!m)
		return;
	id = m->id;
	m->id = 0;
	switch (x % 3) {
	case 0:
		it = devres_remove(dev, chaos_release, match_id, &id);
		if (it) {
			/* Ours now: it will never be released. */
			__atomic_store_n(&expect[id], 0, __ATOMIC_RELAXED);
			if (it->id != id)
				__atomic_add_fetch(&wrong_dev, 1,
						   __ATOMIC_RELAXED);
			devres_free(it);
		}
		break;
	case 1:
		if (!devres_destroy(dev, chaos_release, match_id, &id))
			__atomic_store_n(&expect[id], 0, __ATOMIC_RELAXED);
		break;
	default:
		devres_release(dev, chaos_release, match_id, &id);
		break;
	}
}

static void take_action(struct worker *w, struct device *dev, uint64_t x)
{
	struct mine *m = pick_mine(w, dev, x, true);
	unsigned long warns = my_warns;
	void *data;

	if (!m)
		return;
	data = (void *)(uintptr_t)m->id;
	if (x & 1) {
		/* Runs it now, or WARNs when a release took it already. */
		devm_release_action(dev, chaos_action, data);
	} else {
		devm_remove_action(dev, chaos_action, data);
		if (my_warns == warns)
			__atomic_store_n(&expect[m->id], 0, __ATOMIC_RELAXED);
	}
	m->id = 0;
}

static void group_op(struct worker *w, struct device *dev, uint64_t x)
{
	unsigned int k = (x >> 8) % 4;
	void *id = w->groups[k];

	if (!id || w->group_dev[k] != dev) {
		w->groups[k] = devres_open_group(dev, NULL, GFP_KERNEL);
		w->group_dev[k] = dev;
		return;
	}
	switch (x % 4) {
	case 0:
		devres_close_group(dev, id);
		return;
	case 1:
		devres_remove_group(dev, id);
		break;
	case 2:
		devres_release_group(dev, id);
		break;
	default:
		devres_release_group(dev, NULL);
		return;
	}
	w->groups[k] = NULL;
}

static void one_op(struct worker *w)
{
	uint64_t x = rnd(&w->rng);
	unsigned int i = (x >> 32) % NDEV, pick = (x >> 40) % 1000;
	struct device *dev = grab(i);
	unsigned long n = 0;
	uint64_t id;
	void *p;

	if (pick < 250) {
		remember(w, add_item(dev), dev, false);
	} else if (pick < 330) {
		remember(w, add_action(dev), dev, true);
	} else if (pick < 430) {
		p = devm_kmalloc(dev, 16 + x % 200, GFP_KERNEL);
		/* The memory is never touched: a release may free it now. */
		if (x & 0x100)
			devm_kfree(dev, p);
	} else if (pick < 520) {
		struct mine *m = pick_mine(w, dev, x, false);

		id = m ? m->id : x;
		devres_find(dev, chaos_release, match_id, &id);
	} else if (pick < 620) {
		take_item(w, dev, x);
	} else if (pick < 680) {
		take_action(w, dev, x);
	} else if (pick < 800) {
		group_op(w, dev, x);
	} else if (pick < 820) {
		devres_for_each_res(dev, chaos_release, NULL, NULL, count_item,
				    &n);
	} else if (pick < 830) {
		struct devres_stats st;

		devres_get_stats(dev, &st);
		/* The list checker, while every other thread goes on. */
		if (devres_check(dev))
			__atomic_add_fetch(&wrong_dev, 1, __ATOMIC_RELAXED);
	} else if (pick < 840) {
		devres_release_all(dev);
	} else if (pick < 870) {
		__atomic_add_fetch(&binds, 1, __ATOMIC_RELAXED);
		device_attach(dev);
	} else if (pick < 895) {
		device_release_driver(dev);
	} else if (pick < 897) {
		replace(i);
	} else if ((id = new_id())) {
		/* Recorded, or run at once: released once either way. */
		devm_add_action_or_reset(dev, chaos_action,
					 (void *)(uintptr_t)id);
	}
	put_device(dev);
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;

	for (unsigned long k = 0; k < w->ops; k++)
		one_op(w);
	return NULL;
}

static void warn_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)line;
	if (level == DEVRES_LOG_WARNING && !strncmp(line, "WARNING", 7))
		my_warns++;
}

static unsigned long env_ul(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
}

static void chaos(void **state)
{
	unsigned long nthreads = env_ul("CHAOS_THREADS", 8);
	unsigned long ops = env_ul("CHAOS_OPS", DEFAULT_OPS);
	uint64_t seed = env_ul("CHAOS_SEED", 42);
	struct devres_ledger before, after;
	struct worker *w;
	unsigned long bad = 0, zero = 0;
	struct timespec t0, t1;

	(void)state;
	assert_true(nthreads >= 1 && nthreads <= MAX_THREADS);
	/* Each operation creates at most two counted resources. */
	max_ids = 2 * nthreads * ops + 1000;
	released = calloc(max_ids, 1);
	expect = calloc(max_ids, 1);
	w = calloc(nthreads, sizeof(*w));
	assert_non_null(released);
	assert_non_null(expect);
	assert_non_null(w);
	next_id = 1;
	devres_set_log_sink(warn_sink, NULL);
	devres_ledger_snapshot(&before);
	assert_int_equal(t_bus_register(&chaos_bus), 0);
	assert_int_equal(t_driver_register(&chaos_driver), 0);
	for (unsigned int i = 0; i < NDEV; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		slots[i].cd = new_cdev();
		assert_non_null(slots[i].cd);
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long t = 0; t < nthreads; t++) {
		w[t].rng = (seed + t) * 0x9e3779b97f4a7c15ull | 1;
		w[t].ops = ops;
		assert_int_equal(pthread_create(&w[t].thread, NULL, run_worker,
						&w[t]),
				 0);
	}
	for (unsigned long t = 0; t < nthreads; t++)
		assert_int_equal(pthread_join(w[t].thread, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	for (unsigned int i = 0; i < NDEV; i++) {
		retire(slots[i].cd);
		pthread_mutex_destroy(&slots[i].lock);
	}
	t_driver_unregister(&chaos_driver);
	t_bus_unregister(&chaos_bus);
	devres_set_log_sink(NULL, NULL);

	for (uint64_t id = 1; id < next_id && id < max_ids; id++) {
		if (released[id] == expect[id]) {
			zero += !released[id];
			continue;
		}
		if (bad++ < 10)
			print_error("resource %llu released %u times, "
				    "expected %u\n",
				    (unsigned long long)id, released[id],
				    expect[id]);
	}
	printf("chaos: %lu threads x %lu ops in %.2f s: %llu resources "
	       "(%lu taken off unreleased), %lu devices, %lu binds, %lu "
	       "probes, %d WARNs\n",
	       nthreads, ops,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       (unsigned long long)(next_id - 1), zero, devices_made, binds,
	       probes, devres_warn_count());
	assert_int_equal(bad, 0);
	assert_int_equal(wrong_dev, 0);
	/* The races really happened. */
	assert_true(next_id > nthreads * ops / 4);
	assert_true(zero > 0 && probes > 0 && devices_made > NDEV);
	assert_int_equal(devices_freed, devices_made);
	assert_true(next_id < max_ids);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	free(w);
	free(released);
	free(expect);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chaos),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
