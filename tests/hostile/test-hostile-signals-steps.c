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
 * Two states more are contended, with another thread of the child, not
 * traced, made deterministic (see struct contend): the lock held by the
 * other thread when the thread comes (it spins, sleeps, is due, sleeps on
 * its ticket and is stopped there, and takes the lock handed over to it
 * with its grace), and the lock held by the thread while the other waits
 * as due (the thread's unlock hands it over). Left out, as timing decides
 * them under a tracer: a waiter woken from its first sleep (every traced
 * run is slower than DUE_NS there), a starving waiter and its hand-over
 * (STARVE_NS, HAND_LOOKS pauses), and a release that wakes a waiter not
 * yet due.
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
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"
#include "ptrace-steps.h"
#include "membarrier-early.h"

enum lock_state {
	FIRST,
	MINE,
	SHARED,
	ELSEWHERE,
	HELD_DUE,
	HANDS_DUE,
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
	"held by another thread: due, handed over",
	"a due waiter: handed over by the unlock",
};

/* ---- The child ---- */

static struct device sdev;
static volatile sig_atomic_t in_cs;
static volatile sig_atomic_t inj_ran, inj_ok, inj_refused, inj_wrong;
static volatile sig_atomic_t probe_refused, probe_wrong;
/* Inside the probe: no point is taken there (it holds the handler off). */
static volatile long in_probe;
/* Inside the injected handler. */
static volatile long in_handler;

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

	/*
	 * Its thread in malloc() for the node cache, which has no chunk
	 * to give: refused too (U14), as an ASan build's node, which the
	 * cache serves, can be while its thread takes one.
	 */
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
	in_handler = 1;
	inj_ran++;
	r = try_add(rel);
	if (r == 0 && !cs) {
		w = devres_warn_count();
		p = devm_kmalloc(&sdev, 32, 0);
		if (p && devres_warn_count() == w) {
			memset(p, 0x5a, 32);
			devm_kfree(&sdev, p);
			inj_ok++;
		} else if (!p && devres_warn_count() == w + 1) {
			/* Its thread is in malloc() for the node cache (U14). */
			inj_refused++;
		} else {
			inj_wrong++;
		}
	} else if (r == 1) {
		inj_refused++;
	} else {
		inj_wrong++;
	}
	in_handler = 0;
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

/*
 * The contended states, with another thread B of the child, not traced:
 * B holds the device's lock when the traced thread T comes (HELD_DUE), or
 * comes while T holds it (HANDS_DUE). The parent lets B go, or T on, once
 * the waiter is due (its ticket in the lock word: it has waited DUE_NS
 * without the lock), so that timing decides nothing on T's side: the
 * recorded run and every injected run take the same path. The page is the parent's, mapped
 * before the fork; the parent holds the pipe's other end.
 */
struct contend {
	int b_holding; /* B holds the lock, T may come (HELD_DUE) */
	int b_go;      /* T holds the lock, B may come (HANDS_DUE) */
	int release;   /* the parent: B lets go (HELD_DUE) */
	int b_done;    /* B's call is over */
	int b_trapped; /* B ran into the parent's breakpoint */
};

static struct contend *shm;

/*
 * HELD_DUE: T's clock, for the library's looks at it (lock.c's mono_ns())
 * from its call on, outside the handlers: its second look sees the time
 * of its first, so that T's first look at its wait never finds it due
 * however slowly it is traced; it sleeps (until DUE_NS have passed, by
 * the kernel's clock), and its next look finds it due.
 */
static __thread bool clock_held;
static __thread int clock_looks;
static __thread struct timespec clock_first;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int r = (int)syscall(SYS_clock_gettime, id, ts);

	if (r || !clock_held || in_handler || in_probe)
		return r;
	if (++clock_looks == 1)
		clock_first = *ts;
	else if (clock_looks == 2)
		*ts = clock_first;
	return r;
}
static int go_pipe[2] = { -1, -1 };
static volatile sig_atomic_t t_waits_once;

static int match(struct device *dev, void *res, void *data)
{
	char c;

	(void)dev;
	(void)res;
	(void)data;
	in_cs = 1;
	raise(SIGUSR2);
	if (t_waits_once) {
		/* Inside the lock until B is due. */
		t_waits_once = 0;
		__atomic_store_n(&shm->b_go, 1, __ATOMIC_RELEASE);
		while (read(go_pipe[0], &c, 1) < 0 && errno == EINTR)
			;
	}
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

/*
 * B, untraced, runs into a breakpoint the parent put in for T (an
 * instruction both run): it waits until the parent has taken it out, and
 * runs the instruction then.
 */
static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	const volatile unsigned char *at =
		(const unsigned char *)uc->uc_mcontext.gregs[REG_RIP] - 1;
	struct timespec ts = { 0, 50000 };

	(void)sig;
	(void)si;
	__atomic_add_fetch(&shm->b_trapped, 1, __ATOMIC_RELAXED);
	while (*at == 0xcc)
		nanosleep(&ts, NULL);
	uc->uc_mcontext.gregs[REG_RIP]--;
}

static void wait_gate(void)
{
	char c;

	while (read(gate[0], &c, 1) < 0 && errno == EINTR)
		;
}

static int hold_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	__atomic_store_n(&shm->b_holding, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&shm->release, __ATOMIC_ACQUIRE))
		usleep(100);
	return 0;
}

/* HELD_DUE: B revokes T's bias and holds the lock until told. */
static void *holder_thread(void *arg)
{
	(void)arg;
	(void)devres_find(&sdev, rel, hold_match, NULL);
	__atomic_store_n(&shm->b_done, 1, __ATOMIC_RELEASE);
	wait_gate();
	return NULL;
}

/* HANDS_DUE: B comes once T holds the lock, and waits until handed it. */
static void *waiter_thread(void *arg)
{
	void *ret;

	(void)arg;
	while (!__atomic_load_n(&shm->b_go, __ATOMIC_ACQUIRE))
		usleep(100);
	ret = devres_find(&sdev, rel, NULL, NULL) ? NULL : (void *)1;
	__atomic_store_n(&shm->b_done, 1, __ATOMIC_RELEASE);
	wait_gate();
	return ret;
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
		/* Registered before the other thread's first lock. */
		membarrier_early();
		if (pthread_create(&t, NULL, other_thread, NULL))
			return BAD_SETUP;
		/* Its node listed: the bias is its own. */
		while (!__atomic_load_n(&other_listed, __ATOMIC_ACQUIRE))
			usleep(100);
		break;
	case HELD_DUE:
		sa.sa_sigaction = on_trap;
		sa.sa_flags = SA_SIGINFO;
		if (try_add(rel) || sigaction(SIGTRAP, &sa, NULL) ||
		    pthread_create(&t, NULL, holder_thread, NULL))
			return BAD_SETUP;
		while (!__atomic_load_n(&shm->b_holding, __ATOMIC_ACQUIRE))
			usleep(100);
		break;
	case HANDS_DUE:
		sa.sa_sigaction = on_trap;
		sa.sa_flags = SA_SIGINFO;
		if (op != OP_FIND || try_add(rel) ||
		    sigaction(SIGTRAP, &sa, NULL) ||
		    pthread_create(&t, NULL, sharer_thread, NULL) ||
		    pthread_join(t, &ret) || ret)
			return BAD_SETUP;
		t_waits_once = 1;
		if (pthread_create(&t, NULL, waiter_thread, NULL))
			return BAD_SETUP;
		break;
	default:
		return BAD_SETUP;
	}
	w0 = devres_warn_count();
	raise(SIGSTOP);
	clock_held = st == HELD_DUE;
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
	clock_held = false;
	/* The end of the recorded run: an injected one runs to its end. */
	if (!inject)
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
	if ((st == HELD_DUE || st == HANDS_DUE) &&
	    !__atomic_load_n(&shm->b_done, __ATOMIC_ACQUIRE))
		bad |= BAD_SETUP;
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

/*
 * The run of a child in a contended state: whether the waiter was seen
 * due and let go on, and the breakpoint while it is in.
 */
static struct {
	enum lock_state st;
	pid_t pid;
	bool done;
	bool armed;
	bool b_out;   /* HANDS_DUE: out for B (let_t_on()) */
	int stop_sig; /* HELD_DUE: stops T asleep; SIGUSR1: the handler */
	unsigned long at;
	long orig;
} run;

static pid_t start(enum lock_state st, enum op op, bool inject)
{
	int status;
	pid_t pid;

	memset(shm, 0, sizeof(*shm));
	memset(&run, 0, sizeof(run));
	run.st = st;
	run.stop_sig = SIGWINCH;
	/* A pipe a child: nothing left in it by the last. */
	if (go_pipe[1] >= 0)
		close(go_pipe[1]);
	assert_int_equal(pipe2(go_pipe, O_CLOEXEC), 0);
	pid = fork();

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
	close(go_pipe[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP)
		fail_msg("%s: the child did not come to its start (0x%x)",
			 state_names[st], status);
	run.pid = pid;
	return pid;
}

/*
 * Whether a waiter of the child's device is due: its ticket is in the
 * lock word (node.h: the next ticket in bits 8 to 19, the one served in
 * 20 to 31). It sleeps on it, or is on its way to: its FUTEX_WAIT finds
 * the word changed then, and the same path follows.
 */
static bool waiter_due(pid_t pid)
{
	unsigned int v;
	struct iovec mine = { &v, sizeof(v) };
	struct iovec theirs = { &sdev.devres_lock, sizeof(v) };

	assert_int_equal(process_vm_readv(pid, &mine, 1, &theirs, 1, 0),
			 (ssize_t)sizeof(v));
	return ((v >> 8) - (v >> 20)) & 0xfffu;
}

/*
 * Whether T sleeps in FUTEX_WAIT (read once it is due: reading a running
 * thread's system call waits until it is off its CPU). A due T stopped
 * before its sleep would find the lock handed over at its next look, and
 * take it with a look fewer than one that slept.
 */
static bool t_asleep(pid_t pid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return strtol(buf, NULL, 10) == SYS_futex;
}

/*
 * HELD_DUE, T due and asleep: T stopped (its FUTEX_WAIT interrupted, and
 * begun again when it goes on: the word changed, EAGAIN), the breakpoint
 * taken out while B lets go (B hands the lock over to T's ticket).
 * Whether @status, T's stop, is its caller's: a single step's report
 * comes before the signal's stop (which wait_stop() passes over).
 */
static bool release_holder(pid_t pid, int *status)
{
	assert_int_equal(syscall(SYS_tgkill, pid, pid, run.stop_sig), 0);
	assert_int_equal(waitpid(pid, status, 0), pid);
	assert_true(WIFSTOPPED(*status));
	if (run.armed)
		poke(pid, run.at, run.orig);
	__atomic_store_n(&shm->release, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&shm->b_done, __ATOMIC_ACQUIRE))
		usleep(50);
	if (run.armed)
		poke(pid, run.at, (run.orig & ~0xffL) | 0xcc);
	return WSTOPSIG(*status) != run.stop_sig;
}

/*
 * HANDS_DUE: B runs into T's breakpoint on its way to the lock while T
 * waits for it, in the match callback, outside the library: out until B
 * is due, and T goes on.
 */
static void let_t_on(pid_t pid)
{
	if (run.b_out)
		poke_running(pid, run.at, 0xcc);
	assert_int_equal(write(go_pipe[1], "", 1), 1);
}

/*
 * The child's next stop, after ptrace(@req). In a contended state, until
 * the waiter is seen due, T may block: the wait looks at the lock word
 * meanwhile, and lets B go (HELD_DUE) or T on (HANDS_DUE).
 */
static void wait_stop(pid_t pid, int *status, enum __ptrace_request req)
{
	for (unsigned int k = 0;; k++) {
		pid_t r;

		if (run.st != HELD_DUE && run.st != HANDS_DUE) {
			assert_int_equal(waitpid(pid, status, 0), pid);
			return;
		}
		r = run.done ? waitpid(pid, status, 0)
			     : waitpid(pid, status, WNOHANG);
		assert_true(r >= 0);
		if (r == pid) {
			/* The stop that interrupted T's sleep. */
			if (!WIFSTOPPED(*status) ||
			    WSTOPSIG(*status) != SIGWINCH)
				return;
			assert_int_equal(ptrace(req, pid, NULL, NULL), 0);
			continue;
		}
		/* A single step's report comes within a few yields. */
		if (k < 16) {
			sched_yield();
			continue;
		}
		if (run.st == HANDS_DUE && run.armed && !run.b_out &&
		    __atomic_load_n(&shm->b_trapped, __ATOMIC_RELAXED)) {
			poke_running(pid, run.at, (unsigned char)run.orig);
			run.b_out = true;
		}
		if (run.st == HELD_DUE && waiter_due(pid) && t_asleep(pid)) {
			run.done = true;
			if (release_holder(pid, status))
				return;
			assert_int_equal(
				ptrace(req, pid, NULL,
				       (void *)(long)(run.stop_sig == SIGUSR1
							      ? SIGUSR1
							      : 0)),
				0);
		} else if (run.st == HANDS_DUE && waiter_due(pid)) {
			run.done = true;
			let_t_on(pid);
		} else {
			/* The waiter sleeps DUE_NS before it is due. */
			usleep(req == PTRACE_SINGLESTEP ? 250 : 1000);
		}
	}
}

static int finish(pid_t pid, int sig)
{
	int status;

	for (;;) {
		assert_int_equal(
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig), 0);
		wait_stop(pid, &status, PTRACE_CONT);
		if (!WIFSTOPPED(status))
			return status;
		sig = WSTOPSIG(status) == SIGSTOP ? 0 : WSTOPSIG(status);
	}
}

#define MAX_STEPS 400000

/*
 * Every point in a dev build; every sixteenth under AddressSanitizer,
 * whose instrumented code has three times the points (the paths are the
 * dev build's, checked for memory errors: every size from the node cache)
 * and whose children cost ten times as much to fork and run.
 */
#ifdef T_ASAN
#define STRIDE 16
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
		wait_stop(pid, &status, PTRACE_SINGLESTEP);
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
	run.at = at;
	run.orig = orig;
	run.armed = true;
	for (;;) {
		assert_int_equal(
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig), 0);
		sig = 0;
		wait_stop(pid, &status, PTRACE_CONT);
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
		run.armed = false;
		if (++hits == nth)
			return finish(pid, SIGUSR1);
		/* Over it, and the breakpoint back. */
		assert_int_equal(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSTOPPED(status));
		if (WSTOPSIG(status) != SIGTRAP)
			sig = WSTOPSIG(status);
		poke(pid, at, trap);
		run.armed = true;
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
	/*
	 * What make check takes (make soak, with STEPS_ALL=1, takes every
	 * point): every point of the lookups in the uncontended states;
	 * every second one of the small allocations, whose way through the
	 * lock is the lookup's (the rest is the slab's); every fourth one
	 * of the contended states, which cost a sleep of DUE_NS each, and
	 * every eighth of the allocation on a held lock.
	 */
	if (op == OP_KMALLOC)
		stride *= 2;
	if (st == HELD_DUE || st == HANDS_DUE)
		stride *= 4;
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
	if (st == HELD_DUE && !only) {
		/*
		 * And the handler delivered to the thread asleep on its
		 * ticket: its FUTEX_WAIT ends with EINTR.
		 */
		pid_t pid = start(st, op, true);
		int status;

		run.stop_sig = SIGUSR1;
		status = finish(pid, 0);
		points++;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			failed++;
			print_message("%s, %s: handler in the sleep: 0x%x\n",
				      op_names[op], state_names[st], status);
		}
	}
	print_message("%s, %s: %zu instructions stepped, a handler at %zu "
		      "of the library's: %zu failed\n",
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

static void find_held_due(void **state)
{
	(void)state;
	every_instruction(HELD_DUE, OP_FIND);
}

static void kmalloc_held_due(void **state)
{
	(void)state;
	every_instruction(HELD_DUE, OP_KMALLOC);
}

static void find_hands_due(void **state)
{
	(void)state;
	every_instruction(HANDS_DUE, OP_FIND);
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
		cmocka_unit_test(find_held_due),
		cmocka_unit_test(kmalloc_held_due),
		cmocka_unit_test(find_hands_due),
	};

	/* A backtrace allocates: a handler's WARN must not. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	find_library();
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
