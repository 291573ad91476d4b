/* SPDX-License-Identifier: MIT */
/*
 * The locks that the libc calls the library defines (munmap(), close(),
 * pthread_join() ...) take on their way, made visible to ThreadSanitizer
 * from wherever the call comes.
 *
 * Its runtime calls libc itself while it writes a report: its symbolizer
 * maps, unmaps and closes the files it reads. It reaches the library's
 * definitions there with its own interceptors switched off, so the
 * pthread_mutex_lock() of a table's lock tells it nothing, and the table
 * read under that lock looks to it like a race with the table's last
 * writer. A race found inside a report waits for that report's lock: the
 * program hung with its own race half reported. An acquire after each
 * lock and a release before each unlock, at the lock's address (the sync
 * object its interceptors keep for the mutex), make the edge seen there
 * too; in a program where the interceptors ran, they add nothing it did
 * not know. Outside a ThreadSanitizer build they are nothing.
 */
#ifndef DEVRES_BASE_SEEN_LOCK_H
#define DEVRES_BASE_SEEN_LOCK_H

#if defined(__SANITIZE_THREAD__)
#define DEVRES_SEEN_LOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEVRES_SEEN_LOCK_TSAN 1
#endif
#endif

#ifdef DEVRES_SEEN_LOCK_TSAN
#include <sanitizer/tsan_interface.h>
/* Right after @lock is taken. */
#define devres__lock_seen(lock) __tsan_acquire((void *)(lock))
/* Right before @lock is let go. */
#define devres__unlock_seen(lock) __tsan_release((void *)(lock))
#else
#define devres__lock_seen(lock) ((void)(lock))
#define devres__unlock_seen(lock) ((void)(lock))
#endif

#endif /* DEVRES_BASE_SEEN_LOCK_H */
