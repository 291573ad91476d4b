// SPDX-License-Identifier: MIT
/*
 * The list checker: what must hold of a device's list whatever was done to
 * it (tal has tal_check(), the kernel has lockdep and BUG_ON). Users and
 * tests ask with devres_check(); debug and sanitizer builds also check by
 * themselves at every devres_release_all() and abort on what they find,
 * because a broken list only gets worse: a cycle makes the next walk spin
 * with the lock held, a lost marker frees a group twice.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "node.h"

void devres__bug(const struct device *dev, const char *func, const char *fmt,
		 ...)
{
	char msg[256], line[384], buf[40];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/*
	 * Straight to stderr's descriptor: the sink may be what is broken,
	 * and stdio's lock may be held by the thread this one interrupted
	 * or by a thread of the parent that is gone after a fork().
	 */
	snprintf(line, sizeof(line), "BUG: %s: %s: %s",
		 devres__dev_label(dev, buf, sizeof(buf)), func, msg);
	devres__log_raw(line);
	abort();
}

/* The number of nodes on a list, or -1 when it is a cycle (Brent). */
static long length_of(struct devres__node *head)
{
	struct devres__node *tortoise = head, *hare;
	unsigned long power = 1, lam = 1;
	long n = 1;

	if (!tortoise)
		return 0;
	for (hare = tortoise->next; hare; hare = hare->next, lam++, n++) {
		if (hare == tortoise)
			return -1;
		if (power == lam) {
			tortoise = hare;
			power *= 2;
			lam = 0;
		}
	}
	return n;
}

static bool kind_known(uint32_t id)
{
	const struct devres__kind *seg;

	if (id == DR_KIND_NONE || id >> DR_KIND_SEG_SHIFT >= DR_KIND_NR_SEGS)
		return false;
	seg = __atomic_load_n(&devres__kind_segs[id >> DR_KIND_SEG_SHIFT],
			      __ATOMIC_ACQUIRE);
	return seg && seg[id & ((1u << DR_KIND_SEG_SHIFT) - 1)].id == id;
}

/* Only managed memory names its maker, and only a known one. */
static bool maker_ok(const struct devres__node *n)
{
	uint32_t mk = (kind_load(n) & DR_MAKER_MASK) >> DR_MAKER_SHIFT;

	if (DR_KIND(n) == DR_KIND_KMALLOC)
		return mk < DR_MK_NR;
	return mk == 0;
}

static bool is_kept(const struct devres__node *n)
{
	return DR_KIND(n) == DR_KIND_OWNED &&
	       (container_of(n, struct devres__group, open)->close.size &
		DEVRES_OWNED_KEEP);
}

#define BAD(...) (snprintf(why, len, __VA_ARGS__), -EUCLEAN)

/*
 * Pairs the group markers, newest first: a closed group's close marker
 * comes before its open marker, an open group has no close marker, a
 * layer-owned group is never closed. The open marker's size (the colour
 * that devres_release_group() uses as scratch) counts what was met: 1
 * after the close marker, 2 after the open one.
 */
static int pair_markers(const struct devres__list_view *v,
			unsigned long *ret_kept, char *why, size_t len)
{
	struct devres__node *n;
	unsigned long kept = 0;

	for (n = v->head; n; n = n->next)
		if (dr_is_marker(n))
			marker_to_group(n)->open.size = 0;
	for (n = v->head; n; n = n->next) {
		struct devres__group *g;
		uint32_t want;

		if (!dr_is_marker(n) || dr_dead(n))
			continue;
		g = marker_to_group(n);
		switch (DR_KIND(n)) {
		case DR_KIND_GROUP_CLOSE:
			if (DR_KIND(&g->open) != DR_KIND_GROUP_OPEN)
				return BAD("close marker %p closes no group",
					   (void *)n);
			if (g->open.size)
				return BAD("group %p is closed twice", g->id);
			g->open.size = 1;
			break;
		case DR_KIND_GROUP_OPEN:
			/*
			 * Open: stacked, its close marker a stack entry.
			 * Else its close marker is one, and listed (a link
			 * there, aligned, is never the kind's 2).
			 */
			want = (kind_load(n) & DR_STACKED) ? 0 : 1;
			if (want &&
			    (DR_KIND(&g->close) != DR_KIND_GROUP_CLOSE ||
			     !(g->close.kind & DR_ADDED)))
				return BAD("group %p is neither open nor "
					   "closed",
					   g->id);
			if (g->open.size != want)
				return BAD("group %p is marked %s but its "
					   "close marker is %s",
					   g->id, want ? "closed" : "open",
					   want ? "not newer" : "listed");
			g->open.size = 2;
			break;
		default: /* DR_KIND_OWNED */
			if ((g->close.kind & DR_ADDED) ||
			    (kind_load(n) & DR_STACKED))
				return BAD("layer-owned group %s is closed",
					   g->label);
			kept += is_kept(n);
			break;
		}
	}
	for (n = v->head; n; n = n->next)
		if (DR_KIND(n) == DR_KIND_GROUP_CLOSE && !dr_dead(n) &&
		    marker_to_group(n)->open.size != 2)
			return BAD("group %p has a close marker but no open "
				   "marker",
				   marker_to_group(n)->id);
	*ret_kept = kept;
	return 0;
}

/*
 * The stack of open groups is exactly the stacked open markers on the list,
 * in the list's order (newest first), each linked back to the one before:
 * a lost or extra entry would make a NULL id name the wrong group, a bad
 * back link corrupt the stack at the next close. Bounded by the list, which
 * is no cycle.
 */
static int check_stack(const struct devres__list_view *v, char *why, size_t len)
{
	struct devres__group *want = v->open, *newer = NULL;
	struct devres__node *n;

	for (n = v->head; n; n = n->next) {
		if (!(kind_load(n) & DR_STACKED))
			continue;
		if (DR_KIND(n) != DR_KIND_GROUP_OPEN || dr_dead(n))
			return BAD("node %p is marked open but is no live "
				   "group",
				   node_data(n));
		if (!want || n != &want->open)
			return BAD("open group %p is not where the stack of "
				   "open groups has it",
				   open_to_group(n)->id);
		if (want->stack.newer != newer)
			return BAD("open group %p links back to %p, not %p",
				   want->id, (void *)want->stack.newer,
				   (void *)newer);
		newer = want;
		want = want->stack.older;
	}
	if (want)
		return BAD("the stack of open groups holds %p, which is not "
			   "listed as open",
			   (void *)want);
	return 0;
}

static int check_view(const struct devres__list_view *v,
		      struct devres_stats *ret_stats, char *why, size_t len)
{
	long allocs = 0, bytes = 0, st_allocs, st_bytes, nodes;
	unsigned long dead = 0, indexed = 0, kept;
	struct devres__node *n;
	int ret;

	/*
	 * An empty list is consistent when every count says so: the walks
	 * below would find nothing. It is what a devres_release_all() that
	 * runs again and again finds, and all of this may run with the
	 * lock held, which another thread may be waiting for.
	 */
	if (!v->head && !v->listed && !v->dead && !v->kept && !v->open &&
	    v->indexed <= 0) {
		if (ret_stats)
			*ret_stats = (struct devres_stats){ 0, 0 };
		return 0;
	}
	nodes = length_of(v->head);
	if (nodes < 0)
		return BAD("the list is a cycle");
	for (n = v->head; n; n = n->next) {
		if (!(kind_load(n) & DR_ADDED))
			return BAD("node %p is listed but not marked added",
				   node_data(n));
		if (!kind_known(DR_KIND(n)))
			return BAD("node %p is of no known kind (%u)",
				   node_data(n), (unsigned int)DR_KIND(n));
		if (!maker_ok(n))
			return BAD("node %p has a bad maker (%#x)",
				   node_data(n), (unsigned int)kind_load(n));
		if (dr_dead(n)) {
			dead++;
			continue;
		}
		indexed += devres__indexed(n);
		if (!dr_is_marker(n)) {
			allocs++;
			bytes += n->size;
		}
	}
	ret = pair_markers(v, &kept, why, len);
	if (!ret)
		ret = check_stack(v, why, len);
	if (ret)
		return ret;
	if (kept != v->kept)
		return BAD("%lu kept layer-owned markers listed, %lu counted",
			   kept, v->kept);
	if ((unsigned long)nodes != v->listed || dead != v->dead)
		return BAD("%ld nodes listed (%lu dead), %lu counted (%lu "
			   "dead)",
			   nodes, dead, v->listed, v->dead);
	if (v->indexed >= 0 && (long)indexed != v->indexed)
		return BAD("%lu listed nodes are named by a key, the index "
			   "holds %ld",
			   indexed, v->indexed);
	devres__stats_of(v->head, &st_allocs, &st_bytes);
	if (st_allocs != allocs || st_bytes != bytes)
		return BAD("stats count %ld nodes of %ld bytes, the list holds "
			   "%ld of %ld",
			   st_allocs, st_bytes, allocs, bytes);
	if (ret_stats)
		*ret_stats = (struct devres_stats){ (int)allocs, (int)bytes };
	return 0;
}

static void view_of(struct device *dev, struct devres__list_view *v)
{
	assert_locked(dev, __func__);
	*v = (struct devres__list_view){
		.head = list_head(dev),
		.listed = dev->devres_listed,
		.dead = dev->devres_dead,
		.kept = dev->devres_kept,
		.open = dev->devres_open,
		.indexed = devres__index_count(dev),
	};
}

int devres__check_locked(struct device *dev, struct devres_stats *ret_stats,
			 char *why, size_t len)
{
	struct devres__list_view v;

	view_of(dev, &v);
	return check_view(&v, ret_stats, why, len);
}

#ifdef DEVRES_CHECKS
void devres__assert_list_locked(struct device *dev, const char *func)
{
	char why[160];

	if (unlikely(devres__check_locked(dev, NULL, why, sizeof(why))))
		devres__bug(dev, func, "broken devres list: %s", why);
}

void devres__list_view_locked(struct device *dev,
			      struct devres__list_view *ret_view)
{
	view_of(dev, ret_view);
}

/*
 * A list taken off its device whole, with the counts it had: no other
 * thread can reach its nodes now (the device's head, index and stack of
 * open groups were reset with the lock held), so it is checked without
 * the lock, which the threads that fill the device are waiting for.
 */
void devres__assert_view(const struct device *dev,
			 const struct devres__list_view *view, const char *func)
{
	char why[160];

	if (unlikely(check_view(view, NULL, why, sizeof(why))))
		devres__bug(dev, func, "broken devres list: %s", why);
}
#endif

int devres_check(struct device *dev)
{
	char why[160];
	int ret, err = errno;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	if (!lock_dev(dev, __func__))
		return -EDEADLK;
	ret = devres__check_locked(dev, NULL, why, sizeof(why));
	/* A walk of the whole table: here, not at every release_all. */
	if (!ret && !devres__index_sound(dev)) {
		snprintf(why, sizeof(why),
			 "the index's slots do not match its counts");
		ret = -EUCLEAN;
	}
	unlock_dev(dev);
	if (ret)
		devres__warn(dev, __func__, "broken devres list: %s", why);
	errno = err;
	return ret;
}
