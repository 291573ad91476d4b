// SPDX-License-Identifier: MIT
/*
 * nvme: the userspace NVMe driver of this folder on QEMU's NVMe
 * controller (1b36:0010), reached through VFIO.
 *
 *   nvme [--qd N] [--ios N] [--threads N] [--queues N] [--poll] [--seq]
 *        [--reads PCT]
 *        bind, run N verified I/Os (each write read back and checked) at
 *        queue depth N per thread, one I/O queue per thread (PCT of
 *        the requests only read a block and check it), unbind, and
 *        check that nothing is left: ledger, IOMMU mappings, controller
 *        disabled (CSTS.RDY read back)
 *   nvme --sweep          fail the probe at each failure point in turn
 *   nvme --unbind         unbind in the middle of a qd 16 load: every
 *                         request is reaped, with its status or an error
 *   nvme --timeout        a lost doorbell: the command times out, the
 *                         controller is reset, and the load goes on
 *   nvme --prp            commands of 2 to 32 blocks: PRP2 and PRP lists
 *   nvme --final N        write the final pattern on blocks [0, N)
 *   nvme --check-dev DEV --blocks N
 *                         read DEV (the kernel's driver) with O_DIRECT: the
 *                         final pattern, exactly, on blocks [0, N)
 *   nvme --kernel DEV     the same load on DEV, O_DIRECT, a thread per
 *                         request in flight (--first B: from block B)
 *
 * It opens /dev/vfio, so it runs only in the test VM (tests/vm/run.sh);
 * elsewhere it exits 77.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/vfio.h>
#include "driver.h"
#include "blk.h"
#include "load.h"

#define FINAL_RUN 0x46494e414cull /* "FINAL" */

static struct pci_dev *pdev;
static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("nvme: FAILED: " __VA_ARGS__);                  \
			printf("\n");                                          \
			failures++;                                            \
		}                                                              \
	} while (0)

static bool in_vm(void)
{
	return !access("/devres-vm", F_OK);
}

static int read_hex(const char *dev, const char *attr)
{
	char path[300];
	unsigned int v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%x", &v) != 1)
		v = 0;
	fclose(f);
	return (int)v;
}

/* The first NVMe controller of QEMU's bound to vfio-pci, through VFIO. */
static struct pci_dev *find_nvme(void)
{
	DIR *dir = opendir("/sys/bus/pci/devices");
	struct dirent *de;
	struct pci_dev *p = NULL;

	pci_vfio_enable();
	while (dir && (de = readdir(dir))) {
		if (read_hex(de->d_name, "vendor") != NVME_VENDOR ||
		    read_hex(de->d_name, "device") != NVME_DEVICE)
			continue;
		if (pci_bus_scan_device(de->d_name))
			continue;
		break;
	}
	if (dir)
		closedir(dir);
	while ((p = pci_get_device(NVME_VENDOR, NVME_DEVICE, p)))
		if (pci_dev_is_vfio(p))
			return p;
	return NULL;
}

static void check_unbound(const char *what, unsigned int enables0,
			  unsigned int disables0)
{
	unsigned int en = atomic_load(&nvme_stat_enables) - enables0;
	unsigned int dis = atomic_load(&nvme_stat_disables) - disables0;

	CHECK(en == dis, "%s: %u enables, %u disables read back", what, en,
	      dis);
	CHECK(pci_vfio_dma_mappings(pdev, NULL) == 0, "%s: IOMMU mappings left",
	      what);
	printf("nvme: %s: controller enabled %u time(s), disabled %u time(s) "
	       "(CSTS.RDY read back 0), %d IOMMU mappings left\n",
	       what, en, dis, pci_vfio_dma_mappings(pdev, NULL));
}

static int bind(struct nvme_blk **ret)
{
	int err = pci_register_driver(&nvme_driver);

	CHECK(!err, "pci_register_driver: %d", err);
	*ret = nvme_blk_get(pdev);
	CHECK(*ret, "%s: not bound", pci_name(pdev));
	return *ret ? 0 : -ENODEV;
}

static int run_load(struct load_opts *o)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	struct devres_ledger before, after;
	unsigned int en0 = atomic_load(&nvme_stat_enables);
	unsigned int dis0 = atomic_load(&nvme_stat_disables);
	struct load_result r;
	struct nvme_blk *b;
	atomic_bool stop = false;
	uint64_t bytes = 0;
	int ret;

	devres_ledger_snapshot(&before);
	if (bind(&b))
		return 1;
	printf("nvme %s: bound through VFIO: %llu blocks, %u I/O queue(s) "
	       "(%s), %d IOMMU mappings of ",
	       pci_name(pdev), (unsigned long long)nvme_blk_capacity(b),
	       nvme_blk_queues(b), nvme_param_poll ? "polled" : "MSI-X",
	       pci_vfio_dma_mappings(pdev, &bytes));
	printf("%llu bytes\n", (unsigned long long)bytes);
	if (o->blocks > nvme_blk_capacity(b))
		o->blocks = nvme_blk_capacity(b);
	ret = load_run_blk(b, o, &r, &stop);
	CHECK(!ret, "load: %d", ret);
	load_print(nvme_param_poll ? "nvme userspace polled" : "nvme userspace",
		   o, &r);
	CHECK(r.ios >= o->ios, "%lu of %lu I/Os done", r.ios, o->ios);
	CHECK(!r.errors && !r.mismatches && !r.failed,
	      "%lu errors, %lu failed, %lu mismatches", r.errors, r.failed,
	      r.mismatches);
	for (unsigned int i = 0; i < nvme_blk_queues(b); i++) {
		unsigned long irqs = 0, done = 0;
		bool used = i < o->threads;

		nvme_blk_queue_stats(b, i, &irqs, &done);
		printf("nvme: I/O queue %u: %lu completions, %lu interrupts "
		       "(%s)\n",
		       i + 1, done, irqs,
		       nvme_param_poll ? "polled" : "its own MSI-X vector");
		CHECK(!used || done > 0, "queue %u unused", i + 1);
		CHECK(nvme_param_poll ? irqs == 0 : !used || irqs > 0,
		      "queue %u: %lu interrupts", i + 1, irqs);
	}
	CHECK(nvme_blk_rw(b, 0, NVME_OP_FLUSH, 0, 0, NULL) == 0, "flush");
	CHECK(nvme_blk_resets(b) == 0, "%u resets", nvme_blk_resets(b));
	pci_unregister_driver(&nvme_driver);
	CHECK(nvme_blk_submit(b, 0, NVME_OP_READ, 0, 1, buf) == -ENODEV,
	      "the handle works after unbind");
	nvme_blk_put(b);
	devres_ledger_snapshot(&after);
	CHECK(!devres_ledger_diff(&before, &after, stdout), "leaks at unbind");
	check_unbound("after unbind", en0, dis0);
	return 0;
}

static int sweep(void)
{
	struct devres_sweep_result r = { 0 };
	unsigned int en0 = atomic_load(&nvme_stat_enables);
	unsigned int dis0 = atomic_load(&nvme_stat_disables);
	int ret;

	ret = pci_register_driver(&nvme_driver);
	CHECK(!ret, "pci_register_driver: %d", ret);
	device_release_driver(&pdev->dev);
	ret = driver_probe_sweep(&nvme_driver.driver, &pdev->dev, &r);
	pci_unregister_driver(&nvme_driver);
	printf("nvme %s: probe swept: %u failure points, %u leaks\n",
	       pci_name(pdev), r.points, r.leaks);
	CHECK(ret == 0 && r.leaks == 0 && r.points > 0, "sweep: %d", ret);
	check_unbound("after the sweep", en0, dis0);
	return 0;
}

struct unbinder {
	unsigned int delay_ms;
	double at;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *unbind_later(void *arg)
{
	struct unbinder *u = arg;

	usleep(u->delay_ms * 1000);
	u->at = now_s();
	device_release_driver(&pdev->dev);
	return NULL;
}

static int unbind_mid_io(struct load_opts *o)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	unsigned int en0 = atomic_load(&nvme_stat_enables);
	unsigned int dis0 = atomic_load(&nvme_stat_disables);
	struct unbinder u = { .delay_ms = 1500 };
	struct load_result r;
	struct nvme_blk *b;
	pthread_t t;
	atomic_bool stop = false;

	if (bind(&b))
		return 1;
	o->ios = 10000000; /* more than it can do before the unbind */
	o->quiet = true;
	pthread_create(&t, NULL, unbind_later, &u);
	load_run_blk(b, o, &r, &stop);
	pthread_join(t, NULL);
	load_print("nvme unbind", o, &r);
	printf("nvme: unbound after %.1f s of load, %u requests in flight "
	       "when remove began: %lu requests submitted, %lu reaped (%lu "
	       "with an error), %lu lost, %lu mismatches\n",
	       (double)u.delay_ms / 1000, nvme_blk_inflight_at_unbind(b),
	       r.submitted, r.reaped, r.failed, r.submitted - r.reaped,
	       r.mismatches);
	CHECK(r.submitted > 0 && r.submitted == r.reaped,
	      "%lu submitted, %lu reaped", r.submitted, r.reaped);
	CHECK(!r.mismatches, "mismatches");
	CHECK(nvme_blk_submit(b, 0, NVME_OP_READ, 0, 1, buf) == -ENODEV,
	      "the handle works after unbind");
	nvme_blk_put(b);
	pci_unregister_driver(&nvme_driver);
	check_unbound("after the unbind", en0, dis0);
	return 0;
}

/*
 * A command the controller never saw (its doorbell lost) when remove()
 * begins: deleting its queue does not end it, so remove() fails it, and
 * its submitter, waiting for it, reaps -ENODEV.
 */
static int unbind_unseen(void)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	struct unbinder u = { .delay_ms = 200 };
	struct nvme_blk *b;
	int tag, got = -1, status = 0, ret;
	pthread_t t;

	if (bind(&b))
		return 1;
	nvme_blk_drop_doorbell(b);
	tag = nvme_blk_submit(b, 0, NVME_OP_READ, 9, 1, buf);
	CHECK(tag >= 0, "submit: %d", tag);
	pthread_create(&t, NULL, unbind_later, &u);
	ret = tag < 0 ? tag : nvme_blk_reap(b, 0, tag, &got, &status);
	pthread_join(t, NULL);
	printf("nvme: a command the controller never saw, in flight at "
	       "unbind: reaped with %s\n",
	       ret ? strerror(-ret) : strerror(-status));
	CHECK(!ret && got == tag && status == -ENODEV, "reap: %d, status %d",
	      ret, status);
	nvme_blk_put(b);
	pci_unregister_driver(&nvme_driver);
	return 0;
}

static int timeout(struct load_opts *o)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	struct load_result r;
	struct nvme_blk *b;
	atomic_bool stop = false;
	double t;
	int ret;

	nvme_param_timeout_ms = 1000;
	if (bind(&b))
		return 1;
	load_fill(buf, 7, 1, o->run);
	CHECK(nvme_blk_rw(b, 0, NVME_OP_WRITE, 7, 1, buf) == 0, "a write");
	nvme_blk_drop_doorbell(b);
	t = now_s();
	ret = nvme_blk_rw(b, 0, NVME_OP_READ, 7, 1, buf);
	printf("nvme: a read whose doorbell was lost: %s after %.1f s, %u "
	       "reset(s)\n",
	       strerror(-ret), now_s() - t, nvme_blk_resets(b));
	CHECK(ret == -ETIMEDOUT, "the lost command: %d", ret);
	CHECK(nvme_blk_resets(b) == 1, "%u resets", nvme_blk_resets(b));
	o->ios = 2000;
	ret = load_run_blk(b, o, &r, &stop);
	load_print("nvme after the reset", o, &r);
	CHECK(!ret && r.ios >= o->ios && !r.errors && !r.mismatches, "load "
								     "after "
								     "the "
								     "reset");
	nvme_blk_put(b);
	pci_unregister_driver(&nvme_driver);
	nvme_param_timeout_ms = 5000;
	return 0;
}

/*
 * Commands of several blocks: two pages (PRP2 names the second) and more
 * (PRP2 names a PRP list from the pool), written whole, read back whole
 * and block by block, from block 4096 on.
 */
static int prp_lists(struct load_opts *o)
{
	static const unsigned int sizes[] = { 1, 2, 3, 8, 17, 32 };
	uint8_t *buf = aligned_alloc(4096, 32 * 4096);
	struct nvme_blk *b;
	unsigned long checked = 0, bad = 0;
	uint64_t lba = 4096;

	if (!buf || bind(&b)) {
		free(buf);
		return 1;
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		unsigned int n = sizes[k];
		int ret;

		if (n > nvme_blk_max_blocks(b))
			break;
		for (unsigned int i = 0; i < n; i++)
			load_fill(buf + i * 4096, lba + i, n, o->run);
		ret = nvme_blk_rw(b, 0, NVME_OP_WRITE, lba, n, buf);
		CHECK(!ret, "write of %u blocks: %d", n, ret);
		memset(buf, 0, (size_t)n * 4096);
		ret = nvme_blk_rw(b, 0, NVME_OP_READ, lba, n, buf);
		CHECK(!ret, "read of %u blocks: %d", n, ret);
		for (unsigned int i = 0; i < n; i++, checked++)
			bad += load_check(buf + i * 4096, lba + i, n, o->run) !=
			       0;
		for (unsigned int i = 0; i < n; i++, checked++)
			bad += nvme_blk_rw(b, 0, NVME_OP_READ, lba + i, 1,
					   buf) ||
			       load_check(buf, lba + i, n, o->run);
		lba += n;
	}
	printf("nvme: commands of 1, 2, 3, 8, 17 and 32 blocks (PRP1 alone, "
	       "PRP2, PRP lists from the pool), read back whole and block by "
	       "block: %lu blocks checked, %lu bad\n",
	       checked, bad);
	CHECK(!bad && checked == 2 * (1 + 2 + 3 + 8 + 17 + 32), "%lu bad", bad);
	nvme_blk_put(b);
	pci_unregister_driver(&nvme_driver);
	free(buf);
	return 0;
}

/*
 * Blocks [0, n) get the final pattern, in commands of as many blocks as
 * the driver takes (PRP lists), and are read back the same way.
 */
static int final(uint64_t n)
{
	struct nvme_blk *b;
	unsigned long bad = 0;
	unsigned int per;
	uint8_t *buf;

	if (bind(&b))
		return 1;
	per = nvme_blk_max_blocks(b);
	buf = aligned_alloc(4096, (size_t)per * 4096);
	for (uint64_t lba = 0; buf && lba < n; lba += per) {
		unsigned int k = n - lba < per ? (unsigned int)(n - lba) : per;

		for (unsigned int i = 0; i < k; i++)
			load_fill(buf + i * 4096, lba + i, 1, FINAL_RUN);
		if (nvme_blk_rw(b, 0, NVME_OP_WRITE, lba, k, buf))
			bad += k;
	}
	CHECK(nvme_blk_rw(b, 0, NVME_OP_FLUSH, 0, 0, NULL) == 0, "flush");
	for (uint64_t lba = 0; buf && lba < n; lba += per) {
		unsigned int k = n - lba < per ? (unsigned int)(n - lba) : per;

		if (nvme_blk_rw(b, 0, NVME_OP_READ, lba, k, buf)) {
			bad += k;
			continue;
		}
		for (unsigned int i = 0; i < k; i++)
			bad += load_check(buf + i * 4096, lba + i, 1,
					  FINAL_RUN) != 0;
	}
	printf("nvme: final pattern on blocks [0, %llu), %u blocks a "
	       "command: %lu bad\n",
	       (unsigned long long)n, per, bad);
	CHECK(buf && !bad, "final pattern");
	free(buf);
	nvme_blk_put(b);
	pci_unregister_driver(&nvme_driver);
	return 0;
}

static int check_dev(const char *path, uint64_t n)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	unsigned long bad = 0;

	if (fd < 0) {
		CHECK(0, "open %s: %s", path, strerror(errno));
		return 1;
	}
	for (uint64_t lba = 0; lba < n; lba++)
		if (pread(fd, buf, 4096, (off_t)(lba * 4096)) != 4096 ||
		    load_check(buf, lba, 1, FINAL_RUN))
			bad++;
	close(fd);
	printf("nvme: %s through the kernel's driver: blocks [0, %llu) hold "
	       "the final pattern written from userspace: %lu bad\n",
	       path, (unsigned long long)n, bad);
	CHECK(!bad, "%lu blocks differ", bad);
	return 0;
}

int main(int argc, char **argv)
{
	struct load_opts o = {
		.qd = 1, .threads = 1, .ios = 10000, .blocks = 8192
	};
	const char *kernel = NULL, *check = NULL, *mode = "load";
	uint64_t final_n = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--qd") && v)
			o.qd = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(a, "--ios") && v)
			o.ios = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(a, "--threads") && v)
			o.threads = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(a, "--queues") && v)
			nvme_param_queues = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(a, "--blocks") && v)
			o.blocks = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--first") && v)
			o.first = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--reads") && v)
			o.reads_pct = (unsigned int)atoi(argv[++i]) % 101;
		else if (!strcmp(a, "--poll"))
			nvme_param_poll = true;
		else if (!strcmp(a, "--seq"))
			o.seq = true;
		else if (!strcmp(a, "--quiet"))
			o.quiet = true;
		else if (!strcmp(a, "--sweep") || !strcmp(a, "--unbind") ||
			 !strcmp(a, "--timeout") || !strcmp(a, "--prp"))
			mode = a + 2;
		else if (!strcmp(a, "--final") && v)
			final_n = strtoull(argv[++i], NULL, 0), mode = "final";
		else if (!strcmp(a, "--kernel") && v)
			kernel = argv[++i], mode = "kernel";
		else if (!strcmp(a, "--check-dev") && v)
			check = argv[++i], mode = "check";
		else {
			fprintf(stderr, "usage: see the top of main.c\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!in_vm()) {
		printf("nvme: runs only in the test VM (make demo-vm), never "
		       "on this machine's devices\n");
		return 77;
	}
	o.run = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
	if (!strcmp(mode, "kernel")) {
		struct load_result r;
		int ret = load_run_dev(kernel, &o, &r);

		CHECK(!ret, "%s: %s", kernel, strerror(-ret));
		load_print("kernel nvme", &o, &r);
		CHECK(!r.errors && !r.mismatches && r.ios >= o.ios, "kernel "
								    "load");
		goto out;
	}
	if (!strcmp(mode, "check")) {
		check_dev(check, o.blocks);
		goto out;
	}
	pdev = find_nvme();
	if (!pdev) {
		printf("nvme: no NVMe controller bound to vfio-pci\n");
		return 1;
	}
	if (!strcmp(mode, "sweep"))
		sweep();
	else if (!strcmp(mode, "unbind")) {
		unbind_mid_io(&o);
		unbind_unseen();
	} else if (!strcmp(mode, "timeout"))
		timeout(&o);
	else if (!strcmp(mode, "prp"))
		prp_lists(&o);
	else if (!strcmp(mode, "final"))
		final(final_n);
	else
		run_load(&o);
	pci_bus_remove_all();
out:
	printf("nvme: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
