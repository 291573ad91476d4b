// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile timeout=600 */
/*
 * Every exported function, each of its pointer arguments in turn replaced
 * by NULL, ERR_PTR(-EINVAL) and (void *)16, every other argument valid:
 * the call WARNs once and fails as its contract says (an int below zero, a
 * NULL or ERR_PTR pointer), and never crashes. The calls come from the
 * public headers (gen-args.py), so a new function is attacked the day it
 * is declared. Each call runs in a child of its own, so that a crash is
 * reported as the call that made it and the other calls still run; none
 * may leave a thread neither joined nor detached (thread-watch.h: the
 * leak ThreadSanitizer would report, checked here in every build with
 * the shared library; the test is not in the TSan build, where it was
 * 3 s of CPU, and its calls start no thread of the test's own).
 *
 * Arguments the contract lets be anything (a cookie handed back to a
 * callback) are not attacked; arguments where it gives NULL a meaning are
 * attacked with NULL expecting no WARN (rules[] below).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/liveobj.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include <devres/uio.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "hostile/hostile-args.h"
#include "hostile/hostile-fixtures.h"

/* How the contract treats an argument. */
enum rule {
	ATTACK,	 /* every bad value: one WARN and an error */
	NULL_OK, /* NULL has a meaning: no WARN; the others as ATTACK */
	ZERO_OK, /* NULL and ZERO_SIZE_PTR ((void *)16) have: as NULL_OK */
	OPAQUE,	 /* never dereferenced: not attacked */
};

static const struct {
	const char *arg; /* "func:arg", or ":arg" for every function */
	enum rule rule;
} rules[] = {
	/* Cookies the library hands back and never reads. */
	{ ":data", OPAQUE },
	{ ":match_data", OPAQUE },
	{ ":ctx", OPAQUE },
	{ ":arg", OPAQUE },
	{ ":dev_id", OPAQUE },
	{ "devm_revocable_create:res", OPAQUE },
	{ "devres_open_group:id", OPAQUE },
	/* Named in the WARN only, and only when the format is refused. */
	{ "devres_format_bad:dev", OPAQUE },
	{ "devm_mmap:addr", OPAQUE },
	/* Live objects: addresses compared, never read. */
	{ "devres_liveobj_deactivate:obj", OPAQUE },
	{ "devres_liveobj_active:obj", OPAQUE },
	/* Lookup keys, compared and never called: "not found". */
	{ "devres_find:release", OPAQUE },
	{ "devres_remove:release", OPAQUE },
	{ "devres_destroy:release", OPAQUE },
	{ "devres_release:release", OPAQUE },
	{ "devres_for_each_res:release", OPAQUE },
	/* Group ids: an unknown one is the kernel's silent no-op here. */
	{ "devres_close_group:id", OPAQUE },
	{ "devres_remove_group:id", OPAQUE },
	{ "devres_release_group:id", OPAQUE },
	/* The kmalloc family's NULL and ZERO_SIZE_PTR. */
	{ "devm_kfree:p", ZERO_OK },
	{ "devm_krealloc:ptr", ZERO_OK },
	{ "devm_is_kmalloc:p", ZERO_OK },
	/* NULL: "none", "the default", "the latest" or "nothing to do". */
	{ ":match", NULL_OK },
	{ "devres_set_log_sink:sink", NULL_OK },
	{ "devres_atomic_hook_set:hook", NULL_OK },
	{ "put_device:dev", NULL_OK },
	{ "get_device:dev", NULL_OK },
	{ "pci_dev_put:pdev", NULL_OK },
	{ "pci_dev_get:pdev", NULL_OK },
	{ "pci_get_device:from", NULL_OK },
	{ "platform_device_put:pdev", NULL_OK },
	{ "platform_device_unregister:pdev", NULL_OK },
	{ "dma_pool_destroy:pool", NULL_OK },
	{ "iounmap:addr", NULL_OK },
	{ "pci_sysfs_set_root:path", NULL_OK },
	{ "pci_fake_destroy:tree", NULL_OK },
	{ "devres_ledger_diff:f", NULL_OK },
	{ "bus_for_each_dev:start", NULL_OK },
	{ "driver_find_next_device:start", NULL_OK },
	{ "devm_platform_get_and_ioremap_resource:res", NULL_OK },
	{ "devres_sweep:undo", NULL_OK },
	{ "pci_vfio_dma_mappings:ret_bytes", NULL_OK },
	{ "request_threaded_irq:handler", NULL_OK },
	{ "request_threaded_irq:thread_fn", NULL_OK },
	{ "devm_request_threaded_irq:handler", NULL_OK },
	{ "devm_request_threaded_irq:thread_fn", NULL_OK },
	{ "devres_alloc_named:release", NULL_OK },
	{ "devres_alloc_named:name", NULL_OK },
	{ "irq_line_create:name", NULL_OK },
	{ "irq_line_attach_fd:name", NULL_OK },
	{ "irq_line_attach_level:name", NULL_OK },
	{ "irq_line_attach_masked:name", NULL_OK },
	{ "devm_thread_run:name", NULL_OK },
	{ "request_irq:name", NULL_OK },
	{ "request_threaded_irq:name", NULL_OK },
	{ "devm_request_irq:devname", NULL_OK },
	{ "devm_request_threaded_irq:devname", NULL_OK },
	{ "devm_request_any_context_irq:devname", NULL_OK },
	{ "pcim_request_region:name", NULL_OK },
	{ "pcim_request_all_regions:name", NULL_OK },
	{ "pci_request_region:name", NULL_OK },
	{ "pci_request_regions:name", NULL_OK },
	{ "pcim_iomap_regions:name", NULL_OK },
	{ "request_region:name", NULL_OK },
	{ "request_mem_region:name", NULL_OK },
	{ "request_mem_region_exclusive:name", NULL_OK },
	{ "devm_request_region:name", NULL_OK },
	{ "devm_request_mem_region:name", NULL_OK },
	{ "devm_add_action_named:name", NULL_OK },
	{ "devm_add_action_or_reset_named:name", NULL_OK },
	{ "devres_should_fail:what", NULL_OK },
	{ "devres_should_defer:what", NULL_OK },
	{ "devres_should_fail:dev", NULL_OK },
	{ "devres_should_defer:dev", NULL_OK },
	{ "dev_printk:dev", NULL_OK },
	{ "dev_err_probe:dev", NULL_OK },
	{ "dev_name:dev", NULL_OK },
	{ "set_dma_ops:ops", NULL_OK },
	{ "devm_kstrdup:s", NULL_OK },
	{ "devm_kstrdup_const:s", NULL_OK },
	{ "devm_ioremap_resource:res", NULL_OK },
	{ "devm_ioremap_resource_wc:res", NULL_OK },
	{ "pci_match_id:ids", NULL_OK },
	{ "pci_dev_is_vfio:pdev", NULL_OK },
	{ "pci_dev_is_uio:pdev", NULL_OK },
	{ "pci_uio_enable:dev_dir", NULL_OK },
	{ "revocable_get:h", NULL_OK },
	{ "revocable_put:h", NULL_OK },
	{ "pci_iounmap:dev", NULL_OK },
	{ "pci_iounmap:addr", NULL_OK },
	{ "devres_free:res", NULL_OK },
	{ "platform_device_add_resources:res", NULL_OK },
	{ "platform_device_register_simple:res", NULL_OK },
	{ "devm_revocable_create:release", NULL_OK },
	{ "pci_fake_path:file", NULL_OK },
};

/* Calls whose return says nothing of a refusal (the WARN does). */
static const char *const no_error_value[] = {
	"dev_name",
	"pci_name",
};

/* Predicates whose true is the refusal: "bad, do nothing". */
static const char *const true_is_refusal[] = {
	"devres_format_bad",
};

/* Calls where 0 is the refusal (a count of nothing done). */
static const char *const zero_is_refusal[] = {
	"devres_release_group",
	"devres_release_all",
};

/* Calls where a positive value is the refusal (PCIBIOS_* codes). */
static const char *const positive_is_refusal[] = {
	"pci_read_config_byte",	 "pci_read_config_word",
	"pci_read_config_dword", "pci_write_config_byte",
	"pci_write_config_word", "pci_write_config_dword",
};

/* Calls where NULL says "no conflict": an ERR_PTR is their refusal. */
static const char *const null_is_success[] = {
	"request_resource_conflict",
	"insert_resource_conflict",
};

/* Whether result @r of @func is a refusal. */
static bool refused(const char *func, int r)
{
	if (IN(no_error_value, func))
		return true;
	switch (r) {
	case RES_ERR:
	case RES_VOID:
		return true;
	case RES_OK:
		return IN(true_is_refusal, func);
	case RES_NULL:
		return !IN(null_is_success, func);
	case RES_ZERO:
		return IN(zero_is_refusal, func);
	case RES_POS:
		return IN(positive_is_refusal, func);
	default:
		return false;
	}
}

static enum rule rule_of(const char *func, const char *arg)
{
	char key[128];

	snprintf(key, sizeof(key), "%s:%s", func, arg);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const char *r = rules[i].arg;

		if (strcmp(r, key) == 0 || (r[0] == ':' && !strcmp(r + 1, arg)))
			return rules[i].rule;
	}
	return ATTACK;
}

#pragma GCC diagnostic push
/* A format under attack is not a literal, by design. */
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#include "hostile-args-cases.h"
#pragma GCC diagnostic pop

static int run_case(const struct arg_case *c, void *bad, bool allowed)
{
	int w0, c0, r, n;

	devres_set_log_sink(count_sink, NULL);
	w0 = warns;
	c0 = devres_warn_count();
	r = c->call(bad);
	n = warns - w0;
	if (devres_warn_count() - c0 != n)
		return V_COUNT_MISSED;
	/* What a call accepted is given back: a thread, say, is joined. */
	if (hdev_ready)
		devres_release_all(&hdev);
	if (allowed)
		return n == 0 ? V_PASS : V_WARNED_ON_NULL;
	if (n == 0)
		return V_NO_WARN;
	if (n > 1)
		return V_MANY_WARNS;
	if (!refused(c->func, r))
		return V_SUCCEEDED;
	return V_PASS;
}

static bool opaque(const struct arg_case *c)
{
	return rule_of(c->func, c->arg) == OPAQUE;
}

static int child(const struct arg_case *c, int b)
{
	enum rule rule = rule_of(c->func, c->arg);

	return run_case(c, hostile_bad[b],
			(b == 0 && rule == NULL_OK) ||
				(b != 1 && rule == ZERO_OK));
}

static void test_every_pointer_argument(void **state)
{
	int failed, ran;

	(void)state;
	tree = pci_fake_create();
	assert_non_null(tree);
	struct pci_fake_dev d = hostile_fake_dev("0000:00:01.0");
	assert_int_equal(pci_fake_add(tree, &d), 0);

	failed = hostile_run_all(arg_cases,
				 sizeof(arg_cases) / sizeof(arg_cases[0]),
				 opaque, child, 0, &ran);
	pci_fake_destroy(tree);
	fprintf(stderr, "%d calls, %d failed\n", ran, failed);
	assert_true(ran > 500);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_watch),
		cmocka_unit_test(test_every_pointer_argument),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
