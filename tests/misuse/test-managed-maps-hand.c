// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every kind of managed mapping the process's table of managed mappings
 * holds (devm_mmap(), devm_ioremap(), devm_ioremap_wc(), pcim_iomap() of
 * a fake PCI function's BAR, a dmam_alloc_coherent() buffer), times every
 * plain call that can take one away: munmap(2) of all of it, of its first
 * page only, of its last page only, mmap(2) with MAP_FIXED over it or over
 * its last page, shmat(2) with SHM_REMAP of a System V segment over it,
 * mremap(2) moving it away, and mremap(2) shrinking it where it is (its
 * last page unmapped): 40 cells. Each cell acquires the mapping, makes the
 * call by hand and checks the one WARN (the device, the call, the managed
 * call and the one to use) and that the node went there; then a new owner
 * maps the address and writes it, the device is released (no WARN) and
 * the new owner's pages must still hold what it wrote. The fixture checks
 * the ledger is back at its baseline.
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
#include <sys/shm.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "io/iotest.h"
#include "misuse/maps-fixture.h"

#define LEN len /* the fixture's two pages */
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

#include "misuse/map-kinds.h"

struct kind {
	const char *call; /* the managed call, in the WARN */
	const char *fix;  /* what to use instead */
	char *(*acquire)(void);
	bool pci; /* on the fake PCI function, not test-dev */
	int left; /* nodes it leaves (the device's DMA state's) */
};

static char *dmam_coherent_acq(void)
{
	dma_addr_t handle;
	char *p = dmam_alloc_coherent(&tdev, LEN, &handle, GFP_KERNEL);

	assert_non_null(p);
	return p;
}

static const struct kind kinds[] = {
	{ "devm_mmap", "devm_munmap()", devm_mmap_acq, false, 0 },
	{ "devm_ioremap", "devm_iounmap()", devm_ioremap_acq, false, 0 },
	{ "devm_ioremap_wc", "devm_iounmap()", devm_ioremap_wc_acq, false, 0 },
	{ "pcim_iomap", "pcim_iounmap()", pcim_iomap_acq, true, 0 },
	{ "dmam_alloc_coherent", "dmam_free_coherent()", dmam_coherent_acq,
	  false, 1 },
};
#define NR_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static char *moved;

static void by_munmap(char *p)
{
	assert_int_equal(munmap(p, LEN), 0);
}

static void by_munmap_head(char *p)
{
	assert_int_equal(munmap(p, 4096), 0);
}

static void by_munmap_tail(char *p)
{
	assert_int_equal(munmap(p + 4096, 4096), 0);
}

static void by_fixed_tail(char *p)
{
	assert_ptr_equal(mmap(p + 4096, 4096, RW, ANON | MAP_FIXED, -1, 0),
			 p + 4096);
}

/* Shrunk where it is: its tail unmapped, its head left. */
static void by_mremap_shrink(char *p)
{
	assert_ptr_equal(mremap(p, LEN, 4096, 0), p);
}

static void by_fixed(char *p)
{
	assert_ptr_equal(mmap(p, LEN, RW, ANON | MAP_FIXED, -1, 0), p);
}

/* The segment goes with its last detach (the next owner's munmap()). */
static void by_shmat(char *p)
{
	int id = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);

	assert_true(id >= 0);
	assert_ptr_equal(shmat(id, p, SHM_REMAP), p);
	assert_int_equal(shmctl(id, IPC_RMID, NULL), 0);
}

static void by_mremap(char *p)
{
	moved = mmap(NULL, LEN, PROT_NONE, ANON, -1, 0);
	assert_ptr_not_equal(moved, MAP_FAILED);
	assert_ptr_equal(mremap(p, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
				moved),
			 moved);
}

struct way {
	const char *name;
	const char *func; /* the plain call, in the WARN */
	void (*call)(char *p);
};

static const struct way ways[] = {
	{ "munmap", "munmap", by_munmap },
	{ "munmap head", "munmap", by_munmap_head },
	{ "munmap tail", "munmap", by_munmap_tail },
	{ "MAP_FIXED tail", "mmap", by_fixed_tail },
	{ "mremap shrunk", "mremap", by_mremap_shrink },
	{ "MAP_FIXED", "mmap", by_fixed },
	{ "shmat SHM_REMAP", "shmat", by_shmat },
	{ "mremap away", "mremap", by_mremap },
};
#define NR_WAYS (sizeof(ways) / sizeof(ways[0]))

static const struct kind *cur_kind;
static const struct way *cur_way;

static int mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)p, 4096, &v) == 0;
}

static void run_cell(void **state)
{
	struct device *mine = cur_kind->pci ? &pdev->dev : &tdev;
	char reason[128];
	struct devres_stats st;
	char *p;

	(void)state;
	moved = NULL;
	p = cur_kind->acquire();
	start_capture();
	cur_way->call(p);
	snprintf(reason, sizeof(reason), "acquired with %s(): use %s",
		 cur_kind->call, cur_kind->fix);
	expect_warn_on(dev_name(mine), cur_way->func, reason);
	devres_get_stats(mine, &st);
	assert_int_equal(st.allocs, cur_kind->left);
	/* Its pcim_iomap_table() slot went with it. */
	if (cur_kind->pci)
		assert_null(pcim_iomap_table(pdev)[0]);

	/* The next owner of the range: its own pages, written. */
	for (size_t off = 0; off < LEN; off += 4096) {
		if (!mapped(p + off))
			assert_ptr_equal(mmap(p + off, 4096, RW,
					      ANON | MAP_FIXED_NOREPLACE, -1,
					      0),
					 p + off);
		memset(p + off, 0x61, 4096);
	}
	start_capture();
	devres_release_all(mine);
	expect_no_warn();
	for (size_t off = 0; off < LEN; off += 4096) {
		assert_true(mapped(p + off));
		assert_int_equal(p[off + 4095], 0x61);
	}
	assert_int_equal(munmap(p, LEN), 0);
	if (moved)
		assert_int_equal(munmap(moved, LEN), 0);
}

struct cell {
	const struct kind *k;
	const struct way *w;
	char name[64];
};

static int cell_setup(void **state)
{
	const struct cell *c = *state;

	cur_kind = c->k;
	cur_way = c->w;
	return dev_setup(state);
}

int main(void)
{
	static struct cell cells[NR_KINDS * NR_WAYS];
	struct CMUnitTest tests[NR_KINDS * NR_WAYS];
	size_t n = 0;

	for (size_t k = 0; k < NR_KINDS; k++)
		for (size_t w = 0; w < NR_WAYS; w++, n++) {
			cells[n].k = &kinds[k];
			cells[n].w = &ways[w];
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 dev_teardown, "%s / %s", kinds[k].call,
				 ways[w].name);
		}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("managed-maps-hand", tests, n,
				       maps_group_setup, maps_group_teardown);
}
