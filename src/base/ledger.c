// SPDX-License-Identifier: MIT
/*
 * The ledger of live resources. Each thread counts in its own tally, written
 * only by that thread with relaxed atomics (plain moves on x86), so counting
 * costs no locked instruction on the allocation path. A snapshot sums the
 * tallies of live threads and what exited threads left behind.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <devres/fault.h>
#include "internal.h"

struct tally {
	long v[DL_NR];
	struct tally *next;
};

static TLS_FAST struct tally *self;
TLS_FAST long *devres__tally;
static struct tally *threads;
static long retired[DL_NR];
static long fallback[DL_NR];
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/*
 * fork() in a threaded program: the child has only the forking thread, so
 * a lock another thread held at fork would never be released there. Held
 * across fork, it is free on both sides.
 */
static void ledger_lock_take(void)
{
	pthread_mutex_lock(&ledger_lock);
}

static void ledger_lock_drop(void)
{
	pthread_mutex_unlock(&ledger_lock);
}

__attribute__((constructor)) static void ledger_atfork(void)
{
	devres__atfork(DEVRES_FORK_LEDGER, ledger_lock_take, ledger_lock_drop,
		       ledger_lock_drop);
}

static void retire(void *arg)
{
	struct tally *t = arg, **pp;

	pthread_mutex_lock(&ledger_lock);
	for (pp = &threads; *pp != t; pp = &(*pp)->next)
		;
	*pp = t->next;
	for (int i = 0; i < DL_NR; i++)
		retired[i] += __atomic_load_n(&t->v[i], __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ledger_lock);
	self = NULL;
	devres__tally = NULL;
	free(t);
}

static void make_key(void)
{
	if (pthread_key_create(&exit_key, retire))
		exit_key = (pthread_key_t)-1;
}

static struct tally *enrol(void)
{
	struct tally *t;

	pthread_once(&key_once, make_key);
	if (exit_key == (pthread_key_t)-1)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (pthread_setspecific(exit_key, t)) {
		free(t);
		return NULL;
	}
	pthread_mutex_lock(&ledger_lock);
	t->next = threads;
	threads = t;
	pthread_mutex_unlock(&ledger_lock);
	self = t;
	devres__tally = t->v;
	return t;
}

/* A thread's first count enrols it; the next ones are inline. */
void devres__ledger_add_first(enum devres__ledger_kind kind, long delta)
{
	struct tally *t = enrol();
	long *v = t ? t->v : fallback;

	__atomic_add_fetch(&v[kind], delta, __ATOMIC_RELAXED);
}

static void sum(long out[DL_NR])
{
	pthread_mutex_lock(&ledger_lock);
	for (int i = 0; i < DL_NR; i++)
		out[i] = retired[i] +
			 __atomic_load_n(&fallback[i], __ATOMIC_RELAXED);
	for (struct tally *t = threads; t; t = t->next)
		for (int i = 0; i < DL_NR; i++)
			out[i] += __atomic_load_n(&t->v[i], __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ledger_lock);
}

void devres_ledger_snapshot(struct devres_ledger *ret_ledger)
{
	long v[DL_NR];

	if (devres__arg_bad(NULL, ret_ledger, __func__, "ledger"))
		return;
	sum(v);
	*ret_ledger = (struct devres_ledger){
		.nodes = v[DL_NODES],
		.node_bytes = v[DL_NODE_BYTES],
		.groups = v[DL_GROUPS],
		.fds = v[DL_FDS],
		.maps = v[DL_MAPS],
		.map_bytes = v[DL_MAP_BYTES],
		.irq_handlers = v[DL_IRQ_HANDLERS],
		.dma_buffers = v[DL_DMA_BUFFERS],
		.dma_bytes = v[DL_DMA_BYTES],
		.threads = v[DL_THREADS],
		.devices = v[DL_DEVICES],
		.regions = v[DL_REGIONS],
		.dma_maps = v[DL_DMA_MAPS],
		.revocables = v[DL_REVOCABLES],
	};
}

int devres_ledger_diff(const struct devres_ledger *before,
		       const struct devres_ledger *after, FILE *f)
{
	static const struct {
		const char *name;
		size_t off;
	} kinds[] = {
#define K(m) { #m, offsetof(struct devres_ledger, m) }
		K(nodes),     K(node_bytes), K(groups),	      K(fds),
		K(maps),      K(map_bytes),  K(irq_handlers), K(dma_buffers),
		K(dma_bytes), K(threads),    K(devices),      K(regions),
		K(dma_maps),  K(revocables),
#undef K
	};
	int differ = 0;

	if (devres__arg_bad(NULL, before, __func__, "ledger") ||
	    devres__arg_bad(NULL, after, __func__, "ledger") ||
	    devres__opt_bad(NULL, f, __func__, "FILE"))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		long b = *(const long *)(((const char *)before) + kinds[i].off);
		long a = *(const long *)(((const char *)after) + kinds[i].off);

		if (a == b)
			continue;
		differ++;
		if (f)
			fprintf(f, "  %s: %ld -> %ld (%+ld)\n", kinds[i].name,
				b, a, a - b);
	}
	return differ;
}
