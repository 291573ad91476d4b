// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci */
/*
 * The edu driver of examples/edu, the same struct pci_driver that binds
 * QEMU's edu through VFIO in the test VM, bound on a fake tree: a model
 * thread plays the device's BAR 0 through the test's own mapping of its
 * resource0 (identification, liveness, the factorial unit with its
 * interrupt, acknowledge), and raises the interrupt on a line of the test
 * (the device left to sysfs) or through a fake uio node (the device taken
 * by the UIO backend, where DMA is refused, and the model masks INTx at
 * each interrupt and holds the next until the library unmasks it). The
 * probe is swept.
 */
#define _GNU_SOURCE /* posix_openpt(), ptsname() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"
#include "edu.h"

#define A "0000:00:04.0"
#define EDU_BAR_SIZE (1 << 20)

struct edu_model {
	volatile uint32_t *regs; /* the test's own mapping of resource0 */
	int master;		 /* the uio node's device side, or -1 */
	int line;		 /* the test's line, when not through UIO */
	bool want_irq;		 /* UIO: an interrupt waits for INTx unmasked */
	pthread_t thread;
	int stop;	      /* atomic */
	unsigned long raised; /* atomic */
};

static struct edu_model model;
static struct fake_uio uu = { -1, -1 };

static uint32_t fact32(uint32_t n)
{
	uint32_t r = 1;

	while (n > 1)
		r *= n--;
	return r;
}

/*
 * Through UIO the interrupt is level and maskable: it waits while INTx is
 * masked, and is then delivered as uio_pci_generic does, masking INTx.
 * Counted only when it got through (no assertion off the test's thread).
 */
static void model_raise(struct edu_model *m)
{
	if (m->master < 0) {
		if (irq_line_raise(m->line) == 0)
			__atomic_add_fetch(&m->raised, 1, __ATOMIC_RELAXED);
		return;
	}
	m->want_irq = true;
}

static void model_deliver(struct edu_model *m)
{
	if (m->want_irq && uio_masked(A) == 0 &&
	    uio_fire(A, &uu, (uint32_t)m->raised + 1) == 0) {
		m->want_irq = false;
		__atomic_add_fetch(&m->raised, 1, __ATOMIC_RELAXED);
	}
}

#define R(off) (m->regs[(off) / 4])

/*
 * What edu does, as far as the driver's probe and factorials need it. A
 * register the driver wrote is told from one the model wrote by its value:
 * the model remembers what it left there.
 */
static void *model_run(void *arg)
{
	struct edu_model *m = arg;
	struct timespec tick = { 0, 20 * 1000 };
	/* A new tree's file holds zeros: what the driver writes differs. */
	uint32_t live = 0, fact = 0;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		uint32_t v, ack = R(EDU_REG_IRQ_ACK);

		if (ack) {
			R(EDU_REG_IRQ_ACK) = 0;
			R(EDU_REG_IRQ_STATUS) &= ~ack;
		}
		v = R(EDU_REG_LIVENESS);
		if (v != live)
			R(EDU_REG_LIVENESS) = live = ~v;
		v = R(EDU_REG_FACT);
		if (v != fact) {
			R(EDU_REG_FACT) = fact = fact32(v);
			if (R(EDU_REG_STATUS) & EDU_STATUS_IRQFACT) {
				R(EDU_REG_IRQ_STATUS) |= EDU_IRQ_FACT;
				model_raise(m);
			}
		}
		model_deliver(m);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static void model_start(bool uio)
{
	char path[4096];
	void *p;
	int fd;

	assert_int_equal(pci_fake_path(ft, A, "resource0", path, sizeof(path)),
			 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	p = mmap(NULL, EDU_BAR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	memset(&model, 0, sizeof(model));
	model.regs = p;
	model.regs[EDU_REG_IDENT / 4] = EDU_IDENT;
	model.master = uio ? uu.master : -1;
	if (!uio)
		model.line = irq_line_create("edu-model");
	assert_int_equal(pthread_create(&model.thread, NULL, model_run, &model),
			 0);
}

static void model_stop(void)
{
	__atomic_store_n(&model.stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(model.thread, NULL), 0);
	munmap((void *)model.regs, EDU_BAR_SIZE);
	if (model.line > 0)
		assert_int_equal(irq_line_destroy(model.line), 0);
}

static int edu_setup(void **state)
{
	return pci_setup(state) || uio_dir_make() ? -1 : 0;
}

static int edu_teardown(void **state)
{
	int ret;

	pci_bus_remove_all();
	fake_uio_close(&uu);
	ret = pci_teardown(state);
	uio_dir_remove();
	return ret;
}

static struct pci_dev *add_edu(bool uio)
{
	struct pci_fake_dev d = fake_dev(A, EDU_VENDOR, EDU_DEVICE, 1);
	struct pci_dev *p;

	d.bar_size[0] = EDU_BAR_SIZE;
	d.class = 0x00ff00;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	if (uio) {
		assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
		assert_int_equal(fake_uio_add(A, 0, &uu), 0);
	}
	assert_int_equal(pci_bus_scan_device(A), 0);
	p = pci_get_device(EDU_VENDOR, EDU_DEVICE, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	assert_int_equal(pci_dev_is_uio(p), uio);
	model_start(uio);
	if (!uio)
		assert_int_equal(pci_dev_set_irq_lines(p, &model.line, 1), 0);
	return p;
}

/* Binds edu_driver, runs factorials 12! down to 3!, unbinds. */
static void bind_and_compute(struct pci_dev *p, bool uio)
{
	unsigned long irqs;
	struct edu *edu;

	assert_int_equal(pci_register_driver(&edu_driver), 0);
	edu = pci_get_drvdata(p);
	assert_non_null(edu);
	assert_true(p->is_busmaster);
	irqs = edu->irqs;
	/* Down from 12: no input equals a result the model left before. */
	for (uint32_t n = 12; n >= 3; n--) {
		uint32_t r = 0;

		assert_int_equal(edu_factorial(edu, n, &r), 0);
		assert_int_equal(r, fact32(n));
	}
	assert_int_equal(edu->irqs - irqs, 10);
	if (uio) {
		/* DMA refused: bound without a buffer. */
		assert_null(edu->buf);
		assert_int_equal(edu_dma(edu, 0x1000, 0, 64, true),
				 -EOPNOTSUPP);
		assert_int_equal(dma_set_mask(&p->dev, DMA_BIT_MASK(28)), -EIO);
	} else {
		assert_non_null(edu->buf);
	}
	pci_unregister_driver(&edu_driver);
	assert_null(pci_get_drvdata(p));
	assert_false(p->is_busmaster);
}

static void test_edu_on_sysfs(void **state)
{
	struct pci_dev *p;

	(void)state;
	p = add_edu(false);
	bind_and_compute(p, false);
	assert_int_equal(pci_dev_set_irq_lines(p, NULL, 0), 0);
	model_stop();
	assert_int_equal(__atomic_load_n(&model.raised, __ATOMIC_RELAXED), 10);
}

static void test_edu_through_uio(void **state)
{
	struct pci_dev *p;

	(void)state;
	p = add_edu(true);
	bind_and_compute(p, true);
	model_stop();
	/* Each after the unmask of the one before; masked at the unbind. */
	assert_int_equal(__atomic_load_n(&model.raised, __ATOMIC_RELAXED), 10);
	assert_int_equal(uio_masked(A), 1);
	assert_int_equal(uio_next_write(&uu, 0), -1);
}

static void test_edu_sweep(void **state)
{
	struct devres_sweep_result r;
	int warns = devres_warn_count();
	struct pci_dev *p;

	(void)state;
	p = add_edu(true);
	assert_int_equal(driver_probe_sweep(&edu_driver.driver, &p->dev, &r),
			 0);
	model_stop();
	assert_true(r.points >= 8);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(devres_warn_count(), warns);
	assert_null(p->dev.driver);
	assert_false(p->is_busmaster);
}

int main(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_edu_on_sysfs, edu_setup,
						edu_teardown),
		cmocka_unit_test_setup_teardown(test_edu_through_uio, edu_setup,
						edu_teardown),
		cmocka_unit_test_setup_teardown(test_edu_sweep, edu_setup,
						edu_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
