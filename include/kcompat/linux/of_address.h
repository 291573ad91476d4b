/* SPDX-License-Identifier: MIT */
/*
 * Address translation of device-tree nodes: there are no nodes, so a
 * driver maps its registers through its platform resources; the header
 * exists because drivers include it for little else.
 */
#ifndef KCOMPAT_LINUX_OF_ADDRESS_H
#define KCOMPAT_LINUX_OF_ADDRESS_H

#include <linux/io.h>
#include <linux/of.h>

#endif /* KCOMPAT_LINUX_OF_ADDRESS_H */
