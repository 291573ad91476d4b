// SPDX-License-Identifier: MIT
/*
 * The load: each request slot writes a block with a pattern keyed by its
 * LBA, a generation and the run, reads it back and checks every byte,
 * then moves on. A thread owns the LBAs equal to its number modulo the
 * number of threads, and never has two requests on one LBA in flight, so
 * that the expected content of every block is known: a lost, torn or
 * misplaced write is a mismatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "blk.h"
#include "load.h"

#define BLOCK 4096u
#define MAGIC 0x4e564d65424c4b00ull /* "NVMeBLK" */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

void load_fill(void *buf, uint64_t lba, uint32_t gen, uint64_t run)
{
	uint64_t *w = buf, seed = mix(lba ^ mix(run) ^ ((uint64_t)gen << 40));

	w[0] = MAGIC ^ lba;
	w[1] = gen;
	w[2] = run;
	for (unsigned int i = 3; i < BLOCK / 8; i++)
		w[i] = seed + i * 0x9e3779b97f4a7c15ull;
}

int load_check(const void *buf, uint64_t lba, uint32_t gen, uint64_t run)
{
	const uint64_t *w = buf;
	uint64_t want[BLOCK / 8];

	if (!gen) {
		bool zero = true;

		for (unsigned int i = 0; i < BLOCK / 8 && zero; i++)
			zero = !w[i];
		if (zero)
			return 0;
		if (w[0] != (MAGIC ^ lba) || !w[1])
			return -1;
		gen = (uint32_t)w[1];
		run = w[2];
	}
	load_fill(want, lba, gen, run);
	return memcmp(buf, want, BLOCK) ? -1 : 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct shared {
	const struct load_opts *o;
	atomic_ulong budget; /* commands still to start */
	atomic_ulong done;
	atomic_int verbose_tick;
	double t0;
	atomic_bool *stop;
	struct nvme_blk *b;
	const char *path;
	int fd;
	unsigned int nslots; /* threads x qd for the block device */
};

struct worker {
	struct shared *sh;
	unsigned int id, of;
	pthread_t thread;
	uint64_t rng, cursor;
	uint32_t *gens; /* per owned LBA */
	uint8_t *busy;	/* per owned LBA */
	uint64_t owned;
	float *lat;
	unsigned long nlat, maxlat;
	struct load_result r;
};

static uint64_t next_lba(struct worker *w)
{
	const struct load_opts *o = w->sh->o;

	for (unsigned int tries = 0; tries < 64; tries++) {
		uint64_t k;

		if (o->seq) {
			k = w->cursor++ % w->owned;
		} else {
			w->rng ^= w->rng << 13;
			w->rng ^= w->rng >> 7;
			w->rng ^= w->rng << 17;
			k = w->rng % w->owned;
		}
		if (!w->busy[k]) {
			w->busy[k] = 1;
			return k;
		}
	}
	return UINT64_MAX;
}

static uint64_t lba_of(const struct worker *w, uint64_t k)
{
	return w->sh->o->first + k * w->of + w->id;
}

static void add_lat(struct worker *w, double s)
{
	if (w->nlat < w->maxlat)
		w->lat[w->nlat++] = (float)(s * 1e6);
}

static void progress(struct shared *sh)
{
	unsigned long d = atomic_fetch_add(&sh->done, 1) + 1;
	int tick = (int)(now_s() - sh->t0);

	if (sh->o->quiet || tick < atomic_load(&sh->verbose_tick) + 2)
		return;
	atomic_store(&sh->verbose_tick, tick);
	printf("  progress: %lu of %lu I/Os, %.0f IOPS\n", d, sh->o->ios,
	       (double)d / (now_s() - sh->t0));
}

struct slot {
	uint64_t k;
	int state; /* 0 idle, 1 writing, 2 reading */
	double t0;
	void *buf;
};

/* @n commands of the budget (a write and its read-back take 2). */
static bool take_budget(struct shared *sh, unsigned long n)
{
	unsigned long b = atomic_load(&sh->budget);

	while (b >= n)
		if (atomic_compare_exchange_weak(&sh->budget, &b, b - n))
			return true;
	return false;
}

static bool want_read(struct worker *w)
{
	if (!w->sh->o->reads_pct)
		return false;
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng % 100 < w->sh->o->reads_pct;
}

/*
 * Starts the next request of slot @s: a write (read back when it
 * completes) or, --reads of the time, a read checked against what the
 * block holds. False when there is nothing left to do.
 */
static bool start_write(struct worker *w, struct slot *s, int *tags,
			unsigned int si)
{
	struct shared *sh = w->sh;
	bool read = want_read(w);
	int tag;

	if (atomic_load(sh->stop) || !take_budget(sh, read ? 1 : 2))
		return false;
	s->k = next_lba(w);
	if (s->k == UINT64_MAX) {
		atomic_fetch_add(&sh->budget, read ? 1 : 2);
		return false;
	}
	if (read) {
		memset(s->buf, 0xa5, BLOCK);
	} else {
		w->gens[s->k]++;
		load_fill(s->buf, lba_of(w, s->k), w->gens[s->k], sh->o->run);
	}
	s->t0 = now_s();
	tag = nvme_blk_submit(sh->b, w->id, read ? NVME_OP_READ : NVME_OP_WRITE,
			      lba_of(w, s->k), 1, s->buf);
	if (tag < 0) {
		w->busy[s->k] = 0;
		if (!read)
			w->gens[s->k] = 0; /* unknown now */
		if (tag == -ENODEV)
			atomic_store(sh->stop, true);
		else
			w->r.errors++;
		return false;
	}
	w->r.submitted++;
	s->state = read ? 2 : 1;
	tags[tag] = (int)si;
	return true;
}

static void *blk_worker(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	unsigned int qd = sh->o->qd, active = 0;
	struct slot *slots = calloc(qd, sizeof(*slots));
	int tags[256];

	for (unsigned int i = 0; i < qd && slots; i++)
		slots[i].buf = aligned_alloc(BLOCK, BLOCK);
	for (unsigned int i = 0; i < qd && slots; i++)
		active += start_write(w, &slots[i], tags, i);
	while (active) {
		int tag, status, ret;
		struct slot *s;

		ret = nvme_blk_reap(sh->b, w->id, -1, &tag, &status);
		if (ret) {
			/* Unbound with nothing left, or nothing in flight. */
			break;
		}
		w->r.reaped++;
		s = &slots[tags[tag]];
		add_lat(w, now_s() - s->t0);
		if (status) {
			w->r.failed++;
			w->gens[s->k] = 0;
			w->busy[s->k] = 0;
			s->state = 0;
			active--;
			if (status != -ENODEV)
				w->r.errors++;
			else
				atomic_store(sh->stop, true);
			if (start_write(w, s, tags, (unsigned int)(s - slots)))
				active++;
			continue;
		}
		w->r.ios++;
		progress(sh);
		if (s->state == 1) {
			w->r.writes++;
			memset(s->buf, 0xa5, BLOCK);
			s->t0 = now_s();
			tag = nvme_blk_submit(sh->b, w->id, NVME_OP_READ,
					      lba_of(w, s->k), 1, s->buf);
			if (tag >= 0) {
				w->r.submitted++;
				s->state = 2;
				tags[tag] = (int)(s - slots);
				continue;
			}
			if (tag == -ENODEV)
				atomic_store(sh->stop, true);
			else
				w->r.errors++;
		} else {
			w->r.reads++;
			if (load_check(s->buf, lba_of(w, s->k), w->gens[s->k],
				       sh->o->run)) {
				w->r.mismatches++;
				printf("  MISMATCH at LBA %llu (generation "
				       "%u)\n",
				       (unsigned long long)lba_of(w, s->k),
				       w->gens[s->k]);
			}
		}
		w->busy[s->k] = 0;
		s->state = 0;
		active--;
		if (start_write(w, s, tags, (unsigned int)(s - slots)))
			active++;
	}
	for (unsigned int i = 0; i < qd && slots; i++)
		free(slots[i].buf);
	free(slots);
	return NULL;
}

/* One synchronous block through the kernel's driver, timed and counted. */
static bool kernel_io(struct worker *w, void *buf, uint64_t lba, bool write)
{
	struct shared *sh = w->sh;
	double t = now_s();
	ssize_t n = write ? pwrite(sh->fd, buf, BLOCK, (off_t)(lba * BLOCK))
			  : pread(sh->fd, buf, BLOCK, (off_t)(lba * BLOCK));

	if (n != BLOCK) {
		w->r.errors++;
		return false;
	}
	add_lat(w, now_s() - t);
	w->r.ios++;
	if (write)
		w->r.writes++;
	else
		w->r.reads++;
	progress(sh);
	return true;
}

/* One synchronous slot of the block device: write, read back, check. */
static void *dev_worker(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	void *buf = aligned_alloc(BLOCK, BLOCK);

	while (buf) {
		bool read = want_read(w);
		uint64_t k, lba;

		if (!take_budget(sh, read ? 1 : 2))
			break;
		k = next_lba(w);
		if (k == UINT64_MAX)
			break;
		lba = lba_of(w, k);
		if (!read) {
			w->gens[k]++;
			load_fill(buf, lba, w->gens[k], sh->o->run);
			if (!kernel_io(w, buf, lba, true))
				break;
			memset(buf, 0xa5, BLOCK);
		}
		if (!kernel_io(w, buf, lba, false))
			break;
		if (load_check(buf, lba, w->gens[k], sh->o->run))
			w->r.mismatches++;
		w->busy[k] = 0;
	}
	free(buf);
	return NULL;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static int run_workers(struct shared *sh, unsigned int n, void *(*fn)(void *),
		       struct load_result *res)
{
	struct worker *w = calloc(n, sizeof(*w));
	unsigned long total = 0;
	float *all;
	int ret = 0;

	if (!w)
		return -ENOMEM;
	memset(res, 0, sizeof(*res));
	atomic_store(&sh->budget, sh->o->ios);
	sh->t0 = now_s();
	for (unsigned int i = 0; i < n; i++) {
		w[i].sh = sh;
		w[i].id = i;
		w[i].of = n;
		w[i].rng = 0x9e3779b97f4a7c15ull * (i + 1) ^ sh->o->run;
		w[i].owned = (sh->o->blocks - i + n - 1) / n;
		w[i].gens = calloc(w[i].owned, sizeof(uint32_t));
		w[i].busy = calloc(w[i].owned, 1);
		w[i].maxlat = sh->o->ios / n + 2 * sh->o->qd + 16;
		w[i].lat = calloc(w[i].maxlat, sizeof(float));
		if (!w[i].gens || !w[i].busy || !w[i].lat ||
		    pthread_create(&w[i].thread, NULL, fn, &w[i])) {
			ret = -ENOMEM;
			n = i;
			break;
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		total += w[i].nlat;
	}
	res->seconds = now_s() - sh->t0;
	all = calloc(total + 1, sizeof(float));
	total = 0;
	for (unsigned int i = 0; i < n; i++) {
		struct load_result *r = &w[i].r;

		res->ios += r->ios;
		res->writes += r->writes;
		res->reads += r->reads;
		res->errors += r->errors;
		res->mismatches += r->mismatches;
		res->submitted += r->submitted;
		res->reaped += r->reaped;
		res->failed += r->failed;
		if (all)
			memcpy(all + total, w[i].lat,
			       w[i].nlat * sizeof(float));
		total += w[i].nlat;
	}
	for (unsigned int i = 0; i < n; i++) {
		free(w[i].gens);
		free(w[i].busy);
		free(w[i].lat);
	}
	free(w);
	res->iops = res->seconds > 0 ? (double)res->ios / res->seconds : 0;
	if (all && total) {
		qsort(all, total, sizeof(float), cmp_float);
		res->p50_us = all[total / 2];
		res->p99_us = all[total * 99 / 100];
		res->p999_us = all[total * 999 / 1000];
		res->max_us = all[total - 1];
	}
	free(all);
	return ret;
}

int load_run_blk(struct nvme_blk *b, const struct load_opts *o,
		 struct load_result *res, atomic_bool *stop)
{
	struct shared sh = { .o = o, .b = b, .stop = stop };
	unsigned int n = o->threads;

	if (n > nvme_blk_queues(b))
		n = nvme_blk_queues(b);
	if (!n || o->qd < 1 || o->qd > 32 || o->blocks < n * o->qd)
		return -EINVAL;
	return run_workers(&sh, n, blk_worker, res);
}

int load_run_dev(const char *path, const struct load_opts *o,
		 struct load_result *res)
{
	atomic_bool never = false;
	struct shared sh = { .o = o, .path = path, .stop = &never };
	int ret;

	sh.fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (sh.fd < 0)
		return -errno;
	/* Depth from threads: each slot is a thread of synchronous I/O. */
	ret = run_workers(&sh, o->threads * o->qd, dev_worker, res);
	if (fsync(sh.fd) && !ret)
		ret = -errno;
	close(sh.fd);
	return ret;
}

void load_print(const char *who, const struct load_opts *o,
		const struct load_result *r)
{
	printf("%s: %s 4 KiB%s, qd %u x %u: %lu I/Os (%lu writes, %lu reads "
	       "checked) in %.2f s: %.0f IOPS; latency p50 %.0f us, p99 %.0f "
	       "us, p99.9 %.0f us, max %.0f us; %lu errors, %lu mismatches\n",
	       who, o->seq ? "sequential" : "random",
	       o->reads_pct ? ", reads and writes" : "", o->qd, o->threads,
	       r->ios, r->writes, r->reads, r->seconds, r->iops, r->p50_us,
	       r->p99_us, r->p999_us, r->max_us, r->errors, r->mismatches);
}
