// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * An interrupt vector the UIO backend made for a bound device is the
 * binding's: irq_line_destroy() of its number by hand is refused with one
 * WARN (it used to close the line under the binding, whose release then
 * destroyed whatever line held that number by then: another owner's), the
 * line keeps working, and it goes with the binding, once. Then a thread
 * destroying the number by hand races the unbind: never a success, never
 * a crash, the ledger back at its baseline.
 */
#define _GNU_SOURCE /* posix_openpt(), ptsname() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"

#define A "0000:00:05.0"

static struct fake_uio ua = { -1, -1 };
static int vector;
static unsigned long handled;

static int uio_setup(void **state)
{
	if (pci_setup(state) || uio_dir_make())
		return -1;
	return 0;
}

static int uio_teardown(void **state)
{
	int ret;

	pci_bus_remove_all();
	fake_uio_close(&ua);
	ret = pci_teardown(state);
	uio_dir_remove();
	return ret;
}

static int vec_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret = uio_probe_vector(pdev);

	(void)id;
	if (ret < 0)
		return ret;
	vector = ret;
	return 0;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(0x1234, 0x11e8) },
	{ 0 },
};

static struct pci_driver vec_driver = {
	.name = "uio-vector",
	.id_table = ids,
	.probe = vec_probe,
};

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static struct pci_dev *bind_uio(void)
{
	struct pci_fake_dev d = fake_dev(A, 0x1234, 0x11e8, 1);
	struct pci_dev *p;

	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(A, 2, &ua), 0);
	assert_int_equal(pci_bus_scan_device(A), 0);
	p = pci_get_device(0x1234, 0x11e8, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	return p;
}

static void destroy_by_hand_refused(void **state)
{
	struct pci_dev *p = bind_uio();
	int dummy;

	(void)state;
	assert_int_equal(pci_register_driver(&vec_driver), 0);
	assert_ptr_equal(p->dev.driver, &vec_driver.driver);
	assert_true(vector > 0);
	start_capture();
	assert_int_equal(irq_line_destroy(vector), -EPERM);
	expect_warn_on("(no device)", "irq_line_destroy",
		       "is an interrupt vector of " A);
	/* Still the device's, and still delivering. */
	assert_int_equal(pci_irq_vector(p, 0), vector);
	assert_int_equal(request_irq((unsigned int)vector, count_irq, 0, "hand",
				     &dummy),
			 0);
	assert_int_equal(uio_fire(A, &ua, 1), 0);
	assert_true(uio_wait_unmasked(A, 5000));
	assert_int_equal(__atomic_load_n(&handled, __ATOMIC_RELAXED), 1);
	assert_ptr_equal(free_irq((unsigned int)vector, &dummy), "hand");
	/* It goes with the binding, once: the number is no line after. */
	pci_unregister_driver(&vec_driver);
	start_capture();
	assert_int_equal(irq_line_destroy(vector), -EINVAL);
	expect_warn_on("(no device)", "irq_line_destroy", "is not a line");
}

static int race_vector, race_stop;

static void discard_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static void *destroyer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE)) {
		int v = __atomic_load_n(&race_vector, __ATOMIC_ACQUIRE);
		int ret = v > 0 ? irq_line_destroy(v) : -EINVAL;

		/* Refused while bound, no line once unbound: never destroyed. */
		assert_true(ret == -EPERM || ret == -EINVAL);
	}
	return NULL;
}

static void destroy_races_unbind(void **state)
{
	pthread_t t;

	(void)state;
	(void)bind_uio();
	devres_set_log_sink(discard_sink, NULL);
	assert_int_equal(pthread_create(&t, NULL, destroyer, NULL), 0);
	for (int i = 0; i < 30; i++) {
		assert_int_equal(pci_register_driver(&vec_driver), 0);
		__atomic_store_n(&race_vector, vector, __ATOMIC_RELEASE);
		pci_unregister_driver(&vec_driver);
	}
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	devres_set_log_sink(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(destroy_by_hand_refused,
						uio_setup, uio_teardown),
		cmocka_unit_test_setup_teardown(destroy_races_unbind, uio_setup,
						uio_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
