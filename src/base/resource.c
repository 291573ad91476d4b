// SPDX-License-Identifier: MIT
/*
 * The resource tree: iomem_resource and ioport_resource, the ranges nested
 * in them, and the busy regions drivers claim.
 *
 * Each level is a singly linked list of siblings sorted by start that never
 * overlap, every range inside its parent. One mutex guards both trees (the
 * kernel's resource_lock); no callback runs under it, and nothing else is
 * taken inside it but a device's devres lock (a managed region released
 * by hand loses its node), so callers may hold their own locks around
 * these calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "resource.h"

static struct resource iomem_root = {
	.start = 0,
	.end = ~(resource_size_t)0,
	.name = "PCI mem",
	.flags = IORESOURCE_MEM,
};

static struct resource ioport_root = {
	.start = 0,
	.end = 0xffff,
	.name = "PCI IO",
	.flags = IORESOURCE_IO,
};

static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;

/* Held across fork(): the child finds it free (docs/fork.md). */
__attribute__((constructor)) static void tree_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_TREE, &tree_lock);
}

/*
 * A busy region this file allocated; only these are ever freed here, so a
 * caller's own IORESOURCE_BUSY range put in with request_resource() is
 * never freed by release_region(). The list is how a release tells them
 * apart without reading past the end of a caller's struct resource.
 */
struct region {
	struct resource res;
	struct region *next, *prev;
	struct devres__owner owner; /* a devm_ request's node */
	int pid;		    /* the process that requested it */
	char name[];
};

static struct region regions = { .next = &regions, .prev = &regions };

/* The devm_request_resource() ranges (resource.h), under the tree's lock. */
static struct devres__owned_res owned_ranges = { .next = &owned_ranges,
						 .prev = &owned_ranges };

struct resource *devres_iomem_resource(void)
{
	return &iomem_root;
}

struct resource *devres_ioport_resource(void)
{
	return &ioport_root;
}

/* The range after @p below @root, depth first; NULL after the last. */
static struct resource *next_res(const struct resource *root,
				 const struct resource *p)
{
	if (p->child)
		return p->child;
	while (!p->sibling && p->parent && p->parent != root)
		p = p->parent;
	return p->parent ? p->sibling : NULL;
}

static bool in_tree(const struct resource *res)
{
	const struct resource *p;

	if (!res->parent)
		return false;
	for (p = res->parent->child; p; p = p->sibling)
		if (p == res)
			return true;
	return false;
}

/*
 * Whether @new is in a tree already: listed by its parent, a root (the
 * tree itself), or @root or a range above it, where it would become its
 * own descendant and every walk of the tree would go round for ever.
 */
static bool placed(const struct resource *new, const struct resource *root)
{
	const struct resource *q;

	if (in_tree(new) || new == &iomem_root || new == &ioport_root)
		return true;
	for (q = root; q; q = q->parent)
		if (q == new)
			return true;
	return false;
}

/* Adds @new as a child of @root; NULL, or what is in the way. */
static struct resource *add_leaf(struct resource *root, struct resource *new)
{
	struct resource **pp, *p;

	if (new->end < new->start || new->start < root->start ||
	    new->end > root->end)
		return root;
	for (pp = &root->child; (p = *pp); pp = &p->sibling) {
		if (p->start > new->end)
			break;
		if (p->end >= new->start)
			return p;
	}
	new->sibling = p;
	new->parent = root;
	*pp = new;
	return NULL;
}

/*
 * Goes down to the deepest range holding all of @new, then puts @new there
 * with the siblings it covers as its children. An equal range is covered,
 * not descended into, so @new goes above it (the kernel's order).
 */
static struct resource *insert_locked(struct resource *parent,
				      struct resource *new)
{
	struct resource **pp, *p, *last;

	if (placed(new, parent))
		return new;
	if (new->end < new->start)
		return parent;
	for (;;) {
		if (new->start < parent->start || new->end > parent->end)
			return parent;
		for (pp = &parent->child; (p = *pp) && p->end < new->start;
		     pp = &p->sibling)
			;
		if (!p || p->start > new->end) {
			new->sibling = p;
			new->parent = parent;
			*pp = new;
			return NULL;
		}
		if (p->start > new->start || p->end < new->end ||
		    (p->start == new->start && p->end == new->end))
			break;
		parent = p;
	}
	for (last = p;; last = last->sibling) {
		if (last->start < new->start || last->end > new->end)
			return last;
		if (!last->sibling || last->sibling->start > new->end)
			break;
	}
	new->parent = parent;
	new->child = p;
	new->sibling = last->sibling;
	last->sibling = NULL;
	for (; p; p = p->sibling)
		p->parent = new;
	*pp = new;
	return NULL;
}

static bool is_region(const struct resource *res);

/*
 * The busy regions of request_region() and the like, and the ranges of
 * devm_request_resource(), that a range leaving the tree with its
 * children had below it: the library's to unlink, not the caller's, they
 * stay in the tree, lifted into its parent. The first one is copied under
 * the tree's lock for the WARN.
 */
struct lifted {
	unsigned int n;
	bool managed; /* the first is a devm_request_resource() range */
	resource_size_t start, end, old_start, old_end;
	char name[48];
	char old_name[48];
};

static struct devres__owned_res *owned_of_locked(const struct resource *old);

/*
 * What the library will unlink itself: a region, or a range of
 * devm_request_resource(), whose node's release finds it through its
 * parent pointer.
 */
static bool libs_own(const struct resource *res)
{
	return is_region(res) || owned_of_locked(res);
}

/*
 * Moves the regions and managed ranges below *@pp (not those inside one,
 * which go with it) onto @list.
 */
static void take_regions(struct resource **pp, struct resource **list)
{
	struct resource *p;

	while ((p = *pp)) {
		if (libs_own(p)) {
			*pp = p->sibling;
			p->sibling = *list;
			*list = p;
			continue;
		}
		take_regions(&p->child, list);
		pp = &p->sibling;
	}
}

/*
 * Puts the regions of @list in @parent, where @old was: inside its range,
 * apart from each other, they fit. Fills @lift.
 */
static void lift_regions(struct resource *parent, struct resource *list,
			 struct lifted *lift)
{
	struct resource *next;

	for (; list; list = next) {
		next = list->sibling;
		if (!lift->n++) {
			lift->managed = !is_region(list);
			lift->start = list->start;
			lift->end = list->end;
			snprintf(lift->name, sizeof(lift->name), "%s",
				 list->name ? list->name : "region");
		}
		list->parent = NULL;
		list->sibling = NULL;
		(void)add_leaf(parent, list);
	}
}

/*
 * Unlinks @old; its children go with it, or take its place. Going with
 * it, a busy region of request_region() and the like would be lost: out
 * of the tree while still claimed, its range free to claim again, its
 * release finding nothing, its parent pointer into the caller's storage
 * of @old (which the kernel's release_and_free_resource() frees). So would
 * a devm_request_resource() range, whose device's release would unlink it
 * through that pointer. Each stays in the tree instead, counted in @lift
 * (NULL only with @keep_children).
 */
static int unlink_locked(struct resource *old, bool keep_children,
			 struct lifted *lift)
{
	struct resource **pp, *c, *regions_below = NULL, *parent;

	if (!old->parent)
		return -EINVAL;
	for (pp = &old->parent->child; *pp && *pp != old; pp = &(*pp)->sibling)
		;
	if (!*pp)
		return -EINVAL;
	parent = old->parent;
	if (!keep_children)
		take_regions(&old->child, &regions_below);
	if (keep_children && old->child) {
		for (c = old->child;; c = c->sibling) {
			c->parent = old->parent;
			if (!c->sibling)
				break;
		}
		c->sibling = old->sibling;
		*pp = old->child;
		old->child = NULL;
	} else {
		*pp = old->sibling;
	}
	old->parent = NULL;
	old->sibling = NULL;
	if (!regions_below)
		return 0;
	lift_regions(parent, regions_below, lift);
	lift->old_start = old->start;
	lift->old_end = old->end;
	snprintf(lift->old_name, sizeof(lift->old_name), "%s",
		 old->name ? old->name : "resource");
	return 0;
}

/* The WARN of a range that left the tree with regions below it. */
static void warn_lifted(const struct lifted *lift, const char *func)
{
	if (!lift->n)
		return;
	devres__warn(NULL, func,
		     "%s [%#llx-%#llx] holds %s %s [%#llx-%#llx]"
		     " (%u in all): left claimed in its parent",
		     lift->old_name, (unsigned long long)lift->old_start,
		     (unsigned long long)lift->old_end,
		     lift->managed ? "managed range" : "busy region",
		     lift->name, (unsigned long long)lift->start,
		     (unsigned long long)lift->end, lift->n);
}

/* A tree call's two resources, and the name it would print. */
static bool tree_args_bad(const struct resource *root,
			  const struct resource *new_res, const char *func)
{
	return devres__arg_bad(NULL, root, func, "resource") ||
	       devres__arg_bad(NULL, new_res, func, "resource") ||
	       devres__opt_bad(NULL, new_res->name, func, "resource name");
}

struct resource *request_resource_conflict(struct resource *root,
					   struct resource *new_res)
{
	struct resource *conflict;

	/* Not NULL, which says "no conflict": the caller must not go on. */
	if (tree_args_bad(root, new_res, __func__))
		return ERR_PTR(-EINVAL);
	pthread_mutex_lock(&tree_lock);
	conflict = placed(new_res, root) ? new_res : add_leaf(root, new_res);
	pthread_mutex_unlock(&tree_lock);
	if (conflict == new_res)
		devres__warn(NULL, __func__, "%s is already in the tree",
			     new_res->name ? new_res->name : "resource");
	return conflict;
}

int request_resource(struct resource *root, struct resource *new_res)
{
	if (tree_args_bad(root, new_res, __func__))
		return -EINVAL;
	return request_resource_conflict(root, new_res) ? -EBUSY : 0;
}

struct resource *insert_resource_conflict(struct resource *parent,
					  struct resource *new_res)
{
	struct resource *conflict;

	if (tree_args_bad(parent, new_res, __func__))
		return ERR_PTR(-EINVAL);
	pthread_mutex_lock(&tree_lock);
	conflict = insert_locked(parent, new_res);
	pthread_mutex_unlock(&tree_lock);
	if (conflict == new_res)
		devres__warn(NULL, __func__, "%s is already in the tree",
			     new_res->name ? new_res->name : "resource");
	return conflict;
}

int insert_resource(struct resource *parent, struct resource *new_res)
{
	if (tree_args_bad(parent, new_res, __func__))
		return -EINVAL;
	return insert_resource_conflict(parent, new_res) ? -EBUSY : 0;
}

/* The region whose range @res is (request_region() and the like), or NULL. */
static struct region *region_of_locked(const struct resource *res)
{
	return is_region(res) ? container_of(res, struct region, res) : NULL;
}

/* @old's devm_request_resource() record, or NULL. */
static struct devres__owned_res *owned_of_locked(const struct resource *old)
{
	struct devres__owned_res *o;

	for (o = owned_ranges.next; o != &owned_ranges; o = o->next)
		if (o->res == old)
			return o;
	return NULL;
}

static void unlist_owned(struct devres__owned_res *o)
{
	o->prev->next = o->next;
	o->next->prev = o->prev;
	o->next = o->prev = NULL;
}

/*
 * A region given to release_resource() or remove_resource() leaves the
 * tree and the list of regions together: left on the list, it was claimed
 * for good in the ledger, release_region() could not find it, and the
 * caller's free() of it (the kernel's release_and_free_resource() does
 * that) left the list pointing into freed memory. A plain region is then
 * the caller's, not freed here, as in the kernel; a managed one is released
 * at the call, its node taken off the device with the hand WARN, as
 * release_region() does with it. So is a devm_request_resource() range,
 * found and unlinked in the same hold: its node is either on its device
 * now or was taken off by its release, which unlinks it in one hold too.
 * @unless_busy: remove_resource_unless_busy(), which leaves a busy range
 * (or one with a busy range under it) in the tree, and its node on its
 * device.
 */
static int unlink_res(struct resource *old, bool keep_children,
		      bool unless_busy, const char *func)
{
	struct devres__hand hand, ohand;
	struct devres__owned_res *o = NULL;
	struct lifted lift = { 0 };
	const struct resource *p;
	struct region *r;
	bool owned_reg = false;
	int ret, pid;

	pthread_mutex_lock(&tree_lock);
	ret = !unless_busy || in_tree(old) ? 0 : -EINVAL;
	if (!ret && unless_busy && (old->flags & IORESOURCE_BUSY))
		ret = -EBUSY;
	for (p = old->child; !ret && unless_busy && p; p = next_res(old, p))
		if (p->flags & IORESOURCE_BUSY)
			ret = -EBUSY;
	r = ret ? NULL : region_of_locked(old);
	pid = r && r->pid != devres__pid_now() ? r->pid : 0;
	if (pid)
		ret = -ECHILD;
	/* Managed, by hand: its node goes, even if the range is not in. */
	if (ret != -EBUSY && !pid) {
		o = owned_of_locked(old);
		if (o) {
			unlist_owned(o);
			/* Frees o (the node's data): not read after. */
			devres__disown(&o->owner, &ohand);
		}
	}
	if (!ret)
		ret = unlink_locked(old, keep_children, &lift);
	if (!ret && r) {
		r->prev->next = r->next;
		r->next->prev = r->prev;
		r->next = r->prev = NULL;
		owned_reg = r->owner.dev != NULL;
		if (owned_reg)
			devres__disown(&r->owner, &hand);
	}
	pthread_mutex_unlock(&tree_lock);
	if (pid)
		devres__warn(NULL, func,
			     "region [%#llx-%#llx] belongs to process %d",
			     (unsigned long long)old->start,
			     (unsigned long long)old->end, pid);
	if (o)
		devres__warn_hand(&ohand, func, "a resource");
	warn_lifted(&lift, func);
	if (!ret && r)
		devres__ledger_add(DL_REGIONS, -1);
	if (owned_reg) {
		devres__warn_hand(&hand, func, "a region");
		free(r);
	}
	return ret;
}

int release_resource(struct resource *old)
{
	if (devres__arg_bad(NULL, old, __func__, "resource"))
		return -EINVAL;
	return unlink_res(old, false, false, __func__);
}

int remove_resource(struct resource *old)
{
	if (devres__arg_bad(NULL, old, __func__, "resource"))
		return -EINVAL;
	return unlink_res(old, true, false, __func__);
}

int remove_resource_unless_busy(struct resource *old)
{
	if (devres__arg_bad(NULL, old, __func__, "resource"))
		return -EINVAL;
	return unlink_res(old, true, true, __func__);
}

struct resource *devres__request_owned(struct resource *root,
				       struct devres__owned_res *o)
{
	struct resource *conflict;
	bool held = false;

	pthread_mutex_lock(&tree_lock);
	conflict = placed(o->res, root) ? o->res : add_leaf(root, o->res);
	if (!conflict) {
		o->next = &owned_ranges;
		o->prev = owned_ranges.prev;
		owned_ranges.prev->next = o;
		owned_ranges.prev = o;
		/* A release_resource() by hand takes the node off here. */
		if (!devres__owner_add(&o->owner)) {
			/* Refused by the device: out again, seen by nobody. */
			unlist_owned(o);
			(void)unlink_locked(o->res, true, NULL);
			conflict = ERR_PTR(-ENODEV);
		}
		held = true;
	}
	pthread_mutex_unlock(&tree_lock);
	if (held)
		devres__log_release();
	else if (conflict == o->res)
		devres__warn(NULL, "request_resource_conflict",
			     "%s is already in the tree",
			     o->res->name ? o->res->name : "resource");
	return conflict;
}

void devres__release_owned(struct devres__owned_res *o)
{
	struct lifted lift = { 0 };

	pthread_mutex_lock(&tree_lock);
	if (o->next) {
		unlist_owned(o);
		(void)unlink_locked(o->res, false, &lift);
	}
	pthread_mutex_unlock(&tree_lock);
	warn_lifted(&lift, "devm_request_resource");
}

struct resource *devres__request_region(struct resource *parent,
					resource_size_t start,
					resource_size_t n, const char *name,
					unsigned long flags,
					const struct devres__owner *owner)
{
	size_t len = name ? strlen(name) + 1 : 0;
	struct resource *conflict, *res;
	struct region *r;

	/* n == 0 at start 0 would otherwise wrap to the whole space. */
	if (n == 0 || start + n - 1 < start)
		return NULL;
	if (devres__should_fail())
		return NULL;
	r = calloc(1, sizeof(*r) + len);
	if (!r)
		return NULL;
	res = &r->res;
	if (name)
		res->name = memcpy(r->name, name, len);
	res->start = start;
	res->end = start + n - 1;
	res->flags = resource_type(parent) | flags | IORESOURCE_BUSY;
	if (owner)
		r->owner = *owner;
	r->pid = devres__pid_now();
	pthread_mutex_lock(&tree_lock);
	for (;;) {
		conflict = add_leaf(parent, res);
		if (!conflict)
			break;
		/* A range that describes, not claims, may hold the region. */
		if (conflict == parent || (conflict->flags & IORESOURCE_BUSY)) {
			pthread_mutex_unlock(&tree_lock);
			free(r);
			return NULL;
		}
		parent = conflict;
	}
	r->next = &regions;
	r->prev = regions.prev;
	regions.prev->next = r;
	regions.prev = r;
	/* A release_region() by hand takes the node off under this lock. */
	if (owner && !devres__owner_add(owner)) {
		/* Refused by the device: out again, seen by nobody. */
		r->prev->next = r->next;
		r->next->prev = r->prev;
		(void)unlink_locked(res, true, NULL);
		pthread_mutex_unlock(&tree_lock);
		devres__log_release();
		free(r);
		return NULL;
	}
	pthread_mutex_unlock(&tree_lock);
	if (owner)
		devres__log_release();
	devres__ledger_add(DL_REGIONS, 1);
	return res;
}

static bool is_region(const struct resource *res)
{
	const struct region *r;

	for (r = regions.next; r != &regions; r = r->next)
		if (&r->res == res)
			return true;
	return false;
}

/*
 * The busy region of request_region() and the like that is exactly
 * [start, end] in @parent, or NULL. The tree's lock held. Any range that
 * holds it and is not a region is gone through, busy or not: a caller's
 * own IORESOURCE_BUSY range put over a region with insert_resource() does
 * not hide it from its owner's release (the kernel's stops there, and the
 * region is never freed).
 */
static struct region *busy_region_locked(const struct resource *parent,
					 resource_size_t start,
					 resource_size_t end)
{
	struct resource *p = parent->child;

	while (p && p->start <= end) {
		if (p->start > start || p->end < end) {
			p = p->sibling;
			continue;
		}
		if (!is_region(p)) {
			p = p->child;
			continue;
		}
		if (p->start != start || p->end != end)
			return NULL;
		return container_of(p, struct region, res);
	}
	return NULL;
}

bool devres__release_region(struct resource *parent, resource_size_t start,
			    resource_size_t n, const void *node,
			    const char *func)
{
	resource_size_t end = start + n - 1;
	struct devres__hand hand;
	bool owned = false;
	struct region *r;
	int saved = errno;

	pthread_mutex_lock(&tree_lock);
	r = busy_region_locked(parent, start, end);
	/* A node gives back only the region it owns: identity. */
	if (!r || (node && !devres__owned_by(&r->owner, node))) {
		pthread_mutex_unlock(&tree_lock);
		return false;
	}
	/* In a child of fork(), the parent's stays claimed. */
	if (r->pid != devres__pid_now()) {
		int pid = r->pid;

		pthread_mutex_unlock(&tree_lock);
		devres__warn(NULL, func,
			     "region [%#llx-%#llx] belongs to process %d",
			     (unsigned long long)start, (unsigned long long)end,
			     pid);
		errno = saved;
		return true;
	}
	/* Whatever was nested in it stays in the tree. */
	unlink_locked(&r->res, true, NULL);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	owned = !node && r->owner.dev;
	if (owned)
		devres__disown(&r->owner, &hand);
	pthread_mutex_unlock(&tree_lock);
	if (owned)
		devres__warn_hand(&hand, func, "a region");
	free(r);
	devres__ledger_add(DL_REGIONS, -1);
	errno = saved;
	return true;
}

bool devres__region_owner(const struct resource *parent, resource_size_t start,
			  resource_size_t n, struct devres__hand *h)
{
	struct region *r;
	bool found;

	pthread_mutex_lock(&tree_lock);
	r = busy_region_locked(parent, start, start + n - 1);
	found = r && r->owner.dev && r->pid == devres__pid_now();
	if (found)
		devres__owner_hand(&r->owner, h);
	pthread_mutex_unlock(&tree_lock);
	return found;
}

bool devres__owned_res_owner(const struct resource *res, struct devres__hand *h)
{
	struct devres__owned_res *o;
	bool found;

	pthread_mutex_lock(&tree_lock);
	o = owned_of_locked(res);
	found = o && o->owner.dev;
	if (found)
		devres__owner_hand(&o->owner, h);
	pthread_mutex_unlock(&tree_lock);
	return found;
}

struct resource *request_region(resource_size_t start, resource_size_t n,
				const char *name)
{
	if (devres__opt_bad(NULL, name, __func__, "name"))
		return NULL;
	return devres__request_region(&ioport_root, start, n, name, 0, NULL);
}

struct resource *request_mem_region(resource_size_t start, resource_size_t n,
				    const char *name)
{
	if (devres__opt_bad(NULL, name, __func__, "name"))
		return NULL;
	return devres__request_region(&iomem_root, start, n, name, 0, NULL);
}

struct resource *request_mem_region_exclusive(resource_size_t start,
					      resource_size_t n,
					      const char *name)
{
	if (devres__opt_bad(NULL, name, __func__, "name"))
		return NULL;
	return devres__request_region(&iomem_root, start, n, name,
				      IORESOURCE_EXCLUSIVE, NULL);
}

static void release_in(struct device *dev, struct resource *root,
		       resource_size_t start, resource_size_t n,
		       const char *func)
{
	int saved = errno;

	if (!devres__release_region(root, start, n, NULL, func))
		devres__warn(dev, func,
			     "no busy region [%#llx-%#llx] to release",
			     (unsigned long long)start,
			     (unsigned long long)(start + n - 1));
	errno = saved;
}

void release_region(resource_size_t start, resource_size_t n)
{
	release_in(NULL, &ioport_root, start, n, __func__);
}

void release_mem_region(resource_size_t start, resource_size_t n)
{
	release_in(NULL, &iomem_root, start, n, __func__);
}

void devres__release_region_as(struct device *dev, bool mem,
			       resource_size_t start, resource_size_t n,
			       const char *func)
{
	release_in(dev, mem ? &iomem_root : &ioport_root, start, n, func);
}

bool iomem_is_exclusive(uint64_t addr)
{
	const struct resource *p;
	bool ret = false;

	pthread_mutex_lock(&tree_lock);
	for (p = iomem_root.child; p && !ret; p = next_res(&iomem_root, p))
		ret = p->start <= addr && addr <= p->end &&
		      (p->flags & IORESOURCE_BUSY) &&
		      (p->flags & IORESOURCE_EXCLUSIVE);
	pthread_mutex_unlock(&tree_lock);
	return ret;
}

/*
 * Printed into memory under the tree's lock, then to @f without it: a
 * FILE may block (a full pipe) or call back into the program (a
 * fopencookie() writer that claims a region), which under the lock would
 * stall every tree call or deadlock on it.
 */
int resource_dump(const struct resource *root, FILE *f)
{
	int width, lines = 0;
	const struct resource *p, *q;
	char *buf = NULL;
	size_t size = 0;
	FILE *mem;

	if (devres__arg_bad(NULL, root, __func__, "resource") ||
	    devres__arg_bad(NULL, f, __func__, "FILE"))
		return -EINVAL;
	mem = open_memstream(&buf, &size);
	if (!mem)
		return -ENOMEM;
	width = root->end < 0x10000 ? 4 : 8;
	pthread_mutex_lock(&tree_lock);
	for (p = root->child; p; p = next_res(root, p)) {
		int depth = 0;

		for (q = p->parent; q && q != root; q = q->parent)
			depth++;
		fprintf(mem, "%*s%0*" PRIx64 "-%0*" PRIx64 " : %s\n", depth * 2,
			"", width, p->start, width, p->end,
			p->name ? p->name : "<BAD>");
		lines++;
	}
	pthread_mutex_unlock(&tree_lock);
	if (fclose(mem)) {
		free(buf);
		return -ENOMEM;
	}
	if (size)
		(void)fwrite(buf, 1, size, f);
	free(buf);
	return lines;
}

/* Where a device's resource goes; interrupts and the rest stay out. */
static struct resource *root_of(const struct resource *r)
{
	switch (resource_type(r)) {
	case IORESOURCE_MEM:
		return r->parent ? r->parent : &iomem_root;
	case IORESOURCE_IO:
		return r->parent ? r->parent : &ioport_root;
	default:
		return NULL;
	}
}

int devres__insert_resources(struct resource *res, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct resource *p = root_of(&res[i]);

		if (p && insert_resource(p, &res[i])) {
			devres__remove_resources(res, i);
			return -EBUSY;
		}
	}
	return 0;
}

void devres__remove_resources(struct resource *res, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (root_of(&res[i]) && res[i].parent)
			remove_resource(&res[i]);
}
