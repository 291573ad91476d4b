/* SPDX-License-Identifier: MIT */
/*
 * Chains of waits for the tables of loops (test-hostile-wait-loops,
 * test-hostile-wait-revoke): participant i runs in a callback of the
 * library and waits there, with kind[i], for participant i + 1's
 * callback; in a loop the last waits for the first. See
 * test-hostile-wait-loops.c for the whole story. Include once, from the
 * test's one source file, after defining _GNU_SOURCE.
 */
#ifndef DEVRES_TESTS_WAIT_CHAIN_H
#define DEVRES_TESTS_WAIT_CHAIN_H
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/interrupt.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include <sys/eventfd.h>
#include <cmocka.h>
#include "testlib.h"
#include "cell-child.h"
#include "base/waits.h"

#define CELL_ALARM_S 10
#define RET 7
#define MAXP 3

enum kind {
	K_STOP,
	K_FREE,
	K_SYNC,
	K_DISABLE,
	K_FLUSH,
	K_CANCEL,
	NK_OLD,
	K_FLUSHWQ = NK_OLD,
	K_DRAINWQ,
	K_DESTROYWQ,
	K_FLUSHD,
	K_UNREG,
	K_RAISE,
	NK,
	/*
	 * The waits of test-hostile-wait-revoke only: a revocation (the
	 * participant is a managed thread inside an access of the revocable,
	 * the body within its access) and synchronize_irq() of a line whose
	 * unmask callback is the body (on a oneshot handler's thread).
	 */
	K_REVOKE = NK,
	K_SYNCU,
	NK_ALL,
	/*
	 * The waits of test-hostile-wait-irq only, for the dispatcher in a
	 * line's primary handler (the body): request_irq() of a second
	 * handler on the shared line, and devm_free_irq() of its managed
	 * handler.
	 */
	K_REQUEST = NK_ALL,
	K_DEVMFREE,
	NK_MORE,
	/*
	 * The wait of test-hostile-wait-devlock only: device_attach() of a
	 * device whose probe (the body) holds its lock, on a managed thread
	 * that binds it by hand.
	 */
	K_DEVLOCK = NK_MORE,
	NK_DEV
};
enum role {
	R_THREAD,
	R_IRQ,
	R_WORK,
	R_WQ,
	R_DWORK,
	R_REG,
	R_READER,
	R_UNMASK,
	R_PRIMARY,
	R_HOLDER
};

static const char *const kind_name[NK_DEV] = {
	"devm_thread_stop",  "free_irq",
	"synchronize_irq",   "disable_irq",
	"flush_work",	     "cancel_work_sync",
	"flush_workqueue",   "drain_workqueue",
	"destroy_workqueue", "flush_delayed_work",
	"hwrng_unregister",  "irq_line_raise_wait",
	"revocable_revoke",  "synchronize_irq (unmask)",
	"request_irq",	     "devm_free_irq",
	"device_attach",
};

static enum role role_of(int k)
{
	if (k == K_DEVLOCK)
		return R_HOLDER;
	if (k == K_REQUEST || k == K_DEVMFREE)
		return R_PRIMARY;
	if (k == K_REVOKE)
		return R_READER;
	if (k == K_SYNCU)
		return R_UNMASK;
	if (k == K_UNREG)
		return R_REG;
	if (k == K_RAISE)
		return R_IRQ;
	if (k >= K_FLUSHWQ)
		return k == K_FLUSHD ? R_DWORK : R_WQ;
	return k == K_STOP ? R_THREAD : k <= K_DISABLE ? R_IRQ : R_WORK;
}

struct part {
	enum role role;
	int kind;   /* the wait it makes, -1 for none */
	int target; /* the participant it waits for */
	struct device dev;
	struct devres_thread *h;
	int irq;
	char name[16];
	struct work_struct work;
	struct delayed_work dwork;
	struct workqueue_struct *wq;
	struct hwrng rng;
	int tid, in, calling, done, freed, destroyed;
	int records;  /* its thread's waits on the record before its own */
	uint64_t wid; /* its thread's wait id */
	long ret;
	struct device tdev;   /* a reader's thread's device */
	struct device ldev;   /* a holder's device, whose probe is the body */
	struct revocable *rv; /* a reader's revocable, on dev */
	int released, rel_tid, efd, armed;
	int extra, extra_on; /* a second handler's dev_id; requested */
};

/* The participants, and after the last the main thread's control wait. */
static struct part P[MAXP + 1];
static int np;
static int holder_bus_on; /* holder_bus registered in this child */
static int go; /* every participant set up: their handles are stored */

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static void dev_release(struct device *dev)
{
	(void)dev;
}

/*
 * Participant @i (or the main thread, @i == np) has called its wait, and
 * that wait is on the library's record of waits: the record by which a
 * wait that would close the loop is refused; or the call has returned (a
 * revocation made inside an access of its own waits for nobody: it is
 * queued, and never on the record). Not when @i is this thread:
 * a work item whose thread could not be spawned is run by the thread that
 * waits for its queue, inline, and its body is then on the thread of the
 * participant before it, which never waits for it.
 */
static void wait_recorded(int i)
{
	while (!LOAD(P[i].calling))
		usleep(1000);
	if (LOAD(P[i].tid) == (int)syscall(SYS_gettid))
		return;
	while (devres__wait_records(P[i].wid) <= P[i].records &&
	       !LOAD(P[i].done))
		usleep(1000);
}

/* Participant @i (np: the main thread) is about to make its wait. */
static void calling(int i)
{
	STORE(P[i].tid, (int)syscall(SYS_gettid));
	P[i].wid = devres_wait_self();
	P[i].records = devres__wait_records(P[i].wid);
	STORE(P[i].calling, 1);
}

static irqreturn_t nop_fn(int irq, void *dev_id);

/* @kind's wait for participant @j; what it returned, as a number. */
static long do_wait(int kind, int j)
{
	int rc;

	const void *name;
	int w0;

	switch (kind) {
	case K_STOP:
		return devm_thread_stop(&P[j].dev, P[j].h);
	case K_FREE:
		name = free_irq((unsigned int)P[j].irq, &P[j]);
		STORE(P[j].freed, 1);
		return name && !strcmp(name, P[j].name) ? 1 : 2;
	case K_SYNC:
		synchronize_irq((unsigned int)P[j].irq);
		return 0;
	case K_DISABLE:
		disable_irq((unsigned int)P[j].irq);
		return 0;
	case K_FLUSH:
		return flush_work(&P[j].work);
	case K_CANCEL:
		return cancel_work_sync(&P[j].work);
	case K_FLUSHWQ:
		flush_workqueue(P[j].wq);
		return 0;
	case K_DRAINWQ:
		drain_workqueue(P[j].wq);
		return 0;
	case K_DESTROYWQ:
		/* Refused: one WARN, and the queue is still there. */
		w0 = devres_warn_count();
		destroy_workqueue(P[j].wq);
		if (devres_warn_count() == w0)
			STORE(P[j].destroyed, 1);
		return 0;
	case K_FLUSHD:
		return flush_delayed_work(&P[j].dwork);
	case K_UNREG:
		hwrng_unregister(&P[j].rng);
		return 0;
	case K_REVOKE:
		/* The revocable alone is on the device: one node released. */
		return devres_release_all(&P[j].dev);
	case K_SYNCU:
		synchronize_irq((unsigned int)P[j].irq);
		return 0;
	case K_REQUEST:
		rc = request_irq((unsigned int)P[j].irq, nop_fn, IRQF_SHARED,
				 "extra", &P[j].extra);
		if (!rc)
			STORE(P[j].extra_on, 1);
		return rc;
	case K_DEVMFREE:
		devm_free_irq(&P[j].dev, (unsigned int)P[j].irq, &P[j]);
		STORE(P[j].freed, 1);
		return 0;
	case K_DEVLOCK:
		return device_attach(&P[j].ldev);
	default:
		return irq_line_raise_wait(P[j].irq);
	}
}

static void body(int i)
{
	/* A raise waited for runs the handler again: nothing to do then. */
	if (LOAD(P[i].done))
		return;
	STORE(P[i].tid, (int)syscall(SYS_gettid));
	STORE(P[i].in, 1);
	while (!LOAD(go))
		usleep(1000);
	for (int j = 0; j < np; j++)
		while (!LOAD(P[j].in))
			usleep(1000);
	if (i > 0)
		wait_recorded(i - 1);
	if (P[i].kind >= 0) {
		calling(i);
		P[i].ret = do_wait(P[i].kind, P[i].target);
	} else {
		wait_recorded(np);
	}
	STORE(P[i].done, 1);
}

static int thread_fn(void *arg)
{
	body((int)(intptr_t)arg);
	return RET;
}

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)data;
	(void)max;
	(void)wait;
	body((int)((struct part *)((char *)rng - offsetof(struct part, rng)) -
		   P));
	return 0;
}

/* A managed thread in a read of its rng: the read method is the body. */
static int reader_fn(void *arg)
{
	char buf[4] = { 0 };

	return hwrng_read(P[(intptr_t)arg].name, buf, sizeof(buf), true) == 0
		       ? RET
		       : 1;
}

/* A managed thread inside an access of its revocable: the body. */
static int access_fn(void *arg)
{
	int i = (int)(intptr_t)arg;

	if (!revocable_try_access(P[i].rv))
		return 1;
	body(i);
	revocable_access_end(P[i].rv);
	return RET;
}

static void res_release(void *res)
{
	struct part *p = res;

	STORE(p->rel_tid, (int)syscall(SYS_gettid));
	STORE(p->released, LOAD(p->released) + 1);
}

/* The probe of a holder's device, bound by hand: the body, locked. */
static int holder_probe(struct device *dev)
{
	body((int)((struct part *)((char *)dev - offsetof(struct part, ldev)) -
		   P));
	return 0;
}

static const struct bus_type holder_bus = { .name = "wchold" };

static struct device_driver holder_drv = {
	.name = "wchold",
	.bus = &holder_bus,
	.probe = holder_probe,
};

/* A managed thread binding its holder's device: the probe is the body. */
static int holder_fn(void *arg)
{
	return device_driver_attach(&holder_drv, &P[(intptr_t)arg].ldev) ? 1
									 : RET;
}

/* After its thread function, on the oneshot handler's thread. */
static void unmask_fn(void *ctx)
{
	struct part *p = ctx;

	if (LOAD(p->armed))
		body((int)(p - P));
}

static irqreturn_t nop_fn(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static irqreturn_t irq_fn(int irq, void *dev_id)
{
	(void)irq;
	body((int)((struct part *)dev_id - P));
	return IRQ_HANDLED;
}

/*
 * A primary handler whose body makes waits a primary handler must not
 * (the kernel's might_sleep() reports them, kcompat_hardirq()): told
 * out of hard-irq context around it, so that a cell counts the WARNs of
 * its waits alone. The dispatcher still runs it, in the line's dispatch.
 */
static irqreturn_t primary_fn(int irq, void *dev_id)
{
	(void)irq;
	kcompat_hardirq(-1);
	body((int)((struct part *)dev_id - P));
	kcompat_hardirq(1);
	return IRQ_HANDLED;
}

static void work_fn(struct work_struct *w)
{
	body((int)((struct part *)((char *)w - offsetof(struct part, work)) -
		   P));
}

static void dwork_fn(struct work_struct *w)
{
	struct delayed_work *dw = to_delayed_work(w);

	body((int)((struct part *)((char *)dw - offsetof(struct part, dwork)) -
		   P));
}

/* What the wait of @kind returns, whether refused or not. */
static long expected(int kind, bool refused)
{
	switch (kind) {
	case K_STOP:
		return refused ? -EDEADLK : RET;
	case K_RAISE:
	case K_REQUEST:
		return refused ? -EDEADLK : 0;
	case K_FREE:
	case K_FLUSH:
	case K_FLUSHD:
	case K_REVOKE:
		return 1;
	case K_DEVLOCK:
		/* Bound by the probe it waited for. */
		return refused ? -EDEADLK : 1;
	default:
		return 0;
	}
}

static int setup(int i)
{
	struct part *p = &P[i];

	snprintf(p->name, sizeof(p->name), "wl%d", i);
	switch (p->role) {
	case R_THREAD:
	case R_REG:
		device_initialize(&p->dev);
		p->dev.release = dev_release;
		if (dev_set_name(&p->dev, "%s", p->name))
			return 2;
		if (p->role == R_REG) {
			p->rng.name = p->name;
			p->rng.read = rng_read;
			if (hwrng_register(&p->rng))
				return 15;
		}
		p->h = devm_thread_run(&p->dev,
				       p->role == R_REG ? reader_fn : thread_fn,
				       (void *)(intptr_t)i, p->name);
		return IS_ERR(p->h) ? 3 : 0;
	case R_IRQ:
		p->irq = irq_line_create(p->name);
		if (p->irq <= 0)
			return 4;
		if (request_threaded_irq((unsigned int)p->irq, NULL, irq_fn,
					 IRQF_ONESHOT, p->name, p))
			return 5;
		return irq_line_raise(p->irq) ? 6 : 0;
	case R_READER:
		device_initialize(&p->dev);
		device_initialize(&p->tdev);
		p->dev.release = dev_release;
		p->tdev.release = dev_release;
		if (dev_set_name(&p->dev, "%s", p->name) ||
		    dev_set_name(&p->tdev, "%st", p->name))
			return 2;
		p->rv = devm_revocable_create(&p->dev, p, res_release);
		if (!p->rv)
			return 16;
		p->h = devm_thread_run(&p->tdev, access_fn, (void *)(intptr_t)i,
				       p->name);
		return IS_ERR(p->h) ? 3 : 0;
	case R_UNMASK:
		p->efd = eventfd(0, EFD_CLOEXEC);
		if (p->efd < 0)
			return 17;
		p->irq = irq_line_attach_masked(p->efd, unmask_fn, p, p->name);
		if (p->irq <= 0)
			return 18;
		/* Its first unmask (the request's) is not the body. */
		if (request_threaded_irq((unsigned int)p->irq, NULL, nop_fn,
					 IRQF_ONESHOT, p->name, p))
			return 19;
		STORE(p->armed, 1);
		return irq_line_raise(p->irq) ? 6 : 0;
	case R_PRIMARY:
		/* Raised by chain() once the others are in their bodies. */
		device_initialize(&p->dev);
		p->dev.release = dev_release;
		if (dev_set_name(&p->dev, "%s", p->name))
			return 2;
		p->irq = irq_line_create(p->name);
		if (p->irq <= 0)
			return 4;
		return devm_request_irq(&p->dev, (unsigned int)p->irq,
					primary_fn, IRQF_SHARED, p->name, p)
			       ? 5
			       : 0;
	case R_HOLDER:
		/* The bus, registered once a child, by the cell's first. */
		if (!LOAD(holder_bus_on) && bus_register(&holder_bus))
			return 20;
		STORE(holder_bus_on, 1);
		device_initialize(&p->dev);
		device_initialize(&p->ldev);
		p->dev.release = dev_release;
		p->ldev.release = dev_release;
		p->ldev.bus = &holder_bus;
		if (dev_set_name(&p->dev, "%s", p->name) ||
		    dev_set_name(&p->ldev, "%sl", p->name) ||
		    device_add(&p->ldev))
			return 21;
		p->h = devm_thread_run(&p->dev, holder_fn, (void *)(intptr_t)i,
				       p->name);
		return IS_ERR(p->h) ? 3 : 0;
	case R_WORK:
		INIT_WORK(&p->work, work_fn);
		return schedule_work(&p->work) ? 0 : 7;
	case R_WQ:
		p->wq = alloc_workqueue("%s", 0, 0, p->name);
		if (!p->wq)
			return 8;
		INIT_WORK(&p->work, work_fn);
		return queue_work(p->wq, &p->work) ? 0 : 9;
	default:
		/*
		 * Its thread waits for the delay until a flush makes it due;
		 * the first participant's is due at once: it starts the chain.
		 */
		STORE(p->in, 1);
		/* The macro's type check: an unevaluated sizeof of a pointer. */
		/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
		INIT_DELAYED_WORK(&p->dwork, dwork_fn);
		return schedule_delayed_work(&p->dwork, i ? 3600 * HZ : 0) ? 0
									   : 14;
	}
}

static void teardown(int i)
{
	struct part *p = &P[i];

	switch (p->role) {
	case R_THREAD:
	case R_REG:
		(void)devres_release_all(&p->dev);
		put_device(&p->dev);
		break;
	case R_IRQ:
		if (!LOAD(p->freed))
			(void)free_irq((unsigned int)p->irq, p);
		for (int n = 0; n < 2000 && irq_line_destroy(p->irq); n++)
			usleep(1000);
		break;
	case R_READER:
		(void)devres_release_all(&p->dev);
		/* Joins the thread: its access, and what it finishes, ended. */
		(void)devres_release_all(&p->tdev);
		put_device(&p->dev);
		put_device(&p->tdev);
		break;
	case R_UNMASK:
		(void)free_irq((unsigned int)p->irq, p);
		for (int n = 0; n < 2000 && irq_line_destroy(p->irq); n++)
			usleep(1000);
		close(p->efd);
		break;
	case R_PRIMARY:
		if (LOAD(p->extra_on))
			(void)free_irq((unsigned int)p->irq, &p->extra);
		(void)devres_release_all(&p->dev);
		put_device(&p->dev);
		for (int n = 0; n < 2000 && irq_line_destroy(p->irq); n++)
			usleep(1000);
		break;
	case R_HOLDER:
		/* Joins the thread, then unbinds and deletes its device. */
		(void)devres_release_all(&p->dev);
		device_del(&p->ldev);
		put_device(&p->dev);
		put_device(&p->ldev);
		break;
	case R_WORK:
		(void)cancel_work_sync(&p->work);
		break;
	case R_WQ:
		(void)cancel_work_sync(&p->work);
		if (!LOAD(p->destroyed))
			destroy_workqueue(p->wq);
		break;
	default:
		(void)cancel_delayed_work_sync(&p->dwork);
		break;
	}
}

/*
 * A chain of @n kinds; @loop: the last participant waits for the first,
 * else the main thread does. 0 when the cell holds.
 */
static int chain(const int *kinds, int n, bool loop)
{
	struct devres_ledger start, now;
	bool last_refused;
	long main_ret = 0;
	int w0, rc;

	alarm(CELL_ALARM_S);
	memset(P, 0, sizeof(P));
	np = n;
	go = 0;
	/* A child's compat heap device is made at its first kmalloc(). */
	kfree(kmalloc(1, GFP_KERNEL));
	devres_ledger_snapshot(&start);
	w0 = devres_warn_count();
	/* Participant i is what kind[i - 1] waits for (the last: kind 0). */
	for (int i = 0; i < n; i++) {
		P[i].role = role_of(kinds[(i + n - 1) % n]);
		P[i].kind = i < n - 1 || loop ? kinds[i] : -1;
		P[i].target = (i + 1) % n;
	}
	for (int i = 0; i < n; i++) {
		rc = setup(i);
		if (rc)
			return rc;
	}
	STORE(go, 1);
	/*
	 * A primary handler's body holds the one dispatcher: its line is
	 * raised once every other body runs (those that need the
	 * dispatcher to start are delivered first).
	 */
	for (int i = 0; i < n; i++) {
		if (P[i].role != R_PRIMARY)
			continue;
		for (int j = 0; j < n; j++)
			while (j != i && !LOAD(P[j].in))
				usleep(1000);
		if (irq_line_raise(P[i].irq))
			return 6;
	}
	if (!loop) {
		for (int j = 0; j < n; j++)
			while (!LOAD(P[j].in))
				usleep(1000);
		wait_recorded(n - 2);
		calling(n);
		main_ret = do_wait(kinds[n - 1], 0);
		STORE(P[n].done, 1);
	}
	for (int i = 0; i < n; i++)
		while (!LOAD(P[i].done))
			usleep(1000);
	/*
	 * A revoker inside an access of its own waits for nobody: its
	 * revocation is finished when its access ends (no loop to refuse).
	 */
	last_refused = loop && !(P[n - 1].kind == K_REVOKE &&
				 P[n - 1].role == R_READER);
	for (int i = 0; i < n; i++) {
		bool refused = last_refused && i == n - 1;

		if (P[i].kind >= 0 &&
		    P[i].ret != expected(P[i].kind, refused)) {
			fprintf(stderr, "participant %d (%s): %ld, not %ld\n",
				i, kind_name[P[i].kind], P[i].ret,
				expected(P[i].kind, refused));
			return 10;
		}
	}
	if (!loop && main_ret != expected(kinds[n - 1], false)) {
		fprintf(stderr, "main (%s): %ld\n", kind_name[kinds[n - 1]],
			main_ret);
		return 11;
	}
	if (devres_warn_count() - w0 != (last_refused ? 1 : 0)) {
		fprintf(stderr, "%d WARNs\n", devres_warn_count() - w0);
		return 12;
	}
	for (int i = 0; i < n; i++)
		teardown(i);
	/*
	 * Each resource released once; a revocation refused for its reader
	 * is finished by that reader, as its access ends.
	 */
	for (int i = 0; i < n; i++) {
		if (P[i].role == R_READER && LOAD(P[i].released) != 1)
			return 14;
	}
	if (last_refused && P[n - 1].kind == K_REVOKE &&
	    LOAD(P[0].rel_tid) != LOAD(P[0].tid))
		return 15;
	/* A handler left to its thread is freed as that thread ends. */
	for (int t = 0; t < 2000; t++) {
		devres_ledger_snapshot(&now);
		if (!devres_ledger_diff(&start, &now, NULL))
			return 0;
		usleep(1000);
	}
	devres_ledger_diff(&start, &now, stderr);
	return 13;
}

#endif /* DEVRES_TESTS_WAIT_CHAIN_H */
