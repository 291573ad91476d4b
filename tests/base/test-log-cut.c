// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * A line longer than the log's buffer: what is cut, and that it says so.
 * Every line is one call of the sink, shorter than 512 bytes. A device
 * name of up to 128 characters is given whole; a longer one (a 4 KiB
 * name) is cut and ends with "...", so that what follows it still fits:
 * a WARN's function and reason, a log line's operation, a message. A
 * message too long for the line is cut and ends with "...".
 *
 * Before, a 4 KiB name filled the line: the WARN named neither the call
 * nor the reason, dev_err() lost its message, and a cut message said
 * nothing of being cut.
 *
 * Rows: dev_err(), dev_err_probe(), devres_warn(), a WARN of the library
 * (devm_kfree() of memory the device does not manage) and a log line
 * (devm_kmalloc() with logging on). Columns: name and message lengths.
 * Each cell runs in a child under an alarm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10
#define LINE_MAX_BYTES 512
#define NAME_WHOLE 128
#define LONG_NAME 4096
#define LONG_MSG 5000

static struct device cdev;
static int lines;
static char last[2 * LINE_MAX_BYTES];
static size_t last_len;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	lines++;
	last_len = strlen(line);
	snprintf(last, sizeof(last), "%s", line);
}

enum {
	R_DEV_ERR,
	R_PROBE,
	R_WARN_API,
	R_LIB_WARN,
	R_LOG,
	R_COUNT
};

static const char *const rows[R_COUNT] = {
	"dev_err",	   "dev_err_probe",    "devres_warn",
	"devm_kfree WARN", "devm_kmalloc log",
};

/* What the line must still hold after the device's name. */
static const char *const markers[R_COUNT] = {
	": msg ",	  ": error -EIO: msg ", ": caller_check: msg ",
	": devm_kfree: ", ": DEVRES ADD ",
};

struct col {
	size_t name_len;
	bool long_msg;
};

static const struct col cols[] = {
	{ 7, false },	      { NAME_WHOLE, false }, { NAME_WHOLE + 1, false },
	{ LONG_NAME, false }, { 7, true },	     { LONG_NAME, true },
};

#define NCOLS ((int)(sizeof(cols) / sizeof(cols[0])))

static const char *const col_names[NCOLS] = {
	"name 7",
	"name 128",
	"name 129",
	"name 4096",
	"name 7, long message",
	"name 4096, long message",
};

static char name[LONG_NAME + 1];
static char msg[LONG_MSG + 1];
static int not_managed;

static void call(int row)
{
	switch (row) {
	case R_DEV_ERR:
		dev_err(&cdev, "%s", msg);
		break;
	case R_PROBE:
		(void)dev_err_probe(&cdev, -EIO, "%s", msg);
		break;
	case R_WARN_API:
		devres_warn(&cdev, "caller_check", "%s", msg);
		break;
	case R_LIB_WARN:
		devm_kfree(&cdev, &not_managed);
		break;
	default:
		devres_set_log(true);
		(void)devm_kmalloc(&cdev, 8, GFP_KERNEL);
		devres_set_log(false);
	}
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

static int cell(int row, int c)
{
	const struct col *col = &cols[c];
	const char *at = last;
	char want[64];

	alarm(CELL_ALARM_S);
	memset(name, 'n', col->name_len);
	name[col->name_len] = '\0';
	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	if (col->long_msg)
		memcpy(msg, "msg ", 4);
	else
		snprintf(msg, sizeof(msg), "msg end");
	if (init_dev(&cdev, "cut") || dev_set_name(&cdev, "%s", name))
		return 90;
	devres_set_log_sink(sink, NULL);
	call(row);
	if (lines != 1)
		return 1;
	if (last_len >= LINE_MAX_BYTES)
		return 2;
	if (!strncmp(at, "WARNING: ", 9))
		at += 9;
	/* The name: whole, or cut with "...". */
	if (col->name_len <= NAME_WHOLE) {
		if (strncmp(at, name, col->name_len) != 0)
			return 3;
		at += col->name_len;
	} else {
		at = strstr(at, "n...");
		if (!at)
			return 4;
		at += 4;
	}
	snprintf(want, sizeof(want), "%s", markers[row]);
	if (strncmp(at, want, strlen(want)) != 0) {
		fprintf(stderr, "got \"%.80s\"\n", at);
		return 5;
	}
	if (row >= R_LIB_WARN)
		return 0;
	if (col->long_msg)
		return ends_with(last, "m...") ? 0 : 6;
	return ends_with(last, "msg end") ? 0 : 7;
}

static void long_names_and_lines_are_cut_and_said(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, R_COUNT, col_names, NCOLS, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(long_names_and_lines_are_cut_and_said),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
