// SPDX-License-Identifier: MIT
/*
 * Log lines, WARNs and the WARN counter. Everything the library prints goes
 * through one sink, which the application may replace.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef NDEBUG
#include <execinfo.h>
#endif
#include "internal.h"

bool devres__log_on;
static int warn_count;
static devres_log_sink_t sink;
static void *sink_ctx;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void log_init(void)
{
	const char *s = devres__getenv("DEVRES_LOG");

	if (s && *s && strcmp(s, "0") != 0)
		devres__log_on = true;
}

void devres_set_log(bool on)
{
	__atomic_store_n(&devres__log_on, on, __ATOMIC_RELAXED);
}

void devres_set_log_sink(devres_log_sink_t new_sink, void *ctx)
{
	pthread_mutex_lock(&sink_lock);
	sink = new_sink;
	sink_ctx = ctx;
	pthread_mutex_unlock(&sink_lock);
}

int devres_warn_count(void)
{
	return __atomic_load_n(&warn_count, __ATOMIC_RELAXED);
}

static void emit(int level, const char *line)
{
	devres_log_sink_t s;
	void *ctx;

	pthread_mutex_lock(&sink_lock);
	s = sink;
	ctx = sink_ctx;
	pthread_mutex_unlock(&sink_lock);
	if (s)
		s(ctx, level, line);
	else
		fprintf(stderr, "%s\n", line);
}

void devres__print(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	emit(level, line);
}

/*
 * A label for @dev that is safe to print even when @dev is garbage: only an
 * initialized device is asked for its name.
 */
const char *devres__dev_label(const struct device *dev, char *buf, size_t len)
{
	if (!dev)
		return "(no device)";
	if (dev->magic == DEVRES_DEV_MAGIC && *dev_name(dev))
		return dev_name(dev);
	snprintf(buf, len, "device@%p", (const void *)dev);
	return buf;
}

void devres__log(const struct device *dev, const char *op, const void *node,
		 const char *name, size_t size)
{
	char buf[40];

	devres__print(DEVRES_LOG_DEBUG, "%s: DEVRES %-3s %p %s (%zu bytes)",
		      devres__dev_label(dev, buf, sizeof(buf)), op, node, name,
		      size);
}

static void backtrace_lines(void)
{
#ifndef NDEBUG
	const char *env = devres__getenv("DEVRES_WARN_BACKTRACE");
	void *frames[16];
	char **syms;
	int n;

	/* Debug builds show where a misuse came from, unless told not to. */
	if (env && strcmp(env, "0") == 0)
		return;
	n = backtrace(frames, 16);
	syms = backtrace_symbols(frames, n);

	for (int i = 2; syms && i < n; i++)
		devres__print(DEVRES_LOG_WARNING, "  %s", syms[i]);
	free(syms);
#endif
}

/*
 * A setuid, setgid or capability-raising process (AT_SECURE) may have a
 * less privileged user reading its stderr: the library says nothing of its
 * own there (a WARN names heap addresses) unless the program asked for it
 * with devres_set_log() or devres_set_log_sink(). The WARN still counts.
 */
static bool secure_quiet(void)
{
	bool quiet;

	if (!devres__secure() ||
	    __atomic_load_n(&devres__log_on, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&sink_lock);
	quiet = !sink;
	pthread_mutex_unlock(&sink_lock);
	return quiet;
}

void devres__warn(const struct device *dev, const char *func, const char *fmt,
		  ...)
{
	char reason[256], buf[40];
	va_list ap;

	__atomic_add_fetch(&warn_count, 1, __ATOMIC_RELAXED);
	if (secure_quiet())
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	devres__print(DEVRES_LOG_WARNING, "WARNING: %s: %s: %s",
		      devres__dev_label(dev, buf, sizeof(buf)), func, reason);
	backtrace_lines();
}
