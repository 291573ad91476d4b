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
 *
 * A thread's lists are a slot of a static pool, claimed at its first put
 * and given back, empty, at its exit, as the ledger's tallies are
 * (ledger.c): a thread that ends with no destructor run (a raw SYS_exit)
 * never gives its slot back, and its storage, where the lists' heads
 * would otherwise be, may go with its stack. Each slot names its thread
 * (process and thread id); a slot whose thread is gone is taken over,
 * its chunks with it, by a thread that enrols: each enrolment looks at
 * one slot in turn (one system call), and a full pool at them all. A
 * thread that finds no slot caches nothing, as one with no key.
 */
#include <pthread.h>
#include "nodecache.h"
#include "subsys.h"

struct devres__nc_lists devres__nc_none = { .bytes = NC_CAP };
TLS_FAST struct devres__nodecache devres__nc = { .lists = &devres__nc_none };

/* Slots in the pool; past them, threads cache nothing. */
#define NC_SLOTS 256

static struct devres__nc_lists slots[NC_SLOTS];
/* Whose each slot is (tslots.h). */
DEVRES_TSLOTS(owners, NC_SLOTS);
/* The next slot an enrolment looks at. */
static unsigned int cursor;

static pthread_key_t drain_key;
static bool have_key;

/*
 * Chunks given back on a thread whose cache has been drained (its end,
 * after its key destructor: a later destructor's release, or a signal
 * handler's, which may have interrupted the thread inside free()). They
 * are pushed here with a compare-and-swap, never freed there, and taken
 * all at once (one exchange, so no pop meets a chunk taken twice) by the
 * next thread that goes to the heap for its cache outside its cache's
 * lists (finish_deferred()), or at the process's exit.
 */
static struct devres__node *orphans;

/*
 * Pushes @n on @list with a compare-and-swap: the orphans' list, pushed
 * by any thread; a cache's deferred chunks, by nested signal handlers.
 */
static void push(struct devres__node **list, struct devres__node *n)
{
	struct devres__node *head = __atomic_load_n(list, __ATOMIC_RELAXED);

	do
		n->next = head;
	while (!__atomic_compare_exchange_n(
		list, &head, n, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Frees the orphans, on a thread that is in neither its lists nor heap. */
static void adopt_orphans(struct devres__nodecache *nc)
{
	struct devres__node *n, *next;

	if (likely(!__atomic_load_n(&orphans, __ATOMIC_RELAXED)))
		return;
	n = __atomic_exchange_n(&orphans, NULL, __ATOMIC_ACQUIRE);
	for (; n; n = next) {
		next = n->next;
		if (nc->drained) {
			nc_busy_set(nc, NC_HEAP);
			free(n);
			nc_busy_set(nc, 0);
		} else {
			devres__nc_put_slow(n);
		}
	}
}

#ifdef NC_OFF
static struct devres__node *nq_take(size_t size, bool zero);
static bool nq_keep(struct devres__node *n);
#endif

/*
 * The chunks a signal handler freed while this thread was in the heap
 * for the cache, given back now that it is out (and not in a handler of
 * its own: @was, its flags, are clear). A handler may add more meanwhile:
 * they are taken with one exchange. Then the orphans of ended threads.
 */
static void finish_deferred(struct devres__nodecache *nc)
{
	struct devres__node *n, *next;

	if (unlikely(__atomic_load_n(&nc->deferred, __ATOMIC_RELAXED))) {
		n = __atomic_exchange_n(&nc->deferred, NULL, __ATOMIC_RELAXED);
		for (; n; n = next) {
			next = n->next;
			devres__nc_put_slow(n);
		}
	}
	adopt_orphans(nc);
}

/* Takes over slot @i if its thread is gone; its chunks come with it. */
static struct devres__nc_lists *take_over(unsigned int i)
{
	return devres__tslot_take_over(&owners, i) ? &slots[i] : NULL;
}

/* A free slot, claimed (the lowest); NULL when every one is taken. */
static struct devres__nc_lists *take_free(void)
{
	int i = devres__tslot_take_free(&owners);

	return i < 0 ? NULL : &slots[i];
}

/* Frees the chunks of @l, taken over, and gives it back. */
static void empty_slot(struct devres__nc_lists *l)
{
	for (size_t c = 0; c < NC_CLASSES; c++) {
		struct devres__node *n, *next;

		for (n = l->free[c]; n; n = next) {
			next = n->next;
			free(n);
		}
		l->free[c] = NULL;
	}
	l->bytes = 0;
	devres__tslot_give(&owners, (unsigned int)(l - slots));
}

/* Slots an enrolment looks at, in turn, for a gone thread's. */
#define LOOK 4

/*
 * A slot for an enrolling thread (in the heap for its cache: free() is
 * allowed). Of the next LOOK slots in turn, the first whose thread is
 * gone is taken over, chunks and all, and the chunks of the others gone
 * are freed and their slots given back: so the slots of gone threads
 * stay few, every enrolment taking back more than a thread leaves.
 * Else a free slot; else (the pool full) any whose thread is gone, or
 * whose thread id is now a later thread's (tslots.h).
 */
static struct devres__nc_lists *take_slot(void)
{
	unsigned int n = __atomic_load_n(&owners.used, __ATOMIC_ACQUIRE);
	struct devres__nc_lists *l = NULL, *g;

	for (unsigned int k = 0; n && k < LOOK && k < n; k++) {
		g = take_over(__atomic_fetch_add(&cursor, 1, __ATOMIC_RELAXED) %
			      n);
		if (g && !l)
			l = g;
		else if (g)
			empty_slot(g);
	}
	if (!l)
		l = take_free();
	if (!l) {
		int i = devres__tslot_reclaim(&owners);

		l = i < 0 ? NULL : &slots[i];
	}
	return l;
}

static void drain(struct devres__nodecache *nc)
{
	struct devres__nc_lists *l = nc->lists;

	nc_busy_set(nc, NC_LISTS | NC_HEAP);
	if (l != &devres__nc_none) {
		nc->lists = &devres__nc_none;
		nc->enrolled = false;
		empty_slot(l);
	}
	/* A release at a later key destructor gives its chunk to the orphans. */
	nc->drained = true;
	nc_busy_set(nc, 0);
	finish_deferred(nc);
}

static void thread_exit(void *arg)
{
	(void)arg;
	drain(&devres__nc);
}

/*
 * Made as the library loads, not at a thread's first put, which may be a
 * signal handler's (pthread_once() waits for its own thread there), and
 * so among the process's first keys, whose pthread_setspecific() writes
 * the thread's own block and allocates nothing (glibc).
 */
#ifndef NC_OFF
/*
 * fork() in a threaded program: the child has only the forking thread,
 * and the others' slots are those of threads gone there: taken over by
 * the child's next enrolments, their chunks with them.
 */
static void nc_child(void)
{
	struct devres__nc_lists *mine = devres__nc.lists;
	unsigned int n = __atomic_load_n(&owners.used, __ATOMIC_RELAXED);

	for (unsigned int i = 0; i < n; i++)
		if (&slots[i] != mine &&
		    __atomic_load_n(&owners.owner[i], __ATOMIC_RELAXED))
			__atomic_store_n(&owners.owner[i], DEVRES_TSLOT_GONE,
					 __ATOMIC_RELAXED);
	/* The child's thread has ids of its own. */
	if (mine != &devres__nc_none)
		devres__tslot_own(&owners, (unsigned int)(mine - slots));
}
#endif

__attribute__((constructor)) static void make_key(void)
{
	have_key = !pthread_key_create(&drain_key, thread_exit);
#ifndef NC_OFF
	devres__atfork(DEVRES_FORK_NODES, NULL, NULL, nc_child);
#endif
}

/*
 * The first put of a thread takes a slot and arranges for the drain at
 * its exit. Without a key or a slot, the thread caches nothing (its
 * chunks go to free()). A slot taken over from a gone thread holds its
 * chunks, this thread's from now on; the slot is published whole, so a
 * signal handler that runs on this thread meanwhile sees the lists
 * before or after, never between.
 */
static void enrol(struct devres__nodecache *nc)
{
	struct devres__nc_lists *l;

	if (!have_key) {
		nc->refused = true;
		return;
	}
	l = take_slot();
	if (!l || pthread_setspecific(drain_key, nc)) {
		if (l) {
			/* A gone thread's chunks: kept in the slot. */
			__atomic_store_n(&owners.owner[l - slots],
					 DEVRES_TSLOT_GONE, __ATOMIC_RELAXED);
		}
		nc->refused = true;
		return;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	nc->lists = l;
	nc->enrolled = true;
}

/* Key destructors do not run for the thread that calls exit(). */
__attribute__((destructor)) static void main_exit(void)
{
	drain(&devres__nc);
}

static struct devres__node *fresh(size_t size, bool zero)
{
	size_t len = sizeof(struct devres__node) +
		     (size > NC_MAX ? size : nc_room(nc_class(size)));

	return zero ? calloc(1, len) : malloc(len);
}

static struct devres__node *lists_get(struct devres__nodecache *nc,
				      unsigned int was, size_t cls)
{
	struct devres__nc_lists *l;
	struct devres__node *n;

	nc_busy_set(nc, was | NC_LISTS);
	l = nc->lists;
	n = l->free[cls];
	if (n) {
		l->free[cls] = n->next;
		l->bytes -= (cls + 1) * 16;
	}
	nc_busy_set(nc, was);
	return n;
}

static void lists_put(struct devres__nodecache *nc, unsigned int was,
		      struct devres__node *n, size_t cls)
{
	struct devres__nc_lists *l;

	nc_busy_set(nc, was | NC_LISTS);
	l = nc->lists;
	n->next = l->free[cls];
	l->free[cls] = n;
	l->bytes += (cls + 1) * 16;
	nc_busy_set(nc, was);
}

/*
 * The slow half of devres__node_get(): a large node, an empty list, an
 * ASan build, or a signal handler that interrupted its thread in the
 * cache (nodecache.h: @was, the flags it found).
 */
struct devres__node *devres__nc_get_slow(size_t size, bool zero, uint32_t kind)
{
	struct devres__nodecache *nc = &devres__nc;
	unsigned int was = nc->busy;
	struct devres__node *n = NULL;

	if (size <= NC_MAX && !(was & NC_LISTS)) {
#ifdef NC_OFF
		nc_busy_set(nc, was | NC_LISTS);
		n = nq_take(size, zero);
		nc_busy_set(nc, was);
		if (n)
			return n;
#endif
		/*
		 * The first get enrols too: a slot taken over from a gone
		 * thread serves it its chunks.
		 */
		if (NC_ON && unlikely(!nc->enrolled) && !nc->refused &&
		    !nc->drained && !(was & NC_HEAP)) {
			nc_busy_set(nc, was | NC_HEAP);
			enrol(nc);
			nc_busy_set(nc, was);
		}
		n = lists_get(nc, was, nc_class(size));
		if (n) {
			if (zero)
				memset(n + 1, 0, size);
			return n;
		}
	}
	if (unlikely(was & NC_HEAP)) {
		devres__warn_async(NULL, devres__kind_name(kind),
				   "called from a signal handler while its "
				   "thread is in malloc() or free() for the "
				   "node cache, which has no chunk to give: "
				   "refused");
		return NULL;
	}
	nc_busy_set(nc, was | NC_HEAP);
	n = fresh(size, zero);
	nc_busy_set(nc, was);
	if (!was)
		finish_deferred(nc);
	return n;
}

/* The slow half of devres__node_put(), likewise. */
void devres__nc_put_slow(struct devres__node *n)
{
	struct devres__nodecache *nc = &devres__nc;
	unsigned int was = nc->busy;

	if (unlikely(nc->drained)) {
		push(&orphans, n);
		return;
	}
	if (unlikely(was & NC_HEAP)) {
		push(&nc->deferred, n);
		return;
	}
	if (n->size <= NC_MAX && !(was & NC_LISTS)) {
#ifdef NC_OFF
		bool kept;

		nc_busy_set(nc, was | NC_LISTS);
		kept = nq_keep(n);
		nc_busy_set(nc, was);
		if (kept)
			return;
#endif
		if (NC_ON && unlikely(!nc->enrolled) && !nc->refused) {
			nc_busy_set(nc, was | NC_HEAP);
			enrol(nc);
			nc_busy_set(nc, was);
		}
		if (NC_ON && nc->lists->bytes < NC_CAP) {
			lists_put(nc, was, n, nc_class(n->size));
			return;
		}
	}
	nc_busy_set(nc, was | NC_HEAP);
	free(n);
	nc_busy_set(nc, was);
	if (!was)
		finish_deferred(nc);
}

#ifdef NC_OFF
/*
 * ASan builds. A node chunk given back to ASan's free() sits in ASan's
 * quarantine (256 MiB by default) and is not used again before that is
 * full, so every node allocated was fresh memory, its pages faulted in,
 * and every allocation and free paid for ASan's stack traces: in
 * test-lock's reaper-vs-allocator pattern, two thirds of the allocating
 * thread's time. Released chunks are kept here instead, per class, up to
 * NQ_KEEP, poisoned whole (header and data): a use after free is reported,
 * as a use after poison, with the chunk's allocation stack. A chunk is
 * taken again only once NQ_QUARANTINE newer ones of its class have been
 * released, oldest first, so that a stale pointer meets poison for that
 * long. The cache is shared by all threads: nodes are often released by
 * another thread than the one that took them (a reaper).
 */
#include <sanitizer/asan_interface.h>

/*
 * Room beyond the quarantine for a thread that allocates while the one
 * that releases does not run: on a loaded machine the reaper of test-lock
 * waits for a CPU while the allocator takes thousands of nodes a class,
 * and gives them back at once. With room for 2 048 (NQ_KEEP 4 096), the
 * rest of each swing went to free() and came again as fresh chunks: 72 000
 * in 200 000 rounds at load 6, 17 000 with this room.
 */
#define NQ_KEEP 16384
#define NQ_QUARANTINE 2048

struct nq_ring {
	struct devres__node *slot[NQ_KEEP];
	unsigned int head, count; /* the oldest, and how many */
};

static pthread_mutex_t nq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nq_ring nq[NC_CLASSES];

__attribute__((constructor)) static void nq_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_NODES, &nq_lock);
}

/* A chunk's bytes: the header and its class's room (nc_fresh()). */
static size_t nq_len(size_t cls)
{
	return sizeof(struct devres__node) + nc_room(cls);
}

static struct devres__node *nq_take(size_t size, bool zero)
{
	size_t cls = nc_class(size);
	struct nq_ring *r = &nq[cls];
	struct devres__node *n = NULL;

	pthread_mutex_lock(&nq_lock);
	if (r->count > NQ_QUARANTINE) {
		n = r->slot[r->head];
		r->head = (r->head + 1) % NQ_KEEP;
		r->count--;
	}
	pthread_mutex_unlock(&nq_lock);
	if (!n)
		return NULL;
	ASAN_UNPOISON_MEMORY_REGION(n, nq_len(cls));
	if (zero)
		memset(n + 1, 0, size);
	return n;
}

static bool nq_keep(struct devres__node *n)
{
	size_t cls = nc_class(n->size);
	struct nq_ring *r = &nq[cls];
	bool kept = false;

	/* Poisoned before another thread can take it. */
	ASAN_POISON_MEMORY_REGION(n, nq_len(cls));
	pthread_mutex_lock(&nq_lock);
	if (r->count < NQ_KEEP) {
		r->slot[(r->head + r->count) % NQ_KEEP] = n;
		r->count++;
		kept = true;
	}
	pthread_mutex_unlock(&nq_lock);
	if (!kept)
		ASAN_UNPOISON_MEMORY_REGION(n, nq_len(cls));
	return kept;
}
#endif
