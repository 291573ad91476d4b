// SPDX-License-Identifier: MIT
/*
 * A late dlopen() of libdevres, as a language binding does it, from a
 * process whose static TLS block has no room left: copies of a filler
 * library with initial-exec TLS are opened until the dynamic loader
 * refuses one ("cannot allocate memory in static TLS block"); then the
 * library must still load, and its thread-local state must work, in this
 * thread and in another. A library built with initial-exec TLS fails here.
 * Usage: tls-dlopen LIBDEVRES FILLER WORKDIR
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <devres/devres.h>
#include <devres/fault.h>

#define MAX_FILLERS 256

static int copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	int rc = 0;

	if (in < 0 || out < 0)
		rc = -1;
	while (rc == 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* The library's calls, found with dlsym(): the program does not link it. */
static __typeof__(devres_version) *version;
static __typeof__(devres_fail_nth) *fail_nth;
static __typeof__(devres_fail_nth_get) *fail_nth_get;
static __typeof__(devres_alloc_named) *node_alloc;
static __typeof__(devres_free) *node_free;

static void release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Nodes come from a per-thread cache: allocate and free a few hundred. */
static const char *nodes(void)
{
	void *res[300];

	for (int i = 0; i < 300; i++)
		if (!(res[i] = node_alloc(release, 32, GFP_KERNEL,
					  "tls-dlopen")))
			return "devres_alloc failed";
	for (int i = 300; i-- > 0;)
		node_free(res[i]);
	return NULL;
}

/* fail-nth is thread-local: set here, it must read back here only. */
static void *other_thread(void *arg)
{
	(void)arg;
	if (fail_nth_get() != 0)
		return "a new thread sees another thread's fail-nth";
	fail_nth(7);
	if (fail_nth_get() != 7)
		return "fail-nth does not read back in a new thread";
	fail_nth(0);
	return (void *)nodes();
}

int main(int argc, char **argv)
{
	char path[4096];
	int fillers = 0;
	const char *err;
	pthread_t t;
	void *lib, *res;

	if (argc != 4) {
		fprintf(stderr, "usage: tls-dlopen LIBDEVRES FILLER WORKDIR\n");
		return 2;
	}
	mkdir(argv[3], 0755);
	for (; fillers < MAX_FILLERS; fillers++) {
		snprintf(path, sizeof(path), "%s/libfiller%d.so", argv[3],
			 fillers);
		if (copy(argv[2], path) != 0) {
			perror(path);
			return 1;
		}
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
			break;
	}
	if (fillers == MAX_FILLERS) {
		fprintf(stderr, "static TLS never ran out after %d fillers\n",
			fillers);
		return 1;
	}
	printf("static TLS used up after %d fillers of 64 bytes: %s\n", fillers,
	       dlerror());

	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("FAIL: dlopen of the library: %s\n", dlerror());
		return 1;
	}
	*(void **)&version = dlsym(lib, "devres_version");
	*(void **)&fail_nth = dlsym(lib, "devres_fail_nth");
	*(void **)&fail_nth_get = dlsym(lib, "devres_fail_nth_get");
	*(void **)&node_alloc = dlsym(lib, "devres_alloc_named");
	*(void **)&node_free = dlsym(lib, "devres_free");
	if (!version || !fail_nth || !fail_nth_get || !node_alloc ||
	    !node_free) {
		printf("FAIL: dlsym: %s\n", dlerror());
		return 1;
	}
	if ((err = nodes())) {
		printf("FAIL: %s\n", err);
		return 1;
	}
	fail_nth(3);
	if (fail_nth_get() != 3) {
		printf("FAIL: fail-nth does not read back in the main "
		       "thread\n");
		return 1;
	}
	if (pthread_create(&t, NULL, other_thread, NULL) != 0 ||
	    pthread_join(t, &res) != 0) {
		printf("FAIL: pthread: %s\n", strerror(errno));
		return 1;
	}
	err = res;
	if (err || fail_nth_get() != 3) {
		printf("FAIL: %s\n", err ? err : "the new thread changed ours");
		return 1;
	}
	fail_nth(0);
	printf("libdevres %s loaded late, its thread-local state works\n",
	       version());
	return 0;
}
