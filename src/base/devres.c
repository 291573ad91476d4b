// SPDX-License-Identifier: MIT
/*
 * The devres core: nodes, the device's list, lookup and release.
 *
 * A device's resources form a singly linked list from the newest node to the
 * oldest, so adding is a push and releasing everything is a walk from the
 * head: LIFO by construction. Nodes are unlinked under the device's lock and
 * released outside it. Nodes named by a key are found through the device's
 * index (index.c) and, when taken off, left dead in place for a later walk
 * (internal.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"
#include "node.h"
#include "frame.h"
#include "liveobj.h"

void devres__dev_foreign_warn(const struct device *dev, const char *func)
{
	if (devres__dev_other_copy(dev))
		devres__warn(dev, func,
			     "device of another copy of the library in this "
			     "process: refused");
	else
		devres__warn(dev, func, "device belongs to process %d",
			     devres__dev_pid(dev));
}

bool devres__dev_bad(const struct device *dev, const char *func)
{
	/* A vfork() marked: this thread's child is refused; else it goes on. */
	if (devres__vfork_maybe()) {
		if (devres__vfork_refused(dev, func))
			return false;
		if (likely(!devres__ptr_bad(dev) &&
			   devres__dev_magic(dev) == DEVRES_DEV_MAGIC &&
			   devres__dev_mine(dev)))
			return true;
	}
	if (unlikely(!dev)) {
		devres__warn(NULL, func, "NULL device");
		return false;
	}
	if (unlikely(devres__ptr_bad(dev)))
		return !devres__arg_warn(NULL, func, "device", dev);
	if (unlikely(devres__dev_magic(dev) != DEVRES_DEV_MAGIC)) {
		bool dead = devres__dev_magic(dev) == DEVRES_DEV_DEAD;

		devres__warn(dev, func, "device %s",
			     dead ? "already released (state: released)"
				  : "not initialized (state: zeroed)");
		return false;
	}
	if (unlikely(!devres__dev_mine(dev))) {
		devres__dev_foreign_warn(dev, func);
		return false;
	}
	return true;
}

void devres__run_release(struct device *dev, struct devres__node *n)
{
	const struct devres__kind *k = devres__kind(DR_KIND(n));

#ifdef DEVRES_CHECKS
	/* A release may use devres on its device: never under the lock. */
	if (unlikely(__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
		     devres__me()))
		devres__bug(dev, __func__,
			    "release callback run with the devres lock held");
#endif
	if (k->action)
		k->action(*(void **)node_data(n));
	else if (k->release)
		k->release(dev, node_data(n));
}

struct devres__node *devres__find_locked(struct device *dev, uint32_t kind,
					 dr_match_t match, void *match_data,
					 struct devres__node **ret_prev)
{
	struct devres__node *prev = NULL, *n;

	assert_locked(dev, __func__);
	for (n = list_head(dev); n; prev = n, n = n->next) {
		if (DR_KIND(n) != kind || dr_dead(n))
			continue;
		if (match && !match(dev, node_data(n), match_data))
			continue;
		/* The match gave its resource back by the plain call. */
		if (dr_dead(n))
			continue;
		if (ret_prev)
			*ret_prev = prev;
		return n;
	}
	return NULL;
}

/*
 * What a call that runs the caller's match or for-each callback under the
 * device's lock holds, for the case where the callback ends its thread
 * (pthread_exit(), or a cancellation point when cancellation is on):
 * left held, the lock made every later call on the device wait for ever.
 */
struct cb_hold {
	struct device *dev;
	struct devres__frame *frame;
	struct devres__node *node; /* devres_get()'s new node, or NULL */
	const char *func;
};

/*
 * Runs as the thread unwinds out of the callback: the lock and the frame
 * go, the new node of devres_get() is freed as if one had been found. A
 * match or for-each callback changes nothing in the list: it is whole.
 */
static void cb_thread_ended(void *arg)
{
	struct cb_hold *h = arg;

	unlock_dev(h->dev);
	if (h->node) {
		kind_clear(h->node, DR_ADDED);
		devres__free_node(h->node);
	}
	devres__frame_leave(h->frame);
	devres__warn(h->dev, h->func,
		     "the thread ended inside a match or for-each callback: "
		     "the device's lock is released");
}

/* devres__find_locked() with a callback that may end the thread. */
static struct devres__node *find_held(struct cb_hold *h, uint32_t kind,
				      dr_match_t match, void *match_data,
				      struct devres__node **ret_prev)
{
	struct devres__node *n;

	pthread_cleanup_push(cb_thread_ended, h);
	n = devres__find_locked(h->dev, kind, match, match_data, ret_prev);
	pthread_cleanup_pop(0);
	return n;
}

/* A dead node's memory goes back; it was forgotten when it died. */
static void free_dead_node(struct devres__node *n)
{
	dr_unpoison(node_data(n), n->size);
	devres__node_put(n);
}

/*
 * One of @n's group's markers leaves the list; the group is freed with the
 * last. Called under the lock, or by the one owner of a detached chain
 * that holds every listed marker of the group.
 */
static bool group_unlinked(struct devres__node *n)
{
	struct devres__group *g = marker_to_group(n);

	n->next = NULL;
	/*
	 * An open group's open marker, which devres_release_all() took with
	 * its stack: its only listed marker, and its close marker's count
	 * is a stack link.
	 */
	if (kind_load(n) & DR_STACKED)
		return true;
	return --g->close.size == 0;
}

static void group_free(struct devres__group *g)
{
	if (!dr_dead(&g->open))
		devres__ledger_add(DL_GROUPS, -1);
	free(g);
}

/*
 * Unlinks every dead node. Dead resources, and groups whose last marker
 * leaves, are chained through their (now unused) @next for
 * devres__free_dead(), to be freed once the lock is dropped.
 */
struct devres__node *devres__compact_locked(struct device *dev)
{
	struct devres__node *prev = NULL, *n, *next, *chain = NULL;

	assert_locked(dev, __func__);
	for (n = list_head(dev); n; n = next) {
		next = n->next;
		if (!dr_dead(n)) {
			prev = n;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			set_head(dev, next);
		dev->devres_listed--;
		dev->devres_dead--;
		if (dr_slab(n)) {
			devres__slab_unlisted(dev);
			devres__slab_free(dev, dev->devres_slab, n);
			continue;
		}
		if (dr_is_marker(n)) {
			if (!group_unlinked(n))
				continue;
			n = &marker_to_group(n)->open;
		}
		n->next = chain;
		chain = n;
	}
	return chain;
}

void devres__free_dead(struct devres__node *chain)
{
	struct devres__node *n, *next;
	int err = errno;

	for (n = chain; n; n = next) {
		next = n->next;
		if (DR_KIND(n) == DR_KIND_GROUP_OPEN)
			group_free(open_to_group(n));
		else
			free_dead_node(n);
	}
	errno = err;
}

/*
 * Releases a detached chain, newest first. A group is freed with the last
 * of its markers to leave the list. A layer-owned group's marker belongs
 * to its owner and is only unlinked. Dead nodes are only freed. Release
 * callbacks may change errno; the caller's is given back.
 */
/*
 * Slab nodes of a chain taken from a group go back to the device's free
 * lists, if the device still has that slab (a devres_release_all() since
 * may have taken it); the last reference to a detached slab frees it.
 */
static void slab_return(struct device *dev, struct devres__slab *s,
			struct devres__node *slots)
{
	struct devres__node *n, *next;
	bool last;

	/*
	 * Only the lock serializes the slab; re-entry is not possible here,
	 * and a device released meanwhile still has its slab to serialize.
	 */
	while (!lock_dev_any(dev, __func__))
		sched_yield();
	for (n = slots; n; n = next) {
		next = n->next;
		if (dev->devres_slab == s)
			devres__slab_free(dev, s, n);
	}
	last = devres__slab_put_locked(s);
	unlock_dev(dev);
	if (last)
		devres__slab_destroy(s);
}

/*
 * Whether this thread is releasing a chain, and the late checks of the
 * innermost one: devres__dmt.in_chain and .late (frame.h).
 */
void devres__after_chain(struct devres__late *l)
{
	struct devres__dm_thread *t = devres__dm_me();

	if (!t->in_chain) {
		l->fn(l);
		return;
	}
	l->next = t->late;
	t->late = l;
}

/* Runs the late checks of the chain that just ended, oldest first. */
static void run_late(struct devres__late *l)
{
	struct devres__late *rev = NULL, *next;

	for (; l; l = next) {
		next = l->next;
		l->next = rev;
		rev = l;
	}
	for (; rev; rev = next) {
		next = rev->next;
		rev->fn(rev);
	}
}

/*
 * The late checks of a chain, held past its end by releases that finish
 * later, on this thread or on another (a revocation handed to a reader):
 * the chain's own count until it ends, and one per hold. The last to let
 * go runs them, on its thread: the chain's end stores @late before its
 * count goes (release), the last one reads it after (acquire).
 */
struct devres__late_hold {
	struct devres__late *late;
	unsigned int refs;
};

struct devres__late_hold *devres__late_hold(void)
{
	struct devres__dm_thread *t = devres__dm_me();
	struct devres__late_hold *h = t->hold;

	if (!t->in_chain)
		return NULL;
	if (!h) {
		h = malloc(sizeof(*h));
		if (!h)
			return NULL;
		*h = (struct devres__late_hold){ .refs = 1 };
		t->hold = h;
	}
	/* The chain's own count is there: no one else can end the hold. */
	__atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
	return h;
}

void devres__late_unhold(struct devres__late_hold *h)
{
	if (!h || __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL))
		return;
	run_late(h->late);
	free(h);
}

/*
 * The live objects in @n's data, before it is freed: in the order of the
 * chain, so that a release that cancels them (an action added after the
 * memory, such as devm_work_autocancel()'s) has run before its memory's
 * turn, as in the kernel. Nothing is held here.
 */
static void check_node(struct device *dev, struct devres__node *n,
		       const char *func)
{
	devres__liveobj_check(dev, node_data(n), n->size, func);
}

/*
 * A chain being released, in one place, so that a release callback that
 * ends its thread (pthread_exit(), a cancellation) does not leave the rest
 * of the chain unreleased, its slab held and the frame's deferred last
 * put never carried out: the thread's unwinding finishes the walk.
 */
struct chain {
	struct device *dev;
	struct devres__node *next;  /* what is left to walk */
	struct devres__node *cur;   /* whose release is running, or NULL */
	struct devres__node *slots; /* slab nodes, for their slab */
	struct devres__slab *slab;
	struct devres__dm_thread *t;
	struct devres__late *outer_late;
	struct devres__late_hold *outer_hold;
	const char *func;
	long gone, gone_bytes;
	int cnt, err;
	bool all, outer_in_chain;
	struct devres__frame *f; /* the caller's: not zeroed with the rest */
};

static void walk_chain(struct chain *c)
{
	struct device *dev = c->dev;
	struct devres__node *n;

	/*
	 * A resource keeps its DR_ADDED mark while it is released, as a kernel
	 * node stays on the todo list: a release callback that devres_free()s
	 * its own node gets a WARN, not a double free.
	 */
	while ((n = c->next)) {
		c->next = n->next;
		if (dr_slab(n)) {
			/* Nothing to run; the ledger counts them at the end. */
			if (!dr_dead(n)) {
				/* Its slot goes with the slab, at the end. */
				check_node(dev, n, c->func);
				log_node(dev, "REL", n);
				c->gone++;
				c->gone_bytes += n->size;
				c->cnt++;
			}
			if (!c->all) {
				n->next = c->slots;
				c->slots = n;
			}
			continue;
		}
		if (dr_dead(n)) {
			if (!dr_is_marker(n))
				free_dead_node(n);
			else if (group_unlinked(n))
				group_free(marker_to_group(n));
			continue;
		}
		log_node(dev, "REL", n);
		switch (DR_KIND(n)) {
		case DR_KIND_GROUP_OPEN:
		case DR_KIND_GROUP_CLOSE:
			if (group_unlinked(n))
				group_free(marker_to_group(n));
			break;
		case DR_KIND_OWNED:
			/* Its storage is its owner's, maybe reused at once;
			 * only counted here. */
			n->next = NULL;
			kind_clear(n, DR_ADDED);
			devres__ledger_add(DL_GROUPS, -1);
			break;
		case DR_KIND_KMALLOC:
			/* Nothing to run: skip the kind table. */
			check_node(dev, n, c->func);
			devres__free_node(n);
			c->cnt++;
			break;
		default:
			c->cur = n;
			devres__run_release(dev, n);
			c->cur = NULL;
			check_node(dev, n, c->func);
			devres__free_node(n);
			c->cnt++;
		}
	}
}

static void end_chain(struct chain *c)
{
	struct devres__dm_thread *t = c->t;
	struct devres__late_hold *hold = t->hold;

	if (c->gone)
		devres__ledger_add_node(-c->gone, -c->gone_bytes);
	if (c->slab && !c->all)
		slab_return(c->dev, c->slab, c->slots);
	else if (c->slab)
		slab_return(c->dev, c->slab, NULL);
	t->hold = c->outer_hold;
	if (unlikely(t->late)) {
		struct devres__late *l = t->late;

		t->late = NULL;
		t->in_chain = c->outer_in_chain;
		if (hold)
			hold->late = l;
		else
			run_late(l);
	}
	t->in_chain = c->outer_in_chain;
	t->late = c->outer_late;
	devres__frame_pop(t, c->f);
	/* The chain's count: its checks run now unless a hold remains. */
	if (unlikely(hold))
		devres__late_unhold(hold);
}

/*
 * The thread unwinds out of a release callback: the node whose release
 * ended it counts as released, and the rest are released here, on the
 * way out, as they would have been.
 */
static void chain_thread_ended(void *arg)
{
	struct chain *c = arg;

	devres__warn(c->dev, c->func,
		     "the thread ended inside the release of %s: the "
		     "resources after it are released now",
		     c->cur ? devres__kind_name(kind_load(c->cur))
			    : "a resource");
	if (c->cur) {
		devres__free_node(c->cur);
		c->cur = NULL;
		c->cnt++;
	}
	walk_chain(c);
	end_chain(c);
}

/* The walk, with the handler above for a thread that ends in it. */
static void walk_held(struct chain *c)
{
	pthread_cleanup_push(chain_thread_ended, c);
	walk_chain(c);
	pthread_cleanup_pop(0);
}

int devres__release_nodes(struct device *dev, struct devres__node *list,
			  struct devres__slab *slab, bool all, const char *func)
{
	struct devres__dm_thread *t = devres__dm_me();
	struct devres__frame f;
	struct chain c = { .dev = dev,
			   .f = &f,
			   .next = list,
			   .slab = slab,
			   .t = t,
			   .outer_late = t->late,
			   .outer_hold = t->hold,
			   .func = func,
			   .err = errno,
			   .all = all,
			   .outer_in_chain = t->in_chain };

	t->in_chain = true;
	t->late = NULL;
	t->hold = NULL;
	/* A callback's last put of @dev waits for the end of the chain. */
	devres__frame_push(t, &f, dev);
	walk_held(&c);
	end_chain(&c);
	errno = c.err;
	return c.cnt;
}

void *devres_alloc_named(dr_release_t release, size_t size, gfp_t gfp,
			 const char *name)
{
	uint32_t kind;
	struct devres__node *n;

	(void)gfp;
	if (devres__opt_bad(NULL, (const void *)release, __func__, "release") ||
	    devres__opt_bad(NULL, name, __func__, "name"))
		return NULL;
	kind = devres__kind_of(release, NULL, name);
	if (unlikely(kind == DR_KIND_NONE))
		return NULL;
	n = devres__alloc_node(kind, size, true);
	return n ? node_data(n) : NULL;
}

/* Why a node the caller named is refused: one WARN, and NULL. */
static __attribute__((noinline, cold)) struct devres__node *
node_refused(struct device *dev, void *res, const char *func,
	     const char *listed, uint32_t kind)
{
	if (kind & DR_ADDED)
		devres__warn(dev, func, "node %p (%s) %s", res,
			     devres__kind_name(kind), listed);
	else
		devres__warn(dev, func,
			     "%p is not a live node of devres_alloc() "
			     "(freed already?)",
			     res);
	return NULL;
}

static DR_NO_ASAN uint32_t loose_kind(const struct devres__node *n)
{
	return __atomic_load_n(&n->kind, __ATOMIC_ACQUIRE);
}

/* Takes loose node @n, of @kind, for one call: false if it changed. */
static DR_NO_ASAN bool node_claim(struct devres__node *n, uint32_t kind)
{
	return __atomic_compare_exchange_n(&n->kind, &kind, kind | DR_ADDED,
					   false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/*
 * The node of @res, which the caller holds off any device (made by
 * devres_alloc(), or taken off by devres_remove()), taken for this call:
 * marked added in the step that finds it loose, so that two calls given
 * the same node at once (two adds, to one device or two, an add and a
 * free) cannot both take it; the second finds it added. NULL, with one
 * WARN, when it was freed already, is not a node (its kind is none the
 * process registered), or is listed (@listed says so). A node given back
 * once is marked freed (DR_FREED) until its chunk serves another node;
 * under ASan its chunk is poisoned instead, and is asked about before it
 * is read.
 */
static inline struct devres__node *floating_node(struct device *dev, void *res,
						 const char *func,
						 const char *listed)
{
	struct devres__node *n = to_node(res);
	uint32_t kinds = __atomic_load_n(&devres__nr_kinds, __ATOMIC_RELAXED);
	uint32_t kind, id;

	for (;;) {
		/* Under ASan a freed chunk is poisoned: asked, not read. */
		kind = devres__node_poisoned(n) ? DR_FREED : loose_kind(n);
		id = kind & ~(DR_FLAGS | DR_MAKER_MASK);
		/* A registered kind, and listed nowhere: all is well. */
		if (unlikely((kind & DR_FLAGS) ||
			     id - DR_KIND_KMALLOC >= kinds - DR_KIND_KMALLOC))
			break;
		if (likely(node_claim(n, kind)))
			return n;
		/* Changed since it was read: by another call. Again. */
	}
	/* Listed, and a live node's kind: added. Else not a live node. */
	if ((kind & (DR_DEAD | DR_SLAB | DR_STACKED)) ||
	    id - DR_KIND_KMALLOC >= kinds - DR_KIND_KMALLOC)
		kind &= ~DR_ADDED;
	return node_refused(dev, res, func, listed, kind);
}

/* What devres_free() does with a node that is its caller's alone. */
static void free_taken(void *res, struct devres__node *n, const char *func)
{
	devres__liveobj_check(NULL, res, n->size, func);
	devres__free_node(n);
}

void devres_free(void *res)
{
	struct devres__node *n;

	if (!res || devres__arg_bad(NULL, res, __func__, "resource"))
		return;
	n = floating_node(NULL, res, __func__, "is still on a device");
	if (n)
		free_taken(res, n, __func__);
}

static bool record(struct device *dev, void *res, const char *func)
{
	struct devres__node *n;
	struct dr_log l;

	if (!devres__dev_ok(dev, func))
		return false;
	if (devres__arg_bad(dev, res, func, "resource"))
		return false;
	n = floating_node(dev, res, func, "is already added");
	if (!n)
		return false;
	l = dr_log_of_res(n);
	if (!lock_dev(dev, func)) {
		kind_clear(n, DR_ADDED); /* still the caller's */
		return false;
	}
	add_claimed(dev, n);
	unlock_dev(dev);
	dr_log(dev, "ADD", l);
	return true;
}

bool devres__record(struct device *dev, void *res, const char *func)
{
	return record(dev, res, func);
}

void devres_add(struct device *dev, void *res)
{
	(void)record(dev, res, __func__);
}

/*
 * Just newer than @stop (NULL: the oldest end): outside every group opened
 * after it, so that no devres_release_group() of the device's users takes
 * the node; only the release of what encloses @stop does.
 */
static void insert_older(struct device *dev, struct devres__node *n,
			 bool in_owned)
{
	struct devres__node *p, *prev = NULL;

	for (p = list_head(dev); p; prev = p, p = p->next)
		if (in_owned && DR_KIND(p) == DR_KIND_OWNED)
			break;
	n->next = p;
	if (prev)
		prev->next = n;
	else
		set_head(dev, n);
	kind_or(n, DR_ADDED);
	dev->devres_listed++;
}

void devres__add_ungrouped(struct device *dev, void *res, bool in_owned)
{
	struct devres__node *n = to_node(res);
	struct dr_log l = dr_log_of_res(n);

	if (!lock_dev(dev, __func__))
		return;
	insert_older(dev, n, in_owned);
	unlock_dev(dev);
	dr_log(dev, "ADD", l);
}

/* Without a match callback there is nothing to run: no frame. */
static void *find_unmatched(struct device *dev, uint32_t kind)
{
	struct devres__node *n;

	if (!lock_dev(dev, "devres_find"))
		return NULL;
	n = devres__find_locked(dev, kind, NULL, NULL, NULL);
	unlock_dev(dev);
	return n ? node_data(n) : NULL;
}

/*
 * The match callbacks below run in a frame of @dev: a last put of @dev
 * from one is carried out once the lock is dropped.
 */
void *devres_find(struct device *dev, dr_release_t release, dr_match_t match,
		  void *match_data)
{
	uint32_t kind = devres__kind_lookup(release, NULL);
	struct devres__node *n = NULL;
	struct devres__frame f;

	if (!devres__dev_ok(dev, __func__) ||
	    devres__opt_bad(dev, (const void *)match, __func__, "match") ||
	    kind == DR_KIND_NONE)
		return NULL;
	if (!match)
		return find_unmatched(dev, kind);
	devres__frame_enter(&f, dev);
	if (lock_dev(dev, __func__)) {
		struct cb_hold h = { dev, &f, NULL, __func__ };

		n = find_held(&h, kind, match, match_data, NULL);
		unlock_dev(dev);
	}
	devres__frame_leave(&f);
	return n ? node_data(n) : NULL;
}

void *devres_get(struct device *dev, void *new_res, dr_match_t match,
		 void *match_data)
{
	struct devres__node *n, *found;
	struct devres__frame f;
	struct dr_log l;

	if (!devres__dev_ok(dev, __func__))
		return NULL;
	if (devres__arg_bad(dev, new_res, __func__, "resource") ||
	    devres__opt_bad(dev, (const void *)match, __func__, "match"))
		return NULL;
	n = floating_node(dev, new_res, __func__, "is already added");
	if (!n)
		return NULL;
	l = dr_log_of_res(n);
	/*
	 * The node is the call's from here: marked added (floating_node())
	 * before the match runs, so that a match which gives it to
	 * devres_free(), or adds it to a device, gets a WARN instead of
	 * freeing or listing a node this call is about to list.
	 */
	devres__frame_enter(&f, dev);
	if (!lock_dev(dev, __func__)) {
		kind_clear(n, DR_ADDED);
		devres__frame_leave(&f);
		return NULL;
	}
	{
		struct cb_hold h = { dev, &f, n, __func__ };

		found = find_held(&h, DR_KIND(n), match, match_data, NULL);
	}
	if (!found)
		add_claimed(dev, n);
	unlock_dev(dev);
	devres__frame_leave(&f);
	if (found) {
		kind_clear(n, DR_ADDED);
		devres__free_node(n);
		return node_data(found);
	}
	dr_log(dev, "ADD", l);
	return new_res;
}

/* devres_remove() for its callers too, so that a WARN names the API called. */
static void *remove_dr(struct device *dev, dr_release_t release,
		       dr_match_t match, void *match_data, const char *func,
		       bool keep)
{
	uint32_t kind = devres__kind_lookup(release, NULL);
	struct devres__node *n = NULL, *prev = NULL;
	struct devres__frame f;

	if (!devres__dev_ok(dev, func) ||
	    devres__opt_bad(dev, (const void *)match, func, "match") ||
	    kind == DR_KIND_NONE)
		return NULL;
	if (match)
		devres__frame_enter(&f, dev);
	if (lock_dev(dev, func)) {
		struct cb_hold h = { dev, &f, NULL, func };

		n = match ? find_held(&h, kind, match, match_data, &prev)
			  : devres__find_locked(dev, kind, NULL, NULL, &prev);
		/* @keep: the call frees it; nobody else may take it. */
		if (n && keep)
			detach_after(dev, prev, n);
		else if (n)
			unlink_after(dev, prev, n);
		unlock_dev(dev);
	}
	if (match)
		devres__frame_leave(&f);
	if (!n)
		return NULL;
	log_node(dev, "REM", n);
	return node_data(n);
}

void *devres_remove(struct device *dev, dr_release_t release, dr_match_t match,
		    void *match_data)
{
	return remove_dr(dev, release, match, match_data, __func__, false);
}

int devres_destroy(struct device *dev, dr_release_t release, dr_match_t match,
		   void *match_data)
{
	void *res = remove_dr(dev, release, match, match_data, __func__, true);

	if (!res)
		return -ENOENT;
	free_taken(res, to_node(res), __func__);
	return 0;
}

/* devres_release()'s node, whose release ends the thread: as in a chain. */
struct one_release {
	struct device *dev;
	struct devres__node *n;
	struct devres__frame *f;
};

static void one_thread_ended(void *arg)
{
	struct one_release *o = arg;

	devres__warn(o->dev, "devres_release",
		     "the thread ended inside the release of %s: its node "
		     "is freed",
		     devres__kind_name(kind_load(o->n)));
	devres__free_node(o->n);
	devres__frame_leave(o->f);
}

static void run_one_held(struct one_release *o)
{
	pthread_cleanup_push(one_thread_ended, o);
	devres__run_release(o->dev, o->n);
	pthread_cleanup_pop(0);
}

/*
 * The match ended the thread: remove_dr()'s frame, nested in ours on the
 * same device, was not pushed, so a last put deferred from the match
 * waits in ours, which is left here or never.
 */
static void match_thread_ended(void *arg)
{
	devres__frame_leave(arg);
}

int devres_release(struct device *dev, dr_release_t release, dr_match_t match,
		   void *match_data)
{
	struct devres__frame f;
	void *res;
	int err;

	if (!devres__dev_ok(dev, __func__))
		return -ENOENT;
	/* One frame for the match and the release: both use @dev. */
	devres__frame_enter(&f, dev);
	pthread_cleanup_push(match_thread_ended, &f);
	res = remove_dr(dev, release, match, match_data, __func__, true);
	pthread_cleanup_pop(0);
	if (res) {
		struct one_release o = { dev, to_node(res), &f };

		/* Still marked added while it runs: see release_nodes(). */
		err = errno;
		run_one_held(&o);
		devres__liveobj_check(dev, res, to_node(res)->size, __func__);
		devres__free_node(to_node(res));
		errno = err;
	}
	devres__frame_leave(&f);
	return res ? 0 : -ENOENT;
}

void devres_for_each_res(struct device *dev, dr_release_t release,
			 dr_match_t match, void *match_data,
			 void (*fn)(struct device *, void *, void *),
			 void *data)
{
	uint32_t kind = devres__kind_lookup(release, NULL);
	struct devres__frame f;
	struct devres__node *n;

	if (!devres__dev_ok(dev, __func__))
		return;
	if (devres__arg_bad(dev, (const void *)fn, __func__, "callback") ||
	    devres__opt_bad(dev, (const void *)match, __func__, "match"))
		return;
	if (kind == DR_KIND_NONE)
		return;
	devres__frame_enter(&f, dev);
	if (lock_dev(dev, __func__)) {
		struct cb_hold h = { dev, &f, NULL, __func__ };

		pthread_cleanup_push(cb_thread_ended, &h);
		for (n = list_head(dev); n; n = n->next) {
			if (DR_KIND(n) != kind || dr_dead(n))
				continue;
			if (match && !match(dev, node_data(n), match_data))
				continue;
			if (dr_dead(n))
				continue;
			fn(dev, node_data(n), data);
		}
		pthread_cleanup_pop(0);
		unlock_dev(dev);
	}
	devres__frame_leave(&f);
}

/* A marker of a layer-owned group that devres_release_all() leaves. */
static bool kept(const struct devres__node *n)
{
	return DR_KIND(n) == DR_KIND_OWNED &&
	       (container_of(n, struct devres__group, open)->close.size &
		DEVRES_OWNED_KEEP);
}

/*
 * A kept marker lives in its owner's storage and may be reused as soon as
 * the owner's release returns, so it must never sit on a chain that is
 * walked unlocked: release_all moves the kept ones, in their order, from
 * @list back to the emptied device list, where the owner's release finds
 * them. Only a device with a kept marker pays for the walk.
 */
static void keep_owned(struct device *dev, struct devres__node **list)
{
	struct devres__node *keep = NULL, **tail = &keep, **pp = list, *n;
	unsigned long left = dev->devres_kept;

	assert_locked(dev, __func__);
	while (left && (n = *pp)) {
		if (!kept(n)) {
			pp = &n->next;
			continue;
		}
		*pp = n->next;
		n->next = NULL;
		*tail = n;
		tail = &n->next;
		left--;
	}
	set_head(dev, keep);
	dev->devres_listed = dev->devres_kept;
}

static int release_all_locked(struct device *dev, const char *func);

int devres_release_all(struct device *dev)
{
	if (!devres__dev_ok(dev, __func__))
		return -ENODEV;
	/*
	 * Nothing listed and no slab: nothing to release, nothing to free
	 * (an index is dropped by the next release that finds something, or
	 * with the device). Such a device is not locked: a thread that
	 * releases in a loop, as a reaper does, would otherwise take the lock
	 * from the threads that fill the device a few dozen times for each
	 * of their allocations. A call from a callback under the lock still
	 * takes the lock's path, and its WARN. Both words are written under
	 * the lock; what was added before this call (happens-before) is seen.
	 */
	if (!__atomic_load_n(&dev->devres_head, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&dev->devres_slab, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) !=
		    devres__me())
		return 0;
	if (!lock_dev(dev, __func__))
		return -EDEADLK;
	return release_all_locked(dev, __func__);
}

void devres__release_strays(struct device *dev, bool left)
{
	int n;

	/*
	 * Always locked: a record made under the lock before the device was
	 * marked dead is seen only by a look that takes the lock after it.
	 * Once that look let go, nothing reads the index: a call that takes
	 * the lock now finds the device dead and lets go.
	 */
	if (lock_dev_any(dev, "put_device")) {
		if (left || (dev->devres_listed == dev->devres_kept &&
			     !dev->devres_slab)) {
			unlock_dev(dev);
		} else {
			n = release_all_locked(dev, "put_device");
			devres__warn(NULL, "put_device",
				     "device@%p: %d resource(s) recorded by a "
				     "call without a reference during its "
				     "release: released",
				     (void *)dev, n);
		}
	}
	devres__index_free(dev);
}

/* devres_release_all() from here, @dev's lock held; lets go of it. */
static int release_all_locked(struct device *dev, const char *func)
{
	struct devres__list_view view;
	struct devres__node *list;
	struct devres__slab *slab;
	unsigned long live, bytes;
	bool walk, checked_late;
	void *index;

	/*
	 * Debug builds check the list: the whole of it, which is taken off
	 * the device here, once the lock is dropped (check.c); a list that
	 * keeps layer-owned nodes (rare) with the lock held.
	 */
	checked_late = !dev->devres_kept;
	if (checked_late)
		devres__list_view_locked(dev, &view);
	else
		devres__assert_list_locked(dev, func);
	/*
	 * Only slab nodes, nothing kept, nothing to log, no live object
	 * anywhere: no walk at all.
	 */
	walk = dev->devres_kept || devres__logging() || devres__liveobj_any() ||
	       !devres__slab_only(dev, &live, &bytes);
	list = list_head(dev);
	set_head(dev, NULL);
	dev->devres_listed = 0;
	dev->devres_dead = 0;
	dev->devres_open = NULL;
	index = devres__index_detach(dev);
	slab = devres__slab_detach(dev);
	if (dev->devres_kept)
		keep_owned(dev, &list);
	unlock_dev(dev);
	if (checked_late)
		devres__assert_view(dev, &view, func);
	devres__block_free(index);
	if (walk)
		return devres__release_nodes(dev, list, slab, true, func);
	devres__ledger_add_node(-(long)live, -(long)bytes);
	if (slab)
		devres__release_nodes(dev, NULL, slab, true, func);
	return (int)live;
}
