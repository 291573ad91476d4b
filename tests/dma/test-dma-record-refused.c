// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile dma tsan timeout=120 */
/*
 * Every managed call that acquires first and records its node on the
 * device after (the node goes on in the hold of the subsystem's lock that
 * gives the resource its owner), made by a thread without a reference to
 * the device, in three states of the device: live (the call holds), its
 * release over (the call is refused at once), and its last put_device()
 * on another thread at the same moment. In that race the call may pass
 * its first look at the device and find it released only when it
 * records: the device refuses the node, and the call must give back what
 * it acquired and fail with its documented error. Each round ends with
 * the ledger back, the documented return, and one WARN at most on the
 * calling thread.
 *
 * Before: the refused record was not told to the call, which kept its
 * buffer, pool, DMA state, region, range, mapping, handler, descriptor,
 * stream, pages or thread and returned success; nothing would ever give
 * them back (the ledger up after the rounds, or the next round's claim in
 * conflict with what was kept). devm_add_fd() WARNed up to five times.
 *
 * Each cell runs in a child under an alarm; DEVRES_RACE_ROUNDS sets the
 * rounds of the race. RECORD_REFUSED_WARNS=1 prints the calling thread's
 * WARNs.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <devres/revocable.h>
#include <devres/posix.h>
#include "hostile/cell-child.h"
#include "rounds.h"

#define CELL_ALARM_S 60

enum col {
	C_COHERENT,
	C_POOL,
	C_REGION,
	C_MEM_REGION,
	C_RESOURCE,
	C_MMAP,
	C_IOREMAP,
	C_IRQ,
	C_OPEN,
	C_ADD_FD,
	C_FOPEN,
	C_PAGES,
	C_THREAD,
	C_REVOCABLE,
	C_NR
};

static const char *const cols[C_NR] = {
	"dmam_alloc_coherent",
	"dmam_pool_create",
	"devm_request_region",
	"devm_request_mem_region",
	"devm_request_resource",
	"devm_mmap",
	"devm_ioremap",
	"devm_request_irq",
	"devm_open",
	"devm_add_fd",
	"devm_fopen",
	"devm_get_free_pages",
	"devm_thread_run",
	"devm_revocable_create",
};

enum row {
	R_LIVE,
	R_RELEASED,
	R_RACE,
	R_NR
};

static const char *const rows[R_NR] = {
	"a live device",
	"a device whose release is over",
	"the last put on another thread",
};

static struct platform_device pd;
static int released;

static void pd_release(struct device *dev)
{
	(void)dev;
	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
}

/* The WARNs of the calling thread only. */
static __thread bool counting;
static int warns;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (counting && strncmp(line, "WARNING: ", 9) == 0) {
		__atomic_add_fetch(&warns, 1, __ATOMIC_RELAXED);
		if (getenv("RECORD_REFUSED_WARNS"))
			fprintf(stderr, "%s\n", line);
	}
}

static struct resource root = {
	.name = "record-refused root",
	.start = 0x100000,
	.end = 0x1fffff,
	.flags = IORESOURCE_MEM,
};
static struct resource range;

static enum col col;
static int irq;

#define WIN_START 0x300000
#define WIN_SIZE 0x4000

static int ran;

static int thread_fn(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
	return 0;
}

static irqreturn_t handler(int n, void *dev_id)
{
	(void)n;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* What a column needs before its ledger is read: a line, a window. */
static int cell_setup(void)
{
	int fd;

	if (col == C_IRQ) {
		irq = irq_line_create("record-refused");
		return irq < 0;
	}
	if (col != C_IOREMAP)
		return 0;
	fd = memfd_create("record-refused", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, WIN_SIZE))
		return 1;
	return iomem_window_add(WIN_START, WIN_SIZE, fd, 0, "record-refused");
}

/* The call; whether it succeeded, and whether its failure is documented. */
static bool call(struct device *dev, bool *ret_documented)
{
	dma_addr_t h = 0;
	void *p;
	int err;

	*ret_documented = true;
	switch (col) {
	case C_COHERENT:
		return dmam_alloc_coherent(dev, 100, &h, GFP_KERNEL) != NULL;
	case C_POOL:
		return dmam_pool_create("record-refused", dev, 64, 8, 0) !=
		       NULL;
	case C_REGION:
		return devm_request_region(dev, 0x4000, 16, "refused") != NULL;
	case C_MEM_REGION:
		return devm_request_mem_region(dev, 0x200000, 16, "refused") !=
		       NULL;
	case C_RESOURCE:
		range = (struct resource){ .name = "refused",
					   .start = 0x100000,
					   .end = 0x100fff,
					   .flags = IORESOURCE_MEM };
		err = devm_request_resource(dev, &root, &range);
		*ret_documented = err == -EINVAL || err == -ENODEV;
		return err == 0;
	case C_MMAP:
		p = devm_mmap(dev, NULL, 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		*ret_documented = p == NULL || IS_ERR(p);
		return !IS_ERR_OR_NULL(p);
	case C_IOREMAP:
		return devm_ioremap(dev, WIN_START, 4096) != NULL;
	case C_IRQ:
		err = devm_request_irq(dev, (unsigned int)irq, handler, 0, NULL,
				       &irq);
		*ret_documented = err == -EINVAL || err == -ENODEV;
		return err == 0;
	case C_OPEN:
		err = devm_open(dev, "/dev/null", O_RDONLY);
		*ret_documented = err == -EINVAL || err == -ENODEV;
		return err >= 0;
	case C_ADD_FD:
		err = devm_add_fd(dev, open("/dev/null", O_RDONLY | O_CLOEXEC));
		*ret_documented = err == -EINVAL || err == -ENODEV;
		return err == 0;
	case C_FOPEN:
		errno = 0;
		p = devm_fopen(dev, "/dev/null", "r");
		*ret_documented = p || errno == EINVAL || errno == ENODEV;
		return p != NULL;
	case C_PAGES:
		return devm_get_free_pages(dev, GFP_KERNEL, 1) != 0;
	case C_THREAD:
		p = devm_thread_run(dev, thread_fn, NULL, "refused");
		*ret_documented = p == ERR_PTR(-EINVAL) ||
				  p == ERR_PTR(-ENODEV);
		return !IS_ERR(p);
	case C_REVOCABLE:
		/* NULL when refused: the resource stays the caller's. */
		return devm_revocable_create(dev, &irq, NULL) != NULL;
	default:
		return false;
	}
}

static int go;

static void start_together(void)
{
	__atomic_add_fetch(&go, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) < 2)
		sched_yield();
}

static void *last_put(void *arg)
{
	(void)arg;
	start_together();
	put_device(&pd.dev);
	return NULL;
}

static bool ok, documented;

static void *other_call(void *arg)
{
	(void)arg;
	start_together();
	counting = true;
	ok = call(&pd.dev, &documented);
	counting = false;
	return NULL;
}

static int device_up(void)
{
	memset(&pd, 0, sizeof(pd));
	pd.name = "record-refused";
	pd.id = PLATFORM_DEVID_NONE;
	pd.dev.release = pd_release;
	released = 0;
	warns = 0;
	go = 0;
	ran = 0;
	return platform_device_register(&pd);
}

/* Success, and released with the device: no WARN. */
static int round_live(void)
{
	if (device_up())
		return 2;
	counting = true;
	ok = call(&pd.dev, &documented);
	counting = false;
	platform_device_unregister(&pd);
	if (!ok || warns || released != 1) {
		fprintf(stderr, "%s: ok %d, %d WARN(s), released %d\n",
			cols[col], ok, warns, released);
		return 1;
	}
	return 0;
}

/* Refused at once: the documented error, one WARN. */
static int round_released(void)
{
	if (device_up())
		return 2;
	platform_device_unregister(&pd);
	counting = true;
	ok = call(&pd.dev, &documented);
	counting = false;
	if (ok || !documented || warns != 1) {
		fprintf(stderr, "%s: ok %d, documented %d, %d WARN(s)\n",
			cols[col], ok, documented, warns);
		return 1;
	}
	return 0;
}

/* Either order of the two: success or the documented error, one WARN. */
static int round_race(void)
{
	pthread_t a, b;

	if (device_up())
		return 2;
	/* Deleted, its owner's reference the last: the put releases it. */
	platform_device_del(&pd);
	if (pthread_create(&a, NULL, last_put, NULL) ||
	    pthread_create(&b, NULL, other_call, NULL))
		return 3;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	/* A thread refused never runs its function. */
	if (released != 1 || warns > 1 || (!ok && (!documented || !warns)) ||
	    (!ok && __atomic_load_n(&ran, __ATOMIC_RELAXED))) {
		fprintf(stderr,
			"%s: released %d times, ok %d, documented %d, %d "
			"WARN(s)\n",
			cols[col], released, ok, documented, warns);
		return 1;
	}
	return 0;
}

static int cell(int r, int c)
{
	long rounds = r == R_RACE ? test_race_rounds("DEVRES_RACE_ROUNDS", 300)
				  : 1;
	struct devres_ledger base, now;

	alarm(CELL_ALARM_S);
	col = (enum col)c;
	if (cell_setup())
		return 2;
	devres_set_log_sink(sink, NULL);
	devres_ledger_snapshot(&base);
	for (long i = 0; i < rounds; i++) {
		int bad = r == R_LIVE	    ? round_live()
			  : r == R_RELEASED ? round_released()
					    : round_race();

		if (bad)
			return bad;
	}
	devres_ledger_snapshot(&now);
	devres_set_log_sink(NULL, NULL);
	if (devres_ledger_diff(&base, &now, stderr)) {
		fprintf(stderr, "%s / %s: the ledger is not back\n", rows[r],
			cols[c]);
		return 1;
	}
	return 0;
}

static void every_call(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, R_NR, cols, C_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
