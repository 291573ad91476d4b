/* SPDX-License-Identifier: MIT */
/*
 * The runner of a pairs test: every pair of public calls on an object,
 * made at once from two threads, in every state the object can be in,
 * many rounds; the states test's table (tests/states.h) taken two calls
 * at a time.
 *
 * A pairs test describes its object with a struct pairs_table: the states
 * and the calls with their names, @reach (brings a fresh object to a
 * state, asserting each step), @call (makes one call and returns what is
 * compared; it runs in either thread, so what it records is atomic), and
 * @undo (gives back whatever the round left and fills the round's @after
 * with what it saw of the object: what it had to free, what its last call
 * returned; the object must then be gone, released once).
 *
 * For each state and each pair of calls (a call with itself too), the
 * runner first makes the two calls one after the other, in both orders,
 * each from a fresh object: the two serial outcomes (both returns, the
 * WARNs the calls printed, what @undo saw and the WARNs it printed). Then
 * @rounds times: a fresh object in the state, both calls started at once
 * (two threads parked at a barrier the runner opens), and the outcome
 * must be one of the two serial ones: the pair behaved as if one call ran
 * first (or, where the test's @also says so, in a third outcome its
 * documentation allows). A WARN the serial calls do not print, a return they do not give,
 * an object left in a state neither order leaves, fails the pair; so does
 * a hang (the test's alarm) or a crash. The ledger is compared with its
 * baseline after each state.
 *
 * Use:
 *
 *	static const struct pairs_table my_pairs = {
 *		PAIRS_NAMES(state_name, call_name), .reach = reach,
 *		.call = call, .undo = undo, .rounds = ROUNDS,
 *	};
 *	...
 *	pairs_run(&my_pairs); (in a cmocka test: it fails with the list)
 */
#ifndef DEVRES_TESTS_PAIRS_H
#define DEVRES_TESTS_PAIRS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include "rounds.h"

#define PAIRS_AFTER 5

/* What one round of a pair did; @after is what @undo saw. */
struct pairs_outcome {
	int ret[2];
	int warns;
	int after[PAIRS_AFTER];
};

struct pairs_table {
	unsigned int nr_states, nr_calls;
	const char *const *state_name;
	const char *const *call_name;
	void (*reach)(unsigned int state);
	int (*call)(unsigned int call);
	/* Gives back what is left; fills @o->after. */
	void (*undo)(struct pairs_outcome *o);
	long rounds;
	/*
	 * Optional: how many spins one thread may start late, by turns
	 * (0: 1024, about a microsecond); about as long as a call takes.
	 */
	unsigned int spread;
	/*
	 * Optional: whether @got, neither serial outcome (@ser[0]: call @a
	 * first, @ser[1]: @b first), is one the object's documentation
	 * allows for the pair in state @s (a third outcome only threads
	 * give, each named where the test defines it).
	 */
	bool (*also)(unsigned int s, unsigned int a, unsigned int b,
		     const struct pairs_outcome *got,
		     const struct pairs_outcome *ser);
	/*
	 * Optional: made once before the first round and once after the
	 * last (what the object lives in: made, then given back).
	 */
	void (*setup)(void);
	void (*teardown)(void);
};

/* The names and their counts, from two arrays of names. */
#define PAIRS_NAMES(states, calls)                                             \
	.nr_states = sizeof(states) / sizeof((states)[0]),                     \
	.nr_calls = sizeof(calls) / sizeof((calls)[0]),                        \
	.state_name = (states), .call_name = (calls)

static int pairs_warned;

/* The WARNs' text is dropped: their count is what is compared. */
static inline void pairs_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)text;
	if (level == DEVRES_LOG_WARNING)
		__atomic_add_fetch(&pairs_warned, 1, __ATOMIC_RELAXED);
}

static struct {
	pthread_barrier_t go, done;
	int arrived; /* workers past @go this round */
	const struct pairs_table *t;
	unsigned int call[2];
	int ret[2];
	unsigned int delay[2]; /* spins before the call, to vary the overlap */
	bool stop;
} pairs_run_state;

/*
 * Both workers leave a barrier microseconds apart, longer than most calls
 * take: they meet again here, spinning, and start within a cache line's
 * transfer of each other (then the round's delay). A worker that waits
 * long (its partner not running: a loaded machine) yields while it spins.
 */
static inline void pairs_meet(int round)
{
	int target = 2 * round;

	__atomic_add_fetch(&pairs_run_state.arrived, 1, __ATOMIC_ACQ_REL);
	for (unsigned int spins = 0; __atomic_load_n(&pairs_run_state.arrived,
						     __ATOMIC_ACQUIRE) < target;
	     spins++)
		if (spins > 4096)
			sched_yield();
}

static inline void *pairs_worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (int round = 1;; round++) {
		pthread_barrier_wait(&pairs_run_state.go);
		if (__atomic_load_n(&pairs_run_state.stop, __ATOMIC_ACQUIRE))
			return NULL;
		pairs_meet(round);
		for (unsigned int i = 0; i < pairs_run_state.delay[me]; i++)
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
		pairs_run_state.ret[me] =
			pairs_run_state.t->call(pairs_run_state.call[me]);
		pthread_barrier_wait(&pairs_run_state.done);
	}
}

/* One round: the two calls serially (@b_first: b made first). */
static inline void pairs_serial(const struct pairs_table *t, unsigned int s,
				unsigned int a, unsigned int b, int b_first,
				struct pairs_outcome *o)
{
	int w0;

	memset(o, 0, sizeof(*o));
	t->reach(s);
	w0 = devres_warn_count();
	if (!b_first) {
		o->ret[0] = t->call(a);
		o->ret[1] = t->call(b);
	} else {
		o->ret[1] = t->call(b);
		o->ret[0] = t->call(a);
	}
	o->warns = devres_warn_count() - w0;
	t->undo(o);
}

/* One round: the two calls at once. */
static inline void pairs_together(const struct pairs_table *t, unsigned int s,
				  unsigned int a, unsigned int b, long round,
				  struct pairs_outcome *o)
{
	/* One thread starts a little later, by turns. */
	unsigned int spread = t->spread ? t->spread : 1024;
	unsigned int late =
		(unsigned int)((unsigned long)round * 2654435761UL % spread);
	int w0;

	memset(o, 0, sizeof(*o));
	t->reach(s);
	pairs_run_state.call[0] = a;
	pairs_run_state.call[1] = b;
	pairs_run_state.delay[0] = round & 1 ? late : 0;
	pairs_run_state.delay[1] = round & 1 ? 0 : late;
	w0 = devres_warn_count();
	pthread_barrier_wait(&pairs_run_state.go);
	pthread_barrier_wait(&pairs_run_state.done);
	o->warns = devres_warn_count() - w0;
	o->ret[0] = pairs_run_state.ret[0];
	o->ret[1] = pairs_run_state.ret[1];
	t->undo(o);
}

static inline void pairs_print(const char *what, const struct pairs_outcome *o)
{
	print_message("    %s: returns %d, %d; %d WARN(s); after", what,
		      o->ret[0], o->ret[1], o->warns);
	for (int i = 0; i < PAIRS_AFTER; i++)
		print_message(" %d", o->after[i]);
	print_message("\n");
}

/*
 * The third outcome src/base/disown.c documents, for @also: call @hand
 * gives back a resource whose node the pair's other call, the device's
 * release (@release) or a managed give-back (@devm), has taken off the
 * device but not yet run; the node's release then finds it no longer its
 * own and does nothing. So the pair ends as @hand first, but for the
 * taker: the release counts the node it took (its return one more), the
 * managed call says nothing of it (one WARN fewer). The resource is
 * still given back once, with @hand's WARN if it has one. A call number
 * no call has (~0U) stands for a taker the table does not have.
 */
static inline bool pairs_taken(unsigned int a, unsigned int b,
			       const struct pairs_outcome *got,
			       const struct pairs_outcome *ser,
			       unsigned int hand, unsigned int devm,
			       unsigned int release)
{
	struct pairs_outcome want;
	unsigned int taker;
	int first;

	if (a == hand && b != hand)
		first = 0;
	else if (b == hand && a != hand)
		first = 1;
	else
		return false;
	taker = first ? a : b;
	want = ser[first];
	if (taker == devm)
		want.warns--;
	else if (taker == release)
		want.ret[!first]++;
	else
		return false;
	return !memcmp(got, &want, sizeof(want));
}

/* The two workers, parked at the go barrier, for the rounds of @t. */
static inline void pairs_start(const struct pairs_table *t, pthread_t th[2])
{
	if (t->setup)
		t->setup();
	pairs_run_state.t = t;
	pairs_run_state.stop = false;
	pairs_run_state.arrived = 0;
	assert_int_equal(pthread_barrier_init(&pairs_run_state.go, NULL, 3), 0);
	assert_int_equal(pthread_barrier_init(&pairs_run_state.done, NULL, 3),
			 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, pairs_worker,
						(void *)(intptr_t)i),
				 0);
	devres_set_log_sink(pairs_sink, NULL);
}

static inline void pairs_stop(const struct pairs_table *t, pthread_t th[2])
{
	devres_set_log_sink(NULL, NULL);
	__atomic_store_n(&pairs_run_state.stop, true, __ATOMIC_RELEASE);
	pthread_barrier_wait(&pairs_run_state.go);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&pairs_run_state.go);
	pthread_barrier_destroy(&pairs_run_state.done);
	if (t->teardown)
		t->teardown();
}

/*
 * The pair of calls @a and @b in state @s, between pairs_start() and
 * pairs_stop(): its two serial outcomes, then @t->rounds rounds at once.
 * Returns 1 (the pair printed) when a round ended in neither serial
 * outcome nor one @t->also allows, else 0; *@ordered is set when the
 * serial outcomes differ, and *@third counts the rounds @also allowed.
 */
static inline int pairs_one(const struct pairs_table *t, unsigned int s,
			    unsigned int a, unsigned int b, bool *ordered,
			    long *third)
{
	struct pairs_outcome ser[2], got;

	pairs_serial(t, s, a, b, 0, &ser[0]);
	pairs_serial(t, s, a, b, 1, &ser[1]);
	*ordered = !!memcmp(&ser[0], &ser[1], sizeof(ser[0]));
	for (long r = 0; r < t->rounds; r++) {
		pairs_together(t, s, a, b, r, &got);
		if (!memcmp(&got, &ser[0], sizeof(got)) ||
		    !memcmp(&got, &ser[1], sizeof(got)))
			continue;
		if (t->also && t->also(s, a, b, &got, ser)) {
			(*third)++;
			continue;
		}
		print_message("%s: %s with %s, round %ld\n", t->state_name[s],
			      t->call_name[a], t->call_name[b], r);
		pairs_print("together", &got);
		pairs_print("first first", &ser[0]);
		pairs_print("second first", &ser[1]);
		return 1;
	}
	return 0;
}

/*
 * Runs the table; prints each pair whose outcome was neither serial one
 * (once, with what was seen and what either order gives) and returns how
 * many pairs failed.
 */
static inline int pairs_run(const struct pairs_table *t)
{
	struct devres_ledger base, now;
	pthread_t th[2];
	int failed = 0, ordered = 0, pairs = 0;
	long third = 0;

	pairs_start(t, th);
	for (unsigned int s = 0; s < t->nr_states; s++) {
		devres_ledger_snapshot(&base);
		for (unsigned int a = 0; a < t->nr_calls; a++) {
			for (unsigned int b = a; b < t->nr_calls; b++) {
				bool o;

				pairs++;
				failed += pairs_one(t, s, a, b, &o, &third);
				ordered += o;
			}
		}
		devres_ledger_snapshot(&now);
		if (devres_ledger_diff(&base, &now, stderr)) {
			print_message("%s: the ledger is not at its baseline\n",
				      t->state_name[s]);
			failed++;
		}
	}
	print_message("%d pairs (%d whose order tells), %ld rounds each: "
		      "%d failed; %ld rounds ended in a third outcome\n",
		      pairs, ordered, t->rounds, failed, third);
	pairs_stop(t, th);
	return failed;
}

/*
 * A cmocka test @name that runs the table made of the designated
 * initializers after @nr_rounds (PAIRS_NAMES(), .reach, .call, .undo,
 * and any other field), DEVRES_PAIRS_ROUNDS rounds if set, else
 * @nr_rounds.
 */
#define PAIRS_TEST(name, nr_rounds, ...)                                       \
	static void name(void **state)                                         \
	{                                                                      \
		struct pairs_table t = {                                       \
			__VA_ARGS__,                                           \
			.rounds = test_race_rounds("DEVRES_PAIRS_ROUNDS",      \
						   nr_rounds),                 \
		};                                                             \
                                                                               \
		(void)state;                                                   \
		assert_int_equal(pairs_run(&t), 0);                            \
	}

/*
 * Runs a group of pairs tests: WARNs without backtraces (their count is
 * what is compared), and a pair that hangs fails the group by its alarm
 * instead of the test's timeout.
 */
static inline int pairs_group(const char *name, const struct CMUnitTest *tests,
			      size_t n)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	alarm(100);
	return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}

#endif /* DEVRES_TESTS_PAIRS_H */
