// SPDX-License-Identifier: MIT
/*
 * Revocable resources: a handle that outlives its device binding, and a
 * managed node that revokes the resource when the binding lets go.
 *
 * The handle is reference counted and never waits for anything when a
 * reference is dropped: the binding's reference is dropped by the node's
 * release itself, after the resource is released. So a put from inside
 * another resource's release (the chain that deadlocked Rust-for-Linux's
 * Devres in 2025: a devres callback drops the last reference of an object
 * whose own Devres then waits for a callback that cannot run) has nothing
 * to wait for.
 *
 * Each thread keeps the handles it is accessing (for the misuse check of
 * revocable_access_end()) and the depth of its accesses. The depth is
 * bounded: an access beyond MAX_DEPTH is refused with a WARN, so that
 * every access in progress is recorded and an end that matches none is
 * always caught (an unchecked end would corrupt a reader count, and a
 * later revocation would wait for it forever). A revocation by a thread inside one of its own accesses cannot
 * wait for readers (it is one): it is queued on the thread and finished
 * when its outermost access ends. A revocation by another thread whose
 * reader waits, inside its access, for that thread (through the library's
 * record of waits) is handed to that reader and finished likewise.
 *
 * The caller's handle is a generation-checked one (base/handle.h): the
 * revocable lives in a slot never given back to malloc, so a handle used
 * after its last revocable_put() is refused with a WARN, even once its
 * slot holds a new revocable, and never reads freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <devres/devres.h>
#include <devres/revocable.h>
#include "base/subsys.h"
#include "rcu.h"

/* How deep one thread's accesses may nest. */
#define MAX_DEPTH 64

struct revocable {
	void *res; /* the resource, NULL once revoked */
	struct rcu_readers readers;
	bool urcu; /* the read side serving this handle */
	bool done; /* released; the binding's reference is gone */
	int pid;   /* the process that made it */
	int refs;
	void (*release)(void *res);
	void *revoked;		/* the resource, from revocation to release */
	struct revocable *next; /* on its revoker's pending list */
	/*
	 * Queued: its chain's late checks (DMA debug) wait for its release,
	 * and a reference on the chain's device for them.
	 */
	struct devres__late_hold *late;
	struct device *late_dev;
};

/* The node's data: the revocable, which outlives it. */
struct revocable_node {
	struct revocable *h;
};

static struct devres__handles revocables = {
	.tag = 3,
	.size = sizeof(struct revocable),
};

/* References a handle takes; one more is refused (revocable_get()). */
#define REVOCABLE_REFS_MAX (1 << 24)

static TLS_FAST unsigned int depth;
static TLS_FAST void *held[MAX_DEPTH]; /* the handles */
static TLS_FAST struct revocable *pending;
/*
 * This thread's accesses, published in the record of waits (base/waits.h)
 * at its first access: a revocation waits for the set of the threads in
 * an access of its handle (of any handle with urcu-bp, whose grace period
 * waits for every reader), so that a reader that waits, through waits of
 * the library, for the thread revoking is seen. The read side changes
 * depth and held[] with relaxed stores, no lock, no fence. @handed: the
 * revocations whose revoker this thread's access would have deadlocked,
 * finished when its outermost access ends.
 */
struct reader {
	struct devres__wait_keys keys;
	struct revocable *handed;
};
static TLS_FAST struct reader me;
/* This thread's accesses are ended at its exit (thread_end()). */
static TLS_FAST bool exit_armed;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

/* Returns NULL, for handle_ok(). */
static struct revocable *handle_bad(const struct revocable *h,
				    const struct revocable *r, bool stale,
				    const char *func)
{
	if (devres__arg_bad(NULL, h, func, "handle"))
		return NULL;
	if (r)
		devres__warn(NULL, func, "revocable %p belongs to process %d",
			     (const void *)h, r->pid);
	else
		devres__warn(NULL, func, "%p is not a live revocable%s",
			     (const void *)h,
			     stale ? " (put for the last time)" : "");
	return NULL;
}

/*
 * The revocable of @h, a live handle of this process. In a child of
 * fork() the parent's are refused: their readers and their release are
 * the parent's.
 */
static inline struct revocable *handle_ok(const struct revocable *h,
					  const char *func)
{
	bool stale;
	struct revocable *r = devres__handle_obj(&revocables, h, &stale);

	if (likely(r && r->pid == devres__pid_now()))
		return r;
	return handle_bad(h, r, stale, func);
}

static void put(struct revocable *h, const char *func);

/* The revocation is done: the resource released, the binding's ref gone. */
static void finished(struct revocable *h)
{
	struct devres__late_hold *late = h->late;
	struct device *dev = h->late_dev;

	h->late = NULL;
	h->late_dev = NULL;
	devres__ledger_add(DL_REVOCABLES, -1);
	__atomic_store_n(&h->done, true, __ATOMIC_RELEASE);
	put(h, "revocable_put");
	if (late) {
		devres__late_unhold(late);
		put_device(dev);
	}
}

/*
 * A revocation queued behind this thread's access, or handed to a reader
 * on another thread: the chain releasing @dev keeps its late checks for
 * the end of the release. A device in its own last release is not kept
 * past it: its checks run at the chain's end.
 */
static void hold_late(struct revocable *h, struct device *dev)
{
	if (!devres__ref_if_alive(dev))
		return;
	h->late = devres__late_hold();
	if (h->late)
		h->late_dev = dev;
	else
		put_device(dev);
}

/* Lets go of what hold_late() took, the revocation not handed over. */
static void unhold_late(struct revocable *h)
{
	struct devres__late_hold *late = h->late;
	struct device *dev = h->late_dev;

	if (!late)
		return;
	h->late = NULL;
	h->late_dev = NULL;
	devres__late_unhold(late);
	put_device(dev);
}

/* The key of "every thread in an access", for urcu-bp's grace period. */
static const char any_access;

static inline void set_depth(unsigned int n)
{
	__atomic_store_n(&depth, n, __ATOMIC_RELAXED);
}

static inline void set_held(unsigned int i, void *h)
{
	__atomic_store_n(&held[i], h, __ATOMIC_RELAXED);
}

/* The set of threads whose accesses a revocation of @h waits for. */
static uintptr_t readers_key(const struct revocable *h)
{
	return h->urcu ? (uintptr_t)&any_access
		       : (uintptr_t)devres__handle_of(&revocables, h);
}

static bool hand_over(struct revocable *h, const struct devres__wait *w);

/* How a release that ends its thread is answered; see finish(). */
struct finishing {
	struct revocable *h;
	bool queued; /* run at the end of an access, not by the binding's release */
};

static void release_ended(void *arg)
{
	const struct finishing *f = arg;

	/* The binding's release chain WARNs for a node whose release ends. */
	if (f->queued)
		devres__warn(NULL, "revocable_access_end",
			     "%p: the release of a revocation ended its "
			     "thread: "
			     "the revocation is finished for it",
			     devres__handle_of(&revocables, f->h));
	finished(f->h);
}

/*
 * Waits out the readers, releases the resource, drops the binding's ref.
 * A release that ends its thread (pthread_exit(), a cancellation point
 * reached with a cancellation pending) still has the revocation finished
 * on the way out: left undone, the handle kept the binding's reference for
 * ever (each revocable_put() of the caller's last one WARNed that it was
 * not theirs, and the handle was never freed) and the ledger counted it.
 * The wait for readers is in the record of waits; one that would close a
 * loop is handed over instead (hand_over()).
 */
static void finish(struct revocable *h, bool queued, struct device *dev)
{
	struct finishing f = { h, queued };
	struct devres__wait w;
	int saved = errno;

	devres__wait_init(&w, "revocable_revoke");
	devres__wait_target_set(&w, readers_key(h));
	if (devres__wait_begin(&w)) {
		/* Handed over: the chain's checks wait for the reader too. */
		if (dev)
			hold_late(h, dev);
		if (hand_over(h, &w)) {
			errno = saved;
			return;
		}
		unhold_late(h);
	}
	rcu_sync(h->urcu, &h->readers);
	devres__wait_end(&w);
	if (h->release) {
		pthread_cleanup_push(release_ended, &f);
		h->release(h->revoked);
		pthread_cleanup_pop(0);
	}
	finished(h);
	errno = saved;
}

/* Whether a revoker handed this thread a revocation (hand()). */
static inline bool handed(void)
{
	return __atomic_load_n(&me.handed, __ATOMIC_RELAXED) != NULL;
}

/* Pushes @arg on the handed list of the reader whose stack @k is. */
static void hand(struct devres__wait_keys *k, void *arg)
{
	struct reader *r = container_of(k, struct reader, keys);
	struct revocable *h = arg;

	h->next = __atomic_load_n(&r->handed, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&r->handed, &h->next, h, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/*
 * A revocation whose wait for readers would close a loop (@w refused): a
 * reader of it waits, through waits of the library, for this thread, and
 * cannot end its access before this thread's callback returns. The
 * revocation is handed to that reader, which finishes it when its
 * outermost access ends: new accesses already fail. False when no such
 * reader is found (then the revocation waits, as before).
 */
static bool hand_over(struct revocable *h, const struct devres__wait *w)
{
	const void *handle = devres__handle_of(&revocables, h);

	if (!devres__wait_keys_call(w->via, hand, h))
		return false;
	devres__warn(NULL, "revocable_revoke",
		     "%p: a reader of it waits for this thread (%s): "
		     "released when that reader's access ends",
		     handle, w->loop);
	return true;
}

static void run_pending(void)
{
	struct revocable *h;

	/* Handed by a revoker this thread's access kept waiting: its turn. */
	if (handed()) {
		h = __atomic_exchange_n(&me.handed, NULL, __ATOMIC_ACQUIRE);
		while (h) {
			struct revocable *next = h->next;

			h->next = pending;
			pending = h;
			h = next;
		}
	}
	/* A release may revoke more (its own accesses end first): loop. */
	while ((h = pending)) {
		pending = h->next;
		finish(h, true, NULL);
	}
}

/*
 * A thread that ends (returns, pthread_exit(), is cancelled) inside
 * accesses would hold its readers for ever: a later revocation of those
 * handles, on any thread, would wait for it without end, and revocations
 * it queued would never be finished. Its accesses are ended here, at its
 * exit, with one WARN, and its queued revocations finished.
 */
static void thread_end(void *arg)
{
	unsigned int n = depth;

	(void)arg;
	exit_armed = false;
	if (n)
		devres__warn(NULL, "revocable_try_access",
			     "%p: a thread ended inside %u access%s: ended for "
			     "it at its exit",
			     held[n - 1], n, n == 1 ? "" : "es");
	while (depth) {
		struct revocable *h =
			devres__handle_obj(&revocables, held[depth - 1], NULL);

		set_depth(depth - 1);
		/* liburcu-bp forgets an exiting thread's read side itself. */
		if (h && !h->urcu && h->pid == devres__pid_now())
			rcu_exit(false, &h->readers);
	}
	/* Off the record first: nothing is handed to it after this. */
	devres__wait_keys_withdraw(&me.keys);
	if (pending || handed())
		run_pending();
}

static void exit_key_make(void)
{
	exit_key_ok = pthread_key_create(&exit_key, thread_end) == 0;
}

/* Once per thread, at its first access; false when no key could be had. */
static bool arm_exit(void)
{
	pthread_once(&exit_once, exit_key_make);
	if (!exit_key_ok || pthread_setspecific(exit_key, &exit_key))
		return false;
	exit_armed = true;
	me.keys.thread = devres__wait_self();
	me.keys.any = (uintptr_t)&any_access;
	me.keys.keys = held;
	me.keys.depth = &depth;
	devres__wait_keys_publish(&me.keys);
	return true;
}

/*
 * The node's release: runs once, when the binding lets go. In a child of
 * fork() it is reached only by a release pass of the parent's device that
 * a callback's child came back into: the readers it would wait for are
 * the parent's threads, which never end their accesses in the child, and
 * the release is the parent's. Refused, with the handle's WARN.
 */
static void revocable_revoke(struct device *dev, void *data)
{
	struct revocable *h = ((struct revocable_node *)data)->h;

	if (unlikely(h->pid != devres__pid_now())) {
		devres__warn(NULL, "devm_revocable_create",
			     "revocable %p belongs to process %d: not revoked",
			     (const void *)devres__handle_of(&revocables, h),
			     h->pid);
		return;
	}
	h->revoked = __atomic_exchange_n(&h->res, NULL, __ATOMIC_SEQ_CST);
	if (depth) {
		hold_late(h, dev);
		h->next = pending;
		pending = h;
		return;
	}
	finish(h, false, dev);
}

struct revocable *devm_revocable_create(struct device *dev, void *res,
					void (*release)(void *res))
{
	struct revocable_node *node;
	struct revocable *h;
	void *handle = NULL;
	bool used, full = false;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return NULL;
	if (unlikely(!res)) {
		devres__warn(dev, __func__, "NULL resource");
		return NULL;
	}
	if (devres__opt_bad(dev, (const void *)release, __func__, "release"))
		return NULL;
	node = devres_alloc_named(revocable_revoke, sizeof(*node), GFP_KERNEL,
				  "devm_revocable_create");
	if (!node)
		return NULL;
	/* The handle outlives the node: its own allocation, its own fault. */
	if (!devres__should_fail()) {
		handle = devres__handle_new(&revocables, (void **)&h, &used);
		full = !handle && errno == ENOSPC;
	}
	if (!handle) {
		devres_free(node);
		if (full)
			devres__warn(dev, __func__,
				     "1048576 revocables live at once: "
				     "refused");
		return NULL;
	}
	if (used)
		memset(h, 0, sizeof(*h));
	h->res = res;
	h->release = release;
	h->refs = 1;
	h->urcu = devres__rcu_urcu;
	h->pid = devres__pid_now();
	node->h = h;
	devres__ledger_add(DL_REVOCABLES, 1);
	if (unlikely(__atomic_load_n(&devres__log_on, __ATOMIC_RELAXED))) {
		char buf[40];

		devres__print(DEVRES_LOG_DEBUG,
			      "%s: revocable %p (read side %s)",
			      devres__dev_label(dev, buf, sizeof(buf)), handle,
			      devres__rcu_name(h->urcu));
	}
	/*
	 * Published: from here another thread may revoke it. Refused (the
	 * device released meanwhile, or its list held up the stack): the
	 * handle goes unseen, @res stays the caller's.
	 */
	if (!devres__record(dev, node, __func__)) {
		devres__ledger_add(DL_REVOCABLES, -1);
		devres__handle_del(&revocables, h);
		devres_free(node);
		return NULL;
	}
	return handle;
}

/*
 * What a reference change found, told after the handles' lock: the count
 * changed (REF_LAST: it dropped the last one), or it was refused because
 * the count is at zero (the last put made, the handle going: REF_GONE),
 * at the limit (REF_FULL), or is the binding's alone (REF_BINDING).
 */
enum ref_change {
	REF_DONE,
	REF_LAST,
	REF_GONE,
	REF_FULL,
	REF_BINDING
};

/*
 * One more reference of @r, unless none is left: a count at zero is a
 * handle its last put is freeing, which no get brings back.
 */
static enum ref_change ref_get(struct revocable *r)
{
	int old = __atomic_load_n(&r->refs, __ATOMIC_RELAXED);

	do {
		if (old <= 0)
			return REF_GONE;
		/* At the limit: a leak of references, refused, not wrapped. */
		if (unlikely(old >= REVOCABLE_REFS_MAX))
			return REF_FULL;
	} while (!__atomic_compare_exchange_n(&r->refs, &old, old + 1, false,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return REF_DONE;
}

/* One reference of @r less, unless none is left or it is the binding's. */
static enum ref_change ref_put(struct revocable *r)
{
	int old = __atomic_load_n(&r->refs, __ATOMIC_ACQUIRE);

	do {
		if (old <= 0)
			return REF_GONE;
		/* The last reference is the binding's until it is released. */
		if (old == 1 && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			return REF_BINDING;
	} while (!__atomic_compare_exchange_n(&r->refs, &old, old - 1, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return old == 1 ? REF_LAST : REF_DONE;
}

/* The WARN of a refused change, the free of the last put; no lock held. */
static void ref_changed(struct revocable *r, enum ref_change c,
			const char *func)
{
	const void *h = devres__handle_of(&revocables, r);

	switch (c) {
	case REF_LAST:
		devres__handle_del(&revocables, r);
		break;
	case REF_GONE:
		devres__warn(NULL, func,
			     "%p is not a live revocable (put for the last "
			     "time)",
			     h);
		break;
	case REF_FULL:
		devres__warn(NULL, func, "%p: %d references: refused", h,
			     REVOCABLE_REFS_MAX);
		break;
	case REF_BINDING:
		devres__warn(NULL, func,
			     "%p: the binding's reference is not yours", h);
		break;
	case REF_DONE:
		break;
	}
}

/*
 * The handle's revocable looked up and its count changed by @change in
 * one hold of the handles' lock, under which slots are freed and taken:
 * a get or put that finds the handle live cannot act on it once its last
 * put has made its count zero, nor on a newer revocable in its slot.
 * Returns what the change found; -1 for a handle that is not a live
 * revocable of this process (WARNed).
 */
static int ref_change(struct revocable *h,
		      enum ref_change (*change)(struct revocable *),
		      const char *func)
{
	enum ref_change c = REF_DONE;
	struct revocable *r;
	bool stale, ours;

	devres__handles_lock();
	r = devres__handle_obj(&revocables, h, &stale);
	ours = r && r->pid == devres__pid_now();
	if (ours)
		c = change(r);
	devres__handles_unlock();
	if (!ours) {
		handle_bad(h, r, stale, func);
		return -1;
	}
	ref_changed(r, c, func);
	return (int)c;
}

struct revocable *revocable_get(struct revocable *h)
{
	/* A pointer no handle has is not given back: the caller would use it. */
	if (!h || devres__arg_bad(NULL, h, __func__, "handle"))
		return NULL;
	/*
	 * A stale handle, or one its last put is freeing: the caller's value
	 * back, no reference taken (WARNed).
	 */
	return ref_change(h, ref_get, __func__) == REF_FULL ? NULL : h;
}

/* Drops a reference of @h, a live revocable of this process. */
static void put(struct revocable *h, const char *func)
{
	ref_changed(h, ref_put(h), func);
}

void revocable_put(struct revocable *h)
{
	if (h)
		(void)ref_change(h, ref_put, __func__);
}

void *revocable_try_access(struct revocable *h)
{
	struct revocable *r = handle_ok(h, __func__);
	void *res;

	if (!r)
		return NULL;
	if (unlikely(!exit_armed) && !arm_exit()) {
		devres__warn(NULL, __func__,
			     "%p: no thread-exit hook for this thread: refused",
			     (void *)h);
		return NULL;
	}
	if (unlikely(depth >= MAX_DEPTH)) {
		devres__warn(NULL, __func__,
			     "%p: %u accesses nested in this thread: no more",
			     (void *)h, depth);
		return NULL;
	}
	rcu_enter(r->urcu, &r->readers);
	res = __atomic_load_n(&r->res, __ATOMIC_SEQ_CST);
	if (unlikely(!res)) {
		rcu_exit(r->urcu, &r->readers);
		return NULL;
	}
	set_held(depth, h);
	set_depth(depth + 1);
	return res;
}

/* Forgets an access through @h that is not this thread's innermost one. */
static bool untrack(const struct revocable *h)
{
	int i;

	for (i = (int)depth - 1; i >= 0 && held[i] != h; i--)
		;
	if (i < 0)
		return false;
	for (; i + 1 < (int)depth; i++)
		set_held((unsigned int)i, held[i + 1]);
	return true;
}

/*
 * The copy of the forking thread's record in the child. Its accesses stay
 * recorded, so that each one's end gets its WARN (docs/fork.md), but the
 * read side this thread holds for them with liburcu-bp is its own, and
 * left held it would make every grace period of the child (a revocation
 * of its own handles, from any of its threads) wait for this thread. The
 * revocations it queued are the parent's: their readers and release are
 * the parent's, which finishes them; run here, the parent's resource was
 * released in the child at this thread's exit. Accesses of an older
 * ancestor's handles were let go at that ancestor's fork.
 */
void devres__revocable_forked(int parent)
{
	pending = NULL;
	me.handed = NULL;
	if (!exit_armed)
		me.keys.on = false;
	devres__wait_keys_forked();
	for (unsigned int i = 0; i < depth; i++) {
		struct revocable *r =
			devres__handle_obj(&revocables, held[i], NULL);

		if (r && r->urcu && r->pid == parent)
			rcu_exit(true, &r->readers);
	}
}

void revocable_access_end(struct revocable *h)
{
	unsigned int top = depth - 1;
	struct revocable *r;

	if (unlikely(!depth)) {
		devres__warn(NULL, __func__, "%p: no access in progress",
			     (void *)h);
		return;
	}
	if (unlikely(held[top] != h) && !untrack(h)) {
		devres__warn(NULL, __func__, "%p: not accessed by this thread",
			     (void *)h);
		return;
	}
	/*
	 * An access the parent's thread had begun when it forked: forgotten
	 * in the child, whose copy of the readers is nobody's to wait for.
	 */
	set_depth(top);
	r = devres__handle_obj(&revocables, h, NULL);
	if (unlikely(!r || r->pid != devres__pid_now()))
		handle_bad(h, r, !r, __func__);
	else
		rcu_exit(r->urcu, &r->readers);
	/*
	 * Also after a forgotten access: a revocation of the child's own,
	 * queued behind it, is finished when the outermost access ends.
	 */
	if (unlikely(!top && (pending || handed())))
		run_pending();
}
