// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every kind of managed mapping the process's table holds (devm_mmap(),
 * devm_ioremap(), devm_ioremap_wc(), pcim_iomap() of a fake PCI
 * function's BAR, a dmam_alloc_coherent() buffer, a chunk of a
 * dmam_pool_create() pool) times every call that keeps a mapping mapped
 * but may change what it holds or who may touch it: madvise(2) with each
 * advice, posix_madvise(3) (glibc passes it any advice but
 * POSIX_MADV_DONTNEED, which it ignores), process_madvise(2) on this process, mprotect(2) and
 * pkey_mprotect(2) with each protection, remap_file_pages(2). Each over
 * three ranges: the whole mapping, its first page, and two pages across
 * its edge (one of them its, the other the test's own).
 *
 * Each cell writes a pattern over the mapping, makes the call, and checks:
 *   refused  the call failed with its errno (EPERM; EINVAL for
 *            remap_file_pages()), one WARN naming the device, the call
 *            and the managed call, the node still on the device, and
 *            every byte of the pattern still there;
 *   passed   the call returned what the system call itself returns over
 *            the same range (made first, raw, as the reference), no WARN.
 * Then the device is released without a WARN, and the fixture checks the
 * ledger is back at its baseline. One more test: mremap(2) with
 * MREMAP_DONTUNMAP, which empties the range it leaves mapped, is caught
 * as a move (the node taken off, one WARN); and process_madvise(2) with
 * another process's pidfd, or a vector at a bad address: no WARN, what
 * the system call answers. MADV_HWPOISON and MADV_SOFT_OFFLINE are
 * refused too, but not made here: a privileged run that got past the
 * refusal would poison or offline a page of the machine.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "io/iotest.h"
#include "misuse/maps-fixture.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

/* What a cell acquired. */
struct res {
	char *p;
	dma_addr_t handle;
	struct dma_pool *pool;
};

struct kind {
	const char *call; /* the managed call, in the WARN */
	bool touched;	  /* the library reads or writes through it */
	bool pci;	  /* on the fake PCI function, not test-dev */
	void (*acquire)(struct res *r);
	void (*release)(struct res *r); /* the managed release */
};

static void devm_mmap_acq(struct res *r)
{
	r->p = devm_mmap(&tdev, NULL, len, RW, ANON, -1, 0);
	assert_false(IS_ERR(r->p));
}

static void devm_mmap_rel(struct res *r)
{
	devm_munmap(&tdev, r->p, len);
}

static void devm_ioremap_acq(struct res *r)
{
	r->p = devm_ioremap(&tdev, WIN, len);
}

static void devm_ioremap_wc_acq(struct res *r)
{
	r->p = devm_ioremap_wc(&tdev, WIN, len);
}

static void devm_iounmap_rel(struct res *r)
{
	devm_iounmap(&tdev, r->p);
}

static void pcim_iomap_acq(struct res *r)
{
	r->p = pcim_iomap(pdev, 0, 0);
}

static void pcim_iomap_rel(struct res *r)
{
	pcim_iounmap(pdev, r->p);
}

static void dmam_alloc_coherent_acq(struct res *r)
{
	r->p = dmam_alloc_coherent(&tdev, len, &r->handle, GFP_KERNEL);
}

static void dmam_free_coherent_rel(struct res *r)
{
	dmam_free_coherent(&tdev, len, r->p, r->handle);
}

/* One block a chunk: the chunk is the block's two pages. */
static void dmam_pool_acq(struct res *r)
{
	r->pool = dmam_pool_create("advise", &tdev, len, pg, 0);
	assert_non_null(r->pool);
	r->p = dma_pool_alloc(r->pool, GFP_KERNEL, &r->handle);
}

static void dmam_pool_rel(struct res *r)
{
	dma_pool_free(r->pool, r->p, r->handle);
	dmam_pool_destroy(r->pool);
	r->pool = NULL;
}

static const struct kind kinds[] = {
	{ "devm_mmap", false, false, devm_mmap_acq, devm_mmap_rel },
	{ "devm_ioremap", true, false, devm_ioremap_acq, devm_iounmap_rel },
	{ "devm_ioremap_wc", true, false, devm_ioremap_wc_acq,
	  devm_iounmap_rel },
	{ "pcim_iomap", true, true, pcim_iomap_acq, pcim_iomap_rel },
	{ "dmam_alloc_coherent", true, false, dmam_alloc_coherent_acq,
	  dmam_free_coherent_rel },
	{ "dmam_pool_create", true, false, dmam_pool_acq, dmam_pool_rel },
};
#define NR_KINDS (sizeof(kinds) / sizeof(kinds[0]))

enum call {
	MADVISE,
	PMADVISE,
	MPROTECT,
	PKEY_MPROTECT,
	REMAP,
	POSIX_MADVISE
};

static const char *const call_name[] = { "madvise",	     "process_madvise",
					 "mprotect",	     "pkey_mprotect",
					 "remap_file_pages", "posix_madvise" };

/* What a cell does: a call and its advice or protection. */
struct op {
	const char *name;
	enum call call;
	int arg;
	/* Refused over every kind, or over those the library touches. */
	enum {
		PASS,
		REFUSE,
		REFUSE_TOUCHED
	} rule;
};

static const struct op ops[] = {
	{ "MADV_DONTNEED", MADVISE, MADV_DONTNEED, REFUSE },
	{ "MADV_DONTNEED_LOCKED", MADVISE, MADV_DONTNEED_LOCKED, REFUSE },
	{ "MADV_FREE", MADVISE, MADV_FREE, REFUSE },
	{ "MADV_REMOVE", MADVISE, MADV_REMOVE, REFUSE },
	{ "MADV_DONTFORK", MADVISE, MADV_DONTFORK, PASS },
	{ "MADV_WIPEONFORK", MADVISE, MADV_WIPEONFORK, PASS },
	{ "MADV_GUARD_INSTALL", MADVISE, MADV_GUARD_INSTALL, REFUSE },
	{ "process MADV_DONTNEED", PMADVISE, MADV_DONTNEED, REFUSE },
	{ "process MADV_GUARD_INSTALL", PMADVISE, MADV_GUARD_INSTALL, REFUSE },
	{ "posix MADV_FREE", POSIX_MADVISE, MADV_FREE, REFUSE },
	{ "posix MADV_REMOVE", POSIX_MADVISE, MADV_REMOVE, REFUSE },
	{ "posix MADV_DONTNEED_LOCKED", POSIX_MADVISE, MADV_DONTNEED_LOCKED,
	  REFUSE },
	{ "posix MADV_GUARD_INSTALL", POSIX_MADVISE, MADV_GUARD_INSTALL,
	  REFUSE },
	/* Ignored by glibc: nothing dropped, nothing to refuse. */
	{ "POSIX_MADV_DONTNEED", POSIX_MADVISE, POSIX_MADV_DONTNEED, PASS },
	{ "POSIX_MADV_WILLNEED", POSIX_MADVISE, POSIX_MADV_WILLNEED, PASS },
	{ "POSIX_MADV_RANDOM", POSIX_MADVISE, POSIX_MADV_RANDOM, PASS },
	{ "remap_file_pages", REMAP, 0, REFUSE },
	{ "PROT_NONE", MPROTECT, PROT_NONE, REFUSE_TOUCHED },
	{ "PROT_READ", MPROTECT, PROT_READ, REFUSE_TOUCHED },
	{ "PROT_WRITE", MPROTECT, PROT_WRITE, REFUSE_TOUCHED },
	{ "pkey PROT_READ", PKEY_MPROTECT, PROT_READ, REFUSE_TOUCHED },
	{ "MADV_NORMAL", MADVISE, MADV_NORMAL, PASS },
	{ "MADV_RANDOM", MADVISE, MADV_RANDOM, PASS },
	{ "MADV_SEQUENTIAL", MADVISE, MADV_SEQUENTIAL, PASS },
	{ "MADV_WILLNEED", MADVISE, MADV_WILLNEED, PASS },
	{ "MADV_DOFORK", MADVISE, MADV_DOFORK, PASS },
	{ "MADV_KEEPONFORK", MADVISE, MADV_KEEPONFORK, PASS },
	{ "MADV_MERGEABLE", MADVISE, MADV_MERGEABLE, PASS },
	{ "MADV_UNMERGEABLE", MADVISE, MADV_UNMERGEABLE, PASS },
	{ "MADV_HUGEPAGE", MADVISE, MADV_HUGEPAGE, PASS },
	{ "MADV_NOHUGEPAGE", MADVISE, MADV_NOHUGEPAGE, PASS },
	{ "MADV_DONTDUMP", MADVISE, MADV_DONTDUMP, PASS },
	{ "MADV_DODUMP", MADVISE, MADV_DODUMP, PASS },
	{ "MADV_COLD", MADVISE, MADV_COLD, PASS },
	{ "MADV_PAGEOUT", MADVISE, MADV_PAGEOUT, PASS },
	{ "MADV_POPULATE_READ", MADVISE, MADV_POPULATE_READ, PASS },
	{ "MADV_POPULATE_WRITE", MADVISE, MADV_POPULATE_WRITE, PASS },
	{ "MADV_COLLAPSE", MADVISE, MADV_COLLAPSE, PASS },
	{ "process MADV_WILLNEED", PMADVISE, MADV_WILLNEED, PASS },
	{ "process MADV_COLD", PMADVISE, MADV_COLD, PASS },
	{ "PROT_READ|PROT_WRITE", MPROTECT, RW, PASS },
	{ "pkey PROT_READ|PROT_WRITE", PKEY_MPROTECT, RW, PASS },
};
#define NR_OPS (sizeof(ops) / sizeof(ops[0]))

enum range {
	WHOLE,
	PART,
	STRADDLE,
	NR_RANGES
};

/* The call, by hand (raw: the system call itself, for the reference). */
static long make(const struct op *o, char *a, size_t n, bool raw)
{
	struct iovec iov = { a, n };
	long r;
	int pidfd;

	switch (o->call) {
	case MADVISE:
		return raw ? syscall(SYS_madvise, a, n, o->arg)
			   : madvise(a, n, o->arg);
	case PMADVISE:
		pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		assert_true(pidfd >= 0);
		r = raw ? syscall(SYS_process_madvise, pidfd, &iov, 1, o->arg,
				  0)
			: process_madvise(pidfd, &iov, 1, o->arg, 0);
		if (r < 0) {
			int e = errno;

			close(pidfd);
			errno = e;
			return r;
		}
		close(pidfd);
		return r;
	case MPROTECT:
		return raw ? syscall(SYS_mprotect, a, n, o->arg)
			   : mprotect(a, n, o->arg);
	case PKEY_MPROTECT:
		return raw ? syscall(SYS_pkey_mprotect, a, n, o->arg, -1)
			   : pkey_mprotect(a, n, o->arg, -1);
	case REMAP:
		return raw ? syscall(SYS_remap_file_pages, a, n, 0, 0, 0)
			   : remap_file_pages(a, n, 0, 0, 0);
	case POSIX_MADVISE:
		/* The error number returned: as the others, -1 and errno. */
		if (raw && o->arg == POSIX_MADV_DONTNEED)
			return 0;
		if (raw)
			return syscall(SYS_madvise, a, n, o->arg);
		r = posix_madvise(a, n, o->arg);
		if (r)
			errno = (int)r;
		return r ? -1 : 0;
	}
	return -1;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(0x5a ^ (i * 7));
}

/*
 * A page of the test's own next to @p's mapping, for the straddling
 * range: before its first page (mappings grow down, so that one is
 * usually free), else after its last; NULL when both are taken. *@ret_a
 * is where the range starts.
 */
static char *page_beside(char *p, char **ret_a)
{
	char *at[2] = { p - pg, p + len };

	for (int i = 0; i < 2; i++) {
		char *q =
			mmap(at[i], pg, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0);

		/* Where it is not known (valgrind) it is a hint. */
		if (q != MAP_FAILED && q != at[i])
			assert_int_equal(munmap(q, pg), 0);
		if (q == at[i]) {
			*ret_a = i ? p + len - pg : q;
			return q;
		}
	}
	return NULL;
}

#define MAX_PLUGS 64

/*
 * Acquires @k's mapping where a page beside it is free. The system puts
 * a new mapping in the first gap it fits, and that gap may be exactly as
 * long (others' mappings on both sides, as under a sanitizer's layout):
 * then the mapping is given back by its managed call, the gap plugged
 * with an inaccessible mapping of the test's own, and the acquisition
 * made again. The plugs go when the cell is done.
 */
static char *acquire_beside(const struct kind *k, struct res *r, char **ret_a,
			    char **plugs, int *nr_plugs)
{
	for (;;) {
		char *after;

		k->acquire(r);
		assert_non_null(r->p);
		after = page_beside(r->p, ret_a);
		if (after)
			return after;
		if (*nr_plugs == MAX_PLUGS)
			fail_msg("no free page beside %d mappings", MAX_PLUGS);
		k->release(r);
		plugs[*nr_plugs] = mmap(r->p, len, PROT_NONE,
					ANON | MAP_FIXED_NOREPLACE, -1, 0);
		assert_ptr_equal(plugs[*nr_plugs], r->p);
		(*nr_plugs)++;
	}
}

struct cell {
	const struct kind *k;
	const struct op *o;
	char name[80];
};

static void run_range(const struct cell *c, enum range rg)
{
	struct device *mine = c->k->pci ? &pdev->dev : &tdev;
	bool refused = c->o->rule == REFUSE ||
		       (c->o->rule == REFUSE_TOUCHED && c->k->touched);
	struct devres_stats st;
	char reason[96];
	char *a, *after = NULL; /* the page beside it */
	struct res r = { 0 };
	char *plugs[MAX_PLUGS];
	size_t n = len;
	long ret, want = 0;
	int err, want_err = 0;
	int nodes, nr_plugs = 0;

	a = NULL;
	if (rg == STRADDLE) {
		after = acquire_beside(c->k, &r, &a, plugs, &nr_plugs);
		n = 2 * pg;
	} else {
		c->k->acquire(&r);
		assert_non_null(r.p);
		a = r.p;
		if (rg == PART)
			n = pg;
	}
	for (size_t i = 0; i < len; i++)
		r.p[i] = (char)pattern(i);
	if (!refused) {
		errno = 0;
		want = make(c->o, a, n, true);
		want_err = want < 0 ? errno : 0;
	}
	devres_get_stats(mine, &st);
	nodes = st.allocs;
	start_capture();
	errno = 0;
	ret = make(c->o, a, n, false);
	err = ret < 0 ? errno : 0;
	if (refused) {
		snprintf(reason, sizeof(reason),
			 "acquired with %s(): ", c->k->call);
		expect_warn_on(dev_name(mine), call_name[c->o->call], reason);
		assert_int_equal(ret, -1);
		assert_int_equal(err, c->o->call == REMAP ? EINVAL : EPERM);
		devres_get_stats(mine, &st);
		assert_int_equal(st.allocs, nodes);
	} else {
		expect_no_warn();
		assert_int_equal(ret, want);
		assert_int_equal(err, want_err);
		/* Read it back below. */
		if (c->o->call == MPROTECT || c->o->call == PKEY_MPROTECT)
			assert_int_equal(syscall(SYS_mprotect, a, n, RW), 0);
	}
	/*
	 * Refused: nothing changed. Passed: nothing here drops contents
	 * either (each passed advice keeps them).
	 */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)r.p[i] != pattern(i))
			fail_msg("byte %zu changed: %#x", i,
				 (unsigned char)r.p[i]);
	if (r.pool)
		dma_pool_free(r.pool, r.p, r.handle);
	start_capture();
	devres_release_all(mine);
	expect_no_warn();
	devres_get_stats(mine, &st);
	assert_int_equal(st.allocs, 0);
	if (after)
		assert_int_equal(munmap(after, pg), 0);
	while (nr_plugs)
		assert_int_equal(munmap(plugs[--nr_plugs], len), 0);
}

/*
 * Whether the system makes the call at all: valgrind 3.19 knows neither
 * pidfd_open(2) nor MREMAP_DONTUNMAP. A cell it cannot run is reported
 * skipped (cmocka says so), never passed.
 */
static bool have_pidfd(void)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static bool have_dontunmap(void)
{
	char *p = mmap(NULL, pg, RW, ANON, -1, 0), *q;

	assert_ptr_not_equal(p, MAP_FAILED);
	q = mremap(p, pg, pg, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	if (q != MAP_FAILED)
		assert_int_equal(munmap(q, pg), 0);
	assert_int_equal(munmap(p, pg), 0);
	return q != MAP_FAILED;
}

static void run_cell(void **state)
{
	const struct cell *c = *state;

	if (c->o->call == PMADVISE && !have_pidfd()) {
		print_message("pidfd_open(2) not available here\n");
		skip();
	}

	for (enum range rg = 0; rg < NR_RANGES; rg++)
		run_range(c, rg);
}

/*
 * mremap(2) with MREMAP_DONTUNMAP and the same length moves the pages and
 * leaves the old range mapped, empty: a move, caught as one (the node
 * taken off, one WARN); the release then leaves both ranges alone.
 */
static void dontunmap(void **state)
{
	struct devres_stats st;
	struct res r = { 0 };
	unsigned char vec[2];
	char *q;

	(void)state;
	if (!have_dontunmap()) {
		print_message("MREMAP_DONTUNMAP not available here\n");
		skip();
	}
	devm_mmap_acq(&r);
	for (size_t i = 0; i < len; i++)
		r.p[i] = (char)pattern(i);
	start_capture();
	q = mremap(r.p, len, len, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	assert_ptr_not_equal(q, MAP_FAILED);
	expect_warn_on("test-dev", "mremap",
		       "acquired with devm_mmap(): use devm_munmap()");
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal((unsigned char)q[i], pattern(i));
	start_capture();
	devres_release_all(&tdev);
	expect_no_warn();
	/* Still mapped, now empty: the caller's, not the device's. */
	assert_int_equal(mincore(r.p, len, vec), 0);
	assert_int_equal(r.p[0], 0);
	assert_int_equal(munmap(r.p, len), 0);
	assert_int_equal(munmap(q, len), 0);
}

/*
 * process_madvise(2) looks only at this process's ranges: with another
 * process's pidfd (a child, whose copy of the mapping is its own) it
 * goes on without a WARN and returns what the system call does; and a
 * vector at a bad address fails with EFAULT, as the call would, instead
 * of faulting in the library.
 */
static void pmadvise_other(void **state)
{
	struct res r = { 0 };
	struct iovec iov;
	int pipefd[2], pidfd, err, want_err;
	long ret, want;
	pid_t child;
	char c;

	(void)state;
	if (!have_pidfd()) {
		print_message("pidfd_open(2) not available here\n");
		skip();
	}
	devm_mmap_acq(&r);
	iov = (struct iovec){ r.p, len };
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		/* Waits for the parent to close its end. */
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);
		_exit(0);
	}
	close(pipefd[0]);
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	assert_true(pidfd >= 0);
	errno = 0;
	want = syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_DONTNEED, 0);
	want_err = want < 0 ? errno : 0;
	start_capture();
	errno = 0;
	ret = process_madvise(pidfd, &iov, 1, MADV_DONTNEED, 0);
	err = ret < 0 ? errno : 0;
	expect_no_warn();
	assert_int_equal(ret, want);
	assert_int_equal(err, want_err);
	close(pidfd);
	close(pipefd[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);

	pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	assert_true(pidfd >= 0);
	start_capture();
	errno = 0;
	ret = process_madvise(pidfd, (const struct iovec *)16, 1, MADV_DONTNEED,
			      0);
	err = errno;
	expect_no_warn();
	assert_int_equal(ret, -1);
	assert_int_equal(err, EFAULT);
	close(pidfd);
	devres_release_all(&tdev);
}

int main(void)
{
	static struct cell cells[NR_KINDS * NR_OPS];
	struct CMUnitTest tests[NR_KINDS * NR_OPS + 2];
	size_t n = 0;

	for (size_t k = 0; k < NR_KINDS; k++)
		for (size_t o = 0; o < NR_OPS; o++, n++) {
			cells[n].k = &kinds[k];
			cells[n].o = &ops[o];
			add_cell(&tests[n], &cells[n], run_cell,
				 maps_cell_setup, dev_teardown, "%s / %s",
				 kinds[k].call, ops[o].name);
		}
	tests[n++] = (struct CMUnitTest){
		.name = "devm_mmap / mremap MREMAP_DONTUNMAP",
		.test_func = dontunmap,
		.setup_func = dev_setup,
		.teardown_func = dev_teardown,
	};
	tests[n++] = (struct CMUnitTest){
		.name = "devm_mmap / process_madvise elsewhere",
		.test_func = pmadvise_other,
		.setup_func = dev_setup,
		.teardown_func = dev_teardown,
	};
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("managed-maps-advise", tests, n,
				       maps_group_setup, maps_group_teardown);
}
