// SPDX-License-Identifier: MIT
/*
 * What managed descriptors cost, per pair of calls, in the same rounds
 * (interleaved, so that the machine's load weighs on all alike):
 *
 *   raw       open() of /dev/null, then the close system call itself
 *             (syscall(SYS_close)): what no version of the library
 *             touches, the yardstick;
 *   bare0     open() then close(), no managed descriptor in the process;
 *   bare64    open() then close() with 64 managed descriptors live (on
 *             another device): close() looks the number up;
 *   managed   devm_open() then devm_close().
 *
 * With "own" as third argument, the process first makes an interrupt
 * line, whose eventfd is one of the library's own descriptors: from then
 * on every close() (and dup2(), dup3(), close_range(), fclose()) also
 * brackets its call against the library's opens and looks the number up
 * among the library's own (src/base/own-fd.c). Compare a run with it and
 * one without, and each with a build of the previous version.
 *
 * Prints the median nanoseconds of CPU time per pair of each, their
 * quartiles, and each median's ratio to raw's. To compare two versions
 * of the library, build this program against each and run the two
 * alternately: the ratios to raw are what the two processes share (close
 * is the library's own in a version that interposes it, so a binary of
 * one version cannot be pointed at the other's library).
 *
 *   bench-fd [rounds [pairs per round [own]]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include <string.h>
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

static int open_null(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror("open");
		exit(1);
	}
	return fd;
}

static double bare(int pairs)
{
	double t0 = now_ns();

	for (int i = 0; i < pairs; i++)
		close(open_null());
	return (now_ns() - t0) / pairs;
}

static double raw(int pairs)
{
	double t0 = now_ns();

	for (int i = 0; i < pairs; i++)
		syscall(SYS_close, open_null());
	return (now_ns() - t0) / pairs;
}

#define LIVE 64

/* bare() with LIVE managed descriptors of @dev live; not timed: those. */
static double bare_live(struct device *dev, int pairs)
{
	double t;

	for (int i = 0; i < LIVE; i++)
		if (devm_open(dev, "/dev/null", O_RDONLY) < 0) {
			fprintf(stderr, "devm_open failed\n");
			exit(1);
		}
	t = bare(pairs);
	devres_release_all(dev);
	return t;
}

static void print(const char *what, const double *v, int n, double yard)
{
	struct spread s = spread_of(v, n);

	printf("  %-22s %6.0f ns (q1 %6.0f, q3 %6.0f)  %.3f\n", what, s.med,
	       s.q1, s.q3, yard > 0 ? s.med / yard : 1.0);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 31;
	int pairs = argc > 2 ? atoi(argv[2]) : 2000;
	static struct device dev = { .init_name = "bench-fd",
				     .release = dev_release };
	static struct device holder = { .init_name = "bench-fd-live",
					.release = dev_release };
	bool own = argc > 3 && strcmp(argv[3], "own") == 0;
	double *v[4], yard;
	int irq = 0;

	if (rounds < 1 || pairs < 1) {
		fprintf(stderr, "usage: bench-fd [rounds [pairs [own]]]\n");
		return 2;
	}
	if (own && (irq = irq_line_create("bench-fd")) <= 0) {
		fprintf(stderr, "irq_line_create: %d\n", irq);
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		v[i] = calloc((size_t)rounds, sizeof(*v[i]));
		if (!v[i])
			return 1;
	}
	pin_to_one_cpu();
	device_initialize(&dev);
	device_initialize(&holder);
	/* One round of each first, not counted: caches, the first fds. */
	raw(pairs);
	bare(pairs);
	bare_live(&holder, pairs);
	managed(&dev, pairs);
	for (int r = 0; r < rounds; r++) {
		v[0][r] = raw(pairs);
		v[1][r] = bare(pairs);
		v[2][r] = bare_live(&holder, pairs);
		v[3][r] = managed(&dev, pairs);
	}
	yard = spread_of(v[0], rounds).med;
	printf("%s%s: per pair, median of %d rounds of %d, ratio to raw\n",
	       devres_version(),
	       own ? " (a descriptor of the library's own)" : "", rounds,
	       pairs);
	print("open+SYS_close (raw)", v[0], rounds, yard);
	print("open+close, 0 live", v[1], rounds, yard);
	print("open+close, 64 live", v[2], rounds, yard);
	print("devm_open+devm_close", v[3], rounds, yard);
	put_device(&holder);
	put_device(&dev);
	if (own)
		irq_line_destroy(irq);
	for (int i = 0; i < 4; i++)
		free(v[i]);
	return 0;
}
