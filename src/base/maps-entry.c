// SPDX-License-Identifier: MIT
/*
 * The libc calls that can take a managed mapping away, as the library
 * defines them: munmap(), mremap(), mmap() with MAP_FIXED, and shmat()
 * with SHM_REMAP (maps.c keeps the table they look at).
 *
 * Each goes on to the next definition (libc's, or a sanitizer's
 * interceptor that itself reached this one), found once with
 * dlsym(RTLD_NEXT) and kept (devres__next_resolve(), which every
 * interposed name uses, the descriptors' too). This file is built
 * without ThreadSanitizer's instrumentation (CMakeLists.txt): a program
 * linked with the static library defines these names itself, so its
 * sanitizer's runtime calls them too, before that runtime is ready for
 * instrumented code. What runs here before a mapping is managed is one
 * relaxed load and the call on; the instrumented part
 * (devres__maps_check()) runs only once a mapping is recorded, long
 * after.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include "subsys.h"

typedef void *mmap_fn(void *, size_t, int, int, int, off_t);
typedef int munmap_fn(void *, size_t);
typedef void *mremap_fn(void *, size_t, size_t, int, ...);
typedef void *shmat_fn(int, const void *, int);

/*
 * dlsym() may allocate, and an allocator may map: a call made while this
 * thread resolves goes to the system call (devres__next_resolve()).
 */
static TLS_FAST bool resolving;

/*
 * The definition of @name that comes after the library's: usually
 * dlsym(RTLD_NEXT). But a program that links the static library and a
 * sanitizer's runtime statically (clang's default) holds the library's
 * definition and the runtime's interceptor (__interceptor_<name>) in one
 * object, and RTLD_NEXT would skip the interceptor: the sanitizer would
 * lose track (AddressSanitizer's record of an open_memstream() stream
 * would outlive its fclose(), and its next stream at that address would
 * abort the program). There the interceptor is next; it goes on to libc.
 */
void *devres__next_sym(const char *name)
{
	static const char *const prefix[] = { "__interceptor_", "___"
								"interceptor"
								"_" };
	void *mine = (void *)devres__next_sym;
	Dl_info a, b;
	char icpt[64];

	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
		void *f;

		snprintf(icpt, sizeof(icpt), "%s%s", prefix[i], name);
		f = dlsym(RTLD_DEFAULT, icpt);
		if (f && dladdr(f, &a) && dladdr(mine, &b) &&
		    a.dli_fbase == b.dli_fbase)
			return f;
	}
	return dlsym(RTLD_NEXT, name);
}

/*
 * Here, not in an instrumented file, because a statically linked
 * sanitizer's runtime maps memory through this library's mmap() while it
 * starts. Racing first callers find the same definition.
 */
devres__fn *devres__next_resolve(devres__fn **slot, const char *name,
				 devres__fn *fallback)
{
	/*
	 * dlsym() gives a data pointer, which no cast turns into a function
	 * pointer portably; nor memcpy(), a call a sanitizer intercepts.
	 */
	union {
		void *p;
		devres__fn *f;
	} next;
	int saved = errno;
	devres__fn *f = fallback;

	if (resolving)
		return fallback;
	resolving = true;
	next.p = devres__next_sym(name);
	resolving = false;
	if (next.p)
		f = next.f;
	__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	errno = saved;
	return f;
}

/* Without a next definition (no dynamic linker): the system calls. */
static void *sys_result(long r)
{
	return r == -1 ? MAP_FAILED : (void *)r;
}

static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off)
{
	return sys_result(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

static int sys_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

/* Called as the next mremap() is: with the new address always given. */
static void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags,
			...)
{
	void *new_addr;
	va_list ap;

	va_start(ap, flags);
	new_addr = va_arg(ap, void *);
	va_end(ap);
	return sys_result(
		syscall(SYS_mremap, old, old_len, new_len, flags, new_addr));
}

static void *sys_shmat(int id, const void *addr, int flags)
{
	return (void *)syscall(SYS_shmat, id, addr, flags);
}

static devres__fn *next_mmap, *next_munmap, *next_mremap, *next_shmat;

static void *next_mmap_call(void *addr, size_t len, int prot, int flags, int fd,
			    off_t off)
{
	mmap_fn *f = (mmap_fn *)devres__next(&next_mmap, "mmap",
					     (devres__fn *)sys_mmap);

	return f(addr, len, prot, flags, fd, off);
}

static int next_munmap_call(void *addr, size_t len)
{
	munmap_fn *f = (munmap_fn *)devres__next(&next_munmap, "munmap",
						 (devres__fn *)sys_munmap);

	return f(addr, len);
}

static void *next_mremap_call(void *old, size_t old_len, size_t new_len,
			      int flags, void *new_addr)
{
	mremap_fn *f = (mremap_fn *)devres__next(&next_mremap, "mremap",
						 (devres__fn *)sys_mremap);

	return f(old, old_len, new_len, flags, new_addr);
}

static void *next_shmat_call(int id, const void *addr, int flags)
{
	shmat_fn *f = (shmat_fn *)devres__next(&next_shmat, "shmat",
					       (devres__fn *)sys_shmat);

	return f(id, addr, flags);
}

/*
 * Found as the library loads, as DEVRES__NEXT()'s are: a signal handler's
 * call may be the process's first, and dlsym() allocates.
 */
__attribute__((constructor)) static void maps_resolve(void)
{
	(void)devres__next(&next_mmap, "mmap", (devres__fn *)sys_mmap);
	(void)devres__next(&next_munmap, "munmap", (devres__fn *)sys_munmap);
	(void)devres__next(&next_mremap, "mremap", (devres__fn *)sys_mremap);
	(void)devres__next(&next_shmat, "shmat", (devres__fn *)sys_shmat);
}

static inline bool none(void)
{
	return devres__maps_none();
}

/*
 * The application's calls. Exported (src/libdevres.map), so that a program
 * linked with the library reaches them before libc's.
 */
#define INTERPOSE __attribute__((visibility("default")))

/*
 * A refused call (a record that is not to be taken by hand: a DMA pool's
 * chunk) fails with EPERM and changes nothing, as over a sealed mapping.
 */
static int check(const char *call, void *addr, size_t len, void *addr2,
		 size_t len2)
{
	int saved = errno;

	if (devres__maps_check(call, addr, len, addr2, len2)) {
		errno = EPERM;
		return -1;
	}
	errno = saved;
	return 0;
}

INTERPOSE int munmap(void *addr, size_t len)
{
	if (!none() && check("munmap", addr, len, NULL, 0))
		return -1;
	return next_munmap_call(addr, len);
}

/* MAP_FIXED_NOREPLACE fails rather than replace: it goes straight on. */
static int mmap_check(void *addr, size_t len, int flags)
{
	if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
		return check("mmap", addr, len, NULL, 0);
	return 0;
}

INTERPOSE void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	if (!none() && mmap_check(addr, len, flags))
		return MAP_FAILED;
	return next_mmap_call(addr, len, prot, flags, fd, off);
}

INTERPOSE void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	if (!none() && mmap_check(addr, len, flags))
		return MAP_FAILED;
	return next_mmap_call(addr, len, prot, flags, fd, off);
}

/*
 * The old range is resized or moved unless nothing changes (the same
 * length, not moved to a given place, its pages left there); old_len 0
 * makes a copy of a shared mapping and leaves the old one. A given new
 * place is replaced. MREMAP_DONTUNMAP moves the pages and leaves the old
 * range mapped but empty: what was managed there is gone as surely.
 */
INTERPOSE void *mremap(void *old, size_t old_len, size_t new_len, int flags,
		       ...)
{
	void *new_addr = NULL, *ret = MAP_FAILED;
	unsigned int slot;
	bool looks;

	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	/*
	 * Counted in flight across the look and the kernel's call, as
	 * mprotect() (protect-flight.c): a switch to read-only mode waits
	 * for a copy or a move of a mapping that looked before it. Its
	 * WARNs are not held (mprotect()'s are): the held lines' buffer,
	 * allocated, could be mapped where the call is to grow or move to.
	 */
	slot = devres__protect_begin();
	looks = devres__protect_looks();
	/* old_len 0 copies new_len bytes of the old range. */
	if (looks && devres__ro_refused("mremap", old,
					old_len ? old_len : new_len, "..."))
		goto out;
	if (looks && !none()) {
		bool moves = old_len &&
			     (old_len != new_len ||
			      (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)));

		if (check("mremap", old, moves ? old_len : 0,
			  flags & MREMAP_FIXED ? new_addr : NULL,
			  flags & MREMAP_FIXED ? new_len : 0))
			goto out;
	}
	ret = next_mremap_call(old, old_len, new_len, flags, new_addr);
out:
	devres__protect_end(slot);
	return ret;
}

/*
 * shmat() with SHM_REMAP puts a System V segment over whatever is mapped
 * at the address, as mmap(MAP_FIXED) does: the segment's size in whole
 * pages, at the address rounded down to SHMLBA with SHM_RND. Without
 * SHM_REMAP the kernel refuses a range that is mapped, and without an
 * address it picks a free one: neither is looked at. A segment this
 * process may not read (IPC_STAT refused) is not attached either.
 */
INTERPOSE void *shmat(int id, const void *addr, int flags)
{
	if (!none() && (flags & SHM_REMAP) && addr) {
		uintptr_t a = (uintptr_t)addr;
		struct shmid_ds ds;
		int saved = errno;

		if (flags & SHM_RND)
			a &= ~((uintptr_t)SHMLBA - 1);
		if (!shmctl(id, IPC_STAT, &ds) &&
		    check("shmat", (void *)a, ds.shm_segsz, NULL, 0))
			return (void *)-1;
		errno = saved;
	}
	return next_shmat_call(id, addr, flags);
}
