// SPDX-License-Identifier: MIT
/*
 * The WARN path for code built on the library (the kernel-compat headers):
 * what they catch is reported, and counted, as the library's own misuses
 * are, and a managed resource they see given back by hand is reported in
 * the words of the library's own (disown.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <devres/devres.h>
#include "subsys.h"

void devres_warn(const struct device *dev, const char *func, const char *fmt,
		 ...)
{
	char msg[256];
	va_list ap;

	if (devres__arg_bad(NULL, func, __func__, "func") ||
	    devres__arg_bad(NULL, fmt, __func__, "fmt") ||
	    devres__fmt_bad(dev, func, fmt))
		return;
	va_start(ap, fmt);
	devres__vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	devres__warn(dev, func, "%s", msg);
}

void devres_warn_managed(const struct device *dev, const char *func,
			 const char *what, const char *call, const char *fix)
{
	char buf[40];

	if (devres__arg_bad(NULL, func, __func__, "func") ||
	    devres__arg_bad(NULL, what, __func__, "what") ||
	    devres__arg_bad(NULL, call, __func__, "call") ||
	    devres__arg_bad(NULL, fix, __func__, "fix"))
		return;
	devres__warn_label(devres__dev_label(dev, buf, sizeof(buf)), func,
			   DEVRES__HAND_FMT, what, call, fix);
}
