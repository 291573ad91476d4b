// SPDX-License-Identifier: MIT
/*
 * Interrupt vectors of a VFIO device: one eventfd per vector, handed to
 * the kernel with VFIO_DEVICE_SET_IRQS and made an interrupt line, so
 * that pci_irq_vector() and devm_request_irq() work as on any device.
 * The vectors are managed (pcim): they go with the binding, after the
 * handlers requested on them, as the kernel frees MSI vectors under
 * pcim_enable_device().
 */
#include <errno.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <devres/irq.h>
#include "vfio.h"

struct vfio_vectors {
	struct vfio_dev *vd;
	unsigned int n;
	int lines[];
};

/*
 * Points @index's vectors [0, @n) at @fds for @action, or (@n 0) disables
 * them all.
 */
static int set_irqs_action(struct vfio_dev *vd, int index, uint32_t action,
			   const int *fds, unsigned int n)
{
	size_t len = sizeof(struct vfio_irq_set) + n * sizeof(int32_t);
	struct vfio_irq_set none = { 0 }, *set = &none;
	int ret = 0;

	/*
	 * Disabling (@n 0) is a release: it needs no memory, so that it
	 * cannot fail for want of it and leave the vectors firing.
	 */
	if (n) {
		set = devres__should_fail() ? NULL : calloc(1, len);
		if (!set)
			return -ENOMEM;
	}
	set->argsz = (uint32_t)len;
	set->flags = action |
		     (n ? VFIO_IRQ_SET_DATA_EVENTFD : VFIO_IRQ_SET_DATA_NONE);
	set->index = (uint32_t)index;
	set->start = 0;
	set->count = n;
	if (n)
		memcpy(set->data, fds, n * sizeof(int32_t));
	if (vfio__ioctl(vd->fd, VFIO_DEVICE_SET_IRQS, set))
		ret = -errno;
	if (set != &none)
		free(set);
	return ret;
}

static int set_irqs(struct vfio_dev *vd, int index, const int *fds,
		    unsigned int n)
{
	return set_irqs_action(vd, index, VFIO_IRQ_SET_ACTION_TRIGGER, fds, n);
}

static int new_eventfd(const struct vfio_vectors *v)
{
	int fd;

	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	devres__own_fd_opened(fd, DEVRES_OWN_VFIO_EVENTFD,
			      pci_name(v->vd->pdev));
	if (fd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	return fd;
}

static void close_eventfd(int fd)
{
	if (fd < 0)
		return;
	devres__own_fd_close(fd);
	devres__ledger_add(DL_FDS, -1);
}

void vfio__irq_disable(struct vfio_dev *vd)
{
	int saved = errno;

	pthread_mutex_lock(&vd->irq_lock);
	if (vd->irq_index >= 0)
		(void)set_irqs(vd, vd->irq_index, NULL, 0);
	vd->irq_index = -1;
	pthread_mutex_unlock(&vd->irq_lock);
	errno = saved;
}

/*
 * pci_free_irq_vectors(): the kernel's turns MSI or MSI-X off there and
 * then, and pci_irq_vector() no longer names the vectors; VFIO's kept
 * signalling their lines until the binding went. They are turned off in
 * the kernel now and the lines are no longer the device's; the lines
 * themselves, which a handler may still hold, go with the vectors' node
 * (at the next allocation or with the binding).
 */
void vfio__free_irq_vectors(struct pci_dev *pdev, void *data)
{
	vfio__irq_disable(data);
	(void)pci_dev_set_irq_lines(pdev, NULL, 0);
}

static void destroy_lines(struct vfio_vectors *v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		(void)irq__line_destroy_claimed(v->lines[i], v);
}

static void vectors_release(struct device *dev, void *res)
{
	struct vfio_vectors *v = res;
	struct pci_dev *pdev = to_pci_dev(dev);

	/*
	 * Turned off in the kernel by the bus's free, which calls
	 * vfio__free_irq_vectors() as a release (nothing written in
	 * read-only mode): not here, past the bus's door.
	 */
	pci__free_irq_vectors(pdev);
	(void)pci_dev_set_irq_lines(pdev, NULL, 0);
	destroy_lines(v, v->n);
}

/*
 * How many vectors of @index the device has: what VFIO says, but never
 * more than the kind can have (INTx one, MSI 32, MSI-X 2048, as the PCI
 * specification bounds them and the kernel's pci_alloc_irq_vectors()
 * gives at most). A count beyond that is not a device's: taken at the
 * bound, it cannot make more lines than pci_dev_set_irq_lines() takes,
 * nor more INTx vectors than the one pin.
 */
static unsigned int irq_count(struct vfio_dev *vd, int index)
{
	static const unsigned int most[] = {
		[VFIO_PCI_INTX_IRQ_INDEX] = 1,
		[VFIO_PCI_MSI_IRQ_INDEX] = 32,
		[VFIO_PCI_MSIX_IRQ_INDEX] = 2048,
	};
	struct vfio_irq_info info = { .argsz = sizeof(info),
				      .index = (uint32_t)index };

	if ((unsigned int)index >= vd->num_irqs ||
	    vfio__ioctl(vd->fd, VFIO_DEVICE_GET_IRQ_INFO, &info) ||
	    !(info.flags & VFIO_IRQ_INFO_EVENTFD))
		return 0;
	return info.count < most[index] ? info.count : most[index];
}

/* The first kind the caller accepts that gives at least @min vectors. */
static int pick(struct vfio_dev *vd, unsigned int min, unsigned int max,
		unsigned int flags, unsigned int *ret_n)
{
	static const struct {
		unsigned int flag;
		int index;
	} kinds[] = {
		{ PCI_IRQ_MSIX, VFIO_PCI_MSIX_IRQ_INDEX },
		{ PCI_IRQ_MSI, VFIO_PCI_MSI_IRQ_INDEX },
		{ PCI_IRQ_INTX, VFIO_PCI_INTX_IRQ_INDEX },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		unsigned int n;

		if (!(flags & kinds[i].flag))
			continue;
		n = irq_count(vd, kinds[i].index);
		if (n > max)
			n = max;
		if (n && n >= min) {
			*ret_n = n;
			return kinds[i].index;
		}
	}
	return -ENOSPC;
}

/*
 * One eventfd and one line per vector. INTx is level-triggered: VFIO
 * masks it at each interrupt, and its line unmasks it through a second
 * eventfd (*@ret_unmask) once the handlers have run.
 */
static int make_lines(struct vfio_vectors *v, int index, int *fds,
		      int *ret_unmask)
{
	static const char *const kind[] = { "intx", "msi", "msix" };
	char name[48];
	int ret;

	if (index == VFIO_PCI_INTX_IRQ_INDEX) {
		*ret_unmask = new_eventfd(v);
		if (*ret_unmask < 0)
			return *ret_unmask;
	}
	for (unsigned int i = 0; i < v->n; i++) {
		fds[i] = new_eventfd(v);
		if (fds[i] < 0)
			return fds[i];
		snprintf(name, sizeof(name), "%s-%s%u", pci_name(v->vd->pdev),
			 kind[index], i);
		ret = *ret_unmask >= 0
			      ? irq_line_attach_level(fds[i], *ret_unmask, name)
			      : irq_line_attach_fd(fds[i], name);
		if (ret < 0)
			return ret;
		v->lines[i] = ret;
		/* The binding's: irq_line_destroy() of it by hand is refused. */
		(void)irq__line_claim(ret, v, pci_name(v->vd->pdev));
	}
	return 0;
}

int vfio__alloc_irq_vectors(struct pci_dev *pdev, void *data,
			    unsigned int min_vecs, unsigned int max_vecs,
			    unsigned int flags, unsigned int *ret_type)
{
	struct vfio_dev *vd = data;
	struct vfio_vectors *v;
	unsigned int n = 0, made = 0;
	int index, ret, *fds, unmask = -1;

	/* Vectors a driver freed by hand go before new ones are made. */
	if (devres_find(&pdev->dev, vectors_release, NULL, NULL)) {
		if (pci_dev_set_irq_lines(pdev, NULL, 0))
			return -EINVAL; /* still allocated */
		devres_release(&pdev->dev, vectors_release, NULL, NULL);
	}
	index = pick(vd, min_vecs, max_vecs, flags, &n);
	if (index < 0)
		return index;
	v = devres_alloc(vectors_release, sizeof(*v) + n * sizeof(int),
			 GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	v->vd = vd;
	v->n = n;
	fds = devres__should_fail() ? NULL : calloc(n, sizeof(*fds));
	if (!fds) {
		devres_free(v);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++)
		fds[i] = -1;
	ret = make_lines(v, index, fds, &unmask);
	for (made = 0; made < n && v->lines[made] > 0; made++)
		;
	/*
	 * Set in the kernel and recorded at once: an unbind's quiesce on
	 * another thread turns off what it finds, before or after, never
	 * between.
	 */
	if (!ret) {
		pthread_mutex_lock(&vd->irq_lock);
		ret = devres__should_fail() ? -ENOMEM
					    : set_irqs(vd, index, fds, n);
		if (!ret && unmask >= 0) {
			ret = set_irqs_action(vd, index,
					      VFIO_IRQ_SET_ACTION_UNMASK,
					      &unmask, 1);
			if (ret)
				(void)set_irqs(vd, index, NULL, 0);
		}
		if (!ret)
			vd->irq_index = index;
		pthread_mutex_unlock(&vd->irq_lock);
	}
	if (!ret) {
		ret = pci_dev_set_irq_lines(pdev, v->lines, n);
		if (ret)
			vfio__irq_disable(vd);
	}
	/* The kernel holds its own reference: ours are not needed. */
	for (unsigned int i = 0; i < n; i++)
		close_eventfd(fds[i]);
	close_eventfd(unmask);
	free(fds);
	/* Refused (a callback of the device up the stack): undone. */
	if (!ret && !devres__record(&pdev->dev, v, "pci_alloc_irq_vectors")) {
		(void)pci_dev_set_irq_lines(pdev, NULL, 0);
		vfio__irq_disable(vd);
		ret = -ENODEV;
	}
	if (ret) {
		destroy_lines(v, made);
		devres_free(v);
		return ret;
	}
	*ret_type = index == VFIO_PCI_MSIX_IRQ_INDEX  ? PCI_IRQ_MSIX
		    : index == VFIO_PCI_MSI_IRQ_INDEX ? PCI_IRQ_MSI
						      : PCI_IRQ_INTX;
	return (int)n;
}
