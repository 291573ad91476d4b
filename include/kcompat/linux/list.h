/* SPDX-License-Identifier: MIT */
/* Doubly linked circular lists with a head, the kernel's list_head API. */
#ifndef KCOMPAT_LINUX_LIST_H
#define KCOMPAT_LINUX_LIST_H

#include <stdbool.h>
#include <devres/types.h>

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name)                                                   \
	{                                                                      \
		&(name), &(name)                                               \
	}
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

/*
 * An entry or head no object can be at (NULL, the first page, an
 * ERR_PTR()): the kernel would oops; here one compare per pointer, one
 * WARN, and the list left as it is. A pointer to a list that is corrupt
 * is not found: the kernel's list debugging is not copied.
 */
static inline bool kcompat_list_bad(const struct list_head *a,
				    const struct list_head *b, const char *func)
{
	if (!devres_ptr_bad(a) && !devres_ptr_bad(b))
		return false;
	devres_warn_bad_arg(func, "list_head", devres_ptr_bad(a) ? a : b);
	return true;
}

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	if (kcompat_list_bad(l, l, "INIT_LIST_HEAD"))
		return;
	l->next = l;
	l->prev = l;
}

static inline void kcompat_list_link(struct list_head *n,
				     struct list_head *prev,
				     struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct list_head *n, struct list_head *head)
{
	if (kcompat_list_bad(n, head, "list_add"))
		return;
	kcompat_list_link(n, head, head->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	if (kcompat_list_bad(n, head, "list_add_tail"))
		return;
	kcompat_list_link(n, head->prev, head);
}

static inline void list_del(struct list_head *e)
{
	if (kcompat_list_bad(e, e, "list_del"))
		return;
	e->next->prev = e->prev;
	e->prev->next = e->next;
	e->next = NULL;
	e->prev = NULL;
}

static inline void list_del_init(struct list_head *e)
{
	if (kcompat_list_bad(e, e, "list_del_init"))
		return;
	e->next->prev = e->prev;
	e->prev->next = e->next;
	INIT_LIST_HEAD(e);
}

/* A bad head: empty, so that a walk over it does nothing. */
static inline bool list_empty(const struct list_head *head)
{
	if (kcompat_list_bad(head, head, "list_empty"))
		return true;
	return head->next == head;
}

static inline bool list_is_last(const struct list_head *e,
				const struct list_head *head)
{
	if (kcompat_list_bad(e, head, "list_is_last"))
		return false;
	return e->next == head;
}

static inline void list_move_tail(struct list_head *e, struct list_head *head)
{
	if (kcompat_list_bad(e, head, "list_move_tail"))
		return;
	list_del_init(e);
	list_add_tail(e, head);
}

static inline void list_move(struct list_head *e, struct list_head *head)
{
	if (kcompat_list_bad(e, head, "list_move"))
		return;
	list_del_init(e);
	list_add(e, head);
}

static inline void list_splice_tail_init(struct list_head *list,
					 struct list_head *head)
{
	if (kcompat_list_bad(list, head, "list_splice_tail_init") ||
	    list_empty(list))
		return;
	list->next->prev = head->prev;
	head->prev->next = list->next;
	list->prev->next = head;
	head->prev = list->prev;
	INIT_LIST_HEAD(list);
}

#define list_entry(p, type, member) container_of(p, type, member)
#define list_first_entry(head, type, member)                                   \
	list_entry((head)->next, type, member)
#define list_last_entry(head, type, member)                                    \
	list_entry((head)->prev, type, member)
#define list_first_entry_or_null(head, type, member)                           \
	(list_empty(head) ? NULL : list_first_entry(head, type, member))
#define list_next_entry(pos, member)                                           \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_for_each(pos, head)                                               \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define list_for_each_safe(pos, n, head)                                       \
	for ((pos) = (head)->next, (n) = (pos)->next; (pos) != (head);         \
	     (pos) = (n), (n) = (pos)->next)
#define list_for_each_entry(pos, head, member)                                 \
	for ((pos) = list_first_entry(head, __typeof__(*(pos)), member);       \
	     &(pos)->member != (head); (pos) = list_next_entry(pos, member))
#define list_for_each_entry_safe(pos, n, head, member)                         \
	for ((pos) = list_first_entry(head, __typeof__(*(pos)), member),       \
	    (n) = list_next_entry(pos, member);                                \
	     &(pos)->member != (head);                                         \
	     (pos) = (n), (n) = list_next_entry(n, member))

#endif /* KCOMPAT_LINUX_LIST_H */
