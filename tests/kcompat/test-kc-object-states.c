// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The compat objects' lifecycles as a table: each kind (a mutex, a
 * managed mutex, a spinlock, a completion, a clock) in each state its
 * kernel debugging options tell apart (never initialized, idle, held or
 * enabled or done, held or waited on by another thread, destroyed by
 * hand or by its device's release), given each public call. Each cell
 * runs in a child of fork() under an alarm, so that a hang or a crash
 * fails the cell alone, and asserts the return, exactly the WARN the
 * kernel's option would give (one line naming the call and the object)
 * or none, and the object's state after: who holds the lock, a waiter
 * woken, a clock's enable count.
 *
 * Then the new states' checks from two threads at once, for TSan: a
 * destroyed mutex locked by two threads (one WARN, the sections apart),
 * a clock enabled and disabled by two (never below zero: exactly one WARN
 * for each disable too many).
 */
#include <linux/clk.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "kcompat/kc-cell.h"
#include "rounds.h"
#include "testlib.h"

/* The objects a cell works on: the child's copy of zeroed storage. */
static struct mutex mx;
static spinlock_t sp;
static struct completion cp;
static struct device dv;

/* The WARN lines a cell saw. */
static char said_line[4][256];
static int said_n;

static void sink(void *arg, int level, const char *line)
{
	(void)arg;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	if (said_n < 4)
		snprintf(said_line[said_n], sizeof(said_line[0]), "%s", line);
	said_n++;
}

static void listen(void)
{
	said_n = 0;
	devres_set_log_sink(sink, NULL);
}

/* Exactly one WARN "<who>: @func: ..." holding @reason, or none. */
static void heard_on(const char *who, const char *func, const char *reason)
{
	char head[128];

	devres_set_log_sink(NULL, NULL);
	if (!reason) {
		if (said_n)
			fprintf(stderr, "cell: unexpected: %s\n", said_line[0]);
		CHECK(said_n == 0);
		return;
	}
	snprintf(head, sizeof(head), "WARNING: %s: %s: ", who, func);
	if (said_n != 1 || strncmp(said_line[0], head, strlen(head)) != 0 ||
	    !strstr(said_line[0], reason))
		fprintf(stderr, "cell: want one \"%s...%s\", got %d: \"%s\"\n",
			head, reason, said_n, said_n ? said_line[0] : "");
	CHECK(said_n == 1);
	CHECK(!strncmp(said_line[0], head, strlen(head)));
	CHECK(strstr(said_line[0], reason));
}

static void heard(const char *func, const char *reason)
{
	heard_on("(no device)", func, reason);
}

/* Locks: a mutex, a managed mutex and a spinlock through one shape. */
enum lkind {
	K_MUTEX,
	K_DEVM,
	K_SPIN,
	K_NKINDS
};
static const char *const lkind_name[] = { "mutex", "devm-mutex", "spinlock" };

enum lstate {
	L_ZERO,	     /* never initialized: zeroed */
	L_IDLE,	     /* initialized, free */
	L_SELF,	     /* held by this thread */
	L_OTHER,     /* held by another thread */
	L_DESTROYED, /* mutex_destroy() by hand */
	L_RELEASED,  /* the managed destroy: its device's release */
	L_NSTATES
};
static const char *const lstate_name[] = { "zero",  "idle",	 "self",
					   "other", "destroyed", "released" };

enum lcall {
	C_LOCK,
	C_TRY,
	C_UNLOCK,
	C_INIT,
	C_DESTROY,
	C_NCALLS
};
static const char *const lcall_name[] = { "lock", "trylock", "unlock", "init",
					  "destroy" };

static enum lkind kind;

static void l_init(void)
{
	if (kind == K_SPIN)
		spin_lock_init(&sp);
	else if (kind == K_DEVM)
		CHECK(devm_mutex_init(&dv, &mx) == 0);
	else
		mutex_init(&mx);
}

static void l_lock(void)
{
	if (kind == K_SPIN)
		spin_lock(&sp);
	else
		mutex_lock(&mx);
}

static int l_try(void)
{
	return kind == K_SPIN ? spin_trylock(&sp) : mutex_trylock(&mx);
}

static void l_unlock(void)
{
	if (kind == K_SPIN)
		spin_unlock(&sp);
	else
		mutex_unlock(&mx);
}

static const char *l_func(enum lcall c)
{
	static const char *const m[] = { "mutex_lock", "mutex_trylock",
					 "mutex_unlock", "mutex_init",
					 "mutex_destroy" };
	static const char *const s[] = { "spin_lock", "spin_trylock",
					 "spin_unlock", "spin_lock_init",
					 NULL };

	return kind == K_SPIN ? s[c] : m[c];
}

/* Another thread's view: whether it can take the lock now. */
static void *other_try(void *arg)
{
	int got = l_try();

	(void)arg;
	if (got)
		l_unlock();
	return (void *)(long)got;
}

static bool free_for_others(void)
{
	pthread_t t;
	void *got;

	CHECK(!pthread_create(&t, NULL, other_try, NULL));
	CHECK(!pthread_join(t, &got));
	return got != NULL;
}

/* A thread that holds the lock until the cell ends. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static bool parked;

static void *holder(void *arg)
{
	(void)arg;
	l_lock();
	pthread_mutex_lock(&park_lock);
	parked = true;
	pthread_cond_broadcast(&park_cond);
	for (;;)
		pthread_cond_wait(&park_cond, &park_lock);
	return NULL;
}

static void held_by_another(void)
{
	pthread_t t;

	CHECK(!pthread_create(&t, NULL, holder, NULL));
	pthread_mutex_lock(&park_lock);
	while (!parked)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

/*
 * What each (state, call) must give: the WARN's reason (NULL: none), on
 * the device (a managed mutex's destroy by hand) or on none; the return
 * (trylock); who holds the lock after; whether it is gone (destroyed: no
 * call is asked of it after). L_OTHER x C_LOCK would wait, rightly: no
 * cell.
 */
struct lrow {
	const char *reason;
	bool on_dev;
	int ret;
	bool self_after, other_after, gone;
};

#define NOT_INIT "used before its init: initialized now"
#define AFTER_DESTROY "used after its destroy: initialized again"
#define NOT_LOCKED "not locked: nothing done"

/* clang-format off */
static const struct lrow lrows[L_NSTATES][C_NCALLS] = {
	[L_ZERO] = {
		[C_LOCK] = { NOT_INIT, false, 0, true, false, false },
		[C_TRY] = { NOT_INIT, false, 1, true, false, false },
		[C_UNLOCK] = { NOT_LOCKED, false, 0, false, false, false },
		[C_INIT] = { NULL, false, 0, false, false, false },
		[C_DESTROY] = { NOT_INIT, false, 0, false, false, true },
	},
	[L_IDLE] = {
		[C_LOCK] = { NULL, false, 0, true, false, false },
		[C_TRY] = { NULL, false, 1, true, false, false },
		[C_UNLOCK] = { NOT_LOCKED, false, 0, false, false, false },
		[C_INIT] = { NULL, false, 0, false, false, false },
		[C_DESTROY] = { NULL, false, 0, false, false, true },
	},
	[L_SELF] = {
		[C_LOCK] = { "held by this thread already, which would wait for itself: not taken", false, 0, true, false, false },
		[C_TRY] = { NULL, false, 0, true, false, false },
		[C_UNLOCK] = { NULL, false, 0, false, false, false },
		[C_INIT] = { "left as it is", false, 0, true, false, false },
		[C_DESTROY] = { "not destroyed", false, 0, true, false, false },
	},
	[L_OTHER] = {
		[C_TRY] = { NULL, false, 0, false, true, false },
		[C_UNLOCK] = { "not this one: not unlocked", false, 0, false, true, false },
		[C_INIT] = { "left as it is", false, 0, false, true, false },
		[C_DESTROY] = { "not destroyed", false, 0, false, true, false },
	},
	[L_DESTROYED] = {
		[C_LOCK] = { AFTER_DESTROY, false, 0, true, false, false },
		[C_TRY] = { AFTER_DESTROY, false, 1, true, false, false },
		[C_UNLOCK] = { NOT_LOCKED, false, 0, false, false, false },
		[C_INIT] = { NULL, false, 0, false, false, false },
		/* A second destroy: the kernel's says nothing. */
		[C_DESTROY] = { NULL, false, 0, false, false, true },
	},
	[L_RELEASED] = {
		[C_LOCK] = { AFTER_DESTROY, false, 0, true, false, false },
		[C_TRY] = { AFTER_DESTROY, false, 1, true, false, false },
		[C_UNLOCK] = { NOT_LOCKED, false, 0, false, false, false },
		[C_INIT] = { NULL, false, 0, false, false, false },
		[C_DESTROY] = { NULL, false, 0, false, false, true },
	},
};
/* clang-format on */

/* A managed mutex destroyed by hand in an idle state: its own line. */
static const struct lrow devm_destroy_idle = { "was made by devm_mutex_init(): "
					       "destroyed here, its managed "
					       "destroy "
					       "dropped",
					       true,
					       0,
					       false,
					       false,
					       true };

static void lock_cell(int k, int st, int c)
{
	const struct lrow *r = &lrows[st][c];
	int ret = 0;

	kind = (enum lkind)k;
	CHECK(!init_dev(&dv, "kcobj"));
	if (kind == K_DEVM && c == C_DESTROY && st == L_IDLE)
		r = &devm_destroy_idle;
	/* The setup's own WARNs (a managed mutex destroyed) are not heard. */
	listen();
	if (st != L_ZERO)
		l_init();
	if (st == L_SELF)
		l_lock();
	if (st == L_OTHER)
		held_by_another();
	if (st == L_DESTROYED)
		mutex_destroy(&mx);
	if (st == L_RELEASED)
		CHECK(devres_release_all(&dv) == 1);
	listen();
	switch (c) {
	case C_LOCK:
		l_lock();
		break;
	case C_TRY:
		ret = l_try();
		break;
	case C_UNLOCK:
		l_unlock();
		break;
	case C_INIT:
		/* The kernel's init of each: a managed mutex's is mutex_init(). */
		if (kind == K_SPIN)
			spin_lock_init(&sp);
		else
			mutex_init(&mx);
		break;
	case C_DESTROY:
		mutex_destroy(&mx);
		break;
	default:
		break;
	}
	heard_on(r->on_dev ? "kcobj" : "(no device)", l_func((enum lcall)c),
		 r->reason);
	CHECK(ret == r->ret);
	if (r->gone)
		return;
	/* Whole after: held as it should be, by whom it should be. */
	CHECK(free_for_others() == !(r->self_after || r->other_after));
	if (r->self_after) {
		/* A refused recursive lock: its unlock is void, then one frees. */
		if (st == L_SELF && c == C_LOCK) {
			l_unlock();
			CHECK(!free_for_others());
		}
		listen();
		l_unlock();
		heard(NULL, NULL);
		CHECK(free_for_others());
	}
}

/* Completions. */
enum cstate {
	CS_ZERO,
	CS_IDLE,
	CS_DONE,
	CS_WAITED,
	CS_NSTATES
};
enum ccall {
	CC_INIT,
	CC_REINIT,
	CC_COMPLETE,
	CC_COMPLETE_ALL,
	CC_WAIT,
	CC_DONE,
	CC_TRY,
	CC_NCALLS
};
static const char *const cstate_name[] = { "zero", "idle", "done", "waited" };
static const char *const ccall_func[] = {
	"init_completion",
	"reinit_completion",
	"complete",
	"complete_all",
	"wait_for_completion_timeout",
	"completion_done",
	"try_wait_for_completion",
};

/*
 * The WARN's reason; the return (a wait's: whether it was done, 1 for
 * time left); whether the waiter is woken by the call itself.
 */
struct crow {
	const char *reason;
	long ret;
	bool wakes;
};

#define NO_INIT "used before init_completion(): nothing done"

/* clang-format off */
static const struct crow crows[CS_NSTATES][CC_NCALLS] = {
	[CS_ZERO] = {
		[CC_INIT] = { NULL, 0, false },
		[CC_REINIT] = { NO_INIT, 0, false },
		[CC_COMPLETE] = { NO_INIT, 0, false },
		[CC_COMPLETE_ALL] = { NO_INIT, 0, false },
		[CC_WAIT] = { NO_INIT, 0, false },
		[CC_DONE] = { NO_INIT, 0, false },
		[CC_TRY] = { NO_INIT, 0, false },
	},
	[CS_IDLE] = {
		[CC_INIT] = { NULL, 0, false },
		[CC_REINIT] = { NULL, 0, false },
		[CC_COMPLETE] = { NULL, 0, false },
		[CC_COMPLETE_ALL] = { NULL, 0, false },
		[CC_WAIT] = { NULL, 0, false },
		[CC_DONE] = { NULL, 0, false },
		[CC_TRY] = { NULL, 0, false },
	},
	[CS_DONE] = {
		[CC_INIT] = { NULL, 0, false },
		[CC_REINIT] = { NULL, 0, false },
		[CC_COMPLETE] = { NULL, 0, false },
		[CC_COMPLETE_ALL] = { NULL, 0, false },
		[CC_WAIT] = { NULL, 1, false },
		[CC_DONE] = { NULL, 1, false },
		[CC_TRY] = { NULL, 1, false },
	},
	[CS_WAITED] = {
		[CC_INIT] = { "has 1 waiters: left as it is", 0, false },
		[CC_REINIT] = { NULL, 0, false },
		[CC_COMPLETE] = { NULL, 0, true },
		[CC_COMPLETE_ALL] = { NULL, 0, true },
		[CC_WAIT] = { NULL, 0, false },
		[CC_DONE] = { NULL, 0, false },
		[CC_TRY] = { NULL, 0, false },
	},
};
/* clang-format on */

static void *waiter(void *arg)
{
	(void)arg;
	wait_for_completion(&cp);
	return NULL;
}

static void completion_cell(int st, int c, int unused)
{
	const struct crow *r = &crows[st][c];
	pthread_t t;
	long ret = 0;

	(void)unused;
	if (st != CS_ZERO)
		init_completion(&cp);
	if (st == CS_DONE)
		complete(&cp);
	if (st == CS_WAITED) {
		CHECK(!pthread_create(&t, NULL, waiter, NULL));
		while (!__atomic_load_n(&cp.waiters, __ATOMIC_RELAXED))
			usleep(1000);
	}
	listen();
	switch (c) {
	case CC_INIT:
		init_completion(&cp);
		break;
	case CC_REINIT:
		reinit_completion(&cp);
		break;
	case CC_COMPLETE:
		complete(&cp);
		break;
	case CC_COMPLETE_ALL:
		complete_all(&cp);
		break;
	case CC_WAIT:
		ret = wait_for_completion_timeout(&cp, 20) > 0;
		break;
	case CC_DONE:
		ret = completion_done(&cp);
		break;
	case CC_TRY:
		ret = try_wait_for_completion(&cp);
		break;
	default:
		break;
	}
	heard(ccall_func[c], r->reason);
	CHECK(ret == r->ret);
	if (st == CS_WAITED) {
		/* Woken by the call, or by one complete() after any other. */
		if (!r->wakes)
			complete(&cp);
		CHECK(!pthread_join(t, NULL));
	}
}

/*
 * A completion in managed memory, freed: idle, done, or waited on by
 * another thread (DEBUG_OBJECTS_FREE's "free of an active object"). Each
 * free path of managed memory: kfree() of kzalloc() memory, devm_kfree()
 * and the device's release of devm_kzalloc() memory.
 */
enum fstate {
	FS_IDLE,
	FS_DONE,
	FS_WAITED,
	FS_NSTATES
};
enum fpath {
	FP_KFREE,
	FP_DEVM_KFREE,
	FP_RELEASE,
	FP_NPATHS
};
static const char *const fstate_name[] = { "idle", "done", "waited" };
static const char *const fpath_name[] = { "kfree", "devm_kfree",
					  "devres_release_all" };

static struct completion *fcp;

static void *fwaiter(void *arg)
{
	(void)arg;
	wait_for_completion(fcp);
	return NULL;
}

static void freed_cell(int st, int path, int unused)
{
	pthread_t t;
	char reason[160];

	(void)unused;
	CHECK(!init_dev(&dv, "kcobj"));
	fcp = path == FP_KFREE ? kzalloc(sizeof(*fcp), GFP_KERNEL)
			       : devm_kzalloc(&dv, sizeof(*fcp), GFP_KERNEL);
	CHECK(fcp);
	init_completion(fcp);
	if (st == FS_DONE)
		complete(fcp);
	if (st == FS_WAITED) {
		CHECK(!pthread_create(&t, NULL, fwaiter, NULL));
		/* A waiter counted is one the completion is live for. */
		while (!__atomic_load_n(&fcp->waiters, __ATOMIC_ACQUIRE))
			usleep(1000);
	}
	snprintf(reason, sizeof(reason),
		 "frees completion %p while it is running in another thread: "
		 "complete_all() and the waiters' return must come first",
		 (void *)fcp);
	listen();
	if (path == FP_KFREE)
		kfree(fcp);
	else if (path == FP_DEVM_KFREE)
		devm_kfree(&dv, fcp);
	else
		CHECK(devres_release_all(&dv) == 1);
	/* kfree() is devm_kfree() on the layer's heap device. */
	heard_on(path == FP_KFREE ? "kmalloc" : "kcobj",
		 path == FP_RELEASE ? "devres_release_all" : "devm_kfree",
		 st == FS_WAITED ? reason : NULL);
	/* The waiter woken before the memory went, and returned. */
	if (st == FS_WAITED)
		CHECK(!pthread_join(t, NULL));
}

/* Clocks: the kernel's enable count. */
enum kstate {
	KS_GOT,	    /* devm_clk_get(): not enabled */
	KS_ON,	    /* then clk_prepare_enable() */
	KS_GOT_ON,  /* devm_clk_get_enabled() */
	KS_GOT_OFF, /* devm_clk_get_enabled(), disabled by hand */
	KS_NSTATES
};
enum kcall {
	KC_PREPARE_ENABLE,
	KC_DISABLE_UNPREPARE,
	KC_ENABLE,
	KC_DISABLE,
	KC_RATE,
	KC_RELEASE, /* its device's release */
	KC_NCALLS
};
static const char *const kstate_name[] = { "got", "on", "got-enabled",
					   "got-enabled-off" };
static const char *const kcall_func[] = {
	"clk_prepare_enable", "clk_disable_unprepare", "clk_enable",
	"clk_disable",	      "clk_get_rate",	       "devm_clk_get_enabled",
};

/* The WARN's reason; the enable count after (-1: released, not read). */
struct krow {
	const char *reason;
	int count;
};

#define OFF "is already disabled: nothing done"
#define UNPREP "is not prepared: refused"

/* clang-format off */
static const struct krow krows[KS_NSTATES][KC_NCALLS] = {
	[KS_GOT] = {
		[KC_PREPARE_ENABLE] = { NULL, 1 },
		[KC_DISABLE_UNPREPARE] = { OFF, 0 },
		/* The kernel's "Enabling unprepared": -ESHUTDOWN. */
		[KC_ENABLE] = { UNPREP, 0 },
		[KC_DISABLE] = { OFF, 0 },
		[KC_RATE] = { NULL, 0 },
		[KC_RELEASE] = { NULL, -1 },
	},
	[KS_ON] = {
		[KC_PREPARE_ENABLE] = { NULL, 2 },
		[KC_DISABLE_UNPREPARE] = { NULL, 0 },
		[KC_ENABLE] = { NULL, 2 },
		[KC_DISABLE] = { NULL, 0 },
		[KC_RATE] = { NULL, 1 },
		/* The kernel's clk_put() of an enabled clock says nothing. */
		[KC_RELEASE] = { NULL, -1 },
	},
	[KS_GOT_ON] = {
		[KC_PREPARE_ENABLE] = { NULL, 2 },
		[KC_DISABLE_UNPREPARE] = { NULL, 0 },
		[KC_ENABLE] = { NULL, 2 },
		[KC_DISABLE] = { NULL, 0 },
		[KC_RATE] = { NULL, 1 },
		[KC_RELEASE] = { NULL, -1 },
	},
	[KS_GOT_OFF] = {
		[KC_PREPARE_ENABLE] = { NULL, 1 },
		[KC_DISABLE_UNPREPARE] = { OFF, 0 },
		[KC_ENABLE] = { UNPREP, 0 },
		[KC_DISABLE] = { OFF, 0 },
		[KC_RATE] = { NULL, 0 },
		/* The release's disable finds it disabled: the kernel's WARN. */
		[KC_RELEASE] = { OFF, -1 },
	},
};
/* clang-format on */

static void clk_cell(int st, int c, int unused)
{
	const struct krow *r = &krows[st][c];
	struct clk *k;
	unsigned long rate = 0;

	(void)unused;
	CHECK(!init_dev(&dv, "kcobj"));
	if (st == KS_GOT || st == KS_ON)
		k = devm_clk_get(&dv, NULL);
	else
		k = devm_clk_get_enabled(&dv, NULL);
	CHECK(!IS_ERR_OR_NULL(k));
	if (st == KS_ON)
		CHECK(clk_prepare_enable(k) == 0);
	if (st == KS_GOT_OFF)
		clk_disable_unprepare(k);
	listen();
	switch (c) {
	case KC_PREPARE_ENABLE:
		CHECK(clk_prepare_enable(k) == 0);
		break;
	case KC_DISABLE_UNPREPARE:
		clk_disable_unprepare(k);
		break;
	case KC_ENABLE:
		CHECK(clk_enable(k) == (r->reason ? -ESHUTDOWN : 0));
		break;
	case KC_DISABLE:
		clk_disable(k);
		break;
	case KC_RATE:
		rate = clk_get_rate(k);
		break;
	case KC_RELEASE:
		CHECK(devres_release_all(&dv) == 1);
		break;
	default:
		break;
	}
	heard_on("kcobj", kcall_func[c], r->reason);
	if (c == KC_RATE)
		CHECK(rate == KCOMPAT_CLK_RATE);
	if (r->count >= 0)
		CHECK(k->enabled == r->count);
}

static void run_lock_cell(int k, int st, int c)
{
	lock_cell(k, st, c);
}

static void lock_cells(void **state)
{
	int failed = 0, cells = 0;
	char name[96];

	(void)state;
	for (int k = 0; k < K_NKINDS; k++)
		for (int st = 0; st < L_NSTATES; st++)
			for (int c = 0; c < C_NCALLS; c++) {
				if (st == L_OTHER && c == C_LOCK)
					continue;
				/* A spinlock has no destroy. */
				if (k == K_SPIN &&
				    (c == C_DESTROY || st >= L_DESTROYED))
					continue;
				/* A managed mutex from its init on. */
				if (k == K_DEVM && st == L_ZERO)
					continue;
				/* Only a managed mutex has a release. */
				if (k != K_DEVM && st == L_RELEASED)
					continue;
				snprintf(name, sizeof(name), "%s/%s/%s",
					 lkind_name[k], lstate_name[st],
					 lcall_name[c]);
				failed +=
					in_child(run_lock_cell, k, st, c, name);
				cells++;
			}
	fprintf(stderr, "%d lock cells, %d failed\n", cells, failed);
	assert_int_equal(failed, 0);
}

/*
 * A table of @rows x @cols cells, each @cell(row, col) in a child of its
 * own, named "<prefix><row name>/<col name>"; @what names them in the
 * count.
 */
static void table(void (*cell)(int, int, int), const char *prefix,
		  const char *const *row_names, int rows,
		  const char *const *col_names, int cols, const char *what)
{
	int failed = 0, cells = 0;
	char name[96];

	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++) {
			snprintf(name, sizeof(name), "%s%s/%s", prefix,
				 row_names[r], col_names[c]);
			failed += in_child(cell, r, c, 0, name);
			cells++;
		}
	fprintf(stderr, "%d %s cells, %d failed\n", cells, what, failed);
	assert_int_equal(failed, 0);
}

static void completion_cells(void **state)
{
	(void)state;
	table(completion_cell, "completion/", cstate_name, CS_NSTATES,
	      ccall_func, CC_NCALLS, "completion");
}

static void freed_cells(void **state)
{
	(void)state;
	table(freed_cell, "completion/freed-", fstate_name, FS_NSTATES,
	      fpath_name, FP_NPATHS, "freed");
}

static void clk_cells(void **state)
{
	(void)state;
	table(clk_cell, "clk/", kstate_name, KS_NSTATES, kcall_func, KC_NCALLS,
	      "clock");
}

/* Pairs from two threads; KC_OBJECT_STATES_ROUNDS sets the rounds. */
static long rounds;
static struct mutex pair_mx;
static struct clk *pair_clk;
static int in_section, overlaps;
static pthread_barrier_t start;

static void *revive(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	mutex_lock(&pair_mx);
	if (__atomic_add_fetch(&in_section, 1, __ATOMIC_SEQ_CST) != 1)
		__atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
	sched_yield();
	__atomic_sub_fetch(&in_section, 1, __ATOMIC_SEQ_CST);
	mutex_unlock(&pair_mx);
	return NULL;
}

/* Each round: destroyed, then locked by two threads at once. */
static void destroyed_mutex_two_lockers(void **state)
{
	pthread_t a, b;
	int w0;

	(void)state;
	mutex_init(&pair_mx);
	start_capture();
	w0 = devres_warn_count();
	for (long i = 0; i < rounds; i++) {
		mutex_destroy(&pair_mx);
		assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
		assert_int_equal(pthread_create(&a, NULL, revive, NULL), 0);
		assert_int_equal(pthread_create(&b, NULL, revive, NULL), 0);
		assert_int_equal(pthread_join(a, NULL), 0);
		assert_int_equal(pthread_join(b, NULL), 0);
		pthread_barrier_destroy(&start);
	}
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(overlaps, 0);
	/* One WARN a round: the thread that made it this process's again. */
	assert_int_equal(devres_warn_count() - w0, rounds);
	mutex_destroy(&pair_mx);
}

static void *flicker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (long i = 0; i < rounds; i++) {
		/* No assert off the test's thread: a failed enable counts. */
		if (clk_enable(pair_clk))
			__atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
		clk_disable(pair_clk);
	}
	/* One disable too many: its own WARN, or the other's. */
	clk_disable(pair_clk);
	return NULL;
}

static void clock_two_threads(void **state)
{
	pthread_t a, b;
	int w0;

	(void)state;
	overlaps = 0;
	assert_int_equal(init_dev(&dv, "kcobj"), 0);
	/* Prepared: its enables need it, as the kernel's. */
	pair_clk = devm_clk_get_prepared(&dv, NULL);
	assert_false(IS_ERR_OR_NULL(pair_clk));
	start_capture();
	w0 = devres_warn_count();
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	assert_int_equal(pthread_create(&a, NULL, flicker, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, flicker, NULL), 0);
	assert_int_equal(pthread_join(a, NULL), 0);
	assert_int_equal(pthread_join(b, NULL), 0);
	pthread_barrier_destroy(&start);
	devres_set_log_sink(NULL, NULL);
	/* Two disables too many in all: two WARNs, the count at 0. */
	assert_int_equal(devres_warn_count() - w0, 2);
	assert_int_equal(pair_clk->enabled, 0);
	assert_int_equal(overlaps, 0);
	assert_int_equal(devres_release_all(&dv), 1);
	put_device(&dv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lock_cells),
		cmocka_unit_test(completion_cells),
		cmocka_unit_test(freed_cells),
		cmocka_unit_test(clk_cells),
		cmocka_unit_test(destroyed_mutex_two_lockers),
		cmocka_unit_test(clock_two_threads),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	rounds = test_rounds("KC_OBJECT_STATES_ROUNDS",
			     test_under_valgrind() ? 50 : 200);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
