// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile kcompat tsan */
/*
 * Every fixed limit of the library's per-thread and per-object records,
 * one cell each: driven to the limit (no WARN), one past it (exactly one
 * WARN), then used correctly again (no WARN, and nothing lost: what was
 * held is still held, what was let go is free), and no thread left
 * neither joined nor detached (thread-watch.h). test-hostile-limits.c
 * has the limits of managed mappings and PCI enables;
 * base/test-limits-silent.c those of the per-thread pools (the ledger's
 * 256 tallies; the 256 node caches, a performance limit: a thread past
 * them caches nothing, with no WARN) and of the targets of a wait;
 * test-hostile-pins-deep.c a thread's driver pins, which have no limit.
 * Each cell names the array it drives by a "limit-cell:" comment, and
 * tests/check-limits.sh (ctest limits-whole) fails on an array of
 * per-thread or per-object state that has neither a cell nor a reason in
 * tests/limits-exclude.txt.
 *
 * In the TSan build too: its threads try the compat locks this thread
 * holds, and an interrupt's handler runs on the dispatcher.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/irq.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "hostile/limit-cells.h"

/* Whether another thread finds @l free (takes it, and lets it go). */
static void *other_try_mutex(void *arg)
{
	struct mutex *l = arg;
	intptr_t got = mutex_trylock(l);

	if (got)
		mutex_unlock(l);
	return (void *)got;
}

static void *other_try_spin(void *arg)
{
	spinlock_t *l = arg;
	intptr_t got = spin_trylock(l);

	if (got)
		spin_unlock(l);
	return (void *)got;
}

static bool free_elsewhere(void *(*fn)(void *), void *l)
{
	pthread_t t;
	void *got;

	assert_int_equal(pthread_create(&t, NULL, fn, l), 0);
	assert_int_equal(pthread_join(t, &got), 0);
	return got != NULL;
}

#define NLOCKS (KCOMPAT_HELD_MAX + 1)

/*
 * A thread's record of the compat locks it holds: KCOMPAT_HELD_MAX held
 * fill it; a recursive lock refused then is not let go by the unlock
 * that follows it (that unlock is the refused lock's); one more held is
 * one WARN; a recursive lock of that one is refused the same way; all
 * let go in order are free.
 * limit-cell: include/kcompat/linux/kcompat_held.h:kcompat_held.e
 */
static struct mutex mx[NLOCKS];

static void held_mutexes(void)
{
	struct kcompat_held *h = &kcompat_held;

	for (int i = 0; i < NLOCKS; i++)
		mutex_init(&mx[i]);
	for (int i = 0; i < KCOMPAT_HELD_MAX; i++)
		mutex_lock(&mx[i]);
	assert_int_equal(warns(), 0);
	assert_int_equal(h->n, KCOMPAT_HELD_MAX);
	/* At the limit: the refused lock's unlock lets nothing go. */
	mutex_lock(&mx[0]);
	assert_int_equal(warns(), 1);
	mutex_unlock(&mx[0]);
	assert_int_equal(warns(), 1);
	assert_false(free_elsewhere(other_try_mutex, &mx[0]));
	/* One past: its WARN, and the same for a lock beyond the record. */
	mutex_lock(&mx[KCOMPAT_HELD_MAX]);
	assert_int_equal(warns(), 2);
	mutex_lock(&mx[KCOMPAT_HELD_MAX]);
	assert_int_equal(warns(), 3);
	mutex_unlock(&mx[KCOMPAT_HELD_MAX]);
	assert_false(free_elsewhere(other_try_mutex, &mx[KCOMPAT_HELD_MAX]));
	for (int i = 0; i < NLOCKS; i++)
		assert_false(free_elsewhere(other_try_mutex, &mx[i]));
	for (int i = NLOCKS - 1; i >= 0; i--)
		mutex_unlock(&mx[i]);
	assert_int_equal(warns(), 3);
	assert_int_equal(h->n, 0);
	assert_int_equal(h->over, 0);
	for (int i = 0; i < NLOCKS; i++) {
		assert_true(free_elsewhere(other_try_mutex, &mx[i]));
		mutex_lock(&mx[i]);
		mutex_unlock(&mx[i]);
		mutex_destroy(&mx[i]);
	}
	assert_int_equal(warns(), 3);
}

static spinlock_t sl[NLOCKS];

static void held_spinlocks(void)
{
	struct kcompat_held *h = &kcompat_held;

	for (int i = 0; i < NLOCKS; i++)
		spin_lock_init(&sl[i]);
	for (int i = 0; i < KCOMPAT_HELD_MAX; i++)
		spin_lock(&sl[i]);
	assert_int_equal(warns(), 0);
	spin_lock(&sl[KCOMPAT_HELD_MAX - 1]);
	assert_int_equal(warns(), 1);
	spin_unlock(&sl[KCOMPAT_HELD_MAX - 1]);
	assert_int_equal(kcompat_spins_held(), KCOMPAT_HELD_MAX);
	assert_false(free_elsewhere(other_try_spin, &sl[KCOMPAT_HELD_MAX - 1]));
	spin_lock(&sl[KCOMPAT_HELD_MAX]);
	assert_int_equal(warns(), 2);
	spin_lock(&sl[KCOMPAT_HELD_MAX]);
	assert_int_equal(warns(), 3);
	spin_unlock(&sl[KCOMPAT_HELD_MAX]);
	assert_int_equal(kcompat_spins_held(), NLOCKS);
	for (int i = 0; i < NLOCKS; i++)
		assert_false(free_elsewhere(other_try_spin, &sl[i]));
	for (int i = NLOCKS - 1; i >= 0; i--)
		spin_unlock(&sl[i]);
	assert_int_equal(warns(), 3);
	assert_int_equal(h->n, 0);
	assert_int_equal(h->over, 0);
	assert_int_equal(kcompat_spins_held(), 0);
	for (int i = 0; i < NLOCKS; i++)
		assert_true(free_elsewhere(other_try_spin, &sl[i]));
	assert_int_equal(warns(), 3);
}

/*
 * Accesses nested in one thread: 64 (src/revocable/revocable.c).
 * limit-cell: src/revocable/revocable.c:held
 */
#define REVOCABLE_DEPTH 64

static void release_nothing(void *res)
{
	(void)res;
}

static void revocable_depth(void)
{
	static int res;
	struct device *dev = heap_dev(NULL, "limits-rev");
	struct revocable *h;

	assert_non_null(dev);
	h = devm_revocable_create(dev, &res, release_nothing);
	assert_non_null(h);
	for (int i = 0; i < REVOCABLE_DEPTH; i++)
		assert_ptr_equal(revocable_try_access(h), &res);
	assert_int_equal(warns(), 0);
	assert_null(revocable_try_access(h));
	assert_int_equal(warns(), 1);
	for (int i = 0; i < REVOCABLE_DEPTH; i++)
		revocable_access_end(h);
	assert_int_equal(warns(), 1);
	assert_ptr_equal(revocable_try_access(h), &res);
	revocable_access_end(h);
	/* All ended: a further end is a misuse again, not a hidden one. */
	put_device(dev);
	assert_int_equal(warns(), 1);
}

/* References on one handle: 2^24 (src/revocable/revocable.c). */
#define REVOCABLE_REFS (1 << 24)

/*
 * Skipped under ThreadSanitizer: one thread's 2^25 calls on one handle,
 * nothing for it to race, and 95 % of the test's time there (some 24 s
 * of CPU on a loaded machine); the dev and ASan builds run it, and
 * test-hostile-counters drives the same limit.
 */
static void revocable_refs(void)
{
	static int res;
	struct device *dev;
	struct revocable *h;

#ifdef T_TSAN
	skip();
#endif
	dev = heap_dev(NULL, "limits-refs");
	assert_non_null(dev);
	h = devm_revocable_create(dev, &res, release_nothing);
	assert_non_null(h);
	/* The binding holds one. */
	for (int i = 1; i < REVOCABLE_REFS; i++)
		assert_ptr_equal(revocable_get(h), h);
	assert_int_equal(warns(), 0);
	assert_null(revocable_get(h));
	assert_int_equal(warns(), 1);
	for (int i = 1; i < REVOCABLE_REFS; i++)
		revocable_put(h);
	assert_ptr_equal(revocable_try_access(h), &res);
	revocable_access_end(h);
	assert_ptr_equal(revocable_get(h), h);
	revocable_put(h);
	put_device(dev);
	assert_int_equal(warns(), 1);
}

/* Nested disables of one line: 2^20 (src/irq/manage.c). */
#define IRQ_DEPTH (1 << 20)

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	__atomic_fetch_add((int *)dev_id, 1, __ATOMIC_SEQ_CST);
	return IRQ_HANDLED;
}

static void irq_disable_depth(void)
{
	static int calls;
	int irq = irq_line_create("limits-irq");

	assert_true(irq > 0);
	assert_int_equal(request_irq((unsigned int)irq, count_irq, 0, "limits",
				     &calls),
			 0);
	for (int i = 0; i < IRQ_DEPTH; i++)
		disable_irq_nosync((unsigned int)irq);
	assert_int_equal(warns(), 0);
	disable_irq_nosync((unsigned int)irq);
	assert_int_equal(warns(), 1);
	/* The refused disable took nothing: as many enables enable it. */
	for (int i = 0; i < IRQ_DEPTH - 1; i++)
		enable_irq((unsigned int)irq);
	assert_int_equal(irq_line_raise_wait(irq), -EAGAIN);
	assert_int_equal(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 0);
	enable_irq((unsigned int)irq);
	assert_int_equal(irq_line_raise_wait(irq), 0);
	assert_true(__atomic_load_n(&calls, __ATOMIC_SEQ_CST) >= 1);
	assert_int_equal(warns(), 1);
	free_irq((unsigned int)irq, &calls);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(warns(), 1);
}

/* Workqueues at once: KCOMPAT_WQ_SLOTS (<linux/kcompat_wq.h>). */
static void workqueue_slots(void)
{
	static struct workqueue_struct *wq[KCOMPAT_WQ_SLOTS];

	for (int i = 0; i < KCOMPAT_WQ_SLOTS; i++)
		assert_non_null(wq[i] = alloc_workqueue("slot-%d", 0, 0, i));
	assert_int_equal(warns(), 0);
	assert_null(alloc_workqueue("one-past", 0, 0));
	assert_int_equal(warns(), 1);
	destroy_workqueue(wq[7]);
	assert_non_null(wq[7] = alloc_workqueue("again", 0, 0));
	assert_string_equal(kcompat_workqueue_name(wq[7]), "again");
	for (int i = 0; i < KCOMPAT_WQ_SLOTS; i++)
		destroy_workqueue(wq[i]);
	assert_int_equal(warns(), 1);
}

/*
 * A workqueue's name: 31 characters (the kernel's WQ_NAME_LEN, 32 with
 * its end); a longer one is cut there, with one WARN, as the kernel's.
 * limit-cell: include/kcompat/linux/kcompat_wq.h:kcompat_wq.name
 */
static void workqueue_name(void)
{
	static const char n31[] = "abcdefghijklmnopqrstuvwxyz01234";
	struct workqueue_struct *wq;

	wq = alloc_workqueue("%s", 0, 0, n31);
	assert_non_null(wq);
	assert_string_equal(kcompat_workqueue_name(wq), n31);
	destroy_workqueue(wq);
	assert_int_equal(warns(), 0);
	wq = alloc_workqueue("%s5", 0, 0, n31);
	assert_non_null(wq);
	assert_int_equal(warns(), 1);
	assert_string_equal(kcompat_workqueue_name(wq), n31);
	destroy_workqueue(wq);
	wq = alloc_workqueue("short", 0, 0);
	assert_string_equal(kcompat_workqueue_name(wq), "short");
	destroy_workqueue(wq);
	assert_int_equal(warns(), 1);
}

static const struct cell cells[] = {
	{ "thread-watch.c: a thread left neither joined nor detached",
	  thread_watch_cell },
	{ "kcompat_held.h: compat mutexes a thread holds", held_mutexes },
	{ "kcompat_held.h: compat spinlocks a thread holds", held_spinlocks },
	{ "revocable.c: accesses nested in a thread", revocable_depth },
	{ "revocable.c: references on a handle", revocable_refs },
	{ "irq/manage.c: nested disables of a line", irq_disable_depth },
	{ "kcompat_wq.h: workqueues at once", workqueue_slots },
	{ "workqueue.h: a workqueue's name", workqueue_name },
};

LIMIT_CELLS_MAIN(cells)
