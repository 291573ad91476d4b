/* SPDX-License-Identifier: MIT */
/*
 * What the read-only and BAR tables of tests/pci/ and tests/kcompat/ share:
 * TSan's options for cells in children of fork(), a check that counts a
 * failure in the cell's `bad` and says where, and the switch to read-only
 * mode made on a thread of its own, which records when it entered, its
 * thread id (so that the cell sees it asleep, waiting for a write in
 * flight) and when it returned, in the order kept by @seq with the write
 * it waits for (@landed).
 */
#ifndef DEVRES_TESTS_PCI_RO_CELL_H
#define DEVRES_TESTS_PCI_RO_CELL_H

#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <devres/pci.h>

/*
 * Each cell forks from a parent with no thread of the library's. The
 * sanitizer's hook has the name it looks for.
 */
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
const char *__tsan_default_options(void);
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

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

/* Waits @ms for @s: 0, or -1 when it was not posted in time. */
static inline int sem_wait_ms(sem_t *s, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(s, &ts) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

#endif /* DEVRES_TESTS_PCI_RO_CELL_H */
