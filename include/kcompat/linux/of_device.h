/* SPDX-License-Identifier: MIT */
#ifndef KCOMPAT_LINUX_OF_DEVICE_H
#define KCOMPAT_LINUX_OF_DEVICE_H

#include <linux/of.h>

#endif /* KCOMPAT_LINUX_OF_DEVICE_H */
