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
static struct devres__wait_member *members;
static struct devres__wait_keys *stacks;
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

/* A target more than a record holds: said, not silently dropped. */
static void add_target(struct devres__wait *w, uint64_t id, bool set,
		       bool others)
{
	for (int i = 0; i < w->nr; i++)
		if (w->target[i].set == set && w->target[i].id == id &&
		    w->target[i].others == others)
			return;
	if (w->nr == DEVRES_WAIT_TARGETS) {
		devres__warn(NULL, w->what,
			     "waits for more than %d threads or sets: the "
			     "others "
			     "are not in the record of waits",
			     DEVRES_WAIT_TARGETS);
		return;
	}
	w->target[w->nr].id = id;
	w->target[w->nr].others = others;
	w->target[w->nr++].set = set;
}

void devres__wait_target(struct devres__wait *w, uint64_t id)
{
	if (id)
		add_target(w, id, false, false);
}

void devres__wait_target_set(struct devres__wait *w, uint64_t key)
{
	if (key)
		add_target(w, key, true, false);
}

void devres__wait_target_others(struct devres__wait *w, uint64_t key)
{
	if (key)
		add_target(w, key, true, true);
}

/*
 * Whether the published stack @s holds @key now. Under the lock; its
 * thread changes it meanwhile, with relaxed stores (waits.h).
 */
static bool in_stack(const struct devres__wait_keys *s, uint64_t key)
{
	unsigned int n = __atomic_load_n(s->depth, __ATOMIC_RELAXED);

	if (n && key == s->any)
		return true;
	for (unsigned int i = 0; i < n; i++)
		if ((uintptr_t)__atomic_load_n(&s->keys[i], __ATOMIC_RELAXED) ==
		    key)
			return true;
	return false;
}

/* Whether thread @id is a member of set @key. Under the lock. */
static bool member(uint64_t key, uint64_t id)
{
	for (struct devres__wait_member *m = members; m; m = m->next)
		if (m->set == key && m->thread == id)
			return true;
	for (struct devres__wait_keys *s = stacks; s; s = s->next)
		if (s->thread == id && in_stack(s, key))
			return true;
	return false;
}

/*
 * Whether @t, a target of a wait of thread @waiter, names thread @id (or
 * a set it is a member of, @waiter itself not of its own others' set).
 */
static bool names(const struct devres__wait_target *t, uint64_t id,
		  uint64_t waiter)
{
	if (!t->set)
		return t->id == id;
	return !(t->others && id == waiter) && member(t->id, id);
}

/*
 * Pushes the records of thread @id not yet seen in this walk on @todo,
 * each with the walk's first thread on the way to it (@via; 0: @id).
 */
static void push_thread(uint64_t id, uint64_t via, struct devres__wait **todo)
{
	for (struct devres__wait *r = head; r; r = r->next) {
		if (r->waiter != id || r->gen == gen)
			continue;
		r->gen = gen;
		r->walk_via = via ? via : id;
		r->walk_next = *todo;
		*todo = r;
	}
}

/*
 * Pushes the records of the threads @t names not yet seen in this walk
 * onto the work list @todo: of a set, those of every member now.
 */
static void push_waits(const struct devres__wait_target *t, uint64_t waiter,
		       uint64_t via, struct devres__wait **todo)
{
	uint64_t skip = t->others ? waiter : 0;

	if (!t->set) {
		push_thread(t->id, via, todo);
		return;
	}
	for (struct devres__wait_member *m = members; m; m = m->next)
		if (m->set == t->id && m->thread != skip)
			push_thread(m->thread, via, todo);
	for (struct devres__wait_keys *s = stacks; s; s = s->next)
		if (s->thread != skip && in_stack(s, t->id))
			push_thread(s->thread, via, todo);
}

/* Whether a record reached from @w's targets waits for @me. */
static const struct devres__wait *walk(const struct devres__wait *w,
				       uint64_t me)
{
	struct devres__wait *todo = NULL;

	gen++;
	for (int i = 0; i < w->nr; i++)
		push_waits(&w->target[i], me, 0, &todo);
	while (todo) {
		struct devres__wait *r = todo;

		todo = r->walk_next;
		for (int i = 0; i < r->nr; i++) {
			if (names(&r->target[i], me, r->waiter))
				return r;
			push_waits(&r->target[i], r->waiter, r->walk_via,
				   &todo);
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
	members = NULL;
	head_pid = pid;
}

/* A leaf: held across fork(), free on both sides (docs/fork.md). */
__attribute__((constructor)) static void waits_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_WAITS, &lock);
}

/* devres__wait_begin(), and devres__wait_check() when !@record. */
static int begin(struct devres__wait *w, bool record)
{
	const struct devres__wait *r = NULL;
	uint64_t me = devres__wait_self();
	bool self = false;

	w->on = false;
	if (!w->nr)
		return 0;
	pthread_mutex_lock(&lock);
	fork_check();
	for (int i = 0; i < w->nr; i++)
		self |= names(&w->target[i], me, me);
	if (!self)
		r = walk(w, me);
	if (!self && !r && record) {
		w->waiter = me;
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
			next |= names(&w->target[i], r->waiter, me);
		snprintf(w->loop, sizeof(w->loop), "%s -> %s%s -> this thread",
			 w->what, next ? "" : "... -> ", r->what);
		w->via = r->walk_via;
	} else if (self) {
		snprintf(w->loop, sizeof(w->loop), "%s -> this thread",
			 w->what);
	}
	pthread_mutex_unlock(&lock);
	return self || r ? -EDEADLK : 0;
}

int devres__wait_begin(struct devres__wait *w)
{
	return begin(w, true);
}

int devres__wait_check(struct devres__wait *w)
{
	return begin(w, false);
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

int devres__wait_records(uint64_t id)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	fork_check();
	for (const struct devres__wait *r = head; r; r = r->next)
		n += r->waiter == id;
	pthread_mutex_unlock(&lock);
	return n;
}

void devres__wait_join(struct devres__wait_member *m, uint64_t key)
{
	m->on = false;
	if (!key)
		return;
	m->set = key;
	m->thread = devres__wait_self();
	pthread_mutex_lock(&lock);
	fork_check();
	m->pid = head_pid;
	m->prev = NULL;
	m->next = members;
	if (members)
		members->prev = m;
	members = m;
	m->on = true;
	pthread_mutex_unlock(&lock);
}

void devres__wait_leave(struct devres__wait_member *m)
{
	if (!m->on)
		return;
	pthread_mutex_lock(&lock);
	if (m->pid == head_pid) {
		if (m->prev)
			m->prev->next = m->next;
		else if (members == m)
			members = m->next;
		if (m->next)
			m->next->prev = m->prev;
	}
	pthread_mutex_unlock(&lock);
	m->on = false;
}

void devres__wait_keys_publish(struct devres__wait_keys *k)
{
	pthread_mutex_lock(&lock);
	fork_check();
	if (!k->on) {
		k->prev = NULL;
		k->next = stacks;
		if (stacks)
			stacks->prev = k;
		stacks = k;
		k->on = true;
	}
	pthread_mutex_unlock(&lock);
}

void devres__wait_keys_withdraw(struct devres__wait_keys *k)
{
	pthread_mutex_lock(&lock);
	if (k->on) {
		if (k->prev)
			k->prev->next = k->next;
		else if (stacks == k)
			stacks = k->next;
		if (k->next)
			k->next->prev = k->prev;
		k->on = false;
	}
	pthread_mutex_unlock(&lock);
}

bool devres__wait_keys_call(uint64_t thread,
			    void (*fn)(struct devres__wait_keys *k, void *arg),
			    void *arg)
{
	struct devres__wait_keys *s;

	pthread_mutex_lock(&lock);
	for (s = stacks; s && s->thread != thread; s = s->next)
		;
	if (s)
		fn(s, arg);
	pthread_mutex_unlock(&lock);
	return s != NULL;
}

/*
 * A child's other threads are gone, and glibc gives their stacks (and
 * thread-local storage) to the child's new threads: left listed, a new
 * thread's publish would link a node already on the list.
 */
void devres__wait_keys_forked(void)
{
	uint64_t me = devres__wait_self();
	struct devres__wait_keys *s = stacks, *next, *kept = NULL;

	/* The other threads' storage is still mapped here: only unlinked. */
	for (; s; s = next) {
		next = s->next;
		if (!s->on || s->thread != me)
			continue;
		s->prev = NULL;
		s->next = kept;
		if (kept)
			kept->prev = s;
		kept = s;
	}
	stacks = kept;
}

/*
 * The exported form, for the compat headers (which cannot hold a record
 * of their own: its layout is the library's): a few records and
 * memberships a thread, in its thread-local storage, the newest ended
 * first. A thread in more nested waits or memberships than that records
 * no more, with one WARN at the limit (its waits go on unrecorded). A
 * thread that ends with memberships left (its function called
 * pthread_exit()) is taken out of its sets by a destructor of its own, so
 * that the list never points into a gone thread's storage; its records
 * cannot be left, their waits being no cancellation points.
 */
#define NESTED 4
#define WAIT_DEPTH_MAX (1 << 16)

static TLS_FAST struct devres__wait nested[NESTED];
static TLS_FAST int depth;
static TLS_FAST char loop_said[sizeof(nested[0].loop)];
static TLS_FAST struct devres__wait_member joined[NESTED];
static TLS_FAST int joins;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool have_key;

static void left_joined(void *arg)
{
	(void)arg;
	while (joins > 0)
		devres_wait_leave();
}

static void make_key(void)
{
	have_key = !pthread_key_create(&key, left_joined);
}

/* One WARN at a nesting limit: the wait or membership is not recorded. */
static void too_deep(const char *func, const char *what)
{
	devres__warn(NULL, func,
		     "%s: more than %d nested in one thread: not in the "
		     "record of waits",
		     what, NESTED);
}

uint64_t devres_wait_id(void)
{
	return devres__wait_id_new();
}

uint64_t devres_wait_self(void)
{
	return devres__wait_self();
}

void devres_wait_adopt(uint64_t id)
{
	if (id)
		devres__wait_adopt(id);
}

/* devres_wait_begin() and _begin_set(): one target, by id or by key. */
static int begin_one(uint64_t id, bool set, const char *what, const char *func)
{
	struct devres__wait *w;

	if (devres__arg_bad(NULL, what, func, "what"))
		return -EINVAL;
	if (depth >= NESTED) {
		/*
		 * Unrecorded, as documented; a leak of begins (ends skipped
		 * in a loop) stops here rather than running the int past
		 * INT_MAX: the wait goes on, uncounted.
		 */
		if (depth >= WAIT_DEPTH_MAX) {
			devres__warn(NULL, func,
				     "%d waits begun without an end: not "
				     "counted",
				     WAIT_DEPTH_MAX);
			return 0;
		}
		if (depth++ == NESTED)
			too_deep(func, what);
		return 0;
	}
	w = &nested[depth];
	devres__wait_init(w, what);
	if (set)
		devres__wait_target_set(w, id);
	else
		devres__wait_target(w, id);
	if (devres__wait_begin(w)) {
		memcpy(loop_said, w->loop, sizeof(loop_said));
		return -EDEADLK;
	}
	depth++;
	return 0;
}

int devres_wait_begin(uint64_t thread, const char *what)
{
	return begin_one(thread, false, what, __func__);
}

int devres_wait_begin_set(uintptr_t set, const char *what)
{
	return begin_one(set, true, what, __func__);
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

void devres_wait_join(uintptr_t set)
{
	if (joins >= NESTED) {
		if (joins++ == NESTED)
			too_deep(__func__, "a membership");
		return;
	}
	pthread_once(&key_once, make_key);
	/* Without the destructor, a thread's end would leave it listed. */
	if (set && have_key && !pthread_getspecific(key) &&
	    pthread_setspecific(key, joined))
		set = 0;
	if (!have_key)
		set = 0;
	devres__wait_join(&joined[joins++], set);
}

void devres_wait_leave(void)
{
	if (!joins)
		return;
	if (--joins < NESTED)
		devres__wait_leave(&joined[joins]);
}
