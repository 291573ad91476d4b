// SPDX-License-Identifier: MIT
/* ctest-labels: stress white-box timeout=300 */
/*
 * The blocks beyond the slab's 64 MiB cache (src/base/slab.c) stay
 * resident while they are reused soon: released and made again at once,
 * none of them is lazily freed, and the second round faults in no page.
 * Once they stayed unused for the decay time (10 s; 1 s here), the next
 * device that takes or gives back blocks hands them to the kernel
 * (MADV_FREE): the process's lazily freed memory grows by about what lay
 * beyond the cache.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include "base/slab-test.h"

/* The decay time, in ms (src/base/slab.c). */
extern long devres__slab_decay_ms;

#define OBJS 600000 /* 144-byte slots: about 86 MB of blocks */
#define SIZE 128
#define BEYOND_KIB (86000 - 65536) /* what lies beyond the cache */

/* Resident and lazily freed KiB of this process. */
static void memory_kib(long *ret_rss, long *ret_lazy)
{
	char line[256];
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	*ret_rss = -1;
	*ret_lazy = -1;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Rss: %ld kB", ret_rss);
		sscanf(line, "LazyFree: %ld kB", ret_lazy);
	}
	fclose(f);
	assert_true(*ret_rss >= 0);
	assert_true(*ret_lazy >= 0);
}

static void fill(struct device *dev)
{
	for (int i = 0; i < OBJS; i++) {
		unsigned char *p = devm_kmalloc(dev, SIZE, GFP_KERNEL);

		assert_non_null(p);
		p[0] = (unsigned char)i;
	}
}

static void test_reused_blocks_stay_then_decay(void **state)
{
	struct device *dev = *state, later;
	struct timespec pause = { 1, 500000000L };
	long rss0, lazy0, rss1, lazy1, faults;

	devres__slab_decay_ms = 1000;
	fill(dev);
	assert_int_equal(devres_release_all(dev), OBJS);
	memory_kib(&rss0, &lazy0);
	print_message("released: resident %ld KiB, lazily freed %ld KiB\n",
		      rss0, lazy0);
	/* Not handed back at once: nothing of the 20 MB beyond is lazy. */
	assert_true(lazy0 < BEYOND_KIB / 2);

	faults = slab_minor_faults();
	fill(dev);
	faults = slab_minor_faults() - faults;
	print_message("made again: %ld page faults\n", faults);
	assert_true(faults < 1000);
	assert_int_equal(devres_release_all(dev), OBJS);

	nanosleep(&pause, NULL);
	/* Another device takes a block and gives it back: the clock is read. */
	assert_int_equal(init_dev(&later, "later"), 0);
	assert_non_null(devm_kmalloc(&later, SIZE, GFP_KERNEL));
	assert_int_equal(devres_release_all(&later), 1);
	put_device(&later);
	memory_kib(&rss1, &lazy1);
	print_message("1.5 s later: resident %ld KiB, lazily freed %ld KiB\n",
		      rss1, lazy1);
	/*
	 * Lazily freed now, or already taken by the kernel if memory is
	 * short: either way no longer the process's own.
	 */
	assert_true((lazy1 - lazy0) + (rss0 - rss1) > BEYOND_KIB / 2);
}

int main(void)
{
	return slab_test_run(test_reused_blocks_stay_then_decay);
}
