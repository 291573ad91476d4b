/* SPDX-License-Identifier: MIT */
/*
 * Clocks a board does not model: every clock exists, runs at
 * KCOMPAT_CLK_RATE and enables. Each keeps the kernel's enable count: a
 * disable of a clock not enabled is the kernel's "already disabled" WARN,
 * and does nothing; an _enabled getter's clock is enabled, and disabled
 * at its release. The getters are managed (a node each, so fault points)
 * and deferrable lookups (devres_should_defer()), as the kernel's are
 * while the clock's provider is missing.
 */
#ifndef KCOMPAT_LINUX_CLK_H
#define KCOMPAT_LINUX_CLK_H

#include <linux/kcompat_site.h>
#include <devres/fault.h>
#include <linux/device.h>

#define KCOMPAT_CLK_RATE 100000000ul

struct clk {
	unsigned long rate;
	int enabled;	    /* the kernel's enable_count */
	struct device *dev; /* the getter's, which a WARN names */
	bool managed_on;    /* devm_clk_get_enabled(): disabled at release */
};

/*
 * The disable of a clock (@func): one less, unless it is not enabled,
 * where the count would go below zero. The kernel WARNs "<name> already
 * disabled" and does nothing; so does this, naming the device and the
 * call. The count is the clock's own, taken down with a compare and
 * exchange: the kernel's enable and disable may run on any thread.
 */
static inline void kcompat_clk_off(struct clk *c, const char *func)
{
	int n = __atomic_load_n(&c->enabled, __ATOMIC_RELAXED);

	do {
		if (__builtin_expect(n <= 0, 0)) {
			devres_warn(c->dev, func,
				    "clock %p is already disabled: nothing "
				    "done",
				    (void *)c);
			return;
		}
	} while (!__atomic_compare_exchange_n(&c->enabled, &n, n - 1, true,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/* The release of a clock: an enabled getter's clock is disabled. */
static inline void kcompat_clk_release(struct device *dev, void *res)
{
	struct clk *c = (struct clk *)res;

	(void)dev;
	if (c->managed_on)
		kcompat_clk_off(c, "devm_clk_get_enabled");
}

static inline struct clk *kcompat_devm_clk(struct device *dev, const char *what,
					   bool optional, bool on)
{
	struct clk *c;

	if (devres_should_defer(dev, what))
		return (struct clk *)ERR_PTR(-EPROBE_DEFER);
	(void)optional;
	c = devres_alloc(kcompat_clk_release, sizeof(*c), GFP_KERNEL);
	if (!c)
		return (struct clk *)ERR_PTR(-ENOMEM);
	c->rate = KCOMPAT_CLK_RATE;
	c->dev = dev;
	/* The _enabled getters enable it; the release disables it. */
	c->enabled = on;
	c->managed_on = on;
	devres_add(dev, c);
	return c;
}

#define devm_clk_get(dev, id)                                                  \
	KCOMPAT_AT(devm_clk_get,                                               \
		   kcompat_devm_clk((dev), "devm_clk_get", false, false))
#define devm_clk_get_optional(dev, id)                                         \
	KCOMPAT_AT(devm_clk_get_optional,                                      \
		   kcompat_devm_clk((dev), "devm_clk_get_optional", true,      \
				    false))
#define devm_clk_get_enabled(dev, id)                                          \
	KCOMPAT_AT(devm_clk_get_enabled,                                       \
		   kcompat_devm_clk((dev), "devm_clk_get_enabled", false,      \
				    true))
#define devm_clk_get_optional_enabled(dev, id)                                 \
	KCOMPAT_AT(devm_clk_get_optional_enabled,                              \
		   kcompat_devm_clk((dev), "devm_clk_get_optional_enabled",    \
				    true, true))
#define devm_clk_get_prepared devm_clk_get

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

static inline int kcompat_clk_on(struct clk *c, const char *func)
{
	if (kcompat_clk_bad(c, func))
		return -EINVAL;
	if (c)
		__atomic_add_fetch(&c->enabled, 1, __ATOMIC_RELAXED);
	return 0;
}

static inline void kcompat_clk_down(struct clk *c, const char *func)
{
	if (!kcompat_clk_bad(c, func) && c)
		kcompat_clk_off(c, func);
}

static inline int clk_prepare_enable(struct clk *c)
{
	return kcompat_clk_on(c, "clk_prepare_enable");
}

static inline void clk_disable_unprepare(struct clk *c)
{
	kcompat_clk_down(c, "clk_disable_unprepare");
}

static inline int clk_enable(struct clk *c)
{
	return kcompat_clk_on(c, "clk_enable");
}

static inline void clk_disable(struct clk *c)
{
	kcompat_clk_down(c, "clk_disable");
}

static inline unsigned long clk_get_rate(struct clk *c)
{
	if (kcompat_clk_bad(c, "clk_get_rate"))
		return 0;
	return c ? c->rate : 0;
}

#define clk_prepare(c) ((void)(c), 0)
#define clk_unprepare(c) ((void)(c))

#endif /* KCOMPAT_LINUX_CLK_H */
