// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * A platform device's resources read by one thread while another deletes
 * the device: platform_get_resource(), platform_get_resource_byname() (by
 * a resource's own name, and by the device's name, which the add gave an
 * unnamed resource), platform_get_irq() and platform_get_irq_optional(),
 * against platform_device_del(), platform_device_unregister() and
 * device_del(). The reader holds its own reference, as a driver's thread
 * would. Each read finds the resource (the same one) or, for a resource
 * named after the device, nothing once the deletion took the name back;
 * the interrupt is the device's. The deletion writes the resources' names
 * while the reader reads them: the two must not race (TSan).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/platform.h>
#include "hostile/cell-child.h"

#define ROUNDS 50

enum rd {
	R_GET_RESOURCE,
	R_BYNAME_OWN,
	R_BYNAME_DEV,
	R_GET_IRQ,
	R_GET_IRQ_OPT,
	NR_RD
};

static const char *const rd_names[NR_RD] = {
	"platform_get_resource",
	"platform_get_resource_byname (own name)",
	"platform_get_resource_byname (device's name)",
	"platform_get_irq",
	"platform_get_irq_optional",
};

enum del {
	D_PDEV_DEL,
	D_PDEV_UNREGISTER,
	D_DEVICE_DEL,
	NR_DEL
};

static const char *const del_names[NR_DEL] = {
	"platform_device_del",
	"platform_device_unregister",
	"device_del",
};

static const struct resource res[] = {
	{ .start = 0x7e000000,
	  .end = 0x7e000fff,
	  .flags = IORESOURCE_MEM,
	  .name = "regs" },
	{ .start = 0x7e001000, .end = 0x7e001fff, .flags = IORESOURCE_MEM },
	{ .start = 45, .end = 45, .flags = IORESOURCE_IRQ },
};

static struct platform_device *pdev;
static bool done;
static pthread_barrier_t go;

/* 0 when one read found what it may find. */
static int read_once(enum rd rd)
{
	struct resource *r;
	int irq;

	switch (rd) {
	case R_GET_RESOURCE:
		r = platform_get_resource(pdev, IORESOURCE_MEM, 1);
		return r == &pdev->resource[1] ? 0 : 1;
	case R_BYNAME_OWN:
		r = platform_get_resource_byname(pdev, IORESOURCE_MEM, "regs");
		return r == &pdev->resource[0] ? 0 : 2;
	case R_BYNAME_DEV:
		r = platform_get_resource_byname(pdev, IORESOURCE_MEM,
						 "pr-dev");
		return !r || r == &pdev->resource[1] ? 0 : 3;
	case R_GET_IRQ:
		irq = platform_get_irq(pdev, 0);
		return irq == 45 ? 0 : 4;
	case R_GET_IRQ_OPT:
		irq = platform_get_irq_optional(pdev, 0);
		return irq == 45 ? 0 : 5;
	case NR_RD:
		break;
	}
	return 6;
}

static enum rd cur_rd;

static void *reader(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	do {
		if (read_once(cur_rd))
			return (void *)1;
	} while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE));
	return NULL;
}

static int one_round(enum del del)
{
	pthread_t t;
	void *bad;

	pdev = platform_device_alloc("pr-dev", PLATFORM_DEVID_NONE);
	if (!pdev || platform_device_add_resources(pdev, res, 3) ||
	    platform_device_add(pdev))
		return 10;
	get_device(&pdev->dev); /* the reader's */
	__atomic_store_n(&done, false, __ATOMIC_RELEASE);
	if (pthread_create(&t, NULL, reader, NULL))
		return 11;
	pthread_barrier_wait(&go);
	switch (del) {
	case D_PDEV_DEL:
		platform_device_del(pdev);
		platform_device_put(pdev);
		break;
	case D_PDEV_UNREGISTER:
		platform_device_unregister(pdev);
		break;
	case D_DEVICE_DEL:
		device_del(&pdev->dev);
		put_device(&pdev->dev);
		break;
	case NR_DEL:
		break;
	}
	__atomic_store_n(&done, true, __ATOMIC_RELEASE);
	if (pthread_join(t, &bad))
		return 12;
	/* Deleted, the device's name names nothing; its own names stay. */
	if (read_once(cur_rd) ||
	    platform_get_resource_byname(pdev, IORESOURCE_MEM, "pr-dev"))
		return bad ? 13 : 14;
	put_device(&pdev->dev);
	return bad ? 13 : 0;
}

static int cell(int row, int col)
{
	struct devres_ledger base, now;
	int w0, ret;

	alarm(20);
	cur_rd = (enum rd)row;
	if (pthread_barrier_init(&go, NULL, 2))
		return 2;
	devres_ledger_snapshot(&base);
	w0 = devres_warn_count();
	for (int i = 0; i < ROUNDS; i++) {
		ret = one_round((enum del)col);
		if (ret)
			return ret;
	}
	if (devres_warn_count() != w0)
		return 20;
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? 21 : 0;
}

static void readers_during_delete(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rd_names, NR_RD, del_names, NR_DEL, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readers_during_delete),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
