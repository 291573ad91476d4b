// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Every call of the compat headers and of the library that formats a
 * caller's printf format refuses a %n conversion, as the kernel's
 * vsnprintf() refuses it: one WARN naming the call and the %n, nothing
 * written through the argument, nothing printed, and the call's
 * "nothing" returned (0 characters, no queue, no name, the error given
 * to dev_err_probe()). Cells: the calls x five spellings of %n (plain,
 * with each length, positional). Each cell in a
 * child under an alarm (kc-cell.h), its stderr a file that must stay
 * empty.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

/* What a %n would write to: any change is a store through the argument. */
static struct {
	int i;
	signed char c;
	long l;
	long long ll;
} victim;

#define VICTIM_I 0x5a5a
#define VICTIM_C 0x5a
#define VICTIM_L 0x5a5a5a5aL

/* Five spellings of %n, each with an argument of its own type. */
#define FORMATS(CALL)                                                          \
	case 0:                                                                \
		CALL("a%nb", &victim.i);                                       \
		break;                                                         \
	case 1:                                                                \
		CALL("ab%hhn", &victim.c);                                     \
		break;                                                         \
	case 2:                                                                \
		CALL("%1$n", &victim.i);                                       \
		break;                                                         \
	case 4:                                                                \
		CALL("%ln%%", &victim.l);                                      \
		break;                                                         \
	case 3:                                                                \
		CALL("xy%lln", &victim.ll);                                    \
		break;
#define N_FORMATS 5

static struct device dev;
static char page[PAGE_SIZE];
static long ret;
static int heard, named;
static const char *want;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	heard++;
	if (strstr(line, want) && strstr(line, "%n in the format"))
		named++;
}

/* clang-format off */
#define C_SYSFS_EMIT(f, p) ret = sysfs_emit(page, f, p)
#define C_SYSFS_EMIT_AT(f, p) ret = sysfs_emit_at(page, 3, f, p)
#define C_ALLOC_WQ(f, p) ret = (long)(uintptr_t)alloc_workqueue(f, 0, 0, p)
#define C_ALLOC_OWQ(f, p) ret = (long)(uintptr_t)alloc_ordered_workqueue(f, 0, p)
#define C_PRINTK(f, p) ret = printk(f, p)
#define C_PR_EMERG(f, p) ret = pr_emerg(f, p)
#define C_PR_ALERT(f, p) ret = pr_alert(f, p)
#define C_PR_CRIT(f, p) ret = pr_crit(f, p)
#define C_PR_ERR(f, p) ret = pr_err(f, p)
#define C_PR_WARN(f, p) ret = pr_warn(f, p)
#define C_PR_NOTICE(f, p) ret = pr_notice(f, p)
#define C_PR_INFO(f, p) ret = pr_info(f, p)
#define C_PR_CONT(f, p) ret = pr_cont(f, p)
#define C_WARN(f, p) ret = !WARN(1, f, p)
#define C_DEV_ERR(f, p) dev_err(&dev, f, p)
#define C_DEV_WARN(f, p) dev_warn(&dev, f, p)
#define C_DEV_INFO(f, p) dev_info(&dev, f, p)
#define C_DEV_NOTICE(f, p) dev_notice(&dev, f, p)
#define C_DEV_ERR_PROBE(f, p) ret = dev_err_probe(&dev, -EIO, f, p) + EIO
#define C_DEV_SET_NAME(f, p) ret = dev_set_name(&dev, f, p) + EINVAL
#define C_KASPRINTF(f, p) ret = (long)(uintptr_t)devm_kasprintf(&dev, GFP_KERNEL, f, p)
#define C_DEVRES_WARN(f, p) devres_warn(&dev, "devres_warn", f, p)
/* clang-format on */

#define CALLS(X)                                                               \
	X(sysfs_emit, C_SYSFS_EMIT, "sysfs_emit")                              \
	X(sysfs_emit_at, C_SYSFS_EMIT_AT, "sysfs_emit_at")                     \
	X(alloc_workqueue, C_ALLOC_WQ, "alloc_workqueue")                      \
	X(alloc_ordered_workqueue, C_ALLOC_OWQ, "alloc_workqueue")             \
	X(printk, C_PRINTK, "printk")                                          \
	X(pr_emerg, C_PR_EMERG, "pr_emerg")                                    \
	X(pr_alert, C_PR_ALERT, "pr_alert")                                    \
	X(pr_crit, C_PR_CRIT, "pr_crit")                                       \
	X(pr_err, C_PR_ERR, "pr_err")                                          \
	X(pr_warn, C_PR_WARN, "pr_warn")                                       \
	X(pr_notice, C_PR_NOTICE, "pr_notice")                                 \
	X(pr_info, C_PR_INFO, "pr_info")                                       \
	X(pr_cont, C_PR_CONT, "pr_cont")                                       \
	X(WARN, C_WARN, "WARN")                                                \
	X(dev_err, C_DEV_ERR, "dev_printk")                                    \
	X(dev_warn, C_DEV_WARN, "dev_printk")                                  \
	X(dev_info, C_DEV_INFO, "dev_printk")                                  \
	X(dev_notice, C_DEV_NOTICE, "dev_printk")                              \
	X(dev_err_probe, C_DEV_ERR_PROBE, "dev_err_probe")                     \
	X(dev_set_name, C_DEV_SET_NAME, "dev_set_name")                        \
	X(devm_kasprintf, C_KASPRINTF, "devm_kasprintf")                       \
	X(devres_warn, C_DEVRES_WARN, "devres_warn")

#define ENUM(name, call, func) E_##name,
enum {
	CALLS(ENUM) N_CALLS
};

#define NAME(name, call, func) #name,
static const char *const call_name[] = { CALLS(NAME) };

#define FUNC(name, call, func) func,
static const char *const call_func[] = { CALLS(FUNC) };

#define CASE(name, call, func)                                                 \
	case E_##name:                                                         \
		switch (f) {                                                   \
			FORMATS(call)                                          \
		}                                                              \
		break;

static void run_call(int c, int f)
{
	switch (c) {
		CALLS(CASE) /* NOLINT(bugprone-branch-clone): aliases */
	}
}

static void cell(int c, int f, int unused)
{
	char path[] = "/tmp/kc-format-store-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO), warns;
	struct stat st;

	(void)unused;
	CHECK(fd >= 0 && saved >= 0);
	unlink(path);
	CHECK(init_dev(&dev, "fmt0") == 0);
	memset(page, 'p', sizeof(page));
	victim.i = VICTIM_I;
	victim.c = VICTIM_C;
	victim.l = VICTIM_L;
	victim.ll = VICTIM_L;
	want = call_func[c];
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	CHECK(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	run_call(c, f);
	fflush(stderr);
	CHECK(fstat(fd, &st) == 0);
	CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
	CHECK(devres_warn_count() == warns + 1);
	devres_set_log_sink(NULL, NULL);
	CHECK(heard == 1);
	CHECK(named == 1);
	CHECK(victim.i == VICTIM_I && victim.c == VICTIM_C &&
	      victim.l == VICTIM_L && victim.ll == VICTIM_L);
	CHECK(ret == 0);
	CHECK(page[0] == 'p' && page[3] == 'p');
	CHECK(st.st_size == 0);
	CHECK(strcmp(dev_name(&dev), "fmt0") == 0);
	put_device(&dev);
}

static void percent_n_refused(void **state)
{
	char name[64];
	int bad = 0;

	(void)state;
	for (int c = 0; c < N_CALLS; c++) {
		for (int f = 0; f < N_FORMATS; f++) {
			snprintf(name, sizeof(name), "%s/%d", call_name[c], f);
			bad += in_child(cell, c, f, 0, name);
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(percent_n_refused),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
