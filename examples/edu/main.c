// SPDX-License-Identifier: MIT
/*
 * edu: the driver of edu.c on QEMU's edu devices, reached through VFIO.
 *
 *   edu [--factorials N] [--dma N]   bind every edu device, check it is
 *                                    alive, compute N factorials (each
 *                                    completed by an interrupt), move N
 *                                    random blocks to the device and back
 *                                    through the IOMMU, unbind, and check
 *                                    that fds, mappings and the IOMMU's
 *                                    mappings are back where they were
 *   edu --sweep                      fail the probe at each acquisition
 *                                    in turn: nothing may leak
 *   edu --two                        two devices, bound and unbound in
 *                                    both orders
 *   edu --intx ...                   the same on INTx instead of MSI
 *   edu --memlock                    a bind with no locked memory allowed
 *                                    fails cleanly, then one with it works
 *   edu --crash                      a process killed in the middle of a
 *                                    DMA; the next one binds and works
 *   edu --scan NAME                  only take device NAME through VFIO
 *   edu --quiesce                    unbind while a DMA into the driver's
 *                                    buffer is pending: the device must
 *                                    stop mastering before the buffer is
 *                                    unmapped (no IOMMU fault at its IOVA)
 *   edu --uio ...                    the devices bound to uio_pci_generic,
 *                                    through UIO: INTx, DMA refused
 *   edu --uio-phys ...               the same with physical DMA addresses
 *                                    allowed (PCI_UIO_DMA_PHYS): every
 *                                    round trip must be right (the IOMMU
 *                                    group in passthrough)
 *   edu --uio-phys-blocked ...       the same under a translating IOMMU:
 *                                    no round trip may be right
 *
 * It opens /dev/vfio, so it runs only inside a VM made for it: one that
 * has /devres-vm (tests/vm/run.sh, make demo-vm); elsewhere it exits 77.
 * DEVRES_EDU_ANYWHERE=1 runs it in a guest of your own.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <malloc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/uio.h>
#include <devres/vfio.h>
#include "edu.h"

#define MAX_EDU 4

#if defined(__SANITIZE_ADDRESS__)
static const bool asan = true;
#else
static const bool asan = false;
#endif

static struct pci_dev *edus[MAX_EDU];
static int nr_edu;
static int failures;
/* Through UIO instead of VFIO; with physical DMA; expected to be blocked. */
static bool uio, uio_phys, dma_blocked;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("edu: FAILED: " __VA_ARGS__);                   \
			printf("\n");                                          \
			failures++;                                            \
		}                                                              \
	} while (0)

static unsigned int rnd(unsigned int n)
{
	return (unsigned int)random() % n;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What the process holds, as text: its fds' targets and its mappings. */
static char *snapshot(void)
{
	char *buf = NULL, path[300], target[256];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct dirent *de;
	DIR *dir = opendir("/proc/self/fd");
	FILE *maps;
	int c;

	while (dir && (de = readdir(dir))) {
		ssize_t n;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		target[n < 0 ? 0 : n] = '\0';
		fprintf(out, "fd %s %s\n", de->d_name, target);
	}
	if (dir)
		closedir(dir);
	/* AddressSanitizer's allocator maps memory of its own as it goes. */
	maps = asan ? NULL : fopen("/proc/self/maps", "r");
	while (maps && (c = getc(maps)) != EOF)
		putc(c, out);
	if (maps)
		fclose(maps);
	fclose(out);
	return buf;
}

static int count_lines(const char *s, const char *prefix)
{
	int n = 0;

	for (const char *p = s; p && *p; p = strchr(p, '\n') + 1) {
		if (!strncmp(p, prefix, strlen(prefix)))
			n++;
		if (!strchr(p, '\n'))
			break;
	}
	return n;
}

static uint32_t fact32(uint32_t n)
{
	uint32_t r = 1;

	while (n > 1)
		r *= n--;
	return r;
}

/* Config space as the host kernel sees it: sysfs, not through VFIO. */
static int sysfs_config(struct pci_dev *pdev, int where, void *buf, size_t len)
{
	char path[96];
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config",
		 pci_name(pdev));
	f = fopen(path, "rb");
	if (f && fseek(f, where, SEEK_SET) == 0 && fread(buf, 1, len, f) == len)
		ret = 0;
	if (f)
		fclose(f);
	return ret;
}

/* The enable bit of the MSI capability, as the host kernel set it. */
static bool msi_on(struct pci_dev *pdev)
{
	uint8_t pos = pci_find_capability(pdev, PCI_CAP_ID_MSI), flags[2];

	return pos && !sysfs_config(pdev, pos + 2, flags, 2) && (flags[0] & 1);
}

/* The command register's master bit, read from sysfs, not through VFIO. */
static int sysfs_master(struct pci_dev *pdev)
{
	uint8_t cmd[2];

	if (sysfs_config(pdev, PCI_COMMAND, cmd, 2))
		return -1;
	return (cmd[0] & PCI_COMMAND_MASTER) != 0;
}

static void work(struct pci_dev *pdev, int nfact, int ndma)
{
	struct edu *edu = pci_get_drvdata(pdev);
	unsigned long irqs0 = edu->irqs, bytes = 0;
	uint8_t *pattern = malloc(EDU_BUF_SIZE);
	int ok = 0;
	double t = now();

	CHECK(sysfs_master(pdev) == 1, "%s: bus master bit not set in config",
	      pci_name(pdev));
	for (int i = 0; i < nfact; i++) {
		uint32_t n = 1 + rnd(20), r = 0;

		if (edu_factorial(edu, n, &r) == 0 && r == fact32(n))
			ok++;
	}
	CHECK(ok == nfact, "%s: %d of %d factorials right", pci_name(pdev), ok,
	      nfact);
	printf("edu %s: %d of %d factorials right, %lu interrupts (%s), "
	       "%.2f s\n",
	       pci_name(pdev), ok, nfact, edu->irqs - irqs0,
	       msi_on(pdev) ? "MSI" : "INTx", now() - t);
	CHECK(edu->irqs - irqs0 == (unsigned long)nfact,
	      "%s: one interrupt per factorial", pci_name(pdev));

	if (!edu->buf) {
		dma_addr_t h;
		void *c = dma_alloc_coherent(&pdev->dev, 4096, &h, GFP_KERNEL);

		CHECK(!c, "%s: a DMA buffer without an IOMMU or consent",
		      pci_name(pdev));
		if (c)
			dma_free_coherent(&pdev->dev, 4096, c, h);
		CHECK(dma_set_mask(&pdev->dev, DMA_BIT_MASK(EDU_DMA_BITS)) ==
			      -EIO,
		      "%s: dma_set_mask() allowed", pci_name(pdev));
		printf("edu %s: DMA refused: no mask, no buffer\n",
		       pci_name(pdev));
		ndma = 0;
	}
	t = now();
	ok = 0;
	for (int i = 0; i < ndma && pattern; i++) {
		uint32_t off = rnd(EDU_XFER_MAX - 1);
		uint32_t len = 1 + rnd(EDU_XFER_MAX - off);
		uint32_t a = rnd((uint32_t)(edu->buf_size - len));
		uint32_t b = rnd((uint32_t)(edu->buf_size - len));
		bool same;

		for (uint32_t k = 0; k < len; k++)
			pattern[k] = (uint8_t)random();
		memcpy(edu->buf + a, pattern, len);
		if (edu_dma(edu, edu->buf_dma + a, off, len, false))
			continue;
		memset(edu->buf, 0, edu->buf_size);
		if (edu_dma(edu, edu->buf_dma + b, off, len, true))
			continue;
		same = !memcmp(edu->buf + b, pattern, len);
		for (uint32_t k = 0; k < edu->buf_size && same; k++)
			same = (k >= b && k < b + len) || !edu->buf[k];
		ok += same;
		bytes += 2 * len;
	}
	CHECK(ok == (dma_blocked ? 0 : ndma),
	      "%s: %d of %d DMA round trips right", pci_name(pdev), ok, ndma);
	if (ndma)
		printf("edu %s: %d of %d random blocks %s and back, "
		       "%lu bytes checked, %.2f s\n",
		       pci_name(pdev), ok, ndma,
		       !uio	     ? "through the IOMMU"
		       : dma_blocked ? "at physical addresses (translating "
				       "IOMMU)"
				     : "at physical addresses (passthrough)",
		       bytes, now() - t);
	/*
	 * Below, a pool block, a streaming buffer and an unmapped IOVA: with
	 * physical addresses the last would be a real page of the guest.
	 */
	if (uio)
		ndma = 0;

	/* A pool block and a streaming mapping, each to the device and back. */
	if (ndma && pattern) {
		dma_addr_t h, h2;
		uint8_t *blk = dma_pool_alloc(edu->pool, GFP_KERNEL, &h);
		uint8_t *s1 = malloc(1000), *s2 = calloc(1, 1000);
		bool pool_ok = false, stream_ok = false;

		for (uint32_t k = 0; k < EDU_BLOCK; k++)
			pattern[k] = (uint8_t)random();
		if (blk) {
			memcpy(blk, pattern, EDU_BLOCK);
			pool_ok = !edu_dma(edu, h, 100, EDU_BLOCK, false);
			memset(blk, 0, EDU_BLOCK);
			pool_ok = pool_ok &&
				  !edu_dma(edu, h, 100, EDU_BLOCK, true) &&
				  !memcmp(blk, pattern, EDU_BLOCK);
			dma_pool_free(edu->pool, blk, h);
		}
		CHECK(pool_ok, "%s: a pool block's round trip", pci_name(pdev));
		for (int k = 0; s1 && k < 1000; k++)
			s1[k] = (uint8_t)random();
		h = s1 ? dma_map_single(&pdev->dev, s1, 1000, DMA_TO_DEVICE)
		       : DMA_MAPPING_ERROR;
		h2 = s2 ? dma_map_single(&pdev->dev, s2, 1000, DMA_FROM_DEVICE)
			: DMA_MAPPING_ERROR;
		if (!dma_mapping_error(&pdev->dev, h) &&
		    !dma_mapping_error(&pdev->dev, h2)) {
			stream_ok = h < (1u << EDU_DMA_BITS) &&
				    h2 < (1u << EDU_DMA_BITS) &&
				    !edu_dma(edu, h, 2000, 1000, false) &&
				    !edu_dma(edu, h2, 2000, 1000, true);
		}
		if (!dma_mapping_error(&pdev->dev, h))
			dma_unmap_single(&pdev->dev, h, 1000, DMA_TO_DEVICE);
		if (!dma_mapping_error(&pdev->dev, h2))
			dma_unmap_single(&pdev->dev, h2, 1000, DMA_FROM_DEVICE);
		stream_ok = stream_ok && !memcmp(s1, s2, 1000);
		CHECK(stream_ok, "%s: a streaming mapping's round trip",
		      pci_name(pdev));
		printf("edu %s: a pool block and a streaming buffer to the "
		       "device and back: %s\n",
		       pci_name(pdev),
		       pool_ok && stream_ok ? "right" : "WRONG");
		free(s1);
		free(s2);
	}

	/* An IOVA nobody mapped: the IOMMU must drop the write. */
	if (ndma) {
		memset(edu->buf, 0, edu->buf_size);
		CHECK(edu_dma(edu, 0x1000, 0, 64, true) == 0,
		      "%s: no interrupt for the blocked DMA", pci_name(pdev));
		for (size_t k = 0; k < edu->buf_size; k++)
			if (edu->buf[k]) {
				CHECK(0, "%s: a DMA to an unmapped IOVA landed",
				      pci_name(pdev));
				break;
			}
		printf("edu %s: a DMA to unmapped IOVA 0x1000 reached "
		       "nothing\n",
		       pci_name(pdev));
	}
	free(pattern);
}

static bool in_vm(void)
{
	const char *any = getenv("DEVRES_EDU_ANYWHERE");

	return !access("/devres-vm", F_OK) || (any && !strcmp(any, "1"));
}

/* Registers each edu device, and no other, through VFIO. */
static int find_edus(void)
{
	struct dirent *de;
	DIR *dir = opendir("/sys/bus/pci/devices");
	int ret;

	if (uio)
		pci_uio_enable(NULL, uio_phys ? PCI_UIO_DMA_PHYS : 0);
	else
		pci_vfio_enable();
	while (dir && (de = readdir(dir)) && nr_edu < MAX_EDU) {
		char path[300], link[256];
		unsigned int v = 0, d = 0;
		ssize_t n;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%x", &v) != 1)
			v = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%x", &d) != 1)
			d = 0;
		fclose(f);
		if (v != EDU_VENDOR || d != EDU_DEVICE)
			continue;
		/* Through UIO, only the devices uio_pci_generic has. */
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver",
			 de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		link[n < 0 ? 0 : n] = '\0';
		if (uio && (!strrchr(link, '/') ||
			    strcmp(strrchr(link, '/'), "/uio_pci_generic")))
			continue;
		ret = pci_bus_scan_device(de->d_name);
		if (ret) {
			printf("edu: %s cannot be taken through %s: %s\n",
			       de->d_name, uio ? "UIO" : "VFIO",
			       strerror(-ret));
			continue;
		}
	}
	if (dir)
		closedir(dir);
	for (struct pci_dev *p = NULL;
	     nr_edu < MAX_EDU &&
	     (p = pci_get_device(EDU_VENDOR, EDU_DEVICE, p));) {
		if (uio ? pci_dev_is_uio(p) : pci_dev_is_vfio(p))
			edus[nr_edu++] = pci_dev_get(p);
		else
			printf("edu: %s is not reached through %s\n",
			       pci_name(p), uio ? "UIO" : "VFIO");
	}
	return nr_edu;
}

static int run(int nfact, int ndma)
{
	char *before, *after;
	int ret;

	/*
	 * Once first, with an interrupt: the interrupt thread's stack stays
	 * cached after it, and so does the malloc arena it makes when a
	 * handler (or UIO's unmask, through config space) first allocates.
	 */
	ret = pci_register_driver(&edu_driver);
	if (ret)
		return 1;
	for (int i = 0; i < nr_edu; i++) {
		struct edu *edu = pci_get_drvdata(edus[i]);
		uint32_t r;

		if (edu)
			(void)edu_factorial(edu, 1, &r);
	}
	pci_unregister_driver(&edu_driver);
	before = snapshot();

	ret = pci_register_driver(&edu_driver);
	CHECK(!ret, "pci_register_driver: %d", ret);
	for (int i = 0; i < nr_edu; i++) {
		uint64_t bytes = 0;

		CHECK(pci_get_drvdata(edus[i]), "%s: not bound",
		      pci_name(edus[i]));
		if (!pci_get_drvdata(edus[i]))
			continue;
		if (uio)
			printf("edu %s: bound through UIO, alive, DMA %s "
			       "%#llx\n",
			       pci_name(edus[i]),
			       uio_phys ? "by physical address, buffer at"
					: "refused, buffer handle",
			       (unsigned long long)((struct edu *)
							    pci_get_drvdata(
								    edus[i]))
				       ->buf_dma);
		else
			printf("edu %s: bound through VFIO, alive, %d IOMMU "
			       "mapping(s) of %llu bytes\n",
			       pci_name(edus[i]),
			       pci_vfio_dma_mappings(edus[i], &bytes),
			       (unsigned long long)bytes);
		work(edus[i], nfact, ndma);
	}
	pci_unregister_driver(&edu_driver);

	after = snapshot();
	for (int i = 0; i < nr_edu; i++) {
		CHECK(uio || pci_vfio_dma_mappings(edus[i], NULL) == 0,
		      "%s: IOMMU mappings left", pci_name(edus[i]));
		CHECK(sysfs_master(edus[i]) == 0, "%s: still bus master",
		      pci_name(edus[i]));
	}
	CHECK(before && after && !strcmp(before, after),
	      "fds or mappings differ after unbind:\n--- before\n%s--- "
	      "after\n%s",
	      before, after);
	printf("edu: after unbind: %d fds, %d mappings, %sbus master off: "
	       "as before the bind\n",
	       count_lines(after, "fd "),
	       count_lines(after, "") - count_lines(after, "fd "),
	       uio ? "" : "0 IOMMU mappings, ");
	free(before);
	free(after);
	return 0;
}

static int sweep(void)
{
	struct devres_sweep_result r = { 0 };
	int warns = devres_warn_count(), ret;

	ret = pci_register_driver(&edu_driver);
	if (ret)
		return 1;
	for (int i = 0; i < nr_edu; i++)
		device_release_driver(&edus[i]->dev);
	ret = driver_probe_sweep(&edu_driver.driver, &edus[0]->dev, &r);
	pci_unregister_driver(&edu_driver);
	printf("edu %s: probe swept: %u failure points, %u leaks, %d WARN, "
	       "%d IOMMU mappings left\n",
	       pci_name(edus[0]), r.points, r.leaks,
	       devres_warn_count() - warns,
	       pci_vfio_dma_mappings(edus[0], NULL));
	CHECK(ret == 0 && r.leaks == 0 && r.points > 0, "sweep: %d", ret);
	CHECK(devres_warn_count() == warns, "WARNs during the sweep");
	CHECK(pci_vfio_dma_mappings(edus[0], NULL) == 0, "IOMMU mappings left");
	CHECK(sysfs_master(edus[0]) == 0, "still bus master");
	return 0;
}

static void bind_all(struct pci_dev **order)
{
	for (int i = 0; i < 2; i++) {
		int ret = device_driver_attach(&edu_driver.driver,
					       &order[i]->dev);

		CHECK(!ret, "%s: bind: %d", pci_name(order[i]), ret);
	}
}

static void check_works(void)
{
	for (int i = 0; i < 2; i++) {
		struct edu *edu = pci_get_drvdata(edus[i]);
		uint32_t r = 0;

		CHECK(edu && edu_factorial(edu, 10, &r) == 0 && r == fact32(10),
		      "%s: no factorial", pci_name(edus[i]));
	}
}

static int two(void)
{
	struct pci_dev *ab[2] = { edus[0], edus[1] },
		       *ba[2] = { edus[1], edus[0] };
	char *before, *after;

	if (nr_edu < 2) {
		CHECK(0, "two edu devices needed, %d found", nr_edu);
		return 1;
	}
	pci_register_driver(&edu_driver);
	for (int i = 0; i < 2; i++)
		device_release_driver(&edus[i]->dev);
	before = snapshot();
	for (int round = 0; round < 2; round++) {
		bind_all(ab);
		check_works();
		for (int i = 0; i < 2; i++)
			device_release_driver(&(round ? ba : ab)[i]->dev);
		bind_all(ba);
		check_works();
		for (int i = 0; i < 2; i++)
			device_release_driver(&(round ? ab : ba)[i]->dev);
	}
	after = snapshot();
	pci_unregister_driver(&edu_driver);
	CHECK(before && after && !strcmp(before, after),
	      "fds or mappings differ:\n--- before\n%s--- after\n%s", before,
	      after);
	printf("edu: %s and %s bound A B / B A, unbound in both orders, "
	       "twice: %s\n",
	       pci_name(edus[0]), pci_name(edus[1]),
	       failures ? "FAILED" : "fds and mappings as before");
	free(before);
	free(after);
	return 0;
}

/* Whether the kernel logged an IOMMU fault at @iova since @kfd was opened. */
static bool iommu_fault_at(int kfd, uint64_t iova)
{
	char line[1024], want[64];
	bool found = false;
	ssize_t n;

	snprintf(want, sizeof(want), "fault addr 0x%llx ",
		 (unsigned long long)iova);
	while ((n = read(kfd, line, sizeof(line) - 1)) > 0) {
		line[n] = '\0';
		if (strstr(line, want))
			found = true;
	}
	return found;
}

static int quiesce(void)
{
	int kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct edu *edu;
	uint64_t iova;
	bool fault = false;

	if (kfd < 0 || lseek(kfd, 0, SEEK_END) < 0) {
		CHECK(0, "no /dev/kmsg");
		return 1;
	}
	pci_register_driver(&edu_driver);
	edu = pci_get_drvdata(edus[0]);
	CHECK(edu, "not bound");
	if (!edu) {
		pci_unregister_driver(&edu_driver);
		close(kfd);
		return 1;
	}
	/* The control: a fault the IOMMU reports is seen here. */
	edu_dma(edu, 0x1000, 0, 64, true);
	for (int i = 0; i < 20 && !fault; i++) {
		usleep(50 * 1000);
		fault = iommu_fault_at(kfd, 0x1000);
	}
	CHECK(fault, "no IOMMU fault logged for a DMA to "
		     "unmapped IOVA 0x1000");

	/*
	 * A DMA into the buffer, due 100 ms from now, then unbind at once.
	 * Pinned, the device stays enabled after unbind (and its master bit
	 * with it, but for the quiesce): only the quiesce stops the DMA.
	 */
	pcim_pin_device(edus[0]);
	iova = edu->buf_dma;
	writeq(EDU_BUF_ADDR, (char *)edu->regs + EDU_REG_DMA_SRC);
	writeq(iova, (char *)edu->regs + EDU_REG_DMA_DST);
	writeq(64, (char *)edu->regs + EDU_REG_DMA_CNT);
	writeq(EDU_DMA_RUN | EDU_DMA_TO_RAM,
	       (char *)edu->regs + EDU_REG_DMA_CMD);
	pci_unregister_driver(&edu_driver);
	usleep(500 * 1000);
	CHECK(!iommu_fault_at(kfd, iova),
	      "the device reached IOVA %#llx after its buffer was unmapped",
	      (unsigned long long)iova);
	if (!failures)
		printf("edu %s: unbound with a DMA pending into IOVA %#llx: "
		       "the "
		       "device stopped mastering first (no IOMMU fault; the "
		       "control "
		       "DMA to 0x1000 faulted)\n",
		       pci_name(edus[0]), (unsigned long long)iova);
	close(kfd);
	return 0;
}

/* Drops or raises CAP_IPC_LOCK in the effective set (kept permitted). */
static int ipc_lock_cap(bool on)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	if (on)
		d[0].effective |= 1u << CAP_IPC_LOCK;
	else
		d[0].effective &= ~(1u << CAP_IPC_LOCK);
	return (int)syscall(SYS_capset, &h, d);
}

static int memlock(void)
{
	struct rlimit old, none = { 0, 0 };
	struct devres_ledger before, after;
	int warns = devres_warn_count(), ret;

	getrlimit(RLIMIT_MEMLOCK, &old);
	none.rlim_max = old.rlim_max;
	devres_ledger_snapshot(&before);
	CHECK(!ipc_lock_cap(false) && !setrlimit(RLIMIT_MEMLOCK, &none),
	      "cannot drop CAP_IPC_LOCK or the limit");
	ret = pci_register_driver(&edu_driver);
	CHECK(!ret, "pci_register_driver: %d", ret);
	CHECK(!pci_get_drvdata(edus[0]), "bound with RLIMIT_MEMLOCK 0 and no "
					 "CAP_IPC_LOCK");
	pci_unregister_driver(&edu_driver);
	devres_ledger_snapshot(&after);
	CHECK(!devres_ledger_diff(&before, &after, stdout), "the failed probe "
							    "leaked");
	CHECK(pci_vfio_dma_mappings(edus[0], NULL) == 0, "IOMMU mappings left");
	printf("edu %s: no bind with RLIMIT_MEMLOCK 0: the probe failed, "
	       "nothing leaked\n",
	       pci_name(edus[0]));

	CHECK(!setrlimit(RLIMIT_MEMLOCK, &old) && !ipc_lock_cap(true),
	      "cannot restore CAP_IPC_LOCK or the limit");
	pci_register_driver(&edu_driver);
	CHECK(pci_get_drvdata(edus[0]), "no bind with the limit restored");
	if (pci_get_drvdata(edus[0]))
		work(edus[0], 10, 1);
	pci_unregister_driver(&edu_driver);
	CHECK(devres_warn_count() == warns, "WARNs");
	return 0;
}

/*
 * A child binds, starts a DMA into its buffer and is killed before it
 * ends: the kernel reclaims the group, the container and the pinned
 * memory, and the parent then binds the same device and uses it.
 */
static int crash(void)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		struct edu *edu;

		if (find_edus() < 1 || pci_register_driver(&edu_driver))
			_exit(1);
		edu = pci_get_drvdata(edus[0]);
		if (!edu)
			_exit(1);
		writeq(EDU_BUF_ADDR, (char *)edu->regs + EDU_REG_DMA_SRC);
		writeq(edu->buf_dma, (char *)edu->regs + EDU_REG_DMA_DST);
		writeq(EDU_XFER_MAX, (char *)edu->regs + EDU_REG_DMA_CNT);
		writeq(EDU_DMA_RUN | EDU_DMA_TO_RAM | EDU_DMA_IRQ,
		       (char *)edu->regs + EDU_REG_DMA_CMD);
		raise(SIGKILL);
		_exit(1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
		      WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "the child was not killed mid-DMA (status %#x)", status);
	usleep(200 * 1000); /* the DMA the child started ends in the void */
	if (find_edus() < 1) {
		CHECK(0, "the device cannot be opened after the crash");
		return 1;
	}
	pci_register_driver(&edu_driver);
	CHECK(pci_get_drvdata(edus[0]), "no bind after the crash");
	if (pci_get_drvdata(edus[0]))
		work(edus[0], 10, 2);
	pci_unregister_driver(&edu_driver);
	printf("edu %s: killed mid-DMA in a child, bound again and working "
	       "in the parent\n",
	       pci_name(edus[0]));
	return 0;
}

int main(int argc, char **argv)
{
	int nfact = 1000, ndma = 50;
	bool do_sweep = false, do_two = false, do_memlock = false;
	bool do_crash = false, do_quiesce = false;
	const char *scan = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--factorials") && i + 1 < argc)
			nfact = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dma") && i + 1 < argc)
			ndma = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sweep"))
			do_sweep = true;
		else if (!strcmp(argv[i], "--two"))
			do_two = true;
		else if (!strcmp(argv[i], "--intx"))
			edu_irq_types = PCI_IRQ_INTX;
		else if (!strcmp(argv[i], "--memlock"))
			do_memlock = true;
		else if (!strcmp(argv[i], "--crash"))
			do_crash = true;
		else if (!strcmp(argv[i], "--quiesce"))
			do_quiesce = true;
		else if (!strcmp(argv[i], "--scan") && i + 1 < argc)
			scan = argv[++i];
		else if (!strcmp(argv[i], "--uio")) {
			uio = true;
			edu_irq_types = PCI_IRQ_INTX;
		} else if (!strcmp(argv[i], "--uio-phys") ||
			   !strcmp(argv[i], "--uio-phys-blocked")) {
			uio = uio_phys = true;
			dma_blocked = !strcmp(argv[i], "--uio-phys-blocked");
			edu_irq_types = PCI_IRQ_INTX;
			edu_buf_pages = 1;
		} else {
			fprintf(stderr, "usage: edu [--intx] [--factorials N] "
					"[--dma N] [--sweep] [--two] "
					"[--memlock] [--crash] [--scan "
					"NAME] [--uio | --uio-phys | "
					"--uio-phys-blocked]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * One malloc arena: glibc gives a thread that first allocates while
	 * another thread's arena is still held a new one, a mapping of 64
	 * MiB that stays, and the snapshots would see it come and go with
	 * the timing of the interrupt thread's exit.
	 */
	mallopt(M_ARENA_MAX, 1);
	if (!in_vm()) {
		printf("edu: runs only in the test VM (make demo-vm), "
		       "never on this machine's devices\n");
		return 77;
	}
	srandom(1);
	if (scan) {
		int ret;

		pci_vfio_enable();
		ret = pci_bus_scan_device(scan);
		if (ret)
			printf("edu: %s cannot be taken through VFIO: %s\n",
			       scan, strerror(-ret));
		else
			printf("edu: %s taken through VFIO\n", scan);
		pci_bus_remove_all();
		return ret ? 1 : 0;
	}
	if (do_crash) {
		crash();
		goto out;
	}
	if (find_edus() < 1) {
		printf("edu: no edu device bound to %s\n",
		       uio ? "uio_pci_generic" : "vfio-pci");
		return 1;
	}
	if (do_sweep)
		sweep();
	else if (do_two)
		two();
	else if (do_memlock)
		memlock();
	else if (do_quiesce)
		quiesce();
	else
		run(nfact, ndma);
out:
	for (int i = 0; i < nr_edu; i++)
		pci_dev_put(edus[i]);
	pci_bus_remove_all();
	printf("edu: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
