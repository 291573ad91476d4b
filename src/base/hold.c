// SPDX-License-Identifier: MIT
/*
 * How long the device's lock is held, built with -DDR_HOLD_TRACE only:
 * each thread keeps the time stamp counter's ticks of every critical
 * section of devm_kmalloc() and devm_kfree(), up to HOLD_MAX of each, for
 * bench-hold (linked with the static library built so) to sort. A
 * preempted holder makes every other thread wait; how often that happens
 * grows with the share of its time a thread holds the lock.
 *
 * With -DDR_HOLD_CALLGRIND too, the same regions toggle callgrind's
 * collection: `valgrind --tool=callgrind --collect-atstart=no` then
 * counts the instructions and data accesses run with the lock held.
 */
#include <stdlib.h>
#include <string.h>
#include "hold.h"
#include "node.h"

#ifdef DR_HOLD_TRACE
#ifdef DR_HOLD_CALLGRIND
#include <valgrind/callgrind.h>
#define HOLD_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#else
#define HOLD_TOGGLE() ((void)0)
#endif

#define HOLD_MAX (1u << 20)

HIDDEN __thread struct devres__hold_trace devres__hold_trace = { .what = -1 };

void devres__hold_begin(const char *func)
{
	struct devres__hold_trace *t = &devres__hold_trace;

	t->what = !strcmp(func, "devm_kmalloc") ? 0
		  : !strcmp(func, "devm_kfree") ? 1
						: -1;
	if (t->what < 0)
		return;
	if (!t->ticks[t->what])
		t->ticks[t->what] = malloc(HOLD_MAX * sizeof(unsigned int));
	HOLD_TOGGLE();
	t->t0 = devres__hold_ticks();
}

void devres__hold_end(void)
{
	unsigned long long t1 = devres__hold_ticks();
	struct devres__hold_trace *t = &devres__hold_trace;
	int w = t->what;

	if (w < 0)
		return;
	HOLD_TOGGLE();
	t->what = -1;
	if (t->ticks[w] && t->n[w] < HOLD_MAX)
		t->ticks[w][t->n[w]++] = (unsigned int)(t1 - t->t0);
}
#endif
