/* ncc back end, ISA instructions from views: folds views into access patterns (splitting the outer dims of those that do not fit the ISA's rank) and emits COPY, ALU, ACTIVATE and REDUCE over them. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lower_internal.h"

/* ---------------------------------------------------------------- aps */

ncc_status_t ncc_lower_views_to_aps(int n, const ncc_view_t *views, isa_ap_t *out_aps)
{
	if (n < 1 || n > ISA_MAX_AP)
		return NCC_ERR_INVALID;
	int32_t rank = views[0].rank;
	int64_t dims[NCC_MAX_RANK];
	int64_t str[ISA_MAX_AP][NCC_MAX_RANK];
	int32_t r = 0;
	/* drop size-1 dims (their stride never matters) */
	for (int32_t d = 0; d < rank; d++) {
		if (views[0].dims[d] == 1)
			continue;
		dims[r] = views[0].dims[d];
		for (int k = 0; k < n; k++)
			str[k][r] = views[k].strides[d];
		r++;
	}
	/* merge d-1 and d when contiguous in every view: stride[d-1] == stride[d]*dims[d] */
	int32_t w = 0;
	for (int32_t d = 0; d < r; d++) {
		if (w > 0) {
			bool ok = true;
			for (int k = 0; k < n && ok; k++)
				ok = str[k][w - 1] == str[k][d] * dims[d];
			if (ok) {
				dims[w - 1] *= dims[d];
				for (int k = 0; k < n; k++)
					str[k][w - 1] = str[k][d];
				continue;
			}
		}
		dims[w] = dims[d];
		for (int k = 0; k < n; k++)
			str[k][w] = str[k][d];
		w++;
	}
	if (w > ISA_MAX_RANK)
		return NCC_ERR_UNSUPPORTED;
	for (int k = 0; k < n; k++) {
		isa_ap_t *a = &out_aps[k];
		memset(a, 0, sizeof(*a));
		a->region = views[k].region;
		a->dtype = (uint8_t)views[k].dtype;
		a->rank = (uint8_t)w;
		a->offset = views[k].offset;
		for (int32_t d = 0; d < w; d++) {
			a->shape[d] = (uint64_t)dims[d];
			a->stride[d] = str[k][d];
		}
	}
	return NCC_OK;
}

/* Calls fn on sub-views when the views cannot fold into ISA_MAX_RANK: fixes the
 * outermost dim (of size > 1) and recurses. */
typedef ncc_status_t (*view_op_fn)(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg,
				   int n, const isa_ap_t *aps);

static ncc_status_t for_views(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int n,
			      const ncc_view_t *views, view_op_fn fn, void *arg)
{
	if (ncc_view_elements(&views[0]) == 0)
		return NCC_OK;
	isa_ap_t aps[ISA_MAX_AP];
	ncc_status_t st = ncc_lower_views_to_aps(n, views, aps);
	if (st == NCC_OK)
		return fn(ctx, inst, arg, n, aps);
	if (st != NCC_ERR_UNSUPPORTED)
		return st;
	int32_t d = 0;
	while (d < views[0].rank && views[0].dims[d] == 1)
		d++;
	ncc_view_t sub[ISA_MAX_AP];
	for (int64_t i = 0; i < views[0].dims[d]; i++) {
		for (int k = 0; k < n; k++) {
			sub[k] = views[k];
			sub[k].offset = (uint64_t)((int64_t)views[k].offset +
						   i * views[k].strides[d] * (int64_t)isa_dtype_size(views[k].dtype));
			sub[k].dims[d] = 1;
		}
		st = for_views(ctx, inst, n, sub, fn, arg);
		if (st != NCC_OK)
			return st;
	}
	return NCC_OK;
}

static ncc_status_t emit_copy_fn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg, int n,
				 const isa_ap_t *aps)
{
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = aps[0];
	in.ap[1] = aps[1];
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_DMA, &in, NULL);
}

ncc_status_t ncc_lower_copy(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *dst,
			    const ncc_view_t *src)
{
	ncc_view_t v[2] = { *dst, *src };
	return for_views(ctx, inst, 2, v, emit_copy_fn, NULL);
}

static ncc_status_t emit_alu_fn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg, int n,
				const isa_ap_t *aps)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, *(uint32_t *)arg);
	in.n_ap = (uint8_t)n;
	for (int k = 0; k < n; k++)
		in.ap[k] = aps[k];
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &in, NULL);
}

ncc_status_t ncc_lower_alu(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t sub,
			   const ncc_view_t *dst, int n_in, const ncc_view_t *in)
{
	ncc_view_t v[ISA_MAX_AP];
	if (n_in < 1 || n_in > 3 || isa_alu_arity(sub) != n_in)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: ALU arity");
	v[0] = *dst;
	for (int k = 0; k < n_in; k++)
		v[k + 1] = in[k];
	return for_views(ctx, inst, n_in + 1, v, emit_alu_fn, &sub);
}

typedef struct act_arg {
	uint32_t func;
	double scale, bias;
} act_arg_t;

static ncc_status_t emit_act_fn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg, int n,
				const isa_ap_t *aps)
{
	act_arg_t *a = arg;
	isa_insn_t in = isa_insn_init(ISA_OP_ACTIVATE, a->func);
	in.n_ap = 2;
	in.ap[0] = aps[0];
	in.ap[1] = aps[1];
	in.imm[0] = a->scale;
	in.imm[1] = a->bias;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_SCALAR, &in, NULL);
}

ncc_status_t ncc_lower_act(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t func,
			   double scale, double bias, const ncc_view_t *dst, const ncc_view_t *src)
{
	act_arg_t a = { func, scale, bias };
	ncc_view_t v[2] = { *dst, *src };
	return for_views(ctx, inst, 2, v, emit_act_fn, &a);
}

/* REDUCE: dst_keep has src's rank with reduced dims of size 1. Dims are folded by
 * class (kept / reduced) so the rank fits the ISA. */
ncc_status_t ncc_lower_reduce_emit(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t comb,
				   const ncc_view_t *dst_keep, const ncc_view_t *src,
				   uint32_t mask, bool accumulate)
{
	int64_t dims[NCC_MAX_RANK], ss[NCC_MAX_RANK], ds[NCC_MAX_RANK];
	bool red[NCC_MAX_RANK];
	int32_t r = 0;
	for (int32_t d = 0; d < src->rank; d++) {
		if (src->dims[d] == 1)
			continue;
		if (src->dims[d] == 0 && !(mask & (1u << d)))
			return NCC_OK; /* empty output */
		dims[r] = src->dims[d];
		ss[r] = src->strides[d];
		ds[r] = (mask & (1u << d)) ? 0 : dst_keep->strides[d];
		red[r] = (mask & (1u << d)) != 0;
		r++;
	}
	int32_t w = 0;
	for (int32_t d = 0; d < r; d++) {
		if (w > 0 && red[w - 1] == red[d] && ss[w - 1] == ss[d] * dims[d] &&
		    (red[d] || ds[w - 1] == ds[d] * dims[d])) {
			dims[w - 1] *= dims[d];
			ss[w - 1] = ss[d];
			ds[w - 1] = ds[d];
			continue;
		}
		dims[w] = dims[d];
		ss[w] = ss[d];
		ds[w] = ds[d];
		red[w] = red[d];
		w++;
	}
	if (w > ISA_MAX_RANK)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
				      "unsupported reduction: rank %d after folding exceeds %d", w,
				      ISA_MAX_RANK);
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, comb);
	in.n_ap = 2;
	in.flags = accumulate ? ISA_F_ACCUMULATE : 0;
	isa_ap_t *o = &in.ap[0], *a = &in.ap[1];
	o->region = dst_keep->region;
	o->dtype = (uint8_t)dst_keep->dtype;
	o->offset = dst_keep->offset;
	a->region = src->region;
	a->dtype = (uint8_t)src->dtype;
	a->offset = src->offset;
	o->rank = a->rank = (uint8_t)w;
	uint32_t m = 0;
	for (int32_t d = 0; d < w; d++) {
		a->shape[d] = (uint64_t)dims[d];
		a->stride[d] = ss[d];
		o->shape[d] = red[d] ? 1 : (uint64_t)dims[d];
		o->stride[d] = ds[d];
		if (red[d])
			m |= 1u << d;
	}
	in.param = m;
	if (m == 0) {
		/* nothing to reduce (only size-1 dims): a plain copy, or a combine */
		if (!accumulate) {
			ncc_view_t d = *dst_keep, s = *src;
			return ncc_lower_copy(ctx, inst, &d, &s);
		}
	}
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &in, NULL);
}
