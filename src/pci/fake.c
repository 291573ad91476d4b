// SPDX-License-Identifier: MIT
/*
 * The fake sysfs tree of devres/pci_fake.h: ordinary files in a directory
 * of its own, laid out as sysfs lays out PCI devices.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <devres/pci_fake.h>
#include "pci.h"

struct pci_fake {
	char *root;
	uint64_t mem_next;
	uint64_t io_next;
};

struct pci_fake *pci_fake_create(void)
{
	static const char *const dirs[] = { "bus", "bus/pci", PCI_DEVICES_DIR,
					    "devices" };
	const char *tmp = secure_getenv("TMPDIR");
	struct pci_fake *t;
	char path[4096];

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->mem_next = 0xc0000000u;
	t->io_next = 0x1000;
	if (snprintf(path, sizeof(path), "%s/devres-pci-XXXXXX",
		     tmp && *tmp ? tmp : "/tmp") >= (int)sizeof(path))
		goto fail_len;
	if (!mkdtemp(path))
		goto fail;
	t->root = strdup(path);
	if (!t->root) {
		rmdir(path);
		goto fail;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", t->root, dirs[i]);
		if (mkdir(path, 0755))
			goto fail_rm;
	}
	return t;

fail_len:
	errno = ENAMETOOLONG;
	goto fail;
fail_rm:
	pci_fake_destroy(t);
	return NULL;
fail:
	free(t);
	return NULL;
}

const char *pci_fake_root(const struct pci_fake *tree)
{
	if (devres__arg_bad(NULL, tree, __func__, "tree"))
		return NULL;
	return tree->root;
}

int pci_fake_path(const struct pci_fake *tree, const char *name,
		  const char *file, char *buf, size_t len)
{
	int n;

	if (devres__arg_bad(NULL, tree, __func__, "tree") ||
	    devres__arg_bad(NULL, name, __func__, "name") ||
	    devres__opt_bad(NULL, file, __func__, "file") ||
	    devres__arg_bad(NULL, buf, __func__, "buffer"))
		return -EINVAL;
	n = file ? snprintf(buf, len, "%s/devices/%s/%s", tree->root, name,
			    file)
		 : snprintf(buf, len, "%s/devices/%s", tree->root, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int write_file(const struct pci_fake *t, const char *name,
		      const char *file, const void *data, size_t len,
		      off_t size)
{
	char path[4096];
	ssize_t n;
	int fd, ret = 0;

	ret = pci_fake_path(t, name, file, path, sizeof(path));
	if (ret)
		return ret;
	devres__own_fd_opening();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	devres__own_fd_opened(fd, DEVRES_OWN_PCI_FILE, "the fake PCI tree");
	if (fd < 0)
		return -errno;
	n = len ? write(fd, data, len) : 0;
	if (n < 0 || (size_t)n != len)
		ret = n < 0 ? -errno : -EIO;
	if (!ret && size > (off_t)len && ftruncate(fd, size))
		ret = -errno;
	devres__own_fd_close(fd);
	return ret;
}

/* A number as sysfs prints it: hex with @width digits, or decimal for 0. */
static int write_text(const struct pci_fake *t, const char *name,
		      const char *file, int width, unsigned long v)
{
	char buf[64];
	int n = width ? snprintf(buf, sizeof(buf), "0x%0*lx\n", width, v)
		      : snprintf(buf, sizeof(buf), "%lu\n", v);

	return write_file(t, name, file, buf, (size_t)n, 0);
}

static void put16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Chooses each BAR's address and fills its registers and sysfs line. */
static int place_bars(struct pci_fake *t, const struct pci_fake_dev *d,
		      uint8_t *cfg, char *res, size_t reslen)
{
	size_t used = 0;

	for (int i = 0; i < PCI_NUM_RESOURCES - 4; i++) {
		uint64_t start = 0, end = 0, size = 0;
		unsigned long flags = 0;

		if (i < PCI_STD_NUM_BARS && d->bar_size[i]) {
			uint64_t *next;

			size = d->bar_size[i];
			flags = d->bar_flags[i];
			if (!is_pow2(size) ||
			    (resource_type(&(struct resource){
				     .flags = flags }) != IORESOURCE_MEM &&
			     resource_type(&(struct resource){
				     .flags = flags }) != IORESOURCE_IO))
				return -EINVAL;
			next = (flags & IORESOURCE_IO) ? &t->io_next
						       : &t->mem_next;
			start = (*next + size - 1) & ~(size - 1);
			end = start + size - 1;
			*next = end + 1;
			put32(cfg + PCI_BASE_ADDRESS_0 + 4 * (size_t)i,
			      (uint32_t)start |
				      ((flags & IORESOURCE_IO) ? 1 : 0));
		}
		used += (size_t)snprintf(res + used, reslen - used,
					 "0x%016llx 0x%016llx 0x%016llx\n",
					 (unsigned long long)start,
					 (unsigned long long)end,
					 (unsigned long long)flags);
	}
	return (int)used;
}

int pci_fake_add(struct pci_fake *tree, const struct pci_fake_dev *d)
{
	char res[PCI_NUM_RESOURCES * 60], path[4096], link[64];
	unsigned int dom, bus, devfn;
	size_t cfg_size;
	uint8_t *cfg;
	int ret, n;

	if (devres__arg_bad(NULL, tree, __func__, "tree") ||
	    devres__arg_bad(NULL, d, __func__, "description") ||
	    devres__arg_bad(NULL, d->name, __func__, "name") ||
	    pci__parse_name(d->name, &dom, &bus, &devfn) || d->vendor == 0 ||
	    d->vendor == 0xffff)
		return -EINVAL;
	cfg_size = d->cfg_size ? d->cfg_size : PCI_CFG_SPACE_SIZE;
	if (cfg_size < 64 || cfg_size > PCI_CFG_SPACE_EXP_SIZE)
		return -EINVAL;
	cfg = calloc(1, cfg_size);
	if (!cfg)
		return -ENOMEM;
	put16(cfg + PCI_VENDOR_ID, d->vendor);
	put16(cfg + PCI_DEVICE_ID, d->device);
	put32(cfg + PCI_CLASS_REVISION,
	      (uint32_t)d->DEVRES_PCI_CLASS << 8 | d->revision);
	put16(cfg + PCI_SUBSYSTEM_VENDOR_ID, d->subsystem_vendor);
	put16(cfg + PCI_SUBSYSTEM_ID, d->subsystem_device);
	cfg[PCI_INTERRUPT_PIN] = d->irq ? 1 : 0;
	cfg[PCI_INTERRUPT_LINE] = (uint8_t)d->irq;
	n = place_bars(tree, d, cfg, res, sizeof(res));
	ret = n < 0 ? n
		    : pci_fake_path(tree, d->name, NULL, path, sizeof(path));
	if (ret)
		goto out;
	if (mkdir(path, 0755)) {
		ret = -errno;
		goto out;
	}
	ret = write_file(tree, d->name, "config", cfg, cfg_size, 0);
	if (!ret)
		ret = write_file(tree, d->name, "resource", res, (size_t)n, 0);
	for (int i = 0; !ret && i < PCI_STD_NUM_BARS; i++) {
		char file[24];

		if (!d->bar_size[i])
			continue;
		snprintf(file, sizeof(file), "resource%d", i);
		ret = write_file(tree, d->name, file, NULL, 0,
				 (off_t)d->bar_size[i]);
	}
	if (!ret)
		ret = write_text(tree, d->name, "enable", 0, 0);
	if (!ret && d->irq)
		ret = write_text(tree, d->name, "irq", 0, d->irq);
	if (!ret)
		ret = write_text(tree, d->name, "vendor", 4, d->vendor);
	if (!ret)
		ret = write_text(tree, d->name, "device", 4, d->device);
	if (!ret)
		ret = write_text(tree, d->name, "subsystem_vendor", 4,
				 d->subsystem_vendor);
	if (!ret)
		ret = write_text(tree, d->name, "subsystem_device", 4,
				 d->subsystem_device);
	if (!ret)
		ret = write_text(tree, d->name, "class", 6,
				 d->DEVRES_PCI_CLASS);
	if (!ret)
		ret = write_text(tree, d->name, "revision", 2, d->revision);
	if (!ret) {
		snprintf(link, sizeof(link), "../../../devices/%s", d->name);
		snprintf(path, sizeof(path), "%s/" PCI_DEVICES_DIR "/%s",
			 tree->root, d->name);
		if (symlink(link, path))
			ret = -errno;
	}
	if (ret && ret != -EEXIST)
		(void)pci_fake_remove(tree, d->name);
out:
	free(cfg);
	return ret;
}

static int rm_entry(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path) ? -1 : 0;
	return unlink(path) ? -1 : 0;
}

static int rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) ? -errno : 0;
	/* FTW_PHYS: a symlink a test planted is removed, never followed. */
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) ? -errno : 0;
}

int pci_fake_remove(struct pci_fake *tree, const char *name)
{
	char path[4096];
	int r1, r2;

	if (devres__arg_bad(NULL, tree, __func__, "tree") ||
	    devres__arg_bad(NULL, name, __func__, "name") ||
	    strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/" PCI_DEVICES_DIR "/%s", tree->root,
		 name);
	r1 = unlink(path) ? -errno : 0;
	snprintf(path, sizeof(path), "%s/devices/%s", tree->root, name);
	r2 = rm_tree(path);
	if (r1 == -ENOENT && r2 == -ENOENT)
		return -ENOENT;
	return r1 && r1 != -ENOENT ? r1 : (r2 == -ENOENT ? 0 : r2);
}

void pci_fake_destroy(struct pci_fake *tree)
{
	int saved = errno;

	if (!tree || devres__arg_bad(NULL, tree, __func__, "tree"))
		return;
	if (tree->root)
		(void)rm_tree(tree->root);
	free(tree->root);
	free(tree);
	errno = saved;
}
