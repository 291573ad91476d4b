// SPDX-License-Identifier: MIT
/*
 * bench-revocable: what an access to a revocable resource costs
 * (revocable_try_access() + revocable_access_end()), next to a plain
 * pointer load, to an uncontended mutex lock/unlock around the same load
 * and, when the library links liburcu-bp, to liburcu-bp's own read lock
 * and unlock called directly; what two threads pay when they read at
 * once; and what a revocation costs (create, then devres_release_all():
 * one grace period).
 *
 * Run it from a release build:
 *
 *   cmake --preset release && cmake --build build/release
 *   ./build/release/bench/bench-revocable [rounds]
 *
 * It measures the read side the library chose (liburcu-bp when built with
 * it), then runs itself again with DEVRES_REVOCABLE=fallback to measure
 * the built-in fallback the same way. Times are medians of interleaved
 * rounds (the order of the contenders rotates every round), so that a
 * slow moment of a shared machine hits every contender alike.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <devres/device.h>
#include <devres/revocable.h>

#define NOINLINE __attribute__((noinline))

#define ACCESS_N 2000000 /* accesses per timed round */
#define REVOKE_N 2000	 /* revocations per timed round */
#define DEFAULT_ROUNDS 15
#define MAX_ROUNDS 201

enum contender {
	C_PLAIN,
	C_MUTEX,
	C_REVOCABLE,
	C_URCU,
	C_NR
};

static const char *const names[C_NR] = {
	[C_PLAIN] = "plain pointer load",
	[C_MUTEX] = "mutex lock/unlock",
	[C_REVOCABLE] = "try_access+access_end",
	[C_URCU] = "urcu-bp lock+unlock alone",
};

/* liburcu-bp's own read side, found in the process when linked. */
static void (*urcu_lock)(void), (*urcu_unlock)(void);

struct regs {
	unsigned long value;
};

static struct regs the_regs = { 1 };
static struct regs *volatile plain_ptr = &the_regs;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct revocable *handle;
static struct device bdev, rdev;

/*
 * Each contender reads the resource once per access through a function
 * kept out of line, as a driver's read() would: the loop around it is the
 * same for all three.
 */
static NOINLINE unsigned long read_plain(void)
{
	return plain_ptr->value;
}

static NOINLINE unsigned long read_mutex(void)
{
	unsigned long v;

	pthread_mutex_lock(&mutex);
	v = plain_ptr->value;
	pthread_mutex_unlock(&mutex);
	return v;
}

static NOINLINE unsigned long read_revocable(void)
{
	struct regs *r = revocable_try_access(handle);
	unsigned long v;

	if (!r)
		return 0;
	v = r->value;
	revocable_access_end(handle);
	return v;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static NOINLINE unsigned long read_urcu(void)
{
	unsigned long v;

	urcu_lock();
	v = plain_ptr->value;
	urcu_unlock();
	return v;
}

static unsigned long sink;

static double time_accesses(enum contender c, long n)
{
	unsigned long s = 0;
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		switch (c) {
		case C_PLAIN:
			s += read_plain();
			break;
		case C_MUTEX:
			s += read_mutex();
			break;
		case C_URCU:
			s += read_urcu();
			break;
		default:
			s += read_revocable();
		}
	}
	__atomic_add_fetch(&sink, s, __ATOMIC_RELAXED);
	return now_ns() - t0;
}

/* Two threads reading at once: ns per access of each. */
struct pair {
	enum contender c;
	double ns;
};

static void *pair_thread(void *arg)
{
	struct pair *p = arg;

	p->ns = time_accesses(p->c, ACCESS_N / 2) / (ACCESS_N / 2);
	return NULL;
}

static double time_two(enum contender c)
{
	struct pair a = { c, 0 }, b = { c, 0 };
	pthread_t t;

	if (pthread_create(&t, NULL, pair_thread, &a))
		exit(1);
	pair_thread(&b);
	pthread_join(t, NULL);
	return (a.ns + b.ns) / 2;
}

/* Create and revoke @n revocables, one release each: ns per revocation. */
static double time_revoke(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		if (!devm_revocable_create(&rdev, &the_regs, NULL))
			exit(1);
		devres_release_all(&rdev);
	}
	return (now_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench(int rounds, const char *side)
{
	static double one[C_NR][MAX_ROUNDS], two[C_NR][MAX_ROUNDS];
	static double rev[MAX_ROUNDS];
	double m[C_NR];
	int nr = urcu_lock && urcu_unlock ? C_NR : C_URCU;

	/* Warm up: the first urcu access registers the thread. */
	for (int c = 0; c < nr; c++)
		time_accesses(c, ACCESS_N / 10);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < nr; k++) {
			int c = (r + k) % nr;

			one[c][r] = time_accesses(c, ACCESS_N) / ACCESS_N;
			two[c][r] = time_two(c);
		}
		rev[r] = time_revoke(REVOKE_N);
	}
	printf("read side: %s; median of %d interleaved rounds of %d\n", side,
	       rounds, ACCESS_N);
	printf("  %-26s %10s %10s %12s\n", "", "ns/access", "vs plain",
	       "2 threads");
	for (int c = 0; c < nr; c++)
		m[c] = median(one[c], rounds);
	for (int c = 0; c < nr; c++)
		printf("  %-26s %10.2f %9.2fx %12.2f\n", names[c], m[c],
		       m[c] / m[C_PLAIN], median(two[c], rounds));
	printf("  %-26s %10.0f ns (create + release, one grace period)\n",
	       "revocation", median(rev, rounds));
}

/* The library links liburcu-bp when it was built with it. */
static bool linked_urcu(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "liburcu-bp"))
			found = true;
	if (f)
		fclose(f);
	return found;
}

static void bdev_release(struct device *dev)
{
	(void)dev;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;
	const char *env = getenv("DEVRES_REVOCABLE");
	bool fallback = env && strcmp(env, "fallback") == 0;
	char arg[16];
	pid_t pid;
	int status;

	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = DEFAULT_ROUNDS;
	if (!fallback) {
		*(void **)&urcu_lock = dlsym(RTLD_DEFAULT, "urcu_bp_read_lock");
		*(void **)&urcu_unlock = dlsym(RTLD_DEFAULT, "urcu_bp_read_"
							     "unlock");
	}
	bdev.release = rdev.release = bdev_release;
	device_initialize(&bdev);
	device_initialize(&rdev);
	dev_set_name(&bdev, "bench");
	dev_set_name(&rdev, "bench-revoke");
	handle = devm_revocable_create(&bdev, &the_regs, NULL);
	if (!handle)
		return 1;
	revocable_get(handle);
	bench(rounds, fallback	      ? "fallback (forced)"
		      : linked_urcu() ? "liburcu-bp"
				      : "fallback (built without liburcu)");
	devres_release_all(&bdev);
	revocable_put(handle);
	put_device(&bdev);
	put_device(&rdev);
	fflush(stdout);
	if (fallback)
		return 0;
	/* The same again on the fallback read side, in a child. */
	snprintf(arg, sizeof(arg), "%d", rounds);
	pid = fork();
	if (pid == 0) {
		setenv("DEVRES_REVOCABLE", "fallback", 1);
		execl("/proc/self/exe", argv[0], arg, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	return !WIFEXITED(status) || WEXITSTATUS(status);
}
