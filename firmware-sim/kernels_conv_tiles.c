/* CONV form P as AVX-512 or AVX2 register tiles (docs/isa.md, "CONV"): dense weight gradients and small-plane forward convolutions straight from the input and the kernel transposed by blocks, no im2col, no sgemm, no partial sums. */
#include <math.h>
#include <string.h>

#include "conv.h"

/*
 * Form P's sgemm products (kernels_conv_psum.c) spent a fifth of ResNet's
 * 3x3 64 -> 64 weight gradient (8 x 56 x 56) building T, the im2col buffer
 * (three shifted copies of the input per channel), which sgemm then read
 * and packed again: 12.3-14 ms on one CPU against PyTorch's 9.5 (0.78x).
 * A weight gradient has few outputs (N x O x Y0 x Y1: 147 KiB) and deep
 * sums (the batch times the kernel's K0 x K1 taps, 8 x 3136), so the
 * outputs can stay in register tiles while the terms stream past:
 *
 *   out[n][o][y0][y1] += X[n, c, y0 S0 + k0 D0 - P0, y1 S1 + k1 D1 - P1]
 *                        x Wt_c[k0][k1][o]
 *
 * A tile is 12 outputs n by 32 outputs o (24 zmm of sums); per tap it loads
 * two vectors of Wt (the kernel transposed so that o is innermost) and
 * broadcasts 12 input values, one per n, from the input where it lies. Only
 * in-range taps are visited (the padding is clipped from each row's and
 * column's range, not filled), so there is nothing to copy but the
 * kernel's transpose: a block of rows at a time, 32 KiB of one 32-o slice,
 * kept in L1 while every output position (y0, y1) and every block of n
 * reads it. 12 x 2 vectors measured 188 GFLOP/s in L1 on this machine (peak
 * about 195), 6 x 4 vectors 125-147: the 512-bit loads, not the broadcasts,
 * bound it.
 *
 * A unit (an item of the pool) is a 32-o slice (64 wide) by a range of n
 * (and, wide, of output rows), and sums every c into its own outputs
 * (N_range x Y0 Y1 x the slice's o floats in its scratch) before storing
 * them once. The first version kept form P's units, one per
 * c, each into partial sums added at the end: with 256 channels (2.4 MB of
 * partial sums per c) that traffic made it 1.14x slower than MATMULs over
 * 14x14 planes; summing in the unit made 8x8 planes 0.53x their time.
 *
 * The order, which docs/isa.md states: each output is one chain of fma from
 * 0 over its in-range terms (c, k0, k1) in row-major order. Subnormal
 * inputs read as zero and subnormal results are flushed (MXCSR's DAZ and
 * FTZ), as with sgemm's products.
 */

/* Floats of one o slice of a transposed kernel block: 32 KiB. */
#define TILE_SLICE_FLOATS 8192
#define TILE_N 12  /* outputs n per tile */
#define TILE_O 32  /* outputs o per tile (two vectors) */
#define TILE_UNITS 4 /* fewest units an instruction is cut into, where it can be */
/* Wide tiles, for few n and many o: 6 n by 64 o (four vectors). A 7x7
 * stem's weight gradient (3 input channels as n, 64 o) ran as tiles of 3 n
 * by 32 o: 6 chains of fma, too few to hide the fma's latency (137 GFLOP/s
 * in the tiles, 0.78-0.84x PyTorch's time). */
#define TILE_N_WIDE 6

bool fwsim_conv_plan_tiles(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_gemm_t *gm = &j->gm;
	if (!fwsim_cpu_avx2_fma() || j->O > INT32_MAX / (2 * TILE_O))
		return false;
	/* units own ranges of n and o: an output repeating along either (stride
	 * 0) would be written by two at once */
	if ((j->N > 1 && j->so[0] == 0) || (j->O > 1 && j->so[2] == 0))
		return false;
	/* o per slice: 64 (wide tiles) for at most 6 n and 64 o or more */
	int64_t to = j->N <= TILE_N_WIDE && j->O >= 2 * TILE_O ? 2 * TILE_O : TILE_O;
	gm->to = to;
	/* a block is trows kernel rows of tk1 columns (all of a row's columns
	 * when a slice's o of them fit, else one row in chunks) */
	if (b->K * to <= TILE_SLICE_FLOATS) {
		gm->tk1 = b->K;
		gm->trows = TILE_SLICE_FLOATS / (b->K * to);
		gm->trows = gm->trows > a->K ? a->K : gm->trows;
		gm->tc = gm->trows == a->K ? TILE_SLICE_FLOATS / (a->K * b->K * to) : 1;
		gm->tc = gm->tc > j->C ? j->C : gm->tc;
	} else {
		gm->tc = 1;
		gm->tk1 = TILE_SLICE_FLOATS / to;
		gm->trows = 1;
	}
	/* units: a slice of o by a range of n, at least TILE_UNITS of them
	 * where the n allow (each unit transposes its own slice of the
	 * kernel); wide tiles of one slice and one range cut the output rows
	 * y0 in two when the pool has two threads or more (each half
	 * transposes the whole slice: a 7x7 stem's weight gradient, 8 x
	 * 224x224, ran 18.5-19.6 ms so on one thread, 15.2-17.0 uncut, and
	 * 9.0-9.7 cut on two). Unlike other cuts this one follows the thread
	 * count: it changes no bits, since every output is one chain of one
	 * unit whichever unit that is, and the NaN/Inf scans merge exactly. */
	int64_t nq = (j->O + to - 1) / to, tnmax = to == TILE_O ? TILE_N : TILE_N_WIDE;
	int64_t ns = (TILE_UNITS + nq - 1) / nq, most = (j->N + tnmax - 1) / tnmax;
	ns = ns > most ? most : ns;
	gm->tn = (j->N + ns - 1) / ns;
	ns = (j->N + gm->tn - 1) / gm->tn;
	bool cut_rows = to != TILE_O && nq * ns < 2 && a->Y > 1 && fwsim_get_threads() > 1;
	gm->tyr = cut_rows ? (a->Y + 1) / 2 : a->Y;
	int64_t nyr = (a->Y + gm->tyr - 1) / gm->tyr;
	/* the block, 16 floats to align it to a cache line, the unit's sums */
	int64_t scratch = gm->tc * gm->trows * gm->tk1 * to + 16 + gm->tn * a->Y * b->Y * to;
	if (scratch > ISA_CONV_SCRATCH_FLOATS)
		return false;
	gm->tiles = true;
	gm->units = (uint64_t)(nq * ns * nyr);
	j->scratch = scratch;
	return true;
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)

/* One tile's walk over the terms: nc channels (input xc floats apart,
 * kernel block wc), nr rows (xr, wr) of nk taps (xk; the kernel's taps to
 * floats apart, a slice's o); n xs apart in the input, ldc apart in the
 * sums; m: the slice's o lanes per vector (AVX-512). */
typedef struct tile_walk {
	int64_t nc, xc, wc, nr, xr, wr, nk, xk, xs, ldc, to;
	const __mmask16 *m;
} tile_walk_t;

/* The tile of nb x 32 sums at c (o lanes of m[0], m[1] loaded and stored)
 * plus the walk's terms: x is the first term's input for n = 0, w its
 * kernel vector pair. nb is a constant after inlining: the sums live in
 * registers (24 zmm at nb = 12). */
__attribute__((target("avx512f"), always_inline))
static inline void tile_nb(const int nb, const int nv, const tile_walk_t *p, const float *x0,
			   const float *w0, float *c, const __mmask16 *m)
{
	const int64_t nc = p->nc, xc = p->xc, wc = p->wc, nr = p->nr, xr = p->xr, wr = p->wr;
	const int64_t nk = p->nk, xk = p->xk, xs = p->xs, ldc = p->ldc;
	__m512 s[TILE_N][4];
#pragma GCC unroll 12
	for (int i = 0; i < nb; i++)
#pragma GCC unroll 4
		for (int v = 0; v < nv; v++)
			s[i][v] = _mm512_maskz_loadu_ps(m[v], c + i * ldc + 16 * v);
	for (int64_t ci = 0; ci < nc; ci++, x0 += xc, w0 += wc) {
		const float *x = x0, *w = w0;
		for (int64_t r = 0; r < nr; r++, x += xr, w += wr) {
			const float *xp = x, *wp = w;
			for (int64_t k = 0; k < nk; k++, xp += xk, wp += 16 * nv) {
				__m512 wv[4];
#pragma GCC unroll 4
				for (int v = 0; v < nv; v++) {
					wv[v] = _mm512_load_ps(wp + 16 * v);
					/* wide tiles: in a register, else folded
					 * into each fma, 4 loads per n bound them */
					if (nv == 4)
						__asm__("" : "+v"(wv[v]));
				}
#pragma GCC unroll 12
				for (int i = 0; i < nb; i++) {
					__m512 xv = _mm512_set1_ps(xp[i * xs]);
#pragma GCC unroll 4
					for (int v = 0; v < nv; v++)
						s[i][v] = _mm512_fmadd_ps(xv, wv[v], s[i][v]);
				}
			}
		}
	}
#pragma GCC unroll 12
	for (int i = 0; i < nb; i++)
#pragma GCC unroll 4
		for (int v = 0; v < nv; v++)
			_mm512_mask_storeu_ps(c + i * ldc + 16 * v, m[v], s[i][v]);
}

#define TILE_CASE(n, nv)                    \
	case n:                             \
		tile_nb(n, nv, p, x, w, c, m); \
		break

/* Tiles of nb <= 12 n by the first no of 32 o, or (wide) nb <= 6 n by the
 * first no of 64 o, on AVX-512F. */
__attribute__((target("avx512f")))
static void tile512(int nb, const tile_walk_t *p, const float *x, const float *w, float *c, int no)
{
	(void)no; /* in p->m */
	const __mmask16 *m = p->m;
	if (p->to == TILE_O)
		switch (nb) {
		TILE_CASE(1, 2); TILE_CASE(2, 2); TILE_CASE(3, 2); TILE_CASE(4, 2);
		TILE_CASE(5, 2); TILE_CASE(6, 2); TILE_CASE(7, 2); TILE_CASE(8, 2);
		TILE_CASE(9, 2); TILE_CASE(10, 2); TILE_CASE(11, 2); TILE_CASE(12, 2);
		default: break;
		}
	else
		switch (nb) {
		TILE_CASE(1, 4); TILE_CASE(2, 4); TILE_CASE(3, 4);
		TILE_CASE(4, 4); TILE_CASE(5, 4); TILE_CASE(6, 4);
		default: break;
		}
}

/* The same on AVX2: nb <= 6 n by 16 o (12 ymm of sums, lanes m[0], m[1]),
 * the kernel's vectors at w (16 of a tap's 32 o). Each sum is the same
 * chain of fma as on AVX-512: the same bits. */
__attribute__((target("avx2,fma"), always_inline))
static inline void tile_nb8(const int nb, const tile_walk_t *p, const float *x0, const float *w0,
			    float *c, const __m256i *m)
{
	const int64_t nc = p->nc, xc = p->xc, wc = p->wc, nr = p->nr, xr = p->xr, wr = p->wr;
	const int64_t nk = p->nk, xk = p->xk, xs = p->xs, ldc = p->ldc;
	__m256 s[6][2];
#pragma GCC unroll 6
	for (int i = 0; i < nb; i++) {
		s[i][0] = _mm256_maskload_ps(c + i * ldc, m[0]);
		s[i][1] = _mm256_maskload_ps(c + i * ldc + 8, m[1]);
	}
	for (int64_t ci = 0; ci < nc; ci++, x0 += xc, w0 += wc) {
		const float *x = x0, *w = w0;
		for (int64_t r = 0; r < nr; r++, x += xr, w += wr) {
			const float *xp = x, *wp = w;
			for (int64_t k = 0; k < nk; k++, xp += xk, wp += p->to) {
				__m256 v0 = _mm256_load_ps(wp), v1 = _mm256_load_ps(wp + 8);
#pragma GCC unroll 6
				for (int i = 0; i < nb; i++) {
					__m256 v = _mm256_broadcast_ss(xp + i * xs);
					s[i][0] = _mm256_fmadd_ps(v, v0, s[i][0]);
					s[i][1] = _mm256_fmadd_ps(v, v1, s[i][1]);
				}
			}
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < nb; i++) {
		_mm256_maskstore_ps(c + i * ldc, m[0], s[i][0]);
		_mm256_maskstore_ps(c + i * ldc + 8, m[1], s[i][1]);
	}
}

#define TILE8_CASE(n)                               \
	case n:                                     \
		tile_nb8(n, p, xi, w + h, c + h + i * p->ldc, m); \
		break

/* Tiles of nb <= 12 n by the first no of a slice's o on AVX2: pieces of 16
 * o by blocks of at most 6 n. */
__attribute__((target("avx2,fma")))
static void tile256(int nb, const tile_walk_t *p, const float *x, const float *w, float *c, int no)
{
	const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	for (int h = 0; h < p->to && h < no; h += 16) {
		int q = no - h > 16 ? 16 : no - h;
		__m256i m[2] = { _mm256_cmpgt_epi32(_mm256_set1_epi32(q > 8 ? 8 : q), lane),
				 _mm256_cmpgt_epi32(_mm256_set1_epi32(q > 8 ? q - 8 : 0), lane) };
		for (int i = 0, b; i < nb; i += b) {
			b = nb - i > 6 ? 6 : nb - i;
			const float *xi = x + i * p->xs;
			switch (b) {
			TILE8_CASE(1); TILE8_CASE(2); TILE8_CASE(3);
			TILE8_CASE(4); TILE8_CASE(5); TILE8_CASE(6);
			default: break;
			}
		}
	}
}

/* nt taps of the kernel's slice of o from o0 (src: o0's first tap; taps sc
 * floats apart, o sw[1]) into wt: tap t the slice's o (gm.to), zero past O.
 * Through fwsim_copy_tile's 8x8 register transposes when taps are
 * contiguous; a reversed kernel (sc = -1) is read ascending and written
 * descending. */
static void tiles_transpose_run(const conv_job_t *j, const float *src, int64_t o0, int64_t nt,
				int64_t sc, float *wt)
{
	int64_t to = j->gm.to, no = j->O - o0 < to ? j->O - o0 : to;
	for (int64_t k = 0; no < to && k < nt; k++)
		memset(wt + k * to + no, 0, (size_t)(to - no) * sizeof(float));
	int64_t dc = to;
	if (sc < 0 && nt > 1) {
		src += (nt - 1) * sc;
		wt += (nt - 1) * to;
		sc = -sc;
		dc = -to;
	}
	fwsim_copy_tile(4, (uint8_t *)wt, 4, dc * 4, (const uint8_t *)src, j->sw[1] * 4, sc * 4,
			(size_t)no, (size_t)nt);
}

/* The kernel's rows [k0, k0 + nr), columns [j0, j0 + nj) of the slice of o
 * from o0 (w: channel c's kernel), transposed into wt: tap (r, k1) the
 * slice's o (tiles_transpose_run), whole rows in one run when the taps are
 * one stride apart. Returns whether any is NaN or Inf. */
static bool tiles_transpose(const conv_job_t *j, const float *w, int64_t o0, int64_t k0, int64_t nr,
			    int64_t j0, int64_t nj, float *wt)
{
	const float *src = w + o0 * j->sw[1] + k0 * j->sw[3] + j0 * j->sw[4];
	if (nj == j->d[1].K && j->sw[3] == nj * j->sw[4])
		tiles_transpose_run(j, src, o0, nr * nj, j->sw[4], wt);
	else
		for (int64_t r = 0; r < nr; r++)
			tiles_transpose_run(j, src + r * j->sw[3], o0, nj, j->sw[4],
					    wt + r * nj * j->gm.to);
	return fwsim_any_nonfinite(wt, (size_t)(nr * nj * j->gm.to));
}

/* The block of cn channels from w (channel c's kernel) into wt, a channel
 * every wcs floats: tiles_transpose of each, or one run of cn K0 K1 taps
 * when the block holds whole kernels whose (c, k0, k1) lie one stride
 * apart. Returns whether any is NaN or Inf. */
static bool tiles_transpose_block(const conv_job_t *j, const float *w, int64_t o0, int64_t cn,
				  int64_t k0, int64_t nr, int64_t j0, int64_t nj, int64_t wcs, float *wt)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	if (cn > 1 && j->sw[3] == b->K * j->sw[4] && j->sw[2] == a->K * j->sw[3]) {
		tiles_transpose_run(j, w + o0 * j->sw[1], o0, cn * a->K * b->K, j->sw[4], wt);
		return fwsim_any_nonfinite(wt, (size_t)(cn * wcs));
	}
	bool bad = false;
	for (int64_t ci = 0; ci < cn; ci++)
		bad |= tiles_transpose(j, w + ci * j->sw[2], o0, k0, nr, j0, nj, wt + ci * wcs);
	return bad;
}

/*
 * The tiles visit in-range taps only. A padding tap's term, 0 x w, changes
 * no sum while w is finite (a chain of fma from +0 never holds -0, so even
 * the sign of a zero sum stays), but is NaN when w is NaN or Inf: for a
 * block whose kernel holds one, those terms are added here, to every n of
 * the (y0, y1, o) whose window puts that tap in the padding.
 */
static void tiles_padding_terms(const conv_job_t *j, const float *w, int64_t o0, int64_t nn,
				int64_t kb, int64_t kr, int64_t jb, int64_t jr, float *acc)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, to = j->gm.to, no = j->O - o0 < to ? j->O - o0 : to;
	for (int64_t k0 = kb; k0 < kb + kr; k0++)
		for (int64_t k1 = jb; k1 < jb + jr; k1++)
			for (int64_t l = 0; l < no; l++) {
				float wv = w[(o0 + l) * j->sw[1] + k0 * j->sw[3] + k1 * j->sw[4]];
				if (isfinite(wv))
					continue;
				for (int64_t y0 = 0; y0 < a->Y; y0++)
					for (int64_t y1 = 0; y1 < b->Y; y1++) {
						int64_t i0 = y0 * a->S + k0 * a->D - a->P;
						int64_t i1 = y1 * b->S + k1 * b->D - b->P;
						if (i0 >= 0 && i0 < a->X && i1 >= 0 && i1 < b->X)
							continue;
						for (int64_t n = 0; n < nn; n++)
							acc[(n * ny + y0 * b->Y + y1) * to + l] += 0.0f * wv;
					}
			}
}

/* The first k in [0, K) whose index k d + base lies in [0, X), and the end
 * of that run: [*lo, *hi), empty when *lo >= *hi. */
static void tiles_range(int64_t K, int64_t d, int64_t base, int64_t X, int64_t *lo, int64_t *hi)
{
	int64_t l = base >= 0 ? 0 : fwsim_floordiv(-base + d - 1, d);
	int64_t h = fwsim_floordiv(X - 1 - base, d) + 1;
	*lo = l;
	*hi = h < K ? h : K;
}

/* The unit's sums, stored: out[n, o, y0, y1] for its n, o and output rows
 * [ya, yb), scanned for NaN/Inf (flat row-major indices of ap0) where any
 * may be. */
static void tiles_store(const conv_job_t *j, const fwsim_kargs_t *kk, const float *acc, int64_t o0,
			int64_t n0, int64_t nn, int64_t ya, int64_t yb)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, to = j->gm.to, no = j->O - o0 < to ? j->O - o0 : to;
	for (int64_t n = 0; n < nn; n++)
		for (int64_t y = ya * b->Y; y < yb * b->Y; y++) {
			const float *src = acc + (n * ny + y) * to;
			float *dst = j->out + (n0 + n) * j->so[0] + (y / b->Y) * j->so[3] +
				     (y % b->Y) * j->so[4] + o0 * j->so[2];
			if (j->so[2] == 1)
				memcpy(dst, src, (size_t)no * sizeof(float));
			else
				for (int64_t l = 0; l < no; l++)
					dst[l * j->so[2]] = src[l];
		}
	if (!kk->chk || !fwsim_numchk_maybe_nonfinite(kk->chk, acc, (size_t)(nn * ny * to)))
		return;
	for (int64_t n = 0; n < nn; n++)
		for (int64_t l = 0; l < no; l++)
			for (int64_t y = ya * b->Y; y < yb * b->Y; y++)
				fwsim_numchk_block(kk->chk, &acc[(n * ny + y) * to + l], 1,
						   (uint64_t)((((n0 + n) * j->O + o0 + l) * ny) + y));
}

fwsim_status_t fwsim_conv_tiles_unit(const conv_job_t *j, const fwsim_kargs_t *kk, float *t, uint64_t unit)
{
	const conv_gemm_t *gm = &j->gm;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	/* unit = ((n range) nq + slice) nyr + range of output rows */
	int64_t to = gm->to, nq = (j->O + to - 1) / to, nyr = (a->Y + gm->tyr - 1) / gm->tyr;
	int64_t ya = (int64_t)unit % nyr * gm->tyr, yb = ya + gm->tyr < a->Y ? ya + gm->tyr : a->Y;
	int64_t q = (int64_t)unit / nyr % nq, o0 = q * to, n0 = (int64_t)unit / nyr / nq * gm->tn;
	int64_t nn = j->N - n0 < gm->tn ? j->N - n0 : gm->tn, ny = a->Y * b->Y;
	int64_t no = j->O - o0 < to ? j->O - o0 : to;
	__mmask16 om[4]; /* the slice's o lanes of each vector */
	for (int v = 0; v < 4; v++)
		om[v] = (__mmask16)fwsim_conv_bits32(0, no < 16 * v ? 0 : no - 16 * v > 16 ? 16
										  : no - 16 * v);
	void (*tile)(int, const tile_walk_t *, const float *, const float *, float *, int) =
		fwsim_cpu_avx512() ? tile512 : tile256;
	float *wt = (float *)(((uintptr_t)t + 63) & ~(uintptr_t)63);
	float *acc = wt + gm->tc * gm->trows * gm->tk1 * to;
	/* blocks of n: at most 12 (6 wide), as even as they come */
	int64_t tnmax = to == TILE_O ? TILE_N : TILE_N_WIDE, nblk = (nn + tnmax - 1) / tnmax;
	memset(acc, 0, (size_t)(nn * ny * to) * sizeof(float));
	unsigned csr = fwsim_flush_begin();
	fwsim_status_t st = FWSIM_OK;
	int64_t wcs = gm->trows * gm->tk1 * to; /* a channel's share of the block */
	for (int64_t c = 0; c < j->C && st == FWSIM_OK; c += gm->tc) {
		int64_t cn = j->C - c < gm->tc ? j->C - c : gm->tc;
		const float *x = j->in + c * j->si[2] + n0 * j->si[0], *w = j->w + c * j->sw[2];
		for (int64_t kb = 0; kb < a->K && st == FWSIM_OK; kb += gm->trows) {
			int64_t kr = a->K - kb < gm->trows ? a->K - kb : gm->trows;
			for (int64_t jb = 0; jb < b->K; jb += gm->tk1) {
				int64_t jr = b->K - jb < gm->tk1 ? b->K - jb : gm->tk1;
				if (fwsim_tick(kk, (uint64_t)(nn * no * ny * kr * jr * cn))) {
					st = FWSIM_TIMEOUT;
					break;
				}
				bool bad = tiles_transpose_block(j, w, o0, cn, kb, kr, jb, jr, wcs, wt);
				for (int64_t y0 = ya; y0 < yb; y0++) {
					int64_t r0, r1; /* rows of the block inside the input */
					tiles_range(a->K, a->D, y0 * a->S - a->P, a->X, &r0, &r1);
					r0 = r0 > kb ? r0 : kb;
					r1 = r1 < kb + kr ? r1 : kb + kr;
					if (r0 >= r1)
						continue;
					for (int64_t y1 = 0; y1 < b->Y; y1++) {
						int64_t c0, c1;
						tiles_range(b->K, b->D, y1 * b->S - b->P, b->X, &c0, &c1);
						c0 = c0 > jb ? c0 : jb;
						c1 = c1 < jb + jr ? c1 : jb + jr;
						if (c0 >= c1)
							continue;
						const float *xt = x + (y0 * a->S + r0 * a->D - a->P) * j->si[3] +
								  (y1 * b->S + c0 * b->D - b->P) * j->si[4];
						const float *wv = wt + ((r0 - kb) * jr + (c0 - jb)) * to;
						float *ct = acc + (y0 * b->Y + y1) * to;
						tile_walk_t p = { cn, j->si[2], wcs, r1 - r0, a->D * j->si[3],
								  jr * to, c1 - c0, b->D * j->si[4], j->si[0],
								  ny * to, to, om };
						for (int64_t bi = 0, n = 0; bi < nblk; bi++) {
							int64_t nb = nn / nblk + (bi < nn % nblk ? 1 : 0);
							tile((int)nb, &p, xt + n * j->si[0], wv,
							     ct + n * ny * to, (int)no);
							n += nb;
						}
					}
				}
				/* each channel's non-finite weights (the finite ones add nothing) */
				for (int64_t ci = 0; ci < cn && bad; ci++)
					tiles_padding_terms(j, w + ci * j->sw[2], o0, nn, kb, kr, jb, jr, acc);
			}
		}
	}
	fwsim_flush_end(csr);
	if (st == FWSIM_OK)
		tiles_store(j, kk, acc, o0, n0, nn, ya, yb);
	return st;
}

#else
fwsim_status_t fwsim_conv_tiles_unit(const conv_job_t *j, const fwsim_kargs_t *kk, float *t, uint64_t unit)
{
	(void)j, (void)kk, (void)t, (void)unit;
	return FWSIM_OK; /* never planned: fwsim_cpu_avx2_fma() is 0 */
}
#endif
