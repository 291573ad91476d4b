// SPDX-License-Identifier: MIT
/*
 * The record of waits between threads (waits.h): a list of the waits in
 * progress, each in its waiter's stack frame, under one mutex that
 * nothing else is taken under. A walk from a new wait's targets follows
 * every record of each thread reached (a thread in a wait that runs
 * callbacks inline may have two), each record once: the walk ends.
 *
 * A child of fork() has only the forking thread: the records of the
 * parent's other threads are in stacks nobody runs. The list is stamped
 * with the process that made it, and one of another process is dropped
 * whole at the next begin; its lock is held across fork() like the
 * library's others.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "waits.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct devres__wait *head;
static int head_pid;
/*
 * 64 bits: a record keeps the walk that last reached it, and a 32-bit
 * count would come round to it again after 2^32 waits, which a
 * long-running process makes; the walk would then skip the record and
 * miss a loop through it. One per wait, 2^64 is out of reach.
 */
static uint64_t gen;
static uint64_t next_id = 1; /* atomic */
static TLS_FAST uint64_t self_id;

uint64_t devres__wait_id_new(void)
{
	return __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
}

uint64_t devres__wait_self(void)
{
	if (!self_id)
		self_id = devres__wait_id_new();
	return self_id;
}

void devres__wait_adopt(uint64_t id)
{
	self_id = id;
}

void devres__wait_init(struct devres__wait *w, const char *what)
{
	memset(w, 0, sizeof(*w));
	w->what = what;
}

void devres__wait_target(struct devres__wait *w, uint64_t id)
{
	if (!id || w->nr == DEVRES_WAIT_TARGETS)
		return;
	for (int i = 0; i < w->nr; i++)
		if (!w->target[i].by_pt && w->target[i].id == id)
			return;
	w->target[w->nr++].id = id;
}

void devres__wait_target_pt(struct devres__wait *w, pthread_t pt)
{
	if (w->nr == DEVRES_WAIT_TARGETS)
		return;
	w->target[w->nr].pt = pt;
	w->target[w->nr++].by_pt = true;
}

/* Whether @t names the thread that made record @r, or @me (pt @mpt). */
static bool names(const struct devres__wait_target *t, uint64_t me,
		  pthread_t mpt)
{
	return t->by_pt ? pthread_equal(t->pt, mpt) : t->id == me;
}

/*
 * Pushes the records of thread @id not yet seen in this walk onto the
 * work list @todo; each keeps the record it was reached from (@from) in
 * walk_next's stead once popped, for the loop's description.
 */
static void push_waits(const struct devres__wait_target *t,
		       struct devres__wait **todo)
{
	for (struct devres__wait *r = head; r; r = r->next) {
		if (!names(t, r->waiter, r->waiter_pt) || r->gen == gen)
			continue;
		r->gen = gen;
		r->walk_next = *todo;
		*todo = r;
	}
}

/* Whether a record reached from @w's targets waits for @me. */
static const struct devres__wait *walk(const struct devres__wait *w,
				       uint64_t me, pthread_t mpt)
{
	struct devres__wait *todo = NULL;

	gen++;
	for (int i = 0; i < w->nr; i++)
		push_waits(&w->target[i], &todo);
	while (todo) {
		struct devres__wait *r = todo;

		todo = r->walk_next;
		for (int i = 0; i < r->nr; i++) {
			if (names(&r->target[i], me, mpt))
				return r;
			push_waits(&r->target[i], &todo);
		}
	}
	return NULL;
}

/* Drops a list a parent process left: its threads are not in this one. */
static void fork_check(void)
{
	int pid = devres__pid_now();

	if (head_pid == pid)
		return;
	head = NULL;
	head_pid = pid;
}

/* A leaf: held across fork(), free on both sides (docs/fork.md). */
__attribute__((constructor)) static void waits_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_WAITS, &lock);
}

int devres__wait_begin(struct devres__wait *w)
{
	const struct devres__wait *r = NULL;
	uint64_t me = devres__wait_self();
	pthread_t mpt = pthread_self();
	bool self = false;

	w->on = false;
	if (!w->nr)
		return 0;
	for (int i = 0; i < w->nr; i++)
		self |= names(&w->target[i], me, mpt);
	pthread_mutex_lock(&lock);
	fork_check();
	if (!self)
		r = walk(w, me, mpt);
	if (!self && !r) {
		w->waiter = me;
		w->waiter_pt = mpt;
		w->pid = head_pid;
		w->prev = NULL;
		w->next = head;
		if (head)
			head->prev = w;
		head = w;
		w->on = true;
	} else if (r) {
		bool next = false;

		for (int i = 0; i < w->nr; i++)
			next |= names(&w->target[i], r->waiter, r->waiter_pt);
		snprintf(w->loop, sizeof(w->loop), "%s -> %s%s -> this thread",
			 w->what, next ? "" : "... -> ", r->what);
	} else {
		snprintf(w->loop, sizeof(w->loop), "%s -> this thread",
			 w->what);
	}
	pthread_mutex_unlock(&lock);
	return w->on ? 0 : -EDEADLK;
}

void devres__wait_end(struct devres__wait *w)
{
	if (!w->on)
		return;
	pthread_mutex_lock(&lock);
	/* Made before a fork: the child's list no longer holds it. */
	if (w->pid == head_pid) {
		if (w->prev)
			w->prev->next = w->next;
		else if (head == w)
			head = w->next;
		if (w->next)
			w->next->prev = w->prev;
	}
	pthread_mutex_unlock(&lock);
	w->on = false;
}

int devres__wait_for(struct devres__wait *w, const char *what, uint64_t id)
{
	devres__wait_init(w, what);
	devres__wait_target(w, id);
	return devres__wait_begin(w);
}

/*
 * The exported form, for the compat headers (which cannot hold a record
 * of their own: its layout is the library's): a few records a thread, in
 * its thread-local storage, the newest ended first. A thread in more
 * nested waits than that records no more (its waits go on unrecorded).
 */
#define NESTED 4
#define WAIT_DEPTH_MAX (1 << 16)

static TLS_FAST struct devres__wait nested[NESTED];
static TLS_FAST int depth;
static TLS_FAST char loop_said[sizeof(nested[0].loop)];

int devres_wait_begin(pthread_t thread, const char *what)
{
	struct devres__wait *w;

	if (devres__arg_bad(NULL, what, __func__, "what"))
		return -EINVAL;
	if (depth >= NESTED) {
		/*
		 * Unrecorded, as documented; a leak of begins (ends skipped
		 * in a loop) stops here rather than running the int past
		 * INT_MAX: the wait goes on, uncounted.
		 */
		if (depth >= WAIT_DEPTH_MAX) {
			devres__warn(NULL, __func__,
				     "%d waits begun without an end: not "
				     "counted",
				     WAIT_DEPTH_MAX);
			return 0;
		}
		depth++;
		return 0;
	}
	w = &nested[depth];
	devres__wait_init(w, what);
	devres__wait_target_pt(w, thread);
	if (devres__wait_begin(w)) {
		memcpy(loop_said, w->loop, sizeof(loop_said));
		return -EDEADLK;
	}
	depth++;
	return 0;
}

void devres_wait_end(void)
{
	if (!depth) {
		devres__warn(NULL, __func__, "no wait begun: nothing done");
		return;
	}
	if (--depth < NESTED)
		devres__wait_end(&nested[depth]);
}

const char *devres_wait_loop(void)
{
	return loop_said;
}
