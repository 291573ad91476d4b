// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile pci tsan timeout=60 */
/*
 * However a device of one of the library's buses is deleted, the bus's
 * own state leaves with it: by the bus's own delete
 * (platform_device_unregister(), pci_bus_remove_all()), through its
 * struct device (device_unregister(), device_del() and put_device()), by
 * its last put while registered, by a remove that ends its thread inside
 * device_unregister(). For each kind of device: a platform device, a PCI
 * function of the sysfs tree, one taken by the UIO backend. After the
 * deletion the bus's lookups no longer find the device, its regions can
 * be requested again, the UIO backend holds no device, the same name is
 * added again and bound, the ledger is back where it started, and the
 * only WARNs are those of the misuse itself (the put one too many, the
 * thread that ends inside remove). A UIO function is quiesced (no
 * mastering, INTx masked) before its binding's memory goes, also when
 * its driver's remove ends the thread.
 *
 * Before, only the bus's own delete did it for a PCI function: deleted
 * through its struct device, it stayed on the PCI list, deleted from the
 * driver core's bus, with its BARs claimed, until pci_bus_remove_all()
 * deleted it a second time (a WARN in the library's name); a lookup found
 * it, and a rescan of its name was refused (-EEXIST) and never added it
 * again. And a PCI driver's remove that ended the thread skipped what
 * the bus does after it: the UIO function was left mastering, INTx
 * unmasked, while the binding's DMA memory was freed; inside
 * pci_bus_remove_all(), the scan's lock stayed held, and the next scan
 * waited for ever (the cell's alarm ends it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/ioport.h>
#include <devres/pci.h>
#include <devres/platform.h>
#include "testlib.h"
#include "pci/pcitest.h"
#include "pci/uiotest.h"
#include "hostile/cell-child.h"

#define NAME "0000:00:07.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8
#define MEM_START 0x73000000
#define MEM_LEN 0x1000

static bool remove_ends;
static int probes;

static void maybe_end(void)
{
	if (remove_ends)
		pthread_exit(NULL);
}

static int hbd_pdev_probe(struct platform_device *pdev)
{
	(void)pdev;
	probes++;
	return 0;
}

static void hbd_pdev_remove(struct platform_device *pdev)
{
	(void)pdev;
	maybe_end();
}

static struct platform_driver hbd_pdrv = {
	.probe = hbd_pdev_probe,
	.remove = hbd_pdev_remove,
	.driver = { .name = "hbd" },
};

/* Managed resources of the PCI layer, released by the deletion. */
static int hbd_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (!ret)
		ret = pcim_iomap_regions(pdev, 1 << 0, "hbd");
	if (ret)
		return ret;
	pci_set_master(pdev);
	probes++;
	return 0;
}

static void hbd_pci_remove(struct pci_dev *pdev)
{
	(void)pdev;
	maybe_end();
}

static const struct pci_device_id hbd_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver hbd_pci = {
	.name = "hbd-pci",
	.id_table = hbd_ids,
	.probe = hbd_pci_probe,
	.remove = hbd_pci_remove,
};

enum how {
	BUS_DELETE, /* platform_device_unregister(), pci_bus_remove_all() */
	DEVICE_UNREGISTER,
	DEVICE_DEL_PUT,
	LAST_PUT_REGISTERED, /* every reference put, the registration's too */
	REMOVE_ENDS_THREAD,  /* device_unregister(), remove exits */
	BUS_DELETE_ENDS,     /* the bus's own delete, remove exits */
	NR_HOW
};

static const char *const how_name[] = {
	"the bus's own delete",
	"device_unregister()",
	"device_del() and put_device()",
	"the last put while registered",
	"a remove that ends the thread",
	"the bus's own delete, a remove that ends the thread",
};

enum kind {
	PLATFORM,
	PCI_SYSFS,
	PCI_UIO,
	NR_KIND
};

static const char *const kind_name[] = {
	"a platform device",
	"a PCI function (sysfs)",
	"a PCI function (UIO)",
};

static struct fake_uio uio = { -1, -1 };
/* The owner's own array: in the tree, it outlives the device. */
static struct resource pdev_res[1];

static struct platform_device *add_platform(void)
{
	struct platform_device *p = platform_device_alloc("hbd", 0);

	pdev_res[0] = (struct resource)DEFINE_RES_MEM(MEM_START, MEM_LEN);
	pdev_res[0].name = "hbd-mem";
	if (!p)
		return NULL;
	p->resource = pdev_res;
	p->num_resources = 1;
	if (platform_device_add(p)) {
		platform_device_put(p);
		return NULL;
	}
	return p;
}

/* The device, added and bound; its struct device, with a reference. */
static struct device *add(enum kind k)
{
	struct platform_device *p;
	struct pci_dev *pdev;

	if (k == PLATFORM) {
		p = add_platform();
		if (!p)
			_exit(110);
		return &p->dev;
	}
	if (pci_bus_scan_device(NAME))
		_exit(111);
	/* The lookup's reference is the caller's. */
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	if (!pdev)
		_exit(112);
	return &pdev->dev;
}

static void *unregisterer(void *arg)
{
	device_unregister(arg);
	return NULL;
}

static void *bus_deleter(void *arg)
{
	if (arg)
		platform_device_unregister(arg);
	else
		pci_bus_remove_all();
	return NULL;
}

/* Deletes @dev, whose caller's reference goes with it; the WARNs it made. */
static int delete_by(struct device *dev, enum kind k, enum how how)
{
	int warns = devres_warn_count();
	pthread_t t;

	switch (how) {
	case BUS_DELETE:
		if (k == PLATFORM) {
			platform_device_unregister(to_platform_device(dev));
		} else {
			pci_bus_remove_all();
			put_device(dev);
		}
		break;
	case DEVICE_UNREGISTER:
		device_unregister(dev);
		break;
	case DEVICE_DEL_PUT:
		device_del(dev);
		put_device(dev);
		break;
	case LAST_PUT_REGISTERED:
		/* The caller's, the scan's (PCI), then the registration's. */
		if (k != PLATFORM)
			put_device(dev);
		put_device(dev);
		put_device(dev);
		break;
	case REMOVE_ENDS_THREAD:
		remove_ends = true;
		if (pthread_create(&t, NULL, unregisterer, dev) ||
		    pthread_join(t, NULL))
			_exit(113);
		remove_ends = false;
		break;
	default:
		remove_ends = true;
		if (pthread_create(&t, NULL, bus_deleter,
				   k == PLATFORM ? to_platform_device(dev)
						 : NULL) ||
		    pthread_join(t, NULL))
			_exit(114);
		remove_ends = false;
		if (k != PLATFORM)
			put_device(dev);
		break;
	}
	return devres_warn_count() - warns;
}

/* 0 when the cell holds, else the number of its checks that failed. */
static int one_cell(enum kind k, enum how how)
{
	struct resource *r;
	resource_size_t start = MEM_START, len = MEM_LEN;
	struct device *dev;
	struct pci_dev *again;
	int bad = 0, warns;

	dev = add(k);
	bad += !device_is_bound(dev) || probes != 1;
	if (k != PLATFORM) {
		start = to_pci_dev(dev)->resource[0].start;
		len = resource_size(&to_pci_dev(dev)->resource[0]);
		bad += k == PCI_UIO && !pci_dev_is_uio(to_pci_dev(dev));
	}
	warns = delete_by(dev, k, how);
	/* The put one too many WARNs, a remove's end too; nothing else. */
	bad += warns != (how == LAST_PUT_REGISTERED ||
			 how == REMOVE_ENDS_THREAD || how == BUS_DELETE_ENDS);
	if (warns)
		fprintf(stderr, "%d WARNs\n", warns);

	/* The bus's lookup no longer finds it. */
	if (k != PLATFORM) {
		again = pci_get_device(VENDOR, DEVICE, NULL);
		bad += again != NULL;
		pci_dev_put(again);
	}
	/* Its regions are out of the tree, free again. */
	if (k == PLATFORM)
		bad += pdev_res[0].parent != NULL;
	r = request_mem_region(start, len, "hbd-check");
	bad += r == NULL;
	if (r)
		release_mem_region(start, len);
	/*
	 * The backend quiesced it before the binding's memory went (also
	 * when the remove ended the thread), and holds no device: its
	 * configuration may change.
	 */
	if (k == PCI_UIO) {
		uint16_t cmd = 0;

		bad += fake_cmd(NAME, &cmd, false) != 0;
		bad += (cmd & PCI_COMMAND_MASTER) != 0;
		bad += uio_masked(NAME) != 1;
		bad += pci_uio_enable(uio_dir, 0) != 0;
	}

	/* The same name again, bound again, deleted by the bus. */
	warns = devres_warn_count();
	if (k == PLATFORM) {
		struct platform_device *p = add_platform();

		bad += p == NULL || probes != 2;
		platform_device_unregister(p);
	} else {
		bad += pci_bus_scan_device(NAME) != 0;
		again = pci_get_device(VENDOR, DEVICE, NULL);
		bad += again == NULL || !device_is_bound(&again->dev);
		bad += probes != 2;
		pci_dev_put(again);
		pci_bus_remove_all();
	}
	bad += devres_warn_count() != warns;
	return bad;
}

static int setup_pci(enum kind k)
{
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);

	if (pci_setup(NULL) || pci_fake_add(ft, &d))
		return -1;
	if (k == PCI_UIO && (uio_dir_make() || pci_uio_enable(uio_dir, 0) ||
			     fake_uio_add(NAME, 2, &uio)))
		return -1;
	return pci_register_driver(&hbd_pci);
}

/*
 * One cell in a child process of its own: a bus left pointing at freed
 * memory fails its cell alone, and the next cells start clean. The
 * status is the number of failed checks, or the signal that ended the
 * child.
 */
static int cell_in_child(int k, int how)
{
	struct devres_ledger before, after;
	int bad;

	/* A scan that waits for ever fails its cell alone. */
	alarm(30);
	devres_ledger_snapshot(&before);
	if (k == PLATFORM ? platform_driver_register(&hbd_pdrv)
			  : setup_pci((enum kind)k))
		return 100;
	bad = one_cell((enum kind)k, (enum how)how);
	if (k == PLATFORM) {
		platform_driver_unregister(&hbd_pdrv);
	} else {
		pci_unregister_driver(&hbd_pci);
		bad += pci_teardown(NULL) != 0;
		fake_uio_close(&uio);
		if (k == PCI_UIO)
			uio_dir_remove();
	}
	devres_ledger_snapshot(&after);
	bad += devres_ledger_diff(&before, &after, stderr) != 0;
	return bad;
}

static void every_deletion_every_bus(void **state)
{
	int failed = 0;

	(void)state;
	for (int k = 0; k < NR_KIND; k++)
		for (int how = 0; how < NR_HOW; how++) {
			int status = run_cell_in_child(cell_in_child, k, how);

			print_message("%s, %s: %s (status %#x)\n", kind_name[k],
				      how_name[how], status ? "FAILED" : "ok",
				      status);
			failed += status != 0;
		}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_deletion_every_bus),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
