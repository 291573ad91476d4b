// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * The descriptors the library opens for its own use, closed by hand: each
 * kind of them x each call that closes a number. Every call is refused at
 * the call, with one WARN naming the kind; the number stays the library's
 * open file; and the library's next use of it still works.
 *
 * The kinds (enum devres__own_kind, one per open site of src/):
 *   the irq dispatcher's epoll and wake eventfd (irq/dispatch.c);
 *   an irq line's eventfd (irq_line_create()), the library's copy of an
 *   attached fd (irq_line_attach_fd()) and of a level line's unmask
 *   eventfd (irq_line_attach_level()) (irq/line.c);
 *   a managed thread's wake eventfd (posix/thread.c);
 *   the UIO device fd and the sysfs file of its number (uio/uio.c);
 *   the VFIO group, container and device fds and the eventfds given to
 *   VFIO for interrupts (vfio/container.c, device.c, irq.c);
 *   a PCI device's sysfs files (pci__open(), the fake tree's writes), the
 *   sysfs directories a scan and the backends read, and the sysfs root
 *   (pci/probe.c, fake.c);
 *   /proc/self/pagemap (dma/pagemap.c);
 *   the library's copy of an I/O window's fd (io/iomap.c);
 *   a directory held by the path walk without openat2() (base/resolve.c);
 *   /proc/self/maps, read to identify a managed mapping (posix/mmap.c).
 * rows[] has one row per kind, and the test fails when a kind has no row
 * (`every_kind_has_a_row`); tests/misuse/check-own-fds.sh fails when an
 * open site of src/ records no kind.
 *
 * A row made "at its site" has the library open the descriptor through
 * the public API and checks the library's own use of it afterwards (the
 * irq still delivers, the thread still stops, the enable file still
 * written, the window still maps, a UIO device's interrupt still reaches
 * the driver bound after). The others cannot be made here: VFIO
 * needs /dev/vfio (only inside the VM of tests/vm/run.sh), and the rest
 * are opened and closed inside one call of the library; their rows
 * record an eventfd under their kind by hand, which tests the refusal
 * and the WARN of that kind, not the site's record.
 *
 * The calls: close(), dup2() and dup3() onto the number, close_range()
 * over it (CLOSE_RANGE_CLOEXEC: not a close, let through with no WARN),
 * mq_close() of it, fclose(), freopen(), pclose() and endmntent() of a
 * stream fdopen()ed over it (closefrom():
 * test-posix-libc-closes). `close_range_closes_the_rest`:
 * the numbers around one of the library's in a range are closed.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/posix.h>
#include "testlib.h"
#include "irq/irq-test.h"
#include "pci/pcitest.h"
#include "pci/uiotest.h"
#include "../../src/base/subsys.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1u << 2)
#endif

#define MAXFD 1024
#define REF_FD 900 /* the test's duplicate of the number under test */

/* Whether @a and @b are one open file (kcmp()). */
static bool same_file(int a, int b)
{
	pid_t pid = getpid();

	return syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b) == 0;
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* The numbers open now, as a set. */
static void snapshot(bool open[MAXFD])
{
	memset(open, 0, MAXFD * sizeof(bool));
	for (int fd = 0; fd < MAXFD; fd++)
		open[fd] = is_open(fd);
}

/* The lowest number open now that was not in @before, or -1. */
static int new_fd(const bool before[MAXFD], int after)
{
	for (int fd = after + 1; fd < MAXFD; fd++)
		if (!before[fd] && is_open(fd))
			return fd;
	return -1;
}

static bool link_is(int fd, const char *what)
{
	char path[64], target[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strstr(target, what) != NULL;
}

/* ---- the dispatcher, kept running by an anchor line for every row ---- */

static int anchor_irq, anchor_count, anchor_epoll = -1, anchor_wake = -1;

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	add_int(dev_id, 1);
	return IRQ_HANDLED;
}

/* An interrupt raised on @irq reaches its handler, which counts @count. */
static void delivers(int irq, int *count)
{
	int n = load_int(count);

	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(count, n + 1));
}

static int group_setup(void **state)
{
	bool before[MAXFD];

	(void)state;
	anchor_irq = irq_line_create("anchor");
	if (anchor_irq <= 0)
		return -1;
	snapshot(before);
	if (request_irq((unsigned int)anchor_irq, count_irq, 0, "anchor",
			&anchor_count))
		return -1;
	for (int fd = new_fd(before, 2); fd >= 0; fd = new_fd(before, fd)) {
		if (link_is(fd, "[eventpoll]"))
			anchor_epoll = fd;
		else if (link_is(fd, "[eventfd]"))
			anchor_wake = fd;
	}
	return anchor_epoll >= 0 && anchor_wake >= 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	free_irq((unsigned int)anchor_irq, &anchor_count);
	return irq_line_destroy(anchor_irq);
}

/* ---- the rows ---- */

struct row {
	enum devres__own_kind kind;
	const char *name; /* what the WARN names it of */
	/* Has the library open its descriptor; returns the number. */
	int (*make)(void);
	/* The library's use of it, which must still work. */
	void (*use)(int fd);
	/* Undoes make(), the library closing the number. */
	void (*unmake)(int fd);
};

static void use_dispatcher(int fd)
{
	(void)fd;
	delivers(anchor_irq, &anchor_count);
}

static int make_epoll(void)
{
	return anchor_epoll;
}

static int make_wake(void)
{
	return anchor_wake;
}

/*
 * The wake eventfd is written when a line is taken off the dispatcher:
 * a line requested, raised, freed and destroyed.
 */
static void use_wake(int fd)
{
	int irq = irq_line_create("wake-use"), n = 0;

	(void)fd;
	assert_true(irq > 0);
	assert_int_equal(request_irq((unsigned int)irq, count_irq, 0, "w", &n),
			 0);
	delivers(irq, &n);
	free_irq((unsigned int)irq, &n);
	assert_int_equal(irq_line_destroy(irq), 0);
	delivers(anchor_irq, &anchor_count);
}

static void unmake_kept(int fd)
{
	(void)fd;
}

static int line_irq, line_count, line_efd = -1, line_ufd = -1;

/* @irq requested, with the number of the new descriptor @before lacked. */
static int requested(int irq, const bool before[MAXFD])
{
	assert_true(irq > 0);
	line_irq = irq;
	assert_int_equal(request_irq((unsigned int)irq, count_irq, 0, "row",
				     &line_count),
			 0);
	return new_fd(before, 2);
}

static int make_line(void)
{
	bool before[MAXFD];

	snapshot(before);
	return requested(irq_line_create("row-line"), before);
}

static void use_line(int fd)
{
	(void)fd;
	delivers(line_irq, &line_count);
}

static void unmake_line(int fd)
{
	(void)fd;
	free_irq((unsigned int)line_irq, &line_count);
	assert_int_equal(irq_line_destroy(line_irq), 0);
	if (line_efd >= 0)
		close(line_efd);
	if (line_ufd >= 0)
		close(line_ufd);
	line_efd = line_ufd = -1;
}

static int make_attached(void)
{
	bool before[MAXFD];

	line_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(line_efd >= 0);
	snapshot(before);
	return requested(irq_line_attach_fd(line_efd, "row-attached"), before);
}

static void use_attached(int fd)
{
	uint64_t one = 1;
	int n = load_int(&line_count);

	(void)fd;
	assert_int_equal(write(line_efd, &one, sizeof(one)), sizeof(one));
	assert_true(wait_at_least(&line_count, n + 1));
}

static int make_unmask(void)
{
	bool before[MAXFD];
	int fd;

	line_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	line_ufd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(line_efd >= 0 && line_ufd >= 0);
	snapshot(before);
	fd = requested(irq_line_attach_level(line_efd, line_ufd, "row-level"),
		       before);
	/* Of the two copies, the unmask eventfd's. */
	while (fd >= 0 && !same_file(fd, line_ufd))
		fd = new_fd(before, fd);
	return fd;
}

/* Handled, the level line is unmasked through the library's copy. */
static void use_unmask(int fd)
{
	struct pollfd p = { .fd = line_ufd, .events = POLLIN };
	uint64_t v;

	(void)fd;
	use_attached(fd);
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_int_equal(read(line_ufd, &v, sizeof(v)), sizeof(v));
}

static struct device thread_dev;
static struct devres_thread *row_thread;

static int sleeper(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 0;
}

static int make_thread(void)
{
	bool before[MAXFD];

	assert_int_equal(init_dev(&thread_dev, "own-dev"), 0);
	snapshot(before);
	row_thread = devm_thread_run(&thread_dev, sleeper, NULL, "row-thread");
	assert_false(IS_ERR(row_thread));
	return new_fd(before, 2);
}

/* The stop is the wake eventfd's write: the thread still stops. */
static void use_thread(int fd)
{
	(void)fd;
	assert_int_equal(devm_thread_stop(&thread_dev, row_thread), 0);
}

static void unmake_thread(int fd)
{
	(void)fd;
	assert_int_equal(devres_release_all(&thread_dev), 0);
	put_device(&thread_dev);
}

#define PDEV "0000:00:05.0"

static struct pci_dev *row_pdev;

static int make_pci_root(void)
{
	struct pci_fake_dev d = fake_dev(PDEV, 0x1234, 0x11e8, 0);
	bool before[MAXFD];
	int fd;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	snapshot(before);
	assert_int_equal(pci_bus_scan(), 1);
	row_pdev = pci_get_device(0x1234, 0x11e8, NULL);
	assert_non_null(row_pdev);
	pci_dev_put(row_pdev);
	fd = new_fd(before, 2);
	assert_true(link_is(fd, pci_fake_root(ft)));
	return fd;
}

/* Config space is read through files opened under the root. */
static void use_pci_root(int fd)
{
	uint16_t vendor = 0;

	(void)fd;
	assert_int_equal(pci_read_config_word(row_pdev, PCI_VENDOR_ID, &vendor),
			 0);
	assert_int_equal(vendor, 0x1234);
}

/* Every device removed, the ledger back where pci_setup() found it. */
static void unmake_pci_root(int fd)
{
	(void)fd;
	assert_int_equal(pci_teardown(NULL), 0);
}

#define UDEV "0000:00:06.0"

static struct fake_uio row_uio = { -1, -1 };
static int uio_count;

static irqreturn_t uio_irq(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&uio_count, 1);
	return IRQ_HANDLED;
}

/* Its interrupt line is a copy the library makes of its UIO device fd. */
static int uio_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
	if (ret < 0)
		return ret;
	return devm_request_irq(&pdev->dev,
				(unsigned int)pci_irq_vector(pdev, 0), uio_irq,
				0, "own-uio", pdev);
}

static const struct pci_device_id uio_ids[] = {
	{ PCI_DEVICE(0x1234, 0x11e8) },
	{ 0 },
};

static struct pci_driver uio_driver = {
	.name = "own-uio",
	.id_table = uio_ids,
	.probe = uio_probe,
};

static int make_uio(void)
{
	struct pci_fake_dev d = fake_dev(UDEV, 0x1234, 0x11e8, 1);
	bool before[MAXFD];
	int fd;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(uio_dir_make(), 0);
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(UDEV, 3, &row_uio), 0);
	snapshot(before);
	assert_int_equal(pci_bus_scan_device(UDEV), 0);
	/* The device fd: the terminal the fake's /dev/uio3 names. */
	for (fd = new_fd(before, 2); fd >= 0 && !link_is(fd, "/dev/pts/");)
		fd = new_fd(before, fd);
	return fd;
}

/* A driver bound now gets its interrupts through the library's fd. */
static void use_uio(int fd)
{
	int n = load_int(&uio_count);

	(void)fd;
	assert_int_equal(pci_register_driver(&uio_driver), 0);
	assert_int_equal(uio_fire(UDEV, &row_uio, 1), 0);
	assert_true(wait_at_least(&uio_count, n + 1));
	pci_unregister_driver(&uio_driver);
}

static void unmake_uio(int fd)
{
	(void)fd;
	pci_bus_remove_all();
	fake_uio_close(&row_uio);
	assert_int_equal(pci_teardown(NULL), 0);
	uio_dir_remove();
}

static int make_pci_file(void)
{
	bool before[MAXFD];
	int fd;

	make_pci_root();
	snapshot(before);
	assert_int_equal(pci_enable_device(row_pdev), 0);
	for (fd = new_fd(before, 2); fd >= 0 && !link_is(fd, "/enable");)
		fd = new_fd(before, fd);
	return fd;
}

/* The disable writes "0" through the enable file the library holds. */
static void use_pci_file(int fd)
{
	char path[4096], c = 0;
	int f;

	(void)fd;
	pci_disable_device(row_pdev);
	assert_int_equal(pci_fake_path(ft, PDEV, "enable", path, sizeof(path)),
			 0);
	f = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(f >= 0);
	assert_int_equal(read(f, &c, 1), 1);
	close(f);
	assert_int_equal(c, '0');
}

#define WINDOW 0xfe000000ull

static int row_memfd = -1;

static int make_window(void)
{
	bool before[MAXFD];

	row_memfd = memfd_create("row-window", MFD_CLOEXEC);
	assert_true(row_memfd >= 0);
	assert_int_equal(ftruncate(row_memfd, 4096), 0);
	snapshot(before);
	assert_int_equal(
		iomem_window_add(WINDOW, 4096, row_memfd, 0, "row-window"), 0);
	return new_fd(before, 2);
}

/* ioremap() maps the window through the library's copy of the memfd. */
static void use_window(int fd)
{
	void *p = ioremap(WINDOW, 4096);
	uint32_t v = 0;

	(void)fd;
	assert_non_null(p);
	writel(0x5a5aa5a5, p);
	iounmap(p);
	assert_int_equal(pread(row_memfd, &v, sizeof(v), 0), sizeof(v));
	assert_int_equal(v, 0x5a5aa5a5);
}

static void unmake_window(int fd)
{
	(void)fd;
	assert_int_equal(iomem_window_remove(WINDOW), 0);
	close(row_memfd);
	row_memfd = -1;
}

/* ---- the kinds recorded by hand ---- */

static enum devres__own_kind by_hand_kind;

static int make_by_hand(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);

	assert_true(fd >= 0);
	devres__own_fd_add(fd, by_hand_kind, "by-hand");
	return fd;
}

/* Still an eventfd that reads and writes. */
static void use_by_hand(int fd)
{
	uint64_t v = 1;

	assert_int_equal(write(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
}

static void unmake_by_hand(int fd)
{
	assert_int_equal(devres__own_fd_close(fd), 0);
}

#define SITE(k, n, m, u, um)                                                   \
	{                                                                      \
		k, n, m, u, um                                                 \
	}
#define HAND(k)                                                                \
	{                                                                      \
		k, "by-hand", make_by_hand, use_by_hand, unmake_by_hand        \
	}

/* clang-format off */
static const struct row rows[] = {
	SITE(DEVRES_OWN_IRQ_EPOLL, "the irq dispatcher", make_epoll,
	     use_dispatcher, unmake_kept),
	SITE(DEVRES_OWN_IRQ_WAKE, "the irq dispatcher", make_wake, use_wake,
	     unmake_kept),
	SITE(DEVRES_OWN_IRQ_LINE, "irq line 'row-line'", make_line, use_line,
	     unmake_line),
	SITE(DEVRES_OWN_IRQ_ATTACHED, "irq line 'row-attached'", make_attached,
	     use_attached, unmake_line),
	SITE(DEVRES_OWN_IRQ_UNMASK, "irq line 'row-level'", make_unmask,
	     use_unmask, unmake_line),
	SITE(DEVRES_OWN_THREAD_WAKE, "managed thread 'row-thread'",
	     make_thread, use_thread, unmake_thread),
	SITE(DEVRES_OWN_PCI_ROOT, "the PCI bus", make_pci_root, use_pci_root,
	     unmake_pci_root),
	SITE(DEVRES_OWN_PCI_FILE, "PCI device " PDEV " (enable)",
	     make_pci_file, use_pci_file, unmake_pci_root),
	SITE(DEVRES_OWN_IO_WINDOW, "row-window", make_window, use_window,
	     unmake_window),
	SITE(DEVRES_OWN_UIO, "uio3", make_uio, use_uio, unmake_uio),
	HAND(DEVRES_OWN_UIO_SYSFS),
	HAND(DEVRES_OWN_VFIO_GROUP),
	HAND(DEVRES_OWN_VFIO_CONTAINER),
	HAND(DEVRES_OWN_VFIO_DEVICE),
	HAND(DEVRES_OWN_VFIO_EVENTFD),
	HAND(DEVRES_OWN_PCI_DIR),
	HAND(DEVRES_OWN_PAGEMAP),
	HAND(DEVRES_OWN_PATH_WALK),
	HAND(DEVRES_OWN_MAPS),
};
/* clang-format on */

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static void every_kind_has_a_row(void **state)
{
	(void)state;
	for (int k = DEVRES_OWN_NONE + 1; k < DEVRES_OWN_NR; k++) {
		int n = 0;

		for (size_t i = 0; i < NROWS; i++)
			n += rows[i].kind == (enum devres__own_kind)k;
		if (n != 1)
			print_error("kind %d (%s): %d rows\n", k,
				    devres__own_kind_name(k), n);
		assert_int_equal(n, 1);
	}
	assert_int_equal(NROWS, DEVRES_OWN_NR - 1);
}

/* ---- the calls ---- */

enum call {
	C_CLOSE,
	C_DUP2,
	C_DUP3,
	C_RANGE,
	C_RANGE_CLOEXEC,
	C_FCLOSE,
	C_FREOPEN,
	C_PCLOSE,
	C_ENDMNTENT,
	C_MQ_CLOSE,
	NCALLS
};

static const char *const call_name[NCALLS] = {
	"close",  "dup2",    "dup3",   "close_range", "close_range",
	"fclose", "freopen", "pclose", "endmntent",   "mq_close",
};

/* The calls made on a stream fdopen()ed over the number. */
static bool on_stream(enum call call)
{
	return call == C_FCLOSE || call == C_FREOPEN || call == C_PCLOSE ||
	       call == C_ENDMNTENT;
}

/*
 * Makes @call on @fd; checks what it returns, the one WARN (none for
 * CLOSE_RANGE_CLOEXEC), and that @fd is still the open file it was.
 */
static void refuse(const struct row *r, enum call call, int fd)
{
	char reason[256];
	int src = -1, ret = 0, ref;
	FILE *f = NULL;

	ref = fcntl(fd, F_DUPFD_CLOEXEC, REF_FD);
	assert_true(ref >= REF_FD);
	if (call == C_DUP2 || call == C_DUP3) {
		src = open("/dev/null", O_RDONLY | O_CLOEXEC);
		assert_true(src >= 0);
	}
	if (on_stream(call)) {
		/* The enable file is open for writing only. */
		f = fdopen(fd, (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY
				       ? "w"
				       : "r");
		assert_non_null(f);
	}
	start_capture();
	errno = 0;
	switch (call) {
	case C_CLOSE:
		ret = close(fd);
		break;
	case C_DUP2:
		ret = dup2(src, fd);
		break;
	case C_DUP3:
		ret = dup3(src, fd, O_CLOEXEC);
		break;
	case C_RANGE:
		ret = close_range((unsigned int)fd, (unsigned int)fd, 0);
		break;
	case C_RANGE_CLOEXEC:
		ret = close_range((unsigned int)fd, (unsigned int)fd,
				  CLOSE_RANGE_CLOEXEC);
		break;
	case C_FCLOSE:
		ret = fclose(f) == EOF ? -1 : 0;
		break;
	case C_FREOPEN:
		ret = freopen("/dev/null", "r", f) ? 0 : -1;
		break;
	case C_PCLOSE:
		ret = pclose(f);
		break;
	case C_ENDMNTENT:
		/* 1 whatever happens: the refusal is told by errno. */
		assert_int_equal(endmntent(f), 1);
		ret = -1;
		break;
	case C_MQ_CLOSE:
		ret = mq_close(fd);
		break;
	case NCALLS:
		break;
	}
	if (call == C_RANGE || call == C_RANGE_CLOEXEC) {
		/* close_range() answers for the rest of its range: none. */
		assert_int_equal(ret, 0);
	} else {
		assert_int_equal(ret, -1);
		assert_int_equal(errno, EPERM);
	}
	snprintf(reason, sizeof(reason), "fd %d is %s of %s, the library's own",
		 fd, devres__own_kind_name(r->kind), r->name);
	if (call == C_RANGE_CLOEXEC)
		expect_no_warn();
	else
		expect_warn_on("(no device)", call_name[call], reason);
	assert_true(is_open(fd));
	assert_true(same_file(fd, ref));
	close(ref);
	if (src >= 0)
		close(src);
	if (f) {
		/* The refused stream is freed once the library closed fd. */
		r->use(fd);
		r->unmake(fd);
		if (r->unmake != unmake_kept) {
			assert_false(is_open(fd));
			assert_int_equal(fclose(f), EOF);
		}
	}
}

static void row_calls(const struct row *r)
{
	for (int call = 0; call < NCALLS; call++) {
		int fd;

		if (r->make == make_by_hand)
			by_hand_kind = r->kind;
		fd = r->make();
		assert_true(fd > 2);
		refuse(r, (enum call)call, fd);
		if (on_stream((enum call)call))
			continue; /* used and undone above */
		r->use(fd);
		r->unmake(fd);
		/* The library's own close: the number is gone. */
		if (r->unmake != unmake_kept)
			assert_false(is_open(fd));
	}
}

static void each_row(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROWS; i++) {
		print_message("row %s\n", devres__own_kind_name(rows[i].kind));
		row_calls(&rows[i]);
	}
}

/*
 * close_range() over three numbers, the middle one the library's: the
 * other two are closed, the middle one stays; one WARN.
 */
static void close_range_closes_the_rest(void **state)
{
	int lo = 700, fd;

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_false(is_open(lo + i));
	fd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(dup2(fd, lo), lo);
	assert_int_equal(dup2(fd, lo + 1), lo + 1);
	assert_int_equal(dup2(fd, lo + 2), lo + 2);
	close(fd);
	devres__own_fd_add(lo + 1, DEVRES_OWN_VFIO_DEVICE, "0000:00:07.0");
	start_capture();
	assert_int_equal(close_range((unsigned int)lo, (unsigned int)lo + 2, 0),
			 0);
	expect_warn_on("(no device)", "close_range",
		       "fd 701 is the VFIO device fd of 0000:00:07.0, the "
		       "library's own: refused, it stays open");
	assert_false(is_open(lo));
	assert_true(is_open(lo + 1));
	assert_false(is_open(lo + 2));
	/* A range with the library's number at either end. */
	assert_int_equal(dup2(lo + 1, lo), lo);
	start_capture();
	assert_int_equal(close_range((unsigned int)lo, (unsigned int)lo + 1, 0),
			 0);
	expect_warn_on("(no device)", "close_range", "fd 701 is");
	assert_false(is_open(lo));
	assert_true(is_open(lo + 1));
	assert_int_equal(devres__own_fd_close(lo + 1), 0);
	assert_false(is_open(lo + 1));
	/* Its number closed by the library: an ordinary number again. */
	assert_int_equal(dup2(0, lo + 1), lo + 1);
	start_capture();
	assert_int_equal(close(lo + 1), 0);
	expect_no_warn();
}

/* Calls that close nothing are let through as before, with no WARN. */
static void calls_that_close_nothing(void **state)
{
	int fd = anchor_epoll, closed_fd = 710;

	(void)state;
	assert_false(is_open(closed_fd));
	start_capture();
	/* dup2() from a closed number fails without touching @fd. */
	errno = 0;
	assert_int_equal(dup2(closed_fd, fd), -1);
	assert_int_equal(errno, EBADF);
	/* Onto itself: the number back. */
	assert_int_equal(dup2(fd, fd), fd);
	/* A flag dup3() refuses. */
	assert_int_equal(dup3(0, fd, 0x4000), -1);
	assert_int_equal(errno, EINVAL);
	/* Bounds reversed. */
	assert_int_equal(close_range((unsigned int)fd, (unsigned int)fd - 1, 0),
			 -1);
	assert_int_equal(errno, EINVAL);
	expect_no_warn();
	use_dispatcher(fd);
}

/*
 * Numbers up to the largest fs.nr_open allows are recorded: no fixed
 * limit under it (1 048 576, fs.nr_open's default, was one). A number
 * that high needs fs.nr_open raised, which a test may not do to its
 * machine: recorded by hand, unopened, each from a chunk and a top not
 * made yet, on either side of the first chunk and of the old limit.
 */
static void numbers_of_any_height(void **state)
{
	static const unsigned int nums[] = {
		255,
		256,
		(1u << 20) - 1,
		1u << 20,
		(1u << 20) + 1,
		3000000,
		(1u << 26) + 7,
	};
	struct devres__own_seen seen;
	char name[40];
	bool inherited;

	(void)state;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		int fd = (int)nums[i];

		print_message("fd %d\n", fd);
		assert_false(is_open(fd));
		assert_false(devres__own_fd_maybe(fd));
		devres__own_fd_add(fd, DEVRES_OWN_IRQ_LINE, "high");
		assert_true(devres__own_fd_maybe(fd));
		assert_int_equal(devres__own_fd_kind(fd, name, sizeof(name),
						     &inherited),
				 DEVRES_OWN_IRQ_LINE);
		assert_string_equal(name, "high");
		assert_false(inherited);
		assert_int_equal(devres__own_fd_next((unsigned int)fd - 1,
						     UINT_MAX, &seen),
				 fd);
		devres__own_fd_forget(fd);
		assert_false(devres__own_fd_maybe(fd));
	}
	/* The lower numbers still found after the top grew. */
	assert_true(devres__own_fd_maybe(anchor_epoll));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(numbers_of_any_height),
		cmocka_unit_test(every_kind_has_a_row),
		cmocka_unit_test(each_row),
		cmocka_unit_test(close_range_closes_the_rest),
		cmocka_unit_test(calls_that_close_nothing),
	};

	/* The cases count WARN lines: no backtrace after each. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, group_setup, group_teardown);
}
