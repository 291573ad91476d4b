/* SPDX-License-Identifier: MIT */
/*
 * Clocks a board does not model: every clock exists, runs at
 * KCOMPAT_CLK_RATE and enables. The managed getters are managed (a node
 * each, so fault points) and deferrable lookups (devres_should_defer()),
 * as the kernel's are while the clock's provider is missing.
 */
#ifndef KCOMPAT_LINUX_CLK_H
#define KCOMPAT_LINUX_CLK_H

#include <linux/kcompat_site.h>
#include <devres/fault.h>
#include <linux/device.h>

#define KCOMPAT_CLK_RATE 100000000ul

struct clk {
	unsigned long rate;
	int enabled;
};

static inline void kcompat_clk_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static inline struct clk *kcompat_devm_clk(struct device *dev, const char *what,
					   bool optional)
{
	struct clk *c;

	if (devres_should_defer(dev, what))
		return (struct clk *)ERR_PTR(-EPROBE_DEFER);
	(void)optional;
	c = devres_alloc(kcompat_clk_release, sizeof(*c), GFP_KERNEL);
	if (!c)
		return (struct clk *)ERR_PTR(-ENOMEM);
	c->rate = KCOMPAT_CLK_RATE;
	devres_add(dev, c);
	return c;
}

#define devm_clk_get(dev, id)                                                  \
	KCOMPAT_AT(devm_clk_get, kcompat_devm_clk((dev), "devm_clk_get", false))
#define devm_clk_get_optional(dev, id)                                         \
	KCOMPAT_AT(devm_clk_get_optional,                                      \
		   kcompat_devm_clk((dev), "devm_clk_get_optional", true))
#define devm_clk_get_enabled(dev, id)                                          \
	KCOMPAT_AT(devm_clk_get_enabled,                                       \
		   kcompat_devm_clk((dev), "devm_clk_get_enabled", false))
#define devm_clk_get_optional_enabled(dev, id)                                 \
	KCOMPAT_AT(devm_clk_get_optional_enabled,                              \
		   kcompat_devm_clk((dev), "devm_clk_get_optional_enabled",    \
				    true))
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

static inline int clk_prepare_enable(struct clk *c)
{
	if (kcompat_clk_bad(c, "clk_prepare_enable"))
		return -EINVAL;
	if (c)
		c->enabled++;
	return 0;
}

static inline void clk_disable_unprepare(struct clk *c)
{
	if (kcompat_clk_bad(c, "clk_disable_unprepare"))
		return;
	if (c)
		c->enabled--;
}

static inline unsigned long clk_get_rate(struct clk *c)
{
	if (kcompat_clk_bad(c, "clk_get_rate"))
		return 0;
	return c ? c->rate : 0;
}

#define clk_prepare(c) ((void)(c), 0)
#define clk_unprepare(c) ((void)(c))
#define clk_enable clk_prepare_enable
#define clk_disable clk_disable_unprepare

#endif /* KCOMPAT_LINUX_CLK_H */
