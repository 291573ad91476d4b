// SPDX-License-Identifier: MIT
/*
 * Groups: two markers in the device's list, so that a mid-layer can release
 * only what it acquired. Also groups owned by a layer above (the driver
 * core's binding is one), which no driver can name.
 */
#include <errno.h>
#include <stdlib.h>
#include "node.h"

static bool is_closed(const struct devres__group *g)
{
	return g->close.kind & DR_ADDED;
}

/* The group with @id, or the newest open one when @id is NULL. */
static struct devres__group *find_group(struct device *dev, void *id)
{
	struct devres__node *n;

	assert_locked(dev, __func__);
	for (n = list_head(dev); n; n = n->next) {
		struct devres__group *g;

		if (DR_KIND(n) != DR_KIND_GROUP_OPEN)
			continue;
		g = open_to_group(n);
		if (id ? g->id == id : !is_closed(g))
			return g;
	}
	return NULL;
}

static struct devres__node *prev_of(struct device *dev,
				    struct devres__node *target)
{
	struct devres__node *prev = NULL, *n;

	assert_locked(dev, __func__);
	for (n = list_head(dev); n != target; n = n->next)
		prev = n;
	return prev;
}

static void unlink_node(struct device *dev, struct devres__node *n)
{
	unlink_after(dev, prev_of(dev, n), n);
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
	g->close = (struct devres__node){ .kind = DR_KIND_GROUP_CLOSE };
	g->id = id ? id : g;
	id = g->id;
	l = dr_log_of(&g->open);
	if (!lock_dev(dev, __func__)) {
		free(g);
		return NULL;
	}
	devres__ledger_add(DL_GROUPS, 1);
	add_locked(dev, &g->open);
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
		if (!closed)
			add_locked(dev, &g->close);
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

void devres_remove_group(struct device *dev, void *id)
{
	struct devres__group *g;

	if (!devres__dev_ok(dev, __func__) || !lock_dev(dev, __func__))
		return;
	g = find_group(dev, id);
	if (g) {
		if (is_closed(g))
			unlink_node(dev, &g->close);
		unlink_node(dev, &g->open);
	}
	unlock_dev(dev);
	if (!g) {
		devres__warn(dev, __func__, "no group %p", id);
		return;
	}
	log_node(dev, "REM", &g->open);
	devres__ledger_add(DL_GROUPS, -1);
	free(g);
}

/*
 * Colour 2 removes a group with the range. A layer-owned marker goes only
 * with its own release: a driver's group that encloses it releases the
 * resources acquired after it, but its owner still finds it.
 */
static bool removable(struct devres__group *mg, struct devres__group *g)
{
	if (DR_KIND(&mg->open) == DR_KIND_OWNED && mg != g)
		return false;
	return mg->open.size == 2;
}

/*
 * Takes the range of group @g off the list: from its close marker (or the
 * head, while it is open) down to its open marker. Resources in the range
 * go to the returned chain, newest first. A group is removed with them when
 * it lies wholly inside the range (both markers in it, or its open marker
 * when it is still open): the kernel's colour rule, colour 2. Markers of
 * the other groups stay in place, in their order.
 */
static struct devres__node *take_range(struct device *dev,
				       struct devres__group *g)
{
	struct devres__node *first = is_closed(g) ? &g->close : list_head(dev);
	struct devres__node *last = &g->open;
	struct devres__node *prev = prev_of(dev, first);
	struct devres__node *after = last->next;
	struct devres__node *todo = NULL, **todo_tail = &todo;
	struct devres__node *keep = NULL, **keep_tail = &keep;
	struct devres__node *n, *next;

	assert_locked(dev, __func__);
	for (n = first; n != after; n = n->next)
		if (dr_is_marker(n))
			marker_to_group(n)->open.size = 0;
	for (n = first; n != after; n = n->next) {
		struct devres__group *mg;

		if (!dr_is_marker(n))
			continue;
		mg = marker_to_group(n);
		mg->open.size++;
		if (!is_closed(mg))
			mg->open.size++;
	}

	for (n = first; n != after; n = next) {
		next = n->next;
		if (dr_is_marker(n) && !removable(marker_to_group(n), g)) {
			*keep_tail = n;
			keep_tail = &n->next;
		} else {
			*todo_tail = n;
			todo_tail = &n->next;
		}
	}
	*todo_tail = NULL;
	*keep_tail = after;
	if (prev)
		prev->next = keep;
	else
		dev->devres_head = keep;
	return todo;
}

int devres_release_group(struct device *dev, void *id)
{
	struct devres__group *g;
	struct devres__node *todo = NULL;
	bool empty;

	if (!devres__dev_ok(dev, __func__) || !lock_dev(dev, __func__))
		return 0;
	g = find_group(dev, id);
	empty = !list_head(dev);
	if (g)
		todo = take_range(dev, g);
	unlock_dev(dev);
	if (g)
		return devres__release_nodes(dev, todo);
	if (!empty)
		devres__warn(dev, __func__, "no group %p", id);
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
	struct devres__node *todo = NULL;

	if (!lock_dev(dev, __func__))
		return -EDEADLK;
	/* Without DEVRES_OWNED_KEEP, a release_all may have taken it. */
	if (g->open.kind & DR_ADDED) {
		todo = take_range(dev, g);
		if (g->close.size & DEVRES_OWNED_KEEP)
			dev->devres_kept--;
	}
	unlock_dev(dev);
	return devres__release_nodes(dev, todo);
}
