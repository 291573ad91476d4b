// SPDX-License-Identifier: MIT
/*
 * A resource acquired by a managed call and then given back with the plain
 * call (iounmap() of a devm_ioremap() mapping, free_irq() of a
 * devm_request_irq() handler...). The resource's own record says which
 * node will release it; the plain release sees that, takes the node off
 * the device there and then, and WARNs. So the resource is given back once,
 * now, and no later owner of the same address or number is touched when
 * the device lets go of its resources. What the node's removal logs is
 * held until devres__warn_hand(), which the caller calls once unlocked.
 */
#include <stdarg.h>
#include <stdio.h>
#include <devres/devres.h>
#include "node.h"

static int same_node(struct device *dev, void *res, void *data)
{
	(void)dev;
	return res == data;
}

/*
 * From a match or for-each callback of the owner's device, this thread
 * holds that device's lock up the stack: devres_destroy() would be
 * refused with a WARN of its own, a second one for one misuse, and the
 * node left listed. It is killed where it lies instead, as devm_kfree()
 * does: the walk that runs the callback steps over it (a dead node's
 * header stays until a later walk frees it), and nothing releases it.
 */
static bool kill_held(struct device *dev, void *res)
{
	struct devres__node *n;

	if (__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) !=
	    devres__me())
		return false;
	for (n = list_head(dev); n; n = n->next) {
		if (dr_dead(n) || dr_is_marker(n) || node_data(n) != res)
			continue;
		if (dr_slab(n))
			devres__slab_forget(dev, n);
		else if (devres__indexed(n))
			devres__index_del(dev, n);
		dr_log(dev, "REM", dr_log_of_res(n));
		kill_locked(dev, n);
		break;
	}
	return true;
}

void devres__disown(struct devres__owner *owner, struct devres__hand *h)
{
	struct devres__owner o[1] = { *owner };
	char buf[40];

	/* Under the subsystem's lock: the REM line waits for the unlock. */
	devres__log_hold();
	/* Cleared first: the owner may live in the node destroyed below. */
	*owner = (struct devres__owner){ 0 };
	h->call = o->call;
	h->fix = o->fix;
	h->owner = o->dev;
	snprintf(h->dev, sizeof(h->dev), "%s",
		 devres__dev_label(o->dev, buf, sizeof(buf)));
	/*
	 * -ENOENT: the device is releasing its resources on another thread
	 * and the node is off its list, its release not yet run. That
	 * release finds the record no longer owned by it and does nothing.
	 */
	if (!kill_held(o->dev, o->node))
		devres_destroy(o->dev, o->release, same_node, o->node);
}

bool devres__owner_add(const struct devres__owner *o)
{
	devres__log_hold();
	return devres__record(o->dev, o->node, o->call);
}

void devres__owner_refused(const struct devres__owner *o)
{
	/* @o may live in the node, which its release may change. */
	struct devres__owner c = *o;

	c.release(c.dev, c.node);
}

void devres__owner_hand(const struct devres__owner *o, struct devres__hand *h)
{
	char buf[40];

	h->call = o->call;
	h->fix = o->fix;
	h->owner = o->dev;
	h->pid = 0;
	snprintf(h->dev, sizeof(h->dev), "%s",
		 devres__dev_label(o->dev, buf, sizeof(buf)));
}

void devres__warn_hand(const struct devres__hand *h, const char *func,
		       const char *what)
{
	devres__log_release();
	devres__warn_label(h->dev, func, DEVRES__HAND_FMT, what, h->call,
			   h->fix);
}

void devres__warn_foreign(const struct device *dev, const char *func,
			  const struct devres__hand *h, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!h)
		devres__warn(dev, func, "%s", what);
	else if (h->owner == dev)
		devres__warn(dev, func,
			     "%s: it is this device's, acquired with %s() (use "
			     "%s): nothing released",
			     what, h->call, h->fix);
	else
		devres__warn(dev, func,
			     "%s: it is %s's, acquired with %s() (use %s): "
			     "nothing released",
			     what, h->dev, h->call, h->fix);
}
