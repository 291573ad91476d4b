// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * A log sink that calls back into the library while it is given a line.
 * Every plain release of a managed resource (iounmap() of a devm_ioremap()
 * mapping, free_irq() of a devm_request_irq() handler...) takes the node
 * off the device under the subsystem's lock, and that logs; a sink that
 * then calls the same subsystem would wait for the lock its own thread
 * holds. Each subsystem's case runs in a child with an alarm: a deadlock
 * is the child's death by SIGALRM. And a WARN the sink's own calls make is
 * counted, though it is not sent to the sink again.
 *
 * The managed BAR calls hold the device's lock of them across the whole
 * call: a sink given the first ADD line of pcim_iomap_regions() starts
 * another thread's pcim_iomap() on the device and waits for it (3 s at
 * most, a timeout being the child's exit 6).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include "testlib.h"

#define WIN 0x40000000ull
#define WIN_SIZE 0x10000

/* What the sink does on each line, and how often it did it. */
static void (*reenter)(void);
static int reentered, warn_lines;
static const char *sink_line;

static void calling_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0)
		warn_lines++;
	if (reenter) {
		sink_line = line;
		reenter();
		reentered++;
	}
}

static struct device *dev;
static int irq;
static struct pci_dev *pdev;

static void io_again(void)
{
	void *p = ioremap(WIN + 0x2000, 0x1000);

	if (p)
		iounmap(p);
}

static void io_case(void)
{
	void *p = devm_ioremap(dev, WIN, 0x1000);

	if (!p)
		_exit(3);
	reenter = io_again;
	iounmap(p);
}

static void region_again(void)
{
	if (request_region(0x300, 8, "again"))
		release_region(0x300, 8);
}

static void region_case(void)
{
	if (!devm_request_region(dev, 0x200, 8, "managed"))
		_exit(3);
	reenter = region_again;
	release_region(0x200, 8);
}

static struct resource r1 = DEFINE_RES_MEM(0x50000000, 0x1000);
static struct resource r2 = DEFINE_RES_MEM(0x50002000, 0x1000);

static void resource_again(void)
{
	if (devm_request_resource(dev, devres_iomem_resource(), &r2) == 0)
		devm_release_resource(dev, &r2);
}

static void resource_case(void)
{
	if (devm_request_resource(dev, devres_iomem_resource(), &r1))
		_exit(3);
	reenter = resource_again;
	release_resource(&r1);
}

static irqreturn_t handler(int n, void *dev_id)
{
	(void)n;
	(void)dev_id;
	return IRQ_HANDLED;
}

static int cookie_a, cookie_b;

static void irq_again(void)
{
	if (request_irq((unsigned int)irq, handler, IRQF_SHARED, "again",
			&cookie_b) == 0)
		free_irq((unsigned int)irq, &cookie_b);
}

static void irq_case(void)
{
	if (devm_request_irq(dev, (unsigned int)irq, handler, IRQF_SHARED,
			     "managed", &cookie_a))
		_exit(3);
	reenter = irq_again;
	free_irq((unsigned int)irq, &cookie_a);
}

static void coherent_again(void)
{
	dma_addr_t h;
	void *p = dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL);

	if (p)
		dma_free_coherent(dev, 4096, p, h);
}

static void coherent_case(void)
{
	dma_addr_t h;
	void *p = dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL);

	if (!p)
		_exit(3);
	reenter = coherent_again;
	dma_free_coherent(dev, 4096, p, h);
}

static void pool_again(void)
{
	struct dma_pool *p = dma_pool_create("again", dev, 64, 8, 0);

	dma_pool_destroy(p);
}

static void pool_case(void)
{
	struct dma_pool *p = dmam_pool_create("managed", dev, 64, 8, 0);

	if (!p)
		_exit(3);
	reenter = pool_again;
	dma_pool_destroy(p);
}

static void bar_again(void)
{
	void *p = pci_iomap(pdev, 1, 0);

	if (p)
		pci_iounmap(pdev, p);
}

static void bar_case(void)
{
	void *p = pcim_iomap(pdev, 0, 0);

	if (!p)
		_exit(3);
	reenter = bar_again;
	pci_iounmap(pdev, p);
}

static void *bar_other(void *arg)
{
	(void)arg;
	return pcim_iomap(pdev, 1, 0);
}

/* At the first ADD line: another thread's pcim_iomap(), waited for. */
static void bars_wait(void)
{
	struct timespec t;
	pthread_t th;
	void *p = NULL;

	if (!strstr(sink_line, " ADD "))
		return;
	reenter = NULL;
	if (pthread_create(&th, NULL, bar_other, NULL))
		_exit(3);
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 3;
	if (pthread_timedjoin_np(th, &p, &t))
		_exit(6);
	if (!p)
		_exit(3);
}

static void bars_case(void)
{
	void *p;

	reenter = bars_wait;
	if (pcim_iomap_regions(pdev, 1, "sink"))
		_exit(3);
	p = pcim_iomap_table(pdev)[0];
	if (!p || !pcim_iomap_table(pdev)[1])
		_exit(3);
	pci_iounmap(pdev, p);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
	{ "io", io_case },
	{ "region", region_case },
	{ "resource", resource_case },
	{ "irq", irq_case },
	{ "coherent", coherent_case },
	{ "pool", pool_case },
	{ "bar", bar_case },
	{ "bars-thread", bars_case },
};

/* The child: the fixture, the case under an alarm, then its verdict. */
static int child(void (*run)(void), struct pci_fake *tree)
{
	static struct device d;
	int fd, w0;

	signal(SIGALRM, SIG_DFL);
	alarm(10);
	if (init_dev(&d, "sink-dev"))
		return 2;
	dev = &d;
	fd = memfd_create("sink-win", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, WIN_SIZE) ||
	    iomem_window_add(WIN, WIN_SIZE, fd, 0, "sink-win"))
		return 2;
	close(fd);
	irq = irq_line_create("sink");
	if (irq <= 0 || pci_sysfs_set_root(pci_fake_root(tree)) ||
	    pci_bus_scan() != 1)
		return 2;
	pdev = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	if (!pdev)
		return 2;
	devres_set_log(true);
	devres_set_log_sink(calling_sink, NULL);
	w0 = devres_warn_count();
	run();
	reenter = NULL;
	devres_set_log_sink(NULL, NULL);
	/* One misuse, one WARN, and the sink did call back. */
	if (devres_warn_count() - w0 != 1 || warn_lines != 1)
		return 4;
	return reentered ? 0 : 5;
}

static void test_sink_calls_back_under_plain_release(void **state)
{
	struct pci_fake_dev d = {
		.name = "0000:00:03.0",
		.vendor = 0x1af4,
		.device = 0x1041,
		.class = 0x020000,
	};
	struct pci_fake *tree = pci_fake_create();
	int failed = 0;

	(void)state;
	assert_non_null(tree);
	for (int i = 0; i < 2; i++) {
		d.bar_size[i] = 4096;
		d.bar_flags[i] = IORESOURCE_MEM;
	}
	assert_int_equal(pci_fake_add(tree, &d), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status;
		pid_t pid;

		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child(cases[i].run, tree));
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		failed++;
		if (WIFSIGNALED(status))
			fprintf(stderr, "FAIL %s: %s\n", cases[i].name,
				WTERMSIG(status) == SIGALRM
					? "deadlock (no return in 10 s)"
					: strsignal(WTERMSIG(status)));
		else
			fprintf(stderr, "FAIL %s: exit %d\n", cases[i].name,
				WEXITSTATUS(status));
	}
	pci_fake_destroy(tree);
	assert_int_equal(failed, 0);
}

/* A WARN made by the sink's own call is counted, not sent to the sink. */
static int bogus;

static void warns_again(void)
{
	static bool done;

	if (!done)
		devm_kfree(&tdev, &bogus);
	done = true;
}

static void test_warn_in_sink_is_counted(void **state)
{
	int w0 = devres_warn_count();

	(void)state;
	warn_lines = 0;
	reentered = 0;
	reenter = warns_again;
	devres_set_log_sink(calling_sink, NULL);
	devm_kfree(&tdev, &bogus);
	devres_set_log_sink(NULL, NULL);
	reenter = NULL;
	assert_int_equal(warn_lines, 1);
	assert_true(reentered >= 1);
	assert_int_equal(devres_warn_count() - w0, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sink_calls_back_under_plain_release),
		cmocka_unit_test_setup_teardown(test_warn_in_sink_is_counted,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
