// SPDX-License-Identifier: MIT
/* ctest-labels: unit shared-only timeout=60 */
/*
 * A signal handler on the thread of a release that closes the released
 * number inside the release's window: after the release checked the
 * number (still the open file it acquired?) and before its own close().
 * The handler's close does not wait for the release (it is the release's
 * own thread: it would wait for itself); were it let through there, a
 * third thread's open() could be given the number before the release's
 * close, and the release closed that thread's file. The release's thread
 * takes no signal from its claim of the number to its end: the handler
 * runs after it, and its close comes second (close(): EBADF).
 *
 * Deterministic: this binary puts its own close() and fclose() in front
 * of the library's and, on the releasing thread's close of the managed
 * number (or fclose() of the managed stream), sends that thread a signal
 * and lets a third thread open descriptors until it is given the number
 * or one above it, marking each (a memfd of its own, its inode). Then
 * the release goes on. Each of the third thread's descriptors must still
 * be its own file, the handler must have run once, after the release
 * (its close() EBADF), with no WARN, and the ledger back.
 *
 * One cell per managed kind (devm_open(), devm_eventfd(), devm_fopen()'s
 * stream) and per call the handler makes on the number: close(),
 * dup2() onto it, close_range() of it alone.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

#define THIRD_MAX 64

enum kind {
	K_OPEN,
	K_EVENTFD,
	K_STREAM,
	NR_KINDS
};

static const char *const kind_name[NR_KINDS] = { "devm_open", "devm_eventfd",
						 "devm_fopen" };

enum hcall {
	H_CLOSE,
	H_DUP2,
	H_CLOSE_RANGE,
	NR_HCALLS
};

static const char *const hcall_name[NR_HCALLS] = { "close", "dup2",
						   "close_range" };

static enum hcall hcall;
static pthread_t releaser;
static bool armed;
static int num = -1;	  /* the managed number */
static FILE *stream;	  /* or the managed stream */
static int in_handler;	  /* the handler is running */
static int handled;	  /* times the handler ran */
static int handler_ret;	  /* what its call returned (-errno) */
static int ran_in_window; /* the handler ran before the release closed */
static int third[THIRD_MAX];
static ino_t third_ino[THIRD_MAX];
static int nthird;

static int next_close(int fd)
{
	static int (*next)(int);

	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "close");
	return next(fd);
}

static void handler(int sig)
{
	int saved = errno, r = 0;

	(void)sig;
	__atomic_store_n(&in_handler, 1, __ATOMIC_RELEASE);
	switch (hcall) {
	case H_CLOSE:
		r = close(num);
		break;
	case H_DUP2: {
		int tmp = dup(0);

		r = tmp < 0 ? -1 : dup2(tmp, num);
		/* Made again after the release: the test's own, closed. */
		if (r >= 0) {
			(void)next_close(num);
			r = 0;
		}
		if (tmp >= 0)
			(void)next_close(tmp);
		break;
	}
	case H_CLOSE_RANGE:
		r = close_range((unsigned int)num, (unsigned int)num, 0);
		break;
	default:
		break;
	}
	handler_ret = r < 0 ? -errno : r;
	__atomic_add_fetch(&handled, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&in_handler, 0, __ATOMIC_RELEASE);
	errno = saved;
}

/* A third thread: opens until it is given @num or one above it. */
static void *third_opens(void *arg)
{
	(void)arg;
	for (nthird = 0; nthird < THIRD_MAX; nthird++) {
		struct stat st;
		int fd = memfd_create("third", MFD_CLOEXEC);

		if (fd < 0 || fstat(fd, &st))
			break;
		third[nthird] = fd;
		third_ino[nthird] = st.st_ino;
		if (fd >= num) {
			nthird++;
			break;
		}
	}
	return NULL;
}

/* In the release's window: the signal, then the third thread's opens. */
static void in_window(void)
{
	pthread_t t;

	armed = false;
	pthread_kill(pthread_self(), SIGUSR1);
	if (__atomic_load_n(&handled, __ATOMIC_ACQUIRE))
		ran_in_window = 1;
	if (pthread_create(&t, NULL, third_opens, NULL) == 0)
		pthread_join(t, NULL);
}

int close(int fd)
{
	if (armed && fd == num && !stream &&
	    pthread_equal(pthread_self(), releaser) &&
	    !__atomic_load_n(&in_handler, __ATOMIC_ACQUIRE))
		in_window();
	return next_close(fd);
}

int fclose(FILE *f)
{
	static int (*next)(FILE *);

	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "fclose");
	if (armed && f && f == stream &&
	    pthread_equal(pthread_self(), releaser))
		in_window();
	return next(f);
}

static void cell(enum kind k, enum hcall c)
{
	int warns;

	hcall = c;
	handled = ran_in_window = nthird = 0;
	handler_ret = 1;
	stream = NULL;
	switch (k) {
	case K_OPEN:
		num = devm_open(&tdev, "/dev/null", O_RDONLY);
		break;
	case K_EVENTFD:
		num = devm_eventfd(&tdev, 0, 0);
		break;
	default:
		stream = devm_fopen(&tdev, "/dev/null", "r");
		assert_non_null(stream);
		num = fileno(stream);
		break;
	}
	assert_true(num >= 0);
	releaser = pthread_self();
	armed = true;
	warns = devres_warn_count();
	assert_int_equal(devres_release_all(&tdev), 1);
	armed = false;
	/* The third thread's files, each its own. */
	assert_true(nthird > 0);
	for (int i = 0; i < nthird; i++) {
		struct stat st;

		if (fstat(third[i], &st) || st.st_ino != third_ino[i])
			fail_msg("%s, %s: fd %d, the third thread's, was "
				 "closed by the release",
				 kind_name[k], hcall_name[c], third[i]);
		next_close(third[i]);
	}
	/* Held back, not lost: the handler ran once, after the release. */
	assert_int_equal(__atomic_load_n(&handled, __ATOMIC_ACQUIRE), 1);
	if (ran_in_window)
		print_error("%s, %s: the handler ran inside the release\n",
			    kind_name[k], hcall_name[c]);
	assert_int_equal(ran_in_window, 0);
	/* The number closed already: close() fails, close_range() not. */
	if (c == H_CLOSE)
		assert_int_equal(handler_ret, -EBADF);
	else
		assert_int_equal(handler_ret, 0);
	assert_int_equal(devres_warn_count(), warns);
}

static void one_cell(void **state)
{
	int i = (int)(intptr_t)*state;

	cell((enum kind)(i / NR_HCALLS), (enum hcall)(i % NR_HCALLS));
}

static int cell_setup(void **state)
{
	void *id = *state;
	int ret = dev_setup(state);

	*state = id;
	return ret;
}

int main(void)
{
	static char names[NR_KINDS * NR_HCALLS][48];
	struct CMUnitTest tests[NR_KINDS * NR_HCALLS];
	struct sigaction sa = { .sa_handler = handler };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	for (int i = 0; i < NR_KINDS * NR_HCALLS; i++) {
		snprintf(names[i], sizeof(names[i]), "%s / %s",
			 kind_name[i / NR_HCALLS], hcall_name[i % NR_HCALLS]);
		tests[i] = (struct CMUnitTest){
			.name = names[i],
			.test_func = one_cell,
			.setup_func = cell_setup,
			.teardown_func = dev_teardown,
			.initial_state = (void *)(intptr_t)i,
		};
	}
	return _cmocka_run_group_tests("posix-fd-signal", tests,
				       NR_KINDS * NR_HCALLS, NULL, NULL);
}
