// SPDX-License-Identifier: MIT
/*
 * Call sites for the sweep's report. Code built outside the library (the
 * compat headers' acquisition calls) names the source line of each call
 * it makes; a fault or a deferral injected inside that call records the
 * line, and the first call the caller makes after it records its own, so
 * that a report can say "devm_kcalloc (kdma.c:92) failed; the probe went
 * on at kdma.c:99". Only the outermost call names itself: a framework
 * call that allocates inside stays the driver's line. Everything here is
 * per thread, as fail-nth is; nothing is read on the fast path.
 */
#include <string.h>
#include <devres/fault.h>
#include "internal.h"
#include "sweep.h"

static TLS_FAST struct devres__site cur;
static TLS_FAST unsigned int depth;
static TLS_FAST struct devres__site failed;   /* where the fault was */
static TLS_FAST struct devres__site after;    /* the first call after it */
static TLS_FAST struct devres__site returned; /* dev_err_probe() */
static TLS_FAST int returned_err;
static TLS_FAST bool watching; /* a fault was injected, no call since */

/* The base name: a report line has room for "kdma.c", not a build path. */
static const char *base(const char *file)
{
	const char *s = file ? strrchr(file, '/') : NULL;

	return s ? s + 1 : file;
}

/*
 * Calls named nest as deep as the driver's calls do: a depth past this
 * is a leak of enters (a leave skipped in a loop), which would otherwise
 * wrap the count to zero and make the next enter an outermost one.
 */
#define SITE_DEPTH_MAX (1u << 16)

void devres_call_site_enter(const char *file, int line, const char *what)
{
	if (depth >= SITE_DEPTH_MAX) {
		devres__warn(NULL, __func__,
			     "%u calls entered without a leave: refused",
			     SITE_DEPTH_MAX);
		return;
	}
	/* Counted all the same, so that its leave stays paired and quiet. */
	if (devres__arg_bad(NULL, file, __func__, "file") ||
	    devres__arg_bad(NULL, what, __func__, "what")) {
		depth++;
		return;
	}
	if (depth++)
		return;
	cur = (struct devres__site){ .file = base(file),
				     .line = line,
				     .what = what };
	/* dev_err_probe() reports the failure; it is not going on. */
	if (watching && strcmp(what, "dev_err_probe") != 0) {
		after = cur;
		watching = false;
	}
}

void devres_call_site_leave(void)
{
	if (!depth) {
		devres__warn(NULL, __func__, "no call site entered");
		return;
	}
	if (!--depth)
		cur = (struct devres__site){ 0 };
}

void devres__site_reset(void)
{
	failed = after = returned = (struct devres__site){ 0 };
	returned_err = 0;
	watching = false;
}

void devres__site_fault(void)
{
	failed = cur;
	after = (struct devres__site){ 0 };
	watching = true;
}

void devres__site_return(int err)
{
	if (!depth)
		return;
	returned = cur;
	returned_err = err;
}

void devres__site_get(struct devres__site *ret_failed,
		      struct devres__site *ret_after,
		      struct devres__site *ret_returned, int *ret_err)
{
	*ret_failed = failed;
	*ret_after = after;
	*ret_returned = returned;
	*ret_err = returned_err;
}
