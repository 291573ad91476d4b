// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * Every file of a function the library reads at a use, changed between
 * the scan and that use, in each way a hostile tree can: replaced by a
 * symlink to the other function's file or to a regular file outside the
 * tree, by a hard link to the other function's file, grown, shrunk, made
 * a FIFO or a directory, removed. A table of (change) x (file, use), each
 * cell in a child of its own with an alarm: no cell hangs (a FIFO opened
 * for reading) or crashes; none writes through the other function's file
 * or the file outside; a use of a file that is no longer the one scanned
 * (or is too short for what it holds) fails with its error. A file only
 * grown is still the scanned one, and its use may go on; so may an access
 * of config space that a shrunk file still holds (docs/pci.md: each
 * access is checked against the file as it is then).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/io.h>
#include "testlib.h"
#include "pcitest.h"
#include "hostile/cell-child.h"

#define DEV "0000:00:09.0"
#define OTHER "0000:00:0a.0"
#define OUTSIDE_LEN 16384

enum change {
	SYMLINK_OTHER,
	SYMLINK_OUTSIDE,
	HARDLINK_OTHER,
	GROWN,
	SHRUNK,
	FIFO,
	DIRECTORY,
	REMOVED,
	NR_CHANGES
};

static const char *const change_names[NR_CHANGES] = {
	"symlink to the other's",
	"symlink outside",
	"hard link to the other's",
	"grown",
	"shrunk",
	"FIFO",
	"directory",
	"removed",
};

/* A use: 0 when it went through, else its error (or 1 for one). */
struct use {
	const char *name;
	const char *file;
	int (*use)(struct pci_dev *pdev);
	/* Whether a grown or shrunk file is still one it may go on with. */
	bool grown_ok, shrunk_ok;
};

static int use_pci_iomap(struct pci_dev *pdev)
{
	void __iomem *m = pci_iomap(pdev, 0, 0);

	if (!m)
		return errno ? errno : 1;
	writel(0x5a5a5a5a, m);
	pci_iounmap(pdev, m);
	return 0;
}

static int use_pcim_iomap(struct pci_dev *pdev)
{
	void __iomem *m = pcim_iomap(pdev, 0, 0);

	if (!m)
		return errno ? errno : 1;
	writel(0x5a5a5a5a, m);
	pcim_iounmap(pdev, m);
	return 0;
}

static int use_pcim_iomap_regions(struct pci_dev *pdev)
{
	int ret = pcim_iomap_regions(pdev, 1 << 0, "toctou");

	if (ret)
		return ret;
	writel(0x5a5a5a5a, pcim_iomap_table(pdev)[0]);
	(void)devres_release_all(&pdev->dev);
	return 0;
}

static int use_read_config(struct pci_dev *pdev)
{
	uint32_t v = 0;

	return pci_read_config_dword(pdev, PCI_VENDOR_ID, &v);
}

/* The last dword the scan saw: past the end of a shrunk file. */
static int use_read_config_end(struct pci_dev *pdev)
{
	uint32_t v = 0;

	return pci_read_config_dword(pdev, pdev->cfg_size - 4, &v);
}

static int use_write_config(struct pci_dev *pdev)
{
	return pci_write_config_dword(pdev, 0x40, 0x5a5a5a5a);
}

static int use_enable(struct pci_dev *pdev)
{
	int ret = pci_enable_device(pdev);

	if (!ret)
		pci_disable_device(pdev);
	return ret;
}

static const struct use uses[] = {
	{ "resource0: pci_iomap", "resource0", use_pci_iomap, true, false },
	{ "resource0: pcim_iomap", "resource0", use_pcim_iomap, true, false },
	{ "resource0: pcim_iomap_regions", "resource0", use_pcim_iomap_regions,
	  true, false },
	{ "resource: pci_iomap", "resource", use_pci_iomap, true, false },
	{ "resource: pcim_iomap_regions", "resource", use_pcim_iomap_regions,
	  true, false },
	{ "config: pci_read_config_dword", "config", use_read_config, true,
	  true },
	{ "config: pci_read_config_dword at its end", "config",
	  use_read_config_end, true, false },
	{ "config: pci_write_config_dword", "config", use_write_config, true,
	  true },
	{ "config: pci_enable_device", "config", use_enable, true, true },
	{ "enable: pci_enable_device", "enable", use_enable, true, true },
};

#define NR_USES ((int)(sizeof(uses) / sizeof(uses[0])))

static const char *use_names[NR_USES];

/* The whole of file @path into @buf (at most @len bytes); its length. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len);
	close(fd);
	return n;
}

static int change_file(enum change c, const char *p, const char *o,
		       const char *x)
{
	struct stat st;

	if (stat(p, &st))
		return -1;
	switch (c) {
	case SYMLINK_OTHER:
		return unlink(p) || symlink(o, p);
	case SYMLINK_OUTSIDE:
		return unlink(p) || symlink(x, p);
	case HARDLINK_OTHER:
		return unlink(p) || link(o, p);
	case GROWN:
		return truncate(p, st.st_size + 8192);
	case SHRUNK:
		return truncate(p, st.st_size / 2);
	case FIFO:
		return unlink(p) || mkfifo(p, 0600);
	case DIRECTORY:
		return unlink(p) || mkdir(p, 0700);
	case REMOVED:
		return unlink(p);
	default:
		return -1;
	}
}

/*
 * One cell, in its child: two functions scanned, @u's file of DEV changed,
 * the use made. Exit status 0 when it held; a message names what did not.
 */
static int cell(int row, int col)
{
	static char before_o[OUTSIDE_LEN], after_o[OUTSIDE_LEN];
	static char before_x[OUTSIDE_LEN], after_x[OUTSIDE_LEN];
	const struct use *u = &uses[col];
	enum change c = (enum change)row;
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);
	struct pci_fake_dev od = fake_dev(OTHER, 0x1af4, 0x20, 1);
	char p[4096], o[4096], x[] = "/tmp/devres-toctou-XXXXXX";
	ssize_t no, nx;
	struct pci_dev *pdev;
	bool may;
	int fd, ret;

	alarm(10);
	if (pci_setup(NULL))
		return 2;
	d.bar_size[0] = od.bar_size[0] = 8192;
	fd = mkstemp(x);
	if (fd < 0 || ftruncate(fd, OUTSIDE_LEN) || pci_fake_add(ft, &d) ||
	    pci_fake_add(ft, &od) || pci_bus_scan() != 2)
		return 3;
	close(fd);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	if (!pdev)
		return 4;
	if (pci_fake_path(ft, DEV, u->file, p, sizeof(p)) ||
	    pci_fake_path(ft, OTHER, u->file, o, sizeof(o)))
		return 5;
	no = slurp(o, before_o, sizeof(before_o));
	nx = slurp(x, before_x, sizeof(before_x));
	if (change_file(c, p, o, x))
		return 6;
	ret = u->use(pdev);
	may = (c == GROWN && u->grown_ok) || (c == SHRUNK && u->shrunk_ok);
	if (slurp(o, after_o, sizeof(after_o)) != no ||
	    memcmp(before_o, after_o, (size_t)no) != 0) {
		fprintf(stderr, "%s / %s: the other's %s written\n",
			change_names[c], u->name, u->file);
		return 7;
	}
	if (slurp(x, after_x, sizeof(after_x)) != nx ||
	    memcmp(before_x, after_x, (size_t)nx) != 0) {
		fprintf(stderr, "%s / %s: the file outside written\n",
			change_names[c], u->name);
		return 8;
	}
	if (!ret && !may) {
		fprintf(stderr, "%s / %s: the use went through\n",
			change_names[c], u->name);
		return 9;
	}
	pci_dev_put(pdev);
	unlink(x);
	return pci_teardown(NULL) ? 10 : 0;
}

static void every_change_every_use(void **state)
{
	(void)state;
	for (int i = 0; i < NR_USES; i++)
		use_names[i] = uses[i].name;
	run_cells_in_children(cell, change_names, NR_CHANGES, use_names,
			      NR_USES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_change_every_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
