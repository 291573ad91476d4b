/* SPDX-License-Identifier: MIT */
/*
 * kstrto*(): a whole string to a number, as the kernel parses what user
 * space writes to an attribute: one trailing newline allowed, nothing
 * else; base 0 takes a 0x or 0 prefix. On an error *res is left as it
 * was. A NULL or ERR_PTR() string or result is -EINVAL (the kernel oopses).
 */
#ifndef KCOMPAT_LINUX_KSTRTOX_H
#define KCOMPAT_LINUX_KSTRTOX_H

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <linux/types.h>

/*
 * Not a string: NULL, the first page or an ERR_PTR(). The kernel would
 * oops on these; here the parse fails with -EINVAL instead.
 */
static inline bool kcompat_kstr_bad(const void *p)
{
	return (unsigned long)p - 4096 >= (unsigned long)0 - 4096 - 4095;
}

/*
 * The value of @s in @ret, as the kernel's _kstrtoull() reads it: base 0
 * is 16 for "0x" followed by a hex digit, 8 for a leading 0, else 10; base
 * 16 skips a "0x"; digits are 0-9 and a-f (any case) below @base, so a
 * base above 16 still knows no 'g'; an overflow is -ERANGE even with
 * garbage after it; then one "\n" and nothing else. No blank, no sign.
 * Written out rather than strtoull(), which takes blanks, signs, letters
 * up to 'z' and the locale's digits, and sets errno.
 */
static inline int kcompat_strtoull(const char *s, unsigned int base,
				   unsigned long long *ret)
{
	unsigned long long v = 0;
	bool overflow = false;
	const char *p;

	if (kcompat_kstr_bad(s) || kcompat_kstr_bad(ret))
		return -EINVAL;
	if (base == 0) {
		if (s[0] == '0' && (s[1] | 0x20) == 'x' &&
		    isxdigit((unsigned char)s[2]))
			base = 16;
		else
			base = s[0] == '0' ? 8 : 10;
	}
	if (base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	for (p = s;; p++) {
		unsigned int c = (unsigned char)*p, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (d >= base)
			break;
		if (v > (ULLONG_MAX - d) / base)
			overflow = true;
		v = v * base + d;
	}
	if (overflow)
		return -ERANGE;
	if (p == s)
		return -EINVAL;
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	*ret = v;
	return 0;
}

static inline int kcompat_strtoll(const char *s, unsigned int base,
				  long long *ret)
{
	unsigned long long v;
	int err;

	if (kcompat_kstr_bad(s))
		return -EINVAL;
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
		int err;                                                       \
		if (kcompat_kstr_bad(s) || kcompat_kstr_bad(res))              \
			return -EINVAL;                                        \
		err = kcompat_strtoull(*s == '+' ? s + 1 : s, base, &v);       \
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
		int err;                                                       \
		if (kcompat_kstr_bad(res))                                     \
			return -EINVAL;                                        \
		err = kcompat_strtoll(s, base, &v);                            \
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

/*
 * As the kernel's kstrtobool() (6.x): the first character decides, 'y',
 * 't', 'e' (enable) and '1' for true, 'n', 'f', 'd' (disable) and '0' for
 * false, in either case; "on" and "off" by their second; what follows is
 * not looked at ("yes", "true\n", "disabled").
 */
static inline int kstrtobool(const char *s, bool *res)
{
	if (kcompat_kstr_bad(s) || kcompat_kstr_bad(res))
		return -EINVAL;
	switch (s[0]) {
	case 'y':
	case 'Y':
	case 't':
	case 'T':
	case 'e':
	case 'E':
	case '1':
		*res = true;
		return 0;
	case 'n':
	case 'N':
	case 'f':
	case 'F':
	case 'd':
	case 'D':
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
