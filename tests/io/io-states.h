/* SPDX-License-Identifier: MIT */
/*
 * What the io states tables (test-io-map-states, test-io-region-states)
 * share beyond tests/states.h: the lifecycle every io acquisition goes
 * through, reached through the acquisition's four calls; the window of
 * device memory each cell maps or claims, with the two test devices; and
 * the opening of each cell's undo, where the other device may still hold
 * what it took in the REOWNED state. Each table keeps its own calls, its
 * rows, its state names and what its undo checks beyond that.
 *
 * Include it after defining _GNU_SOURCE (io/iotest.h).
 */
#ifndef DEVRES_TESTS_IO_STATES_H
#define DEVRES_TESTS_IO_STATES_H

#include <stdbool.h>
#include <devres/devres.h>
#include <devres/io.h>
#include "testlib.h"
#include "states.h"
#include "io/iotest.h"

/*
 * The states of an acquisition in every io table: never made; made
 * managed; made plain; given back by the right call; a managed one given
 * back by the plain call (the wrong one); a plain one given back twice;
 * given back by the device's release (unbound); given back and then made
 * by the other device (reowned). A table with more states numbers them
 * from NR_IO_STATES.
 */
enum io_state {
	NEVER,
	MANAGED,
	PLAIN,
	RELEASED,
	WRONG,
	TWICE,
	UNBOUND,
	REOWNED,
	NR_IO_STATES
};

/*
 * An acquisition's calls on the table's range: plain @get and @put,
 * managed @devm_get and @devm_put on @dev. The gets return NULL on
 * failure.
 */
struct io_states_ops {
	void *(*get)(void);
	void (*put)(void *res);
	void *(*devm_get)(struct device *dev);
	void (*devm_put)(struct device *dev, void *res);
};

/*
 * Brings the acquisition to state @s (any but NEVER) on tdev, and on
 * other for REOWNED; returns what the state's acquisition is: tdev's (a
 * stale pointer once given back), or in REOWNED the other device's.
 */
static inline void *io_states_reach(const struct io_states_ops *ops,
				    unsigned int s)
{
	void *res = NULL;

	switch (s) {
	case PLAIN:
	case TWICE:
		res = ops->get();
		assert_non_null(res);
		if (s == TWICE) {
			ops->put(res);
			ops->put(res);
		}
		break;
	case MANAGED:
	case RELEASED:
	case WRONG:
	case UNBOUND:
	case REOWNED:
		res = ops->devm_get(&tdev);
		assert_non_null(res);
		if (s == RELEASED || s == REOWNED)
			ops->devm_put(&tdev, res);
		else if (s == WRONG)
			ops->put(res);
		else if (s == UNBOUND)
			assert_int_equal(devres_release_all(&tdev), 1);
		if (s == REOWNED) {
			res = ops->devm_get(&other);
			assert_non_null(res);
		}
		break;
	default:
		fail();
	}
	return res;
}

/*
 * The opening of a cell's undo. In REOWNED the other device holds one
 * node, unless the cell's call took it (@want->other: a release by
 * address cannot tell one owner from another); returns whether it still
 * holds it, for the table to check that it is intact.
 */
static inline bool io_states_theirs_kept(unsigned int s,
					 const struct states_cell *want)
{
	if (s != REOWNED)
		return false;
	assert_int_equal(states_nodes(&other), want->other ? 0 : 1);
	return !want->other;
}

/* Then both devices give back what they hold. */
static inline void io_states_release(void)
{
	devres_release_all(&other);
	devres_release_all(&tdev);
}

/* The fixture of each cell: @size bytes of device memory at @base, tdev and other. */
static struct io_window io_states_win;

static inline int io_states_window_setup(void **state, phys_addr_t base,
					 size_t size)
{
	if (io_window_add(&io_states_win, base, size, "win"))
		return -1;
	return two_dev_setup(state);
}

static inline int io_states_window_teardown(void **state, phys_addr_t base,
					    size_t size)
{
	int ret = dev_teardown(state);

	if (io_window_remove(&io_states_win, base, size))
		ret = -1;
	return ret;
}

#endif /* DEVRES_TESTS_IO_STATES_H */
