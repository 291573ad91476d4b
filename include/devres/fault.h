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

struct device;
struct device_driver;

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
 * Reads back what devres_fail_nth() armed for the calling thread, counted down
 * by each fault-injectable call; a test checks it to know whether the fault it
 * armed was reached.
 *
 * Context: the calling thread only.
 * Return: 0 when disarmed or once the fault was injected, else how many
 * fault-injectable calls are still to go (the n-th fails).
 */
DEVRES_API unsigned int devres_fail_nth_get(void);

/**
 * devres_should_fail() - a fault point of code outside the library
 * @dev: the device the acquisition is for (may be NULL)
 * @what: the acquisition's name, as the sweep's report will give it
 *        ("devm_hwrng_register")
 *
 * Frameworks, board files and compat layers built on libdevres call this
 * where their own acquisition can fail, and fail it as the real failure
 * would when it returns true: then devres_fail_nth() and every sweep count
 * and inject it like the library's own points. The failure a sweep expects
 * the caller to see is -ENOMEM; a point that fails with another errno is
 * reported as a finding when the probe returns that errno, not as a
 * failure. Put a fault point only where the caller sees the failure: never
 * in a void function.
 *
 * Context: the calling thread's injection.
 * Return: true when this call is to fail.
 */
DEVRES_API bool devres_should_fail(struct device *dev, const char *what);

/**
 * devres_fault_absorbed() - the fault just injected has a fallback
 *
 * Called by a layer above the library that met a failure of one of its
 * fault points (devres_thread_spawn() failed) and gets over it by design:
 * the work that wanted a thread waits for one instead, and the operation
 * goes on and succeeds. A sweep then judges the run by its leaks and
 * WARNs only: its success is what the fallback is for, not a finding
 * ("an optional acquisition, or an error swallowed"). Call it only for a
 * fault that was injected (devres_fail_nth_get() went to 0 in the call
 * that failed): it marks the last injected fault of this thread.
 *
 * Context: the calling thread's injection.
 */
DEVRES_API void devres_fault_absorbed(void);

/**
 * devres_should_defer() - a lookup that can return -EPROBE_DEFER
 * @dev: the device looking up (may be NULL)
 * @what: the lookup's name ("platform_get_irq")
 *
 * Every lookup that can defer in the kernel (platform_get_irq(), a clock,
 * a regulator, a GPIO that is not there yet) calls this and returns
 * -EPROBE_DEFER when it returns true. devres_defer_nth() arms it; the
 * defer sweep of driver_probe_sweep() uses it to make each such lookup of
 * a probe defer once.
 *
 * Context: the calling thread's injection.
 * Return: true when this lookup is to defer.
 */
DEVRES_API bool devres_should_defer(struct device *dev, const char *what);

/**
 * devres_call_site_enter() - name the source line of the call that follows
 * @file: the caller's __FILE__ (its base name is kept; the string must
 *        outlive the sweep, as a literal does)
 * @line: the caller's __LINE__
 * @what: the call's name ("devm_kcalloc")
 *
 * Code built outside the library (the compat headers wrap each acquisition
 * a driver calls) names the line of a call around it, with
 * devres_call_site_leave() after it. A fault or deferral injected inside
 * the call records the line, and so does the first call named after it,
 * so that the sweep's report can say where an acquisition failed, where
 * the probe went on after it, and from which line dev_err_probe()
 * returned. Calls nest: only the outermost names its line. A bad @file or
 * @what (NULL, an ERR_PTR) WARNs; the call is counted all the same, so
 * that its leave stays paired, and names no line. An enter with 65536
 * entered and not left (a leak of enters) WARNs and is not counted: its
 * leave is then one too many, as the outermost leave says.
 *
 * Context: the calling thread; cheap, not free (two thread-local writes).
 */
DEVRES_API void devres_call_site_enter(const char *file, int line,
				       const char *what);

/**
 * devres_call_site_leave() - end the call devres_call_site_enter() named
 *
 * A leave without an enter WARNs and does nothing.
 *
 * Context: the thread that entered.
 */
DEVRES_API void devres_call_site_leave(void);

/**
 * devres_defer_nth() - make the n-th deferrable lookup of this thread defer
 * @n: 1 makes the next devres_should_defer() return true, 2 the one after,
 *     ...; 0 disarms
 *
 * devres_fail_nth() for deferrals: independent of it, and counted only by
 * devres_should_defer().
 *
 * Context: the calling thread only.
 */
DEVRES_API void devres_defer_nth(unsigned int n);

/**
 * devres_defer_nth_get() - the state of this thread's deferral injection
 *
 * Reads what devres_defer_nth() armed, as devres_fail_nth_get() does for
 * failures: a sweep reads it after a probe to learn whether the deferral
 * it asked for was injected.
 *
 * Context: the calling thread only.
 * Return: 0 when disarmed or once the deferral was injected, else how many
 * deferrable lookups are still to go.
 */
DEVRES_API unsigned int devres_defer_nth_get(void);

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
 * @devices: devices initialized and not yet released (added or not: one
 *           initialized and never put is a leak too)
 * @regions: busy I/O or memory regions requested in the resource tree
 * @dma_maps: streaming DMA mappings (dma_map_single() and friends) live
 * @revocables: revocable resources not yet released
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
	long regions;
	long dma_maps;
	long revocables;
};

/**
 * devres_ledger_snapshot() - read the ledger
 * @ret_ledger: filled in
 *
 * Each count is exact when no other thread is acquiring or releasing.
 *
 * Context: any thread, a signal handler too: it reads the counts without
 * a lock and allocates nothing.
 */
DEVRES_API void devres_ledger_snapshot(struct devres_ledger *ret_ledger);

/**
 * devres_ledger_diff() - compare two ledger snapshots
 * @before: the earlier snapshot
 * @after: the later snapshot
 * @f: where to print one line per kind that differs, or NULL for silence
 *
 * Compares two devres_ledger_snapshot() results kind by kind and, when @f is
 * not NULL, prints one line per kind whose count changed, with both values and
 * the difference; a test asserts 0 to prove that nothing leaked in between.
 *
 * Context: any thread.
 * Return: the number of kinds that differ.
 */
DEVRES_API int devres_ledger_diff(const struct devres_ledger *before,
				  const struct devres_ledger *after, FILE *f);

/**
 * struct devres_sweep_result - what a sweep found
 * @points: runs in which a fault was injected
 * @leaks: runs after which the ledger was not back at its baseline
 * @warns: runs during which (operation or undo) a WARN was printed
 * @findings: runs whose operation returned another errno than the injected
 *            failure's, or succeeded although a fault was injected
 * @defer_points: deferrable lookups made to defer, one run each (the defer
 *                sweep of driver_probe_sweep(); 0 for devres_sweep())
 * @defer_failures: defer runs that went wrong: the deferral was swallowed
 *                  or changed, something leaked, or the retried bind did
 *                  not hold what a plain bind holds
 */
struct devres_sweep_result {
	unsigned int points;
	unsigned int leaks;
	unsigned int warns;
	unsigned int findings;
	unsigned int defer_points;
	unsigned int defer_failures;
};

/**
 * devres_sweep_set_strict() - make the sweep's findings fail it
 * @strict: true to fail a sweep on a finding, false (the default) to
 *          report findings only
 *
 * A finding is a run in which the operation returned an errno other than
 * the one its injected failure looks like (a devm_kzalloc() failure turned
 * into -EINVAL), or succeeded although an acquisition failed (a tolerated
 * optional acquisition, or a swallowed error). DEVRES_SWEEP_STRICT=1 in
 * the environment sets it at start.
 *
 * Context: any thread; read at the start of each sweep.
 */
DEVRES_API void devres_sweep_set_strict(bool strict);

/*
 * A sweep gives up after this many failure points: an operation that never
 * completes without reaching its injected fault would run forever.
 */
#define DEVRES_SWEEP_MAX_POINTS 100000u

/**
 * devres_sweep() - run an operation with a fault injected at every point
 * @op: the operation; returns 0 (or a positive value) on success, a negative
 *      errno on failure, and must have released what it acquired when it
 *      fails
 * @undo: undoes a successful @op, or NULL when there is nothing to undo
 * @ctx: passed to @op and @undo
 * @ret_result: the counts found, filled in whenever the sweep ran
 *
 * Runs @op with the n-th fault-injectable call of the calling thread made
 * to fail, for n = 1, 2, 3, ... until a run in which the fault was not
 * reached (devres_fail_nth_get() is still non-zero after @op). Injection is
 * disarmed after each run; then, when @op succeeded, @undo runs; then the
 * ledger must be back to what it was before the run. A run after which it
 * is not is a leak: it is reported (the failure point, what @op returned,
 * and each kind of resource with its delta) and the ledger as it now is
 * becomes the baseline, so that one leak is counted once. A run that
 * succeeds although its fault was injected (an optional acquisition whose
 * failure @op tolerates) is undone and checked like any other.
 *
 * The report goes through the log sink (devres_set_log_sink()): one line
 * "sweep: N failure points, L leaks" at DEVRES_LOG_INFO when clean, and at
 * DEVRES_LOG_WARNING, preceded by the lines of each leak, otherwise.
 * Injection is left disarmed on return.
 *
 * An @op that fails in the run with no fault injected never succeeds, so
 * its failure points were never all reached: the sweep fails (-ECANCELED),
 * and the report names the error ("sweep: FAILED: op returned -ENODEV with
 * no fault injected"). A leak's line tells how to reproduce it: "reproduce
 * with devres_fail_nth(N) before the operation".
 *
 * Each run is also judged as a reviewer would. WARNs printed during @op
 * or @undo fail the sweep like a leak (@warns). A run whose @op returned
 * an errno other than the one its injected failure looks like (-ENOMEM
 * for managed memory and devres_should_fail()), or succeeded although its
 * fault was injected, is a finding (@findings): reported, with a line
 * "failure point N: <acquisition> fails, op returned <errno>" naming the
 * acquisition, and failing the sweep only in strict mode
 * (devres_sweep_set_strict()). The summary line adds the counts of WARN
 * runs, findings and defer runs when they are not zero.
 *
 * The ledger counts the whole process, so only one sweep runs at a time:
 * a sweep started from @op or @undo, or from another thread while one is
 * running, is refused.
 *
 * Context: the calling thread runs @op and @undo; other threads must not
 * acquire or release resources while it runs, or their changes count as
 * leaks.
 * Return: 0 when no run failed, else the number of failed runs: leaks,
 * runs with WARNs, and (strict) findings; -ECANCELED when the run with no
 * fault injected failed (whatever the leaks); -EINVAL when @op or @ret_result is NULL (a misuse, WARNed);
 * -EBUSY when another sweep is running; -ELOOP when @op still reached its
 * injected fault after DEVRES_SWEEP_MAX_POINTS points (@ret_result holds
 * the counts so far).
 */
DEVRES_API int devres_sweep(int (*op)(void *), void (*undo)(void *), void *ctx,
			    struct devres_sweep_result *ret_result);

/**
 * driver_probe_sweep() - sweep every failure point of a driver's probe
 * @drv: the driver; it need not be registered (it then binds to @dev only)
 *       and, without a bus, is swept as a driver of @dev's bus
 * @dev: a registered device (device_add()), not bound, of @drv's bus
 * @ret_result: the counts found, filled in whenever the sweep ran
 *
 * devres_sweep() where the operation binds @drv to @dev through the driver
 * core's own probe path, as device_driver_attach() does (binding marker,
 * the bus's probe or the driver's, release of everything the probe
 * acquired when it fails), and the undo is device_release_driver() (the
 * driver's remove, then the binding's resources). So a run checks both the
 * probe's error path and, when the probe succeeded, the remove path.
 *
 * A driver with no bus (a struct platform_driver that was never
 * registered, say) gets @dev's bus for the duration of the sweep, and NULL
 * again after, so that the bus's probe wraps it as it will once registered.
 *
 * The report is devres_sweep()'s, its lines starting with "probe sweep of
 * <driver> on <device>" instead of "sweep", and calling the operation
 * "probe": "probe sweep of <driver> on <device>: N failure points, L
 * leaks".
 *
 * Then, when the probe made deferrable lookups (devres_should_defer():
 * platform_get_irq() and the like), the defer sweep: each of them is made
 * to return -EPROBE_DEFER once, in turn. The probe must return
 * -EPROBE_DEFER with @dev parked and nothing held, and after
 * driver_deferred_probe_trigger() (or, for a driver that is not
 * registered, a bind by hand) @dev must bind holding what the plain bind
 * held. A probe that swallows the deferral (returns 0) or turns it into
 * another errno, a leak or a WARN in these runs, each is a defer failure
 * (@defer_failures), reported with the lookup's name, and fails the sweep.
 *
 * A probe that defers parks @dev, as it would outside a sweep; a successful
 * bind retries the parked devices, and what they acquire counts as a leak:
 * sweep with no device parked. @dev is unbound when this returns.
 *
 * A probe that fails with no fault injected (a broken driver, or one that
 * only defers) fails the sweep: -ECANCELED, and the report says what the
 * probe returned, by name: "probe sweep of <driver> on <device>: FAILED:
 * probe returned -EPROBE_DEFER with no fault injected". A leak's line tells
 * how to reproduce it alone: "reproduce with driver_probe_fail_nth(<driver>,
 * <device>, N)". With the log on (devres_set_log()), a line "---- run N:
 * call N of the probe fails ----" starts each run, so that the ADD and REL
 * lines of one run can be told from the next.
 *
 * Context: as devres_sweep(); not from a probe or remove of @dev, nor from
 * a match or for-each callback of @dev.
 * Return: as devres_sweep(), defer failures counted with the failed runs;
 * -ECANCELED when the run with no fault injected failed; -EINVAL (with a WARN) for a NULL or uninitialized argument or a
 * driver of another bus; -ENODEV when @dev is not registered; -EBUSY (with
 * a WARN) when @dev is bound, and (without) when another sweep is running;
 * -EDEADLK (with a WARN) from a callback of @dev.
 */
DEVRES_API int driver_probe_sweep(struct device_driver *drv, struct device *dev,
				  struct devres_sweep_result *ret_result);

/**
 * driver_probe_fail_nth() - bind with the n-th acquisition of the probe failing
 * @drv: the driver, as for driver_probe_sweep()
 * @dev: a registered, unbound device, as for driver_probe_sweep()
 * @n: the fault-injectable call to fail, counted from the bind: the failure
 *     point a driver_probe_sweep() report names; 0 injects nothing
 *
 * Reproduces one failure point of driver_probe_sweep() on its own, in any
 * program: the same bind through the driver core's probe path with the
 * @n-th fault-injectable call failing, then, when the bind succeeded, the
 * same unbind. Unlike DEVRES_FAIL_NTH, the count starts at the bind, not at
 * the program's start. Injection is disarmed on return. Run it under
 * DEVRES_LOG=1 to see what the probe acquired and what was released.
 *
 * Context: the calling thread; not from a probe or remove of @dev, nor from
 * a match or for-each callback of @dev.
 * Return: what the bind returned: 0 when it succeeded (the fault was not
 * reached, or the probe tolerated it), else the probe's error as the probe
 * returned it (-EPROBE_DEFER is not turned into -EAGAIN); -ENODEV when @dev
 * is not registered or @drv is being unregistered; -EINVAL, -EBUSY,
 * -EDEADLK (with a WARN) as driver_probe_sweep().
 */
DEVRES_API int driver_probe_fail_nth(struct device_driver *drv,
				     struct device *dev, unsigned int n);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_FAULT_H */
