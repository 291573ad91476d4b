// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box tsan */
/*
 * A reader that, inside its access, waits for the device's lock of the
 * device whose unbind is revoking the resource: the unbind holds the lock
 * and waits for the reader to leave its access, the reader waits for the
 * lock. The kernel deadlocks; here one of the two waits is refused
 * (docs/revocable.md, "Loops through a revocation"; misuse.md).
 *
 * A table of the reader's call inside its access (rows) by the unbinder's
 * path (columns), each cell in a child process under an alarm:
 * - the unbinder holds the device's lock (driver_unregister(),
 *   device_unregister(), device_release_driver()), in two orders: the
 *   reader's wait comes last (it is refused: one WARN naming its call,
 *   device_attach() returns -EDEADLK) or the revocation comes last (the
 *   reader is asleep on the lock, from the driver's remove: the
 *   revocation is handed to the reader, one WARN of revocable_revoke,
 *   and the reader's call goes on once the unbind is over);
 * - the unbinder holds no device lock (devres_release_all() of the
 *   device, devres_release_group() of the group holding the revocable,
 *   by hand): no loop, no WARN, the reader's call goes on.
 * Every cell checks that the resource was released once, that no
 * revocable is left, and the count of each kind of WARN.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
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
#include <devres/revocable.h>
#include "testlib.h"
#include "../hostile/cell-child.h"
#include "base/waits.h"

#define CELL_ALARM_S 10

enum row {
	R_RELEASE,
	R_ATTACH,
	R_DEL,
	R_UNREGISTER,
	R_DRV_UNREGISTER,
	R_DRV_REGISTER,
	NR_ROWS
};

static const char *const rows[] = {
	"device_release_driver", "device_attach",     "device_del",
	"device_unregister",	 "driver_unregister", "driver_register",
};

enum col {
	C_DRV_UNREG,
	C_DRV_UNREG_LATE,
	C_DEV_UNREG,
	C_DEV_UNREG_LATE,
	C_RELEASE,
	C_RELEASE_LATE,
	C_RELEASE_ALL,
	C_GROUP,
	NR_COLS
};

static const char *const cols[] = {
	"driver_unregister (reader last)",
	"driver_unregister (revoker last)",
	"device_unregister (reader last)",
	"device_unregister (revoker last)",
	"device_release_driver (reader last)",
	"device_release_driver (revoker last)",
	"devres_release_all",
	"devres_release_group",
};

static const struct bus_type lbus = { .name = "rvloop" };

static enum row row_now;
static enum col col_now;
static struct device *dev;
static struct revocable *h;
static void *gid;
static int res;
static int released;
static uint64_t unbinder_id, reader_id;
static int in_access, go, called, probes;
static int reader_ret = 1000;

static void rel(void *r)
{
	(void)r;
	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
}

/* The unbinder holds the device's lock while it revokes. */
static bool col_locks(enum col c)
{
	return c < C_RELEASE_ALL;
}

static bool col_late(enum col c)
{
	return c == C_DRV_UNREG_LATE || c == C_DEV_UNREG_LATE ||
	       c == C_RELEASE_LATE;
}

/* Polls @cond for up to 3 s; whether it came. */
#define POLL(cond)                                                             \
	({                                                                     \
		int n_ = 0;                                                    \
		while (!(cond) && n_++ < 3000)                                 \
			usleep(1000);                                          \
		(bool)(cond);                                                  \
	})

/*
 * The first probe's revocable is the one the reader accesses; a device
 * bound again by the reader's device_attach() makes another.
 */
static int lprobe(struct device *d)
{
	struct revocable *r;

	if (col_now == C_GROUP && !probes)
		gid = devres_open_group(d, NULL, GFP_KERNEL);
	r = devm_revocable_create(d, &res, rel);
	if (!r)
		return -ENOMEM;
	if (probes++)
		return 0;
	if (col_now == C_GROUP)
		devres_close_group(d, gid);
	h = revocable_get(r);
	return 0;
}

/*
 * The revocation comes last: the reader is sent to its call and is seen
 * waiting for the device's lock (on the record of waits) before the
 * remove returns and the binding's release revokes. A driver_register()
 * polls the lock, unrecorded: it is given a moment. A call that
 * does not wait for the lock (refused first for another reason) returns.
 */
static void lremove(struct device *d)
{
	(void)d;
	if (!col_late(col_now))
		return;
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	if (row_now == R_DRV_REGISTER)
		usleep(50000);
	else
		(void)POLL(devres__wait_records(reader_id) > 0 ||
			   __atomic_load_n(&called, __ATOMIC_ACQUIRE));
}

static struct device_driver ldrv = {
	.name = "rvloop",
	.bus = &lbus,
	.probe = lprobe,
	.remove = lremove,
};

static int other_probe(struct device *d)
{
	(void)d;
	return -ENODEV;
}

static struct device_driver odrv = {
	.name = "rvloop-other",
	.bus = &lbus,
	.probe = other_probe,
};

static int reader_call(enum row r)
{
	switch (r) {
	case R_RELEASE:
		device_release_driver(dev);
		return 0;
	case R_ATTACH:
		return device_attach(dev);
	case R_DEL:
		device_del(dev);
		return 0;
	case R_UNREGISTER:
		device_unregister(dev);
		return 0;
	case R_DRV_UNREGISTER:
		driver_unregister(&ldrv);
		return 0;
	case R_DRV_REGISTER:
		return driver_register(&odrv);
	case NR_ROWS:
		break;
	}
	return -1;
}

static void *reader(void *arg)
{
	(void)arg;
	__atomic_store_n(&reader_id, devres__wait_self(), __ATOMIC_RELEASE);
	if (revocable_try_access(h) != &res)
		return (void *)1;
	__atomic_store_n(&in_access, 1, __ATOMIC_RELEASE);
	if (col_late(col_now))
		(void)POLL(__atomic_load_n(&go, __ATOMIC_ACQUIRE));
	else
		(void)POLL(devres__wait_records(unbinder_id) > 0);
	reader_ret = reader_call(row_now);
	__atomic_store_n(&called, 1, __ATOMIC_RELEASE);
	revocable_access_end(h);
	return NULL;
}

static void unbind(enum col c)
{
	switch (c) {
	case C_DRV_UNREG:
	case C_DRV_UNREG_LATE:
		driver_unregister(&ldrv);
		break;
	case C_DEV_UNREG:
	case C_DEV_UNREG_LATE:
		device_unregister(dev);
		break;
	case C_RELEASE:
	case C_RELEASE_LATE:
		device_release_driver(dev);
		break;
	case C_RELEASE_ALL:
		(void)devres_release_all(dev);
		break;
	case C_GROUP:
		(void)devres_release_group(dev, gid);
		break;
	case NR_COLS:
		break;
	}
}

static int count_lines(const char *sub)
{
	int n = 0;

	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += strstr(cap.line[i], sub) != NULL;
	return n;
}

/* Fails the cell with @code unless @cond holds. */
#define CHECK(cond, code)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			for (int i_ = 0; i_ < cap.n && i_ < CAP_LINES; i_++)   \
				fprintf(stderr, "  %s\n", cap.line[i_]);       \
			return (code);                                         \
		}                                                              \
	} while (0)

/*
 * A second device_unregister() racing the first is not in the table: both
 * put the registration's reference, the caller's bug with or without a
 * revocation (the reader-last order refuses the second's wait).
 */
static bool not_in_table(enum row r, enum col c)
{
	return c == C_DEV_UNREG_LATE && r == R_UNREGISTER;
}

/* What a cell WARNs, by kind. */
struct expect {
	int loops;  /* the reader's wait for the lock refused */
	int handed; /* the revocation handed to the reader */
	int other;  /* a WARN of the reader's call itself */
};

static struct expect expected(enum row r, enum col c)
{
	struct expect e = { 0, 0, 0 };

	if (!col_locks(c))
		return e;
	/* A second unregistration: refused by the driver's state. */
	if (r == R_DRV_UNREGISTER &&
	    (c == C_DRV_UNREG || c == C_DRV_UNREG_LATE)) {
		e.other = 1;
		return e;
	}
	if (r == R_DRV_REGISTER) {
		/* The walk skips a device being deleted: no wait. */
		if (c == C_DEV_UNREG || c == C_DEV_UNREG_LATE)
			return e;
		/* A polled wait, unrecorded: the reader gives up. */
		e.loops = 1;
		return e;
	}
	if (!col_late(c)) {
		e.loops = 1;
		return e;
	}
	e.handed = 1;
	/* Then the device is found deleted already. */
	e.other = r == R_DEL && c == C_DEV_UNREG_LATE;
	return e;
}

/*
 * device_attach() once the unbinder is done: bound again (1), no driver
 * left (0), deleted (-ENODEV); bound still (1) while no lock is held.
 */
static int attach_ret(enum col c)
{
	if (c == C_DRV_UNREG_LATE)
		return 0;
	if (c == C_DEV_UNREG_LATE)
		return -ENODEV;
	return 1;
}

static int cell(int row, int col)
{
	struct devres_ledger l;
	struct expect e;
	pthread_t t;
	void *ret;
	int base, lock_loops, handed;

	alarm(CELL_ALARM_S);
	row_now = (enum row)row;
	col_now = (enum col)col;
	if (not_in_table(row_now, col_now))
		return 0;
	unbinder_id = devres__wait_self();
	CHECK(!bus_register(&lbus), 1);
	CHECK(!driver_register(&ldrv), 2);
	dev = heap_dev(&lbus, "rvloop.0");
	CHECK(!device_add(dev), 3);
	CHECK(device_is_bound(dev) && h, 4);
	get_device(dev); /* ours, past any deletion */
	start_capture();
	base = devres_warn_count();
	CHECK(!pthread_create(&t, NULL, reader, NULL), 5);
	CHECK(POLL(__atomic_load_n(&in_access, __ATOMIC_ACQUIRE)), 6);
	unbind(col_now);
	CHECK(!pthread_join(t, &ret) && !ret, 7);
	devres_set_log_sink(NULL, NULL);

	lock_loops = count_lines("the device's lock is held by a thread that "
				 "waits for this one");
	handed = count_lines("a reader of it waits for this thread");
	e = expected(row_now, col_now);
	CHECK(lock_loops == e.loops && handed == e.handed, 10);
	if (e.loops) {
		char want[64];

		/* Named by the reader's call, on the device. */
		snprintf(want, sizeof(want), "rvloop.0: %s: the device's lock",
			 rows[row_now]);
		CHECK(count_lines(want) == 1, 11);
		if (row_now == R_ATTACH)
			CHECK(reader_ret == -EDEADLK, 12);
	} else if (row_now == R_ATTACH) {
		CHECK(reader_ret == attach_ret(col_now), 13);
	}
	CHECK(devres_warn_count() - base == e.loops + e.handed + e.other, 14);
	CHECK(__atomic_load_n(&released, __ATOMIC_RELAXED) == 1, 15);
	CHECK(revocable_try_access(h) == NULL, 16);
	devres_ledger_snapshot(&l);
	/* A rebind's revocable is live. */
	CHECK(l.revocables == probes - 1, 17);
	revocable_put(h);
	return 0;
}

static void unbind_loop_cells(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, NR_ROWS, cols, NR_COLS, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unbind_loop_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
