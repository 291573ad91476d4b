// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * irq_line_raise_wait() while the delivery of its own assertion makes the
 * line undeliverable: the handler (primary, or a oneshot thread function)
 * disables its line with disable_irq_nosync(), releases its own device
 * (its managed handler goes with it), does that and destroys the line, or
 * another thread disables the line while the handler runs. The handler
 * then goes on for a while. The wait returned -EAGAIN the moment it saw
 * the line disabled or without a handler, with the handler still running:
 * a caller that then read what the handler wrote, or freed what it used,
 * raced it. Now it waits for the delivery in flight, returns 0 (its
 * assertion was handled), and the handler is over: a plain flag it set
 * last is read without a race (TSan). A line left disabled delivers again
 * after one enable_irq() without a WARN; a released one has no handler
 * (the next wait returns -EAGAIN at once). Rows x columns, each cell in a
 * child of its own under an alarm. And a thread function still running
 * for an earlier interrupt is not waited for when this one cannot be
 * delivered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"
#include "hostile/cell-child.h"

enum how {
	SELF_NOSYNC,  /* the handler: disable_irq_nosync() of its line */
	SELF_RELEASE, /* the handler: devres_release_all() of its device */
	SELF_DESTROY, /* the same, then irq_line_destroy() of its line */
	OTHER_NOSYNC, /* another thread: disable_irq_nosync() meanwhile */
	NR_HOW
};
static const char *const how_name[NR_HOW] = {
	"disable_irq_nosync in the handler",
	"its device released in the handler",
	"released and its line destroyed in the handler",
	"disable_irq_nosync on another thread",
};

enum where {
	PRIMARY,
	THREAD_FN,
	NR_WHERE
};
static const char *const where_name[NR_WHERE] = { "primary handler", "thread "
								     "functio"
								     "n" };

/* How long the handler runs on once the line is undeliverable. */
#define HOLD_MS 100

struct cell {
	struct device *dev; /* the child's own */
	int irq;
	enum how how;
	int calls;    /* atomic */
	int inside;   /* atomic: the handler is between its start and end */
	int disabled; /* atomic: the other thread disabled the line */
	int done;     /* plain: written last by the handler */
	int destroy_rc;
};

static struct cell cell;

/* Waits for the other thread's disable; false after WAIT_MS. */
static bool other_disabled(void)
{
	return wait_at_least(&cell.disabled, 1);
}

static irqreturn_t body(int irq, void *dev_id)
{
	struct cell *c = dev_id;

	if (__atomic_add_fetch(&c->calls, 1, __ATOMIC_ACQ_REL) > 1) {
		c->done++;
		return IRQ_HANDLED;
	}
	__atomic_store_n(&c->inside, 1, __ATOMIC_RELEASE);
	switch (c->how) {
	case SELF_NOSYNC:
		disable_irq_nosync((unsigned int)irq);
		break;
	case SELF_DESTROY:
	case SELF_RELEASE:
		devres_release_all(c->dev);
		if (c->how == SELF_DESTROY)
			c->destroy_rc = irq_line_destroy(irq);
		break;
	case OTHER_NOSYNC:
		(void)other_disabled();
		break;
	default:
		break;
	}
	poll(NULL, 0, HOLD_MS);
	c->done++;
	__atomic_store_n(&c->inside, 0, __ATOMIC_RELEASE);
	return IRQ_HANDLED;
}

static void *disabler(void *arg)
{
	struct cell *c = arg;

	if (wait_at_least(&c->inside, 1)) {
		disable_irq_nosync((unsigned int)c->irq);
		__atomic_store_n(&c->disabled, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int request(struct cell *c, enum where where)
{
	if (where == PRIMARY)
		return devm_request_irq(c->dev, (unsigned int)c->irq, body, 0,
					"inflight", c);
	return devm_request_threaded_irq(c->dev, (unsigned int)c->irq, NULL,
					 body, IRQF_ONESHOT, "inflight", c);
}

/* What is left of the line after the cell, checked and given back. */
static int after(struct cell *c)
{
	if (c->how == SELF_DESTROY) {
		if (c->destroy_rc != 0)
			return 20;
		return irq_line_raise_wait(c->irq) == -EINVAL ? 0 : 21;
	}
	if (c->how == SELF_RELEASE) {
		if (irq_line_raise_wait(c->irq) != -EAGAIN)
			return 22;
	} else {
		/* Disabled once, by the cell: one enable, then it delivers. */
		if (irq_line_raise_wait(c->irq) != -EAGAIN)
			return 23;
		enable_irq((unsigned int)c->irq);
		if (irq_line_raise_wait(c->irq) != 0 || c->done < 2)
			return 24;
		if (irq_line_raise_wait(c->irq) != 0 || c->done < 3)
			return 25;
		devres_release_all(c->dev);
	}
	return irq_line_destroy(c->irq) == 0 ? 0 : 26;
}

static int one_cell(int how, int where)
{
	struct cell *c = &cell;
	int rc, warns, threads = nr_threads();
	pthread_t t;

	alarm(10);
	*c = (struct cell){ .how = (enum how)how };
	c->dev = heap_dev(NULL, "inflight");
	if (!c->dev)
		return 1;
	c->irq = irq_line_create("inflight");
	if (c->irq <= 0)
		return 2;
	if (request(c, (enum where)where))
		return 3;
	if (how == OTHER_NOSYNC && pthread_create(&t, NULL, disabler, c))
		return 4;
	warns = devres_warn_count();
	rc = irq_line_raise_wait(c->irq);
	/* Read before anything else: the handler must be over by now. */
	if (__atomic_load_n(&c->inside, __ATOMIC_ACQUIRE))
		return 5;
	if (rc != 0)
		return 6;
	if (c->done != 1)
		return 7;
	if (how == OTHER_NOSYNC && pthread_join(t, NULL))
		return 8;
	rc = after(c);
	if (rc)
		return rc;
	put_device(c->dev);
	if (__atomic_load_n(&heap_released, __ATOMIC_ACQUIRE) != 1)
		return 10;
	/*
	 * A handler freed from its own thread function is reaped by that
	 * thread after the wait returned, and the dispatcher joined there:
	 * the child ends once they are gone (TSan: no thread leaked).
	 */
	if (!wait_threads(threads))
		return 11;
	return devres_warn_count() == warns ? 0 : 9;
}

static void every_way_every_handler(void **state)
{
	int failed = 0;

	(void)state;
	for (int h = 0; h < NR_HOW; h++)
		for (int w = 0; w < NR_WHERE; w++) {
			int st = run_cell_in_child(one_cell, h, w);

			failed += !cell_held(st, how_name[h], where_name[w]);
		}
	assert_int_equal(failed, 0);
}

/*
 * The other side: a thread function still running for an earlier
 * interrupt, which waits for the caller to go on, is not this
 * assertion's. With the line disabled the wait returns -EAGAIN at once,
 * as it always did, and does not wait for it (it would for ever).
 */
static int earlier_go; /* atomic: the earlier thread function may end */

static irqreturn_t earlier_wake(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t earlier_thread(int irq, void *dev_id)
{
	struct cell *c = dev_id;

	(void)irq;
	if (__atomic_add_fetch(&c->calls, 1, __ATOMIC_ACQ_REL) == 1) {
		__atomic_store_n(&c->inside, 1, __ATOMIC_RELEASE);
		(void)wait_at_least(&earlier_go, 1);
		__atomic_store_n(&c->inside, 0, __ATOMIC_RELEASE);
	}
	c->done++;
	return IRQ_HANDLED;
}

static int earlier_cell(int row, int col)
{
	struct cell *c = &cell;
	int rc;

	(void)row;
	(void)col;
	alarm(10);
	*c = (struct cell){ 0 };
	c->irq = irq_line_create("earlier");
	if (c->irq <= 0 ||
	    request_threaded_irq((unsigned int)c->irq, earlier_wake,
				 earlier_thread, 0, "earlier", c))
		return 2;
	if (irq_line_raise(c->irq) || !wait_at_least(&c->inside, 1))
		return 3;
	disable_irq_nosync((unsigned int)c->irq);
	rc = irq_line_raise_wait(c->irq);
	/* Returned with the earlier thread function still in its wait. */
	if (!__atomic_load_n(&c->inside, __ATOMIC_ACQUIRE))
		return 4;
	__atomic_store_n(&earlier_go, 1, __ATOMIC_RELEASE);
	if (rc != -EAGAIN)
		return 5;
	enable_irq((unsigned int)c->irq);
	if (irq_line_raise_wait(c->irq) != 0 || c->done < 2)
		return 6;
	if (!free_irq((unsigned int)c->irq, c))
		return 7;
	return irq_line_destroy(c->irq) == 0 ? 0 : 8;
}

static void earlier_delivery_not_waited_for(void **state)
{
	(void)state;
	assert_true(cell_held(run_cell_in_child(earlier_cell, 0, 0),
			      "an earlier thread function", "line disabled"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_way_every_handler,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(earlier_delivery_not_waited_for,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
