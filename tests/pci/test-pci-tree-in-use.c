// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan timeout=300 */
/*
 * The tree changes while the device is in use: bound to a driver that
 * enabled it, turned bus mastering on and mapped BAR 0, with a mapping of
 * BAR 1 of the program's own. Every mutation of the table is applied then,
 * and every call of the table that reads the tree runs after it, each pair
 * on a tree of its own. Whatever a call returns, after each pair:
 *  - no write reached the other device's files;
 *  - a mapping a call made is of the BAR's own file as the scan saw it
 *    (its inode, in /proc/self/maps) and of the BAR's size then, however
 *    the file or the `resource` line has grown;
 *  - a write through a mapping made before the change lands in the file
 *    it was made from; so do the release's writes (the disable, clearing
 *    mastering): never in a file put in its place;
 *  - no WARN, and once the devices are removed, nothing is left (ledger,
 *    fds).
 * Then the same calls race a thread that keeps swapping files under them
 * (TSan), and a file truncated under a live mapping: the library's own
 * calls never touch the mapping; the program's access faults (SIGBUS), as
 * docs/pci.md says.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <time.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"

#define DEV "0000:00:05.0"
#define OTHER "0000:00:06.0"
#define BAR_LEN 4096

/* DEV's files before the change, held open: where its writes belong. */
enum {
	O_CFG,
	O_RES0,
	O_RES1,
	O_EN,
	O_NR
};
static const char *const orig_names[O_NR] = { "config", "resource0",
					      "resource1", "enable" };
static int orig[O_NR];
static ino_t orig_ino[O_NR];

static struct pci_dev *pdev;
static void __iomem *mbar; /* the driver's BAR 0, made at probe */
static void __iomem *ubar; /* the program's BAR 1 */
static bool bar0_shrunk;   /* the mutation truncated BAR 0's file in place */
static int line;

/* dev_warn() lines name each stale file: expected here, by the hundred. */
static void quiet(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static void path_of(const char *name, const char *file, char *buf)
{
	assert_int_equal(pci_fake_path(ft, name, file, buf, 4096), 0);
}

static unsigned long sum_path(const char *path)
{
	unsigned char buf[512];
	unsigned long s = 5381;
	struct stat st;
	ssize_t n;
	int fd;

	if (lstat(path, &st) || !S_ISREG(st.st_mode))
		return (unsigned long)st.st_mode;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			s = s * 33 + buf[i];
	close(fd);
	return s;
}

/* Every file of OTHER a write could land in, and its directory's listing. */
static unsigned long other_sum(void)
{
	static const char *const files[] = { "config",	  "resource",
					     "resource0", "resource1",
					     "enable",	  "irq" };
	unsigned long s = 0;
	char path[4096];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		path_of(OTHER, files[i], path);
		s = s * 31 + sum_path(path);
	}
	return s;
}

static uint32_t orig_u32(int which, off_t off)
{
	uint32_t v = 0;

	assert_int_equal(pread(orig[which], &v, 4, off), 4);
	return v;
}

static char orig_enable(void)
{
	char c = 0;

	assert_int_equal(pread(orig[O_EN], &c, 1, 0), 1);
	return c;
}

/* --- the driver that has the device in use --- */

static int probe(struct pci_dev *p, const struct pci_device_id *id)
{
	(void)id;
	if (pcim_enable_device(p))
		return -EIO;
	pci_set_master(p);
	/* Atomic: in the race, the rescanning thread probes too. */
	__atomic_store_n(&mbar, pcim_iomap(p, 0, 0), __ATOMIC_RELEASE);
	return __atomic_load_n(&mbar, __ATOMIC_ACQUIRE) ? 0 : -errno;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(0x1af4, 0x10) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "in-use",
	.id_table = ids,
	.probe = probe,
};

static void prepare(void)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);
	struct pci_fake_dev o = fake_dev(OTHER, 0x1af4, 0x20, 2);
	char path[4096];
	struct stat st;

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_fake_add(ft, &o), 0);
	assert_int_equal(pci_bus_scan(), 2);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(pdev);
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_true(device_is_bound(&pdev->dev));
	ubar = pci_iomap(pdev, 1, 0);
	assert_non_null(ubar);
	for (int i = 0; i < O_NR; i++) {
		path_of(DEV, orig_names[i], path);
		orig[i] = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(orig[i] >= 0);
		assert_int_equal(fstat(orig[i], &st), 0);
		orig_ino[i] = st.st_ino;
	}
	assert_int_equal(orig_enable(), '1');
	assert_true(orig_u32(O_CFG, PCI_COMMAND) & PCI_COMMAND_MASTER);
	line = irq_line_create("in-use");
	assert_true(line > 0);
	bar0_shrunk = false;
}

static void finish(void)
{
	pci_iounmap(pdev, ubar);
	pci_unregister_driver(&drv);
	/* Released, wherever the tree now is: disabled in its own file. */
	assert_int_equal(orig_enable(), '0');
	assert_false(orig_u32(O_CFG, PCI_COMMAND) & PCI_COMMAND_MASTER);
	pci_dev_put(pdev);
	assert_int_equal(irq_line_destroy(line), 0);
	for (int i = 0; i < O_NR; i++)
		close(orig[i]);
}

/*
 * The inode and length of the mapping at @addr, from /proc/self/maps;
 * false when none covers it.
 */
static bool map_of(const void *addr, ino_t *ret_ino, size_t *ret_len)
{
	unsigned long lo, hi, ino;
	char line_buf[8192];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	assert_non_null(f);
	while (!found && fgets(line_buf, sizeof(line_buf), f)) {
		if (sscanf(line_buf, "%lx-%lx %*s %*s %*s %lu", &lo, &hi,
			   &ino) != 3)
			continue;
		if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			*ret_ino = (ino_t)ino;
			*ret_len = hi - lo;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* A mapping a call made: of @bar's own file as scanned, at its size. */
static void check_new_map(void __iomem *m, int bar)
{
	ino_t ino;
	size_t len;

	assert_true(map_of(m, &ino, &len));
	assert_int_equal(ino, orig_ino[bar ? O_RES1 : O_RES0]);
	assert_int_equal(len, BAR_LEN);
	writel(0xc0de0000u | (unsigned int)bar, m);
	assert_int_equal(orig_u32(bar ? O_RES1 : O_RES0, 0),
			 0xc0de0000u | (unsigned int)bar);
}

/* --- the mutations --- */

static void replace_with_file(const char *file, off_t size)
{
	char path[4096];
	int fd;

	path_of(DEV, file, path);
	assert_int_equal(unlink(path), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

static void m_res0_removed(void)
{
	char path[4096];

	path_of(DEV, "resource0", path);
	assert_int_equal(unlink(path), 0);
}

static void m_res0_symlink(void)
{
	char path[4096], dest[4096];

	path_of(DEV, "resource0", path);
	path_of(OTHER, "resource0", dest);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(dest, path), 0);
}

static void m_res0_bigger_file(void)
{
	replace_with_file("resource0", 4 * BAR_LEN);
}

static void m_res0_smaller_file(void)
{
	replace_with_file("resource0", BAR_LEN / 4);
}

static void m_res0_truncated(void)
{
	char path[4096];

	path_of(DEV, "resource0", path);
	assert_int_equal(truncate(path, BAR_LEN / 4), 0);
	bar0_shrunk = true;
}

static void m_res0_emptied(void)
{
	char path[4096];

	path_of(DEV, "resource0", path);
	assert_int_equal(truncate(path, 0), 0);
	bar0_shrunk = true;
}

static void m_res0_grown(void)
{
	char path[4096];

	path_of(DEV, "resource0", path);
	assert_int_equal(truncate(path, 16 * BAR_LEN), 0);
}

static void m_res0_fifo(void)
{
	char path[4096];

	path_of(DEV, "resource0", path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
}

static void m_res0_dir(void)
{
	char path[4096];

	path_of(DEV, "resource0", path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void m_config_shrunk(void)
{
	char path[4096];

	path_of(DEV, "config", path);
	assert_int_equal(truncate(path, 32), 0);
}

static void m_config_unreadable(void)
{
	char path[4096];

	path_of(DEV, "config", path);
	assert_int_equal(chmod(path, 0), 0);
}

static void m_config_copy(void)
{
	char path[4096], tmp[4200];
	uint8_t buf[256];
	ssize_t n;

	path_of(DEV, "config", path);
	n = pread(orig[O_CFG], buf, sizeof(buf), 0);
	assert_true(n >= 64);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	assert_int_equal(fake_write(DEV, "config.new", buf, (size_t)n), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void m_config_fifo(void)
{
	char path[4096];

	path_of(DEV, "config", path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
}

/* BAR 0's line made OTHER's: the windows overlap. */
static void m_resource_overlap(void)
{
	char mine[1024], theirs[1024], out[2048];
	char *nl;

	assert_true(fake_read(DEV, "resource", mine, sizeof(mine)) > 0);
	assert_true(fake_read(OTHER, "resource", theirs, sizeof(theirs)) > 0);
	nl = strchr(theirs, '\n');
	assert_non_null(nl);
	nl[1] = 0;
	snprintf(out, sizeof(out), "%s%s", theirs, strchr(mine, '\n') + 1);
	assert_int_equal(fake_overwrite(DEV, "resource", out, strlen(out)), 0);
}

/* BAR 0's line made 1 TiB long. */
static void m_resource_huge(void)
{
	char mine[1024], out[2048];
	unsigned long long start, end, flags;

	assert_true(fake_read(DEV, "resource", mine, sizeof(mine)) > 0);
	assert_int_equal(sscanf(mine, "%llx %llx %llx", &start, &end, &flags),
			 3);
	snprintf(out, sizeof(out), "0x%016llx 0x%016llx 0x%016llx\n%s", start,
		 start + (1ull << 40) - 1, flags, strchr(mine, '\n') + 1);
	assert_int_equal(fake_overwrite(DEV, "resource", out, strlen(out)), 0);
}

static void m_irq_changed(void)
{
	assert_int_equal(fake_overwrite(DEV, "irq", "99\n", 3), 0);
}

static void m_driver_link(void)
{
	char path[4096];

	path_of(DEV, "driver", path);
	unlink(path);
	assert_int_equal(symlink("../../bus/pci/drivers/vfio-pci", path), 0);
}

static void m_dir_other_device(void)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x30, 2);

	assert_int_equal(pci_fake_remove(ft, DEV), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
}

static void m_dir_same_ids(void)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);

	assert_int_equal(pci_fake_remove(ft, DEV), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
}

static void m_dir_removed(void)
{
	assert_int_equal(pci_fake_remove(ft, DEV), 0);
}

struct mutation {
	const char *name;
	void (*apply)(void);
};

static const struct mutation mutations[] = {
	{ "resource0 removed", m_res0_removed },
	{ "resource0 a symlink to the other's", m_res0_symlink },
	{ "resource0 another, larger file", m_res0_bigger_file },
	{ "resource0 another, smaller file", m_res0_smaller_file },
	{ "resource0 truncated in place", m_res0_truncated },
	{ "resource0 emptied in place", m_res0_emptied },
	{ "resource0 grown in place", m_res0_grown },
	{ "resource0 a FIFO", m_res0_fifo },
	{ "resource0 a directory", m_res0_dir },
	{ "config shrunk in place", m_config_shrunk },
	{ "config mode 0", m_config_unreadable },
	{ "config another file", m_config_copy },
	{ "config a FIFO", m_config_fifo },
	{ "resource: BAR 0 over the other's", m_resource_overlap },
	{ "resource: BAR 0 of 1 TiB", m_resource_huge },
	{ "irq changed", m_irq_changed },
	{ "driver link changed", m_driver_link },
	{ "directory: another device", m_dir_other_device },
	{ "directory: made again, same ids", m_dir_same_ids },
	{ "directory removed", m_dir_removed },
};

/* --- the calls --- */

static void c_rescan(void)
{
	int n = pci_bus_scan();

	assert_true(n == 1 || n == 2);
}

static void c_scan_device(void)
{
	int ret = pci_bus_scan_device(DEV);

	assert_true(ret == -EEXIST || ret == 0 || ret == -ENOENT ||
		    ret == -EINVAL || ret == -ENODATA || ret == -ELOOP);
}

/* From disabled: the enable opens and checks the files now. */
static void c_enable(void)
{
	int ret;

	device_release_driver(&pdev->dev);
	assert_int_equal(orig_enable(), '0');
	ret = pci_enable_device(pdev);
	if (ret) {
		assert_true(ret == -ENODEV || ret == -ESTALE || ret == -ELOOP ||
			    ret == -ENOENT);
		return;
	}
	/* Only the file the scan saw: the original is the one enabled. */
	assert_int_equal(orig_enable(), '1');
	pci_set_master(pdev);
	pci_disable_device(pdev);
	assert_int_equal(orig_enable(), '0');
}

static void c_iomap(void)
{
	for (int bar = 0; bar < 2; bar++) {
		void __iomem *m = pci_iomap(pdev, bar, 0);

		if (!m) {
			assert_true(errno == ENODEV || errno == ESTALE ||
				    errno == ELOOP || errno == ENOENT ||
				    errno == EINVAL);
			continue;
		}
		check_new_map(m, bar);
		pci_iounmap(pdev, m);
	}
}

static void c_pcim_iomap(void)
{
	void __iomem *m = pcim_iomap(pdev, 1, 0);

	if (m)
		check_new_map(m, 1);
	else
		assert_true(errno == ENODEV || errno == ESTALE ||
			    errno == ELOOP || errno == ENOENT ||
			    errno == EBUSY);
}

static void c_config(void)
{
	uint32_t v;
	int ret;

	ret = pci_read_config_dword(pdev, PCI_VENDOR_ID, &v);
	if (ret)
		assert_int_equal(v, ~0u);
	ret = pci_write_config_dword(pdev, 0x40, 0x41424344);
	/* Written: into the file the scan saw, nowhere else. */
	if (!ret)
		assert_int_equal(orig_u32(O_CFG, 0x40), 0x41424344);
}

static void c_regions(void)
{
	int ret = pcim_request_all_regions(pdev, "in-use");

	assert_true(ret == 0 || ret == -EBUSY);
}

static irqreturn_t on_irq(int irq, void *arg)
{
	(void)irq;
	(void)arg;
	return IRQ_HANDLED;
}

static void c_irq(void)
{
	int n, irq;

	assert_int_equal(pci_dev_set_irq_lines(pdev, &line, 1), 0);
	n = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_ALL_TYPES);
	assert_int_equal(n, 1);
	irq = pci_irq_vector(pdev, 0);
	/* The process's own line, whatever `irq` says now. */
	assert_int_equal(irq, line);
	assert_int_equal(pdev->irq, (unsigned int)line);
	assert_int_equal(
		request_irq((unsigned int)irq, on_irq, 0, "in-use", pdev), 0);
	free_irq((unsigned int)irq, pdev);
	pci_free_irq_vectors(pdev);
}

static void c_unbind(void)
{
	device_release_driver(&pdev->dev);
	assert_int_equal(orig_enable(), '0');
	assert_false(orig_u32(O_CFG, PCI_COMMAND) & PCI_COMMAND_MASTER);
}

static void c_remove(void)
{
	pci_bus_remove_all();
	assert_int_equal(orig_enable(), '0');
}

struct call {
	const char *name;
	void (*run)(void);
};

static const struct call calls[] = {
	{ "pci_bus_scan", c_rescan },
	{ "pci_bus_scan_device", c_scan_device },
	{ "pci_enable_device", c_enable },
	{ "pci_iomap", c_iomap },
	{ "pcim_iomap", c_pcim_iomap },
	{ "config read/write", c_config },
	{ "pcim_request_all_regions", c_regions },
	{ "irq vectors", c_irq },
	{ "unbind", c_unbind },
	{ "pci_bus_remove_all", c_remove },
};

/* The mappings made before the change still reach their own files. */
static void check_old_maps(void)
{
	writel(0x0b1d0001, ubar);
	assert_int_equal(orig_u32(O_RES1, 0), 0x0b1d0001);
	/* Truncated in place: that access would fault (see below). */
	if (bar0_shrunk || !device_is_bound(&pdev->dev))
		return;
	writel(0x0b1d0000, mbar);
	assert_int_equal(orig_u32(O_RES0, 0), 0x0b1d0000);
}

static void test_table(void **state)
{
	size_t nm = sizeof(mutations) / sizeof(mutations[0]);
	size_t nc = sizeof(calls) / sizeof(calls[0]);

	(void)state;
	for (size_t m = 0; m < nm; m++) {
		for (size_t c = 0; c < nc; c++) {
			int warns, fds = count_open_fds();
			unsigned long theirs;

			assert_int_equal(pci_setup(NULL), 0);
			prepare();
			theirs = other_sum();
			warns = devres_warn_count();
			devres_set_log_sink(quiet, NULL);
			mutations[m].apply();
			if (getenv("TREE_VERBOSE"))
				print_message("%s x %s\n", mutations[m].name,
					      calls[c].name);
			calls[c].run();
			check_old_maps();
			assert_int_equal(other_sum(), theirs);
			assert_int_equal(devres_warn_count(), warns);
			finish();
			assert_int_equal(other_sum(), theirs);
			assert_int_equal(pci_teardown(NULL), 0);
			assert_int_equal(count_open_fds(), fds);
		}
	}
}

/*
 * A file truncated under a live mapping. The library never reads or
 * writes through a BAR mapping itself: its calls, the release of the
 * driver's mapping and the removal all run as usual. The program's own
 * access past the new end faults with SIGBUS, as with any mapped file
 * (sysfs resourceN files cannot shrink; a fake or hostile tree's can).
 */
static void test_truncated_under_mapping(void **state)
{
	void __iomem *u0;
	uint32_t v;
	int status;
	pid_t pid;

	(void)state;
	prepare();
	u0 = pci_iomap(pdev, 0, 0);
	assert_non_null(u0);
	devres_set_log_sink(quiet, NULL);
	/* Not a page left: within the last page, a read past the end is 0. */
	m_res0_emptied();
	assert_int_equal(pci_bus_scan(), 2);
	assert_null(pci_iomap(pdev, 0, 0));
	assert_int_equal(errno, ESTALE);
	assert_null(pcim_iomap(pdev, 0, 0));
	assert_int_equal(pci_read_config_dword(pdev, PCI_VENDOR_ID, &v), 0);
	device_release_driver(&pdev->dev);
	assert_int_equal(device_driver_attach(&drv.driver, &pdev->dev),
			 -ESTALE);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGBUS, SIG_DFL);
		_exit((int)readl(u0) == 0x7777 ? 2 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
#if defined(T_ASAN) || defined(T_TSAN)
	/* A sanitizer may report the fault and exit instead. */
	assert_true((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
		    (WIFEXITED(status) && WEXITSTATUS(status) == 1));
#else
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
#endif
	pci_iounmap(pdev, u0);
	pci_bus_remove_all();
	finish();
}

/* --- the same under a racing tree --- */

#define RACE_ROUNDS 200

static int race_stop;

static void swap_back(const char *file, const char *keep)
{
	char path[4096], kept[4096];

	path_of(DEV, file, path);
	path_of(DEV, keep, kept);
	(void)unlink(path);
	assert_int_equal(link(kept, path), 0);
}

static void *mutator(void *arg)
{
	char dir[4096], away[4200], res0[4096], cfg[4096], there[4096];

	(void)arg;
	path_of(DEV, NULL, dir);
	snprintf(away, sizeof(away), "%s.away", dir);
	path_of(DEV, "resource0", res0);
	path_of(DEV, "config", cfg);
	path_of(OTHER, "resource0", there);
	for (unsigned int i = 0; !__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE);
	     i++) {
		switch (i % 4) {
		case 0:
			(void)unlink(res0);
			assert_int_equal(symlink(there, res0), 0);
			swap_back("resource0", "resource0.keep");
			break;
		case 1:
			(void)unlink(cfg);
			assert_int_equal(mkfifo(cfg, 0644), 0);
			swap_back("config", "config.keep");
			break;
		case 2:
			assert_int_equal(rename(dir, away), 0);
			assert_int_equal(rename(away, dir), 0);
			break;
		default:
			(void)truncate(res0, 16 * BAR_LEN);
			(void)truncate(res0, BAR_LEN);
			break;
		}
	}
	return NULL;
}

static void *scanner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE))
		assert_true(pci_bus_scan() >= 1);
	return NULL;
}

static void test_race(void **state)
{
	char path[4096], kept[4200];
	pthread_t mt, st;
	unsigned long theirs;

	(void)state;
	prepare();
	for (int i = 0; i < 2; i++) {
		const char *f = i ? "config" : "resource0";

		path_of(DEV, f, path);
		snprintf(kept, sizeof(kept), "%s.keep", path);
		assert_int_equal(link(path, kept), 0);
	}
	theirs = other_sum();
	devres_set_log_sink(quiet, NULL);
	assert_int_equal(pthread_create(&mt, NULL, mutator, NULL), 0);
	assert_int_equal(pthread_create(&st, NULL, scanner, NULL), 0);
	for (int r = 0; r < RACE_ROUNDS; r++) {
		void __iomem *m = pci_iomap(pdev, r & 1, 0);
		ino_t ino;
		size_t len;

		if (m) {
			/* Of its own file, at its size, whatever the moment. */
			assert_true(map_of(m, &ino, &len));
			assert_int_equal(ino,
					 orig_ino[r & 1 ? O_RES1 : O_RES0]);
			assert_int_equal(len, BAR_LEN);
			pci_iounmap(pdev, m);
		}
		if (!pci_enable_device(pdev))
			pci_disable_device(pdev);
		(void)pci_write_config_dword(pdev, 0x40, (uint32_t)r);
		/* Releases (through the kept files) and probes race too. */
		if (r % 8 == 0) {
			device_release_driver(&pdev->dev);
			(void)device_driver_attach(&drv.driver, &pdev->dev);
		}
	}
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(mt, NULL), 0);
	assert_int_equal(pthread_join(st, NULL), 0);
	assert_int_equal(other_sum(), theirs);
	pci_bus_remove_all();
	finish();
}

/* --- a UIO device whose node and sysfs entry go while it is bound --- */

static struct fake_uio fu = { -1, -1 };
static int uio_irqs;

static irqreturn_t uio_irq(int irq, void *arg)
{
	(void)irq;
	(void)arg;
	__atomic_add_fetch(&uio_irqs, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static int uio_probe(struct pci_dev *p, const struct pci_device_id *id)
{
	int ret;

	(void)id;
	ret = pcim_enable_device(p);
	if (ret)
		return ret;
	pci_set_master(p);
	ret = pci_alloc_irq_vectors(p, 1, 1, PCI_IRQ_INTX);
	if (ret < 0)
		return ret;
	return devm_request_irq(&p->dev, (unsigned int)pci_irq_vector(p, 0),
				uio_irq, 0, "in-use-uio", p);
}

static const struct pci_device_id uio_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x40) },
	{ 0 },
};

static struct pci_driver uio_drv = {
	.name = "in-use-uio",
	.id_table = uio_ids,
	.probe = uio_probe,
};

static long cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/*
 * The node hangs up (the device went) and its sysfs entries and the
 * /dev stand-in are removed while the driver has it: the interrupt line is
 * dropped from the dispatcher instead of waking it for ever, a rescan
 * keeps the device (its directory is the same), and unbind and removal
 * run clean. Last: pci_uio_enable() holds for the rest of the process.
 */
static void test_uio_node_gone(void **state)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x40, 1);
	char path[4200];
	struct pci_dev *p;
	long before;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(uio_dir_make(), 0);
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(DEV, 4, &fu), 0);
	assert_int_equal(pci_bus_scan_device(DEV), 0);
	p = pci_get_device(0x1af4, 0x40, NULL);
	assert_true(pci_dev_is_uio(p));
	assert_int_equal(pci_register_driver(&uio_drv), 0);
	assert_true(device_is_bound(&p->dev));
	assert_int_equal(uio_fire(DEV, &fu, 1), 0);
	for (int i = 0;
	     i < 2000 && !__atomic_load_n(&uio_irqs, __ATOMIC_RELAXED); i++)
		poll(NULL, 0, 1);
	assert_int_equal(__atomic_load_n(&uio_irqs, __ATOMIC_RELAXED), 1);
	/*
	 * The unmask after that handler read config space with the line's
	 * lock held: fork()'s handlers must take the PCI list lock after the
	 * line table's (TSan: lock-order inversion otherwise).
	 */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	devres_set_log_sink(quiet, NULL);
	fake_uio_close(&fu);
	snprintf(path, sizeof(path), "%s/uio4", uio_dir);
	assert_int_equal(unlink(path), 0);
	path_of(DEV, "uio/uio4/dev", path);
	assert_int_equal(unlink(path), 0);
	before = cpu_ms();
	poll(NULL, 0, 300);
	/* A hung-up fd left in the dispatcher's epoll would spin it. */
	assert_true(cpu_ms() - before < 100);
	assert_int_equal(pci_bus_scan(), 1);
	assert_true(device_is_bound(&p->dev));
	pci_unregister_driver(&uio_drv);
	assert_false(device_is_bound(&p->dev));
	pci_dev_put(p);
	pci_bus_remove_all();
	uio_dir_remove();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_truncated_under_mapping,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_race, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_uio_node_gone, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
