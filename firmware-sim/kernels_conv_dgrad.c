/* CONV form T (docs/isa.md, "CONV"): input gradients of stride-2 3x3 depthwise convolutions (input dilation 2) straight on their row-major planes, 32 outputs of a row per pair of 512-bit vectors. */
#include "conv.h"

/*
 * The input gradient of a stride-2 convolution is a convolution of the
 * output gradient dilated by 2 (zeros between its elements). Of the 9 taps
 * of an output, those landing on a zero are holes, never multiplied (docs/
 * isa.md); which are holes depends only on the output's row and column
 * parity: 1, 2, 2 or 4 taps remain. Form A runs that as phase planes, 8
 * outputs of a row per vector. Here an output row's even columns are one
 * vector of 16 and its odd columns another: the inputs under one tap of 16
 * same-parity outputs are 16 consecutive input elements, one masked load
 * (the padding's lanes load 0 and touch no memory). The two vectors are
 * interleaved into 32 consecutive outputs (two permutes) and stored. Each
 * output is form A's chain of fma from 0 over its non-hole taps in (k0, k1)
 * order, padding taps included: the same bits. The output is 4 times the
 * input: the loop is bound by its stores.
 */

bool fwsim_conv_plan_dgrad(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	if (j->form != 'A' || j->C != 1 || a->L != 2 || b->L != 2 || a->K != 3 || b->K != 3 ||
	    a->D != 1 || b->D != 1 || a->S != 1 || b->S != 1 || b->Y > 32 * CONV_ROWS_MAX_CHUNKS ||
	    j->si[4] != 1 || j->so[4] != 1 || !fwsim_cpu_avx512())
		return false;
	j->form = 'T';
	j->scratch = b->X > 0 ? b->X : 1; /* a row of zeros */
	return true;
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)

/* The taps of one parity of a dim: output index y of parity p meets the
 * input at (y + k - P) / 2 for the k with y + k - P even. */
typedef struct dg_taps {
	int n;      /* 1 or 2 */
	int k[2];   /* in ascending order */
} dg_taps_t;

static dg_taps_t dg_parity(int64_t par, int64_t pad)
{
	dg_taps_t t = { 0, { 0, 0 } };
	for (int k = 0; k < 3; k++)
		if (((par + k - pad) % 2 + 2) % 2 == 0)
			t.k[t.n++] = k;
	return t;
}

/* Per column block (32 outputs from 32 cb), per parity: each tap's first
 * input column and lanes; the two store masks. */
typedef struct dg_geo {
	const float *zero;                          /* a row of X1 zeros */
	int64_t nblk;
	dg_taps_t col[2];                           /* k1 per column parity */
	int64_t q[CONV_ROWS_MAX_CHUNKS][2][2];      /* [blk][parity][tap] */
	__mmask16 m[CONV_ROWS_MAX_CHUNKS][2][2];
	__mmask16 st[CONV_ROWS_MAX_CHUNKS][2];      /* outputs cb + [0, 16), + [16, 32) */
} dg_geo_t;

static void dg_geometry(const conv_job_t *j, void *geo, const float *zero)
{
	dg_geo_t *g = geo;
	const conv_dim_t *b = &j->d[1];
	g->zero = zero;
	g->nblk = (b->Y + 31) / 32;
	for (int par = 0; par < 2; par++)
		g->col[par] = dg_parity(par, b->P);
	for (int64_t blk = 0; blk < g->nblk; blk++) {
		int64_t cb = blk * 32;
		for (int h = 0; h < 2; h++) {
			int64_t left = b->Y - cb - 16 * h;
			g->st[blk][h] = left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
		}
		for (int par = 0; par < 2; par++) {
			int64_t c0 = cb + par;
			/* lanes l < nv: outputs c0 + 2 l inside the row */
			int64_t nv = c0 < b->Y ? (b->Y - c0 + 1) / 2 : 0;
			if (nv > 16)
				nv = 16;
			for (int t = 0; t < g->col[par].n; t++) {
				int64_t q = (c0 + g->col[par].k[t] - b->P) / 2;
				int64_t first = q < 0 ? -q : 0, end = b->X - q < nv ? b->X - q : nv;
				g->q[blk][par][t] = q;
				g->m[blk][par][t] = first < 16 ? (__mmask16)fwsim_conv_bits32(first, end) : 0;
			}
		}
	}
}

/* One parity's 16 outputs: the chain over the row taps (rows at r[0..nr))
 * and the column taps of parity par, in (k0, k1) order. nr, nc constants
 * after inlining. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline __m512 dg_vec(const int nr, const int nc, const float *const *r, const int *k0,
			    const dg_geo_t *g, int64_t blk, int par, const float *w, int64_t sw3,
			    int64_t sw4)
{
	__m512 acc = _mm512_setzero_ps();
	for (int a = 0; a < nr; a++)
		for (int t = 0; t < nc; t++) {
			__m512 x = _mm512_maskz_loadu_ps(g->m[blk][par][t], r[a] + g->q[blk][par][t]);
			float wk = w[k0[a] * sw3 + g->col[par].k[t] * sw4];
			acc = _mm512_fmadd_ps(_mm512_set1_ps(wk), x, acc);
		}
	return acc;
}

/* One output row: its row taps (nr rows at r, kernel rows k0), every column
 * block; a stored lane that is NaN or Inf leaves a 0 in *fin. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline void dg_row(const int nr, const conv_job_t *j, const dg_geo_t *g,
			  const float *const *r, const int *k0, const float *w, float *o, __m512i *fin)
{
	const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
	const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
	const __m512i ex = _mm512_set1_epi32(0x7f800000);
	int64_t sw3 = j->sw[3], sw4 = j->sw[4];
	for (int64_t blk = 0; blk < g->nblk; blk++) {
		__m512 e, d;
		/* the parities' column tap counts are 1 and 2, in either order */
		if (g->col[0].n == 1)
			e = dg_vec(nr, 1, r, k0, g, blk, 0, w, sw3, sw4),
			d = dg_vec(nr, 2, r, k0, g, blk, 1, w, sw3, sw4);
		else
			e = dg_vec(nr, 2, r, k0, g, blk, 0, w, sw3, sw4),
			d = dg_vec(nr, 1, r, k0, g, blk, 1, w, sw3, sw4);
		__m512 v0 = _mm512_permutex2var_ps(e, lo, d), v1 = _mm512_permutex2var_ps(e, hi, d);
		_mm512_mask_storeu_ps(o + blk * 32, g->st[blk][0], v0);
		_mm512_mask_storeu_ps(o + blk * 32 + 16, g->st[blk][1], v1);
		*fin = _mm512_mask_min_epu32(*fin, g->st[blk][0], *fin,
					     _mm512_andnot_si512(_mm512_castps_si512(v0), ex));
		*fin = _mm512_mask_min_epu32(*fin, g->st[blk][1], *fin,
					     _mm512_andnot_si512(_mm512_castps_si512(v1), ex));
	}
}

/* One (n, g, o) plane; returns whether an output may be NaN or Inf. */
__attribute__((target("avx512f,avx2,fma")))
static int dg_plane(const conv_job_t *j, void *geo, const float *x, int64_t next, const float *w,
		    float *dst)
{
	const dg_geo_t *g = geo;
	const float *zero = g->zero;
	(void)next;
	const conv_dim_t *a = &j->d[0];
	__m512i fin = _mm512_set1_epi32(-1);
	dg_taps_t rows[2] = { dg_parity(0, a->P), dg_parity(1, a->P) };
	for (int64_t y = 0; y < a->Y; y++) {
		const dg_taps_t *rt = &rows[y % 2];
		const float *r[2];
		for (int t = 0; t < rt->n; t++) {
			int64_t ri = (y + rt->k[t] - a->P) / 2;
			r[t] = ri >= 0 && ri < a->X ? x + ri * j->si[3] : zero;
		}
		if (rt->n == 1)
			dg_row(1, j, g, r, rt->k, w, dst + y * j->so[3], &fin);
		else
			dg_row(2, j, g, r, rt->k, w, dst + y * j->so[3], &fin);
	}
	return _mm512_cmpeq_epi32_mask(fin, _mm512_setzero_si512()) != 0;
}

#else
typedef int dg_geo_t;
/* never planned: fwsim_cpu_avx512() is 0 in this build */
#define dg_geometry NULL
#define dg_plane NULL
#endif

fwsim_status_t fwsim_conv_item_dgrad(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	return fwsim_conv_run_planes(ctx, item, slot, w, sizeof(dg_geo_t), dg_geometry, dg_plane);
}
