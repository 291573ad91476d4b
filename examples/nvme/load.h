/* SPDX-License-Identifier: MIT */
/*
 * A tiny fio: random or sequential 4 KiB writes, each read back and
 * checked, at a queue depth of 1 to 32 per thread, through the driver's
 * block API or (for comparison) the kernel's block device.
 */
#ifndef NVME_LOAD_H
#define NVME_LOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct nvme_blk;

struct load_opts {
	unsigned int qd;	/* requests in flight per thread */
	unsigned int threads;	/* one I/O queue each */
	unsigned long ios;	/* commands in all, writes and reads */
	uint64_t first, blocks; /* the region: blocks [first, first + blocks) */
	bool seq;
	unsigned int reads_pct; /* requests that only read (and check) */
	bool quiet;
	uint64_t run; /* written into every block: which run wrote it */
};

struct load_result {
	unsigned long ios, writes, reads, errors, mismatches;
	unsigned long submitted, reaped,
		failed; /* failed: reaped with an error */
	double seconds, iops;
	double p50_us, p99_us, p999_us, max_us;
};

/* The pattern of block @lba, generation @gen, run @run. */
void load_fill(void *buf, uint64_t lba, uint32_t gen, uint64_t run);
/*
 * 0 when @buf is block @lba of @gen and @run; when @gen is 0, any
 * generation of any run, or zeros, will do (a block this run never wrote).
 */
int load_check(const void *buf, uint64_t lba, uint32_t gen, uint64_t run);

/* Through the userspace driver; stops early once *@stop is set. */
int load_run_blk(struct nvme_blk *b, const struct load_opts *o,
		 struct load_result *res, atomic_bool *stop);
/* The same load on a block device with O_DIRECT, pread/pwrite threads. */
int load_run_dev(const char *path, const struct load_opts *o,
		 struct load_result *res);

void load_print(const char *who, const struct load_opts *o,
		const struct load_result *r);

#endif /* NVME_LOAD_H */
