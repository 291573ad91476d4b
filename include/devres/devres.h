/* SPDX-License-Identifier: MIT */
/*
 * The devres core: resources recorded against a device and released, newest
 * first, when the device lets go of them.
 *
 * Every function here is safe to call from any thread. Operations on one
 * device are atomic with respect to each other. Release callbacks run in the
 * calling thread without the device's lock held, so they may use devres on
 * the same device. Match and for-each callbacks run with the lock held and
 * must not call devres functions on the same device (such a call WARNs and
 * fails instead of deadlocking).
 */
#ifndef DEVRES_DEVRES_H
#define DEVRES_DEVRES_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;

/**
 * typedef dr_release_t - undoes one recorded acquisition
 * @dev: the device the resource was recorded against
 * @res: the resource's data area, as returned by devres_alloc()
 *
 * Called without the device's lock held. One that ends its thread
 * (pthread_exit(), or a cancellation point it meets with a cancellation
 * pending) counts as run: its node is freed and the resources released
 * after it in the same call are released as the thread unwinds, with a
 * WARN. longjmp() out of one is not supported.
 */
typedef void (*dr_release_t)(struct device *dev, void *res);

/**
 * typedef dr_match_t - selects a resource among those of one release function
 * @dev: the device being searched
 * @res: a candidate's data area
 * @match_data: the caller's cookie
 *
 * Called with @dev's devres lock held. One that ends its thread
 * (pthread_exit(), or a cancellation point it meets with a cancellation
 * pending) leaves the call there: the lock is released with a WARN, the
 * list unchanged. Leaving it with longjmp() is not supported: nothing
 * can see it, and the lock stays held.
 *
 * Return: non-zero when @res is the one wanted.
 */
typedef int (*dr_match_t)(struct device *dev, void *res, void *match_data);

/**
 * devres_alloc_named() - allocate a resource node (use devres_alloc())
 * @release: called when the resource is released; may be NULL
 * @size: bytes of data area
 * @gfp: allocation flags (the data area is zeroed in any case)
 * @name: the name logs and dumps show for @release
 *
 * Allocates a node that is not yet on any device. The data area is zeroed
 * and aligned for any object type (``max_align_t``). The first name given
 * for a release function is the one kept, as a copy: @name may be freed
 * once this returns.
 *
 * Context: any thread. A fault-injection point.
 * Return: the data area, or NULL when memory is short, when @size is
 * 4 GiB or more, or when a fault is injected.
 */
DEVRES_API void *devres_alloc_named(dr_release_t release, size_t size,
				    gfp_t gfp, const char *name);

/* The kernel's spelling: the release function's name is recorded. */
#define devres_alloc(release, size, gfp)                                       \
	devres_alloc_named(release, size, gfp, #release)
#define devres_alloc_node(release, size, gfp, nid)                             \
	devres_alloc_named(release, size, gfp, #release)

/**
 * devres_free() - free a node that is on no device
 * @res: data area from devres_alloc(), or NULL
 *
 * Frees a node that was never added, or that was taken off its device by
 * devres_remove(). Freeing a node that is still on a device is a misuse:
 * it WARNs and the node stays where it is.
 *
 * Context: any thread.
 */
DEVRES_API void devres_free(void *res);

/**
 * devres_add() - record a resource against a device
 * @dev: the owning device
 * @res: data area from devres_alloc()
 *
 * Appends @res to @dev's list: it is released after everything added later
 * and before everything added earlier. Adding a node that is already on a
 * device is a misuse: it WARNs and nothing changes.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devres_add(struct device *dev, void *res);

/**
 * devres_may_add() - whether devres_add() to a device would be taken now
 * @dev: the device a node is for
 * @func: the caller's call, named in the WARN
 *
 * For a managed call of a layer above the library (the kernel-compat
 * headers' devm_hwrng_register(), devm_clk_get()...) that acquires or
 * registers something before it records the node that gives it back: it
 * asks first, and where devres_add() would refuse the node it acquires
 * nothing. Inside a match or for-each callback of @dev, this thread
 * holds @dev's devres lock up the stack, and the kernel's call would
 * wait for it for ever; devres_add() there WARNs and adds nothing, and
 * the caller, which gets no error from it, kept its resource on no
 * device, never given back. A release callback or a devm action of @dev
 * is no such place: there the node is added, and released later.
 *
 * Context: any thread. errno is kept.
 * Return: 0 when a node may be added; -EDEADLK from a match or for-each
 * callback of @dev (one WARN naming @func); -EINVAL for a NULL or
 * uninitialized @dev, a device of the parent process in a child of
 * fork(), or a bad @func (one WARN each).
 */
DEVRES_API int devres_may_add(struct device *dev, const char *func);

/**
 * devres_find() - find the newest matching resource
 * @dev: the device to search
 * @release: the release function the resource was allocated with
 * @match: optional filter, called with the lock held
 * @match_data: passed to @match
 *
 * Looks for a resource without taking it off the device: the node stays on
 * @dev, owned by it, and is released with the others. The pointer returned is
 * valid only while the caller knows the node cannot be released meanwhile.
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: the data area of the newest node with @release for which @match
 * (when not NULL) returns non-zero, or NULL when there is none.
 */
DEVRES_API void *devres_find(struct device *dev, dr_release_t release,
			     dr_match_t match, void *match_data);

/**
 * devres_get() - find a resource, or add a new one, atomically
 * @dev: the device
 * @new_res: a node from devres_alloc(); its release function is the key
 * @match: optional filter, called with the lock held
 * @match_data: passed to @match
 *
 * Looks for a node as devres_find() does. When one exists, @new_res is
 * freed (its release function is not called) and the existing data area
 * returned; otherwise @new_res is added and returned. @new_res is the
 * call's while @match runs: given from there to devres_free(),
 * devres_add() or devres_get(), it is refused with a WARN.
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: the data area now recorded, or NULL on a misuse (WARNed).
 */
DEVRES_API void *devres_get(struct device *dev, void *new_res, dr_match_t match,
			    void *match_data);

/**
 * devres_remove() - take a resource off its device, keeping it
 * @dev: the device
 * @release: release function of the node wanted
 * @match: optional filter
 * @match_data: passed to @match
 *
 * Unlinks the newest matching node without releasing or freeing it; the
 * caller owns it and frees it with devres_free().
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: the data area, or NULL when nothing matched (no WARN).
 */
DEVRES_API void *devres_remove(struct device *dev, dr_release_t release,
			       dr_match_t match, void *match_data);

/**
 * devres_destroy() - take a resource off its device and free it, unreleased
 * @dev: the device
 * @release: release function of the node wanted
 * @match: optional filter
 * @match_data: passed to @match
 *
 * Finds the newest node of @dev with @release for which @match (when not NULL)
 * returns non-zero, takes it off the device and frees it without calling
 * @release: for a resource the caller has already undone by hand.
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: 0, or -ENOENT when nothing matched (no WARN).
 */
DEVRES_API int devres_destroy(struct device *dev, dr_release_t release,
			      dr_match_t match, void *match_data);

/**
 * devres_release() - take a resource off its device, release and free it
 * @dev: the device
 * @release: release function of the node wanted
 * @match: optional filter
 * @match_data: passed to @match
 *
 * Finds the newest node of @dev with @release for which @match (when not NULL)
 * returns non-zero, takes it off the device, calls @release on it and frees
 * it: the resource is undone now rather than at unbind.
 *
 * Context: any thread; @release runs in the calling thread, unlocked.
 * Return: 0, or -ENOENT when nothing matched (no WARN).
 */
DEVRES_API int devres_release(struct device *dev, dr_release_t release,
			      dr_match_t match, void *match_data);

/**
 * devres_for_each_res() - call @fn for each matching resource
 * @dev: the device
 * @release: release function of the nodes wanted
 * @match: optional filter
 * @match_data: passed to @match
 * @fn: called for each match, newest first, with the lock held
 * @data: passed to @fn
 *
 * Walks @dev's resources from newest to oldest and calls @fn for each node
 * with @release that @match (when not NULL) accepts. Nothing is taken off the
 * device; the lock is held for the whole walk. An @fn that ends its
 * thread ends the walk as a @match that does (&typedef dr_match_t).
 *
 * Context: any thread; @match and @fn must not call devres on @dev.
 */
DEVRES_API void devres_for_each_res(struct device *dev, dr_release_t release,
				    dr_match_t match, void *match_data,
				    void (*fn)(struct device *dev, void *res,
					       void *data),
				    void *data);

/**
 * devres_release_all() - release every resource of a device
 * @dev: the device
 *
 * Takes every node off @dev at once and releases them newest first; group
 * markers are freed. A node added while this runs (by a release callback or
 * another thread) stays for the next pass. Used by the driver core; a
 * device never initialized is a misuse (WARN).
 *
 * Context: any thread; callbacks run in the calling thread, unlocked.
 * Return: the number of resources released (group markers not counted),
 * -ENODEV for a NULL or uninitialized device (WARNed), or -EDEADLK when
 * called from a match or for-each callback on @dev (WARNed).
 */
DEVRES_API int devres_release_all(struct device *dev);

/**
 * devres_open_group() - open a group of resources
 * @dev: the device
 * @id: the group's id, or NULL to make a unique one
 * @gfp: allocation flags
 *
 * Marks the current point in @dev's list. Resources added from now on
 * belong to the group until devres_close_group().
 *
 * Context: any thread. A fault-injection point.
 * Return: the group's id (@id, or the new unique one), or NULL when
 * memory is short or a fault is injected.
 */
DEVRES_API void *devres_open_group(struct device *dev, void *id, gfp_t gfp);

/**
 * devres_close_group() - close a group
 * @dev: the device
 * @id: the group, or NULL for the latest open group
 *
 * An unknown id, or a group already closed, is a misuse: WARN, no effect.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devres_close_group(struct device *dev, void *id);

/**
 * devres_remove_group() - drop a group's markers, keep its resources
 * @dev: the device
 * @id: the group, or NULL for the latest open group
 *
 * The resources stay on @dev, released with whatever encloses them. An
 * unknown id is a misuse: WARN, no effect.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devres_remove_group(struct device *dev, void *id);

/**
 * devres_release_group() - release the resources of a group
 * @dev: the device
 * @id: the group, or NULL for the latest open group
 *
 * Releases, newest first, every resource added between the group's opening
 * and its closing (or now, for an open group), and removes the group and
 * every group wholly inside that range. A group only partly inside keeps
 * its markers. An unknown id is a misuse (WARN), except while @dev's list
 * is empty (nothing but a binding's marker, which no driver can name), as
 * during devres_release_all(), or holds only what was acquired before the
 * bind while a release callback of an unbind or a failed probe runs (the
 * kernel's list is empty there): then it is silently ignored.
 *
 * Context: any thread; callbacks run in the calling thread, unlocked.
 * Return: the number of resources released; 0 for an unknown id.
 */
DEVRES_API int devres_release_group(struct device *dev, void *id);

/**
 * devm_add_action_named() - record an action (use devm_add_action())
 * @dev: the device
 * @action: called with @data when the device releases its resources
 * @data: the action's argument
 * @name: the name logs show
 *
 * What the devm_add_action() macro calls, with the action's name as text.
 * Records @action(@data) on @dev, to be called when @dev's resources are
 * released, newest first among the others. On failure nothing is recorded and
 * @action is not called (devm_add_action_or_reset() calls it).
 *
 * Context: any thread. A fault-injection point.
 * Return: 0, -ENOMEM, or -EINVAL for a NULL @dev or @action (WARNed).
 */
DEVRES_API int devm_add_action_named(struct device *dev, void (*action)(void *),
				     void *data, const char *name);
#define devm_add_action(dev, action, data)                                     \
	devm_add_action_named(dev, action, data, #action)

/**
 * devm_add_action_or_reset_named() - record an action, or run it now
 * @dev: the device
 * @action: the action
 * @data: its argument
 * @name: the name logs show
 *
 * As devm_add_action(), but when recording fails @action(@data) runs
 * before this returns, so the caller has nothing to undo.
 *
 * Context: any thread. A fault-injection point.
 * Return: 0, or the error of devm_add_action().
 */
DEVRES_API int devm_add_action_or_reset_named(struct device *dev,
					      void (*action)(void *),
					      void *data, const char *name);
#define devm_add_action_or_reset(dev, action, data)                            \
	devm_add_action_or_reset_named(dev, action, data, #action)

/**
 * devm_remove_action() - unrecord an action without running it
 * @dev: the device
 * @action: the action
 * @data: its argument
 *
 * Removes the newest record of (@action, @data). WARNs when there is none,
 * and for a NULL @action (which names no action: never a resource whose
 * release is NULL).
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devm_remove_action(struct device *dev, void (*action)(void *),
				   void *data);

/**
 * devm_release_action() - run an action now and unrecord it
 * @dev: the device
 * @action: the action
 * @data: its argument
 *
 * WARNs when (@action, @data) is not recorded on @dev, or @action is NULL.
 * errno is preserved, whatever @action does to it.
 *
 * Context: any thread; @action runs in the calling thread, unlocked.
 */
DEVRES_API void devm_release_action(struct device *dev, void (*action)(void *),
				    void *data);

/**
 * devm_is_action_added() - is (@action, @data) recorded on @dev?
 * @dev: the device
 * @action: the action
 * @data: its argument
 *
 * Whether @dev holds an action recorded with devm_add_action() for this
 * @action and @data, not yet released or removed.
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: true when recorded; false, with a WARN, for a NULL @action.
 */
DEVRES_API bool devm_is_action_added(struct device *dev, void (*action)(void *),
				     void *data);

/**
 * devm_kmalloc() - allocate memory freed when the device lets go
 * @dev: the device
 * @size: bytes; 0 returns ZERO_SIZE_PTR and records nothing
 * @gfp: allocation flags; __GFP_ZERO zeroes the memory
 *
 * Allocates @size bytes recorded against @dev, freed when the device's
 * resources are released (a failed probe, an unbind) or earlier with
 * devm_kfree(). __GFP_ZERO in @gfp zeroes the memory; the other flags are
 * accepted for the kernel's sake and ignored.
 *
 * Context: any thread. A fault-injection point.
 * Return: memory aligned for any type, ZERO_SIZE_PTR for @size 0, or NULL
 * when memory is short, @size is 4 GiB or more, or a fault is injected.
 */
DEVRES_API void *devm_kmalloc(struct device *dev, size_t size, gfp_t gfp);

/**
 * devm_kzalloc() - devm_kmalloc() of zeroed memory
 * @dev: the device
 * @size: bytes
 * @gfp: allocation flags
 *
 * devm_kmalloc() with __GFP_ZERO: the memory is zeroed, recorded against @dev
 * and freed with its resources.
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_kmalloc().
 */
DEVRES_API void *devm_kzalloc(struct device *dev, size_t size, gfp_t gfp);

/**
 * devm_kmalloc_array() - devm_kmalloc() of @n elements of @size bytes
 * @dev: the device
 * @n: number of elements
 * @size: bytes per element
 * @gfp: allocation flags
 *
 * Allocates an array of @n elements of @size bytes against @dev, checking the
 * product for overflow first, as kmalloc_array() does.
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_kmalloc(); NULL when @n * @size overflows.
 */
DEVRES_API void *devm_kmalloc_array(struct device *dev, size_t n, size_t size,
				    gfp_t gfp);

/**
 * devm_kcalloc() - zeroed devm_kmalloc_array()
 * @dev: the device
 * @n: number of elements
 * @size: bytes per element
 * @gfp: allocation flags
 *
 * devm_kmalloc_array() with __GFP_ZERO: a zeroed array of @n elements of @size
 * bytes, freed with @dev's resources.
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_kmalloc_array().
 */
DEVRES_API void *devm_kcalloc(struct device *dev, size_t n, size_t size,
			      gfp_t gfp);

/**
 * devm_krealloc() - resize managed memory, keeping its place
 * @dev: the device
 * @ptr: memory from devm_kmalloc() on @dev, NULL or ZERO_SIZE_PTR
 * @new_size: bytes wanted; 0 frees @ptr and returns ZERO_SIZE_PTR
 * @gfp: allocation flags; __GFP_ZERO zeroes any bytes beyond the old size
 *
 * The memory keeps its position in @dev's release order. On failure @ptr
 * is untouched and still managed. A @ptr this device does not manage is a
 * misuse: WARN, NULL.
 *
 * Context: any thread. A fault-injection point when it must grow.
 * Return: the memory, possibly moved; NULL on failure.
 */
DEVRES_API void *devm_krealloc(struct device *dev, void *ptr, size_t new_size,
			       gfp_t gfp);

/**
 * devm_kfree() - free managed memory now
 * @dev: the device
 * @p: memory from the devm_kmalloc() family on @dev
 *
 * NULL and ZERO_SIZE_PTR are ignored. A pointer that is not a live managed
 * allocation of @dev (foreign, or already freed) is a misuse: WARN, nothing
 * is freed.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devm_kfree(struct device *dev, const void *p);

/**
 * devm_is_kmalloc() - whether memory is a managed allocation of a device
 * @dev: the device
 * @p: the memory asked about
 *
 * Whether @p is a live allocation of the devm_kmalloc() family on @dev,
 * which devm_kfree() would free. Nothing is read at @p: a foreign or freed
 * pointer is simply not found. For a plain allocator built on a hidden
 * device (the compat layer's kmalloc()), whose free can then say which
 * free a block it did not make wants, rather than devm_kfree()'s WARN.
 *
 * Context: any thread; takes @dev's devres lock.
 * Return: true when @dev holds @p; false for NULL and ZERO_SIZE_PTR, for
 * memory @dev does not hold, and, with a WARN, for a bad @dev or an
 * ERR_PTR() @p.
 */
DEVRES_API bool devm_is_kmalloc(struct device *dev, const void *p);

/**
 * devm_kstrdup() - managed copy of a string
 * @dev: the device
 * @s: the string, or NULL
 * @gfp: allocation flags
 *
 * Copies @s, terminating NUL included, into memory recorded against @dev and
 * freed with its resources (or with devm_kfree()).
 *
 * Context: any thread. A fault-injection point.
 * Return: the copy, or NULL when @s is NULL or allocation fails.
 */
DEVRES_API char *devm_kstrdup(struct device *dev, const char *s, gfp_t gfp);

/**
 * devm_kstrdup_const() - managed copy of a possibly constant string
 * @dev: the device
 * @s: the string, or NULL
 * @gfp: allocation flags
 *
 * The kernel returns @s itself when it lies in read-only data; userspace
 * cannot tell reliably, so this always copies. Free with devm_kfree().
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_kstrdup().
 */
DEVRES_API const char *devm_kstrdup_const(struct device *dev, const char *s,
					  gfp_t gfp);

/**
 * devm_kmemdup() - managed copy of a memory area
 * @dev: the device
 * @src: the area
 * @len: its length in bytes
 * @gfp: allocation flags
 *
 * Copies @len bytes from @src into memory recorded against @dev and freed with
 * its resources (or with devm_kfree()).
 *
 * Context: any thread. A fault-injection point.
 * Return: the copy (ZERO_SIZE_PTR for @len 0), or NULL on failure.
 */
DEVRES_API void *devm_kmemdup(struct device *dev, const void *src, size_t len,
			      gfp_t gfp);

/**
 * devm_kvasprintf() - managed formatted string
 * @dev: the device
 * @gfp: allocation flags
 * @fmt: printf-style format
 * @ap: its arguments
 *
 * Formats @fmt with @ap into memory recorded against @dev, sized to fit, freed
 * with its resources (or with devm_kfree()).
 *
 * Context: any thread. A fault-injection point.
 * Return: the string, or NULL on failure; NULL, with a WARN and nothing
 * written through its argument, for a %n in @fmt.
 */
DEVRES_API char *devm_kvasprintf(struct device *dev, gfp_t gfp, const char *fmt,
				 va_list ap) DEVRES_PRINTF(3, 0);

/**
 * devm_kasprintf() - managed formatted string
 * @dev: the device
 * @gfp: allocation flags
 * @fmt: printf-style format, then its arguments
 *
 * Formats @fmt and its arguments into memory recorded against @dev, sized to
 * fit, freed with its resources (or with devm_kfree()).
 *
 * Context: any thread. A fault-injection point.
 * Return: the string, or NULL on failure; NULL, with a WARN and nothing
 * written through its argument, for a %n in @fmt.
 */
DEVRES_API char *devm_kasprintf(struct device *dev, gfp_t gfp, const char *fmt,
				...) DEVRES_PRINTF(3, 4);

/**
 * devm_get_free_pages() - managed page-aligned memory
 * @dev: the device
 * @gfp: allocation flags; __GFP_ZERO zeroes the pages
 * @order: the allocation is (page size << @order) bytes; at most 20
 *
 * Allocates (page size << @order) bytes aligned to the page size, recorded
 * against @dev and freed with its resources or with devm_free_pages().
 *
 * Context: any thread. A fault-injection point.
 * Return: the address of the first page, or 0 on failure (also, WARNed,
 * when @dev was released meanwhile by a last put_device() on another
 * thread: the pages given back).
 */
DEVRES_API unsigned long devm_get_free_pages(struct device *dev, gfp_t gfp,
					     unsigned int order);

/**
 * devm_free_pages() - free managed pages now
 * @dev: the device
 * @addr: an address from devm_get_free_pages() on @dev
 *
 * An address @dev does not manage is a misuse: WARN, nothing freed.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devm_free_pages(struct device *dev, unsigned long addr);

/* Debugging: logs, dumps, stats and the WARN counter. */

/* Levels of log lines, as syslog numbers them. */
#define DEVRES_LOG_ERR 3
#define DEVRES_LOG_WARNING 4
#define DEVRES_LOG_INFO 6
#define DEVRES_LOG_DEBUG 7

/**
 * typedef devres_log_sink_t - where library log lines go
 * @ctx: the cookie given to devres_set_log_sink()
 * @level: one of the DEVRES_LOG_* levels
 * @line: the line, without a trailing newline
 *
 * A message with a newline inside it (``dev_err(dev, "a\nb")``) is one
 * line, given whole with its newline, in one call: the kernel's printk
 * keeps it one record too. On stderr it shows as two lines, the second
 * without the first's prefix; the kernel's console splits it as well.
 */
typedef void (*devres_log_sink_t)(void *ctx, int level, const char *line);

/**
 * devres_set_log() - switch logging of ADD/REM/REL/REPLACE on or off
 * @on: the new state
 *
 * Logging starts on when the environment has DEVRES_LOG=1.
 *
 * Context: any thread.
 */
DEVRES_API void devres_set_log(bool on);

/**
 * devres_set_log_sink() - send log and WARN lines somewhere else
 * @sink: the new sink, or NULL for the default (stderr)
 * @ctx: passed to @sink
 *
 * The sink may call the library, even on the device a line is about (dump
 * it on every WARN, say): a line the library makes while the sink runs in
 * the same thread is not sent to it again (that would recurse without
 * end), and a WARN made then is not counted. The sink may change errno:
 * the library gives the caller's back. When this returns, the previous
 * sink is running in no other thread and will not be called again, so its
 * @ctx may be freed; a sink that replaces itself is not waited for.
 * A sink should return. A call of it that does not (the sink ended its
 * thread: pthread_exit(), a cancellation; or left by longjmp()) counts one
 * WARN, not sent, and is over when its thread ends, or when the thread
 * makes its next line from no deeper on the stack than the call was; a
 * devres_set_log_sink() that replaces the sink waits 2 s at most for such
 * a call, then WARNs (naming the thread) and waits no longer: a sink
 * still running then may still use its @ctx.
 *
 * Context: any thread, also from a sink; the sink may be called from any
 * thread.
 */
DEVRES_API void devres_set_log_sink(devres_log_sink_t sink, void *ctx);

/**
 * devres_dump() - print a device's resources
 * @dev: the device
 * @f: where to print
 *
 * Prints a line naming @dev, then, while @dev's probe deferred and it is
 * parked, the reason dev_err_probe() was given (``  deferred probe pending:
 * <driver>: <message>``), then a line per node, oldest first, with group
 * markers, release names and sizes.
 *
 * Context: any thread; takes @dev's devres lock briefly.
 */
DEVRES_API void devres_dump(struct device *dev, FILE *f);

/* What devres_get_stats() reports (U-Boot's names). */
struct devres_stats {
	int allocs;	/* resources on the device, group markers not counted */
	int total_size; /* bytes of their data areas */
};

/**
 * devres_check() - check that a device's list of resources is sound
 * @dev: the device
 *
 * Walks @dev's list and checks what must always hold of it: it ends (no
 * cycle), every node on it is marked as added and is of a known kind,
 * group markers are paired (a closed group's close marker is newer than
 * its open marker, an open group has none), the driver core's binding
 * marker is listed at most once, and devres_get_stats() counts what is
 * listed. Only a bug (or a write through a stale pointer) breaks these;
 * the tests call it at the teardown of every device. Debug builds of the
 * library also check by themselves at every devres_release_all(), and
 * abort there with a "BUG:" line on stderr.
 *
 * Context: any thread; takes @dev's devres lock. Not from a match or
 * for-each callback on @dev (WARN, -EDEADLK).
 * Return: 0 when the list is sound; -EUCLEAN, with a WARN saying what is
 * broken, when it is not; -EINVAL for a NULL or uninitialized @dev;
 * -EDEADLK from a callback on @dev. errno is preserved.
 */
DEVRES_API int devres_check(struct device *dev);

/**
 * devres_get_stats() - count a device's resources
 * @dev: the device
 * @stats: filled in
 *
 * Fills @stats with the number of resources @dev holds and the bytes of their
 * data areas, group markers not counted; a NULL @stats is a misuse (WARN), and
 * a bad @dev leaves @stats zeroed.
 *
 * Context: any thread; takes @dev's devres lock.
 */
DEVRES_API void devres_get_stats(struct device *dev,
				 struct devres_stats *stats);

/**
 * devres_warn_count() - how many misuses were WARNed in this process
 *
 * Each misuse the library detects prints one WARN line and counts it here; a
 * test can compare the count before and after to assert that a call was (or
 * was not) reported.
 *
 * Context: any thread.
 * Return: the count.
 */
DEVRES_API int devres_warn_count(void);

/**
 * devres_warn() - report a misuse that code built on the library caught
 * @dev: the device it concerns, or NULL
 * @func: the call that was misused
 * @fmt: printf-style format of the reason, then its arguments
 *
 * One WARN, as the library's own misuses have: the line
 * ``"WARNING: <dev>: <func>: <reason>"`` to the log sink, a backtrace in
 * debug builds, and one more in devres_warn_count(). For layers above the
 * library (the kernel-compat headers) that check their own contract. The
 * reason is cut at 255 characters, and then ends with "...".
 *
 * Context: any thread; a bad @func or @fmt is itself WARNed, and nothing
 * else is said. A %n in @fmt writes nothing: the one WARN says so instead
 * of the reason. errno is kept.
 */
DEVRES_API void devres_warn(const struct device *dev, const char *func,
			    const char *fmt, ...) DEVRES_PRINTF(3, 4);

/**
 * devres_format_bad() - refuse a caller's printf format that stores
 * @dev: the device it concerns, or NULL
 * @func: the call given @fmt
 * @fmt: the format
 *
 * For layers above the library that format a caller's @fmt themselves (the
 * kernel-compat headers' sysfs_emit(), printk(), alloc_workqueue()): a %n
 * conversion (any length modifier, positional or not) stores through a
 * pointer argument, and the kernel's printf refuses it. With one, this
 * WARNs once, naming @func and where in @fmt the %n is, and the caller
 * formats nothing.
 *
 * Context: any thread. errno is kept.
 * Return: true when @fmt has a %n, or @func or @fmt is a bad pointer
 * (NULL, the first page, an ERR_PTR()), WARNed: format nothing; else false.
 */
DEVRES_API bool devres_format_bad(const struct device *dev, const char *func,
				  const char *fmt);

/**
 * typedef devres_atomic_hook_t - told of each call into atomic context
 * @delta: 1 before the library calls the code, -1 after it returned
 */
typedef void (*devres_atomic_hook_t)(int delta);

/**
 * devres_atomic_hook_set() - be told when the library calls code that must not sleep
 * @hook: the function told, or NULL for none
 *
 * The library calls @hook with 1 in a thread just before it calls code
 * there that runs in what the kernel calls atomic context (a primary
 * interrupt handler, request_irq()'s @handler: the kernel's hard-irq
 * context), and with -1 in the same thread once that code returned. A
 * threaded handler's @thread_fn is not in atomic context. For a layer
 * above the library that checks the calls made there (the kernel-compat
 * headers' might_sleep()): it counts the context per thread, and no check
 * costs the library anything. The hook in place when the code is called
 * is the one told of its return, so that a handler that sets another
 * leaves no count unbalanced. A thread that code ends (pthread_exit())
 * is not told of a return.
 *
 * Context: any thread; the last call wins. A bad pointer for @hook
 * (the first page, an ERR_PTR()) is WARNed and changes nothing.
 * Return: the hook set before, or NULL (none, or a bad @hook).
 */
DEVRES_API devres_atomic_hook_t
devres_atomic_hook_set(devres_atomic_hook_t hook);

/**
 * devres_wait_id() - a wait id for a thread about to be started
 *
 * The library's record of waits names threads by wait ids, never reused
 * in a process (a pthread_t is: glibc gives an ended thread's to a new
 * one). A layer above that starts a thread takes a fresh id here, stores
 * it where its waiters find it, and the thread takes it first thing
 * (devres_wait_adopt()): a waiter knows the thread's id before it runs.
 * A thread that adopts none is given one at its first recorded wait.
 *
 * Context: any thread.
 * Return: a wait id, never 0, never returned before in this process.
 */
DEVRES_API uint64_t devres_wait_id(void);

/**
 * devres_wait_self() - the calling thread's wait id
 *
 * The id the library's record of waits names the calling thread by
 * (devres_wait_id()), for a layer above that stores it where a waiter
 * finds it (the thread serving a work item it runs inline).
 *
 * Context: any thread.
 * Return: its wait id (devres_wait_id()): the one it adopted, or one
 * given now when it has none; never 0.
 */
DEVRES_API uint64_t devres_wait_self(void);

/**
 * devres_wait_adopt() - the calling thread takes a wait id
 * @id: from devres_wait_id(), for this thread alone (0: nothing done)
 *
 * From now on the record of waits names the calling thread by @id: the
 * waits others recorded for @id before this thread ran are waits for it.
 *
 * Context: the thread just started, before it waits for anything or runs
 * anything another thread may wait for.
 */
DEVRES_API void devres_wait_adopt(uint64_t id);

/**
 * devres_wait_begin() - record that this thread is about to wait for another
 * @thread: the wait id of the thread it waits for (devres_wait_id()): the
 *	one running the callback waited for; 0 records nothing
 * @what: the call that waits (``"flush_work"``), for the loop's description
 *
 * For a layer above the library whose calls wait for another thread to
 * finish something (the kernel-compat headers' flush_work() and
 * cancel_work_sync() wait for the thread serving a work item).
 * The library keeps one record of which thread waits for which, its own
 * waits among them (devm_thread_stop(), free_irq(), synchronize_irq(), ...):
 * the wait is recorded unless @thread is the caller or waits, through the
 * waits recorded, for the caller, in which case the wait would never end
 * and is to be refused. The check and the record are one hold of one lock,
 * so of two threads about to wait for each other exactly one is refused.
 * Each 0 is ended by one devres_wait_end() before the caller's frame
 * ends; the wait between is no cancellation point.
 *
 * Context: any thread, with no lock of the library held; up to 4 nested
 * waits of a thread are recorded, the others go on unrecorded (0), with
 * one WARN at the limit; past 65536 begun without an end (a leak of
 * begins), one WARN each, and the wait goes on uncounted (0): its end is
 * one too many.
 * Return: 0 (recorded), or -EDEADLK: nothing recorded, the loop described
 * by devres_wait_loop(); -EINVAL, with a WARN and nothing recorded, for a
 * bad @what (NULL, the first page, an ERR_PTR()).
 */
DEVRES_API int devres_wait_begin(uint64_t thread, const char *what);

/**
 * devres_wait_begin_set() - record a wait for every member of a set
 * @set: the set's key (an object's address or handle; 0 records nothing)
 * @what: the call that waits (``"flush_workqueue"``)
 *
 * As devres_wait_begin(), for a wait until every thread of a set is done
 * (every item of a queue has run): the wait closes a loop if any member
 * waits, through the waits recorded, for the caller, or if the caller is
 * a member. Threads are members while they hold a membership
 * (devres_wait_join()); one that joins after the wait began is seen by
 * its own waits: its wait for this caller is refused. Ended by
 * devres_wait_end(), as a devres_wait_begin().
 *
 * Context: as devres_wait_begin().
 * Return: as devres_wait_begin().
 */
DEVRES_API int devres_wait_begin_set(uintptr_t set, const char *what);

/**
 * devres_wait_join() - the calling thread is a member of a set
 * @set: the set's key (devres_wait_begin_set()); 0 records nothing
 *
 * Until the matching devres_wait_leave(), a wait for @set waits for this
 * thread too. A thread that ends without leaving is taken out of its
 * sets as it ends.
 *
 * Context: any thread; up to 4 nested memberships of a thread are
 * recorded, the others not, with one WARN at the limit.
 */
DEVRES_API void devres_wait_join(uintptr_t set);

/**
 * devres_wait_leave() - the newest membership of this thread ends
 *
 * Takes the calling thread's newest membership (devres_wait_join()) off
 * the record: waits for that set no longer wait for this thread.
 *
 * Context: the thread that joined; nothing when it holds none.
 */
DEVRES_API void devres_wait_leave(void);

/**
 * devres_wait_end() - the wait devres_wait_begin() recorded last is over
 *
 * Takes the calling thread's newest wait recorded by devres_wait_begin()
 * off the library's record of waits (or counts down one begun beyond the
 * nesting recorded), once the thread waited for has finished.
 *
 * An end with no wait begun WARNs and does nothing.
 *
 * Context: the thread that began it.
 */
DEVRES_API void devres_wait_end(void);

/**
 * devres_wait_loop() - the loop this thread's last refused wait would close
 *
 * Describes, for a WARN, the loop that made devres_wait_begin() return
 * -EDEADLK in this thread: the call this thread was about to wait in,
 * then the calls the other threads of the loop wait in, back to this one.
 *
 * Context: the thread that was refused.
 * Return: a string in the thread's storage, such as
 * ``"flush_work -> free_irq -> this thread"``, the calls each thread in
 * the loop waits in; empty before any refusal.
 */
DEVRES_API const char *devres_wait_loop(void);

/**
 * devres_warn_managed() - report a managed resource given back by hand
 * @dev: the device whose node held the resource, or NULL
 * @func: the plain call that gave it back (``"device_remove_groups"``)
 * @what: the resource, with its article (``"attribute groups"``)
 * @call: the managed call that acquired it, without parentheses
 * @fix: what to use instead (``"devm_free_irq()"``, or ``"nothing, ..."``)
 *
 * The WARN the library makes when a resource acquired with a managed call
 * is released with the plain one (docs/misuse.md), for a layer above the
 * library that catches the same: ``"WARNING: <dev>: <func>: <what>
 * acquired with <call>(): use <fix>; released now, and taken off the
 * device"``, counted by devres_warn_count(). The caller takes the node off
 * the device itself.
 *
 * Context: any thread; a bad string argument is itself WARNed, and nothing
 * else is said.
 */
DEVRES_API void devres_warn_managed(const struct device *dev, const char *func,
				    const char *what, const char *call,
				    const char *fix);

/**
 * devres_version() - the version of the library that runs
 *
 * The library's own version, "MAJOR.MINOR.PATCH", which may be newer than
 * the headers a program was compiled with (DEVRES_VERSION_MAJOR,
 * DEVRES_VERSION_MINOR and DEVRES_VERSION_PATCH in <devres/version.h>
 * give those). A program that needs a function added in a later release
 * can check here before it relies on one.
 *
 * Context: any thread.
 * Return: a static string, such as "0.1.0"; never NULL.
 */
DEVRES_API const char *devres_version(void);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_DEVRES_H */
