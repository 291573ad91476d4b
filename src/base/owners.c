// SPDX-License-Identifier: MIT
/*
 * Which device holds the resource that a managed release was given on
 * another device (devm_kfree() of another device's memory,
 * devm_remove_action() of another's action, devres_release_group() of
 * another's group...). A node keeps no owner (its 16 bytes), so the
 * answer is looked for on that misuse path alone: the devices registered
 * on a bus are asked in turn, under their own devres lock, and the WARN
 * names the one that has it and the call that acquired it. Nothing is
 * added to a node or to a device's life, and a call that finds what it
 * was given never comes here.
 *
 * The walk over the devices is the driver model's (bus.c), given at load:
 * the core knows nothing of buses. Its lock keeps each device registered
 * while it is asked. Nothing waits under it: a device whose devres lock
 * is held (by another thread, or by this one in a match or for-each
 * callback of it), biased to another thread (taking it would revoke the
 * bias and wait for that thread), or another process's, is passed over,
 * and the WARN then names no owner, as it did before; so is every device
 * when the walk's lock is not to be had at once.
 */
#include <stdint.h>
#include <stdio.h>
#include "node.h"

static devres__owners_walk_t walker;

void devres__owners_walk_set(devres__owners_walk_t walk)
{
	__atomic_store_n(&walker, walk, __ATOMIC_RELEASE);
}

struct ask {
	const struct device *dev;
	devres__has_t has;
	const void *a, *b;
	const char *fix;
	struct devres__hand *h;
	bool found;
};

static bool visit(struct device *d, void *ctx)
{
	struct ask *q = ctx;
	const char *call;
	char buf[40];

	if (d == q->dev || !devres__dev_mine(d) ||
	    !devres__lock_try(d, "devres__owner_of"))
		return true;
	call = q->has(d, q->a, q->b);
	if (call) {
		q->h->owner = d;
		q->h->call = call;
		q->h->fix = q->fix;
		q->h->pid = 0;
		snprintf(q->h->dev, sizeof(q->h->dev), "%s",
			 devres__dev_label(d, buf, sizeof(buf)));
		q->found = true;
	}
	unlock_dev(d);
	return !call;
}

bool devres__owner_of(const struct device *dev, devres__has_t has,
		      const void *a, const void *b, const char *fix,
		      struct devres__hand *h)
{
	devres__owners_walk_t walk = __atomic_load_n(&walker, __ATOMIC_ACQUIRE);
	struct ask q = { dev, has, a, b, fix, h, false };

	if (walk)
		walk(visit, &q);
	return q.found;
}

struct node_q {
	uint32_t kind;
	dr_match_t match;
	void *data;
	const char *call;
};

static const char *has_node(struct device *dev, const void *a, const void *b)
{
	const struct node_q *q = a;

	(void)b;
	return devres__find_locked(dev, q->kind, q->match, q->data, NULL)
		       ? q->call
		       : NULL;
}

bool devres__owner_of_node(const struct device *dev, dr_release_t release,
			   dr_match_t match, void *data, const char *call,
			   const char *fix, struct devres__hand *h)
{
	struct node_q q = { devres__kind_lookup(release, NULL), match, data,
			    call };

	if (q.kind == DR_KIND_NONE)
		return false;
	return devres__owner_of(dev, has_node, &q, NULL, fix, h);
}
