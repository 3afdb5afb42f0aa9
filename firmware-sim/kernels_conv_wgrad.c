/* CONV form W (docs/isa.md, "CONV"): weight gradients of 3x3 depthwise convolutions straight on their row-major planes, 16 kernel columns per 512-bit vector. */
#include <stdlib.h>
#include <string.h>

#include "conv.h"

/*
 * A depthwise weight gradient has 3x3 outputs per group, each a dot product
 * of the input (x, with padding) and the output gradient (the CONV's kernel,
 * dy) over every batch entry and position. Form E interleaved 8 groups by
 * lane (two 8x8 transposes per 8 columns of x and of dy): at 14x14, 2.3x
 * PyTorch's channels-last time. Here the lanes are 16 kernel columns of one
 * dy row, loaded as they lie; each of the 9 outputs keeps a vector of 16
 * partial sums, fed by x's row under that dy row shifted by the output's
 * column (a masked load: the padding and the lanes past the row load 0 and
 * touch no memory; a kernel dilation of 2, the forward's stride, loads 32
 * and keeps the even lanes). x's rows stream top to bottom, each loaded once
 * per column chunk for the three output rows it meets; where every kernel
 * row exists (dilation 1) a loop of its own steps pointers (and with one
 * chunk loads each dy row once). MobileNetV2's [8, 32, 56, 56] (4 chunks):
 * 0.29 -> 0.18 ms; [8, 576, 14, 14]: 0.36 -> 0.16 ms (PyTorch 0.16);
 * [8, 96, 112, 112] at dilation 2: 2.7 -> 1.46 ms (PyTorch 2.0).
 *
 * The order, which docs/isa.md states: lane l of an output's partial sums is
 * one chain of fma from 0 over (c, k0, chunk) of the terms at kernel column
 * k1 = 16 chunk + l (padding terms included, as form E's are); the output is
 * their sum pairwise, lanes l and l + 8, then l + 4, l + 2, l + 1.
 */

bool fwsim_conv_plan_wgrad(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	if ((j->form != 'A' && j->form != 'B') || a->L != 1 || b->L != 1 || a->Y != 3 || b->Y != 3 ||
	    a->S != 1 || b->S != 1 || a->D != b->D || a->D > 2 || b->K > 16 * CONV_ROWS_MAX_CHUNKS ||
	    j->si[4] != 1 || j->sw[4] != 1 || !fwsim_cpu_avx512())
		return false;
	j->form = 'W';
	j->scratch = b->X > 0 ? b->X : 1; /* a row of zeros */
	return true;
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)

#define WG_PF 8 /* rows ahead to prefetch */

/* The geometry of every plane: per column chunk, the kernel's lanes and x's
 * lanes and first column under each output column. */
typedef struct wg_geo {
	int64_t nch;
	bool pf;                                     /* prefetch rows ahead */
	__mmask16 km[CONV_ROWS_MAX_CHUNKS];          /* dy's lanes (k1 < K1) */
	__mmask16 xm[CONV_ROWS_MAX_CHUNKS][3][2];    /* x's, two halves at D 2 */
	int64_t xlo[CONV_ROWS_MAX_CHUNKS][3];        /* x's first column */
} wg_geo_t;

static void wg_geometry(const conv_job_t *j, wg_geo_t *g)
{
	const conv_dim_t *b = &j->d[1];
	int64_t d = b->D;
	g->nch = (b->K + 15) / 16;
	g->pf = j->d[0].X * j->si[3] >= 4096;
	for (int64_t ch = 0; ch < g->nch; ch++) {
		int64_t k0 = ch * 16, nv = b->K - k0 < 16 ? b->K - k0 : 16;
		g->km[ch] = (__mmask16)((1u << nv) - 1);
		/* output column y1: x columns lo + d l (l < nv) inside [0, X1) */
		for (int y1 = 0; y1 < 3; y1++) {
			int64_t lo = y1 + k0 * d - b->P;
			int64_t first = lo < 0 ? -lo : 0, end = b->X - lo;
			if (end > d * (nv - 1) + 1)
				end = d * (nv - 1) + 1;
			uint32_t m = first < 32 ? fwsim_conv_bits32(first, end) : 0;
			if (d == 2)
				m &= 0x55555555u;
			g->xlo[ch][y1] = lo;
			g->xm[ch][y1][0] = (__mmask16)m;
			g->xm[ch][y1][1] = (__mmask16)(m >> 16);
		}
	}
}

/* The 16 lanes' sum, pairwise: l + 8, then l + 4, l + 2, l + 1. */
__attribute__((target("avx512f,avx2,fma")))
static float wg_sum(__m512 v)
{
	__m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v),
				  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
	__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
	__m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
	return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

/* One chunk's masks and x's first columns, hoisted into locals. */
typedef struct wg_ch {
	__mmask16 km, xm[3][2];
	int64_t xlo[3];
} wg_ch_t;

static inline wg_ch_t wg_chunk(const wg_geo_t *g, int64_t ch)
{
	wg_ch_t m;
	m.km = g->km[ch];
	for (int y1 = 0; y1 < 3; y1++) {
		m.xm[y1][0] = g->xm[ch][y1][0];
		m.xm[y1][1] = g->xm[ch][y1][1];
		m.xlo[y1] = g->xlo[ch][y1];
	}
	return m;
}

/* One x row's terms for one chunk: the x row at row, the kernel rows of
 * output rows 0-2 at k[y0]. `rows` (a constant, bit y0 for output row y0)
 * says which output rows have a kernel row here: the others get no term at
 * all (not a zero term: x may be NaN there). No lane needs a mask beyond the
 * loads': x's and dy's lanes past the kernel row load 0, and their products
 * add 0. pf: where to prefetch x, kpf dy, or NULL. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline void wg_row(const int d, const int rows, const wg_ch_t *m, const float *row,
			  const float *const *k, const char *pf, const char *kpf, __m512 *s)
{
	if (pf) {
		_mm_prefetch(pf, _MM_HINT_T0);
		_mm_prefetch(pf + 64, _MM_HINT_T0);
		if (d == 2)
			_mm_prefetch(pf + 128, _MM_HINT_T0);
	}
	if (kpf)
		_mm_prefetch(kpf, _MM_HINT_T0);
	/* unrolled whole: the sums' indices must be constants (wg_plane_d) */
	__m512 v[3];
#pragma GCC unroll 3
	for (int y1 = 0; y1 < 3; y1++)
		v[y1] = fwsim_conv_row16(d, m->xm[y1], row + m->xlo[y1]);
#pragma GCC unroll 3
	for (int y0 = 0; y0 < 3; y0++) {
		if (!(rows >> y0 & 1))
			continue;
		__m512 dy = _mm512_maskz_loadu_ps(m->km, k[y0]);
#pragma GCC unroll 3
		for (int y1 = 0; y1 < 3; y1++)
			s[y0 * 3 + y1] = _mm512_fmadd_ps(v[y1], dy, s[y0 * 3 + y1]);
	}
}

/* The 9 outputs of one (n, g, o) plane (x at x, dy at k; xn, kn: elements
 * from them to the inputs of the plane this slot takes next, to prefetch)
 * into out9, row-major, at kernel dilation d; one1: the kernel's rows are one
 * chunk (d, one1 constants after inlining). The sums stay in 9 registers:
 * their array is only indexed by constants of unrolled loops (as an array
 * indexed in a loop it lived on the stack, a store and a load in every fma's
 * chain). Two planes per pass, sharing the loop's bookkeeping, measured the
 * same at 14x14 and 56x56 and 15% slower at dilation 2. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline void wg_plane_d(const int d, const int one1, const conv_job_t *j, const wg_geo_t *g,
			      const float *x, const float *k, int64_t xn, int64_t kn,
			      const float *zero, float *out9)
{
	const conv_dim_t *a = &j->d[0];
	const int64_t si3 = j->si[3], sw3 = j->sw[3];
	__m512 s[9];
#pragma GCC unroll 9
	for (int i = 0; i < 9; i++)
		s[i] = _mm512_setzero_ps();
	wg_ch_t m0 = wg_chunk(g, 0);
	/* x row t meets output row y0 at kernel row k0 = (t + P0 - y0) / d;
	 * t ascends, so each output's k0 does */
	int64_t t0 = -a->P, t1 = (a->K - 1) * d + 2 - a->P;
	/* at dilation 1 the rows where x's row and all three kernel rows exist
	 * run a loop of their own, pointers stepped per row (the general
	 * loop's per-row bookkeeping bounded it) */
	int64_t ts0 = t1 + 1, ts1 = t1;
	if (d == 1) {
		ts0 = 2 - a->P > 0 ? 2 - a->P : 0;
		ts1 = a->K - 1 - a->P < a->X - 1 ? a->K - 1 - a->P : a->X - 1;
		if (ts1 < ts0)
			ts0 = t1 + 1, ts1 = t1;
	}
	for (int64_t c = 0; c < j->C; c++) {
		const float *xc = x + c * j->si[2], *kc = k + c * j->sw[2];
		/* prefetch offsets (elements): large planes, x's row WG_PF
		 * ahead and dy's (the hardware's prefetchers stop at each page:
		 * 2.6x slower at MobileNetV2's 112x112); small ones, the same
		 * rows of the next planes (channel c + 1, else the plane this
		 * slot takes next: each of 13 lines came from L3 cold at 14x14) */
		int64_t xpf = g->pf ? WG_PF * si3 : c + 1 < j->C ? j->si[2] : xn - c * j->si[2];
		int64_t kpf = g->pf ? WG_PF * sw3 : c + 1 < j->C ? j->sw[2] : kn - c * j->sw[2];
		for (int64_t t = t0; t <= t1; t++) {
			if (t == ts0 && !one1) {
				/* rows of several chunks: per row, per chunk, its
				 * three kernel rows and x's three shifts */
				const float *row = xc + t * si3, *kr = kc + (t + a->P) * sw3;
				for (; t <= ts1; t++, row += si3, kr += sw3)
					for (int64_t ch = 0; ch < g->nch; ch++) {
						const char *pf = (const char *)(row + g->xlo[ch][0] + xpf);
						_mm_prefetch(pf, _MM_HINT_T0);
						_mm_prefetch(pf + 64, _MM_HINT_T0);
						_mm_prefetch((const char *)(kr + ch * 16 + kpf), _MM_HINT_T0);
						__m512 v0 = _mm512_maskz_loadu_ps(g->xm[ch][0][0], row + g->xlo[ch][0]);
						__m512 v1 = _mm512_maskz_loadu_ps(g->xm[ch][1][0], row + g->xlo[ch][1]);
						__m512 v2 = _mm512_maskz_loadu_ps(g->xm[ch][2][0], row + g->xlo[ch][2]);
#pragma GCC unroll 3
						for (int y0 = 0; y0 < 3; y0++) {
							__m512 dy = _mm512_maskz_loadu_ps(g->km[ch], kr + ch * 16 - y0 * sw3);
							s[y0 * 3] = _mm512_fmadd_ps(v0, dy, s[y0 * 3]);
							s[y0 * 3 + 1] = _mm512_fmadd_ps(v1, dy, s[y0 * 3 + 1]);
							s[y0 * 3 + 2] = _mm512_fmadd_ps(v2, dy, s[y0 * 3 + 2]);
						}
					}
			} else if (t == ts0) {
				/* each kernel row is loaded once, at the row it
				 * first meets (output row 0), and kept for rows 1
				 * and 2: a third of the loads; the masks, strides
				 * and pointers in locals */
				const __mmask16 km = m0.km, xm0 = m0.xm[0][0], xm1 = m0.xm[1][0],
						xm2 = m0.xm[2][0];
				const int64_t xl0 = m0.xlo[0], xl1 = m0.xlo[1], xl2 = m0.xlo[2];
				const float *row = xc + t * si3, *kr = kc + (t + a->P) * sw3;
				__m512 dy1 = _mm512_maskz_loadu_ps(km, kr - sw3);
				__m512 dy2 = _mm512_maskz_loadu_ps(km, kr - 2 * sw3);
				for (; t <= ts1; t++, row += si3, kr += sw3) {
					_mm_prefetch((const char *)(row + xl0 + xpf), _MM_HINT_T0);
					_mm_prefetch((const char *)(row + xl0 + xpf) + 64, _MM_HINT_T0);
					_mm_prefetch((const char *)(kr + kpf), _MM_HINT_T0);
					__m512 dy0 = _mm512_maskz_loadu_ps(km, kr);
					__m512 v0 = _mm512_maskz_loadu_ps(xm0, row + xl0);
					__m512 v1 = _mm512_maskz_loadu_ps(xm1, row + xl1);
					__m512 v2 = _mm512_maskz_loadu_ps(xm2, row + xl2);
					s[0] = _mm512_fmadd_ps(v0, dy0, s[0]);
					s[1] = _mm512_fmadd_ps(v1, dy0, s[1]);
					s[2] = _mm512_fmadd_ps(v2, dy0, s[2]);
					s[3] = _mm512_fmadd_ps(v0, dy1, s[3]);
					s[4] = _mm512_fmadd_ps(v1, dy1, s[4]);
					s[5] = _mm512_fmadd_ps(v2, dy1, s[5]);
					s[6] = _mm512_fmadd_ps(v0, dy2, s[6]);
					s[7] = _mm512_fmadd_ps(v1, dy2, s[7]);
					s[8] = _mm512_fmadd_ps(v2, dy2, s[8]);
					dy2 = dy1;
					dy1 = dy0;
				}
			}
			if (t > t1)
				break;
			bool in = t >= 0 && t < a->X;
			int64_t u = t + a->P;
			int64_t r[3] = { u / d, (u - 1) / d, (u - 2) / d };
			bool e[3] = { u % d == 0 && r[0] < a->K,
				      u >= 1 && (u - 1) % d == 0 && r[1] < a->K,
				      u >= 2 && (u - 2) % d == 0 && r[2] < a->K };
			int rows = (e[0] ? 1 : 0) | (e[1] ? 2 : 0) | (e[2] ? 4 : 0);
			const float *row = in ? xc + t * si3 : zero;
			for (int64_t ch = 0; ch < (one1 ? 1 : g->nch); ch++) {
				wg_ch_t m = one1 ? m0 : wg_chunk(g, ch);
				const float *kr[3];
				for (int y0 = 0; y0 < 3; y0++)
					kr[y0] = kc + (e[y0] ? r[y0] : 0) * sw3 + ch * 16;
				const char *pf = in ? (const char *)(row + m.xlo[0] + xpf) : NULL;
				const char *kp = e[0] ? (const char *)(kr[0] + kpf) : NULL;
				switch (rows) {
				case 7: wg_row(d, 7, &m, row, kr, pf, kp, s); break;
				case 6: wg_row(d, 6, &m, row, kr, pf, kp, s); break;
				case 5: wg_row(d, 5, &m, row, kr, pf, kp, s); break;
				case 4: wg_row(d, 4, &m, row, kr, pf, kp, s); break;
				case 3: wg_row(d, 3, &m, row, kr, pf, kp, s); break;
				case 2: wg_row(d, 2, &m, row, kr, pf, kp, s); break;
				case 1: wg_row(d, 1, &m, row, kr, pf, kp, s); break;
				default: break; /* no kernel row meets x's row */
				}
			}
		}
	}
#pragma GCC unroll 9
	for (int i = 0; i < 9; i++)
		out9[i] = wg_sum(s[i]);
}

__attribute__((target("avx512f,avx2,fma")))
static void wg_plane(const conv_job_t *j, const wg_geo_t *g, const float *x, const float *k,
		     int64_t xn, int64_t kn, const float *zero, float *out9)
{
	if (g->nch == 1)
		j->d[0].D == 1 ? wg_plane_d(1, 1, j, g, x, k, xn, kn, zero, out9)
			       : wg_plane_d(2, 1, j, g, x, k, xn, kn, zero, out9);
	else
		j->d[0].D == 1 ? wg_plane_d(1, 0, j, g, x, k, xn, kn, zero, out9)
			       : wg_plane_d(2, 0, j, g, x, k, xn, kn, zero, out9);
}

#else
typedef int wg_geo_t;
#define wg_geometry(j, g) ((void)0)
#define wg_plane(j, g, x, k, xn, kn, zero, out9) \
	((void)(x), (void)(k), (void)(xn), (void)(kn), memset(out9, 0, 9 * sizeof(float)))
#endif

fwsim_status_t fwsim_conv_item_wgrad(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	conv_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	fwsim_numchk_t *chk = kk.chk;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	/* a row of zeros for x's rows above and below the input */
	const float *zero = fwsim_conv_slot_scratch(j, slot);
	if (!zero)
		return FWSIM_NOMEM;
	wg_geo_t *g = malloc(sizeof(*g));
	if (!g)
		return FWSIM_NOMEM;
	wg_geometry(j, g);
	fwsim_status_t st = FWSIM_OK;
	uint64_t p0 = item * j->per_item, p1 = fwsim_conv_item_end(j, p0);
	for (uint64_t pi = p0; pi < p1; pi++) {
		int64_t gi = (int64_t)(pi / (uint64_t)j->N), n = (int64_t)(pi % (uint64_t)j->N);
		/* the plane this slot takes after pi (past the item's end: an
		 * address only prefetched) */
		int64_t gq = (int64_t)((pi + 1) / (uint64_t)j->N), nq = (int64_t)((pi + 1) % (uint64_t)j->N);
		const float *x = j->in + n * j->si[0] + gi * j->si[1];
		for (int64_t o = 0; o < j->O; o++) {
			if (fwsim_tick(&kk, (uint64_t)(9 * j->C * a->K * b->K))) {
				st = FWSIM_TIMEOUT;
				goto out;
			}
			const float *k = j->w + gi * j->sw[0] + o * j->sw[1];
			/* next: the plane's next kernel, else plane pi + 1 */
			int64_t xn = o + 1 < j->O ? 0 : (nq - n) * j->si[0] + (gq - gi) * j->si[1];
			int64_t kn = o + 1 < j->O ? j->sw[1] : (gq - gi) * j->sw[0] - o * j->sw[1];
			float out9[9];
			wg_plane(j, g, x, k, xn, kn, zero, out9);
			float *dst = j->out + n * j->so[0] + gi * j->so[1] + o * j->so[2];
			for (int y = 0; y < 9; y++)
				dst[y / 3 * j->so[3] + y % 3 * j->so[4]] = out9[y];
			if (chk)
				fwsim_numchk_block(chk, out9, 9,
						   (((uint64_t)n * (uint64_t)j->G + (uint64_t)gi) *
						    (uint64_t)j->O + (uint64_t)o) * 9);
		}
	}
out:
	free(g);
	return st;
}
