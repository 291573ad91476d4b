/* SPDX-License-Identifier: MIT */
/*
 * The managed mappings the misuse tables acquire, each asserting it got
 * one: LEN bytes of anonymous memory, of the I/O window at WIN (on
 * test-dev), or BAR 0 of the fake PCI function. Include after
 * testlib.h and one-pci-fn.h, with WIN and LEN defined.
 */
#ifndef DEVRES_TESTS_MAP_KINDS_H
#define DEVRES_TESTS_MAP_KINDS_H

#include <sys/mman.h>
#include <devres/io.h>
#include <devres/posix.h>

static inline char *devm_mmap_acq(void)
{
	char *p = devm_mmap(&tdev, NULL, LEN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_false(IS_ERR(p));
	return p;
}

static inline char *devm_ioremap_acq(void)
{
	char *p = devm_ioremap(&tdev, WIN, LEN);

	assert_non_null(p);
	return p;
}

static inline char *devm_ioremap_wc_acq(void)
{
	char *p = devm_ioremap_wc(&tdev, WIN, LEN);

	assert_non_null(p);
	return p;
}

static inline char *pcim_iomap_acq(void)
{
	char *p = pcim_iomap(pdev, 0, 0);

	assert_non_null(p);
	return p;
}

#endif /* DEVRES_TESTS_MAP_KINDS_H */
