/* SPDX-License-Identifier: MIT */
/*
 * handle.c: handles that outlive their objects (a DMA pool, a managed
 * thread, a revocable), checked by generation. Included by subsys.h.
 *
 * An object of such a kind lives in a slot of its kind's table, and its
 * handle, the pointer the caller keeps, is not its address but the slot's
 * index and the slot's generation at the object's creation, in a value no
 * object can live at (bit 63 set: not a user-space address on Linux, so
 * a handle dereferenced by mistake faults at once). The generation moves
 * on when the object is freed and again when the slot is taken by a new
 * object: a handle kept past its object no longer matches its slot, even
 * once the slot holds a new object of the same kind, and a pointer that
 * was never a handle of the kind is told by its bits alone. Nothing is
 * read but the table's own memory, which is never given back, so a stale
 * or forged handle is never a use after free.
 *
 * Lookups take no lock: a slot's generation is read with acquire, and the
 * object's fields written before devres__handle_new() returned are seen.
 * A caller that must act on the object while it cannot be freed (rather
 * than re-check it under the object's own lock) holds
 * devres__handles_lock() around the lookup and the act: slots are taken
 * and freed under it. It is a leaf lock, held across fork(); in a child
 * of fork() the parent's handles still find their objects, whose owner
 * (their pid) each kind checks as its fork policy says.
 */
#ifndef DEVRES_BASE_HANDLE_H
#define DEVRES_BASE_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slots of a table: chunk k holds 64 << k of them; 15 chunks, 2M slots. */
#define DEVRES_HANDLE_CHUNKS 15

/*
 * One kind's table: static, zero but for @tag (1 to 126, its own) and
 * @size (of its object). The rest is handle.c's.
 */
struct devres__handles {
	unsigned int tag;
	size_t size;
	unsigned int nslots; /* made; atomic */
	unsigned int free;   /* a free slot's index + 1, or 0 */
	unsigned char *chunk[DEVRES_HANDLE_CHUNKS]; /* atomic */
};

/*
 * A new object of @t's kind, zeroed unless it was made before (*@ret_used
 * true: the slot held an object of the kind, left as its free left it, so
 * that a lock kept in it stays valid). Returns its handle, the object in
 * *@ret_obj; NULL when out of memory (errno ENOMEM) or when 2^20 objects
 * of the kind are live (errno ENOSPC: the caller WARNs; no fault point:
 * the caller's). The object is not found by its handle until this returns.
 */
HIDDEN void *devres__handle_new(struct devres__handles *t, void **ret_obj,
				bool *ret_used);

/*
 * The live object @h is the handle of, or NULL: not a handle of @t's kind
 * (*@ret_stale false), or one whose object was freed (*@ret_stale true).
 * @ret_stale may be NULL. Lock-free; the object may be freed at once after
 * unless the caller holds devres__handles_lock().
 */
HIDDEN void *devres__handle_obj(const struct devres__handles *t, const void *h,
				bool *ret_stale);

/* The handle of @obj, a live object of @t's. */
HIDDEN void *devres__handle_of(const struct devres__handles *t,
			       const void *obj);

/* Frees @obj: its handle finds nothing from now on. Its memory is kept. */
HIDDEN void devres__handle_del(struct devres__handles *t, void *obj);

HIDDEN void devres__handles_lock(void);
HIDDEN void devres__handles_unlock(void);

#endif /* DEVRES_BASE_HANDLE_H */
