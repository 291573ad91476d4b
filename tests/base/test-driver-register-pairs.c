// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A bus's registration of a driver fills in the caller's struct
 * device_driver (its bus, a name) before the driver core takes it: the
 * same driver registered twice at once (the second refused with -EBUSY
 * and a WARN), or registered while it is unregistered, must write
 * nothing the other call reads. Each pair of platform_driver_register()
 * and platform_driver_unregister(), from two threads at once, never
 * registered and registered, ends as one of its serial orders
 * (tests/pairs.h); ThreadSanitizer sees every write. PCI drivers, whose
 * registration fills in the same way: tests/pci/test-pci-driver-pairs.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/platform.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"

enum state {
	FRESH,
	REGISTERED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"never registered",
	"registered",
};

enum call {
	REGISTER,
	UNREGISTER,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"platform_driver_register",
	"platform_driver_unregister",
};

static struct platform_driver drv;

/* A driver as a caller declares it: its bus is the registration's to set. */
static void reach(unsigned int s)
{
	drv = (struct platform_driver){ .driver = { .name = "pairs" } };
	if (s == REGISTERED)
		assert_int_equal(platform_driver_register(&drv), 0);
}

static int make(unsigned int c)
{
	if (c == REGISTER)
		return platform_driver_register(&drv);
	platform_driver_unregister(&drv);
	return 0;
}

/* Whether it was left registered: the WARNs of unregistering it. */
static void undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	platform_driver_unregister(&drv);
	o->after[0] = devres_warn_count() - w0;
}

#ifdef T_TSAN
#define ROUNDS 200
#else
#define ROUNDS (test_under_valgrind() ? 10 : 1000)
#endif

PAIRS_TEST(register_pairs, ROUNDS, PAIRS_NAMES(state_name, call_name),
	   .reach = reach, .call = make, .undo = undo)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(register_pairs),
	};

	return pairs_group("driver-register-pairs", tests,
			   sizeof(tests) / sizeof(tests[0]));
}
