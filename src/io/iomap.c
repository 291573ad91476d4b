// SPDX-License-Identifier: MIT
/*
 * Register windows and ioremap: which fd backs which physical range, and
 * the mappings made through them.
 *
 * One mutex guards the list of windows, each window's count of mappings
 * and the list of mappings. A window is pinned by its count from the
 * moment a mapping starts until it is unmapped, so the mmap itself runs
 * without the lock and iomem_window_remove() can never close an fd that a
 * mapping is being made from. Lock order: this lock, then the resource
 * tree's (inside remove_resource_unless_busy() and insert_resource()).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <devres/io.h>
#include "io-internal.h"

struct iomem_window {
	struct resource res; /* [start, end] in iomem_resource */
	int fd;
	off_t offset;
	unsigned int nmaps; /* live mappings, and those being made */
	int pid;	    /* the process that added it */
	struct iomem_window *next;
	char name[];
};

struct iomap {
	void *addr; /* what the caller got */
	void *base; /* what mmap() returned */
	size_t len;
	struct iomem_window *win;
	struct iomap *next;
	struct devres__owner owner; /* a devm_ mapping's node */
	int pid;		    /* the process that mapped it */
	struct devres__map rec;	    /* a devm_ one's, in base/maps.c */
	bool recorded;		    /* rec was added */
};

static bool mine(int pid)
{
	return pid == devres__pid_now();
}

static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iomem_window *windows;
static struct iomap *maps;

/* Held across fork(): the child finds it free (docs/fork.md). */
__attribute__((constructor)) static void io_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_IO, &io_lock);
}

static struct iomem_window *find_window(phys_addr_t addr)
{
	struct iomem_window *w;

	for (w = windows; w; w = w->next)
		if (w->res.start <= addr && addr <= w->res.end)
			return w;
	return NULL;
}

static bool overlaps_window(phys_addr_t start, phys_addr_t end)
{
	const struct iomem_window *w;

	for (w = windows; w; w = w->next)
		if (w->res.start <= end && start <= w->res.end)
			return true;
	return false;
}

/* What can be checked before anything is acquired. */
static int check_fd(int fd, off_t offset, resource_size_t size)
{
	struct stat st;
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	if ((flags & O_ACCMODE) != O_RDWR)
		return -EACCES;
	if (fstat(fd, &st))
		return -errno;
	/* A memfd shorter than the window would fault (SIGBUS) on access. */
	if (S_ISREG(st.st_mode) &&
	    (st.st_size < offset || (uint64_t)(st.st_size - offset) < size))
		return -EINVAL;
	return 0;
}

int iomem_window_add(phys_addr_t start, resource_size_t size, int fd,
		     off_t offset, const char *name)
{
	struct iomem_window *w;
	size_t len;
	int ret;

	if (devres__arg_bad(NULL, name, __func__, "name"))
		return -EINVAL;
	if (!size || start + size - 1 < start || offset < 0 ||
	    size > (uint64_t)INT64_MAX - (uint64_t)offset)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	ret = check_fd(fd, offset, size);
	if (ret)
		return ret;
	if (devres__should_fail())
		return -ENOMEM;
	len = strlen(name) + 1;
	w = calloc(1, sizeof(*w) + len);
	if (!w)
		return -ENOMEM;
	memcpy(w->name, name, len);
	w->res.start = start;
	w->res.end = start + size - 1;
	w->res.name = w->name;
	w->res.flags = IORESOURCE_MEM;
	w->offset = offset;
	w->pid = devres__pid_now();
	if (devres__should_fail_fd()) {
		free(w);
		return -EMFILE;
	}
	devres__own_fd_opening();
	w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	devres__own_fd_opened(w->fd, DEVRES_OWN_IO_WINDOW, w->name);
	if (w->fd < 0) {
		ret = -errno;
		free(w);
		return ret;
	}
	devres__ledger_add(DL_FDS, 1);

	pthread_mutex_lock(&io_lock);
	ret = overlaps_window(start, w->res.end) ? -EBUSY : 0;
	if (!ret)
		ret = insert_resource(&iomem_resource, &w->res);
	if (!ret) {
		w->next = windows;
		windows = w;
	}
	pthread_mutex_unlock(&io_lock);
	if (ret) {
		devres__own_fd_close(w->fd);
		devres__ledger_add(DL_FDS, -1);
		free(w);
	}
	return ret;
}

int iomem_window_remove(phys_addr_t start)
{
	struct iomem_window **pp, *w;
	unsigned int nmaps = 0;
	int ret = -ENOENT, pid = 0;
	char name[64];

	pthread_mutex_lock(&io_lock);
	for (pp = &windows; (w = *pp); pp = &w->next)
		if (w->res.start == start)
			break;
	if (w) {
		/* Copied now: once unlocked, another thread may remove it. */
		snprintf(name, sizeof(name), "%s", w->name);
		nmaps = w->nmaps;
		pid = w->pid;
		if (!mine(pid))
			ret = -ECHILD;
		else
			ret = nmaps ? -EBUSY
				    : remove_resource_unless_busy(&w->res);
		/* Someone took the range out of the tree: the window goes. */
		if (ret == -EINVAL)
			ret = 0;
		if (!ret)
			*pp = w->next;
	}
	pthread_mutex_unlock(&io_lock);
	if (ret == -ENOENT) {
		devres__warn(NULL, __func__, "no window at %#llx",
			     (unsigned long long)start);
	} else if (ret == -ECHILD) {
		devres__warn(NULL, __func__, "window %s belongs to process %d",
			     name, pid);
	} else if (ret) {
		devres__warn(NULL, __func__, "window %s is in use (%s)", name,
			     nmaps ? "mapped" : "busy regions");
	} else {
		devres__own_fd_close(w->fd);
		devres__ledger_add(DL_FDS, -1);
		free(w);
	}
	return ret;
}

static void unpin(struct iomem_window *w)
{
	pthread_mutex_lock(&io_lock);
	w->nmaps--;
	pthread_mutex_unlock(&io_lock);
}

/* Finds and pins the window that holds [phys, phys + size). */
static struct iomem_window *pin(phys_addr_t phys, size_t size, int *ret_err)
{
	struct iomem_window *w;
	char name[64];
	int pid = 0;

	pthread_mutex_lock(&io_lock);
	w = find_window(phys);
	if (!w) {
		*ret_err = ENXIO;
	} else if (!mine(w->pid)) {
		/* A child of fork() maps nothing through its parent's. */
		*ret_err = ECHILD;
		pid = w->pid;
		snprintf(name, sizeof(name), "%s", w->name);
		w = NULL;
	} else if (phys + size - 1 > w->res.end) {
		*ret_err = ERANGE;
		w = NULL;
	} else {
		w->nmaps++;
	}
	pthread_mutex_unlock(&io_lock);
	if (pid)
		devres__warn(NULL, "ioremap", "window %s belongs to process %d",
			     name, pid);
	return w;
}

/*
 * A managed mapping unmapped, replaced or moved by the application's own
 * call (base/maps.c, under its lock): its node goes here, with io_lock
 * keeping the node's device alive, and the mapping is the caller's to
 * unmap. Nothing, when it was taken off the list already (its node's
 * release, or devm_iounmap(), is giving it back).
 */
static bool take_by_hand(struct devres__map *rec, struct devres__hand *h)
{
	struct iomap *m =
		(struct iomap *)(((char *)rec) - offsetof(struct iomap, rec));
	struct iomap **pp, *it;

	pthread_mutex_lock(&io_lock);
	for (pp = &maps; (it = *pp); pp = &it->next)
		if (it == m)
			break;
	if (it && mine(m->pid) && m->owner.dev) {
		*pp = m->next;
		devres__disown(&m->owner, h);
		m->win->nmaps--;
	} else {
		it = NULL;
	}
	pthread_mutex_unlock(&io_lock);
	if (!it)
		return false;
	devres__ledger_add(DL_MAPS, -1);
	devres__ledger_add(DL_MAP_BYTES, -(long)m->len);
	free(m);
	return true;
}

/* Who owns @rec's mapping, for a refused madvise() or mprotect(). */
static bool who_by_hand(const struct devres__map *rec, struct devres__hand *h)
{
	const struct iomap *m =
		(const struct iomap *)(((const char *)rec) -
				       offsetof(struct iomap, rec));
	const struct iomap *it;

	pthread_mutex_lock(&io_lock);
	for (it = maps; it; it = it->next)
		if (it == m)
			break;
	if (it && !(mine(m->pid) && m->owner.dev))
		it = NULL;
	if (it)
		devres__owner_hand(&m->owner, h);
	pthread_mutex_unlock(&io_lock);
	return it != NULL;
}

/*
 * The file behind a window is the authority on its size, not the check
 * iomem_window_add() made: a memfd shrunk since would fault (SIGBUS) on
 * the first access past its end, so the range is checked again at each
 * mapping. A mapping made before a shrink is the program's own to keep
 * from touching. 0, or the errno.
 */
static int backing_holds(int fd, off_t pos, size_t size)
{
	struct stat st;

	if (fstat(fd, &st))
		return errno;
	if (S_ISREG(st.st_mode) &&
	    (st.st_size < pos || (uint64_t)(st.st_size - pos) < size))
		return ERANGE;
	return 0;
}

static void unmap(struct iomap *m, const char *call);

void *io__remap(phys_addr_t offset, size_t size,
		const struct devres__owner *owner)
{
	size_t page = devres__page_size(), delta, len;
	struct iomem_window *w;
	struct iomap *m;
	off_t pos;
	void *base, *addr;
	int err = ENXIO; /* pin() sets it whenever it fails */
	bool refused = false;

	if (!size || offset + size - 1 < offset || size > SIZE_MAX / 2) {
		err = EINVAL;
		goto fail;
	}
	w = pin(offset, size, &err);
	if (!w)
		goto fail;
	err = ENOMEM;
	if (devres__should_fail())
		goto unpin;
	m = malloc(sizeof(*m));
	if (!m)
		goto unpin;
	pos = w->offset + (off_t)(offset - w->res.start);
	err = backing_holds(w->fd, pos, size);
	if (err) {
		free(m);
		goto unpin;
	}
	err = ENOMEM;
	delta = (size_t)pos % page;
	len = (delta + size + page - 1) / page * page;
	if (devres__should_fail()) {
		free(m);
		goto unpin;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd,
		    pos - (off_t)delta);
	if (base == MAP_FAILED) {
		err = errno;
		free(m);
		goto unpin;
	}
	devres__ledger_add(DL_MAPS, 1);
	devres__ledger_add(DL_MAP_BYTES, (long)len);
	m->base = base;
	m->addr = addr = (char *)base + delta;
	m->len = len;
	m->win = w;
	m->owner = owner ? *owner : (struct devres__owner){ 0 };
	m->pid = devres__pid_now();
	m->rec = (struct devres__map){ .start = (uintptr_t)base,
				       .end = (uintptr_t)base + len,
				       .take = take_by_hand,
				       .who = who_by_hand };
	m->recorded = owner != NULL;
	/*
	 * What its release checks is still there (base/maps-id.c): a
	 * managed one's, and a plain one's too, which no record follows (a
	 * munmap() by hand leaves it listed, its range another owner's).
	 */
	devres__map_identify(&m->rec);
	/*
	 * Recorded before it is listed: once listed, an iounmap() by hand
	 * may free @m, which is not read after. A munmap() by hand over
	 * it meanwhile finds it unlisted and takes it out of the table: it
	 * is then no longer recorded, and its release leaves the range.
	 */
	if (owner && devres__map_add(&m->rec)) {
		/* Not recorded, so not given out: taken back at once. */
		devres__munmap(base, len);
		devres__ledger_add(DL_MAPS, -1);
		devres__ledger_add(DL_MAP_BYTES, -(long)len);
		free(m);
		err = ENOMEM;
		goto unpin;
	}
	pthread_mutex_lock(&io_lock);
	m->next = maps;
	maps = m;
	if (owner) {
		*(void **)owner->node = addr;
		refused = !devres__owner_add(owner);
	}
	/* Refused by its device: unlisted, seen by nobody, taken back. */
	if (refused) {
		maps = m->next;
		m->owner = (struct devres__owner){ 0 };
	}
	pthread_mutex_unlock(&io_lock);
	if (owner)
		devres__log_release();
	if (refused) {
		unmap(m, owner->call ? owner->call : "ioremap");
		err = ENODEV;
		goto fail;
	}
	return addr;

unpin:
	unpin(w);
fail:
	if (owner)
		devres_free(owner->node);
	errno = err;
	return NULL;
}

void *ioremap(phys_addr_t offset, size_t size)
{
	return io__remap(offset, size, NULL);
}

void *ioremap_wc(phys_addr_t offset, size_t size)
{
	return ioremap(offset, size);
}

/*
 * A plain mapping's range, unmapped by the program's own munmap() (or
 * moved by its mremap()), may be another owner's now: unmapped only while
 * it still is the window's file at the same offset, else left as it is,
 * with one WARN in @call's name.
 */
static void unmap_plain_range(struct iomap *m, const char *call)
{
	int what = devres__map_now(&m->rec);

	if (what == DEVRES_MAP_GONE || what == DEVRES_MAP_OTHER)
		devres__map_warn_behind(NULL, call, &m->rec, what);
	else
		devres__munmap(m->base, m->len);
}

static void unmap(struct iomap *m, const char *call)
{
	/*
	 * Out of the table and unmapped under one hold of its lock (a plain
	 * mmap(MAP_FIXED) cannot land in between); a plain call that took
	 * it first unmapped it there. One unmapped or replaced by a raw
	 * system call is left mapped, with a WARN.
	 */
	if (!m->recorded)
		unmap_plain_range(m, call);
	else
		devres__map_put(&m->rec, m->base, m->len, m->owner.dev,
				m->owner.call ? m->owner.call : "ioremap");
	devres__ledger_add(DL_MAPS, -1);
	devres__ledger_add(DL_MAP_BYTES, -(long)m->len);
	/* Unpinned only once unmapped: the window outlives its mappings. */
	unpin(m->win);
	free(m);
}

/*
 * Takes the mapping at @a off the list: by hand (@node NULL), any; for a
 * node, only the one it owns. A managed one taken by hand loses its node
 * here, with io_lock keeping the node's device alive.
 */
static struct iomap *take(void *a, const void *node, struct devres__hand *h,
			  bool *ret_owned)
{
	struct iomap **pp, *m;

	pthread_mutex_lock(&io_lock);
	for (pp = &maps; (m = *pp); pp = &m->next)
		if (m->addr == a)
			break;
	if (m && node && !devres__owned_by(&m->owner, node))
		m = NULL;
	/* The parent's, in a child of fork(): not taken, h says whose. */
	if (m && !mine(m->pid)) {
		if (h)
			h->pid = m->pid;
		m = NULL;
	}
	if (m) {
		*pp = m->next;
		*ret_owned = !node && m->owner.dev;
		if (*ret_owned)
			devres__disown(&m->owner, h);
	}
	pthread_mutex_unlock(&io_lock);
	return m;
}

/*
 * A mapping of ioremap() given back by hand with @call, iounmap() or
 * pci_iounmap() (base/plain-unmap.c): unmapped now, a managed one's node
 * taken off with its WARN. 0, or -ENOENT when @a is none of them.
 */
static int unmap_plain(void *a, const char *call)
{
	struct devres__hand hand;
	bool owned = false;
	struct iomap *m;

	hand.pid = 0;
	m = take(a, NULL, &hand, &owned);
	if (!m && hand.pid) {
		devres__warn(NULL, call,
			     "mapping %p belongs to process %d: not unmapped",
			     a, hand.pid);
		return 0;
	}
	if (!m)
		return -ENOENT;
	if (owned)
		devres__warn_hand(&hand, call, "a mapping");
	unmap(m, call);
	return 0;
}

__attribute__((constructor)) static void io_unmapper(void)
{
	(void)devres__unmapper_register(unmap_plain);
}

void iounmap(volatile void *addr)
{
	void *a = (void *)(uintptr_t)addr;
	int saved = errno;

	if (!a)
		return;
	/* Ours, or a mapping of another family the kernel's accepts. */
	if (devres__unmap_plain(a, __func__) == -ENOENT)
		devres__warn(NULL, __func__, "%p is not a mapping from ioremap",
			     a);
	errno = saved;
}

void io__unmap_owned(void *addr, const void *node)
{
	bool owned;
	struct iomap *m = take(addr, node, NULL, &owned);
	int saved = errno;

	if (m)
		unmap(m, "devm_iounmap");
	errno = saved;
}
