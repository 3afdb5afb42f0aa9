/* ncc IR: the allocation hook, status names, the arena, module/computation/instruction construction (types and shapes in ir_types.c, literals in ir_literal.c, printing in ir_print.c). */
#include "ir.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

/* ------------------------------------------------------- allocation hook */

static long fail_countdown; /* 0: off; else the allocation that fails, counting down */
static long fail_count;

void ncc_test_fail_alloc_after(long n)
{
	fail_countdown = n > 0 ? n : 0;
}

long ncc_test_alloc_failures(void) { return fail_count; }

static bool should_fail(void)
{
	if (fail_countdown <= 0)
		return false;
	if (--fail_countdown == 0) {
		fail_count++;
		return true;
	}
	return false;
}

void *ncc__malloc(size_t size) { return should_fail() ? NULL : malloc(size); }
void *ncc__calloc(size_t n, size_t size) { return should_fail() ? NULL : calloc(n, size); }
void *ncc__realloc(void *p, size_t size) { return should_fail() ? NULL : realloc(p, size); }

void *ncc__grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return arr;
	size_t nc = *cap ? *cap * 2 : first;
	void *na = nc > SIZE_MAX / elem ? NULL : ncc__realloc(arr, nc * elem);
	if (na)
		*cap = nc;
	return na;
}

/* ------------------------------------------------------------------ status */

const char *ncc_status_name(ncc_status_t st)
{
	switch (st) {
	case NCC_OK: return "ok";
	case NCC_ERR_PARSE: return "parse error";
	case NCC_ERR_VERIFY: return "verification error";
	case NCC_ERR_NOMEM: return "out of memory";
	case NCC_ERR_INVALID: return "invalid argument";
	case NCC_ERR_UNSUPPORTED: return "unsupported";
	case NCC_ERR_IO: return "I/O error";
	case NCC_ERR_LIMIT: return "limit exceeded";
	case NCC_ERR_NOT_FOUND: return "not found";
	case NCC_ERR_INTERNAL: return "internal error";
	}
	return "unknown status";
}

ncc_status_t ncc_error_set(ncc_error_t *err, ncc_status_t st, int line, int col, const char *fmt, ...)
{
	if (!err)
		return st;
	err->status = st;
	err->line = line;
	err->col = col;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return st;
}

ncc_status_t ncc_status_from_ns(ns_status_t st, ncc_status_t fallback)
{
	if (!st)
		return NCC_OK;
	if (ns_status_errno(st) == ENOMEM)
		return NCC_ERR_NOMEM;
	if (ns_status_code(st) == NS_STATUS_RESOURCE_EXHAUSTED)
		return NCC_ERR_LIMIT;
	return fallback;
}

/* ------------------------------------------------------------------- arena */

/* Bump allocator in chunks: modules are built once and freed at once, so per-object
 * frees are never needed and a module of 4,000 instructions costs a few mallocs. */
typedef struct arena_chunk {
	struct arena_chunk *next;
	size_t size;
	size_t used;
	_Alignas(16) unsigned char data[];
} arena_chunk_t;

struct ncc_arena {
	arena_chunk_t *head;
	size_t total;
};

#define ARENA_CHUNK (64u << 10)
/* a single allocation larger than this is refused: guards against size overflow */
#define ARENA_MAX_ALLOC ((size_t)1 << 40)

void *ncc_alloc(ncc_module_t *m, size_t size)
{
	if (!m || !m->arena || size > ARENA_MAX_ALLOC)
		return NULL;
	struct ncc_arena *a = m->arena;
	size = (size + 15) & ~(size_t)15;
	if (size == 0)
		size = 16;
	arena_chunk_t *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t csize = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
		arena_chunk_t *n = ncc__malloc(sizeof(*n) + csize);
		if (!n)
			return NULL;
		n->size = csize;
		n->used = 0;
		if (size > ARENA_CHUNK / 4 && c) {
			/* big blocks go behind the head so the head's free room is kept */
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			a->head = n;
		}
		a->total += csize;
		c = n;
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

bool ncc_replica_groups_from_iota(ncc_module_t *m, ncc_replica_groups_t *rg, int64_t g0,
				  int64_t g1, const int64_t *dims, int32_t nd, const int64_t *perm,
				  int32_t np, int64_t total)
{
	rg->ngroups = (int32_t)g0;
	rg->group_sizes = ncc_alloc(m, sizeof(int32_t) * (size_t)(g0 ? g0 : 1));
	rg->ids = ncc_alloc(m, sizeof(int64_t) * (size_t)(total ? total : 1));
	if (!rg->group_sizes || !rg->ids)
		return false;
	for (int64_t i = 0; i < g0; i++)
		rg->group_sizes[i] = (int32_t)g1;
	/* out flat index -> coordinates in transposed dims -> source flat index */
	int64_t tdims[NCC_MAX_RANK];
	for (int32_t i = 0; i < nd; i++)
		tdims[i] = dims[np ? perm[i] : i];
	for (int64_t o = 0; o < total; o++) {
		int64_t rem = o, coord[NCC_MAX_RANK], src[NCC_MAX_RANK];
		for (int32_t i = nd - 1; i >= 0; i--) {
			coord[i] = tdims[i] ? rem % tdims[i] : 0;
			rem = tdims[i] ? rem / tdims[i] : 0;
		}
		for (int32_t i = 0; i < nd; i++)
			src[np ? perm[i] : i] = coord[i];
		int64_t id = 0;
		for (int32_t i = 0; i < nd; i++)
			id = id * dims[i] + src[i];
		rg->ids[o] = id;
	}
	return true;
}

char *ncc_strndup(ncc_module_t *m, const char *s, size_t len)
{
	char *p = ncc_alloc(m, len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, s, len);
	p[len] = 0;
	return p;
}

char *ncc_strdup(ncc_module_t *m, const char *s) { return ncc_strndup(m, s, strlen(s)); }

static ncc_status_t shape_clone_rec(ncc_module_t *m, const ncc_shape_t *src, ncc_shape_t *dst,
				    int depth)
{
	if (depth > 128)
		return NCC_ERR_LIMIT;
	*dst = *src;
	if (src->layout_extra) {
		dst->layout_extra = ncc_strdup(m, src->layout_extra);
		if (!dst->layout_extra)
			return NCC_ERR_NOMEM;
	}
	if (src->etype == NCC_TUPLE && src->nelems > 0) {
		dst->elems = ncc_alloc(m, sizeof(ncc_shape_t) * (size_t)src->nelems);
		if (!dst->elems)
			return NCC_ERR_NOMEM;
		for (int32_t i = 0; i < src->nelems; i++) {
			ncc_status_t st = shape_clone_rec(m, &src->elems[i], &dst->elems[i], depth + 1);
			if (st)
				return st;
		}
	} else {
		dst->elems = NULL;
		if (src->etype != NCC_TUPLE)
			dst->nelems = 0;
	}
	return NCC_OK;
}

ncc_status_t ncc_shape_clone(ncc_module_t *m, const ncc_shape_t *src, ncc_shape_t *out_shape)
{
	return shape_clone_rec(m, src, out_shape, 0);
}

/* ----------------------------------------------------------- module/comp/inst */

ncc_status_t ncc_module_create(const char *name, ncc_module_t **out_module)
{
	*out_module = NULL;
	ncc_module_t *m = ncc__calloc(1, sizeof(*m));
	if (!m)
		return NCC_ERR_NOMEM;
	m->arena = ncc__calloc(1, sizeof(*m->arena));
	if (!m->arena) {
		free(m);
		return NCC_ERR_NOMEM;
	}
	m->name = ncc_strdup(m, name ? name : "module");
	m->filename = "<input>";
	if (!m->name) {
		ncc_module_free(m);
		return NCC_ERR_NOMEM;
	}
	*out_module = m;
	return NCC_OK;
}

void ncc_module_free(ncc_module_t *m)
{
	if (!m)
		return;
	/* instruction and computation pointer arrays are malloc'd (they grow) */
	for (int32_t i = 0; i < m->ncomps; i++) {
		free(m->comps[i]->insts);
		free(m->comps[i]->params);
	}
	free(m->comps);
	if (m->arena) {
		arena_chunk_t *c = m->arena->head;
		while (c) {
			arena_chunk_t *n = c->next;
			free(c);
			c = n;
		}
		free(m->arena);
	}
	free(m);
}

ncc_status_t ncc_comp_create(ncc_module_t *m, const char *name, bool is_entry,
			     ncc_comp_t **out_comp)
{
	*out_comp = NULL;
	if (!m || !name)
		return NCC_ERR_INVALID;
	if (ncc_module_find_comp(m, name))
		return NCC_ERR_INVALID;
	return ncc__comp_create_unchecked(m, name, is_entry, out_comp);
}

/* The parser checks name uniqueness with its own hash map; this skips the linear
 * check that would make parsing quadratic in the number of computations. */
ncc_status_t ncc__comp_create_unchecked(ncc_module_t *m, const char *name, bool is_entry,
					ncc_comp_t **out_comp)
{
	*out_comp = NULL;
	if (m->ncomps == m->cap_comps) {
		int32_t cap = m->cap_comps ? m->cap_comps * 2 : 8;
		ncc_comp_t **n = ncc__realloc(m->comps, sizeof(*n) * (size_t)cap);
		if (!n)
			return NCC_ERR_NOMEM;
		m->comps = n;
		m->cap_comps = cap;
	}
	ncc_comp_t *c = ncc_alloc(m, sizeof(*c));
	if (!c)
		return NCC_ERR_NOMEM;
	c->name = ncc_strdup(m, name);
	if (!c->name)
		return NCC_ERR_NOMEM;
	c->module = m;
	c->is_entry = is_entry;
	m->comps[m->ncomps++] = c;
	if (is_entry)
		m->entry = c;
	*out_comp = c;
	return NCC_OK;
}

ncc_status_t ncc_inst_create(ncc_comp_t *c, ncc_opcode_t op, const ncc_shape_t *shape,
			     const char *name, ncc_inst_t *const *operands, int32_t n,
			     ncc_inst_t **out_inst)
{
	*out_inst = NULL;
	if (!c || !shape || n < 0 || (n && !operands))
		return NCC_ERR_INVALID;
	ncc_module_t *m = c->module;
	if (c->ninsts == c->cap_insts) {
		int32_t cap = c->cap_insts ? c->cap_insts * 2 : 16;
		ncc_inst_t **ni = ncc__realloc(c->insts, sizeof(*ni) * (size_t)cap);
		if (!ni)
			return NCC_ERR_NOMEM;
		c->insts = ni;
		c->cap_insts = cap;
	}
	ncc_inst_t *inst = ncc_alloc(m, sizeof(*inst));
	if (!inst)
		return NCC_ERR_NOMEM;
	inst->op = op;
	inst->opname = ncc_opcode_name(op);
	inst->id = m->next_id++;
	inst->parent = c;
	inst->feature_group_count = 1;
	inst->batch_group_count = 1;
	if (name) {
		inst->name = ncc_strdup(m, name);
	} else {
		char buf[96];
		snprintf(buf, sizeof(buf), "%s.%u", ncc_opcode_name(op), inst->id);
		inst->name = ncc_strdup(m, buf);
	}
	if (!inst->name)
		return NCC_ERR_NOMEM;
	ncc_status_t st = ncc_shape_clone(m, shape, &inst->shape);
	if (st)
		return st;
	st = ncc_inst_set_operands(inst, operands, n);
	if (st)
		return st;
	c->insts[c->ninsts++] = inst;
	*out_inst = inst;
	return NCC_OK;
}

ncc_status_t ncc_comp_set_param(ncc_comp_t *c, ncc_inst_t *p)
{
	if (!c || !p || p->parameter_number < 0 || p->parameter_number > (1 << 24))
		return NCC_ERR_INVALID;
	int32_t k = (int32_t)p->parameter_number;
	if (k >= c->nparams) {
		ncc_inst_t **np = ncc__realloc(c->params, sizeof(*np) * (size_t)(k + 1));
		if (!np)
			return NCC_ERR_NOMEM;
		for (int32_t i = c->nparams; i <= k; i++)
			np[i] = NULL;
		c->params = np;
		c->nparams = k + 1;
	}
	if (c->params[k] && c->params[k] != p)
		return NCC_ERR_INVALID;
	c->params[k] = p;
	return NCC_OK;
}

ncc_status_t ncc_inst_set_operands(ncc_inst_t *inst, ncc_inst_t *const *operands, int32_t n)
{
	if (n < 0 || (n && !operands))
		return NCC_ERR_INVALID;
	ncc_inst_t **ops = NULL;
	if (n) {
		ops = ncc_alloc(inst->parent->module, sizeof(*ops) * (size_t)n);
		if (!ops)
			return NCC_ERR_NOMEM;
		memcpy(ops, operands, sizeof(*ops) * (size_t)n);
	}
	inst->operands = ops;
	inst->noperands = n;
	return NCC_OK;
}

void ncc_inst_replace_uses(ncc_inst_t *old_inst, ncc_inst_t *new_inst)
{
	ncc_comp_t *c = old_inst->parent;
	for (int32_t i = 0; i < c->ninsts; i++) {
		ncc_inst_t *u = c->insts[i];
		if (u == new_inst)
			continue; /* new_inst may legitimately consume old_inst */
		for (int32_t k = 0; k < u->noperands; k++)
			if (u->operands[k] == old_inst)
				u->operands[k] = new_inst;
	}
	if (c->root == old_inst)
		c->root = new_inst;
}

void ncc_comp_remove_inst(ncc_comp_t *c, ncc_inst_t *inst)
{
	int32_t j = 0;
	for (int32_t i = 0; i < c->ninsts; i++)
		if (c->insts[i] != inst)
			c->insts[j++] = c->insts[i];
	c->ninsts = j;
	if (inst->op == NCC_OP_PARAMETER && inst->parameter_number >= 0 &&
	    inst->parameter_number < c->nparams && c->params[inst->parameter_number] == inst)
		c->params[inst->parameter_number] = NULL;
}

void ncc_comp_move_inst(ncc_comp_t *c, ncc_inst_t *inst, ncc_inst_t *before)
{
	int32_t i, n = c->ninsts;
	for (i = 0; i < n && c->insts[i] != inst; i++)
		;
	if (i == n)
		return;
	memmove(&c->insts[i], &c->insts[i + 1], sizeof(*c->insts) * (size_t)(n - i - 1));
	n--;
	int32_t pos = n;
	if (before)
		for (pos = 0; pos < n && c->insts[pos] != before; pos++)
			;
	memmove(&c->insts[pos + 1], &c->insts[pos], sizeof(*c->insts) * (size_t)(n - pos));
	c->insts[pos] = inst;
}

ncc_comp_t *ncc_module_find_comp(const ncc_module_t *m, const char *name)
{
	for (int32_t i = 0; i < m->ncomps; i++)
		if (strcmp(m->comps[i]->name, name) == 0)
			return m->comps[i];
	return NULL;
}

ncc_inst_t *ncc_comp_find_inst(const ncc_comp_t *c, const char *name)
{
	for (int32_t i = 0; i < c->ninsts; i++)
		if (strcmp(c->insts[i]->name, name) == 0)
			return c->insts[i];
	return NULL;
}

int32_t ncc_inst_use_count(const ncc_inst_t *inst)
{
	const ncc_comp_t *c = inst->parent;
	int32_t n = c->root == inst;
	for (int32_t i = 0; i < c->ninsts; i++)
		for (int32_t k = 0; k < c->insts[i]->noperands; k++)
			n += c->insts[i]->operands[k] == inst;
	return n;
}

