// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * The library's own anonymous-inode descriptors (eventfds, epolls)
 * released past every call the library interposes, then taken by another
 * owner whose file is of the same kind: every eventfd and epoll of the
 * system shares one inode, so their device and inode cannot tell the
 * other owner's from the library's. Each kind x each way x each other
 * file: the library then uses the number (an interrupt raised, a handler
 * requested and freed, the line destroyed, the thread stopped); it may
 * fail, with at most one WARN, but must neither write into the other
 * owner's file (an eventfd's count, an epoll's set) nor close it, nor
 * hang.
 *
 * The irq dispatcher's epoll and wake eventfd are the process's: each of
 * their cells runs in a child of its own (test-hostile-raw-disp.c builds
 * this file with RAW_ANON_DISP for them). There the dispatcher must go
 * on after it (an interrupt delivered, a line requested and its
 * interrupt delivered, every handler freed: the dispatcher stopped).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/wait.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "raw-own.h"

/* Where the test keeps its reference to the other owner's file. */
#define KEEP_FD 900

/* ---- the other owner's files ---- */

static int make_eventfd(void)
{
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static int make_epoll(void)
{
	return epoll_create1(EPOLL_CLOEXEC);
}

struct other {
	const char *name;
	int (*make)(void);
	bool epoll;
};

static const struct other others[] = {
	{ "an eventfd", make_eventfd, false },
	{ "an epoll", make_epoll, true },
};

static const struct other *cur_other;

/* The other owner's file at number @want; its reference at KEEP_FD. */
static void other_at(int want)
{
	int fd = cur_other->make();

	assert_true(fd >= 0);
	if (fd != want) {
		assert_int_equal(syscall(SYS_dup3, fd, want, O_CLOEXEC), want);
		assert_int_equal(syscall(SYS_close, fd), 0);
	}
	assert_int_equal(syscall(SYS_dup3, want, KEEP_FD, O_CLOEXEC), KEEP_FD);
}

/* Whether the fdinfo of @fd has a line starting with @key. */
static bool fdinfo_has(int fd, const char *key)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			found = true;
	fclose(f);
	return found;
}

/*
 * The other owner's file is still at @fd, untouched: nothing counted in
 * its eventfd, nothing added to its epoll.
 */
static void other_intact(int fd)
{
	pid_t pid = getpid();
	struct epoll_event ev;
	uint64_t v;

	assert_int_equal(syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, KEEP_FD),
			 0);
	if (cur_other->epoll) {
		assert_false(fdinfo_has(fd, "tfd:"));
		assert_int_equal(epoll_wait(fd, &ev, 1, 0), 0);
	} else {
		assert_int_equal(read(fd, &v, sizeof(v)), -1);
		assert_int_equal(errno, EAGAIN);
	}
}

/* ---- the ways, each ending with the other owner's file at @fd ---- */

static void raw_close(int fd)
{
	assert_int_equal(syscall(SYS_close, fd), 0);
	other_at(fd);
}

static void raw_close_range(int fd)
{
	assert_int_equal(syscall(SYS_close_range, fd, fd, 0), 0);
	other_at(fd);
}

/* The other owner's file put over the number: the dup3 closes it. */
static void raw_dup3(int fd)
{
	int o = cur_other->make();

	assert_true(o >= 0);
	assert_int_equal(syscall(SYS_dup3, o, fd, O_CLOEXEC), fd);
	assert_int_equal(syscall(SYS_close, o), 0);
	assert_int_equal(syscall(SYS_dup3, fd, KEEP_FD, O_CLOEXEC), KEEP_FD);
}

/* glibc's own name for close(), which the library does not interpose. */
extern int __close(int fd); /* NOLINT(bugprone-reserved-identifier) */

static void libc_close(int fd)
{
	assert_int_equal(__close(fd), 0);
	other_at(fd);
}

struct way {
	const char *name;
	void (*call)(int fd);
};

static const struct way ways[] = {
	{ "SYS_close", raw_close },
	{ "SYS_close_range", raw_close_range },
	{ "SYS_dup3", raw_dup3 },
	{ "__close", libc_close },
};

/* ---- the library's own anonymous descriptors ---- */

/* ---- the irq dispatcher's, in a child ---- */

#ifdef RAW_ANON_DISP

static int disp_line, disp_count;

/* The dispatcher started by a handler of a line; its descriptor @what. */
static int make_disp(const char *what)
{
	bool before[MAXFD];

	disp_line = irq_line_create("anon-disp");
	assert_true(disp_line > 0);
	snapshot(before);
	assert_int_equal(request_irq((unsigned int)disp_line, count_irq, 0,
				     "anon-disp", &disp_count),
			 0);
	/* Delivered once: the dispatcher waits on its set now. */
	assert_int_equal(irq_line_raise_wait(disp_line), 0);
	assert_int_equal(disp_count, 1);
	return new_fd(before, what);
}

static int make_disp_epoll(void)
{
	return make_disp("[eventpoll]");
}

static int make_disp_wake(void)
{
	return make_disp("[eventfd]");
}

/*
 * Interrupts still delivered, a line requested since too; every handler
 * freed, which stops the dispatcher (its wake).
 */
static void use_disp(void)
{
	int b = irq_line_create("anon-disp-b"), b_count = 0;

	assert_true(b > 0);
	assert_int_equal(irq_line_raise_wait(disp_line), 0);
	assert_int_equal(disp_count, 2);
	assert_int_equal(request_irq((unsigned int)b, count_irq, 0,
				     "anon-disp-b", &b_count),
			 0);
	assert_int_equal(irq_line_raise_wait(b), 0);
	assert_int_equal(b_count, 1);
	assert_int_equal(irq_line_raise_wait(disp_line), 0);
	assert_int_equal(disp_count, 3);
	free_irq((unsigned int)b, &b_count);
	free_irq((unsigned int)disp_line, &disp_count);
	assert_int_equal(irq_line_destroy(b), 0);
	assert_int_equal(irq_line_destroy(disp_line), 0);
}

#endif

struct own_kind {
	const char *name;
	int (*make)(void);
	void (*use)(void);
	bool child; /* process-wide: in a child */
};

static const struct own_kind kinds[] = {
#ifndef RAW_ANON_DISP
	{ "irq line eventfd", make_line, use_line, false },
	{ "managed thread wake eventfd", make_thread, use_thread, false },
#else
	{ "irq dispatcher epoll", make_disp_epoll, use_disp, true },
	{ "irq dispatcher wake eventfd", make_disp_wake, use_disp, true },
#endif
};

/* ---- the cells ---- */

struct cell {
	const struct own_kind *kind;
	const struct other *other;
	const struct way *way;
	char name[96];
};

static const struct cell *cur;

static void one_cell(const struct cell *c);

static void run_cell(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (!cur->kind->child) {
		one_cell(cur);
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A failed assertion here fails the child's run: exit 1. */
		alarm(30);
		one_cell(cur);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void one_cell(const struct cell *c)
{
	int fd;

	cur_other = c->other;
	fd = c->kind->make();
	assert_true(fd >= 0);
	c->way->call(fd);
	other_intact(fd);
	start_capture();
	c->kind->use();
	/* One WARN at most, naming what the number was. */
	assert_true(cap.n <= 1);
	other_intact(fd);
	assert_int_equal(close(fd), 0);
	assert_int_equal(close(KEEP_FD), 0);
}

static int cell_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

#ifndef GROUP
#define GROUP "hostile-raw-anon"
#endif
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define NR_CELLS (N(kinds) * N(others) * N(ways))

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	for (size_t k = 0; k < N(kinds); k++)
		for (size_t o = 0; o < N(others); o++)
			for (size_t w = 0; w < N(ways); w++, n++) {
				cells[n] = (struct cell){ &kinds[k], &others[o],
							  &ways[w], "" };
				add_cell(&tests[n], &cells[n], run_cell,
					 cell_setup, dev_teardown,
					 "%s #%zu / %s, then %s", kinds[k].name,
					 n, ways[w].name, others[o].name);
			}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests_name(GROUP, tests, NULL, NULL);
}
