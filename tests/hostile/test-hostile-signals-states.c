// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * The calls that work from a signal handler (docs/reliability.md), each
 * made from a handler on a thread in each state it may be in, and the
 * heap calls (malloc(), calloc(), realloc(), free()) the handler makes
 * counted: there must be none. A handler that interrupted its thread in
 * malloc() and calls it again corrupts the heap or waits for ever, and
 * the library cannot tell a handler from its thread, so a call said to
 * work wherever the thread is may not use the heap at all, first use or
 * not.
 *
 * The states: the process's first call of the library (its setup, where
 * it needs one, made on a thread that has ended), a new thread's first
 * call, the thread inside the program's malloc(), inside malloc() for
 * the node cache, inside a device's devres lock (a devres_find() match on
 * another device), inside the log's sink (its lock held), and the thread's end after every key destructor of
 * the library ran (a key destructor made last raises the signal).
 *
 * A call that takes a node takes its chunk from the thread's node cache
 * when it holds one of the size (the thread used the library before);
 * where the state leaves the cache empty (a thread's first call, its
 * end), the node's chunk comes from malloc(), as the table of
 * reliability.md says (its thread is not in the heap then), and only that
 * allocation, of exactly the node's chunk, is let pass.
 *
 * Each cell runs in a child of its own under an alarm: 12 calls x 7
 * states = 84 cells, and again with every ADD, REM and REL logged.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"
#include "cell-child.h"
#include "membarrier-early.h"

enum call {
	C_WARN_COUNT,
	C_SNAPSHOT,
	C_FIND_NONE,
	C_FREE,
	C_RELEASE,
	C_RELEASE_ACTION,
	C_KIND_FIRST,
	C_ACTION_FIRST,
	C_CLOSE,
	C_MUNMAP,
	C_FAULT,
	C_WARN,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"devres_warn_count",
	"devres_ledger_snapshot",
	"find/remove/destroy/release/for_each finding nothing",
	"devres_free of a node given back",
	"devres_release of a node on a device",
	"devm_release_action",
	"devres_alloc + devres_free of a new release function",
	"devm_add_action + devm_release_action of a new action",
	"close(-1)",
	"munmap() of nothing",
	"devres_should_fail in a call site",
	"a WARN (a call site left, not entered)",
};

enum state {
	S_PROCESS,
	S_THREAD,
	S_MALLOC,
	S_NC_HEAP,
	S_LOCK,
	S_SINK,
	S_EXIT,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"the process's first call",
	"a new thread's first call",
	"inside malloc()",
	"inside malloc() for the node cache",
	"inside another device's lock",
	"inside the log's sink",
	"at its end, after the key destructors",
};

/*
 * The node a new release function's call asks for, and an action's: their
 * chunks (glibc: a 16-byte header and the data's class).
 */
#define NODE_SIZE 200
#define NODE_CHUNK (16 + NODE_SIZE)
#define ACTION_CHUNK (16 + 8)

static enum call the_call;
static enum state the_state;
static struct device dev, lockdev;
static void *floating, *onlist, *adata;
static int in_handler, handled;
static int heap_calls;	  /* heap calls the handler made, chunk aside */
static size_t bad_size;	  /* the size of the first */
static __thread bool arm; /* the next malloc() raises the signal */
static pthread_key_t last_key;
static bool logged; /* every ADD, REM and REL logged too */

static void count(size_t n, bool is_free)
{
	if (!__atomic_load_n(&in_handler, __ATOMIC_RELAXED))
		return;
	if (!is_free &&
	    (the_state == S_PROCESS || the_state == S_THREAD ||
	     the_state == S_EXIT) &&
	    ((the_call == C_KIND_FIRST && n == NODE_CHUNK) ||
	     (the_call == C_ACTION_FIRST && n == ACTION_CHUNK)))
		return;
	if (!__atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED))
		bad_size = is_free ? 0 : n;
}

static void maybe_raise(void)
{
	if (arm) {
		arm = false;
		(void)raise(SIGUSR1);
	}
}

#if defined(T_ASAN) || defined(T_TSAN)
/* The sanitizers' runtimes' (sanitizer/allocator_interface.h). */
int __sanitizer_install_malloc_and_free_hooks(
	void (*on_malloc)(const volatile void *, size_t),
	void (*on_free)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	count(n, false);
	maybe_raise();
}

static void on_free(const volatile void *p)
{
	if (p)
		count(0, true);
}

static void count_heap(void)
{
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
/* NOLINTBEGIN(bugprone-reserved-identifier) */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
/* NOLINTEND(bugprone-reserved-identifier) */

void *malloc(size_t n)
{
	count(n, false);
	maybe_raise();
	return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	count(k * n, false);
	maybe_raise();
	return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	count(n, false);
	maybe_raise();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		count(0, true);
	__libc_free(p);
}

static void count_heap(void)
{
}
#endif

static void nop_release(struct device *d, void *res)
{
	(void)d;
	(void)res;
}

/* Used first by a handler. */
static void new_release(struct device *d, void *res)
{
	(void)d;
	(void)res;
}

/* Used by the thread before, so that its kind is known. */
static void old_release(struct device *d, void *res)
{
	(void)d;
	(void)res;
}

static void nop_action(void *data)
{
	(void)data;
}

static void new_action(void *data)
{
	(void)data;
}

static int same(struct device *d, void *res, void *data)
{
	(void)d;
	return res == data;
}

static int never(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
	return 0;
}

static void each(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
}

static void make_call(void)
{
	struct devres_ledger l;
	void *p;

	switch (the_call) {
	case C_WARN_COUNT:
		(void)devres_warn_count();
		break;
	case C_SNAPSHOT:
		devres_ledger_snapshot(&l);
		break;
	case C_FIND_NONE:
		(void)devres_find(&dev, nop_release, never, NULL);
		(void)devres_remove(&dev, nop_release, never, NULL);
		(void)devres_destroy(&dev, nop_release, never, NULL);
		(void)devres_release(&dev, nop_release, never, NULL);
		devres_for_each_res(&dev, nop_release, never, NULL, each, NULL);
		break;
	case C_FREE:
		devres_free(floating);
		break;
	case C_RELEASE:
		(void)devres_release(&dev, nop_release, same, onlist);
		break;
	case C_RELEASE_ACTION:
		devm_release_action(&dev, nop_action, adata);
		break;
	case C_KIND_FIRST:
		p = devres_alloc(new_release, NODE_SIZE, GFP_KERNEL);
		devres_free(p);
		break;
	case C_ACTION_FIRST:
		if (!devm_add_action(&dev, new_action, &dev))
			devm_release_action(&dev, new_action, &dev);
		break;
	case C_CLOSE:
		(void)close(-1);
		break;
	case C_MUNMAP:
		(void)munmap((void *)1, 0);
		break;
	case C_WARN:
		devres_call_site_leave();
		break;
	default:
		devres_call_site_enter(__FILE__, __LINE__, "handler");
		(void)devres_should_fail(&dev, "handler");
		devres_call_site_leave();
		break;
	}
}

static void on_signal(int sig)
{
	int err = errno;

	(void)sig;
	__atomic_store_n(&in_handler, 1, __ATOMIC_RELAXED);
	make_call();
	__atomic_store_n(&in_handler, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
	errno = err;
}

static void dev_release(struct device *d)
{
	(void)d;
}

/* What a call needs on the device and in its hands. */
static void *setup(void *arg)
{
	(void)arg;
	dev.release = dev_release;
	lockdev.release = dev_release;
	device_initialize(&dev);
	device_initialize(&lockdev);
	floating = devres_alloc(nop_release, 24, GFP_KERNEL);
	onlist = devres_alloc(nop_release, 24, GFP_KERNEL);
	devres_add(&dev, onlist);
	adata = &adata;
	(void)devm_add_action(&dev, nop_action, adata);
	/*
	 * The device's index, built by its first lookup by key, comes from
	 * the block cache (reliability.md: not from a handler): built here.
	 */
	(void)devm_is_action_added(&dev, nop_action, adata);
	devres_add(&lockdev, devres_alloc(nop_release, 24, GFP_KERNEL));
	return NULL;
}

/* Inside lockdev's lock: the match raises the signal. */
static int raise_inside(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
	(void)raise(SIGUSR1);
	return 0;
}

/* The thread's WARN's line: the signal comes while it is sent. */
static void raising_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
	if (!__atomic_load_n(&in_handler, __ATOMIC_RELAXED))
		(void)raise(SIGUSR1);
}

/* The key made last: its destructor runs after the library's. */
static void at_end(void *arg)
{
	(void)arg;
	(void)raise(SIGUSR1);
}

/*
 * An AddressSanitizer build's node cache is a quarantine shared by all
 * threads, which gives a chunk back only once 2 048 newer ones of its
 * class are there: so many are given back to it first.
 */
#ifdef T_ASAN
#define PRIMED 2100
#else
#define PRIMED 1
#endif

static void *primed[PRIMED];

static void prime_size(size_t size)
{
	for (int i = 0; i < PRIMED; i++)
		primed[i] = devres_alloc(old_release, size, GFP_KERNEL);
	for (int i = 0; i < PRIMED; i++)
		devres_free(primed[i]);
}

/*
 * A thread that used the library before: its node cache holds a chunk
 * of the size a taking call asks for, and old_release is known.
 */
static void prime(void)
{
	prime_size(NODE_SIZE);
	prime_size(8);
}

static void *victim(void *arg)
{
	void *p;

	(void)arg;
	switch (the_state) {
	case S_THREAD:
		(void)raise(SIGUSR1);
		break;
	case S_MALLOC:
		prime();
		arm = true;
		p = malloc(64);
		/* Not a pair the compiler may take out. */
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		break;
	case S_NC_HEAP:
		/* Another class, so that this one's list stays as it is. */
		devres_free(devres_alloc(old_release, 40, GFP_KERNEL));
		arm = true;
		p = devres_alloc(old_release, 100, GFP_KERNEL);
		devres_free(p);
		break;
	case S_LOCK:
		prime();
		(void)devres_find(&lockdev, nop_release, raise_inside, NULL);
		break;
	case S_SINK:
		prime();
		devres_set_log_sink(raising_sink, NULL);
		devres_call_site_leave();
		devres_set_log_sink(NULL, NULL);
		break;
	default:
		/* A library call of its own: the library's key is set. */
		prime();
		(void)pthread_setspecific(last_key, &last_key);
		break;
	}
	return NULL;
}

static int cell(int row, int col)
{
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_t t;

	the_call = (enum call)row;
	the_state = (enum state)col;
	(void)alarm(10);
	/* Registered before the cell's threads take a lock. */
	membarrier_early();
	count_heap();
	devres_set_log(logged);
	if (pthread_key_create(&last_key, at_end) ||
	    sigaction(SIGUSR1, &sa, NULL))
		return 3;
	if (pthread_create(&t, NULL, setup, NULL) || pthread_join(t, NULL))
		return 3;
	if (the_state == S_PROCESS) {
		(void)raise(SIGUSR1);
	} else if (pthread_create(&t, NULL, victim, NULL) ||
		   pthread_join(t, NULL)) {
		return 3;
	}
	if (handled != 1) {
		fprintf(stderr, "%s / %s: %d handler(s)\n", call_name[row],
			state_name[col], handled);
		return 1;
	}
	if (heap_calls) {
		fprintf(stderr,
			"%s / %s: %d heap call(s) in the handler (first: %s "
			"%zu)\n",
			call_name[row], state_name[col], heap_calls,
			bad_size ? "malloc" : "free", bad_size);
		return 1;
	}
	return 0;
}

static void every_call_in_every_state(void **state)
{
	(void)state;
	run_cells_in_children(cell, call_name, NR_CALLS, state_name, NR_STATES);
}

static void every_call_in_every_state_logged(void **state)
{
	(void)state;
	logged = true;
	run_cells_in_children(cell, call_name, NR_CALLS, state_name, NR_STATES);
	logged = false;
}

#ifdef T_TSAN
/*
 * ThreadSanitizer reports every malloc() and free() in a signal handler;
 * the count above is the test's judge, and it names the cell.
 */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "report_signal_unsafe=0";
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_in_every_state),
		cmocka_unit_test(every_call_in_every_state_logged),
	};

	const char *one = getenv("SIGSTATES_CELL");
	int row, col;

	/* A backtrace allocates: a handler's WARN must not. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	/* "row,col": that cell alone, in this process (for a debugger). */
	if (one && sscanf(one, "%d,%d", &row, &col) == 2 && row >= 0 &&
	    row < NR_CALLS && col >= 0 && col < NR_STATES)
		return cell(row, col);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
