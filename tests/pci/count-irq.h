/* SPDX-License-Identifier: MIT */
/*
 * A handler that counts its calls, for the tests that bind a driver to a
 * fake function and raise its interrupt (the UIO and backend tests): it
 * counts in @handled, atomically (the dispatcher's thread writes it, the
 * test reads it). Kept apart from uiotest.h: other tests of that header
 * have handlers of their own.
 */
#ifndef DEVRES_TESTS_PCI_COUNT_IRQ_H
#define DEVRES_TESTS_PCI_COUNT_IRQ_H

#include <devres/irq.h>

static unsigned long handled;

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

#endif /* DEVRES_TESTS_PCI_COUNT_IRQ_H */
