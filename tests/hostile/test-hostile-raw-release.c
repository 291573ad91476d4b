// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * Managed resources released past every call the library interposes: a
 * raw system call (SYS_close, SYS_close_range, SYS_dup3 onto the number,
 * SYS_munmap, SYS_mremap, SYS_mmap with MAP_FIXED), glibc's __close(), or
 * a close libc makes inside itself (fclose() of a stream fdopen()ed over
 * the number: the library's fclose() takes the number as close() would,
 * at the call, and the release then finds nothing of it). Then
 * another owner takes the same number or address, and the device is
 * released. Whatever the kind, the other owner's descriptor or mapping
 * must come through untouched (the same open file, the same bytes, still
 * mapped and writable), with at most one WARN, naming the device and the
 * managed call; the fixture checks the ledger is back at its baseline.
 *
 * Four tables, each every kind x every way:
 *   descriptors: devm_open, devm_openat, devm_memfd_create, devm_eventfd,
 *     devm_timerfd_create, devm_add_fd of a pipe, a socket and a dup(),
 *     and the descriptor of a devm_fopen() stream holding unflushed data;
 *   the same descriptors' private duplicates (the library's way to tell
 *     a number from a reused one) taken the same ways: the number, still
 *     the program's, is closed, the duplicate's new owner is untouched;
 *   mappings: devm_mmap (of a memfd, and anonymous), devm_ioremap,
 *     devm_ioremap_wc, pcim_iomap of a fake PCI function's BAR and
 *     dmam_alloc_coherent, the other owner mapping a file of its own;
 *   the library's own descriptors: an irq line's eventfd, the enable file
 *     and the config file a PCI device keeps while enabled, a managed
 *     thread's wake eventfd; after the other owner takes the number the
 *     library uses it (an interrupt raised, mastering set and cleared, the
 *     device disabled, the line destroyed, the thread stopped):
 *     it may fail, but must neither hang nor write into the other owner's
 *     file, nor close it.
 * VFIO's descriptors are left to the VM's tests (tests/vm).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <linux/kcmp.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "io/iotest.h"
#include "misuse/one-pci-fn.h"
#include "raw-own.h"

#define WIN 0xa0000000ull
#define LEN 0x2000u
#define RW (PROT_READ | PROT_WRITE)

#include "misuse/map-kinds.h"

static const char pattern[] = "the other owner's bytes";

/* ---- the other owner ---- */

static char tmpl[] = "/tmp/devres-raw-XXXXXX";
static char path[sizeof(tmpl)];

/* A file of the other owner's, holding the pattern, at number @want. */
static int owner_open(int want)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	if (fd != want) {
		assert_int_equal(syscall(SYS_dup3, fd, want, O_CLOEXEC), want);
		assert_int_equal(syscall(SYS_close, fd), 0);
	}
	return want;
}

/* The other owner's file is untouched, and still open at @fd. */
static void owner_intact(int fd, const struct stat *was)
{
	char buf[sizeof(pattern) + 16];
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_dev, was->st_dev);
	assert_int_equal(st.st_ino, was->st_ino);
	assert_int_equal(st.st_size, sizeof(pattern));
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), sizeof(pattern));
	assert_memory_equal(buf, pattern, sizeof(pattern));
}

/* At most one WARN since start_capture(), naming @dev and @call. */
static void at_most_one_warn(const char *dev, const char *call)
{
	char want[128];

	assert_true(cap.n <= 1);
	if (cap.n == 0)
		return;
	snprintf(want, sizeof(want), "WARNING: %s: %s: ", dev, call);
	assert_true(strncmp(cap.line[0], want, strlen(want)) == 0);
}

/* ---- descriptors: the kinds ---- */

static FILE *stream;

static int acq_open(void)
{
	return devm_open(&tdev, "/dev/null", O_RDONLY);
}

static int acq_openat(void)
{
	return devm_openat(&tdev, AT_FDCWD, "/dev/zero", O_RDONLY);
}

static int acq_memfd(void)
{
	return devm_memfd_create(&tdev, "raw", 0);
}

static int acq_eventfd(void)
{
	return devm_eventfd(&tdev, 0, 0);
}

static int acq_timerfd(void)
{
	return devm_timerfd_create(&tdev, CLOCK_MONOTONIC, 0);
}

/* devm_add_fd() of @fd: the number, or the error. */
static int adopted(int fd, int spare)
{
	int ret;

	assert_true(fd >= 0);
	if (spare >= 0)
		close(spare);
	ret = devm_add_fd(&tdev, fd);
	return ret ? ret : fd;
}

static int acq_pipe(void)
{
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	return adopted(p[0], p[1]);
}

static int acq_socket(void)
{
	return adopted(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), -1);
}

static int acq_dup(void)
{
	int z = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	assert_true(z >= 0);
	return adopted(fcntl(z, F_DUPFD_CLOEXEC, 0), z);
}

/* A stream with bytes not yet written: its release flushes them. */
static int acq_fopen(void)
{
	char spath[] = "/tmp/devres-raw-stream-XXXXXX";
	int fd = mkstemp(spath);

	assert_true(fd >= 0);
	close(fd);
	stream = devm_fopen(&tdev, spath, "w");
	unlink(spath);
	assert_non_null(stream);
	assert_true(fputs("unflushed", stream) >= 0);
	return fileno(stream);
}

struct fd_kind {
	const char *call;
	int (*acquire)(void);
};

static const struct fd_kind fd_kinds[] = {
	{ "devm_open", acq_open },
	{ "devm_openat", acq_openat },
	{ "devm_memfd_create", acq_memfd },
	{ "devm_eventfd", acq_eventfd },
	{ "devm_timerfd_create", acq_timerfd },
	{ "devm_add_fd", acq_pipe },
	{ "devm_add_fd", acq_socket },
	{ "devm_add_fd", acq_dup },
	{ "devm_fopen", acq_fopen },
};

/* ---- descriptors: the ways, each ending with the other owner at @fd ---- */

static void raw_close(int fd)
{
	assert_int_equal(syscall(SYS_close, fd), 0);
	owner_open(fd);
}

static void raw_close_range(int fd)
{
	assert_int_equal(syscall(SYS_close_range, fd, fd, 0), 0);
	owner_open(fd);
}

/* The other owner's file put over the number: the dup3 closes it. */
static void raw_dup3(int fd)
{
	int o = open(path, O_RDWR | O_CLOEXEC);

	assert_true(o >= 0);
	assert_int_equal(syscall(SYS_dup3, o, fd, O_CLOEXEC), fd);
	assert_int_equal(syscall(SYS_close, o), 0);
}

#ifdef SYS_dup2
static void raw_dup2(int fd)
{
	int o = open(path, O_RDWR | O_CLOEXEC);

	assert_true(o >= 0);
	assert_int_equal(syscall(SYS_dup2, o, fd), fd);
	assert_int_equal(syscall(SYS_close, o), 0);
	assert_int_equal(fcntl(fd, F_SETFD, FD_CLOEXEC), 0);
}
#endif

/* glibc's own name for close(), which the library does not interpose. */
extern int __close(int fd); /* NOLINT(bugprone-reserved-identifier) */

static void libc_close(int fd)
{
	assert_int_equal(__close(fd), 0);
	owner_open(fd);
}

/* libc's fclose() closes the number inside itself. */
static void fdopen_fclose(int fd)
{
	static const char *const modes[] = { "r", "w", "r+" };
	FILE *f = fdopen(fd, modes[fcntl(fd, F_GETFL) & O_ACCMODE]);

	assert_non_null(f);
	fclose(f);
	owner_open(fd);
}

struct way {
	const char *name;
	void (*call)(int fd);
};

static const struct way fd_ways[] = {
	{ "SYS_close", raw_close }, { "SYS_close_range", raw_close_range },
	{ "SYS_dup3", raw_dup3 },
#ifdef SYS_dup2
	{ "SYS_dup2", raw_dup2 },
#endif
	{ "__close", libc_close },  { "fclose(fdopen())", fdopen_fclose },
};

static const struct fd_kind *cur_fd_kind;
static const struct way *cur_fd_way;

static void run_fd_cell(void **state)
{
	struct stat was;
	int fd;

	(void)state;
	stream = NULL;
	fd = cur_fd_kind->acquire();
	assert_true(fd >= 0);
	cur_fd_way->call(fd);
	assert_int_equal(fstat(fd, &was), 0);
	owner_intact(fd, &was);

	start_capture();
	devres_release_all(&tdev);
	at_most_one_warn("test-dev", cur_fd_kind->call);
	owner_intact(fd, &was);
	assert_int_equal(close(fd), 0);
}

/*
 * The same ways taken to the descriptor's private duplicate, which the
 * library keeps to tell its number from a reused one: the number stays
 * the program's own and is closed at release; the duplicate's number,
 * another owner's by then, is left to that owner.
 */
static int twin_of(int fd)
{
	pid_t pid = getpid();

	for (int t = 3; t < 1024; t++)
		if (t != fd && fcntl(t, F_GETFD) >= 0 &&
		    syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, t) == 0)
			return t;
	return -1;
}

static void run_twin_cell(void **state)
{
	struct stat was;
	int fd, twin;

	(void)state;
	stream = NULL;
	fd = cur_fd_kind->acquire();
	assert_true(fd >= 0);
	twin = twin_of(fd);
	assert_true(twin >= 0);
	cur_fd_way->call(twin);
	assert_int_equal(fstat(twin, &was), 0);

	start_capture();
	devres_release_all(&tdev);
	at_most_one_warn("test-dev", cur_fd_kind->call);
	owner_intact(twin, &was);
	assert_false(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(close(twin), 0);
}

/* ---- mappings: the kinds ---- */

static int win_memfd = -1, own_memfd = -1;

static char *acq_mmap_file(void)
{
	char *p = devm_mmap(&tdev, NULL, LEN, RW, MAP_SHARED, win_memfd, 0);

	assert_false(IS_ERR(p));
	return p;
}

static char *acq_dmam(void)
{
	dma_addr_t handle;
	char *p = dmam_alloc_coherent(&tdev, LEN, &handle, GFP_KERNEL);

	assert_non_null(p);
	return p;
}

struct map_kind {
	const char *call;
	char *(*acquire)(void);
	bool pci; /* on the fake PCI function, not test-dev */
};

static const struct map_kind map_kinds[] = {
	{ "devm_mmap", acq_mmap_file, false },
	{ "devm_mmap", devm_mmap_acq, false },
	{ "devm_ioremap", devm_ioremap_acq, false },
	{ "devm_ioremap_wc", devm_ioremap_wc_acq, false },
	{ "pcim_iomap", pcim_iomap_acq, true },
	{ "dmam_alloc_coherent", acq_dmam, false },
};

/* ---- mappings: the ways, each ending with the other owner at @p ---- */

/* The other owner's file, mapped at @p with @flags, and written. */
static void owner_map(char *p, int flags)
{
	void *q = (void *)syscall(SYS_mmap, p, LEN, RW, MAP_SHARED | flags,
				  own_memfd, 0);

	assert_ptr_equal(q, p);
	memcpy(p, pattern, sizeof(pattern));
	memcpy(p + LEN - sizeof(pattern), pattern, sizeof(pattern));
}

static void raw_munmap(char *p)
{
	assert_int_equal(syscall(SYS_munmap, p, LEN), 0);
	owner_map(p, MAP_FIXED_NOREPLACE);
}

/* Moved away, then given back there: the address is free again. */
static void raw_mremap(char *p)
{
	void *to =
		mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_ptr_not_equal(to, MAP_FAILED);
	assert_ptr_equal((void *)syscall(SYS_mremap, p, LEN, LEN,
					 MREMAP_MAYMOVE | MREMAP_FIXED, to),
			 to);
	assert_int_equal(syscall(SYS_munmap, to, LEN), 0);
	owner_map(p, MAP_FIXED_NOREPLACE);
}

static void raw_fixed(char *p)
{
	owner_map(p, MAP_FIXED);
}

struct map_way {
	const char *name;
	void (*call)(char *p);
};

static const struct map_way map_ways[] = {
	{ "SYS_munmap", raw_munmap },
	{ "SYS_mremap", raw_mremap },
	{ "SYS_mmap MAP_FIXED", raw_fixed },
};

static int mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)p, 4096, &v) == 0;
}

static const struct map_kind *cur_map_kind;
static const struct map_way *cur_map_way;

static void run_map_cell(void **state)
{
	struct device *mine = cur_map_kind->pci ? &pdev->dev : &tdev;
	char buf[sizeof(pattern)];
	char *p;

	(void)state;
	p = cur_map_kind->acquire();
	cur_map_way->call(p);

	start_capture();
	devres_release_all(mine);
	at_most_one_warn(dev_name(mine), cur_map_kind->call);
	for (size_t off = 0; off < LEN; off += 4096)
		assert_true(mapped(p + off));
	assert_memory_equal(p, pattern, sizeof(pattern));
	assert_memory_equal(p + LEN - sizeof(pattern), pattern,
			    sizeof(pattern));
	/* Still the other owner's file, written through. */
	p[0] = 'T';
	assert_int_equal(pread(own_memfd, buf, 1, 0), 1);
	assert_int_equal(buf[0], 'T');
	assert_int_equal(munmap(p, LEN), 0);
	assert_int_equal(pwrite(own_memfd, pattern, 1, 0), 1);
}

/* ---- the library's own descriptors ---- */

static int make_pci(const char *file)
{
	bool before[MAXFD];

	snapshot(before);
	assert_int_equal(pci_enable_device(pdev), 0);
	pci_set_master(pdev);
	return new_fd(before, file);
}

static int make_enable(void)
{
	return make_pci("/enable");
}

static int make_config(void)
{
	return make_pci("/config");
}

static void use_pci(void)
{
	pci_clear_master(pdev);
	pci_set_master(pdev);
	pci_disable_device(pdev);
}

struct own_kind {
	const char *name;
	int (*make)(void);
	void (*use)(void);
};

static const struct own_kind own_kinds[] = {
	{ "irq line eventfd", make_line, use_line },
	{ "PCI enable file", make_enable, use_pci },
	{ "PCI config file", make_config, use_pci },
	{ "managed thread wake eventfd", make_thread, use_thread },
};

static const struct own_kind *cur_own_kind;
static const struct way *cur_own_way;

static void run_own_cell(void **state)
{
	struct stat was;
	int fd;

	(void)state;
	fd = cur_own_kind->make();
	assert_true(fd >= 0);
	cur_own_way->call(fd);
	assert_int_equal(fstat(fd, &was), 0);
	start_capture();
	cur_own_kind->use();
	/* One WARN at most, naming what the number was. */
	assert_true(cap.n <= 1);
	owner_intact(fd, &was);
	assert_int_equal(close(fd), 0);
}

/* ---- the cells ---- */

struct cell {
	const void *kind, *way;
	void (*set)(const void *kind, const void *way);
	char name[80];
};

static void set_fd(const void *kind, const void *way)
{
	cur_fd_kind = kind;
	cur_fd_way = way;
}

static void set_map(const void *kind, const void *way)
{
	cur_map_kind = kind;
	cur_map_way = way;
}

static void set_own(const void *kind, const void *way)
{
	cur_own_kind = kind;
	cur_own_way = way;
}

static int cell_setup(void **state)
{
	const struct cell *c = *state;

	c->set(c->kind, c->way);
	/* The other owner's file, fresh for each cell. */
	assert_int_equal(pwrite(own_memfd, pattern, sizeof(pattern), 0),
			 sizeof(pattern));
	return dev_setup(state);
}

static int group_setup(void **state)
{
	int fd;

	(void)state;
	memcpy(path, tmpl, sizeof(tmpl));
	fd = mkstemp(path);
	if (fd < 0 || write(fd, pattern, sizeof(pattern)) != sizeof(pattern))
		return -1;
	close(fd);
	win_memfd = dev_memfd(LEN);
	own_memfd = dev_memfd(LEN);
	if (win_memfd < 0 || own_memfd < 0 ||
	    iomem_window_add(WIN, LEN, win_memfd, 0, "win"))
		return -1;
	return one_pci_fn_setup(LEN);
}

static int group_teardown(void **state)
{
	(void)state;
	one_pci_fn_teardown();
	iomem_window_remove(WIN);
	close(win_memfd);
	close(own_memfd);
	unlink(path);
	return 0;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define NR_CELLS                                                               \
	(2 * N(fd_kinds) * N(fd_ways) + N(map_kinds) * N(map_ways) +           \
	 N(own_kinds) * N(fd_ways))

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];
static size_t n;

static void add(const void *kind, const char *kname, const void *way,
		const char *wname, void (*set)(const void *, const void *),
		void (*run)(void **))
{
	cells[n] = (struct cell){ kind, way, set, "" };
	add_cell(&tests[n], &cells[n], run, cell_setup, dev_teardown,
		 "%s #%zu / %s", kname, n, wname);
	n++;
}

int main(void)
{
	for (size_t k = 0; k < N(fd_kinds); k++)
		for (size_t w = 0; w < N(fd_ways); w++)
			add(&fd_kinds[k], fd_kinds[k].call, &fd_ways[w],
			    fd_ways[w].name, set_fd, run_fd_cell);
	for (size_t k = 0; k < N(fd_kinds); k++)
		for (size_t w = 0; w < N(fd_ways); w++)
			add(&fd_kinds[k], fd_kinds[k].call, &fd_ways[w],
			    fd_ways[w].name, set_fd, run_twin_cell);
	for (size_t k = 0; k < N(map_kinds); k++)
		for (size_t w = 0; w < N(map_ways); w++)
			add(&map_kinds[k], map_kinds[k].call, &map_ways[w],
			    map_ways[w].name, set_map, run_map_cell);
	for (size_t k = 0; k < N(own_kinds); k++)
		for (size_t w = 0; w < N(fd_ways); w++)
			add(&own_kinds[k], own_kinds[k].name, &fd_ways[w],
			    fd_ways[w].name, set_own, run_own_cell);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("hostile-raw-release", tests, n,
				       group_setup, group_teardown);
}
