// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The reason of a deferral: dev_err_probe(dev, -EPROBE_DEFER, ...) keeps
 * its message, as the kernel's deferred_probe_reason, and devres_dump()
 * shows it while the device is parked ("  deferred probe pending:
 * <driver>: <message>", as the kernel's devices_deferred). The next
 * deferral's reason replaces it; a deferral that gives none keeps it; a
 * bind or device_del() drops it; the device's release frees it (the
 * sanitizer builds see a leak). Another error, or a call on a device not
 * added, records nothing.
 *
 * Each cell scripts the answers of the probe of one device, the calls
 * that probe it, and the reason the dump must show (or none). No WARN;
 * the device released and the ledger back at its start after each cell.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static const struct bus_type rbus = { .name = "rbus" };

#define MAX_STEPS 4

/* One probe's answer: its error, and the reason it gives (or none). */
struct answer {
	int err;
	const char *why;
};

/* What is done to the device once added with the driver registered. */
enum then {
	THEN_NOTHING,
	THEN_TRIGGER,	  /* driver_deferred_probe_trigger() */
	THEN_ATTACH,	  /* device_attach() */
	THEN_DEL,	  /* device_del(), a reference kept for the dump */
	THEN_BIND_UNBIND, /* trigger (binds), device_release_driver() */
};

struct cell {
	const char *what;
	struct answer probe[MAX_STEPS];
	int nprobes;
	enum then then[2];
	/* Said before device_add(), on a device not yet added. */
	const char *before_add;
	const char *shown; /* the dump's reason, NULL for no line */
};

static const struct cell *cur;
static int step;

static int script_probe(struct device *dev)
{
	const struct answer *a;

	if (step >= cur->nprobes)
		return -EPROBE_DEFER;
	a = &cur->probe[step++];
	if (a->why)
		return dev_err_probe(dev, a->err, "%s", a->why);
	return a->err;
}

static struct device_driver rdrv = {
	.name = "reason-drv",
	.bus = &rbus,
	.probe = script_probe,
};

#define D (-EPROBE_DEFER)

/* clang-format off */
static const struct cell cells[] = {
	{ "a deferral's reason is shown", { { D, "clock missing" } }, 1,
	  { THEN_NOTHING, THEN_NOTHING }, NULL,
	  "reason-drv: clock missing" },
	{ "the next deferral's reason replaces it",
	  { { D, "clock missing" }, { D, "regulator missing" } }, 2,
	  { THEN_TRIGGER, THEN_NOTHING }, NULL,
	  "reason-drv: regulator missing" },
	{ "replaced by device_attach()'s deferral",
	  { { D, "clock missing" }, { D, "reset missing" } }, 2,
	  { THEN_ATTACH, THEN_NOTHING }, NULL, "reason-drv: reset missing" },
	{ "a deferral with no reason keeps it",
	  { { D, "clock missing" }, { D, NULL } }, 2,
	  { THEN_TRIGGER, THEN_NOTHING }, NULL, "reason-drv: clock missing" },
	{ "kept over a failure, shown at the next park",
	  { { D, "clock missing" }, { -ENODEV, "gone" }, { D, NULL } }, 3,
	  { THEN_ATTACH, THEN_ATTACH }, NULL, "reason-drv: clock missing" },
	{ "a bind drops it",
	  { { D, "clock missing" }, { 0, NULL }, { D, NULL } }, 3,
	  { THEN_BIND_UNBIND, THEN_ATTACH }, NULL, NULL },
	{ "device_del() drops it", { { D, "clock missing" } }, 1,
	  { THEN_DEL, THEN_NOTHING }, NULL, NULL },
	{ "another error records none", { { -ENODEV, "no such chip" } }, 1,
	  { THEN_NOTHING, THEN_NOTHING }, NULL, NULL },
	{ "no reason, none shown", { { D, NULL } }, 1,
	  { THEN_NOTHING, THEN_NOTHING }, NULL, NULL },
	{ "said before device_add(): not recorded", { { D, NULL } }, 1,
	  { THEN_NOTHING, THEN_NOTHING }, "too early", NULL },
};
/* clang-format on */

/* The dump of @dev, in a string to free. */
static char *dump_of(struct device *dev)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	devres_dump(dev, f);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void run_then(struct device *dev, enum then then, bool *deleted)
{
	switch (then) {
	case THEN_NOTHING:
		break;
	case THEN_TRIGGER:
		driver_deferred_probe_trigger();
		break;
	case THEN_ATTACH:
		(void)device_attach(dev);
		break;
	case THEN_DEL:
		device_del(dev);
		*deleted = true;
		break;
	case THEN_BIND_UNBIND:
		driver_deferred_probe_trigger();
		assert_true(device_is_bound(dev));
		device_release_driver(dev);
		break;
	}
}

static void run_cell(const struct cell *c)
{
	struct devres_ledger before, after;
	const char *line = "  deferred probe pending: ";
	bool deleted = false;
	struct device *dev;
	char *out, *at;
	int released;

	print_message("cell: %s\n", c->what);
	devres_ledger_snapshot(&before);
	released = heap_released;
	cur = c;
	step = 0;
	assert_int_equal(driver_register(&rdrv), 0);
	dev = heap_dev(&rbus, "rdev");
	assert_non_null(dev);
	if (c->before_add)
		(void)dev_err_probe(dev, -EPROBE_DEFER, "%s", c->before_add);
	assert_int_equal(device_add(dev), 0);
	for (int i = 0; i < 2; i++)
		run_then(dev, c->then[i], &deleted);

	out = dump_of(dev);
	at = strstr(out, line);
	if (c->shown) {
		assert_non_null(at);
		at += strlen(line);
		assert_int_equal(strncmp(at, c->shown, strlen(c->shown)), 0);
		assert_int_equal(at[strlen(c->shown)], '\n');
		/* One line: a replaced reason is gone. */
		assert_null(strstr(at, line));
	} else if (at) {
		fail_msg("%s: a reason shown: %s", c->what, at);
	}
	free(out);

	if (deleted)
		put_device(dev);
	else
		device_unregister(dev);
	driver_unregister(&rdrv);
	assert_int_equal(heap_released, released + 1);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void test_reason_cells(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)
		run_cell(&cells[i]);
	assert_int_equal(devres_warn_count(), warns);
}

/*
 * The reason stays the device's own: two parked devices of one driver,
 * each shown with its own, and the one bound loses only its own.
 */
static int pair_probe(struct device *dev)
{
	if (strcmp(dev_name(dev), "pair-b") == 0 && step)
		return 0;
	return dev_err_probe(dev, -EPROBE_DEFER, "%s waits", dev_name(dev));
}

static struct device_driver pair_drv = {
	.name = "pair-drv",
	.bus = &rbus,
	.probe = pair_probe,
};

static void test_reason_per_device(void **state)
{
	struct device *a, *b;
	char *out;

	(void)state;
	step = 0;
	assert_int_equal(t_driver_register(&pair_drv), 0);
	a = heap_dev(&rbus, "pair-a");
	b = heap_dev(&rbus, "pair-b");
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	put_device(a);
	put_device(b);
	out = dump_of(a);
	assert_non_null(strstr(out, "deferred probe pending: pair-drv: pair-a "
				    "waits\n"));
	free(out);
	out = dump_of(b);
	assert_non_null(strstr(out, "deferred probe pending: pair-drv: pair-b "
				    "waits\n"));
	free(out);
	step = 1;
	driver_deferred_probe_trigger();
	assert_true(device_is_bound(b));
	out = dump_of(b);
	assert_null(strstr(out, "deferred probe pending"));
	free(out);
	out = dump_of(a);
	assert_non_null(strstr(out, "deferred probe pending: pair-drv: pair-a "
				    "waits\n"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_cells),
		cmocka_unit_test(test_reason_per_device),
	};

	return run_tests_on_bus(tests, &rbus);
}
