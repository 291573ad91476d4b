// SPDX-License-Identifier: MIT
/*
 * Config space through the device's sysfs `config` file, with the kernel's
 * return codes, capability walks and the command register's master bit.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "pci.h"

static int check(const struct pci_dev *dev, int where, int size,
		 const char *func)
{
	if (!pci__dev_ok(dev, func))
		return PCIBIOS_DEVICE_NOT_FOUND;
	if (where < 0 || (where & (size - 1)) || where > dev->cfg_size - size)
		return PCIBIOS_BAD_REGISTER_NUMBER;
	return PCIBIOS_SUCCESSFUL;
}

/*
 * A config file that holds less than the scan saw is the device's own
 * file cut short (a replaced one is refused when opened): said once per
 * call. Less than a read asked for, in a file as long as the scan saw,
 * is sysfs keeping a reader without privilege to the first 64 bytes.
 */
static void warn_shrunk(const struct pci_dev *dev, int fd)
{
	struct stat st;

	if (!fstat(fd, &st) && st.st_size < dev->p->files[PCI_F_CONFIG].size)
		dev_warn(&dev->dev,
			 "config holds %lld bytes, the scan saw %lld",
			 (long long)st.st_size,
			 (long long)dev->p->files[PCI_F_CONFIG].size);
}

/*
 * The sysfs read, with why it failed: -EMFILE, -ENFILE or -ENOMEM when
 * the process could not open the file, -ENODEV when the file is not the
 * scan's or holds too little, -EIO when reading it failed.
 */
static int sysfs_read(const struct pci_dev *dev, int where, int size,
		      uint32_t *val)
{
	uint8_t b[4];
	ssize_t n;
	int fd;

	fd = pci__open(dev, "config", O_RDONLY);
	if (fd < 0)
		return pci__out_of_resources(fd) ? fd : -ENODEV;
	n = pci__pread(fd, b, (size_t)size, where);
	/* Past the 64 bytes an unprivileged reader gets, sysfs reads 0. */
	if (n >= 0 && n != size)
		warn_shrunk(dev, fd);
	pci__close(fd);
	if (n != size)
		return n < 0 ? -EIO : -ENODEV;
	*val = 0;
	for (int i = size - 1; i >= 0; i--)
		*val = *val << 8 | b[i];
	return 0;
}

static int cfg_read(const struct pci_dev *dev, int where, int size,
		    uint32_t *val, const char *func)
{
	int ret;

	*val = ~0u;
	ret = check(dev, where, size, func);
	if (ret)
		return ret;
	if (pci__bk(dev, cfg_read))
		return pci__bk_cfg_read(dev, where, size, val);
	return sysfs_read(dev, where, size, val) ? PCIBIOS_DEVICE_NOT_FOUND
						 : PCIBIOS_SUCCESSFUL;
}

static int cfg_write(const struct pci_dev *dev, int where, int size,
		     uint32_t val, const char *func)
{
	struct stat st;
	uint8_t b[4];
	ssize_t n;
	int fd, ret;

	ret = check(dev, where, size, func);
	if (ret)
		return ret;
	/* Read-only mode holds for a backend's device too (bkops.c). */
	if (pci__bk(dev, cfg_write))
		return pci__bk_cfg_write(dev, where, size, val);
	if (pci__readonly())
		return PCIBIOS_SET_FAILED;
	for (int i = 0; i < size; i++)
		b[i] = (uint8_t)(val >> (8 * i));
	fd = pci__open(dev, "config", O_WRONLY);
	if (fd < 0)
		return PCIBIOS_SET_FAILED;
	/* Never past the end of the file: a write there would grow it. */
	if (fstat(fd, &st) || st.st_size < where + size) {
		warn_shrunk(dev, fd);
		n = -1;
	} else {
		n = pci__pwrite(fd, b, (size_t)size, where);
	}
	pci__close(fd);
	return n == size ? PCIBIOS_SUCCESSFUL : PCIBIOS_SET_FAILED;
}

/* A dword of config space, as a check of the device reads it. */
static int read_dword(const struct pci_dev *pdev, int where, uint32_t *val)
{
	*val = ~0u;
	if (pci__bk(pdev, cfg_read))
		return cfg_read(pdev, where, 4, val, "pci__check_ids") ? -ENODEV
								       : 0;
	return sysfs_read(pdev, where, 4, val);
}

/*
 * What a driver matched at its probe, and reads at its enable, is what
 * the scan read: ids, class and revision, header type, and the subsystem
 * ids of a normal header. A function the tree now shows otherwise (another device
 * behind the same ids, one that was replaced) is not the one matched.
 */
int pci__check_ids(const struct pci_dev *pdev)
{
	uint32_t id, cls, hdr, sub = 0, want_sub = 0;
	uint32_t want_cls = (uint32_t)pdev->DEVRES_PCI_CLASS << 8 |
			    pdev->revision;
	int ret;

	ret = read_dword(pdev, PCI_VENDOR_ID, &id);
	if (!ret)
		ret = read_dword(pdev, PCI_CLASS_REVISION, &cls);
	/* The header type's byte, in its dword (third byte). */
	if (!ret)
		ret = read_dword(pdev, PCI_HEADER_TYPE & ~3, &hdr);
	if (!ret && pdev->hdr_type == PCI_HEADER_TYPE_NORMAL) {
		ret = read_dword(pdev, PCI_SUBSYSTEM_VENDOR_ID, &sub);
		want_sub = (uint32_t)pdev->subsystem_device << 16 |
			   pdev->subsystem_vendor;
	}
	/* A process out of fds has not lost the device: it says which. */
	if (ret)
		return pci__out_of_resources(ret) ? ret : -ENODEV;
	if (id != ((uint32_t)pdev->device << 16 | pdev->vendor)) {
		dev_warn(&pdev->dev,
			 "config shows %04x:%04x, not the scanned ids",
			 id & 0xffff, id >> 16);
		return -ENODEV;
	}
	hdr = hdr >> 16 & PCI_HEADER_TYPE_MASK;
	if (cls != want_cls || sub != want_sub || hdr != pdev->hdr_type) {
		dev_warn(&pdev->dev,
			 "config shows class %06x rev %02x header %u subsystem "
			 "%04x:%04x, not what the scan read",
			 cls >> 8, cls & 0xff, hdr, sub & 0xffff, sub >> 16);
		return -ENODEV;
	}
	return 0;
}

int pci_read_config_byte(const struct pci_dev *dev, int where, uint8_t *val)
{
	uint32_t v;
	int ret;

	if (devres__arg_bad(NULL, val, __func__, "value"))
		return PCIBIOS_BAD_REGISTER_NUMBER;
	ret = cfg_read(dev, where, 1, &v, __func__);
	*val = (uint8_t)v;
	return ret;
}

int pci_read_config_word(const struct pci_dev *dev, int where, uint16_t *val)
{
	uint32_t v;
	int ret;

	if (devres__arg_bad(NULL, val, __func__, "value"))
		return PCIBIOS_BAD_REGISTER_NUMBER;
	ret = cfg_read(dev, where, 2, &v, __func__);
	*val = (uint16_t)v;
	return ret;
}

int pci_read_config_dword(const struct pci_dev *dev, int where, uint32_t *val)
{
	if (devres__arg_bad(NULL, val, __func__, "value"))
		return PCIBIOS_BAD_REGISTER_NUMBER;
	return cfg_read(dev, where, 4, val, __func__);
}

int pci_write_config_byte(const struct pci_dev *dev, int where, uint8_t val)
{
	return cfg_write(dev, where, 1, val, __func__);
}

int pci_write_config_word(const struct pci_dev *dev, int where, uint16_t val)
{
	return cfg_write(dev, where, 2, val, __func__);
}

int pci_write_config_dword(const struct pci_dev *dev, int where, uint32_t val)
{
	return cfg_write(dev, where, 4, val, __func__);
}

/* At most 48 capabilities fit in config space: a longer list loops. */
#define CAP_TTL 48

static uint8_t find_cap_from(struct pci_dev *dev, uint8_t pos, int cap)
{
	int ttl = CAP_TTL;
	uint16_t ent;

	if (pci_read_config_byte(dev, pos, &pos))
		return 0;
	while (ttl--) {
		pos &= 0xfc;
		if (pos < 0x40)
			break;
		if (pci_read_config_word(dev, pos, &ent))
			break;
		if ((ent & 0xff) == 0xff)
			break;
		if ((ent & 0xff) == cap)
			return pos;
		pos = (uint8_t)(ent >> 8);
	}
	return 0;
}

uint8_t pci_find_capability(struct pci_dev *dev, int cap)
{
	uint16_t status;
	uint8_t ptr;

	if (!pci__dev_ok(dev, __func__) ||
	    pci_read_config_word(dev, PCI_STATUS, &status) ||
	    !(status & PCI_STATUS_CAP_LIST))
		return 0;
	ptr = dev->hdr_type == PCI_HEADER_TYPE_CARDBUS ? PCI_CB_CAPABILITY_LIST
						       : PCI_CAPABILITY_LIST;
	return find_cap_from(dev, ptr, cap);
}

uint8_t pci_find_next_capability(struct pci_dev *dev, uint8_t pos, int cap)
{
	if (!pci__dev_ok(dev, __func__))
		return 0;
	return find_cap_from(dev, (uint8_t)(pos + PCI_CAP_LIST_NEXT), cap);
}

uint16_t pci_find_ext_capability(struct pci_dev *dev, int cap)
{
	/* Each capability takes at least 8 bytes. */
	int ttl = (PCI_CFG_SPACE_EXP_SIZE - PCI_CFG_SPACE_SIZE) / 8;
	int pos = PCI_CFG_SPACE_SIZE;
	uint32_t header;

	if (!pci__dev_ok(dev, __func__) || dev->cfg_size <= PCI_CFG_SPACE_SIZE)
		return 0;
	if (pci_read_config_dword(dev, pos, &header) || header == 0 ||
	    header == ~0u)
		return 0;
	while (ttl-- > 0) {
		if ((int)PCI_EXT_CAP_ID(header) == cap)
			return (uint16_t)pos;
		pos = (int)PCI_EXT_CAP_NEXT(header);
		if (pos < PCI_CFG_SPACE_SIZE)
			break;
		if (pci_read_config_dword(dev, pos, &header))
			break;
	}
	return 0;
}

/*
 * While the device is enabled through sysfs, mastering is set and cleared
 * through one config file kept open from then until the disable, which
 * clears it through that file too: a tree whose config file was replaced,
 * or could not be opened for a moment, would otherwise have it set in one
 * file and cleared in another (or in none), and the device's own file left
 * mastering after the release. A set that cannot open it sets nothing.
 * True when the device is so enabled.
 */
static bool master_kept(struct pci_dev *dev, bool on)
{
	bool kept;

	pthread_mutex_lock(&dev->p->lock);
	kept = pci__kept_check(dev);
	if (kept)
		(void)pci__master_kept(dev, on);
	pthread_mutex_unlock(&dev->p->lock);
	return kept;
}

static void set_master(struct pci_dev *dev, bool on)
{
	const char *func = on ? "pci_set_master" : "pci_clear_master";
	uint16_t cmd, want;

	if (!pci__dev_ok(dev, func))
		return;
	if (!pci__readonly() && master_kept(dev, on))
		return;
	if (pci_read_config_word(dev, PCI_COMMAND, &cmd))
		return;
	want = on ? (uint16_t)(cmd | PCI_COMMAND_MASTER)
		  : (uint16_t)(cmd & ~PCI_COMMAND_MASTER);
	if (want != cmd && pci_write_config_word(dev, PCI_COMMAND, want))
		return;
	dev->is_busmaster = on;
}

/*
 * Void: the caller cannot see a failed config access, so the accesses
 * here are no fault points (a failure injected here would test nothing).
 */
void pci_set_master(struct pci_dev *dev)
{
	devres__fault_hide();
	set_master(dev, true);
	devres__fault_show();
}

void pci_clear_master(struct pci_dev *dev)
{
	devres__fault_hide();
	set_master(dev, false);
	devres__fault_show();
}
