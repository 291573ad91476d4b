// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan white-box timeout=120 */
/*
 * Read-only mode against the calls that write a device, as a table: each
 * writing call (a row) times when the mode is set (a column):
 *
 * - "in flight": the call is parked inside its write, after every check
 *   of the mode it makes, and pci_sysfs_set_readonly(true) is called on
 *   another thread. The switch must wait for the write and return only
 *   after it landed: nothing is written after the mode is set. Taken
 *   deterministically: this binary puts its own pwrite() in front of the
 *   library's (the executable comes first in symbol lookup) and parks
 *   the call in it, on a file of the fake tree.
 * - "set before": the mode is set first; the call must refuse (the
 *   error its row names) and write nothing: no pwrite() reaches a file of
 *   the tree, and a backend's config write, reset or enable is not
 *   called.
 * - "forked in flight": a child of fork() made while the call is parked
 *   in its write sets the mode: the write is a thread's of the parent,
 *   so the child's switch returns at once (its alarm ends it otherwise).
 *
 * Rows: the calls that write through sysfs (a config write, the first
 * enable, the managed enable, mastering set and cleared through the
 * config file kept from the enable, the last disable, a reset through
 * `reset`), and those that write through a backend (its config write, its
 * reset, mastering set through its config write, its first enable and
 * its last disable, which VFIO's makes a reset): a backend's device is
 * a device as well. Each cell runs in a child of its own under an alarm
 * (a switch that waits for ever fails its cell alone), on a tree of its
 * own; the ledger is back at its baseline at the end of each.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/backend.h"
#include "hostile/cell-child.h"
#include "pci/ro-cell.h"

#define DEV "0000:00:05.0"
#define WAIT_MS 5000

/* The parked write, and the order in which the write and the switch end. */
static struct {
	char root[4096];
	size_t root_len;
	sem_t parked, go;
	int armed;	 /* park the next pwrite() on a file of the tree */
	int tree_writes; /* pwrite() calls on files of the tree */
	struct ro_switch sw;
} pw;

static bool of_tree(int fd)
{
	char link[64], path[4096];
	ssize_t n;

	if (!pw.root_len)
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return false;
	path[n] = '\0';
	return strncmp(path, pw.root, pw.root_len) == 0;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off);
ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	static ssize_t (*next)(int, const void *, size_t, off_t);
	ssize_t n;

	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "pwrite");
	if (!of_tree(fd))
		return next(fd, buf, len, off);
	__atomic_add_fetch(&pw.tree_writes, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_exchange_n(&pw.armed, 0, __ATOMIC_SEQ_CST))
		return next(fd, buf, len, off);
	sem_post(&pw.parked);
	while (sem_wait(&pw.go) < 0)
		;
	n = next(fd, buf, len, off);
	__atomic_store_n(&pw.sw.landed,
			 __atomic_add_fetch(&pw.sw.seq, 1, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
	return n;
}

/*
 * A backend that takes the device when told to: its config write, reset
 * and enable write the device's own files of the tree (as VFIO's write
 * its device: its last disable is a reset), and count their calls. Reads
 * and BARs stay with sysfs (NULL operations).
 */
static int bk_take, bk_cfg_writes, bk_resets, bk_enables;

static int bk_attach(struct pci_dev *pdev, void **ret_data)
{
	(void)pdev;
	*ret_data = NULL;
	return __atomic_load_n(&bk_take, __ATOMIC_RELAXED) ? 0 : -ENODEV;
}

static void bk_detach(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	(void)data;
}

static int bk_write_file(const char *file, const void *buf, size_t len,
			 off_t off)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (pci_fake_path(ft, DEV, file, path, sizeof(path)))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pwrite(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int bk_cfg_write(const struct pci_dev *pdev, void *data, int where,
			int size, uint32_t val)
{
	(void)pdev;
	(void)data;
	__atomic_add_fetch(&bk_cfg_writes, 1, __ATOMIC_SEQ_CST);
	return bk_write_file("config", &val, (size_t)size, where)
		       ? PCIBIOS_SET_FAILED
		       : PCIBIOS_SUCCESSFUL;
}

static int bk_reset(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	(void)data;
	__atomic_add_fetch(&bk_resets, 1, __ATOMIC_SEQ_CST);
	return bk_write_file("reset", "1", 1, 0) ? -EIO : 0;
}

static int bk_enable(struct pci_dev *pdev, void *data, bool on)
{
	(void)pdev;
	(void)data;
	__atomic_add_fetch(&bk_enables, 1, __ATOMIC_SEQ_CST);
	return bk_write_file("enable", on ? "1" : "0", 1, 0) ? -EIO : 0;
}

static const struct pci__backend fake_backend = {
	.name = "ro-fake",
	.attach = bk_attach,
	.detach = bk_detach,
	.cfg_write = bk_cfg_write,
	.reset = bk_reset,
	.enable = bk_enable,
};

/* The rows: each returns 0 or a negative errno (-EIO for a PCIBIOS code). */
static int u_cfg_write(struct pci_dev *p)
{
	return pci_write_config_dword(p, 0x80, 0x41414141) ? -EIO : 0;
}

static int u_enable(struct pci_dev *p)
{
	return pci_enable_device(p);
}

static int u_pcim_enable(struct pci_dev *p)
{
	return pcim_enable_device(p);
}

static int u_set_master(struct pci_dev *p)
{
	pci_set_master(p);
	return p->is_busmaster ? 0 : -EIO;
}

static int u_clear_master(struct pci_dev *p)
{
	pci_clear_master(p);
	return p->is_busmaster ? -EIO : 0;
}

static int u_disable(struct pci_dev *p)
{
	pci_disable_device(p);
	return 0;
}

static int u_reset(struct pci_dev *p)
{
	return pci_reset_function(p);
}

static void p_enabled(struct pci_dev *p)
{
	(void)!pci_enable_device(p);
}

static void p_mastering(struct pci_dev *p)
{
	(void)!pci_enable_device(p);
	pci_set_master(p);
}

static const struct row {
	const char *name;
	void (*prep)(struct pci_dev *p);
	int (*run)(struct pci_dev *p);
	int ro_err;
	bool backend;
} rows[] = {
	{ "pci_write_config_dword", NULL, u_cfg_write, -EIO, false },
	{ "pci_enable_device", NULL, u_enable, -EROFS, false },
	{ "pcim_enable_device", NULL, u_pcim_enable, -EROFS, false },
	{ "pci_set_master (kept config)", p_enabled, u_set_master, -EIO,
	  false },
	{ "pci_clear_master (kept config)", p_mastering, u_clear_master, -EIO,
	  false },
	{ "pci_disable_device", p_enabled, u_disable, 0, false },
	{ "pci_reset_function", NULL, u_reset, -EROFS, false },
	{ "backend config write", NULL, u_cfg_write, -EIO, true },
	{ "backend reset", NULL, u_reset, -EROFS, true },
	{ "backend pci_set_master", NULL, u_set_master, -EIO, true },
	{ "backend pci_enable_device", NULL, u_enable, -EROFS, true },
	{ "backend pci_disable_device", p_enabled, u_disable, 0, true },
};

#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

enum {
	IN_FLIGHT,
	SET_BEFORE,
	FORKED,
	NCOLS
};
static const char *const col_names[NCOLS] = { "in flight", "set before",
					      "forked in flight" };

static struct pci_dev *cell_dev;
static const struct row *cell_row;
static int cell_ret;

static void *use_thread(void *arg)
{
	(void)arg;
	cell_ret = cell_row->run(cell_dev);
	return NULL;
}

/*
 * The row's call on thread *@use, parked inside its write: 0, or 1 when
 * it never wrote (the cell's alarm ends the child).
 */
static int park(struct pci_dev *p, const struct row *r, pthread_t *use)
{
	cell_dev = p;
	cell_row = r;
	__atomic_store_n(&pw.armed, 1, __ATOMIC_SEQ_CST);
	if (pthread_create(use, NULL, use_thread, NULL))
		return 1;
	if (sem_wait_ms(&pw.parked, WAIT_MS)) {
		fprintf(stderr, "%s: the call never wrote\n", r->name);
		return 1;
	}
	return 0;
}

/* The switch on another thread while the row's write is parked. */
static int in_flight(struct pci_dev *p, const struct row *r)
{
	pthread_t use, sw;
	int bad = 0, waited = 0;

	if (park(p, r, &use))
		return 1;
	if (pthread_create(&sw, NULL, ro_switch_thread, &pw.sw))
		return 1;
	while (!__atomic_load_n(&pw.sw.entering, __ATOMIC_SEQ_CST))
		poll(NULL, 0, 1);
	/* The switch either returns at once or sleeps, waiting for it. */
	while (!__atomic_load_n(&pw.sw.done, __ATOMIC_SEQ_CST) &&
	       !tid_asleep(__atomic_load_n(&pw.sw.tid, __ATOMIC_SEQ_CST)) &&
	       waited++ < WAIT_MS)
		poll(NULL, 0, 1);
	if (__atomic_load_n(&pw.sw.done, __ATOMIC_SEQ_CST))
		fprintf(stderr,
			"%s: the switch returned with a write under way\n",
			r->name);
	CHECK(!__atomic_load_n(&pw.sw.done, __ATOMIC_SEQ_CST));
	sem_post(&pw.go);
	pthread_join(use, NULL);
	pthread_join(sw, NULL);
	/* Begun before the switch: it went through, and before it returned. */
	CHECK(cell_ret == 0);
	CHECK(pw.sw.landed != 0);
	if (pw.sw.landed > pw.sw.ro_done)
		fprintf(stderr, "%s: written after the switch returned\n",
			r->name);
	CHECK(pw.sw.landed < pw.sw.ro_done);
	return bad;
}

/*
 * A child forked while the row's write is parked: the write is the
 * parent's thread's, which the child does not have, so the child's switch
 * waits for nothing (its alarm would end it), and writes nothing either.
 */
static int forked(struct pci_dev *p, const struct row *r)
{
	int bad = 0, status = 0, writes;
	pthread_t use;
	pid_t pid;

	if (park(p, r, &use))
		return 1;
	writes = __atomic_load_n(&pw.tree_writes, __ATOMIC_SEQ_CST);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		alarm(5);
		pci_sysfs_set_readonly(true);
		_exit(pw.tree_writes == writes ? 0 : 1);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "%s: the child's switch: status %#x\n", r->name,
			status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sem_post(&pw.go);
	pthread_join(use, NULL);
	CHECK(cell_ret == 0);
	return bad;
}

/* The mode set first: refused, and nothing reaches the device. */
static int set_before(struct pci_dev *p, const struct row *r)
{
	int bad = 0, ret;

	pci_sysfs_set_readonly(true);
	__atomic_store_n(&pw.tree_writes, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&bk_cfg_writes, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&bk_resets, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&bk_enables, 0, __ATOMIC_SEQ_CST);
	ret = r->run(p);
	if (ret != r->ro_err || pw.tree_writes || bk_cfg_writes || bk_resets ||
	    bk_enables)
		fprintf(stderr,
			"%s: %d (not %d), %d writes, backend %d + %d + %d "
			"calls\n",
			r->name, ret, r->ro_err, pw.tree_writes, bk_cfg_writes,
			bk_resets, bk_enables);
	CHECK(ret == r->ro_err);
	CHECK(pw.tree_writes == 0);
	CHECK(bk_cfg_writes == 0 && bk_resets == 0 && bk_enables == 0);
	return bad;
}

static int one_cell(int row, int col)
{
	const struct row *r = &rows[row];
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);
	struct pci_dev *p;
	int bad = 0;

	alarm(20);
	if (sem_init(&pw.parked, 0, 0) || sem_init(&pw.go, 0, 0) ||
	    pci_setup(NULL) || pci_fake_add(ft, &d) ||
	    fake_write(DEV, "reset", "", 0))
		return 100;
	if (!realpath(pci_fake_root(ft), pw.root))
		return 101;
	pw.root_len = strlen(pw.root);
	bk_take = r->backend;
	if (pci_bus_scan() != 1)
		return 102;
	p = pci_get_device(0x1af4, 0x10, NULL);
	if (!p)
		return 103;
	CHECK(pci__backend_of(p) == (r->backend ? &fake_backend : NULL));
	if (r->prep)
		r->prep(p);
	if (col == IN_FLIGHT)
		bad += in_flight(p, r);
	else if (col == SET_BEFORE)
		bad += set_before(p, r);
	else
		bad += forked(p, r);
	devres_release_all(&p->dev);
	pci_dev_put(p);
	pw.root_len = 0;
	CHECK(pci_teardown(NULL) == 0);
	return bad;
}

static void every_write_every_moment(void **state)
{
	const char *row_names[NROWS];

	(void)state;
	for (int i = 0; i < NROWS; i++)
		row_names[i] = rows[i].name;
	run_cells_in_children(one_cell, row_names, NROWS, col_names, NCOLS);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_write_every_moment),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (pci__backend_add(&fake_backend))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
