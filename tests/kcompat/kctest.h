/* SPDX-License-Identifier: MIT */
/*
 * What the kernel-style driver tests share: a board (a platform device
 * with a register window backed by a memfd the test maps as the register
 * model, an interrupt line, a compatible string) and the sweep's report
 * captured and searched.
 */
#ifndef DEVRES_TESTS_KCTEST_H
#define DEVRES_TESTS_KCTEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <linux/io.h>
#include <linux/of.h>
#include "testlib.h"

#define KC_WIN 0xfe000000ull
#define KC_WIN_SIZE 4096

struct kc_board {
	struct platform_device *pdev;
	volatile uint32_t *regs; /* the register model's view */
	int fd;
	int irq;
};

/* A platform device "@name" with one register window and one line. */
static inline void kc_board_up(struct kc_board *b, const char *name,
			       const char *compatible)
{
	struct resource res[2] = {
		DEFINE_RES_MEM(KC_WIN, KC_WIN_SIZE),
		DEFINE_RES_IRQ(0),
	};

	b->fd = memfd_create(name, MFD_CLOEXEC);
	assert_true(b->fd >= 0);
	assert_int_equal(ftruncate(b->fd, KC_WIN_SIZE), 0);
	b->regs = mmap(NULL, KC_WIN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       b->fd, 0);
	assert_true(b->regs != MAP_FAILED);
	assert_int_equal(iomem_window_add(KC_WIN, KC_WIN_SIZE, b->fd, 0, name),
			 0);
	b->irq = irq_line_create(name);
	assert_true(b->irq > 0);
	res[1].start = res[1].end = (resource_size_t)b->irq;
	b->pdev = platform_device_alloc(name, PLATFORM_DEVID_NONE);
	assert_non_null(b->pdev);
	assert_int_equal(platform_device_add_resources(b->pdev, res, 2), 0);
	if (compatible)
		assert_int_equal(
			kcompat_set_compatible(&b->pdev->dev, compatible), 0);
	assert_int_equal(platform_device_add(b->pdev), 0);
}

static inline void kc_board_down(struct kc_board *b)
{
	platform_device_unregister(b->pdev);
	assert_int_equal(irq_line_destroy(b->irq), 0);
	assert_int_equal(iomem_window_remove(KC_WIN), 0);
	munmap((void *)b->regs, KC_WIN_SIZE);
	close(b->fd);
}

/*
 * The fixture of a test of one platform driver: its board up, the ledger
 * noted and the log captured before; the board down, strict mode off and
 * the ledger back where it was after.
 */
static struct kc_board board;
static struct devres_ledger kc_base;

static inline int kc_setup(const char *name, const char *compatible)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_ledger_snapshot(&kc_base);
	kc_board_up(&board, name, compatible);
	start_log_capture();
	return 0;
}

static inline int kc_teardown(void)
{
	struct devres_ledger now;

	devres_set_log_sink(NULL, NULL);
	devres_sweep_set_strict(false);
	kc_board_down(&board);
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&kc_base, &now, stderr) ? -1 : 0;
}

/* The cmocka setup and teardown of a test of one driver on its board. */
#define KC_FIXTURE(name, compatible)                                           \
	static int setup(void **state)                                         \
	{                                                                      \
		(void)state;                                                   \
		return kc_setup((name), (compatible));                         \
	}                                                                      \
	static int teardown(void **state)                                      \
	{                                                                      \
		(void)state;                                                   \
		return kc_teardown();                                          \
	}

/*
 * The fixture of a test of a driver that needs no board: a platform device
 * "@name" with no resources, added, the ledger noted before (kc_base) and
 * compared after; @drv, when not NULL, registered once the device is there
 * (so bound to it) and unregistered before the device goes; with
 * @capture, the log captured.
 */
static inline void kc_bare_setup(struct platform_device **ret_pdev,
				 const char *name, struct platform_driver *drv,
				 bool capture)
{
	struct platform_device *pdev;

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_ledger_snapshot(&kc_base);
	pdev = platform_device_alloc(name, PLATFORM_DEVID_NONE);
	assert_non_null(pdev);
	assert_int_equal(platform_device_add(pdev), 0);
	if (drv) {
		assert_int_equal(platform_driver_register(drv), 0);
		assert_ptr_equal(pdev->dev.driver, &drv->driver);
	}
	if (capture)
		start_log_capture();
	*ret_pdev = pdev;
}

static inline int kc_bare_teardown(struct platform_device *pdev,
				   struct platform_driver *drv)
{
	struct devres_ledger now;

	devres_set_log_sink(NULL, NULL);
	if (drv)
		platform_driver_unregister(drv);
	platform_device_unregister(pdev);
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&kc_base, &now, stderr) ? -1 : 0;
}

/*
 * The fixture of a test whose calls may wait for ever when they are
 * wrong: one line a WARN, the ledger noted (kc_base) and an alarm of
 * @alarm_s seconds set before, so that a hang ends the test and fails it;
 * after, the alarm cleared, the sink dropped and the ledger compared.
 */
static inline void kc_alarm_setup(unsigned int alarm_s)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_ledger_snapshot(&kc_base);
	alarm(alarm_s);
}

static inline int kc_alarm_teardown(void)
{
	struct devres_ledger now;

	alarm(0);
	devres_set_log_sink(NULL, NULL);
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&kc_base, &now, stderr) ? -1 : 0;
}

/* The cmocka setup and teardown of such a test, with nothing more. */
#define KC_ALARM_FIXTURE(alarm_s)                                              \
	static int setup(void **state)                                         \
	{                                                                      \
		(void)state;                                                   \
		kc_alarm_setup(alarm_s);                                       \
		return 0;                                                      \
	}                                                                      \
	static int teardown(void **state)                                      \
	{                                                                      \
		(void)state;                                                   \
		return kc_alarm_teardown();                                    \
	}

/*
 * The next order of the @n steps in @perm, in lexicographic order, for
 * the tests that run every order of a few steps; false after the last
 * (@perm starts sorted: 0, 1, ... n - 1).
 */
static inline bool kc_next_order(int *perm, int n)
{
	int i = n - 2, j = n - 1, t;

	while (i >= 0 && perm[i] >= perm[i + 1])
		i--;
	if (i < 0)
		return false;
	while (perm[j] <= perm[i])
		j--;
	t = perm[i], perm[i] = perm[j], perm[j] = t;
	for (int a = i + 1, b = n - 1; a < b; a++, b--)
		t = perm[a], perm[a] = perm[b], perm[b] = t;
	return true;
}

/* Binds @pdev again when an unbind left it unbound (its driver is there). */
static inline void kc_rebind(struct platform_device *pdev)
{
	if (!pdev->dev.driver)
		assert_int_equal(device_attach(&pdev->dev), 1);
}

/* Whether a captured line contains @s. */
static inline bool kc_said(const char *s)
{
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		if (strstr(cap.line[i], s))
			return true;
	return false;
}

/*
 * Whether the report names, after @key ("it failed at "), a line of @file
 * (a driver beside this header) that holds @token: the line number is read
 * from the report and the source line from the file, so the check follows
 * the driver as it is edited.
 */
static inline bool kc_site_names(const char *key, const char *file,
				 const char *token)
{
	char path[512], want[128], text[512];

	snprintf(path, sizeof(path), "%s/%s", KC_SRCDIR, file);
	snprintf(want, sizeof(want), "%s%s:", key, file);
	for (int i = 0; i < cap.n && i < CAP_LINES; i++) {
		const char *at = strstr(cap.line[i], want);
		FILE *f;
		int line, n = 0;
		bool found = false;

		if (!at || sscanf(at + strlen(want), "%d", &line) != 1)
			continue;
		f = fopen(path, "re");
		if (!f)
			return false;
		while (fgets(text, sizeof(text), f))
			if (++n == line) {
				found = strstr(text, token) != NULL;
				break;
			}
		fclose(f);
		if (found)
			return true;
	}
	return false;
}

/* Prints what the sweep said, for the log of a failing test. */
static inline void kc_print_report(void)
{
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		fprintf(stderr, "  | %s\n", cap.line[i]);
}

/* CLOCK_REALTIME @ms from now: the deadline of a timed wait. */
static inline struct timespec kc_deadline_ms(int ms)
{
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	return end;
}

#endif /* DEVRES_TESTS_KCTEST_H */
