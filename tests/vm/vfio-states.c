// SPDX-License-Identifier: MIT
/*
 * vfio-states: the VFIO backend against the kernel's own VFIO, attacked by
 * class, with the edu driver (examples/edu/edu.c) on QEMU's edu devices:
 *
 *   1  each call in each state of a device (scanned, bound, unbound,
 *      removed with a reference held, freed), and pairs of calls from two
 *      threads;
 *   2  each VFIO resource the library holds, given back by hand: its fds
 *      closed, a BAR mapping and a DMA buffer unmapped, the IOMMU mapping
 *      and the interrupt vectors changed by ioctl() on its fds;
 *   3  fork(): a child of a parent that holds a bound device;
 *   4  threads: an interrupt thread that ends itself or unbinds its own
 *      device, an unbind racing interrupts;
 *   7  the device goes while it is used: deleted through its struct
 *      device during each call of class 1, and removed by the kernel
 *      (sysfs `remove`) while the library holds its fd; its group made
 *      non-viable while held.
 *
 * vfio-states.c has the helpers and main(); vfio-states-calls.c class 1,
 * vfio-states-hand.c class 2, vfio-states-fork.c classes 3 and 4.
 *
 * Each cell prints one line, "cell <class>.<name>: ok (...)" or
 * "cell <class>.<name>: FAILED: ..." with what it got and wanted: the
 * return, errno, the WARNs counted by devres_warn_count(), and what the
 * kernel shows (/proc/self/fd, /proc/self/maps, the device's interrupts
 * and DMA, a second open of its group).
 *
 * It opens /dev/vfio, so it runs only inside the test VM (tests/vm/run.sh,
 * which has /devres-vm); elsewhere it exits 77.
 */
#define _GNU_SOURCE /* close_range() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/vfio.h>
#include "vfio-states.h"

static int failures, cells;
char name_a[32], name_b[32];

void cell(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	cells++;
	printf("cell %s: %s", name, ok ? "ok (" : "FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("%s\n", ok ? ")" : "");
	if (!ok)
		failures++;
}

/* The lowest fd of this process whose target is @target, or -1. */
int fd_of(const char *target)
{
	char path[64], link[128];
	struct dirent *de;
	DIR *dir = opendir("/proc/self/fd");
	int found = -1;

	while (dir && (de = readdir(dir))) {
		int fd = atoi(de->d_name);
		ssize_t n;

		if (de->d_name[0] == '.' || fd == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, target) && (found < 0 || fd < found))
			found = fd;
	}
	if (dir)
		closedir(dir);
	return found;
}

/*
 * Of a @target, open files, not numbers: the library keeps a private
 * duplicate of each of its anonymous-inode descriptors (a VFIO device's
 * among them) to tell the number from a reused one, and a duplicate is
 * the same open file. With no @target, every number.
 */
static bool counted_already(const int *seen, int n, int fd)
{
	pid_t pid = getpid();

	for (int i = 0; i < n; i++)
		if (syscall(SYS_kcmp, pid, pid, KCMP_FILE, seen[i], fd) == 0)
			return true;
	return false;
}

int count_fds(const char *target)
{
	char path[64], link[128];
	struct dirent *de;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0, seen[256];

	while (dir && (de = readdir(dir))) {
		ssize_t len;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%.40s", de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		if (target && strcmp(link, target))
			continue;
		if (target && n < 256 &&
		    counted_already(seen, n, atoi(de->d_name)))
			continue;
		if (n < 256)
			seen[n] = atoi(de->d_name);
		n++;
	}
	if (dir)
		closedir(dir);
	return n;
}

/* Lines of /proc/self/maps that name @what (a VFIO device's BARs). */
int count_maps(const char *what)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, what))
			n++;
	if (f)
		fclose(f);
	return n;
}

int group_of(const char *name)
{
	char path[96], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group",
		 name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = '\0';
	return atoi(strrchr(link, '/') + 1);
}

const char *group_path(const char *name)
{
	static char path[32];

	snprintf(path, sizeof(path), "/dev/vfio/%d", group_of(name));
	return path;
}

/* The MSI enable bit as the host kernel set it: sysfs, not VFIO. */
int msi_on(struct pci_dev *pdev)
{
	uint8_t pos = pci_find_capability(pdev, PCI_CAP_ID_MSI), flags = 0;
	char path[96];
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config",
		 pci_name(pdev));
	f = fopen(path, "rb");
	if (pos && f && !fseek(f, pos + 2, SEEK_SET) && fread(&flags, 1, 1, f))
		ret = flags & 1;
	if (f)
		fclose(f);
	return ret;
}

/* Whether the group of @name can be opened now (by another process). */
int second_open(const char *name)
{
	int fd = open(group_path(name), O_RDWR | O_CLOEXEC);
	int err = errno;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return -err;
}

struct pci_dev *scan(const char *name)
{
	int ret = pci_bus_scan_device(name);
	struct pci_dev *p = NULL;

	if (ret) {
		printf("vfio-states: %s cannot be taken through VFIO: %s\n",
		       name, strerror(-ret));
		return NULL;
	}
	while ((p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, p)))
		if (!strcmp(pci_name(p), name))
			return p; /* its reference is the caller's */
	return NULL;
}

/* An interrupt (a factorial) and a DMA to the device and back. */
bool works(struct pci_dev *pdev)
{
	struct edu *edu = pci_get_drvdata(pdev);
	uint32_t r = 0;
	bool ok;

	if (!edu || edu_factorial(edu, 5, &r) || r != 120)
		return false;
	for (unsigned int i = 0; i < 64; i++)
		edu->buf[i] = (uint8_t)(i * 7 + 1);
	if (edu_dma(edu, edu->buf_dma, 0, 64, false))
		return false;
	memset(edu->buf, 0, 64);
	if (edu_dma(edu, edu->buf_dma, 0, 64, true))
		return false;
	ok = true;
	for (unsigned int i = 0; i < 64; i++)
		ok &= edu->buf[i] == (uint8_t)(i * 7 + 1);
	return ok;
}

int mappings(struct pci_dev *pdev)
{
	return pci_vfio_dma_mappings(pdev, NULL);
}

bool bind(struct pci_dev *pdev)
{
	return device_attach(&pdev->dev) == 1 && pci_get_drvdata(pdev);
}

/* A device's sysfs file as a number, or 0. */
static unsigned long sysfs_num(const char *name, const char *file)
{
	char path[300], buf[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", name, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoul(buf, NULL, 16);
}

/* The edu devices bound to vfio-pci, by name: A and B. */
static int find_names(void)
{
	struct dirent *de;
	DIR *dir = opendir("/sys/bus/pci/devices");
	int n = 0;

	while (dir && (de = readdir(dir))) {
		char path[300], buf[16] = "";

		if (de->d_name[0] == '.')
			continue;
		if (sysfs_num(de->d_name, "device") != EDU_DEVICE)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver",
			 de->d_name);
		if (readlink(path, buf, sizeof(buf)) < 0)
			continue;
		if (!n || strcmp(de->d_name, name_a) < 0) {
			if (n)
				snprintf(name_b, sizeof(name_b), "%s", name_a);
			snprintf(name_a, sizeof(name_a), "%.31s", de->d_name);
		} else if (!name_b[0] || strcmp(de->d_name, name_b) < 0) {
			snprintf(name_b, sizeof(name_b), "%.31s", de->d_name);
		}
		n++;
	}
	if (dir)
		closedir(dir);
	return n;
}

/* The NVMe controller bound to vfio-pci, by name; false when none. */
static bool find_nvme(char *name, size_t len)
{
	struct dirent *de;
	DIR *dir = opendir("/sys/bus/pci/devices");
	char path[300], link[64];
	bool found = false;
	ssize_t n;

	while (!found && dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.' ||
		    sysfs_num(de->d_name, "vendor") != NVME_VENDOR ||
		    sysfs_num(de->d_name, "device") != NVME_DEVICE)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver",
			 de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		found = strstr(link, "vfio-pci") != NULL;
		snprintf(name, len, "%.31s", de->d_name);
	}
	if (dir)
		closedir(dir);
	return found;
}

/* --reset: classes 5 and 6, on the NVMe controller. */
static int reset_main(void)
{
	char nvme[32];

	if (!find_nvme(nvme, sizeof(nvme))) {
		printf("vfio-states: no NVMe controller bound to vfio-pci\n");
		return 1;
	}
	printf("vfio-states: NVMe %s (group %d)\n", nvme, group_of(nvme));
	class5_reset(nvme);
	class6_msix(nvme);
	pci_bus_remove_all();
	printf("vfio-states: %d cells, %d failed\n", cells, failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mallopt(M_ARENA_MAX, 1);
	if (access("/devres-vm", F_OK)) {
		printf("vfio-states: runs only in the test VM\n");
		return 77;
	}
	signal(SIGALRM, on_alarm);
	if (find_names() < 1) {
		printf("vfio-states: no edu device bound to vfio-pci\n");
		return 1;
	}
	printf("vfio-states: A %s (group %d), B %s\n", name_a, group_of(name_a),
	       name_b[0] ? name_b : "none");
	edu_irq_types = PCI_IRQ_MSI;
	pci_vfio_enable();
	if (argc > 1 && !strcmp(argv[1], "--reset"))
		return reset_main();
	/* It registers the driver, after its first row: unbound. */
	class1_states();
	class1_pairs();
	class1_group();

	class2_hand();
	class3_fork();
	class4_threads();

	pci_unregister_driver(&edu_driver);
	pci_bus_remove_all();
	/* Unbound from here: what a scan takes stays scanned. */
	class7_deleted_during();
	class7_sysfs_remove();
	class7_group_non_viable();
	printf("vfio-states: %d cells, %d failed\n", cells, failures);
	return failures ? 1 : 0;
}
