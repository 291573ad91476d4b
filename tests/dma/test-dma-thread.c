// SPDX-License-Identifier: MIT
/* ctest-labels: tsan stress */
/*
 * DMA from several threads: a device model thread that reaches a
 * driver's descriptor ring and buffers only through dma_iova_to_virt();
 * threads mapping and unmapping on one device (the IOVA allocator under
 * contention); a pool shared by threads that free each other's blocks; and
 * the device's DMA state released while other threads map.
 */
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
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

/* cmocka's asserts may not run off the main thread: count, then assert. */
static int failures;
#define CHECK(x)                                                               \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #x);                                 \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);    \
		}                                                              \
	} while (0)

#define NDESC 32
#define NPKT 1500

enum {
	OWN = 1,
	DONE = 2,
	ERR = 4
};

/* What the driver and the device agree on: a ring of these. */
struct desc {
	uint64_t tx, rx; /* bus addresses */
	uint32_t len;
	uint32_t flags;
	uint32_t sum;
	uint32_t pad;
};

/* The device: its side of the bus, a doorbell and a stop flag. */
struct nic {
	struct device *dev;
	dma_addr_t ring;
	pthread_mutex_t lock;
	pthread_cond_t bell, done;
	unsigned long rung, completed;
	bool stop;
};

static void nic_process(struct nic *nic, struct desc *d)
{
	const unsigned char *tx;
	unsigned char *rx;
	uint32_t sum = 0;

	tx = dma_iova_to_virt(nic->dev, d->tx, d->len);
	rx = dma_iova_to_virt(nic->dev, d->rx, d->len);
	if (!tx || !rx) {
		__atomic_store_n(&d->flags, DONE | ERR, __ATOMIC_RELEASE);
		return;
	}
	for (uint32_t i = 0; i < d->len; i++) {
		rx[i] = tx[i] ^ 0x5a;
		sum += tx[i];
	}
	d->sum = sum;
	__atomic_store_n(&d->flags, DONE, __ATOMIC_RELEASE);
}

static void *nic_thread(void *arg)
{
	struct nic *nic = arg;
	unsigned long seen = 0;

	pthread_mutex_lock(&nic->lock);
	for (;;) {
		while (!nic->stop && nic->rung == seen)
			pthread_cond_wait(&nic->bell, &nic->lock);
		if (nic->stop)
			break;
		seen = nic->rung;
		pthread_mutex_unlock(&nic->lock);
		for (int i = 0; i < NDESC; i++) {
			struct desc *d = dma_iova_to_virt(
				nic->dev, nic->ring + i * sizeof(*d),
				sizeof(*d));

			CHECK(d);
			if (__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE) == OWN)
				nic_process(nic, d);
		}
		pthread_mutex_lock(&nic->lock);
		nic->completed = seen;
		pthread_cond_broadcast(&nic->done);
	}
	pthread_mutex_unlock(&nic->lock);
	return NULL;
}

static void ring_and_wait(struct nic *nic)
{
	unsigned long want;

	pthread_mutex_lock(&nic->lock);
	want = ++nic->rung;
	pthread_cond_signal(&nic->bell);
	while (nic->completed < want)
		pthread_cond_wait(&nic->done, &nic->lock);
	pthread_mutex_unlock(&nic->lock);
}

static void test_device_model(void **state)
{
	struct device *dev = *state;
	struct nic nic = { .dev = dev };
	unsigned char *tx = malloc(NDESC * 256), *rx = malloc(NDESC * 256);
	unsigned int seed = 7;
	struct desc *ring;
	pthread_t t;
	int errs = 0;

	assert_non_null(tx);
	assert_non_null(rx);
	pthread_mutex_init(&nic.lock, NULL);
	pthread_cond_init(&nic.bell, NULL);
	pthread_cond_init(&nic.done, NULL);
	ring = dmam_alloc_coherent(dev, NDESC * sizeof(*ring), &nic.ring,
				   GFP_KERNEL);
	assert_non_null(ring);
	assert_int_equal(pthread_create(&t, NULL, nic_thread, &nic), 0);
	for (int pkt = 0; pkt < NPKT; pkt += NDESC) {
		dma_addr_t htx[NDESC], hrx[NDESC];
		uint32_t want[NDESC];

		for (int i = 0; i < NDESC; i++) {
			uint32_t len = 1 + rand_r(&seed) % 256;

			want[i] = 0;
			for (uint32_t k = 0; k < len; k++) {
				tx[i * 256 + k] = (unsigned char)rand_r(&seed);
				want[i] += tx[i * 256 + k];
			}
			htx[i] = dma_map_single(dev, tx + i * 256, len,
						DMA_TO_DEVICE);
			hrx[i] = dma_map_single(dev, rx + i * 256, len,
						DMA_FROM_DEVICE);
			assert_false(dma_mapping_error(dev, htx[i]));
			assert_false(dma_mapping_error(dev, hrx[i]));
			ring[i].tx = htx[i];
			ring[i].rx = hrx[i];
			ring[i].len = len;
			/* A hostile descriptor now and then: one byte too far. */
			if (i == 5)
				ring[i].len = len + 1;
			dma_sync_single_for_device(dev, htx[i], len,
						   DMA_TO_DEVICE);
			__atomic_store_n(&ring[i].flags, OWN, __ATOMIC_RELEASE);
		}
		ring_and_wait(&nic);
		for (int i = 0; i < NDESC; i++) {
			uint32_t f = __atomic_load_n(&ring[i].flags,
						     __ATOMIC_ACQUIRE);
			uint32_t len = ring[i].len - (i == 5);

			if (i == 5) {
				assert_int_equal(f, DONE | ERR);
				errs++;
			} else {
				assert_int_equal(f, DONE);
				dma_sync_single_for_cpu(dev, hrx[i], len,
							DMA_FROM_DEVICE);
				assert_int_equal(ring[i].sum, want[i]);
				for (uint32_t k = 0; k < len; k++)
					assert_int_equal(rx[i * 256 + k],
							 tx[i * 256 + k] ^
								 0x5a);
			}
			dma_unmap_single(dev, htx[i], len, DMA_TO_DEVICE);
			dma_unmap_single(dev, hrx[i], len, DMA_FROM_DEVICE);
			/* After unmap the device reaches nothing there. */
			assert_null(dma_iova_to_virt(dev, htx[i], 1));
			ring[i].flags = 0;
		}
	}
	pthread_mutex_lock(&nic.lock);
	nic.stop = true;
	pthread_cond_signal(&nic.bell);
	pthread_mutex_unlock(&nic.lock);
	pthread_join(t, NULL);
	assert_true(errs > 0);
	pthread_cond_destroy(&nic.bell);
	pthread_cond_destroy(&nic.done);
	pthread_mutex_destroy(&nic.lock);
	free(tx);
	free(rx);
}

#define NTHREADS 4
#define ITERS 3000

static struct device *shared_dev;

static void *mapper(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	unsigned char *buf = malloc(64 * 128);
	dma_addr_t h[64] = { 0 };

	CHECK(buf);
	for (int it = 0; it < ITERS; it++) {
		int i = rand_r(&seed) % 64;

		if (h[i]) {
			unsigned char *p =
				dma_iova_to_virt(shared_dev, h[i], 1);

			/* Still ours: nobody else got this bus address. */
			CHECK(p == buf + i * 128);
			dma_unmap_single(shared_dev, h[i], 1 + i,
					 DMA_BIDIRECTIONAL);
			h[i] = 0;
		} else {
			h[i] = dma_map_single(shared_dev, buf + i * 128, 1 + i,
					      DMA_BIDIRECTIONAL);
			CHECK(!dma_mapping_error(shared_dev, h[i]));
		}
	}
	for (int i = 0; i < 64; i++)
		if (h[i])
			dma_unmap_single(shared_dev, h[i], 1 + i,
					 DMA_BIDIRECTIONAL);
	free(buf);
	return NULL;
}

static void test_concurrent_maps(void **state)
{
	pthread_t t[NTHREADS];
	struct devres_ledger l;

	shared_dev = *state;
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, mapper,
						(void *)(uintptr_t)(i + 1)),
				 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_maps, ledger_base.dma_maps);
}

/* Blocks handed between threads: whoever takes one frees it. */
static struct dma_pool *shared_pool;
static struct {
	pthread_mutex_t lock;
	void *cpu[256];
	dma_addr_t dma[256];
	int n;
} box = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *pooler(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	unsigned char tag = (unsigned char)(uintptr_t)arg;

	for (int it = 0; it < ITERS; it++) {
		dma_addr_t h;
		unsigned char *p = dma_pool_alloc(shared_pool, GFP_KERNEL, &h);
		bool kept = false;

		CHECK(p);
		memset(p, tag, 48);
		CHECK(dma_iova_to_virt(shared_dev, h, 48) == p);
		for (int k = 0; k < 48; k++)
			CHECK(p[k] == tag);
		pthread_mutex_lock(&box.lock);
		if (box.n < 256 && (rand_r(&seed) & 1)) {
			box.cpu[box.n] = p;
			box.dma[box.n++] = h;
			kept = true;
		} else if (box.n) {
			box.n--;
			dma_pool_free(shared_pool, box.cpu[box.n],
				      box.dma[box.n]);
		}
		pthread_mutex_unlock(&box.lock);
		if (!kept)
			dma_pool_free(shared_pool, p, h);
	}
	return NULL;
}

static void test_shared_pool(void **state)
{
	pthread_t t[NTHREADS];

	shared_dev = *state;
	shared_pool = dmam_pool_create("shared", shared_dev, 48, 16, 256);
	assert_non_null(shared_pool);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, pooler,
						(void *)(uintptr_t)(i + 1)),
				 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	while (box.n--)
		dma_pool_free(shared_pool, box.cpu[box.n], box.dma[box.n]);
	box.n = 0;
	start_capture();
	dmam_pool_destroy(shared_pool);
	expect_no_warn();
}

/* The DMA state released (devres_release_all) while others map. */
static bool churn_stop;
static long churned;

static void *churner(void *arg)
{
	char buf[32];

	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		dma_addr_t h = dma_map_single(shared_dev, buf, sizeof(buf),
					      DMA_TO_DEVICE);
		dma_addr_t hc;
		void *c = dma_alloc_coherent(shared_dev, 100, &hc, GFP_KERNEL);

		CHECK(!dma_mapping_error(shared_dev, h));
		CHECK(c);
		CHECK(dma_iova_to_virt(shared_dev, h, sizeof(buf)) == buf);
		dma_unmap_single(shared_dev, h, sizeof(buf), DMA_TO_DEVICE);
		dma_free_coherent(shared_dev, 100, c, hc);
		__atomic_add_fetch(&churned, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_release_while_mapping(void **state)
{
	pthread_t t[2];
	struct devres_ledger l;
	int warns = devres_warn_count();

	shared_dev = *state;
	churn_stop = false;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churner, NULL), 0);
	/* Until both sides have run a while, at the same time. */
	for (int i = 0;
	     i < 2000 || __atomic_load_n(&churned, __ATOMIC_RELAXED) < 2000;
	     i++)
		devres_release_all(shared_dev);
	__atomic_store_n(&churn_stop, true, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	devres_release_all(shared_dev);
	assert_null(shared_dev->dma_state);
	assert_int_equal(devres_warn_count(), warns);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_maps, ledger_base.dma_maps);
	assert_int_equal(l.dma_buffers, ledger_base.dma_buffers);
}

/*
 * dmam_free_coherent() against the release of the device's resources: the
 * buffer is freed once, by whichever unlinks its node first; the loser
 * WARNs (the kernel's CVE-2024-43856 was a double free here). The window
 * is widened by a yield now and then (hundreds of lost races a run here);
 * the ledger and the sanitizers check each of them.
 */
static int race_warns;

static void count_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)line;
	if (level == DEVRES_LOG_WARNING)
		__atomic_add_fetch(&race_warns, 1, __ATOMIC_RELAXED);
}

static void *dmam_churner(void *arg)
{
	long *freed = arg;

	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		dma_addr_t h;
		void *p = dmam_alloc_coherent(shared_dev, 64, &h, GFP_KERNEL);

		CHECK(p);
		/* Now and then, let the release run in between. */
		if (__atomic_load_n(freed, __ATOMIC_RELAXED) % 4 == 0)
			sched_yield();
		dmam_free_coherent(shared_dev, 64, p, h);
		__atomic_add_fetch(freed, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_dmam_free_vs_release(void **state)
{
	struct devres_ledger l;
	long freed = 0;
	pthread_t t;

	shared_dev = *state;
	churn_stop = false;
	race_warns = 0;
	devres_set_log_sink(count_sink, NULL);
	assert_int_equal(pthread_create(&t, NULL, dmam_churner, &freed), 0);
	/* Until the other side has run a while, at the same time. */
	while (__atomic_load_n(&freed, __ATOMIC_RELAXED) < 3000)
		devres_release_all(shared_dev);
	__atomic_store_n(&churn_stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	devres_set_log_sink(NULL, NULL);
	devres_release_all(shared_dev);
	assert_true(freed > 0);
	/* Every buffer freed exactly once, whoever won. */
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_buffers, ledger_base.dma_buffers);
	assert_int_equal(l.dma_bytes, ledger_base.dma_bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_device_model, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_maps, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_shared_pool, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_release_while_mapping,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_dmam_free_vs_release,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	return ret ? ret : failures != 0;
}
