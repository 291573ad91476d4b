// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * Threads that end with state in the library, and cancellations of
 * threads blocked in it.
 *
 * A log sink that ends its thread (pthread_exit(), or a cancellation met
 * at a cancellation point inside it): its call still counted as in
 * progress, every later devres_set_log_sink() waited for it for ever.
 *
 * Threads that end while the library keeps something of theirs: the
 * first thread to lock a device gets its bias and ends (short-lived
 * threads, one after the other, against a long-lived one: a new thread
 * may be given the dead one's thread pointer); a thread opens a group
 * and ends without closing it (a group is the device's: another thread
 * closes and releases it).
 *
 * Cancellation at the library's waits that involve another thread: a
 * thread is cancelled while free_irq() waits for a handler running on
 * the dispatcher, while a release waits for a revocable access of
 * another thread to end, and while device_unregister() waits for a
 * remove running in another thread; and with a cancellation pending
 * while a release closes managed descriptors. Each call must complete
 * once what it waits for is over (the cancellation is not acted on inside
 * it: the library's calls are no cancellation points), the thread ends at
 * its next cancellation point, and what the call held is free: the next
 * calls on the same objects do not hang (the alarm fails the test).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "gate.h"
#include "testlib.h"
#include "pci/fake-fn.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- A log sink that ends its thread ---- */

static int sink_end; /* 0: pthread_exit(), 1: a cancellation point */
static int sink_seen, cancel_sent;

static void ending_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
	__atomic_add_fetch(&sink_seen, 1, __ATOMIC_RELEASE);
	if (sink_end == 0)
		pthread_exit(NULL);
	/* The request, once sent, acts at the next pthread_testcancel(). */
	for (;;) {
		if (__atomic_load_n(&cancel_sent, __ATOMIC_ACQUIRE))
			pthread_testcancel();
		sched_yield();
	}
}

static void *warn_once(void *arg)
{
	int x = 0;

	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	/* Not managed memory: one WARN, sent to the sink. */
	devm_kfree(&tdev, &x);
	return NULL;
}

static void sink_ends_thread(void **state)
{
	(void)state;
	for (sink_end = 0; sink_end < 2; sink_end++) {
		int w0 = devres_warn_count();
		void *ret;
		pthread_t t;

		sink_seen = cancel_sent = 0;
		devres_set_log_sink(ending_sink, NULL);
		assert_int_equal(pthread_create(&t, NULL, warn_once, NULL), 0);
		if (sink_end == 1) {
			while (!__atomic_load_n(&sink_seen, __ATOMIC_ACQUIRE))
				sleep_ms(1);
			assert_int_equal(pthread_cancel(t), 0);
			__atomic_store_n(&cancel_sent, 1, __ATOMIC_RELEASE);
		}
		assert_int_equal(pthread_join(t, &ret), 0);
		assert_ptr_equal(ret, sink_end ? PTHREAD_CANCELED : NULL);
		alarm(10);
		start_capture();
		alarm(0);
		/* The WARN, and one (not sent) for the sink's end. */
		assert_int_equal(sink_seen, 1);
		assert_int_equal(devres_warn_count() - w0, 2);
		/* The next WARN reaches the new sink. */
		warn_once(NULL);
		assert_int_equal(count_prefix("WARNING: test-dev: devm_kfree:"),
				 1);
		devres_set_log_sink(NULL, NULL);
	}
}

/* ---- Threads that end while the library keeps something of theirs ---- */

static int stop_long;

static void *alloc_round(void *arg)
{
	void *p = devm_kmalloc(arg, 24, 0);

	assert_non_null(p);
	devm_kfree(arg, p);
	return NULL;
}

static void *long_lived(void *arg)
{
	while (!__atomic_load_n(&stop_long, __ATOMIC_ACQUIRE))
		alloc_round(arg);
	return NULL;
}

static void bias_owner_ends(void **state)
{
	pthread_t lt, t;

	(void)state;
	/* Short-lived threads take the device first, one after another. */
	for (int i = 0; i < 50; i++) {
		assert_int_equal(pthread_create(&t, NULL, alloc_round, &tdev),
				 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	stop_long = 0;
	assert_int_equal(pthread_create(&lt, NULL, long_lived, &tdev), 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(pthread_create(&t, NULL, alloc_round, &tdev),
				 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	__atomic_store_n(&stop_long, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(lt, NULL), 0);
	assert_int_equal(devres_check(&tdev), 0);
	alloc_round(&tdev);
}

static char group_id;

static void *open_and_end(void *arg)
{
	(void)arg;
	assert_ptr_equal(devres_open_group(&tdev, &group_id, 0), &group_id);
	assert_non_null(devm_kmalloc(&tdev, 16, 0));
	return NULL;
}

static void group_left_open(void **state)
{
	int w0 = devres_warn_count();
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, open_and_end, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* The device's group: this thread closes and releases it. */
	devres_close_group(&tdev, &group_id);
	assert_int_equal(devres_release_group(&tdev, &group_id), 1);
	assert_int_equal(devres_warn_count(), w0);
}

/* ---- Cancellation while a call waits for another thread ---- */

struct victim {
	void (*call)(void *arg);
	void *arg;
	bool entered, returned, after;
};

static void *victim_main(void *arg)
{
	struct victim *v = arg;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	__atomic_store_n(&v->entered, true, __ATOMIC_RELEASE);
	v->call(v->arg);
	__atomic_store_n(&v->returned, true, __ATOMIC_RELEASE);
	pthread_testcancel();
	v->after = true;
	return NULL;
}

/*
 * Runs @call in a thread, cancels it once it waits (the gate's holder is
 * at the gate), then opens the gate: the call returns, and the thread
 * ends at its next cancellation point.
 */
static void cancel_while_waiting(void (*call)(void *arg), void *arg)
{
	struct victim v = { call, arg, false, false, false };
	void *ret;
	pthread_t t;

	alarm(30);
	gate_until_reached();
	assert_int_equal(pthread_create(&t, NULL, victim_main, &v), 0);
	while (!__atomic_load_n(&v.entered, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	sleep_ms(50);
	assert_int_equal(pthread_cancel(t), 0);
	sleep_ms(50);
	/* Still waiting: not cancelled inside the call. */
	assert_false(__atomic_load_n(&v.returned, __ATOMIC_ACQUIRE));
	gate_release();
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	assert_true(v.returned);
	assert_false(v.after);
	alarm(0);
}

/* free_irq() waiting for a handler that runs on the dispatcher. */
static int handled;

static irqreturn_t gated_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	gate_wait();
	handled++;
	return IRQ_HANDLED;
}

static int the_irq;

static void call_free_irq(void *arg)
{
	(void)arg;
	free_irq((unsigned int)the_irq, &tdev);
}

static void cancel_in_free_irq(void **state)
{
	(void)state;
	gate_reset();
	handled = 0;
	the_irq = irq_line_create("cancel-line");
	assert_true(the_irq > 0);
	assert_int_equal(request_irq((unsigned int)the_irq, gated_handler, 0,
				     "gated", &tdev),
			 0);
	assert_int_equal(irq_line_raise(the_irq), 0);
	cancel_while_waiting(call_free_irq, NULL);
	assert_int_equal(handled, 1);
	/* The line is free: a new handler gets the next interrupt. */
	alarm(10);
	gate_reset();
	gate_release();
	assert_int_equal(request_irq((unsigned int)the_irq, gated_handler, 0,
				     "gated", &tdev),
			 0);
	assert_int_equal(irq_line_raise_wait(the_irq), 0);
	assert_int_equal(handled, 2);
	free_irq((unsigned int)the_irq, &tdev);
	assert_int_equal(irq_line_destroy(the_irq), 0);
	alarm(0);
}

/* A release waiting for another thread's revocable access. */
static int resource, revoked;
static struct revocable *handle;

static void revoke_release(void *res)
{
	assert_ptr_equal(res, &resource);
	revoked++;
}

static void *reader(void *arg)
{
	(void)arg;
	assert_ptr_equal(revocable_try_access(handle), &resource);
	gate_wait();
	revocable_access_end(handle);
	return NULL;
}

static void call_release_all(void *arg)
{
	assert_int_equal(devres_release_all(arg), 1);
}

static void cancel_in_revocation(void **state)
{
	pthread_t r;

	(void)state;
	gate_reset();
	revoked = 0;
	handle = devm_revocable_create(&tdev, &resource, revoke_release);
	assert_non_null(handle);
	assert_non_null(revocable_get(handle));
	assert_int_equal(pthread_create(&r, NULL, reader, NULL), 0);
	cancel_while_waiting(call_release_all, &tdev);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_int_equal(revoked, 1);
	assert_null(revocable_try_access(handle));
	revocable_put(handle);
	/* The device is free: a managed allocation and its release. */
	alloc_round(&tdev);
}

/* device_unregister() waiting for a remove in another thread. */
static int removes;

static int plain_probe(struct device *dev)
{
	(void)dev;
	return 0;
}

static void gated_remove(struct device *dev)
{
	(void)dev;
	gate_wait();
	removes++;
}

static const struct bus_type cancel_bus = { .name = "cancel-bus" };

static struct device_driver cancel_drv = {
	.name = "cancel-drv",
	.bus = &cancel_bus,
	.probe = plain_probe,
	.remove = gated_remove,
};

static void *unbinder(void *arg)
{
	device_release_driver(arg);
	return NULL;
}

static void call_unregister(void *arg)
{
	device_unregister(arg);
}

static void cancel_in_unregister(void **state)
{
	struct device *dev;
	pthread_t u;

	(void)state;
	gate_reset();
	removes = 0;
	assert_int_equal(t_bus_register(&cancel_bus), 0);
	assert_int_equal(t_driver_register(&cancel_drv), 0);
	dev = heap_dev(&cancel_bus, "cancel-dev");
	assert_int_equal(device_add(dev), 0);
	assert_ptr_equal(dev->driver, &cancel_drv);
	assert_int_equal(pthread_create(&u, NULL, unbinder, dev), 0);
	cancel_while_waiting(call_unregister, dev);
	assert_int_equal(pthread_join(u, NULL), 0);
	assert_int_equal(removes, 1);
	/* The driver and the bus go: nothing of the device holds them. */
	alarm(10);
	t_driver_unregister(&cancel_drv);
	t_bus_unregister(&cancel_bus);
	alarm(0);
}

/*
 * A release that closes a managed descriptor or stream, with a
 * cancellation already requested: close() and fclose() are cancellation
 * points, the release is not. Before, the thread ended inside
 * devres_release_all() with the descriptor open though counted closed,
 * and the release was blamed for it (one WARN).
 */
static int go;

static void *release_pending_cancel(void *arg)
{
	struct victim *v = arg;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	v->call(v->arg);
	__atomic_store_n(&v->returned, true, __ATOMIC_RELEASE);
	pthread_testcancel();
	v->after = true;
	return NULL;
}

/* Runs @v's call in a thread cancelled before it starts: it returns. */
static void run_cancelled(struct victim *v)
{
	void *ret;
	pthread_t t;

	go = 0;
	assert_int_equal(pthread_create(&t, NULL, release_pending_cancel, v),
			 0);
	assert_int_equal(pthread_cancel(t), 0);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	assert_true(v->returned);
	assert_false(v->after);
}

static void call_release_all_2(void *arg)
{
	assert_int_equal(devres_release_all(arg), 2);
}

static void cancel_in_fd_release(void **state)
{
	struct victim v = { call_release_all_2, &tdev, false, false, false };
	int w0 = devres_warn_count(), fd;
	FILE *f;

	(void)state;
	fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	f = devm_fopen(&tdev, "/dev/null", "r");
	assert_non_null(f);
	run_cancelled(&v);
	/* Both closed, nothing blamed. */
	assert_true(fcntl(fd, F_GETFD) < 0);
	assert_int_equal(devres_warn_count(), w0);
}

/*
 * The interrupt calls that write, read or close descriptors with a line's
 * lock (or the line table's, or the dispatcher's) held, each with a
 * cancellation already requested: a raise, the first request (it starts
 * the dispatcher), the last free (it drains the line and closes the
 * dispatcher's descriptors). Each must complete, and the line must then
 * be freed and destroyed (a lock left held would hang that).
 */
static int pending_irq;

static irqreturn_t quiet_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static void call_raise(void *arg)
{
	(void)arg;
	assert_int_equal(irq_line_raise(pending_irq), 0);
}

static void call_request(void *arg)
{
	(void)arg;
	assert_int_equal(request_irq((unsigned int)pending_irq, quiet_handler,
				     0, "pending", &tdev),
			 0);
}

static void call_free(void *arg)
{
	(void)arg;
	free_irq((unsigned int)pending_irq, &tdev);
}

static void with_cancel_pending(void (*call)(void *arg))
{
	struct victim v = { call, NULL, false, false, false };

	run_cancelled(&v);
}

static void cancel_pending_irq_calls(void **state)
{
	(void)state;
	alarm(30);
	pending_irq = irq_line_create("pending-line");
	assert_true(pending_irq > 0);
	with_cancel_pending(call_raise);
	with_cancel_pending(call_request);
	with_cancel_pending(call_raise);
	assert_int_equal(irq_line_raise_wait(pending_irq), 0);
	with_cancel_pending(call_free);
	assert_int_equal(irq_line_destroy(pending_irq), 0);
	alarm(0);
}

/*
 * PCI calls with a cancellation pending, on a fake tree: a config read
 * opens the device's file under the PCI device list's lock (openat() is
 * a cancellation point), an enable writes "1" with the device's lock
 * held. Each must complete; the list and the device are free after (a
 * scan and a removal take the list's lock).
 */
static struct pci_dev *pending_pdev;
static uint32_t pending_id;

static void call_config_read(void *arg)
{
	(void)arg;
	assert_int_equal(pci_read_config_dword(pending_pdev, PCI_VENDOR_ID,
					       &pending_id),
			 PCIBIOS_SUCCESSFUL);
}

static void call_enable(void *arg)
{
	(void)arg;
	assert_int_equal(pci_enable_device(pending_pdev), 0);
}

static void call_disable(void *arg)
{
	(void)arg;
	pci_disable_device(pending_pdev);
}

static void cancel_pending_pci_calls(void **state)
{
	struct pci_fake_dev d = fake_fn_nic("0000:00:02.0");
	struct pci_fake *ft;

	(void)state;
	alarm(30);
	ft = fake_fn_tree(&d);
	assert_non_null(ft);
	pending_pdev = pci_get_device(0x1af4, 0x1000, NULL);
	assert_non_null(pending_pdev);
	pending_id = 0;
	with_cancel_pending(call_config_read);
	assert_int_equal(pending_id, 0x10001af4);
	with_cancel_pending(call_enable);
	assert_true(pci_is_enabled(pending_pdev));
	with_cancel_pending(call_disable);
	assert_false(pci_is_enabled(pending_pdev));
	pci_dev_put(pending_pdev);
	/* The list is free: a rescan and the removal take its lock. */
	assert_true(pci_bus_scan() >= 0);
	assert_int_equal(fake_fn_tree_remove(ft), 0);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sink_ends_thread, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(bias_owner_ends, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(group_left_open, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(cancel_in_free_irq, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(cancel_in_revocation, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(cancel_in_unregister, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(cancel_in_fd_release, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(cancel_pending_irq_calls,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(cancel_pending_pci_calls,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
