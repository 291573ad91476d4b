// SPDX-License-Identifier: MIT
/*
 * Managed interrupt handlers: freed when the device lets go of its
 * resources. A node records (irq, dev_id), and the handler records its
 * node: devm_free_irq() releases the node that matches both, and a node
 * frees only the handler it owns, never one requested with plain
 * request_irq() or another device's with the same dev_id. free_irq() of a
 * managed handler takes its node off the device (manage.c).
 */
#include <errno.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "internal.h"

struct irq_devres {
	unsigned int irq;
	void *dev_id;
};

static void devm_irq_release(struct device *dev, void *res)
{
	struct irq_devres *dr = res;

	(void)dev;
	irq__free_owned(dr->irq, dr);
}

static int devm_irq_match(struct device *dev, void *res, void *data)
{
	struct irq_devres *this = res, *match = data;

	(void)dev;
	return this->irq == match->irq && this->dev_id == match->dev_id;
}

static int request_dr(struct device *dev, unsigned int irq,
		      irq_handler_t handler, irq_handler_t thread_fn,
		      unsigned long irqflags, const char *devname, void *dev_id,
		      const char *call)
{
	struct devres__owner owner;
	struct irq_devres *dr;
	int rc;

	if (!devres__dev_ok_to_acquire(dev, call) ||
	    irq__args_bad(dev, irq, handler, thread_fn, irqflags, devname,
			  dev_id, call))
		return -EINVAL;
	dr = devres_alloc(devm_irq_release, sizeof(*dr), GFP_KERNEL);
	if (!dr)
		return -ENOMEM;
	if (!devname)
		devname = dev_name(dev);
	owner = (struct devres__owner){ .dev = dev,
					.node = dr,
					.release = devm_irq_release,
					.call = call,
					.fix = "devm_free_irq()" };
	dr->irq = irq;
	dr->dev_id = dev_id;
	/* On success the node is on the device (added under the line lock). */
	rc = irq__request(irq, handler, thread_fn, irqflags, devname, dev_id,
			  &owner);
	if (rc)
		devres_free(dr);
	return rc;
}

int devm_request_threaded_irq(struct device *dev, unsigned int irq,
			      irq_handler_t handler, irq_handler_t thread_fn,
			      unsigned long irqflags, const char *devname,
			      void *dev_id)
{
	return request_dr(dev, irq, handler, thread_fn, irqflags, devname,
			  dev_id, __func__);
}

int devm_request_irq(struct device *dev, unsigned int irq,
		     irq_handler_t handler, unsigned long irqflags,
		     const char *devname, void *dev_id)
{
	return request_dr(dev, irq, handler, NULL, irqflags, devname, dev_id,
			  __func__);
}

int devm_request_any_context_irq(struct device *dev, unsigned int irq,
				 irq_handler_t handler, unsigned long irqflags,
				 const char *devname, void *dev_id)
{
	int rc = request_dr(dev, irq, handler, NULL, irqflags, devname, dev_id,
			    __func__);

	return rc ? rc : IRQC_IS_HARDIRQ;
}

void devm_free_irq(struct device *dev, unsigned int irq, void *dev_id)
{
	struct irq_devres match = { .irq = irq, .dev_id = dev_id };
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__))
		return;
	if (irq__cur_line && (unsigned int)irq__cur_line->irq == irq) {
		devres__warn(dev, __func__,
			     "irq %u: called from its own handler, would wait "
			     "for itself",
			     irq);
		return;
	}
	if (!devres_release(dev, devm_irq_release, devm_irq_match, &match))
		return;
	/* Another device's handler: named, left alone. */
	devres__warn_foreign(dev, __func__,
			     irq__owner(irq, dev_id, &h) ? &h : NULL,
			     "irq %u: no managed handler with dev_id %p", irq,
			     dev_id);
}
