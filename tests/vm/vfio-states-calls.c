// SPDX-License-Identifier: MIT
/*
 * vfio-states, class 1: each call in each state, and pairs of threads;
 * class 7: the device deleted during each call, and removed by the kernel
 * while open.
 */
#define _GNU_SOURCE /* close_range() */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/vfio.h>
#include "vfio-states.h"

/* ---- class 1: each call in each state ---- */

enum state {
	S_SCANNED,
	S_BOUND,
	S_UNBOUND,
	S_REMOVED,
	NR_STATES
};
enum call {
	C_IS_VFIO,
	C_MAPPINGS,
	C_CFG_READ,
	C_CFG_WRITE,
	C_IOMAP,
	C_DMA,
	C_VECTORS,
	C_IRQ_VECTOR,
	C_SECOND_OPEN,
	NR_CALLS
};

static const char *const state_name[NR_STATES] = { "scanned", "bound",
						   "unbound", "removed-held" };
static const char *const call_name[NR_CALLS] = { "pci_dev_is_vfio",
						 "pci_vfio_dma_mappings",
						 "pci_read_config",
						 "pci_write_config",
						 "pci_iomap",
						 "dma_alloc_coherent",
						 "pci_alloc_irq_vectors",
						 "pci_irq_vector",
						 "second-open" };

static long call(enum call c, struct pci_dev *pdev)
{
	uint32_t v = 0;
	uint16_t cmd = 0;
	dma_addr_t h = 0;
	void __iomem *p;
	void *buf;
	long ret;

	switch (c) {
	case C_IS_VFIO:
		return pci_dev_is_vfio(pdev);
	case C_MAPPINGS:
		return mappings(pdev);
	case C_CFG_READ:
		ret = pci_read_config_dword(pdev, 0, &v);
		return ret ? -1000 - ret : (long)v;
	case C_CFG_WRITE:
		/* The command register written back as it is. */
		ret = pci_read_config_word(pdev, PCI_COMMAND, &cmd);
		return ret ? -1000 - ret
			   : pci_write_config_word(pdev, PCI_COMMAND, cmd);
	case C_IOMAP:
		p = pci_iomap(pdev, 0, 0);
		if (!p)
			return 0;
		ret = readl((char *)p + EDU_REG_IDENT) == EDU_IDENT ? 1 : 2;
		pci_iounmap(pdev, p);
		return ret;
	case C_DMA:
		buf = dma_alloc_coherent(&pdev->dev, 4096, &h, GFP_KERNEL);
		if (!buf)
			return 0;
		ret = mappings(pdev);
		dma_free_coherent(&pdev->dev, 4096, buf, h);
		return ret > 0 ? 1 : 2;
	case C_VECTORS:
		/*
		 * 1: MSI on in the kernel while allocated, and off again once
		 * freed, as the kernel's pci_free_irq_vectors() leaves it.
		 */
		ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI);
		if (ret <= 0)
			return ret;
		ret = msi_on(pdev) == 1 ? 1 : 10;
		pci_free_irq_vectors(pdev);
		return msi_on(pdev) == 0 ? ret : ret + 20;
	case C_IRQ_VECTOR:
		ret = pci_irq_vector(pdev, 0);
		return ret > 0 ? 1 : ret;
	case C_SECOND_OPEN:
		return second_open(pci_name(pdev));
	default:
		return -9999;
	}
}

struct want {
	long ret;
	int warns;
};

/*
 * What the kernel's PCI core and VFIO answer, as the library's contract
 * says (docs/vfio.md, docs/pci.md): the device fd, the group and the
 * container stay with the pci_dev until its last reference, so config
 * space and DMA keep working through them after unbind and removal.
 */
static const struct want want[NR_STATES][NR_CALLS] = {
	[S_SCANNED] = {
		[C_IS_VFIO] = { 1, 0 },
		[C_MAPPINGS] = { 0, 0 },
		[C_CFG_READ] = { 0x11e81234, 0 },
		[C_CFG_WRITE] = { 0, 0 },
		[C_IOMAP] = { 1, 0 },
		[C_DMA] = { 1, 0 },
		[C_VECTORS] = { 1, 0 },
		[C_IRQ_VECTOR] = { -EINVAL, 0 },
		[C_SECOND_OPEN] = { -EBUSY, 0 },
	},
	[S_BOUND] = {
		[C_IS_VFIO] = { 1, 0 },
		[C_MAPPINGS] = { 1, 0 },
		[C_CFG_READ] = { 0x11e81234, 0 },
		[C_CFG_WRITE] = { 0, 0 },
		[C_IOMAP] = { 1, 0 },
		[C_DMA] = { 1, 0 },
		/* The bound driver's vectors: a second allocation WARNs. */
		[C_VECTORS] = { -EINVAL, 1 },
		[C_IRQ_VECTOR] = { 1, 0 },
		[C_SECOND_OPEN] = { -EBUSY, 0 },
	},
	[S_UNBOUND] = {
		[C_IS_VFIO] = { 1, 0 },
		[C_MAPPINGS] = { 0, 0 },
		[C_CFG_READ] = { 0x11e81234, 0 },
		[C_CFG_WRITE] = { 0, 0 },
		[C_IOMAP] = { 1, 0 },
		[C_DMA] = { 1, 0 },
		[C_VECTORS] = { 1, 0 },
		[C_IRQ_VECTOR] = { -EINVAL, 0 },
		[C_SECOND_OPEN] = { -EBUSY, 0 },
	},
	[S_REMOVED] = {
		[C_IS_VFIO] = { 1, 0 },
		[C_MAPPINGS] = { 0, 0 },
		[C_CFG_READ] = { 0x11e81234, 0 },
		[C_CFG_WRITE] = { 0, 0 },
		[C_IOMAP] = { 1, 0 },
		[C_DMA] = { 1, 0 },
		[C_VECTORS] = { 1, 0 },
		[C_IRQ_VECTOR] = { -EINVAL, 0 },
		[C_SECOND_OPEN] = { -EBUSY, 0 },
	},
};

static void run_row(enum state s, struct pci_dev *pdev)
{
	for (int c = 0; c < NR_CALLS; c++) {
		char name[96];
		int w0 = devres_warn_count();
		long got = call((enum call)c, pdev);
		int warns = devres_warn_count() - w0;
		const struct want *w = &want[s][c];

		snprintf(name, sizeof(name), "1.%s/%s", state_name[s],
			 call_name[c]);
		cell(name, got == w->ret && warns == w->warns,
		     "returned %ld, %d WARNs; want %ld, %d", got, warns, w->ret,
		     w->warns);
	}
}

void class1_states(void)
{
	struct pci_dev *pdev = scan(name_a);
	int fds, w0;

	if (!pdev) {
		cell("1.scan", false, "no device");
		return;
	}
	run_row(S_SCANNED, pdev);
	/* From here on the driver binds each device a scan takes. */
	cell("1.bind",
	     !pci_register_driver(&edu_driver) && bind(pdev) && works(pdev),
	     "registered, bound and working");
	run_row(S_BOUND, pdev);
	device_release_driver(&pdev->dev);
	cell("1.unbind", !pci_get_drvdata(pdev) && mappings(pdev) == 0,
	     "no driver, no IOMMU mapping");
	run_row(S_UNBOUND, pdev);
	pci_bus_remove_all();
	run_row(S_REMOVED, pdev);
	/* The last reference: the device fd, the group, the container go. */
	w0 = devres_warn_count();
	pci_dev_put(pdev);
	fds = count_fds(VFIO_DEV_FD) + count_fds(CONTAINER) +
	      count_fds(group_path(name_a));
	cell("1.freed/fds", fds == 0 && devres_warn_count() == w0,
	     "%d VFIO fds left, %d WARNs; want 0, 0", fds,
	     devres_warn_count() - w0);
	cell("1.freed/second-open", second_open(name_a) == 0,
	     "the group opens in another open: %d", second_open(name_a));
}

/* ---- class 1: pairs of calls from two threads ---- */

struct pair {
	struct pci_dev *pdev;
	int rounds, bad;
	int twice; /* -EINVAL: the other's vectors held, with a WARN */
	pthread_barrier_t *go;
};

static void *dma_loop(void *arg)
{
	struct pair *p = arg;

	pthread_barrier_wait(p->go);
	for (int i = 0; i < p->rounds; i++) {
		dma_addr_t h;
		void *buf =
			dma_alloc_coherent(&p->pdev->dev, 4096, &h, GFP_KERNEL);

		if (!buf) {
			p->bad++;
			continue;
		}
		dma_free_coherent(&p->pdev->dev, 4096, buf, h);
	}
	return NULL;
}

static void *unbind_once(void *arg)
{
	struct pair *p = arg;

	pthread_barrier_wait(p->go);
	device_release_driver(&p->pdev->dev);
	return NULL;
}

static void *config_loop(void *arg)
{
	struct pair *p = arg;

	pthread_barrier_wait(p->go);
	for (int i = 0; i < p->rounds; i++) {
		uint32_t v = 0;

		if (pci_read_config_dword(p->pdev, 0, &v) || v != 0x11e81234 ||
		    mappings(p->pdev) < 0)
			p->bad++;
	}
	return NULL;
}

/*
 * 1, or for the loser of a race -EINVAL (the other thread's vectors are
 * allocated, or being allocated: the backend is never in two allocations
 * at once) or -ENOSPC: two threads allocating a device's vectors at once
 * race in the kernel too, whose second allocation WARNs
 * (WARN_ON_ONCE(dev->msi_enabled)): here each -EINVAL is one WARN.
 * Anything else is bad; what is left after is checked by the caller.
 */
static void *vectors_loop(void *arg)
{
	struct pair *p = arg;

	pthread_barrier_wait(p->go);
	for (int i = 0; i < p->rounds; i++) {
		int ret = pci_alloc_irq_vectors(p->pdev, 1, 1, PCI_IRQ_MSI);

		if (ret == 1) {
			pci_free_irq_vectors(p->pdev);
		} else if (ret == -EINVAL) {
			/* The other thread's vectors, held or being made. */
			p->twice++;
		} else if (ret != -ENOSPC) {
			printf("vfio-states: pci_alloc_irq_vectors: %d\n", ret);
			p->bad++;
		}
	}
	return NULL;
}

static void two_threads(const char *name, struct pci_dev *pdev,
			void *(*a)(void *), void *(*b)(void *), int rounds,
			struct pair *pa, struct pair *pb)
{
	pthread_barrier_t go;
	pthread_t ta, tb;

	pthread_barrier_init(&go, NULL, 2);
	*pa = (struct pair){ .pdev = pdev, .rounds = rounds, .go = &go };
	*pb = *pa;
	pthread_create(&ta, NULL, a, pa);
	pthread_create(&tb, NULL, b, pb);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(&go);
	(void)name;
}

void class1_pairs(void)
{
	int w0, base, fds0 = count_fds(NULL);
	struct pci_dev *pdev = scan(name_a);
	struct pair pa, pb;

	if (!pdev || !bind(pdev)) {
		cell("1.pairs", false, "no bound device");
		pci_dev_put(pdev);
		pci_bus_remove_all();
		return;
	}
	base = mappings(pdev);
	w0 = devres_warn_count();
	two_threads("dma", pdev, dma_loop, dma_loop, 200, &pa, &pb);
	cell("1.pair/dma_alloc+dma_alloc",
	     !pa.bad && !pb.bad && mappings(pdev) == base &&
		     devres_warn_count() == w0,
	     "2 x 200 buffers mapped and unmapped in one group: %d and %d "
	     "failed, %d mappings (want %d), %d WARNs",
	     pa.bad, pb.bad, mappings(pdev), base, devres_warn_count() - w0);

	two_threads("unbind", pdev, unbind_once, unbind_once, 1, &pa, &pb);
	cell("1.pair/unbind+unbind",
	     !pci_get_drvdata(pdev) && mappings(pdev) == 0 &&
		     devres_warn_count() == w0,
	     "unbound once: %d mappings, %d WARNs", mappings(pdev),
	     devres_warn_count() - w0);

	for (int i = 0; i < 5; i++) {
		bind(pdev);
		two_threads("config", pdev, config_loop, unbind_once, 300, &pa,
			    &pb);
	}
	cell("1.pair/config+unbind",
	     !pa.bad && mappings(pdev) == 0 && devres_warn_count() == w0,
	     "5 unbinds under config reads: %d bad reads, %d mappings, "
	     "%d WARNs",
	     pa.bad, mappings(pdev), devres_warn_count() - w0);
	cell("1.pair/rebind", bind(pdev) && works(pdev), "bound and working");
	device_release_driver(&pdev->dev);

	/* Unbound: vectors allocated and freed from two threads at once. */
	two_threads("vectors", pdev, vectors_loop, vectors_loop, 50, &pa, &pb);
	pci_free_irq_vectors(pdev);
	cell("1.pair/vectors+vectors",
	     pa.bad + pb.bad == 0 && msi_on(pdev) == 0 &&
		     pci_irq_vector(pdev, 0) == -EINVAL &&
		     devres_warn_count() == w0 + pa.twice + pb.twice,
	     "2 x 50 allocations and frees: %d got neither vectors nor "
	     "-EINVAL or -ENOSPC, MSI %s after, %d WARNs for %d -EINVAL",
	     pa.bad + pb.bad, msi_on(pdev) ? "ON" : "off",
	     devres_warn_count() - w0, pa.twice + pb.twice);
	cell("1.pair/vectors-then-bind", bind(pdev) && works(pdev),
	     "bound and working after");
	pci_dev_put(pdev);
	pci_bus_remove_all();
	cell("1.pair/end",
	     count_fds(NULL) == fds0 && !count_maps("vfio-device"),
	     "removed: %d fds (had %d before the scan), %d BAR mappings",
	     count_fds(NULL), fds0, count_maps("vfio-device"));
}

/* The two pci-testdev behind the bridge: one IOMMU group. */
static int find_testdevs(char names[2][32])
{
	struct pci_dev *p = NULL;
	int n = 0;

	pci_bus_scan();
	while ((p = pci_get_device(0x1b36, 0x0005, p)))
		if (n < 2)
			snprintf(names[n++], 32, "%s", pci_name(p));
	pci_bus_remove_all();
	return n;
}

/* Only in the VM: the test binds the pci-testdevs, then lets them go. */
static void sysfs_write(const char *dev, const char *file, const char *val)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/%s%s%s",
		 dev ? "devices/" : "", dev ? dev : "", file);
	f = fopen(path, "w");
	if (f) {
		fputs(val, f);
		fclose(f);
	}
}

static void to_vfio(const char *name, bool on)
{
	char path[96];

	if (on) {
		sysfs_write(name, "/driver_override", "vfio-pci");
		sysfs_write(NULL, "drivers_probe", name);
		return;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver/unbind",
		 name);
	sysfs_write(NULL, path + strlen("/sys/bus/pci/"), name);
	sysfs_write(name, "/driver_override", "\n");
}

/*
 * Two devices of one group share its fd and container: DMA mapped for
 * one is counted for both, and the group stays open until the last of
 * them is freed.
 */
void class1_group(void)
{
	char t[2][32];
	struct pci_dev *p0, *p1;
	dma_addr_t h = 0;
	uint32_t v = 0;
	void *buf = NULL;
	int w0 = devres_warn_count(), fds0 = count_fds(NULL);

	if (find_testdevs(t) != 2) {
		cell("1.group", false, "want 2 pci-testdev");
		return;
	}
	to_vfio(t[0], true);
	to_vfio(t[1], true);
	p0 = scan(t[0]);
	p1 = scan(t[1]);
	cell("1.group/one-group",
	     p0 && p1 && group_of(t[0]) == group_of(t[1]) &&
		     count_fds(group_path(t[0])) == 1 &&
		     count_fds(CONTAINER) == 1 && count_fds(VFIO_DEV_FD) == 2,
	     "%s and %s in group %d: %d group fds, %d containers, %d device "
	     "fds (want 1, 1, 2)",
	     t[0], t[1], group_of(t[0]), count_fds(group_path(t[0])),
	     count_fds(CONTAINER), count_fds(VFIO_DEV_FD));
	if (p1)
		buf = dma_alloc_coherent(&p1->dev, 4096, &h, GFP_KERNEL);
	cell("1.group/one-iova-space",
	     buf && p0 && mappings(p0) == 1 && mappings(p1) == 1,
	     "a buffer mapped for the second is counted for both: %d, %d",
	     p0 ? mappings(p0) : -1, p1 ? mappings(p1) : -1);
	pci_bus_remove_all();
	pci_dev_put(p0);
	if (p1 && pci_read_config_dword(p1, 0, &v))
		v = 0;
	cell("1.group/first-freed",
	     p1 && count_fds(VFIO_DEV_FD) == 1 &&
		     count_fds(group_path(t[0])) == 1 && mappings(p1) == 1 &&
		     v == 0x00051b36 && second_open(t[0]) == -EBUSY,
	     "the other's device fd, the group and its mapping stay: %d "
	     "device fds, %d group fds, config %#x",
	     count_fds(VFIO_DEV_FD), count_fds(group_path(t[0])), v);
	if (buf)
		dma_free_coherent(&p1->dev, 4096, buf, h);
	pci_dev_put(p1);
	cell("1.group/last-freed",
	     count_fds(NULL) == fds0 && second_open(t[0]) == 0 &&
		     devres_warn_count() == w0,
	     "%d fds (had %d), the group opens again: %d, %d WARNs",
	     count_fds(NULL), fds0, second_open(t[0]),
	     devres_warn_count() - w0);
	to_vfio(t[0], false);
	to_vfio(t[1], false);
}

/* ---- class 7: the device goes while a call is in it ---- */

/*
 * One call of class 1 in a loop, while the main thread deletes the
 * device through its struct device (device_unregister(), which puts the
 * caller's reference: the loop holds one of its own): each answer must be
 * the scanned device's (the same as a removed one's, whose fds stay until
 * the last reference), never a crash, a WARN or anything left behind.
 */
struct deleting {
	struct pci_dev *pdev;
	enum call c;
	int calls;    /* atomic: how many returned */
	int stop;     /* atomic */
	int deleting; /* atomic: the deletion began */
	int bad, released;
	long got;
};

static void *call_loop(void *arg)
{
	struct deleting *d = arg;

	/* Bounded: a stop that never comes ends the loop too. */
	for (int i = 0;
	     i < 100000 && !__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE); i++) {
		long got = call(d->c, d->pdev);

		/*
		 * Vectors allocated while the device was unbound are released
		 * by its deletion, as the kernel releases an unbound device's
		 * resources at device_del(): MSI is then off when checked.
		 */
		if (d->c == C_VECTORS && got == 10 &&
		    __atomic_load_n(&d->deleting, __ATOMIC_ACQUIRE)) {
			d->released++;
		} else if (got != want[S_SCANNED][d->c].ret) {
			d->bad++;
			d->got = got;
		}
		__atomic_add_fetch(&d->calls, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static bool wait_calls(struct deleting *d, int n)
{
	for (int i = 0; i < 5000; i++) {
		if (__atomic_load_n(&d->calls, __ATOMIC_ACQUIRE) >= n)
			return true;
		usleep(1000);
	}
	return false;
}

void class7_deleted_during(void)
{
	int fds0 = count_fds(NULL);

	for (int c = 0; c < NR_CALLS; c++) {
		struct deleting d = { .c = (enum call)c };
		struct pci_dev *again;
		int w0 = devres_warn_count(), at;
		char name[96];
		pthread_t t;
		bool gone;

		d.pdev = scan(name_a);
		if (!d.pdev) {
			cell("7.scan", false, "no device");
			return;
		}
		/* The loop's reference; scan()'s goes with the deletion. */
		pci_dev_get(d.pdev);
		pthread_create(&t, NULL, call_loop, &d);
		(void)wait_calls(&d, 2);
		at = __atomic_load_n(&d.calls, __ATOMIC_ACQUIRE);
		__atomic_store_n(&d.deleting, 1, __ATOMIC_RELEASE);
		device_unregister(&d.pdev->dev);
		/* A few more calls on the deleted device, then stop. */
		(void)wait_calls(&d, at + 3);
		__atomic_store_n(&d.stop, 1, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		again = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
		gone = !again;
		pci_dev_put(again);
		pci_dev_put(d.pdev);
		/* The bus's root fd, kept until a scan or this. */
		pci_bus_remove_all();
		snprintf(name, sizeof(name), "7.deleted-during/%s",
			 call_name[c]);
		cell(name,
		     !d.bad && d.calls > at && gone &&
			     devres_warn_count() == w0 &&
			     count_fds(NULL) == fds0 &&
			     second_open(name_a) == 0,
		     "%d calls (%d after the deletion began, %d of whose "
		     "vectors it released), %d answered otherwise (last %ld, "
		     "want %ld), %s on the bus, %d WARNs, %d fds (had %d), the "
		     "group opens again: %d",
		     d.calls, d.calls - at, d.released, d.bad, d.got,
		     want[S_SCANNED][c].ret, gone ? "none" : "one left",
		     devres_warn_count() - w0, count_fds(NULL), fds0,
		     second_open(name_a));
	}
}

/* ---- class 7: the kernel removes the device while it is open ---- */

static bool wait_path(const char *path, bool present, int ms)
{
	for (int i = 0; i < ms; i++) {
		if ((access(path, F_OK) == 0) == present)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * `remove` written in sysfs while the library holds the device's fd:
 * vfio-pci keeps the device, and the writer waits, until the fd goes;
 * the device still answers meanwhile. Once the library lets go, the
 * removal completes, a scan of the address finds nothing, and a PCI
 * rescan brings the device back, bound to vfio-pci again and taken.
 */
void class7_sysfs_remove(void)
{
	char dir[96], path[128];
	int w0 = devres_warn_count(), fds0 = count_fds(NULL), status = -1;
	struct pci_dev *pdev = scan(name_a);
	uint32_t v = 0;
	bool waiting;
	pid_t pid;
	int ret;

	if (!pdev) {
		cell("7.sysfs-remove", false, "no device");
		return;
	}
	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", name_a);
	pid = fork();
	if (pid == 0) {
		int fd;

		/* Not the parent's device fd: the removal waits for it. */
		close_range(3, ~0u, 0);
		snprintf(path, sizeof(path), "%s/remove", dir);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		_exit(fd >= 0 && write(fd, "1", 1) == 1 ? 0 : 1);
	}
	usleep(500 * 1000);
	waiting = pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
	cell("7.sysfs-remove/held", waiting,
	     "the removal waits while the device fd is open");
	ret = pci_read_config_dword(pdev, 0, &v);
	cell("7.sysfs-remove/answers",
	     !ret && v == 0x11e81234 && devres_warn_count() == w0,
	     "config %#x while the removal waits, %d WARNs", v,
	     devres_warn_count() - w0);
	pci_bus_remove_all();
	pci_dev_put(pdev);
	alarm(30);
	if (pid > 0 && waitpid(pid, &status, 0) != pid)
		status = -1;
	alarm(0);
	cell("7.sysfs-remove/released",
	     status == 0 && wait_path(dir, false, 5000) &&
		     count_fds(NULL) == fds0 && devres_warn_count() == w0,
	     "the removal completed once the last reference went: status "
	     "%d, %s, %d fds (had %d)",
	     status, access(dir, F_OK) ? "gone from sysfs" : "STILL in sysfs",
	     count_fds(NULL), fds0);
	ret = pci_bus_scan_device(name_a);
	pdev = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	cell("7.sysfs-remove/scan-finds-none", ret == -ENOENT && !pdev,
	     "scanning the address: %d, %s registered", ret,
	     pdev ? "one" : "none");
	pci_dev_put(pdev);
	pci_bus_remove_all();
	/* Back as it was: the tests after this one use the device. */
	sysfs_write(NULL, "rescan", "1");
	(void)wait_path(dir, true, 5000);
	to_vfio(name_a, true);
	pdev = scan(name_a);
	v = 0;
	ret = pdev ? pci_read_config_dword(pdev, 0, &v) : -1;
	cell("7.sysfs-remove/rescanned", !ret && v == 0x11e81234,
	     "back after a PCI rescan, bound to vfio-pci and taken: %s",
	     pdev ? "yes" : "no");
	pci_dev_put(pdev);
	pci_bus_remove_all();
}

/*
 * A group made non-viable while the library holds it: the other device
 * of the group offered to uio_pci_generic, a kernel driver that owns its
 * DMA. The kernel refuses that bind while the group is the process's, so
 * the device held goes on answering; once the library lets go, the same
 * bind succeeds (the cell shows the refusal was the group's).
 */
void class7_group_non_viable(void)
{
	int w0 = devres_warn_count(), fds0 = count_fds(NULL), ret;
	char t[2][32], path[128], link[64];
	struct pci_dev *p0;
	bool refused, bound_after;
	uint32_t v = 0;
	ssize_t n;

	if (find_testdevs(t) != 2) {
		cell("7.non-viable", false, "want 2 pci-testdev");
		return;
	}
	to_vfio(t[0], true);
	p0 = scan(t[0]);
	to_vfio(t[1], false);
	sysfs_write(t[1], "/driver_override", "uio_pci_generic");
	sysfs_write(NULL, "drivers_probe", t[1]);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", t[1]);
	n = readlink(path, link, sizeof(link) - 1);
	refused = n < 0;
	ret = p0 ? pci_read_config_dword(p0, 0, &v) : -1;
	cell("7.non-viable/bind-refused",
	     p0 && refused && !ret && v == 0x00051b36 &&
		     devres_warn_count() == w0,
	     "%s offered to uio_pci_generic while the group is held: %s; "
	     "%s answers %#x, %d WARNs",
	     t[1], refused ? "refused" : "BOUND", t[0], v,
	     devres_warn_count() - w0);
	pci_bus_remove_all();
	pci_dev_put(p0);
	sysfs_write(NULL, "drivers_probe", t[1]);
	bound_after = readlink(path, link, sizeof(link) - 1) > 0;
	cell("7.non-viable/let-go",
	     bound_after && count_fds(NULL) == fds0 && second_open(t[0]) == 0,
	     "once the library let go the same bind %s; %d fds (had %d)",
	     bound_after ? "succeeds" : "FAILS", count_fds(NULL), fds0);
	/* As they were: unbound, no override. */
	to_vfio(t[1], false);
	to_vfio(t[0], false);
}
