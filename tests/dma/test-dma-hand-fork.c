// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Managed DMA memory across fork() (docs/fork.md): the child's copies of
 * the parent's dmam_alloc_coherent() buffer and dmam_pool_create() chunk
 * are not the child's. A munmap() of each copy in the child unmaps the
 * copy, silently (the child's table of managed mappings is empty: the
 * records are the parent's); dma_free_coherent() of the parent's buffer
 * there WARNs that the device belongs to the parent and frees nothing. A
 * buffer the child allocates on a device of its own and unmaps by hand
 * WARNs once, as in any process. In the parent, the buffer, the chunk and
 * their nodes are untouched, and the device's release gives them back
 * quietly.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

static size_t pg, len;

static void quiet(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static int mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)p, pg, &v) == 0;
}

/* The child's checks; its exit status says which failed first. */
static int child(char *buf, dma_addr_t h, char *block)
{
	static struct device mine;
	long base = devres_warn_count();
	dma_addr_t h2;
	char *p;

	devres_set_log_sink(quiet, NULL);
	dma_free_coherent(&tdev, len, buf, h);
	if (devres_warn_count() != base + 1 || !mapped(buf))
		return 10;
	if (munmap(buf, len) || mapped(buf))
		return 11;
	if (munmap(block, len) || mapped(block))
		return 12;
	if (devres_warn_count() != base + 1)
		return 13;
	if (init_dev(&mine, "child-dev"))
		return 14;
	p = dmam_alloc_coherent(&mine, len, &h2, GFP_KERNEL);
	if (!p)
		return 15;
	if (munmap(p, len) || devres_warn_count() != base + 2)
		return 16;
	if (devres_release_all(&mine) != 1 || devres_warn_count() != base + 2)
		return 17;
	return 0;
}

static void child_unmaps_its_copies(void **state)
{
	struct dma_pool *pool;
	dma_addr_t h, hb;
	char *buf, *block;
	int status;
	pid_t pid;

	(void)state;
	buf = dmam_alloc_coherent(&tdev, len, &h, GFP_KERNEL);
	pool = dmam_pool_create("fork", &tdev, len, pg, 0);
	assert_non_null(buf);
	assert_non_null(pool);
	block = dma_pool_alloc(pool, GFP_KERNEL, &hb);
	assert_non_null(block);
	memset(buf, 0x5a, len);
	memset(block, 0x5b, len);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(buf, h, block));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		print_error("child: status %#x\n", status);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* The parent's memory, nodes and bus ranges are as they were. */
	assert_int_equal(buf[len - 1], 0x5a);
	assert_int_equal(block[len - 1], 0x5b);
	assert_ptr_equal(dma_iova_to_virt(&tdev, h, len), buf);
	assert_ptr_equal(dma_iova_to_virt(&tdev, hb, len), block);
	dma_pool_free(pool, block, hb);
	start_capture();
	/* The buffer, the pool and the DMA state's node. */
	assert_int_equal(devres_release_all(&tdev), 3);
	expect_no_warn();
	assert_false(mapped(buf));
	assert_false(mapped(block));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(child_unmaps_its_copies,
						dev_setup, dev_teardown),
	};

	pg = (size_t)sysconf(_SC_PAGESIZE);
	len = 2 * pg;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests_name("dma-hand-fork", tests, NULL, NULL);
}
