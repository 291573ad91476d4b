// SPDX-License-Identifier: MIT
/*
 * The reference model of one device's devres list, and the loop that runs
 * a program on the library and on the model side by side (the operations
 * themselves are in model-ops.c).
 *
 * The model is deliberately naive: an array of entries, oldest first, with
 * group markers as entries, and the kernel's colour rule spelt out as it is
 * in remove_nodes(). After every operation the run compares what the
 * library returned, the order and arguments of release callbacks, the WARN
 * count, devres_get_stats() and the ledger with what the model predicts.
 *
 * Release callbacks are part of the program: one kind only logs, one
 * releases the latest open group from inside the release (so nested
 * releases, and the silent "unknown group while the list is empty" rule,
 * are exercised), one allocates managed memory from inside the release.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model-internal.h"

struct run *model_cur;

static const char *const op_names[OP_NR] = {
	"alloc",
	"add",
	"free",
	"find",
	"get",
	"remove",
	"destroy",
	"release",
	"for_each",
	"open_group",
	"close_group",
	"remove_group",
	"release_group",
	"release_all",
	"add_action",
	"remove_action",
	"release_action",
	"is_action_added",
	"kmalloc",
	"krealloc",
	"kfree",
	"dump",
	"bad_device",
};

const char *const model_kind_names[] = {
	"model_rel0",	"model_rel1", "model_rel2", "model_rel3",
	"devm_kmalloc", "model_act0", "model_act1",
};

const char *model_op_name(unsigned int op)
{
	return op < OP_NR ? op_names[op] : "?";
}
bool model_check(struct run *r, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok || r->bad)
		return ok;
	r->bad = true;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return false;
}

void model_say(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->desc, sizeof(r->desc), fmt, ap);
	va_end(ap);
}
static void warn_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}
/* The model. */

bool m_match(enum match m, void *data, void *ptr)
{
	switch (m) {
	case M_EQ:
		return ptr == data;
	case M_MOD:
		return ((uintptr_t)ptr >> 4) % 3 == (uintptr_t)data;
	default:
		return true;
	}
}

void m_append(struct run *r, struct ment e)
{
	if (model_check(r, r->len < CAP, "model list full"))
		r->list[r->len++] = e;
}

void m_delete(struct run *r, int i)
{
	memmove(&r->list[i], &r->list[i + 1],
		(size_t)(r->len - i - 1) * sizeof(r->list[0]));
	r->len--;
}

int m_exp_log(struct run *r, enum kind k, void *ptr, uint64_t tag)
{
	if (!model_check(r, r->nexp < LOGCAP, "expected log overflow"))
		return LOGCAP - 1;
	r->exp[r->nexp] = (struct logent){ k, ptr, tag, 0 };
	return r->nexp++;
}

/* The newest resource of @kind that @m accepts, or -1. */
int m_find(struct run *r, enum kind kind, enum match m, void *data)
{
	for (int i = r->len - 1; i >= 0; i--) {
		struct ment *e = &r->list[i];

		if (e->type == E_RES && e->kind == kind &&
		    m_match(m, data, e->ptr))
			return i;
	}
	return -1;
}

int m_find_action(struct run *r, enum kind kind, void *arg)
{
	for (int i = r->len - 1; i >= 0; i--) {
		struct ment *e = &r->list[i];

		if (e->type == E_RES && e->kind == kind && e->arg == arg)
			return i;
	}
	return -1;
}

int m_find_kmalloc(struct run *r, const void *p)
{
	for (int i = r->len - 1; i >= 0; i--) {
		struct ment *e = &r->list[i];

		if (e->type == E_RES && e->kind == K_KMALLOC && e->ptr == p)
			return i;
	}
	return -1;
}

/* The kernel's find_group(): newest first, NULL means latest open. */
int m_find_group(struct run *r, void *id)
{
	for (int i = r->len - 1; i >= 0; i--) {
		struct mgroup *g;

		if (r->list[i].type != E_OPEN)
			continue;
		g = &r->groups[r->list[i].group];
		if (id ? g->id == id : !g->closed)
			return r->list[i].group;
	}
	return -1;
}

int m_marker(struct run *r, int g, enum etype t)
{
	for (int i = 0; i < r->len; i++)
		if (r->list[i].type == t && r->list[i].group == g)
			return i;
	return -1;
}

int m_new_group(struct run *r, void *id)
{
	for (int g = 0; g < CAP; g++) {
		if (!r->groups[g].live) {
			r->groups[g] = (struct mgroup){ id, false, true, 0 };
			return g;
		}
	}
	model_check(r, false, "model out of group slots");
	return 0;
}

/* Live groups: each has an open marker on the list. */
static int m_live_groups(struct run *r)
{
	int n = 0;

	for (int i = 0; i < r->len; i++)
		n += r->list[i].type == E_OPEN;
	return n;
}

static void m_release_nodes(struct run *r, struct ment *todo, int n, int *cnt);

/*
 * The kernel's remove_nodes() for group @g: the range from its open marker
 * to its close marker (or to the newest node, while it is open). Resources
 * in the range go; a group goes when both its markers are in the range, or
 * its open marker when it is still open (colour 2). Returns the entries
 * taken, newest first, in @todo.
 */
static int m_take_range(struct run *r, int g, struct ment *todo)
{
	int lo = m_marker(r, g, E_OPEN);
	int hi = r->groups[g].closed ? m_marker(r, g, E_CLOSE) : r->len - 1;
	int n = 0, k = lo;

	for (int i = lo; i <= hi; i++)
		if (r->list[i].type != E_RES)
			r->groups[r->list[i].group].colour = 0;
	for (int i = lo; i <= hi; i++) {
		struct mgroup *mg;

		if (r->list[i].type == E_RES)
			continue;
		mg = &r->groups[r->list[i].group];
		mg->colour += mg->closed ? 1 : 2;
	}
	for (int i = hi; i >= lo; i--) {
		struct ment *e = &r->list[i];

		if (e->type == E_RES || r->groups[e->group].colour == 2)
			todo[n++] = *e;
	}
	for (int i = lo; i <= hi; i++) {
		struct ment *e = &r->list[i];

		if (e->type != E_RES && r->groups[e->group].colour != 2)
			r->list[k++] = *e;
	}
	memmove(&r->list[k], &r->list[hi + 1],
		(size_t)(r->len - hi - 1) * sizeof(r->list[0]));
	r->len = k + (r->len - hi - 1);
	for (int i = 0; i < n; i++)
		if (todo[i].type != E_RES)
			r->groups[todo[i].group].live = false;
	return n;
}

int m_release_group(struct run *r, void *id)
{
	struct ment *todo;
	int g = m_find_group(r, id), n, cnt = 0;

	if (g < 0) {
		/* The kernel's exception: a release in progress. */
		if (r->len)
			r->warns++;
		return 0;
	}
	todo = malloc(sizeof(*todo) * CAP);
	if (!model_check(r, todo != NULL, "out of memory"))
		return 0;
	n = m_take_range(r, g, todo);
	m_release_nodes(r, todo, n, &cnt);
	free(todo);
	return cnt;
}

int m_release_all(struct run *r)
{
	struct ment *todo = malloc(sizeof(*todo) * CAP);
	int n = r->len, cnt = 0;

	if (!model_check(r, todo != NULL, "out of memory"))
		return 0;
	for (int i = 0; i < n; i++)
		todo[i] = r->list[n - 1 - i];
	r->len = 0;
	for (int g = 0; g < CAP; g++)
		r->groups[g].live = false;
	m_release_nodes(r, todo, n, &cnt);
	free(todo);
	return cnt;
}

static void m_release_nodes(struct run *r, struct ment *todo, int n, int *cnt)
{
	for (int i = 0; i < n; i++) {
		if (todo[i].type != E_RES)
			continue;
		++*cnt;
		m_run_release(r, &todo[i]);
	}
}

void m_run_release(struct run *r, const struct ment *e)
{
	void *p;
	int i;

	switch (e->kind) {
	case K_REL1:
		m_exp_log(r, K_REL1, e->ptr, e->tag);
		break;
	case K_REL2:
		i = m_exp_log(r, K_REL2, e->ptr, e->tag);
		r->exp[i].aux = m_release_group(r, NULL);
		break;
	case K_REL3:
		/* The address is the library's to choose: take it from the log. */
		i = m_exp_log(r, K_REL3, e->ptr, e->tag);
		p = NULL;
		if (i < r->nact && r->act[i].kind == K_REL3)
			p = (void *)r->act[i].aux;
		if (!model_check(r, p != NULL,
				 "devm_kmalloc() in a release callback failed"))
			break;
		r->exp[i].aux = (intptr_t)p;
		m_append(r, (struct ment){ .type = E_RES,
					   .kind = K_KMALLOC,
					   .maker = "devm_kmalloc",
					   .ptr = p,
					   .size = 24 });
		break;
	case K_ACT0:
	case K_ACT1:
		m_exp_log(r, e->kind, e->arg, 0);
		break;
	default:
		break;
	}
}
static int m_nodes(struct run *r, long *bytes)
{
	int n = 0;

	*bytes = 0;
	for (int i = 0; i < r->len; i++) {
		if (r->list[i].type != E_RES)
			continue;
		n++;
		*bytes += (long)r->list[i].size;
	}
	return n;
}

/* What every operation is checked against, whatever it was. */
static void compare(struct run *r, int warns_before)
{
	struct devres_ledger l;
	struct devres_stats st;
	long bytes, pool_bytes = 0;
	int n = m_nodes(r, &bytes), warns;

	warns = devres_warn_count() - warns_before;
	model_check(r, warns == r->warns, "%d WARNs, expected %d", warns,
		    r->warns);
	for (int i = 0; i < r->nexp && i < r->nact; i++) {
		struct logent *x = &r->exp[i], *y = &r->act[i];

		model_check(r,
			    x->kind == y->kind && x->ptr == y->ptr &&
				    x->tag == y->tag && x->aux == y->aux,
			    "release %d: %s(%p tag %llx aux %ld), expected "
			    "%s(%p tag %llx aux %ld)",
			    i, model_kind_names[y->kind], y->ptr,
			    (unsigned long long)y->tag, (long)y->aux,
			    model_kind_names[x->kind], x->ptr,
			    (unsigned long long)x->tag, (long)x->aux);
	}
	model_check(r, r->nact == r->nexp, "%d release callbacks, expected %d",
		    r->nact, r->nexp);
	if (r->counts)
		r->counts->releases += (unsigned long)r->nact;
	r->nact = r->nexp = 0;

	/* The list checker: no cycle, markers paired, stats as listed. */
	model_check(r, devres_check(r->dev) == 0, "devres_check failed");
	devres_get_stats(r->dev, &st);
	model_check(r, st.allocs == n && st.total_size == bytes,
		    "stats %d/%d, expected %d/%ld", st.allocs, st.total_size, n,
		    bytes);

	for (int i = 0; i < r->npool; i++)
		pool_bytes += (long)r->pool[i].size;
	devres_ledger_snapshot(&l);
	model_check(r,
		    l.nodes == r->base.nodes + n + r->npool &&
			    l.node_bytes ==
				    r->base.node_bytes + bytes + pool_bytes &&
			    l.groups == r->base.groups + m_live_groups(r),
		    "ledger %ld nodes, %ld bytes, %ld groups; expected %ld, "
		    "%ld, "
		    "%ld",
		    l.nodes, l.node_bytes, l.groups,
		    r->base.nodes + n + r->npool,
		    r->base.node_bytes + bytes + pool_bytes,
		    r->base.groups + m_live_groups(r));
}
static void free_dev(struct device *dev)
{
	free(dev);
}

static struct device *new_dev(const char *name)
{
	struct device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	dev->release = free_dev;
	device_initialize(dev);
	if (dev_set_name(dev, "%s", name)) {
		put_device(dev);
		return NULL;
	}
	return dev;
}
static bool setup(struct run *r)
{
	r->dev = new_dev("model");
	r->other = new_dev("other");
	if (!r->dev || !r->other)
		return false;
	model_register_kinds(r);
	r->foreign = devm_kmalloc(r->other, 32, GFP_KERNEL);
	devres_ledger_snapshot(&r->base);
	return r->foreign != NULL;
}

static void teardown(struct run *r, struct devres_ledger *start)
{
	int warns = devres_warn_count();
	struct devres_ledger l;

	r->warns = 0;
	/* Releases may add memory (model_rel3): release until empty. */
	for (int pass = 0; pass < 4 && (pass == 0 || r->len); pass++)
		model_op_release_all(r);
	model_say(r, "teardown");
	model_check(r, r->len == 0, "resources left after release_all");
	while (r->npool)
		devres_free(r->pool[--r->npool].ptr);
	compare(r, warns);
	if (r->bad)
		return;
	put_device(r->other);
	put_device(r->dev);
	devres_ledger_snapshot(&l);
	model_check(r, !devres_ledger_diff(start, &l, NULL),
		    "the ledger is not back where it started");
	model_check(r, devres_warn_count() == warns + r->warns,
		    "put_device WARNed");
}

size_t model_run(const uint8_t *prog, size_t nops, const struct model_opts *o)
{
	struct devres_ledger start;
	struct run *r = calloc(1, sizeof(*r));
	size_t i, ret = 0;

	if (!r)
		return nops + 1;
	model_cur = r;
	r->counts = o ? o->counts : NULL;
	devres_set_log_sink(warn_sink, NULL);
	devres_ledger_snapshot(&start);
	if (!setup(r)) {
		model_check(r, false, "setup failed");
		i = nops;
		goto fail;
	}
	for (i = 0; i < nops; i++) {
		int warns = devres_warn_count();

		r->warns = 0;
		model_step(r, prog + i * MODEL_OP_BYTES);
		compare(r, warns);
		if (o && o->trace)
			fprintf(o->trace, "%6zu %-16s %s%s\n", i,
				op_names[prog[i * MODEL_OP_BYTES] % OP_NR],
				r->desc, r->warns ? " [WARN]" : "");
		if (r->counts) {
			r->counts->ops++;
			r->counts->warns += (unsigned long)r->warns;
			if ((unsigned long)r->len > r->counts->max_len)
				r->counts->max_len = (unsigned long)r->len;
		}
		if (r->bad)
			goto fail;
	}
	teardown(r, &start);
	if (r->bad)
		goto fail;
	goto out;
fail:
	/* The library's state is suspect: leave the devices alone. */
	if (o && o->report)
		fprintf(o->report, "model: divergence at op %zu: %s\n  %s\n", i,
			r->desc, r->why);
	ret = i + 1;
out:
	devres_set_log_sink(NULL, NULL);
	model_cur = NULL;
	free(r);
	return ret;
}

/* xorshift64*: small, fast, and the same everywhere. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

void model_random_program(uint64_t seed, uint8_t *prog, size_t nops)
{
	/* Weights keep the list around a few dozen entries. */
	static const uint8_t weights[OP_NR] = {
		[OP_ALLOC] = 110,
		[OP_ADD] = 100,
		[OP_FREE] = 20,
		[OP_FIND] = 40,
		[OP_GET] = 40,
		[OP_REMOVE] = 25,
		[OP_DESTROY] = 25,
		[OP_RELEASE] = 40,
		[OP_FOR_EACH] = 20,
		[OP_OPEN_GROUP] = 60,
		[OP_CLOSE_GROUP] = 50,
		[OP_REMOVE_GROUP] = 20,
		[OP_RELEASE_GROUP] = 40,
		[OP_RELEASE_ALL] = 3,
		[OP_ADD_ACTION] = 70,
		[OP_REMOVE_ACTION] = 25,
		[OP_RELEASE_ACTION] = 25,
		[OP_IS_ACTION_ADDED] = 15,
		[OP_KMALLOC] = 120,
		[OP_KREALLOC] = 45,
		[OP_KFREE] = 45,
		[OP_DUMP] = 8,
		[OP_BAD_DEVICE] = 8,
	};
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	unsigned int total = 0;

	for (int k = 0; k < OP_NR; k++)
		total += weights[k];
	for (size_t i = 0; i < nops; i++) {
		uint64_t x = rnd(&s);
		unsigned int pick = (unsigned int)(x % total);
		uint8_t *insn = prog + i * MODEL_OP_BYTES;
		int k = 0;

		while (pick >= weights[k])
			pick -= weights[k++];
		insn[0] = (uint8_t)k;
		insn[1] = (uint8_t)(x >> 32);
		insn[2] = (uint8_t)(x >> 40);
		insn[3] = (uint8_t)(x >> 48);
	}
}

size_t model_shrink(uint8_t *prog, size_t nops)
{
	uint8_t *tmp = malloc(nops * MODEL_OP_BYTES + 1);
	size_t chunk = nops / 2;

	if (!tmp)
		return nops;
	while (chunk >= 1) {
		bool dropped = false;

		for (size_t start = 0; start + chunk <= nops && nops > 1;) {
			size_t n = nops - chunk, r;

			memcpy(tmp, prog, start * MODEL_OP_BYTES);
			memcpy(tmp + start * MODEL_OP_BYTES,
			       prog + (start + chunk) * MODEL_OP_BYTES,
			       (n - start) * MODEL_OP_BYTES);
			r = model_run(tmp, n, NULL);
			if (!r) {
				start += chunk;
				continue;
			}
			nops = r > n ? n : r;
			memcpy(prog, tmp, nops * MODEL_OP_BYTES);
			dropped = true;
		}
		if (!dropped)
			chunk /= 2;
		if (chunk > nops / 2)
			chunk = nops / 2;
	}
	free(tmp);
	return nops;
}
