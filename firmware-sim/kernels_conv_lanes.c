/* CONV forms D and E (docs/isa.md, "CONV"): depthwise convolutions and their weight gradients, 8 groups per vector. */
#include <stdlib.h>
#include <string.h>

#include "conv.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>

/* Form D's sums: out[y0, y1, 8 lanes] = sum over k0, k1 (in that order, one
 * fma each, from 0) of w[k0, k1, lanes] * in[y0 S0 + k0 D0, y1 S1 + k1 D1,
 * lanes], in and out interleaved by lane (8 floats per position), in padded
 * to Wp columns. Eight outputs of a row at a time share each weight load. */
__attribute__((target("avx2,fma")))
static void conv_dw_rows_avx2(const float *in, int64_t wp, const float *w, float *out,
			      const conv_dim_t *a, const conv_dim_t *b)
{
	int64_t s1 = b->S * 8, d1 = b->D * 8;
	for (int64_t y0 = 0; y0 < a->Y; y0++) {
		float *orow = out + y0 * b->Y * 8;
		/* blocks of 8 outputs; a last partial block moves back to end at
		 * Y1 and recomputes a few outputs (the same bits) rather than
		 * running single chains, which wait on each fma's latency */
		int64_t y1 = 0;
		for (int64_t next = 0; b->Y >= 8 && next < b->Y; next = y1 + 8) {
			y1 = next + 8 <= b->Y ? next : b->Y - 8;
			__m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
			__m256 c4 = c0, c5 = c0, c6 = c0, c7 = c0;
			const float *wk = w;
			for (int64_t k0 = 0; k0 < a->K; k0++) {
				const float *p = in + ((y0 * a->S + k0 * a->D) * wp + y1 * b->S) * 8;
				for (int64_t k1 = 0; k1 < b->K; k1++, p += d1, wk += 8) {
					__m256 wv = _mm256_loadu_ps(wk);
					c0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p), c0);
					c1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + s1), c1);
					c2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 2 * s1), c2);
					c3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 3 * s1), c3);
					c4 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 4 * s1), c4);
					c5 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 5 * s1), c5);
					c6 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 6 * s1), c6);
					c7 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 7 * s1), c7);
				}
			}
			float *o = orow + y1 * 8;
			_mm256_storeu_ps(o, c0);
			_mm256_storeu_ps(o + 8, c1);
			_mm256_storeu_ps(o + 16, c2);
			_mm256_storeu_ps(o + 24, c3);
			_mm256_storeu_ps(o + 32, c4);
			_mm256_storeu_ps(o + 40, c5);
			_mm256_storeu_ps(o + 48, c6);
			_mm256_storeu_ps(o + 56, c7);
		}
		for (y1 = b->Y >= 8 ? b->Y : 0; y1 < b->Y; y1++) {
			__m256 c0 = _mm256_setzero_ps();
			const float *wk = w;
			for (int64_t k0 = 0; k0 < a->K; k0++) {
				const float *p = in + ((y0 * a->S + k0 * a->D) * wp + y1 * b->S) * 8;
				for (int64_t k1 = 0; k1 < b->K; k1++, p += d1, wk += 8)
					c0 = _mm256_fmadd_ps(_mm256_loadu_ps(wk), _mm256_loadu_ps(p), c0);
			}
			_mm256_storeu_ps(orow + y1 * 8, c0);
		}
	}
}

/* Form D's sums with unit column stride, AVX-512: two adjacent outputs' 8
 * lanes are 16 contiguous floats, so one zmm fma serves both (the weight's 8
 * lanes broadcast to both halves): half the loads and fmas of the AVX2 rows,
 * each lane the same chain (k0, k1 from 0), so the same bits. nz pairs from
 * output y1 of row y0. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline __mmask16 conv_dw_pairs_avx512(const int nz, const float *in, int64_t wp,
					     const float *w, float *o, const conv_dim_t *a,
					     const conv_dim_t *b, int64_t y0, int64_t y1)
{
	__m512 c[8];
	for (int q = 0; q < nz; q++)
		c[q] = _mm512_setzero_ps();
	const float *wk = w;
	int64_t d1 = b->D * 8;
	for (int64_t k0 = 0; k0 < a->K; k0++) {
		const float *p = in + ((y0 * a->S + k0 * a->D) * wp + y1) * 8;
		for (int64_t k1 = 0; k1 < b->K; k1++, p += d1, wk += 8) {
			__m512 wv = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(wk))));
			for (int q = 0; q < nz; q++)
				c[q] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(p + 16 * q), c[q]);
		}
	}
	/* lanes whose exponent is all ones (NaN, Inf), seen while in registers */
	const __m512i ex = _mm512_set1_epi32(0x7f800000);
	__mmask16 bad = 0;
	for (int q = 0; q < nz; q++) {
		_mm512_storeu_ps(o + 16 * q, c[q]);
		bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(c[q]), ex), ex);
	}
	return bad;
}

/* Form D's rows with unit column stride; returns whether any output (any
 * lane, the unused ones included) may be NaN or Inf: only then does the
 * caller scan the block. */
__attribute__((target("avx512f,avx2,fma")))
static int conv_dw_rows_avx512(const float *in, int64_t wp, const float *w, float *out,
			       const conv_dim_t *a, const conv_dim_t *b)
{
	int64_t Y = b->Y;
	__mmask16 bad = 0;
	for (int64_t y0 = 0; y0 < a->Y; y0++) {
		float *orow = out + y0 * Y * 8;
		if (Y >= 16) {
			/* blocks of 16 outputs; a last partial one moves back to end at Y */
			for (int64_t y1 = 0, next = 0; next < Y; next = y1 + 16) {
				y1 = next + 16 <= Y ? next : Y - 16;
				bad |= conv_dw_pairs_avx512(8, in, wp, w, orow + y1 * 8, a, b, y0, y1);
			}
			continue;
		}
		switch (Y / 2) {
		case 7: bad |= conv_dw_pairs_avx512(7, in, wp, w, orow, a, b, y0, 0); break;
		case 6: bad |= conv_dw_pairs_avx512(6, in, wp, w, orow, a, b, y0, 0); break;
		case 5: bad |= conv_dw_pairs_avx512(5, in, wp, w, orow, a, b, y0, 0); break;
		case 4: bad |= conv_dw_pairs_avx512(4, in, wp, w, orow, a, b, y0, 0); break;
		case 3: bad |= conv_dw_pairs_avx512(3, in, wp, w, orow, a, b, y0, 0); break;
		case 2: bad |= conv_dw_pairs_avx512(2, in, wp, w, orow, a, b, y0, 0); break;
		case 1: bad |= conv_dw_pairs_avx512(1, in, wp, w, orow, a, b, y0, 0); break;
		default: break;
		}
		if (Y % 2) {
			/* the odd last output: one 8-lane chain */
			int64_t y1 = Y - 1;
			__m256 c0 = _mm256_setzero_ps();
			const float *wk = w;
			for (int64_t k0 = 0; k0 < a->K; k0++) {
				const float *p = in + ((y0 * a->S + k0 * a->D) * wp + y1) * 8;
				for (int64_t k1 = 0; k1 < b->K; k1++, p += b->D * 8, wk += 8)
					c0 = _mm256_fmadd_ps(_mm256_loadu_ps(wk), _mm256_loadu_ps(p), c0);
			}
			_mm256_storeu_ps(orow + y1 * 8, c0);
			__m256i e = _mm256_and_si256(_mm256_castps_si256(c0), _mm256_set1_epi32(0x7f800000));
			bad |= (__mmask16)_mm256_movemask_ps(_mm256_castsi256_ps(
				_mm256_cmpeq_epi32(e, _mm256_set1_epi32(0x7f800000))));
		}
	}
	return bad != 0;
}

/* Form E's sums for nb outputs (their positions pos[] in the padded planes):
 * per kernel row k0, a chain of fma over k1 from 0, then added to total
 * (8 lanes per output). nb is a constant at every call, so the partial sums
 * stay in registers. */
#define CONV_DWG_MAX 9
__attribute__((target("avx2,fma"), always_inline))
static inline void conv_dwg_block(const int nb, const float *x, const int64_t *pos, const float *k,
				  int64_t K0, int64_t K1, int64_t rowstep, int64_t colstep,
				  float *total)
{
	const float *xq[CONV_DWG_MAX];
	for (int q = 0; q < nb; q++)
		xq[q] = x + pos[q] * 8;
	for (int64_t k0 = 0; k0 < K0; k0++) {
		__m256 p[CONV_DWG_MAX];
		for (int q = 0; q < nb; q++)
			p[q] = _mm256_setzero_ps();
		const float *kr = k + k0 * K1 * 8;
		int64_t off = k0 * rowstep;
		for (int64_t k1 = 0; k1 < K1; k1++, off += colstep) {
			__m256 kv = _mm256_loadu_ps(kr + k1 * 8);
			for (int q = 0; q < nb; q++)
				p[q] = _mm256_fmadd_ps(kv, _mm256_loadu_ps(xq[q] + off), p[q]);
		}
		for (int q = 0; q < nb; q++)
			_mm256_storeu_ps(total + q * 8, _mm256_add_ps(_mm256_loadu_ps(total + q * 8), p[q]));
	}
}

__attribute__((target("avx2,fma")))
static void conv_dwg_avx2(int nb, const float *x, const int64_t *pos, const float *k, int64_t K0,
			  int64_t K1, int64_t rowstep, int64_t colstep, float *total)
{
	switch (nb) {
	case 9: conv_dwg_block(9, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 8: conv_dwg_block(8, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 7: conv_dwg_block(7, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 6: conv_dwg_block(6, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 5: conv_dwg_block(5, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 4: conv_dwg_block(4, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 3: conv_dwg_block(3, x, pos, k, K0, K1, rowstep, colstep, total); return;
	case 2: conv_dwg_block(2, x, pos, k, K0, K1, rowstep, colstep, total); return;
	default: conv_dwg_block(1, x, pos, k, K0, K1, rowstep, colstep, total); return;
	}
}
#else
#define conv_dw_rows_avx2(in, wp, w, out, a, b) ((void)0)
#define conv_dw_rows_avx512(in, wp, w, out, a, b) 1
#define CONV_DWG_MAX 9
#define conv_dwg_avx2(nb, x, pos, k, K0, K1, rs, cs, total) ((void)(nb), (void)(total)) /* never chosen */
#endif

/*
 * Form D, depthwise (one input channel per group, no input dilation, at least
 * 8 groups, rows contiguous, AVX2 with FMA): items of (n, a block of 8
 * groups), whose planes are interleaved by lane into a zero-padded buffer
 * (8x8 register transposes, fwsim_copy_tile), so that every fma is a whole
 * vector of 8 groups whatever the plane's width (a 14-wide plane wasted 2 of
 * every 16 lanes, and form A's per-plane fill, tap setup and stores cost
 * twice its sums). Each output is the same fma chain as form A's, taps in
 * (k0, k1) order from 0 with the padding's zeros included, so the bits are
 * form A's.
 */

/* The end of the run of planes (or form D/E blocks) an item starting at p0
 * takes. */
uint64_t fwsim_conv_item_end(const conv_job_t *j, uint64_t p0)
{
	return p0 + j->per_item < j->n_planes ? p0 + j->per_item : j->n_planes;
}

/* The item's planes through fn (fwsim_conv_run_planes). */
static fwsim_status_t conv_planes(conv_job_t *j, uint64_t item, uint32_t slot, fwsim_watch_t *w,
				  fwsim_conv_plane_fn fn, void *geo)
{
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	fwsim_numchk_t *chk = kk.chk;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y;
	uint64_t p0 = item * j->per_item, p1 = fwsim_conv_item_end(j, p0);
	for (uint64_t pi = p0; pi < p1; pi++) {
		int64_t g = (int64_t)(pi / (uint64_t)j->N), n = (int64_t)(pi % (uint64_t)j->N);
		int64_t gn = (int64_t)((pi + 1) / (uint64_t)j->N), nn = (int64_t)((pi + 1) % (uint64_t)j->N);
		const float *x = j->in + n * j->si[0] + g * j->si[1];
		int64_t next = (nn - n) * j->si[0] + (gn - g) * j->si[1];
		for (int64_t o = 0; o < j->O; o++) {
			if (fwsim_tick(&kk, (uint64_t)(ny * a->K * b->K)))
				return FWSIM_TIMEOUT;
			float *dst = j->out + n * j->so[0] + g * j->so[1] + o * j->so[2];
			if (!fn(j, geo, x, next, j->w + g * j->sw[0] + o * j->sw[1], dst) || !chk)
				continue;
			uint64_t flat0 = (((uint64_t)n * (uint64_t)j->G + (uint64_t)g) * (uint64_t)j->O +
					  (uint64_t)o) * (uint64_t)ny;
			for (int64_t y0 = 0; y0 < a->Y; y0++)
				fwsim_numchk_block(chk, dst + y0 * j->so[3], (size_t)b->Y,
						   flat0 + (uint64_t)(y0 * b->Y));
		}
	}
	return FWSIM_OK;
}

fwsim_status_t fwsim_conv_run_planes(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w,
				     size_t geo_size, fwsim_conv_geo_fn init, fwsim_conv_plane_fn fn)
{
	conv_job_t *j = ctx;
	const float *zero = fwsim_conv_slot_scratch(j, slot);
	void *geo = zero ? malloc(geo_size) : NULL;
	if (!geo)
		return FWSIM_NOMEM;
	init(j, geo, zero);
	fwsim_status_t st = conv_planes(j, item, slot, w, fn, geo);
	free(geo);
	return st;
}

/* Lane interleaving: nl lanes x n columns, (l, c) from s + l ls + c 4 to
 * d + l 4 + c 32 (in), or from s + l 4 + c 32 to d + l ld + c 4 (out, in
 * false); bytes. Chunks of 8 columns of 8 lanes are one 8x8 register
 * transpose each, a last partial chunk moved back to end at n (rewriting a
 * few columns with the same values), as fwsim_copy_tile does; called with
 * 8 lanes directly, without its checks and transpose lookup per call, which
 * made the 14x14 depthwise rows 12-15% slower. */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
/* In: 8 lanes of n < 8 floats (lane l at s + l ls) interleaved at d (8 per
 * column): masked row loads (nothing past a lane's n floats is read), one
 * 8x8 transpose, n columns stored. A 7x7 plane's rows went through the
 * generic tile copy one element at a time: two thirds of MobileNetV2's 7x7
 * depthwise weight gradients. */
__attribute__((target("avx2")))
static void conv_dw_in_short(uint8_t *d, const uint8_t *s, int64_t ls, size_t n)
{
	_Alignas(32) float rows[8][8], cols[8][8];
	__m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	__m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
	for (int l = 0; l < 8; l++)
		_mm256_store_ps(rows[l], _mm256_maskload_ps((const float *)(const void *)(s + l * ls), mask));
	fwsim_tr8x8_u32((const uint8_t *)rows, 32, (uint8_t *)cols, 32);
	memcpy(d, cols, n * 32);
}
#endif

static void conv_dw_copy(uint8_t *d, int64_t ld, const uint8_t *s, int64_t ls, size_t nl, size_t n,
			 bool in)
{
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
	if (in && nl == 8 && n < 8) {
		conv_dw_in_short(d, s, ls, n);
		return;
	}
#endif
#if defined(__x86_64__) || defined(__i386__)
	if (n < 8 || nl < 8) {
#endif
		if (in)
			fwsim_copy_tile(4, d, 4, 32, s, ls, 4, nl, n);
		else
			fwsim_copy_tile(4, d, ld, 4, s, 4, 32, nl, n);
		return;
#if defined(__x86_64__) || defined(__i386__)
	}
	for (size_t c = 0, next = 0; next < n; next = c + 8) {
		c = next + 8 <= n ? next : n - 8;
		if (in)
			fwsim_tr8x8_u32(s + c * 4, ls, d + c * 32, 32);
		else
			fwsim_tr8x8_u32(s + c * 32, 32, d + c * 4, ld);
	}
#endif
}

/* Forms D and E: 8 groups per item block, their input interleaved into a
 * zero-padded Hp x Wp buffer of 8 floats per position, plus `extra` floats
 * per item; false when that would not fit ISA_CONV_SCRATCH_FLOATS. */
static bool conv_lanes_plan(conv_job_t *j, int form, __int128 extra)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	__int128 hp = (__int128)(a->Y - 1) * a->S + (__int128)(a->K - 1) * a->D + 1;
	__int128 wp = (__int128)(b->Y - 1) * b->S + (__int128)(b->K - 1) * b->D + 1;
	__int128 fl = 8 * hp * wp + extra;
	if (fl > ISA_CONV_SCRATCH_FLOATS)
		return false;
	j->dw_hp = (int64_t)hp;
	j->dw_wp = (int64_t)wp;
	j->scratch = (int64_t)fl;
	j->n_planes = (uint64_t)j->N * (uint64_t)((j->G + 7) / 8);
	j->form = form;
	return true;
}

void *fwsim_conv_slot_scratch(conv_job_t *j, uint32_t slot)
{
	if (!j->slot_scr[slot])
		j->slot_scr[slot] = calloc((size_t)j->scratch, sizeof(float));
	return j->slot_scr[slot];
}

/* Block pi of the item loop (block-major, so consecutive entries share the
 * block's kernels): its first group, batch entry and lane count. */
static size_t conv_lanes_block(const conv_job_t *j, uint64_t pi, int64_t *g0, int64_t *n)
{
	*g0 = (int64_t)(pi / (uint64_t)j->N) * 8;
	*n = (int64_t)(pi % (uint64_t)j->N);
	return j->G - *g0 < 8 ? (size_t)(j->G - *g0) : 8;
}

/* The input's part of the padded buffer pin from the nl planes at x (lane l at
 * x + l si[1]). */
static void conv_lanes_fill(const conv_job_t *j, float *pin, const float *x, size_t nl)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t wp = j->dw_wp;
	int64_t r0 = a->jlo > 0 ? a->jlo : 0, r1 = a->jlo + j->dw_hp < a->X ? a->jlo + j->dw_hp : a->X;
	int64_t c0 = b->jlo > 0 ? b->jlo : 0, c1 = b->jlo + wp < b->X ? b->jlo + wp : b->X;
	for (int64_t r = r0; r < r1 && c0 < c1; r++)
		conv_dw_copy((uint8_t *)(pin + ((r - a->jlo) * wp + (c0 - b->jlo)) * 8), 0,
			     (const uint8_t *)(x + r * j->si[3] + c0), j->si[1] * 4, nl, (size_t)(c1 - c0),
			     true);
}

bool fwsim_conv_plan_dw(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	if (j->form != 'A' || j->C != 1 || a->L != 1 || b->L != 1 || j->G < 8 ||
	    j->si[4] != 1 || j->so[4] != 1 || !fwsim_cpu_avx2_fma())
		return false;
	return conv_lanes_plan(j, 'D', 8 * ((__int128)a->Y * b->Y + (__int128)a->K * b->K));
}

fwsim_status_t fwsim_conv_item_dw(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	conv_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	fwsim_numchk_t *chk = kk.chk;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, nkk = a->K * b->K, wp = j->dw_wp;
	float *pin = fwsim_conv_slot_scratch(j, slot);
	if (!pin)
		return FWSIM_NOMEM;
	float *pout = pin + j->dw_hp * wp * 8, *wv = pout + ny * 8;
	uint64_t p0 = item * j->per_item, p1 = fwsim_conv_item_end(j, p0);
	int have512 = fwsim_cpu_avx512();
	for (uint64_t pi = p0; pi < p1; pi++) {
		int64_t g0, n;
		size_t nl = conv_lanes_block(j, pi, &g0, &n);
		conv_lanes_fill(j, pin, j->in + n * j->si[0] + g0 * j->si[1], nl);
		for (int64_t o = 0; o < j->O; o++) {
			if (fwsim_tick(&kk, (uint64_t)(ny * nkk * 8 + ny * 8)))
				return FWSIM_TIMEOUT;
			for (int64_t k0 = 0; k0 < a->K; k0++)
				for (int64_t k1 = 0; k1 < b->K; k1++)
					for (size_t l = 0; l < 8; l++)
						wv[(k0 * b->K + k1) * 8 + (int64_t)l] =
							l < nl ? j->w[(g0 + (int64_t)l) * j->sw[0] + o * j->sw[1] +
								      k0 * j->sw[3] + k1 * j->sw[4]]
							       : 0.0f;
			int maybe_bad = 1;
			if (b->S == 1 && have512)
				maybe_bad = conv_dw_rows_avx512(pin, wp, wv, pout, a, b);
			else
				conv_dw_rows_avx2(pin, wp, wv, pout, a, b);
			float *dst = j->out + n * j->so[0] + g0 * j->so[1] + o * j->so[2];
			for (int64_t y0 = 0; y0 < a->Y; y0++)
				conv_dw_copy((uint8_t *)(dst + y0 * j->so[3]), j->so[1] * 4,
					     (const uint8_t *)(pout + y0 * b->Y * 8), 0, nl, (size_t)b->Y,
					     false);
			/* the lanes past nl hold finite garbage or not: only the
			 * stored planes are scanned exactly */
			if (!chk || !maybe_bad || !fwsim_numchk_maybe_nonfinite(chk, pout, (size_t)(ny * 8)))
				continue;
			for (size_t l = 0; l < nl; l++) {
				const float *pl = dst + (int64_t)l * j->so[1];
				uint64_t flat0 = (((uint64_t)n * (uint64_t)j->G + (uint64_t)g0 + l) *
						  (uint64_t)j->O + (uint64_t)o) * (uint64_t)ny;
				for (int64_t y0 = 0; y0 < a->Y; y0++)
					fwsim_numchk_block(chk, pl + y0 * j->so[3], (size_t)b->Y,
							   flat0 + (uint64_t)(y0 * b->Y));
			}
		}
	}
	return FWSIM_OK;
}

/*
 * Form E, a depthwise weight gradient (form B's shapes, at least 8 groups,
 * contiguous input rows, AVX2 with FMA): items of (n, a block of 8 groups);
 * per input channel c (a batch entry of the forward) the block's input planes
 * are interleaved by lane into a zero-padded buffer, and the kernel's (the
 * output gradient's), and each output (a tap of the forward's kernel) sums
 * 8 groups per vector: per (c, k0), a chain of fma over k1 from 0, added to
 * the output's running total in (c, k0) order. Outputs go CONV_DWG_MAX at a
 * time, sharing each kernel load.
 */
bool fwsim_conv_plan_dwg(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	/* form A's runs are output rows: under 8 outputs long (a depthwise
	 * weight gradient of 7x7 planes has rows of 3) they fill a vector
	 * partly, 30 ms where form E takes 13 for MobileNetV2's [96, 960, 7, 7] */
	bool short_rows = j->form == 'A' && a->L == 1 && b->L == 1 && b->Y < 8;
	if ((j->form != 'B' && !short_rows) || j->G < 8 || j->si[4] != 1 || !fwsim_cpu_avx2_fma())
		return false;
	__int128 ny = (__int128)a->Y * b->Y;
	return conv_lanes_plan(j, 'E', 8 * ((__int128)a->K * b->K + j->O * ny) + 3 * ny);
}

fwsim_status_t fwsim_conv_item_dwg(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	conv_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	fwsim_numchk_t *chk = kk.chk;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, nkk = a->K * b->K, wp = j->dw_wp;
	/* the 8-byte positions first, where the allocation's alignment holds */
	int64_t *pos = fwsim_conv_slot_scratch(j, slot);
	if (!pos)
		return FWSIM_NOMEM;
	float *pin = (float *)(void *)(pos + ny), *kil = pin + j->dw_hp * wp * 8;
	float *total = kil + nkk * 8, *one = total + j->O * ny * 8;
	for (int64_t y = 0; y < ny; y++)
		pos[y] = (y / b->Y) * a->S * wp + (y % b->Y) * b->S;
	uint64_t p0 = item * j->per_item, p1 = fwsim_conv_item_end(j, p0);
	for (uint64_t pi = p0; pi < p1; pi++) {
		int64_t g0, n;
		size_t nl = conv_lanes_block(j, pi, &g0, &n);
		memset(total, 0, (size_t)(j->O * ny * 8) * sizeof(float));
		for (int64_t c = 0; c < j->C; c++) {
			conv_lanes_fill(j, pin, j->in + n * j->si[0] + g0 * j->si[1] + c * j->si[2], nl);
			for (int64_t o = 0; o < j->O; o++) {
				if (fwsim_tick(&kk, (uint64_t)(ny * nkk * 8 + nkk * 8)))
					return FWSIM_TIMEOUT;
				const float *k0p = j->w + g0 * j->sw[0] + o * j->sw[1] + c * j->sw[2];
				/* rows one after another: the plane copied as one row
				 * (7x7 kernels' rows of 7 went element by element) */
				if (j->sw[4] == 1 && j->sw[3] == b->K) {
					conv_dw_copy((uint8_t *)kil, 0, (const uint8_t *)k0p, j->sw[0] * 4, nl,
						     (size_t)nkk, true);
				} else {
					for (int64_t k0 = 0; k0 < a->K; k0++) {
						const float *kr = k0p + k0 * j->sw[3];
						uint8_t *kd = (uint8_t *)(kil + k0 * b->K * 8);
						if (j->sw[4] == 1)
							conv_dw_copy(kd, 0, (const uint8_t *)kr, j->sw[0] * 4, nl,
								     (size_t)b->K, true);
						else
							fwsim_copy_tile(4, kd, 4, 32, (const uint8_t *)kr,
									j->sw[0] * 4, j->sw[4] * 4, nl,
									(size_t)b->K);
					}
				}
				float *tot = total + o * ny * 8;
				/* blocks of CONV_DWG_MAX outputs (totals accumulate: no
				 * block may overlap another) */
				for (int64_t y = 0; y < ny; y += CONV_DWG_MAX) {
					int nb = ny - y < CONV_DWG_MAX ? (int)(ny - y) : CONV_DWG_MAX;
					conv_dwg_avx2(nb, pin, pos + y, kil, a->K, b->K, a->D * wp * 8, b->D * 8,
						      tot + y * 8);
				}
			}
		}
		for (int64_t o = 0; o < j->O; o++) {
			const float *tot = total + o * ny * 8;
			for (size_t l = 0; l < nl; l++) {
				float *dst = j->out + n * j->so[0] + (g0 + (int64_t)l) * j->so[1] + o * j->so[2];
				for (int64_t y = 0; y < ny; y++) {
					one[y] = tot[y * 8 + (int64_t)l];
					dst[(y / b->Y) * j->so[3] + (y % b->Y) * j->so[4]] = one[y];
				}
				if (chk)
					fwsim_numchk_block(chk, one, (size_t)ny,
							   (((uint64_t)n * (uint64_t)j->G + (uint64_t)g0 + l) *
							    (uint64_t)j->O + (uint64_t)o) * (uint64_t)ny);
			}
		}
	}
	return FWSIM_OK;
}
