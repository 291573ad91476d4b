// SPDX-License-Identifier: MIT
/* ctest-labels: fault tsan */
/*
 * A probe sweep of a driver that gives back one of its managed resources
 * before it is done: in its probe, which then goes on acquiring (and
 * fails at each of those later points in turn), or in its remove. Given
 * back with the managed release (devm_free_irq(), devm_iounmap() ...),
 * the sweep is clean. Given back with the plain, unmanaged call (a
 * free_irq() of a devm_request_irq() handler: a bug real drivers have
 * shipped), the sweep fails on the WARNs, each of which names the call to
 * use; and the resource is given back once, never again by the device's
 * release: no leak, no double release (ASan), in every run.
 *
 * Resources x {in probe, in remove} x {managed, plain}: each cell in a
 * child under an alarm.
 * Labelled out of make memcheck (not "unit"): each cell a child under
 * valgrind took a minute in all; ASan runs it.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define WIN 0xe1000000ull
#define WIN_SIZE 0x4000u
#define PARENT 0xd1000000ull

static int irq;
static struct resource parent, child;

/* What the probe acquired, for its release by hand. */
struct held {
	void *p;
	struct dma_pool *pool;
	dma_addr_t h;
	int fd;
};

static struct held H;

static irqreturn_t handler(int n, void *id)
{
	(void)n;
	(void)id;
	return IRQ_HANDLED;
}

struct kind {
	const char *name;
	const char *hint; /* what the plain call's WARN tells to use */
	int (*get)(struct device *dev);
	void (*put)(struct device *dev, bool managed);
};

static int irq_get(struct device *dev)
{
	return devm_request_irq(dev, (unsigned int)irq, handler, 0, "hand",
				dev);
}

static void irq_put(struct device *dev, bool managed)
{
	if (managed)
		devm_free_irq(dev, (unsigned int)irq, dev);
	else
		(void)free_irq((unsigned int)irq, dev);
}

static int thr_irq_get(struct device *dev)
{
	return devm_request_threaded_irq(dev, (unsigned int)irq, handler,
					 handler, 0, "hand", dev);
}

static int ioremap_get(struct device *dev)
{
	H.p = devm_ioremap(dev, WIN + 0x1000, 0x100);
	return H.p ? 0 : -ENOMEM;
}

static void ioremap_put(struct device *dev, bool managed)
{
	if (managed)
		devm_iounmap(dev, H.p);
	else
		iounmap(H.p);
}

static int mem_region_get(struct device *dev)
{
	return devm_request_mem_region(dev, WIN + 0x100, 0x100, "hand")
		       ? 0
		       : -EBUSY;
}

static void mem_region_put(struct device *dev, bool managed)
{
	if (managed)
		devm_release_mem_region(dev, WIN + 0x100, 0x100);
	else
		release_mem_region(WIN + 0x100, 0x100);
}

static int region_get(struct device *dev)
{
	return devm_request_region(dev, 0x740, 0x8, "hand") ? 0 : -EBUSY;
}

static void region_put(struct device *dev, bool managed)
{
	if (managed)
		devm_release_region(dev, 0x740, 0x8);
	else
		release_region(0x740, 0x8);
}

static int res_get(struct device *dev)
{
	memset(&child, 0, sizeof(child));
	child.start = PARENT + 0x40;
	child.end = PARENT + 0x7f;
	child.name = "hand";
	child.flags = IORESOURCE_MEM;
	return devm_request_resource(dev, &parent, &child);
}

static void res_put(struct device *dev, bool managed)
{
	if (managed)
		devm_release_resource(dev, &child);
	else
		(void)release_resource(&child);
}

static int coherent_get(struct device *dev)
{
	H.p = dmam_alloc_coherent(dev, 4096, &H.h, GFP_KERNEL);
	return H.p ? 0 : -ENOMEM;
}

static void coherent_put(struct device *dev, bool managed)
{
	if (managed)
		dmam_free_coherent(dev, 4096, H.p, H.h);
	else
		dma_free_coherent(dev, 4096, H.p, H.h);
}

static int pool_get(struct device *dev)
{
	H.pool = dmam_pool_create("hand", dev, 64, 0, 0);
	return H.pool ? 0 : -ENOMEM;
}

static void pool_put(struct device *dev, bool managed)
{
	(void)dev;
	if (managed)
		dmam_pool_destroy(H.pool);
	else
		dma_pool_destroy(H.pool);
}

static int fd_get(struct device *dev)
{
	H.fd = devm_open(dev, "/dev/null", O_RDONLY);
	return H.fd < 0 ? H.fd : 0;
}

static void fd_put(struct device *dev, bool managed)
{
	if (managed)
		devm_close(dev, H.fd);
	else
		close(H.fd);
}

static int mmap_get(struct device *dev)
{
	H.p = devm_mmap(dev, NULL, 8192, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return IS_ERR(H.p) ? (int)PTR_ERR(H.p) : 0;
}

static void mmap_put(struct device *dev, bool managed)
{
	if (managed)
		devm_munmap(dev, H.p, 8192);
	else
		munmap(H.p, 8192);
}

static const struct kind kinds[] = {
	{ "devm_request_irq", "use devm_free_irq()", irq_get, irq_put },
	{ "devm_request_threaded_irq", "use devm_free_irq()", thr_irq_get,
	  irq_put },
	{ "devm_ioremap", "use devm_iounmap()", ioremap_get, ioremap_put },
	{ "devm_request_mem_region", "use devm_release_mem_region()",
	  mem_region_get, mem_region_put },
	{ "devm_request_region", "use devm_release_region()", region_get,
	  region_put },
	{ "devm_request_resource", "use devm_release_resource()", res_get,
	  res_put },
	{ "dmam_alloc_coherent", "use dmam_free_coherent()", coherent_get,
	  coherent_put },
	{ "dmam_pool_create", "use dmam_pool_destroy()", pool_get, pool_put },
	{ "devm_open", "use devm_close()", fd_get, fd_put },
	{ "devm_mmap", "use devm_munmap()", mmap_get, mmap_put },
};

#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

static const char *const cols[] = {
	"probe, managed",
	"probe, plain",
	"remove, managed",
	"remove, plain",
};

static const struct kind *K;
static int col_at;

/* Acquisitions after the release: the later failure points. */
static int rest(struct device *dev)
{
	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	if (!devm_ioremap(dev, WIN + 0x2000, 0x100))
		return -ENOMEM;
	if (devm_add_action(dev, free, NULL))
		return -ENOMEM;
	return 0;
}

static int hand_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	int ret = K->get(dev);

	if (ret)
		return ret;
	if (col_at < 2)
		K->put(dev, col_at == 0);
	return rest(dev);
}

static void hand_remove(struct platform_device *pdev)
{
	if (col_at >= 2)
		K->put(&pdev->dev, col_at == 2);
}

static struct platform_driver hand_driver = {
	.probe = hand_probe,
	.remove = hand_remove,
	.driver = { .name = "sweep-hand" },
};

static int setup(struct platform_device **ret_pdev)
{
	struct platform_device *pdev;
	int fd = memfd_create("hand", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, WIN_SIZE))
		return -1;
	if (iomem_window_add(WIN, WIN_SIZE, fd, 0, "hand"))
		return -1;
	close(fd);
	parent = (struct resource)DEFINE_RES_MEM_NAMED(PARENT, 0x1000, "p");
	if (request_resource(&iomem_resource, &parent))
		return -1;
	irq = irq_line_create("hand");
	if (irq <= 0)
		return -1;
	pdev = platform_device_register_simple("sweep-hand", 0, NULL, 0);
	if (IS_ERR(pdev))
		return -1;
	*ret_pdev = pdev;
	return 0;
}

/* Each WARN is the plain call's, naming the call to use. */
static int warns_name_the_hint(int *ret_n)
{
	int i, n = 0;

	for (i = 0; i < cap.n && i < CAP_LINES; i++) {
		if (strncmp(cap.line[i], "WARNING: sweep-hand.0: ", 23) != 0)
			continue;
		n++;
		if (!strstr(cap.line[i], K->hint)) {
			fprintf(stderr, "%s: WARN without \"%s\": %s\n",
				K->name, K->hint, cap.line[i]);
			return -1;
		}
	}
	*ret_n = n;
	return 0;
}

static int cell(int row, int col)
{
	struct devres_sweep_result r = { 0 };
	struct platform_device *pdev = NULL;
	struct devres_ledger b, a;
	bool plain = col == 1 || col == 3;
	int ret, warns, lines = 0;

	alarm(20);
	if (setup(&pdev))
		return 10;
	K = &kinds[row];
	col_at = col;
	devres_sweep_set_strict(true);
	devres_ledger_snapshot(&b);
	warns = devres_warn_count();
	start_capture();
	ret = driver_probe_sweep(&hand_driver.driver, &pdev->dev, &r);
	devres_set_log_sink(NULL, NULL);
	warns = devres_warn_count() - warns;
	devres_ledger_snapshot(&a);
	if (devres_ledger_diff(&b, &a, stderr) || r.leaks) {
		fprintf(stderr, "%s/%s: leak\n", K->name, cols[col]);
		return 1;
	}
	if (warns_name_the_hint(&lines))
		return 2;
	if (!plain) {
		if (ret || r.warns || warns || r.findings) {
			fprintf(stderr, "%s/%s: sweep %d, %u warns\n", K->name,
				cols[col], ret, r.warns);
			return 3;
		}
		return 0;
	}
	/*
	 * One WARN per run that reached the plain call: every run whose
	 * probe got past the acquisition in probe, the successful one's
	 * remove in remove. The sweep fails on them.
	 */
	if (warns < 1 || lines != warns || (unsigned int)warns != r.warns ||
	    ret != (int)r.warns) {
		fprintf(stderr,
			"%s/%s: sweep %d, %u runs with WARNs, %d WARNs, "
			"%d lines\n",
			K->name, cols[col], ret, r.warns, warns, lines);
		return 4;
	}
	if (col == 3 && warns != 1)
		return 5;
	/* The runs failed after the release WARN too, and leak nothing. */
	if (col == 1 && warns < 2)
		return 6;
	return 0;
}

static void hand_release(void **state)
{
	const char *rows[NKINDS];
	int i;

	(void)state;
	for (i = 0; i < NKINDS; i++)
		rows[i] = kinds[i].name;
	run_cells_in_children_wide(cell, rows, NKINDS, cols, 4, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hand_release),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
