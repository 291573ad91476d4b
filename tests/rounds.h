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

#endif
