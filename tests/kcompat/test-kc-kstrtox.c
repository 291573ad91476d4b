// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * kstrto*() and kstrtobool() of <linux/kstrtox.h> against the kernel's
 * documented rules (lib/kstrtox.c's comments and kernel-doc): a table of
 * edge inputs for every width and sign (overflow by one, both limits,
 * base prefixes, signs where they are not allowed, blanks, the one
 * trailing newline, empty, digits beyond the base, bases above 16), each
 * checking the errno, the value, and that an error leaves *res as it was.
 * Then random strings over the characters that matter, each parsed by
 * the header and by a reference written here from the documented rules
 * in another way (strtoull() on what the rules let through), which must
 * agree. Bad pointers (NULL, the first page, ERR_PTR()) are -EINVAL.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <linux/err.h>
#include <linux/kstrtox.h>

enum fn {
	ULL,
	UL,
	UINT,
	U16,
	U8,
	LL,
	L,
	INT,
	S16,
	S8,
	BOOL
};

static const char *const fn_name[] = { "kstrtoull", "kstrtoul",	 "kstrtouint",
				       "kstrtou16", "kstrtou8",	 "kstrtoll",
				       "kstrtol",   "kstrtoint", "kstrtos16",
				       "kstrtos8",  "kstrtobool" };

#define SENTINEL 0x5a

/*
 * Calls @f on @s; the value, widened, in *v (signed ones sign-extended,
 * as unsigned long long bits). *untouched: whether the result's bytes
 * were left as they were.
 */
static int call(enum fn f, const char *s, unsigned int base,
		unsigned long long *v, bool *untouched)
{
	union {
		unsigned long long ull;
		unsigned long ul;
		unsigned int ui;
		u16 u16;
		u8 u8;
		long long ll;
		long l;
		int i;
		s16 s16;
		s8 s8;
		bool b;
		unsigned char bytes[8];
	} r;
	unsigned char before[8];
	int ret = 0;

	memset(&r, SENTINEL, sizeof(r));
	memcpy(before, r.bytes, sizeof(before));
	switch (f) {
	case ULL:
		ret = kstrtoull(s, base, &r.ull);
		*v = r.ull;
		break;
	case UL:
		ret = kstrtoul(s, base, &r.ul);
		*v = r.ul;
		break;
	case UINT:
		ret = kstrtouint(s, base, &r.ui);
		*v = r.ui;
		break;
	case U16:
		ret = kstrtou16(s, base, &r.u16);
		*v = r.u16;
		break;
	case U8:
		ret = kstrtou8(s, base, &r.u8);
		*v = r.u8;
		break;
	case LL:
		ret = kstrtoll(s, base, &r.ll);
		*v = (unsigned long long)r.ll;
		break;
	case L:
		ret = kstrtol(s, base, &r.l);
		*v = (unsigned long long)(long long)r.l;
		break;
	case INT:
		ret = kstrtoint(s, base, &r.i);
		*v = (unsigned long long)(long long)r.i;
		break;
	case S16:
		ret = kstrtos16(s, base, &r.s16);
		*v = (unsigned long long)(long long)r.s16;
		break;
	case S8:
		ret = kstrtos8(s, base, &r.s8);
		*v = (unsigned long long)(long long)r.s8;
		break;
	case BOOL:
		ret = kstrtobool(s, &r.b);
		/* On an error its bytes are not a bool: not loaded as one. */
		*v = ret ? 0 : r.b;
		break;
	}
	*untouched = !memcmp(before, r.bytes, sizeof(before));
	return ret;
}

struct row {
	enum fn f;
	const char *s;
	unsigned int base;
	int ret;
	unsigned long long v; /* when ret is 0; signed: its bits */
};

#define NEG(x) ((unsigned long long)(long long)(x))

static const struct row rows[] = {
	/* Plain decimal, the one newline, nothing else around it. */
	{ UINT, "0", 10, 0, 0 },
	{ UINT, "42", 10, 0, 42 },
	{ UINT, "42\n", 10, 0, 42 },
	{ UINT, "42\n\n", 10, -EINVAL, 0 },
	{ UINT, "42 ", 10, -EINVAL, 0 },
	{ UINT, " 42", 10, -EINVAL, 0 },
	{ UINT, "\t42", 10, -EINVAL, 0 },
	{ UINT, "4 2", 10, -EINVAL, 0 },
	{ UINT, "42\r\n", 10, -EINVAL, 0 },
	{ UINT, "", 10, -EINVAL, 0 },
	{ UINT, "\n", 10, -EINVAL, 0 },
	{ UINT, "42x", 10, -EINVAL, 0 },
	{ UINT, "0042", 10, 0, 42 },
	/* A '+' is taken by every kstrto*(); a '-' only by the signed. */
	{ UINT, "+42", 10, 0, 42 },
	{ UINT, "++42", 10, -EINVAL, 0 },
	{ UINT, "+", 10, -EINVAL, 0 },
	{ UINT, "-0", 10, -EINVAL, 0 },
	{ UINT, "-1", 10, -EINVAL, 0 },
	{ INT, "-1", 10, 0, NEG(-1) },
	{ INT, "-0", 10, 0, 0 },
	{ INT, "+-1", 10, -EINVAL, 0 },
	{ INT, "-+1", 10, -EINVAL, 0 },
	{ INT, "--1", 10, -EINVAL, 0 },
	{ INT, "-", 10, -EINVAL, 0 },
	{ INT, "- 1", 10, -EINVAL, 0 },
	{ INT, "-1\n", 10, 0, NEG(-1) },
	/* Base 0: 0x and a hex digit is 16, a leading 0 is 8, else 10. */
	{ UINT, "0x2a", 0, 0, 42 },
	{ UINT, "0X2A", 0, 0, 42 },
	{ UINT, "052", 0, 0, 42 },
	{ UINT, "08", 0, -EINVAL, 0 },
	{ UINT, "0x", 0, -EINVAL, 0 },
	{ UINT, "0xg", 0, -EINVAL, 0 },
	{ UINT, "0x\n", 0, -EINVAL, 0 },
	{ UINT, "00x1", 0, -EINVAL, 0 },
	{ UINT, "x1", 0, -EINVAL, 0 },
	{ UINT, "2a", 0, -EINVAL, 0 },
	{ UINT, "0", 0, 0, 0 },
	{ UINT, "0\n", 0, 0, 0 },
	{ INT, "-0x10", 0, 0, NEG(-16) },
	{ INT, "-010", 0, 0, NEG(-8) },
	/* Base 16 skips a 0x; base 8 and 10 do not. */
	{ UINT, "0x2a", 16, 0, 42 },
	{ UINT, "2a", 16, 0, 42 },
	{ UINT, "2A\n", 16, 0, 42 },
	{ UINT, "0x", 16, -EINVAL, 0 },
	{ UINT, "0x0x1", 16, -EINVAL, 0 },
	{ UINT, "0x2a", 10, -EINVAL, 0 },
	{ UINT, "0x2a", 8, -EINVAL, 0 },
	{ UINT, "17", 8, 0, 15 },
	{ UINT, "18", 8, -EINVAL, 0 },
	{ UINT, "101", 2, 0, 5 },
	{ UINT, "102", 2, -EINVAL, 0 },
	/* Digits are 0-9a-f below the base: 'g' is no digit even in 36. */
	{ UINT, "1f", 20, 0, 35 },
	{ UINT, "g", 36, -EINVAL, 0 },
	{ UINT, "1z", 36, -EINVAL, 0 },
	/* The limits of each width, and one past them. */
	{ ULL, "18446744073709551615", 10, 0, ULLONG_MAX },
	{ ULL, "18446744073709551616", 10, -ERANGE, 0 },
	{ ULL, "99999999999999999999999", 10, -ERANGE, 0 },
	{ ULL, "0xffffffffffffffff", 16, 0, ULLONG_MAX },
	{ ULL, "0x10000000000000000", 16, -ERANGE, 0 },
	{ ULL, "1777777777777777777777", 8, 0, ULLONG_MAX },
	{ ULL, "2000000000000000000000", 8, -ERANGE, 0 },
	/* An overflow is -ERANGE even with garbage after it, as lib/kstrtox.c. */
	{ ULL, "18446744073709551616x", 10, -ERANGE, 0 },
	{ UL, "18446744073709551615", 10, 0, ULONG_MAX },
	{ UINT, "4294967295", 10, 0, UINT_MAX },
	{ UINT, "4294967296", 10, -ERANGE, 0 },
	{ UINT, "0x100000000", 0, -ERANGE, 0 },
	{ U16, "65535", 10, 0, 65535 },
	{ U16, "65536", 10, -ERANGE, 0 },
	{ U8, "255", 10, 0, 255 },
	{ U8, "256", 10, -ERANGE, 0 },
	{ U8, "0xff\n", 0, 0, 255 },
	{ LL, "9223372036854775807", 10, 0, LLONG_MAX },
	{ LL, "9223372036854775808", 10, -ERANGE, 0 },
	{ LL, "-9223372036854775808", 10, 0, NEG(LLONG_MIN) },
	{ LL, "-9223372036854775809", 10, -ERANGE, 0 },
	{ LL, "-18446744073709551616", 10, -ERANGE, 0 },
	{ L, "-9223372036854775808", 10, 0, NEG(LONG_MIN) },
	{ INT, "2147483647", 10, 0, INT_MAX },
	{ INT, "2147483648", 10, -ERANGE, 0 },
	{ INT, "-2147483648", 10, 0, NEG(INT_MIN) },
	{ INT, "-2147483649", 10, -ERANGE, 0 },
	{ S16, "32767", 10, 0, 32767 },
	{ S16, "32768", 10, -ERANGE, 0 },
	{ S16, "-32768", 10, 0, NEG(-32768) },
	{ S16, "-32769", 10, -ERANGE, 0 },
	{ S8, "127", 10, 0, 127 },
	{ S8, "128", 10, -ERANGE, 0 },
	{ S8, "-128", 10, 0, NEG(-128) },
	{ S8, "-129", 10, -ERANGE, 0 },
	{ S8, "-0x80", 0, 0, NEG(-128) },
	/* kstrtobool(): the first character, "on"/"off" by the second. */
	{ BOOL, "y", 0, 0, 1 },
	{ BOOL, "Yes", 0, 0, 1 },
	{ BOOL, "1", 0, 0, 1 },
	{ BOOL, "true\n", 0, 0, 1 },
	{ BOOL, "T", 0, 0, 1 },
	{ BOOL, "enable", 0, 0, 1 },
	{ BOOL, "E", 0, 0, 1 },
	{ BOOL, "on", 0, 0, 1 },
	{ BOOL, "ON", 0, 0, 1 },
	{ BOOL, "n", 0, 0, 0 },
	{ BOOL, "No", 0, 0, 0 },
	{ BOOL, "0", 0, 0, 0 },
	{ BOOL, "false", 0, 0, 0 },
	{ BOOL, "F", 0, 0, 0 },
	{ BOOL, "disabled", 0, 0, 0 },
	{ BOOL, "D", 0, 0, 0 },
	{ BOOL, "off", 0, 0, 0 },
	{ BOOL, "OFF", 0, 0, 0 },
	{ BOOL, "o", 0, -EINVAL, 0 },
	{ BOOL, "ox", 0, -EINVAL, 0 },
	{ BOOL, "", 0, -EINVAL, 0 },
	{ BOOL, " y", 0, -EINVAL, 0 },
	{ BOOL, "2", 0, -EINVAL, 0 },
	{ BOOL, "\n", 0, -EINVAL, 0 },
	{ BOOL, "x", 0, -EINVAL, 0 },
};

static void table(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		unsigned long long v = 0;
		bool untouched = true;
		int ret = call(r->f, r->s, r->base, &v, &untouched);

		if (ret != r->ret || (!ret && v != r->v) ||
		    (ret && !untouched)) {
			fprintf(stderr,
				"%s(\"%s\", %u): %d, 0x%llx (%s); "
				"expected %d, 0x%llx\n",
				fn_name[r->f], r->s, r->base, ret, v,
				untouched ? "res untouched" : "res written",
				r->ret, r->v);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* NULL, the first page and ERR_PTR() as the string or the result. */
static void bad_pointers(void **state)
{
	const char *bad[] = { NULL, (const char *)16, ERR_PTR(-EINVAL) };
	unsigned long long ull = 7;
	unsigned int ui = 7;
	int si = 7;
	bool b = true;
	u8 u = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kstrtoull(bad[i], 10, &ull), -EINVAL);
		assert_int_equal(kstrtouint(bad[i], 0, &ui), -EINVAL);
		assert_int_equal(kstrtoint(bad[i], 0, &si), -EINVAL);
		assert_int_equal(kstrtou8(bad[i], 0, &u), -EINVAL);
		assert_int_equal(kstrtobool(bad[i], &b), -EINVAL);
		assert_int_equal(kstrtoull("1", 10, (void *)bad[i]), -EINVAL);
		assert_int_equal(kstrtoint("1", 10, (void *)bad[i]), -EINVAL);
		assert_int_equal(kstrtobool("1", (void *)bad[i]), -EINVAL);
	}
	assert_int_equal(ull, 7);
	assert_int_equal(ui, 7);
	assert_int_equal(si, 7);
	assert_int_equal(u, 7);
	assert_true(b);
}

/*
 * The reference: the documented rules applied first (no blank, sign only
 * where allowed, the prefix by the base), then strtoull() on what is left,
 * which must be all digits of the base but the one newline.
 */
static int ref_ull(const char *s, unsigned int base, unsigned long long *ret)
{
	char digits[64];
	size_t n = strlen(s);
	char *end;

	if (base == 0)
		base = (s[0] == '0' && tolower((unsigned char)s[1]) == 'x' &&
			isxdigit((unsigned char)s[2]))
			       ? 16
		       : s[0] == '0' ? 8
				     : 10;
	if (base == 16 && s[0] == '0' && tolower((unsigned char)s[1]) == 'x')
		s += 2, n -= 2;
	/* The digits run, then at most "\n". */
	size_t k = strspn(s, base == 16	 ? "0123456789abcdefABCDEF"
			     : base == 8 ? "01234567"
					 : "0123456789");
	if (k == 0)
		return -EINVAL;
	if (k >= sizeof(digits))
		return -ERANGE; /* more digits than any value has: all long */
	memcpy(digits, s, k);
	digits[k] = '\0';
	errno = 0;
	unsigned long long v = strtoull(digits, &end, (int)base);
	if (errno == ERANGE)
		return -ERANGE;
	if (!(k == n || (k + 1 == n && s[k] == '\n')))
		return -EINVAL;
	*ret = v;
	return 0;
}

static int ref_ll(const char *s, unsigned int base, long long *ret)
{
	unsigned long long v;
	bool neg = s[0] == '-';
	int err;

	if (s[0] == '+' || neg)
		s++;
	err = ref_ull(s, base, &v);
	if (err)
		return err;
	if (neg ? v > (unsigned long long)LLONG_MAX + 1 : v > LLONG_MAX)
		return -ERANGE;
	*ret = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}

/* Random strings of the characters that matter, both ways, must agree. */
static void random_strings(void **state)
{
	static const char alphabet[] = "0000111789aAfFgxX+-\n ";
	static const unsigned int bases[] = { 0, 8, 10, 16 };
	unsigned int seed = 12345;
	int bad = 0;

	(void)state;
	for (int i = 0; i < 200000 && bad < 10; i++) {
		char s[32];
		int len = (int)(rand_r(&seed) % 24);
		unsigned int base = bases[rand_r(&seed) % 4];
		unsigned long long a = 0, b = 0;
		long long sa = 0, sb = 0;
		int ra, rb;

		for (int j = 0; j < len; j++)
			s[j] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		s[len] = '\0';
		ra = kstrtoull(s, base, &a);
		rb = s[0] == '+' ? ref_ull(s + 1, base, &b)
				 : ref_ull(s, base, &b);
		if (ra != rb || (!ra && a != b)) {
			fprintf(stderr,
				"kstrtoull(\"%s\", %u): %d %llu, ref %d %llu\n",
				s, base, ra, a, rb, b);
			bad++;
		}
		ra = kstrtoll(s, base, &sa);
		rb = ref_ll(s, base, &sb);
		if (ra != rb || (!ra && sa != sb)) {
			fprintf(stderr,
				"kstrtoll(\"%s\", %u): %d %lld, ref %d %lld\n",
				s, base, ra, sa, rb, sb);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(bad_pointers),
		cmocka_unit_test(random_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
