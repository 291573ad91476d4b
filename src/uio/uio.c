// SPDX-License-Identifier: MIT
/*
 * The UIO backend of the PCI bus: a device the host bound to
 * uio_pci_generic is taken at its scan. Config space and BARs stay with
 * the sysfs files (the backend leaves those operations to the bus); what
 * UIO adds is the interrupt, read from /dev/uioN, and the decision on DMA,
 * which UIO cannot confine: refused, or physical addresses when the
 * program said it accepts them.
 *
 * uio_pci_generic has no irqcontrol: a write to /dev/uioN fails. Its
 * handler masks INTx with the command register's INTx disable bit, and
 * the owner of the device unmasks it by clearing that bit in config space.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <devres/dma.h>
#include <devres/irq.h>
#include <devres/uio.h>
#include "pci/backend.h"

struct uio_dev {
	struct pci_dev *pdev;
	int fd; /* /dev/uioN: read to wait for an interrupt */
	int num;
	/*
	 * The unmask after the handlers runs on the dispatcher's thread and
	 * may come late: once the device is quiesced at unbind it must not
	 * undo the mask. Both take intx_lock; quiet says the device is
	 * quiesced, until the next binding allocates its vector.
	 */
	pthread_mutex_t intx_lock;
	bool quiet;
};

/* A line number in a node: the vector of a binding, released with it. */
struct uio_vector {
	int line;
};

static pthread_mutex_t conf_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under conf_lock: read by attach, changed only while no device is taken. */
static char *dev_dir;
static unsigned int conf_flags;
static unsigned int taken;

/*
 * Held across fork(), so that a child forked while another thread
 * configures the backend or attaches a device finds it free. Attach sets
 * the device's DMA ops under it (the DMA states' lock): ranked before
 * those. The parent's devices stay counted in the child, which cannot
 * put them (docs/fork.md).
 */
__attribute__((constructor)) static void conf_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_UIO, &conf_lock);
}

static int no_dma_supported(struct device *dev, uint64_t mask)
{
	(void)dev;
	(void)mask;
	return 0;
}

static int no_dma_map(struct device *dev, void *cpu, size_t size, size_t align,
		      uint64_t mask, dma_addr_t *ret_handle)
{
	(void)dev;
	(void)cpu;
	(void)size;
	(void)align;
	(void)mask;
	(void)ret_handle;
	return -EPERM;
}

static void no_dma_unmap(struct device *dev, dma_addr_t handle, void *cpu,
			 size_t size)
{
	(void)dev;
	(void)handle;
	(void)cpu;
	(void)size;
}

/* Without an IOMMU's confinement nothing is mapped unless asked for. */
static const struct devres_dma_ops no_dma_ops = {
	.name = "uio-no-dma",
	.dma_supported = no_dma_supported,
	.map = no_dma_map,
	.unmap = no_dma_unmap,
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "uioN", N in decimal as the kernel writes it: no sign, no leading 0. */
static int uio_num(const char *name)
{
	long v = 0;

	if (strncmp(name, "uio", 3) != 0 || !name[3] ||
	    (name[3] == '0' && name[4]))
		return -1;
	for (const char *s = name + 3; *s; s++) {
		if (*s < '0' || *s > '9' || v >= 1 << 20)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v < 1 << 20 ? (int)v : -1;
}

/*
 * "MAJ:MIN" and one newline, as the kernel's dev attribute prints a device
 * number: decimal, a major of at most 12 bits, a minor of at most 20. Any
 * other byte (a sign, a space, a NUL, a second line) is -EINVAL.
 */
static int parse_devnum(const char *buf, size_t len, dev_t *ret)
{
	unsigned long part[2] = { 0, 0 };
	const unsigned long max[2] = { 0xfff, 0xfffff };
	size_t i = 0;

	if (len && buf[len - 1] == '\n')
		len--;
	for (int k = 0; k < 2; k++) {
		size_t digits = 0;

		if (k && (i == len || buf[i++] != ':'))
			return -EINVAL;
		for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
			part[k] = part[k] * 10 + (unsigned long)(buf[i] - '0');
			if (part[k] > max[k])
				return -EINVAL;
			digits++;
		}
		if (!digits)
			return -EINVAL;
	}
	if (i != len)
		return -EINVAL;
	*ret = makedev(part[0], part[1]);
	return 0;
}

/*
 * The N of the device's uio/uioN, and the device number sysfs gives it:
 * read in the device's own directory (the one its scan read), with no
 * symlink followed on the way and `dev` a regular file, bounded. -ENODEV
 * when there is no uioN; -EINVAL when there are two or `dev` is not a
 * device number; -ELOOP for a symlink on the way.
 */
static int find_uio(struct pci_dev *pdev, int *ret_num, dev_t *ret_rdev)
{
	char path[32], buf[32];
	struct dirent *de;
	int fd, cancel, num = -1;
	int err = 0;
	ssize_t n;
	DIR *dir;

	fd = pci__open_sub(pdev, "uio", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd == -ENOENT ? -ENODEV : fd;
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		pci__close(fd);
		return err;
	}
	while ((de = readdir(dir))) {
		int v = uio_num(de->d_name);

		if (v < 0)
			continue;
		if (num >= 0) {
			err = -EINVAL; /* a device has one uio node */
			break;
		}
		num = v;
	}
	devres__own_dir_close(dir);
	devres__ledger_add(DL_FDS, -1);
	if (err)
		return err;
	if (num < 0)
		return -ENODEV;
	snprintf(path, sizeof(path), "uio/uio%d/dev", num);
	fd = pci__open_sub(pdev, path, O_RDONLY);
	if (fd < 0)
		return fd == -ENOENT ? -ENODEV : fd;
	/* A cancellation point: none in a call of the library. */
	cancel = devres__cancel_off();
	n = pread(fd, buf, sizeof(buf), 0);
	err = n < 0 ? -errno : 0;
	devres__cancel_restore(cancel);
	pci__close(fd);
	if (err)
		return err;
	/* A full buffer: more than a device number. */
	if ((size_t)n == sizeof(buf) || parse_devnum(buf, (size_t)n, ret_rdev))
		return -EINVAL;
	*ret_num = num;
	return 0;
}

/* @dir/uioN, which must be the character device sysfs names. */
static int open_node(const char *dir, int num, dev_t rdev)
{
	char path[4096];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/uio%d", dir, num) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	devres__own_fd_opened(fd, DEVRES_OWN_UIO, path + strlen(dir) + 1);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != rdev) {
		devres__own_fd_close(fd);
		return -ESTALE;
	}
	devres__ledger_add(DL_FDS, 1);
	return fd;
}

static void ud_free(struct uio_dev *ud)
{
	if (ud->fd >= 0) {
		devres__own_fd_close(ud->fd);
		devres__ledger_add(DL_FDS, -1);
	}
	pthread_mutex_destroy(&ud->intx_lock);
	free(ud);
}

static int uio_attach(struct pci_dev *pdev, void **ret_data)
{
	char link[256];
	struct uio_dev *ud;
	dev_t rdev = 0;
	int ret, num = -1;

	ret = pci__readlink(pdev, "driver", link, sizeof(link));
	/* Out of fds is not "another driver's": the scan says so. */
	if (pci__out_of_resources(ret))
		return ret;
	if (ret || strcmp(base_name(link), "uio_pci_generic") != 0)
		return -ENODEV;
	ret = find_uio(pdev, &num, &rdev);
	if (ret)
		return ret;
	if (devres__should_fail() || !(ud = calloc(1, sizeof(*ud))))
		return -ENOMEM;
	ud->pdev = pdev;
	ud->num = num;
	pthread_mutex_init(&ud->intx_lock, NULL);
	pthread_mutex_lock(&conf_lock);
	ud->fd = open_node(dev_dir ? dev_dir : "/dev", num, rdev);
	if (ud->fd >= 0) {
		taken++;
		set_dma_ops(&pdev->dev, conf_flags & PCI_UIO_DMA_PHYS
						? devres_dma_pagemap_ops()
						: &no_dma_ops);
	}
	pthread_mutex_unlock(&conf_lock);
	if (ud->fd < 0) {
		ret = ud->fd;
		ud_free(ud);
		return ret;
	}
	*ret_data = ud;
	return 0;
}

/* The device is being freed: its ops pointer goes with it. */
static void uio_detach(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	ud_free(data);
	pthread_mutex_lock(&conf_lock);
	taken--;
	pthread_mutex_unlock(&conf_lock);
}

/* uio_pci_generic enabled the device when it bound it; its sysfs `enable`
 * refuses a write while a driver is bound. */
static int uio_enable(struct pci_dev *pdev, void *data, bool on)
{
	(void)pdev;
	(void)data;
	(void)on;
	return 0;
}

/* INTx on or masked, by the command register's INTx disable bit. */
static void intx(struct pci_dev *pdev, bool on)
{
	uint16_t cmd, want;

	if (pci_read_config_word(pdev, PCI_COMMAND, &cmd))
		return;
	want = on ? cmd & ~PCI_COMMAND_INTX_DISABLE
		  : cmd | PCI_COMMAND_INTX_DISABLE;
	if (want != cmd)
		(void)pci_write_config_word(pdev, PCI_COMMAND, want);
}

/* The line's unmask, after the handlers: the kernel masked INTx. */
static void intx_unmask(void *ctx)
{
	struct uio_dev *ud = ctx;
	int saved = errno;

	pthread_mutex_lock(&ud->intx_lock);
	if (!ud->quiet)
		intx(ud->pdev, true);
	pthread_mutex_unlock(&ud->intx_lock);
	errno = saved;
}

static void vector_release(struct device *dev, void *res)
{
	struct uio_vector *v = res;
	struct pci_dev *pdev = to_pci_dev(dev);
	int saved = errno;

	/* INTx was masked by the quiesce, before the binding's resources. */
	pci__free_irq_vectors(pdev);
	(void)pci_dev_set_irq_lines(pdev, NULL, 0);
	(void)irq__line_destroy_claimed(v->line, v);
	errno = saved;
}

static int uio_alloc_irq_vectors(struct pci_dev *pdev, void *data,
				 unsigned int min_vecs, unsigned int max_vecs,
				 unsigned int flags, unsigned int *ret_type)
{
	struct uio_dev *ud = data;
	struct uio_vector *v;
	char name[48];
	int ret;

	(void)max_vecs;
	/* One line, INTx: UIO has no MSI. */
	if (!(flags & PCI_IRQ_INTX) || min_vecs > 1)
		return -ENOSPC;
	/* A vector a driver freed by hand goes before a new one is made. */
	if (devres_find(&pdev->dev, vector_release, NULL, NULL)) {
		if (pci_dev_set_irq_lines(pdev, NULL, 0))
			return -EINVAL; /* still allocated */
		devres_release(&pdev->dev, vector_release, NULL, NULL);
	}
	v = devres_alloc(vector_release, sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%s-uio%d", pci_name(pdev), ud->num);
	pthread_mutex_lock(&ud->intx_lock);
	ud->quiet = false;
	pthread_mutex_unlock(&ud->intx_lock);
	v->line = irq_line_attach_masked(ud->fd, intx_unmask, ud, name);
	if (v->line < 0) {
		ret = v->line;
		devres_free(v);
		return ret;
	}
	/* The binding's: irq_line_destroy() of it by hand is refused. */
	(void)irq__line_claim(v->line, v, pci_name(pdev));
	/*
	 * INTx stays as it is until a handler is requested: the line then
	 * unmasks it, in case a previous owner died between an interrupt
	 * and its unmask.
	 */
	ret = pci_dev_set_irq_lines(pdev, &v->line, 1);
	if (ret) {
		(void)irq__line_destroy_claimed(v->line, v);
		devres_free(v);
		return ret;
	}
	/* Refused (a callback of the device up the stack): undone. */
	if (!devres__record(&pdev->dev, v, "pci_alloc_irq_vectors")) {
		(void)pci_dev_set_irq_lines(pdev, NULL, 0);
		(void)irq__line_destroy_claimed(v->line, v);
		devres_free(v);
		return -ENODEV;
	}
	*ret_type = PCI_IRQ_INTX;
	return 1;
}

/* Before the binding's memory goes: no mastering, no interrupt. */
static void uio_quiesce(struct pci_dev *pdev, void *data)
{
	struct uio_dev *ud = data;

	pthread_mutex_lock(&ud->intx_lock);
	ud->quiet = true;
	pci_clear_master(pdev);
	intx(pdev, false);
	pthread_mutex_unlock(&ud->intx_lock);
}

static const struct pci__backend uio_backend = {
	.name = "uio",
	.attach = uio_attach,
	.detach = uio_detach,
	.enable = uio_enable,
	.alloc_irq_vectors = uio_alloc_irq_vectors,
	.quiesce = uio_quiesce,
};

int pci_uio_enable(const char *dir, unsigned int flags)
{
	char *copy = NULL;
	int ret = 0;

	if (devres__opt_bad(NULL, dir, __func__, "directory"))
		return -EINVAL;
	if ((dir && !*dir) || (flags & ~PCI_UIO_DMA_PHYS))
		return -EINVAL;
	if (dir && !(copy = strdup(dir)))
		return -ENOMEM;
	pthread_mutex_lock(&conf_lock);
	if (taken &&
	    (flags != conf_flags ||
	     strcmp(dir ? dir : "/dev", dev_dir ? dev_dir : "/dev") != 0)) {
		ret = -EBUSY;
	} else {
		free(dev_dir);
		dev_dir = copy;
		copy = NULL;
		conf_flags = flags;
	}
	pthread_mutex_unlock(&conf_lock);
	free(copy);
	if (!ret)
		ret = pci__backend_add(&uio_backend);
	return ret;
}

bool pci_dev_is_uio(struct pci_dev *pdev)
{
	/* Checked as pci_dev_is_vfio() checks it: the device's WARN. */
	if (!pdev || devres__arg_bad(NULL, pdev, __func__, "device") ||
	    !devres__dev_ok(&pdev->dev, __func__))
		return false;
	return pci__backend_of(pdev) == &uio_backend;
}
