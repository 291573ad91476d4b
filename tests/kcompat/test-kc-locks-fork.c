// SPDX-License-Identifier: MIT
/* ctest-labels: stress kcompat tsan */
/*
 * fork() while a thread of the parent holds every kind of compat lock: a
 * mutex made by mutex_init(), one by devm_mutex_init(), one of static
 * storage (DEFINE_MUTEX()), a spinlock made by spin_lock_init(), a static
 * one (DEFINE_SPINLOCK()) and a raw one. In the child, every call of the
 * table on each returns at once (each used to wait for the parent's
 * thread, which is not in the child, for ever: the alarm ends a hang):
 * a lock call takes nothing and WARNs once naming the call and the
 * parent, a trylock returns 0 with its WARN, an interruptible or killable
 * lock returns -EINTR with its WARN, an unlock does nothing without a
 * WARN, mutex_destroy() WARNs and destroys nothing. Then an init makes
 * each lock the child's and the calls work with no WARN; a lock of the
 * child's own, and a static one the parent never used, work too. In the
 * parent the locks are still its own, held by its thread, then free.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include "kcompat/kctest.h"
#include "base/fork-park.h"

#define CHILDREN 4
#define CHILD_ALARM_S 10

static struct mutex m_init, m_devm;
static DEFINE_MUTEX(m_static);
static DEFINE_MUTEX(m_unused); /* the parent never takes it */
static spinlock_t s_init;
static DEFINE_SPINLOCK(s_static);
static raw_spinlock_t s_raw;

/* The parent's holder: takes every lock, then waits to be told to let go. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool holding, let_go;

static void *holder(void *arg)
{
	unsigned long flags;

	(void)arg;
	mutex_lock(&m_init);
	mutex_lock(&m_devm);
	mutex_lock(&m_static);
	spin_lock(&s_init);
	spin_lock_irqsave(&s_static, flags);
	raw_spin_lock(&s_raw);
	pthread_mutex_lock(&hold_lock);
	holding = true;
	pthread_cond_broadcast(&hold_cond);
	while (!let_go)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	raw_spin_unlock(&s_raw);
	spin_unlock_irqrestore(&s_static, flags);
	spin_unlock(&s_init);
	mutex_unlock(&m_static);
	mutex_unlock(&m_devm);
	mutex_unlock(&m_init);
	return NULL;
}

/* What a call must do to the WARN count: +1 (refused, said) or 0. */
#define WARNS(n, call)                                                         \
	do {                                                                   \
		int w0 = devres_warn_count();                                  \
		call;                                                          \
		CHILD_CHECK(devres_warn_count() == w0 + (n));                  \
	} while (0)

/* Every mutex call on @m, the parent's. */
static void mutex_calls_refused(struct mutex *m)
{
	WARNS(1, mutex_lock(m));
	WARNS(0, mutex_unlock(m));
	WARNS(1, mutex_lock_nested(m, 1));
	WARNS(0, mutex_unlock(m));
	WARNS(1, CHILD_CHECK(mutex_lock_interruptible(m) == -EINTR));
	WARNS(1, CHILD_CHECK(mutex_lock_killable(m) == -EINTR));
	WARNS(1, CHILD_CHECK(mutex_trylock(m) == 0));
	WARNS(1, mutex_destroy(m));
}

/* ... and on @m made the child's: each works, silently. */
static void mutex_calls_work(struct mutex *m)
{
	WARNS(0, mutex_lock(m));
	WARNS(0, CHILD_CHECK(mutex_trylock(m) == 0)); /* held: by us */
	WARNS(0, mutex_unlock(m));
	WARNS(0, mutex_lock_nested(m, 1));
	WARNS(0, mutex_unlock(m));
	WARNS(0, CHILD_CHECK(mutex_lock_interruptible(m) == 0));
	WARNS(0, mutex_unlock(m));
	WARNS(0, CHILD_CHECK(mutex_lock_killable(m) == 0));
	WARNS(0, mutex_unlock(m));
	WARNS(0, CHILD_CHECK(mutex_trylock(m) == 1));
	WARNS(0, mutex_unlock(m));
}

/* Every spinlock call on @s; @n: 1 for the parent's, 0 for the child's. */
static void spin_calls(spinlock_t *s, int n)
{
	unsigned long flags = 1;

	WARNS(n, spin_lock(s));
	WARNS(0, spin_unlock(s));
	WARNS(n, spin_lock_irq(s));
	WARNS(0, spin_unlock_irq(s));
	WARNS(n, spin_lock_bh(s));
	WARNS(0, spin_unlock_bh(s));
	WARNS(n, spin_lock_irqsave(s, flags));
	CHILD_CHECK(flags == 0);
	WARNS(0, spin_unlock_irqrestore(s, flags));
	WARNS(n, raw_spin_lock(s));
	WARNS(0, raw_spin_unlock(s));
	WARNS(n, raw_spin_lock_irqsave(s, flags));
	WARNS(0, raw_spin_unlock_irqrestore(s, flags));
	WARNS(n, CHILD_CHECK(spin_trylock(s) == !n));
	if (!n)
		spin_unlock(s);
}

static void child(void)
{
	struct mutex mine;
	spinlock_t mine_s;
	char want[64];

	alarm(CHILD_ALARM_S);
	start_capture();
	mutex_calls_refused(&m_init);
	mutex_calls_refused(&m_devm);
	mutex_calls_refused(&m_static);
	spin_calls(&s_init, 1);
	spin_calls(&s_static, 1);
	spin_calls(&s_raw, 1);
	devres_set_log_sink(NULL, NULL);
	snprintf(want, sizeof(want), "belongs to process %d: not taken",
		 (int)getppid());
	CHILD_CHECK(kc_said(want));
	CHILD_CHECK(kc_said("mutex_lock_killable: mutex "));
	CHILD_CHECK(kc_said("raw_spin_lock_irqsave: spinlock "));
	CHILD_CHECK(kc_said("mutex_destroy: mutex "));
	CHILD_CHECK(kc_said("not destroyed"));

	/* Made the child's: all the calls work, silently. */
	mutex_init(&m_init);
	mutex_init(&m_static);
	spin_lock_init(&s_init);
	spin_lock_init(&s_static);
	raw_spin_lock_init(&s_raw);
	mutex_calls_work(&m_init);
	mutex_calls_work(&m_static);
	spin_calls(&s_init, 0);
	spin_calls(&s_static, 0);
	spin_calls(&s_raw, 0);
	/* The child's own, and a static one the parent never used. */
	mutex_init(&mine);
	spin_lock_init(&mine_s);
	mutex_calls_work(&mine);
	mutex_calls_work(&m_unused);
	spin_calls(&mine_s, 0);
	WARNS(0, mutex_destroy(&mine));
	_exit(0);
}

static int probe(struct platform_device *pdev)
{
	return devm_mutex_init(&pdev->dev, &m_devm);
}

static struct platform_driver drv = {
	.probe = probe,
	.driver = { .name = "kc-locks-fork" },
};

static void *nothing(void *arg)
{
	return arg;
}

static void children_while_the_parent_holds(void **state)
{
	struct platform_device *pdev;
	int steady, warns;
	pthread_t t;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	kc_bare_setup(&pdev, "kc-locks-fork", &drv, false);
	mutex_init(&m_init);
	spin_lock_init(&s_init);
	raw_spin_lock_init(&s_raw);
	/* The runtime's own threads, if any, before the count. */
	assert_int_equal(pthread_create(&t, NULL, nothing, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	steady = count_entries("/proc/self/task") + 1;
	assert_int_equal(pthread_create(&t, NULL, holder, NULL), 0);
	pthread_mutex_lock(&hold_lock);
	while (!holding)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	warns = devres_warn_count();
	for (int i = 0; i < CHILDREN; i++) {
		int status;
		pid_t pid;

		assert_true(fork_park_settle(steady));
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status))
			fail_msg("child %d: signal %d (a hang: the alarm)", i,
				 WTERMSIG(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	/* The parent's: held by its thread, refused to nobody here. */
	assert_int_equal(mutex_trylock(&m_init), 0);
	assert_int_equal(spin_trylock(&s_raw), 0);
	pthread_mutex_lock(&hold_lock);
	let_go = true;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(mutex_trylock(&m_init), 1);
	mutex_unlock(&m_init);
	assert_int_equal(devres_warn_count(), warns);
	mutex_destroy(&m_init);
	assert_int_equal(kc_bare_teardown(pdev, &drv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(children_while_the_parent_holds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
