/* SELSCAT (ISA 1.5): select-and-scatter, a max-pool's gradient, one pass over each (n, c) plane's windows on the unpadded operand. */
#include <stdlib.h>

#include "alu_ops.h"
#include "convert.h"
#include "internal.h"
#include "pool.h"

/*
 * Why an instruction of its own: the compiler's select-and-scatter built it
 * from a -inf padded copy of the operand, a padded output, an im2col COPY of
 * every window, a FUSED program finding each window's selected offset, a
 * SCATTER of the source there and a crop: ResNet-18 b8's max-pool gradient
 * over [8, 64, 32, 32] took 6.3 ms a step (0.44 GFLOP/s), in 11 instructions
 * and about 10 MB of temporaries. Here each window is one walk over its
 * positions inside the operand (padding skipped, as XLA's evaluator does):
 * 16 windows a lane group on AVX-512, 8 on AVX2, the selection blended by
 * the compare's mask (a scalar walk's branch on random data missed half the
 * time: 6-7 ms), then one read-modify-write of the output per window, in
 * order. That gradient alone: 0.82 ms (the old lowering's 2.55); capped to
 * AVX2 0.98 (3.25); scalar 3.99 (4.50).
 *
 * Windows of different (n, c) planes never touch each other's outputs, so
 * items are ranges of planes; inside a plane windows run in ap2's row-major
 * order, as XLA applies them: the same bits on any number of threads.
 */

/* Most items one instruction is cut into. */
#define SELSCAT_ITEMS 64
/* Most window positions of the vector walk (its tap table). */
#define SELSCAT_VEC_TAPS 4096

typedef struct ss_job {
	const fwsim_kargs_t *k;
	int64_t C, X[2], Y[2], K[2], S[2], D[2], P[2];
	int64_t so[4], sx[4], ss[4]; /* element strides of ap0, ap1, ap2 */
	float *out;
	const float *x, *src;
	uint32_t cmp, op, dt;         /* dt: the operands' one float dtype */
	uint64_t planes, per_item;
	int64_t *taps[2];            /* per window y of dim s: its k in [taps[2y], taps[2y + 1]) */
	int lanes;                   /* 16 (AVX-512), 8 (AVX2) or 0: windows walked at once,
				      * in runs with every tap along dim 1 */
	int64_t *toff;               /* vec: tap t = k0 K1 + k1 at element offset toff[t] */
} ss_job_t;

/* The k whose positions y S + k D - P lie in [0, X), as [*lo, *hi). */
static void ss_taps(int64_t y, int64_t X, int64_t K, int64_t S, int64_t D, int64_t P, int64_t *lo,
		    int64_t *hi)
{
	int64_t j = y * S - P; /* position of k = 0 */
	int64_t a = j >= 0 ? 0 : (-j + D - 1) / D;
	int64_t b = X - 1 - j >= 0 ? (X - 1 - j) / D + 1 : 0;
	*lo = a < K ? a : K;
	*hi = b < K ? (b < *lo ? *lo : b) : K;
}

static inline bool ss_keep(uint32_t cmp, float a, float b)
{
	switch (cmp) {
	case ISA_ALU_CMP_GE: return a >= b;
	case ISA_ALU_CMP_GT: return a > b;
	case ISA_ALU_CMP_LE: return a <= b;
	default: return a < b;
	}
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>

/* Windows y1 in [y, y + m) (m <= 16) of output row y0 (taps k0 in [a0, b0),
 * every k1): the walk of each window in a lane, positions gathered 16
 * windows at a time and the selection blended by the compare's mask
 * (random data made the scalar walk's branch miss half the time). tap[l]
 * gets lane l's selected k0 K1 + k1. */
__attribute__((target("avx512f")))
static void ss_walk16(const ss_job_t *j, const float *x, int64_t i0, int64_t a0, int64_t b0,
		      int64_t y, int64_t m, const uint32_t cmp, int32_t tap[16])
{
	__mmask16 live = (__mmask16)((1u << m) - 1);
	/* lane l's element offset along dim 1 for k1 = 0 */
	__m512i lane = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
							   14, 15),
					  _mm512_set1_epi32((int32_t)(j->S[1] * j->sx[3])));
	const float *row0 = x + (i0 + a0 * j->D[0]) * j->sx[2] + (y * j->S[1] - j->P[1]) * j->sx[3];
	__m512 best = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, lane, row0, 4);
	__m512i sel = _mm512_set1_epi32((int32_t)(a0 * j->K[1]));
	for (int64_t k0 = a0; k0 < b0; k0++) {
		const float *row = x + (i0 + k0 * j->D[0]) * j->sx[2] + (y * j->S[1] - j->P[1]) * j->sx[3];
		for (int64_t k1 = 0; k1 < j->K[1]; k1++) {
			__m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, lane,
							    row + k1 * j->D[1] * j->sx[3], 4);
			__mmask16 keep;
			switch (cmp) {
			case ISA_ALU_CMP_GE: keep = _mm512_cmp_ps_mask(best, v, _CMP_GE_OQ); break;
			case ISA_ALU_CMP_GT: keep = _mm512_cmp_ps_mask(best, v, _CMP_GT_OQ); break;
			case ISA_ALU_CMP_LE: keep = _mm512_cmp_ps_mask(best, v, _CMP_LE_OQ); break;
			default: keep = _mm512_cmp_ps_mask(best, v, _CMP_LT_OQ); break;
			}
			__mmask16 take = (__mmask16)(~keep & live);
			best = _mm512_mask_mov_ps(best, take, v);
			sel = _mm512_mask_mov_epi32(sel, take,
						    _mm512_set1_epi32((int32_t)(k0 * j->K[1] + k1)));
		}
	}
	_mm512_storeu_si512(tap, sel);
}

/* ss_walk16 on AVX2: 8 windows, the blend by the compare's all-ones lanes.
 * CPUs without AVX-512 walked them one at a time, 1.17x the old lowering's
 * time (its FUSED and SCATTER kernels ran AVX2). */
__attribute__((target("avx2")))
static void ss_walk8(const ss_job_t *j, const float *x, int64_t i0, int64_t a0, int64_t b0,
		     int64_t y, int64_t m, const uint32_t cmp, int32_t tap[16])
{
	const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	__m256 live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)m), iota));
	__m256i lane = _mm256_mullo_epi32(iota, _mm256_set1_epi32((int32_t)(j->S[1] * j->sx[3])));
	const float *row0 = x + (i0 + a0 * j->D[0]) * j->sx[2] + (y * j->S[1] - j->P[1]) * j->sx[3];
	__m256 best = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row0, lane, live, 4);
	__m256 sel = _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(a0 * j->K[1])));
	for (int64_t k0 = a0; k0 < b0; k0++) {
		const float *row = x + (i0 + k0 * j->D[0]) * j->sx[2] + (y * j->S[1] - j->P[1]) * j->sx[3];
		for (int64_t k1 = 0; k1 < j->K[1]; k1++) {
			__m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row + k1 * j->D[1] * j->sx[3],
							    lane, live, 4);
			__m256 keep;
			switch (cmp) {
			case ISA_ALU_CMP_GE: keep = _mm256_cmp_ps(best, v, _CMP_GE_OQ); break;
			case ISA_ALU_CMP_GT: keep = _mm256_cmp_ps(best, v, _CMP_GT_OQ); break;
			case ISA_ALU_CMP_LE: keep = _mm256_cmp_ps(best, v, _CMP_LE_OQ); break;
			default: keep = _mm256_cmp_ps(best, v, _CMP_LT_OQ); break;
			}
			best = _mm256_blendv_ps(v, best, keep);
			sel = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(k0 * j->K[1] + k1))),
					       sel, keep);
		}
	}
	_mm256_storeu_si256((__m256i *)(void *)tap, _mm256_castps_si256(sel));
}
#endif

/* Plane p's windows; cmp and op constants after inlining (ss_plane_for). */
__attribute__((always_inline))
static inline void ss_plane(const ss_job_t *j, uint64_t p, const uint32_t cmp, const uint32_t op)
{
	int64_t n = (int64_t)(p / (uint64_t)j->C), c = (int64_t)(p % (uint64_t)j->C);
	const float *x = j->x + n * j->sx[0] + c * j->sx[1];
	const float *src = j->src + n * j->ss[0] + c * j->ss[1];
	float *out = j->out + n * j->so[0] + c * j->so[1];
	for (int64_t y0 = 0; y0 < j->Y[0]; y0++) {
		int64_t a0 = j->taps[0][2 * y0], b0 = j->taps[0][2 * y0 + 1];
		if (a0 == b0)
			continue;
		int64_t i0 = y0 * j->S[0] - j->P[0];
		for (int64_t y1 = 0; y1 < j->Y[1]; y1++) {
			int64_t a1 = j->taps[1][2 * y1], b1 = j->taps[1][2 * y1 + 1];
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
			if (j->lanes && a1 == 0 && b1 == j->K[1]) {
				/* the run of windows with every tap along dim 1 */
				int64_t m = 1;
				while (m < j->lanes && y1 + m < j->Y[1] && j->taps[1][2 * (y1 + m)] == 0 &&
				       j->taps[1][2 * (y1 + m) + 1] == j->K[1])
					m++;
				int32_t tap[16];
				if (j->lanes == 16)
					ss_walk16(j, x, i0, a0, b0, y1, m, cmp, tap);
				else
					ss_walk8(j, x, i0, a0, b0, y1, m, cmp, tap);
				float *o0 = out + i0 * j->so[2] + (y1 * j->S[1] - j->P[1]) * j->so[3];
				const float *s0 = src + y0 * j->ss[2] + y1 * j->ss[3];
				for (int64_t l = 0; l < m; l++) {
					float *o = o0 + l * j->S[1] * j->so[3] + j->toff[tap[l]];
					*o = f_red_combine(op, *o, s0[l * j->ss[3]]);
				}
				y1 += m - 1;
				continue;
			}
#endif
			if (a1 == b1)
				continue;
			int64_t i1 = y1 * j->S[1] - j->P[1];
			/* the first position selected; the walk compares it with
			 * itself first, which keeps it or puts it back */
			int64_t r0 = i0 + a0 * j->D[0], r1 = i1 + a1 * j->D[1];
			float best = x[r0 * j->sx[2] + r1 * j->sx[3]];
			for (int64_t k0 = a0; k0 < b0; k0++) {
				int64_t q0 = i0 + k0 * j->D[0];
				const float *row = x + q0 * j->sx[2];
				for (int64_t k1 = a1; k1 < b1; k1++) {
					int64_t q1 = i1 + k1 * j->D[1];
					float v = row[q1 * j->sx[3]];
					bool keep = ss_keep(cmp, best, v);
					best = keep ? best : v;
					r0 = keep ? r0 : q0;
					r1 = keep ? r1 : q1;
				}
			}
			float *o = out + r0 * j->so[2] + r1 * j->so[3];
			*o = f_red_combine(op, *o, src[y0 * j->ss[2] + y1 * j->ss[3]]);
		}
	}
}

/* Plane p's windows for bf16 and f16 operands: the scalar walk on values
 * widened to f32 (exact), each combine rounded back to the dtype, as the
 * dtype's own ALU op would (alu_ops.c). */
static void ss_plane_half(const ss_job_t *j, uint64_t p)
{
	int64_t n = (int64_t)(p / (uint64_t)j->C), c = (int64_t)(p % (uint64_t)j->C);
	const uint8_t *x = (const uint8_t *)j->x + (n * j->sx[0] + c * j->sx[1]) * 2;
	const uint8_t *src = (const uint8_t *)j->src + (n * j->ss[0] + c * j->ss[1]) * 2;
	uint8_t *out = (uint8_t *)j->out + (n * j->so[0] + c * j->so[1]) * 2;
	for (int64_t y0 = 0; y0 < j->Y[0]; y0++) {
		int64_t a0 = j->taps[0][2 * y0], b0 = j->taps[0][2 * y0 + 1];
		int64_t i0 = y0 * j->S[0] - j->P[0];
		for (int64_t y1 = 0; y1 < j->Y[1] && a0 < b0; y1++) {
			int64_t a1 = j->taps[1][2 * y1], b1 = j->taps[1][2 * y1 + 1];
			if (a1 == b1)
				continue;
			int64_t i1 = y1 * j->S[1] - j->P[1];
			int64_t r0 = i0 + a0 * j->D[0], r1 = i1 + a1 * j->D[1];
			float best = fw_ld_f32(j->dt, x + (r0 * j->sx[2] + r1 * j->sx[3]) * 2);
			for (int64_t k0 = a0; k0 < b0; k0++)
				for (int64_t k1 = a1; k1 < b1; k1++) {
					int64_t q0 = i0 + k0 * j->D[0], q1 = i1 + k1 * j->D[1];
					float v = fw_ld_f32(j->dt, x + (q0 * j->sx[2] + q1 * j->sx[3]) * 2);
					if (!ss_keep(j->cmp, best, v)) {
						best = v;
						r0 = q0;
						r1 = q1;
					}
				}
			uint8_t *o = out + (r0 * j->so[2] + r1 * j->so[3]) * 2;
			float sv = fw_ld_f32(j->dt, src + (y0 * j->ss[2] + y1 * j->ss[3]) * 2);
			fw_st_f32(j->dt, o, f_red_combine(j->op, fw_ld_f32(j->dt, o), sv));
		}
	}
}

/* ss_plane specialised for the select and the combiner. */
static void ss_plane_for(const ss_job_t *j, uint64_t p)
{
	if (j->dt != ISA_DT_F32) {
		ss_plane_half(j, p);
		return;
	}
#define SS_OPS(cmpv)                                                           \
	switch (j->op) {                                                       \
	case ISA_RED_SUM: ss_plane(j, p, cmpv, ISA_RED_SUM); return;           \
	case ISA_RED_PROD: ss_plane(j, p, cmpv, ISA_RED_PROD); return;         \
	case ISA_RED_MAX: ss_plane(j, p, cmpv, ISA_RED_MAX); return;           \
	default: ss_plane(j, p, cmpv, ISA_RED_MIN); return;                    \
	}
	switch (j->cmp) {
	case ISA_ALU_CMP_GE: SS_OPS(ISA_ALU_CMP_GE)
	case ISA_ALU_CMP_GT: SS_OPS(ISA_ALU_CMP_GT)
	case ISA_ALU_CMP_LE: SS_OPS(ISA_ALU_CMP_LE)
	default: SS_OPS(ISA_ALU_CMP_LT)
	}
#undef SS_OPS
}

static fwsim_status_t ss_item(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	const ss_job_t *j = ctx;
	(void)slot;
	fwsim_kargs_t kk = *j->k; /* the scan runs after, over ap0 (exec.c) */
	kk.watch = w;
	kk.chk = NULL;
	uint64_t p0 = item * j->per_item, p1 = p0 + j->per_item;
	p1 = p1 < j->planes ? p1 : j->planes;
	uint64_t work = (uint64_t)(j->Y[0] * j->Y[1] * j->K[0] * j->K[1]) + 1;
	for (uint64_t p = p0; p < p1; p++) {
		if (fwsim_tick(&kk, work))
			return FWSIM_TIMEOUT;
		ss_plane_for(j, p);
	}
	return FWSIM_OK;
}

fwsim_status_t fwsim_kernel_selscat(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *x = &in->ap[1], *s = &in->ap[2], *w = &in->ap[3];
	ss_job_t j = {
		.k = k, .C = (int64_t)o->shape[1],
		.out = (float *)(void *)k->base[0], .x = (const float *)(const void *)k->base[1],
		.src = (const float *)(const void *)k->base[2], .cmp = in->param, .op = in->sub,
		.dt = o->dtype,
	};
	for (int d = 0; d < 2; d++) {
		j.X[d] = (int64_t)o->shape[2 + d];
		j.Y[d] = (int64_t)s->shape[2 + d];
		j.K[d] = (int64_t)w->shape[ISA_SELSCAT_SIZE + d];
		j.S[d] = (int64_t)w->shape[ISA_SELSCAT_STRIDE + d];
		j.D[d] = (int64_t)w->shape[ISA_SELSCAT_DIL + d];
		j.P[d] = w->stride[d];
	}
	for (int d = 0; d < 4; d++) {
		j.so[d] = o->stride[d];
		j.sx[d] = x->stride[d];
		j.ss[d] = s->stride[d];
	}
	j.planes = o->shape[0] * o->shape[1];
	if (j.planes == 0 || isa_ap_num_elements(s) == 0 || j.X[0] == 0 || j.X[1] == 0)
		return FWSIM_OK;
	/* each window's taps inside the operand, once per instruction (two
	 * divisions per dim: computed per window they were most of the time) */
	int64_t *taps = malloc((size_t)(j.Y[0] + j.Y[1]) * 2 * sizeof(int64_t));
	if (!taps)
		return FWSIM_NOMEM;
	j.taps[0] = taps;
	j.taps[1] = taps + 2 * j.Y[0];
	for (int d = 0; d < 2; d++)
		for (int64_t y = 0; y < j.Y[d]; y++)
			ss_taps(y, j.X[d], j.K[d], j.S[d], j.D[d], j.P[d], &j.taps[d][2 * y],
				&j.taps[d][2 * y + 1]);
	/* lanes' offsets along dim 1 in 32 bits; the taps' output offsets in a
	 * table (a division per window to find them cost more than its walk) */
	int64_t span = (16 * j.S[1] + j.K[1] * j.D[1]) * (j.sx[3] < 0 ? -j.sx[3] : j.sx[3]);
	j.lanes = j.dt != ISA_DT_F32 ? 0 : fwsim_cpu_avx512() ? 16 : fwsim_cpu_avx2_fma() ? 8 : 0;
	if (span >= INT32_MAX || j.K[0] * j.K[1] > SELSCAT_VEC_TAPS ||
	    !(j.toff = malloc((size_t)(j.K[0] * j.K[1]) * sizeof(int64_t))))
		j.lanes = 0;
	for (int64_t t = 0; j.lanes && t < j.K[0] * j.K[1]; t++)
		j.toff[t] = (t / j.K[1]) * j.D[0] * j.so[2] + (t % j.K[1]) * j.D[1] * j.so[3];
	/* an output repeating along a plane dim (stride 0) has two planes write
	 * the same elements: one item, planes in order */
	bool shared = (o->shape[0] > 1 && o->stride[0] == 0) || (o->shape[1] > 1 && o->stride[1] == 0);
	j.per_item = shared ? j.planes : (j.planes + SELSCAT_ITEMS - 1) / SELSCAT_ITEMS;
	fwsim_status_t st = fwsim_par_for((j.planes + j.per_item - 1) / j.per_item, ss_item, &j,
					  k->watch);
	free(taps);
	free(j.toff);
	return st;
}
