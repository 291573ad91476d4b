// SPDX-License-Identifier: MIT
/*
 * The program's calls that change a mapping's protection or place
 * (mprotect(), pkey_mprotect(), mremap()) against a subsystem's switch
 * that takes write access away from its mappings (PCI's read-only mode).
 * A call checks the mode, then asks the kernel: checked alone, a call
 * that saw the mode off could land after the switch had protected every
 * mapping and returned, and leave one writable. So each such call is
 * counted in flight across its check and the kernel's call, in one of two
 * slots, the one the epoch names; a switch sets its mode, then, twice,
 * turns the epoch to the other slot and waits until the slot it left is
 * empty, then protects. A call counted before the switch's look is waited
 * for (and the protection made after it overrides what it did); a call
 * counted after it reads the mode set (its count, the epoch's turn, the
 * mode and the look are sequentially consistent) and is refused by its
 * subsystem's look. Calls keep coming into the other slot meanwhile, so
 * a stream of them never holds a switch up: only those counted before it
 * are waited for. Two turns, not one: a call that read the epoch before
 * a first turn and counted itself after that turn's look is waited for
 * by the second.
 *
 * A call counted that finds nothing recorded and no switch's mark
 * (devres__protect_looks()) looks no further: a switch that marks later
 * waits for it. An mprotect() that looks holds its WARNs until it is let
 * go, so that a switch does not wait for a log sink; a refused mremap()'s
 * WARN is made inside (the held lines' buffer could be mapped where the
 * call grows or moves to), and a sink that switches read-only mode on
 * from it skips its own slot, as a signal handler's switch does.
 *
 * No lock: the wait polls, every 50 us, for calls that last one system
 * call each. A switch made by a signal handler on a thread with its own
 * call in flight does not wait for the slot that call is in (it would
 * wait for ever); the protection it makes may then be undone by the call
 * it interrupted. In a child of fork() the counts are the forking
 * thread's own.
 */
#include <time.h>
#include "subsys.h"

static unsigned int epoch;
static unsigned int in_flight[2];
/* This thread's part of each slot. */
static TLS_FAST unsigned int own[2];

unsigned int devres__protect_begin(void)
{
	unsigned int slot = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST) & 1;

	own[slot]++;
	__atomic_add_fetch(&in_flight[slot], 1, __ATOMIC_SEQ_CST);
	return slot;
}

void devres__protect_end(unsigned int slot)
{
	__atomic_sub_fetch(&in_flight[slot], 1, __ATOMIC_SEQ_CST);
	own[slot]--;
}

bool devres__protect_looks(void)
{
	return __atomic_load_n(&devres__maps_nr, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&devres__maps_readonly, __ATOMIC_SEQ_CST);
}

void devres__protect_settle(void)
{
	const struct timespec poll = { .tv_nsec = 50000 };

	__atomic_store_n(&devres__maps_readonly, true, __ATOMIC_SEQ_CST);

	for (int turn = 0; turn < 2; turn++) {
		unsigned int old =
			__atomic_fetch_xor(&epoch, 1, __ATOMIC_SEQ_CST) & 1;

		if (own[old])
			continue;
		while (__atomic_load_n(&in_flight[old], __ATOMIC_SEQ_CST))
			(void)nanosleep(&poll, NULL);
	}
}

static void protect_child(void)
{
	__atomic_store_n(&in_flight[0], own[0], __ATOMIC_RELAXED);
	__atomic_store_n(&in_flight[1], own[1], __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void protect_atfork(void)
{
	devres__atfork(DEVRES_FORK_PROTECT, NULL, NULL, protect_child);
}
