// SPDX-License-Identifier: MIT
/*
 * Managed mappings: devm_mmap and devm_munmap.
 *
 * A node holds the address and the length in whole pages, which is what
 * the kernel maps and what /proc/self/maps shows, so the ledger's bytes
 * agree with it. Only whole mappings are unmapped: after a partial unmap
 * the node would describe memory that is no longer there.
 *
 * munmap(2), mremap(2) and mmap(2) with MAP_FIXED are the library's too
 * (base/maps.c): the node's record is in the process's table of managed
 * mappings, and a plain call over it takes the node off the device at
 * once, with a WARN. The record is the token: the release gives the
 * mapping back only if it takes the record itself.
 *
 * A raw system call goes past that. So a node also remembers what
 * /proc/self/maps said of its range (the device and inode mapped, and the
 * file offset at its first byte), and its release unmaps the range only if
 * it is still wholly mapped, from the same object at the same offsets: a
 * range unmapped since, or mapped since by another owner from another
 * object, is left alone, with a WARN. An anonymous private mapping has no
 * such identity (device 0, inode 0): one put at the same address since
 * looks the same, and is unmapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "base/subsys.h"
#include <devres/posix.h>

struct map_dr {
	void *addr;
	size_t len;
	struct devres__map rec;
};

/* @len in whole pages, or 0 when that does not fit in a size_t. */
static size_t page_align(size_t len)
{
	size_t mask = devres__page_size() - 1;

	if (len > SIZE_MAX - mask)
		return 0;
	return (len + mask) & ~mask;
}

static void devm_mmap_release(struct device *dev, void *res)
{
	struct map_dr *dr = res;
	int saved = errno;

	/*
	 * Out of the table and unmapped under one hold of its lock, unless
	 * it is no longer what was mapped (base/maps-id.c): a plain
	 * mmap(MAP_FIXED) of another owner's cannot land in between and be
	 * unmapped here. A plain call that took it first unmapped it there
	 * and dropped its counts.
	 */
	if (!devres__map_put(&dr->rec, dr->addr, dr->len, dev, "devm_mmap"))
		return;
	devres__ledger_add(DL_MAPS, -1);
	devres__ledger_add(DL_MAP_BYTES, -(long)dr->len);
	errno = saved;
}

static void devm_mmap_dropped(struct devres__map *m)
{
	devres__ledger_add(DL_MAPS, -1);
	devres__ledger_add(DL_MAP_BYTES, -(long)(m->end - m->start));
}

void *devm_mmap(struct device *dev, void *addr, size_t len, int prot, int flags,
		int fd, off_t off)
{
	struct map_dr *dr;
	size_t mapped;
	void *p;
	int err;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return ERR_PTR(-EINVAL);
	if (!len)
		return ERR_PTR(-EINVAL);
	mapped = page_align(len);
	if (!mapped)
		return ERR_PTR(-ENOMEM);
	dr = devres_alloc_named(devm_mmap_release, sizeof(*dr), GFP_KERNEL,
				__func__);
	if (!dr)
		return ERR_PTR(-ENOMEM);
	if (devres__should_fail()) {
		errno = ENOMEM;
		p = MAP_FAILED;
	} else {
		p = devres__mmap(addr, len, prot, flags, fd, off);
	}
	if (p == MAP_FAILED) {
		err = errno;
		devres_free(dr);
		return ERR_PTR(-err);
	}
	dr->addr = p;
	dr->len = mapped;
	dr->rec = (struct devres__map){
		.start = (uintptr_t)p,
		.end = (uintptr_t)p + mapped,
		.owner = { dev, dr, devm_mmap_release, "devm_mmap",
			   "devm_munmap()" },
		.dropped = devm_mmap_dropped,
	};
	devres__map_identify(&dr->rec);
	devres__ledger_add(DL_MAPS, 1);
	devres__ledger_add(DL_MAP_BYTES, (long)mapped);
	/*
	 * Recorded and on @dev in one hold of the table's lock: from then
	 * another thread's release of the device may unmap it and free
	 * @dr, which is not touched after. Added first and recorded after,
	 * a release in between freed @dr under the recording.
	 */
	err = devres__map_add_owned(&dr->rec);
	if (err) {
		/* Not recorded, the node not added: its release never runs. */
		devres__ledger_add(DL_MAPS, -1);
		devres__ledger_add(DL_MAP_BYTES, -(long)mapped);
		devres__munmap(p, mapped);
		devres_free(dr);
		return ERR_PTR(err);
	}
	return p;
}

struct range {
	uintptr_t start;
	size_t len;
};

static int match_exact(struct device *dev, void *res, void *data)
{
	const struct map_dr *dr = res;
	const struct range *r = data;

	(void)dev;
	return (uintptr_t)dr->addr == r->start && dr->len == r->len;
}

static int match_overlap(struct device *dev, void *res, void *data)
{
	const struct map_dr *dr = res;
	const struct range *r = data;
	uintptr_t start = (uintptr_t)dr->addr;

	(void)dev;
	return r->start < start + dr->len && start < r->start + r->len;
}

void devm_munmap(struct device *dev, void *addr, size_t len)
{
	struct range r = { (uintptr_t)addr, page_align(len) };
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__))
		return;
	if (r.len &&
	    devres_release(dev, devm_mmap_release, match_exact, &r) == 0)
		return;
	/* An empty range overlaps what contains its first byte. */
	if (!r.len || r.start + r.len < r.start)
		r.len = 1;
	if (devres_find(dev, devm_mmap_release, match_overlap, &r))
		devres__warn(dev, __func__,
			     "[%p, +%zu) overlaps a managed mapping but is not "
			     "one: not unmapped",
			     addr, len);
	else
		devres__warn_foreign(dev, __func__,
				     devres__maps_owner(addr, &h) ? &h : NULL,
				     "[%p, +%zu) is not mapped by this device",
				     addr, len);
}
