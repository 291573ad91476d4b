/* SPDX-License-Identifier: MIT */
/*
 * What the read-only and BAR tables of tests/pci/ and tests/kcompat/ share:
 * what every test forking from a threaded parent has (base/fork-park.h:
 * TSan's options for cells in children of fork(), a timed wait), a check
 * that counts a failure in the cell's `bad` and says where, and the switch
 * to read-only mode made on a thread of its own, which records when it
 * entered, its thread id (so that the cell sees it asleep, waiting for a
 * write in flight) and when it returned, in the order kept by @seq with
 * the write it waits for (@landed).
 */
#ifndef DEVRES_TESTS_PCI_RO_CELL_H
#define DEVRES_TESTS_PCI_RO_CELL_H

#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <devres/pci.h>
#include "base/fork-park.h"

/* Printed in front of a failed check: a table's cell name, or nothing. */
static const char *check_prefix = "";

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s%s:%d: %s\n", check_prefix,         \
				__FILE__, __LINE__, #c);                       \
			bad++;                                                 \
		}                                                              \
	} while (0)

struct ro_switch {
	int seq;
	int landed;  /* @seq when the write in flight returned */
	int ro_done; /* @seq when the switch returned */
	int tid, entering, done;
};

/* pci_sysfs_set_readonly(true) on this thread; @arg: a struct ro_switch. */
static inline void *ro_switch_thread(void *arg)
{
	struct ro_switch *sw = arg;

	__atomic_store_n(&sw->tid, (int)gettid(), __ATOMIC_SEQ_CST);
	__atomic_store_n(&sw->entering, 1, __ATOMIC_SEQ_CST);
	pci_sysfs_set_readonly(true);
	__atomic_store_n(&sw->ro_done,
			 __atomic_add_fetch(&sw->seq, 1, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
	__atomic_store_n(&sw->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

#endif /* DEVRES_TESTS_PCI_RO_CELL_H */
