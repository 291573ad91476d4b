// SPDX-License-Identifier: MIT
/*
 * The fixture of the generated hostile calls (hostile-fixtures.h): every
 * argument but the one under attack is a valid one from here.
 */
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/liveobj.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/hostile-args.h"
#include "hostile/hostile-fixtures.h"

struct device hdev;
bool hdev_ready;
struct pci_fake *tree;
static max_align_t scratch[64];

static long nop(void)
{
	return 0;
}

void *arg_fn(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return (void *)nop;
}

void *arg_device(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	if (!hdev_ready && init_dev(&hdev, "hostile-dev") == 0)
		hdev_ready = true;
	return &hdev;
}

void *arg_buf(const char *func, const char *arg)
{
	(void)func;
	if (!strcmp(arg, "f") || !strcmp(arg, "stream"))
		return stderr;
	if (!strcmp(arg, "res") || !strcmp(arg, "new_res"))
		return devres_alloc_named(NULL, 16, GFP_KERNEL, "hostile");
	/* A mapping of the kind the call unmaps. */
	if (!strcmp(func, "pci_iounmap"))
		return pci_iomap(arg_pci_dev(func, "dev"), 0, 0);
	if (!strcmp(func, "pcim_iounmap"))
		return pcim_iomap(arg_pci_dev(func, "pdev"), 0, 0);
	/* A managed allocation of the device, for the calls that free one. */
	if (!strcmp(func, "devm_krealloc"))
		return devm_kmalloc(arg_device(func, arg), 64, GFP_KERNEL);
	return &scratch[8];
}

void *arg_str(const char *func, const char *arg)
{
	if (!strcmp(arg, "mode"))
		return "r";
	if (!strcmp(arg, "path"))
		return strcmp(func, "pci_sysfs_set_root")
			       ? "/dev/null"
			       : (void *)pci_fake_root(tree);
	if (!strcmp(arg, "fmt"))
		return "hostile";
	if (!strcmp(func, "pci_bus_scan_device") || !strcmp(func, "pci_fake_"
								  "remove"))
		return "0000:00:01.0";
	return "hostile";
}

long arg_int(const char *func, const char *arg)
{
	static const struct {
		const char *arg;
		long v;
	} v[] = {
		{ "size", 64 },
		{ "len", 64 },
		{ "n", 16 },
		{ "new_size", 64 },
		{ "maxlen", 0 },
		{ "allocation", 0 },
		{ "align", 8 },
		{ "boundary", 0 },
		{ "gfp", GFP_KERNEL },
		{ "flags", 0 },
		{ "irqflags", 0 },
		{ "bar", 0 },
		{ "where", 0x40 },
		{ "dir", DMA_TO_DEVICE },
		{ "order", 0 },
		{ "id", -1 },
		{ "type", IORESOURCE_MEM },
		{ "index", 0 },
		{ "level", 3 },
		{ "err", -EINVAL },
		{ "start", 0x10000 },
		{ "timeout_ms", 0 },
		{ "events", 1 },
		{ "prot", 1 },
		{ "off", 0 },
		{ "offset", 0 },
		{ "mask", 1 },
	};

	if (!strcmp(arg, "irq")) {
		static int irq;

		if (!irq)
			irq = irq_line_create("hostile");
		return irq;
	}
	if (!strcmp(arg, "fd") || !strcmp(arg, "dirfd") ||
	    !strcmp(arg, "unmask_fd"))
		return open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!strcmp(arg, "mask") && strncmp(func, "dma_", 4) == 0)
		return -1;
	/*
	 * A threaded request's NULL handler means "only wake the thread",
	 * which needs IRQF_ONESHOT: without it the NULL is a misuse (WARN).
	 */
	if ((!strcmp(arg, "flags") || !strcmp(arg, "irqflags")) &&
	    strstr(func, "threaded_irq"))
		return IRQF_ONESHOT;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(v[i].arg, arg))
			return v[i].v;
	return 1;
}

void *arg_pci_dev(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return hostile_pci_dev(tree);
}

void *arg_pci_fake(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return tree;
}

void *arg_pci_fake_dev(const char *func, const char *arg)
{
	static struct pci_fake_dev d;

	(void)func;
	(void)arg;
	d = hostile_fake_dev("0000:00:02.0");
	return &d;
}

void *arg_dma_pool(const char *func, const char *arg)
{
	static struct dma_pool *pool;

	if (!pool)
		pool = dma_pool_create("hostile", arg_device(func, arg), 64, 8,
				       0);
	return pool;
}

void *arg_resource(const char *func, const char *arg)
{
	static struct resource r;

	(void)func;
	if (!strcmp(arg, "root") || !strcmp(arg, "parent"))
		return devres_iomem_resource();
	r = (struct resource){
		.start = 0x10000,
		.end = 0x10fff,
		.name = "hostile",
		.flags = IORESOURCE_MEM,
	};
	return &r;
}

void *arg_platform_device(const char *func, const char *arg)
{
	static struct platform_device *p;

	(void)func;
	(void)arg;
	if (!p)
		p = platform_device_alloc("hostile", -1);
	return p;
}

static int thread_fn(void *a)
{
	(void)a;
	while (!devres_thread_should_stop())
		devres_thread_sleep(10);
	return 0;
}

void *arg_devres_thread(const char *func, const char *arg)
{
	return devm_thread_run(arg_device(func, arg), thread_fn, NULL,
			       "hostile");
}

static const struct bus_type hbus = { .name = "hostile" };
static struct device_driver hdrv = { .name = "hostile", .bus = &hbus };

/* Registered, so that a walk or a lookup reaches the argument under attack. */
void *arg_bus_type(const char *func, const char *arg)
{
	static bool done;

	(void)func;
	(void)arg;
	if (!done && bus_register(&hbus))
		_exit(V_FIXTURE);
	done = true;
	return (void *)&hbus;
}

void *arg_device_driver(const char *func, const char *arg)
{
	static bool done;

	if (!done) {
		arg_bus_type(func, arg);
		if (driver_register(&hdrv))
			_exit(V_FIXTURE);
		done = true;
	}
	return &hdrv;
}

void *arg_devres_dma_ops(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return (void *)devres_dma_iova_ops();
}

static enum devres_liveobj_state hostile_state(void *obj)
{
	(void)obj;
	return DEVRES_LIVEOBJ_IDLE;
}

static void hostile_fixup(void *obj, enum devres_liveobj_state st)
{
	(void)obj;
	(void)st;
}

void *arg_devres_liveobj_descr(const char *func, const char *arg)
{
	static const struct devres_liveobj_descr d = { "hostile", "nothing",
						       hostile_state,
						       hostile_fixup };

	(void)func;
	(void)arg;
	return (void *)&d;
}

void *arg_devres_ledger(const char *func, const char *arg)
{
	static struct devres_ledger l[2];

	(void)func;
	devres_ledger_snapshot(&l[0]);
	devres_ledger_snapshot(&l[1]);
	return &l[strcmp(arg, "after") == 0];
}

#define SCRATCH_ARG(kind)                                                      \
	void *arg_##kind(const char *func, const char *arg)                    \
	{                                                                      \
		(void)func;                                                    \
		(void)arg;                                                     \
		return &scratch[8];                                            \
	}
SCRATCH_ARG(devres_stats)
SCRATCH_ARG(devres_sweep_result)
SCRATCH_ARG(page)
SCRATCH_ARG(pci_device_id)
