// SPDX-License-Identifier: MIT
/*
 * The sysfs side of the PCI bus: the root, the scan of
 * <root>/bus/pci/devices, registration and removal of pci_devs, and the
 * one way any file of a device is opened (beneath the root).
 *
 * Two locks. scan_lock serializes scans and pci_bus_remove_all() and is
 * held while they add and delete devices (so while probes run). list_lock
 * protects the list of devices and the root fd, and is held only for short
 * steps, never across a call into the driver core. The root fd changes
 * only with both held.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "pci.h"

struct pci_object {
	struct pci_dev pdev;
	struct pci_dev_private priv;
	void *iomap_table[PCI_STD_NUM_BARS];
	pthread_mutex_t bars_lock;
};

void **pci__iomap_slots(struct pci_dev *pdev)
{
	return container_of(pdev, struct pci_object, pdev)->iomap_table;
}

/*
 * The log is held across the lock, taken before it and let go after it:
 * the calls' ADD and DEL lines reach the sink once the lock is let go, so
 * that a sink which waits for another thread's managed BAR call on the
 * device does not wait for the lock its own thread holds. Both nest (the
 * lock is recursive, the hold counts), and a signal handler's call on a
 * thread that holds them has its lines sent at its thread's last unlock.
 */
void pci__bars_lock(struct pci_dev *pdev)
{
	devres__log_hold();
	pthread_mutex_lock(
		&container_of(pdev, struct pci_object, pdev)->bars_lock);
}

void pci__bars_unlock(struct pci_dev *pdev)
{
	pthread_mutex_unlock(
		&container_of(pdev, struct pci_object, pdev)->bars_lock);
	devres__log_release();
}

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t scan_owner;
static bool scan_owned;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pci_dev_private *devs_head, **devs_tail = &devs_head;
static int nr_devs;
static char *root_path;
static int rootfd = -1;

/*
 * fork(): list_lock is held across it. scan_lock is held across probes
 * (driver code), so it is not taken: the child makes it new, since the
 * scan another thread was running does not go on there.
 */
static void list_take(void)
{
	pthread_mutex_lock(&list_lock);
}

static void list_give(void)
{
	pthread_mutex_unlock(&list_lock);
}

static void list_child(void)
{
	pthread_mutex_init(&scan_lock, NULL);
	scan_owned = false;
	pci__write_fork_child();
	pthread_mutex_unlock(&list_lock);
}

__attribute__((constructor)) static void list_atfork(void)
{
	devres__atfork(DEVRES_FORK_PCI_LIST, list_take, list_give, list_child);
}

int pci_sysfs_set_root(const char *path)
{
	char *copy = NULL;
	int ret = 0;

	if (devres__opt_bad(NULL, path, __func__, "path"))
		return -EINVAL;
	if (path && !*path)
		return -EINVAL;
	if (path) {
		copy = strdup(path);
		if (!copy)
			return -ENOMEM;
	}
	pthread_mutex_lock(&list_lock);
	if (nr_devs || rootfd >= 0) {
		ret = -EBUSY;
	} else {
		free(root_path);
		root_path = copy;
		copy = NULL;
	}
	pthread_mutex_unlock(&list_lock);
	free(copy);
	return ret;
}

static const char *effective_root(void)
{
	const char *env;

	if (root_path)
		return root_path;
	env = devres__getenv("DEVRES_SYSFS_ROOT");
	return env && *env ? env : "/sys";
}

bool pci__out_of_resources(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM;
}

/*
 * Every open under the root goes through the resolver: never outside the
 * root (no absolute path or symlink, no ".." above it, no magic link).
 * It is the fault point of the open. The fd is the library's own from
 * the resolver's open until pci__close(): @dev and @file (NULL: @path)
 * name it here for a close by hand's WARN.
 */
static int open_beneath(int dirfd, const char *path, int flags, const char *dev,
			const char *file)
{
	int fd = devres__open_beneath(dirfd, path, flags, 0);
	char what[40];

	if (fd >= 0) {
		if (dev)
			snprintf(what, sizeof(what), "PCI device %s (%s)", dev,
				 file ? file : "its directory");
		devres__own_fd_add(
			fd, dev ? DEVRES_OWN_PCI_FILE : DEVRES_OWN_PCI_DIR,
			dev ? what : path);
	}
	return fd;
}

/*
 * Who @fd is, in one statx(): device, inode, size and, where the
 * filesystem keeps one, birth time (a file deleted and made again may get
 * the same inode number). -EINVAL when it is not of type @type.
 */
static int identify(int fd, mode_t type, struct pci_file_id *id)
{
	struct statx stx;

	memset(id, 0, sizeof(*id));
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME,
		  &stx) ||
	    (stx.stx_mode & S_IFMT) != type)
		return -EINVAL;
	id->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	id->ino = stx.stx_ino;
	id->size = (off_t)stx.stx_size;
	if (stx.stx_mask & STATX_BTIME) {
		id->btime_sec = stx.stx_btime.tv_sec;
		id->btime_nsec = stx.stx_btime.tv_nsec;
	}
	id->present = true;
	return 0;
}

/* The fd of the directory of device @name, and which directory it is. */
static int open_dev_dir(const char *name, struct pci_file_id *id)
{
	char path[sizeof(PCI_DEVICES_DIR) + PCI_NAME_MAX + 2];
	int fd;

	if (rootfd < 0)
		return -ENODEV;
	if (snprintf(path, sizeof(path), PCI_DEVICES_DIR "/%s", name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open_beneath(rootfd, path, O_PATH | O_DIRECTORY, name, NULL);
	if (fd < 0)
		return fd;
	devres__ledger_add(DL_FDS, 1);
	if (identify(fd, S_IFDIR, id)) {
		pci__close(fd);
		return -EINVAL;
	}
	return fd;
}

/*
 * File @file of the directory @dirfd: never through a symlink, and a
 * regular file. O_NONBLOCK: a FIFO planted in a fake tree must not block.
 */
static int open_in_dir(int dirfd, const char *dev, const char *file, int flags,
		       struct pci_file_id *id)
{
	int fd;

	/* openat2() takes no other flag with O_PATH. */
	if (!(flags & O_PATH))
		flags |= O_NONBLOCK;
	fd = open_beneath(dirfd, file, flags | O_NOFOLLOW, dev, file);
	if (fd < 0)
		return fd;
	devres__ledger_add(DL_FDS, 1);
	if (identify(fd, S_IFREG, id)) {
		pci__close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Which recorded file @file is, or -1 for none. */
static int file_index(const char *file)
{
	static const char *const names[PCI_F_BAR0] = {
		[PCI_F_CONFIG] = "config",
		[PCI_F_RESOURCE] = "resource",
		[PCI_F_ENABLE] = "enable",
		[PCI_F_RESET] = "reset",
	};

	for (int i = PCI_F_CONFIG; i < PCI_F_BAR0; i++)
		if (strcmp(file, names[i]) == 0)
			return i;
	if (strncmp(file, "resource", 8) == 0 && file[8] >= '0' &&
	    file[8] < '0' + PCI_STD_NUM_BARS && !file[9])
		return PCI_F_BAR0 + file[8] - '0';
	return -1;
}

/*
 * A file of a registered device, checked against the scan: its directory
 * is the one scanned (a directory removed and made again is not), and the
 * file is the one the scan saw there (not replaced, not a symlink).
 */
static int open_checked(const struct pci_dev_private *p, const char *file,
			int flags)
{
	int i = file_index(file);
	struct pci_file_id now;
	int dirfd, fd;

	/* A file the scan did not record: its directory is still checked. */
	if (i >= 0 && !p->files[i].present)
		return -ENOENT;
	dirfd = open_dev_dir(p->name, &now);
	if (dirfd < 0) {
		fd = dirfd == -ENOENT ? -ENODEV : dirfd;
	} else if (!pci__same_file(&p->files[PCI_F_DIR], &now)) {
		pci__close(dirfd);
		fd = -ENODEV;
	} else {
		fd = open_in_dir(dirfd, p->name, file, flags, &now);
		pci__close(dirfd);
		if (fd >= 0 && i >= 0 && !pci__same_file(&p->files[i], &now)) {
			pci__close(fd);
			fd = -ESTALE;
		}
		/*
		 * Where the scan saw a regular file, a directory (EISDIR), a
		 * FIFO without a reader (ENXIO), any other type (EINVAL) or
		 * nothing (ENOENT) is a file replaced: the same answer, and
		 * the same line in the log, whatever took its place.
		 */
		if (i >= 0 && (fd == -EISDIR || fd == -ENXIO || fd == -EINVAL ||
			       fd == -ENOENT))
			fd = -ESTALE;
	}
	/* A symlink where the file was is ELOOP (O_NOFOLLOW). */
	if (fd == -ENODEV || fd == -ESTALE || fd == -ELOOP)
		dev_warn(&p->pdev->dev, "%s is not what the scan saw: %s", file,
			 strerror(-fd));
	return fd;
}

/*
 * openat() is a cancellation point, made here under the list's lock: a
 * thread cancelled there (any config access, with a cancellation
 * pending) ended holding it, and every later PCI call, and fork(),
 * waited for ever.
 */
int pci__open(const struct pci_dev *pdev, const char *file, int flags)
{
	int fd, cancel = devres__cancel_off();

	pthread_mutex_lock(&list_lock);
	fd = pdev->p->registered ? open_checked(pdev->p, file, flags) : -ENODEV;
	pthread_mutex_unlock(&list_lock);
	devres__cancel_restore(cancel);
	return fd;
}

void pci__close(int fd)
{
	devres__own_fd_close(fd);
	devres__ledger_add(DL_FDS, -1);
}

/* At most @cap bytes of the small file @fd; -EFBIG when it holds more. */
static ssize_t read_small(int fd, char *buf, size_t cap)
{
	ssize_t n = pci__pread(fd, buf, cap, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == cap ? -EFBIG : n;
}

ssize_t pci__read_file(const struct pci_dev *pdev, const char *file, char *buf,
		       size_t cap)
{
	ssize_t n;
	int fd = pci__open(pdev, file, O_RDONLY);

	if (fd < 0)
		return fd;
	n = read_small(fd, buf, cap);
	pci__close(fd);
	return n;
}

static void detach_backend(struct pci_dev *pdev);
static void unlink_locked(struct pci_dev_private *p);

static void pci_release(struct device *dev)
{
	struct pci_object *o = container_of(dev, struct pci_object, pdev.dev);

	/*
	 * Off the list already: a registered device's last put deletes it
	 * first (pci__deleted()), and add_device() unlinks one it failed to
	 * add.
	 */
	detach_backend(&o->pdev);
	pci__enable_files_close(&o->pdev);
	pthread_cond_destroy(&o->priv.vec_idle);
	pthread_mutex_destroy(&o->priv.lock);
	pthread_mutex_destroy(&o->bars_lock);
	free(o->priv.irqs);
	free(o);
}

/*
 * Reads what describes @name, every file in the directory opened once,
 * and records which files they were; called with scan_lock held.
 */
static int read_files(struct pci_dev *pdev, int dirfd)
{
	struct pci_dev_private *p = pdev->p;
	char buf[PCI_NUM_RESOURCES * 60 + 2];
	uint8_t cfg[64];
	ssize_t n;
	int fd, ret;

	fd = open_in_dir(dirfd, p->name, "config", O_RDONLY,
			 &p->files[PCI_F_CONFIG]);
	if (fd < 0)
		return fd;
	n = pci__pread(fd, cfg, sizeof(cfg), 0);
	ret = n < 0 ? -errno : 0;
	pci__close(fd);
	if (ret)
		return ret;
	ret = pci__parse_header(pdev, cfg, (size_t)n);
	if (ret)
		return ret;
	/* What the file says; a reader without privilege sees only 64 bytes. */
	n = p->files[PCI_F_CONFIG].size;
	pdev->cfg_size = n >= PCI_CFG_SPACE_EXP_SIZE ? PCI_CFG_SPACE_EXP_SIZE
			 : n >= PCI_CFG_SPACE_SIZE   ? PCI_CFG_SPACE_SIZE
						     : (int)n;

	fd = open_in_dir(dirfd, p->name, "resource", O_RDONLY,
			 &p->files[PCI_F_RESOURCE]);
	if (fd < 0)
		return fd;
	n = read_small(fd, buf, sizeof(buf));
	pci__close(fd);
	if (n < 0)
		return n == -EFBIG ? -EINVAL : (int)n;
	ret = pci__parse_resource(buf, (size_t)n, pdev->resource,
				  PCI_NUM_RESOURCES);
	if (ret < 0)
		return ret;

	/*
	 * Optional: a device without them cannot be enabled, reset through
	 * sysfs, or mapped. `reset` is known as `enable` is: a file of
	 * another device linked in its place (a hard link passes O_NOFOLLOW)
	 * is then refused at the scan (alias.c) or at the reset, not written.
	 * But a file the process had no fd or memory to look at is not a file
	 * that is missing: recorded as absent, it would leave the device
	 * crippled for good by a shortage that passes.
	 */
	for (int i = PCI_F_ENABLE; i <= PCI_F_RESET; i++) {
		fd = open_in_dir(dirfd, p->name,
				 i == PCI_F_ENABLE ? "enable" : "reset", O_PATH,
				 &p->files[i]);
		if (fd >= 0)
			pci__close(fd);
		else if (pci__out_of_resources(fd))
			return fd;
	}
	for (int i = 0; i < PCI_STD_NUM_BARS; i++) {
		char file[24];

		if (resource_type(&pdev->resource[i]) != IORESOURCE_MEM)
			continue;
		snprintf(file, sizeof(file), "resource%d", i);
		fd = open_in_dir(dirfd, p->name, file, O_PATH,
				 &p->files[PCI_F_BAR0 + i]);
		if (fd >= 0)
			pci__close(fd);
		else if (pci__out_of_resources(fd))
			return fd;
	}
	/*
	 * `irq` is not read: it is the host kernel's number, not a line of
	 * this process. pdev->irq is 0 until a backend gives the device lines.
	 */
	pdev->irq = 0;
	return 0;
}

static int read_device(struct pci_dev *pdev, const char *name)
{
	unsigned int domain, bus, devfn;
	int dirfd, ret;

	ret = pci__parse_name(name, &domain, &bus, &devfn);
	if (ret)
		return ret;
	pdev->domain_nr = domain;
	pdev->bus_nr = (unsigned char)bus;
	pdev->devfn = devfn;

	dirfd = open_dev_dir(name, &pdev->p->files[PCI_F_DIR]);
	if (dirfd < 0)
		return dirfd;
	ret = read_files(pdev, dirfd);
	pci__close(dirfd);
	return ret;
}

static struct pci_dev_private *find_locked(const char *name)
{
	for (struct pci_dev_private *p = devs_head; p; p = p->next)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static void unlink_locked(struct pci_dev_private *p)
{
	struct pci_dev_private **pp;

	for (pp = &devs_head; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	if (devs_tail == &p->next)
		devs_tail = pp;
	p->next = NULL;
	p->registered = false;
	nr_devs--;
}

/* Offered each device in the order they were added; a slot never empties. */
#define PCI_BACKENDS_MAX 4
static const struct pci__backend *backends[PCI_BACKENDS_MAX];

int pci__backend_add(const struct pci__backend *b)
{
	int ret = -ENOSPC;

	pthread_mutex_lock(&list_lock);
	for (int i = 0; i < PCI_BACKENDS_MAX; i++) {
		const struct pci__backend *o =
			__atomic_load_n(&backends[i], __ATOMIC_RELAXED);

		if (o == b) {
			ret = 0;
			break;
		}
		if (!o) {
			__atomic_store_n(&backends[i], b, __ATOMIC_RELEASE);
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&list_lock);
	return ret;
}

/*
 * The directory of @p, opened beneath the root and checked to be the one
 * its scan read (-ENODEV otherwise); under list_lock. The scan reads it
 * before a backend attaches (read_device()), so it is known then too.
 */
static int dev_dir_checked_locked(const struct pci_dev_private *p)
{
	struct pci_file_id now;
	int fd = open_dev_dir(p->name, &now);

	if (fd == -ENOENT)
		return -ENODEV;
	if (fd >= 0 && !pci__same_file(&p->files[PCI_F_DIR], &now)) {
		pci__close(fd);
		return -ENODEV;
	}
	return fd;
}

int pci__readlink(const struct pci_dev *pdev, const char *link, char *buf,
		  size_t len)
{
	ssize_t n = -1;
	int dirfd, err = 0;

	if (!len || strchr(link, '/'))
		return -EINVAL;
	pthread_mutex_lock(&list_lock);
	dirfd = dev_dir_checked_locked(pdev->p);
	if (dirfd >= 0) {
		/* The link itself, in the scanned directory: none followed. */
		n = readlinkat(dirfd, link, buf, len - 1);
		err = n < 0 ? -errno : 0;
		pci__close(dirfd);
	} else {
		err = dirfd;
	}
	pthread_mutex_unlock(&list_lock);
	if (err)
		return err;
	/* A target as long as the buffer may have been cut short. */
	if ((size_t)n == len - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

/*
 * One name of a path in @dirfd: never a symlink (-ELOOP), and a directory
 * unless it is the last; O_NONBLOCK, so that a FIFO does not block.
 */
static int open_step(int dirfd, const char *dev, const char *name, bool last,
		     int flags)
{
	struct stat st;
	int fd;

	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if (!last)
		flags = O_PATH | O_DIRECTORY;
	else if (!(flags & O_PATH))
		flags |= O_NONBLOCK;
	fd = open_beneath(dirfd, name, flags | O_NOFOLLOW, dev, name);
	/* O_DIRECTORY on a symlink says ENOTDIR: it is the symlink. */
	if (fd == -ENOTDIR && !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISLNK(st.st_mode))
		fd = -ELOOP;
	return fd;
}

int pci__open_sub(const struct pci_dev *pdev, const char *path, int flags)
{
	char copy[64], *name, *next, *save = NULL;
	struct stat st;
	int fd, steps = 0;

	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&list_lock);
	fd = dev_dir_checked_locked(pdev->p);
	pthread_mutex_unlock(&list_lock);
	if (fd < 0)
		return fd;
	for (name = strtok_r(copy, "/", &save); name; name = next, steps++) {
		int sub;

		next = strtok_r(NULL, "/", &save);
		sub = open_step(fd, pdev->p->name, name, !next, flags);
		pci__close(fd);
		if (sub < 0)
			return sub;
		devres__ledger_add(DL_FDS, 1);
		fd = sub;
	}
	/* Of the type asked for: a directory, or a regular file. */
	if (!steps || fstat(fd, &st) ||
	    (flags & O_DIRECTORY ? !S_ISDIR(st.st_mode)
				 : !S_ISREG(st.st_mode))) {
		pci__close(fd);
		return -EINVAL;
	}
	return fd;
}

int pci__open_dir(const char *path)
{
	int fd = -ENODEV;

	pthread_mutex_lock(&list_lock);
	if (rootfd >= 0)
		fd = open_beneath(rootfd, path, O_RDONLY | O_DIRECTORY, NULL,
				  NULL);
	pthread_mutex_unlock(&list_lock);
	return fd;
}

/*
 * The backends decide first, in turn, whether a device is theirs; one that
 * says -ENODEV passes it on, and a device none takes stays with sysfs.
 */
static int offer_backend(struct pci_dev *pdev)
{
	for (int i = 0; i < PCI_BACKENDS_MAX; i++) {
		const struct pci__backend *b =
			__atomic_load_n(&backends[i], __ATOMIC_ACQUIRE);
		int ret;

		if (!b)
			break;
		ret = pci__bk_attach(b, pdev);
		if (ret == -ENODEV)
			continue;
		/*
		 * Read-only mode: opening a device through a backend is a
		 * write (VFIO's open enables the function and may reset it),
		 * so no backend is offered one; it stays with sysfs, read.
		 */
		if (ret == -EROFS)
			return 0;
		if (!ret)
			pdev->p->backend = b;
		return ret;
	}
	return 0;
}

/*
 * At the last reference, not at removal: a holder of a reference may
 * still read config space through the backend (its fd, its field) while a
 * rescan removes the device, and an fd closed under that read could be
 * another file's by the time it is read.
 */
static void detach_backend(struct pci_dev *pdev)
{
	const struct pci__backend *b = pdev->p->backend;

	if (!b)
		return;
	pci__bk_detach(pdev);
	pdev->p->backend = NULL;
}

const struct pci__backend *pci__backend_of(const struct pci_dev *pdev)
{
	return pdev->p ? pdev->p->backend : NULL;
}

/*
 * A device none of whose files is another's (alias.c); with scan_lock
 * held, so that no device is registered between the check and its own.
 */
static int check_alias(const struct pci_dev_private *p)
{
	char other[PCI_NAME_MAX + 1];
	int ret;

	pthread_mutex_lock(&list_lock);
	ret = pci__check_alias(p, devs_head, other);
	pthread_mutex_unlock(&list_lock);
	if (ret == -EINVAL)
		dev_warn(NULL, "pci %s: two of its files are one file",
			 p->name);
	else if (ret)
		dev_warn(NULL, "pci %s: its files are those of %s", p->name,
			 other);
	return ret;
}

/* Registers @name; called with scan_lock held and the root open. */
static int add_device(const char *name)
{
	pthread_mutexattr_t attr;
	struct pci_object *o;
	struct pci_dev *pdev;
	int ret;

	pthread_mutex_lock(&list_lock);
	ret = find_locked(name) ? -EEXIST : 0;
	pthread_mutex_unlock(&list_lock);
	if (ret)
		return ret;
	if (devres__should_fail())
		return -ENOMEM;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	pdev = &o->pdev;
	pdev->p = &o->priv;
	o->priv.pdev = pdev;
	o->priv.enable_fd = o->priv.config_fd = -1;
	pthread_mutex_init(&o->priv.lock, NULL);
	pthread_cond_init(&o->priv.vec_idle, NULL);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&o->bars_lock, &attr);
	pthread_mutexattr_destroy(&attr);
	snprintf(o->priv.name, sizeof(o->priv.name), "%s", name);
	ret = read_device(pdev, name);
	if (!ret)
		ret = check_alias(&o->priv);
	if (ret) {
		pci_release(&pdev->dev);
		return ret;
	}
	device_initialize(&pdev->dev);
	pdev->dev.release = pci_release;
	pdev->dev.bus = &pci__bus_type;
	ret = dev_set_name(&pdev->dev, "%s", name);
	if (!ret)
		ret = offer_backend(pdev);
	if (ret)
		goto put;

	/* Visible to pci__open() before probe can run. */
	pthread_mutex_lock(&list_lock);
	o->priv.registered = true;
	*devs_tail = &o->priv;
	devs_tail = &o->priv.next;
	nr_devs++;
	pthread_mutex_unlock(&list_lock);

	ret = pci__bars_claim(pdev);
	if (!ret)
		ret = device_add(&pdev->dev);
	if (!ret)
		return 0;
	pci__bars_release(pdev);
	pthread_mutex_lock(&list_lock);
	unlink_locked(&o->priv);
	pthread_mutex_unlock(&list_lock);
put:
	put_device(&pdev->dev);
	return ret;
}

/*
 * However the device is deleted (the scan's removal below, device_del()
 * or device_unregister() of its struct device, its last put while
 * registered, a remove that ends the thread): off the list, its BARs
 * given back. A device of the bus the scan did not make (not on the
 * list) has nothing to give back.
 */
void pci__deleted(struct device *dev)
{
	struct pci_dev_private *p;
	bool by_scan = false;

	pthread_mutex_lock(&list_lock);
	for (p = devs_head; p && &p->pdev->dev != dev; p = p->next)
		;
	if (p) {
		by_scan = p->removing;
		unlink_locked(p);
	}
	pthread_mutex_unlock(&list_lock);
	if (!p)
		return;
	pci__bars_release(p->pdev);
	/*
	 * Deleted through its struct device: the scan's reference goes with
	 * the list. The deletion's and the registration's are still counted:
	 * with no more, the scan's was put already (its last put while
	 * registered, which the core WARNed), and is not put again.
	 */
	if (!by_scan && __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED) > 2)
		put_device(dev);
}

/*
 * The device a scan's removal takes, under list_lock: NULL for one
 * another removal, or a deletion through its struct device, is taking
 * already (it leaves the list when that ends).
 */
static struct pci_dev_private *claim_locked(struct pci_dev_private *p)
{
	if (!p || p->removing)
		return NULL;
	p->removing = true;
	return p;
}

/*
 * A reference of its own is held across: a driver that put the device
 * once too often left the scan's reference as the last but device_del()'s,
 * and the device would be freed inside device_del(), this function going
 * on in freed memory. The scan's reference is put only when it is there
 * (ours and it: at least two); otherwise that put is the driver's misuse.
 * The deletion takes the device off the list (pci__deleted()), which
 * leaves the scan's reference to a device claimed here (claim_locked()).
 */
struct removing {
	struct pci_dev *pdev;
	const char *func;
};

/* After the deletion, also when its remove ended the thread. */
static void remove_end(void *arg)
{
	struct removing *rm = arg;
	struct device *dev = &rm->pdev->dev;

	if (__atomic_load_n(&dev->refcount, __ATOMIC_RELAXED) < 2)
		devres__warn(dev, rm->func,
			     "the scan's reference was put already: one "
			     "pci_dev_put() too many");
	else
		put_device(dev);
	put_device(dev);
}

static void remove_device(struct pci_dev_private *p, const char *func)
{
	struct removing rm = { .pdev = p->pdev, .func = func };

	get_device(&rm.pdev->dev);
	pthread_cleanup_push(remove_end, &rm);
	/*
	 * Unbinding may still write `enable` and config: keep the fd valid.
	 * A deletion through its struct device begun before the claim (not
	 * yet off the list) completes without this one, and with no WARN.
	 */
	(void)devres__device_del_once(&rm.pdev->dev, func);
	pthread_cleanup_pop(1);
}

static bool scan_lock_take(const char *func)
{
	pthread_mutex_lock(&list_lock);
	if (scan_owned && pthread_equal(scan_owner, pthread_self())) {
		pthread_mutex_unlock(&list_lock);
		devres__warn(NULL, func, "called from a PCI probe or remove");
		return false;
	}
	pthread_mutex_unlock(&list_lock);
	pthread_mutex_lock(&scan_lock);
	pthread_mutex_lock(&list_lock);
	scan_owner = pthread_self();
	scan_owned = true;
	pthread_mutex_unlock(&list_lock);
	return true;
}

static void scan_lock_drop(void)
{
	pthread_mutex_lock(&list_lock);
	scan_owned = false;
	pthread_mutex_unlock(&list_lock);
	pthread_mutex_unlock(&scan_lock);
}

static void close_root_locked(void);

/*
 * A scan or removal in progress, ended also by a probe or remove that
 * ends the thread (the driver core finishes its bind or deletion as the
 * thread unwinds): the root closed when no device needs it, scan_lock
 * given back (or every later scan waited for ever), the names freed.
 */
struct scanning {
	char **names;
	size_t n;
};

static void scan_end(void *arg)
{
	struct scanning *sc = arg;

	close_root_locked();
	scan_lock_drop();
	while (sc->n)
		free(sc->names[--sc->n]);
	free(sc->names);
}

static int open_root_locked(void)
{
	int fd;

	if (rootfd >= 0)
		return 0;
	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	fd = open(effective_root(), O_PATH | O_DIRECTORY | O_CLOEXEC);
	devres__own_fd_opened(fd, DEVRES_OWN_PCI_ROOT, "the PCI bus");
	if (fd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	pthread_mutex_lock(&list_lock);
	rootfd = fd;
	pthread_mutex_unlock(&list_lock);
	return 0;
}

/* Closes the root when no device needs it; with scan_lock held. */
static void close_root_locked(void)
{
	int fd = -1;

	pthread_mutex_lock(&list_lock);
	if (!nr_devs) {
		fd = rootfd;
		rootfd = -1;
	}
	pthread_mutex_unlock(&list_lock);
	if (fd >= 0)
		pci__close(fd);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted addresses under bus/pci/devices; to be freed by the caller. */
static int list_dir(char ***ret_names, size_t *ret_n)
{
	char **names = NULL, **grown;
	size_t n = 0, cap = 0;
	struct dirent *de;
	unsigned int d, b, f;
	DIR *dir;
	int fd;

	fd = open_beneath(rootfd, PCI_DEVICES_DIR, O_RDONLY | O_DIRECTORY, NULL,
			  NULL);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (!dir) {
		int err = -errno;

		devres__own_fd_close(fd);
		return err;
	}
	devres__ledger_add(DL_FDS, 1);
	while ((de = readdir(dir))) {
		if (pci__parse_name(de->d_name, &d, &b, &f))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			grown = devres__should_fail()
					? NULL
					: realloc(names, cap * sizeof(*names));
			if (!grown)
				goto nomem;
			names = grown;
		}
		names[n] = devres__should_fail() ? NULL : strdup(de->d_name);
		if (!names[n])
			goto nomem;
		n++;
	}
	devres__own_dir_close(dir);
	devres__ledger_add(DL_FDS, -1);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*ret_names = names;
	*ret_n = n;
	return 0;

nomem:
	devres__own_dir_close(dir);
	devres__ledger_add(DL_FDS, -1);
	while (n)
		free(names[--n]);
	free(names);
	return -ENOMEM;
}

static bool in_names(char **names, size_t n, const char *name)
{
	return n && bsearch(&name, names, n, sizeof(*names), cmp_names);
}

/* Whether @p's directory is still the one scanned; under list_lock. */
static bool dir_unchanged_locked(const struct pci_dev_private *p)
{
	struct pci_file_id now;
	bool same;
	int fd;

	fd = open_dev_dir(p->name, &now);
	/* Out of fds or memory says nothing about the directory. */
	if (pci__out_of_resources(fd))
		return true;
	if (fd < 0)
		return false;
	same = pci__same_file(&p->files[PCI_F_DIR], &now);
	pci__close(fd);
	return same;
}

/*
 * Registers each of @names not registered yet. A device whose files are
 * missing or malformed is skipped; one the process had no fd or memory to
 * read is not: the scan stops there and takes back the devices it added,
 * so that a scan that fails added nothing, and one that succeeds added
 * every device there is (not every device there were fds for).
 */
static int add_devices(char **names, size_t n)
{
	size_t i, added = 0;
	int err = 0;

	for (i = 0; i < n; i++) {
		err = add_device(names[i]);
		if (!err) {
			/* Its name moves to the front: the ones to take back. */
			char *t = names[added];

			names[added++] = names[i];
			names[i] = t;
			continue;
		}
		if (pci__out_of_resources(err))
			break;
		if (err != -EEXIST)
			dev_dbg(NULL, "pci %s: skipped: %s", names[i],
				strerror(-err));
		err = 0;
	}
	while (err && added) {
		struct pci_dev_private *p;

		pthread_mutex_lock(&list_lock);
		p = claim_locked(find_locked(names[--added]));
		pthread_mutex_unlock(&list_lock);
		if (p)
			remove_device(p, "pci_bus_scan");
	}
	return err;
}

int pci_bus_scan(void)
{
	struct scanning sc = { NULL, 0 };
	struct pci_dev_private *gone;
	int ret;

	ret = pci__bus_ready();
	if (ret)
		return ret;
	if (!scan_lock_take(__func__))
		return -EDEADLK;
	pthread_cleanup_push(scan_end, &sc);
	ret = open_root_locked();
	if (!ret)
		ret = list_dir(&sc.names, &sc.n);
	if (ret)
		goto out;

	/*
	 * Vanished devices first, so that their regions are free again; a
	 * directory removed and made again is another device.
	 */
	for (;;) {
		pthread_mutex_lock(&list_lock);
		/* In a child of fork(), the parent's stay (docs/fork.md). */
		for (gone = devs_head; gone; gone = gone->next)
			if (devres__dev_mine(&gone->pdev->dev) &&
			    !gone->removing &&
			    (!in_names(sc.names, sc.n, gone->name) ||
			     !dir_unchanged_locked(gone)))
				break;
		gone = claim_locked(gone);
		pthread_mutex_unlock(&list_lock);
		if (!gone)
			break;
		remove_device(gone, __func__);
	}
	ret = add_devices(sc.names, sc.n);
	if (!ret) {
		pthread_mutex_lock(&list_lock);
		ret = nr_devs;
		pthread_mutex_unlock(&list_lock);
	}
out:
	pthread_cleanup_pop(1);
	return ret;
}

int pci_bus_scan_device(const char *name)
{
	struct scanning sc = { NULL, 0 };
	unsigned int d, b, f;
	int ret;

	if (devres__arg_bad(NULL, name, __func__, "name") ||
	    pci__parse_name(name, &d, &b, &f))
		return -EINVAL;
	ret = pci__bus_ready();
	if (ret)
		return ret;
	if (!scan_lock_take(__func__))
		return -EDEADLK;
	pthread_cleanup_push(scan_end, &sc);
	ret = open_root_locked();
	if (!ret)
		ret = add_device(name);
	pthread_cleanup_pop(1);
	return ret;
}

void pci_bus_remove_all(void)
{
	struct scanning sc = { NULL, 0 };
	struct pci_dev_private *p;

	if (!scan_lock_take(__func__))
		return;
	pthread_cleanup_push(scan_end, &sc);
	for (;;) {
		pthread_mutex_lock(&list_lock);
		for (p = devs_head;
		     p && (!devres__dev_mine(&p->pdev->dev) || p->removing);
		     p = p->next)
			;
		p = claim_locked(p);
		pthread_mutex_unlock(&list_lock);
		if (!p)
			break;
		remove_device(p, __func__);
	}
	pthread_cleanup_pop(1);
}

struct pci_dev *pci_get_device(unsigned int vendor, unsigned int device,
			       struct pci_dev *from)
{
	struct pci_dev_private *p;
	struct pci_dev *found = NULL;

	if (from && !pci__dev_ok(from, __func__))
		return NULL;
	pthread_mutex_lock(&list_lock);
	if (from)
		p = from->p->registered ? from->p->next : NULL;
	else
		p = devs_head;
	for (; p; p = p->next) {
		/* A child of fork() finds none of its parent's. */
		if ((vendor == PCI_ANY_ID || vendor == p->pdev->vendor) &&
		    (device == PCI_ANY_ID || device == p->pdev->device) &&
		    devres__dev_mine(&p->pdev->dev)) {
			found = p->pdev;
			get_device(&found->dev);
			break;
		}
	}
	pthread_mutex_unlock(&list_lock);
	if (from)
		put_device(&from->dev);
	return found;
}

struct pci_dev *pci_dev_get(struct pci_dev *pdev)
{
	/*
	 * A pointer no device has is not given back: the caller would use
	 * it. A device this call refuses (another bus's, a parent's in a
	 * child of fork()) is, as get_device() gives back its argument.
	 */
	if (!pdev || devres__arg_bad(NULL, pdev, __func__, "device"))
		return NULL;
	if (pci__dev_ok(pdev, __func__))
		get_device(&pdev->dev);
	return pdev;
}

void pci_dev_put(struct pci_dev *pdev)
{
	if (pdev && pci__dev_ok(pdev, __func__))
		put_device(&pdev->dev);
}
