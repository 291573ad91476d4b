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
};

/*
 * Runs a sweep; the caller has checked its arguments. Returns as
 * devres_sweep() does (the number of leaking runs, -EBUSY, -ELOOP,
 * -ECANCELED).
 */
HIDDEN int devres__sweep_run(const struct devres__sweep *s,
			     struct devres_sweep_result *ret_result);

#endif /* DEVRES_SWEEP_H */
