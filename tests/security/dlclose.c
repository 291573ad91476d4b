// SPDX-License-Identifier: MIT
/*
 * dlclose() of libdevres while threads of the process still hold its
 * thread-local state, as a language binding or a plugin host may do: a
 * thread that used the library (its node cache, its ledger tally, each
 * with a destructor of the library's) is still running when the last
 * handle is closed, and ends afterwards; another thread starts and ends
 * after that; the process forks. Were the library unmapped, the first
 * thread's end would call its destructors in memory no longer there. The
 * library stays loaded once loaded (-z nodelete), as a library whose
 * threads and destructors may outlive any handle must.
 * Usage: dlclose LIBDEVRES
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <devres/devres.h>

typedef void *(*alloc_fn)(dr_release_t release, size_t size, gfp_t gfp,
			  const char *name);
typedef void (*free_fn)(void *res);

static alloc_fn my_alloc;
static free_fn my_free;
static pthread_barrier_t closed;

static void release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Nodes taken and given back: the thread's cache and tally are made. */
static int use(void)
{
	void *n[8];

	for (int i = 0; i < 8; i++) {
		n[i] = my_alloc(release, 32, GFP_KERNEL, "release");
		if (!n[i])
			return -1;
	}
	for (int i = 0; i < 8; i++)
		my_free(n[i]);
	return 0;
}

static void *early(void *arg)
{
	(void)arg;
	if (use())
		return (void *)1;
	pthread_barrier_wait(&closed); /* the library is closed now */
	return NULL;
}

static void *late(void *arg)
{
	(void)arg;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *h, *ret = NULL;
	int status;
	pid_t pid;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBDEVRES\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	my_alloc = (alloc_fn)dlsym(h, "devres_alloc_named");
	my_free = (free_fn)dlsym(h, "devres_free");
	if (!my_alloc || !my_free) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	pthread_barrier_init(&closed, NULL, 2);
	if (use() || pthread_create(&t, NULL, early, NULL))
		return 1;
	if (dlclose(h)) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 1;
	}
	pthread_barrier_wait(&closed);
	/* The thread ends: the library's destructors of its state run. */
	if (pthread_join(t, &ret) || ret)
		return 1;
	if (pthread_create(&t, NULL, late, NULL) || pthread_join(t, NULL))
		return 1;
	/* The library's fork handlers, still registered, run. */
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1;
	/* Loaded still: a new handle is the same library, and works. */
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h) {
		fprintf(stderr, "not loaded after dlclose()\n");
		return 1;
	}
	if (use())
		return 1;
	printf("ok: libdevres stays loaded after dlclose(); threads that "
	       "used it ended, the process forked\n");
	return 0;
}
