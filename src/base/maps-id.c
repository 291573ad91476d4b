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
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "subsys.h"

int devres__map_identity(uintptr_t a, size_t len, struct devres__map_id *ret_id)
{
	FILE *f = NULL;
	uintptr_t next = a, end = a + len;
	bool any = false, one = true;
	struct devres__map_id id = { 0 };
	char line[512];
	bool tail = false;
	int saved = errno, fd;

	/* open(), not fopen(): nothing that allocates inside the bracket. */
	devres__own_fd_opening();
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	devres__own_fd_opened(fd, DEVRES_OWN_MAPS, "a managed mapping");
	if (fd >= 0 && !(f = fdopen(fd, "r")))
		devres__own_fd_close(fd);
	if (!f) {
		errno = saved;
		return DEVRES_MAP_UNKNOWN;
	}
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
		if (*p != '-' || strtoul(p + 1, NULL, 16) <= a)
			continue;
		if (s >= end)
			break;
		if (sscanf(line, "%lx-%lx %*s %llx %x:%x %lu", &s, &e, &off,
			   &major, &minor, &ino) != 6)
			continue;
		if (s > next)
			one = false; /* a hole */
		if (!any) {
			/* Anonymous private memory shows no offset. */
			id = (struct devres__map_id){
				major, minor, ino,
				ino ? off + (s < a ? a - s : 0) : 0
			};
			one = one && s <= a;
		} else if (major != id.major || minor != id.minor ||
			   ino != id.ino || (ino && off != id.off + (s - a))) {
			one = false;
		}
		any = true;
		next = e;
	}
	devres__own_file_close(f);
	errno = saved;
	if (!any)
		return DEVRES_MAP_GONE;
	if (!one || next < end)
		return DEVRES_MAP_OTHER;
	*ret_id = id;
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

	if (!devres__map_remove_unmap(m, addr, gone ? 0 : len))
		return false;
	devres__map_warn_behind(dev, call, m, what);
	errno = saved;
	return true;
}
