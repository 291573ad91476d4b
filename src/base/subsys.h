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
 * then publishes it with devres__record(): nothing touches the node after
 * that, since another thread may release it at once. Release callbacks may
 * change errno (the core gives the caller's back). See docs/internals.md.
 */
#ifndef DEVRES_SUBSYS_H
#define DEVRES_SUBSYS_H

#include <stdarg.h>
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <devres/device.h>
#include <devres/devres.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define HIDDEN __attribute__((visibility("hidden")))
/*
 * Thread-local state of the library. The model is the compiler's default
 * for position-independent code (the build adds TLS descriptors where it
 * can): initial-exec would make a late dlopen() of the library fail once
 * the process's static TLS block is used up.
 */
#define TLS_FAST __thread

/* Stamped into struct device by device_initialize(), cleared at the end. */
#define DEVRES_DEV_MAGIC 0x64657672u
#define DEVRES_DEV_DEAD 0x64656164u
/*
 * Stamped by the one thread whose compare-and-swap took a zeroed or
 * released device for device_initialize(), until the device is ready.
 */
#define DEVRES_DEV_CLAIMED 0x64657669u

/*
 * A pointer no object can live at: NULL, the first page (a member of a
 * NULL struct, a small integer cast) or the last 4095 bytes of the address
 * space (an ERR_PTR() taken for an object). One subtraction and one
 * compare, so that every entry point can afford it.
 */
#define DEVRES_PTR_LOW 4096u
#define DEVRES_PTR_HIGH 4095u

/* Always inline: out of line, the compiler took callers for cold code. */
#define DEVRES_INLINE inline __attribute__((always_inline))

static DEVRES_INLINE bool devres__ptr_bad(const void *p)
{
	return unlikely((uintptr_t)p - DEVRES_PTR_LOW >=
			(uintptr_t)0 - DEVRES_PTR_LOW - DEVRES_PTR_HIGH);
}

/*
 * The WARN of an argument that devres__ptr_bad() refused: "<func>: NULL
 * <what>", "<what> is ERR_PTR(-22)" or "<what> is a bad pointer (0x10)".
 * Returns true, for the caller's "if (devres__arg_bad(...)) return ...;".
 * Not marked cold: with it, gcc 12 moved whole entry points (the path
 * after the checks) into their .cold parts.
 */
HIDDEN bool devres__arg_warn(const struct device *dev, const char *func,
			     const char *what, const void *p);

static DEVRES_INLINE bool devres__arg_bad(const struct device *dev,
					  const void *p, const char *func,
					  const char *what)
{
	if (likely(!devres__ptr_bad(p)))
		return false;
	return devres__arg_warn(dev, func, what, p);
}

/* The same for an argument whose NULL has a meaning: only the others. */
static DEVRES_INLINE bool devres__opt_bad(const struct device *dev,
					  const void *p, const char *func,
					  const char *what)
{
	return p && devres__arg_bad(dev, p, func, what);
}

/* This process's id, set again in a child of fork() before its handlers. */
extern HIDDEN int devres__pid;

/*
 * vfork.c: devres__vforked is set on a thread by the library's vfork()
 * before libc's runs, and so in a child of vfork(), which shares that
 * thread's memory; devres__vfork_armed counts the threads so marked, a
 * process-wide word that a call's fast path loads (a load of the
 * library's own data, where the thread's mark would be a look-up of
 * thread-local storage). A call that finds it non-zero asks
 * devres__vfork_child(), which tells the child from the parent and, in
 * the parent's thread that made the vfork(), clears the mark and the
 * count (docs/fork.md).
 */
extern HIDDEN TLS_FAST bool devres__vforked;
extern HIDDEN unsigned int devres__vfork_armed;
HIDDEN bool devres__vfork_child(void);

/* Whether a thread of the process may be in, or back from, a vfork(). */
static inline bool devres__vfork_maybe(void)
{
	return unlikely(
		__atomic_load_n(&devres__vfork_armed, __ATOMIC_RELAXED) != 0);
}
/* In a child of vfork(): a WARN by one write, not counted, and true. */
HIDDEN bool devres__vfork_refused(const struct device *dev, const char *func);

/* This process's id, as recorded in every object that may be inherited. */
static inline int devres__pid_now(void)
{
	return __atomic_load_n(&devres__pid, __ATOMIC_RELAXED);
}

/*
 * dev->state keeps the device's state (base/base.h) in its low bits and,
 * above them, the stamp of the process and the copy of the library that
 * initialized it: in a child of fork() a device of the parent's is told
 * by the same load, and no call takes its locks or runs its releases
 * (docs/fork.md); a device of another copy of the library in the process
 * likewise (copies.c). A process id is below 2^22 (PID_MAX_LIMIT); the
 * copy's number is above it.
 */
#define DEVRES_DEV_STATE_BITS 4
#define DEVRES_DEV_STATE_MASK ((1u << DEVRES_DEV_STATE_BITS) - 1)
#define DEVRES_DEV_PID_BITS 22

/*
 * copies.c: this copy's number among the copies of the library in the
 * process (1 up), and the stamp its devices record: the process id, and
 * the number above it. devres__copies_find() numbers this copy and WARNs
 * when it finds another; devres__dev_stamp_set() makes the stamp again
 * (after fork()).
 */
extern HIDDEN int devres__copy_no;
extern HIDDEN unsigned int devres__dev_stamp;
HIDDEN void devres__copies_find(void);
HIDDEN void devres__dev_stamp_set(void);

/*
 * device_del() for a bus's own removal of @dev, which a deletion through
 * its struct device may have begun first: then nothing is done, with no
 * WARN (that deletion completes the bus's part). Whether this call
 * deleted it. @func names the caller in a WARN of a misuse.
 */
HIDDEN bool devres__device_del_once(struct device *dev, const char *func);

static inline unsigned int devres__dev_stamp_of(const struct device *dev)
{
	return (unsigned int)__atomic_load_n(&dev->state, __ATOMIC_RELAXED) >>
	       DEVRES_DEV_STATE_BITS;
}

static inline int devres__dev_pid(const struct device *dev)
{
	return (int)(devres__dev_stamp_of(dev) &
		     ((1u << DEVRES_DEV_PID_BITS) - 1));
}

/* Whether @dev, initialized, was initialized by this process and copy. */
static inline bool devres__dev_mine(const struct device *dev)
{
	return devres__dev_stamp_of(dev) ==
	       __atomic_load_n(&devres__dev_stamp, __ATOMIC_RELAXED);
}

/* Whether @dev, not mine, is another copy's of the library here. */
static inline bool devres__dev_other_copy(const struct device *dev)
{
	return devres__dev_pid(dev) == devres__pid_now();
}

/*
 * @dev's magic word, read as the atomic it is: two threads may initialize
 * the same memory at once, one claiming it by a compare-and-swap while the
 * other reads it here (a plain load on every architecture).
 */
static inline unsigned int devres__dev_magic(const struct device *dev)
{
	return __atomic_load_n(&dev->magic, __ATOMIC_RELAXED);
}

HIDDEN bool devres__dev_bad(const struct device *dev, const char *func);
/*
 * core.c: put_device() of a reference a call of the library took for a
 * section of its own; silent, and nothing put, on a device of the parent
 * in a child of fork() whose callback returned into that section.
 */
HIDDEN void devres__put_taken(struct device *dev);
/* The WARN for @dev, initialized by another process or copy of the library. */
HIDDEN void devres__dev_foreign_warn(const struct device *dev,
				     const char *func);

/*
 * After devres__dev_ok() said no: -ECHILD for a device of the parent
 * process, for the calls whose contract has that error; else -EINVAL.
 */
static inline int devres__dev_err(const struct device *dev)
{
	return !devres__ptr_bad(dev) &&
			       devres__dev_magic(dev) == DEVRES_DEV_MAGIC &&
			       !devres__dev_mine(dev)
		       ? -ECHILD
		       : -EINVAL;
}

/* On every call's path: the check is inline, the WARN is not. */
static DEVRES_INLINE bool devres__dev_ok(const struct device *dev,
					 const char *func)
{
	if (likely(!devres__ptr_bad(dev) &&
		   devres__dev_magic(dev) == DEVRES_DEV_MAGIC &&
		   devres__dev_mine(dev) && !devres__vfork_maybe()))
		return true;
	return devres__dev_bad(dev, func);
}

/*
 * lock.c: whether this thread may not use @dev's list now: it runs a match
 * or for-each callback of @dev (the lock is its own, up the stack), or a
 * signal handler that interrupted it taking or letting go of that lock.
 * Then one WARN naming @func, the one the lock would give.
 */
HIDDEN bool devres__dev_locked_here(const struct device *dev, const char *func);

/*
 * devres__dev_ok() for a managed acquisition that records its node on @dev
 * only once it holds the resource: refused too, with one WARN naming
 * @func, where that record would be refused, before anything is acquired.
 * Else the resource was returned as managed and was on no device.
 */
static DEVRES_INLINE bool devres__dev_ok_to_acquire(const struct device *dev,
						    const char *func)
{
	return devres__dev_ok(dev, func) && !devres__dev_locked_here(dev, func);
}

/*
 * pages.c: the size of a page, read from sysconf() once and kept: every
 * mapping and DMA buffer rounds to it, some on fast paths
 * (dma_map_single()). Racing first readers store the same value.
 */
extern HIDDEN size_t devres__page_bytes;
HIDDEN size_t devres__page_size_read(void);

static inline size_t devres__page_size(void)
{
	size_t s = __atomic_load_n(&devres__page_bytes, __ATOMIC_RELAXED);

	return likely(s) ? s : devres__page_size_read();
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
/*
 * One line and its newline to stderr's descriptor by one writev(): no
 * lock, no stdio, no sink. For what must not wait for a lock: a BUG line,
 * a child of vfork()'s WARN, and the log when no sink is set.
 */
HIDDEN void devres__log_raw(const char *line);
/* devres__warn() without a backtrace, for a call from a signal handler. */
HIDDEN void devres__warn_async(const struct device *dev, const char *func,
			       const char *fmt, ...) DEVRES_PRINTF(3, 4);
HIDDEN const char *devres__dev_label(const struct device *dev, char *buf,
				     size_t len);
/*
 * The reason dev_err_probe() gave for @dev's last deferral, copied into
 * @buf while @dev is parked with one (defer-reason.c): false otherwise.
 */
HIDDEN bool devres__defer_reason_copy(const struct device *dev, char *buf,
				      size_t len);
/*
 * format.c: the first %n conversion of a caller's @fmt, or NULL; the
 * same with the WARN that refuses @func's call on @dev; vsnprintf()
 * that keeps errno.
 */
HIDDEN const char *devres__fmt_store(const char *fmt);
HIDDEN bool devres__fmt_bad(const struct device *dev, const char *func,
			    const char *fmt);
HIDDEN void devres__vformat(char *buf, size_t len, const char *fmt, va_list ap)
	DEVRES_PRINTF(3, 0);

/*
 * atomic-hook.c: what devres_atomic_hook_set() set, read once before a
 * call into atomic context and used again after it (NULL: none).
 */
extern HIDDEN devres_atomic_hook_t devres__atomic_hook_fn;

static inline devres_atomic_hook_t devres__atomic_hook(void)
{
	return __atomic_load_n(&devres__atomic_hook_fn, __ATOMIC_ACQUIRE);
}

/*
 * fault.c: the one fault-injection point. When it fires it records what
 * failed (@what, the function that holds the point unless it says
 * better) and the errno the failure looks like, for the sweep's report.
 */
extern HIDDEN TLS_FAST unsigned int devres__fail_nth;
HIDDEN bool devres__fail_now(const char *what, int err);

/*
 * How many threads have fail-nth armed: read first, so that a process
 * that injects nothing never reads the thread-local count (a call through
 * a TLS descriptor in the shared library).
 */
extern HIDDEN unsigned int devres__fail_armed;

static inline bool devres__fail_maybe(void)
{
	return unlikely(__atomic_load_n(&devres__fail_armed,
					__ATOMIC_RELAXED) != 0) &&
	       devres__fail_nth != 0;
}

static inline bool devres__should_fail_as(const char *what, int err)
{
	return devres__fail_maybe() && devres__fail_now(what, err);
}

#define devres__should_fail() devres__should_fail_as(__func__, 0)
/*
 * The fault point of an fd the call opens, and of a thread it starts:
 * they say what the failure looks like (EMFILE, EAGAIN), so that a strict
 * sweep checks that the caller gets that error, not one that blames the
 * device or its files.
 */
#define devres__should_fail_fd() devres__should_fail_as(__func__, -EMFILE)
#define devres__should_fail_thread() devres__should_fail_as(__func__, -EAGAIN)

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
 * common case is inline: a plain add to this thread's own tally. On
 * x86-64 one instruction, with no lock prefix: a signal handler that
 * counts on the same thread comes before or after it, never between a
 * load and its store (which lost the handler's count: its node's take
 * lost, its give-back counted, the ledger off by one). ThreadSanitizer
 * does not see an asm statement: its builds add atomically (a locked
 * add); other architectures load and store, and may lose such a count.
 * Each count releases (on x86-64 every store does) and a snapshot
 * acquires: a program that sees a count in a snapshot (a thread's end,
 * a handler gone) sees what the counting thread did before it.
 */
#if defined(__SANITIZE_THREAD__)
#define DL_ADD_LOCKED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DL_ADD_LOCKED 1
#endif
#endif
#if defined(__x86_64__) && !defined(DL_ADD_LOCKED)
#define DL_ADD_ASM 1
#endif
static inline void devres__ledger_bump(long *v, enum devres__ledger_kind kind,
				       long delta)
{
#if defined(DL_ADD_ASM)
	/* What came before stays before (a release, as the others). */
	__atomic_signal_fence(__ATOMIC_RELEASE);
	__asm__("addq %1, %0" : "+m"(v[kind]) : "er"(delta));
#elif defined(DL_ADD_LOCKED)
	__atomic_add_fetch(&v[kind], delta, __ATOMIC_RELEASE);
#else
	__atomic_store_n(&v[kind],
			 __atomic_load_n(&v[kind], __ATOMIC_RELAXED) + delta,
			 __ATOMIC_RELEASE);
#endif
}

static inline void devres__ledger_add(enum devres__ledger_kind kind, long delta)
{
	long *v = devres__tally;

	if (unlikely(!v)) {
		devres__ledger_add_first(kind, delta);
		return;
	}
	devres__ledger_bump(v, kind, delta);
}

/*
 * A node's two counts, nodes and bytes, with one read of the tally's
 * address: in a shared library each read of a thread-local variable is a
 * call through its TLS descriptor, which the compiler does not share
 * between two adds (the first one's asm may have written anywhere).
 */
static inline void devres__ledger_add_node(long nodes, long bytes)
{
	long *v = devres__tally;

	if (unlikely(!v)) {
		devres__ledger_add_first(DL_NODES, nodes);
		devres__ledger_add_first(DL_NODE_BYTES, bytes);
		return;
	}
	devres__ledger_bump(v, DL_NODES, nodes);
	devres__ledger_bump(v, DL_NODE_BYTES, bytes);
}

/*
 * core.c: devres__dev_label() of @dev copied into @buf (of LIVE_LABEL_LEN
 * bytes, a name is not cut), or its address when another thread is
 * releasing it (its count at zero): a release waits for the copy before
 * freeing names. For a call made without a reference, which must not read
 * dev_name(): the names may be freed under it.
 */
#define LIVE_LABEL_LEN 136
HIDDEN const char *devres__dev_label_live(const struct device *dev, char *buf,
					  size_t len);

/*
 * devres.c: devres_add() of @res on @dev for the managed call @func, which
 * holds what the node gives back: true once the node is on @dev. False,
 * with one WARN naming @func, when @dev refuses it (released meanwhile by
 * its last put_device() on a thread whose reference the caller did not
 * hold, or its list held by this thread up the stack): the node is still
 * the caller's, which gives back what it acquired, frees the node and
 * fails with its documented error. A call that kept the resource would
 * return it as managed while no release would ever give it back.
 */
HIDDEN __attribute__((warn_unused_result)) bool
devres__record(struct device *dev, void *res, const char *func);

/*
 * disown.c: the managed owner of a resource, kept in the resource's own
 * record (a mapping, a region, a handler, a buffer) by the subsystem, under
 * the subsystem's lock. A node's release gives the resource back only if
 * the record is still live and still owned by that node: identity, never
 * an address or a number alone. A plain release of an owned resource calls
 * devres__disown() with that lock held (the owner's device is alive while
 * the record is owned), then devres__warn_hand() once unlocked, always:
 * it ends the log hold devres__disown() began.
 */
struct devres__owner {
	struct device *dev; /* NULL: not managed */
	void *node;	    /* the data of the node that releases it */
	dr_release_t release;
	const char *call; /* the managed call that acquired it */
	const char *fix;  /* what gives it back: "devm_free_irq()" */
};

struct devres__hand {
	char dev[64];
	const struct device *owner; /* compared, never read */
	const char *call;
	const char *fix;
	int pid; /* of the process the record belongs to, when not this one */
};

static inline bool devres__owned_by(const struct devres__owner *o,
				    const void *node)
{
	return o->dev && o->node == node;
}

HIDDEN void devres__disown(struct devres__owner *o, struct devres__hand *h);
/*
 * Puts @o's node on @o->dev in the hold of the subsystem's lock that gives
 * the record its owner: a plain release, which takes the node off under
 * that lock, then always finds it there. Published first and added after,
 * a release by hand in between left the node on the device for a resource
 * already given back. Holds the log (devres_add()'s ADD line): the caller
 * calls devres__log_release() once unlocked, whatever the answer.
 * False when the device refused the node (devres__record()): the caller
 * clears the record's owner under the same lock, gives the resource back
 * and fails the managed call.
 */
HIDDEN bool devres__owner_add(const struct devres__owner *o);
/*
 * After devres__owner_add() said false, for a record left owned by @o's
 * node: that node's release run on it now, as the device's release would
 * have run it. Called unlocked. The caller then frees the node (with the
 * copy of @o it may hold) and fails.
 */
HIDDEN void devres__owner_refused(const struct devres__owner *o);
/*
 * A managed claim's identity: its node and the claim's number, unique in
 * the process. The node alone is not one: a claim released and made again
 * on the same thread (a signal handler there, a log sink) has its node in
 * the storage of the one freed.
 */
struct devres__region_id {
	const void *node;
	uint64_t seq;
};

/*
 * devres-resource.c: devm_request_mem_region() (@mem) or
 * devm_request_region() made by the managed call @call, whose managed
 * release is @fix (what a WARN names), its identity in *@ret_id (node
 * NULL on failure);
 * whether that very claim is still on @dev, and its release (a region the
 * node no longer owns is left alone): false when the claim is not on
 * @dev, so one released meanwhile (and its range perhaps claimed again by
 * another call) is never taken for it.
 */
HIDDEN struct resource *
devres__request_region_node(struct device *dev, bool mem, resource_size_t start,
			    resource_size_t n, const char *name,
			    const char *call, const char *fix,
			    struct devres__region_id *ret_id);
HIDDEN bool devres__region_node_held(struct device *dev, bool mem,
				     const struct devres__region_id *id);
HIDDEN bool devres__region_node_release(struct device *dev, bool mem,
					const struct devres__region_id *id);
/*
 * A subsystem's call that gives back a region through the io layer
 * (pci_release_region(), pcim_release_region()): release_mem_region()
 * (@mem) or release_region() (resource.c), devm_release_mem_region() or
 * devm_release_region() (devres-resource.c), each WARN naming @func, the
 * call the caller made, and @dev, whose region it was to be.
 */
HIDDEN void devres__release_region_as(struct device *dev, bool mem,
				      resource_size_t start, resource_size_t n,
				      const char *func);
HIDDEN void devres__devm_release_region_as(struct device *dev, bool mem,
					   resource_size_t start,
					   resource_size_t n, const char *func);
/* Who owns it, into @h, without taking anything: under the same lock. */
HIDDEN void devres__owner_hand(const struct devres__owner *o,
			       struct devres__hand *h);
/* The WARN's words, after "<dev>: <func>: ": what, call, fix. */
#define DEVRES__HAND_FMT                                                       \
	"%s acquired with %s(): use %s; released now, and taken off the "      \
	"device"
HIDDEN void devres__warn_hand(const struct devres__hand *h, const char *func,
			      const char *what);
/*
 * A managed release (devm_iounmap(), devm_free_irq() ...) that found
 * nothing of @dev's, given a resource whose record names its owner
 * (another device, or @dev itself by another managed call): the WARN
 * names it, with @h from devres__owner_hand() (or a lookup that fills it
 * so): "<what>: it is <owner>'s, acquired with <call>() (use <fix>):
 * nothing released" ("it is this device's" for @dev's own); with @h
 * NULL (no record names an owner), "<what>" alone. Nothing is given
 * back: the owner's release does that.
 */
HIDDEN void devres__warn_foreign(const struct device *dev, const char *func,
				 const struct devres__hand *h, const char *fmt,
				 ...) DEVRES_PRINTF(4, 5);
/*
 * owners.c: the devices of the process asked which holds what a managed
 * release was given on @dev when @dev has nothing of it (the node keeps
 * no owner), on that misuse path alone. The driver model gives the walk
 * over its registered devices (devres__owners_walk_set(), at load):
 * @visit is called for each, under the walk's own lock, until it returns
 * false. @has is called with a device's devres lock held, for each device
 * of this process but @dev whose lock is free at once: the name of the
 * call that acquired the resource when that device has it, else NULL.
 * The first found fills @h, for devres__warn_foreign(), with @fix; false
 * when none has it (or the walk's lock was not to be had).
 * devres__owner_of_node() asks for a node of @release that @match (the
 * library's own, run under the lock) finds, acquired with @call.
 */
typedef void (*devres__owners_walk_t)(bool (*visit)(struct device *dev,
						    void *ctx),
				      void *ctx);
HIDDEN void devres__owners_walk_set(devres__owners_walk_t walk);
typedef const char *(*devres__has_t)(struct device *dev, const void *a,
				     const void *b);
HIDDEN bool devres__owner_of(const struct device *dev, devres__has_t has,
			     const void *a, const void *b, const char *fix,
			     struct devres__hand *h);
HIDDEN bool devres__owner_of_node(const struct device *dev,
				  dr_release_t release, dr_match_t match,
				  void *data, const char *call, const char *fix,
				  struct devres__hand *h);

/*
 * within.c: whether @p lies inside the data of a live resource listed on
 * @dev (a managed block, [data, data + size)), for the driver model's
 * device_add(). Takes @dev's devres lock, and walks its list: never on a
 * hot path. False, with nothing taken, for a device with nothing listed,
 * not usable by this process, or whose lock this thread holds.
 */
HIDDEN bool devres__managed_holds(struct device *dev, const void *p,
				  const char *func);

/*
 * maps.c: who owns the managed mapping that holds @addr, into @h; false
 * when none does (or this thread is inside a span of the table's lock,
 * where it does not look).
 */
HIDDEN bool devres__maps_owner(const void *addr, struct devres__hand *h);

/*
 * plain-unmap.c: the subsystems that hand out mappings of device memory
 * (io's ioremap(), PCI's BARs), each with the function that gives one of
 * its own back by hand for the plain call @call ("iounmap",
 * "pci_iounmap"), WARNing as that call: 0 when @addr was its mapping
 * (unmapped, or refused with its WARN), -ENOENT when not. Registered by a
 * constructor; devres__unmap_plain() asks each in turn, and says -ENOENT
 * when none had @addr. A registration past the table's four is refused:
 * -ENOSPC, with one WARN.
 */
typedef int (*devres__unmapper_t)(void *addr, const char *call);
HIDDEN int devres__unmapper_register(devres__unmapper_t fn);
HIDDEN int devres__unmap_plain(void *addr, const char *call);
/*
 * Between these, this thread's log lines and WARNs are kept and sent to
 * the sink at the outermost devres__log_release(): a caller that holds a
 * subsystem's lock brackets what may log, and releases once unlocked, so
 * that a sink calling back into the subsystem never waits for that lock.
 * WARNs are counted at once. devres__disown() holds; devres__warn_hand()
 * releases. They nest.
 */
HIDDEN void devres__log_hold(void);
HIDDEN void devres__log_release(void);
HIDDEN void devres__warn_label(const char *label, const char *func,
			       const char *fmt, ...) DEVRES_PRINTF(3, 4);

/*
 * maps.c: the process's managed mappings, so that the application's
 * munmap(), mremap() and mmap(MAP_FIXED) of one take its node off its
 * device at once, with a WARN. A subsystem fills in [start, end) (whole
 * pages) and either the owner (the node is taken off with
 * devres__disown(), then @dropped, when set, drops the ledger's counts)
 * or @take, and adds the record once the node is on its device. @take
 * runs under the table's lock (so a subsystem's lock nests inside it):
 * it takes the subsystem's own record of the mapping, if still there and
 * still managed, disowns its node into @h and frees the record without
 * unmapping (the plain call does that); true when it did (@h then is for
 * the WARN). devres__map_remove() takes the record out for the node's own
 * unmap, never with a lock held that a @take takes: true when it was
 * still in the table, false when a plain call took it. -ENOMEM when the
 * table cannot grow. A record with @refuse set is not to be taken by hand
 * (a DMA pool's chunk, which the pool still hands out blocks of): a plain
 * call over any part of it is refused whole, nothing taken or changed,
 * with one WARN naming @refuse (what it is) and the owner's call and fix
 * (@owner.dev only labels it; no node is disowned), and fails with
 * -EPERM, as over a sealed mapping. A record with @take has @who too:
 * under the table's lock, as @take, it describes the owner into @h
 * without taking anything; false when the mapping is no longer managed.
 * The library's own calls (devres__munmap() ...) go through the PLT to
 * whatever comes first, then the entry points of maps-entry.c, which find
 * nothing of theirs in the table; devres__munmap() does not even look (it
 * may run under a lock a @take takes). Those entry points read
 * devres__maps_nr (the count, written under the lock) and
 * devres__maps_held (this thread is inside a span of the lock: go
 * straight on), and call devres__maps_check() once something is
 * recorded.
 */
/* What /proc/self/maps shows over a range (maps-id.c). */
struct devres__map_id {
	unsigned int major, minor;
	unsigned long ino;
	unsigned long long off; /* at the range's first byte */
};

struct devres__map {
	uintptr_t start, end;
	struct devres__owner owner;
	void (*dropped)(struct devres__map *m);
	bool (*take)(struct devres__map *m, struct devres__hand *h);
	bool (*who)(const struct devres__map *m, struct devres__hand *h);
	const char *refuse;
	bool in_table;
	/*
	 * The library made the mapping read-only (a BAR in the PCI layer's
	 * read-only mode): mprotect() keeps it so. Set once, atomically,
	 * under the subsystem's lock; devres__maps_readonly set first.
	 */
	bool readonly;
	/* What was mapped there when recorded (devres__map_identify()). */
	bool have_id;
	struct devres__map_id id;
};

/* Whether any record was ever made read-only: mprotect() then looks. */
extern HIDDEN bool devres__maps_readonly;
HIDDEN void devres__map_set_readonly(struct devres__map *m);
/*
 * maps-advise.c: a subsystem's own look at the mappings it made read-only,
 * a node's or the program's, recorded or not, and a child of fork()'s
 * copies of them (whose table of records is empty): true, with @h and the
 * mapping's range filled in, when [@a, @end) touches one. Called only
 * once devres__maps_readonly is set, never from the library's own
 * mprotect(). One look, registered once as the library loads.
 */
typedef bool (*devres__ro_look_t)(uintptr_t a, uintptr_t end,
				  struct devres__hand *h, uintptr_t *ret_start,
				  size_t *ret_len);
HIDDEN void devres__ro_look_register(devres__ro_look_t fn);
/*
 * @call(@addr, @len, @arg) over such a mapping: true, with its WARN and
 * errno EPERM, when refused (maps-advise.c).
 */
HIDDEN bool devres__ro_refused(const char *call, void *addr, size_t len,
			       const char *arg);
/*
 * protect-flight.c: mprotect(), pkey_mprotect() and mremap() counted in
 * flight from before their look (devres__ro_refused()) until the kernel's
 * call returns: devres__protect_begin() returns the slot to give back to
 * devres__protect_end(). A switch that makes its mappings read-only sets
 * its mode, then calls devres__protect_settle(), which sets
 * devres__maps_readonly and returns once every such call counted before
 * it has ended (no cancellation point is left off for it: the caller
 * turns cancellation off), then protects: a call counted later finds the
 * mode set.
 */
HIDDEN unsigned int devres__protect_begin(void);
/*
 * Once counted: whether the call has anything to look at (a record, or a
 * switch's mark); false: it goes straight on.
 */
HIDDEN bool devres__protect_looks(void);
HIDDEN void devres__protect_end(unsigned int slot);
HIDDEN void devres__protect_settle(void);

/*
 * The next definition of a libc name the library interposes (maps-entry.c):
 * a sanitizer's interceptor linked into the same object, else
 * dlsym(RTLD_NEXT). NULL when there is none.
 */
HIDDEN void *devres__next_sym(const char *name);

/*
 * The kept next definition of an interposed name: a function type that
 * matches any other in a cast, so that each caller casts it back to its
 * own. Each name has a slot, NULL until the first call resolves it.
 */
typedef void devres__fn(void);

/*
 * Resolves @name into *@slot (maps-entry.c): the next definition, or, when
 * there is none, @fallback (a raw system call, or a refusal), kept either
 * way. A call made while this thread is resolving (dlsym() may allocate,
 * and an allocator may map) gets @fallback, not kept. errno is the
 * caller's again afterwards. Callable before a sanitizer's runtime is
 * initialised: it is not instrumented.
 */
HIDDEN devres__fn *devres__next_resolve(devres__fn **slot, const char *name,
					devres__fn *fallback);

/* The next definition of @name: once resolved, one load. */
static inline devres__fn *devres__next(devres__fn **slot, const char *name,
				       devres__fn *fallback)
{
	devres__fn *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (likely(f))
		return f;
	return devres__next_resolve(slot, name, fallback);
}
/*
 * next_<name>(): the next definition of @name, of function type @type,
 * resolved once for the process (devres__next()), else @fallback.
 * @type is a function type, declared with: it cannot be parenthesized.
 * Resolved as the library loads (resolve_<name>()): dlsym() allocates on
 * a thread's first call, and a signal handler's call of an
 * async-signal-safe name (close(), munmap() ...) may be the process's
 * first of it.
 */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define DEVRES__NEXT(type, name, fallback)                                     \
	static devres__fn *name##_next;                                        \
	static type *next_##name(void)                                         \
	{                                                                      \
		return (type *)devres__next(&name##_next, #name,               \
					    (devres__fn *)(fallback));         \
	}                                                                      \
	__attribute__((constructor)) static void resolve_##name(void)          \
	{                                                                      \
		(void)next_##name();                                           \
	}
/* NOLINTEND(bugprone-macro-parentheses) */

extern HIDDEN size_t devres__maps_nr;
extern HIDDEN TLS_FAST unsigned int devres__maps_held;
extern HIDDEN TLS_FAST unsigned int devres__maps_own;
extern HIDDEN bool devres__maps_unlooked;

/*
 * Whether an interposed mapping call goes straight on, unlooked at:
 * nothing recorded, the library's own call (devres__munmap() ...), or
 * this thread inside a span of the table's lock (maps.c): a call from a
 * subsystem's @take, or a signal handler's. The table may then keep
 * records of ranges the call unmapped or replaced; the lookups and the
 * releases tell them by their identity once that was so
 * (devres__maps_unlooked).
 */
static inline bool devres__maps_none(void)
{
	if (likely(!__atomic_load_n(&devres__maps_nr, __ATOMIC_RELAXED)) ||
	    devres__maps_own)
		return true;
	if (likely(!__atomic_load_n(&devres__maps_held, __ATOMIC_RELAXED)))
		return false;
	__atomic_store_n(&devres__maps_unlooked, true, __ATOMIC_RELAXED);
	return true;
}
/*
 * Over [addr, addr + len) and [addr2, addr2 + len2) (len2 0: none): 0
 * when the call may go on, -EPERM when a record refuses it.
 */
HIDDEN int devres__maps_check(const char *call, void *addr, size_t len,
			      void *addr2, size_t len2);
/*
 * maps-advise.c's calls (madvise(), mprotect() ...) that keep a managed
 * mapping mapped but drop what it holds or take access away: @call and
 * @arg (the advice or protection, by name) for the WARN, @why what it
 * would do; @touched_only: only over records the library reads or writes
 * through. devres__maps_guard() returns -EPERM, with one WARN, when any
 * page of [addr, addr + len) is such a record's, else 0; @why is then
 * chosen per record for a protection.
 */
struct devres__guard {
	const char *call;
	const char *arg;
	const char *why;
	bool touched_only;
	/*
	 * mprotect(), pkey_mprotect(): @prot the protection asked for (-1
	 * for a pkey's, whose rights are each thread's). A record passes
	 * when the read and write access it leaves is what the library
	 * made the mapping with: neither taken away nor widened.
	 */
	bool protect;
	int prot;
};
HIDDEN int devres__maps_guard(const struct devres__guard *g, void *addr,
			      size_t len);
HIDDEN int devres__madvise(void *addr, size_t len, int advice);
HIDDEN int devres__mprotect(void *addr, size_t len, int prot);
HIDDEN int devres__map_add(struct devres__map *m);
/*
 * The same, and @m->owner's node put on its device in that hold of the
 * table's lock: a munmap(2) by hand finds the record and its node
 * together. From then the node may be released on another thread at
 * once, @m with it: the caller does not touch either after. -ENOMEM: not
 * recorded, the node not added; -ENODEV: the device refused the node
 * (devres__record()), not recorded either.
 */
HIDDEN int devres__map_add_owned(struct devres__map *m);
HIDDEN bool devres__map_remove(struct devres__map *m);
/*
 * The same, and if it was still in the table, unmaps [addr, addr + len)
 * before the table's lock is let go: a plain call made meanwhile (a new
 * mapping put there with MAP_FIXED) waits, and is never unmapped by it.
 * With @ret_what (devres__map_put()), a range that a call made unlooked
 * at inside a span of the lock (a signal handler's) unmapped or replaced
 * is left mapped, and *@ret_what set to DEVRES_MAP_GONE or _OTHER.
 */
HIDDEN bool devres__map_remove_unmap(struct devres__map *m, void *addr,
				     size_t len, int *ret_what);
/*
 * maps-id.c: the identity of a recorded range, so that a release does not
 * unmap what a raw system call put there. devres__map_identity() says
 * what is mapped over [a, a + len): DEVRES_MAP_GONE (nothing), _SAME (all
 * of it, from one object at consistent offsets, in *@ret_id), _OTHER
 * (holes, or more than one object), _UNKNOWN (no /proc); errno kept.
 * devres__map_identify() records @m's, before devres__map_add() (one read
 * of /proc/self/maps); devres__map_now() compares it with what is there
 * now (_OTHER when it differs; _UNKNOWN without one recorded).
 * devres__map_put() is a release's devres__map_remove_unmap() that
 * leaves the range mapped, with one WARN on @dev in @call's name, when it
 * was unmapped or replaced behind the library's back; the same return.
 */
enum {
	DEVRES_MAP_GONE,
	DEVRES_MAP_SAME,
	DEVRES_MAP_OTHER,
	DEVRES_MAP_UNKNOWN
};

/*
 * Whether PROCMAP_QUERY answers (maps-id.c): 0 not known yet, 1 yes, -1 no
 * (the file is read).
 */
extern HIDDEN int devres__maps_query;
HIDDEN int devres__map_identity(uintptr_t a, size_t len,
				struct devres__map_id *ret_id);
HIDDEN void devres__map_identify(struct devres__map *m);
HIDDEN int devres__map_now(const struct devres__map *m);
HIDDEN void devres__map_warn_behind(struct device *dev, const char *call,
				    const struct devres__map *m, int what);
HIDDEN bool devres__map_put(struct devres__map *m, void *addr, size_t len,
			    struct device *dev, const char *call);
HIDDEN void *devres__mmap(void *addr, size_t len, int prot, int flags, int fd,
			  off_t off);
HIDDEN int devres__munmap(void *addr, size_t len);
HIDDEN void *devres__mremap(void *old, size_t old_len, size_t new_len,
			    int flags, void *new_addr);

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

/*
 * devres.c: devres_add() of a node that no group of the device's users
 * may release: placed just newer than the newest layer-owned group's
 * marker (the driver binding's) when @in_owned and there is one, else at
 * the oldest end of the list (released with the device's own resources).
 * For bookkeeping that must outlive whatever group is open when it is
 * made. Walks the list: not for a fast path.
 */
HIDDEN void devres__add_ungrouped(struct device *dev, void *res, bool in_owned);

/*
 * devres.c: a check that must see all of a chain's releases done. A
 * release callback that passes @l here has @l->fn(@l) called once every
 * other node of the chain it is released with (an unbind, a
 * devres_release_all(), a group) has been released, whatever the order
 * they were acquired in; called outside such a chain, at once. @l stays
 * the caller's (@fn may free it).
 */
struct devres__late {
	void (*fn)(struct devres__late *l);
	struct devres__late *next;
};

HIDDEN void devres__after_chain(struct devres__late *l);

/*
 * devres.c: a release of the chain that finishes after the chain ends (a
 * revocation queued behind an access of this thread, or handed to a
 * reader on another, revocable.c) holds the chain's late checks until
 * devres__late_unhold(), on any thread: they must see its release done
 * too; devres__late_hold() only on the chain's thread, inside it. The checks use the chain's device:
 * the holder keeps a reference on it meanwhile. NULL outside a chain or
 * without memory: the checks then run at the chain's end.
 * devres__late_unhold() of NULL does nothing.
 */
struct devres__late_hold;
HIDDEN struct devres__late_hold *devres__late_hold(void);
HIDDEN void devres__late_unhold(struct devres__late_hold *h);

/* core.c: a reference on @dev unless its count already reached zero. */
HIDDEN bool devres__ref_if_alive(struct device *dev);

/*
 * bus.c: bus_register() for a bus of the library's own whose devices
 * carry state of the bus's layer (a list of its devices, their regions):
 * @deleted takes that state back. The driver core calls it once from the
 * one deletion every way of deleting a device of @bus ends in
 * (device_del() or device_unregister() of its struct device, the bus's
 * own delete, its last put while registered, a thread that ends inside
 * the deletion): after the device left its bus and its resources were
 * released, before the registration's reference is put (the device may
 * be freed then). With no lock of the driver core held; it must not end
 * the thread. Return: as bus_register().
 */
HIDDEN int devres__bus_register_deleted(const struct bus_type *bus,
					void (*deleted)(struct device *dev));

/*
 * driver.c: what a bus's registration of its drivers fills in of the
 * caller's struct device_driver before driver_register(): @bus, and
 * @name when the driver has none (NULL: none given). Written under the
 * driver core's lock and only when it differs, so that the same driver
 * registered again, or twice at once (the second refused), writes
 * nothing a thread using the registered driver reads.
 */
struct device_driver;
HIDDEN void devres__driver_fill(struct device_driver *drv,
				const struct bus_type *bus, const char *name);

/*
 * fork.c: the library's one set of pthread_atfork() handlers. Each file
 * with a process-wide lock registers its handlers under its rank (in a
 * constructor); prepare handlers run in rank order, outer locks first,
 * parent and child handlers in the reverse order. docs/fork.md.
 */
enum devres__fork_rank {
	/*
	 * No lock: checks that the forking thread holds none of the locks
	 * below, where a subsystem can tell (dma/mapping.c: its ops).
	 */
	DEVRES_FORK_CHECK,
	DEVRES_FORK_PCI_BUS,   /* pci/driver.c: held across bus_register() */
	DEVRES_FORK_VFIO,      /* vfio/container.c */
	DEVRES_FORK_UIO,       /* uio/uio.c: before the DMA states */
	DEVRES_FORK_IRQ_DISP,  /* irq/dispatch.c */
	DEVRES_FORK_IRQ_LINES, /* irq/line.c */
	/*
	 * After the lines: a UIO line's unmask reads config space (the list
	 * lock) with the line's lock held, which irq_line_destroy() takes
	 * under the line table's write lock.
	 */
	DEVRES_FORK_PCI_LIST, /* pci/probe.c */
	/* Before the subsystems' mapping locks: taken under it. */
	DEVRES_FORK_MAPS,	/* base/maps.c: managed mappings */
	DEVRES_FORK_PCI_MAPS,	/* pci/bars.c */
	DEVRES_FORK_DMA_STATES, /* dma/mapping.c */
	DEVRES_FORK_DMA_POOLS,	/* dma/pool.c: the live pools */
	DEVRES_FORK_DMA_POOL,	/* dma/pool.c: leaked chunks */
	DEVRES_FORK_IO,		/* io/iomap.c */
	DEVRES_FORK_FDS,	/* posix/fd-table.c */
	DEVRES_FORK_RCU,	/* revocable/urcu.c */
	DEVRES_FORK_TREE,	/* base/resource.c */
	DEVRES_FORK_DM,		/* base/bus.c */
	DEVRES_FORK_SLAB,	/* base/slab.c */
	DEVRES_FORK_PAGES,	/* base/pages.c */
	DEVRES_FORK_NODES,	/* base/nodecache.c: ASan builds */
	DEVRES_FORK_BLOCKS,	/* base/blocks.c: ASan builds */
	/*
	 * After the slab's and the blocks': a signal handler registers a
	 * release function (its first devres_alloc(), which may run in a
	 * handler) while its thread holds the block cache's lock.
	 */
	DEVRES_FORK_KIND,    /* base/kind.c */
	DEVRES_FORK_HANDLES, /* base/handle.c: taken alone */
	DEVRES_FORK_LEDGER,  /* base/ledger.c: no lock */
	DEVRES_FORK_SWEEP,   /* base/sweep.c: no lock, a flag */
	DEVRES_FORK_LIVEOBJ, /* base/liveobj.c: a leaf */
	DEVRES_FORK_OWN_FDS, /* base/own-fd.c: a leaf */
	DEVRES_FORK_WAITS,   /* base/waits.c: a leaf */
	DEVRES_FORK_LOG,     /* base/log.c: the WARN path, innermost */
	DEVRES_FORK_FAULT,   /* base/fault.c: no lock, a count */
	DEVRES_FORK_PROTECT, /* base/protect-flight.c: no lock, counts */
	DEVRES_FORK_NR,
};

HIDDEN void devres__atfork(enum devres__fork_rank rank, void (*prepare)(void),
			   void (*parent)(void), void (*child)(void));
/* A lock that is all there is at @rank: held (read-held) across fork(). */
HIDDEN void devres__atfork_mutex(enum devres__fork_rank rank,
				 pthread_mutex_t *m);
HIDDEN void devres__atfork_rwlock(enum devres__fork_rank rank,
				  pthread_rwlock_t *l);

/* pthread_atfork() without libc_nonshared.a's object (fork.c). */
HIDDEN int devres__pthread_atfork(void (*prepare)(void), void (*parent)(void),
				  void (*child)(void));

/*
 * irq/line.c: a line a backend made for a device's interrupt vectors is
 * claimed by the backend's record (@owner, @name for the WARN): the
 * public irq_line_destroy() refuses it, and the backend destroys it only
 * through irq__line_destroy_claimed() with the same @owner, which does
 * nothing to a line that is not (or no longer) that owner's, and first
 * frees the handlers a driver left on it (one WARN each).
 */
HIDDEN int irq__line_claim(int irq, const void *owner, const char *name);
HIDDEN int irq__line_destroy_claimed(int irq, const void *owner);
/* irq/line.c: how many handlers line @irq has; 0 for no line. */
HIDDEN int irq__line_handlers(int irq);

/*
 * No call of the library is a cancellation point (docs/posix.md): a
 * thread cancelled in one of its waits (pthread_cond_wait() relocks the
 * mutex and exits holding it), or in a callback it runs under a lock,
 * would leave the lock held and the object half changed. Each wait and
 * each callback under a lock runs with cancellation disabled; a request
 * made meanwhile acts at the thread's next cancellation point after the
 * call. Returns the state to give back to devres__cancel_restore().
 */
static inline int devres__cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void devres__cancel_restore(int old)
{
	int cur;

	if (old != PTHREAD_CANCEL_DISABLE)
		pthread_setcancelstate(old, &cur);
}

/*
 * sigblock.c: every signal held back on this thread from
 * devres__signals_off() to its devres__signals_on(), for the span of a
 * lock that a call a signal handler may make takes too (the interposed
 * close(), dup2(), dup3(), close_range()). They nest; errno is kept.
 */
HIDDEN void devres__signals_off(void);
HIDDEN void devres__signals_on(void);

/*
 * own-fd.c: the descriptors the library opens for its own use, recorded
 * by number while it holds them, so that the program's close(), dup2(),
 * dup3(), close_range() or fclose() of one is refused with a WARN that
 * says what it is (its kind, then "of" @name). A subsystem records each
 * as it opens it (below) and gives it back with devres__own_fd_close()
 * (errno kept), devres__own_dir_close() or devres__own_file_close().
 * Each open site of src/ has a kind (tests/misuse/check-own-fds.sh).
 */
enum devres__own_kind {
	DEVRES_OWN_NONE,
	DEVRES_OWN_IRQ_EPOLL,	   /* irq/dispatch.c */
	DEVRES_OWN_IRQ_WAKE,	   /* irq/dispatch.c */
	DEVRES_OWN_IRQ_LINE,	   /* irq/line.c: irq_line_create() */
	DEVRES_OWN_IRQ_ATTACHED,   /* irq/line.c: irq_line_attach_fd() */
	DEVRES_OWN_IRQ_UNMASK,	   /* irq/line.c: irq_line_attach_level() */
	DEVRES_OWN_THREAD_WAKE,	   /* posix/thread.c */
	DEVRES_OWN_UIO,		   /* uio/uio.c */
	DEVRES_OWN_UIO_SYSFS,	   /* uio/uio.c: the lookup of its uioN */
	DEVRES_OWN_VFIO_GROUP,	   /* vfio/container.c */
	DEVRES_OWN_VFIO_CONTAINER, /* vfio/container.c */
	DEVRES_OWN_VFIO_DEVICE,	   /* vfio/device.c */
	DEVRES_OWN_VFIO_EVENTFD,   /* vfio/irq.c */
	DEVRES_OWN_PCI_FILE,	   /* pci/probe.c: pci__open(); pci/fake.c */
	DEVRES_OWN_PCI_DIR,	   /* pci/probe.c: pci__open_dir(), the scan */
	DEVRES_OWN_PCI_ROOT,	   /* pci/probe.c: the sysfs root */
	DEVRES_OWN_PAGEMAP,	   /* dma/pagemap.c */
	DEVRES_OWN_IO_WINDOW,	   /* io/iomap.c */
	DEVRES_OWN_PATH_WALK,	   /* base/resolve.c */
	DEVRES_OWN_MAPS,	   /* base/maps-id.c */
	DEVRES_OWN_NR,
};

extern HIDDEN unsigned long devres__own_fds_nr;
HIDDEN void devres__own_fd_add(int fd, enum devres__own_kind kind,
			       const char *name);
/*
 * An open site brackets its call with these: devres__own_fd_opening()
 * just before it (no fault point, log or close in between), then
 * devres__own_fd_opened() with what it returned (negative: nothing to
 * record; errno kept), so that no close by hand falls between the open
 * and its record. devres__own_fd_add() names a number again.
 */
HIDDEN void devres__own_fd_opening(void);
/*
 * The interposers bracket their look and their call of libc with these
 * (docs in own-fd.c): the exit with what the enter returned, also when
 * the thread is cancelled in the call.
 */
HIDDEN bool devres__own_fd_enter(void);
HIDDEN void devres__own_fd_exit(bool entered);
HIDDEN void devres__own_fd_opened(int fd, enum devres__own_kind kind,
				  const char *name);
HIDDEN int devres__own_fd_close(int fd);
/*
 * Whether @fd still is the file the library recorded at its open (its
 * device and inode, by fstat()), asked before the library writes through
 * a number it keeps: false when a raw system call closed it behind the
 * library's back (the number may be another owner's by now). The record
 * is then marked lost, with one WARN naming it: the program's calls on
 * the number are no longer refused, every later check says false, and
 * devres__own_fd_close() forgets it without closing the number. An
 * anonymous-inode descriptor (eventfd, epoll...) is compared with its
 * twin by kcmp() instead, where kcmp() may be used (own-fd.c). true for
 * a number not recorded. errno kept.
 */
HIDDEN bool devres__own_fd_check(int fd);
/*
 * Whether this process may use kcmp(): 0 not known yet, 1 yes, -1 no
 * (refused whatever the descriptors: a seccomp policy, a kernel without
 * it). devres__same_file(): 0 when @a and @b are one open file, 1 when
 * they are not (or one is closed), -1 when kcmp() cannot tell (then
 * setting the state to -1 if it is refused). errno changed.
 */
extern HIDDEN int devres__kcmp_state;
HIDDEN int devres__same_file(int a, int b);
/* closedir() and fclose() of a stream over a recorded number. */
HIDDEN int devres__own_dir_close(DIR *dir);
HIDDEN int devres__own_file_close(FILE *f);
HIDDEN void devres__own_fd_forget(int fd);
HIDDEN const char *devres__own_kind_name(enum devres__own_kind kind);
/*
 * The interposers' check: whether @fd may be recorded (no lock, two
 * loads; false: it is not). Their slow paths: whether @fd is this
 * process's own (one WARN then, in @func's name, made out of the bracket:
 * *@entered is then false); the lowest of [@lo, @hi] that is, or -1,
 * what to WARN of it in *@ret_seen, for devres__own_fd_warn() once out
 * of the bracket. Each waits out a close of the number by the library
 * first.
 */
HIDDEN bool devres__own_fd_maybe(int fd);
HIDDEN bool devres__own_fd_refused(const char *func, int fd, bool *entered);
/*
 * The kind of @fd's record (0: none), whichever process opened it, its
 * name copied into @name and *@ret_inherited set when that process is not
 * this one (a child's copy); waits out a close of it by the library. For
 * the checks of calls that do not close (ioctl()).
 */
HIDDEN unsigned char devres__own_fd_kind(int fd, char *name, size_t len,
					 bool *ret_inherited);
/* What a WARN says of a number found by devres__own_fd_next(). */
struct devres__own_seen {
	int fd;
	unsigned char kind;
	char name[40];
};

HIDDEN int devres__own_fd_next(unsigned int lo, unsigned int hi,
			       struct devres__own_seen *ret_seen);
HIDDEN void devres__own_fd_warn(const char *func,
				const struct devres__own_seen *s);

/*
 * dev-hooks.c: what a subsystem keeps for a device outside its list of
 * resources, unmanaged (a DMA state with live mappings, a DMA pool), is
 * dropped at the device's final release, before its ->release: the
 * subsystem arms its hook (@gone) at the first such state it makes, and
 * each release calls the armed hooks in rank order, with @dev still
 * usable by the subsystem's calls. A hook that finds something of @dev's
 * gives it all back and WARNs once, naming the device and what was left;
 * it finds nothing fast. Arming again does nothing.
 */
enum devres__dev_hook_rank {
	DEVRES_DEV_HOOK_DMA_POOLS, /* dma/pool.c: before the mappings */
	DEVRES_DEV_HOOK_DMA,	   /* dma/orphan.c: the DMA state */
	DEVRES_DEV_HOOK_NR,
};

HIDDEN void devres__dev_hook_arm(enum devres__dev_hook_rank rank,
				 void (*gone)(struct device *dev));

#include "handle.h"
#include "growtab.h"
#include "seen-lock.h"
#include "tslots.h"
#include "waits.h"

#endif /* DEVRES_SUBSYS_H */
