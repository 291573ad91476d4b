// SPDX-License-Identifier: MIT
/*
 * A dmam_alloc_coherent() buffer in the process's table of managed
 * mappings (base/maps.c): the application's munmap(), mremap() or
 * mmap(MAP_FIXED) over any part of it takes it off its device at the
 * call, with one WARN, and the device's release never touches the address
 * again.
 *
 * The table's lock is outer to a device's DMA state lock (the table's
 * lookup takes the buffer under it), and a free holds the state's lock
 * when it takes the buffer: it cannot take the record out of the table
 * there. So the record is an object of its own that outlives the buffer's
 * record and its node. Under the state's lock a free unlinks the two;
 * once unlocked it takes the record out of the table and unmaps the
 * memory before it lets the table's lock go (a MAP_FIXED mapping made by
 * hand meanwhile waits, and is never unmapped by the free). A plain call
 * that took the record out first (under the table's lock) finds it
 * unlinked, and nothing of it left to take: that call unmaps, the free
 * does not. Whoever takes the record out of the table gives the mapping
 * back.
 *
 * A dmam_ pool's chunk has a record of the same kind, kept inside the
 * chunk and marked as refusing plain calls (pool.c): only its free takes
 * it out, the same way.
 */
#include <stdlib.h>
#include "dma-internal.h"

/* What a take owes once the buffer is off the device. */
struct hand_owed {
	struct dma_rec *rec;
	size_t len;
};

static void hand_tail(void *arg)
{
	struct hand_owed *o = arg;

	devres__ledger_add(DL_DMA_BUFFERS, -1);
	devres__ledger_add(DL_DMA_BYTES, -(long)o->len);
	free(o->rec);
}

/*
 * Under the table's lock: the buffer, if still linked, is taken from the
 * device's state, unmapped from the device (its bus range given back:
 * the device must not reach memory about to go), its node taken off the
 * device into @h, and its counts dropped; the plain call then unmaps the
 * memory. The device is alive while the record is in the table: a free
 * takes it out before it returns, and the device's release frees.
 *
 * DMA ops that end the thread inside the unmap: the counts and the
 * record go as the thread unwinds (hand_tail(), run by the ops' cleanup
 * once the DMA locks are let go); the table's lock is let go by its
 * caller's (base/maps.c). Before, both were lost with the thread.
 */
static bool take_by_hand(struct devres__map *map, struct devres__hand *h)
{
	struct dma_rec *rec = (struct dma_rec *)(((char *)map) -
						 offsetof(struct dma_rec, map));
	struct hand_owed o = { .rec = rec };
	struct device *dev = rec->dev;
	struct dma_map *m = NULL;
	bool orphan = false;
	struct dma_dev *s;

	devres__dma_read_lock();
	s = dma_dev_peek(dev);
	if (s) {
		struct dma_map *t;

		pthread_mutex_lock(&s->lock);
		m = rec->m;
		t = m ? devres__dma_take(s, m->node.start) : NULL;
		if (t && t != m)
			devres__dma_keep(s, t);
		/* Linked means owned: a free unlinks as it disowns. */
		if (m && t == m) {
			rec->m = NULL;
			m->rec = NULL;
			o.len = (m->size + devres__page_size() - 1) &
				~(devres__page_size() - 1);
			devres__disown(&m->owner, h);
			devres__dma_forget_owed(s, m, hand_tail, &o);
			orphan = s->orphan && !s->nmaps && !s->pins;
		} else {
			m = NULL;
		}
		pthread_mutex_unlock(&s->lock);
	}
	devres__dma_read_unlock();
	if (!m)
		return false;
	hand_tail(&o);
	if (orphan)
		devres__dma_put_orphan(dev, s);
	return true;
}

/* Who owns the buffer, for a refused madvise() or mprotect(). */
static bool who_by_hand(const struct devres__map *map, struct devres__hand *h)
{
	const struct dma_rec *rec =
		(const struct dma_rec *)(((const char *)map) -
					 offsetof(struct dma_rec, map));
	bool owned = false;
	struct dma_dev *s;

	devres__dma_read_lock();
	s = dma_dev_peek(rec->dev);
	if (s) {
		pthread_mutex_lock(&s->lock);
		/* Linked means owned: a free unlinks as it disowns. */
		if (rec->m && rec->m->owner.dev) {
			devres__owner_hand(&rec->m->owner, h);
			owned = true;
		}
		pthread_mutex_unlock(&s->lock);
	}
	devres__dma_read_unlock();
	return owned;
}

struct dma_rec *devres__dma_rec_new(struct device *dev)
{
	struct dma_rec *rec;

	if (devres__should_fail() || !(rec = calloc(1, sizeof(*rec))))
		return NULL;
	rec->dev = dev;
	return rec;
}

int devres__dma_rec_add(struct dma_rec *rec, void *cpu, size_t len)
{
	size_t page = devres__page_size();

	rec->map.start = (uintptr_t)cpu;
	rec->map.end = (uintptr_t)cpu + ((len + page - 1) & ~(page - 1));
	rec->map.take = take_by_hand;
	rec->map.who = who_by_hand;
	/*
	 * What its free checks is still there (base/maps-id.c): anonymous
	 * private memory, device 0, inode 0, known without a read.
	 */
	rec->map.have_id = true;
	rec->map.id = (struct devres__map_id){ 0 };
	return devres__map_add(&rec->map);
}

void devres__dma_rec_put(struct dma_rec *rec, void *cpu, size_t len)
{
	devres__map_put(&rec->map, cpu, len, rec->dev, "dmam_alloc_coherent");
	if (!rec->kept)
		free(rec);
}
