/* SPDX-License-Identifier: MIT */
/*
 * What test-hostile-args and test-kc-hostile-args share: how a generated
 * call's result is classified (gen-args.py writes RES_* and struct
 * arg_case), the verdicts a child exits with, a WARN counter that reads
 * the lines, and the runner that makes each call, with each bad value,
 * in a child of its own and reports each failure as the call that made
 * it. What a test allows (NULL where it has a meaning, a refusal without
 * a WARN) it says in its own child function.
 */
#ifndef DEVRES_TESTS_HOSTILE_ARGS_H
#define DEVRES_TESTS_HOSTILE_ARGS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include "hostile/thread-watch.h"

/* What a call returned, as the generated calls classify it. */
enum {
	RES_ERR,
	RES_OK,
	RES_VOID,
	RES_NULL,
	RES_ZERO,
	RES_POS
};

/* A child's exit status: 0, or what went wrong. */
enum verdict {
	V_PASS,
	V_NO_WARN = 10,
	V_MANY_WARNS,
	V_SUCCEEDED,
	V_WARNED_ON_NULL,
	V_COUNT_MISSED,
	V_FIXTURE = 20,
	V_THREAD_LEAK, /* a thread left neither joined nor detached */
};

struct arg_case {
	const char *func;
	const char *arg;
	int (*call)(void *bad);
};

/* The bad values, in the order a child is given their index. */
#define HOSTILE_NBAD 3
static void *const hostile_bad[HOSTILE_NBAD] = { NULL,
						 (void *)(intptr_t)-EINVAL,
						 (void *)16 };
static const char *const hostile_bad_names[HOSTILE_NBAD] = { "NULL",
							     "ERR_PTR(-EINVAL)",
							     "(void *)16" };

/*
 * The thread watch catches a thread left neither joined nor detached
 * (a self-test in a child: a check that saw nothing would pass every
 * cell).
 */
static inline void test_thread_watch(void **state)
{
	(void)state;
	assert_int_equal(thread_watch_self_test(), 0);
}

static inline bool in_list(const char *const *list, size_t n, const char *f)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], f))
			return true;
	return false;
}
#define IN(list, f) in_list(list, sizeof(list) / sizeof((list)[0]), f)

static int warns;

/* Counts WARNs by their lines, without the library's counter's help. */
static inline void count_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0)
		warns++;
}

static const char *const verdict_names[] = {
	[V_NO_WARN] = "no WARN",
	[V_MANY_WARNS] = "more than one WARN",
	[V_SUCCEEDED] = "returned success",
	[V_WARNED_ON_NULL] = "WARNed on a NULL the contract allows",
	[V_COUNT_MISSED] = "the WARN counter missed a WARN",
	[V_FIXTURE] = "fixture failed",
	[V_THREAD_LEAK] = "left a thread neither joined nor detached",
};

/* A fake PCI function named @name: one memory BAR of a page. */
static inline struct pci_fake_dev hostile_fake_dev(const char *name)
{
	struct pci_fake_dev d = {
		.name = name,
		.vendor = 0x1af4,
		.device = 0x1041,
		.class = 0x020000,
		.irq = 11,
	};

	d.bar_size[0] = 4096;
	d.bar_flags[0] = IORESOURCE_MEM;
	return d;
}

/*
 * The PCI device of the fake tree @tree, for the calls that take one: the
 * parent makes the tree, the child that first needs the device scans it
 * (a child that cannot ends with V_FIXTURE).
 */
static inline struct pci_dev *hostile_pci_dev(struct pci_fake *tree)
{
	static struct pci_dev *p;

	if (!p) {
		if (pci_sysfs_set_root(pci_fake_root(tree)) ||
		    pci_bus_scan() != 1)
			_exit(V_FIXTURE);
		p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	}
	return p;
}

/*
 * Calls @child(@c, b) in a child process for each bad value b of each of
 * the @n cases that @left_out (if given) does not leave out; the child's
 * exit status is its verdict. A crash is the child's death, not cmocka's:
 * the signals cmocka catches are the default ones there; @alarm_s, if not
 * 0, ends a child that hangs; a child that leaves a thread neither joined
 * nor detached fails (thread-watch.h). Prints each failure; *ret_ran is
 * the number of calls made. Return: the number that failed.
 */
static inline int hostile_run_all(const struct arg_case *cases, size_t n,
				  bool (*left_out)(const struct arg_case *c),
				  int (*child)(const struct arg_case *c, int b),
				  unsigned int alarm_s, int *ret_ran)
{
	int failed = 0, ran = 0;

	for (size_t i = 0; i < n; i++) {
		const struct arg_case *c = &cases[i];

		if (left_out && left_out(c))
			continue;
		for (int b = 0; b < HOSTILE_NBAD; b++) {
			int status, v;
			pid_t pid;

			fflush(NULL);
			pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				signal(SIGSEGV, SIG_DFL);
				signal(SIGBUS, SIG_DFL);
				signal(SIGILL, SIG_DFL);
				signal(SIGFPE, SIG_DFL);
				signal(SIGABRT, SIG_DFL);
				if (alarm_s)
					alarm(alarm_s);
				v = child(c, b);
				if (!v && thread_watch_leaks(c->func))
					v = V_THREAD_LEAK;
				_exit(v);
			}
			assert_int_equal(waitpid(pid, &status, 0), pid);
			ran++;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				continue;
			failed++;
			v = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
			if (WIFSIGNALED(status))
				fprintf(stderr, "FAIL %s(%s = %s): signal %d\n",
					c->func, c->arg, hostile_bad_names[b],
					WTERMSIG(status));
			else if (v >= V_NO_WARN && v <= V_THREAD_LEAK &&
				 verdict_names[v])
				fprintf(stderr, "FAIL %s(%s = %s): %s\n",
					c->func, c->arg, hostile_bad_names[b],
					verdict_names[v]);
			else
				fprintf(stderr, "FAIL %s(%s = %s): exit %d\n",
					c->func, c->arg, hostile_bad_names[b],
					v);
		}
	}
	*ret_ran = ran;
	return failed;
}

#endif /* DEVRES_TESTS_HOSTILE_ARGS_H */
