/* SPDX-License-Identifier: MIT */
/*
 * The managed calls of test-hostile-states-*: every public managed
 * acquisition that takes a device (devm_*, dmam_*, devres_*), each with
 * the managed call that gives it back, as a table of function pointers.
 * The device is a platform device's (the devm_platform_* calls need it).
 * A call's resources come from a fixture the cell makes first, in its own
 * process (a window of device memory, an interrupt line): st_fixture_up().
 * Every exported devm_*, dmam_* and pcim_* call is here, or in
 * states-calls.exclude with the test that has it and why it is not here
 * (pcim_* calls take a PCI function): check-states-calls.sh fails on one
 * that is in neither. Define _GNU_SOURCE first.
 */
#ifndef DEVRES_TESTS_STATES_CALLS_H
#define DEVRES_TESTS_STATES_CALLS_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/revocable.h>

/* The window of device memory the calls map and claim. */
#define ST_WIN 0x5a000000UL
#define ST_WIN_SIZE 0x10000UL
/* The platform device's own memory resource: the window's first page. */
#define ST_PDEV_MEM ST_WIN
/* Where the io calls claim and map: the window's second page. */
#define ST_MEM (ST_WIN + 0x1000UL)
#define ST_PORT 0x3a0UL

/*
 * What one acquisition got, for its release. It outlives the call: a
 * resource of devm_request_resource() stays in the tree until released.
 */
struct st_slot {
	void *p;
	long v;
	dma_addr_t handle;
	struct resource res;
};

struct st_call {
	const char *name;
	/* Acquires on @dev: true when it got the resource. */
	bool (*acq)(struct device *dev, struct st_slot *s);
	/* Gives back what acq got, by the managed call (NULL: none). */
	void (*rel)(struct device *dev, struct st_slot *s);
};

static int st_line;
static int st_winfd = -1;

/* The window and the line: 0, or -1 (said on stderr). */
static inline int st_fixture_up(void)
{
	st_winfd = memfd_create("st-win", MFD_CLOEXEC);
	if (st_winfd < 0 || ftruncate(st_winfd, (off_t)ST_WIN_SIZE) ||
	    iomem_window_add(ST_WIN, ST_WIN_SIZE, st_winfd, 0, "st-win")) {
		perror("st_fixture_up: window");
		return -1;
	}
	st_line = irq_line_create("st-line");
	if (st_line <= 0) {
		fprintf(stderr, "st_fixture_up: line: %d\n", st_line);
		return -1;
	}
	return 0;
}

/* What the fixture made goes: 0, or -1 when the library kept it. */
static inline int st_fixture_down(void)
{
	int ret = 0;

	if (irq_line_destroy(st_line))
		ret = -1;
	if (iomem_window_remove(ST_WIN))
		ret = -1;
	close(st_winfd);
	return ret;
}

/*
 * A cell's end, once its devices are gone: the ledger back at @base and
 * the fixture's window and line free. 0, or 1 with each failure said by
 * @report (the cell's, which names it).
 */
static inline int st_cell_end(const struct devres_ledger *base,
			      int (*report)(const char *what))
{
	struct devres_ledger now;
	int ret = 0;

	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(base, &now, stderr))
		ret |= report("the ledger is not back at its baseline");
	if (st_fixture_down())
		ret |= report("the window or the line is still in use");
	return ret;
}

static inline struct platform_device *st_pdev(struct device *dev)
{
	return container_of(dev, struct platform_device, dev);
}

/* The core: a node of devres_alloc(), groups, actions. */

static void st_node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int st_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return res == data;
}

static void st_action(void *data)
{
	(void)data;
}

static bool st_node_acq(struct device *dev, struct st_slot *s)
{
	s->p = devres_alloc(st_node_release, 16, GFP_KERNEL);
	if (!s->p)
		return false;
	devres_add(dev, s->p);
	/* Refused: the node is still loose, and the cell's to free. */
	if (!devres_find(dev, st_node_release, st_match, s->p)) {
		devres_free(s->p);
		return false;
	}
	return true;
}

static void st_node_release_call(struct device *dev, struct st_slot *s)
{
	(void)devres_release(dev, st_node_release, st_match, s->p);
}

static void st_node_destroy(struct device *dev, struct st_slot *s)
{
	(void)devres_destroy(dev, st_node_release, st_match, s->p);
}

static void st_node_remove(struct device *dev, struct st_slot *s)
{
	void *p = devres_remove(dev, st_node_release, st_match, s->p);

	if (p)
		devres_free(p);
}

static bool st_get_acq(struct device *dev, struct st_slot *s)
{
	void *n = devres_alloc(st_node_release, 16, GFP_KERNEL);

	if (!n)
		return false;
	s->p = devres_get(dev, n, NULL, NULL);
	if (!s->p) {
		/* Refused: devres_get() frees nothing it did not take. */
		devres_free(n);
		return false;
	}
	return true;
}

static bool st_group_acq(struct device *dev, struct st_slot *s)
{
	s->p = devres_open_group(dev, NULL, GFP_KERNEL);
	if (!s->p)
		return false;
	devres_close_group(dev, s->p);
	return true;
}

static void st_group_remove(struct device *dev, struct st_slot *s)
{
	devres_remove_group(dev, s->p);
}

static void st_group_release(struct device *dev, struct st_slot *s)
{
	(void)devres_release_group(dev, s->p);
}

static bool st_action_acq(struct device *dev, struct st_slot *s)
{
	s->p = &s->v;
	return devm_add_action(dev, st_action, s->p) == 0;
}

static bool st_action_reset_acq(struct device *dev, struct st_slot *s)
{
	s->p = &s->v;
	return devm_add_action_or_reset(dev, st_action, s->p) == 0;
}

static void st_action_remove(struct device *dev, struct st_slot *s)
{
	devm_remove_action(dev, st_action, s->p);
}

static void st_action_release(struct device *dev, struct st_slot *s)
{
	devm_release_action(dev, st_action, s->p);
}

/* Managed memory. */

static bool st_kmalloc(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_kmalloc(dev, 48, GFP_KERNEL)) != NULL;
}

static bool st_kzalloc(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_kzalloc(dev, 48, GFP_KERNEL)) != NULL;
}

static bool st_kmalloc_array(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_kmalloc_array(dev, 4, 12, GFP_KERNEL)) != NULL;
}

static bool st_kcalloc(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_kcalloc(dev, 4, 12, GFP_KERNEL)) != NULL;
}

static bool st_krealloc(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_krealloc(dev, NULL, 48, GFP_KERNEL)) != NULL;
}

static bool st_krealloc_grow(struct device *dev, struct st_slot *s)
{
	void *p = devm_kmalloc(dev, 16, GFP_KERNEL);

	if (!p)
		return false;
	s->p = devm_krealloc(dev, p, 4096, GFP_KERNEL);
	if (!s->p) {
		devm_kfree(dev, p);
		return false;
	}
	return true;
}

static bool st_kstrdup(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_kstrdup(dev, "states", GFP_KERNEL)) != NULL;
}

static bool st_kstrdup_const(struct device *dev, struct st_slot *s)
{
	char buf[] = "not const";

	return (s->p = (void *)devm_kstrdup_const(dev, buf, GFP_KERNEL)) !=
	       NULL;
}

static bool st_kmemdup(struct device *dev, struct st_slot *s)
{
	static const char src[24] = "states";

	return (s->p = devm_kmemdup(dev, src, sizeof(src), GFP_KERNEL)) != NULL;
}

static bool st_kasprintf(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_kasprintf(dev, GFP_KERNEL, "st-%d", 7)) != NULL;
}

static char *st_vasprintf(struct device *dev, const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = devm_kvasprintf(dev, GFP_KERNEL, fmt, ap);
	va_end(ap);
	return p;
}

static bool st_kvasprintf(struct device *dev, struct st_slot *s)
{
	return (s->p = st_vasprintf(dev, "st-%d", 8)) != NULL;
}

static void st_kfree(struct device *dev, struct st_slot *s)
{
	devm_kfree(dev, s->p);
}

static bool st_pages(struct device *dev, struct st_slot *s)
{
	s->v = (long)devm_get_free_pages(dev, GFP_KERNEL, 1);
	return s->v != 0;
}

static void st_free_pages(struct device *dev, struct st_slot *s)
{
	devm_free_pages(dev, (unsigned long)s->v);
}

/* I/O: regions, resources, mappings. */

static bool st_ioremap(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_ioremap(dev, ST_MEM, 0x1000)) != NULL;
}

static bool st_ioremap_wc(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_ioremap_wc(dev, ST_MEM, 0x1000)) != NULL;
}

static void st_res_mem(struct st_slot *s)
{
	memset(&s->res, 0, sizeof(s->res));
	s->res.start = ST_MEM;
	s->res.end = ST_MEM + 0xfff;
	s->res.flags = IORESOURCE_MEM;
	s->res.name = "st-mem";
}

static bool st_ioremap_resource(struct device *dev, struct st_slot *s)
{
	st_res_mem(s);
	s->p = devm_ioremap_resource(dev, &s->res);
	return !IS_ERR(s->p);
}

static bool st_ioremap_resource_wc(struct device *dev, struct st_slot *s)
{
	st_res_mem(s);
	s->p = devm_ioremap_resource_wc(dev, &s->res);
	return !IS_ERR(s->p);
}

static bool st_platform_ioremap(struct device *dev, struct st_slot *s)
{
	s->p = devm_platform_ioremap_resource(st_pdev(dev), 0);
	return !IS_ERR(s->p);
}

static bool st_platform_get_ioremap(struct device *dev, struct st_slot *s)
{
	struct resource *r = NULL;

	s->p = devm_platform_get_and_ioremap_resource(st_pdev(dev), 0, &r);
	return !IS_ERR(s->p);
}

static void st_iounmap(struct device *dev, struct st_slot *s)
{
	devm_iounmap(dev, s->p);
}

static bool st_mem_region(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_request_mem_region(dev, ST_MEM, 0x1000, "st")) !=
	       NULL;
}

static void st_release_mem_region(struct device *dev, struct st_slot *s)
{
	(void)s;
	devm_release_mem_region(dev, ST_MEM, 0x1000);
}

static bool st_region(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_request_region(dev, ST_PORT, 8, "st")) != NULL;
}

static void st_release_region(struct device *dev, struct st_slot *s)
{
	(void)s;
	devm_release_region(dev, ST_PORT, 8);
}

static bool st_resource(struct device *dev, struct st_slot *s)
{
	memset(&s->res, 0, sizeof(s->res));
	s->res.start = ST_PORT + 0x10;
	s->res.end = ST_PORT + 0x17;
	s->res.flags = IORESOURCE_IO;
	s->res.name = "st-res";
	return devm_request_resource(dev, &ioport_resource, &s->res) == 0;
}

static void st_release_resource(struct device *dev, struct st_slot *s)
{
	devm_release_resource(dev, &s->res);
}

/* Interrupts. */

static irqreturn_t st_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static irqreturn_t st_wake(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

static bool st_irq(struct device *dev, struct st_slot *s)
{
	s->p = &s->v;
	return devm_request_irq(dev, (unsigned int)st_line, st_handler, 0, "st",
				s->p) == 0;
}

static bool st_threaded_irq(struct device *dev, struct st_slot *s)
{
	s->p = &s->v;
	return devm_request_threaded_irq(dev, (unsigned int)st_line, st_wake,
					 st_handler, IRQF_ONESHOT, "st",
					 s->p) == 0;
}

static bool st_any_context_irq(struct device *dev, struct st_slot *s)
{
	s->p = &s->v;
	return devm_request_any_context_irq(dev, (unsigned int)st_line,
					    st_handler, 0, "st", s->p) >= 0;
}

static void st_free_irq(struct device *dev, struct st_slot *s)
{
	devm_free_irq(dev, (unsigned int)st_line, s->p);
}

/* DMA. */

static bool st_coherent(struct device *dev, struct st_slot *s)
{
	s->p = dmam_alloc_coherent(dev, 4096, &s->handle, GFP_KERNEL);
	return s->p != NULL;
}

static void st_free_coherent(struct device *dev, struct st_slot *s)
{
	dmam_free_coherent(dev, 4096, s->p, s->handle);
}

static bool st_pool(struct device *dev, struct st_slot *s)
{
	return (s->p = dmam_pool_create("st", dev, 64, 8, 0)) != NULL;
}

static void st_pool_destroy(struct device *dev, struct st_slot *s)
{
	(void)dev;
	dmam_pool_destroy(s->p);
}

/* POSIX: descriptors, streams, mappings, threads; a revocable. */

static bool st_open(struct device *dev, struct st_slot *s)
{
	return (s->v = devm_open(dev, "/dev/null", O_RDONLY)) >= 0;
}

static bool st_openat(struct device *dev, struct st_slot *s)
{
	return (s->v = devm_openat(dev, AT_FDCWD, "/dev/null", O_RDONLY)) >= 0;
}

static bool st_add_fd(struct device *dev, struct st_slot *s)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	s->v = fd;
	if (devm_add_fd(dev, fd)) {
		/* Refused: the descriptor is still the caller's. */
		close(fd);
		return false;
	}
	return true;
}

static bool st_memfd(struct device *dev, struct st_slot *s)
{
	return (s->v = devm_memfd_create(dev, "st", 0)) >= 0;
}

static bool st_eventfd(struct device *dev, struct st_slot *s)
{
	return (s->v = devm_eventfd(dev, 0, 0)) >= 0;
}

static bool st_timerfd(struct device *dev, struct st_slot *s)
{
	return (s->v = devm_timerfd_create(dev, CLOCK_MONOTONIC, 0)) >= 0;
}

static void st_close(struct device *dev, struct st_slot *s)
{
	devm_close(dev, (int)s->v);
}

static bool st_fopen(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_fopen(dev, "/dev/null", "r")) != NULL;
}

static void st_fclose(struct device *dev, struct st_slot *s)
{
	(void)devm_fclose(dev, s->p);
}

static bool st_mmap(struct device *dev, struct st_slot *s)
{
	s->p = devm_mmap(dev, NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return !IS_ERR(s->p);
}

static void st_munmap(struct device *dev, struct st_slot *s)
{
	devm_munmap(dev, s->p, 8192);
}

static int st_thread_fn(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 0;
}

static bool st_thread(struct device *dev, struct st_slot *s)
{
	s->p = devm_thread_run(dev, st_thread_fn, NULL, "st");
	return !IS_ERR_OR_NULL(s->p);
}

static void st_thread_stop(struct device *dev, struct st_slot *s)
{
	(void)devm_thread_stop(dev, s->p);
}

static bool st_revocable(struct device *dev, struct st_slot *s)
{
	return (s->p = devm_revocable_create(dev, &s->v, NULL)) != NULL;
}

/* clang-format off */
static const struct st_call st_calls[] = {
	{ "devres_add",			st_node_acq,	NULL },
	{ "devres_add+devres_release",	st_node_acq,	st_node_release_call },
	{ "devres_add+devres_destroy",	st_node_acq,	st_node_destroy },
	{ "devres_add+devres_remove",	st_node_acq,	st_node_remove },
	{ "devres_get",			st_get_acq,	NULL },
	{ "devres_get+devres_release",	st_get_acq,	st_node_release_call },
	{ "devres_open_group",		st_group_acq,	NULL },
	{ "devres_open_group+devres_remove_group", st_group_acq, st_group_remove },
	{ "devres_open_group+devres_release_group", st_group_acq, st_group_release },
	{ "devm_add_action",		st_action_acq,	NULL },
	{ "devm_add_action+devm_remove_action", st_action_acq, st_action_remove },
	{ "devm_add_action+devm_release_action", st_action_acq, st_action_release },
	{ "devm_add_action_or_reset",	st_action_reset_acq, NULL },
	{ "devm_kmalloc",		st_kmalloc,	NULL },
	{ "devm_kmalloc+devm_kfree",	st_kmalloc,	st_kfree },
	{ "devm_kzalloc+devm_kfree",	st_kzalloc,	st_kfree },
	{ "devm_kmalloc_array+devm_kfree", st_kmalloc_array, st_kfree },
	{ "devm_kcalloc",		st_kcalloc,	NULL },
	{ "devm_krealloc(NULL)+devm_kfree", st_krealloc, st_kfree },
	{ "devm_krealloc(grow)",	st_krealloc_grow, NULL },
	{ "devm_krealloc(grow)+devm_kfree", st_krealloc_grow, st_kfree },
	{ "devm_kstrdup+devm_kfree",	st_kstrdup,	st_kfree },
	{ "devm_kstrdup_const",		st_kstrdup_const, NULL },
	{ "devm_kmemdup+devm_kfree",	st_kmemdup,	st_kfree },
	{ "devm_kasprintf",		st_kasprintf,	NULL },
	{ "devm_kvasprintf+devm_kfree",	st_kvasprintf,	st_kfree },
	{ "devm_get_free_pages",	st_pages,	NULL },
	{ "devm_get_free_pages+devm_free_pages", st_pages, st_free_pages },
	{ "devm_ioremap",		st_ioremap,	NULL },
	{ "devm_ioremap+devm_iounmap",	st_ioremap,	st_iounmap },
	{ "devm_ioremap_wc+devm_iounmap", st_ioremap_wc, st_iounmap },
	{ "devm_ioremap_resource",	st_ioremap_resource, NULL },
	{ "devm_ioremap_resource+devm_iounmap", st_ioremap_resource, st_iounmap },
	{ "devm_ioremap_resource_wc",	st_ioremap_resource_wc, NULL },
	{ "devm_platform_ioremap_resource", st_platform_ioremap, NULL },
	{ "devm_platform_ioremap_resource+devm_iounmap", st_platform_ioremap, st_iounmap },
	{ "devm_platform_get_and_ioremap_resource", st_platform_get_ioremap, NULL },
	{ "devm_request_mem_region",	st_mem_region,	NULL },
	{ "devm_request_mem_region+devm_release_mem_region", st_mem_region, st_release_mem_region },
	{ "devm_request_region",	st_region,	NULL },
	{ "devm_request_region+devm_release_region", st_region, st_release_region },
	{ "devm_request_resource",	st_resource,	NULL },
	{ "devm_request_resource+devm_release_resource", st_resource, st_release_resource },
	{ "devm_request_irq",		st_irq,		NULL },
	{ "devm_request_irq+devm_free_irq", st_irq,	st_free_irq },
	{ "devm_request_threaded_irq",	st_threaded_irq, NULL },
	{ "devm_request_threaded_irq+devm_free_irq", st_threaded_irq, st_free_irq },
	{ "devm_request_any_context_irq+devm_free_irq", st_any_context_irq, st_free_irq },
	{ "dmam_alloc_coherent",	st_coherent,	NULL },
	{ "dmam_alloc_coherent+dmam_free_coherent", st_coherent, st_free_coherent },
	{ "dmam_pool_create",		st_pool,	NULL },
	{ "dmam_pool_create+dmam_pool_destroy", st_pool, st_pool_destroy },
	{ "devm_open",			st_open,	NULL },
	{ "devm_open+devm_close",	st_open,	st_close },
	{ "devm_openat+devm_close",	st_openat,	st_close },
	{ "devm_add_fd",		st_add_fd,	NULL },
	{ "devm_add_fd+devm_close",	st_add_fd,	st_close },
	{ "devm_memfd_create+devm_close", st_memfd,	st_close },
	{ "devm_eventfd",		st_eventfd,	NULL },
	{ "devm_eventfd+devm_close",	st_eventfd,	st_close },
	{ "devm_timerfd_create+devm_close", st_timerfd, st_close },
	{ "devm_fopen",			st_fopen,	NULL },
	{ "devm_fopen+devm_fclose",	st_fopen,	st_fclose },
	{ "devm_mmap",			st_mmap,	NULL },
	{ "devm_mmap+devm_munmap",	st_mmap,	st_munmap },
	{ "devm_thread_run",		st_thread,	NULL },
	{ "devm_thread_run+devm_thread_stop", st_thread, st_thread_stop },
	{ "devm_revocable_create",	st_revocable,	NULL },
};
/* clang-format on */

#define ST_NCALLS ((int)(sizeof(st_calls) / sizeof(st_calls[0])))

#endif /* DEVRES_TESTS_STATES_CALLS_H */
