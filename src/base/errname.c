// SPDX-License-Identifier: MIT
/*
 * Symbolic names of the errors the library and its drivers return, so that
 * a report says -EPROBE_DEFER rather than -517.
 */
#include <errno.h>
#include <stdio.h>
#include "base.h"

struct errname {
	int err;
	const char *name;
};

/* clang-format off */
#define E(x) { x, #x }
static const struct errname names[] = {
	E(EPERM), E(ENOENT), E(ESRCH), E(EINTR), E(EIO), E(ENXIO), E(E2BIG),
	E(ENOEXEC), E(EBADF), E(ECHILD), E(EAGAIN), E(ENOMEM), E(EACCES),
	E(EFAULT), E(EBUSY), E(EEXIST), E(EXDEV), E(ENODEV), E(ENOTDIR),
	E(EISDIR), E(EINVAL), E(ENFILE), E(EMFILE), E(ENOTTY), E(EFBIG),
	E(ENOSPC), E(ESPIPE), E(EROFS), E(EPIPE), E(EDOM), E(ERANGE),
	E(EDEADLK), E(ENAMETOOLONG), E(ENOSYS), E(ENOTEMPTY), E(ELOOP),
	E(ENODATA), E(ETIME), E(EPROTO), E(EOVERFLOW), E(EILSEQ),
	E(EOPNOTSUPP), E(EADDRINUSE), E(ENETDOWN), E(ECONNRESET),
	E(ENOBUFS), E(ETIMEDOUT), E(ECONNREFUSED), E(EALREADY),
	E(EINPROGRESS), E(ECANCELED), E(EOWNERDEAD), E(ENOTRECOVERABLE),
	E(EPROBE_DEFER),
};
#undef E
/* clang-format on */

const char *devres__errname(int err, char *buf, size_t len)
{
	/* In unsigned: -INT_MIN, a driver's to pass, is not an int. */
	unsigned int e = err < 0 ? 0u - (unsigned int)err : (unsigned int)err;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((unsigned int)names[i].err == e) {
			snprintf(buf, len, "%s%s", err < 0 ? "-" : "",
				 names[i].name);
			return buf;
		}
	}
	snprintf(buf, len, "%d", err);
	return buf;
}
