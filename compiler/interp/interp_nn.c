/* ncc reference interpreter: batch norm, the AwsNeuron custom-calls, rng-bit-generator and single-replica collectives. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

/* ------------------------------------------------------------ batch norm */

/* Views an operand as [outer][C][inner] around the feature dim. */
typedef struct bn_view {
	int64_t outer, C, inner;
} bn_view_t;

static ncc_status_t bn_view(ncc_interp_t *ip, const ncc_inst_t *inst, const ncc_value_t *x,
			    bn_view_t *v)
{
	int64_t f = inst->feature_index;
	if (f < 0 || f >= x->shape.rank || !ncc_is_fp(x->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "feature_index out of range or non-float operand");
	v->outer = v->inner = 1;
	for (int32_t d = 0; d < f; d++)
		v->outer *= x->shape.dims[d];
	for (int32_t d = (int32_t)f + 1; d < x->shape.rank; d++)
		v->inner *= x->shape.dims[d];
	v->C = x->shape.dims[f];
	return NCC_OK;
}

static ncc_status_t bn_check_vec(ncc_interp_t *ip, const ncc_inst_t *inst, const ncc_value_t *v,
				 int64_t C, const char *what)
{
	if (v->shape.rank != 1 || v->shape.dims[0] != C || !ncc_is_fp(v->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "%s must be a float vector of %" PRId64 " features", what, C);
	return NCC_OK;
}

/* mean and biased variance (divide by the count) per feature, two passes in f64
 * (perturbed as a device's rounded statistics under Monte Carlo arithmetic) */
static void bn_moments(ncc_interp_t *ip, const ncc_value_t *x, const bn_view_t *v, double *mean,
		       double *var)
{
	ncc_etype_t t = x->shape.etype;
	double cnt = (double)(v->outer * v->inner);
	for (int64_t c = 0; c < v->C; c++) {
		double s = 0;
		for (int64_t o = 0; o < v->outer; o++) {
			int64_t base = (o * v->C + c) * v->inner;
			if (t == NCC_F32) {
				const float *p = (const float *)x->data + base;
				for (int64_t i = 0; i < v->inner; i++)
					s += p[i];
			} else {
				for (int64_t i = 0; i < v->inner; i++)
					s += ncc_ld_f(t, x->data, base + i);
			}
		}
		double m = cnt > 0 ? s / cnt : 0;
		double q = 0;
		for (int64_t o = 0; o < v->outer; o++) {
			int64_t base = (o * v->C + c) * v->inner;
			if (t == NCC_F32) {
				const float *p = (const float *)x->data + base;
				for (int64_t i = 0; i < v->inner; i++) {
					double d = p[i] - m;
					q += d * d;
				}
				continue;
			}
			for (int64_t i = 0; i < v->inner; i++) {
				double d = ncc_ld_f(t, x->data, base + i) - m;
				q += d * d;
			}
		}
		mean[c] = ncc_interp_perturb_scalar(ip, t, m);
		var[c] = ncc_interp_perturb_scalar(ip, t, cnt > 0 ? q / cnt : 0);
	}
}

static void bn_normalize(const ncc_value_t *x, const bn_view_t *v, const ncc_value_t *scale,
			 const ncc_value_t *offset, const double *mean, const double *var,
			 double eps, ncc_value_t *out)
{
	ncc_etype_t t = x->shape.etype, ot = out->shape.etype;
	for (int64_t c = 0; c < v->C; c++) {
		double g = ncc_ld_f(scale->shape.etype, scale->data, c);
		double b = ncc_ld_f(offset->shape.etype, offset->data, c);
		double k = g / sqrt(var[c] + eps);
		for (int64_t o = 0; o < v->outer; o++) {
			int64_t base = (o * v->C + c) * v->inner;
			if (t == NCC_F32 && ot == NCC_F32) {
				const float *p = (const float *)x->data + base;
				float *q = (float *)out->data + base;
				for (int64_t i = 0; i < v->inner; i++)
					q[i] = (float)((p[i] - mean[c]) * k + b);
				continue;
			}
			for (int64_t i = 0; i < v->inner; i++)
				ncc_st_fp(ot, out->data, base + i, (ncc_ld_f(t, x->data, base + i) - mean[c]) * k + b);
		}
	}
}

ncc_status_t ncc_eval_batch_norm_training(ncc_interp_t *ip, const ncc_inst_t *inst,
					  const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *x = ops[0];
	bn_view_t v = {0};
	ncc_status_t st;
	if (inst->noperands != 3 || out->shape.etype != NCC_TUPLE || out->nelems != 3)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "batch-norm-training takes 3 operands and returns 3 values");
	if ((st = bn_view(ip, inst, x, &v)) != NCC_OK || (st = bn_check_vec(ip, inst, ops[1], v.C, "scale")) != NCC_OK ||
	    (st = bn_check_vec(ip, inst, ops[2], v.C, "offset")) != NCC_OK ||
	    (st = bn_check_vec(ip, inst, out->elems[1], v.C, "batch_mean")) != NCC_OK ||
	    (st = bn_check_vec(ip, inst, out->elems[2], v.C, "batch_var")) != NCC_OK)
		return st;
	if (out->elems[0]->nbytes != x->nbytes)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "output 0 differs from the operand");
	double *mean = calloc((size_t)v.C + 1, sizeof(double)), *var = calloc((size_t)v.C + 1, sizeof(double));
	if (!mean || !var) {
		free(mean);
		free(var);
		return NCC_ERR_NOMEM;
	}
	bn_moments(ip, x, &v, mean, var);
	bn_normalize(x, &v, ops[1], ops[2], mean, var, inst->epsilon, out->elems[0]);
	for (int64_t c = 0; c < v.C; c++) {
		ncc_st_fp(out->elems[1]->shape.etype, out->elems[1]->data, c, mean[c]);
		ncc_st_fp(out->elems[2]->shape.etype, out->elems[2]->data, c, var[c]);
	}
	free(mean);
	free(var);
	return NCC_OK;
}

ncc_status_t ncc_eval_batch_norm_inference(ncc_interp_t *ip, const ncc_inst_t *inst,
					   const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *x = ops[0];
	bn_view_t v = {0};
	ncc_status_t st;
	if (inst->noperands != 5)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "batch-norm-inference takes 5 operands");
	if ((st = bn_view(ip, inst, x, &v)) != NCC_OK)
		return st;
	for (int32_t k = 1; k < 5; k++)
		if ((st = bn_check_vec(ip, inst, ops[k], v.C, "scale/offset/mean/variance")) != NCC_OK)
			return st;
	if (out->nbytes != x->nbytes)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "result differs from the operand");
	double *mean = calloc((size_t)v.C + 1, sizeof(double)), *var = calloc((size_t)v.C + 1, sizeof(double));
	if (!mean || !var) {
		free(mean);
		free(var);
		return NCC_ERR_NOMEM;
	}
	for (int64_t c = 0; c < v.C; c++) {
		mean[c] = ncc_ld_f(ops[3]->shape.etype, ops[3]->data, c);
		var[c] = ncc_ld_f(ops[4]->shape.etype, ops[4]->data, c);
	}
	bn_normalize(x, &v, ops[1], ops[2], mean, var, inst->epsilon, out);
	free(mean);
	free(var);
	return NCC_OK;
}

ncc_status_t ncc_eval_batch_norm_grad(ncc_interp_t *ip, const ncc_inst_t *inst,
				      const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *x = ops[0], *scale = ops[1], *mean = ops[2], *var = ops[3], *dy = ops[4];
	bn_view_t v = {0};
	ncc_status_t st;
	if (inst->noperands != 5 || out->shape.etype != NCC_TUPLE || out->nelems != 3)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "batch-norm-grad takes 5 operands and returns 3 values");
	if ((st = bn_view(ip, inst, x, &v)) != NCC_OK)
		return st;
	for (int32_t k = 1; k < 4; k++)
		if ((st = bn_check_vec(ip, inst, ops[k], v.C, "scale/mean/variance")) != NCC_OK)
			return st;
	if (dy->nbytes != x->nbytes || dy->shape.etype != x->shape.etype || out->elems[0]->nbytes != x->nbytes)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "grad_output and grad_operand must match the operand");
	ncc_etype_t t = x->shape.etype;
	ncc_value_t *dx = out->elems[0], *dscale = out->elems[1], *doffset = out->elems[2];
	double cnt = (double)(v.outer * v.inner);
	double eps = inst->epsilon;
	bool perturb = ip->opts.perturb_ulps > 0 && ip->scalar_depth == 0;
	for (int64_t c = 0; c < v.C; c++) {
		double m = ncc_ld_f(mean->shape.etype, mean->data, c);
		double rstd = 1.0 / sqrt(ncc_ld_f(var->shape.etype, var->data, c) + eps);
		double g = ncc_ld_f(scale->shape.etype, scale->data, c);
		double sum_dy = 0, sum_dy_xc = 0;
		for (int64_t o = 0; o < v.outer; o++) {
			int64_t base = (o * v.C + c) * v.inner;
			if (t == NCC_F32) {
				const float *pd = (const float *)dy->data + base, *px = (const float *)x->data + base;
				for (int64_t i = 0; i < v.inner; i++) {
					sum_dy += pd[i];
					sum_dy_xc += pd[i] * (px[i] - m);
				}
				continue;
			}
			for (int64_t i = 0; i < v.inner; i++) {
				double d = ncc_ld_f(t, dy->data, base + i);
				sum_dy += d;
				sum_dy_xc += d * (ncc_ld_f(t, x->data, base + i) - m);
			}
		}
		sum_dy = ncc_interp_perturb_scalar(ip, t, sum_dy);
		sum_dy_xc = ncc_interp_perturb_scalar(ip, t, sum_dy_xc);
		/* grad_x = scale * rstd * (dy - mean(dy) - (x - mean) * rstd^2 * mean(dy * (x - mean))) */
		for (int64_t o = 0; o < v.outer; o++) {
			int64_t base = (o * v.C + c) * v.inner;
			if (perturb) {
				/* Monte Carlo arithmetic: the two terms subtracted from dy are
				 * rounded at their own magnitude before they cancel, as any f32
				 * implementation forms them (their rounding, not dx's, is the
				 * error when dx is much smaller than dy) */
				double mdy = sum_dy / cnt, k1 = rstd * rstd * sum_dy_xc / cnt;
				for (int64_t i = 0; i < v.inner; i++) {
					double d = ncc_interp_perturb_scalar(ip, t, ncc_ld_f(t, dy->data, base + i));
					double xk = ncc_interp_perturb_scalar(
						ip, t, (ncc_ld_f(t, x->data, base + i) - m) * k1);
					ncc_st_fp(dx->shape.etype, dx->data, base + i, g * rstd * (d - mdy - xk));
				}
				continue;
			}
			if (t == NCC_F32 && dx->shape.etype == NCC_F32) {
				const float *pd = (const float *)dy->data + base, *px = (const float *)x->data + base;
				float *q = (float *)dx->data + base;
				double k0 = g * rstd, mdy = sum_dy / cnt, k1 = rstd * rstd * sum_dy_xc / cnt;
				for (int64_t i = 0; i < v.inner; i++)
					q[i] = (float)(k0 * (pd[i] - mdy - (px[i] - m) * k1));
				continue;
			}
			for (int64_t i = 0; i < v.inner; i++) {
				double d = ncc_ld_f(t, dy->data, base + i);
				double xc = ncc_ld_f(t, x->data, base + i) - m;
				double r = g * rstd * (d - sum_dy / cnt - xc * rstd * rstd * sum_dy_xc / cnt);
				ncc_st_fp(dx->shape.etype, dx->data, base + i, r);
			}
		}
		ncc_st_fp(dscale->shape.etype, dscale->data, c, sum_dy_xc * rstd);
		ncc_st_fp(doffset->shape.etype, doffset->data, c, sum_dy);
	}
	return NCC_OK;
}

/* ------------------------------------------------------------ custom calls */

bool ncc_custom_call_supported(const char *target)
{
	static const char *const known[] = {
		"AwsNeuronTransferWithStaticRing", "AwsNeuronGelu", "AwsNeuronGeluApprxTanh",
		"AwsNeuronGeluBackward", "AwsNeuronSoftmax", "AwsNeuronSoftmaxBackward",
		"AwsNeuronErf", "AwsNeuronSilu",
	};
	if (!target)
		return false;
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
		if (strcmp(target, known[k]) == 0)
			return true;
	return false;
}

static double gelu_erf(double x)
{
	return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
}

static double gelu_tanh(double x)
{
	const double k = 0.7978845608028654; /* sqrt(2/pi) */
	return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* d/dx of the erf form: Phi(x) + x * phi(x) */
static double gelu_erf_grad(double x)
{
	const double inv_sqrt_2pi = 0.3989422804014327;
	return 0.5 * (1.0 + erf(x * M_SQRT1_2)) + x * inv_sqrt_2pi * exp(-0.5 * x * x);
}

/* The softmax axis: backend_config holds its decimal text; absent means the last
 * dim; negative counts from the end. */
static ncc_status_t softmax_dim(ncc_interp_t *ip, const ncc_inst_t *inst, int32_t rank, int64_t *out_dim)
{
	int64_t d = rank - 1;
	const char *cfg = inst->backend_config;
	if (cfg && *cfg) {
		char *end;
		errno = 0;
		long long v = strtoll(cfg, &end, 10);
		while (*end == ' ')
			end++;
		if (errno || end == cfg || *end)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
					       "backend_config '%s' is not a dimension number", cfg);
		d = v < 0 ? v + rank : v;
	}
	if (d < 0 || d >= rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "softmax dimension %" PRId64 " out of range", d);
	*out_dim = d;
	return NCC_OK;
}

static ncc_status_t eval_softmax(ncc_interp_t *ip, const ncc_inst_t *inst,
				 const ncc_value_t *const *ops, ncc_value_t *out, bool backward)
{
	const ncc_value_t *y = ops[0];
	int32_t rank = y->shape.rank;
	int64_t dim = 0;
	ncc_status_t st = softmax_dim(ip, inst, rank, &dim);
	if (st != NCC_OK)
		return st;
	if (backward && (inst->noperands != 2 || ops[1]->nbytes != y->nbytes || ops[1]->shape.etype != y->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "AwsNeuronSoftmaxBackward takes (y, dL/dy) of one shape");
	if (out->nbytes != y->nbytes || out->shape.etype != y->shape.etype)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "result must have the operand's shape");
	int64_t outer = 1, inner = 1, n = y->shape.dims[dim];
	for (int32_t d = 0; d < dim; d++)
		outer *= y->shape.dims[d];
	for (int32_t d = (int32_t)dim + 1; d < rank; d++)
		inner *= y->shape.dims[d];
	ncc_etype_t t = y->shape.etype;
	double *row = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!row)
		return NCC_ERR_NOMEM;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t base = o * n * inner + i;
			if (!backward) {
				double mx = -INFINITY, sum = 0;
				for (int64_t k = 0; k < n; k++) {
					row[k] = ncc_ld_f(t, y->data, base + k * inner);
					if (row[k] > mx || row[k] != row[k])
						mx = row[k];
				}
				for (int64_t k = 0; k < n; k++) {
					row[k] = exp(row[k] - mx);
					sum += row[k];
				}
				for (int64_t k = 0; k < n; k++)
					ncc_st_fp(t, out->data, base + k * inner, row[k] / sum);
			} else {
				/* dL/dx = y * (dL/dy - sum(dL/dy * y)) */
				double s = 0;
				for (int64_t k = 0; k < n; k++)
					s += ncc_ld_f(t, y->data, base + k * inner) * ncc_ld_f(t, ops[1]->data, base + k * inner);
				for (int64_t k = 0; k < n; k++) {
					double yv = ncc_ld_f(t, y->data, base + k * inner);
					double g = ncc_ld_f(t, ops[1]->data, base + k * inner);
					ncc_st_fp(t, out->data, base + k * inner, yv * (g - s));
				}
			}
		}
	free(row);
	return NCC_OK;
}

ncc_status_t ncc_eval_custom_call(ncc_interp_t *ip, const ncc_inst_t *inst,
				  const ncc_value_t *const *ops, ncc_value_t *out)
{
	const char *tg = inst->custom_call_target ? inst->custom_call_target : "";
	if (strcmp(tg, "AwsNeuronTransferWithStaticRing") == 0) {
		/* a placement hint: the value passes through unchanged */
		if (inst->noperands != 1 || ops[0]->nbytes != out->nbytes || ops[0]->shape.etype != out->shape.etype)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "%s must return its operand's shape", tg);
		if (out->nbytes)
			memcpy(out->data, ops[0]->data, out->nbytes);
		return NCC_OK;
	}
	if (strcmp(tg, "AwsNeuronSoftmax") == 0 || strcmp(tg, "AwsNeuronSoftmaxBackward") == 0)
		return eval_softmax(ip, inst, ops, out, strcmp(tg, "AwsNeuronSoftmaxBackward") == 0);
	double (*f)(double) = NULL;
	if (strcmp(tg, "AwsNeuronGelu") == 0)
		f = gelu_erf;
	else if (strcmp(tg, "AwsNeuronGeluApprxTanh") == 0)
		f = gelu_tanh;
	else if (strcmp(tg, "AwsNeuronGeluBackward") == 0)
		f = gelu_erf_grad;
	else if (strcmp(tg, "AwsNeuronErf") == 0)
		f = erf;
	if (!f && strcmp(tg, "AwsNeuronSilu") != 0)
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED, "custom-call target '%s' is not known", tg);
	if (inst->noperands != 1 || ops[0]->nbytes != out->nbytes || ops[0]->shape.etype != out->shape.etype ||
	    !ncc_is_fp(out->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED,
				       "%s is evaluated with one float operand of the result's shape", tg);
	ncc_etype_t t = out->shape.etype;
	int64_t n = ncc_value_elements(out);
	for (int64_t i = 0; i < n; i++) {
		double x = ncc_ld_f(t, ops[0]->data, i);
		ncc_st_fp(t, out->data, i, f ? f(x) : x / (1.0 + exp(-x)));
	}
	return NCC_OK;
}

/* ------------------------------------------------------------ rng-bit-generator */

/* Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"). */
static void philox4x32(uint32_t ctr[4], uint32_t k0, uint32_t k1)
{
	for (int r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
		uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ k0;
		uint32_t n1 = (uint32_t)p1;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
		uint32_t n3 = (uint32_t)p0;
		ctr[0] = n0;
		ctr[1] = n1;
		ctr[2] = n2;
		ctr[3] = n3;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
}

ncc_status_t ncc_eval_rng_bit_generator(ncc_interp_t *ip, const ncc_inst_t *inst,
					const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *state = ops[0];
	if (inst->rng_algorithm == NCC_RNG_THREE_FRY)
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED, "algorithm=rng_three_fry is not implemented");
	if (state->shape.etype != NCC_U64 || state->shape.rank != 1 || state->shape.dims[0] < 2 ||
	    state->shape.dims[0] > 3 || out->shape.etype != NCC_TUPLE || out->nelems != 2 ||
	    out->elems[0]->nbytes != state->nbytes)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
				       "rng-bit-generator takes u64[2] or u64[3] state and returns (state, bits)");
	ncc_value_t *bits = out->elems[1];
	ncc_etype_t t = bits->shape.etype;
	if (!ncc_etype_is_integral(t) && !ncc_is_fp(t))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "bits must be an integer or float type");
	const uint64_t *s = state->data;
	uint64_t key = s[0], c_lo = s[1], c_hi = state->shape.dims[0] > 2 ? s[2] : 0;
	uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
	int64_t n = ncc_value_elements(bits);
	bool wide = ncc_etype_bits(t) == 64;
	int64_t per = wide ? 2 : 4; /* elements per Philox block */
	int64_t blocks = (n + per - 1) / per;
	for (int64_t b = 0; b < blocks; b++) {
		/* block b uses counter + b (128-bit add) */
		uint64_t lo = c_lo + (uint64_t)b, hi = c_hi + (lo < c_lo ? 1 : 0);
		uint32_t ctr[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32)};
		philox4x32(ctr, k0, k1);
		for (int64_t j = 0; j < per && b * per + j < n; j++) {
			int64_t i = b * per + j;
			uint64_t v = wide ? ((uint64_t)ctr[2 * j + 1] << 32 | ctr[2 * j]) : ctr[j];
			switch (ncc_etype_storage_bytes(t)) {
			case 1: ((uint8_t *)bits->data)[i] = (uint8_t)v; break;
			case 2: ((uint16_t *)bits->data)[i] = (uint16_t)v; break;
			case 4: ((uint32_t *)bits->data)[i] = (uint32_t)v; break;
			default: ((uint64_t *)bits->data)[i] = v; break;
			}
		}
	}
	uint64_t *ns = out->elems[0]->data;
	uint64_t lo = c_lo + (uint64_t)blocks;
	ns[0] = key;
	ns[1] = lo;
	if (state->shape.dims[0] > 2)
		ns[2] = c_hi + (lo < c_lo ? 1 : 0);
	return NCC_OK;
}

/* ------------------------------------------------------------ collectives */

ncc_status_t ncc_eval_collective(ncc_interp_t *ip, const ncc_inst_t *inst,
				 const ncc_value_t *const *ops, ncc_value_t *out)
{
	if (inst->op == NCC_OP_REPLICA_ID || inst->op == NCC_OP_PARTITION_ID) {
		ncc_value_set_i64(out, 0, inst->op == NCC_OP_REPLICA_ID ? ip->opts.replica_id : 0);
		return NCC_OK;
	}
	if (inst->op == NCC_OP_COLLECTIVE_PERMUTE) {
		/* one replica: it receives its own data only from a (0, 0) pair, else zeros */
		bool self = false;
		for (int32_t k = 0; k < inst->npairs; k++)
			if (inst->pairs[2 * k] == ip->opts.replica_id && inst->pairs[2 * k + 1] == ip->opts.replica_id)
				self = true;
		if (!self)
			return NCC_OK;
	}
	/* over one replica every collective returns its operands: all-reduce sums one
	 * value, all-gather concatenates one piece, reduce-scatter keeps the whole */
	int32_t n = inst->noperands;
	for (int32_t k = 0; k < n; k++) {
		ncc_value_t *dst = n == 1 && out->shape.etype != NCC_TUPLE ? out
				   : (out->shape.etype == NCC_TUPLE && k < out->nelems ? out->elems[k] : NULL);
		if (!dst || dst->nbytes != ops[k]->nbytes || dst->shape.etype != ops[k]->shape.etype)
			return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED,
					       "collective over more than one replica (result differs from operand %d)", k);
		if (dst->nbytes)
			memcpy(dst->data, ops[k]->data, dst->nbytes);
	}
	return NCC_OK;
}
