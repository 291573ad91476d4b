// SPDX-License-Identifier: MIT
/*
 * What the identity checks at release cost (docs/misuse.md, "Released
 * past the interposers"), per pair of calls or per call, in the same
 * rounds (interleaved, so that the machine's load weighs on all alike):
 *
 *   raise     irq_line_raise() of a line with no handler (an fstat() of
 *             its eventfd before the write);
 *   ioremap   devm_ioremap() then devm_iounmap() of one page of a memfd
 *             window (a read of /proc/self/maps at each);
 *   dmam      dmam_alloc_coherent() then dmam_free_coherent() of 4 KiB
 *             (a read of /proc/self/maps at the free);
 *   fopen     devm_fopen() then devm_fclose() of /dev/null (a twin: one
 *             more descriptor, an fcntl() and a kcmp());
 *   maps      one read of /proc/self/maps by itself, with the process's
 *             mappings as they are, for scale.
 *
 * Built against two builds of the library (this one, and one before the
 * checks), run alternately; it prints the median nanoseconds of CPU time
 * of each, with the quartiles. Pinned to one CPU.
 *
 *   bench-identity [rounds [ops per round]]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "bench.h"

#define WIN 0xa0000000ull
#define PAGE 4096u

static struct device dev;
static int line;
static int ops = 2000;

static double run_raise(void)
{
	double t0 = now_ns();

	for (int i = 0; i < ops; i++)
		if (irq_line_raise(line)) {
			fprintf(stderr, "irq_line_raise failed\n");
			exit(1);
		}
	return (now_ns() - t0) / ops;
}

static double run_ioremap(void)
{
	double t0 = now_ns();

	for (int i = 0; i < ops; i++) {
		void *p = devm_ioremap(&dev, WIN, PAGE);

		if (!p) {
			fprintf(stderr, "devm_ioremap failed\n");
			exit(1);
		}
		devm_iounmap(&dev, p);
	}
	return (now_ns() - t0) / ops;
}

static double run_dmam(void)
{
	double t0 = now_ns();

	for (int i = 0; i < ops; i++) {
		dma_addr_t h;
		void *p = dmam_alloc_coherent(&dev, PAGE, &h, GFP_KERNEL);

		if (!p) {
			fprintf(stderr, "dmam_alloc_coherent failed\n");
			exit(1);
		}
		dmam_free_coherent(&dev, PAGE, p, h);
	}
	return (now_ns() - t0) / ops;
}

static double run_fopen(void)
{
	double t0 = now_ns();

	for (int i = 0; i < ops; i++) {
		FILE *f = devm_fopen(&dev, "/dev/null", "r");

		if (!f) {
			perror("devm_fopen");
			exit(1);
		}
		devm_fclose(&dev, f);
	}
	return (now_ns() - t0) / ops;
}

static double run_maps(void)
{
	char buf[65536];
	double t0 = now_ns();

	for (int i = 0; i < ops; i++) {
		int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror("/proc/self/maps");
			exit(1);
		}
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	return (now_ns() - t0) / ops;
}

static const struct {
	const char *name;
	double (*run)(void);
} cases[] = {
	{ "raise", run_raise }, { "ioremap", run_ioremap },
	{ "dmam", run_dmam },	{ "fopen", run_fopen },
	{ "maps", run_maps },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 21;
	double *t[NCASES];
	int memfd;

	if (argc > 2)
		ops = atoi(argv[2]);
	if (rounds < 1 || ops < 1) {
		fprintf(stderr, "usage: bench-identity [rounds [ops]]\n");
		return 2;
	}
	pin_to_one_cpu();
	device_initialize(&dev);
	dev.init_name = "bench-identity";
	memfd = memfd_create("bench-identity", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, PAGE) ||
	    iomem_window_add(WIN, PAGE, memfd, 0, "bench")) {
		perror("window");
		return 1;
	}
	line = irq_line_create("bench");
	if (line <= 0) {
		fprintf(stderr, "irq_line_create failed\n");
		return 1;
	}
	for (int c = 0; c < NCASES; c++) {
		t[c] = calloc((size_t)rounds, sizeof(double));
		if (!t[c])
			return 1;
	}
	/* Two warm-up rounds, then the cases in a rotating order. */
	for (int r = -2; r < rounds; r++)
		for (int k = 0; k < NCASES; k++) {
			int c = (k + (r < 0 ? 0 : r)) % NCASES;
			double v = cases[c].run();

			if (r >= 0)
				t[c][r] = v;
		}
	for (int c = 0; c < NCASES; c++) {
		struct spread s = spread_of(t[c], rounds);

		printf("%-8s median %8.0f ns  (q1 %8.0f, q3 %8.0f)\n",
		       cases[c].name, s.med, s.q1, s.q3);
		free(t[c]);
	}
	irq_line_destroy(line);
	iomem_window_remove(WIN);
	close(memfd);
	devres_release_all(&dev);
	return 0;
}
