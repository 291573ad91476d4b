/* SPDX-License-Identifier: MIT */
/*
 * The sweep engine shared by devres_sweep() and driver_probe_sweep().
 */
#ifndef DEVRES_SWEEP_H
#define DEVRES_SWEEP_H

#include <devres/fault.h>
#include "internal.h"

/*
 * One sweep: @label starts every report line ("sweep", "probe sweep of X
 * on Y"), @op_name is what the report calls @op ("op", "probe"); a failure
 * point N is reproduced by "<repro_pre>N<repro_post>".
 */
struct devres__sweep {
	const char *label;
	const char *op_name;
	const char *repro_pre;
	const char *repro_post;
	int (*op)(void *ctx);
	void (*undo)(void *ctx);
	void *ctx;
	/*
	 * Run after the failure points, inside the sweep, when the run with
	 * no fault injected succeeded and made deferrable lookups: the defer
	 * sweep. @lookups is how many that run made, @done the ledger as it
	 * left it before its undo.
	 * Adds to the counts.
	 */
	void (*after)(const struct devres__sweep *s,
		      struct devres_sweep_result *r, unsigned int lookups,
		      const struct devres_ledger *done);
};

/* site.c: a source line a caller named (devres_call_site_enter()). */
struct devres__site {
	const char *file; /* base name; NULL when none was named */
	int line;
	const char *what; /* the call made there */
};

/* Forgets what the last run recorded; at the start of each run. */
HIDDEN void devres__site_reset(void);
/* At an injected fault or deferral: the current line is the failure's. */
HIDDEN void devres__site_fault(void);
/* dev_err_probe(): the current line returns @err. */
HIDDEN void devres__site_return(int err);
/*
 * What this thread recorded since the reset: the failure's line, the
 * first call after it, and the last dev_err_probe() with its errno.
 */
HIDDEN void devres__site_get(struct devres__site *ret_failed,
			     struct devres__site *ret_after,
			     struct devres__site *ret_returned, int *ret_err);

/* fault.c: what the last injected fault or deferral was. */
HIDDEN const char *devres__fault_last(int *ret_err, bool *ret_absorbed);
HIDDEN const char *devres__defer_last(void);

/* sweep.c: a problem line ("<label>: <text>") at warning level. */
HIDDEN void devres__sweep_say(const struct devres__sweep *s, const char *fmt,
			      ...) DEVRES_PRINTF(2, 3);
/*
 * "; it failed at kdma.c:92, and the probe went on at kdma.c:99 (kcalloc)":
 * where a finding happened, as far as the caller named its lines (site.c);
 * "" when it named none.
 */
HIDDEN void devres__sweep_where(const struct devres__sweep *s, int ret,
				const struct devres__site *failed,
				const struct devres__site *after,
				const struct devres__site *returned,
				int returned_err, char *buf, size_t size);
/* Prints the kinds that differ between two snapshots, as a leak does. */
HIDDEN void devres__sweep_kinds(const struct devres__sweep *s,
				const struct devres_ledger *before,
				const struct devres_ledger *after);

/*
 * Runs a sweep; the caller has checked its arguments. Returns as
 * devres_sweep() does (the number of leaking runs, -EBUSY, -ELOOP,
 * -ECANCELED).
 */
HIDDEN int devres__sweep_run(const struct devres__sweep *s,
			     struct devres_sweep_result *ret_result);

#endif /* DEVRES_SWEEP_H */
