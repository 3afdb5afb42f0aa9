/* Lowering of reductions with one result: reduce (combiner recognised from to_apply) and reduce-window (strided window views + REDUCE). The reductions' other families, which lower.c picks: variadic reduces, lower_reduce_variadic.c; select-and-scatter, lower_select_scatter.c; batch norm, lower_batch_norm.c. Their shared helpers (combiners, keep-dims views, reduce start and dims) are in builder.c. */
#include "lower_internal.h"

bool ncc_lower_reduce_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_REDUCE:
	case NCC_OP_REDUCE_WINDOW:
		if (inst->shape.etype == NCC_TUPLE)
			return false; /* lower.c: the variadic reduce's own family */
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
	default:
		return false;
	}
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

ncc_status_t ncc_lower_reduce_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	int comb;
	ncc_view_t in, init, out;
	ncc_status_t st = reduce_views(ctx, inst, &comb, &in, &init, &out);
	if (st != NCC_OK)
		return st;
	if (inst->op == NCC_OP_REDUCE)
		return ncc_lower_reduce_dims(ctx, inst, inst->operands[1], comb, in, init, out);
	return lower_reduce_window(ctx, inst, comb, in, init, out);
}
