// SPDX-License-Identifier: MIT
/* ctest-labels: hostile shared-only timeout=300 */
/*
 * A signal handler at every instruction of the library on a thread's way
 * into, through and out of a device's devres lock, in each state the lock
 * can be in: the device's first lock ever (no bias yet), the lock biased
 * to the thread, shared (the bias revoked), and biased to another thread
 * (the thread revokes it).
 *
 * The thread calls devres_find() with a match callback on the device; the
 * callback raises a probe signal whose handler adds a node to the same
 * device, which must be refused with one WARN: its thread holds the lock.
 * Into that run, the parent, tracing it with ptrace(), injects another
 * handler at one instruction of the library's: it adds a node to the same
 * device, which works when the thread holds nothing and is refused with
 * one WARN when it does. One child a point: the parent single-steps a
 * first child to record the instructions, then stops each further child
 * at the n-th execution of one of them with a breakpoint and delivers the
 * handler there. A handler that got the device's first lock, and with it
 * the bias, for its own thread while the thread was on its way into the
 * lock's slow path once let the probe in, and the thread's list changed
 * under it.
 *
 * An instruction run many times (a loop) takes the handler at its first
 * and last run (STEPS_ALL=1: at every run, and every point under
 * AddressSanitizer). STEPS_ONLY=k takes the k-th
 * step's point alone, STEPS_VERBOSE=1 keeps the children's WARNs and
 * prints their counts. x86-64 only (the breakpoint and the registers).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"

enum lock_state {
	FIRST,
	MINE,
	SHARED,
	ELSEWHERE,
	NSTATES
};

/*
 * What the traced thread does: a lookup whose match callback probes the
 * lock, or a small allocation from the device's slab, given back.
 */
enum op {
	OP_FIND,
	OP_KMALLOC,
	NOPS
};

static const char *const op_names[NOPS] = {
	"devres_find()",
	"devm_kmalloc(32)/devm_kfree()",
};

static const char *const state_names[NSTATES] = {
	"first lock (no bias)",
	"biased to the thread",
	"shared (bias revoked)",
	"biased to another thread",
};

/* ---- The child ---- */

static struct device sdev;
static volatile sig_atomic_t in_cs;
static volatile sig_atomic_t inj_ran, inj_ok, inj_refused, inj_wrong;
static volatile sig_atomic_t probe_refused, probe_wrong;
/* Inside the probe: no point is taken there (it holds the handler off). */
static volatile long in_probe;

static void rel(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void rel_probe(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/*
 * Adds a node of @release to sdev: 0 listed, 1 refused (one WARN), -1.
 * The node itself may be refused: in an AddressSanitizer build, whose
 * node cache is a quarantine, the thread's devm_kmalloc() goes to
 * malloc() for the cache, and a handler there has no chunk (U14).
 */
static int try_add(dr_release_t release)
{
	int w = devres_warn_count();
	void *p = devres_alloc(release, 8, 0);

	if (!p)
		return devres_warn_count() == w + 1 ? 1 : -1;
	devres_add(&sdev, p);
	if (devres_warn_count() == w)
		return 0;
	devres_free(p);
	return devres_warn_count() == w + 1 ? 1 : -1;
}

/*
 * Injected by the parent anywhere: a node, and where that worked (the
 * thread holds nothing), a small allocation given back, from the slab the
 * thread may be in the middle of.
 */
static void on_inject(int sig)
{
	int saved = errno, cs = in_cs, w, r;
	unsigned char *p;

	(void)sig;
	inj_ran++;
	r = try_add(rel);
	if (r == 0 && !cs) {
		w = devres_warn_count();
		p = devm_kmalloc(&sdev, 32, 0);
		if (p && devres_warn_count() == w) {
			memset(p, 0x5a, 32);
			devm_kfree(&sdev, p);
			inj_ok++;
		} else {
			inj_wrong++;
		}
	} else if (r == 1) {
		inj_refused++;
	} else {
		inj_wrong++;
	}
	errno = saved;
}

/* Raised by the match callback: its thread holds the lock. */
static void on_probe(int sig)
{
	int saved = errno;

	(void)sig;
	in_probe = 1;
	if (try_add(rel_probe) == 1)
		probe_refused++;
	else
		probe_wrong++;
	in_probe = 0;
	errno = saved;
}

static int match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	in_cs = 1;
	raise(SIGUSR2);
	in_cs = 0;
	return 0;
}

static int gate[2];
static int other_listed;

/* The other thread: lists a node first, so that the bias is its own. */
static void *other_thread(void *arg)
{
	char c;

	(void)arg;
	if (try_add(rel))
		return (void *)1;
	__atomic_store_n(&other_listed, 1, __ATOMIC_RELEASE);
	/* Asleep, outside the lock, while the traced thread revokes. */
	while (read(gate[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void *sharer_thread(void *arg)
{
	(void)arg;
	return devres_find(&sdev, rel, NULL, NULL) ? NULL : (void *)1;
}

#define BAD_SETUP 1
#define BAD_PROBE 2	/* the probe got in, or was refused wrongly */
#define BAD_INJECT 4	/* the injected handler neither worked nor refused */
#define BAD_NO_MATCH 8	/* the match callback never ran */
#define BAD_WARNS 16	/* a WARN that is no refusal */
#define BAD_LIST 32	/* devres_check() */
#define BAD_LEDGER 64	/* not at its baseline */
#define BAD_NOT_RUN 128 /* the injection never ran */
#define BAD_CHUNK 256	/* the thread's chunk changed under it */

static int child(enum lock_state st, enum op op, bool inject)
{
	struct devres_ledger base, now;
	struct sigaction sa;
	pthread_t t = 0;
	int bad = 0, w0;
	void *ret = NULL;

	devres_ledger_snapshot(&base);
	if (init_dev(&sdev, "steps-dev") || pipe(gate))
		return BAD_SETUP;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_inject;
	sigaction(SIGUSR1, &sa, NULL);
	/*
	 * The probe counts the WARNs of its own call: a handler injected
	 * into it waits until it is over (still inside the thread's lock).
	 */
	sa.sa_handler = on_probe;
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaction(SIGUSR2, &sa, NULL);
	switch (st) {
	case FIRST:
		/* Its kind known, which needs no lock: devres_find() looks. */
		devres_free(devres_alloc(rel, 8, 0));
		break;
	case MINE:
		if (try_add(rel))
			return BAD_SETUP;
		break;
	case SHARED:
		if (try_add(rel) ||
		    pthread_create(&t, NULL, sharer_thread, NULL) ||
		    pthread_join(t, &ret) || ret)
			return BAD_SETUP;
		t = 0;
		break;
	case ELSEWHERE:
		if (pthread_create(&t, NULL, other_thread, NULL))
			return BAD_SETUP;
		/* Its node listed: the bias is its own. */
		while (!__atomic_load_n(&other_listed, __ATOMIC_ACQUIRE))
			usleep(100);
		break;
	default:
		return BAD_SETUP;
	}
	w0 = devres_warn_count();
	raise(SIGSTOP);
	if (op == OP_FIND) {
		(void)devres_find(&sdev, rel, match, NULL);
	} else {
		unsigned char *p = devm_kmalloc(&sdev, 32, 0);

		if (!p)
			return BAD_SETUP;
		memset(p, 0xa5, 32);
		for (int i = 0; i < 32; i++)
			if (p[i] != 0xa5)
				bad |= BAD_CHUNK;
		devm_kfree(&sdev, p);
	}
	raise(SIGSTOP);
	if (t) {
		if (write(gate[1], "", 1) != 1 || pthread_join(t, &ret) || ret)
			bad |= BAD_SETUP;
	}
	if (probe_wrong)
		bad |= BAD_PROBE;
	if (inj_wrong)
		bad |= BAD_INJECT;
	/* The injected handler's node, listed first, finds the match too. */
	if (op == OP_FIND && st != FIRST && !probe_refused)
		bad |= BAD_NO_MATCH;
	if (devres_warn_count() - w0 != probe_refused + inj_refused)
		bad |= BAD_WARNS;
	if (devres_check(&sdev))
		bad |= BAD_LIST;
	if (inject && !inj_ran)
		bad |= BAD_NOT_RUN;
	if (getenv("STEPS_VERBOSE"))
		fprintf(stderr,
			"child: injected %d (%d worked, %d refused, %d wrong), "
			"probes %d refused, %d wrong, %d WARNs\n",
			(int)inj_ran, (int)inj_ok, (int)inj_refused,
			(int)inj_wrong, (int)probe_refused, (int)probe_wrong,
			devres_warn_count() - w0);
	devres_release_all(&sdev);
	put_device(&sdev);
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&base, &now, NULL))
		bad |= BAD_LEDGER;
	return bad;
}

/* ---- The parent ---- */

#if !defined(__x86_64__)
int main(void)
{
	return 77;
}
#else

static pid_t start(enum lock_state st, enum op op, bool inject)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* The refusals' WARNs, thousands of them. */
		if (null >= 0 && !getenv("STEPS_VERBOSE"))
			dup2(null, STDERR_FILENO);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(BAD_SETUP);
		_exit(child(st, op, inject));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP)
		fail_msg("%s: the child did not come to its start (0x%x)",
			 state_names[st], status);
	return pid;
}

static int finish(pid_t pid, int sig)
{
	int status;

	for (;;) {
		assert_int_equal(
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSTOPPED(status))
			return status;
		sig = WSTOPSIG(status) == SIGSTOP ? 0 : WSTOPSIG(status);
	}
}

static unsigned long rip_of(pid_t pid)
{
	struct user_regs_struct r;

	assert_int_equal(ptrace(PTRACE_GETREGS, pid, NULL, &r), 0);
	return r.rip;
}

static void set_rip(pid_t pid, unsigned long rip)
{
	struct user_regs_struct r;

	assert_int_equal(ptrace(PTRACE_GETREGS, pid, NULL, &r), 0);
	r.rip = rip;
	assert_int_equal(ptrace(PTRACE_SETREGS, pid, NULL, &r), 0);
}

/* The library's code: the executable mapping that holds devres_find(). */
static unsigned long lib_lo, lib_hi;

static void find_library(void)
{
	unsigned long at = (unsigned long)(uintptr_t)&devres_find, lo, hi;
	char line[512], perm[8];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) == 3 &&
		    perm[2] == 'x' && lo <= at && at < hi) {
			lib_lo = lo;
			lib_hi = hi;
		}
	fclose(f);
	assert_true(lib_lo && lib_hi);
}

static long peek(pid_t pid, unsigned long at)
{
	long w;

	errno = 0;
	w = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, NULL);
	assert_int_equal(errno, 0);
	return w;
}

#define MAX_STEPS 400000

/*
 * Every point in a dev build; every fourth under AddressSanitizer, whose
 * instrumented code has three times the points (the paths are the dev
 * build's, checked for memory errors) and whose children cost more.
 */
#ifdef T_ASAN
#define STRIDE 4
#else
#define STRIDE 1
#endif

/* The instructions of a run with nothing injected, single-stepped. */
static size_t record(enum lock_state st, enum op op, unsigned long *ip)
{
	pid_t pid = start(st, op, false);
	size_t n = 0;
	int status, sig = 0;

	for (;;) {
		assert_int_equal(ptrace(PTRACE_SINGLESTEP, pid, NULL,
					(void *)(long)sig),
				 0);
		sig = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSTOPPED(status));
		if (WSTOPSIG(status) == SIGSTOP)
			break;
		if (WSTOPSIG(status) != SIGTRAP) {
			sig = WSTOPSIG(status);
			continue;
		}
		assert_true(n < MAX_STEPS);
		ip[n++] = peek(pid, (unsigned long)(uintptr_t)&in_probe)
				  ? 0
				  : rip_of(pid);
	}
	status = finish(pid, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s: a run with nothing injected failed (0x%x)",
			 state_names[st], status);
	return n;
}

static void poke(pid_t pid, unsigned long at, long w)
{
	assert_int_equal(ptrace(PTRACE_POKETEXT, pid, (void *)at, (void *)w),
			 0);
}

/*
 * A child run to the @nth execution of the instruction at @at, where the
 * handler is delivered; its exit status.
 */
static int inject_at(enum lock_state st, enum op op, unsigned long at,
		     size_t nth)
{
	pid_t pid = start(st, op, true);
	long orig = peek(pid, at), trap = (orig & ~0xffL) | 0xcc;
	size_t hits = 0;
	int status, sig = 0;

	poke(pid, at, trap);
	for (;;) {
		assert_int_equal(
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig), 0);
		sig = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSTOPPED(status))
			fail_msg("%s: lib+0x%lx, execution %zu: the child "
				 "ended before it (0x%x)",
				 state_names[st], at - lib_lo, nth, status);
		if (WSTOPSIG(status) == SIGSTOP)
			continue;
		if (WSTOPSIG(status) != SIGTRAP) {
			sig = WSTOPSIG(status);
			continue;
		}
		assert_true(rip_of(pid) == at + 1);
		set_rip(pid, at);
		poke(pid, at, orig);
		if (++hits == nth)
			return finish(pid, SIGUSR1);
		/* Over it, and the breakpoint back. */
		assert_int_equal(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSTOPPED(status));
		if (WSTOPSIG(status) != SIGTRAP)
			sig = WSTOPSIG(status);
		poke(pid, at, trap);
	}
}

static void every_instruction(enum lock_state st, enum op op)
{
	unsigned long *ip = calloc(MAX_STEPS, sizeof(*ip));
	size_t n, points = 0, failed = 0;
	/* STEPS_ONLY=k: the k-th step's instruction only. */
	const char *only = getenv("STEPS_ONLY");
	/* STEPS_ALL=1: every execution of an instruction in a loop. */
	bool all = getenv("STEPS_ALL");
	size_t stride = STRIDE, seen = 0;

	assert_non_null(ip);
	n = record(st, op, ip);
	for (size_t k = 0; k < n; k++) {
		size_t nth = 0, later = 0;
		int status;

		if (ip[k] < lib_lo || ip[k] >= lib_hi ||
		    (only && strtoul(only, NULL, 10) != k))
			continue;
		for (size_t j = 0; j < n; j++)
			if (ip[j] == ip[k])
				*(j <= k ? &nth : &later) += 1;
		/*
		 * An instruction run again and again (a loop: carving a
		 * block, walking a list) at its first and last run only: the
		 * runs between are alike.
		 */
		if (!all && nth > 1 && later)
			continue;
		if (!all && seen++ % stride)
			continue;
		points++;
		status = inject_at(st, op, ip[k], nth);
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			continue;
		if (failed++ < 10)
			print_message("%s, %s: handler at lib+0x%lx, execution "
				      "%zu (step %zu): %s 0x%x\n",
				      op_names[op], state_names[st],
				      ip[k] - lib_lo, nth, k,
				      WIFEXITED(status) ? "failed"
							: "killed by signal",
				      WIFEXITED(status) ? WEXITSTATUS(status)
							: WTERMSIG(status));
	}
	print_message("%s, %s: %zu instructions stepped, a handler at each "
		      "of the library's %zu: %zu failed\n",
		      op_names[op], state_names[st], n, points, failed);
	free(ip);
	assert_true(points > 0);
	assert_int_equal(failed, 0);
}

static void find_first_lock(void **state)
{
	(void)state;
	every_instruction(FIRST, OP_FIND);
}

static void find_biased_to_the_thread(void **state)
{
	(void)state;
	every_instruction(MINE, OP_FIND);
}

static void find_shared(void **state)
{
	(void)state;
	every_instruction(SHARED, OP_FIND);
}

static void find_biased_to_another_thread(void **state)
{
	(void)state;
	every_instruction(ELSEWHERE, OP_FIND);
}

/* The slab is made in the first one; a shared device's has shards. */
static void kmalloc_first_lock(void **state)
{
	(void)state;
	every_instruction(FIRST, OP_KMALLOC);
}

static void kmalloc_biased_to_the_thread(void **state)
{
	(void)state;
	every_instruction(MINE, OP_KMALLOC);
}

static void kmalloc_shared(void **state)
{
	(void)state;
	every_instruction(SHARED, OP_KMALLOC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(find_first_lock),
		cmocka_unit_test(find_biased_to_the_thread),
		cmocka_unit_test(find_shared),
		cmocka_unit_test(find_biased_to_another_thread),
		cmocka_unit_test(kmalloc_first_lock),
		cmocka_unit_test(kmalloc_biased_to_the_thread),
		cmocka_unit_test(kmalloc_shared),
	};

	/* A backtrace allocates: a handler's WARN must not. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	find_library();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
