/* SPDX-License-Identifier: MIT */
/* Memory management: the page size, and the headers drivers expect here. */
#ifndef KCOMPAT_LINUX_MM_H
#define KCOMPAT_LINUX_MM_H

#include <linux/kernel.h>
#include <linux/slab.h>

#ifndef PAGE_SIZE
#define PAGE_SIZE 4096UL
#endif
#define PAGE_SHIFT 12
#define PAGE_MASK (~(PAGE_SIZE - 1))
#define PAGE_ALIGN(x) ALIGN((x), PAGE_SIZE)

#endif /* KCOMPAT_LINUX_MM_H */
