/* SPDX-License-Identifier: MIT */
/*
 * Clocks a board does not model: every clock exists, runs at
 * KCOMPAT_CLK_RATE and enables. The managed getters are managed (a node
 * each, so fault points) and deferrable lookups (devres_should_defer()),
 * as the kernel's are while the clock's provider is missing.
 *
 * A clock keeps the kernel's two counts, prepares and enables, and their
 * checks: an unprepare or a disable with none left ("already
 * unprepared", "already disabled"), an enable of a clock not prepared and
 * an unprepare of the last prepare while enabled WARN once, naming the
 * getter's device, and do nothing. A leak of them stops at
 * KCOMPAT_CLK_COUNT_MAX with one WARN, the count unchanged, rather than
 * running an int past INT_MAX. A _prepared or _enabled getter's clock
 * starts so, and its release unprepares or disables it as the kernel's
 * does (a clock the driver gave back by hand meanwhile: the kernel's
 * WARN). The counts move with compare-and-exchange: the kernel's calls
 * may run on any thread.
 */
#ifndef KCOMPAT_LINUX_CLK_H
#define KCOMPAT_LINUX_CLK_H

#include <linux/kcompat_site.h>
#include <devres/fault.h>
#include <linux/device.h>

#define KCOMPAT_CLK_RATE 100000000ul
#define KCOMPAT_CLK_COUNT_MAX (1 << 20)

struct clk {
	unsigned long rate;
	int prepared;	    /* clk_prepare() less clk_unprepare() */
	int enabled;	    /* clk_enable() less clk_disable() */
	struct device *dev; /* the getter's, which a WARN names */
	int on;		    /* the getter's: 0, prepared (1), enabled (2) */
};

/* One less of @count unless none is left: then false, nothing done. */
static inline bool kcompat_clk_dec(int *count)
{
	int n = __atomic_load_n(count, __ATOMIC_RELAXED);

	do {
		if (__builtin_expect(n <= 0, 0))
			return false;
	} while (!__atomic_compare_exchange_n(
		count, &n, n - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

static inline void kcompat_clk_disable(struct clk *c, const char *func)
{
	if (!kcompat_clk_dec(&c->enabled))
		devres_warn(c->dev, func,
			    "clock %p is already disabled: nothing done",
			    (void *)c);
}

static inline void kcompat_clk_unprepare(struct clk *c, const char *func)
{
	int n = __atomic_load_n(&c->prepared, __ATOMIC_RELAXED);

	do {
		if (n <= 0) {
			devres_warn(c->dev, func,
				    "clock %p is already unprepared: nothing "
				    "done",
				    (void *)c);
			return;
		}
		if (n == 1 && __atomic_load_n(&c->enabled, __ATOMIC_RELAXED)) {
			devres_warn(c->dev, func,
				    "clock %p is enabled: its last prepare "
				    "kept",
				    (void *)c);
			return;
		}
	} while (!__atomic_compare_exchange_n(&c->prepared, &n, n - 1, true,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/* The release of a _prepared or _enabled getter's clock: given back. */
static inline void kcompat_clk_release(struct device *dev, void *res)
{
	struct clk *c = (struct clk *)res;

	(void)dev;
	if (c->on > 1 && !kcompat_clk_dec(&c->enabled)) {
		/* One WARN, as clk_disable_unprepare() of it says. */
		devres_warn(c->dev, "devm_clk_get_enabled",
			    "clock %p is already disabled: nothing done",
			    (void *)c);
		return;
	}
	if (c->on > 0)
		kcompat_clk_unprepare(c, c->on > 1 ? "devm_clk_get_enabled"
						   : "devm_clk_get_prepared");
}

/*
 * @on: 0, prepared (1), or prepared and enabled (2), as the getter's name.
 * ERR_PTR(-EDEADLK), with a WARN, from a match or for-each callback of
 * @dev, where the clock's node would be refused.
 */
static inline struct clk *kcompat_devm_clk(struct device *dev, const char *what,
					   bool optional, int on)
{
	struct clk *c;
	int err = devres_may_add(dev, what);

	/* Refused before the clock is made: it would be on no device. */
	if (err)
		return (struct clk *)ERR_PTR(err);
	if (devres_should_defer(dev, what))
		return (struct clk *)ERR_PTR(-EPROBE_DEFER);
	(void)optional;
	c = devres_alloc(kcompat_clk_release, sizeof(*c), GFP_KERNEL);
	if (!c)
		return (struct clk *)ERR_PTR(-ENOMEM);
	c->rate = KCOMPAT_CLK_RATE;
	c->prepared = on > 0;
	c->enabled = on > 1;
	c->dev = dev;
	c->on = on;
	devres_add(dev, c);
	return c;
}

#define devm_clk_get(dev, id)                                                  \
	KCOMPAT_AT(devm_clk_get,                                               \
		   kcompat_devm_clk((dev), "devm_clk_get", false, 0))
#define devm_clk_get_optional(dev, id)                                         \
	KCOMPAT_AT(devm_clk_get_optional,                                      \
		   kcompat_devm_clk((dev), "devm_clk_get_optional", true, 0))
#define devm_clk_get_prepared(dev, id)                                         \
	KCOMPAT_AT(devm_clk_get_prepared,                                      \
		   kcompat_devm_clk((dev), "devm_clk_get_prepared", false, 1))
#define devm_clk_get_enabled(dev, id)                                          \
	KCOMPAT_AT(devm_clk_get_enabled,                                       \
		   kcompat_devm_clk((dev), "devm_clk_get_enabled", false, 2))
#define devm_clk_get_optional_enabled(dev, id)                                 \
	KCOMPAT_AT(devm_clk_get_optional_enabled,                              \
		   kcompat_devm_clk((dev), "devm_clk_get_optional_enabled",    \
				    true, 2))

/*
 * NULL is the kernel's optional clock that is absent: nothing, no WARN. An
 * ERR_PTR() or the first page: one WARN, nothing done.
 */
static inline bool kcompat_clk_bad(const struct clk *c, const char *func)
{
	if (!c || !devres_ptr_bad(c))
		return false;
	devres_warn_bad_arg(func, "clock", c);
	return true;
}

/* One more of @count (@what, @undo: for the WARN), unless at the limit. */
static inline int kcompat_clk_up(struct clk *c, int *count, const char *func,
				 const char *what, const char *undo)
{
	int n = __atomic_load_n(count, __ATOMIC_RELAXED);

	do {
		if (n >= KCOMPAT_CLK_COUNT_MAX) {
			devres_warn(c->dev, func,
				    "clock %p %s %d times without %s: refused",
				    (void *)c, what, KCOMPAT_CLK_COUNT_MAX,
				    undo);
			return -EBUSY;
		}
	} while (!__atomic_compare_exchange_n(
		count, &n, n + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 0;
}

static inline int kcompat_clk_prepare(struct clk *c, const char *func)
{
	if (kcompat_clk_bad(c, func))
		return -EINVAL;
	return c ? kcompat_clk_up(c, &c->prepared, func, "prepared",
				  "an unprepare")
		 : 0;
}

/* The kernel's "Enabling unprepared": -ESHUTDOWN, its return. */
static inline int kcompat_clk_enable(struct clk *c, const char *func)
{
	if (kcompat_clk_bad(c, func))
		return -EINVAL;
	if (!c)
		return 0;
	if (!__atomic_load_n(&c->prepared, __ATOMIC_RELAXED)) {
		devres_warn(c->dev, func, "clock %p is not prepared: refused",
			    (void *)c);
		return -ESHUTDOWN;
	}
	return kcompat_clk_up(c, &c->enabled, func, "enabled", "a disable");
}

static inline int clk_prepare(struct clk *c)
{
	return kcompat_clk_prepare(c, "clk_prepare");
}

static inline void clk_unprepare(struct clk *c)
{
	if (!kcompat_clk_bad(c, "clk_unprepare") && c)
		kcompat_clk_unprepare(c, "clk_unprepare");
}

static inline int clk_enable(struct clk *c)
{
	return kcompat_clk_enable(c, "clk_enable");
}

static inline void clk_disable(struct clk *c)
{
	if (!kcompat_clk_bad(c, "clk_disable") && c)
		kcompat_clk_disable(c, "clk_disable");
}

/* The kernel's pair: an enable refused gives its prepare back. */
static inline int clk_prepare_enable(struct clk *c)
{
	int ret = kcompat_clk_prepare(c, "clk_prepare_enable");

	if (ret || !c)
		return ret;
	ret = kcompat_clk_enable(c, "clk_prepare_enable");
	if (ret)
		kcompat_clk_dec(&c->prepared);
	return ret;
}

/* A clock not enabled: the one WARN, and its prepare is not given back. */
static inline void clk_disable_unprepare(struct clk *c)
{
	if (kcompat_clk_bad(c, "clk_disable_unprepare") || !c)
		return;
	if (!kcompat_clk_dec(&c->enabled)) {
		devres_warn(c->dev, "clk_disable_unprepare",
			    "clock %p is already disabled: nothing done",
			    (void *)c);
		return;
	}
	kcompat_clk_unprepare(c, "clk_disable_unprepare");
}

static inline unsigned long clk_get_rate(struct clk *c)
{
	if (kcompat_clk_bad(c, "clk_get_rate"))
		return 0;
	return c ? c->rate : 0;
}

#endif /* KCOMPAT_LINUX_CLK_H */
