// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile shared-only tsan timeout=120 */
/*
 * The first call in a process of each async-signal-safe libc name the
 * library interposes, made from a signal handler: close(), dup2(), dup3(),
 * close_range(), the mapping calls and ioctl(). Each goes on to the next
 * definition (libc's, or a sanitizer's interceptor) as the library finds
 * it with dlsym(), which allocates on a thread's first call: from a
 * handler that interrupted malloc() on its thread, that deadlocks or
 * corrupts the heap, and the name promised to be safe there. So every
 * next definition is found as the library loads, and a handler's call
 * allocates nothing, first or not.
 *
 * A cell per name, each in a process of its own (this binary run again
 * with the name), so that the call is the process's first of its name: a
 * new thread (which never called dlsym()) raises a signal on itself, and
 * the handler makes the call with arguments the kernel refuses untouched.
 * Allocations in the handler are counted by this binary's malloc() or
 * the sanitizers' allocator hooks.
 *
 * Then 4 cells of a thread's first count in the ledger made by a handler
 * (ledger_child()): 13 + 4 = 17 cells.
 */
#define _GNU_SOURCE
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"
#include "handler-allocs.h"

enum call {
	CLOSE,
	DUP2,
	DUP3,
	CLOSE_RANGE,
	MMAP,
	MUNMAP,
	MREMAP,
	MADVISE,
	MPROTECT,
	PKEY_MPROTECT,
	REMAP_FILE_PAGES,
	PROCESS_MADVISE,
	IOCTL,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"close",
	"dup2",
	"dup3",
	"close_range",
	"mmap",
	"munmap",
	"mremap",
	"madvise",
	"mprotect",
	"pkey_mprotect",
	"remap_file_pages",
	"process_madvise",
	"ioctl",
};

static enum call the_call;

/* Each refused by the kernel with nothing changed (bad number, range). */
static void make_call(void)
{
	switch (the_call) {
	case CLOSE:
		(void)close(-1);
		break;
	case DUP2:
		(void)dup2(-1, -1);
		break;
	case DUP3:
		(void)dup3(-1, 1000, 0);
		break;
	case CLOSE_RANGE:
		(void)close_range(10, 5, 0);
		break;
	case MMAP:
		(void)mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);
		break;
	case MUNMAP:
		(void)munmap((void *)1, 0);
		break;
	case MREMAP:
		(void)mremap((void *)1, 0, 0, 0);
		break;
	case MADVISE:
		(void)madvise((void *)1, 0, MADV_NORMAL);
		break;
	case MPROTECT:
		(void)mprotect((void *)1, 0, PROT_NONE);
		break;
	case PKEY_MPROTECT:
		(void)pkey_mprotect((void *)1, 0, PROT_NONE, -1);
		break;
	case REMAP_FILE_PAGES:
		(void)remap_file_pages((void *)1, 0, 0, 0, 0);
		break;
	case PROCESS_MADVISE:
		(void)process_madvise(-1, NULL, 0, MADV_NORMAL, 0);
		break;
	default:
		(void)ioctl(-1, 0);
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
	errno = err;
}

static void *raiser(void *arg)
{
	(void)arg;
	(void)raise(SIGUSR1);
	return NULL;
}

/* The child: the call, from a handler on a thread that never resolved. */
static int child(const char *name)
{
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_t t;

	for (the_call = 0; the_call < NR_CALLS; the_call++)
		if (!strcmp(call_name[the_call], name))
			break;
	if (the_call == NR_CALLS)
		return 2;
	count_allocs();
	if (sigaction(SIGUSR1, &sa, NULL) ||
	    pthread_create(&t, NULL, raiser, NULL) || pthread_join(t, NULL))
		return 3;
	if (handler_allocs) {
		fprintf(stderr, "%s from a handler: %d allocation(s)\n", name,
			handler_allocs);
		return 1;
	}
	return 0;
}

/*
 * A thread's first count in the ledger, from a signal handler: the
 * handler gives back a resource another thread took (a floating node it
 * frees, a node it releases from a device it can lock), on a thread that
 * counted nothing before. The thread is new and does nothing else
 * (raises the signal on itself), or loops in devres_ledger_snapshot()
 * while signals come, or is ending (its key destructors, the ledger's
 * giving its tally back): the handler allocates nothing and waits for
 * nothing, and the ledger is exact once the threads are gone. Each cell
 * runs in a process of its own under an alarm, so that one waiting for
 * ever fails alone.
 */
enum lcell {
	L_FREE,
	L_RELEASE,
	L_SNAPSHOT,
	L_EXIT,
	NR_LCELLS
};

static const char *const lcell_name[NR_LCELLS] = {
	"ledger-first-free",
	"ledger-first-release",
	"ledger-first-in-snapshot",
	"ledger-first-at-exit",
};

/* Threads a cell runs its handlers on, one after the other. */
static const int lcell_threads[NR_LCELLS] = { 1, 1, 20, 50 };

#define LNODES 4096
#define LSIZE 24

static enum lcell lcell;
static struct device ldev;
static void *lnode[LNODES];
static struct device lborn[LNODES]; /* initialized at a thread's end */
static int lnext;		    /* the next node to give back */
static int lhandled;		    /* handlers that ran */
static int lmark;     /* lhandled as the thread of the moment started */
static pid_t lvictim; /* the thread to signal, 0 when none */
static int lstop;
static __thread bool leaving; /* this thread has returned */

static void ldev_release(struct device *dev)
{
	(void)dev;
}

static void lnode_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int lmatch(struct device *dev, void *res, void *data)
{
	(void)dev;
	return res == data;
}

/*
 * Gives back one of the nodes made in advance: one count of the ledger.
 * At a thread's end, a device initialized instead: its node cache is
 * gone by then, and a node's chunk would go to free(), which is the
 * cache's (ThreadSanitizer reports it), not the ledger's.
 */
static void give_one(void)
{
	int i = __atomic_fetch_add(&lnext, 1, __ATOMIC_RELAXED);

	if (i >= LNODES)
		return;
	if (lcell == L_EXIT)
		device_initialize(&lborn[i]);
	else if (lcell == L_RELEASE)
		(void)devres_release(&ldev, lnode_release, lmatch, lnode[i]);
	else
		devres_free(lnode[i]);
}

static void on_ledger_signal(int sig)
{
	int err = errno;

	(void)sig;
	__atomic_store_n(&in_handler, 1, __ATOMIC_RELAXED);
	give_one();
	__atomic_store_n(&in_handler, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&lhandled, 1, __ATOMIC_RELAXED);
	errno = err;
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
static __thread bool hooked; /* free() raised the signal */

void __libc_free(void *p); /* NOLINT(bugprone-reserved-identifier) */

/*
 * An ending thread's first free() (a key destructor's, as the ledger's
 * gives back what it had) raises the signal there, once: the handler
 * runs inside the thread's end for certain, not only when a signal from
 * the other thread happens to come then.
 */
void free(void *p)
{
	if (leaving && !hooked) {
		hooked = true;
		(void)raise(SIGUSR1);
	}
	__libc_free(p);
}
#endif

static void *lthread(void *arg)
{
	struct devres_ledger l;
	sigset_t usr1;

	(void)arg;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	switch (lcell) {
	case L_FREE:
	case L_RELEASE:
		(void)raise(SIGUSR1);
		break;
	case L_SNAPSHOT:
		__atomic_store_n(&lvictim, (pid_t)syscall(SYS_gettid),
				 __ATOMIC_RELEASE);
		while (__atomic_load_n(&lhandled, __ATOMIC_ACQUIRE) == lmark)
			devres_ledger_snapshot(&l);
		/* The next signal is not for its end. */
		(void)pthread_sigmask(SIG_BLOCK, &usr1, NULL);
		break;
	default:
		/* A count of its own, so that it has a tally to give back. */
		give_one();
		leaving = true;
		__atomic_store_n(&lvictim, (pid_t)syscall(SYS_gettid),
				 __ATOMIC_RELEASE);
		break;
	}
	return NULL;
}

/* Signals the victim of the moment, every few microseconds. */
static void *signaller(void *arg)
{
	struct timespec ts = { 0, 2000 };

	(void)arg;
	while (!__atomic_load_n(&lstop, __ATOMIC_ACQUIRE)) {
		pid_t tid = __atomic_load_n(&lvictim, __ATOMIC_ACQUIRE);

		if (tid)
			(void)syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
		(void)nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Whether the ledger moved by @given counts of the cell's kind. */
static bool exact(const struct devres_ledger *before,
		  const struct devres_ledger *after, int given)
{
	if (lcell == L_EXIT)
		return after->devices == before->devices + given;
	return after->nodes == before->nodes - given &&
	       after->node_bytes == before->node_bytes - (long)given * LSIZE;
}

static int ledger_child(const char *name)
{
	struct sigaction sa = { .sa_handler = on_ledger_signal };
	struct devres_ledger before, after;
	pthread_t t, sig;
	int threads, given;

	for (lcell = 0; lcell < NR_LCELLS; lcell++)
		if (!strcmp(lcell_name[lcell], name))
			break;
	if (lcell == NR_LCELLS)
		return 2;
	(void)alarm(20);
	count_allocs();
	ldev.release = ldev_release;
	device_initialize(&ldev);
	for (int i = 0; i < LNODES; i++) {
		lnode[i] = devres_alloc(lnode_release, LSIZE, GFP_KERNEL);
		if (!lnode[i])
			return 3;
		if (lcell == L_RELEASE)
			devres_add(&ldev, lnode[i]);
	}
	devres_ledger_snapshot(&before);
	threads = lcell_threads[lcell];
	if (sigaction(SIGUSR1, &sa, NULL) ||
	    pthread_create(&sig, NULL, signaller, NULL))
		return 3;
	for (int i = 0; i < threads; i++) {
		lmark = __atomic_load_n(&lhandled, __ATOMIC_ACQUIRE);
		if (pthread_create(&t, NULL, lthread, NULL) ||
		    pthread_join(t, NULL))
			return 3;
		__atomic_store_n(&lvictim, 0, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&lstop, 1, __ATOMIC_RELEASE);
	if (pthread_join(sig, NULL))
		return 3;
	(void)alarm(0);
	if (lcell != L_EXIT && lhandled < threads) {
		fprintf(stderr, "%s: %d handler(s) for %d thread(s)\n", name,
			lhandled, threads);
		return 1;
	}
	if (handler_allocs) {
		fprintf(stderr, "%s: %d allocation(s) in handlers\n", name,
			handler_allocs);
		return 1;
	}
	given = __atomic_load_n(&lnext, __ATOMIC_RELAXED);
	if (given > LNODES)
		given = LNODES;
	devres_ledger_snapshot(&after);
	if (!exact(&before, &after, given)) {
		fprintf(stderr,
			"%s: %d counted, nodes %ld -> %ld, devices %ld -> "
			"%ld\n",
			name, given, before.nodes, after.nodes, before.devices,
			after.devices);
		return 1;
	}
	return 0;
}

static void run_cell(void **state)
{
	const char *name = *state;
	char *err = NULL;
	int status = run_self(NULL, &err,
			      strncmp(name, "ledger-", 7) ? "--first-call"
							  : "--ledger",
			      name, NULL);

	if (status)
		print_error("%s: exit %d: %s", name, status, err ? err : "");
	free(err);
	assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
	struct CMUnitTest tests[NR_CALLS + NR_LCELLS];

	if (argc > 2 && !strcmp(argv[1], "--first-call"))
		return child(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "--ledger"))
		return ledger_child(argv[2]);
	for (int c = 0; c < NR_CALLS; c++)
		tests[c] = (struct CMUnitTest){
			.name = call_name[c],
			.test_func = run_cell,
			.initial_state = (void *)call_name[c],
		};
	for (int c = 0; c < NR_LCELLS; c++)
		tests[NR_CALLS + c] = (struct CMUnitTest){
			.name = lcell_name[c],
			.test_func = run_cell,
			.initial_state = (void *)lcell_name[c],
		};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
