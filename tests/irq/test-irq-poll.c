// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * The dispatcher's polling after close interrupts (src/irq/poll.c), seen
 * through its counters: a poll ends the moment its thread is preempted and
 * makes the next polls exponentially rarer; on a CPU of its own a poll
 * catches the next interrupt; DEVRES_IRQ_POLL_US sets the window, and 0
 * turns polling off. Nothing here depends on how long anything takes: where
 * a poll must end for another reason, its window is made far longer than
 * that reason can take.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"
#include "irq/internal.h"

/*
 * 2 s: a poll that does not end for another reason runs out, and counts
 * as a miss, long after the few microseconds it should have taken.
 */
#define LONG_WINDOW_NS 2000000000L

static int calls;

static irqreturn_t count_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&calls, 1);
	return IRQ_HANDLED;
}

static unsigned long counter(const unsigned long *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Sets the window; returns the one before. */
static long set_window(long ns)
{
	return __atomic_exchange_n(&irq__poll_window_ns, ns, __ATOMIC_RELAXED);
}

/* The counters, each read atomically (the dispatcher adds to them). */
static struct irq_poll_stats snapshot(void)
{
	struct irq_poll_stats s = {
		.polls = counter(&irq__poll_stats.polls),
		.hits = counter(&irq__poll_stats.hits),
		.misses = counter(&irq__poll_stats.misses),
		.preempted = counter(&irq__poll_stats.preempted),
		.skipped = counter(&irq__poll_stats.skipped),
		.sleeps = counter(&irq__poll_stats.sleeps),
	};

	return s;
}

/* Waits until *@c > @n; false after WAIT_MS. */
static bool wait_stat_above(const unsigned long *c, unsigned long n)
{
	long end = now_ms() + WAIT_MS;

	while (counter(c) <= n) {
		if (now_ms() > end)
			return false;
		poll(NULL, 0, 1);
	}
	return true;
}

/*
 * Raises @irq and waits until its handler has run and the dispatcher is
 * asleep again: whatever it did after the interrupt (poll or not) is over.
 */
static void raise_and_settle(int irq)
{
	int before = load_int(&calls);
	unsigned long sleeps = counter(&irq__poll_stats.sleeps);

	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&calls, before + 1));
	assert_true(wait_stat_above(&irq__poll_stats.sleeps, sleeps));
}

/* The first two CPUs this process may run on; false if it has one. */
static bool two_cpus(int *a, int *b)
{
	cpu_set_t set;
	int n = 0;

	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++) {
		if (CPU_ISSET(c, &set))
			*(n++ ? b : a) = c;
	}
	return n == 2;
}

static void move_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void restore_cpus(const cpu_set_t *set)
{
	assert_int_equal(sched_setaffinity(0, sizeof(*set), set), 0);
}

/*
 * The dispatcher and this thread on one CPU: this thread can only run,
 * and raise, while the dispatcher is off it. A poll that went on after
 * being preempted would catch that raise (a hit) or spin for the whole
 * window; each one must instead end as preempted, and the back-off must
 * let the next interrupts pass without polling, more of them each time.
 */
static void preempted_poll_stops(void **state)
{
	struct irq_poll_stats s0 = snapshot(), s1;
	long window;
	unsigned long polls;
	cpu_set_t old;
	int a, b, irq, token;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	two_cpus(&a, &b);
	move_to(a); /* the dispatcher, started below, inherits it */
	window = set_window(LONG_WINDOW_NS);
	irq = irq_line_create("poll");
	assert_true(irq > 0);
	assert_int_equal(request_irq(irq, count_handler, 0, "poll", &token), 0);
	/* Close interrupts until one is followed by a poll. */
	for (int i = 0; i < 10 && counter(&irq__poll_stats.polls) == s0.polls;
	     i++)
		raise_and_settle(irq);
	assert_true(counter(&irq__poll_stats.polls) > s0.polls);
	/* 40 more: polls 1 + 3 let pass + 1 + 15 + 1 + 63 ... */
	for (int i = 0; i < 40; i++)
		raise_and_settle(irq);
	s1 = snapshot();
	polls = s1.polls - s0.polls;
	print_message("polls %lu, preempted %lu, hits %lu, misses %lu, "
		      "let pass %lu\n",
		      polls, s1.preempted - s0.preempted, s1.hits - s0.hits,
		      s1.misses - s0.misses, s1.skipped - s0.skipped);
	assert_int_equal(s1.preempted - s0.preempted, polls);
	assert_int_equal(s1.hits, s0.hits);
	assert_int_equal(s1.misses, s0.misses);
	/* Back-off: 2 bits a preemption, so at most 1 + log4(41) polls. */
	assert_true(polls <= 4);
	assert_true(s1.skipped - s0.skipped >= 3);
	free_irq(irq, &token);
	assert_int_equal(irq_line_destroy(irq), 0);
	set_window(window);
	restore_cpus(&old);
}

/*
 * The dispatcher on a CPU of its own, interrupts raised from another: a
 * poll catches the next interrupt without sleeping. Another process may
 * preempt any one poll, and each preemption makes the next polls four
 * times rarer: on a loaded machine a dispatcher that has been preempted a
 * few times polls once in a thousand interrupts. So the interrupts come
 * in rounds of ROUND_IRQS, each on a new dispatcher (the last handler
 * freed stops one, the next request starts one with no back-off), until
 * one poll is a hit: up to ROUNDS rounds, the same 2000 interrupts as
 * ever, with some 2 polls a round where one dispatcher made 6 in all. A
 * build whose polls never catch anything makes none.
 */
#define ROUNDS 100
#define ROUND_IRQS 20

static void poll_catches_the_next(void **state)
{
	struct irq_poll_stats s0 = snapshot(), s1;
	long window;
	cpu_set_t old;
	int a, b, irq, token, rounds = 0;
	bool caught = false;

	(void)state;
	if (!two_cpus(&a, &b))
		skip();
	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	window = set_window(LONG_WINDOW_NS);
	while (rounds < ROUNDS && !caught) {
		unsigned long hits;

		rounds++;
		move_to(b); /* the dispatcher, started here, inherits it */
		irq = irq_line_create("poll");
		assert_true(irq > 0);
		assert_int_equal(
			request_irq(irq, count_handler, 0, "poll", &token), 0);
		move_to(a);
		/*
		 * Only the raises are events while this dispatcher may poll
		 * (it polls after its second event): a hit caught one.
		 */
		hits = counter(&irq__poll_stats.hits);
		for (int i = 0; i < ROUND_IRQS && !caught; i++) {
			int before = load_int(&calls);

			assert_int_equal(irq_line_raise(irq), 0);
			assert_true(wait_at_least(&calls, before + 1));
			caught = counter(&irq__poll_stats.hits) > hits;
		}
		/*
		 * The window is 2 s: free_irq() must stop the poll at once.
		 * Its wake-up may end a poll as a hit: not counted above.
		 */
		free_irq(irq, &token);
		assert_int_equal(irq_line_destroy(irq), 0);
	}
	s1 = snapshot();
	print_message("rounds %d: polls %lu, preempted %lu, hits %lu\n", rounds,
		      s1.polls - s0.polls, s1.preempted - s0.preempted,
		      s1.hits - s0.hits);
	assert_true(caught);
	assert_int_equal(s1.misses, s0.misses);
	set_window(window);
	restore_cpus(&old);
}

/* Requests a handler on a new line (starting a dispatcher); its number. */
static int line_with_handler(int *token)
{
	int irq = irq_line_create("poll");

	assert_true(irq > 0);
	assert_int_equal(request_irq(irq, count_handler, 0, "poll", token), 0);
	return irq;
}

static void line_free(int irq, int *token)
{
	free_irq(irq, token);
	assert_int_equal(irq_line_destroy(irq), 0);
}

/*
 * DEVRES_IRQ_POLL_US, read when a dispatcher starts: a number of
 * microseconds up to 10 000 sets the window, anything else is ignored,
 * and 0 turns polling off: every wait sleeps at once.
 */
static void env_sets_the_window(void **state)
{
	static const struct {
		const char *env;
		long window;
	} cases[] = {
		{ "300", 300000 },     { "abc", 200000 }, { "-1", 200000 },
		{ "10001", 200000 },   { "12x", 200000 }, { "", 200000 },
		{ "10000", 10000000 }, { "0", 0 },
	};
	struct irq_poll_stats s0;
	long window = set_window(200000);
	int irq, token;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_window(200000);
		setenv("DEVRES_IRQ_POLL_US", cases[i].env, 1);
		irq = line_with_handler(&token);
		assert_int_equal(__atomic_load_n(&irq__poll_window_ns,
						 __ATOMIC_RELAXED),
				 cases[i].window);
		line_free(irq, &token);
	}
	/* Still "0": every close interrupt is waited for asleep. */
	irq = line_with_handler(&token);
	s0 = snapshot();
	for (int i = 0; i < 50; i++)
		raise_and_settle(irq);
	assert_int_equal(counter(&irq__poll_stats.polls), s0.polls);
	assert_int_equal(counter(&irq__poll_stats.skipped), s0.skipped);
	assert_true(counter(&irq__poll_stats.sleeps) >= s0.sleeps + 50);
	line_free(irq, &token);
	unsetenv("DEVRES_IRQ_POLL_US");
	set_window(window);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(preempted_poll_stops, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(poll_catches_the_next,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(env_sets_the_window, irq_setup,
						irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
