// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci timeout=60 */
/*
 * What a backend reads from a device's sysfs tree, as a table: each value
 * (the driver link, the uio directory, its uioN, uioN/dev, the
 * iommu_group link) times each hostile form it can take (non-numeric,
 * negative, huge, trailing bytes, a NUL, no newline, 4096+ bytes, a
 * FIFO, a directory, a symlink inside or outside the tree, removed, two
 * of them) times the moment it changes (before the scan that attaches
 * the backend; between the scan and the probe; between the probe and an
 * interrupt). Each cell runs on a tree of its own with a sibling device
 * bound to uio_pci_generic too, and checks:
 *
 * - before the scan: pci_bus_scan_device() gives the errno the row names,
 *   at once (a FIFO does not block it), with no WARN; a device refused is
 *   not registered; one taken is taken through its own node, never its
 *   sibling's or one outside the tree;
 * - after the scan: nothing is read again, the interrupt comes from the
 *   device's own node, a rescan keeps the device;
 * - the sibling's files are unchanged, no WARN, the ledger at its
 *   baseline at the end (ASan: nothing leaked).
 *
 * The VFIO rows change only what a scan reads before any /dev/vfio node
 * is opened: every one is refused before it, so nothing here opens one.
 */
#define _GNU_SOURCE /* posix_openpt(), ptsname() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <ftw.h>
#include <time.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"
#include "count-irq.h"

#define A "0000:00:05.0"
#define B "0000:00:06.0"
#define A_ID 0x11e8
#define B_ID 0x11e9

static struct fake_uio ua = { -1, -1 }, ub = { -1, -1 };
static char outside[4200]; /* a directory out of the tree */
static char rdev_a[32];	   /* A's uio0/dev as the tree first says it */

static void path_of(const char *name, const char *file, char *buf)
{
	assert_int_equal(pci_fake_path(ft, name, file, buf, 4096), 0);
}

static void put_file(const char *file, const void *data, size_t len)
{
	assert_int_equal(fake_write(A, file, data, len), 0);
}

static void put_text(const char *file, const char *text)
{
	put_file(file, text, strlen(text));
}

static void put_link(const char *file, const char *target)
{
	char path[4096];

	path_of(A, file, path);
	(void)unlink(path);
	(void)rmdir(path);
	assert_int_equal(symlink(target, path), 0);
}

/* A's uio0 moved to @name (uio+0, uio00, a second uioN). */
static void uio_rename(const char *name)
{
	char from[4096], to[4096];

	path_of(A, "uio/uio0", from);
	path_of(A, "uio", to);
	strcat(to, "/");
	strcat(to, name);
	assert_int_equal(rename(from, to), 0);
}

/* ---- the hostile changes, one a row ---------------------------------- */

static void c_none(void)
{
}

static void c_dev_text(void)
{
	put_text("uio/uio0/dev", "x:y\n");
}

static void c_dev_negative(void)
{
	put_text("uio/uio0/dev", "-1:5\n");
}

static void c_dev_trailing(void)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*sjunk\n", (int)strlen(rdev_a) - 1,
		 rdev_a);
	put_text("uio/uio0/dev", buf);
}

static void c_dev_space(void)
{
	char buf[64];

	snprintf(buf, sizeof(buf), " %s", rdev_a);
	put_text("uio/uio0/dev", buf);
}

static void c_dev_nul(void)
{
	char buf[64];
	size_t n = strlen(rdev_a) - 1;

	memcpy(buf, rdev_a, n);
	memcpy(buf + n, "\0x\n", 3);
	put_file("uio/uio0/dev", buf, n + 3);
}

static void c_dev_huge(void)
{
	put_text("uio/uio0/dev", "4294967296:0\n");
}

static void c_dev_major(void)
{
	put_text("uio/uio0/dev", "4096:0\n");
}

static void c_dev_empty(void)
{
	put_text("uio/uio0/dev", "");
}

static void c_dev_two_lines(void)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s\n", rdev_a);
	put_text("uio/uio0/dev", buf);
}

static void c_dev_no_newline(void)
{
	put_file("uio/uio0/dev", rdev_a, strlen(rdev_a) - 1);
}

static void c_dev_4k(void)
{
	static char buf[5000];
	size_t n = strlen(rdev_a);

	memcpy(buf, rdev_a, n);
	memset(buf + n, 'x', sizeof(buf) - n);
	put_file("uio/uio0/dev", buf, sizeof(buf));
}

/* A's @file removed, then made a FIFO or a directory (@mode) or nothing. */
static void replace(const char *file, mode_t mode)
{
	char path[4096];

	path_of(A, file, path);
	assert_int_equal(unlink(path), 0);
	if (S_ISFIFO(mode))
		assert_int_equal(mkfifo(path, 0600), 0);
	else if (S_ISDIR(mode))
		assert_int_equal(mkdir(path, 0755), 0);
}

static void c_dev_fifo(void)
{
	replace("uio/uio0/dev", S_IFIFO);
}

static void c_dev_dir(void)
{
	replace("uio/uio0/dev", S_IFDIR);
}

static void c_dev_removed(void)
{
	replace("uio/uio0/dev", 0);
}

/* A's dev a symlink to the sibling's: the sibling's node. */
static void c_dev_link_sibling(void)
{
	char dest[4096];

	path_of(B, "uio/uio1/dev", dest);
	put_link("uio/uio0/dev", dest);
}

/* uio0 a symlink out of the tree, to a dev that names A's node. */
static void c_uioN_outside(void)
{
	char path[4400];
	int fd;

	snprintf(path, sizeof(path), "%s/uio0", outside);
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/dev");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, rdev_a, strlen(rdev_a)),
			 (ssize_t)strlen(rdev_a));
	close(fd);
	path_of(A, "uio/uio0/dev", path);
	assert_int_equal(unlink(path), 0);
	path_of(A, "uio/uio0", path);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/uio0", outside);
	put_link("uio/uio0", path);
}

/* A's uio a relative symlink to the sibling's: another device's node. */
static void c_uio_link_sibling(void)
{
	char path[4096];

	path_of(A, "uio/uio0/dev", path);
	assert_int_equal(unlink(path), 0);
	path_of(A, "uio/uio0", path);
	assert_int_equal(rmdir(path), 0);
	put_link("uio", "../" B "/uio");
}

static void c_uio_removed(void)
{
	char path[4096];

	c_dev_removed();
	path_of(A, "uio/uio0", path);
	assert_int_equal(rmdir(path), 0);
	path_of(A, "uio", path);
	assert_int_equal(rmdir(path), 0);
}

static void c_uio_file(void)
{
	c_uio_removed();
	put_text("uio", "uio0\n");
}

static void c_uio_plus(void)
{
	uio_rename("uio+0");
}

static void c_uio_zero(void)
{
	uio_rename("uio00");
}

static void c_uio_huge(void)
{
	uio_rename("uio99999999999999999999");
}

/* A second node beside uio0: which one is the device's? */
static void c_uio_two(void)
{
	char path[4096];

	path_of(A, "uio/uio7", path);
	assert_int_equal(mkdir(path, 0755), 0);
	put_text("uio/uio7/dev", rdev_a);
}

/* The driver link a regular file that names uio_pci_generic. */
static void c_driver_file(void)
{
	replace("driver", 0);
	put_text("driver", "../../../bus/pci/drivers/uio_pci_generic\n");
}

static void c_driver_fifo(void)
{
	replace("driver", S_IFIFO);
}

/*
 * A driver link whose first 255 bytes end in uio_pci_generic, bound to
 * another driver: a read cut there would take the device.
 */
static void c_driver_long(void)
{
	char target[400];
	size_t n;

	memset(target, 0, sizeof(target));
	for (n = 0; n + 3 <= 200; n += 3)
		memcpy(target + n, "../", 3);
	memset(target + n, 'x', 255 - strlen("/uio_pci_generic") - n);
	strcat(target, "/uio_pci_generic");
	assert_int_equal(strlen(target), 255);
	strcat(target, "/../e1000e");
	put_link("driver", target);
}

/* Dev now names the sibling's node; the directory the sibling's. */
static void c_dev_sibling_num(void)
{
	char buf[64];

	assert_true(fake_read(B, "uio/uio1/dev", buf, sizeof(buf)) > 0);
	put_text("uio/uio0/dev", buf);
}

/* ---- the UIO table --------------------------------------------------- */

enum expect {
	TAKEN,
	NOT_UIO
};

struct row {
	const char *name;
	void (*apply)(void);
	int scan_ret;	/* before the scan: pci_bus_scan_device() */
	enum expect ok; /* for a 0 there: taken by UIO, or left to sysfs */
};

static const struct row rows[] = {
	{ "unchanged", c_none, 0, TAKEN },
	{ "dev non-numeric", c_dev_text, -EINVAL, TAKEN },
	{ "dev negative", c_dev_negative, -EINVAL, TAKEN },
	{ "dev trailing bytes", c_dev_trailing, -EINVAL, TAKEN },
	{ "dev leading space", c_dev_space, -EINVAL, TAKEN },
	{ "dev NUL byte", c_dev_nul, -EINVAL, TAKEN },
	{ "dev past 32 bits", c_dev_huge, -EINVAL, TAKEN },
	{ "dev major past 12 bits", c_dev_major, -EINVAL, TAKEN },
	{ "dev empty", c_dev_empty, -EINVAL, TAKEN },
	{ "dev two lines", c_dev_two_lines, -EINVAL, TAKEN },
	{ "dev no newline", c_dev_no_newline, 0, TAKEN },
	{ "dev 4096+ bytes", c_dev_4k, -EINVAL, TAKEN },
	{ "dev a FIFO", c_dev_fifo, -EINVAL, TAKEN },
	{ "dev a directory", c_dev_dir, -EINVAL, TAKEN },
	{ "dev removed", c_dev_removed, 0, NOT_UIO },
	{ "dev the sibling's number", c_dev_sibling_num, -ESTALE, TAKEN },
	{ "dev a symlink to the sibling's", c_dev_link_sibling, -ELOOP, TAKEN },
	{ "uioN a symlink out of the tree", c_uioN_outside, -ELOOP, TAKEN },
	{ "uio a symlink to the sibling's", c_uio_link_sibling, -ELOOP, TAKEN },
	{ "uio a regular file", c_uio_file, -ENOTDIR, TAKEN },
	{ "uio removed", c_uio_removed, 0, NOT_UIO },
	{ "uioN signed", c_uio_plus, 0, NOT_UIO },
	{ "uioN a leading 0", c_uio_zero, 0, NOT_UIO },
	{ "uioN huge", c_uio_huge, 0, NOT_UIO },
	{ "two uioN", c_uio_two, -EINVAL, TAKEN },
	{ "driver a regular file", c_driver_file, 0, NOT_UIO },
	{ "driver a FIFO", c_driver_fifo, 0, NOT_UIO },
	{ "driver link past 255 bytes", c_driver_long, 0, NOT_UIO },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* Which moment a row's change is made at. */
enum moment {
	BEFORE_SCAN,
	BEFORE_PROBE,
	BEFORE_IRQ,
	NMOMENTS
};

static const char *const moment_names[] = { "before the scan",
					    "between scan and probe",
					    "between probe and interrupt" };

static int intx_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int n;

	(void)id;
	n = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
	if (n < 0)
		return n;
	return devm_request_irq(&pdev->dev,
				(unsigned int)pci_irq_vector(pdev, 0),
				count_irq, 0, "backend-tree", pdev);
}

static const struct pci_device_id intx_ids[] = {
	{ PCI_DEVICE(0x1234, A_ID) },
	{ 0 },
};

static struct pci_driver intx_driver = {
	.name = "backend-tree",
	.id_table = intx_ids,
	.probe = intx_probe,
};

/* A checksum of the sibling's uio files and its node's path. */
static unsigned long sum_sibling(void)
{
	char buf[64];
	unsigned long s = 5381;
	ssize_t n = fake_read(B, "uio/uio1/dev", buf, sizeof(buf));

	assert_true(n > 0);
	for (ssize_t i = 0; i < n; i++)
		s = s * 33 + (unsigned char)buf[i];
	return s;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* An interrupt of A reaches the bound driver through A's own node. */
static void fire_a(void)
{
	unsigned long before = __atomic_load_n(&handled, __ATOMIC_RELAXED);

	assert_int_equal(uio_fire(A, &ua, 1), 0);
	assert_true(uio_wait_unmasked(A, 5000));
	assert_int_equal(__atomic_load_n(&handled, __ATOMIC_RELAXED),
			 before + 1);
}

static int verbose;

static int uio_cell(const struct row *r, enum moment m)
{
	struct pci_fake_dev a = fake_dev(A, 0x1234, A_ID, 1);
	struct pci_fake_dev b = fake_dev(B, 0x1234, B_ID, 1);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	unsigned long sibling;
	struct pci_dev *p;
	int warns, ret, bad = 0;
	double t0;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(uio_dir_make(), 0);
	snprintf(outside, sizeof(outside), "%s/out", uio_dir);
	assert_int_equal(mkdir(outside, 0755), 0);
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_fake_add(ft, &b), 0);
	assert_int_equal(fake_uio_add(A, 0, &ua), 0);
	assert_int_equal(fake_uio_add(B, 1, &ub), 0);
	assert_true(fake_read(A, "uio/uio0/dev", rdev_a, sizeof(rdev_a)) > 0);
	assert_int_equal(pci_bus_scan_device(B), 0);
	sibling = sum_sibling();
	warns = devres_warn_count();

	if (m == BEFORE_SCAN)
		r->apply();
	/* An open that blocks is cut short here and fails the cell. */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarm(10);
	t0 = now_s();
	ret = pci_bus_scan_device(A);
	alarm(0);
	assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
	p = pci_get_device(0x1234, A_ID, NULL);
	if (verbose)
		fprintf(stderr, "%-32s %-28s ret %d %s\n", r->name,
			moment_names[m], ret,
			p ? (pci_dev_is_uio(p) ? "uio" : "sysfs") : "none");
	if (m == BEFORE_SCAN) {
		if (ret != r->scan_ret) {
			print_error("%s, %s: scan %d, not %d\n", r->name,
				    moment_names[m], ret, r->scan_ret);
			bad++;
		} else if (now_s() - t0 > 5) {
			print_error("%s: the scan took %.1f s\n", r->name,
				    now_s() - t0);
			bad++;
		}
		/* Refused: not registered. Taken: by UIO unless the row says. */
		if (!bad && !ret != !!p)
			bad++;
		if (!bad && p &&
		    pci_dev_is_uio(p) != (r->ok == TAKEN && !r->scan_ret))
			bad++;
	} else {
		/* Taken as it was; what changes later is never read again. */
		assert_int_equal(ret, 0);
		assert_non_null(p);
		assert_true(pci_dev_is_uio(p));
		if (m == BEFORE_PROBE)
			r->apply();
		assert_int_equal(pci_register_driver(&intx_driver), 0);
		assert_ptr_equal(p->dev.driver, &intx_driver.driver);
		if (m == BEFORE_IRQ)
			r->apply();
		fire_a();
		/* A rescan keeps it: its directory is the one scanned. */
		assert_true(pci_bus_scan() >= 1);
		assert_ptr_equal(p->dev.driver, &intx_driver.driver);
		fire_a();
		pci_unregister_driver(&intx_driver);
	}
	/* The node behind a taken A is A's own: its interrupt is A's. */
	if (!bad && p && pci_dev_is_uio(p) && m == BEFORE_SCAN) {
		assert_int_equal(pci_register_driver(&intx_driver), 0);
		if (p->dev.driver != &intx_driver.driver) {
			bad++;
		} else {
			fire_a();
			assert_int_equal(uio_next_write(&ub, 0), -1);
		}
		pci_unregister_driver(&intx_driver);
	}
	if (p)
		pci_dev_put(p);
	if (devres_warn_count() != warns) {
		print_error("%s, %s: a WARN\n", r->name, moment_names[m]);
		bad++;
	}
	if (sum_sibling() != sibling) {
		print_error("%s, %s: the sibling changed\n", r->name,
			    moment_names[m]);
		bad++;
	}
	fake_uio_close(&ua);
	fake_uio_close(&ub);
	/* Every device removed, then the ledger at its baseline. */
	if (pci_teardown(NULL))
		bad++;
	/* The node links, the out-of-tree directory. */
	assert_int_equal(nftw(uio_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
	if (bad)
		print_error("FAIL: %s, %s\n", r->name, moment_names[m]);
	return bad ? 1 : 0;
}

static void test_uio_values(void **state)
{
	int failed = 0, cells = 0;

	(void)state;
	verbose = getenv("VERBOSE") != NULL;
	for (size_t i = 0; i < NROWS; i++)
		for (int m = 0; m < NMOMENTS; m++) {
			/* A change that unbinds nothing is a row once bound. */
			failed += uio_cell(&rows[i], (enum moment)m);
			cells++;
		}
	if (failed)
		fail_msg("%d of %d cells failed", failed, cells);
}

/* ---- the VFIO table -------------------------------------------------- */

/*
 * The iommu_group link's target, and the driver link vfio-pci: each row
 * is refused before /dev/vfio is opened (the number it would open is
 * never a number the link does not end in).
 */
struct vrow {
	const char *name;
	const char *target; /* NULL: removed; "": a regular file */
	int scan_ret;
};

static char long_target[600];

static const struct vrow vrows[] = {
	{ "ends in /", "../../../kernel/iommu_groups/", -EINVAL },
	{ "signed", "../../../kernel/iommu_groups/+3", -EINVAL },
	{ "a leading space", "../../../kernel/iommu_groups/ 3", -EINVAL },
	{ "negative zero", "../../../kernel/iommu_groups/-0", -EINVAL },
	{ "a leading 0", "../../../kernel/iommu_groups/03", -EINVAL },
	{ "trailing bytes", "../../../kernel/iommu_groups/3x", -EINVAL },
	{ "past 24 bits", "../../../kernel/iommu_groups/16777216", -EINVAL },
	{ "past 64 bits", "../../../kernel/iommu_groups/99999999999999999999",
	  -EINVAL },
	{ "cut at 255 bytes to another number", long_target, -ENAMETOOLONG },
	{ "a regular file", "", -EINVAL },
	{ "removed", NULL, -ENOENT },
};

#define NVROWS (sizeof(vrows) / sizeof(vrows[0]))

static int vfio_cell(const struct vrow *r)
{
	struct pci_fake_dev a = fake_dev(A, 0x1234, A_ID, 1);
	char path[4096];
	int warns, ret, bad = 0;
	struct pci_dev *p;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &a), 0);
	put_link("driver", "../../../bus/pci/drivers/vfio-pci");
	path_of(A, "iommu_group", path);
	if (r->target && *r->target)
		assert_int_equal(symlink(r->target, path), 0);
	else if (r->target)
		put_text("iommu_group", "3\n");
	warns = devres_warn_count();
	ret = pci_bus_scan_device(A);
	p = pci_get_device(0x1234, A_ID, NULL);
	if (verbose)
		fprintf(stderr, "vfio %-36s ret %d\n", r->name, ret);
	if (ret != r->scan_ret) {
		print_error("vfio %s: scan %d, not %d\n", r->name, ret,
			    r->scan_ret);
		bad++;
	}
	if (p) {
		bad++;
		pci_dev_put(p);
	}
	if (devres_warn_count() != warns)
		bad++;
	if (pci_teardown(NULL))
		bad++;
	if (bad)
		print_error("FAIL: vfio %s\n", r->name);
	return bad ? 1 : 0;
}

static void test_vfio_values(void **state)
{
	int failed = 0;
	size_t n;

	(void)state;
	verbose = getenv("VERBOSE") != NULL;
	/* 254 bytes of path, then "7": readlink() into 256 cut it there. */
	memset(long_target, 0, sizeof(long_target));
	for (n = 0; n + 3 <= 240; n += 3)
		memcpy(long_target + n, "../", 3);
	memset(long_target + n, 'x', 253 - n);
	strcat(long_target, "/7/kernel/iommu_groups/9");
	assert_int_equal(long_target[254], '7');
	assert_int_equal(pci_vfio_enable(), 0);
	for (size_t i = 0; i < NVROWS; i++)
		failed += vfio_cell(&vrows[i]);
	if (failed)
		fail_msg("%d of %zu cells failed", failed, NVROWS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uio_values),
		cmocka_unit_test(test_vfio_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
