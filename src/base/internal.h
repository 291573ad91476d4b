/* SPDX-License-Identifier: MIT */
/*
 * Definitions shared between the library's files. Nothing here is API.
 */
#ifndef DEVRES_INTERNAL_H
#define DEVRES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <devres/device.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define HIDDEN __attribute__((visibility("hidden")))
#define TLS_FAST __thread __attribute__((tls_model("initial-exec")))

/* Stamped into struct device by device_initialize(), cleared at the end. */
#define DEVRES_DEV_MAGIC 0x64657672u
#define DEVRES_DEV_DEAD 0x64656164u

/*
 * A node: 16 bytes of bookkeeping in front of the data area. The list runs
 * from the newest node (dev->devres_head) to the oldest through @next. The
 * release function and its name are per kind, not per node.
 */
struct devres__node {
	struct devres__node *next;
	uint32_t kind; /* index in the kind table, | DR_ADDED while listed */
	uint32_t size; /* data bytes; a group's colour in its open marker */
};

#define DR_ADDED 0x80000000u
#define DR_KIND(n) ((n)->kind & ~DR_ADDED)
#define DR_MAX_SIZE ((size_t)UINT32_MAX)

/* Reserved kinds. Kinds from DR_KIND_FIRST on are registered on use. */
enum {
	DR_KIND_NONE,
	DR_KIND_GROUP_OPEN,
	DR_KIND_GROUP_CLOSE,
	DR_KIND_BINDING, /* the driver core's marker, invisible to groups */
	DR_KIND_KMALLOC,
	DR_KIND_FIRST,
};

static inline bool dr_is_marker(const struct devres__node *n)
{
	return DR_KIND(n) < DR_KIND_KMALLOC;
}

/*
 * A group: two markers and an id in 40 bytes (one 48-byte heap chunk).
 * The binding group of the driver core has the same shape but lives in the
 * device's private state, so binding a driver allocates nothing.
 */
struct devres__group {
	struct devres__node open;
	struct devres__node close;
	void *id;
};

/* kind.c: release functions (or actions) and their names. */
struct devres__kind {
	dr_release_t release;
	void (*action)(void *);
	const char *name;
	struct devres__kind *hash_next;
	uint32_t id;
};

HIDDEN uint32_t devres__kind_get(dr_release_t release, void (*action)(void *),
				 const char *name);
HIDDEN uint32_t devres__kind_lookup(dr_release_t release,
				    void (*action)(void *));
#define DR_KIND_SEG_SHIFT 8
extern HIDDEN struct devres__kind *devres__kind_segs[];

/* Every release and every log line looks its kind up: inline. */
static inline const struct devres__kind *devres__kind(uint32_t id)
{
	struct devres__kind *seg = __atomic_load_n(
		&devres__kind_segs[id >> DR_KIND_SEG_SHIFT], __ATOMIC_ACQUIRE);

	return &seg[id & ((1u << DR_KIND_SEG_SHIFT) - 1)];
}

/* devres.c: what the driver core needs of the devres core. */
HIDDEN int devres__binding_open(struct device *dev, struct devres__group *g);
HIDDEN int devres__binding_release(struct device *dev, struct devres__group *g);
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
HIDDEN void devres__log(const struct device *dev, const char *op,
			const void *node, const char *name, size_t size);
HIDDEN void devres__warn(const struct device *dev, const char *func,
			 const char *fmt, ...) DEVRES_PRINTF(3, 4);
HIDDEN void devres__print(int level, const char *fmt, ...) DEVRES_PRINTF(2, 3);
HIDDEN const char *devres__dev_label(const struct device *dev, char *buf,
				     size_t len);

/* fault.c: the one fault-injection point. */
extern HIDDEN TLS_FAST unsigned int devres__fail_nth;
HIDDEN bool devres__fail_now(void);

static inline bool devres__should_fail(void)
{
	return unlikely(devres__fail_nth != 0) && devres__fail_now();
}

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

#endif /* DEVRES_INTERNAL_H */
