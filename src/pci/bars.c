// SPDX-License-Identifier: MIT
/*
 * A device's BARs in the process: each enters the resource tree (memory
 * BARs iomem_resource, I/O BARs ioport_resource) where nothing else is,
 * so that its regions can be claimed (one that overlaps is not, and its
 * claims are refused), and a memory BAR is mapped only from its own
 * resourceN file.
 *
 * No register window is made for a BAR: a BAR's address is the host's,
 * and an ioremap() by address would reach whatever window of the process
 * covers it. pci__bar_map() opens the BAR's file at the moment of the
 * mapping, checks it against the scan (the device's directory, the file,
 * its size, the BAR's line in `resource`, the ids in config) and maps that
 * fd. A BAR the scan found no file for is not mappable (-ENODEV).
 *
 * Mappings are listed under map_lock, so that read-only mode can take
 * write access away from every one of them: pci_sysfs_set_readonly() sets
 * the flag, then walks the list; a mapping is listed under the lock after
 * checking the flag, and given out only once listed, so no mapping escapes
 * both. Lock order: a device's own lock, then map_lock, then a device's
 * devres lock; base/maps.c's lock before any of them.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <devres/io.h>
#include "pci.h"

/* Set on a BAR the kernel has not placed: there is nothing to insert. */
#define IORESOURCE_DISABLED 0x10000000ul

struct pci_map {
	void *addr;
	size_t len;
	bool writable;
	struct devres__owner owner; /* a pcim_iomap() mapping's node */
	struct pci_map *next;
	int pid; /* the process that mapped it: a child of fork() does not */
	struct devres__map rec; /* a pcim_iomap() one's, in base/maps.c */
	bool recorded;		/* rec was added */
	char dev[64];		/* the device's name, for a WARN */
};

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pci_map *maps;
/* This thread holds map_lock: its signal handler's mprotect() won't look. */
static TLS_FAST unsigned int map_lock_mine;

static void lock_maps(void)
{
	__atomic_store_n(&map_lock_mine, map_lock_mine + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&map_lock);
}

static void unlock_maps(void)
{
	pthread_mutex_unlock(&map_lock);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&map_lock_mine, map_lock_mine - 1, __ATOMIC_RELAXED);
}

static void maps_take(void)
{
	lock_maps();
}

static void maps_give(void)
{
	unlock_maps();
}

/*
 * Read-only mode is the parent's at the fork, and holds in the child for
 * every mapping of the process, the copies of the parent's too (a write
 * through one reaches the parent's device): a switch another thread was
 * making had set the mode but not yet protected the mappings, and never
 * does in the child. So the child's copies lose write access here, as a
 * switch of the child's own takes it from them.
 */
static void maps_child(void)
{
	if (pci__readonly())
		for (struct pci_map *m = maps; m; m = m->next)
			if (m->writable &&
			    !devres__mprotect(m->addr, m->len, PROT_READ)) {
				m->writable = false;
				devres__map_set_readonly(&m->rec);
			}
	unlock_maps();
}

/*
 * Held across fork(): the child finds it free, and the parent's mappings
 * listed, each refused to it by its process (docs/fork.md).
 */
__attribute__((constructor)) static void maps_atfork(void)
{
	devres__atfork(DEVRES_FORK_PCI_MAPS, maps_take, maps_give, maps_child);
}

int pci__bars_claim(struct pci_dev *pdev)
{
	for (int i = 0; i < PCI_NUM_RESOURCES; i++) {
		struct resource *r = &pdev->resource[i];
		struct resource *root;

		if (!r->flags || !r->end ||
		    (r->flags & (IORESOURCE_UNSET | IORESOURCE_DISABLED)))
			continue;
		r->name = pdev->p->name;
		if (resource_type(r) == IORESOURCE_MEM)
			root = &iomem_resource;
		else if (resource_type(r) == IORESOURCE_IO)
			root = &ioport_resource;
		else
			continue;
		/*
		 * Only where nothing is, as the kernel claims a BAR: an
		 * insert would nest a BAR given another's range (by a hostile
		 * `resource`) inside that one, or that one inside it, and a
		 * region claim of either would then be made in the other.
		 */
		__atomic_store_n(&pdev->p->inserted[i],
				 request_resource(root, r) == 0,
				 __ATOMIC_RELEASE);
	}
	return 0;
}

void pci__bars_release(struct pci_dev *pdev)
{
	for (int i = 0; i < PCI_NUM_RESOURCES; i++) {
		if (pdev->p->inserted[i])
			(void)remove_resource(&pdev->resource[i]);
		__atomic_store_n(&pdev->p->inserted[i], false,
				 __ATOMIC_RELEASE);
	}
}

bool pci__bar_placed(const struct pci_dev *pdev, int bar)
{
	const struct resource *r = &pdev->resource[bar];

	/* Nothing to place: claimed at its numbers, as it always was. */
	if (!r->end || (r->flags & (IORESOURCE_UNSET | IORESOURCE_DISABLED)))
		return true;
	return __atomic_load_n(&pdev->p->inserted[bar], __ATOMIC_ACQUIRE);
}

/* The BAR's line of `resource` now is the line the scan read. */
static int check_resource_line(struct pci_dev *pdev, int bar)
{
	char buf[PCI_NUM_RESOURCES * 60 + 2];
	struct resource now[PCI_NUM_RESOURCES];
	const struct resource *was = &pdev->resource[bar];
	ssize_t n;

	n = pci__read_file(pdev, "resource", buf, sizeof(buf));
	if (n < 0)
		return n == -EFBIG ? -ESTALE : (int)n;
	memset(now, 0, sizeof(now));
	if (pci__parse_resource(buf, (size_t)n, now, PCI_NUM_RESOURCES) < 0 ||
	    now[bar].start != was->start || now[bar].end != was->end ||
	    now[bar].flags != was->flags) {
		dev_warn(&pdev->dev, "BAR %d changed since the scan", bar);
		return -ESTALE;
	}
	return 0;
}

/* The fd of the BAR's own file, checked, holding at least @len bytes. */
static int open_bar(struct pci_dev *pdev, int bar, size_t len)
{
	char file[16] = "resource0";
	struct stat st;
	int fd, ret;

	ret = pci__check_ids(pdev);
	if (!ret)
		ret = check_resource_line(pdev, bar);
	if (ret)
		return ret;
	file[8] = (char)('0' + bar);
	fd = pci__open(pdev, file, O_RDWR);
	if (fd < 0)
		return fd;
	/* A file shorter than the BAR would fault (SIGBUS) past its end. */
	if (fstat(fd, &st) ||
	    st.st_size < pdev->p->files[PCI_F_BAR0 + bar].size ||
	    (uint64_t)st.st_size < (uint64_t)pci_resource_len(pdev, bar) ||
	    (uint64_t)st.st_size < len) {
		dev_warn(&pdev->dev, "%s is shorter than BAR %d", file, bar);
		pci__close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * A backend's BAR (VFIO's region): the backend's fd, which stays its own,
 * at the region's offset, holding at least @len bytes.
 */
static int backend_bar(struct pci_dev *pdev, int bar, size_t len,
		       off_t *ret_off)
{
	uint64_t size;
	int fd, ret;

	ret = pci__bk_bar_window(pdev, bar, &fd, ret_off, &size);
	if (ret)
		return ret;
	return size >= len ? fd : -EINVAL;
}

/*
 * A pcim_iomap() mapping unmapped, replaced or moved by the application's
 * own call (base/maps.c, under its lock): its node goes here, under
 * map_lock, and its pcim_iomap_table() slot once unlocked, with a
 * reference keeping the device; the mapping is the caller's to unmap.
 * Nothing, when it was taken off the list already.
 */
static bool bar_take(struct devres__map *rec, struct devres__hand *h)
{
	struct pci_map *m = (struct pci_map *)(((char *)rec) -
					       offsetof(struct pci_map, rec));
	struct pci_map **pp, *it;
	struct device *dev = NULL;
	bool taken = false;

	lock_maps();
	for (pp = &maps; (it = *pp); pp = &it->next)
		if (it == m)
			break;
	if (it && m->pid == devres__pid_now() && m->owner.dev) {
		*pp = m->next;
		taken = true;
		/*
		 * A device past its last reference is releasing its
		 * resources on another thread (this node's release waits for
		 * map_lock, then finds nothing): its table goes with it.
		 */
		if (devres__ref_if_alive(m->owner.dev))
			dev = m->owner.dev;
		devres__disown(&m->owner, h);
	}
	unlock_maps();
	if (!taken)
		return false;
	if (dev) {
		(void)pci__iomap_forget(to_pci_dev(dev), m->addr);
		put_device(dev);
	}
	devres__ledger_add(DL_MAPS, -1);
	devres__ledger_add(DL_MAP_BYTES, -(long)m->len);
	free(m);
	return true;
}

/* Who owns @rec's mapping, for a refused madvise() or mprotect(). */
static bool bar_who(const struct devres__map *rec, struct devres__hand *h)
{
	const struct pci_map *m =
		(const struct pci_map *)(((const char *)rec) -
					 offsetof(struct pci_map, rec));
	const struct pci_map *it;

	lock_maps();
	for (it = maps; it; it = it->next)
		if (it == m)
			break;
	if (it && !(m->pid == devres__pid_now() && m->owner.dev))
		it = NULL;
	if (it)
		devres__owner_hand(&m->owner, h);
	unlock_maps();
	return it != NULL;
}

/*
 * Filled in before the mapping is listed: pci__bars_protect() may mark it
 * read-only as soon as it is.
 */
static void init_record(struct pci_map *m)
{
	size_t mask = devres__page_size() - 1;

	m->rec = (struct devres__map){
		.start = (uintptr_t)m->addr,
		.end = ((uintptr_t)m->addr + m->len + mask) & ~(uintptr_t)mask,
		.take = bar_take,
		.who = bar_who,
	};
}

/*
 * Whether @m is still the mapping it was made (a pci_iomap() one, which
 * no record follows, may have been unmapped by hand and its address
 * given to another owner), or cannot be told.
 */
static bool still_there(const struct pci_map *m)
{
	int what = devres__map_now(&m->rec);

	return what == DEVRES_MAP_SAME || what == DEVRES_MAP_UNKNOWN;
}

/*
 * Gives back @m, unlinked (no other caller finds it) and still mapped (the
 * address cannot be mapped again yet). Its pcim_iomap_table() slot goes
 * before the address can be reused (another BAR's slot may then hold it),
 * whoever unmaps it and whichever device the caller named; with no lock
 * of this file held, as the device's own lock is taken before map_lock.
 * @owner: the device of the node that owned it, if any.
 */
static void drop(struct pci_map *m, struct device *owner)
{
	if (owner)
		(void)pci__iomap_forget(to_pci_dev(owner), m->addr);
	/*
	 * Out of the table and unmapped under one hold of its lock (a plain
	 * mmap(MAP_FIXED) cannot land in between); a plain call that took
	 * it first unmapped it there. One unmapped or replaced by a raw
	 * system call is left mapped, with a WARN.
	 */
	if (!m->recorded) {
		/* A pci_iomap() one unmapped by hand: another's pages now. */
		if (still_there(m))
			devres__munmap(m->addr, m->len);
	} else {
		devres__map_put(&m->rec, m->addr, m->len, owner,
				m->owner.call ? m->owner.call : "pci_iomap");
	}
	devres__ledger_add(DL_MAPS, -1);
	devres__ledger_add(DL_MAP_BYTES, -(long)m->len);
	free(m);
}

/*
 * Lists @m, under map_lock, with the BAR's pcim_iomap_table() slot and
 * the node of @owner (pcim_iomap()) in the same hold of the device's lock
 * and map_lock: a pci_iounmap() or munmap() by hand, which takes the
 * mapping off the list under map_lock, then finds its node on the device
 * and its slot set. Checked under it: read-only mode (pci__bars_protect()
 * walks the list under map_lock after setting the flag, so no mapping
 * escapes both) and the slot. 0, -EROFS, -EBUSY or -ENODEV (the device
 * refused the node, released meanwhile): nothing listed.
 */
static int list_map(struct pci_dev *pdev, int bar, struct pci_map *m,
		    const struct devres__owner *owner)
{
	void **slots = owner ? pci__iomap_slots(pdev) : NULL;
	bool held = false;
	int ret = 0;

	if (owner)
		pthread_mutex_lock(&pdev->p->lock);
	lock_maps();
	if (pci__readonly())
		ret = -EROFS;
	else if (slots && slots[bar])
		ret = -EBUSY;
	if (!ret) {
		m->next = maps;
		maps = m;
	}
	if (!ret && slots && owner) {
		slots[bar] = m->addr;
		*(void **)owner->node = m->addr;
		held = true;
		/* Refused by the device: unlisted, seen by nobody. */
		if (!devres__owner_add(owner)) {
			slots[bar] = NULL;
			maps = m->next;
			ret = -ENODEV;
		}
	}
	unlock_maps();
	if (owner)
		pthread_mutex_unlock(&pdev->p->lock);
	if (held)
		devres__log_release();
	return ret;
}

int pci__bar_map(struct pci_dev *pdev, int bar, unsigned long maxlen,
		 const struct devres__owner *owner, void **ret_addr)
{
	resource_size_t len;
	struct pci_map *m;
	char label[64];
	off_t off = 0;
	void *addr;
	int fd, ret;

	if (!pdev || !pdev->p || bar < 0 || bar >= PCI_STD_NUM_BARS ||
	    resource_type(&pdev->resource[bar]) != IORESOURCE_MEM)
		return -EINVAL;
	len = pci_resource_len(pdev, bar);
	if (!len)
		return -EINVAL;
	if (maxlen && maxlen < len)
		len = maxlen;
	if (len > SIZE_MAX / 2)
		return -EINVAL;
	/* Only through its own file: never through another window. */
	if (!pci__bk(pdev, bar_window) &&
	    !pdev->p->files[PCI_F_BAR0 + bar].present)
		return -ENODEV;
	if (pci__readonly())
		return -EROFS;
	if (devres__should_fail())
		return -ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	fd = pci__bk(pdev, bar_window)
		     ? backend_bar(pdev, bar, (size_t)len, &off)
		     : open_bar(pdev, bar, (size_t)len);
	if (fd < 0) {
		free(m);
		return fd;
	}
	m->len = (size_t)len;
	m->owner = owner ? *owner : (struct devres__owner){ 0 };
	snprintf(m->dev, sizeof(m->dev), "%s",
		 devres__dev_label(&pdev->dev, label, sizeof(label)));
	m->writable = true;
	m->pid = devres__pid_now();
	/*
	 * Made before it is listed, and not given out before: read-only
	 * mode set meanwhile is checked again when it is listed.
	 */
	addr = MAP_FAILED;
	/* The mapping's own fault point: mmap() out of address space. */
	ret = devres__should_fail_as("mmap", -ENOMEM) ? -ENOMEM : 0;
	if (!ret) {
		addr = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			    fd, off);
		ret = addr == MAP_FAILED ? -errno : 0;
	}
	if (!pci__bk(pdev, bar_window))
		pci__close(fd);
	if (ret) {
		free(m);
		return ret;
	}
	m->addr = addr;
	init_record(m);
	devres__ledger_add(DL_MAPS, 1);
	devres__ledger_add(DL_MAP_BYTES, (long)m->len);
	/*
	 * Recorded before it is listed (once listed, a pci_iounmap() by
	 * hand may free @m, which is not read after): a munmap() by hand
	 * over it meanwhile finds it unlisted and takes it out of the
	 * table; it is then no longer recorded, and its release leaves the
	 * range. What its release checks is still there (base/maps-id.c).
	 */
	/*
	 * Identified either way: read-only mode tells the program's own
	 * mapping, unmapped by hand since, from what is at its address now.
	 */
	devres__map_identify(&m->rec);
	if (owner) {
		if (devres__map_add(&m->rec)) {
			/* Not recorded, so not given out: taken back now. */
			drop(m, NULL);
			return -ENOMEM;
		}
		m->recorded = true;
	}
	ret = list_map(pdev, bar, m, owner);
	if (ret) {
		drop(m, NULL);
		return ret;
	}
	*ret_addr = addr;
	return 0;
}

int pci__bar_unmap(void *addr, const void *node, struct devres__hand *h,
		   bool *ret_owned)
{
	struct pci_map **pp, *m;
	struct device *owner = NULL;

	lock_maps();
	for (pp = &maps; (m = *pp); pp = &m->next)
		if (m->addr == addr)
			break;
	/* A node releases only the mapping it still owns. */
	if (m && node && !devres__owned_by(&m->owner, node))
		m = NULL;
	if (m && m->pid != devres__pid_now()) {
		h->pid = m->pid;
		unlock_maps();
		return -ECHILD;
	}
	if (m) {
		*pp = m->next;
		owner = m->owner.dev;
		/*
		 * By hand: the node goes now, under the lock, and the call
		 * holds the device until drop() is done with it, as its
		 * caller may hold none (or not name it). A device past its
		 * last reference is releasing its resources on another
		 * thread (this node's release waits for map_lock, then finds
		 * nothing): its table goes with it, and is not touched.
		 */
		*ret_owned = !node && owner;
		if (*ret_owned) {
			if (!devres__ref_if_alive(owner))
				owner = NULL;
			devres__disown(&m->owner, h);
		}
	}
	unlock_maps();
	if (!m)
		return -ENOENT;
	drop(m, owner);
	if (*ret_owned && owner)
		put_device(owner);
	return 0;
}

/*
 * A BAR mapping given back by hand with @call, pci_iounmap() or iounmap()
 * (base/plain-unmap.c): unmapped now, a pcim_iomap() one's node and
 * pcim_iomap_table() slot taken with it and its WARN. 0, or -ENOENT when
 * @addr is no BAR mapping.
 */
static int bar_unmap_plain(void *addr, const char *call)
{
	struct devres__hand hand;
	bool owned = false;
	int ret = pci__bar_unmap(addr, NULL, &hand, &owned);

	if (ret == -ECHILD) {
		devres__warn(NULL, call,
			     "mapping %p belongs to process %d: not unmapped",
			     addr, hand.pid);
		return 0;
	}
	if (ret)
		return ret;
	/* Caught here: unmapped once, now, and off the device. */
	if (owned)
		devres__warn_hand(&hand, call, "a mapping");
	return 0;
}

/* Before main(): a BAR mapping exists only once this object is linked. */
__attribute__((constructor)) static void bar_unmapper(void)
{
	(void)devres__unmapper_register(bar_unmap_plain);
}

/*
 * base/maps-advise.c's look before an mprotect() that asks for write
 * access: a BAR mapping made read-only over [a, end), of a pcim_iomap()
 * node or of the program's own pci_iomap(), or a child's copy of the
 * parent's. Not looked at from inside a hold of map_lock on this thread
 * (a signal handler's call).
 */
static bool ro_look(uintptr_t a, uintptr_t end, struct devres__hand *h,
		    uintptr_t *ret_start, size_t *ret_len)
{
	bool hit = false;

	if (__atomic_load_n(&map_lock_mine, __ATOMIC_RELAXED))
		return false;
	lock_maps();
	for (struct pci_map *m = maps; m && !hit; m = m->next) {
		uintptr_t s = (uintptr_t)m->addr;

		/*
		 * In read-only mode every BAR mapping is read-only, those
		 * the switch has yet to protect too: an mprotect() that
		 * looked in between would land after it.
		 */
		if ((m->writable && !pci__readonly()) || s >= end ||
		    s + m->len <= a || !still_there(m))
			continue;
		hit = true;
		snprintf(h->dev, sizeof(h->dev), "%s", m->dev);
		h->owner = NULL;
		h->call = m->owner.call ? m->owner.call : "pci_iomap";
		h->fix = m->owner.fix ? m->owner.fix : "pci_iounmap()";
		h->pid = 0;
		*ret_start = s;
		*ret_len = m->len;
	}
	unlock_maps();
	return hit;
}

__attribute__((constructor)) static void bar_ro_look(void)
{
	devres__ro_look_register(ro_look);
}

void pci__bars_protect(void)
{
	lock_maps();
	for (struct pci_map *m = maps; m; m = m->next) {
		/* Another owner's pages now: left as they are. */
		if (m->writable && !m->recorded && !still_there(m))
			continue;
		if (m->writable &&
		    !devres__mprotect(m->addr, m->len, PROT_READ)) {
			m->writable = false;
			devres__map_set_readonly(&m->rec);
		}
	}
	unlock_maps();
}
