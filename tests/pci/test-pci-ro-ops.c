// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan white-box timeout=120 */
/*
 * Read-only mode against every operation of a backend (struct
 * pci__backend), as a table: each operation, driven by the public call
 * that reaches it (a row), times when the mode is set (a column):
 *
 * - "off": the call goes through, the operation is called once, and a
 *   writing operation writes the device (here: a letter into the fake
 *   tree's file `bk` of the device).
 * - "on": the mode set first. A read is made; a write is refused (its
 *   row's errno) and a release is not made: the operation is not called
 *   and the tree's bytes are those of before; a detach is made (it frees
 *   what the backend holds) and writes nothing here.
 * - "in flight": the operation is parked inside the backend, past the
 *   library's check of the mode, and pci_sysfs_set_readonly(true) is
 *   called on another thread. A read is not waited for: the switch
 *   returns while it is parked. Anything else is: the switch sleeps
 *   until it has landed, so nothing is written after it returns.
 *
 * In every cell: no WARN (read-only mode is not a misuse), and the count
 * of writes in flight is back at zero (a last switch returns at once
 * under the cell's alarm). VFIO itself runs only inside the VM of
 * tests/vm/run.sh: the backend here is a fake of its operations, on the
 * fake tree. Each cell runs in a child of its own, on a tree of its own.
 * Also: every operation has a class (the table of src/pci/bkops.c).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/pci.h"
#include "hostile/cell-child.h"
#include "pci/ro-cell.h"

#define DEV "0000:00:06.0"
#define VENDOR 0x1af4
#define DEVICE 0x1041
#define WAIT_MS 5000
#define NLINES 2

static const char *cell_name = "";

/* The fake backend: which operation parks, and what each did. */
static struct {
	int take;
	int park_op; /* PCI_BK_NR: none */
	sem_t parked, go;
	int calls[PCI_BK_NR];
	struct ro_switch sw;
	int bar_fd;
	int lines[NLINES];
} bk;

/* Parks the operation @op when it is the one armed; once. */
static void park_point(enum pci__bk_op op)
{
	__atomic_add_fetch(&bk.calls[op], 1, __ATOMIC_SEQ_CST);
	if (!__atomic_compare_exchange_n(&bk.park_op, &(int){ (int)op },
					 PCI_BK_NR, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return;
	sem_post(&bk.parked);
	while (sem_wait(&bk.go) < 0)
		;
}

/* What the operation did to the device lands: one letter in `bk`. */
static void landed(char letter)
{
	char path[4096];
	int fd;

	if (!pci_fake_path(ft, DEV, "bk", path, sizeof(path))) {
		fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			(void)!write(fd, &letter, 1);
			close(fd);
		}
	}
	__atomic_store_n(&bk.sw.landed,
			 __atomic_add_fetch(&bk.sw.seq, 1, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
}

static int f_attach(struct pci_dev *pdev, void **ret_data)
{
	(void)pdev;
	*ret_data = NULL;
	if (!__atomic_load_n(&bk.take, __ATOMIC_SEQ_CST))
		return -ENODEV;
	park_point(PCI_BK_ATTACH);
	landed('A');
	return 0;
}

/* Frees what the backend holds: writes nothing to the device here. */
static void f_detach(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	(void)data;
	park_point(PCI_BK_DETACH);
	__atomic_store_n(&bk.sw.landed,
			 __atomic_add_fetch(&bk.sw.seq, 1, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
}

static int f_bar_window(struct pci_dev *pdev, void *data, int bar, int *ret_fd,
			off_t *ret_off, uint64_t *ret_size)
{
	(void)pdev;
	(void)data;
	(void)bar;
	park_point(PCI_BK_BAR_WINDOW);
	landed('W');
	*ret_fd = bk.bar_fd;
	*ret_off = 0;
	*ret_size = 4096;
	return 0;
}

static int f_cfg_read(const struct pci_dev *pdev, void *data, int where,
		      int size, uint32_t *val)
{
	char path[4096];
	uint8_t b[4] = { 0 };
	int fd;

	(void)pdev;
	(void)data;
	park_point(PCI_BK_CFG_READ);
	/* The device's config space: the tree's file, as the scan read. */
	if (pci_fake_path(ft, DEV, "config", path, sizeof(path)))
		return PCIBIOS_DEVICE_NOT_FOUND;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PCIBIOS_DEVICE_NOT_FOUND;
	if (pread(fd, b, (size_t)size, where) != size) {
		close(fd);
		return PCIBIOS_DEVICE_NOT_FOUND;
	}
	close(fd);
	*val = 0;
	for (int i = size - 1; i >= 0; i--)
		*val = *val << 8 | b[i];
	__atomic_store_n(&bk.sw.landed,
			 __atomic_add_fetch(&bk.sw.seq, 1, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
	return PCIBIOS_SUCCESSFUL;
}

static int f_cfg_write(const struct pci_dev *pdev, void *data, int where,
		       int size, uint32_t val)
{
	(void)pdev;
	(void)data;
	(void)where;
	(void)size;
	(void)val;
	park_point(PCI_BK_CFG_WRITE);
	landed('C');
	return PCIBIOS_SUCCESSFUL;
}

static int f_enable(struct pci_dev *pdev, void *data, bool on)
{
	(void)pdev;
	(void)data;
	park_point(on ? PCI_BK_ENABLE : PCI_BK_DISABLE);
	landed(on ? 'E' : 'e');
	return 0;
}

static int f_alloc(struct pci_dev *pdev, void *data, unsigned int min_vecs,
		   unsigned int max_vecs, unsigned int flags,
		   unsigned int *ret_type)
{
	(void)data;
	(void)min_vecs;
	(void)max_vecs;
	(void)flags;
	park_point(PCI_BK_ALLOC_IRQ_VECTORS);
	if (pci_dev_set_irq_lines(pdev, bk.lines, NLINES))
		return -EINVAL;
	landed('V');
	*ret_type = PCI_IRQ_MSIX;
	return NLINES;
}

static void f_free(struct pci_dev *pdev, void *data)
{
	(void)data;
	park_point(PCI_BK_FREE_IRQ_VECTORS);
	(void)pci_dev_set_irq_lines(pdev, NULL, 0);
	landed('v');
}

static int f_reset(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	(void)data;
	park_point(PCI_BK_RESET);
	landed('R');
	return 0;
}

static void f_quiesce(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	(void)data;
	park_point(PCI_BK_QUIESCE);
	landed('Q');
}

static const struct pci__backend fake_backend = {
	.name = "ro-ops",
	.attach = f_attach,
	.detach = f_detach,
	.bar_window = f_bar_window,
	.cfg_read = f_cfg_read,
	.cfg_write = f_cfg_write,
	.enable = f_enable,
	.alloc_irq_vectors = f_alloc,
	.free_irq_vectors = f_free,
	.reset = f_reset,
	.quiesce = f_quiesce,
};

/* A driver that binds the device, for the quiesce of its unbind. */
static int drv_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)pdev;
	(void)id;
	return 0;
}

static const struct pci_device_id drv_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "ro-ops",
	.id_table = drv_ids,
	.probe = drv_probe,
};

/*
 * The rows' calls, each 0 when it went through, or a negative errno
 * (-EIO for a PCIBIOS code). *@pp is the device, NULL before the scan.
 */
static int u_scan(struct pci_dev **pp)
{
	if (pci_bus_scan() != 1)
		return -EIO;
	*pp = pci_get_device(VENDOR, DEVICE, NULL);
	if (!*pp)
		return -EIO;
	return pci__backend_of(*pp) == &fake_backend ? 0 : -EROFS;
}

static int u_last_put(struct pci_dev **pp)
{
	pci_bus_remove_all();
	pci_dev_put(*pp);
	*pp = NULL;
	return 0;
}

static int u_iomap(struct pci_dev **pp)
{
	void *a;

	errno = 0;
	a = pci_iomap(*pp, 0, 0);
	if (!a)
		return errno ? -errno : -EIO;
	pci_iounmap(*pp, a);
	return 0;
}

static int u_cfg_read(struct pci_dev **pp)
{
	uint32_t v;

	return pci_read_config_dword(*pp, 0, &v) ? -EIO : 0;
}

static int u_cfg_write(struct pci_dev **pp)
{
	return pci_write_config_dword(*pp, 0x80, 0x41414141) ? -EIO : 0;
}

static int u_enable(struct pci_dev **pp)
{
	return pci_enable_device(*pp);
}

static int u_disable(struct pci_dev **pp)
{
	pci_disable_device(*pp);
	return 0;
}

static int u_alloc(struct pci_dev **pp)
{
	int n = pci_alloc_irq_vectors(*pp, 1, NLINES, PCI_IRQ_MSIX);

	return n == NLINES ? 0 : (n < 0 ? n : -EIO);
}

static int u_free(struct pci_dev **pp)
{
	pci_free_irq_vectors(*pp);
	return 0;
}

static int u_reset(struct pci_dev **pp)
{
	return pci_reset_function(*pp);
}

static int u_unbind(struct pci_dev **pp)
{
	(void)pp;
	pci_unregister_driver(&drv);
	return 0;
}

static int p_scan(struct pci_dev **pp)
{
	return u_scan(pp);
}

static int p_enabled(struct pci_dev **pp)
{
	return u_scan(pp) ? -1 : pci_enable_device(*pp);
}

static int p_vectors(struct pci_dev **pp)
{
	return u_scan(pp) ? -1 : u_alloc(pp);
}

static int p_bound(struct pci_dev **pp)
{
	if (u_scan(pp) || pci_register_driver(&drv))
		return -1;
	return (*pp)->dev.driver ? 0 : -1;
}

/*
 * @op: the operation the call reaches; @ro_ret: what the call returns in
 * read-only mode; @fl_ret: what it returns when the mode was set while
 * its operation was parked in flight.
 */
static const struct row {
	const char *name;
	enum pci__bk_op op;
	int (*prep)(struct pci_dev **pp);
	int (*run)(struct pci_dev **pp);
	int ro_ret, fl_ret;
} rows[] = {
	{ "attach: pci_bus_scan", PCI_BK_ATTACH, NULL, u_scan, -EROFS, 0 },
	{ "detach: the last put", PCI_BK_DETACH, p_scan, u_last_put, 0, 0 },
	{ "bar_window: pci_iomap", PCI_BK_BAR_WINDOW, p_scan, u_iomap, -EROFS,
	  -EROFS },
	{ "cfg_read: pci_read_config_dword", PCI_BK_CFG_READ, p_scan,
	  u_cfg_read, 0, 0 },
	{ "cfg_write: pci_write_config_dword", PCI_BK_CFG_WRITE, p_scan,
	  u_cfg_write, -EIO, 0 },
	{ "enable: pci_enable_device", PCI_BK_ENABLE, p_scan, u_enable, -EROFS,
	  0 },
	{ "disable: pci_disable_device", PCI_BK_DISABLE, p_enabled, u_disable,
	  0, 0 },
	{ "alloc_irq_vectors: pci_alloc_irq_vectors", PCI_BK_ALLOC_IRQ_VECTORS,
	  p_scan, u_alloc, -EROFS, 0 },
	{ "free_irq_vectors: pci_free_irq_vectors", PCI_BK_FREE_IRQ_VECTORS,
	  p_vectors, u_free, 0, 0 },
	{ "reset: pci_reset_function", PCI_BK_RESET, p_scan, u_reset, -EROFS,
	  0 },
	{ "quiesce: the unbind", PCI_BK_QUIESCE, p_bound, u_unbind, 0, 0 },
};

#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

enum {
	COL_OFF,
	COL_ON,
	COL_IN_FLIGHT,
	NCOLS
};
static const char *const col_names[NCOLS] = { "off", "on", "in flight" };

/* The device's `bk` file: what the operations wrote to the device. */
static ssize_t tree_bytes(char *buf, size_t len)
{
	return fake_read(DEV, "bk", buf, len);
}

static struct pci_dev *cell_dev;
static const struct row *cell_row;
static int cell_ret;

static void *use_thread(void *arg)
{
	(void)arg;
	cell_ret = cell_row->run(&cell_dev);
	return NULL;
}

/* The mode set while the row's operation is parked in the backend. */
static int in_flight(const struct row *r)
{
	enum pci__bk_class class = pci__bk_class(r->op);
	pthread_t use, sw;
	int bad = 0, waited = 0;
	bool done;

	cell_row = r;
	__atomic_store_n(&bk.park_op, (int)r->op, __ATOMIC_SEQ_CST);
	if (pthread_create(&use, NULL, use_thread, NULL))
		return 1;
	if (sem_wait_ms(&bk.parked, WAIT_MS)) {
		fprintf(stderr, "%s: the operation was never called\n",
			cell_name);
		return 1;
	}
	if (pthread_create(&sw, NULL, ro_switch_thread, &bk.sw))
		return 1;
	while (!__atomic_load_n(&bk.sw.entering, __ATOMIC_SEQ_CST))
		poll(NULL, 0, 1);
	/* The switch either returns or sleeps, waiting for the operation. */
	while (!__atomic_load_n(&bk.sw.done, __ATOMIC_SEQ_CST) &&
	       !tid_asleep(__atomic_load_n(&bk.sw.tid, __ATOMIC_SEQ_CST)) &&
	       waited++ < WAIT_MS)
		poll(NULL, 0, 1);
	/* A read is not waited for: give the switch the time to return. */
	for (waited = 0; class == PCI_BK_READ && waited < WAIT_MS &&
			 !__atomic_load_n(&bk.sw.done, __ATOMIC_SEQ_CST);
	     waited++)
		poll(NULL, 0, 1);
	done = __atomic_load_n(&bk.sw.done, __ATOMIC_SEQ_CST);
	if (done != (class == PCI_BK_READ))
		fprintf(stderr, "%s: the switch %s with the operation parked\n",
			cell_name, done ? "returned" : "waited");
	CHECK(done == (class == PCI_BK_READ));
	sem_post(&bk.go);
	pthread_join(use, NULL);
	pthread_join(sw, NULL);
	CHECK(cell_ret == r->fl_ret);
	CHECK(bk.sw.landed != 0);
	/* Counted in flight: landed before the switch returned. */
	if (class != PCI_BK_READ)
		CHECK(bk.sw.landed < bk.sw.ro_done);
	return bad;
}

static int one_cell(int row, int col)
{
	const struct row *r = &rows[row];
	enum pci__bk_class class = pci__bk_class(r->op);
	struct pci_fake_dev d = fake_dev(DEV, VENDOR, DEVICE, 1);
	char before[256], after[256], path[4096];
	ssize_t nb, na;
	int bad = 0, warns, ret = 0;
	static char prefix[160];
	bool made;

	cell_name = r->name;
	snprintf(prefix, sizeof(prefix), "%s / ", cell_name);
	check_prefix = prefix;
	alarm(20);
	bk.park_op = PCI_BK_NR;
	if (sem_init(&bk.parked, 0, 0) || sem_init(&bk.go, 0, 0) ||
	    pci_setup(NULL) || pci_fake_add(ft, &d) ||
	    fake_write(DEV, "bk", "", 0) ||
	    pci_fake_path(ft, DEV, "resource0", path, sizeof(path)))
		return 100;
	bk.bar_fd = open(path, O_RDWR | O_CLOEXEC);
	for (int i = 0; i < NLINES; i++)
		bk.lines[i] = irq_line_create("ro-ops");
	if (bk.bar_fd < 0 || bk.lines[0] <= 0 || bk.lines[1] <= 0)
		return 101;
	__atomic_store_n(&bk.take, 1, __ATOMIC_SEQ_CST);
	cell_dev = NULL;
	if (r->prep && r->prep(&cell_dev))
		return 102;
	nb = tree_bytes(before, sizeof(before));
	for (int i = 0; i < PCI_BK_NR; i++)
		bk.calls[i] = 0;
	warns = devres_warn_count();
	if (col == COL_OFF) {
		ret = r->run(&cell_dev);
		CHECK(ret == 0);
	} else if (col == COL_ON) {
		pci_sysfs_set_readonly(true);
		ret = r->run(&cell_dev);
		if (ret != r->ro_ret)
			fprintf(stderr, "%s: %d, not %d\n", r->name, ret,
				r->ro_ret);
		CHECK(ret == r->ro_ret);
	} else {
		bad += in_flight(r);
	}
	na = tree_bytes(after, sizeof(after));
	/* Made: the operation was called (once), and wrote what it writes. */
	made = col != COL_ON || class == PCI_BK_READ ||
	       class == PCI_BK_DETACH_ALWAYS;
	if (bk.calls[r->op] != (made ? 1 : 0))
		fprintf(stderr, "%s: operation called %d times\n", r->name,
			bk.calls[r->op]);
	CHECK(bk.calls[r->op] == (made ? 1 : 0));
	CHECK(nb >= 0 && na >= 0);
	if (!made || class == PCI_BK_READ || class == PCI_BK_DETACH_ALWAYS) {
		/* Nothing reached the device: its bytes as they were. */
		if (na != nb || memcmp(before, after, (size_t)nb) != 0)
			fprintf(stderr, "%s: the device was written (%s)\n",
				r->name, after);
		CHECK(na == nb && memcmp(before, after, (size_t)nb) == 0);
	} else {
		CHECK(na == nb + 1);
	}
	CHECK(devres_warn_count() == warns);
	/* No write left counted: this returns at once (else the alarm). */
	pci_sysfs_set_readonly(true);
	pci_sysfs_set_readonly(false);
	if (cell_dev) {
		devres_release_all(&cell_dev->dev);
		pci_dev_put(cell_dev);
	}
	pci_bus_remove_all();
	for (int i = 0; i < NLINES; i++)
		CHECK(irq_line_destroy(bk.lines[i]) == 0);
	close(bk.bar_fd);
	CHECK(pci_teardown(NULL) == 0);
	return bad;
}

static void every_op_every_moment(void **state)
{
	const char *row_names[NROWS];

	(void)state;
	for (int i = 0; i < NROWS; i++)
		row_names[i] = rows[i].name;
	run_cells_in_children(one_cell, row_names, NROWS, col_names, NCOLS);
}

/* Every operation has a class, and a row of the table above. */
static void every_op_classed(void **state)
{
	(void)state;
	for (int op = 0; op < PCI_BK_NR; op++) {
		bool row = false;

		assert_non_null(pci__bk_name(op));
		assert_int_not_equal(pci__bk_class(op), PCI_BK_UNKNOWN);
		for (int i = 0; i < NROWS; i++)
			row = row || rows[i].op == (enum pci__bk_op)op;
		assert_true(row);
	}
	assert_int_equal(pci__bk_class(PCI_BK_NR), PCI_BK_UNKNOWN);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_op_classed),
		cmocka_unit_test(every_op_every_moment),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (pci__backend_add(&fake_backend))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
