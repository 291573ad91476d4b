// SPDX-License-Identifier: MIT
/*
 * Signals held back on this thread while it holds a lock that a call a
 * signal handler may make takes too: the interposed close(), dup2(),
 * dup3() and close_range() take the table of managed descriptors'
 * (posix/fd-table.c) and the table of the library's own descriptors'
 * (own-fd.c). A handler run while its own thread holds one of them would
 * wait for its thread, that is for ever; held back, it runs as the lock
 * is let go. Nested spans keep the mask of the outermost.
 */
#include <errno.h>
#include <signal.h>
#include "internal.h"

static TLS_FAST unsigned int depth;
static __thread sigset_t saved_mask;

void devres__signals_off(void)
{
	sigset_t all, old;
	int saved = errno;

	if (depth) {
		depth++;
		return;
	}
	/*
	 * Counted once masked: a handler before that has a span of its own.
	 * The signals of a fault (a bad access under the lock) stay open: a
	 * blocked one kills the process before its handler (a sanitizer's,
	 * a crash reporter's) can say where.
	 */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	saved_mask = old;
	depth = 1;
	errno = saved;
}

void devres__signals_on(void)
{
	int saved = errno;

	if (!depth || --depth)
		return;
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	errno = saved;
}
