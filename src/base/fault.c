// SPDX-License-Identifier: MIT
/*
 * fail-nth fault injection, with the kernel's semantics: arming n makes the
 * n-th fault-injectable call of this thread fail.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <devres/fault.h>
#include "internal.h"
#include "sweep.h"

TLS_FAST unsigned int devres__fail_nth;
unsigned int devres__fail_armed;

/* Every change of this thread's count goes through here (subsys.h). */
static void set_nth(unsigned int n)
{
	if (!devres__fail_nth != !n)
		__atomic_add_fetch(&devres__fail_armed, n ? 1u : -1u,
				   __ATOMIC_RELAXED);
	devres__fail_nth = n;
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *s = devres__getenv("DEVRES_FAIL_NTH");
	unsigned long n;
	char *end;

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
	if (hidden)
		return false;
	if (devres__fail_nth > 1) {
		devres__fail_nth--;
		return false;
	}
	set_nth(0);
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
	defer_nth = n;
}

unsigned int devres_defer_nth_get(void)
{
	return defer_nth;
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
	if (likely(!defer_nth) || hidden || --defer_nth)
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
	return devres__fail_nth;
}
