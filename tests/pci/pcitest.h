/* SPDX-License-Identifier: MIT */
/*
 * What the PCI tests share: a fake sysfs tree per test (the fixture makes
 * it, points the PCI subsystem at it, and at teardown removes every device
 * and the tree and checks the ledger), and small file helpers.
 */
#ifndef DEVRES_TESTS_PCITEST_H
#define DEVRES_TESTS_PCITEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <devres/fault.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>

static struct pci_fake *ft;
static struct devres_ledger pci_base;

static inline int pci_setup(void **state)
{
	(void)state;
	ft = pci_fake_create();
	if (!ft || pci_sysfs_set_root(pci_fake_root(ft)))
		return -1;
	devres_ledger_snapshot(&pci_base);
	return 0;
}

static inline int pci_teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	pci_bus_remove_all();
	devres_ledger_snapshot(&now);
	pci_sysfs_set_readonly(false);
	if (pci_sysfs_set_root(NULL))
		return -1;
	pci_fake_destroy(ft);
	ft = NULL;
	return devres_ledger_diff(&pci_base, &now, stderr) ? -1 : 0;
}

/* A memory device with @nbars BARs of 4 KiB at 0000:00:<slot>.0. */
static inline struct pci_fake_dev fake_dev(const char *name,
					   unsigned short vendor,
					   unsigned short device, int nbars)
{
	struct pci_fake_dev d = {
		.name = name,
		.vendor = vendor,
		.device = device,
		.subsystem_vendor = 0x1af4,
		.subsystem_device = 0x1100,
		.class = 0x020000,
		.revision = 1,
		.irq = 11,
	};

	for (int i = 0; i < nbars; i++) {
		d.bar_size[i] = 4096;
		d.bar_flags[i] = IORESOURCE_MEM;
	}
	return d;
}

/* The contents of file @file of fake device @name, NUL-terminated. */
static inline ssize_t fake_read(const char *name, const char *file, char *buf,
				size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (pci_fake_path(ft, name, file, path, sizeof(path)))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

/* Replaces file @file of fake device @name with @len bytes of @data. */
static inline int fake_write(const char *name, const char *file,
			     const void *data, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (pci_fake_path(ft, name, file, path, sizeof(path)))
		return -1;
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/*
 * Rewrites file @file of fake device @name in place, as a device changes
 * its registers: the same file (a replaced one is another file to the
 * library), now holding @len bytes of @data.
 */
static inline int fake_overwrite(const char *name, const char *file,
				 const void *data, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (pci_fake_path(ft, name, file, path, sizeof(path)))
		return -1;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/*
 * How many mappings of files under the fake tree can be written, from
 * /proc/self/maps; -1 when it cannot be read. Include cmocka first.
 */
static inline int tree_writable_maps(void)
{
	char root[4096], line[8192];
	int n = 0;
	FILE *f;

	if (!realpath(pci_fake_root(ft), root))
		return -1;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char perms[8] = "";

		if (strstr(line, root) && sscanf(line, "%*s %7s", perms) == 1)
			n += perms[1] == 'w';
	}
	fclose(f);
	return n;
}

#endif /* DEVRES_TESTS_PCITEST_H */
