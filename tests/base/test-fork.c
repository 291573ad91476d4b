// SPDX-License-Identifier: MIT
/* ctest-labels: tsan stress */
/*
 * fork() from a busy threaded parent: threads hammer every subsystem (the
 * resource tree, interrupt lines and handlers, DMA mappings, coherent
 * buffers and pools, a fake PCI tree's config space, managed fds and
 * threads, revocable accesses, managed memory) while the main thread
 * forks again and again. Each child, under alarm() so that a deadlock
 * fails instead of hanging, uses every subsystem on a device of its own,
 * then calls every entry point on every kind of object its parent made
 * (fork-inherited.c), a busy worker's device among them, and expects a
 * WARN and an error from each; it exits 0 only if all of it held. The
 * parent then finds its objects still its own, releases them, and the
 * ledger is back where it was. docs/fork.md is the policy this checks.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "base/fork-inherited.h"
#include "base/fork-park.h"

#define NWORKERS 7
#define ROUNDS 25

static struct pci_fake *tree;
static struct museum museum;
static int stop;
/* The line a worker last made: the child must find it inert. */
static int parent_irq;
static int worker_errors;

#define WCHECK(x)                                                              \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#x);                                           \
			__atomic_add_fetch(&worker_errors, 1,                  \
					   __ATOMIC_RELAXED);                  \
		}                                                              \
	} while (0)

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	__atomic_add_fetch((int *)dev_id, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static int idle_thread(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 0;
}

static void nop_release(void *res)
{
	(void)res;
}

/* One round of subsystem @k on @dev; returns how many steps failed. */
static int exercise(struct device *dev, int k, int base, bool child)
{
	char name[32];
	int bad = 0, hits = 0;

	switch (k) {
	case 0: { /* the resource tree */
		struct resource *r;

		r = devm_request_region(dev, (resource_size_t)base, 8, "fork");
		bad += !r;
		r = request_mem_region((resource_size_t)base << 12, 4096,
				       "fork");
		bad += !r;
		if (r)
			release_mem_region((resource_size_t)base << 12, 4096);
		break;
	}
	case 1: { /* an interrupt line, a handler, an interrupt */
		int irq = irq_line_create("fork");

		bad += irq <= 0;
		if (irq <= 0)
			break;
		if (!child)
			__atomic_store_n(&parent_irq, irq, __ATOMIC_RELAXED);
		if (child && !CHILD_THREADS) {
			bad += irq_line_raise(irq) != 0;
		} else if (devm_request_irq(dev, (unsigned int)irq, count_irq,
					    0, "fork", &hits) == 0) {
			bad += irq_line_raise(irq) != 0;
			if (child)
				bad += !wait_hit(&hits);
			devm_free_irq(dev, (unsigned int)irq, &hits);
		} else {
			bad++;
		}
		bad += irq_line_destroy(irq) != 0;
		break;
	}
	case 2: { /* DMA: a mapping, a coherent buffer, a pool */
		static __thread char buf[256];
		struct dma_pool *pool;
		dma_addr_t h;
		void *p;

		h = dma_map_single(dev, buf, sizeof(buf), DMA_TO_DEVICE);
		bad += dma_mapping_error(dev, h);
		if (!dma_mapping_error(dev, h))
			dma_unmap_single(dev, h, sizeof(buf), DMA_TO_DEVICE);
		bad += !dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL);
		pool = dmam_pool_create("fork", dev, 64, 8, 0);
		bad += !pool;
		if (pool) {
			p = dma_pool_alloc(pool, GFP_KERNEL, &h);
			bad += !p;
			if (p)
				dma_pool_free(pool, p, h);
		}
		break;
	}
	case 3: { /* PCI config space through the fake tree */
		struct pci_dev *pdev =
			pci_get_device(0x1af4, (unsigned)base, NULL);
		uint32_t v = 0;

		bad += !pdev;
		if (!pdev)
			break;
		bad += pci_read_config_dword(pdev, 0, &v) != 0;
		bad += v != (0x1af4u | (uint32_t)base << 16);
		bad += pci_write_config_byte(pdev, 0x3c, 5) != 0;
		pci_dev_put(pdev);
		break;
	}
	case 4: { /* managed fds and threads */
		struct devres_thread *t;

		bad += devm_eventfd(dev, 0, 0) < 0;
		if (child && !CHILD_THREADS)
			break;
		snprintf(name, sizeof(name), "fork-%d", base);
		t = devm_thread_run(dev, idle_thread, NULL, name);
		bad += IS_ERR(t);
		if (!IS_ERR(t))
			bad += devm_thread_stop(dev, t) != 0;
		break;
	}
	case 5: { /* revocable accesses */
		static int thing;
		struct revocable *h;

		h = devm_revocable_create(dev, &thing, nop_release);
		bad += !h;
		if (!h)
			break;
		revocable_get(h);
		bad += revocable_try_access(h) != &thing;
		revocable_access_end(h);
		devres_release_all(dev);
		bad += revocable_try_access(h) != NULL;
		revocable_put(h);
		break;
	}
	case 6: /* managed memory */
		for (int i = 0; i < 16; i++)
			bad += !devm_kmalloc(dev, (size_t)(8 << (i % 8)),
					     GFP_KERNEL);
		break;
	}
	devres_release_all(dev);
	return bad;
}

struct worker {
	struct device dev;
	pthread_t tid;
	int k;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		WCHECK(exercise(&w->dev, w->k, 0x10 + w->k, false) == 0);
		fork_park_point();
	}
	return NULL;
}

static void dev_release(struct device *dev)
{
	(void)dev;
}

/*
 * The child: everything on a device of its own, then every call on its
 * parent's objects and on @busy, under a deadline.
 */
static int child_main(int round, struct device *busy)
{
	struct pci_fake_dev d = {
		.vendor = 0x1af4,
		.device = (unsigned short)(0x40 + round),
		.class = 0x020000,
		.cfg_size = 256,
	};
	struct device dev;
	char name[32];
	int bad = 0, irq;

	alarm(CHILD_ALARM_S);
	/* The parent's line: not a line here, and its interrupt not sent. */
	irq = __atomic_load_n(&parent_irq, __ATOMIC_RELAXED);
	if (irq > 0 && irq_line_raise(irq) != -EINVAL) {
		fprintf(stderr, "child: parent's irq %d not inert\n", irq);
		bad++;
	}
	memset(&dev, 0, sizeof(dev));
	dev.release = dev_release;
	device_initialize(&dev);
	dev_set_name(&dev, "child-%d", round);
	snprintf(name, sizeof(name), "0000:%02x:01.0", 1 + round);
	d.name = name;
	if (pci_fake_add(tree, &d) || pci_bus_scan_device(name)) {
		fprintf(stderr, "child: no pci device %s\n", name);
		bad++;
	}
	for (int k = 0; k < NWORKERS; k++) {
		int b = exercise(&dev, k, 0x40 + round, true);

		if (b)
			fprintf(stderr, "child %d: subsystem %d: %d failed\n",
				round, k, b);
		bad += b;
	}
	put_device(&dev);
	pci_fake_remove(tree, name);
	bad += museum_visit(&museum, busy);
	return bad ? 1 : 0;
}

static void fork_from_busy_parent(void **state)
{
	static struct worker w[NWORKERS];
	struct pci_fake_dev d = {
		.vendor = 0x1af4,
		.class = 0x020000,
		.cfg_size = 256,
	};
	struct pci_fake_dev bar_dev = {
		.name = "0000:00:1e.0",
		.vendor = 0x1af4,
		.device = 0x77,
		.class = 0x020000,
		.cfg_size = 256,
		.bar_size = { 4096 },
		.bar_flags = { IORESOURCE_MEM },
	};
	struct devres_ledger before, after;
	char name[NWORKERS][32];

	(void)state;
	devres_ledger_snapshot(&before);
	tree = pci_fake_create();
	assert_non_null(tree);
	assert_int_equal(pci_sysfs_set_root(pci_fake_root(tree)), 0);
	for (int k = 0; k < NWORKERS; k++) {
		snprintf(name[k], sizeof(name[k]), "0000:00:%02x.0", 0x10 + k);
		d.name = name[k];
		d.device = (unsigned short)(0x10 + k);
		assert_int_equal(pci_fake_add(tree, &d), 0);
	}
	assert_int_equal(pci_fake_add(tree, &bar_dev), 0);
	assert_true(pci_bus_scan() >= 0);
	assert_int_equal(museum_make(&museum, bar_dev.name), 0);
	for (int k = 0; k < NWORKERS; k++) {
		char n[24];

		snprintf(n, sizeof(n), "worker-%d", k);
		assert_int_equal(init_dev(&w[k].dev, n), 0);
		w[k].k = k;
		assert_int_equal(
			pthread_create(&w[k].tid, NULL, worker_fn, &w[k]), 0);
	}
	for (int r = 0; r < ROUNDS; r++) {
		int status = 0;
		pid_t pid;

		usleep(2000);
		fork_park_all(NWORKERS);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_main(r, &w[r % NWORKERS].dev));
		fork_park_release();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fprintf(stderr, "round %d: child %s %d\n", r,
				WIFEXITED(status) ? "exited" : "killed by",
				WIFEXITED(status) ? WEXITSTATUS(status)
						  : WTERMSIG(status));
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < NWORKERS; k++) {
		pthread_join(w[k].tid, NULL);
		put_device(&w[k].dev);
	}
	assert_int_equal(worker_errors, 0);
	assert_int_equal(museum_close(&museum), 0);
	pci_bus_remove_all();
	assert_int_equal(pci_sysfs_set_root(NULL), 0);
	pci_fake_destroy(tree);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static int sleepers;

static int sleeper(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&sleepers, 1, __ATOMIC_RELEASE);
	while (!devres_thread_should_stop())
		devres_thread_sleep(60000);
	return 7;
}

/*
 * Threads in a child, under every build: the parent forks with no other
 * thread (ThreadSanitizer, too, then lets the child start threads), and
 * the child's first handler starts its own dispatcher, its threaded
 * handler its own thread, devm_thread_run() its own managed thread.
 */
static irqreturn_t wake_thread(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

static void child_starts_threads(void **state)
{
	static struct device dev;
	int status = 0, hits = 0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct devres_thread *t;
		int irq;

		alarm(CHILD_ALARM_S);
		CHILD_CHECK(init_dev(&dev, "child") == 0);
		irq = irq_line_create("child");
		CHILD_CHECK(irq > 0);
		CHILD_CHECK(devm_request_threaded_irq(&dev, (unsigned int)irq,
						      wake_thread, count_irq, 0,
						      "child", &hits) == 0);
		CHILD_CHECK(irq_line_raise(irq) == 0);
		CHILD_CHECK(wait_hit(&hits));
		CHILD_CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) == 1);
		t = devm_thread_run(&dev, sleeper, NULL, "child");
		CHILD_CHECK(!IS_ERR(t));
		CHILD_CHECK(devm_thread_stop(&dev, t) == 7);
		CHILD_CHECK(devres_release_all(&dev) >= 0);
		CHILD_CHECK(irq_line_destroy(irq) == 0);
		put_device(&dev);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * What the child inherits and finds inert: the parent's line (not a line,
 * its number not reused, its handler not freed) and managed thread (not
 * stopped: it runs in the parent), each call one WARN; the parent's own
 * are untouched by all of it.
 */
static void inherited_objects_inert(void **state)
{
	struct device *dev = *state;
	struct devres_thread *t;
	int hits = 0, irq, status = 0;
	pid_t pid;

	irq = irq_line_create("parent");
	assert_true(irq > 0);
	assert_int_equal(request_irq((unsigned int)irq, count_irq, 0, "parent",
				     &hits),
			 0);
	t = devm_thread_run(dev, sleeper, NULL, "parent");
	assert_false(IS_ERR(t));
	if (FORK_PARK) {
		/* The dispatcher and the thread idle, their starts done. */
		assert_int_equal(irq_line_raise(irq), 0);
		while (!__atomic_load_n(&hits, __ATOMIC_ACQUIRE) ||
		       !__atomic_load_n(&sleepers, __ATOMIC_ACQUIRE))
			usleep(1000);
		__atomic_store_n(&hits, 0, __ATOMIC_RELEASE);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int warns = devres_warn_count(), mine;

		alarm(CHILD_ALARM_S);
		devres_set_log_sink(NULL, NULL);
		CHILD_CHECK(irq_line_raise(irq) == -EINVAL);
		CHILD_CHECK(free_irq((unsigned int)irq, &hits) == NULL);
		CHILD_CHECK(devres_warn_count() == warns + 1);
		CHILD_CHECK(irq_line_destroy(irq) == -EINVAL);
		CHILD_CHECK(devres_warn_count() == warns + 2);
		mine = irq_line_create("child");
		CHILD_CHECK(mine > 0 && mine != irq);
		if (!CHILD_THREADS) {
			CHILD_CHECK(irq_line_destroy(mine) == 0);
			goto thread;
		}
		CHILD_CHECK(request_irq((unsigned int)mine, count_irq, 0,
					"child", &hits) == 0);
		CHILD_CHECK(irq_line_raise(mine) == 0);
		CHILD_CHECK(wait_hit(&hits));
		CHILD_CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) == 1);
		CHILD_CHECK(free_irq((unsigned int)mine, &hits) != NULL);
		CHILD_CHECK(irq_line_destroy(mine) == 0);
thread:
		CHILD_CHECK(devm_thread_stop(dev, t) == -ECHILD);
		CHILD_CHECK(devres_warn_count() == warns + 3);
		/* The device is the parent's: nothing of it is released. */
		CHILD_CHECK(devres_release_all(dev) == -ENODEV);
		CHILD_CHECK(devres_warn_count() == warns + 4);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's are its own still. */
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_hit(&hits));
	assert_int_equal(__atomic_load_n(&hits, __ATOMIC_RELAXED), 1);
	assert_non_null(free_irq((unsigned int)irq, &hits));
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(devm_thread_stop(dev, t), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: before any test has started a thread. */
		cmocka_unit_test(child_starts_threads),
		cmocka_unit_test_setup_teardown(inherited_objects_inert,
						dev_setup, dev_teardown),
		cmocka_unit_test(fork_from_busy_parent),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
