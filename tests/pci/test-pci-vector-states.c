// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan white-box timeout=120 */
/*
 * The vector calls (pci_alloc_irq_vectors(), pci_irq_vector(),
 * pci_free_irq_vectors()) on a function a backend took, in every state
 * its vectors can be in: none; allocated; being allocated by another
 * thread, held inside the backend's allocation (a fake backend that parks
 * there until the cell lets it go); allocated with a handler on vector 0;
 * freed. Each cell compares what the call returned and its WARNs, then
 * what the device shows once the held allocation (if any) has returned:
 * MSI-X on or off, and whether the backend ever had a free inside one of
 * its allocations. A free made during the allocation turned the vectors
 * off in the backend while it made them, and the allocation then left
 * them allocated: it must wait for the allocation, then free, as the
 * kernel's, which both hold the device's MSI lock.
 *
 * And the same calls in pairs, from two threads at once (tests/pairs.h),
 * in the states that need no parked thread: each pair must end as one of
 * its serial orders, and the backend never sees two of them at once.
 *
 * The backend is this test's own (the PCI bus's backend interface is
 * internal): it takes every function the scan offers.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "states.h"
#include "pairs.h"
#include "pci/backend.h"
#include "pci/park-hold.h"

#define NAME "0000:00:09.0"
#define VENDOR 0x1af4
#define DEVICE 0x1041
#define NLINES 2

/* The fake backend: what it holds and what it saw. */
static struct {
	int lines[NLINES];
	int in_alloc; /* allocations inside it now */
	int overlap;  /* frees made while an allocation was inside */
	int hold;     /* the next allocation parks until released */
	int linger;   /* sched_yield() calls inside each allocation */
	struct park_hold park;
} bk;

static int bk_alloc(struct pci_dev *pdev, void *data, unsigned int min_vecs,
		    unsigned int max_vecs, unsigned int flags,
		    unsigned int *ret_type)
{
	unsigned int n = max_vecs < NLINES ? max_vecs : NLINES;
	int ret;

	(void)data;
	(void)min_vecs;
	(void)flags;
	__atomic_add_fetch(&bk.in_alloc, 1, __ATOMIC_ACQ_REL);
	park_if(&bk.park, &bk.hold);
	/* A real backend's ioctls take this long: a window a pair can hit. */
	for (int i = 0; i < bk.linger; i++)
		sched_yield();
	ret = pci_dev_set_irq_lines(pdev, bk.lines, n);
	*ret_type = PCI_IRQ_MSIX;
	__atomic_sub_fetch(&bk.in_alloc, 1, __ATOMIC_ACQ_REL);
	return ret ? ret : (int)n;
}

static void bk_free(struct pci_dev *pdev, void *data)
{
	(void)data;
	if (__atomic_load_n(&bk.in_alloc, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&bk.overlap, 1, __ATOMIC_ACQ_REL);
	(void)pci_dev_set_irq_lines(pdev, NULL, 0);
}

static const struct pci__backend fake_backend = {
	.name = "test",
	.attach = park_bk_attach,
	.detach = park_bk_detach,
	.alloc_irq_vectors = bk_alloc,
	.free_irq_vectors = bk_free,
};

enum state {
	NONE,
	ALLOCATED,
	ALLOCATING,
	HANDLER,
	FREED,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"no vectors",
	"allocated",
	"being allocated by another thread",
	"a handler on vector 0",
	"freed",
};

enum call {
	ALLOC,
	VECTOR,
	FREE,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"pci_alloc_irq_vectors",
	"pci_irq_vector",
	"pci_free_irq_vectors",
};

/*
 * What a call gives, in one number: its return (pci_irq_vector(): 1 for
 * the backend's second line, else what it returned; 0 for a free) times
 * 100, then MSI-X on (10) once any held allocation returned, then the
 * frees the backend saw inside an allocation.
 */
#define R(ret, msix, overlap) ((ret)*100 + (msix)*10 + (overlap))

/* clang-format off */
static const struct states_cell table[NR_STATES][NR_CALLS] = {
	[NONE] = { STATES_CELL(R(2, 1, 0), 0), STATES_CELL(R(-EINVAL, 0, 0), 0),
		   STATES_CELL(R(0, 0, 0), 0) },
	[ALLOCATED] = { STATES_CELL(R(-EINVAL, 1, 0), 1),
			STATES_CELL(R(1, 1, 0), 0),
			STATES_CELL(R(0, 0, 0), 0) },
	/* As after the allocation: refused, the line it had, or freed. */
	[ALLOCATING] = { STATES_CELL(R(-EINVAL, 1, 0), 1),
			 STATES_CELL(R(-EINVAL, 1, 0), 0),
			 STATES_CELL(R(0, 0, 0), 0) },
	[HANDLER] = { STATES_CELL(R(-EINVAL, 1, 0), 1),
		      STATES_CELL(R(1, 1, 0), 0),
		      STATES_CELL(R(0, 1, 0), 1) },
	[FREED] = { STATES_CELL(R(2, 1, 0), 0),
		    STATES_CELL(R(-EINVAL, 0, 0), 0),
		    STATES_CELL(R(0, 0, 0), 0) },
};
/* clang-format on */

static struct pci_dev *pdev;
static int dev_id, requested;
static pthread_t allocator;
static int alloc_ret;
static bool holding;

static irqreturn_t handler(int irq, void *data)
{
	(void)irq;
	(void)data;
	return IRQ_HANDLED;
}

static void *allocate(void *arg)
{
	(void)arg;
	__atomic_store_n(&alloc_ret,
			 pci_alloc_irq_vectors(pdev, 1, NLINES, PCI_IRQ_MSIX),
			 __ATOMIC_RELEASE);
	return NULL;
}

static void reach(unsigned int s)
{
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);

	holding = false;
	requested = 0;
	bk.overlap = 0;
	for (int i = 0; i < NLINES; i++) {
		bk.lines[i] = irq_line_create("vec");
		assert_true(bk.lines[i] > 0);
	}
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(pdev);
	switch (s) {
	case ALLOCATED:
	case HANDLER:
	case FREED:
		assert_int_equal(pci_alloc_irq_vectors(pdev, 1, NLINES,
						       PCI_IRQ_MSIX),
				 NLINES);
		break;
	case ALLOCATING:
		holding = true;
		park_arm(&bk.park);
		__atomic_store_n(&bk.hold, 1, __ATOMIC_RELEASE);
		assert_int_equal(
			pthread_create(&allocator, NULL, allocate, NULL), 0);
		park_wait(&bk.park);
		/* It goes once the cell's call sleeps (waits for it). */
		assert_int_equal(park_releaser_start(&bk.park), 0);
		break;
	default:
		break;
	}
	if (s == HANDLER) {
		assert_int_equal(request_irq(pci_irq_vector(pdev, 0), handler,
					     0, "vec", &dev_id),
				 0);
		requested = 1;
	}
	if (s == FREED)
		pci_free_irq_vectors(pdev);
}

/* The held allocation returned, NLINES vectors; both threads joined. */
static void unhold(void)
{
	if (!holding)
		return;
	holding = false;
	assert_int_equal(park_releaser_join(&bk.park), 0);
	assert_int_equal(pthread_join(allocator, NULL), 0);
	assert_int_equal(__atomic_load_n(&alloc_ret, __ATOMIC_ACQUIRE), NLINES);
}

static int make(unsigned int c)
{
	int r = 0;

	switch (c) {
	case ALLOC:
		r = pci_alloc_irq_vectors(pdev, 1, NLINES, PCI_IRQ_MSIX);
		break;
	case VECTOR:
		r = pci_irq_vector(pdev, 1);
		if (r > 0)
			r = r == bk.lines[1];
		break;
	case FREE:
		pci_free_irq_vectors(pdev);
		break;
	default:
		fail();
	}
	unhold();
	return R(r, pdev->msix_enabled ? 1 : 0,
		 __atomic_load_n(&bk.overlap, __ATOMIC_ACQUIRE));
}

/* Everything given back: handler, vectors, function, lines. */
static void give_back(void)
{
	unhold();
	if (pdev) {
		if (requested)
			assert_non_null(
				free_irq(pci_irq_vector(pdev, 0), &dev_id));
		requested = 0;
		pci_free_irq_vectors(pdev);
		pci_dev_put(pdev);
		pdev = NULL;
	}
	pci_bus_remove_all();
	if (ft)
		(void)pci_fake_remove(ft, NAME);
	for (int i = 0; i < NLINES; i++) {
		if (bk.lines[i] > 0)
			assert_int_equal(irq_line_destroy(bk.lines[i]), 0);
		bk.lines[i] = 0;
	}
}

static void after(void)
{
	give_back();
	assert_int_equal(__atomic_load_n(&bk.in_alloc, __ATOMIC_ACQUIRE), 0);
}

static int cell_teardown(void **state)
{
	give_back();
	return pci_teardown(state);
}

static const struct states_table vector_states =
	STATES_TABLE(table, state_name, call_name, reach, make, after,
		     pci_setup, cell_teardown);

/* The pairs: states reached without a parked thread. */
static const char *const pair_state_name[] = { "no vectors", "allocated" };

static void pair_reach(unsigned int s)
{
	reach(s == 0 ? NONE : ALLOCATED);
}

static int pair_make(unsigned int c)
{
	switch (c) {
	case ALLOC:
		return pci_alloc_irq_vectors(pdev, 1, NLINES, PCI_IRQ_MSIX);
	case VECTOR:
		return pci_irq_vector(pdev, 1) == bk.lines[1];
	case FREE:
		pci_free_irq_vectors(pdev);
		return 0;
	default:
		return -1;
	}
}

static void pair_undo(struct pairs_outcome *o)
{
	o->after[0] = pdev->msix_enabled;
	o->after[1] = __atomic_load_n(&bk.overlap, __ATOMIC_ACQUIRE);
	give_back();
}

static void pairs_up(void)
{
	bk.linger = 20;
	assert_int_equal(pci_setup(NULL), 0);
}

static void pairs_down(void)
{
	bk.linger = 0;
	assert_int_equal(pci_teardown(NULL), 0);
}

#ifdef T_TSAN
#define ROUNDS 20
#else
#define ROUNDS 100
#endif

PAIRS_TEST(every_pair, ROUNDS, PAIRS_NAMES(pair_state_name, call_name),
	   .reach = pair_reach, .call = pair_make, .undo = pair_undo,
	   .spread = 20000, .setup = pairs_up, .teardown = pairs_down)

int main(void)
{
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS + 1];
	size_t n;

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (park_init(&bk.park) || pci__backend_add(&fake_backend))
		return 1;
	n = states_tests(&vector_states, ids, tests);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(every_pair);
	alarm(100);
	return _cmocka_run_group_tests("pci-vector-states", tests, n, NULL,
				       NULL);
}
