// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * pci_reset_function() over the fake tree's `reset` file, in each state of
 * a device: without the file, with it, enabled and mastering, with
 * vectors, read-only, removed with a reference held; bad arguments and a
 * child of fork(). The library's state must be what it was before. And
 * the `reset` file itself in each hostile form, before the scan and
 * between the scan and the reset: never a write to another file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"

#define NAME "0000:00:06.0"

enum state {
	NO_FILE,
	PLAIN,
	ENABLED_MASTER,
	VECTORS,
	READONLY,
	REMOVED,
	NSTATES,
};

static const struct {
	const char *name;
	int want;
} rows[NSTATES] = {
	[NO_FILE] = { "no reset file", -ENOTTY },
	[PLAIN] = { "scanned", 0 },
	[ENABLED_MASTER] = { "enabled, mastering", 0 },
	[VECTORS] = { "two MSI-X vectors", 0 },
	[READONLY] = { "read-only", -EROFS },
	[REMOVED] = { "removed, reference held", -ENODEV },
};

static struct pci_dev *scan_one(bool reset_file)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 1);
	struct pci_dev *p;

	assert_int_equal(pci_fake_add(ft, &d), 0);
	if (reset_file)
		assert_int_equal(fake_write(NAME, "reset", "0", 1), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(p);
	return p;
}

static void each_state(void **state)
{
	(void)state;
	for (int s = 0; s < NSTATES; s++) {
		struct pci_dev *p = scan_one(s != NO_FILE);
		int lines[2] = { irq_line_create("r0"), irq_line_create("r1") };
		char buf[8] = "";
		uint16_t cmd = 0;
		int w0;

		if (s == ENABLED_MASTER) {
			assert_int_equal(pci_enable_device(p), 0);
			pci_set_master(p);
		}
		if (s == VECTORS) {
			assert_int_equal(pci_dev_set_irq_lines(p, lines, 2), 0);
			assert_int_equal(pci_alloc_irq_vectors(p, 2, 2,
							       PCI_IRQ_MSIX),
					 2);
		}
		if (s == READONLY)
			pci_sysfs_set_readonly(true);
		if (s == REMOVED) {
			assert_int_equal(pci_fake_remove(ft, NAME), 0);
			assert_int_equal(pci_bus_scan(), 0);
		}
		w0 = devres_warn_count();
		print_message("%s\n", rows[s].name);
		assert_int_equal(pci_reset_function(p), rows[s].want);
		assert_int_equal(devres_warn_count(), w0);
		if (s != NO_FILE && s != REMOVED) {
			assert_true(fake_read(NAME, "reset", buf, sizeof(buf)) >
				    0);
			assert_string_equal(buf, s == READONLY ? "0" : "1");
		}
		/* The library's record of the device is as before. */
		assert_int_equal(p->is_busmaster, s == ENABLED_MASTER);
		if (s == ENABLED_MASTER) {
			assert_true(pci_is_enabled(p));
			assert_int_equal(
				pci_read_config_word(p, PCI_COMMAND, &cmd), 0);
			assert_true(cmd & PCI_COMMAND_MASTER);
			pci_clear_master(p);
			pci_disable_device(p);
		}
		assert_int_equal(p->msix_enabled, s == VECTORS);
		if (s == VECTORS) {
			assert_int_equal(pci_irq_vector(p, 1), lines[1]);
			pci_free_irq_vectors(p);
		}
		pci_sysfs_set_readonly(false);
		pci_dev_put(p);
		pci_bus_remove_all();
		if (s != REMOVED)
			assert_int_equal(pci_fake_remove(ft, NAME), 0);
		assert_int_equal(irq_line_destroy(lines[0]), 0);
		assert_int_equal(irq_line_destroy(lines[1]), 0);
	}
}

/* Not a device: one WARN each, nothing written. */
static void bad_devices(void **state)
{
	struct pci_dev *bad[] = { NULL, ERR_PTR(-ENODEV),
				  (struct pci_dev *)(uintptr_t)8 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int w0 = devres_warn_count();

		assert_int_equal(pci_reset_function(bad[i]), -EINVAL);
		assert_int_equal(devres_warn_count(), w0 + 1);
	}
}

/* The parent's device, in its child: refused with one WARN. */
static void child_of_fork(void **state)
{
	struct pci_dev *p = scan_one(true);
	char buf[8] = "";
	int status = -1;
	pid_t pid;

	(void)state;
	pid = fork();
	if (pid == 0) {
		int w0 = devres_warn_count();
		int ret = pci_reset_function(p);

		_exit((ret != -EINVAL) | (devres_warn_count() != w0 + 1) << 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	assert_true(fake_read(NAME, "reset", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "0");
	pci_dev_put(p);
}

/* ---- the reset file in each hostile form ---- */

#define OTHER "0000:00:07.0"

static void path_of(const char *name, const char *file, char *buf)
{
	assert_int_equal(pci_fake_path(ft, name, file, buf, 4096), 0);
}

/* NAME's reset made a hard link to @name's @file. */
static void hard_link(const char *name, const char *file)
{
	char from[4096], to[4096];

	path_of(name, file, from);
	path_of(NAME, "reset", to);
	assert_int_equal(unlink(to), 0);
	assert_int_equal(link(from, to), 0);
}

static void f_link_other_enable(void)
{
	hard_link(OTHER, "enable");
}

static void f_link_other_config(void)
{
	hard_link(OTHER, "config");
}

static void f_link_other_reset(void)
{
	hard_link(OTHER, "reset");
}

static void f_link_own_config(void)
{
	hard_link(NAME, "config");
}

/* NAME's reset removed, then made @mode (a FIFO, a directory, a symlink
 * to the sibling's reset, a new file) or nothing. */
static void remake(mode_t mode)
{
	char path[4096], dest[4096];

	path_of(NAME, "reset", path);
	assert_int_equal(unlink(path), 0);
	if (S_ISFIFO(mode))
		assert_int_equal(mkfifo(path, 0600), 0);
	else if (S_ISDIR(mode))
		assert_int_equal(mkdir(path, 0755), 0);
	else if (S_ISREG(mode))
		assert_int_equal(fake_write(NAME, "reset", "0", 1), 0);
	if (S_ISLNK(mode)) {
		path_of(OTHER, "reset", dest);
		assert_int_equal(symlink(dest, path), 0);
	}
}

static void f_symlink_other(void)
{
	remake(S_IFLNK);
}

static void f_fifo(void)
{
	remake(S_IFIFO);
}

static void f_dir(void)
{
	remake(S_IFDIR);
}

static void f_removed(void)
{
	remake(0);
}

static void f_new_file(void)
{
	remake(S_IFREG);
}

static void f_in_place(void)
{
	assert_int_equal(fake_overwrite(NAME, "reset", "0", 1), 0);
}

static const struct form {
	const char *name;
	void (*apply)(void);
	int scan;   /* before the scan: pci_bus_scan_device(NAME) */
	int before; /* then pci_reset_function(), when scanned */
	int after;  /* changed between the scan and the reset */
} forms[] = {
	{ "a hard link to the sibling's enable", f_link_other_enable, -EEXIST,
	  0, -ESTALE },
	{ "a hard link to the sibling's config", f_link_other_config, -EEXIST,
	  0, -ESTALE },
	{ "a hard link to the sibling's reset", f_link_other_reset, -EEXIST, 0,
	  -ESTALE },
	{ "a hard link to its own config", f_link_own_config, -EINVAL, 0,
	  -ESTALE },
	{ "a symlink to the sibling's reset", f_symlink_other, 0, -ENOTTY,
	  -ELOOP },
	{ "a FIFO", f_fifo, 0, -ENOTTY, -ESTALE },
	{ "a directory", f_dir, 0, -ENOTTY, -ESTALE },
	{ "removed", f_removed, 0, -ENOTTY, -ESTALE },
	{ "a new file", f_new_file, 0, 0, -ESTALE },
	{ "rewritten in place", f_in_place, 0, 0, 0 },
};

/* A checksum of @name's files: what a reset of NAME must leave alone. */
static unsigned long sum_files(const char *name, bool with_reset)
{
	static const char *const files[] = { "config", "enable", "resource",
					     "resource0", "reset" };
	unsigned long sum = 5381;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char buf[8192];
		ssize_t n;

		if (!with_reset && !strcmp(files[f], "reset"))
			continue;
		n = fake_read(name, files[f], buf, sizeof(buf));
		for (ssize_t i = 0; i < n; i++)
			sum = sum * 33 + (unsigned char)buf[i];
	}
	return sum;
}

/* One cell on a tree of its own; whether it held. */
static bool form_cell(const struct form *f, bool after)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 1);
	struct pci_fake_dev o = fake_dev(OTHER, 0x1af4, 0x1042, 1);
	unsigned long theirs, mine;
	struct pci_dev *p = NULL;
	int w0, scan = 0, ret = 0, want;
	bool ok = true;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_fake_add(ft, &o), 0);
	assert_int_equal(fake_write(NAME, "reset", "0", 1), 0);
	assert_int_equal(fake_write(OTHER, "reset", "0", 1), 0);
	assert_int_equal(pci_bus_scan_device(OTHER), 0);
	w0 = devres_warn_count();
	if (!after)
		f->apply();
	theirs = sum_files(OTHER, true);
	/* Its own files but reset: a reset writes only that one. */
	mine = sum_files(NAME, false);
	scan = pci_bus_scan_device(NAME);
	if (!after && scan != f->scan) {
		print_error("%s, before the scan: scan %d, not %d\n", f->name,
			    scan, f->scan);
		ok = false;
	}
	if (!scan) {
		p = pci_get_device(0x1af4, 0x1041, NULL);
		assert_non_null(p);
		if (after) {
			f->apply();
			theirs = sum_files(OTHER, true);
			mine = sum_files(NAME, false);
		}
		ret = pci_reset_function(p);
		want = after ? f->after : f->before;
		if (ret != want) {
			print_error("%s, %s: reset %d, not %d\n", f->name,
				    after ? "after the scan" : "before it", ret,
				    want);
			ok = false;
		}
		pci_dev_put(p);
	}
	if (sum_files(OTHER, true) != theirs ||
	    sum_files(NAME, false) != mine) {
		print_error("%s, %s: a file other than NAME's reset changed\n",
			    f->name, after ? "after the scan" : "before it");
		ok = false;
	}
	if (devres_warn_count() != w0)
		ok = false;
	/* Every device removed, the ledger at its baseline. */
	if (pci_teardown(NULL))
		ok = false;
	return ok;
}

static void reset_file_forms(void **state)
{
	int failed = 0, cells = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		for (int after = 0; after < 2; after++, cells++)
			failed += !form_cell(&forms[i], after);
	if (failed)
		fail_msg("%d of %d cells failed", failed, cells);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(each_state, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(bad_devices, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(child_of_fork, pci_setup,
						pci_teardown),
		cmocka_unit_test(reset_file_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
