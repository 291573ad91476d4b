// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the fuzzer's bytes are a program for the model
 * interpreter of tests/model.c (four bytes an operation). Any difference
 * between the library and the reference model aborts, so libFuzzer keeps
 * the input as a crash; ASan and UBSan catch the rest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "model.h"

/* Long programs are slow and add little: the list is capped anyway. */
#define MAX_OPS 4096

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_opts o = { .report = stderr };
	size_t nops = size / MODEL_OP_BYTES;

	if (nops > MAX_OPS)
		nops = MAX_OPS;
	if (model_run(data, nops, &o))
		abort();
	return 0;
}
