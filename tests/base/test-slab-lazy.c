// SPDX-License-Identifier: MIT
/* ctest-labels: stress timeout=300 */
/*
 * More small managed memory than the block cache keeps warm (64 MiB):
 * the blocks beyond go back lazily (MADV_FREE) and are taken again by the
 * next device. Every byte written through the second device reads back,
 * both devices' ledgers add up, and the address space stops growing once
 * the blocks are there to be reused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "base/slab-test.h"

#define OBJS 600000 /* 144-byte slots: about 86 MB of blocks */
#define SIZE 128

static unsigned char *objs[OBJS];

static long vm_kib(void)
{
	long pages = -1, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		pages = -1;
	fclose(f);
	return pages * 4;
}

static void fill_and_check(struct device *dev, unsigned char salt)
{
	for (int i = 0; i < OBJS; i++) {
		objs[i] = devm_kmalloc(dev, SIZE, GFP_KERNEL);
		assert_non_null(objs[i]);
		memset(objs[i], (unsigned char)(i + salt), SIZE);
	}
	for (int i = 0; i < OBJS; i++)
		for (int b = 0; b < SIZE; b += 31)
			if (objs[i][b] != (unsigned char)(i + salt))
				fail_msg("object %d byte %d: %#x", i, b,
					 objs[i][b]);
	assert_int_equal(devres_check(dev), 0);
}

static void test_blocks_beyond_the_cache(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	long vm_first, vm_later = 0, faults, first_faults = slab_minor_faults();

	fill_and_check(dev, 1);
	assert_int_equal(devres_release_all(dev), OBJS);
	vm_first = vm_kib();
	first_faults = slab_minor_faults() - first_faults;
	for (int round = 0; round < 3; round++) {
		faults = slab_minor_faults();
		fill_and_check(dev, (unsigned char)(2 + round));
		faults = slab_minor_faults() - faults;
		print_message("round %d: %ld page faults (first round %ld)\n",
			      round, faults, first_faults);
		/*
		 * A block unmapped and mapped again faults in each of its
		 * 16 pages (about 5000 here); one kept lazily faults in none,
		 * unless memory ran so short that the kernel took it back.
		 */
		assert_true(faults < 1000);
		devres_get_stats(dev, &st);
		assert_int_equal(st.allocs, OBJS);
		assert_int_equal(devres_release_all(dev), OBJS);
		vm_later = vm_kib();
	}
	print_message("address space after the first round %ld KiB, after "
		      "three more %ld KiB\n",
		      vm_first, vm_later);
	/* Reused, not mapped again: at most a batch (2 MiB) of slack. */
	assert_true(vm_later <= vm_first + 2048);
}

int main(void)
{
	return slab_test_run(test_blocks_beyond_the_cache);
}
