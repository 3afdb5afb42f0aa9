/* Lowering of convolution to MATMULs: dense f32 ones as few large GEMMs (lower_conv_dense.c); otherwise im2col per kernel position (forward and input-gradient shapes) or per output position (weight-gradient shapes), with feature and batch groups as the MATMUL batch dim. */
#include <string.h>

#include "lower_internal.h"

/*
 * With P the padded (and lhs-dilated) input, Y the output spatial sizes, KP the kernel
 * spatial sizes, GE = feature_group_count * batch_group_count (one of them is 1):
 *
 *   per kernel position k (chosen when prod(KP) <= prod(Y)):
 *     T[n, y, c]   = P[n, c, y*stride + k*dil]                 (one COPY, im2col)
 *     Acc[g, m, o] (+)= T[g, m, c] * K[k][g, c, o]               (one MATMUL, groups
 *                                                                 as its batch dim)
 *     finally O = Acc (one COPY into the output layout)
 *   per output position y (chosen otherwise, e.g. weight gradients whose "kernel" is
 *   an activation map):
 *     T[n, c, k]   = P[n, c, y*stride + k*dil]                 (one COPY)
 *     O[y][g, n, o] = T[g, n, (c,k)] * K'[g, (c,k), o]           (one MATMUL; K' is the
 *                                                                 kernel copied once)
 */

bool ncc_lower_conv_supports(const ncc_inst_t *inst, const char **out_reason)
{
	if (inst->op != NCC_OP_CONVOLUTION)
		return false;
	if (!inst->conv || !inst->window || inst->noperands != 2) {
		*out_reason = "unsupported convolution without window or dim_labels";
		return false;
	}
	if (inst->feature_group_count > 1 && inst->batch_group_count > 1) {
		*out_reason = "unsupported convolution with both feature and batch groups";
		return false;
	}
	if (inst->conv->nspatial != inst->window->n) {
		*out_reason = "unsupported convolution: window rank differs from the spatial rank";
		return false;
	}
	if (inst->operands[0]->shape.etype != inst->operands[1]->shape.etype) {
		*out_reason = "unsupported convolution with different input and kernel types";
		return false;
	}
	return true;
}

/* Depthwise f32, stride 1, lhs-dilated (the input gradient of a strided depthwise
 * convolution), NCHW. With dilation d, output o = r + d*q (residue class r) only
 * sees the taps k with (r + k - lo) divisible by d, at input q + (r + k - lo) / d.
 * Per class and such tap one ALU op (MUL, then FMA in tap order) over the class's
 * outputs, reading the input padded by A (low) and B (high) zeros only, never the
 * dilated input: d^ns times fewer products and a buffer d^ns times smaller. The
 * sums take the taps in the same order as the dilated form, which only adds zeros. */
static ncc_status_t conv_dw_subpixel(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				     const ncc_view_t *x, const ncc_view_t *kv, const ncc_view_t *out)
{
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial, rank = 2 + ns;
	int64_t N = x->dims[dn->in_batch], C = x->dims[dn->in_feature];
	int64_t es = (int64_t)isa_dtype_size(x->dtype);
	int64_t n[NCC_MAX_RANK], d[NCC_MAX_RANK], lo[NCC_MAX_RANK], K[NCC_MAX_RANK], Y[NCC_MAX_RANK];
	int64_t A[NCC_MAX_RANK], xd[NCC_MAX_RANK], yd[NCC_MAX_RANK];
	int64_t ny = 1, nclass = 1, ntap = 1;
	xd[0] = yd[0] = N;
	xd[1] = yd[1] = C;
	for (int32_t s = 0; s < ns; s++) {
		n[s] = x->dims[dn->in_spatial[s]];
		d[s] = w->dims[s].lhs_dilation;
		lo[s] = w->dims[s].pad_lo;
		K[s] = kv->dims[dn->k_spatial[s]];
		Y[s] = out->dims[dn->out_spatial[s]];
		/* c = (r + k - lo) / d over r < d, k < K; q < ceil(Y / d) */
		int64_t cmin = -lo[s] >= 0 ? -lo[s] / d[s] : -((lo[s] + d[s] - 1) / d[s]);
		int64_t hi_num = d[s] - 1 + K[s] - 1 - lo[s];
		int64_t cmax = hi_num >= 0 ? hi_num / d[s] : -((-hi_num + d[s] - 1) / d[s]);
		int64_t qmax = (Y[s] + d[s] - 1) / d[s] - 1;
		A[s] = cmin < 0 ? -cmin : 0;
		int64_t B = cmax + qmax - (n[s] - 1);
		xd[2 + s] = A[s] + n[s] + (B > 0 ? B : 0);
		yd[2 + s] = Y[s];
		ny *= Y[s];
		nclass *= d[s];
		ntap *= K[s];
	}
	/* X' = x with A zeros before and B after each spatial dim, [N, C, X...] */
	ncc_view_t xp, acc, zero;
	ncc_status_t st = ncc_lower_temp_view(ctx, x->dtype, rank, xd, &xp);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_F32, rank, yd, &acc);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, x->dtype, 0, &zero);
	if (st != NCC_OK)
		return st;
	ncc_view_t z = ncc_view_bcast_scalar(&zero, rank, xd);
	if ((st = ncc_lower_copy(ctx, inst, &xp, &z)) != NCC_OK)
		return st;
	ncc_view_t src = *x, dst = xp;
	src.rank = dst.rank = rank;
	src.dims[0] = dst.dims[0] = N;
	src.strides[0] = x->strides[dn->in_batch];
	src.dims[1] = dst.dims[1] = C;
	src.strides[1] = x->strides[dn->in_feature];
	int64_t doff = (int64_t)xp.offset;
	for (int32_t s = 0; s < ns; s++) {
		src.dims[2 + s] = dst.dims[2 + s] = n[s];
		src.strides[2 + s] = x->strides[dn->in_spatial[s]];
		doff += A[s] * xp.strides[2 + s] * es;
	}
	dst.offset = (uint64_t)doff;
	if ((st = ncc_lower_copy(ctx, inst, &dst, &src)) != NCC_OK)
		return st;
	for (int64_t cl = 0; cl < nclass; cl++) {
		int64_t r[NCC_MAX_RANK], rem = cl;
		ncc_view_t av = acc;
		int64_t aoff = (int64_t)acc.offset;
		bool empty = false;
		for (int32_t s = ns - 1; s >= 0; s--) {
			r[s] = rem % d[s];
			rem /= d[s];
			int64_t yr = (Y[s] - r[s] + d[s] - 1) / d[s];
			empty |= yr <= 0;
			av.dims[2 + s] = yr;
			av.strides[2 + s] = acc.strides[2 + s] * d[s];
			aoff += r[s] * acc.strides[2 + s] * 4;
		}
		if (empty)
			continue;
		av.offset = (uint64_t)aoff;
		bool first = true;
		for (int64_t kp = 0; kp < ntap; kp++) {
			int64_t k[NCC_MAX_RANK];
			rem = kp;
			for (int32_t s = ns - 1; s >= 0; s--) {
				k[s] = rem % K[s];
				rem /= K[s];
			}
			bool hit = true;
			ncc_view_t xv = xp;
			int64_t xoff = (int64_t)xp.offset;
			int64_t koff = (int64_t)kv->offset;
			for (int32_t s = 0; s < ns && hit; s++) {
				int64_t num = r[s] + k[s] - lo[s];
				hit = num % d[s] == 0;
				xv.dims[2 + s] = av.dims[2 + s];
				xoff += (num / d[s] + A[s]) * xp.strides[2 + s] * es;
				koff += k[s] * kv->strides[dn->k_spatial[s]] * es;
			}
			if (!hit)
				continue;
			xv.offset = (uint64_t)xoff;
			ncc_view_t wv = av;
			wv.region = kv->region;
			wv.dtype = kv->dtype;
			wv.offset = (uint64_t)koff;
			for (int32_t i = 0; i < rank; i++)
				wv.strides[i] = i == 1 ? kv->strides[dn->k_out_feature] : 0;
			ncc_view_t a3[3] = { xv, wv, av };
			st = ncc_lower_alu(ctx, inst, first ? ISA_ALU_MUL : ISA_ALU_FMA, &av, first ? 2 : 3, a3);
			if (st != NCC_OK)
				return st;
			first = false;
		}
		if (first) { /* no tap reaches this class */
			ncc_view_t za = ncc_view_bcast_scalar(&zero, rank, av.dims);
			za.dtype = x->dtype;
			if ((st = ncc_lower_copy(ctx, inst, &av, &za)) != NCC_OK)
				return st;
		}
	}
	/* O[b, o, y] = Acc[b, o, y] */
	ncc_view_t ov = *out, ac = acc;
	ac.rank = out->rank;
	ac.dims[dn->out_batch] = N;
	ac.strides[dn->out_batch] = C * ny;
	ac.dims[dn->out_feature] = C;
	ac.strides[dn->out_feature] = ny;
	int64_t sy = 1;
	for (int32_t s = ns - 1; s >= 0; s--) {
		ac.dims[dn->out_spatial[s]] = Y[s];
		ac.strides[dn->out_spatial[s]] = sy;
		sy *= Y[s];
	}
	return ncc_lower_copy(ctx, inst, &ov, &ac);
}

/* idx[0..n) of flat in row-major order over dims. */
static void conv_unravel(int64_t flat, int32_t n, const int64_t *dims, int64_t *idx)
{
	for (int32_t s = n - 1; s >= 0; s--) {
		idx[s] = flat % dims[s];
		flat /= dims[s];
	}
}

/* The padded input p at one window placement, [N, C, E...] (c_first) or
 * [N, E..., C]: spatial dim s runs ext[s] positions from at[s]. over_kernel:
 * the taps of the output position at (stepping by the rhs dilation, from at
 * x stride); else the outputs of the tap at (stepping by the stride, from at
 * x dilation). */
static ncc_view_t conv_window_view(const ncc_view_t *p, const ncc_conv_dnums_t *dn,
				   const ncc_window_t *w, int32_t ns, int64_t N, int64_t C, bool c_first,
				   const int64_t *ext, const int64_t *at, bool over_kernel)
{
	ncc_view_t xv = *p;
	int64_t off = (int64_t)p->offset, es = (int64_t)isa_dtype_size(p->dtype);
	int32_t sp = c_first ? 2 : 1;
	xv.rank = 2 + ns;
	xv.dims[0] = N;
	xv.strides[0] = p->strides[dn->in_batch];
	xv.dims[c_first ? 1 : 1 + ns] = C;
	xv.strides[c_first ? 1 : 1 + ns] = p->strides[dn->in_feature];
	for (int32_t s = 0; s < ns; s++) {
		int64_t d = dn->in_spatial[s], st = w->dims[s].stride, dil = w->dims[s].rhs_dilation;
		xv.dims[sp + s] = ext[s];
		xv.strides[sp + s] = p->strides[d] * (over_kernel ? dil : st);
		off += at[s] * (over_kernel ? st : dil) * p->strides[d] * es;
	}
	xv.offset = (uint64_t)off;
	return xv;
}

ncc_status_t ncc_lower_conv(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t x, k, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &x);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &k);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	int64_t G = inst->feature_group_count > 1 ? inst->feature_group_count : 1;
	int64_t BG = inst->batch_group_count > 1 ? inst->batch_group_count : 1;
	int64_t GE = G * BG;
	int64_t N = x.dims[dn->in_batch], C = x.dims[dn->in_feature];
	int64_t Cout = out.dims[dn->out_feature];
	int64_t Nb = N / BG, Cg = C / G, On = Cout / GE;
	int64_t Ci = k.dims[dn->k_in_feature];
	if (Ci != (BG > 1 ? C : Cg) || Nb != out.dims[dn->out_batch])
		return ncc_lower_fail(ctx, inst, NCC_ERR_VERIFY, "inconsistent convolution groups");
	int64_t es = (int64_t)isa_dtype_size(x.dtype);
	bool done;
	if ((st = ncc_lower_conv_grouped(ctx, inst, &x, &k, &out, &done)) != NCC_OK || done)
		return st;

	/* depthwise f32 NCHW, stride 1, lhs-dilated: conv_dw_subpixel */
	bool subpixel = G == C && BG == 1 && Cg == 1 && On == 1 && x.dtype == ISA_DT_F32 &&
			out.dtype == ISA_DT_F32 && ns > 0;
	bool dilated = false;
	for (int32_t s = 0; s < ns && subpixel; s++) {
		const ncc_window_dim_t *wd = &w->dims[s];
		subpixel = wd->stride == 1 && wd->rhs_dilation == 1 && wd->pad_lo >= 0 && wd->pad_hi >= 0 &&
			   wd->lhs_dilation >= 1;
		dilated |= wd->lhs_dilation > 1;
	}
	if (subpixel) {
		int64_t sf = x.strides[dn->in_feature], sy = x.strides[dn->in_spatial[ns - 1]];
		subpixel = dilated && (sf < 0 ? -sf : sf) > (sy < 0 ? -sy : sy);
	}
	/* P: zero padded / lhs-dilated input (the input itself when neither applies) */
	bool need_pad = false;
	for (int32_t s = 0; s < ns; s++)
		if (w->dims[s].pad_lo || w->dims[s].pad_hi || w->dims[s].lhs_dilation != 1)
			need_pad = true;
	/* kernel view with reversed spatial dims where the window says so */
	ncc_view_t kv = k;
	for (int32_t s = 0; s < ns; s++) {
		int64_t d = dn->k_spatial[s], ks = k.dims[d];
		if (w->dims[s].reversal && ks > 0) {
			kv.offset = (uint64_t)((int64_t)kv.offset + (ks - 1) * kv.strides[d] * es);
			kv.strides[d] = -kv.strides[d];
		}
	}
	/* dense f32: col2im for input gradients (strided, or reading a large
	 * kernel in place), else im2col GEMMs */
	if (!subpixel) {
		st = ncc_lower_conv_dense_col2im(ctx, inst, &x, &kv, &out, &done);
		if (st == NCC_OK && !done)
			st = ncc_lower_conv_dense_gemm(ctx, inst, &x, &kv, &out, &done);
		if (st == NCC_OK && !done)
			st = ncc_lower_conv_dense_folded(ctx, inst, &x, &kv, &out, &done);
		if (st != NCC_OK || done)
			return st;
	}
	ncc_view_t p = x;
	if (need_pad && !subpixel) {
		int64_t pd[NCC_MAX_RANK];
		for (int32_t d = 0; d < x.rank; d++)
			pd[d] = x.dims[d];
		for (int32_t s = 0; s < ns; s++) {
			int64_t d = dn->in_spatial[s], n = x.dims[d];
			int64_t dil = w->dims[s].lhs_dilation;
			pd[d] = (n > 0 ? (n - 1) * dil + 1 : 0) + w->dims[s].pad_lo + w->dims[s].pad_hi;
			if (pd[d] < 0)
				pd[d] = 0;
		}
		ncc_view_t zero;
		st = ncc_lower_temp_view(ctx, x.dtype, x.rank, pd, &p);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, x.dtype, 0, &zero);
		if (st != NCC_OK)
			return st;
		ncc_view_t z = ncc_view_bcast_scalar(&zero, p.rank, p.dims);
		st = ncc_lower_copy(ctx, inst, &p, &z);
		if (st != NCC_OK)
			return st;
		/* x[i] goes to lo + i*dil; negative lo crops */
		int64_t lo[NCC_MAX_RANK] = { 0 }, step[NCC_MAX_RANK];
		for (int32_t d = 0; d < x.rank; d++)
			step[d] = 1;
		for (int32_t s = 0; s < ns; s++) {
			lo[dn->in_spatial[s]] = w->dims[s].pad_lo;
			step[dn->in_spatial[s]] = w->dims[s].lhs_dilation;
		}
		st = ncc_lower_copy_spread(ctx, inst, &p, &x, lo, step);
		if (st != NCC_OK)
			return st;
	}
	int64_t Y[NCC_MAX_RANK], KS[NCC_MAX_RANK], ny = 1, nk = 1;
	for (int32_t s = 0; s < ns; s++) {
		Y[s] = out.dims[dn->out_spatial[s]];
		KS[s] = k.dims[dn->k_spatial[s]];
		ny *= Y[s];
		nk *= KS[s];
	}
	isa_dtype_t mdt = x.dtype; /* MATMUL operand type */
	if (subpixel)
		return conv_dw_subpixel(ctx, inst, &x, &kv, &out);

	if (nk == 1 && GE == 1) {
		/* ---- 1x1 windows (pointwise convolutions): when the spatial dims of the
		 * input window and of the output each fold into one, a single batched MATMUL
		 * [N, Y, C] x [C, O] -> [N, Y, O] reads and writes them in place (no im2col,
		 * no accumulator) ---- */
		int64_t ys_in = 0, ys_out = 0;
		bool ok = true;
		int32_t last = -1;
		for (int32_t s = ns - 1; s >= 0 && ok; s--) {
			int64_t d = dn->in_spatial[s], od = dn->out_spatial[s];
			int64_t si = p.strides[d] * w->dims[s].stride, so = out.strides[od];
			if (Y[s] == 1)
				continue;
			if (last < 0) {
				ys_in = si;
				ys_out = so;
			} else {
				int64_t pd = dn->in_spatial[last], pod = dn->out_spatial[last];
				ok = si == p.strides[pd] * w->dims[last].stride * Y[last] &&
				     so == out.strides[pod] * Y[last];
			}
			last = s;
		}
		if (ok) {
			int64_t koff = (int64_t)kv.offset;
			isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
			in.n_ap = 3;
			isa_ap_t *a0 = &in.ap[0], *a1 = &in.ap[1], *a2 = &in.ap[2];
			a1->region = p.region; a1->dtype = (uint8_t)mdt; a1->offset = p.offset; a1->rank = 3;
			a1->shape[0] = (uint64_t)N; a1->stride[0] = N > 1 ? p.strides[dn->in_batch] : 0;
			a1->shape[1] = (uint64_t)ny; a1->stride[1] = ny > 1 ? ys_in : 0;
			a1->shape[2] = (uint64_t)C; a1->stride[2] = p.strides[dn->in_feature];
			a2->region = kv.region; a2->dtype = (uint8_t)mdt; a2->offset = (uint64_t)koff; a2->rank = 3;
			a2->shape[0] = (uint64_t)N; a2->stride[0] = 0;
			a2->shape[1] = (uint64_t)C; a2->stride[1] = kv.strides[dn->k_in_feature];
			a2->shape[2] = (uint64_t)Cout; a2->stride[2] = kv.strides[dn->k_out_feature];
			a0->region = out.region; a0->dtype = (uint8_t)out.dtype; a0->offset = out.offset; a0->rank = 3;
			a0->shape[0] = (uint64_t)N; a0->stride[0] = N > 1 ? out.strides[dn->out_batch] : 0;
			a0->shape[1] = (uint64_t)ny; a0->stride[1] = ny > 1 ? ys_out : 0;
			a0->shape[2] = (uint64_t)Cout; a0->stride[2] = out.strides[dn->out_feature];
			return ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
		}
	}
	if (nk <= ny) {
		/* ---- per kernel position ---- */
		isa_dtype_t adt = isa_dtype_is_float(out.dtype) ? ISA_DT_F32 : out.dtype;
		int64_t ad[2] = { Nb * ny, Cout };
		int64_t td[NCC_MAX_RANK];
		int32_t tr = 0;
		td[tr++] = N;
		for (int32_t s = 0; s < ns; s++)
			td[tr++] = Y[s];
		td[tr++] = C;
		ncc_view_t acc, t;
		bool dwc = BG == 1 && G == C && Cg == 1 && On == 1 && mdt == ISA_DT_F32 && adt == ISA_DT_F32;
		/* depthwise (one input and one output channel per group) in f32: per kernel
		 * position one ALU FMA acc += X_k * broadcast(W_k) straight from the strided
		 * window, no im2col copy and no degenerate MATMULs */
		bool dw = dwc;
		/* An input whose feature dim is outside its spatial dims (NCHW) puts the
		 * accumulator in the order [N, C, Y...] (depthwise and ungrouped): the
		 * FMAs, the im2col copy into [N, C, Y...] and the final copy then stream
		 * along rows instead of striding a whole plane per element, and the
		 * MATMUL is the transposed product acc[n] (+)= W^T [Cout, C] x T[n] [C, Y] */
		bool cmajor = false;
		if ((dw || GE == 1) && ns > 0) {
			int64_t sf = p.strides[dn->in_feature], sy = p.strides[dn->in_spatial[ns - 1]];
			cmajor = (sf < 0 ? -sf : sf) > (sy < 0 ? -sy : sy);
		}
		int64_t tdc[NCC_MAX_RANK]; /* [N, C, Y...] */
		tdc[0] = N;
		tdc[1] = C;
		for (int32_t s = 0; s < ns; s++)
			tdc[2 + s] = Y[s];
		/* deep: few input channels (a network's stem, 3 colours) make K = C a
		 * poor GEMM and nk passes over the accumulator. The nk im2col COPYs then
		 * fill T [N, C, nk, Y] and one MATMUL with K = C * nk follows, when the
		 * kernel's (input feature, spatial) dims fold into one run and T stays
		 * within 256 MiB */
		bool deep = cmajor && !dw && GE == 1 && C < 16 && nk > 1;
		int64_t skk = kv.strides[dn->k_spatial[ns > 0 ? ns - 1 : 0]];
		if (deep) {
			int64_t expect = skk;
			for (int32_t s = ns - 1; s >= 0 && deep; s--) {
				deep = KS[s] == 1 || kv.strides[dn->k_spatial[s]] == expect;
				expect *= KS[s];
			}
			deep = deep && skk != 0 && (C == 1 || kv.strides[dn->k_in_feature] == expect) &&
			       N * C * nk * ny * (int64_t)isa_dtype_size(mdt) <= ((int64_t)256 << 20);
		}
		int64_t tdd[4] = { N, C, nk, ny };
		st = ncc_lower_temp_view(ctx, adt, 2, ad, &acc);
		if (st == NCC_OK && deep)
			st = ncc_lower_temp_view(ctx, mdt, 4, tdd, &t);
		else if (st == NCC_OK && !dwc)
			st = ncc_lower_temp_view(ctx, mdt, tr, cmajor ? tdc : td, &t);
		if (st != NCC_OK)
			return st;
		for (int64_t kp = 0; kp < nk; kp++) {
			int64_t ki[NCC_MAX_RANK];
			conv_unravel(kp, ns, KS, ki);
			/* window view [N, Y..., C] of P for this kernel position ([N, C, Y...]
			 * when cmajor) */
			ncc_view_t xv = conv_window_view(&p, dn, w, ns, N, C, cmajor, Y, ki, false);
			int64_t koff = (int64_t)kv.offset;
			for (int32_t s = 0; s < ns; s++)
				koff += ki[s] * kv.strides[dn->k_spatial[s]] * es;
			if (dw) {
				int32_t fd = cmajor ? 1 : tr - 1; /* the feature dim of xv, av and wv */
				ncc_view_t av = ncc_view_dense(acc.region, acc.offset, adt, tr,
							       cmajor ? tdc : td);
				ncc_view_t wv = av;
				wv.region = kv.region;
				wv.dtype = mdt;
				wv.offset = (uint64_t)koff;
				for (int32_t i = 0; i < tr; i++)
					wv.strides[i] = i == fd ? kv.strides[dn->k_out_feature] : 0;
				ncc_view_t a3[3] = { xv, wv, av };
				st = ncc_lower_alu(ctx, inst, kp == 0 ? ISA_ALU_MUL : ISA_ALU_FMA, &av,
						   kp == 0 ? 2 : 3, a3);
				if (st != NCC_OK)
					return st;
				continue;
			}
			if (deep) {
				/* T[:, :, kp, :] as [N, C, Y...] */
				ncc_view_t tv = ncc_view_dense(t.region, t.offset + (uint64_t)(kp * ny) * isa_dtype_size(mdt),
							       mdt, tr, tdc);
				tv.strides[0] = C * nk * ny;
				tv.strides[1] = nk * ny;
				if ((st = ncc_lower_copy(ctx, inst, &tv, &xv)) != NCC_OK)
					return st;
				if (kp + 1 < nk)
					continue;
				/* acc[n] [Cout, Y] = W [Cout, (C, K...)] x T[n] [(C, K...), Y] */
				isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
				in.n_ap = 3;
				isa_ap_t *a0 = &in.ap[0], *a1 = &in.ap[1], *a2 = &in.ap[2];
				a1->region = kv.region; a1->dtype = (uint8_t)mdt; a1->offset = kv.offset; a1->rank = 3;
				a1->shape[0] = (uint64_t)N; a1->stride[0] = 0;
				a1->shape[1] = (uint64_t)Cout; a1->stride[1] = kv.strides[dn->k_out_feature];
				a1->shape[2] = (uint64_t)(C * nk); a1->stride[2] = skk;
				a2->region = t.region; a2->dtype = (uint8_t)mdt; a2->offset = t.offset; a2->rank = 3;
				a2->shape[0] = (uint64_t)N; a2->stride[0] = C * nk * ny;
				a2->shape[1] = (uint64_t)(C * nk); a2->stride[1] = ny;
				a2->shape[2] = (uint64_t)ny; a2->stride[2] = 1;
				a0->region = acc.region; a0->dtype = (uint8_t)adt; a0->offset = acc.offset; a0->rank = 3;
				a0->shape[0] = (uint64_t)N; a0->stride[0] = Cout * ny;
				a0->shape[1] = (uint64_t)Cout; a0->stride[1] = ny;
				a0->shape[2] = (uint64_t)ny; a0->stride[2] = 1;
				if ((st = ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL)) != NCC_OK)
					return st;
				continue;
			}
			if ((st = ncc_lower_copy(ctx, inst, &t, &xv)) != NCC_OK)
				return st;
			isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
			in.n_ap = 3;
			in.flags = kp > 0 ? ISA_F_ACCUMULATE : 0;
			isa_ap_t *a0 = &in.ap[0], *a1 = &in.ap[1], *a2 = &in.ap[2];
			int64_t sko = kv.strides[dn->k_out_feature], ski = kv.strides[dn->k_in_feature];
			if (cmajor) {
				/* acc[n] [Cout, Y] (+)= W^T [Cout, C] x T[n] [C, Y]; GE == 1 */
				a1->region = kv.region; a1->dtype = (uint8_t)mdt; a1->offset = (uint64_t)koff; a1->rank = 3;
				a1->shape[0] = (uint64_t)N; a1->stride[0] = 0;
				a1->shape[1] = (uint64_t)Cout; a1->stride[1] = sko;
				a1->shape[2] = (uint64_t)C; a1->stride[2] = ski;
				int64_t nyg = ny;
				a2->region = t.region; a2->dtype = (uint8_t)mdt; a2->offset = t.offset; a2->rank = 3;
				a2->shape[0] = (uint64_t)N; a2->stride[0] = C * ny;
				a2->shape[1] = (uint64_t)C; a2->stride[1] = ny;
				a2->shape[2] = (uint64_t)nyg; a2->stride[2] = 1;
				a0->region = acc.region; a0->dtype = (uint8_t)adt; a0->offset = acc.offset; a0->rank = 3;
				a0->shape[0] = (uint64_t)N; a0->stride[0] = Cout * nyg;
				a0->shape[1] = (uint64_t)Cout; a0->stride[1] = nyg;
				a0->shape[2] = (uint64_t)nyg; a0->stride[2] = 1;
				st = ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
				if (st != NCC_OK)
					return st;
				continue;
			}
			int64_t M = BG > 1 ? Nb * ny : N * ny, Kc = BG > 1 ? C : Cg;
			a1->region = t.region; a1->dtype = (uint8_t)mdt; a1->offset = t.offset; a1->rank = 3;
			a1->shape[0] = (uint64_t)GE; a1->stride[0] = BG > 1 ? Nb * ny * C : Cg;
			a1->shape[1] = (uint64_t)M; a1->stride[1] = C;
			a1->shape[2] = (uint64_t)Kc; a1->stride[2] = 1;
			a2->region = kv.region; a2->dtype = (uint8_t)mdt; a2->offset = (uint64_t)koff; a2->rank = 3;
			a2->shape[0] = (uint64_t)GE; a2->stride[0] = On * sko;
			a2->shape[1] = (uint64_t)Kc; a2->stride[1] = ski;
			a2->shape[2] = (uint64_t)On; a2->stride[2] = sko;
			a0->region = acc.region; a0->dtype = (uint8_t)adt; a0->offset = acc.offset; a0->rank = 3;
			a0->shape[0] = (uint64_t)GE; a0->stride[0] = On;
			a0->shape[1] = (uint64_t)M; a0->stride[1] = Cout;
			a0->shape[2] = (uint64_t)On; a0->stride[2] = 1;
			st = ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
			if (st != NCC_OK)
				return st;
		}
		/* O[b, o, y] = Acc[(b, y), o], or Acc[b, o, y] (cmajor) */
		ncc_view_t ov = out;
		ncc_view_t av = acc;
		av.rank = out.rank;
		int64_t nyg = ny;
		av.dims[dn->out_batch] = Nb;
		av.strides[dn->out_batch] = nyg * Cout;
		av.dims[dn->out_feature] = Cout;
		av.strides[dn->out_feature] = cmajor ? nyg : 1;
		int64_t sy = cmajor ? 1 : Cout;
		for (int32_t s = ns - 1; s >= 0; s--) {
			av.dims[dn->out_spatial[s]] = Y[s];
			av.strides[dn->out_spatial[s]] = sy;
			sy *= Y[s];
		}
		return ncc_lower_copy(ctx, inst, &ov, &av);
	}

	/* ---- one output position, the window the whole input (the weight gradient
	 * of a pointwise convolution): per lhs feature f (the forward batch) one
	 * MATMUL O [N, Cout] (+)= X_f [N, K...] x W_f [K..., Cout], both read in
	 * place when the window's dims fold into one run in the input and in the
	 * kernel: no copy of either (they were two full copies before the one
	 * MATMUL), f32 accumulation in the output. Only while each MATMUL keeps a
	 * real contraction (a long window, few lhs features: a batch, not the
	 * channels of a fully connected layer written as a convolution) ---- */
	if (ny == 1 && GE == 1 && !need_pad && ns > 0 && out.dtype == ISA_DT_F32 &&
	    isa_dtype_is_float(mdt) && nk >= 32 && nk * 4 >= C) {
		int64_t sx = 1, sk = 1;
		bool ok = true;
		int32_t inner = -1; /* the last spatial dim seen with more than one element */
		for (int32_t s = ns - 1; s >= 0 && ok; s--) {
			int64_t dx = dn->in_spatial[s], dk = dn->k_spatial[s];
			ok = w->dims[s].rhs_dilation == 1 && KS[s] == x.dims[dx];
			if (!ok || KS[s] == 1)
				continue;
			if (inner < 0) {
				sx = x.strides[dx];
				sk = kv.strides[dk];
			} else {
				ok = x.strides[dx] == x.strides[dn->in_spatial[inner]] * KS[inner] &&
				     kv.strides[dk] == kv.strides[dn->k_spatial[inner]] * KS[inner];
			}
			inner = s;
		}
		if (ok) {
			int64_t sif = x.strides[dn->in_feature], skf = kv.strides[dn->k_in_feature];
			for (int64_t f = 0; f < C; f++) {
				isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
				in.n_ap = 3;
				in.flags = f > 0 ? ISA_F_ACCUMULATE : 0;
				isa_ap_t *a0 = &in.ap[0], *a1 = &in.ap[1], *a2 = &in.ap[2];
				a1->region = x.region; a1->dtype = (uint8_t)mdt; a1->rank = 3;
				a1->offset = (uint64_t)((int64_t)x.offset + f * sif * es);
				a1->shape[0] = 1; a1->stride[0] = 0;
				a1->shape[1] = (uint64_t)N; a1->stride[1] = x.strides[dn->in_batch];
				a1->shape[2] = (uint64_t)nk; a1->stride[2] = sx;
				a2->region = kv.region; a2->dtype = (uint8_t)mdt; a2->rank = 3;
				a2->offset = (uint64_t)((int64_t)kv.offset + f * skf * es);
				a2->shape[0] = 1; a2->stride[0] = 0;
				a2->shape[1] = (uint64_t)nk; a2->stride[1] = sk;
				a2->shape[2] = (uint64_t)Cout; a2->stride[2] = kv.strides[dn->k_out_feature];
				a0->region = out.region; a0->dtype = (uint8_t)out.dtype; a0->offset = out.offset;
				a0->rank = 3;
				a0->shape[0] = 1; a0->stride[0] = 0;
				a0->shape[1] = (uint64_t)N; a0->stride[1] = out.strides[dn->out_batch];
				a0->shape[2] = (uint64_t)Cout; a0->stride[2] = out.strides[dn->out_feature];
				st = ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
				if (st != NCC_OK)
					return st;
			}
			return NCC_OK;
		}
	}

	/* ---- per output position ---- */
	/* The kernel is copied output-feature-major, [Cout, Ci, K...], when its
	 * output feature dim lies outside its spatial dims (the NCHW gradient of a
	 * weight-gradient convolution: the copy then moves whole rows, where
	 * [Ci, K..., Cout] gathered one element per plane) and when each group has one
	 * output feature (depthwise weight gradients: each group's MATMUL reads one
	 * dense column instead of every Cout-th element of the whole kernel). The
	 * MATMUL reads it transposed, [Kc, On] with leading dimension Kc. */
	bool ofirst = On == 1 && GE > 1;
	if (ns > 0) {
		int64_t so = kv.strides[dn->k_out_feature], sk = kv.strides[dn->k_spatial[ns - 1]];
		ofirst |= (so < 0 ? -so : so) > (sk < 0 ? -sk : sk);
	}
	int64_t kd[NCC_MAX_RANK];
	int32_t kr = 0;
	ncc_view_t kperm = kv;
	if (ofirst) {
		kd[kr] = Cout;
		kperm.dims[kr] = Cout;
		kperm.strides[kr++] = kv.strides[dn->k_out_feature];
	}
	kd[kr] = Ci;
	kperm.dims[kr] = Ci;
	kperm.strides[kr++] = kv.strides[dn->k_in_feature];
	for (int32_t s = 0; s < ns; s++) {
		kd[kr] = KS[s];
		kperm.dims[kr] = KS[s];
		kperm.strides[kr++] = kv.strides[dn->k_spatial[s]];
	}
	if (!ofirst) {
		kd[kr] = Cout;
		kperm.dims[kr] = Cout;
		kperm.strides[kr++] = kv.strides[dn->k_out_feature];
	}
	kperm.rank = kr;
	ncc_view_t kt, t;
	st = ncc_lower_temp_view(ctx, mdt, kr, kd, &kt);
	if (st == NCC_OK)
		st = ncc_lower_copy(ctx, inst, &kt, &kperm);
	int64_t td[NCC_MAX_RANK];
	int32_t tr = 0;
	td[tr++] = N;
	td[tr++] = C;
	for (int32_t s = 0; s < ns; s++)
		td[tr++] = KS[s];
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, mdt, tr, td, &t);
	if (st != NCC_OK)
		return st;
	for (int64_t yp = 0; yp < ny; yp++) {
		int64_t yi[NCC_MAX_RANK];
		conv_unravel(yp, ns, Y, yi);
		ncc_view_t xv = conv_window_view(&p, dn, w, ns, N, C, true, KS, yi, true);
		st = ncc_lower_copy(ctx, inst, &t, &xv);
		if (st != NCC_OK)
			return st;
		int64_t ooff = (int64_t)out.offset;
		int64_t oes = (int64_t)isa_dtype_size(out.dtype);
		for (int32_t s = 0; s < ns; s++)
			ooff += yi[s] * out.strides[dn->out_spatial[s]] * oes;
		isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
		in.n_ap = 3;
		isa_ap_t *a0 = &in.ap[0], *a1 = &in.ap[1], *a2 = &in.ap[2];
		int64_t Mb = BG > 1 ? Nb : N, Kc = (BG > 1 ? C : Cg) * nk;
		a1->region = t.region; a1->dtype = (uint8_t)mdt; a1->offset = t.offset; a1->rank = 3;
		a1->shape[0] = (uint64_t)GE; a1->stride[0] = BG > 1 ? Nb * C * nk : Cg * nk;
		a1->shape[1] = (uint64_t)Mb; a1->stride[1] = C * nk;
		a1->shape[2] = (uint64_t)Kc; a1->stride[2] = 1;
		a2->region = kt.region; a2->dtype = (uint8_t)mdt; a2->offset = kt.offset; a2->rank = 3;
		a2->shape[0] = (uint64_t)GE; a2->stride[0] = ofirst ? On * Kc : On;
		a2->shape[1] = (uint64_t)Kc; a2->stride[1] = ofirst ? 1 : Cout;
		a2->shape[2] = (uint64_t)On; a2->stride[2] = ofirst ? Kc : 1;
		int64_t sof = out.strides[dn->out_feature], sob = out.strides[dn->out_batch];
		a0->region = out.region; a0->dtype = (uint8_t)out.dtype; a0->offset = (uint64_t)ooff; a0->rank = 3;
		a0->shape[0] = (uint64_t)GE; a0->stride[0] = On * sof;
		a0->shape[1] = (uint64_t)Mb; a0->stride[1] = sob;
		a0->shape[2] = (uint64_t)On; a0->stride[2] = sof;
		st = ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
		if (st != NCC_OK)
			return st;
	}
	return NCC_OK;
}
