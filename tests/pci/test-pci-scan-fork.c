// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * fork() while another thread scans the PCI bus: the scan lock (held
 * across probes, so made new in the child, not held across fork()), the
 * device list's lock, the resource tree's, the driver model's and the
 * file-descriptor records a scan takes, in whatever state the scanning
 * thread left them. The worker rescans a fake tree in which a device
 * comes and goes, looks a device up and reads its config space; each
 * child, under an alarm (a lock left held is a failure, not a hang), adds
 * a device of its own to the tree, registers it, finds it (and not the
 * parent's), reads its config, maps and writes its BAR, rescans, removes
 * every device and leaves.
 *
 * In the dev build the worker runs through each fork(); under the
 * sanitizers it parks between two rounds (tests/base/fork-park.h says
 * why), so there the child's calls are checked, not the held-lock case.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/io.h>
#include "base/fork-park.h"
#include "pci/pcitest.h"
#include "testlib.h"

#define FORKS 60
#define DEV "0000:00:05.0"
#define MOVER "0000:00:06.0"

static int stop;
static unsigned long rounds;

/*
 * Under valgrind the worker parks too: a child forked while it is inside
 * malloc()'d work (the tree walk of pci_fake_remove()) holds a block no
 * thread of its own can reach, which valgrind counts as the child's leak.
 */
static bool valgrind;
static int hold, held;

static void valgrind_park(void)
{
	if (!valgrind || !__atomic_load_n(&hold, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&hold, __ATOMIC_ACQUIRE))
		usleep(100);
	__atomic_store_n(&held, 0, __ATOMIC_RELEASE);
}

static void *nothing(void *arg)
{
	return arg;
}

static void *scanner(void *arg)
{
	struct pci_fake_dev m = fake_dev(MOVER, 0x1af4, 0x20, 1);

	(void)arg;
	for (unsigned long i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE);
	     i++) {
		struct pci_dev *p;
		uint32_t v;

		fork_park_point();
		valgrind_park();
		/* A device that comes and goes: add and remove paths. */
		if (i & 1)
			(void)pci_fake_add(ft, &m);
		else
			(void)pci_fake_remove(ft, MOVER);
		if (pci_bus_scan() < 1)
			abort();
		p = pci_get_device(0x1af4, 0x10, NULL);
		if (!p || pci_read_config_dword(p, 0, &v) || v != 0x101af4)
			abort();
		pci_dev_put(p);
		__atomic_add_fetch(&rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int child(int n)
{
	char name[16];
	struct pci_fake_dev c;
	struct pci_dev *p;
	void __iomem *bar;
	uint32_t v = 0;

	alarm(10);
	snprintf(name, sizeof(name), "0000:%02x:00.0", n + 1);
	c = fake_dev(name, 0x1af4, 0x30, 1);
	CHILD_CHECK(pci_fake_add(ft, &c) == 0);
	CHILD_CHECK(pci_bus_scan_device(name) == 0);
	/* Its own device; the parent's copies are not found. */
	p = pci_get_device(0x1af4, 0x30, NULL);
	CHILD_CHECK(p && strcmp(pci_name(p), name) == 0);
	CHILD_CHECK(!pci_get_device(0x1af4, 0x10, NULL));
	CHILD_CHECK(pci_read_config_dword(p, 0, &v) == 0 && v == 0x301af4);
	bar = pci_iomap(p, 0, 0);
	CHILD_CHECK(bar);
	writel(0x600d, bar);
	CHILD_CHECK(readl(bar) == 0x600d);
	pci_iounmap(p, bar);
	CHILD_CHECK(pci_enable_device(p) == 0);
	pci_disable_device(p);
	/* The next lookup puts @p: no other device of those ids is its. */
	CHILD_CHECK(!pci_get_device(0x1af4, 0x30, p));
	/* A whole scan of its own, and the removal of its devices. */
	CHILD_CHECK(pci_bus_scan() >= 1);
	pci_bus_remove_all();
	CHILD_CHECK(pci_fake_remove(ft, name) == 0);
	return 0;
}

static void fork_while_scanning(void **state)
{
	struct pci_fake_dev d = fake_dev(DEV, 0x1af4, 0x10, 1);
	int steady;
	pthread_t t;

	(void)state;
	valgrind = under_valgrind();
	/* The runtime's own threads, if any, before the count. */
	assert_int_equal(pthread_create(&t, NULL, nothing, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	steady = count_entries("/proc/self/task") + 1;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	assert_int_equal(pthread_create(&t, NULL, scanner, NULL), 0);
	for (int i = 0; i < FORKS; i++) {
		unsigned long seen = __atomic_load_n(&rounds, __ATOMIC_RELAXED);
		int status;
		pid_t pid;

		/* Some rounds between two forks, so each lands elsewhere. */
		while (__atomic_load_n(&rounds, __ATOMIC_RELAXED) < seen + 2)
			usleep(50);
		fork_park_all(1);
		assert_true(fork_park_settle(steady));
		if (valgrind) {
			__atomic_store_n(&hold, 1, __ATOMIC_RELEASE);
			while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
				usleep(100);
		}
		pid = fork();
		if (pid == 0)
			_exit(child(i));
		fork_park_release();
		__atomic_store_n(&hold, 0, __ATOMIC_RELEASE);
		while (__atomic_load_n(&held, __ATOMIC_ACQUIRE))
			usleep(100);
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("fork %d: child status %#x", i, status);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("%lu scans in the parent across %d forks\n",
		      __atomic_load_n(&rounds, __ATOMIC_RELAXED), FORKS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fork_while_scanning, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
