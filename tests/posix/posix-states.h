/* SPDX-License-Identifier: MIT */
/*
 * What the posix states tables (test-posix-fd-states,
 * test-posix-mmap-states, test-posix-stream-states) share beyond
 * tests/states.h: the states every managed descriptor, mapping or stream
 * goes through, whichever calls reach them. Each table names them in its
 * own words, and numbers the states of its own kind (a descriptor closed
 * by close(2), a mapping moved by mremap(2)) from NR_POSIX_STATES.
 */
#ifndef DEVRES_TESTS_POSIX_STATES_H
#define DEVRES_TESTS_POSIX_STATES_H

#include "states.h"

/*
 * Never made; made managed; made plain; given back by the managed
 * release; given back twice by it; given back by the device's release
 * (unbound).
 */
enum posix_state {
	NEVER,
	MANAGED,
	PLAIN,
	RELEASED,
	TWICE,
	UNBOUND,
	NR_POSIX_STATES
};

#endif /* DEVRES_TESTS_POSIX_STATES_H */
