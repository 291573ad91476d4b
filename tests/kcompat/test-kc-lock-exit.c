// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A thread that ends holding a compat lock (<linux/kcompat_held.h>). Each
 * way of taking one, on every kind of lock the headers offer (a mutex of
 * mutex_init(), of DEFINE_MUTEX(), of devm_mutex_init(); a spinlock of
 * spin_lock_init(), of DEFINE_SPINLOCK(), a raw one), taken by a thread
 * that then ends in each of four ways: it returns, calls pthread_exit(),
 * is cancelled, or is a managed thread (devm_thread_run()) that returns.
 * Each end gives exactly one WARN, naming the call that took the lock and
 * the lock by the name its init was given; the lock is free the moment
 * the thread is joined (a trylock takes it); and a locker that was
 * waiting when the holder ended proceeds. A thread that lets go of what
 * it took ends without a WARN. A thread that holds more locks than its
 * record keeps WARNs at the limit, and at its end for each; a thread that
 * ends by a raw SYS_exit (no destructor runs) leaves its lock to its next
 * locker, which takes it over with one WARN after its first wait. The
 * alarm fails a hang; the ledger is compared after.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>
#include <devres/posix.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include "kcompat/kctest.h"

static struct mutex m_init, m_devm;
static DEFINE_MUTEX(m_static);
static spinlock_t s_init;
static DEFINE_SPINLOCK(s_static);
static raw_spinlock_t s_raw;
static struct platform_device *pdev;

/* One way of taking a lock: the call, and the lock as a WARN names it. */
struct way {
	const char *func;
	const char *lock;
	void (*take)(void);
	int (*try)(void);
	void (*give)(void);
	void (*block)(void); /* a blocking take of the same lock */
};

static void take_mutex(void)
{
	mutex_lock(&m_init);
}

static void take_nested(void)
{
	mutex_lock_nested(&m_init, 1);
}

static void take_intr(void)
{
	assert_int_equal(mutex_lock_interruptible(&m_static), 0);
}

static void take_killable(void)
{
	assert_int_equal(mutex_lock_killable(&m_devm), 0);
}

static void take_mtry(void)
{
	assert_int_equal(mutex_trylock(&m_static), 1);
}

static void take_spin(void)
{
	spin_lock(&s_init);
}

static void take_irq(void)
{
	spin_lock_irq(&s_init);
}

static void take_bh(void)
{
	spin_lock_bh(&s_static);
}

static void take_irqsave(void)
{
	unsigned long flags;

	spin_lock_irqsave(&s_static, flags);
	(void)flags;
}

static void take_stry(void)
{
	assert_int_equal(spin_trylock(&s_init), 1);
}

static void take_raw(void)
{
	raw_spin_lock(&s_raw);
}

static void take_raw_irqsave(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&s_raw, flags);
	(void)flags;
}

static int try_m_init(void)
{
	return mutex_trylock(&m_init);
}

static int try_m_static(void)
{
	return mutex_trylock(&m_static);
}

static int try_m_devm(void)
{
	return mutex_trylock(&m_devm);
}

static int try_s_init(void)
{
	return spin_trylock(&s_init);
}

static int try_s_static(void)
{
	return spin_trylock(&s_static);
}

static int try_s_raw(void)
{
	return spin_trylock(&s_raw);
}

static void give_m_init(void)
{
	mutex_unlock(&m_init);
}

static void give_m_static(void)
{
	mutex_unlock(&m_static);
}

static void give_m_devm(void)
{
	mutex_unlock(&m_devm);
}

static void give_s_init(void)
{
	spin_unlock(&s_init);
}

static void give_s_static(void)
{
	spin_unlock(&s_static);
}

static void give_s_raw(void)
{
	raw_spin_unlock(&s_raw);
}

/* clang-format off */
static const struct way ways[] = {
	{ "mutex_lock", "mutex '&m_init'", take_mutex, try_m_init,
	  give_m_init, take_mutex },
	{ "mutex_lock_nested", "mutex '&m_init'", take_nested, try_m_init,
	  give_m_init, take_mutex },
	{ "mutex_lock_interruptible", "mutex 'm_static'", take_intr,
	  try_m_static, give_m_static, take_intr },
	{ "mutex_lock_killable", "mutex '&m_devm'", take_killable, try_m_devm,
	  give_m_devm, take_killable },
	{ "mutex_trylock", "mutex 'm_static'", take_mtry, try_m_static,
	  give_m_static, take_intr },
	{ "spin_lock", "spinlock '&s_init'", take_spin, try_s_init,
	  give_s_init, take_spin },
	{ "spin_lock_irq", "spinlock '&s_init'", take_irq, try_s_init,
	  give_s_init, take_spin },
	{ "spin_lock_bh", "spinlock 's_static'", take_bh, try_s_static,
	  give_s_static, take_bh },
	{ "spin_lock_irqsave", "spinlock 's_static'", take_irqsave,
	  try_s_static, give_s_static, take_bh },
	{ "spin_trylock", "spinlock '&s_init'", take_stry, try_s_init,
	  give_s_init, take_spin },
	{ "raw_spin_lock", "spinlock '&s_raw'", take_raw, try_s_raw,
	  give_s_raw, take_raw },
	{ "raw_spin_lock_irqsave", "spinlock '&s_raw'", take_raw_irqsave,
	  try_s_raw, give_s_raw, take_raw },
};
/* clang-format on */
#define NWAYS (sizeof(ways) / sizeof(ways[0]))

enum end {
	RETURN,
	EXIT,
	CANCEL,
	MANAGED,
	NENDS
};
static const char *const end_name[] = { "return", "pthread_exit",
					"cancellation", "managed" };

static sem_t taken;

static void *holder(void *arg)
{
	const struct way *w = arg;

	w->take();
	sem_post(&taken);
	return NULL;
}

static void *holder_exit(void *arg)
{
	const struct way *w = arg;

	w->take();
	sem_post(&taken);
	pthread_exit(NULL);
}

/*
 * Held, then cancelled at its next cancellation point: pthread_testcancel(),
 * which ThreadSanitizer does not wrap (a cancellation acted on inside one
 * of its wrappers, such as pause()'s, leaves it blind to the thread's
 * later calls, the destructor's unlock among them).
 */
static void *holder_cancelled(void *arg)
{
	const struct way *w = arg;

	w->take();
	sem_post(&taken);
	for (;;) {
		pthread_testcancel();
		sched_yield();
	}
	return NULL;
}

static int holder_managed(void *arg)
{
	const struct way *w = arg;

	w->take();
	sem_post(&taken);
	return 7;
}

/* Start a thread that takes @w's lock and ends as @e says; joined. */
static void hold_and_end(const struct way *w, enum end e)
{
	static void *(*const fn[])(void *) = { holder, holder_exit,
					       holder_cancelled };
	struct devres_thread *t;
	pthread_t tid;
	void *ret;

	if (e == MANAGED) {
		t = devm_thread_run(&pdev->dev, holder_managed, (void *)w,
				    "kc-lock-exit");
		assert_false(IS_ERR(t));
		assert_int_equal(devm_thread_stop(&pdev->dev, t), 7);
		return;
	}
	assert_int_equal(pthread_create(&tid, NULL, fn[e], (void *)w), 0);
	if (e == CANCEL) {
		while (sem_wait(&taken))
			;
		assert_int_equal(pthread_cancel(tid), 0);
	}
	assert_int_equal(pthread_join(tid, &ret), 0);
	assert_ptr_equal(ret, e == CANCEL ? PTHREAD_CANCELED : NULL);
}

/* The captured line that holds both @a and @b, or NULL. */
static const char *said_both(const char *a, const char *b)
{
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		if (strstr(cap.line[i], a) && strstr(cap.line[i], b))
			return cap.line[i];
	return NULL;
}

static void check_ended(const struct way *w, enum end e)
{
	char head[128];
	int w0;

	snprintf(head, sizeof(head), "%s: %s (", w->func, w->lock);
	start_log_capture();
	w0 = devres_warn_count();
	hold_and_end(w, e);
	while (sem_trywait(&taken) == 0)
		;
	if (cap.n != 1 || !said_both(head, "still held when its thread ended: "
					   "let go"))
		print_error("%s, %s: want one \"%s...let go\", got %d: "
			    "\"%s\"\n",
			    w->func, end_name[e], head, cap.n, cap.line[0]);
	assert_int_equal(cap.n, 1);
	assert_int_equal(devres_warn_count() - w0, 1);
	assert_non_null(said_both(head, "still held when its thread ended: let "
					"go"));
	/* Free at once, and taken and let go again without a word. */
	assert_int_equal(w->try(), 1);
	w->give();
	w->take();
	w->give();
	assert_int_equal(cap.n, 1);
	devres_set_log_sink(NULL, NULL);
}

static int setup(void **state)
{
	(void)state;
	kc_alarm_setup(60);
	pdev = platform_device_alloc("kc-lock-exit", PLATFORM_DEVID_NONE);
	assert_non_null(pdev);
	assert_int_equal(platform_device_add(pdev), 0);
	mutex_init(&m_init);
	spin_lock_init(&s_init);
	raw_spin_lock_init(&s_raw);
	assert_int_equal(devm_mutex_init(&pdev->dev, &m_devm), 0);
	assert_int_equal(sem_init(&taken, 0, 0), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	platform_device_unregister(pdev);
	sem_destroy(&taken);
	return kc_alarm_teardown();
}

static void each_way_each_end(void **state)
{
	(void)state;
	for (enum end e = RETURN; e < NENDS; e++)
		for (size_t i = 0; i < NWAYS; i++)
			check_ended(&ways[i], e);
}

/* A thread that takes every lock and lets each go ends with no WARN. */
static void *taker_giver(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < NWAYS; i++) {
		ways[i].take();
		ways[i].give();
	}
	take_mutex();
	take_spin();
	take_raw();
	give_m_init(); /* not in the order taken */
	give_s_raw();
	give_s_init();
	return NULL;
}

static void let_go_no_warn(void **state)
{
	pthread_t tid;

	(void)state;
	start_log_capture();
	assert_int_equal(pthread_create(&tid, NULL, taker_giver, NULL), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(cap.n, 0);
	devres_set_log_sink(NULL, NULL);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static sem_t go;

/* Holds m_init until told, then ends. */
static void *hold_until_told(void *arg)
{
	(void)arg;
	mutex_lock(&m_init);
	sem_post(&taken);
	while (sem_wait(&go))
		;
	pthread_exit(NULL);
}

static void *waiter(void *arg)
{
	double *waited = arg, t0 = now_ms();

	mutex_lock(&m_init);
	*waited = now_ms() - t0;
	mutex_unlock(&m_init);
	return NULL;
}

/* A locker waiting while the holder ends proceeds, with the one WARN. */
static void waiter_proceeds(void **state)
{
	pthread_t h, w;
	double waited = -1;

	(void)state;
	assert_int_equal(sem_init(&go, 0, 0), 0);
	start_log_capture();
	assert_int_equal(pthread_create(&h, NULL, hold_until_told, NULL), 0);
	while (sem_wait(&taken))
		;
	assert_int_equal(pthread_create(&w, NULL, waiter, &waited), 0);
	sem_post(&go);
	assert_int_equal(pthread_join(h, NULL), 0);
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_true(waited >= 0);
	assert_int_equal(cap.n, 1);
	assert_non_null(said_both("mutex_lock: mutex '&m_init' (", "still held "
								   "when its "
								   "thread "
								   "ended: let "
								   "go"));
	assert_int_equal(try_m_init(), 1);
	give_m_init();
	devres_set_log_sink(NULL, NULL);
	sem_destroy(&go);
}

#define MANY (KCOMPAT_HELD_MAX + 1)
static struct mutex many[MANY];

static void *hold_many(void *arg)
{
	(void)arg;
	for (int i = 0; i < MANY; i++)
		mutex_lock(&many[i]);
	return NULL;
}

static void *hold_many_let_go(void *arg)
{
	(void)arg;
	for (int i = 0; i < MANY; i++)
		mutex_lock(&many[i]);
	for (int i = MANY - 1; i >= 0; i--)
		mutex_unlock(&many[i]);
	return NULL;
}

/*
 * One lock beyond the record: a WARN when it is taken, one for each lock
 * of the record and one for the rest at the end; the one beyond stays
 * held (beyond_taken_over()). Let go in order, none is left behind.
 */
static void beyond_the_record(void **state)
{
	pthread_t tid;

	(void)state;
	for (int i = 0; i < MANY; i++)
		mutex_init(&many[i]);
	start_log_capture();
	assert_int_equal(pthread_create(&tid, NULL, hold_many_let_go, NULL), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(cap.n, 1);
	assert_non_null(said_both("mutex_lock: mutex '&many[i]' (", "this "
								    "thread "
								    "holds 16 "
								    "compat "
								    "locks, "
								    "all its "
								    "record "
								    "keeps"));
	for (int i = 0; i < MANY; i++) {
		assert_int_equal(mutex_trylock(&many[i]), 1);
		mutex_unlock(&many[i]);
	}

	start_log_capture();
	assert_int_equal(pthread_create(&tid, NULL, hold_many, NULL), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(cap.n, 1 + KCOMPAT_HELD_MAX + 1);
	assert_int_equal(count_prefix("WARNING: (no device): mutex_lock: mutex "
				      "'&many[i]' ("),
			 1 + KCOMPAT_HELD_MAX);
	assert_non_null(said_both("pthread_exit: 1 more compat locks", "their "
								       "next "
								       "lockers"
								       " take "
								       "them "
								       "over"));
	for (int i = 0; i < KCOMPAT_HELD_MAX; i++) {
		assert_int_equal(mutex_trylock(&many[i]), 1);
		mutex_unlock(&many[i]);
	}
	assert_int_equal(mutex_trylock(&many[MANY - 1]), 0);
	devres_set_log_sink(NULL, NULL);
}

/*
 * ThreadSanitizer never sees a raw SYS_exit thread end, and reports the
 * unlock of a pthread mutex another thread locked, which is what a take
 * over is: the take-overs are said to be skipped there, not passed.
 */
#if defined(__SANITIZE_THREAD__)
#define SKIP_UNDER_TSAN() skip()
#else
#define SKIP_UNDER_TSAN() ((void)0)
#endif

/* The lock beyond_the_record() left held: its next locker takes it. */
static void beyond_taken_over(void **state)
{
	double t0;

	(void)state;
	SKIP_UNDER_TSAN();
	start_log_capture();
	t0 = now_ms();
	mutex_lock(&many[MANY - 1]);
	assert_true(now_ms() - t0 >= KCOMPAT_HELD_WAIT_MS * 0.9);
	assert_int_equal(cap.n, 1);
	assert_non_null(said_both("mutex_lock: mutex '&many[i]' (", "ended "
								    "without "
								    "letting "
								    "go of it: "
								    "taken "
								    "over"));
	mutex_unlock(&many[MANY - 1]);
	assert_int_equal(mutex_trylock(&many[MANY - 1]), 1);
	mutex_unlock(&many[MANY - 1]);
	devres_set_log_sink(NULL, NULL);
}

#define RAW_STACK (1024 * 1024)

/* Ends with no destructor run: the kernel's exit of this thread alone. */
static void *hold_raw_exit(void *arg)
{
	const struct way *w = arg;

	w->take();
	syscall(SYS_exit, 0);
	return NULL;
}

/* The next locker of each lock a raw SYS_exit left held takes it over. */
static void raw_exit_taken_over(void **state)
{
	(void)state;
	SKIP_UNDER_TSAN();
	for (size_t i = 0; i < NWAYS; i++) {
		const struct way *w = &ways[i];
		pthread_attr_t attr;
		pthread_t tid;
		void *stack;
		double t0;

		/*
		 * A stack of its own, unmapped after: glibc would give the
		 * one it keeps, with the gone thread's thread-specific data
		 * never cleared, to the next thread (AddressSanitizer checks
		 * that it is clear).
		 */
		stack = mmap(NULL, RAW_STACK, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(stack != MAP_FAILED);
		assert_int_equal(pthread_attr_init(&attr), 0);
		assert_int_equal(pthread_attr_setstack(&attr, stack, RAW_STACK),
				 0);
		start_log_capture();
		assert_int_equal(pthread_create(&tid, &attr, hold_raw_exit,
						(void *)w),
				 0);
		assert_int_equal(pthread_join(tid, NULL), 0);
		pthread_attr_destroy(&attr);
		assert_int_equal(munmap(stack, RAW_STACK), 0);
		assert_int_equal(cap.n, 0);
		assert_int_equal(w->try(), 0);
		t0 = now_ms();
		w->block();
		assert_true(now_ms() - t0 >= KCOMPAT_HELD_WAIT_MS * 0.9);
		assert_int_equal(cap.n, 1);
		assert_non_null(said_both(w->lock, "ended without letting go "
						   "of it: taken over"));
		w->give();
		assert_int_equal(w->try(), 1);
		w->give();
		assert_int_equal(cap.n, 1);
		devres_set_log_sink(NULL, NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_way_each_end),
		cmocka_unit_test(let_go_no_warn),
		cmocka_unit_test(waiter_proceeds),
		cmocka_unit_test(beyond_the_record),
		cmocka_unit_test(beyond_taken_over),
		cmocka_unit_test(raw_exit_taken_over),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
