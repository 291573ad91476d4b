/* SPDX-License-Identifier: MIT */
/*
 * Live objects in managed memory: objects the library (or a layer above
 * it) runs callbacks on from another thread, such as a queued work item,
 * registered while they are live. Every path that frees managed memory
 * (devm_kfree(), the old block of a devm_krealloc() that moves, the
 * release of a device's, a group's or a binding's resources) looks for
 * live objects inside the block before the memory goes: each one found
 * is a use after free in waiting, reported with one WARN and made safe by
 * its fixup (a work item is cancelled and waited for), and only then is
 * the memory freed. The kernel's object debugging (debugobjects) does
 * this for kfree(); here it is always on, and costs a free one relaxed
 * load while no object is live.
 */
#ifndef DEVRES_LIVEOBJ_H
#define DEVRES_LIVEOBJ_H

#include <stdbool.h>
#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a live object is doing when the memory it lives in is freed. */
enum devres_liveobj_state {
	DEVRES_LIVEOBJ_IDLE,	/* nothing: the free is fine */
	DEVRES_LIVEOBJ_PENDING, /* queued, due later, or re-queued */
	DEVRES_LIVEOBJ_RUNNING, /* its callback runs in another thread */
	DEVRES_LIVEOBJ_SELF,	/* its callback is the caller, not queued */
};

/**
 * struct devres_liveobj_descr - what the library knows of a kind of object
 * @name: the object's type, for the WARN ("work_struct")
 * @hint: the call that should have come before the free, for the WARN
 *	("cancel_work_sync() or devm_work_autocancel()")
 * @state: what the object is doing; called without any lock of the
 *	library held, in the thread that frees the memory
 * @fixup_free: called with the state @state returned, unless it was
 *	%DEVRES_LIVEOBJ_IDLE, without any lock of the library held, before
 *	the memory goes. For %DEVRES_LIVEOBJ_PENDING and
 *	%DEVRES_LIVEOBJ_RUNNING it must make the object idle and wait for
 *	its callback (a work item is cancelled); for %DEVRES_LIVEOBJ_SELF
 *	(the object's own callback frees it, as the kernel allows a work
 *	function to free its work) it must not wait for itself, and tells
 *	its caller that the object's memory is gone.
 *
 * The descriptor outlives every object registered with it.
 */
struct devres_liveobj_descr {
	const char *name;
	const char *hint;
	enum devres_liveobj_state (*state)(void *obj);
	void (*fixup_free)(void *obj, enum devres_liveobj_state state);
};

/**
 * devres_liveobj_activate() - register a live object
 * @obj: the object's address (its first byte)
 * @descr: its kind
 *
 * From now until devres_liveobj_deactivate(), a free of managed memory
 * that holds @obj asks @descr what @obj is doing, WARNs unless it is idle
 * or freeing itself, and runs @descr's fixup before the memory goes.
 * Activating an object that is active already changes nothing. @obj's
 * memory is never read here, only its address recorded, with the calling
 * process: in a child of fork() the parent's objects stay as they are
 * (docs/fork.md).
 *
 * Context: any thread; takes a process-wide lock that no callback runs
 * under, so it may be called with the object's own lock held.
 * Return: 0; -EINVAL for a bad @obj or @descr (WARN); -ENOMEM when the
 * record cannot grow (the object is then not tracked).
 */
DEVRES_API int
devres_liveobj_activate(void *obj, const struct devres_liveobj_descr *descr);

/**
 * devres_liveobj_deactivate() - the object is no longer live
 * @obj: its address
 *
 * Forgets @obj; nothing happens when it is not active (a free of its
 * memory may have taken it already). @obj's memory is not read.
 *
 * Context: any thread; as devres_liveobj_activate().
 */
DEVRES_API void devres_liveobj_deactivate(const void *obj)
	DEVRES_ADDRESS_ONLY(1);

/**
 * devres_liveobj_active() - whether an object is registered live
 * @obj: its address
 *
 * For a layer that must not reinitialize an object a thread still uses
 * (INIT_WORK() of a queued work item), and for tests.
 *
 * Context: any thread; @obj's memory is not read.
 * Return: true while @obj is active, in this process or, in a child of
 * fork(), in the parent at the fork.
 */
DEVRES_API bool devres_liveobj_active(const void *obj) DEVRES_ADDRESS_ONLY(1);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_LIVEOBJ_H */
