/* SPDX-License-Identifier: MIT */
/*
 * The objects a parent makes before it forks, one of every kind that
 * carries a lock or a release (docs/fork.md, "What a child inherits"),
 * and the calls a child makes on them. Shared by test-fork.c.
 */
#ifndef DEVRES_TEST_FORK_INHERITED_H
#define DEVRES_TEST_FORK_INHERITED_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/pci.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/revocable.h>

/*
 * An interrupt raised is delivered by a dispatcher thread, which a loaded
 * machine may leave unscheduled for seconds (a sanitizer build at load 17
 * once took more than 2 s). Waits up to HIT_WAIT_S seconds of wall-clock
 * time for *@hits to become nonzero and says whether it did: one never
 * delivered still fails, after the bound. A child's alarm, CHILD_ALARM_S,
 * leaves room for a few such waits and ends a deadlocked child.
 */
#define HIT_WAIT_S 10
#define CHILD_ALARM_S 60

static inline bool wait_hit(const int *hits)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!__atomic_load_n(hits, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= HIT_WAIT_S)
			return false;
		usleep(1000);
	}
	return true;
}

struct museum {
	struct device dev; /* resources of every subsystem on it */
	struct platform_driver drv;
	struct platform_device *plat; /* bound to drv */
	struct pci_dev *pci;	      /* enabled, BAR 0 mapped */
	void __iomem *bar;
	struct dma_pool *pool, *mpool;
	void *blk, *coh, *mcoh, *io, *map;
	dma_addr_t blk_dma, coh_dma, mcoh_dma, map_dma;
	char buf[256];
	struct revocable *rev;
	int thing; /* what rev guards */
	struct resource *region, *mem;
	int irq, hits, fd, winfd;
	struct devres_thread *thread;
	FILE *stream;
};

/*
 * Makes every object, @pci_addr a device of the fake tree scanned already.
 * Returns 0, or the line that failed.
 */
int museum_make(struct museum *m, const char *pci_addr);

/*
 * In the child: every entry point on every object of @m and on @busy (a
 * device another thread of the parent was using when it forked), each
 * expected to WARN once and to fail as its contract says. Returns how
 * many did not.
 */
int museum_visit(struct museum *m, struct device *busy);

/*
 * In the parent, after the children: each object still works, then is
 * released. Returns 0, or the line that failed.
 */
int museum_close(struct museum *m);

#endif /* DEVRES_TEST_FORK_INHERITED_H */
