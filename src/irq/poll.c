// SPDX-License-Identifier: MIT
/*
 * Adaptive polling of the dispatcher's epoll set, after an interrupt that
 * came soon after the one before.
 *
 * A thread asleep in epoll_wait() on a CPU that has gone idle is woken
 * through that CPU: on a VM the wake-up across CPUs costs about five
 * times one on the raiser's own CPU. A dispatcher that looks at its set
 * without sleeping for a short while after an interrupt catches the next
 * one without being woken, when interrupts come close together.
 *
 * Polling takes a CPU from whoever else wants it, so it stops as soon as
 * it costs: the moment this thread has been preempted (someone else was
 * waiting for the CPU: its involuntary context switches grew), and when a
 * poll caught nothing in its window. Either makes the next polls rarer,
 * exponentially (events let pass without polling); each poll that catches
 * an interrupt in time halves that again. A poll never yields the CPU:
 * a thread that yields is runnable, not woken, and when the interrupt
 * comes the scheduler owes it no preemption, so it waits behind the other
 * runnable threads' time slices, which on a loaded machine cost the tail
 * milliseconds. A thread that sleeps is woken with the priority of one
 * that slept; this one sleeps as soon as it is in anybody's way.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include "internal.h"

/*
 * How long to poll: an interrupt later than this after the one before is
 * waited for asleep. The figure of the kernel's guest halt-polling, whose
 * purpose is the same (a VM's cross-CPU wake-up).
 */
#define POLL_WINDOW_NS 200000L
/* DEVRES_IRQ_POLL_US above this is ignored: a poll is not a busy loop. */
#define POLL_WINDOW_US_MAX 10000L
/* Polls after which one may be let pass: at most 2^SHIFT_MAX - 1 pass. */
#define SHIFT_MAX 10

HIDDEN long irq__poll_window_ns = POLL_WINDOW_NS;
HIDDEN struct irq_poll_stats irq__poll_stats;

/*
 * DEVRES_IRQ_POLL_US, read whenever a dispatcher starts: a program that
 * would rather not spend the CPU sets 0; one whose interrupts come a
 * little further apart than 200 us may poll longer. Anything else than
 * a number from 0 to POLL_WINDOW_US_MAX leaves the window as it is.
 */
void irq__poll_setup(void)
{
	const char *s = devres__getenv("DEVRES_IRQ_POLL_US");
	char *end;
	long us;

	if (!s || !*s)
		return;
	errno = 0;
	us = strtol(s, &end, 10);
	if (errno || *end || us < 0 || us > POLL_WINDOW_US_MAX)
		return;
	__atomic_store_n(&irq__poll_window_ns, us * 1000, __ATOMIC_RELAXED);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Involuntary context switches of this thread: it was preempted. */
static long preempted_count(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nivcsw;
}

static void stat_inc(unsigned long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static void back_off(struct irq_poll *p, unsigned int by)
{
	p->shift = p->shift + by > SHIFT_MAX ? SHIFT_MAX : p->shift + by;
	p->skip = (1u << p->shift) - 1;
}

enum poll_end {
	POLL_HIT,
	POLL_MISS,
	POLL_PREEMPTED
};

/*
 * Looks at the set until something is there, the window is over or this
 * thread is preempted. Returns what epoll_wait() returned at the end
 * (events, 0, or -1 with errno) and in *@how why it ended.
 */
static int spin(struct irq_dispatcher *d, struct epoll_event *ev, int max,
		long window, enum poll_end *how)
{
	long long end = now_ns() + window;
	long ivcsw = preempted_count();
	int n;

	for (;;) {
		long now_ivcsw;

		n = epoll_wait(__atomic_load_n(&d->epfd, __ATOMIC_ACQUIRE), ev,
			       max, 0);
		now_ivcsw = preempted_count();
		if (ivcsw < 0 || now_ivcsw != ivcsw) {
			*how = POLL_PREEMPTED;
			return n;
		}
		if (n) { /* events, or an error the caller sees */
			*how = POLL_HIT;
			return n;
		}
		if (now_ns() >= end) {
			*how = POLL_MISS;
			return 0;
		}
		for (int i = 0; i < 16; i++)
			cpu_relax();
	}
}

int irq__poll_wait(struct irq_dispatcher *d, struct epoll_event *ev, int max)
{
	struct irq_poll *p = &d->poll;
	long window = __atomic_load_n(&irq__poll_window_ns, __ATOMIC_RELAXED);
	long long now;
	int n = 0;

	if (window > 0 && p->last_ns && p->last_gap < window) {
		/*
		 * Something may be there already (a handler that raised a
		 * line, a raiser that ran while this thread was preempted):
		 * that is no poll, and costs no more than the wait would.
		 */
		n = epoll_wait(__atomic_load_n(&d->epfd, __ATOMIC_ACQUIRE), ev,
			       max, 0);
		if (n) {
			; /* taken as a wait that returned at once */
		} else if (p->skip) {
			p->skip--;
			stat_inc(&irq__poll_stats.skipped);
		} else {
			enum poll_end how;

			stat_inc(&irq__poll_stats.polls);
			n = spin(d, ev, max, window, &how);
			switch (how) {
			case POLL_HIT:
				stat_inc(&irq__poll_stats.hits);
				p->shift /= 2;
				p->skip = (1u << p->shift) - 1;
				break;
			case POLL_MISS:
				stat_inc(&irq__poll_stats.misses);
				back_off(p, 1);
				break;
			case POLL_PREEMPTED:
				stat_inc(&irq__poll_stats.preempted);
				back_off(p, 2);
				break;
			}
		}
	}
	if (!n) {
		stat_inc(&irq__poll_stats.sleeps);
		n = epoll_wait(__atomic_load_n(&d->epfd, __ATOMIC_ACQUIRE), ev,
			       max, IRQ_IDLE_MS);
	}
	if (n > 0) {
		now = now_ns();
		p->last_gap = now - p->last_ns;
		p->last_ns = now;
	}
	return n;
}
