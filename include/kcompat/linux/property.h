/* SPDX-License-Identifier: MIT */
/*
 * Firmware properties. A device has none but its compatible string: a
 * read says -EINVAL (not present) and the driver takes its default.
 */
#ifndef KCOMPAT_LINUX_PROPERTY_H
#define KCOMPAT_LINUX_PROPERTY_H

#include <errno.h>
#include <linux/of.h>

#define dev_fwnode(dev) ((void *)0)
#define device_property_present(dev, name) ((void)(dev), (void)(name), false)
#define device_property_read_bool device_property_present
#define device_property_read_u32(dev, name, val)                               \
	((void)(dev), (void)(name), (void)(val), -EINVAL)
#define device_property_read_u8 device_property_read_u32
#define device_property_read_u16 device_property_read_u32
#define device_property_read_u64 device_property_read_u32
#define device_property_read_string device_property_read_u32
#define of_property_read_u32(np, name, val)                                    \
	((void)(np), (void)(name), (void)(val), -EINVAL)
#define of_property_read_bool(np, name) ((void)(np), (void)(name), false)

#endif /* KCOMPAT_LINUX_PROPERTY_H */
