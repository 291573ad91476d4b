// SPDX-License-Identifier: MIT
/*
 * The live devices of the process, for one question: which of them holds
 * the resource that a managed release was given on another device
 * (devm_kfree() of another device's memory, devm_remove_action() of
 * another's action, devres_release_group() of another's group...). A node
 * keeps no owner (its 16 bytes), so the answer is looked for on that
 * misuse path alone: each live device is asked in turn, under its own
 * devres lock, and the WARN names the one that has it and the call that
 * acquired it. Nothing is added to a node, and a call that finds what it
 * was given never comes here.
 *
 * A device enters the set at device_initialize() and leaves it at its
 * release, before its memory goes back to its owner. The set's lock is
 * held over the whole search, so that no device leaves while it is
 * looked in; nothing waits under it: a device whose devres lock is held
 * (by another thread, or by this one in a match or for-each callback of
 * it), biased to another thread (taking it would revoke the bias and wait
 * for that thread), or another process's, is passed over, and the WARN
 * then names no owner, as before.
 *
 * An open-addressing hash of device addresses (linear probing, tombstones
 * on leaving), grown by doubling: entering and leaving are O(1), and a
 * device that cannot be entered for want of memory is only never named.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "node.h"

#define TOMB ((struct device *)1)
#define MIN_CAP 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct device **slots;
static size_t cap, used, tombs;

__attribute__((constructor)) static void owners_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_OWNERS, &lock);
}

static size_t home(const struct device *dev, size_t n)
{
	uint64_t a = (uint64_t)(uintptr_t)dev;

	a ^= a >> 29;
	a *= 0x9e3779b97f4a7c15ull;
	return (size_t)(a >> 32) & (n - 1);
}

static void put(struct device **tab, size_t n, struct device *dev)
{
	size_t i = home(dev, n);

	while (tab[i] && tab[i] != TOMB)
		i = (i + 1) & (n - 1);
	tab[i] = dev;
}

/* Room for one more: rehashed (tombstones dropped), doubled if need be. */
static bool room(void)
{
	struct device **tab;
	size_t n = cap ? cap : MIN_CAP;

	if ((used + tombs + 1) * 4 <= cap * 3)
		return true;
	while ((used + 1) * 2 > n)
		n *= 2;
	tab = calloc(n, sizeof(struct device *));
	if (!tab)
		return false;
	for (size_t i = 0; i < cap; i++)
		if (slots[i] && slots[i] != TOMB)
			put(tab, n, slots[i]);
	free(slots);
	slots = tab;
	cap = n;
	tombs = 0;
	return true;
}

void devres__owners_enter(struct device *dev)
{
	pthread_mutex_lock(&lock);
	if (room()) {
		put(slots, cap, dev);
		used++;
	}
	pthread_mutex_unlock(&lock);
}

void devres__owners_leave(struct device *dev)
{
	pthread_mutex_lock(&lock);
	for (size_t i = cap ? home(dev, cap) : 0; cap && slots[i];
	     i = (i + 1) & (cap - 1)) {
		if (slots[i] == dev) {
			slots[i] = TOMB;
			used--;
			tombs++;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}

bool devres__owner_of(const struct device *dev, devres__has_t has,
		      const void *a, const void *b, const char *fix,
		      struct devres__hand *h)
{
	const char *call = NULL;
	char buf[40];

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < cap && !call; i++) {
		struct device *d = slots[i];

		if (!d || d == TOMB || d == dev || !devres__dev_mine(d) ||
		    !devres__lock_try(d, __func__))
			continue;
		call = has(d, a, b);
		if (call) {
			h->owner = d;
			h->call = call;
			h->fix = fix;
			h->pid = 0;
			snprintf(h->dev, sizeof(h->dev), "%s",
				 devres__dev_label(d, buf, sizeof(buf)));
		}
		unlock_dev(d);
	}
	pthread_mutex_unlock(&lock);
	return call != NULL;
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
