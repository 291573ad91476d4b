/* SPDX-License-Identifier: MIT */
/*
 * Device attributes without sysfs: an in-process registry. A bound
 * device shows the attributes of its driver's dev_groups and of the
 * groups added with devm_device_add_group(s)() (a devres node each, so
 * they go when the binding does); a program or a test reads and writes
 * them by name with kcompat_attr_show() and kcompat_attr_store(), which
 * call the driver's show() and store() as a read or a write of the file
 * /sys/devices/.../<name> would. A named group's attributes are
 * "<group>/<attr>".
 */
#ifndef KCOMPAT_LINUX_SYSFS_H
#define KCOMPAT_LINUX_SYSFS_H

#include <linux/kcompat_site.h>
#include <linux/kcompat_check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <linux/compiler.h>
#include <linux/kstrtox.h>
#include <linux/types.h>

#ifndef PAGE_SIZE
#define PAGE_SIZE 4096UL
#endif

/* A kobject is its device here: kobj_to_dev() gives it back. */
struct kobject;
#define kobj_to_dev(kobj) ((struct device *)(kobj))

struct attribute {
	const char *name;
	umode_t mode;
};

struct device_attribute {
	struct attribute attr;
	ssize_t (*show)(struct device *dev, struct device_attribute *attr,
			char *buf);
	ssize_t (*store)(struct device *dev, struct device_attribute *attr,
			 const char *buf, size_t count);
};

struct attribute_group {
	const char *name;
	umode_t (*is_visible)(struct kobject *kobj, struct attribute *attr,
			      int n);
	struct attribute **attrs;
};

/* clang-format off */
#define __ATTR(_name, _mode, _show, _store)                                    \
	{ .attr = { .name = #_name, .mode = (_mode) },                         \
	  .show = (_show), .store = (_store) }
/* clang-format on */
#define DEVICE_ATTR(_name, _mode, _show, _store)                               \
	struct device_attribute dev_attr_##_name =                             \
		__ATTR(_name, _mode, _show, _store)
#define DEVICE_ATTR_RW(_name)                                                  \
	DEVICE_ATTR(_name, 0644, _name##_show, _name##_store)
#define DEVICE_ATTR_RO(_name) DEVICE_ATTR(_name, 0444, _name##_show, NULL)
#define DEVICE_ATTR_WO(_name) DEVICE_ATTR(_name, 0200, NULL, _name##_store)
#define DEVICE_ATTR_ADMIN_RW(_name)                                            \
	DEVICE_ATTR(_name, 0600, _name##_show, _name##_store)
#define DEVICE_ATTR_ADMIN_RO(_name) DEVICE_ATTR(_name, 0400, _name##_show, NULL)

/* NAME_attrs[] given, NAME_group and NAME_groups[] made. */
#define ATTRIBUTE_GROUPS(_name)                                                \
	static const struct attribute_group _name##_group = {                  \
		.attrs = _name##_attrs,                                        \
	};                                                                     \
	static const struct attribute_group *_name##_groups[] = {              \
		&_name##_group,                                                \
		NULL,                                                          \
	}

/*
 * What a show() writes to its page: at most PAGE_SIZE - 1 characters. A
 * %n in @fmt is refused as the kernel's vsnprintf() refuses it: a WARN,
 * and nothing written.
 */
__attribute__((format(printf, 2, 3))) static inline int
sysfs_emit(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* As the kernel's: a WARN, and nothing written. */
	if (kcompat_bad(buf, "sysfs_emit", "buffer") ||
	    kcompat_bad(fmt, "sysfs_emit", "format") ||
	    devres_format_bad(NULL, "sysfs_emit", fmt))
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(buf, PAGE_SIZE, fmt, ap);
	va_end(ap);
	return n < (int)PAGE_SIZE ? n : (int)PAGE_SIZE - 1;
}

__attribute__((format(printf, 3, 4))) static inline int
sysfs_emit_at(char *buf, int at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (kcompat_bad(buf, "sysfs_emit_at", "buffer") ||
	    kcompat_bad(fmt, "sysfs_emit_at", "format") ||
	    devres_format_bad(NULL, "sysfs_emit_at", fmt))
		return 0;
	/* As the kernel's: a WARN, and nothing written. */
	if (at < 0 || at >= (int)PAGE_SIZE) {
		devres_warn(NULL, "sysfs_emit_at",
			    "offset %d is outside the page of %lu bytes: "
			    "nothing written",
			    at, (unsigned long)PAGE_SIZE);
		return 0;
	}
	va_start(ap, fmt);
	n = vsnprintf(buf + at, PAGE_SIZE - (size_t)at, fmt, ap);
	va_end(ap);
	return n < (int)PAGE_SIZE - at ? n : (int)PAGE_SIZE - at - 1;
}

/*
 * The node of groups added to a device: a list (the caller's, or the one
 * group in the node itself), and whether a devm_ call added it.
 */
struct kcompat_groups {
	const struct attribute_group **list;
	const struct attribute_group *one[2];
	bool managed;
};

/*
 * The node's release: weak, so that one program has one release function,
 * whichever file added the groups. A managed node goes silently; an
 * unmanaged one the driver never removed goes at unbind, with a WARN: in
 * the kernel its files would stay, and their show() outlive the driver's
 * data.
 */
void kcompat_groups_release(struct device *dev, void *res);
__attribute__((weak)) void kcompat_groups_release(struct device *dev, void *res)
{
	const struct kcompat_groups *g = res;

	if (!g->managed)
		devres_warn(dev,
			    g->list == g->one ? "device_add_group"
					      : "device_add_groups",
			    "attribute groups added and never removed: "
			    "removed with the device's resources");
}

static inline int kcompat_groups_match(struct device *dev, void *res,
				       void *data)
{
	const struct kcompat_groups *g = res, *key = data;

	(void)dev;
	if (key->list)
		return g->list == key->list;
	return g->list == g->one && g->one[0] == key->one[0];
}

/* Whether group @a is group @b, or shows the same directory. */
static inline bool kcompat_group_same(const struct attribute_group *a,
				      const struct attribute_group *b)
{
	return a == b || (a->name && b->name && !strcmp(a->name, b->name));
}

/*
 * The match of a node whose groups meet those of @data, the new node: the
 * kernel's sysfs refuses such an add (a directory or a file that exists).
 */
static inline int kcompat_groups_meet(struct device *dev, void *res, void *data)
{
	const struct kcompat_groups *g = res, *key = data;

	(void)dev;
	for (const struct attribute_group *const *a = g->list; *a; a++)
		for (const struct attribute_group *const *b = key->list; *b;
		     b++)
			if (kcompat_group_same(*a, *b))
				return 1;
	return 0;
}

/*
 * Adds @groups, or the one group @grp. A group that is on the device
 * already, by this call or another, is refused as the kernel's sysfs
 * refuses it: two records of one group would leave a removal by hand to
 * take whichever is newest, the managed one of a devm_ call or the
 * driver's own, and the other's WARN at the unbind.
 */
static inline int kcompat_groups_add(struct device *dev,
				     const struct attribute_group **groups,
				     const struct attribute_group *grp,
				     bool managed)
{
	const char *func =
		managed ? (groups ? "devm_device_add_groups"
				  : "devm_device_add_group")
			: (groups ? "device_add_groups" : "device_add_group");
	struct kcompat_groups *p;
	void *got;
	int err;

	/*
	 * A bad device, or a callback of its devres (its lock held up the
	 * stack), is WARNed here, before a node that could not go on.
	 */
	err = devres_may_add(dev, func);
	if (err)
		return err;
	p = devres_alloc(kcompat_groups_release, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->one[0] = grp;
	p->one[1] = NULL;
	p->list = groups ? groups : p->one;
	p->managed = managed;
	if (!p->list[0]) {
		devres_add(dev, p); /* no group: nothing to meet */
		return 0;
	}
	/* Looked up and added under the device's lock: one of two wins. */
	got = devres_get(dev, p, kcompat_groups_meet, p);
	if (got == p)
		return 0;
	if (!got) {
		devres_free(p); /* refused, WARNed: still the caller's */
		return -EINVAL;
	}
	devres_warn(dev, func,
		    "attribute groups %p: a group of them is on the device "
		    "already: refused",
		    groups ? (const void *)groups : (const void *)grp);
	return -EEXIST;
}

/*
 * Takes the groups off @dev, as device_remove_group(s)() does. Groups a
 * devm_ call added are taken too, with the WARN of a managed resource
 * given back by hand: the device's release would have removed them.
 */
static inline void kcompat_groups_remove(struct device *dev,
					 const struct attribute_group **groups,
					 const struct attribute_group *grp,
					 const char *func)
{
	struct kcompat_groups key = { .list = groups, .one = { grp, NULL } };
	struct kcompat_groups *p;

	if (!groups && !grp)
		return; /* as the kernel: nothing to remove */
	/*
	 * One WARN for a bad device, or from a callback of its devres (its
	 * lock held up the stack): not "not added" besides. The groups stay.
	 */
	if (kcompat_bad(dev, func, "device") || devres_may_add(dev, func))
		return;
	p = devres_remove(dev, kcompat_groups_release, kcompat_groups_match,
			  &key);
	if (!p) {
		devres_warn(dev, func,
			    "attribute groups %p were not added to the device: "
			    "nothing removed",
			    groups ? (const void *)groups : (const void *)grp);
		return;
	}
	if (p->managed)
		devres_warn_managed(dev, func,
				    groups ? "attribute groups"
					   : "an attribute group",
				    groups ? "devm_device_add_groups"
					   : "devm_device_add_group",
				    "nothing, the device's release removes "
				    "them");
	devres_free(p);
}

/*
 * devm_device_add_groups() - show @groups on @dev until it is unbound
 * @dev: the device, bound or binding
 * @groups: NULL-terminated; they must outlive the binding (static)
 *
 * Context: probe. Return: 0; -ENOMEM (a fault point); -EINVAL for a bad
 * @dev, or one of the parent process (WARNed); -EDEADLK from a
 * match or for-each callback of @dev, whose devres lock this thread holds
 * (WARNed, nothing added; so are device_add_group(s)()); -EEXIST when one
 * of @groups, or a group of the same name,
 * is on @dev already, by this call or device_add_group(s)() (WARNed, as
 * the kernel's sysfs refuses it).
 */
static inline int devm_device_add_groups(struct device *dev,
					 const struct attribute_group **groups)
{
	/* NULL: no groups, as the kernel's. */
	if (groups && kcompat_bad(groups, "devm_device_add_groups", "groups"))
		return -EINVAL;
	return kcompat_groups_add(dev, groups, NULL, true);
}

/* One group: a list of one, kept in the node itself. */
static inline int devm_device_add_group(struct device *dev,
					const struct attribute_group *grp)
{
	if (kcompat_bad(grp, "devm_device_add_group", "attribute group"))
		return -EINVAL;
	return kcompat_groups_add(dev, NULL, grp, true);
}

/*
 * The unmanaged forms: removed by hand with device_remove_group(s)(); one
 * the driver forgets goes with the binding's resources, with a WARN.
 */
static inline int device_add_groups(struct device *dev,
				    const struct attribute_group **groups)
{
	if (groups && kcompat_bad(groups, "device_add_groups", "groups"))
		return -EINVAL;
	return kcompat_groups_add(dev, groups, NULL, false);
}

static inline int device_add_group(struct device *dev,
				   const struct attribute_group *grp)
{
	if (kcompat_bad(grp, "device_add_group", "attribute group"))
		return -EINVAL;
	return kcompat_groups_add(dev, NULL, grp, false);
}

static inline void device_remove_groups(struct device *dev,
					const struct attribute_group **groups)
{
	kcompat_groups_remove(dev, groups, NULL, __func__);
}

static inline void device_remove_group(struct device *dev,
				       const struct attribute_group *grp)
{
	kcompat_groups_remove(dev, NULL, grp, __func__);
}

/* The attribute @name among @groups, if shown; its mode in @ret_mode. */
static inline struct device_attribute *
kcompat_attr_in(struct device *dev, const struct attribute_group *const *groups,
		const char *name, umode_t *ret_mode)
{
	for (; groups && *groups; groups++) {
		const struct attribute_group *g = *groups;
		const char *n = name;
		size_t len = g->name ? strlen(g->name) : 0;

		if (len && (strncmp(n, g->name, len) || n[len] != '/'))
			continue;
		if (len)
			n += len + 1;
		for (int i = 0; g->attrs && g->attrs[i]; i++) {
			struct attribute *a = g->attrs[i];
			umode_t mode = a->mode;

			if (strcmp(a->name, n))
				continue;
			if (g->is_visible)
				mode = g->is_visible((struct kobject *)dev, a,
						     i);
			if (!mode)
				return NULL;
			*ret_mode = mode;
			return (struct device_attribute *)a;
		}
	}
	return NULL;
}

struct kcompat_attr_search {
	const char *name;
	struct device_attribute *found;
	umode_t mode;
};

static inline void kcompat_attr_visit(struct device *dev, void *res, void *data)
{
	struct kcompat_attr_search *s = data;

	if (!s->found)
		s->found = kcompat_attr_in(
			dev, ((const struct kcompat_groups *)res)->list,
			s->name, &s->mode);
}

/*
 * kcompat_attr_find() - the attribute a bound device shows as @name
 * Looks in the driver's dev_groups, then in the groups added to @dev.
 */
static inline struct device_attribute *
kcompat_attr_find(struct device *dev, const char *name, umode_t *ret_mode)
{
	struct kcompat_attr_search s = { .name = name };

	/* Bound, and held so by the caller: the driver stays. */
	if (!dev->driver)
		return NULL;
	s.found = kcompat_attr_in(dev, dev->driver->dev_groups, name, &s.mode);
	if (!s.found)
		devres_for_each_res(dev, kcompat_groups_release, NULL, NULL,
				    kcompat_attr_visit, &s);
	if (s.found)
		*ret_mode = s.mode;
	return s.found;
}

/*
 * kcompat_attr_show() - read attribute @name of bound device @dev
 * @buf: PAGE_SIZE bytes; the text, NUL-terminated
 *
 * The binding is held while show() runs (device_bound_get()), as sysfs
 * holds the file: an unbind waits for it before the driver's remove, and
 * a read once the unbind began finds nothing. A reference to @dev is held
 * too, as an open file holds its kobject: a show() that puts the last
 * reference of @dev leaves its release to the end of this call.
 *
 * Context: a thread that may sleep.
 * Return: the length read, or what show() returned; -ENOENT when @dev
 * shows no such attribute (or is not bound, or is being probed or
 * unbound); -EACCES when it is not readable; -EINVAL for a bad @dev,
 * @name or @buf.
 */
static inline ssize_t kcompat_attr_show(struct device *dev, const char *name,
					char *buf)
{
	umode_t mode;
	struct device_attribute *a;
	ssize_t n;
	int err;

	if (kcompat_kstr_bad(name) || kcompat_kstr_bad(buf))
		return -EINVAL;
	err = device_bound_get(dev);
	if (err)
		return err == -ENODEV ? -ENOENT : err;
	/*
	 * And a reference, as an open sysfs file holds its kobject: a show()
	 * or store() that puts the device's last reference does not free it
	 * under the put of the binding below; the release waits for our put.
	 */
	(void)get_device(dev);
	a = kcompat_attr_find(dev, name, &mode);
	if (!a)
		n = -ENOENT;
	else if (!(mode & 0444) || !a->show)
		n = -EACCES;
	else {
		memset(buf, 0, PAGE_SIZE);
		n = a->show(dev, a, buf);
		/*
		 * As sysfs: a count of the whole page or more is the kernel's
		 * "returned bad count", and cut. The text ends at its count,
		 * whatever show() wrote past it (sysfs copies the count).
		 */
		if (n >= (ssize_t)PAGE_SIZE) {
			devres_warn(dev, "kcompat_attr_show",
				    "attribute %s: show() returned %zd bytes "
				    "for a page of %lu: cut to %lu",
				    name, n, (unsigned long)PAGE_SIZE,
				    (unsigned long)PAGE_SIZE - 1);
			n = (ssize_t)PAGE_SIZE - 1;
		}
		if (n >= 0)
			buf[n] = '\0';
	}
	device_bound_put(dev);
	put_device(dev);
	return n;
}

/*
 * kcompat_attr_store() - write @count bytes of @buf to attribute @name
 *
 * The binding is held while store() runs, as for kcompat_attr_show().
 *
 * Context: a thread that may sleep.
 * Return: what store() returned (the bytes taken, or an errno);
 * -ENOENT when @dev shows no such attribute (or is not bound, or is being
 * probed or unbound); -EACCES when it is not writable; -EINVAL for
 * @count of PAGE_SIZE or more, or a bad @dev, @name or @buf.
 */
static inline ssize_t kcompat_attr_store(struct device *dev, const char *name,
					 const char *buf, size_t count)
{
	char page[PAGE_SIZE];
	umode_t mode;
	struct device_attribute *a;
	ssize_t n;
	int err;

	if (kcompat_kstr_bad(name) || kcompat_kstr_bad(buf))
		return -EINVAL;
	if (count >= PAGE_SIZE)
		return -EINVAL;
	err = device_bound_get(dev);
	if (err)
		return err == -ENODEV ? -ENOENT : err;
	/*
	 * And a reference, as an open sysfs file holds its kobject: a show()
	 * or store() that puts the device's last reference does not free it
	 * under the put of the binding below; the release waits for our put.
	 */
	(void)get_device(dev);
	a = kcompat_attr_find(dev, name, &mode);
	if (!a)
		n = -ENOENT;
	else if (!(mode & 0222) || !a->store)
		n = -EACCES;
	else {
		/* As sysfs does: the driver sees a NUL-terminated copy. */
		memcpy(page, buf, count);
		page[count] = '\0';
		n = a->store(dev, a, page, count);
	}
	device_bound_put(dev);
	put_device(dev);
	return n;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_device_add_group(dev, grp)                                        \
	KCOMPAT_AT(devm_device_add_group, devm_device_add_group(dev, grp))
#define devm_device_add_groups(dev, groups)                                    \
	KCOMPAT_AT(devm_device_add_groups, devm_device_add_groups(dev, groups))

#endif /* KCOMPAT_LINUX_SYSFS_H */
