// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The accessors make one access of exactly the width asked for, with the
 * barriers the ordering model needs on x86-64 and arm64, read from the
 * code the compilers generate: a file calling each accessor is compiled
 * with -S at -O1, -O2 and -Os by the host's cc and, when clang is there,
 * by clang for x86-64 and arm64 (with a two-line shim for the two libc
 * types the headers name, since no arm64 libc is installed). Each
 * function must hold exactly one instruction that touches memory, through
 * its pointer argument, with the width's mnemonic, and its barrier on the
 * right side of it. Skips (77) when no compiler can be run.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

extern char **environ;

enum op {
	RD,
	WR,
	BAR
};

struct acc {
	const char *name; /* accessor, or barrier macro */
	enum op op;
	int width;    /* bytes */
	bool ordered; /* carries a barrier (not _relaxed) */
};

static const struct acc accs[] = {
	{ "readb", RD, 1, true },
	{ "readw", RD, 2, true },
	{ "readl", RD, 4, true },
	{ "readq", RD, 8, true },
	{ "readb_relaxed", RD, 1, false },
	{ "readw_relaxed", RD, 2, false },
	{ "readl_relaxed", RD, 4, false },
	{ "readq_relaxed", RD, 8, false },
	{ "ioread8", RD, 1, true },
	{ "ioread16", RD, 2, true },
	{ "ioread32", RD, 4, true },
	{ "ioread64", RD, 8, true },
	{ "ioread16be", RD, 2, true },
	{ "ioread32be", RD, 4, true },
	{ "ioread64be", RD, 8, true },
	{ "writeb", WR, 1, true },
	{ "writew", WR, 2, true },
	{ "writel", WR, 4, true },
	{ "writeq", WR, 8, true },
	{ "writeb_relaxed", WR, 1, false },
	{ "writew_relaxed", WR, 2, false },
	{ "writel_relaxed", WR, 4, false },
	{ "writeq_relaxed", WR, 8, false },
	{ "iowrite8", WR, 1, true },
	{ "iowrite16", WR, 2, true },
	{ "iowrite32", WR, 4, true },
	{ "iowrite64", WR, 8, true },
	{ "iowrite16be", WR, 2, true },
	{ "iowrite32be", WR, 4, true },
	{ "iowrite64be", WR, 8, true },
	{ "mb", BAR, 0, true },
	{ "rmb", BAR, 0, true },
	{ "wmb", BAR, 0, true },
};

#define NACC (sizeof(accs) / sizeof(accs[0]))

static char dir[64] = "/tmp/devres-io-widths.XXXXXX";
static char src[128], shim[128], include[4096];

static const char *width_type(int w)
{
	return w == 1	? "uint8_t"
	       : w == 2 ? "uint16_t"
	       : w == 4 ? "uint32_t"
			: "uint64_t";
}

static int write_sources(void)
{
	FILE *f;
	char path[256];

	snprintf(src, sizeof(src), "%s/acc.c", dir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fprintf(f, "#include <devres/io.h>\n");
	for (size_t i = 0; i < NACC; i++) {
		const struct acc *a = &accs[i];

		if (a->op == RD)
			fprintf(f,
				"%s t_%s(const volatile void *p)"
				" { return %s(p); }\n",
				width_type(a->width), a->name, a->name);
		else if (a->op == WR)
			fprintf(f,
				"void t_%s(volatile void *p, %s v)"
				" { %s(v, p); }\n",
				a->name, width_type(a->width), a->name);
		else
			fprintf(f, "void t_%s(void) { %s(); }\n", a->name,
				a->name);
	}
	fclose(f);
	/* The two libc types the public headers name, for a cross build. */
	snprintf(shim, sizeof(shim), "%s/shim", dir);
	snprintf(path, sizeof(path), "%s/sys", shim);
	if (mkdir(shim, 0700) || mkdir(path, 0700))
		return -1;
	snprintf(path, sizeof(path), "%s/sys/types.h", shim);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "typedef long off_t;\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/stdio.h", shim);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "typedef struct shim_file FILE;\n");
	fclose(f);
	return 0;
}

/* Runs argv; 0 when it exits 0. Its output goes nowhere. */
static int run(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, ret;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret)
		return -1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Compiles the accessors; the assembly's path in @out, or -1. */
static int compile(const char *cc, const char *target, const char *opt,
		   char *out, size_t len)
{
	char inc[4200];
	char *argv[16];
	int n = 0;

	snprintf(out, len, "%s/%s-%s%s.s", dir, cc, target ? target : "host",
		 opt);
	snprintf(inc, sizeof(inc), "-I%s", include);
	argv[n++] = (char *)cc;
	if (target) {
		argv[n++] = (char *)target;
		argv[n++] = (char *)"-nostdlibinc";
		argv[n++] = (char *)"-isystem";
		argv[n++] = shim;
	}
	argv[n++] = (char *)opt;
	argv[n++] = (char *)"-std=c11";
	argv[n++] = (char *)"-S";
	argv[n++] = inc;
	argv[n++] = (char *)"-o";
	argv[n++] = out;
	argv[n++] = src;
	argv[n] = NULL;
	return run(argv);
}

#define MAXI 64

/* The instructions of function t_@name, trimmed, without directives. */
static int function_body(const char *asm_path, const char *name,
			 char ins[MAXI][128])
{
	FILE *f = fopen(asm_path, "r");
	char line[256], label[96];
	bool in = false;
	int n = 0;

	assert_non_null(f);
	snprintf(label, sizeof(label), "t_%s:", name);
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");

		s[strcspn(s, "\n")] = 0;
		if (!in) {
			in = strncmp(line, label, strlen(label)) == 0;
			continue;
		}
		if (strstr(s, ".size") || strncmp(s, ".Lfunc_end", 10) == 0)
			break;
		if (!*s || *s == '.' || *s == '#' || *s == '/' ||
		    s[strlen(s) - 1] == ':')
			continue;
		if (n < MAXI) {
			/* One space between mnemonic and operands. */
			for (char *t = s; *t; t++)
				if (*t == '\t')
					*t = ' ';
			snprintf(ins[n++], 128, "%s", s);
		}
	}
	fclose(f);
	assert_true(in);
	return n;
}

static bool starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool x86_width_ok(const char *ins, int w)
{
	switch (w) {
	case 1:
		return starts(ins, "movb ") || starts(ins, "movzbl ");
	case 2:
		return starts(ins, "movw ") || starts(ins, "movzwl ");
	case 4:
		return starts(ins, "movl ");
	default:
		return starts(ins, "movq ");
	}
}

static bool arm_width_ok(const char *ins, enum op op, int w)
{
	const char *m = op == RD ? "ldr" : "str";
	char want[16];

	switch (w) {
	case 1:
		snprintf(want, sizeof(want), "%sb w", m);
		break;
	case 2:
		snprintf(want, sizeof(want), "%sh w", m);
		break;
	default:
		snprintf(want, sizeof(want), "%s %c", m, w == 4 ? 'w' : 'x');
	}
	return starts(ins, want);
}

static int find(char ins[MAXI][128], int n, const char *what)
{
	for (int i = 0; i < n; i++)
		if (strstr(ins[i], what))
			return i;
	return -1;
}

static void check(const char *asm_path, bool arm)
{
	char ins[MAXI][128];

	for (size_t i = 0; i < NACC; i++) {
		const struct acc *a = &accs[i];
		int n = function_body(asm_path, a->name, ins);
		int mem = -1, nmem = 0, bar;

		for (int j = 0; j < n; j++) {
			if (strchr(ins[j], arm ? '[' : '(')) {
				mem = j;
				nmem++;
			}
		}
		if (a->op == BAR) {
			static const char *const x86[] = { "mfence", "lfence",
							   "sfence" };
			static const char *const a64[] = { "dsb sy", "dsb ld",
							   "dsb st" };
			int k = a->name[0] == 'm'   ? 0
				: a->name[0] == 'r' ? 1
						    : 2;

			assert_int_equal(nmem, 0);
			assert_true(find(ins, n, arm ? a64[k] : x86[k]) >= 0);
			continue;
		}
		if (nmem != 1)
			print_error("%s: t_%s: %d memory accesses\n", asm_path,
				    a->name, nmem);
		assert_int_equal(nmem, 1);
		assert_non_null(strstr(ins[mem], arm ? "[x0]" : "(%rdi)"));
		if (!(arm ? arm_width_ok(ins[mem], a->op, a->width)
			  : x86_width_ok(ins[mem], a->width)))
			print_error("%s: t_%s: \"%s\" is not %d bytes\n",
				    asm_path, a->name, ins[mem], a->width);
		assert_true(arm ? arm_width_ok(ins[mem], a->op, a->width)
				: x86_width_ok(ins[mem], a->width));
		if (!arm) {
			/* x86 orders these by itself: no fence is needed. */
			assert_int_equal(find(ins, n, "fence"), -1);
			continue;
		}
		bar = find(ins, n, a->op == RD ? "dmb oshld" : "dmb oshst");
		if (!a->ordered) {
			assert_int_equal(find(ins, n, "dmb"), -1);
		} else if (a->op == RD) {
			assert_true(bar > mem);
		} else {
			assert_true(bar >= 0 && bar < mem);
		}
	}
}

static const char *const opts[] = { "-O1", "-O2", "-Os" };

static bool host_x86(void)
{
#if defined(__x86_64__)
	return true;
#else
	return false;
#endif
}

static bool host_arm(void)
{
#if defined(__aarch64__)
	return true;
#else
	return false;
#endif
}

static void host_cc(void **state)
{
	char out[256];
	int done = 0;

	(void)state;
	if (!host_x86() && !host_arm())
		skip();
	for (size_t i = 0; i < 3; i++) {
		if (compile("cc", NULL, opts[i], out, sizeof(out)))
			skip();
		check(out, host_arm());
		done++;
	}
	assert_int_equal(done, 3);
}

static void clang_target(const char *target, bool arm)
{
	char out[256];

	for (size_t i = 0; i < 3; i++) {
		if (compile("clang", target, opts[i], out, sizeof(out)))
			skip();
		check(out, arm);
	}
}

static void clang_x86_64(void **state)
{
	(void)state;
	clang_target("--target=x86_64-linux-gnu", false);
}

static void clang_arm64(void **state)
{
	(void)state;
	clang_target("--target=aarch64-linux-gnu", true);
}

static int cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_cc),
		cmocka_unit_test(clang_x86_64),
		cmocka_unit_test(clang_arm64),
	};
	int ret;

	/*
	 * The source tree's include/, as the build names it: not this file's
	 * __FILE__, which a build through ccache with CCACHE_BASEDIR makes
	 * relative.
	 */
	snprintf(include, sizeof(include), "%s", IO_WIDTHS_INCLUDE);
	if (include[0] != '/' || access(include, R_OK)) {
		fprintf(stderr, "no source tree's include/ at %s\n", include);
		return 1;
	}
	if (!mkdtemp(dir) || write_sources()) {
		fprintf(stderr, "cannot set up in %s\n", dir);
		return 77;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	if (cleanup())
		return 1;
	return ret;
}
