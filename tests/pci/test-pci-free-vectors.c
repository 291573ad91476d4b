// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * pci_free_irq_vectors() while a handler is still requested on one of the
 * vectors, for each kind and each vector: refused with one WARN, the
 * vectors and their handler as they were; freed once the handler is.
 * pci_alloc_irq_vectors() of vectors allocated already, each kind after
 * each: -EINVAL with one WARN, the first vectors as they were; from two
 * threads at once, the loser's the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"

#define NAME "0000:00:07.0"
#define NLINES 3

static irqreturn_t handler(int irq, void *data)
{
	(void)irq;
	(void)data;
	return IRQ_HANDLED;
}

/* A device of the fake tree, with NLINES lines of its own in @lines. */
static struct pci_dev *dev_with_lines(int *lines)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 1);
	struct pci_dev *p;

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	for (int i = 0; i < NLINES; i++)
		lines[i] = irq_line_create("v");
	assert_int_equal(pci_dev_set_irq_lines(p, lines, NLINES), 0);
	return p;
}

static void dev_down(struct pci_dev *p, const int *lines)
{
	pci_dev_put(p);
	pci_bus_remove_all();
	for (int i = 0; i < NLINES; i++)
		assert_int_equal(irq_line_destroy(lines[i]), 0);
}

static void each_kind_each_vector(void **state)
{
	static const struct {
		unsigned int flags, n;
	} kinds[] = {
		{ PCI_IRQ_MSIX, NLINES },
		{ PCI_IRQ_MSI, NLINES },
		{ PCI_IRQ_INTX, 1 },
	};
	int lines[NLINES], dummy;
	struct pci_dev *p;

	(void)state;
	p = dev_with_lines(lines);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (unsigned int v = 0; v < kinds[k].n; v++) {
			unsigned int irq;
			int w0;

			assert_int_equal(pci_alloc_irq_vectors(p, 1, NLINES,
							       kinds[k].flags),
					 (int)kinds[k].n);
			irq = (unsigned int)pci_irq_vector(p, v);
			assert_int_equal(
				request_irq(irq, handler, 0, "h", &dummy), 0);
			w0 = devres_warn_count();
			pci_free_irq_vectors(p);
			assert_int_equal(devres_warn_count(), w0 + 1);
			assert_true(pci_dev_msi_enabled(p) ==
				    (kinds[k].flags != PCI_IRQ_INTX));
			assert_int_equal(pci_irq_vector(p, v), (int)irq);
			free_irq(irq, &dummy);
			pci_free_irq_vectors(p);
			assert_int_equal(devres_warn_count(), w0 + 1);
			assert_false(pci_dev_msi_enabled(p));
		}
	}
	dev_down(p, lines);
}

static void alloc_twice_each_kind(void **state)
{
	static const unsigned int kinds[] = { PCI_IRQ_MSIX, PCI_IRQ_MSI,
					      PCI_IRQ_INTX, PCI_IRQ_ALL_TYPES };
	int lines[NLINES], bad = 0;
	struct pci_dev *p;

	(void)state;
	p = dev_with_lines(lines);
	for (size_t a = 0; a < sizeof(kinds) / sizeof(kinds[0]); a++) {
		for (size_t b = 0; b < sizeof(kinds) / sizeof(kinds[0]); b++) {
			int n, again, w0 = devres_warn_count(), warns;
			bool kept = true;

			n = pci_alloc_irq_vectors(p, 1, NLINES, kinds[a]);
			assert_true(n >= 1);
			assert_int_equal(devres_warn_count(), w0);
			again = pci_alloc_irq_vectors(p, 1, NLINES, kinds[b]);
			warns = devres_warn_count() - w0;
			for (int v = 0; v < n; v++)
				kept = kept && pci_irq_vector(p, (unsigned)v) ==
						       lines[v];
			kept = kept &&
			       pci_irq_vector(p, (unsigned)n) == -EINVAL;
			pci_free_irq_vectors(p);
			if (again != -EINVAL || warns != 1 || !kept ||
			    devres_warn_count() != w0 + warns) {
				print_error("0x%x after 0x%x: %d, %d WARN, "
					    "first vectors %s\n",
					    kinds[b], kinds[a], again, warns,
					    kept ? "kept" : "changed");
				bad++;
			}
		}
	}
	assert_int_equal(bad, 0);
	dev_down(p, lines);
}

#define ROUNDS 5000

static struct pci_dev *shared;
static int einval, others;
static pthread_barrier_t go;

static void *alloc_free(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	for (int i = 0; i < ROUNDS; i++) {
		int n = pci_alloc_irq_vectors(shared, 1, 1, PCI_IRQ_MSIX);

		if (n == 1)
			pci_free_irq_vectors(shared);
		else if (n == -EINVAL)
			__atomic_add_fetch(&einval, 1, __ATOMIC_SEQ_CST);
		else
			__atomic_add_fetch(&others, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void quiet(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

/* Each -EINVAL (the other thread's vectors, held or being made) WARNs. */
static void two_threads_allocate(void **state)
{
	int lines[NLINES], w0;
	pthread_t t[2];

	(void)state;
	shared = dev_with_lines(lines);
	w0 = devres_warn_count();
	devres_set_log_sink(quiet, NULL);
	pthread_barrier_init(&go, NULL, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, alloc_free, NULL),
				 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&go);
	devres_set_log_sink(NULL, NULL);
	print_message("%d -EINVAL\n", einval);
	assert_int_equal(others, 0);
	assert_int_equal(devres_warn_count() - w0, einval);
	assert_int_equal(pci_alloc_irq_vectors(shared, 1, 1, PCI_IRQ_MSIX), 1);
	pci_free_irq_vectors(shared);
	dev_down(shared, lines);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(each_kind_each_vector,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(alloc_twice_each_kind,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(two_threads_allocate, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
