/* Lowering of reductions: reduce (combiner recognised from to_apply), reduce-window (strided window views + REDUCE), batch-norm training/inference/grad. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* The REDUCE combiner of a computation `(a, b) -> op(a, b)` on scalars, or -1. */
int ncc_lower_combiner_of(const ncc_comp_t *c)
{
	if (!c || !c->root || c->nparams != 2 || c->root->noperands != 2)
		return -1;
	const ncc_inst_t *r = c->root;
	const ncc_inst_t *a = r->operands[0], *b = r->operands[1];
	if (a->op != NCC_OP_PARAMETER || b->op != NCC_OP_PARAMETER || a == b)
		return -1;
	switch (r->op) {
	case NCC_OP_ADD: return ISA_RED_SUM;
	case NCC_OP_MULTIPLY: return ISA_RED_PROD;
	case NCC_OP_MAXIMUM: return ISA_RED_MAX;
	case NCC_OP_MINIMUM: return ISA_RED_MIN;
	case NCC_OP_AND: return ISA_RED_AND;
	case NCC_OP_OR: return ISA_RED_OR;
	default: return -1;
	}
}

/* The REDUCE combiner of r = op(a, b) on the scalars a and b (either order), or -1. */
static int binary_combiner(const ncc_inst_t *r, const ncc_inst_t *a, const ncc_inst_t *b)
{
	if (r->noperands != 2 || a == b ||
	    !((r->operands[0] == a && r->operands[1] == b) || (r->operands[0] == b && r->operands[1] == a)))
		return -1;
	switch (r->op) {
	case NCC_OP_ADD: return ISA_RED_SUM;
	case NCC_OP_MULTIPLY: return ISA_RED_PROD;
	case NCC_OP_MAXIMUM: return ISA_RED_MAX;
	case NCC_OP_MINIMUM: return ISA_RED_MIN;
	case NCC_OP_AND: return ISA_RED_AND;
	case NCC_OP_OR: return ISA_RED_OR;
	default: return -1;
	}
}

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
		kind = binary_combiner(v, av, bv) < 0 ? -1 : v->op == NCC_OP_MAXIMUM;
	else
		kind = select_kind(v, av, bv, av, bv);
	if (kind < 0)
		return false;
	/* index = select(av == bv, tie(ai, bi), select(pick, ai, bi)) */
	if (ix->op != NCC_OP_SELECT || ix->noperands != 3 ||
	    cmp_of(ix->operands[0], av, bv) != NCC_CMP_EQ)
		return false;
	const ncc_inst_t *tie = ix->operands[1];
	int tc = binary_combiner(tie, ai, bi);
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
		f->comb[k] = binary_combiner(c->root->operands[k], c->params[k], c->params[nv + k]);
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

/* true when the init operand is a constant equal to the REDUCE identity, so the
 * initial copy can be skipped. */
static bool init_is_identity(const ncc_inst_t *init, int comb)
{
	if (init->op != NCC_OP_CONSTANT || !init->literal.present || init->literal.elided ||
	    init->literal.count != 1)
		return false;
	double v = ncc_literal_get_f64(&init->literal, 0);
	bool fl = ncc_etype_is_float(init->shape.etype);
	switch (comb) {
	case ISA_RED_SUM: return v == 0 && !signbit(v);
	case ISA_RED_PROD: return v == 1;
	case ISA_RED_OR: return v == 0;
	case ISA_RED_MAX: return fl && isinf(v) && v < 0;
	case ISA_RED_MIN: return fl && isinf(v) && v > 0;
	case ISA_RED_AND: return init->shape.etype == NCC_PRED && v != 0;
	default: return false;
	}
}

/* The ALU op that combines the output (parameter 0) with the source (parameter 1) in
 * a select-and-scatter's scatter computation, or -1. Only commutative combiners: the
 * lowering applies the sources that select one position in window-offset order, not
 * in source order. */
static int sas_scatter_op(const ncc_comp_t *c)
{
	switch (ncc_lower_combiner_of(c)) {
	case ISA_RED_SUM: return ISA_ALU_ADD;
	case ISA_RED_PROD: return ISA_ALU_MUL;
	case ISA_RED_MAX: return ISA_ALU_MAX;
	case ISA_RED_MIN: return ISA_ALU_MIN;
	case ISA_RED_AND: return ISA_ALU_AND;
	case ISA_RED_OR: return ISA_ALU_OR;
	default: return -1;
	}
}

bool ncc_lower_reduce_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_REDUCE:
	case NCC_OP_REDUCE_WINDOW:
		if (inst->shape.etype == NCC_TUPLE) {
			vreduce_form_t f;
			if (inst->op == NCC_OP_REDUCE_WINDOW) {
				*out_reason = "unsupported variadic (multi-operand) reduce-window";
				return false;
			}
			return vreduce_form(inst, &f, out_reason);
		}
		if (ncc_lower_combiner_of(inst->to_apply) < 0) {
			*out_reason = "unsupported reduction computation (only add, multiply, maximum, minimum, and, or)";
			return false;
		}
		if (inst->op == NCC_OP_REDUCE_WINDOW && inst->window) {
			for (int32_t i = 0; i < inst->window->n; i++)
				if (inst->window->dims[i].lhs_dilation != 1 || inst->window->dims[i].reversal) {
					*out_reason = "unsupported reduce-window with base dilation";
					return false;
				}
		}
		return true;
	case NCC_OP_BATCH_NORM_TRAINING:
	case NCC_OP_BATCH_NORM_INFERENCE:
	case NCC_OP_BATCH_NORM_GRAD:
		return true;
	case NCC_OP_SELECT_AND_SCATTER: {
		const ncc_inst_t *sr = inst->select ? inst->select->root : NULL;
		if (!sr || sr->op != NCC_OP_COMPARE || sr->noperands != 2 ||
		    sr->operands[0]->op != NCC_OP_PARAMETER || sr->operands[1]->op != NCC_OP_PARAMETER ||
		    sr->operands[0]->parameter_number != 0 ||
		    !(sr->cmp_dir == NCC_CMP_GE || sr->cmp_dir == NCC_CMP_GT ||
		      sr->cmp_dir == NCC_CMP_LE || sr->cmp_dir == NCC_CMP_LT)) {
			*out_reason = "unsupported select-and-scatter select computation (only compare GE/GT/LE/LT of its parameters)";
			return false;
		}
		if (sas_scatter_op(inst->scatter_comp) < 0) {
			*out_reason = "unsupported select-and-scatter scatter computation (only add, multiply, "
				      "maximum, minimum, and, or of its parameters)";
			return false;
		}
		if (!inst->window || inst->window->n != inst->shape.rank) {
			*out_reason = "unsupported select-and-scatter window";
			return false;
		}
		return true;
	}
	default:
		return false;
	}
}

/* Expands an output view (operand rank minus reduced dims) back to operand rank with
 * the reduced dims as size 1. */
static ncc_view_t keep_dims(const ncc_view_t *out, const ncc_view_t *in, uint32_t mask)
{
	ncc_view_t k = *out;
	k.rank = in->rank;
	int32_t j = 0;
	for (int32_t d = 0; d < in->rank; d++) {
		if (mask & (1u << d)) {
			k.dims[d] = 1;
			k.strides[d] = 0;
		} else {
			k.dims[d] = out->dims[j];
			k.strides[d] = out->strides[j];
			j++;
		}
	}
	return k;
}

/* The REDUCE combiner and the input, init value and output views of a reduce or
 * reduce-window. */
static ncc_status_t reduce_views(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int *out_comb,
				 ncc_view_t *in, ncc_view_t *init, ncc_view_t *out)
{
	*out_comb = ncc_lower_combiner_of(inst->to_apply);
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, in);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, init);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, out);
	return st;
}

/* Unless the init value is the combiner's identity, copies it into every output
 * element: REDUCE with ACCUMULATE then combines into it. *out_acc says which. */
static ncc_status_t start_from_init(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const ncc_inst_t *init_inst, int comb, const ncc_view_t *init,
				    const ncc_view_t *out, bool *out_acc)
{
	*out_acc = !init_is_identity(init_inst, comb);
	if (!*out_acc)
		return NCC_OK;
	ncc_view_t b = ncc_view_bcast_scalar(init, out->rank, out->dims);
	return ncc_lower_copy(ctx, inst, out, &b);
}

static ncc_status_t lower_reduce(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				 const ncc_inst_t *init_inst, int comb, ncc_view_t in, ncc_view_t init,
				 ncc_view_t out)
{
	ncc_status_t st;
	uint32_t mask = 0;
	for (int32_t i = 0; i < inst->dimensions.n; i++)
		mask |= 1u << inst->dimensions.v[i];
	ncc_view_t keep = keep_dims(&out, &in, mask);
	bool acc;
	st = start_from_init(ctx, inst, init_inst, comb, &init, &out, &acc);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	if (ncc_view_elements(&in) == 0) {
		if (acc)
			return NCC_OK;
		/* empty reduction without an explicit init: the identity */
		ncc_view_t b = ncc_view_bcast_scalar(&init, out.rank, out.dims);
		return ncc_lower_copy(ctx, inst, &out, &b);
	}
	return ncc_lower_reduce_emit(ctx, inst, (uint32_t)comb, &keep, &in, mask, acc);
}

/* The windows of a rank-r input as a rank-2r view [o0, w0, o1, w1, ...] (strides:
 * window stride, window dilation) with o the dims of out, and out seen as the
 * keep-dims REDUCE destination of that view ([o0, 1, o1, 1, ...]). Returns the mask
 * of the w dims. */
static uint32_t window_views(const ncc_window_t *win, const ncc_view_t *in, const ncc_view_t *out,
			     ncc_view_t *out_windows, ncc_view_t *out_keep)
{
	ncc_view_t w = *in, keep = *out;
	w.rank = keep.rank = 2 * in->rank;
	uint32_t mask = 0;
	for (int32_t d = 0; d < in->rank; d++) {
		const ncc_window_dim_t *wd = &win->dims[d];
		w.dims[2 * d] = out->dims[d];
		w.strides[2 * d] = in->strides[d] * wd->stride;
		w.dims[2 * d + 1] = wd->size;
		w.strides[2 * d + 1] = in->strides[d] * wd->rhs_dilation;
		keep.dims[2 * d] = out->dims[d];
		keep.strides[2 * d] = out->strides[d];
		keep.dims[2 * d + 1] = 1;
		keep.strides[2 * d + 1] = 0;
		mask |= 1u << (2 * d + 1);
	}
	*out_windows = w;
	*out_keep = keep;
	return mask;
}

/* reduce-window: the input (padded with init into a temporary when the window pads)
 * seen as [o0, w0, o1, w1, ...] with strides (stride*s, dilation*s), reduced over the
 * w dims. Overlapping windows are fine: they only overlap in reads. */
static ncc_status_t lower_reduce_window(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int comb,
					ncc_view_t in, ncc_view_t init, ncc_view_t out)
{
	ncc_status_t st;
	int32_t rank = in.rank;
	if (rank * 2 > NCC_MAX_RANK)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "unsupported reduce-window rank %d", rank);
	bool padded = false;
	for (int32_t d = 0; d < rank; d++)
		if (inst->window->dims[d].pad_lo || inst->window->dims[d].pad_hi)
			padded = true;
	if (padded) {
		int64_t pd[NCC_MAX_RANK];
		for (int32_t d = 0; d < rank; d++)
			pd[d] = in.dims[d] + inst->window->dims[d].pad_lo + inst->window->dims[d].pad_hi;
		ncc_view_t p;
		st = ncc_lower_temp_view(ctx, in.dtype, rank, pd, &p);
		if (st != NCC_OK)
			return st;
		ncc_view_t fill = ncc_view_bcast_scalar(&init, rank, pd);
		st = ncc_lower_copy(ctx, inst, &p, &fill);
		if (st != NCC_OK)
			return st;
		/* copy the (possibly negatively padded = cropped) input into place */
		ncc_view_t src = in, dst = p;
		int64_t soff = (int64_t)in.offset, doff = (int64_t)p.offset;
		int64_t es = (int64_t)isa_dtype_size(in.dtype);
		for (int32_t d = 0; d < rank; d++) {
			int64_t lo = inst->window->dims[d].pad_lo, hi = inst->window->dims[d].pad_hi;
			int64_t s0 = lo < 0 ? -lo : 0, s1 = in.dims[d] - (hi < 0 ? -hi : 0);
			int64_t cnt = s1 - s0;
			if (cnt <= 0)
				goto no_copy;
			soff += s0 * in.strides[d] * es;
			doff += (lo > 0 ? lo : 0) * p.strides[d] * es;
			src.dims[d] = dst.dims[d] = cnt;
		}
		src.offset = (uint64_t)soff;
		dst.offset = (uint64_t)doff;
		st = ncc_lower_copy(ctx, inst, &dst, &src);
		if (st != NCC_OK)
			return st;
no_copy:
		in = p;
	}
	ncc_view_t w, keep;
	uint32_t mask = window_views(inst->window, &in, &out, &w, &keep);
	bool acc;
	st = start_from_init(ctx, inst, inst->operands[1], comb, &init, &out, &acc);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	return ncc_lower_reduce_emit(ctx, inst, (uint32_t)comb, &keep, &w, mask, acc);
}

/* [C] view broadcast along feature dim f of a rank-`rank` shape. */
static ncc_view_t feat_bcast(const ncc_view_t *c, int32_t rank, const int64_t *dims, int64_t f)
{
	ncc_view_t v = *c;
	v.rank = rank;
	for (int32_t d = 0; d < NCC_MAX_RANK; d++) {
		v.dims[d] = d < rank ? dims[d] : 0;
		v.strides[d] = d == f ? c->strides[0] : 0;
	}
	return v;
}

/* [C] view seen as the keep-dims REDUCE destination for x's rank. */
static ncc_view_t feat_keep(const ncc_view_t *c, int32_t rank, int64_t f)
{
	ncc_view_t v = *c;
	v.rank = rank;
	for (int32_t d = 0; d < NCC_MAX_RANK; d++) {
		v.dims[d] = d < rank ? (d == f ? c->dims[0] : 1) : 0;
		v.strides[d] = d == f ? c->strides[0] : 0;
	}
	return v;
}

static ncc_status_t alu2(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t sub,
			 const ncc_view_t *dst, const ncc_view_t *a, const ncc_view_t *b)
{
	ncc_view_t in[2] = { *a, *b };
	return ncc_lower_alu(ctx, inst, sub, dst, 2, in);
}

/* One binary ALU instruction dst = op(a, b) of a sequence. */
typedef struct alu_step {
	uint32_t op;
	const ncc_view_t *dst, *a, *b;
} alu_step_t;

/* Emits steps[0..n) in order, stopping at the first failure. */
static ncc_status_t alu_steps(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const alu_step_t *steps,
			      size_t n)
{
	ncc_status_t st = NCC_OK;
	for (size_t i = 0; i < n && st == NCC_OK; i++)
		st = alu2(ctx, inst, steps[i].op, steps[i].dst, steps[i].a, steps[i].b);
	return st;
}

/* The views of operands [0, nops) into ops[] and then of output leaves [0, nouts)
 * into outs[], in that order (an output's buffer is placed on first use). */
static ncc_status_t io_views(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t nops,
			     ncc_view_t *ops, int32_t nouts, ncc_view_t *outs)
{
	ncc_status_t st = NCC_OK;
	for (int32_t i = 0; i < nops && st == NCC_OK; i++)
		st = ncc_lower_operand_view(ctx, inst, i, &ops[i]);
	for (int32_t i = 0; i < nouts && st == NCC_OK; i++)
		st = ncc_lower_output_view(ctx, inst, i, &outs[i]);
	return st;
}

/* inv = rsqrt(var + eps) into a [C] temporary. */
static ncc_status_t inv_std(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *var,
			    ncc_view_t *out_inv)
{
	ncc_view_t eps;
	ncc_status_t st = ncc_lower_temp_view(ctx, var->dtype, 1, var->dims, out_inv);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, var->dtype, inst->epsilon, &eps);
	if (st != NCC_OK)
		return st;
	ncc_view_t e = ncc_view_bcast_scalar(&eps, 1, var->dims);
	st = alu2(ctx, inst, ISA_ALU_ADD, out_inv, var, &e);
	if (st != NCC_OK)
		return st;
	ncc_view_t in[1] = { *out_inv };
	return ncc_lower_alu(ctx, inst, ISA_ALU_RSQRT, out_inv, 1, in);
}

/* What the three batch-norm lowerings share: x (operand 0), its feature dim f, the
 * reduction mask (every other dim), the element count N per feature and 1/N. */
typedef struct bn_ctx {
	ncc_view_t x;
	int64_t f;
	int32_t rank;
	const int64_t *xd;
	int64_t N;
	uint32_t mask;
	ncc_view_t invn_c; /* [C] broadcast of the constant 1/N */
} bn_ctx_t;

/* batch-norm-training and -inference: y = (x - mean) * (rsqrt(var + eps) * scale) +
 * offset, with mean and var reduced from x for training (as outputs 1 and 2). */
static ncc_status_t lower_bn_forward(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				     const bn_ctx_t *b)
{
	bool training = inst->op == NCC_OP_BATCH_NORM_TRAINING;
	/* operands x, scale, offset[, mean, var]; outputs y[, mean, var] */
	ncc_view_t op[5], out[3];
	ncc_status_t st = io_views(ctx, inst, training ? 3 : 5, op, training ? 3 : 1, out);
	if (st != NCC_OK)
		return st;
	const ncc_view_t *x = &b->x, *scale = &op[1], *offset = &op[2], *y = &out[0];
	ncc_view_t mean = training ? out[1] : op[3], var = training ? out[2] : op[4];
	int32_t rank = b->rank;
	int64_t f = b->f;
	if (training) {
		ncc_view_t mk = feat_keep(&mean, rank, f);
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &mk, x, b->mask, false);
		if (st == NCC_OK)
			st = alu2(ctx, inst, ISA_ALU_MUL, &mean, &mean, &b->invn_c);
		if (st != NCC_OK)
			return st;
	}
	/* d = x - mean, kept in y (y is overwritten last) */
	ncc_view_t d = *y;
	ncc_view_t mb = feat_bcast(&mean, rank, b->xd, f);
	st = alu2(ctx, inst, ISA_ALU_SUB, &d, x, &mb);
	if (st != NCC_OK)
		return st;
	if (training) {
		ncc_view_t sq;
		st = ncc_lower_temp_view(ctx, x->dtype, rank, b->xd, &sq);
		if (st == NCC_OK)
			st = alu2(ctx, inst, ISA_ALU_MUL, &sq, &d, &d);
		ncc_view_t vk = feat_keep(&var, rank, f);
		if (st == NCC_OK)
			st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &vk, &sq, b->mask, false);
		if (st == NCC_OK)
			st = alu2(ctx, inst, ISA_ALU_MUL, &var, &var, &b->invn_c);
		if (st != NCC_OK)
			return st;
	}
	ncc_view_t inv;
	st = inv_std(ctx, inst, &var, &inv);
	if (st != NCC_OK)
		return st;
	ncc_view_t kb = feat_bcast(&inv, rank, b->xd, f), ob = feat_bcast(offset, rank, b->xd, f);
	const alu_step_t steps[] = {
		{ ISA_ALU_MUL, &inv, &inv, scale }, /* fold scale into inv: k = inv * scale */
		{ ISA_ALU_MUL, y, &d, &kb },
		{ ISA_ALU_ADD, y, y, &ob },
	};
	return alu_steps(ctx, inst, steps, sizeof(steps) / sizeof(steps[0]));
}

/* batch-norm-grad(x, scale, mean, var, dy) -> (dx, dscale, doffset) */
static ncc_status_t lower_bn_grad(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const bn_ctx_t *b)
{
	ncc_view_t op[5], out[3], inv, xhat, t;
	ncc_status_t st = io_views(ctx, inst, 5, op, 3, out);
	const ncc_view_t *x = &b->x, *scale = &op[1], *mean = &op[2], *var = &op[3], *dy = &op[4];
	const ncc_view_t *dx = &out[0], *dscale = &out[1], *doffset = &out[2];
	int32_t rank = b->rank;
	int64_t f = b->f;
	if (st == NCC_OK)
		st = inv_std(ctx, inst, var, &inv);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, x->dtype, rank, b->xd, &xhat);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, x->dtype, rank, b->xd, &t);
	if (st != NCC_OK)
		return st;
	ncc_view_t mb = feat_bcast(mean, rank, b->xd, f), ib = feat_bcast(&inv, rank, b->xd, f);
	const alu_step_t xhat_steps[] = {
		{ ISA_ALU_SUB, &xhat, x, &mb },
		{ ISA_ALU_MUL, &xhat, &xhat, &ib },
	};
	st = alu_steps(ctx, inst, xhat_steps, sizeof(xhat_steps) / sizeof(xhat_steps[0]));
	ncc_view_t ok = feat_keep(doffset, rank, f), sk = feat_keep(dscale, rank, f);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &ok, dy, b->mask, false);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &t, dy, &xhat);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &sk, &t, b->mask, false);
	ncc_view_t nconst;
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, x->dtype, (double)b->N, &nconst);
	if (st != NCC_OK)
		return st;
	ncc_view_t nb = ncc_view_bcast_scalar(&nconst, rank, b->xd);
	ncc_view_t sb = feat_bcast(dscale, rank, b->xd, f), db = feat_bcast(doffset, rank, b->xd, f);
	/* dx = scale * inv / N * (N * dy - doffset - xhat * dscale) */
	const alu_step_t dx_steps[] = {
		{ ISA_ALU_MUL, &t, &xhat, &sb },
		{ ISA_ALU_MUL, dx, dy, &nb },
		{ ISA_ALU_SUB, dx, dx, &db },
		{ ISA_ALU_SUB, dx, dx, &t },
		/* k = scale * inv / N, in place in inv */
		{ ISA_ALU_MUL, &inv, &inv, scale },
		{ ISA_ALU_MUL, &inv, &inv, &b->invn_c },
		{ ISA_ALU_MUL, dx, dx, &ib },
	};
	return alu_steps(ctx, inst, dx_steps, sizeof(dx_steps) / sizeof(dx_steps[0]));
}

static ncc_status_t lower_bn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	bn_ctx_t b;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &b.x);
	if (st != NCC_OK)
		return st;
	b.f = inst->feature_index;
	b.rank = b.x.rank;
	b.xd = b.x.dims;
	int64_t C = b.x.dims[b.f];
	b.N = C ? ncc_view_elements(&b.x) / C : 0;
	b.mask = 0;
	for (int32_t d = 0; d < b.rank; d++)
		if (d != b.f)
			b.mask |= 1u << d;
	ncc_view_t invn;
	st = ncc_lower_const_scalar(ctx, b.x.dtype, b.N ? 1.0 / (double)b.N : 0.0, &invn);
	if (st != NCC_OK)
		return st;
	b.invn_c = ncc_view_bcast_scalar(&invn, 1, &C);
	if (inst->op == NCC_OP_BATCH_NORM_GRAD)
		return lower_bn_grad(ctx, inst, &b);
	return lower_bn_forward(ctx, inst, &b);
}

/* The part of the padded view p that holds the unpadded value (of dims `dims`):
 * offset by the window's low padding in every dim. */
static ncc_view_t padded_interior(const ncc_view_t *p, const ncc_window_t *w, const int64_t *dims)
{
	ncc_view_t v = *p;
	int64_t off = (int64_t)p->offset, es = (int64_t)isa_dtype_size(p->dtype);
	for (int32_t d = 0; d < p->rank; d++) {
		off += w->dims[d].pad_lo * p->strides[d] * es;
		v.dims[d] = dims[d];
	}
	v.offset = (uint64_t)off;
	return v;
}

/* A select-and-scatter over at most this many windows (one in torch_xla's max-pool
 * index loop) finds each window's selected position and scatters once, in a fixed
 * number of instructions; more windows take the per-window-offset form below,
 * whose instructions each cover every window. */
#define SAS_FEW_WINDOWS 64

static ncc_view_t expand_keep(const ncc_view_t *keep, const ncc_view_t *in);

/* The few-windows form: with X the operand's windows seen as [o0, w0, o1, w1, ...],
 *   M = REDUCE max/min over the w dims; pos = SELECT(X == M, k, LIMIT) with k the
 *   element's index in its window (a constant); sel = REDUCE MIN (first; MAX for
 *   GT/LT: last) of pos; lin = window start + offset of element sel (GATHER from a
 *   constant table), or -1 when the window has no match (NaN); SCATTER of the source
 *   into the output seen as [N, 1] at lin with the scatter combiner, in source order
 *   as XLA applies it. */
static ncc_status_t sas_few_windows(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const ncc_view_t *px, const ncc_view_t *po, const ncc_view_t *src,
				    bool is_max, bool backwards)
{
	const ncc_window_t *w = inst->window;
	int32_t rank = px->rank;
	int64_t nw = ncc_view_elements(src), nk = 1;
	for (int32_t d = 0; d < rank; d++)
		nk *= w->dims[d].size;
	ncc_view_t m, wv, keep, eq, pos, sel, offs, lin, none, sd;
	ncc_status_t st = ncc_lower_temp_view(ctx, px->dtype, rank, src->dims, &m);
	if (st != NCC_OK)
		return st;
	uint32_t mask = window_views(w, px, &m, &wv, &keep);
	st = ncc_lower_reduce_emit(ctx, inst, is_max ? ISA_RED_MAX : ISA_RED_MIN, &keep, &wv, mask, false);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, wv.rank, wv.dims, &eq);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S32, wv.rank, wv.dims, &pos);
	if (st != NCC_OK)
		return st;
	ncc_view_t a[3];
	a[0] = wv; a[1] = expand_keep(&keep, &wv);
	st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &eq, 2, a);
	/* k per window element (row-major over the w dims), broadcast over the o dims;
	 * the element offsets in the (padded) output; the windows' starts */
	int32_t *kidx = malloc((size_t)nk * sizeof(int32_t));
	int64_t *koff = malloc((size_t)nk * sizeof(int64_t));
	int64_t *wstart = malloc((size_t)nw * sizeof(int64_t));
	if (!kidx || !koff || !wstart) {
		free(kidx);
		free(koff);
		free(wstart);
		return ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
	}
	for (int64_t k = 0; k < nk; k++) {
		int64_t rem = k, o = 0;
		for (int32_t d = rank - 1; d >= 0; d--) {
			o += (rem % w->dims[d].size) * w->dims[d].rhs_dilation * po->strides[d];
			rem /= w->dims[d].size;
		}
		kidx[k] = (int32_t)k;
		koff[k] = o;
	}
	for (int64_t q = 0; q < nw; q++) {
		int64_t rem = q, o = 0;
		for (int32_t d = rank - 1; d >= 0; d--) {
			o += (rem % src->dims[d]) * w->dims[d].stride * po->strides[d];
			rem /= src->dims[d];
		}
		wstart[q] = o;
	}
	uint64_t ck = 0, co = 0, cw = 0;
	if (st == NCC_OK)
		st = ncc_lower_add_const(ctx, kidx, (uint64_t)nk * sizeof(int32_t), &ck);
	if (st == NCC_OK)
		st = ncc_lower_add_const(ctx, koff, (uint64_t)nk * sizeof(int64_t), &co);
	if (st == NCC_OK)
		st = ncc_lower_add_const(ctx, wstart, (uint64_t)nw * sizeof(int64_t), &cw);
	free(kidx);
	free(koff);
	free(wstart);
	if (st != NCC_OK)
		return st;
	ncc_view_t kv = wv;
	kv.region = ISA_REGION_CONST;
	kv.offset = ck;
	kv.dtype = ISA_DT_S32;
	for (int32_t d = rank - 1, s = 1; d >= 0; d--) {
		kv.strides[2 * d] = 0;
		kv.strides[2 * d + 1] = s;
		s *= (int32_t)w->dims[d].size;
	}
	ncc_view_t limit;
	int32_t lim = backwards ? -1 : INT32_MAX;
	uint64_t cl;
	st = ncc_lower_add_const(ctx, &lim, sizeof(lim), &cl);
	limit = ncc_view_dense(ISA_REGION_CONST, cl, ISA_DT_S32, 0, NULL);
	a[0] = eq; a[1] = kv; a[2] = ncc_view_bcast_scalar(&limit, wv.rank, wv.dims);
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &pos, 3, a);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S32, 1, &nw, &sel);
	if (st != NCC_OK)
		return st;
	ncc_view_t selk = keep;
	selk.region = sel.region;
	selk.offset = sel.offset;
	selk.dtype = ISA_DT_S32;
	{
		/* keep's layout for a dense [src dims] s32 buffer */
		ncc_view_t d = ncc_view_dense(sel.region, sel.offset, ISA_DT_S32, rank, src->dims);
		for (int32_t k = 0; k < rank; k++) {
			selk.strides[2 * k] = d.strides[k];
			selk.strides[2 * k + 1] = 0;
		}
	}
	st = ncc_lower_reduce_emit(ctx, inst, backwards ? ISA_RED_MAX : ISA_RED_MIN, &selk, &pos, mask, false);
	int64_t two[2] = { nw, 1 };
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, 2, two, &offs);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, 1, &nw, &lin);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, 1, &nw, &none);
	if (st != NCC_OK)
		return st;
	int64_t kt[2] = { nk, 1 };
	ncc_view_t ktab = ncc_view_dense(ISA_REGION_CONST, co, ISA_DT_S64, 2, kt);
	st = ncc_lower_rows(ctx, inst, -1, &ktab, &offs, &sel);
	ncc_view_t offs1 = ncc_view_dense(offs.region, offs.offset, ISA_DT_S64, 1, &nw);
	a[0] = offs1; a[1] = ncc_view_dense(ISA_REGION_CONST, cw, ISA_DT_S64, 1, &nw);
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &lin, 2, a);
	/* a window without a match (its max is NaN): nothing is scattered */
	a[0] = sel; a[1] = ncc_view_bcast_scalar(&limit, 1, &nw);
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &none, 2, a);
	ncc_view_t m1;
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, -1, &m1);
	a[0] = none; a[1] = ncc_view_bcast_scalar(&m1, 1, &nw); a[2] = lin;
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &lin, 3, a);
	if (st == NCC_OK)
		st = ncc_lower_make_dense(ctx, inst, src, &sd);
	if (st != NCC_OK)
		return st;
	/* the (padded) output from its first element, one element per row */
	int64_t total = 0;
	for (int32_t d = 0; d < rank; d++)
		total += (po->dims[d] - 1) * po->strides[d];
	ncc_view_t table = *po, rows = sd;
	table.rank = rows.rank = 2;
	table.dims[0] = total + 1;
	table.strides[0] = 1;
	table.dims[1] = rows.dims[1] = 1;
	table.strides[1] = rows.strides[1] = 1;
	rows.dims[0] = nw;
	rows.strides[0] = 1;
	return ncc_lower_rows(ctx, inst, ncc_lower_combiner_of(inst->scatter_comp), &table, &rows, &lin);
}

/* select-and-scatter (max/min-pool gradient): for every window the first element
 * that the select computation prefers receives the source value, combined by the
 * scatter computation into an output initialised with init. With M the window max
 * (min), per window offset k in window order: hit = (X_k == M) and not yet taken;
 * out_k += hit ? source : 0 (add), else out_k = hit ? scatter(out_k, source) : out_k;
 * taken |= hit.
 * X_k and out_k are strided views of the padded operand/output at offset k, so each
 * step is a few ALU instructions over the whole source shape. Padding is filled with
 * -inf (+inf) so it is never chosen over a real element. */
static ncc_status_t lower_select_and_scatter(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t x, src, init, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &x);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &src);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 2, &init);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	int32_t rank = x.rank;
	const ncc_window_t *w = inst->window;
	int sop = sas_scatter_op(inst->scatter_comp);
	ncc_cmp_dir_t dir = inst->select->root->cmp_dir;
	bool is_max = dir == NCC_CMP_GE || dir == NCC_CMP_GT;
	/* ties: GE/LE keep the earlier element (first wins); GT/LT the later one, which we
	 * get by walking the window backwards */
	bool backwards = dir == NCC_CMP_GT || dir == NCC_CMP_LT;
	int64_t pd[NCC_MAX_RANK];
	bool padded = false;
	for (int32_t d = 0; d < rank; d++) {
		pd[d] = x.dims[d] + w->dims[d].pad_lo + w->dims[d].pad_hi;
		if (w->dims[d].pad_lo || w->dims[d].pad_hi)
			padded = true;
		if (w->dims[d].pad_lo < 0 || w->dims[d].pad_hi < 0)
			return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					      "unsupported select-and-scatter with negative padding");
	}
	int64_t es = (int64_t)isa_dtype_size(x.dtype), oes = (int64_t)isa_dtype_size(out.dtype);
	ncc_view_t px = x, po = out;
	if (padded) {
		ncc_view_t inf, fill;
		st = ncc_lower_temp_view(ctx, x.dtype, rank, pd, &px);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, x.dtype, is_max ? -INFINITY : INFINITY, &inf);
		if (st != NCC_OK)
			return st;
		fill = ncc_view_bcast_scalar(&inf, rank, pd);
		st = ncc_lower_copy(ctx, inst, &px, &fill);
		ncc_view_t dst = padded_interior(&px, w, x.dims);
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &dst, &x);
		if (st == NCC_OK)
			st = ncc_lower_temp_view(ctx, out.dtype, rank, pd, &po);
		if (st != NCC_OK)
			return st;
	}
	ncc_view_t ib = ncc_view_bcast_scalar(&init, rank, po.dims);
	st = ncc_lower_copy(ctx, inst, &po, &ib);
	if (st != NCC_OK || ncc_view_elements(&src) == 0)
		goto crop;
	if (ncc_view_elements(&src) <= SAS_FEW_WINDOWS) {
		st = sas_few_windows(ctx, inst, &px, &po, &src, is_max, backwards);
		goto crop;
	}
	/* M = window max/min: the reduce-window view trick */
	ncc_view_t m, taken, hit, zero, contrib;
	st = ncc_lower_temp_view(ctx, x.dtype, rank, src.dims, &m);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, rank, src.dims, &taken);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, rank, src.dims, &hit);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, out.dtype, rank, src.dims, &contrib);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, out.dtype, 0, &zero);
	if (st != NCC_OK)
		return st;
	/* m has the source's dims, one element per window */
	ncc_view_t wv, keep;
	uint32_t mask = window_views(w, &px, &m, &wv, &keep);
	int64_t nk = 1;
	for (int32_t d = 0; d < rank; d++)
		nk *= w->dims[d].size;
	st = ncc_lower_reduce_emit(ctx, inst, is_max ? ISA_RED_MAX : ISA_RED_MIN, &keep, &wv, mask, false);
	if (st != NCC_OK)
		return st;
	ncc_view_t f;
	st = ncc_lower_const_scalar(ctx, ISA_DT_PRED, 0, &f);
	if (st != NCC_OK)
		return st;
	ncc_view_t fb = ncc_view_bcast_scalar(&f, rank, src.dims);
	st = ncc_lower_copy(ctx, inst, &taken, &fb);
	ncc_view_t zb = ncc_view_bcast_scalar(&zero, rank, src.dims);
	for (int64_t q = 0; q < nk && st == NCC_OK; q++) {
		int64_t kp = backwards ? nk - 1 - q : q, rem = kp, ki[NCC_MAX_RANK];
		for (int32_t d = rank - 1; d >= 0; d--) {
			ki[d] = rem % w->dims[d].size;
			rem /= w->dims[d].size;
		}
		ncc_view_t xk = px, ok = po;
		int64_t xo = (int64_t)px.offset, oo = (int64_t)po.offset;
		for (int32_t d = 0; d < rank; d++) {
			xk.dims[d] = ok.dims[d] = src.dims[d];
			xk.strides[d] = px.strides[d] * w->dims[d].stride;
			ok.strides[d] = po.strides[d] * w->dims[d].stride;
			xo += ki[d] * w->dims[d].rhs_dilation * px.strides[d] * es;
			oo += ki[d] * w->dims[d].rhs_dilation * po.strides[d] * oes;
		}
		xk.offset = (uint64_t)xo;
		ok.offset = (uint64_t)oo;
		ncc_view_t a[3];
		a[0] = xk; a[1] = m;
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &hit, 2, a);
		/* hit = hit > taken (pred: hit and not taken) */
		a[0] = hit; a[1] = taken;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_GT, &hit, 2, a);
		a[0] = taken; a[1] = hit;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_OR, &taken, 2, a);
		if (sop == ISA_ALU_ADD) {
			a[0] = hit; a[1] = src; a[2] = zb;
			if (st == NCC_OK)
				st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &contrib, 3, a);
			a[0] = ok; a[1] = contrib;
			if (st == NCC_OK)
				st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &ok, 2, a);
			continue;
		}
		/* out_k = hit ? scatter(out_k, source) : out_k */
		a[0] = ok; a[1] = src;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, (uint32_t)sop, &contrib, 2, a);
		a[0] = hit; a[1] = contrib; a[2] = ok;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &ok, 3, a);
	}
	if (st != NCC_OK)
		return st;
crop:
	if (st != NCC_OK || !padded)
		return st;
	ncc_view_t inner = padded_interior(&po, w, out.dims);
	return ncc_lower_copy(ctx, inst, &out, &inner);
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

/* keep (reduced dims of size 1, stride 0) widened to the input's dims: every input
 * element sees its window's result. */
static ncc_view_t expand_keep(const ncc_view_t *keep, const ncc_view_t *in)
{
	ncc_view_t e = *keep;
	for (int32_t d = 0; d < in->rank; d++)
		e.dims[d] = in->dims[d];
	return e;
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
	ncc_view_t keepv = keep_dims(&ov, &x, mask), keepi = keep_dims(&oi, &x, mask);
	bool acc;
	st = start_from_init(ctx, inst, inst->operands[2 + f->val], comb, &v0, &ov, &acc);
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
	ncc_view_t vx = expand_keep(&keepv, &x);
	ncc_view_t lx = ncc_view_bcast_scalar(&limit, x.rank, x.dims);
	ncc_view_t lo = ncc_view_bcast_scalar(&limit, oi.rank, oi.dims);
	ncc_view_t a[3];
	a[0] = x; a[1] = vx;
	st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &hit, 2, a);
	if (st == NCC_OK && fl) {
		a[0] = x; a[1] = x;
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_NE, &nan, 2, a);
		a[0] = hit; a[1] = nan;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_OR, &hit, 2, a);
	}
	a[0] = hit; a[1] = ix; a[2] = lx;
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &cand, 3, a);
	/* the init pair takes part as one more element */
	a[0] = v0b; a[1] = ov;
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &h0, 2, a);
	if (st == NCC_OK && fl) {
		a[0] = v0b; a[1] = v0b;
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_NE, &n0, 2, a);
		a[0] = h0; a[1] = n0;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_OR, &h0, 2, a);
	}
	a[0] = h0; a[1] = i0b; a[2] = lo;
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &oi, 3, a);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, f->tie_min ? ISA_RED_MIN : ISA_RED_MAX, &keepi,
					   &cand, mask, true);
	return st;
}

/* A variadic reduce: argmax/argmin, or one plain reduce per result. */
static ncc_status_t lower_variadic_reduce(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
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
			st = lower_reduce(ctx, inst, inst->operands[nv + k], f.comb[k], in, init, out);
	}
	return st;
}

ncc_status_t ncc_lower_reduce_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	if (inst->op == NCC_OP_SELECT_AND_SCATTER)
		return lower_select_and_scatter(ctx, inst);
	if (inst->op != NCC_OP_REDUCE && inst->op != NCC_OP_REDUCE_WINDOW)
		return lower_bn(ctx, inst);
	if (inst->shape.etype == NCC_TUPLE)
		return lower_variadic_reduce(ctx, inst);
	int comb;
	ncc_view_t in, init, out;
	ncc_status_t st = reduce_views(ctx, inst, &comb, &in, &init, &out);
	if (st != NCC_OK)
		return st;
	if (inst->op == NCC_OP_REDUCE)
		return lower_reduce(ctx, inst, inst->operands[1], comb, in, init, out);
	return lower_reduce_window(ctx, inst, comb, in, init, out);
}
