// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box timeout=60 */
/*
 * The identity of a mapped range (src/base/maps-id.c), by both of its
 * ways: the PROCMAP_QUERY ioctl() of /proc/self/maps, and the reading of
 * the file it falls back to. One table of layouts (anonymous memory, a
 * memfd at offsets, adjacent mappings of one object at consistent or
 * other offsets, holes, a range partly or not mapped), each with the
 * answer and identity it must get; run in this process, where the
 * kernel answers the ioctl(), then in a child where a seccomp filter
 * refuses it with ENOTTY, as a kernel before 6.11 does. Each way must be
 * the one used (devres__maps_query), and give the table's answers.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "testlib.h"
#include "../src/base/subsys.h"

#define PG 4096ul
#define NPG 8
#define RW (PROT_READ | PROT_WRITE)

static int memfd;
static struct stat mst;
static char *base; /* NPG pages reserved for each layout */

/* The memfd's pages [@pg, +@n) at base page @at. */
static void map_file(int at, int n, long pg, int prot)
{
	void *p = mmap(base + at * PG, n * PG, prot, MAP_SHARED | MAP_FIXED,
		       memfd, pg * (long)PG);

	assert_ptr_equal(p, base + at * PG);
}

static void map_anon(int at, int n)
{
	void *p = mmap(base + at * PG, n * PG, RW,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	assert_ptr_equal(p, base + at * PG);
}

static void unmap(int at, int n)
{
	assert_int_equal(munmap(base + at * PG, n * PG), 0);
}

/* The layouts: each starts from the whole reservation unmapped. */
static void l_anon(void)
{
	map_anon(0, NPG);
}

static void l_file(void)
{
	map_file(0, NPG, 0, RW);
}

static void l_file_at(void)
{
	map_file(0, NPG, 2, RW);
}

/* Two mappings (another protection) of consecutive file pages. */
static void l_file_split(void)
{
	map_file(0, 4, 0, RW);
	map_file(4, 4, 4, PROT_READ);
}

/* Two mappings whose offsets do not follow on. */
static void l_file_jump(void)
{
	map_file(0, 4, 0, RW);
	map_file(4, 4, 6, RW);
}

static void l_file_anon(void)
{
	map_file(0, 4, 0, RW);
	map_anon(4, 4);
}

static void l_hole(void)
{
	map_file(0, NPG, 0, RW);
	unmap(3, 1);
}

static void l_none(void)
{
}

static void l_tail_gone(void)
{
	map_file(0, 5, 0, RW);
}

static void l_head_gone(void)
{
	map_file(2, 6, 2, RW);
}

enum {
	ANON,
	FILE_ID
};

struct layout {
	const char *name;
	void (*make)(void);
	int first, pages; /* the range asked, in pages of base */
	int want;	  /* DEVRES_MAP_* */
	int id;		  /* with _SAME: ANON or FILE_ID */
	long off;	  /* with FILE_ID: the file page at the range's start */
};

static const struct layout layouts[] = {
	{ "anonymous", l_anon, 0, NPG, DEVRES_MAP_SAME, ANON, 0 },
	{ "anonymous, a part", l_anon, 2, 3, DEVRES_MAP_SAME, ANON, 0 },
	{ "memfd", l_file, 0, NPG, DEVRES_MAP_SAME, FILE_ID, 0 },
	{ "memfd, a part", l_file, 3, 2, DEVRES_MAP_SAME, FILE_ID, 3 },
	{ "memfd at page 2, a part", l_file_at, 1, 4, DEVRES_MAP_SAME, FILE_ID,
	  3 },
	{ "memfd in two mappings, offsets on", l_file_split, 2, 4,
	  DEVRES_MAP_SAME, FILE_ID, 2 },
	{ "memfd in two mappings, offsets off", l_file_jump, 2, 4,
	  DEVRES_MAP_OTHER, 0, 0 },
	{ "memfd then anonymous", l_file_anon, 0, NPG, DEVRES_MAP_OTHER, 0, 0 },
	{ "a hole", l_hole, 0, NPG, DEVRES_MAP_OTHER, 0, 0 },
	{ "a hole, the range before it", l_hole, 0, 3, DEVRES_MAP_SAME, FILE_ID,
	  0 },
	{ "nothing", l_none, 0, NPG, DEVRES_MAP_GONE, 0, 0 },
	{ "the tail unmapped", l_tail_gone, 0, NPG, DEVRES_MAP_OTHER, 0, 0 },
	{ "the head unmapped", l_head_gone, 0, NPG, DEVRES_MAP_OTHER, 0, 0 },
	{ "the head unmapped, the range in it", l_head_gone, 0, 2,
	  DEVRES_MAP_GONE, 0, 0 },
};

#define N (sizeof(layouts) / sizeof(layouts[0]))

/* Each layout; the first mismatch's index + 1, or 0. */
static int run_table(void)
{
	for (size_t i = 0; i < N; i++) {
		const struct layout *l = &layouts[i];
		struct devres__map_id id = { 99, 99, 99, 99 };
		int got;

		unmap(0, NPG);
		l->make();
		got = devres__map_identity((uintptr_t)(base + l->first * PG),
					   l->pages * PG, &id);
		if (got != l->want) {
			fprintf(stderr, "%s: got %d, want %d\n", l->name, got,
				l->want);
			return (int)i + 1;
		}
		if (got != DEVRES_MAP_SAME)
			continue;
		if (l->id == ANON
			    ? id.major || id.minor || id.ino || id.off
			    : id.major != major(mst.st_dev) ||
				      id.minor != minor(mst.st_dev) ||
				      id.ino != mst.st_ino ||
				      id.off !=
					      (unsigned long long)l->off * PG) {
			fprintf(stderr, "%s: id %u:%u %lu +%llu\n", l->name,
				id.major, id.minor, id.ino, id.off);
			return (int)i + 1;
		}
	}
	unmap(0, NPG);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memfd = memfd_create("maps-id", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 16 * PG) || fstat(memfd, &mst))
		return -1;
	/* A reservation with a guard page either side, then emptied. */
	base = mmap(NULL, (NPG + 2) * PG, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return -1;
	base += PG;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(base - PG, (NPG + 2) * PG);
	close(memfd);
	return 0;
}

/* The kernel's answers: this kernel has PROCMAP_QUERY (6.11 and up). */
static void by_query(void **state)
{
	(void)state;
	assert_int_equal(run_table(), 0);
	assert_int_equal(devres__maps_query, 1);
}

/* ioctl(PROCMAP_QUERY) refused with ENOTTY, as before 6.11. */
static int refuse_query(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
			 (unsigned int)_IOWR('f', 17, char[104]), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

/* The file read, in a child that may not use the ioctl(). */
static void by_reading(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r;

		if (refuse_query())
			_exit(100);
		r = run_table();
		if (r)
			_exit(r);
		_exit(devres__maps_query == -1 ? 0 : 101);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(by_query),
		cmocka_unit_test(by_reading),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
