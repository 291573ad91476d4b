// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * The library's ioctl() (src/vfio/interpose.c) on descriptors recorded
 * by hand as the library's VFIO group, container and device fds (an
 * eventfd each: VFIO itself needs /dev/vfio, only inside the VM of
 * tests/vm/run.sh, where tests/vm/vfio-states.c does the same on real
 * ones). A VFIO request that changes state is refused with EPERM and one
 * WARN naming the request as the descriptor's kind reads it; a query,
 * any request on another descriptor, and a request that is not VFIO's go
 * to the kernel (which refuses VFIO requests on an eventfd with ENOTTY);
 * a child of fork() is refused on its parent's descriptors; the
 * library's own requests (vfio__ioctl()) are never refused. Calling that
 * also links the interposer into this program where the static library
 * meets a sanitizer's shared runtime, which defines ioctl() first.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/vfio.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include "testlib.h"
#include "../../src/base/subsys.h"
#include "../../src/vfio/vfio.h"
#include "../../src/posix/fd-table.h"

static int recorded(enum devres__own_kind kind, const char *name)
{
	int fd = eventfd(0, EFD_CLOEXEC);

	assert_true(fd >= 0);
	devres__own_fd_add(fd, kind, name);
	return fd;
}

static void unrecord(int fd)
{
	devres__own_fd_forget(fd);
	assert_int_equal(close(fd), 0);
}

/* ioctl(@fd, @request): -1 with errno @err, and one WARN with @says. */
static void refused(int fd, unsigned long request, const char *says)
{
	char arg[64] = { 0 };

	start_capture();
	errno = 0;
	assert_int_equal(ioctl(fd, request, arg), -1);
	assert_int_equal(errno, EPERM);
	expect_warn_on("(no device)", "ioctl", says);
}

/* Gone to the kernel: an eventfd knows no such request. */
static void let_through(int fd, unsigned long request)
{
	char arg[64] = { 0 };

	start_capture();
	errno = 0;
	assert_int_equal(ioctl(fd, request, arg), -1);
	assert_int_equal(errno, ENOTTY);
	expect_no_warn();
}

static void test_container(void **state)
{
	int fd = recorded(DEVRES_OWN_VFIO_CONTAINER, "IOMMU group 7");

	(void)state;
	refused(fd, VFIO_IOMMU_UNMAP_DMA,
		"the VFIO container fd of IOMMU group 7, the library's own: "
		"VFIO_IOMMU_UNMAP_DMA");
	refused(fd, VFIO_IOMMU_MAP_DMA, "VFIO_IOMMU_MAP_DMA");
	refused(fd, VFIO_SET_IOMMU, "VFIO_SET_IOMMU");
	let_through(fd, VFIO_IOMMU_GET_INFO);
	let_through(fd, VFIO_CHECK_EXTENSION);
	unrecord(fd);
}

static void test_device(void **state)
{
	int fd = recorded(DEVRES_OWN_VFIO_DEVICE, "0000:00:07.0");

	(void)state;
	refused(fd, VFIO_DEVICE_SET_IRQS,
		"the VFIO device fd of 0000:00:07.0, the library's own: "
		"VFIO_DEVICE_SET_IRQS");
	refused(fd, VFIO_DEVICE_RESET, "VFIO_DEVICE_RESET");
	/* The number of VFIO_IOMMU_MAP_DMA, read as a device's request. */
	refused(fd, VFIO_DEVICE_PCI_HOT_RESET, "VFIO_DEVICE_PCI_HOT_RESET");
	let_through(fd, VFIO_DEVICE_GET_INFO);
	let_through(fd, VFIO_DEVICE_GET_REGION_INFO);
	let_through(fd, VFIO_DEVICE_GET_IRQ_INFO);
	/* The number of VFIO_IOMMU_GET_INFO, a device's query. */
	let_through(fd, VFIO_DEVICE_GET_PCI_HOT_RESET_INFO);
	unrecord(fd);
}

static void test_group(void **state)
{
	int fd = recorded(DEVRES_OWN_VFIO_GROUP, "IOMMU group 7");

	(void)state;
	refused(fd, VFIO_GROUP_GET_DEVICE_FD, "VFIO_GROUP_GET_DEVICE_FD");
	refused(fd, VFIO_GROUP_UNSET_CONTAINER, "VFIO_GROUP_UNSET_CONTAINER");
	refused(fd, VFIO_GROUP_SET_CONTAINER, "VFIO_GROUP_SET_CONTAINER");
	let_through(fd, VFIO_GROUP_GET_STATUS);
	unrecord(fd);
}

/* The library's own requests go past the refusal, changing or not. */
static void test_library_own(void **state)
{
	int fd = recorded(DEVRES_OWN_VFIO_CONTAINER, "IOMMU group 7");
	char arg[64] = { 0 };

	(void)state;
	start_capture();
	errno = 0;
	assert_int_equal(vfio__ioctl(fd, VFIO_IOMMU_UNMAP_DMA, arg), -1);
	assert_int_equal(errno, ENOTTY);
	expect_no_warn();
	unrecord(fd);
}

/* Not VFIO's request, not a VFIO descriptor, not the library's. */
static void test_others_go_through(void **state)
{
	int vfio = recorded(DEVRES_OWN_VFIO_CONTAINER, "IOMMU group 7");
	int line = recorded(DEVRES_OWN_IRQ_LINE, "irq line 'x'");
	int plain = eventfd(0, EFD_CLOEXEC);

	(void)state;
	start_capture();
	assert_int_equal(ioctl(vfio, FIONBIO, &(int){ 1 }), 0);
	expect_no_warn();
	let_through(line, VFIO_IOMMU_UNMAP_DMA);
	let_through(plain, VFIO_IOMMU_UNMAP_DMA);
	unrecord(vfio);
	unrecord(line);
	close(plain);
}

/* A child's request on its parent's container: refused, and said so. */
static void test_child_of_fork(void **state)
{
	int fd = recorded(DEVRES_OWN_VFIO_CONTAINER, "IOMMU group 7");
	int status = -1;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char arg[64] = { 0 };
		int ret, err;

		start_capture();
		ret = ioctl(fd, VFIO_IOMMU_UNMAP_DMA, arg);
		err = errno;
		devres_set_log_sink(NULL, NULL);
		_exit(ret == -1 && err == EPERM && cap.n == 1 &&
				      strstr(cap.line[0], "the parent "
							  "process's, "
							  "inherited")
			      ? 0
			      : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	unrecord(fd);
}

/*
 * A child that closes its copy of the parent's container and gets the
 * number again for a file of its own: its requests on that file are its
 * own business, not refused.
 */
static void child_reuses_number(bool by_range)
{
	int fd = recorded(DEVRES_OWN_VFIO_CONTAINER, "IOMMU group 7");
	int status = -1;
	pid_t pid;

	/*
	 * The library's close(), as any program linked with it has: named
	 * here so that the static library's interposer is linked in where
	 * a sanitizer's shared runtime defines close() first.
	 */
	assert_non_null(posix__close_next);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char arg[64] = { 0 };
		int again, ret, err;

		if (by_range
			    ? close_range((unsigned int)fd, (unsigned int)fd, 0)
			    : close(fd))
			_exit(2);
		again = eventfd(0, EFD_CLOEXEC);
		if (again != fd)
			_exit(3);
		start_capture();
		errno = 0;
		ret = ioctl(again, VFIO_IOMMU_UNMAP_DMA, arg);
		err = errno;
		devres_set_log_sink(NULL, NULL);
		_exit(ret == -1 && err == ENOTTY && cap.n == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	unrecord(fd);
}

static void test_child_reuses_number(void **state)
{
	(void)state;
	child_reuses_number(false);
}

static void test_child_reuses_number_after_close_range(void **state)
{
	(void)state;
	child_reuses_number(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container),
		cmocka_unit_test(test_device),
		cmocka_unit_test(test_group),
		cmocka_unit_test(test_library_own),
		cmocka_unit_test(test_others_go_through),
		cmocka_unit_test(test_child_of_fork),
		cmocka_unit_test(test_child_reuses_number),
		cmocka_unit_test(test_child_reuses_number_after_close_range),
	};

	/* One line per WARN: its text is what is checked. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
