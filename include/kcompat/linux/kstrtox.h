/* SPDX-License-Identifier: MIT */
/*
 * kstrto*(): a whole string to a number, as the kernel parses what user
 * space writes to an attribute: one trailing newline allowed, nothing
 * else; base 0 takes a 0x or 0 prefix.
 */
#ifndef KCOMPAT_LINUX_KSTRTOX_H
#define KCOMPAT_LINUX_KSTRTOX_H

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <linux/types.h>

/* The value of @s, which must be all digits (and one "\n"), in @ret. */
static inline int kcompat_strtoull(const char *s, unsigned int base,
				   unsigned long long *ret)
{
	unsigned long long v;
	char *end;

	/* strtoull() takes a sign and leading blanks; the kernel does not. */
	if (!isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, (int)base);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s || (*end && !(end[0] == '\n' && !end[1])))
		return -EINVAL;
	*ret = v;
	return 0;
}

static inline int kcompat_strtoll(const char *s, unsigned int base,
				  long long *ret)
{
	unsigned long long v;
	int err;

	if (*s == '-') {
		err = kcompat_strtoull(s + 1, base, &v);
		if (err)
			return err;
		if (v > (unsigned long long)LLONG_MAX + 1)
			return -ERANGE;
		*ret = v ? -(long long)(v - 1) - 1 : 0;
		return 0;
	}
	err = kcompat_strtoull(*s == '+' ? s + 1 : s, base, &v);
	if (err)
		return err;
	if (v > LLONG_MAX)
		return -ERANGE;
	*ret = (long long)v;
	return 0;
}

/* kstrtoX(s, base, res) for an unsigned type of at most MAX. */
#define KCOMPAT_KSTRTOU(name, type, max)                                       \
	static inline int name(const char *s, unsigned int base, type *res)    \
	{                                                                      \
		unsigned long long v;                                          \
		int err = kcompat_strtoull(*s == '+' ? s + 1 : s, base, &v);   \
		if (err)                                                       \
			return err;                                            \
		if (v > (max))                                                 \
			return -ERANGE;                                        \
		*res = (type)v;                                                \
		return 0;                                                      \
	}
#define KCOMPAT_KSTRTOS(name, type, min, max)                                  \
	static inline int name(const char *s, unsigned int base, type *res)    \
	{                                                                      \
		long long v;                                                   \
		int err = kcompat_strtoll(s, base, &v);                        \
		if (err)                                                       \
			return err;                                            \
		if (v < (min) || v > (max))                                    \
			return -ERANGE;                                        \
		*res = (type)v;                                                \
		return 0;                                                      \
	}

KCOMPAT_KSTRTOU(kstrtoull, unsigned long long, ULLONG_MAX)
KCOMPAT_KSTRTOU(kstrtoul, unsigned long, ULONG_MAX)
KCOMPAT_KSTRTOU(kstrtouint, unsigned int, UINT_MAX)
KCOMPAT_KSTRTOU(kstrtou16, u16, 0xffff)
KCOMPAT_KSTRTOU(kstrtou8, u8, 0xff)
KCOMPAT_KSTRTOS(kstrtoll, long long, LLONG_MIN, LLONG_MAX)
KCOMPAT_KSTRTOS(kstrtol, long, LONG_MIN, LONG_MAX)
KCOMPAT_KSTRTOS(kstrtoint, int, INT_MIN, INT_MAX)
KCOMPAT_KSTRTOS(kstrtos16, s16, -0x8000, 0x7fff)
KCOMPAT_KSTRTOS(kstrtos8, s8, -0x80, 0x7f)
#define kstrtou64 kstrtoull
#define kstrtou32 kstrtouint
#define kstrtos64 kstrtoll
#define kstrtos32 kstrtoint

/* y/Y/1/on, n/N/0/off, as the kernel's kstrtobool(). */
static inline int kstrtobool(const char *s, bool *res)
{
	if (!s)
		return -EINVAL;
	switch (s[0]) {
	case 'y':
	case 'Y':
	case '1':
		*res = true;
		return 0;
	case 'n':
	case 'N':
	case '0':
		*res = false;
		return 0;
	case 'o':
	case 'O':
		if (s[1] == 'n' || s[1] == 'N') {
			*res = true;
			return 0;
		}
		if (s[1] == 'f' || s[1] == 'F') {
			*res = false;
			return 0;
		}
		break;
	}
	return -EINVAL;
}

#endif /* KCOMPAT_LINUX_KSTRTOX_H */
