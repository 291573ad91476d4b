// SPDX-License-Identifier: MIT
/*
 * Looking at a device's resources: devres_dump() and devres_get_stats().
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include "node.h"

struct entry {
	const void *addr;
	uint32_t kind;
	uint32_t size;
	const void *group;
};

static size_t count_locked(struct device *dev)
{
	size_t n = 0;

	assert_locked(dev, __func__);
	for (struct devres__node *p = list_head(dev); p; p = p->next)
		n += !dr_dead(p);
	return n;
}

/*
 * Copies up to @cap entries, newest first; returns how many there were, and
 * in @ret_markers how many of them were group or layer markers.
 */
static size_t copy_locked(struct device *dev, struct entry *e, size_t cap,
			  size_t *ret_markers)
{
	size_t n = 0, markers = 0;

	assert_locked(dev, __func__);
	for (struct devres__node *p = list_head(dev); p; p = p->next) {
		if (dr_dead(p))
			continue;
		markers += dr_is_marker(p);
		if (n++ >= cap)
			continue;
		e[n - 1].addr = node_data(p);
		/* Its maker too: the dump names managed memory by its call. */
		e[n - 1].kind = p->kind & ~DR_FLAGS;
		e[n - 1].size = p->size;
		/* A layer-owned group's label, or a group's id. */
		e[n - 1].group = dr_is_marker(p) ? marker_to_group(p)->id
						 : NULL;
	}
	*ret_markers = markers;
	return n;
}

static void print_entry(FILE *f, const struct entry *e)
{
	switch (e->kind) {
	case DR_KIND_GROUP_OPEN:
		fprintf(f, "  group %p {\n", e->group);
		break;
	case DR_KIND_GROUP_CLOSE:
		fprintf(f, "  } group %p\n", e->group);
		break;
	case DR_KIND_OWNED:
		fprintf(f, "  -- %s --\n", (const char *)e->group);
		break;
	default:
		fprintf(f, "  %p %s (%u bytes)\n", e->addr,
			devres__kind_name(e->kind), e->size);
	}
}

static void dump(struct device *dev, FILE *f, const char *func)
{
	struct entry *e;
	size_t cap, n, markers;
	char buf[40], why[480];

	if (!devres__dev_ok(dev, func))
		return;
	if (devres__arg_bad(dev, f, func, "FILE"))
		return;
	if (!lock_dev(dev, func))
		return;
	cap = count_locked(dev) + 16;
	unlock_dev(dev);

	/* Allocate outside the lock, then copy what fits. */
	e = malloc(cap * sizeof(*e));
	if (!e) {
		fprintf(f, "%s: (no memory to dump)\n",
			devres__dev_label(dev, buf, sizeof(buf)));
		return;
	}
	if (!lock_dev(dev, func)) {
		free(e);
		return;
	}
	n = copy_locked(dev, e, cap, &markers);
	unlock_dev(dev);

	/* Resources as devres_get_stats() counts them; markers apart. */
	fprintf(f, "%s: %zu resources, %zu markers\n",
		devres__dev_label(dev, buf, sizeof(buf)), n - markers, markers);
	if (devres__defer_reason_copy(dev, why, sizeof(why)))
		fprintf(f, "  deferred probe pending: %s\n", why);
	for (size_t i = n < cap ? n : cap; i > 0; i--)
		print_entry(f, &e[i - 1]);
	if (n > cap)
		fprintf(f, "  ... %zu newer nodes not shown\n", n - cap);
	free(e);
}

/* A FILE that fails sets errno; the caller's is given back. */
void devres_dump(struct device *dev, FILE *f)
{
	int err = errno;

	dump(dev, f, __func__);
	errno = err;
}

/* The stats and the list checker count alike: every non-marker node. */
void devres__stats_of(struct devres__node *head, long *ret_allocs,
		      long *ret_bytes)
{
	long allocs = 0, bytes = 0;

	for (struct devres__node *p = head; p; p = p->next) {
		if (dr_is_marker(p) || dr_dead(p))
			continue;
		allocs++;
		bytes += p->size;
	}
	*ret_allocs = allocs;
	*ret_bytes = bytes;
}

void devres__stats_locked(struct device *dev, long *ret_allocs, long *ret_bytes)
{
	assert_locked(dev, __func__);
	devres__stats_of(list_head(dev), ret_allocs, ret_bytes);
}

void devres_get_stats(struct device *dev, struct devres_stats *stats)
{
	long allocs, bytes;

	if (devres__arg_bad(NULL, stats, __func__, "stats"))
		return;
	*stats = (struct devres_stats){ 0, 0 };
	if (!devres__dev_ok(dev, __func__) || !lock_dev(dev, __func__))
		return;
	devres__stats_locked(dev, &allocs, &bytes);
	unlock_dev(dev);
	stats->allocs = allocs > INT_MAX ? INT_MAX : (int)allocs;
	stats->total_size = bytes > INT_MAX ? INT_MAX : (int)bytes;
}
