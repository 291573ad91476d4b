// SPDX-License-Identifier: MIT
/*
 * Managed streams: devm_fopen and devm_fclose.
 *
 * A stream holds a descriptor, so the ledger counts it under fds, and
 * /proc/self/fd agrees. fclose() frees the FILE whatever it returns, so it
 * is called once; its error (a buffered write that could not be flushed)
 * goes to the caller of devm_fclose(), or to the log at release.
 *
 * A managed stream given to fclose() by hand is caught there (fd-table.c,
 * interpose-fd.c): one WARN, and its node dropped before the FILE is
 * freed, so that neither devm_fclose() nor the release reads it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include "fd-table.h"
#include <devres/posix.h>

/* Room for a usual mode, the "e" added and the NUL; longer ones on the heap. */
#define MODE_MAX 16

/*
 * fclose() is a cancellation point; no call of the library is one. The
 * twin is closed after it, unless the stream was pointed at it. The
 * stream is claimed (fd-table.c) from before its check until its number
 * and its twin are closed: a close by hand of either waits meanwhile.
 * Its WARNs are made once the claim is let go (a log sink may close a
 * number).
 */
static int stream_put(struct device *dev, struct stream_dr *dr)
{
	int cancel = devres__cancel_off(), ret, twin = dr->id.twin, fd;
	bool twin_ours = posix__twin_ours(&dr->id), same, gone = false;
	bool lost = false;

	devres__ledger_add(DL_FDS, twin >= 0 ? -2 : -1);
	fd = dr->id.fd;
	same = fd < 0 || posix__fd_same(&dr->id);
	/*
	 * Closed behind the library's back (a raw system call, a close
	 * inside libc), its number may be another owner's by now. Then the
	 * stream is pointed at its twin (or at no number), so that fclose()
	 * flushes into the stream's own open file and closes that, never
	 * the number. The FILE's number is glibc's _fileno, which fclose()
	 * reads. A twin that is another owner's too: no number at all.
	 */
	if (!same) {
		gone = fcntl(fd, F_GETFD) < 0;
		dr->f->_fileno = twin_ours ? twin : -1;
		twin = -1;
	} else if (twin >= 0 && !twin_ours) {
		lost = true;
	}
	ret = fclose(dr->f) ? -errno : 0;
	if (twin >= 0 && twin_ours)
		posix__close_next(twin);
	posix__stream_done(dr);
	if (!same)
		devres__warn(dev, "devm_fopen",
			     "fd %d, a stream's, was closed behind the "
			     "library's back%s",
			     fd,
			     gone ? "" : " and now is another file: left open");
	if (lost)
		posix__twin_lost(dev, "devm_fopen", &dr->id);
	devres__cancel_restore(cancel);
	return ret;
}

/* Nobody to return an error to: it goes to the log. */
static void devm_fopen_release(struct device *dev, void *res)
{
	int saved = errno, ret;
	char buf[40];

	/* Closed by hand since: the FILE is freed, and was counted. */
	if (!posix__stream_claim(res))
		return;
	ret = stream_put(dev, res);
	if (ret)
		devres__print(DEVRES_LOG_WARNING, "%s: devm_fopen: fclose: %s",
			      devres__dev_label(dev, buf, sizeof(buf)),
			      strerrordesc_np(-ret));
	errno = saved;
}

static int match_stream(struct device *dev, void *res, void *data)
{
	(void)dev;
	return ((struct stream_dr *)res)->f == data;
}

FILE *devm_fopen(struct device *dev, const char *path, const char *mode)
{
	struct stream_dr *dr;
	char small[MODE_MAX], *m = small;
	size_t len;
	FILE *f;
	int err;

	if (!devres__dev_ok_to_acquire(dev, __func__)) {
		errno = EINVAL;
		return NULL;
	}
	if (devres__arg_bad(dev, path, __func__, "path") ||
	    devres__arg_bad(dev, mode, __func__, "mode")) {
		errno = EINVAL;
		return NULL;
	}
	len = strlen(mode);
	if (len + 2 > sizeof(small) &&
	    (devres__should_fail() || !(m = malloc(len + 2)))) {
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * The "e" goes right after the first letter: glibc reads the flags
	 * from the first seven characters only, and whatever follows a
	 * ",ccs=" is the name of a character set ("r,ccs=UTF-8e" is none).
	 */
	if (len) {
		m[0] = mode[0];
		m[1] = 'e';
		memcpy(m + 2, mode + 1, len);
	} else {
		m[0] = '\0';
	}

	dr = devres_alloc_named(devm_fopen_release, sizeof(*dr), GFP_KERNEL,
				__func__);
	if (!dr) {
		if (m != small)
			free(m);
		errno = ENOMEM;
		return NULL;
	}
	if (devres__should_fail_fd()) {
		errno = EMFILE;
		f = NULL;
	} else {
		f = fopen(path, m);
	}
	err = errno;
	if (m != small)
		free(m);
	if (!f) {
		devres_free(dr);
		errno = err;
		return NULL;
	}
	dr->f = f;
	dr->owner = (struct devres__owner){ dev, dr, devm_fopen_release,
					    __func__, "devm_fclose()" };
	/* Listed and on @dev in one hold of the table's lock. */
	if (posix__stream_list(dr))
		return f;
	/* Refused by @dev (released meanwhile): closed as its release would. */
	devres__owner_refused(&dr->owner);
	devres_free(dr);
	errno = ENODEV;
	return NULL;
}

int devm_fclose(struct device *dev, FILE *stream)
{
	struct stream_dr *dr;
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	/* Taken off first, so that the error of fclose() can be returned. */
	dr = devres_remove(dev, devm_fopen_release, match_stream, stream);
	if (!dr) {
		struct devres__hand h;

		devres__warn_foreign(dev, __func__,
				     posix__stream_owner(stream, &h) ? &h
								     : NULL,
				     "stream %p is not managed by this device",
				     (void *)stream);
		return -EINVAL;
	}
	/*
	 * An fclose() by hand on another thread took it since it was taken
	 * off the device: that fclose() frees the FILE, and WARNs.
	 */
	if (!posix__stream_claim(dr)) {
		devres_free(dr);
		return 0;
	}
	ret = stream_put(dev, dr);
	devres_free(dr);
	return ret;
}
