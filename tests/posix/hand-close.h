/* SPDX-License-Identifier: MIT */
/*
 * A test's close of a descriptor by hand, racing the library's use or
 * close of the same number. ThreadSanitizer's close() interceptor runs
 * before the library's and marks the number closed (a write to it) even
 * when the library then refuses the call, and before the library takes
 * its table's lock to order the call against its own close: a race
 * ThreadSanitizer cannot see ordered, or of a close that never happened.
 * The reports of the hand closes alone (hand_close(), hand_close_range(),
 * hand_dup2(), hand_dup3()) are left out; the library's table, lock and counters stay watched.
 *
 * It defines __tsan_default_suppressions(): include it in one file of a
 * program, after _GNU_SOURCE. twin_of() finds a managed descriptor's
 * twin, the number a close by hand moves or waits for.
 */
#ifndef DEVRES_TESTS_HAND_CLOSE_H
#define DEVRES_TESTS_HAND_CLOSE_H

#include <unistd.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>

const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:hand_close\n"
	       "race:hand_dup\n";
}

/* Not inlined: the suppression finds the call by its frame. */
static __attribute__((noinline, unused)) int hand_close(int fd)
{
	return close(fd);
}

static __attribute__((noinline, unused)) int
hand_close_range(unsigned int first, unsigned int last, int flags)
{
	return close_range(first, last, flags);
}

static __attribute__((noinline, unused)) int hand_dup2(int oldfd, int newfd)
{
	return dup2(oldfd, newfd);
}

static __attribute__((noinline, unused)) int hand_dup3(int oldfd, int newfd,
						       int flags)
{
	return dup3(oldfd, newfd, flags);
}

/*
 * The other number on @fd's open file: the library's twin of a managed
 * descriptor, which a close by hand of its number moves; -1 if none.
 */
static __attribute__((unused)) int twin_of(int fd)
{
	pid_t pid = getpid();

	for (int n = 0; n < 1024; n++)
		if (n != fd &&
		    syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, n) == 0)
			return n;
	return -1;
}

#endif
