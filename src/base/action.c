// SPDX-License-Identifier: MIT
/*
 * Actions: a function and its argument, run when the device releases its
 * resources. The function is the node's kind (so logs name it), and the
 * node's data is the argument alone.
 */
#include <errno.h>
#include "node.h"
#include "frame.h"

/* Records @action(@data); a WARN names @func, the call its caller made. */
static int add_action(struct device *dev, void (*action)(void *), void *data,
		      const char *name, const char *func)
{
	struct devres__node *n;
	struct dr_log l;
	uint32_t kind;

	if (!devres__dev_ok(dev, func))
		return -EINVAL;
	if (devres__arg_bad(dev, (const void *)action, func, "action") ||
	    devres__opt_bad(dev, name, func, "name"))
		return -EINVAL;
	kind = devres__kind_of(NULL, action, name);
	if (unlikely(kind == DR_KIND_NONE))
		return -ENOMEM;
	n = devres__alloc_node(kind, sizeof(void *), false);
	if (!n)
		return -ENOMEM;
	*(void **)node_data(n) = data;
	l = dr_log_of_res(n);
	if (!lock_dev(dev, func)) {
		devres__free_node(n);
		return -EDEADLK;
	}
	devres__index_add(dev, n);
	add_locked(dev, n);
	unlock_dev(dev);
	dr_log(dev, "ADD", l);
	return 0;
}

int devm_add_action_named(struct device *dev, void (*action)(void *),
			  void *data, const char *name)
{
	return add_action(dev, action, data, name, __func__);
}

int devm_add_action_or_reset_named(struct device *dev, void (*action)(void *),
				   void *data, const char *name)
{
	int ret = add_action(dev, action, data, name, __func__);

	/* Never an action that could not be called. */
	if (ret && !devres__ptr_bad((const void *)action))
		action(data);
	return ret;
}

/*
 * The kind of @action's records. A NULL action names no action: (NULL,
 * NULL) is the kind of devres_alloc(NULL, ...) nodes, which an action
 * lookup must never reach (their data is not an argument, and running
 * their "action" calls address 0).
 */
static bool action_kind(struct device *dev, void (*action)(void *),
			const char *func, uint32_t *ret_kind)
{
	if (!devres__dev_ok(dev, func))
		return false;
	if (devres__arg_bad(dev, (const void *)action, func, "action"))
		return false;
	*ret_kind = devres__kind_lookup(NULL, action);
	return true;
}

/* Whether @dev records the action of kind *@kind with @data. Locked. */
static const char *has_action(struct device *dev, const void *kind,
			      const void *data)
{
	return devres__index_find(dev, *(const uint32_t *)kind, data) ? "devm_"
									"add_"
									"action"
								      : NULL;
}

/*
 * Takes the newest record of (@action, @data) off @dev: O(1) through the
 * index, the node left dead in place. Returns whether there was one; when
 * not, WARNs, naming the live device that records it, if one does (@fix:
 * what gives it back there).
 */
static bool take_action(struct device *dev, void (*action)(void *), void *data,
			const char *func, const char *fix)
{
	struct devres__node *n = NULL, *dead = NULL;
	struct dr_log l;
	uint32_t kind;

	if (!action_kind(dev, action, func, &kind))
		return false;
	if (kind != DR_KIND_NONE) {
		if (!lock_dev(dev, func))
			return false;
		n = devres__index_find(dev, kind, data);
		if (n) {
			l = dr_log_of_res(n);
			devres__index_del(dev, n);
			kill_locked(dev, n);
			dead = maybe_compact(dev);
		}
		unlock_dev(dev);
	}
	if (!n) {
		struct devres__hand h;
		bool found =
			kind != DR_KIND_NONE &&
			devres__owner_of(dev, has_action, &kind, data, fix, &h);

		/* Another device's: named, left recorded there. */
		devres__warn_foreign(dev, func, found ? &h : NULL,
				     "action %p(%p) is not recorded",
				     (void *)(uintptr_t)action, data);
		return false;
	}
	devres__free_dead(dead);
	dr_log(dev, "REM", l);
	return true;
}

void devm_remove_action(struct device *dev, void (*action)(void *), void *data)
{
	take_action(dev, action, data, __func__, "devm_remove_action()");
}

void devm_release_action(struct device *dev, void (*action)(void *), void *data)
{
	int err = errno;
	struct devres__frame f;

	if (take_action(dev, action, data, __func__, "devm_release_action()")) {
		/* As any release pass: a last put of @dev waits for it. */
		devres__frame_enter(&f, dev);
		action(data);
		devres__frame_leave(&f);
	}
	errno = err;
}

bool devm_is_action_added(struct device *dev, void (*action)(void *),
			  void *data)
{
	struct devres__node *n;
	uint32_t kind;

	if (!action_kind(dev, action, __func__, &kind) ||
	    kind == DR_KIND_NONE || !lock_dev(dev, __func__))
		return false;
	n = devres__index_find(dev, kind, data);
	unlock_dev(dev);
	return n != NULL;
}
