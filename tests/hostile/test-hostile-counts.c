// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile kcompat tsan white-box */
/*
 * Every count a user's calls move up and down, at both ends: balanced (no
 * WARN, back where it was), one down too many, a down with none, and up
 * to its limit and one more (exactly one WARN, the count unchanged, and
 * nothing released while in use). A count near its limit is set in the
 * record itself (white box), never reached by 2^20 real calls; a limit
 * of a few thousand is reached by real calls.
 *
 * The limits with cells elsewhere: a compat lock's held record and its
 * refused count, nested revocable accesses and a revocable's references
 * (test-hostile-limits-all.c, test-hostile-counters.c), a PCI device's
 * enables (test-hostile-limits.c, with their underflow in
 * tests/pci/test-pci-driver.c).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/clk.h>
#include <linux/completion.h>
#include <linux/spinlock.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "hostile/limit-cells.h"
#include "irq/internal.h"

/* Where a device's count saturates (src/base/base.h). */
#define REF_MAX (INT_MAX / 2)

static int refcount(const struct device *dev)
{
	return __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED);
}

/* tdev initialized, its release counted in tdev_released. */
static struct device *fresh_dev(void)
{
	assert_int_equal(init_dev(&tdev, "counts-dev"), 0);
	tdev_released = 0;
	return &tdev;
}

static void ref_balanced(void)
{
	struct device *dev = fresh_dev();

	for (int i = 0; i < 3; i++)
		assert_ptr_equal(get_device(dev), dev);
	assert_int_equal(refcount(dev), 4);
	for (int i = 0; i < 3; i++)
		put_device(dev);
	assert_int_equal(refcount(dev), 1);
	assert_int_equal(tdev_released, 0);
	put_device(dev);
	assert_int_equal(tdev_released, 1);
	assert_int_equal(warns(), 0);
}

/* The put after the last: the device is released once, the put WARNs. */
static void ref_one_extra(void)
{
	struct device *dev = fresh_dev();

	assert_ptr_equal(get_device(dev), dev);
	put_device(dev);
	put_device(dev);
	assert_int_equal(tdev_released, 1);
	assert_int_equal(warns(), 0);
	put_device(dev);
	assert_int_equal(warns(), 1);
	assert_int_equal(tdev_released, 1);
}

/* A device never initialized: no count to take down. */
static void ref_none(void)
{
	static struct device zero;

	put_device(&zero);
	assert_int_equal(warns(), 1);
	assert_int_equal(zero.refcount, 0);
}

/* Saturated: the WARN at the limit, once; puts leave it. */
static void ref_limit(void)
{
	struct device *dev = fresh_dev();

	dev->refcount = REF_MAX - 2;
	assert_ptr_equal(get_device(dev), dev);
	assert_int_equal(warns(), 0);
	assert_ptr_equal(get_device(dev), dev);
	assert_int_equal(warns(), 1);
	assert_ptr_equal(get_device(dev), dev);
	assert_int_equal(warns(), 1);
	assert_int_equal(refcount(dev), REF_MAX);
	for (int i = 0; i < 4; i++)
		put_device(dev);
	assert_int_equal(refcount(dev), REF_MAX);
	assert_int_equal(tdev_released, 0);
	dev->refcount = 1;
	put_device(dev);
	assert_int_equal(tdev_released, 1);
	assert_int_equal(warns(), 1);
}

static const struct bus_type counts_bus = { .name = "counts" };

static int visit(struct device *dev, void *data)
{
	*(int *)data += refcount(dev) >= REF_MAX;
	return 0;
}

/*
 * Saturated while registered: a walk of its bus takes a reference and
 * gives it back, and device_unregister() puts the registration's two;
 * neither moves a pinned count, and the device is not released (it has
 * users the count no longer knows of).
 */
static void ref_limit_registered(void)
{
	struct device *dev;
	int seen = 0;

	assert_int_equal(bus_register(&counts_bus), 0);
	dev = fresh_dev();
	dev->bus = &counts_bus;
	assert_int_equal(device_add(dev), 0);
	dev->refcount = REF_MAX - 1;
	assert_ptr_equal(get_device(dev), dev);
	assert_int_equal(warns(), 1);
	assert_int_equal(bus_for_each_dev(&counts_bus, NULL, &seen, visit), 0);
	assert_int_equal(seen, 1);
	assert_int_equal(refcount(dev), REF_MAX);
	device_unregister(dev);
	assert_int_equal(refcount(dev), REF_MAX);
	assert_int_equal(tdev_released, 0);
	bus_unregister(&counts_bus);
	/* Its users gone: the last reference releases it. */
	dev->refcount = 1;
	put_device(dev);
	assert_int_equal(tdev_released, 1);
	assert_int_equal(warns(), 1);
}

/* Nested disables of a line (src/irq/manage.c). */
#define IRQ_DEPTH (1 << 20)

static int line_depth(int irq)
{
	struct irq_line *line = irq__line_lock(irq);
	int depth;

	assert_non_null(line);
	depth = line->depth;
	pthread_mutex_unlock(&line->lock);
	return depth;
}

static void set_line_depth(int irq, int depth)
{
	struct irq_line *line = irq__line_lock(irq);

	assert_non_null(line);
	line->depth = depth;
	pthread_mutex_unlock(&line->lock);
}

static void irq_balanced(void)
{
	int irq = irq_line_create("counts");

	assert_true(irq > 0);
	for (int i = 0; i < 3; i++)
		disable_irq_nosync((unsigned int)irq);
	assert_int_equal(line_depth(irq), 3);
	for (int i = 0; i < 3; i++)
		enable_irq((unsigned int)irq);
	assert_int_equal(line_depth(irq), 0);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(warns(), 0);
}

static void irq_one_extra(void)
{
	int irq = irq_line_create("counts");

	assert_true(irq > 0);
	disable_irq_nosync((unsigned int)irq);
	enable_irq((unsigned int)irq);
	assert_int_equal(warns(), 0);
	enable_irq((unsigned int)irq);
	assert_int_equal(warns(), 1);
	assert_int_equal(line_depth(irq), 0);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(warns(), 1);
}

static void irq_none(void)
{
	int irq = irq_line_create("counts");

	assert_true(irq > 0);
	enable_irq((unsigned int)irq);
	assert_int_equal(warns(), 1);
	assert_int_equal(line_depth(irq), 0);
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void irq_limit(void)
{
	int irq = irq_line_create("counts");

	assert_true(irq > 0);
	set_line_depth(irq, IRQ_DEPTH - 1);
	disable_irq_nosync((unsigned int)irq);
	assert_int_equal(warns(), 0);
	disable_irq_nosync((unsigned int)irq);
	assert_int_equal(warns(), 1);
	disable_irq((unsigned int)irq);
	assert_int_equal(warns(), 2);
	assert_int_equal(line_depth(irq), IRQ_DEPTH);
	/* Down to one by hand; its enable enables it. */
	set_line_depth(irq, 1);
	enable_irq((unsigned int)irq);
	assert_int_equal(line_depth(irq), 0);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(warns(), 2);
}

/* A clock of tdev's, its counts at zero; tdev released by clk_done(). */
static struct clk *fresh_clk(void)
{
	struct clk *c = devm_clk_get(fresh_dev(), NULL);

	assert_false(IS_ERR_OR_NULL(c));
	assert_int_equal(c->prepared, 0);
	assert_int_equal(c->enabled, 0);
	return c;
}

static void clk_done(void)
{
	put_device(&tdev);
	assert_int_equal(tdev_released, 1);
}

static void clk_balanced(void)
{
	struct clk *c = fresh_clk();
	struct clk *on = devm_clk_get_enabled(&tdev, NULL);

	for (int i = 0; i < 3; i++) {
		assert_int_equal(clk_prepare(c), 0);
		assert_int_equal(clk_enable(c), 0);
		assert_int_equal(clk_prepare_enable(c), 0);
	}
	assert_int_equal(c->prepared, 6);
	assert_int_equal(c->enabled, 6);
	for (int i = 0; i < 3; i++) {
		clk_disable_unprepare(c);
		clk_disable(c);
		clk_unprepare(c);
	}
	assert_int_equal(c->prepared, 0);
	assert_int_equal(c->enabled, 0);
	/* The getter's prepare and enable: its pair given back by hand. */
	assert_false(IS_ERR_OR_NULL(on));
	clk_disable_unprepare(on);
	assert_int_equal(on->prepared, 0);
	assert_int_equal(warns(), 0);
	clk_done();
}

/* The kernel's "already disabled", "already unprepared". */
static void clk_one_extra(void)
{
	struct clk *c = fresh_clk();

	assert_int_equal(clk_prepare_enable(c), 0);
	clk_disable_unprepare(c);
	assert_int_equal(warns(), 0);
	clk_disable_unprepare(c);
	assert_int_equal(warns(), 1);
	assert_int_equal(clk_prepare(c), 0);
	assert_int_equal(clk_enable(c), 0);
	clk_disable(c);
	clk_disable(c);
	assert_int_equal(warns(), 2);
	clk_unprepare(c);
	clk_unprepare(c);
	assert_int_equal(warns(), 3);
	assert_int_equal(c->prepared, 0);
	assert_int_equal(c->enabled, 0);
	clk_done();
}

static void clk_none(void)
{
	struct clk *c = fresh_clk();

	clk_disable(c);
	clk_unprepare(c);
	clk_disable_unprepare(c);
	assert_int_equal(warns(), 3);
	assert_int_equal(c->prepared, 0);
	assert_int_equal(c->enabled, 0);
	/* Counts moved in the wrong state: the kernel's WARNs too. */
	assert_int_equal(clk_enable(c), -ESHUTDOWN);
	assert_int_equal(warns(), 4);
	assert_int_equal(clk_prepare_enable(c), 0);
	clk_unprepare(c);
	assert_int_equal(warns(), 5);
	assert_int_equal(c->prepared, 1);
	clk_disable_unprepare(c);
	assert_int_equal(c->prepared, 0);
	assert_int_equal(c->enabled, 0);
	/* The absent optional clock: nothing, no WARN. */
	clk_disable_unprepare(NULL);
	clk_unprepare(NULL);
	assert_int_equal(clk_enable(NULL), 0);
	assert_int_equal(warns(), 5);
	clk_done();
}

static void clk_limit(void)
{
	struct clk *c = fresh_clk();

	c->prepared = KCOMPAT_CLK_COUNT_MAX - 1;
	assert_int_equal(clk_prepare(c), 0);
	assert_int_equal(warns(), 0);
	assert_int_equal(clk_prepare(c), -EBUSY);
	assert_int_equal(warns(), 1);
	assert_int_equal(clk_prepare_enable(c), -EBUSY);
	assert_int_equal(warns(), 2);
	assert_int_equal(c->prepared, KCOMPAT_CLK_COUNT_MAX);
	assert_int_equal(c->enabled, 0);
	c->enabled = KCOMPAT_CLK_COUNT_MAX - 1;
	assert_int_equal(clk_enable(c), 0);
	assert_int_equal(clk_enable(c), -EBUSY);
	assert_int_equal(warns(), 3);
	assert_int_equal(c->enabled, KCOMPAT_CLK_COUNT_MAX);
	/* A refused enable gives back the prepare it took. */
	c->prepared = 1;
	assert_int_equal(clk_prepare_enable(c), -EBUSY);
	assert_int_equal(warns(), 4);
	assert_int_equal(c->prepared, 1);
	c->enabled = 1;
	clk_disable_unprepare(c);
	assert_int_equal(c->prepared, 0);
	assert_int_equal(c->enabled, 0);
	assert_int_equal(warns(), 4);
	clk_done();
}

static void preempt_balanced(void)
{
	for (int i = 0; i < 3; i++) {
		preempt_disable();
		local_bh_disable();
	}
	assert_int_equal(kcompat_held.preempt, 6);
	for (int i = 0; i < 3; i++) {
		local_bh_enable();
		preempt_enable();
	}
	assert_int_equal(kcompat_held.preempt, 0);
	assert_int_equal(kcompat_held.atomic, 0);
	assert_int_equal(warns(), 0);
}

static void preempt_one_extra(void)
{
	preempt_disable();
	preempt_enable();
	preempt_enable();
	assert_int_equal(warns(), 1);
	local_bh_disable();
	local_bh_enable();
	local_bh_enable();
	assert_int_equal(warns(), 2);
	assert_int_equal(kcompat_held.preempt, 0);
	assert_int_equal(kcompat_held.atomic, 0);
}

static void preempt_none(void)
{
	preempt_enable_no_resched();
	assert_int_equal(warns(), 1);
	assert_int_equal(kcompat_held.preempt, 0);
	assert_int_equal(kcompat_held.atomic, 0);
}

/* The kernel's 8 bits (PREEMPT_MASK): the 256th disable is refused. */
#define PREEMPT_DEPTH 255

static void preempt_limit(void)
{
	for (int i = 0; i < PREEMPT_DEPTH; i++)
		preempt_disable();
	assert_int_equal(warns(), 0);
	preempt_disable();
	local_bh_disable();
	assert_int_equal(warns(), 2);
	assert_int_equal(kcompat_held.preempt, PREEMPT_DEPTH);
	assert_int_equal(kcompat_held.atomic, PREEMPT_DEPTH);
	for (int i = 0; i < PREEMPT_DEPTH; i++)
		preempt_enable();
	assert_int_equal(kcompat_held.atomic, 0);
	assert_int_equal(warns(), 2);
	/* The refused disable's enable: one too many. */
	preempt_enable();
	assert_int_equal(warns(), 3);
	assert_int_equal(kcompat_held.preempt, 0);
}

/* Nested call sites (src/base/site.c): 2^16. */
#define SITE_DEPTH (1 << 16)

static void site_balanced(void)
{
	for (int i = 0; i < 3; i++)
		devres_call_site_enter(__FILE__, __LINE__, "counts");
	for (int i = 0; i < 3; i++)
		devres_call_site_leave();
	assert_int_equal(warns(), 0);
}

static void site_one_extra(void)
{
	devres_call_site_enter(__FILE__, __LINE__, "counts");
	devres_call_site_leave();
	devres_call_site_leave();
	assert_int_equal(warns(), 1);
	devres_call_site_enter(__FILE__, __LINE__, "counts");
	devres_call_site_leave();
	assert_int_equal(warns(), 1);
}

static void site_none(void)
{
	devres_call_site_leave();
	assert_int_equal(warns(), 1);
}

/*
 * Before, an unsigned count with no limit: 2^32 enters wrapped it to
 * zero, the next enter named its line as the outermost, and every leave
 * after was one too many.
 */
static void site_limit(void)
{
	for (int i = 0; i < SITE_DEPTH; i++)
		devres_call_site_enter(__FILE__, __LINE__, "counts");
	assert_int_equal(warns(), 0);
	devres_call_site_enter(__FILE__, __LINE__, "counts");
	assert_int_equal(warns(), 1);
	for (int i = 0; i < SITE_DEPTH; i++)
		devres_call_site_leave();
	assert_int_equal(warns(), 1);
	devres_call_site_leave();
	assert_int_equal(warns(), 2);
}

/*
 * Nested waits (src/base/waits.c): four recorded, one WARN past them, and
 * counted to 2^16. The thread waited for is a wait id nobody took: no
 * loop, so every begin records or goes on.
 */
#define WAIT_RECORDED 4
#define WAIT_DEPTH (1 << 16)

static void wait_balanced(void)
{
	uint64_t id = devres_wait_id();

	for (int i = 0; i < WAIT_RECORDED; i++)
		assert_int_equal(devres_wait_begin(id, "counts"), 0);
	for (int i = 0; i < WAIT_RECORDED; i++)
		devres_wait_end();
	assert_int_equal(warns(), 0);
}

/* Before, silent: nothing to say the pairs were wrong. */
static void wait_one_extra(void)
{
	uint64_t id = devres_wait_id();

	assert_int_equal(devres_wait_begin(id, "counts"), 0);
	devres_wait_end();
	devres_wait_end();
	assert_int_equal(warns(), 1);
	assert_int_equal(devres_wait_begin(id, "counts"), 0);
	devres_wait_end();
	assert_int_equal(warns(), 1);
}

static void wait_none(void)
{
	devres_wait_end();
	assert_int_equal(warns(), 1);
}

/*
 * Before, an int counted past the four recorded with no limit: 2^31
 * begins ran it past INT_MAX. One WARN past the four recorded, one at
 * the count's limit, one for the end too many.
 */
static void wait_limit(void)
{
	uint64_t id = devres_wait_id();

	for (int i = 0; i < WAIT_DEPTH; i++)
		assert_int_equal(devres_wait_begin(id, "counts"), 0);
	assert_int_equal(warns(), 1);
	assert_int_equal(devres_wait_begin(id, "counts"), 0);
	assert_int_equal(warns(), 2);
	for (int i = 0; i < WAIT_DEPTH; i++)
		devres_wait_end();
	assert_int_equal(warns(), 2);
	devres_wait_end();
	assert_int_equal(warns(), 3);
}

/*
 * A completion's count of complete() calls: the kernel's, at both ends
 * and no WARN: a wait takes one, none left is no misuse (a try fails),
 * and UINT_MAX is complete_all()'s, which complete() stops at.
 */
static void completion_counts(void)
{
	static struct completion x;

	init_completion(&x);
	assert_false(try_wait_for_completion(&x));
	complete(&x);
	complete(&x);
	assert_true(try_wait_for_completion(&x));
	assert_true(try_wait_for_completion(&x));
	assert_false(try_wait_for_completion(&x));
	x.done = UINT_MAX - 1;
	complete(&x);
	complete(&x);
	assert_true(x.done == UINT_MAX);
	assert_true(try_wait_for_completion(&x));
	assert_true(x.done == UINT_MAX);
	assert_int_equal(warns(), 0);
}

static const struct cell cells[] = {
	{ "core.c: device references, balanced", ref_balanced },
	{ "core.c: device references, one put too many", ref_one_extra },
	{ "core.c: device references, a put with none", ref_none },
	{ "core.c: device references, to the limit", ref_limit },
	{ "core.c: device references, to the limit while registered",
	  ref_limit_registered },
	{ "irq/manage.c: disable depth, balanced", irq_balanced },
	{ "irq/manage.c: disable depth, one enable too many", irq_one_extra },
	{ "irq/manage.c: disable depth, an enable with none", irq_none },
	{ "irq/manage.c: disable depth, to the limit", irq_limit },
	{ "clk.h: prepares and enables, balanced", clk_balanced },
	{ "clk.h: prepares and enables, one down too many", clk_one_extra },
	{ "clk.h: prepares and enables, a down with none", clk_none },
	{ "clk.h: prepares and enables, to the limit", clk_limit },
	{ "spinlock.h: preemption disables, balanced", preempt_balanced },
	{ "spinlock.h: preemption disables, one enable too many",
	  preempt_one_extra },
	{ "spinlock.h: preemption disables, an enable with none",
	  preempt_none },
	{ "spinlock.h: preemption disables, to the limit", preempt_limit },
	{ "site.c: call sites entered, balanced", site_balanced },
	{ "site.c: call sites entered, one leave too many", site_one_extra },
	{ "site.c: call sites entered, a leave with none", site_none },
	{ "site.c: call sites entered, to the limit", site_limit },
	{ "waits.c: waits begun, balanced", wait_balanced },
	{ "waits.c: waits begun, one end too many", wait_one_extra },
	{ "waits.c: waits begun, an end with none", wait_none },
	{ "waits.c: waits begun, to the limit", wait_limit },
	{ "completion.h: complete() counted, both ends", completion_counts },
};

LIMIT_CELLS_MAIN(cells)
