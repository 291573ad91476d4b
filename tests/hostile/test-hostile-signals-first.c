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
 */
#define _GNU_SOURCE
#include <stdarg.h>
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
#include <cmocka.h>
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

static void run_cell(void **state)
{
	const char *name = *state;
	char *err = NULL;
	int status = run_self(NULL, &err, "--first-call", name, NULL);

	if (status)
		print_error("%s: exit %d: %s", name, status, err ? err : "");
	free(err);
	assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
	struct CMUnitTest tests[NR_CALLS];

	if (argc > 2 && !strcmp(argv[1], "--first-call"))
		return child(argv[2]);
	for (int c = 0; c < NR_CALLS; c++)
		tests[c] = (struct CMUnitTest){
			.name = call_name[c],
			.test_func = run_cell,
			.initial_state = (void *)call_name[c],
		};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
