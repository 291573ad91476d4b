/* SPDX-License-Identifier: MIT */
/*
 * Interrupts from the device tree: there is none, so a lookup by node
 * finds nothing. Drivers reach their lines through platform_get_irq().
 */
#ifndef KCOMPAT_LINUX_OF_IRQ_H
#define KCOMPAT_LINUX_OF_IRQ_H

#include <errno.h>
#include <linux/of.h>

#define irq_of_parse_and_map(node, index) ((void)(node), (void)(index), 0u)
#define of_irq_get(node, index) ((void)(node), (void)(index), -EINVAL)
#define of_irq_get_byname(node, name) ((void)(node), (void)(name), -EINVAL)

#endif /* KCOMPAT_LINUX_OF_IRQ_H */
