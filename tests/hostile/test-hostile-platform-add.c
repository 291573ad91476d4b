// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Two threads add the same platform device at once (an automatic id, a
 * memory resource): one add succeeds, the other is refused with one WARN,
 * and the device keeps the name, the id and the resource names the
 * successful add gave it. Both adds used to name the device, insert its
 * resources and undo each other's work: the refused one freed the other's
 * automatic id and cleared its resources' names, which the rename had
 * left pointing at freed memory (about one round in a thousand, dev).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/ioport.h>
#include <devres/platform.h>
#include "testlib.h"

#define ROUNDS 1000

static pthread_barrier_t bar;
static struct platform_device *pdev;
static int rets[2];

static void *adder(void *arg)
{
	int i = (int)(intptr_t)arg;

	pthread_barrier_wait(&bar);
	rets[i] = platform_device_add(pdev);
	return NULL;
}

static void quiet(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static void test_two_adds(void **state)
{
	struct resource r = { .start = 0x7f000000,
			      .end = 0x7f000fff,
			      .flags = IORESOURCE_MEM };
	int bad = 0;

	(void)state;
	devres_set_log_sink(quiet, NULL);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t t[2];
		char want[64];
		int w = devres_warn_count(), ok;

		pdev = platform_device_alloc("race", PLATFORM_DEVID_AUTO);
		assert_non_null(pdev);
		assert_int_equal(platform_device_add_resources(pdev, &r, 1), 0);
		assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&t[i], NULL, adder,
							(void *)(intptr_t)i),
					 0);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&bar);
		ok = (rets[0] == 0) + (rets[1] == 0);
		snprintf(want, sizeof(want), "race.%d.auto", pdev->id);
		if (ok != 1 || devres_warn_count() - w != 1 || pdev->id < 0 ||
		    !pdev->id_auto || strcmp(dev_name(&pdev->dev), want) != 0 ||
		    !pdev->resource[0].name ||
		    strcmp(pdev->resource[0].name, want) != 0) {
			if (!bad++)
				print_error("round %d: adds %d %d, %d WARN(s), "
					    "id %d, name %s, resource %s\n",
					    round, rets[0], rets[1],
					    devres_warn_count() - w, pdev->id,
					    dev_name(&pdev->dev),
					    pdev->resource[0].name
						    ? pdev->resource[0].name
						    : "(null)");
		}
		if (ok)
			platform_device_unregister(pdev);
		else
			platform_device_put(pdev);
	}
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_adds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
