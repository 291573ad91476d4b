// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * The multi-BAR calls, pcim_iomap_regions() and pcim_request_all_regions(),
 * against the device's other managed BAR calls made meanwhile: a table of
 * (multi-BAR call) x (what the other call does to a BAR the call made).
 *
 * The call claims BARs 0 and 1 (and maps them), then fails at BAR 2,
 * claimed by hand before: its undo must give back what it made, and only
 * that. The call stops at a gate in its claim of BAR 1, its last claim
 * before the failure (BAR 0 claimed, and mapped by pcim_iomap_regions()):
 * the library's claim of a managed region, devres__request_region_node(),
 * is wrapped at the link (-Wl,--wrap), and the wrapper waits at the gate
 * once the claim is made, on the call's thread only. A second thread then
 * gives BAR 0 back (pcim_iounmap(), pcim_release_region()) and perhaps
 * takes it again for itself (pcim_iomap(), pcim_request_region()). The
 * second thread must wait for the call (one step to it), and whatever it
 * took must still be its own at the end, whoever ran first.
 *
 * Then pcim_iomap_regions() of BAR 0 stopped between the claim and the
 * mapping: the second thread's release waits for it; and the same release
 * made from the call's own thread, inside the claim's wrapper (as a
 * signal handler there would, the BARs' lock being recursive), fails the
 * call with -EBUSY, with nothing mapped, rather than mapping a BAR it no
 * longer holds.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include "testlib.h"
#include "pcitest.h"
#include "gate.h"
#include "pci/pci.h"

#define NAME "0000:00:07.0"

/* How long the test lets the second thread run while the call waits. */
#define BLOCKED_NS 100000000L

static struct pci_dev *pdev;

enum multi {
	IOMAP_REGIONS,
	REQUEST_ALL,
	BETWEEN,
	NR_MULTI
};

/* What the other call does to BAR 0, and whether it takes it again. */
enum other {
	UNMAP,
	REMAP,
	RELEASE,
	RECLAIM,
	UNMAP_RELEASE_REMAP,
	NR_OTHER
};

static const char *const multi_name[] = { "pcim_iomap_regions(0-2)",
					  "pcim_request_all_regions",
					  "pcim_iomap_regions(0)" };
static const char *const other_name[] = {
	"pcim_iounmap",
	"pcim_iounmap+pcim_iomap",
	"pcim_release_region",
	"pcim_release_region+pcim_request_region",
	"pcim_iounmap+pcim_release_region+pcim_iomap_regions",
};

struct cell {
	enum multi m;
	enum other o;
	bool inline_release; /* made from inside the call's own claim */
};

/* The claim's wrapper: stops the call's thread at its @gate_at'th claim. */
static pthread_t call_thread;
static int claims, gate_at;
static bool inline_release;

/* The linker's names for the wrapped call and its wrapper. */
/* NOLINTBEGIN(bugprone-reserved-identifier) */
struct resource *__real_devres__request_region_node(
	struct device *dev, bool mem, resource_size_t start, resource_size_t n,
	const char *name, const char *call, const char *fix,
	struct devres__region_id *ret_id);
struct resource *__wrap_devres__request_region_node(
	struct device *dev, bool mem, resource_size_t start, resource_size_t n,
	const char *name, const char *call, const char *fix,
	struct devres__region_id *ret_id);

struct resource *__wrap_devres__request_region_node(
	struct device *dev, bool mem, resource_size_t start, resource_size_t n,
	const char *name, const char *call, const char *fix,
	struct devres__region_id *ret_id)
{
	struct resource *r = __real_devres__request_region_node(
		dev, mem, start, n, name, call, fix, ret_id);

	if (!r || !pthread_equal(pthread_self(), call_thread) ||
	    ++claims != gate_at)
		return r;
	if (inline_release)
		pcim_release_region(pdev, 0);
	else
		gate_wait();
	return r;
}
/* NOLINTEND(bugprone-reserved-identifier) */

struct call {
	enum multi m;
	int ret;
};

static void *multi_thread(void *arg)
{
	struct call *c = arg;

	call_thread = pthread_self();
	if (c->m == REQUEST_ALL)
		c->ret = pcim_request_all_regions(pdev, "call");
	else
		c->ret = pcim_iomap_regions(pdev, c->m == BETWEEN ? 1 : 7,
					    "call");
	return NULL;
}

struct other_call {
	enum other o;
	void *old;   /* the call's mapping of BAR 0, read at the gate */
	void *map;   /* what it mapped for itself */
	int claimed; /* what its claim returned, 1 for none made */
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *other_thread(void *arg)
{
	struct other_call *oc = arg;
	void *old = oc->old;

	switch (oc->o) {
	case UNMAP:
		pcim_iounmap(pdev, old);
		break;
	case REMAP:
		pcim_iounmap(pdev, old);
		oc->map = pcim_iomap(pdev, 0, 0);
		break;
	case RELEASE:
		pcim_release_region(pdev, 0);
		break;
	case RECLAIM:
		pcim_release_region(pdev, 0);
		oc->claimed = pcim_request_region(pdev, 0, "other");
		break;
	case UNMAP_RELEASE_REMAP:
		pcim_iounmap(pdev, old);
		pcim_release_region(pdev, 0);
		oc->claimed = pcim_iomap_regions(pdev, 1, "other");
		if (!oc->claimed)
			oc->map = pcim_iomap_table(pdev)[0];
		break;
	default:
		break;
	}
	pthread_mutex_lock(&oc->lock);
	oc->done = true;
	pthread_cond_signal(&oc->cond);
	pthread_mutex_unlock(&oc->lock);
	return NULL;
}

/* Whether the other thread ended within BLOCKED_NS. */
static bool ended_soon(struct other_call *oc)
{
	struct timespec t;
	bool done;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += BLOCKED_NS;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&oc->lock);
	while (!oc->done && !pthread_cond_timedwait(&oc->cond, &oc->lock, &t))
		;
	done = oc->done;
	pthread_mutex_unlock(&oc->lock);
	return done;
}

/* Whether BAR @bar is claimed: a claim by hand of it fails. */
static bool claimed(int bar)
{
	resource_size_t start = pci_resource_start(pdev, bar);
	resource_size_t len = pci_resource_len(pdev, bar);

	if (!request_mem_region(start, len, "probe"))
		return true;
	release_mem_region(start, len);
	return false;
}

/* A cell's findings: each printed, all counted; the table fails at its end. */
static int failures;

#define FAILS(...)                                                             \
	do {                                                                   \
		print_error(__VA_ARGS__);                                      \
		failures++;                                                    \
	} while (0)

static void setup_cell(void)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 3);
	struct pci_dev *p;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	pdev = p;
}

static void teardown_cell(void)
{
	(void)devres_release_all(&pdev->dev);
	assert_int_equal(pci_teardown(NULL), 0);
}

/*
 * One cell: the call stopped at its gate, the other thread started and
 * given BLOCKED_NS, the gate opened. The other thread must not have ended
 * while the call was stopped; at the end, what it took is its own, and
 * nothing of the call's is left when the call failed.
 */
static void run_cell(const struct cell *c, const char *label)
{
	struct other_call oc = { .o = c->o, .claimed = 1 };
	struct call call = { .m = c->m };
	pthread_t a, b;
	bool blocked = false;
	struct resource *by_hand = NULL;

	setup_cell();
	if (c->m != BETWEEN) {
		/* BAR 2 is someone else's: the call fails there. */
		by_hand = request_mem_region(pci_resource_start(pdev, 2),
					     pci_resource_len(pdev, 2), "hand");
		assert_non_null(by_hand);
	}
	pthread_mutex_init(&oc.lock, NULL);
	pthread_cond_init(&oc.cond, NULL);
	gate_reset();
	claims = 0;
	/* Its last claim before the failure: BAR 1's, or BAR 0's alone. */
	gate_at = c->m == BETWEEN ? 1 : 2;
	inline_release = c->inline_release;
	assert_int_equal(pthread_create(&a, NULL, multi_thread, &call), 0);
	if (!c->inline_release) {
		gate_until_reached();
		oc.old = pcim_iomap_table(pdev)[0];
		assert_int_equal(pthread_create(&b, NULL, other_thread, &oc),
				 0);
		blocked = !ended_soon(&oc);
		gate_release();
		assert_int_equal(pthread_join(b, NULL), 0);
	}
	assert_int_equal(pthread_join(a, NULL), 0);

	if (c->inline_release) {
		/* The claim went before the mapping: the call fails. */
		if (call.ret != -EBUSY || pcim_iomap_table(pdev)[0] ||
		    claimed(0))
			FAILS("%s: ret %d, BAR 0 %s, %s\n", label, call.ret,
			      pcim_iomap_table(pdev)[0] ? "mapped"
							: "not mapped",
			      claimed(0) ? "claimed" : "not claimed");
		goto out;
	}
	if (!blocked)
		FAILS("%s: the other call ended while the call was "
		      "between its steps\n",
		      label);
	if (call.ret != (c->m == BETWEEN ? 0 : -EBUSY))
		FAILS("%s: the call returned %d\n", label, call.ret);
	/* What the other thread took is still its own. */
	if (oc.map && pcim_iomap_table(pdev)[0] != oc.map)
		FAILS("%s: the other call's mapping of BAR 0 is gone\n", label);
	if (!oc.claimed && !claimed(0))
		FAILS("%s: the other call's claim of BAR 0 is gone\n", label);
	/* And nothing of the failed call's is left. */
	if (c->m != BETWEEN && (pcim_iomap_table(pdev)[1] || claimed(1) ||
				(!oc.map && pcim_iomap_table(pdev)[0]) ||
				(oc.claimed && claimed(0))))
		FAILS("%s: the failed call left BAR 0 or 1 held\n", label);
out:
	if (by_hand)
		release_mem_region(pci_resource_start(pdev, 2),
				   pci_resource_len(pdev, 2));
	pthread_cond_destroy(&oc.cond);
	pthread_mutex_destroy(&oc.lock);
	teardown_cell();
}

static void test_undo_table(void **state)
{
	char label[160];
	int cells = 0;

	(void)state;
	for (int m = 0; m < NR_MULTI; m++) {
		for (int o = 0; o < NR_OTHER; o++) {
			/* pcim_request_all_regions() maps nothing. */
			if (m == REQUEST_ALL && (o == UNMAP || o == REMAP ||
						 o == UNMAP_RELEASE_REMAP))
				continue;
			/* Between claim and map: only a release applies. */
			if (m == BETWEEN && o != RELEASE && o != RECLAIM)
				continue;
			snprintf(label, sizeof(label), "%s x %s", multi_name[m],
				 other_name[o]);
			run_cell(&(struct cell){ m, o, false }, label);
			cells++;
		}
	}
	snprintf(label, sizeof(label), "%s x pcim_release_region (own thread)",
		 multi_name[BETWEEN]);
	run_cell(&(struct cell){ BETWEEN, RELEASE, true }, label);
	assert_int_equal(cells + 1, 10);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_undo_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
