/* SPDX-License-Identifier: MIT */
/* Random numbers from the system's generator. */
#ifndef KCOMPAT_LINUX_RANDOM_H
#define KCOMPAT_LINUX_RANDOM_H

#include <sys/random.h>
#include <errno.h>
#include <devres/types.h>
#include <linux/types.h>

static inline void get_random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	if (n && devres_ptr_bad(buf)) {
		devres_warn_bad_arg("get_random_bytes", "buffer", buf);
		return;
	}
	while (n) {
		ssize_t r = getrandom(p, n, 0);

		if (r > 0) {
			p += r;
			n -= (size_t)r;
		} else if (r < 0 && errno != EINTR) {
			break; /* EFAULT: an address the check above let by */
		}
	}
}

static inline u32 get_random_u32(void)
{
	u32 v;

	get_random_bytes(&v, sizeof(v));
	return v;
}

#define get_random_u64()                                                       \
	({                                                                     \
		u64 kc_v_;                                                     \
		get_random_bytes(&kc_v_, sizeof(kc_v_));                       \
		kc_v_;                                                         \
	})
/* Entropy a hardware source adds: the system pool is not ours to feed. */
#define add_hwgenerator_randomness(buf, n, entropy, sleep)                     \
	((void)(buf), (void)(n), (void)(entropy), (void)(sleep))

#endif /* KCOMPAT_LINUX_RANDOM_H */
