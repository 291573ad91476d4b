/* SPDX-License-Identifier: MIT */
/*
 * The threads a test's process starts, watched from pthread_create() to
 * their join or detach (thread-watch.c, which defines those names in the
 * test's program, ahead of the library and libc): a cell that ends with a
 * thread neither joined nor detached fails by its own check: the leak
 * ThreadSanitizer reports at exit, found in the dev and ASan builds.
 *
 * Not in the TSan build, which reports it itself, nor in one with the
 * static library, whose own pthread_join() and pthread_detach()
 * (src/posix/interpose-thread.c) are then in the same program: there
 * thread_watch_leaks() finds nothing.
 */
#ifndef DEVRES_TESTS_THREAD_WATCH_H
#define DEVRES_TESTS_THREAD_WATCH_H

#ifdef DEVRES_THREAD_WATCH
/**
 * thread_watch_leaks() - the threads left neither joined nor detached
 * @what: the cell, named in the lines that describe each one
 *
 * Counts, and describes on stderr, the threads started since the process
 * began (in a child of fork(), since the fork) that are neither joined nor
 * detached and either have ended (their function returned, or they called
 * pthread_exit() or were cancelled) or run on though the library counts no
 * thread of its own that could be one of them: no interrupt handler (the
 * dispatcher and the handlers' threads are the library's, joined when the
 * handlers are freed), and fewer managed threads than run joinable.
 *
 * Context: the thread that started the cell, once its calls returned.
 * Return: the number of such threads; 0 when the cell left none.
 */
int thread_watch_leaks(const char *what);

/**
 * thread_watch_self_test() - whether a leaked thread is caught
 *
 * In a child of fork(): starts a thread that returns at once and is never
 * joined, waits for its end, and checks thread_watch_leaks() counts it;
 * then one that is detached, which must not be counted.
 *
 * Context: the test's main thread.
 * Return: 0 when both hold; 1 otherwise (a check that sees nothing).
 */
int thread_watch_self_test(void);
#else
static inline int thread_watch_leaks(const char *what)
{
	(void)what;
	return 0;
}

static inline int thread_watch_self_test(void)
{
	return 0;
}
#endif

#endif /* DEVRES_TESTS_THREAD_WATCH_H */
