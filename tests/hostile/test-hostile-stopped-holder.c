// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * A holder stopped while it holds one of the library's locks: a thread
 * blocked inside a callback the library runs under that lock (as a thread
 * preempted or stopped there would be). For each lock, the calls of other
 * threads that do not need it must go on (made here while the holder is
 * blocked, under an alarm), and a call that needs it must wait without
 * spinning: the waiting thread's own CPU time (getrusage(RUSAGE_THREAD))
 * over a wait of WAIT_MS must stay under a tenth of it. The call then
 * completes once the holder is let go.
 *
 * Locks and callbacks: a device's devres lock (a devres_find() match),
 * a device's lock (a driver's probe), an interrupt line's delivery (a
 * primary handler on the dispatcher), a device's DMA lock (its DMA ops),
 * and a revocable access held by a thread (not a lock: a revocation waits
 * for it).
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
#include <sys/resource.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/revocable.h>
#include "gate.h"
#include "testlib.h"

#define WAIT_MS 300

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long thread_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* ---- The holder and the waiter ---- */

struct side {
	void (*fn)(void *arg);
	void *arg;
	pthread_t t;
	bool done;
	long cpu_us, wall_ms;
};

static void *side_main(void *arg)
{
	struct side *s = arg;
	long c0 = thread_cpu_us(), t0 = now_ms();

	s->fn(s->arg);
	s->cpu_us = thread_cpu_us() - c0;
	s->wall_ms = now_ms() - t0;
	__atomic_store_n(&s->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void side_start(struct side *s)
{
	assert_int_equal(pthread_create(&s->t, NULL, side_main, s), 0);
}

/*
 * The holder runs @hold until its callback reaches the gate; then
 * @go_on(@go_arg), if any, must return while it is blocked; the waiter
 * runs @wait, if any, which must still wait after WAIT_MS, having used
 * less than a tenth of that in CPU; the gate opens and both complete.
 */
static void stopped_holder(void (*hold)(void *), void *hold_arg,
			   void (*go_on)(void *), void *go_arg,
			   void (*wait)(void *), void *wait_arg,
			   const char *what)
{
	struct side h = { hold, hold_arg, 0, false, 0, 0 };
	struct side w = { wait, wait_arg, 0, false, 0, 0 };

	gate_reset();
	alarm(30);
	side_start(&h);
	gate_until_reached();
	if (go_on)
		go_on(go_arg);
	if (wait)
		side_start(&w);
	sleep_ms(WAIT_MS);
	if (wait)
		assert_false(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
	gate_release();
	assert_int_equal(pthread_join(h.t, NULL), 0);
	if (!wait) {
		alarm(0);
		return;
	}
	assert_int_equal(pthread_join(w.t, NULL), 0);
	alarm(0);
	print_message("%-44s waited %ld ms, %ld us of CPU\n", what, w.wall_ms,
		      w.cpu_us);
	/* It started a moment after the sleep: still waiting at its end. */
	assert_true(w.wall_ms >= WAIT_MS / 2);
	assert_true(w.cpu_us * 10 < w.wall_ms * 1000);
}

/* ---- A device's devres lock: a match callback ---- */

static void never_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int blocking_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	gate_wait();
	return 0;
}

static void hold_devres_lock(void *arg)
{
	assert_null(devres_find(arg, never_release, blocking_match, NULL));
}

static void alloc_free(void *arg)
{
	void *p = devm_kmalloc(arg, 32, 0);

	assert_non_null(p);
	devm_kfree(arg, p);
}

static void devres_lock(void **state)
{
	void *res = devres_alloc(never_release, 8, 0);

	(void)state;
	assert_non_null(res);
	devres_add(&tdev, res);
	/* Another device's lock is another lock. */
	stopped_holder(hold_devres_lock, &tdev, alloc_free, &other, alloc_free,
		       &tdev, "devres lock (a match callback)");
}

/* ---- A device's lock: a driver's probe ---- */

static int gated_probe(struct device *dev)
{
	(void)dev;
	gate_wait();
	return 0;
}

static const struct bus_type hold_bus = { .name = "hold-bus" };

static struct device_driver hold_drv = {
	.name = "hold-drv",
	.bus = &hold_bus,
	.probe = gated_probe,
};

static void add_device(void *arg)
{
	assert_int_equal(device_add(arg), 0);
}

static void unbind(void *arg)
{
	device_release_driver(arg);
}

static void device_lock(void **state)
{
	struct device *dev;

	(void)state;
	assert_int_equal(t_bus_register(&hold_bus), 0);
	assert_int_equal(t_driver_register(&hold_drv), 0);
	dev = heap_dev(&hold_bus, "hold-dev");
	/* The probe's device takes managed memory meanwhile: no lock. */
	stopped_holder(add_device, dev, alloc_free, dev, unbind, dev,
		       "device lock (a probe)");
	assert_null(dev->driver);
	t_device_del(dev);
	put_device(dev);
	t_driver_unregister(&hold_drv);
	t_bus_unregister(&hold_bus);
}

/* ---- An interrupt line: a handler on the dispatcher ---- */

static int hold_irq;

static irqreturn_t gated_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	gate_wait();
	return IRQ_HANDLED;
}

static void raise_line(void *arg)
{
	(void)arg;
	assert_int_equal(irq_line_raise_wait(hold_irq), 0);
}

static void sync_line(void *arg)
{
	(void)arg;
	synchronize_irq((unsigned int)hold_irq);
}

static void other_line(void *arg)
{
	int irq = irq_line_create("other-line");

	(void)arg;
	assert_true(irq > 0);
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void irq_line(void **state)
{
	(void)state;
	hold_irq = irq_line_create("held-line");
	assert_true(hold_irq > 0);
	assert_int_equal(request_irq((unsigned int)hold_irq, gated_handler, 0,
				     "gated", &tdev),
			 0);
	stopped_holder(raise_line, NULL, other_line, NULL, sync_line, NULL,
		       "interrupt line (a handler)");
	free_irq((unsigned int)hold_irq, &tdev);
	assert_int_equal(irq_line_destroy(hold_irq), 0);
}

/* ---- A device's DMA lock: its ops ---- */

static bool ops_block;

static int gated_map(struct device *dev, void *cpu, size_t size, size_t align,
		     uint64_t mask, dma_addr_t *ret_handle)
{
	static dma_addr_t next = 0x100000;

	(void)dev;
	(void)cpu;
	(void)size;
	(void)align;
	(void)mask;
	if (__atomic_load_n(&ops_block, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&ops_block, false, __ATOMIC_RELEASE);
		gate_wait();
	}
	*ret_handle = __atomic_fetch_add(&next, 0x1000, __ATOMIC_RELAXED);
	return 0;
}

static void plain_unmap(struct device *dev, dma_addr_t handle, void *cpu,
			size_t size)
{
	(void)dev;
	(void)handle;
	(void)cpu;
	(void)size;
}

static const struct devres_dma_ops gated_ops = {
	.name = "gated",
	.map = gated_map,
	.unmap = plain_unmap,
};

static char bufs[3][64];

static void map_unmap(void *arg)
{
	struct device *dev = arg;
	char *buf = bufs[dev == &tdev ? 0 : 1];
	dma_addr_t h = dma_map_single(dev, buf, 64, DMA_TO_DEVICE);

	assert_false(dma_mapping_error(dev, h));
	dma_unmap_single(dev, h, 64, DMA_TO_DEVICE);
}

static void map_unmap_2(void *arg)
{
	dma_addr_t h = dma_map_single(arg, bufs[2], 64, DMA_TO_DEVICE);

	assert_false(dma_mapping_error(arg, h));
	dma_unmap_single(arg, h, 64, DMA_TO_DEVICE);
}

static void dma_lock(void **state)
{
	(void)state;
	set_dma_ops(&tdev, &gated_ops);
	/*
	 * Another device's DMA goes on: the states are read-held only. Its
	 * first DMA call makes its state, which takes the states' write
	 * lock and so waits for every device's ops: made before.
	 */
	map_unmap(&other);
	ops_block = true;
	stopped_holder(map_unmap, &tdev, map_unmap, &other, map_unmap_2, &tdev,
		       "DMA lock (the device's ops)");
	set_dma_ops(&tdev, NULL);
}

/* ---- A revocable access held by a thread ---- */

static int resource, revoked;
static struct revocable *handle;

static void revoke_release(void *res)
{
	(void)res;
	revoked++;
}

static void hold_access(void *arg)
{
	(void)arg;
	assert_ptr_equal(revocable_try_access(handle), &resource);
	gate_wait();
	revocable_access_end(handle);
}

static void release_dev(void *arg)
{
	assert_int_equal(devres_release_all(arg), 1);
}

static void revocation(void **state)
{
	(void)state;
	revoked = 0;
	handle = devm_revocable_create(&tdev, &resource, revoke_release);
	assert_non_null(handle);
	assert_non_null(revocable_get(handle));
	stopped_holder(hold_access, NULL, alloc_free, &other, release_dev,
		       &tdev, "revocation (an access)");
	assert_int_equal(revoked, 1);
	revocable_put(handle);
}

/* ---- A bus's walk: bus_for_each_dev()'s function ---- */

static const struct bus_type walk_bus = { .name = "walk-bus" };

static int blocking_each(struct device *dev, void *data)
{
	(void)dev;
	(void)data;
	gate_wait();
	return 1;
}

static void walk(void *arg)
{
	(void)arg;
	assert_int_equal(bus_for_each_dev(&walk_bus, NULL, NULL, blocking_each),
			 1);
}

static struct device *walk_second, *walked;

/* A device joins the bus, and the one the walk is on leaves it. */
static void add_and_del(void *arg)
{
	(void)arg;
	walk_second = heap_dev(&walk_bus, "walk-dev-2");
	assert_int_equal(device_add(walk_second), 0);
	device_del(walked);
}

static void bus_walk(void **state)
{
	(void)state;
	assert_int_equal(t_bus_register(&walk_bus), 0);
	walked = heap_dev(&walk_bus, "walk-dev");
	assert_int_equal(device_add(walked), 0);
	/* Nothing waits: the walk pins its device and the bus only. */
	stopped_holder(walk, NULL, add_and_del, NULL, NULL, NULL,
		       "bus walk (bus_for_each_dev()'s function)");
	put_device(walked);
	device_del(walk_second);
	put_device(walk_second);
	t_bus_unregister(&walk_bus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(devres_lock, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(device_lock, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(irq_line, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(dma_lock, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(revocation, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(bus_walk, two_dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
