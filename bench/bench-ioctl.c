// SPDX-License-Identifier: MIT
/*
 * What the library's ioctl() costs a program on descriptors that are not
 * the library's, once the library has opened one of its own (an
 * interrupt line's eventfd; from then on its count of them is never zero
 * again): ioctl(FIONREAD) of a pipe, a request that is not VFIO's (one
 * load and a compare), and a VFIO request (VFIO_GET_API_VERSION, which
 * the pipe refuses with ENOTTY), the one case that looks the number up.
 * Each of 31 rounds times 20 000 calls of each case, the cases
 * interleaved in the round; thread CPU time, median per call, pinned to
 * one CPU. Built against two builds of the library and run alternately,
 * it compares them: it prints one line of the medians.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <devres/irq.h>
#include "bench.h"

#define ROUNDS 31
#define CALLS 20000

static int pipefd[2];

static double calls(unsigned long request, int want)
{
	double t0 = now_ns();
	int n = 0;

	for (int i = 0; i < CALLS; i++) {
		int ret = ioctl(pipefd[0], request, &n);

		if (ret != want) {
			fprintf(stderr, "ioctl(%#lx): %d, want %d\n", request,
				ret, want);
			exit(1);
		}
	}
	return (now_ns() - t0) / CALLS;
}

int main(void)
{
	double plain[ROUNDS], vfio[ROUNDS];
	struct spread a, b;
	int irq;

	pin_to_one_cpu();
	if (pipe2(pipefd, O_CLOEXEC)) {
		perror("pipe2");
		return 1;
	}
	irq = irq_line_create("bench");
	if (irq < 0) {
		fprintf(stderr, "irq_line_create: %d\n", irq);
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		plain[r] = calls(FIONREAD, 0);
		vfio[r] = calls(VFIO_GET_API_VERSION, -1);
	}
	a = spread_of(plain, ROUNDS);
	b = spread_of(vfio, ROUNDS);
	printf("FIONREAD: %.1f ns (q1 %.1f, q3 %.1f); VFIO_GET_API_VERSION: "
	       "%.1f ns (q1 %.1f, q3 %.1f)\n",
	       a.med, a.q1, a.q3, b.med, b.q1, b.q3);
	irq_line_destroy(irq);
	close(pipefd[0]);
	close(pipefd[1]);
	return 0;
}
