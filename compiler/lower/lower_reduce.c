/* Lowering of reductions with one result: reduce (combiner recognised from to_apply) and reduce-window (strided window views + REDUCE; small f32 MAX/MIN windows gathered dense and folded by a FUSED). The reductions' other families, which lower.c picks: variadic reduces, lower_reduce_variadic.c; select-and-scatter, lower_select_scatter.c; batch norm, lower_batch_norm.c. Their shared helpers (combiners, keep-dims views, reduce start and dims) are in builder.c. */
#include <string.h>

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

/* Outputs below which reduce-window keeps the REDUCE over its window view */
#define RW_DENSE_MIN_OUT 4096

/*
 * reduce-window MAX or MIN of f32 over small windows (a max-pool's 3x3) and
 * many outputs, a part of the output's outer dim at a time: the windows
 * gathered dense (ncc_lower_window_im2col), then one FUSED folds each
 * window's nk values in window order starting from init, with the ALU's
 * MAX/MIN, which keep the first NaN and give +0 (MAX) or -0 (MIN) of tied
 * zeros in any order, as the REDUCE does: the same bits. The REDUCE over the
 * window view walked rows of 16 outputs at stride 2, its accumulators in
 * double (ResNet-18 b8's 3x3 stride-2 max-pool over 8x64x32x32: 2.3 ms).
 * *done false (nothing emitted) when the shapes do not fit.
 */
static ncc_status_t reduce_window_dense(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int comb,
					const ncc_view_t *in, const ncc_view_t *init, const ncc_view_t *out,
					bool *done)
{
	const ncc_window_t *w = inst->window;
	int32_t rank = in->rank;
	*done = false;
	int64_t nk = ncc_lower_window_elements(w);
	int32_t od[NCC_MAX_RANK], nod = 0;
	for (int32_t d = 0; d < rank; d++)
		if (out->dims[d] > 1)
			od[nod++] = d;
	int64_t nout = ncc_view_elements(out);
	if ((comb != ISA_RED_MAX && comb != ISA_RED_MIN) || in->dtype != ISA_DT_F32 ||
	    out->dtype != ISA_DT_F32 || nk < 2 || nk + 1 > ISA_FUSED_MAX_INPUTS || nod == 0 ||
	    nod > ISA_MAX_RANK || nout < RW_DENSE_MIN_OUT)
		return NCC_OK;
	*done = true;
	int32_t c0 = od[0];
	int64_t ctot = out->dims[c0], per = nout / ctot;
	int64_t cn = ncc_lower_window_part(nk, 4, ctot, per);
	/* the window elements inside the dims before the first one the window
	 * spans (a max-pool's [N][C][3x3][OH][OW]) */
	int32_t ninner = rank;
	while (ninner > 1 && w->dims[rank - ninner].size == 1)
		ninner--;
	ncc_view_t xbuf;
	int64_t xd[1] = { nk * cn * per };
	ncc_status_t st = ncc_lower_temp_view(ctx, ISA_DT_F32, 1, xd, &xbuf);
	if (st != NCC_OK)
		return st;
	/* registers 0..nk-1 the window's values, nk the init value, nk + 1 the fold */
	uint32_t rI = (uint32_t)nk, rA = rI + 1;
	isa_fused_op_t code[ISA_FUSED_MAX_INPUTS];
	const ncc_inst_t *from[ISA_FUSED_MAX_INPUTS];
	for (int64_t k = 0; k < nk; k++) {
		code[k] = ncc_lower_fused_step(comb == ISA_RED_MAX ? ISA_ALU_MAX : ISA_ALU_MIN, rA,
					       ISA_DT_F32, k == 0 ? rI : rA, (uint32_t)k, 0, 0);
		from[k] = inst;
	}
	uint32_t first_dbg;
	if ((st = ncc_lower_debug_entries(ctx, from, (int32_t)nk, &first_dbg)) != NCC_OK)
		return st;
	isa_fused_desc_t h;
	memset(&h, 0, sizeof(h));
	h.magic = ISA_FUSED_MAGIC;
	h.n_inputs = (uint16_t)(nk + 1);
	h.n_code = (uint16_t)nk;
	h.n_regs = (uint8_t)(rA + 1);
	h.out_reg = (uint8_t)rA;
	for (int64_t c = 0; c < ctot && st == NCC_OK; c += cn) {
		int64_t cc = ctot - c < cn ? ctot - c : cn;
		ncc_view_t ov = *out, iv = *in;
		ov.dims[c0] = cc;
		ov.offset = (uint64_t)((int64_t)out->offset + c * out->strides[c0] * 4);
		iv.offset = (uint64_t)((int64_t)in->offset + c * w->dims[c0].stride * in->strides[c0] * 4);
		if ((st = ncc_lower_window_im2col(ctx, inst, w, &iv, ov.dims, ninner, &xbuf)) != NCC_OK)
			break;
		uint64_t shp[ISA_MAX_RANK];
		for (int32_t q = 0; q < nod; q++)
			shp[q] = (uint64_t)ov.dims[od[q]];
		isa_ap_t aps[2 + ISA_FUSED_MAX_INPUTS];
		aps[0] = isa_ap_contig(ov.region, ov.offset, ISA_DT_F32, (uint32_t)nod, shp);
		for (int32_t q = 0; q < nod; q++)
			aps[0].stride[q] = ov.strides[od[q]];
		int64_t ks = ncc_lower_window_col_stride(ov.dims, rank, ninner, nk, rank);
		for (int64_t k = 0; k < nk; k++) {
			aps[1 + k] = isa_ap_contig(xbuf.region, xbuf.offset + (uint64_t)(k * ks * 4), ISA_DT_F32,
						   (uint32_t)nod, shp);
			for (int32_t q = 0; q < nod; q++)
				aps[1 + k].stride[q] =
					ncc_lower_window_col_stride(ov.dims, rank, ninner, nk, od[q]);
		}
		aps[1 + nk] = isa_ap_contig(init->region, init->offset, ISA_DT_F32, (uint32_t)nod, shp);
		for (int32_t q = 0; q < nod; q++)
			aps[1 + nk].stride[q] = 0;
		st = ncc_lower_fused_insn(ctx, inst, aps, (int32_t)nk + 1, &h, code, first_dbg, false);
	}
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
	bool done;
	st = reduce_window_dense(ctx, inst, comb, &in, &init, &out, &done);
	if (st != NCC_OK || done)
		return st;
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
