// SPDX-License-Identifier: MIT
/*
 * vfio-states, classes 5 and 6, on QEMU's NVMe controller (the one device
 * of the VM that VFIO can reset, and the one with MSI-X):
 *
 *   5  pci_reset_function() in each state: scanned, bound with vectors
 *      and handlers, with commands (DMA and interrupts) in flight, from a
 *      thread function and from a primary handler, from two threads at
 *      once, racing an unbind, in a child of fork(), unbound; a device
 *      with no reset;
 *   6  MSI-X vectors: each count allocated, each vector raised by the
 *      controller and counted on its own handler, handlers freed in every
 *      order, the vectors freed with handlers still attached, allocated
 *      again with another count, after INTx, twice, and live at unbind.
 *
 * After each step the MSI-X enable bit and bus mastering are read from
 * the device (the config region through VFIO, and the host's sysfs
 * config) and compared with the library's state.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/vfio.h>
#include "vfio-states.h"

#define PCI_MSIX_FLAGS_ENABLE 0x8000

static struct pci_dev *nv;
static atomic_uint hits[MINI_QUEUES];
static int fds0;

static irqreturn_t count_irq(int irq, void *data)
{
	(void)irq;
	atomic_fetch_add((atomic_uint *)data, 1);
	return IRQ_HANDLED;
}

static struct nvme_mini *mini(void)
{
	return pci_get_drvdata(nv);
}

/* The MSI-X enable bit through VFIO's config region and the host's sysfs. */
static void msix_bits(int *ret_vfio, int *ret_host)
{
	uint8_t pos = pci_find_capability(nv, PCI_CAP_ID_MSIX);
	uint16_t flags = 0;
	char path[96];
	int fd;

	*ret_vfio = *ret_host = -1;
	if (!pos)
		return;
	if (!pci_read_config_word(nv, pos + 2, &flags))
		*ret_vfio = !!(flags & PCI_MSIX_FLAGS_ENABLE);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config",
		 pci_name(nv));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, &flags, 2, pos + 2) == 2)
		*ret_host = !!(flags & PCI_MSIX_FLAGS_ENABLE);
	if (fd >= 0)
		close(fd);
}

/*
 * Whether the device shows what the library holds: MSI-X on exactly while
 * msix_enabled, bus mastering exactly while is_busmaster. @why gets the
 * values when not.
 */
static bool agrees(char *why, size_t len)
{
	uint16_t cmd = 0;
	int vfio, host, master;

	msix_bits(&vfio, &host);
	(void)pci_read_config_word(nv, PCI_COMMAND, &cmd);
	master = !!(cmd & PCI_COMMAND_MASTER);
	snprintf(why, len,
		 "msix: vfio %d host %d library %d; master %d library %d", vfio,
		 host, nv->msix_enabled, master, nv->is_busmaster);
	return vfio == nv->msix_enabled && host == nv->msix_enabled &&
	       master == nv->is_busmaster;
}

/* Vector @k completes a command and its handler counts it. */
static bool raise_one(unsigned int k)
{
	unsigned int h0 = atomic_load(&hits[k]);

	if (mini_complete(mini(), k))
		return false;
	for (int i = 0; i < 2000; i++) {
		if (atomic_load(&hits[k]) != h0)
			return true;
		usleep(1000);
	}
	return false;
}

/* A fresh controller, and each of @n vectors raised in turn. */
static bool raise_all(unsigned int n)
{
	if (mini_enable(mini()))
		return false;
	for (unsigned int k = 0; k < n; k++)
		if (!raise_one(k))
			return false;
	return true;
}

static int request_all(unsigned int n)
{
	for (unsigned int k = 0; k < n; k++) {
		int ret = request_irq((unsigned int)pci_irq_vector(nv, k),
				      count_irq, 0, "nvme-mini", &hits[k]);

		if (ret)
			return ret;
	}
	return 0;
}

/* The handlers of @n vectors freed in @order (indices), then the vectors. */
static void free_all(unsigned int n, const unsigned int *order)
{
	for (unsigned int i = 0; i < n; i++) {
		unsigned int k = order ? order[i] : i;

		free_irq((unsigned int)pci_irq_vector(nv, k), &hits[k]);
	}
	pci_free_irq_vectors(nv);
}

/* Bound, with @n MSI-X vectors, a handler on each, each raised once. */
static bool setup(unsigned int n)
{
	return bind(nv) &&
	       pci_alloc_irq_vectors(nv, n, n, PCI_IRQ_MSIX) == (int)n &&
	       !request_all(n) && raise_all(n);
}

static void teardown(unsigned int n)
{
	free_all(n, NULL);
	device_release_driver(&nv->dev);
}

/* ---- class 5: reset ---- */

static atomic_int thread_ret = 1;

static irqreturn_t reset_in_thread(int irq, void *data)
{
	(void)irq;
	if (atomic_load(&thread_ret) == 1)
		atomic_store(&thread_ret, pci_reset_function(nv));
	atomic_fetch_add((atomic_uint *)data, 1);
	return IRQ_HANDLED;
}

/* A handler that resets its device: in its thread (@threaded) or not. */
static void reset_from_handler(bool threaded)
{
	const char *name = threaded ? "5.thread-fn" : "5.primary";
	unsigned int line;
	int ret, w0 = devres_warn_count();
	char why[128];
	bool ok;

	atomic_store(&thread_ret, 1);
	ok = setup(1);
	line = (unsigned int)pci_irq_vector(nv, 0);
	free_irq(line, &hits[0]);
	ret = threaded ? request_threaded_irq(line, NULL, reset_in_thread,
					      IRQF_ONESHOT, "reset", &hits[0])
		       : request_irq(line, reset_in_thread, 0, "reset",
				     &hits[0]);
	ok = ok && !ret && raise_all(1);
	for (int i = 0; i < 3000 && atomic_load(&thread_ret) == 1; i++)
		usleep(1000);
	ok = ok && atomic_load(&thread_ret) == 0 && agrees(why, sizeof(why));
	/* The controller was reset under the driver: it works once set up. */
	ok = ok && raise_all(1);
	teardown(1);
	cell(name, ok && devres_warn_count() == w0, "reset: %d; %s; warns %d",
	     atomic_load(&thread_ret), why, devres_warn_count() - w0);
}

static atomic_bool stop;
static atomic_int bad_resets, resets;

static void *resetter(void *arg)
{
	int n = (int)(intptr_t)arg;

	for (int i = 0; (n ? i < n : !atomic_load(&stop)); i++) {
		int ret = pci_reset_function(nv);

		atomic_fetch_add(&resets, 1);
		if (ret) {
			if (!atomic_load(&bad_resets))
				printf("vfio-states: reset: %s\n",
				       strerror(-ret));
			atomic_fetch_add(&bad_resets, 1);
		}
	}
	return NULL;
}

/* @threads resetters of @n resets each (0: until the unbind is done). */
static void reset_race(const char *name, int threads, int n, bool unbind)
{
	pthread_t t[2];
	char why[128];
	int w0 = devres_warn_count();
	bool ok = setup(4);

	atomic_store(&bad_resets, 0);
	atomic_store(&resets, 0);
	atomic_store(&stop, false);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, resetter, (void *)(intptr_t)n);
	if (unbind) {
		usleep(20000);
		teardown(4);
		atomic_store(&stop, true);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	ok = ok && agrees(why, sizeof(why));
	if (!unbind) {
		ok = ok && raise_all(4);
		teardown(4);
	}
	cell(name,
	     ok && !atomic_load(&bad_resets) && devres_warn_count() == w0 &&
		     count_fds(NULL) == fds0,
	     "%d resets, %d failed; %s; warns %d; fds %d, %d before",
	     atomic_load(&resets), atomic_load(&bad_resets), why,
	     devres_warn_count() - w0, count_fds(NULL), fds0);
}

/* Commands whose DMA and interrupts are due as the reset comes. */
static void reset_in_flight(bool wait_first)
{
	const char *name = wait_first ? "5.irq-pending" : "5.dma-in-flight";
	int w0 = devres_warn_count(), ret = -1;
	char why[128] = "";
	bool ok = setup(4);

	if (ok) {
		/* Vector 3's queue and command, not waited for. */
		ok = raise_one(3);
		ret = wait_first ? mini_complete(mini(), 2)
				 : (mini_burst(mini()), 0);
		ret = ret ? ret : pci_reset_function(nv);
		ok = ok && !ret && agrees(why, sizeof(why)) && raise_all(4);
	}
	teardown(4);
	cell(name, ok && devres_warn_count() == w0 && count_fds(NULL) == fds0,
	     "reset %d; %s; warns %d; fds %d, %d before", ret, why,
	     devres_warn_count() - w0, count_fds(NULL), fds0);
}

static void reset_in_child(void)
{
	int status = -1, w0 = devres_warn_count();
	bool ok = setup(2);
	pid_t pid = fork();

	if (pid == 0) {
		int c0 = devres_warn_count();
		int ret = pci_reset_function(nv);

		_exit((ret != -EINVAL) | (devres_warn_count() - c0 != 1) << 1);
	}
	waitpid(pid, &status, 0);
	/* The parent's controller was not reset: its queues still work. */
	ok = ok && raise_one(1) && raise_one(0);
	teardown(2);
	cell("5.fork-child", ok && status == 0 && devres_warn_count() == w0,
	     "child's status %#x (1: not -EINVAL, 2: not one WARN); warns %d",
	     status, devres_warn_count() - w0);
}

void class5_reset(const char *name)
{
	struct pci_dev *edu = name_a[0] ? scan(name_a) : NULL;
	char why[128];
	int w0, ret;
	bool ok;

	alarm(120);
	nv = scan(name);
	fds0 = count_fds(NULL);
	pci_register_driver(&nvme_mini_driver);
	w0 = devres_warn_count();
	ret = pci_reset_function(nv);
	cell("5.scanned",
	     !ret && agrees(why, sizeof(why)) && devres_warn_count() == w0,
	     "%d; %s", ret, why);

	w0 = devres_warn_count();
	ok = setup(4);
	ret = pci_reset_function(nv);
	ok = ok && !ret && agrees(why, sizeof(why)) && raise_all(4);
	teardown(4);
	cell("5.bound",
	     ok && devres_warn_count() == w0 && count_fds(NULL) == fds0,
	     "reset %d; %s; vectors raised after; fds %d, %d before", ret, why,
	     count_fds(NULL), fds0);

	reset_in_flight(false);
	reset_in_flight(true);
	reset_from_handler(true);
	reset_from_handler(false);
	reset_race("5.two-threads", 2, 5, false);
	reset_race("5.unbind", 1, 0, true);
	reset_in_child();

	w0 = devres_warn_count();
	ret = pci_reset_function(nv);
	cell("5.unbound",
	     !ret && agrees(why, sizeof(why)) && !nv->msix_enabled &&
		     devres_warn_count() == w0,
	     "%d; %s", ret, why);

	if (edu) {
		w0 = devres_warn_count();
		ret = pci_reset_function(edu);
		cell("5.no-reset", ret == -ENOTTY && devres_warn_count() == w0,
		     "edu: %d (%s)", ret, strerror(-ret));
	}
	w0 = devres_warn_count();
	ret = pci_reset_function(NULL);
	cell("5.null", ret == -EINVAL && devres_warn_count() == w0 + 1,
	     "%d, warns %d", ret, devres_warn_count() - w0);
	pci_dev_put(edu);
	alarm(0);
}

/* ---- class 6: MSI-X ---- */

static const unsigned int reverse[] = { 7, 6, 5, 4, 3, 2, 1, 0 };
static const unsigned int inside_out[] = { 3, 4, 2, 5, 1, 6, 0, 7 };
static const unsigned int odd_even[] = { 1, 3, 5, 7, 0, 2, 4, 6 };

/* @n vectors, each raised, freed in @order: the enable bit each step. */
static void msix_count(unsigned int n, const unsigned int *order,
		       const char *how)
{
	char name[64], why[128] = "", why2[128] = "";
	int w0 = devres_warn_count(), ret;
	bool ok = true;

	snprintf(name, sizeof(name), "6.msix-%u/%s", n, how);
	ret = pci_alloc_irq_vectors(nv, 1, n, PCI_IRQ_MSIX);
	ok = ret == (int)n && nv->msix_enabled && agrees(why, sizeof(why)) &&
	     !request_all(n) && raise_all(n);
	if (order && n < MINI_QUEUES) {
		/* The order's indices below @n, in its order. */
		unsigned int sub[MINI_QUEUES], m = 0;

		for (unsigned int i = 0; i < MINI_QUEUES; i++)
			if (order[i] < n)
				sub[m++] = order[i];
		free_all(n, sub);
	} else {
		free_all(n, order);
	}
	ok = ok && !nv->msix_enabled && agrees(why2, sizeof(why2)) &&
	     pci_irq_vector(nv, 0) == -EINVAL;
	cell(name, ok && devres_warn_count() == w0,
	     "%d vectors; allocated: %s; freed: %s; warns %d", ret, why, why2,
	     devres_warn_count() - w0);
}

void class6_msix(const char *name)
{
	int w0, ret, ret2;
	char why[128] = "";
	bool ok;

	alarm(120);
	if (!nv)
		nv = scan(name);
	if (!bind(nv)) {
		cell("6.bind", false, "the NVMe controller does not bind");
		return;
	}
	msix_count(1, NULL, "forward");
	msix_count(2, reverse, "reverse");
	msix_count(4, inside_out, "inside-out");
	msix_count(8, odd_even, "odd-even");
	msix_count(8, NULL, "forward");

	/*
	 * The kernel's rule: free the handlers first. The vectors stay,
	 * working, until they are freed after their handlers.
	 */
	w0 = devres_warn_count();
	ok = pci_alloc_irq_vectors(nv, 4, 4, PCI_IRQ_MSIX) == 4 &&
	     !request_all(4) && raise_all(4);
	pci_free_irq_vectors(nv);
	ok = ok && nv->msix_enabled && agrees(why, sizeof(why)) && raise_all(4);
	free_all(4, reverse + 4);
	ret = pci_alloc_irq_vectors(nv, 2, 2, PCI_IRQ_MSIX);
	ok = ok && ret == 2 && !request_all(2) && raise_all(2);
	free_all(2, NULL);
	cell("6.free-vectors-with-handlers",
	     ok && devres_warn_count() == w0 + 1, "%s; again: %d; warns %d",
	     why, ret, devres_warn_count() - w0);

	/*
	 * Twice without a free: the kernel's -EINVAL and its WARN
	 * (WARN_ON_ONCE(dev->msix_enabled)); the first vectors work on.
	 */
	w0 = devres_warn_count();
	ret = pci_alloc_irq_vectors(nv, 2, 2, PCI_IRQ_MSIX);
	ret2 = pci_alloc_irq_vectors(nv, 4, 4, PCI_IRQ_MSIX);
	ok = ret == 2 && ret2 == -EINVAL && agrees(why, sizeof(why)) &&
	     !request_all(2) && raise_all(2);
	free_all(2, NULL);
	cell("6.alloc-twice", ok && devres_warn_count() == w0 + 1,
	     "%d then %d; %s; warns %d", ret, ret2, why,
	     devres_warn_count() - w0);

	/* INTx, then MSI (the controller has none), then MSI-X. */
	w0 = devres_warn_count();
	ret = pci_alloc_irq_vectors(nv, 1, 1, PCI_IRQ_INTX);
	ok = ret == 1 && !nv->msix_enabled && agrees(why, sizeof(why));
	pci_free_irq_vectors(nv);
	ret2 = pci_alloc_irq_vectors(nv, 1, 1, PCI_IRQ_MSI);
	ok = ok && ret2 == -ENOSPC;
	ok = ok && pci_alloc_irq_vectors(nv, 3, 3, PCI_IRQ_MSIX) == 3 &&
	     !request_all(3) && raise_all(3) && agrees(why, sizeof(why));
	free_all(3, NULL);
	cell("6.intx-msi-msix", ok && devres_warn_count() == w0,
	     "intx %d, msi %d; %s; warns %d", ret, ret2, why,
	     devres_warn_count() - w0);

	/* Unbound with vectors and managed handlers live. */
	w0 = devres_warn_count();
	ok = pci_alloc_irq_vectors(nv, 8, 8, PCI_IRQ_MSIX) == 8;
	for (unsigned int k = 0; ok && k < 8; k++)
		ok = !devm_request_irq(&nv->dev,
				       (unsigned int)pci_irq_vector(nv, k),
				       count_irq, 0, "nvme-mini", &hits[k]);
	ok = ok && raise_all(8);
	device_release_driver(&nv->dev);
	ok = ok && agrees(why, sizeof(why)) && !nv->msix_enabled;
	cell("6.unbind-live",
	     ok && devres_warn_count() == w0 && count_fds(NULL) == fds0,
	     "%s; warns %d; fds %d, %d before", why, devres_warn_count() - w0,
	     count_fds(NULL), fds0);

	/* And again, bound afresh. */
	ok = setup(5);
	teardown(5);
	cell("6.rebind", ok && count_fds(NULL) == fds0, "fds %d, %d before",
	     count_fds(NULL), fds0);
	pci_unregister_driver(&nvme_mini_driver);
	pci_dev_put(nv);
	nv = NULL;
	alarm(0);
}
