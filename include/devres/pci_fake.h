/* SPDX-License-Identifier: MIT */
/*
 * A fake sysfs tree of PCI devices, for tests (the library's and yours):
 * a directory made with mkdtemp() holding bus/pci/devices/<addr> symlinks
 * to devices/<addr>/ directories with the files the PCI subsystem reads
 * and writes (config, resource, resourceN, enable, irq, and vendor, device,
 * class ... as text). Point the PCI subsystem at it with
 * pci_sysfs_set_root(pci_fake_root(tree)), then pci_bus_scan().
 *
 * The tree is ordinary files: a resourceN is a sparse file of the BAR's
 * size (pcim_iomap() maps it, so a test sees through the file what a
 * driver wrote, and writes registers by writing the file), `enable` holds
 * what was last written. Nothing here touches anything outside the tree.
 */
#ifndef DEVRES_PCI_FAKE_H
#define DEVRES_PCI_FAKE_H

#include <stddef.h>
#include <devres/pci.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pci_fake;

/**
 * struct pci_fake_dev - what a fake PCI function looks like
 * @name: its address, "DDDD:BB:DD.F"
 * @vendor: vendor id (not 0 or 0xffff)
 * @device: device id
 * @subsystem_vendor: subsystem vendor id
 * @subsystem_device: subsystem id
 * @class: class code, base << 16 | sub << 8 | prog-if (``class_`` in C++)
 * @revision: revision id
 * @irq: what the `irq` file says (0 writes no file)
 * @bar_size: the size of each BAR, 0 for none; a power of two
 * @bar_flags: IORESOURCE_MEM (with IORESOURCE_PREFETCH, IORESOURCE_MEM_64)
 *             or IORESOURCE_IO for each BAR with a size
 * @cfg_size: the size of `config`: 0 for 256, or 64 to 4096
 *
 * BAR addresses are chosen by the tree, one after the other.
 */
struct pci_fake_dev {
	const char *name;
	unsigned short vendor;
	unsigned short device;
	unsigned short subsystem_vendor;
	unsigned short subsystem_device;
	unsigned int DEVRES_PCI_CLASS;
	uint8_t revision;
	unsigned int irq;
	resource_size_t bar_size[PCI_STD_NUM_BARS];
	unsigned long bar_flags[PCI_STD_NUM_BARS];
	size_t cfg_size;
};

/**
 * pci_fake_create() - make an empty fake sysfs tree
 *
 * Creates a new directory under $TMPDIR (or /tmp) with an empty
 * bus/pci/devices in it.
 *
 * Context: any thread.
 * Return: the tree, or NULL with errno set.
 */
DEVRES_API struct pci_fake *pci_fake_create(void);

/**
 * pci_fake_root() - the root of a fake tree
 * @tree: the tree
 *
 * The directory that stands for /sys/bus/pci in a tree pci_fake_create() made;
 * the PCI bus reads it once it is given to pci_sysfs_set_root().
 *
 * Context: any thread.
 * Return: its path, for pci_sysfs_set_root(); valid until
 * pci_fake_destroy().
 */
DEVRES_API const char *pci_fake_root(const struct pci_fake *tree);

/**
 * pci_fake_add() - add a PCI function to a fake tree
 * @tree: the tree
 * @desc: what it looks like
 *
 * Writes devices/<name>/ (config with the ids, class, header and BAR
 * registers; resource; a resourceN per BAR; enable "0"; irq; text files
 * vendor, device, subsystem_vendor, subsystem_device, class, revision) and
 * links bus/pci/devices/<name> to it. A later pci_bus_scan() finds it.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for a bad name, size or flag; -EEXIST when the name
 * exists; -errno from the file system.
 */
DEVRES_API int pci_fake_add(struct pci_fake *tree,
			    const struct pci_fake_dev *desc);

/**
 * pci_fake_remove() - take a function out of a fake tree
 * @tree: the tree
 * @name: its address
 *
 * Removes bus/pci/devices/<name> and devices/<name>/; a later
 * pci_bus_scan() removes the pci_dev.
 *
 * Context: any thread.
 * Return: 0, -ENOENT, or -errno from the file system.
 */
DEVRES_API int pci_fake_remove(struct pci_fake *tree, const char *name);

/**
 * pci_fake_path() - the path of a file of a fake function
 * @tree: the tree
 * @name: the function's address
 * @file: a file name in its directory ("config", "enable", "resource0"...),
 *        or NULL for the directory
 * @buf: where the path goes
 * @len: the size of @buf
 *
 * For tests that check or change what the tree holds.
 *
 * Context: any thread.
 * Return: 0, or -ENAMETOOLONG when @buf is too small.
 */
DEVRES_API int pci_fake_path(const struct pci_fake *tree, const char *name,
			     const char *file, char *buf, size_t len);

/**
 * pci_fake_destroy() - delete a fake tree
 * @tree: the tree, or NULL
 *
 * Removes every file and directory of the tree, without following a
 * symlink (a test may plant some), and frees @tree. Call
 * pci_bus_remove_all() first.
 *
 * Context: any thread.
 */
DEVRES_API void pci_fake_destroy(struct pci_fake *tree);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_PCI_FAKE_H */
