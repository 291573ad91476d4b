// SPDX-License-Identifier: MIT
/* ctest-labels: unit dma tsan */
/*
 * A device whose last put_device() runs with unmanaged DMA state live:
 * each kind of state (a coherent buffer, a streaming mapping, a pool
 * never destroyed, empty or with a block out, all of them at once) x what
 * comes after the release (the same memory initialized as a new device,
 * DMA debug off and on; a device on the heap, freed by its release, whose
 * pool handle the driver calls after). Each cell, in a child of its own under alarm():
 * the release gives everything back with one WARN per table naming the
 * device and what was left (the DMA state's, the pools'; in debug mode
 * the check of the release reports the mappings, once), the ledger is
 * back at its baseline, the new device at the same address finds none of
 * the old one's mappings, and a call on the pool's handle is refused
 * with a WARN, never a read of the freed device. The cells run again in
 * this process, for LeakSanitizer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"
#include "hostile/cell-child.h"

enum kind {
	COHERENT,
	SINGLE,
	POOL_EMPTY,
	POOL_BUSY,
	ALL,
	NR_KINDS
};
static const char *const kind_name[NR_KINDS] = {
	"dma_alloc_coherent", "dma_map_single", "dma_pool_create",
	"dma_pool_alloc",     "all of them",
};

enum after {
	REINIT,
	HEAP,
	DEBUG,
	NR_AFTER
};
static const char *const after_name[NR_AFTER] = {
	"same memory initialized again",
	"heap device freed, pool handle used",
	"DMA debug on, same memory initialized again",
};

#define DMA_WARN "pending DMA allocations while released from device"
#define POOL_WARN "DMA pool(s) never destroyed"
#define DEBUG_WARN "still live at device release"

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#c);                                           \
			return 1;                                              \
		}                                                              \
	} while (0)

static struct device slot;
static char buf[256];
static int released;

static void slot_release(struct device *dev)
{
	(void)dev;
	released++;
}

/* The state of @k on @dev; the handles the cell checks after. */
struct made {
	dma_addr_t coh, single, block;
	void *coh_cpu, *blk;
	struct dma_pool *pool;
};

static int make(struct device *dev, enum kind k, struct made *m)
{
	if (k == COHERENT || k == ALL) {
		m->coh_cpu = dma_alloc_coherent(dev, 100, &m->coh, GFP_KERNEL);
		CHECK(m->coh_cpu);
	}
	if (k == SINGLE || k == ALL) {
		m->single = dma_map_single(dev, buf, 64, DMA_TO_DEVICE);
		CHECK(!dma_mapping_error(dev, m->single));
	}
	if (k == POOL_EMPTY || k == POOL_BUSY || k == ALL) {
		m->pool = dma_pool_create("orphan", dev, 32, 8, 0);
		CHECK(m->pool);
	}
	if (k == POOL_BUSY || k == ALL) {
		m->blk = dma_pool_alloc(m->pool, GFP_KERNEL, &m->block);
		CHECK(m->blk);
	}
	return 0;
}

/* The captured WARN lines that name @dev and @func and say @why. */
static int warns_by(const char *dev, const char *func, const char *why)
{
	char head[96];
	int n = 0;

	snprintf(head, sizeof(head), "WARNING: %s: %s: ", dev, func);
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += !strncmp(cap.line[i], head, strlen(head)) &&
		     strstr(cap.line[i], why);
	return n;
}

static int warns_saying(const char *dev, const char *why)
{
	return warns_by(dev, "put_device", why);
}

static int cell(int row, int col)
{
	enum kind k = (enum kind)row;
	bool maps = k == COHERENT || k == SINGLE || k == ALL;
	bool pools = k == POOL_EMPTY || k == POOL_BUSY || k == ALL;
	/*
	 * In debug mode the check of the device's release reports what is
	 * mapped (a busy pool's chunk too), and the final release adds no
	 * second WARN of it.
	 */
	bool debug = col == DEBUG;
	bool reported = debug && (maps || k == POOL_BUSY);
	struct devres_ledger base, now;
	struct made m = { 0 };
	struct device *dev;
	int warns;

	alarm(10);
	released = 0;
	devres_ledger_snapshot(&base);
	devres_set_dma_debug(debug);
	if (col != HEAP) {
		dev = &slot;
		memset(dev, 0, sizeof(*dev));
		dev->release = slot_release;
		device_initialize(dev);
		CHECK(!dev_set_name(dev, "orphan-dev"));
	} else {
		dev = heap_dev(NULL, "orphan-dev");
	}
	if (make(dev, k, &m))
		return 1;
	start_capture();
	warns = devres_warn_count();
	put_device(dev);
	devres_set_log_sink(NULL, NULL);
	/* One WARN per table with something left, and nothing else. */
	CHECK(count_prefix("WARNING: ") == (maps || reported) + pools);
	CHECK(devres_warn_count() - warns == (maps || reported) + pools);
	CHECK(warns_saying("orphan-dev", DMA_WARN) == (maps && !debug));
	CHECK(warns_by("orphan-dev", "dma-debug", DEBUG_WARN) == reported);
	CHECK(warns_saying("orphan-dev", POOL_WARN) == pools);
	devres_ledger_snapshot(&now);
	CHECK(!devres_ledger_diff(&base, &now, stderr));

	start_capture();
	if (col != HEAP) {
		/* Released, not zeroed: initialized again as a new device. */
		CHECK(released == 1);
		device_initialize(dev);
		CHECK(!dev_set_name(dev, "orphan-new"));
		CHECK(!dev->dma_state);
		CHECK(!m.coh || !dma_iova_to_virt(dev, m.coh, 1));
		CHECK(!m.single || !dma_iova_to_virt(dev, m.single, 1));
		CHECK(!m.block || !dma_iova_to_virt(dev, m.block, 1));
		if (m.pool)
			CHECK(!dma_pool_alloc(m.pool, GFP_KERNEL, &m.block));
		put_device(dev);
		CHECK(released == 2);
	} else if (m.pool) {
		/* The device is freed: the handle must not reach it. */
		dma_pool_destroy(m.pool);
	}
	devres_set_log_sink(NULL, NULL);
	CHECK(count_prefix("WARNING: ") == (m.pool ? 1 : 0));
	CHECK(!m.pool || strstr(cap.line[0], "destroyed"));
	devres_ledger_snapshot(&now);
	CHECK(!devres_ledger_diff(&base, &now, stderr));
	devres_set_dma_debug(false);
	return 0;
}

static void orphan_table(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, kind_name, NR_KINDS, after_name,
				   NR_AFTER, 2);
}

/*
 * The same cells in this process, one after the other: what the release
 * gave back is freed, not only uncounted (LeakSanitizer checks at exit).
 */
static void orphan_in_process(void **state)
{
	(void)state;
	for (int k = 0; k < NR_KINDS; k++)
		for (int a = 0; a < NR_AFTER; a++)
			assert_int_equal(cell(k, a), 0);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(orphan_table),
		cmocka_unit_test(orphan_in_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
