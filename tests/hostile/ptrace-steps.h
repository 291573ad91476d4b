/* SPDX-License-Identifier: MIT */
/*
 * The tracer's side of a test that stops a child at one instruction of
 * the library (x86-64): the library's code, the child's registers, its
 * text read and written (a breakpoint). Include after cmocka.h.
 */
#ifndef DEVRES_TESTS_PTRACE_STEPS_H
#define DEVRES_TESTS_PTRACE_STEPS_H

#if defined(__x86_64__)
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <devres/devres.h>

/* The library's code: the executable mapping that holds devres_find(). */
static unsigned long lib_lo, lib_hi;

static unsigned long rip_of(pid_t pid)
{
	struct user_regs_struct r;

	assert_int_equal(ptrace(PTRACE_GETREGS, pid, NULL, &r), 0);
	return r.rip;
}

static void set_rip(pid_t pid, unsigned long rip)
{
	struct user_regs_struct r;

	assert_int_equal(ptrace(PTRACE_GETREGS, pid, NULL, &r), 0);
	r.rip = rip;
	assert_int_equal(ptrace(PTRACE_SETREGS, pid, NULL, &r), 0);
}

static void find_library(void)
{
	unsigned long at = (unsigned long)(uintptr_t)&devres_find, lo, hi;
	char line[512], perm[8];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) == 3 &&
		    perm[2] == 'x' && lo <= at && at < hi) {
			lib_lo = lo;
			lib_hi = hi;
		}
	fclose(f);
	assert_true(lib_lo && lib_hi);
}

static long peek(pid_t pid, unsigned long at)
{
	long w;

	errno = 0;
	w = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, NULL);
	assert_int_equal(errno, 0);
	return w;
}

static void poke(pid_t pid, unsigned long at, long w)
{
	assert_int_equal(ptrace(PTRACE_POKETEXT, pid, (void *)at, (void *)w),
			 0);
}

/* A byte of the child's text, written while it runs (not stopped). */
static void poke_running(pid_t pid, unsigned long at, unsigned char b)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &b, 1, (off_t)at), 1);
	close(fd);
}

#endif /* __x86_64__ */
#endif
