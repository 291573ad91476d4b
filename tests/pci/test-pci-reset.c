// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * pci_reset_function() over the fake tree's `reset` file, in each state of
 * a device: without the file, with it, enabled and mastering, with
 * vectors, read-only, removed with a reference held; bad arguments and a
 * child of fork(). The library's state must be what it was before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(each_state, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(bad_devices, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(child_of_fork, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
