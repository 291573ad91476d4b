// SPDX-License-Identifier: MIT
/*
 * Managed worker threads, with kthread semantics: devm_thread_run,
 * devm_thread_stop, devres_thread_should_stop, devres_thread_sleep and
 * devres_thread_wait_fd.
 *
 * Stopping a thread sets its stop flag, then writes its eventfd, which
 * every wait of the thread polls besides what it waits for; the eventfd is
 * never read, so once asked, a thread never sleeps again. The thread says
 * it is done under a mutex, so that a release can wait for it with a
 * timeout (and WARN) before it joins.
 *
 * The handle is allocated apart from the devres node: when a thread
 * releases its own device's resources, its node is freed by that release
 * while the thread still runs, and the handle must live until the thread
 * returns. The caller's handle is a generation-checked one (base/handle.h):
 * kept past its thread, it is refused, even once a new thread's handle
 * lives where it lived, and never reads freed memory.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "base/subsys.h"
#include "thread-table.h"
#include <devres/posix.h>

struct devres_thread {
	pthread_t tid;
	int (*fn)(void *arg);
	void *arg;
	int wake_fd;
	/*
	 * atomic: its wake eventfd was found closed behind the library's
	 * back: its waits are sliced (wait_until()).
	 */
	bool wake_lost;
	int stop;		 /* atomic: asked to stop */
	unsigned int timeout_ms; /* atomic */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled when done */
	bool done;	     /* fn returned; under lock, as below */
	bool detached;	     /* released by itself: frees itself */
	bool refused;	     /* its device refused its node: fn never runs */
	int ret;
	int pid; /* the process that started it */
	char name[16];
	void *handle; /* the caller's */
	/* Its id in the record of waits (base/waits.h), given at start. */
	uint64_t wid;
};

/*
 * The handles not yet freed. A handle is the caller's and may be kept past
 * its thread's end (the device's release stopped it), so the one call that
 * takes a handle without its device, devres_thread_set_stop_timeout(),
 * finds its thread here, checked, before it reads it.
 */
static struct devres__handles threads = {
	.tag = 2,
	.size = sizeof(struct devres_thread),
};

struct thread_dr {
	struct devres_thread *t;
};

/* The managed thread running here, if any. */
static __thread struct devres_thread *current;

static void handle_free(struct devres_thread *t)
{
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	devres__handle_del(&threads, t);
}

/* The wake eventfd is the library's own: a close by hand is refused. */
static int open_wake_fd(struct devres_thread *t)
{
	char what[40];
	int fd;

	snprintf(what, sizeof(what), "managed thread '%s'", t->name);
	devres__own_fd_opening();
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	devres__own_fd_opened(fd, DEVRES_OWN_THREAD_WAKE, what);
	return fd;
}

/* Everything a started thread held, once it is joined or has returned. */
static void thread_free(struct devres_thread *t)
{
	devres__own_fd_close(t->wake_fd);
	devres__ledger_add(DL_FDS, -1);
	devres__ledger_add(DL_THREADS, -1);
	handle_free(t);
}

/* Its value is the thread's handle, and its destructor thread_ended(). */
static pthread_key_t end_key;
static int end_key_err = -1;
static pthread_once_t end_once = PTHREAD_ONCE_INIT;

/*
 * However the function ends: it returned (called here), or called
 * pthread_exit(), or was cancelled (called as the key's destructor: a
 * cleanup handler would need setjmp() or C++ unwinding in every caller).
 */
static void thread_ended(void *p)
{
	struct devres_thread *t = p;
	bool detached;

	current = NULL;
	pthread_mutex_lock(&t->lock);
	t->done = true;
	detached = t->detached;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	/* Otherwise the one who joins frees it, once this has returned. */
	if (detached)
		thread_free(t);
}

static void end_key_init(void)
{
	end_key_err = pthread_key_create(&end_key, thread_ended);
}

static void *trampoline(void *p)
{
	struct devres_thread *t = p;
	bool keyed, skip;
	int ret;

	/*
	 * Its creator holds the lock until the node is on the device's
	 * list: the thread may release its own device at once.
	 */
	pthread_mutex_lock(&t->lock);
	skip = t->refused;
	pthread_mutex_unlock(&t->lock);
	if (skip) {
		t->ret = -ENODEV;
		thread_ended(t);
		return NULL;
	}
	current = t;
	devres__wait_adopt(t->wid);
	if (t->name[0])
		pthread_setname_np(pthread_self(), t->name);
	/* Any ending other than a return reports this. */
	t->ret = -ECANCELED;
	/* Without memory for it, only a return is seen (as before). */
	keyed = !pthread_setspecific(end_key, t);
	ret = t->fn(t->arg);
	if (keyed)
		pthread_setspecific(end_key, NULL);
	t->ret = ret;
	thread_ended(t);
	return NULL;
}

/*
 * Returns the stop timeout in force: the flag is set and the timeout read
 * in one hold of the lock devres_thread_set_stop_timeout() finds the
 * handle under, so that a timeout set meanwhile is either the one the stop
 * waits by or refused as set on a thread its device has let go.
 */
static unsigned int ask_stop(struct devres_thread *t)
{
	uint64_t one = 1;
	unsigned int ms;

	devres__handles_lock();
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	ms = __atomic_load_n(&t->timeout_ms, __ATOMIC_RELAXED);
	devres__handles_unlock();
	/*
	 * Closed behind the library's back: not written (own-fd.c WARNs);
	 * the thread sees the stop at the end of its wait's slice.
	 */
	if (!devres__own_fd_check(t->wake_fd)) {
		__atomic_store_n(&t->wake_lost, true, __ATOMIC_RELEASE);
		return ms;
	}
	/* Non-blocking, and far below the counter's limit: cannot fail. */
	if (write(t->wake_fd, &one, sizeof(one)) != sizeof(one))
		devres__print(DEVRES_LOG_DEBUG, "thread %s: wake: %s", t->name,
			      strerrordesc_np(errno));
	return ms;
}

static struct timespec deadline_in(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/*
 * Ask, wake, wait (WARN after the timeout, then wait on), join, free.
 * Waiting on beyond the timeout rather than detaching: a detached thread
 * would run on with the resources released after it.
 */
static int thread_stop(struct device *dev, struct devres_thread *t,
		       const char *func, struct devres__wait *w)
{
	struct timespec deadline;
	unsigned int ms;
	int ret, cancel;

	/*
	 * Inherited across fork(): the thread runs in the parent only, its
	 * lock may have been held by it. Inert here: forget the copy.
	 */
	if (t->pid != devres__pid_now()) {
		devres__warn(dev, func,
			     "thread '%s' belongs to process %d, not this "
			     "child of it: not stopped",
			     t->name, t->pid);
		devres__own_fd_close(t->wake_fd);
		devres__ledger_add(DL_FDS, -1);
		devres__ledger_add(DL_THREADS, -1);
		devres__wait_end(w);
		devres__handle_del(&threads, t);
		return -ECHILD;
	}
	/* The waits and the join below are no cancellation points. */
	cancel = devres__cancel_off();
	posix__thread_stopping(t->tid, func);
	ms = ask_stop(t);
	deadline = deadline_in(ms);
	pthread_mutex_lock(&t->lock);
	while (!t->done && pthread_cond_timedwait(&t->cond, &t->lock,
						  &deadline) != ETIMEDOUT)
		;
	if (!t->done) {
		pthread_mutex_unlock(&t->lock);
		devres__warn(dev, func,
			     "thread '%s' did not stop within %u ms: waiting "
			     "on",
			     t->name, ms);
		pthread_mutex_lock(&t->lock);
		while (!t->done)
			pthread_cond_wait(&t->cond, &t->lock);
	}
	ret = t->ret;
	pthread_mutex_unlock(&t->lock);
	devres__wait_end(w);
	(void)posix__thread_reap(t->tid);
	thread_free(t);
	devres__cancel_restore(cancel);
	return ret;
}

static void devm_thread_run_release(struct device *dev, void *res)
{
	struct devres_thread *t = ((struct thread_dr *)res)->t;
	int saved = errno;
	struct devres__wait w;

	devres__wait_init(&w, "devm_thread_stop");
	if (t->pid != devres__pid_now() ||
	    !devres__wait_for(&w, "devm_thread_stop", t->wid)) {
		thread_stop(dev, t, "devm_thread_run", &w);
		errno = saved;
		return;
	}
	/*
	 * Joining itself, or a thread that waits for this one to stop,
	 * would never end: let it go, it frees itself.
	 */
	if (t == current)
		devres__warn(dev, "devm_thread_run",
			     "thread '%s' releases its own device's resources: "
			     "asked to stop, not joined",
			     t->name);
	else
		devres__warn(dev, "devm_thread_run",
			     "thread '%s' waits for this thread (%s): asked "
			     "to stop, not joined",
			     t->name, w.loop);
	(void)ask_stop(t);
	pthread_mutex_lock(&t->lock);
	t->detached = true;
	pthread_mutex_unlock(&t->lock);
	posix__thread_detach(t->tid);
	errno = saved;
}

static struct devres_thread *thread_alloc(int (*fn)(void *), void *arg,
					  const char *name)
{
	struct devres_thread *t;
	pthread_condattr_t ca;
	void *handle;
	bool used;
	int err;

	if (devres__should_fail())
		return NULL;
	pthread_once(&end_once, end_key_init);
	if (end_key_err)
		return NULL;
	handle = devres__handle_new(&threads, (void **)&t, &used);
	if (!handle)
		return NULL;
	if (used)
		memset(t, 0, sizeof(*t));
	t->handle = handle;
	t->fn = fn;
	t->arg = arg;
	t->timeout_ms = DEVRES_THREAD_STOP_TIMEOUT_MS;
	t->pid = devres__pid_now();
	t->wid = devres__wait_id_new();
	if (name)
		memcpy(t->name, name, strnlen(name, sizeof(t->name) - 1));
	err = pthread_condattr_init(&ca);
	if (!err) {
		err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&t->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (err) {
		devres__handle_del(&threads, t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

struct devres_thread *devm_thread_run(struct device *dev, int (*fn)(void *),
				      void *arg, const char *name)
{
	struct devres_thread *t;
	char label[LIVE_LABEL_LEN];
	struct thread_dr *dr;
	bool refused;
	void *handle;
	int err;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return ERR_PTR(-EINVAL);
	if (devres__arg_bad(dev, (const void *)fn, __func__,
			    "thread function") ||
	    devres__opt_bad(dev, name, __func__, "name"))
		return ERR_PTR(-EINVAL);
	dr = devres_alloc_named(devm_thread_run_release, sizeof(*dr),
				GFP_KERNEL, __func__);
	if (!dr)
		return ERR_PTR(-ENOMEM);
	t = thread_alloc(fn, arg, name);
	if (!t) {
		devres_free(dr);
		return ERR_PTR(-ENOMEM);
	}
	if (devres__should_fail_fd()) {
		errno = EMFILE;
		t->wake_fd = -1;
	} else {
		t->wake_fd = open_wake_fd(t);
	}
	if (t->wake_fd < 0) {
		err = errno;
		handle_free(t);
		devres_free(dr);
		return ERR_PTR(-err);
	}
	/* From here thread_free() undoes the handle and these. */
	devres__ledger_add(DL_FDS, 1);
	devres__ledger_add(DL_THREADS, 1);
	dr->t = t;
	err = -posix__thread_reserve();
	if (err) {
		thread_free(t);
		devres_free(dr);
		return ERR_PTR(-err);
	}
	pthread_mutex_lock(&t->lock);
	err = devres__should_fail_thread()
		      ? EAGAIN
		      : pthread_create(&t->tid, NULL, trampoline, t);
	if (err) {
		pthread_mutex_unlock(&t->lock);
		posix__thread_unreserve();
		thread_free(t);
		devres_free(dr);
		return ERR_PTR(-err);
	}
	/* Not dev_name(): without a reference, its name may be freed. */
	posix__thread_list(t->tid,
			   devres__dev_label_live(dev, label, sizeof(label)),
			   t->name);
	/*
	 * Read before the node is published: from then another thread's
	 * release of the device may stop the thread and free its record as
	 * soon as the lock is let go, and a new thread's take its slot.
	 */
	handle = t->handle;
	/*
	 * The ADD line waits for the unlock: a log sink that releases the
	 * device there would wait for the lock this thread holds.
	 */
	devres__log_hold();
	refused = !devres__record(dev, dr, __func__);
	/*
	 * Refused, @dev released meanwhile: the thread ends without running
	 * @fn, stopped and joined as by the node's release.
	 */
	t->refused = refused;
	/* Now it may run: a release waits for it, or it releases itself. */
	pthread_mutex_unlock(&t->lock);
	devres__log_release();
	if (refused) {
		devm_thread_run_release(dev, dr);
		devres_free(dr);
		return ERR_PTR(-ENODEV);
	}
	return handle;
}

struct stop_match {
	void *handle;
	bool found, ours;
	uint64_t wid;
	char name[16];
};

/*
 * devm_thread_stop()'s look-up, under the device's lock: what the wait's
 * record needs, copied, as the thread may be stopped by another once the
 * lock is let go. The record is made outside the lock (waits.h).
 */
static int match_find(struct device *dev, void *res, void *data)
{
	struct devres_thread *t = ((struct thread_dr *)res)->t;
	struct stop_match *m = data;

	(void)dev;
	if (t->handle != m->handle)
		return 0;
	m->found = true;
	m->ours = t->pid == devres__pid_now();
	m->wid = t->wid;
	memcpy(m->name, t->name, sizeof(m->name));
	return 1;
}

static int match_stop(struct device *dev, void *res, void *data)
{
	(void)dev;
	return ((struct thread_dr *)res)->t->handle == data;
}

int devm_thread_stop(struct device *dev, struct devres_thread *thread)
{
	struct stop_match m = { .handle = thread };
	struct devres__wait w;
	struct thread_dr *dr;
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return devres__dev_err(dev);
	if (thread && current && thread == current->handle) {
		devres__warn(dev, __func__, "thread '%s' cannot stop itself",
			     current->name);
		return -EDEADLK;
	}
	/*
	 * Recorded as waiting for it before it is taken off: of two threads
	 * stopping each other, one is refused and the other's stop goes on.
	 */
	devres__wait_init(&w, __func__);
	(void)devres_find(dev, devm_thread_run_release, match_find, &m);
	if (m.found && m.ours &&
	    devres__wait_for(&w, __func__, m.wid) == -EDEADLK) {
		devres__warn(dev, __func__,
			     "thread '%s' waits for this thread (%s): not "
			     "stopped",
			     m.name, w.loop);
		return -EDEADLK;
	}
	dr = devres_remove(dev, devm_thread_run_release, match_stop, thread);
	if (!dr) {
		struct devres__hand h;

		devres__wait_end(&w);
		/* Another device's thread: named, left running. */
		devres__warn_foreign(
			dev, __func__,
			devres__owner_of_node(dev, devm_thread_run_release,
					      match_stop, thread,
					      "devm_thread_run",
					      "devm_thread_stop()", &h)
				? &h
				: NULL,
			"thread %p is not managed by this device",
			(void *)thread);
		return -EINVAL;
	}
	ret = thread_stop(dev, dr->t, __func__, &w);
	devres_free(dr);
	return ret;
}

void devres_thread_set_stop_timeout(struct devres_thread *thread,
				    unsigned int ms)
{
	struct devres_thread *t;
	bool asked = false;
	char name[16];
	int pid = 0;

	if (devres__arg_bad(NULL, thread, __func__, "thread"))
		return;
	/* Found and set under the lock: the thread may be freed meanwhile. */
	devres__handles_lock();
	t = devres__handle_obj(&threads, thread, NULL);
	if (t && t->pid != devres__pid_now()) {
		pid = t->pid;
		memcpy(name, t->name, sizeof(name));
	} else if (t) {
		/*
		 * Asked to stop (devm_thread_stop(), the device's release, or
		 * a release from its own function, which lets it go): its
		 * device no longer manages it, and no stop waits by this.
		 */
		asked = __atomic_load_n(&t->stop, __ATOMIC_ACQUIRE);
		if (asked)
			memcpy(name, t->name, sizeof(name));
		else
			__atomic_store_n(&t->timeout_ms, ms, __ATOMIC_RELAXED);
	}
	devres__handles_unlock();
	if (!t)
		devres__warn(NULL, __func__,
			     "%p is not a managed thread (stopped, or never "
			     "started)",
			     (void *)thread);
	else if (pid)
		devres__warn(NULL, __func__,
			     "thread '%s' belongs to process %d", name, pid);
	else if (asked)
		devres__warn(NULL, __func__,
			     "thread '%s' was asked to stop: no longer managed",
			     name);
}

bool devres_thread_should_stop(void)
{
	struct devres_thread *t = current;

	return t && __atomic_load_n(&t->stop, __ATOMIC_ACQUIRE);
}

/* What is left until @deadline into @ret_left, zero once it passed. */
static void time_left(const struct timespec *deadline,
		      struct timespec *ret_left)
{
	struct timespec now, d;

	clock_gettime(CLOCK_MONOTONIC, &now);
	d.tv_sec = deadline->tv_sec - now.tv_sec;
	d.tv_nsec = deadline->tv_nsec - now.tv_nsec;
	if (d.tv_nsec < 0) {
		d.tv_sec--;
		d.tv_nsec += 1000000000;
	}
	if (d.tv_sec < 0)
		d.tv_sec = d.tv_nsec = 0;
	*ret_left = d;
}

/*
 * A wait without its wake eventfd is cut into slices this long, at whose
 * ends the thread looks for a stop; one with it, into slices of
 * SLICE_MS, at whose ends it finds a wake eventfd replaced by a file that
 * never becomes readable (the stop's write went nowhere).
 */
#define LOST_SLICE_MS 20
#define SLICE_MS 1000

/* The shorter of @left and @ms milliseconds, into *@ret. */
static void slice_of(const struct timespec *left, bool have_left,
		     unsigned int ms, struct timespec *ret)
{
	struct timespec s = { ms / 1000, (long)(ms % 1000) * 1000000 };

	if (have_left &&
	    (left->tv_sec < s.tv_sec ||
	     (left->tv_sec == s.tv_sec && left->tv_nsec < s.tv_nsec)))
		s = *left;
	*ret = s;
}

/*
 * Whether the thread's wake eventfd still is its own, once a wait saw
 * it ready (or closed) with no stop asked: a readable or closed number
 * would otherwise end every ppoll() at once, a spin. Lost: one WARN
 * (own-fd.c), and the waits are sliced from then on.
 */
static bool wake_ok(struct devres_thread *t)
{
	if (__atomic_load_n(&t->wake_lost, __ATOMIC_ACQUIRE))
		return false;
	if (devres__own_fd_check(t->wake_fd))
		return true;
	__atomic_store_n(&t->wake_lost, true, __ATOMIC_RELEASE);
	return false;
}

/*
 * ppoll() on @fd (may be -1: ignored) and this thread's wake descriptor
 * until @deadline (NULL: none), at least once; signals do not cut the
 * wait short.
 */
static int wait_until(int fd, short events, const struct timespec *deadline)
{
	struct devres_thread *t = current;
	bool wake = t && !__atomic_load_n(&t->wake_lost, __ATOMIC_ACQUIRE);
	struct pollfd p[2] = {
		{ .fd = fd, .events = events },
		{ .fd = wake ? t->wake_fd : -1, .events = POLLIN },
	};
	struct timespec left = { 0, 0 }, slice;
	int n;

	for (;;) {
		if (devres_thread_should_stop())
			return -EINTR;
		if (deadline)
			time_left(deadline, &left);
		if (t) {
			slice_of(&left, deadline != NULL,
				 wake ? SLICE_MS : LOST_SLICE_MS, &slice);
			n = ppoll(p, 2, &slice, NULL);
		} else {
			n = ppoll(p, 2, deadline ? &left : NULL, NULL);
		}
		if (n < 0 && errno != EINTR)
			return -errno;
		if (devres_thread_should_stop())
			return -EINTR;
		if (n > 0 && p[0].revents & POLLNVAL)
			return -EBADF;
		if (n > 0 && p[0].revents)
			return p[0].revents;
		if (n == 0 && deadline) {
			time_left(deadline, &left);
			if (!left.tv_sec && !left.tv_nsec)
				return 0;
		}
		/*
		 * Ready with no stop asked (the stop is stored before its
		 * write), or a slice over: still its own?
		 */
		if (wake && (n == 0 || p[1].revents) && !wake_ok(t)) {
			wake = false;
			p[1].fd = -1;
		}
	}
}

int devres_thread_sleep(unsigned int ms)
{
	struct timespec deadline = deadline_in(ms);

	return wait_until(-1, 0, &deadline);
}

int devres_thread_wait_fd(int fd, short events, int timeout_ms)
{
	struct timespec deadline;

	if (fd < 0)
		return -EBADF;
	if (timeout_ms < 0)
		return wait_until(fd, events, NULL);
	deadline = deadline_in((unsigned int)timeout_ms);
	return wait_until(fd, events, &deadline);
}
