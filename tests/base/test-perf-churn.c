// SPDX-License-Identifier: MIT
/* ctest-labels: stress timeout=300 */
/*
 * Memory stays bounded under alloc/free churn on a long-lived device:
 * 10^7 devm_kmalloc/devm_kfree pairs (PERF_CHURN_PAIRS to change it) of
 * mixed small and large sizes, around a few hundred long-lived
 * allocations and groups, in random order. Freed slots are reused and
 * dead nodes are unlinked, so the resident set after the first tenth of
 * the pairs stays flat to the end (within 4 MiB).
 *
 * Under ASan, 4 x 10^6 pairs, flat over the second half: what that build
 * adds is its checks of every access on the way, which the same paths
 * give in fewer rounds; the resident set there is mostly its quarantine,
 * and the long flat run is the other builds' to show.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

#ifdef T_ASAN
/*
 * ASan's allocator hands free pages back to the kernel at most every 5 s
 * (allocator_release_to_os_interval_ms), so what it has handed back when
 * a sample is taken depends on how long the run took, not on the pairs.
 * On a loaded machine a run takes minutes for seconds of CPU: at load 29
 * with releases every 20 ms (as often, for the pairs, as 5 s in a run
 * slowed 250 times) the baseline, taken just after a release, was 363 MiB
 * and the peak after it 389 MiB. Off in this test: the resident set is
 * then a function of the pairs alone (and can only be higher than with
 * releases: 389 072 and 389 516 KiB in a run at load 18), so a flat one is
 * the library's, whatever the machine's load.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_release_to_os_interval_ms=-1";
}
#endif

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_churn_rss_is_flat(void **state)
{
	struct device *dev = *state;
	enum {
		LIVE = 512
	};
	static const size_t sizes[] = { 8, 24, 64, 100, 256, 300, 1000 };
	const char *env = getenv("PERF_CHURN_PAIRS");
#ifdef T_ASAN
	/*
	 * ASan holds freed chunks in its quarantine (256 MiB) and the
	 * library keeps node chunks and pages poisoned for reuse, which
	 * leaves fewer frees to fill that quarantine: it is full, and the
	 * resident set flat (about 390 MiB), after some 1.5 million pairs.
	 */
	long pairs = env ? atol(env) : 4000000L, warm = pairs / 2;
#else
	long pairs = env ? atol(env) : 10000000L, warm = pairs / 10;
#endif
	unsigned int seed = 7;
	void *keep[LIVE];
	long base = -1, peak = 0;

	for (int i = 0; i < LIVE; i++) {
		keep[i] = devm_kmalloc(dev, sizes[i % 7], GFP_KERNEL);
		assert_non_null(keep[i]);
		if (i % 64 == 0)
			assert_non_null(
				devres_open_group(dev, NULL, GFP_KERNEL));
	}
	for (long r = 0; r < pairs; r++) {
		int i = (int)(rand_r(&seed) % LIVE);
		size_t size = sizes[rand_r(&seed) % 7];

		devm_kfree(dev, keep[i]);
		keep[i] = devm_kmalloc(dev, size, GFP_KERNEL);
		assert_non_null(keep[i]);
		if (r == warm)
			base = rss_kib();
		if (r > warm && r % 65536 == 0) {
			long now = rss_kib();

			if (now > peak)
				peak = now;
		}
	}
	assert_int_equal(devres_check(dev), 0);
	if (base < 0)
		skip();
	print_message("rss after %ld pairs: %ld KiB, peak after: %ld KiB\n",
		      warm, base, peak);
	assert_true(peak <= base + 4096);
	devres_release_all(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_churn_rss_is_flat,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
