// SPDX-License-Identifier: MIT
/*
 * Which open file a managed number refers to, and the process-wide table
 * of managed descriptors and streams that catches their release by hand.
 *
 * A number says nothing of what it refers to, and st_dev/st_ino cannot
 * tell the same file opened twice (or two eventfds, which share an
 * inode). So a managed descriptor keeps a private duplicate, its twin,
 * which refers to the open file acquired for as long as the node lives;
 * kcmp(KCMP_FILE) says whether the number still is that open file. Where
 * kcmp() is refused (a seccomp policy, a kernel without it) or no
 * descriptor is left for the twin, the node falls back to remembering
 * st_dev, st_ino and the access mode.
 *
 * The table: close(), dup2(), dup3() and close_range() (interpose-fd.c)
 * look a number up here before libc closes it, and fclose() a stream. A
 * number is found by index in a two-level array (base/growtab.c): a top
 * array of chunks, each of 1 << CHUNK_SHIFT slots, each slot two heads:
 * the newest node of that number with the older ones chained behind it
 * (another device's, or a stale node whose number was closed by a raw
 * syscall and acquired again), and the nodes whose twin has that number,
 * so that a close of a twin's number moves the twin first. The common
 * case, a number nobody manages, is decided without the lock: the count
 * of listed nodes, then the top, its chunk and the two heads, each one
 * atomic load. A top outgrown is kept (a reader may hold it), so no
 * reader ever sees freed memory; they add up to less than the newest one.
 * A number whose room cannot be allocated is not listed (its close by
 * hand is not caught), and the table WARNs once.
 *
 * A release checks its number, then closes it: two calls. Its node stays
 * listed, marked releasing, from its claim until it has closed the number
 * and the twin, and a close by hand (or a claim by another device's
 * release) of a range that holds either waits for it on a condition
 * variable, cancellation off. Otherwise the close by hand would find
 * nothing listed, close the number for real, and a third thread's open()
 * could be given the number before the release closed it: the release
 * would close that thread's file. After the wait the call goes on as in
 * the order release first, close by hand second (EBADF, or a new file of
 * its own), and as there, with no WARN: the release claimed the node
 * before the call came, and the number was no longer managed. A thread that
 * holds a mark of its own never waits (its release's own close() comes
 * through here), so no two threads wait for each other; it takes no
 * signal meanwhile (devres__signals_off()). In a child of fork() the table is empty,
 * and nothing is waited for.
 *
 * Lock order: the table's lock, then a device's devres lock (a node taken
 * by hand is destroyed under the table's lock, which keeps its device
 * alive: the node's release waits for that lock before it goes). Releases
 * take the table's lock with no other lock held. Its fork() rank is
 * DEVRES_FORK_FDS; in a child the table is emptied: the parent's managed
 * numbers are the parent's, and a child's close of its copy is its own.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fd-table.h"

int posix__fd_mode(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fl & (O_ACCMODE | O_PATH);
}

/*
 * The twin of @fd, or -1: none is made once kcmp() proved unusable, nor
 * when the process is out of descriptors (the node then falls back).
 */
int posix__fd_twin(int fd)
{
	int saved = errno,
	    state = __atomic_load_n(&devres__kcmp_state, __ATOMIC_RELAXED);
	int twin;

	if (state < 0)
		return -1;
	twin = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	/* Whether kcmp() may be used is asked once, of the first twin. */
	if (twin >= 0 && state == 0) {
		if (devres__same_file(fd, twin) == 0) {
			__atomic_store_n(&devres__kcmp_state, 1,
					 __ATOMIC_RELAXED);
		} else {
			posix__close_next(twin);
			twin = -1;
		}
	}
	errno = saved;
	return twin;
}

/* Whether @fd is the file @dr recorded: its device, inode and access mode. */
static bool fd_matches(const struct fd_dr *dr, int fd)
{
	struct stat st;

	return dr->have_id && fstat(fd, &st) == 0 && st.st_dev == dr->st_dev &&
	       st.st_ino == dr->st_ino && posix__fd_mode(fd) == dr->mode;
}

void posix__fd_identify(struct fd_dr *dr)
{
	struct stat st;

	dr->have_id = fstat(dr->fd, &st) == 0;
	if (dr->have_id) {
		dr->st_dev = st.st_dev;
		dr->st_ino = st.st_ino;
		dr->mode = posix__fd_mode(dr->fd);
	}
}

/*
 * Whether @dr's number still refers to what it acquired: by its twin
 * where it has one, else by what fstat() and F_GETFL say (a closed
 * number fails both). A number and a twin that are no longer one open
 * file mean that one of them was closed behind the library's back and
 * given to another owner: the number is still ours if it is the file
 * recorded and the twin is not.
 */
bool posix__fd_same(const struct fd_dr *dr)
{
	int twin = __atomic_load_n(&dr->twin, __ATOMIC_ACQUIRE);
	int same = twin >= 0 ? devres__same_file(dr->fd, twin) : -1;

	if (same == 0)
		return true;
	if (same > 0)
		return fd_matches(dr, dr->fd) && !fd_matches(dr, twin);
	if (!dr->have_id)
		return fcntl(dr->fd, F_GETFD) >= 0;
	return fd_matches(dr, dr->fd);
}

/*
 * Whether @dr's twin is still the library's to close: one open file with
 * the number, or else the file recorded. Where the number and the twin
 * are both the file recorded (another owner's descriptor of the same
 * file, or of the kernel's one anonymous inode), the twin is taken for
 * ours: a number a program knows is the likelier to be closed by hand.
 */
bool posix__twin_ours(const struct fd_dr *dr)
{
	int twin = __atomic_load_n(&dr->twin, __ATOMIC_ACQUIRE);

	if (twin < 0)
		return false;
	if (devres__same_file(dr->fd, twin) == 0)
		return true;
	return !dr->have_id || fd_matches(dr, twin);
}

void posix__twin_lost(struct device *dev, const char *what,
		      const struct fd_dr *dr)
{
	devres__warn(dev, what,
		     "fd %d's private duplicate %d was closed behind the "
		     "library's back and now is another file: left open",
		     dr->fd, dr->twin);
}

#define CHUNK_SHIFT 8

/* The heads of a number's chains. */
struct heads {
	struct fd_dr *node; /* the nodes of the number */
	struct fd_dr *twin; /* the nodes whose twin has the number */
};

static struct devres__growtab tab = {
	.shift = CHUNK_SHIFT,
	.slot_size = sizeof(struct heads),
	.first_n = 4,
	.name = "managed descriptors",
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream_dr *streams;
unsigned long posix__fds_listed, posix__streams_listed;
/* The releases under way, the closes waiting for one: under the lock. */
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static unsigned long releasing_nr;
static unsigned int waiters;
/* How many marks this thread holds (a signal handler's nest in its own). */
static TLS_FAST unsigned int marks;

/*
 * How many spans of the lock this thread is inside. A signal handler's
 * close(), dup2(), dup3() or close_range() takes the lock too, and run
 * while its own thread holds it (listing a number, a close by hand, the
 * table's growth) it would wait for ever. So a span costs two plain
 * stores, no system call: a handler's call that finds its thread inside
 * one does not take the lock and is the plain call. A managed number it
 * closes or replaces stays listed, its bookkeeping left to the identity
 * check of its release (posix__fd_same()), which finds it closed behind
 * the library's back and WARNs there; a twin it closes leaves its node
 * to the file's identity. A handler's fclose() of a managed stream is
 * refused instead (the stream stays open), its WARN made at the span's
 * end: the FILE its release would fclose() must not be freed.
 */
static TLS_FAST unsigned int spans;
static TLS_FAST bool fclose_refused;

static void table_lock(void)
{
	__atomic_store_n(&spans, spans + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&lock);
	devres__lock_seen(&lock);
}

static void table_unlock(void)
{
	devres__unlock_seen(&lock);
	pthread_mutex_unlock(&lock);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&spans, spans - 1, __ATOMIC_RELAXED);
	if (unlikely(__atomic_load_n(&fclose_refused, __ATOMIC_RELAXED)) &&
	    !spans) {
		__atomic_store_n(&fclose_refused, false, __ATOMIC_RELAXED);
		devres__warn(NULL, "fclose",
			     "a signal handler's, inside the library's span of "
			     "the table of managed descriptors on its thread: "
			     "refused, the stream stays open");
	}
}

/* Whether this thread is inside a span (a signal handler's call is). */
static bool in_span(void)
{
	return __atomic_load_n(&spans, __ATOMIC_RELAXED) != 0;
}

static void count(unsigned long *n, long delta)
{
	__atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + delta,
			 __ATOMIC_RELAXED);
}

/*
 * The head of @fd's chain of nodes (@twin: of twins), under the lock, or
 * NULL; made when @grow (NULL without memory).
 */
static struct fd_dr **slot(unsigned int fd, bool twin, bool grow)
{
	struct heads *h = grow ? devres__growtab_make(&tab, fd)
			       : devres__growtab_get(&tab, fd);

	if (!h)
		return NULL;
	return twin ? &h->twin : &h->node;
}

/* Without the lock: whether @fd may have a node (false: it has none). */
static bool maybe_listed(unsigned int fd)
{
	struct heads *h = devres__growtab_get(&tab, fd);

	return h && (__atomic_load_n(&h->node, __ATOMIC_RELAXED) ||
		     __atomic_load_n(&h->twin, __ATOMIC_RELAXED));
}

static bool in_range(int fd, unsigned int lo, unsigned int hi)
{
	return fd >= 0 && (unsigned int)fd >= lo && (unsigned int)fd <= hi;
}

/*
 * Under the lock: whether a node or stream whose release is under way has
 * its number or its twin's in [@lo, @hi].
 */
static bool busy_in(unsigned int lo, unsigned int hi)
{
	struct heads *h;

	for (struct stream_dr *s = streams; s; s = s->next) {
		if (s->id.releasing && in_range(s->id.fd, lo, hi))
			return true;
	}
	for (unsigned int fd = lo; (h = devres__growtab_next(&tab, &fd, hi));
	     fd++) {
		for (struct fd_dr *dr = h->node; dr; dr = dr->next)
			if (dr->releasing)
				return true;
		/* A stream's twin is on these chains too. */
		for (struct fd_dr *dr = h->twin; dr; dr = dr->next_twin)
			if (dr->releasing)
				return true;
		if (fd == hi) /* @hi may be UINT_MAX */
			break;
	}
	return false;
}

/*
 * Takes the lock, then waits while another thread's release has a number
 * or a twin in [@lo, @hi]. The wait is no cancellation point: a thread
 * cancelled there would end inside close() with the table's lock held. A
 * thread that holds a mark of its own does not wait (the file's head
 * comment).
 */
static void lock_settled(unsigned int lo, unsigned int hi)
{
	int cancel;

	table_lock();
	if (likely(!releasing_nr) || marks || !busy_in(lo, hi))
		return;
	cancel = devres__cancel_off();
	do {
		waiters++;
		devres__unlock_seen(&lock);
		pthread_cond_wait(&released, &lock);
		devres__lock_seen(&lock);
		waiters--;
	} while (busy_in(lo, hi));
	devres__cancel_restore(cancel);
}

/* Under the lock: @id is its release's, until unmark(). */
static void mark(struct fd_dr *id)
{
	id->releasing = true;
	releasing_nr++;
	marks++;
}

static void unmark(struct fd_dr *id)
{
	id->releasing = false;
	/* Not in a child forked inside the release: none counted there. */
	if (releasing_nr)
		releasing_nr--;
	if (marks)
		marks--;
	if (waiters)
		pthread_cond_broadcast(&released);
}

/* Puts @dr on the chain of its twin's number, under the lock. */
static void link_twin(struct fd_dr *dr)
{
	int twin = __atomic_load_n(&dr->twin, __ATOMIC_RELAXED);
	struct fd_dr **s = twin < 0 ? NULL
				    : slot((unsigned int)twin, true, true);

	dr->twin_listed = s != NULL;
	if (s) {
		dr->next_twin = *s;
		__atomic_store_n(s, dr, __ATOMIC_RELAXED);
	}
}

static void unlink_twin(struct fd_dr *dr)
{
	int twin = __atomic_load_n(&dr->twin, __ATOMIC_RELAXED);
	struct fd_dr **pp;

	if (!dr->twin_listed)
		return;
	pp = slot((unsigned int)twin, true, false);
	while (pp && *pp && *pp != dr)
		pp = &(*pp)->next_twin;
	if (pp && *pp)
		__atomic_store_n(pp, dr->next_twin, __ATOMIC_RELAXED);
	dr->twin_listed = false;
}

bool posix__fd_list(struct fd_dr *dr)
{
	struct fd_dr **s;
	bool added;

	table_lock();
	s = slot((unsigned int)dr->fd, false, true);
	if (s) {
		dr->next = *s;
		__atomic_store_n(s, dr, __ATOMIC_RELAXED);
		count(&posix__fds_listed, 1);
		link_twin(dr);
	}
	dr->listed = s != NULL;
	/* A close(2) by hand takes the node off under this lock. */
	added = devres__owner_add(&dr->owner);
	table_unlock();
	devres__log_release();
	devres__growtab_warn(&tab);
	return added;
}

/* Takes @dr off its number's chain and its twin's, under the lock. */
static void unlink_fd(struct fd_dr *dr)
{
	struct fd_dr **pp = slot((unsigned int)dr->fd, false, false);

	while (pp && *pp && *pp != dr)
		pp = &(*pp)->next;
	if (pp && *pp)
		__atomic_store_n(pp, dr->next, __ATOMIC_RELAXED);
	unlink_twin(dr);
	count(&posix__fds_listed, -1);
}

/*
 * From a release's claim to its end its thread takes no signal. A handler
 * run there that closed the number (close(), dup2(), close_range()) was
 * let through without a wait, the thread holding the number's mark (a
 * wait would be for itself): between the release's check and its own
 * close(), another thread's open() could then be given the number, and
 * the release closed that file. Held back, the handler runs once the
 * release is over: its close comes second, as after any release. Nested
 * claims (none today) keep the mask of the outermost.
 */
bool posix__fd_claim(struct fd_dr *dr)
{
	bool mine;

	devres__signals_off();
	lock_settled((unsigned int)dr->fd, (unsigned int)dr->fd);
	mine = dr->owner.dev != NULL;
	if (mine)
		mark(dr);
	table_unlock();
	if (!mine)
		devres__signals_on();
	return mine;
}

void posix__fd_done(struct fd_dr *dr)
{
	table_lock();
	unlink_fd(dr);
	dr->owner.dev = NULL;
	unmark(dr);
	table_unlock();
	devres__signals_on();
}

/*
 * The first node, from number *@lo to @hi, whose number still is the
 * open file it acquired (*@lo set to its number); NULL if none. A stale
 * node (its number closed by a raw syscall and now another open file)
 * is not: the number is not the device's.
 */
static struct fd_dr *find_live(unsigned int *lo, unsigned int hi)
{
	struct heads *h;

	for (unsigned int fd = *lo; (h = devres__growtab_next(&tab, &fd, hi));
	     fd++) {
		for (struct fd_dr *dr = h->node; dr; dr = dr->next) {
			/* Its release closes it: waited for, not taken. */
			if (!dr->releasing && posix__fd_same(dr)) {
				*lo = fd;
				return dr;
			}
		}
		if (fd == hi) /* @hi may be UINT_MAX */
			break;
	}
	return NULL;
}

bool posix__fd_owner(int fd, struct devres__hand *h)
{
	struct fd_dr **pp, *dr;
	bool found = false;

	/* A signal handler's, its thread inside a span: not looked up. */
	if (fd < 0 || in_span() || !maybe_listed((unsigned int)fd))
		return false;
	table_lock();
	pp = slot((unsigned int)fd, false, false);
	for (dr = pp ? *pp : NULL; dr && !found; dr = dr->next) {
		if (!dr->owner.dev || dr->releasing || !posix__fd_same(dr))
			continue;
		devres__owner_hand(&dr->owner, h);
		found = true;
	}
	table_unlock();
	return found;
}

bool posix__fd_of(const struct device *dev, int fd)
{
	struct fd_dr **pp, *dr;
	bool found = false;

	if (fd < 0 || in_span() || !maybe_listed((unsigned int)fd))
		return false;
	table_lock();
	pp = slot((unsigned int)fd, false, false);
	for (dr = pp ? *pp : NULL; dr && !found; dr = dr->next)
		found = dr->owner.dev == dev && !dr->releasing &&
			posix__fd_same(dr);
	table_unlock();
	return found;
}

/*
 * The twin of @dr, whose number [@lo, @hi] is about to close, moved out of
 * the range: a program that closes numbers it did not open (every number
 * from 3 up, before an exec) would otherwise take the node's way to tell
 * its number from a reused one, and the number would be left open at
 * release. The old number is left to the call. With no room outside the
 * range, the node falls back to the file's identity, recorded when it was
 * acquired (posix__fd_identify()), as a node that never had a twin. Under
 * the lock.
 */
static void move_twin(struct fd_dr *dr, unsigned int lo, unsigned int hi)
{
	int old = __atomic_load_n(&dr->twin, __ATOMIC_RELAXED), moved = -1;

	unlink_twin(dr);
	if (hi < INT_MAX)
		moved = fcntl(old, F_DUPFD_CLOEXEC, (int)hi + 1);
	if (moved < 0) {
		moved = fcntl(old, F_DUPFD_CLOEXEC, 0);
		if (moved >= 0 && (unsigned int)moved >= lo &&
		    (unsigned int)moved <= hi) {
			posix__close_next(moved);
			moved = -1;
		}
	}
	if (moved >= 0) {
		__atomic_store_n(&dr->twin, moved, __ATOMIC_RELEASE);
		link_twin(dr);
		return;
	}
	__atomic_store_n(&dr->twin, -1, __ATOMIC_RELEASE);
	/* The call closes it: the ledger counts one descriptor less. */
	devres__ledger_add(DL_FDS, -1);
}

/* Every twin with a number in [@lo, @hi], moved out of it; under the lock. */
static void move_twins(unsigned int lo, unsigned int hi)
{
	struct heads *h;

	for (unsigned int fd = lo; (h = devres__growtab_next(&tab, &fd, hi));
	     fd++) {
		while (h->twin)
			move_twin(h->twin, lo, hi);
		if (fd == hi)
			break;
	}
}

/*
 * The first listed stream whose descriptor is in [@lo, @hi] and still its
 * open file, taken off the list (its twin too, in *@ret_twin); NULL if
 * none. Under the lock, where no listed stream is freed.
 */
static struct stream_dr *take_stream_fd(unsigned int lo, unsigned int hi,
					int *ret_twin)
{
	for (struct stream_dr **pp = &streams; *pp; pp = &(*pp)->next) {
		struct stream_dr *dr = *pp;

		if (dr->id.releasing || dr->id.fd < 0 ||
		    (unsigned int)dr->id.fd < lo ||
		    (unsigned int)dr->id.fd > hi || !posix__fd_same(&dr->id))
			continue;
		*pp = dr->next;
		count(&posix__streams_listed, -1);
		unlink_twin(&dr->id);
		*ret_twin = dr->id.twin;
		return dr;
	}
	return NULL;
}

/*
 * What a stream's node dropped by hand leaves: its twin closed (one
 * inside [@lo, @hi] is left to the call that closes the range) and the
 * ledger counted.
 */
static void stream_dropped(int twin, unsigned int lo, unsigned int hi)
{
	if (twin >= 0 && ((unsigned int)twin < lo || (unsigned int)twin > hi))
		posix__close_next(twin);
	devres__ledger_add(DL_FDS, twin >= 0 ? -2 : -1);
}

/*
 * A managed stream's descriptor closed (or replaced) by hand: its node is
 * dropped with a WARN, so that the release does not fclose() the stream,
 * which would close the number again once another open file has it. The
 * FILE is left to the program, whose fclose() of it is a plain one.
 */
static void streams_closing(const char *func, unsigned int lo, unsigned int hi)
{
	for (;;) {
		struct devres__hand hand = { .pid = 0 };
		struct stream_dr *dr;
		char what[40];
		int fd = -1, twin = -1;

		lock_settled(lo, hi);
		dr = take_stream_fd(lo, hi, &twin);
		if (dr) {
			fd = dr->id.fd;
			devres__disown(&dr->owner, &hand);
		}
		table_unlock();
		if (!dr)
			return;
		snprintf(what, sizeof(what), "fd %d, a stream's,", fd);
		devres__warn_hand(&hand, func, what);
		stream_dropped(twin, lo, hi);
	}
}

void posix__fd_closing(const char *func, unsigned int lo, unsigned int hi)
{
	unsigned int first = lo;
	int saved = errno;

	/* A signal handler's, its thread inside a span: the plain call. */
	if (in_span())
		return;
	if (__atomic_load_n(&posix__streams_listed, __ATOMIC_RELAXED))
		streams_closing(func, lo, hi);
	/* One number nobody manages, the common case: no lock. */
	if (lo == hi && !maybe_listed(lo)) {
		errno = saved;
		return;
	}
	for (;;) {
		struct devres__hand hand = { .pid = 0 };
		struct fd_dr *dr;
		int fd = -1, twin = -1;
		char what[24];

		lock_settled(lo, hi);
		dr = find_live(&lo, hi);
		if (dr) {
			fd = dr->fd;
			twin = __atomic_load_n(&dr->twin, __ATOMIC_RELAXED);
			unlink_fd(dr);
			/* Destroys the node: @dr is not read after this. */
			devres__disown(&dr->owner, &hand);
		}
		table_unlock();
		if (!dr)
			break;
		snprintf(what, sizeof(what), "fd %d", fd);
		devres__warn_hand(&hand, func, what);
		/*
		 * What its release would have done but close the number. A
		 * twin inside the range is left to the real call: closed
		 * here, its number could go to another thread's open()
		 * before that call closes the range.
		 */
		if (twin >= 0 &&
		    ((unsigned int)twin < first || (unsigned int)twin > hi))
			posix__close_next(twin);
		devres__ledger_add(DL_FDS, twin >= 0 ? -2 : -1);
	}
	lock_settled(first, hi);
	move_twins(first, hi);
	table_unlock();
	devres__growtab_warn(&tab);
	errno = saved;
}

bool posix__stream_list(struct stream_dr *dr)
{
	struct fd_dr *id = &dr->id;
	bool added;

	*id = (struct fd_dr){ .fd = fileno(dr->f), .twin = -1 };
	if (id->fd >= 0) {
		id->twin = posix__fd_twin(id->fd);
		posix__fd_identify(id);
	}
	devres__ledger_add(DL_FDS, id->twin >= 0 ? 2 : 1);
	table_lock();
	dr->next = streams;
	streams = dr;
	count(&posix__streams_listed, 1);
	link_twin(id);
	/* A close by hand of its number, or its fclose(), takes it here. */
	added = devres__owner_add(&dr->owner);
	table_unlock();
	devres__log_release();
	devres__growtab_warn(&tab);
	return added;
}

/*
 * The link to the listed node of @f, under the lock; NULL if none. One
 * its release has claimed is not: that release frees the FILE, and an
 * fclose() by hand meanwhile is a use after free either way (docs/posix.md).
 */
static struct stream_dr **stream_link(const FILE *f)
{
	for (struct stream_dr **pp = &streams; *pp; pp = &(*pp)->next)
		if ((*pp)->f == f && !(*pp)->id.releasing)
			return pp;
	return NULL;
}

bool posix__stream_owner(const FILE *f, struct devres__hand *h)
{
	struct stream_dr **pp;
	bool found;

	if (in_span())
		return false;
	table_lock();
	pp = stream_link(f);
	found = pp && (*pp)->owner.dev;
	if (found)
		devres__owner_hand(&(*pp)->owner, h);
	table_unlock();
	return found;
}

bool posix__stream_listed(const FILE *f)
{
	bool found = false;

	/* The parent's thread inside a span (a handler's vfork()). */
	if (in_span())
		return true;
	pthread_mutex_lock(&lock);
	devres__lock_seen(&lock);
	for (const struct stream_dr *s = streams; s && !found; s = s->next)
		found = s->f == f;
	devres__unlock_seen(&lock);
	pthread_mutex_unlock(&lock);
	return found;
}

bool posix__stream_claim(struct stream_dr *dr)
{
	unsigned int fd = (unsigned int)dr->id.fd;
	bool mine;

	devres__signals_off();
	lock_settled(fd, fd);
	mine = dr->owner.dev != NULL;
	if (mine)
		mark(&dr->id);
	table_unlock();
	if (!mine)
		devres__signals_on();
	return mine;
}

void posix__stream_done(struct stream_dr *dr)
{
	struct stream_dr **pp;

	table_lock();
	for (pp = &streams; *pp && *pp != dr; pp = &(*pp)->next)
		;
	/* Not there in a child forked inside the release. */
	if (*pp) {
		*pp = dr->next;
		count(&posix__streams_listed, -1);
	}
	dr->owner.dev = NULL;
	unlink_twin(&dr->id);
	unmark(&dr->id);
	table_unlock();
	devres__signals_on();
}

bool posix__stream_closing(const char *func, FILE *f)
{
	struct devres__hand hand = { .pid = 0 };
	struct stream_dr **pp, *dr = NULL;
	int saved = errno, twin = -1;

	/* A signal handler's, its thread inside a span: refused. */
	if (in_span()) {
		__atomic_store_n(&fclose_refused, true, __ATOMIC_RELAXED);
		errno = EDEADLK;
		return false;
	}
	table_lock();
	pp = stream_link(f);
	if (pp) {
		dr = *pp;
		*pp = dr->next;
		count(&posix__streams_listed, -1);
		unlink_twin(&dr->id);
		twin = dr->id.twin;
		devres__disown(&dr->owner, &hand);
	}
	table_unlock();
	if (dr) {
		devres__warn_hand(&hand, func, "a stream");
		stream_dropped(twin, 1, 0);
	}
	errno = saved;
	return true;
}

/*
 * fork(): the lock is held across it, so the child's copy of the table is
 * whole; there the table is emptied (its nodes are the parent's devices').
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
	pthread_cond_t fresh = PTHREAD_COND_INITIALIZER;

	devres__growtab_zero(&tab);
	streams = NULL;
	/* The parent's releases and waiters are not the child's. */
	released = fresh;
	releasing_nr = 0;
	waiters = 0;
	posix__fds_listed = 0;
	posix__streams_listed = 0;
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void fd_table_init(void)
{
	devres__atfork(DEVRES_FORK_FDS, fork_prepare, fork_parent, fork_child);
}
