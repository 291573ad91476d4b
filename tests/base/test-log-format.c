// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * A caller's printf format, in every call that takes one: dev_printk()
 * (dev_err() and the rest), dev_err_probe() (an error and a deferral),
 * devres_warn(), devm_kasprintf(), devm_kvasprintf() and dev_set_name().
 *
 * %n, of any length and written any way, stores through its argument:
 * the kernel's printf refuses it with a WARN and writes nothing. Each
 * call given it writes nothing, WARNs once naming the call and the
 * device (the only line the sink is given), and returns its refusal: no
 * line, dev_err_probe()'s @err, NULL, -EINVAL (the name kept). "%%n" and
 * a "%n" passed as a string are not conversions: no WARN, printed as is.
 *
 * A conversion that fails (a wide string the locale cannot convert sets
 * EILSEQ) leaves errno as the caller had it, as every log call does.
 *
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
#include <wchar.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10
#define SENTINEL EXDEV
#define FILL 0xa5

static struct device fdev;
static int lines;
static char last[512];

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	lines++;
	snprintf(last, sizeof(last), "%s", line);
}

/* What a call returned, as an int: 0 for one that returns nothing. */
static int ret;
static char *str;

static void kvasprintf_of(const char *fmt, ...) DEVRES_PRINTF(1, 2);
static void kvasprintf_of(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	str = devm_kvasprintf(&fdev, GFP_KERNEL, fmt, ap);
	va_end(ap);
}

enum {
	C_DEV_ERR,
	C_PROBE_ERR,
	C_PROBE_DEFER,
	C_WARN,
	C_KASPRINTF,
	C_KVASPRINTF,
	C_SET_NAME,
	C_COUNT,
};

static const char *const calls[C_COUNT] = {
	"dev_err",	"dev_err_probe(-EIO)", "dev_err_probe(-EPROBE_DEFER)",
	"devres_warn",	"devm_kasprintf",      "devm_kvasprintf",
	"dev_set_name",
};

/* The name the WARN gives the call. */
static const char *const funcs[C_COUNT] = {
	"dev_printk",	  "dev_err_probe",   "dev_err_probe", "caller_check",
	"devm_kasprintf", "devm_kvasprintf", "dev_set_name",
};

/* @call with a literal format, so that the compiler checks it. */
#define CALL(call, ...)                                                        \
	do {                                                                   \
		switch (call) {                                                \
		case C_DEV_ERR:                                                \
			dev_err(&fdev, __VA_ARGS__);                           \
			break;                                                 \
		case C_PROBE_ERR:                                              \
			ret = dev_err_probe(&fdev, -EIO, __VA_ARGS__);         \
			break;                                                 \
		case C_PROBE_DEFER:                                            \
			ret = dev_err_probe(&fdev, -EPROBE_DEFER,              \
					    __VA_ARGS__);                      \
			break;                                                 \
		case C_WARN:                                                   \
			devres_warn(&fdev, "caller_check", __VA_ARGS__);       \
			break;                                                 \
		case C_KASPRINTF:                                              \
			str = devm_kasprintf(&fdev, GFP_KERNEL, __VA_ARGS__);  \
			break;                                                 \
		case C_KVASPRINTF:                                             \
			kvasprintf_of(__VA_ARGS__);                            \
			break;                                                 \
		default:                                                       \
			ret = dev_set_name(&fdev, __VA_ARGS__);                \
		}                                                              \
	} while (0)

/* ---- %n: nothing written, one WARN, the call refused ---- */

enum {
	F_PLAIN,
	F_HH,
	F_LL,
	F_POSITIONAL,
	F_AFTER_PERCENT,
	F_INTMAX,
	F_SIZE_T,
	F_COUNT,
};

static const char *const stores[F_COUNT] = {
	"x%n", "%hhn", "%lln", "%2$s%1$n", "100%%%n", "%jn", "%s %zn",
};

/* clang-format off */
static union {
	long long ll;
	intmax_t j;
	size_t z;
	int i;
	signed char hh;
	unsigned char bytes[16];
} target;
/* clang-format on */

static void call_store(int call, int fmt)
{
	switch (fmt) {
	case F_PLAIN:
		CALL(call, "x%n", &target.i);
		break;
	case F_HH:
		CALL(call, "%hhn", &target.hh);
		break;
	case F_LL:
		CALL(call, "%lln", &target.ll);
		break;
	case F_POSITIONAL:
		CALL(call, "%2$s%1$n", &target.i, "s");
		break;
	case F_AFTER_PERCENT:
		CALL(call, "100%%%n", &target.i);
		break;
	case F_INTMAX:
		CALL(call, "%jn", &target.j);
		break;
	default:
		CALL(call, "%s %zn", "s", &target.z);
	}
}

static int setup_child(void)
{
	alarm(CELL_ALARM_S);
	if (init_dev(&fdev, "fmt-dev"))
		return 90;
	devres_set_dev_dbg(true);
	devres_set_log_sink(sink, NULL);
	return 0;
}

static int store_cell(int call, int fmt)
{
	char want[256];
	int warns, err = setup_child();

	if (err)
		return err;
	memset(&target, FILL, sizeof(target));
	ret = 1;
	str = NULL;
	warns = devres_warn_count();
	errno = SENTINEL;
	call_store(call, fmt);
	if (errno != SENTINEL)
		return 1;
	for (size_t i = 0; i < sizeof(target.bytes); i++)
		if (target.bytes[i] != FILL)
			return 2; /* written */
	if (devres_warn_count() != warns + 1 || lines != 1)
		return 3;
	snprintf(want, sizeof(want), "WARNING: fmt-dev: %s: %%n in the format",
		 funcs[call]);
	if (strncmp(last, want, strlen(want)) != 0) {
		fprintf(stderr, "got \"%s\"\n", last);
		return 4;
	}
	switch (call) {
	case C_PROBE_ERR:
		return ret == -EIO ? 0 : 5;
	case C_PROBE_DEFER:
		return ret == -EPROBE_DEFER ? 0 : 5;
	case C_KASPRINTF:
	case C_KVASPRINTF:
		return str ? 6 : 0;
	case C_SET_NAME:
		if (ret != -EINVAL)
			return 7;
		return strcmp(dev_name(&fdev), "fmt-dev") ? 8 : 0;
	default:
		return 0;
	}
}

static void percent_n_writes_nothing(void **state)
{
	(void)state;
	run_cells_in_children_wide(store_cell, calls, C_COUNT, stores, F_COUNT,
				   4);
}

/* ---- No conversion: no WARN, the text as it is ---- */

enum {
	L_ESCAPED,
	L_AS_STRING,
	L_COUNT
};

static const char *const literals[L_COUNT] = { "%%n", "%s of \"%n\"" };

static int literal_cell(int call, int col)
{
	const char *got;
	int warns, err = setup_child();

	if (err)
		return err;
	warns = devres_warn_count();
	if (col == L_ESCAPED)
		CALL(call, "a%%nb");
	else
		CALL(call, "a%sb", "%n");
	got = str;
	switch (call) {
	case C_WARN:
		if (devres_warn_count() != warns + 1)
			return 1;
		got = strstr(last, "caller_check: ");
		got = got ? got + strlen("caller_check: ") : "";
		break;
	case C_KASPRINTF:
	case C_KVASPRINTF:
		break;
	case C_SET_NAME:
		got = dev_name(&fdev);
		break;
	default:
		got = strstr(last, "error -");
		got = got ? strstr(got, ": ") + 2 : strstr(last, ": ") + 2;
	}
	if (call != C_WARN && devres_warn_count() != warns)
		return 2;
	if (!got || strcmp(got, "a%nb") != 0) {
		fprintf(stderr, "got \"%s\"\n", got ? got : "(null)");
		return 3;
	}
	return 0;
}

static void no_conversion_no_warn(void **state)
{
	(void)state;
	run_cells_in_children_wide(literal_cell, calls, C_COUNT, literals,
				   L_COUNT, 4);
}

/* ---- A conversion that fails: errno as the caller had it ---- */

enum {
	E_WIDE_STRING,
	E_WIDE_CHAR,
	E_COUNT
};

static const char *const failing[E_COUNT] = { "%ls", "%lc" };

/* The calls that return nothing, or the error they were given. */
static const char *const log_calls[C_PROBE_DEFER + 2] = {
	"dev_err",
	"dev_err_probe(-EIO)",
	"dev_err_probe(-EPROBE_DEFER)",
	"devres_warn",
};

static int errno_cell(int call, int col)
{
	/* No character past 0x7f has a conversion in the "C" locale. */
	static const wchar_t wide[] = { L'a', (wchar_t)0x100, 0 };
	int err = setup_child();

	if (err)
		return err;
	errno = SENTINEL;
	if (col == E_WIDE_STRING)
		CALL(call, "wide %ls", wide);
	else
		CALL(call, "wide %lc", (wint_t)0x100);
	if (errno != SENTINEL) {
		fprintf(stderr, "errno %d\n", errno);
		return 1;
	}
	/* The line is still given, with what was made of it. */
	return lines == 1 ? 0 : 2;
}

static void failed_conversion_keeps_errno(void **state)
{
	(void)state;
	run_cells_in_children_wide(errno_cell, log_calls, C_PROBE_DEFER + 2,
				   failing, E_COUNT, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(percent_n_writes_nothing),
		cmocka_unit_test(no_conversion_no_warn),
		cmocka_unit_test(failed_conversion_keeps_errno),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
