// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile shared-only tsan timeout=120 */
/*
 * A signal handler that unmaps, replaces, moves, advises or protects a
 * managed mapping (munmap(), mmap(MAP_FIXED), mremap(), madvise(),
 * mprotect(): calls the library defines) while its own thread holds the
 * lock of the table of managed mappings (src/base/maps.c): in a plain
 * call's look-up, in devm_mmap()'s add, in a release's unmap, in
 * madvise()'s and mprotect()'s look-ups. Run there, the handler's call
 * waited for its own thread: for ever. A span of the table counts itself
 * on its thread: the handler's call runs inside it as the plain call, and
 * the table stays right: a record whose range the handler unmapped,
 * replaced or moved is passed over by a look-up (madvise() is not
 * refused over what is there now) and left mapped by its release, with
 * that release's one WARN; one only advised or protected is unmapped by
 * its release, with none.
 *
 * Deterministic: this binary puts its own pthread_mutex_lock() in front
 * of the library's calls. The table's lock is found first (the first
 * mutex a plain munmap() over a managed mapping takes); then the thread
 * sends itself the signal as it has taken that lock in the span named.
 * Each cell runs in a child process under an alarm: a cell that hangs
 * fails alone.
 *
 * 5 spans of the thread x 5 calls of the handler: 25 cells.
 *
 * Then a handler that WARNs while its thread holds the log's lines (a
 * plain munmap()'s WARNs held as it lets the table's lock go, where the
 * thread is sent the signal): its line is kept with its thread's, in the
 * thread's reserve, with no malloc() in the handler (counted by this
 * binary's malloc(), or the sanitizer's allocator hooks), and sent once
 * the thread lets go; past the reserve's lines, dropped and counted.
 * 3 cells: one WARN, one with its backtrace, HELD_MAX + 1 WARNs.
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
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "handler-allocs.h"
#include "hostile/cell-child.h"

/* Where the thread is when the signal comes. */
enum span {
	S_LOOKUP,  /* munmap() by hand of a managed mapping: the look-up */
	S_ADD,	   /* devm_mmap(): the record entered */
	S_RELEASE, /* devm_munmap(): the record taken out, unmapped */
	S_ADVISE,  /* madvise(MADV_DONTNEED) over one: the look-up */
	S_PROTECT, /* mprotect(PROT_READ) over one: the look-up */
	NR_SPANS
};

static const char *const span_name[NR_SPANS] = {
	"munmap look-up", "devm_mmap add", "devm_munmap release",
	"madvise look-up", "mprotect look-up"
};

/* Which of the thread's takings of the table's lock in its call. */
static const int span_nth[NR_SPANS] = { 1, 2, 1, 1, 1 };

/* What the handler calls, over the other device's mapping. */
enum hcall {
	H_MUNMAP,
	H_MMAP,
	H_MREMAP,
	H_MADVISE,
	H_MPROTECT,
	NR_HCALLS
};

static const char *const hcall_name[NR_HCALLS] = { "munmap", "mmap(MAP_FIXED)",
						   "mremap", "madvise",
						   "mprotect" };

#define LEN 8192

typedef int lock_fn(pthread_mutex_t *);

static lock_fn *next_lock;
static pthread_mutex_t *table_lock; /* the table's, once found */
static int finding;		    /* the next lock taken is the table's */
static pid_t victim_tid;
static int armed, countdown, fired, handled, inside;
static enum hcall hcall;
static char *target;	/* the other device's managed mapping */
static char *elsewhere; /* where the handler's mremap() moves it */
static int handler_ret, handler_errno;
/* A cell's devices: the child ends with them reachable (valgrind). */
static struct device *cell_devs[3];

/* The log's WARNs from the handler, while its thread holds lines. */
enum wcall {
	W_ONE,
	W_BACKTRACE,
	W_PAST_RESERVE,
	NR_WCALLS
};

static const char *const wcall_name[NR_WCALLS] = { "one WARN",
						   "one WARN with its "
						   "backtrace",
						   "17 WARNs" };

static const char *const hold_name[] = { "munmap's WARNs held" };

#define HELD_MAX 16

static int warn_armed;
static enum wcall wcall;

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	static lock_fn *next;
	int r;

	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	r = next(m);
	if (m == table_lock && __atomic_load_n(&warn_armed, __ATOMIC_ACQUIRE) &&
	    (pid_t)syscall(SYS_gettid) == victim_tid) {
		__atomic_store_n(&warn_armed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&fired, 1, __ATOMIC_RELEASE);
		raise(SIGUSR2);
		inside = __atomic_load_n(&handled, __ATOMIC_ACQUIRE);
	}
	return r;
}

static void warn_handler(int sig)
{
	int saved = errno;
	int n = wcall == W_PAST_RESERVE ? HELD_MAX + 1 : 1;

	(void)sig;
	__atomic_store_n(&in_handler, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		devres_warn(NULL, "handler", "from the handler, %d", i);
	__atomic_store_n(&in_handler, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&handled, 1, __ATOMIC_ACQ_REL);
	errno = saved;
}

/* What the thread sends to the sink. */
static int sunk_handler, sunk_dropped, sunk_frames, sunk_plain;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strstr(line, "from the handler"))
		sunk_handler++;
	else if (strstr(line, "log lines dropped"))
		sunk_dropped++;
	else if (strstr(line, "  ["))
		sunk_frames++;
	else if (strstr(line, "acquired with devm_mmap()"))
		sunk_plain++;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	int r;

	if (!next_lock)
		*(void **)&next_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	r = next_lock(m);
	if (__atomic_load_n(&finding, __ATOMIC_ACQUIRE) &&
	    (pid_t)syscall(SYS_gettid) == victim_tid &&
	    __atomic_exchange_n(&finding, 0, __ATOMIC_ACQ_REL))
		table_lock = m;
	if (m == table_lock && __atomic_load_n(&armed, __ATOMIC_ACQUIRE) &&
	    (pid_t)syscall(SYS_gettid) == victim_tid && !--countdown) {
		__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&fired, 1, __ATOMIC_RELEASE);
		raise(SIGUSR1);
		/* The handler ran before the lock was let go, or never. */
		inside = __atomic_load_n(&handled, __ATOMIC_ACQUIRE);
	}
	return r;
}

static void handler(int sig)
{
	int saved = errno, r = 0;
	void *p;

	(void)sig;
	switch (hcall) {
	case H_MUNMAP:
		r = munmap(target, LEN);
		break;
	case H_MMAP:
		p = mmap(target, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		r = p == (void *)target ? 0 : -1;
		if (!r)
			target[0] = 'A';
		break;
	case H_MREMAP:
		p = mremap(target, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
			   elsewhere);
		r = p == (void *)elsewhere ? 0 : -1;
		break;
	case H_MADVISE:
		r = madvise(target, LEN, MADV_DONTNEED);
		break;
	case H_MPROTECT:
		r = mprotect(target, LEN, PROT_READ);
		break;
	default:
		break;
	}
	handler_ret = r;
	handler_errno = r < 0 ? errno : 0;
	__atomic_add_fetch(&handled, 1, __ATOMIC_ACQ_REL);
	errno = saved;
}

/* Whether any page of [p, p + LEN) is mapped. */
static bool mapped(const void *p)
{
	unsigned char vec[LEN / 4096];

	return mincore((void *)p, LEN, vec) == 0 || errno != ENOMEM;
}

/* A shared mapping of a fresh memfd, its first byte @mark. */
static void *map_memfd(void *at, int flags, char mark)
{
	int fd = memfd_create("cell", MFD_CLOEXEC);
	char *p;

	if (fd < 0 || ftruncate(fd, LEN))
		return MAP_FAILED;
	p = mmap(at, LEN, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		p[0] = mark;
	return p;
}

/* The other device's managed mapping of a memfd, its first byte 'T'. */
static char *managed_memfd(struct device *dev)
{
	int fd = memfd_create("target", MFD_CLOEXEC);
	char *p;

	if (fd < 0 || ftruncate(fd, LEN))
		return NULL;
	p = devm_mmap(dev, NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      0);
	close(fd);
	if (IS_ERR(p))
		return NULL;
	p[0] = 'T';
	return p;
}

/* The span's call, on the thread; 0 when it did what it does. */
static int span_call(enum span s, struct device *dev, char *mine)
{
	void *p;

	switch (s) {
	case S_LOOKUP:
		return munmap(mine, LEN);
	case S_ADD:
		p = devm_mmap(dev, NULL, LEN, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return IS_ERR(p) ? -1 : 0;
	case S_RELEASE:
		devm_munmap(dev, mine, LEN);
		return mapped(mine) ? -1 : 0;
	case S_ADVISE:
		/* Over a managed mapping: refused, as ever. */
		return madvise(mine, LEN, MADV_DONTNEED) == -1 && errno == EPERM
			       ? 0
			       : -1;
	case S_PROTECT:
		return mprotect(mine, LEN, PROT_READ);
	default:
		return -1;
	}
}

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "cell %s / %s: ", span_name[row],              \
			hcall_name[col]);                                      \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		bad++;                                                         \
	} while (0)

/* The table's lock, found by a plain munmap() of @dev's record. */
static int find_table_lock(struct device *dev)
{
	char *probe = devm_mmap(dev, NULL, LEN, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (IS_ERR(probe))
		return -1;
	__atomic_store_n(&finding, 1, __ATOMIC_RELEASE);
	munmap(probe, LEN);
	return !table_lock || finding ? -1 : 0;
}

static int cell(int row, int col)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
	struct device *dev, *odev, *cdev;
	bool replaced = col == H_MUNMAP || col == H_MMAP || col == H_MREMAP;
	char *mine;
	int bad = 0, ret, warns;

	alarm(10);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	hcall = (enum hcall)col;
	victim_tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 2;
	dev = cell_devs[0] = heap_dev(NULL, "victim");
	odev = cell_devs[1] = heap_dev(NULL, "other");
	cdev = cell_devs[2] = heap_dev(NULL, "finder");
	if (!dev || !odev || !cdev)
		return 2;
	/* The table's lock: the first a plain munmap() of a record takes. */
	if (find_table_lock(cdev))
		return 2;
	mine = devm_mmap(dev, NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	target = managed_memfd(odev);
	/* A place of its own for the handler's mremap() to move it to. */
	elsewhere =
		mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (IS_ERR(mine) || !target || elsewhere == MAP_FAILED)
		return 2;

	countdown = span_nth[row];
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
	ret = span_call((enum span)row, dev, mine);
	__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);

	if (!fired || handled != 1 || inside != 1)
		FAIL("signal %s, handler ran %d times, %d inside the span",
		     fired ? "sent" : "never sent", handled, inside);
	if (ret)
		FAIL("the thread's call failed: %s", strerror(errno));
	if (handler_ret)
		FAIL("the handler's call failed: %s", strerror(handler_errno));
	if (replaced) {
		/* Another owner's mapping where the record's range was. */
		if (col != H_MMAP &&
		    map_memfd(target, MAP_FIXED_NOREPLACE, 'B') == MAP_FAILED)
			return 2;
		if (col == H_MREMAP && elsewhere[0] != 'T')
			FAIL("the moved mapping lost its contents");
		/* A look-up passes over the record: not the library's. */
		warns = devres_warn_count();
		if (madvise(target + LEN - 4096, 4096, MADV_DONTNEED) ||
		    devres_warn_count() != warns)
			FAIL("a look-up over the record refused: %s, %d WARNs",
			     strerror(errno), devres_warn_count() - warns);
	}
	/* Its release: left mapped with one WARN, or unmapped with none. */
	warns = devres_warn_count();
	devres_release_all(odev);
	if (devres_warn_count() != warns + (replaced ? 1 : 0))
		FAIL("%d WARNs at the release", devres_warn_count() - warns);
	if (replaced && (!mapped(target) || target[0] != "BAB"[col]))
		FAIL("the release unmapped what is there now");
	if (!replaced && mapped(target))
		FAIL("the release left the mapping");
	devres_release_all(dev);
	devres_release_all(cdev);
	return bad ? 1 : 0;
}

static void test_handler_inside_maps_lock(void **state)
{
	(void)state;
	run_cells_in_children(cell, span_name, NR_SPANS, hcall_name, NR_HCALLS);
}

static int warn_cell(int row, int col)
{
	struct sigaction sa = { .sa_handler = warn_handler,
				.sa_flags = SA_RESTART };
	int bad = 0, warns, kept = col == W_PAST_RESERVE ? HELD_MAX : 1;
	struct device *dev, *cdev;
	char *mine;

	alarm(10);
	setenv("DEVRES_WARN_BACKTRACE", col == W_BACKTRACE ? "1" : "0", 1);
	wcall = (enum wcall)col;
	victim_tid = (pid_t)syscall(SYS_gettid);
	count_allocs();
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL))
		return 2;
	dev = cell_devs[0] = heap_dev(NULL, "victim");
	cdev = cell_devs[2] = heap_dev(NULL, "finder");
	if (!dev || !cdev || find_table_lock(cdev))
		return 2;
	mine = devm_mmap(dev, NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (IS_ERR(mine))
		return 2;
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	__atomic_store_n(&warn_armed, 1, __ATOMIC_RELEASE);
	/* Its WARN held as it lets the table's lock go: the signal. */
	if (munmap(mine, LEN))
		bad++;
	__atomic_store_n(&warn_armed, 0, __ATOMIC_RELEASE);
	devres_set_log_sink(NULL, NULL);
	if (!fired || handled != 1 || inside != 1) {
		fprintf(stderr,
			"cell %s / %s: signal %s, handler ran %d times\n",
			hold_name[row], wcall_name[col],
			fired ? "sent" : "never sent", handled);
		bad++;
	}
	if (handler_allocs) {
		fprintf(stderr, "cell %s / %s: %d allocations in the handler\n",
			hold_name[row], wcall_name[col], handler_allocs);
		bad++;
	}
	/* Every WARN counted; the handler's sent once, after its thread's. */
	if (devres_warn_count() !=
		    warns + 1 + (col == W_PAST_RESERVE ? HELD_MAX + 1 : 1) ||
	    sunk_plain != 1 || sunk_handler != kept ||
	    sunk_dropped != (col == W_PAST_RESERVE) ||
	    (col == W_BACKTRACE) != (sunk_frames > 0)) {
		fprintf(stderr,
			"cell %s / %s: %d WARNs; sent: %d of the thread, %d of "
			"the handler, %d notices of dropped lines, %d frames\n",
			hold_name[row], wcall_name[col],
			devres_warn_count() - warns, sunk_plain, sunk_handler,
			sunk_dropped, sunk_frames);
		bad++;
	}
	devres_release_all(dev);
	devres_release_all(cdev);
	return bad ? 1 : 0;
}

static void test_handler_warns_inside_hold(void **state)
{
	(void)state;
	run_cells_in_children(warn_cell, hold_name, 1, wcall_name, NR_WCALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handler_inside_maps_lock),
		cmocka_unit_test(test_handler_warns_inside_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
