/* ncc verifier: structural checks and per-opcode HLO shape inference over an IR module. */
#include "verify.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* computation pointer -> index in m->comps, sorted by pointer for bsearch: callee
 * lookups stay O(log n) even in modules with very many computations */
typedef struct comp_ref {
	const ncc_comp_t *c;
	int32_t index;
} comp_ref_t;

typedef struct vctx {
	const ncc_module_t *m;
	ncc_error_t *err;
	comp_ref_t *index; /* NULL: fall back to a linear search */
} vctx_t;

static int cmp_comp_ref(const void *a, const void *b)
{
	const ncc_comp_t *x = ((const comp_ref_t *)a)->c, *y = ((const comp_ref_t *)b)->c;
	return x < y ? -1 : x > y;
}

static int32_t comp_index_v(const vctx_t *v, const ncc_comp_t *c)
{
	if (v->index) {
		comp_ref_t key = { c, 0 };
		const comp_ref_t *r = bsearch(&key, v->index, (size_t)v->m->ncomps, sizeof(key),
					      cmp_comp_ref);
		return r ? r->index : -1;
	}
	for (int32_t i = 0; i < v->m->ncomps; i++)
		if (v->m->comps[i] == c)
			return i;
	return -1;
}

static ncc_status_t vfail(vctx_t *v, const ncc_inst_t *in, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ncc_status_t vfail(vctx_t *v, const ncc_inst_t *in, const char *fmt, ...)
{
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const char *file = v->m && v->m->filename ? v->m->filename : "<module>";
	if (!in)
		return ncc_error_set(v->err, NCC_ERR_VERIFY, 0, 0, "%s: error: %s", file, msg);
	const char *opn = in->op == NCC_OP_UNKNOWN && in->opname ? in->opname : ncc_opcode_name(in->op);
	if (in->line)
		return ncc_error_set(v->err, NCC_ERR_VERIFY, in->line, in->col,
				     "%s:%d:%d: error: instruction '%s' (%s): %s", file, in->line,
				     in->col, in->name, opn, msg);
	return ncc_error_set(v->err, NCC_ERR_VERIFY, 0, 0, "%s: error: instruction '%s' (%s): %s",
			     file, in->name, opn, msg);
}

/* short shape spelling for messages (static buffers rotate so two fit in one call) */
static const char *sh(const ncc_shape_t *s)
{
	static _Thread_local char bufs[4][160];
	static _Thread_local int k;
	char *b = bufs[k++ & 3];
	int n = ncc_shape_to_string(s, false, b, sizeof(bufs[0]));
	if (n >= (int)sizeof(bufs[0]))
		strcpy(b + sizeof(bufs[0]) - 4, "...");
	return b;
}

#define CHECK(cond, ...)                                 \
	do {                                             \
		if (!(cond))                             \
			return vfail(v, in, __VA_ARGS__); \
	} while (0)
#define TRY(expr)                           \
	do {                                \
		ncc_status_t st_ = (expr);  \
		if (st_)                    \
			return st_;         \
	} while (0)

static bool same_dims(const ncc_shape_t *a, const ncc_shape_t *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

static bool is_scalar(const ncc_shape_t *s) { return ncc_shape_is_array(s) && s->rank == 0; }

/* Checks one shape for internal consistency (any shape an instruction carries). */
static ncc_status_t check_shape(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *s,
				const char *what, int depth)
{
	CHECK(depth < 64, "%s nests tuples too deeply", what);
	if (s->etype == NCC_TUPLE) {
		CHECK(s->nelems >= 0 && (s->nelems == 0 || s->elems), "%s: malformed tuple", what);
		for (int32_t i = 0; i < s->nelems; i++)
			TRY(check_shape(v, in, &s->elems[i], what, depth + 1));
		return NCC_OK;
	}
	CHECK(s->etype > NCC_INVALID && s->etype < NCC_TUPLE, "%s has an invalid element type", what);
	CHECK(s->rank >= 0 && s->rank <= NCC_MAX_RANK, "%s has invalid rank %d", what, (int)s->rank);
	if (!ncc_etype_is_array(s->etype))
		CHECK(s->rank == 0, "%s: %s shapes have no dimensions", what, ncc_etype_name(s->etype));
	for (int i = 0; i < s->rank; i++)
		CHECK(s->dims[i] >= 0 || (s->dynamic[i] && s->dims[i] == NCC_DIM_UNBOUNDED),
		      "%s %s has a negative dimension", what, sh(s));
	if (s->has_layout) {
		bool seen[NCC_MAX_RANK] = { false };
		for (int i = 0; i < s->rank; i++) {
			int32_t d = s->minor_to_major[i];
			CHECK(d >= 0 && d < s->rank && !seen[d],
			      "%s %s: layout is not a permutation of 0..%d", what, sh(s), (int)s->rank - 1);
			seen[d] = true;
		}
	}
	return NCC_OK;
}

static ncc_status_t need_operands(vctx_t *v, const ncc_inst_t *in, int32_t n)
{
	CHECK(in->noperands == n, "expects %d operand%s, has %d", (int)n, n == 1 ? "" : "s",
	      (int)in->noperands);
	return NCC_OK;
}

static ncc_status_t need_array(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *s,
			       const char *what)
{
	CHECK(ncc_shape_is_array(s), "%s must be an array, is %s", what, sh(s));
	return NCC_OK;
}

/* dims of a list must be unique and in [0, rank) */
static ncc_status_t check_dim_list(vctx_t *v, const ncc_inst_t *in, const ncc_ilist_t *l,
				   int32_t rank, const char *what)
{
	bool seen[NCC_MAX_RANK] = { false };
	for (int32_t i = 0; i < l->n; i++) {
		int64_t d = l->v[i];
		CHECK(d >= 0 && d < rank, "%s entry %lld out of range for rank %d", what, (long long)d,
		      (int)rank);
		CHECK(!seen[d], "%s repeats dimension %lld", what, (long long)d);
		seen[d] = true;
	}
	return NCC_OK;
}

static bool in_list(const ncc_ilist_t *l, int64_t d)
{
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i] == d)
			return true;
	return false;
}

static bool sorted(const ncc_ilist_t *l)
{
	for (int32_t i = 1; i < l->n; i++)
		if (l->v[i] <= l->v[i - 1])
			return false;
	return true;
}

/* result must equal an expected shape (dims and element type; layout ignored) */
static ncc_status_t expect_shape(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *want)
{
	CHECK(ncc_shape_equal(&in->shape, want, false), "result shape is %s, expected %s",
	      sh(&in->shape), sh(want));
	return NCC_OK;
}

/* A called computation's signature: nparams parameters of the given shapes (NULL: not
 * checked), root shape want_root (NULL: not checked). */
static ncc_status_t check_called(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c,
				 const char *role, int32_t nparams, const ncc_shape_t *const *pshapes,
				 const ncc_shape_t *want_root)
{
	CHECK(c, "missing %s computation", role);
	CHECK(c->nparams == nparams, "%s computation '%s' takes %d parameters, expected %d", role,
	      c->name, (int)c->nparams, (int)nparams);
	for (int32_t i = 0; pshapes && i < nparams; i++)
		if (pshapes[i] && c->params[i])
			CHECK(ncc_shape_equal(&c->params[i]->shape, pshapes[i], false),
			      "%s computation '%s' parameter %d is %s, expected %s", role, c->name,
			      (int)i, sh(&c->params[i]->shape), sh(pshapes[i]));
	if (want_root && c->root)
		CHECK(ncc_shape_equal(&c->root->shape, want_root, false),
		      "%s computation '%s' returns %s, expected %s", role, c->name,
		      sh(&c->root->shape), sh(want_root));
	return NCC_OK;
}

/* elems[0] when n == 1, else the tuple of elems[0..n) (which must outlive it). */
static ncc_shape_t one_or_tuple(int32_t n, ncc_shape_t *elems)
{
	if (n == 1)
		return elems[0];
	ncc_shape_t t;
	memset(&t, 0, sizeof(t));
	t.etype = NCC_TUPLE;
	t.nelems = n;
	t.elems = elems;
	return t;
}

/* Reducer of N values: 2N scalar params (accumulators then inputs) of the given
 * element types, returning N scalars (a tuple when N > 1). */
static ncc_status_t check_reducer(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c,
				  int32_t n, const ncc_etype_t *types)
{
	CHECK(c, "missing to_apply computation");
	CHECK(n <= 64, "too many reduced values");
	ncc_shape_t sc[64];
	const ncc_shape_t *ps[128];
	for (int32_t i = 0; i < n; i++) {
		sc[i] = ncc_shape_scalar(types[i]);
		ps[i] = ps[n + i] = &sc[i];
	}
	ncc_shape_t root = one_or_tuple(n, sc);
	return check_called(v, in, c, "to_apply", 2 * n, ps, &root);
}

/* Output size of one windowed dimension (XLA's InferWindowOutputShape). */
static ncc_status_t window_out(vctx_t *v, const ncc_inst_t *in, int64_t insz,
			       const ncc_window_dim_t *w, int i, int64_t *out)
{
	CHECK(w->size >= 0 || w->size == 0, "window size %lld negative in dimension %d",
	      (long long)w->size, i);
	CHECK(w->stride >= 1, "window stride %lld must be >= 1 in dimension %d", (long long)w->stride, i);
	CHECK(w->lhs_dilation >= 1 && w->rhs_dilation >= 1, "window dilation must be >= 1 in dimension %d", i);
	int64_t din = insz == 0 ? 0 : (insz - 1) * w->lhs_dilation + 1;
	din += w->pad_lo + w->pad_hi;
	int64_t dwin = w->size == 0 ? 0 : (w->size - 1) * w->rhs_dilation + 1;
	*out = din < dwin || din < 0 ? 0 : (din - dwin) / w->stride + 1;
	return NCC_OK;
}

/* ------------------------------------------------------------ per opcode */

/* Exactly n operands (1 or 2), each an array (named a_name, b_name), and an array
 * result: the preamble of the elementwise, shape and contraction checks. */
static ncc_status_t need_array_io(vctx_t *v, const ncc_inst_t *in, int32_t n, const char *a_name,
				  const char *b_name)
{
	TRY(need_operands(v, in, n));
	TRY(need_array(v, in, &in->operands[0]->shape, a_name));
	if (n > 1)
		TRY(need_array(v, in, &in->operands[1]->shape, b_name));
	return need_array(v, in, &in->shape, "result");
}

static ncc_status_t v_unary(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape;
	CHECK(same_dims(a, &in->shape), "operand %s and result %s differ in dimensions", sh(a),
	      sh(&in->shape));
	ncc_etype_t t = a->etype, r = in->shape.etype;
	bool fl = ncc_etype_is_float(t), cx = ncc_etype_is_complex(t);
	switch (in->op) {
	case NCC_OP_CONVERT:
	case NCC_OP_STOCHASTIC_CONVERT:
		return NCC_OK;
	case NCC_OP_IS_FINITE:
		CHECK(fl, "operand must be floating point, is %s", ncc_etype_name(t));
		CHECK(r == NCC_PRED, "result must be pred, is %s", ncc_etype_name(r));
		return NCC_OK;
	case NCC_OP_REAL:
	case NCC_OP_IMAG:
	case NCC_OP_ABS:
		if (cx) {
			ncc_etype_t want = t == NCC_C64 ? NCC_F32 : NCC_F64;
			CHECK(r == want, "result of a %s operand must be %s, is %s", ncc_etype_name(t),
			      ncc_etype_name(want), ncc_etype_name(r));
			return NCC_OK;
		}
		break;
	default:
		break;
	}
	CHECK(r == t, "result type %s differs from operand type %s", ncc_etype_name(r),
	      ncc_etype_name(t));
	switch (in->op) {
	case NCC_OP_EXP: case NCC_OP_EXPM1: case NCC_OP_LOG: case NCC_OP_LOG1P: case NCC_OP_SQRT:
	case NCC_OP_RSQRT: case NCC_OP_CBRT: case NCC_OP_TANH: case NCC_OP_LOGISTIC: case NCC_OP_SIN:
	case NCC_OP_COS: case NCC_OP_TAN: case NCC_OP_ERF:
		CHECK(fl || cx, "operand must be floating point or complex, is %s", ncc_etype_name(t));
		break;
	case NCC_OP_FLOOR: case NCC_OP_CEIL: case NCC_OP_ROUND_NEAREST_AFZ:
	case NCC_OP_ROUND_NEAREST_EVEN: case NCC_OP_REDUCE_PRECISION:
		CHECK(fl, "operand must be floating point, is %s", ncc_etype_name(t));
		break;
	case NCC_OP_NOT:
		CHECK(t == NCC_PRED || ncc_etype_is_integral(t), "operand must be pred or integer, is %s",
		      ncc_etype_name(t));
		break;
	case NCC_OP_POPCNT: case NCC_OP_CLZ:
		CHECK(ncc_etype_is_integral(t), "operand must be an integer, is %s", ncc_etype_name(t));
		break;
	case NCC_OP_NEGATE: case NCC_OP_ABS: case NCC_OP_SIGN:
		CHECK(t != NCC_PRED, "operand must be numeric, is pred");
		break;
	default:
		break;
	}
	return NCC_OK;
}

static ncc_status_t v_binary(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 2, "lhs", "rhs"));
	const ncc_shape_t *a = &in->operands[0]->shape, *b = &in->operands[1]->shape;
	CHECK(same_dims(a, b), "operands %s and %s differ in dimensions", sh(a), sh(b));
	CHECK(same_dims(a, &in->shape), "result %s differs in dimensions from operands %s",
	      sh(&in->shape), sh(a));
	ncc_etype_t t = a->etype, r = in->shape.etype;
	if (in->op == NCC_OP_STOCHASTIC_CONVERT)
		return NCC_OK;
	CHECK(a->etype == b->etype, "operand types differ: %s vs %s", ncc_etype_name(a->etype),
	      ncc_etype_name(b->etype));
	switch (in->op) {
	case NCC_OP_COMPARE:
		CHECK(r == NCC_PRED, "result must be pred, is %s", ncc_etype_name(r));
		CHECK(in->cmp_dir != NCC_CMP_NONE, "missing direction=");
		if (in->cmp_type == NCC_CMPT_FLOAT || in->cmp_type == NCC_CMPT_TOTALORDER)
			CHECK(ncc_etype_is_float(t) || ncc_etype_is_complex(t),
			      "comparison type FLOAT/TOTALORDER on %s operands", ncc_etype_name(t));
		if (in->cmp_type == NCC_CMPT_SIGNED || in->cmp_type == NCC_CMPT_UNSIGNED)
			CHECK(!ncc_etype_is_float(t), "integer comparison type on %s operands",
			      ncc_etype_name(t));
		return NCC_OK;
	case NCC_OP_COMPLEX:
		CHECK(t == NCC_F32 || t == NCC_F64, "operands must be f32 or f64, are %s", ncc_etype_name(t));
		CHECK(r == (t == NCC_F32 ? NCC_C64 : NCC_C128), "result must be %s, is %s",
		      t == NCC_F32 ? "c64" : "c128", ncc_etype_name(r));
		return NCC_OK;
	default:
		break;
	}
	CHECK(r == t, "result type %s differs from operand type %s", ncc_etype_name(r), ncc_etype_name(t));
	switch (in->op) {
	case NCC_OP_AND: case NCC_OP_OR: case NCC_OP_XOR:
		CHECK(t == NCC_PRED || ncc_etype_is_integral(t), "operands must be pred or integer, are %s",
		      ncc_etype_name(t));
		break;
	case NCC_OP_SHIFT_LEFT: case NCC_OP_SHIFT_RIGHT_ARITHMETIC: case NCC_OP_SHIFT_RIGHT_LOGICAL:
		CHECK(ncc_etype_is_integral(t), "operands must be integers, are %s", ncc_etype_name(t));
		break;
	case NCC_OP_ATAN2:
		CHECK(ncc_etype_is_float(t) || ncc_etype_is_complex(t),
		      "operands must be floating point, are %s", ncc_etype_name(t));
		break;
	case NCC_OP_ADD: case NCC_OP_SUBTRACT: case NCC_OP_MULTIPLY: case NCC_OP_DIVIDE:
	case NCC_OP_REMAINDER: case NCC_OP_POWER:
		CHECK(t != NCC_PRED || in->op == NCC_OP_ADD || in->op == NCC_OP_MULTIPLY ||
		      in->op == NCC_OP_SUBTRACT, "arithmetic on pred operands");
		break;
	default:
		break;
	}
	return NCC_OK;
}

static ncc_status_t v_select(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 3));
	const ncc_shape_t *p = &in->operands[0]->shape, *a = &in->operands[1]->shape,
			  *b = &in->operands[2]->shape;
	TRY(need_array(v, in, p, "predicate"));
	CHECK(p->etype == NCC_PRED, "predicate must be pred, is %s", ncc_etype_name(p->etype));
	CHECK(ncc_shape_equal(a, b, false), "on_true %s and on_false %s differ", sh(a), sh(b));
	/* current XLA requires the predicate to have the operands' dimensions (the old
	 * scalar-predicate form was removed) */
	CHECK(same_dims(p, a), "predicate %s does not match operands %s", sh(p), sh(a));
	return expect_shape(v, in, a);
}

static ncc_status_t v_clamp(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 3));
	const ncc_shape_t *lo = &in->operands[0]->shape, *x = &in->operands[1]->shape,
			  *hi = &in->operands[2]->shape;
	TRY(need_array(v, in, x, "operand"));
	TRY(need_array(v, in, lo, "min"));
	TRY(need_array(v, in, hi, "max"));
	CHECK(lo->etype == x->etype && hi->etype == x->etype, "min/operand/max types differ: %s, %s, %s",
	      ncc_etype_name(lo->etype), ncc_etype_name(x->etype), ncc_etype_name(hi->etype));
	CHECK(lo->rank == 0 || same_dims(lo, x), "min %s must be scalar or match operand %s", sh(lo), sh(x));
	CHECK(hi->rank == 0 || same_dims(hi, x), "max %s must be scalar or match operand %s", sh(hi), sh(x));
	return expect_shape(v, in, x);
}

static ncc_status_t v_broadcast(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape, *r = &in->shape;
	CHECK(a->etype == r->etype, "result type %s differs from operand type %s",
	      ncc_etype_name(r->etype), ncc_etype_name(a->etype));
	CHECK(in->dimensions.present, "missing dimensions=");
	CHECK(in->dimensions.n == a->rank, "dimensions has %d entries for an operand of rank %d",
	      (int)in->dimensions.n, (int)a->rank);
	TRY(check_dim_list(v, in, &in->dimensions, r->rank, "dimensions"));
	for (int32_t i = 0; i < a->rank; i++) {
		int64_t d = in->dimensions.v[i];
		/* HLO (unlike the XLA builder) has no degenerate broadcasting: sizes match */
		CHECK(a->dims[i] == r->dims[d],
		      "operand dimension %d (size %lld) maps to result dimension %lld of size %lld",
		      (int)i, (long long)a->dims[i], (long long)d, (long long)r->dims[d]);
	}
	return NCC_OK;
}

static ncc_status_t v_reshape(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape, *r = &in->shape;
	CHECK(a->etype == r->etype, "result type %s differs from operand type %s",
	      ncc_etype_name(r->etype), ncc_etype_name(a->etype));
	CHECK(ncc_shape_elements(a) == ncc_shape_elements(r),
	      "operand %s has %lld elements, result %s has %lld", sh(a),
	      (long long)ncc_shape_elements(a), sh(r), (long long)ncc_shape_elements(r));
	return NCC_OK;
}

static ncc_status_t v_transpose(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 1));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(need_array(v, in, a, "operand"));
	CHECK(in->dimensions.present && in->dimensions.n == a->rank,
	      "dimensions must be a permutation of the operand's %d dimensions", (int)a->rank);
	TRY(check_dim_list(v, in, &in->dimensions, a->rank, "dimensions"));
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		want.dims[i] = a->dims[in->dimensions.v[i]];
		want.dynamic[i] = a->dynamic[in->dimensions.v[i]];
	}
	return expect_shape(v, in, &want);
}

static ncc_status_t v_reverse(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 1));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(need_array(v, in, a, "operand"));
	CHECK(in->dimensions.present, "missing dimensions=");
	TRY(check_dim_list(v, in, &in->dimensions, a->rank, "dimensions"));
	return expect_shape(v, in, a);
}

static ncc_status_t v_dot(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 2, "lhs", "rhs"));
	const ncc_shape_t *a = &in->operands[0]->shape, *b = &in->operands[1]->shape;
	static const ncc_dot_dnums_t none;
	const ncc_dot_dnums_t *d = in->dot ? in->dot : &none;
	CHECK(d->lhs_batch.n == d->rhs_batch.n, "lhs_batch_dims has %d entries, rhs_batch_dims %d",
	      (int)d->lhs_batch.n, (int)d->rhs_batch.n);
	CHECK(d->lhs_contracting.n == d->rhs_contracting.n,
	      "lhs_contracting_dims has %d entries, rhs_contracting_dims %d",
	      (int)d->lhs_contracting.n, (int)d->rhs_contracting.n);
	TRY(check_dim_list(v, in, &d->lhs_batch, a->rank, "lhs_batch_dims"));
	TRY(check_dim_list(v, in, &d->rhs_batch, b->rank, "rhs_batch_dims"));
	TRY(check_dim_list(v, in, &d->lhs_contracting, a->rank, "lhs_contracting_dims"));
	TRY(check_dim_list(v, in, &d->rhs_contracting, b->rank, "rhs_contracting_dims"));
	for (int32_t i = 0; i < d->lhs_batch.n; i++) {
		CHECK(!in_list(&d->lhs_contracting, d->lhs_batch.v[i]),
		      "lhs dimension %lld is both batch and contracting", (long long)d->lhs_batch.v[i]);
		CHECK(!in_list(&d->rhs_contracting, d->rhs_batch.v[i]),
		      "rhs dimension %lld is both batch and contracting", (long long)d->rhs_batch.v[i]);
		CHECK(a->dims[d->lhs_batch.v[i]] == b->dims[d->rhs_batch.v[i]],
		      "lhs batch dim %lld has size %lld but rhs batch dim %lld has size %lld",
		      (long long)d->lhs_batch.v[i], (long long)a->dims[d->lhs_batch.v[i]],
		      (long long)d->rhs_batch.v[i], (long long)b->dims[d->rhs_batch.v[i]]);
	}
	for (int32_t i = 0; i < d->lhs_contracting.n; i++)
		CHECK(a->dims[d->lhs_contracting.v[i]] == b->dims[d->rhs_contracting.v[i]],
		      "lhs contracting dim %lld has size %lld but rhs contracting dim %lld has size %lld",
		      (long long)d->lhs_contracting.v[i], (long long)a->dims[d->lhs_contracting.v[i]],
		      (long long)d->rhs_contracting.v[i], (long long)b->dims[d->rhs_contracting.v[i]]);
	ncc_shape_t want = ncc_shape_scalar(in->shape.etype); /* result type may be widened */
	want.has_layout = false;
	int r = 0;
	for (int32_t i = 0; i < d->lhs_batch.n; i++)
		want.dims[r++] = a->dims[d->lhs_batch.v[i]];
	for (int32_t i = 0; i < a->rank; i++)
		if (!in_list(&d->lhs_batch, i) && !in_list(&d->lhs_contracting, i) && r < NCC_MAX_RANK)
			want.dims[r++] = a->dims[i];
	for (int32_t i = 0; i < b->rank; i++)
		if (!in_list(&d->rhs_batch, i) && !in_list(&d->rhs_contracting, i)) {
			CHECK(r < NCC_MAX_RANK, "result rank exceeds %d", NCC_MAX_RANK);
			want.dims[r++] = b->dims[i];
		}
	want.rank = r;
	CHECK(in->nprecision == 0 || in->nprecision == 2, "operand_precision has %d entries, expected 2",
	      (int)in->nprecision);
	return expect_shape(v, in, &want);
}

static ncc_status_t v_convolution(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 2, "input", "kernel"));
	const ncc_shape_t *x = &in->operands[0]->shape, *k = &in->operands[1]->shape;
	const ncc_conv_dnums_t *c = in->conv;
	CHECK(c, "missing dim_labels=");
	int n = c->nspatial;
	CHECK(x->rank == n + 2, "input rank %d does not match dim_labels with %d spatial dims",
	      (int)x->rank, n);
	CHECK(k->rank == n + 2, "kernel rank %d does not match dim_labels with %d spatial dims",
	      (int)k->rank, n);
	CHECK(in->shape.rank == n + 2, "result rank %d does not match dim_labels with %d spatial dims",
	      (int)in->shape.rank, n);
	int32_t wn = in->window ? in->window->n : 0;
	CHECK(wn == n, "window has %d dimensions, dim_labels has %d spatial dims", (int)wn, n);
	int64_t fgc = in->feature_group_count, bgc = in->batch_group_count;
	CHECK(fgc >= 1 && bgc >= 1, "feature_group_count and batch_group_count must be >= 1");
	CHECK(fgc == 1 || bgc == 1, "feature_group_count and batch_group_count cannot both exceed 1");
	int64_t in_b = x->dims[c->in_batch], in_f = x->dims[c->in_feature];
	int64_t k_i = k->dims[c->k_in_feature], k_o = k->dims[c->k_out_feature];
	CHECK(in_f % fgc == 0, "input features %lld not divisible by feature_group_count %lld",
	      (long long)in_f, (long long)fgc);
	CHECK(in_f / fgc == k_i,
	      "input features %lld / feature_group_count %lld != kernel input features %lld",
	      (long long)in_f, (long long)fgc, (long long)k_i);
	CHECK(k_o % fgc == 0, "kernel output features %lld not divisible by feature_group_count %lld",
	      (long long)k_o, (long long)fgc);
	CHECK(in_b % bgc == 0, "input batch %lld not divisible by batch_group_count %lld",
	      (long long)in_b, (long long)bgc);
	CHECK(k_o % bgc == 0, "kernel output features %lld not divisible by batch_group_count %lld",
	      (long long)k_o, (long long)bgc);
	ncc_shape_t want = ncc_shape_scalar(in->shape.etype);
	want.rank = n + 2;
	want.dims[c->out_batch] = in_b / bgc;
	want.dims[c->out_feature] = k_o;
	for (int i = 0; i < n; i++) {
		const ncc_window_dim_t *w = &in->window->dims[i];
		CHECK(w->size == k->dims[c->k_spatial[i]],
		      "window size %lld in spatial dim %d differs from kernel size %lld",
		      (long long)w->size, i, (long long)k->dims[c->k_spatial[i]]);
		TRY(window_out(v, in, x->dims[c->in_spatial[i]], w, i, &want.dims[c->out_spatial[i]]));
	}
	return expect_shape(v, in, &want);
}

/* The operands of a reduce or reduce-window: N inputs of one dims, then N init
 * values, each a scalar of its input's type. *out_n = N, types[i] = input i's type. */
static ncc_status_t check_reduce_operands(vctx_t *v, const ncc_inst_t *in, int32_t *out_n,
					  ncc_etype_t *types)
{
	CHECK(in->noperands >= 2 && in->noperands % 2 == 0,
	      "expects N inputs and N init values, has %d operands", (int)in->noperands);
	int32_t n = in->noperands / 2;
	CHECK(n <= 64, "too many inputs");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	for (int32_t i = 0; i < n; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape, *init = &in->operands[n + i]->shape;
		TRY(need_array(v, in, a, "input"));
		CHECK(same_dims(a, a0), "inputs %s and %s differ in dimensions", sh(a0), sh(a));
		CHECK(is_scalar(init), "init value %d must be a scalar, is %s", (int)i, sh(init));
		CHECK(init->etype == a->etype, "init value %d type %s differs from input type %s", (int)i,
		      ncc_etype_name(init->etype), ncc_etype_name(a->etype));
		types[i] = a->etype;
	}
	*out_n = n;
	return NCC_OK;
}

/* The reducer over types[0..n) and the result: one array of dims' dims per reduced
 * value (of its type), a tuple of them when n > 1. */
static ncc_status_t expect_reduce_result(vctx_t *v, const ncc_inst_t *in, int32_t n,
					 const ncc_etype_t *types, const ncc_shape_t *dims)
{
	TRY(check_reducer(v, in, in->to_apply, n, types));
	ncc_shape_t outs[64];
	for (int32_t i = 0; i < n; i++) {
		outs[i] = *dims;
		outs[i].etype = types[i];
	}
	ncc_shape_t want = one_or_tuple(n, outs);
	return expect_shape(v, in, &want);
}

static ncc_status_t v_reduce(vctx_t *v, const ncc_inst_t *in)
{
	int32_t n;
	ncc_etype_t types[64];
	TRY(check_reduce_operands(v, in, &n, types));
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	CHECK(in->dimensions.present, "missing dimensions=");
	TRY(check_dim_list(v, in, &in->dimensions, a0->rank, "dimensions"));
	ncc_shape_t o = ncc_shape_scalar(types[0]);
	int r = 0;
	for (int32_t d = 0; d < a0->rank; d++)
		if (!in_list(&in->dimensions, d))
			o.dims[r++] = a0->dims[d];
	o.rank = r;
	return expect_reduce_result(v, in, n, types, &o);
}

static ncc_status_t v_reduce_window(vctx_t *v, const ncc_inst_t *in)
{
	int32_t n;
	ncc_etype_t types[64];
	TRY(check_reduce_operands(v, in, &n, types));
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	CHECK(in->window && in->window->n == a0->rank, "window must have %d dimensions, has %d",
	      (int)a0->rank, in->window ? (int)in->window->n : 0);
	ncc_shape_t o = ncc_shape_scalar(types[0]);
	o.rank = a0->rank;
	for (int32_t d = 0; d < a0->rank; d++)
		TRY(window_out(v, in, a0->dims[d], &in->window->dims[d], d, &o.dims[d]));
	return expect_reduce_result(v, in, n, types, &o);
}

static ncc_status_t v_select_and_scatter(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 3));
	const ncc_shape_t *a = &in->operands[0]->shape, *src = &in->operands[1]->shape,
			  *init = &in->operands[2]->shape;
	TRY(need_array(v, in, a, "operand"));
	TRY(need_array(v, in, src, "source"));
	CHECK(is_scalar(init) && init->etype == src->etype, "init value must be a %s scalar, is %s",
	      ncc_etype_name(src->etype), sh(init));
	CHECK(in->window && in->window->n == a->rank, "window must have %d dimensions", (int)a->rank);
	ncc_shape_t w = ncc_shape_scalar(src->etype);
	w.rank = a->rank;
	for (int32_t d = 0; d < a->rank; d++)
		TRY(window_out(v, in, a->dims[d], &in->window->dims[d], d, &w.dims[d]));
	CHECK(same_dims(&w, src), "source %s does not match the windowed operand %s", sh(src), sh(&w));
	ncc_shape_t sa = ncc_shape_scalar(a->etype), ss = ncc_shape_scalar(src->etype),
		    pr = ncc_shape_scalar(NCC_PRED);
	const ncc_shape_t *sel[2] = { &sa, &sa }, *sct[2] = { &ss, &ss };
	TRY(check_called(v, in, in->select, "select", 2, sel, &pr));
	TRY(check_called(v, in, in->scatter_comp, "scatter", 2, sct, &ss));
	return expect_shape(v, in, a);
}

static ncc_status_t v_slice(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 1));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(need_array(v, in, a, "operand"));
	CHECK(in->slice, "missing slice=");
	CHECK(in->slice->n == a->rank, "slice has %d dimensions, operand has rank %d",
	      (int)in->slice->n, (int)a->rank);
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		const ncc_slice_dim_t *d = &in->slice->dims[i];
		CHECK(d->stride >= 1, "slice stride %lld in dimension %d must be >= 1",
		      (long long)d->stride, (int)i);
		CHECK(d->start >= 0 && d->start <= d->limit && d->limit <= a->dims[i],
		      "slice [%lld:%lld] out of bounds for dimension %d of size %lld",
		      (long long)d->start, (long long)d->limit, (int)i, (long long)a->dims[i]);
		want.dims[i] = (d->limit - d->start + d->stride - 1) / d->stride;
	}
	return expect_shape(v, in, &want);
}

static ncc_status_t check_index_scalars(vctx_t *v, const ncc_inst_t *in, int32_t first, int32_t rank)
{
	CHECK(in->noperands == first + rank, "expects %d scalar index operands, has %d", (int)rank,
	      (int)(in->noperands - first));
	for (int32_t i = first; i < in->noperands; i++) {
		const ncc_shape_t *s = &in->operands[i]->shape;
		CHECK(is_scalar(s) && ncc_etype_is_integral(s->etype),
		      "index operand %d must be an integer scalar, is %s", (int)i, sh(s));
	}
	return NCC_OK;
}

static ncc_status_t v_dynamic_slice(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "missing operand");
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(need_array(v, in, a, "operand"));
	TRY(check_index_scalars(v, in, 1, a->rank));
	CHECK(in->dynamic_slice_sizes.present && in->dynamic_slice_sizes.n == a->rank,
	      "dynamic_slice_sizes must have %d entries", (int)a->rank);
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		int64_t s = in->dynamic_slice_sizes.v[i];
		CHECK(s >= 0 && s <= a->dims[i], "slice size %lld out of bounds for dimension %d of size %lld",
		      (long long)s, (int)i, (long long)a->dims[i]);
		want.dims[i] = s;
	}
	return expect_shape(v, in, &want);
}

static ncc_status_t v_dynamic_update_slice(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 2, "missing operand or update");
	const ncc_shape_t *a = &in->operands[0]->shape, *u = &in->operands[1]->shape;
	TRY(need_array(v, in, a, "operand"));
	TRY(need_array(v, in, u, "update"));
	TRY(check_index_scalars(v, in, 2, a->rank));
	CHECK(u->rank == a->rank && u->etype == a->etype, "update %s does not match operand %s", sh(u), sh(a));
	for (int32_t i = 0; i < a->rank; i++)
		CHECK(u->dims[i] <= a->dims[i], "update dimension %d (%lld) exceeds operand's (%lld)",
		      (int)i, (long long)u->dims[i], (long long)a->dims[i]);
	return expect_shape(v, in, a);
}

static ncc_status_t v_concatenate(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "needs at least one operand");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	TRY(need_array(v, in, a0, "operand"));
	CHECK(in->dimensions.present && in->dimensions.n == 1, "dimensions must hold one dimension");
	int64_t d = in->dimensions.v[0];
	CHECK(d >= 0 && d < a0->rank, "dimension %lld out of range for rank %d", (long long)d, (int)a0->rank);
	ncc_shape_t want = *a0;
	want.has_layout = false;
	want.dims[d] = 0;
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape;
		TRY(need_array(v, in, a, "operand"));
		CHECK(a->rank == a0->rank && a->etype == a0->etype, "operand %d %s does not match operand 0 %s",
		      (int)i, sh(a), sh(a0));
		for (int32_t k = 0; k < a->rank; k++)
			CHECK(k == d || a->dims[k] == a0->dims[k],
			      "operand %d differs from operand 0 in dimension %d (%lld vs %lld)", (int)i,
			      (int)k, (long long)a->dims[k], (long long)a0->dims[k]);
		want.dims[d] += a->dims[d];
	}
	return expect_shape(v, in, &want);
}

static ncc_status_t v_pad(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 2));
	const ncc_shape_t *a = &in->operands[0]->shape, *pv = &in->operands[1]->shape;
	TRY(need_array(v, in, a, "operand"));
	CHECK(is_scalar(pv) && pv->etype == a->etype, "padding value must be a %s scalar, is %s",
	      ncc_etype_name(a->etype), sh(pv));
	CHECK(in->padding, "missing padding=");
	CHECK(in->padding->n == a->rank, "padding has %d dimensions, operand has rank %d",
	      (int)in->padding->n, (int)a->rank);
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		const ncc_pad_dim_t *p = &in->padding->dims[i];
		CHECK(p->interior >= 0, "interior padding %lld in dimension %d is negative",
		      (long long)p->interior, (int)i);
		int64_t sz = a->dims[i] + p->lo + p->hi + (a->dims[i] > 0 ? (a->dims[i] - 1) * p->interior : 0);
		CHECK(sz >= 0, "padding makes dimension %d negative (%lld)", (int)i, (long long)sz);
		want.dims[i] = sz;
	}
	return expect_shape(v, in, &want);
}

static ncc_status_t v_iota(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 0));
	TRY(need_array(v, in, &in->shape, "result"));
	CHECK(in->shape.rank >= 1, "result must have rank >= 1");
	CHECK(in->iota_dimension >= 0 && in->iota_dimension < in->shape.rank,
	      "iota_dimension %lld out of range for rank %d", (long long)in->iota_dimension,
	      (int)in->shape.rank);
	CHECK(in->shape.etype != NCC_PRED, "iota of pred");
	return NCC_OK;
}

/* The indices operand (named what) of a gather or scatter into operand a: integers,
 * index_vector_dim ivd in [0, rank], and `map` (named map_name) naming one operand
 * dim per index-vector entry. */
static ncc_status_t check_indices(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *a,
				  const ncc_shape_t *idx, const char *what, int64_t ivd,
				  const ncc_ilist_t *map, const char *map_name)
{
	TRY(need_array(v, in, a, "operand"));
	TRY(need_array(v, in, idx, what));
	CHECK(ncc_etype_is_integral(idx->etype), "%s must be integers, are %s", what,
	      ncc_etype_name(idx->etype));
	CHECK(ivd >= 0 && ivd <= idx->rank, "index_vector_dim %lld out of range for indices of rank %d",
	      (long long)ivd, (int)idx->rank);
	int64_t ivsize = ivd == idx->rank ? 1 : idx->dims[ivd];
	CHECK(map->n == ivsize, "%s has %d entries, index vector has %lld", map_name, (int)map->n,
	      (long long)ivsize);
	return check_dim_list(v, in, map, a->rank, map_name);
}

/* The operand dims a gather/scatter window leaves out: the collapsed (inserted) ones,
 * sorted, and the batching ones. */
static ncc_status_t check_dropped_dims(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *a,
				       const ncc_ilist_t *dropped, const char *dropped_name,
				       const ncc_ilist_t *batching, const char *batching_name)
{
	TRY(check_dim_list(v, in, dropped, a->rank, dropped_name));
	TRY(check_dim_list(v, in, batching, a->rank, batching_name));
	CHECK(sorted(dropped), "%s must be sorted", dropped_name);
	return NCC_OK;
}

/* The result of an op over n operands that returns values of their shapes (sort,
 * scatter): operand 0's shape, or the tuple of the first n operands' shapes. */
static ncc_status_t expect_operand_shapes(vctx_t *v, const ncc_inst_t *in, int32_t n)
{
	if (n == 1)
		return expect_shape(v, in, &in->operands[0]->shape);
	CHECK(in->shape.etype == NCC_TUPLE && in->shape.nelems == n, "result must be a tuple of %d", (int)n);
	for (int32_t k = 0; k < n; k++)
		CHECK(ncc_shape_equal(&in->shape.elems[k], &in->operands[k]->shape, false),
		      "result element %d differs from operand %d", (int)k, (int)k);
	return NCC_OK;
}

static ncc_status_t v_gather(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 2));
	const ncc_shape_t *a = &in->operands[0]->shape, *idx = &in->operands[1]->shape;
	const ncc_gather_dnums_t *g = in->gather;
	CHECK(g, "missing gather dimension numbers");
	int64_t ivd = g->index_vector_dim;
	TRY(check_indices(v, in, a, idx, "start_indices", ivd, &g->start_index_map, "start_index_map"));
	TRY(check_dropped_dims(v, in, a, &g->collapsed_slice_dims, "collapsed_slice_dims",
			       &g->operand_batching_dims, "operand_batching_dims"));
	CHECK(sorted(&g->offset_dims), "offset_dims must be sorted");
	CHECK(g->slice_sizes.n == a->rank, "slice_sizes has %d entries, operand has rank %d",
	      (int)g->slice_sizes.n, (int)a->rank);
	for (int32_t i = 0; i < a->rank; i++)
		CHECK(g->slice_sizes.v[i] >= 0 && g->slice_sizes.v[i] <= a->dims[i],
		      "slice_sizes[%d] = %lld out of bounds for dimension size %lld", (int)i,
		      (long long)g->slice_sizes.v[i], (long long)a->dims[i]);
	for (int32_t i = 0; i < g->collapsed_slice_dims.n; i++)
		CHECK(g->slice_sizes.v[g->collapsed_slice_dims.v[i]] <= 1,
		      "collapsed dimension %lld has slice size %lld, must be <= 1",
		      (long long)g->collapsed_slice_dims.v[i],
		      (long long)g->slice_sizes.v[g->collapsed_slice_dims.v[i]]);
	int32_t batch_rank = idx->rank - (ivd < idx->rank ? 1 : 0);
	int32_t out_rank = batch_rank + g->offset_dims.n;
	CHECK(g->offset_dims.n == a->rank - g->collapsed_slice_dims.n - g->operand_batching_dims.n,
	      "offset_dims has %d entries, expected operand rank %d - collapsed %d - batching %d",
	      (int)g->offset_dims.n, (int)a->rank, (int)g->collapsed_slice_dims.n,
	      (int)g->operand_batching_dims.n);
	CHECK(out_rank <= NCC_MAX_RANK, "result rank %d too large", (int)out_rank);
	TRY(check_dim_list(v, in, &g->offset_dims, out_rank, "offset_dims"));
	ncc_shape_t want = ncc_shape_scalar(a->etype);
	want.rank = out_rank;
	int32_t oi = 0, bi = 0;
	for (int32_t i = 0; i < out_rank; i++) {
		if (in_list(&g->offset_dims, i)) {
			while (oi < a->rank && (in_list(&g->collapsed_slice_dims, oi) ||
						in_list(&g->operand_batching_dims, oi)))
				oi++;
			want.dims[i] = g->slice_sizes.v[oi++];
		} else {
			if (bi == ivd)
				bi++;
			want.dims[i] = idx->dims[bi++];
		}
	}
	return expect_shape(v, in, &want);
}

static ncc_status_t v_scatter(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 3 && in->noperands % 2 == 1,
	      "expects N operands, indices and N updates, has %d operands", (int)in->noperands);
	int32_t n = (in->noperands - 1) / 2;
	CHECK(n <= 64, "too many operands");
	const ncc_shape_t *a = &in->operands[0]->shape, *idx = &in->operands[n]->shape;
	const ncc_scatter_dnums_t *s = in->scatter;
	CHECK(s, "missing scatter dimension numbers");
	int64_t ivd = s->index_vector_dim;
	TRY(check_indices(v, in, a, idx, "scatter_indices", ivd, &s->scatter_dims_to_operand_dims,
			  "scatter_dims_to_operand_dims"));
	TRY(check_dropped_dims(v, in, a, &s->inserted_window_dims, "inserted_window_dims",
			       &s->input_batching_dims, "input_batching_dims"));
	CHECK(sorted(&s->update_window_dims), "update_window_dims must be sorted");
	CHECK(s->update_window_dims.n + s->inserted_window_dims.n + s->input_batching_dims.n == a->rank,
	      "update_window_dims (%d) + inserted_window_dims (%d) + input_batching_dims (%d) must equal operand rank %d",
	      (int)s->update_window_dims.n, (int)s->inserted_window_dims.n,
	      (int)s->input_batching_dims.n, (int)a->rank);
	int32_t scatter_rank = idx->rank - (ivd < idx->rank ? 1 : 0);
	ncc_etype_t types[64];
	for (int32_t k = 0; k < n; k++) {
		const ncc_shape_t *op = &in->operands[k]->shape, *u = &in->operands[n + 1 + k]->shape;
		TRY(need_array(v, in, op, "operand"));
		TRY(need_array(v, in, u, "updates"));
		CHECK(same_dims(op, a), "operands %s and %s differ", sh(a), sh(op));
		CHECK(u->etype == op->etype, "updates type %s differs from operand type %s",
		      ncc_etype_name(u->etype), ncc_etype_name(op->etype));
		CHECK(u->rank == scatter_rank + s->update_window_dims.n,
		      "updates rank %d, expected %d scatter dims + %d window dims", (int)u->rank,
		      (int)scatter_rank, (int)s->update_window_dims.n);
		TRY(check_dim_list(v, in, &s->update_window_dims, u->rank, "update_window_dims"));
		int32_t oi = 0, bi = 0;
		for (int32_t i = 0; i < u->rank; i++) {
			if (in_list(&s->update_window_dims, i)) {
				while (oi < a->rank && (in_list(&s->inserted_window_dims, oi) ||
							in_list(&s->input_batching_dims, oi)))
					oi++;
				CHECK(oi < a->rank && u->dims[i] <= a->dims[oi],
				      "update window dimension %d (size %lld) exceeds operand dimension %d",
				      (int)i, (long long)u->dims[i], (int)oi);
				oi++;
			} else {
				if (bi == ivd)
					bi++;
				CHECK(bi < idx->rank && u->dims[i] == idx->dims[bi],
				      "update scatter dimension %d (size %lld) does not match indices dimension %d",
				      (int)i, (long long)u->dims[i], (int)bi);
				bi++;
			}
		}
		types[k] = op->etype;
	}
	TRY(check_reducer(v, in, in->to_apply, n, types));
	return expect_operand_shapes(v, in, n);
}

static ncc_status_t v_tuple(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->shape.etype == NCC_TUPLE, "result must be a tuple, is %s", sh(&in->shape));
	CHECK(in->shape.nelems == in->noperands, "result tuple has %d elements, %d operands",
	      (int)in->shape.nelems, (int)in->noperands);
	for (int32_t i = 0; i < in->noperands; i++)
		CHECK(ncc_shape_equal(&in->shape.elems[i], &in->operands[i]->shape, false),
		      "tuple element %d is %s but operand %d is %s", (int)i, sh(&in->shape.elems[i]),
		      (int)i, sh(&in->operands[i]->shape));
	return NCC_OK;
}

static ncc_status_t v_gte(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 1));
	const ncc_shape_t *t = &in->operands[0]->shape;
	CHECK(t->etype == NCC_TUPLE, "operand must be a tuple, is %s", sh(t));
	CHECK(in->tuple_index >= 0 && in->tuple_index < t->nelems,
	      "index %lld out of range for a tuple of %d elements", (long long)in->tuple_index,
	      (int)t->nelems);
	return expect_shape(v, in, &t->elems[in->tuple_index]);
}

static ncc_status_t v_while(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 1));
	const ncc_shape_t *init = &in->operands[0]->shape, *ps[1] = { init };
	ncc_shape_t pr = ncc_shape_scalar(NCC_PRED);
	TRY(check_called(v, in, in->condition, "condition", 1, ps, &pr));
	TRY(check_called(v, in, in->body, "body", 1, ps, init));
	return expect_shape(v, in, init);
}

static ncc_status_t v_conditional(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->nbranches >= 1, "missing branch computations");
	CHECK(in->noperands == 1 + in->nbranches, "expects %d operands (selector + one per branch), has %d",
	      (int)(1 + in->nbranches), (int)in->noperands);
	const ncc_shape_t *p = &in->operands[0]->shape;
	if (in->branches_are_pred)
		CHECK(is_scalar(p) && p->etype == NCC_PRED, "predicate must be pred[], is %s", sh(p));
	else
		CHECK(is_scalar(p) && (p->etype == NCC_S32 || p->etype == NCC_PRED),
		      "branch index must be s32[], is %s", sh(p));
	for (int32_t i = 0; i < in->nbranches; i++) {
		const ncc_shape_t *ps[1] = { &in->operands[i + 1]->shape };
		TRY(check_called(v, in, in->branches[i], "branch", 1, ps, &in->shape));
	}
	return NCC_OK;
}

static ncc_status_t v_call_like(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c, const char *role)
{
	CHECK(in->noperands <= 4096, "too many operands");
	const ncc_shape_t *ps[4096];
	for (int32_t i = 0; i < in->noperands; i++)
		ps[i] = &in->operands[i]->shape;
	return check_called(v, in, c, role, in->noperands, ps, &in->shape);
}

static ncc_status_t v_map(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1 && in->noperands <= 64, "expects 1..64 operands");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	ncc_shape_t sc[64];
	const ncc_shape_t *ps[64];
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape;
		TRY(need_array(v, in, a, "operand"));
		CHECK(same_dims(a, a0), "operands %s and %s differ in dimensions", sh(a0), sh(a));
		sc[i] = ncc_shape_scalar(a->etype);
		ps[i] = &sc[i];
	}
	TRY(check_called(v, in, in->to_apply, "to_apply", in->noperands, ps, NULL));
	CHECK(same_dims(&in->shape, a0), "result %s differs in dimensions from operands %s",
	      sh(&in->shape), sh(a0));
	return NCC_OK;
}

static ncc_status_t v_sort(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1 && in->noperands <= 64, "expects 1..64 operands");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	TRY(need_array(v, in, a0, "operand"));
	CHECK(in->dimensions.present && in->dimensions.n == 1, "dimensions must hold one dimension");
	TRY(check_dim_list(v, in, &in->dimensions, a0->rank, "dimensions"));
	ncc_shape_t sc[128];
	const ncc_shape_t *ps[128];
	int32_t n = in->noperands;
	for (int32_t i = 0; i < n; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape;
		TRY(need_array(v, in, a, "operand"));
		CHECK(same_dims(a, a0), "operands %s and %s differ in dimensions", sh(a0), sh(a));
		sc[2 * i] = sc[2 * i + 1] = ncc_shape_scalar(a->etype);
		ps[2 * i] = &sc[2 * i];
		ps[2 * i + 1] = &sc[2 * i + 1];
	}
	ncc_shape_t pr = ncc_shape_scalar(NCC_PRED);
	TRY(check_called(v, in, in->to_apply, "comparator", 2 * n, ps, &pr));
	return expect_operand_shapes(v, in, n);
}

static ncc_status_t v_constant(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 0));
	CHECK(in->literal.present, "constant without a literal");
	if (in->shape.etype == NCC_TUPLE)
		return NCC_OK;
	TRY(need_array(v, in, &in->shape, "result"));
	CHECK(in->literal.etype == in->shape.etype, "literal type %s differs from shape type %s",
	      ncc_etype_name(in->literal.etype), ncc_etype_name(in->shape.etype));
	if (!in->literal.elided) {
		int64_t n = ncc_shape_elements(&in->shape);
		CHECK(in->literal.count == n, "literal has %lld elements, shape %s has %lld",
		      (long long)in->literal.count, sh(&in->shape), (long long)n);
		CHECK(in->literal.nbytes == (size_t)n * ncc_etype_storage_bytes(in->shape.etype),
		      "literal buffer has the wrong size");
		CHECK(n == 0 || in->literal.data, "literal has no data");
	}
	return NCC_OK;
}

static ncc_status_t v_batch_norm(vctx_t *v, const ncc_inst_t *in)
{
	int32_t want_ops = in->op == NCC_OP_BATCH_NORM_TRAINING ? 3 : 5;
	TRY(need_operands(v, in, want_ops));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(need_array(v, in, a, "operand"));
	CHECK(ncc_etype_is_float(a->etype), "operand must be floating point, is %s", ncc_etype_name(a->etype));
	CHECK(in->feature_index >= 0 && in->feature_index < a->rank,
	      "feature_index %lld out of range for rank %d", (long long)in->feature_index, (int)a->rank);
	int64_t f = a->dims[in->feature_index];
	ncc_shape_t vec = ncc_shape_array(a->etype, 1, &f);
	for (int32_t i = 1; i < want_ops; i++) {
		const ncc_shape_t *s = &in->operands[i]->shape;
		if (in->op == NCC_OP_BATCH_NORM_GRAD && i == 4) {
			CHECK(ncc_shape_equal(s, a, false), "grad_output %s must match operand %s", sh(s), sh(a));
			continue;
		}
		CHECK(ncc_shape_equal(s, &vec, false), "operand %d is %s, expected %s (feature dimension)",
		      (int)i, sh(s), sh(&vec));
	}
	if (in->op == NCC_OP_BATCH_NORM_INFERENCE)
		return expect_shape(v, in, a);
	ncc_shape_t el[3] = { *a, vec, vec };
	ncc_shape_t t = one_or_tuple(3, el);
	return expect_shape(v, in, &t);
}

static ncc_status_t v_rng_bit_generator(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 1));
	const ncc_shape_t *st = &in->operands[0]->shape;
	TRY(need_array(v, in, st, "state"));
	CHECK(in->shape.etype == NCC_TUPLE && in->shape.nelems == 2,
	      "result must be a (state, bits) tuple, is %s", sh(&in->shape));
	CHECK(ncc_shape_equal(&in->shape.elems[0], st, false), "result state %s differs from input state %s",
	      sh(&in->shape.elems[0]), sh(st));
	CHECK(ncc_shape_is_array(&in->shape.elems[1]) &&
	      (ncc_etype_is_integral(in->shape.elems[1].etype)),
	      "generated bits must be an integer array, are %s", sh(&in->shape.elems[1]));
	return NCC_OK;
}

static ncc_status_t v_rng(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_operands(v, in, 2));
	CHECK(in->distribution != NCC_RNG_DIST_NONE, "missing distribution=");
	for (int i = 0; i < 2; i++) {
		const ncc_shape_t *s = &in->operands[i]->shape;
		CHECK(is_scalar(s) && s->etype == in->shape.etype, "parameter %d must be a %s scalar, is %s",
		      i, ncc_etype_name(in->shape.etype), sh(s));
	}
	return NCC_OK;
}

static ncc_status_t v_bitcast_convert(vctx_t *v, const ncc_inst_t *in)
{
	TRY(need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape, *r = &in->shape;
	int ib = ncc_etype_bits(a->etype), ob = ncc_etype_bits(r->etype);
	if (ib == ob) {
		CHECK(same_dims(a, r), "operand %s and result %s differ in dimensions", sh(a), sh(r));
	} else if (ib > ob) {
		CHECK(r->rank == a->rank + 1 && r->dims[r->rank - 1] == ib / ob,
		      "narrowing %s to %s needs a trailing dimension of %d", ncc_etype_name(a->etype),
		      ncc_etype_name(r->etype), ib / (ob ? ob : 1));
		for (int32_t i = 0; i < a->rank; i++)
			CHECK(r->dims[i] == a->dims[i], "dimension %d differs", (int)i);
	} else {
		CHECK(a->rank == r->rank + 1 && a->dims[a->rank - 1] == ob / ib,
		      "widening %s to %s needs an operand trailing dimension of %d",
		      ncc_etype_name(a->etype), ncc_etype_name(r->etype), ob / (ib ? ib : 1));
		for (int32_t i = 0; i < r->rank; i++)
			CHECK(r->dims[i] == a->dims[i], "dimension %d differs", (int)i);
	}
	return NCC_OK;
}

static ncc_status_t v_same_as_operand(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "missing operand");
	return expect_shape(v, in, &in->operands[0]->shape);
}

static ncc_status_t v_all_reduce(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1 && in->noperands <= 64, "expects 1..64 operands");
	ncc_etype_t types[64];
	for (int32_t i = 0; i < in->noperands; i++) {
		TRY(need_array(v, in, &in->operands[i]->shape, "operand"));
		types[i] = in->operands[i]->shape.etype;
	}
	/* the reducer combines one element at a time, whatever the operand count */
	TRY(check_reducer(v, in, in->to_apply, 1, types));
	if (in->noperands == 1)
		return expect_shape(v, in, &in->operands[0]->shape);
	CHECK(in->shape.etype == NCC_TUPLE && in->shape.nelems == in->noperands,
	      "result must be a tuple of %d", (int)in->noperands);
	return NCC_OK;
}

static ncc_status_t v_gather_scatter_collective(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "missing operand");
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(need_array(v, in, a, "operand"));
	if (in->op != NCC_OP_ALL_TO_ALL || in->dimensions.present) {
		CHECK(in->dimensions.present && in->dimensions.n == 1, "dimensions must hold one dimension");
		int64_t d = in->dimensions.v[0];
		CHECK(d >= 0 && d < a->rank, "dimension %lld out of range for rank %d", (long long)d, (int)a->rank);
		if (ncc_shape_is_array(&in->shape)) {
			CHECK(in->shape.rank == a->rank, "result rank %d differs from operand rank %d",
			      (int)in->shape.rank, (int)a->rank);
			for (int32_t i = 0; i < a->rank; i++)
				CHECK(i == d || in->shape.dims[i] == a->dims[i],
				      "result differs from operand in dimension %d", (int)i);
		}
	}
	if (in->op == NCC_OP_REDUCE_SCATTER) {
		ncc_etype_t t = a->etype;
		TRY(check_reducer(v, in, in->to_apply, 1, &t));
	}
	return NCC_OK;
}

static ncc_status_t v_fusion(vctx_t *v, const ncc_inst_t *in)
{
	return v_call_like(v, in, in->calls, "fused");
}

static ncc_status_t verify_semantics(vctx_t *v, const ncc_inst_t *in)
{
	switch (in->op) {
	case NCC_OP_PARAMETER:
		TRY(need_operands(v, in, 0));
		return NCC_OK;
	case NCC_OP_CONSTANT: return v_constant(v, in);
	case NCC_OP_SELECT: return v_select(v, in);
	case NCC_OP_CLAMP: return v_clamp(v, in);
	case NCC_OP_BROADCAST: return v_broadcast(v, in);
	case NCC_OP_RESHAPE: return v_reshape(v, in);
	case NCC_OP_TRANSPOSE: return v_transpose(v, in);
	case NCC_OP_REVERSE: return v_reverse(v, in);
	case NCC_OP_DOT: return v_dot(v, in);
	case NCC_OP_CONVOLUTION: return v_convolution(v, in);
	case NCC_OP_REDUCE: return v_reduce(v, in);
	case NCC_OP_REDUCE_WINDOW: return v_reduce_window(v, in);
	case NCC_OP_SELECT_AND_SCATTER: return v_select_and_scatter(v, in);
	case NCC_OP_SLICE: return v_slice(v, in);
	case NCC_OP_DYNAMIC_SLICE: return v_dynamic_slice(v, in);
	case NCC_OP_DYNAMIC_UPDATE_SLICE: return v_dynamic_update_slice(v, in);
	case NCC_OP_CONCATENATE: return v_concatenate(v, in);
	case NCC_OP_PAD: return v_pad(v, in);
	case NCC_OP_IOTA: return v_iota(v, in);
	case NCC_OP_GATHER: return v_gather(v, in);
	case NCC_OP_SCATTER: return v_scatter(v, in);
	case NCC_OP_TUPLE: return v_tuple(v, in);
	case NCC_OP_GET_TUPLE_ELEMENT: return v_gte(v, in);
	case NCC_OP_WHILE: return v_while(v, in);
	case NCC_OP_CONDITIONAL: return v_conditional(v, in);
	case NCC_OP_CALL: return v_call_like(v, in, in->to_apply, "to_apply");
	case NCC_OP_FUSION: return v_fusion(v, in);
	case NCC_OP_MAP: return v_map(v, in);
	case NCC_OP_SORT: return v_sort(v, in);
	case NCC_OP_BATCH_NORM_TRAINING:
	case NCC_OP_BATCH_NORM_INFERENCE:
	case NCC_OP_BATCH_NORM_GRAD: return v_batch_norm(v, in);
	case NCC_OP_RNG_BIT_GENERATOR: return v_rng_bit_generator(v, in);
	case NCC_OP_RNG: return v_rng(v, in);
	case NCC_OP_BITCAST_CONVERT: return v_bitcast_convert(v, in);
	case NCC_OP_ALL_REDUCE: return v_all_reduce(v, in);
	case NCC_OP_ALL_GATHER:
	case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_ALL_TO_ALL: return v_gather_scatter_collective(v, in);
	case NCC_OP_COLLECTIVE_PERMUTE:
	case NCC_OP_OPTIMIZATION_BARRIER:
	case NCC_OP_ADD_DEPENDENCY:
	case NCC_OP_DOMAIN:
		return v_same_as_operand(v, in);
	case NCC_OP_AFTER_ALL:
		CHECK(in->shape.etype == NCC_TOKEN, "result must be a token, is %s", sh(&in->shape));
		return NCC_OK;
	case NCC_OP_REPLICA_ID:
	case NCC_OP_PARTITION_ID:
		TRY(need_operands(v, in, 0));
		CHECK(is_scalar(&in->shape) && in->shape.etype == NCC_U32, "result must be u32[], is %s",
		      sh(&in->shape));
		return NCC_OK;
	default:
		break;
	}
	if (ncc_opcode_is_elementwise_unary(in->op))
		return v_unary(v, in);
	if (ncc_opcode_is_elementwise_binary(in->op))
		return v_binary(v, in);
	/* custom-call, unknown and the rest: structural checks only */
	return NCC_OK;
}

/* Checks that every computation an instruction calls belongs to this module. */
static ncc_status_t check_callee(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c)
{
	if (!c)
		return NCC_OK;
	CHECK(comp_index_v(v, c) >= 0, "calls computation '%s' that is not in the module", c->name);
	CHECK(c != in->parent, "calls its own computation '%s'", c->name);
	CHECK(!c->is_entry, "calls the entry computation '%s'", c->name);
	return NCC_OK;
}

static ncc_status_t verify_inst_common(vctx_t *v, const ncc_inst_t *in)
{
	TRY(check_shape(v, in, &in->shape, "result shape", 0));
	CHECK(in->noperands >= 0 && (in->noperands == 0 || in->operands), "malformed operand list");
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_inst_t *o = in->operands[i];
		CHECK(o, "operand %d is missing", (int)i);
		CHECK(o->parent == in->parent, "operand '%s' belongs to another computation", o->name);
		CHECK(o != in, "uses itself as an operand");
	}
	TRY(check_callee(v, in, in->to_apply));
	TRY(check_callee(v, in, in->condition));
	TRY(check_callee(v, in, in->body));
	TRY(check_callee(v, in, in->calls));
	TRY(check_callee(v, in, in->select));
	TRY(check_callee(v, in, in->scatter_comp));
	for (int32_t i = 0; i < in->nbranches; i++) {
		CHECK(in->branches[i], "branch %d is missing", (int)i);
		TRY(check_callee(v, in, in->branches[i]));
	}
	for (int32_t i = 0; i < in->ncalled; i++) {
		CHECK(in->called[i], "called computation %d is missing", (int)i);
		TRY(check_callee(v, in, in->called[i]));
	}
	return verify_semantics(v, in);
}

/* ---------------------------------------------------------- call graph */

/* Callees of an instruction, in one array (at most 6 named slots + lists). */
static int32_t callees(const ncc_inst_t *in, const ncc_comp_t **out, int32_t cap)
{
	int32_t n = 0;
	const ncc_comp_t *named[6] = { in->to_apply, in->condition, in->body, in->calls,
				       in->select, in->scatter_comp };
	for (int k = 0; k < 6; k++)
		if (named[k] && n < cap)
			out[n++] = named[k];
	for (int32_t k = 0; k < in->nbranches && n < cap; k++)
		if (in->branches[k])
			out[n++] = in->branches[k];
	for (int32_t k = 0; k < in->ncalled && n < cap; k++)
		if (in->called[k])
			out[n++] = in->called[k];
	return n;
}

/* HLO computations may not call themselves, directly or through others: a cycle would
 * send the interpreter and the lowering into endless recursion. Iterative DFS so a
 * long chain of computations cannot exhaust the stack. */
static ncc_status_t check_call_cycles(vctx_t *v)
{
	const ncc_module_t *m = v->m;
	int32_t n = m->ncomps;
	uint8_t *color = ncc__calloc((size_t)(n ? n : 1), 1); /* 0 new, 1 on stack, 2 done */
	int32_t *stack_c = ncc__malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
	int32_t *stack_i = ncc__malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
	if (!color || !stack_c || !stack_i) {
		free(color);
		free(stack_c);
		free(stack_i);
		return ncc_error_set(v->err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	}
	ncc_status_t st = NCC_OK;
	for (int32_t root = 0; root < n && !st; root++) {
		if (color[root])
			continue;
		int32_t sp = 0;
		stack_c[sp] = root;
		stack_i[sp] = 0; /* next instruction to scan */
		color[root] = 1;
		sp++;
		while (sp > 0 && !st) {
			int32_t ci = stack_c[sp - 1];
			const ncc_comp_t *c = m->comps[ci];
			if (stack_i[sp - 1] >= c->ninsts) {
				color[ci] = 2;
				sp--;
				continue;
			}
			/* the instruction is rescanned after each descent; it is passed only
			 * when none of its callees is new */
			const ncc_inst_t *in = c->insts[stack_i[sp - 1]];
			const ncc_comp_t *cs[64];
			int32_t k = callees(in, cs, 64);
			bool descended = false;
			for (int32_t j = 0; j < k && !st && !descended; j++) {
				int32_t ti = comp_index_v(v, cs[j]);
				if (ti < 0)
					continue; /* reported by check_callee */
				if (color[ti] == 1)
					st = vfail(v, in, "calls computation '%s', which is already on the call chain (a cycle)",
						   cs[j]->name);
				else if (color[ti] == 0) {
					color[ti] = 1;
					stack_c[sp] = ti;
					stack_i[sp] = 0;
					sp++;
					descended = true;
				}
			}
			if (!descended)
				stack_i[sp - 1]++;
		}
	}
	free(color);
	free(stack_c);
	free(stack_i);
	return st;
}

ncc_status_t ncc_verify_inst(const ncc_inst_t *inst, ncc_error_t *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
	if (!inst || !inst->parent)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "no instruction");
	vctx_t v = { inst->parent->module, err, NULL };
	return verify_inst_common(&v, inst);
}

static ncc_status_t verify_module(vctx_t *v);

ncc_status_t ncc_verify(const ncc_module_t *m, ncc_error_t *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
	if (!m)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "no module");
	vctx_t vc = { m, err, NULL }, *v = &vc;
	const ncc_inst_t *in = NULL; /* for CHECK in module-level checks */
	CHECK(m->entry, "module '%s' has no entry computation", m->name);
	vc.index = ncc__malloc(sizeof(comp_ref_t) * (size_t)(m->ncomps ? m->ncomps : 1));
	if (!vc.index)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	for (int32_t i = 0; i < m->ncomps; i++) {
		vc.index[i].c = m->comps[i];
		vc.index[i].index = i;
	}
	qsort(vc.index, (size_t)m->ncomps, sizeof(comp_ref_t), cmp_comp_ref);
	ncc_status_t ist = verify_module(v);
	free(vc.index);
	return ist;
}

static ncc_status_t verify_module(vctx_t *v)
{
	const ncc_module_t *m = v->m;
	ncc_error_t *err = v->err;
	const ncc_inst_t *in = NULL; /* for CHECK in module-level checks */
	/* positions for "defined before use": ids are dense below next_id */
	int32_t *pos = ncc__malloc(sizeof(int32_t) * (size_t)(m->next_id ? m->next_id : 1));
	if (!pos)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	for (uint32_t i = 0; i < m->next_id; i++)
		pos[i] = -1;
	ncc_status_t st = NCC_OK;
	bool entry_found = false;
	for (int32_t ci = 0; ci < m->ncomps && !st; ci++) {
		const ncc_comp_t *c = m->comps[ci];
		entry_found |= c == m->entry;
		if (c->ninsts == 0 || !c->root) {
			st = vfail(v, NULL, "computation '%s' has no root instruction", c->name);
			break;
		}
		if (c->root->parent != c) {
			st = vfail(v, NULL, "computation '%s': root '%s' belongs to another computation",
				   c->name, c->root->name);
			break;
		}
		for (int32_t i = 0; i < c->nparams && !st; i++) {
			const ncc_inst_t *p = c->params[i];
			if (!p || p->op != NCC_OP_PARAMETER || p->parameter_number != i || p->parent != c)
				st = vfail(v, p, "computation '%s': parameter %d is missing or misnumbered",
					   c->name, (int)i);
		}
		if (!st && (c->nsig_params || c->has_sig_result)) {
			if (c->nsig_params != c->nparams)
				st = vfail(v, NULL, "computation '%s': signature lists %d parameters, body has %d",
					   c->name, (int)c->nsig_params, (int)c->nparams);
			for (int32_t i = 0; i < c->nsig_params && !st; i++)
				if (!ncc_shape_equal(&c->sig_param_shapes[i], &c->params[i]->shape, false))
					st = vfail(v, c->params[i], "signature says parameter %d is %s",
						   (int)i, sh(&c->sig_param_shapes[i]));
			if (!st && c->has_sig_result &&
			    !ncc_shape_equal(&c->sig_result, &c->root->shape, false))
				st = vfail(v, c->root, "computation '%s' signature returns %s, root is %s",
					   c->name, sh(&c->sig_result), sh(&c->root->shape));
		}
		for (int32_t i = 0; i < c->ninsts && !st; i++) {
			const ncc_inst_t *x = c->insts[i];
			if (!x || x->id >= m->next_id || x->parent != c) {
				st = vfail(v, x, "computation '%s' holds a foreign instruction", c->name);
				break;
			}
			if (x->op == NCC_OP_PARAMETER &&
			    (x->parameter_number < 0 || x->parameter_number >= c->nparams ||
			     c->params[x->parameter_number] != x)) {
				st = vfail(v, x, "parameter(%lld) is not registered in computation '%s'",
					   (long long)x->parameter_number, c->name);
				break;
			}
			for (int32_t k = 0; k < x->noperands && !st; k++) {
				const ncc_inst_t *o = x->operands[k];
				if (o && o->parent == c && o->id < m->next_id && pos[o->id] < 0)
					st = vfail(v, x, "operand '%s' is used before it is defined", o->name);
			}
			if (!st)
				st = verify_inst_common(v, x);
			pos[x->id] = i;
		}
		if (!st && pos[c->root->id] < 0)
			st = vfail(v, NULL, "computation '%s': root is not in its instruction list", c->name);
	}
	free(pos);
	if (st)
		return st;
	CHECK(entry_found, "entry computation is not in the module");
	TRY(check_call_cycles(v));
	/* input_output_alias refers to existing parameters and outputs */
	const ncc_comp_t *e = m->entry;
	for (int32_t i = 0; i < m->naliases; i++) {
		const ncc_alias_t *a = &m->aliases[i];
		CHECK(a->param_number >= 0 && a->param_number < e->nparams,
		      "input_output_alias: parameter %lld does not exist (entry has %d)",
		      (long long)a->param_number, (int)e->nparams);
		const ncc_shape_t *o = &e->root->shape;
		for (int32_t k = 0; k < a->output_index.n; k++) {
			CHECK(o->etype == NCC_TUPLE && a->output_index.v[k] >= 0 &&
			      a->output_index.v[k] < o->nelems,
			      "input_output_alias: output index %d is not an element of the result", (int)i);
			o = &o->elems[a->output_index.v[k]];
		}
		const ncc_shape_t *p = &e->params[a->param_number]->shape;
		for (int32_t k = 0; k < a->param_index.n; k++) {
			CHECK(p->etype == NCC_TUPLE && a->param_index.v[k] >= 0 &&
			      a->param_index.v[k] < p->nelems,
			      "input_output_alias: parameter index of alias %d is not an element", (int)i);
			p = &p->elems[a->param_index.v[k]];
		}
		CHECK(ncc_shape_equal(o, p, false),
		      "input_output_alias: output %s and parameter %lld %s differ", sh(o),
		      (long long)a->param_number, sh(p));
	}
	/* buffer_donor names existing parameters (elements of tuple ones), none of
	 * them also aliased (XLA's HloBufferDonorConfig::Verify) */
	for (int32_t i = 0; i < m->ndonors; i++) {
		const ncc_donor_t *d = &m->donors[i];
		CHECK(d->param_number >= 0 && d->param_number < e->nparams,
		      "buffer_donor: parameter %lld does not exist (entry has %d)",
		      (long long)d->param_number, (int)e->nparams);
		const ncc_shape_t *p = &e->params[d->param_number]->shape;
		for (int32_t k = 0; k < d->param_index.n; k++) {
			CHECK(p->etype == NCC_TUPLE && d->param_index.v[k] >= 0 &&
			      d->param_index.v[k] < p->nelems,
			      "buffer_donor: parameter index of donor %d is not an element", (int)i);
			p = &p->elems[d->param_index.v[k]];
		}
		for (int32_t a = 0; a < m->naliases; a++) {
			const ncc_alias_t *al = &m->aliases[a];
			bool same = al->param_number == d->param_number &&
				    al->param_index.n == d->param_index.n;
			for (int32_t k = 0; same && k < d->param_index.n; k++)
				same = al->param_index.v[k] == d->param_index.v[k];
			CHECK(!same, "buffer_donor: parameter %lld is also in input_output_alias",
			      (long long)d->param_number);
		}
	}
	return NCC_OK;
}
