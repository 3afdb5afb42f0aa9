/* Lowering of dot (batch and contracting dims) to MATMUL over [B,M,K]x[B,K,N] access patterns, transposing or converting operands into temporaries only when their strides cannot fold. */
#include <string.h>

#include "lower_internal.h"

bool ncc_lower_dot_supports(const ncc_inst_t *inst, const char **out_reason)
{
	if (inst->op != NCC_OP_DOT)
		return false;
	if (!inst->dot) {
		*out_reason = "unsupported dot without dimension numbers";
		return false;
	}
	if (inst->shape.etype == NCC_PRED) {
		*out_reason = "unsupported dot with a pred result";
		return false;
	}
	return true;
}

/* Folds the dims `idx[0..n)` of v (in that order) into one (size, stride); false when
 * they are not evenly strided. Size-1 dims are skipped; no dims gives (1, 0). */
static bool fold(const ncc_view_t *v, const int64_t *idx, int32_t n, int64_t *out_size,
		 int64_t *out_stride)
{
	int64_t size = 1, stride = 0;
	int32_t last = -1;
	for (int32_t i = n - 1; i >= 0; i--) {
		int64_t d = idx[i];
		if (v->dims[d] == 1)
			continue;
		if (v->dims[d] == 0) {
			*out_size = 0;
			*out_stride = 0;
			return true;
		}
		if (last < 0)
			stride = v->strides[d];
		else if (v->strides[d] != v->strides[last] * v->dims[last])
			return false;
		size *= v->dims[d];
		last = (int32_t)d;
	}
	*out_size = size;
	*out_stride = stride;
	return true;
}

/* Folds v into a [g0, g1, g2] access pattern of the given dim groups; if that fails,
 * v is copied (converting to dt) into a dense temporary in the groups' order first. */
static ncc_status_t as3(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *v,
			isa_dtype_t dt, const int64_t *g[3], const int32_t gn[3], isa_ap_t *ap)
{
	int64_t sz[3], str[3];
	bool ok = v->dtype == dt;
	for (int k = 0; k < 3 && ok; k++)
		ok = fold(v, g[k], gn[k], &sz[k], &str[k]);
	if (!ok) {
		ncc_view_t p = *v;
		int32_t r = 0;
		for (int k = 0; k < 3; k++)
			for (int32_t i = 0; i < gn[k]; i++) {
				p.dims[r] = v->dims[g[k][i]];
				p.strides[r] = v->strides[g[k][i]];
				r++;
			}
		p.rank = r;
		ncc_view_t t;
		ncc_status_t st = ncc_lower_temp_view(ctx, dt, r, p.dims, &t);
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &t, &p);
		if (st != NCC_OK)
			return st;
		int32_t pos = 0;
		for (int k = 0; k < 3; k++) {
			int64_t s = 1;
			for (int32_t i = 0; i < gn[k]; i++)
				s *= t.dims[pos + i];
			sz[k] = s;
			int64_t inner = 1;
			for (int32_t i = pos + gn[k]; i < r; i++)
				inner *= t.dims[i];
			str[k] = inner;
			pos += gn[k];
		}
		memset(ap, 0, sizeof(*ap));
		ap->region = t.region;
		ap->offset = t.offset;
		ap->dtype = (uint8_t)dt;
	} else {
		memset(ap, 0, sizeof(*ap));
		ap->region = v->region;
		ap->offset = v->offset;
		ap->dtype = (uint8_t)dt;
	}
	ap->rank = 3;
	for (int k = 0; k < 3; k++) {
		ap->shape[k] = (uint64_t)sz[k];
		ap->stride[k] = sz[k] <= 1 ? 0 : str[k];
	}
	return NCC_OK;
}

ncc_status_t ncc_lower_dot(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t l, r, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &l);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &r);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	const ncc_dot_dnums_t *dn = inst->dot;
	int64_t lfree[NCC_MAX_RANK], rfree[NCC_MAX_RANK];
	int32_t nlf = 0, nrf = 0;
	for (int32_t d = 0; d < l.rank; d++) {
		bool used = false;
		for (int32_t i = 0; i < dn->lhs_batch.n; i++)
			used |= dn->lhs_batch.v[i] == d;
		for (int32_t i = 0; i < dn->lhs_contracting.n; i++)
			used |= dn->lhs_contracting.v[i] == d;
		if (!used)
			lfree[nlf++] = d;
	}
	for (int32_t d = 0; d < r.rank; d++) {
		bool used = false;
		for (int32_t i = 0; i < dn->rhs_batch.n; i++)
			used |= dn->rhs_batch.v[i] == d;
		for (int32_t i = 0; i < dn->rhs_contracting.n; i++)
			used |= dn->rhs_contracting.v[i] == d;
		if (!used)
			rfree[nrf++] = d;
	}
	/* operand dtype: both alike; integer inputs of a float dot compute in f32 */
	isa_dtype_t dt = l.dtype;
	if (isa_dtype_is_float(out.dtype) != isa_dtype_is_float(dt))
		dt = isa_dtype_is_float(out.dtype) ? ISA_DT_F32 : out.dtype;
	if (dt == ISA_DT_PRED)
		dt = ISA_DT_S32;
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	const int64_t *lg[3] = { dn->lhs_batch.v, lfree, dn->lhs_contracting.v };
	int32_t lgn[3] = { dn->lhs_batch.n, nlf, dn->lhs_contracting.n };
	const int64_t *rg[3] = { dn->rhs_batch.v, dn->rhs_contracting.v, rfree };
	int32_t rgn[3] = { dn->rhs_batch.n, dn->rhs_contracting.n, nrf };
	st = as3(ctx, inst, &l, dt, lg, lgn, &in.ap[1]);
	if (st == NCC_OK)
		st = as3(ctx, inst, &r, dt, rg, rgn, &in.ap[2]);
	if (st != NCC_OK)
		return st;
	/* the output is dense in (batch, lhs free, rhs free) order: always folds */
	int64_t og[3][NCC_MAX_RANK];
	int32_t ogn[3] = { dn->lhs_batch.n, nlf, nrf };
	int32_t pos = 0;
	for (int k = 0; k < 3; k++)
		for (int32_t i = 0; i < ogn[k]; i++)
			og[k][i] = pos++;
	const int64_t *ogp[3] = { og[0], og[1], og[2] };
	st = as3(ctx, inst, &out, out.dtype, ogp, ogn, &in.ap[0]);
	if (st != NCC_OK)
		return st;
	if (in.ap[0].shape[0] * in.ap[0].shape[1] * in.ap[0].shape[2] == 0)
		return NCC_OK;
	/* a zero-size contraction still writes zeros (MATMUL with K = 0 gives 0) */
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
}
