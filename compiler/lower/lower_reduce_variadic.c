/* Lowering of variadic reduces: recognising the form (torch_xla's argmax/argmin comparator, or independent plain reductions) and lowering it (argmax/argmin as REDUCE + CMP/SELECT + index REDUCE). */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* ------------------------------------------------------- variadic reduce */

/* The variadic reduces the device runs (nv inputs, nv init values, a tuple of nv
 * results):
 * - argmax/argmin: nv = 2, a value and an index input, the comparator torch_xla's
 *   argmax/argmin/max(dim)/min(dim) emit (minmax_func):
 *     pick = compare(av, bv, GE|GT|LE|LT)          (optionally or'ed with av != av)
 *     value = select(pick, av, bv)                   (or maximum/minimum(av, bv))
 *     index = select(compare(av, bv, EQ), minimum|maximum(ai, bi), select(pick, ai, bi))
 *   i.e. the max (min) value and, among the elements that hold it, the smallest
 *   (largest) index, as XLA's sequential reduction gives;
 * - independent: result k = op(param k, param nv+k), op one of the REDUCE combiners
 *   (several plain reduces over the same dims, e.g. after a multi-output fusion). */
typedef struct vreduce_form {
	bool argminmax;
	int32_t val, idx; /* argminmax: which input is the value, which the index */
	bool is_max;      /* value max (else min) */
	bool tie_min;     /* equal values: the smaller index (else the larger) */
	int comb[4];      /* independent: the combiner of each result */
} vreduce_form_t;

static ncc_cmp_dir_t flip_dir(ncc_cmp_dir_t d)
{
	switch (d) {
	case NCC_CMP_LT: return NCC_CMP_GT;
	case NCC_CMP_LE: return NCC_CMP_GE;
	case NCC_CMP_GT: return NCC_CMP_LT;
	case NCC_CMP_GE: return NCC_CMP_LE;
	default: return d;
	}
}

/* The direction of c = compare(a, b) seen with a on the left, NCC_CMP_NONE when c
 * is not a compare of a and b. */
static ncc_cmp_dir_t cmp_of(const ncc_inst_t *c, const ncc_inst_t *a, const ncc_inst_t *b)
{
	if (c->op != NCC_OP_COMPARE || c->noperands != 2 || a == b)
		return NCC_CMP_NONE;
	if (c->operands[0] == a && c->operands[1] == b)
		return c->cmp_dir;
	if (c->operands[0] == b && c->operands[1] == a)
		return flip_dir(c->cmp_dir);
	return NCC_CMP_NONE;
}

/* p as "a is picked over b": 1 for compare(a, b, GE|GT) (max), 0 for LE|LT (min),
 * either optionally or'ed with compare(a, a, NE) (a NaN a is picked); -1 otherwise. */
static int pick_kind(const ncc_inst_t *p, const ncc_inst_t *a, const ncc_inst_t *b)
{
	if (p->op == NCC_OP_OR && p->noperands == 2) {
		for (int k = 0; k < 2; k++) {
			const ncc_inst_t *n = p->operands[1 - k];
			if (n->op == NCC_OP_COMPARE && n->noperands == 2 && n->cmp_dir == NCC_CMP_NE &&
			    n->operands[0] == a && n->operands[1] == a && p->operands[k]->op == NCC_OP_COMPARE)
				return pick_kind(p->operands[k], a, b);
		}
		return -1;
	}
	switch (cmp_of(p, a, b)) {
	case NCC_CMP_GE: case NCC_CMP_GT: return 1;
	case NCC_CMP_LE: case NCC_CMP_LT: return 0;
	default: return -1;
	}
}

/* s = select(pick, x, y) with {x, y} = {a, b} and pick picking x: its kind, or -1. */
static int select_kind(const ncc_inst_t *s, const ncc_inst_t *a, const ncc_inst_t *b,
		       const ncc_inst_t *va, const ncc_inst_t *vb)
{
	if (s->op != NCC_OP_SELECT || s->noperands != 3)
		return -1;
	if (s->operands[1] == a && s->operands[2] == b)
		return pick_kind(s->operands[0], va, vb);
	if (s->operands[1] == b && s->operands[2] == a)
		return pick_kind(s->operands[0], vb, va);
	return -1;
}

static bool argminmax_form(const ncc_comp_t *c, int32_t val, vreduce_form_t *f)
{
	int32_t idx = 1 - val;
	const ncc_inst_t *r = c->root;
	const ncc_inst_t *av = c->params[val], *ai = c->params[idx];
	const ncc_inst_t *bv = c->params[2 + val], *bi = c->params[2 + idx];
	if (!av || !ai || !bv || !bi)
		return false;
	const ncc_inst_t *v = r->operands[val], *ix = r->operands[idx];
	int kind;
	if (v->op == NCC_OP_MAXIMUM || v->op == NCC_OP_MINIMUM)
		kind = ncc_lower_binary_combiner(v, av, bv) < 0 ? -1 : v->op == NCC_OP_MAXIMUM;
	else
		kind = select_kind(v, av, bv, av, bv);
	if (kind < 0)
		return false;
	/* index = select(av == bv, tie(ai, bi), select(pick, ai, bi)) */
	if (ix->op != NCC_OP_SELECT || ix->noperands != 3 ||
	    cmp_of(ix->operands[0], av, bv) != NCC_CMP_EQ)
		return false;
	const ncc_inst_t *tie = ix->operands[1];
	int tc = ncc_lower_binary_combiner(tie, ai, bi);
	if (tc != ISA_RED_MIN && tc != ISA_RED_MAX)
		return false;
	if (select_kind(ix->operands[2], ai, bi, av, bv) != kind)
		return false;
	f->argminmax = true;
	f->val = val;
	f->idx = idx;
	f->is_max = kind == 1;
	f->tie_min = tc == ISA_RED_MIN;
	return true;
}

/* The form of a variadic reduce (inst->shape a tuple), or false with a reason. */
static bool vreduce_form(const ncc_inst_t *inst, vreduce_form_t *f, const char **out_reason)
{
	memset(f, 0, sizeof(*f));
	const ncc_comp_t *c = inst->to_apply;
	int32_t nv = inst->noperands / 2;
	if (inst->op != NCC_OP_REDUCE || inst->noperands % 2 || nv < 1 || nv > 4 ||
	    inst->shape.nelems != nv || !c || !c->root || c->nparams != 2 * nv ||
	    c->root->op != NCC_OP_TUPLE || c->root->noperands != nv) {
		*out_reason = "unsupported variadic (multi-operand) reduction (only argmax/argmin value-index pairs "
			      "and independent add/multiply/maximum/minimum/and/or results)";
		return false;
	}
	for (int32_t k = 0; k < nv; k++)
		if (inst->shape.elems[k].etype == NCC_TUPLE) {
			*out_reason = "unsupported variadic reduction with nested tuple results";
			return false;
		}
	bool indep = true;
	for (int32_t k = 0; k < nv && indep; k++) {
		f->comb[k] = ncc_lower_binary_combiner(c->root->operands[k], c->params[k], c->params[nv + k]);
		indep = f->comb[k] >= 0;
	}
	if (indep)
		return true;
	if (nv == 2 && (argminmax_form(c, 0, f) || argminmax_form(c, 1, f))) {
		ncc_etype_t vt = inst->shape.elems[f->val].etype, it = inst->shape.elems[f->idx].etype;
		if (vt == NCC_PRED || !ncc_etype_is_integral(it)) {
			*out_reason = "unsupported argmax/argmin types (numeric values, integer indices)";
			return false;
		}
		return true;
	}
	*out_reason = "unsupported variadic (multi-operand) reduction computation (only argmax/argmin "
		      "value-index pairs with smallest- or largest-index ties, and independent "
		      "add/multiply/maximum/minimum/and/or results)";
	return false;
}

bool ncc_lower_variadic_reduce_supports(const ncc_inst_t *inst, const char **out_reason)
{
	vreduce_form_t f;
	return vreduce_form(inst, &f, out_reason);
}

/* A scalar constant of an integer dtype holding its largest (max) or smallest value. */
static ncc_status_t int_limit(ncc_lower_ctx_t *ctx, isa_dtype_t dt, bool max, ncc_view_t *out_view)
{
	uint8_t buf[8] = { 0 };
	uint32_t es = isa_dtype_size(dt);
	bool sgn = dt == ISA_DT_S8 || dt == ISA_DT_S16 || dt == ISA_DT_S32 || dt == ISA_DT_S64;
	/* little-endian: max = all ones (unsigned) or 0x7f.. ; min = 0 or 0x80.. */
	if (max) {
		memset(buf, 0xff, es);
		if (sgn)
			buf[es - 1] = 0x7f;
	} else if (sgn) {
		buf[es - 1] = 0x80;
	}
	uint64_t off;
	ncc_status_t st = ncc_lower_add_const(ctx, buf, es, &off);
	if (st == NCC_OK)
		*out_view = ncc_view_dense(ISA_REGION_CONST, off, dt, 0, NULL);
	return st;
}

/* hit |= (v != v): a NaN of v counts as a hit (nan is a PRED temporary of hit's dims). */
static ncc_status_t or_nan(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *hit,
			   const ncc_view_t *nan, const ncc_view_t *v)
{
	ncc_view_t a[2] = { *v, *v };
	ncc_status_t st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_NE, nan, 2, a);
	a[0] = *hit;
	a[1] = *nan;
	return st == NCC_OK ? ncc_lower_alu(ctx, inst, ISA_ALU_OR, hit, 2, a) : st;
}

/* out = (x == v, or x is NaN when fl) ? idx : limit, through the pred temporaries
 * hit and (fl) nan: the index of each element equal to the extreme, or the limit. */
static ncc_status_t hit_index(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, bool fl,
			      const ncc_view_t *x, const ncc_view_t *v, const ncc_view_t *idx,
			      const ncc_view_t *limit, const ncc_view_t *hit, const ncc_view_t *nan,
			      const ncc_view_t *out)
{
	ncc_view_t a[3] = { *x, *v };
	ncc_status_t st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, hit, 2, a);
	if (st == NCC_OK && fl)
		st = or_nan(ctx, inst, hit, nan, x);
	a[0] = *hit;
	a[1] = *idx;
	a[2] = *limit;
	return st == NCC_OK ? ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, out, 3, a) : st;
}

/* argmax/argmin (vreduce_form): with V the max (min) of the values and the init value,
 *   out_v = V: the init value copied in, REDUCE MAX (MIN) accumulating;
 *   hit = (x == V) or x is NaN (a NaN wins, the first NaN's index as torch);
 *   out_i = REDUCE MIN (MAX) of select(hit, index, LIMIT), starting from
 *           select(init_v == V or init_v is NaN, init_i, LIMIT)
 * where LIMIT is the index type's max (min), which no hit can lose to. */
static ncc_status_t lower_argminmax(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const vreduce_form_t *f)
{
	ncc_view_t x, ix, v0, i0, ov, oi;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, f->val, &x);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, f->idx, &ix);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 2 + f->val, &v0);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 2 + f->idx, &i0);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, f->val, &ov);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, f->idx, &oi);
	if (st != NCC_OK || ncc_view_elements(&ov) == 0)
		return st;
	ncc_view_t v0b = ncc_view_bcast_scalar(&v0, ov.rank, ov.dims);
	ncc_view_t i0b = ncc_view_bcast_scalar(&i0, oi.rank, oi.dims);
	if (ncc_view_elements(&x) == 0) {
		st = ncc_lower_copy(ctx, inst, &ov, &v0b);
		return st == NCC_OK ? ncc_lower_copy(ctx, inst, &oi, &i0b) : st;
	}
	uint32_t mask = 0;
	for (int32_t i = 0; i < inst->dimensions.n; i++)
		mask |= 1u << inst->dimensions.v[i];
	int comb = f->is_max ? ISA_RED_MAX : ISA_RED_MIN;
	ncc_view_t keepv = ncc_view_keep_dims(&ov, &x, mask), keepi = ncc_view_keep_dims(&oi, &x, mask);
	bool acc;
	st = ncc_lower_reduce_start(ctx, inst, inst->operands[2 + f->val], comb, &v0, &ov, &acc);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, (uint32_t)comb, &keepv, &x, mask, acc);
	bool fl = x.dtype == ISA_DT_F32 || x.dtype == ISA_DT_BF16 || x.dtype == ISA_DT_F16;
	ncc_view_t hit, nan, cand, limit, h0, n0;
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, x.rank, x.dims, &hit);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ix.dtype, x.rank, x.dims, &cand);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, ov.rank, ov.dims, &h0);
	if (st == NCC_OK)
		st = int_limit(ctx, ix.dtype, f->tie_min, &limit);
	if (st == NCC_OK && fl)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, x.rank, x.dims, &nan);
	if (st == NCC_OK && fl)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, ov.rank, ov.dims, &n0);
	if (st != NCC_OK)
		return st;
	ncc_view_t vx = ncc_view_expand_keep(&keepv, &x);
	ncc_view_t lx = ncc_view_bcast_scalar(&limit, x.rank, x.dims);
	ncc_view_t lo = ncc_view_bcast_scalar(&limit, oi.rank, oi.dims);
	st = hit_index(ctx, inst, fl, &x, &vx, &ix, &lx, &hit, &nan, &cand);
	/* the init pair takes part as one more element */
	if (st == NCC_OK)
		st = hit_index(ctx, inst, fl, &v0b, &ov, &i0b, &lo, &h0, &n0, &oi);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, f->tie_min ? ISA_RED_MIN : ISA_RED_MAX, &keepi,
					   &cand, mask, true);
	return st;
}

/* A variadic reduce: argmax/argmin, or one plain reduce per result. */
ncc_status_t ncc_lower_variadic_reduce(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	vreduce_form_t f;
	const char *reason;
	if (!vreduce_form(inst, &f, &reason))
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "%s", reason);
	if (f.argminmax)
		return lower_argminmax(ctx, inst, &f);
	int32_t nv = inst->noperands / 2;
	ncc_status_t st = NCC_OK;
	for (int32_t k = 0; k < nv && st == NCC_OK; k++) {
		ncc_view_t in, init, out;
		st = ncc_lower_operand_view(ctx, inst, k, &in);
		if (st == NCC_OK)
			st = ncc_lower_operand_view(ctx, inst, nv + k, &init);
		if (st == NCC_OK)
			st = ncc_lower_output_view(ctx, inst, k, &out);
		if (st == NCC_OK)
			st = ncc_lower_reduce_dims(ctx, inst, inst->operands[nv + k], f.comb[k], in, init, out);
	}
	return st;
}
