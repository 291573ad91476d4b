// SPDX-License-Identifier: MIT
/*
 * The model's operations: each decodes its argument bytes against the
 * current state (so every byte string is a program), runs the call on the
 * library, then updates the model with what the call should have done and
 * checks the call's own results. What every operation must leave behind
 * (release log, WARNs, stats, ledger) is compared by model.c afterwards.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model-internal.h"

static int group_ids[4];
static int unknown_id;

/* Patterns: a tag identifies what the bytes of an allocation should be. */

static uint64_t next_tag(struct run *r)
{
	return (++r->serial * 0x9e3779b97f4a7c15ull) | 1;
}

static uint8_t pattern(uint64_t tag, size_t i)
{
	return (uint8_t)((tag >> ((i & 7) * 8)) ^ i);
}

static void fill(void *p, size_t size, uint64_t tag)
{
	for (size_t i = 0; i < size; i++)
		((uint8_t *)p)[i] = pattern(tag, i);
}

static bool intact(const void *p, size_t size, uint64_t tag)
{
	for (size_t i = 0; i < size; i++)
		if (((const uint8_t *)p)[i] != pattern(tag, i))
			return false;
	return true;
}

static bool zeroed(const void *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (((const uint8_t *)p)[i])
			return false;
	return true;
}

static uint64_t read_tag(const void *res)
{
	uint64_t t;

	memcpy(&t, res, sizeof(t));
	return t;
}
/* The library side's callbacks: they log what they were called with. */

static int log_act(enum kind k, void *ptr, uint64_t tag)
{
	struct run *r = model_cur;

	if (!model_check(r, r->nact < LOGCAP, "release log overflow"))
		return LOGCAP - 1;
	r->act[r->nact] = (struct logent){ k, ptr, tag, 0 };
	return r->nact++;
}

static void check_dev(struct device *dev, const char *who)
{
	model_check(model_cur, dev == model_cur->dev,
		    "%s got device %p, not %p", who, (void *)dev,
		    (void *)model_cur->dev);
}

static void rel1(struct device *dev, void *res)
{
	check_dev(dev, "model_rel1");
	log_act(K_REL1, res, read_tag(res));
}

static void rel2(struct device *dev, void *res)
{
	int i;

	check_dev(dev, "model_rel2");
	i = log_act(K_REL2, res, read_tag(res));
	model_cur->act[i].aux = devres_release_group(dev, NULL);
}

static void rel3(struct device *dev, void *res)
{
	int i;

	check_dev(dev, "model_rel3");
	i = log_act(K_REL3, res, read_tag(res));
	model_cur->act[i].aux = (intptr_t)devm_kmalloc(dev, 24, GFP_KERNEL);
}

static void act0(void *data)
{
	log_act(K_ACT0, data, 0);
}

static void act1(void *data)
{
	log_act(K_ACT1, data, 0);
}

static const dr_release_t rels[4] = { NULL, rel1, rel2, rel3 };
static void (*const acts[2])(void *) = { act0, act1 };

static int lib_match_eq(struct device *dev, void *res, void *data)
{
	check_dev(dev, "match");
	return res == data;
}

static int lib_match_mod(struct device *dev, void *res, void *data)
{
	check_dev(dev, "match");
	return ((uintptr_t)res >> 4) % 3 == (uintptr_t)data;
}

/* A misuse: devres on the same device from a match callback. */
static int lib_match_reenter(struct device *dev, void *res, void *data)
{
	struct devres_stats st;

	(void)res;
	(void)data;
	devres_get_stats(dev, &st);
	return 1;
}

static const dr_match_t lib_matches[4] = { NULL, lib_match_eq, lib_match_mod,
					   lib_match_reenter };

static void collect(struct device *dev, void *res, void *data)
{
	struct run *r = data;

	check_dev(dev, "for_each");
	if (model_check(r, r->nseen < CAP, "for_each called too often"))
		r->seen[r->nseen++] = res;
}
/* Choosing operands: every byte value picks something valid. */

/* The k-th (mod count) resource whose address the program knows. */
static int nth_ptr(struct run *r, unsigned int k, bool kmalloc_only,
		   bool skip_kmalloc)
{
	int n = 0;

	for (int i = 0; i < r->len; i++) {
		struct ment *e = &r->list[i];

		if (e->type != E_RES || !e->ptr ||
		    (kmalloc_only && e->kind != K_KMALLOC) ||
		    (skip_kmalloc && e->kind == K_KMALLOC))
			continue;
		n++;
	}
	if (!n)
		return -1;
	k %= (unsigned int)n;
	for (int i = 0; i < r->len; i++) {
		struct ment *e = &r->list[i];

		if (e->type != E_RES || !e->ptr ||
		    (kmalloc_only && e->kind != K_KMALLOC) ||
		    (skip_kmalloc && e->kind == K_KMALLOC))
			continue;
		if (!k--)
			return i;
	}
	return -1;
}

static void *match_data(struct run *r, enum match m, uint8_t c)
{
	int i;

	switch (m) {
	case M_EQ:
		i = nth_ptr(r, c, false, false);
		return i < 0 ? r->static_buf : r->list[i].ptr;
	case M_MOD:
		return (void *)(uintptr_t)(c % 3);
	default:
		return NULL;
	}
}

/* The k-th (mod count) live group, oldest first, or -1. */
static int nth_group(struct run *r, unsigned int k)
{
	int n = 0;

	for (int i = 0; i < r->len; i++)
		n += r->list[i].type == E_OPEN;
	if (!n)
		return -1;
	k %= (unsigned int)n;
	for (int i = 0; i < r->len; i++)
		if (r->list[i].type == E_OPEN && !k--)
			return r->list[i].group;
	return -1;
}

static void *pick_id(struct run *r, uint8_t a, uint8_t b)
{
	int g;

	switch (a % 8) {
	case 0:
	case 1:
		return NULL;
	case 2:
	case 3:
		g = nth_group(r, b);
		return g < 0 ? NULL : r->groups[g].id;
	case 6:
		return r->nret ? r->ret_ids[b % r->nret] : NULL;
	case 7:
		return &unknown_id;
	default:
		return &group_ids[(a / 8) % 4];
	}
}

/* Something the device does not manage as devm_kmalloc() memory. */
static void *pick_foreign(struct run *r, uint8_t b)
{
	int i;

	switch (b % 5) {
	case 1:
		if (r->nstale)
			return r->stale[(b / 5) % r->nstale];
		break;
	case 2:
		return r->static_buf;
	case 3:
		if (r->npool)
			return r->pool[(b / 5) % r->npool].ptr;
		break;
	case 4:
		i = nth_ptr(r, b / 5, false, true);
		if (i >= 0)
			return r->list[i].ptr;
		break;
	}
	return r->foreign;
}

static void push_ring(void **ring, int *n, void *p)
{
	if (*n < RING) {
		ring[(*n)++] = p;
		return;
	}
	memmove(ring, ring + 1, (RING - 1) * sizeof(*ring));
	ring[RING - 1] = p;
}

static void pool_drop(struct run *r, int i)
{
	r->pool[i] = r->pool[--r->npool];
}

static void check_intact(struct run *r, const struct ment *e, size_t max)
{
	size_t n = e->size < max ? e->size : max;

	if (e->tag && e->kind == K_KMALLOC)
		model_check(r, intact(e->ptr, n, e->tag),
			    "devm_kmalloc memory %p (%zu bytes) was "
			    "overwritten",
			    e->ptr, e->size);
}

/* The operations. Each runs the library first, then the model. */

static void op_alloc(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	static const size_t sizes[8] = { 0, 1, 8, 16, 24, 40, 100, 256 };
	enum kind k = (enum kind)(a % 4);
	size_t size = sizes[b % 8];
	bool fail = (c & 15) == 15;
	uint64_t tag;
	void *p;

	if (r->npool == POOL) {
		int i = b % r->npool;

		model_say(r, "devres_free(%p) [pool full]", r->pool[i].ptr);
		devres_free(r->pool[i].ptr);
		pool_drop(r, i);
		return;
	}
	if (k != K_REL0 && size < sizeof(uint64_t))
		size = sizeof(uint64_t);
	if (fail)
		devres_fail_nth(1);
	p = devres_alloc_named(rels[k], size, GFP_KERNEL, model_kind_names[k]);
	devres_fail_nth(0);
	model_say(r, "devres_alloc(%s, %zu)%s = %p", model_kind_names[k], size,
		  fail ? " [fault injected]" : "", p);
	if (fail) {
		if (!model_check(r, !p, "an injected fault did not fail"))
			devres_free(p);
		return;
	}
	if (!model_check(r, p != NULL, "devres_alloc() failed") ||
	    !model_check(r, zeroed(p, 0, size),
			 "devres_alloc() data not zeroed"))
		return;
	tag = next_tag(r);
	if (size >= sizeof(tag))
		memcpy(p, &tag, sizeof(tag));
	r->pool[r->npool++] = (struct ment){
		.type = E_RES, .kind = k, .ptr = p, .size = size, .tag = tag
	};
}

static void op_add(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	int i;

	switch (c % 16) {
	case 14:
		i = nth_ptr(r, b, false, false);
		if (i < 0)
			break;
		devres_add(r->dev, r->list[i].ptr);
		model_say(r, "devres_add(%p) [already added]", r->list[i].ptr);
		r->warns++;
		return;
	case 15:
		devres_add(r->dev, NULL);
		model_say(r, "devres_add(NULL)");
		r->warns++;
		return;
	}
	if (!r->npool) {
		model_say(r, "devres_add() [nothing to add]");
		return;
	}
	i = a % r->npool;
	devres_add(r->dev, r->pool[i].ptr);
	model_say(r, "devres_add(%p %s)", r->pool[i].ptr,
		  model_kind_names[r->pool[i].kind]);
	m_append(r, r->pool[i]);
	pool_drop(r, i);
}

static void op_free(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	int i;

	switch (c % 4) {
	case 2:
		i = nth_ptr(r, b, false, false);
		if (i < 0)
			break;
		devres_free(r->list[i].ptr);
		model_say(r, "devres_free(%p) [still added]", r->list[i].ptr);
		r->warns++;
		return;
	case 3:
		devres_free(NULL);
		model_say(r, "devres_free(NULL)");
		return;
	}
	if (!r->npool) {
		model_say(r, "devres_free() [nothing to free]");
		return;
	}
	i = a % r->npool;
	devres_free(r->pool[i].ptr);
	model_say(r, "devres_free(%p)", r->pool[i].ptr);
	pool_drop(r, i);
}

static void op_find(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	enum kind k = (enum kind)(a % 4);
	enum match m = (enum match)(b % 4);
	void *data = match_data(r, m, c);
	void *p = devres_find(r->dev, rels[k], lib_matches[m], data);
	int i = m_find(r, k, m, data);

	model_say(r, "devres_find(%s, match %d, %p) = %p", model_kind_names[k],
		  m, data, p);
	if (m == M_REENTER && i >= 0)
		r->warns++;
	model_check(r, p == (i >= 0 ? r->list[i].ptr : NULL), "expected %p",
		    i >= 0 ? r->list[i].ptr : NULL);
}

static void op_get(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	struct ment e;
	enum match m;
	void *data, *p;
	int i, j;

	if (c % 8 == 7) {
		j = nth_ptr(r, a, false, false);
		if (j >= 0) {
			p = devres_get(r->dev, r->list[j].ptr, NULL, NULL);
			model_say(r, "devres_get(%p) [already added] = %p",
				  r->list[j].ptr, p);
			r->warns++;
			model_check(r, !p, "expected NULL");
			return;
		}
	}
	if (!r->npool) {
		model_say(r, "devres_get() [nothing to get]");
		return;
	}
	i = a % r->npool;
	e = r->pool[i];
	m = (enum match)(b % 3);
	data = match_data(r, m, c);
	p = devres_get(r->dev, e.ptr, lib_matches[m], data);
	model_say(r, "devres_get(%p %s, match %d, %p) = %p", e.ptr,
		  model_kind_names[e.kind], m, data, p);
	j = m_find(r, e.kind, m, data);
	pool_drop(r, i);
	if (j >= 0) {
		model_check(r, p == r->list[j].ptr, "expected the existing %p",
			    r->list[j].ptr);
		return;
	}
	model_check(r, p == e.ptr, "expected the new node %p", e.ptr);
	m_append(r, e);
}

/* devres_remove(), devres_destroy() and devres_release(). */
static void op_take(struct run *r, enum op op, uint8_t a, uint8_t b, uint8_t c)
{
	enum kind k = (enum kind)(a % 4);
	enum match m = (enum match)(b % 3);
	void *data = match_data(r, m, c);
	int j = m_find(r, k, m, data), ret;
	struct ment e = { 0 };
	void *p;

	if (j >= 0) {
		e = r->list[j];
		m_delete(r, j);
	}
	switch (op) {
	case OP_REMOVE:
		p = devres_remove(r->dev, rels[k], lib_matches[m], data);
		model_say(r, "devres_remove(%s, match %d, %p) = %p",
			  model_kind_names[k], m, data, p);
		if (!model_check(r, p == (j >= 0 ? e.ptr : NULL), "expected %p",
				 j >= 0 ? e.ptr : NULL) ||
		    !p)
			return;
		if (r->npool < POOL) {
			r->pool[r->npool++] = e;
			return;
		}
		devres_free(p);
		return;
	case OP_DESTROY:
		ret = devres_destroy(r->dev, rels[k], lib_matches[m], data);
		model_say(r, "devres_destroy(%s, match %d, %p) = %d",
			  model_kind_names[k], m, data, ret);
		model_check(r, ret == (j >= 0 ? 0 : -ENOENT), "expected %d",
			    j >= 0 ? 0 : -ENOENT);
		return;
	default:
		ret = devres_release(r->dev, rels[k], lib_matches[m], data);
		model_say(r, "devres_release(%s, match %d, %p) = %d",
			  model_kind_names[k], m, data, ret);
		model_check(r, ret == (j >= 0 ? 0 : -ENOENT), "expected %d",
			    j >= 0 ? 0 : -ENOENT);
		if (j >= 0)
			m_run_release(r, &e);
		return;
	}
}

static void op_for_each(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	enum kind k = (enum kind)(a % 4);
	enum match m = (enum match)(b % 3);
	void *data = match_data(r, m, c);
	int n = 0;

	r->nseen = 0;
	if (c % 8 == 7) {
		devres_for_each_res(r->dev, rels[k], NULL, NULL, NULL, NULL);
		model_say(r, "devres_for_each_res(%s, fn NULL)",
			  model_kind_names[k]);
		r->warns++;
		return;
	}
	devres_for_each_res(r->dev, rels[k], lib_matches[m], data, collect, r);
	model_say(r, "devres_for_each_res(%s, match %d, %p): %d calls",
		  model_kind_names[k], m, data, r->nseen);
	for (int i = r->len - 1; i >= 0; i--) {
		struct ment *e = &r->list[i];

		if (e->type != E_RES || e->kind != k ||
		    !m_match(m, data, e->ptr))
			continue;
		if (!model_check(r, n < r->nseen && r->seen[n] == e->ptr,
				 "call %d should be for %p", n, e->ptr))
			return;
		n++;
	}
	model_check(r, n == r->nseen, "%d calls expected", n);
}

static void op_open_group(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	void *id = a % 3 ? &group_ids[b % 4] : NULL, *ret;
	bool fail = (c & 15) == 15;

	if (fail)
		devres_fail_nth(1);
	ret = devres_open_group(r->dev, id, GFP_KERNEL);
	devres_fail_nth(0);
	model_say(r, "devres_open_group(%p)%s = %p", id,
		  fail ? " [fault injected]" : "", ret);
	if (fail) {
		model_check(r, !ret, "an injected fault did not fail");
		return;
	}
	if (id) {
		if (!model_check(r, ret == id, "expected %p", id))
			return;
	} else {
		if (!model_check(r, ret != NULL, "expected a new id"))
			return;
		for (int g = 0; g < CAP; g++)
			if (!model_check(r,
					 !r->groups[g].live ||
						 r->groups[g].id != ret,
					 "the new id is a live group's"))
				return;
		push_ring(r->ret_ids, &r->nret, ret);
	}
	m_append(r,
		 (struct ment){ .type = E_OPEN, .group = m_new_group(r, ret) });
}

static void op_group(struct run *r, enum op op, uint8_t a, uint8_t b)
{
	void *id = pick_id(r, a, b);
	int g = m_find_group(r, id), ret, exp;

	switch (op) {
	case OP_CLOSE_GROUP:
		devres_close_group(r->dev, id);
		model_say(r, "devres_close_group(%p)", id);
		if (g < 0 || r->groups[g].closed) {
			r->warns++;
			return;
		}
		r->groups[g].closed = true;
		m_append(r, (struct ment){ .type = E_CLOSE, .group = g });
		return;
	case OP_REMOVE_GROUP:
		devres_remove_group(r->dev, id);
		model_say(r, "devres_remove_group(%p)", id);
		if (g < 0) {
			r->warns++;
			return;
		}
		if (r->groups[g].closed)
			m_delete(r, m_marker(r, g, E_CLOSE));
		m_delete(r, m_marker(r, g, E_OPEN));
		r->groups[g].live = false;
		return;
	default:
		ret = devres_release_group(r->dev, id);
		model_say(r, "devres_release_group(%p) = %d", id, ret);
		exp = m_release_group(r, id);
		model_check(r, ret == exp, "expected %d", exp);
		return;
	}
}

void model_op_release_all(struct run *r)
{
	int ret = devres_release_all(r->dev), exp;

	model_say(r, "devres_release_all() = %d", ret);
	exp = m_release_all(r);
	model_check(r, ret == exp, "expected %d", exp);
}

static void *action_arg(uint8_t b)
{
	return (void *)(uintptr_t)(0x1000 + 0x10 * (b % 4));
}

static void op_add_action(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	enum kind k = (enum kind)(K_ACT0 + a % 2);
	void *arg = action_arg(b);
	unsigned int v = c % 8;
	bool fail = (c & 0xf0) == 0xf0, reset = v & 1;
	const char *name = model_kind_names[k];
	int ret;

	if (v >= 6) {
		/* A NULL action: refused, WARNed, not run. */
		if (reset)
			ret = devm_add_action_or_reset_named(r->dev, NULL, arg,
							     "NULL");
		else
			ret = devm_add_action_named(r->dev, NULL, arg, "NULL");
		model_say(r, "devm_add_action%s(NULL, %p) = %d",
			  reset ? "_or_reset" : "", arg, ret);
		r->warns++;
		model_check(r, ret == -EINVAL, "expected -EINVAL");
		return;
	}
	if (fail)
		devres_fail_nth(1);
	if (reset)
		ret = devm_add_action_or_reset_named(r->dev, acts[a % 2], arg,
						     name);
	else
		ret = devm_add_action_named(r->dev, acts[a % 2], arg, name);
	devres_fail_nth(0);
	model_say(r, "devm_add_action%s(%s, %p)%s = %d",
		  reset ? "_or_reset" : "", name, arg,
		  fail ? " [fault injected]" : "", ret);
	if (fail) {
		model_check(r, ret == -ENOMEM, "expected -ENOMEM");
		if (reset)
			m_exp_log(r, k, arg, 0);
		return;
	}
	if (model_check(r, ret == 0, "expected 0"))
		m_append(r, (struct ment){ .type = E_RES,
					   .kind = k,
					   .arg = arg,
					   .size = sizeof(void *) });
}

/* The k-th (mod count) action on the list, or -1. */
static int nth_action(struct run *r, unsigned int k)
{
	int n = 0;

	for (int i = 0; i < r->len; i++)
		n += r->list[i].type == E_RES && r->list[i].kind >= K_ACT0;
	if (!n)
		return -1;
	k %= (unsigned int)n;
	for (int i = 0; i < r->len; i++)
		if (r->list[i].type == E_RES && r->list[i].kind >= K_ACT0 &&
		    !k--)
			return i;
	return -1;
}

static void op_action(struct run *r, enum op op, uint8_t a, uint8_t b)
{
	enum kind k = (enum kind)(K_ACT0 + a % 2);
	void *arg = action_arg(b);
	int j = a & 2 ? nth_action(r, b) : -1;
	bool ret;

	/* Mostly an action that is there, sometimes any action. */
	if (j >= 0) {
		k = r->list[j].kind;
		arg = r->list[j].arg;
	}
	j = m_find_action(r, k, arg);

	switch (op) {
	case OP_REMOVE_ACTION:
		devm_remove_action(r->dev, acts[k - K_ACT0], arg);
		model_say(r, "devm_remove_action(%s, %p)", model_kind_names[k],
			  arg);
		break;
	case OP_RELEASE_ACTION:
		devm_release_action(r->dev, acts[k - K_ACT0], arg);
		model_say(r, "devm_release_action(%s, %p)", model_kind_names[k],
			  arg);
		break;
	default:
		ret = devm_is_action_added(r->dev, acts[k - K_ACT0], arg);
		model_say(r, "devm_is_action_added(%s, %p) = %d",
			  model_kind_names[k], arg, ret);
		model_check(r, ret == (j >= 0), "expected %d", j >= 0);
		return;
	}
	if (j < 0) {
		r->warns++;
		return;
	}
	m_delete(r, j);
	if (op == OP_RELEASE_ACTION)
		m_exp_log(r, k, arg, 0);
}

static void add_kmalloc(struct run *r, void *p, size_t size, bool pattern,
			const char *maker)
{
	struct ment e = { .type = E_RES,
			  .kind = K_KMALLOC,
			  .ptr = p,
			  .size = size,
			  .maker = maker };

	if (pattern) {
		e.tag = next_tag(r);
		fill(p, size, e.tag);
	}
	m_append(r, e);
}

static void op_kmalloc(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	static const size_t sizes[8] = { 0, 1, 8, 13, 24, 64, 200, 1000 };
	static const char *const strs[4] = { "", "x", "devres", "longer" };
	static const char *const makers[8] = {
		"devm_kmalloc",
		"devm_kzalloc",
		"devm_kmalloc_array",
		"devm_kcalloc",
		NULL,
		"devm_kmalloc",
		"devm_kstrdup",
		"devm_kasprintf",
	};
	size_t size = sizes[a % 8];
	unsigned int v = b % 8;
	bool fail = (c & 15) == 15, zero = v == 1 || v == 3;
	const char *s = NULL;
	char buf[32];
	void *p;

	if (fail)
		devres_fail_nth(1);
	switch (v) {
	case 0:
		p = devm_kmalloc(r->dev, size, GFP_KERNEL);
		break;
	case 1:
		p = devm_kzalloc(r->dev, size, GFP_KERNEL);
		break;
	case 2:
		p = devm_kmalloc_array(r->dev, size, 1, GFP_KERNEL);
		break;
	case 3:
		p = devm_kcalloc(r->dev, 1, size, GFP_KERNEL);
		break;
	case 4:
		p = devm_kmalloc_array(r->dev, SIZE_MAX / 2 + 1, 2, GFP_KERNEL);
		break;
	case 5:
		p = devm_kmalloc(r->dev, (size_t)UINT32_MAX + 1, GFP_KERNEL);
		break;
	case 6:
		s = strs[a % 4];
		p = devm_kstrdup(r->dev, s, GFP_KERNEL);
		break;
	default:
		snprintf(buf, sizeof(buf), "model-%u", a);
		s = buf;
		p = devm_kasprintf(r->dev, GFP_KERNEL, "model-%u", a);
		break;
	}
	devres_fail_nth(0);
	model_say(r, "devm_kmalloc variant %u (%zu bytes)%s = %p", v, size,
		  fail ? " [fault injected]" : "", p);
	if (v == 4 || v == 5) {
		model_check(r, !p, "expected NULL");
		return;
	}
	if (s)
		size = strlen(s) + 1;
	else if (!size) {
		model_check(r, p == ZERO_SIZE_PTR, "expected ZERO_SIZE_PTR");
		return;
	}
	if (fail) {
		model_check(r, !p, "an injected fault did not fail");
		return;
	}
	if (!model_check(r, p != NULL, "allocation failed"))
		return;
	if (s) {
		if (model_check(r, !strcmp(p, s), "copy differs"))
			add_kmalloc(r, p, size, false, makers[v]);
		return;
	}
	if (model_check(r, !zero || zeroed(p, 0, size), "memory not zeroed"))
		add_kmalloc(r, p, size, true, makers[v]);
}

/* A devm_krealloc()/devm_kfree() operand: managed, NULL, ZERO or foreign. */
static void *pick_target(struct run *r, unsigned int sel, uint8_t b)
{
	int i;

	switch (sel % 8) {
	case 4:
		return NULL;
	case 5:
		return ZERO_SIZE_PTR;
	case 6:
		return pick_foreign(r, b);
	case 7:
		i = nth_ptr(r, b, false, true);
		return i < 0 ? pick_foreign(r, b) : r->list[i].ptr;
	default:
		i = nth_ptr(r, b, true, false);
		return i < 0 ? NULL : r->list[i].ptr;
	}
}

static void op_krealloc(struct run *r, uint8_t a, uint8_t b, uint8_t c)
{
	static const size_t sizes[8] = { 0, 1, 8, 24, 64, 200, 1000, 5000 };
	void *ptr = pick_target(r, a, b), *p;
	size_t size = sizes[(a >> 3) % 8], old;
	bool zero = c & 1, fail = (c & 0xf0) == 0xf0;
	int j = m_find_kmalloc(r, ptr);
	struct ment *e;

	if (j >= 0)
		check_intact(r, &r->list[j], SIZE_MAX);
	if (fail)
		devres_fail_nth(1);
	p = devm_krealloc(r->dev, ptr, size,
			  zero ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL);
	devres_fail_nth(0);
	model_say(r, "devm_krealloc(%p, %zu%s)%s = %p", ptr, size,
		  zero ? ", __GFP_ZERO" : "", fail ? " [fault injected]" : "",
		  p);

	if (!size) {
		model_check(r, p == ZERO_SIZE_PTR, "expected ZERO_SIZE_PTR");
		if (ZERO_OR_NULL_PTR(ptr))
			return;
		if (j < 0) {
			r->warns++;
			return;
		}
		m_delete(r, j);
		push_ring(r->stale, &r->nstale, ptr);
		return;
	}
	if (ZERO_OR_NULL_PTR(ptr)) {
		if (fail) {
			model_check(r, !p, "an injected fault did not fail");
			return;
		}
		if (model_check(r, p != NULL, "allocation failed") &&
		    model_check(r, !zero || zeroed(p, 0, size),
				"memory not zeroed"))
			add_kmalloc(r, p, size, true, "devm_krealloc");
		return;
	}
	if (j < 0) {
		r->warns++;
		model_check(r, !p, "expected NULL");
		return;
	}
	/* Growing in place needs no allocation, so a fault may not bite. */
	if (fail && !p)
		return;
	if (!model_check(r, p != NULL, "reallocation failed"))
		return;
	e = &r->list[j];
	old = e->size;
	if (zero && size > old)
		model_check(r, zeroed(p, old, size), "new bytes not zeroed");
	if (e->tag)
		model_check(r, intact(p, old < size ? old : size, e->tag),
			    "contents not kept");
	if (p != ptr)
		push_ring(r->stale, &r->nstale, ptr);
	/* Named after devm_krealloc() now, moved or not. */
	e->ptr = p;
	e->size = size;
	e->maker = "devm_krealloc";
	e->tag = next_tag(r);
	fill(p, size, e->tag);
}

static void op_kfree(struct run *r, uint8_t a, uint8_t b)
{
	void *ptr = pick_target(r, a, b);
	int j = m_find_kmalloc(r, ptr);

	if (j >= 0)
		check_intact(r, &r->list[j], SIZE_MAX);
	devm_kfree(r->dev, ptr);
	model_say(r, "devm_kfree(%p)%s", ptr,
		  j < 0 && !ZERO_OR_NULL_PTR(ptr) ? " [not managed]" : "");
	if (ZERO_OR_NULL_PTR(ptr))
		return;
	if (j < 0) {
		r->warns++;
		return;
	}
	m_delete(r, j);
	push_ring(r->stale, &r->nstale, ptr);
}

/* Compares devres_dump() with the model, line by line. */
static void op_dump(struct run *r)
{
	char *out = NULL, *line, *save = NULL, exp[160];
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	int i = -1;

	model_say(r, "devres_dump()");
	if (!model_check(r, f != NULL, "open_memstream failed"))
		return;
	devres_dump(r->dev, f);
	fclose(f);
	for (line = strtok_r(out, "\n", &save); line && !r->bad;
	     line = strtok_r(NULL, "\n", &save), i++) {
		const char *rest = line;
		struct ment *e;

		if (i < 0) {
			int markers = 0;

			for (int k = 0; k < r->len; k++)
				markers += r->list[k].type != E_RES;
			snprintf(exp, sizeof(exp),
				 "model: %d resources, %d markers",
				 r->len - markers, markers);
		} else if (!model_check(r, i < r->len, "extra dump line '%s'",
					line)) {
			break;
		} else if ((e = &r->list[i])->type == E_OPEN) {
			snprintf(exp, sizeof(exp), "  group %p {",
				 r->groups[e->group].id);
		} else if (e->type == E_CLOSE) {
			snprintf(exp, sizeof(exp), "  } group %p",
				 r->groups[e->group].id);
		} else {
			/* An action's node address is the library's secret. */
			if (!e->ptr) {
				rest = strchr(line + 2, ' ');
				rest = rest ? rest + 1 : line;
				snprintf(exp, sizeof(exp), "%s (%zu bytes)",
					 model_kind_names[e->kind], e->size);
			} else {
				snprintf(exp, sizeof(exp),
					 "  %p %s (%zu bytes)", e->ptr,
					 e->maker ? e->maker
						  : model_kind_names[e->kind],
					 e->size);
			}
			check_intact(r, e, 64);
		}
		model_check(r, !strcmp(rest, exp),
			    "dump line %d is '%s', not '%s'", i + 1, line, exp);
	}
	model_check(r, i == r->len, "dump has %d lines, not %d", i + 1,
		    r->len + 1);
	free(out);
}

/* Every entry point WARNs once on a NULL or uninitialized device. */
static void op_bad_device(struct run *r, uint8_t a, uint8_t b)
{
	struct device *bad = b & 1 ? NULL : &r->uninit;
	struct devres_stats st = { 1, 1 };
	bool ok = true;

	model_say(r, "%s device, call %d", bad ? "uninitialized" : "NULL",
		  a % 12);
	switch (a % 12) {
	case 0:
		ok = !devres_find(bad, rels[1], NULL, NULL);
		break;
	case 1:
		ok = devres_release_all(bad) == -ENODEV;
		break;
	case 2:
		ok = !devres_open_group(bad, NULL, GFP_KERNEL);
		break;
	case 3:
		ok = !devm_kmalloc(bad, 8, GFP_KERNEL);
		break;
	case 4:
		ok = devm_add_action_named(bad, act0, NULL, "model_act0") ==
		     -EINVAL;
		break;
	case 5:
		ok = devres_release_group(bad, NULL) == 0;
		break;
	case 6:
		devm_kfree(bad, r->foreign);
		break;
	case 7:
		devres_get_stats(bad, &st);
		ok = st.allocs == 0 && st.total_size == 0;
		break;
	case 8:
		devres_close_group(bad, NULL);
		break;
	case 9:
		ok = !devres_remove(bad, rels[1], NULL, NULL);
		break;
	case 10:
		ok = devres_destroy(bad, rels[1], NULL, NULL) == -ENOENT;
		break;
	default:
		devm_remove_action(bad, act0, NULL);
		break;
	}
	r->warns++;
	model_check(r, ok, "wrong return value");
}

void model_step(struct run *r, const uint8_t *insn)
{
	enum op op = (enum op)(insn[0] % OP_NR);
	uint8_t a = insn[1], b = insn[2], c = insn[3];

	/* Keep the list short enough to compare cheaply. */
	if (r->len >= SOFT_MAX)
		op = OP_RELEASE_ALL;
	if (r->counts)
		r->counts->per_op[op]++;
	switch (op) {
	case OP_ALLOC:
		op_alloc(r, a, b, c);
		break;
	case OP_ADD:
		op_add(r, a, b, c);
		break;
	case OP_FREE:
		op_free(r, a, b, c);
		break;
	case OP_FIND:
		op_find(r, a, b, c);
		break;
	case OP_GET:
		op_get(r, a, b, c);
		break;
	case OP_REMOVE:
	case OP_DESTROY:
	case OP_RELEASE:
		op_take(r, op, a, b, c);
		break;
	case OP_FOR_EACH:
		op_for_each(r, a, b, c);
		break;
	case OP_OPEN_GROUP:
		op_open_group(r, a, b, c);
		break;
	case OP_CLOSE_GROUP:
	case OP_REMOVE_GROUP:
	case OP_RELEASE_GROUP:
		op_group(r, op, a, b);
		break;
	case OP_RELEASE_ALL:
		model_op_release_all(r);
		break;
	case OP_ADD_ACTION:
		op_add_action(r, a, b, c);
		break;
	case OP_REMOVE_ACTION:
	case OP_RELEASE_ACTION:
	case OP_IS_ACTION_ADDED:
		op_action(r, op, a, b);
		break;
	case OP_KMALLOC:
		op_kmalloc(r, a, b, c);
		break;
	case OP_KREALLOC:
		op_krealloc(r, a, b, c);
		break;
	case OP_KFREE:
		op_kfree(r, a, b);
		break;
	case OP_DUMP:
		op_dump(r);
		break;
	default:
		op_bad_device(r, a, b);
		break;
	}
}
/* Registers every kind now, so no lookup depends on what ran before. */
void model_register_kinds(struct run *r)
{
	for (int k = 0; k < 4; k++)
		devres_free(devres_alloc_named(rels[k], 8, GFP_KERNEL,
					       model_kind_names[k]));
	for (int k = 0; k < 2; k++) {
		devm_add_action_named(r->other, acts[k], NULL,
				      model_kind_names[K_ACT0 + k]);
		devm_remove_action(r->other, acts[k], NULL);
	}
}
