// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci hostile tsan white-box timeout=60 */
/*
 * A call on a device's vectors waits for another call's allocation or
 * free in the backend: pci_free_irq_vectors() (vec_wait()), and the
 * binding's reset of the vectors at unbind (device_release_driver(),
 * vec_quiesce()). The thread in the backend may run the application's
 * code (the backend's own, a log sink): here a fake backend whose
 * allocation stops, with devm_thread_stop(), the managed thread making
 * the other call, which closes a loop. Both waits are on the record of
 * waits, and the later one is refused with one WARN: the free's (nothing
 * freed), the reset's (it resets without waiting: it cannot refuse), or
 * the stop's (-EDEADLK; the other call goes on once the allocation
 * returns). In the control the allocation returns once the other call
 * waits, and nothing is refused.
 *
 * Each cell in a child under an alarm: before these waits were
 * recorded, every cell hung until it.
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "pcitest.h"
#include "pci/backend.h"
#include "pci/park-hold.h"
#include "base/waits.h"

#define NAME "0000:00:0b.0"
#define VENDOR 0x1af4
#define DEVICE 0x1043
#define NLINES 2
#define CELL_ALARM_S 10
#define RET 7

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

enum take {
	FREE,
	RESET
};

enum order {
	TAKE_LAST,
	STOP_LAST,
	CONTROL
};

static const char *const take_names[] = { "pci_free_irq_vectors", "device_"
								  "release_"
								  "driver" };
static const char *const order_names[] = { "take last", "stop last",
					   "control" };

static int lines[NLINES];
static struct pci_dev *pdev;
static struct device sdev;
static struct devres_thread *taker;
static enum take take;
static enum order ord;
static uint64_t alloc_wid, taker_wid;
static int armed, in_alloc, taker_done;
static long stop_ret = RET;

static void sdev_release(struct device *dev)
{
	(void)dev;
}

/* The allocation, once armed: the body of the cell, in the backend. */
static int bk_alloc(struct pci_dev *p, void *data, unsigned int min_vecs,
		    unsigned int max_vecs, unsigned int flags,
		    unsigned int *ret_type)
{
	int ret;

	(void)data;
	(void)min_vecs;
	(void)max_vecs;
	(void)flags;
	if (LOAD(armed)) {
		STORE(alloc_wid, devres_wait_self());
		STORE(in_alloc, 1);
		/* Last, or the control: once the other call waits. */
		if (ord != TAKE_LAST)
			while (!devres__wait_records(LOAD(taker_wid)) &&
			       !LOAD(taker_done))
				usleep(1000);
		if (ord != CONTROL)
			stop_ret = devm_thread_stop(&sdev, taker);
	}
	ret = pci_dev_set_irq_lines(p, lines, NLINES);
	*ret_type = PCI_IRQ_MSIX;
	return ret ? ret : NLINES;
}

static void bk_free(struct pci_dev *p, void *data)
{
	(void)data;
	(void)pci_dev_set_irq_lines(p, NULL, 0);
}

static const struct pci__backend fake_backend = {
	.name = "test",
	.attach = park_bk_attach,
	.detach = park_bk_detach,
	.alloc_irq_vectors = bk_alloc,
	.free_irq_vectors = bk_free,
};

static int wv_probe(struct pci_dev *dev, const struct pci_device_id *id)
{
	(void)dev;
	(void)id;
	return 0;
}

static const struct pci_device_id wv_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver wv_driver = {
	.name = "wait-vectors",
	.id_table = wv_ids,
	.probe = wv_probe,
};

/* The managed thread that frees or resets while the allocation runs. */
static int take_fn(void *arg)
{
	(void)arg;
	STORE(taker_wid, devres_wait_self());
	while (!LOAD(in_alloc))
		usleep(1000);
	/* Last: once the allocation's stop of this thread waits. */
	if (ord == TAKE_LAST)
		while (!devres__wait_records(LOAD(alloc_wid)))
			usleep(1000);
	if (take == FREE)
		pci_free_irq_vectors(pdev);
	else
		device_release_driver(&pdev->dev);
	STORE(taker_done, 1);
	return RET;
}

static int cell(enum take t, enum order o)
{
	int w0, w, n;

	alarm(CELL_ALARM_S);
	take = t;
	ord = o;
	for (int i = 0; i < NLINES; i++)
		if ((lines[i] = irq_line_create("wv")) <= 0)
			return 3;
	/* The fake tree and the backend are the parent's, made once. */
	if (pci_bus_scan() != 1)
		return 4;
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	if (!pdev || pci_register_driver(&wv_driver) ||
	    pdev->dev.driver != &wv_driver.driver)
		return 5;
	device_initialize(&sdev);
	sdev.release = sdev_release;
	if (dev_set_name(&sdev, "wv-t"))
		return 6;
	taker = devm_thread_run(&sdev, take_fn, NULL, "wv");
	if (IS_ERR(taker))
		return 7;
	w0 = devres_warn_count();
	STORE(armed, 1);
	n = pci_alloc_irq_vectors(pdev, 1, NLINES, PCI_IRQ_MSIX);
	(void)devres_release_all(&sdev);
	w = devres_warn_count() - w0;
	if (n != NLINES || w != (o == CONTROL ? 0 : 1) ||
	    stop_ret != (o == STOP_LAST ? -EDEADLK : RET) ||
	    !LOAD(taker_done)) {
		fprintf(stderr, "%s, %s: %d vectors, %d WARNs, stop %ld\n",
			take_names[t], order_names[o], n, w, stop_ret);
		return 8;
	}
	/* Waited for, the free or the reset came after the allocation. */
	if (o != TAKE_LAST && pci_irq_vector(pdev, 1) != -EINVAL)
		return 9;
	pci_free_irq_vectors(pdev);
	pci_unregister_driver(&wv_driver);
	pci_dev_put(pdev);
	put_device(&sdev);
	return 0;
}

/* A cell in a child of its own (cell-child.h). */
static int one(int t, int o)
{
	return cell((enum take)t, (enum order)o);
}

static void alloc_and_take(void **state)
{
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci__backend_add(&fake_backend), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	run_cells_in_children(one, take_names, RESET + 1, order_names,
			      CONTROL + 1);
	assert_int_equal(pci_fake_remove(ft, NAME), 0);
	assert_int_equal(pci_teardown(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(alloc_and_take),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
