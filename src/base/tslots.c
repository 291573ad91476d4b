// SPDX-License-Identifier: MIT
/*
 * A static pool of per-thread slots: tslots.h. The claim is a bit of a
 * bitmap, taken by compare-and-swap; the owner a word beside it, written
 * once the bit is the claimer's (0 meanwhile, which no take-over
 * touches), after the time of the claim (so that an owner read brings
 * its own time).
 *
 * A thread that ended with no destructor run (a raw SYS_exit) leaves its
 * slot claimed, named by its ids. The kernel gives its thread id to a
 * later thread once pid_max more have been made: tgkill() then finds that
 * thread alive, and the slot would stay taken for good, each such end one
 * slot less. The start time in /proc tells the two apart: a thread
 * started after the slot was claimed is not the one that claimed it.
 * Everything here is a system call on a stack buffer: no allocation, no
 * lock, as a signal handler's first count needs (ledger.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "subsys.h"

/* Clock ticks a second, as /proc counts a start time (USER_HZ). */
static unsigned long long hz = 100;

__attribute__((constructor)) static void tslots_init(void)
{
	long t = sysconf(_SC_CLK_TCK);

	if (t > 0)
		hz = (unsigned long long)t;
}

/* Now, in clock ticks since boot, rounded down as the kernel rounds. */
static unsigned long long now_ticks(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0;
	return (unsigned long long)ts.tv_sec * hz +
	       (unsigned long long)ts.tv_nsec / (1000000000ull / hz);
}

unsigned long long devres__tslot_self(void)
{
	return (unsigned long long)(unsigned int)syscall(SYS_getpid) << 32 |
	       (unsigned int)syscall(SYS_gettid);
}

bool devres__tslot_gone(unsigned long long id)
{
	pid_t pid = (pid_t)(id >> 32), tid = (pid_t)(id & 0xffffffffu);
	int saved = errno;
	bool ret;

	if (id == DEVRES_TSLOT_GONE)
		return true;
	ret = syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH;
	errno = saved;
	return ret;
}

/* Writes @v in decimal at @s; returns the end. */
static char *put_uint(char *s, unsigned int v)
{
	char d[10];
	int n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*s++ = d[--n];
	return s;
}

/*
 * The start time of thread @tid of this process, in clock ticks since
 * boot (field 22 of its stat, after the name in parentheses, which may
 * hold anything); 0 if it cannot be read.
 */
static unsigned long long start_ticks(unsigned int tid)
{
	char path[40] = "/proc/self/task/", buf[512], *p, *end;
	unsigned long long v = 0;
	ssize_t len;
	int fd, field;

	p = put_uint(path + sizeof("/proc/self/task/") - 1, tid);
	memcpy(p, "/stat", sizeof("/stat"));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	end = buf + len;
	for (p = end; p > buf && p[-1] != ')'; p--)
		;
	/* After ") ": the state is field 3, the start time field 22. */
	for (field = 2; p < end && field < 22; p++)
		field += *p == ' ';
	for (; p < end && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (unsigned long long)(*p - '0');
	return field == 22 ? v : 0;
}

/*
 * Whether the thread of @id, alive, started after slot @i was claimed:
 * its id reused, the claimer gone. Not for another process's thread.
 */
static bool reused(struct devres__tslots *p, unsigned int i,
		   unsigned long long id)
{
	int saved = errno;
	unsigned long long start;

	if ((id >> 32) != (unsigned int)syscall(SYS_getpid))
		return false;
	start = start_ticks((unsigned int)(id & 0xffffffffu));
	errno = saved;
	return start > __atomic_load_n(&p->born[i], __ATOMIC_RELAXED);
}

void devres__tslot_own(struct devres__tslots *p, unsigned int i)
{
	__atomic_store_n(&p->born[i], now_ticks(), __ATOMIC_RELAXED);
	__atomic_store_n(&p->owner[i], devres__tslot_self(), __ATOMIC_RELEASE);
}

int devres__tslot_take_free(struct devres__tslots *p)
{
	for (unsigned int w = 0; w < p->n / DEVRES_TSLOT_WORD; w++) {
		unsigned long long m =
			__atomic_load_n(&p->claimed[w], __ATOMIC_RELAXED);

		while (~m) {
			unsigned int b = (unsigned int)__builtin_ctzll(~m);
			unsigned int i = w * DEVRES_TSLOT_WORD + b;
			unsigned int u;

			if (!__atomic_compare_exchange_n(
				    &p->claimed[w], &m, m | 1ull << b, true,
				    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				continue;
			u = __atomic_load_n(&p->used, __ATOMIC_RELAXED);
			while (u <= i &&
			       !__atomic_compare_exchange_n(
				       &p->used, &u, i + 1, true,
				       __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				;
			devres__tslot_own(p, i);
			return (int)i;
		}
	}
	return -1;
}

/*
 * Slot @i, named by @id, for this thread: its owner goes to 0 (claimed,
 * which no take-over touches) by one compare-and-swap, so that of two
 * takers one wins, then to this thread with its time.
 */
static bool take(struct devres__tslots *p, unsigned int i,
		 unsigned long long id)
{
	if (!__atomic_compare_exchange_n(&p->owner[i], &id, 0, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	devres__tslot_own(p, i);
	return true;
}

bool devres__tslot_take_over(struct devres__tslots *p, unsigned int i)
{
	unsigned long long id = __atomic_load_n(&p->owner[i], __ATOMIC_ACQUIRE);

	return id && devres__tslot_gone(id) && take(p, i, id);
}

int devres__tslot_reclaim(struct devres__tslots *p)
{
	unsigned int n = __atomic_load_n(&p->used, __ATOMIC_ACQUIRE);
	unsigned long long now;

	for (unsigned int i = 0; i < n; i++)
		if (devres__tslot_take_over(p, i))
			return (int)i;
	now = now_ticks();
	if (now < __atomic_load_n(&p->deep_next, __ATOMIC_RELAXED))
		return -1;
	for (unsigned int i = 0; i < n; i++) {
		unsigned long long id =
			__atomic_load_n(&p->owner[i], __ATOMIC_ACQUIRE);

		if (id && id != DEVRES_TSLOT_GONE && reused(p, i, id) &&
		    take(p, i, id))
			return (int)i;
	}
	__atomic_store_n(&p->deep_next, now + hz, __ATOMIC_RELAXED);
	return -1;
}

void devres__tslot_give(struct devres__tslots *p, unsigned int i)
{
	__atomic_store_n(&p->owner[i], 0, __ATOMIC_RELAXED);
	__atomic_fetch_and(&p->claimed[i / DEVRES_TSLOT_WORD],
			   ~(1ull << (i % DEVRES_TSLOT_WORD)),
			   __ATOMIC_RELEASE);
}
