/* Elementwise kernels: ALU unary/binary/ternary, ACTIVATE and COPY (with dtype conversion). */
#include <math.h>
#include <stdlib.h>

#include "alu_ops.h"
#include "convert.h"
#include "internal.h"
#include "pool.h"

/* The cheap float ops with the NaN/Inf test fused into the same loop: each
 * result is tested in a register as it is produced (a running max of |x| as
 * bits; for non-negative floats the unsigned bit order is the numeric order,
 * NaN above Inf), so checking costs two integer ops per vector and no second
 * pass. Returns non-zero when some |result| >= lim (bias = 2^31 - lim, see
 * fwsim_numchk_bias); the caller then runs the exact count. Other ops are
 * dominated by their math and use the separate scan. */
#define CMAP(EXPR)                                                  \
	for (size_t i = 0; i < n; i++) {                            \
		float x = a[i], y = b[i], z = c[i];                 \
		(void)y; (void)z;                                   \
		float r_ = (EXPR);                                  \
		uint32_t u_;                                        \
		memcpy(&u_, &r_, 4);                                \
		u_ &= 0x7fffffffu;                                  \
		acc = u_ > acc ? u_ : acc;                          \
		o[i] = r_;                                          \
	}                                                           \
	break

static int alu_f32_fusable(uint32_t op)
{
	switch (op) {
	case ISA_ALU_NEG: case ISA_ALU_ABS: case ISA_ALU_SQUARE: case ISA_ALU_ADD:
	case ISA_ALU_SUB: case ISA_ALU_MUL: case ISA_ALU_MAX: case ISA_ALU_MIN:
	case ISA_ALU_FMA: case ISA_ALU_SELECT: case ISA_ALU_CLAMP:
		return 1;
	default:
		return 0;
	}
}

FWSIM_TARGET_CLONES
static uint32_t alu_f32_checked(uint32_t op, size_t n, float *o, const float *a,
				const float *b, const float *c, uint32_t bias)
{
	uint32_t acc = 0;
	/* unused operands alias a so every load is unconditional (vectorises
	 * without masked loads) */
	b = b ? b : a;
	c = c ? c : a;
	switch (op) {
	case ISA_ALU_NEG: CMAP(-x);
	case ISA_ALU_ABS: CMAP(fabsf(x));
	case ISA_ALU_SQUARE: CMAP(x * x);
	case ISA_ALU_ADD: CMAP(x + y);
	case ISA_ALU_SUB: CMAP(x - y);
	case ISA_ALU_MUL: CMAP(x * y);
	case ISA_ALU_MAX: CMAP(f_max(x, y));
	case ISA_ALU_MIN: CMAP(f_min(x, y));
	case ISA_ALU_FMA: CMAP(fmaf(x, y, z));
	case ISA_ALU_SELECT: CMAP(x != 0 ? y : z);
	case ISA_ALU_CLAMP: CMAP(f_min(f_max(y, x), z));
	}
	return acc >= 0x80000000u - bias;
}

/* ---- the blocked elementwise driver ---- */

static int is_direct_f32(uint32_t dt, int64_t bs, const uint8_t *p)
{
	return dt == ISA_DT_F32 && bs == 4 && ((uintptr_t)p & 3u) == 0;
}

typedef enum { EW_ALU, EW_ACT, EW_COPY } ew_kind_t;

static float act_f32(uint32_t func, float t);

static void act_block(uint32_t func, float scale, float bias, size_t n, float *o, const float *a)
{
	switch (func) {
	case ISA_ACT_IDENTITY: for (size_t i = 0; i < n; i++) o[i] = a[i] * scale + bias; return;
	case ISA_ACT_RELU:
		for (size_t i = 0; i < n; i++) {
			float t = a[i] * scale + bias;
			o[i] = t < 0 ? 0.0f : t; /* NaN passes through */
		}
		return;
	default:
		for (size_t i = 0; i < n; i++)
			o[i] = act_f32(func, a[i] * scale + bias);
	}
}

static float act_f32(uint32_t func, float t)
{
	switch (func) {
	case ISA_ACT_IDENTITY: return t;
	case ISA_ACT_RELU: return t < 0 ? 0.0f : t;
	case ISA_ACT_GELU: return 0.5f * t * (1.0f + erff(t * 0.70710678118654752f));
	case ISA_ACT_GELU_TANH:
		return 0.5f * t * (1.0f + tanhf(0.7978845608028654f * (t + 0.044715f * t * t * t)));
	case ISA_ACT_TANH: return tanhf(t);
	case ISA_ACT_LOGISTIC: return f_logistic(t);
	case ISA_ACT_EXP: return expf(t);
	case ISA_ACT_LOG: return logf(t);
	case ISA_ACT_SQRT: return sqrtf(t);
	case ISA_ACT_RSQRT: return 1.0f / sqrtf(t);
	case ISA_ACT_SILU: return t * f_logistic(t);
	case ISA_ACT_SOFTPLUS: return (t > 0 ? t : 0.0f) + log1pf(expf(-fabsf(t)));
	case ISA_ACT_RECIPROCAL: return 1.0f / t;
	case ISA_ACT_SQUARE: return t * t;
	default: return 0;
	}
}

/* Runs an elementwise instruction block by block: gather each operand block
 * into an f32 or i64 temporary (or use contiguous f32 in place), compute,
 * scan the fresh results for NaN/Inf while they are in L1, store with
 * conversion. */
/* Runs the rows of it (the whole instruction's, or one item's part of them),
 * the first at flat element index flat. */
static fwsim_status_t ew_rows(const fwsim_kargs_t *k, ew_kind_t kind, fwsim_iter_t it, uint64_t flat)
{
	const isa_insn_t *in = k->insn;
	uint32_t nin = kind == EW_ALU ? (uint32_t)isa_alu_arity(in->sub) : 1;
	uint32_t n = nin + 1;
	const isa_ap_t *aps[ISA_MAX_AP];
	for (uint32_t i = 0; i < n; i++)
		aps[i] = &in->ap[i];

	/* Compute class: the dtype that decides float vs integer arithmetic. */
	uint32_t cdt = in->ap[kind == EW_ALU && in->sub == ISA_ALU_SELECT ? 2 : 1].dtype;
	uint32_t odt = in->ap[0].dtype;
	int use_f = kind == EW_ACT || isa_dtype_is_float(cdt) ||
		    (kind == EW_COPY && isa_dtype_is_float(odt));
	int raw = kind == EW_COPY && cdt == odt;
	fwsim_ity_t t = fwsim_ity_of(cdt);
	float scale = (float)in->imm[0], bias = (float)in->imm[1];
	uint32_t chk_bias = k->chk ? fwsim_numchk_bias(k->chk) : 0;

	_Alignas(64) float fb[ISA_MAX_AP][FWSIM_BLOCK];
	_Alignas(64) int64_t ib[ISA_MAX_AP][FWSIM_BLOCK];
	do {
		for (uint64_t j = 0; j < it.inner; j += FWSIM_BLOCK) {
			size_t m = it.inner - j < FWSIM_BLOCK ? it.inner - j : FWSIM_BLOCK;
			if (fwsim_tick(k, m))
				return FWSIM_TIMEOUT;
			uint8_t *p[ISA_MAX_AP];
			for (uint32_t i = 0; i < n; i++)
				p[i] = k->base[i] + it.off[i] + (int64_t)j * it.inner_bs[i];
			if (raw) {
				fwsim_copy_raw(p[0], it.inner_bs[0], p[1], it.inner_bs[1], m,
					       isa_dtype_size(odt));
				/* a fill (zero padding) of a good value needs no scan */
				bool fill_ok = false;
				if (k->chk && it.inner_bs[1] == 0) {
					fwsim_numchk_t one = *k->chk;
					float v0;
					one.count = 0;
					one.first = UINT64_MAX;
					fwsim_load_f32(odt, p[1], 0, 1, &v0);
					fwsim_numchk_block(&one, &v0, 1, 0);
					fill_ok = one.count == 0;
				}
				if (k->chk && !fill_ok) {
					/* contiguous f32 is scanned where it was written */
					const float *v = fb[0];
					if (is_direct_f32(odt, it.inner_bs[0], p[0]))
						v = (const float *)(const void *)p[0];
					else
						fwsim_load_f32(odt, p[0], it.inner_bs[0], m, fb[0]);
					fwsim_numchk_block(k->chk, v, m, flat);
				}
			} else if (use_f) {
				const float *src[ISA_MAX_AP];
				for (uint32_t i = 1; i < n; i++) {
					if (is_direct_f32(aps[i]->dtype, it.inner_bs[i], p[i])) {
						src[i] = (const float *)(const void *)p[i];
					} else {
						fwsim_load_f32(aps[i]->dtype, p[i], it.inner_bs[i], m, fb[i]);
						src[i] = fb[i];
					}
				}
				int direct_out = is_direct_f32(odt, it.inner_bs[0], p[0]);
				float *dst = direct_out ? (float *)(void *)p[0] : fb[0];
				if (kind == EW_ALU && k->chk && alu_f32_fusable(in->sub)) {
					if (alu_f32_checked(in->sub, m, dst, src[1], n > 2 ? src[2] : NULL,
							    n > 3 ? src[3] : NULL, chk_bias))
						fwsim_numchk_block(k->chk, dst, m, flat);
					goto stored;
				} else if (kind == EW_ALU)
					fwsim_alu_f32(in->sub, m, dst, src[1], n > 2 ? src[2] : NULL,
						n > 3 ? src[3] : NULL);
				else if (kind == EW_ACT)
					act_block(in->sub, scale, bias, m, dst, src[1]);
				else
					for (size_t e = 0; e < m; e++)
						dst[e] = src[1][e];
				if (k->chk)
					fwsim_numchk_block(k->chk, dst, m, flat);
			stored:
				if (!direct_out)
					fwsim_store_f32(odt, p[0], it.inner_bs[0], m, dst);
			} else {
				for (uint32_t i = 1; i < n; i++)
					fwsim_load_i64(aps[i]->dtype, p[i], it.inner_bs[i], m, ib[i]);
				if (kind == EW_ALU)
					fwsim_alu_i64(in->sub, t, m, ib[0], ib[1], n > 2 ? ib[2] : NULL,
						n > 3 ? ib[3] : NULL);
				else
					for (size_t e = 0; e < m; e++)
						ib[0][e] = ib[1][e];
				fwsim_store_i64(odt, p[0], it.inner_bs[0], m, ib[0], t.uns);
			}
			flat += m;
		}
	} while (fwsim_iter_next(&it));
	return FWSIM_OK;
}

/* One elementwise instruction cut into items: ranges of its outermost iterator
 * dim, each run whole by one thread with its own share of the NaN/Inf scan. */
typedef struct ew_job {
	const fwsim_kargs_t *k;
	ew_kind_t kind;
	fwsim_iter_t it;
	uint64_t per_outer; /* elements per index of the outermost dim */
	uint64_t chunk;     /* outer indices per item */
	fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS];
} ew_job_t;

static fwsim_status_t ew_item(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	ew_job_t *j = ctx;
	fwsim_kargs_t kk = *j->k;
	kk.watch = w;
	kk.chk = j->k->chk ? &j->chk[slot] : NULL;
	fwsim_iter_t it = j->it;
	uint64_t a = item * j->chunk, b = a + j->chunk < it.shape[0] ? a + j->chunk : it.shape[0];
	it.rows = it.rows / it.shape[0] * (b - a);
	it.shape[0] = b - a;
	for (uint32_t i = 0; i < it.n; i++)
		it.off[i] += (int64_t)a * it.bstride[i][0];
	return ew_rows(&kk, j->kind, it, a * j->per_outer);
}

/* Runs an elementwise instruction; one of at least FWSIM_PAR_MIN_EW elements
 * whose rows span two dims or more is cut into about FWSIM_PAR_ITEMS ranges
 * of its outermost dim for the pool (pool.h): every element is computed by
 * the same code whoever runs it, so the results do not depend on the thread
 * count, and the scans' counts and first indices merge exactly. */
static fwsim_status_t ew_run(const fwsim_kargs_t *k, ew_kind_t kind)
{
	const isa_insn_t *in = k->insn;
	uint32_t n = (kind == EW_ALU ? (uint32_t)isa_alu_arity(in->sub) : 1) + 1;
	const isa_ap_t *aps[ISA_MAX_AP];
	for (uint32_t i = 0; i < n; i++)
		aps[i] = &in->ap[i];
	fwsim_iter_t it;
	fwsim_iter_init_aps(&it, &in->ap[0], n, aps);
	if (it.empty)
		return FWSIM_OK;
	uint64_t total = it.rows * it.inner;
	if (it.rank < 2 || total < FWSIM_PAR_MIN_EW || fwsim_get_threads() < 2)
		return ew_rows(k, kind, it, 0);
	ew_job_t *j = malloc(sizeof(*j));
	if (!j)
		return ew_rows(k, kind, it, 0);
	j->k = k;
	j->kind = kind;
	j->it = it;
	j->per_outer = total / it.shape[0];
	j->chunk = (it.shape[0] + FWSIM_PAR_ITEMS - 1) / FWSIM_PAR_ITEMS;
	for (uint32_t i = 0; k->chk && i < FWSIM_PAR_MAX_THREADS; i++) {
		j->chk[i] = *k->chk;
		j->chk[i].count = 0;
		j->chk[i].first = UINT64_MAX;
	}
	uint64_t items = (it.shape[0] + j->chunk - 1) / j->chunk;
	fwsim_status_t st = fwsim_par_for(items, ew_item, j, k->watch);
	for (uint32_t i = 0; k->chk && i < FWSIM_PAR_MAX_THREADS; i++)
		fwsim_numchk_merge(k->chk, &j->chk[i]);
	free(j);
	return st;
}

fwsim_status_t fwsim_kernel_alu(const fwsim_kargs_t *k)
{
	return ew_run(k, EW_ALU);
}

fwsim_status_t fwsim_kernel_activate(const fwsim_kargs_t *k)
{
	return ew_run(k, EW_ACT);
}

fwsim_status_t fwsim_kernel_copy(const fwsim_kargs_t *k)
{
	return ew_run(k, EW_COPY);
}
