// SPDX-License-Identifier: MIT
/*
 * Opening a file beneath a root directory that someone else may have built:
 * a fake sysfs tree (DEVRES_SYSFS_ROOT) or any later configurable root.
 * A privileged driver reads, writes and maps what it opens there, so a
 * symlink planted in the tree must not lead it outside: no absolute path or
 * symlink, no '..' above the root, no magic link (/proc/self/fd/N).
 *
 * The kernel does this itself with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) since 5.6. Before that (ENOSYS, or a seccomp
 * filter that says so) the path is walked here one component at a time,
 * every component opened with O_NOFOLLOW and every symlink read and checked
 * as text, with the same answers: -EXDEV for an escape, -ELOOP past 40
 * symlinks. docs/security.md says what is and is not defended.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include "subsys.h"

/* The kernel's MAXSYMLINKS: one more symlink is a loop. */
#define WALK_MAX_LINKS 40

/*
 * Every fd the walk opens is the library's own from its open (base/own-fd.c);
 * the one returned is named again by the caller.
 */
#define WALK "a path lookup"

/*
 * The directories walked through, root first. '..' goes back to the fd we
 * came from rather than opening "..": a directory renamed out of the tree
 * while we hold it cannot take the walk above the root.
 */
struct walk {
	int *fd;
	int depth;
	int size;
	int links;
};

static void walk_close(struct walk *w)
{
	while (w->depth > 0)
		devres__own_fd_close(w->fd[w->depth--]);
	free(w->fd);
}

static int walk_push(struct walk *w, int fd)
{
	if (w->depth + 1 == w->size) {
		int *a = realloc(w->fd, 2 * (size_t)w->size * sizeof(*a));

		if (!a) {
			devres__own_fd_close(fd);
			return -ENOMEM;
		}
		w->fd = a;
		w->size *= 2;
	}
	w->fd[++w->depth] = fd;
	return 0;
}

/* @next with @target in front of it, for a symlink met at @next. */
static char *join_path(const char *target, size_t len, const char *next)
{
	size_t rest = strlen(next);
	char *s = malloc(len + rest + 1);

	if (!s)
		return NULL;
	memcpy(s, target, len);
	memcpy(s + len, next, rest + 1);
	return s;
}

/*
 * @name in @dir is not what we could open (@err): if it is a symlink, the
 * path from here on is its target followed by @next. Returns that path, to
 * be freed, or NULL and -errno in *@ret_err (@err when it is no symlink).
 */
static char *follow(struct walk *w, int dir, const char *name, const char *next,
		    int err, int *ret_err)
{
	char *buf = malloc(PATH_MAX), *s = NULL;
	ssize_t n;

	if (!buf) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	n = readlinkat(dir, name, buf, PATH_MAX);
	if (n < 0)
		*ret_err = -err;
	else if (n >= PATH_MAX)
		*ret_err = -ENAMETOOLONG;
	else if (n == 0)
		*ret_err = -ENOENT;
	else if (buf[0] == '/')
		*ret_err = -EXDEV; /* as RESOLVE_BENEATH says */
	else if (++w->links > WALK_MAX_LINKS)
		*ret_err = -ELOOP;
	else if (!(s = join_path(buf, (size_t)n, next)))
		*ret_err = -ENOMEM;
	free(buf);
	return s;
}

/* An O_PATH open of a symlink opens the link itself: treat it as one. */
static bool opened_link(int fd, int flags)
{
	struct stat st;

	return (flags & O_PATH) && !(flags & O_NOFOLLOW) &&
	       fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
}

/*
 * One step: the component at *@pos of *@todo. Returns 0 to go on, 1 when
 * the path is done and its fd is in *@ret_fd, or -errno.
 */
static int step(struct walk *w, char **todo, size_t *pos, int flags,
		unsigned int mode, int *ret_fd)
{
	const char *p = *todo + *pos, *next;
	char name[NAME_MAX + 1], *s;
	int dir = w->fd[w->depth], fd, err, oflags;
	size_t len;
	bool last;

	while (*p == '/')
		p++;
	if (!*p) { /* ended on a directory: ".", ".." or a '/' */
		devres__own_fd_opening();
		fd = openat(dir, ".", flags | O_CLOEXEC, mode);
		devres__own_fd_opened(fd, DEVRES_OWN_PATH_WALK, WALK);
		if (fd < 0)
			return -errno;
		*ret_fd = fd;
		return 1;
	}
	len = strcspn(p, "/");
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, p, len);
	name[len] = '\0';
	next = p + len;
	*pos = (size_t)(next - *todo);
	last = !next[strspn(next, "/")];
	if (strcmp(name, ".") == 0)
		return 0;
	if (strcmp(name, "..") == 0) {
		if (w->depth == 0)
			return -EXDEV;
		devres__own_fd_close(w->fd[w->depth--]);
		return 0;
	}
	/* A directory on the way is held by path only (@mode unused). */
	oflags = last ? flags | O_NOFOLLOW | O_CLOEXEC |
				 (*next ? O_DIRECTORY : 0)
		      : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	devres__own_fd_opening();
	fd = openat(dir, name, oflags, mode);
	devres__own_fd_opened(fd, DEVRES_OWN_PATH_WALK, WALK);
	if (fd >= 0 && last && opened_link(fd, flags)) {
		devres__own_fd_close(fd);
		fd = -1;
		errno = ELOOP;
	}
	if (fd >= 0 && last) {
		*ret_fd = fd;
		return 1;
	}
	if (fd >= 0)
		return walk_push(w, fd);
	err = errno;
	/* The caller's own O_NOFOLLOW says: not even a symlink beneath. */
	if ((last && (flags & O_NOFOLLOW)) || (err != ELOOP && err != ENOTDIR))
		return -err;
	s = follow(w, dir, name, next, err, &err);
	if (!s)
		return err;
	free(*todo);
	*todo = s;
	*pos = 0;
	return 0;
}

/* The walk without openat2(); static, but a test includes this file. */
static int walk_beneath(int rootfd, const char *path, int flags,
			unsigned int mode)
{
	struct walk w = { .size = 16 };
	size_t pos = 0;
	char *todo;
	int ret, fd = -1;

	if (!*path)
		return -ENOENT;
	if (*path == '/')
		return -EXDEV;
	todo = strdup(path);
	w.fd = malloc((size_t)w.size * sizeof(*w.fd));
	if (!todo || !w.fd) {
		free(todo);
		free(w.fd);
		return -ENOMEM;
	}
	w.fd[0] = rootfd;
	do
		ret = step(&w, &todo, &pos, flags, mode, &fd);
	while (ret == 0);
	walk_close(&w);
	free(todo);
	return ret == 1 ? fd : ret;
}

static int openat2_beneath(int rootfd, const char *path, int flags,
			   unsigned int mode)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned int)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	/* openat2() refuses a mode that nothing will use. */
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		how.mode = mode;
	/* EAGAIN: a rename or mount raced the lookup; the kernel asks again. */
	for (int i = 0; i < 8; i++) {
		devres__own_fd_opening();
		fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		devres__own_fd_opened((int)fd, DEVRES_OWN_PATH_WALK, WALK);
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN)
			break;
	}
	return -errno;
}

static bool no_openat2;

int devres__open_beneath(int rootfd, const char *path, int flags,
			 unsigned int mode)
{
	int fd;

	if (!path)
		return -EINVAL;
	/* The one fault point for every file opened under a root. */
	if (devres__should_fail_fd())
		return -EMFILE;
	if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
		fd = openat2_beneath(rootfd, path, flags, mode);
		if (fd != -ENOSYS)
			return fd;
		__atomic_store_n(&no_openat2, true, __ATOMIC_RELAXED);
	}
	return walk_beneath(rootfd, path, flags, mode);
}
