/* SPDX-License-Identifier: MIT */
/*
 * Revocable resources: a resource owned by a device binding, reachable
 * through a reference-counted handle that anything may keep after the
 * binding is gone. Once the binding releases its resources the resource is
 * revoked: revocable_try_access() returns NULL instead of a pointer to
 * freed memory.
 *
 * The read side is a read-side critical section of a userspace RCU
 * (liburcu's "bulletproof" flavour when the library was built with it, a
 * per-handle reader count otherwise). Neither needs a thread to register,
 * and neither takes a lock. The rules (docs/revocable.md):
 *
 *  - an access is short and never waits for anything a revocation may be
 *    waiting for: no unbind, no device or driver (un)registration, no
 *    put_device() of a last reference, no lock a release path may hold,
 *    in another thread. A revocation by the thread itself from inside one
 *    of its accesses is legal: it is finished when the thread's outermost
 *    access ends;
 *  - accesses nest, and end in the thread that began them;
 *  - hold a handle reference across every access.
 */
#ifndef DEVRES_REVOCABLE_H
#define DEVRES_REVOCABLE_H

#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;
struct revocable;

/**
 * devm_revocable_create() - make @res revocable for as long as @dev is bound
 * @dev: the owning device
 * @res: the resource (not NULL)
 * @release: called once with @res after it is revoked; may be NULL
 *
 * Records a managed resource on @dev (a node named "devm_revocable_create")
 * and returns a handle holding @res. The binding (or, for a device not
 * bound, the device) holds one reference on the handle; whatever outlives
 * the binding (an open file, a queued callback) takes its own with
 * revocable_get(). When @dev's resources are released (unbind, probe
 * failure, devres_release_all()) the resource is revoked: from then on
 * revocable_try_access() returns NULL, the release waits until every
 * access in progress has ended, then calls @release(@res) exactly once,
 * and drops the binding's reference. The handle lives until its last
 * revocable_put(). A reader that waits inside its access, through a wait
 * of the library (a flush, a thread stop, synchronize_irq()...), for the
 * thread releasing @dev would never end that access: the release then
 * does not wait (one WARN) and the reader calls @release(@res) as its
 * outermost access ends.
 *
 * The returned pointer belongs to the binding: use it while bound, and
 * take a reference for any use that may outlive the binding.
 *
 * Context: any thread. Two fault-injection points (the node and the
 * handle); a live revocable counts in the ledger's @revocables until
 * @release has run.
 * Return: the handle, or NULL when memory is short, a fault is injected,
 * @dev is not an initialized device or @res is NULL (both WARNed), 2^20
 * revocables of the process are live (WARNed), or @dev refused the node
 * (released meanwhile by a last put on another thread: WARNed; @res stays
 * the caller's).
 */
DEVRES_API struct revocable *devm_revocable_create(struct device *dev,
						   void *res,
						   void (*release)(void *res));

/**
 * revocable_get() - take a reference on a handle
 * @h: the handle, or NULL
 *
 * Takes one more reference on @h; each is dropped with revocable_put(), and
 * the handle is freed with the last one. NULL is accepted and returned.
 *
 * Context: any thread, also inside an access and in release callbacks.
 * Return: @h; NULL for NULL, and for an ERR_PTR or first-page @h or a
 * handle that already has 2^24 references (WARNed: a leak of references,
 * refused rather than wrapped).
 */
DEVRES_API struct revocable *revocable_get(struct revocable *h);

/**
 * revocable_put() - drop a reference on a handle
 * @h: the handle, or NULL (nothing happens)
 *
 * Frees the handle when this was the last reference. Never waits: the
 * binding's reference is dropped only once the resource is released, so
 * a put never has to wait for a revocation (the 2025 Rust-for-Linux
 * Devres deadlock cannot happen here). Putting the reference the binding
 * still holds (one put too many) is a misuse: WARN, the handle is kept.
 *
 * Context: any thread, also inside a release callback; not on a handle
 * this thread is accessing, unless it holds another reference.
 */
DEVRES_API void revocable_put(struct revocable *h);

/**
 * revocable_try_access() - begin an access to the resource
 * @h: the handle; the caller holds a reference
 *
 * On success the resource cannot be released until the matching
 * revocable_access_end(). Accesses nest (on one handle or several) and
 * must end in the thread that began them. An access costs a few
 * nanoseconds and takes no lock; it must stay short and must not wait for
 * anything a revocation may wait for (see the top of this header).
 *
 * Context: any thread; no registration needed.
 * Return: the resource, or NULL once it is revoked (no access begins, do
 * not call revocable_access_end()); NULL for a NULL or invalid handle, and
 * past 64 accesses nested in this thread (both WARNed).
 */
DEVRES_API void *revocable_try_access(struct revocable *h);

/**
 * revocable_access_end() - end an access begun by revocable_try_access()
 * @h: the handle the access was made through
 *
 * Ends this thread's access through @h. When it was the thread's
 * outermost access and the thread revoked resources meanwhile, their
 * release completes here. Calling it without a matching successful
 * revocable_try_access() in this thread is a misuse: WARN, nothing else
 * happens.
 *
 * Context: the thread that began the access.
 */
DEVRES_API void revocable_access_end(struct revocable *h);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_REVOCABLE_H */
