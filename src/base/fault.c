// SPDX-License-Identifier: MIT
/*
 * fail-nth fault injection, with the kernel's semantics: arming n makes the
 * n-th fault-injectable call of this thread fail.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <devres/fault.h>
#include "internal.h"
#include "sweep.h"

TLS_FAST unsigned int devres__fail_nth;
unsigned int devres__fail_armed;

/*
 * A signal handler runs on its thread, inside any of these: each change
 * of a count is one instruction (an exchange, a compare-and-swap), so
 * that a handler's own change between the thread's read and its write is
 * neither lost nor undone. Nothing here is on a path of a process that
 * injects nothing (devres__fail_maybe()).
 */

/*
 * devres__fail_armed counts the threads whose count is not 0, so that a
 * process that injects nothing never reads its thread's count. A thread
 * that ends armed (its function returned, pthread_exit(), a cancellation)
 * takes itself off by the destructor of @armed_key, set as it arms: else
 * every fault point of the process took the slow path for good. A child
 * of fork() has one thread: the count is that thread's own (fault_child()).
 */
static pthread_key_t armed_key;
static bool have_key;

/* Every change of this thread's count goes through here (subsys.h). */
static void set_nth(unsigned int n)
{
	unsigned int old =
		__atomic_exchange_n(&devres__fail_nth, n, __ATOMIC_RELAXED);

	if (!old != !n)
		__atomic_add_fetch(&devres__fail_armed, n ? 1u : -1u,
				   __ATOMIC_RELAXED);
	/* Not again for each arming: the key's value stays until the end. */
	if (!old && n && have_key && !pthread_getspecific(armed_key))
		(void)pthread_setspecific(armed_key, &armed_key);
}

/* The thread ends: its count, if still armed, no longer counts. */
static void armed_thread_ended(void *key)
{
	(void)key;
	set_nth(0);
}

static void fault_child(void)
{
	__atomic_store_n(
		&devres__fail_armed,
		__atomic_load_n(&devres__fail_nth, __ATOMIC_RELAXED) ? 1u : 0u,
		__ATOMIC_RELAXED);
}

/* Counts @n down by one: true for the call that takes it to 0. */
static bool count_down(unsigned int *n)
{
	unsigned int v = __atomic_load_n(n, __ATOMIC_RELAXED);

	do {
		if (!v)
			return false; /* a handler's call took the last */
	} while (!__atomic_compare_exchange_n(
		n, &v, v - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return v == 1;
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *s = devres__getenv("DEVRES_FAIL_NTH");
	unsigned long n;
	char *end;

	have_key = !pthread_key_create(&armed_key, armed_thread_ended);
	devres__atfork(DEVRES_FORK_FAULT, NULL, NULL, fault_child);
	if (!s || !*s)
		return;
	errno = 0;
	n = strtoul(s, &end, 10);
	/* A value that is not a count arms nothing rather than something. */
	if (*s == '-' || *end || errno || n > UINT_MAX) {
		devres__warn(NULL, "DEVRES_FAIL_NTH", "'%s' is not a count", s);
		return;
	}
	set_nth((unsigned int)n);
}

/*
 * What the last injected fault failed, for the sweep's report; and how
 * deep this thread is in functions that hold no fault point.
 */
static TLS_FAST const char *fail_what;
static TLS_FAST int fail_err;
static TLS_FAST unsigned int hidden;

/* Whether the caller got over the last injected fault by design. */
static TLS_FAST bool absorbed;

/* fail-nth's twin for lookups that can defer (devres_should_defer()). */
static TLS_FAST unsigned int defer_nth;
static TLS_FAST const char *defer_what;

bool devres__fail_now(const char *what, int err)
{
	if (hidden || !count_down(&devres__fail_nth))
		return false;
	__atomic_sub_fetch(&devres__fail_armed, 1u, __ATOMIC_RELAXED);
	fail_what = what ? what : "devres_alloc";
	fail_err = err;
	absorbed = false;
	devres__site_fault();
	return true;
}

void devres__fault_hide(void)
{
	hidden++;
}

void devres__fault_show(void)
{
	hidden--;
}

const char *devres__fault_last(int *ret_err, bool *ret_absorbed)
{
	*ret_err = fail_err;
	*ret_absorbed = absorbed;
	return fail_what;
}

void devres_fault_absorbed(void)
{
	/* Only an injected fault is marked: none yet, nothing to mark. */
	if (fail_what)
		absorbed = true;
}

bool devres_should_fail(struct device *dev, const char *what)
{
	if (devres__opt_bad(NULL, dev, __func__, "device") ||
	    devres__opt_bad(NULL, what, __func__, "name"))
		return false;
	return devres__should_fail_as(what ? what : "devres_should_fail",
				      -ENOMEM);
}

void devres_defer_nth(unsigned int n)
{
	__atomic_store_n(&defer_nth, n, __ATOMIC_RELAXED);
}

unsigned int devres_defer_nth_get(void)
{
	return __atomic_load_n(&defer_nth, __ATOMIC_RELAXED);
}

const char *devres__defer_last(void)
{
	return defer_what;
}

bool devres_should_defer(struct device *dev, const char *what)
{
	if (devres__opt_bad(NULL, dev, __func__, "device") ||
	    devres__opt_bad(NULL, what, __func__, "name"))
		return false;
	if (likely(!__atomic_load_n(&defer_nth, __ATOMIC_RELAXED)) || hidden ||
	    !count_down(&defer_nth))
		return false;
	defer_what = what ? what : "devres_should_defer";
	devres__site_fault();
	return true;
}

void devres_fail_nth(unsigned int n)
{
	set_nth(n);
}

unsigned int devres_fail_nth_get(void)
{
	return __atomic_load_n(&devres__fail_nth, __ATOMIC_RELAXED);
}
