// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=30 */
/*
 * However a platform device is deleted, its resources leave the resource
 * tree before it is released: by platform_device_unregister(), by
 * platform_device_del() and its put, through its struct device
 * (device_unregister(), device_del() and put_device()), by its last put
 * while still registered, by a remove that ends its thread inside the
 * unregister. And whoever owns the resource array (the library's copy,
 * the owner's own array with unnamed resources, named after the device
 * by the add), nothing the device leaves behind points at freed memory:
 * the range can be requested again, a second device registered with the
 * same array enters the tree under its own name, an automatic id is free.
 *
 * Before, only platform_device_del() took the resources out of the tree:
 * deleted any other way, the device's resources stayed in it, in freed
 * memory (every later walk of the tree read it), and its automatic id
 * stayed taken. And an owner's array kept, for each unnamed resource, a
 * pointer to the name freed with the device, which the next device
 * registered with that array entered the tree with.
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
#include <devres/platform.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define MEM_START 0x72000000
#define IO_START 0x7200

static bool remove_ends;

static int hpd_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static void hpd_remove(struct platform_device *pdev)
{
	(void)pdev;
	if (remove_ends)
		pthread_exit(NULL);
}

static struct platform_driver hpd_drv = {
	.probe = hpd_probe,
	.remove = hpd_remove,
	.driver = { .name = "hpd" },
};

enum how {
	PLATFORM_UNREGISTER,
	PLATFORM_DEL_PUT,
	DEVICE_UNREGISTER,
	DEVICE_DEL_PUT,
	LAST_PUT_REGISTERED, /* the owner's put, and one too many */
	REMOVE_ENDS_THREAD,  /* platform_device_unregister(), remove exits */
	NR_HOW
};

static const char *const how_name[] = {
	"platform_device_unregister()",	 "platform_device_del() and put",
	"device_unregister()",		 "device_del() and put_device()",
	"the last put while registered", "a remove that ends the thread",
};

enum array {
	LIBRARY_COPY,  /* platform_device_add_resources() */
	OWNER_UNNAMED, /* pdev->resource set by hand, no names */
	OWNER_NAMED,
	NR_ARRAY
};

static const char *const array_name[] = {
	"the library's copy",
	"the owner's array, unnamed",
	"the owner's array, named",
};

static struct resource owner_res[2];

static void owner_reset(bool named)
{
	owner_res[0] = (struct resource)DEFINE_RES_MEM(MEM_START, 0x1000);
	owner_res[1] = (struct resource)DEFINE_RES_IO(IO_START, 0x10);
	if (named) {
		owner_res[0].name = "owner-mem";
		owner_res[1].name = "owner-io";
	}
}

static struct platform_device *make(enum array a, const char *name, int id)
{
	struct platform_device *p = platform_device_alloc(name, id);

	if (!p)
		_exit(101);
	if (a == LIBRARY_COPY) {
		if (platform_device_add_resources(p, owner_res, 2))
			_exit(102);
	} else {
		p->resource = owner_res;
		p->num_resources = 2;
	}
	if (platform_device_add(p))
		_exit(103);
	return p;
}

static void *unregisterer(void *arg)
{
	platform_device_unregister(arg);
	return NULL;
}

static int delete_by(struct platform_device *p, enum how how)
{
	pthread_t t;
	int warns = devres_warn_count();

	switch (how) {
	case PLATFORM_UNREGISTER:
		platform_device_unregister(p);
		break;
	case PLATFORM_DEL_PUT:
		platform_device_del(p);
		platform_device_put(p);
		break;
	case DEVICE_UNREGISTER:
		device_unregister(&p->dev);
		break;
	case DEVICE_DEL_PUT:
		device_del(&p->dev);
		put_device(&p->dev);
		break;
	case LAST_PUT_REGISTERED:
		put_device(&p->dev);
		put_device(&p->dev);
		break;
	default:
		remove_ends = true;
		if (pthread_create(&t, NULL, unregisterer, p) ||
		    pthread_join(t, NULL))
			_exit(104);
		remove_ends = false;
		break;
	}
	return devres_warn_count() - warns;
}

/* The tree's lines, for a look at the names in it. */
static char *dump(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || resource_dump(&iomem_resource, f) < 0 ||
	    resource_dump(&ioport_resource, f) < 0)
		_exit(105);
	fclose(f);
	return buf;
}

/* 0 when the cell holds, else the number of its checks that failed. */
static int one_cell(enum how how, enum array a)
{
	struct platform_device *p, *q;
	struct resource *r;
	int bad = 0, warns;
	char *text;

	owner_reset(a == OWNER_NAMED);
	p = make(a, "hpd", PLATFORM_DEVID_AUTO);
	bad += !device_is_bound(&p->dev);
	warns = delete_by(p, how);
	/* The put one too many WARNs (misuse row 33), a remove's end too. */
	bad += warns !=
	       (how == LAST_PUT_REGISTERED || how == REMOVE_ENDS_THREAD);

	/* The owner's array: its own names, or none; out of the tree. */
	for (int i = 0; i < 2; i++) {
		const char *want[] = { "owner-mem", "owner-io" };

		bad += owner_res[i].parent != NULL;
		if (a == OWNER_NAMED)
			bad += owner_res[i].name != want[i];
		else if (a == OWNER_UNNAMED)
			bad += owner_res[i].name != NULL;
	}
	/* The ranges are free again. */
	r = request_mem_region(MEM_START, 0x1000, "hpd-check");
	bad += r == NULL;
	if (r)
		release_mem_region(MEM_START, 0x1000);
	r = request_region(IO_START, 0x10, "hpd-check");
	bad += r == NULL;
	if (r)
		release_region(IO_START, 0x10);

	/* The same array again, the lowest automatic id again. */
	q = make(a, "hpd-second", PLATFORM_DEVID_AUTO);
	bad += q->id != 0;
	text = dump();
	if (a == OWNER_NAMED)
		bad += !strstr(text, "owner-mem") || !strstr(text, "owner-io");
	else
		bad += count_substr(text, "hpd-second.0.auto") != 2;
	bad += strstr(text, ": hpd.0.auto") != NULL;
	free(text);
	platform_device_unregister(q);
	return bad;
}

/*
 * One cell in a child process of its own, which registers the driver: a
 * tree left pointing at freed memory fails its cell alone, and the next
 * cells start from a clean tree. The status is the number of failed
 * checks, or the signal that ended the child.
 */
static int cell_in_child(int how, int a)
{
	struct devres_ledger before, after;
	int bad;

	devres_ledger_snapshot(&before);
	if (platform_driver_register(&hpd_drv))
		return 100;
	bad = one_cell((enum how)how, (enum array)a);
	platform_driver_unregister(&hpd_drv);
	devres_ledger_snapshot(&after);
	bad += devres_ledger_diff(&before, &after, stderr) != 0;
	return bad;
}

static void every_deletion_every_array(void **state)
{
	int failed = 0;

	(void)state;
	for (int how = 0; how < NR_HOW; how++)
		for (int a = 0; a < NR_ARRAY; a++) {
			int status = run_cell_in_child(cell_in_child, how, a);

			print_message("%s, %s: %s (status %#x)\n",
				      how_name[how], array_name[a],
				      status ? "FAILED" : "ok", status);
			failed += status != 0;
		}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_deletion_every_array),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
