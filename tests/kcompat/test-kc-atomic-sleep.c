// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Every compat call that may sleep, made in every atomic context the
 * compat headers have (a spinlock held by each of its lock calls,
 * interrupts disabled, preemption or bottom halves disabled, a primary
 * interrupt handler: the kernel's hard-irq context): exactly one WARN
 * naming the call, as the kernel's DEBUG_ATOMIC_SLEEP reports "sleeping
 * function called from invalid context"; the same call outside them (or
 * holding a mutex, or in a threaded handler's thread function) says
 * nothing, and so does every call that
 * does not sleep (GFP_ATOMIC allocations, the delays that spin, trylocks,
 * complete(), cancel_work()) in any context. A call made again in one
 * section says so once; the next section says it again.
 */
#define _GNU_SOURCE
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/interrupt.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/irq.h>
#include "testlib.h"

/* The calls, each with what it needs done before and after it. */
#define SLEEPERS(X)                                                            \
	X(might_sleep, 1)                                                      \
	X(mutex_lock, 1)                                                       \
	X(mutex_lock_nested, 1)                                                \
	X(mutex_lock_interruptible, 1)                                         \
	X(mutex_lock_killable, 1)                                              \
	X(msleep, 1)                                                           \
	X(ssleep, 1)                                                           \
	X(usleep_range, 1)                                                     \
	X(fsleep, 1)                                                           \
	X(wait_for_completion, 1)                                              \
	X(wait_for_completion_timeout, 1)                                      \
	X(cancel_work_sync, 1)                                                 \
	X(cancel_delayed_work_sync, 1)                                         \
	X(flush_work, 1)                                                       \
	X(flush_delayed_work, 1)                                               \
	X(flush_workqueue, 1)                                                  \
	X(drain_workqueue, 1)                                                  \
	X(destroy_workqueue, 1)                                                \
	X(kmalloc, 1)                                                          \
	X(kzalloc, 1)                                                          \
	X(kmalloc_array, 1)                                                    \
	X(kcalloc, 1)                                                          \
	X(krealloc, 1)                                                         \
	X(kstrdup, 1)                                                          \
	X(kmemdup, 1)                                                          \
	X(devm_kmalloc, 1)                                                     \
	X(devm_kzalloc, 1)                                                     \
	X(devm_kmalloc_array, 1)                                               \
	X(devm_kcalloc, 1)                                                     \
	X(devm_krealloc, 1)                                                    \
	X(devm_kstrdup, 1)                                                     \
	X(devm_kmemdup, 1)                                                     \
	X(request_irq, 1)                                                      \
	X(request_threaded_irq, 1)                                             \
	X(devm_request_irq, 1)                                                 \
	X(devm_request_threaded_irq, 1)                                        \
	X(free_irq, 1)                                                         \
	X(devm_free_irq, 1)                                                    \
	X(synchronize_irq, 1)                                                  \
	X(disable_irq, 1)                                                      \
	X(kmalloc_atomic, 0)                                                   \
	X(kzalloc_nowait, 0)                                                   \
	X(devm_kmalloc_atomic, 0)                                              \
	X(udelay, 0)                                                           \
	X(mdelay, 0)                                                           \
	X(mutex_trylock, 0)                                                    \
	X(spin_trylock, 0)                                                     \
	X(complete, 0)                                                         \
	X(try_wait_for_completion, 0)                                          \
	X(schedule_work, 0)                                                    \
	X(cancel_work, 0)                                                      \
	X(disable_irq_nosync, 0)                                               \
	X(enable_irq, 0)

#define ID(name, sleeps) C_##name,
enum call {
	SLEEPERS(ID) NCALLS
};
#undef ID
#define NAME(name, sleeps) #name,
static const char *const call_name[] = { SLEEPERS(NAME) };
#undef NAME
#define SLEEPS(name, sleeps) sleeps,
static const bool call_sleeps[] = { SLEEPERS(SLEEPS) };
#undef SLEEPS

enum phase {
	PREP,
	CALL,
	UNDO
};

static struct device *dev;
static int irq;
static struct mutex m;
static spinlock_t other_s;
static struct completion done;
static struct work_struct work;
static struct delayed_work dwork;
static struct workqueue_struct *wq;
static void *p;
static const char *ret;

static irqreturn_t handler(int n, void *dev_id)
{
	(void)n;
	(void)dev_id;
	return IRQ_HANDLED;
}

static void work_fn(struct work_struct *w)
{
	(void)w;
}

/* @c's step @ph: PREP and UNDO outside the context, CALL inside. */
static void step(enum call c, enum phase ph)
{
	unsigned int line = (unsigned int)irq;
	gfp_t gfp = GFP_KERNEL;

	switch (c) {
	case C_might_sleep:
		if (ph == CALL)
			might_sleep();
		break;
	case C_mutex_lock:
		if (ph == CALL)
			mutex_lock(&m);
		else if (ph == UNDO)
			mutex_unlock(&m);
		break;
	case C_mutex_lock_nested:
		if (ph == CALL)
			mutex_lock_nested(&m, 1);
		else if (ph == UNDO)
			mutex_unlock(&m);
		break;
	case C_mutex_lock_interruptible:
		if (ph == CALL)
			assert_int_equal(mutex_lock_interruptible(&m), 0);
		else if (ph == UNDO)
			mutex_unlock(&m);
		break;
	case C_mutex_lock_killable:
		if (ph == CALL)
			assert_int_equal(mutex_lock_killable(&m), 0);
		else if (ph == UNDO)
			mutex_unlock(&m);
		break;
	case C_msleep:
		if (ph == CALL)
			msleep(0);
		break;
	case C_ssleep:
		if (ph == CALL)
			ssleep(0);
		break;
	case C_usleep_range:
		if (ph == CALL)
			usleep_range(1, 2);
		break;
	case C_fsleep:
		if (ph == CALL)
			fsleep(1);
		break;
	case C_wait_for_completion:
	case C_wait_for_completion_timeout:
	case C_complete:
	case C_try_wait_for_completion:
		if (ph == PREP) {
			init_completion(&done);
			if (c != C_complete)
				complete(&done);
		} else if (ph == CALL) {
			if (c == C_wait_for_completion)
				wait_for_completion(&done);
			else if (c == C_wait_for_completion_timeout)
				assert_true(
					wait_for_completion_timeout(&done, 1));
			else if (c == C_complete)
				complete(&done);
			else
				assert_true(try_wait_for_completion(&done));
		}
		break;
	case C_cancel_work_sync:
	case C_flush_work:
	case C_cancel_work:
		if (ph == PREP)
			INIT_WORK(&work, work_fn);
		else if (ph == CALL && c == C_cancel_work_sync)
			assert_false(cancel_work_sync(&work));
		else if (ph == CALL && c == C_flush_work)
			assert_false(flush_work(&work));
		else if (ph == CALL)
			assert_false(cancel_work(&work));
		break;
	case C_schedule_work:
		if (ph == PREP)
			INIT_WORK(&work, work_fn);
		else if (ph == CALL)
			assert_true(schedule_work(&work));
		else
			(void)cancel_work_sync(&work);
		break;
	case C_cancel_delayed_work_sync:
	case C_flush_delayed_work:
		if (ph == PREP)
			INIT_DELAYED_WORK(&dwork, work_fn);
		else if (ph == CALL && c == C_cancel_delayed_work_sync)
			assert_false(cancel_delayed_work_sync(&dwork));
		else if (ph == CALL)
			assert_false(flush_delayed_work(&dwork));
		break;
	case C_flush_workqueue:
	case C_drain_workqueue:
	case C_destroy_workqueue:
		if (ph == PREP) {
			wq = alloc_workqueue("atomic-sleep", 0, 0);
			assert_non_null(wq);
		} else if (ph == CALL && c == C_flush_workqueue) {
			flush_workqueue(wq);
		} else if (ph == CALL && c == C_drain_workqueue) {
			drain_workqueue(wq);
		} else if (ph == CALL) {
			destroy_workqueue(wq);
		} else if (c != C_destroy_workqueue) {
			destroy_workqueue(wq);
		}
		break;
	case C_kmalloc:
	case C_kzalloc:
	case C_kmalloc_array:
	case C_kcalloc:
	case C_krealloc:
	case C_kstrdup:
	case C_kmemdup:
	case C_kmalloc_atomic:
	case C_kzalloc_nowait:
		if (ph == PREP && c == C_krealloc) {
			p = kmalloc(8, GFP_KERNEL);
		} else if (ph == CALL) {
			if (c == C_kmalloc)
				p = kmalloc(8, gfp);
			else if (c == C_kzalloc)
				p = kzalloc(8, gfp);
			else if (c == C_kmalloc_array)
				p = kmalloc_array(2, 8, gfp);
			else if (c == C_kcalloc)
				p = kcalloc(2, 8, gfp);
			else if (c == C_krealloc)
				p = krealloc(p, 16, gfp);
			else if (c == C_kstrdup)
				p = kstrdup("x", gfp);
			else if (c == C_kmemdup)
				p = kmemdup("x", 2, gfp);
			else if (c == C_kmalloc_atomic)
				p = kmalloc(8, GFP_ATOMIC);
			else
				p = kzalloc(8, GFP_NOWAIT);
			assert_non_null(p);
		} else if (ph == UNDO) {
			kfree(p);
		}
		break;
	case C_devm_kmalloc:
	case C_devm_kzalloc:
	case C_devm_kmalloc_array:
	case C_devm_kcalloc:
	case C_devm_krealloc:
	case C_devm_kstrdup:
	case C_devm_kmemdup:
	case C_devm_kmalloc_atomic:
		if (ph == PREP && c == C_devm_krealloc) {
			p = devm_kmalloc(dev, 8, GFP_KERNEL);
		} else if (ph == CALL) {
			if (c == C_devm_kmalloc)
				p = devm_kmalloc(dev, 8, gfp);
			else if (c == C_devm_kzalloc)
				p = devm_kzalloc(dev, 8, gfp);
			else if (c == C_devm_kmalloc_array)
				p = devm_kmalloc_array(dev, 2, 8, gfp);
			else if (c == C_devm_kcalloc)
				p = devm_kcalloc(dev, 2, 8, gfp);
			else if (c == C_devm_krealloc)
				p = devm_krealloc(dev, p, 16, gfp);
			else if (c == C_devm_kstrdup)
				p = devm_kstrdup(dev, "x", gfp);
			else if (c == C_devm_kmemdup)
				p = devm_kmemdup(dev, "x", 2, gfp);
			else
				p = devm_kmalloc(dev, 8, GFP_ATOMIC);
			assert_non_null(p);
		} else if (ph == UNDO) {
			devm_kfree(dev, p);
		}
		break;
	case C_request_irq:
	case C_request_threaded_irq:
		if (ph == CALL && c == C_request_irq)
			assert_int_equal(
				request_irq(line, handler, 0, "as", &irq), 0);
		else if (ph == CALL)
			assert_int_equal(request_threaded_irq(line, handler,
							      NULL, 0, "as",
							      &irq),
					 0);
		else if (ph == UNDO)
			assert_string_equal(free_irq(line, &irq), "as");
		break;
	case C_devm_request_irq:
	case C_devm_request_threaded_irq:
		if (ph == CALL && c == C_devm_request_irq)
			assert_int_equal(devm_request_irq(dev, line, handler, 0,
							  "as", &irq),
					 0);
		else if (ph == CALL)
			assert_int_equal(
				devm_request_threaded_irq(dev, line, handler,
							  NULL, 0, "as", &irq),
				0);
		else if (ph == UNDO)
			devm_free_irq(dev, line, &irq);
		break;
	case C_free_irq:
		if (ph == PREP)
			assert_int_equal(
				request_irq(line, handler, 0, "as", &irq), 0);
		else if (ph == CALL)
			ret = free_irq(line, &irq);
		else
			assert_string_equal(ret, "as");
		break;
	case C_devm_free_irq:
		if (ph == PREP)
			assert_int_equal(devm_request_irq(dev, line, handler, 0,
							  "as", &irq),
					 0);
		else if (ph == CALL)
			devm_free_irq(dev, line, &irq);
		break;
	case C_synchronize_irq:
		if (ph == CALL)
			synchronize_irq(line);
		break;
	case C_disable_irq:
	case C_disable_irq_nosync:
		if (ph == CALL && c == C_disable_irq)
			disable_irq(line);
		else if (ph == CALL)
			disable_irq_nosync(line);
		else if (ph == UNDO)
			enable_irq(line);
		break;
	case C_enable_irq:
		if (ph == PREP)
			disable_irq_nosync(line);
		else if (ph == CALL)
			enable_irq(line);
		break;
	case C_udelay:
		if (ph == CALL)
			udelay(1);
		break;
	case C_mdelay:
		if (ph == CALL)
			mdelay(0);
		break;
	case C_mutex_trylock:
		if (ph == CALL)
			assert_int_equal(mutex_trylock(&m), 1);
		else if (ph == UNDO)
			mutex_unlock(&m);
		break;
	case C_spin_trylock:
		if (ph == CALL)
			assert_int_equal(spin_trylock(&other_s), 1);
		else if (ph == UNDO)
			spin_unlock(&other_s);
		break;
	default:
		fail();
	}
}

/* The contexts: the first three are none. */
#define CONTEXTS(X)                                                            \
	X(none)                                                                \
	X(mutex_held)                                                          \
	X(thread_fn)                                                           \
	X(hardirq)                                                             \
	X(spin_lock)                                                           \
	X(spin_lock_irqsave)                                                   \
	X(spin_lock_irq)                                                       \
	X(spin_lock_bh)                                                        \
	X(raw_spin_lock)                                                       \
	X(local_irq_disable)                                                   \
	X(local_irq_save)                                                      \
	X(preempt_disable)                                                     \
	X(local_bh_disable)

#define ID(name) X_##name,
enum ctx {
	CONTEXTS(ID) NCTX
};
#undef ID
#define NAME(name) #name,
static const char *const ctx_name[] = { CONTEXTS(NAME) };
#undef NAME

static struct mutex outer_m;
static spinlock_t outer_s;
static raw_spinlock_t outer_r;
static unsigned long flags;

static void enter(enum ctx x)
{
	switch (x) {
	case X_none:
		break;
	case X_mutex_held:
		mutex_lock(&outer_m);
		break;
	case X_thread_fn:
	case X_hardirq:
		break; /* the handler's line is raised instead */
	case X_spin_lock:
		spin_lock(&outer_s);
		break;
	case X_spin_lock_irqsave:
		spin_lock_irqsave(&outer_s, flags);
		break;
	case X_spin_lock_irq:
		spin_lock_irq(&outer_s);
		break;
	case X_spin_lock_bh:
		spin_lock_bh(&outer_s);
		break;
	case X_raw_spin_lock:
		raw_spin_lock(&outer_r);
		break;
	case X_local_irq_disable:
		local_irq_disable();
		break;
	case X_local_irq_save:
		local_irq_save(flags);
		break;
	case X_preempt_disable:
		preempt_disable();
		break;
	case X_local_bh_disable:
		local_bh_disable();
		break;
	default:
		fail();
	}
}

static void leave(enum ctx x)
{
	switch (x) {
	case X_none:
		break;
	case X_mutex_held:
		mutex_unlock(&outer_m);
		break;
	case X_thread_fn:
	case X_hardirq:
		break;
	case X_spin_lock:
		spin_unlock(&outer_s);
		break;
	case X_spin_lock_irqsave:
		spin_unlock_irqrestore(&outer_s, flags);
		break;
	case X_spin_lock_irq:
		spin_unlock_irq(&outer_s);
		break;
	case X_spin_lock_bh:
		spin_unlock_bh(&outer_s);
		break;
	case X_raw_spin_lock:
		raw_spin_unlock(&outer_r);
		break;
	case X_local_irq_disable:
		local_irq_enable();
		break;
	case X_local_irq_save:
		local_irq_restore(flags);
		break;
	case X_preempt_disable:
		preempt_enable();
		break;
	case X_local_bh_disable:
		local_bh_enable();
		break;
	default:
		fail();
	}
}

static int warns, named;
static char last[256];
static const char *want;

/*
 * The handler contexts: a line whose primary handler makes the call, or
 * wakes its thread function to make it. A lock the call takes is let go
 * in the same thread. What each saw of the context: the count of
 * hard-irq sections it was in.
 */
static int hirq;
static enum call in_call;
static bool in_thread;
static int seen_hardirq = -1;

static bool undo_in_context(enum call c)
{
	return c == C_mutex_lock || c == C_mutex_lock_nested ||
	       c == C_mutex_lock_interruptible || c == C_mutex_lock_killable ||
	       c == C_mutex_trylock || c == C_spin_trylock;
}

static void call_here(void)
{
	seen_hardirq = kcompat_held.hardirq;
	step(in_call, CALL);
	if (undo_in_context(in_call))
		step(in_call, UNDO);
}

static irqreturn_t calling_handler(int n, void *dev_id)
{
	(void)n;
	(void)dev_id;
	if (in_thread)
		return IRQ_WAKE_THREAD;
	call_here();
	return IRQ_HANDLED;
}

static irqreturn_t calling_thread_fn(int n, void *dev_id)
{
	(void)n;
	(void)dev_id;
	call_here();
	return IRQ_HANDLED;
}

static void sink(void *ctx, int level, const char *line)
{
	char head[96];

	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	warns++;
	snprintf(last, sizeof(last), "%s", line);
	snprintf(head, sizeof(head), "WARNING: (no device): %s: called ", want);
	if (!strncmp(line, head, strlen(head)) && strstr(line, ": it may "
							       "sleep"))
		named++;
}

static void setup_all(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	dev = heap_dev(NULL, "atomic-sleep");
	assert_non_null(dev);
	irq = irq_line_create("atomic-sleep");
	assert_true(irq > 0);
	mutex_init(&m);
	mutex_init(&outer_m);
	spin_lock_init(&other_s);
	spin_lock_init(&outer_s);
	raw_spin_lock_init(&outer_r);
	hirq = irq_line_create("atomic-sleep-handler");
	assert_true(hirq > 0);
	assert_int_equal(request_threaded_irq((unsigned int)hirq,
					      calling_handler,
					      calling_thread_fn, IRQF_ONESHOT,
					      "caller", &hirq),
			 0);
}

static void teardown_all(void)
{
	devres_set_log_sink(NULL, NULL);
	assert_string_equal(free_irq((unsigned int)hirq, &hirq), "caller");
	assert_int_equal(irq_line_destroy(hirq), 0);
	assert_int_equal(irq_line_destroy(irq), 0);
	put_device(dev);
}

/* Every call in every context: one WARN naming it where it may sleep. */
static void every_call_every_context(void **state)
{
	int bad = 0;

	(void)state;
	setup_all();
	for (int x = 0; x < NCTX; x++) {
		for (int c = 0; c < NCALLS; c++) {
			int expect = call_sleeps[c] && x >= X_hardirq;
			bool handler = x == X_hardirq || x == X_thread_fn;

			step((enum call)c, PREP);
			want = call_name[c];
			warns = named = 0;
			devres_set_log_sink(sink, NULL);
			if (handler) {
				in_call = (enum call)c;
				in_thread = x == X_thread_fn;
				seen_hardirq = -1;
				assert_int_equal(irq_line_raise_wait(hirq), 0);
				/* The primary handler's section only. */
				if (seen_hardirq != !in_thread) {
					print_error("%s in %s: hard-irq count "
						    "%d\n",
						    call_name[c], ctx_name[x],
						    seen_hardirq);
					bad++;
				}
			} else {
				enter((enum ctx)x);
				step((enum call)c, CALL);
				leave((enum ctx)x);
			}
			devres_set_log_sink(NULL, NULL);
			if (!handler || !undo_in_context((enum call)c))
				step((enum call)c, UNDO);
			if (warns != expect || named != expect) {
				print_error("%s in %s: %d WARN (%d naming "
					    "it), want %d: %s\n",
					    call_name[c], ctx_name[x], warns,
					    named, expect, warns ? last : "");
				bad++;
			}
			assert_int_equal(kcompat_spins_held(), 0);
			assert_int_equal(kcompat_held.preempt, 0);
			assert_false(kcompat_held.irqs_off);
		}
	}
	teardown_all();
	assert_int_equal(bad, 0);
}

/*
 * One WARN a call in each section, however often it is made there; the
 * next section says it again; nested contexts are one section.
 */
static void once_a_section(void **state)
{
	(void)state;
	setup_all();
	want = "msleep";
	warns = named = 0;
	devres_set_log_sink(sink, NULL);
	spin_lock(&outer_s);
	for (int i = 0; i < 5; i++)
		msleep(0);
	preempt_disable();
	local_irq_disable();
	msleep(0);
	local_irq_enable();
	preempt_enable();
	msleep(0);
	spin_unlock(&outer_s);
	assert_int_equal(warns, 1);
	assert_int_equal(named, 1);
	/* Another call in the same section: its own WARN. */
	spin_lock(&outer_s);
	msleep(0);
	mutex_lock(&m);
	mutex_unlock(&m);
	mutex_lock(&m);
	mutex_unlock(&m);
	spin_unlock(&outer_s);
	assert_int_equal(warns, 3);
	/* Out of it: nothing; in a new one: again. */
	msleep(0);
	assert_int_equal(warns, 3);
	preempt_disable();
	msleep(0);
	preempt_enable();
	assert_int_equal(warns, 4);
	assert_int_equal(named, 3);
	teardown_all();
}

/*
 * Interrupts off or on as the kernel's flag: a second disable adds
 * nothing, local_irq_restore() restores what local_irq_save() saw; an
 * enable of preemption or bottom halves never disabled WARNs and does
 * nothing (the count does not go below zero).
 */
static void the_flags(void **state)
{
	unsigned long f1, f2;
	int w = devres_warn_count();

	(void)state;
	local_irq_disable();
	local_irq_disable();
	assert_true(irqs_disabled());
	local_irq_enable();
	assert_false(irqs_disabled());
	local_irq_save(f1);
	local_irq_save(f2);
	assert_true(irqs_disabled());
	local_irq_restore(f2);
	assert_true(irqs_disabled());
	local_irq_restore(f1);
	assert_false(irqs_disabled());
	assert_int_equal(devres_warn_count(), w);
	preempt_enable();
	assert_int_equal(devres_warn_count(), w + 1);
	local_bh_enable();
	assert_int_equal(devres_warn_count(), w + 2);
	assert_int_equal(kcompat_held.preempt, 0);
	preempt_disable();
	msleep(0);
	preempt_enable();
	assert_int_equal(devres_warn_count(), w + 3);
}

/* A thread that ends in atomic context leaves none to its successor. */
static void *ends_atomic(void *arg)
{
	(void)arg;
	preempt_disable();
	local_irq_disable();
	spin_lock(&outer_s);
	return NULL;
}

static void thread_end_clears(void **state)
{
	pthread_t t;
	int w;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	spin_lock_init(&outer_s);
	assert_int_equal(pthread_create(&t, NULL, ends_atomic, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	w = devres_warn_count();
	assert_int_equal(pthread_create(&t, NULL, ends_atomic, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* The second thread took the lock the first let go: its own WARN. */
	assert_int_equal(devres_warn_count(), w + 1);
	msleep(0);
	assert_int_equal(devres_warn_count(), w + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_every_context),
		cmocka_unit_test(once_a_section),
		cmocka_unit_test(the_flags),
		cmocka_unit_test(thread_end_clears),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
