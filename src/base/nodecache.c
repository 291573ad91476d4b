// SPDX-License-Identifier: MIT
/*
 * A per-thread cache of node chunks. devres_alloc() has no device to carve
 * from, so its nodes are heap chunks; a thread that releases many (every
 * devres_release_all() of a device with named resources or actions) keeps
 * them, by size class, for its next devres_alloc(), as glibc's own tcache
 * does with a handful: a pop and a push instead of malloc() and free().
 *
 * Bounded: at most NC_CAP bytes a thread; beyond, chunks go to free(). A
 * thread's cache is emptied when it exits, and the main thread's at exit.
 */
#include <pthread.h>
#include "nodecache.h"

TLS_FAST struct devres__nodecache devres__nc;

static pthread_key_t drain_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool have_key;

static void drain(struct devres__nodecache *nc)
{
	for (size_t c = 0; c < NC_CLASSES; c++) {
		struct devres__node *n, *next;

		for (n = nc->free[c]; n; n = next) {
			next = n->next;
			free(n);
		}
		nc->free[c] = NULL;
	}
	nc->bytes = 0;
}

static void thread_exit(void *arg)
{
	(void)arg;
	drain(&devres__nc);
	/* A release at a later key destructor frees instead of caching. */
	devres__nc.bytes = NC_CAP;
}

static void make_key(void)
{
	have_key = !pthread_key_create(&drain_key, thread_exit);
}

/*
 * The first put of a thread arranges for the drain at its exit. Without a
 * key, the thread caches nothing (its chunks go to free()).
 */
void devres__nc_enrol(void)
{
	pthread_once(&key_once, make_key);
	if (!have_key || pthread_setspecific(drain_key, &devres__nc)) {
		devres__nc.bytes = NC_CAP;
		return;
	}
	devres__nc.enrolled = true;
}

/* Key destructors do not run for the thread that calls exit(). */
__attribute__((destructor)) static void main_exit(void)
{
	drain(&devres__nc);
	devres__nc.bytes = NC_CAP;
}

struct devres__node *devres__nc_fresh(size_t size, bool zero)
{
	size_t len = sizeof(struct devres__node) +
		     (size > NC_MAX ? size : nc_room(nc_class(size)));

	return zero ? calloc(1, len) : malloc(len);
}
