// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Debugging: ADD/REM/REL/REPLACE logging (DEVRES_LOG=1 or devres_set_log()),
 * the replaceable sink and its stderr default, devres_dump(),
 * devres_get_stats(), release names, WARN lines and their counter.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

/* Logging goes off again before the shared teardown checks the ledger. */
static int teardown(void **state)
{
	devres_set_log(false);
	return dev_teardown(state);
}

/* One parsed log line: "<dev>: DEVRES <op> <node> <name> (<size> bytes)". */
struct logline {
	char dev[64];
	char op[16];
	void *node;
	char name[64];
	size_t size;
};

static void parse(const char *line, struct logline *l)
{
	int n = sscanf(line, "%63[^:]: DEVRES %15s %p %63s (%zu bytes)", l->dev,
		       l->op, &l->node, l->name, &l->size);

	if (n != 5)
		print_error("unparsed log line: \"%s\"\n", line);
	assert_int_equal(n, 5);
}

static void expect_log(int i, const char *op, const char *name, size_t size,
		       struct logline *ret)
{
	struct logline l;

	assert_true(i < cap.n);
	assert_int_equal(cap.level[i], DEVRES_LOG_DEBUG);
	parse(cap.line[i], &l);
	assert_string_equal(l.dev, "test-dev");
	assert_string_equal(l.op, op);
	assert_string_equal(l.name, name);
	assert_int_equal(l.size, size);
	assert_non_null(l.node);
	if (ret)
		*ret = l;
}

static void my_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void my_action(void *data)
{
	(void)data;
}

/* Splits @buf into lines in place. */
static int split(char *buf, char **lines, int max)
{
	char *save, *line;
	int n = 0;

	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (n < max)
			lines[n++] = line;
	return n;
}

static void test_log_add_rem_rel(void **state)
{
	struct device *dev = *state;
	struct logline add, rem, add2, rel;
	void *r;

	r = devres_alloc(my_release, 24, GFP_KERNEL);
	assert_non_null(r);
	start_log_capture();
	devres_set_log(true);
	devres_add(dev, r);
	assert_ptr_equal(devres_remove(dev, my_release, NULL, NULL), r);
	devres_add(dev, r);
	assert_int_equal(devres_release_all(dev), 1);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 4);
	expect_log(0, "ADD", "my_release", 24, &add);
	expect_log(1, "REM", "my_release", 24, &rem);
	expect_log(2, "ADD", "my_release", 24, &add2);
	expect_log(3, "REL", "my_release", 24, &rel);
	/* All four name the same node. */
	assert_ptr_equal(add.node, rem.node);
	assert_ptr_equal(add.node, add2.node);
	assert_ptr_equal(add.node, rel.node);
}

static void test_log_action_kmalloc_replace(void **state)
{
	struct device *dev = *state;
	struct logline add, rep;
	void *p, *q;

	start_log_capture();
	devres_set_log(true);
	assert_int_equal(devm_add_action(dev, my_action, NULL), 0);
	p = devm_kmalloc(dev, 16, GFP_KERNEL);
	assert_non_null(p);
	q = devm_krealloc(dev, p, 100000, GFP_KERNEL);
	assert_non_null(q);
	/* Shrinking stays in place, and is logged all the same. */
	assert_ptr_equal(devm_krealloc(dev, q, 10, GFP_KERNEL), q);
	devm_kfree(dev, q);
	devm_release_action(dev, my_action, NULL);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);

	assert_int_equal(cap.n, 6);
	expect_log(0, "ADD", "my_action", sizeof(void *), NULL);
	expect_log(1, "ADD", "devm_kmalloc", 16, &add);
	/* Named after the call that resized it from then on. */
	expect_log(2, "REPLACE", "devm_krealloc", 100000, &rep);
	assert_ptr_not_equal(add.node, rep.node);
	expect_log(3, "REPLACE", "devm_krealloc", 10, &add);
	assert_ptr_equal(add.node, rep.node);
	expect_log(4, "REM", "devm_krealloc", 10, NULL);
	expect_log(5, "REM", "my_action", sizeof(void *), NULL);
}

static void test_log_groups(void **state)
{
	struct device *dev = *state;
	void *g;

	start_log_capture();
	devres_set_log(true);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	devres_close_group(dev, g);
	assert_int_equal(devres_release_group(dev, g), 0);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cap.level[i], DEVRES_LOG_DEBUG);
		assert_non_null(strstr(cap.line[i], "test-dev: DEVRES "));
		assert_non_null(strstr(cap.line[i], "group"));
	}
	assert_non_null(strstr(cap.line[0], "DEVRES ADD"));
	assert_non_null(strstr(cap.line[1], "DEVRES ADD"));
	assert_non_null(strstr(cap.line[2], "DEVRES REL"));
	assert_non_null(strstr(cap.line[3], "DEVRES REL"));
}

static void test_log_off(void **state)
{
	struct device *dev = *state;
	void *g;

	start_log_capture();
	devres_set_log(false);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	assert_int_equal(devm_add_action(dev, my_action, NULL), 0);
	devres_close_group(dev, g);
	assert_int_equal(devres_release_all(dev), 2);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 0);
}

static void test_dump(void **state)
{
	struct device *dev = *state;
	char *buf, *lines[16], want[64];
	void *r, *k, *g;
	int n;

	buf = dump_to_string(dev);
	n = split(buf, lines, 16);
	assert_int_equal(n, 1);
	assert_string_equal(lines[0], "test-dev: 0 resources, 0 markers");
	free(buf);

	r = devres_alloc(my_release, 40, GFP_KERNEL);
	assert_non_null(r);
	devres_add(dev, r);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	assert_int_equal(devm_add_action(dev, my_action, NULL), 0);
	k = devm_kmalloc(dev, 100, GFP_KERNEL);
	assert_non_null(k);
	devres_close_group(dev, g);

	buf = dump_to_string(dev);
	n = split(buf, lines, 16);
	assert_int_equal(n, 6);
	assert_string_equal(lines[0], "test-dev: 3 resources, 2 markers");
	/* Oldest first, group markers around what the group holds. */
	snprintf(want, sizeof(want), "%p my_release (40 bytes)", r);
	assert_non_null(strstr(lines[1], want));
	snprintf(want, sizeof(want), "group %p {", g);
	assert_non_null(strstr(lines[2], want));
	snprintf(want, sizeof(want), "my_action (%zu bytes)", sizeof(void *));
	assert_non_null(strstr(lines[3], want));
	snprintf(want, sizeof(want), "%p devm_kmalloc (100 bytes)", k);
	assert_non_null(strstr(lines[4], want));
	snprintf(want, sizeof(want), "} group %p", g);
	assert_non_null(strstr(lines[5], want));
	free(buf);
}

static void anon_release(struct device *dev)
{
	(void)dev;
}

static void test_dump_unnamed_device(void **state)
{
	static struct device anon;
	char *buf, want[64];

	(void)state;
	memset(&anon, 0, sizeof(anon));
	anon.release = anon_release;
	device_initialize(&anon);
	assert_non_null(devm_kmalloc(&anon, 1, GFP_KERNEL));
	buf = dump_to_string(&anon);
	snprintf(want, sizeof(want), "device@%p: 1 resources, 0 markers\n",
		 (void *)&anon);
	assert_memory_equal(buf, want, strlen(want));
	free(buf);
	assert_int_equal(devres_release_all(&anon), 1);
	put_device(&anon);
}

static void test_stats(void **state)
{
	struct device *dev = *state;
	struct devres_stats st = { -1, -1 };
	void *g;

	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 0);
	assert_int_equal(st.total_size, 0);
	assert_non_null(devm_kmalloc(dev, 10, GFP_KERNEL));
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
	assert_non_null(devm_kzalloc(dev, 20, GFP_KERNEL));
	assert_int_equal(devm_add_action(dev, my_action, NULL), 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 3);
	assert_int_equal(st.total_size, 30 + (int)sizeof(void *));
	assert_int_equal(devres_release_group(dev, g), 2);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	assert_int_equal(st.total_size, 10);
	assert_int_equal(devres_release_all(dev), 1);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 0);
	assert_int_equal(st.total_size, 0);
}

static void late_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void test_release_names(void **state)
{
	struct device *dev = *state;
	char *buf;
	void *r;

	/* The first name given for a release function is the one kept. */
	r = devres_alloc(late_release, 4, GFP_KERNEL);
	assert_non_null(r);
	devres_free(r);
	r = devres_alloc_named(late_release, 4, GFP_KERNEL, "other_name");
	assert_non_null(r);
	devres_add(dev, r);
	assert_int_not_equal(devm_get_free_pages(dev, GFP_KERNEL, 0), 0);
	assert_non_null(devm_kstrdup(dev, "x", GFP_KERNEL));
	assert_int_equal(devm_add_action(dev, my_action, dev), 0);
	buf = dump_to_string(dev);
	assert_non_null(strstr(buf, " late_release (4 bytes)"));
	assert_null(strstr(buf, "other_name"));
	assert_non_null(strstr(buf, " devm_pages_release ("));
	assert_non_null(strstr(buf, " devm_kstrdup (2 bytes)"));
	assert_non_null(strstr(buf, " my_action ("));
	free(buf);
}

static void test_warn_line_and_count(void **state)
{
	struct device *dev = *state;
	int before = devres_warn_count();

	start_log_capture();
	devm_kfree(dev, &before);
	devres_close_group(dev, NULL);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_warn_count(), before + 2);
	assert_int_equal(cap.n, 2);
	assert_int_equal(cap.level[0], DEVRES_LOG_WARNING);
	assert_int_equal(cap.level[1], DEVRES_LOG_WARNING);
	assert_memory_equal(cap.line[0], "WARNING: test-dev: devm_kfree: ",
			    strlen("WARNING: test-dev: devm_kfree: "));
	assert_memory_equal(cap.line[1],
			    "WARNING: test-dev: devres_close_group: ",
			    strlen("WARNING: test-dev: devres_close_group: "));
	/* Logging off does not silence WARNs. */
	devres_set_log(false);
	start_log_capture();
	devm_kfree(dev, &before);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 1);
	assert_int_equal(devres_warn_count(), before + 3);
}

/* Runs @fn with fd 2 redirected to a file; returns what it wrote. */
static char *capture_stderr(void (*fn)(struct device *), struct device *dev)
{
	FILE *tmp = tmpfile();
	char *out;
	long len;
	int saved;

	assert_non_null(tmp);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(tmp), 2), 2);
	fn(dev);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	len = ftell(tmp);
	assert_true(len >= 0);
	out = calloc(1, (size_t)len + 1);
	assert_non_null(out);
	rewind(tmp);
	assert_int_equal(fread(out, 1, (size_t)len, tmp), (size_t)len);
	fclose(tmp);
	return out;
}

static void warn_and_log(struct device *dev)
{
	int x;

	devres_set_log(true);
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	devres_set_log(false);
	devm_kfree(dev, &x);
}

static void test_default_sink_is_stderr(void **state)
{
	struct device *dev = *state;
	char *out;

	/* A replaced sink, then the default again. */
	start_log_capture();
	devres_set_log_sink(NULL, NULL);
	out = capture_stderr(warn_and_log, dev);
	assert_int_equal(cap.n, 0);
	assert_non_null(strstr(out, "test-dev: DEVRES ADD "));
	assert_non_null(strstr(out, " devm_kmalloc (8 bytes)\n"));
	assert_non_null(strstr(out, "WARNING: test-dev: devm_kfree: "));
	free(out);
}

/* The child half of test_env_log: DEVRES_LOG comes from the environment. */
static int log_child(void)
{
	struct device dev;
	void *r;

	if (init_dev(&dev, "child-dev"))
		return 2;
	r = devres_alloc(my_release, 12, GFP_KERNEL);
	if (!r)
		return 3;
	devres_add(&dev, r);
	if (devres_release_all(&dev) != 1)
		return 4;
	put_device(&dev);
	return 0;
}

static void test_env_log(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(run_self("DEVRES_LOG=1", &out, "--log-child", NULL),
			 0);
	assert_non_null(strstr(out, "child-dev: DEVRES ADD "));
	assert_non_null(strstr(out, " my_release (12 bytes)\n"));
	assert_non_null(strstr(out, "child-dev: DEVRES REL "));
	free(out);
	assert_int_equal(run_self("DEVRES_LOG=0", &out, "--log-child", NULL),
			 0);
	assert_null(strstr(out, "DEVRES"));
	free(out);
}

/*
 * A sink that looks at the device on every WARN. The
 * WARN comes from a for-each callback that calls devres on its own device,
 * so the device's lock is held while it is emitted: the sink's dump would
 * WARN again, and the sink would run again, without end. One WARN, always.
 */
static int dump_sink_calls;
static int dump_sink_warns;

static void dumping_sink(void *ctx, int level, const char *line)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	dump_sink_calls++;
	if (level != DEVRES_LOG_WARNING)
		return;
	dump_sink_warns++;
	if (dump_sink_calls > 10)
		return; /* recursing: stop before the stack runs out */
	f = open_memstream(&buf, &len);
	if (f) {
		devres_dump(ctx, f);
		fclose(f);
	}
	free(buf);
	(void)line;
}

static void fn_adds_own(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	/* Fails, with the WARN under test: the lock is this thread's. */
	assert_null(devm_kmalloc(dev, 1, GFP_KERNEL));
}

static void test_warn_sink_dumps_the_locked_device(void **state)
{
	struct device *dev = *state;
	int base = devres_warn_count();

	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	dump_sink_calls = dump_sink_warns = 0;
	devres_add(dev, devres_alloc(my_release, 2, GFP_KERNEL));
	devres_set_log_sink(dumping_sink, dev);
	devres_for_each_res(dev, my_release, NULL, NULL, fn_adds_own, NULL);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(dump_sink_warns, 1);
	assert_int_equal(dump_sink_calls, 1);
	/* The sink's own dump is refused too: counted, not sent to it. */
	assert_int_equal(devres_warn_count() - base, 2);
	expect_stats(dev, 2, 8 + 2);
}

/* A sink that allocates on the device it logs, with logging on. */
static int alloc_sink_calls;

static void allocating_sink(void *ctx, int level, const char *line)
{
	(void)level;
	(void)line;
	if (++alloc_sink_calls > 10)
		return;
	assert_non_null(devm_kmalloc(ctx, 4, GFP_KERNEL));
}

static void test_log_sink_allocating_on_its_device(void **state)
{
	struct device *dev = *state;

	alloc_sink_calls = 0;
	devres_set_log_sink(allocating_sink, dev);
	devres_set_log(true);
	assert_non_null(devm_kmalloc(dev, 16, GFP_KERNEL));
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);
	/* Its own allocation's ADD line is not sent to it again. */
	assert_int_equal(alloc_sink_calls, 1);
	expect_stats(dev, 2, 16 + 4);
}

/*
 * devres_alloc_named() with a name the caller frees:
 * the name is copied, so a dump reads the copy. The release function is
 * used by this test alone, so that the name is registered here.
 */
static void heap_named_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void test_alloc_named_copies_the_name(void **state)
{
	struct device *dev = *state;
	char *name = strdup("a-name-on-the-heap-freed-at-once");
	char *dump;
	void *p;

	assert_non_null(name);
	p = devres_alloc_named(heap_named_release, 8, GFP_KERNEL, name);
	assert_non_null(p);
	memset(name, 'x', strlen(name));
	free(name);
	devres_add(dev, p);
	dump = dump_to_string(dev);
	assert_int_equal(count_substr(dump, "a-name-on-the-heap-freed-at-once"),
			 1);
	free(dump);
}

/*
 * Replacing the sink while another thread is inside it: once
 * devres_set_log_sink() returns, the old sink's ctx may be freed, so the
 * old sink must be running nowhere. The sink checks its ctx before and
 * after a pause; the test poisons the ctx as soon as the swap returns.
 */
#define CTX_ALIVE 0x5eed
#define CTX_DEAD 0xdead

struct sink_ctx {
	int magic;
	int stale; /* calls that saw their ctx die under them */
	int calls;
};

static int swap_done;

static void slow_sink(void *ctx, int level, const char *line)
{
	struct sink_ctx *c = ctx;
	int before = __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE);

	(void)level;
	(void)line;
	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 20000; i++)
		__atomic_load_n(&c->magic, __ATOMIC_RELAXED);
	if (before == CTX_ALIVE &&
	    __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != CTX_ALIVE)
		__atomic_add_fetch(&c->stale, 1, __ATOMIC_RELAXED);
}

static void *warn_loop(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&swap_done, __ATOMIC_ACQUIRE))
		devres_get_stats(NULL, NULL);
	return NULL;
}

static void test_sink_swap_waits_for_the_old_sink(void **state)
{
	struct sink_ctx ctx[50];
	pthread_t t;
	int stale = 0, calls = 0;

	(void)state;
	swap_done = 0;
	memset(ctx, 0, sizeof(ctx));
	ctx[0].magic = CTX_ALIVE;
	devres_set_log_sink(slow_sink, &ctx[0]);
	assert_int_equal(pthread_create(&t, NULL, warn_loop, NULL), 0);
	for (int i = 1; i < 50; i++) {
		while (!__atomic_load_n(&ctx[i - 1].calls, __ATOMIC_ACQUIRE))
			sched_yield();
		ctx[i].magic = CTX_ALIVE;
		devres_set_log_sink(slow_sink, &ctx[i]);
		__atomic_store_n(&ctx[i - 1].magic, CTX_DEAD, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&swap_done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	devres_set_log_sink(NULL, NULL);
	for (int i = 0; i < 50; i++) {
		stale += ctx[i].stale;
		calls += ctx[i].calls;
	}
	assert_true(calls >= 49);
	assert_int_equal(stale, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_log_add_rem_rel),
		T(test_log_action_kmalloc_replace),
		T(test_log_groups),
		T(test_log_off),
		T(test_dump),
		T(test_dump_unnamed_device),
		T(test_stats),
		T(test_release_names),
		T(test_warn_line_and_count),
		T(test_default_sink_is_stderr),
		T(test_env_log),
		T(test_warn_sink_dumps_the_locked_device),
		T(test_log_sink_allocating_on_its_device),
		T(test_alloc_named_copies_the_name),
		T(test_sink_swap_waits_for_the_old_sink),
	};

	if (argc > 1 && !strcmp(argv[1], "--log-child"))
		return log_child();
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
