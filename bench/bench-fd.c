// SPDX-License-Identifier: MIT
/*
 * A managed descriptor's cost: devm_open() then devm_close() of /dev/null,
 * against open() then close() of it, in the same rounds (interleaved, so
 * that the machine's load weighs on both alike). Prints the median
 * nanoseconds of CPU time per pair of calls of each, their quartiles, and
 * the ratio of the medians. Run it with LD_LIBRARY_PATH pointing at
 * another build of the library to compare two versions of it: the bare
 * calls are the yardstick the two runs share.
 *
 *   bench-fd [rounds [pairs per round]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "bench.h"

static void dev_release(struct device *dev)
{
	(void)dev;
}

static double managed(struct device *dev, int pairs)
{
	double t0 = now_ns();

	for (int i = 0; i < pairs; i++) {
		int fd = devm_open(dev, "/dev/null", O_RDONLY);

		if (fd < 0) {
			fprintf(stderr, "devm_open: %d\n", fd);
			exit(1);
		}
		devm_close(dev, fd);
	}
	return (now_ns() - t0) / pairs;
}

static double bare(int pairs)
{
	double t0 = now_ns();

	for (int i = 0; i < pairs; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror("open");
			exit(1);
		}
		close(fd);
	}
	return (now_ns() - t0) / pairs;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 31;
	int pairs = argc > 2 ? atoi(argv[2]) : 2000;
	static struct device dev = { .init_name = "bench-fd",
				     .release = dev_release };
	double *m, *b;
	struct spread sm, sb;

	if (rounds < 1 || pairs < 1) {
		fprintf(stderr, "usage: bench-fd [rounds [pairs]]\n");
		return 2;
	}
	m = calloc((size_t)rounds, sizeof(*m));
	b = calloc((size_t)rounds, sizeof(*b));
	if (!m || !b)
		return 1;
	pin_to_one_cpu();
	device_initialize(&dev);
	/* One round of each first, not counted: caches, the first fds. */
	managed(&dev, pairs);
	bare(pairs);
	for (int r = 0; r < rounds; r++) {
		m[r] = managed(&dev, pairs);
		b[r] = bare(pairs);
	}
	sm = spread_of(m, rounds);
	sb = spread_of(b, rounds);
	printf("%s: devm_open+devm_close %.0f ns (q1 %.0f, q3 %.0f), "
	       "open+close %.0f ns (q1 %.0f, q3 %.0f), ratio %.2f\n",
	       devres_version(), sm.med, sm.q1, sm.q3, sb.med, sb.q1, sb.q3,
	       sm.med / sb.med);
	put_device(&dev);
	free(m);
	free(b);
	return 0;
}
