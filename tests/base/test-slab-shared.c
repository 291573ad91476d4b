// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=120 */
/*
 * Small managed memory of a device that several threads use at once
 * (src/base/slab-shared.c). A thread that frees what it just allocated
 * gets the same slot back, and the slots of two threads never share a
 * 64-byte line (header and data): no cache line of an object moves
 * between the threads' CPUs. With many threads, more than there are
 * shards, sizes of every class, frees in any order and reallocations, no
 * slot is ever handed to two holders at once (each object keeps its
 * owner's pattern until its owner frees it), and the device's counts and
 * the ledger come back exactly. AddressSanitizer builds give every node a
 * heap chunk of its own (no slab): there only the second part applies.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

enum {
	ROUNDS = 5000,
	MAX_ADDRS = 16,
	OBJ = 64
};

struct seen {
	struct device *dev;
	uintptr_t addr[MAX_ADDRS];
	int nr;	     /* distinct addresses, up to MAX_ADDRS */
	int overrun; /* more distinct addresses than that */
	int bad;     /* objects that did not keep their pattern */
};

static pthread_barrier_t start;

static void *own_slot(void *arg)
{
	struct seen *s = arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < ROUNDS; i++) {
		unsigned char *p = devm_kmalloc(s->dev, OBJ, GFP_KERNEL);
		int k;

		if (!p) {
			s->bad++;
			continue;
		}
		memset(p, i & 0xff, OBJ);
		for (k = 0; k < s->nr && s->addr[k] != (uintptr_t)p; k++)
			;
		if (k == s->nr) {
			if (s->nr < MAX_ADDRS)
				s->addr[s->nr++] = (uintptr_t)p;
			else
				s->overrun++;
		}
		for (k = 0; k < OBJ; k++)
			s->bad += p[k] != (i & 0xff);
		devm_kfree(s->dev, p);
	}
	return NULL;
}

#ifndef T_ASAN
/* Whether the objects at @pa and @pb, with their headers, share a line. */
static int share_line(uintptr_t pa, uintptr_t pb)
{
	uintptr_t a0 = (pa - 16) >> 6, a1 = (pa + OBJ - 1) >> 6;
	uintptr_t b0 = (pb - 16) >> 6, b1 = (pb + OBJ - 1) >> 6;

	return a0 <= b1 && b0 <= a1;
}
#endif

static void test_own_slot_own_line(void **state)
{
	struct device *dev = *state;
	struct seen s[2] = { { .dev = dev }, { .dev = dev } };
	pthread_t t[2];

	/*
	 * This thread takes the device's lock first, and frees enough for
	 * compactions to leave slots side by side on the free list: the
	 * workers then share a device that has free slots to give.
	 */
	for (int i = 0; i < 200; i++)
		devm_kfree(dev, devm_kmalloc(dev, OBJ, GFP_KERNEL));
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, own_slot, &s[i]),
				 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(s[i].bad, 0);
		assert_true(s[i].nr >= 1);
	}
#ifndef T_ASAN
	for (int i = 0; i < 2; i++) {
		/* Its first slot, and its own again after every free. */
		assert_int_equal(s[i].overrun, 0);
		assert_int_equal(s[i].nr, 1);
	}
	for (int a = 0; a < s[0].nr; a++)
		for (int b = 0; b < s[1].nr; b++)
			assert_false(share_line(s[0].addr[a], s[1].addr[b]));
#endif
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_check(dev), 0);
}

enum {
	THREADS = 12, /* more than the shards */
	HELD = 6,
	MIXED_ROUNDS = 3000
};

struct mixed {
	struct device *dev;
	unsigned int seed;
	int id;
	int bad;
	int failed;
};

struct held {
	unsigned char *p;
	size_t size;
};

static unsigned char pattern(int id, size_t k)
{
	return (unsigned char)(id * 31 + (int)k);
}

static int intact(const struct held *h, int id)
{
	for (size_t k = 0; k < h->size; k++)
		if (h->p[k] != pattern(id, k))
			return 0;
	return 1;
}

static void fill(struct held *h, int id)
{
	for (size_t k = 0; k < h->size; k++)
		h->p[k] = pattern(id, k);
}

static void *mixed(void *arg)
{
	struct mixed *m = arg;
	struct held h[HELD] = { { 0 } };

	pthread_barrier_wait(&start);
	for (int i = 0; i < MIXED_ROUNDS; i++) {
		int j = rand_r(&m->seed) % HELD;
		size_t size = 1 + (size_t)(rand_r(&m->seed) % 256);

		if (!h[j].p) {
			h[j].p = devm_kmalloc(m->dev, size, GFP_KERNEL);
			h[j].size = size;
			if (!h[j].p) {
				m->failed++;
				continue;
			}
			fill(&h[j], m->id);
		} else if (rand_r(&m->seed) % 4 == 0) {
			unsigned char *q;

			m->bad += !intact(&h[j], m->id);
			q = devm_krealloc(m->dev, h[j].p, size, GFP_KERNEL);
			if (!q) {
				m->failed++;
				continue;
			}
			h[j].p = q;
			h[j].size = size;
			fill(&h[j], m->id);
		} else {
			m->bad += !intact(&h[j], m->id);
			devm_kfree(m->dev, h[j].p);
			h[j].p = NULL;
		}
	}
	for (int j = 0; j < HELD; j++)
		if (h[j].p) {
			m->bad += !intact(&h[j], m->id);
			devm_kfree(m->dev, h[j].p);
		}
	return NULL;
}

static void test_many_threads_every_class(void **state)
{
	struct device *dev = *state;
	struct mixed m[THREADS];
	pthread_t t[THREADS];

	devm_kfree(dev, devm_kmalloc(dev, OBJ, GFP_KERNEL));
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		m[i] = (struct mixed){ .dev = dev,
				       .seed = 7u * (unsigned int)i + 1,
				       .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, mixed, &m[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(m[i].bad, 0);
		assert_int_equal(m[i].failed, 0);
	}
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_check(dev), 0);
	/* And the slots are there to be taken again, from any thread. */
	for (int i = 0; i < 100; i++)
		assert_non_null(devm_kmalloc(dev, 1 + i, GFP_KERNEL));
	expect_stats(dev, 100, 5050);
	devres_release_all(dev);
	expect_stats(dev, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_own_slot_own_line,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_many_threads_every_class,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
