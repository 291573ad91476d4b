// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * Log lines as a reader pairs them: each managed-memory
 * node is named by the call that made it, in its ADD, REPLACE, REM and REL
 * lines, in devres_dump() and in its WARNs; a group's lines carry its id,
 * the same at its open as at its release. White-box (the core's private
 * header, the static library): the names live in spare bits of the node's
 * kind word, and the node must stay 16 bytes and of the one kmalloc kind
 * for every lookup.
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
#include "testlib.h"
#include "../../src/base/node.h"

/* Larger than any slab slot: such a node is a heap chunk of its own. */
#define BIG 1000
#define BIGGER ((size_t)2 * BIG) /* too big to grow into: moves */

static int teardown(void **state)
{
	devres_set_log(false);
	return dev_teardown(state);
}

/* "<dev>: DEVRES <op> <node> <name> (<size> bytes)", of a resource. */
struct res_line {
	char op[16];
	void *node;
	char name[64];
	size_t size;
};

static struct res_line res_line(int i)
{
	struct res_line l = { 0 };
	int n;

	assert_true(i < cap.n);
	assert_int_equal(cap.level[i], DEVRES_LOG_DEBUG);
	n = sscanf(cap.line[i], "test-dev: DEVRES %15s %p %63s (%zu bytes)",
		   l.op, &l.node, l.name, &l.size);
	if (n != 4)
		print_error("unparsed log line: \"%s\"\n", cap.line[i]);
	assert_int_equal(n, 4);
	return l;
}

static void expect_res(int i, const char *op, const void *p, const char *name,
		       size_t size)
{
	struct res_line l = res_line(i);

	if (strcmp(l.name, name) != 0)
		print_error("line %d: \"%s\", want %s\n", i, cap.line[i], name);
	assert_string_equal(l.op, op);
	assert_ptr_equal(l.node, p);
	assert_string_equal(l.name, name);
	assert_int_equal(l.size, size);
}

/* "<dev>: DEVRES <op> <node> group <c> <id> (0 bytes)": returns <id>. */
static void *group_line(int i, const char *op, char c)
{
	char gop[16], mark = 0;
	void *node, *id = NULL;
	size_t size = 1;
	int n;

	assert_true(i < cap.n);
	n = sscanf(cap.line[i],
		   "test-dev: DEVRES %15s %p group %c %p (%zu bytes)", gop,
		   &node, &mark, &id, &size);
	if (n != 5)
		print_error("unparsed group line: \"%s\"\n", cap.line[i]);
	assert_int_equal(n, 5);
	assert_string_equal(gop, op);
	assert_int_equal(mark, c);
	assert_int_equal(size, 0);
	return id;
}

static char *vasp(struct device *dev, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = devm_kvasprintf(dev, GFP_KERNEL, fmt, ap);
	va_end(ap);
	return s;
}

/* Every call of the family, small and big; @p[i] and @size[i] are its. */
#define NR_CALLS 19

static const char *const call_names[NR_CALLS] = {
	"devm_kmalloc",	      "devm_kmalloc",	    "devm_kzalloc",
	"devm_kzalloc",	      "devm_kmalloc_array", "devm_kmalloc_array",
	"devm_kcalloc",	      "devm_kcalloc",	    "devm_kmemdup",
	"devm_kmemdup",	      "devm_kstrdup",	    "devm_kstrdup",
	"devm_kstrdup_const", "devm_kvasprintf",    "devm_kvasprintf",
	"devm_kasprintf",     "devm_kasprintf",	    "devm_krealloc",
	"devm_krealloc",
};

static void put(void **p, size_t *size, int *i, void *ptr, size_t len)
{
	p[*i] = ptr;
	size[*i] = len;
	++*i;
}

static void make_all(struct device *dev, void **p, size_t *size)
{
	static char src[BIG + 1];
	int i = 0;

	memset(src, 'a', BIG);
	put(p, size, &i, devm_kmalloc(dev, 24, GFP_KERNEL), 24);
	put(p, size, &i, devm_kmalloc(dev, BIG, GFP_KERNEL), BIG);
	put(p, size, &i, devm_kzalloc(dev, 24, GFP_KERNEL), 24);
	put(p, size, &i, devm_kzalloc(dev, BIG, GFP_KERNEL), BIG);
	put(p, size, &i, devm_kmalloc_array(dev, 3, 8, GFP_KERNEL), 24);
	put(p, size, &i, devm_kmalloc_array(dev, 10, 100, GFP_KERNEL), BIG);
	put(p, size, &i, devm_kcalloc(dev, 3, 8, GFP_KERNEL), 24);
	put(p, size, &i, devm_kcalloc(dev, 10, 100, GFP_KERNEL), BIG);
	put(p, size, &i, devm_kmemdup(dev, src, 24, GFP_KERNEL), 24);
	put(p, size, &i, devm_kmemdup(dev, src, BIG, GFP_KERNEL), BIG);
	put(p, size, &i, devm_kstrdup(dev, "23 bytes and a NUL here", 0), 24);
	put(p, size, &i, devm_kstrdup(dev, src, GFP_KERNEL), BIG + 1);
	put(p, size, &i, (void *)devm_kstrdup_const(dev, "x", 0), 2);
	put(p, size, &i, vasp(dev, "%d", 1234), 5);
	put(p, size, &i, vasp(dev, "%*d", BIG - 1, 1), BIG);
	put(p, size, &i, devm_kasprintf(dev, GFP_KERNEL, "%d", 1234), 5);
	put(p, size, &i, devm_kasprintf(dev, GFP_KERNEL, "%*d", BIG - 1, 1),
	    BIG);
	put(p, size, &i, devm_krealloc(dev, NULL, 24, GFP_KERNEL), 24);
	put(p, size, &i, devm_krealloc(dev, NULL, BIG, GFP_KERNEL), BIG);
	assert_int_equal(i, NR_CALLS);
	for (i = 0; i < NR_CALLS; i++)
		assert_non_null(p[i]);
}

/* Each ADD names its call, and so does each REL, newest first. */
static void test_each_call_names_itself(void **state)
{
	struct device *dev = *state;
	size_t size[NR_CALLS];
	void *p[NR_CALLS];

	start_log_capture();
	devres_set_log(true);
	make_all(dev, p, size);
	assert_int_equal(devres_release_all(dev), NR_CALLS);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 2 * NR_CALLS);
	for (int i = 0; i < NR_CALLS; i++) {
		expect_res(i, "ADD", p[i], call_names[i], size[i]);
		expect_res(2 * NR_CALLS - 1 - i, "REL", p[i], call_names[i],
			   size[i]);
	}
}

static void test_dump_names_each_call(void **state)
{
	struct device *dev = *state;
	size_t size[NR_CALLS];
	void *p[NR_CALLS];
	char want[96], *buf;

	make_all(dev, p, size);
	buf = dump_to_string(dev);
	for (int i = 0; i < NR_CALLS; i++) {
		snprintf(want, sizeof(want), "  %p %s (%zu bytes)\n", p[i],
			 call_names[i], size[i]);
		if (!strstr(buf, want))
			print_error("no \"%s\" in:\n%s", want, buf);
		assert_non_null(strstr(buf, want));
	}
	assert_null(strstr(buf, "devm_kmalloc_release"));
	free(buf);
}

/*
 * Every name is of the one kmalloc kind: the node stays 16 bytes, the
 * checker accepts it, and devm_kfree() and devm_krealloc() find it by that
 * kind (through the slab, the index or a list search); the REM line still
 * names its call.
 */
static void test_one_kind_for_every_call(void **state)
{
	struct device *dev = *state;
	size_t size[NR_CALLS], bytes = 0;
	void *p[NR_CALLS], *q;

	assert_int_equal(sizeof(struct devres__node), 16);
	make_all(dev, p, size);
	for (int i = 0; i < NR_CALLS; i++) {
		assert_ptr_equal(node_data(to_node(p[i])), p[i]);
		assert_int_equal(DR_KIND(to_node(p[i])), DR_KIND_KMALLOC);
		assert_true(to_node(p[i])->kind & DR_ADDED);
		bytes += size[i];
	}
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, NR_CALLS, (int)bytes);
	/* No release function names the kind: none finds it, as before. */
	assert_null(devres_find(dev, NULL, NULL, NULL));

	start_log_capture();
	devres_set_log(true);
	for (int i = 0; i < NR_CALLS; i += 2)
		devm_kfree(dev, p[i]);
	for (int i = 1; i < NR_CALLS; i += 2) {
		/* Moved: found by kind in the list and replaced there. */
		q = devm_krealloc(dev, p[i], BIGGER, GFP_KERNEL);
		assert_non_null(q);
		p[i] = q;
	}
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, NR_CALLS);
	for (int i = 0, line = 0; i < NR_CALLS; i += 2, line++)
		expect_res(line, "REM", p[i], call_names[i], size[i]);
	for (int i = 1, line = (NR_CALLS + 1) / 2; i < NR_CALLS; i += 2, line++)
		expect_res(line, "REPLACE", p[i], "devm_krealloc", BIGGER);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, NR_CALLS / 2, (int)(NR_CALLS / 2 * BIGGER));
}

/*
 * A node devm_krealloc() touched is devm_krealloc's from then on, whether
 * it stayed in place or moved, from the slab or from the heap.
 */
static void test_krealloc_renames(void **state)
{
	struct device *dev = *state;
	char *small, *big, *q;

	small = devm_kzalloc(dev, 100, GFP_KERNEL);
	big = devm_kstrdup(dev, "a string", GFP_KERNEL);
	assert_non_null(small);
	assert_non_null(big);
	start_log_capture();
	devres_set_log(true);
	assert_ptr_equal(devm_krealloc(dev, small, 50, GFP_KERNEL), small);
	q = devm_krealloc(dev, big, 5000, GFP_KERNEL);
	assert_non_null(q);
	assert_string_equal(q, "a string");
	devm_kfree(dev, small);
	assert_int_equal(devres_release_all(dev), 1);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 4);
	expect_res(0, "REPLACE", small, "devm_krealloc", 50);
	expect_res(1, "REPLACE", q, "devm_krealloc", 5000);
	expect_res(2, "REM", small, "devm_krealloc", 50);
	expect_res(3, "REL", q, "devm_krealloc", 5000);
}

/* A WARN names the call made, not the one it is built on. */
static void test_warns_name_the_call(void **state)
{
	static const char *const want[] = {
		"devm_kzalloc",	   "devm_kmalloc_array", "devm_kcalloc",
		"devm_kstrdup",	   "devm_kstrdup_const", "devm_kasprintf",
		"devm_kvasprintf", "devm_kmemdup",	 "devm_krealloc",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		void *p = NULL;

		start_capture();
		switch (i) {
		case 0:
			p = devm_kzalloc(NULL, 8, GFP_KERNEL);
			break;
		case 1:
			p = devm_kmalloc_array(NULL, 2, 4, GFP_KERNEL);
			break;
		case 2:
			p = devm_kcalloc(NULL, 2, 4, GFP_KERNEL);
			break;
		case 3:
			p = devm_kstrdup(NULL, "x", GFP_KERNEL);
			break;
		case 4:
			p = (void *)devm_kstrdup_const(NULL, "x", GFP_KERNEL);
			break;
		case 5:
			p = devm_kasprintf(NULL, GFP_KERNEL, "%d", 1);
			break;
		case 6:
			p = vasp(NULL, "%d", 1);
			break;
		case 7:
			p = devm_kmemdup(NULL, "x", 1, GFP_KERNEL);
			break;
		default:
			p = devm_krealloc(NULL, NULL, 8, GFP_KERNEL);
			break;
		}
		assert_null(p);
		expect_warn_on("(no device)", want[i], "NULL device");
	}
}

/* A group's open, close and release lines carry its id, one and the same. */
static void test_group_lines_carry_the_id(void **state)
{
	struct device *dev = *state;
	void *g, *k;

	start_log_capture();
	devres_set_log(true);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	k = devm_kzalloc(dev, 8, GFP_KERNEL);
	assert_non_null(k);
	devres_close_group(dev, g);
	assert_int_equal(devres_release_group(dev, g), 1);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 6);
	/* A NULL id: the group's own address, which open returned. */
	assert_ptr_equal(group_line(0, "ADD", '<'), g);
	expect_res(1, "ADD", k, "devm_kzalloc", 8);
	assert_ptr_equal(group_line(2, "ADD", '>'), g);
	assert_ptr_equal(group_line(3, "REL", '>'), g);
	expect_res(4, "REL", k, "devm_kzalloc", 8);
	assert_ptr_equal(group_line(5, "REL", '<'), g);
}

/*
 * Given ids, interleaved groups, a removal and a group released open: each
 * line names its own group, so a reader pairs them however they nest.
 */
static void test_groups_pair_by_id(void **state)
{
	struct device *dev = *state;
	static int a, b, c;

	start_log_capture();
	devres_set_log(true);
	assert_ptr_equal(devres_open_group(dev, &a, GFP_KERNEL), &a);
	assert_ptr_equal(devres_open_group(dev, &b, GFP_KERNEL), &b);
	assert_ptr_equal(devres_open_group(dev, &c, GFP_KERNEL), &c);
	devres_close_group(dev, &a); /* groups need not nest */
	devres_remove_group(dev, &c);
	assert_int_equal(devres_release_group(dev, &b), 0);
	assert_int_equal(devres_release_group(dev, &a), 0);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 8);
	assert_ptr_equal(group_line(0, "ADD", '<'), &a);
	assert_ptr_equal(group_line(1, "ADD", '<'), &b);
	assert_ptr_equal(group_line(2, "ADD", '<'), &c);
	assert_ptr_equal(group_line(3, "ADD", '>'), &a);
	assert_ptr_equal(group_line(4, "REM", '<'), &c);
	/* b, open: released from the head down to its open marker. */
	assert_ptr_equal(group_line(5, "REL", '<'), &b);
	assert_ptr_equal(group_line(6, "REL", '>'), &a);
	assert_ptr_equal(group_line(7, "REL", '<'), &a);
}

/* devres_release_all() takes the groups with the rest: ids still there. */
static void test_release_all_lines_carry_ids(void **state)
{
	struct device *dev = *state;
	static int a;
	void *g;

	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(devres_open_group(dev, &a, GFP_KERNEL));
	devres_close_group(dev, &a);
	start_log_capture();
	devres_set_log(true);
	assert_int_equal(devres_release_all(dev), 0);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 3);
	assert_ptr_equal(group_line(0, "REL", '>'), &a);
	assert_ptr_equal(group_line(1, "REL", '<'), &a);
	assert_ptr_equal(group_line(2, "REL", '<'), g);
}

static const struct bus_type lbus = { .name = "lnbus" };

static int kz_probe(struct device *dev)
{
	return devm_kzalloc(dev, 8, GFP_KERNEL) ? 0 : -ENOMEM;
}

static struct device_driver ldrv = {
	.name = "lndrv",
	.bus = &lbus,
	.probe = kz_probe,
};

#define BINDING " owned group \"driver binding\" (0 bytes)"

/* The driver core's binding has no id: its lines carry its label. */
static void test_binding_lines_carry_the_label(void **state)
{
	static const char *const want[4] = {
		BINDING,
		" devm_kzalloc (8 bytes)",
		" devm_kzalloc (8 bytes)",
		BINDING,
	};
	struct device *dev;

	(void)state;
	assert_int_equal(t_bus_register(&lbus), 0);
	dev = heap_dev(&lbus, "ln.0");
	assert_non_null(dev);
	assert_int_equal(t_device_add(dev), 0);
	start_log_capture();
	devres_set_log(true);
	assert_int_equal(t_driver_register(&ldrv), 0);
	assert_true(device_is_bound(dev));
	device_release_driver(dev);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(count_prefix("ln.0: DEVRES "), 4);
	assert_int_equal(count_prefix("ln.0: DEVRES ADD "), 2);
	assert_int_equal(count_prefix("ln.0: DEVRES REL "), 2);
	for (int i = 0, n = 0; i < cap.n; i++) {
		if (strncmp(cap.line[i], "ln.0: DEVRES ", 13) != 0)
			continue;
		if (!strstr(cap.line[i], want[n]))
			print_error("line %d: \"%s\", want \"%s\"\n", i,
				    cap.line[i], want[n]);
		assert_non_null(strstr(cap.line[i], want[n]));
		n++;
	}
	t_driver_unregister(&ldrv);
	t_device_unregister(dev);
	t_bus_unregister(&lbus);
}

/* Only managed memory carries a maker, and only a known one. */
static void test_checker_sees_a_bad_maker(void **state)
{
	struct device *dev = *state;
	char *k = devm_kmalloc(dev, 8, GFP_KERNEL);
	void *r = devres_alloc(rec_release, sizeof(int), GFP_KERNEL);
	uint32_t kk, rk;

	assert_non_null(k);
	assert_non_null(r);
	devres_add(dev, r);
	kk = to_node(k)->kind;
	rk = to_node(r)->kind;
	to_node(r)->kind = rk | DR_MAKER(DR_MK_KZALLOC);
	start_capture();
	assert_int_equal(devres_check(dev), -EUCLEAN);
	expect_warn("devres_check", "bad maker");
	to_node(r)->kind = rk;
	to_node(k)->kind = (kk & ~DR_MAKER_MASK) | DR_MAKER(DR_MK_NR);
	start_capture();
	assert_int_equal(devres_check(dev), -EUCLEAN);
	expect_warn("devres_check", "bad maker");
	to_node(k)->kind = kk;
	assert_int_equal(devres_check(dev), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_each_call_names_itself),
		T(test_dump_names_each_call),
		T(test_one_kind_for_every_call),
		T(test_krealloc_renames),
		T(test_warns_name_the_call),
		T(test_group_lines_carry_the_id),
		T(test_groups_pair_by_id),
		T(test_release_all_lines_carry_ids),
		T(test_binding_lines_carry_the_label),
		T(test_checker_sees_a_bad_maker),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
