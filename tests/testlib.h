/* SPDX-License-Identifier: MIT */
/*
 * The fixture the cmocka tests share, so that every test file checks the
 * same things the same way: a named test device whose release is counted,
 * a setup/teardown pair that fails unless the ledger is back at its
 * baseline and the release ran, WARN and log capture through the sink, a
 * release-order recorder, and small helpers on stats and dumps.
 * Uses only the public API and cmocka, so that every test can link it.
 */
#ifndef DEVRES_TESTLIB_H
#define DEVRES_TESTLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <devres/device.h>
#include <devres/fault.h>

struct CMUnitTest;

/* "test-dev", and "other-dev" for the tests that need a second device. */
/* T_ASAN: an AddressSanitizer build (gcc's macro, clang's feature). */
#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif
/* T_TSAN: a ThreadSanitizer build, likewise. */
#if defined(__SANITIZE_THREAD__)
#define T_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif

extern struct device tdev, other;
/* How many times the release of tdev or other ran. */
extern int tdev_released;
/* The ledger at setup; teardown fails unless it is back there. */
extern struct devres_ledger ledger_base;

int init_dev(struct device *dev, const char *name);
/* tdev only; *state is &tdev. */
int dev_setup(void **state);
/* tdev and other; *state is &tdev. */
int two_dev_setup(void **state);
/*
 * Drops the sink, releases what the test left, puts the device(s) and
 * fails unless each release ran once and the ledger is at its baseline.
 */
int dev_teardown(void **state);

/*
 * A zeroed device on the heap, on @bus (NULL for none), initialized and
 * named like printf; its release frees it and counts in heap_released,
 * atomically, so that the last reference may go on any thread.
 */
struct device *heap_dev(const struct bus_type *bus, const char *fmt, ...)
	DEVRES_PRINTF(2, 3);
extern int heap_released;
/* The release of heap_dev(), for a device a probe builds by hand. */
void heap_release(struct device *dev);

/*
 * cmocka_run_group_tests() with @bus registered around the group: the
 * group fails to set up if the bus does not register.
 */
#define run_tests_on_bus(tests, bus)                                           \
	run_group_on_bus(#tests, tests, sizeof(tests) / sizeof((tests)[0]), bus)
int run_group_on_bus(const char *name, const struct CMUnitTest *tests, size_t n,
		     const struct bus_type *bus);

/*
 * The registry: buses, drivers and devices registered through these are
 * undone by the fixture's teardown (dev_teardown(), and the per-test
 * teardown run_tests_on_bus() gives tests that have none), newest first,
 * even when an assertion failed half way: one failure cannot leave a
 * driver on a bus for the next test. A test that undoes one itself does it
 * through the t_*unregister/t_device_del calls, or says so with t_forget().
 * A tracked device is held by a reference of the registry until then, so
 * teardown never touches freed memory. Safe from any thread.
 */
struct device_driver;
struct platform_driver;
int t_bus_register(const struct bus_type *bus);
void t_bus_unregister(const struct bus_type *bus);
int t_driver_register(struct device_driver *drv);
void t_driver_unregister(struct device_driver *drv);
int t_platform_driver_register(struct platform_driver *drv);
void t_platform_driver_unregister(struct platform_driver *drv);
/* device_add(); teardown undoes it with device_del(). */
int t_device_add(struct device *dev);
void t_device_del(struct device *dev);
void t_device_unregister(struct device *dev);
/* Drops @obj from the registry (and its reference) without undoing it. */
void t_forget(const void *obj);
/* Undoes everything still in the registry, newest first. */
void t_undo_all(void);
/* A teardown that only runs t_undo_all(). */
int reg_teardown(void **state);
/*
 * cmocka_run_group_tests() where each test without a teardown gets
 * reg_teardown(); TEST_FILTER=<name> in the environment runs one test.
 */
#define run_tests_tracked(tests, setup, teardown)                              \
	run_group_tracked(#tests, tests, sizeof(tests) / sizeof((tests)[0]),   \
			  setup, teardown)
int run_group_tracked(const char *name, const struct CMUnitTest *tests,
		      size_t n, int (*group_setup)(void **),
		      int (*group_teardown)(void **));

/* Lines the sink received; n counts them all, even past CAP_LINES. */
#define CAP_LINES 512

struct capture {
	char line[CAP_LINES][256];
	int level[CAP_LINES];
	int n;
};

extern struct capture cap;

/* Captures WARNING lines only, and notes the WARN count. */
void start_capture(void);
/* Captures every line at every level. */
void start_log_capture(void);
/* Exactly one WARN since start_capture(): "WARNING: <dev>: <func>: <why>". */
void expect_warn_on(const char *dev, const char *func, const char *reason);
/* The same on "test-dev". */
void expect_warn(const char *func, const char *reason);
/* No WARN since start_capture(). */
void expect_no_warn(void);
/* The level of the first captured line equal to @text, or -1. */
int line_level(const char *text);
/* How many captured lines start with @prefix. */
int count_prefix(const char *prefix);

void expect_stats(struct device *dev, int allocs, int bytes);
/* devres_dump() as one string, to be freed. */
char *dump_to_string(struct device *dev);
int count_substr(const char *s, const char *sub);

/* Release order: each recorder node holds an int, its release logs it. */
#define ORDER_MAX 256
extern int order[ORDER_MAX];
extern int norder;

void reset_order(void);
void rec_release(struct device *dev, void *res);
/* Adds a recorder node holding @v to @dev. */
int *add_rec(struct device *dev, int v);

/*
 * Runs this test binary again with the arguments @arg, ... (NULL-ended)
 * and, when @var ("NAME=value") is set, that variable in place of any
 * inherited one of its name (a bare "NAME" removes it): how a test checks
 * what the library reads from the environment at start. Returns the exit status; the child's
 * stderr goes to *@ret_err (to be freed) unless @ret_err is NULL.
 */
int run_self(const char *var, char **ret_err, const char *arg, ...);

/*
 * add_cell() - one cell of a table-driven test
 * @test: the cmocka test to fill
 * @cell: the cell, the test's initial state; its "name" member, a char
 *        array, is written like printf (@... the format and its arguments)
 * @run: the test function
 * @setup: the setup function, or NULL
 * @teardown: the teardown function, or NULL
 *
 * @test runs @run under @cell's name, between @setup and @teardown.
 */
#define add_cell(test, cell, run, setup, teardown, ...)                        \
	cell_fill((test), (cell), (cell)->name, sizeof((cell)->name), (run),   \
		  (setup), (teardown), __VA_ARGS__)

void cell_fill(struct CMUnitTest *test, void *cell, char *name, size_t len,
	       void (*run)(void **), int (*setup)(void **),
	       int (*teardown)(void **), const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

/*
 * Whether the test runs under valgrind: its preload (vgpreload_*.so) is
 * in LD_PRELOAD, as valgrind sets it for the program it runs.
 */
bool under_valgrind(void);

/*
 * How many open fds above 2 (stdio) lack FD_CLOEXEC: every fd the library
 * creates must have it. Compare with a count taken before the call, since
 * the test's own parent may have left fds open.
 */
int count_fds_without_cloexec(void);

/* The entries of directory @dir, less "." and "..". */
int count_entries(const char *dir);

/*
 * Whether thread @tid of this process sleeps (its state in
 * /proc/self/task/<tid>/stat is S): a thread that waits for a lock, a
 * condition or a futex. False for 0 or a thread that is gone.
 */
bool tid_asleep(int tid);

/*
 * A call made on a thread of its own, parked where it sleeps: @fn's return
 * in @ret once @t is joined.
 */
struct asleep_call {
	pthread_t t;
	int (*fn)(void);
	int tid;
	int ret;
};

/*
 * Starts @c->fn on a new thread and returns once that thread sleeps (on
 * a lock the test holds, say) and has settled there; fails the test if it
 * does not within 10 s.
 */
void start_until_asleep(struct asleep_call *c);

/*
 * How many fds the process has open, as /proc/self/fd lists them (less
 * the listing's own): compare with a count taken before, since the
 * test's parent or a sanitizer's runtime may hold fds of their own.
 */
int count_open_fds(void);

/*
 * Runs @access(@arg) in a child of fork() and tells whether AddressSanitizer
 * reported it: the child exited non-zero and its stderr names one of the
 * kinds that follow @arg ("heap-use-after-free", "use-after-poison"...),
 * a NULL-ended list. @access should touch memory ASan must catch; if it
 * returns, the child exits 0 and the answer is false.
 */
bool asan_reports(void (*access)(void *arg), void *arg, ...)
	__attribute__((sentinel));

#endif /* DEVRES_TESTLIB_H */
