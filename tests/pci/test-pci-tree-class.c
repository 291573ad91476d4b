// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * Every value a scan reads, changed between the scan and each use, as a
 * table: each way a hostile tree can change (a column of `changes`) times
 * each call that reads or writes the device's files (a row of `uses`).
 * Each cell runs on a tree of its own, with a device and a sibling:
 *
 * - a use whose file changed fails, with the error the table names and
 *   exactly one WARN saying which file is not the scanned one (or no
 *   WARN, where the cell says so: a use that never reads the changed file);
 * - a mapping that is made reaches the device's own resource0 (a marker
 *   written through it is in that file), never the sibling's files, never
 *   /dev/zero or the program's memory, and never faults;
 * - in read-only mode no use writes any file of the tree.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/io.h>
#include "testlib.h"
#include "pcitest.h"

#define DEV "0000:00:05.0"
#define OTHER "0000:00:06.0"
#define MARK 0x5a5aa5a5u

static int memfd = -1;

static void path_of(const char *name, const char *file, char *buf)
{
	assert_int_equal(pci_fake_path(ft, name, file, buf, 4096), 0);
}

static void to_link(const char *file, const char *target)
{
	char path[4096];

	path_of(DEV, file, path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(target, path), 0);
}

static void to_link_other(const char *file, const char *ofile)
{
	char dest[4096];

	path_of(OTHER, ofile, dest);
	to_link(file, dest);
}

static void to_copy(const char *file)
{
	char buf[8192];
	ssize_t n = fake_read(DEV, file, buf, sizeof(buf));

	assert_true(n >= 0);
	assert_int_equal(fake_write(DEV, file, buf, (size_t)n), 0);
}

static void to_fifo(const char *file)
{
	char path[4096];

	path_of(DEV, file, path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
}

static void to_dir(const char *file)
{
	char path[4096];

	path_of(DEV, file, path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
}

static void shrink(const char *file, off_t len)
{
	char path[4096];

	path_of(DEV, file, path);
	assert_int_equal(truncate(path, len), 0);
}

static void removed(const char *file)
{
	char path[4096];

	path_of(DEV, file, path);
	assert_int_equal(unlink(path), 0);
}

/* The changes: each leaves the tree as a hostile one would. */
static void c_res_line(void)
{
	char buf[4096];
	ssize_t n = fake_read(DEV, "resource", buf, sizeof(buf));

	/* BAR 0's start moves, in place: the same file, another BAR. */
	assert_true(n > 20);
	buf[17] = buf[17] == '0' ? '1' : '0';
	assert_int_equal(fake_overwrite(DEV, "resource", buf, (size_t)n), 0);
}

static void c_res_flags(void)
{
	char buf[4096];
	ssize_t n = fake_read(DEV, "resource", buf, sizeof(buf));
	char *nl = memchr(buf, '\n', (size_t)n);

	/* BAR 0's flags end its first line: 0x...200 becomes 0x...100 (I/O). */
	assert_non_null(nl);
	assert_int_equal(nl[-3], '2');
	nl[-3] = '1';
	assert_int_equal(fake_overwrite(DEV, "resource", buf, (size_t)n), 0);
}

static void c_res_replaced(void)
{
	to_copy("resource");
}
static void c_bar_to_bar1(void)
{
	char dest[4096];

	path_of(DEV, "resource1", dest);
	to_link("resource0", dest);
}
static void c_bar_to_other(void)
{
	to_link_other("resource0", "resource0");
}
static void c_bar_to_zero(void)
{
	to_link("resource0", "/dev/zero");
}
static void c_bar_to_memfd(void)
{
	char dest[64];

	snprintf(dest, sizeof(dest), "/proc/%d/fd/%d", (int)getpid(), memfd);
	to_link("resource0", dest);
}
static void c_bar_copy(void)
{
	to_copy("resource0");
}
static void c_bar_fifo(void)
{
	to_fifo("resource0");
}
static void c_bar_dir(void)
{
	to_dir("resource0");
}
static void c_bar_short(void)
{
	shrink("resource0", 2048);
}
static void c_bar_removed(void)
{
	removed("resource0");
}
static void c_cfg_short(void)
{
	shrink("config", 0x40);
}
static void c_cfg_empty(void)
{
	shrink("config", 0);
}
static void c_cfg_copy(void)
{
	to_copy("config");
}
static void c_cfg_other(void)
{
	to_link_other("config", "config");
}
static void c_cfg_fifo(void)
{
	to_fifo("config");
}
static void c_cfg_mode0(void)
{
	char path[4096];

	/* Unreadable to all but root; root reads on, as sysfs lets it. */
	path_of(DEV, "config", path);
	assert_int_equal(chmod(path, 0), 0);
}
static void c_irq(void)
{
	assert_int_equal(fake_overwrite(DEV, "irq", "99\n", 3), 0);
}
static void c_enable_other(void)
{
	to_link_other("enable", "enable");
}
static void c_enable_removed(void)
{
	removed("enable");
}
static void c_ids(void)
{
	char path[4096];
	const uint16_t bad = 0x0bad;
	int fd;

	path_of(DEV, "config", path);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &bad, 2, PCI_DEVICE_ID), 2);
	close(fd);
}
static void c_dir_renamed(void)
{
	char path[4096], to[4200];

	path_of(DEV, NULL, path);
	snprintf(to, sizeof(to), "%s.old", path);
	assert_int_equal(rename(path, to), 0);
}
static void c_dir_removed(void)
{
	assert_int_equal(pci_fake_remove(ft, DEV), 0);
}
static void c_dir_remade(void)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);

	assert_int_equal(pci_fake_remove(ft, DEV), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
}
static void c_dir_other(void)
{
	char path[4096], dest[4096];

	/* The address now leads to the sibling's directory. */
	path_of(DEV, NULL, path);
	path_of(OTHER, NULL, dest);
	assert_int_equal(pci_fake_remove(ft, DEV), 0);
	assert_int_equal(symlink(dest, path), 0);
}

/*
 * Which of the device's files a change touched: a use that reads one of
 * them must fail; one that reads none of them must work.
 */
enum {
	F_RES = 1 << 0,	     /* resource */
	F_BAR = 1 << 1,	     /* resource0 */
	F_CFG = 1 << 2,	     /* config */
	F_EN = 1 << 3,	     /* enable */
	F_DIR = 1 << 4,	     /* the directory: every file */
	F_IDS = 1 << 5,	     /* the ids in config, not the file */
	F_NONE = 1 << 6,     /* nothing a use reads */
	F_CFG_HIGH = 1 << 7, /* config past 64 bytes */
};

struct change {
	const char *name;
	void (*apply)(void);
	unsigned int touches;
};

static const struct change changes[] = {
	{ "resource line moved", c_res_line, F_RES },
	{ "resource flags changed", c_res_flags, F_RES },
	{ "resource replaced", c_res_replaced, F_RES },
	{ "resource0 -> resource1", c_bar_to_bar1, F_BAR },
	{ "resource0 -> sibling's", c_bar_to_other, F_BAR },
	{ "resource0 -> /dev/zero", c_bar_to_zero, F_BAR },
	{ "resource0 -> memfd", c_bar_to_memfd, F_BAR },
	{ "resource0 replaced", c_bar_copy, F_BAR },
	{ "resource0 a FIFO", c_bar_fifo, F_BAR },
	{ "resource0 a directory", c_bar_dir, F_BAR },
	{ "resource0 shorter", c_bar_short, F_BAR },
	{ "resource0 removed", c_bar_removed, F_BAR },
	{ "config shrunk to 64", c_cfg_short, F_CFG_HIGH },
	{ "config emptied", c_cfg_empty, F_CFG | F_IDS },
	{ "config replaced", c_cfg_copy, F_CFG | F_IDS },
	{ "config -> sibling's", c_cfg_other, F_CFG | F_IDS },
	{ "config a FIFO", c_cfg_fifo, F_CFG | F_IDS },
	{ "config mode 0", c_cfg_mode0, F_NONE },
	{ "irq changed", c_irq, F_NONE },
	{ "enable -> sibling's", c_enable_other, F_EN },
	{ "enable removed", c_enable_removed, F_EN },
	{ "ids rewritten", c_ids, F_IDS },
	{ "directory renamed", c_dir_renamed, F_DIR },
	{ "directory removed", c_dir_removed, F_DIR },
	{ "directory made again", c_dir_remade, F_DIR },
	{ "directory -> sibling's", c_dir_other, F_DIR },
};

/* The uses: each returns 0 or a negative errno (-EIO for a PCIBIOS code). */
struct use {
	const char *name;
	int (*run)(struct pci_dev *p);
	unsigned int reads; /* the F_ bits of what it reads */
	bool writes;	    /* to the tree: refused in read-only mode */
};

static int u_pcim_enable(struct pci_dev *p)
{
	return pcim_enable_device(p);
}

static int u_regions(struct pci_dev *p)
{
	return pcim_request_all_regions(p, "class");
}

/* A mapping, if made, must be of the device's own resource0. */
static void check_own_bar(void __iomem *m)
{
	char path[4096];
	uint32_t v = 0;
	int fd;

	writel(MARK, m);
	assert_int_equal(readl(m), MARK);
	path_of(DEV, "resource0", path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &v, 4, 0), 4);
	close(fd);
	assert_int_equal(v, MARK);
	/* The last register of the BAR: a short file would fault here. */
	writel(MARK, (char __iomem *)m + 4092);
}

static int u_iomap(struct pci_dev *p)
{
	void __iomem *m;

	errno = 0;
	m = pci_iomap(p, 0, 0);
	if (!m)
		return -errno;
	check_own_bar(m);
	pci_iounmap(p, m);
	return 0;
}

static int u_pcim_iomap(struct pci_dev *p)
{
	void __iomem *m;

	errno = 0;
	m = pcim_iomap(p, 0, 0);
	if (!m)
		return -errno;
	check_own_bar(m);
	return 0;
}

static int u_iomap_regions(struct pci_dev *p)
{
	int ret = pcim_iomap_regions(p, 1, "class");

	if (ret)
		return ret;
	check_own_bar(pcim_iomap_table(p)[0]);
	return 0;
}

/* Void: whether it took is what the device says of itself after. */
static int u_set_master(struct pci_dev *p)
{
	pci_set_master(p);
	return p->is_busmaster ? 0 : -EIO;
}

static int pcibios_errno(int ret)
{
	return ret == PCIBIOS_SUCCESSFUL ? 0 : -EIO;
}

static int u_cfg_read(struct pci_dev *p)
{
	uint32_t v = 0;
	int ret = pci_read_config_dword(p, 0x80, &v);

	if (!ret)
		assert_int_not_equal(v, ~0u);
	return pcibios_errno(ret);
}

static int u_cfg_write(struct pci_dev *p)
{
	return pcibios_errno(pci_write_config_dword(p, 0x80, 0x41414141));
}

static int u_enable(struct pci_dev *p)
{
	int ret = pci_enable_device(p);

	if (!ret)
		pci_disable_device(p);
	return ret;
}

/* No backend gives the device lines: the sysfs irq is never one. */
static int u_irq(struct pci_dev *p)
{
	int n = pci_alloc_irq_vectors(p, 1, 1, PCI_IRQ_ALL_TYPES);

	assert_true(n < 0);
	assert_true(pci_irq_vector(p, 0) < 0);
	return 0;
}

static int u_rescan(struct pci_dev *p)
{
	int n;

	(void)p;
	n = pci_bus_scan();
	return n < 0 ? n : 0;
}

static const struct use uses[] = {
	{ "pcim_enable_device", u_pcim_enable, F_EN | F_CFG | F_IDS | F_DIR,
	  true },
	{ "pcim_request_all_regions", u_regions, 0, false },
	{ "pci_iomap", u_iomap, F_RES | F_BAR | F_IDS | F_DIR, true },
	{ "pcim_iomap", u_pcim_iomap, F_RES | F_BAR | F_IDS | F_DIR, true },
	{ "pcim_iomap_regions", u_iomap_regions, F_RES | F_BAR | F_IDS | F_DIR,
	  true },
	{ "pci_set_master", u_set_master, F_CFG | F_DIR, true },
	{ "pci_read_config_dword", u_cfg_read, F_CFG | F_CFG_HIGH | F_DIR,
	  false },
	{ "pci_write_config_dword", u_cfg_write, F_CFG | F_CFG_HIGH | F_DIR,
	  true },
	{ "pci_enable_device", u_enable, F_EN | F_CFG | F_IDS | F_DIR, true },
	{ "pci_alloc_irq_vectors", u_irq, 0, false },
	{ "pci_bus_scan", u_rescan, 0, false },
};

#define NCHANGES (sizeof(changes) / sizeof(changes[0]))
#define NUSES (sizeof(uses) / sizeof(uses[0]))

/* A checksum of every regular file of @name: what must not change. */
static unsigned long sum_dir(const char *name)
{
	static const char *const files[] = { "config", "enable", "resource",
					     "resource0", "resource1" };
	unsigned long s = 5381;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		unsigned char buf[8192];
		char path[4096];
		struct stat st;
		ssize_t n;
		int fd;

		path_of(name, files[f], path);
		if (lstat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < n; i++)
				s = s * 33 + buf[i];
		close(fd);
	}
	return s;
}

static int verbose;

/* One cell, on a tree of its own: asserts the rules above. */
static void cell(const struct change *c, const struct use *u, bool ro)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);
	struct pci_fake_dev o = fake_dev(OTHER, 0x1af4, 0x20, 2);
	unsigned long sibling, mine = 0;
	struct pci_dev *p;
	int warns, ret;
	bool hit;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_fake_add(ft, &o), 0);
	assert_int_equal(pci_bus_scan(), 2);
	p = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(p);
	c->apply();
	sibling = sum_dir(OTHER);
	if (ro) {
		pci_sysfs_set_readonly(true);
		mine = sum_dir(DEV);
	}
	start_capture();
	ret = u->run(p);
	devres_set_log_sink(NULL, NULL);
	warns = cap.n;
	hit = (c->touches & u->reads) != 0;
	if (verbose)
		fprintf(stderr, "%-24s %-26s %s ret %d warns %d\n", c->name,
			u->name, ro ? "ro" : "rw", ret, warns);
	if (ro) {
		/* Nothing written, whatever the call and the tree. */
		assert_int_equal(sum_dir(DEV), mine);
		if (u->writes)
			assert_true(ret == -EROFS || ret == -EIO);
	} else if (hit) {
		/* Refused, with the one line that says which file. */
		if (ret != -ENODEV && ret != -ESTALE && ret != -ELOOP &&
		    ret != -EIO)
			fail_msg("%s / %s: %d on a changed tree", c->name,
				 u->name, ret);
		if (warns != 1)
			fail_msg("%s / %s: %d lines", c->name, u->name, warns);
	} else if (ret || warns) {
		fail_msg("%s / %s: %d, %d lines, on an unchanged file", c->name,
			 u->name, ret, warns);
	}
	assert_int_equal(sum_dir(OTHER), sibling);
	devres_release_all(&p->dev);
	pci_dev_put(p);
	pci_sysfs_set_readonly(false);
	assert_int_equal(pci_teardown(NULL), 0);
}

static void test_every_change_every_use(void **state)
{
	(void)state;
	for (size_t c = 0; c < NCHANGES; c++)
		for (size_t u = 0; u < NUSES; u++)
			cell(&changes[c], &uses[u], false);
}

static void test_every_change_every_use_readonly(void **state)
{
	(void)state;
	for (size_t c = 0; c < NCHANGES; c++)
		for (size_t u = 0; u < NUSES; u++)
			if (uses[u].writes)
				cell(&changes[c], &uses[u], true);
}

/*
 * Aliases a scan itself sees: the checks after it compare a file with the
 * one the scan saw, so they cannot tell that it was another device's or
 * another BAR's already. Each is refused at the scan, with one line.
 */
static void hardlink(const char *file, const char *name, const char *target)
{
	char path[4096], dest[4096];

	path_of(DEV, file, path);
	path_of(name, target, dest);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(link(dest, path), 0);
}

static void a_entry(void)
{
	char path[4096];

	/* As sysfs links its entries, but to the sibling's directory. */
	snprintf(path, sizeof(path), "%s/bus/pci/devices/" DEV,
		 pci_fake_root(ft));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("../../../devices/" OTHER, path), 0);
}
static void a_bar1_is_bar0(void)
{
	hardlink("resource1", DEV, "resource0");
}
static void a_bar0_other(void)
{
	hardlink("resource0", OTHER, "resource0");
}
static void a_bar1_other(void)
{
	hardlink("resource1", OTHER, "resource0");
}
static void a_config_other(void)
{
	hardlink("config", OTHER, "config");
}
static void a_resource_other(void)
{
	hardlink("resource", OTHER, "resource");
}
static void a_enable_other(void)
{
	hardlink("enable", OTHER, "enable");
}

static const struct alias {
	const char *name;
	void (*apply)(void);
	int err;
} aliases[] = {
	{ "entry -> sibling's directory", a_entry, -EEXIST },
	{ "resource1 is resource0", a_bar1_is_bar0, -EINVAL },
	{ "resource0 is sibling's resource0", a_bar0_other, -EEXIST },
	{ "resource1 is sibling's resource0", a_bar1_other, -EEXIST },
	{ "config is sibling's", a_config_other, -EEXIST },
	{ "resource is sibling's", a_resource_other, -EEXIST },
	{ "enable is sibling's", a_enable_other, -EEXIST },
};

static void test_aliases_at_a_scan(void **state)
{
	(void)state;
	for (size_t a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++) {
		struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);
		struct pci_fake_dev o = fake_dev(OTHER, 0x1af4, 0x20, 2);
		struct pci_dev *p;
		int ret;

		assert_int_equal(pci_setup(NULL), 0);
		assert_int_equal(pci_fake_add(ft, &o), 0);
		assert_int_equal(pci_bus_scan(), 1);
		assert_int_equal(pci_fake_add(ft, &d), 0);
		aliases[a].apply();
		start_capture();
		ret = pci_bus_scan_device(DEV);
		devres_set_log_sink(NULL, NULL);
		if (verbose)
			fprintf(stderr, "%-34s ret %d lines %d\n",
				aliases[a].name, ret, cap.n);
		if (ret != aliases[a].err || cap.n != 1)
			fail_msg("%s: %d, %d lines", aliases[a].name, ret,
				 cap.n);
		/* A whole scan skips it too: one device, the sibling. */
		assert_int_equal(pci_bus_scan(), 1);
		assert_null(pci_get_device(0x1af4, 0x10, NULL));
		p = pci_get_device(0x1af4, 0x20, NULL);
		assert_non_null(p);
		assert_string_equal(pci_name(p), OTHER);
		assert_null(pci_get_device(0x1af4, 0x20, p));
		assert_int_equal(pci_teardown(NULL), 0);
	}
}

/*
 * A device put once too often by its user, then removed by the library
 * (by pci_bus_remove_all(), or by a rescan that finds its directory
 * gone): one WARN, the device released once, nothing used after it.
 */
static void test_overput_then_removed(void **state)
{
	static const char *const by[] = { "pci_bus_remove_all", "pci_bus_"
								"scan" };

	(void)state;
	for (size_t i = 0; i < sizeof(by) / sizeof(by[0]); i++) {
		struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);
		struct pci_dev *p;

		assert_int_equal(pci_setup(NULL), 0);
		assert_int_equal(pci_fake_add(ft, &d), 0);
		assert_int_equal(pci_bus_scan(), 1);
		p = pci_get_device(0x1af4, 0x10, NULL);
		assert_non_null(p);
		pci_dev_put(p);
		pci_dev_put(p); /* one too many */
		start_capture();
		if (i == 0) {
			pci_bus_remove_all();
		} else {
			assert_int_equal(pci_fake_remove(ft, DEV), 0);
			assert_int_equal(pci_bus_scan(), 0);
		}
		expect_warn_on(DEV, by[i], "one pci_dev_put() too many");
		assert_null(pci_get_device(0x1af4, 0x10, NULL));
		assert_int_equal(pci_teardown(NULL), 0);
	}
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_change_every_use),
		cmocka_unit_test(test_every_change_every_use_readonly),
		cmocka_unit_test(test_aliases_at_a_scan),
		cmocka_unit_test(test_overput_then_removed),
	};
	int ret;

	verbose = getenv("PCI_CLASS_VERBOSE") != NULL;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	memfd = memfd_create("bar", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 1 << 20))
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	close(memfd);
	return ret;
}
