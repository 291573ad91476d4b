/* SPDX-License-Identifier: MIT */
/*
 * What the files of src/irq share: a line, a handler (action), the
 * dispatcher, and the locking rules between them.
 *
 * Locks, in the order they nest:
 *   lines_lock (rwlock, line.c)  the table of lines; readers look a line
 *                                up and take its lock before dropping it
 *   line->lock                   everything in struct irq_line and the
 *                                thread state of its actions
 *   disp->lock (leaf)            a dispatcher's set of lines to replay
 * irq_lock (dispatch.c) guards the dispatcher pointer and the count of
 * handlers; it is never held together with another of these locks.
 *
 * No lock is held while a handler runs or while anyone waits for one, so
 * that a handler may call anything (request, free, enable, devm_*) except
 * what waits for itself, which is caught and WARNed.
 */
#ifndef DEVRES_IRQ_INTERNAL_H
#define DEVRES_IRQ_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <devres/irq.h>
#include "base/subsys.h"

/* Line numbers are 1 .. IRQ_LINES_MAX - 1. */
#define IRQ_LINES_MAX 1024
#define IRQ_WORD_BITS (8 * (int)sizeof(unsigned long))

/* The kernel's unhandled-interrupt detector: this many out of a window. */
#define IRQ_SPURIOUS_WINDOW 100000u
#define IRQ_SPURIOUS_LIMIT 99900u

enum irq_line_kind {
	LINE_EVENTFD,	       /* our own eventfd, non-blocking */
	LINE_EVENTFD_ATTACHED, /* the caller's eventfd (VFIO), maybe blocking */
	LINE_UIO,	       /* 4-byte counts, re-enabled by writing 1 */
};

struct irq_dispatcher;

struct irq_action {
	irq_handler_t handler;
	irq_handler_t thread_fn;
	void *dev_id;
	const char *name;
	unsigned long flags;
	struct irq_line *line;
	struct irq_action *next;
	/* Its place in the line's order of requests (line->requests). */
	unsigned long seq;
	/* The thread of a threaded handler; its state is under line->lock. */
	pthread_t thread;
	pthread_cond_t wake;
	bool has_thread;
	bool thread_pending; /* woken, its thread function not started */
	bool stop;	     /* its thread is asked to exit */
	bool self_reap;	     /* freed from its own thread function */
	bool thread_gone;    /* its thread function ended the thread */
	bool dead;	     /* unlinked while its line was being dispatched */
	/* Freed by a managed release during a dispatch on another thread. */
	bool unlink_due;
	bool wake_req;	    /* dispatcher only: the handler said WAKE_THREAD */
	bool warned_thread; /* WAKE_THREAD without a thread function, WARNed */
	uint64_t wid;	    /* its thread's id in the record of waits */
	/* Its thread in its line's set of waits while its function runs. */
	struct devres__wait_member member;
	struct irq_action *zombie_next;
	/* A devm_ handler's node, under line->lock; see devres__owner. */
	struct devres__owner owner;
};

struct irq_line {
	pthread_mutex_t lock;
	/* Broadcast when running, threads_active or mutators fall. */
	pthread_cond_t idle;
	int irq;
	int fd;
	int pid; /* the process that made it: it is inert in a child */
	/* A backend's vector (irq__line_claim()): its owner, and its name. */
	const void *owner;
	const char *owner_name;
	enum irq_line_kind kind;
	char *name;
	struct irq_action *actions;
	/* Freed inside this line's own dispatch; reaped after it. */
	struct irq_action *zombies;
	/* The dispatcher the fd is registered with, NULL when none. */
	struct irq_dispatcher *disp;
	int refs; /* attached handlers and calls in progress */
	/* Destroyed while referenced (no handler): freed at the last put. */
	bool doomed;
	int nr_actions; /* handlers on the list */
	/*
	 * Requests made on the line: a delivery calls the handlers requested
	 * before it began, not those its handlers request (each would call
	 * the next in the same delivery, for ever).
	 */
	unsigned long requests;
	int unlink_due;	    /* of those, freed and not yet unlinked */
	int depth;	    /* disable depth */
	int mutators;	    /* threads waiting to change the list */
	int threads_active; /* thread functions woken and not finished */
	int oneshot_masked; /* of those, oneshot ones: the line is masked */
	bool running;	    /* the dispatcher is in the primary handlers */
	int unmasking;	    /* unmask callbacks running (unlocked) */
	bool pending;	    /* an interrupt came while it could not run */
	bool hw_masked;	    /* UIO, level: read and not yet re-enabled */
	int unmask_fd;	    /* a level line's unmask eventfd, else -1 */
	/* A masked line's unmask, and what it is given; NULL for none. */
	irq_unmask_t unmask_fn;
	void *unmask_ctx;
	unsigned int count, unhandled;
	/* irq_line_raise_wait(): reads of the fd that took an assertion, and
	 * how many of them the last finished delivery covered. */
	unsigned long reads, delivered;
};

/* The dispatcher's polling state (poll.c); its thread's alone. */
struct irq_poll {
	long long last_ns;  /* when the last wait returned events, 0: never */
	long long last_gap; /* and how long after the wait before it did */
	unsigned int shift; /* back-off: polls let pass are 2^shift - 1 */
	unsigned int skip;  /* of those, still to let pass */
};

/* What polling did, in every dispatcher of the process (atomics). */
struct irq_poll_stats {
	unsigned long polls;	 /* polls started */
	unsigned long hits;	 /* ended by an event, not preempted */
	unsigned long misses;	 /* ended by the window, nothing came */
	unsigned long preempted; /* ended because the thread was preempted */
	unsigned long skipped;	 /* waits asleep at once, backing off */
	unsigned long sleeps;	 /* waits asleep, for whatever reason */
};

struct irq_dispatcher {
	pthread_t thread;
	int epfd;
	int wakefd;
	pthread_mutex_t lock;
	bool stop;
	bool self_stopped; /* stopped from its own thread: it frees itself */
	uint64_t wid;	   /* its thread's id in the record of waits */
	struct irq_poll poll;
	unsigned long replay[IRQ_LINES_MAX / IRQ_WORD_BITS];
	/*
	 * Under @lock: the lines in the epoll set and their fds, so that a
	 * set lost (its epoll or wake eventfd closed behind the library's
	 * back) is made again with them (irq__disp_add(), _del()).
	 */
	unsigned long in_set[IRQ_LINES_MAX / IRQ_WORD_BITS];
	int set_fd[IRQ_LINES_MAX];
};

/* The line whose handlers this thread is running, primary or threaded. */
extern HIDDEN TLS_FAST struct irq_line *irq__cur_line;
/* The line whose primary handlers this (dispatcher) thread is running. */
extern HIDDEN TLS_FAST struct irq_line *irq__running_line;
/* The action whose thread function this thread is running. */
extern HIDDEN TLS_FAST struct irq_action *irq__cur_action;
/* The masked line whose unmask callback this thread is running. */
extern HIDDEN TLS_FAST struct irq_line *irq__unmasking;
/* This thread is ending inside an unmask callback, which WARNed for it. */
extern HIDDEN TLS_FAST bool irq__unmask_ended;

/*
 * An unmask callback of @line runs on another thread (or a second one on
 * this thread): waiting for the line to be idle waits for it too, but
 * not for the callback this thread is in.
 */
static inline bool irq__unmask_busy(const struct irq_line *line)
{
	return line->unmasking > (irq__unmasking == line ? 1 : 0);
}

/*
 * The set, in the record of waits, of the threads in an unmask callback
 * of @line: whichever thread ends a delivery runs it, so a wait for the
 * line names the set, not a thread. Not the line's own set (its threads
 * in a thread function), whose waits are refused from its callbacks.
 */
static inline uintptr_t irq__unmask_set(const struct irq_line *line)
{
	return (uintptr_t)line + 1;
}

/*
 * Into @w, a wait for @line to be idle: the unmask callbacks running on
 * other threads, when any does.
 */
static inline void irq__unmask_targets(const struct irq_line *line,
				       struct devres__wait *w)
{
	if (irq__unmask_busy(line))
		devres__wait_target_others(w, irq__unmask_set(line));
}

/* line.c */
HIDDEN struct irq_line *irq__line_lock(int irq);
HIDDEN struct irq_line *irq__line_get(int irq);
/* A doomed line out of the table, its last reference gone: freed. */
HIDDEN void irq__line_free(struct irq_line *line);
/*
 * Drops a reference, the line locked: true when it was the last one of a
 * doomed line, which the caller frees once it has unlocked it. Every drop
 * goes through here (irq__line_put() is the unlocked one).
 */
HIDDEN bool irq__line_unref(struct irq_line *line);
HIDDEN void irq__line_put(struct irq_line *line);
HIDDEN int irq__line_read(struct irq_line *line);
/* write() that is no cancellation point: callers hold a line's lock. */
HIDDEN ssize_t irq__write_nocancel(int fd, const void *buf, size_t len);
HIDDEN void irq__line_drain(struct irq_line *line);
/* true: as irq__line_unref(), for the unmask callback's reference. */
HIDDEN bool irq__line_unmask(struct irq_line *line);

/* manage.c */
HIDDEN bool irq__line_done(struct irq_line *line);
HIDDEN bool irq__args_bad(struct device *dev, unsigned int irq,
			  irq_handler_t handler, irq_handler_t thread_fn,
			  unsigned long flags, const char *name,
			  const void *dev_id, const char *func);
/*
 * Attaches a handler; with @owner (a managed request), @owner->node goes
 * on @owner->dev in the same hold of the line's lock.
 */
HIDDEN int irq__request(unsigned int irq, irq_handler_t handler,
			irq_handler_t thread_fn, unsigned long flags,
			const char *name, void *dev_id,
			const struct devres__owner *owner);
HIDDEN const void *irq__free(unsigned int irq, void *dev_id, bool managed,
			     const char *func);
/*
 * Who owns the managed handler of @dev_id on line @irq, into @h: false
 * when none is managed.
 */
HIDDEN bool irq__owner(unsigned int irq, const void *dev_id,
		       struct devres__hand *h);
/* Frees the handler @node owns, if it still does; a release path. */
HIDDEN void irq__free_owned(unsigned int irq, const void *node);
/* The handlers a managed release marked during a delivery, unlinked. */
HIDDEN void irq__unlink_due(struct irq_line *line);
/* The handlers left on a claimed line its owner releases: freed, WARNed. */
HIDDEN void irq__free_left(unsigned int irq, const void *owner);
HIDDEN bool irq__note_interrupt(struct irq_line *line, irqreturn_t ret);
HIDDEN void irq__finish(struct irq_action *a);

/* dispatch.c */
HIDDEN int irq__create_thread(pthread_t *thr, void *(*fn)(void *), void *arg);
HIDDEN int irq__get_dispatcher(struct irq_dispatcher **ret_disp);
HIDDEN void irq__put_dispatcher(void);
HIDDEN void irq__replay(struct irq_line *line);
/*
 * Line @irq's @fd into @d's epoll set, or out of it: 0 or -errno. Each
 * first checks the set is the library's still, and makes it again if
 * not (dispatch.c).
 */
HIDDEN int irq__disp_add(struct irq_dispatcher *d, int irq, int fd);
HIDDEN void irq__disp_del(struct irq_dispatcher *d, int irq, int fd);
HIDDEN int irq__thread_start(struct irq_action *a);
/*
 * Stops and joins a freed handler's thread: true. With @may_leave, when
 * that thread waits, through the record of waits, for this one (its
 * thread function in a call that waits for the caller), it is not joined
 * (one WARN): asked to stop and left to finish the handler itself once
 * its function returns, false.
 */
HIDDEN bool irq__thread_stop(struct irq_action *a, bool may_leave);

/* poll.c */
/* The polling window in ns, 0 for none; tests change it. */
extern HIDDEN long irq__poll_window_ns;
extern HIDDEN struct irq_poll_stats irq__poll_stats;
/* Reads DEVRES_IRQ_POLL_US; called when a dispatcher starts. */
HIDDEN void irq__poll_setup(void);
/* epoll_wait() of the dispatcher's set, polling first where it pays. */
/*
 * The longest the dispatcher sleeps: an idle one wakes once a second to
 * check that its epoll set and wake eventfd are the library's still.
 */
#define IRQ_IDLE_MS 1000
HIDDEN int irq__poll_wait(struct irq_dispatcher *d, struct epoll_event *ev,
			  int max);

#endif /* DEVRES_IRQ_INTERNAL_H */
