// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile timeout=900 */
/*
 * Every exported function, each of its scalar arguments in turn (a size, a
 * count, an offset, flags, a line or fd number, an address given by value)
 * replaced by a hostile value: 0, a value that is not a power of two,
 * INT_MAX, 2^31, UINT_MAX, unknown flag bits, SIZE_MAX / 2 + 1 and
 * SIZE_MAX, every other argument valid. The calls come from the public
 * headers (gen-scalars.py), so a new function is attacked the day it is
 * declared; each runs in a child of its own under an alarm.
 *
 * What every cell must show: no crash, no sanitizer report, no hang, no
 * thread left neither joined nor detached (thread-watch.h: the leak
 * ThreadSanitizer would report; the test is not in the TSan build, where
 * it was 7 s of CPU, and its cells start no thread of their own); at
 * most one WARN, each one counted; the device's list whole afterwards (its
 * release gives back everything the call recorded, a second release finds
 * nothing). Besides, a size or count of 2^63 or more is never granted (no
 * memory, mapping or region of that size exists), nor an alignment that is
 * not a power of two.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/liveobj.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include <devres/uio.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "hostile/hostile-args.h"
#include "hostile/hostile-fixtures.h"

struct scalar_case {
	const char *func;
	const char *arg;
	const char *type;
	int (*call)(uint64_t v);
};

static const struct {
	uint64_t v;
	const char *name;
} bad[] = {
	{ 0, "0" },
	{ 3, "3" },
	{ INT_MAX, "INT_MAX" },
	{ 0x80000000u, "2^31" },
	{ 0xffff0000u, "unknown bits 0xffff0000" },
	{ UINT_MAX, "UINT_MAX" },
	{ SIZE_MAX / 2 + 1, "SIZE_MAX / 2 + 1" },
	{ SIZE_MAX, "SIZE_MAX" },
};
#define NBAD (sizeof(bad) / sizeof(bad[0]))

/*
 * Cells left out, and why: a wait as long as asked is the contract, and
 * fds 0-2 closed or taken over change nothing the test can judge.
 */
static bool left_out(const char *func, const char *arg, uint64_t v)
{
	if (!strcmp(arg, "ms") || !strcmp(arg, "timeout_ms"))
		return v > 1000;
	/* The caller's buffer's size: any size it has is valid. */
	if (!strcmp(func, "pci_fake_path"))
		return true;
	/*
	 * Reading past the caller's source (one resource, 64 bytes) is the
	 * caller's to keep from.
	 */
	if (!strcmp(func, "devm_kmemdup") && !strcmp(arg, "len"))
		return v > 64 && v <= SIZE_MAX / 2;
	if (!strcmp(arg, "num") && strstr(func, "platform_device_"))
		return v > 1;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	/*
	 * Granted gigabytes: a sanitizer clears or maps the shadow of every
	 * byte, tens of seconds a cell and a minute and more under load (the
	 * dev build runs these cells).
	 */
	if (v >= INT_MAX && v <= SIZE_MAX / 2 &&
	    (!strcmp(arg, "size") || !strcmp(arg, "new_size")) &&
	    (strstr(func, "kmalloc") || strstr(func, "kzalloc") ||
	     strstr(func, "krealloc") || !strcmp(func, "devres_alloc_named")))
		return true;
#endif
	return false;
}

/* Arguments whose value is an amount of memory, mapping or range. */
static const char *const sizes[] = { "size", "len", "n", "new_size", "maxlen" };
/* Functions whose count is not an amount (a fault position, a line count). */
static const char *const counts_not_sizes[] = {
	"devres_fail_nth",
	"devres_defer_nth",
	"driver_probe_fail_nth",
	"pci_dev_set_irq_lines",
	"platform_device_add_resources",
	"platform_device_register_simple",
};
/*
 * Calls that release or look up what they are given: a size that matches
 * nothing is refused by the lookup, and void calls say nothing.
 */
static const char *const not_granting[] = {
	"dma_free_coherent",
	"dmam_free_coherent",
	"dma_unmap_single",
	"dma_unmap_page",
	"dma_sync_single_for_cpu",
	"dma_sync_single_for_device",
	"release_region",
	"release_mem_region",
	"devm_release_region",
	"devm_release_mem_region",
	"devm_munmap",
	"iomem_window_remove",
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#include "hostile-scalars-cases.h"
#pragma GCC diagnostic pop

enum {
	S_GRANTED = 30, /* a size of 2^63 or a bad alignment granted */
	S_LIST,		/* the device's list not whole afterwards */
};

/* Whether a call that succeeded for @v was wrong to. */
static bool must_refuse(const struct scalar_case *c, uint64_t v)
{
	if (IN(not_granting, c->func))
		return false;
	if (!strcmp(c->arg, "align"))
		return (v & (v - 1)) != 0;
	if (IN(counts_not_sizes, c->func) || !IN(sizes, c->arg))
		return false;
	/*
	 * Only the types that can carry the value, an amount of memory: a
	 * region of the resource tree is bookkeeping of numbers, and one of
	 * 2^63 that does not wrap is as valid as in the kernel's tree.
	 */
	if (strcmp(c->type, "size_t") != 0 &&
	    !(strstr(c->func, "ioremap") && !strcmp(c->type, "resource_size_"
							     "t")))
		return false;
	return v > SIZE_MAX / 2;
}

static int child(const struct scalar_case *c, uint64_t v)
{
	int w0, c0, r, n;

	devres_set_log_sink(count_sink, NULL);
	w0 = warns;
	c0 = devres_warn_count();
	r = c->call(v);
	n = warns - w0;
	if (devres_warn_count() - c0 != n)
		return V_COUNT_MISSED;
	if (n > 1)
		return V_MANY_WARNS;
	if (must_refuse(c, v) &&
	    (r == RES_OK || r == RES_POS ||
	     (r == RES_ZERO && strcmp(c->func, "devm_mmap") != 0)))
		return S_GRANTED;
	if (hdev_ready) {
		devres_release_all(&hdev);
		if (devres_release_all(&hdev) != 0)
			return S_LIST;
	}
	return V_PASS;
}

static void test_every_scalar_argument(void **state)
{
	size_t ncases = sizeof(scalar_cases) / sizeof(scalar_cases[0]);
	struct pci_fake_dev d = hostile_fake_dev("0000:00:01.0");
	int failed = 0, ran = 0;

	(void)state;
	for (size_t i = 0; i < ncases; i++) {
		const struct scalar_case *c = &scalar_cases[i];

		for (size_t b = 0; b < NBAD; b++) {
			int status, v;
			pid_t pid;

			if (left_out(c->func, c->arg, bad[b].v))
				continue;
			/* A new tree each time: a call may write its files. */
			tree = pci_fake_create();
			assert_non_null(tree);
			assert_int_equal(pci_fake_add(tree, &d), 0);
			fflush(NULL);
			pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				signal(SIGSEGV, SIG_DFL);
				signal(SIGBUS, SIG_DFL);
				signal(SIGABRT, SIG_DFL);
				/*
				 * A hang, not a slow cell: ASan maps the
				 * shadow of a granted 4 GiB in tens of
				 * seconds on a loaded machine.
				 */
				alarm(120);
				v = child(c, bad[b].v);
				if (!v && thread_watch_leaks(c->func))
					v = V_THREAD_LEAK;
				_exit(v);
			}
			assert_int_equal(waitpid(pid, &status, 0), pid);
			pci_fake_destroy(tree);
			ran++;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				continue;
			failed++;
			v = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			fprintf(stderr, "FAIL %s(%s %s = %s): %s %d\n", c->func,
				c->type, c->arg, bad[b].name,
				v < 0 ? "signal" : "exit",
				v < 0 ? WTERMSIG(status) : v);
		}
	}
	fprintf(stderr, "%zu arguments, %d calls, %d failed\n", ncases, ran,
		failed);
	assert_true(ncases > 150);
	assert_int_equal(failed, 0);
}

static char last_line[512];

static void keep_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	/* A WARN's backtrace, in a debug build, follows it indented. */
	if (line[0] != ' ' && line[0] != '\t')
		snprintf(last_line, sizeof(last_line), "%s", line);
}

/*
 * The cells the sweep found, each with what it now does: an error code no
 * int can negate is named by its number (it was undefined behaviour), and
 * a page offset that wraps the address space is refused with one WARN (the
 * pointer sum was undefined behaviour; 2^63 now maps as dma_map_single()
 * of that address does).
 */
static void test_found_cells(void **state)
{
	static max_align_t page[512];
	struct device *dev = *state;
	int w0;

	devres_set_log_sink(keep_sink, NULL);
	w0 = devres_warn_count();
	assert_int_equal(dev_err_probe(dev, INT_MIN, "hostile\n"), INT_MIN);
	assert_non_null(strstr(last_line, "-2147483648"));
	assert_int_equal(dev_err_probe(dev, INT_MAX, "hostile\n"), INT_MAX);
	assert_int_equal(devres_warn_count(), w0);

	assert_true(dma_map_page(dev, (struct page *)page, SIZE_MAX, 64,
				 DMA_TO_DEVICE) == DMA_MAPPING_ERROR);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_non_null(strstr(last_line, "wraps the address space"));
	assert_true(dma_map_page(dev, (struct page *)page,
				 SIZE_MAX - (uintptr_t)page + 1, 64,
				 DMA_TO_DEVICE) == DMA_MAPPING_ERROR);
	assert_int_equal(devres_warn_count(), w0 + 2);
	/* The last byte of the address space is still an offset. */
	dma_addr_t a =
		dma_map_page(dev, (struct page *)page, 64, 64, DMA_TO_DEVICE);
	assert_true(a != DMA_MAPPING_ERROR);
	dma_unmap_page(dev, a, 64, DMA_TO_DEVICE);
	assert_int_equal(devres_warn_count(), w0 + 2);
}

/*
 * A direction that is none (DMA_NONE, 77, -1) given to a sync or an unmap
 * of a live mapping, DMA debug off: each is one WARN, as the map's is (the
 * kernel BUG()s on each); the unmap still removes the mapping whole.
 * Before, both took it in silence outside debug mode, and a sync of a
 * bidirectional mapping also in it.
 */
static void test_no_direction(void **state)
{
	static const int dirs[] = { DMA_NONE, 77, -1 };
	static char buf[64] __attribute__((aligned(64)));
	struct device *dev = *state;
	dma_addr_t h;
	int w0;

	h = dma_map_single(dev, buf, sizeof(buf), DMA_BIDIRECTIONAL);
	assert_false(dma_mapping_error(dev, h));
	for (int debug = 0; debug < 2; debug++) {
		devres_set_dma_debug(debug);
		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			enum dma_data_direction d =
				(enum dma_data_direction)dirs[i];

			devres_set_log_sink(keep_sink, NULL);
			w0 = devres_warn_count();
			dma_sync_single_for_cpu(dev, h, sizeof(buf), d);
			dma_sync_single_for_device(dev, h, sizeof(buf), d);
			assert_int_equal(devres_warn_count(), w0 + 2);
			assert_non_null(strstr(last_line, "invalid direction"));
		}
	}
	devres_set_dma_debug(false);
	w0 = devres_warn_count();
	dma_unmap_single(dev, h, sizeof(buf), (enum dma_data_direction)77);
	assert_int_equal(devres_warn_count(), w0 + 1);
	assert_non_null(strstr(last_line, "invalid direction 77"));
	/* Removed whole: a second unmap finds nothing. */
	dma_unmap_single(dev, h, sizeof(buf), DMA_BIDIRECTIONAL);
	assert_int_equal(devres_warn_count(), w0 + 2);
	assert_non_null(strstr(last_line, "was never mapped"));
}

/*
 * The line numbers pci_dev_set_irq_lines() is given, each a scalar of an
 * array: one that is no line (0, negative, INT_MIN) is refused with one
 * WARN naming it, and the device keeps the lines it had. Before, the
 * refusal said nothing.
 */
static void test_irq_lines_not_lines(void **state)
{
	static const int bad_lines[] = { 0, -1, INT_MIN };
	struct pci_fake_dev d = hostile_fake_dev("0000:00:01.0");
	struct pci_dev *p;
	int irq;

	(void)state;
	tree = pci_fake_create();
	assert_non_null(tree);
	assert_int_equal(pci_fake_add(tree, &d), 0);
	assert_int_equal(pci_sysfs_set_root(pci_fake_root(tree)), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(p);
	irq = irq_line_create("scalars");
	assert_true(irq > 0);
	assert_int_equal(pci_dev_set_irq_lines(p, &irq, 1), 0);
	for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		int lines[2] = { irq, bad_lines[i] };

		start_capture();
		assert_int_equal(pci_dev_set_irq_lines(p, lines, 2), -EINVAL);
		expect_warn_on("0000:00:01.0", "pci_dev_set_irq_lines",
			       "line 1 of 2 is ");
		assert_int_equal((int)p->irq, irq);
	}
	assert_int_equal(pci_dev_set_irq_lines(p, NULL, 0), 0);
	assert_int_equal(irq_line_destroy(irq), 0);
	pci_dev_put(p);
	pci_bus_remove_all();
	pci_sysfs_set_root(NULL);
	pci_fake_destroy(tree);
	tree = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_found_cells, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_no_direction, dev_setup,
						dev_teardown),
		cmocka_unit_test(test_irq_lines_not_lines),
		cmocka_unit_test(test_thread_watch),
		cmocka_unit_test(test_every_scalar_argument),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
