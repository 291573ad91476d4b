/* SPDX-License-Identifier: MIT */
/*
 * A static pool of per-thread slots (tslots.c): a thread claims one
 * (the lowest free), names itself its owner by its ids, and gives it
 * back at its end; a slot whose thread ended unseen (a raw SYS_exit,
 * past its destructors) is taken over by a later thread, by one
 * compare-and-swap of its owner, so that two claimers cannot both take
 * it. A thread id is reused once its thread is gone (after pid_max
 * more): each slot keeps when it was claimed, and a thread of its id
 * started later than that is another one, whose slot it is not
 * (devres__tslot_reclaim()). The ledger's tallies and the node caches
 * are such pools: what a slot holds is theirs, the claim, the owner and
 * its time are here. Nothing here allocates or takes a lock. Included
 * by subsys.h.
 */
#ifndef DEVRES_BASE_TSLOTS_H
#define DEVRES_BASE_TSLOTS_H

#include <stdbool.h>

#define DEVRES_TSLOT_WORD 64
/* The owner of a slot whose thread is known gone (a fork()'s child). */
#define DEVRES_TSLOT_GONE (~0ull)

struct devres__tslots {
	unsigned int n;		     /* slots, a multiple of 64 */
	unsigned long long *claimed; /* n / 64 words, a bit a slot */
	/* Whose each claimed slot is: pid << 32 | tid; 0 while claimed. */
	unsigned long long *owner;
	/* When each was claimed, in clock ticks since boot (as /proc's). */
	unsigned long long *born;
	/* A scan by start times found nothing: none again before then. */
	unsigned long long deep_next;
	/* One more than the highest slot ever claimed. */
	unsigned int used;
};

/* The static pool @name of @n slots (a multiple of 64). */
#define DEVRES_TSLOTS(name, n)                                                 \
	static unsigned long long name##_claimed[(n) / DEVRES_TSLOT_WORD];     \
	static unsigned long long name##_owner[n];                             \
	static unsigned long long name##_born[n];                              \
	static struct devres__tslots name = {                                  \
		(n), name##_claimed, name##_owner, name##_born, 0, 0           \
	}

/* This thread, as an owner names it: both ids, by system call. */
HIDDEN unsigned long long devres__tslot_self(void);
/*
 * Whether the thread @id names is gone: DEVRES_TSLOT_GONE, or the
 * kernel's "no such thread". A thread alive, or one of another process
 * this one may not signal, is not. errno is kept.
 */
HIDDEN bool devres__tslot_gone(unsigned long long id);
/* Claims the lowest free slot for this thread: its index, or -1. */
HIDDEN int devres__tslot_take_free(struct devres__tslots *p);
/*
 * Takes slot @i over for this thread if its owner is gone, by the
 * kernel's word (one system call): not when its id is a later thread's.
 */
HIDDEN bool devres__tslot_take_over(struct devres__tslots *p, unsigned int i);
/*
 * A full pool: takes over the first slot whose owner is gone, by the
 * kernel's word, or else (at most once a second while none is found)
 * whose id is now a thread started after the slot was claimed (its start
 * time in /proc, three system calls a slot). Its index, or -1.
 */
HIDDEN int devres__tslot_reclaim(struct devres__tslots *p);
/* Names this thread owner of claimed slot @i, claimed now. */
HIDDEN void devres__tslot_own(struct devres__tslots *p, unsigned int i);
/* Gives slot @i back. */
HIDDEN void devres__tslot_give(struct devres__tslots *p, unsigned int i);

#endif
