/* SPDX-License-Identifier: MIT */
/*
 * What the files of src/pci share: the private part of a pci_dev, the
 * sysfs access helpers (probe.c), the parsers (parse.c) and the BAR
 * bookkeeping (bars.c). Only src/pci and the parsers' fuzzer include it.
 */
#ifndef DEVRES_PCI_INTERNAL_H
#define DEVRES_PCI_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/pci.h>
#include "base/subsys.h"
#include "backend.h"

/*
 * A pci_dev argument the PCI calls can use: a pointer an object can have,
 * an initialized device, and one the PCI bus made (it has its private
 * part), of this process (a device of the parent, in a child of fork(),
 * gets devres__dev_ok()'s WARN "belongs to process N" and no lock of it is
 * taken). Otherwise one WARN naming @func. Inline: on every call's path.
 */
static inline bool pci__dev_ok(const struct pci_dev *pdev, const char *func)
{
	if (devres__arg_bad(NULL, pdev, func, "device") ||
	    !devres__dev_ok(&pdev->dev, func))
		return false;
	if (likely(pdev->p))
		return true;
	devres__warn(&pdev->dev, func, "not a device of the PCI bus");
	return false;
}

/*
 * pci__dev_ok() for a pcim_* acquisition, which records its node only
 * once it holds the resource: refused first, where that record would be
 * (devres__dev_ok_to_acquire()), so that nothing is acquired.
 */
static inline bool pci__dev_ok_to_acquire(const struct pci_dev *pdev,
					  const char *func)
{
	return pci__dev_ok(pdev, func) &&
	       !devres__dev_locked_here(&pdev->dev, func);
}

/*
 * The same for a pcim_* call that changes the device's list without
 * acquiring (a pin, a managed release): from a match or for-each callback
 * of the device the list is this thread's, and the call would find
 * nothing there, or change it half (the BAR forgotten, its node kept).
 * Refused, with one WARN naming @func, before anything changes.
 */
static inline bool pci__dev_ok_to_change(const struct pci_dev *pdev,
					 const char *func)
{
	return pci__dev_ok_to_acquire(pdev, func);
}

/* "bus/pci/devices/" plus the longest address we accept, "ffffffff:ff:1f.7" */
#define PCI_NAME_MAX 16
#define PCI_DEVICES_DIR "bus/pci/devices"

/*
 * The files of a device whose identity the scan records: each use opens
 * the device's directory again, checks it is the one scanned, opens the
 * file in it without following a symlink and checks that too.
 */
enum pci_file {
	PCI_F_DIR,
	PCI_F_CONFIG,
	PCI_F_RESOURCE,
	PCI_F_ENABLE,
	PCI_F_RESET, /* written by pci_reset_function(): known like the rest */
	PCI_F_BAR0,  /* resource0 .. resource5 */
	PCI_F_NR = PCI_F_BAR0 + PCI_STD_NUM_BARS,
};

struct pci_file_id {
	dev_t dev;
	ino_t ino;
	off_t size; /* resourceN: what the scan saw */
	/* Birth time where the filesystem has one: an inode number reused. */
	long long btime_sec;
	unsigned int btime_nsec;
	bool present;
};

struct pci_dev_private {
	struct pci_dev *pdev;
	char name[PCI_NAME_MAX + 1];
	pthread_mutex_t lock;
	/* Under lock. */
	int enable_cnt;
	int managed_enables; /* of those, pcim_enable_device()'s unpinned */
	/*
	 * From the first enable to the last disable: `enable` and `config`,
	 * as checked at the enable, so that disabling (a release) needs no
	 * new fd; -1 otherwise, or when a backend enables the device;
	 * PCI_ENABLE_LOST (below) for `enable` let go by pci__kept_check().
	 */
	int enable_fd;
	int config_fd;
	int *irqs;
	unsigned int nirqs;
	unsigned int nvec;
	/*
	 * A pci_alloc_irq_vectors() or pci_free_irq_vectors() in progress
	 * (in its backend), on thread @vec_thread: the other waits on
	 * @vec_idle, as the kernel's take the device's MSI lock.
	 */
	enum {
		VEC_IDLE,
		VEC_ALLOCATING,
		VEC_FREEING
	} vec_busy;
	pthread_t vec_thread;
	/* @vec_thread's membership of the set vec_set() (base/waits.h). */
	struct devres__wait_member vec_member;
	pthread_cond_t vec_idle;
	/* Under the list lock of probe.c. */
	struct pci_dev_private *next;
	bool registered;
	/* A scan's removal (remove_device()) is taking it: that puts the
	 * scan's reference. */
	bool removing;
	/* Owned by the scan that registers or removes the device. */
	bool inserted[PCI_NUM_RESOURCES];
	/* Written by the scan before the device is listed; read-only after. */
	struct pci_file_id files[PCI_F_NR];
	/* The backend that took the device at its scan, and its data. */
	const struct pci__backend *backend;
	void *backend_data;
};

/* The backend's operation @op for @pdev, NULL when it has none. */
#define pci__bk(pdev, op) ((pdev)->p->backend ? (pdev)->p->backend->op : NULL)

/*
 * bkops.c: the backend's operations, each called only through its
 * pci__bk_*() below, which classes it (docs/pci.md, "Read-only"): a read
 * is made; a write is counted in flight and refused in read-only mode
 * (-EROFS, PCIBIOS_SET_FAILED for a config write); a release is counted
 * and not made in read-only mode; a detach is counted and always made.
 * Each is called only when pci__bk() says the backend has it.
 */
enum pci__bk_op {
	PCI_BK_ATTACH,
	PCI_BK_DETACH,
	PCI_BK_BAR_WINDOW,
	PCI_BK_CFG_READ,
	PCI_BK_CFG_WRITE,
	PCI_BK_ENABLE,	/* enable(on): the first enable */
	PCI_BK_DISABLE, /* enable(off): the last disable */
	PCI_BK_ALLOC_IRQ_VECTORS,
	PCI_BK_FREE_IRQ_VECTORS,
	PCI_BK_RESET,
	PCI_BK_QUIESCE,
	PCI_BK_NR
};

enum pci__bk_class {
	PCI_BK_UNKNOWN,
	PCI_BK_READ,
	PCI_BK_WRITE,
	PCI_BK_RELEASE,
	PCI_BK_DETACH_ALWAYS,
};

HIDDEN enum pci__bk_class pci__bk_class(enum pci__bk_op op);
HIDDEN const char *pci__bk_name(enum pci__bk_op op);
HIDDEN int pci__bk_attach(const struct pci__backend *b, struct pci_dev *pdev);
HIDDEN void pci__bk_detach(struct pci_dev *pdev);
HIDDEN int pci__bk_bar_window(struct pci_dev *pdev, int bar, int *ret_fd,
			      off_t *ret_off, uint64_t *ret_size);
HIDDEN int pci__bk_cfg_read(const struct pci_dev *pdev, int where, int size,
			    uint32_t *val);
HIDDEN int pci__bk_cfg_write(const struct pci_dev *pdev, int where, int size,
			     uint32_t val);
HIDDEN int pci__bk_enable(struct pci_dev *pdev, bool on);
HIDDEN int pci__bk_alloc_irq_vectors(struct pci_dev *pdev,
				     unsigned int min_vecs,
				     unsigned int max_vecs, unsigned int flags,
				     unsigned int *ret_type);
HIDDEN void pci__bk_free_irq_vectors(struct pci_dev *pdev);
HIDDEN int pci__bk_reset(struct pci_dev *pdev);
HIDDEN void pci__bk_quiesce(struct pci_dev *pdev);

extern HIDDEN const struct bus_type pci__bus_type;

/* parse.c: pure functions on untrusted bytes (the fuzzer's targets). */
HIDDEN int pci__parse_name(const char *name, unsigned int *ret_domain,
			   unsigned int *ret_bus, unsigned int *ret_devfn);
HIDDEN int pci__parse_resource(const char *buf, size_t len,
			       struct resource *res, unsigned int nres);
HIDDEN int pci__parse_uint(const char *buf, size_t len, unsigned long max,
			   unsigned long *ret);
HIDDEN int pci__parse_header(struct pci_dev *pdev, const uint8_t *cfg,
			     size_t len);

/*
 * probe.c: files of a device, opened beneath the sysfs root, each checked
 * against what the scan recorded (-ENODEV: the directory is not the one
 * scanned; -ESTALE: the file was replaced, by any type of file but a
 * symlink; -ELOOP: it is a symlink now;
 * -ENOENT: it is gone, or was not there at the scan). A file the scan did
 * not record is opened in the checked directory, without following a
 * symlink, and must be a regular file.
 */
HIDDEN int pci__open(const struct pci_dev *pdev, const char *file, int flags);
HIDDEN ssize_t pci__read_file(const struct pci_dev *pdev, const char *file,
			      char *buf, size_t cap);
/*
 * driver.c: lets go of a kept `enable` or `config` file that a raw system
 * call closed behind the library's back (its number may be another
 * owner's file by now: base/own-fd.c WARNs), so that it is never read,
 * written or closed again; the next access opens the file anew. Under
 * p->lock, before each use of them. True while the device is enabled
 * through sysfs (its `enable` kept, or let go so).
 */
HIDDEN bool pci__kept_check(struct pci_dev *dev);
/*
 * p->enable_fd once the kept `enable` was let go so: the device is still
 * enabled through sysfs, and its disable writes through a new open.
 */
#define PCI_ENABLE_LOST (-2)

/*
 * readonly.c: read-only mode, and the writes it waits for. Each write to
 * a device (a sysfs file, or a backend's config write or reset) is made
 * between pci__write_begin(), false in read-only mode (nothing to end
 * then), and pci__write_end(): pci_sysfs_set_readonly(true) returns only
 * once every write begun before it has ended. No lock is held between
 * them. pci__write_fork_child(): the child of fork() (probe.c's handler).
 */
HIDDEN bool pci__readonly(void);
HIDDEN bool pci__write_begin(void);
/* A write counted in flight whatever the mode: a backend's detach. */
HIDDEN void pci__write_hold(void);
HIDDEN void pci__write_end(void);
HIDDEN void pci__write_fork_child(void);

/*
 * pread() and pwrite() of a device's sysfs file, which are no
 * cancellation points here: no call of the library is one, and the
 * callers hold the device's lock (an enable) or a file of theirs. Every
 * pwrite() is a write to the device: none in read-only mode (-1, errno
 * EROFS), however late the mode was set after the caller's own check.
 */
static inline ssize_t pci__pread(int fd, void *buf, size_t len, off_t off)
{
	int cancel = devres__cancel_off();
	ssize_t n = pread(fd, buf, len, off);

	devres__cancel_restore(cancel);
	return n;
}

static inline ssize_t pci__pwrite(int fd, const void *buf, size_t len,
				  off_t off)
{
	int cancel, saved;
	ssize_t n;

	if (!pci__write_begin()) {
		errno = EROFS;
		return -1;
	}
	cancel = devres__cancel_off();
	n = pwrite(fd, buf, len, off);
	saved = errno;
	devres__cancel_restore(cancel);
	pci__write_end();
	errno = saved;
	return n;
}
HIDDEN int pci__bus_ready(void);
/*
 * probe.c: the PCI bus's deletion steps (devres__bus_register_deleted()),
 * however a device is deleted: it leaves the bus's list and gives its
 * BARs back, so that a lookup no longer finds it and a scan adds it anew.
 */
HIDDEN void pci__deleted(struct device *dev);

/*
 * config.c: 0; -ENODEV when config no longer shows the scanned ids (class,
 * revision and subsystem ids included), or is
 * not the file the scan saw; -EMFILE, -ENFILE or -ENOMEM when the process
 * could not open it (the device is not gone: the caller says so).
 */
HIDDEN int pci__check_ids(const struct pci_dev *pdev);
HIDDEN bool pci__same_file(const struct pci_file_id *a,
			   const struct pci_file_id *b);
/*
 * -EINVAL when two files of @p are one file, -EEXIST (and the device's
 * name in @ret_other) when one is a file of a device in @registered.
 */
HIDDEN int pci__check_alias(const struct pci_dev_private *p,
			    const struct pci_dev_private *registered,
			    char ret_other[PCI_NAME_MAX + 1]);

/* bars.c: BARs into the resource tree; BAR mappings from their own file. */
HIDDEN int pci__bars_claim(struct pci_dev *pdev);
HIDDEN void pci__bars_release(struct pci_dev *pdev);
/*
 * Whether BAR @bar is in the resource tree, where its scan put it: false
 * when it overlapped a resource placed before it (another device's BAR,
 * one of its own, a window of the program) or its device was removed.
 */
HIDDEN bool pci__bar_placed(const struct pci_dev *pdev, int bar);
/*
 * A managed mapping (pcim_iomap()) records its node (@owner), a void * the
 * address is written to: the mapping is listed, put in BAR @bar's slot of
 * pcim_iomap_table() and the node on @owner->dev in one hold of the
 * device's lock and the mappings' lock (-EBUSY when the slot is taken);
 * on failure the node is still the caller's. pci__bar_unmap() by a node
 * (@node) takes only the mapping it still owns, and by hand (@node NULL)
 * any, dropping a managed one's node there (*@ret_owned, @h for the WARN)
 * and holding its device until done with it; -ECHILD for another
 * process's mapping, -ENOENT for no mapping.
 */
HIDDEN int pci__bar_map(struct pci_dev *pdev, int bar, unsigned long maxlen,
			const struct devres__owner *owner, void **ret_addr);
HIDDEN int pci__bar_unmap(void *addr, const void *node, struct devres__hand *h,
			  bool *ret_owned);
/*
 * probe.c: pcim_iomap_table(), the device's own (not a devres node, so a
 * group's rollback cannot free it under mappings made outside the group),
 * under pdev->p->lock. Kept out of struct pci_dev_private, whose layout
 * the ABI check sees through struct pci_dev.
 */
HIDDEN void **pci__iomap_slots(struct pci_dev *pdev);
/*
 * probe.c: the device's lock of its managed BAR calls (pcim_iomap(),
 * pcim_iounmap(), pcim_request_region(), pcim_release_region() and the
 * calls made of them), taken first and held across each: a multi-BAR
 * call's claims, mappings and their undo are one step to the others.
 * Recursive: a signal handler on the thread may make such a call on the
 * device. Holds the log (devres__log_hold()): no log sink runs inside.
 */
HIDDEN void pci__bars_lock(struct pci_dev *pdev);
HIDDEN void pci__bars_unlock(struct pci_dev *pdev);
/* devres.c: clears @addr's slot in pcim_iomap_table(); whether it was one. */
HIDDEN bool pci__iomap_forget(struct pci_dev *pdev, void *addr);
HIDDEN void pci__bars_protect(void);

/* irq.c */
HIDDEN void pci__irq_reset(struct pci_dev *pdev);

/*
 * driver.c: pci_enable_device(), or with @managed (a pcim enable's node)
 * pcim_enable_device(): the enable counted managed and its node added in
 * the same hold of p->lock, so no disable can take it as a plain one.
 */
HIDDEN int pci__enable(struct pci_dev *dev, void *managed);
/* driver.c: pci_disable_device(), or a pcim enable's release (@managed). */
HIDDEN void pci__disable(struct pci_dev *dev, bool managed);
/*
 * driver.c: sets or clears mastering through the config file kept from the
 * enable to the disable, opening it if the enable could not; whether the
 * access went through. p->lock held.
 */
HIDDEN bool pci__master_kept(struct pci_dev *dev, bool on);
/* driver.c: closes what an enable the device's owner never dropped kept. */
HIDDEN void pci__enable_files_close(struct pci_dev *dev);

/* devres.c: drops an unpinned pcim enable's node; p->lock held. */
HIDDEN void pci__drop_managed_enable(struct pci_dev *dev);

#endif /* DEVRES_PCI_INTERNAL_H */
