// SPDX-License-Identifier: MIT
/*
 * A static pool of per-thread slots: tslots.h. The claim is a bit of a
 * bitmap, taken by compare-and-swap; the owner a word beside it, written
 * once the bit is the claimer's (0 meanwhile, which no take-over
 * touches).
 */
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "subsys.h"

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
			__atomic_store_n(&p->owner[i], devres__tslot_self(),
					 __ATOMIC_RELAXED);
			return (int)i;
		}
	}
	return -1;
}

bool devres__tslot_take_over(struct devres__tslots *p, unsigned int i)
{
	unsigned long long id = __atomic_load_n(&p->owner[i], __ATOMIC_RELAXED);

	return id && devres__tslot_gone(id) &&
	       __atomic_compare_exchange_n(&p->owner[i], &id,
					   devres__tslot_self(), false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void devres__tslot_give(struct devres__tslots *p, unsigned int i)
{
	__atomic_store_n(&p->owner[i], 0, __ATOMIC_RELAXED);
	__atomic_fetch_and(&p->claimed[i / DEVRES_TSLOT_WORD],
			   ~(1ull << (i % DEVRES_TSLOT_WORD)),
			   __ATOMIC_RELEASE);
}
