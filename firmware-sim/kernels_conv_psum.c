/* CONV form P (docs/isa.md, "CONV"): dense weight gradients (few outputs, many taps). On CPUs with AVX2 and FMA register tiles (kernels_conv_tiles.c); elsewhere one item per input channel c (the batch entry), an sgemm product over an im2col buffer into partial sums of its own, added in c order at the end. */
#include <string.h>

#include "conv.h"

/*
 * A weight gradient as CONV has the forward's batch as its C, the kernel's
 * input channels as N, the output gradient as the kernel and the kernel's
 * window as the output Y: out[n, o, y] = sum_{c, k} X[n, c, y S + k - P] x
 * W[o, c, k]. Without AVX2 and FMA (kernels_conv_tiles.c otherwise), for one c
 * that is one product over the taps k, transposed so that T's rows run
 * along the input's rows:
 *   part_c[y0][(n, y1)][o] = T_c[(n, y1)][(k0, k1)] x W_c[o][(k0, k1)]^T
 * with T_c[(n, y1)][r][k1] = X[n, c, r - P0, y1 S1 + k1 D1 - P1]: with kernel
 * dilation 1 along dim 0, output row y0 reads T from its row y0 S0 (the
 * forward's "shift", lower_conv_dense.c), so the input is copied once per
 * output column (with another dilation, T is built for each y0). The taps are cut into chunks of kernel rows (T about 512
 * KiB, in the item's cache), the products accumulating over the chunks.
 *
 * Items are the c: on 2 CPUs each takes half the batch, with one hand-off for
 * the instruction. Their sums of c's cannot share a buffer without a fixed
 * order, so each item writes its own partial sums (N O Y0 Y1 floats: the size
 * of the output, 147 KiB for ResNet's 3x3 64 -> 64) and the calling thread
 * adds them, c = 0, 1, ..., into the output: the same bits on any number of
 * threads. The compiler lowered these as MATMULs per image whose accumulator
 * was cut into column items for the pool.
 */

/* Floats of one item's T (as form G's band). */
#define CONV_PSUM_T_FLOATS (1 << 17)

/* T and sgemm: T's chunks and the kernel's layout (false: T or the packed
 * kernel would pass the scratch bound). */
static bool psum_plan_t(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_gemm_t *gm = &j->gm;
	int64_t taps = a->K * b->K, m = j->N * b->Y;
	/* T: m rows of (kc + (Y0 - 1) S0) kernel-row-long runs of K1, shared by
	 * every output row y0 (kernel dilation 1 along dim 0); else kc rows,
	 * built again for each y0 */
	gm->shift = a->D == 1;
	int64_t extra = gm->shift ? (a->Y - 1) * a->S : 0, per = m * b->K;
	int64_t kc = CONV_PSUM_T_FLOATS / per - extra;
	kc = kc < 1 ? 1 : kc > a->K ? a->K : kc;
	gm->nchunks = (a->K + kc - 1) / kc;
	gm->kc = (a->K + gm->nchunks - 1) / gm->nchunks;
	gm->rows = gm->kc + extra;
	gm->t_floats = per * gm->rows;
	if (gm->t_floats > ISA_CONV_SCRATCH_FLOATS || gm->rows * b->K > INT32_MAX)
		return false;
	/* W_c read in place when its (k0, k1) rows are row-major, at a pitch of
	 * at least a row per o; else packed by each item into its scratch */
	gm->in_place = (b->K == 1 || j->sw[4] == 1) && (a->K == 1 || j->sw[3] == b->K) &&
		       j->sw[1] >= taps && j->sw[1] <= INT32_MAX;
	if (!gm->in_place && j->O * taps > ISA_CONV_SCRATCH_FLOATS)
		return false;
	j->scratch = gm->t_floats + (gm->in_place ? 0 : j->O * taps);
	return true;
}

/* Forward convolutions (no more taps than outputs per plane) of planes
 * smaller than this, with sums at least CONV_TILES_FWD_MIN_DEPTH deep (C x
 * the taps), go to the tiles where the CPU has them; elsewhere to form G
 * (larger planes to form F, kernels_conv_flat.c, where the CPU has AVX-512F).
 * ResNet's 3x3 128 -> 128 over 8 8x8 images ran 1.02-1.07 ms as tiles, 1.24-
 * 1.29 as the compiler's MATMULs and 1.55 as form G on one CPU, 0.57-0.59,
 * 1.09-1.13 and 0.92 on two (PyTorch: 1.05 and 0.57). Over 16x16 planes
 * the tiles ran level with form G (1.30 ms, 0.78 on two CPUs). */
#define CONV_TILES_FWD_MAX_PLANE 256
#define CONV_TILES_FWD_MIN_DEPTH 256

bool fwsim_conv_plan_tiles_fwd(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t taps = a->K * b->K, ny = a->Y * b->Y;
	if (j->G != 1 || a->L != 1 || b->L != 1 || taps > ny || ny >= CONV_TILES_FWD_MAX_PLANE ||
	    j->C * taps < CONV_TILES_FWD_MIN_DEPTH || j->O < 16 || !fwsim_conv_plan_tiles(j))
		return false;
	j->form = 'P';
	return true;
}

bool fwsim_conv_plan_psum(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_gemm_t *gm = &j->gm;
	int64_t taps = a->K * b->K, ny = a->Y * b->Y, part = j->N * j->O * ny;
	int64_t m = j->N * b->Y;
	if (j->G != 1 || a->L != 1 || b->L != 1 || taps < 64 || taps <= ny ||
	    j->O < 16 || m < 16 || j->C < 2 || part > ISA_CONV_PSUM_FLOATS / j->C ||
	    m > INT32_MAX || j->O > INT32_MAX || b->K > INT32_MAX)
		return false;
	/* the register tiles where the CPU has them (no T, no partial sums) */
	if (fwsim_conv_plan_tiles(j)) {
		j->form = 'P';
		return true;
	}
	if (!psum_plan_t(j))
		return false;
	gm->psum = malloc((size_t)(j->C * part) * sizeof(float));
	if (!gm->psum)
		return false;
	gm->units = (uint64_t)j->C;
	j->form = 'P';
	return true;
}

/* Input channel c's partial sums into gm->psum + c N O Y0 Y1, on kk's
 * thread with scratch t (fwsim_conv_unit_fn). */
static fwsim_status_t psum_channel(const conv_job_t *j, const fwsim_kargs_t *kk, float *t, uint64_t uc)
{
	int64_t c = (int64_t)uc;
	bool avx512 = fwsim_cpu_avx512();
	const conv_gemm_t *gm = &j->gm;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t taps = a->K * b->K, m = j->N * b->Y;
	float *part = gm->psum + c * j->N * j->O * a->Y * b->Y;
	const float *w = j->w + c * j->sw[2];
	int ldb = (int)j->sw[1];
	if (!gm->in_place) { /* W_c as [o][(k0, k1)] */
		float *wp = t + gm->t_floats;
		for (int64_t o = 0; o < j->O; o++)
			for (int64_t k0 = 0; k0 < a->K; k0++)
				for (int64_t k1 = 0; k1 < b->K; k1++)
					wp[o * taps + k0 * b->K + k1] =
						w[o * j->sw[1] + k0 * j->sw[3] + k1 * j->sw[4]];
		w = wp;
		ldb = (int)taps;
	}
	for (int64_t ch = 0; ch < gm->nchunks; ch++) {
		int64_t kb = ch * gm->kc, kc = a->K - kb < gm->kc ? a->K - kb : gm->kc;
		int64_t rr = gm->shift ? kc + (a->Y - 1) * a->S : kc;
		for (int64_t y0 = 0; y0 < a->Y; y0++) {
			/* T from input row kb - P0 for all y0 (shifted), else this
			 * y0's rows y0 S0 + k0 D0 - P0 */
			if (y0 == 0 || !gm->shift)
				for (int64_t n = 0; n < j->N; n++) {
					const float *xn = j->in + n * j->si[0] + c * j->si[2];
					int64_t i0 = gm->shift ? kb - a->P : y0 * a->S + kb * a->D - a->P;
					for (int64_t y1 = 0; y1 < b->Y; y1++)
						fwsim_conv_gemm_rows(t + (n * b->Y + y1) * rr * b->K, rr, xn, i0,
								     a->D, a->X, j->si[3], b->K, b->D,
								     y1 * b->S - b->P, b->X, j->si[4], avx512);
				}
			if (fwsim_tick(kk, (uint64_t)(m * j->O * kc * b->K)))
				return FWSIM_TIMEOUT;
			const float *ty = gm->shift ? t + y0 * a->S * b->K : t;
			fwsim_status_t st = fwsim_gemm_f32('N', 'T', (uint64_t)m, (uint64_t)j->O,
							   (uint64_t)(kc * b->K), ty, (int)(rr * b->K),
							   w + kb * (gm->in_place ? j->sw[3] : b->K), ldb,
							   ch ? 1.0f : 0.0f, part + y0 * m * j->O, (int)j->O);
			if (st != FWSIM_OK)
				return st;
		}
	}
	return FWSIM_OK;
}

fwsim_status_t fwsim_conv_item_psum(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	conv_job_t *j = ctx;
	return fwsim_conv_run_units(j, item, slot, w, j->gm.tiles ? fwsim_conv_tiles_unit : psum_channel);
}

void fwsim_conv_psum_reduce(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	int64_t ny = a->Y * b->Y, m = j->N * b->Y, part = j->N * j->O * ny;
	fwsim_numchk_t *chk = j->k->chk;
	/* the sums in c order, contiguous (vectorised), into the first */
	float *sum = j->gm.psum;
	for (int64_t c = 1; c < j->C; c++) {
		const float *p = j->gm.psum + c * part;
		for (int64_t i = 0; i < part; i++)
			sum[i] += p[i];
	}
	/* stored a row of O at a time, in the sums' order; scanned in it only
	 * when nothing there may be NaN or Inf, else output by output in the
	 * output's order, for the count and the first index */
	for (int64_t y0 = 0; y0 < a->Y; y0++)
		for (int64_t n = 0; n < j->N; n++)
			for (int64_t y1 = 0; y1 < b->Y; y1++) {
				const float *src = sum + (y0 * m + n * b->Y + y1) * j->O;
				float *dst = j->out + n * j->so[0] + y0 * j->so[3] + y1 * j->so[4];
				if (j->so[2] == 1)
					memcpy(dst, src, (size_t)j->O * sizeof(float));
				else
					for (int64_t o = 0; o < j->O; o++)
						dst[o * j->so[2]] = src[o];
			}
	if (!chk || !fwsim_numchk_maybe_nonfinite(chk, sum, (size_t)part))
		return;
	uint64_t flat = 0;
	for (int64_t n = 0; n < j->N; n++)
		for (int64_t o = 0; o < j->O; o++)
			for (int64_t y0 = 0; y0 < a->Y; y0++)
				for (int64_t y1 = 0; y1 < b->Y; y1++, flat++)
					fwsim_numchk_block(chk, &sum[(y0 * m + n * b->Y + y1) * j->O + o], 1, flat);
}
