// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * mprotect(2) and pkey_mprotect(2) with each of the 8 protections over
 * each kind of managed mapping: a devm_mmap() mapping, a devm_ioremap()
 * window, a pcim_iomap() BAR, the same BAR made read-only by the PCI
 * layer's read-only mode, a dmam_alloc_coherent() buffer and a chunk of a
 * dmam_pool_create() pool; over the whole mapping and over its first page.
 *
 * The rule: a protection passes when it leaves the read and write access
 * the library made the mapping with (PROT_READ|PROT_WRITE, PROT_READ for
 * the read-only BAR; PROT_EXEC not looked at); one that takes either
 * away, or widens the read-only BAR to writing, is refused; a devm_mmap()
 * mapping, whose contents the library never touches, takes any.
 *
 * Each cell checks, refused: -1 with EPERM, one WARN naming the device,
 * the call, the managed call and which way the access would change, the
 * mapping's protection in /proc/self/maps unchanged, the node still
 * there; passed: no WARN, what the system call itself returned over the
 * same range, and the protection it left (made first, raw, as the
 * reference, then undone). Then the pattern written before is intact,
 * the release WARNs nothing and the ledger is back at its baseline.
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "io/iotest.h"
#include "misuse/maps-fixture.h"

#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

struct res {
	char *p;
	dma_addr_t handle;
	struct dma_pool *pool;
};

struct kind {
	const char *name;
	const char *call; /* the managed call, in the WARN */
	int access;	  /* what passes: -1 any */
	bool pci;
	void (*acquire)(struct res *r);
};

static void devm_mmap_acq(struct res *r)
{
	r->p = devm_mmap(&tdev, NULL, len, RW, ANON, -1, 0);
	assert_false(IS_ERR(r->p));
}

static void devm_ioremap_acq(struct res *r)
{
	r->p = devm_ioremap(&tdev, WIN, len);
}

static void pcim_iomap_acq(struct res *r)
{
	r->p = pcim_iomap(pdev, 0, 0);
}

static void dmam_alloc_coherent_acq(struct res *r)
{
	r->p = dmam_alloc_coherent(&tdev, len, &r->handle, GFP_KERNEL);
}

static void dmam_pool_acq(struct res *r)
{
	r->pool = dmam_pool_create("protect", &tdev, len, pg, 0);
	assert_non_null(r->pool);
	r->p = dma_pool_alloc(r->pool, GFP_KERNEL, &r->handle);
}

enum {
	RO_BAR = 3
};

static const struct kind kinds[] = {
	{ "devm_mmap", "devm_mmap", -1, false, devm_mmap_acq },
	{ "devm_ioremap", "devm_ioremap", RW, false, devm_ioremap_acq },
	{ "pcim_iomap", "pcim_iomap", RW, true, pcim_iomap_acq },
	[RO_BAR] = { "read-only pcim_iomap", "pcim_iomap", PROT_READ, true,
		     pcim_iomap_acq },
	{ "dmam_alloc_coherent", "dmam_alloc_coherent", RW, false,
	  dmam_alloc_coherent_acq },
	{ "dmam_pool_create", "dmam_pool_create", RW, false, dmam_pool_acq },
};
#define NR_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *const prot_names[] = {
	"PROT_NONE",
	"PROT_READ",
	"PROT_WRITE",
	"PROT_READ|PROT_WRITE",
	"PROT_EXEC",
	"PROT_READ|PROT_EXEC",
	"PROT_WRITE|PROT_EXEC",
	"PROT_READ|PROT_WRITE|PROT_EXEC",
};

struct cell {
	const struct kind *k;
	int prot;
	bool pkey;
	char name[96];
};

/* The protection of the page at @a, as /proc/self/maps shows it. */
static void prot_at(const void *a, char ret[5])
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	assert_non_null(f);
	ret[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
		    lo <= (uintptr_t)a && (uintptr_t)a < hi) {
			memcpy(ret, perms, 5);
			break;
		}
	}
	fclose(f);
	assert_true(ret[0]);
}

static long call(const struct cell *c, char *a, size_t n, int prot, bool raw)
{
	if (c->pkey)
		return raw ? syscall(SYS_pkey_mprotect, a, n, prot, -1)
			   : pkey_mprotect(a, n, prot, -1);
	return raw ? syscall(SYS_mprotect, a, n, prot) : mprotect(a, n, prot);
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(0xa5 ^ (i * 13));
}

static void run_range(const struct cell *c, size_t n)
{
	struct device *mine = c->k->pci ? &pdev->dev : &tdev;
	int base = c->k->access == PROT_READ ? PROT_READ : RW;
	bool passes = c->k->access < 0 || (c->prot & RW) == c->k->access;
	char before[5], after[5], want_prot[5];
	struct devres_stats st;
	struct res r = { 0 };
	char reason[128];
	long ret, want = 0;
	int err, want_err = 0, nodes;

	c->k->acquire(&r);
	assert_non_null(r.p);
	for (size_t i = 0; i < len; i++)
		r.p[i] = (char)pattern(i);
	if (c->k == &kinds[RO_BAR]) {
		pci_sysfs_set_readonly(true);
		prot_at(r.p, before);
		assert_string_equal(before, "r--s");
	}
	prot_at(r.p, before);
	if (passes) {
		errno = 0;
		want = call(c, r.p, n, c->prot, true);
		want_err = want < 0 ? errno : 0;
		prot_at(r.p, want_prot);
		assert_int_equal(syscall(SYS_mprotect, r.p, len, base), 0);
	}
	devres_get_stats(mine, &st);
	nodes = st.allocs;
	start_capture();
	errno = 0;
	ret = call(c, r.p, n, c->prot, false);
	err = ret < 0 ? errno : 0;
	prot_at(r.p, after);
	if (passes) {
		expect_no_warn();
		assert_int_equal(ret, want);
		assert_int_equal(err, want_err);
		assert_string_equal(after, want_prot);
		assert_int_equal(syscall(SYS_mprotect, r.p, len, base), 0);
	} else {
		const char *why = c->k->access == RW ? "the library reads and "
						       "writes"
				  : (c->prot & PROT_WRITE) ? "the library made "
							     "it read-only"
							   : "the library "
							     "reads through it";

		snprintf(reason, sizeof(reason), "%s) over",
			 prot_names[c->prot]);
		expect_warn_on(dev_name(mine),
			       c->pkey ? "pkey_mprotect" : "mprotect", reason);
		assert_int_equal(ret, -1);
		assert_int_equal(err, EPERM);
		assert_string_equal(after, before);
		devres_get_stats(mine, &st);
		assert_int_equal(st.allocs, nodes);
		/* The WARN's line names the managed call and the reason. */
		snprintf(reason, sizeof(reason), "acquired with %s(): %s",
			 c->k->call, why);
		start_capture();
		assert_int_equal(call(c, r.p, n, c->prot, false), -1);
		expect_warn_on(dev_name(mine),
			       c->pkey ? "pkey_mprotect" : "mprotect", reason);
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)r.p[i] != pattern(i))
			fail_msg("byte %zu changed: %#x", i,
				 (unsigned char)r.p[i]);
	if (r.pool)
		dma_pool_free(r.pool, r.p, r.handle);
	pci_sysfs_set_readonly(false);
	start_capture();
	devres_release_all(mine);
	expect_no_warn();
	devres_get_stats(mine, &st);
	assert_int_equal(st.allocs, 0);
}

static void run_cell(void **state)
{
	const struct cell *c = *state;

	run_range(c, len);
	run_range(c, pg);
}

static int cell_teardown(void **state)
{
	pci_sysfs_set_readonly(false);
	return dev_teardown(state);
}

int main(void)
{
	static struct cell cells[NR_KINDS * 8 * 2];
	struct CMUnitTest tests[NR_KINDS * 8 * 2];
	size_t n = 0;

	for (size_t k = 0; k < NR_KINDS; k++)
		for (int pkey = 0; pkey < 2; pkey++)
			for (int prot = 0; prot < 8; prot++, n++) {
				cells[n].k = &kinds[k];
				cells[n].prot = prot;
				cells[n].pkey = pkey != 0;
				add_cell(&tests[n], &cells[n], run_cell,
					 maps_cell_setup, cell_teardown,
					 "%s / %s%s", kinds[k].name,
					 pkey ? "pkey " : "", prot_names[prot]);
			}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("maps-protect-kinds", tests, n,
				       maps_group_setup, maps_group_teardown);
}
