// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Counts and offsets outside the room they are about, one cell each: a
 * driver's method that says it gave more bytes than the room it was given
 * (an hwrng's read() and data_read(), an attribute's show()), and an
 * offset outside the page to sysfs_emit_at(). The kernel WARNs for each
 * and goes on with the room's size (nothing written for the offset);
 * here too: the caller gets at most its room, with exactly one WARN, a
 * shown text ends at its count, and nothing is read or written past a
 * buffer (ASan). A count within the room passes as it is, with no WARN.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/hw_random.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/sysfs.h>
#include <limits.h>
#include "kcompat/kctest.h"

#define RNG_ROOM 16

enum method {
	RNG_READ,
	RNG_DATA_READ,
	ATTR_SHOW,
	EMIT_AT
};

struct cell {
	const char *what;
	enum method method;
	long said;	  /* what the method returns; EMIT_AT: the offset */
	size_t room;	  /* RNG_*: the reader's buffer */
	long wrote;	  /* ATTR_SHOW: bytes show() writes (no NUL) */
	long want;	  /* what the caller gets */
	const char *warn; /* the WARN, or NULL for none */
};

static const struct cell cells[] = {
	/* An hwrng's read(): its count against the reader's buffer. */
	{ "read() fills the buffer", RNG_READ, RNG_ROOM, RNG_ROOM, 0, RNG_ROOM,
	  NULL },
	{ "read() gives nothing", RNG_READ, 0, RNG_ROOM, 0, 0, NULL },
	{ "read() fails", RNG_READ, -EIO, RNG_ROOM, 0, -EIO, NULL },
	{ "read() says one more", RNG_READ, RNG_ROOM + 1, RNG_ROOM, 0, RNG_ROOM,
	  "its read method returned 17 bytes for 16: cut to 16" },
	{ "read() says twice as many", RNG_READ, 2 * RNG_ROOM, RNG_ROOM, 0,
	  RNG_ROOM, "its read method returned 32 bytes for 16" },
	{ "read() says INT_MAX", RNG_READ, INT_MAX, RNG_ROOM, 0, RNG_ROOM,
	  "returned 2147483647 bytes for 16" },
	{ "read() says one more of a 1-byte buffer", RNG_READ, 2, 1, 0, 1,
	  "its read method returned 2 bytes for 1: cut to 1" },
	/* data_read(): its count against the word it was given. */
	{ "data_read() fills its word", RNG_DATA_READ, 4, RNG_ROOM, 0, 4,
	  NULL },
	{ "data_read() gives a byte", RNG_DATA_READ, 1, RNG_ROOM, 0, 1, NULL },
	{ "data_read() fills its word, a 2-byte reader", RNG_DATA_READ, 4, 2, 0,
	  2, NULL },
	{ "data_read() says 5", RNG_DATA_READ, 5, RNG_ROOM, 0, 4,
	  "its data_read method returned 5 bytes for 4: cut to 4" },
	{ "data_read() says 16", RNG_DATA_READ, 16, RNG_ROOM, 0, 4,
	  "its data_read method returned 16 bytes for 4" },
	{ "data_read() says 8, a 2-byte reader", RNG_DATA_READ, 8, 2, 0, 2,
	  "its data_read method returned 8 bytes for 4" },
	/* An attribute's show(): its count against the page. */
	{ "show() fills the page but its last byte", ATTR_SHOW, PAGE_SIZE - 1,
	  0, PAGE_SIZE - 1, PAGE_SIZE - 1, NULL },
	{ "show() says the whole page, written", ATTR_SHOW, PAGE_SIZE, 0,
	  PAGE_SIZE, PAGE_SIZE - 1,
	  "attribute value: show() returned 4096 bytes for a page of 4096: "
	  "cut to 4095" },
	{ "show() says more than the page", ATTR_SHOW, PAGE_SIZE + 100, 0,
	  PAGE_SIZE, PAGE_SIZE - 1, "show() returned 4196 bytes" },
	{ "show() says LONG_MAX", ATTR_SHOW, LONG_MAX, 0, 8, PAGE_SIZE - 1,
	  "show() returned 9223372036854775807 bytes" },
	{ "show() says 10, wrote the whole page", ATTR_SHOW, 10, 0, PAGE_SIZE,
	  10, NULL },
	{ "show() fails", ATTR_SHOW, -EIO, 0, 0, -EIO, NULL },
	/* sysfs_emit_at(): the offset against the page. */
	{ "sysfs_emit_at() at 0", EMIT_AT, 0, 0, 0, 1, NULL },
	{ "sysfs_emit_at() at the page's last byte", EMIT_AT, PAGE_SIZE - 1, 0,
	  0, 0, NULL },
	{ "sysfs_emit_at() at the page's end", EMIT_AT, PAGE_SIZE, 0, 0, 0,
	  "offset 4096 is outside the page of 4096 bytes: nothing written" },
	{ "sysfs_emit_at() at -1", EMIT_AT, -1, 0, 0, 0,
	  "offset -1 is outside the page" },
	{ "sysfs_emit_at() at INT_MAX", EMIT_AT, INT_MAX, 0, 0, 0,
	  "offset 2147483647 is outside the page" },
	{ "sysfs_emit_at() at INT_MIN", EMIT_AT, INT_MIN, 0, 0, 0,
	  "offset -2147483648 is outside the page" },
};

static const struct cell *cur;
static const char *content_bad; /* what the caller's buffer got wrong */

/* ---- The hwrng ---- */

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)rng;
	(void)wait;
	/* What it may write: its buffer, at most. */
	memset(data, 0x5a, max);
	return (int)cur->said;
}

static int rng_data_read(struct hwrng *rng, u32 *data)
{
	(void)rng;
	*data = 0x04030201;
	return (int)cur->said;
}

static struct hwrng rng_by_read = { .name = "mc-read", .read = rng_read };
static struct hwrng rng_by_word = { .name = "mc-word",
				    .data_read = rng_data_read };

static long run_rng(const struct cell *c)
{
	struct hwrng *rng = c->method == RNG_READ ? &rng_by_read : &rng_by_word;
	u8 *buf = malloc(c->room); /* exactly the room: ASan sees past it */
	long ret;

	assert_non_null(buf);
	assert_int_equal(hwrng_register(rng), 0);
	ret = hwrng_read(rng->name, buf, c->room, false);
	hwrng_unregister(rng);
	if (c->method == RNG_DATA_READ && ret > 0) {
		u32 word = 0x04030201;

		/* The word's bytes, none from past it. */
		if (ret > (long)sizeof(word) ||
		    memcmp(buf, &word, (size_t)ret) != 0)
			content_bad = "bytes from past the word";
	}
	free(buf);
	return ret;
}

/* ---- The attribute ---- */

static ssize_t value_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	(void)dev;
	(void)attr;
	memset(buf, 'v', (size_t)cur->wrote);
	return (ssize_t)cur->said;
}
static DEVICE_ATTR_RO(value);

static struct attribute *mc_attrs[] = {
	&dev_attr_value.attr,
	NULL,
};
ATTRIBUTE_GROUPS(mc);

static int mc_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static struct platform_driver mc_driver = {
	.probe = mc_probe,
	.driver = { .name = "kc-method-counts", .dev_groups = mc_groups },
};

static struct platform_device *pdev;

static long run_show(const struct cell *c)
{
	char *page = malloc(PAGE_SIZE); /* exactly a page */
	long ret;

	(void)c;
	assert_non_null(page);
	ret = kcompat_attr_show(&pdev->dev, "value", page);
	/* The text ends at its count, whatever show() wrote or said. */
	if (ret >= (long)PAGE_SIZE || (ret >= 0 && page[ret] != '\0'))
		content_bad = "the text does not end at its count";
	free(page);
	return ret;
}

/* ---- sysfs_emit_at() ---- */

static long run_emit_at(const struct cell *c)
{
	char *page = malloc(PAGE_SIZE);
	long ret;

	assert_non_null(page);
	memset(page, '-', PAGE_SIZE);
	ret = sysfs_emit_at(page, (int)c->said, "x");
	/* Nothing written outside [at, at + ret]: the rest untouched. */
	for (long i = 0; i < (long)PAGE_SIZE; i++)
		if ((c->said < 0 || c->said >= (long)PAGE_SIZE || i < c->said ||
		     i > c->said + ret) &&
		    page[i] != '-')
			content_bad = "written outside the text";
	free(page);
	return ret;
}

/* ---- The table ---- */

static void every_cell(void **state)
{
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		const struct cell *c = &cells[i];
		int warns = devres_warn_count(), got_warns;
		long ret = 0;

		cur = c;
		content_bad = NULL;
		cap.n = 0;
		switch (c->method) {
		case RNG_READ:
		case RNG_DATA_READ:
			ret = run_rng(c);
			break;
		case ATTR_SHOW:
			ret = run_show(c);
			break;
		case EMIT_AT:
			ret = run_emit_at(c);
			break;
		}
		got_warns = devres_warn_count() - warns;
		if (ret != c->want || got_warns != (c->warn ? 1 : 0) ||
		    (c->warn && !kc_said(c->warn)) || content_bad) {
			print_message("%s: got %ld with %d WARNs%s%s, want "
				      "%ld with \"%s\"\n",
				      c->what, ret, got_warns,
				      content_bad ? ", " : "",
				      content_bad ? content_bad : "", c->want,
				      c->warn ? c->warn : "(none)");
			kc_print_report();
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kc-method-counts", &mc_driver, true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, &mc_driver);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_cell, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
