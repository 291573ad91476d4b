/* SPDX-License-Identifier: MIT */
/*
 * What the tests that fork() from a busy threaded parent share: which
 * sanitizer runs, whether a child may start threads, the workers' park
 * while the parent forks, the wait for threads still ending, and the check
 * that ends a failing child.
 *
 * It defines __tsan_default_options(): include it in one file of a
 * program, after _GNU_SOURCE.
 */
#ifndef DEVRES_TESTS_FORK_PARK_H
#define DEVRES_TESTS_FORK_PARK_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testlib.h"

/*
 * ThreadSanitizer keeps the parent's threads in its registry in a child
 * and aborts when a new thread gets the id of one of them ("dup thread"):
 * under it, children start no thread; the parent's side of fork() is
 * still checked.
 */
#ifdef T_TSAN
#define CHILD_THREADS 0
#else
#define CHILD_THREADS 1
#endif

/* Children of a threaded parent may start threads (the irq dispatcher). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

/*
 * The sanitizers' allocators (GCC 12) are not held across fork(): a child
 * forked while another thread allocates deadlocks in its first malloc()
 * (seen under TSan: the child waits forever on the allocator's size-class
 * lock). Under them the workers park between two of their rounds while
 * the parent forks; the dev build forks while they run.
 */
#if defined(T_ASAN) || defined(T_TSAN)
#define FORK_PARK 1
#else
#define FORK_PARK 0
#endif

/* The parent asks the workers to park; they count themselves parked. */
static int fork_park_asked, fork_parked;

/* A worker, between two of its rounds: parks while the parent asks. */
static inline void fork_park_point(void)
{
	if (!FORK_PARK || !__atomic_load_n(&fork_park_asked, __ATOMIC_ACQUIRE))
		return;
	__atomic_add_fetch(&fork_parked, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&fork_park_asked, __ATOMIC_ACQUIRE))
		usleep(100);
	__atomic_sub_fetch(&fork_parked, 1, __ATOMIC_ACQ_REL);
}

/* The parent, before fork(): waits until all @nworkers are parked. */
static inline void fork_park_all(int nworkers)
{
	if (!FORK_PARK)
		return;
	__atomic_store_n(&fork_park_asked, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&fork_parked, __ATOMIC_ACQUIRE) < nworkers)
		usleep(100);
}

/*
 * Whether every thread of the process but the caller sleeps (state S in
 * /proc/self/task/<tid>/stat): none is starting, ending, or inside the
 * sanitizer's allocator, whose locks are only held while running.
 */
static inline bool fork_park_others_asleep(void)
{
	char path[300], buf[256];
	pid_t self = gettid();
	bool asleep = true;
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return false;
	while (asleep && (e = readdir(d)) != NULL) {
		const char *st;
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* ended since the listing */
		st = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		asleep = st && st[1] == ' ' && st[2] == 'S';
		fclose(f);
	}
	closedir(d);
	return asleep;
}

/*
 * The parent, before fork() and after fork_park_all(): waits until the
 * process has at most @nthreads threads and all of them but the caller
 * sleep. A thread the library started for a worker (a work item's, one
 * that served an interrupt) may still be starting or ending when its
 * worker parks, and a thread's start and end allocate and free in the
 * sanitizer's runtime: the fork waits until such threads are gone or
 * waiting. False when that is not so after about ten seconds.
 */
static inline bool fork_park_settle(int nthreads)
{
	for (int i = 0; FORK_PARK && i < 100000; i++) {
		if (count_entries("/proc/self/task") <= nthreads &&
		    fork_park_others_asleep())
			return true;
		usleep(100);
	}
	return !FORK_PARK;
}

/*
 * The parent, after fork(): lets the workers go, and waits until each has
 * left the park, so that the next fork_park_all() counts only workers
 * that parked for it (one still on its way out would be counted parked
 * while it already runs again).
 */
static inline void fork_park_release(void)
{
	__atomic_store_n(&fork_park_asked, 0, __ATOMIC_RELEASE);
	while (FORK_PARK && __atomic_load_n(&fork_parked, __ATOMIC_ACQUIRE))
		usleep(100);
}

/* In a child: a failed check ends it with exit status 1, naming the line. */
#define CHILD_CHECK(x)                                                         \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "child: %s:%d: %s\n", __FILE__,        \
				__LINE__, #x);                                 \
			_exit(1);                                              \
		}                                                              \
	} while (0)

#endif /* DEVRES_TESTS_FORK_PARK_H */
