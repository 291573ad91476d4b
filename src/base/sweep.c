// SPDX-License-Identifier: MIT
/*
 * The sweep: run an operation with a fault injected at call 1, 2, 3, ...
 * and check after each run that the ledger is back where it started. This
 * is talloc's run-allocfail, with the ledger instead of a heap walk, so it
 * sees every kind of resource a managed call holds, not only memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "sweep.h"

/*
 * The ledger counts the whole process, so two sweeps at once (nested, or in
 * two threads) would see each other's resources as leaks.
 */
static int sweeping;

/*
 * Prints what leaked, kind by kind, through the log sink: the ledger's diff
 * goes to a memory stream first, since the sink takes lines, not a FILE.
 */
static void report_kinds(const struct devres__sweep *s,
			 const struct devres_ledger *before,
			 const struct devres_ledger *after)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		devres__print(DEVRES_LOG_WARNING,
			      "%s:   (no memory for the diff)", s->label);
		return;
	}
	devres_ledger_diff(before, after, f);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		devres__print(DEVRES_LOG_WARNING, "%s: %s", s->label, line);
	free(buf);
}

static void report_leak(const struct devres__sweep *s, unsigned int point,
			bool injected, int ret,
			const struct devres_ledger *before,
			const struct devres_ledger *after)
{
	char err[24];

	devres__errname(ret, err, sizeof(err));
	if (injected)
		devres__print(DEVRES_LOG_WARNING,
			      "%s: leak at failure point %u (%s returned "
			      "%s%s); "
			      "reproduce with %s%u%s",
			      s->label, point, s->op_name, err,
			      ret >= 0 ? ", then undone" : "", s->repro_pre,
			      point, s->repro_post);
	else
		devres__print(DEVRES_LOG_WARNING,
			      "%s: leak after the run with no fault injected "
			      "(%s returned %s%s)",
			      s->label, s->op_name, err,
			      ret >= 0 ? ", then undone" : "");
	report_kinds(s, before, after);
}

/*
 * With the log on, every ADD and REL of every run goes to the sink: a line
 * before each run tells where one ends and the next begins.
 */
static void mark_run(const struct devres__sweep *s, unsigned int n)
{
	if (__atomic_load_n(&devres__log_on, __ATOMIC_RELAXED))
		devres__print(DEVRES_LOG_DEBUG,
			      "%s: ---- run %u: call %u of the %s fails ----",
			      s->label, n, n, s->op_name);
}

/*
 * One run with the n-th call failing. Injection is off again before @undo
 * and before the ledger is read: release paths are never injected.
 */
static int run_once(const struct devres__sweep *s, unsigned int n,
		    bool *ret_injected)
{
	int ret;

	devres_fail_nth(n);
	ret = s->op(s->ctx);
	*ret_injected = devres_fail_nth_get() == 0;
	devres_fail_nth(0);
	if (ret >= 0 && s->undo)
		s->undo(s->ctx);
	return ret;
}

int devres__sweep_run(const struct devres__sweep *s,
		      struct devres_sweep_result *ret_result)
{
	struct devres_sweep_result r = { 0, 0 };
	struct devres_ledger base, now;
	bool injected = true, failed;
	unsigned int n;
	char err[24];
	int ret = 0;

	if (__atomic_exchange_n(&sweeping, 1, __ATOMIC_ACQUIRE))
		return -EBUSY;
	devres_fail_nth(0);
	devres_ledger_snapshot(&base);
	for (n = 1; injected; n++) {
		if (n > DEVRES_SWEEP_MAX_POINTS)
			break;
		mark_run(s, n);
		ret = run_once(s, n, &injected);
		if (injected)
			r.points++;
		devres_ledger_snapshot(&now);
		if (devres_ledger_diff(&base, &now, NULL)) {
			r.leaks++;
			report_leak(s, n, injected, ret, &base, &now);
			base = now;
		}
	}
	/*
	 * An operation that fails with nothing injected never succeeds: its
	 * failure points were not reached, so "no leak" would say nothing.
	 * That is a failed sweep, whatever the leaks.
	 */
	failed = !injected && ret < 0;
	if (failed)
		devres__print(DEVRES_LOG_WARNING,
			      "%s: FAILED: %s returned %s with no fault "
			      "injected",
			      s->label, s->op_name,
			      devres__errname(ret, err, sizeof(err)));
	devres__print(r.leaks || injected || failed ? DEVRES_LOG_WARNING
						    : DEVRES_LOG_INFO,
		      "%s: %u failure points, %u leaks%s", s->label, r.points,
		      r.leaks,
		      injected ? " (gave up: it never ran to its end)"
		      : failed ? ", and the run with no fault failed"
			       : "");
	__atomic_store_n(&sweeping, 0, __ATOMIC_RELEASE);
	*ret_result = r;
	if (injected)
		return -ELOOP;
	if (failed)
		return -ECANCELED;
	return (int)r.leaks;
}

int devres_sweep(int (*op)(void *), void (*undo)(void *), void *ctx,
		 struct devres_sweep_result *ret_result)
{
	const struct devres__sweep s = {
		.label = "sweep",
		.op_name = "op",
		.repro_pre = "devres_fail_nth(",
		.repro_post = ") before the operation",
		.op = op,
		.undo = undo,
		.ctx = ctx,
	};

	if (!op || !ret_result) {
		devres__warn(NULL, __func__, "NULL %s",
			     op ? "result" : "operation");
		return -EINVAL;
	}
	return devres__sweep_run(&s, ret_result);
}
