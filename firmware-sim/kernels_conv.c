/* CONV (ISA 1.4): grouped direct convolution on polyphase planes with contiguous inner loops, forms A and B and the direct loop; forms D and E (8 groups per vector) are in kernels_conv_lanes.c (docs/isa.md, "CONV"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

/*
 * Per spatial dim, with stride S, kernel dilation D, input dilation L and low
 * padding P, output y and tap k read the undilated input at j = (y S + k D - P) / L
 * when that divides. Outputs fall into T = L / gcd(S, L) phases r (y = r + T q);
 * within a phase a tap either never or always divides, and then reads
 * j0(r, k) + q U with U = T S / L. So the input, padded with zeros to the range
 * [jlo, jhi] the window can reach and cut into U phase planes by position mod U,
 * turns every tap of every output phase into a stride-1 window of one plane:
 *
 *  A (many outputs, few taps: forward, input gradient): per output phase the
 *    outputs on a [Q0, M1] grid of a plane's width are one flat run, and each
 *    tap adds w * (a run of the plane) to it, CONV_BLOCK outputs at a time held
 *    in registers across all taps: contiguous loads and FMAs only. The grid's
 *    extra columns read the next row (finite garbage, never stored).
 *  B (few outputs, many taps, L = 1: the weight gradient, whose kernel is the
 *    output gradient): per output a dot product over the kernel rows, the
 *    planes cut by D so that consecutive taps are consecutive elements.
 *
 * Every output is computed by one item, summing its taps in a fixed order, so
 * the results do not depend on the thread count. Windows whose planes would
 * not fit ISA_CONV_SCRATCH_FLOATS run the direct loop (conv_naive).
 */

static int64_t posmod(int64_t a, int64_t b)
{
	int64_t r = a % b;
	return r < 0 ? r + b : r;
}

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Plane geometry of one dim for form A or B; false when it is too large for
 * the planes (the direct loop then runs). */
static bool dim_plan(conv_dim_t *d, int form)
{
	/* every term below 2^72 would not fit: decide in 128 bits first */
	__int128 hi = (__int128)(d->Y - 1) * d->S + (__int128)(d->K - 1) * d->D - d->P;
	__int128 lo = -(__int128)d->P;
	if (hi - lo > ISA_CONV_SCRATCH_FLOATS)
		return false;
	if (form == 'A') {
		d->T = d->L / gcd64(d->S, d->L);
		d->U = d->T * d->S / d->L;
		d->V = d->U;
		d->jlo = fwsim_floordiv(-d->P, d->L);
		int64_t jhi = fwsim_floordiv((int64_t)hi, d->L);
		int64_t z = jhi - d->jlo + 1;
		d->M = (z + d->V - 1) / d->V;
	} else {
		d->T = 1;
		d->U = d->S;
		d->V = d->D;
		d->jlo = -d->P;
		int64_t z = (int64_t)hi - d->jlo + 1;
		d->M = (z + d->V - 1) / d->V;
	}
	return d->V <= ISA_CONV_SCRATCH_FLOATS && d->M <= ISA_CONV_SCRATCH_FLOATS;
}

/* d[0, n) = 0 and d[i] = s[i st]: short rows, inline loops the compiler
 * vectorises (libc calls cost more than a 14-float row). */
static inline void row_zero(float *d, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		d[i] = 0.0f;
}

static inline void row_copy(float *restrict d, const float *restrict src, int64_t st, int64_t n)
{
	if (st == 1)
		for (int64_t i = 0; i < n; i++)
			d[i] = src[i];
	else if (st == 2)
		for (int64_t i = 0; i < n; i++)
			d[i] = src[2 * i];
	else
		for (int64_t i = 0; i < n; i++)
			d[i] = src[i * st];
}

static inline void row_store(float *restrict d, int64_t st, const float *restrict src, int64_t n)
{
	if (st == 1)
		for (int64_t i = 0; i < n; i++)
			d[i] = src[i];
	else
		for (int64_t i = 0; i < n; i++)
			d[i * st] = src[i];
}

/* The columns of dim 1's phase v1 that hold input (jlo1 + m1 V1 + v1 inside
 * [0, X1)): m1 in [cols[2 v1], cols[2 v1 + 1]], none when the first is larger.
 * The same for every row and channel, so conv_plan_cols makes them once per
 * instruction: computed per row, their divisions were a third of a 14x14
 * depthwise convolution's time. */
static int64_t *conv_plan_cols(const conv_dim_t *b)
{
	int64_t *cols = malloc((size_t)b->V * 2 * sizeof(*cols));
	for (int64_t v1 = 0; cols && v1 < b->V; v1++) {
		int64_t first = b->jlo + v1;
		int64_t ma = first >= 0 ? 0 : (-first + b->V - 1) / b->V;
		int64_t mb = b->X - 1 - first < 0 ? -1 : (b->X - 1 - first) / b->V;
		cols[2 * v1] = ma;
		cols[2 * v1 + 1] = mb > b->M - 1 ? b->M - 1 : mb;
	}
	return cols;
}

/* The planes of input channel c of (n, g): plane (v0, v1) holds
 * in[jlo0 + m0 V0 + v0, jlo1 + m1 V1 + v1] at [m0, m1], zero outside the input.
 * Only the input's part is written: the zeros are the same for every channel
 * and plane, written once per item (conv_item). */
static void conv_fill(const conv_job_t *j, const float *src, float *dst)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	const int64_t *cols = j->cols;
	int64_t sy = j->si[3], sx = j->si[4], mm = a->M * b->M;
	/* two phases of a contiguous row (a stride-2 window): one pass over the
	 * source row writes both, when both phases hold the same columns; the
	 * ends (a column or so) one by one */
	bool split2 = b->V == 2 && sx == 1;
	int64_t lo = 0, hi = -1;
	if (split2) {
		lo = cols[0] > cols[2] ? cols[0] : cols[2];
		hi = cols[1] < cols[3] ? cols[1] : cols[3];
		split2 = lo <= hi;
	}
	/* the input's rows in order (so the hardware prefetcher follows): row j0
	 * is row m0 of phase v0, j0 - jlo0 = m0 V0 + v0 */
	int64_t j0a = a->jlo > 0 ? a->jlo : 0;
	int64_t j0b = a->jlo + a->M * a->V - 1 < a->X - 1 ? a->jlo + a->M * a->V - 1 : a->X - 1;
	int64_t v0 = (j0a - a->jlo) % a->V, m0 = (j0a - a->jlo) / a->V;
	for (int64_t j0 = j0a; j0 <= j0b; j0++) {
		const float *srow = src + j0 * sy;
		if (split2) {
			float *d0 = dst + v0 * 2 * mm + m0 * b->M, *d1 = d0 + mm;
			const float *s0 = srow + b->jlo + lo * 2;
			for (int64_t i = 0; i <= hi - lo; i++) {
				d0[lo + i] = s0[2 * i];
				d1[lo + i] = s0[2 * i + 1];
			}
			for (int64_t v1 = 0; v1 < 2; v1++) {
				float *d = v1 ? d1 : d0;
				for (int64_t m = cols[2 * v1]; m < lo; m++)
					d[m] = srow[b->jlo + v1 + 2 * m];
				for (int64_t m = hi + 1; m <= cols[2 * v1 + 1]; m++)
					d[m] = srow[b->jlo + v1 + 2 * m];
			}
		} else {
			float *drow = dst + v0 * b->V * mm + m0 * b->M;
			for (int64_t v1 = 0; v1 < b->V; v1++) {
				int64_t ma = cols[2 * v1], mb = cols[2 * v1 + 1];
				if (ma <= mb)
					row_copy(drow + v1 * mm + ma, srow + (b->jlo + v1 + ma * b->V) * sx,
						 b->V * sx, mb - ma + 1);
			}
		}
		if (++v0 == a->V) {
			v0 = 0;
			m0++;
		}
	}
}

/* acc[0, len) = sum over taps of w * p[0, len), in tap order, CONV_BLOCK at a
 * time (len is rounded up: the planes have the slack). Lane l of every block
 * is one output's chain of fmaf in tap order, in both variants below. */
static void conv_taps_run_c(const conv_tap_t *taps, int64_t nt, int64_t len, float *acc)
{
	for (int64_t i0 = 0; i0 < len; i0 += CONV_BLOCK) {
		float a[CONV_BLOCK];
		for (int l = 0; l < CONV_BLOCK; l++)
			a[l] = 0.0f;
		for (int64_t t = 0; t < nt; t++) {
			const float *p = taps[t].p + i0;
			float w = taps[t].w;
			for (int l = 0; l < CONV_BLOCK; l++)
				a[l] = fmaf(w, p[l], a[l]);
		}
		memcpy(acc + i0, a, sizeof(a));
	}
}

/* acc[r][l] += sum over i = l mod CONV_LANES of x[r][i] w[i], i < n (a multiple
 * of CONV_LANES), for four outputs sharing w; both variants below. */
static void conv_dot4_c(const float *const x[4], const float *w, int64_t n,
			float acc[4][CONV_LANES])
{
	for (int64_t i = 0; i < n; i += CONV_LANES)
		for (int r = 0; r < 4; r++)
			for (int l = 0; l < CONV_LANES; l++)
				acc[r][l] = fmaf(x[r][i + l], w[i + l], acc[r][l]);
}

static void conv_dot1_c(const float *x, const float *w, int64_t n, float acc[CONV_LANES])
{
	for (int64_t i = 0; i < n; i += CONV_LANES)
		for (int l = 0; l < CONV_LANES; l++)
			acc[l] = fmaf(x[i + l], w[i + l], acc[l]);
}

/* The sum of one output's partial sums, in a fixed order. */
static float conv_fold(const float a[CONV_LANES])
{
	float h[8];
	for (int l = 0; l < 8; l++)
		h[l] = a[l] + a[l + 8];
	return ((h[0] + h[1]) + (h[2] + h[3])) + ((h[4] + h[5]) + (h[6] + h[7]));
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>

/* The same sums with AVX2 FMA: eight accumulators of eight lanes held in
 * registers across the taps (the auto-vectoriser kept them in memory and
 * went scalar). vfmadd rounds once, as fmaf does. */
__attribute__((target("avx2,fma")))
static void conv_taps_run_avx2(const conv_tap_t *taps, int64_t nt, int64_t len, float *acc)
{
	int64_t full = len / CONV_BLOCK * CONV_BLOCK, i0;
	for (i0 = 0; i0 < full; i0 += CONV_BLOCK) {
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		__m256 a4 = a0, a5 = a0, a6 = a0, a7 = a0;
		for (int64_t t = 0; t < nt; t++) {
			const float *p = taps[t].p + i0;
			__m256 w = _mm256_set1_ps(taps[t].w);
			a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p), a0);
			a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 8), a1);
			a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 16), a2);
			a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 24), a3);
			a4 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 32), a4);
			a5 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 40), a5);
			a6 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 48), a6);
			a7 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 56), a7);
		}
		float *o = acc + i0;
		_mm256_storeu_ps(o, a0);
		_mm256_storeu_ps(o + 8, a1);
		_mm256_storeu_ps(o + 16, a2);
		_mm256_storeu_ps(o + 24, a3);
		_mm256_storeu_ps(o + 32, a4);
		_mm256_storeu_ps(o + 40, a5);
		_mm256_storeu_ps(o + 48, a6);
		_mm256_storeu_ps(o + 56, a7);
	}
	/* the rest in 32 and 8 lanes (a 14-wide plane's run of 224 wasted 32 of
	 * 256 lanes in whole blocks); each lane's chain is the same */
	for (; i0 + 32 <= len; i0 += 32) {
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (int64_t t = 0; t < nt; t++) {
			const float *p = taps[t].p + i0;
			__m256 w = _mm256_set1_ps(taps[t].w);
			a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p), a0);
			a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 8), a1);
			a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 16), a2);
			a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 24), a3);
		}
		_mm256_storeu_ps(acc + i0, a0);
		_mm256_storeu_ps(acc + i0 + 8, a1);
		_mm256_storeu_ps(acc + i0 + 16, a2);
		_mm256_storeu_ps(acc + i0 + 24, a3);
	}
	for (; i0 < len; i0 += 8) {
		__m256 a0 = _mm256_setzero_ps();
		for (int64_t t = 0; t < nt; t++)
			a0 = _mm256_fmadd_ps(_mm256_set1_ps(taps[t].w), _mm256_loadu_ps(taps[t].p + i0), a0);
		_mm256_storeu_ps(acc + i0, a0);
	}
}

__attribute__((target("avx2,fma")))
static void conv_dot4_avx2(const float *const x[4], const float *w, int64_t n,
			   float acc[4][CONV_LANES])
{
	/* two chains of 8 lanes per output: eight FMAs in flight */
	__m256 a0 = _mm256_loadu_ps(acc[0]), b0 = _mm256_loadu_ps(acc[0] + 8);
	__m256 a1 = _mm256_loadu_ps(acc[1]), b1 = _mm256_loadu_ps(acc[1] + 8);
	__m256 a2 = _mm256_loadu_ps(acc[2]), b2 = _mm256_loadu_ps(acc[2] + 8);
	__m256 a3 = _mm256_loadu_ps(acc[3]), b3 = _mm256_loadu_ps(acc[3] + 8);
	const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
	for (int64_t i = 0; i < n; i += CONV_LANES) {
		__m256 wa = _mm256_loadu_ps(w + i), wb = _mm256_loadu_ps(w + i + 8);
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + i), wa, a0);
		b0 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + i + 8), wb, b0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + i), wa, a1);
		b1 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + i + 8), wb, b1);
		a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x2 + i), wa, a2);
		b2 = _mm256_fmadd_ps(_mm256_loadu_ps(x2 + i + 8), wb, b2);
		a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x3 + i), wa, a3);
		b3 = _mm256_fmadd_ps(_mm256_loadu_ps(x3 + i + 8), wb, b3);
	}
	_mm256_storeu_ps(acc[0], a0);
	_mm256_storeu_ps(acc[0] + 8, b0);
	_mm256_storeu_ps(acc[1], a1);
	_mm256_storeu_ps(acc[1] + 8, b1);
	_mm256_storeu_ps(acc[2], a2);
	_mm256_storeu_ps(acc[2] + 8, b2);
	_mm256_storeu_ps(acc[3], a3);
	_mm256_storeu_ps(acc[3] + 8, b3);
}

/* One output: the lanes of conv_dot4_avx2's, for the last outputs of a plane
 * that do not fill a group of four. */
__attribute__((target("avx2,fma")))
static void conv_dot1_avx2(const float *x, const float *w, int64_t n, float acc[CONV_LANES])
{
	__m256 a0 = _mm256_loadu_ps(acc), b0 = _mm256_loadu_ps(acc + 8);
	for (int64_t i = 0; i < n; i += CONV_LANES) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(w + i), a0);
		b0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(w + i + 8), b0);
	}
	_mm256_storeu_ps(acc, a0);
	_mm256_storeu_ps(acc + 8, b0);
}
#else
#define conv_taps_run_avx2 conv_taps_run_c
#define conv_dot4_avx2 conv_dot4_c
#define conv_dot1_avx2 conv_dot1_c
#endif

static void conv_taps_run(const conv_tap_t *taps, int64_t nt, int64_t len, float *acc)
{
	if (fwsim_cpu_avx2_fma())
		conv_taps_run_avx2(taps, nt, len, acc);
	else
		conv_taps_run_c(taps, nt, len, acc);
}

static void conv_dot4(const float *const x[4], const float *w, int64_t n,
		      float acc[4][CONV_LANES])
{
	if (fwsim_cpu_avx2_fma())
		conv_dot4_avx2(x, w, n, acc);
	else
		conv_dot4_c(x, w, n, acc);
}

static void conv_dot1(const float *x, const float *w, int64_t n, float acc[CONV_LANES])
{
	if (fwsim_cpu_avx2_fma())
		conv_dot1_avx2(x, w, n, acc);
	else
		conv_dot1_c(x, w, n, acc);
}

/* Form A: the outputs of (n, g, o), stored to dst (ap0 at [n, g, o]) through
 * outp [Y0, Y1] when there are several phases, else straight from the
 * accumulators; scanned for NaN/Inf (flat0: the plane's first flat index). */
static void conv_plane_a(const conv_job_t *j, const float *planes, const float *wk,
			 conv_tap_t *taps, float *acc, float *outp, float *dst,
			 fwsim_numchk_t *chk, uint64_t flat0)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	bool direct = j->ncls == 1 && a->T == 1 && b->T == 1;
	/* a dense output plane is scanned in one piece after its rows are stored */
	bool dense = (j->so[4] == 1 || b->Y == 1) && (j->so[3] == b->Y || a->Y == 1);
	for (int64_t ci = 0; ci < j->ncls; ci++) {
		const conv_class_t *cl = &j->cls[ci];
		const conv_geo_t *geo = j->geo + cl->tap0;
		for (int64_t t = 0; t < cl->ntap; t++) {
			taps[t].p = planes + geo[t].poff;
			taps[t].w = wk[geo[t].woff];
		}
		int64_t len = cl->q0n * b->M;
		if (cl->ntap)
			conv_taps_run(taps, cl->ntap, len, acc);
		else
			row_zero(acc, len);
		for (int64_t q0 = 0; q0 < cl->q0n; q0++) {
			const float *arow = acc + q0 * b->M;
			if (direct) {
				row_store(dst + q0 * j->so[3], j->so[4], arow, b->Y);
				if (chk && !dense)
					fwsim_numchk_block(chk, arow, (size_t)b->Y,
							   flat0 + (uint64_t)(q0 * b->Y));
				continue;
			}
			float *orow = outp + (cl->r0 + q0 * a->T) * b->Y + cl->r1;
			if (b->T == 1)
				row_copy(orow, arow, 1, cl->q1n);
			else
				for (int64_t q1 = 0; q1 < cl->q1n; q1++)
					orow[q1 * b->T] = arow[q1];
		}
	}
	if (direct) {
		if (chk && dense)
			fwsim_numchk_block(chk, dst, (size_t)(a->Y * b->Y), flat0);
		return;
	}
	for (int64_t y0 = 0; y0 < a->Y; y0++)
		row_store(dst + y0 * j->so[3], j->so[4], outp + y0 * b->Y, b->Y);
	if (chk)
		fwsim_numchk_block(chk, outp, (size_t)(a->Y * b->Y), flat0);
}

/* The classes and their taps' geometry (conv_class_t): each tap belongs to at
 * most one phase per dim, so there are at most C K0 K1 of them. */
static bool conv_plan_a(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t nk = j->C * a->K * b->K;
	j->cls = calloc((size_t)(a->T * b->T), sizeof(*j->cls));
	j->geo = calloc((size_t)(nk ? nk : 1), sizeof(*j->geo));
	if (!j->cls || !j->geo)
		return false;
	for (int64_t r0 = 0; r0 < a->T; r0++)
		for (int64_t r1 = 0; r1 < b->T; r1++) {
			int64_t q0n = (a->Y - r0 + a->T - 1) / a->T, q1n = (b->Y - r1 + b->T - 1) / b->T;
			if (q0n <= 0 || q1n <= 0)
				continue;
			conv_class_t *cl = &j->cls[j->ncls++];
			cl->r0 = r0;
			cl->r1 = r1;
			cl->q0n = q0n;
			cl->q1n = q1n;
			cl->tap0 = j->ngeo;
			for (int64_t c = 0; c < j->C; c++)
				for (int64_t k0 = 0; k0 < a->K; k0++) {
					int64_t n0 = r0 * a->S + k0 * a->D - a->P;
					if (posmod(n0, a->L))
						continue;
					int64_t z0 = n0 / a->L - a->jlo;
					for (int64_t k1 = 0; k1 < b->K; k1++) {
						int64_t n1 = r1 * b->S + k1 * b->D - b->P;
						if (posmod(n1, b->L))
							continue;
						int64_t z1 = n1 / b->L - b->jlo;
						int64_t v0 = z0 % a->V, v1 = z1 % b->V;
						conv_geo_t *g = &j->geo[j->ngeo++];
						g->poff = c * j->plane + (v0 * b->V + v1) * a->M * b->M +
							  z0 / a->V * b->M + z1 / b->V;
						g->woff = c * j->sw[2] + k0 * j->sw[3] + k1 * j->sw[4];
					}
				}
			cl->ntap = j->ngeo - cl->tap0;
		}
	return true;
}

/* Form B: the outputs of (n, g, o) as dot products with the packed kernel
 * wp [C, LB]: channel c's K0 rows at a pitch of one plane row (M1), zeros
 * between and after them up to LB, a multiple of CONV_LANES, so that each dot
 * product is one flat run of its plane. The x under the zeros are another
 * row's or the slack's, finite (conv_item checked the planes), so they add 0.
 * Four outputs at a time share the kernel's loads, and the runs go in chunks
 * of CONV_CHUNK, every output's part of a chunk before the next, so the
 * kernel's chunk and the planes' stay in L1 (whole runs streamed from L2).
 * Each lane still sums its terms in the order c, then i. */
#define CONV_CHUNK 512

static void conv_plane_b(const conv_job_t *j, const float *planes, const float *wp, int64_t lb,
			 float (*acc)[4][CONV_LANES], float *outp)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, nb = (ny + 3) / 4;
	memset(acc, 0, (size_t)nb * sizeof(*acc));
	for (int64_t c = 0; c < j->C; c++) {
		const float *base = planes + c * j->plane, *wc = wp + c * lb;
		for (int64_t i0 = 0; i0 < lb; i0 += CONV_CHUNK) {
			int64_t n = lb - i0 < CONV_CHUNK ? lb - i0 : CONV_CHUNK;
			for (int64_t bi = 0; bi < nb; bi++) {
				const float *x[4];
				for (int r = 0; r < 4; r++) {
					int64_t yy = bi * 4 + r < ny ? bi * 4 + r : bi * 4;
					int64_t y0 = yy / b->Y, y1 = yy % b->Y;
					int64_t v0 = y0 * a->S % a->V, v1 = y1 * b->S % b->V;
					x[r] = base + (v0 * b->V + v1) * a->M * b->M + y0 * a->S / a->V * b->M +
					       y1 * b->S / b->V + i0;
				}
				if (bi * 4 + 4 <= ny)
					conv_dot4(x, wc + i0, n, acc[bi]);
				else /* the last one to three outputs */
					for (int64_t r = 0; r < ny - bi * 4; r++)
						conv_dot1(x[r], wc + i0, n, acc[bi][r]);
			}
		}
	}
	for (int64_t y = 0; y < ny; y++)
		outp[y] = conv_fold(acc[y / 4][y % 4]);
}

/* The direct loop: any window, no scratch; stores each output to dst (ap0 at
 * [n, g, o]) and scans it. Charges its work row by row (its window may be
 * long). True when the watch stopped it. */
static bool conv_plane_naive(const conv_job_t *j, const fwsim_kargs_t *kk, const float *xin,
			     const float *wk, float *dst, fwsim_numchk_t *chk, uint64_t flat0)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	uint64_t row_work = (uint64_t)b->Y * (uint64_t)j->C * (uint64_t)a->K * (uint64_t)b->K;
	for (int64_t y0 = 0; y0 < a->Y; y0++) {
		if (fwsim_tick(kk, row_work + 1))
			return true;
		for (int64_t y1 = 0; y1 < b->Y; y1++) {
			float s = 0.0f;
			for (int64_t c = 0; c < j->C; c++)
				for (int64_t k0 = 0; k0 < a->K; k0++) {
					__int128 n0 = (__int128)y0 * a->S + (__int128)k0 * a->D - a->P;
					if (n0 < 0 || n0 % a->L || n0 / a->L >= a->X)
						continue;
					for (int64_t k1 = 0; k1 < b->K; k1++) {
						__int128 n1 = (__int128)y1 * b->S + (__int128)k1 * b->D - b->P;
						if (n1 < 0 || n1 % b->L || n1 / b->L >= b->X)
							continue;
						float x = xin[c * j->si[2] + (int64_t)(n0 / a->L) * j->si[3] +
							      (int64_t)(n1 / b->L) * j->si[4]];
						float w = wk[c * j->sw[2] + k0 * j->sw[3] + k1 * j->sw[4]];
						s = fmaf(x, w, s);
					}
				}
			dst[y0 * j->so[3] + y1 * j->so[4]] = s;
			if (chk)
				fwsim_numchk_block(chk, &s, 1, flat0 + (uint64_t)(y0 * b->Y + y1));
		}
	}
	return false;
}

static fwsim_status_t conv_item(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	conv_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	fwsim_numchk_t *chk = kk.chk;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, nk = j->C * a->K * b->K;
	int64_t ntap = j->form == 'A' ? nk : 0;
	/* the taps first (pointer-aligned), then the floats */
	/* zeroed once: the planes' borders (conv_fill writes only the input's
	 * part, the same for every plane), the slack past the last plane, form
	 * B's zeros between the kernel's rows (its packing writes the same
	 * places for every o) all stay zero */
	void *scr = j->slot_scr[slot];
	if (!scr) {
		scr = calloc(1, (size_t)ntap * sizeof(conv_tap_t) + (size_t)j->scratch * sizeof(float) + 1);
		if (!scr)
			return FWSIM_NOMEM;
		j->slot_scr[slot] = scr;
	}
	conv_tap_t *taps = scr;
	float *outp = (float *)(void *)(taps + ntap), *planes = outp + (j->form == 'N' ? 0 : ny);
	float *rest = planes + j->C * j->plane;
	if (j->form == 'A')
		rest += b->M + CONV_BLOCK; /* slack of the last plane's runs */
	else if (j->form == 'B')
		rest += b->M + CONV_LANES;
	float *acc = rest, *wp = rest; /* A: the accumulators; B: the packed kernel */
	int64_t lb = (a->K * b->M + CONV_LANES - 1) / CONV_LANES * CONV_LANES;
	float (*bacc)[4][CONV_LANES] = (float (*)[4][CONV_LANES])(void *)(wp + j->O * j->C * lb);
	fwsim_status_t st = FWSIM_OK;
	uint64_t p0 = item * j->per_item, p1 = fwsim_conv_item_end(j, p0);
	/* planes in group-major order, so that consecutive planes share their
	 * kernels: form B packs a group's O kernels (the output gradient's
	 * channels, for a weight gradient) once for all its batch entries */
	int64_t packed_g = -1;
	for (uint64_t pi = p0; pi < p1 && st == FWSIM_OK; pi++) {
		int64_t g = (int64_t)(pi / (uint64_t)j->N), n = (int64_t)(pi % (uint64_t)j->N);
		const float *xin = j->in + n * j->si[0] + g * j->si[1];
		bool naive = j->form == 'N';
		if (!naive)
			for (int64_t c = 0; c < j->C; c++)
				conv_fill(j, xin + c * j->si[2], planes + c * j->plane);
		/* form B's runs read a few input values under zero weights: exact only
		 * while they are finite, else this (n, g) takes the direct loop */
		if (j->form == 'B' && fwsim_any_nonfinite(planes, (size_t)(j->C * j->plane)))
			naive = true;
		for (int64_t o = 0; o < j->O; o++) {
			if (!naive && fwsim_tick(&kk, (uint64_t)ny * (uint64_t)nk + (uint64_t)ny)) {
				st = FWSIM_TIMEOUT;
				break;
			}
			const float *wk = j->w + g * j->sw[0] + o * j->sw[1];
			float *dst = j->out + n * j->so[0] + g * j->so[1] + o * j->so[2];
			uint64_t flat0 = (((uint64_t)n * (uint64_t)j->G + (uint64_t)g) * (uint64_t)j->O +
					  (uint64_t)o) * (uint64_t)ny;
			if (!naive && j->form == 'A') {
				conv_plane_a(j, planes, wk, taps, acc, outp, dst, chk, flat0);
				continue;
			}
			if (!naive) {
				if (packed_g != g) {
					for (int64_t oo = 0; oo < j->O; oo++)
						for (int64_t c = 0; c < j->C; c++)
							for (int64_t k0 = 0; k0 < a->K; k0++)
								row_copy(wp + (oo * j->C + c) * lb + k0 * b->M,
									 j->w + g * j->sw[0] + oo * j->sw[1] +
									 c * j->sw[2] + k0 * j->sw[3],
									 j->sw[4], b->K);
					packed_g = g;
				}
				conv_plane_b(j, planes, wp + o * j->C * lb, lb, bacc, outp);
			} else {
				if (conv_plane_naive(j, &kk, xin, wk, dst, chk, flat0)) {
					st = FWSIM_TIMEOUT;
					break;
				}
				continue;
			}
			for (int64_t y0 = 0; y0 < a->Y; y0++)
				row_store(dst + y0 * j->so[3], j->so[4], outp + y0 * b->Y, b->Y);
			if (chk)
				fwsim_numchk_block(chk, outp, (size_t)ny, flat0);
		}
	}
	return st;
}

fwsim_status_t fwsim_kernel_conv(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *x = &in->ap[1], *wk = &in->ap[2], *win = &in->ap[3];
	if (!isa_ap_num_elements(o))
		return FWSIM_OK;
	conv_job_t *j = calloc(1, sizeof(*j));
	if (!j)
		return FWSIM_NOMEM;
	j->k = k;
	j->N = (int64_t)o->shape[0];
	j->G = (int64_t)o->shape[1];
	j->O = (int64_t)o->shape[2];
	j->C = (int64_t)x->shape[2];
	for (int i = 0; i < 5; i++) {
		j->so[i] = o->stride[i];
		j->si[i] = x->stride[i];
		j->sw[i] = wk->stride[i];
	}
	for (int s = 0; s < 2; s++) {
		conv_dim_t *d = &j->d[s];
		d->Y = (int64_t)o->shape[3 + s];
		d->X = (int64_t)x->shape[3 + s];
		d->K = (int64_t)wk->shape[3 + s];
		d->S = (int64_t)win->shape[ISA_CONV_STRIDE + s];
		d->D = (int64_t)win->shape[ISA_CONV_RHS_DIL + s];
		d->L = (int64_t)win->shape[ISA_CONV_LHS_DIL + s];
		d->P = win->stride[s];
	}
	/* empty inputs or kernels leave sums of nothing: zeros */
	bool empty = !isa_ap_num_elements(x) || !isa_ap_num_elements(wk);
	j->in = (const float *)(const void *)k->base[1];
	j->w = (const float *)(const void *)k->base[2];
	j->out = (float *)(void *)k->base[0];
	int64_t ny = j->d[0].Y * j->d[1].Y, nk = j->C * j->d[0].K * j->d[1].K;
	j->form = empty ? 'N' : j->d[0].L == 1 && j->d[1].L == 1 && ny * 8 <= j->d[0].K * j->d[1].K
		  ? 'B' : 'A';
	if (j->form != 'N' && (!dim_plan(&j->d[0], j->form) || !dim_plan(&j->d[1], j->form)))
		j->form = 'N';
	/* floats per item: the output plane, the planes, form A's slack, taps (4
	 * floats' room each, allocated apart) and accumulators, form B's packed
	 * kernel; past ISA_CONV_SCRATCH_FLOATS the direct loop, which needs none */
	__int128 scratch = 0;
	if (j->form != 'N') {
		j->plane = j->d[0].V * j->d[1].V * j->d[0].M * j->d[1].M;
		scratch = ny + (__int128)j->C * j->plane;
		if (j->form == 'A')
			scratch += j->d[1].M + CONV_BLOCK + 4 * (__int128)nk +
				   (__int128)j->d[0].Y * j->d[1].M + CONV_BLOCK;
		else /* slack, the group's O kernels at plane pitch, partial sums */
			scratch += j->d[1].M + CONV_LANES +
				   (__int128)j->O * j->C * ((j->d[0].K * j->d[1].M + CONV_LANES - 1) /
							    CONV_LANES * CONV_LANES) +
				   (__int128)(ny + 3) / 4 * 4 * CONV_LANES;
		if (scratch > ISA_CONV_SCRATCH_FLOATS)
			j->form = 'N';
	}
	j->scratch = j->form == 'N' ? 0 : (int64_t)scratch - (j->form == 'A' ? 4 * nk : 0);
	j->n_planes = (uint64_t)j->N * (uint64_t)j->G;
	if ((empty || (!fwsim_conv_plan_tiles_fwd(j) && !fwsim_conv_plan_flat(j) &&
		       !fwsim_conv_plan_gemm(j) && !fwsim_conv_plan_psum(j))) &&
	    !fwsim_conv_plan_rows(j) && !fwsim_conv_plan_dgrad(j) && !fwsim_conv_plan_wgrad(j) &&
	    !fwsim_conv_plan_dw(j))
		fwsim_conv_plan_dwg(j);
	/* small instructions stay on the engine's thread: a hand-off to the pool
	 * costs more than it saves below FWSIM_PAR_MIN_WORK (pool.h). Each output
	 * is one item's whatever the cut, so the cut never changes a result. */
	double work = (double)j->n_planes * (double)j->O * (double)ny * (double)(nk ? nk : 1) *
		      (j->dw_hp ? 8.0 : 1.0);
	j->per_item = work < (double)FWSIM_PAR_MIN_WORK ? j->n_planes
						     : (j->n_planes + CONV_ITEMS - 1) / CONV_ITEMS;
	fwsim_par_chk_init(k, j->chk);
	uint64_t items = (j->n_planes + j->per_item - 1) / j->per_item;
	if (j->form == 'F' || j->form == 'G' || j->form == 'P') { /* an item per unit, on the pool past its threshold */
		j->gm.per_item = work < (double)FWSIM_PAR_MIN_WORK ? j->gm.units : 1;
		items = (j->gm.units + j->gm.per_item - 1) / j->gm.per_item;
	}
	fwsim_status_t st = FWSIM_OK;
	if (j->form == 'A' && !conv_plan_a(j))
		st = FWSIM_NOMEM;
	if (st == FWSIM_OK && (j->form == 'A' || j->form == 'B') &&
	    !(j->cols = conv_plan_cols(&j->d[1])))
		st = FWSIM_NOMEM;
	if (st == FWSIM_OK)
		st = fwsim_par_for(items, j->form == 'D' ? fwsim_conv_item_dw
					  : j->form == 'E' ? fwsim_conv_item_dwg
					  : j->form == 'R' ? fwsim_conv_item_rows
					  : j->form == 'W' ? fwsim_conv_item_wgrad
					  : j->form == 'T' ? fwsim_conv_item_dgrad
					  : j->form == 'F' ? fwsim_conv_item_flat
					  : j->form == 'G' ? fwsim_conv_item_gemm
					  : j->form == 'P' ? fwsim_conv_item_psum : conv_item, j, k->watch);
	fwsim_par_chk_merge(k, j->chk);
	if (st == FWSIM_OK && j->form == 'P' && !j->gm.tiles)
		fwsim_conv_psum_reduce(j);
	for (uint32_t i = 0; i < FWSIM_PAR_MAX_THREADS; i++)
		free(j->slot_scr[i]);
	free(j->cls);
	free(j->geo);
	free(j->cols);
	free(j->gm.wp);
	free(j->gm.flat_off);
	free(j->gm.psum);
	free(j);
	return st;
}
