// SPDX-License-Identifier: MIT
/*
 * Interrupt vectors. A process gets a PCI device's interrupts from a
 * backend (VFIO's eventfds, UIO, or a test's own lines): the backend
 * registers the lines with pci_dev_set_irq_lines(), and
 * pci_alloc_irq_vectors() / pci_irq_vector() hand them to the driver.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pci.h"

/* More vectors than MSI-X allows is a caller's mistake. */
#define PCI_MAX_VECTORS 2048

int pci_dev_set_irq_lines(struct pci_dev *pdev, const int *irqs, unsigned int n)
{
	int *copy = NULL;
	int ret = 0;

	if (!pci__dev_ok(pdev, __func__) ||
	    (n && devres__arg_bad(&pdev->dev, irqs, __func__, "irqs")))
		return -EINVAL;
	if (n > PCI_MAX_VECTORS) {
		devres__warn(&pdev->dev, __func__, "%u lines, more than %u", n,
			     PCI_MAX_VECTORS);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (irqs[i] <= 0) {
			devres__warn(&pdev->dev, __func__,
				     "line %u of %u is %d, not a line number",
				     i, n, irqs[i]);
			return -EINVAL;
		}
	}
	if (n) {
		if (devres__should_fail())
			return -ENOMEM;
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, irqs, n * sizeof(*copy));
	}
	pthread_mutex_lock(&pdev->p->lock);
	if (pdev->p->nvec) {
		ret = -EBUSY;
	} else {
		free(pdev->p->irqs);
		pdev->p->irqs = copy;
		pdev->p->nirqs = n;
		copy = NULL;
		/* Only a line of this process, or 0: never a sysfs number. */
		pdev->irq = n ? (unsigned int)pdev->p->irqs[0] : 0;
	}
	pthread_mutex_unlock(&pdev->p->lock);
	free(copy);
	return ret;
}

static int alloc_vectors(struct pci_dev *dev, unsigned int min_vecs,
			 unsigned int max_vecs, unsigned int flags)
{
	unsigned int n, type = 0;
	int ret;

	/* The kernel's allocates MSI descriptors and vectors. */
	if (devres__should_fail_as("pci_alloc_irq_vectors", -ENOMEM))
		return -ENOMEM;
	if (pci__bk(dev, alloc_irq_vectors)) {
		ret = pci__bk_alloc_irq_vectors(dev, min_vecs, max_vecs, flags,
						&type);
		if (ret < 0)
			return ret;
	}
	pthread_mutex_lock(&dev->p->lock);
	n = dev->p->nirqs;
	/* INTx alone is one line, shared by all of the device's functions. */
	if (!(flags & (PCI_IRQ_MSI | PCI_IRQ_MSIX)) && n > 1)
		n = 1;
	if (n > max_vecs)
		n = max_vecs;
	if (dev->p->nvec)
		ret = -EINVAL;
	else if (n < min_vecs)
		ret = -ENOSPC;
	else
		ret = (int)(dev->p->nvec = n);
	/* A backend says which kind it made; a test's own lines are guessed. */
	if (ret > 0 && type)
		dev->msix_enabled = type == PCI_IRQ_MSIX;
	else if (ret > 0 && (flags & PCI_IRQ_MSIX) && dev->p->nirqs > 1)
		dev->msix_enabled = true;
	if (ret > 0 && type)
		dev->msi_enabled = type == PCI_IRQ_MSI;
	else if (ret > 0 && !dev->msix_enabled && (flags & PCI_IRQ_MSI))
		dev->msi_enabled = true;
	pthread_mutex_unlock(&dev->p->lock);
	return ret;
}

/*
 * The thread in the backend is a member of this set from vec_begin() to
 * vec_end(): a wait for it names the set, which it leaves before it wakes
 * the waiters, so that a waiter woken but not yet off the record is not
 * taken for one still waiting for it.
 */
static uintptr_t vec_set(const struct pci_dev *dev)
{
	return (uintptr_t)&dev->p->vec_busy;
}

/*
 * The wait for the call in the backend, on the record of waits while it
 * sleeps (@w), until @busy(@dev) is false or this thread is the one in
 * the backend. The thread in the backend may run the application's code
 * (the backend's, a log sink): one that waits for this thread would
 * never return. Then -EDEADLK, not waiting, @w->loop the loop; else 0.
 * With the device locked.
 */
static int vec_sleep(struct pci_dev *dev, bool (*busy)(const struct pci_dev *),
		     struct devres__wait *w, const char *func)
{
	int cancel = devres__cancel_off();
	bool on = false;
	int ret = 0;

	while (busy(dev) &&
	       !pthread_equal(dev->p->vec_thread, pthread_self())) {
		if (!on) {
			devres__wait_init(w, func);
			devres__wait_target_set(w, vec_set(dev));
			ret = devres__wait_begin(w);
			if (ret)
				break;
			on = true;
		}
		pthread_cond_wait(&dev->p->vec_idle, &dev->p->lock);
	}
	devres__cancel_restore(cancel);
	if (on)
		devres__wait_end(w);
	return ret;
}

static bool freeing(const struct pci_dev *dev)
{
	return dev->p->vec_busy == VEC_FREEING;
}

static bool in_backend(const struct pci_dev *dev)
{
	return dev->p->vec_busy != VEC_IDLE;
}

/*
 * An allocation and a free of a device's vectors each run in the backend
 * alone, as the kernel's each hold the device's MSI descriptor lock: a
 * free made while another thread allocates waits for it (a backend that
 * turned the vectors off in the middle of making them left the device's
 * interrupts half set up), and an allocation waits for a free. Called
 * with the device locked; false, with one WARN, when the thread is the one
 * in the backend (a log sink called from there): it would wait for itself;
 * or when the one in the backend waits for it (vec_sleep()).
 */
static bool vec_wait(struct pci_dev *dev, bool for_alloc, const char *func)
{
	struct devres__wait w;
	const char *what;
	bool loop;

	loop = vec_sleep(dev, for_alloc ? freeing : in_backend, &w, func);
	if (!loop && (for_alloc ? !freeing(dev) : !in_backend(dev)))
		return true;
	what = dev->p->vec_busy == VEC_ALLOCATING ? "allocation" : "free";
	pthread_mutex_unlock(&dev->p->lock);
	if (loop)
		devres__warn(&dev->dev, func,
			     "the %s of its vectors in progress waits for this "
			     "thread (%s): refused",
			     what, w.loop);
	else
		devres__warn(&dev->dev, func,
			     "called inside the device's %s of its vectors, "
			     "which it would wait for: refused",
			     what);
	return false;
}

static void vec_begin(struct pci_dev *dev, int busy)
{
	dev->p->vec_busy = busy;
	dev->p->vec_thread = pthread_self();
	devres__wait_join(&dev->p->vec_member, vec_set(dev));
}

static void vec_end(struct pci_dev *dev)
{
	pthread_mutex_lock(&dev->p->lock);
	dev->p->vec_busy = VEC_IDLE;
	devres__wait_leave(&dev->p->vec_member);
	pthread_cond_broadcast(&dev->p->vec_idle);
	pthread_mutex_unlock(&dev->p->lock);
}

int pci_alloc_irq_vectors(struct pci_dev *dev, unsigned int min_vecs,
			  unsigned int max_vecs, unsigned int flags)
{
	unsigned int busy;
	bool racing;
	int ret;

	if (!pci__dev_ok(dev, __func__))
		return -EINVAL;
	if (!min_vecs || min_vecs > max_vecs || !(flags & PCI_IRQ_ALL_TYPES))
		return -EINVAL;
	/*
	 * A backend's vectors are a node of the device, recorded once they
	 * are made: from a match or for-each callback of the device (or a
	 * signal handler in its lock) that record would be refused, leaving
	 * lines on no device. Refused before the backend runs.
	 */
	if (pci__bk(dev, alloc_irq_vectors) &&
	    devres__dev_locked_here(&dev->dev, __func__))
		return -EINVAL;
	/*
	 * Allocated already, not freed, or being allocated by another
	 * thread: the kernel's WARNs (WARN_ON_ONCE(dev->msix_enabled), and
	 * for MSI). The backend is not asked: two allocations in it at once
	 * would each set the device's interrupts in the kernel.
	 */
	pthread_mutex_lock(&dev->p->lock);
	if (!vec_wait(dev, true, __func__))
		return -EINVAL;
	busy = dev->p->nvec;
	racing = dev->p->vec_busy == VEC_ALLOCATING;
	if (!busy && !racing)
		vec_begin(dev, VEC_ALLOCATING);
	pthread_mutex_unlock(&dev->p->lock);
	if (busy || racing) {
		if (busy)
			devres__warn(&dev->dev, __func__,
				     "%u vectors allocated already: "
				     "pci_free_irq_vectors() them first; "
				     "-EINVAL",
				     busy);
		else
			devres__warn(&dev->dev, __func__,
				     "vectors being allocated by another "
				     "call: -EINVAL");
		return -EINVAL;
	}
	ret = alloc_vectors(dev, min_vecs, max_vecs, flags);
	vec_end(dev);
	return ret;
}

/*
 * The first vector whose line still has a handler, or -1. The kernel's
 * rule is free_irq() first: vectors freed under a handler would leave it
 * on a line no longer the device's, and the line could not go.
 */
static int vector_in_use(struct pci_dev *dev, int *ret_irq)
{
	for (unsigned int i = 0;; i++) {
		int irq = 0;

		/* The line's lock is not taken under the device's. */
		pthread_mutex_lock(&dev->p->lock);
		if (i < dev->p->nvec)
			irq = dev->p->irqs[i];
		pthread_mutex_unlock(&dev->p->lock);
		if (!irq)
			return -1;
		if (irq__line_handlers(irq)) {
			*ret_irq = irq;
			return (int)i;
		}
	}
}

/*
 * The library's own releases of a device's vectors (the unbind's reset,
 * a backend's vector node): as pci_free_irq_vectors(), they wait for an
 * allocation or a free another thread has in the backend, which else
 * recorded its vectors on the device after the reset (an unbound device
 * with vectors, and its next binding refused its allocation), and hold
 * the others off while they run. With the device locked; true when the
 * caller is to vec_end(); false inside this thread's own allocation or
 * free (a backend's vector node it releases), which is not waited for,
 * and when the call in the backend waits for this thread (the wait on
 * the record, vec_sleep()): a release cannot refuse, and goes on without
 * waiting, the loop in *@ret_loop for the caller's WARN, made unlocked.
 */
static bool
vec_quiesce(struct pci_dev *dev, const char *func,
	    char (*ret_loop)[sizeof(((struct devres__wait *)0)->loop)])
{
	struct devres__wait w;

	(*ret_loop)[0] = 0;
	if (vec_sleep(dev, in_backend, &w, func)) {
		memcpy(*ret_loop, w.loop, sizeof(*ret_loop));
		return false;
	}
	if (dev->p->vec_busy != VEC_IDLE)
		return false;
	vec_begin(dev, VEC_FREEING);
	return true;
}

/* A release that went on without waiting for the call in the backend. */
static void vec_warn_loop(struct pci_dev *dev, const char *func,
			  const char *loop)
{
	if (loop[0])
		devres__warn(&dev->dev, func,
			     "a call in the backend on its vectors waits for "
			     "this thread (%s): reset without waiting for it",
			     loop);
}

static void irq_reset_locked(struct pci_dev *pdev)
{
	pdev->p->nvec = 0;
	pdev->msi_enabled = false;
	pdev->msix_enabled = false;
}

void pci__free_irq_vectors(struct pci_dev *dev)
{
	char loop[sizeof(((struct devres__wait *)0)->loop)];
	bool own;

	pthread_mutex_lock(&dev->p->lock);
	own = vec_quiesce(dev, "pci_free_irq_vectors", &loop);
	irq_reset_locked(dev);
	pthread_mutex_unlock(&dev->p->lock);
	vec_warn_loop(dev, "pci_free_irq_vectors", loop);
	if (pci__bk(dev, free_irq_vectors))
		pci__bk_free_irq_vectors(dev);
	if (own)
		vec_end(dev);
}

void pci_free_irq_vectors(struct pci_dev *dev)
{
	int vec, irq = 0;

	if (!pci__dev_ok(dev, __func__))
		return;
	pthread_mutex_lock(&dev->p->lock);
	if (!vec_wait(dev, false, __func__))
		return;
	vec_begin(dev, VEC_FREEING);
	pthread_mutex_unlock(&dev->p->lock);
	vec = vector_in_use(dev, &irq);
	if (vec >= 0) {
		vec_end(dev);
		devres__warn(&dev->dev, __func__,
			     "vector %d (irq %d) still has a handler: "
			     "free_irq() it first; vectors not freed",
			     vec, irq);
		return;
	}
	pci__free_irq_vectors(dev);
	vec_end(dev);
}

int pci_irq_vector(struct pci_dev *dev, unsigned int nr)
{
	int ret = -EINVAL;

	if (!pci__dev_ok(dev, __func__))
		return -EINVAL;
	pthread_mutex_lock(&dev->p->lock);
	if (nr < (dev->p->nvec ? dev->p->nvec : (dev->p->nirqs ? 1 : 0)))
		ret = dev->p->irqs[nr];
	pthread_mutex_unlock(&dev->p->lock);
	return ret;
}

void pci__irq_reset(struct pci_dev *pdev)
{
	char loop[sizeof(((struct devres__wait *)0)->loop)];
	bool own;

	pthread_mutex_lock(&pdev->p->lock);
	own = vec_quiesce(pdev, "pci_free_irq_vectors", &loop);
	irq_reset_locked(pdev);
	pthread_mutex_unlock(&pdev->p->lock);
	vec_warn_loop(pdev, "pci_free_irq_vectors", loop);
	if (own)
		vec_end(pdev);
}
