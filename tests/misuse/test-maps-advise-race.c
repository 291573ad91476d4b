// SPDX-License-Identifier: MIT
/* ctest-labels: unit stress tsan */
/*
 * madvise(2) and pkey_mprotect(2) by hand over a managed mapping racing
 * the release of the same mapping by its device on another thread, for
 * each kind the table of managed mappings holds: devm_mmap() of a shared
 * memfd, devm_ioremap() of a register window, pcim_iomap() of a fake PCI
 * function's BAR, a dmam_alloc_coherent() buffer, a dmam_pool_create()
 * pool's chunk.
 *
 * The calls are ones that do no harm wherever they go through, once the
 * mapping is gone and anything may be mapped at the address:
 * process_madvise(2) on this process with MADV_REMOVE and flags the
 * kernel refuses before it looks at a range (its look-up in the library
 * is madvise()'s), and pkey_mprotect(2) with a key this process never
 * allocated. Over a devm_mmap() of a memfd, a register window and a BAR,
 * whose files are the only shared mappings these rows make, madvise(2)
 * with MADV_REMOVE too: the
 * kernel refuses it over private memory and an unmapped range, so it can
 * only go through over the mapping itself, punching a hole in its file.
 * Each call is either refused by the library (EPERM, one WARN: the
 * mapping was still managed) or answered by the kernel (EINVAL, ENOMEM,
 * EACCES), never applied. Every refusal is exactly one WARN, no other
 * WARN is made, the window's file still holds its pattern after the
 * round, and the ledger is back at its baseline. Either thread is let go
 * first, alternately.
 *
 * MAPS_RACE_ROUNDS sets the rounds a kind (default 100).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "io/iotest.h"
#include "misuse/maps-fixture.h"

#ifndef MADV_REMOVE
#define MADV_REMOVE 9
#endif

#define CALLS 64 /* calls by hand a round */

static int shmfd, pidfd;
static volatile unsigned char *winview, *shmview;

struct kind {
	const char *name;
	bool pci;
	bool remove;		       /* madvise(MADV_REMOVE) too */
	volatile unsigned char **view; /* the file behind it, or NULL */
	char *(*acquire)(struct dma_pool **ret_pool);
};

static char *devm_mmap_acq(struct dma_pool **ret_pool)
{
	char *p = devm_mmap(&tdev, NULL, len, PROT_READ | PROT_WRITE,
			    MAP_SHARED, shmfd, 0);

	(void)ret_pool;
	return IS_ERR(p) ? NULL : p;
}

static char *devm_ioremap_acq(struct dma_pool **ret_pool)
{
	(void)ret_pool;
	return devm_ioremap(&tdev, WIN, len);
}

static char *pcim_iomap_acq(struct dma_pool **ret_pool)
{
	(void)ret_pool;
	return pcim_iomap(pdev, 0, 0);
}

static char *dmam_alloc_coherent_acq(struct dma_pool **ret_pool)
{
	dma_addr_t h;

	(void)ret_pool;
	return dmam_alloc_coherent(&tdev, len, &h, GFP_KERNEL);
}

/*
 * The chunk of one block, given back to the pool: the pool keeps it
 * mapped, and its memory managed, until the release destroys the pool.
 */
static char *dmam_pool_acq(struct dma_pool **ret_pool)
{
	dma_addr_t h;
	char *p;

	*ret_pool = dmam_pool_create("race", &tdev, len, pg, 0);
	assert_non_null(*ret_pool);
	p = dma_pool_alloc(*ret_pool, GFP_KERNEL, &h);
	assert_non_null(p);
	dma_pool_free(*ret_pool, p, h);
	return p;
}

static const struct kind kinds[] = {
	{ "devm_mmap", false, true, &shmview, devm_mmap_acq },
	{ "devm_ioremap", false, true, &winview, devm_ioremap_acq },
	{ "pcim_iomap", true, true, NULL, pcim_iomap_acq },
	{ "dmam_alloc_coherent", false, false, NULL, dmam_alloc_coherent_acq },
	{ "dmam_pool_create", false, false, NULL, dmam_pool_acq },
};

static pthread_barrier_t go;
static char *target;
static int first; /* 0: the calls by hand spin first, 1: the release */
/* One call made; the release done: each side waits for the other once. */
static int called, released;
static struct device *owner;
static bool with_remove;

static unsigned char pattern(size_t i)
{
	return (unsigned char)(0x3c ^ (i * 11));
}

/* What the calls by hand met; checked on the test's thread. */
struct met {
	long refused, answered;
	int went_through; /* a call the kernel applied: 1 + its index */
	int bad_errno;
};

/* A call by hand, counted in @m. */
static void call(struct met *m, int i)
{
	struct iovec iov = { target, len };
	long r;
	int err;

	errno = 0;
	if (i % 3 == 1 || (i % 3 == 0 && pidfd < 0))
		r = pkey_mprotect(target, len, PROT_READ, 1);
	else if (i % 3 == 2 && with_remove)
		r = madvise(target, len, MADV_REMOVE);
	else
		r = process_madvise(pidfd, &iov, 1, MADV_REMOVE, 1);
	err = errno;
	if (r >= 0 && !m->went_through)
		m->went_through = 1 + i;
	if (r >= 0)
		return;
	if (err == EPERM)
		m->refused++;
	else if (err == EINVAL || err == ENOMEM || err == EACCES ||
		 err == ENOSYS)
		m->answered++;
	else
		m->bad_errno = err;
}

/*
 * In the rounds where the calls go first, the release waits for the
 * first of them (refused: the mapping is managed); in every round one
 * more call comes once the release is done (answered by the kernel): so
 * both sides are always seen, and the race is in between.
 */
static void *by_hand(void *arg)
{
	struct met *m = arg;

	pthread_barrier_wait(&go);
	if (first == 1)
		for (volatile int i = 0; i < 2000; i++)
			;
	for (int i = 0; i < CALLS; i++) {
		call(m, i);
		__atomic_store_n(&called, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
		sched_yield();
	call(m, 0);
	return NULL;
}

static void *release(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	if (first == 0)
		while (!__atomic_load_n(&called, __ATOMIC_ACQUIRE))
			sched_yield();
	devres_release_all(owner);
	__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int rounds(void)
{
	const char *s = getenv("MAPS_RACE_ROUNDS");
	int n = s ? atoi(s) : 100;

	return n > 0 ? n : 100;
}

static void race(void **state)
{
	const struct kind *k = *state;
	struct devres_ledger before, now;
	long refused = 0, answered = 0;
	int n = rounds();

	owner = k->pci ? &pdev->dev : &tdev;
	with_remove = k->remove;
	/* Valgrind 3.19 does not know pidfd_open(2): the other calls then. */
	pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	devres_ledger_snapshot(&before);
	for (int r = 0; r < n; r++) {
		struct dma_pool *pool = NULL;
		struct met m = { 0 };
		int warns;
		pthread_t a, b;

		target = k->acquire(&pool);
		assert_non_null(target);
		for (size_t i = 0; i < len; i++)
			target[i] = (char)pattern(i);
		first = r & 1;
		called = released = 0;
		start_capture();
		warns = devres_warn_count();
		assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
		assert_int_equal(pthread_create(&a, NULL, by_hand, &m), 0);
		assert_int_equal(pthread_create(&b, NULL, release, NULL), 0);
		assert_int_equal(pthread_join(a, NULL), 0);
		assert_int_equal(pthread_join(b, NULL), 0);
		pthread_barrier_destroy(&go);
		devres_set_log_sink(NULL, NULL);
		if (m.went_through)
			fail_msg("round %d: call %d went through", r,
				 m.went_through - 1);
		assert_int_equal(m.bad_errno, 0);
		/* One WARN a refusal, and none besides. */
		assert_int_equal(devres_warn_count() - warns, m.refused);
		refused += m.refused;
		answered += m.answered;
		/* Nothing punched a hole in a file while it was mapped. */
		if (k->view)
			for (size_t i = 0; i < len; i++)
				if ((*k->view)[i] != pattern(i))
					fail_msg("round %d: byte %zu is %#x", r,
						 i, (*k->view)[i]);
	}
	if (pidfd >= 0)
		close(pidfd);
	/* Both sides of the race were seen. */
	print_message("%ld refused, %ld answered\n", refused, answered);
	assert_true(refused > 0);
	assert_true(answered > 0);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
}

/* The fixture's, and a shared memfd with a view of each file. */
static int group_setup(void **state)
{
	if (maps_group_setup(state))
		return -1;
	shmfd = dev_memfd(len);
	if (shmfd < 0)
		return -1;
	winview = dev_view(maps_winfd, len);
	shmview = dev_view(shmfd, len);
	return winview && shmview ? 0 : -1;
}

static int group_teardown(void **state)
{
	munmap((void *)winview, len);
	munmap((void *)shmview, len);
	close(shmfd);
	return maps_group_teardown(state);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(kinds) / sizeof(kinds[0])];
	size_t n = 0;

	for (; n < sizeof(kinds) / sizeof(kinds[0]); n++)
		tests[n] = (struct CMUnitTest){
			.name = kinds[n].name,
			.test_func = race,
			.setup_func = maps_cell_setup,
			.teardown_func = dev_teardown,
			.initial_state = (void *)&kinds[n],
		};
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("maps-advise-race", tests, n,
				       group_setup, group_teardown);
}
