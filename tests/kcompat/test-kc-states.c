// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The compat objects (mutex, spinlock, completion, work item) in every
 * lifecycle state the kernel's debugging options tell apart, each given
 * every call: never initialized (zeroed memory), idle, held or busy by
 * this thread, held or waited on by another thread, and a work item's own
 * function. Each cell runs in a child of fork() under an alarm, so that a
 * hang or a crash fails the cell alone, and asserts the call's return,
 * exactly the WARN the kernel's option would give (one line naming the
 * call and the object) or none, and that the object is whole after it:
 * a lock free or held as it should be, a waiter woken, an item idle.
 *
 * Then pairs of calls from two threads, many rounds, for TSan: a holder
 * against a thread that unlocks what it does not hold, and a thread that
 * re-locks what it holds against another that contends.
 */
#define _GNU_SOURCE
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "rounds.h"

/*
 * The rounds of the pairs from two threads: 2000, for TSan; 200 under
 * valgrind, which runs one thread at a time. KC_STATES_ROUNDS sets it.
 */
static int rounds;

/* The objects a cell works on: the child's copy of zeroed storage. */
static struct mutex mx;
static spinlock_t sp;
static struct completion cp;
static struct work_struct wk;

/* A lock kind: the calls the kernel has on it, through one shape. */
struct lock_kind {
	const char *what;
	void *obj;
	void (*init)(void);
	void (*lock)(void);
	int (*trylock)(void);
	void (*unlock)(void);
	int (*destroy)(void); /* -1: the kind has none */
	const char *lock_call, *unlock_call, *init_call;
};

static void mx_init(void)
{
	mutex_init(&mx);
}
static void mx_lock(void)
{
	mutex_lock(&mx);
}
static int mx_trylock(void)
{
	return mutex_trylock(&mx);
}
static void mx_unlock(void)
{
	mutex_unlock(&mx);
}
static int mx_destroy(void)
{
	mutex_destroy(&mx);
	return 0;
}
static void sp_init(void)
{
	spin_lock_init(&sp);
}
static void sp_lock(void)
{
	spin_lock(&sp);
}
static int sp_trylock(void)
{
	return spin_trylock(&sp);
}
static void sp_unlock(void)
{
	spin_unlock(&sp);
}
static int no_destroy(void)
{
	return -1;
}

static const struct lock_kind kinds[] = {
	{ "mutex", &mx, mx_init, mx_lock, mx_trylock, mx_unlock, mx_destroy,
	  "mutex_lock", "mutex_unlock", "mutex_init" },
	{ "spinlock", &sp, sp_init, sp_lock, sp_trylock, sp_unlock, no_destroy,
	  "spin_lock", "spin_unlock", "spin_lock_init" },
};

/* The WARN lines a cell saw. */
static char said_line[4][256];
static int said_n;

static void sink(void *arg, int level, const char *line)
{
	(void)arg;
	(void)level;
	if (strncmp(line, "WARNING: ", 9))
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

/* Exactly one WARN "(no device): @func: ..." holding @reason, or none. */
static void heard(const char *func, const char *reason)
{
	char head[128];

	devres_set_log_sink(NULL, NULL);
	if (!func) {
		if (said_n)
			fprintf(stderr, "cell: unexpected: %s\n", said_line[0]);
		CHECK(said_n == 0);
		return;
	}
	snprintf(head, sizeof(head), "WARNING: (no device): %s: ", func);
	if (said_n != 1 || strncmp(said_line[0], head, strlen(head)) ||
	    !strstr(said_line[0], reason))
		fprintf(stderr, "cell: want one \"%s...%s\", got %d: \"%s\"\n",
			head, reason, said_n, said_line[0]);
	CHECK(said_n == 1);
	CHECK(!strncmp(said_line[0], head, strlen(head)));
	CHECK(strstr(said_line[0], reason));
}

/* Another thread's view: whether it can take the lock now. */
static const struct lock_kind *other_kind;
static void *other_try(void *arg)
{
	int got = other_kind->trylock();

	(void)arg;
	if (got)
		other_kind->unlock();
	return (void *)(long)got;
}

static bool free_for_others(const struct lock_kind *k)
{
	pthread_t t;
	void *got;

	other_kind = k;
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
	const struct lock_kind *k = arg;

	k->lock();
	pthread_mutex_lock(&park_lock);
	parked = true;
	pthread_cond_broadcast(&park_cond);
	for (;;)
		pthread_cond_wait(&park_cond, &park_lock);
	return NULL;
}

static void held_by_another(const struct lock_kind *k)
{
	pthread_t t;

	CHECK(!pthread_create(&t, NULL, holder, (void *)k));
	pthread_mutex_lock(&park_lock);
	while (!parked)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

enum lstate {
	L_ZERO,
	L_IDLE,
	L_SELF,
	L_OTHER,
	L_NSTATES
};
enum lcall {
	C_LOCK,
	C_TRY,
	C_UNLOCK,
	C_INIT,
	C_DESTROY,
	C_NCALLS
};
static const char *const lstate_name[] = { "zero", "idle", "self", "other" };
static const char *const lcall_name[] = { "lock", "trylock", "unlock", "init",
					  "destroy" };

/*
 * What each (state, call) must give: the WARN's reason (NULL: none), the
 * return (trylock), whether this thread holds the lock after, whether
 * another thread holds it after. L_OTHER x C_LOCK would wait, rightly:
 * no cell.
 */
struct lrow {
	const char *reason;
	int ret;
	bool self_after, other_after;
	bool gone; /* destroyed: no call is asked of it after */
};

/* clang-format off */
static const struct lrow lrows[L_NSTATES][C_NCALLS] = {
	[L_ZERO] = {
		[C_LOCK] = { "used before its init: initialized now", 0, true, false },
		[C_TRY] = { "used before its init: initialized now", 1, true, false },
		[C_UNLOCK] = { "not locked: nothing done", 0, false, false },
		[C_INIT] = { NULL, 0, false, false },
		[C_DESTROY] = { "used before its init: initialized now", 0, false, false, true },
	},
	[L_IDLE] = {
		[C_LOCK] = { NULL, 0, true, false },
		[C_TRY] = { NULL, 1, true, false },
		[C_UNLOCK] = { "not locked: nothing done", 0, false, false },
		[C_INIT] = { NULL, 0, false, false },
		[C_DESTROY] = { NULL, 0, false, false, true },
	},
	[L_SELF] = {
		[C_LOCK] = { "held by this thread already, which would wait for itself: not taken", 0, true, false },
		[C_TRY] = { NULL, 0, true, false },
		[C_UNLOCK] = { NULL, 0, false, false },
		[C_INIT] = { "left as it is", 0, true, false },
		[C_DESTROY] = { "not destroyed", 0, true, false },
	},
	[L_OTHER] = {
		[C_TRY] = { NULL, 0, false, true },
		[C_UNLOCK] = { "not this one: not unlocked", 0, false, true },
		[C_INIT] = { "left as it is", 0, false, true },
		[C_DESTROY] = { "not destroyed", 0, false, true },
	},
};
/* clang-format on */

static void lock_cell(const struct lock_kind *k, enum lstate st, enum lcall c)
{
	const struct lrow *r = &lrows[st][c];
	const char *func[C_NCALLS] = { k->lock_call, NULL, k->unlock_call,
				       k->init_call, "mutex_destroy" };
	int ret = 0;

	func[C_TRY] = k == &kinds[0] ? "mutex_trylock" : "spin_trylock";
	if (st != L_ZERO)
		k->init();
	if (st == L_SELF)
		k->lock();
	if (st == L_OTHER)
		held_by_another(k);
	listen();
	switch (c) {
	case C_LOCK:
		k->lock();
		break;
	case C_TRY:
		ret = k->trylock();
		break;
	case C_UNLOCK:
		k->unlock();
		break;
	case C_INIT:
		k->init();
		break;
	case C_DESTROY:
		ret = k->destroy();
		break;
	default:
		break;
	}
	heard(r->reason ? func[c] : NULL, r->reason);
	CHECK(ret == r->ret);
	if (r->gone)
		return;
	/* Whole after: held as it should be, by whom it should be. */
	CHECK(free_for_others(k) == !(r->self_after || r->other_after));
	if (r->self_after) {
		/* A refused recursive lock: its unlock is void, then one frees. */
		if (st == L_SELF && c == C_LOCK) {
			k->unlock();
			CHECK(!free_for_others(k));
		}
		listen();
		k->unlock();
		heard(NULL, NULL);
		CHECK(free_for_others(k));
	}
}

/* Completions. */
enum cstate {
	CS_ZERO,
	CS_IDLE,
	CS_WAITED,
	CS_NSTATES
};
enum ccall {
	CC_INIT,
	CC_COMPLETE,
	CC_WAIT,
	CC_DONE,
	CC_NCALLS
};
static const char *const cstate_name[] = { "zero", "idle", "waited" };
static const char *const ccall_name[] = { "init", "complete", "wait", "done" };
static const char *const ccall_func[] = { "init_completion", "complete",
					  "wait_for_completion_timeout",
					  "completion_done" };

struct crow {
	const char *reason;
	long ret;
};

/* clang-format off */
static const struct crow crows[CS_NSTATES][CC_NCALLS] = {
	[CS_ZERO] = {
		[CC_INIT] = { NULL, 0 },
		[CC_COMPLETE] = { "used before init_completion(): nothing done", 0 },
		[CC_WAIT] = { "used before init_completion(): nothing done", 0 },
		[CC_DONE] = { "used before init_completion(): nothing done", 0 },
	},
	[CS_IDLE] = {
		[CC_INIT] = { NULL, 0 },
		[CC_COMPLETE] = { NULL, 0 },
		[CC_WAIT] = { NULL, 0 }, /* timed out */
		[CC_DONE] = { NULL, 0 },
	},
	[CS_WAITED] = {
		[CC_INIT] = { "has 1 waiters: left as it is", 0 },
		[CC_COMPLETE] = { NULL, 0 },
		[CC_WAIT] = { NULL, 0 },
		[CC_DONE] = { NULL, 0 },
	},
};
/* clang-format on */

static void *waiter(void *arg)
{
	(void)arg;
	wait_for_completion(&cp);
	return NULL;
}

static void completion_cell(enum cstate st, enum ccall c)
{
	const struct crow *r = &crows[st][c];
	pthread_t t;
	long ret = 0;

	if (st != CS_ZERO)
		init_completion(&cp);
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
	case CC_COMPLETE:
		complete(&cp);
		break;
	case CC_WAIT:
		ret = (long)wait_for_completion_timeout(&cp, 20);
		break;
	case CC_DONE:
		ret = completion_done(&cp);
		break;
	default:
		break;
	}
	heard(r->reason ? ccall_func[c] : NULL, r->reason);
	CHECK(ret == r->ret);
	if (st == CS_WAITED) {
		/* The waiter is woken by one complete(), whatever came before. */
		if (c != CC_COMPLETE)
			complete(&cp);
		CHECK(!pthread_join(t, NULL));
	}
}

/* Work items: a call from the item's own function, or on a zeroed item. */
enum wcall {
	W_SCHEDULE,
	W_FLUSH,
	W_CANCEL,
	W_FLUSH_SELF,
	W_CANCEL_SELF,
	W_CANCEL_ASYNC_SELF, /* cancel_work(): the kernel's does not wait */
	W_NCALLS
};
static const char *const wcall_name[] = { "schedule",	 "flush",
					  "cancel",	 "flush-self",
					  "cancel-self", "cancel-async-self" };

static struct completion ran;
static enum wcall self_call;
static long self_ret;
static int self_warns;

static void self_fn(struct work_struct *w)
{
	int w0 = devres_warn_count();

	if (self_call == W_FLUSH_SELF)
		self_ret = flush_work(w);
	else if (self_call == W_CANCEL_SELF)
		self_ret = cancel_work_sync(w);
	else
		self_ret = cancel_work(w);
	self_warns = devres_warn_count() - w0;
	complete(&ran);
}

static void work_cell(enum wcall c)
{
	const char *own = "called from its own function, which it would "
			  "wait for: not waited for";
	long ret = 0;

	if (c >= W_FLUSH_SELF) {
		init_completion(&ran);
		INIT_WORK(&wk, self_fn);
		self_call = c;
		listen();
		CHECK(schedule_work(&wk));
		CHECK(wait_for_completion_timeout(&ran, 5000));
		(void)flush_work(&wk); /* its thread gone */
		if (c == W_CANCEL_ASYNC_SELF)
			heard(NULL, NULL);
		else
			heard(c == W_FLUSH_SELF ? "flush_work"
						: "cancel_work_sync",
			      own);
		CHECK(self_warns == (c != W_CANCEL_ASYNC_SELF));
		CHECK(self_ret == (c == W_FLUSH_SELF));
		CHECK(!work_pending(&wk));
		return;
	}
	/* Zeroed: never INIT_WORK()ed. */
	listen();
	switch (c) {
	case W_SCHEDULE:
		ret = schedule_work(&wk);
		heard("schedule_work", "has no function: used before "
				       "INIT_WORK(); not queued");
		break;
	case W_FLUSH:
		ret = flush_work(&wk);
		heard(NULL, NULL);
		break;
	case W_CANCEL:
		ret = cancel_work_sync(&wk);
		heard(NULL, NULL);
		break;
	default:
		break;
	}
	CHECK(ret == 0);
	CHECK(!work_pending(&wk));
}

/*
 * Calls that may sleep, made holding a spinlock (DEBUG_ATOMIC_SLEEP), and
 * those that may not; then the same with only a mutex held: no WARN.
 */
enum scall {
	SL_MUTEX,
	SL_MUTEX_INTR,
	SL_MSLEEP,
	SL_USLEEP,
	SL_WAIT,
	SL_FLUSH,
	SL_MDELAY,  /* spins in the kernel: allowed */
	SL_UDELAY,  /* the same */
	SL_SPIN,    /* another spinlock: allowed */
	SL_TRYLOCK, /* does not sleep */
	SL_NCALLS
};
static const char *const scall_func[] = {
	"mutex_lock",
	"mutex_lock_interruptible",
	"msleep",
	"usleep_range",
	"wait_for_completion_timeout",
	"flush_work",
	NULL,
	NULL,
	NULL,
	NULL,
};

static spinlock_t sp2;
static struct mutex mx2;

static void idle_fn(struct work_struct *w)
{
	(void)w;
}

static void sleep_cell(int c, int in_spin, int unused)
{
	(void)unused;
	spin_lock_init(&sp);
	spin_lock_init(&sp2);
	mutex_init(&mx);
	mutex_init(&mx2);
	init_completion(&cp);
	INIT_WORK(&wk, idle_fn);
	if (in_spin)
		spin_lock(&sp);
	else
		mutex_lock(&mx2);
	listen();
	switch (c) {
	case SL_MUTEX:
		mutex_lock(&mx);
		mutex_unlock(&mx);
		break;
	case SL_MUTEX_INTR:
		CHECK(mutex_lock_interruptible(&mx) == 0);
		mutex_unlock(&mx);
		break;
	case SL_MSLEEP:
		msleep(1);
		break;
	case SL_USLEEP:
		usleep_range(10, 20);
		break;
	case SL_WAIT:
		CHECK(!wait_for_completion_timeout(&cp, 1));
		break;
	case SL_FLUSH:
		CHECK(!flush_work(&wk));
		break;
	case SL_MDELAY:
		mdelay(1);
		break;
	case SL_UDELAY:
		udelay(10);
		break;
	case SL_SPIN:
		spin_lock(&sp2);
		spin_unlock(&sp2);
		break;
	case SL_TRYLOCK:
		CHECK(mutex_trylock(&mx));
		mutex_unlock(&mx);
		break;
	default:
		break;
	}
	heard(in_spin ? scall_func[c] : NULL, "called holding spinlock '&sp' "
					      "(");
	if (in_spin) {
		spin_unlock(&sp);
		/* Let go: the same call says nothing now. */
		listen();
		msleep(1);
		heard(NULL, NULL);
	} else {
		mutex_unlock(&mx2);
	}
}

static void run_lock_cell(int k, int st, int c)
{
	lock_cell(&kinds[k], (enum lstate)st, (enum lcall)c);
}

static void run_completion_cell(int st, int c, int unused)
{
	(void)unused;
	completion_cell((enum cstate)st, (enum ccall)c);
}

static void run_work_cell(int c, int unused, int unused2)
{
	(void)unused;
	(void)unused2;
	work_cell((enum wcall)c);
}

static void every_cell(void **state)
{
	int failed = 0, cells = 0;
	char name[96];

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (int k = 0; k < 2; k++)
		for (int st = 0; st < L_NSTATES; st++)
			for (int c = 0; c < C_NCALLS; c++) {
				if (st == L_OTHER && c == C_LOCK)
					continue;
				if (c == C_DESTROY &&
				    kinds[k].destroy == no_destroy)
					continue;
				snprintf(name, sizeof(name), "%s/%s/%s",
					 kinds[k].what, lstate_name[st],
					 lcall_name[c]);
				failed +=
					in_child(run_lock_cell, k, st, c, name);
				cells++;
			}
	for (int st = 0; st < CS_NSTATES; st++)
		for (int c = 0; c < CC_NCALLS; c++) {
			snprintf(name, sizeof(name), "completion/%s/%s",
				 cstate_name[st], ccall_name[c]);
			failed += in_child(run_completion_cell, st, c, 0, name);
			cells++;
		}
	for (int c = 0; c < W_NCALLS; c++) {
		snprintf(name, sizeof(name), "work/%s", wcall_name[c]);
		failed += in_child(run_work_cell, c, 0, 0, name);
		cells++;
	}
	for (int in_spin = 0; in_spin < 2; in_spin++)
		for (int c = 0; c < SL_NCALLS; c++) {
			snprintf(name, sizeof(name), "sleep/%s/%d",
				 in_spin ? "spinlock" : "mutex", c);
			failed += in_child(sleep_cell, c, in_spin, 0, name);
			cells++;
		}
	fprintf(stderr, "%d cells, %d failed\n", cells, failed);
	assert_int_equal(failed, 0);
}

/*
 * Pairs from two threads: a holder taking and letting go of the lock in
 * rounds, its critical section checked to be its own, against a thread
 * that unlocks the lock it never took (each one WARN, nothing let go).
 */
static struct mutex pair_mx;
static int in_section, overlaps;
static bool pair_stop;

/* Enters the section: one more overlap when another is in it. */
static void section(void)
{
	if (__atomic_add_fetch(&in_section, 1, __ATOMIC_SEQ_CST) != 1)
		__atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
}

static void section_end(void)
{
	__atomic_sub_fetch(&in_section, 1, __ATOMIC_SEQ_CST);
}

static void *pair_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		mutex_lock(&pair_mx);
		/* A recursive lock in the section: refused, its unlock void. */
		mutex_lock(&pair_mx);
		section();
		mutex_unlock(&pair_mx);
		/* Still held: the section goes on past the void unlock. */
		sched_yield();
		section_end();
		mutex_unlock(&pair_mx);
	}
	__atomic_store_n(&pair_stop, true, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *pair_intruder(void *arg)
{
	long *n = arg;

	while (!__atomic_load_n(&pair_stop, __ATOMIC_SEQ_CST)) {
		mutex_unlock(&pair_mx);
		(*n)++;
		/* A contender too: a section of its own. */
		mutex_lock(&pair_mx);
		section();
		section_end();
		mutex_unlock(&pair_mx);
	}
	return NULL;
}

static void pairs_from_two_threads(void **state)
{
	pthread_t a, b;
	long intrusions = 0;
	int w0;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	mutex_init(&pair_mx);
	start_capture();
	w0 = devres_warn_count();
	assert_int_equal(pthread_create(&a, NULL, pair_holder, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, pair_intruder, &intrusions),
			 0);
	assert_int_equal(pthread_join(a, NULL), 0);
	assert_int_equal(pthread_join(b, NULL), 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(overlaps, 0);
	/* One WARN for each recursive lock and each foreign unlock. */
	assert_int_equal(devres_warn_count() - w0, rounds + intrusions);
	assert_true(mutex_trylock(&pair_mx));
	mutex_unlock(&pair_mx);
	mutex_destroy(&pair_mx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
		cmocka_unit_test(pairs_from_two_threads),
	};

	rounds = (int)test_rounds("KC_STATES_ROUNDS",
				  test_under_valgrind() ? 200 : 2000);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
