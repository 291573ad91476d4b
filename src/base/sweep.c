// SPDX-License-Identifier: MIT
/*
 * The sweep: run an operation with a fault injected at call 1, 2, 3, ...
 * and check after each run that the ledger is back where it started. This
 * is talloc's run-allocfail, with the ledger instead of a heap walk, so it
 * sees every kind of resource a managed call holds, not only memory.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "sweep.h"

/*
 * The ledger counts the whole process, so two sweeps at once (nested, or in
 * two threads) would see each other's resources as leaks. my_sweep: this
 * thread's is the one under way.
 */
static int sweeping;
static TLS_FAST bool my_sweep;

static bool strict;

/*
 * A child of fork() has only the forking thread: a sweep another thread
 * of the parent had under way is not the child's, and left marked it
 * refused every sweep of the child with -EBUSY. One the forking thread
 * runs (a fork from its operation) goes on in the child.
 */
static void sweep_forked(void)
{
	__atomic_store_n(&sweeping, my_sweep, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void sweep_init(void)
{
	const char *v = devres__getenv("DEVRES_SWEEP_STRICT");

	strict = v && *v && *v != '0';
	devres__atfork(DEVRES_FORK_SWEEP, NULL, NULL, sweep_forked);
}

void devres_sweep_set_strict(bool on)
{
	__atomic_store_n(&strict, on, __ATOMIC_RELAXED);
}

void devres__sweep_say(const struct devres__sweep *s, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	devres__print(DEVRES_LOG_WARNING, "%s: %s", s->label, line);
}

/*
 * Prints what differs, kind by kind, through the log sink: the ledger's
 * diff goes to a memory stream first, since the sink takes lines, not a
 * FILE.
 */
void devres__sweep_kinds(const struct devres__sweep *s,
			 const struct devres_ledger *before,
			 const struct devres_ledger *after)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		devres__sweep_say(s, "  (no memory for the diff)");
		return;
	}
	devres_ledger_diff(before, after, f);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		devres__sweep_say(s, "%s", line);
	free(buf);
}

/* What one run did, for its report. */
struct run {
	unsigned int n;
	bool injected;
	int ret;
	int warns;	  /* WARNs printed by the operation and its undo */
	const char *what; /* the failure point's acquisition */
	int err;	  /* the errno its failure looks like, 0 unknown */
	bool absorbed;	  /* its caller got over it (devres_fault_absorbed()) */
	unsigned int lookups;	   /* deferrable lookups it made */
	struct devres_ledger done; /* after a successful operation */
	/* Where the caller named its lines (devres_call_site_enter()). */
	struct devres__site failed, after, returned;
	int returned_err;
};

static void report_leak(const struct devres__sweep *s, const struct run *run,
			const struct devres_ledger *before,
			const struct devres_ledger *after)
{
	char err[24];

	devres__errname(run->ret, err, sizeof(err));
	if (run->injected)
		devres__sweep_say(s,
				  "leak at failure point %u (%s returned "
				  "%s%s); reproduce with %s%u%s",
				  run->n, s->op_name, err,
				  run->ret >= 0 ? ", then undone" : "",
				  s->repro_pre, run->n, s->repro_post);
	else
		devres__sweep_say(s,
				  "leak after the run with no fault injected "
				  "(%s returned %s%s)",
				  s->op_name, err,
				  run->ret >= 0 ? ", then undone" : "");
	devres__sweep_kinds(s, before, after);
}

/*
 * Where a finding happened, as far as the caller named its lines: the
 * failed call's line, then the line the operation returned from
 * (dev_err_probe() with the errno it returned), or the first call it
 * made after the failure (it went on), or that it made none. Empty when
 * no line was named.
 */
void devres__sweep_where(const struct devres__sweep *s, int ret,
			 const struct devres__site *failed,
			 const struct devres__site *after,
			 const struct devres__site *returned, int returned_err,
			 char *buf, size_t size)
{
	int n;

	buf[0] = '\0';
	if (!failed->file)
		return;
	n = snprintf(buf, size, "; it failed at %s:%d", failed->file,
		     failed->line);
	if (n < 0 || (size_t)n >= size)
		return;
	if (returned->file && ret < 0 && returned_err == ret)
		snprintf(buf + n, size - (size_t)n,
			 ", and the %s returned at %s:%d (dev_err_probe)",
			 s->op_name, returned->file, returned->line);
	else if (after->file)
		snprintf(buf + n, size - (size_t)n,
			 ", and the %s went on at %s:%d (%s)", s->op_name,
			 after->file, after->line,
			 after->what ? after->what : "a call");
	else
		snprintf(buf + n, size - (size_t)n,
			 ", and the %s called nothing after it", s->op_name);
}

/*
 * A run's line: the failure point, by the acquisition that failed, and
 * what the operation made of it; at warning level when something is
 * wrong with the run, else only with the log on. Problems (WARNs, a
 * finding) follow on their own lines.
 */
static void report_run(const struct devres__sweep *s, const struct run *run,
		       bool leaked, struct devres_sweep_result *r)
{
	bool finding = false, changed = false;
	char ret[24], want[24], where[200], at[80];

	/* A success is what a fallback is for: no finding. */
	if (run->injected && run->ret >= 0 && run->absorbed)
		finding = false;
	else if (run->injected && run->ret >= 0)
		finding = true;
	else if (run->injected && run->err && run->ret != run->err)
		finding = changed = true;
	devres__errname(run->ret, ret, sizeof(ret));
	snprintf(at, sizeof(at), "%s:%d",
		 run->failed.file ? run->failed.file : "", run->failed.line);
	if (run->injected &&
	    (run->warns || finding || leaked || devres__logging()))
		devres__print(run->warns || finding || leaked
				      ? DEVRES_LOG_WARNING
				      : DEVRES_LOG_DEBUG,
			      "%s: failure point %u: %s fails, %s returned "
			      "%s%s%s%s",
			      s->label, run->n, run->what, s->op_name, ret,
			      run->failed.file ? " (" : "",
			      run->failed.file ? at : "",
			      run->failed.file ? ")" : "");
	if (run->warns) {
		r->warns++;
		devres__sweep_say(
			s,
			"FAIL: %d WARN%s during the %s and its "
			"release%s",
			run->warns, run->warns > 1 ? "s" : "", s->op_name,
			run->injected ? "" : " (run with no fault injected)");
	}
	if (!finding)
		return;
	r->findings++;
	devres__sweep_where(s, run->ret, &run->failed, &run->after,
			    &run->returned, run->returned_err, where,
			    sizeof(where));
	if (changed) {
		devres__errname(run->err, want, sizeof(want));
		devres__sweep_say(s,
				  "finding: %s fails with %s, but the %s "
				  "returned %s: the error was changed on its "
				  "way up%s",
				  run->what, want, s->op_name, ret, where);
	} else {
		devres__sweep_say(s,
				  "finding: the %s returned %s although %s "
				  "failed: an optional acquisition, or an "
				  "error swallowed%s",
				  s->op_name, ret, run->what, where);
	}
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
static void run_once(const struct devres__sweep *s, struct run *run)
{
	int warns = devres_warn_count();

	/*
	 * Deferrals are armed past reach, to count the deferrable lookups
	 * the operation made: the defer sweep runs only when there were some.
	 */
	devres_defer_nth(UINT_MAX);
	devres__site_reset();
	devres_fail_nth(run->n);
	run->ret = s->op(s->ctx);
	run->injected = devres_fail_nth_get() == 0;
	devres_fail_nth(0);
	run->lookups = UINT_MAX - devres_defer_nth_get();
	devres_defer_nth(0);
	devres__site_get(&run->failed, &run->after, &run->returned,
			 &run->returned_err);
	if (run->ret >= 0)
		devres_ledger_snapshot(&run->done);
	if (run->ret >= 0 && s->undo)
		s->undo(s->ctx);
	run->warns = devres_warn_count() - warns;
	run->what = NULL;
	run->err = 0;
	run->absorbed = false;
	if (run->injected)
		run->what = devres__fault_last(&run->err, &run->absorbed);
}

/*
 * "<label>: N failure points, L leaks", then only the counts that are not
 * zero, so that a plain sweep reads as it always did.
 */
static void report_summary(const struct devres__sweep *s,
			   const struct devres_sweep_result *r, bool is_strict,
			   bool bad, const char *end)
{
	char more[160] = "";
	size_t len = 0;

	if (r->warns)
		len += (size_t)snprintf(more + len, sizeof(more) - len,
					", %u with WARNs", r->warns);
	if (r->findings)
		len += (size_t)snprintf(more + len, sizeof(more) - len,
					", %u findings%s", r->findings,
					is_strict ? " (strict)" : "");
	if (r->defer_points)
		len += (size_t)snprintf(more + len, sizeof(more) - len,
					", %u defer points", r->defer_points);
	if (r->defer_failures)
		snprintf(more + len, sizeof(more) - len, ", %u defer failures",
			 r->defer_failures);
	devres__print(bad || r->findings || *end ? DEVRES_LOG_WARNING
						 : DEVRES_LOG_INFO,
		      "%s: %u failure points, %u leaks%s%s", s->label,
		      r->points, r->leaks, more, end);
}

/*
 * The operation ended the thread (a probe that called pthread_exit(), say):
 * the sweep is over, and another may start; the driver core took back
 * what the operation held, with its WARN.
 */
static void sweep_ended(void *arg)
{
	(void)arg;
	my_sweep = false;
	__atomic_store_n(&sweeping, 0, __ATOMIC_RELEASE);
}

int devres__sweep_run(const struct devres__sweep *s,
		      struct devres_sweep_result *ret_result)
{
	struct devres_sweep_result r = { 0 };
	struct devres_ledger base, now;
	struct run run = { .injected = true };
	unsigned int bad;
	bool failed, is_strict, leaked;
	char err[24];

	if (__atomic_exchange_n(&sweeping, 1, __ATOMIC_ACQUIRE))
		return -EBUSY;
	my_sweep = true;
	is_strict = __atomic_load_n(&strict, __ATOMIC_RELAXED);
	devres_fail_nth(0);
	devres_ledger_snapshot(&base);
	pthread_cleanup_push(sweep_ended, NULL);
	for (run.n = 1; run.injected; run.n++) {
		if (run.n > DEVRES_SWEEP_MAX_POINTS)
			break;
		mark_run(s, run.n);
		run_once(s, &run);
		if (run.injected)
			r.points++;
		devres_ledger_snapshot(&now);
		leaked = devres_ledger_diff(&base, &now, NULL) != 0;
		report_run(s, &run, leaked, &r);
		if (leaked) {
			r.leaks++;
			report_leak(s, &run, &base, &now);
			base = now;
		}
	}
	/*
	 * An operation that fails with nothing injected never succeeds: its
	 * failure points were not reached, so "no leak" would say nothing.
	 * That is a failed sweep, whatever the leaks.
	 */
	failed = !run.injected && run.ret < 0;
	if (failed)
		devres__sweep_say(s,
				  "FAILED: %s returned %s with no fault "
				  "injected",
				  s->op_name,
				  devres__errname(run.ret, err, sizeof(err)));
	else if (!run.injected && s->after && run.lookups)
		s->after(s, &r, run.lookups, &run.done);
	pthread_cleanup_pop(0);
	bad = r.leaks + r.warns + r.defer_failures +
	      (is_strict ? r.findings : 0);
	report_summary(s, &r, is_strict, bad != 0,
		       run.injected ? " (gave up: it never ran to its end)"
		       : failed	    ? ", and the run with no fault failed"
				    : "");
	my_sweep = false;
	__atomic_store_n(&sweeping, 0, __ATOMIC_RELEASE);
	*ret_result = r;
	if (run.injected)
		return -ELOOP;
	if (failed)
		return -ECANCELED;
	return (int)bad;
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

	if (devres__arg_bad(NULL, (const void *)op, __func__, "operation") ||
	    devres__opt_bad(NULL, (const void *)undo, __func__, "undo") ||
	    devres__arg_bad(NULL, ret_result, __func__, "result"))
		return -EINVAL;
	return devres__sweep_run(&s, ret_result);
}
