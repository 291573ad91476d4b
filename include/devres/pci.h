/* SPDX-License-Identifier: MIT */
/*
 * PCI devices over sysfs: a bus scan of <root>/bus/pci/devices, drivers
 * matched by id tables, config space through the `config` file, and the
 * managed pcim_* interface (enable, regions, mapped BARs).
 *
 * The sysfs root is /sys unless DEVRES_SYSFS_ROOT or pci_sysfs_set_root()
 * says otherwise; every file is opened beneath it and never outside it.
 * Only pcim_* calls are managed; pci_* calls are not (the kernel's old
 * "sometimes managed" pci_* calls are not reproduced).
 */
#ifndef DEVRES_PCI_H
#define DEVRES_PCI_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <devres/types.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/ioport.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's `class` members are spelled `class_` in C++. */
#ifdef __cplusplus
#define DEVRES_PCI_CLASS class_
#else
#define DEVRES_PCI_CLASS class
#endif

#define PCI_ANY_ID (~0u)

/* Resources of a device, in the order of the sysfs `resource` file. */
#define PCI_STD_NUM_BARS 6
#define PCI_ROM_RESOURCE 6
#define PCI_NUM_RESOURCES 17
#define DEVICE_COUNT_RESOURCE PCI_NUM_RESOURCES

/* Flags of a BAR beyond the resource type (as the kernel's). */
#define IORESOURCE_PREFETCH 0x00002000ul
#define IORESOURCE_READONLY 0x00004000ul
#define IORESOURCE_MEM_64 0x00100000ul

#define PCI_DEVFN(slot, func) ((((slot)&0x1f) << 3) | ((func)&0x07))
#define PCI_SLOT(devfn) (((devfn) >> 3) & 0x1f)
#define PCI_FUNC(devfn) ((devfn)&0x07)

/* Config space: sizes, registers and bits a driver commonly uses. */
#define PCI_CFG_SPACE_SIZE 256
#define PCI_CFG_SPACE_EXP_SIZE 4096
#define PCI_VENDOR_ID 0x00
#define PCI_DEVICE_ID 0x02
#define PCI_COMMAND 0x04
#define PCI_COMMAND_IO 0x0001
#define PCI_COMMAND_MEMORY 0x0002
#define PCI_COMMAND_MASTER 0x0004
#define PCI_COMMAND_INTX_DISABLE 0x0400
#define PCI_STATUS 0x06
#define PCI_STATUS_CAP_LIST 0x0010
#define PCI_CLASS_REVISION 0x08
#define PCI_REVISION_ID 0x08
#define PCI_CLASS_PROG 0x09
#define PCI_CLASS_DEVICE 0x0a
#define PCI_HEADER_TYPE 0x0e
#define PCI_HEADER_TYPE_MASK 0x7f
#define PCI_HEADER_TYPE_NORMAL 0
#define PCI_HEADER_TYPE_BRIDGE 1
#define PCI_HEADER_TYPE_CARDBUS 2
#define PCI_BASE_ADDRESS_0 0x10
#define PCI_SUBSYSTEM_VENDOR_ID 0x2c
#define PCI_SUBSYSTEM_ID 0x2e
#define PCI_CAPABILITY_LIST 0x34
#define PCI_CB_CAPABILITY_LIST 0x14
#define PCI_INTERRUPT_LINE 0x3c
#define PCI_INTERRUPT_PIN 0x3d
#define PCI_CAP_LIST_ID 0
#define PCI_CAP_LIST_NEXT 1
#define PCI_CAP_ID_PM 0x01
#define PCI_CAP_ID_MSI 0x05
#define PCI_CAP_ID_VNDR 0x09
#define PCI_CAP_ID_EXP 0x10
#define PCI_CAP_ID_MSIX 0x11
#define PCI_EXT_CAP_ID_ERR 0x0001
#define PCI_EXT_CAP_ID_DSN 0x0003
#define PCI_EXT_CAP_ID(header) ((header)&0x0000ffff)
#define PCI_EXT_CAP_VER(header) (((header) >> 16) & 0xf)
#define PCI_EXT_CAP_NEXT(header) (((header) >> 20) & 0xffc)

/* Config accessors' return codes, as the kernel's. */
#define PCIBIOS_SUCCESSFUL 0x00
#define PCIBIOS_FUNC_NOT_SUPPORTED 0x81
#define PCIBIOS_BAD_VENDOR_ID 0x83
#define PCIBIOS_DEVICE_NOT_FOUND 0x86
#define PCIBIOS_BAD_REGISTER_NUMBER 0x87
#define PCIBIOS_SET_FAILED 0x88
#define PCIBIOS_BUFFER_TOO_SMALL 0x89

/* pci_alloc_irq_vectors() flags. */
#define PCI_IRQ_INTX (1u << 0)
#define PCI_IRQ_LEGACY PCI_IRQ_INTX
#define PCI_IRQ_MSI (1u << 1)
#define PCI_IRQ_MSIX (1u << 2)
#define PCI_IRQ_ALL_TYPES (PCI_IRQ_INTX | PCI_IRQ_MSI | PCI_IRQ_MSIX)

struct pci_dev_private;

/**
 * struct pci_device_id - a device a driver handles
 * @vendor: vendor id, or PCI_ANY_ID
 * @device: device id, or PCI_ANY_ID
 * @subvendor: subsystem vendor id, or PCI_ANY_ID
 * @subdevice: subsystem device id, or PCI_ANY_ID
 * @class: class code (base, sub, prog-if), compared under @class_mask
 *         (``class_`` in C++)
 * @class_mask: the bits of @class that must match
 * @driver_data: the driver's cookie for this entry
 *
 * A table ends with an entry whose @vendor, @subvendor and @class_mask are
 * all 0. Fill entries with PCI_DEVICE(), PCI_DEVICE_SUB() or
 * PCI_DEVICE_CLASS().
 */
struct pci_device_id {
	uint32_t vendor, device;
	uint32_t subvendor, subdevice;
	uint32_t DEVRES_PCI_CLASS, class_mask;
	unsigned long driver_data;
};

/* clang-format off */
#define PCI_DEVICE(vend, dev)                                                  \
	.vendor = (vend), .device = (dev), .subvendor = PCI_ANY_ID,            \
	.subdevice = PCI_ANY_ID
#define PCI_DEVICE_SUB(vend, dev, subvend, subdev)                             \
	.vendor = (vend), .device = (dev), .subvendor = (subvend),             \
	.subdevice = (subdev)
#define PCI_DEVICE_CLASS(dev_class, dev_class_mask)                            \
	.vendor = PCI_ANY_ID, .device = PCI_ANY_ID, .subvendor = PCI_ANY_ID,   \
	.subdevice = PCI_ANY_ID, .DEVRES_PCI_CLASS = (dev_class),              \
	.class_mask = (dev_class_mask)
/* clang-format on */

/**
 * struct pci_dev - a PCI function found in sysfs
 * @dev: the device (its name is the address, "DDDD:BB:DD.F")
 * @domain_nr: PCI domain (segment)
 * @bus_nr: bus number
 * @devfn: device and function (PCI_SLOT(), PCI_FUNC())
 * @vendor: vendor id
 * @device: device id
 * @subsystem_vendor: subsystem vendor id (0 for bridges)
 * @subsystem_device: subsystem id (0 for bridges)
 * @class: class code, 3 bytes: base, sub-class, prog-if (``class_`` in C++)
 * @revision: revision id
 * @hdr_type: header type, without the multi-function bit
 * @irq: the legacy interrupt: the line a backend registered with
 *       pci_dev_set_irq_lines(), else 0 (no interrupt; the number sysfs
 *       shows is the host kernel's, never a line of this process)
 * @cfg_size: the size of config space, 256 or 4096 (as the file says)
 * @is_busmaster: set by pci_set_master(), cleared by pci_clear_master()
 * @resource: BARs 0-5, the ROM, then the others of the `resource` file
 * @msi_enabled: pci_alloc_irq_vectors() gave MSI vectors (until freed)
 * @msix_enabled: pci_alloc_irq_vectors() gave MSI-X vectors (until freed)
 *
 * Registered by pci_bus_scan(), never by a driver. The member after the
 * comment is private.
 */
struct pci_dev {
	struct device dev;
	unsigned int domain_nr;
	unsigned char bus_nr;
	unsigned int devfn;
	unsigned short vendor;
	unsigned short device;
	unsigned short subsystem_vendor;
	unsigned short subsystem_device;
	unsigned int DEVRES_PCI_CLASS;
	uint8_t revision;
	uint8_t hdr_type;
	unsigned int irq;
	int cfg_size;
	bool is_busmaster;
	struct resource resource[PCI_NUM_RESOURCES];
	bool msi_enabled;
	bool msix_enabled;

	/* private: */
	struct pci_dev_private *p;
};

/**
 * struct pci_driver - a driver of PCI devices
 * @name: the driver's name (also @driver.name when that is not set)
 * @id_table: the devices it handles, ended by an all-zero entry
 * @probe: binds to a device that matched @id; 0 or a negative errno
 * @remove: unbinds; may be NULL
 * @driver: the driver core's part; set by pci_register_driver()
 */
struct pci_driver {
	const char *name;
	const struct pci_device_id *id_table;
	int (*probe)(struct pci_dev *dev, const struct pci_device_id *id);
	void (*remove)(struct pci_dev *dev);
	struct device_driver driver;
};

#define to_pci_dev(d) container_of((d), struct pci_dev, dev)
#define to_pci_driver(d) container_of((d), struct pci_driver, driver)

#define pci_resource_start(dev, bar) ((dev)->resource[(bar)].start)
#define pci_resource_end(dev, bar) ((dev)->resource[(bar)].end)
#define pci_resource_flags(dev, bar) ((dev)->resource[(bar)].flags)
#define pci_resource_len(dev, bar)                                             \
	(pci_resource_end((dev), (bar))                                        \
		 ? resource_size(&(dev)->resource[(bar)])                      \
		 : (resource_size_t)0)

/**
 * pci_name() - a PCI device's address
 * @pdev: the device
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and gives "".
 *
 * Context: any thread.
 * Return: "DDDD:BB:DD.F".
 */
static inline const char *pci_name(const struct pci_dev *pdev)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("pci_name", "PCI device", pdev);
		return "";
	}
	return dev_name(&pdev->dev);
}

/**
 * pci_get_drvdata() - the driver's private data
 * @pdev: the device
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and gives NULL.
 *
 * Context: any thread.
 * Return: what pci_set_drvdata() stored, or NULL.
 */
static inline void *pci_get_drvdata(const struct pci_dev *pdev)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("pci_get_drvdata", "PCI device", pdev);
		return NULL;
	}
	return pdev->dev.driver_data;
}

/**
 * pci_set_drvdata() - store the driver's private data
 * @pdev: the device
 * @data: the data
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and stores nothing.
 *
 * Context: any thread.
 */
static inline void pci_set_drvdata(struct pci_dev *pdev, void *data)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("pci_set_drvdata", "PCI device", pdev);
		return;
	}
	pdev->dev.driver_data = data;
}

/**
 * pcibios_err_to_errno() - a PCIBIOS_* code as a negative errno
 * @err: a config accessor's return
 *
 * Context: any thread.
 * Return: 0 for PCIBIOS_SUCCESSFUL, -ENOENT, -ENOTTY, -ENODEV, -EFAULT,
 * -EIO, -ENOSPC or -ERANGE as the kernel maps them; a negative @err as it is.
 */
static inline int pcibios_err_to_errno(int err)
{
	if (err <= PCIBIOS_SUCCESSFUL)
		return err;
	switch (err) {
	case PCIBIOS_FUNC_NOT_SUPPORTED:
		return -ENOENT;
	case PCIBIOS_BAD_VENDOR_ID:
		return -ENOTTY;
	case PCIBIOS_DEVICE_NOT_FOUND:
		return -ENODEV;
	case PCIBIOS_BAD_REGISTER_NUMBER:
		return -EFAULT;
	case PCIBIOS_SET_FAILED:
		return -EIO;
	case PCIBIOS_BUFFER_TOO_SMALL:
		return -ENOSPC;
	default:
		return -ERANGE;
	}
}

/**
 * pci_sysfs_set_root() - where PCI devices are read from
 * @path: the sysfs mount point (devices are under <path>/bus/pci/devices),
 *        or NULL for the default: DEVRES_SYSFS_ROOT from the environment
 *        (ignored in a setuid program), else "/sys"
 *
 * Exists only in userspace. The path is used by the next pci_bus_scan(),
 * which opens it once; every file of every device is then opened beneath
 * that directory, never outside it (no absolute symlink, no ".." above it).
 *
 * Context: any thread; not while PCI devices are registered.
 * Return: 0; -EBUSY while devices are registered (pci_bus_remove_all()
 * first); -EINVAL for an empty @path; -ENOMEM.
 */
DEVRES_API int pci_sysfs_set_root(const char *path);

/**
 * pci_sysfs_set_readonly() - never write to, or map, sysfs
 * @readonly: true to forbid every write and mapping
 *
 * Exists only in userspace: a tool that only lists devices (lspci-lite)
 * sets it, so that nothing it calls can write to a real device. While it
 * is set, no resourceN file is opened for writing or mapped (pci_iomap()
 * and pcim_iomap() fail with EROFS), config writes return
 * PCIBIOS_SET_FAILED, pci_enable_device() fails with -EROFS,
 * pci_reset_function() with -EROFS and pci_disable_device() does not
 * write `enable`; a device a backend (UIO, VFIO) took is not written
 * either: pci_alloc_irq_vectors() of it fails with -EROFS,
 * pci_free_irq_vectors() and its unbind leave the device as it is, and a
 * scan offers no backend a new device (it is read through sysfs). No
 * refusal WARNs. Setting it also makes
 * every BAR mapping already made read-only (a write through one then
 * faults as a write to a read-only page does); they stay read-only when
 * it is cleared again: an mprotect() or pkey_mprotect() asking for write
 * access over one, or an mremap() of one, is refused with EPERM and a
 * WARN (a child of fork()'s copies too). Setting it returns only once every write that
 * another thread had begun before it has ended (a reset in progress
 * included), so that nothing is written after it returns.
 *
 * Context: any thread; it sleeps while writes of other threads end.
 */
DEVRES_API void pci_sysfs_set_readonly(bool readonly);

/**
 * pci_bus_scan() - register the PCI devices found under the sysfs root
 *
 * Exists only in userspace. Registers a struct pci_dev, named by its
 * address, for each entry "DDDD:BB:DD.F" of <root>/bus/pci/devices that is
 * not yet registered, in address order: ids, class, revision and header
 * type from the first 64 bytes of `config`, the BARs from `resource` (each
 * inserted into iomem_resource or ioport_resource), and which files the
 * device directory, `config`, `resource`, `enable` and each `resourceN`
 * are (checked again at each use). `irq` is not read: its number is the
 * host kernel's. Registered devices whose entry is gone, or whose
 * directory is no longer the one scanned, are removed (their driver
 * unbound first). Entries whose names are not addresses are ignored;
 * devices whose files are missing or malformed are skipped (a dev_dbg()
 * line names each and why; pci_bus_scan_device() returns the error). A
 * device the process has no fd or memory to read is not skipped: the scan
 * stops, unregisters the devices it registered, and fails, so that a scan
 * that succeeds has every device there is. Drivers already registered
 * bind to new devices before this returns.
 *
 * Context: any thread; not from a PCI driver's probe or remove (-EDEADLK,
 * with a WARN).
 * Return: the number of PCI devices registered after the scan; -ENOENT when
 * the root has no bus/pci/devices; -ENOTDIR, -EXDEV, -ELOOP, -EACCES as
 * opening it fails; -EMFILE or -ENFILE when the process or the system is
 * out of fds; -ENOMEM.
 */
DEVRES_API int pci_bus_scan(void);

/**
 * pci_bus_scan_device() - register one PCI device found under the sysfs root
 * @name: its address, "DDDD:BB:DD.F"
 *
 * Exists only in userspace: what pci_bus_scan() does for one entry, with
 * the reason when it cannot.
 *
 * Context: as pci_bus_scan().
 * Return: 0; -EEXIST when it is already registered, or when its directory
 * or one of its files is one of a registered device's (a hostile tree's
 * alias, said in one log line); -EINVAL when @name is not an address, a
 * file is malformed (a garbage or truncated `resource` line, a BAR that
 * ends before it starts or spans every address) or two of its files are
 * one file (resource1 a hard link of resource0); -ENODATA
 * when `config` is shorter than 64 bytes; -ENOENT when a file is missing;
 * -EXDEV or -ELOOP when a path leads outside the root or loops; -ENOMEM.
 */
DEVRES_API int pci_bus_scan_device(const char *name);

/**
 * pci_bus_remove_all() - unregister every PCI device
 *
 * Exists only in userspace. Unbinds and unregisters every device
 * pci_bus_scan() registered, removes their BARs from the resource tree,
 * and closes the sysfs root. BAR mappings stay valid until unmapped.
 *
 * Context: any thread; not from a PCI driver's probe or remove (WARN).
 */
DEVRES_API void pci_bus_remove_all(void);

/**
 * pci_get_device() - find a registered PCI device by ids
 * @vendor: vendor id, or PCI_ANY_ID
 * @device: device id, or PCI_ANY_ID
 * @from: the device found last (its reference is dropped), or NULL
 *
 * Walks the registered devices in the order they were registered.
 *
 * Context: any thread.
 * Return: the next matching device with a reference taken (drop it with
 * pci_dev_put(), or pass it back as @from), or NULL.
 */
DEVRES_API struct pci_dev *
pci_get_device(unsigned int vendor, unsigned int device, struct pci_dev *from);

/**
 * pci_dev_get() - take a reference on a PCI device
 * @pdev: the device, or NULL
 *
 * Takes a reference on the device of @pdev, as get_device() does; each one is
 * dropped with pci_dev_put(). NULL is accepted and returned.
 *
 * Context: any thread.
 * Return: @pdev.
 */
DEVRES_API struct pci_dev *pci_dev_get(struct pci_dev *pdev);

/**
 * pci_dev_put() - drop a reference on a PCI device
 * @pdev: the device, or NULL
 *
 * Drops a reference taken with pci_dev_get() or given by a lookup; the last
 * one frees the PCI device. NULL is accepted and ignored.
 *
 * Context: any thread.
 */
DEVRES_API void pci_dev_put(struct pci_dev *pdev);

/**
 * pci_register_driver() - register a PCI driver
 * @drv: the driver, with a name and an id table
 *
 * Binds @drv to every registered, unbound device its table matches; the
 * probe gets the entry that matched.
 *
 * Context: any thread.
 * Return: 0, or as driver_register(); -EINVAL (with a WARN) for NULL.
 */
DEVRES_API int pci_register_driver(struct pci_driver *drv);

/**
 * pci_unregister_driver() - unregister a PCI driver
 * @drv: a registered driver
 *
 * Unbinds @drv from every device it is bound to (each remove, then each
 * device's managed resources) and takes it off the PCI bus.
 *
 * Context: as driver_unregister().
 */
DEVRES_API void pci_unregister_driver(struct pci_driver *drv);

/**
 * pci_match_id() - the entry of an id table a device matches
 * @ids: the table, ended by an all-zero entry, or NULL
 * @dev: the device
 *
 * Walks @ids, ended by an all-zero entry, and compares each with @dev's
 * vendor, device, subsystem ids and class, PCI_ANY_ID matching anything, as
 * the PCI bus does to choose a driver.
 *
 * Context: any thread.
 * Return: the first matching entry, or NULL.
 */
DEVRES_API const struct pci_device_id *
pci_match_id(const struct pci_device_id *ids, struct pci_dev *dev);

/**
 * pci_read_config_byte() - read a byte of config space
 * @dev: the device
 * @where: the offset
 * @val: where the value goes; all ones on failure
 *
 * Reads through the device's `config` file. A reader without privilege
 * gets only the first 64 bytes of it from a real sysfs: past them, reads
 * fail with PCIBIOS_DEVICE_NOT_FOUND.
 *
 * Context: any thread. A fault-injection point (the open).
 * Return: PCIBIOS_SUCCESSFUL; PCIBIOS_BAD_REGISTER_NUMBER when @where is
 * not below @dev->cfg_size; PCIBIOS_DEVICE_NOT_FOUND when the file cannot
 * be read there, or it or the device's directory is not the one the scan
 * saw (replaced, or a symlink now).
 */
DEVRES_API int pci_read_config_byte(const struct pci_dev *dev, int where,
				    uint8_t *val);

/**
 * pci_read_config_word() - read 16 bits of config space
 * @dev: the device
 * @where: the offset, a multiple of 2
 * @val: where the value goes (little-endian in the file); all ones on
 *       failure
 *
 * Reads the 16-bit register at @where of @dev's config space into @val.
 *
 * Context: any thread. A fault-injection point (the open).
 * Return: as pci_read_config_byte(); PCIBIOS_BAD_REGISTER_NUMBER also for
 * an odd @where.
 */
DEVRES_API int pci_read_config_word(const struct pci_dev *dev, int where,
				    uint16_t *val);

/**
 * pci_read_config_dword() - read 32 bits of config space
 * @dev: the device
 * @where: the offset, a multiple of 4
 * @val: where the value goes; all ones on failure
 *
 * Reads the 32-bit register at @where (a multiple of 4) of @dev's config space
 * into @val.
 *
 * Context: any thread. A fault-injection point (the open).
 * Return: as pci_read_config_word().
 */
DEVRES_API int pci_read_config_dword(const struct pci_dev *dev, int where,
				     uint32_t *val);

/**
 * pci_write_config_byte() - write a byte of config space
 * @dev: the device
 * @where: the offset
 * @val: the value
 *
 * Writes through the device's `config` file.
 *
 * Context: any thread. A fault-injection point (the open).
 * Return: PCIBIOS_SUCCESSFUL; PCIBIOS_BAD_REGISTER_NUMBER when @where is
 * out of range; PCIBIOS_SET_FAILED when the write fails, the file is not
 * the one the scan saw, it is now shorter than @where plus the size (a
 * write never grows it), or sysfs is read-only (pci_sysfs_set_readonly()).
 */
DEVRES_API int pci_write_config_byte(const struct pci_dev *dev, int where,
				     uint8_t val);

/**
 * pci_write_config_word() - write 16 bits of config space
 * @dev: the device
 * @where: the offset, a multiple of 2
 * @val: the value
 *
 * Writes @val to the 16-bit register at @where of @dev's config space.
 *
 * Context: any thread. A fault-injection point (the open).
 * Return: as pci_write_config_byte(); PCIBIOS_BAD_REGISTER_NUMBER also for
 * an odd @where.
 */
DEVRES_API int pci_write_config_word(const struct pci_dev *dev, int where,
				     uint16_t val);

/**
 * pci_write_config_dword() - write 32 bits of config space
 * @dev: the device
 * @where: the offset, a multiple of 4
 * @val: the value
 *
 * Writes @val to the 32-bit register at @where (a multiple of 4) of @dev's
 * config space.
 *
 * Context: any thread. A fault-injection point (the open).
 * Return: as pci_write_config_word().
 */
DEVRES_API int pci_write_config_dword(const struct pci_dev *dev, int where,
				      uint32_t val);

/**
 * pci_find_capability() - find a capability in config space
 * @dev: the device
 * @cap: the capability id (PCI_CAP_ID_*)
 *
 * Walks the capability list (at most 48 entries, so a looping list ends).
 *
 * Context: any thread.
 * Return: the capability's offset, or 0 when it is absent or the list
 * cannot be read.
 */
DEVRES_API uint8_t pci_find_capability(struct pci_dev *dev, int cap);

/**
 * pci_find_next_capability() - find the next capability of an id
 * @dev: the device
 * @pos: the offset of the capability to start after
 * @cap: the capability id (PCI_CAP_ID_*)
 *
 * Follows @dev's capability list from the capability at @pos to the next one
 * whose id is @cap, as the kernel does to find a second capability of the same
 * kind.
 *
 * Context: any thread.
 * Return: the capability's offset, or 0.
 */
DEVRES_API uint8_t pci_find_next_capability(struct pci_dev *dev, uint8_t pos,
					    int cap);

/**
 * pci_find_ext_capability() - find an extended capability
 * @dev: the device
 * @cap: the extended capability id (PCI_EXT_CAP_ID_*)
 *
 * Walks the list from offset 256 (bounded, so a looping list ends). Needs a
 * 4096-byte config space that can be read.
 *
 * Context: any thread.
 * Return: the capability's offset, or 0.
 */
DEVRES_API uint16_t pci_find_ext_capability(struct pci_dev *dev, int cap);

/**
 * pci_set_master() - let a device master the bus (do DMA)
 * @dev: the device
 *
 * Sets PCI_COMMAND_MASTER in the command register, through `config`.
 *
 * Context: any thread.
 */
DEVRES_API void pci_set_master(struct pci_dev *dev);

/**
 * pci_clear_master() - stop a device mastering the bus
 * @dev: the device
 *
 * Clears the bus-master bit of @dev's command register, so that the device
 * stops starting DMA; pci_set_master() sets it again.
 *
 * Context: any thread.
 */
DEVRES_API void pci_clear_master(struct pci_dev *dev);

/**
 * pci_enable_device() - enable a device (not managed)
 * @dev: the device
 *
 * Counts: the first enable writes "1" to the device's `enable` file, and
 * keeps that file and `config` open until the last disable, which needs
 * no new fd. Balance each call with pci_disable_device().
 *
 * Context: any thread. A fault-injection point (the write).
 * Return: 0; -EROFS when sysfs is read-only (pci_sysfs_set_readonly());
 * -ENODEV when config no longer shows the scanned ids, class, revision,
 * header type or subsystem ids, or the device's directory is not the one scanned; -ESTALE when `enable` was replaced or
 * removed, -ELOOP when it is a symlink; -EMFILE, -ENFILE or -ENOMEM when the
 * process could not open the files (the device is not gone); -errno when
 * it cannot be written; -EBUSY with a WARN when 2^20 enables are
 * outstanding (a leak of enables: the count would overflow).
 */
DEVRES_API int pci_enable_device(struct pci_dev *dev);

/**
 * pci_disable_device() - drop an enable (not managed)
 * @dev: the device
 *
 * The last one clears bus mastering and writes "0" to `enable`, through
 * the files the first enable opened and checked: it takes no new fd, so it
 * works in a process out of fds, and it reaches the device that was
 * enabled even if the tree has changed since. A disable without an enable
 * is a misuse: WARN, no effect. One that would undo a pcim_enable_device()
 * (every enable left is managed) takes its node off the device: from a
 * match or for-each callback of the device it is refused, with a WARN.
 *
 * Context: any thread. Preserves errno.
 */
DEVRES_API void pci_disable_device(struct pci_dev *dev);

/**
 * pci_is_enabled() - whether a device is enabled
 * @dev: the device
 *
 * Whether @dev is enabled: pci_enable_device() and pcim_enable_device() count
 * up, pci_disable_device() counts down.
 *
 * Context: any thread.
 * Return: true while enables outnumber disables.
 */
DEVRES_API bool pci_is_enabled(struct pci_dev *dev);

/**
 * pcim_enable_device() - managed pci_enable_device()
 * @pdev: the device
 *
 * Enables @pdev and records a pci_disable_device() against it, run when
 * the driver detaches (or the probe fails) unless pcim_pin_device() was
 * called.
 *
 * Context: any thread, usually probe. A fault-injection point.
 * Return: 0, -ENOMEM, -ENODEV when the device refused the record (released
 * meanwhile by a last put on another thread; nothing enabled), or as
 * pci_enable_device().
 */
DEVRES_API int pcim_enable_device(struct pci_dev *pdev);

/**
 * pcim_pin_device() - keep a managed device enabled after detach
 * @pdev: a device enabled with pcim_enable_device()
 *
 * Pinning a device that pcim_enable_device() did not enable WARNs.
 *
 * Context: any thread; not a match or for-each callback of the device
 * (devres_find(), devres_for_each_res()): refused there with a WARN,
 * nothing pinned.
 */
DEVRES_API void pcim_pin_device(struct pci_dev *pdev);

/**
 * pcim_request_region() - claim a BAR, released with the binding
 * @pdev: the device
 * @bar: the BAR, 0-5
 * @name: who claims it (copied)
 *
 * Claims the BAR's range as busy in iomem_resource (ioport_resource for an
 * I/O BAR), inside the BAR the scan placed there. A BAR the scan could not
 * place, because its range overlapped a resource already in the tree
 * (another device's BAR, one of its own, a region of the program), is not
 * claimed, with a line in the log: its claim would be made inside that
 * resource, whose owner could then not claim its own.
 *
 * Context: any thread, usually probe. A fault-injection point.
 * Return: 0; -EINVAL for a BAR out of range or empty; -EBUSY when the range
 * is claimed already, or the BAR is not in the resource tree (it overlapped
 * another resource at the scan, or the device was removed); -ENOMEM.
 */
DEVRES_API int pcim_request_region(struct pci_dev *pdev, int bar,
				   const char *name);

/**
 * pcim_release_region() - give a claimed BAR back early
 * @pdev: the device
 * @bar: a BAR claimed with pcim_request_region()
 *
 * Releasing a BAR that was not claimed WARNs.
 *
 * Context: any thread; not a match or for-each callback of the device
 * (devres_find(), devres_for_each_res()): refused there with a WARN,
 * nothing released.
 */
DEVRES_API void pcim_release_region(struct pci_dev *pdev, int bar);

/**
 * pcim_request_all_regions() - claim every BAR, released with the binding
 * @pdev: the device
 * @name: who claims them (copied)
 *
 * All or nothing: on failure no BAR stays claimed by this call; a BAR
 * another call claims meanwhile stays the other call's. One step to the
 * device's other managed BAR calls, which wait for it.
 *
 * Context: any thread, usually probe. A fault-injection point.
 * Return: 0, or as pcim_request_region().
 */
DEVRES_API int pcim_request_all_regions(struct pci_dev *pdev, const char *name);

/**
 * pci_request_region() - claim a BAR, unmanaged
 * @pdev: the device
 * @bar: the BAR, 0-5
 * @name: who claims it (copied; NULL for none)
 *
 * The kernel's pci_request_region(): claims the BAR's range as busy in
 * iomem_resource (ioport_resource for an I/O BAR), inside the BAR the scan
 * placed there, until pci_release_region(). As pcim_request_region(), a
 * BAR the scan could not place (its range overlapped a resource already
 * in the tree) is not claimed, with a line in the log: the claim would be
 * made inside that resource, another device's BAR perhaps. Not released
 * with the binding: that is pcim_request_region().
 *
 * Context: any thread. A fault-injection point.
 * Return: 0, also for a BAR with no range (nothing to claim, as the
 * kernel's); -EINVAL for a bad @pdev or a BAR out of range; -EBUSY when
 * the range is claimed already, the BAR is not in the resource tree, or
 * the claim could not be allocated (the kernel's says -EBUSY for that too).
 */
DEVRES_API int pci_request_region(struct pci_dev *pdev, int bar,
				  const char *name);

/**
 * pci_release_region() - give back a BAR pci_request_region() claimed
 * @pdev: the device
 * @bar: the BAR, 0-5
 *
 * A BAR with no range is nothing to do. A BAR that is not claimed (never,
 * or released already) WARNs (release_mem_region()'s or release_region()'s
 * WARN "no busy region"), as does a BAR out of range or one the scan could
 * not place in the resource tree (whose numbers may be another's claim,
 * which stays).
 *
 * Context: any thread.
 */
DEVRES_API void pci_release_region(struct pci_dev *pdev, int bar);

/**
 * pci_request_regions() - claim every BAR, unmanaged
 * @pdev: the device
 * @name: who claims them (copied; NULL for none)
 *
 * pci_request_region() of each BAR with a range; all or nothing: on
 * failure no BAR stays claimed.
 *
 * Context: any thread. A fault-injection point.
 * Return: 0, or as pci_request_region().
 */
DEVRES_API int pci_request_regions(struct pci_dev *pdev, const char *name);

/**
 * pci_release_regions() - give back the BARs pci_request_regions() claimed
 * @pdev: the device
 *
 * pci_release_region() of each BAR with a range, with its WARN for one
 * not claimed.
 *
 * Context: any thread.
 */
DEVRES_API void pci_release_regions(struct pci_dev *pdev);

/**
 * pcim_iomap_table() - the table of a device's pcim_iomap() mappings
 * @pdev: the device
 *
 * Entry N is the pcim_iomap() mapping of BAR N, or NULL. Unlike the
 * kernel's, the table is not a managed resource of its own: it belongs to
 * @pdev and lives as long as it, so a devres group rolled back (a group
 * open at the table's first use, in the kernel) does not free it; each
 * entry is cleared when its mapping goes (the binding's release, the
 * group that holds the mapping, pcim_iounmap(), pci_iounmap()).
 *
 * Context: any thread, usually probe.
 * Return: the table, or NULL for a @pdev that is not a live PCI device.
 */
DEVRES_API void __iomem *const *pcim_iomap_table(struct pci_dev *pdev);

/**
 * pcim_iomap() - map a BAR, unmapped with the binding
 * @pdev: the device
 * @bar: a memory BAR, 0-5
 * @maxlen: map at most this many bytes; 0 for the whole BAR
 *
 * Maps the BAR's own resourceN file, and nothing else, and records the
 * mapping in pcim_iomap_table(). At the call, the device's directory and
 * the file must be the ones pci_bus_scan() saw (not replaced, not a
 * symlink), config must still show the scanned ids (class, revision and
 * subsystem ids included), the BAR's line in
 * `resource` must be unchanged and the file must hold the whole BAR. I/O
 * port BARs cannot be mapped in userspace.
 *
 * Context: any thread, usually probe. A fault-injection point.
 * Return: the address of the BAR's first register, or NULL with errno:
 * EINVAL for a BAR that is out of range, empty or an I/O BAR; EBUSY when
 * it is mapped already; ENODEV when the scan found no resourceN file for it
 * or the device is no longer the one scanned; ESTALE when its file or line
 * changed, the file was removed or is shorter than the BAR; ELOOP when the file is now
 * a symlink; EROFS when sysfs is read-only; EMFILE or ENFILE when the
 * process could not open the files; ENOMEM; or as mmap(2).
 */
DEVRES_API void __iomem *pcim_iomap(struct pci_dev *pdev, int bar,
				    unsigned long maxlen);

/**
 * pcim_iounmap() - unmap a pcim_iomap() mapping now
 * @pdev: the device
 * @addr: what pcim_iomap() returned
 *
 * An @addr that is not in the device's table WARNs.
 *
 * Context: any thread; not a match or for-each callback of the device
 * (devres_find(), devres_for_each_res()): refused there with a WARN,
 * nothing unmapped.
 */
DEVRES_API void pcim_iounmap(struct pci_dev *pdev, void __iomem *addr);

/**
 * pcim_iomap_regions() - claim and map BARs, given back with the binding
 * @pdev: the device
 * @mask: a bit per BAR to claim and map (bit N for BAR N), each a BAR
 *        of the device (not empty)
 * @name: who claims them (copied)
 *
 * pcim_request_region() then pcim_iomap() for each BAR of @mask; find the
 * mappings in pcim_iomap_table(). All or nothing: on failure, what this
 * call claimed and mapped is given back, and only that (a BAR another call
 * claimed or mapped meanwhile stays the other call's). Each BAR's claim
 * and mapping are one step to the device's other managed BAR calls
 * (pcim_release_region(), pcim_iounmap(), ...), which wait for the call;
 * a claim taken between the two otherwise (the device's resources
 * released, devm_release_mem_region() by hand) fails the call.
 *
 * Context: any thread, usually probe. A fault-injection point.
 * Return: 0; -EBUSY when a BAR is claimed already (or cannot be claimed),
 * or its claim was taken before it was mapped;
 * the negated errno of pcim_iomap() when a BAR cannot be mapped; -EINVAL
 * for a NULL device, or when @mask names an empty BAR (nothing claimed or
 * mapped, as the kernel since 6.11).
 */
DEVRES_API int pcim_iomap_regions(struct pci_dev *pdev, int mask,
				  const char *name);

/**
 * pci_iomap() - map a BAR (not managed)
 * @dev: the device
 * @bar: a memory BAR, 0-5
 * @maxlen: map at most this many bytes; 0 for the whole BAR
 *
 * Maps the BAR's own resourceN file, checked as pcim_iomap() checks it;
 * give it back with pci_iounmap(). A mapping may outlive the device: it
 * stays valid, as a mapping of a file.
 *
 * Context: any thread. A fault-injection point.
 * Return: the address of the BAR's first register, or NULL as pcim_iomap().
 */
DEVRES_API void __iomem *pci_iomap(struct pci_dev *dev, int bar,
				   unsigned long maxlen);

/**
 * pci_iounmap() - unmap a pci_iomap() mapping
 * @dev: the device
 * @addr: what pci_iomap() returned, or NULL
 *
 * Unmaps a BAR mapping that pci_iomap() made for @dev; an @addr from
 * ioremap() is unmapped as iounmap() would. One from pcim_iomap() (or
 * devm_ioremap()) is a managed mapping released by hand: it WARNs,
 * naming its device and managed call, is unmapped now, and its node (and
 * pcim_iomap_table() slot) go with it, so the binding does not unmap it
 * again.
 *
 * Context: any thread. A WARN when @addr is a mapping of neither.
 */
DEVRES_API void pci_iounmap(struct pci_dev *dev, void __iomem *addr);

/**
 * pci_dev_set_irq_lines() - give a device its interrupt lines
 * @pdev: the device
 * @irqs: line numbers (irq_line_create(), irq_line_attach_fd()), each > 0
 * @n: how many; 0 forgets the lines
 *
 * Exists only in userspace, for backends and tests: a process gets a PCI
 * device's interrupts from VFIO's eventfds, UIO or a simulation, not from
 * the hardware. The first line also becomes @pdev->irq (the legacy
 * interrupt); with @n 0, @pdev->irq is 0 again. pci_alloc_irq_vectors() and pci_irq_vector() hand them out.
 *
 * Context: any thread; not while vectors are allocated.
 * Return: 0; -EBUSY while vectors are allocated; -EINVAL with a WARN for
 * a line <= 0, a NULL device or @irqs, or more than 2048 lines; -ENOMEM.
 */
DEVRES_API int pci_dev_set_irq_lines(struct pci_dev *pdev, const int *irqs,
				     unsigned int n);

/**
 * pci_dev_msi_enabled() - whether the device's vectors are MSI or MSI-X
 * @pdev: the device
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and gives false.
 *
 * Context: any thread.
 * Return: true while pci_alloc_irq_vectors() has handed out MSI or MSI-X
 * vectors that are not freed.
 */
static inline bool pci_dev_msi_enabled(const struct pci_dev *pdev)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("pci_dev_msi_enabled", "PCI device", pdev);
		return false;
	}
	return pdev->msi_enabled || pdev->msix_enabled;
}

/**
 * pci_alloc_irq_vectors() - allocate interrupt vectors
 * @dev: the device
 * @min_vecs: the fewest the driver can work with (at least 1)
 * @max_vecs: the most it wants
 * @flags: PCI_IRQ_INTX, PCI_IRQ_MSI, PCI_IRQ_MSIX (PCI_IRQ_ALL_TYPES)
 *
 * Hands out the lines registered with pci_dev_set_irq_lines(): up to
 * @max_vecs of them with MSI or MSI-X in @flags, one with INTx alone. Not
 * managed: vectors are per binding, and the PCI bus frees them when the
 * driver unbinds or its probe fails. It is a fault point. MSI-X is
 * preferred to MSI when @flags allows both and more than one line is
 * handed out: @msix_enabled or @msi_enabled is set until the vectors are
 * freed.
 *
 * Context: any thread; waits while another thread's pci_free_irq_vectors()
 * of the device is in its backend, as the kernel's take the device's MSI
 * lock. The wait is in the library's record of waits between threads: when
 * the thread in the backend waits, through waits of the library, for the
 * caller, it is refused with one WARN (-EINVAL, nothing allocated).
 * Return: the number of vectors; -ENOSPC when fewer than @min_vecs lines
 * exist; -EINVAL for bad arguments, vectors already allocated or being
 * allocated by another call, a call from inside the device's own free
 * of its vectors, or one the free waits for (a WARN); -EINVAL with one
 * WARN, nothing made, on a device whose backend (VFIO, UIO) makes the
 * vectors a node of the device, from a match or for-each callback of the
 * device (devres_find(), devres_for_each_res()); -ENOMEM; -EROFS
 * for a device a backend took (its vectors are set in the device) after
 * pci_sysfs_set_readonly(). A function removed from the bus while a
 * reference is held still gets vectors (its VFIO device stays open).
 */
DEVRES_API int pci_alloc_irq_vectors(struct pci_dev *dev, unsigned int min_vecs,
				     unsigned int max_vecs, unsigned int flags);

/**
 * pci_free_irq_vectors() - free the vectors of pci_alloc_irq_vectors()
 * @dev: the device
 *
 * Free the handlers first (free_irq()), as in the kernel: while a handler
 * is still requested on one of the vectors, the call WARNs and frees
 * nothing (the vectors and their handlers go on working).
 *
 * Context: any thread; waits while another thread's
 * pci_alloc_irq_vectors() or pci_free_irq_vectors() of the device is in
 * its backend, as the kernel's take the device's MSI lock (a call from
 * inside that one, which would wait for itself, WARNs and frees nothing).
 * The wait is in the library's record of waits between threads: when the
 * thread in the backend waits, through waits of the library, for the
 * caller, the call WARNs and frees nothing. The unbind's own release of
 * the vectors cannot refuse: it goes on without waiting, with one WARN.
 */
DEVRES_API void pci_free_irq_vectors(struct pci_dev *dev);

/**
 * pci_irq_vector() - the interrupt line of a vector
 * @dev: the device
 * @nr: the vector, below what pci_alloc_irq_vectors() returned; vector 0
 *      is also the legacy line when none were allocated
 *
 * Translates vector @nr of @dev (the MSI or MSI-X vectors
 * pci_alloc_irq_vectors() allocated, or the legacy line) into the interrupt
 * line number the irq functions take.
 *
 * Context: any thread.
 * Return: the line number, for request_irq() and devm_request_irq();
 * -EINVAL when @nr is out of range.
 */
DEVRES_API int pci_irq_vector(struct pci_dev *dev, unsigned int nr);

/**
 * pci_reset_function() - reset one function of a device
 * @dev: the device
 *
 * Resets the function and gives it back its config space, as the kernel's
 * pci_reset_function() does: the command register (bus mastering), the
 * BARs and the MSI or MSI-X state are saved before the reset and restored
 * after it, so that the vectors pci_alloc_irq_vectors() handed out, their
 * handlers and pci_set_master() hold across it. What the device itself
 * held (its registers, its queues, a transfer it was making) is gone.
 * Through VFIO it is VFIO_DEVICE_RESET, which the kernel makes with the
 * device's saved state; over sysfs, a write to the device's `reset` file.
 * Two resets of one device at once, or one racing the device's own reset
 * at unbind, wait for each other in the kernel.
 *
 * Context: any thread, an interrupt handler's included: it sleeps while
 * the device resets (a function level reset takes 100 ms or more), and
 * from a primary handler every line of the dispatcher waits as long.
 * Return: 0; -ENOTTY when the device has no reset the kernel can use
 * (VFIO does not offer VFIO_DEVICE_FLAGS_RESET, or sysfs has no `reset`
 * file); -EINVAL for a bad @dev; -ENODEV when the device is gone; -EROFS
 * after pci_sysfs_set_readonly(); -EAGAIN when the host holds the
 * device's lock (a bind or unbind there); another -errno from the
 * kernel's reset.
 */
DEVRES_API int pci_reset_function(struct pci_dev *dev);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_PCI_H */
