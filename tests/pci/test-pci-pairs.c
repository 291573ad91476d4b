// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of lifecycle calls on a PCI function of a fake tree, made at
 * once from two threads, many rounds (DEVRES_PAIRS_ROUNDS), in each state
 * a driver puts it in: scanned and idle; enabled (pci_enable_device());
 * enabled managed, BAR 0 mapped and claimed (pcim_enable_device(),
 * pcim_iomap(), pcim_request_region()); MSI-X vectors allocated. The
 * calls: pci_enable_device(), pci_disable_device(), pcim_enable_device(),
 * pcim_pin_device(), pcim_iomap() and pcim_iounmap() of BAR 0, pcim_request_region() and
 * pcim_release_region() of BAR 0, pci_alloc_irq_vectors(),
 * pci_free_irq_vectors(), the release of the device's managed
 * resources (devres_release_all()), pcim_iomap_regions() of BAR 0 and
 * pcim_request_all_regions(). Each pair must end as one of its two
 * serial orders does (tests/pairs.h): the same returns and WARNs, and the
 * function the same after: enabled as many times (the disables it takes
 * to be disabled, none of them WARNing), vectors or none, what the
 * release then finds; the ledger is back at its baseline after each
 * state (no mapping, claim, enable or descriptor left).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/pci-lifecycle.h"
#include "pairs.h"
#include "rounds.h"

/*
 * What the pair left: vectors or not, BAR 0 mapped in the table (and,
 * times two, the claims left once all is given back: none in either
 * order), what the release finds, the disables it then takes to be
 * disabled, and the WARNs of giving back the rest.
 */
static void undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = pdev->msix_enabled;
	o->after[1] = pcim_iomap_table(pdev)[0] != NULL;
	o->after[3] = give_back(&o->after[2]);
	o->after[4] = devres_warn_count() - w0;
	o->after[1] += 2 * iomem_busy();
}

/*
 * The third outcome src/base/disown.c documents: the release has taken a
 * node off the device but not run it when the call that gives its
 * resource back (pcim_iounmap(), pcim_release_region(), a
 * pci_disable_device() of a managed enable) finds it still recorded and
 * takes it; the node's release then does nothing. So the pair ends as
 * the give-back first, but the release counts the node it took.
 */
/*
 * And one of pcim_iomap_regions(), which claims a BAR, then maps it: a
 * release of the device between the two (docs/pci.md) takes the claim,
 * and the call fails with -EBUSY, its mapping given back (by the call's
 * undo, or by the release when it ran after the mapping too). The pair
 * ends as the call first, but the call fails, and the release counts the
 * claim alone, or the claim and the mapping.
 */
static bool between_steps(unsigned int a, unsigned int b,
			  const struct pairs_outcome *got,
			  const struct pairs_outcome *ser)
{
	struct pairs_outcome want;
	int call; /* pcim_iomap_regions()'s */

	if (a == RELEASE && b == IOMAP_REGIONS)
		call = 1;
	else if (a == IOMAP_REGIONS && b == RELEASE)
		call = 0;
	else
		return false;
	want = ser[call];
	want.ret[call] = -EBUSY;
	if (!memcmp(got, &want, sizeof(want)))
		return true;
	want.ret[1 - call]--;
	return !memcmp(got, &want, sizeof(want));
}

static bool taken_from_release(unsigned int s, unsigned int a, unsigned int b,
			       const struct pairs_outcome *got,
			       const struct pairs_outcome *ser)
{
	(void)s;
	return pairs_taken(a, b, got, ser, a == RELEASE ? b : a, ~0U,
			   RELEASE) ||
	       between_steps(a, b, got, ser);
}

#ifdef T_TSAN
#define ROUNDS 3
#define MANAGED_ROUNDS 300
#else
#define ROUNDS 10
#define MANAGED_ROUNDS 600
#endif

/* A call of the PCI API writes sysfs files: tens of microseconds. */
#define SPREAD 50000

PAIRS_TEST(every_pair_in_every_state, ROUNDS, .nr_states = NR_STATES,
	   .nr_calls = NR_PAIR_CALLS, .state_name = state_name,
	   .call_name = call_name, .reach = reach, .call = make, .undo = undo,
	   .also = taken_from_release, .spread = SPREAD, .setup = function_up,
	   .teardown = function_down)

/*
 * The calls on a managed enable, alone, many rounds: their windows are
 * the narrowest. A pci_disable_device() made while pcim_enable_device()
 * had enabled the function but not yet made the enable managed took that
 * enable as a plain one (no WARN), and the managed one left behind
 * disabled the function once more at the release: "device is not
 * enabled", a WARN neither order prints. pcim_pin_device() found the
 * enable's node, then wrote to it under the device's lock: a disable or
 * the release could free the node in between.
 */
static unsigned int focus_state;
static const unsigned int *focus_call;

static void reach_focus(unsigned int s)
{
	(void)s;
	reach(focus_state);
}

static int make_focus(unsigned int c)
{
	return make(focus_call[c]);
}

static bool focus_taken(unsigned int s, unsigned int a, unsigned int b,
			const struct pairs_outcome *got,
			const struct pairs_outcome *ser)
{
	(void)s;
	return taken_from_release(focus_state, focus_call[a], focus_call[b],
				  got, ser);
}

/* The names whole: clang-format splits their strings. */
/* clang-format off */
static const unsigned int enable[] = { PCIM_ENABLE, DISABLE };
static const char *const enable_names[] = { "pcim_enable_device",
					    "pci_disable_device" };
static const unsigned int pin[] = { PIN, DISABLE, RELEASE };
static const char *const pin_names[] = { "pcim_pin_device",
					 "pci_disable_device",
					 "devres_release_all" };
/* clang-format on */

static void enable_up(void)
{
	focus_state = IDLE;
	focus_call = enable;
	function_up();
}

static void pin_up(void)
{
	focus_state = MANAGED;
	focus_call = pin;
	function_up();
}

/* The pairs of @names' calls in state @s, made with function @up. */
#define FOCUS(s, names, up)                                                    \
	.nr_states = 1, .state_name = &state_name[s],                          \
	.nr_calls = sizeof(names) / sizeof((names)[0]), .call_name = (names),  \
	.reach = reach_focus, .call = make_focus, .undo = undo,                \
	.also = focus_taken, .spread = SPREAD, .setup = (up),                  \
	.teardown = function_down

PAIRS_TEST(managed_enable_pairs, MANAGED_ROUNDS,
	   FOCUS(IDLE, enable_names, enable_up))
PAIRS_TEST(pin_pairs, MANAGED_ROUNDS, FOCUS(MANAGED, pin_names, pin_up))

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(managed_enable_pairs, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(pin_pairs, pci_setup,
						pci_teardown),
	};

	return pairs_group("pci-pairs", tests,
			   sizeof(tests) / sizeof(tests[0]));
}
