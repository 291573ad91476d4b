// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * What a device's DMA ops' map returns, one cell each, under every call
 * that maps through them: dma_map_single(), dma_map_page(),
 * dma_alloc_coherent(), dmam_alloc_coherent(), dma_pool_alloc(). Its
 * contract is 0 (mapped, the handle set) or a negative errno. A value of
 * the contract passes as it is: 0 maps, an errno fails the call (a
 * coherent allocation sets errno to it), no WARN. A positive value or a
 * negative one past -MAX_ERRNO was handed on: the call failed with errno
 * set to its negation (-1 for 1; INT_MIN's negation overflowed, which
 * UBSan reports). Now it is taken as -EIO with one WARN naming the ops
 * and the kind of mapping: the call fails, errno EIO, nothing stays
 * mapped; the fixture's teardown checks the ledger.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

enum call {
	MAP_SINGLE,
	MAP_PAGE,
	ALLOC_COHERENT,
	DMAM_ALLOC_COHERENT,
	POOL_ALLOC,
	NR_CALLS
};

static const struct {
	const char *name;
	const char *kind; /* the kind of mapping its WARN names */
} calls[NR_CALLS] = {
	[MAP_SINGLE] = { "dma_map_single", "dma_map_single" },
	[MAP_PAGE] = { "dma_map_page", "dma_map_page" },
	[ALLOC_COHERENT] = { "dma_alloc_coherent", "dma_alloc_coherent" },
	[DMAM_ALLOC_COHERENT] = { "dmam_alloc_coherent", "dma_alloc_coherent" },
	[POOL_ALLOC] = { "dma_pool_alloc", "dma_pool_alloc" },
};

static const int values[] = {
	0, -ENOMEM, -EIO, -MAX_ERRNO, 1, INT_MAX, -MAX_ERRNO - 1, INT_MIN,
};

struct cell {
	enum call call;
	int said;
	char name[80];
};

static const struct cell *cur;

static bool valid(int v)
{
	return v <= 0 && v >= -MAX_ERRNO;
}

/* Maps as the default ops do; gives it back unless it says 0. */
static int ret_map(struct device *dev, void *cpu, size_t size, size_t align,
		   uint64_t mask, dma_addr_t *ret_handle)
{
	const struct devres_dma_ops *iova = devres_dma_iova_ops();
	int ret = iova->map(dev, cpu, size, align, mask, ret_handle);

	if (ret)
		return ret;
	if (cur->said)
		iova->unmap(dev, *ret_handle, cpu, size);
	return cur->said;
}

static void ret_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		      size_t size)
{
	devres_dma_iova_ops()->unmap(dev, handle, cpu, size);
}

static const struct devres_dma_ops ret_ops = {
	.name = "ret-ops",
	.map = ret_map,
	.unmap = ret_unmap,
};

static char buf[256];

/* The call; true when it mapped, *err the errno of a failed allocation. */
static bool make(struct device *dev, enum call c, int *err)
{
	struct dma_pool *pool;
	dma_addr_t h = 0;
	void *p;

	*err = 0;
	switch (c) {
	case MAP_SINGLE:
	case MAP_PAGE:
		h = c == MAP_SINGLE
			    ? dma_map_single(dev, buf, 64, DMA_TO_DEVICE)
			    : dma_map_page(dev, (struct page *)buf, 0, 64,
					   DMA_TO_DEVICE);
		if (dma_mapping_error(dev, h))
			return false;
		dma_unmap_single(dev, h, 64, DMA_TO_DEVICE);
		return true;
	case ALLOC_COHERENT:
	case DMAM_ALLOC_COHERENT:
		errno = 0;
		p = c == ALLOC_COHERENT
			    ? dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL)
			    : dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL);
		*err = errno;
		if (!p)
			return false;
		if (c == ALLOC_COHERENT)
			dma_free_coherent(dev, 4096, p, h);
		else
			dmam_free_coherent(dev, 4096, p, h);
		return true;
	default:
		pool = dma_pool_create("ret", dev, 64, 8, 0);
		assert_non_null(pool);
		p = dma_pool_alloc(pool, GFP_KERNEL, &h);
		if (p)
			dma_pool_free(pool, p, h);
		dma_pool_destroy(pool);
		return p != NULL;
	}
}

static void run_cell(void **state)
{
	struct device *dev = *state;
	const struct cell *c = cur;
	char reason[128];
	bool mapped;
	int err;

	set_dma_ops(dev, &ret_ops);
	start_capture();
	mapped = make(dev, c->call, &err);
	assert_int_equal(mapped, c->said == 0);
	if (c->call == ALLOC_COHERENT || c->call == DMAM_ALLOC_COHERENT)
		assert_int_equal(err, c->said == 0     ? 0
				      : valid(c->said) ? -c->said
						       : EIO);
	if (valid(c->said)) {
		expect_no_warn();
	} else {
		snprintf(reason, sizeof(reason),
			 "the DMA ops 'ret-ops': map returned %d, not 0 or a "
			 "negative errno: taken as -EIO",
			 c->said);
		expect_warn_on("test-dev", calls[c->call].kind, reason);
	}
	set_dma_ops(dev, NULL);
	/* The device's DMA works after it. */
	assert_true(make(dev, c->call, &err));
}

static int cell_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

#define NR_CELLS (NR_CALLS * N(values))

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	for (int c = 0; c < NR_CALLS; c++)
		for (size_t v = 0; v < N(values); v++, n++) {
			cells[n] = (struct cell){ (enum call)c, values[v], "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 dev_teardown, "%s, map returns %d",
				 calls[c].name, values[v]);
		}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests_name("dma-ops-returns", tests, NULL,
					   NULL);
}
