/* SPDX-License-Identifier: MIT */
/* atomic_t and atomic64_t on the compiler's atomics (sequentially consistent). */
#ifndef KCOMPAT_LINUX_ATOMIC_H
#define KCOMPAT_LINUX_ATOMIC_H

#include <linux/types.h>

typedef struct {
	int counter;
} atomic_t;
typedef struct {
	s64 counter;
} atomic64_t;

#define ATOMIC_INIT(i)                                                         \
	{                                                                      \
		(i)                                                            \
	}
#define ATOMIC64_INIT(i)                                                       \
	{                                                                      \
		(i)                                                            \
	}
#define KC_SC __ATOMIC_SEQ_CST
#define atomic_read(v) __atomic_load_n(&(v)->counter, __ATOMIC_RELAXED)
#define atomic_set(v, i) __atomic_store_n(&(v)->counter, (i), __ATOMIC_RELAXED)
#define atomic_add(i, v) ((void)__atomic_add_fetch(&(v)->counter, (i), KC_SC))
#define atomic_sub(i, v) ((void)__atomic_sub_fetch(&(v)->counter, (i), KC_SC))
#define atomic_inc(v) atomic_add(1, (v))
#define atomic_dec(v) atomic_sub(1, (v))
#define atomic_add_return(i, v) __atomic_add_fetch(&(v)->counter, (i), KC_SC)
#define atomic_sub_return(i, v) __atomic_sub_fetch(&(v)->counter, (i), KC_SC)
#define atomic_fetch_add(i, v) __atomic_fetch_add(&(v)->counter, (i), KC_SC)
#define atomic_inc_return(v) atomic_add_return(1, (v))
#define atomic_dec_return(v) atomic_sub_return(1, (v))
#define atomic_dec_and_test(v) (atomic_dec_return(v) == 0)
#define atomic_inc_and_test(v) (atomic_inc_return(v) == 0)
#define atomic_xchg(v, i) __atomic_exchange_n(&(v)->counter, (i), KC_SC)
#define atomic_cmpxchg(v, old, new)                                            \
	({                                                                     \
		__typeof__((v)->counter) kc_o_ = (old);                        \
		__atomic_compare_exchange_n(&(v)->counter, &kc_o_, (new),      \
					    false, KC_SC, KC_SC);              \
		kc_o_;                                                         \
	})
#define atomic64_read atomic_read
#define atomic64_set atomic_set
#define atomic64_add atomic_add
#define atomic64_inc atomic_inc
#define atomic64_dec atomic_dec
#define atomic64_add_return atomic_add_return
#define atomic64_inc_return atomic_inc_return
#define smp_mb() __atomic_thread_fence(KC_SC)
#define smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_mb__before_atomic() smp_mb()
#define smp_mb__after_atomic() smp_mb()

#endif /* KCOMPAT_LINUX_ATOMIC_H */
