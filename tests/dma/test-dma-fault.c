// SPDX-License-Identifier: MIT
/* ctest-labels: fault */
/*
 * A fault sweep of a driver that allocates coherent rings, a pool and its
 * blocks, a streaming mapping and an unmanaged buffer undone by actions:
 * every failure point of its probe, and its remove, must leave nothing
 * behind; with the DMA debug checks on as well.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

#define NBLOCKS 40

struct ringnic {
	struct device *dev;
	void *tx, *rx, *scratch, *rxbuf;
	dma_addr_t tx_dma, rx_dma, scratch_dma, rxbuf_dma;
	struct dma_pool *pool;
	void *blk[NBLOCKS];
	dma_addr_t blk_dma[NBLOCKS];
	int nblk;
};

static void free_blocks(void *data)
{
	struct ringnic *nic = data;

	while (nic->nblk--)
		dma_pool_free(nic->pool, nic->blk[nic->nblk],
			      nic->blk_dma[nic->nblk]);
}

static void unmap_rxbuf(void *data)
{
	struct ringnic *nic = data;

	dma_unmap_single(nic->dev, nic->rxbuf_dma, 2048, DMA_FROM_DEVICE);
}

static void free_scratch(void *data)
{
	struct ringnic *nic = data;

	dma_free_coherent(nic->dev, 300, nic->scratch, nic->scratch_dma);
}

static int ringnic_probe(struct device *dev)
{
	struct ringnic *nic;
	int ret;

	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(48));
	if (ret)
		return ret;
	nic = devm_kzalloc(dev, sizeof(*nic), GFP_KERNEL);
	if (!nic)
		return -ENOMEM;
	nic->dev = dev;
	nic->tx = dmam_alloc_coherent(dev, 16384, &nic->tx_dma, GFP_KERNEL);
	if (!nic->tx)
		return -ENOMEM;
	nic->rx = dmam_alloc_coherent(dev, 8192, &nic->rx_dma, GFP_KERNEL);
	if (!nic->rx)
		return -ENOMEM;
	nic->pool = dmam_pool_create("ringnic", dev, 256, 64, 4096);
	if (!nic->pool)
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, free_blocks, nic);
	if (ret)
		return ret;
	for (; nic->nblk < NBLOCKS; nic->nblk++) {
		nic->blk[nic->nblk] = dma_pool_zalloc(nic->pool, GFP_KERNEL,
						      &nic->blk_dma[nic->nblk]);
		if (!nic->blk[nic->nblk])
			return -ENOMEM;
	}
	nic->rxbuf = devm_kmalloc(dev, 2048, GFP_KERNEL);
	if (!nic->rxbuf)
		return -ENOMEM;
	nic->rxbuf_dma = dma_map_single(dev, nic->rxbuf, 2048, DMA_FROM_DEVICE);
	if (dma_mapping_error(dev, nic->rxbuf_dma))
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, unmap_rxbuf, nic);
	if (ret)
		return ret;
	nic->scratch =
		dma_alloc_coherent(dev, 300, &nic->scratch_dma, GFP_KERNEL);
	if (!nic->scratch)
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, free_scratch, nic);
	if (ret)
		return ret;
	dev_set_drvdata(dev, nic);
	return 0;
}

static const struct bus_type fbus = { .name = "dma-fault" };

static struct device_driver ringnic_driver = {
	.name = "ringnic",
	.bus = &fbus,
	.probe = ringnic_probe,
};

static void sweep(bool debug)
{
	struct devres_sweep_result r = { 0 };
	struct devres_ledger before, after;
	struct device *dev;
	int warns;

	devres_ledger_snapshot(&before);
	dev = heap_dev(&fbus, "ringnic0");
	assert_int_equal(device_add(dev), 0);
	devres_set_dma_debug(debug);
	warns = devres_warn_count();
	assert_int_equal(driver_probe_sweep(&ringnic_driver, dev, &r), 0);
	assert_int_equal(r.leaks, 0);
	/* kzalloc, state, 3 buffers, pool, 2 chunk paths, maps... */
	assert_true(r.points > 25);
	assert_int_equal(devres_warn_count(), warns);
	devres_set_dma_debug(false);
	/* It binds for real, too, and unbinds clean. */
	assert_int_equal(device_driver_attach(&ringnic_driver, dev), 0);
	assert_non_null(dma_iova_to_virt(
		dev, ((struct ringnic *)dev_get_drvdata(dev))->tx_dma, 16384));
	device_release_driver(dev);
	device_unregister(dev);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void test_sweep(void **state)
{
	(void)state;
	sweep(false);
}

static void test_sweep_debug(void **state)
{
	(void)state;
	sweep(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_sweep_debug),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &fbus);
}
