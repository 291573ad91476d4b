// SPDX-License-Identifier: MIT
/*
 * Groups: two markers in the device's list, so that a mid-layer can release
 * only what it acquired. Also groups owned by a layer above (the driver
 * core's binding is one), which no driver can name.
 */
#include <errno.h>
#include <stdlib.h>
#include "node.h"
#include "frame.h"

static bool is_stacked(const struct devres__group *g)
{
	return g->open.kind & DR_STACKED;
}

/* Its close marker is listed; while it is stacked, that word is a link. */
static bool is_closed(const struct devres__group *g)
{
	return !is_stacked(g) && (g->close.kind & DR_ADDED);
}

/*
 * The stack of open groups, newest first, doubly linked through their
 * unlisted close markers: a NULL id finds the newest open group at its
 * top, and any open group leaves it in O(1), whatever its place.
 */
static struct devres__group *open_top(struct device *dev)
{
	return dev->devres_open;
}

static void open_push(struct device *dev, struct devres__group *g)
{
	struct devres__group *top = open_top(dev);

	assert_locked(dev, __func__);
	g->stack.older = top;
	g->stack.newer = NULL;
	if (top)
		top->stack.newer = g;
	dev->devres_open = g;
	g->open.kind |= DR_STACKED;
}

/* Off the stack; its close marker is a node again, unlisted. */
static void open_del(struct device *dev, struct devres__group *g)
{
	struct devres__group *older = g->stack.older, *newer = g->stack.newer;

	assert_locked(dev, __func__);
	if (newer)
		newer->stack.older = older;
	else
		dev->devres_open = older;
	if (older)
		older->stack.newer = newer;
	g->open.kind &= ~DR_STACKED;
	g->close =
		(struct devres__node){ .kind = DR_KIND_GROUP_CLOSE, .size = 1 };
}

/* The newest group with @id (index), or the newest open one (stack). */
static struct devres__group *find_group(struct device *dev, void *id)
{
	struct devres__node *n;

	assert_locked(dev, __func__);
	if (!id)
		return open_top(dev);
	n = devres__index_find(dev, DR_KIND_GROUP_OPEN, id);
	return n ? open_to_group(n) : NULL;
}

void *devres_open_group(struct device *dev, void *id, gfp_t gfp)
{
	struct devres__group *g;
	struct dr_log l;

	(void)gfp;
	if (!devres__dev_ok(dev, __func__) || devres__should_fail())
		return NULL;
	g = malloc(sizeof(*g));
	if (!g)
		return NULL;
	g->open = (struct devres__node){ .kind = DR_KIND_GROUP_OPEN };
	/* One marker listed. */
	g->close =
		(struct devres__node){ .kind = DR_KIND_GROUP_CLOSE, .size = 1 };
	g->id = id ? id : g;
	id = g->id;
	l = dr_log_of(&g->open);
	if (!lock_dev(dev, __func__)) {
		free(g);
		return NULL;
	}
	devres__index_add(dev, &g->open);
	devres__ledger_add(DL_GROUPS, 1);
	add_locked(dev, &g->open);
	open_push(dev, g);
	unlock_dev(dev);
	dr_log(dev, "ADD", l);
	/* Not g->id: another thread may have released the group by now. */
	return id;
}

void devres_close_group(struct device *dev, void *id)
{
	struct devres__group *g;
	struct dr_log l;
	bool closed = false;

	if (!devres__dev_ok(dev, __func__) || !lock_dev(dev, __func__))
		return;
	g = find_group(dev, id);
	if (g) {
		closed = is_closed(g);
		if (!closed) {
			open_del(dev, g);
			add_locked(dev, &g->close);
			g->close.size = 2;
		}
		l = dr_log_of(&g->close);
	}
	unlock_dev(dev);
	if (!g)
		devres__warn(dev, __func__, "no group %p", id);
	else if (closed)
		devres__warn(dev, __func__, "group %p is already closed", id);
	else
		dr_log(dev, "ADD", l);
}

/*
 * Takes group @g off the index and the stack and leaves its markers dead
 * where they lie, for a later walk to unlink and free: no walk now.
 */
static void kill_group(struct device *dev, struct devres__group *g)
{
	devres__index_del(dev, &g->open);
	if (is_closed(g)) {
		g->close.kind |= DR_DEAD;
		dev->devres_dead++;
	} else {
		open_del(dev, g);
	}
	g->open.kind |= DR_DEAD;
	dev->devres_dead++;
	devres__ledger_add(DL_GROUPS, -1);
}

/* Whether @dev has the group @id. Locked. */
static const char *has_group(struct device *dev, const void *id,
			     const void *unused)
{
	(void)unused;
	return devres__index_find(dev, DR_KIND_GROUP_OPEN, id) ? "devres_open_"
								 "group"
							       : NULL;
}

/* "no group @id", naming the live device that has it, if one does. */
static void warn_no_group(struct device *dev, void *id, const char *func,
			  const char *fix)
{
	struct devres__hand h;
	bool found = id && devres__owner_of(dev, has_group, id, NULL, fix, &h);

	devres__warn_foreign(dev, func, found ? &h : NULL, "no group %p", id);
}

void devres_remove_group(struct device *dev, void *id)
{
	struct devres__node *dead = NULL;
	struct devres__group *g;
	struct dr_log l;

	if (!devres__dev_ok(dev, __func__) || !lock_dev(dev, __func__))
		return;
	g = find_group(dev, id);
	if (g) {
		l = dr_log_of(&g->open);
		kill_group(dev, g);
		dead = maybe_compact(dev);
	}
	unlock_dev(dev);
	devres__free_dead(dead);
	if (!g) {
		warn_no_group(dev, id, __func__, "devres_remove_group()");
		return;
	}
	dr_log(dev, "REM", l);
}

/*
 * How many of a group's markers are listed (a layer-owned group, or an open
 * one: one).
 */
static uint32_t listed_markers(struct devres__group *mg)
{
	if (DR_KIND(&mg->open) == DR_KIND_OWNED || is_stacked(mg))
		return 1;
	return mg->close.size;
}

/*
 * A marker in the range goes with it when every listed marker of its group
 * is in the range (the kernel's colour rule, for live groups: both markers,
 * or the open one of a group still open). A layer-owned marker goes only
 * with its own release: a driver's group that encloses it releases the
 * resources acquired after it, but its owner still finds it.
 */
static bool removable(struct devres__group *mg, struct devres__group *g)
{
	if (DR_KIND(&mg->open) == DR_KIND_OWNED)
		return mg == g;
	return mg->open.size == listed_markers(mg);
}

/*
 * Takes a range off the list: the nodes after @prev (or from the head when
 * @prev is NULL) down to @last, inclusive. Resources in the range go to
 * the returned chain, newest first, off the index; so do the markers of
 * groups that lie wholly inside. The other markers stay in place, in
 * their order. O(the range).
 */
static struct devres__node *take_range(struct device *dev,
				       struct devres__node *prev,
				       struct devres__node *last,
				       struct devres__group *g)
{
	struct devres__node *first = prev ? prev->next : list_head(dev);
	struct devres__node *after = last->next;
	struct devres__node *todo = NULL, **todo_tail = &todo;
	struct devres__node *keep = NULL, **keep_tail = &keep;
	struct devres__node *n, *next;

	assert_locked(dev, __func__);
	for (n = first; n != after; n = n->next)
		if (dr_is_marker(n))
			marker_to_group(n)->open.size = 0;
	for (n = first; n != after; n = n->next)
		if (dr_is_marker(n))
			marker_to_group(n)->open.size++;

	for (n = first; n != after; n = next) {
		struct devres__group *mg;

		next = n->next;
		if (dr_is_marker(n) && !removable(marker_to_group(n), g)) {
			*keep_tail = n;
			keep_tail = &n->next;
			continue;
		}
		*todo_tail = n;
		todo_tail = &n->next;
		dev->devres_listed--;
		if (dr_slab(n))
			devres__slab_unlisted(dev);
		if (dr_dead(n)) {
			dev->devres_dead--;
			continue;
		}
		if (!dr_is_marker(n)) {
			if (dr_slab(n))
				devres__slab_forget(dev, n);
			else if (devres__indexed(n))
				devres__index_del(dev, n);
			continue;
		}
		mg = marker_to_group(n);
		if (DR_KIND(n) == DR_KIND_GROUP_OPEN) {
			devres__index_del(dev, n);
			if (!is_closed(mg))
				open_del(dev, mg);
		}
	}
	*todo_tail = NULL;
	*keep_tail = after;
	if (prev)
		prev->next = keep;
	else
		set_head(dev, keep);
	return todo;
}

/*
 * Group @g's range. Open: from the head down to its open marker, which
 * goes with it. Closed: what lies between its markers, which stay, dead,
 * so that the close marker's newer neighbour need not be looked for.
 */
static struct devres__node *take_group(struct device *dev,
				       struct devres__group *g)
{
	struct devres__node *todo;

	if (!is_closed(g))
		return take_range(dev, NULL, &g->open, g);
	todo = NULL;
	if (g->close.next != &g->open) {
		struct devres__node *last = g->close.next;

		while (last->next != &g->open)
			last = last->next;
		todo = take_range(dev, &g->close, last, g);
	}
	kill_group(dev, g);
	return todo;
}

/*
 * Whether @dev's list is empty as the kernel's is while it releases a
 * device, when an unknown id is a group that release took: no WARN.
 * Nothing listed but dead nodes and a layer's kept marker (the binding's,
 * which no driver can name); or this thread releases @dev's binding and
 * nothing was added since it took the binding's range: what is listed was
 * acquired before the bind, which the kernel would be releasing too.
 * Locked.
 */
static bool releasing(struct device *dev)
{
	struct devres__dm_thread *t = devres__dm_me();

	return dev->devres_listed - dev->devres_kept == dev->devres_dead ||
	       (t->unbinding == dev && list_head(dev) == t->unbound_head);
}

int devres_release_group(struct device *dev, void *id)
{
	struct devres__group *g;
	struct devres__node *todo = NULL, *dead = NULL;
	struct devres__slab *slab = NULL;
	struct dr_log lc, lo;
	bool empty, closed = false;

	if (!devres__dev_ok(dev, __func__) || !lock_dev(dev, __func__))
		return 0;
	g = find_group(dev, id);
	empty = releasing(dev);
	if (g) {
		/* A closed group's markers are logged as released with it. */
		closed = is_closed(g);
		if (closed)
			lc = dr_log_of(&g->close);
		lo = dr_log_of(&g->open);
		todo = take_group(dev, g);
		dead = maybe_compact(dev);
		slab = devres__slab_get(dev);
	}
	unlock_dev(dev);
	devres__free_dead(dead);
	if (g && closed) {
		int cnt;

		dr_log(dev, "REL", lc);
		cnt = devres__release_nodes(dev, todo, slab, false, __func__);
		dr_log(dev, "REL", lo);
		return cnt;
	}
	if (g)
		return devres__release_nodes(dev, todo, slab, false, __func__);
	if (!empty)
		warn_no_group(dev, id, __func__, "devres_release_group()");
	return 0;
}

/*
 * A layer-owned group: its owner opens it in its own storage and alone
 * releases it. find_group() never sees it, so no call of a driver, by id or
 * with a NULL id, can close, remove or release it. Its close marker is
 * never used: its size holds the owner's flags.
 */
int devres__owned_open(struct device *dev, struct devres__group *g,
		       const char *label, unsigned int flags)
{
	struct dr_log l;

	if (!lock_dev(dev, __func__))
		return -EDEADLK;
	/* Linking a listed marker again would make the list a cycle. */
	if (unlikely(g->open.kind & DR_ADDED)) {
		unlock_dev(dev);
		devres__warn(dev, __func__, "%s is already open", label);
		return -EBUSY;
	}
	g->open = (struct devres__node){ .kind = DR_KIND_OWNED };
	g->close = (struct devres__node){ .kind = DR_KIND_GROUP_CLOSE,
					  .size = flags };
	g->label = label;
	l = dr_log_of(&g->open);
	/* The ledger counts them as groups (devres/fault.h). */
	devres__ledger_add(DL_GROUPS, 1);
	add_locked(dev, &g->open);
	if (flags & DEVRES_OWNED_KEEP)
		dev->devres_kept++;
	unlock_dev(dev);
	dr_log(dev, "ADD", l);
	return 0;
}

int devres__owned_release(struct device *dev, struct devres__group *g)
{
	struct devres__dm_thread *t = devres__dm_me();
	const struct device *was = t->unbinding;
	const void *was_head = t->unbound_head, *head;
	struct devres__node *todo = NULL;
	struct devres__slab *slab = NULL;
	int cnt;

	if (!lock_dev(dev, __func__))
		return -EDEADLK;
	/* Without DEVRES_OWNED_KEEP, a release_all may have taken it. */
	if (g->open.kind & DR_ADDED) {
		todo = take_range(dev, NULL, &g->open, g);
		if (g->close.size & DEVRES_OWNED_KEEP)
			dev->devres_kept--;
		slab = devres__slab_get(dev);
	}
	head = list_head(dev);
	unlock_dev(dev);
	/* For its callbacks' releasing(); a nested one's is restored. */
	t->unbinding = dev;
	t->unbound_head = head;
	/* A WARN of the release names the owner: "driver binding". */
	cnt = devres__release_nodes(dev, todo, slab, false, g->label);
	t->unbinding = was;
	t->unbound_head = was_head;
	return cnt;
}
