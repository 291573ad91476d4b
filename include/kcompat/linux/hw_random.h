/* SPDX-License-Identifier: MIT */
/*
 * A small hwrng framework: the kernel's registration API, devres-managed,
 * and reads for the program (what /dev/hwrng would do). It doubles as the
 * example of how to bring a framework over: a registration is a kmalloc()
 * record (so a forgotten unregister is a leak the ledger sees), the
 * registration is a fault point of its own (devres_should_fail()), and the
 * managed form is a devres node whose release unregisters.
 */
#ifndef KCOMPAT_LINUX_HW_RANDOM_H
#define KCOMPAT_LINUX_HW_RANDOM_H

#include <linux/kcompat_site.h>
#include <linux/kcompat_check.h>
#include <pthread.h>
#include <string.h>
#include <devres/fault.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/list.h>
#include <linux/slab.h>

struct hwrng;

/* The framework's record of one registered rng, on kcompat_hwrngs. */
struct kcompat_hwrng_reg {
	struct list_head node;
	struct hwrng *rng;
};

struct hwrng {
	const char *name;
	int (*init)(struct hwrng *rng);
	void (*cleanup)(struct hwrng *rng);
	int (*data_present)(struct hwrng *rng, int wait);
	int (*data_read)(struct hwrng *rng, u32 *data);
	int (*read)(struct hwrng *rng, void *data, size_t max, bool wait);
	unsigned long priv;
	unsigned short quality;

	/* private: */
	struct kcompat_hwrng_reg *reg;
};

__attribute__((weak)) struct list_head kcompat_hwrngs = { &kcompat_hwrngs,
							  &kcompat_hwrngs };
__attribute__((weak))
pthread_mutex_t kcompat_hwrng_lock = PTHREAD_MUTEX_INITIALIZER;

static inline struct hwrng *kcompat_hwrng_find_locked(const char *name)
{
	struct kcompat_hwrng_reg *r;

	list_for_each_entry(r, &kcompat_hwrngs,
			    node) if (strcmp(r->rng->name, name) ==
				      0) return r->rng;
	return NULL;
}

/*
 * hwrng_register() - make @rng a source of randomness
 * Return: 0; -EINVAL without a name or read method; -EEXIST for a name
 * taken; -ENOMEM; what @rng's init returned.
 */
static inline int hwrng_register(struct hwrng *rng)
{
	struct kcompat_hwrng_reg *r;
	int ret = 0;

	if (kcompat_bad(rng, "hwrng_register", "hwrng"))
		return -EINVAL;
	if (!rng->name || (!rng->read && !rng->data_read))
		return -EINVAL;
	if (devres_should_fail(NULL, "hwrng_register"))
		return -ENOMEM;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->rng = rng;
	pthread_mutex_lock(&kcompat_hwrng_lock);
	if (kcompat_hwrng_find_locked(rng->name))
		ret = -EEXIST;
	else if (rng->init)
		ret = rng->init(rng);
	if (!ret) {
		rng->reg = r;
		list_add_tail(&r->node, &kcompat_hwrngs);
	}
	pthread_mutex_unlock(&kcompat_hwrng_lock);
	if (ret)
		kfree(r);
	return ret;
}

static inline void hwrng_unregister(struct hwrng *rng)
{
	struct kcompat_hwrng_reg *r;

	if (kcompat_bad(rng, "hwrng_unregister", "hwrng"))
		return;
	pthread_mutex_lock(&kcompat_hwrng_lock);
	r = rng->reg;
	if (r) {
		list_del(&r->node);
		rng->reg = NULL;
		if (rng->cleanup)
			rng->cleanup(rng);
	}
	pthread_mutex_unlock(&kcompat_hwrng_lock);
	kfree(r);
}

static inline void kcompat_hwrng_release(struct device *dev, void *res)
{
	(void)dev;
	hwrng_unregister(*(struct hwrng **)res);
}

static inline int devm_hwrng_register(struct device *dev, struct hwrng *rng)
{
	struct hwrng **p;
	int ret;

	/* Before the registration: devres_add() of a bad device keeps none. */
	if (kcompat_bad(dev, "devm_hwrng_register", "device") ||
	    kcompat_bad(rng, "devm_hwrng_register", "hwrng"))
		return -EINVAL;
	p = devres_alloc(kcompat_hwrng_release, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = hwrng_register(rng);
	if (ret) {
		devres_free(p);
		return ret;
	}
	*p = rng;
	devres_add(dev, p);
	return 0;
}

static inline int kcompat_hwrng_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(struct hwrng **)res == data;
}

static inline void devm_hwrng_unregister(struct device *dev, struct hwrng *rng)
{
	if (kcompat_bad(rng, "devm_hwrng_unregister", "hwrng"))
		return;
	devres_release(dev, kcompat_hwrng_release, kcompat_hwrng_match, rng);
}

/*
 * hwrng_read() - read from the registered rng called @name (what a reader
 * of /dev/hwrng gets): the bytes read, -ENODEV when there is none, or
 * the driver's error.
 */
static inline int hwrng_read(const char *name, void *buf, size_t max, bool wait)
{
	struct hwrng *rng;
	int ret = -ENODEV;
	u32 word;

	if (kcompat_bad(name, "hwrng_read", "name") ||
	    kcompat_bad(buf, "hwrng_read", "buffer"))
		return -EINVAL;
	pthread_mutex_lock(&kcompat_hwrng_lock);
	rng = kcompat_hwrng_find_locked(name);
	if (rng && rng->read) {
		ret = rng->read(rng, buf, max, wait);
	} else if (rng) {
		ret = rng->data_present ? rng->data_present(rng, wait) : 1;
		if (ret > 0) {
			ret = rng->data_read(rng, &word);
			if (ret > 0) {
				ret = min_t(int, ret, (int)max);
				memcpy(buf, &word, (size_t)ret);
			}
		}
	}
	pthread_mutex_unlock(&kcompat_hwrng_lock);
	return ret;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define hwrng_register(rng) KCOMPAT_AT(hwrng_register, hwrng_register(rng))
#define devm_hwrng_register(dev, rng)                                          \
	KCOMPAT_AT(devm_hwrng_register, devm_hwrng_register(dev, rng))

#endif /* KCOMPAT_LINUX_HW_RANDOM_H */
