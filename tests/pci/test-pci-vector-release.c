// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan white-box timeout=120 */
/*
 * The library's own releases of a device's vectors against a vector call
 * a driver has in progress on another thread, one cell each: the unbind
 * (device_release_driver()), the driver's unregister, the bus's removal
 * of the device, and a failed probe each reset the device's vectors, while
 * a pci_alloc_irq_vectors() or a pci_free_irq_vectors() of another thread
 * is held inside the backend (a fake backend that parks there until the
 * cell lets it go, once the releasing thread sleeps or has returned).
 *
 * The reset used to go on at once: an allocation in progress then
 * recorded its vectors on the device after it, and the unbound device
 * kept them (MSI-X on, pci_irq_vector() naming lines), its next binding's
 * allocation refused ("allocated already"). Each release must wait for
 * the call in the backend, as pci_free_irq_vectors() does, then reset:
 * the call has returned when the release returns, the device shows no
 * vectors, and a new binding allocates them.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/backend.h"
#include "pci/park-hold.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define NAME "0000:00:0a.0"
#define VENDOR 0x1af4
#define DEVICE 0x1042
#define NLINES 2

/* The fake backend: its lines, and a hold on its next call. */
static struct {
	int lines[NLINES];
	int hold_alloc, hold_free; /* the next such call parks */
	bool held_out;		   /* the held call went on */
	struct park_hold park;
} bk;

static void park_if_held(int *hold)
{
	if (park_if(&bk.park, hold))
		__atomic_store_n(&bk.held_out, true, __ATOMIC_RELEASE);
}

/* Set before the held call leaves the backend, hence before it ends. */
static bool held_out(void)
{
	return __atomic_load_n(&bk.held_out, __ATOMIC_ACQUIRE);
}

static int bk_alloc(struct pci_dev *pdev, void *data, unsigned int min_vecs,
		    unsigned int max_vecs, unsigned int flags,
		    unsigned int *ret_type)
{
	int ret;

	(void)data;
	(void)min_vecs;
	(void)max_vecs;
	(void)flags;
	park_if_held(&bk.hold_alloc);
	ret = pci_dev_set_irq_lines(pdev, bk.lines, NLINES);
	*ret_type = PCI_IRQ_MSIX;
	return ret ? ret : NLINES;
}

static void bk_free(struct pci_dev *pdev, void *data)
{
	(void)data;
	park_if_held(&bk.hold_free);
	(void)pci_dev_set_irq_lines(pdev, NULL, 0);
}

static const struct pci__backend fake_backend = {
	.name = "test",
	.attach = park_bk_attach,
	.detach = park_bk_detach,
	.alloc_irq_vectors = bk_alloc,
	.free_irq_vectors = bk_free,
};

enum release {
	UNBIND,
	DRIVER_UNREGISTER,
	BUS_REMOVE,
	PROBE_FAILS,
	NR_RELEASES
};

static const char *const release_name[NR_RELEASES] = {
	"device_release_driver()",
	"pci_unregister_driver()",
	"pci_bus_remove_all()",
	"a probe that fails",
};

enum held {
	ALLOC,
	FREE,
	NR_HELD
};

static const char *const held_name[NR_HELD] = {
	"pci_alloc_irq_vectors()",
	"pci_free_irq_vectors()",
};

struct cell {
	enum release release;
	enum held held;
	char name[96];
};

static const struct cell *cur;
static struct pci_dev *pdev;
static pthread_t worker;
static int probe_ret;
static bool working, registered;
static enum {
	PROBE_OK,
	PROBE_HOLD_AND_FAIL,
	PROBE_ALLOCATES
} probe_mode;

static void *work(void *arg)
{
	(void)arg;
	if (cur->held == ALLOC)
		(void)pci_alloc_irq_vectors(pdev, 1, NLINES, PCI_IRQ_MSIX);
	else
		pci_free_irq_vectors(pdev);
	return NULL;
}

/* The cell's call, held in the backend on another thread. */
static void start_held_call(void)
{
	if (cur->held == FREE)
		assert_int_equal(pci_alloc_irq_vectors(pdev, 1, NLINES,
						       PCI_IRQ_MSIX),
				 NLINES);
	park_arm(&bk.park);
	__atomic_store_n(&bk.held_out, false, __ATOMIC_RELEASE);
	__atomic_store_n(cur->held == ALLOC ? &bk.hold_alloc : &bk.hold_free, 1,
			 __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&worker, NULL, work, NULL), 0);
	working = true;
	park_wait(&bk.park);
	assert_int_equal(park_releaser_start(&bk.park), 0);
}

/* Both threads joined, the hold let go whatever happened. */
static void finish_held_call(void)
{
	if (!working)
		return;
	working = false;
	assert_int_equal(park_releaser_join(&bk.park), 0);
	assert_int_equal(pthread_join(worker, NULL), 0);
}

static int vr_probe(struct pci_dev *dev, const struct pci_device_id *id)
{
	(void)id;
	switch (probe_mode) {
	case PROBE_HOLD_AND_FAIL:
		start_held_call();
		return -EIO;
	case PROBE_ALLOCATES:
		probe_ret = pci_alloc_irq_vectors(dev, 1, NLINES, PCI_IRQ_MSIX);
		return 0;
	default:
		return 0;
	}
}

static const struct pci_device_id vr_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver vr_driver = {
	.name = "vector-release",
	.id_table = vr_ids,
	.probe = vr_probe,
};

static void run_cell(void **state)
{
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);
	bool done;

	(void)state;
	for (int i = 0; i < NLINES; i++) {
		bk.lines[i] = irq_line_create("vec");
		assert_true(bk.lines[i] > 0);
	}
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(pdev);
	probe_mode = cur->release == PROBE_FAILS ? PROBE_HOLD_AND_FAIL
						 : PROBE_OK;
	/* A failed probe's reset runs inside the register. */
	assert_int_equal(pci_register_driver(&vr_driver), 0);
	registered = true;
	if (cur->release != PROBE_FAILS) {
		assert_ptr_equal(pdev->dev.driver, &vr_driver.driver);
		start_held_call();
	}
	switch (cur->release) {
	case UNBIND:
		device_release_driver(&pdev->dev);
		break;
	case DRIVER_UNREGISTER:
		pci_unregister_driver(&vr_driver);
		registered = false;
		break;
	case BUS_REMOVE:
		pci_bus_remove_all();
		break;
	default:
		break;
	}
	done = held_out();
	finish_held_call();
	/* The device shows no vectors after the release... */
	assert_int_equal(pci_irq_vector(pdev, 1), -EINVAL);
	assert_false(pdev->msix_enabled);
	/* ...which waited for the call in the backend. */
	assert_true(done);
	if (cur->release == BUS_REMOVE)
		return;
	/* A new binding allocates its vectors. */
	probe_mode = PROBE_ALLOCATES;
	probe_ret = 0;
	if (!registered) {
		assert_int_equal(pci_register_driver(&vr_driver), 0);
		registered = true;
	} else {
		assert_int_equal(device_attach(&pdev->dev), 1);
	}
	assert_int_equal(probe_ret, NLINES);
	pci_free_irq_vectors(pdev);
}

static int cell_setup(void **state)
{
	cur = *state;
	return pci_setup(state);
}

static int cell_teardown(void **state)
{
	finish_held_call();
	if (registered)
		pci_unregister_driver(&vr_driver);
	registered = false;
	if (pdev)
		pci_dev_put(pdev);
	pdev = NULL;
	pci_bus_remove_all();
	if (ft)
		(void)pci_fake_remove(ft, NAME);
	for (int i = 0; i < NLINES; i++) {
		if (bk.lines[i] > 0 && irq_line_destroy(bk.lines[i]))
			return -1;
		bk.lines[i] = 0;
	}
	return pci_teardown(state);
}

#define NR_CELLS (NR_RELEASES * NR_HELD)

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (park_init(&bk.park) || pci__backend_add(&fake_backend))
		return 1;
	for (int r = 0; r < NR_RELEASES; r++)
		for (int h = 0; h < NR_HELD; h++, n++) {
			cells[n] = (struct cell){ (enum release)r, (enum held)h,
						  "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 cell_teardown, "%s while %s is in the backend",
				 release_name[r], held_name[h]);
		}
	alarm(100);
	return cmocka_run_group_tests_name("pci-vector-release", tests, NULL,
					   NULL);
}
