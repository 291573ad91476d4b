// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * A managed acquisition and the release of its device's resources at
 * once (docs/misuse.md, SP17): once the acquisition has put its node on
 * the device, the release may run it and free the node, so the call must
 * not read or write the node, or its data, after. Each row is one
 * acquiring call. Two ways:
 *
 * - released_when_added: the release runs in the log sink of the call's
 *   own ADD line (logging on; a sink may call the library), on the
 *   acquiring thread, right after its node is published: every round,
 *   deterministically. devm_mmap() recorded its mapping for munmap(2)
 *   after the add, through the node's data: the release, finding nothing
 *   recorded, unmapped nothing and left the counts, and the record of a
 *   freed node went into the table (a use after free under
 *   AddressSanitizer, a leaked mapping in the ledger). devm_thread_run()
 *   added its node holding the thread's lock, which the release waits
 *   for: it waited for itself (here, a round that does not end in 10 s).
 * - released_meanwhile: another thread releases the device in a loop
 *   while the call is made, 200 rounds (devm_thread_run() read the
 *   handle it returns from the thread's record after the release could
 *   have freed it, and a new thread taken its slot).
 *
 * After each: the call returned what it acquired (or failed cleanly),
 * and once the device's resources are released the ledger is where it
 * was. The rows that did not have the shape are there as neighbours.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "io/iotest.h"
#include "release-on-add.h"

#define BASE 0x7d000000ULL
#define SIZE 4096
#define RES_BASE 0x7e000000ULL

#ifdef T_TSAN
#define MEANWHILE_ROUNDS 60
#else
#define MEANWHILE_ROUNDS 200
#endif

static int line;

static int thread_fn(void *arg)
{
	(void)arg;
	return 0;
}

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static void action(void *data)
{
	(void)data;
}

static void revoke_res(void *res)
{
	(void)res;
}

static struct resource range;

/* Each acquisition: 0 when it acquired, or the error it returned. */
static int a_mmap(void)
{
	void *p = devm_mmap(&tdev, NULL, SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return IS_ERR(p) ? (int)PTR_ERR(p) : 0;
}

static int a_thread(void)
{
	struct devres_thread *t = devm_thread_run(&tdev, thread_fn, NULL, "r");

	return IS_ERR(t) ? (int)PTR_ERR(t) : 0;
}

static int a_kmalloc(void)
{
	return devm_kmalloc(&tdev, 64, GFP_KERNEL) ? 0 : -ENOMEM;
}

static int a_kasprintf(void)
{
	return devm_kasprintf(&tdev, GFP_KERNEL, "%s-%d", "r", 1) ? 0 : -ENOMEM;
}

static int a_pages(void)
{
	return devm_get_free_pages(&tdev, GFP_KERNEL, 0) ? 0 : -ENOMEM;
}

static int a_action(void)
{
	return devm_add_action(&tdev, action, NULL);
}

static int a_eventfd(void)
{
	int fd = devm_eventfd(&tdev, 0, 0);

	return fd < 0 ? fd : 0;
}

static int a_fopen(void)
{
	return devm_fopen(&tdev, "/dev/null", "r") ? 0 : -errno;
}

static int a_region(void)
{
	return devm_request_mem_region(&tdev, BASE, SIZE, "r") ? 0 : -EBUSY;
}

static int a_ioremap(void)
{
	return devm_ioremap(&tdev, BASE, SIZE) ? 0 : -errno;
}

static int a_coherent(void)
{
	dma_addr_t h;

	return dmam_alloc_coherent(&tdev, SIZE, &h, GFP_KERNEL) ? 0 : -ENOMEM;
}

static int a_pool(void)
{
	return dmam_pool_create("r", &tdev, 64, 0, 0) ? 0 : -ENOMEM;
}

static int a_irq(void)
{
	return devm_request_irq(&tdev, (unsigned int)line, handler, 0, "r",
				&line);
}

/* The same range each time (setup()): in the tree once at most. */
static int a_resource(void)
{
	return devm_request_resource(&tdev, &iomem_resource, &range);
}

static int a_revocable(void)
{
	return devm_revocable_create(&tdev, &range, revoke_res) ? 0 : -ENOMEM;
}

struct row {
	const char *call;
	int (*acquire)(void);
};

static const struct row rows[] = {
	{ "devm_mmap", a_mmap },
	{ "devm_thread_run", a_thread },
	{ "devm_kmalloc", a_kmalloc },
	{ "devm_kasprintf", a_kasprintf },
	{ "devm_get_free_pages", a_pages },
	{ "devm_add_action", a_action },
	{ "devm_eventfd", a_eventfd },
	{ "devm_fopen", a_fopen },
	{ "devm_request_mem_region", a_region },
	{ "devm_ioremap", a_ioremap },
	{ "dmam_alloc_coherent", a_coherent },
	{ "dmam_pool_create", a_pool },
	{ "devm_request_irq", a_irq },
	{ "devm_request_resource", a_resource },
	{ "devm_revocable_create", a_revocable },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The ledger's counts that a release gives back. */
static bool ledger_back(const struct devres_ledger *a,
			const struct devres_ledger *b)
{
	return a->nodes == b->nodes && a->fds == b->fds && a->maps == b->maps &&
	       a->map_bytes == b->map_bytes &&
	       a->irq_handlers == b->irq_handlers &&
	       a->dma_buffers == b->dma_buffers && a->threads == b->threads &&
	       a->regions == b->regions && a->revocables == b->revocables;
}

static void print_ledger(const char *what, const struct devres_ledger *l)
{
	print_message("  %s: nodes %ld fds %ld maps %ld/%ld irq %ld dma %ld "
		      "threads %ld regions %ld revocables %ld\n",
		      what, l->nodes, l->fds, l->maps, l->map_bytes,
		      l->irq_handlers, l->dma_buffers, l->threads, l->regions,
		      l->revocables);
}

static const struct row *cur;

static void *run_row(void *arg)
{
	*(int *)arg = cur->acquire();
	return NULL;
}

/*
 * The call on its own thread, waited for 10 s: one that waits for itself
 * never ends (the test fails, the process ends there: the sink is stuck).
 */
static bool call_ends(int *ret)
{
	struct timespec ts;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, run_row, ret), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

static void released_when_added(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < NROWS; i++) {
		struct devres_ledger before, after;
		int ret = 0;

		cur = &rows[i];
		devres_ledger_snapshot(&before);
		release_on_add_count = 0;
		devres_set_log_sink(release_on_add, &tdev);
		devres_set_log(true);
		if (!call_ends(&ret)) {
			/* Stuck in the sink: nothing can be undone. */
			print_message("%s: the call did not end (it waits for "
				      "the release, which waits for it)\n",
				      cur->call);
			fflush(NULL);
			_exit(1);
		}
		devres_set_log(false);
		devres_set_log_sink(NULL, NULL);
		(void)devres_release_all(&tdev);
		devres_ledger_snapshot(&after);
		if (ret == 0 && release_on_add_count > 0 &&
		    ledger_back(&before, &after))
			continue;
		bad++;
		print_message("%s: returned %d, %d releases in its ADD "
			      "lines, the ledger %s\n",
			      cur->call, ret, release_on_add_count,
			      ledger_back(&before, &after) ? "back"
							   : "not back");
		print_ledger("before", &before);
		print_ledger("after", &after);
	}
	assert_int_equal(bad, 0);
}

static bool stop;

/* The busy calls' WARNs (a range, a line held): not printed. */
static void quiet(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static void *releaser(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		(void)devres_release_all(&tdev);
	return NULL;
}

static void released_meanwhile(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < NROWS; i++) {
		struct devres_ledger before, after;
		int failed = 0;
		pthread_t t;

		cur = &rows[i];
		devres_ledger_snapshot(&before);
		__atomic_store_n(&stop, false, __ATOMIC_RELEASE);
		devres_set_log_sink(quiet, NULL);
		assert_int_equal(pthread_create(&t, NULL, releaser, NULL), 0);
		for (int r = 0; r < MEANWHILE_ROUNDS; r++) {
			/* A busy range or line: taken back meanwhile, or not. */
			int ret = cur->acquire();

			failed += ret != 0 && ret != -EBUSY;
		}
		__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		devres_set_log_sink(NULL, NULL);
		(void)devres_release_all(&tdev);
		devres_ledger_snapshot(&after);
		if (!failed && ledger_back(&before, &after))
			continue;
		bad++;
		print_message("%s: %d calls failed, the ledger %s\n", cur->call,
			      failed,
			      ledger_back(&before, &after) ? "back"
							   : "not back");
		print_ledger("before", &before);
		print_ledger("after", &after);
	}
	assert_int_equal(bad, 0);
}

static struct io_window win;

static int setup(void **state)
{
	if (io_window_setup(state, &win, BASE, SIZE, "release-race"))
		return -1;
	range = (struct resource){ .start = RES_BASE,
				   .end = RES_BASE + SIZE - 1,
				   .name = "r",
				   .flags = IORESOURCE_MEM };
	line = irq_line_create("release-race");
	return line > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	int ret = irq_line_destroy(line);

	return io_window_teardown(state, &win, BASE, SIZE) || ret;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(released_when_added, setup,
						teardown),
		cmocka_unit_test_setup_teardown(released_meanwhile, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
