// SPDX-License-Identifier: MIT
/*
 * The libc entry points that release or replace a descriptor or a stream,
 * defined here so that a managed one given to them by hand is caught at
 * that call: close(), dup2() and dup3() over a number (their implicit
 * close), close_range() (CLOSE_RANGE_CLOEXEC closes nothing), closefrom(),
 * mq_close() (a message queue descriptor is one), fclose(), pclose() and
 * endmntent() (glibc frees any stream given to them with its own fclose(),
 * inside, past the one here), freopen() (libc puts the new file on the
 * stream's number inside: the release of a managed number left listed
 * would meet that file) and closedir() of a stream of entries fdopendir()
 * made of one.
 *
 * Each first loads the count of managed descriptors (or streams) in the
 * process: at zero it goes straight on to the next definition, libc's or
 * a sanitizer's interceptor's, found once with dlsym(RTLD_NEXT) (a raw
 * syscall where there is none: a program with no dynamic linker).
 * Otherwise fd-table.c looks the number up, WARNs and drops the node of a
 * managed one, and the real call follows. A sanitizer's interceptors come
 * first in the process (their runtime is loaded before the library) and
 * reach these through their own RTLD_NEXT, so they still see every call;
 * the library's own calls to these names go through the PLT
 * (src/libdevres.dynlist keeps them out of -Bsymbolic-functions) for the
 * same reason.
 *
 * A call that fails without closing anything (dup2() from a closed
 * descriptor, a flag dup3() does not know, close_range() with @first past
 * @last) drops nothing: each such case is let through first.
 *
 * A number the library holds for its own use (base/own-fd.c) is refused
 * instead, with its WARN: close(), dup2() and dup3() onto it fail with
 * EPERM and fclose() of a stream over it with EOF and EPERM, the stream
 * left open; close_range() closes the rest of its range around it and
 * returns what those calls return. EPERM, not EBADF: the number is open
 * and stays open, and a program that takes EBADF for "already closed"
 * would be misled; close(2) never fails with EPERM otherwise, so the
 * refusal is told from any error of the kernel's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <mqueue.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "fd-table.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1u << 1)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1u << 2)
#endif

/* Exported: they are libc's names, interposed. */
#define INTERPOSE __attribute__((visibility("default")))

typedef int close_fn(int);
typedef int dup2_fn(int, int);
typedef int dup3_fn(int, int, int);
typedef int close_range_fn(unsigned int, unsigned int, int);
typedef int fclose_fn(FILE *);
typedef void closefrom_fn(int);
typedef int closedir_fn(DIR *);
typedef FILE *freopen_fn(const char *, const char *, FILE *);
typedef int mq_close_fn(mqd_t);
typedef int endmntent_fn(FILE *);

/* Without a next definition: the system calls themselves. */
static int sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static int sys_dup3(int oldfd, int newfd, int flags)
{
	return (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

static int sys_dup2(int oldfd, int newfd)
{
	/* dup3() refuses equal numbers; dup2() checks the number instead. */
	if (oldfd == newfd)
		return fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd;
	return sys_dup3(oldfd, newfd, 0);
}

static int sys_close_range(unsigned int first, unsigned int last, int flags)
{
#ifdef SYS_close_range
	return (int)syscall(SYS_close_range, first, last, flags);
#else
	(void)first;
	(void)last;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

static void sys_closefrom(int lowfd)
{
	(void)sys_close_range(lowfd < 0 ? 0u : (unsigned int)lowfd, ~0u, 0);
}

/* No FILE can be reopened without libc's own freopen(). */
static FILE *no_freopen(const char *path, const char *mode, FILE *f)
{
	(void)path;
	(void)mode;
	(void)f;
	errno = ENOSYS;
	return NULL;
}

/* No DIR can be freed without libc's own closedir(). */
static int no_closedir(DIR *d)
{
	(void)d;
	errno = ENOSYS;
	return -1;
}

/* No FILE can be freed without libc's own fclose(). */
static int no_fclose(FILE *f)
{
	(void)f;
	errno = ENOSYS;
	return EOF;
}

static int sys_mq_close(mqd_t mq)
{
	return (int)syscall(SYS_close, mq);
}

/* Without libc's pclose() and endmntent(), no stream is freed. */
static int no_pclose(FILE *f)
{
	(void)f;
	errno = ENOSYS;
	return -1;
}

static int no_endmntent(FILE *f)
{
	(void)f;
	errno = ENOSYS;
	return 1;
}

DEVRES__NEXT(close_fn, close, sys_close)
DEVRES__NEXT(dup2_fn, dup2, sys_dup2)
DEVRES__NEXT(dup3_fn, dup3, sys_dup3)
DEVRES__NEXT(close_range_fn, close_range, sys_close_range)
DEVRES__NEXT(fclose_fn, fclose, no_fclose)
DEVRES__NEXT(closefrom_fn, closefrom, sys_closefrom)
DEVRES__NEXT(closedir_fn, closedir, no_closedir)
DEVRES__NEXT(freopen_fn, freopen, no_freopen)
DEVRES__NEXT(freopen_fn, freopen64, no_freopen)
DEVRES__NEXT(mq_close_fn, mq_close, sys_mq_close)
DEVRES__NEXT(fclose_fn, pclose, no_pclose)
DEVRES__NEXT(endmntent_fn, endmntent, no_endmntent)

int posix__close_next(int fd)
{
	return next_close()(fd);
}

static bool fds_listed(void)
{
	/* A managed stream's descriptor is caught too. */
	return unlikely(
		__atomic_load_n(&posix__fds_listed, __ATOMIC_RELAXED) ||
		__atomic_load_n(&posix__streams_listed, __ATOMIC_RELAXED));
}

/*
 * A child of vfork() has a table of descriptors of its own (a copy of its
 * parent's, as fork()'s), and the parent's memory: its close() of a
 * managed number (the usual close or dup2() before an exec) closes its
 * copy alone, the parent's stays open and managed. Nothing of the
 * library's records is looked at or changed for it: before, the child
 * took the parent's record of the number away, with a WARN saying so,
 * and the parent's release then left its descriptor open.
 */
static bool vfork_child(void)
{
	return devres__vfork_maybe() && devres__vfork_child();
}

static bool own_fds(void)
{
	return unlikely(__atomic_load_n(&devres__own_fds_nr, __ATOMIC_RELAXED));
}

/* -1 with EPERM: the library's own number, refused (its WARN said). */
static int refused(void)
{
	errno = EPERM;
	return -1;
}

/* A cancellation inside libc's call still ends the bracket. */
static void own_exit(void *entered)
{
	devres__own_fd_exit(*(bool *)entered);
}

/*
 * Each call does what the managed table asks first (a managed number's
 * WARN and its node dropped), out of the bracket against the library's
 * opens, whose WARN a log sink may call back from; then, bracketed, the
 * look among the library's own and libc's call.
 */
static int close_as(const char *func, close_fn *next, int fd)
{
	bool in;
	int ret;

	if (vfork_child())
		return next(fd);
	if (fds_listed() && fd >= 0)
		posix__fd_closing(func, (unsigned int)fd, (unsigned int)fd);
	if (!own_fds())
		return next(fd);
	in = devres__own_fd_enter();
	if (devres__own_fd_refused(func, fd, &in))
		return refused();
	pthread_cleanup_push(own_exit, &in);
	ret = next(fd);
	pthread_cleanup_pop(1);
	return ret;
}

INTERPOSE int close(int fd)
{
	return close_as(__func__, next_close(), fd);
}

/* A message queue descriptor is a descriptor: closed as close() closes. */
INTERPOSE int mq_close(mqd_t mq)
{
	if (!own_fds() && !fds_listed())
		return next_mq_close()(mq);
	return close_as(__func__, next_mq_close(), mq);
}

/* Whether @fd is open, errno kept. */
static bool is_open(int fd)
{
	int saved = errno;
	bool open = fcntl(fd, F_GETFD) >= 0;

	errno = saved;
	return open;
}

/* dup2() and dup3() close @newfd only when @oldfd is open. */
static void dup_closing(const char *func, int oldfd, int newfd)
{
	if (fds_listed() && is_open(oldfd))
		posix__fd_closing(func, (unsigned int)newfd,
				  (unsigned int)newfd);
}

/* Onto the library's own number, from an open one: refused. */
static bool dup_refused(const char *func, int oldfd, int newfd, bool *in)
{
	return devres__own_fd_maybe(newfd) && is_open(oldfd) &&
	       devres__own_fd_refused(func, newfd, in);
}

INTERPOSE int dup2(int oldfd, int newfd)
{
	bool closes = oldfd != newfd && newfd >= 0, in;
	int ret;

	if (vfork_child())
		return next_dup2()(oldfd, newfd);
	if (closes)
		dup_closing(__func__, oldfd, newfd);
	if (!own_fds())
		return next_dup2()(oldfd, newfd);
	in = devres__own_fd_enter();
	if (closes && dup_refused(__func__, oldfd, newfd, &in))
		return refused();
	pthread_cleanup_push(own_exit, &in);
	ret = next_dup2()(oldfd, newfd);
	pthread_cleanup_pop(1);
	return ret;
}

INTERPOSE int dup3(int oldfd, int newfd, int flags)
{
	bool closes = oldfd != newfd && newfd >= 0 && !(flags & ~O_CLOEXEC);
	bool in;
	int ret;

	if (vfork_child())
		return next_dup3()(oldfd, newfd, flags);
	if (closes)
		dup_closing(__func__, oldfd, newfd);
	if (!own_fds())
		return next_dup3()(oldfd, newfd, flags);
	in = devres__own_fd_enter();
	if (closes && dup_refused(__func__, oldfd, newfd, &in))
		return refused();
	pthread_cleanup_push(own_exit, &in);
	ret = next_dup3()(oldfd, newfd, flags);
	pthread_cleanup_pop(1);
	return ret;
}

#define SEEN_MAX 16

/* The WARNs of what close_range() left, made out of the bracket. */
static void warn_seen(const char *func, struct devres__own_seen *seen, int n,
		      bool *in)
{
	devres__own_fd_exit(*in);
	for (int i = 0; i < n; i++)
		devres__own_fd_warn(func, &seen[i]);
	*in = devres__own_fd_enter();
}

/*
 * The range in pieces around each of the library's own numbers, the
 * first failure returned, with its errno, once every piece was tried.
 * The WARNs wait until the bracket is left (or SEEN_MAX are due: then the
 * numbers below the next piece are all done with, and the look goes on
 * from there once back in).
 */
static int close_range_around(const char *func, unsigned int first,
			      unsigned int last, int flags, bool *in)
{
	struct devres__own_seen seen[SEEN_MAX];
	int ret = 0, err = 0, n = 0;

	for (unsigned int lo = first;;) {
		int own = devres__own_fd_next(lo, last, &seen[n]);

		if (own < 0 || (unsigned int)own > lo) {
			unsigned int hi = own < 0 ? last
						  : (unsigned int)own - 1;

			if (next_close_range()(lo, hi, flags) && !ret) {
				ret = -1;
				err = errno;
			}
		}
		if (own < 0)
			break;
		if (++n == SEEN_MAX) {
			warn_seen(func, seen, n, in);
			n = 0;
		}
		if ((unsigned int)own == last)
			break;
		lo = (unsigned int)own + 1;
	}
	if (n)
		warn_seen(func, seen, n, in);
	if (ret)
		errno = err;
	return ret;
}

/* close_range() as @func makes it (closefrom()'s is one, inside libc). */
static int close_range_as(const char *func, unsigned int first,
			  unsigned int last, int flags)
{
	/* CLOSE_RANGE_CLOEXEC marks the numbers and closes none. */
	bool closes = first <= last &&
		      !((unsigned int)flags & ~CLOSE_RANGE_UNSHARE),
	     in;
	int ret;

	if (vfork_child())
		return next_close_range()(first, last, flags);
	if (fds_listed() && closes)
		posix__fd_closing(func, first, last);
	if (!own_fds() || !closes)
		return next_close_range()(first, last, flags);
	in = devres__own_fd_enter();
	pthread_cleanup_push(own_exit, &in);
	ret = close_range_around(func, first, last, flags, &in);
	pthread_cleanup_pop(1);
	return ret;
}

INTERPOSE int close_range(unsigned int first, unsigned int last, int flags)
{
	return close_range_as(__func__, first, last, flags);
}

/*
 * A child of vfork() shares its parent's memory: a FILE there is the
 * parent's, and libc's fclose() of it in the child frees it under the
 * parent. For a managed stream of the parent's that would be a use after
 * free at its release, so the child's call (fclose(), pclose(),
 * endmntent(), freopen()) closes the child's copy of its number, which is
 * what the child needs (the number is not inherited by what it execs),
 * and leaves the FILE and the parent's record as they are: no WARN, the
 * stream still the parent's device's. Any other stream or DIR (one over a
 * managed number included) is libc's to close, the records untouched,
 * the number the parent's to keep, as close() there. Before, the child's
 * call WARNed, took the parent's record away and freed its FILE.
 */
static bool child_keeps(FILE *stream)
{
	int fd;

	if (!stream || !posix__stream_listed(stream))
		return false;
	fd = fileno(stream);
	if (fd >= 0)
		(void)next_close()(fd);
	return true;
}

/* Whether @stream is the parent's managed stream, nothing closed. */
static bool child_keeps_open(FILE *stream)
{
	return stream && posix__stream_listed(stream);
}

/* Whether this is a child of vfork() while anything is listed. */
static bool vfork_listed(void)
{
	return (own_fds() || fds_listed()) && vfork_child();
}

/*
 * Not bracketed against the library's opens: the stream holds its number
 * open until libc closes it, so no open can be given it meanwhile, and
 * its flush may block for long (a pipe whose reader is slow).
 */
/*
 * What @func (fclose(), or a call that frees a stream with it inside)
 * does before libc's call: false when the stream is to stay open, errno
 * set (EPERM: its number is the library's; EDEADLK: a signal handler's
 * call inside a span of the table's lock).
 */
static bool stream_closing(const char *func, FILE *stream)
{
	/* Read only where a number may be managed: fileno() may set errno. */
	int fd = stream && (own_fds() || fds_listed()) ? fileno(stream) : -1;
	bool in = false;

	/* The stream stays open: its number is the library's. */
	if (own_fds() && stream && devres__own_fd_refused(func, fd, &in)) {
		errno = EPERM;
		return false;
	}
	if (stream &&
	    unlikely(__atomic_load_n(&posix__streams_listed,
				     __ATOMIC_RELAXED)) &&
	    !posix__stream_closing(func, stream))
		return false;
	/*
	 * libc closes the stream's number inside: a managed descriptor
	 * under a stream of the program's (fdopen() of a devm_open() one) is
	 * caught here, as close() of it would be. A managed stream's own
	 * number was let go with the stream just above.
	 */
	if (fds_listed() && fd >= 0)
		posix__fd_closing(func, (unsigned int)fd, (unsigned int)fd);
	return true;
}

INTERPOSE int fclose(FILE *stream)
{
	if (vfork_listed())
		return child_keeps(stream) ? 0 : next_fclose()(stream);
	if (!stream_closing(__func__, stream))
		return EOF;
	return next_fclose()(stream);
}

/*
 * glibc's pclose() frees any stream with its own fclose(), a popen() one
 * or not: a managed stream given to it is freed there, and its release
 * would fclose() the freed FILE (or another owner's, given its memory
 * since). Caught as fclose() catches it. Refused: -1, the stream open.
 */
INTERPOSE int pclose(FILE *stream)
{
	if (vfork_listed())
		return child_keeps(stream) ? 0 : next_pclose()(stream);
	if (!stream_closing(__func__, stream))
		return -1;
	return next_pclose()(stream);
}

/*
 * endmntent() fclose()s its stream inside libc, whatever stream it is:
 * caught as fclose(). It returns 1 whatever happens, so a refused call
 * returns 1 too, the stream left open (its WARN said why), errno EPERM.
 */
INTERPOSE int endmntent(FILE *stream)
{
	if (vfork_listed())
		return child_keeps(stream) ? 1 : next_endmntent()(stream);
	if (!stream_closing(__func__, stream))
		return 1;
	return next_endmntent()(stream);
}

/*
 * closefrom() closes every number from @lowfd up with one close_range()
 * inside libc, past the interposer above: it is made here as that one
 * makes it, so that a managed number in the range is WARNed about and
 * dropped and the library's own numbers are kept (with their WARN).
 * Without close_range() in the kernel, each number is closed by the
 * close() above, up to the limit of open files. errno is kept, as
 * closefrom() sets none.
 */
INTERPOSE void closefrom(int lowfd)
{
	unsigned int first = lowfd < 0 ? 0u : (unsigned int)lowfd;
	int saved = errno;
	struct rlimit rl;

	if ((!own_fds() && !fds_listed()) || vfork_child()) {
		next_closefrom()(lowfd);
		return;
	}
	if (close_range_as(__func__, first, ~0u, 0) && errno == ENOSYS &&
	    !getrlimit(RLIMIT_NOFILE, &rl))
		for (rlim_t fd = first; fd < rl.rlim_cur && fd <= INT_MAX; fd++)
			(void)close((int)fd);
	errno = saved;
}

/*
 * freopen() of a managed stream, or of a stream over a managed number
 * (fdopen() of a devm_open() one): libc puts the new file on the number
 * (glibc: a dup3() of it onto the number, inside). Caught as fclose()
 * catches them, before: the node dropped, the stream the program's from
 * then on (its fclose() a plain one). A stream over one of the library's
 * own numbers is refused (NULL, EPERM) and left as it was.
 */
static FILE *reopen(const char *func, freopen_fn *next, const char *path,
		    const char *mode, FILE *stream)
{
	int fd = stream && (own_fds() || fds_listed()) ? fileno(stream) : -1;
	bool in = false;

	if (own_fds() && stream && devres__own_fd_refused(func, fd, &in)) {
		errno = EPERM;
		return NULL;
	}
	if (stream &&
	    unlikely(__atomic_load_n(&posix__streams_listed,
				     __ATOMIC_RELAXED)) &&
	    !posix__stream_closing(func, stream))
		return NULL;
	if (fds_listed() && fd >= 0)
		posix__fd_closing(func, (unsigned int)fd, (unsigned int)fd);
	return next(path, mode, stream);
}

/* The open(2) flags of an fopen() @mode. */
static int mode_flags(const char *mode)
{
	int flags;

	switch (mode[0]) {
	case 'r':
		flags = 0;
		break;
	case 'w':
		flags = O_CREAT | O_TRUNC;
		break;
	case 'a':
		flags = O_CREAT | O_APPEND;
		break;
	default:
		return -1;
	}
	if (strchr(mode, '+'))
		flags |= O_RDWR;
	else
		flags |= mode[0] == 'r' ? O_RDONLY : O_WRONLY;
	if (strchr(mode, 'e'))
		flags |= O_CLOEXEC;
	if (strchr(mode, 'x'))
		flags |= O_EXCL;
	return flags;
}

/*
 * freopen() of the parent's managed stream in a child of vfork(): the new
 * file put on the stream's number in the child's table, what the child
 * needs of it, the FILE (the parent's) left as it is. With no @path (a
 * change of mode), nothing to do. NULL with errno as fopen() sets it,
 * and the child's copy of the number closed, as a failed freopen()
 * leaves the stream closed.
 */
static FILE *child_reopen(const char *path, const char *mode, FILE *stream)
{
	int fd = fileno(stream), flags, nfd, err = 0;

	if (!path)
		return stream;
	flags = mode ? mode_flags(mode) : -1;
	if (flags < 0) {
		err = EINVAL;
	} else {
		nfd = open(path, flags, 0666);
		if (nfd < 0) {
			err = errno;
		} else if (nfd != fd) {
			if (next_dup3()(nfd, fd, flags & O_CLOEXEC) != fd)
				err = errno;
			(void)next_close()(nfd);
		}
	}
	if (!err)
		return stream;
	if (fd >= 0)
		(void)next_close()(fd);
	errno = err;
	return NULL;
}

INTERPOSE FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	if (!own_fds() && !fds_listed())
		return next_freopen()(path, mode, stream);
	if (vfork_child())
		return child_keeps_open(stream)
			       ? child_reopen(path, mode, stream)
			       : next_freopen()(path, mode, stream);
	return reopen(__func__, next_freopen(), path, mode, stream);
}

INTERPOSE FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
	if (!own_fds() && !fds_listed())
		return next_freopen64()(path, mode, stream);
	if (vfork_child())
		return child_keeps_open(stream)
			       ? child_reopen(path, mode, stream)
			       : next_freopen64()(path, mode, stream);
	return reopen(__func__, next_freopen64(), path, mode, stream);
}

/*
 * closedir() of a stream of entries that fdopendir() made of a managed
 * number (libc closes it inside): caught as fclose() of a stream over it
 * is. Over one of the library's own numbers: refused (-1, EPERM), the
 * DIR left open.
 */
INTERPOSE int closedir(DIR *dir)
{
	int fd;
	bool in = false;

	if (!own_fds() && !fds_listed())
		return next_closedir()(dir);
	/* The program's DIR, freed by libc; the parent's number kept. */
	if (vfork_child())
		return next_closedir()(dir);
	fd = dirfd(dir);
	if (own_fds() && devres__own_fd_refused(__func__, fd, &in)) {
		errno = EPERM;
		return -1;
	}
	if (fds_listed() && fd >= 0)
		posix__fd_closing(__func__, (unsigned int)fd, (unsigned int)fd);
	return next_closedir()(dir);
}
