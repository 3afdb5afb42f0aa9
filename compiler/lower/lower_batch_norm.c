/* Lowering of batch-norm-training, -inference and -grad to REDUCE and ALU steps over [C] views broadcast along the feature dim. */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

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

ncc_status_t ncc_lower_batch_norm(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
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
