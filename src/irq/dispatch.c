// SPDX-License-Identifier: MIT
/*
 * The dispatcher: one thread waiting in epoll on the fds of every line with
 * a handler, calling the primary handlers ("hard" interrupt context) and
 * waking the threads of threaded handlers, one thread per handler.
 *
 * The dispatcher exists while at least one handler does: the first request
 * starts it, the last free stops and joins it. Its epoll set holds a wake
 * eventfd (key 0) besides the lines (key: the line's number), through which
 * it is told to stop or to replay interrupts that were held back while
 * their line was disabled, masked or being changed.
 *
 * The library's threads block every signal: signals are for the
 * application's threads.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "internal.h"

static pthread_mutex_t irq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct irq_dispatcher *disp_cur;
/* Handlers attached or being attached: the dispatcher lives while > 0. */
static long nr_handlers;

/*
 * irq_lock is held across fork(). The child has no dispatcher thread: it
 * forgets the parent's (whose epoll set it shares, so it must never add to
 * it) and the handlers counted for it, which belong to the parent's lines
 * (inert in the child, line.c). Its first request starts its own.
 */
static void disp_take(void)
{
	pthread_mutex_lock(&irq_lock);
}

static void disp_give(void)
{
	pthread_mutex_unlock(&irq_lock);
}

static void disp_child(void)
{
	disp_cur = NULL;
	nr_handlers = 0;
	pthread_mutex_unlock(&irq_lock);
}

__attribute__((constructor)) static void disp_atfork(void)
{
	devres__atfork(DEVRES_FORK_IRQ_DISP, disp_take, disp_give, disp_child);
}

int irq__create_thread(pthread_t *thr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(thr, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

static void kick(struct irq_dispatcher *d)
{
	int fd = __atomic_load_n(&d->wakefd, __ATOMIC_ACQUIRE);
	uint64_t one = 1;

	/*
	 * Closed behind the library's back: not written (own-fd.c WARNs);
	 * the dispatcher makes its set again within IRQ_IDLE_MS.
	 */
	if (!devres__own_fd_check(fd))
		return;
	if (irq__write_nocancel(fd, &one, sizeof(one)) < 0) {
		/* Only EAGAIN is possible: the counter is full, so it is set. */
	}
}

static int open_epoll(void)
{
	int fd;

	devres__own_fd_opening();
	fd = epoll_create1(EPOLL_CLOEXEC);
	devres__own_fd_opened(fd, DEVRES_OWN_IRQ_EPOLL, "the irq dispatcher");
	return fd;
}

static int open_wake(void)
{
	int fd;

	devres__own_fd_opening();
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	devres__own_fd_opened(fd, DEVRES_OWN_IRQ_WAKE, "the irq dispatcher");
	return fd;
}

/*
 * Under @d->lock: a new epoll set with a new wake eventfd and every line
 * of the old one, in place of a set whose epoll or wake eventfd was
 * closed behind the library's back (the number may be another owner's:
 * never written, never closed). A dispatcher asleep on the old set is
 * woken through its wake eventfd if that is still the library's, else
 * at the end of its IRQ_IDLE_MS. 0, or -errno with the old set kept.
 */
static int rebuild(struct irq_dispatcher *d)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 }, ev0 = ev;
	int ep, wake, old_ep = d->epfd, old_wake = d->wakefd, rc, kick_fd = -1;
	uint64_t one = 1;

	ep = devres__should_fail_fd() ? -1 : open_epoll();
	if (ep < 0)
		return -EMFILE;
	wake = devres__should_fail_fd() ? -1 : open_wake();
	if (wake < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev) < 0)
		goto fail;
	for (int irq = 1; irq < IRQ_LINES_MAX; irq++) {
		if (!(d->in_set[irq / IRQ_WORD_BITS] &
		      1ul << (irq % IRQ_WORD_BITS)))
			continue;
		ev.data.u64 = (uint64_t)irq;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, d->set_fd[irq], &ev) < 0)
			goto fail;
	}
	__atomic_store_n(&d->epfd, ep, __ATOMIC_RELEASE);
	__atomic_store_n(&d->wakefd, wake, __ATOMIC_RELEASE);
	/*
	 * The wake of a dispatcher asleep on the old set: through the old
	 * wake eventfd, or the new one put in the old set.
	 */
	if (devres__own_fd_check(old_wake))
		kick_fd = old_wake;
	else if (devres__own_fd_check(old_ep) &&
		 !epoll_ctl(old_ep, EPOLL_CTL_ADD, wake, &ev0))
		kick_fd = wake;
	if (kick_fd >= 0 &&
	    irq__write_nocancel(kick_fd, &one, sizeof(one)) < 0) {
		/* Full: set already, the dispatcher wakes. */
	}
	/* Lost ones are forgotten, not closed. */
	devres__own_fd_close(old_ep);
	devres__own_fd_close(old_wake);
	devres__print(DEVRES_LOG_INFO, "irq_dispatch: epoll set made again");
	return 0;
fail:
	rc = wake < 0 ? -EMFILE : -errno;
	if (wake >= 0)
		devres__own_fd_close(wake);
	devres__own_fd_close(ep);
	return rc;
}

/* Under @d->lock: the set is the library's, or made again. 0 or -errno. */
static int set_ok(struct irq_dispatcher *d)
{
	bool ep = devres__own_fd_check(d->epfd);
	bool wake = devres__own_fd_check(d->wakefd);

	return ep && wake ? 0 : rebuild(d);
}

int irq__disp_add(struct irq_dispatcher *d, int irq, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = (uint64_t)irq };
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = set_ok(d);
	if (!rc && epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		rc = -errno;
	if (!rc) {
		d->in_set[irq / IRQ_WORD_BITS] |= 1ul << (irq % IRQ_WORD_BITS);
		d->set_fd[irq] = fd;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void irq__disp_del(struct irq_dispatcher *d, int irq, int fd)
{
	pthread_mutex_lock(&d->lock);
	d->in_set[irq / IRQ_WORD_BITS] &= ~(1ul << (irq % IRQ_WORD_BITS));
	/* A set made again here has the line out already. */
	if (devres__own_fd_check(d->epfd))
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, fd, NULL);
	else
		(void)rebuild(d);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The dispatcher's wait failed (its epoll's number closed, or another
 * file's) or slept IRQ_IDLE_MS: the set is checked, and made again if it
 * was lost. Without a new one (no descriptor left) the next try is a
 * while later: never a spin.
 */
static void recover(struct irq_dispatcher *d)
{
	struct timespec pause = { 0, 10000000L }; /* 10 ms */
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = set_ok(d);
	pthread_mutex_unlock(&d->lock);
	if (rc)
		nanosleep(&pause, NULL);
}

/* Asks the dispatcher to look at a line again: it has something pending. */
void irq__replay(struct irq_line *line)
{
	struct irq_dispatcher *d = line->disp;

	pthread_mutex_lock(&d->lock);
	d->replay[line->irq / IRQ_WORD_BITS] |= 1ul
						<< (line->irq % IRQ_WORD_BITS);
	pthread_mutex_unlock(&d->lock);
	kick(d);
}

static void wake_thread(struct irq_line *line, struct irq_action *a, bool *warn)
{
	if (a->thread_gone) /* WARNed when it went */
		return;
	if (!a->has_thread) {
		if (!a->warned_thread)
			*warn = a->warned_thread = true;
		return;
	}
	if (a->thread_pending)
		return;
	a->thread_pending = true;
	line->threads_active++;
	if (a->flags & IRQF_ONESHOT)
		line->oneshot_masked++;
	pthread_cond_signal(&a->wake);
}

/*
 * Runs the primary handlers of a line, locked on entry and on return. The
 * list is walked unlocked: nobody else changes it while running is set
 * (manage.c); this thread may, from a handler, and then frees nothing
 * before the walk is over.
 */
static bool deliver_end(struct irq_line *line, irqreturn_t ret,
			unsigned long covers);

/* The primary handler running on this (dispatcher) thread, and its read. */
static TLS_FAST struct irq_action *running_action;
static TLS_FAST unsigned long running_covers;
/* The process this thread (the dispatcher, a handler's) was started in. */
static TLS_FAST int thread_pid;

static pthread_key_t disp_key, fn_key;

/*
 * A handler or thread function that called fork() has come back in the
 * child, whose one thread this is. The thread serves the parent's lines,
 * which are no lines in the child (line.c), with the parent's dispatcher
 * and epoll set: going on would take a line's lock another thread of the
 * parent may have held at the fork, and wait for the parent's interrupts
 * for ever with every signal blocked (not even alarm() ends it). So the
 * thread ends there, touching nothing of the parent's, with one WARN; as
 * the child's last thread, the child exits with status 0. The thread's key, whose
 * destructor takes a handler's pthread_exit(), is cleared first.
 */
static void forked_back(pthread_key_t key, const char *call, int irq,
			struct irq_action *a, const char *what)
{
	if (likely(thread_pid == devres__pid_now()))
		return;
	(void)pthread_setspecific(key, NULL);
	devres__warn(NULL, call,
		     "irq %d: the %s of '%s' forked and returned in the child: "
		     "the thread is the parent's, it ends in the child",
		     irq, what, a->name ? a->name : "");
	pthread_exit(NULL);
}

/*
 * A handler's or thread function's return outside its enum (@valid the
 * values it may combine): the compiler keeps any int in an enum's place.
 */
static bool bad_return(irqreturn_t r, unsigned int valid)
{
	return ((unsigned int)r & ~valid) != 0;
}

static void warn_bad_return(const char *func, int irq,
			    const struct irq_action *a, const char *what,
			    irqreturn_t r, const char *rest)
{
	devres__warn(NULL, func, "irq %d: the %s of '%s' returned %d, not %s",
		     irq, what, a->name ? a->name : "", (int)r, rest);
}

/*
 * With the line locked and no reference of the caller's: true when the
 * line was destroyed during the delivery and its last reference went
 * there, the caller then frees it once unlocked.
 */
static bool deliver(struct irq_line *line)
{
	devres_atomic_hook_t hook;
	struct irq_action *a;
	irqreturn_t ret = IRQ_NONE;
	int irq = line->irq;
	unsigned long covers = line->reads;
	/* Read locked: the handlers requested before this delivery. */
	unsigned long requested = line->requests;
	bool bogus = false;

	line->pending = false;
	line->running = true;
	pthread_mutex_unlock(&line->lock);
	irq__cur_line = irq__running_line = line;
	running_covers = covers;
	/* Hard-irq context for those who check it: told once a delivery. */
	hook = devres__atomic_hook();
	if (hook)
		hook(1);
	/*
	 * Appended in order: one a handler requested is the first past
	 * @requested, and those after it came later still.
	 */
	for (a = line->actions; a && a->seq <= requested; a = a->next) {
		irqreturn_t r;

		if (__atomic_load_n(&a->dead, __ATOMIC_ACQUIRE))
			continue;
		running_action = a;
		r = a->handler(irq, a->dev_id);
		forked_back(disp_key, "irq_dispatch", irq, a, "handler");
		if (unlikely(bad_return(r, IRQ_HANDLED | IRQ_WAKE_THREAD))) {
			/* The kernel's "bogus return value": no wake, no count. */
			if (hook)
				hook(-1);
			warn_bad_return("irq_dispatch", irq, a, "handler", r,
					"IRQ_NONE, IRQ_HANDLED or "
					"IRQ_WAKE_THREAD: no thread woken, "
					"not counted as unhandled");
			if (hook)
				hook(1);
			bogus = true;
			continue;
		}
		if (r & IRQ_WAKE_THREAD)
			a->wake_req = true;
		ret |= r;
	}
	/* Not counted as unhandled, as the kernel's note_interrupt(). */
	if (bogus && ret == IRQ_NONE)
		ret = IRQ_HANDLED;
	if (hook)
		hook(-1);
	running_action = NULL;
	irq__cur_line = irq__running_line = NULL;
	pthread_mutex_lock(&line->lock);
	return deliver_end(line, ret, covers);
}

/*
 * The end of a delivery, the line locked on entry and on return: wakes
 * the threads the handlers asked for, counts the result, lets waiters go
 * and reaps the handlers freed meanwhile. True as deliver().
 */
static bool deliver_end(struct irq_line *line, irqreturn_t ret,
			unsigned long covers)
{
	struct irq_action *a, *zombies;
	bool stuck, warn_thread = false, gone = false;
	int irq = line->irq;

	for (a = line->actions; a; a = a->next) {
		if (a->wake_req) {
			a->wake_req = false;
			wake_thread(line, a, &warn_thread);
		}
	}
	stuck = irq__note_interrupt(line, ret);
	if (unlikely(stuck || warn_thread)) {
		/*
		 * WARN unlocked (a log sink may call anything) but still
		 * running, so that synchronize_irq() returns after the WARN.
		 */
		pthread_mutex_unlock(&line->lock);
		if (stuck)
			devres__warn(NULL, "note_interrupt",
				     "irq %d: nobody cared (%u of %u "
				     "interrupts unhandled), line disabled",
				     irq, IRQ_SPURIOUS_LIMIT,
				     IRQ_SPURIOUS_WINDOW);
		if (warn_thread)
			devres__warn(NULL, "irq_wake_thread",
				     "irq %d: IRQ_WAKE_THREAD from a handler "
				     "without a thread function",
				     irq);
		pthread_mutex_lock(&line->lock);
	}
	line->running = false;
	line->delivered = covers;
	pthread_cond_broadcast(&line->idle);
	if (unlikely(line->unlink_due))
		irq__unlink_due(line);
	zombies = line->zombies;
	line->zombies = NULL;
	/*
	 * Reaped before the line is done: a masked line's unmask callback
	 * runs there, and one that ended this thread lost the handlers
	 * freed during the delivery. Unlocked; the reference keeps the line
	 * meanwhile.
	 */
	if (unlikely(zombies)) {
		line->refs++;
		pthread_mutex_unlock(&line->lock);
		while (zombies) {
			a = zombies;
			zombies = a->zombie_next;
			irq__finish(a);
		}
		pthread_mutex_lock(&line->lock);
		gone = irq__line_unref(line);
	}
	return irq__line_done(line) || gone;
}

/* An event of line @irq: from its fd, or a replay of what is pending. */
static void handle(struct irq_dispatcher *d, int irq, bool from_fd)
{
	struct irq_line *line = irq__line_lock(irq);
	bool gone = false;
	int got;

	if (!line)
		return;
	if (from_fd) {
		got = irq__line_read(line);
		if (got < 0)
			irq__disp_del(d, irq, line->fd);
		if (got > 0 && line->nr_actions)
			line->pending = true;
	}
	if (line->pending && line->nr_actions && !line->depth &&
	    !line->oneshot_masked && !line->mutators)
		/*
		 * Its backend destroyed it during the delivery (a handler
		 * unbound its device): the handlers freed then were reaped
		 * at the delivery's end, which dropped its last reference.
		 */
		gone = deliver(line);
	pthread_mutex_unlock(&line->lock);
	if (unlikely(gone))
		irq__line_free(line);
}

static bool stopped(struct irq_dispatcher *d)
{
	return __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE);
}

static void replay(struct irq_dispatcher *d)
{
	unsigned long bits[IRQ_LINES_MAX / IRQ_WORD_BITS];
	uint64_t v;

	if (read(__atomic_load_n(&d->wakefd, __ATOMIC_ACQUIRE), &v, sizeof(v)) <
	    0) {
		/* EAGAIN: a previous pass took the kick with its bits. */
	}
	pthread_mutex_lock(&d->lock);
	memcpy(bits, d->replay, sizeof(bits));
	memset(d->replay, 0, sizeof(d->replay));
	pthread_mutex_unlock(&d->lock);
	for (int w = 0; w < IRQ_LINES_MAX / IRQ_WORD_BITS; w++) {
		while (bits[w] && !stopped(d)) {
			int b = __builtin_ctzl(bits[w]);

			bits[w] &= bits[w] - 1;
			handle(d, w * IRQ_WORD_BITS + b, false);
		}
	}
}

static void free_dispatcher(struct irq_dispatcher *d)
{
	devres__own_fd_close(d->epfd);
	devres__own_fd_close(d->wakefd);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void *dispatch_loop(void *arg);

/*
 * A primary handler that ends the dispatcher thread (pthread_exit()):
 * this destructor of disp_key runs instead of the rest of the loop. The
 * interrupt it was handling is done (its waiters let go, its freed
 * handlers reaped), and the dispatcher goes on in a new thread on the
 * same epoll set, since it serves every line: unless it is being stopped
 * (its last handler freed), whoever stops it then joins this thread, or
 * frees it when a handler stopped it. A cancellation cannot end it: the
 * thread runs with cancellation disabled, as nothing can kill a hard
 * interrupt handler, and a cancel point under a line's lock (its fd's
 * read) would leave that lock held.
 */
static int disp_key_err = -1;
static pthread_once_t disp_once = PTHREAD_ONCE_INIT;

static void disp_ended(void *p)
{
	struct irq_dispatcher *d = p;
	struct irq_line *line = irq__running_line;
	struct irq_action *a = running_action;
	bool self, again = false, current, gone;

	running_action = NULL;
	irq__cur_line = irq__running_line = NULL;
	/* Before the line is done, so that synchronize_irq() follows it. */
	if (!irq__unmask_ended)
		devres__warn(NULL, "irq_dispatch",
			     "irq %d: the handler '%s' ended the dispatcher "
			     "thread",
			     line ? line->irq : 0, a && a->name ? a->name : "");
	if (line) {
		pthread_mutex_lock(&line->lock);
		/* No result: not counted as unhandled. */
		gone = deliver_end(line, IRQ_HANDLED, running_covers);
		pthread_mutex_unlock(&line->lock);
		if (gone)
			irq__line_free(line);
	}
	/*
	 * Set by this thread, also by the reaping just above (the handler
	 * freed the last handler: the dispatcher stopped itself); read
	 * before a new one may stop and free @d.
	 */
	self = d->self_stopped;
	pthread_mutex_lock(&irq_lock);
	current = disp_cur == d;
	if (current)
		again = irq__create_thread(&d->thread, dispatch_loop, d) == 0;
	pthread_mutex_unlock(&irq_lock);
	if (current && !again)
		devres__print(DEVRES_LOG_INFO, "irq_dispatch: no new "
					       "dispatcher thread: "
					       "interrupts are not delivered "
					       "until the last "
					       "handler is freed");
	if (self)
		free_dispatcher(d);
	else if (again)
		pthread_detach(pthread_self());
}

static void disp_key_init(void)
{
	disp_key_err = pthread_key_create(&disp_key, disp_ended);
}

static void *dispatch_loop(void *arg)
{
	struct irq_dispatcher *d = arg;
	struct epoll_event ev[16];
	int old;

	pthread_setname_np(pthread_self(), "irq/dispatch");
	thread_pid = devres__pid_now();
	devres__wait_adopt(d->wid);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	(void)pthread_setspecific(disp_key, d);
	while (!stopped(d)) {
		int n = irq__poll_wait(d, ev, 16);

		if (n <= 0 && !stopped(d))
			recover(d);
		for (int i = 0; i < n && !stopped(d); i++) {
			if (ev[i].data.u64)
				handle(d, (int)ev[i].data.u64, true);
			else
				replay(d);
		}
	}
	(void)pthread_setspecific(disp_key, NULL);
	/* Stopped from one of its own handlers: nobody joins it. */
	if (d->self_stopped)
		free_dispatcher(d);
	return NULL;
}

static int start_dispatcher(struct irq_dispatcher **ret_disp)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	struct irq_dispatcher *d;
	int rc = -ENOMEM;

	d = devres__should_fail() ? NULL : calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	irq__poll_setup();
	d->epfd = d->wakefd = -1;
	rc = -EMFILE;
	if (devres__should_fail_fd())
		goto fail;
	d->epfd = open_epoll();
	if (d->epfd < 0)
		goto fail_errno;
	if (devres__should_fail_fd())
		goto fail;
	d->wakefd = open_wake();
	if (d->wakefd < 0 ||
	    epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->wakefd, &ev) < 0)
		goto fail_errno;
	pthread_once(&disp_once, disp_key_init);
	if (disp_key_err) {
		rc = -disp_key_err;
		goto fail;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->wid = devres__wait_id_new();
	rc = devres__should_fail_thread()
		     ? -EAGAIN
		     : irq__create_thread(&d->thread, dispatch_loop, d);
	if (!rc) {
		*ret_disp = d;
		return 0;
	}
	pthread_mutex_destroy(&d->lock);
	goto fail;
fail_errno:
	rc = -errno;
fail:
	if (d->wakefd >= 0)
		devres__own_fd_close(d->wakefd);
	if (d->epfd >= 0)
		devres__own_fd_close(d->epfd);
	free(d);
	return rc;
}

int irq__get_dispatcher(struct irq_dispatcher **ret_disp)
{
	int rc = 0;

	pthread_mutex_lock(&irq_lock);
	if (!disp_cur)
		rc = start_dispatcher(&disp_cur);
	if (!rc) {
		nr_handlers++;
		*ret_disp = disp_cur;
	}
	pthread_mutex_unlock(&irq_lock);
	return rc;
}

void irq__put_dispatcher(void)
{
	struct irq_dispatcher *d = NULL;
	int cancel;

	pthread_mutex_lock(&irq_lock);
	if (!--nr_handlers) {
		d = disp_cur;
		disp_cur = NULL;
	}
	pthread_mutex_unlock(&irq_lock);
	if (!d)
		return;
	if (pthread_equal(d->thread, pthread_self())) {
		/* The last handler freed by a handler: it cannot join itself. */
		d->self_stopped = true;
		__atomic_store_n(&d->stop, true, __ATOMIC_RELEASE);
		pthread_detach(d->thread);
		return;
	}
	__atomic_store_n(&d->stop, true, __ATOMIC_RELEASE);
	kick(d);
	cancel = devres__cancel_off();
	pthread_join(d->thread, NULL);
	devres__cancel_restore(cancel);
	free_dispatcher(d);
}

/* The thread of a threaded handler. */
static void thread_done(struct irq_line *line, struct irq_action *a)
{
	line->threads_active--;
	if (a->flags & IRQF_ONESHOT)
		line->oneshot_masked--;
	pthread_cond_broadcast(&line->idle);
	/* The action's reference outlives the unmask's: never the last. */
	(void)irq__line_done(line);
}

/* Called with the line locked; unlocks it. */
static void thread_exit_locked(struct irq_action *a)
{
	struct irq_line *line = a->line;
	bool self;

	/* A wake that will not run now: unmask what it masked. */
	if (a->thread_pending) {
		a->thread_pending = false;
		thread_done(line, a);
	}
	self = a->self_reap;
	pthread_mutex_unlock(&line->lock);
	if (self) {
		/* Freed from its own thread function: nobody joins it. */
		pthread_detach(pthread_self());
		pthread_cond_destroy(&a->wake);
		irq__finish(a);
	}
}

/*
 * A thread function that ends its thread (pthread_exit(), or cancelled):
 * this destructor of fn_key runs instead of the rest of the loop. Its
 * interrupt is done, and later ones are not handed to a thread that is
 * gone (one WARN); free_irq() joins it as before.
 */
static int fn_key_err = -1;
static pthread_once_t fn_once = PTHREAD_ONCE_INIT;

static void thread_fn_ended(void *p)
{
	struct irq_action *a = p;
	struct irq_line *line = a->line;
	int irq = line->irq;

	irq__cur_line = NULL;
	irq__cur_action = NULL;
	devres__wait_leave(&a->member);
	devres__warn(NULL, "irq_thread",
		     "irq %d: the thread function of '%s' ended its thread: "
		     "no more threaded handling",
		     irq, a->name ? a->name : "");
	pthread_mutex_lock(&line->lock);
	thread_done(line, a);
	a->thread_gone = true;
	thread_exit_locked(a);
}

/*
 * A masked line's unmask callback, run after the thread function
 * (thread_done()), ended the thread: it WARNed and left the line unlocked.
 * The thread is gone as after a thread function that ends it: later wakes
 * are not handed to it, or each would leave the line masked for good.
 */
static void unmask_ended_thread(void *p)
{
	struct irq_action *a = p;

	irq__cur_line = NULL;
	irq__cur_action = NULL;
	pthread_mutex_lock(&a->line->lock);
	a->thread_gone = true;
	thread_exit_locked(a);
}

static void fn_key_init(void)
{
	fn_key_err = pthread_key_create(&fn_key, thread_fn_ended);
}

static void *thread_loop(void *arg)
{
	struct irq_action *a = arg;
	struct irq_line *line = a->line;
	char name[16];
	irqreturn_t r;
	int old;

	snprintf(name, sizeof(name), "irq/%d-%s", line->irq,
		 a->name ? a->name : "");
	pthread_setname_np(pthread_self(), name);
	thread_pid = devres__pid_now();
	devres__wait_adopt(a->wid);
	/*
	 * Cancellation acts only inside the thread function, where its end
	 * is caught (thread_fn_ended()): at the wait below it would end the
	 * thread with the line's lock held (a condition wait takes its mutex
	 * back before it acts), and every later call on the line would
	 * wait for ever. A request made while disabled stays pending until
	 * the function's next call.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&line->lock);
	for (;;) {
		while (!a->thread_pending && !a->stop)
			pthread_cond_wait(&a->wake, &line->lock);
		if (a->stop)
			break;
		a->thread_pending = false;
		pthread_mutex_unlock(&line->lock);
		irq__cur_line = line;
		irq__cur_action = a;
		pthread_setspecific(fn_key, a);
		/* A wait for the line waits for it (line_targets()). */
		devres__wait_join(&a->member, (uintptr_t)line);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
		r = a->thread_fn(line->irq, a->dev_id);
		forked_back(fn_key, "irq_thread", line->irq, a,
			    "thread function");
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		devres__wait_leave(&a->member);
		if (unlikely(bad_return(r, IRQ_HANDLED)))
			warn_bad_return("irq_thread", line->irq, a,
					"thread function", r,
					"IRQ_NONE or IRQ_HANDLED: ignored");
		pthread_setspecific(fn_key, NULL);
		pthread_mutex_lock(&line->lock);
		/*
		 * A masked line's unmask callback may run in thread_done(),
		 * on this thread: a call it makes on the line is one from
		 * this thread function, which a free of this handler reaps
		 * after (not a join of this thread by itself).
		 */
		pthread_cleanup_push(unmask_ended_thread, a);
		thread_done(line, a);
		pthread_cleanup_pop(0);
		irq__cur_line = NULL;
		irq__cur_action = NULL;
		if (a->self_reap)
			break;
	}
	thread_exit_locked(a);
	return NULL;
}

int irq__thread_start(struct irq_action *a)
{
	int rc;

	if (devres__should_fail_thread())
		return -EAGAIN;
	pthread_once(&fn_once, fn_key_init);
	if (fn_key_err)
		return -fn_key_err;
	pthread_cond_init(&a->wake, NULL);
	a->wid = devres__wait_id_new();
	rc = irq__create_thread(&a->thread, thread_loop, a);
	if (rc) {
		pthread_cond_destroy(&a->wake);
		return rc;
	}
	a->has_thread = true;
	return 0;
}

/*
 * Handed to its thread: the loop breaks once the function returns (or at
 * once, from its wait) and thread_exit_locked() finishes the handler, as
 * one freed from its own thread function. Read before the unlock: the
 * thread may free the handler at once.
 */
static void leave_to_thread(struct irq_action *a, const char *loop)
{
	const char *name = a->name ? a->name : "";
	int irq = a->line->irq;

	pthread_mutex_lock(&a->line->lock);
	a->self_reap = true;
	a->stop = true;
	pthread_cond_signal(&a->wake);
	devres__warn(NULL, "free_irq",
		     "irq %d: the thread of handler '%s' waits for this "
		     "thread (%s): not joined; it ends itself once its "
		     "thread function returns",
		     irq, name, loop);
	pthread_mutex_unlock(&a->line->lock);
}

bool irq__thread_stop(struct irq_action *a, bool may_leave)
{
	struct devres__wait w;
	int cancel;

	devres__wait_init(&w, "free_irq");
	if (may_leave && devres__wait_for(&w, "free_irq", a->wid)) {
		leave_to_thread(a, w.loop);
		return false;
	}
	pthread_mutex_lock(&a->line->lock);
	a->stop = true;
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->line->lock);
	cancel = devres__cancel_off();
	pthread_join(a->thread, NULL);
	devres__cancel_restore(cancel);
	devres__wait_end(&w);
	pthread_cond_destroy(&a->wake);
	return true;
}
