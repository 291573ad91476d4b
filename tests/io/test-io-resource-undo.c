// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * devm_ioremap_resource() and its _wc form claim the range, then map it;
 * when the mapping fails they give the claim back, and only theirs. In
 * between, the call's claim is given back (devm_release_mem_region()) and
 * the range claimed again on the same device by another call of the
 * driver's (devm_request_mem_region()): from the call's own thread, as a
 * signal handler or a log sink there would, or from another thread. The
 * failing call must leave that other claim alone: still on the device,
 * the range still busy, its own release by the driver WARNing nothing.
 *
 * The moment in between is the library's mapping of the range, io__remap(),
 * wrapped at the link (-Wl,--wrap): the wrapper does the other call's
 * steps, then maps, which fails (no iomem window holds the range). On the
 * call's own thread, the other claim's node is made in the storage of the
 * call's, freed just before: the same node, another claim.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include "testlib.h"
#include "io/io-internal.h"

/* A range no iomem window holds: claimed, never mapped. */
#define A 0x7a000000ull
#define N 0x1000u

enum between {
	NOTHING,     /* the call's claim untouched: it goes back */
	OWN_THREAD,  /* released and claimed again on the call's thread */
	OTHER_THREAD /* the same, from a thread the call waits for */
};

static enum between between;
static bool armed;
static int other_claimed; /* whether the other call's claim was made */

static void other_call(void)
{
	devm_release_mem_region(&tdev, A, N);
	other_claimed = devm_request_mem_region(&tdev, A, N, "other") != NULL;
}

static void *other_thread(void *arg)
{
	(void)arg;
	other_call();
	return NULL;
}

/* The linker's names for the wrapped call and its wrapper. */
/* NOLINTBEGIN(bugprone-reserved-identifier) */
void *__real_io__remap(phys_addr_t offset, size_t size,
		       const struct devres__owner *owner);
void *__wrap_io__remap(phys_addr_t offset, size_t size,
		       const struct devres__owner *owner);

void *__wrap_io__remap(phys_addr_t offset, size_t size,
		       const struct devres__owner *owner)
{
	pthread_t t;

	if (armed) {
		armed = false;
		if (between == OWN_THREAD) {
			other_call();
		} else if (between == OTHER_THREAD) {
			assert_int_equal(pthread_create(&t, NULL, other_thread,
							NULL),
					 0);
			assert_int_equal(pthread_join(t, NULL), 0);
		}
	}
	return __real_io__remap(offset, size, owner);
}
/* NOLINTEND(bugprone-reserved-identifier) */

/* Whether the range is busy: a claim of it by hand fails. */
static bool busy(void)
{
	if (!request_mem_region(A, N, "probe"))
		return true;
	release_mem_region(A, N);
	return false;
}

static void run(enum between b, bool wc)
{
	struct resource r = DEFINE_RES_MEM_NAMED(A, N, "undo");
	int w0 = devres_warn_count();
	void *p;

	between = b;
	other_claimed = 0;
	armed = true;
	p = wc ? devm_ioremap_resource_wc(&tdev, &r)
	       : devm_ioremap_resource(&tdev, &r);
	assert_false(armed);
	assert_ptr_equal(p, ERR_PTR(-ENOMEM));
	if (b == NOTHING) {
		/* The call's own claim went back with its failure. */
		assert_false(busy());
		assert_int_equal(devres_warn_count() - w0, 0);
		return;
	}
	assert_true(other_claimed);
	/*
	 * The other call's claim is whole: the range busy, and the driver's
	 * release of it finds its node on the device (no WARN).
	 */
	assert_true(busy());
	devm_release_mem_region(&tdev, A, N);
	assert_false(busy());
	assert_int_equal(devres_warn_count() - w0, 0);
}

static void own_claim_goes_back(void **state)
{
	(void)state;
	run(NOTHING, false);
	run(NOTHING, true);
}

static void other_claim_own_thread(void **state)
{
	(void)state;
	run(OWN_THREAD, false);
}

static void other_claim_own_thread_wc(void **state)
{
	(void)state;
	run(OWN_THREAD, true);
}

static void other_claim_other_thread(void **state)
{
	(void)state;
	run(OTHER_THREAD, false);
}

static void other_claim_other_thread_wc(void **state)
{
	(void)state;
	run(OTHER_THREAD, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(own_claim_goes_back, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(other_claim_own_thread,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(other_claim_own_thread_wc,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(other_claim_other_thread,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(other_claim_other_thread_wc,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
