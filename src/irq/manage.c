// SPDX-License-Identifier: MIT
/*
 * Requesting and freeing handlers, enabling and disabling lines, waiting for
 * handlers, and the unhandled-interrupt detector.
 *
 * A thread that changes a line's list of handlers first makes the line
 * stop dispatching (mutators), then waits until the dispatch in progress,
 * if any, has returned. The dispatcher does not start a new one meanwhile:
 * it leaves the interrupt pending and it is replayed afterwards. So the
 * dispatcher walks the list without a lock, and a freed handler is not
 * running once it is off the list.
 *
 * The one thread that cannot wait for a dispatch is the one running it: a
 * handler that frees a handler of its own line. free_irq() refuses (it
 * would wait for itself); the managed release, which cannot refuse (a
 * handler that unbinds its device), takes the handler off the list and
 * leaves it to the dispatcher to finish once the dispatch has returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include "internal.h"

TLS_FAST struct irq_line *irq__cur_line;
TLS_FAST struct irq_line *irq__running_line;
TLS_FAST struct irq_action *irq__cur_action;

static bool deliverable(const struct irq_line *line)
{
	return line->nr_actions && !line->depth && !line->oneshot_masked &&
	       !line->mutators;
}

/*
 * With the line locked, whenever it may have become deliverable again.
 * Not inside the line's own delivery (a handler's enable_irq(), or a
 * managed free): the line was unmasked, or its interrupt replayed, while
 * its handlers still ran, and an unmask callback ending the thread
 * there lost the rest of the delivery. The delivery's end does it.
 */
bool irq__line_done(struct irq_line *line)
{
	if (!deliverable(line) || irq__running_line == line)
		return false;
	if (!line->pending)
		return irq__line_unmask(line);
	irq__replay(line);
	return false;
}

/* Makes the list ours: no dispatch of the line runs, and none starts. */
static void begin_change(struct irq_line *line)
{
	line->mutators++;
	int cancel;

	if (irq__running_line == line)
		return;
	cancel = devres__cancel_off();
	while (line->running || irq__unmask_busy(line))
		pthread_cond_wait(&line->idle, &line->lock);
	devres__cancel_restore(cancel);
}

/* True as irq__line_done(). */
static bool end_change(struct irq_line *line)
{
	line->mutators--;
	return irq__line_done(line);
}

/* Runs a line's thread functions only, for handler == NULL. */
static irqreturn_t default_primary(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

/* A holder of the line whose flags refused a request, for its message. */
struct mismatch {
	unsigned long flags;
	char name[64];
};

static int check_share(const struct irq_line *line, unsigned long flags,
		       struct mismatch *ret_old)
{
	const struct irq_action *old = line->actions;

	if (!old)
		return 0;
	if ((old->flags & flags & IRQF_SHARED) &&
	    !((old->flags ^ flags) & IRQF_ONESHOT))
		return 0;
	/* Copied under the line's lock: the holder may go once it is let go. */
	ret_old->flags = old->flags;
	snprintf(ret_old->name, sizeof(ret_old->name), "%s",
		 old->name ? old->name : "(null)");
	return -EBUSY;
}

/*
 * The kernel's __setup_irq() says why a line refused a request with
 * pr_err(), not WARN(): a line held by another driver is a conflict, as
 * a busy region is, not a misuse of the call. One error line, not
 * counted as a WARN, sent once the line's lock is let go.
 */
static void mismatch_err(const struct devres__owner *owner, unsigned int irq,
			 unsigned long flags, const char *name,
			 const struct mismatch *old)
{
	char buf[40];

	devres__print(DEVRES_LOG_ERR,
		      "%s: %s: Flags mismatch irq %u. %08lx (%s) vs. %08lx "
		      "(%s)",
		      owner ? devres__dev_label(owner->dev, buf, sizeof(buf))
			    : "(no device)",
		      owner ? owner->call : "request_threaded_irq", irq, flags,
		      name ? name : "(null)", old->flags, old->name);
}

/* The line's first handler: it starts clean, in the dispatcher's set. */
static int first_action(struct irq_line *line, struct irq_dispatcher *disp,
			unsigned long flags)
{
	int rc;

	irq__line_drain(line);
	rc = irq__disp_add(disp, line->irq, line->fd);
	if (rc)
		return rc;
	line->disp = disp;
	line->depth = flags & IRQF_NO_AUTOEN ? 1 : 0;
	line->pending = false;
	line->count = line->unhandled = 0;
	/* A UIO device may have fired before: let it fire again. */
	line->hw_masked = true;
	return 0;
}

/* The line's last handler went: whatever is pending is dropped. */
static void last_action(struct irq_line *line)
{
	irq__disp_del(line->disp, line->irq, line->fd);
	line->disp = NULL;
	irq__line_drain(line);
	line->pending = false;
}

/*
 * What a request is refused for whatever the line (-EINVAL): the kernel's
 * checks of request_threaded_irq() and __setup_irq(); NULL when none.
 */
static const char *flags_bad(irq_handler_t handler, unsigned long flags,
			     const void *dev_id)
{
	if (!handler && !(flags & IRQF_ONESHOT))
		return "a NULL handler without IRQF_ONESHOT";
	if ((flags & IRQF_SHARED) && !dev_id)
		return "IRQF_SHARED without a dev_id";
	if ((flags & IRQF_SHARED) && (flags & IRQF_NO_AUTOEN))
		return "IRQF_NO_AUTOEN with IRQF_SHARED";
	return NULL;
}

int irq__request(unsigned int irq, irq_handler_t handler,
		 irq_handler_t thread_fn, unsigned long flags, const char *name,
		 void *dev_id, const struct devres__owner *owner)
{
	struct irq_dispatcher *disp;
	struct irq_action *a, **pp;
	struct mismatch old = { 0 };
	struct irq_line *line;
	struct devres__wait w;
	bool last, refused = false;
	int rc;

	/* Each caller WARNed already (irq__args_bad()). */
	if ((!handler && !thread_fn) || flags_bad(handler, flags, dev_id))
		return -EINVAL;
	if (irq >= IRQ_LINES_MAX)
		return -EINVAL;
	line = irq__line_get((int)irq);
	if (!line)
		return -EINVAL;
	a = devres__should_fail() ? NULL : calloc(1, sizeof(*a));
	if (!a) {
		rc = -ENOMEM;
		goto put_line;
	}
	*a = (struct irq_action){ .handler = handler ? handler
						     : default_primary,
				  .thread_fn = thread_fn,
				  .dev_id = dev_id,
				  .name = name,
				  .flags = flags,
				  .line = line };
	if (owner)
		a->owner = *owner;
	rc = irq__get_dispatcher(&disp);
	if (rc)
		goto free_action;
	if (thread_fn) {
		rc = irq__thread_start(a);
		if (rc)
			goto put_disp;
	}
	devres__wait_init(&w, "request_irq");
	pthread_mutex_lock(&line->lock);
	/*
	 * The list is changed once no dispatch of the line runs: a wait for
	 * the dispatcher in its primary handlers and for the unmask
	 * callbacks on other threads, on the record like free_irq()'s. One
	 * that would close a loop requests nothing.
	 */
	if (irq__running_line != line) {
		if (line->running && line->disp)
			devres__wait_target(&w, line->disp->wid);
		irq__unmask_targets(line, &w);
	}
	if (devres__wait_begin(&w)) {
		pthread_mutex_unlock(&line->lock);
		devres__warn(NULL, "request_irq",
			     "irq %u: its dispatch waits for this thread (%s): "
			     "not requested",
			     irq, w.loop);
		rc = -EDEADLK;
		goto stop_thread;
	}
	begin_change(line);
	devres__wait_end(&w);
	/* Destroyed since it was looked up: as if destroyed before. */
	rc = line->doomed ? -EINVAL : check_share(line, flags, &old);
	if (!rc && !line->actions)
		rc = first_action(line, disp, flags);
	if (!rc) {
		for (pp = &line->actions; *pp; pp = &(*pp)->next)
			;
		a->seq = ++line->requests;
		*pp = a;
		line->nr_actions++;
		/*
		 * The handler's reference replaces the call's, and it is
		 * counted, before end_change(): a masked line's unmask
		 * callback runs there, and may end this thread.
		 */
		devres__ledger_add(DL_IRQ_HANDLERS, 1);
		/*
		 * A managed handler's node goes on its device before the
		 * line lock is let go: a free_irq() by hand, which takes the
		 * node off under this lock, always finds it there. Added
		 * after, the node of a handler freed in between stayed on
		 * the device. Its ADD line waits for the unlock.
		 */
		if (owner)
			refused = !devres__owner_add(owner);
	}
	/*
	 * Attached, the handler's reference is the only one the call has:
	 * an unmask callback there that freed the handler and destroyed the
	 * line left its last reference to us.
	 */
	last = end_change(line);
	pthread_mutex_unlock(&line->lock);
	if (last)
		irq__line_free(line);
	if (!rc && owner)
		devres__log_release();
	/* Refused by its device (released meanwhile): freed as by it. */
	if (refused) {
		devres__owner_refused(owner);
		return -ENODEV;
	}
	if (rc == -EBUSY && old.name[0])
		mismatch_err(owner, irq, flags, name, &old);
	if (rc)
		goto stop_thread;
	return 0;

stop_thread:
	/* It never ran its function: it waits for nobody. */
	if (a->has_thread)
		(void)irq__thread_stop(a, false);
put_disp:
	irq__put_dispatcher();
free_action:
	free(a);
put_line:
	irq__line_put(line);
	return rc;
}

/*
 * The pointers a request keeps and calls later, and the flags that go
 * with them: refused at the call with one WARN naming it, never when the
 * interrupt first fires. Each is a driver's bug on every line.
 */
bool irq__args_bad(struct device *dev, unsigned int irq, irq_handler_t handler,
		   irq_handler_t thread_fn, unsigned long flags,
		   const char *name, const void *dev_id, const char *func)
{
	const char *why;

	if (devres__opt_bad(dev, (const void *)handler, func, "handler") ||
	    devres__opt_bad(dev, (const void *)thread_fn, func, "thread_fn") ||
	    devres__opt_bad(dev, name, func, "name"))
		return true;
	if (!handler && !thread_fn) {
		devres__warn(dev, func, "no handler and no thread_fn");
		return true;
	}
	why = flags_bad(handler, flags, dev_id);
	if (why) {
		devres__warn(dev, func, "irq %u: %s: not requested", irq, why);
		return true;
	}
	return false;
}

int request_threaded_irq(unsigned int irq, irq_handler_t handler,
			 irq_handler_t thread_fn, unsigned long flags,
			 const char *name, void *dev_id)
{
	if (irq__args_bad(NULL, irq, handler, thread_fn, flags, name, dev_id,
			  __func__))
		return -EINVAL;
	return irq__request(irq, handler, thread_fn, flags, name, dev_id, NULL);
}

int request_irq(unsigned int irq, irq_handler_t handler, unsigned long flags,
		const char *name, void *dev_id)
{
	if (irq__args_bad(NULL, irq, handler, NULL, flags, name, dev_id,
			  __func__))
		return -EINVAL;
	return request_threaded_irq(irq, handler, NULL, flags, name, dev_id);
}

/* Stops a freed handler's thread and lets go of what it held. */
void irq__finish(struct irq_action *a)
{
	/* Left to its thread, which finishes it (thread_exit_locked()). */
	if (a->has_thread && !a->self_reap && !irq__thread_stop(a, true))
		return;
	irq__line_put(a->line);
	free(a);
	irq__put_dispatcher();
}

static struct irq_line *get_line(unsigned int irq, const char *func)
{
	struct irq_line *line = NULL;

	if (irq < IRQ_LINES_MAX)
		line = irq__line_get((int)irq);
	if (!line)
		devres__warn(NULL, func, "irq %u is not a line", irq);
	return line;
}

/* A handler or thread function of this line is running in this thread. */
static bool own_handler(const struct irq_line *line, unsigned int irq,
			const char *func)
{
	if (irq__cur_line != line)
		return false;
	devres__warn(NULL, func,
		     "irq %u: called from its own handler, would wait for "
		     "itself",
		     irq);
	return true;
}

/* The handler to free: by dev_id, or the one a node owns (@node). */
static bool is_it(const struct irq_action *a, const void *dev_id,
		  const void *node)
{
	/* One a managed release freed already is not freed again. */
	if (a->unlink_due)
		return false;
	return node ? devres__owned_by(&a->owner, node) : a->dev_id == dev_id;
}

bool irq__owner(unsigned int irq, const void *dev_id, struct devres__hand *h)
{
	struct irq_line *line = NULL;
	struct irq_action *a;
	bool found = false;

	if (irq < IRQ_LINES_MAX)
		line = irq__line_get((int)irq);
	if (!line)
		return false;
	pthread_mutex_lock(&line->lock);
	for (a = line->actions; a && !found; a = a->next) {
		if (a->dev_id != dev_id || !a->owner.dev)
			continue;
		devres__owner_hand(&a->owner, h);
		found = true;
	}
	pthread_mutex_unlock(&line->lock);
	irq__line_put(line);
	return found;
}

/* What a free does once the line is unlocked. */
struct detach_owed {
	struct irq_line *line;
	struct irq_action *a;
	unsigned int irq;
	void *dev_id;
	const void *node;
	const char *func;
	const char *name; /* the freed handler's, returned */
	bool defer, self, owned;
	struct devres__hand hand;
};

static void detach_tail(struct detach_owed *o)
{
	irq__line_put(o->line);
	if (!o->a) {
		/* A node whose handler was freed by hand: nothing to do. */
		if (!o->node)
			devres__warn(NULL, o->func,
				     "irq %u: no handler with dev_id %p",
				     o->irq, o->dev_id);
		return;
	}
	if (o->owned)
		devres__warn_hand(&o->hand, o->func, "a handler");
	devres__ledger_add(DL_IRQ_HANDLERS, -1);
	if (!o->defer && !o->self)
		irq__finish(o->a);
}

/*
 * A masked line's unmask callback runs in end_change() (other handlers
 * left, an interrupt read), on this thread and unlocked: one that ends
 * the thread (pthread_exit(), a cancellation) WARNs and gives its own
 * reference back (line.c). What the free still owed is done here as the
 * thread unwinds: before, the call's line reference and the freed
 * handler were lost, and irq_line_destroy() returned -EBUSY for good.
 */
static void detach_ended(void *arg)
{
	detach_tail(arg);
}

/*
 * The WARN of a managed release whose wait for the line would close a
 * loop (@w's): the handler is freed without the wait, its end left to
 * the dispatcher when @late.
 */
static void refused_warn(unsigned int irq, const char *func,
			 const struct devres__wait *w, bool late)
{
	devres__warn(NULL, func,
		     "irq %u: its dispatch waits for this thread (%s): freed "
		     "without waiting%s",
		     irq, w->loop,
		     late ? "; the dispatcher reaps it once its handlers "
			    "return"
			  : "");
}

static const void *detach(unsigned int irq, void *dev_id, const void *node,
			  bool managed, const char *func)
{
	struct detach_owed o = {
		.irq = irq, .dev_id = dev_id, .node = node, .func = func
	};
	struct irq_action **pp;
	struct irq_line *line;
	struct devres__wait w;
	bool refused, late = false;

	line = o.line = get_line(irq, func);
	if (!line)
		return NULL;
	if (!managed && own_handler(line, irq, func)) {
		irq__line_put(line);
		return NULL;
	}
	devres__wait_init(&w, func);
	pthread_mutex_lock(&line->lock);
	/*
	 * The dispatcher, in this line's primary handlers, waits for this
	 * thread: the free is refused (a managed release, which cannot
	 * refuse, frees without the wait, below).
	 */
	if (line->running && irq__running_line != line && line->disp)
		devres__wait_target(&w, line->disp->wid);
	if (irq__running_line != line)
		irq__unmask_targets(line, &w);
	refused = devres__wait_begin(&w) != 0;
	if (refused && !managed) {
		pthread_mutex_unlock(&line->lock);
		irq__line_put(line);
		devres__warn(NULL, func,
			     "irq %u: its dispatch waits for this thread (%s): "
			     "nothing freed",
			     irq, w.loop);
		return NULL;
	}
	if (refused) {
		/*
		 * A managed release cannot refuse, and its wait would never
		 * end: the list is changed without it. The dispatcher walks
		 * the list unlocked while it runs, so a handler freed then is
		 * only marked, and unlinked and reaped by the dispatcher at
		 * the delivery's end (irq__unlink_due()).
		 */
		line->mutators++;
		late = line->running;
	} else {
		begin_change(line);
		devres__wait_end(&w);
	}
	for (pp = &line->actions; *pp && !is_it(*pp, dev_id, node);
	     pp = &(*pp)->next)
		;
	o.a = *pp;
	/*
	 * A managed handler freed by hand: its node goes now, while the line
	 * lock keeps the node's device alive (its release would wait here).
	 */
	if (o.a && !node && o.a->owner.dev) {
		devres__disown(&o.a->owner, &o.hand);
		o.owned = true;
	}
	if (o.a && late) {
		/*
		 * The dispatcher waits, through the loop, for this thread: it
		 * sees the mark when it goes on, and calls the handler no more.
		 */
		o.a->unlink_due = true;
		line->unlink_due++;
		__atomic_store_n(&o.a->dead, true, __ATOMIC_RELEASE);
		o.defer = true;
		o.name = o.a->name;
	} else if (o.a) {
		/* a->next stays: a dispatch in this thread may still read it. */
		*pp = o.a->next;
		if (!--line->nr_actions)
			last_action(line);
		o.defer = irq__running_line == line;
		o.self = irq__cur_action == o.a;
		if (o.defer) {
			__atomic_store_n(&o.a->dead, true, __ATOMIC_RELEASE);
			o.a->zombie_next = line->zombies;
			line->zombies = o.a;
		} else if (o.self) {
			o.a->self_reap = true;
		}
		/* Read now: a deferred handler may be reaped once unlocked. */
		o.name = o.a->name;
	}
	pthread_cleanup_push(detach_ended, &o);
	/* The call's reference, put below, outlives the unmask's. */
	(void)end_change(line);
	pthread_cleanup_pop(0);
	pthread_mutex_unlock(&line->lock);
	detach_tail(&o);
	if (refused)
		refused_warn(irq, func, &w, late);
	return o.name;
}

/*
 * Moves the handlers a managed release freed during the delivery (marked
 * unlink_due, detach()) from the list to the zombies, to be reaped as
 * those freed inside it are. On the dispatcher, the line locked, once
 * its walk of the list is over.
 */
void irq__unlink_due(struct irq_line *line)
{
	struct irq_action **pp = &line->actions;

	while (line->unlink_due && *pp) {
		struct irq_action *a = *pp;

		if (!a->unlink_due) {
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		line->unlink_due--;
		if (!--line->nr_actions)
			last_action(line);
		a->zombie_next = line->zombies;
		line->zombies = a;
	}
}

/* A release path: errno is kept. */
const void *irq__free(unsigned int irq, void *dev_id, bool managed,
		      const char *func)
{
	int err = errno;
	const void *name = detach(irq, dev_id, NULL, managed, func);

	errno = err;
	return name;
}

/*
 * The handlers still requested on line @irq when @owner, which claimed it
 * (a backend's vector of a binding), releases it: the driver did not free
 * them at its remove. Left there, they kept the line, its fd and its
 * unmask (through the released device) for good. Each is freed as
 * free_irq() frees it, waiting for its handler, with one WARN on the
 * owner's name. Not from a handler of the line (a handler that unbinds
 * its device): it cannot wait for itself, and the line stays.
 */
void irq__free_left(unsigned int irq, const void *owner)
{
	int err = errno;

	for (;;) {
		struct irq_line *line = irq__line_lock((int)irq);
		char label[64], name[64];
		struct irq_action *a;
		void *dev_id;

		if (!line)
			break;
		/* Not one a managed free left to the dispatcher. */
		for (a = line->actions; a && a->unlink_due; a = a->next)
			;
		if (line->owner != owner || !a || irq__cur_line == line) {
			pthread_mutex_unlock(&line->lock);
			break;
		}
		dev_id = a->dev_id;
		snprintf(name, sizeof(name), "%s", a->name ? a->name : "");
		snprintf(label, sizeof(label), "%s",
			 line->owner_name ? line->owner_name : "(no device)");
		pthread_mutex_unlock(&line->lock);
		if (!detach(irq, dev_id, NULL, true, "pci_free_irq_vectors"))
			break;
		devres__warn_label(label, "pci_free_irq_vectors",
				   "irq %u: handler '%s' (dev_id %p) still "
				   "requested on it: freed",
				   irq, name, dev_id);
	}
	errno = err;
}

void irq__free_owned(unsigned int irq, const void *node)
{
	int err = errno;

	detach(irq, NULL, node, true, "devm_irq_release");
	errno = err;
}

const void *free_irq(unsigned int irq, void *dev_id)
{
	return irq__free(irq, dev_id, false, __func__);
}

/*
 * Disables nest up to IRQ_DEPTH_MAX: more is a missing enable_irq() in a
 * loop, and the depth must not wrap to "enabled". Refused there with one
 * WARN (the line unlocked first: a sink may call back).
 */
#define IRQ_DEPTH_MAX (1 << 20)

static bool depth_inc(struct irq_line *line, unsigned int irq, const char *func)
{
	if (likely(line->depth < IRQ_DEPTH_MAX)) {
		line->depth++;
		return true;
	}
	pthread_mutex_unlock(&line->lock);
	devres__warn(NULL, func,
		     "irq %u: disabled %d times without an enable: refused",
		     irq, IRQ_DEPTH_MAX);
	return false;
}

void enable_irq(unsigned int irq)
{
	struct irq_line *line = irq < IRQ_LINES_MAX ? irq__line_lock((int)irq)
						    : NULL;
	bool last = false;

	if (!line) {
		devres__warn(NULL, __func__, "irq %u is not a line", irq);
		return;
	}
	if (!line->depth) {
		pthread_mutex_unlock(&line->lock);
		devres__warn(NULL, __func__, "irq %u: unbalanced enable", irq);
		return;
	}
	/*
	 * No reference of ours: an unmask callback that freed the line's
	 * handlers and destroyed it left it to us.
	 */
	if (!--line->depth)
		last = irq__line_done(line);
	pthread_mutex_unlock(&line->lock);
	if (last)
		irq__line_free(line);
}

void disable_irq_nosync(unsigned int irq)
{
	struct irq_line *line = irq < IRQ_LINES_MAX ? irq__line_lock((int)irq)
						    : NULL;

	if (!line) {
		devres__warn(NULL, __func__, "irq %u is not a line", irq);
		return;
	}
	if (!depth_inc(line, irq, __func__))
		return;
	pthread_mutex_unlock(&line->lock);
}

/*
 * The threads a wait for @line to be idle waits for: the dispatcher in
 * its primary handlers, and the threads of its threaded handlers while
 * any thread function is due or running (one that is idle waits for
 * nobody: it closes no loop), and the unmask callbacks running on other
 * threads, by their set (whichever thread ends a delivery runs one).
 */
static void line_targets(const struct irq_line *line, struct devres__wait *w)
{
	if (line->running && line->disp)
		devres__wait_target(w, line->disp->wid);
	irq__unmask_targets(line, w);
	/*
	 * However many they are: the threads whose functions run are
	 * members of the line's set, a due one joins it as it starts.
	 */
	if (line->threads_active)
		devres__wait_target_set(w, (uintptr_t)line);
}

/* Waits, with the line locked, until no handler of it runs or is due. */
static void wait_idle(struct irq_line *line)
{
	int cancel = devres__cancel_off();

	while (line->running || line->threads_active || irq__unmask_busy(line))
		pthread_cond_wait(&line->idle, &line->lock);
	devres__cancel_restore(cancel);
}

static void sync_line(unsigned int irq, bool disable, const char *func)
{
	struct irq_line *line = get_line(irq, func);

	if (!line)
		return;
	if (!own_handler(line, irq, func)) {
		struct devres__wait w;

		devres__wait_init(&w, func);
		pthread_mutex_lock(&line->lock);
		if (!disable || depth_inc(line, irq, func)) {
			line_targets(line, &w);
			if (devres__wait_begin(&w)) {
				pthread_mutex_unlock(&line->lock);
				devres__warn(NULL, func,
					     "irq %u: a handler of it waits "
					     "for "
					     "this thread (%s): not waited for",
					     irq, w.loop);
			} else {
				wait_idle(line);
				pthread_mutex_unlock(&line->lock);
				devres__wait_end(&w);
			}
		}
	}
	irq__line_put(line);
}

void disable_irq(unsigned int irq)
{
	sync_line(irq, true, __func__);
}

void synchronize_irq(unsigned int irq)
{
	sync_line(irq, false, __func__);
}

/*
 * The kernel's detector of stuck lines: a line whose handlers say IRQ_NONE
 * for nearly all of a window of interrupts is disabled, since something
 * asserts it that nobody handles. Returns true when it was just disabled;
 * the caller WARNs once it has dropped the lock.
 */
bool irq__note_interrupt(struct irq_line *line, irqreturn_t ret)
{
	bool stuck;

	if (ret == IRQ_NONE)
		line->unhandled++;
	if (++line->count < IRQ_SPURIOUS_WINDOW)
		return false;
	stuck = line->unhandled >= IRQ_SPURIOUS_LIMIT;
	if (stuck)
		line->depth++;
	line->count = line->unhandled = 0;
	return stuck;
}
