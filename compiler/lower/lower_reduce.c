/* Lowering of reductions: reduce (combiner recognised from to_apply) and reduce-window (strided window views + REDUCE), the family's support check and dispatch, and the view helpers the reduction files share. Variadic reduces: lower_reduce_variadic.c; select-and-scatter: lower_select_scatter.c; batch norm: lower_batch_norm.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* The REDUCE combiner of r = op(a, b) on the scalars a and b (either order), or -1. */
int ncc_lower_binary_combiner(const ncc_inst_t *r, const ncc_inst_t *a, const ncc_inst_t *b)
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

/* The REDUCE combiner of a computation `(a, b) -> op(a, b)` on scalars, or -1. */
int ncc_lower_combiner_of(const ncc_comp_t *c)
{
	if (!c || !c->root || c->nparams != 2 || c->root->noperands != 2)
		return -1;
	const ncc_inst_t *r = c->root;
	const ncc_inst_t *a = r->operands[0], *b = r->operands[1];
	if (a->op != NCC_OP_PARAMETER || b->op != NCC_OP_PARAMETER)
		return -1;
	return ncc_lower_binary_combiner(r, a, b);
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

bool ncc_lower_reduce_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_REDUCE:
	case NCC_OP_REDUCE_WINDOW:
		if (inst->shape.etype == NCC_TUPLE) {
			if (inst->op == NCC_OP_REDUCE_WINDOW) {
				*out_reason = "unsupported variadic (multi-operand) reduce-window";
				return false;
			}
			return ncc_lower_variadic_reduce_supports(inst, out_reason);
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
	case NCC_OP_SELECT_AND_SCATTER:
		return ncc_lower_select_and_scatter_supports(inst, out_reason);
	default:
		return false;
	}
}

/* Expands an output view (operand rank minus reduced dims) back to operand rank with
 * the reduced dims as size 1. */
ncc_view_t ncc_view_keep_dims(const ncc_view_t *out, const ncc_view_t *in, uint32_t mask)
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
ncc_status_t ncc_lower_reduce_start(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const ncc_inst_t *init_inst, int comb, const ncc_view_t *init,
				    const ncc_view_t *out, bool *out_acc)
{
	*out_acc = !init_is_identity(init_inst, comb);
	if (!*out_acc)
		return NCC_OK;
	ncc_view_t b = ncc_view_bcast_scalar(init, out->rank, out->dims);
	return ncc_lower_copy(ctx, inst, out, &b);
}

ncc_status_t ncc_lower_reduce_dims(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   const ncc_inst_t *init_inst, int comb, ncc_view_t in,
				   ncc_view_t init, ncc_view_t out)
{
	ncc_status_t st;
	uint32_t mask = 0;
	for (int32_t i = 0; i < inst->dimensions.n; i++)
		mask |= 1u << inst->dimensions.v[i];
	ncc_view_t keep = ncc_view_keep_dims(&out, &in, mask);
	bool acc;
	st = ncc_lower_reduce_start(ctx, inst, init_inst, comb, &init, &out, &acc);
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
uint32_t ncc_lower_window_views(const ncc_window_t *win, const ncc_view_t *in,
				const ncc_view_t *out, ncc_view_t *out_windows, ncc_view_t *out_keep)
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
	uint32_t mask = ncc_lower_window_views(inst->window, &in, &out, &w, &keep);
	bool acc;
	st = ncc_lower_reduce_start(ctx, inst, inst->operands[1], comb, &init, &out, &acc);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	return ncc_lower_reduce_emit(ctx, inst, (uint32_t)comb, &keep, &w, mask, acc);
}

/* keep (reduced dims of size 1, stride 0) widened to the input's dims: every input
 * element sees its window's result. */
ncc_view_t ncc_view_expand_keep(const ncc_view_t *keep, const ncc_view_t *in)
{
	ncc_view_t e = *keep;
	for (int32_t d = 0; d < in->rank; d++)
		e.dims[d] = in->dims[d];
	return e;
}

ncc_status_t ncc_lower_reduce_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	if (inst->op == NCC_OP_SELECT_AND_SCATTER)
		return ncc_lower_select_and_scatter(ctx, inst);
	if (inst->op != NCC_OP_REDUCE && inst->op != NCC_OP_REDUCE_WINDOW)
		return ncc_lower_batch_norm(ctx, inst);
	if (inst->shape.etype == NCC_TUPLE)
		return ncc_lower_variadic_reduce(ctx, inst);
	int comb;
	ncc_view_t in, init, out;
	ncc_status_t st = reduce_views(ctx, inst, &comb, &in, &init, &out);
	if (st != NCC_OK)
		return st;
	if (inst->op == NCC_OP_REDUCE)
		return ncc_lower_reduce_dims(ctx, inst, inst->operands[1], comb, in, init, out);
	return lower_reduce_window(ctx, inst, comb, in, init, out);
}
