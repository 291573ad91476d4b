// SPDX-License-Identifier: MIT
/*
 * The PCI bus type: id-table matching, probe with the matching entry,
 * driver registration, and enable counting through the `enable` file.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "pci.h"

static bool match_one(const struct pci_device_id *id, const struct pci_dev *dev)
{
	return (id->vendor == PCI_ANY_ID || id->vendor == dev->vendor) &&
	       (id->device == PCI_ANY_ID || id->device == dev->device) &&
	       (id->subvendor == PCI_ANY_ID ||
		id->subvendor == dev->subsystem_vendor) &&
	       (id->subdevice == PCI_ANY_ID ||
		id->subdevice == dev->subsystem_device) &&
	       !((id->DEVRES_PCI_CLASS ^ dev->DEVRES_PCI_CLASS) &
		 id->class_mask);
}

const struct pci_device_id *pci_match_id(const struct pci_device_id *ids,
					 struct pci_dev *dev)
{
	/* No table matches nothing, as the kernel's. */
	if (devres__opt_bad(NULL, ids, __func__, "id table") ||
	    !pci__dev_ok(dev, __func__) || !ids)
		return NULL;
	for (; ids->vendor || ids->subvendor || ids->class_mask; ids++)
		if (match_one(ids, dev))
			return ids;
	return NULL;
}

static int pci_bus_match(struct device *dev, const struct device_driver *drv)
{
	const struct pci_driver *pdrv =
		container_of(drv, const struct pci_driver, driver);

	return pci_match_id(pdrv->id_table, to_pci_dev(dev)) != NULL;
}

/* Before the binding's resources go: a backend's device stops mastering. */
static void quiesce(struct pci_dev *pdev)
{
	if (pci__bk(pdev, quiesce))
		pci__bk_quiesce(pdev);
}

/*
 * After a failed probe or a remove, before the binding's resources go:
 * the device stops mastering; vectors are per binding, as MSI is
 * disabled at unbind.
 */
static void unbound(void *arg)
{
	struct pci_dev *pdev = arg;

	quiesce(pdev);
	pci__irq_reset(pdev);
}

static int pci_bus_probe(struct device *dev)
{
	struct pci_driver *drv = to_pci_driver(dev->driver);
	struct pci_dev *pdev = to_pci_dev(dev);
	const struct pci_device_id *id;
	int ret;

	/* device_driver_attach() skips match: a driver may not fit. */
	id = pci_match_id(drv->id_table, pdev);
	if (!id)
		return -ENODEV;
	/* The ids matched are the scan's: the device must still show them. */
	ret = pci__check_ids(pdev);
	if (ret)
		return ret;
	ret = 0;
	/* A probe that ends the thread failed (the driver core says so). */
	pthread_cleanup_push(unbound, pdev);
	if (drv->probe)
		ret = drv->probe(pdev, id);
	pthread_cleanup_pop(0);
	if (ret)
		unbound(pdev);
	return ret;
}

static void pci_bus_remove(struct device *dev)
{
	struct pci_driver *drv = to_pci_driver(dev->driver);

	/* Also when the remove ends the thread: taken as returned. */
	pthread_cleanup_push(unbound, to_pci_dev(dev));
	if (drv->remove)
		drv->remove(to_pci_dev(dev));
	pthread_cleanup_pop(1);
}

const struct bus_type pci__bus_type = {
	.name = "pci",
	.match = pci_bus_match,
	.probe = pci_bus_probe,
	.remove = pci_bus_remove,
};

/* Registered at first use; retried if that failed. */
static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;
static bool bus_registered;

/* Held across fork(): the child finds it free (docs/fork.md). */
__attribute__((constructor)) static void bus_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_PCI_BUS, &bus_lock);
}

int pci__bus_ready(void)
{
	int ret = 0;

	pthread_mutex_lock(&bus_lock);
	if (!bus_registered) {
		ret = devres__bus_register_deleted(&pci__bus_type,
						   pci__deleted);
		bus_registered = !ret;
	}
	pthread_mutex_unlock(&bus_lock);
	return ret;
}

int pci_register_driver(struct pci_driver *drv)
{
	int ret;

	if (devres__arg_bad(NULL, drv, __func__, "driver") ||
	    devres__opt_bad(NULL, drv->name, __func__, "name"))
		return -EINVAL;
	ret = pci__bus_ready();
	if (ret)
		return ret;
	devres__driver_fill(&drv->driver, &pci__bus_type, drv->name);
	return driver_register(&drv->driver);
}

void pci_unregister_driver(struct pci_driver *drv)
{
	if (devres__arg_bad(NULL, drv, __func__, "driver"))
		return;
	driver_unregister(&drv->driver);
}

/*
 * The first enable: through a backend, or by writing "1" to `enable`. The
 * sysfs files stay open until the last disable, which writes "0" and
 * clears bus mastering through them: a release must not fail for want of
 * an fd, leaving a device enabled and mastering that the library calls
 * disabled. They are the files checked now; if the tree changes before
 * the disable, it goes to the device that was enabled, not to whatever
 * the path names then. p->lock held.
 */
static int enable_on(struct pci_dev *dev)
{
	int fd, cfd, ret;
	ssize_t n;

	if (pci__bk(dev, enable))
		return pci__bk_enable(dev, true);
	if (pci__readonly())
		return -EROFS;
	fd = pci__open(dev, "enable", O_WRONLY);
	if (fd < 0)
		return fd;
	/* Without it, clearing mastering at the disable opens config then. */
	cfd = pci__open(dev, "config", O_RDWR);
	if (cfd < 0 && pci__out_of_resources(cfd)) {
		pci__close(fd);
		return cfd;
	}
	n = pci__pwrite(fd, "1", 1, 0);
	ret = n == 1 ? 0 : (n < 0 ? -errno : -EIO);
	if (ret) {
		pci__close(fd);
		if (cfd >= 0)
			pci__close(cfd);
		return ret;
	}
	dev->p->enable_fd = fd;
	dev->p->config_fd = cfd;
	return 0;
}

/*
 * Sets or clears PCI_COMMAND_MASTER through the config file kept from the
 * enable to the disable (opened here if the enable could not): what was
 * set through it is cleared through it. p->lock held.
 */
bool pci__master_kept(struct pci_dev *dev, bool on)
{
	uint8_t cmd, want;

	if (dev->p->config_fd < 0) {
		int fd = pci__open(dev, "config", O_RDWR);

		if (fd < 0)
			return false;
		dev->p->config_fd = fd;
	}
	if (pci__pread(dev->p->config_fd, &cmd, 1, PCI_COMMAND) != 1)
		return false;
	want = on ? (uint8_t)(cmd | PCI_COMMAND_MASTER)
		  : (uint8_t)(cmd & ~PCI_COMMAND_MASTER);
	if (want != cmd &&
	    pci__pwrite(dev->p->config_fd, &want, 1, PCI_COMMAND) != 1)
		return false;
	dev->is_busmaster = on;
	return true;
}

bool pci__kept_check(struct pci_dev *dev)
{
	if (dev->p->enable_fd >= 0 &&
	    !devres__own_fd_check(dev->p->enable_fd)) {
		pci__close(dev->p->enable_fd);
		dev->p->enable_fd = PCI_ENABLE_LOST;
	}
	if (dev->p->config_fd >= 0 &&
	    !devres__own_fd_check(dev->p->config_fd)) {
		pci__close(dev->p->config_fd);
		dev->p->config_fd = -1;
	}
	return dev->p->enable_fd >= 0 || dev->p->enable_fd == PCI_ENABLE_LOST;
}

/* "0" into `enable`: through the kept file, or one opened for it. */
static void enable_write_off(struct pci_dev *dev)
{
	int fd = dev->p->enable_fd;

	if (fd < 0)
		fd = pci__open(dev, "enable", O_WRONLY);
	if (fd >= 0)
		(void)!pci__pwrite(fd, "0", 1, 0);
	if (fd >= 0 && fd != dev->p->enable_fd)
		pci__close(fd);
}

/*
 * The last disable; best effort, the device counts as disabled whatever
 * the writes say. Whether mastering is left to clear the usual way.
 */
static bool enable_off(struct pci_dev *dev)
{
	bool kept;

	if (pci__bk(dev, enable))
		return pci__bk_enable(dev, false) != -EROFS &&
		       dev->is_busmaster;
	kept = pci__kept_check(dev);
	/* Read-only mode writes nothing, not even a disable. */
	if (!pci__readonly() && kept) {
		if (dev->is_busmaster && dev->p->config_fd >= 0)
			(void)pci__master_kept(dev, false);
		enable_write_off(dev);
	}
	pci__enable_files_close(dev);
	return dev->is_busmaster && !pci__readonly();
}

void pci__enable_files_close(struct pci_dev *dev)
{
	if (dev->p->enable_fd >= 0)
		pci__close(dev->p->enable_fd);
	if (dev->p->config_fd >= 0)
		pci__close(dev->p->config_fd);
	dev->p->enable_fd = dev->p->config_fd = -1;
}

static bool pdev_ok(const struct pci_dev *dev, const char *func)
{
	return pci__dev_ok(dev, func);
}

/*
 * Enables outstanding at once: far past any driver's nesting, and far
 * below the int it is counted in, which a leak of enables in a loop would
 * otherwise take past INT_MAX.
 */
#define PCI_ENABLE_MAX (1 << 20)

int pci__enable(struct pci_dev *dev, void *managed)
{
	bool master = false;
	int ret = 0;

	if (pci__readonly())
		return -EROFS;
	pthread_mutex_lock(&dev->p->lock);
	if (dev->p->enable_cnt >= PCI_ENABLE_MAX) {
		pthread_mutex_unlock(&dev->p->lock);
		devres__warn(&dev->dev, "pci_enable_device",
			     "enabled %d times without a disable: refused",
			     PCI_ENABLE_MAX);
		return -EBUSY;
	}
	if (dev->p->enable_cnt == 0) {
		ret = pci__check_ids(dev);
		if (!ret)
			ret = enable_on(dev);
	}
	/*
	 * Managed from the moment it counts: a pci_disable_device() on
	 * another thread finds the enable and its node together (and takes
	 * both, with its WARN), or neither. Refused by the device (a
	 * callback of it up the stack): not counted, the first undone.
	 */
	if (!ret && managed &&
	    !devres__record(&dev->dev, managed, "pcim_enable_device")) {
		if (dev->p->enable_cnt == 0)
			master = enable_off(dev);
		ret = -ENODEV;
	} else if (!ret) {
		dev->p->enable_cnt++;
		if (managed)
			dev->p->managed_enables++;
	}
	pthread_mutex_unlock(&dev->p->lock);
	if (master)
		pci_clear_master(dev);
	return ret;
}

int pci_enable_device(struct pci_dev *dev)
{
	if (!pdev_ok(dev, __func__))
		return -EINVAL;
	return pci__enable(dev, NULL);
}

void pci__disable(struct pci_dev *dev, bool managed)
{
	int saved = errno;
	bool master = false, unbalanced = false, hand = false;

	if (!pdev_ok(dev,
		     managed ? "pcim_enable_release" : "pci_disable_device"))
		return;
	pthread_mutex_lock(&dev->p->lock);
	if (managed) {
		/* Its enable was disabled by hand: nothing left to undo. */
		if (dev->p->managed_enables == 0) {
			pthread_mutex_unlock(&dev->p->lock);
			return;
		}
		dev->p->managed_enables--;
	} else if (dev->p->enable_cnt &&
		   dev->p->enable_cnt <= dev->p->managed_enables) {
		/*
		 * Every enable left is pcim_enable_device()'s: this one
		 * undoes a managed enable, whose node goes now (the device
		 * would disable it once more at release).
		 */
		dev->p->managed_enables--;
		pci__drop_managed_enable(dev);
		hand = true;
	}
	if (dev->p->enable_cnt == 0) {
		unbalanced = true;
	} else if (--dev->p->enable_cnt == 0) {
		master = enable_off(dev);
	}
	pthread_mutex_unlock(&dev->p->lock);
	if (hand)
		devres__warn(&dev->dev, "pci_disable_device",
			     "an enable acquired with pcim_enable_device(): "
			     "use nothing, the device's release disables it; "
			     "released now, and taken off the device");
	if (unbalanced)
		devres__warn(&dev->dev, "pci_disable_device",
			     "device is not enabled");
	else if (master)
		pci_clear_master(dev);
	errno = saved;
}

/* Whether a pci_disable_device() now would undo a managed enable. */
static bool drops_managed(struct pci_dev *dev)
{
	bool ret;

	pthread_mutex_lock(&dev->p->lock);
	ret = dev->p->enable_cnt &&
	      dev->p->enable_cnt <= dev->p->managed_enables;
	pthread_mutex_unlock(&dev->p->lock);
	return ret;
}

void pci_disable_device(struct pci_dev *dev)
{
	/*
	 * Undoing a managed enable takes its node off the device's list:
	 * from a match or for-each callback of the device, the list is this
	 * thread's. Refused then, the device left enabled.
	 */
	if (!pdev_ok(dev, __func__) ||
	    (drops_managed(dev) &&
	     devres__dev_locked_here(&dev->dev, __func__)))
		return;
	pci__disable(dev, false);
}

bool pci_is_enabled(struct pci_dev *dev)
{
	bool on;

	if (!pdev_ok(dev, __func__))
		return false;
	pthread_mutex_lock(&dev->p->lock);
	on = dev->p->enable_cnt > 0;
	pthread_mutex_unlock(&dev->p->lock);
	return on;
}
