// SPDX-License-Identifier: MIT
/*
 * Log lines, WARNs and the WARN counter. Everything the library prints goes
 * through one sink, which the application may replace.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#ifndef NDEBUG
#include <execinfo.h>
#endif
#include "internal.h"

bool devres__log_on;
static int warn_count;
static devres_log_sink_t sink;
static void *sink_ctx;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Set while this thread runs the sink. A sink may look at a device (call
 * devres_dump() on every WARN, say), and what it does may log or WARN in
 * turn: the WARN of a devres call made from a callback that holds the
 * device's lock, a log line of its own allocation. Sent to the sink, that
 * line would call it again without end; so a line made while the sink
 * runs is dropped, and a WARN made then is not counted: one misuse, one
 * WARN. sink_frame is the frame that called the sink: a line made from
 * the sink comes from deeper on the stack.
 */
static TLS_FAST bool in_sink;
static TLS_FAST uintptr_t sink_frame;

/*
 * A call of the sink in progress: on the list while it runs, with the
 * sink's generation, so that devres_set_log_sink() can wait until the
 * sink it replaced has returned everywhere (its caller may then free the
 * old ctx). The record is the thread's own, and a call that does not
 * return is taken off the list all the same: by the thread's end (a key's
 * destructor, when the sink ended its thread: pthread_exit(), a
 * cancellation), by the thread's next log line made outside the sink (the
 * sink left by longjmp()), or by a devres_set_log_sink() that waited
 * SINK_WAIT_S for it (a longjmp() out of the sink, and no line since).
 * Each such call counts one WARN. Not a hook on the stack (a cleanup
 * handler): a longjmp() out of the sink would leave it registered, and
 * the thread's later pthread_exit() would unwind to the dead frame.
 */
struct sink_call {
	struct sink_call *next, *prev;
	unsigned long gen;
	pid_t tid;
	bool listed;
};

#define SINK_WAIT_S 2
/* The frame of the function it is written in. */
#define HERE ((uintptr_t)__builtin_frame_address(0))

static unsigned long sink_gen;
static struct sink_call sink_calls = { &sink_calls, &sink_calls, 0, 0, 0 };
static pthread_cond_t sink_done;
static TLS_FAST struct sink_call my_call;
static pthread_key_t sink_key;
static bool sink_key_ok;
static TLS_FAST bool sink_key_set;

/*
 * Set while this thread takes or holds sink_lock. A signal handler run
 * then on this thread that logs, or WARNs, would wait for the lock its
 * own thread holds: its line is dropped (a WARN still counts).
 */
static TLS_FAST unsigned int in_log_lock;

static void log_lock(void)
{
	in_log_lock++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&sink_lock);
}

static void log_unlock(void)
{
	pthread_mutex_unlock(&sink_lock);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	in_log_lock--;
}

__attribute__((constructor)) static void log_init(void)
{
	const char *s = devres__getenv("DEVRES_LOG");
#ifndef NDEBUG
	void *frame;

	/* Its first call loads the unwinder, which allocates: done here. */
	(void)backtrace(&frame, 1);
#endif
	if (s && *s && strcmp(s, "0") != 0)
		devres__log_on = true;
}

static void sink_done_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&sink_done, &a);
	pthread_condattr_destroy(&a);
}

/* Under sink_lock. */
static void call_unlist(struct sink_call *c)
{
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->next = c->prev = c;
	c->listed = false;
	pthread_cond_broadcast(&sink_done);
}

/*
 * This thread's call of the sink is over without a return: off the list,
 * and one WARN, counted, not sent (the sink that did not return would be
 * given it), unless a devres_set_log_sink() that stopped waiting for it
 * took it off and WARNed already.
 */
static void call_lost(void)
{
	bool listed;

	in_sink = false;
	log_lock();
	listed = my_call.listed;
	if (listed)
		call_unlist(&my_call);
	log_unlock();
	if (listed)
		__atomic_add_fetch(&warn_count, 1, __ATOMIC_RELAXED);
}

/* The thread ends in the sink, or with a call of it that never returned. */
static void sink_thread_end(void *arg)
{
	(void)arg;
	if (in_sink)
		call_lost();
}

/*
 * True while this thread runs the sink: a line made now, by the caller
 * whose @frame is given, comes from the sink. A thread whose sink left by
 * longjmp() still has in_sink set; a line made from no deeper on the
 * stack than the frame that called the sink is not the sink's (its frame
 * is gone): that call is over. On a
 * signal's alternate stack the frames do not compare: the sink may still
 * be running under the handler, and the line is dropped, as any line made
 * from a sink.
 */
static bool sink_running(uintptr_t frame)
{
	stack_t ss;

	if (!in_sink)
		return false;
	if (frame < sink_frame)
		return true;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
		return true;
	call_lost();
	return false;
}

__attribute__((constructor)) static void sink_init(void)
{
	sink_done_init();
	sink_key_ok = !pthread_key_create(&sink_key, sink_thread_end);
}

/* Free in a child of fork(), whatever another thread was doing. */
static void sink_lock_take(void)
{
	log_lock();
}

static void sink_lock_drop(void)
{
	log_unlock();
}

/*
 * In the child only this thread is left: no other call can be running,
 * and the other threads' records are in memory the child may reuse.
 */
static void sink_lock_drop_child(void)
{
	sink_calls.next = sink_calls.prev = &sink_calls;
	if (my_call.listed) {
		my_call.next = my_call.prev = &sink_calls;
		sink_calls.next = sink_calls.prev = &my_call;
	}
	my_call.tid = (pid_t)syscall(SYS_gettid);
	sink_done_init();
	log_unlock();
}

__attribute__((constructor)) static void log_atfork(void)
{
	devres__atfork(DEVRES_FORK_LOG, sink_lock_take, sink_lock_drop,
		       sink_lock_drop_child);
}

void devres_set_log(bool on)
{
	__atomic_store_n(&devres__log_on, on, __ATOMIC_RELAXED);
}

/* A call of a sink of generation @gen or older, other than this thread's. */
static struct sink_call *call_of(unsigned long gen)
{
	for (struct sink_call *c = sink_calls.next; c != &sink_calls;
	     c = c->next)
		if (c != &my_call && c->gen <= gen)
			return c;
	return NULL;
}

/*
 * Waits, under sink_lock, for the calls of generation @gen or older to
 * return, SINK_WAIT_S at most. A call still in progress then is taken
 * off the list and its thread returned (0 if none): the sink left it by
 * longjmp() and the thread made no line since, or it is stuck.
 */
static pid_t calls_wait(unsigned long gen, unsigned int *ret_n)
{
	struct sink_call *c;
	struct timespec dl;
	pid_t tid = 0;

	*ret_n = 0;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += SINK_WAIT_S;
	while (call_of(gen)) {
		if (pthread_cond_timedwait(&sink_done, &sink_lock, &dl) !=
		    ETIMEDOUT)
			continue;
		while ((c = call_of(gen))) {
			tid = c->tid;
			call_unlist(c);
			++*ret_n;
		}
	}
	return tid;
}

void devres_set_log_sink(devres_log_sink_t new_sink, void *ctx)
{
	unsigned int lost;
	unsigned long old;
	int cancel;
	pid_t tid;

	if (devres__opt_bad(NULL, (const void *)new_sink, __func__, "sink"))
		return;
	/* A call of this thread's that is over is not waited for. */
	(void)sink_running(HERE);
	log_lock();
	old = sink_gen++;
	sink = new_sink;
	sink_ctx = ctx;
	/* A sink that replaces itself does not wait for its own call. */
	cancel = devres__cancel_off();
	tid = calls_wait(old, &lost);
	log_unlock();
	devres__cancel_restore(cancel);
	if (lost)
		devres__warn(NULL, __func__,
			     "%u call(s) of the sink replaced, in thread %d "
			     "and others, still not returned after %d s "
			     "(left by longjmp()?): not waited for",
			     lost, (int)tid, SINK_WAIT_S);
}

int devres_warn_count(void)
{
	return __atomic_load_n(&warn_count, __ATOMIC_RELAXED);
}

/*
 * Lines made while this thread holds a subsystem's lock, kept until it
 * lets go (devres__log_hold()): a sink may call back into that subsystem,
 * which would wait for the lock this thread holds. At most HELD_MAX are
 * kept, in HELD_BYTES of the thread's own (each its level's byte and its
 * text): the others are counted and said to be dropped at the flush.
 *
 * No malloc() on the way: a signal handler that WARNs while its thread
 * holds lines (inside any span that holds the log) keeps its line here
 * too, and the heap may be its thread's to use at that moment. A handler
 * run while its thread adds a line or takes them out (held_busy) drops
 * its own, counted with the others; its thread's lines are left whole.
 *
 * The buffer is mapped at the first line held and unmapped when they are
 * flushed (mmap() is safe in a signal handler; without it the line is
 * dropped, counted). It is not thread-local storage: the library's static
 * TLS is carved out of every thread's stack, the program's own threads'
 * too, and 4 KiB of it was a quarter of a thread at PTHREAD_STACK_MIN.
 */
#define LOG_LINE_MAX 512
/* The longest device name a line gives whole. */
#define LABEL_MAX 128
#define HELD_MAX 16
#define HELD_BYTES 4096

static TLS_FAST unsigned int hold_depth;
static TLS_FAST unsigned int held_n, held_used, held_dropped;
static TLS_FAST bool held_busy;
static TLS_FAST char *held;
/*
 * A thread that ends while it holds lines (a DMA op or a callback under a
 * hold that calls pthread_exit(), a cancellation) has them sent, and the
 * buffer unmapped, by this key's destructor: neither lost nor leaked.
 * Made as the library loads, among the process's first keys, whose
 * pthread_setspecific() allocates nothing (glibc): it is set where the
 * buffer is mapped, which may be a signal handler.
 */
static pthread_key_t held_key;
static bool held_key_ok;

static void held_drop_one(void)
{
	__atomic_add_fetch(&held_dropped, 1, __ATOMIC_RELAXED);
}

static void held_enter(void)
{
	__atomic_store_n(&held_busy, true, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void held_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&held_busy, false, __ATOMIC_RELAXED);
}

static bool hold_line(int level, const char *line)
{
	size_t len = strlen(line) + 1;

	if (__atomic_load_n(&held_busy, __ATOMIC_RELAXED)) {
		held_drop_one();
		return true;
	}
	held_enter();
	if (!held) {
		void *p = mmap(NULL, HELD_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		held = p == MAP_FAILED ? NULL : p;
		if (held && held_key_ok)
			(void)pthread_setspecific(held_key, &held_key);
	}
	if (!held || held_n >= HELD_MAX || len + 1 > HELD_BYTES - held_used) {
		held_drop_one();
	} else {
		held[held_used] = (char)level;
		memcpy(&held[held_used + 1], line, len);
		held_used += (unsigned int)len + 1;
		held_n++;
	}
	held_leave();
	return true;
}

static void emit(int level, const char *line);

void devres__log_hold(void)
{
	hold_depth++;
}

/* The thread ends holding lines: they go out now, as at the hold's end. */
static void held_thread_end(void *arg)
{
	(void)arg;
	if (held && !__atomic_load_n(&held_busy, __ATOMIC_RELAXED)) {
		hold_depth = 1;
		devres__log_release();
	}
}

__attribute__((constructor)) static void held_init(void)
{
	held_key_ok = !pthread_key_create(&held_key, held_thread_end);
}

void devres__log_release(void)
{
	unsigned int dropped, used = 0;
	int err = errno;
	char *lines;

	if (--hold_depth)
		return;
	/* A handler's, while its thread takes the lines out: none of its. */
	if (__atomic_load_n(&held_busy, __ATOMIC_RELAXED))
		return;
	/*
	 * Taken out whole, buffer and all, then sent: a sink may hold lines
	 * again (in a buffer of their own).
	 */
	held_enter();
	lines = held;
	if (lines) {
		used = held_used;
		held = NULL;
		held_used = 0;
		held_n = 0;
	}
	held_leave();
	for (unsigned int off = 0; off < used;) {
		size_t len = strlen(&lines[off + 1]) + 1;

		emit(lines[off], &lines[off + 1]);
		off += (unsigned int)len + 1;
	}
	if (lines)
		(void)munmap(lines, HELD_BYTES);
	dropped = __atomic_exchange_n(&held_dropped, 0, __ATOMIC_RELAXED);
	if (dropped)
		devres__print(DEVRES_LOG_WARNING,
			      "(%u log lines dropped while a lock was held)",
			      dropped);
	errno = err;
}

/*
 * One line, one system call: writev(2) of the line and its newline to
 * the descriptor of stderr, with no lock and no buffer taken on the way.
 * Not stdio: fprintf() takes the stream's lock, which a thread of the
 * parent may have held at a fork(), or the thread a signal handler
 * interrupted may hold (the line would wait for ever), and on an
 * unbuffered stderr it puts a buffer of BUFSIZ (8 KiB) on the stack,
 * half of a thread's whole stack at PTHREAD_STACK_MIN. errno is kept.
 */
void devres__log_raw(const char *line)
{
	static char nl[] = "\n";
	struct iovec iov[2] = {
		{ .iov_base = (void *)(uintptr_t)line,
		  .iov_len = strlen(line) },
		{ .iov_base = nl, .iov_len = 1 },
	};
	struct iovec *v = iov;
	int err = errno, n = 2;

	while (n) {
		ssize_t done = writev(STDERR_FILENO, v, n);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			break;
		for (; n && (size_t)done >= v->iov_len; v++, n--)
			done -= (ssize_t)v->iov_len;
		if (n) {
			v->iov_base = (char *)v->iov_base + done;
			v->iov_len -= (size_t)done;
		}
	}
	errno = err;
}

/* A sink, or stderr, may change errno: logging never does. */
static void emit(int level, const char *line)
{
	devres_log_sink_t s;
	int err = errno;
	void *ctx;

	if (in_log_lock || sink_running(HERE))
		return;
	/* A child of vfork(): the sink, its lock and the held lines are the parent's. */
	if (devres__vfork_maybe() && devres__vfork_child()) {
		devres__log_raw(line);
		return;
	}
	if (hold_depth && hold_line(level, line))
		return;
	if (!sink_key_set) {
		/* Once a thread, and again in a child of fork(). */
		my_call.tid = (pid_t)syscall(SYS_gettid);
		sink_key_set = sink_key_ok &&
			       !pthread_setspecific(sink_key, &sink_key);
	}
	/*
	 * Set before the call is listed: a signal handler run meanwhile on
	 * this thread that logs is then a line made from the sink, dropped,
	 * and never lists the record a second time.
	 */
	sink_frame = HERE;
	in_sink = true;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	log_lock();
	s = sink;
	ctx = sink_ctx;
	if (s) {
		my_call.gen = sink_gen;
		my_call.next = &sink_calls;
		my_call.prev = sink_calls.prev;
		sink_calls.prev->next = &my_call;
		sink_calls.prev = &my_call;
		my_call.listed = true;
	}
	log_unlock();
	if (s)
		s(ctx, level, line);
	else
		devres__log_raw(line);
	if (s) {
		log_lock();
		if (my_call.listed)
			call_unlist(&my_call);
		log_unlock();
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	in_sink = false;
	errno = err;
}

void devres__print(int level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	devres__vformat(line, sizeof(line), fmt, ap);
	va_end(ap);
	emit(level, line);
}

/*
 * A label for @dev that is safe to print even when @dev is garbage: only an
 * initialized device is asked for its name. Read here, as dev_name() does,
 * rather than through the driver model, which sits above this file.
 */
const char *devres__dev_label(const struct device *dev, char *buf, size_t len)
{
	const char *name = NULL;

	if (!dev)
		return "(no device)";
	if (devres__ptr_bad(dev))
		return "(bad device pointer)";
	/* Loads: an initialize or a rename may be storing them. */
	if (__atomic_load_n(&dev->magic, __ATOMIC_ACQUIRE) ==
	    DEVRES_DEV_MAGIC) {
		name = __atomic_load_n(&dev->name, __ATOMIC_ACQUIRE);
		if (!name)
			name = dev->init_name;
	}
	/*
	 * A name too long for a line is cut, and says so: the function and
	 * the reason after it must still fit in the line.
	 */
	if (name && *name && strnlen(name, LABEL_MAX + 1) <= LABEL_MAX)
		return name;
	if (name && *name && len > 4)
		snprintf(buf, len, "%.*s...", (int)(len - 4), name);
	else
		snprintf(buf, len, "device@%p", (const void *)dev);
	return buf;
}

void devres__log(const struct device *dev, const char *op, const void *node,
		 const char *name, size_t size)
{
	char buf[40];

	devres__print(DEVRES_LOG_DEBUG, "%s: DEVRES %-3s %p %s (%zu bytes)",
		      devres__dev_label(dev, buf, sizeof(buf)), op, node, name,
		      size);
}

void devres__log_node(const struct device *dev, const char *op,
		      const void *node, uint32_t kind, const void *group,
		      size_t size)
{
	const char *name = devres__kind_name(kind);
	char buf[40];

	/* A group's lines carry its id: its open and its release pair up. */
	switch (kind) {
	case DR_KIND_GROUP_OPEN:
	case DR_KIND_GROUP_CLOSE:
		devres__print(DEVRES_LOG_DEBUG,
			      "%s: DEVRES %-3s %p %s %p (%zu bytes)",
			      devres__dev_label(dev, buf, sizeof(buf)), op,
			      node, name, group, size);
		break;
	case DR_KIND_OWNED:
		devres__print(DEVRES_LOG_DEBUG,
			      "%s: DEVRES %-3s %p %s \"%s\" (%zu bytes)",
			      devres__dev_label(dev, buf, sizeof(buf)), op,
			      node, name, (const char *)group, size);
		break;
	default:
		devres__log(dev, op, node, name, size);
	}
}

static void backtrace_lines(void)
{
#ifndef NDEBUG
	const char *env = devres__getenv("DEVRES_WARN_BACKTRACE");
	void *frames[16];
	char **syms;
	int n;

	/* Debug builds show where a misuse came from, unless told not to. */
	if (env && strcmp(env, "0") == 0)
		return;
	n = backtrace(frames, 16);
	/*
	 * Lines held (devres__log_hold()) may be a signal handler's, whose
	 * thread may be inside malloc(): the frames' addresses only, as
	 * backtrace_symbols_fd() gives them, and no allocation.
	 */
	if (hold_depth) {
		for (int i = 3; i < n; i++)
			devres__print(DEVRES_LOG_WARNING, "  [%p]", frames[i]);
		return;
	}
	syms = backtrace_symbols(frames, n);

	for (int i = 3; syms && i < n; i++)
		devres__print(DEVRES_LOG_WARNING, "  %s", syms[i]);
	free(syms);
#endif
}

/*
 * A setuid, setgid or capability-raising process (AT_SECURE) may have a
 * less privileged user reading its stderr: the library says nothing of its
 * own there (a WARN names heap addresses) unless the program asked for it
 * with devres_set_log() or devres_set_log_sink(). The WARN still counts.
 */
static bool secure_quiet(void)
{
	bool quiet;

	if (!devres__secure() ||
	    __atomic_load_n(&devres__log_on, __ATOMIC_RELAXED))
		return false;
	log_lock();
	quiet = !sink;
	log_unlock();
	return quiet;
}

static __attribute__((noinline)) void vwarn(const char *label, const char *func,
					    const char *fmt, va_list ap)
{
	char reason[256], line[LOG_LINE_MAX];
	int err = errno;

	/*
	 * A child of vfork(): not counted (the counter is the parent's), no
	 * backtrace (it allocates), one write.
	 */
	if (devres__vfork_maybe() && devres__vfork_child()) {
		if (devres__secure() && !devres__logging())
			return;
		devres__vformat(reason, sizeof(reason), fmt, ap);
		snprintf(line, sizeof(line), "WARNING: %s: %s: %s", label, func,
			 reason);
		devres__log_raw(line);
		errno = err;
		return;
	}
	/* Every WARN counts, even one the sink's own calls make. */
	__atomic_add_fetch(&warn_count, 1, __ATOMIC_RELAXED);
	if (in_log_lock || sink_running(HERE))
		return;
	if (secure_quiet())
		return;
	devres__vformat(reason, sizeof(reason), fmt, ap);
	devres__print(DEVRES_LOG_WARNING, "WARNING: %s: %s: %s", label, func,
		      reason);
	backtrace_lines();
	errno = err;
}

void devres__warn(const struct device *dev, const char *func, const char *fmt,
		  ...)
{
	char buf[40];
	va_list ap;

	va_start(ap, fmt);
	vwarn(devres__dev_label(dev, buf, sizeof(buf)), func, fmt, ap);
	va_end(ap);
}

/*
 * A WARN made where the caller knows it may run in a signal handler that
 * interrupted its own thread inside the library: no backtrace (it
 * allocates, and the thread may be inside malloc()), and no line kept
 * for later while the thread holds a subsystem's lock (that allocates
 * too): the line is dropped then, and counted among the dropped ones.
 */
void devres__warn_async(const struct device *dev, const char *func,
			const char *fmt, ...)
{
	char buf[40], reason[256];
	int err = errno;
	va_list ap;

	if (devres__vfork_maybe() && devres__vfork_child())
		return;
	__atomic_add_fetch(&warn_count, 1, __ATOMIC_RELAXED);
	if (in_log_lock || sink_running(HERE))
		return;
	if (hold_depth) {
		held_drop_one();
		return;
	}
	if (secure_quiet())
		return;
	va_start(ap, fmt);
	devres__vformat(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	devres__print(DEVRES_LOG_WARNING, "WARNING: %s: %s: %s",
		      devres__dev_label(dev, buf, sizeof(buf)), func, reason);
	errno = err;
}

/* A WARN about a device that may be gone by now: its label was copied. */
void devres__warn_label(const char *label, const char *func, const char *fmt,
			...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(label, func, fmt, ap);
	va_end(ap);
}

bool devres__arg_warn(const struct device *dev, const char *func,
		      const char *what, const void *p)
{
	intptr_t v = (intptr_t)p;

	if (!p)
		devres__warn(dev, func, "NULL %s", what);
	else if (v < 0)
		devres__warn(dev, func, "%s is ERR_PTR(%ld)", what, (long)v);
	else
		devres__warn(dev, func, "%s is a bad pointer (%p)", what, p);
	return true;
}

/*
 * The out-of-line half of the headers' inline checks: the caller already
 * found @p bad with devres_ptr_bad(). Not cold: see devres__arg_warn()
 * in subsys.h.
 */
void devres_warn_bad_arg(const char *func, const char *what, const void *p)
{
	devres__arg_warn(NULL, devres__ptr_bad(func) ? "(bad name)" : func,
			 devres__ptr_bad(what) ? "(bad name)" : what, p);
}
