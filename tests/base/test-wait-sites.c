// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box tsan */
/*
 * Every blocking wait of the library, file by file: each condition
 * wait, join, futex wait, poll, and sleep or yield loop in src/ and in
 * the compat headers (include/kcompat/), and whether it is on the record
 * of waits (src/base/waits.h) or why it need not be. check-wait-sites.sh
 * counts those calls in each file and fails when a file's count is not
 * the one listed here: a new wait is listed, and classed, with the
 * change that adds it. Locks are not counted here; the one of them that
 * is held across callbacks of the application, a device's mutex (a
 * probe, a remove, the binding's release), is RECORDED too (dd.c,
 * dev_lock(); misuse.md S25).
 *
 * The classes:
 * - RECORDED: on the record before it sleeps; one that would close a
 *   loop is refused (docs/misuse.md, S8, S9, S11, KS21 and the rows
 *   after them).
 * - TIME: for time or an event from outside (an interrupt, a descriptor,
 *   a stop request), never for another thread's progress alone.
 * - LEAF: for a thread in a short section of the library's own code
 *   that calls nothing of the application's and waits for nothing: it
 *   ends, whatever the waiter holds.
 * - ANY: for an event any thread may give (a completion's complete()):
 *   no thread to name; the kernel's waits are the same.
 * - OPEN: for a thread that may be in a callback of the application (a
 *   log sink): a loop through it is possible and is not on the record,
 *   for the reason given.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "base/waits.h"

enum cls {
	RECORDED,
	TIME,
	LEAF,
	ANY,
	OPEN
};

struct site {
	const char *file;
	int calls; /* the wait calls check-wait-sites.sh counts in it */
	enum cls cls[4];
	const char *what;
};

/* clang-format off */
#define SITE(f, n, ...) { f, n, __VA_ARGS__ }
static const struct site sites[] = {
	SITE("src/irq/manage.c", 2, { RECORDED, RECORDED },
	     "begin_change(): free_irq() (a managed release refused frees "
	     "without it), request_irq(); wait_idle(): synchronize_irq(), "
	     "disable_irq()"),
	SITE("src/irq/line.c", 2, { TIME, RECORDED },
	     "poll_nocancel(): a poll of timeout 0; irq_line_raise_wait()"),
	SITE("src/irq/dispatch.c", 4, { TIME, LEAF, TIME, RECORDED },
	     "recover(): 10 ms between tries of a new epoll; "
	     "irq__put_dispatcher(): the dispatcher, once no handler is "
	     "left, runs none and ends; a handler's thread waits for its "
	     "interrupt; irq__thread_stop(): free_irq()'s join of the "
	     "handler's thread"),
	SITE("src/irq/poll.c", 3, { TIME, TIME, TIME },
	     "the dispatcher's epoll_wait() for interrupts"),
	SITE("src/posix/thread.c", 4, { RECORDED, RECORDED, TIME, TIME },
	     "devm_thread_stop()'s wait for the thread's end (timed and "
	     "not); devres_thread_sleep(): for time or a stop request"),
	SITE("src/posix/fd-table.c", 1, { LEAF },
	     "lock_settled(): a release of descriptors in progress (close(2) "
	     "calls, no callback)"),
	SITE("src/posix/interpose-thread.c", 3, { LEAF, TIME, TIME },
	     "the reap of an interposed thread that is ending; the "
	     "application's own pthread_join(), passed on"),
	SITE("src/revocable/srcu-fallback.c", 1, { RECORDED },
	     "devres__srcu_sync(): a revocation's wait for the accesses, "
	     "recorded by revocable.c (revocable_revoke)"),
	SITE("src/base/lock.c", 3, { LEAF, LEAF, LEAF },
	     "a device's lock: held by the library's own code, never across "
	     "a callback (release callbacks run unlocked)"),
	SITE("src/base/bus.c", 1, { LEAF },
	     "owners_walk(): the driver model's lock tried, a yield between "
	     "tries, given up after 64 (held for a few pointer operations)"),
	SITE("src/base/core.c", 1, { LEAF },
	     "names_take(): a WARN copying the name of a device another "
	     "thread releases, a yield between tries, given up after 10000 "
	     "(held for a copy that calls nothing)"),
	SITE("src/base/devres.c", 1, { LEAF },
	     "slab_return(): the device's lock"),
	SITE("src/base/maps.c", 1, { LEAF },
	     "a mapping being unmapped by its release on another thread"),
	SITE("src/base/protect-flight.c", 1, { OPEN },
	     "devres__protect_settle(): the program's mprotect(), "
	     "pkey_mprotect() and mremap() in flight, a look and one system "
	     "call each; the first two hold their WARNs until let go, a "
	     "refused mremap() calls the log sink inside (a held line's "
	     "buffer could be mapped where it grows or moves to)"),
	SITE("src/base/own-fd.c", 3, { LEAF, LEAF, LEAF },
	     "the library's opens and closes of its own descriptors in "
	     "progress"),
	SITE("src/base/log.c", 1, { OPEN },
	     "devres_set_log_sink(): the old sink's calls in progress, 2 s "
	     "at most (a call left by longjmp() never returns: WARNed, and "
	     "not waited for after that). Left "
	     "off the record: a sink may run in a signal handler, on a "
	     "thread interrupted inside the record's own lock (a walk, a "
	     "WARN of waits.c), where joining the sink's set would wait for "
	     "that lock for ever; a sink that waits for a thread replacing "
	     "it is the application's loop, as a lock taken in a sink"),
	SITE("src/base/driver.c", 1, { RECORDED },
	     "driver_unregister(): the probes in progress with the driver "
	     "(their threads members of its set while they pin it, "
	     "drv-pin.c)"),
	SITE("src/base/active.c", 1, { RECORDED },
	     "devres__bound_drain(): an unbind's wait for the show() and "
	     "store() calls holding the binding (device_release_driver)"),
	SITE("src/pci/irq.c", 1, { RECORDED },
	     "vec_sleep(): another call's allocation or free of a device's "
	     "vectors, for vec_wait() (pci_alloc_irq_vectors(), "
	     "pci_free_irq_vectors()) and vec_quiesce() (the binding's "
	     "release, which goes on unwaiting when refused); the thread in "
	     "the backend a member of the device's set meanwhile"),
	SITE("src/pci/readonly.c", 1, { LEAF },
	     "pci_sysfs_set_readonly(): config writes in progress"),
	SITE("include/kcompat/linux/kcompat_reg.h", 3, { RECORDED, RECORDED,
							 RECORDED },
	     "kcompat_reg_sleep(): a method call's turn, a registration's "
	     "wait for a take-back and for its orphan's release; "
	     "kcompat_reg_wait_calls(): a take-back's wait for the calls; "
	     "kcompat_reg_find_added(): a devm_ registration putting its "
	     "node on (a log sink may run there; the adding thread a member "
	     "of the registration's set meanwhile)"),
	SITE("include/kcompat/linux/mutex.h", 1, { RECORDED },
	     "mutex_destroy(): a devm_mutex_init() putting its node on (the "
	     "adding thread a member of the mutex's set meanwhile)"),
	SITE("include/kcompat/linux/workqueue.h", 6, { TIME, LEAF, RECORDED,
						       RECORDED },
	     "a worker's wait for its delay; the threads between letting go "
	     "of their item and their end; flush_work(), cancel_work_sync() "
	     "(and their delayed forms); flush_workqueue(), "
	     "drain_workqueue(), destroy_workqueue() (kcompat_wq_sleep(): "
	     "two calls)"),
	SITE("include/kcompat/linux/completion.h", 4, { ANY },
	     "wait_for_completion() and its timed forms"),
	SITE("include/kcompat/linux/delay.h", 1, { TIME },
	     "msleep(), usleep_range() and the like"),
	SITE("include/kcompat/linux/iopoll.h", 1, { TIME },
	     "readx_poll_timeout(): a register polled until its timeout"),
};
/* clang-format on */

#define NSITES (sizeof(sites) / sizeof(sites[0]))

/*
 * Each site names a file once, counts at least one call, and says what
 * waits there; the open ones are the ones known (a new one is a choice,
 * made here, not an accident).
 */
static void listed(void **state)
{
	int open = 0;

	(void)state;
	for (size_t i = 0; i < NSITES; i++) {
		assert_true(sites[i].calls > 0);
		assert_true(strlen(sites[i].what) > 10);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(sites[i].file, sites[j].file);
		for (int k = 0; k < 4; k++)
			open += sites[i].cls[k] == OPEN && sites[i].what;
	}
	/* devres_set_log_sink()'s, and read-only mode's for an mremap(). */
	assert_int_equal(open, 2);
}

/*
 * A wait for oneself is refused with its call's name; a member of a set
 * waiting for the others of it (an unmask callback synchronizing its
 * line) is not, while a wait for the whole set is.
 */
static void recorded(void **state)
{
	struct devres__wait_member m;
	struct devres__wait w;

	(void)state;
	assert_int_equal(devres__wait_for(&w, "request_irq",
					  devres__wait_self()),
			 -EDEADLK);
	assert_string_equal(w.loop, "request_irq -> this thread");
	devres__wait_join(&m, 0x1000);
	devres__wait_init(&w, "synchronize_irq");
	devres__wait_target_set(&w, 0x1000);
	assert_int_equal(devres__wait_begin(&w), -EDEADLK);
	devres__wait_init(&w, "synchronize_irq");
	devres__wait_target_others(&w, 0x1000);
	assert_int_equal(devres__wait_begin(&w), 0);
	assert_int_equal(devres__wait_records(devres__wait_self()), 1);
	devres__wait_end(&w);
	devres__wait_leave(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(listed),
		cmocka_unit_test(recorded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
