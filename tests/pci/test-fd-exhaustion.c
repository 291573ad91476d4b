// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault pci tsan */
/*
 * Out of file descriptors at every point. Each subsystem's acquisition
 * sequence runs with the process allowed k more fds (RLIMIT_NOFILE just
 * above its open ones, the holes below filled), for k = 0, 1, 2, ...
 * until it succeeds: the PCI scan, the use of a scanned device (enable,
 * BAR mapping, config space), a PCI driver's managed probe, an interrupt
 * line with a threaded handler, and every managed POSIX fd and thread.
 * Each failed run returns -EMFILE (never "no such device": the device is
 * fine, the process is out of fds), leaves the ledger and /proc/self/fd
 * as they were and prints no WARN; and once fds are back, the same
 * sequence succeeds on the same device.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <poll.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"

#define DEV "0000:00:05.0"
#define OTHER "0000:00:06.0"
/* More fds than any sequence here needs: a sweep that reaches it fails. */
#define MAX_EXTRA 64
#define FD_SPAN 4096

static int fillers[FD_SPAN];
static int nfill;
static struct rlimit saved_limit;

/*
 * From now on the process can open exactly @k more fds: every free number
 * below its highest open fd is taken by a filler, and the soft limit is
 * set just above that highest fd.
 */
static void cap_fds(unsigned int k)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), top = -1;
	struct rlimit r;

	assert_true(null >= 0);
	for (int fd = 0; fd < FD_SPAN; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			top = fd;
	nfill = 0;
	fillers[nfill++] = null;
	for (int fd = 0; fd < top; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		assert_int_equal(dup3(null, fd, O_CLOEXEC), fd);
		fillers[nfill++] = fd;
	}
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved_limit), 0);
	r = saved_limit;
	r.rlim_cur = (rlim_t)top + 1 + k;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &r), 0);
}

static void uncap_fds(void)
{
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved_limit), 0);
	while (nfill)
		close(fillers[--nfill]);
}

/*
 * One acquisition sequence: @op acquires (0, or a negative errno with
 * nothing kept), @undo gives back what a successful @op took, @check
 * (when not NULL) holds after every failed run and after the fault sweep.
 * @fds: the fewest fds a successful @op must have needed; @points: when
 * not 0, the sequence is also swept by fault injection, strict, and must
 * have at least that many failure points.
 */
struct seq {
	int (*op)(void);
	void (*undo)(void);
	void (*check)(void);
	unsigned int fds;
	unsigned int points;
};

/*
 * Runs @s->op with 0, 1, 2, ... more fds allowed until it succeeds, then
 * @s->undo. Every failed run: -EMFILE, nothing left behind, no WARN, and
 * @s->check holds. Then the same without a limit. Returns how many fds
 * the sequence needed.
 */
static unsigned int fd_sweep(const struct seq *s)
{
	struct devres_ledger before, after;
	int warns = devres_warn_count();
	int base = count_open_fds(), ret = -1;
	unsigned int k;

	devres_ledger_snapshot(&before);
	for (k = 0; k <= MAX_EXTRA; k++) {
		cap_fds(k);
		ret = s->op();
		uncap_fds();
		if (getenv("FDX_DEBUG"))
			fprintf(stderr, "k=%u ret=%d\n", k, ret);
		if (ret >= 0)
			break;
		if (ret != -EMFILE)
			print_error("with %u fds: %s\n", k, strerror(-ret));
		assert_int_equal(ret, -EMFILE);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
		assert_int_equal(count_open_fds(), base);
		if (s->check)
			s->check();
	}
	assert_true(ret >= 0);
	s->undo();
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(count_open_fds(), base);
	/* The device is as usable as before. */
	assert_true(s->op() >= 0);
	s->undo();
	assert_int_equal(count_open_fds(), base);
	assert_int_equal(devres_warn_count(), warns);
	return k;
}

static int seq_op(void *ctx)
{
	return ((const struct seq *)ctx)->op();
}

static void seq_undo(void *ctx)
{
	((const struct seq *)ctx)->undo();
}

/*
 * @s short of fds at every point, then (when @s->points) by fault
 * injection, strict: each failure point (each open, each allocation,
 * each mapping) makes @s->op fail with the error injected, never succeed
 * with something missing, and leaves nothing behind.
 */
static void sweep(const struct seq *s)
{
	struct devres_sweep_result r;

	assert_true(fd_sweep(s) >= s->fds);
	if (!s->points)
		return;
	devres_sweep_set_strict(true);
	assert_int_equal(devres_sweep(seq_op, seq_undo, (void *)s, &r), 0);
	devres_sweep_set_strict(false);
	assert_int_equal(r.findings, 0);
	assert_int_equal(r.leaks, 0);
	assert_true(r.points >= s->points);
	if (s->check)
		s->check();
}

static void add_two(void)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 2);
	struct pci_fake_dev o = fake_dev(OTHER, 0x1af4, 0x20, 2);

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_fake_add(ft, &o), 0);
}

/* --- the scan --- */

static int scan_op(void)
{
	int n = pci_bus_scan();

	/* A scan that succeeds has every device: none skipped for want of fds. */
	return n < 0 ? n : n == 2 ? 0 : -ECHRNG;
}

static void scan_undo(void)
{
	pci_bus_remove_all();
}

/* --- a scanned device's use: enable, map, config --- */

static struct pci_dev *pdev;
static void __iomem *bar;

/* Both devices scanned; pdev is the first, referenced. */
static void scan_two(void)
{
	add_two();
	assert_int_equal(pci_bus_scan(), 2);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(pdev);
}

static int use_op(void)
{
	uint32_t id;
	int ret;

	ret = pci_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	bar = pci_iomap(pdev, 0, 0);
	if (!bar) {
		ret = -errno;
		pci_disable_device(pdev);
		return ret;
	}
	writel(0x5a5a5a5a, bar);
	/* PCIBIOS codes have no errno: a failed read is all ones. */
	ret = pci_read_config_dword(pdev, PCI_VENDOR_ID, &id);
	if (!ret && id == (0x10u << 16 | 0x1af4))
		return 0;
	pci_iounmap(pdev, bar);
	pci_disable_device(pdev);
	/* PCIBIOS codes have no errno: a failed read is all ones. */
	return ret && id == ~0u ? -EMFILE : -EBADMSG;
}

/*
 * The device the library says is disabled is disabled in its files too,
 * and masters no more, however short of fds its release ran.
 */
static void left_disabled(void)
{
	uint8_t cfg[8];
	char c[2];

	assert_int_equal(fake_read(DEV, "enable", c, sizeof(c)), 1);
	assert_int_equal(c[0], '0');
	assert_int_equal(fake_read(DEV, "config", (char *)cfg, sizeof(cfg)), 7);
	assert_int_equal(cfg[PCI_COMMAND] & PCI_COMMAND_MASTER, 0);
	assert_false(pci_is_enabled(pdev));
}

static void use_undo(void)
{
	assert_int_equal(readl(bar), 0x5a5a5a5a);
	pci_iounmap(pdev, bar);
	pci_disable_device(pdev);
	left_disabled();
}

static void put_pdev(void)
{
	pci_dev_put(pdev);
}

/* --- a driver's managed probe, with its interrupt --- */

static int probe_ret;
static int line;

static irqreturn_t on_irq(int irq, void *arg)
{
	(void)irq;
	(void)arg;
	return IRQ_HANDLED;
}

static int probe(struct pci_dev *p, const struct pci_device_id *id)
{
	void __iomem *const *t;
	int ret, efd;

	(void)id;
	ret = pcim_enable_device(p);
	if (!ret) {
		pci_set_master(p);
		ret = pcim_iomap_regions(p, 1, "fdx");
	}
	if (!ret) {
		t = pcim_iomap_table(p);
		writel(1, t[0]);
		ret = pci_dev_set_irq_lines(p, &line, 1);
	}
	if (!ret) {
		ret = pci_alloc_irq_vectors(p, 1, 1, PCI_IRQ_ALL_TYPES);
		ret = ret < 0 ? ret : 0;
	}
	if (!ret)
		ret = devm_request_irq(&p->dev, (unsigned int)line, on_irq, 0,
				       "fdx", p);
	if (!ret) {
		efd = devm_eventfd(&p->dev, 0, 0);
		ret = efd < 0 ? efd : 0;
	}
	probe_ret = ret;
	return ret;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(0x1af4, 0x10) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "fdx",
	.id_table = ids,
	.probe = probe,
};

/* The driver probing pdev: drv, or uio_drv below. */
static struct pci_driver *probing = &drv;

/* The driver is registered: its probe runs, and fails, with fds short. */
static int probe_op(void)
{
	return device_driver_attach(&probing->driver, &pdev->dev);
}

static void probe_undo(void)
{
	device_release_driver(&pdev->dev);
}

/* The driver registered (it probes once, fine) and released again. */
static void probe_prepare(void)
{
	scan_two();
	line = irq_line_create("fdx");
	assert_true(line > 0);
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_int_equal(probe_ret, 0);
	device_release_driver(&pdev->dev);
}

static void probe_finish(void)
{
	pci_unregister_driver(&drv);
	pci_dev_put(pdev);
	assert_int_equal(irq_line_destroy(line), 0);
}

/*
 * Releases take no new fd: a device enabled, mastering and mapped, by hand
 * and by a driver's probe, is released with not one fd to spare, and is
 * disabled and stops mastering all the same.
 */
static void test_release_without_fds(void **state)
{
	struct devres_ledger before, after;
	int base;

	(void)state;
	scan_two();
	line = irq_line_create("fdx");
	assert_true(line > 0);
	base = count_open_fds();
	devres_ledger_snapshot(&before);

	assert_int_equal(use_op(), 0);
	cap_fds(0);
	pci_iounmap(pdev, bar);
	pci_disable_device(pdev);
	uncap_fds();
	left_disabled();

	assert_int_equal(pci_register_driver(&drv), 0);
	assert_int_equal(probe_ret, 0);
	cap_fds(0);
	device_release_driver(&pdev->dev);
	uncap_fds();
	left_disabled();
	pci_unregister_driver(&drv);

	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(count_open_fds(), base);
	pci_dev_put(pdev);
	assert_int_equal(irq_line_destroy(line), 0);
}

/* --- an interrupt line and a threaded handler, no device --- */

static int tline;

static irqreturn_t quick(int irq, void *arg)
{
	(void)irq;
	(void)arg;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t slow(int irq, void *arg)
{
	(void)irq;
	(void)arg;
	return IRQ_HANDLED;
}

static int irq_op(void)
{
	int ret;

	tline = irq_line_create("fdx-line");
	if (tline < 0)
		return tline;
	ret = request_threaded_irq((unsigned int)tline, quick, slow, 0, "fdx",
				   &tline);
	if (ret) {
		assert_int_equal(irq_line_destroy(tline), 0);
		return ret;
	}
	return 0;
}

static void irq_undo(void)
{
	assert_ptr_equal(free_irq((unsigned int)tline, &tline), "fdx");
	assert_int_equal(irq_line_destroy(tline), 0);
}

/* --- every managed POSIX fd, and a managed thread --- */

static int idle(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(10);
	return 0;
}

static int posix_op(void)
{
	struct devres_thread *t;
	int ret = 0;
	FILE *f;

	if (devm_open(&tdev, "/dev/null", O_RDONLY) < 0 ||
	    devm_eventfd(&tdev, 0, 0) < 0 ||
	    devm_timerfd_create(&tdev, CLOCK_MONOTONIC, 0) < 0 ||
	    devm_memfd_create(&tdev, "fdx", 0) < 0)
		ret = -errno;
	if (!ret) {
		f = devm_fopen(&tdev, "/dev/null", "r");
		ret = f ? 0 : -errno;
	}
	if (!ret) {
		t = devm_thread_run(&tdev, idle, NULL, "fdx");
		ret = IS_ERR(t) ? (int)PTR_ERR(t) : 0;
	}
	/* A probe that fails gives back what it took. */
	if (ret)
		devres_release_all(&tdev);
	return ret;
}

static void posix_undo(void)
{
	devres_release_all(&tdev);
}

/* --- a device taken through UIO: its node, and its interrupt --- */

static struct fake_uio fu = { -1, -1 };

static int uio_scan_op(void)
{
	struct pci_dev *p;
	bool uio;
	int ret = pci_bus_scan_device(DEV);

	if (ret)
		return ret;
	p = pci_get_device(0x1af4, 0x10, NULL);
	uio = pci_dev_is_uio(p);
	pci_dev_put(p);
	/* Never the sysfs path for want of an fd: that would lose the irq. */
	return uio ? 0 : -ECHRNG;
}

static int uio_probe(struct pci_dev *p, const struct pci_device_id *id)
{
	int ret, n;

	(void)id;
	ret = pcim_enable_device(p);
	if (!ret)
		ret = pcim_iomap_regions(p, 1, "fdx-uio");
	if (ret)
		return ret;
	pci_set_master(p);
	n = pci_alloc_irq_vectors(p, 1, 1, PCI_IRQ_INTX);
	if (n < 0)
		return n;
	return devm_request_irq(&p->dev, (unsigned int)pci_irq_vector(p, 0),
				on_irq, 0, "fdx-uio", p);
}

static struct pci_driver uio_drv = {
	.name = "fdx-uio",
	.id_table = ids,
	.probe = uio_probe,
};

/* After any failed probe: not mastering (the UIO quiesce ran). */
static void uio_quiet(void)
{
	uint8_t cfg[8];

	assert_int_equal(fake_read(DEV, "config", (char *)cfg, sizeof(cfg)), 7);
	assert_int_equal(cfg[PCI_COMMAND] & PCI_COMMAND_MASTER, 0);
}

static const struct seq uio_scan = { uio_scan_op, scan_undo, NULL, 1, 8 };
static const struct seq uio_probe_seq = { probe_op, probe_undo, uio_quiet, 1,
					  0 };

/* Last: pci_uio_enable() holds for the rest of the process. */
static void test_uio(void **state)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);

	(void)state;
	assert_int_equal(uio_dir_make(), 0);
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(DEV, 3, &fu), 0);
	/* Short of fds, then each of its failure points: its own error. */
	sweep(&uio_scan);

	assert_int_equal(pci_bus_scan_device(DEV), 0);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	assert_true(pci_dev_is_uio(pdev));
	assert_int_equal(pci_register_driver(&uio_drv), 0);
	assert_true(device_is_bound(&pdev->dev));
	device_release_driver(&pdev->dev);
	probing = &uio_drv;
	sweep(&uio_probe_seq);
	probing = &drv;
	pci_unregister_driver(&uio_drv);
	pci_dev_put(pdev);
	pci_bus_remove_all();
	fake_uio_close(&fu);
	uio_dir_remove();
}

/* An assertion inside a capped run must not leave the limit low. */
static int fdx_teardown(void **state)
{
	if (nfill)
		uncap_fds();
	return pci_teardown(state);
}

static int posix_teardown(void **state)
{
	if (nfill)
		uncap_fds();
	return dev_teardown(state);
}

/*
 * The sequences swept whole, each a test: what runs before the sweep, the
 * sequence, what runs after, in the fixture of the PCI tree or, for the
 * POSIX calls, of a plain device.
 */
struct fdx_case {
	const char *name;
	void (*prepare)(void);
	struct seq seq;
	void (*finish)(void);
	bool posix;
};

static const struct fdx_case cases[] = {
	/* Every failure point of the scan, the listing's too: 12 at least. */
	{ "scan", add_two, { scan_op, scan_undo, NULL, 1, 12 }, NULL, false },
	{ "use",
	  scan_two,
	  { use_op, use_undo, left_disabled, 1, 8 },
	  put_pdev,
	  false },
	{ "probe",
	  probe_prepare,
	  { probe_op, probe_undo, left_disabled, 1, 0 },
	  probe_finish,
	  false },
	{ "irq", NULL, { irq_op, irq_undo, NULL, 1, 0 }, NULL, false },
	/* Five fds and a thread's eventfd at least. */
	{ "posix", NULL, { posix_op, posix_undo, NULL, 6, 0 }, NULL, true },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void run_case(void **state)
{
	const struct fdx_case *c = *state;

	if (c->prepare)
		c->prepare();
	sweep(&c->seq);
	if (c->finish)
		c->finish();
}

/* The fixtures set *state: the case is kept. */
static int case_setup(void **state)
{
	const struct fdx_case *c = *state;
	int ret = c->posix ? dev_setup(state) : pci_setup(state);

	*state = (void *)c;
	return ret;
}

static int case_teardown(void **state)
{
	const struct fdx_case *c = *state;

	return c->posix ? posix_teardown(state) : fdx_teardown(state);
}

int main(void)
{
	struct CMUnitTest tests[NCASES + 2];
	size_t n;

	for (n = 0; n < NCASES; n++)
		tests[n] = (struct CMUnitTest){ cases[n].name, run_case,
						case_setup, case_teardown,
						(void *)&cases[n] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
		test_release_without_fds, pci_setup, fdx_teardown);
	/* Last: pci_uio_enable() holds for the rest of the process. */
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
		test_uio, pci_setup, fdx_teardown);
	return _cmocka_run_group_tests("fd-exhaustion", tests, n, NULL, NULL);
}
