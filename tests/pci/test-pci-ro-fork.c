// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan white-box */
/*
 * The door to a backend's operations (src/pci/bkops.c) and read-only mode
 * (pci_sysfs_set_readonly()) forked from a parent busy in them, as a
 * table: an operation of each class (a row: a read, a write, a release),
 * reached by its public call on the parent's device, times where the
 * parent's threads are at the fork (a column):
 *
 * - "in flight": a thread's call is parked inside the backend, past the
 *   library's door (a write or a release counted in flight).
 * - "a switch waiting": that, and another thread in
 *   pci_sysfs_set_readonly(true), waiting for it (a read is not waited
 *   for: its switch has returned).
 * - "forking in flight": the forking thread is the one whose operation
 *   is in flight, and a switch waits for it on another thread. In the
 *   child the operation returns and the call completes.
 *
 * In the dev build one more thread reads and writes the parent's device
 * throughout (under the sanitizers the parent's threads are parked: their
 * allocators are not fork-safe with a running thread).
 *
 * The parent has BAR 0 of its device mapped (pci_iomap()) before the
 * call. Each child, under an alarm (a hang fails the cell): its copy of
 * that mapping writable only if the mode is off (a switch waiting at the
 * fork has set the mode but protected no mapping yet: the child's copy is
 * protected at the fork, and a switch of the child's own protects it
 * too); the parent's device refused (one WARN); a switch to read-only
 * mode returns at once (no
 * write of the parent's threads is counted in the child, and the child's
 * own call that completed is not counted twice), a write of its own is
 * then refused; back to read-write, it scans a device of its own, writes
 * and reads its config space, enables and disables it, and a last switch
 * returns at once. Each cell runs in a process of its own.
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/pci.h"
#include "hostile/cell-child.h"
#include "base/fork-park.h"

#define DEV "0000:00:06.0"
#define OWN "0000:00:07.0"
#define VENDOR 0x1af4
#define DEVICE 0x1041
#define OWN_DEVICE 0x1042
#define WAIT_MS 5000
#define CHILD_ALARM_S 5

#if defined(T_ASAN) || defined(T_TSAN)
#define FORKS 1
#else
#define FORKS 3
#endif

enum {
	ROW_READ,
	ROW_WRITE,
	ROW_RELEASE,
	NROWS
};
enum {
	AT_FLIGHT,
	AT_SWITCH,
	AT_FORKER,
	NCOLS
};

static const char *const row_names[NROWS] = {
	"cfg_read: pci_read_config_dword",
	"cfg_write: pci_write_config_dword",
	"disable: pci_disable_device",
};
static const enum pci__bk_op row_ops[NROWS] = { PCI_BK_CFG_READ,
						PCI_BK_CFG_WRITE,
						PCI_BK_DISABLE };
static const char *const col_names[NCOLS] = { "in flight", "a switch waiting",
					      "forking in flight" };

static int cell_row, cell_col;
static struct pci_dev *pdev;	/* the parent's */
static void __iomem *bar0;	/* its BAR 0, mapped by the parent */
static int park_op = PCI_BK_NR; /* the operation that parks, once */
static sem_t parked, go;
static int s_tid;
static bool stop, in_child, busy;
static int fork_bad;

static __thread bool busy_self; /* the busy thread never parks */

static void forks_from(void);

/* Parks (or, forking in flight, forks) in the operation @op if armed. */
static void park_point(enum pci__bk_op op)
{
	if (busy_self || !__atomic_compare_exchange_n(
				 &park_op, &(int){ (int)op }, PCI_BK_NR, false,
				 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	if (cell_col == AT_FORKER) {
		forks_from();
		return;
	}
	sem_post(&parked);
	while (sem_wait(&go) < 0)
		;
}

static int f_attach(struct pci_dev *p, void **ret_data)
{
	(void)p;
	*ret_data = NULL;
	return 0;
}

static void f_detach(struct pci_dev *p, void *data)
{
	(void)p;
	(void)data;
}

/* BAR 0's registers: a memfd of a page, the backend's. */
static int bar_fd = -1;

static int f_bar_window(struct pci_dev *p, void *data, int bar, int *ret_fd,
			off_t *ret_off, uint64_t *ret_size)
{
	(void)p;
	(void)data;
	if (bar || bar_fd < 0)
		return -ENODEV;
	*ret_fd = bar_fd;
	*ret_off = 0;
	*ret_size = 4096;
	return 0;
}

/* The device's config space: its file in the tree, as the scan read. */
static int f_cfg_read(const struct pci_dev *p, void *data, int where, int size,
		      uint32_t *val)
{
	char path[4096];
	uint8_t b[4] = { 0 };
	int fd;

	(void)data;
	park_point(PCI_BK_CFG_READ);
	if (pci_fake_path(ft, pci_name(p), "config", path, sizeof(path)))
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
	return PCIBIOS_SUCCESSFUL;
}

static int f_cfg_write(const struct pci_dev *p, void *data, int where, int size,
		       uint32_t val)
{
	char path[4096];
	int fd, ret = PCIBIOS_SUCCESSFUL;

	(void)data;
	park_point(PCI_BK_CFG_WRITE);
	if (pci_fake_path(ft, pci_name(p), "config", path, sizeof(path)))
		return PCIBIOS_DEVICE_NOT_FOUND;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return PCIBIOS_DEVICE_NOT_FOUND;
	if (pwrite(fd, &val, (size_t)size, where) != size)
		ret = PCIBIOS_SET_FAILED;
	close(fd);
	return ret;
}

static int f_enable(struct pci_dev *p, void *data, bool on)
{
	(void)p;
	(void)data;
	park_point(on ? PCI_BK_ENABLE : PCI_BK_DISABLE);
	return 0;
}

static int f_alloc(struct pci_dev *p, void *data, unsigned int min_vecs,
		   unsigned int max_vecs, unsigned int flags,
		   unsigned int *ret_type)
{
	(void)p;
	(void)data;
	(void)min_vecs;
	(void)max_vecs;
	(void)flags;
	(void)ret_type;
	return -ENOSPC;
}

static void f_free(struct pci_dev *p, void *data)
{
	(void)p;
	(void)data;
}

static int f_reset(struct pci_dev *p, void *data)
{
	(void)p;
	(void)data;
	return -ENOTTY;
}

static void f_quiesce(struct pci_dev *p, void *data)
{
	(void)p;
	(void)data;
}

static const struct pci__backend fake_backend = {
	.name = "ro-fork",
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

/* The row's call on the parent's device: 0 when it went through. */
static int row_call(void)
{
	uint32_t v = 0;

	switch (cell_row) {
	case ROW_READ:
		return pci_read_config_dword(pdev, 0, &v) ||
		       v != ((uint32_t)DEVICE << 16 | VENDOR);
	case ROW_WRITE:
		return pci_write_config_dword(pdev, 0x80, 0x41414141) ? -EIO
								      : 0;
	default:
		pci_disable_device(pdev);
		return 0;
	}
}

static void *a_thread(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)row_call();
}

static void *switch_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&s_tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	pci_sysfs_set_readonly(true);
	return NULL;
}

/* The parent's device read and written, in a loop. */
static void *busy_thread(void *arg)
{
	uint32_t v;

	(void)arg;
	busy_self = true;
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		(void)pci_read_config_dword(pdev, 0x84, &v);
		(void)pci_write_config_dword(pdev, 0x84, v + 1);
	}
	return NULL;
}

static pthread_t s_th;
static bool s_started;

/*
 * The switch on another thread: asleep, waiting for the operation in
 * flight (a read's returns: it is not waited for).
 */
static int switch_start(void)
{
	int waited = 0;

	if (pthread_create(&s_th, NULL, switch_thread, NULL))
		return -1;
	s_started = true;
	while (!tid_asleep(__atomic_load_n(&s_tid, __ATOMIC_SEQ_CST)) &&
	       !pci__readonly())
		if (waited++ > WAIT_MS)
			return -1;
		else
			poll(NULL, 0, 1);
	/* Asleep in the switch, not on its way (or returned, for a read). */
	poll(NULL, 0, 5);
	/* A read is not waited for: the switch is over, joined now. */
	if (pci__bk_class(row_ops[cell_row]) == PCI_BK_READ) {
		s_started = false;
		return pthread_join(s_th, NULL);
	}
	return 0;
}

/* Whether the page at @p can be written, from /proc/self/maps; -1: not found. */
static int page_writable(const void *p)
{
	unsigned long a = (unsigned long)p, lo, hi;
	char line[512], perms[8];
	int ret = -1;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -1;
	while (ret < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    a >= lo && a < hi)
			ret = perms[1] == 'w';
	fclose(f);
	return ret;
}

static void child(void)
{
	struct pci_fake_dev d = fake_dev(OWN, VENDOR, OWN_DEVICE, 1);
	int warns = devres_warn_count();
	struct pci_dev *own;
	uint32_t v = 0;

	alarm(CHILD_ALARM_S);
	/* The mode holds for the copy of the parent's mapping too. */
	CHILD_CHECK(page_writable(bar0) == !pci__readonly());
	/* The parent's device: refused, one WARN. */
	CHILD_CHECK(pci_read_config_dword(pdev, 0, &v) ==
		    PCIBIOS_DEVICE_NOT_FOUND);
	CHILD_CHECK(devres_warn_count() == warns + 1);
	/* No write in flight counted: returns at once. */
	pci_sysfs_set_readonly(true);
	CHILD_CHECK(pci__readonly());
	CHILD_CHECK(page_writable(bar0) == 0);
	pci_sysfs_set_readonly(false);
	/* A device of its own, scanned, used, the mode switched over it. */
	CHILD_CHECK(pci_fake_add(ft, &d) == 0);
	CHILD_CHECK(pci_bus_scan_device(OWN) == 0);
	own = pci_get_device(VENDOR, OWN_DEVICE, NULL);
	CHILD_CHECK(own && pci__backend_of(own) == &fake_backend);
	CHILD_CHECK(pci_write_config_dword(own, 0x80, 0x600d) == 0);
	CHILD_CHECK(pci_read_config_dword(own, 0x80, &v) == 0 && v == 0x600d);
	CHILD_CHECK(pci_enable_device(own) == 0);
	pci_disable_device(own);
	pci_sysfs_set_readonly(true);
	CHILD_CHECK(pci_write_config_dword(own, 0x80, 0) == PCIBIOS_SET_FAILED);
	pci_sysfs_set_readonly(false);
	CHILD_CHECK(pci_write_config_dword(own, 0x80, 0) == 0);
	pci_dev_put(own);
	pci_bus_remove_all();
	CHILD_CHECK(pci_fake_remove(ft, OWN) == 0);
	pci_sysfs_set_readonly(true);
	pci_sysfs_set_readonly(false);
	CHILD_CHECK(devres_warn_count() == warns + 1);
	_exit(0);
}

#define CELL_CHECK(c)                                                          \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s / %s: line %d: %s\n",              \
				row_names[cell_row], col_names[cell_col],      \
				__LINE__, #c);                                 \
			bad++;                                                 \
		}                                                              \
	} while (0)

/* The forks of a cell, each child checked; returns in the child. */
static void fork_children(void)
{
	char what[128];

	snprintf(what, sizeof(what), "%s / %s", row_names[cell_row],
		 col_names[cell_col]);
	fork_bad += fork_children_checked(FORKS, busy, what, &in_child);
}

/* Forking in flight: from inside the operation, a switch waiting. */
static void forks_from(void)
{
	if (switch_start()) {
		fork_bad++;
		return;
	}
	fork_children();
}

static int one_cell(int row, int col)
{
	struct pci_fake_dev d = fake_dev(DEV, VENDOR, DEVICE, 1);
	int bad = 0, warns, ret_p = 0;
	pthread_t a = 0, q = 0;
	void *ret;

	busy = true;
#if defined(T_ASAN) || defined(T_TSAN)
	busy = false;
#endif
	cell_row = row;
	cell_col = col;
	alarm(30);
	if (sem_init(&parked, 0, 0) || sem_init(&go, 0, 0) || pci_setup(NULL) ||
	    pci_fake_add(ft, &d) || pci_bus_scan() != 1)
		return 100;
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	if (!pdev || pci__backend_of(pdev) != &fake_backend)
		return 101;
	bar0 = pci_iomap(pdev, 0, 0);
	if (!bar0 || page_writable(bar0) != 1)
		return 107;
	if (row == ROW_RELEASE && pci_enable_device(pdev))
		return 102;
	warns = devres_warn_count();
	__atomic_store_n(&park_op, (int)row_ops[row], __ATOMIC_SEQ_CST);
	if (col != AT_FORKER) {
		if (pthread_create(&a, NULL, a_thread, NULL))
			return 103;
		if (sem_wait_ms(&parked, WAIT_MS))
			return 104;
		if (col == AT_SWITCH && switch_start())
			return 105;
	}
	if (busy && pthread_create(&q, NULL, busy_thread, NULL))
		return 106;
	if (col == AT_FORKER)
		ret_p = row_call();
	else
		fork_children();
	if (in_child) {
		/* Its copy of the parent's call completed. */
		if (ret_p)
			_exit(99);
		child();
	}
	bad += fork_bad;
	if (busy) {
		__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
		CELL_CHECK(pthread_join(q, NULL) == 0);
	}
	if (ret_p)
		fprintf(stderr, "%s / %s: the parent's call returned %d\n",
			row_names[cell_row], col_names[cell_col], ret_p);
	CELL_CHECK(ret_p == 0);
	if (col != AT_FORKER) {
		sem_post(&go);
		CELL_CHECK(pthread_join(a, &ret) == 0 && !ret);
	}
	if (s_started)
		CELL_CHECK(pthread_join(s_th, NULL) == 0);
	/* No write left counted in the parent either. */
	pci_sysfs_set_readonly(true);
	pci_sysfs_set_readonly(false);
	CELL_CHECK(devres_warn_count() == warns);
	CELL_CHECK(page_writable(bar0) == 0);
	pci_iounmap(pdev, bar0);
	pci_dev_put(pdev);
	CELL_CHECK(pci_teardown(NULL) == 0);
	return bad;
}

static void forks_from_busy_door(void **state)
{
	(void)state;
	run_cells_in_children(one_cell, row_names, NROWS, col_names, NCOLS);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(forks_from_busy_door),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	bar_fd = memfd_create("ro-fork-bar", MFD_CLOEXEC);
	if (bar_fd < 0 || ftruncate(bar_fd, 4096) ||
	    pci__backend_add(&fake_backend))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
