/* SPDX-License-Identifier: MIT */
/*
 * What the tests that fork() from a busy threaded parent share: which
 * sanitizer runs, whether a child may start threads, the workers' park
 * while the parent forks, the wait for threads still ending, a timed wait
 * for a thread's signal, the forks of a cell with each child's end
 * checked, a timed wait for a child, and the check that ends a failing
 * child (child-check.h).
 *
 * It defines __tsan_default_options(): include it in one file of a
 * program, after _GNU_SOURCE.
 */
#ifndef DEVRES_TESTS_FORK_PARK_H
#define DEVRES_TESTS_FORK_PARK_H

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testlib.h"
#include "child-check.h"

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

/* Waits @ms for @s: 0, or -1 when it was not posted in time. */
static inline int sem_wait_ms(sem_t *s, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(s, &ts) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/*
 * Waits for the child @pid: 0 when it exited with status 0, else 1, and
 * how it ended is said on stderr after @what.
 */
static inline int child_failed(pid_t pid, const char *what)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		fprintf(stderr, "%s: no child to wait for\n", what);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "%s: child %s %d\n", what,
		WIFEXITED(status) ? "exit status" : "signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 1;
}

/*
 * Forks @forks children one after the other, each waited for before the
 * next (after a millisecond's pause if @pace, so that the parent's
 * threads move between two forks). Returns 0 in each child, with
 * *@in_child set; in the parent, how many children failed (child_failed()).
 */
static inline int fork_children_checked(int forks, bool pace, const char *what,
					bool *in_child)
{
	int bad = 0;

	for (int i = 0; i < forks; i++) {
		pid_t pid;

		if (pace)
			poll(NULL, 0, 1);
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			*in_child = true;
			return 0;
		}
		bad += child_failed(pid, what);
	}
	return bad;
}

/*
 * Waits up to @ms for the child @pid, then kills it: its wait status, or
 * -1 when it had to be killed or there was none.
 */
static inline int child_wait_ms(pid_t pid, int ms)
{
	int st = -1;

	for (int t = 0; t < ms; t += 5) {
		pid_t done = waitpid(pid, &st, WNOHANG);

		if (done == pid)
			return st;
		if (done < 0)
			return -1;
		poll(NULL, 0, 5);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

#endif /* DEVRES_TESTS_FORK_PARK_H */
