/* SPDX-License-Identifier: MIT */
/*
 * How long a stress loop runs: make check runs a count that still takes
 * every case the loop has many times over; make soak, or a hunt for a
 * rare race, sets a longer run in the environment.
 */
#ifndef DEVRES_TESTS_ROUNDS_H
#define DEVRES_TESTS_ROUNDS_H

#include <stdlib.h>

/* @def, or the positive number in the environment variable @env. */
static inline long test_rounds(const char *env, long def)
{
	const char *s = getenv(env);
	long n = s ? strtol(s, NULL, 0) : 0;

	return n > 0 ? n : def;
}

#endif
