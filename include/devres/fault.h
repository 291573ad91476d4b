/* SPDX-License-Identifier: MIT */
/*
 * Every failure path tested: fail-nth fault injection, the ledger of live
 * resources, and the sweep that combines them.
 */
#ifndef DEVRES_FAULT_H
#define DEVRES_FAULT_H

#include <stdio.h>
#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * devres_fail_nth() - make the n-th fault-injectable call of this thread fail
 * @n: 1 fails the next call, 2 the one after, ...; 0 disarms
 *
 * Fault-injectable calls are every devres node allocation (so every managed
 * acquisition and every group) and every OS acquisition the library makes
 * for a managed call. A failure looks exactly like the real one. Release
 * paths are never injected. DEVRES_FAIL_NTH=n in the environment arms the
 * main thread at start.
 *
 * Context: the calling thread only.
 */
DEVRES_API void devres_fail_nth(unsigned int n);

/**
 * devres_fail_nth_get() - the state of this thread's injection
 *
 * Context: the calling thread only.
 * Return: 0 when disarmed or once the fault was injected, else how many
 * fault-injectable calls are still to go (the n-th fails).
 */
DEVRES_API unsigned int devres_fail_nth_get(void);

/**
 * struct devres_ledger - what is alive in the process, by kind
 * @nodes: devres nodes, on a device or not, group markers excluded
 * @node_bytes: the bytes of their data areas
 * @groups: open or closed groups (and driver bindings)
 * @fds: file descriptors held for managed calls
 * @maps: memory mappings held for managed calls
 * @map_bytes: their bytes
 * @irq_handlers: interrupt handlers attached
 * @dma_buffers: DMA buffers allocated
 * @dma_bytes: their bytes
 * @threads: threads started for managed calls (not the library's own)
 * @devices: devices registered with device_add()
 */
struct devres_ledger {
	long nodes;
	long node_bytes;
	long groups;
	long fds;
	long maps;
	long map_bytes;
	long irq_handlers;
	long dma_buffers;
	long dma_bytes;
	long threads;
	long devices;
};

/**
 * devres_ledger_snapshot() - read the ledger
 * @ret_ledger: filled in
 *
 * Each count is exact when no other thread is acquiring or releasing.
 *
 * Context: any thread.
 */
DEVRES_API void devres_ledger_snapshot(struct devres_ledger *ret_ledger);

/**
 * devres_ledger_diff() - compare two ledger snapshots
 * @before: the earlier snapshot
 * @after: the later snapshot
 * @f: where to print one line per kind that differs, or NULL for silence
 *
 * Context: any thread.
 * Return: the number of kinds that differ.
 */
DEVRES_API int devres_ledger_diff(const struct devres_ledger *before,
				  const struct devres_ledger *after, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_FAULT_H */
