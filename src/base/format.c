// SPDX-License-Identifier: MIT
/*
 * A caller's printf format, checked before it is used. %n stores through
 * a pointer argument: the kernel's printf refuses it (WARN) and writes
 * nothing, and a log line, a WARN's reason, a name or a managed string
 * must not write to the caller's memory either.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "subsys.h"

/* Skips "<digits>$" at @p, if it is there: a positional argument. */
static const char *skip_pos(const char *p)
{
	const char *q = p;

	while (*q >= '0' && *q <= '9')
		q++;
	return q != p && *q == '$' ? q + 1 : p;
}

static const char *skip_digits_or_star(const char *p)
{
	if (*p == '*')
		return skip_pos(p + 1);
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

/* The first conversion of @fmt that is %n (any length), or NULL. */
const char *devres__fmt_store(const char *fmt)
{
	for (const char *p = strchr(fmt, '%'); p; p = strchr(p, '%')) {
		p++;
		if (*p == '%') {
			p++;
			continue;
		}
		p = skip_pos(p);
		p += strspn(p, "-+ #0'I");
		p = skip_digits_or_star(p);
		if (*p == '.')
			p = skip_digits_or_star(p + 1);
		p += strspn(p, "hlLqjztZ");
		if (*p == 'n')
			return p;
		if (!*p)
			break;
	}
	return NULL;
}

bool devres__fmt_bad(const struct device *dev, const char *func,
		     const char *fmt)
{
	const char *n = devres__fmt_store(fmt);

	if (!n)
		return false;
	devres__warn(dev, func, "%%n in the format (at %td): nothing written",
		     n - fmt);
	return true;
}

/*
 * vsnprintf() sets errno when a conversion fails (EILSEQ: a wide
 * string the locale cannot convert; EOVERFLOW): a log call keeps the
 * caller's. A line longer than @buf is cut, and ends with "..." to say
 * so.
 */
void devres__vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	int err = errno, n;

	n = vsnprintf(buf, len, fmt, ap);
	if (n >= 0 && (size_t)n >= len && len > 4)
		memcpy(&buf[len - 4], "...", 4);
	errno = err;
}

bool devres_format_bad(const struct device *dev, const char *func,
		       const char *fmt)
{
	if (devres__arg_bad(NULL, func, __func__, "func") ||
	    devres__arg_bad(dev, fmt, func, "format"))
		return true;
	return devres__fmt_bad(dev, func, fmt);
}
