// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile shared-only tsan timeout=120 */
/*
 * A signal handler that closes a descriptor (close(), dup2(), dup3(),
 * close_range(): async-signal-safe calls the library defines) on a thread
 * that holds the lock such a call takes: the table of managed descriptors'
 * (src/posix/fd-table.c) while the thread lists a number or a stream,
 * closes one by hand or fcloses a managed stream; the table of the
 * library's own descriptors' (src/base/own-fd.c) while it records an
 * open. Run there, the handler's call waits for its own thread: for ever.
 * A span of the managed table counts itself on its thread: the handler's
 * call runs inside it, before the span ends, as the plain call (the
 * managed number it closes is left to its release's identity check), and
 * its fclose() of a managed stream is refused (EDEADLK, the stream stays
 * open) with one WARN at the span's end. A span of the library's own
 * table holds signals back: the handler runs once the lock is let go,
 * and refuses the library's own number.
 *
 * Deterministic: this binary puts its own syscall() and fcntl() in front
 * of libc's. For the managed table, another thread holds the device's
 * devres lock (inside a match callback) so that the thread, inside the
 * table's lock, waits for it: at that wait (the futex system call) the
 * thread sends itself the signal. For the library's own table, the
 * signal is sent at the duplicate it makes of a new eventfd, under the
 * lock. Each cell runs in a child process under an alarm: a cell that
 * hangs fails alone.
 *
 * 6 spans of the thread x 5 calls of the handler: 30 cells.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1u << 1)
#endif

/* Where the thread is when the signal comes. */
enum span {
	S_LIST,	       /* devm_open(): its number listed */
	S_STREAM_LIST, /* devm_fopen(): its stream listed */
	S_HAND_CLOSE,  /* close() of a managed number by hand */
	S_HAND_RANGE,  /* close_range() over a managed number */
	S_HAND_FCLOSE, /* fclose() of a managed stream by hand */
	S_OWN_RECORD,  /* irq_line_create(): its eventfd recorded */
	NR_SPANS
};

static const char *const span_name[NR_SPANS] = {
	"devm_open listing",   "devm_fopen listing", "close by hand",
	"close_range by hand", "fclose by hand",     "irq_line_create recording"
};

/* What the handler calls. */
enum hcall {
	H_CLOSE,
	H_DUP2,
	H_DUP3,
	H_CLOSE_RANGE,
	H_FCLOSE,
	NR_HCALLS
};

static const char *const hcall_name[NR_HCALLS] = { "close", "dup2", "dup3",
						   "close_range", "fclose" };

static enum span span;
static enum hcall hcall;
static pid_t victim_tid; /* the thread to signal itself */
static int armed;	 /* its next trigger sends the signal */
static int fired;	 /* the signal was sent */
static int handled;	 /* times the handler ran */
static int handler_ret, handler_errno;
static int target = -1;	  /* the number the handler's call closes */
static FILE *target_f;	  /* the stream the handler's fclose() closes */
static int plain_lo = -1; /* two plain numbers, for close_range() */
static int gate_in, gate_open;
static struct device *cell_devs[2]; /* a cell's two devices */

/* The next definitions, as libc's own. */
typedef long syscall_fn(long, ...);
typedef int fcntl_fn(int, int, ...);

static void *next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/*
 * The handler's WARNs allocate nothing (docs/misuse.md, U22), and neither
 * does a thread's first count in the ledger (test-hostile-signals-first),
 * but fclose() itself is not async-signal-safe (the FILE is freed):
 * ThreadSanitizer would report it. (The next definitions of the
 * descriptor calls are found as the library loads:
 * test-hostile-signals-first.)
 */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "report_signal_unsafe=0";
}

static bool trigger(void)
{
	if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) ||
	    (pid_t)syscall(SYS_gettid) != victim_tid ||
	    !__atomic_exchange_n(&armed, 0, __ATOMIC_ACQ_REL))
		return false;
	__atomic_store_n(&fired, 1, __ATOMIC_RELEASE);
	raise(SIGUSR1);
	return true;
}

/* A futex operation that puts its caller to sleep. */
static bool is_futex_wait(long op)
{
	op &= ~(long)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
	return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
}

long syscall(long n, ...)
{
	static syscall_fn *next;
	long a[6];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!next)
		*(void **)&next = next_sym("syscall");
	/*
	 * The thread waits for the device's lock, inside the table's: asleep
	 * on the lock word, with FUTEX_WAIT_BITSET (a due waiter sleeps on a
	 * bitset of its ticket) or FUTEX_WAIT.
	 */
	if (n == SYS_futex && is_futex_wait(a[1]) && span != S_OWN_RECORD)
		(void)trigger();
	return next(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int fcntl(int fd, int cmd, ...)
{
	static fcntl_fn *next;
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	if (!next)
		*(void **)&next = next_sym("fcntl");
	/* The twin of a new eventfd, made under the own table's lock. */
	if (cmd == F_DUPFD_CLOEXEC && span == S_OWN_RECORD)
		(void)trigger();
	return next(fd, cmd, arg);
}

static void handler(int sig)
{
	int saved = errno, r = 0;

	(void)sig;
	switch (hcall) {
	case H_CLOSE:
		r = close(target);
		break;
	case H_DUP2:
		r = dup2(plain_lo, target);
		break;
	case H_DUP3:
		r = dup3(plain_lo, target, 0);
		break;
	case H_CLOSE_RANGE:
		r = close_range((unsigned int)plain_lo,
				(unsigned int)plain_lo + 1, 0);
		break;
	case H_FCLOSE:
		r = fclose(target_f) ? -1 : 0;
		break;
	default:
		break;
	}
	handler_ret = r;
	handler_errno = r < 0 ? errno : 0;
	__atomic_add_fetch(&handled, 1, __ATOMIC_ACQ_REL);
	errno = saved;
}

static void gate_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Holds the device's devres lock until the gate opens. */
static int gate_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	__atomic_store_n(&gate_in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
		usleep(1000);
	return 1;
}

static void *gate_thread(void *arg)
{
	return devres_find(arg, gate_release, gate_match, NULL);
}

struct victim {
	struct device *dev;
	int fd;	 /* a managed number of @dev, for the closes by hand */
	FILE *f; /* a managed stream of @dev */
	int ret; /* 0: the span's call did what it does */
};

static void *victim_thread(void *arg)
{
	struct victim *v = arg;
	FILE *f;

	victim_tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
	switch (span) {
	case S_LIST:
		v->ret = devm_open(v->dev, "/dev/null", O_RDONLY) >= 0 ? 0 : -1;
		break;
	case S_STREAM_LIST:
		f = devm_fopen(v->dev, "/dev/null", "r");
		v->ret = f ? 0 : -1;
		break;
	case S_HAND_CLOSE:
		v->ret = close(v->fd);
		break;
	case S_HAND_RANGE:
		v->ret = close_range((unsigned int)v->fd, (unsigned int)v->fd,
				     0);
		break;
	case S_HAND_FCLOSE:
		v->ret = fclose(v->f);
		break;
	case S_OWN_RECORD:
		v->ret = irq_line_create("second") > 0 ? 0 : -1;
		break;
	default:
		break;
	}
	__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
	return NULL;
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* The lowest number opened since @before was taken that is an eventfd. */
static int new_eventfd(const bool *before, int max)
{
	char link[64], what[64];

	for (int fd = 3; fd < max; fd++) {
		ssize_t n;

		if (before[fd] || !is_open(fd))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, what, sizeof(what) - 1);
		if (n > 0) {
			what[n] = '\0';
			if (strstr(what, "[eventfd]"))
				return fd;
		}
	}
	return -1;
}

#define MAXFD 512

static int cell(int row, int col)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
	struct victim v = { .fd = -1 };
	struct device *odev;
	pthread_t vt, gt;
	bool gated = row != S_OWN_RECORD, own = !gated;
	int bad = 0, p, early = 0, warns,
	    by_hand = row == S_HAND_CLOSE || row == S_HAND_RANGE ||
		      row == S_HAND_FCLOSE;

	alarm(10);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	span = (enum span)row;
	hcall = (enum hcall)col;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 2;
	v.dev = heap_dev(NULL, "victim");
	odev = heap_dev(NULL, "other");
	/* The child ends with them alive: reachable, not lost (valgrind). */
	cell_devs[0] = v.dev;
	cell_devs[1] = odev;
	if (!v.dev || !odev)
		return 2;
	/* Two plain numbers side by side, nobody's. */
	p = open("/dev/null", O_RDONLY | O_CLOEXEC);
	plain_lo = fcntl(p, F_DUPFD_CLOEXEC, 400);
	if (plain_lo < 0 ||
	    fcntl(p, F_DUPFD_CLOEXEC, plain_lo + 1) != plain_lo + 1)
		return 2;
	close(p);
	if (own) {
		bool before[MAXFD];

		for (int fd = 0; fd < MAXFD; fd++)
			before[fd] = is_open(fd);
		/* The library's own number the handler's call is on. */
		if (irq_line_create("first") <= 0)
			return 2;
		target = new_eventfd(before, MAXFD);
	} else {
		/* Another device's managed number. */
		target = devm_open(odev, "/dev/null", O_RDONLY);
		if (row == S_HAND_CLOSE || row == S_HAND_RANGE)
			v.fd = devm_open(v.dev, "/dev/null", O_RDONLY);
		if (row == S_HAND_FCLOSE)
			v.f = devm_fopen(v.dev, "/dev/null", "r");
		if ((row == S_HAND_CLOSE || row == S_HAND_RANGE) && v.fd < 0)
			return 2;
		if (row == S_HAND_FCLOSE && !v.f)
			return 2;
	}
	if (target < 0)
		return 2;
	/* Another device's managed stream, for the handler's fclose(). */
	target_f = devm_fopen(odev, "/dev/null", "r");
	if (!target_f)
		return 2;
	if (gated) {
		void *res = devres_alloc(gate_release, 8, GFP_KERNEL);

		if (!res)
			return 2;
		devres_add(v.dev, res);
		if (pthread_create(&gt, NULL, gate_thread, v.dev))
			return 2;
		while (!__atomic_load_n(&gate_in, __ATOMIC_ACQUIRE))
			usleep(1000);
	}
	if (pthread_create(&vt, NULL, victim_thread, &v))
		return 2;
	if (gated) {
		/* The thread waits for the device's lock: the signal is sent. */
		while (!__atomic_load_n(&fired, __ATOMIC_ACQUIRE))
			usleep(1000);
		usleep(20000);
		/* Still inside the span: the handler ran there, or not. */
		early = __atomic_load_n(&handled, __ATOMIC_ACQUIRE);
		warns = devres_warn_count();
		__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
		pthread_join(gt, NULL);
	}
	warns = gated ? warns : devres_warn_count();
	pthread_join(vt, NULL);
	/* The managed table's spans take the handler's call inside. */
	if (gated && early != 1) {
		fprintf(stderr,
			"cell %s / %s: the handler waited for the span\n",
			span_name[row], hcall_name[col]);
		bad++;
	}
	/*
	 * Refused from inside a span, WARNed once at its end; a close by
	 * hand WARNs of its own.
	 */
	if (gated && col == H_FCLOSE &&
	    (handler_ret != -1 || handler_errno != EDEADLK ||
	     !is_open(fileno(target_f)) ||
	     devres_warn_count() != warns + 1 + by_hand)) {
		fprintf(stderr,
			"cell %s / %s: %d (%s), %d WARNs, not refused once\n",
			span_name[row], hcall_name[col], handler_ret,
			strerror(handler_errno), devres_warn_count() - warns);
		bad++;
	}
	if (gated && col == H_CLOSE && is_open(target)) {
		fprintf(stderr, "cell %s / %s: fd %d left open\n",
			span_name[row], hcall_name[col], target);
		bad++;
	}
	/*
	 * The handler's close or replacement of the other device's number:
	 * found by that number's release, closed behind the library's
	 * back, one WARN there.
	 */
	if (gated && col <= H_DUP3) {
		warns = devres_warn_count();
		devres_release_all(odev);
		if (devres_warn_count() != warns + 1) {
			fprintf(stderr,
				"cell %s / %s: %d WARNs at the release\n",
				span_name[row], hcall_name[col],
				devres_warn_count() - warns);
			bad++;
		}
	}
	if (!fired || handled != 1 || v.ret) {
		fprintf(stderr,
			"cell %s / %s: signal %s, handler ran %d times, the "
			"thread's call %s\n",
			span_name[row], hcall_name[col],
			fired ? "sent" : "never sent", handled,
			v.ret ? "failed" : "done");
		bad++;
	}
	/* The library's own number: refused; another's: closed. */
	if (col != H_CLOSE_RANGE && col != H_FCLOSE && own &&
	    (handler_ret != -1 || handler_errno != EPERM)) {
		fprintf(stderr, "cell %s / %s: %d (%s), not refused\n",
			span_name[row], hcall_name[col], handler_ret,
			strerror(handler_errno));
		bad++;
	}
	if ((col == H_CLOSE_RANGE || (!own && col != H_FCLOSE) ||
	     (own && col == H_FCLOSE)) &&
	    handler_ret < 0) {
		fprintf(stderr, "cell %s / %s: failed: %s\n", span_name[row],
			hcall_name[col], strerror(handler_errno));
		bad++;
	}
	return bad ? 1 : 0;
}

static void test_handler_inside_table_locks(void **state)
{
	(void)state;
	run_cells_in_children(cell, span_name, NR_SPANS, hcall_name, NR_HCALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handler_inside_table_locks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
