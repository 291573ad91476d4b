/* SPDX-License-Identifier: MIT */
/*
 * The internal API for subsystems (src/io, src/dma, src/irq, src/pci,
 * src/posix, ...): everything a managed interface needs beyond the public
 * headers, and nothing about a device's list or its lock.
 *
 * A managed interface allocates its node with devres_alloc_named() (the
 * node allocator: fault injection, the node ledger and the log come with
 * it), makes each OS acquisition behind one devres__should_fail() (a fault
 * point) and counts it with devres__ledger_add(), fills the node, and only
 * then publishes it with devres_add(): nothing touches the node after that,
 * since another thread may release it at once. Release callbacks may
 * change errno (the core gives the caller's back). See docs/internals.md.
 */
#ifndef DEVRES_SUBSYS_H
#define DEVRES_SUBSYS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <devres/device.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define HIDDEN __attribute__((visibility("hidden")))
#define TLS_FAST __thread __attribute__((tls_model("initial-exec")))

/* Stamped into struct device by device_initialize(), cleared at the end. */
#define DEVRES_DEV_MAGIC 0x64657672u
#define DEVRES_DEV_DEAD 0x64656164u

HIDDEN bool devres__dev_bad(const struct device *dev, const char *func);

/* On every call's path: the check is inline, the WARN is not. */
static inline bool devres__dev_ok(const struct device *dev, const char *func)
{
	if (likely(dev && dev->magic == DEVRES_DEV_MAGIC))
		return true;
	return devres__dev_bad(dev, func);
}

/* log.c */
extern HIDDEN bool devres__log_on;

/* devres_set_log() may switch it from any thread, hence the atomic load. */
static inline bool devres__logging(void)
{
	return __atomic_load_n(&devres__log_on, __ATOMIC_RELAXED);
}

HIDDEN void devres__log(const struct device *dev, const char *op,
			const void *node, const char *name, size_t size);
HIDDEN void devres__warn(const struct device *dev, const char *func,
			 const char *fmt, ...) DEVRES_PRINTF(3, 4);
HIDDEN void devres__print(int level, const char *fmt, ...) DEVRES_PRINTF(2, 3);
HIDDEN const char *devres__dev_label(const struct device *dev, char *buf,
				     size_t len);

/*
 * fault.c: the one fault-injection point. When it fires it records what
 * failed (@what, the function that holds the point unless it says
 * better) and the errno the failure looks like, for the sweep's report.
 */
extern HIDDEN TLS_FAST unsigned int devres__fail_nth;
HIDDEN bool devres__fail_now(const char *what, int err);

static inline bool devres__should_fail_as(const char *what, int err)
{
	return unlikely(devres__fail_nth != 0) && devres__fail_now(what, err);
}

#define devres__should_fail() devres__should_fail_as(__func__, 0)

/*
 * Between these two, fault points are not counted nor injected: a void
 * function (pci_set_master()) whose caller cannot see a failure holds
 * none. They nest.
 */
HIDDEN void devres__fault_hide(void);
HIDDEN void devres__fault_show(void);

/* ledger.c: live resources by kind; cheap per-thread counters. */
enum devres__ledger_kind {
	DL_NODES,
	DL_NODE_BYTES,
	DL_GROUPS,
	DL_FDS,
	DL_MAPS,
	DL_MAP_BYTES,
	DL_IRQ_HANDLERS,
	DL_DMA_BUFFERS,
	DL_DMA_BYTES,
	DL_THREADS,
	DL_DEVICES,
	DL_REGIONS,
	DL_DMA_MAPS,
	DL_REVOCABLES,
	DL_NR,
};

/* This thread's tally, NULL until its first count. */
extern HIDDEN TLS_FAST long *devres__tally;
HIDDEN void devres__ledger_add_first(enum devres__ledger_kind kind, long delta);

/*
 * Every node is counted four times (nodes and bytes, up and down), so the
 * common case is inline: a plain add to this thread's own tally.
 */
static inline void devres__ledger_add(enum devres__ledger_kind kind, long delta)
{
	long *v = devres__tally;

	if (unlikely(!v)) {
		devres__ledger_add_first(kind, delta);
		return;
	}
	__atomic_store_n(&v[kind],
			 __atomic_load_n(&v[kind], __ATOMIC_RELAXED) + delta,
			 __ATOMIC_RELAXED);
}

/*
 * env.c: every DEVRES_* variable is read here, as secure_getenv() does:
 * NULL in a process running with AT_SECURE (setuid, setgid, capabilities).
 */
HIDDEN const char *devres__getenv(const char *name);
HIDDEN bool devres__secure(void);

/*
 * resolve.c: opens @path beneath the directory @rootfd, never outside it
 * (no absolute path or symlink, no '..' above it, no magic link). @flags
 * and @mode as for openat(); the fd is O_CLOEXEC. Returns it or -errno
 * (-EXDEV for an escape, -ELOOP for too many symlinks). It is the fault
 * point of the open (-EMFILE); a caller that keeps the fd counts DL_FDS.
 */
HIDDEN int devres__open_beneath(int rootfd, const char *path, int flags,
				unsigned int mode);

#endif /* DEVRES_SUBSYS_H */
