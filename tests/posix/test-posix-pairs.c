// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of calls on a managed descriptor, mapping, stream and
 * thread, made at once from two threads, many rounds
 * (DEVRES_PAIRS_ROUNDS), in each state of the object a test can hold
 * still: acquired, given back (the handle or number stale), and for a
 * thread, its function returned but not yet stopped. The calls: the
 * managed give-back (devm_close(), devm_munmap(), devm_fclose(),
 * devm_thread_stop()), the plain one the library interposes (close(2),
 * munmap(2), made once a round; not fclose(3), see below), the
 * device's release (devres_release_all()), and a look that changes
 * nothing (fcntl(F_GETFD), mincore(), devres_thread_set_stop_timeout()).
 * Each pair must end as one of its two serial orders does
 * (tests/pairs.h): the same returns and WARNs, the object given back
 * once (a descriptor closed once, a thread joined once), and the same
 * after (still open or mapped, what the release then finds); the ledger
 * is back at its baseline after each state.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"

#ifdef T_TSAN
#define ROUNDS 40
#else
#define ROUNDS 60
#endif

static void run_table(const char *const *states, unsigned int nr_states,
		      const char *const *calls, unsigned int nr_calls,
		      void (*reach)(unsigned int), int (*call)(unsigned int),
		      void (*undo)(struct pairs_outcome *),
		      bool (*also)(unsigned int, unsigned int, unsigned int,
				   const struct pairs_outcome *,
				   const struct pairs_outcome *),
		      long times)
{
	struct pairs_table t = {
		.nr_states = nr_states,
		.nr_calls = nr_calls,
		.state_name = states,
		.call_name = calls,
		.reach = reach,
		.call = call,
		.undo = undo,
		.also = also,
		.rounds =
			test_race_rounds("DEVRES_PAIRS_ROUNDS", ROUNDS) * times,
	};

	assert_int_equal(pairs_run(&t), 0);
}

#define RUN_TABLE(states, calls, reach, call, undo, also)                      \
	run_table(states, sizeof(states) / sizeof(states[0]), calls,           \
		  sizeof(calls) / sizeof(calls[0]), reach, call, undo, also,   \
		  1)

/* A plain call that frees what it is given is made once a round. */
static int hand_done;

static bool hand_first(void)
{
	return !__atomic_exchange_n(&hand_done, 1, __ATOMIC_ACQ_REL);
}

/* Descriptors. */

enum fd_state {
	FD_OPEN,
	FD_CLOSED,
	NR_FD_STATES
};
static const char *const fd_states[NR_FD_STATES] = { "open", "closed" };
enum fd_call {
	FD_DEVM_CLOSE,
	FD_CLOSE,
	FD_RELEASE,
	FD_LOOK,
	NR_FD_CALLS
};
static const char *const fd_calls[NR_FD_CALLS] = { "devm_close", "close",
						   "devres_release_all",
						   "fcntl(F_GETFD)" };

static int fd;

static void fd_reach(unsigned int s)
{
	hand_done = 0;
	fd = devm_eventfd(&tdev, 0, 0);
	assert_true(fd >= 0);
	if (s == FD_CLOSED)
		devm_close(&tdev, fd);
}

/*
 * The close by hand. Under ThreadSanitizer, the library's close() itself:
 * TSan's interceptor, first in the process, records a close as a write
 * of the descriptor as the call enters, before the library's interposer
 * behind it waits for a release in progress; the release's own close,
 * which the wait orders first, was then reported as a race with it. The
 * table's locks stay under TSan's eye either way.
 */
static int hand_close(int n)
{
#ifdef T_TSAN
	static int (*lib_close)(int);

	if (!lib_close)
		lib_close = (int (*)(int))dlvsym(RTLD_DEFAULT, "close",
						 "DEVRES_0.2");
	assert_non_null(lib_close);
	return lib_close(n);
#else
	return close(n);
#endif
}

static int fd_call(unsigned int c)
{
	switch (c) {
	case FD_DEVM_CLOSE:
		devm_close(&tdev, fd);
		return 0;
	case FD_CLOSE:
		if (!hand_first())
			return 2;
		return hand_close(fd) ? -errno : 0;
	case FD_RELEASE:
		return devres_release_all(&tdev);
	case FD_LOOK:
		return fcntl(fd, F_GETFD) >= 0;
	default:
		fail();
	}
	return 0;
}

static void fd_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = fcntl(fd, F_GETFD) >= 0;
	o->after[1] = devres_release_all(&tdev);
	o->after[2] = fcntl(fd, F_GETFD) >= 0;
	o->after[3] = devres_warn_count() - w0;
}

static bool fd_also(unsigned int s, unsigned int a, unsigned int b,
		    const struct pairs_outcome *got,
		    const struct pairs_outcome *ser)
{
	return s == FD_OPEN &&
	       pairs_taken(a, b, got, ser, FD_CLOSE, FD_DEVM_CLOSE, FD_RELEASE);
}

static void fd_pairs(void **state)
{
	(void)state;
	RUN_TABLE(fd_states, fd_calls, fd_reach, fd_call, fd_undo, fd_also);
}

/*
 * close(2) by hand against the device's release, alone, many rounds. The
 * release once took the node off the table before it checked the number,
 * and a hand close in between found nothing listed and closed it: an
 * outcome neither order gives. Now the hand close takes the node first
 * or waits for the release (test-posix-fd-window holds it there).
 */
static const char *const open_only[] = { "open" };
static const char *const close_release[] = { "close", "devres_release_all" };

static void reach_open(unsigned int s)
{
	(void)s;
	fd_reach(FD_OPEN);
}

static int make_close_release(unsigned int c)
{
	return fd_call(c ? FD_RELEASE : FD_CLOSE);
}

static bool close_release_also(unsigned int s, unsigned int a, unsigned int b,
			       const struct pairs_outcome *got,
			       const struct pairs_outcome *ser)
{
	(void)s;
	return pairs_taken(a, b, got, ser, 0, ~0U, 1);
}

static void fd_close_against_release(void **state)
{
	(void)state;
	run_table(open_only, 1, close_release, 2, reach_open,
		  make_close_release, fd_undo, close_release_also, 30);
}

/* Mappings. */

enum map_state {
	MAP_MAPPED,
	MAP_UNMAPPED,
	NR_MAP_STATES
};
static const char *const map_states[NR_MAP_STATES] = { "mapped", "unmapped" };
enum map_call {
	MAP_DEVM_MUNMAP,
	MAP_MUNMAP,
	MAP_RELEASE,
	MAP_LOOK,
	NR_MAP_CALLS
};
static const char *const map_calls[NR_MAP_CALLS] = { "devm_munmap", "munmap",
						     "devres_release_all",
						     "msync" };

static void *addr;
static size_t len;

/* mincore() fails on a range with a page unmapped; len is two pages. */
static bool mapped(void)
{
	unsigned char v[2];

	return mincore(addr, len, v) == 0;
}

static void map_reach(unsigned int s)
{
	hand_done = 0;
	len = 2 * (size_t)sysconf(_SC_PAGESIZE);
	addr = devm_mmap(&tdev, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_false(IS_ERR(addr));
	if (s == MAP_UNMAPPED)
		devm_munmap(&tdev, addr, len);
}

static int map_call(unsigned int c)
{
	switch (c) {
	case MAP_DEVM_MUNMAP:
		devm_munmap(&tdev, addr, len);
		return 0;
	case MAP_MUNMAP:
		/* Another munmap() of the range is no misuse: made once. */
		if (!hand_first())
			return 2;
		return munmap(addr, len) ? -errno : 0;
	case MAP_RELEASE:
		return devres_release_all(&tdev);
	case MAP_LOOK:
		return mapped();
	default:
		fail();
	}
	return 0;
}

static void map_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = mapped();
	o->after[1] = devres_release_all(&tdev);
	o->after[2] = mapped();
	o->after[3] = devres_warn_count() - w0;
}

static bool map_also(unsigned int s, unsigned int a, unsigned int b,
		     const struct pairs_outcome *got,
		     const struct pairs_outcome *ser)
{
	return s == MAP_MAPPED && pairs_taken(a, b, got, ser, MAP_MUNMAP,
					      MAP_DEVM_MUNMAP, MAP_RELEASE);
}

static void map_pairs(void **state)
{
	(void)state;
	RUN_TABLE(map_states, map_calls, map_reach, map_call, map_undo,
		  map_also);
}

/* Streams. */

enum stream_state {
	ST_OPEN,
	ST_CLOSED,
	NR_ST_STATES
};
static const char *const st_states[NR_ST_STATES] = { "open", "closed" };
/*
 * Not fclose(3) by hand: in one of its orders with either call it would
 * be made on a FILE they freed, the caller's use after free.
 */
enum stream_call {
	ST_DEVM_FCLOSE,
	ST_RELEASE,
	NR_ST_CALLS
};
static const char *const st_calls[NR_ST_CALLS] = { "devm_fclose", "devres_"
								  "release_"
								  "all" };

static FILE *stream;

static void st_reach(unsigned int s)
{
	stream = devm_fopen(&tdev, "/dev/null", "w");
	assert_non_null(stream);
	if (s == ST_CLOSED)
		assert_int_equal(devm_fclose(&tdev, stream), 0);
}

static int st_call(unsigned int c)
{
	switch (c) {
	case ST_DEVM_FCLOSE:
		return devm_fclose(&tdev, stream);
	case ST_RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

static void st_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = devres_release_all(&tdev);
	o->after[1] = devres_warn_count() - w0;
}

static void stream_pairs(void **state)
{
	(void)state;
	RUN_TABLE(st_states, st_calls, st_reach, st_call, st_undo, NULL);
}

/* Threads. */

enum th_state {
	TH_RUNNING,
	TH_RETURNED,
	TH_STOPPED,
	NR_TH_STATES
};
static const char *const th_states[NR_TH_STATES] = { "running", "returned",
						     "stopped" };
enum th_call {
	TH_STOP,
	TH_RELEASE,
	TH_TIMEOUT,
	NR_TH_CALLS
};
static const char *const th_calls[NR_TH_CALLS] = { "devm_thread_stop",
						   "devres_release_all",
						   "devres_thread_set_stop_"
						   "timeout" };

static struct devres_thread *thread;
static int returned;

static int sleeper(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(10000);
	return 5;
}

static int quick(void *arg)
{
	(void)arg;
	__atomic_store_n(&returned, 1, __ATOMIC_RELEASE);
	return 7;
}

static void th_reach(unsigned int s)
{
	returned = 0;
	thread = devm_thread_run(&tdev, s == TH_RETURNED ? quick : sleeper,
				 NULL, "pairs");
	assert_false(IS_ERR(thread));
	if (s == TH_RETURNED)
		while (!__atomic_load_n(&returned, __ATOMIC_ACQUIRE))
			usleep(100);
	if (s == TH_STOPPED)
		assert_int_equal(devm_thread_stop(&tdev, thread), 5);
}

static int th_call(unsigned int c)
{
	switch (c) {
	case TH_STOP:
		return devm_thread_stop(&tdev, thread);
	case TH_RELEASE:
		return devres_release_all(&tdev);
	case TH_TIMEOUT:
		devres_thread_set_stop_timeout(thread, 4000);
		return 0;
	default:
		fail();
	}
	return 0;
}

static void th_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = devres_release_all(&tdev);
	o->after[1] = devm_thread_stop(&tdev, thread);
	o->after[2] = devres_warn_count() - w0;
}

static void thread_pairs(void **state)
{
	(void)state;
	RUN_TABLE(th_states, th_calls, th_reach, th_call, th_undo, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fd_pairs, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(fd_close_against_release,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(map_pairs, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(stream_pairs, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(thread_pairs, dev_setup,
						dev_teardown),
	};

	return pairs_group("posix-pairs", tests,
			   sizeof(tests) / sizeof(tests[0]));
}
