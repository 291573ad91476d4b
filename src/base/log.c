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
#include <sys/mman.h>
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
 * WARN.
 */
static TLS_FAST bool in_sink;

/*
 * Calls of the sink in progress, counted by the parity of the sink's
 * generation, so that devres_set_log_sink() can wait until the sink it
 * replaced has returned everywhere: its caller may then free the old ctx.
 */
static unsigned long sink_gen;
static int sink_calls[2];
static pthread_cond_t sink_done = PTHREAD_COND_INITIALIZER;
static TLS_FAST int my_slot; /* of this thread's call, while in_sink */

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

/* Free in a child of fork(), whatever another thread was doing. */
static void sink_lock_take(void)
{
	log_lock();
}

static void sink_lock_drop(void)
{
	log_unlock();
}

/* In the child only this thread is left: no other call can be running. */
static void sink_lock_drop_child(void)
{
	sink_calls[0] = sink_calls[1] = 0;
	if (in_sink)
		sink_calls[my_slot] = 1;
	pthread_cond_init(&sink_done, NULL);
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

void devres_set_log_sink(devres_log_sink_t new_sink, void *ctx)
{
	int old, own, cancel;

	if (devres__opt_bad(NULL, (const void *)new_sink, __func__, "sink"))
		return;
	log_lock();
	old = (int)(sink_gen++ & 1);
	sink = new_sink;
	sink_ctx = ctx;
	/* A sink that replaces itself does not wait for its own call. */
	own = in_sink && my_slot == old;
	cancel = devres__cancel_off();
	while (sink_calls[old] > own)
		pthread_cond_wait(&sink_done, &sink_lock);
	log_unlock();
	devres__cancel_restore(cancel);
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
 * The sink ended its thread (pthread_exit(), a cancellation point): its
 * call is over all the same. Left counted, it made every later
 * devres_set_log_sink() wait for it for ever. The WARN is counted, not
 * sent: the sink that ended its thread would be given it.
 */
static void sink_ended(void *arg)
{
	int slot = *(int *)arg;

	in_sink = false;
	log_lock();
	if (--sink_calls[slot] == 0)
		pthread_cond_broadcast(&sink_done);
	log_unlock();
	__atomic_add_fetch(&warn_count, 1, __ATOMIC_RELAXED);
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
	int err = errno, slot;
	void *ctx;

	if (in_sink || in_log_lock)
		return;
	/* A child of vfork(): the sink, its lock and the held lines are the parent's. */
	if (devres__vfork_maybe() && devres__vfork_child()) {
		devres__log_raw(line);
		return;
	}
	if (hold_depth && hold_line(level, line))
		return;
	log_lock();
	s = sink;
	ctx = sink_ctx;
	slot = (int)(sink_gen & 1);
	if (s)
		sink_calls[slot]++;
	log_unlock();
	in_sink = true;
	my_slot = slot;
	if (s) {
		pthread_cleanup_push(sink_ended, &slot);
		s(ctx, level, line);
		pthread_cleanup_pop(0);
	} else {
		devres__log_raw(line);
	}
	in_sink = false;
	if (s) {
		log_lock();
		if (--sink_calls[slot] == 0)
			pthread_cond_broadcast(&sink_done);
		log_unlock();
	}
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
	if (in_sink || in_log_lock)
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
	if (in_sink || in_log_lock)
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
