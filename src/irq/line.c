// SPDX-License-Identifier: MIT
/*
 * Interrupt lines: an fd that becomes readable when the line is asserted.
 * Our own lines are eventfds (as VFIO signals interrupts); an attached fd is
 * the caller's eventfd or a UIO device, which delivers a 4-byte count and is
 * re-enabled by writing 1.
 *
 * Lines live in a table indexed by number. Whoever looks a line up takes
 * its lock (or a reference) before dropping the table's read lock, so a
 * line is never freed under anyone: irq_line_destroy() takes the table's
 * write lock, then the line's lock, and refuses while references remain.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "internal.h"

static pthread_rwlock_t lines_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct irq_line *lines[IRQ_LINES_MAX];
/* Numbers are handed out round-robin, so a stale one reads as a hole. */
static int next_irq = 1;

static bool valid_number(long irq)
{
	return irq > 0 && irq < IRQ_LINES_MAX;
}

/*
 * A line made before fork() belongs to the parent: its fd is shared with
 * the parent's, its handlers and threads run there. In the child it keeps
 * its number (never reused) and is not a line: every call on it fails as
 * on a number never handed out, and nothing of it is released.
 */
static struct irq_line *lookup(int irq)
{
	struct irq_line *line = lines[irq];

	if (line && line->pid != devres__pid_now())
		return NULL;
	return line;
}

/* Read-held across fork(): no line is added or removed then. */
__attribute__((constructor)) static void lines_atfork(void)
{
	devres__atfork_rwlock(DEVRES_FORK_IRQ_LINES, &lines_lock);
}

struct irq_line *irq__line_lock(int irq)
{
	struct irq_line *line = NULL;

	if (!valid_number(irq))
		return NULL;
	pthread_rwlock_rdlock(&lines_lock);
	line = lookup(irq);
	if (line)
		pthread_mutex_lock(&line->lock);
	pthread_rwlock_unlock(&lines_lock);
	return line;
}

struct irq_line *irq__line_get(int irq)
{
	struct irq_line *line = irq__line_lock(irq);

	if (line) {
		line->refs++;
		pthread_mutex_unlock(&line->lock);
	}
	return line;
}

/*
 * Every reference to a line is dropped here. A drop that left a doomed
 * line (destroyed while referenced, out of the table) with none was the
 * only one that could free it: each drop that did not ask (an unmask
 * callback's, irq_line_raise_wait()'s, a delivery's) left such a line
 * and its fd behind for good.
 */
bool irq__line_unref(struct irq_line *line)
{
	line->refs--;
	pthread_cond_broadcast(&line->idle);
	return line->doomed && !line->refs;
}

/*
 * Only the reference: a put once counted an unmask callback as ended
 * too, so that after a free, waits for the line no longer waited for a
 * callback running on another thread.
 */
/* The reference of a caller that holds the line's lock; unlocks it. */
static void put_unlock(struct irq_line *line)
{
	bool last = irq__line_unref(line);

	pthread_mutex_unlock(&line->lock);
	if (last)
		irq__line_free(line);
}

void irq__line_put(struct irq_line *line)
{
	pthread_mutex_lock(&line->lock);
	put_unlock(line);
}

/*
 * read(), write() and poll() are cancellation points, and the line's
 * calls make them with the line's lock (or the line table's) held: a
 * thread cancelled there (free_irq() of a line's last handler drains it)
 * ended holding that lock, and every later call on the line waited for
 * ever. No call of the library is a cancellation point: cancellation is
 * off around each, and a request acts after the call.
 */
ssize_t irq__write_nocancel(int fd, const void *buf, size_t len)
{
	int cancel = devres__cancel_off();
	ssize_t n = write(fd, buf, len);

	devres__cancel_restore(cancel);
	return n;
}

static ssize_t read_nocancel(int fd, void *buf, size_t len)
{
	int cancel = devres__cancel_off();
	ssize_t n = read(fd, buf, len);

	devres__cancel_restore(cancel);
	return n;
}

static int poll_nocancel(struct pollfd *p)
{
	int cancel = devres__cancel_off();
	int n = poll(p, 1, 0);

	devres__cancel_restore(cancel);
	return n;
}

/*
 * Consumes one assertion. Returns 1 when there was one, 0 when there was
 * none, -1 when the fd is gone (end of file or an error): it is then taken
 * out of the dispatcher, or it would be reported readable for ever.
 */
int irq__line_read(struct irq_line *line)
{
	struct pollfd p = { .fd = line->fd, .events = POLLIN };
	uint64_t v64;
	uint32_t v32;
	ssize_t n;

	/* Only our own eventfd is non-blocking: ask the others first. */
	if (line->kind != LINE_EVENTFD) {
		if (poll_nocancel(&p) <= 0)
			return 0;
		if (!(p.revents & POLLIN))
			return p.revents & (POLLHUP | POLLERR | POLLNVAL) ? -1
									  : 0;
	}
	if (line->kind == LINE_UIO) {
		n = read_nocancel(line->fd, &v32, sizeof(v32));
		if (n == (ssize_t)sizeof(v32)) {
			line->hw_masked = true;
			line->reads++;
			return 1;
		}
	} else {
		n = read_nocancel(line->fd, &v64, sizeof(v64));
		if (n == (ssize_t)sizeof(v64)) {
			/* A level line's source masked itself (VFIO INTx). */
			if (line->unmask_fd >= 0 || line->unmask_fn)
				line->hw_masked = true;
			line->reads++;
			return 1;
		}
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

/* Drops whatever the line holds: interrupts nobody is there to handle. */
void irq__line_drain(struct irq_line *line)
{
	for (int i = 0; i < 64 && irq__line_read(line) > 0; i++)
		;
}

TLS_FAST struct irq_line *irq__unmasking;
TLS_FAST bool irq__unmask_ended;

/* An unmask callback in progress, for its end. */
struct unmasking {
	struct irq_line *line;
	struct devres__wait_member member;
};

/* The unmask callback ended its thread: the line is left as it was. */
static void unmask_ended(void *arg)
{
	struct unmasking *u = arg;
	struct irq_line *line = u->line;

	devres__wait_leave(&u->member);
	irq__unmasking = NULL;
	irq__unmask_ended = true;
	devres__warn(NULL, "irq_line_attach_masked",
		     "irq %d: its unmask callback ended the thread", line->irq);
	pthread_mutex_lock(&line->lock);
	line->unmasking--;
	put_unlock(line);
}

/*
 * A masked line's callback is the program's code: run with the line's
 * lock held, a call it made on the line (enable_irq(), free_irq(), a
 * release of its device's handlers...) waited for that lock for ever, and
 * so did a callback that ended its thread. It runs unlocked instead, the
 * line kept by a reference: each caller of irq__line_done() reads nothing
 * it read before the call. hw_masked is cleared first, so that a second
 * unmask meanwhile does not call it again for the same interrupt. Counted
 * in unmasking, so that what waits for the line to be idle
 * (synchronize_irq(), free_irq(), irq_line_raise_wait()) waits for it as
 * it did for the lock. The callback may have freed the line's handlers
 * and destroyed it: true, as irq__line_unref(), when the callback's
 * reference was the last.
 */
static bool unmask_unlocked(struct irq_line *line)
{
	struct irq_line *outer = irq__unmasking;
	struct unmasking u = { .line = line };

	line->hw_masked = false;
	line->refs++;
	line->unmasking++;
	pthread_mutex_unlock(&line->lock);
	irq__unmasking = line;
	/* A wait for the line waits for it (irq__unmask_targets()). */
	devres__wait_join(&u.member, irq__unmask_set(line));
	pthread_cleanup_push(unmask_ended, &u);
	line->unmask_fn(line->unmask_ctx);
	pthread_cleanup_pop(0);
	devres__wait_leave(&u.member);
	irq__unmasking = outer;
	pthread_mutex_lock(&line->lock);
	line->unmasking--;
	return irq__line_unref(line);
}

/*
 * A UIO device masks itself at each interrupt; writing 1 lets it fire. A
 * level line (VFIO INTx) is unmasked through its own eventfd.
 */
bool irq__line_unmask(struct irq_line *line)
{
	uint64_t one64 = 1;
	uint32_t one = 1;

	if (!line->hw_masked)
		return false;
	if (line->unmask_fn)
		return unmask_unlocked(line);
	if (line->unmask_fd >= 0) {
		if (irq__write_nocancel(line->unmask_fd, &one64,
					sizeof(one64)) ==
		    (ssize_t)sizeof(one64))
			line->hw_masked = false;
		return false;
	}
	if (line->kind != LINE_UIO)
		return false;
	if (irq__write_nocancel(line->fd, &one, sizeof(one)) ==
	    (ssize_t)sizeof(one))
		line->hw_masked = false;
	return false;
}

/* Behind the fault point, so that a sweep fails it as any acquisition. */
static int add_line(int fd, enum irq_line_kind kind, const char *name)
{
	struct irq_line *line = NULL;
	char *copy = NULL;

	if (!devres__should_fail()) {
		line = calloc(1, sizeof(*line));
		copy = strdup(name ? name : "irq");
	}
	if (!line || !copy) {
		free(line);
		free(copy);
		return -ENOMEM;
	}
	pthread_mutex_init(&line->lock, NULL);
	pthread_cond_init(&line->idle, NULL);
	line->fd = fd;
	line->unmask_fd = -1;
	line->pid = devres__pid_now();
	line->kind = kind;
	line->name = copy;
	pthread_rwlock_wrlock(&lines_lock);
	for (int i = 1; i < IRQ_LINES_MAX; i++) {
		int n = next_irq;

		next_irq = n % (IRQ_LINES_MAX - 1) + 1;
		if (!lines[n]) {
			lines[n] = line;
			line->irq = n;
			break;
		}
	}
	pthread_rwlock_unlock(&lines_lock);
	if (line->irq)
		return line->irq;
	pthread_cond_destroy(&line->idle);
	pthread_mutex_destroy(&line->lock);
	free(copy);
	free(line);
	devres__warn(NULL,
		     kind == LINE_EVENTFD ? "irq_line_create"
					  : "irq_line_attach_fd",
		     "all %d line numbers are in use", IRQ_LINES_MAX - 1);
	return -ENOSPC;
}

/* What the library's own descriptors of line @name are called. */
static const char *own_name(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "irq line '%s'", name ? name : "irq");
	return buf;
}

static void close_fd(int fd)
{
	devres__own_fd_close(fd);
	devres__ledger_add(DL_FDS, -1);
}

int irq_line_create(const char *name)
{
	int fd, rc;
	char what[40];

	if (devres__opt_bad(NULL, name, __func__, "name"))
		return -EINVAL;
	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	devres__own_fd_opened(fd, DEVRES_OWN_IRQ_LINE,
			      own_name(what, sizeof(what), name));
	if (fd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	rc = add_line(fd, LINE_EVENTFD, name);
	if (rc < 0)
		close_fd(fd);
	return rc;
}

static bool is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/thread-self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

int irq_line_attach_fd(int fd, const char *name)
{
	int nfd, rc;
	char what[40];

	if (devres__opt_bad(NULL, name, __func__, "name"))
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	devres__own_fd_opened(nfd, DEVRES_OWN_IRQ_ATTACHED,
			      own_name(what, sizeof(what), name));
	if (nfd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	rc = add_line(nfd, is_eventfd(nfd) ? LINE_EVENTFD_ATTACHED : LINE_UIO,
		      name);
	if (rc < 0)
		close_fd(nfd);
	return rc;
}

int irq_line_attach_level(int fd, int unmask_fd, const char *name)
{
	struct irq_line *line;
	int nfd, rc;
	char what[40];

	if (devres__opt_bad(NULL, name, __func__, "name"))
		return -EINVAL;
	if (unmask_fd < 0 || !is_eventfd(unmask_fd))
		return -EBADF;
	rc = irq_line_attach_fd(fd, name);
	if (rc < 0)
		return rc;
	if (devres__should_fail_fd()) {
		errno = EMFILE;
		nfd = -1;
	} else {
		devres__own_fd_opening();
		nfd = fcntl(unmask_fd, F_DUPFD_CLOEXEC, 3);
		devres__own_fd_opened(nfd, DEVRES_OWN_IRQ_UNMASK,
				      own_name(what, sizeof(what), name));
	}
	if (nfd < 0) {
		int err = -errno;

		(void)irq_line_destroy(rc);
		return err;
	}
	devres__ledger_add(DL_FDS, 1);
	/* Not yet requested, so not yet dispatched: no lock is needed. */
	line = irq__line_get(rc);
	if (!line || line->kind != LINE_EVENTFD_ATTACHED) {
		if (line)
			irq__line_put(line);
		close_fd(nfd);
		(void)irq_line_destroy(rc);
		return -EBADF;
	}
	pthread_mutex_lock(&line->lock);
	line->unmask_fd = nfd;
	pthread_mutex_unlock(&line->lock);
	irq__line_put(line);
	return rc;
}

int irq_line_attach_masked(int fd, irq_unmask_t unmask, void *ctx,
			   const char *name)
{
	struct irq_line *line;
	int rc;

	if (!unmask)
		return -EINVAL;
	rc = irq_line_attach_fd(fd, name);
	if (rc < 0)
		return rc;
	/* Not yet requested, so not yet dispatched: no one else reads these. */
	line = irq__line_get(rc);
	if (!line) {
		(void)irq_line_destroy(rc);
		return -EBADF;
	}
	pthread_mutex_lock(&line->lock);
	line->unmask_fn = unmask;
	line->unmask_ctx = ctx;
	pthread_mutex_unlock(&line->lock);
	irq__line_put(line);
	return rc;
}

int irq_line_raise(int irq)
{
	uint64_t one = 1;
	struct irq_line *line;
	int rc = 0;

	if (!valid_number(irq))
		return -EINVAL;
	/* The read lock keeps the fd open while it is written. */
	pthread_rwlock_rdlock(&lines_lock);
	line = lookup(irq);
	if (!line)
		rc = -EINVAL;
	else if (line->kind == LINE_UIO)
		rc = -EOPNOTSUPP;
	else if (irq__write_nocancel(line->fd, &one, sizeof(one)) < 0)
		rc = -errno;
	pthread_rwlock_unlock(&lines_lock);
	return rc;
}

/* A delivery of @line, or a thread function or unmask it led to, runs. */
static bool in_flight(const struct irq_line *line)
{
	return line->running || line->threads_active || irq__unmask_busy(line);
}

int irq_line_raise_wait(int irq)
{
	uint64_t one = 1;
	struct irq_line *line = irq__line_get(irq);
	struct devres__wait w;
	unsigned long target;
	int rc = 0, cancel;

	if (!line)
		return -EINVAL;
	devres__wait_init(&w, __func__);
	/* The dispatcher cannot wait for itself, nor a thread for itself. */
	if (irq__running_line || irq__cur_line == line) {
		irq__line_put(line);
		devres__warn(NULL, __func__,
			     "irq %d: from a handler it would wait for", irq);
		return -EDEADLK;
	}
	/* An unmask callback may run on either. */
	if (irq__unmasking) {
		irq__line_put(line);
		devres__warn(NULL, __func__,
			     "irq %d: from the unmask callback of irq %d, "
			     "which "
			     "may run on the thread it would wait for",
			     irq, irq__unmasking->irq);
		return -EDEADLK;
	}
	pthread_mutex_lock(&line->lock);
	/*
	 * Recorded before the raise, a wait for the dispatcher and for the
	 * line's set (its threads in a thread function, those woken later
	 * too): one that would close a loop raises nothing.
	 */
	if (line->disp)
		devres__wait_target(&w, line->disp->wid);
	devres__wait_target_set(&w, (uintptr_t)line);
	irq__unmask_targets(line, &w);
	if (devres__wait_begin(&w)) {
		put_unlock(line);
		devres__warn(NULL, __func__,
			     "irq %d: a handler of it waits for this thread "
			     "(%s): not raised",
			     irq, w.loop);
		return -EDEADLK;
	}
	/*
	 * Written under the lock the dispatcher reads under: the first read
	 * after this one is the one that takes this assertion.
	 */
	target = line->reads + 1;
	if (line->kind == LINE_UIO)
		rc = -EOPNOTSUPP;
	else if (!devres__own_fd_check(line->fd))
		rc = -EBADF;
	else if (irq__write_nocancel(line->fd, &one, sizeof(one)) < 0)
		rc = -errno;
	cancel = devres__cancel_off();
	while (!rc && (line->delivered < target || in_flight(line))) {
		struct timespec ts;

		/*
		 * Undeliverable now: it stays pending, delivered later. Not
		 * while this assertion, taken, is in flight (its handlers or
		 * the thread functions they woke): a handler that disables
		 * its line or frees itself goes on running, and the caller
		 * must not see it still running once this returns. A handler
		 * still running for an earlier one is not waited for.
		 */
		if ((!line->nr_actions || line->depth) &&
		    !(line->reads >= target && in_flight(line))) {
			rc = -EAGAIN;
			break;
		}
		/* Disabling wakes nobody: look again every 10 ms. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&line->idle, &line->lock, &ts);
	}
	devres__cancel_restore(cancel);
	put_unlock(line);
	devres__wait_end(&w);
	return rc;
}

int irq__line_claim(int irq, const void *owner, const char *name)
{
	struct irq_line *line = irq__line_lock(irq);

	if (!line)
		return -EINVAL;
	line->owner = owner;
	line->owner_name = name;
	pthread_mutex_unlock(&line->lock);
	return 0;
}

int irq__line_handlers(int irq)
{
	struct irq_line *line = irq__line_lock(irq);
	int n;

	if (!line)
		return 0;
	n = line->nr_actions;
	pthread_mutex_unlock(&line->lock);
	return n;
}

/*
 * Removes line @irq if it is @owner's (NULL: a line nobody claimed). Its
 * number alone is no identity: a line destroyed and its number handed to
 * another owner must not be destroyed by the first one's release.
 *
 * Only an attached handler keeps a line. A reference without one is a
 * call in progress (a free, a disable, a synchronize, a wait, a request
 * not yet attached) or a handler freed from its own thread function, not
 * yet returned: the line leaves the table now, marked doomed, and the last
 * put frees it. A request that then locks it finds it doomed and fails as
 * it would had the destroy come first; the others end as they would on a
 * line with no handler. Refusing instead (-EBUSY, "handlers attached")
 * made a destroy beside a free_irq() of nothing fail with a WARN that is
 * not true, an outcome neither order of the two calls gives.
 */
static int destroy(int irq, const void *owner, const char *func)
{
	struct irq_line *line = NULL;
	const char *claimed = NULL;
	bool doomed = false, busy = false;

	if (valid_number(irq)) {
		pthread_rwlock_wrlock(&lines_lock);
		line = lookup(irq);
		if (line) {
			pthread_mutex_lock(&line->lock);
			busy = line->nr_actions > 0;
			if (line->owner != owner) {
				claimed = line->owner_name ? line->owner_name
							   : "another owner";
			} else if (!busy) {
				lines[irq] = NULL;
				doomed = line->doomed = line->refs > 0;
			}
			pthread_mutex_unlock(&line->lock);
		}
		pthread_rwlock_unlock(&lines_lock);
	}
	if (doomed)
		return 0;
	if (owner && (!line || claimed))
		return -ENOENT; /* not this owner's (any more): untouched */
	if (!line) {
		devres__warn(NULL, func, "irq %d is not a line", irq);
		return -EINVAL;
	}
	if (claimed) {
		devres__warn(NULL, func,
			     "irq %d is an interrupt vector of %s: it goes "
			     "with "
			     "the device's binding, not destroyed",
			     irq, claimed);
		return -EPERM;
	}
	if (busy) {
		devres__warn(NULL, func, "irq %d: handlers attached", irq);
		return -EBUSY;
	}
	irq__line_free(line);
	return 0;
}

void irq__line_free(struct irq_line *line)
{
	close_fd(line->fd);
	if (line->unmask_fd >= 0)
		close_fd(line->unmask_fd);
	pthread_cond_destroy(&line->idle);
	pthread_mutex_destroy(&line->lock);
	free(line->name);
	free(line);
}

int irq__line_destroy_claimed(int irq, const void *owner)
{
	/* Its handlers go first: the line goes with its owner. */
	if (owner && valid_number(irq))
		irq__free_left((unsigned int)irq, owner);
	return destroy(irq, owner, "irq_line_destroy");
}

int irq_line_destroy(int irq)
{
	return destroy(irq, NULL, __func__);
}
