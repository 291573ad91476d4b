// SPDX-License-Identifier: MIT
/* ctest-labels: unit shared-only tsan timeout=60 */
/*
 * Two copies of the library in one process: this test, linked with the
 * shared library, loads a plugin linked with the static one
 * (tests/base/copy-plugin.c). The second copy WARNs once as it loads,
 * naming both; a device of one copy given to the other is refused with a
 * WARN of the copy called, nothing changed; each copy's own devices work
 * (docs/fork.md, "Two copies of the library"). Each cell in a child
 * process under an alarm, with stderr read from a pipe.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10

enum {
	R_LOAD,
	R_MINE_TO_PLUGIN,
	R_PLUGIN_TO_MINE,
	R_EACH_OWN,
	R_NR
};

static const char *const rows[R_NR] = { "the plugin loads",
					"this copy's device to the plugin",
					"the plugin's device to this copy",
					"each copy's own device" };
static const char *const cols[] = { "shared and static" };
static const char *const refused = "device of another copy of the library in "
				   "this process: refused";

static struct {
	struct device *(*dev)(void);
	void *(*kmalloc)(struct device *dev, size_t size);
	int (*release_all)(struct device *dev);
	int (*warns)(void);
} plugin;

static struct device mine;
static char out[16384];

static int cell_fail(const char *what)
{
	fprintf(stderr, "  %s\n", what);
	return 1;
}

static int load(void)
{
	void *h = dlopen(COPY_PLUGIN, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "  %s\n", dlerror());
		return -1;
	}
	plugin.dev = (struct device * (*)(void)) dlsym(h, "plugin_dev");
	plugin.kmalloc = (void *(*)(struct device *, size_t))dlsym(h, "plugin_"
								      "kmallo"
								      "c");
	plugin.release_all = (int (*)(struct device *))dlsym(h, "plugin_"
								"release_all");
	plugin.warns = (int (*)(void))dlsym(h, "plugin_warns");
	return plugin.dev && plugin.kmalloc && plugin.release_all &&
			       plugin.warns
		       ? 0
		       : -1;
}

/* The calls of a row, with stderr going to @fd. */
static int calls(int row, int fd)
{
	struct devres_stats st;
	struct device *theirs;
	int warns, pwarns;

	if (load())
		return cell_fail("dlopen");
	theirs = plugin.dev();
	if (!theirs || init_dev(&mine, "test-dev"))
		return cell_fail("devices");
	warns = devres_warn_count();
	pwarns = plugin.warns();
	switch (row) {
	case R_LOAD:
		if (pwarns != 1 || warns != 0 || plugin.warns() != 1)
			return cell_fail("not one WARN, by the plugin's copy");
		break;
	case R_MINE_TO_PLUGIN:
		if (plugin.kmalloc(&mine, 32) ||
		    plugin.release_all(&mine) != -ENODEV)
			return cell_fail("the plugin took this copy's device");
		if (plugin.warns() != pwarns + 2 ||
		    devres_warn_count() != warns)
			return cell_fail("not one WARN a call, the plugin's");
		break;
	case R_PLUGIN_TO_MINE:
		if (devm_kmalloc(theirs, 32, GFP_KERNEL) ||
		    devres_release_all(theirs) != -ENODEV)
			return cell_fail("this copy took the plugin's device");
		if (devres_warn_count() != warns + 2 ||
		    plugin.warns() != pwarns)
			return cell_fail("not one WARN a call, this copy's");
		break;
	default:
		if (!devm_kmalloc(&mine, 32, GFP_KERNEL) ||
		    !plugin.kmalloc(theirs, 16))
			return cell_fail("a copy's own device refused");
		devres_get_stats(&mine, &st);
		if (st.allocs != 1 || devres_release_all(&mine) != 1 ||
		    plugin.release_all(theirs) != 1)
			return cell_fail("a copy's own device");
		if (devres_warn_count() != warns || plugin.warns() != pwarns)
			return cell_fail("a WARN");
	}
	(void)fd;
	return 0;
}

static int one(int row, int col)
{
	int fds[2], ret, n;
	ssize_t len;

	(void)col;
	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) ||
	    dup2(fds[1], STDERR_FILENO) < 0)
		return 2;
	ret = calls(row, fds[1]);
	len = read(fds[0], out, sizeof(out) - 1);
	out[len > 0 ? len : 0] = '\0';
	n = count_substr(out, "libdevres: 2 copies of the library in this "
			      "process: this one (" COPY_PLUGIN ") and ");
	if (n != 1 || !strstr(out, "/libdevres.so"))
		ret |= cell_fail("not one WARN naming both copies at the load");
	n = count_substr(out, refused);
	if (n != (row == R_MINE_TO_PLUGIN || row == R_PLUGIN_TO_MINE ? 2 : 0))
		ret |= cell_fail("not the refusals' WARNs");
	if (ret)
		(void)!write(STDOUT_FILENO, out, strlen(out));
	return ret;
}

static void test_two_copies(void **state)
{
	(void)state;
	run_cells_in_children(one, rows, R_NR, cols, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_copies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
