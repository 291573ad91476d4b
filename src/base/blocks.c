// SPDX-License-Identifier: MIT
/*
 * ASan builds: released blocks of the library's own (blocks.h) are kept,
 * poisoned, for the next allocation of their size class. A block given
 * back to ASan's free() sits in its quarantine (256 MiB by default), so
 * the next calloc() is fresh memory: mapped, faulted in and zeroed, with
 * a stack trace taken at each end. A device's index table grows by
 * doublings again after each devres_release_all(): in test-lock's
 * reaper-vs-allocator pattern on a loaded machine, 1 900 tables and 2.4
 * million slots (19 MB) of fresh memory in 200 000 rounds.
 *
 * What is kept is only ever the library's, so reusing it hides no use
 * after free of a caller's; while kept it is poisoned, so that a stale
 * pointer of the library's own is still reported. A block is allocated
 * at the size of its class, a power of two, so that it serves any length
 * of the class next time; the bytes past the length asked for stay
 * poisoned. Bounded: BK_PER blocks a class, classes up to 16 MiB.
 */
#include "blocks.h"

#ifdef BLOCKS_KEPT
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sanitizer/asan_interface.h>
#include "subsys.h"

#define BK_MIN_SHIFT 6
#define BK_MAX_SHIFT 24
#define BK_CLASSES (BK_MAX_SHIFT - BK_MIN_SHIFT + 1)
#define BK_PER 4

struct bk_class {
	void *slot[BK_PER];
	unsigned int count;
};

static pthread_mutex_t bk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bk_class bk[BK_CLASSES];

__attribute__((constructor)) static void bk_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_BLOCKS, &bk_lock);
}

/* The class of a block of @size bytes: the largest power of two it holds. */
static int class_of_block(size_t size)
{
	int s = 63 - __builtin_clzll((unsigned long long)size);

	return s < BK_MIN_SHIFT ? -1 : s - BK_MIN_SHIFT;
}

/* The class every block of which holds @len bytes. */
static int class_for(size_t len)
{
	int s = len <= 1 ? 0 : 64 - __builtin_clzll(len - 1ULL);

	return s < BK_MIN_SHIFT ? 0 : s - BK_MIN_SHIFT;
}

void *devres__block_zalloc(size_t len)
{
	int k = class_for(len);
	void *p = NULL;

	if (k < BK_CLASSES) {
		pthread_mutex_lock(&bk_lock);
		if (bk[k].count)
			p = bk[k].slot[--bk[k].count];
		pthread_mutex_unlock(&bk_lock);
	}
	if (p) {
		ASAN_UNPOISON_MEMORY_REGION(p, len);
		memset(p, 0, len);
	} else if (k < BK_CLASSES) {
		/* The whole class: it serves any length of it next time. */
		p = calloc(1, (size_t)1 << (k + BK_MIN_SHIFT));
	} else {
		return calloc(1, len);
	}
	/* Only what is asked is ours: the rest stays poisoned. */
	if (p)
		ASAN_POISON_MEMORY_REGION((char *)p + len,
					  ((size_t)1 << (k + BK_MIN_SHIFT)) -
						  len);
	return p;
}

void devres__block_free(void *p)
{
	bool kept = false;
	size_t size;
	int k;

	if (!p)
		return;
	size = malloc_usable_size(p); /* ASan's: the size once asked for */
	k = class_of_block(size);
	if (k >= 0 && k < BK_CLASSES) {
		/* Poisoned before another thread can take it. */
		ASAN_POISON_MEMORY_REGION(p, size);
		pthread_mutex_lock(&bk_lock);
		if (bk[k].count < BK_PER) {
			bk[k].slot[bk[k].count++] = p;
			kept = true;
		}
		pthread_mutex_unlock(&bk_lock);
		if (!kept)
			ASAN_UNPOISON_MEMORY_REGION(p, size);
	}
	if (!kept)
		free(p);
}
#endif
