// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan timeout=60 */
/*
 * The library's own releases of a UIO device's interrupt vector (the
 * unbind, the driver's unregister, the bus's removal: each releases the
 * vector, whose line reads /dev/uioN and unmasks INTx through the
 * device) against what a driver has in progress on that vector, one cell
 * each: its handler running (parked in it until the releasing thread
 * sleeps), a synchronize_irq() or a disable_irq() of another thread
 * waiting for that handler, and a handler the driver requested with
 * request_irq() and left on the vector at its remove.
 *
 * Each release waits for the handler in progress, as free_irq() does: the
 * handler has returned when the release returns, and the vector's line is
 * gone (no line by that number) once the calls waiting on it returned. A
 * handler left on the vector used to keep its line, claimed by the
 * released binding and unmasking through the freed device (its next
 * interrupt read freed memory) with the fd open for good: the release
 * frees it, with one WARN naming it, as the line goes with the binding.
 */
#define _GNU_SOURCE /* posix_openpt(), ptsname() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"
#include "pci/park-hold.h"

#define A "0000:00:05.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8

enum release {
	UNBIND,
	DRIVER_UNREGISTER,
	BUS_REMOVE,
	NR_RELEASES
};

static const char *const release_name[NR_RELEASES] = {
	"device_release_driver()",
	"pci_unregister_driver()",
	"pci_bus_remove_all()",
};

enum held {
	HANDLER,
	SYNCHRONIZE,
	DISABLE,
	LEFT,
	NR_HELD
};

static const char *const held_name[NR_HELD] = {
	"its handler runs",
	"synchronize_irq() waits for its handler",
	"disable_irq() waits for its handler",
	"a handler request_irq() left on it",
};

struct cell {
	enum release release;
	enum held held;
	char name[120];
};

static const struct cell *cur;
static struct fake_uio ua = { -1, -1 };
static struct park_hold park;
static int hold, vector, cookie;
static bool registered, parked, held_out;
static struct asleep_call waiter;
static bool waiting;

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	if (park_if(&park, &hold))
		__atomic_store_n(&held_out, true, __ATOMIC_RELEASE);
	return IRQ_HANDLED;
}

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret = uio_probe_vector(pdev);

	(void)id;
	if (ret < 0)
		return ret;
	vector = ret;
	if (cur->held == LEFT)
		return request_irq((unsigned int)vector, handler, 0, "left",
				   &cookie);
	return devm_request_irq(&pdev->dev, (unsigned int)vector, handler, 0,
				"rel", &cookie);
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "uio-release",
	.id_table = ids,
	.probe = probe,
};

static int wait_call(void)
{
	if (cur->held == SYNCHRONIZE)
		synchronize_irq((unsigned int)vector);
	else
		disable_irq((unsigned int)vector);
	return 0;
}

/* The handler parked in the dispatch, and the cell's waiter on it. */
static void start_held(void)
{
	park_arm(&park);
	__atomic_store_n(&held_out, false, __ATOMIC_RELEASE);
	__atomic_store_n(&hold, 1, __ATOMIC_RELEASE);
	assert_int_equal(uio_fire(A, &ua, 1), 0);
	park_wait(&park);
	parked = true;
	if (cur->held == SYNCHRONIZE || cur->held == DISABLE) {
		waiter.fn = wait_call;
		start_until_asleep(&waiter);
		waiting = true;
	}
	assert_int_equal(park_releaser_start(&park), 0);
}

static void finish_held(void)
{
	if (parked) {
		parked = false;
		assert_int_equal(park_releaser_join(&park), 0);
	}
	if (waiting) {
		waiting = false;
		assert_int_equal(pthread_join(waiter.t, NULL), 0);
	}
}

static void run_cell(void **state)
{
	struct pci_fake_dev d = fake_dev(A, VENDOR, DEVICE, 1);
	bool done;

	(void)state;
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(A, 2, &ua), 0);
	assert_int_equal(pci_bus_scan_device(A), 0);
	assert_int_equal(pci_register_driver(&drv), 0);
	registered = true;
	assert_true(vector > 0);
	if (cur->held != LEFT)
		start_held();
	start_capture();
	switch (cur->release) {
	case UNBIND: {
		struct pci_dev *p = pci_get_device(VENDOR, DEVICE, NULL);

		assert_non_null(p);
		device_release_driver(&p->dev);
		pci_dev_put(p);
		break;
	}
	case DRIVER_UNREGISTER:
		pci_unregister_driver(&drv);
		registered = false;
		break;
	default:
		pci_bus_remove_all();
		break;
	}
	done = __atomic_load_n(&held_out, __ATOMIC_ACQUIRE);
	finish_held();
	if (cur->held == LEFT) {
		/* The handler left goes with the vector, with one WARN. */
		expect_warn_on(A, "pci_free_irq_vectors",
			       "still requested on it: freed");
	} else {
		/* The release waited for the handler in progress. */
		assert_true(done);
		expect_no_warn();
	}
	/* The vector's line is gone with the binding. */
	start_capture();
	assert_int_equal(irq_line_destroy(vector), -EINVAL);
	expect_warn_on("(no device)", "irq_line_destroy", "is not a line");
}

static void discard_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static int cell_setup(void **state)
{
	cur = *state;
	vector = 0;
	if (pci_setup(state) || uio_dir_make())
		return -1;
	return 0;
}

static int cell_teardown(void **state)
{
	int ret;

	finish_held();
	devres_set_log_sink(discard_sink, NULL);
	/* A cell that failed may have left its handler on the line. */
	if (cur->held == LEFT && vector > 0)
		(void)free_irq((unsigned int)vector, &cookie);
	if (registered)
		pci_unregister_driver(&drv);
	registered = false;
	pci_bus_remove_all();
	fake_uio_close(&ua);
	ret = pci_teardown(state);
	uio_dir_remove();
	return ret;
}

#define NR_CELLS (NR_RELEASES * NR_HELD)

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (park_init(&park))
		return 1;
	for (int h = 0; h < NR_HELD; h++)
		for (int r = 0; r < NR_RELEASES; r++, n++) {
			cells[n] = (struct cell){ (enum release)r, (enum held)h,
						  "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 cell_teardown, "%s while %s", release_name[r],
				 held_name[h]);
		}
	alarm(50);
	return cmocka_run_group_tests_name("pci-uio-release", tests, NULL,
					   NULL);
}
