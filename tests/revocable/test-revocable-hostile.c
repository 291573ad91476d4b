// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Misuse and odd contexts of revocable handles that the states and pairs
 * tables do not reach, each cell in a child process of its own under an
 * alarm, so that a hang or a crash fails the cell and not the suite:
 * an access ended from another thread (idle, or inside an access of its
 * own), a device released twice, a thread that longjmp()s out of its
 * access and revokes from there, a revocation at the nesting limit,
 * release functions that access their own handle, release their own
 * device again or make a new revocable on it, the last reference of an
 * unregistered device put inside an access of its revocable, and
 * pointers that are not handles. Each cell checks the resource's
 * releases, the exact count of WARNs and that no revocable is left.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "../hostile/cell-child.h"

#define DEPTH 64 /* the nesting limit of docs/revocable.md */

static struct device *dev;
static struct revocable *h;
static int res, res2;
static int released, released2;
static int cb_warns;
static void *cb_got;

static void rel(void *r)
{
	(void)r;
	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
}

static void rel2(void *r)
{
	(void)r;
	__atomic_add_fetch(&released2, 1, __ATOMIC_RELAXED);
}

/* Fails the cell with @code unless @cond holds. */
#define CHECK(cond, code)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			return (code);                                         \
		}                                                              \
	} while (0)

static long live_revocables(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.revocables;
}

/* A device, a revocable on it with @release, and one reference of ours. */
static void make(void (*release)(void *))
{
	dev = heap_dev(NULL, "hostile");
	h = devm_revocable_create(dev, &res, release);
	assert_non_null(h);
	assert_ptr_equal(revocable_get(h), h);
}

static void *end_other(void *arg)
{
	(void)arg;
	revocable_access_end(h);
	return NULL;
}

static void *end_other_inside_own(void *arg)
{
	struct revocable *h2 = arg;

	if (revocable_try_access(h2) != &res2)
		return arg;
	revocable_access_end(h);
	revocable_access_end(h2); /* its own: no WARN */
	return NULL;
}

/* An access ended by a thread that did not begin it: one WARN, kept. */
static int cell_end_other_thread(bool inside_own)
{
	struct revocable *h2 = NULL;
	pthread_t t;
	void *ret;
	int w;

	make(rel);
	if (inside_own)
		h2 = devm_revocable_create(dev, &res2, rel2);
	CHECK(revocable_try_access(h) == &res, 1);
	w = devres_warn_count();
	CHECK(!pthread_create(&t, NULL,
			      inside_own ? end_other_inside_own : end_other,
			      h2),
	      2);
	CHECK(!pthread_join(t, &ret) && !ret, 3);
	CHECK(devres_warn_count() == w + 1, 4);
	/* Ours still holds: it ends here without a WARN. */
	revocable_access_end(h);
	CHECK(devres_warn_count() == w + 1, 5);
	devres_release_all(dev);
	CHECK(released == 1 && released2 == (inside_own ? 1 : 0), 6);
	revocable_put(h);
	put_device(dev);
	CHECK(devres_warn_count() == w + 1 && !live_revocables(), 7);
	return 0;
}

static int cell_revoke_twice(void)
{
	int w = devres_warn_count();

	make(rel);
	CHECK(devres_release_all(dev) == 1, 1);
	CHECK(devres_release_all(dev) == 0, 2);
	CHECK(released == 1 && !revocable_try_access(h), 3);
	revocable_put(h);
	put_device(dev);
	CHECK(devres_warn_count() == w && !live_revocables(), 4);
	return 0;
}

static jmp_buf jb;

/*
 * longjmp() out of an access: the access stays this thread's, a release
 * from there is queued behind it and finished at the thread's exit.
 */
static void *jumper(void *arg)
{
	(void)arg;
	if (!setjmp(jb)) {
		if (revocable_try_access(h) != &res)
			return &res;
		longjmp(jb, 1);
	}
	devres_release_all(dev);
	if (__atomic_load_n(&released, __ATOMIC_RELAXED))
		return &res;
	return NULL;
}

static int cell_longjmp_out(void)
{
	pthread_t t;
	void *ret;
	int w = devres_warn_count();

	make(rel);
	CHECK(!pthread_create(&t, NULL, jumper, NULL), 1);
	CHECK(!pthread_join(t, &ret) && !ret, 2);
	/* One WARN: the thread ended inside an access. */
	CHECK(devres_warn_count() == w + 1, 3);
	CHECK(released == 1 && !revocable_try_access(h), 4);
	revocable_put(h);
	put_device(dev);
	CHECK(devres_warn_count() == w + 1 && !live_revocables(), 5);
	return 0;
}

/* A revocation at the nesting limit: finished as the last access ends. */
static int cell_revoke_at_depth_limit(void)
{
	int w, i;

	make(rel);
	w = devres_warn_count();
	for (i = 0; i < DEPTH; i++)
		CHECK(revocable_try_access(h) == &res, 1);
	CHECK(!revocable_try_access(h), 2);
	CHECK(devres_warn_count() == w + 1, 3);
	devres_release_all(dev);
	CHECK(!revocable_try_access(h) && devres_warn_count() == w + 2, 4);
	for (i = 0; i < DEPTH; i++) {
		CHECK(!released, 5);
		revocable_access_end(h);
	}
	CHECK(released == 1, 6);
	/* The 65th got nothing: its end is a misuse. */
	revocable_access_end(h);
	CHECK(devres_warn_count() == w + 3, 7);
	revocable_put(h);
	put_device(dev);
	CHECK(!live_revocables(), 8);
	return 0;
}

static void rel_accesses_own(void *r)
{
	int w = devres_warn_count();

	rel(r);
	cb_got = revocable_try_access(h);
	if (cb_got)
		revocable_access_end(h);
	cb_warns = devres_warn_count() - w;
}

static void rel_releases_own(void *r)
{
	int w = devres_warn_count();

	rel(r);
	(void)devres_release_all(dev);
	cb_warns = devres_warn_count() - w;
}

static void rel_creates_on_own(void *r)
{
	rel(r);
	(void)devm_revocable_create(dev, &res2, rel2);
}

/* A release function that uses its own handle or device. */
static int cell_release_cb(void (*cb)(void *), int cb_warns_want)
{
	int w = devres_warn_count();

	make(cb);
	cb_got = &res;
	cb_warns = -1;
	devres_release_all(dev);
	CHECK(released == 1, 1);
	if (cb == rel_accesses_own)
		CHECK(!cb_got, 2);
	if (cb != rel_creates_on_own)
		CHECK(cb_warns == cb_warns_want, 3);
	/* Whatever the release made on the device is released with it. */
	(void)devres_release_all(dev);
	revocable_put(h);
	put_device(dev);
	CHECK(released2 <= 1, 4);
	CHECK(!live_revocables(), 5);
	CHECK(devres_warn_count() - w <= 1, 6);
	return 0;
}

/*
 * The last reference of an unregistered device put inside an access of
 * its revocable: the device's release revokes it, queued behind the
 * access, and the device is freed; the access ends and releases it.
 */
static int cell_last_put_inside_access(void)
{
	int w, before = heap_released;

	make(rel);
	w = devres_warn_count();
	CHECK(revocable_try_access(h) == &res, 1);
	put_device(dev);
	CHECK(heap_released == before + 1 && !released, 2);
	CHECK(!revocable_try_access(h), 3);
	revocable_access_end(h);
	CHECK(released == 1, 4);
	revocable_put(h);
	CHECK(devres_warn_count() == w && !live_revocables(), 5);
	return 0;
}

/* Pointers that are no handle: NULL back and one WARN each, no read. */
static int cell_not_a_handle(void)
{
	long word = 0;
	void *bad[] = { &word, (void *)-12L, (void *)16 };
	int w;

	make(rel);
	w = devres_warn_count();
	bad[0] = &word;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!revocable_try_access(bad[i]), 1);
		CHECK(devres_warn_count() == w + 1, 2);
		w++;
		revocable_access_end(bad[i]);
		CHECK(devres_warn_count() == w + 1, 3);
		w++;
	}
	CHECK(!revocable_try_access((struct revocable *)dev), 4);
	CHECK(devres_warn_count() == w + 1 && word == 0, 5);
	devres_release_all(dev);
	revocable_put(h);
	put_device(dev);
	CHECK(released == 1 && !live_revocables(), 6);
	return 0;
}

static void keep(struct device *d)
{
	(void)d;
}

/* A device whose last reference is put: its memory is kept, not freed. */
static int cell_create_on_released(void)
{
	static struct device gone;
	int w;

	gone.release = keep;
	device_initialize(&gone);
	put_device(&gone);
	w = devres_warn_count();
	CHECK(!devm_revocable_create(&gone, &res, rel), 1);
	CHECK(devres_warn_count() == w + 1 && !live_revocables(), 2);
	return 0;
}

static pthread_barrier_t bar;
static struct device *devx;
static struct revocable *hx;

/* In an access of the other's resource, releases its own device. */
static void *crosser(void *arg)
{
	bool x = arg != NULL;

	if (revocable_try_access(x ? h : hx) != (x ? (void *)&res : &res2))
		return &res;
	pthread_barrier_wait(&bar);
	devres_release_all(x ? devx : dev);
	pthread_barrier_wait(&bar);
	revocable_access_end(x ? h : hx);
	return NULL;
}

/*
 * Two threads, each inside an access of one device's resource, release
 * the other device: each revocation waits for the other thread's access,
 * and is queued behind the revoker's own; both finish.
 */
static int cell_cross_revocation(void)
{
	pthread_t t[2];
	void *ret[2];
	int w = devres_warn_count();

	make(rel);
	devx = heap_dev(NULL, "hostile-x");
	hx = devm_revocable_create(devx, &res2, rel2);
	CHECK(hx && revocable_get(hx) == hx, 1);
	CHECK(!pthread_barrier_init(&bar, NULL, 2), 2);
	for (int i = 0; i < 2; i++)
		CHECK(!pthread_create(&t[i], NULL, crosser,
				      i ? (void *)&res : NULL),
		      3);
	for (int i = 0; i < 2; i++)
		CHECK(!pthread_join(t[i], &ret[i]) && !ret[i], 4);
	CHECK(released == 1 && released2 == 1, 5);
	revocable_put(h);
	revocable_put(hx);
	put_device(dev);
	put_device(devx);
	CHECK(devres_warn_count() == w && !live_revocables(), 6);
	return 0;
}

/*
 * A registered device unregistered inside an access of its revocable:
 * the release is queued behind the access, and the device stays until
 * it is done.
 */
static int cell_unregister_inside_access(void)
{
	int w, before = heap_released;

	make(rel);
	CHECK(!device_add(dev), 1);
	w = devres_warn_count();
	CHECK(revocable_try_access(h) == &res, 2);
	device_unregister(dev);
	CHECK(!released && !revocable_try_access(h), 3);
	revocable_access_end(h);
	CHECK(released == 1 && heap_released == before + 1, 4);
	revocable_put(h);
	CHECK(devres_warn_count() == w && !live_revocables(), 5);
	return 0;
}

static void put_action(void *arg)
{
	revocable_put(arg);
}

/*
 * A consumer device whose managed action puts its reference, released
 * before or after the provider: the handle is freed by whichever is last.
 */
static int cell_consumer(bool consumer_first)
{
	struct device *c = heap_dev(NULL, "consumer");
	int w;

	make(rel);
	CHECK(!devm_add_action(c, put_action, h), 1);
	w = devres_warn_count();
	devres_release_all(consumer_first ? c : dev);
	CHECK(released == !consumer_first, 2);
	devres_release_all(consumer_first ? dev : c);
	CHECK(released == 1 && devres_warn_count() == w, 3);
	CHECK(!live_revocables(), 4);
	/* Freed: the stale handle is refused, with its WARN. */
	CHECK(!revocable_try_access(h) && devres_warn_count() == w + 1, 5);
	put_device(c);
	put_device(dev);
	return 0;
}

/* The child's calls on its parent's handle and device (docs/fork.md). */
static int fork_child(void)
{
	int w = devres_warn_count();

	if (revocable_try_access(h) || devres_warn_count() != w + 1)
		return 1;
	if (revocable_get(h) != h || devres_warn_count() != w + 2)
		return 2;
	revocable_put(h);
	if (devres_warn_count() != w + 3)
		return 3;
	if (devres_release_all(dev) != -ENODEV || released)
		return 4;
	return 0;
}

/*
 * A child of fork() calls on its parent's handle: each WARNs and is
 * refused, nothing of the parent's is released in the child, and the
 * parent's revocable is unchanged.
 */
static int cell_fork_child_access(void)
{
	int w, st = 0;
	pid_t pid;

	make(rel);
	w = devres_warn_count();
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, 1);
	if (!pid)
		_exit(fork_child());
	CHECK(waitpid(pid, &st, 0) == pid, 2);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), 3);
	CHECK(revocable_try_access(h) == &res, 4);
	revocable_access_end(h);
	devres_release_all(dev);
	revocable_put(h);
	put_device(dev);
	CHECK(released == 1 && devres_warn_count() == w, 5);
	CHECK(!live_revocables(), 6);
	return 0;
}

enum row {
	END_OTHER_THREAD,
	END_OTHER_THREAD_INSIDE_OWN,
	REVOKE_TWICE,
	LONGJMP_OUT,
	REVOKE_AT_DEPTH_LIMIT,
	RELEASE_ACCESSES_OWN,
	RELEASE_RELEASES_OWN,
	RELEASE_CREATES_ON_OWN,
	LAST_PUT_INSIDE_ACCESS,
	NOT_A_HANDLE,
	CROSS_REVOCATION,
	CREATE_ON_RELEASED,
	UNREGISTER_INSIDE_ACCESS,
	CONSUMER_FIRST,
	PROVIDER_FIRST,
	FORK_CHILD_ACCESS,
	NR_ROWS
};

static const char *const rows[NR_ROWS] = {
	"access ended by another thread",
	"access ended by another thread inside its own",
	"device released twice",
	"longjmp out of an access, then a release",
	"release at the nesting limit",
	"release function accesses its own handle",
	"release function releases its own device",
	"release function makes a revocable on its device",
	"last put of an unregistered device inside an access",
	"not a handle",
	"two threads release each other's device inside accesses",
	"made on a released device",
	"device unregistered inside an access",
	"consumer device released first",
	"provider device released first",
	"child of fork() calls on its parent's handle",
};
static const char *const cols[] = { "cell" };

static int cell(int row, int col)
{
	(void)col;
	alarm(10);
	start_capture();
	switch ((enum row)row) {
	case END_OTHER_THREAD:
		return cell_end_other_thread(false);
	case END_OTHER_THREAD_INSIDE_OWN:
		return cell_end_other_thread(true);
	case REVOKE_TWICE:
		return cell_revoke_twice();
	case LONGJMP_OUT:
		return cell_longjmp_out();
	case REVOKE_AT_DEPTH_LIMIT:
		return cell_revoke_at_depth_limit();
	case RELEASE_ACCESSES_OWN:
		return cell_release_cb(rel_accesses_own, 0);
	case RELEASE_RELEASES_OWN:
		return cell_release_cb(rel_releases_own, 0);
	case RELEASE_CREATES_ON_OWN:
		return cell_release_cb(rel_creates_on_own, 0);
	case LAST_PUT_INSIDE_ACCESS:
		return cell_last_put_inside_access();
	case NOT_A_HANDLE:
		return cell_not_a_handle();
	case CROSS_REVOCATION:
		return cell_cross_revocation();
	case CREATE_ON_RELEASED:
		return cell_create_on_released();
	case UNREGISTER_INSIDE_ACCESS:
		return cell_unregister_inside_access();
	case CONSUMER_FIRST:
		return cell_consumer(true);
	case PROVIDER_FIRST:
		return cell_consumer(false);
	case FORK_CHILD_ACCESS:
		return cell_fork_child_access();
	case NR_ROWS:
		break;
	}
	return 99;
}

static void hostile_cells(void **state)
{
	(void)state;
	run_cells_in_children(cell, rows, NR_ROWS, cols, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hostile_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
