// SPDX-License-Identifier: MIT
/*
 * The libc calls that keep a managed mapping mapped but drop, replace or
 * move what it holds, or take away access the library relies on:
 * madvise(), posix_madvise() (glibc gives the kernel any advice but
 * POSIX_MADV_DONTNEED, which it ignores), process_madvise() on this
 * process, mprotect(), pkey_mprotect() and remap_file_pages(). maps-entry.c has the calls that
 * unmap one; maps.c the table both look at.
 *
 * Such a call cannot be made safe by taking the node off its device, as
 * an unmap is: the memory stays where the device, the DMA state or the
 * library's readl()/writel() expect it, with other contents or no access.
 * So a call that would do that over any page of a managed mapping is
 * refused whole, nothing applied, with one WARN naming the device and the
 * managed call, and fails with EPERM, what the kernel answers over a
 * sealed mapping (mseal(2)); remap_file_pages(), whose only error is
 * EINVAL, fails with that. Advice that keeps the contents (MADV_WILLNEED,
 * MADV_SEQUENTIAL, MADV_HUGEPAGE, MADV_COLD ...) and advice this file does
 * not know (the kernel answers it) go straight on without a look.
 *
 * Built without ThreadSanitizer's instrumentation, for the reason given
 * in maps-entry.c: a sanitizer's runtime may call these while it starts.
 */
#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include "subsys.h"

/* Advice a libc's headers may not name yet: the kernel's numbers. */
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif
#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/*
 * The advice that drops, replaces or moves the pages of a range, or
 * leaves them out of a child of fork(): what the device, its DMA state
 * or the library holds at that address would no longer be there. NULL
 * for the rest.
 */
static const char *destroys(int advice, const char **ret_why)
{
	switch (advice) {
	case MADV_DONTNEED:
		*ret_why = "its pages would be dropped";
		return "MADV_DONTNEED";
	case MADV_DONTNEED_LOCKED:
		*ret_why = "its pages would be dropped";
		return "MADV_DONTNEED_LOCKED";
	case MADV_FREE:
		*ret_why = "its pages could be dropped";
		return "MADV_FREE";
	case MADV_REMOVE:
		*ret_why = "its pages and their backing would be freed";
		return "MADV_REMOVE";
	case MADV_HWPOISON:
		*ret_why = "its pages would be poisoned";
		return "MADV_HWPOISON";
	case MADV_SOFT_OFFLINE:
		*ret_why = "its pages would be moved to others";
		return "MADV_SOFT_OFFLINE";
	case MADV_GUARD_INSTALL:
		*ret_why = "its pages would be dropped for guard pages";
		return "MADV_GUARD_INSTALL";
	default:
		return NULL;
	}
}

static inline bool none(void)
{
	return devres__maps_none();
}

/* Whether a refused call may go on; errno kept when it may. */
static bool refuse(const struct devres__guard *g, void *addr, size_t len)
{
	int saved = errno;

	if (devres__maps_guard(g, addr, len))
		return true;
	errno = saved;
	return false;
}

typedef int madvise_fn(void *, size_t, int);
typedef int posix_madvise_fn(void *, size_t, int);
typedef int mprotect_fn(void *, size_t, int);
typedef int pkey_mprotect_fn(void *, size_t, int, int);
typedef int remap_file_pages_fn(void *, size_t, int, size_t, int);
typedef ssize_t process_madvise_fn(int, const struct iovec *, size_t, int,
				   unsigned int);

/* Without a next definition (no dynamic linker): the system calls. */
static int sys_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* glibc's own: POSIX_MADV_DONTNEED ignored, the error number returned. */
static int sys_posix_madvise(void *addr, size_t len, int advice)
{
	if (advice == POSIX_MADV_DONTNEED)
		return 0;
	return syscall(SYS_madvise, addr, len, advice) ? errno : 0;
}

static int sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

static int sys_pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	return (int)syscall(SYS_pkey_mprotect, addr, len, prot, pkey);
}

static int sys_remap_file_pages(void *addr, size_t len, int prot, size_t pgoff,
				int flags)
{
	return (int)syscall(SYS_remap_file_pages, addr, len, prot, pgoff,
			    flags);
}

static ssize_t sys_process_madvise(int pidfd, const struct iovec *iov, size_t n,
				   int advice, unsigned int flags)
{
	return syscall(SYS_process_madvise, pidfd, iov, n, advice, flags);
}

DEVRES__NEXT(madvise_fn, madvise, sys_madvise)
DEVRES__NEXT(posix_madvise_fn, posix_madvise, sys_posix_madvise)
DEVRES__NEXT(mprotect_fn, mprotect, sys_mprotect)
DEVRES__NEXT(pkey_mprotect_fn, pkey_mprotect, sys_pkey_mprotect)
DEVRES__NEXT(remap_file_pages_fn, remap_file_pages, sys_remap_file_pages)
DEVRES__NEXT(process_madvise_fn, process_madvise, sys_process_madvise)

#define INTERPOSE __attribute__((visibility("default")))

INTERPOSE int madvise(void *addr, size_t len, int advice)
{
	struct devres__guard g = { .call = "madvise" };

	if (!none() && (g.arg = destroys(advice, &g.why)) &&
	    refuse(&g, addr, len)) {
		errno = EPERM;
		return -1;
	}
	return next_madvise()(addr, len, advice);
}

/*
 * glibc's posix_madvise() makes POSIX_MADV_DONTNEED (the kernel's
 * MADV_DONTNEED, which would drop the pages) a no-op and passes any
 * other advice to the kernel, past madvise() above: MADV_FREE,
 * MADV_REMOVE ... given to it drop what a managed mapping holds as
 * surely. Refused as madvise() refuses them; it returns the error number
 * and leaves errno alone.
 */
INTERPOSE int posix_madvise(void *addr, size_t len, int advice)
{
	struct devres__guard g = { .call = "posix_madvise" };
	int saved = errno;

	if (!none() && advice != POSIX_MADV_DONTNEED &&
	    (g.arg = destroys(advice, &g.why)) && refuse(&g, addr, len)) {
		errno = saved;
		return EPERM;
	}
	return next_posix_madvise()(addr, len, advice);
}

/*
 * The library reads or writes an I/O window, a BAR or DMA memory through
 * its mapping, and needs both: a protection without either would fault
 * the library's own access (or the device's, for what it maps). A BAR it
 * made read-only (the PCI layer's read-only mode) it only reads, and
 * keeps so: PROT_READ there passes, PROT_WRITE is refused. The table
 * says which record is which (devres__maps_guard()); until a record was
 * ever made read-only, a protection with both goes on without a look.
 */
static const char *prot_name(int prot)
{
	static const char *const names[] = {
		"PROT_NONE",
		"PROT_READ",
		"PROT_WRITE",
		"PROT_READ|PROT_WRITE",
		"PROT_EXEC",
		"PROT_READ|PROT_EXEC",
		"PROT_WRITE|PROT_EXEC",
		"PROT_READ|PROT_WRITE|PROT_EXEC",
	};

	return names[prot & 7];
}

static devres__ro_look_t ro_look;

void devres__ro_look_register(devres__ro_look_t fn)
{
	__atomic_store_n(&ro_look, fn, __ATOMIC_RELEASE);
}

/*
 * A call over a mapping a subsystem made read-only (a BAR in the PCI
 * layer's read-only mode), whoever holds it: a pci_iomap() one, which no
 * record names, or a child of fork()'s copy, whose table is empty, as
 * well as a pcim_iomap() one. mprotect() asking for write access, or
 * mremap() (a copy or a move of it would be the program's, which a later
 * mprotect() makes writable): refused, one WARN. A range the kernel would
 * refuse untouched (unaligned, empty) goes on to fail there.
 */
bool devres__ro_refused(const char *call, void *addr, size_t len,
			const char *arg)
{
	size_t mask = devres__page_size() - 1;
	uintptr_t a = (uintptr_t)addr, start;
	devres__ro_look_t fn;
	struct devres__hand h;
	size_t n;

	/* After the call's count: a switch counted it, or is seen. */
	if (devres__maps_own ||
	    !__atomic_load_n(&devres__maps_readonly, __ATOMIC_SEQ_CST))
		return false;
	fn = __atomic_load_n(&ro_look, __ATOMIC_ACQUIRE);
	if (!fn || !len || (a & mask) || len > UINTPTR_MAX - a - mask ||
	    !fn(a, a + ((len + mask) & ~mask), &h, &start, &n))
		return false;
	devres__warn_label(h.dev, call,
			   "%s(%p, %zu, %s) over [%p, +%zu) acquired with "
			   "%s(): the library made it read-only (%s gives it "
			   "back); refused, nothing changed",
			   call, addr, len, arg, (void *)start, n, h.call,
			   h.fix);
	errno = EPERM;
	return true;
}

static bool protect_refused(const char *call, void *addr, size_t len, int prot,
			    int pkey)
{
	struct devres__guard g = {
		.call = call,
		.arg = prot_name(prot),
		.touched_only = true,
		.protect = true,
		/* A key's rights are each thread's, not the library's. */
		.prot = pkey <= 0 ? prot & 7 : -1,
	};
	int rw = PROT_READ | PROT_WRITE;

	if ((prot & PROT_WRITE) &&
	    devres__ro_refused(call, addr, len, prot_name(prot)))
		return true;
	if (none())
		return false;
	if (g.prot >= 0 && (prot & rw) == rw &&
	    !__atomic_load_n(&devres__maps_readonly, __ATOMIC_RELAXED))
		return false;
	if (!refuse(&g, addr, len))
		return false;
	errno = EPERM;
	return true;
}

/*
 * Counted in flight across the look and the kernel's call, so that a
 * switch to read-only mode on another thread waits for one that looked
 * before it (protect-flight.c). A refusal's WARN is held meanwhile and
 * goes to the log sink once the count is let go: the switch never waits
 * for the application's code. Nothing recorded and no switch seen once
 * counted: nothing to look at (a switch that comes later waits for the
 * call, then protects), and the library's code is not entered (a
 * sanitizer's runtime may call these before it is ready for it).
 */
INTERPOSE int mprotect(void *addr, size_t len, int prot)
{
	unsigned int slot = devres__protect_begin();
	bool looks = devres__protect_looks();
	int ret = -1;

	if (looks)
		devres__log_hold();
	if (!looks || !protect_refused("mprotect", addr, len, prot, -1))
		ret = next_mprotect()(addr, len, prot);
	devres__protect_end(slot);
	if (looks)
		devres__log_release();
	return ret;
}

INTERPOSE int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	unsigned int slot = devres__protect_begin();
	bool looks = devres__protect_looks();
	int ret = -1;

	if (looks)
		devres__log_hold();
	if (!looks || !protect_refused("pkey_mprotect", addr, len, prot, pkey))
		ret = next_pkey_mprotect()(addr, len, prot, pkey);
	devres__protect_end(slot);
	if (looks)
		devres__log_release();
	return ret;
}

/*
 * Puts other pages of the file at the range: what a managed mapping held
 * there (a device's registers, its DMA memory) moves away.
 */
INTERPOSE int remap_file_pages(void *addr, size_t len, int prot, size_t pgoff,
			       int flags)
{
	struct devres__guard g = {
		.call = "remap_file_pages",
		.arg = "...",
		.why = "other pages of its file would be put there",
	};

	if (!none() && refuse(&g, addr, len)) {
		errno = EINVAL;
		return -1;
	}
	return next_remap_file_pages()(addr, len, prot, pgoff, flags);
}

/*
 * PIDFD_GET_INFO (Linux 6.13, the kernel that first takes any advice from
 * a process for itself): what a libc's headers may not have yet, in its
 * first size, which later kernels still take.
 */
struct pidfd_info0 {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid,
		fsgid, spare;
};
#define PIDFD_INFO_PID0 1ULL
#define PIDFD_GET_INFO0 _IOWR(0xFF, 11, struct pidfd_info0)

/*
 * Whether @pidfd is this process's own: only then are the ranges ours.
 * Asked of the pidfd itself, so no descriptor is opened. A kernel without
 * the ioctl refuses destroying advice given this way to any process.
 */
static bool pidfd_is_self(int pidfd)
{
	struct pidfd_info0 info = { .mask = PIDFD_INFO_PID0 };

	if (ioctl(pidfd, PIDFD_GET_INFO0, &info))
		return false;
	return (info.mask & PIDFD_INFO_PID0) && (pid_t)info.tgid == getpid();
}

/*
 * The vector, read through the kernel (process_vm_readv(2) on this
 * process), so that a bad pointer fails here as the call itself would,
 * with EFAULT, instead of faulting: false then, and the call goes on to
 * fail on its own.
 */
static bool read_iov(const struct iovec *iov, size_t from, size_t n,
		     struct iovec *ret_iov)
{
	struct iovec local = { ret_iov, n * sizeof(*iov) };
	struct iovec remote = { (void *)(iov + from), n * sizeof(*iov) };

	return syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote,
		       1UL, 0UL) == (long)(n * sizeof(*iov));
}

/*
 * Since Linux 6.13 a process may give itself any advice this way; each
 * range is looked at, and one refused refuses the call, nothing applied.
 */
INTERPOSE ssize_t process_madvise(int pidfd, const struct iovec *iov, size_t n,
				  int advice, unsigned int flags)
{
	struct devres__guard g = { .call = "process_madvise" };
	int saved = errno;

	if (!none() && (g.arg = destroys(advice, &g.why)) && n <= IOV_MAX &&
	    pidfd_is_self(pidfd)) {
		struct iovec v[32];

		for (size_t i = 0; i < n; i += 32) {
			size_t k = n - i < 32 ? n - i : 32;

			if (!read_iov(iov, i, k, v))
				break;
			for (size_t j = 0; j < k; j++) {
				if (refuse(&g, v[j].iov_base, v[j].iov_len)) {
					errno = EPERM;
					return -1;
				}
			}
		}
	}
	errno = saved;
	return next_process_madvise()(pidfd, iov, n, advice, flags);
}
