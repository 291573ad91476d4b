// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=60 */
/*
 * The retry of parked devices meeting a lock whose holder waits for the
 * retrying thread (docs/misuse.md S25, "a retry: the device left
 * parked"), from each call that retries: driver_deferred_probe_trigger(),
 * and the bind of another device by device_add(), device_register(),
 * driver_register(), device_attach() and device_driver_attach().
 *
 * Device P's probe deferred: P is parked. The main thread attaches P; the
 * bus's match of P, run under P's lock, starts thread B (a managed
 * thread) and stops it with devm_thread_stop(), a wait for B on the
 * record of waits. B, once that wait is recorded, makes the row's call,
 * whose retry finds P parked and waits for P's lock: the loop. The wait
 * made last, the retry's, is refused with one WARN naming P and the
 * call; P is left parked for the main thread's probe, which binds it.
 * In the control column the match waits for B's wait on P's lock to be
 * recorded and returns without waiting for B: B's retry waits, then
 * finds P bound; no WARN.
 *
 * Each cell in a child of its own under an alarm: without the record of
 * the lock's wait, every loop cell hung until it.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "base/waits.h"

#define CELL_ALARM_S 10
#define WARN_HEAD "WARNING: pdev: driver_deferred_probe_trigger: "

#define POLL(cond)                                                             \
	({                                                                     \
		int n_ = 0;                                                    \
		while (!(cond) && n_++ < 3000)                                 \
			usleep(1000);                                          \
		(bool)(cond);                                                  \
	})

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

enum row {
	R_TRIGGER,
	R_ADD,
	R_REGISTER,
	R_DRV_REGISTER,
	R_ATTACH,
	R_DRV_ATTACH,
	NROWS
};

static const char *const rows[NROWS] = {
	"driver_deferred_probe_trigger",
	"device_add",
	"device_register",
	"driver_register",
	"device_attach",
	"device_driver_attach",
};

static const char *const cols[2] = { "loop", "control" };

static int match_first_letter(struct device *dev,
			      const struct device_driver *drv);

static const struct bus_type lbus = { .name = "retry-loop",
				      .match = match_first_letter };

static int row, col;
static struct device *p, *q, *m;
static struct devres_thread *b;
static int hold_match, go, stop_ret = -1, p_ready, q_fail;
static uint64_t a_id, b_id;
static int b_call_ret = 1;

static int p_probe(struct device *dev)
{
	(void)dev;
	return LOAD(p_ready) ? 0 : -EPROBE_DEFER;
}

static int q_probe(struct device *dev)
{
	(void)dev;
	return LOAD(q_fail) ? -ENODEV : 0;
}

static struct device_driver pdrv = {
	.name = "pdrv",
	.bus = &lbus,
	.probe = p_probe,
};

static struct device_driver qdrv = {
	.name = "qdrv",
	.bus = &lbus,
	.probe = q_probe,
};

/* B: waits for its go, then for the main thread's wait, then calls. */
static int b_fn(void *arg)
{
	(void)arg;
	STORE(b_id, devres__wait_self());
	if (!POLL(LOAD(go)))
		return -ETIMEDOUT;
	if (col == 0 && !POLL(devres__wait_records(LOAD(a_id)) > 0))
		return -ETIMEDOUT;
	switch (row) {
	case R_TRIGGER:
		driver_deferred_probe_trigger();
		b_call_ret = 0;
		break;
	case R_ADD:
		b_call_ret = device_add(q);
		break;
	case R_REGISTER:
		b_call_ret = device_register(q);
		break;
	case R_DRV_REGISTER:
		b_call_ret = driver_register(&qdrv);
		break;
	case R_ATTACH:
		b_call_ret = device_attach(q) == 1 ? 0 : -EIO;
		break;
	case R_DRV_ATTACH:
		b_call_ret = device_driver_attach(&qdrv, q);
		break;
	default:
		break;
	}
	return 0;
}

static int match_first_letter(struct device *dev,
			      const struct device_driver *drv)
{
	if (dev == p && LOAD(hold_match) && devres__wait_self() == LOAD(a_id)) {
		STORE(hold_match, 0);
		STORE(go, 1);
		if (col == 0) {
			/* The wait for B, under P's lock. */
			STORE(stop_ret, devm_thread_stop(m, b));
		} else {
			/* B's wait for P's lock, then P binds first. */
			(void)POLL(devres__wait_records(LOAD(b_id)) > 0);
		}
		STORE(p_ready, 1);
	}
	return dev_name(dev)[0] == drv->name[0];
}

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s / %s: line %d: %s\n", rows[row],   \
				cols[col], __LINE__, #cond);                   \
			return 1;                                              \
		}                                                              \
	} while (0)

/* Q as the row wants it before B's call: unbound, bindable by it. */
static int prepare_q(void)
{
	if (row == R_TRIGGER)
		return 0;
	if (row != R_REGISTER)
		q = heap_dev(&lbus, "qdev");
	else
		q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	if (row == R_REGISTER) {
		q->bus = &lbus;
		q->release = heap_release;
		q->init_name = "qdev";
		return 0;
	}
	if (row != R_DRV_REGISTER && driver_register(&qdrv))
		return -EIO;
	if (row == R_ATTACH || row == R_DRV_ATTACH) {
		STORE(q_fail, 1);
		if (device_add(q))
			return -EIO;
		STORE(q_fail, 0);
	}
	if (row == R_DRV_REGISTER && device_add(q))
		return -EIO;
	return 0;
}

static int one_cell(int r, int c)
{
	int warns, ret;

	alarm(CELL_ALARM_S);
	row = r;
	col = c;
	CHECK(bus_register(&lbus) == 0);
	m = heap_dev(NULL, "manager");
	CHECK(m != NULL);
	CHECK(driver_register(&pdrv) == 0);
	p = heap_dev(&lbus, "pdev");
	CHECK(p != NULL);
	CHECK(device_add(p) == 0);
	CHECK(!device_is_bound(p));
	CHECK(prepare_q() == 0);
	if (row == R_REGISTER)
		CHECK(driver_register(&qdrv) == 0);

	STORE(a_id, devres__wait_self());
	b = devm_thread_run(m, b_fn, NULL, "retry-b");
	CHECK(!IS_ERR(b));
	warns = devres_warn_count();
	start_capture();
	STORE(hold_match, 1);
	ret = device_attach(p);
	if (col == 1)
		STORE(stop_ret, devm_thread_stop(m, b));
	devres_set_log_sink(NULL, NULL);
	/* The WARN's line; a debug build's backtrace follows it. */
	CHECK(count_prefix("WARNING: ") == (col == 0));
	if (col == 0) {
		CHECK(strncmp(cap.line[0], WARN_HEAD, strlen(WARN_HEAD)) == 0);
		CHECK(strstr(cap.line[0], "waits for this one") != NULL);
		CHECK(strstr(cap.line[0], ": left parked") != NULL);
	}
	CHECK(ret == 1);
	CHECK(LOAD(stop_ret) == 0);
	CHECK(LOAD(b_call_ret) == 0);
	CHECK(device_is_bound(p));
	CHECK(row == R_TRIGGER || device_is_bound(q));
	CHECK(devres_warn_count() - warns == (col == 0));

	if (q)
		device_unregister(q);
	device_unregister(p);
	driver_unregister(&qdrv);
	driver_unregister(&pdrv);
	put_device(m);
	bus_unregister(&lbus);
	return 0;
}

static void retry_loop_cells(void **state)
{
	(void)state;
	run_cells_in_children_wide(one_cell, rows, NROWS, cols, 2, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(retry_loop_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
