// SPDX-License-Identifier: MIT
/*
 * What is mapped over a managed mapping's range, by the kernel's account:
 * the identity a record keeps from when it was made, checked at its
 * release, so that a mapping unmapped past every interposed call (a raw
 * system call) is not unmapped again once another owner's is there.
 *
 * The identity is what /proc/self/maps shows of the range: the device
 * and inode mapped, and the file offset at its first byte. A range
 * unmapped since, or mapped since by another owner from another object
 * or at other offsets, is told from the one recorded. Anonymous private
 * memory shows device 0, inode 0 and no offset: another anonymous mapping
 * put at the same address looks the same, and so does the same file
 * mapped again there at the same offset.
 *
 * The kernel answers one mapping at a time through the PROCMAP_QUERY
 * ioctl() on the same file (Linux 6.11): one call per mapping the range
 * meets, where reading the file formats every line up to the range.
 * Where it is refused (an older kernel: ENOTTY; a seccomp policy) the
 * file is read, from then on. Both give the same fields, so a record
 * made one way compares with a check made the other.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include "subsys.h"

/* <linux/fs.h>'s struct procmap_query, for headers older than 6.11. */
struct procmap_q {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};

#define Q_PROCMAP _IOWR('f', 17, struct procmap_q)
/* The mapping holding the address, else the next one above it. */
#define Q_COVERING_OR_NEXT 0x10

int devres__maps_query;

/*
 * What the range's scan keeps: where the last mapping met ended, whether
 * one was met, whether they are one object at consistent offsets so far,
 * and the identity at the range's first byte.
 */
struct scan {
	uintptr_t a, next, end;
	bool any, one;
	struct devres__map_id id;
};

/* One mapping [@s, @e) the range meets, in address order. */
static void meet(struct scan *sc, unsigned long s, unsigned long e,
		 unsigned long long off, unsigned int major, unsigned int minor,
		 unsigned long ino)
{
	if (s > sc->next)
		sc->one = false; /* a hole */
	if (!sc->any) {
		/* Anonymous private memory shows no offset. */
		sc->id = (struct devres__map_id){
			major, minor, ino,
			ino ? off + (s < sc->a ? sc->a - s : 0) : 0
		};
		sc->one = sc->one && s <= sc->a;
	} else if (major != sc->id.major || minor != sc->id.minor ||
		   ino != sc->id.ino ||
		   (ino && off != sc->id.off + (s - sc->a))) {
		sc->one = false;
	}
	sc->any = true;
	sc->next = e;
}

/*
 * The scan by PROCMAP_QUERY: 0, or -1 if the kernel refused the first
 * query (the caller reads the file instead).
 */
static int scan_query(int fd, struct scan *sc)
{
	uintptr_t at = sc->a;

	if (__atomic_load_n(&devres__maps_query, __ATOMIC_RELAXED) < 0)
		return -1;
	while (at < sc->end) {
		struct procmap_q q = { .size = sizeof(q),
				       .query_flags = Q_COVERING_OR_NEXT,
				       .query_addr = at };

		if (ioctl(fd, Q_PROCMAP, &q)) {
			if (errno == ENOENT) /* nothing at or above @at */
				break;
			if (sc->any)
				return 0; /* what was met, as a short read */
			/* Not this kernel's, or not allowed: never again. */
			if (errno == ENOTTY || errno == EINVAL ||
			    errno == ENOSYS || errno == EPERM ||
			    errno == EACCES)
				__atomic_store_n(&devres__maps_query, -1,
						 __ATOMIC_RELAXED);
			return -1;
		}
		__atomic_store_n(&devres__maps_query, 1, __ATOMIC_RELAXED);
		if (q.vma_start >= sc->end || q.vma_end <= at)
			break;
		meet(sc, (unsigned long)q.vma_start, (unsigned long)q.vma_end,
		     q.vma_offset, q.dev_major, q.dev_minor,
		     (unsigned long)q.inode);
		at = (uintptr_t)q.vma_end;
	}
	return 0;
}

/* The scan by reading the file. */
static void scan_read(FILE *f, struct scan *sc)
{
	char line[512];
	bool tail = false;

	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e, ino;
		unsigned long long off;
		unsigned int major, minor;
		bool was_tail = tail;
		char *p;

		/*
		 * A line longer than the buffer (a file under a long path)
		 * comes in pieces: only its first holds the fields, the rest
		 * is the path, which anybody who can name a file can make
		 * look like a line of its own.
		 */
		tail = !strchr(line, '\n');
		if (was_tail)
			continue;
		/*
		 * The lines come sorted by address: the range's first, read
		 * cheaply, decides whether to parse the rest of a line, and
		 * one past the range ends the read (the kernel makes no more
		 * of the file than is read).
		 */
		s = strtoul(line, &p, 16);
		if (*p != '-' || strtoul(p + 1, NULL, 16) <= sc->a)
			continue;
		if (s >= sc->end)
			break;
		if (sscanf(line, "%lx-%lx %*s %llx %x:%x %lu", &s, &e, &off,
			   &major, &minor, &ino) != 6)
			continue;
		meet(sc, s, e, off, major, minor, ino);
	}
}

int devres__map_identity(uintptr_t a, size_t len, struct devres__map_id *ret_id)
{
	struct scan sc = { a, a, a + len, false, true, { 0 } };
	FILE *f = NULL;
	int saved = errno, fd;

	/*
	 * open(), not fopen(): nothing that allocates inside the bracket.
	 * The calling thread's view: /proc/self is the main thread's, which
	 * has no maps once it ended by pthread_exit().
	 */
	devres__own_fd_opening();
	fd = open("/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
	devres__own_fd_opened(fd, DEVRES_OWN_MAPS, "a managed mapping");
	if (fd < 0) {
		errno = saved;
		return DEVRES_MAP_UNKNOWN;
	}
	if (!scan_query(fd, &sc)) {
		devres__own_fd_close(fd);
	} else {
		f = fdopen(fd, "r");
		if (!f) {
			devres__own_fd_close(fd);
			errno = saved;
			return DEVRES_MAP_UNKNOWN;
		}
		scan_read(f, &sc);
		devres__own_file_close(f);
	}
	errno = saved;
	if (!sc.any)
		return DEVRES_MAP_GONE;
	if (!sc.one || sc.next < sc.end)
		return DEVRES_MAP_OTHER;
	*ret_id = sc.id;
	return DEVRES_MAP_SAME;
}

void devres__map_identify(struct devres__map *m)
{
	m->have_id = devres__map_identity(m->start, m->end - m->start,
					  &m->id) == DEVRES_MAP_SAME;
}

int devres__map_now(const struct devres__map *m)
{
	struct devres__map_id now;
	int what;

	if (!m->have_id)
		return DEVRES_MAP_UNKNOWN;
	what = devres__map_identity(m->start, m->end - m->start, &now);
	if (what == DEVRES_MAP_SAME &&
	    (now.major != m->id.major || now.minor != m->id.minor ||
	     now.ino != m->id.ino || now.off != m->id.off))
		what = DEVRES_MAP_OTHER;
	return what;
}

void devres__map_warn_behind(struct device *dev, const char *call,
			     const struct devres__map *m, int what)
{
	if (what == DEVRES_MAP_GONE)
		devres__warn(dev, call,
			     "[%p, +%zu) was unmapped behind the library's "
			     "back",
			     (void *)m->start, (size_t)(m->end - m->start));
	else if (what == DEVRES_MAP_OTHER)
		devres__warn(dev, call,
			     "[%p, +%zu) was unmapped behind the library's "
			     "back and now is another mapping: left mapped",
			     (void *)m->start, (size_t)(m->end - m->start));
}

bool devres__map_put(struct devres__map *m, void *addr, size_t len,
		     struct device *dev, const char *call)
{
	int saved = errno, what = devres__map_now(m);
	bool gone = what == DEVRES_MAP_GONE || what == DEVRES_MAP_OTHER;

	if (!devres__map_remove_unmap(m, addr, gone ? 0 : len, &what))
		return false;
	devres__map_warn_behind(dev, call, m, what);
	errno = saved;
	return true;
}
