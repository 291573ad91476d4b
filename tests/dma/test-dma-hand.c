// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every managed DMA resource (a dmam_alloc_coherent() buffer, a chunk of
 * a dmam_pool_create() pool, the pool itself) times every plain way to
 * give it back or take it away: munmap(2) of all of it or of its first
 * page, mmap(2) with MAP_FIXED over all of it or over its last page,
 * shmat(2) with SHM_REMAP of a System V segment over all of it, mremap(2)
 * shrinking, growing, moving it away, or moving another mapping onto it
 * (for a chunk, also a dmam buffer: the call is refused whole and the
 * buffer stays managed), dma_free_coherent(), dma_unmap_single(),
 * dma_pool_destroy(), and the managed calls as controls.
 *
 * Each cell writes the resource, makes the call and checks what the
 * table says of it:
 *   DROP    one WARN (the device, the call, the managed call, the call to
 *           use); the node off the device; the buffer's counts and its bus
 *           range gone at once. Then a new owner maps every page of the
 *           range not still mapped and writes all of it; the device's
 *           release follows, without a WARN, and every page must still
 *           hold what the new owner wrote.
 *   REFUSE  one WARN, the call failed with EPERM (or the DMA call did
 *           nothing), the memory and the node as they were, the pool
 *           still giving out blocks; the device's release then gives the
 *           memory back (no page of it left mapped).
 *   OK      the managed call: no WARN, the node gone.
 * The fixture checks that the ledger is back at its baseline.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

enum kind {
	BUF,
	CHUNK,
	POOL
};
enum outcome {
	DROP,
	REFUSE,
	OK
};

static size_t pg, len; /* a page; the resource's length (two pages) */

/* The resource a cell works on. */
struct res {
	char *p; /* its memory: the buffer, the chunk */
	dma_addr_t handle;
	struct dma_pool *pool;
	char *moved; /* where a call moved or grew it to, if anywhere */
	size_t moved_len;
	char *scratch; /* a mapping a call moved onto it, if not moved */
	char *buf;     /* a dmam buffer a call moved onto it, if not moved */
	dma_addr_t buf_handle;
	long ret; /* what the call returned: 0, or -errno */
};

static long mret(void *r)
{
	return r == MAP_FAILED ? -errno : 0;
}

static void by_munmap(struct res *r)
{
	r->ret = munmap(r->p, len) ? -errno : 0;
}

static void by_munmap_head(struct res *r)
{
	r->ret = munmap(r->p, pg) ? -errno : 0;
}

static void by_fixed(struct res *r)
{
	r->ret = mret(mmap(r->p, len, RW, ANON | MAP_FIXED, -1, 0));
}

static void by_fixed_tail(struct res *r)
{
	r->ret = mret(mmap(r->p + pg, pg, RW, ANON | MAP_FIXED, -1, 0));
}

/* The segment goes with its last detach (the next owner's munmap()). */
static void by_shmat(struct res *r)
{
	int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	void *q;

	assert_true(id >= 0);
	q = shmat(id, r->p, SHM_REMAP);
	r->ret = q == (void *)-1 ? -errno : 0;
	assert_int_equal(shmctl(id, IPC_RMID, NULL), 0);
}

static void by_shrink(struct res *r)
{
	r->ret = mret(mremap(r->p, len, pg, 0));
}

static void by_grow(struct res *r)
{
	void *q = mremap(r->p, len, 4 * len, MREMAP_MAYMOVE);

	r->ret = mret(q);
	if (q != MAP_FAILED) {
		r->moved = q;
		r->moved_len = 4 * len;
	}
}

static void by_move(struct res *r)
{
	char *to = mmap(NULL, len, PROT_NONE, ANON, -1, 0);
	void *q;

	assert_ptr_not_equal(to, MAP_FAILED);
	q = mremap(r->p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	r->ret = mret(q);
	r->moved = to;
	r->moved_len = len;
}

static void by_move_onto(struct res *r)
{
	char *from = mmap(NULL, len, RW, ANON, -1, 0);
	void *q;

	assert_ptr_not_equal(from, MAP_FAILED);
	q = mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, r->p);
	r->ret = mret(q);
	if (q == MAP_FAILED)
		r->scratch = from;
}

/* Refused whole: the buffer moved from is not taken off either. */
static void by_buf_onto(struct res *r)
{
	void *q;

	r->buf = dmam_alloc_coherent(&tdev, len, &r->buf_handle, GFP_KERNEL);
	assert_non_null(r->buf);
	memset(r->buf, 0x5c, len);
	q = mremap(r->buf, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, r->p);
	r->ret = mret(q);
}

static void by_free_coherent(struct res *r)
{
	dma_free_coherent(&tdev, len, r->p, r->handle);
}

static void by_unmap_single(struct res *r)
{
	dma_unmap_single(&tdev, r->handle, len, DMA_BIDIRECTIONAL);
}

static void by_dmam_free(struct res *r)
{
	dmam_free_coherent(&tdev, len, r->p, r->handle);
}

static void by_pool_destroy(struct res *r)
{
	dma_pool_destroy(r->pool);
}

static void by_dmam_pool_destroy(struct res *r)
{
	dmam_pool_destroy(r->pool);
}

struct way {
	const char *name;
	const char *func; /* the call, in the WARN */
	void (*call)(struct res *r);
};

static const struct way
	w_munmap = { "munmap", "munmap", by_munmap },
	w_munmap_head = { "munmap head", "munmap", by_munmap_head },
	w_fixed = { "MAP_FIXED", "mmap", by_fixed },
	w_fixed_tail = { "MAP_FIXED tail", "mmap", by_fixed_tail },
	w_shmat = { "shmat SHM_REMAP", "shmat", by_shmat },
	w_shrink = { "mremap shrink", "mremap", by_shrink },
	w_grow = { "mremap grow", "mremap", by_grow },
	w_move = { "mremap away", "mremap", by_move },
	w_onto = { "mremap onto", "mremap", by_move_onto },
	w_buf_onto = { "mremap a dmam buffer onto", "mremap", by_buf_onto },
	w_free = { "dma_free_coherent", "dma_free_coherent", by_free_coherent },
	w_unmap1 = { "dma_unmap_single", "dma_unmap_single", by_unmap_single },
	w_dmam_free = { "dmam_free_coherent", "-", by_dmam_free },
	w_pool_destroy = { "dma_pool_destroy", "dma_pool_destroy",
			   by_pool_destroy },
	w_dmam_pool_destroy = { "dmam_pool_destroy", "-",
				by_dmam_pool_destroy };

struct cell {
	enum kind kind;
	enum outcome out;
	const struct way *way;
	const char *reason; /* in the WARN */
	char name[64];
};

#define BUF_WHY "acquired with dmam_alloc_coherent(): use dmam_free_coherent()"
#define CHUNK_WHY                                                              \
	"a chunk of DMA pool hand, acquired with dmam_pool_create(): use "     \
	"dmam_pool_destroy(); refused"

static struct cell cells[] = {
	{ BUF, DROP, &w_munmap, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_munmap_head, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_fixed, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_fixed_tail, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_shmat, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_shrink, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_grow, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_move, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_onto, BUF_WHY "; released now", "" },
	{ BUF, DROP, &w_free, BUF_WHY "; released now", "" },
	{ BUF, REFUSE, &w_unmap1, "is a coherent buffer", "" },
	{ BUF, OK, &w_dmam_free, NULL, "" },
	{ CHUNK, REFUSE, &w_munmap, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_munmap_head, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_fixed, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_fixed_tail, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_shmat, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_shrink, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_grow, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_move, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_onto, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_buf_onto, CHUNK_WHY, "" },
	{ CHUNK, REFUSE, &w_free, "coherent buffer of its own (a pool's)", "" },
	{ CHUNK, REFUSE, &w_unmap1, "is a coherent buffer", "" },
	{ POOL, DROP, &w_pool_destroy,
	  "acquired with dmam_pool_create(): use dmam_pool_destroy(); "
	  "released now",
	  "" },
	{ POOL, OK, &w_dmam_pool_destroy, NULL, "" },
};
#define NR_CELLS (sizeof(cells) / sizeof(cells[0]))

static const char *const kind_name[] = { "dmam_alloc_coherent",
					 "dmam_pool chunk", "dmam_pool" };
static const char *const node_name[] = { "dmam_release", "dmam_pool_release",
					 "dmam_pool_release" };

/* 1 when @p's page is mapped. */
static int mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)p, pg, &v) == 0;
}

static int nodes(const char *name)
{
	char *d = dump_to_string(&tdev);
	int n = count_substr(d, name);

	free(d);
	return n;
}

/* The DMA buffers live, after checking their bytes: @len each. */
static long dma_buffers(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_bytes - ledger_base.dma_bytes,
			 (l.dma_buffers - ledger_base.dma_buffers) * (long)len);
	return l.dma_buffers - ledger_base.dma_buffers;
}

static void acquire(const struct cell *c, struct res *r)
{
	memset(r, 0, sizeof(*r));
	if (c->kind == BUF) {
		r->p = dmam_alloc_coherent(&tdev, len, &r->handle, GFP_KERNEL);
	} else {
		/* One block a chunk, two pages each. */
		r->pool = dmam_pool_create("hand", &tdev, len, pg, 0);
		assert_non_null(r->pool);
		r->p = dma_pool_alloc(r->pool, GFP_KERNEL, &r->handle);
	}
	assert_non_null(r->p);
	memset(r->p, 0x5a, len);
	/* A pool given back with a block out would leak its chunk. */
	if (c->kind == POOL)
		dma_pool_free(r->pool, r->p, r->handle);
	assert_int_equal(dma_buffers(), 1);
	assert_ptr_equal(dma_iova_to_virt(&tdev, r->handle, len), r->p);
}

/* The next owner of the range: every page its own, written. */
static void next_owner(struct res *r)
{
	for (size_t off = 0; off < len; off += pg) {
		if (!mapped(r->p + off))
			assert_ptr_equal(mmap(r->p + off, pg, RW,
					      ANON | MAP_FIXED_NOREPLACE, -1,
					      0),
					 r->p + off);
		memset(r->p + off, 0x61, pg);
	}
}

static void check_drop(const struct cell *c, struct res *r)
{
	assert_int_equal(r->ret, 0);
	expect_warn_on("test-dev", c->way->func, c->reason);
	assert_int_equal(nodes(node_name[c->kind]), 0);
	/* Given back at the call: its counts, and the device's access. */
	assert_int_equal(dma_buffers(), 0);
	assert_null(dma_iova_to_virt(&tdev, r->handle, 1));
	next_owner(r);
	start_capture();
	devres_release_all(&tdev);
	expect_no_warn();
	for (size_t off = 0; off < len; off += pg) {
		assert_true(mapped(r->p + off));
		assert_int_equal(r->p[off], 0x61);
		assert_int_equal(r->p[off + pg - 1], 0x61);
		r->p[off] = 0x62; /* and still writable */
	}
	assert_int_equal(munmap(r->p, len), 0);
	if (r->moved)
		assert_int_equal(munmap(r->moved, r->moved_len), 0);
}

static void check_refuse(const struct cell *c, struct res *r)
{
	dma_addr_t h2;
	void *b2;

	if (c->way->func[0] != 'd')
		assert_int_equal(r->ret, -EPERM);
	expect_warn_on("test-dev", c->way->func, c->reason);
	assert_int_equal(nodes(node_name[c->kind]), 1);
	assert_int_equal(dma_buffers(), 1 + (r->buf != NULL));
	assert_ptr_equal(dma_iova_to_virt(&tdev, r->handle, len), r->p);
	if (r->buf) {
		assert_int_equal(nodes("dmam_release"), 1);
		assert_ptr_equal(dma_iova_to_virt(&tdev, r->buf_handle, len),
				 r->buf);
		assert_int_equal(r->buf[len - 1], 0x5c);
	}
	for (size_t off = 0; off < len; off += pg) {
		assert_true(mapped(r->p + off));
		assert_int_equal(r->p[off], 0x5a);
		assert_int_equal(r->p[off + pg - 1], 0x5a);
	}
	if (r->pool) {
		/* The pool still gives out blocks, and takes them back. */
		b2 = dma_pool_alloc(r->pool, GFP_KERNEL, &h2);
		assert_non_null(b2);
		memset(b2, 1, len);
		dma_pool_free(r->pool, b2, h2);
		dma_pool_free(r->pool, r->p, r->handle);
	}
	if (r->moved)
		assert_int_equal(munmap(r->moved, r->moved_len), 0);
	if (r->scratch)
		assert_int_equal(munmap(r->scratch, len), 0);
	start_capture();
	devres_release_all(&tdev);
	expect_no_warn();
	for (size_t off = 0; off < len; off += pg) {
		assert_false(mapped(r->p + off));
		if (r->buf)
			assert_false(mapped(r->buf + off));
	}
	assert_int_equal(dma_buffers(), 0);
}

static void run_cell(void **state)
{
	const struct cell *c = *state;
	struct res r;

	acquire(c, &r);
	start_capture();
	c->way->call(&r);
	if (c->out == DROP) {
		check_drop(c, &r);
	} else if (c->out == REFUSE) {
		check_refuse(c, &r);
	} else {
		expect_no_warn();
		assert_int_equal(nodes(node_name[c->kind]), 0);
		assert_int_equal(dma_buffers(), 0);
		for (size_t off = 0; off < len; off += pg)
			assert_false(mapped(r.p + off));
	}
}

static int cell_setup(void **state)
{
	void *c = *state;
	int ret = dev_setup(state);

	*state = c;
	return ret;
}

int main(void)
{
	struct CMUnitTest tests[NR_CELLS];

	pg = (size_t)sysconf(_SC_PAGESIZE);
	len = 2 * pg;
	for (size_t n = 0; n < NR_CELLS; n++) {
		add_cell(&tests[n], &cells[n], run_cell, cell_setup,
			 dev_teardown, "%s / %s", kind_name[cells[n].kind],
			 cells[n].way->name);
	}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("dma-hand", tests, NR_CELLS, NULL, NULL);
}
