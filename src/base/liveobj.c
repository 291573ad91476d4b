// SPDX-License-Identifier: MIT
/*
 * Live objects (<devres/liveobj.h>): the addresses of objects that a
 * thread may still use, checked by every free of managed memory.
 *
 * A sorted array: live objects are few (work items queued or running at
 * once), and a free asks for a range, which a binary search answers in
 * one probe; a hash by address would need a probe per possible address.
 * The first 64 records need no allocation, so a program with few live
 * objects never fails to register one. The array is a process-wide leaf:
 * its lock is never held while anything else is taken or called, so it
 * may be taken under a device's devres lock and under an object's own.
 *
 * Nothing is read of an object here, only its address compared: the
 * descriptor's callbacks read it, from the free path, with no lock of
 * ours held, while its memory is still the caller's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <devres/liveobj.h>
#include "liveobj.h"

struct rec {
	uintptr_t addr;
	const struct devres_liveobj_descr *descr;
	int pid; /* the process that made it live */
};

#define RECS0 64
/* Objects handled per look at the array by a free. */
#define BATCH 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec recs0[RECS0];
static struct rec *recs = recs0;
static size_t cap = RECS0, nr;
unsigned int devres__liveobj_nr;
uintptr_t devres__liveobj_lo = UINTPTR_MAX, devres__liveobj_hi;
TLS_FAST const char *devres__liveobj_func;

__attribute__((constructor)) static void liveobj_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_LIVEOBJ, &lock);
}

/* The index of the first record at or above @a. Under the lock. */
static size_t lower(uintptr_t a)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (recs[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The count and the bounds the free paths read without the lock. */
static void set_nr(size_t n)
{
	nr = n;
	__atomic_store_n(&devres__liveobj_lo, n ? recs[0].addr : UINTPTR_MAX,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&devres__liveobj_hi, n ? recs[n - 1].addr : 0,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&devres__liveobj_nr, (unsigned int)n,
			 __ATOMIC_RELAXED);
}

static bool grow(void)
{
	struct rec *n = malloc(2 * cap * sizeof(*n));

	if (!n)
		return false;
	memcpy(n, recs, nr * sizeof(*n));
	if (recs != recs0)
		free(recs);
	recs = n;
	cap *= 2;
	return true;
}

/* Takes the record at @a, if there is one. Under the lock. */
static void forget_locked(uintptr_t a)
{
	size_t i = lower(a);

	if (i == nr || recs[i].addr != a)
		return;
	memmove(&recs[i], &recs[i + 1], (nr - i - 1) * sizeof(*recs));
	set_nr(nr - 1);
}

static bool descr_bad(const struct devres_liveobj_descr *d, const char *func)
{
	return devres__arg_bad(NULL, d, func, "descriptor") ||
	       devres__arg_bad(NULL, d->name, func, "descriptor's name") ||
	       devres__arg_bad(NULL, d->hint, func, "descriptor's hint") ||
	       devres__arg_bad(NULL, (const void *)d->state, func,
			       "state callback") ||
	       devres__arg_bad(NULL, (const void *)d->fixup_free, func,
			       "fixup callback");
}

int devres_liveobj_activate(void *obj, const struct devres_liveobj_descr *descr)
{
	uintptr_t a = (uintptr_t)obj;
	size_t i;

	if (devres__arg_bad(NULL, obj, __func__, "object") ||
	    descr_bad(descr, __func__))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	i = lower(a);
	if (i < nr && recs[i].addr == a) {
		/* A parent's record at a child's own object: the child's now. */
		recs[i].descr = descr;
		recs[i].pid = devres__pid_now();
		pthread_mutex_unlock(&lock);
		return 0;
	}
	if (nr == cap && !grow()) {
		pthread_mutex_unlock(&lock);
		return -ENOMEM;
	}
	memmove(&recs[i + 1], &recs[i], (nr - i) * sizeof(*recs));
	recs[i] = (struct rec){ a, descr, devres__pid_now() };
	set_nr(nr + 1);
	pthread_mutex_unlock(&lock);
	return 0;
}

void devres_liveobj_deactivate(const void *obj)
{
	pthread_mutex_lock(&lock);
	forget_locked((uintptr_t)obj);
	pthread_mutex_unlock(&lock);
}

bool devres_liveobj_active(const void *obj)
{
	uintptr_t a = (uintptr_t)obj;
	bool found;
	size_t i;

	pthread_mutex_lock(&lock);
	i = lower(a);
	found = i < nr && recs[i].addr == a;
	pthread_mutex_unlock(&lock);
	return found;
}

bool devres__liveobj_in(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	bool found;
	size_t i;

	if (!devres__liveobj_near(p, len))
		return false;
	pthread_mutex_lock(&lock);
	i = lower(a);
	found = i < nr && recs[i].addr - a < len;
	pthread_mutex_unlock(&lock);
	return found;
}

/* Copies up to BATCH records in [@a, @a + @len) to @out; how many. */
static size_t snapshot(uintptr_t a, size_t len, struct rec *out)
{
	size_t i, n = 0;

	pthread_mutex_lock(&lock);
	for (i = lower(a); i < nr && n < BATCH && recs[i].addr - a < len; i++)
		out[n++] = recs[i];
	pthread_mutex_unlock(&lock);
	return n;
}

static const char *busy_as(enum devres_liveobj_state st)
{
	return st == DEVRES_LIVEOBJ_PENDING ? "queued"
					    : "running in another thread";
}

/*
 * Each pass takes every object it saw off the record, whatever its fixup
 * did: the memory goes, and a record must not outlive it. So the loop
 * ends once no object is made live in the block meanwhile, which only a
 * caller racing its own free would do.
 */
void devres__liveobj_free(const struct device *dev, const void *p, size_t len,
			  const char *func)
{
	struct rec snap[BATCH];
	size_t n;

	while ((n = snapshot((uintptr_t)p, len, snap))) {
		for (size_t k = 0; k < n; k++) {
			void *obj = (void *)snap[k].addr;
			const struct devres_liveobj_descr *d = snap[k].descr;
			enum devres_liveobj_state st = DEVRES_LIVEOBJ_IDLE;

			/*
			 * A parent's object, in a child of fork(): its thread
			 * is not here to wait for, nor its lock to take.
			 */
			if (snap[k].pid == devres__pid_now())
				st = d->state(obj);
			if (st == DEVRES_LIVEOBJ_PENDING ||
			    st == DEVRES_LIVEOBJ_RUNNING)
				devres__warn(dev, func,
					     "frees %s %p while it is %s: %s "
					     "must come first; it is made "
					     "idle now, then freed",
					     d->name, obj, busy_as(st),
					     d->hint);
			if (st != DEVRES_LIVEOBJ_IDLE) {
				const char *outer = devres__liveobj_func;

				devres__liveobj_func = func;
				d->fixup_free(obj, st);
				devres__liveobj_func = outer;
			}
			pthread_mutex_lock(&lock);
			forget_locked(snap[k].addr);
			pthread_mutex_unlock(&lock);
		}
	}
}
