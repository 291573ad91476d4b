/* SPDX-License-Identifier: MIT */
/*
 * A small rtc framework: the kernel's devm_rtc_allocate_device() and
 * devm_rtc_register_device(), and what user space would do through
 * /dev/rtcN as calls (rtc_read_time(), rtc_set_time()). Built as
 * hw_random.h is: a registration is a kmalloc() record and a fault point
 * of its own.
 */
#ifndef KCOMPAT_LINUX_RTC_H
#define KCOMPAT_LINUX_RTC_H

#include <linux/kcompat_site.h>
#include <linux/kcompat_reg.h>
#include <time.h>
#include <devres/fault.h>
#include <linux/device.h>
#include <linux/interrupt.h>
#include <linux/slab.h>
#include <linux/time64.h>

struct rtc_time {
	int tm_sec;
	int tm_min;
	int tm_hour;
	int tm_mday;
	int tm_mon;
	int tm_year;
	int tm_wday;
	int tm_yday;
	int tm_isdst;
};

struct rtc_wkalrm {
	unsigned char enabled;
	unsigned char pending;
	struct rtc_time time;
};

struct rtc_class_ops {
	int (*read_time)(struct device *dev, struct rtc_time *tm);
	int (*set_time)(struct device *dev, struct rtc_time *tm);
	int (*read_alarm)(struct device *dev, struct rtc_wkalrm *alrm);
	int (*set_alarm)(struct device *dev, struct rtc_wkalrm *alrm);
	int (*alarm_irq_enable)(struct device *dev, unsigned int enabled);
};

struct rtc_device {
	struct device *parent;
	const struct rtc_class_ops *ops;
	time64_t range_min;
	time64_t range_max;
	unsigned long irq_events;

	/* private: */
	void *reg;
};

#define RTC_TIMESTAMP_BEGIN_2000 946684800LL
#define RTC_TIMESTAMP_END_2099 4102444799LL
#define RTC_IRQF 0x80
#define RTC_AF 0x20
#define RTC_UF 0x10

static inline void rtc_time64_to_tm(time64_t t, struct rtc_time *tm)
{
	time_t tt = (time_t)t;
	struct tm g;

	if (kcompat_bad(tm, "rtc_time64_to_tm", "rtc_time"))
		return;
	gmtime_r(&tt, &g);
	*tm = (struct rtc_time){ g.tm_sec,  g.tm_min,  g.tm_hour,
				 g.tm_mday, g.tm_mon,  g.tm_year,
				 g.tm_wday, g.tm_yday, 0 };
}

static inline time64_t rtc_tm_to_time64(const struct rtc_time *tm)
{
	struct tm g;

	if (kcompat_bad(tm, "rtc_tm_to_time64", "rtc_time"))
		return 0;
	g = (struct tm){ .tm_sec = tm->tm_sec,
			 .tm_min = tm->tm_min,
			 .tm_hour = tm->tm_hour,
			 .tm_mday = tm->tm_mday,
			 .tm_mon = tm->tm_mon,
			 .tm_year = tm->tm_year };
	return (time64_t)timegm(&g);
}

static inline int rtc_valid_tm(const struct rtc_time *tm)
{
	if (kcompat_bad(tm, "rtc_valid_tm", "rtc_time"))
		return -EINVAL;
	return tm->tm_year < 70 || tm->tm_mon < 0 || tm->tm_mon > 11 ||
			       tm->tm_mday < 1 || tm->tm_mday > 31 ||
			       tm->tm_hour < 0 || tm->tm_hour > 23 ||
			       tm->tm_min < 0 || tm->tm_min > 59 ||
			       tm->tm_sec < 0 || tm->tm_sec > 59
		       ? -EINVAL
		       : 0;
}

/*
 * Managed: freed with the binding. Return: the device, or ERR_PTR(-ENOMEM);
 * ERR_PTR(-EDEADLK) from a match or for-each callback of @dev (a WARN).
 */
static inline struct rtc_device *devm_rtc_allocate_device(struct device *dev)
{
	struct rtc_device *rtc;
	int err = devres_may_add(dev, "devm_rtc_allocate_device");

	/* Its error, not the -ENOMEM of a devm_kzalloc() refused. */
	if (err)
		return (struct rtc_device *)ERR_PTR(err);
	rtc = devm_kzalloc(dev, sizeof(*rtc), GFP_KERNEL);
	if (!rtc)
		return (struct rtc_device *)ERR_PTR(-ENOMEM);
	rtc->parent = dev;
	return rtc;
}

/*
 * The release of devm_rtc_register_device()'s node: the registration
 * taken off, once the read_time() or set_time() running on it returned
 * (<linux/kcompat_reg.h>); from one of them (a method that releases
 * its own parent), one WARN, and that call's end frees the record.
 */
static inline void kcompat_rtc_release(struct device *dev, void *res)
{
	struct rtc_device *rtc = *(struct rtc_device **)res;
	struct kcompat_reg *r;
	bool own = false;

	pthread_mutex_lock(&kcompat_reg_lock);
	/* rtc->reg stays, taken back, until the last put. */
	r = kcompat_reg_at(&rtc->reg);
	if (r)
		own = kcompat_reg_wait_calls(r, "devm_rtc_register_device");
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (!r)
		return;
	if (own && r->looped)
		devres_warn(dev, "devm_rtc_register_device",
			    "rtc %p: a method call in progress waits for this "
			    "thread (%s): not waited for; its record goes when "
			    "the method returns",
			    (void *)rtc, devres_wait_loop());
	else if (own)
		devres_warn(dev, "devm_rtc_register_device",
			    "rtc %p taken back from its own method: its record "
			    "goes when the method returns",
			    (void *)rtc);
	kcompat_reg_put(r);
}

/*
 * devm_rtc_register_device() - register @rtc until its parent unbinds
 * Context: may sleep (a release of its registration in progress on
 * another thread ends first). Return: 0; -EINVAL without ops; -EBUSY
 * when it is registered already (a WARN), or (a WARN) from a call that
 * release waits for; -ENOMEM; -EDEADLK (a WARN, nothing registered) from
 * a match or for-each callback of its parent, whose node it would be.
 */
static inline int devm_rtc_register_device(struct rtc_device *rtc)
{
	struct kcompat_reg *r, cur = { 0 };
	struct rtc_device **p;
	bool busy;
	int ret;

	if (kcompat_bad(rtc, "devm_rtc_register_device", "rtc device"))
		return -EINVAL;
	if (!rtc->ops)
		return -EINVAL;
	/* Where its node would be refused, nothing is registered. */
	ret = devres_may_add(rtc->parent, "devm_rtc_register_device");
	if (ret)
		return ret;
	if (devres_should_fail(rtc->parent, "devm_rtc_register_device"))
		return -ENOMEM;
	p = devres_alloc(kcompat_rtc_release, sizeof(struct rtc_device *),
			 GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	r = kcompat_reg_alloc(sizeof(*r), NULL, &rtc->reg);
	if (!r) {
		devres_free(p);
		return -ENOMEM;
	}
	*p = rtc;
	/*
	 * Registered by another thread meanwhile: as if it came first. A
	 * release of its registration in progress ends first.
	 */
	pthread_mutex_lock(&kcompat_reg_lock);
	ret = kcompat_reg_wait_gone(&rtc->reg, "devm_rtc_register_device");
	if (ret) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		kfree(r);
		devres_free(p);
		kcompat_reg_gone_refused(
			rtc->parent, "devm_rtc_register_device", "rtc", ret);
		return -EBUSY;
	}
	busy = rtc->reg;
	if (busy)
		cur = *(struct kcompat_reg *)rtc->reg;
	else
		rtc->reg = r;
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (busy) {
		kfree(r);
		devres_free(p);
		if (!kcompat_reg_foreign(&cur, "devm_rtc_register_device",
					 "rtc"))
			devres_warn(rtc->parent, "devm_rtc_register_device",
				    "rtc %p is registered already: refused",
				    (void *)rtc);
		return -EBUSY;
	}
	devres_add(rtc->parent, p);
	return 0;
}

/*
 * The names of 4.13 to 5.10, which were managed already: the registration
 * went with the device devm_rtc_allocate_device() made.
 */
#define rtc_register_device devm_rtc_register_device

/*
 * devm_rtc_device_register() - allocate and register in one call (the
 * older form, still in the kernel). Return: the device, or an ERR_PTR:
 * ERR_PTR(-EDEADLK) (a WARN, nothing made) from a match or for-each
 * callback of @dev.
 */
static inline struct rtc_device *
devm_rtc_device_register(struct device *dev, const char *name,
			 const struct rtc_class_ops *ops, struct module *owner)
{
	struct rtc_device *rtc;
	int ret;

	(void)name;
	(void)owner;
	if (kcompat_bad(ops, "devm_rtc_device_register", "rtc ops"))
		return (struct rtc_device *)ERR_PTR(-EINVAL);
	ret = devres_may_add(dev, "devm_rtc_device_register");
	if (ret)
		return (struct rtc_device *)ERR_PTR(ret);
	rtc = devm_rtc_allocate_device(dev);
	if (IS_ERR(rtc))
		return rtc;
	rtc->ops = ops;
	ret = devm_rtc_register_device(rtc);
	return ret ? (struct rtc_device *)ERR_PTR(ret) : rtc;
}

/* A time rtc_set_time() refuses: not valid, or out of @rtc's range. */
static inline bool kcompat_rtc_time_bad(const struct rtc_device *rtc,
					const struct rtc_time *tm)
{
	time64_t t = rtc_tm_to_time64(tm);

	return rtc_valid_tm(tm) || t < rtc->range_min ||
	       (rtc->range_max && t > rtc->range_max);
}

/* A method of the rtc of a call, run on the call's registration. */
struct kcompat_rtc_method {
	struct rtc_device *rtc;
	struct rtc_time *tm;
	int (*method)(struct device *dev, struct rtc_time *tm);
};

static inline int kcompat_rtc_thunk(void *arg)
{
	struct kcompat_rtc_method *m = (struct kcompat_rtc_method *)arg;

	return m->method(m->rtc->parent, m->tm);
}

/*
 * @func's call of @rtc's read_time() or set_time() (@set), on the
 * registration found under the lock (kcompat_reg_get()): its release on
 * another thread waits for it, and the calls run one at a time, as the
 * kernel's under rtc->ops_lock (-EDEADLK, one WARN, for a call whose turn
 * would never come: kcompat_reg_turn()). @rtc is
 * not read once the method returned: a method that released its parent
 * freed it.
 */
static inline int kcompat_rtc_call(struct rtc_device *rtc, struct rtc_time *tm,
				   bool set, const char *func)
{
	struct kcompat_rtc_method m = { rtc, tm, NULL };
	struct device *parent = rtc->parent;
	struct kcompat_reg *r;
	int ret;

	r = kcompat_reg_get(&rtc->reg, func, "rtc");
	if (IS_ERR_OR_NULL(r))
		return r ? (int)PTR_ERR(r) : -ENODEV;
	m.method = set ? rtc->ops->set_time : rtc->ops->read_time;
	if (!m.method)
		ret = -ENODEV;
	else if (set && kcompat_rtc_time_bad(rtc, tm))
		ret = -EINVAL;
	else
		ret = kcompat_method_ret(
			parent, func, "rtc", set ? "set_time" : "read_time",
			kcompat_reg_call(r, func, kcompat_rtc_thunk, &m));
	kcompat_reg_put(r);
	if (!ret && !set)
		ret = rtc_valid_tm(tm);
	return ret;
}

/*
 * What an ioctl(RTC_RD_TIME) does. read_time() and set_time() return 0 or
 * a negative errno; any other value is taken as -EINVAL with a WARN
 * (kcompat_method_ret()). Context: may sleep.
 */
static inline int rtc_read_time(struct rtc_device *rtc, struct rtc_time *tm)
{
	if (kcompat_bad(rtc, "rtc_read_time", "rtc device") ||
	    kcompat_bad(tm, "rtc_read_time", "rtc_time"))
		return -EINVAL;
	return kcompat_rtc_call(rtc, tm, false, "rtc_read_time");
}

/* What an ioctl(RTC_SET_TIME) does. */
static inline int rtc_set_time(struct rtc_device *rtc, struct rtc_time *tm)
{
	if (kcompat_bad(rtc, "rtc_set_time", "rtc device") ||
	    kcompat_bad(tm, "rtc_set_time", "rtc_time"))
		return -EINVAL;
	return kcompat_rtc_call(rtc, tm, true, "rtc_set_time");
}

static inline void rtc_update_irq(struct rtc_device *rtc, unsigned long num,
				  unsigned long events)
{
	(void)events;
	if (kcompat_bad(rtc, "rtc_update_irq", "rtc device"))
		return;
	__atomic_add_fetch(&rtc->irq_events, num, __ATOMIC_RELAXED);
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_rtc_allocate_device(dev)                                          \
	KCOMPAT_AT(devm_rtc_allocate_device, devm_rtc_allocate_device(dev))
#define devm_rtc_register_device(rtc)                                          \
	KCOMPAT_AT(devm_rtc_register_device, devm_rtc_register_device(rtc))
#define devm_rtc_device_register(dev, name, ops, owner)                        \
	KCOMPAT_AT(devm_rtc_device_register,                                   \
		   devm_rtc_device_register(dev, name, ops, owner))

#endif /* KCOMPAT_LINUX_RTC_H */
