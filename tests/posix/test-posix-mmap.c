// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Managed mappings: devm_mmap and devm_munmap, whole, partial and foreign
 * unmaps, bad input, fault points, and the ledger's maps and bytes.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

static size_t pg;

static bool is_mapped(void *addr)
{
	unsigned char v;

	return mincore(addr, 1, &v) == 0;
}

static void ledger_maps(long *maps, long *bytes)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	*maps = l.maps;
	*bytes = l.map_bytes;
}

static void *anon(struct device *dev, size_t len)
{
	return devm_mmap(dev, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void test_mmap_anonymous(void **state)
{
	struct device *dev = *state;
	long maps, bytes, m, b;
	char *p, *dump;

	ledger_maps(&maps, &bytes);
	/* Counted in whole pages, as the kernel maps and /proc shows. */
	p = anon(dev, pg + 1);
	assert_false(IS_ERR(p));
	memset(p, 0xa5, 2 * pg);
	ledger_maps(&m, &b);
	assert_int_equal(m, maps + 1);
	assert_int_equal(b, bytes + 2 * (long)pg);
	dump = dump_to_string(dev);
	assert_int_equal(count_substr(dump, "devm_mmap"), 1);
	free(dump);
	assert_int_equal(devres_release_all(dev), 1);
	assert_false(is_mapped(p));
	ledger_maps(&m, &b);
	assert_int_equal(m, maps);
	assert_int_equal(b, bytes);
}

static void test_mmap_memfd_shared(void **state)
{
	struct device *dev = *state;
	char buf[8] = "";
	char *p;
	int fd;

	fd = devm_memfd_create(dev, "devres-mmap-test", 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)pg), 0);
	p = devm_mmap(dev, NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_false(IS_ERR(p));
	memcpy(p, "shared", 7);
	assert_int_equal(pread(fd, buf, 7, 0), 7);
	assert_string_equal(buf, "shared");
	/* The mapping goes first, then the memfd it maps. */
	assert_int_equal(devres_release_all(dev), 2);
	assert_false(is_mapped(p));
	assert_true(fcntl(fd, F_GETFD) < 0);
}

static void test_mmap_bad_input(void **state)
{
	struct device *dev = *state;

	start_capture();
	assert_ptr_equal(anon(dev, 0), ERR_PTR(-EINVAL));
	assert_ptr_equal(anon(dev, SIZE_MAX), ERR_PTR(-ENOMEM));
	/* Neither shared nor private. */
	assert_ptr_equal(devm_mmap(dev, NULL, pg, PROT_READ, MAP_ANONYMOUS, -1,
				   0),
			 ERR_PTR(-EINVAL));
	assert_ptr_equal(devm_mmap(dev, NULL, pg, PROT_READ, MAP_SHARED, -1, 0),
			 ERR_PTR(-EBADF));
	/* An offset that is not a multiple of the page size. */
	assert_ptr_equal(devm_mmap(dev, NULL, pg, PROT_READ,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 1),
			 ERR_PTR(-EINVAL));
	expect_no_warn();

	start_capture();
	assert_ptr_equal(anon(NULL, pg), ERR_PTR(-EINVAL));
	expect_warn_on("(no device)", "devm_mmap", "NULL device");
	expect_stats(dev, 0, 0);
}

static void test_mmap_fault_points(void **state)
{
	struct device *dev = *state;

	devres_fail_nth(1);
	assert_ptr_equal(anon(dev, pg), ERR_PTR(-ENOMEM));
	devres_fail_nth(2);
	assert_ptr_equal(anon(dev, pg), ERR_PTR(-ENOMEM));
	assert_int_equal(devres_fail_nth_get(), 0);
	devres_fail_nth(3);
	assert_false(IS_ERR(anon(dev, pg)));
	devres_fail_nth(0);
	assert_int_equal(devres_release_all(dev), 1);
}

static void test_munmap_whole(void **state)
{
	struct device *dev = *state;
	char *p, *q;

	p = anon(dev, 3 * pg);
	q = anon(dev, pg);
	assert_false(IS_ERR(p) || IS_ERR(q));
	start_capture();
	/* The length given, or the same rounded up: one mapping. */
	devm_munmap(dev, p, 3 * pg - 10);
	devm_munmap(dev, q, pg);
	expect_no_warn();
	assert_false(is_mapped(p));
	assert_false(is_mapped(q));
	expect_stats(dev, 0, 0);
}

static void test_munmap_partial_warns(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	char *p;

	p = anon(dev, 4 * pg);
	assert_false(IS_ERR(p));
	start_capture();
	devm_munmap(dev, p, pg);
	expect_warn("devm_munmap", "overlaps a managed mapping but is not one");
	start_capture();
	devm_munmap(dev, p + pg, pg);
	expect_warn("devm_munmap", "overlaps a managed mapping but is not one");
	start_capture();
	devm_munmap(dev, p + 3 * pg, 0);
	expect_warn("devm_munmap", "overlaps a managed mapping but is not one");
	start_capture();
	devm_munmap(dev, p, 8 * pg);
	expect_warn("devm_munmap", "overlaps a managed mapping but is not one");
	/* Nothing was unmapped: every page is still there. */
	memset(p, 1, 4 * pg);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
}

static void test_munmap_not_managed_warns(void **state)
{
	struct device *dev = *state;
	char *mine, *foreign;

	foreign = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(foreign != MAP_FAILED);
	start_capture();
	devm_munmap(dev, foreign, pg);
	expect_warn("devm_munmap", "is not mapped by this device");
	assert_true(is_mapped(foreign));
	assert_int_equal(munmap(foreign, pg), 0);

	/* Another device's mapping is not this one's. */
	mine = anon(&other, pg);
	assert_false(IS_ERR(mine));
	start_capture();
	devm_munmap(dev, mine, pg);
	expect_warn("devm_munmap", "is not mapped by this device");
	assert_true(is_mapped(mine));
	start_capture();
	devm_munmap(NULL, mine, pg);
	expect_warn_on("(no device)", "devm_munmap", "NULL device");
	devm_munmap(&other, mine, pg);
	assert_false(is_mapped(mine));
}

/*
 * A line of /proc/self/maps longer than the library's read buffer (a file
 * mapped under a long path) is one line: its tail is never read as a line
 * of its own. Here the tail names the managed mapping's range with another
 * file's identity; read as a line, it made the release take the mapping
 * for another and leave it mapped, with a WARN.
 */
#define MAPS_CHUNK 511 /* what one read of the library's buffer takes */

static char *maps_line_of(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t size = 0;
	unsigned long s, e;

	assert_non_null(f);
	while (getline(&line, &size, f) > 0) {
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 &&
		    s == (unsigned long)addr) {
			fclose(f);
			return line;
		}
	}
	fclose(f);
	free(line);
	return NULL;
}

static void test_mmap_long_maps_line(void **state)
{
	struct device *dev = *state;
	char dir[] = "/tmp/devres-maps-XXXXXX";
	char from[64], to[1024], fake[160], *line, *at;
	unsigned int warns = devres_warn_count();
	size_t fill, n;
	void *file_map;
	char *p;
	int fd;

	p = anon(dev, pg);
	assert_false(IS_ERR(p));
	assert_non_null(mkdtemp(dir));
	snprintf(from, sizeof(from), "%s/f", dir);
	fd = open(from, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)pg), 0);
	file_map = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(file_map != MAP_FAILED);
	close(fd);

	/* Directories that put the file's name at the line's byte 511. */
	line = maps_line_of(file_map);
	assert_non_null(line);
	at = strstr(line, dir);
	assert_non_null(at);
	fill = MAPS_CHUNK - (size_t)(at - line) - strlen(dir) - 1;
	free(line);
	n = (size_t)snprintf(to, sizeof(to), "%s/", dir);
	while (fill) {
		size_t c = fill - 1 > 200 ? 200 : fill - 1;

		if (fill - (c + 1) == 1)
			c--;
		memset(to + n, 'a', c);
		to[n + c] = '\0';
		assert_int_equal(mkdir(to, 0700), 0);
		to[n + c] = '/';
		n += c + 1;
		fill -= c + 1;
	}
	snprintf(fake, sizeof(fake), "%lx-%lx rw-p 00000000 fe:01 424242 x",
		 (unsigned long)p, (unsigned long)(p + pg));
	snprintf(to + n, sizeof(to) - n, "%s", fake);
	assert_int_equal(rename(from, to), 0);
	line = maps_line_of(file_map);
	assert_non_null(line);
	assert_true(strlen(line) > MAPS_CHUNK);
	assert_int_equal(strncmp(line + MAPS_CHUNK, fake, strlen(fake)), 0);
	free(line);

	assert_int_equal(devres_release_all(dev), 1);
	assert_false(is_mapped(p));
	assert_int_equal(devres_warn_count(), warns);

	munmap(file_map, pg);
	assert_int_equal(unlink(to), 0);
	while ((at = strrchr(to, '/')) && at > to + strlen(dir)) {
		*at = '\0';
		assert_int_equal(rmdir(to), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, two_dev_setup, dev_teardown)
		T(test_mmap_anonymous),
		T(test_mmap_memfd_shared),
		T(test_mmap_bad_input),
		T(test_mmap_fault_points),
		T(test_munmap_whole),
		T(test_munmap_partial_warns),
		T(test_munmap_not_managed_warns),
		T(test_mmap_long_maps_line),
#undef T
	};

	pg = (size_t)sysconf(_SC_PAGESIZE);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
