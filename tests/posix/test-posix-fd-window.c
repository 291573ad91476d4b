// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan shared-only timeout=60 */
/*
 * The window of a release: between its check of a managed number (still
 * the open file it acquired?) and its close() of it, a close of that
 * number by hand on another thread, then a third thread's open() given
 * the same number. Were the close by hand let through, the release would
 * close the third's file.
 *
 * Taken deterministically, not by luck: this binary puts its own close()
 * and fclose() in front of the library's (the executable comes first in
 * symbol lookup, for the library's calls too) and parks the releasing
 * thread in them, on its managed number or stream, after the check. The
 * hand call is then made on another thread; the test waits until it has
 * returned or blocks in futex() (the library's wait); then the main
 * thread (the third) opens descriptors until it is given the managed
 * number or one above it, and writes a mark into each. Then the release
 * goes on. Afterwards each of the third's descriptors must still be open,
 * its own file (its inode), with its mark; the hand call must return
 * what it returns after the release (the order the library gives the
 * two); no WARN but the one the cell expects; the device's node gone and
 * the ledger back (the fixture's teardown).
 *
 * One cell per managed kind (every release function of fd.c: devm_open,
 * devm_openat, devm_memfd_create, devm_eventfd, devm_timerfd_create,
 * devm_add_fd of a dup(), of either end of a pipe and of a socketpair's
 * end; and devm_fopen's stream) and per call: close(), dup2() and dup3()
 * onto the number, close_range() of the number alone and of the number
 * and its twin, close() of the twin's number (a program closing numbers
 * it did not open), and the release of another device's node of the
 * same number (devm_add_fd() of it there): one WARN, as in the order
 * where that release comes second (the number closed behind its back,
 * or the first release's own close() taking its node).
 *
 * And a child forked while a release is parked there: its closes of the
 * same number wait for nothing (the parent's release is the parent's).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "posix/hand-close.h"

/* The parent has a parked thread at its fork; its child starts none. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

#define WAIT_MS 5000
#define THIRD_MAX 64

/* Where the releasing thread parks: its close() of @fd, or fclose(@f). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool armed, parked, go;
	int fd;
	FILE *f;
} park = { .lock = PTHREAD_MUTEX_INITIALIZER,
	   .cond = PTHREAD_COND_INITIALIZER };

static bool parks_here(int fd, const FILE *f)
{
	bool here;

	pthread_mutex_lock(&park.lock);
	here = park.armed && pthread_equal(park.thread, pthread_self()) &&
	       (f ? f == park.f : fd == park.fd);
	if (here) {
		park.armed = false;
		park.parked = true;
		pthread_cond_broadcast(&park.cond);
		while (!park.go)
			pthread_cond_wait(&park.cond, &park.lock);
	}
	pthread_mutex_unlock(&park.lock);
	return here;
}

int close(int fd)
{
	static int (*next)(int);

	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "close");
	parks_here(fd, NULL);
	return next(fd);
}

int fclose(FILE *f)
{
	static int (*next)(FILE *);

	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "fclose");
	if (f)
		parks_here(-1, f);
	return next(f);
}

enum kind {
	K_OPEN,
	K_OPENAT,
	K_MEMFD,
	K_EVENTFD,
	K_TIMERFD,
	K_DUP,
	K_PIPE_R,
	K_PIPE_W,
	K_SOCKET,
	K_STREAM,
	NR_KINDS
};

static const char *const kind_name[NR_KINDS] = {
	"devm_open",
	"devm_openat",
	"devm_memfd_create",
	"devm_eventfd",
	"devm_timerfd_create",
	"devm_add_fd(dup)",
	"devm_add_fd(pipe read end)",
	"devm_add_fd(pipe write end)",
	"devm_add_fd(socketpair)",
	"devm_fopen",
};

enum hand {
	H_CLOSE,
	H_DUP2,
	H_DUP3,
	H_RANGE,
	H_RANGE_TWIN,
	H_TWIN,
	H_RELEASE,
	NR_HANDS
};

static const char *const hand_name[NR_HANDS] = {
	"close",
	"dup2 onto it",
	"dup3 onto it",
	"close_range of it",
	"close_range of it and its twin",
	"close of its twin",
	"another device's release",
};

struct cell {
	char name[96];
	enum kind kind;
	enum hand hand;
};

static struct cell cells[NR_KINDS * NR_HANDS];

/* The managed object of a cell, and what the test keeps beside it. */
struct res {
	int fd, twin;
	FILE *f;
	int other; /* the other end of a pipe or socketpair, or -1 */
	int src;   /* what dup2() and dup3() put over it */
};

static void acquire(enum kind k, struct res *r)
{
	int p[2];

	r->f = NULL;
	r->other = -1;
	switch (k) {
	case K_OPEN:
		r->fd = devm_open(&tdev, "/dev/null", O_RDONLY);
		break;
	case K_OPENAT:
		r->fd = devm_openat(&tdev, AT_FDCWD, "/dev/null", O_RDONLY);
		break;
	case K_MEMFD:
		r->fd = devm_memfd_create(&tdev, "window", 0);
		break;
	case K_EVENTFD:
		r->fd = devm_eventfd(&tdev, 0, 0);
		break;
	case K_TIMERFD:
		r->fd = devm_timerfd_create(&tdev, CLOCK_MONOTONIC, 0);
		break;
	case K_DUP:
		p[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		assert_true(p[0] >= 0);
		r->fd = fcntl(p[0], F_DUPFD_CLOEXEC, 0);
		assert_true(r->fd >= 0);
		assert_int_equal(close(p[0]), 0);
		assert_int_equal(devm_add_fd(&tdev, r->fd), 0);
		break;
	case K_PIPE_R:
	case K_PIPE_W:
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		r->fd = p[k == K_PIPE_W];
		r->other = p[k != K_PIPE_W];
		assert_int_equal(devm_add_fd(&tdev, r->fd), 0);
		break;
	case K_SOCKET:
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
					    0, p),
				 0);
		r->fd = p[0];
		r->other = p[1];
		assert_int_equal(devm_add_fd(&tdev, r->fd), 0);
		break;
	default:
		r->f = devm_fopen(&tdev, "/dev/null", "r");
		assert_non_null(r->f);
		r->fd = fileno(r->f);
		break;
	}
	assert_true(r->fd >= 0);
	r->twin = twin_of(r->fd);
}

/* The releasing thread: the device's release, parked in its close. */
static int released;

static void *releaser(void *p)
{
	const struct res *r = p;

	pthread_mutex_lock(&park.lock);
	park.thread = pthread_self();
	park.fd = r->fd;
	park.f = r->f;
	park.armed = true;
	pthread_mutex_unlock(&park.lock);
	released = devres_release_all(&tdev);
	return NULL;
}

/* The hand call, on its own thread; its return and errno. */
static struct {
	enum hand hand;
	const struct res *r;
	pid_t tid;
	int ret, err;
	bool done;
} hand;

static void *hand_thread(void *p)
{
	const struct res *r = hand.r;
	int ret = 0;

	(void)p;
	__atomic_store_n(&hand.tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	errno = 0;
	switch (hand.hand) {
	case H_CLOSE:
		ret = hand_close(r->fd);
		break;
	case H_DUP2:
		ret = hand_dup2(r->src, r->fd);
		break;
	case H_DUP3:
		ret = hand_dup3(r->src, r->fd, O_CLOEXEC);
		break;
	case H_RANGE:
		ret = hand_close_range((unsigned int)r->fd, (unsigned int)r->fd,
				       0);
		break;
	case H_RANGE_TWIN: {
		int lo = r->fd < r->twin ? r->fd : r->twin;
		int hi = r->fd < r->twin ? r->twin : r->fd;

		ret = hand_close_range((unsigned int)lo, (unsigned int)hi, 0);
		break;
	}
	case H_TWIN:
		ret = hand_close(r->twin);
		break;
	default:
		ret = devres_release_all(&other);
		break;
	}
	hand.err = errno;
	hand.ret = ret;
	__atomic_store_n(&hand.done, true, __ATOMIC_RELEASE);
	return NULL;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Until the hand call has returned, or blocks in futex() (the library's
 * wait for the release: nothing else in the call blocks, no lock being
 * held by another thread meanwhile).
 */
static void wait_hand(void)
{
	char path[64], buf[32];
	pid_t tid;

	while (!(tid = __atomic_load_n(&hand.tid, __ATOMIC_ACQUIRE)))
		poll(NULL, 0, 1);
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (long end = now_ms() + WAIT_MS;; poll(NULL, 0, 1)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (__atomic_load_n(&hand.done, __ATOMIC_ACQUIRE))
			return;
		assert_true(fd >= 0);
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (n > 0 && strtol(buf, NULL, 10) == SYS_futex)
			return;
		assert_true(now_ms() < end);
	}
}

/* The third's descriptors: memfds, each with its number as its mark. */
struct third {
	int fd[THIRD_MAX];
	ino_t ino[THIRD_MAX];
	int n;
};

/* Opens until given @target or a number above it. */
static void third_open(struct third *t, int target)
{
	for (t->n = 0; t->n < THIRD_MAX; t->n++) {
		int fd = (int)syscall(SYS_memfd_create, "third", MFD_CLOEXEC);
		struct stat st;
		char mark[16];

		assert_true(fd >= 0);
		snprintf(mark, sizeof(mark), "third %d", fd);
		assert_int_equal(write(fd, mark, strlen(mark)),
				 (ssize_t)strlen(mark));
		assert_int_equal(fstat(fd, &st), 0);
		t->fd[t->n] = fd;
		t->ino[t->n] = st.st_ino;
		if (fd >= target) {
			t->n++;
			return;
		}
	}
	fail_msg("no number at or above %d in %d opens", target, THIRD_MAX);
}

/* Each still open, its own file, its mark in it; then closed. */
static void third_check(const struct third *t)
{
	for (int i = 0; i < t->n; i++) {
		char want[16], got[16] = "";
		struct stat st;

		snprintf(want, sizeof(want), "third %d", t->fd[i]);
		assert_int_equal(fstat(t->fd[i], &st), 0);
		assert_true(st.st_ino == t->ino[i]);
		assert_int_equal(pread(t->fd[i], got, sizeof(got) - 1, 0),
				 (ssize_t)strlen(want));
		assert_string_equal(got, want);
		assert_int_equal(close(t->fd[i]), 0);
	}
}

/* What the hand call returns once the release has closed what it closes. */
static void check_hand(const struct res *r, enum hand h)
{
	switch (h) {
	case H_CLOSE:
	case H_TWIN:
		assert_int_equal(hand.ret, -1);
		assert_int_equal(hand.err, EBADF);
		break;
	case H_DUP2:
	case H_DUP3:
		/* The number is the source's open file now, and not managed. */
		assert_int_equal(hand.ret, r->fd);
		assert_int_equal(syscall(SYS_kcmp, getpid(), getpid(),
					 KCMP_FILE, r->fd, r->src),
				 0);
		assert_int_equal(close(r->fd), 0);
		break;
	case H_RANGE:
	case H_RANGE_TWIN:
		assert_int_equal(hand.ret, 0);
		break;
	default:
		assert_int_equal(hand.ret, 1);
		break;
	}
}

static void run_cell(void **state)
{
	const struct cell *c = *state;
	struct third third;
	struct res r;
	bool closed_other = false;
	pthread_t rel, h;
	int warns, target;

	acquire(c->kind, &r);
	if (r.twin < 0 && (c->hand == H_TWIN || c->hand == H_RANGE_TWIN))
		skip(); /* kcmp() refused here: no twin */
	r.src = -1;
	if (c->hand == H_DUP2 || c->hand == H_DUP3) {
		r.src = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		assert_true(r.src >= 0);
	}
	/* The number itself, managed by the other device too. */
	if (c->hand == H_RELEASE)
		assert_int_equal(devm_add_fd(&other, r.fd), 0);
	/* A pipe's or socketpair's other end the range closes too. */
	if (c->hand == H_RANGE_TWIN &&
	    (r.other - r.fd) * (r.other - r.twin) < 0)
		closed_other = true;
	warns = devres_warn_count();
	released = -1;
	pthread_mutex_lock(&park.lock);
	park.parked = park.go = false;
	pthread_mutex_unlock(&park.lock);
	assert_int_equal(pthread_create(&rel, NULL, releaser, &r), 0);
	pthread_mutex_lock(&park.lock);
	while (!park.parked)
		pthread_cond_wait(&park.cond, &park.lock);
	pthread_mutex_unlock(&park.lock);

	hand = (__typeof__(hand)){ .hand = c->hand, .r = &r };
	assert_int_equal(pthread_create(&h, NULL, hand_thread, NULL), 0);
	wait_hand();
	target = c->hand == H_TWIN ? r.twin : r.fd;
	third_open(&third, target);

	pthread_mutex_lock(&park.lock);
	park.go = true;
	pthread_cond_broadcast(&park.cond);
	pthread_mutex_unlock(&park.lock);
	assert_int_equal(pthread_join(rel, NULL), 0);
	assert_int_equal(pthread_join(h, NULL), 0);
	assert_int_equal(released, 1);

	third_check(&third);
	check_hand(&r, c->hand);
	/* The other device's release found the number closed: its WARN. */
	assert_int_equal(devres_warn_count() - warns,
			 c->hand == H_RELEASE ? 1 : 0);
	assert_true(fcntl(r.fd, F_GETFD) < 0);
	if (r.twin >= 0)
		assert_true(fcntl(r.twin, F_GETFD) < 0);
	if (r.other >= 0)
		assert_int_equal(close(r.other), closed_other ? -1 : 0);
	if (r.src >= 0)
		assert_int_equal(close(r.src), 0);
}

/*
 * A child forked while its parent's release is parked in its window
 * closes the same number, its copy, and a range over it: it waits for
 * nothing (its table is empty; the parent's release is the parent's),
 * and catches a descriptor of its own. A wait would be the alarm's end.
 */
static void fork_during_release(void **state)
{
	struct res r = { .other = -1, .src = -1 };
	pthread_t rel;
	int status;
	pid_t pid;

	(void)state;
	acquire(K_OPEN, &r);
	pthread_mutex_lock(&park.lock);
	park.parked = park.go = false;
	pthread_mutex_unlock(&park.lock);
	released = -1;
	assert_int_equal(pthread_create(&rel, NULL, releaser, &r), 0);
	pthread_mutex_lock(&park.lock);
	while (!park.parked)
		pthread_cond_wait(&park.cond, &park.lock);
	pthread_mutex_unlock(&park.lock);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct device cdev;
		int own, warns;

		alarm(10);
		if (init_dev(&cdev, "child-dev"))
			_exit(2);
		own = devm_open(&cdev, "/dev/null", O_RDONLY);
		warns = devres_warn_count();
		if (own < 0 || close(r.fd) ||
		    close_range((unsigned int)r.fd,
				(unsigned int)(r.twin >= 0 ? r.twin : r.fd),
				0) ||
		    devres_warn_count() != warns)
			_exit(3);
		/* Its own is caught: one WARN. */
		if (close(own) || devres_warn_count() != warns + 1)
			_exit(4);
		devres_release_all(&cdev);
		put_device(&cdev);
		/*
		 * The parent's node its parked release holds is on no list
		 * here: valgrind's leak check at the child's exit would call
		 * it lost. An exec ends the child without that check.
		 */
		execl("/bin/true", "true", (char *)NULL);
		_exit(5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	pthread_mutex_lock(&park.lock);
	park.go = true;
	pthread_cond_broadcast(&park.cond);
	pthread_mutex_unlock(&park.lock);
	assert_int_equal(pthread_join(rel, NULL), 0);
	assert_int_equal(released, 1);
	assert_true(fcntl(r.fd, F_GETFD) < 0);
}

static int cell_setup(void **state)
{
	void *c = *state;
	int ret = two_dev_setup(state);

	*state = c;
	return ret;
}

int main(void)
{
	struct CMUnitTest tests[NR_KINDS * NR_HANDS + 1];
	size_t n = 0;

	for (int k = 0; k < NR_KINDS; k++) {
		for (int h = 0; h < NR_HANDS; h++, n++) {
			cells[n].kind = (enum kind)k;
			cells[n].hand = (enum hand)h;
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 dev_teardown, "%s / %s", kind_name[k],
				 hand_name[h]);
		}
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
		fork_during_release, dev_setup, dev_teardown);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("fd-window", tests, n, NULL, NULL);
}
