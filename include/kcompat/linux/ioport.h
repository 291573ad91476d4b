/* SPDX-License-Identifier: MIT */
/* Resources and regions: libdevres's resource tree. */
#ifndef KCOMPAT_LINUX_IOPORT_H
#define KCOMPAT_LINUX_IOPORT_H

#include <devres/ioport.h>
#include <linux/types.h>

#endif /* KCOMPAT_LINUX_IOPORT_H */
