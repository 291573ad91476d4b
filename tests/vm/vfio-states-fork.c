// SPDX-License-Identifier: MIT
/* vfio-states, classes 3 and 4: fork(), and interrupt threads that end. */
#include <errno.h>
#include <linux/vfio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/vfio.h>
#include "vfio-states.h"

/* ---- class 3: fork ---- */

/*
 * The child of a parent that holds A bound: it releases everything it
 * can reach and exits; then it scans B, a device of its own, binds it and
 * uses it. The parent's A must work after, with its mappings as before.
 */
static struct pci_driver child_driver;

static int child_of_holder(struct pci_dev *a)
{
	struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof(u) };
	struct edu *edu = pci_get_drvdata(a);
	struct pci_dev *b;
	int bits = 0, w0 = devres_warn_count();

	u.iova = edu->buf_dma;
	u.size = edu->buf_size;
	/* The parent's group: open in the parent, the kernel's EBUSY. */
	if (second_open(name_a) != -EBUSY)
		bits |= 1;
	/* The parent's fds, inherited: nothing may change the parent's. */
	errno = 0;
	if (ioctl(fd_of(CONTAINER), VFIO_IOMMU_UNMAP_DMA, &u) == 0 && u.size)
		bits |= 2;
	else if (errno != EPERM)
		bits |= 32; /* not refused */
	device_release_driver(&a->dev);
	pci_bus_remove_all();
	if (devres_warn_count() == w0)
		bits |= 4; /* the parent's device: WARNed */
	if (name_b[0]) {
		/* The parent's driver is not tried on the child's devices. */
		child_driver.name = "edu-child";
		child_driver.id_table = edu_driver.id_table;
		child_driver.probe = edu_driver.probe;
		if (pci_register_driver(&child_driver))
			bits |= 16;
		b = scan(name_b);
		if (!b || !bind(b) || !works(b)) {
			printf("vfio-states: child: %s %s\n", name_b,
			       !b	  ? "not scanned"
			       : !bind(b) ? "not bound"
					  : "bound, not working");
			bits |= 8;
		}
		if (b)
			device_release_driver(&b->dev);
		pci_dev_put(b);
		pci_bus_remove_all();
		pci_unregister_driver(&child_driver);
	}
	return bits;
}

void class3_fork(void)
{
	struct pci_dev *a = scan(name_a);
	int status = 0, n0, maps0;
	pid_t pid;

	if (!a || !bind(a)) {
		cell("3.fork", false, "no bound device");
		pci_dev_put(a);
		pci_bus_remove_all();
		return;
	}
	n0 = mappings(a);
	maps0 = count_maps("vfio-device");
	pid = fork();
	if (pid == 0)
		exit(child_of_holder(a)); /* with the library's exit */
	waitpid(pid, &status, 0);
	cell("3.fork/child",
	     WIFEXITED(status) && (WEXITSTATUS(status) & ~4) == 0,
	     "child exit %d: bits 1 (group not busy), 2 (parent's IOVA "
	     "unmapped), 8 (own device failed), 16 (own driver refused), "
	     "32 (the ioctl on the parent's container not refused) must be "
	     "clear",
	     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	cell("3.fork/child-warned",
	     WIFEXITED(status) && !(WEXITSTATUS(status) & 4),
	     "the child's release of the parent's device WARNed");
	cell("3.fork/parent",
	     works(a) && mappings(a) == n0 &&
		     count_maps("vfio-device") == maps0 && pci_get_drvdata(a),
	     "the parent's device still bound and working after the child "
	     "exited: %d mappings (want %d)",
	     mappings(a), n0);
	device_release_driver(&a->dev);
	pci_dev_put(a);
	pci_bus_remove_all();
}

/* ---- class 4: threads ---- */

struct t4 {
	struct pci_dev *pdev;
	struct edu *edu;
	int mode, runs, prims;
};

static irqreturn_t t4_primary(int irq, void *arg)
{
	struct t4 *t = arg;
	uint32_t status = readl((char *)t->edu->regs + EDU_REG_IRQ_STATUS);

	(void)irq;
	if (!status)
		return IRQ_NONE;
	writel(status, (char *)t->edu->regs + EDU_REG_IRQ_ACK);
	__atomic_add_fetch(&t->prims, 1, __ATOMIC_SEQ_CST);
	if (t->mode == 4 && t->prims == 1)
		pthread_exit(NULL);
	if (t->mode == 5) {
		device_release_driver(&t->pdev->dev);
		return IRQ_HANDLED;
	}
	return t->mode >= 4 ? IRQ_HANDLED : IRQ_WAKE_THREAD;
}

static irqreturn_t t4_thread(int irq, void *arg)
{
	struct t4 *t = arg;

	(void)irq;
	__atomic_add_fetch(&t->runs, 1, __ATOMIC_SEQ_CST);
	if (t->mode == 1)
		pthread_exit(NULL);
	if (t->mode == 2)
		pthread_cancel(pthread_self());
	if (t->mode == 3)
		device_release_driver(&t->pdev->dev);
	return IRQ_HANDLED;
}

static bool raise_and_wait(struct t4 *t, int want_runs)
{
	writel(1, (char *)t->edu->regs + EDU_REG_IRQ_RAISE);
	for (int i = 0;
	     i < 200 && __atomic_load_n(&t->runs, __ATOMIC_SEQ_CST) < want_runs;
	     i++)
		usleep(10 * 1000);
	return __atomic_load_n(&t->runs, __ATOMIC_SEQ_CST) >= want_runs;
}

static bool raise_and_wait_prim(struct t4 *t, int want)
{
	writel(1, (char *)t->edu->regs + EDU_REG_IRQ_RAISE);
	for (int i = 0;
	     i < 200 && __atomic_load_n(&t->prims, __ATOMIC_SEQ_CST) < want;
	     i++)
		usleep(10 * 1000);
	return __atomic_load_n(&t->prims, __ATOMIC_SEQ_CST) >= want;
}

void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "cell 4: FAILED: hung (alarm)\n";

	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * A threaded handler on A's vector whose thread function, at its first
 * interrupt, ends its thread (1: pthread_exit(); 2: asks for its own
 * cancellation, with no cancellation point after) or unbinds its own
 * device (3); then a second interrupt.
 */
static void thread_ends(int mode, const char *cellname, int want_warns,
			int want_runs)
{
	struct t4 t = { .mode = mode };
	struct hand h;
	int irq, ret, warns, after;
	bool left, ok;

	if (!hand_begin(&h, cellname))
		return;
	t.pdev = h.pdev;
	t.edu = h.edu;
	irq = pci_irq_vector(h.pdev, 0);
	/* The driver's own handler makes room for this one. */
	devm_free_irq(&h.pdev->dev, (unsigned int)irq, h.edu);
	ret = devm_request_threaded_irq(&h.pdev->dev, (unsigned int)irq,
					t4_primary, t4_thread, IRQF_ONESHOT,
					"t4", &t);
	alarm(20);
	ok = !ret &&
	     (mode >= 4 ? raise_and_wait_prim(&t, 1) : raise_and_wait(&t, 1));
	usleep(50 * 1000);
	if (mode == 4) {
		raise_and_wait_prim(&t, 2);
		ok = ok && __atomic_load_n(&t.prims, __ATOMIC_SEQ_CST) >= 2;
	} else if (mode != 3 && mode != 5) {
		/* The second one: handled (its primary ran) either way. */
		raise_and_wait(&t, 2);
		ok = ok && __atomic_load_n(&t.prims, __ATOMIC_SEQ_CST) >= 2;
	} else {
		ok = ok && !pci_get_drvdata(h.pdev);
	}
	warns = devres_warn_count() - h.w0;
	cell(cellname, ok && warns == want_warns && t.runs == want_runs,
	     "%d WARNs (want %d); the thread function ran %d times (want "
	     "%d), the primary handler %d",
	     warns, want_warns, t.runs, want_runs, t.prims);
	left = hand_end(&h, &after);
	alarm(0);
	cell("4.thread-end/then-unbind", left && after == 0,
	     "unbind %d WARNs, fds and mappings %s", after,
	     left ? "as before the scan" : "LEFT");
}

/* Unbind while the device raises interrupts, 20 times. */
static void unbind_under_interrupts(void)
{
	struct pci_dev *pdev = scan(name_a);
	int w0 = devres_warn_count(), ok = 0;

	alarm(30);
	for (int i = 0; pdev && i < 20; i++) {
		struct edu *edu;

		if (!bind(pdev))
			break;
		edu = pci_get_drvdata(pdev);
		for (int k = 0; k < 50; k++)
			writel(EDU_IRQ_FACT,
			       (char *)edu->regs + EDU_REG_IRQ_RAISE);
		device_release_driver(&pdev->dev);
		ok += mappings(pdev) == 0;
	}
	alarm(0);
	cell("4.unbind-under-interrupts",
	     ok == 20 && devres_warn_count() == w0 && pdev && bind(pdev) &&
		     works(pdev),
	     "%d of 20 unbinds with interrupts in flight clean, %d WARNs; "
	     "bound again and working",
	     ok, devres_warn_count() - w0);
	if (pdev)
		device_release_driver(&pdev->dev);
	pci_dev_put(pdev);
	pci_bus_remove_all();
}

void class4_threads(void)
{
	/* Documented in irq.md: the thread is gone, the line goes on. */
	thread_ends(1, "4.thread-fn-pthread_exit", 1, 1);
	/* No cancellation point follows the request: nothing ends. */
	thread_ends(2, "4.thread-fn-cancels-itself", 0, 2);
	/* free_irq() from its own thread function is allowed (irq.md). */
	thread_ends(3, "4.thread-fn-unbinds-its-device", 0, 1);
	/* K5 of misuse.md: the dispatcher goes on in a new thread. */
	thread_ends(4, "4.primary-pthread_exit", 1, 0);
	thread_ends(5, "4.primary-unbinds-its-device", 0, 0);
	unbind_under_interrupts();
	/*
	 * The same on INTx, a level line: VFIO masks it at each interrupt
	 * and the line unmasks it through its second eventfd once the
	 * handlers (and a oneshot thread) are done, which a doomed line must
	 * still do before it is freed.
	 */
	edu_irq_types = PCI_IRQ_INTX;
	thread_ends(1, "4.intx/thread-fn-pthread_exit", 1, 1);
	thread_ends(3, "4.intx/thread-fn-unbinds-its-device", 0, 1);
	thread_ends(4, "4.intx/primary-pthread_exit", 1, 0);
	thread_ends(5, "4.intx/primary-unbinds-its-device", 0, 0);
	unbind_under_interrupts();
	edu_irq_types = PCI_IRQ_MSI;
}
