// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A compat driver's managed memory given to the plain calls of
 * <linux/slab.h>: each of devm_kmalloc(), devm_kzalloc(),
 * devm_kmalloc_array(), devm_kcalloc(), devm_krealloc(), devm_kstrdup(),
 * devm_kmemdup() and devm_kasprintf() crossed with kfree(), kvfree(),
 * kfree_sensitive() and krealloc(). The kernel would not accept it (the
 * pointer is inside a devres node, no slab object of its own), and the
 * library tells it: one WARN naming the plain call the driver made and
 * the managed one it wants (devm_kfree(), devm_krealloc()), nothing freed
 * or moved, the node kept; the memory still the driver's to write, and
 * the device's release frees it once (AddressSanitizer sees a second
 * free); no WARN more, and the ledger back at its baseline (the
 * fixture's teardown).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <linux/device.h>
#include <linux/slab.h>
#include "testlib.h"

#define SIZE 32

static void *kmalloc_acq(void)
{
	return devm_kmalloc(&tdev, SIZE, GFP_KERNEL);
}

static void *kzalloc_acq(void)
{
	return devm_kzalloc(&tdev, SIZE, GFP_KERNEL);
}

static void *kmalloc_array_acq(void)
{
	return devm_kmalloc_array(&tdev, 4, SIZE / 4, GFP_KERNEL);
}

static void *kcalloc_acq(void)
{
	return devm_kcalloc(&tdev, 4, SIZE / 4, GFP_KERNEL);
}

static void *krealloc_acq(void)
{
	void *p = devm_kmalloc(&tdev, 8, GFP_KERNEL);

	assert_non_null(p);
	return devm_krealloc(&tdev, p, SIZE, GFP_KERNEL);
}

static void *kstrdup_acq(void)
{
	return devm_kstrdup(&tdev, "0123456789abcdef0123456789abcde",
			    GFP_KERNEL);
}

static void *kmemdup_acq(void)
{
	static const char bytes[SIZE] = "kmemdup";

	return devm_kmemdup(&tdev, bytes, SIZE, GFP_KERNEL);
}

static void *kasprintf_acq(void)
{
	return devm_kasprintf(&tdev, GFP_KERNEL, "%031d", 7);
}

static void kfree_hand(void *p)
{
	kfree(p);
}

static void kvfree_hand(void *p)
{
	kvfree(p);
}

static void kfree_sensitive_hand(void *p)
{
	kfree_sensitive(p);
}

static void krealloc_hand(void *p)
{
	assert_null(krealloc(p, (size_t)2 * SIZE, GFP_KERNEL));
}

static const struct {
	const char *name;
	void *(*fn)(void);
} acqs[] = {
	{ "devm_kmalloc", kmalloc_acq },
	{ "devm_kzalloc", kzalloc_acq },
	{ "devm_kmalloc_array", kmalloc_array_acq },
	{ "devm_kcalloc", kcalloc_acq },
	{ "devm_krealloc", krealloc_acq },
	{ "devm_kstrdup", kstrdup_acq },
	{ "devm_kmemdup", kmemdup_acq },
	{ "devm_kasprintf", kasprintf_acq },
};

#define FREED "use devm_kfree(); nothing freed"

static const struct {
	const char *name;
	void (*fn)(void *p);
	const char *fix; /* the end of its WARN */
} frees[] = {
	{ "kfree", kfree_hand, FREED },
	{ "kvfree", kvfree_hand, FREED },
	{ "kfree_sensitive", kfree_sensitive_hand, FREED },
	{ "krealloc", krealloc_hand, "use devm_krealloc(); nothing changed" },
};

#define NACQS (sizeof(acqs) / sizeof(acqs[0]))
#define NFREES (sizeof(frees) / sizeof(frees[0]))

struct cell {
	size_t a, f;
	char name[64];
};

static const struct cell *cur;

static void run_cell(void **state)
{
	struct devres_stats st;
	char reason[128];
	void *p;

	(void)state;
	p = acqs[cur->a].fn();
	assert_non_null(p);
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 1);

	start_capture();
	frees[cur->f].fn(p);
	snprintf(reason, sizeof(reason),
		 "is not a block of kmalloc(): if devm_kmalloc() made it, %s",
		 frees[cur->f].fix);
	expect_warn_on("(no device)", frees[cur->f].name, reason);
	/* Not freed: still the device's, and still writable. */
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 1);
	memset(p, 0x5a, SIZE);

	start_capture();
	assert_int_equal(devres_release_all(&tdev), 1);
	expect_no_warn();
}

static int cell_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

int main(void)
{
	static struct cell cells[NACQS * NFREES];
	static struct CMUnitTest tests[NACQS * NFREES];
	size_t n = 0;

	for (size_t a = 0; a < NACQS; a++) {
		for (size_t f = 0; f < NFREES; f++, n++) {
			cells[n].a = a;
			cells[n].f = f;
			snprintf(cells[n].name, sizeof(cells[n].name), "%s/%s",
				 acqs[a].name, frees[f].name);
			tests[n] = (struct CMUnitTest){
				.name = cells[n].name,
				.test_func = run_cell,
				.setup_func = cell_setup,
				.teardown_func = dev_teardown,
				.initial_state = &cells[n],
			};
		}
	}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("kc-kfree-managed", tests, n, NULL,
				       NULL);
}
