/* SPDX-License-Identifier: MIT */
/*
 * Managed POSIX resources: file descriptors, streams, mappings and worker
 * threads recorded against a device and given back, newest first, with the
 * rest of its resources.
 *
 * Every descriptor the library creates is close-on-exec. Every acquisition
 * is a fault-injection point twice (the devres node, then the OS call) and
 * is counted by the ledger (fds; maps and map bytes; threads). Misuse
 * (NULL arguments, releasing what the device does not manage) WARNs once.
 */
#ifndef DEVRES_POSIX_H
#define DEVRES_POSIX_H

#include <stdio.h>
#include <sys/types.h>
#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;
struct devres_thread;

/**
 * devm_open() - open a file for a device
 * @dev: the owning device
 * @path: the path, as for open(2)
 * @flags: open(2) flags; O_CLOEXEC is always added
 *
 * open(2) whose descriptor is closed when @dev's resources are released.
 * When @flags has O_CREAT or O_TMPFILE, a mode_t argument follows, as for
 * open(2). Flags open(2) does not know, or an access mode of 3, fail with
 * -EINVAL instead of being ignored. At release the descriptor is checked
 * before it is closed: one that was closed behind the library's back, or
 * closed and reused for another open file (even of the same file), WARNs
 * and is left alone. The node holds a private duplicate of the
 * descriptor until then (docs/posix.md), one more descriptor.
 *
 * Context: any thread. Two fault-injection points (the node: -ENOMEM; the
 * open: -EMFILE).
 * Return: the descriptor; -EINVAL for a bad device or a NULL @path (both
 * WARNed) or bad @flags; -ENOMEM; any error of open(2) as -errno; -ENODEV
 * (WARNed, the file closed) when the device was released meanwhile by a
 * last put_device() on another thread.
 */
DEVRES_API int devm_open(struct device *dev, const char *path, int flags, ...);

/**
 * devm_openat() - open a file relative to a directory, for a device
 * @dev: the owning device
 * @dirfd: a directory descriptor, or AT_FDCWD
 * @path: the path, as for openat(2)
 * @flags: openat(2) flags; O_CLOEXEC is always added
 *
 * As devm_open(), through openat(2). A mode_t follows @flags when they
 * have O_CREAT or O_TMPFILE.
 *
 * Context: any thread. Two fault-injection points.
 * Return: as devm_open().
 */
DEVRES_API int devm_openat(struct device *dev, int dirfd, const char *path,
			   int flags, ...);

/**
 * devm_add_fd() - hand a descriptor the caller already has to a device
 * @dev: the owning device
 * @fd: an open descriptor (its flags are left as they are)
 *
 * From now on @fd belongs to @dev and is closed with its resources. The
 * descriptor is consumed in every case: when recording it fails, it is
 * closed at once (as devm_add_action_or_reset() runs its action), so a
 * setup function needs no cleanup of its own. A descriptor this device
 * already manages is a misuse: WARN, -EBUSY, and it stays managed once.
 * A number the device managed until it was closed behind the library's
 * back refers to another open file now, which is not managed: it is
 * adopted.
 *
 * Context: any thread. One fault-injection point (the node).
 * Return: 0; -EBADF when @fd is not an open descriptor; -EINVAL for a bad
 * device (WARNed); -EBUSY (WARNed); -ENOMEM; -ENODEV (WARNed, @fd closed)
 * when the device was released meanwhile by a last put_device() on
 * another thread.
 */
DEVRES_API int devm_add_fd(struct device *dev, int fd);

/**
 * devm_close() - close a managed descriptor now
 * @dev: the owning device
 * @fd: a descriptor from devm_open(), devm_add_fd() ... on @dev
 *
 * Closes @fd and forgets it. close(2) is called once and never retried on
 * EINTR (on Linux the descriptor is gone whatever close returns); an error
 * it returns is reported through the log at DEVRES_LOG_WARNING, as is
 * every close error at release. A descriptor @dev does not manage is a
 * misuse: WARN, nothing closed. Where @dev has two nodes of the number
 * (one closed behind the library's back, the number acquired again), the
 * one whose number still is the open file it acquired is closed.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devm_close(struct device *dev, int fd);

/**
 * devm_memfd_create() - create an anonymous memory file for a device
 * @dev: the owning device
 * @name: the name shown in /proc/self/fd and /proc/self/maps
 * @flags: memfd_create(2) flags; MFD_CLOEXEC is always added
 *
 * memfd_create(2) with MFD_CLOEXEC, the descriptor recorded against @dev and
 * closed with its resources or with devm_close().
 *
 * Context: any thread. Two fault-injection points (-ENOMEM, -EMFILE).
 * Return: the descriptor; -EINVAL for a bad device or a NULL @name (both
 * WARNed) or flags memfd_create(2) refuses; -ENOMEM; other errors of
 * memfd_create(2) as -errno.
 */
DEVRES_API int devm_memfd_create(struct device *dev, const char *name,
				 unsigned int flags);

/**
 * devm_eventfd() - create an event counter descriptor for a device
 * @dev: the owning device
 * @initval: the counter's initial value
 * @flags: EFD_NONBLOCK, EFD_SEMAPHORE; EFD_CLOEXEC is always added
 *
 * eventfd(2) with EFD_CLOEXEC, the descriptor recorded against @dev and closed with its resources or with devm_close().
 *
 * Context: any thread. Two fault-injection points (-ENOMEM, -EMFILE).
 * Return: the descriptor; -EINVAL for a bad device (WARNed) or unknown
 * flags; -ENOMEM; other errors of eventfd(2) as -errno.
 */
DEVRES_API int devm_eventfd(struct device *dev, unsigned int initval,
			    int flags);

/**
 * devm_timerfd_create() - create a timer descriptor for a device
 * @dev: the owning device
 * @clockid: CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME ...
 * @flags: TFD_NONBLOCK; TFD_CLOEXEC is always added
 *
 * Arm it with timerfd_settime(2); it is closed, and so disarmed, with
 * @dev's resources.
 *
 * Context: any thread. Two fault-injection points (-ENOMEM, -EMFILE).
 * Return: the descriptor; -EINVAL for a bad device (WARNed), an unknown
 * clock or unknown flags; -ENOMEM; other errors of timerfd_create(2) as
 * -errno.
 */
DEVRES_API int devm_timerfd_create(struct device *dev, int clockid, int flags);

/**
 * devm_fopen() - open a stream for a device
 * @dev: the owning device
 * @path: the path, as for fopen(3)
 * @mode: the fopen(3) mode, of any length (a ",ccs=" character set
 *	included); "e" (close-on-exec) is always added, after its first letter
 *
 * The stream is closed with fclose(3) when @dev's resources are released;
 * an error it returns then (a write that could not be flushed) is reported
 * through the log at DEVRES_LOG_WARNING. Close it earlier with
 * devm_fclose() to see that error, never with fclose(3).
 *
 * Context: any thread. Two fault-injection points (the node: ENOMEM; the
 * open: EMFILE), and a third, first, for a @mode of 15 characters or more
 * (its copy: ENOMEM).
 * Return: the stream, or NULL with errno set: EINVAL for a bad device or
 * a NULL argument (both WARNed); ENOMEM; any error of fopen(3); ENODEV
 * (WARNed, the stream closed) when the device was released meanwhile by a
 * last put_device() on another thread.
 */
DEVRES_API FILE *devm_fopen(struct device *dev, const char *path,
			    const char *mode);

/**
 * devm_fclose() - close a managed stream now
 * @dev: the owning device
 * @stream: a stream from devm_fopen() on @dev
 *
 * Closes a stream devm_fopen() opened for @dev before the
 * device lets go, and takes its record off the device.
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: 0, or the error of fclose(3) as -errno (the stream is closed in
 * any case); -EINVAL when @dev does not manage @stream (a misuse, WARNed;
 * nothing closed).
 */
DEVRES_API int devm_fclose(struct device *dev, FILE *stream);

/**
 * devm_mmap() - map memory or a file for a device
 * @dev: the owning device
 * @addr: the address hint, as for mmap(2)
 * @len: bytes to map; not 0
 * @prot: PROT_* as for mmap(2)
 * @flags: MAP_* as for mmap(2)
 * @fd: the file, or -1 for MAP_ANONYMOUS
 * @off: offset in the file, a multiple of the page size
 *
 * mmap(2) whose mapping is unmapped when @dev's resources are released.
 * The ledger counts the mapping and @len rounded up to whole pages (what
 * the kernel maps, as /proc/self/maps shows it). MAP_FIXED over a mapping
 * @dev manages replaces it behind the library's back: don't.
 *
 * Context: any thread. Two fault-injection points (-ENOMEM twice).
 * Return: the address, or ERR_PTR(): -EINVAL for a bad device (WARNed) or
 * a @len of 0; -ENOMEM; any error of mmap(2) as -errno; -ENODEV (WARNed,
 * nothing left mapped) when the device was released meanwhile by a last
 * put_device() on another thread.
 */
DEVRES_API void *devm_mmap(struct device *dev, void *addr, size_t len, int prot,
			   int flags, int fd, off_t off);

/**
 * devm_munmap() - unmap a managed mapping now
 * @dev: the owning device
 * @addr: an address from devm_mmap() on @dev
 * @len: the length given to devm_mmap() (rounded up to whole pages, the
 *       same length)
 *
 * Only whole mappings are unmapped. A range that covers part of a managed
 * mapping is a misuse (WARN, nothing unmapped: the ledger could no longer
 * say what is mapped), and so is a range @dev does not manage.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devm_munmap(struct device *dev, void *addr, size_t len);

/* How long a release waits for a thread to stop before it WARNs. */
#define DEVRES_THREAD_STOP_TIMEOUT_MS 5000u

/**
 * devm_thread_run() - start a managed worker thread
 * @dev: the owning device
 * @fn: the thread's function; what it returns is devm_thread_stop()'s
 * @arg: passed to @fn
 * @name: the thread's name (pthread_setname_np(), cut to 15 characters),
 *        or NULL to keep the creator's
 *
 * Starts @fn(@arg) in a new thread, as kthread_run() does. When @dev's
 * resources are released the thread is asked to stop (from then on
 * devres_thread_should_stop() returns true in it), woken if it waits in
 * devres_thread_sleep() or devres_thread_wait_fd(), and joined. A thread
 * that has not returned within its stop timeout
 * (DEVRES_THREAD_STOP_TIMEOUT_MS, or devres_thread_set_stop_timeout())
 * is reported with a WARN, and then waited for without limit: detaching it
 * would let it run on with what is released after it (the device's
 * memory, descriptors whose numbers get reused), which is worse than a
 * reported hang. A thread whose @fn releases its own device's resources
 * (so that the release would join the thread from itself) is not joined:
 * WARN, it is asked to stop and detached, and what it holds is given back
 * when @fn returns. So is a thread that is itself stopping the releasing
 * thread (directly or through a ring of stops) and waits for it.
 *
 * The node is on @dev's list before @fn begins, so @fn may release its
 * own device at once. @fn may end by returning, by pthread_exit() or by
 * being cancelled (at a cancellation point: deferred cancellation, the
 * default): each ends the thread the same way, and the last two make its
 * result -ECANCELED.
 *
 * The thread inherits the creator's signal mask. It holds one eventfd (to
 * be woken), counted by the ledger with the thread.
 *
 * Context: any thread. Five fault-injection points (the node, the
 * handle and the record a join or detach by hand is checked against:
 * -ENOMEM; the eventfd: -EMFILE; the thread: -EAGAIN).
 * Return: the thread's handle, valid until it is released, or ERR_PTR():
 * -EINVAL for a bad device or a NULL @fn (both WARNed); -ENOMEM;
 * -EMFILE; -EAGAIN or another error of pthread_create(); -ENODEV (WARNed;
 * @fn never runs) when @dev was released meanwhile by a last put_device()
 * on another thread.
 */
DEVRES_API struct devres_thread *devm_thread_run(struct device *dev,
						 int (*fn)(void *arg),
						 void *arg, const char *name);

/**
 * devm_thread_stop() - stop and join a managed thread now
 * @dev: the owning device
 * @thread: a handle from devm_thread_run() on @dev
 *
 * What a release does (ask, wake, wait, join, with the stop timeout's
 * WARN), now, as kthread_stop() does.
 *
 * Context: any thread but @thread itself, or a thread @thread is stopping
 * and waits for (directly or through a ring of stops): a misuse, WARN,
 * -EDEADLK, the thread keeps running and stays managed.
 * Return: what the thread's function returned, -ECANCELED when it ended
 * by pthread_exit() or cancellation; -EINVAL when @dev does not manage
 * @thread (a misuse, WARNed); -EDEADLK; -ECHILD in a child of fork() for
 * a device or thread of its parent (WARNed, not stopped: it runs in the
 * parent).
 */
DEVRES_API int devm_thread_stop(struct device *dev,
				struct devres_thread *thread);

/**
 * devres_thread_set_stop_timeout() - how long a stop may take before a WARN
 * @thread: a managed thread's handle
 * @ms: milliseconds; DEVRES_THREAD_STOP_TIMEOUT_MS unless set
 *
 * Sets how many milliseconds the release of @thread waits for it to return
 * before it WARNs (DEVRES_THREAD_STOP_TIMEOUT_MS by default); it then goes on
 * waiting without limit.
 *
 * Context: any thread, while @thread is managed. In a child of fork(), a
 * thread of its parent is left as it is, with a WARN. A handle whose
 * thread was stopped (devm_thread_stop(), the device's release) is found
 * stale without its memory being read, and WARNs. So does a thread asked
 * to stop that still runs (a stop waits for it, or its function released
 * its own device): no stop waits by the timeout any more, nothing is set.
 */
DEVRES_API void devres_thread_set_stop_timeout(struct devres_thread *thread,
					       unsigned int ms);

/**
 * devres_thread_spawn() - start a detached thread the ledger counts
 * @fn: the thread's function
 * @arg: passed to @fn
 *
 * For layers above the library that serve work of their own in threads
 * (the kernel-compat headers' work items): @fn(@arg) runs in a new
 * detached thread, counted in the ledger's threads from before it starts
 * until it calls devres_thread_spawn_done() or, at the latest, until @fn
 * ends (it returns, calls pthread_exit(), or is cancelled). Not a managed
 * thread: nothing stops or joins it. It starts with every signal blocked,
 * as the kernel's workers take none: a signal the program blocks in its
 * own threads, to take it by signalfd() or sigwait(), never lands there.
 *
 * Context: any thread.
 * Both the record it allocates and the thread it creates are fault
 * points (<devres/fault.h>), so that a fault sweep reaches its caller's
 * fallback.
 *
 * Return: 0 once started; -EINVAL for a bad @fn (WARN); -ENOMEM (also
 * injected); -EAGAIN (also injected) or another error of
 * pthread_create().
 */
DEVRES_API int devres_thread_spawn(void *(*fn)(void *), void *arg);

/**
 * devres_thread_spawn_done() - a spawned thread no longer counts
 *
 * Called by a thread devres_thread_spawn() started, before it lets another
 * thread know that it is finished: the ledger is back by the time that
 * thread looks. Once per thread; later calls, and calls from any other
 * thread, do nothing.
 *
 * Context: any thread.
 */
DEVRES_API void devres_thread_spawn_done(void);

/**
 * devres_thread_should_stop() - whether this thread was asked to stop
 *
 * kthread_should_stop() for managed threads: a thread's function loops
 * until it returns true, then returns.
 *
 * Context: any thread; outside a managed thread it returns false.
 * Return: true once the calling managed thread was asked to stop.
 */
DEVRES_API bool devres_thread_should_stop(void);

/**
 * devres_thread_sleep() - sleep, unless asked to stop
 * @ms: milliseconds
 *
 * Sleeps @ms milliseconds, and returns at once when the calling managed
 * thread is (or was already) asked to stop. Outside a managed thread it
 * simply sleeps.
 *
 * Context: any thread.
 * Return: 0 after the whole sleep; -EINTR when asked to stop.
 */
DEVRES_API int devres_thread_sleep(unsigned int ms);

/**
 * devres_thread_wait_fd() - wait for a descriptor, unless asked to stop
 * @fd: the descriptor to poll
 * @events: POLLIN, POLLOUT ... as for poll(2)
 * @timeout_ms: milliseconds, or -1 to wait without limit
 *
 * poll(2) on @fd that a request to stop the calling managed thread
 * interrupts. When both happen, the stop wins. Outside a managed thread it
 * is poll(2) on @fd alone.
 *
 * Context: any thread.
 * Return: the revents of @fd (> 0) when it is ready; 0 on timeout; -EINTR
 * when asked to stop; -EBADF for a negative @fd; another error of poll(2)
 * as -errno.
 */
DEVRES_API int devres_thread_wait_fd(int fd, short events, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_POSIX_H */
