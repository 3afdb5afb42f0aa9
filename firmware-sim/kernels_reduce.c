/* REDUCE over an axes mask into a 64-bit accumulator array (f64 for floats, i64 for integers). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alu_ops.h"
#include "convert.h"
#include "internal.h"
#include "pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static fwsim_acc_t identity(uint32_t op, uint32_t dt)
{
	fwsim_acc_t v;
	if (isa_dtype_is_float(dt)) {
		switch (op) {
		case ISA_RED_PROD: v.d = 1; break;
		case ISA_RED_MAX: v.d = -INFINITY; break;
		case ISA_RED_MIN: v.d = INFINITY; break;
		default: v.d = 0; break;
		}
		return v;
	}
	uint32_t bits = (uint32_t)isa_dtype_size(dt) * 8;
	uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	int uns = isa_dtype_is_unsigned(dt);
	switch (op) {
	case ISA_RED_PROD: v.i = 1; break;
	case ISA_RED_MAX: v.i = uns ? 0 : -(int64_t)(mask >> 1) - 1; break;
	case ISA_RED_MIN: v.i = uns ? (int64_t)mask : (int64_t)(mask >> 1); break;
	case ISA_RED_AND: v.i = dt == ISA_DT_PRED ? 1 : -1; break;
	default: v.i = 0; break;
	}
	return v;
}

void fwsim_red_identity(uint32_t op, uint32_t dt, void *out8)
{
	fwsim_acc_t v = identity(op, dt);
	memcpy(out8, &v, sizeof(v));
}

int64_t fwsim_red_comb_i64(uint32_t op, int uns, int64_t a, int64_t b)
{
	switch (op) {
	case ISA_RED_SUM: return (int64_t)((uint64_t)a + (uint64_t)b);
	case ISA_RED_PROD: return (int64_t)((uint64_t)a * (uint64_t)b);
	case ISA_RED_MAX: return uns ? ((uint64_t)a > (uint64_t)b ? a : b) : (a > b ? a : b);
	case ISA_RED_MIN: return uns ? ((uint64_t)a < (uint64_t)b ? a : b) : (a < b ? a : b);
	case ISA_RED_AND: return a & b;
	case ISA_RED_OR: return a | b;
	default: return b;
	}
}

/* Each combiner of fwsim_red_comb_i64 is associative and commutative in 64
 * bits (wrapping sum and product, min, max, and, or), so a run folds in any
 * order to the same bits: one loop per op that the compiler vectorises, where
 * a call per element took 17% of a row-wise all(x == -inf). */
FWSIM_TARGET_CLONES
static int64_t red_fold_i64(uint32_t op, int uns, int64_t acc, const int64_t *v, size_t n)
{
	uint64_t u = (uint64_t)acc;
	switch (op) {
	case ISA_RED_SUM:
		for (size_t e = 0; e < n; e++)
			u += (uint64_t)v[e];
		return (int64_t)u;
	case ISA_RED_PROD:
		for (size_t e = 0; e < n; e++)
			u *= (uint64_t)v[e];
		return (int64_t)u;
	case ISA_RED_AND:
		for (size_t e = 0; e < n; e++)
			u &= (uint64_t)v[e];
		return (int64_t)u;
	case ISA_RED_OR:
		for (size_t e = 0; e < n; e++)
			u |= (uint64_t)v[e];
		return (int64_t)u;
	default:
		for (size_t e = 0; e < n; e++)
			acc = fwsim_red_comb_i64(op, uns, acc, v[e]);
		return acc;
	}
}

/* A plain wrapper: clang 14 does not export a target_clones function under
 * its own name across translation units. */
int64_t fwsim_red_fold_i64(uint32_t op, int uns, int64_t acc, const int64_t *v, size_t n)
{
	return red_fold_i64(op, uns, acc, v, n);
}

double fwsim_red_comb_f64(uint32_t op, double a, double b)
{
	switch (op) {
	case ISA_RED_SUM: return a + b;
	case ISA_RED_PROD: return a * b;
	case ISA_RED_MAX: return d_max(a, b);
	case ISA_RED_MIN: return d_min(a, b);
	default: return b;
	}
}

#if defined(__x86_64__) || defined(__i386__)
/* f_max (max != 0) or f_min of lanes without NaN: the vector max both ways
 * round ANDed (min: ORed), which differ only on a tie of +0 and -0. */
__attribute__((target("avx"), always_inline)) static inline __m256
v8_minmax(const int max, __m256 a, __m256 b)
{
	return max ? _mm256_and_ps(_mm256_max_ps(a, b), _mm256_max_ps(b, a))
		   : _mm256_or_ps(_mm256_min_ps(a, b), _mm256_min_ps(b, a));
}

__attribute__((target("avx"), always_inline)) static inline __m128
v4_minmax(const int max, __m128 a, __m128 b)
{
	return max ? _mm_and_ps(_mm_max_ps(a, b), _mm_max_ps(b, a))
		   : _mm_or_ps(_mm_min_ps(a, b), _mm_min_ps(b, a));
}

/* m combined with the 8 floats at p, their NaN lanes ORed into *nan. */
__attribute__((target("avx"), always_inline)) static inline __m256
fold8(const int max, __m256 m, const float *p, __m256 *nan)
{
	__m256 x = _mm256_loadu_ps(p);
	*nan = _mm256_or_ps(*nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
	return v8_minmax(max, m, x);
}

/* MAX (max != 0) or MIN of a block of n >= 8 floats into *out by vector
 * max/min, with the same result as the in-order chain of d_max/d_min, or
 * false when the block holds a NaN (the chain keeps the first one's bits).
 * Without NaN the IEEE maximum and minimum are commutative, associative and
 * idempotent, zeros included, so four accumulators, a last vector that
 * overlaps the one before and the lanes folded in any order give the chain's
 * bits; converting to double is exact and keeps the order. A softmax's row
 * max over 128 elements went element by element through fwsim_red_comb_f64:
 * a third of its time. One accumulator waits on the max's latency: a max
 * over rows of 2048 (4M elements) took 0.63 ms with one, 0.56 with four (p50,
 * 11 interleaved rounds; rows of 128: 0.81 and 0.71). */
__attribute__((target("avx"), always_inline)) static inline bool
minmax_avx(const int max, const float *v, size_t n, float *out)
{
	__m256 m0 = _mm256_loadu_ps(v), m1 = m0, m2 = m0, m3 = m0;
	__m256 nan = _mm256_cmp_ps(m0, m0, _CMP_UNORD_Q);
	size_t i = 8;
	if (n >= 32) {
		m1 = _mm256_loadu_ps(v + 8);
		m2 = _mm256_loadu_ps(v + 16);
		m3 = _mm256_loadu_ps(v + 24);
		nan = _mm256_or_ps(_mm256_cmp_ps(m0, m1, _CMP_UNORD_Q), _mm256_cmp_ps(m2, m3, _CMP_UNORD_Q));
		i = 32;
	}
	for (; i + 32 <= n; i += 32) {
		__m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + i + 8);
		__m256 x2 = _mm256_loadu_ps(v + i + 16), x3 = _mm256_loadu_ps(v + i + 24);
		nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(x0, x1, _CMP_UNORD_Q),
						     _mm256_cmp_ps(x2, x3, _CMP_UNORD_Q)));
		m0 = v8_minmax(max, m0, x0);
		m1 = v8_minmax(max, m1, x1);
		m2 = v8_minmax(max, m2, x2);
		m3 = v8_minmax(max, m3, x3);
	}
	/* at most three whole vectors left, one into each of m1..m3, then the
	 * last 8 (some of them again) into m0 */
	if (i + 8 <= n) {
		m1 = fold8(max, m1, v + i, &nan);
		i += 8;
	}
	if (i + 8 <= n) {
		m2 = fold8(max, m2, v + i, &nan);
		i += 8;
	}
	if (i + 8 <= n) {
		m3 = fold8(max, m3, v + i, &nan);
		i += 8;
	}
	if (i < n)
		m0 = fold8(max, m0, v + n - 8, &nan);
	if (_mm256_movemask_ps(nan))
		return false;
	m0 = v8_minmax(max, v8_minmax(max, m0, m1), v8_minmax(max, m2, m3));
	__m128 h = v4_minmax(max, _mm256_castps256_ps128(m0), _mm256_extractf128_ps(m0, 1));
	h = v4_minmax(max, h, _mm_movehl_ps(h, h));
	h = v4_minmax(max, h, _mm_shuffle_ps(h, h, 1));
	*out = _mm_cvtss_f32(h);
	return true;
}

__attribute__((target("avx"))) static bool red_max_avx(const float *v, size_t n, float *out)
{
	return minmax_avx(1, v, n, out);
}

__attribute__((target("avx"))) static bool red_min_avx(const float *v, size_t n, float *out)
{
	return minmax_avx(0, v, n, out);
}
#endif

/* Reduces a block to one value; sums use 8 partial accumulators so the loop
 * vectorises without -ffast-math (in the x86-64-v3 clone: two 4-double
 * accumulators, 8 floats converted per step). */
FWSIM_TARGET_CLONES
static double red_block_f64(uint32_t op, const float *v, size_t n, double init)
{
#if defined(__x86_64__) || defined(__i386__)
	float e;
	/* init goes first in the chain: a NaN init stays */
	if (op == ISA_RED_MAX && n >= 8 && __builtin_cpu_supports("avx") && red_max_avx(v, n, &e))
		return d_max(init, e);
	if (op == ISA_RED_MIN && n >= 8 && __builtin_cpu_supports("avx") && red_min_avx(v, n, &e))
		return d_min(init, e);
#endif
	if (op == ISA_RED_SUM) {
		double s[8] = { 0 };
		size_t i = 0;
		for (; i + 8 <= n; i += 8)
			for (int l = 0; l < 8; l++)
				s[l] += v[i + l];
		for (; i < n; i++)
			s[0] += v[i];
		return init + (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
	}
	double r = init;
	for (size_t i = 0; i < n; i++)
		r = fwsim_red_comb_f64(op, r, v[i]);
	return r;
}

#if defined(__x86_64__) || defined(__i386__)
/* Two rows of one block each summed as fwsim_red_block_f64 sums each (the
 * same 8 partial sums, the same order) into *ra and *rb. A row's 8 sums are
 * two dependent chains of 4-double additions, so one row at a time waits on
 * the adder's latency; two rows' four chains overlap (short rows: sums over
 * the last dim). Lane l of s[h] is partial sum 4h + l. Written with AVX
 * intrinsics: GCC 12 leaves 16 lanes of two rows scalar, and splits a
 * generic 4-float to 4-double vector conversion in two. */
__attribute__((target("avx")))
static void red_sum2_f64_avx(const float *a, const float *b, size_t n, double *ra, double *rb)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = s0, t0 = s0, t1 = s0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(a + i)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm_loadu_ps(a + i + 4)));
		t0 = _mm256_add_pd(t0, _mm256_cvtps_pd(_mm_loadu_ps(b + i)));
		t1 = _mm256_add_pd(t1, _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4)));
	}
	double p[8], q[8];
	_mm256_storeu_pd(p, s0);
	_mm256_storeu_pd(p + 4, s1);
	_mm256_storeu_pd(q, t0);
	_mm256_storeu_pd(q + 4, t1);
	for (; i < n; i++) {
		p[0] += a[i];
		q[0] += b[i];
	}
	*ra = *ra + (((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7])));
	*rb = *rb + (((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7])));
}
#endif

FWSIM_TARGET_CLONES
static void red_fold_f64(uint32_t op, fwsim_acc_t *acc, int64_t step, const float *v, size_t m)
{
	if (step == 0) {
		acc->d = red_block_f64(op, v, m, acc->d);
		return;
	}
	if (step == 1) { /* the op chosen once: the loops vectorise */
		/* the doubles as an array: GCC 12 finds no vector type for a
		 * union member access and leaves such a loop scalar */
		_Static_assert(sizeof(fwsim_acc_t) == sizeof(double), "one double per accumulator");
		double *a = &acc->d;
		switch (op) {
		case ISA_RED_SUM:
			for (size_t e = 0; e < m; e++)
				a[e] += v[e];
			return;
		case ISA_RED_PROD:
			for (size_t e = 0; e < m; e++)
				a[e] *= v[e];
			return;
		case ISA_RED_MAX:
			for (size_t e = 0; e < m; e++)
				a[e] = d_max(a[e], v[e]);
			return;
		case ISA_RED_MIN:
			for (size_t e = 0; e < m; e++)
				a[e] = d_min(a[e], v[e]);
			return;
		default:
			break;
		}
	}
	for (size_t e = 0; e < m; e++)
		acc[(int64_t)e * step].d = fwsim_red_comb_f64(op, acc[(int64_t)e * step].d, v[e]);
}

/* Plain wrappers: clang 14 does not export a target_clones function under
 * its own name across translation units (alu_ops.c does the same). */
double fwsim_red_block_f64(uint32_t op, const float *v, size_t n, double init)
{
	return red_block_f64(op, v, n, init);
}

void fwsim_red_fold_f64(uint32_t op, fwsim_acc_t *acc, int64_t step, const float *v, size_t m)
{
	red_fold_f64(op, acc, step, v, m);
}

void fwsim_red_fold_blocks_f64(uint32_t op, fwsim_acc_t *acc, const float *v, size_t m, size_t blk)
{
#if defined(__x86_64__) || defined(__i386__)
	if (op == ISA_RED_SUM && __builtin_cpu_supports("avx"))
		for (; m >= 2 * blk; v += 2 * blk, m -= 2 * blk) {
			/* the second block's sum from -0, the identity that keeps
			 * every value's bits: (acc + a) + b, as two folds give */
			double b = -0.0;
			red_sum2_f64_avx(v, v + blk, blk, &acc->d, &b);
			acc->d = acc->d + b;
		}
#endif
	for (; m > 0; v += blk < m ? blk : m, m -= blk < m ? blk : m)
		acc->d = red_block_f64(op, v, blk < m ? blk : m, acc->d);
}

void fwsim_red_fold_rows_f64(uint32_t op, fwsim_acc_t *acc, int64_t step, const float *v,
			     size_t rlen, size_t rows)
{
	size_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
	if (op == ISA_RED_SUM && step != 0 && __builtin_cpu_supports("avx"))
		for (; i + 2 <= rows; i += 2)
			red_sum2_f64_avx(v + i * rlen, v + (i + 1) * rlen, rlen,
					 &acc[(int64_t)i * step].d, &acc[(int64_t)(i + 1) * step].d);
#endif
	for (; i < rows; i++)
		acc[(int64_t)i * step].d = red_block_f64(op, v + i * rlen, rlen, acc[(int64_t)i * step].d);
}

void fwsim_red_acc_strides(uint32_t rank, const uint64_t *oshape, int64_t *st)
{
	int64_t s = 1;
	for (int k = (int)rank - 1; k >= 0; k--) {
		st[k] = s;
		s *= (int64_t)oshape[k];
	}
}

void fwsim_red_acc_start(uint32_t op, int accumulate, const isa_ap_t *o, const uint64_t *oshape,
			 const uint8_t *base, fwsim_acc_t *acc, uint64_t nout)
{
	uint32_t dt = o->dtype;
	if (!accumulate) {
		fwsim_acc_t id = identity(op, dt);
		for (uint64_t i = 0; i < nout; i++)
			acc[i] = id;
		return;
	}
	int fl = isa_dtype_is_float(dt);
	int64_t cst[ISA_MAX_RANK];
	fwsim_red_acc_strides(o->rank, oshape, cst);
	const int64_t *st2[2] = { cst, o->stride };
	size_t es2[2] = { sizeof(fwsim_acc_t), isa_dtype_size(dt) };
	fwsim_iter_t it;
	fwsim_iter_init(&it, o->rank, oshape, 2, st2, es2);
	do {
		fwsim_acc_t *dst = (fwsim_acc_t *)(void *)((uint8_t *)acc + it.off[0]);
		const uint8_t *src = base + it.off[1];
		int64_t step = it.inner_bs[0] / (int64_t)sizeof(fwsim_acc_t);
		for (uint64_t j = 0; j < it.inner; j++) {
			const uint8_t *p = src + (int64_t)j * it.inner_bs[1];
			if (fl)
				dst[(int64_t)j * step].d = fw_ld_f32(dt, p);
			else
				dst[(int64_t)j * step].i = fw_ld_i64(dt, p);
		}
	} while (fwsim_iter_next(&it));
}

void fwsim_red_acc_store(fwsim_numchk_t *chk, const isa_ap_t *o, const uint64_t *oshape,
			 uint8_t *base, const fwsim_acc_t *acc, uint64_t *flat, uint32_t cand)
{
	uint32_t dt = o->dtype;
	int fl = isa_dtype_is_float(dt), uns = isa_dtype_is_unsigned(dt);
	int64_t cst[ISA_MAX_RANK];
	fwsim_red_acc_strides(o->rank, oshape, cst);
	const int64_t *st2[2] = { cst, o->stride };
	size_t es2[2] = { sizeof(fwsim_acc_t), isa_dtype_size(dt) };
	float fb[FWSIM_BLOCK];
	int64_t ib[FWSIM_BLOCK];
	fwsim_iter_t it;
	fwsim_iter_init(&it, o->rank, oshape, 2, st2, es2);
	do {
		const fwsim_acc_t *src =
			(const fwsim_acc_t *)(const void *)((const uint8_t *)acc + it.off[0]);
		int64_t step = it.inner_bs[0] / (int64_t)sizeof(fwsim_acc_t);
		for (uint64_t j = 0; j < it.inner; j += FWSIM_BLOCK) {
			size_t m = it.inner - j < FWSIM_BLOCK ? (size_t)(it.inner - j) : FWSIM_BLOCK;
			uint8_t *p = base + it.off[1] + (int64_t)j * it.inner_bs[1];
			const fwsim_acc_t *s0 = src + (int64_t)j * step;
			if (fl) {
				for (size_t e = 0; e < m; e++)
					fb[e] = (float)s0[(int64_t)e * step].d;
				if (chk) {
					bool had = chk->count;
					fwsim_numchk_block(chk, fb, m, *flat);
					/* the first bad output: blame the FUSED step that made
					 * the first bad value combined; none made one (the
					 * combining did, as Inf + -Inf): the instruction */
					if (!had && chk->count && chk->blame_debug == ISA_DEBUG_NONE)
						chk->blame_debug = cand;
				}
				fwsim_store_f32(dt, p, it.inner_bs[1], m, fb);
			} else {
				for (size_t e = 0; e < m; e++)
					ib[e] = s0[(int64_t)e * step].i;
				fwsim_store_i64(dt, p, it.inner_bs[1], m, ib, uns);
			}
			*flat += m;
		}
	} while (fwsim_iter_next(&it));
}

void fwsim_red_parts_init(fwsim_red_parts_t *p, uint32_t rank, const uint64_t *shape,
			  uint32_t mask)
{
	memset(p, 0, sizeof(*p));
	p->rank = rank;
	p->mask = mask;
	p->nout = 1;
	for (uint32_t d = 0; d < rank; d++) {
		p->shape[d] = shape[d];
		if (!(mask >> d & 1))
			p->nout *= shape[d];
	}
	p->s = rank;
	p->run = 1;
	if (p->nout <= FWSIM_REDUCE_MAX_ACC)
		return;
	for (uint32_t s = 0; s < rank; s++) {
		if (mask >> s & 1)
			continue;
		uint64_t below = 1;
		for (uint32_t q = s + 1; q < rank; q++)
			if (!(mask >> q & 1))
				below *= shape[q];
		if (below <= FWSIM_REDUCE_MAX_ACC) {
			p->s = s;
			p->run = FWSIM_REDUCE_MAX_ACC / below;
			return;
		}
	}
}

bool fwsim_red_parts_next(fwsim_red_parts_t *p, uint64_t first[ISA_MAX_RANK],
			  uint64_t len[ISA_MAX_RANK])
{
	if (p->done)
		return false;
	for (uint32_t q = 0; q < p->rank; q++) {
		first[q] = 0;
		len[q] = p->shape[q];
	}
	uint32_t s = p->s;
	if (s >= p->rank) {
		p->done = 1;
		return true;
	}
	for (uint32_t q = 0; q < s; q++) {
		if (p->mask >> q & 1)
			continue;
		first[q] = p->idx[q];
		len[q] = 1;
	}
	first[s] = p->start;
	len[s] = p->shape[s] - p->start < p->run ? p->shape[s] - p->start : p->run;
	p->start += p->run;
	if (p->start < p->shape[s])
		return true;
	p->start = 0;
	int q = (int)s - 1;
	for (; q >= 0; q--) {
		if (p->mask >> q & 1)
			continue;
		if (++p->idx[q] < p->shape[q])
			break;
		p->idx[q] = 0;
	}
	if (q < 0)
		p->done = 1;
	return true;
}

/*
 * A max-pool's window (reduce-window, and select-and-scatter's max) is a
 * REDUCE whose innermost dims are the window's few columns: walked in the
 * operand's order, every row is 3 elements long and pays a row's costs for
 * them (4.2 ms for ResNet-18's 8x64x16x16 outputs of 3x3 windows, 3.4 ns per
 * element). Walking the reduced dims outside the kept ones instead makes the
 * rows run along the outputs, each row folding one window position into a
 * row of accumulators. Every output still takes its inputs in the same order
 * (the reduced dims' own order), so the result is the same: for MAX and MIN
 * that is every bit (NaN and signed-zero ties included), and integer
 * combiners are exact in any order. Float sums and products keep the
 * operand's walk (their blocks of partial sums are part of the contract).
 * Fills the permuted shape and strides and returns true when the innermost
 * dim is reduced and short (< 64) and some kept dim has at least 8 elements.
 */
static bool reduce_window_order(uint32_t op, int fl, uint32_t mask, const isa_ap_t *a,
				const int64_t *ast, uint64_t *pshape, int64_t *past, int64_t *pstr)
{
	uint32_t r = a->rank;
	if ((fl && op != ISA_RED_MAX && op != ISA_RED_MIN) || r < 2 || !(mask >> (r - 1) & 1) ||
	    a->shape[r - 1] >= 64)
		return false;
	bool wide = false;
	for (uint32_t d = 0; d < r; d++)
		wide |= !(mask >> d & 1) && a->shape[d] >= 8;
	if (!wide)
		return false;
	uint32_t k = 0;
	for (int kept = 0; kept < 2; kept++)
		for (uint32_t d = 0; d < r; d++) {
			bool reduced = mask >> d & 1;
			if (reduced == (kept == 1))
				continue;
			pshape[k] = a->shape[d];
			past[k] = ast[d];
			pstr[k++] = a->stride[d];
		}
	return true;
}

/* Whether the rows of it (accumulators, input) run several per fold: rows
 * under half a block into accumulators along the row (a kept inner dim) that
 * run on from one row to the next. */
static bool reduce_rows_blocked(const fwsim_iter_t *it)
{
	uint32_t r = it->rank;
	return r >= 2 && it->inner * 2 <= FWSIM_BLOCK && it->inner_bs[0] != 0 &&
	       it->bstride[0][r - 2] == (int64_t)it->inner * it->inner_bs[0];
}

/* Reduces a (at base_a) into o (at base_o), both views of the instruction's
 * operands, through acc (room for every element of o). flat: row-major index
 * of o's first element in the instruction's whole output (NaN records).
 * FWSIM_TIMEOUT when the watch stopped it. */
static fwsim_status_t reduce_part(const fwsim_kargs_t *k, const isa_ap_t *o, const isa_ap_t *a,
			uint8_t *base_o, const uint8_t *base_a, fwsim_acc_t *acc, uint64_t flat)
{
	const isa_insn_t *in = k->insn;
	uint32_t op = in->sub, dt = a->dtype;
	int fl = isa_dtype_is_float(dt), uns = isa_dtype_is_unsigned(dt);
	uint64_t nout = isa_ap_num_elements(o);

	int64_t cst[ISA_MAX_RANK], ast[ISA_MAX_RANK];
	fwsim_red_acc_strides(o->rank, o->shape, cst);
	size_t es2[2] = { sizeof(fwsim_acc_t), isa_dtype_size(dt) };
	fwsim_iter_t it;
	float fb[FWSIM_BLOCK];
	int64_t ib[FWSIM_BLOCK];

	/* steps 1 and 3 touch each of the (at most FWSIM_REDUCE_MAX_ACC) output
	 * elements once, step 2 every input element */
	if (fwsim_tick(k, 2 * nout))
		return FWSIM_TIMEOUT;

	/* 1. initial value: identity, or the existing output (ACCUMULATE) */
	fwsim_red_acc_start(op, in->flags & ISA_F_ACCUMULATE, o, o->shape, base_o, acc, nout);
	/* 2. fold the input in, row by row of its shape; reduced dims have
	 * accumulator stride 0 */
	for (uint32_t d = 0; d < a->rank; d++)
		ast[d] = (in->param >> d & 1) ? 0 : cst[d];
	uint64_t pshape[ISA_MAX_RANK];
	int64_t past[ISA_MAX_RANK], pstr[ISA_MAX_RANK];
	const int64_t *st3[2] = { ast, a->stride };
	if (reduce_window_order(op, fl, in->param, a, ast, pshape, past, pstr)) {
		st3[0] = past;
		st3[1] = pstr;
		fwsim_iter_init(&it, a->rank, pshape, 2, st3, es2);
	} else {
		fwsim_iter_init(&it, a->rank, a->shape, 2, st3, es2);
	}
	/* f32 sums of short contiguous rows (one block each), each row into one
	 * accumulator: rows are summed in pairs (red_sum2_f64), a row kept
	 * pending until the next; a row whose accumulator is the pending one's
	 * first folds the pending row, so every accumulator takes its rows in
	 * order */
#if defined(__x86_64__) || defined(__i386__)
	if (!it.empty && fl && op == ISA_RED_SUM && dt == ISA_DT_F32 && it.inner_bs[1] == 4 &&
	    it.inner_bs[0] == 0 && it.inner <= FWSIM_BLOCK && ((uintptr_t)base_a & 3u) == 0 &&
	    __builtin_cpu_supports("avx")) {
		const float *pa = NULL;
		double *da = NULL;
		size_t n = it.inner;
		do {
			if (fwsim_tick(k, n))
				return FWSIM_TIMEOUT;
			const float *p = (const float *)(const void *)(base_a + it.off[1]);
			double *d = &((fwsim_acc_t *)(void *)((uint8_t *)acc + it.off[0]))->d;
			if (!pa) {
				pa = p;
				da = d;
			} else if (d == da) {
				*da = fwsim_red_block_f64(op, pa, n, *da);
				pa = p;
			} else {
				red_sum2_f64_avx(pa, p, n, da, d);
				pa = NULL;
			}
		} while (fwsim_iter_next(&it));
		if (pa)
			*da = fwsim_red_block_f64(op, pa, n, *da);
	} else
#endif
	if (!it.empty && fl && reduce_rows_blocked(&it)) {
		/* short float rows into accumulators that run on from one row to
		 * the next: several rows per fold (a max pool's window taps over
		 * rows of 16 outputs paid a fold's fixed costs per 16 values).
		 * Each accumulator takes the same values in the same order */
		uint32_t rd = it.rank - 2;
		int64_t step = it.inner_bs[0] / 8;
		for (;;) {
			uint64_t left = it.shape[rd] - it.idx[rd], nr = FWSIM_BLOCK / it.inner;
			nr = nr < left ? nr : left;
			size_t m = (size_t)(nr * it.inner);
			if (fwsim_tick(k, m))
				return FWSIM_TIMEOUT;
			for (uint64_t q = 0; q < nr; q++)
				fwsim_load_f32(dt, base_a + it.off[1] + (int64_t)q * it.bstride[1][rd],
					       it.inner_bs[1], (size_t)it.inner, fb + q * it.inner);
			fwsim_red_fold_f64(op, (fwsim_acc_t *)(void *)((uint8_t *)acc + it.off[0]), step, fb,
					   m);
			bool more = true;
			for (uint64_t q = 0; q < nr && more; q++)
				more = fwsim_iter_next(&it);
			if (!more)
				break;
		}
	} else if (!it.empty) {
		do {
			fwsim_acc_t *dst = (fwsim_acc_t *)(void *)((uint8_t *)acc + it.off[0]);
			int64_t step = it.inner_bs[0] / 8;
			size_t m;
			for (uint64_t j = 0; j < it.inner; j += m) {
				const uint8_t *p = base_a + it.off[1] + (int64_t)j * it.inner_bs[1];
				fwsim_acc_t *d0 = dst + (int64_t)j * step;
				bool in_place = fl && dt == ISA_DT_F32 && it.inner_bs[1] == 4 &&
						((uintptr_t)p & 3u) == 0;
				/* a row folded where it lies into one accumulator: two
				 * blocks at a time (fwsim_red_fold_blocks_f64), the
				 * same blocks */
				uint64_t blk = in_place && step == 0 ? 2 * FWSIM_BLOCK : FWSIM_BLOCK;
				m = it.inner - j < blk ? (size_t)(it.inner - j) : (size_t)blk;
				if (fwsim_tick(k, m))
					return FWSIM_TIMEOUT;
				if (in_place && step == 0) {
					fwsim_red_fold_blocks_f64(op, d0, (const float *)(const void *)p, m,
								  FWSIM_BLOCK);
				} else if (in_place) {
					/* contiguous f32 is folded where it lies: the same
					 * blocks, the same order, no copy */
					fwsim_red_fold_f64(op, d0, step, (const float *)(const void *)p, m);
				} else if (fl) {
					fwsim_load_f32(dt, p, it.inner_bs[1], m, fb);
					fwsim_red_fold_f64(op, d0, step, fb, m);
				} else {
					fwsim_load_i64(dt, p, it.inner_bs[1], m, ib);
					if (step == 0) {
						d0->i = fwsim_red_fold_i64(op, uns, d0->i, ib, m);
					} else {
						for (size_t e = 0; e < m; e++)
							d0[(int64_t)e * step].i =
								fwsim_red_comb_i64(op, uns, d0[(int64_t)e * step].i, ib[e]);
					}
				}
			}
		} while (fwsim_iter_next(&it));
	}

	/* 3. store with conversion, scanning float results as they are written */
	fwsim_red_acc_store(k->chk, o, o->shape, base_o, acc, &flat, ISA_DEBUG_NONE);
	return FWSIM_OK;
}

/* A REDUCE cut into items for the pool (pool.h): ranges of its outermost
 * kept dim of two or more (a batch norm's sums over N, H, W by channels, a
 * max pool by images), each a run of the row-major output order reduced
 * whole by one thread into accumulators of its own. Each output takes the
 * same values in the same order as on one thread (the paired row sums sum
 * each row as one row alone), so results and NaN records do not depend on
 * the thread count. */
typedef struct red_job {
	const fwsim_kargs_t *k;
	uint32_t dim;   /* the dim cut into items */
	uint64_t chunk; /* its indices per item */
	uint64_t per;   /* outputs per index of it */
	fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS];
	fwsim_acc_t *acc[FWSIM_PAR_MAX_THREADS]; /* each slot's, kept for its next items */
} red_job_t;

static fwsim_status_t red_item(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	red_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	const isa_ap_t *o = &kk.insn->ap[0], *a = &kk.insn->ap[1];
	uint32_t d = j->dim;
	uint64_t f = item * j->chunk, n = o->shape[d] - f < j->chunk ? o->shape[d] - f : j->chunk;
	isa_ap_t po = *o, pa = *a;
	po.shape[d] = pa.shape[d] = n;
	int64_t off_o = (int64_t)f * o->stride[d] * (int64_t)isa_dtype_size(o->dtype);
	int64_t off_a = (int64_t)f * a->stride[d] * (int64_t)isa_dtype_size(a->dtype);
	if (!j->acc[slot] && !(j->acc[slot] = malloc(j->chunk * j->per * sizeof(fwsim_acc_t))))
		return FWSIM_NOMEM;
	return reduce_part(&kk, &po, &pa, kk.base[0] + off_o, kk.base[1] + off_a, j->acc[slot],
			   f * j->per);
}

/* Runs k on the pool when it is big enough to split and its outputs fit one
 * part (*st its status); false to run it on this thread alone. */
static bool reduce_par(const fwsim_kargs_t *k, uint64_t nout, fwsim_status_t *st)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *a = &in->ap[1];
	if (nout > FWSIM_REDUCE_MAX_ACC || isa_ap_num_elements(a) < fwsim_par_min_ew(k) ||
	    fwsim_get_threads() < 2)
		return false;
	int d = fwsim_par_cut_dim(o, in->param);
	if (d < 0)
		return false;
	red_job_t *j = calloc(1, sizeof(*j));
	if (!j)
		return false;
	j->k = k;
	j->dim = (uint32_t)d;
	j->per = nout / o->shape[d];
	j->chunk = (o->shape[d] + FWSIM_PAR_ITEMS - 1) / FWSIM_PAR_ITEMS;
	fwsim_par_chk_init(k, j->chk);
	*st = fwsim_par_for((o->shape[d] + j->chunk - 1) / j->chunk, red_item, j, k->watch);
	fwsim_par_chk_merge(k, j->chk);
	for (uint32_t i = 0; i < FWSIM_PAR_MAX_THREADS; i++)
		free(j->acc[i]);
	free(j);
	return true;
}

fwsim_status_t fwsim_kernel_reduce(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *a = &in->ap[1];
	if (isa_ap_num_elements(o) == 0)
		return FWSIM_OK;
	fwsim_status_t pst;
	if (reduce_par(k, isa_ap_num_elements(o), &pst))
		return pst;
	/* One accumulator per output element, in parts of at most
	 * FWSIM_REDUCE_MAX_ACC (fwsim_red_parts_t); o's reduced dims have
	 * extent 1, a's their whole extent. */
	fwsim_red_parts_t parts;
	fwsim_red_parts_init(&parts, a->rank, a->shape, in->param);
	uint64_t cap = parts.nout < FWSIM_REDUCE_MAX_ACC ? parts.nout : FWSIM_REDUCE_MAX_ACC;
	fwsim_acc_t *acc = malloc(cap * sizeof(*acc));
	if (!acc)
		return FWSIM_NOMEM;
	int64_t eo = (int64_t)isa_dtype_size(o->dtype), ea = (int64_t)isa_dtype_size(a->dtype);
	uint64_t first[ISA_MAX_RANK], len[ISA_MAX_RANK], flat = 0;
	fwsim_status_t st = FWSIM_OK;
	while (st == FWSIM_OK && fwsim_red_parts_next(&parts, first, len)) {
		isa_ap_t po = *o, pa = *a;
		int64_t off_o = 0, off_a = 0;
		for (uint32_t q = 0; q < o->rank; q++) {
			if (in->param >> q & 1)
				continue; /* reduced dims keep a's extent */
			off_o += (int64_t)first[q] * o->stride[q] * eo;
			off_a += (int64_t)first[q] * a->stride[q] * ea;
			po.shape[q] = pa.shape[q] = len[q];
		}
		st = reduce_part(k, &po, &pa, k->base[0] + off_o, k->base[1] + off_a, acc, flat);
		flat += isa_ap_num_elements(&po);
	}
	free(acc);
	return st;
}
