/* SPDX-License-Identifier: MIT */
/*
 * What the reference model (model.c) and the interpreter (model-ops.c)
 * share. Tests and the fuzzer use model.h only.
 */
#ifndef DEVRES_TESTS_MODEL_INTERNAL_H
#define DEVRES_TESTS_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "model.h"

#define CAP 512	     /* entries the model can hold */
#define SOFT_MAX 128 /* past this, the next operation is a release_all */
#define POOL 8	     /* nodes allocated but on no device */
#define RING 8	     /* remembered group ids and stale pointers */
#define LOGCAP 1024  /* release callbacks in one operation */

enum kind {
	K_REL0,
	K_REL1,
	K_REL2,
	K_REL3,
	K_KMALLOC,
	K_ACT0,
	K_ACT1
};
enum etype {
	E_RES,
	E_OPEN,
	E_CLOSE
};
enum match {
	M_NONE,
	M_EQ,
	M_MOD,
	M_REENTER
};

struct ment {
	enum etype type;
	enum kind kind;
	int group;	   /* markers: the group's slot */
	void *ptr;	   /* resources: the data area (NULL for actions) */
	void *arg;	   /* actions: the argument */
	size_t size;	   /* resources: bytes of data */
	uint64_t tag;	   /* the pattern written into the data, 0 for none */
	const char *maker; /* managed memory: the call its log lines name */
};

struct mgroup {
	void *id;
	bool closed;
	bool live;
	int colour;
};

struct logent {
	enum kind kind;
	void *ptr;
	uint64_t tag;
	intptr_t aux;
};

struct run {
	struct device *dev;
	struct device *other;
	struct device uninit;
	void *foreign;
	char static_buf[32];

	struct ment list[CAP];
	int len;
	struct mgroup groups[CAP];
	struct ment pool[POOL];
	int npool;
	void *ret_ids[RING];
	int nret;
	void *stale[RING];
	int nstale;

	struct logent act[LOGCAP];
	int nact;
	struct logent exp[LOGCAP];
	int nexp;
	void *seen[CAP];
	int nseen;

	int warns;
	uint64_t serial;
	struct devres_ledger base;
	struct model_counts *counts;
	char desc[256];
	char why[512];
	bool bad;
};

/* The run in progress: the library's callbacks log into it. */
extern struct run *model_cur;
extern const char *const model_kind_names[];

/* Records the first difference of this operation; returns @ok. */
bool model_check(struct run *r, bool ok, const char *fmt, ...)
	DEVRES_PRINTF(3, 4);
/* Describes the operation, for traces and reports. */
void model_say(struct run *r, const char *fmt, ...) DEVRES_PRINTF(2, 3);

/* model.c: the model's list, groups and releases. */
bool m_match(enum match m, void *data, void *ptr);
void m_append(struct run *r, struct ment e);
void m_delete(struct run *r, int i);
int m_exp_log(struct run *r, enum kind k, void *ptr, uint64_t tag);
int m_find(struct run *r, enum kind kind, enum match m, void *data);
int m_find_action(struct run *r, enum kind kind, void *arg);
int m_find_kmalloc(struct run *r, const void *p);
int m_find_group(struct run *r, void *id);
int m_marker(struct run *r, int g, enum etype t);
int m_new_group(struct run *r, void *id);
int m_release_group(struct run *r, void *id);
int m_release_all(struct run *r);
void m_run_release(struct run *r, const struct ment *e);

/* model-ops.c: the operations, run on the library and on the model. */
void model_step(struct run *r, const uint8_t *insn);
void model_op_release_all(struct run *r);
void model_register_kinds(struct run *r);

#endif /* DEVRES_TESTS_MODEL_INTERNAL_H */
