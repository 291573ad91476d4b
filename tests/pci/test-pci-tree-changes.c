// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The device's files are the authority, at the moment they are used. Each
 * value a scan reads is changed between the scan and its use, in each way
 * a hostile tree can: a file replaced by a symlink to another device's, a
 * file replaced by another file, a file shrunk, a BAR's line rewritten,
 * the ids rewritten, the whole directory removed and made again. Each use
 * fails cleanly, and no write lands anywhere but in the device's own file.
 * Also: a BAR with no file of its own is not mapped through the program's
 * window at its address; read-only mode leaves no writable mapping; and
 * the sysfs `irq` number is not the process's interrupt line.
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
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"

#define DEV "0000:00:05.0"
#define OTHER "0000:00:06.0"

/* DEV (vendor 0x1af4:0x10) and OTHER (0x1af4:0x20), two 4 KiB BARs each. */
static struct pci_dev *scan_two(void)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);
	struct pci_fake_dev o = fake_dev(OTHER, 0x1af4, 0x20, 2);
	struct pci_dev *p;

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_fake_add(ft, &o), 0);
	assert_int_equal(pci_bus_scan(), 2);
	p = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	return p;
}

static void path_of(const char *name, const char *file, char *buf)
{
	assert_int_equal(pci_fake_path(ft, name, file, buf, 4096), 0);
}

/* Writes @len bytes at @off of the file, in place (same inode). */
static void patch(const char *name, const char *file, off_t off,
		  const void *data, size_t len)
{
	char path[4096];
	int fd;

	path_of(name, file, path);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

/* Replaces the file with a symlink to the same file of @target. */
static void to_symlink(const char *name, const char *file, const char *target)
{
	char path[4096], dest[4096];

	path_of(name, file, path);
	path_of(target, file, dest);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(dest, path), 0);
}

/* Replaces the file with a new file of the same contents (a new inode). */
static void to_copy(const char *name, const char *file)
{
	char buf[8192];
	ssize_t n = fake_read(name, file, buf, sizeof(buf));

	assert_true(n >= 0);
	assert_int_equal(fake_write(name, file, buf, (size_t)n), 0);
}

/* A checksum of a whole file: what must not change. */
static unsigned long sum_of(const char *name, const char *file)
{
	unsigned long s = 5381;
	unsigned char buf[8192];
	char path[4096];
	ssize_t n;
	int fd;

	path_of(name, file, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			s = s * 33 + buf[i];
	close(fd);
	return s;
}

/* Every file of OTHER a write could land in. */
struct sums {
	unsigned long config, enable, res0, res1;
};

static struct sums sums_of(const char *name)
{
	struct sums s = {
		sum_of(name, "config"),
		sum_of(name, "enable"),
		sum_of(name, "resource0"),
		sum_of(name, "resource1"),
	};
	return s;
}

static void same_sums(struct sums a, struct sums b)
{
	assert_int_equal(a.config, b.config);
	assert_int_equal(a.enable, b.enable);
	assert_int_equal(a.res0, b.res0);
	assert_int_equal(a.res1, b.res1);
}

/* Every use of DEV writes what it can; none of it may reach OTHER. */
static void try_writes(struct pci_dev *p, int cfg_ret, int enable_ret,
		       int map_err)
{
	void __iomem *m;

	assert_int_equal(pci_write_config_dword(p, 0x40, 0x41414141), cfg_ret);
	assert_int_equal(pci_enable_device(p), enable_ret);
	if (!enable_ret)
		pci_disable_device(p);
	errno = 0;
	m = pci_iomap(p, 0, 0);
	if (map_err) {
		assert_null(m);
		assert_int_equal(errno, map_err);
	} else {
		assert_non_null(m);
		writel(0x42424242, m);
		pci_iounmap(p, m);
	}
	errno = 0;
	m = pcim_iomap(p, 0, 0);
	if (map_err) {
		assert_null(m);
		assert_int_equal(errno, map_err);
	} else {
		assert_non_null(m);
		writel(0x43434343, m);
	}
	devres_release_all(&p->dev);
}

static void test_config_symlink(void **state)
{
	struct pci_dev *p = scan_two();
	struct sums sibling = sums_of(OTHER);
	uint32_t v;

	(void)state;
	to_symlink(DEV, "config", OTHER);
	assert_int_equal(pci_read_config_dword(p, 0, &v),
			 PCIBIOS_DEVICE_NOT_FOUND);
	assert_int_equal(v, ~0u);
	/* Enable and mapping check the ids through config: they fail too. */
	try_writes(p, PCIBIOS_SET_FAILED, -ENODEV, ENODEV);
	same_sums(sibling, sums_of(OTHER));
}

static void test_config_replaced(void **state)
{
	struct pci_dev *p = scan_two();
	struct sums sibling = sums_of(OTHER);
	unsigned long copy;
	uint32_t v;

	(void)state;
	to_copy(DEV, "config");
	copy = sum_of(DEV, "config");
	assert_int_equal(pci_read_config_dword(p, 0, &v),
			 PCIBIOS_DEVICE_NOT_FOUND);
	try_writes(p, PCIBIOS_SET_FAILED, -ENODEV, ENODEV);
	assert_int_equal(sum_of(DEV, "config"), copy);
	same_sums(sibling, sums_of(OTHER));
}

static void test_config_shrunk(void **state)
{
	struct pci_dev *p = scan_two();
	char path[4096];
	struct stat st;

	(void)state;
	path_of(DEV, "config", path);
	assert_int_equal(truncate(path, 64), 0);
	/* cfg_size says 256; the file holds 64: nothing past it, no growth. */
	assert_int_equal(pci_write_config_dword(p, 0x80, 1),
			 PCIBIOS_SET_FAILED);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 64);
	assert_int_equal(pci_write_config_word(p, PCI_COMMAND, 0), 0);
}

static void test_ids_changed(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(0x1af4, 0x10) }, { 0 }
	};
	static struct pci_driver drv = { .name = "ids", .id_table = ids };
	struct pci_dev *p = scan_two();
	struct sums sibling = sums_of(OTHER);
	const uint16_t bad = 0x0bad;
	char en[4];

	(void)state;
	patch(DEV, "config", PCI_DEVICE_ID, &bad, 2);
	/* Reads of config still work: it is the device's own file. */
	try_writes(p, PCIBIOS_SUCCESSFUL, -ENODEV, ENODEV);
	assert_true(fake_read(DEV, "enable", en, sizeof(en)) >= 1);
	assert_int_equal(en[0], '0');
	/* The driver matched the scanned ids; probe refuses the device. */
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_false(device_is_bound(&p->dev));
	pci_unregister_driver(&drv);
	same_sums(sibling, sums_of(OTHER));
}

static void test_resource_n_symlink(void **state)
{
	struct pci_dev *p = scan_two();
	struct sums sibling = sums_of(OTHER);

	(void)state;
	to_symlink(DEV, "resource0", OTHER);
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, ELOOP);
	same_sums(sibling, sums_of(OTHER));
}

static void test_resource_n_replaced(void **state)
{
	struct pci_dev *p = scan_two();
	unsigned long copy;

	(void)state;
	to_copy(DEV, "resource0");
	copy = sum_of(DEV, "resource0");
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, ESTALE);
	assert_int_equal(sum_of(DEV, "resource0"), copy);
}

static void test_resource_n_shrunk(void **state)
{
	struct pci_dev *p = scan_two();
	char path[4096];

	(void)state;
	path_of(DEV, "resource0", path);
	assert_int_equal(truncate(path, 2048), 0);
	/* Mapped, the second page would raise SIGBUS. */
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, ESTALE);
	/* BAR 1 is untouched, and still maps. */
	void __iomem *m = pci_iomap(p, 1, 0);
	assert_non_null(m);
	pci_iounmap(p, m);
}

static void test_resource_line_changed(void **state)
{
	struct pci_dev *p = scan_two();
	char buf[4096];
	ssize_t n;

	(void)state;
	n = fake_read(DEV, "resource", buf, sizeof(buf));
	assert_true(n > 20);
	/* BAR 0 moves: the first line's start gets another digit. */
	buf[17] = buf[17] == '0' ? '1' : '0';
	patch(DEV, "resource", 0, buf, (size_t)n);
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, ESTALE);
	/* `resource` itself replaced: the same, whatever it holds. */
	n = fake_read(OTHER, "resource", buf, sizeof(buf));
	assert_int_equal(fake_write(DEV, "resource", buf, (size_t)n), 0);
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, ESTALE);
	to_symlink(DEV, "resource", OTHER);
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, ELOOP);
}

static void test_enable_changed(void **state)
{
	struct pci_dev *p = scan_two();
	struct sums sibling = sums_of(OTHER);

	(void)state;
	to_symlink(DEV, "enable", OTHER);
	try_writes(p, PCIBIOS_SUCCESSFUL, -ELOOP, 0);
	same_sums(sibling, sums_of(OTHER));
	assert_int_equal(fake_write(DEV, "enable", "z", 1), 0);
	try_writes(p, PCIBIOS_SUCCESSFUL, -ESTALE, 0);
	char en[4];
	assert_true(fake_read(DEV, "enable", en, sizeof(en)) >= 1);
	assert_int_equal(en[0], 'z');
}

static void test_dir_replaced(void **state)
{
	struct pci_dev *p = scan_two();
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);
	struct sums fresh;

	(void)state;
	/* The same address, ids and files, but not the device scanned. */
	assert_int_equal(pci_fake_remove(ft, DEV), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	fresh = sums_of(DEV);
	try_writes(p, PCIBIOS_SET_FAILED, -ENODEV, ENODEV);
	same_sums(fresh, sums_of(DEV));
	/* Gone altogether: the same. */
	assert_int_equal(pci_fake_remove(ft, DEV), 0);
	try_writes(p, PCIBIOS_SET_FAILED, -ENODEV, ENODEV);
	/* A rescan removes the old device and registers the new one. */
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 2);
	p = pci_get_device(0x1af4, 0x10, NULL);
	pci_dev_put(p);
	try_writes(p, PCIBIOS_SUCCESSFUL, 0, 0);
}

/*
 * A BAR without a resourceN file, placed by the tree over the program's
 * own register window: neither pci_iomap() nor pcim_iomap() maps it.
 */
static void test_bar_without_file(void **state)
{
	const phys_addr_t win = 0x7e0000000ull;
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);
	char line[128], path[4096];
	uint32_t *mem;
	struct pci_dev *p;
	int fd;

	(void)state;
	fd = memfd_create("program", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	mem = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(mem != MAP_FAILED);
	assert_int_equal(iomem_window_add(win, 4096, fd, 0, "program"), 0);

	assert_int_equal(pci_fake_add(ft, &d), 0);
	snprintf(line, sizeof(line), "0x%016llx 0x%016llx 0x%016x\n",
		 (unsigned long long)win, (unsigned long long)win + 4095,
		 0x40200);
	assert_int_equal(fake_write(DEV, "resource", line, strlen(line)), 0);
	path_of(DEV, "resource0", path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(0x1af4, 0x10, NULL);
	pci_dev_put(p);
	assert_int_equal(pci_resource_start(p, 0), win);

	errno = 0;
	assert_null(pci_iomap(p, 0, 0));
	assert_int_equal(errno, ENODEV);
	errno = 0;
	assert_null(pcim_iomap(p, 0, 0));
	assert_int_equal(errno, ENODEV);
	assert_true(pcim_iomap_regions(p, 1, "drv") < 0);
	/* Even made again after the scan, the file is not the scan's. */
	assert_int_equal(fake_write(DEV, "resource0", line, 0), 0);
	assert_int_equal(truncate(path, 4096), 0);
	assert_null(pci_iomap(p, 0, 0));
	assert_int_equal(errno, ENODEV);
	assert_int_equal(mem[0], 0);
	devres_release_all(&p->dev);
	pci_bus_remove_all();
	assert_int_equal(iomem_window_remove(win), 0);
	munmap(mem, 4096);
	close(fd);
}

static void test_readonly(void **state)
{
	struct pci_dev *p = scan_two();
	void __iomem *m0, *m1;
	char en[4];

	(void)state;
	assert_int_equal(pci_enable_device(p), 0);
	m0 = pcim_iomap(p, 0, 0);
	m1 = pci_iomap(p, 1, 0);
	assert_non_null(m0);
	assert_non_null(m1);
	writel(0x11, m0);
	assert_int_equal(tree_writable_maps(), 2);

	pci_sysfs_set_readonly(true);
	assert_int_equal(tree_writable_maps(), 0);
	/* Still readable. */
	assert_int_equal(readl(m0), 0x11);
	errno = 0;
	assert_null(pci_iomap(p, 0, 0));
	assert_int_equal(errno, EROFS);
	assert_int_equal(pcim_iomap_regions(p, 2, "drv"), -EROFS);
	assert_int_equal(pci_write_config_word(p, PCI_COMMAND, 0),
			 PCIBIOS_SET_FAILED);
	assert_int_equal(pci_enable_device(p), -EROFS);
	/* The last disable does not write `enable` either. */
	pci_disable_device(p);
	assert_false(pci_is_enabled(p));
	assert_true(fake_read(DEV, "enable", en, sizeof(en)) >= 1);
	assert_int_equal(en[0], '1');
	/* A rescan under read-only makes nothing writable either. */
	assert_int_equal(pci_bus_scan(), 2);
	assert_int_equal(tree_writable_maps(), 0);

	/* Back to read-write: what was made read-only stays so. */
	pci_sysfs_set_readonly(false);
	assert_int_equal(tree_writable_maps(), 0);
	pci_iounmap(p, m1);
	devres_release_all(&p->dev);
	assert_int_equal(tree_writable_maps(), 0);
}

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* The sysfs `irq` number is not the process's line of that number. */
static void test_irq_not_aliased(void **state)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);
	int cookie, line = irq_line_create("program");
	struct pci_dev *p;
	char text[16];

	(void)state;
	assert_true(line > 0);
	assert_int_equal(request_irq((unsigned int)line, handler, 0, "program",
				     &cookie),
			 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	snprintf(text, sizeof(text), "%d\n", line);
	assert_int_equal(fake_write(DEV, "irq", text, strlen(text)), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(0x1af4, 0x10, NULL);
	pci_dev_put(p);

	assert_int_equal(p->irq, 0);
	assert_int_equal(pci_irq_vector(p, 0), -EINVAL);
	assert_true(devm_request_irq(&p->dev, p->irq, handler, IRQF_SHARED,
				     "pci", p) < 0);
	devres_release_all(&p->dev);
	/* The program's line kept its one handler, not shared with PCI. */
	free_irq((unsigned int)line, &cookie);
	assert_int_equal(request_irq((unsigned int)line, handler, 0, "again",
				     &cookie),
			 0);
	free_irq((unsigned int)line, &cookie);

	/* A line the backend gives is pdev->irq; taking it back, 0 again. */
	assert_int_equal(pci_dev_set_irq_lines(p, &line, 1), 0);
	assert_int_equal(p->irq, (unsigned int)line);
	assert_int_equal(pci_dev_set_irq_lines(p, NULL, 0), 0);
	assert_int_equal(p->irq, 0);
	irq_line_destroy(line);
}

int main(int argc, char **argv)
{
#define T(f) cmocka_unit_test_setup_teardown(f, pci_setup, pci_teardown)
	const struct CMUnitTest tests[] = {
		T(test_config_symlink),	    T(test_config_replaced),
		T(test_config_shrunk),	    T(test_ids_changed),
		T(test_resource_n_symlink), T(test_resource_n_replaced),
		T(test_resource_n_shrunk),  T(test_resource_line_changed),
		T(test_enable_changed),	    T(test_dir_replaced),
		T(test_bar_without_file),   T(test_readonly),
		T(test_irq_not_aliased),
	};
#undef T

	(void)argc;
	(void)argv;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
