/* The CONV kernel's job (kernels_conv.c: forms A, B and the direct loop; kernels_conv_lanes.c: forms D and E; kernels_conv_rows.c: form R; kernels_conv_wgrad.c: form W; kernels_conv_dgrad.c: form T; kernels_conv_gemm.c: form G; kernels_conv_flat.c: form F; kernels_conv_psum.c: form P, its products in kernels_conv_tiles.c). Private to libfwsim. */
#ifndef FWSIM_CONV_H
#define FWSIM_CONV_H

#include <stdbool.h>
#include <string.h>

#include "pool.h"

#define CONV_BLOCK 64                 /* outputs per register block (8 ymm) */
#define CONV_LANES 16                 /* partial sums of a B-form dot product */
#define CONV_ITEMS 64                 /* most items one instruction is cut into */
#define CONV_ROWS_MAX_CHUNKS 64       /* forms R, W: 16-lane chunks of a row (1024 floats) */

typedef struct conv_dim {
	int64_t Y, X, K, S, D, L, P;
	int64_t T, U, V;     /* output phases, plane step per output, plane count */
	int64_t jlo, M;      /* first input index held, plane length */
} conv_dim_t;

typedef struct conv_tap {
	const float *p;
	float w;
} conv_tap_t;

/* Form A: one output phase (r0, r1) and its taps, the same for every (n, g, o). */
typedef struct conv_class {
	int64_t r0, r1, q0n, q1n;
	int64_t tap0, ntap;          /* its taps in conv_job_t.geo */
} conv_class_t;

typedef struct conv_geo {
	int64_t poff;                /* element offset of the tap's run in the planes */
	int64_t woff;                /* element offset of its weight in ap2[g, o] */
} conv_geo_t;

/* Forms G (kernels_conv_gemm.c), F (kernels_conv_flat.c) and P
 * (kernels_conv_psum.c): the im2col buffer or input copy, and the kernel's
 * layout. */
typedef struct conv_gemm {
	bool shift;                  /* T per (c, k1), kernel row k0 from T's row k0 D0 */
	bool direct;                 /* products straight into the output */
	bool in_place;               /* the kernel read where it is, not from wp */
	int64_t band, nbands;        /* output rows per band (the last may have fewer), bands */
	uint64_t units;              /* G: bands of all planes; P: input channels, or the tiles' units */
	uint64_t per_item;           /* units per item */
	int64_t rows;                /* T's rows per (c, k1) or (c, k0, k1) for a whole band */
	int64_t t_floats;            /* T's floats for a whole band */
	int64_t depth;               /* each product's K */
	float *wp;                   /* the kernel packed, or NULL */
	/* form G's staged input rows (stride > 1 or a non-unit stride along
	 * dim 1): per channel, rows st_rows (0: none) of S1 phases st_len long,
	 * phase p's entry q the input's column (q + st_h0) S1 + p */
	int64_t st_rows, st_len, st_h0;
	/* form P */
	int64_t kc, nchunks;         /* kernel rows per chunk, chunks */
	float *psum;                 /* [C][Y0][N Y1][O] partial sums */
	bool tiles;                  /* products as register tiles (kernels_conv_tiles.c) */
	int64_t trows, tk1;          /* the tiles' kernel blocks: rows, columns */
	int64_t tc;                  /* and channels (> 1 only with whole kernels) */
	int64_t tn;                  /* the tiles' n per unit */
	int64_t to;                  /* the tiles' o per slice: 32, or 64 (wide) */
	int64_t tyr;                 /* the tiles' output rows y0 per unit */
	/* form F: the copy's row pitch, phase and channel strides (floats),
	 * each tap's offset in a channel's copy */
	int64_t flat_wp, flat_pf, flat_cs;
	int64_t *flat_off;
} conv_gemm_t;

typedef struct conv_job {
	const fwsim_kargs_t *k;
	conv_class_t *cls;
	conv_geo_t *geo;
	int64_t ncls, ngeo;
	int64_t N, G, O, C;
	conv_dim_t d[2];
	int64_t so[5], si[5], sw[5]; /* element strides of ap0, ap1, ap2 */
	const float *in, *w;
	float *out;
	int form;                    /* 'A', 'B', 'D', 'E', 'F', 'G', 'P', 'R', 'T', 'W' or 'N' (naive) */
	conv_gemm_t gm;              /* forms F, G and P */
	int64_t *cols;               /* conv_plan_cols of d[1] (forms A and B) */
	int64_t dw_hp, dw_wp;        /* form D: the padded input's rows, columns */
	int64_t plane;               /* V0 V1 M0 M1: one channel's planes */
	int64_t scratch;             /* floats per item */
	uint64_t per_item, n_planes; /* (n, g) planes per item, in all */
	/* each pool thread's scratch, allocated at its first item and kept for
	 * the rest (one allocation, one set of page faults, per thread) */
	void *slot_scr[FWSIM_PAR_MAX_THREADS];
	fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS];
} conv_job_t;

/* The end of the run of planes (or form D/E blocks) an item starting at p0
 * takes. */
uint64_t fwsim_conv_item_end(const conv_job_t *j, uint64_t p0);
/* The item's scratch (j->scratch floats): this pool slot's, allocated zeroed
 * at its first item (zero padding written once stays zero) and kept; NULL
 * when out of memory. */
void *fwsim_conv_slot_scratch(conv_job_t *j, uint32_t slot);
/* Bits [lo, hi) of a 32-bit mask, 0 <= lo < 32. */
/* a / b rounded toward minus infinity (b != 0) */
static inline int64_t fwsim_floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static inline uint32_t fwsim_conv_bits32(int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return 0;
	return (hi >= 32 ? 0xffffffffu : (1u << hi) - 1) & ~((1u << lo) - 1);
}
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>
/* Forms R and W: 16 floats of a row from p at stride s (1 or 2, a constant
 * after inlining). The lanes of m[0] load (at stride 2, of the 32 loaded,
 * m[0] and m[1] hold the even ones), the others are 0 and touch no memory;
 * stride 2 keeps the even lanes of the 32. */
__attribute__((target("avx512f"), always_inline))
static inline __m512 fwsim_conv_row16(const int s, const __mmask16 *m, const float *p)
{
	if (s == 1)
		return _mm512_maskz_loadu_ps(m[0], p);
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m[0], p), even,
				      _mm512_maskz_loadu_ps(m[1], p + 16));
}
#endif

/* Form D / E for a job planned as form A / B: true (and the job's form,
 * scratch and blocks set) when it applies. */
bool fwsim_conv_plan_dw(conv_job_t *j);
bool fwsim_conv_plan_dwg(conv_job_t *j);
/* Forms R and T: computes one (n, g, o) output plane at dst from its input
 * plane x and kernel wk (geo: the form's geometry, the same for every plane;
 * next: elements from x to the next plane's input in item order, for a
 * prefetch); returns whether an output may be NaN or Inf. */
typedef int (*fwsim_conv_plane_fn)(const conv_job_t *j, void *geo, const float *x, int64_t next,
				   const float *wk, float *dst);
/* Forms R and T: sets the form's geometry geo (the same for every plane) up
 * for the job; zero is a row of X1 zeros for the taps outside the input. */
typedef void (*fwsim_conv_geo_fn)(const conv_job_t *j, void *geo, const float *zero);
/* An item of forms R and T (fwsim_par_fn_t's arguments): the slot's row of
 * zeros, a geometry of geo_size bytes set by init, then the item's (n, g, o)
 * planes through fn, a plane's outputs scanned for the NaN/Inf record only
 * when fn says one may be. */
fwsim_status_t fwsim_conv_run_planes(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w,
				     size_t geo_size, fwsim_conv_geo_fn init, fwsim_conv_plane_fn fn);
/* Form G for a non-empty job, before the others: true (and the job's form,
 * scratch and packed kernel set) when it applies. */
bool fwsim_conv_plan_gemm(conv_job_t *j);
/* Form F for a non-empty job, after the small planes' tiles and before
 * form G: true (and the job's form, scratch and packed kernel set) on CPUs
 * with AVX-512F when it applies (strides 1 or 2, no input dilation, planes
 * of 256 outputs or more, row-major output planes). Its items run bands of output
 * rows through fwsim_conv_run_units. */
bool fwsim_conv_plan_flat(conv_job_t *j);
fwsim_status_t fwsim_conv_item_flat(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
/* Form F's bands run since the process started (tests). */
uint64_t fwsim_conv_flat_units(void);
/* Forms R and T for a job planned as form A, form W for one planned as A or
 * B: true (and the job's form and scratch set) when it applies. */
bool fwsim_conv_plan_rows(conv_job_t *j);
bool fwsim_conv_plan_dgrad(conv_job_t *j);
bool fwsim_conv_plan_wgrad(conv_job_t *j);
/* Their items (fwsim_par_fn_t). */
fwsim_status_t fwsim_conv_item_dw(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
fwsim_status_t fwsim_conv_item_dwg(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
fwsim_status_t fwsim_conv_item_rows(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
fwsim_status_t fwsim_conv_item_wgrad(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
fwsim_status_t fwsim_conv_item_dgrad(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
fwsim_status_t fwsim_conv_item_gemm(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
/* Forms G and P: nr rows of an im2col buffer at d, Y floats each. Row r
 * reads input row i = i0 + r di of the plane at x (rows si3 apart; all zero
 * when i is outside [0, X0)): d[y] = row[(y S + off) sx] for y in [0, Y),
 * zero where that leaves [0, X1). avx512: the CPU has AVX-512F (strides 1
 * and 2 take 16 outputs per masked load, zeros included). */
void fwsim_conv_gemm_rows(float *restrict d, int64_t nr, const float *x, int64_t i0, int64_t di,
			  int64_t X0, int64_t si3, int64_t Y, int64_t S, int64_t off, int64_t X1, int64_t sx,
			  bool avx512);
/* Form P for a non-empty job not taken by form G: true (and the job's form,
 * scratch and partial sums set) when it applies. Its items, one per input
 * channel c (the batch of a weight gradient), each write their own partial
 * sums; fwsim_conv_psum_reduce adds them in c order into the output. */
bool fwsim_conv_plan_psum(conv_job_t *j);
/* Form P's tiles for forward convolutions of small planes (under 256
 * outputs per plane, sums at least 256 deep): true, as
 * fwsim_conv_plan_tiles, on CPUs with AVX2 and FMA; elsewhere form G takes
 * them. Planned before form G. */
bool fwsim_conv_plan_tiles_fwd(conv_job_t *j);
fwsim_status_t fwsim_conv_item_psum(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w);
void fwsim_conv_psum_reduce(conv_job_t *j);
/* Form P's products as register tiles (AVX-512, or AVX2), straight from the input and
 * the kernel transposed by blocks (no im2col, no sgemm): true (and gm.tiles,
 * its blocks and the job's scratch set) on CPUs with AVX2 and FMA. */
bool fwsim_conv_plan_tiles(conv_job_t *j);
/* Forms G and P: one unit of work (a band, an input channel) on kk's thread
 * with its scratch t. */
typedef fwsim_status_t (*fwsim_conv_unit_fn)(const conv_job_t *j, const fwsim_kargs_t *kk, float *t,
					     uint64_t unit);
/* An item of forms G, F and P (fwsim_par_fn_t's arguments): units [item
 * per_item, ...) of the job's gm.units, through fn with the slot's scratch,
 * counted for fwsim_conv_gemm_units or (form F) fwsim_conv_flat_units. */
fwsim_status_t fwsim_conv_run_units(conv_job_t *j, uint64_t item, uint32_t slot, fwsim_watch_t *w,
				    fwsim_conv_unit_fn fn);
/* Form P's unit as register tiles: the outputs of 32 o and a range of n,
 * summed over every c and tap and stored. */
fwsim_status_t fwsim_conv_tiles_unit(const conv_job_t *j, const fwsim_kargs_t *kk, float *t,
				     uint64_t unit);
/* Units of forms G and P (not F) run since the process started: for tests
 * that a dense convolution really takes them. */
uint64_t fwsim_conv_gemm_units(void);

/* Forms G and F: band bi of the job (of all planes' bands, plane-major):
 * its group g, image n, first output row y0 and row count, and the flat
 * row-major index in ap0 of its first output (o = 0). */
typedef struct conv_band {
	int64_t g, n, y0, rows;
	uint64_t flat0;
} conv_band_t;

static inline conv_band_t fwsim_conv_band(const conv_job_t *j, uint64_t bi)
{
	const conv_gemm_t *gm = &j->gm;
	int64_t Y0 = j->d[0].Y, Y1 = j->d[1].Y;
	uint64_t pi = bi / (uint64_t)gm->nbands;
	conv_band_t bd = { .g = (int64_t)(pi / (uint64_t)j->N), .n = (int64_t)(pi % (uint64_t)j->N),
			   .y0 = (int64_t)(bi % (uint64_t)gm->nbands) * gm->band };
	bd.rows = Y0 - bd.y0 < gm->band ? Y0 - bd.y0 : gm->band;
	bd.flat0 = ((uint64_t)bd.n * (uint64_t)j->G + (uint64_t)bd.g) * (uint64_t)j->O *
			   (uint64_t)(Y0 * Y1) + (uint64_t)(bd.y0 * Y1);
	return bd;
}

#endif
