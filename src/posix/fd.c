// SPDX-License-Identifier: MIT
/*
 * Managed file descriptors: devm_open, devm_openat, devm_add_fd,
 * devm_memfd_create, devm_eventfd, devm_timerfd_create and devm_close.
 *
 * Each managed call has its own release function, only so that logs and
 * dumps name the call that acquired a descriptor (a node's name is kept per
 * release function); they all do the same thing.
 *
 * A managed descriptor closed by hand (close(), dup2() or dup3() over it,
 * close_range()) is caught at that call (fd-table.c, interpose-fd.c): one
 * WARN, and its node dropped there. What those cannot see (a raw
 * syscall, a close inside libc) its release still catches: it closes the
 * number only if it still is the open file acquired (its twin, kcmp()),
 * for the number may have been handed out again, to another owner. A
 * close by hand during the release waits for it (fd-table.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include "fd-table.h"
#include <devres/posix.h>

/* Every flag open(2) knows; anything else is refused, as openat2 does. */
#define OPEN_FLAGS                                                             \
	(O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |        \
	 O_NONBLOCK | O_DSYNC | O_SYNC | O_ASYNC | O_DIRECT | O_LARGEFILE |    \
	 O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_PATH |           \
	 O_TMPFILE)

/* What a release found of its number. */
enum fd_found {
	FD_CLOSED,   /* the file acquired, closed now */
	FD_GONE,     /* closed behind the library's back */
	FD_OTHER,    /* closed so, and now another file: left open */
	FD_CLOSE_ERR /* the file acquired, whose close() failed */
};

/*
 * Gives @dr's descriptor back, unless it is no longer the one acquired.
 * close() is called once: on Linux the descriptor is gone even when close
 * fails with EINTR, and retrying could close another thread's new one.
 * The number is checked, then closed, while the node is claimed
 * (fd-table.c): a close by hand on another thread waits for the end of
 * this, so none closes the number between the check and the close. The
 * WARNs come once the claim is let go: a log sink may close a number.
 */
static void fd_put(struct device *dev, struct fd_dr *dr)
{
	/*
	 * close() is a cancellation point, and a release is no place for
	 * one: a thread cancelled there ended inside devres_release_all()
	 * with the descriptor still open though counted closed, and the
	 * release blamed for it. The request acts after the call.
	 */
	int saved = errno, cancel = devres__cancel_off(), err = 0;
	enum fd_found found = FD_CLOSED;
	bool twin_ours;
	char buf[40];

	/* Closed by hand since: the close did all of this. */
	if (dr->listed && !posix__fd_claim(dr)) {
		devres__cancel_restore(cancel);
		return;
	}
	/* Asked while the number is open: the twin is compared with it. */
	twin_ours = posix__twin_ours(dr);
	devres__ledger_add(DL_FDS, dr->twin >= 0 ? -2 : -1);
	if (fcntl(dr->fd, F_GETFD) < 0) {
		found = FD_GONE;
	} else if (!posix__fd_same(dr)) {
		found = FD_OTHER;
	} else if (close(dr->fd)) {
		err = errno;
		/* Closed by a raw syscall since it was checked. */
		found = err == EBADF ? FD_GONE : FD_CLOSE_ERR;
	}
	/* Ours alone: its close cannot fail in a way that loses data. */
	if (twin_ours)
		posix__close_next(__atomic_load_n(&dr->twin, __ATOMIC_ACQUIRE));
	if (dr->listed)
		posix__fd_done(dr);
	if (found == FD_GONE)
		devres__warn(dev, dr->what,
			     "fd %d was closed behind the library's back",
			     dr->fd);
	else if (found == FD_OTHER)
		devres__warn(dev, dr->what,
			     "fd %d was closed behind the library's back and "
			     "now is another file: left open",
			     dr->fd);
	else if (found == FD_CLOSE_ERR)
		/* Not a misuse but data perhaps lost: not counted. */
		devres__print(DEVRES_LOG_WARNING, "%s: %s: close(%d): %s",
			      devres__dev_label(dev, buf, sizeof(buf)),
			      dr->what, dr->fd, strerrordesc_np(err));
	if (!twin_ours && dr->twin >= 0)
		posix__twin_lost(dev, dr->what, dr);
	devres__cancel_restore(cancel);
	errno = saved;
}

static void devm_open_release(struct device *dev, void *res)
{
	fd_put(dev, res);
}

static void devm_openat_release(struct device *dev, void *res)
{
	fd_put(dev, res);
}

static void devm_add_fd_release(struct device *dev, void *res)
{
	fd_put(dev, res);
}

static void devm_memfd_create_release(struct device *dev, void *res)
{
	fd_put(dev, res);
}

static void devm_eventfd_release(struct device *dev, void *res)
{
	fd_put(dev, res);
}

static void devm_timerfd_create_release(struct device *dev, void *res)
{
	fd_put(dev, res);
}

static const dr_release_t fd_releases[] = {
	devm_open_release,    devm_openat_release,
	devm_add_fd_release,  devm_memfd_create_release,
	devm_eventfd_release, devm_timerfd_create_release,
};

/*
 * What devm_close() and devm_add_fd() look for: a node of the number
 * that still refers to the open file it acquired (@live), or any node of
 * the number.
 */
struct fd_match {
	int fd;
	bool live;
};

static int match_fd(struct device *dev, void *res, void *data)
{
	const struct fd_dr *dr = res;
	const struct fd_match *m = data;

	(void)dev;
	return dr->fd == m->fd && (!m->live || posix__fd_same(dr));
}

static struct fd_dr *fd_node(dr_release_t release, const char *what)
{
	struct fd_dr *dr =
		devres_alloc_named(release, sizeof(*dr), GFP_KERNEL, what);

	if (dr) {
		dr->what = what;
		dr->owner.node = dr;
		dr->owner.release = release;
		dr->owner.call = what;
		dr->owner.fix = "devm_close()";
	}
	return dr;
}

/*
 * Fill, then publish: @dr is on @dev's list when this returns, and may be
 * released by another thread at once, so only the number is returned.
 */
static int fd_publish(struct device *dev, struct fd_dr *dr, int fd)
{
	dr->fd = fd;
	dr->twin = posix__fd_twin(fd);
	/* The identity without a twin; with one, the tiebreak of the two. */
	posix__fd_identify(dr);
	dr->owner.dev = dev;
	devres__ledger_add(DL_FDS, dr->twin >= 0 ? 2 : 1);
	/* Listed and on @dev in one hold of the table's lock. */
	if (posix__fd_list(dr))
		return fd;
	/* Refused by @dev (released meanwhile): closed as its release would. */
	devres__owner_refused(&dr->owner);
	devres_free(dr);
	return -ENODEV;
}

/* What a newly acquired descriptor (or -errno) becomes: managed or freed. */
static int fd_finish(struct device *dev, struct fd_dr *dr, int fd)
{
	int err;

	if (fd >= 0)
		return fd_publish(dev, dr, fd);
	err = -errno;
	devres_free(dr);
	return err;
}

/* The fault point before a descriptor is made: it looks like EMFILE. */
static int fd_fault(void)
{
	errno = EMFILE;
	return -1;
}

static int do_openat(struct device *dev, int dirfd, const char *path, int flags,
		     mode_t mode, dr_release_t release, const char *what)
{
	struct fd_dr *dr;
	int fd;

	if (!devres__dev_ok_to_acquire(dev, what))
		return -EINVAL;
	if (devres__arg_bad(dev, path, what, "path"))
		return -EINVAL;
	if ((flags & ~OPEN_FLAGS) || (flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	dr = fd_node(release, what);
	if (!dr)
		return -ENOMEM;
	fd = devres__should_fail_fd()
		     ? fd_fault()
		     : openat(dirfd, path, flags | O_CLOEXEC, mode);
	return fd_finish(dev, dr, fd);
}

static bool wants_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

int devm_open(struct device *dev, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (wants_mode(flags)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return do_openat(dev, AT_FDCWD, path, flags, mode, devm_open_release,
			 __func__);
}

int devm_openat(struct device *dev, int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (wants_mode(flags)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return do_openat(dev, dirfd, path, flags, mode, devm_openat_release,
			 __func__);
}

int devm_add_fd(struct device *dev, int fd)
{
	struct fd_dr *dr;

	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	if (!devres__dev_ok_to_acquire(dev, __func__)) {
		close(fd);
		return -EINVAL;
	}
	/*
	 * A node of a number closed behind the library's back and reused
	 * since does not make the number's new open file managed.
	 */
	if (posix__fd_of(dev, fd)) {
		devres__warn(dev, __func__, "fd %d is already managed", fd);
		return -EBUSY;
	}
	dr = fd_node(devm_add_fd_release, __func__);
	if (!dr) {
		close(fd);
		return -ENOMEM;
	}
	fd = fd_publish(dev, dr, fd);
	return fd < 0 ? fd : 0;
}

/* How many of the release functions have a node of @fd on @dev. */
static int fd_kinds(struct device *dev, int fd)
{
	struct fd_match m = { fd, false };
	int n = 0;

	for (size_t i = 0; i < sizeof(fd_releases) / sizeof(fd_releases[0]);
	     i++)
		n += devres_find(dev, fd_releases[i], match_fd, &m) != NULL;
	return n;
}

void devm_close(struct device *dev, int fd)
{
	struct fd_match m = { fd, false };
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__))
		return;
	/*
	 * A stale node of the number (closed behind the library's back, the
	 * number acquired again by the device) is older than the live one:
	 * of one release function, the newest, found first, is the one to
	 * close. Only where two release functions have a node of the number
	 * is the one whose number still is its open file looked for first
	 * (one kcmp() per node, which the common case does without).
	 */
	m.live = fd_kinds(dev, fd) > 1;
	for (int pass = 0; pass < 2; pass++, m.live = false)
		for (size_t i = 0;
		     i < sizeof(fd_releases) / sizeof(fd_releases[0]); i++)
			if (devres_release(dev, fd_releases[i], match_fd, &m) ==
			    0)
				return;
	/* Another device's number (or another call's): named, left open. */
	devres__warn_foreign(dev, __func__, posix__fd_owner(fd, &h) ? &h : NULL,
			     "fd %d is not managed by this device", fd);
}

int devm_memfd_create(struct device *dev, const char *name, unsigned int flags)
{
	struct fd_dr *dr;
	int fd;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return -EINVAL;
	if (devres__arg_bad(dev, name, __func__, "name"))
		return -EINVAL;
	dr = fd_node(devm_memfd_create_release, __func__);
	if (!dr)
		return -ENOMEM;
	fd = devres__should_fail_fd() ? fd_fault()
				      : memfd_create(name, flags | MFD_CLOEXEC);
	return fd_finish(dev, dr, fd);
}

int devm_eventfd(struct device *dev, unsigned int initval, int flags)
{
	struct fd_dr *dr;
	int fd;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return -EINVAL;
	dr = fd_node(devm_eventfd_release, __func__);
	if (!dr)
		return -ENOMEM;
	fd = devres__should_fail_fd() ? fd_fault()
				      : eventfd(initval, flags | EFD_CLOEXEC);
	return fd_finish(dev, dr, fd);
}

int devm_timerfd_create(struct device *dev, int clockid, int flags)
{
	struct fd_dr *dr;
	int fd;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return -EINVAL;
	dr = fd_node(devm_timerfd_create_release, __func__);
	if (!dr)
		return -ENOMEM;
	fd = devres__should_fail_fd()
		     ? fd_fault()
		     : timerfd_create(clockid, flags | TFD_CLOEXEC);
	return fd_finish(dev, dr, fd);
}
