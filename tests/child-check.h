/* SPDX-License-Identifier: MIT */
/* The check of a test's child process: a failed one ends the child. */
#ifndef DEVRES_TESTS_CHILD_CHECK_H
#define DEVRES_TESTS_CHILD_CHECK_H

#include <stdio.h>
#include <unistd.h>

/* In a child: a failed check ends it with exit status 1, naming the line. */
#define CHILD_CHECK(x)                                                         \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "child: %s:%d: %s\n", __FILE__,        \
				__LINE__, #x);                                 \
			_exit(1);                                              \
		}                                                              \
	} while (0)

#endif /* DEVRES_TESTS_CHILD_CHECK_H */
