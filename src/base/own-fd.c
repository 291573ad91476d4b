// SPDX-License-Identifier: MIT
/*
 * The descriptors the library opens for its own use (a VFIO device, the
 * interrupt dispatcher's epoll, a managed thread's wake eventfd, a PCI
 * device's sysfs files...), recorded by number from the moment each is
 * opened to the moment the library closes it, so that the program's
 * close(), dup2(), dup3(), close_range() or fclose() of one is refused at
 * that call (posix/interpose-fd.c asks here) instead of leaving the
 * library to act, at its next use, on whatever file the number holds by
 * then: another owner's. docs/misuse.md, "The library's own descriptors".
 *
 * A record lives in a slot indexed by its number: a top array of chunk
 * pointers, each chunk CHUNK slots, the first chunk static (nearly every
 * process has all its numbers below CHUNK) and the others allocated once
 * and never freed, so that a reader holding a chunk never sees it go.
 * The top grows (doubled) to any number the process can have, past the
 * default fs.nr_open too; a top outgrown is kept for the readers that
 * may hold it. The common case, a number the library does not hold, is
 * decided without the lock by three atomic loads: the top, the chunk,
 * then the slot's kind (growtab.c). A number whose chunk or top cannot be
 * allocated is not recorded: the library works as before with it,
 * unprotected, and the table WARNs once.
 *
 * The library's own close marks the slot closing, makes the call and only
 * then clears the slot. The call is the plain close() (or fclose()),
 * through the PLT, so that a sanitizer's interceptor still sees the
 * number go (ThreadSanitizer would otherwise take the next file of the
 * number for this one); the interposer lets it through because this
 * thread is the one closing that number. A program's call on the number
 * meanwhile, from another thread, waits for the slot to clear and goes on
 * as a plain call on whatever the number is by then (the library's close
 * came first: usually EBADF), with no WARN. It is never refused then: a
 * number the kernel gave to another owner between the close and the
 * clearing must stay closable by that owner.
 *
 * A record keeps the id of the process that opened the descriptor. In a
 * child of fork() the numbers are inherited copies, which the child may
 * close as it may close anything it inherited (docs/fork.md): the
 * record of another process is let through, and a child's own open of
 * the same number replaces it.
 *
 * Which file a record's number refers to: its device and inode, by
 * fstat(), tell a sysfs file or a VFIO device from another owner's file
 * put at the number, but every eventfd, epoll, timerfd and signalfd of
 * the system shares one inode (the kernel's anonymous inode). Such a
 * record keeps a twin, a duplicate of the descriptor made as it is
 * recorded and recorded itself (the program's close of it is refused as
 * the number's), and kcmp(KCMP_FILE) says whether the number still is
 * the twin's open file: exact, one system call per check, nothing on
 * the file's own path (an eventfd's write is what it was). Where kcmp()
 * is refused (a seccomp policy, a kernel built without it) or no number
 * is left for the twin, the record falls back to the inode, which another
 * owner's eventfd or epoll at the number passes (docs/misuse.md). The
 * fdinfo's eventfd-id is no identity: the kernel gives a closed
 * eventfd's id to the next one made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "internal.h"
#include "seen-lock.h"

#define CHUNK_SHIFT 8
#define CHUNK (1u << CHUNK_SHIFT)
#define TOP_FIRST 16u

struct own {
	unsigned char kind; /* enum devres__own_kind; 0: free */
	bool closing;	    /* the library is closing it */
	/*
	 * Closed behind the library's back (devres__own_fd_check()): no
	 * longer the library's, though its subsystem still holds the number.
	 */
	bool lost;
	/*
	 * Counts the records made in the slot: the library's close of a
	 * number clears its record only if no open was given the number
	 * and recorded it between that close and the clearing.
	 */
	unsigned int gen;
	int pid;
	/*
	 * The record of an anonymous-inode descriptor: its twin's number
	 * (@twin). The twin's own record: @of, the number it duplicates.
	 */
	bool has_twin, is_twin;
	int twin, of;
	dev_t st_dev; /* the open file recorded, by fstat(); 0, 0: none */
	ino_t st_ino;
	char name[40];
};

struct chunk {
	struct own own[CHUNK];
};

/* What a WARN says the descriptor is; the record's name follows "of". */
static const char *const kinds[DEVRES_OWN_NR] = {
	[DEVRES_OWN_IRQ_EPOLL] = "the epoll",
	[DEVRES_OWN_IRQ_WAKE] = "the wake eventfd",
	[DEVRES_OWN_IRQ_LINE] = "the eventfd",
	[DEVRES_OWN_IRQ_ATTACHED] = "the library's copy of the fd",
	[DEVRES_OWN_IRQ_UNMASK] = "the library's copy of the unmask eventfd",
	[DEVRES_OWN_THREAD_WAKE] = "the wake eventfd",
	[DEVRES_OWN_UIO] = "the UIO device fd",
	[DEVRES_OWN_UIO_SYSFS] = "the sysfs file of the UIO device number",
	[DEVRES_OWN_VFIO_GROUP] = "the VFIO group fd",
	[DEVRES_OWN_VFIO_CONTAINER] = "the VFIO container fd",
	[DEVRES_OWN_VFIO_DEVICE] = "the VFIO device fd",
	[DEVRES_OWN_VFIO_EVENTFD] = "an interrupt eventfd given to VFIO",
	[DEVRES_OWN_PCI_FILE] = "the sysfs file",
	[DEVRES_OWN_PCI_DIR] = "the sysfs directory",
	[DEVRES_OWN_PCI_ROOT] = "the sysfs root directory",
	[DEVRES_OWN_PAGEMAP] = "/proc/self/pagemap",
	[DEVRES_OWN_IO_WINDOW] = "the library's copy of the fd",
	[DEVRES_OWN_PATH_WALK] = "a directory held",
	[DEVRES_OWN_MAPS] = "/proc/self/maps, read",
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cleared = PTHREAD_COND_INITIALIZER;
static struct chunk first;
static void *first_chunks[TOP_FIRST] = { &first };
static struct devres__growtop first_top = { TOP_FIRST, NULL, first_chunks };
static struct devres__growtab tab = {
	.top = &first_top,
	.shift = CHUNK_SHIFT,
	.slot_size = sizeof(struct own),
	.name = "the library's own descriptors",
};
unsigned long devres__own_fds_nr;

/*
 * Every span of the lock holds signals back on its thread (sigblock.c):
 * a signal handler's close(), dup2(), dup3() or close_range() takes the
 * lock too (the look among the library's own numbers), and run while its
 * own thread holds it (recording an open, a close of the library's own)
 * it would wait for ever.
 */
static void own_lock(void)
{
	devres__signals_off();
	pthread_mutex_lock(&lock);
	devres__lock_seen(&lock);
}

static void own_unlock(void)
{
	devres__unlock_seen(&lock);
	pthread_mutex_unlock(&lock);
	devres__signals_on();
}

/* Waits for a close to clear its record, the lock held. */
static void own_wait(void)
{
	devres__unlock_seen(&lock);
	pthread_cond_wait(&cleared, &lock);
	devres__lock_seen(&lock);
}

/* The number this thread is closing for the library, or -1. */
static TLS_FAST int closing_fd = -1;

const char *devres__own_kind_name(enum devres__own_kind kind)
{
	return kind > DEVRES_OWN_NONE && kind < DEVRES_OWN_NR ? kinds[kind]
							      : NULL;
}

/* The slot of @fd, or NULL; made when @grow (under the lock). */
static struct own *slot(unsigned int fd, bool grow)
{
	return grow ? devres__growtab_make(&tab, fd)
		    : devres__growtab_get(&tab, fd);
}

static void count(long delta)
{
	__atomic_add_fetch(&devres__own_fds_nr, (unsigned long)delta,
			   __ATOMIC_SEQ_CST);
}

int devres__kcmp_state;

/*
 * Compared in the calling thread's table of descriptors: kcmp() of the
 * process's id reads the main thread's, which is gone once the main
 * thread ended by pthread_exit() (every descriptor then looked closed).
 */
int devres__same_file(int a, int b)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	long r = syscall(SYS_kcmp, tid, tid, KCMP_FILE, a, b);

	if (r < 0 && errno == EBADF)
		return 1; /* one of them is closed: not one open file */
	if (r < 0) {
		/* Refused whatever the descriptors: the inode from now on. */
		if (errno == ENOSYS || errno == EPERM || errno == EACCES)
			__atomic_store_n(&devres__kcmp_state, -1,
					 __ATOMIC_RELAXED);
		return -1;
	}
	return r != 0;
}

/*
 * Whether @fd, recorded as @kind, is on the kernel's anonymous inode (an
 * eventfd, an epoll, a timerfd...): its mode has no file type there, on
 * kernels that give it none; else /proc names it "anon_inode:".
 */
static bool anonymous(int fd, enum devres__own_kind kind, const struct stat *st)
{
	char link[40], target[16];
	ssize_t n;

	if (!(st->st_mode & S_IFMT))
		return true;
	/* Files of a file system, /proc's and sysfs's: no link to read. */
	switch (kind) {
	case DEVRES_OWN_MAPS:
	case DEVRES_OWN_PAGEMAP:
	case DEVRES_OWN_PATH_WALK:
	case DEVRES_OWN_PCI_FILE:
	case DEVRES_OWN_PCI_DIR:
	case DEVRES_OWN_PCI_ROOT:
	case DEVRES_OWN_UIO_SYSFS:
		return false;
	default:
		break;
	}
	snprintf(link, sizeof(link), "/proc/thread-self/fd/%d", fd);
	n = readlink(link, target, sizeof(target));
	if (n >= 0)
		return n >= 11 && !memcmp(target, "anon_inode:", 11);
	return false;
}

/* Fills @o's fields for @fd, under the lock; @o->kind last. */
static void fill(struct own *o, enum devres__own_kind kind, const char *name,
		 const struct stat *st)
{
	/*
	 * A record already there: renamed, another process's replaced, or
	 * one the library is closing (its waiters look again).
	 */
	if (!__atomic_load_n(&o->kind, __ATOMIC_RELAXED))
		count(1);
	else if (o->closing)
		pthread_cond_broadcast(&cleared);
	o->gen++;
	o->st_dev = st->st_dev;
	o->st_ino = st->st_ino;
	o->pid = devres__pid_now();
	o->closing = false;
	o->is_twin = false;
	__atomic_store_n(&o->lost, false, __ATOMIC_RELAXED);
	snprintf(o->name, sizeof(o->name), "%s", name ? name : "?");
	__atomic_store_n(&o->kind, (unsigned char)kind, __ATOMIC_RELEASE);
}

static void mark(int fd)
{
	struct f_owner_ex ow = { F_OWNER_PID, devres__pid_now() };

	(void)fcntl(fd, F_SETOWN_EX, &ow);
}

static bool marked(int fd)
{
	struct f_owner_ex ow;

	return !fcntl(fd, F_GETOWN_EX, &ow) && ow.type == F_OWNER_PID &&
	       ow.pid == devres__pid_now();
}

/*
 * The twin of @fd, recorded under @fd's kind and name, or -1: none once
 * kcmp() proved unusable, nor without a number or a slot for it. Under
 * the lock, inside the caller's open bracket.
 */
static int make_twin(int fd, enum devres__own_kind kind, const char *name,
		     const struct stat *st)
{
	int twin,
		state = __atomic_load_n(&devres__kcmp_state, __ATOMIC_RELAXED);
	struct own *t;

	if (state < 0)
		return -1;
	twin = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (twin < 0)
		return -1;
	t = slot((unsigned int)twin, true);
	/* Whether kcmp() may be used is asked once, of the first twin. */
	if (t && state == 0 && devres__same_file(fd, twin) == 0)
		__atomic_store_n(&devres__kcmp_state, 1, __ATOMIC_RELAXED);
	if (!t || __atomic_load_n(&devres__kcmp_state, __ATOMIC_RELAXED) < 0) {
		close(twin);
		return -1;
	}
	fill(t, kind, name, st);
	t->has_twin = false;
	t->is_twin = true;
	t->of = fd;
	/*
	 * Its mark: the file's owner (no signal follows: these files have
	 * no asynchronous notification), for the twin's close once the
	 * number is found lost (twin_close()).
	 */
	mark(twin);
	return twin;
}

/*
 * Records @fd, under the lock. Whether it made a twin, for the ledger,
 * which its caller counts once the lock is let go.
 */
static bool record(int fd, enum devres__own_kind kind, const char *name)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, true);
	bool renamed, twin = false;
	struct stat st;

	if (!o)
		return false;
	/* A record being closed is an older file's: replaced, not renamed. */
	renamed = __atomic_load_n(&o->kind, __ATOMIC_RELAXED) &&
		  o->pid == devres__pid_now() && !o->is_twin && !o->closing;
	if (fstat(fd, &st)) {
		st.st_dev = 0;
		st.st_ino = 0;
		st.st_mode = S_IFREG;
	}
	if (renamed && o->has_twin) {
		/* Its twin is the number's still: named again too. */
		struct own *t = slot((unsigned int)o->twin, false);

		if (t)
			snprintf(t->name, sizeof(t->name), "%s",
				 name ? name : "?");
	} else {
		o->has_twin = false;
		if ((st.st_dev || st.st_ino) && anonymous(fd, kind, &st)) {
			o->twin = make_twin(fd, kind, name, &st);
			o->has_twin = twin = o->twin >= 0;
		}
	}
	fill(o, kind, name, &st);
	return twin;
}

void devres__own_fd_add(int fd, enum devres__own_kind kind, const char *name)
{
	bool twin;

	if (fd < 0)
		return;
	own_lock();
	twin = record(fd, kind, name);
	own_unlock();
	devres__growtab_warn(&tab);
	if (twin)
		devres__ledger_add(DL_FDS, 1);
}

/*
 * Between the kernel's open and the record, the number would be nobody's
 * to the interposers: a close by hand there (a program closing every
 * number in a loop) would take it unseen. So the program's closing calls
 * and the library's opens exclude each other, Dekker's way, with two
 * counters and no lock on the calls' side: a call counts itself in
 * @in_call, then looks at @opening; an open counts itself in @opening,
 * then waits until @in_call holds only its own thread's calls. One of the
 * two sees the other (both sequentially consistent): the call steps out
 * and waits for the open to be recorded, or the open waits for the
 * call's system call to be over. The library's own close of a recorded
 * number is not counted: no open can be given that number meanwhile.
 */
static unsigned long in_call, opening;
static bool armed;
static TLS_FAST unsigned long my_calls, my_opens;
static TLS_FAST int open_cancel;

bool devres__own_fd_enter(void)
{
	if (closing_fd >= 0)
		return false;
	for (;;) {
		__atomic_add_fetch(&in_call, 1, __ATOMIC_SEQ_CST);
		my_calls++;
		/* An open of this thread's own (a log sink's): not waited. */
		if (!__atomic_load_n(&opening, __ATOMIC_SEQ_CST) || my_opens)
			return true;
		__atomic_sub_fetch(&in_call, 1, __ATOMIC_SEQ_CST);
		my_calls--;
		while (__atomic_load_n(&opening, __ATOMIC_SEQ_CST))
			sched_yield();
	}
}

void devres__own_fd_exit(bool entered)
{
	if (!entered)
		return;
	my_calls--;
	__atomic_sub_fetch(&in_call, 1, __ATOMIC_SEQ_CST);
}

void devres__own_fd_opening(void)
{
	/* Nothing cancels a thread inside, others waiting for it. */
	open_cancel = devres__cancel_off();
	my_opens++;
	/*
	 * The interposers' first look, not zero from the first open on: a
	 * call that saw zero is not counted, and only the first open of the
	 * process can meet one.
	 */
	if (!__atomic_exchange_n(&armed, true, __ATOMIC_SEQ_CST))
		count(1);
	__atomic_add_fetch(&opening, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&in_call, __ATOMIC_SEQ_CST) != my_calls)
		sched_yield();
}

void devres__own_fd_opened(int fd, enum devres__own_kind kind, const char *name)
{
	int saved = errno;

	devres__own_fd_add(fd, kind, name);
	__atomic_sub_fetch(&opening, 1, __ATOMIC_SEQ_CST);
	my_opens--;
	devres__cancel_restore(open_cancel);
	errno = saved;
}

/* Takes @o's record off, under the lock, and wakes the calls waiting. */
static void clear(struct own *o)
{
	if (!__atomic_load_n(&o->kind, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&o->kind, 0, __ATOMIC_RELAXED);
	o->closing = false;
	__atomic_store_n(&o->lost, false, __ATOMIC_RELAXED);
	count(-1);
	pthread_cond_broadcast(&cleared);
}

/*
 * The twin's record of @o, under the lock, or NULL: a record of this
 * process's that duplicates @o's number.
 */
static struct own *twin_of(int fd, struct own *o)
{
	struct own *t;

	if (!__atomic_load_n(&o->kind, __ATOMIC_RELAXED) || !o->has_twin)
		return NULL;
	t = slot((unsigned int)o->twin, false);
	if (!t || !__atomic_load_n(&t->kind, __ATOMIC_RELAXED) || !t->is_twin ||
	    t->of != fd || t->pid != o->pid)
		return NULL;
	return t;
}

static int own_close(int fd, int (*call)(void *), void *arg);
static int fd_call(void *arg);

/*
 * The twin of a number found lost: the number says no more which of the
 * two was closed behind the library's back, so the twin is closed only
 * if it still bears the library's mark (make_twin()), else forgotten.
 * A program that closes the twin's number by a raw call (it never had
 * it) and gives it to a file of its own marked the same way is not
 * told apart.
 */
static void twin_close(int twin)
{
	struct own *t = slot((unsigned int)twin, false);

	devres__ledger_add(DL_FDS, -1);
	if (marked(twin)) {
		own_close(twin, fd_call, &twin);
		return;
	}
	own_lock();
	clear(t);
	own_unlock();
}

void devres__own_fd_forget(int fd)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, false);
	int twin = -1;

	if (!o)
		return;
	own_lock();
	if (twin_of(fd, o))
		twin = o->twin;
	clear(o);
	own_unlock();
	if (twin >= 0)
		twin_close(twin);
}

/*
 * The slot of @fd, marked closing by the library, and its record's
 * generation in *@ret_gen; NULL if none.
 */
static struct own *closing(int fd, unsigned int *ret_gen)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, false);

	if (o) {
		own_lock();
		if (__atomic_load_n(&o->kind, __ATOMIC_RELAXED))
			o->closing = true;
		*ret_gen = o->gen;
		own_unlock();
	}
	return o;
}

/* Unless an open took the number meanwhile: its record stays. */
static void closed(struct own *o, unsigned int gen)
{
	if (o) {
		own_lock();
		if (o->gen == gen)
			clear(o);
		own_unlock();
	}
}

/*
 * The bracket of each of the library's own closes: @call(@arg) closes
 * @fd while its slot is marked closing, and this thread's calls on the
 * number pass the interposer (closedir() closes it inside libc, past the
 * interposer, where the mark changes nothing). errno as it was before.
 * close() is a cancellation point: a thread cancelled there left the
 * slot closing for good (every later call on the number waited for it)
 * and its caller's lock held (free_irq() closes the dispatcher's
 * descriptors): cancellation is off for the bracket.
 */
static int own_close(int fd, int (*call)(void *), void *arg)
{
	int saved = errno, ret, cancel = devres__cancel_off();
	unsigned int gen = 0;
	struct own *o = closing(fd, &gen);

	closing_fd = fd;
	ret = call(arg);
	closing_fd = -1;
	closed(o, gen);
	devres__cancel_restore(cancel);
	errno = saved;
	return ret;
}

static int fd_call(void *arg)
{
	return close(*(int *)arg);
}

static int file_call(void *arg)
{
	return fclose(arg);
}

static int dir_call(void *arg)
{
	return closedir(arg);
}

/*
 * Whether @fd is @o's open file still: by its twin where it has one,
 * else by the inode. *@ret_open: whether the number is open at all.
 */
static bool same(int fd, const struct own *o, bool *ret_open)
{
	struct stat st;
	int r = o->has_twin ? devres__same_file(fd, o->twin) : -1;

	*ret_open = fcntl(fd, F_GETFD) >= 0;
	if (r >= 0)
		return r == 0;
	return fstat(fd, &st) == 0 && st.st_dev == o->st_dev &&
	       st.st_ino == o->st_ino;
}

bool devres__own_fd_check(int fd)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, false);
	char name[sizeof(o->name)];
	int saved = errno, cancel;
	unsigned char kind = 0;
	struct own *t;
	bool open;

	/* Not recorded, or a parent's: nothing to compare with. */
	if (!o || !__atomic_load_n(&o->kind, __ATOMIC_ACQUIRE) ||
	    o->pid != devres__pid_now() || (!o->st_dev && !o->st_ino))
		return true;
	if (__atomic_load_n(&o->lost, __ATOMIC_ACQUIRE))
		return false;
	if (same(fd, o, &open)) {
		errno = saved;
		return true;
	}
	cancel = devres__cancel_off();
	own_lock();
	if (__atomic_load_n(&o->kind, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&o->lost, __ATOMIC_RELAXED)) {
		kind = __atomic_load_n(&o->kind, __ATOMIC_RELAXED);
		snprintf(name, sizeof(name), "%s", o->name);
		__atomic_store_n(&o->lost, true, __ATOMIC_RELEASE);
		/* Its twin's number: not refused to the program either. */
		t = twin_of(fd, o);
		if (t)
			__atomic_store_n(&t->lost, true, __ATOMIC_RELEASE);
	}
	own_unlock();
	devres__cancel_restore(cancel);
	if (kind)
		devres__warn(NULL, name,
			     "fd %d, %s, was closed behind the library's "
			     "back%s: no longer used",
			     fd, kinds[kind],
			     open ? " and now is another file" : "");
	errno = saved;
	return false;
}

int devres__own_fd_close(int fd)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, false);
	int saved = errno, twin = -1, ret;
	struct own *t;

	/* Closed behind the library's back: the number is not its own. */
	if (!devres__own_fd_check(fd)) {
		devres__own_fd_forget(fd);
		errno = saved;
		return -1;
	}
	if (o) {
		own_lock();
		t = o->pid == devres__pid_now() ? twin_of(fd, o) : NULL;
		if (t)
			twin = o->twin;
		own_unlock();
	}
	ret = own_close(fd, fd_call, &fd);
	/* Checked with the number above: the same open file still. */
	if (twin >= 0) {
		devres__ledger_add(DL_FDS, -1);
		own_close(twin, fd_call, &twin);
	}
	return ret;
}

int devres__own_file_close(FILE *f)
{
	return own_close(fileno(f), file_call, f);
}

int devres__own_dir_close(DIR *dir)
{
	return own_close(dirfd(dir), dir_call, dir);
}

/*
 * Under the lock: whether @fd is this process's own, waiting out a close
 * of it by the library; its kind and name copied for the WARN.
 */
static bool held(unsigned int fd, unsigned char *ret_kind, char *name,
		 size_t len)
{
	struct own *o = slot(fd, false);
	int pid = devres__pid_now();

	if (!o)
		return false;
	while (__atomic_load_n(&o->kind, __ATOMIC_RELAXED) && o->closing &&
	       o->pid == pid)
		own_wait();
	*ret_kind = __atomic_load_n(&o->kind, __ATOMIC_RELAXED);
	if (!*ret_kind || o->pid != pid ||
	    __atomic_load_n(&o->lost, __ATOMIC_RELAXED))
		return false;
	snprintf(name, len, "%s", o->name);
	return true;
}

/*
 * Under the lock, as a child's call closes @fd: a record of another
 * process (the child's copy of its parent's descriptor) is dropped, so
 * that a file the child opens at that number later is not taken for the
 * parent's (ioctl() refuses VFIO requests on the parent's).
 */
static void drop_inherited(unsigned int fd)
{
	struct own *o = slot(fd, false);

	if (o && __atomic_load_n(&o->kind, __ATOMIC_RELAXED) &&
	    o->pid != devres__pid_now())
		clear(o);
}

static void warn(const char *func, unsigned int fd, unsigned char kind,
		 const char *name)
{
	devres__warn(NULL, func,
		     "fd %u is %s of %s, the library's own: refused, it stays "
		     "open",
		     fd, kinds[kind], name);
}

bool devres__own_fd_maybe(int fd)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, false);

	/* The library's own close of it, on this thread: not a misuse. */
	return o && __atomic_load_n(&o->kind, __ATOMIC_ACQUIRE) &&
	       fd != closing_fd;
}

bool devres__own_fd_refused(const char *func, int fd, bool *entered)
{
	unsigned char kind;
	char name[sizeof(first.own[0].name)];
	int saved = errno, cancel;
	bool mine;

	/* A number the library does not hold, the common case: no lock. */
	if (!devres__own_fd_maybe(fd))
		return false;
	cancel = devres__cancel_off();
	own_lock();
	mine = held((unsigned int)fd, &kind, name, sizeof(name));
	if (!mine)
		drop_inherited((unsigned int)fd);
	own_unlock();
	devres__cancel_restore(cancel);
	if (mine) {
		/*
		 * Out of the bracket first: a log sink that calls back into
		 * the library may wait for a lock an open of its holds.
		 */
		devres__own_fd_exit(*entered);
		*entered = false;
		warn(func, (unsigned int)fd, kind, name);
	}
	errno = saved;
	return mine;
}

unsigned char devres__own_fd_kind(int fd, char *name, size_t len,
				  bool *ret_inherited)
{
	struct own *o = fd < 0 ? NULL : slot((unsigned int)fd, false);
	int saved = errno, cancel, pid = devres__pid_now();
	unsigned char kind;

	if (!o || !__atomic_load_n(&o->kind, __ATOMIC_ACQUIRE))
		return 0;
	cancel = devres__cancel_off();
	own_lock();
	/* A close of it by the library, in this process: its outcome. */
	while (__atomic_load_n(&o->kind, __ATOMIC_RELAXED) && o->closing &&
	       o->pid == pid && fd != closing_fd)
		own_wait();
	kind = __atomic_load_n(&o->kind, __ATOMIC_RELAXED);
	if (__atomic_load_n(&o->lost, __ATOMIC_RELAXED))
		kind = 0;
	if (kind) {
		snprintf(name, len, "%s", o->name);
		*ret_inherited = o->pid != pid;
	}
	own_unlock();
	devres__cancel_restore(cancel);
	errno = saved;
	return kind;
}

int devres__own_fd_next(unsigned int lo, unsigned int hi,
			struct devres__own_seen *ret_seen)
{
	unsigned char kind = 0;
	int saved = errno, cancel, found = -1;

	cancel = devres__cancel_off();
	own_lock();
	for (unsigned int fd = lo; devres__growtab_next(&tab, &fd, hi); fd++) {
		if (held(fd, &kind, ret_seen->name, sizeof(ret_seen->name))) {
			found = (int)fd;
			break;
		}
		/* A child's copy of its parent's, about to be closed. */
		drop_inherited(fd);
		if (fd >= hi) /* @hi may be UINT_MAX */
			break;
	}
	own_unlock();
	devres__cancel_restore(cancel);
	ret_seen->fd = found;
	ret_seen->kind = kind;
	errno = saved;
	return found;
}

void devres__own_fd_warn(const char *func, const struct devres__own_seen *s)
{
	int saved = errno;

	warn(func, (unsigned int)s->fd, s->kind, s->name);
	errno = saved;
}

/*
 * fork(): the lock is held across it, so the child's slots are whole.
 * They are kept: each names the parent as its process, and a call of the
 * child's on one goes through. No thread waits on the condition in the
 * child: made new.
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
	/* The other threads' calls and opens are not the child's. */
	in_call = my_calls;
	opening = my_opens;
	pthread_cond_init(&cleared, NULL);
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void own_fd_init(void)
{
	devres__atfork(DEVRES_FORK_OWN_FDS, fork_prepare, fork_parent,
		       fork_child);
}
