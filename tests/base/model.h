/* SPDX-License-Identifier: MIT */
/*
 * A reference model of one device's devres list and an interpreter that runs
 * a program of operations on the library and on the model side by side,
 * comparing everything observable after each operation. Shared by
 * tests/test-model.c (seeded random programs) and fuzz/fuzz-devres.c
 * (programs made of the fuzzer's bytes).
 *
 * A program is a byte string, MODEL_OP_BYTES bytes per operation: an opcode
 * and three argument bytes. Every byte string is a valid program: arguments
 * are taken modulo what the current state offers, so a program can be cut
 * or shrunk and still run.
 */
#ifndef DEVRES_TESTS_MODEL_H
#define DEVRES_TESTS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MODEL_OP_BYTES 4

/* The opcodes: the first byte of an operation, modulo OP_NR. */
enum op {
	OP_ALLOC,
	OP_ADD,
	OP_FREE,
	OP_FIND,
	OP_GET,
	OP_REMOVE,
	OP_DESTROY,
	OP_RELEASE,
	OP_FOR_EACH,
	OP_OPEN_GROUP,
	OP_CLOSE_GROUP,
	OP_REMOVE_GROUP,
	OP_RELEASE_GROUP,
	OP_RELEASE_ALL,
	OP_ADD_ACTION,
	OP_REMOVE_ACTION,
	OP_RELEASE_ACTION,
	OP_IS_ACTION_ADDED,
	OP_KMALLOC,
	OP_KREALLOC,
	OP_KFREE,
	OP_DUMP,
	OP_BAD_DEVICE,
	OP_NR
};

#define MODEL_NR_OPS OP_NR

/* What a run did, added to by model_run() when asked. */
struct model_counts {
	unsigned long ops;		    /* operations compared */
	unsigned long warns;		    /* WARNs predicted and seen */
	unsigned long releases;		    /* release callbacks compared */
	unsigned long max_len;		    /* longest list seen */
	unsigned long per_op[MODEL_NR_OPS]; /* operations by opcode */
};

struct model_opts {
	FILE *report; /* where a divergence is described, or NULL */
	FILE *trace;  /* where every operation is printed, or NULL */
	struct model_counts *counts; /* or NULL */
};

/*
 * Runs @nops operations of @prog on a fresh device and on the model, then
 * releases everything and checks that nothing leaked.
 *
 * Return: 0 when library and model agreed throughout; otherwise 1 + the
 * index of the first operation where they differed (@nops + 1 when they
 * differed in the final teardown).
 */
size_t model_run(const uint8_t *prog, size_t nops, const struct model_opts *o);

/* The name of opcode @op, for reports. */
const char *model_op_name(unsigned int op);

/* Fills @prog with @nops operations drawn, with sensible weights, from @seed. */
void model_random_program(uint64_t seed, uint8_t *prog, size_t nops);

/*
 * Shrinks a failing program: drops chunks of operations while the program
 * still fails. @nops is the length of the failing prefix.
 *
 * Return: the new number of operations.
 */
size_t model_shrink(uint8_t *prog, size_t nops);

#endif /* DEVRES_TESTS_MODEL_H */
