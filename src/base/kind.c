// SPDX-License-Identifier: MIT
/*
 * The kind table: one entry per release function (or per action), holding
 * its name. A node stores the 32-bit index of its kind instead of a release
 * pointer and a name pointer, which is how a node's bookkeeping fits in 16
 * bytes while logs still name every release.
 *
 * Entries are never freed: there is one per function of the program, and
 * the table is a cache that any test may leave as it is. Lookups take no
 * lock; registration takes a mutex and publishes with release stores.
 *
 * A release function's first use may be a signal handler's, on a thread
 * that is inside malloc(): the table's segments and the copies of the
 * names come from pages of their own (mmap()), never from the heap.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include "internal.h"

#define SEG_SHIFT DR_KIND_SEG_SHIFT
#define SEG_LEN (1u << SEG_SHIFT)
#define NR_SEGS DR_KIND_NR_SEGS
#define HASH_BITS DR_KIND_HASH_BITS

static struct devres__kind seg0[SEG_LEN] = {
	[DR_KIND_GROUP_OPEN] = { .name = "group <", .id = DR_KIND_GROUP_OPEN },
	[DR_KIND_GROUP_CLOSE] = { .name = "group >",
				  .id = DR_KIND_GROUP_CLOSE },
	[DR_KIND_OWNED] = { .name = "owned group", .id = DR_KIND_OWNED },
	[DR_KIND_KMALLOC] = { .name = "devm_kmalloc", .id = DR_KIND_KMALLOC },
};

/*
 * Managed memory is one kind, named by the call that made each node: one
 * name for all, as the kernel's logs have, cannot tell a devm_kzalloc()
 * from a devm_kstrdup() of the same size.
 */
const char *const devres__maker_names[DR_MK_NR] = {
	[DR_MK_KMALLOC] = "devm_kmalloc",
	[DR_MK_KZALLOC] = "devm_kzalloc",
	[DR_MK_KMALLOC_ARRAY] = "devm_kmalloc_array",
	[DR_MK_KCALLOC] = "devm_kcalloc",
	[DR_MK_KREALLOC] = "devm_krealloc",
	[DR_MK_KMEMDUP] = "devm_kmemdup",
	[DR_MK_KSTRDUP] = "devm_kstrdup",
	[DR_MK_KSTRDUP_CONST] = "devm_kstrdup_const",
	[DR_MK_KVASPRINTF] = "devm_kvasprintf",
	[DR_MK_KASPRINTF] = "devm_kasprintf",
};

struct devres__kind *devres__kind_segs[NR_SEGS] = { seg0 };
struct devres__kind *devres__kind_buckets[1u << HASH_BITS];
uint32_t devres__nr_kinds = DR_KIND_FIRST;
#define nr_kinds devres__nr_kinds
static pthread_mutex_t kind_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread is registering a kind (devres__kind_get()). */
static TLS_FAST bool registering;

/* Free in a child of fork(), whatever another thread was doing. */
static void kind_lock_take(void)
{
	pthread_mutex_lock(&kind_lock);
}

static void kind_lock_drop(void)
{
	pthread_mutex_unlock(&kind_lock);
}

__attribute__((constructor)) static void kind_atfork(void)
{
	devres__atfork(DEVRES_FORK_KIND, kind_lock_take, kind_lock_drop,
		       kind_lock_drop);
}

static struct devres__kind *search(unsigned int h, dr_release_t release,
				   void (*action)(void *))
{
	struct devres__kind *k =
		__atomic_load_n(&devres__kind_buckets[h], __ATOMIC_ACQUIRE);

	for (; k; k = __atomic_load_n(&k->hash_next, __ATOMIC_ACQUIRE))
		if (k->release == release && k->action == action)
			return k;
	return NULL;
}

uint32_t devres__kind_lookup(dr_release_t release, void (*action)(void *))
{
	struct devres__kind *k =
		search(devres__kind_hash(release, action), release, action);

	return k ? k->id : DR_KIND_NONE;
}

/* Names are copied into pages of NAME_PAGES bytes, one after the other. */
#define NAME_PAGES 65536u
static char *names_at; /* under kind_lock */
static size_t names_left;

static void *pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A copy of @name that is never freed, or NULL. Under kind_lock. */
static char *copy_name(const char *name)
{
	size_t len = strlen(name) + 1;
	char *d;

	if (len > names_left) {
		/* A long name has pages of its own; the rest are shared. */
		bool alone = len > NAME_PAGES / 4;
		char *p = pages(alone ? len : NAME_PAGES);

		if (!p)
			return NULL;
		if (alone)
			return memcpy(p, name, len);
		names_at = p;
		names_left = NAME_PAGES;
	}
	d = memcpy(names_at, name, len);
	names_at += len;
	names_left -= len;
	return d;
}

static struct devres__kind *new_slot(void)
{
	uint32_t id = nr_kinds;
	struct devres__kind **seg = &devres__kind_segs[id >> SEG_SHIFT];

	if (id >> SEG_SHIFT >= NR_SEGS)
		return NULL;
	if (!*seg) {
		struct devres__kind *fresh = pages(SEG_LEN * sizeof(*fresh));

		if (!fresh)
			return NULL;
		__atomic_store_n(seg, fresh, __ATOMIC_RELEASE);
	}
	/* Read without the lock by the check of a caller's node (devres.c). */
	__atomic_store_n(&nr_kinds, id + 1, __ATOMIC_RELEASE);
	(*seg)[id & (SEG_LEN - 1)].id = id;
	return &(*seg)[id & (SEG_LEN - 1)];
}

/*
 * Returns the kind of (@release, @action), registering it under @name on
 * first use, or DR_KIND_NONE when the table cannot grow. The name is
 * copied: devres_alloc_named() may be given one that the caller frees.
 */
uint32_t devres__kind_get(dr_release_t release, void (*action)(void *),
			  const char *name)
{
	unsigned int h = devres__kind_hash(release, action);
	struct devres__kind *k = search(h, release, action);
	bool full;

	if (likely(k))
		return k->id;

	/*
	 * A signal handler that interrupted its thread here, from before it
	 * takes the lock until after it let it go, would wait for ever for
	 * it: refused.
	 */
	if (unlikely(registering)) {
		devres__warn_async(NULL, name ? name : "devres_alloc",
				   "called from a signal handler while its "
				   "thread registers a release function or "
				   "action: refused");
		return DR_KIND_NONE;
	}
	registering = true;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&kind_lock);
	k = search(h, release, action);
	full = !k && nr_kinds >> SEG_SHIFT >= NR_SEGS;
	if (!k && !full) {
		/* A name copied for a slot the table then has not is lost. */
		char *copy = copy_name(name ? name : "?");

		k = copy ? new_slot() : NULL;
		if (k) {
			k->release = release;
			k->action = action;
			k->name = copy;
			k->hash_next = devres__kind_buckets[h];
			__atomic_store_n(&devres__kind_buckets[h], k,
					 __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&kind_lock);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	registering = false;
	/* Outside the lock: the sink may allocate, so look kinds up. */
	if (unlikely(full))
		devres__warn(NULL, name ? name : "devres_alloc",
			     "%u release functions and actions known: no room "
			     "for another",
			     (unsigned int)(NR_SEGS << SEG_SHIFT));
	return k ? k->id : DR_KIND_NONE;
}
