/* CONV form G (docs/isa.md, "CONV"): dense convolutions (many input channels and outputs) as sgemm products over im2col bands each pool thread builds in its own cache, one item per (image, band of output rows). */
#include <stdatomic.h>
#include <string.h>

#include "conv.h"

/*
 * Why a form of its own, not the compiler's im2col COPYs and MATMULs: those
 * are separate instructions. The DMA engine writes a 2.5-7 MB im2col buffer
 * per image (past the 2 MB L2) and the tensor engine reads it back; with two
 * CPUs each GEMM is cut into column items, a pool hand-off (a futex wake of
 * the other CPU, ~100 us) per GEMM, while the copies of the next image run
 * beside both halves. ResNet's 3x3 64->64 forward over 8 56x56 images ran
 * 1.14-1.29x faster on 2 CPUs than on 1. Here an item builds the im2col band
 * of its rows (about 512 KiB, CONV_GEMM_T_FLOATS) and multiplies it while
 * it is still in its core's L2; items share nothing but the read-only
 * weights, and there are N x bands of them for one hand-off.
 *
 * T, the band's im2col buffer, [(c, k0, k1)][y0 in the band][y1]: then one
 * product, out[o, band] = W[o, (c, k0, k1)] x T, K = C K0 K1. With stride 1
 * along dim 0 ("shift", as lower_conv_dense.c does), T keeps [(c, k1)][the
 * band's rows and the (K0 - 1) D0 below them][y1]: kernel row k0 reads T
 * from row k0 D0, K0 products accumulate into out (K = C K1), and the input
 * is copied K1 times, not K0 K1. Every output is one item's, in sgemm's
 * order for shapes fixed by the instruction (not by the thread count): the
 * same bits on any number of threads.
 */

/* Floats of an item's im2col band: 512 KiB, a quarter of this machine's L2
 * (beside sgemm's packed panels and the output band). On the 3x3 64->64
 * forward over 56x56, one thread, against 1 MiB: 0.93x; 2 MiB 1.05x, 4
 * MiB (one band per image) 0.97x; 256 KiB 1.0x, 128 KiB 1.45x (bands of
 * one row, each copying three). */
#define CONV_GEMM_T_FLOATS (1 << 17)
/* A product's depth from which it runs at sgemm's speed: below it, the
 * shifted form's K0 products of depth C K1 give way to one of C K0 K1. */
#define CONV_GEMM_MIN_DEPTH 64

/* Whether the kernel's strides lay each W[g][o] out as the row-major (c, k0,
 * k1) row sgemm reads in place (dims of 1 carry no stride). */
static bool gemm_kernel_rows(const conv_job_t *j)
{
	int64_t K0 = j->d[0].K, K1 = j->d[1].K, nk = j->C * K0 * K1;
	return (K1 == 1 || j->sw[4] == 1) && (K0 == 1 || j->sw[3] == K1) &&
	       (j->C == 1 || j->sw[2] == K0 * K1) &&
	       (j->O == 1 || (j->sw[1] >= nk && j->sw[1] <= INT32_MAX)) && nk <= INT32_MAX;
}

/*
 * Staged rows. Along a strided dim 1 (a stem's stride 2) or one whose
 * input is not contiguous (channels innermost), T's rows are gathers: at
 * stride 2, two masked loads and a permute per 16 floats, K0 K1 times over
 * each input row. The 7x7 stride-2 stem spent a fifth of its time there
 * (about 3 ms of 13 on one thread, against 10 for its sgemm products).
 * Instead each input row the band reads is split once into its S1 phases
 * (stride 2: even and odd columns), zeros where the padding lies, and every
 * T row becomes a plain copy of Y floats from one phase. The stage is
 * C x (the band's input rows) x S1 x (Y + the kernel's span / S1) floats
 * (51 KiB for the stem's bands); a job whose stage would pass T's size
 * builds T's rows directly.
 */
static void gemm_plan_stage(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_gemm_t *gm = &j->gm;
	gm->st_rows = 0;
	if (b->S == 1 && (j->si[4] == 1 || b->X == 1))
		return;
	int64_t h0 = fwsim_floordiv(-b->P, b->S);
	int64_t h1 = fwsim_floordiv((b->K - 1) * b->D - b->P, b->S);
	int64_t rows = gm->shift ? gm->rows : (gm->band - 1) * a->S + (a->K - 1) * a->D + 1;
	int64_t len = b->Y + h1 - h0;
	if (b->S > CONV_GEMM_T_FLOATS || len > CONV_GEMM_T_FLOATS ||
	    j->C * rows * b->S * len > CONV_GEMM_T_FLOATS)
		return;
	gm->st_rows = rows;
	gm->st_len = len;
	gm->st_h0 = h0;
	j->scratch += j->C * rows * b->S * len;
}

bool fwsim_conv_plan_gemm(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t nk = j->C * a->K * b->K;
	/* forward-like: no more taps than outputs per plane (else form P) */
	if (a->L != 1 || b->L != 1 || nk < CONV_GEMM_MIN_DEPTH || nk > INT32_MAX || j->O < 16 ||
	    j->O > INT32_MAX || a->Y < 1 || b->Y < 1 || b->Y > INT32_MAX / 2 ||
	    a->K * b->K > a->Y * b->Y)
		return false;
	/* an output that repeats along a dim (stride 0) would have two items
	 * write the same elements at once: the forms that keep a plane whole */
	int64_t oshape[5] = { j->N, j->G, j->O, a->Y, b->Y };
	for (int i = 0; i < 5; i++)
		if (oshape[i] > 1 && j->so[i] == 0)
			return false;
	conv_gemm_t *gm = &j->gm;
	/* T's floats per band row, and its rows beyond the band */
	gm->shift = a->S == 1 && a->K > 1 && j->C * b->K >= CONV_GEMM_MIN_DEPTH;
	int64_t per_row = (gm->shift ? j->C * b->K : nk) * b->Y;
	int64_t extra = gm->shift ? (a->K - 1) * a->D : 0;
	int64_t band = CONV_GEMM_T_FLOATS / per_row - extra;
	if (gm->shift && band < a->D) { /* more rows copied than the band's own */
		gm->shift = false;
		per_row = nk * b->Y;
		extra = 0;
		band = CONV_GEMM_T_FLOATS / per_row;
	}
	band = band < 1 ? 1 : band > a->Y ? a->Y : band;
	/* products into scratch when they cannot go straight into the output
	 * planes (row-major, O rows at a pitch sgemm takes): O x band rows */
	gm->direct = (b->Y == 1 || j->so[4] == 1) && (a->Y == 1 || j->so[3] == b->Y) &&
		     (j->O == 1 || (j->so[2] >= a->Y * b->Y && j->so[2] <= INT32_MAX));
	if (!gm->direct && j->O * band * b->Y > ISA_CONV_SCRATCH_FLOATS)
		band = ISA_CONV_SCRATCH_FLOATS / (j->O * b->Y);
	if (band < 1)
		return false;
	gm->nbands = (a->Y + band - 1) / band;
	gm->units = j->n_planes * (uint64_t)gm->nbands;
	gm->band = (a->Y + gm->nbands - 1) / gm->nbands; /* even bands */
	gm->rows = gm->band + extra;
	gm->t_floats = per_row * gm->rows;
	int64_t cols = gm->band * b->Y;
	if (gm->t_floats > ISA_CONV_SCRATCH_FLOATS || cols > INT32_MAX || gm->rows * b->Y > INT32_MAX)
		return false;
	j->scratch = gm->t_floats + (gm->direct ? 0 : j->O * cols);
	gemm_plan_stage(j);
	/* the kernel as the products read it: [G][K0][O][(c, k1)] shifted, else
	 * [G][O][(c, k0, k1)], in place when it is laid out so */
	gm->in_place = !gm->shift && gemm_kernel_rows(j);
	gm->depth = gm->shift ? j->C * b->K : nk;
	if (!gm->in_place) {
		gm->wp = malloc((size_t)(j->G * j->O * nk) * sizeof(float));
		if (!gm->wp)
			return false;
		for (int64_t g = 0; g < j->G; g++)
			for (int64_t o = 0; o < j->O; o++)
				for (int64_t c = 0; c < j->C; c++)
					for (int64_t k0 = 0; k0 < a->K; k0++) {
						const float *s = j->w + g * j->sw[0] + o * j->sw[1] +
								 c * j->sw[2] + k0 * j->sw[3];
						float *d = gm->shift
							   ? gm->wp + ((g * a->K + k0) * j->O + o) * gm->depth +
								     c * b->K
							   : gm->wp + (g * j->O + o) * nk + (c * a->K + k0) * b->K;
						for (int64_t k1 = 0; k1 < b->K; k1++)
							d[k1] = s[k1 * j->sw[4]];
					}
	}
	j->form = 'G';
	return true;
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
/* A row of T 16 lanes at a time: the lanes of [lo, hi) load x[y S + off] (S
 * 1: one masked load; 2: 32 loaded, the even ones kept), the others are zero
 * and touch no memory. Padding rows and the zeros beside the input take the
 * same pass, with no call per row: for 16x16 planes memset and memcpy's
 * calls cost more than their copying, and at stride 2 (a 7x7 stem) the
 * scalar loop took most of the im2col time. */
__attribute__((target("avx512f,bmi2")))
static void gemm_row_avx512(float *restrict d, const float *restrict x, int64_t Y, int S, int64_t off,
			    int64_t lo, int64_t hi)
{
	for (int64_t i = 0; i < Y; i += 16) {
		int64_t n = Y - i < 16 ? Y - i : 16;
		uint32_t valid = fwsim_conv_bits32(lo > i ? lo - i : 0, hi - i < n ? hi - i : n);
		const float *p = x + off + S * i;
		__m512 v;
		if (S == 1) {
			v = _mm512_maskz_loadu_ps((__mmask16)valid, p);
		} else {
			__mmask16 m[2] = { (__mmask16)_pdep_u32(valid & 0xffu, 0x5555u),
					   (__mmask16)_pdep_u32(valid >> 8, 0x5555u) };
			v = fwsim_conv_row16(2, m, p);
		}
		_mm512_mask_storeu_ps(d + i, (__mmask16)fwsim_conv_bits32(0, n), v);
	}
}
#endif

void fwsim_conv_gemm_rows(float *restrict d, int64_t nr, const float *x, int64_t i0, int64_t di,
			  int64_t X0, int64_t si3, int64_t Y, int64_t S, int64_t off, int64_t X1, int64_t sx,
			  bool avx512)
{
	/* the outputs whose inputs lie in [0, X1): the same for every row */
	int64_t lo = off >= 0 ? 0 : (-off + S - 1) / S;
	int64_t hi = X1 - 1 - off >= 0 ? (X1 - 1 - off) / S + 1 : 0;
	lo = lo < Y ? lo : Y;
	hi = hi < lo ? lo : hi > Y ? Y : hi;
	for (int64_t r = 0; r < nr; r++, d += Y) {
		int64_t i = i0 + r * di;
		const float *row = i >= 0 && i < X0 ? x + i * si3 : NULL;
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
		if (avx512 && sx == 1 && (S == 1 || S == 2)) {
			gemm_row_avx512(d, row ? row : d, Y, (int)S, off, row ? lo : 0, row ? hi : 0);
			continue;
		}
#endif
		if (!row) {
			memset(d, 0, (size_t)Y * sizeof(float));
			continue;
		}
		memset(d, 0, (size_t)lo * sizeof(float));
		if (S == 1 && sx == 1)
			memcpy(d + lo, row + lo + off, (size_t)(hi - lo) * sizeof(float));
		else
			for (int64_t y = lo; y < hi; y++)
				d[y] = row[(y * S + off) * sx];
		memset(d + hi, 0, (size_t)(Y - hi) * sizeof(float));
	}
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
/* d[q] = row[2 q + off] for q in [0, n): 16 per two loads and a permute */
__attribute__((target("avx512f")))
static void stage_even_avx512(float *restrict d, const float *restrict row, int64_t off, int64_t n)
{
	for (int64_t q = 0; q < n; q += 16) {
		int64_t m = n - q < 16 ? n - q : 16, two = 2 * m - 1; /* floats read */
		__mmask16 mk[2] = { (__mmask16)fwsim_conv_bits32(0, two < 16 ? two : 16),
				    (__mmask16)fwsim_conv_bits32(0, two > 16 ? two - 16 : 0) };
		_mm512_mask_storeu_ps(d + q, (__mmask16)fwsim_conv_bits32(0, m),
				      fwsim_conv_row16(2, mk, row + off + 2 * q));
	}
}

/* nr rows of n floats: d's contiguous, s's step floats apart. Masked
 * stores throughout: an unmasked loop becomes a memcpy call per row (rows
 * of 112 floats: 7-11% of the stem's samples in the calls). */
__attribute__((target("avx512f")))
static void copy_rows_avx512(float *restrict d, const float *restrict s, int64_t nr, int64_t n,
			     int64_t step)
{
	for (int64_t r = 0; r < nr; r++, d += n, s += step)
		for (int64_t i = 0; i < n; i += 16) {
			__mmask16 m = (__mmask16)fwsim_conv_bits32(0, n - i < 16 ? n - i : 16);
			_mm512_mask_storeu_ps(d + i, m, _mm512_maskz_loadu_ps(m, s + i));
		}
}
#endif

/* The stage (gemm_plan_stage) of the band whose first staged input row is
 * i0, for the (n, g) plane whose input is x. */
static void gemm_stage(const conv_job_t *j, const float *x, int64_t i0, float *st, bool avx512)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	const conv_gemm_t *gm = &j->gm;
	int64_t S = b->S, len = gm->st_len, h0 = gm->st_h0, sx = j->si[4];
	memset(st, 0, (size_t)(j->C * gm->st_rows * S * len) * sizeof(float));
	for (int64_t c = 0; c < j->C; c++)
		for (int64_t r = 0; r < gm->st_rows; r++) {
			int64_t i = i0 + r;
			if (i < 0 || i >= a->X)
				continue;
			const float *row = x + c * j->si[2] + i * j->si[3];
			for (int64_t p = 0; p < S; p++) {
				float *d = st + ((c * gm->st_rows + r) * S + p) * len;
				/* entries whose column (q + h0) S + p lies in [0, X1) */
				int64_t qa = h0 < 0 ? -h0 : 0;
				int64_t qb = b->X - 1 - p >= 0 ? (b->X - 1 - p) / S + 1 - h0 : qa;
				qb = qb > len ? len : qb < qa ? qa : qb;
				int64_t off = (qa + h0) * S + p;
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
				if (avx512 && S == 2 && sx == 1) {
					stage_even_avx512(d + qa, row, off, qb - qa);
					continue;
				}
#endif
				for (int64_t q = qa; q < qb; q++)
					d[q] = row[(off + (q - qa) * S) * sx];
			}
		}
}

/* T for the band from output row y0 of the (n, g) plane whose input is x:
 * nr rows per (c, k1) or (c, k0, k1). */
static void gemm_im2col(const conv_job_t *j, const float *x, int64_t y0, int64_t nr, float *t)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	const conv_gemm_t *gm = &j->gm;
	int64_t K0 = gm->shift ? 1 : a->K;
	bool avx512 = fwsim_cpu_avx512();
	if (gm->st_rows) {
		/* the staged rows: the band's first output row's first tap on */
		float *st = t + gm->t_floats + (gm->direct ? 0 : j->O * gm->band * b->Y);
		int64_t S0 = gm->shift ? 1 : a->S, S1 = b->S, len = gm->st_len;
		gemm_stage(j, x, y0 * S0 - a->P, st, avx512);
		for (int64_t c = 0; c < j->C; c++)
			for (int64_t k0 = 0; k0 < K0; k0++)
				for (int64_t k1 = 0; k1 < b->K; k1++) {
					float *d = t + ((c * K0 + k0) * b->K + k1) * nr * b->Y;
					int64_t off = k1 * b->D - b->P, h = fwsim_floordiv(off, S1);
					const float *s = st + (c * gm->st_rows + k0 * a->D) * S1 * len +
							 (off - h * S1) * len + h - gm->st_h0;
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
					if (avx512) {
						copy_rows_avx512(d, s, nr, b->Y, S0 * S1 * len);
						continue;
					}
#endif
					for (int64_t r = 0; r < nr; r++, d += b->Y, s += S0 * S1 * len)
						memcpy(d, s, (size_t)b->Y * sizeof(float));
				}
		return;
	}
	for (int64_t c = 0; c < j->C; c++)
		for (int64_t k0 = 0; k0 < K0; k0++)
			for (int64_t k1 = 0; k1 < b->K; k1++) {
				float *d = t + ((c * K0 + k0) * b->K + k1) * nr * b->Y;
				/* the shifted form's rows step by 1 (S0 = 1) from the band's
				 * first output row's first tap */
				fwsim_conv_gemm_rows(d, nr, x + c * j->si[2],
						     gm->shift ? y0 - a->P : y0 * a->S + k0 * a->D - a->P,
						     gm->shift ? 1 : a->S, a->X, j->si[3], b->Y, b->S,
						     k1 * b->D - b->P, b->X, j->si[4], avx512);
			}
}

/* Units run, counted by fwsim_conv_run_units: [0] forms G and P, [1] form F. */
static _Atomic uint64_t units_run[2];

uint64_t fwsim_conv_gemm_units(void)
{
	return atomic_load_explicit(&units_run[0], memory_order_relaxed);
}

uint64_t fwsim_conv_flat_units(void)
{
	return atomic_load_explicit(&units_run[1], memory_order_relaxed);
}

/* Band bi (of all planes' bands, plane-major) of the job, on kk's thread
 * with scratch t. */
static fwsim_status_t gemm_band(const conv_job_t *j, const fwsim_kargs_t *kk, float *t, uint64_t bi)
{
	const conv_gemm_t *gm = &j->gm;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_band_t bd = fwsim_conv_band(j, bi);
	int64_t g = bd.g, n = bd.n, y0 = bd.y0, rows = bd.rows, cols = rows * b->Y;
	/* T's rows per (c, k1): the band's and those below it, shifted */
	int64_t nr = gm->shift ? gm->rows - gm->band + rows : rows;
	gemm_im2col(j, j->in + n * j->si[0] + g * j->si[1], y0, nr, t);
	float *out = j->out + n * j->so[0] + g * j->so[1] + y0 * j->so[3];
	float *c = gm->direct ? out : t + gm->t_floats;
	int ldc = (int)(gm->direct && j->O > 1 ? j->so[2] : cols);
	int64_t nprod = gm->shift ? a->K : 1, ldb = nr * b->Y;
	fwsim_status_t st = FWSIM_OK;
	for (int64_t k0 = 0; k0 < nprod && st == FWSIM_OK; k0++) {
		if (fwsim_tick(kk, (uint64_t)(j->O * cols * gm->depth)))
			return FWSIM_TIMEOUT;
		const float *wk = gm->in_place ? j->w + g * j->sw[0]
					       : gm->wp + ((g * nprod + k0) * j->O) * gm->depth;
		int lda = (int)(gm->in_place && j->O > 1 ? j->sw[1] : gm->depth);
		st = fwsim_gemm_f32('N', 'N', (uint64_t)j->O, (uint64_t)cols, (uint64_t)gm->depth, wk, lda,
				    t + k0 * a->D * b->Y, (int)ldb, k0 ? 1.0f : 0.0f, c, ldc);
	}
	if (st != FWSIM_OK)
		return st;
	for (int64_t o = 0; o < j->O; o++) {
		const float *row = c + o * ldc;
		if (!gm->direct)
			for (int64_t r = 0; r < rows; r++)
				for (int64_t y1 = 0; y1 < b->Y; y1++)
					out[o * j->so[2] + r * j->so[3] + y1 * j->so[4]] = row[r * b->Y + y1];
		if (kk->chk)
			fwsim_numchk_block(kk->chk, row, (size_t)cols,
					   bd.flat0 + (uint64_t)(o * a->Y * b->Y));
	}
	return FWSIM_OK;
}

fwsim_status_t fwsim_conv_run_units(conv_job_t *j, uint64_t item, uint32_t slot, fwsim_watch_t *w,
				    fwsim_conv_unit_fn fn)
{
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	float *t = fwsim_conv_slot_scratch(j, slot);
	if (!t)
		return FWSIM_NOMEM;
	uint64_t u0 = item * j->gm.per_item, u1 = u0 + j->gm.per_item;
	u1 = u1 < j->gm.units ? u1 : j->gm.units;
	fwsim_status_t st = FWSIM_OK;
	for (uint64_t u = u0; u < u1 && st == FWSIM_OK; u++)
		st = fn(j, &kk, t, u);
	atomic_fetch_add_explicit(&units_run[j->form == 'F'], u1 - u0, memory_order_relaxed);
	return st;
}

fwsim_status_t fwsim_conv_item_gemm(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	conv_job_t *j = ctx;
	return fwsim_conv_run_units(j, item, slot, w, gemm_band);
}
