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
 * when its outermost access ends.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <devres/devres.h>
#include <devres/revocable.h>
#include "base/subsys.h"
#include "rcu.h"

#define REVOCABLE_MAGIC 0x7265766fu /* "revo" */
#define REVOCABLE_DEAD 0x64656164u

/* How deep one thread's accesses may nest. */
#define MAX_DEPTH 64

struct revocable {
	void *res; /* the resource, NULL once revoked */
	struct rcu_readers readers;
	bool urcu; /* the read side serving this handle */
	bool done; /* released; the binding's reference is gone */
	unsigned int magic;
	int pid; /* the process that made it */
	int refs;
	void (*release)(void *res);
	void *revoked;		/* the resource, from revocation to release */
	struct revocable *next; /* on its revoker's pending list */
};

/* The node's data: the handle, which outlives it. */
struct revocable_node {
	struct revocable *h;
};

/* References a handle takes; one more is refused (revocable_get()). */
#define REVOCABLE_REFS_MAX (1 << 24)

static TLS_FAST unsigned int depth;
static TLS_FAST struct revocable *held[MAX_DEPTH];
static TLS_FAST struct revocable *pending;
/* This thread's accesses are ended at its exit (thread_end()). */
static TLS_FAST bool exit_armed;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

static bool handle_bad(const struct revocable *h, const char *func)
{
	if (devres__arg_bad(NULL, h, func, "handle"))
		return true;
	if (h->magic == REVOCABLE_MAGIC)
		devres__warn(NULL, func, "revocable %p belongs to process %d",
			     (const void *)h, h->pid);
	else
		devres__warn(NULL, func, "%p is not a live revocable",
			     (const void *)h);
	return true;
}

/*
 * A live handle of this process. In a child of fork() the parent's are
 * refused: their readers and their release are the parent's.
 */
static inline bool handle_ok(const struct revocable *h, const char *func)
{
	if (likely(!devres__ptr_bad(h) && h->magic == REVOCABLE_MAGIC &&
		   h->pid == devres__pid_now()))
		return true;
	return !handle_bad(h, func);
}

static void handle_free(struct revocable *h)
{
	h->magic = REVOCABLE_DEAD;
	free(h);
}

/* Waits out the readers, releases the resource, drops the binding's ref. */
static void finish(struct revocable *h)
{
	int saved = errno;

	rcu_sync(h->urcu, &h->readers);
	if (h->release)
		h->release(h->revoked);
	devres__ledger_add(DL_REVOCABLES, -1);
	__atomic_store_n(&h->done, true, __ATOMIC_RELEASE);
	revocable_put(h);
	errno = saved;
}

static void run_pending(void)
{
	struct revocable *h;

	/* A release may revoke more (its own accesses end first): loop. */
	while ((h = pending)) {
		pending = h->next;
		finish(h);
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
	if (!n && !pending)
		return;
	if (n)
		devres__warn(NULL, "revocable_try_access",
			     "%p: a thread ended inside %u access%s: ended for "
			     "it at its exit",
			     (void *)held[n - 1], n, n == 1 ? "" : "es");
	while (depth) {
		struct revocable *h = held[--depth];

		/* liburcu-bp forgets an exiting thread's read side itself. */
		if (!h->urcu && h->pid == devres__pid_now())
			rcu_exit(false, &h->readers);
	}
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
	return true;
}

/* The node's release: runs once, when the binding lets go. */
static void revocable_revoke(struct device *dev, void *data)
{
	struct revocable *h = ((struct revocable_node *)data)->h;

	(void)dev;
	h->revoked = __atomic_exchange_n(&h->res, NULL, __ATOMIC_SEQ_CST);
	if (depth) {
		h->next = pending;
		pending = h;
		return;
	}
	finish(h);
}

struct revocable *devm_revocable_create(struct device *dev, void *res,
					void (*release)(void *res))
{
	struct revocable_node *node;
	struct revocable *h;

	if (!devres__dev_ok(dev, __func__))
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
	h = devres__should_fail() ? NULL : calloc(1, sizeof(*h));
	if (!h) {
		devres_free(node);
		return NULL;
	}
	h->res = res;
	h->release = release;
	h->refs = 1;
	h->urcu = devres__rcu_urcu;
	h->magic = REVOCABLE_MAGIC;
	h->pid = devres__pid_now();
	node->h = h;
	devres__ledger_add(DL_REVOCABLES, 1);
	if (unlikely(__atomic_load_n(&devres__log_on, __ATOMIC_RELAXED))) {
		char buf[40];

		devres__print(DEVRES_LOG_DEBUG,
			      "%s: revocable %p (read side %s)",
			      devres__dev_label(dev, buf, sizeof(buf)),
			      (void *)h, devres__rcu_name(h->urcu));
	}
	/* Published: from here another thread may revoke it. */
	devres_add(dev, node);
	return h;
}

struct revocable *revocable_get(struct revocable *h)
{
	/* A pointer no handle has is not given back: the caller would use it. */
	if (!h || devres__arg_bad(NULL, h, __func__, "handle"))
		return NULL;
	if (!handle_ok(h, __func__))
		return h;
	/* A count at the limit is a leak of references: refused, not wrapped. */
	if (unlikely(__atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED) >
		     REVOCABLE_REFS_MAX)) {
		__atomic_sub_fetch(&h->refs, 1, __ATOMIC_RELAXED);
		devres__warn(NULL, __func__, "%p: %d references: refused",
			     (void *)h, REVOCABLE_REFS_MAX);
		return NULL;
	}
	return h;
}

void revocable_put(struct revocable *h)
{
	int old;

	if (!h || !handle_ok(h, __func__))
		return;
	old = __atomic_load_n(&h->refs, __ATOMIC_ACQUIRE);
	do {
		/* The last reference is the binding's until it is released. */
		if (old == 1 && !__atomic_load_n(&h->done, __ATOMIC_ACQUIRE)) {
			devres__warn(NULL, __func__,
				     "%p: the binding's reference is not yours",
				     (void *)h);
			return;
		}
	} while (!__atomic_compare_exchange_n(&h->refs, &old, old - 1, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	if (old == 1)
		handle_free(h);
}

void *revocable_try_access(struct revocable *h)
{
	void *res;

	if (!handle_ok(h, __func__))
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
	rcu_enter(h->urcu, &h->readers);
	res = __atomic_load_n(&h->res, __ATOMIC_SEQ_CST);
	if (unlikely(!res)) {
		rcu_exit(h->urcu, &h->readers);
		return NULL;
	}
	held[depth++] = h;
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
		held[i] = held[i + 1];
	return true;
}

void revocable_access_end(struct revocable *h)
{
	unsigned int top = depth - 1;

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
	if (unlikely(h->pid != devres__pid_now())) {
		depth = top;
		handle_bad(h, __func__);
		return;
	}
	depth = top;
	rcu_exit(h->urcu, &h->readers);
	if (unlikely(!top && pending))
		run_pending();
}
