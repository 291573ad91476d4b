// SPDX-License-Identifier: MIT
/* ctest-labels: stress timeout=300 */
/*
 * Model-based random testing: seeded random programs run on the library and
 * on the reference model in tests/model.c, compared after every operation.
 *
 * MODEL_OPS sets how many operations in all (default 10^6), MODEL_SEED the
 * first seed (default fixed, so a failure reproduces), MODEL_RUN_OPS the
 * length of one program. A divergence prints the seed, shrinks the program
 * and prints the shrunk program's trace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>
#include <devres/devres.h>
#include "model.h"

static unsigned long env_ul(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
}

/* Replays @prog with a trace, after shrinking it, so the report is short. */
static void report_failure(uint64_t seed, uint8_t *prog, size_t fail_at)
{
	struct model_opts o = { .report = stderr, .trace = stderr };
	size_t n;

	fprintf(stderr,
		"model: seed %llu diverged at op %zu; shrinking "
		"(rerun with MODEL_SEED=%llu MODEL_OPS=%zu)\n",
		(unsigned long long)seed, fail_at - 1, (unsigned long long)seed,
		fail_at);
	n = model_shrink(prog, fail_at);
	fprintf(stderr, "model: shortest failing program found: %zu ops\n", n);
	model_run(prog, n, &o);
}

static void random_programs(void **state)
{
	unsigned long total = env_ul("MODEL_OPS", 1000000);
	unsigned long per_run = env_ul("MODEL_RUN_OPS", 2000);
	uint64_t seed = env_ul("MODEL_SEED", 20240601);
	struct model_counts counts = { 0 };
	struct model_opts o = { .report = stderr, .counts = &counts };
	uint8_t *prog = malloc(per_run * MODEL_OP_BYTES);
	clock_t t0 = clock();
	unsigned long done = 0;

	(void)state;
	assert_non_null(prog);
	for (uint64_t s = seed; done < total; s++) {
		size_t n = total - done < per_run ? total - done : per_run;
		size_t bad;

		model_random_program(s, prog, n);
		bad = model_run(prog, n, &o);
		if (bad) {
			report_failure(s, prog, bad > n ? n : bad);
			free(prog);
			fail_msg("library and model differ (seed %llu)",
				 (unsigned long long)s);
		}
		done += n;
	}
	free(prog);
	printf("model: %lu operations compared (seeds %llu..), %lu WARNs, "
	       "%lu release callbacks, longest list %lu, %.1f s\n",
	       counts.ops, (unsigned long long)seed, counts.warns,
	       counts.releases, counts.max_len,
	       (double)(clock() - t0) / CLOCKS_PER_SEC);
	assert_int_equal(counts.ops, total);
	/* A test that never ran an operation proves nothing. */
	if (total >= 100000) {
		for (unsigned int k = 0; k < MODEL_NR_OPS; k++)
			if (counts.per_op[k] < 100)
				fail_msg("operation %s ran only %lu times",
					 model_op_name(k), counts.per_op[k]);
		assert_true(counts.warns > total / 100);
		assert_true(counts.releases > total / 20);
	}
}

/* Hand-written programs for the subtle cases, so they run whatever the seed. */
static void fixed_programs(void **state)
{
	/* Arguments as model-ops.c decodes them (pick_id() for group ids). */
	static const uint8_t improper_nesting[][MODEL_OP_BYTES] = {
		/* group A (static id 0) with a model_rel1 node */
		{ OP_OPEN_GROUP, 1, 0, 0 },
		{ OP_ALLOC, 1, 2, 0 },
		{ OP_ADD, 0, 0, 0 },
		/* group B (static id 1) with a model_rel2 node */
		{ OP_OPEN_GROUP, 1, 1, 0 },
		{ OP_ALLOC, 2, 2, 0 },
		{ OP_ADD, 0, 0, 0 },
		/* close A: B is not wholly inside it */
		{ OP_CLOSE_GROUP, 4, 0, 0 },
		{ OP_ALLOC, 3, 2, 0 },
		{ OP_ADD, 0, 0, 0 },
		/* close B, then again: WARN */
		{ OP_CLOSE_GROUP, 12, 0, 0 },
		{ OP_CLOSE_GROUP, 12, 0, 0 },
		/* release A: B keeps its markers; model_rel2 WARNs inside */
		{ OP_RELEASE_GROUP, 4, 0, 0 },
		/* release B, then an unknown id: WARN */
		{ OP_RELEASE_GROUP, 12, 0, 0 },
		{ OP_RELEASE_GROUP, 7, 0, 0 },
		/* a NULL-id group holding a model_rel2 node, released by all */
		{ OP_ADD_ACTION, 0, 1, 0 },
		{ OP_OPEN_GROUP, 0, 0, 0 },
		{ OP_ALLOC, 2, 2, 0 },
		{ OP_ADD, 0, 0, 0 },
		{ OP_RELEASE_ALL, 0, 0, 0 },
		/* an empty list: silent */
		{ OP_RELEASE_GROUP, 0, 0, 0 },
	};

	struct model_counts counts = { 0 };
	struct model_opts o = { .report = stderr, .counts = &counts };
	size_t n = sizeof(improper_nesting) / MODEL_OP_BYTES;

	(void)state;
	assert_int_equal(model_run(&improper_nesting[0][0], n, &o), 0);
	assert_int_equal(counts.ops, n);
	assert_int_equal(counts.warns, 3);
	assert_true(counts.releases >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fixed_programs),
		cmocka_unit_test(random_programs),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
