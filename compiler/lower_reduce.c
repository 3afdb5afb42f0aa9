/* Lowering of reductions: reduce (combiner recognised from to_apply), reduce-window (strided window views + REDUCE), batch-norm training/inference/grad. */
#include <math.h>
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
			*out_reason = "unsupported variadic (multi-operand) reduction";
			return false;
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
		if (ncc_lower_combiner_of(inst->scatter_comp) != ISA_RED_SUM) {
			*out_reason = "unsupported select-and-scatter scatter computation (only add)";
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

static ncc_status_t lower_reduce(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	int comb = ncc_lower_combiner_of(inst->to_apply);
	ncc_view_t in, init, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &in);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &init);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	uint32_t mask = 0;
	for (int32_t i = 0; i < inst->dimensions.n; i++)
		mask |= 1u << inst->dimensions.v[i];
	ncc_view_t keep = keep_dims(&out, &in, mask);
	bool acc = !init_is_identity(inst->operands[1], comb);
	if (acc) {
		/* start from the init value: REDUCE with ACCUMULATE combines into it */
		ncc_view_t b = ncc_view_bcast_scalar(&init, out.rank, out.dims);
		st = ncc_lower_copy(ctx, inst, &out, &b);
		if (st != NCC_OK)
			return st;
	}
	if (ncc_view_elements(&out) == 0)
		return NCC_OK;
	if (ncc_view_elements(&in) == 0) {
		if (acc)
			return NCC_OK;
		/* empty reduction without an explicit init: the identity */
		ncc_view_t b = ncc_view_bcast_scalar(&init, out.rank, out.dims);
		return ncc_lower_copy(ctx, inst, &out, &b);
	}
	return ncc_lower_reduce_emit(ctx, inst, (uint32_t)comb, &keep, &in, mask, acc);
}

/* reduce-window: the input (padded with init into a temporary when the window pads)
 * seen as [o0, w0, o1, w1, ...] with strides (stride*s, dilation*s), reduced over the
 * w dims. Overlapping windows are fine: they only overlap in reads. */
static ncc_status_t lower_reduce_window(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	int comb = ncc_lower_combiner_of(inst->to_apply);
	ncc_view_t in, init, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &in);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &init);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
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
	ncc_view_t w = in;
	w.rank = rank * 2;
	uint32_t mask = 0;
	for (int32_t d = 0; d < rank; d++) {
		const ncc_window_dim_t *wd = &inst->window->dims[d];
		w.dims[2 * d] = out.dims[d];
		w.strides[2 * d] = in.strides[d] * wd->stride;
		w.dims[2 * d + 1] = wd->size;
		w.strides[2 * d + 1] = in.strides[d] * wd->rhs_dilation;
		mask |= 1u << (2 * d + 1);
	}
	ncc_view_t keep = out;
	keep.rank = rank * 2;
	for (int32_t d = 0; d < rank; d++) {
		keep.dims[2 * d] = out.dims[d];
		keep.strides[2 * d] = out.strides[d];
		keep.dims[2 * d + 1] = 1;
		keep.strides[2 * d + 1] = 0;
	}
	bool acc = !init_is_identity(inst->operands[1], comb);
	if (acc) {
		ncc_view_t b = ncc_view_bcast_scalar(&init, out.rank, out.dims);
		st = ncc_lower_copy(ctx, inst, &out, &b);
		if (st != NCC_OK)
			return st;
	}
	if (ncc_view_elements(&out) == 0)
		return NCC_OK;
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

static ncc_status_t lower_bn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t x;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &x);
	if (st != NCC_OK)
		return st;
	int64_t f = inst->feature_index;
	int32_t rank = x.rank;
	const int64_t *xd = x.dims;
	int64_t C = x.dims[f];
	int64_t N = C ? ncc_view_elements(&x) / C : 0;
	uint32_t mask = 0;
	for (int32_t d = 0; d < rank; d++)
		if (d != f)
			mask |= 1u << d;
	ncc_view_t invn;
	st = ncc_lower_const_scalar(ctx, x.dtype, N ? 1.0 / (double)N : 0.0, &invn);
	if (st != NCC_OK)
		return st;
	ncc_view_t invn_c = ncc_view_bcast_scalar(&invn, 1, &C);

	if (inst->op == NCC_OP_BATCH_NORM_TRAINING || inst->op == NCC_OP_BATCH_NORM_INFERENCE) {
		ncc_view_t scale, offset, y, mean, var, d;
		st = ncc_lower_operand_view(ctx, inst, 1, &scale);
		if (st == NCC_OK)
			st = ncc_lower_operand_view(ctx, inst, 2, &offset);
		if (st == NCC_OK)
			st = ncc_lower_output_view(ctx, inst, 0, &y);
		if (st != NCC_OK)
			return st;
		if (inst->op == NCC_OP_BATCH_NORM_TRAINING) {
			st = ncc_lower_output_view(ctx, inst, 1, &mean);
			if (st == NCC_OK)
				st = ncc_lower_output_view(ctx, inst, 2, &var);
			if (st != NCC_OK)
				return st;
			ncc_view_t mk = feat_keep(&mean, rank, f);
			st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &mk, &x, mask, false);
			if (st == NCC_OK)
				st = alu2(ctx, inst, ISA_ALU_MUL, &mean, &mean, &invn_c);
		} else {
			st = ncc_lower_operand_view(ctx, inst, 3, &mean);
			if (st == NCC_OK)
				st = ncc_lower_operand_view(ctx, inst, 4, &var);
		}
		if (st != NCC_OK)
			return st;
		/* d = x - mean, kept in y (y is overwritten last) */
		d = y;
		ncc_view_t mb = feat_bcast(&mean, rank, xd, f);
		st = alu2(ctx, inst, ISA_ALU_SUB, &d, &x, &mb);
		if (st != NCC_OK)
			return st;
		if (inst->op == NCC_OP_BATCH_NORM_TRAINING) {
			ncc_view_t sq;
			st = ncc_lower_temp_view(ctx, x.dtype, rank, xd, &sq);
			if (st == NCC_OK)
				st = alu2(ctx, inst, ISA_ALU_MUL, &sq, &d, &d);
			ncc_view_t vk = feat_keep(&var, rank, f);
			if (st == NCC_OK)
				st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &vk, &sq, mask, false);
			if (st == NCC_OK)
				st = alu2(ctx, inst, ISA_ALU_MUL, &var, &var, &invn_c);
			if (st != NCC_OK)
				return st;
		}
		ncc_view_t inv;
		st = inv_std(ctx, inst, &var, &inv);
		if (st != NCC_OK)
			return st;
		/* fold scale into inv: k = inv * scale */
		st = alu2(ctx, inst, ISA_ALU_MUL, &inv, &inv, &scale);
		ncc_view_t kb = feat_bcast(&inv, rank, xd, f), ob = feat_bcast(&offset, rank, xd, f);
		if (st == NCC_OK)
			st = alu2(ctx, inst, ISA_ALU_MUL, &y, &d, &kb);
		if (st == NCC_OK)
			st = alu2(ctx, inst, ISA_ALU_ADD, &y, &y, &ob);
		return st;
	}

	/* batch-norm-grad(x, scale, mean, var, dy) -> (dx, dscale, doffset) */
	ncc_view_t scale, mean, var, dy, dx, dscale, doffset, inv, xhat, t;
	st = ncc_lower_operand_view(ctx, inst, 1, &scale);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 2, &mean);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 3, &var);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 4, &dy);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &dx);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 1, &dscale);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 2, &doffset);
	if (st == NCC_OK)
		st = inv_std(ctx, inst, &var, &inv);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, x.dtype, rank, xd, &xhat);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, x.dtype, rank, xd, &t);
	if (st != NCC_OK)
		return st;
	ncc_view_t mb = feat_bcast(&mean, rank, xd, f), ib = feat_bcast(&inv, rank, xd, f);
	st = alu2(ctx, inst, ISA_ALU_SUB, &xhat, &x, &mb);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &xhat, &xhat, &ib);
	ncc_view_t ok = feat_keep(&doffset, rank, f), sk = feat_keep(&dscale, rank, f);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &ok, &dy, mask, false);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &t, &dy, &xhat);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &sk, &t, mask, false);
	if (st != NCC_OK)
		return st;
	/* dx = scale * inv / N * (N * dy - doffset - xhat * dscale) */
	ncc_view_t nconst;
	st = ncc_lower_const_scalar(ctx, x.dtype, (double)N, &nconst);
	if (st != NCC_OK)
		return st;
	ncc_view_t nb = ncc_view_bcast_scalar(&nconst, rank, xd);
	ncc_view_t sb = feat_bcast(&dscale, rank, xd, f), db = feat_bcast(&doffset, rank, xd, f);
	st = alu2(ctx, inst, ISA_ALU_MUL, &t, &xhat, &sb);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &dx, &dy, &nb);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_SUB, &dx, &dx, &db);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_SUB, &dx, &dx, &t);
	/* k = scale * inv / N, in place in inv */
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &inv, &inv, &scale);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &inv, &inv, &invn_c);
	if (st == NCC_OK)
		st = alu2(ctx, inst, ISA_ALU_MUL, &dx, &dx, &ib);
	return st;
}

/* select-and-scatter (max/min-pool gradient): for every window the first element
 * that the select computation prefers receives the source value, added into an output
 * initialised with init. With M the window max (min), per window offset k in window
 * order: hit = (X_k == M) and not yet taken; out_k += hit ? source : 0; taken |= hit.
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
		ncc_view_t dst = px;
		int64_t off = (int64_t)px.offset;
		for (int32_t d = 0; d < rank; d++) {
			off += w->dims[d].pad_lo * px.strides[d] * es;
			dst.dims[d] = x.dims[d];
		}
		dst.offset = (uint64_t)off;
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
	ncc_view_t wv = px, keep = m;
	wv.rank = keep.rank = 2 * rank;
	uint32_t mask = 0;
	int64_t nk = 1;
	for (int32_t d = 0; d < rank; d++) {
		wv.dims[2 * d] = src.dims[d];
		wv.strides[2 * d] = px.strides[d] * w->dims[d].stride;
		wv.dims[2 * d + 1] = w->dims[d].size;
		wv.strides[2 * d + 1] = px.strides[d] * w->dims[d].rhs_dilation;
		keep.dims[2 * d] = m.dims[d];
		keep.strides[2 * d] = m.strides[d];
		keep.dims[2 * d + 1] = 1;
		keep.strides[2 * d + 1] = 0;
		mask |= 1u << (2 * d + 1);
		nk *= w->dims[d].size;
	}
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
		a[0] = hit; a[1] = src; a[2] = zb;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &contrib, 3, a);
		a[0] = ok; a[1] = contrib;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &ok, 2, a);
	}
	if (st != NCC_OK)
		return st;
crop:
	if (st != NCC_OK || !padded)
		return st;
	{
		ncc_view_t inner = po;
		int64_t off = (int64_t)po.offset;
		for (int32_t d = 0; d < rank; d++) {
			off += w->dims[d].pad_lo * po.strides[d] * oes;
			inner.dims[d] = out.dims[d];
		}
		inner.offset = (uint64_t)off;
		return ncc_lower_copy(ctx, inst, &out, &inner);
	}
}

ncc_status_t ncc_lower_reduce_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	if (inst->op == NCC_OP_SELECT_AND_SCATTER)
		return lower_select_and_scatter(ctx, inst);
	switch (inst->op) {
	case NCC_OP_REDUCE:
		return lower_reduce(ctx, inst);
	case NCC_OP_REDUCE_WINDOW:
		return lower_reduce_window(ctx, inst);
	default:
		return lower_bn(ctx, inst);
	}
}
