// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * Every cell of test-last-put.c again, with no memory for the record of a
 * deferred release (the test hook of src/base/frame.c refuses each one,
 * as a failed malloc() would): each target must still be released
 * exactly once, after the pass that used it and not before, with the same
 * WARNs as with memory, and the ledger must come back to its baseline.
 * The count of refused records shows that the path was taken.
 */
#include <stdbool.h>

/* The hook, declared here: frame.h's other declarations are not needed. */
unsigned long devres__frame_fail_records(bool fail);
int last_put_main(void);

#define main last_put_main
#include "base/test-last-put.c"
#undef main

int main(void)
{
	unsigned long before = devres__frame_fail_records(true);
	int ret = last_put_main();

	if (devres__frame_fail_records(false) == before) {
		fprintf(stderr, "no record was refused: the path was not "
				"taken\n");
		return 1;
	}
	return ret;
}
