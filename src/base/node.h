/* SPDX-License-Identifier: MIT */
/*
 * The device's list and its lock, shared by the files of the devres core
 * (devres.c, group.c, action.c, kmalloc.c, debug.c, check.c).
 */
#ifndef DEVRES_NODE_H
#define DEVRES_NODE_H

#include <sched.h>
#include <stdlib.h>
#include "internal.h"
#include "nodecache.h"

static inline struct devres__node *to_node(const void *res)
{
	return (struct devres__node *)(((char *)res) -
				       sizeof(struct devres__node));
}

static inline void *node_data(struct devres__node *n)
{
	return n + 1;
}

static inline struct devres__group *open_to_group(struct devres__node *n)
{
	return container_of(n, struct devres__group, open);
}

static inline struct devres__group *marker_to_group(struct devres__node *n)
{
	if (DR_KIND(n) == DR_KIND_GROUP_CLOSE)
		return container_of(n, struct devres__group, close);
	return container_of(n, struct devres__group, open);
}

static inline struct devres__node *list_head(struct device *dev)
{
	return (struct devres__node *)dev->devres_head;
}

/*
 * The head is written under the lock, atomically: devres_release_all()
 * looks at it without the lock to see a device with nothing listed.
 */
static inline void set_head(struct device *dev, struct devres__node *n)
{
	__atomic_store_n(&dev->devres_head, (void *)n, __ATOMIC_RELAXED);
}

/*
 * Any per-thread address identifies the lock's owner. The thread pointer
 * is one, and costs no thread-local access: in a shared library that is
 * a call through a TLS descriptor, and the fast paths would pay several.
 */
extern HIDDEN TLS_FAST char devres__self;

static inline void *devres__me(void)
{
#if defined(__x86_64__)
	void *p;

	/* The TCB's pointer to itself, as glibc and musl lay it out. */
	__asm__("mov %%fs:0, %0" : "=r"(p));
	return p;
#elif defined(__aarch64__) && defined(__GNUC__)
	return __builtin_thread_pointer();
#else
	return (void *)&devres__self;
#endif
}

HIDDEN bool devres__lock_slow(struct device *dev, const char *func);
/*
 * The device's devres lock if it is free now: never waits, never revokes
 * another thread's bias, and is refused (false) to this thread inside a
 * match or for-each callback of @dev. For a look into another device's
 * list from a misuse path (owners.c). Let go with unlock_dev().
 */
HIDDEN bool devres__lock_try(struct device *dev, const char *func);
/* The owner of the bias left its critical section during a revocation. */
HIDDEN void devres__bias_left(struct device *dev);

/*
 * Built with -DDR_HOLD_TRACE (hold.c), how long each thread held the lock
 * in devm_kmalloc() and devm_kfree(), for bench-hold; with
 * -DDR_HOLD_CALLGRIND too, callgrind counts the held regions only.
 */
#ifdef DR_HOLD_TRACE
HIDDEN void devres__hold_begin(const char *func);
HIDDEN void devres__hold_end(void);
#else
#define devres__hold_begin(func) ((void)(func))
#define devres__hold_end() ((void)0)
#endif

/*
 * Every helper that walks or changes the list asserts that the calling
 * thread holds the device's lock (debug and sanitizer builds only: the
 * owner is recorded anyway, for the re-entry WARN).
 */
#ifdef DEVRES_CHECKS
static inline void assert_locked(const struct device *dev, const char *func)
{
	if (unlikely(__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) !=
		     devres__me()))
		devres__bug(dev, func,
			    "called without holding the device's devres lock");
}
#else
#define assert_locked(dev, func) ((void)(dev), (void)(func))
#endif

/*
 * The devres lock: a word that a thread takes with one compare-and-swap,
 * spins on briefly when it is held, then sleeps on with a futex (lock.c).
 * Critical sections are a few pointer moves, and an uncontended pthread
 * mutex would double the cost of a managed allocation. Taking it twice in
 * one thread (from a match or for-each callback) WARNs and fails rather
 * than deadlocking.
 *
 * It is biased to the first thread that takes it (lock.c): that thread
 * takes it with plain stores and loads, no locked instruction, until
 * another thread wants it and revokes the bias, once, with membarrier().
 * ThreadSanitizer cannot see membarrier(): TSan builds use the plain
 * atomic lock only.
 */
#if defined(__SANITIZE_THREAD__)
#define DR_NO_BIAS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DR_NO_BIAS 1
#endif
#endif

/*
 * devres_bias once a second thread took the lock: from then on, for the
 * device's life, several threads use it (slab-shared.c carves for that).
 */
#define DR_BIAS_REVOKED ((void *)1)

/*
 * With the lock held: whether other threads may use the device too. The
 * first taker gets the bias in its first critical section, so a device
 * without one (no membarrier(), or a TSan build) may be shared anytime.
 */
static inline bool dev_shared(const struct device *dev)
{
#ifdef DR_NO_BIAS
	(void)dev;
	return true;
#else
	return (uintptr_t)__atomic_load_n(&dev->devres_bias,
					  __ATOMIC_RELAXED) <=
	       (uintptr_t)DR_BIAS_REVOKED;
#endif
}

/*
 * The atomic lock's word (devres_lock). LOCKED: held. PARKED: a thread
 * may sleep on the word, and the unlock wakes one. STARVING: a waiter that
 * has waited too long spins; unlocks hand the lock over to it instead of
 * letting it go. HANDOFF (with LOCKED): handed over to a starving thread,
 * or to a due one, which takes it; newcomers see it held. The due
 * waiters (bits 8 to 31), those that have waited past the bound of
 * eventual fairness, in the order they came due: the next ticket (bits 8
 * to 19) and the ticket served next (bits 20 to 31), both modulo 4096;
 * while they differ the word stays LOCKED and every unlock hands the lock
 * over to the waiter whose ticket is served, running or not.
 */
#define DR_LOCKED 1u
#define DR_PARKED 2u
#define DR_STARVING 4u
#define DR_HANDOFF 8u
#define DR_DUE_TAIL(v) (((v) >> 8) & 0xfffu)
#define DR_DUE_HEAD(v) ((v) >> 20)
#define DR_DUE_COUNT(v) ((DR_DUE_TAIL(v) - DR_DUE_HEAD(v)) & 0xfffu)

static inline unsigned int *lock_word(struct device *dev)
{
	return (unsigned int *)&dev->devres_lock;
}

HIDDEN void devres__unlock_slow(struct device *dev);

/*
 * How often a thread slept on a lock word, took one handed over, and of
 * those, took one handed over to it as due.
 */
extern HIDDEN unsigned long devres__lock_parks;
extern HIDDEN unsigned long devres__lock_handoffs;
extern HIDDEN unsigned long devres__lock_due_handoffs;

/* Nobody waits: one compare-and-swap; else lock.c wakes or hands over. */
static inline void word_unlock(struct device *dev)
{
	unsigned int v = DR_LOCKED;

	if (likely(__atomic_compare_exchange_n(lock_word(dev), &v, 0, false,
					       __ATOMIC_RELEASE,
					       __ATOMIC_RELAXED)))
		return;
	devres__unlock_slow(dev);
}

/*
 * The device whose atomic lock this thread is taking or letting go (lock.c
 * sets it from before it takes the word until its owner is recorded;
 * unlock_dev() from before the record is cleared until the word is free).
 * A signal handler run on this thread then must not wait for the word
 * its own thread holds: devres__lock_slow() refuses it.
 */
extern HIDDEN TLS_FAST struct device *devres__lock_busy;

/*
 * The address of this thread's devres__lock_busy, found once. In the
 * shared library every use of a thread-local variable is a call through
 * its TLS descriptor, and the compiler calls again rather than keep the
 * address in a register (it takes the call for a cheap load): three calls
 * a take and three a release, a fifth of a shared device's allocate and
 * free. The empty asm hides where the address came from, so the compiler
 * keeps it.
 */
static inline struct device **lock_busy_slot(void)
{
	struct device **slot = &devres__lock_busy;

	__asm__("" : "+r"(slot));
	return slot;
}

/* Whether every thread takes @dev's atomic lock (a TSan build: always). */
static inline bool bias_revoked(const struct device *dev)
{
#ifdef DR_NO_BIAS
	(void)dev;
	return true;
#else
	return __atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED) ==
	       DR_BIAS_REVOKED;
#endif
}

/*
 * The atomic lock of a device shared by threads (its bias revoked), taken
 * inline when the word is free: nobody holds it, nobody waits, nobody is
 * due. The device is in devres__lock_busy from before the take until the
 * owner is recorded, as in devres__lock_slow(): a signal handler run in
 * between finds the word held and is refused there. Anything else (held,
 * a sleeper's mark, a due waiter's ticket) goes to devres__lock_slow(),
 * which looks again from the start.
 */
static inline bool word_take_free(struct device *dev)
{
	struct device **busy = lock_busy_slot();
	struct device *was = *busy;
	unsigned int v = 0;
	bool taken;

	*busy = dev;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	taken = __atomic_compare_exchange_n(lock_word(dev), &v, DR_LOCKED,
					    false, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED);
	if (likely(taken))
		__atomic_store_n(&dev->devres_owner, devres__me(),
				 __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*busy = was;
	return taken;
}

/*
 * Takes @dev's lock whatever its life: for the release's own last look
 * (devres__release_strays()). Every other caller uses lock_dev().
 */
static inline bool lock_dev_any(struct device *dev, const char *func)
{
#ifndef DR_NO_BIAS
	/*
	 * The owner's half of an asymmetric Dekker: announce, then look
	 * for a revocation. The revoker's half puts a membarrier() between
	 * its announcement and its look (lock.c).
	 */
	if (likely(__atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED) ==
		   devres__me()) &&
	    likely(!dev->devres_bias_held)) {
		__atomic_store_n(&dev->devres_bias_held, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (likely(!__atomic_load_n(&dev->devres_bias_revoking,
					    __ATOMIC_RELAXED))) {
			__atomic_signal_fence(__ATOMIC_ACQUIRE);
			__atomic_store_n(&dev->devres_owner, devres__me(),
					 __ATOMIC_RELAXED);
			devres__hold_begin(func);
			return true;
		}
		/* The revoker may sleep until held is 0 (lock.c). */
		__atomic_store_n(&dev->devres_bias_held, 0, __ATOMIC_RELEASE);
		devres__bias_left(dev);
	}
#endif
	if (likely(bias_revoked(dev)) && likely(word_take_free(dev))) {
		devres__hold_begin(func);
		return true;
	}
	if (!devres__lock_slow(dev, func))
		return false;
	devres__hold_begin(func);
	return true;
}

/*
 * Lets go of @dev's lock, taken on a device whose release is over: one
 * WARN naming @func, and false (lock.c).
 */
HIDDEN bool devres__lock_released(struct device *dev, const char *func);

/*
 * Takes @dev's lock for @func; false, with one WARN, where the list may
 * not be used: from a match or for-each callback of @dev, or once @dev's
 * release is over (a thread that called without a reference, while the
 * last one was put: what it would record would outlive the device). The
 * release marks the device dead before its last look at the list
 * (devres__release_strays()), so a record made under the lock is either
 * seen by that look or refused here.
 */
static inline bool lock_dev(struct device *dev, const char *func)
{
	if (unlikely(!lock_dev_any(dev, func)))
		return false;
	if (likely(__atomic_load_n(&dev->magic, __ATOMIC_RELAXED) ==
		   DEVRES_DEV_MAGIC))
		return true;
	return devres__lock_released(dev, func);
}

static inline void unlock_dev(struct device *dev)
{
	struct device **busy;
	struct device *was;

	devres__hold_end();
#ifndef DR_NO_BIAS
	/* Only the owner reads its own address here, and only it sets held. */
	if (__atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED) ==
		    devres__me() &&
	    dev->devres_bias_held) {
		__atomic_store_n(&dev->devres_owner, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&dev->devres_bias_held, 0, __ATOMIC_RELEASE);
		/*
		 * A revoker that saw held = 1 after its barrier sleeps until
		 * it is 0: this load, after the barrier, sees its revoking.
		 */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (unlikely(__atomic_load_n(&dev->devres_bias_revoking,
					     __ATOMIC_RELAXED)))
			devres__bias_left(dev);
		return;
	}
#endif
	busy = lock_busy_slot();
	was = *busy;
	*busy = dev;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&dev->devres_owner, NULL, __ATOMIC_RELAXED);
	word_unlock(dev);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*busy = was;
}

/*
 * A node's kind word is read without the device's lock by the calls that
 * take a node the caller holds loose (devres_add(), devres_free(),
 * devres_get()): another thread may be listing, unlisting or freeing the
 * same node at that moment, a misuse that must end in a WARN, not in a
 * node listed twice or freed while listed. So every change of a node's
 * kind is one store, and a loose node is taken by one compare-and-exchange
 * (devres.c, node_claim()). The store releases: what its holder wrote in
 * the node before it let go of it (unlinked it) is seen by the next one
 * to take it. On x86 both are the plain store's instructions. Reads of a
 * node's kind by its holder where another call may be looking at it at
 * once are kind_load(), the same instructions again.
 */
static inline void kind_set(struct devres__node *n, uint32_t kind)
{
	__atomic_store_n(&n->kind, kind, __ATOMIC_RELEASE);
}

static inline uint32_t kind_load(const struct devres__node *n)
{
	return __atomic_load_n(&n->kind, __ATOMIC_RELAXED);
}

static inline void kind_or(struct devres__node *n, uint32_t flags)
{
	kind_set(n, kind_load(n) | flags);
}

static inline void kind_clear(struct devres__node *n, uint32_t flags)
{
	kind_set(n, kind_load(n) & ~flags);
}

/* Lists @n, which its caller's claim (devres.c) marked added already. */
static inline void add_claimed(struct device *dev, struct devres__node *n)
{
	assert_locked(dev, __func__);
	n->next = list_head(dev);
	set_head(dev, n);
	dev->devres_listed++;
}

static inline void add_locked(struct device *dev, struct devres__node *n)
{
	kind_or(n, DR_ADDED);
	add_claimed(dev, n);
}

/*
 * Takes @n, whose newer neighbour is @prev (NULL when @n is the head), off
 * the list; it stays marked added, so that no call given it as a loose
 * node takes it while this one still has work to do with it (a release,
 * a free).
 */
static inline void detach_after(struct device *dev, struct devres__node *prev,
				struct devres__node *n)
{
	assert_locked(dev, __func__);
	if (prev)
		prev->next = n->next;
	else
		set_head(dev, n->next);
	n->next = NULL;
	dev->devres_listed--;
}

/* Unlinks @n, which is then loose: its holder's. */
static inline void unlink_after(struct device *dev, struct devres__node *prev,
				struct devres__node *n)
{
	detach_after(dev, prev, n);
	kind_clear(n, DR_ADDED);
}

static inline bool dr_dead(const struct devres__node *n)
{
	return kind_load(n) & DR_DEAD;
}

/* index.c: the nodes named by a key (managed memory, actions, groups). */
HIDDEN void devres__index_add(struct device *dev, struct devres__node *n);
HIDDEN struct devres__node *devres__index_find(struct device *dev,
					       uint32_t kind, const void *key);
HIDDEN void devres__index_del(struct device *dev, struct devres__node *n);
HIDDEN void *devres__index_detach(struct device *dev);
HIDDEN long devres__index_count(struct device *dev);
HIDDEN bool devres__index_sound(struct device *dev);
HIDDEN bool devres__indexed(const struct devres__node *n);

/*
 * ASan builds poison a dead node's data, so that a use after devm_kfree()
 * is caught although the node is only freed by a later walk.
 */
#if defined(__SANITIZE_ADDRESS__)
#define DR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DR_ASAN 1
#endif
#endif
#ifdef DR_ASAN
#include <sanitizer/asan_interface.h>
#define dr_poison(p, len) ASAN_POISON_MEMORY_REGION((p), (len))
#define dr_unpoison(p, len) ASAN_UNPOISON_MEMORY_REGION((p), (len))
#else
#define dr_poison(p, len) ((void)(p), (void)(len))
#define dr_unpoison(p, len) ((void)(p), (void)(len))
#endif

/*
 * Takes a listed resource (not a marker) off by key: it stays where it is,
 * dead, until a walk unlinks it. It no longer counts: the ledger and the
 * stats forget it now.
 */
static inline void kill_locked(struct device *dev, struct devres__node *n)
{
	assert_locked(dev, __func__);
	kind_or(n, DR_DEAD);
	dev->devres_dead++;
	devres__ledger_add_node(-1, -(long)n->size);
	dr_poison(node_data(n), n->size);
}

/*
 * slab.c: small managed memory from per-device blocks. Not in ASan builds,
 * where every node is a malloc chunk of its own, so that ASan sees a use
 * after free.
 */
#ifdef DR_ASAN
#define DR_SLAB_MAX 0
#else
#define DR_SLAB_MAX 256
#endif
struct devres__slab;
HIDDEN struct devres__node *devres__slab_alloc(struct device *dev, size_t size,
					       bool zero, uint32_t maker);
HIDDEN struct devres__node *devres__slab_find(struct device *dev,
					      const void *p);
HIDDEN void devres__slab_forget(struct device *dev, struct devres__node *n);
HIDDEN void devres__slab_unlisted(struct device *dev);
HIDDEN void devres__slab_resized(struct device *dev, size_t old, size_t size);
HIDDEN bool devres__slab_only(struct device *dev, unsigned long *ret_live,
			      unsigned long *ret_bytes);
HIDDEN size_t devres__slab_room(const struct devres__node *n);
HIDDEN void devres__slab_free(struct device *dev, struct devres__slab *s,
			      struct devres__node *n);
HIDDEN struct devres__slab *devres__slab_detach(struct device *dev);
HIDDEN struct devres__slab *devres__slab_get(struct device *dev);
HIDDEN bool devres__slab_put_locked(struct devres__slab *s);
HIDDEN void devres__slab_destroy(struct devres__slab *s);
HIDDEN bool devres__slab_drop(struct device *dev, struct devres__node *n);

static inline bool dr_slab(const struct devres__node *n)
{
	return kind_load(n) & DR_SLAB;
}

HIDDEN struct devres__node *devres__compact_locked(struct device *dev);
HIDDEN void devres__free_dead(struct devres__node *chain);

/*
 * Amortized O(1): a compaction walks the list once, when the dead outnumber
 * the living, so each walk is paid for by as many kills as it unlinks.
 * Returns what to hand to devres__free_dead() once the lock is dropped.
 */
static inline struct devres__node *maybe_compact(struct device *dev)
{
	if (dev->devres_dead > 64 && dev->devres_dead * 2 > dev->devres_listed)
		return devres__compact_locked(dev);
	return NULL;
}

/*
 * After a shared device's node was unlinked for its slot's reuse instead
 * of killed: the kill that would have compacted the dead is not counted,
 * so a list of dead nodes only is compacted here, as the kills of an
 * unshared device would. Returns what to hand to devres__free_dead().
 */
static inline struct devres__node *compact_if_all_dead(struct device *dev)
{
	if (dev->devres_dead && dev->devres_dead == dev->devres_listed)
		return devres__compact_locked(dev);
	return NULL;
}

/*
 * The errno a driver is expected to return when this allocation fails:
 * -ENOMEM for managed memory; for other kinds (a region, whose NULL the
 * kernel's drivers turn into -EBUSY) it is not known.
 */
static inline int alloc_errno(uint32_t kind)
{
	return (kind & ~(DR_FLAGS | DR_MAKER_MASK)) == DR_KIND_KMALLOC ? -ENOMEM
								       : 0;
}

/*
 * Every managed acquisition allocates here: the one fault-injection point
 * and the ledger's count of nodes. Inline, as it is the whole cost of a
 * managed allocation beyond malloc itself.
 */
static inline struct devres__node *devres__alloc_node(uint32_t kind,
						      size_t size, bool zero)
{
	struct devres__node *n;

	/* The sweep's report names the failure point by the node's kind. */
	if (devres__fail_maybe() &&
	    devres__fail_now(devres__kind_name(kind), alloc_errno(kind)))
		return NULL;
	if (unlikely(size > DR_MAX_SIZE))
		return NULL;
	n = devres__node_get(size, zero, kind);
	if (unlikely(!n))
		return NULL;
	n->next = NULL;
	kind_set(n, kind);
	n->size = (uint32_t)size;
	devres__ledger_add_node(1, (long)size);
	return n;
}

static inline void devres__free_node(struct devres__node *n)
{
	devres__ledger_add_node(-1, -(long)n->size);
	kind_set(n, DR_FREED);
	devres__node_put(n);
}

/*
 * Under ASan, whether a node the caller names was given back: its header
 * poisoned (the quarantine's, or the heap's after free). Every build reads
 * the mark (DR_FREED) with the node's kind. A chunk that serves another
 * node since cannot be told from it.
 */
static inline bool devres__node_poisoned(const struct devres__node *n)
{
#ifdef DR_ASAN
	return __asan_region_is_poisoned((void *)(uintptr_t)n, sizeof(*n));
#else
	(void)n;
	return false;
#endif
}

/*
 * The kind word of a node the caller names, and the claim of it, are not
 * checked by ASan: another thread may give the chunk back between the
 * question above and the read (a misuse of both callers); what is read
 * then is a freed node's mark, or not a kind, and is refused.
 */
#define DR_NO_ASAN __attribute__((no_sanitize_address))

HIDDEN void devres__run_release(struct device *dev, struct devres__node *n);
HIDDEN struct devres__node *devres__find_locked(struct device *dev,
						uint32_t kind, dr_match_t match,
						void *match_data,
						struct devres__node **ret_prev);
/*
 * Releases a detached chain. @slab: the device's slab when the chain holds
 * a reference to it (dropped here); @all: the chain is everything the
 * device had, and the slab goes whole; @func: the call that releases, for
 * a WARN.
 */
HIDDEN int devres__release_nodes(struct device *dev, struct devres__node *list,
				 struct devres__slab *slab, bool all,
				 const char *func);

/* debug.c: what devres_get_stats() counts, with the lock held. */
HIDDEN void devres__stats_locked(struct device *dev, long *ret_allocs,
				 long *ret_bytes);
/* The same count of a chain the caller holds (or the device's, locked). */
HIDDEN void devres__stats_of(struct devres__node *head, long *ret_allocs,
			     long *ret_bytes);

/* check.c: with the lock held; 0, or -EUCLEAN and what is wrong in @why. */
HIDDEN int devres__check_locked(struct device *dev,
				struct devres_stats *ret_stats, char *why,
				size_t len);

/*
 * What the list checker compares a list with: the device's counts, taken
 * with the lock held. devres_release_all() takes them with the list it
 * detaches and checks that list once the lock is dropped (check.c).
 */
struct devres__list_view {
	struct devres__node *head;
	unsigned long listed, dead, kept;
	struct devres__group *open;
	long indexed; /* -1: no index built */
};

#ifdef DEVRES_CHECKS
HIDDEN void devres__assert_list_locked(struct device *dev, const char *func);
HIDDEN void devres__list_view_locked(struct device *dev,
				     struct devres__list_view *ret_view);
HIDDEN void devres__assert_view(const struct device *dev,
				const struct devres__list_view *view,
				const char *func);
#else
#define devres__assert_list_locked(dev, func) ((void)(dev), (void)(func))
#define devres__list_view_locked(dev, view) ((void)(dev), (void)(view))
#define devres__assert_view(dev, view, func)                                   \
	((void)(dev), (void)(view), (void)(func))
#endif

/*
 * What a log line says of a node, taken while the node cannot go away:
 * before it is published, or under the lock. Once the lock is dropped,
 * another thread may release a published node.
 */
struct dr_log {
	const void *data;
	const void *group; /* a marker's: its group's id, or owner's label */
	uint32_t kind;	   /* the kind word without its flags (maker kept) */
	uint32_t size;
};

/* Of a node that is not a marker: no test, for the allocation paths. */
static inline struct dr_log dr_log_of_res(struct devres__node *n)
{
	return (struct dr_log){ node_data(n), NULL, kind_load(n) & ~DR_FLAGS,
				n->size };
}

static inline struct dr_log dr_log_of(struct devres__node *n)
{
	if (dr_is_marker(n))
		return (struct dr_log){ node_data(n), marker_to_group(n)->id,
					DR_KIND(n), 0 };
	return dr_log_of_res(n);
}

static inline void dr_log(const struct device *dev, const char *op,
			  struct dr_log l)
{
	if (unlikely(devres__logging()))
		devres__log_node(dev, op, l.data, l.kind, l.group, l.size);
}

/* For a node the caller owns: unpublished, or taken off the list. */
static inline void log_node(const struct device *dev, const char *op,
			    struct devres__node *n)
{
	if (unlikely(devres__logging()))
		dr_log(dev, op, dr_log_of(n));
}

#endif /* DEVRES_NODE_H */
