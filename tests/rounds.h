/* SPDX-License-Identifier: MIT */
/*
 * How long a stress loop runs: make check runs a count that still takes
 * every case the loop has many times over; make soak, or a hunt for a
 * rare race, sets a longer run in the environment.
 */
#ifndef DEVRES_TESTS_ROUNDS_H
#define DEVRES_TESTS_ROUNDS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* @def, or the positive number in the environment variable @env. */
static inline long test_rounds(const char *env, long def)
{
	const char *s = getenv(env);
	long n = s ? strtol(s, NULL, 0) : 0;

	return n > 0 ? n : def;
}

/*
 * Whether valgrind runs this process (its preload is in the environment):
 * it runs one thread at a time, so rounds of a race there only repeat.
 */
static inline bool test_under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

/*
 * The rounds of a race between threads: the positive number in @env, else
 * @def, a quarter of it under valgrind. Valgrind runs one thread at a time
 * and switches between them at its own points: its rounds find its kind
 * of error (a leak, a read of freed memory) in each order a quarter as
 * many rounds still take, and make check's time is not spent repeating.
 */
static inline long test_race_rounds(const char *env, long def)
{
	if (!getenv(env) && test_under_valgrind())
		def = def / 4 > 0 ? def / 4 : 1;
	return test_rounds(env, def);
}

#endif
