/* SPDX-License-Identifier: MIT */
/* min(), max(), clamp(): each argument evaluated once. */
#ifndef KCOMPAT_LINUX_MINMAX_H
#define KCOMPAT_LINUX_MINMAX_H

#define min(a, b)                                                              \
	({                                                                     \
		__typeof__(a) kc_a_ = (a);                                     \
		__typeof__(b) kc_b_ = (b);                                     \
		kc_a_ < kc_b_ ? kc_a_ : kc_b_;                                 \
	})
#define max(a, b)                                                              \
	({                                                                     \
		__typeof__(a) kc_a_ = (a);                                     \
		__typeof__(b) kc_b_ = (b);                                     \
		kc_a_ > kc_b_ ? kc_a_ : kc_b_;                                 \
	})
#define min_t(t, a, b) min((t)(a), (t)(b))
#define max_t(t, a, b) max((t)(a), (t)(b))
#define clamp(v, lo, hi) min(max((v), (lo)), (hi))
#define clamp_t(t, v, lo, hi) clamp((t)(v), (t)(lo), (t)(hi))
#define clamp_val(v, lo, hi) clamp_t(__typeof__(v), (v), (lo), (hi))
#define swap(a, b)                                                             \
	do {                                                                   \
		__typeof__(a) kc_t_ = (a);                                     \
		(a) = (b);                                                     \
		(b) = kc_t_;                                                   \
	} while (0)

#endif /* KCOMPAT_LINUX_MINMAX_H */
