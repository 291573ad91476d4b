/* SPDX-License-Identifier: MIT */
/*
 * Helpers the io tests share: a memfd standing for a simulated device's
 * registers, a second, independent mapping of it (the device's side), the
 * two as a window of device memory the library maps, and the fds of the
 * process (to check that the library's are close-on-exec).
 */
#ifndef DEVRES_IOTEST_H
#define DEVRES_IOTEST_H

/* Include it after defining _GNU_SOURCE (memfd_create). */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/io.h>
#include "testlib.h"

/* A close-on-exec memfd of @size bytes, zeroed. */
static inline int dev_memfd(size_t size)
{
	int fd = memfd_create("devres-io-test", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The device's own view of the memfd: not through the library. */
static inline volatile unsigned char *dev_view(int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : (volatile unsigned char *)p;
}

/*
 * A window of device memory: a memfd the library maps through
 * iomem_window_add(), and the device's own view of it.
 */
struct io_window {
	int memfd;
	volatile unsigned char *devside;
};

/* @size bytes of device memory at @base, called @name: 0 or -1. */
static inline int io_window_add(struct io_window *w, phys_addr_t base,
				size_t size, const char *name)
{
	w->memfd = dev_memfd(size);
	if (w->memfd < 0)
		return -1;
	w->devside = dev_view(w->memfd, size);
	if (!w->devside)
		return -1;
	return iomem_window_add(base, size, w->memfd, 0, name) ? -1 : 0;
}

/* The window at @base goes: 0, or -1 when the library refused. */
static inline int io_window_remove(struct io_window *w, phys_addr_t base,
				   size_t size)
{
	int ret = iomem_window_remove(base) ? -1 : 0;

	munmap((void *)w->devside, size);
	close(w->memfd);
	return ret;
}

/*
 * A cmocka setup and teardown: the test device (dev_setup()) with @w,
 * @size bytes of device memory at @base called @name; 0 or -1.
 */
static inline int io_window_setup(void **state, struct io_window *w,
				  phys_addr_t base, size_t size,
				  const char *name)
{
	if (dev_setup(state) || io_window_add(w, base, size, name))
		return -1;
	return 0;
}

static inline int io_window_teardown(void **state, struct io_window *w,
				     phys_addr_t base, size_t size)
{
	if (io_window_remove(w, base, size))
		return -1;
	return dev_teardown(state);
}

/* A bitmap of the open fds below 1024 (bit i set when fd i is open). */
struct fdset {
	unsigned long bits[1024 / (8 * sizeof(unsigned long))];
};

static inline void fd_snapshot(struct fdset *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	const size_t w = 8 * sizeof(unsigned long);

	for (size_t i = 0; i < sizeof(s->bits) / sizeof(s->bits[0]); i++)
		s->bits[i] = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d) && fd < 1024)
			s->bits[fd / w] |= 1ul << (fd % w);
	}
	closedir(d);
}

/*
 * How many fds are open now that were not in @before; each of them must be
 * close-on-exec, else -1.
 */
static inline int new_fds_cloexec(const struct fdset *before)
{
	struct fdset now;
	const size_t w = 8 * sizeof(unsigned long);
	int n = 0;

	fd_snapshot(&now);
	for (int fd = 0; fd < 1024; fd++) {
		if (!(now.bits[fd / w] & (1ul << (fd % w))) ||
		    (before->bits[fd / w] & (1ul << (fd % w))))
			continue;
		if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			return -1;
		n++;
	}
	return n;
}

#endif /* DEVRES_IOTEST_H */
