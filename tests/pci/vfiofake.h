/* SPDX-License-Identifier: MIT */
/*
 * A fake VFIO kernel for the tests of src/vfio, without /dev/vfio: a
 * seccomp filter sends the calling thread's openat() and its VFIO
 * ioctl()s (type ';') to a supervisor thread of the same process, which
 * answers them as vfio-pci would for one device, from the knobs of
 * struct vf_conf (a hostile kernel is a knob away). An open of
 * /dev/vfio/... never reaches the real kernel: the supervisor installs a
 * memfd of its own in the caller's table (SECCOMP_IOCTL_NOTIF_ADDFD), and
 * knows its group, container and device fds by their inodes; every other
 * open goes on to the kernel untouched. The device fd is a memfd whose
 * bytes are the regions (config space at 0, BAR 0 at 4 KiB), so pread(),
 * pwrite() and mmap() of it work as on vfio-pci's.
 *
 * The supervisor makes raw system calls only (no libc call a sanitizer's
 * runtime intercepts, whose locks a thread waiting on it may hold).
 *
 * The filter is the calling thread's and its later threads' and
 * children's: call vf_start() in a child of the test (one cell), never in
 * the test's own process. A notification from another process (a child
 * of the cell) is refused (ENOTTY for an ioctl) or let through (an open
 * of anything but /dev/vfio). Include after pcitest.h.
 */
#ifndef DEVRES_TESTS_VFIOFAKE_H
#define DEVRES_TESTS_VFIOFAKE_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/memfd.h>
#include <linux/seccomp.h>
#include <linux/vfio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define VF_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define VF_ARCH AUDIT_ARCH_AARCH64
#endif

/*
 * The supervisor reads and writes the memory of a thread blocked in the
 * system call it answers: ordered by the kernel, which ThreadSanitizer
 * does not see, so the supervisor's accesses are left out of its view.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VF_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(VF_TSAN)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
#define vf_tsan_ignore()                                                       \
	(AnnotateIgnoreReadsBegin(__FILE__, __LINE__),                         \
	 AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#else
#define vf_tsan_ignore() ((void)0)
#endif

#define VF_GROUP 7 /* its node: "/dev/vfio/7" below */
#define VF_CFG_OFF 0u
#define VF_BAR0_OFF 4096u
#define VF_DEV_BYTES (64u * 1024)

struct vf_conf {
	bool not_viable; /* GROUP_GET_STATUS without VIABLE */
	uint32_t irq_count[VFIO_PCI_NUM_IRQS];
	uint32_t irq_flags[VFIO_PCI_NUM_IRQS]; /* 0: EVENTFD */
	uint64_t cfg_size;		       /* 256 unless set */
	uint64_t cfg_off; /* VF_CFG_OFF unless set_cfg_off */
	bool set_cfg_off;
	uint64_t bar0_off, bar0_size; /* VF_BAR0_OFF, 4096 unless set_bar0 */
	uint32_t bar0_flags;
	bool set_bar0;
	/* BAR 0's reply: CAPS with this chain (@caps_len bytes after it). */
	uint32_t bar0_argsz; /* the size first said, 0: the chain's */
	uint32_t bar0_cap_offset;
	unsigned char caps[256];
	uint32_t caps_len;
	uint16_t vendor, device;
	/* The config space, when set: the fake tree's own (vf_conf_tree()). */
	unsigned char config[256];
	bool set_config;
	/* This request fails with -@fail_err, 0 for none. */
	unsigned long fail_req;
	int fail_err;
	int unmap_short; /* UNMAP_DMA says it unmapped this much less */
};

struct vf_state {
	struct vf_conf conf;
	int listener;
	pthread_t thread;
	ino_t group_ino, container_ino, device_ino;
	int group_fd, container_fd, device_fd; /* the supervisor's own */
	/* What the device was told. */
	int irq_index, irq_count, maps, set_irqs, resets;
	int trigger; /* a copy of vector 0's eventfd, or -1 */
	/* VFIO requests other processes made that are not queries. */
	int foreign;
	pid_t pid;
};

static struct vf_state vf;

static inline int vf_memfd(const char *name, size_t size)
{
	int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size))
		return -1;
	return fd;
}

static inline ino_t vf_ino(int fd)
{
	struct stat st;

	return syscall(SYS_fstat, fd, &st) ? 0 : st.st_ino;
}

/* Installs @src in the caller as the syscall's result. */
static inline void vf_addfd(const struct seccomp_notif *req, int src)
{
	struct seccomp_notif_addfd a = {
		.id = req->id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)src,
		.newfd_flags = O_CLOEXEC,
	};

	(void)syscall(SYS_ioctl, vf.listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
}

static inline bool vf_ours(pid_t tid)
{
	return syscall(SYS_tgkill, vf.pid, tid, 0) == 0;
}

/* Whether @s begins with @prefix (or is @prefix, @whole). */
static inline bool vf_is(const char *s, const char *prefix, bool whole)
{
	for (; *prefix; s++, prefix++)
		if (*s != *prefix)
			return false;
	return !whole || !*s;
}

static inline int64_t vf_container(unsigned long req, void *arg)
{
	switch (req) {
	case VFIO_GET_API_VERSION:
		return VFIO_API_VERSION;
	case VFIO_CHECK_EXTENSION:
		return (uintptr_t)arg == VFIO_TYPE1_IOMMU ||
		       (uintptr_t)arg == VFIO_TYPE1v2_IOMMU;
	case VFIO_SET_IOMMU:
		return 0;
	case VFIO_IOMMU_GET_INFO: {
		struct vfio_iommu_type1_info *i = arg;

		i->flags = VFIO_IOMMU_INFO_PGSIZES;
		i->iova_pgsizes = 4096;
		i->argsz = sizeof(*i);
		return 0;
	}
	case VFIO_IOMMU_MAP_DMA:
		__atomic_add_fetch(&vf.maps, 1, __ATOMIC_RELAXED);
		return 0;
	case VFIO_IOMMU_UNMAP_DMA: {
		struct vfio_iommu_type1_dma_unmap *u = arg;

		__atomic_sub_fetch(&vf.maps, 1, __ATOMIC_RELAXED);
		u->size -= (uint64_t)vf.conf.unmap_short;
		return 0;
	}
	}
	return -ENOTTY;
}

static inline int64_t vf_region(struct vfio_region_info *r)
{
	const struct vf_conf *c = &vf.conf;
	uint32_t argsz = r->argsz;

	r->cap_offset = 0;
	r->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
	r->offset = 0;
	r->size = 0;
	if (r->index == VFIO_PCI_CONFIG_REGION_INDEX) {
		r->offset = c->set_cfg_off ? c->cfg_off : VF_CFG_OFF;
		r->size = c->cfg_size ? c->cfg_size : 256;
	} else if (r->index == VFIO_PCI_BAR0_REGION_INDEX) {
		r->flags |= VFIO_REGION_INFO_FLAG_MMAP;
		r->offset = VF_BAR0_OFF;
		r->size = 4096;
		if (c->set_bar0) {
			r->flags = c->bar0_flags;
			r->offset = c->bar0_off;
			r->size = c->bar0_size;
		}
		if (c->caps_len) {
			uint32_t need = (uint32_t)sizeof(*r) + c->caps_len;

			r->flags |= VFIO_REGION_INFO_FLAG_CAPS;
			r->argsz = c->bar0_argsz ? c->bar0_argsz : need;
			if (argsz >= need) {
				r->cap_offset = c->bar0_cap_offset;
				memcpy(r + 1, c->caps, c->caps_len);
			}
		}
	}
	return 0;
}

static inline int64_t vf_device(unsigned long req, void *arg)
{
	switch (req) {
	case VFIO_DEVICE_GET_INFO: {
		struct vfio_device_info *i = arg;

		i->flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
		i->num_regions = VFIO_PCI_NUM_REGIONS;
		i->num_irqs = VFIO_PCI_NUM_IRQS;
		return 0;
	}
	case VFIO_DEVICE_GET_REGION_INFO:
		return vf_region(arg);
	case VFIO_DEVICE_GET_IRQ_INFO: {
		struct vfio_irq_info *i = arg;

		if (i->index >= VFIO_PCI_NUM_IRQS)
			return -EINVAL;
		i->count = vf.conf.irq_count[i->index];
		i->flags = vf.conf.irq_flags[i->index]
				   ? vf.conf.irq_flags[i->index]
				   : VFIO_IRQ_INFO_EVENTFD;
		return 0;
	}
	case VFIO_DEVICE_SET_IRQS: {
		struct vfio_irq_set *s = arg;

		__atomic_add_fetch(&vf.set_irqs, 1, __ATOMIC_RELAXED);
		if ((s->flags & VFIO_IRQ_SET_ACTION_TRIGGER) &&
		    (s->flags & VFIO_IRQ_SET_DATA_EVENTFD) && s->count) {
			int32_t fd0;

			memcpy(&fd0, s->data, sizeof(fd0));
			int old = __atomic_exchange_n(
				&vf.trigger,
				(int)syscall(SYS_fcntl, fd0, F_DUPFD_CLOEXEC,
					     100),
				__ATOMIC_RELAXED);

			if (old >= 0)
				syscall(SYS_close, old);
		}
		if (s->flags & VFIO_IRQ_SET_ACTION_TRIGGER) {
			__atomic_store_n(&vf.irq_index, (int)s->index,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&vf.irq_count, (int)s->count,
					 __ATOMIC_RELAXED);
		}
		return 0;
	}
	case VFIO_DEVICE_RESET:
		__atomic_add_fetch(&vf.resets, 1, __ATOMIC_RELAXED);
		return 0;
	}
	return -ENOTTY;
}

static inline int64_t vf_group(const struct seccomp_notif *req, void *arg,
			       bool *ret_sent)
{
	unsigned long r = (unsigned long)req->data.args[1];

	if (r == VFIO_GROUP_GET_STATUS) {
		struct vfio_group_status *s = arg;

		s->flags = vf.conf.not_viable ? 0 : VFIO_GROUP_FLAGS_VIABLE;
		s->flags |= VFIO_GROUP_FLAGS_CONTAINER_SET;
		return 0;
	}
	if (r == VFIO_GROUP_SET_CONTAINER)
		return 0;
	if (r == VFIO_GROUP_GET_DEVICE_FD) {
		vf_addfd(req, vf.device_fd);
		*ret_sent = true;
		return 0;
	}
	return -ENOTTY;
}

static inline void vf_answer(const struct seccomp_notif *req,
			     struct seccomp_notif_resp *resp, bool *ret_sent)
{
	int64_t ret = -ENOTTY;

	if (req->data.nr == __NR_openat) {
		const char *path = (const char *)(uintptr_t)req->data.args[1];

		if (!vf_ours(req->pid) || !vf_is(path, "/dev/vfio/", false)) {
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			return;
		}
		if (vf_is(path, "/dev/vfio/vfio", true)) {
			vf_addfd(req, vf.container_fd);
			*ret_sent = true;
			return;
		}
		if (!vf_is(path, "/dev/vfio/7", true)) {
			resp->error = -ENOENT;
			return;
		}
		vf_addfd(req, vf.group_fd);
		*ret_sent = true;
		return;
	}
	if (!vf_ours(req->pid)) {
		unsigned long r = (unsigned long)req->data.args[1];

		if (r != VFIO_GET_API_VERSION && r != VFIO_CHECK_EXTENSION &&
		    r != VFIO_IOMMU_GET_INFO && r != VFIO_GROUP_GET_STATUS &&
		    r != VFIO_DEVICE_GET_INFO &&
		    r != VFIO_DEVICE_GET_REGION_INFO &&
		    r != VFIO_DEVICE_GET_IRQ_INFO)
			__atomic_add_fetch(&vf.foreign, 1, __ATOMIC_RELAXED);
	} else {
		ino_t ino = vf_ino((int)req->data.args[0]);
		unsigned long r = (unsigned long)req->data.args[1];
		void *arg = (void *)(uintptr_t)req->data.args[2];

		if (vf.conf.fail_req && r == vf.conf.fail_req)
			ret = -vf.conf.fail_err;
		else if (ino && ino == vf.container_ino)
			ret = vf_container(r, arg);
		else if (ino && ino == vf.device_ino)
			ret = vf_device(r, arg);
		else if (ino && ino == vf.group_ino)
			ret = vf_group(req, arg, ret_sent);
	}
	if (ret < 0)
		resp->error = (int)ret;
	else
		resp->val = ret;
}

static pthread_mutex_t vf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vf_cond = PTHREAD_COND_INITIALIZER;

static inline void *vf_supervise(void *arg)
{
	(void)arg;
	vf_tsan_ignore();
	pthread_mutex_lock(&vf_lock);
	while (!vf.listener)
		pthread_cond_wait(&vf_cond, &vf_lock);
	pthread_mutex_unlock(&vf_lock);
	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		bool sent = false;

		memset(&req, 0, sizeof(req));
		if (syscall(SYS_ioctl, vf.listener, SECCOMP_IOCTL_NOTIF_RECV,
			    &req)) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return NULL;
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		vf_answer(&req, &resp, &sent);
		if (!sent)
			(void)syscall(SYS_ioctl, vf.listener,
				      SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

/* The device's config space: vendor, device, command 0. */
static inline int vf_config(void)
{
	uint16_t id[2] = { vf.conf.vendor, vf.conf.device };

	if (vf.conf.set_config)
		return pwrite(vf.device_fd, vf.conf.config,
			      sizeof(vf.conf.config),
			      VF_CFG_OFF) == (ssize_t)sizeof(vf.conf.config)
			       ? 0
			       : -1;
	return pwrite(vf.device_fd, id, sizeof(id), VF_CFG_OFF) ==
			       (ssize_t)sizeof(id)
		       ? 0
		       : -1;
}

/* What the supervisor counted, read by the test's threads. */
#define vf_read(field) __atomic_load_n(&vf.field, __ATOMIC_RELAXED)

/*
 * Starts the fake kernel with @conf for this thread and the threads and
 * children it makes from now on. 0, or -1 (the cell should skip).
 */
static inline int vf_start(const struct vf_conf *conf)
{
#ifdef VF_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, VF_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[1])),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff00),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, VFIO_TYPE << 8, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	int listener;

	memset(&vf, 0, sizeof(vf));
	vf.conf = *conf;
	vf.irq_index = -1;
	vf.trigger = -1;
	vf.pid = getpid();
	vf.group_fd = vf_memfd("vfio-group", 0);
	vf.container_fd = vf_memfd("vfio-container", 0);
	vf.device_fd = vf_memfd("vfio-device", VF_DEV_BYTES);
	if (vf.group_fd < 0 || vf.container_fd < 0 || vf.device_fd < 0 ||
	    vf_config())
		return -1;
	vf.group_ino = vf_ino(vf.group_fd);
	vf.container_ino = vf_ino(vf.container_fd);
	vf.device_ino = vf_ino(vf.device_fd);
	/* Made before the filter, which it must not answer to. */
	if (pthread_create(&vf.thread, NULL, vf_supervise, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	pthread_mutex_lock(&vf_lock);
	vf.listener = listener < 0 ? -1 : listener;
	pthread_cond_signal(&vf_cond);
	pthread_mutex_unlock(&vf_lock);
	return listener < 0 ? -1 : 0;
#else
	(void)conf;
	return -1;
#endif
}

/* @c's config space: fake device @name's, as its sysfs file has it. */
static inline int vf_conf_tree(struct vf_conf *c, const char *name)
{
	ssize_t n =
		fake_read(name, "config", (char *)c->config, sizeof(c->config));

	c->set_config = n >= 64;
	return c->set_config ? 0 : -1;
}

/*
 * Makes fake device @name vfio-pci's, in IOMMU group VF_GROUP, listed
 * under kernel/iommu_groups/VF_GROUP/devices.
 */
static inline int vf_fake_device(const char *name)
{
	char path[4096], grp[4200];

	if (pci_fake_path(ft, name, "driver", path, sizeof(path)) ||
	    symlink("../../../bus/pci/drivers/vfio-pci", path))
		return -1;
	if (pci_fake_path(ft, name, "iommu_group", path, sizeof(path)))
		return -1;
	snprintf(grp, sizeof(grp), "../../../kernel/iommu_groups/%d", VF_GROUP);
	return symlink(grp, path);
}

#endif /* DEVRES_TESTS_VFIOFAKE_H */
