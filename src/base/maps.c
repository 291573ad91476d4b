// SPDX-License-Identifier: MIT
/*
 * The process's managed mappings, and the libc calls that can take one
 * away: munmap(), mremap(), and mmap() with MAP_FIXED.
 *
 * A managed mapping (devm_mmap(), devm_ioremap(), pcim_iomap(),
 * dmam_alloc_coherent()) is recorded here with its node's owner. The
 * library defines those libc calls, so an application's call reaches this
 * file first: one that would unmap, replace, move or resize a recorded
 * mapping, wholly or in part, takes the node off its device there and
 * then, unreleased, with one WARN naming the device, the managed call and
 * the call to use; then the real call runs. So nothing is released twice,
 * and the device's release never touches what is at the address later.
 * The record is the token: whoever takes it out of the table (the release,
 * the managed unmap, or the plain call) is the one that gives the mapping
 * back and drops the ledger's counts.
 *
 * Some records are not to be taken by hand (a dmam_pool_create() pool's
 * chunk, whose blocks the pool still hands out): a plain call over any
 * part of one is refused whole, nothing taken, with one WARN, and fails
 * with EPERM, the kernel's answer over a sealed mapping.
 *
 * With nothing recorded, each call costs one relaxed load before it goes
 * on. The table is a sorted array of disjoint ranges under one mutex.
 * The definitions themselves are in maps-entry.c.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "subsys.h"

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct devres__map **maps; /* sorted by start, disjoint */

size_t devres__maps_nr; /* written under the lock; read without it */
static size_t cap_maps;

/*
 * How many spans of the table's lock this thread is inside: counted
 * before the lock is asked for and until after it is let go, two plain
 * stores and no system call. An interposed call that finds its thread
 * inside one goes straight on, unlooked at (devres__maps_none()): one
 * made from inside a subsystem's @take (whatever it calls back), or a
 * signal handler's run while its thread is inside a span, which would
 * otherwise wait for ever for the lock its own thread holds, or read the
 * table half changed. What such a call unmaps or replaces keeps its
 * record: from then on (devres__maps_unlooked) a look-up that meets a
 * record asks what is mapped there (maps-id.c), and one that is no
 * longer the library's is let go as unmapped behind its back (a plain
 * call takes it off with that WARN, madvise() and mprotect() pass over
 * it), and a release leaves it mapped (devres__map_put()).
 */
TLS_FAST unsigned int devres__maps_held;
/* The library's own calls (devres__munmap() ...): straight on, too. */
TLS_FAST unsigned int devres__maps_own;
bool devres__maps_unlooked;

static void maps_enter(void)
{
	__atomic_store_n(&devres__maps_held, devres__maps_held + 1,
			 __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&maps_lock);
	devres__lock_seen(&maps_lock);
}

static void maps_leave(void)
{
	devres__unlock_seen(&maps_lock);
	pthread_mutex_unlock(&maps_lock);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&devres__maps_held, devres__maps_held - 1,
			 __ATOMIC_RELAXED);
}

/*
 * Whether @m, met by a look-up, is no longer the library's mapping: only
 * asked once a call went on unlooked at inside a span. The table's lock
 * held.
 */
static int now_stale(const struct devres__map *m)
{
	int what;

	if (likely(!__atomic_load_n(&devres__maps_unlooked, __ATOMIC_RELAXED)))
		return DEVRES_MAP_SAME;
	what = devres__map_now(m);
	return what == DEVRES_MAP_GONE || what == DEVRES_MAP_OTHER
		       ? what
		       : DEVRES_MAP_SAME;
}

/* The first recorded mapping that ends after @start. */
static size_t first_after(uintptr_t start)
{
	size_t lo = 0, hi = devres__maps_nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid]->end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void take_out(size_t i)
{
	memmove(&maps[i], &maps[i + 1],
		(devres__maps_nr - i - 1) * sizeof(struct devres__map *));
	__atomic_store_n(&devres__maps_nr, devres__maps_nr - 1,
			 __ATOMIC_RELAXED);
}

/* Who a refusing record is, for a WARN made once the lock is let go. */
static void label(const struct devres__map *m, struct devres__hand *h)
{
	char buf[40];

	snprintf(h->dev, sizeof(h->dev), "%s",
		 devres__dev_label(m->owner.dev, buf, sizeof(buf)));
	h->owner = m->owner.dev;
	/* A subsystem's record being let go may name no one any more. */
	h->call = m->owner.call ? m->owner.call : "a managed call";
	h->fix = m->owner.fix ? m->owner.fix : "its managed release";
	h->pid = 0;
}

bool devres__maps_owner(const void *addr, struct devres__hand *h)
{
	uintptr_t a = (uintptr_t)addr;
	bool found = false;
	size_t i;

	if (!__atomic_load_n(&devres__maps_nr, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&devres__maps_held, __ATOMIC_RELAXED))
		return false;
	/* A @who's lookup never asks for this lock (maps_guard()'s). */
	maps_enter();
	i = first_after(a);
	if (i < devres__maps_nr && maps[i]->start <= a &&
	    now_stale(maps[i]) == DEVRES_MAP_SAME) {
		if (maps[i]->who) {
			found = maps[i]->who(maps[i], h);
		} else if (maps[i]->owner.dev) {
			label(maps[i], h);
			found = true;
		}
	}
	maps_leave();
	return found;
}

/* What a plain call WARNs, once the lock is let go. */
struct hit {
	struct devres__hand h;
	uintptr_t start;
	size_t len;
	bool behind; /* no longer the library's mapping (now_stale()) */
};

#define MAX_HITS 16

/*
 * How often devres__maps_guard() lets another thread run while a record
 * is being let go, before it refuses the call anyway: far more than an
 * unmap takes, and no wait for ever on a record that stays so.
 */
#define GUARD_WAITS 100000u

/*
 * A drop in progress under the table's lock: what it took so far, for
 * its WARNs once unlocked. @n counts the record whose @take runs: a
 * @take whose DMA ops end the thread has taken its node off by then.
 */
struct dropping {
	struct hit hits[MAX_HITS];
	size_t n;
	size_t n1;   /* where the second range's hits begin; SIZE_MAX: none */
	bool behind; /* devres__map_add()'s: unmapped behind the library */
	const char *call;
	void *addr, *addr2;
	size_t len, len2;
};

/*
 * Takes every recorded mapping over [start, end) out of the table and its
 * node off its device (devres__disown(), with the lock held: the device
 * is alive while its record is in the table), counted in @d->n; the first
 * MAX_HITS are described in @d->hits for the WARNs, the rest counted. The
 * table's lock held.
 */
static void drop_locked(struct dropping *d, uintptr_t start, uintptr_t end)
{
	size_t i = first_after(start);

	while (i < devres__maps_nr && maps[i]->start < end) {
		struct devres__map *m = maps[i];
		struct devres__hand h;
		size_t n = d->n;

		struct devres__hand *hp = n < MAX_HITS ? &d->hits[n].h : &h;

		take_out(i);
		m->in_table = false;
		if (n < MAX_HITS) {
			d->hits[n].start = m->start;
			d->hits[n].len = m->end - m->start;
			d->hits[n].behind = !d->behind && !m->refuse &&
					    now_stale(m) != DEVRES_MAP_SAME;
		}
		d->n = n + 1;
		if (m->refuse) {
			/*
			 * Only a new mapping over it comes here (the plain
			 * calls were refused): it is gone already, and the
			 * record goes with it, its owner told.
			 */
			devres__log_hold();
			label(m, hp);
		} else if (m->take) {
			/* @m may be freed here; false: nothing of it left. */
			if (!m->take(m, hp)) {
				d->n = n;
				continue;
			}
		} else {
			if (m->dropped)
				m->dropped(m);
			/* The node, and @m with it, may be freed here. */
			devres__disown(&m->owner, hp);
		}
		if (n >= MAX_HITS)
			devres__log_release();
	}
}

/*
 * Each of the first MAX_HITS hits holds the log (drop_locked()); the
 * others let go at once. Let go of all of them before any WARN is made:
 * a WARN made while held would be kept with the others' lines, of which
 * the log keeps only a few (a debug build's WARN is a dozen lines with its
 * backtrace), and the rest would be dropped.
 */
static void unhold_hits(size_t n)
{
	for (size_t i = 0; i < n && i < MAX_HITS; i++)
		devres__log_release();
}

/* The WARN of the hits past MAX_HITS among [from, to), if any. */
static void warn_more(const char *call, size_t from, size_t to)
{
	size_t first = from > MAX_HITS ? from : MAX_HITS;

	if (to > first)
		devres__warn_label("-", call,
				   "%zu more managed mappings "
				   "taken off their devices",
				   to - first);
}

/* The WARNs of hits [from, to), made over [addr, addr + len). */
static void warn_hits(const struct hit *hits, size_t from, size_t to,
		      const char *call, const void *addr, size_t len)
{
	char what[96];

	for (size_t i = from; i < to && i < MAX_HITS; i++) {
		if (hits[i].behind) {
			devres__warn_label(hits[i].h.dev, hits[i].h.call,
					   "[%p, +%zu) was unmapped behind the "
					   "library's back",
					   (void *)hits[i].start, hits[i].len);
			continue;
		}
		snprintf(what, sizeof(what), "%s(%p, %zu) over [%p, +%zu)",
			 call, addr, len, (void *)hits[i].start, hits[i].len);
		devres__warn_label(hits[i].h.dev, call, DEVRES__HAND_FMT, what,
				   hits[i].h.call, hits[i].h.fix);
	}
	warn_more(call, from, to);
}

/*
 * Lets the table's lock go, then WARNs what the drop took: the plain
 * call's WARNs, or devres__map_add()'s for mappings unmapped behind the
 * library's back.
 */
static void finish_drop(struct dropping *d)
{
	size_t n1 = d->n1 < d->n ? d->n1 : d->n;

	maps_leave();
	unhold_hits(d->n);
	if (!d->behind) {
		warn_hits(d->hits, 0, n1, d->call, d->addr, d->len);
		warn_hits(d->hits, n1, d->n, d->call, d->addr2, d->len2);
		return;
	}
	for (size_t k = 0; k < d->n && k < MAX_HITS; k++) {
		devres__warn_label(d->hits[k].h.dev, d->hits[k].h.call,
				   "[%p, +%zu) was unmapped behind the "
				   "library's back, and a new managed mapping "
				   "is there: taken off the device",
				   (void *)d->hits[k].start, d->hits[k].len);
	}
	if (d->n > MAX_HITS)
		warn_more(d->hits[0].h.call, 0, d->n);
}

/*
 * A @take's DMA ops ended the thread (pthread_exit(), a cancellation):
 * the record in hand is taken, its node off its device and its counts
 * dropped (dma/hand.c, as the thread unwinds). Here the table's lock is
 * let go and the WARNs made; the records after it in the range stay, as
 * the call that would have unmapped them never runs. Before, the lock
 * stayed held by the dead thread, and every later munmap(), mmap() or
 * mremap() in the process waited for ever.
 */
static void drop_ended(void *arg)
{
	struct dropping *d = arg;

	/* The hold of the one in hand, past those kept for a WARN. */
	if (d->n > MAX_HITS)
		devres__log_release();
	finish_drop(d);
}

/*
 * The range a call names, in whole pages, or false when the kernel would
 * refuse it untouched (an unaligned start, an empty or wrapping range):
 * then nothing is dropped.
 */
static bool range_of(const void *addr, size_t len, uintptr_t *ret_end)
{
	size_t mask = devres__page_size() - 1;
	uintptr_t a = (uintptr_t)addr;

	if (!len || (a & mask) || len > UINTPTR_MAX - a - mask)
		return false;
	*ret_end = a + ((len + mask) & ~mask);
	return true;
}

/*
 * The first record over [start, end) that refuses a plain call, described
 * in @r, or false. The table's lock held.
 */
static bool refused(uintptr_t start, uintptr_t end, struct hit *r,
		    const char **ret_what)
{
	for (size_t i = first_after(start);
	     i < devres__maps_nr && maps[i]->start < end; i++) {
		if (maps[i]->refuse) {
			label(maps[i], &r->h);
			r->start = maps[i]->start;
			r->len = maps[i]->end - maps[i]->start;
			*ret_what = maps[i]->refuse;
			return true;
		}
	}
	return false;
}

/*
 * Both ranges are looked at under one hold of the lock (mremap() names
 * two), so that a call is refused whole or goes on whole: nothing is
 * taken off a device for a call that is then refused.
 */
int devres__maps_check(const char *call, void *addr, size_t len, void *addr2,
		       size_t len2)
{
	struct dropping d = { .n1 = SIZE_MAX,
			      .call = call,
			      .addr = addr,
			      .addr2 = addr2,
			      .len = len,
			      .len2 = len2 };
	uintptr_t end = 0, end2 = 0;
	bool one = range_of(addr, len, &end);
	bool two = range_of(addr2, len2, &end2);
	const char *what = NULL;
	char desc[192];
	struct hit no;

	if (!one && !two)
		return 0;
	maps_enter();
	if ((one && refused((uintptr_t)addr, end, &no, &what)) ||
	    (two && refused((uintptr_t)addr2, end2, &no, &what))) {
		/* Copied under the lock: the record may go once it is let go. */
		snprintf(desc, sizeof(desc), "%s(%p, %zu) over [%p, +%zu), %s,",
			 call, addr, len, (void *)no.start, no.len, what);
		maps_leave();
		devres__warn_label(no.h.dev, call,
				   "%s acquired with %s(): use %s; refused, "
				   "nothing changed",
				   desc, no.h.call, no.h.fix);
		return -EPERM;
	}
	pthread_cleanup_push(drop_ended, &d);
	if (one)
		drop_locked(&d, (uintptr_t)addr, end);
	d.n1 = d.n;
	if (two)
		drop_locked(&d, (uintptr_t)addr2, end2);
	pthread_cleanup_pop(0);
	finish_drop(&d);
	return 0;
}

/*
 * A record the library itself reads or writes through its mapping: an
 * I/O window (readl()/writel()), a BAR, a DMA buffer or a pool's chunk
 * (the DMA debug checks, the pool's blocks). Those are the records with a
 * subsystem's @take or a @refuse; a devm_mmap() mapping has neither, and
 * the library never touches what it holds (its release only unmaps it).
 */
static bool touched(const struct devres__map *m)
{
	return m->take || m->refuse;
}

bool devres__maps_readonly;

void devres__map_set_readonly(struct devres__map *m)
{
	__atomic_store_n(&devres__maps_readonly, true, __ATOMIC_SEQ_CST);
	__atomic_store_n(&m->readonly, true, __ATOMIC_RELEASE);
}

/*
 * Whether a protection leaves @m the read and write access the library
 * made it with: a read-only BAR PROT_READ, anything else it touches
 * PROT_READ|PROT_WRITE. PROT_EXEC is neither taken away from the library
 * nor a way to reach the device or its memory that it did not have, so
 * it is not looked at. Otherwise @ret_why says which way it goes.
 */
static bool keeps_access(const struct devres__map *m, int prot,
			 const char **ret_why)
{
	bool ro = __atomic_load_n(&m->readonly, __ATOMIC_ACQUIRE);
	int rw = PROT_READ | PROT_WRITE;
	int want = ro ? PROT_READ : rw;

	if (prot >= 0 && (prot & rw) == want)
		return true;
	if (!ro)
		*ret_why = "the library reads and writes through it";
	else if (prot >= 0 && (prot & PROT_WRITE))
		*ret_why = "the library made it read-only";
	else
		*ret_why = "the library reads through it";
	return false;
}

/*
 * A call that keeps a managed mapping mapped but drops or moves what it
 * holds, or changes the access the library relies on: refused whole when
 * any page of [addr, addr + len) is a record's (@g->touched_only: a
 * record the library touches; @g->protect: one whose access the
 * protection changes), so that nothing is applied in part. No node is
 * taken off: the mapping stays managed, as it was.
 */
int devres__maps_guard(const struct devres__guard *g, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, end;
	const char *why = g->why;
	bool hit = false, busy;
	struct hit no;
	char desc[160];

	if (!range_of(addr, len, &end))
		return 0;
	for (unsigned int tries = 0;; tries++) {
		busy = false;
		/* Goes straight on: a @who's lookup never asks for this lock. */
		maps_enter();
		for (size_t i = first_after(a);
		     i < devres__maps_nr && maps[i]->start < end; i++) {
			if (g->touched_only && !touched(maps[i]))
				continue;
			if (g->protect && keeps_access(maps[i], g->prot, &why))
				continue;
			if (now_stale(maps[i]) != DEVRES_MAP_SAME)
				continue;
			if (!maps[i]->who) {
				label(maps[i], &no.h);
			} else if (!maps[i]->who(maps[i], &no.h)) {
				/*
				 * Let go by its device, or freed, on another
				 * thread, and still mapped: whoever takes the
				 * record out unmaps it, at once. The call
				 * waits for that, then finds the range gone
				 * (it came after the release); passed over,
				 * it was applied to the mapping the release
				 * was about to unmap (MADV_REMOVE punched a
				 * hole in the device's file). A record that
				 * stays so is refused, unnamed.
				 */
				if (tries < GUARD_WAITS) {
					busy = true;
					break;
				}
				label(maps[i], &no.h);
			}
			no.start = maps[i]->start;
			no.len = maps[i]->end - maps[i]->start;
			hit = true;
			break;
		}
		maps_leave();
		if (!busy)
			break;
		sched_yield();
	}
	if (!hit)
		return 0;
	snprintf(desc, sizeof(desc), "%s(%p, %zu, %s) over [%p, +%zu)", g->call,
		 addr, len, g->arg, (void *)no.start, no.len);
	devres__warn_label(no.h.dev, g->call,
			   "%s acquired with %s(): %s (%s gives it back); "
			   "refused, nothing changed",
			   desc, no.h.call, why, no.h.fix);
	return -EPERM;
}

/*
 * The library's own calls go through the PLT (src/libdevres.dynlist keeps
 * these names out of -Bsymbolic-functions), as any caller's: a
 * sanitizer's interceptor, first in the process, still sees every mapping
 * the library makes or gives back (AddressSanitizer's shadow of a page the
 * library kept poisoned is cleared at its munmap; ThreadSanitizer forgets
 * what it knew of the range). Whatever the library gives back has left the
 * table first, so the definitions above find nothing and go on.
 *
 * devres__munmap() does not even look: it may run with a subsystem's lock
 * held (a node freed under a DMA state's lock gives its slab's pages back),
 * and a plain call over a managed mapping takes those locks under the
 * table's. Looking would take the table's lock inside them: a deadlock.
 */
void *devres__mmap(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

int devres__munmap(void *addr, size_t len)
{
	int ret;

	devres__maps_own++;
	ret = munmap(addr, len);
	devres__maps_own--;
	return ret;
}

/*
 * The library's own advice and protection (a slab's pages given back
 * lazily, a BAR made read-only under the PCI maps' lock) never look: they
 * are over its own memory, and may run under a lock a @take takes.
 */
static int unseen(int (*call)(void *, size_t, int), void *addr, size_t len,
		  int arg)
{
	int ret;

	devres__maps_own++;
	ret = call(addr, len, arg);
	devres__maps_own--;
	return ret;
}

int devres__madvise(void *addr, size_t len, int advice)
{
	return unseen(madvise, addr, len, advice);
}

int devres__mprotect(void *addr, size_t len, int prot)
{
	return unseen(mprotect, addr, len, prot);
}

void *devres__mremap(void *old, size_t old_len, size_t new_len, int flags,
		     void *new_addr)
{
	return mremap(old, old_len, new_len, flags, new_addr);
}

/*
 * A recorded range that overlaps a new mapping was unmapped without any of
 * the calls above (a system call made directly): its node goes now, so
 * that its release cannot touch the new one. With @owned, @m's owner's
 * node goes on its device in the hold that enters @m (devres__owner_add()).
 */
static int map_insert(struct devres__map *m, bool owned)
{
	struct dropping d = { .n1 = SIZE_MAX, .behind = true };
	size_t i;

	maps_enter();
	pthread_cleanup_push(drop_ended, &d);
	drop_locked(&d, m->start, m->end);
	pthread_cleanup_pop(0);
	finish_drop(&d);
	maps_enter();
	if (devres__maps_nr == cap_maps) {
		size_t cap = cap_maps ? 2 * cap_maps : 16;
		struct devres__map **p =
			realloc(maps, cap * sizeof(struct devres__map *));

		if (!p) {
			maps_leave();
			return -ENOMEM;
		}
		maps = p;
		cap_maps = cap;
	}
	/* No other mapping can be made over this one meanwhile. */
	i = first_after(m->start);
	memmove(&maps[i + 1], &maps[i],
		(devres__maps_nr - i) * sizeof(struct devres__map *));
	maps[i] = m;
	m->in_table = true;
	__atomic_store_n(&devres__maps_nr, devres__maps_nr + 1,
			 __ATOMIC_RELAXED);
	/* Its own allocations' mmap() calls do not look: inside the span. */
	if (owned && unlikely(!devres__owner_add(&m->owner))) {
		/* Refused by its device: out again, seen by nobody. */
		memmove(&maps[i], &maps[i + 1],
			(devres__maps_nr - i - 1) *
				sizeof(struct devres__map *));
		m->in_table = false;
		m->owner = (struct devres__owner){ 0 };
		__atomic_store_n(&devres__maps_nr, devres__maps_nr - 1,
				 __ATOMIC_RELAXED);
		maps_leave();
		devres__log_release();
		return -ENODEV;
	}
	maps_leave();
	if (owned)
		devres__log_release();
	return 0;
}

int devres__map_add(struct devres__map *m)
{
	return map_insert(m, false);
}

int devres__map_add_owned(struct devres__map *m)
{
	return map_insert(m, true);
}

/*
 * Takes @m out of the table if it is still there, and if it was, unmaps
 * [@addr, @addr + @len) (when @len) before the lock is let go. Returns
 * whether it was: whoever takes a record out owns its mapping. With
 * @ret_what, a range no longer the library's (a call that went on
 * unlooked at inside a span unmapped or replaced it since the caller
 * looked) is left mapped, and *@ret_what says what is there.
 */
static bool remove_record(struct devres__map *m, void *addr, size_t len,
			  int *ret_what)
{
	bool owned;
	size_t i;

	maps_enter();
	owned = m->in_table;
	if (owned) {
		int now = len && ret_what ? now_stale(m) : DEVRES_MAP_SAME;

		if (now != DEVRES_MAP_SAME) {
			*ret_what = now;
			len = 0;
		}
		/*
		 * Unmapped before it leaves the table: a madvise() or
		 * mprotect() that reads the count without the lock
		 * (maps-advise.c) and finds no record goes straight to the
		 * kernel, which must then find the range gone. Taken out
		 * first, a MADV_REMOVE in between punched a hole in the
		 * file of the window it was about to unmap.
		 * Goes straight on: this thread holds the lock.
		 */
		if (len)
			devres__munmap(addr, len);
		i = first_after(m->start);
		if (i < devres__maps_nr && maps[i] == m)
			take_out(i);
		m->in_table = false;
	}
	maps_leave();
	return owned;
}

bool devres__map_remove(struct devres__map *m)
{
	return remove_record(m, NULL, 0, NULL);
}

bool devres__map_remove_unmap(struct devres__map *m, void *addr, size_t len,
			      int *ret_what)
{
	return remove_record(m, addr, len, ret_what);
}

/*
 * The child's mappings are copies of the parent's, and the records are
 * the parent's nodes': the child owns none of them. A child that unmaps
 * one unmaps its copy, silently; the parent's devices are refused to it.
 */
static void maps_child(void)
{
	__atomic_store_n(&devres__maps_nr, 0, __ATOMIC_RELAXED);
	maps_leave();
}

/* fork() holds the lock through: a span, as any other. */
static void maps_prepare(void)
{
	maps_enter();
}

static void maps_parent(void)
{
	maps_leave();
}

__attribute__((constructor)) static void maps_init(void)
{
	devres__atfork(DEVRES_FORK_MAPS, maps_prepare, maps_parent, maps_child);
}
