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
 * per column chunk for the three output rows it meets; two planes go
 * together, sharing the loop's bookkeeping; where every kernel row exists
 * (dilation 1) a loop of its own steps pointers (and with one chunk loads
 * each dy row once). MobileNetV2's [8, 32, 56, 56] (4 chunks): 0.29 ->
 * 0.18 ms. 14x14: 0.36 -> 0.21 ms for MobileNetV2's [8, 576] (PyTorch
 * 0.16); 112x112 at dilation 2: 2.7 -> 1.6-1.8 ms (PyTorch 2.0).
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

/* One x row's terms for one chunk of np planes: the x rows at row[p], the
 * kernel rows of output rows 0-2 at k[p][y0]. `rows` (a constant, bit y0
 * for output row y0) says which output rows have a kernel row here: the
 * others get no term at all (not a zero term: x may be NaN there). No lane
 * needs a mask beyond the loads': x's and dy's lanes past the kernel row load
 * 0, and their products add 0. pf[p]: where to prefetch x, kpf[p] dy, or
 * NULL. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline void wg_row(const int np, const int d, const int rows, const wg_ch_t *m,
			  const float *const *row, const float *const (*k)[3], const char *const *pf,
			  const char *const *kpf, __m512 (*s)[9])
{
	__m512 v[2][3];
#pragma GCC unroll 2
	for (int p = 0; p < np; p++) {
		if (pf[p]) {
			_mm_prefetch(pf[p], _MM_HINT_T0);
			_mm_prefetch(pf[p] + 64, _MM_HINT_T0);
			if (d == 2)
				_mm_prefetch(pf[p] + 128, _MM_HINT_T0);
		}
		if (kpf[p])
			_mm_prefetch(kpf[p], _MM_HINT_T0);
#pragma GCC unroll 3
		for (int y1 = 0; y1 < 3; y1++)
			v[p][y1] = fwsim_conv_row16(d, m->xm[y1], row[p] + m->xlo[y1]);
	}
#pragma GCC unroll 3
	for (int y0 = 0; y0 < 3; y0++) {
		if (!(rows >> y0 & 1))
			continue;
#pragma GCC unroll 2
		for (int p = 0; p < np; p++) {
			__m512 dy = _mm512_maskz_loadu_ps(m->km, k[p][y0]);
#pragma GCC unroll 3
			for (int y1 = 0; y1 < 3; y1++)
				s[p][y0 * 3 + y1] = _mm512_fmadd_ps(v[p][y1], dy, s[p][y0 * 3 + y1]);
		}
	}
}

/* The 9 outputs of np planes (1 or 2: (n, g, o) pairs, x at x[p], dy at k[p];
 * xn[p], kn[p]: elements from them to the inputs of the plane this slot takes
 * next, to prefetch) into out9[p], row-major, at kernel dilation d; one1:
 * the kernel's rows are one chunk (np, d, one1 constants after inlining). Two planes share the
 * loop's bookkeeping. The sums stay in 18 registers: their arrays are only
 * indexed by constants of unrolled loops (as an array indexed in a loop they
 * lived on the stack, a store and a load in every fma's chain). */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline void wg_planes(const int np, const int d, const int one1, const conv_job_t *j,
			     const wg_geo_t *g, const float *const *x, const float *const *k,
			     const int64_t *xn, const int64_t *kn, const float *zero, float (*out9)[9])
{
	const conv_dim_t *a = &j->d[0];
	__m512 s[2][9];
#pragma GCC unroll 2
	for (int p = 0; p < np; p++)
#pragma GCC unroll 9
		for (int i = 0; i < 9; i++)
			s[p][i] = _mm512_setzero_ps();
	wg_ch_t m0 = wg_chunk(g, 0);
	/* x row t meets output row y0 at kernel row k0 = (t + P0 - y0) / d;
	 * t ascends, so each output's k0 does */
	int64_t t0 = -a->P, t1 = (a->K - 1) * d + 2 - a->P;
	for (int64_t c = 0; c < j->C; c++) {
		/* prefetch offsets (elements): large planes, x's row WG_PF
		 * ahead and dy's (the hardware's prefetchers stop at each page:
		 * 2.6x slower at MobileNetV2's 112x112); small ones, the same
		 * rows of the next planes (channel c + 1, else the plane this
		 * slot takes next: each of 13 lines came from L3 cold at 14x14) */
		int64_t xpf[2], kpf[2];
		for (int p = 0; p < np; p++) {
			xpf[p] = g->pf ? WG_PF * j->si[3] : c + 1 < j->C ? j->si[2] : xn[p] - c * j->si[2];
			kpf[p] = g->pf ? WG_PF * j->sw[3] : c + 1 < j->C ? j->sw[2] : kn[p] - c * j->sw[2];
		}
		/* at dilation 1 the rows where x's row and all three kernel
		 * rows exist run a loop of their own, pointers stepped per row
		 * (the general loop's per-row bookkeeping bounded it) */
		int64_t ts0 = t1 + 1, ts1 = t1;
		if (d == 1) {
			ts0 = 2 - a->P > 0 ? 2 - a->P : 0;
			ts1 = a->K - 1 - a->P < a->X - 1 ? a->K - 1 - a->P : a->X - 1;
			if (ts1 < ts0)
				ts0 = t1 + 1, ts1 = t1;
		}
		for (int64_t t = t0; t <= t1; t++) {
			if (t == ts0 && !one1) {
				/* rows of several chunks: per row, per chunk, its
				 * three kernel rows and x's three shifts */
				const int64_t si3 = j->si[3], sw3 = j->sw[3];
#pragma GCC unroll 2
				for (int p = 0; p < np; p++) {
					const float *row = x[p] + c * j->si[2] + t * si3;
					const float *kr = k[p] + c * j->sw[2] + (t + a->P) * sw3;
					for (int64_t tt = t; tt <= ts1; tt++, row += si3, kr += sw3)
						for (int64_t ch = 0; ch < g->nch; ch++) {
							const char *pf = (const char *)(row + g->xlo[ch][0] + xpf[p]);
							_mm_prefetch(pf, _MM_HINT_T0);
							_mm_prefetch(pf + 64, _MM_HINT_T0);
							_mm_prefetch((const char *)(kr + ch * 16 + kpf[p]), _MM_HINT_T0);
							__mmask16 km = g->km[ch];
							__m512 v0 = _mm512_maskz_loadu_ps(g->xm[ch][0][0], row + g->xlo[ch][0]);
							__m512 v1 = _mm512_maskz_loadu_ps(g->xm[ch][1][0], row + g->xlo[ch][1]);
							__m512 v2 = _mm512_maskz_loadu_ps(g->xm[ch][2][0], row + g->xlo[ch][2]);
							for (int y0 = 0; y0 < 3; y0++) {
								__m512 dy = _mm512_maskz_loadu_ps(km, kr + ch * 16 - y0 * sw3);
								s[p][y0 * 3] = _mm512_fmadd_ps(v0, dy, s[p][y0 * 3]);
								s[p][y0 * 3 + 1] = _mm512_fmadd_ps(v1, dy, s[p][y0 * 3 + 1]);
								s[p][y0 * 3 + 2] = _mm512_fmadd_ps(v2, dy, s[p][y0 * 3 + 2]);
							}
						}
				}
			} else if (t == ts0) {
				/* each kernel row is loaded once, at the row it
				 * first meets (output row 0), and kept for rows 1
				 * and 2: a third of the loads. A plane at a time,
				 * its masks, strides and pointers in locals (the
				 * two planes together spilled them each row). */
				const int64_t si3 = j->si[3], sw3 = j->sw[3];
				const __mmask16 km = m0.km, xm0 = m0.xm[0][0], xm1 = m0.xm[1][0],
						xm2 = m0.xm[2][0];
				const int64_t xl0 = m0.xlo[0], xl1 = m0.xlo[1], xl2 = m0.xlo[2];
				int64_t u = t + a->P;
#pragma GCC unroll 2
				for (int p = 0; p < np; p++) {
					const float *row = x[p] + c * j->si[2] + t * si3;
					const float *kr = k[p] + c * j->sw[2] + u * sw3;
					__m512 dy1 = _mm512_maskz_loadu_ps(km, kr - sw3);
					__m512 dy2 = _mm512_maskz_loadu_ps(km, kr - 2 * sw3);
					for (int64_t tt = t; tt <= ts1; tt++, row += si3, kr += sw3) {
						_mm_prefetch((const char *)(row + xl0 + xpf[p]), _MM_HINT_T0);
						_mm_prefetch((const char *)(row + xl0 + xpf[p]) + 64, _MM_HINT_T0);
						_mm_prefetch((const char *)(kr + kpf[p]), _MM_HINT_T0);
						__m512 dy0 = _mm512_maskz_loadu_ps(km, kr);
						__m512 v0 = _mm512_maskz_loadu_ps(xm0, row + xl0);
						__m512 v1 = _mm512_maskz_loadu_ps(xm1, row + xl1);
						__m512 v2 = _mm512_maskz_loadu_ps(xm2, row + xl2);
						s[p][0] = _mm512_fmadd_ps(v0, dy0, s[p][0]);
						s[p][1] = _mm512_fmadd_ps(v1, dy0, s[p][1]);
						s[p][2] = _mm512_fmadd_ps(v2, dy0, s[p][2]);
						s[p][3] = _mm512_fmadd_ps(v0, dy1, s[p][3]);
						s[p][4] = _mm512_fmadd_ps(v1, dy1, s[p][4]);
						s[p][5] = _mm512_fmadd_ps(v2, dy1, s[p][5]);
						s[p][6] = _mm512_fmadd_ps(v0, dy2, s[p][6]);
						s[p][7] = _mm512_fmadd_ps(v1, dy2, s[p][7]);
						s[p][8] = _mm512_fmadd_ps(v2, dy2, s[p][8]);
						dy2 = dy1;
						dy1 = dy0;
					}
				}
			}
			if (t == ts0) {
				t = ts1 + 1;
				if (t > t1)
					break;
			}
			bool in = t >= 0 && t < a->X;
			int64_t u = t + a->P;
			int64_t r[3] = { u / d, (u - 1) / d, (u - 2) / d };
			__mmask16 e[3];
			e[0] = u % d == 0 && r[0] < a->K ? 0xffff : 0;
			e[1] = u >= 1 && (u - 1) % d == 0 && r[1] < a->K ? 0xffff : 0;
			e[2] = u >= 2 && (u - 2) % d == 0 && r[2] < a->K ? 0xffff : 0;
			int rows = (e[0] ? 1 : 0) | (e[1] ? 2 : 0) | (e[2] ? 4 : 0);
			int64_t xo = c * j->si[2] + t * j->si[3];
			int64_t ko[3];
			for (int y0 = 0; y0 < 3; y0++)
				ko[y0] = c * j->sw[2] + (e[y0] ? r[y0] : 0) * j->sw[3];
			for (int64_t ch = 0; ch < (one1 ? 1 : g->nch); ch++) {
				wg_ch_t mc = one1 ? m0 : wg_chunk(g, ch);
				const wg_ch_t *m = &mc;
				const float *row[2], *kr[2][3];
				const char *pf[2], *kp[2];
#pragma GCC unroll 2
				for (int p = 0; p < np; p++) {
					row[p] = in ? x[p] + xo : zero;
					pf[p] = in ? (const char *)(row[p] + m->xlo[0] + xpf[p]) : NULL;
					kp[p] = e[0] ? (const char *)(k[p] + ko[0] + ch * 16 + kpf[p]) : NULL;
					for (int y0 = 0; y0 < 3; y0++)
						kr[p][y0] = k[p] + ko[y0] + ch * 16;
				}
				switch (rows) {
				case 7: wg_row(np, d, 7, m, row, kr, pf, kp, s); break;
				case 6: wg_row(np, d, 6, m, row, kr, pf, kp, s); break;
				case 5: wg_row(np, d, 5, m, row, kr, pf, kp, s); break;
				case 4: wg_row(np, d, 4, m, row, kr, pf, kp, s); break;
				case 3: wg_row(np, d, 3, m, row, kr, pf, kp, s); break;
				case 2: wg_row(np, d, 2, m, row, kr, pf, kp, s); break;
				case 1: wg_row(np, d, 1, m, row, kr, pf, kp, s); break;
				default: break; /* no kernel row meets x's row */
				}
			}
		}
	}
#pragma GCC unroll 2
	for (int p = 0; p < np; p++)
#pragma GCC unroll 9
		for (int i = 0; i < 9; i++)
			out9[p][i] = wg_sum(s[p][i]);
}

__attribute__((target("avx512f,avx2,fma")))
static void wg_plane(const int np, const conv_job_t *j, const wg_geo_t *g, const float *const *x,
		     const float *const *k, const int64_t *xn, const int64_t *kn, const float *zero,
		     float (*out9)[9])
{
	bool one1 = g->nch == 1;
	if (np == 2 && one1)
		j->d[0].D == 1 ? wg_planes(2, 1, 1, j, g, x, k, xn, kn, zero, out9)
			       : wg_planes(2, 2, 1, j, g, x, k, xn, kn, zero, out9);
	else if (np == 2)
		j->d[0].D == 1 ? wg_planes(2, 1, 0, j, g, x, k, xn, kn, zero, out9)
			       : wg_planes(2, 2, 0, j, g, x, k, xn, kn, zero, out9);
	else
		j->d[0].D == 1 ? wg_planes(1, 1, 0, j, g, x, k, xn, kn, zero, out9)
			       : wg_planes(1, 2, 0, j, g, x, k, xn, kn, zero, out9);
}

#else
typedef int wg_geo_t;
#define wg_geometry(j, g) ((void)0)
#define wg_plane(np, j, g, x, k, xn, kn, zero, out9) \
	((void)(x), (void)(k), (void)(xn), (void)(kn), memset(out9, 0, 18 * sizeof(float)))
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
	/* planes two at a time (any two: each has its own outputs) */
	for (uint64_t pi = p0; pi < p1; pi += 2) {
		int np = pi + 1 < p1 ? 2 : 1;
		int64_t gi[2], n[2];
		for (int p = 0; p < np; p++) {
			gi[p] = (int64_t)((pi + (uint64_t)p) / (uint64_t)j->N);
			n[p] = (int64_t)((pi + (uint64_t)p) % (uint64_t)j->N);
		}
		for (int64_t o = 0; o < j->O; o++) {
			if (fwsim_tick(&kk, (uint64_t)(9 * np * j->C * a->K * b->K))) {
				st = FWSIM_TIMEOUT;
				goto out;
			}
			const float *x[2], *k[2];
			int64_t xn[2], kn[2];
			float out9[2][9];
			for (int p = 0; p < np; p++) {
				x[p] = j->in + n[p] * j->si[0] + gi[p] * j->si[1];
				k[p] = j->w + gi[p] * j->sw[0] + o * j->sw[1];
				/* what this slot takes next: the plane's next kernel,
				 * else the plane np on (past the item's end: an
				 * address only prefetched) */
				uint64_t q = pi + (uint64_t)(p + np);
				int64_t gq = (int64_t)(q / (uint64_t)j->N), nq = (int64_t)(q % (uint64_t)j->N);
				xn[p] = o + 1 < j->O ? 0 : (nq - n[p]) * j->si[0] + (gq - gi[p]) * j->si[1];
				kn[p] = o + 1 < j->O ? j->sw[1] : (gq - gi[p]) * j->sw[0] - o * j->sw[1];
			}
			wg_plane(np, j, g, x, k, xn, kn, zero, out9);
			for (int p = 0; p < np; p++) {
				float *dst = j->out + n[p] * j->so[0] + gi[p] * j->so[1] + o * j->so[2];
				for (int y = 0; y < 9; y++)
					dst[y / 3 * j->so[3] + y % 3 * j->so[4]] = out9[p][y];
				if (chk)
					fwsim_numchk_block(chk, out9[p], 9,
							   (((uint64_t)n[p] * (uint64_t)j->G + (uint64_t)gi[p]) *
							    (uint64_t)j->O + (uint64_t)o) * 9);
			}
		}
	}
out:
	free(g);
	return st;
}
