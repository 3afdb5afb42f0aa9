/* ncc IR: arena, module/computation/instruction construction, shapes, opcode and type tables, literals. */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_lexer.h"

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

/* ------------------------------------------------------------ element types */

static const struct {
	const char *name;
	int bits;
} etype_tab[] = {
#define NCC_X_(e, s, b) { s, b },
	NCC_ETYPES(NCC_X_)
#undef NCC_X_
};

const char *ncc_etype_name(ncc_etype_t t)
{
	if ((unsigned)t >= NCC_ETYPE_COUNT)
		return "invalid";
	return etype_tab[t].name;
}

ncc_etype_t ncc_etype_from_name(const char *s, size_t len)
{
	/* "invalid" and "tuple" are not spellable element types */
	for (int i = NCC_PRED; i < NCC_TUPLE; i++)
		if (strlen(etype_tab[i].name) == len && memcmp(etype_tab[i].name, s, len) == 0)
			return (ncc_etype_t)i;
	return NCC_INVALID;
}

int ncc_etype_bits(ncc_etype_t t)
{
	if ((unsigned)t >= NCC_ETYPE_COUNT)
		return 0;
	return etype_tab[t].bits;
}

size_t ncc_etype_storage_bytes(ncc_etype_t t)
{
	int b = ncc_etype_bits(t);
	if (b == 0)
		return 0;
	return b < 8 ? 1 : (size_t)b / 8;
}

bool ncc_etype_is_float(ncc_etype_t t)
{
	return t == NCC_F16 || t == NCC_BF16 || t == NCC_F32 || t == NCC_F64 ||
	       (t >= NCC_F4E2M1FN && t <= NCC_F8E8M0FNU);
}

bool ncc_etype_is_complex(ncc_etype_t t) { return t == NCC_C64 || t == NCC_C128; }
bool ncc_etype_is_signed_int(ncc_etype_t t) { return t >= NCC_S2 && t <= NCC_S64; }
bool ncc_etype_is_unsigned_int(ncc_etype_t t) { return t >= NCC_U2 && t <= NCC_U64; }
bool ncc_etype_is_integral(ncc_etype_t t)
{
	return ncc_etype_is_signed_int(t) || ncc_etype_is_unsigned_int(t);
}
bool ncc_etype_is_array(ncc_etype_t t) { return t > NCC_INVALID && t < NCC_TOKEN; }

/* ------------------------------------------------------------------ shapes */

ncc_shape_t ncc_shape_array(ncc_etype_t t, int32_t rank, const int64_t *dims)
{
	ncc_shape_t s;
	memset(&s, 0, sizeof(s));
	s.etype = t;
	if (rank < 0 || rank > NCC_MAX_RANK)
		rank = 0;
	s.rank = rank;
	for (int32_t i = 0; i < rank; i++) {
		s.dims[i] = dims[i];
		s.minor_to_major[i] = rank - 1 - i;
	}
	s.has_layout = true;
	return s;
}

ncc_shape_t ncc_shape_scalar(ncc_etype_t t) { return ncc_shape_array(t, 0, NULL); }
bool ncc_shape_is_tuple(const ncc_shape_t *s) { return s->etype == NCC_TUPLE; }
bool ncc_shape_is_array(const ncc_shape_t *s) { return ncc_etype_is_array(s->etype); }

int64_t ncc_shape_elements(const ncc_shape_t *s)
{
	if (!ncc_shape_is_array(s))
		return 0;
	int64_t n = 1;
	for (int32_t i = 0; i < s->rank; i++) {
		if (s->dims[i] < 0)
			return -1;
		if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i])
			return -1;
		n *= s->dims[i];
	}
	return n;
}

int64_t ncc_shape_bytes(const ncc_shape_t *s)
{
	int64_t n = ncc_shape_elements(s);
	int64_t b = (int64_t)ncc_etype_storage_bytes(s->etype);
	if (n < 0 || (b && n > INT64_MAX / b))
		return -1;
	return n * b;
}

bool ncc_shape_equal(const ncc_shape_t *a, const ncc_shape_t *b, bool compare_layout)
{
	if (a->etype != b->etype)
		return false;
	if (a->etype == NCC_TUPLE) {
		if (a->nelems != b->nelems)
			return false;
		for (int32_t i = 0; i < a->nelems; i++)
			if (!ncc_shape_equal(&a->elems[i], &b->elems[i], compare_layout))
				return false;
		return true;
	}
	if (a->rank != b->rank)
		return false;
	for (int32_t i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] || a->dynamic[i] != b->dynamic[i])
			return false;
	if (compare_layout && a->has_layout && b->has_layout) {
		for (int32_t i = 0; i < a->rank; i++)
			if (a->minor_to_major[i] != b->minor_to_major[i])
				return false;
		const char *x = a->layout_extra ? a->layout_extra : "";
		const char *y = b->layout_extra ? b->layout_extra : "";
		if (strcmp(x, y) != 0)
			return false;
	}
	return true;
}

/* snprintf into a moving window that tolerates truncation and counts the need */
typedef struct sbuf {
	char *buf;
	size_t size;
	size_t len; /* needed length so far */
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = b->len < b->size ? b->size - b->len : 0;
	int n = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n;
}

static void shape_str(sbuf_t *b, const ncc_shape_t *s, bool with_layout, int depth)
{
	if (s->etype == NCC_TUPLE) {
		sb_printf(b, "(");
		for (int32_t i = 0; i < s->nelems; i++) {
			if (i)
				sb_printf(b, ", ");
			if (i && i % 5 == 0)
				sb_printf(b, "/*index=%d*/", (int)i);
			if (depth < 64)
				shape_str(b, &s->elems[i], with_layout, depth + 1);
		}
		sb_printf(b, ")");
		return;
	}
	sb_printf(b, "%s[", ncc_etype_name(s->etype));
	for (int32_t i = 0; i < s->rank; i++) {
		if (i)
			sb_printf(b, ",");
		if (s->dynamic[i] && s->dims[i] == NCC_DIM_UNBOUNDED)
			sb_printf(b, "?");
		else if (s->dynamic[i])
			sb_printf(b, "<=%lld", (long long)s->dims[i]);
		else
			sb_printf(b, "%lld", (long long)s->dims[i]);
	}
	sb_printf(b, "]");
	/* XLA prints no layout for scalars of rank 0 ("f32[]"); keep that habit */
	if (with_layout && s->has_layout && (s->rank > 0 || s->layout_extra) &&
	    ncc_etype_is_array(s->etype)) {
		sb_printf(b, "{");
		for (int32_t i = 0; i < s->rank; i++)
			sb_printf(b, i ? ",%d" : "%d", (int)s->minor_to_major[i]);
		if (s->layout_extra)
			sb_printf(b, ":%s", s->layout_extra);
		sb_printf(b, "}");
	}
}

int ncc_shape_to_string(const ncc_shape_t *s, bool with_layout, char *buf, size_t size)
{
	sbuf_t b = { buf, size, 0 };
	if (size)
		buf[0] = 0;
	shape_str(&b, s, with_layout, 0);
	if (size)
		buf[b.len < size ? b.len : size - 1] = 0;
	return (int)b.len;
}

/* ---------------------------------------------------------------- opcodes */

static const char *const opcode_names[] = {
#define NCC_X_(e, s) s,
	NCC_OPCODES(NCC_X_)
#undef NCC_X_
};

const char *ncc_opcode_name(ncc_opcode_t op)
{
	if ((unsigned)op >= NCC_OP_COUNT)
		return "unknown";
	return opcode_names[op];
}

ncc_opcode_t ncc_opcode_from_name(const char *s, size_t len)
{
	for (int i = 1; i < NCC_OP_COUNT; i++)
		if (strlen(opcode_names[i]) == len && memcmp(opcode_names[i], s, len) == 0)
			return (ncc_opcode_t)i;
	if (len == 20 && memcmp(s, "optimization-barrier", 20) == 0)
		return NCC_OP_OPTIMIZATION_BARRIER;
	if (len == 3 && memcmp(s, "clz", 3) == 0)
		return NCC_OP_CLZ;
	return NCC_OP_UNKNOWN;
}

bool ncc_opcode_is_elementwise_unary(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_ABS: case NCC_OP_CBRT: case NCC_OP_CEIL: case NCC_OP_CLZ: case NCC_OP_COS:
	case NCC_OP_ERF: case NCC_OP_EXP: case NCC_OP_EXPM1: case NCC_OP_FLOOR: case NCC_OP_IMAG:
	case NCC_OP_IS_FINITE: case NCC_OP_LOG: case NCC_OP_LOG1P: case NCC_OP_LOGISTIC:
	case NCC_OP_NEGATE: case NCC_OP_NOT: case NCC_OP_POPCNT: case NCC_OP_REAL:
	case NCC_OP_REDUCE_PRECISION: case NCC_OP_ROUND_NEAREST_AFZ:
	case NCC_OP_ROUND_NEAREST_EVEN: case NCC_OP_RSQRT: case NCC_OP_SIGN: case NCC_OP_SIN:
	case NCC_OP_SQRT: case NCC_OP_TAN: case NCC_OP_TANH: case NCC_OP_COPY:
	case NCC_OP_CONVERT:
		return true;
	default:
		return false;
	}
}

bool ncc_opcode_is_elementwise_binary(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_ADD: case NCC_OP_ATAN2: case NCC_OP_COMPARE: case NCC_OP_COMPLEX:
	case NCC_OP_DIVIDE: case NCC_OP_MAXIMUM: case NCC_OP_MINIMUM: case NCC_OP_MULTIPLY:
	case NCC_OP_POWER: case NCC_OP_REMAINDER: case NCC_OP_SUBTRACT: case NCC_OP_AND:
	case NCC_OP_OR: case NCC_OP_XOR: case NCC_OP_SHIFT_LEFT:
	case NCC_OP_SHIFT_RIGHT_ARITHMETIC: case NCC_OP_SHIFT_RIGHT_LOGICAL:
	case NCC_OP_STOCHASTIC_CONVERT:
		return true;
	default:
		return false;
	}
}

bool ncc_opcode_is_elementwise(ncc_opcode_t op)
{
	return ncc_opcode_is_elementwise_unary(op) || ncc_opcode_is_elementwise_binary(op) ||
	       op == NCC_OP_SELECT || op == NCC_OP_CLAMP || op == NCC_OP_MAP;
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

/* The parser checks name uniqueness with its own hash map; this skips the linear
 * check that would make parsing quadratic in the number of computations. */
ncc_status_t ncc__comp_create_unchecked(ncc_module_t *m, const char *name, bool is_entry,
					ncc_comp_t **out_comp);

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

/* ---------------------------------------------------------------- literals */

/* Shared with the parser (not API): encodes v in a <= 16-bit float format. */
uint32_t ncc__minifloat_encode(ncc_etype_t t, double v);

/* Small float formats as (exponent bits, mantissa bits, bias, finite-only/nan
 * encoding): enough to decode every f8/f4 variant XLA knows and to encode
 * f16/bf16 exactly with round-to-nearest-even. */
typedef struct minifloat {
	int ebits, mbits, bias;
	bool ieee;      /* has inf and nan like IEEE (all-ones exponent) */
	bool fn;        /* no inf; nan is all-ones exponent and mantissa */
	bool fnuz;      /* no inf, no -0; nan is the 1000..0 pattern */
	bool unsigned_; /* e8m0: no sign, no mantissa */
} minifloat_t;

static bool minifloat_of(ncc_etype_t t, minifloat_t *f)
{
	static const struct {
		ncc_etype_t t;
		minifloat_t f;
	} tab[] = {
		{ NCC_F16, { 5, 10, 15, true, false, false, false } },
		{ NCC_BF16, { 8, 7, 127, true, false, false, false } },
		{ NCC_F8E5M2, { 5, 2, 15, true, false, false, false } },
		{ NCC_F8E4M3, { 4, 3, 7, true, false, false, false } },
		{ NCC_F8E3M4, { 3, 4, 3, true, false, false, false } },
		{ NCC_F8E4M3FN, { 4, 3, 7, false, true, false, false } },
		{ NCC_F8E4M3FNUZ, { 4, 3, 8, false, false, true, false } },
		{ NCC_F8E5M2FNUZ, { 5, 2, 16, false, false, true, false } },
		{ NCC_F8E4M3B11FNUZ, { 4, 3, 11, false, false, true, false } },
		{ NCC_F4E2M1FN, { 2, 1, 1, false, false, false, false } },
		{ NCC_F8E8M0FNU, { 8, 0, 127, false, false, false, true } },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].t == t) {
			*f = tab[i].f;
			return true;
		}
	return false;
}

static double minifloat_decode(const minifloat_t *f, uint32_t bits)
{
	if (f->unsigned_) {
		if (bits == 0xff)
			return NAN;
		return ldexp(1.0, (int)bits - f->bias);
	}
	int total = 1 + f->ebits + f->mbits;
	uint32_t sign = (bits >> (total - 1)) & 1;
	uint32_t e = (bits >> f->mbits) & ((1u << f->ebits) - 1);
	uint32_t mant = bits & ((1u << f->mbits) - 1);
	uint32_t emax = (1u << f->ebits) - 1;
	if (f->fnuz && sign && e == 0 && mant == 0)
		return NAN;
	if (f->ieee && e == emax)
		return mant ? NAN : (sign ? -INFINITY : INFINITY);
	if (f->fn && e == emax && mant == (1u << f->mbits) - 1)
		return NAN;
	double v;
	if (e == 0)
		v = ldexp((double)mant, 1 - f->bias - f->mbits);
	else
		v = ldexp((double)(mant | (1u << f->mbits)), (int)e - f->bias - f->mbits);
	return sign ? -v : v;
}

/* Encodes by searching for the nearest representable value: formats are at most 16
 * bits, and only constants are converted, so exhaustive search over exponents
 * would be overkill; instead round the scaled mantissa with nearest-even. */
static uint32_t minifloat_encode(const minifloat_t *f, double v)
{
	int total = 1 + f->ebits + f->mbits;
	uint32_t emax = (1u << f->ebits) - 1;
	if (f->unsigned_) {
		if (isnan(v) || v <= 0)
			return 0xff;
		int e;
		frexp(v, &e);
		int be = e - 1 + f->bias;
		return be < 0 ? 0 : be > 254 ? 254 : (uint32_t)be;
	}
	uint32_t sign = signbit(v) ? 1u : 0u;
	uint32_t nan_bits, inf_bits;
	if (f->ieee) {
		nan_bits = (emax << f->mbits) | (1u << (f->mbits ? f->mbits - 1 : 0));
		inf_bits = emax << f->mbits;
	} else if (f->fn) {
		nan_bits = (emax << f->mbits) | ((1u << f->mbits) - 1);
		inf_bits = nan_bits; /* no inf: overflow saturates to nan like XLA's converts */
	} else if (f->fnuz) {
		nan_bits = 1u << (total - 1);
		inf_bits = nan_bits;
		sign = sign && v != 0 ? sign : 0;
	} else { /* f4e2m1fn: no inf, no nan: saturate */
		nan_bits = (emax << f->mbits) | ((1u << f->mbits) - 1);
		inf_bits = nan_bits;
	}
	if (isnan(v))
		return f->fnuz ? nan_bits : (sign << (total - 1)) | nan_bits;
	double a = fabs(v);
	/* largest finite */
	uint32_t maxbits;
	if (f->ieee)
		maxbits = ((emax - 1) << f->mbits) | ((1u << f->mbits) - 1);
	else if (f->fn)
		maxbits = (emax << f->mbits) | ((1u << f->mbits) - 2);
	else
		maxbits = (emax << f->mbits) | ((1u << f->mbits) - 1);
	double maxv = minifloat_decode(f, maxbits);
	if (isinf(a)) {
		if (f->fnuz)
			return inf_bits;
		return (sign << (total - 1)) | inf_bits;
	}
	/* round to nearest even at the target precision */
	int e;
	frexp(a, &e); /* a = m * 2^e, m in [0.5,1) */
	int exp_unb = e - 1;
	int min_exp = 1 - f->bias;
	if (exp_unb < min_exp)
		exp_unb = min_exp;
	double scale = ldexp(1.0, f->mbits - exp_unb);
	double q = nearbyint(a * scale); /* default rounding mode is nearest-even */
	double r = q / scale;
	if (r > maxv) {
		if (f->ieee)
			return (sign << (total - 1)) | inf_bits;
		return (f->fnuz ? 0 : sign << (total - 1)) | (f->fnuz || f->fn ? inf_bits : maxbits);
	}
	uint32_t bits;
	if (r == 0) {
		bits = 0;
	} else {
		int re;
		frexp(r, &re);
		int ru = re - 1;
		if (ru < min_exp) { /* subnormal */
			bits = (uint32_t)nearbyint(ldexp(r, f->bias - 1 + f->mbits));
		} else {
			uint32_t be = (uint32_t)(ru + f->bias);
			uint32_t mant = (uint32_t)nearbyint(ldexp(r, f->mbits - ru)) - (1u << f->mbits);
			bits = (be << f->mbits) | mant;
		}
	}
	if (f->fnuz && bits == 0)
		return 0;
	return (sign << (total - 1)) | bits;
}

static uint64_t load_uint(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	switch (n) {
	case 1: v = p[0]; break;
	case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
	case 8: memcpy(&v, p, 8); break;
	}
	return v;
}

static void store_uint(uint8_t *p, size_t n, uint64_t v)
{
	switch (n) {
	case 1: p[0] = (uint8_t)v; break;
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	case 8: memcpy(p, &v, 8); break;
	}
}

double ncc_literal_get_f64(const ncc_literal_t *lit, int64_t i)
{
	size_t es = ncc_etype_storage_bytes(lit->etype);
	if (!lit->data || i < 0 || i >= lit->count || !es)
		return 0;
	const uint8_t *p = lit->data + (size_t)i * es;
	minifloat_t f;
	switch (lit->etype) {
	case NCC_F32: case NCC_C64: { float x; memcpy(&x, p, 4); return x; }
	case NCC_F64: case NCC_C128: { double x; memcpy(&x, p, 8); return x; }
	case NCC_PRED: return p[0] ? 1 : 0;
	default: break;
	}
	if (minifloat_of(lit->etype, &f))
		return minifloat_decode(&f, (uint32_t)load_uint(p, es));
	if (ncc_etype_is_signed_int(lit->etype))
		return (double)ncc_literal_get_i64(lit, i);
	return (double)load_uint(p, es);
}

int64_t ncc_literal_get_i64(const ncc_literal_t *lit, int64_t i)
{
	size_t es = ncc_etype_storage_bytes(lit->etype);
	if (!lit->data || i < 0 || i >= lit->count || !es)
		return 0;
	const uint8_t *p = lit->data + (size_t)i * es;
	if (ncc_etype_is_signed_int(lit->etype)) {
		uint64_t u = load_uint(p, es);
		int bits = ncc_etype_bits(lit->etype);
		/* sign-extend from the logical width (s2/s4 are stored in a byte) */
		uint64_t sb = 1ull << (bits - 1);
		if (bits < 64)
			u &= (1ull << bits) - 1;
		return (int64_t)((u ^ sb) - sb);
	}
	if (ncc_etype_is_unsigned_int(lit->etype) || lit->etype == NCC_PRED)
		return (int64_t)load_uint(p, es);
	double d = ncc_literal_get_f64(lit, i);
	if (isnan(d))
		return 0;
	if (d >= 9.2e18)
		return INT64_MAX;
	if (d <= -9.2e18)
		return INT64_MIN;
	return (int64_t)d;
}

ncc_status_t ncc_literal_init(ncc_module_t *m, ncc_literal_t *lit, ncc_etype_t t, int64_t count)
{
	memset(lit, 0, sizeof(*lit));
	size_t es = ncc_etype_storage_bytes(t);
	if (!es || count < 0 || (count && (uint64_t)count > (1ull << 40) / es))
		return NCC_ERR_INVALID;
	lit->present = true;
	lit->etype = t;
	lit->count = count;
	lit->nbytes = (size_t)count * es;
	if (lit->nbytes) {
		lit->data = ncc_alloc(m, lit->nbytes);
		if (!lit->data)
			return NCC_ERR_NOMEM;
	}
	return NCC_OK;
}

void ncc_literal_set_f64(ncc_literal_t *lit, int64_t i, double v)
{
	size_t es = ncc_etype_storage_bytes(lit->etype);
	if (!lit->data || i < 0 || i >= lit->count || !es)
		return;
	uint8_t *p = lit->data + (size_t)i * es;
	minifloat_t f;
	if (lit->etype == NCC_F32 || lit->etype == NCC_C64) {
		float x = (float)v;
		memcpy(p, &x, 4);
	} else if (lit->etype == NCC_F64 || lit->etype == NCC_C128) {
		memcpy(p, &v, 8);
	} else if (lit->etype == NCC_PRED) {
		p[0] = v != 0;
	} else if (minifloat_of(lit->etype, &f)) {
		store_uint(p, es, minifloat_encode(&f, v));
	} else if (ncc_etype_is_signed_int(lit->etype)) {
		int64_t x = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
		store_uint(p, es, (uint64_t)x);
	} else {
		uint64_t x = isnan(v) || v <= 0 ? 0 : v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
		store_uint(p, es, x);
	}
}

uint32_t ncc__minifloat_encode(ncc_etype_t t, double v)
{
	minifloat_t f;
	if (!minifloat_of(t, &f))
		return 0;
	return minifloat_encode(&f, v);
}

/* ---------------------------------------------------------------- printing */

/* Growing string buffer for the printer; on OOM it stops growing and records it. */
typedef struct strbuf {
	char *s;
	size_t len, cap;
	bool oom;
} strbuf_t;

static void sbp(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbp(strbuf_t *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->cap - b->len;
		int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *ns = ncc__realloc(b->s, cap);
		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
}

static void print_shape(strbuf_t *b, const ncc_shape_t *s)
{
	char small[512];
	int n = ncc_shape_to_string(s, true, small, sizeof(small));
	if ((size_t)n < sizeof(small)) {
		sbp(b, "%s", small);
		return;
	}
	char *big = ncc__malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	ncc_shape_to_string(s, true, big, (size_t)n + 1);
	sbp(b, "%s", big);
	free(big);
}

static void print_string(strbuf_t *b, const char *s)
{
	sbp(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			sbp(b, "\\%c", c);
		else if (c == '\n')
			sbp(b, "\\n");
		else if (c == '\t')
			sbp(b, "\\t");
		else if (c == '\r')
			sbp(b, "\\r");
		else
			sbp(b, "%c", c);
	}
	sbp(b, "\"");
}

/* True when s lexes as one identifier. */
static bool is_ident_text(const char *s)
{
	ncc_lexer_t lx;
	size_t n = strlen(s);
	ncc_lex_init(&lx, s, n);
	ncc_token_t t = ncc_lex_next(&lx);
	return t.kind == NCC_TOK_IDENT && t.pos == 0 && t.len == n;
}

/* True when s is one balanced {...} group the parser captures whole: a
 * backend_config like "{abc" or "{a}b" must be printed as a quoted string. */
static bool is_balanced_text(const char *s)
{
	ncc_lexer_t lx;
	size_t n = strlen(s);
	ncc_lex_init(&lx, s, n);
	return ncc_lex_skip_balanced(&lx, NCC_PARSE_MAX_DEPTH) && lx.pos == n;
}

static void print_ilist(strbuf_t *b, const ncc_ilist_t *l)
{
	sbp(b, "{");
	for (int32_t i = 0; i < l->n; i++)
		sbp(b, i ? ",%lld" : "%lld", (long long)l->v[i]);
	sbp(b, "}");
}

/* Shortest decimal that reads back to the same value of type t (F64 for doubles),
 * like XLA's own printer: "1e-05", not "9.99999975e-06". */
static void print_float_t(strbuf_t *b, double d, ncc_etype_t t)
{
	if (isnan(d)) {
		sbp(b, signbit(d) ? "-nan" : "nan");
		return;
	}
	if (isinf(d)) {
		sbp(b, d < 0 ? "-inf" : "inf");
		return;
	}
	char tb[64];
	if (d == floor(d) && fabs(d) < 1e15) {
		/* integral values as integers ("-30000", not "-3e+04"), as XLA prints them */
		sbp(b, "%s%.0f", signbit(d) && d == 0 ? "-" : "", fabs(d) * (d < 0 ? -1 : 1));
		return;
	}
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(tb, sizeof(tb), "%.*g", digits, d);
		bool same;
		if (t == NCC_F32 || t == NCC_C64)
			same = strtof(tb, NULL) == (float)d;
		else if (t == NCC_F64 || t == NCC_C128)
			same = strtod(tb, NULL) == d;
		else
			same = ncc__minifloat_encode(t, strtod(tb, NULL)) == ncc__minifloat_encode(t, d);
		if (same)
			break;
	}
	sbp(b, "%s", tb);
}

static void print_float(strbuf_t *b, double d, int digits)
{
	print_float_t(b, d, digits > 9 ? NCC_F64 : NCC_F32);
}

static void print_elem(strbuf_t *b, const ncc_literal_t *lit, int64_t i, ncc_etype_t t)
{
	size_t es = ncc_etype_storage_bytes(t);
	const uint8_t *p = lit->data + (size_t)i * es;
	if (t == NCC_PRED) {
		sbp(b, p[0] ? "true" : "false");
	} else if (ncc_etype_is_signed_int(t)) {
		sbp(b, "%lld", (long long)ncc_literal_get_i64(lit, i));
	} else if (ncc_etype_is_unsigned_int(t)) {
		sbp(b, "%llu", (unsigned long long)load_uint(p, es));
	} else if (t == NCC_C64) {
		float re, im;
		memcpy(&re, p, 4);
		memcpy(&im, p + 4, 4);
		sbp(b, "(");
		print_float_t(b, re, NCC_F32);
		sbp(b, ", ");
		print_float_t(b, im, NCC_F32);
		sbp(b, ")");
	} else if (t == NCC_C128) {
		double re, im;
		memcpy(&re, p, 8);
		memcpy(&im, p + 8, 8);
		sbp(b, "(");
		print_float_t(b, re, NCC_F64);
		sbp(b, ", ");
		print_float_t(b, im, NCC_F64);
		sbp(b, ")");
	} else {
		print_float_t(b, ncc_literal_get_f64(lit, i), t);
	}
}

static void print_lit_dim(strbuf_t *b, const ncc_literal_t *lit, const ncc_shape_t *s, int dim,
			  int64_t *idx)
{
	sbp(b, "{");
	for (int64_t k = 0; k < s->dims[dim]; k++) {
		if (k)
			sbp(b, ", ");
		if (dim + 1 < s->rank)
			print_lit_dim(b, lit, s, dim + 1, idx);
		else
			print_elem(b, lit, (*idx)++, s->etype);
	}
	sbp(b, "}");
}

/* Prints a (sub)literal whose data starts at byte *off of lit (the leaves of a tuple
 * literal are stored back to back, each with its own element size). */
static void print_literal_rec(strbuf_t *b, const ncc_literal_t *lit, const ncc_shape_t *s,
			      int64_t *off, int depth)
{
	if (s->etype == NCC_TUPLE) {
		sbp(b, "(");
		for (int32_t i = 0; i < s->nelems && depth < 64; i++) {
			if (i)
				sbp(b, ", ");
			print_literal_rec(b, lit, &s->elems[i], off, depth + 1);
		}
		sbp(b, ")");
		return;
	}
	if (lit->elided || !lit->data) {
		if (lit->elided || ncc_shape_elements(s) != 0 || s->rank == 0) {
			if (!lit->elided && s->rank == 0)
				sbp(b, "0");
			else
				sbp(b, "{...}");
			return;
		}
	}
	/* leaves of a tuple literal share one buffer: view this leaf's part */
	ncc_literal_t view = *lit;
	size_t es = ncc_etype_storage_bytes(s->etype);
	int64_t n = ncc_shape_elements(s);
	view.etype = s->etype;
	if (n < 0 || (uint64_t)*off + (uint64_t)n * es > lit->nbytes) {
		sbp(b, "{...}"); /* not in the buffer: never read past it */
		return;
	}
	view.data = lit->data + *off;
	view.count = n;
	*off += n * (int64_t)es;
	if (s->rank == 0) {
		if (view.data)
			print_elem(b, &view, 0, s->etype);
		return;
	}
	int64_t idx = 0;
	print_lit_dim(b, &view, s, 0, &idx);
}

static void print_comp_ref(strbuf_t *b, const ncc_comp_t *c)
{
	sbp(b, "%%%s", c ? c->name : "<null>");
}

static void print_comp_list(strbuf_t *b, ncc_comp_t *const *cs, int32_t n)
{
	sbp(b, "{");
	for (int32_t i = 0; i < n; i++) {
		if (i)
			sbp(b, ", ");
		print_comp_ref(b, cs[i]);
	}
	sbp(b, "}");
}

static const char *cmp_dir_name(ncc_cmp_dir_t d)
{
	static const char *const n[] = { "", "EQ", "NE", "LT", "LE", "GT", "GE" };
	return (unsigned)d < 7 ? n[d] : "";
}

static void print_inst(strbuf_t *b, const ncc_inst_t *in)
{
	if (in->parent && in->parent->root == in)
		sbp(b, "ROOT ");
	sbp(b, "%%%s = ", in->name);
	print_shape(b, &in->shape);
	sbp(b, " %s(", in->op == NCC_OP_UNKNOWN && in->opname ? in->opname : ncc_opcode_name(in->op));
	if (in->op == NCC_OP_PARAMETER) {
		sbp(b, "%lld", (long long)in->parameter_number);
	} else if (in->op == NCC_OP_CONSTANT) {
		int64_t off = 0;
		print_literal_rec(b, &in->literal, &in->shape, &off, 0);
	} else {
		for (int32_t i = 0; i < in->noperands; i++) {
			if (i)
				sbp(b, ", ");
			if (i && i % 5 == 0)
				sbp(b, "/*index=%d*/", (int)i);
			print_shape(b, &in->operands[i]->shape);
			sbp(b, " %%%s", in->operands[i]->name);
		}
	}
	sbp(b, ")");
	if (in->dimensions.present) {
		sbp(b, ", dimensions=");
		print_ilist(b, &in->dimensions);
	}
	if (in->op == NCC_OP_GET_TUPLE_ELEMENT)
		sbp(b, ", index=%lld", (long long)in->tuple_index);
	if (in->op == NCC_OP_IOTA)
		sbp(b, ", iota_dimension=%lld", (long long)in->iota_dimension);
	if (in->window) {
		const ncc_window_t *w = in->window;
		sbp(b, ", window={");
		if (w->n) {
			bool any_stride = false, any_pad = false, any_ld = false, any_rd = false, any_rev = false;
			for (int32_t i = 0; i < w->n; i++) {
				any_stride |= w->dims[i].stride != 1;
				any_pad |= w->dims[i].pad_lo || w->dims[i].pad_hi;
				any_ld |= w->dims[i].lhs_dilation != 1;
				any_rd |= w->dims[i].rhs_dilation != 1;
				any_rev |= w->dims[i].reversal;
			}
			sbp(b, "size=");
			for (int32_t i = 0; i < w->n; i++)
				sbp(b, i ? "x%lld" : "%lld", (long long)w->dims[i].size);
			if (any_stride) {
				sbp(b, " stride=");
				for (int32_t i = 0; i < w->n; i++)
					sbp(b, i ? "x%lld" : "%lld", (long long)w->dims[i].stride);
			}
			if (any_pad) {
				sbp(b, " pad=");
				for (int32_t i = 0; i < w->n; i++)
					sbp(b, i ? "x%lld_%lld" : "%lld_%lld", (long long)w->dims[i].pad_lo,
					    (long long)w->dims[i].pad_hi);
			}
			if (any_ld) {
				sbp(b, " lhs_dilate=");
				for (int32_t i = 0; i < w->n; i++)
					sbp(b, i ? "x%lld" : "%lld", (long long)w->dims[i].lhs_dilation);
			}
			if (any_rd) {
				sbp(b, " rhs_dilate=");
				for (int32_t i = 0; i < w->n; i++)
					sbp(b, i ? "x%lld" : "%lld", (long long)w->dims[i].rhs_dilation);
			}
			if (any_rev) {
				sbp(b, " rhs_reversal=");
				for (int32_t i = 0; i < w->n; i++)
					sbp(b, i ? "x%d" : "%d", w->dims[i].reversal ? 1 : 0);
			}
		}
		sbp(b, "}");
	}
	if (in->conv) {
		const ncc_conv_dnums_t *c = in->conv;
		int n = c->nspatial + 2;
		char lab[3][NCC_MAX_RANK + 1];
		for (int k = 0; k < 3; k++) {
			memset(lab[k], '?', (size_t)n);
			lab[k][n] = 0;
		}
		if (c->in_batch < n) lab[0][c->in_batch] = 'b';
		if (c->in_feature < n) lab[0][c->in_feature] = 'f';
		if (c->k_in_feature < n) lab[1][c->k_in_feature] = 'i';
		if (c->k_out_feature < n) lab[1][c->k_out_feature] = 'o';
		if (c->out_batch < n) lab[2][c->out_batch] = 'b';
		if (c->out_feature < n) lab[2][c->out_feature] = 'f';
		for (int i = 0; i < c->nspatial; i++) {
			if (c->in_spatial[i] < n) lab[0][c->in_spatial[i]] = (char)('0' + i);
			if (c->k_spatial[i] < n) lab[1][c->k_spatial[i]] = (char)('0' + i);
			if (c->out_spatial[i] < n) lab[2][c->out_spatial[i]] = (char)('0' + i);
		}
		sbp(b, ", dim_labels=%s_%s->%s", lab[0], lab[1], lab[2]);
	}
	if (in->feature_group_count != 1)
		sbp(b, ", feature_group_count=%lld", (long long)in->feature_group_count);
	if (in->batch_group_count != 1)
		sbp(b, ", batch_group_count=%lld", (long long)in->batch_group_count);
	if (in->padding) {
		sbp(b, ", padding=");
		for (int32_t i = 0; i < in->padding->n; i++) {
			const ncc_pad_dim_t *d = &in->padding->dims[i];
			sbp(b, "%s%lld_%lld", i ? "x" : "", (long long)d->lo, (long long)d->hi);
			if (d->interior)
				sbp(b, "_%lld", (long long)d->interior);
		}
	}
	if (in->slice) {
		sbp(b, ", slice={");
		for (int32_t i = 0; i < in->slice->n; i++) {
			const ncc_slice_dim_t *d = &in->slice->dims[i];
			sbp(b, "%s[%lld:%lld", i ? ", " : "", (long long)d->start, (long long)d->limit);
			if (d->stride != 1)
				sbp(b, ":%lld", (long long)d->stride);
			sbp(b, "]");
		}
		sbp(b, "}");
	}
	if (in->dynamic_slice_sizes.present) {
		sbp(b, ", dynamic_slice_sizes=");
		print_ilist(b, &in->dynamic_slice_sizes);
	}
	if (in->dot) {
		const ncc_dot_dnums_t *d = in->dot;
		const ncc_ilist_t *l[4] = { &d->lhs_batch, &d->lhs_contracting, &d->rhs_batch,
					    &d->rhs_contracting };
		const char *nm[4] = { "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
				      "rhs_contracting_dims" };
		for (int i = 0; i < 4; i++)
			if (l[i]->present) {
				sbp(b, ", %s=", nm[i]);
				print_ilist(b, l[i]);
			}
	}
	if (in->cmp_dir)
		sbp(b, ", direction=%s", cmp_dir_name(in->cmp_dir));
	if (in->cmp_type) {
		static const char *const n[] = { "", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" };
		sbp(b, ", type=%s", n[in->cmp_type]);
	}
	if (in->nprecision) {
		static const char *const n[] = { "default", "high", "highest" };
		sbp(b, ", operand_precision={");
		for (int32_t i = 0; i < in->nprecision; i++)
			sbp(b, "%s%s", i ? "," : "", n[in->operand_precision[i]]);
		sbp(b, "}");
	}
	if (in->gather) {
		const ncc_gather_dnums_t *g = in->gather;
		const ncc_ilist_t *l[6] = { &g->offset_dims, &g->collapsed_slice_dims,
					    &g->start_index_map, &g->operand_batching_dims,
					    &g->start_indices_batching_dims, &g->slice_sizes };
		const char *nm[6] = { "offset_dims", "collapsed_slice_dims", "start_index_map",
				      "operand_batching_dims", "start_indices_batching_dims",
				      "slice_sizes" };
		for (int i = 0; i < 6; i++) {
			if (i == 5)
				sbp(b, ", index_vector_dim=%lld", (long long)g->index_vector_dim);
			if (l[i]->present) {
				sbp(b, ", %s=", nm[i]);
				print_ilist(b, l[i]);
			}
		}
	}
	if (in->scatter) {
		const ncc_scatter_dnums_t *s = in->scatter;
		const ncc_ilist_t *l[5] = { &s->update_window_dims, &s->inserted_window_dims,
					    &s->scatter_dims_to_operand_dims, &s->input_batching_dims,
					    &s->scatter_indices_batching_dims };
		const char *nm[5] = { "update_window_dims", "inserted_window_dims",
				      "scatter_dims_to_operand_dims", "input_batching_dims",
				      "scatter_indices_batching_dims" };
		for (int i = 0; i < 5; i++)
			if (l[i]->present) {
				sbp(b, ", %s=", nm[i]);
				print_ilist(b, l[i]);
			}
		sbp(b, ", index_vector_dim=%lld", (long long)s->index_vector_dim);
	}
	if (in->indices_are_sorted)
		sbp(b, ", indices_are_sorted=true");
	if (in->unique_indices)
		sbp(b, ", unique_indices=true");
	if (in->to_apply) {
		sbp(b, ", to_apply=");
		print_comp_ref(b, in->to_apply);
	}
	if (in->condition) {
		sbp(b, ", condition=");
		print_comp_ref(b, in->condition);
	}
	if (in->body) {
		sbp(b, ", body=");
		print_comp_ref(b, in->body);
	}
	if (in->select) {
		sbp(b, ", select=");
		print_comp_ref(b, in->select);
	}
	if (in->scatter_comp) {
		sbp(b, ", scatter=");
		print_comp_ref(b, in->scatter_comp);
	}
	if (in->ncalled && in->op != NCC_OP_CUSTOM_CALL) {
		sbp(b, ", calls=");
		print_comp_list(b, in->called, in->ncalled);
	} else if (in->calls) {
		sbp(b, ", calls=");
		print_comp_ref(b, in->calls);
	}
	if (in->ncalled && in->op == NCC_OP_CUSTOM_CALL) {
		sbp(b, ", called_computations=");
		print_comp_list(b, in->called, in->ncalled);
	}
	if (in->nbranches) {
		if (in->branches_are_pred && in->nbranches == 2) {
			sbp(b, ", true_computation=");
			print_comp_ref(b, in->branches[0]);
			sbp(b, ", false_computation=");
			print_comp_ref(b, in->branches[1]);
		} else {
			sbp(b, ", branch_computations=");
			print_comp_list(b, in->branches, in->nbranches);
		}
	}
	if (in->fusion_kind)
		sbp(b, ", kind=%s", in->fusion_kind);
	if (in->custom_call_target) {
		sbp(b, ", custom_call_target=");
		print_string(b, in->custom_call_target);
	}
	if (in->custom_call_has_side_effect)
		sbp(b, ", custom_call_has_side_effect=true");
	if (in->api_version)
		sbp(b, ", api_version=%s", in->api_version);
	if (in->replica_groups.present) {
		const ncc_replica_groups_t *g = &in->replica_groups;
		if (g->iota_text) {
			sbp(b, ", replica_groups=%s", g->iota_text);
		} else {
			sbp(b, ", replica_groups={");
			int64_t k = 0;
			for (int32_t i = 0; i < g->ngroups; i++) {
				sbp(b, "%s{", i ? "," : "");
				for (int32_t j = 0; j < g->group_sizes[i]; j++)
					sbp(b, j ? ",%lld" : "%lld", (long long)g->ids[k++]);
				sbp(b, "}");
			}
			sbp(b, "}");
		}
	}
	if (in->channel_id)
		sbp(b, ", channel_id=%lld", (long long)in->channel_id);
	if (in->use_global_device_ids)
		sbp(b, ", use_global_device_ids=true");
	if (in->constrain_layout)
		sbp(b, ", constrain_layout=true");
	if (in->op == NCC_OP_COLLECTIVE_PERMUTE || in->op == NCC_OP_COLLECTIVE_PERMUTE_START ||
	    in->npairs) {
		sbp(b, ", source_target_pairs={");
		for (int32_t i = 0; i < in->npairs; i++)
			sbp(b, "%s{%lld,%lld}", i ? "," : "", (long long)in->pairs[2 * i],
			    (long long)in->pairs[2 * i + 1]);
		sbp(b, "}");
	}
	if (in->distribution)
		sbp(b, ", distribution=%s", in->distribution == NCC_RNG_UNIFORM ? "rng_uniform" : "rng_normal");
	if (in->rng_algorithm) {
		static const char *const n[] = { "", "rng_default", "rng_three_fry", "rng_philox" };
		sbp(b, ", algorithm=%s", n[in->rng_algorithm]);
	}
	if (in->has_epsilon) {
		sbp(b, ", epsilon=");
		print_float(b, in->epsilon, 17);
	}
	if (in->op == NCC_OP_BATCH_NORM_TRAINING || in->op == NCC_OP_BATCH_NORM_INFERENCE ||
	    in->op == NCC_OP_BATCH_NORM_GRAD || in->feature_index)
		sbp(b, ", feature_index=%lld", (long long)in->feature_index);
	if (in->is_stable)
		sbp(b, ", is_stable=true");
	if (in->fft_type)
		sbp(b, ", fft_type=%s", in->fft_type);
	if (in->fft_length.present) {
		sbp(b, ", fft_length=");
		print_ilist(b, &in->fft_length);
	}
	if (in->op == NCC_OP_REDUCE_PRECISION)
		sbp(b, ", exponent_bits=%lld, mantissa_bits=%lld", (long long)in->exponent_bits,
		    (long long)in->mantissa_bits);
	if (in->op == NCC_OP_TRIANGULAR_SOLVE)
		sbp(b, ", left_side=%s, lower=%s, unit_diagonal=%s", in->left_side ? "true" : "false",
		    in->lower ? "true" : "false", in->unit_diagonal ? "true" : "false");
	else if (in->lower)
		sbp(b, ", lower=true");
	if (in->transpose_a)
		sbp(b, ", transpose_a=%s", in->transpose_a);
	if (in->op == NCC_OP_TOPK)
		sbp(b, ", k=%lld, largest=%s", (long long)in->topk_k, in->topk_largest ? "true" : "false");
	if (in->sharding)
		sbp(b, ", sharding=%s", in->sharding);
	if (in->ncontrol_preds) {
		sbp(b, ", control-predecessors={");
		for (int32_t i = 0; i < in->ncontrol_preds; i++)
			sbp(b, "%s%%%s", i ? ", " : "", in->control_preds[i]->name);
		sbp(b, "}");
	}
	for (int32_t i = 0; i < in->nraw_attrs; i++)
		sbp(b, ", %s=%s", in->raw_attrs[i].key, in->raw_attrs[i].text);
	if (in->nfrontend_attrs) {
		sbp(b, ", frontend_attributes={");
		for (int32_t i = 0; i < in->nfrontend_attrs; i++) {
			/* a key the lexer would not read as one identifier goes in quotes
			 * (the parser takes both; keys from protos can be anything) */
			sbp(b, "%s", i ? "," : "");
			if (is_ident_text(in->frontend_attrs[i].key))
				sbp(b, "%s", in->frontend_attrs[i].key);
			else
				print_string(b, in->frontend_attrs[i].key);
			sbp(b, "=");
			print_string(b, in->frontend_attrs[i].value);
		}
		sbp(b, "}");
	}
	const ncc_metadata_t *md = &in->metadata;
	if (md->op_type || md->op_name || md->source_file || md->source_line) {
		sbp(b, ", metadata={");
		const char *sep = "";
		if (md->op_type) {
			sbp(b, "op_type=");
			print_string(b, md->op_type);
			sep = " ";
		}
		if (md->op_name) {
			sbp(b, "%sop_name=", sep);
			print_string(b, md->op_name);
			sep = " ";
		}
		if (md->source_file) {
			sbp(b, "%ssource_file=", sep);
			print_string(b, md->source_file);
			sep = " ";
		}
		if (md->source_line)
			sbp(b, "%ssource_line=%lld", sep, (long long)md->source_line);
		sbp(b, "}");
	}
	if (in->backend_config) {
		sbp(b, ", backend_config=");
		if (in->backend_config[0] == '{' && is_balanced_text(in->backend_config))
			sbp(b, "%s", in->backend_config);
		else
			print_string(b, in->backend_config);
	}
}

static void print_comp(strbuf_t *b, const ncc_comp_t *c)
{
	sbp(b, "%s%%%s ", c->is_entry ? "ENTRY " : "", c->name);
	/* signature: as parsed, or derived from the parameters and root */
	sbp(b, "(");
	if (c->nsig_params || c->has_sig_result) {
		for (int32_t i = 0; i < c->nsig_params; i++) {
			sbp(b, "%s%s: ", i ? ", " : "", c->sig_param_names[i]);
			print_shape(b, &c->sig_param_shapes[i]);
		}
		sbp(b, ") -> ");
		print_shape(b, &c->sig_result);
	} else {
		for (int32_t i = 0; i < c->nparams; i++) {
			sbp(b, "%s%s: ", i ? ", " : "", c->params[i] ? c->params[i]->name : "missing");
			if (c->params[i])
				print_shape(b, &c->params[i]->shape);
		}
		sbp(b, ") -> ");
		if (c->root)
			print_shape(b, &c->root->shape);
	}
	sbp(b, " {\n");
	for (int32_t i = 0; i < c->ninsts; i++) {
		sbp(b, "  ");
		print_inst(b, c->insts[i]);
		sbp(b, "\n");
	}
	sbp(b, "}\n");
}

static void print_module(strbuf_t *b, const ncc_module_t *m)
{
	sbp(b, "HloModule %s", m->name);
	if (m->is_scheduled)
		sbp(b, ", is_scheduled=true");
	if (m->naliases) {
		sbp(b, ", input_output_alias={ ");
		for (int32_t i = 0; i < m->naliases; i++) {
			const ncc_alias_t *a = &m->aliases[i];
			if (i)
				sbp(b, ", ");
			print_ilist(b, &a->output_index);
			sbp(b, ": (%lld, ", (long long)a->param_number);
			print_ilist(b, &a->param_index);
			if (a->kind == NCC_ALIAS_MUST)
				sbp(b, ", must-alias");
			else if (a->kind == NCC_ALIAS_MAY)
				sbp(b, ", may-alias");
			sbp(b, ")");
		}
		sbp(b, " }");
	}
	if (m->ndonors) {
		sbp(b, ", buffer_donor={ ");
		for (int32_t i = 0; i < m->ndonors; i++) {
			sbp(b, i ? ", (%lld, " : "(%lld, ", (long long)m->donors[i].param_number);
			print_ilist(b, &m->donors[i].param_index);
			sbp(b, ")");
		}
		sbp(b, " }");
	}
	if (m->entry_computation_layout)
		sbp(b, ", entry_computation_layout={%s}", m->entry_computation_layout);
	for (int32_t i = 0; i < m->nraw_attrs; i++)
		sbp(b, ", %s=%s", m->raw_attrs[i].key, m->raw_attrs[i].text);
	sbp(b, "\n");
	for (int32_t i = 0; i < m->ncomps; i++) {
		sbp(b, "\n");
		print_comp(b, m->comps[i]);
	}
}

ncc_status_t ncc_module_to_string(const ncc_module_t *m, char **out_text)
{
	*out_text = NULL;
	strbuf_t b = { 0 };
	print_module(&b, m);
	if (b.oom) {
		free(b.s);
		return NCC_ERR_NOMEM;
	}
	*out_text = b.s ? b.s : ncc__calloc(1, 1);
	return *out_text ? NCC_OK : NCC_ERR_NOMEM;
}

ncc_status_t ncc_module_print(const ncc_module_t *m, FILE *f)
{
	char *s;
	ncc_status_t st = ncc_module_to_string(m, &s);
	if (st)
		return st;
	size_t n = strlen(s);
	bool ok = fwrite(s, 1, n, f) == n;
	free(s);
	return ok ? NCC_OK : NCC_ERR_IO;
}

ncc_status_t ncc_inst_to_string(const ncc_inst_t *inst, char **out_text)
{
	*out_text = NULL;
	strbuf_t b = { 0 };
	print_inst(&b, inst);
	if (b.oom) {
		free(b.s);
		return NCC_ERR_NOMEM;
	}
	*out_text = b.s ? b.s : ncc__calloc(1, 1);
	return *out_text ? NCC_OK : NCC_ERR_NOMEM;
}
