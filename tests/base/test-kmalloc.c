// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The devm_kmalloc family: zeroing, ZERO_SIZE_PTR, overflow checks,
 * devm_kfree, devm_krealloc (place kept, contents kept, __GFP_ZERO tail),
 * the string and copy helpers, managed pages, fail-nth.
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
#include <devres/fault.h>
#include "testlib.h"

/* Dirties freed heap so that zeroing is observable. */
static void dirty_heap(size_t size)
{
	for (int i = 0; i < 8; i++) {
		char *p = malloc(size);

		assert_non_null(p);
		memset(p, 0x5a, size);
		free(p);
	}
}

static void test_kmalloc_basic(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;
	char *p, *q;

	p = devm_kmalloc(dev, 100, GFP_KERNEL);
	q = devm_kmalloc(dev, 3, GFP_KERNEL);
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
	assert_int_equal((uintptr_t)q % _Alignof(max_align_t), 0);
	memset(p, 1, 100);
	memset(q, 2, 3);
	expect_stats(dev, 2, 103);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - ledger_base.nodes, 2);
	assert_int_equal(l.node_bytes - ledger_base.node_bytes, 103);
	assert_int_equal(devres_release_all(dev), 2);
	expect_stats(dev, 0, 0);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes, ledger_base.nodes);
}

static void test_kzalloc_kcalloc_zeroed(void **state)
{
	struct device *dev = *state;
	unsigned char *z, *c, *m;

	dirty_heap(256 + 16);
	z = devm_kzalloc(dev, 256, GFP_KERNEL);
	assert_non_null(z);
	for (int i = 0; i < 256; i++)
		assert_int_equal(z[i], 0);
	dirty_heap(64 * 4 + 16);
	c = devm_kcalloc(dev, 64, 4, GFP_KERNEL);
	assert_non_null(c);
	for (int i = 0; i < 256; i++)
		assert_int_equal(c[i], 0);
	dirty_heap(40 + 16);
	m = devm_kmalloc(dev, 40, GFP_KERNEL | __GFP_ZERO);
	assert_non_null(m);
	for (int i = 0; i < 40; i++)
		assert_int_equal(m[i], 0);
	expect_stats(dev, 3, 256 + 256 + 40);
}

static void test_size_zero(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;

	start_capture();
	assert_ptr_equal(devm_kmalloc(dev, 0, GFP_KERNEL), ZERO_SIZE_PTR);
	assert_ptr_equal(devm_kzalloc(dev, 0, GFP_KERNEL), ZERO_SIZE_PTR);
	assert_ptr_equal(devm_kcalloc(dev, 0, 8, GFP_KERNEL), ZERO_SIZE_PTR);
	assert_ptr_equal(devm_kmalloc_array(dev, 8, 0, GFP_KERNEL),
			 ZERO_SIZE_PTR);
	assert_ptr_equal(devm_kmemdup(dev, "x", 0, GFP_KERNEL), ZERO_SIZE_PTR);
	/* Nothing recorded, nothing allocated. */
	expect_stats(dev, 0, 0);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes, ledger_base.nodes);
	/* Freeing ZERO_SIZE_PTR or NULL is ignored, without a WARN. */
	devm_kfree(dev, ZERO_SIZE_PTR);
	devm_kfree(dev, NULL);
	expect_no_warn();
}

static void test_array_overflow(void **state)
{
	struct device *dev = *state;
	size_t half = SIZE_MAX / 2 + 1;
	uint32_t *a;

	assert_null(devm_kmalloc_array(dev, half, 2, GFP_KERNEL));
	assert_null(devm_kmalloc_array(dev, 2, half, GFP_KERNEL));
	assert_null(devm_kcalloc(dev, SIZE_MAX, SIZE_MAX, GFP_KERNEL));
	assert_null(devm_kcalloc(dev, SIZE_MAX / 3, 4, GFP_KERNEL));
	expect_stats(dev, 0, 0);
	a = devm_kmalloc_array(dev, 10, sizeof(*a), GFP_KERNEL);
	assert_non_null(a);
	a[9] = 9;
	expect_stats(dev, 1, 40);
}

static void test_too_big(void **state)
{
	struct device *dev = *state;

	if (sizeof(size_t) > 4)
		assert_null(devm_kmalloc(dev, (size_t)1 << 32, GFP_KERNEL));
	assert_null(devm_kmalloc(dev, SIZE_MAX, GFP_KERNEL));
	expect_stats(dev, 0, 0);
}

static void test_kfree(void **state)
{
	struct device *dev = *state;
	void *a, *b, *c;

	norder = 0;
	add_rec(dev, 1);
	a = devm_kmalloc(dev, 10, GFP_KERNEL);
	b = devm_kmalloc(dev, 20, GFP_KERNEL);
	c = devm_kmalloc(dev, 30, GFP_KERNEL);
	add_rec(dev, 2);
	start_capture();
	devm_kfree(dev, b);
	devm_kfree(dev, a);
	expect_no_warn();
	expect_stats(dev, 3, 30 + 2 * (int)sizeof(int));
	devm_kfree(dev, c);
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 1);
}

static void test_kfree_foreign(void **state)
{
	struct device *dev = *state;
	void *theirs, *heap;

	theirs = devm_kmalloc(&other, 16, GFP_KERNEL);
	assert_non_null(theirs);
	assert_non_null(devm_kmalloc(dev, 16, GFP_KERNEL));
	start_capture();
	devm_kfree(dev, theirs);
	expect_warn("devm_kfree", "not a managed allocation of this device");
	/* Nothing was freed on either device. */
	expect_stats(&other, 1, 16);
	expect_stats(dev, 1, 16);
	heap = malloc(16);
	assert_non_null(heap);
	start_capture();
	devm_kfree(dev, heap);
	expect_warn("devm_kfree", "not a managed allocation of this device");
	free(heap);
	expect_stats(dev, 1, 16);
}

/* The release order as the dump shows it: one name per node, oldest first. */
static void dump_lines(struct device *dev, char lines[][128], int max, int *n)
{
	char *buf = dump_to_string(dev), *save, *line;

	*n = 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (*n < max)
			snprintf(lines[(*n)++], 128, "%s", line);
	free(buf);
}

static void test_krealloc_grow_keeps_place(void **state)
{
	struct device *dev = *state;
	char lines[8][128], want[64];
	unsigned char *p, *q;
	int n;

	norder = 0;
	add_rec(dev, 1);
	p = devm_kmalloc(dev, 16, GFP_KERNEL);
	assert_non_null(p);
	for (int i = 0; i < 16; i++)
		p[i] = (unsigned char)i;
	add_rec(dev, 2);

	q = devm_krealloc(dev, p, 100000, GFP_KERNEL);
	assert_non_null(q);
	for (int i = 0; i < 16; i++)
		assert_int_equal(q[i], i);
	memset(q + 16, 0xee, 100000 - 16);
	expect_stats(dev, 3, 100000 + 2 * (int)sizeof(int));

	/* Still between the two records, where p was. */
	dump_lines(dev, lines, 8, &n);
	assert_int_equal(n, 4);
	assert_non_null(strstr(lines[1], "rec_release"));
	snprintf(want, sizeof(want), "%p devm_krealloc (100000 bytes)",
		 (void *)q);
	assert_non_null(strstr(lines[2], want));
	assert_non_null(strstr(lines[3], "rec_release"));

	assert_int_equal(devres_release_all(dev), 3);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 1);
}

static void test_krealloc_shrink(void **state)
{
	struct device *dev = *state;
	unsigned char *p, *q;

	p = devm_kmalloc(dev, 1000, GFP_KERNEL);
	assert_non_null(p);
	for (int i = 0; i < 1000; i++)
		p[i] = (unsigned char)i;
	q = devm_krealloc(dev, p, 10, GFP_KERNEL);
	assert_non_null(q);
	for (int i = 0; i < 10; i++)
		assert_int_equal(q[i], i);
	expect_stats(dev, 1, 10);
	start_capture();
	devm_kfree(dev, q);
	expect_no_warn();
	expect_stats(dev, 0, 0);
}

static void test_krealloc_null_and_zero(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;
	void *p;

	p = devm_krealloc(dev, NULL, 24, GFP_KERNEL);
	assert_non_null(p);
	assert_ptr_not_equal(p, ZERO_SIZE_PTR);
	expect_stats(dev, 1, 24);
	assert_non_null(devm_krealloc(dev, ZERO_SIZE_PTR, 8, GFP_KERNEL));
	expect_stats(dev, 2, 32);
	start_capture();
	assert_ptr_equal(devm_krealloc(dev, p, 0, GFP_KERNEL), ZERO_SIZE_PTR);
	expect_no_warn();
	expect_stats(dev, 1, 8);
	assert_ptr_equal(devm_krealloc(dev, NULL, 0, GFP_KERNEL),
			 ZERO_SIZE_PTR);
	expect_stats(dev, 1, 8);
	assert_int_equal(devres_release_all(dev), 1);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.node_bytes, ledger_base.node_bytes);
}

static void test_krealloc_gfp_zero_tail(void **state)
{
	struct device *dev = *state;
	unsigned char *p, *q;

	/* Moving: every new byte past the old size is zero. */
	p = devm_kmalloc(dev, 16, GFP_KERNEL);
	assert_non_null(p);
	memset(p, 0xaa, 16);
	dirty_heap(8192 + 16);
	q = devm_krealloc(dev, p, 8192, GFP_KERNEL | __GFP_ZERO);
	assert_non_null(q);
	for (int i = 0; i < 16; i++)
		assert_int_equal(q[i], 0xaa);
	for (int i = 16; i < 8192; i++)
		assert_int_equal(q[i], 0);

	/* Shrunk then grown back (in place): the old bytes are zeroed too. */
	p = devm_kmalloc(dev, 48, GFP_KERNEL);
	assert_non_null(p);
	memset(p, 0xbb, 48);
	p = devm_krealloc(dev, p, 8, GFP_KERNEL);
	assert_non_null(p);
	q = devm_krealloc(dev, p, 48, GFP_KERNEL | __GFP_ZERO);
	assert_non_null(q);
	for (int i = 0; i < 8; i++)
		assert_int_equal(q[i], 0xbb);
	for (int i = 8; i < 48; i++)
		assert_int_equal(q[i], 0);
	expect_stats(dev, 2, 8192 + 48);
}

static void test_krealloc_foreign(void **state)
{
	struct device *dev = *state;
	char *theirs;

	theirs = devm_kmalloc(&other, 8, GFP_KERNEL);
	assert_non_null(theirs);
	strcpy(theirs, "theirs");
	start_capture();
	assert_null(devm_krealloc(dev, theirs, 4096, GFP_KERNEL));
	expect_warn("devm_krealloc", "not a managed allocation of this device");
	assert_string_equal(theirs, "theirs");
	expect_stats(&other, 1, 8);
	expect_stats(dev, 0, 0);
}

static void test_krealloc_failure_keeps_old(void **state)
{
	struct device *dev = *state;
	char *p;

	p = devm_kstrdup(dev, "still here", GFP_KERNEL);
	assert_non_null(p);
	devres_fail_nth(1);
	assert_null(devm_krealloc(dev, p, 1 << 20, GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_string_equal(p, "still here");
	expect_stats(dev, 1, 11);
	start_capture();
	devm_kfree(dev, p);
	expect_no_warn();
}

static char *call_kvasprintf(struct device *dev, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = devm_kvasprintf(dev, GFP_KERNEL, fmt, ap);
	va_end(ap);
	return s;
}

static void test_string_helpers(void **state)
{
	struct device *dev = *state;
	static const char src[] = "abc";
	const char *sc;
	char *s, *m;

	s = devm_kstrdup(dev, "hello", GFP_KERNEL);
	assert_string_equal(s, "hello");
	assert_null(devm_kstrdup(dev, NULL, GFP_KERNEL));
	sc = devm_kstrdup_const(dev, src, GFP_KERNEL);
	assert_string_equal(sc, "abc");
	assert_ptr_not_equal(sc, src);
	m = devm_kmemdup(dev, "\1\2\3\4", 4, GFP_KERNEL);
	assert_memory_equal(m, "\1\2\3\4", 4);
	s = devm_kasprintf(dev, GFP_KERNEL, "%s-%d", "irq", 42);
	assert_string_equal(s, "irq-42");
	s = call_kvasprintf(dev, "%05x", 0xbeef);
	assert_string_equal(s, "0beef");
	expect_stats(dev, 5, 6 + 4 + 4 + 7 + 6);
	start_capture();
	devm_kfree(dev, sc);
	expect_no_warn();
	expect_stats(dev, 4, 6 + 4 + 7 + 6);
}

static void test_fail_nth_kmalloc(void **state)
{
	struct device *dev = *state;
	void *p[5];

	devres_fail_nth(4);
	for (int i = 0; i < 5; i++)
		p[i] = devm_kmalloc(dev, 8, GFP_KERNEL);
	for (int i = 0; i < 5; i++)
		if (i == 3)
			assert_null(p[i]);
		else
			assert_non_null(p[i]);
	assert_int_equal(devres_fail_nth_get(), 0);
	expect_stats(dev, 4, 32);
	/* Zero-size calls allocate nothing and are no injection points. */
	devres_fail_nth(1);
	assert_ptr_equal(devm_kmalloc(dev, 0, GFP_KERNEL), ZERO_SIZE_PTR);
	assert_int_equal(devres_fail_nth_get(), 1);
	assert_null(devm_kzalloc(dev, 8, GFP_KERNEL));
	expect_stats(dev, 4, 32);
}

static void test_pages(void **state)
{
	struct device *dev = *state;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long a, b, z;

	a = devm_get_free_pages(dev, GFP_KERNEL, 0);
	b = devm_get_free_pages(dev, GFP_KERNEL, 2);
	assert_int_not_equal(a, 0);
	assert_int_not_equal(b, 0);
	assert_int_equal(a % (unsigned long)page, 0);
	assert_int_equal(b % (unsigned long)page, 0);
	memset((void *)a, 1, (size_t)page);
	memset((void *)b, 2, (size_t)page << 2);
	dirty_heap((size_t)page << 1);
	z = devm_get_free_pages(dev, GFP_KERNEL | __GFP_ZERO, 1);
	assert_int_not_equal(z, 0);
	for (long i = 0; i < page << 1; i++)
		assert_int_equal(((unsigned char *)z)[i], 0);
	expect_stats(dev, 3, 3 * (int)(2 * sizeof(long)));

	start_capture();
	devm_free_pages(dev, b);
	expect_no_warn();
	expect_stats(dev, 2, 2 * (int)(2 * sizeof(long)));
	/* Too large an order fails cleanly. */
	assert_int_equal(devm_get_free_pages(dev, GFP_KERNEL, 21), 0);
	assert_int_equal(devres_release_all(dev), 2);
}

static void test_pages_fail_nth(void **state)
{
	struct device *dev = *state;

	/* The node and the pages are each one injection point. */
	devres_fail_nth(1);
	assert_int_equal(devm_get_free_pages(dev, GFP_KERNEL, 0), 0);
	devres_fail_nth(2);
	assert_int_equal(devm_get_free_pages(dev, GFP_KERNEL, 0), 0);
	assert_int_equal(devres_fail_nth_get(), 0);
	expect_stats(dev, 0, 0);
}

static void test_pages_foreign(void **state)
{
	struct device *dev = *state;
	unsigned long theirs;

	theirs = devm_get_free_pages(&other, GFP_KERNEL, 0);
	assert_int_not_equal(theirs, 0);
	assert_int_not_equal(devm_get_free_pages(dev, GFP_KERNEL, 0), 0);
	start_capture();
	devm_free_pages(dev, theirs);
	expect_warn("devm_free_pages", "not a managed page allocation of this "
				       "device");
	memset((void *)theirs, 0, 64);
	expect_stats(&other, 1, 2 * (int)sizeof(long));
	expect_stats(dev, 1, 2 * (int)sizeof(long));
}

/*
 * Fill, then publish. A log sink runs right after a
 * node is published, as another thread could: it checks that the memory is
 * already filled, then releases everything, as a devres_release_all() on
 * another thread may. Before the fix, the copy, the format and the zeroing
 * ran after publication: the sink saw unfilled memory, and (under ASan) the
 * fill wrote into freed memory.
 */
struct pub_check {
	struct device *dev;
	const char *op;	  /* "ADD" or "REPLACE" */
	const void *want; /* the bytes expected at the node's start */
	size_t want_len;
	size_t zero_from; /* then zeroes up to zero_to */
	size_t zero_to;
	int seen;
	int bad;
};

static void publish_sink(void *ctx, int level, const char *line)
{
	struct pub_check *pc = ctx;
	char op[16];
	void *node;
	const unsigned char *p;

	if (level != DEVRES_LOG_DEBUG ||
	    sscanf(line, "%*[^:]: DEVRES %15s %p", op, &node) != 2 ||
	    strcmp(op, pc->op) != 0)
		return;
	pc->seen++;
	p = node;
	if (pc->want && memcmp(p, pc->want, pc->want_len) != 0)
		pc->bad++;
	for (size_t i = pc->zero_from; i < pc->zero_to; i++)
		if (p[i])
			pc->bad++;
	devres_release_all(pc->dev);
}

static void watch_publish(struct pub_check *pc)
{
	devres_set_log_sink(publish_sink, pc);
	devres_set_log(true);
}

static void unwatch_publish(struct pub_check *pc)
{
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(pc->seen, 1);
	assert_int_equal(pc->bad, 0);
	expect_stats(pc->dev, 0, 0);
}

static void test_kmemdup_filled_before_published(void **state)
{
	static const char src[200] = "kmemdup: filled before it is published";
	struct pub_check pc = { *state, "ADD", src, sizeof(src), 0, 0, 0, 0 };

	dirty_heap(sizeof(src) + 16);
	watch_publish(&pc);
	assert_non_null(devm_kmemdup(pc.dev, src, sizeof(src), GFP_KERNEL));
	unwatch_publish(&pc);
}

static void test_kstrdup_filled_before_published(void **state)
{
	static const char src[] = "kstrdup: filled before it is published, "
				  "all of it";
	struct pub_check pc = { *state, "ADD", src, sizeof(src), 0, 0, 0, 0 };

	dirty_heap(sizeof(src) + 16);
	watch_publish(&pc);
	assert_non_null(devm_kstrdup(pc.dev, src, GFP_KERNEL));
	unwatch_publish(&pc);
}

static void test_kasprintf_filled_before_published(void **state)
{
	static const char want[] = "kasprintf 42 formatted before publication";
	struct pub_check pc = { *state, "ADD", want, sizeof(want), 0, 0, 0, 0 };

	dirty_heap(sizeof(want) + 16);
	watch_publish(&pc);
	assert_non_null(devm_kasprintf(pc.dev, GFP_KERNEL,
				       "kasprintf %d formatted before %s", 42,
				       "publication"));
	unwatch_publish(&pc);
}

static void test_krealloc_zero_tail_before_published(void **state)
{
	struct pub_check pc = { *state, "REPLACE", "abcdefgh", 8, 8, 240, 0, 0 };
	char *p = devm_kmalloc(pc.dev, 8, GFP_KERNEL);

	assert_non_null(p);
	memcpy(p, "abcdefgh", 8);
	dirty_heap(240 + 16);
	watch_publish(&pc);
	assert_non_null(devm_krealloc(pc.dev, p, 240, GFP_KERNEL | __GFP_ZERO));
	unwatch_publish(&pc);
}

/* Reading the node after publishing it: an ASan use-after-free before. */
static void test_get_free_pages_not_read_after_publish(void **state)
{
	struct pub_check pc = { *state, "ADD", NULL, 0, 0, 0, 0, 0 };

	watch_publish(&pc);
	assert_int_not_equal(devm_get_free_pages(pc.dev, GFP_KERNEL, 0), 0);
	unwatch_publish(&pc);
}

#define T(f) cmocka_unit_test_setup_teardown(f, two_dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_kmalloc_basic),
		T(test_kzalloc_kcalloc_zeroed),
		T(test_size_zero),
		T(test_array_overflow),
		T(test_too_big),
		T(test_kfree),
		T(test_kfree_foreign),
		T(test_krealloc_grow_keeps_place),
		T(test_krealloc_shrink),
		T(test_krealloc_null_and_zero),
		T(test_krealloc_gfp_zero_tail),
		T(test_krealloc_foreign),
		T(test_krealloc_failure_keeps_old),
		T(test_string_helpers),
		T(test_fail_nth_kmalloc),
		T(test_pages),
		T(test_pages_fail_nth),
		T(test_pages_foreign),
		T(test_kmemdup_filled_before_published),
		T(test_kstrdup_filled_before_published),
		T(test_kasprintf_filled_before_published),
		T(test_krealloc_zero_tail_before_published),
		T(test_get_free_pages_not_read_after_publish),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
