/* SPDX-License-Identifier: MIT */
/*
 * What the managed descriptors and streams (fd.c, stdio.c) share with the
 * table that catches their release by hand (fd-table.c) and with the libc
 * entry points that consult it (interpose-fd.c). docs/posix.md.
 */
#ifndef DEVRES_POSIX_FD_TABLE_H
#define DEVRES_POSIX_FD_TABLE_H

#include <stdio.h>
#include <sys/types.h>
#include "base/subsys.h"

/* A managed descriptor: the data of its devres node. */
struct fd_dr {
	int fd;
	int twin; /* the same open file as fd when acquired; or -1 */
	bool have_id;
	dev_t st_dev;
	ino_t st_ino;
	int mode; /* O_ACCMODE | O_PATH of the open file description */
	const char *what;
	/*
	 * In the table, under its lock: @owner.dev is cleared when the
	 * node's number is taken off it, by the node's release or by a
	 * close() by hand; @next is the number's next older node.
	 */
	bool listed; /* set before the node is published, never changed */
	struct devres__owner owner;
	struct fd_dr *next;
	/*
	 * Its release has claimed it and has not yet closed its number and
	 * its twin: still in the table, so that a close by hand of either
	 * number waits for that release (fd-table.c). Under the lock.
	 */
	bool releasing;
	/*
	 * On the chain of its twin's number too, so that a close by hand of
	 * that number moves the twin first (@twin changes then, under the
	 * table's lock; read it with an atomic load where that lock is not
	 * held and the node is listed).
	 */
	bool twin_listed;
	struct fd_dr *next_twin;
};

/*
 * A managed stream: the data of its devres node. @id is its descriptor
 * as a managed descriptor's would be (@id.fd its number, @id.twin its
 * twin, or the fallback's identity; @id's other fields unused), so that
 * a close of that number by hand is caught while it still is that open
 * file, and the release closes the number only then.
 */
struct stream_dr {
	FILE *f;
	struct devres__owner owner;
	struct stream_dr *next;
	struct fd_dr id;
};

/* fd-table.c: which open file a managed number refers to. */
HIDDEN int posix__fd_mode(int fd);
HIDDEN int posix__fd_twin(int fd);
HIDDEN bool posix__fd_same(const struct fd_dr *dr);
/* Records @dr->fd's device, inode and access mode (@dr->have_id). */
HIDDEN void posix__fd_identify(struct fd_dr *dr);
/* Whether @dr's twin is still the library's to close. */
HIDDEN bool posix__twin_ours(const struct fd_dr *dr);
/* The WARN of a twin found to be another owner's: it is left open. */
HIDDEN void posix__twin_lost(struct device *dev, const char *what,
			     const struct fd_dr *dr);

/*
 * fd-table.c: puts a filled node in the table and on its device
 * (@dr->owner.dev) in one hold of the table's lock, so that a close by
 * hand finds both or neither (sets @dr->listed; false without memory for
 * the table, where the twin alone catches a close by hand, at release).
 * A stream is always listed (the list takes no memory), and put on its
 * device in the same hold; its listing makes its twin and counts the
 * ledger.
 *
 * Its release or devm_close() claims it: true if it was still the
 * device's, false if a close by hand took it (which closed its twin and
 * counted the ledger). A claimed node stays in the table, marked, while
 * the release checks its number and closes it and its twin: a close by
 * hand of either number on another thread waits meanwhile, so that it
 * cannot close the number between the check and the close and let
 * another owner be given it. The release then says it is done, which
 * takes the node off and wakes those waiting, before it WARNs or logs
 * anything (a log sink may close a number too). A claim first waits for
 * another thread's release of the same number (another device's node of
 * it).
 */
HIDDEN __attribute__((warn_unused_result)) bool
posix__fd_list(struct fd_dr *dr);
HIDDEN bool posix__fd_claim(struct fd_dr *dr);
/*
 * Whether a listed node of @dev has @fd, still the open file it acquired
 * (devm_add_fd()'s check): read in the table, not on @dev's list, so that
 * a device released meanwhile is not WARNed about by the check as well
 * as by the record that follows it.
 */
HIDDEN bool posix__fd_of(const struct device *dev, int fd);
HIDDEN void posix__fd_done(struct fd_dr *dr);
HIDDEN __attribute__((warn_unused_result)) bool
posix__stream_list(struct stream_dr *dr);
HIDDEN bool posix__stream_claim(struct stream_dr *dr);
HIDDEN void posix__stream_done(struct stream_dr *dr);

/*
 * Who owns the managed number @fd (the live one: still its open file) or
 * the managed stream @f, into @h: false when none does, or when this
 * thread is inside a span of the table's lock (a signal handler's call).
 */
HIDDEN bool posix__fd_owner(int fd, struct devres__hand *h);
HIDDEN bool posix__stream_owner(const FILE *f, struct devres__hand *h);

/*
 * Whether @f is a listed managed stream, its release under way or not:
 * the look of a child of vfork() (interpose-fd.c), which changes nothing.
 * It takes the table's lock, as a thread of the parent's would, but
 * nothing else (no device, no allocation, no WARN): the parent's other
 * threads hold that lock only for short spans that wait for no other
 * thread, and the parent's own thread, stopped in vfork(), holds it only
 * when its signal handler made the vfork() inside a span of it, which is
 * told (true then: the stream is left alone, as a managed one).
 */
HIDDEN bool posix__stream_listed(const FILE *f);

/*
 * How many nodes the table holds: the interposers' first (and, at zero,
 * only) look, one relaxed load.
 */
extern HIDDEN unsigned long posix__fds_listed, posix__streams_listed;

/*
 * The interposers' slow paths: the numbers [@lo, @hi] are about to be
 * closed by @func (a managed stream's descriptor among them too), the
 * stream @f by @func (fclose() or freopen()). Each live managed one found
 * gets its WARN and its node is dropped; the caller then makes the real
 * call. A number (or a twin's) whose release is running on another
 * thread is waited for first; it was no longer managed, and is not WARNed
 * about. From a signal handler whose thread is inside a span of the
 * table's lock, nothing is looked up (fd-table.c):
 * posix__stream_closing() then returns false, errno EDEADLK, and the
 * call is refused.
 */
HIDDEN void posix__fd_closing(const char *func, unsigned int lo,
			      unsigned int hi);
HIDDEN bool posix__stream_closing(const char *func, FILE *f);

/* interpose-fd.c: libc's close(), past every interposer. */
HIDDEN int posix__close_next(int fd);

#endif /* DEVRES_POSIX_FD_TABLE_H */
