/* CONV form R (docs/isa.md, "CONV"): 3x3 depthwise convolutions straight on their row-major planes, 16 outputs of a row per 512-bit vector. */
#include "conv.h"

/*
 * Form D interleaves 8 groups by lane so that every fma is a full vector
 * whatever the planes' width; the price is two 8x8 transposes per 8 columns
 * of input and of output, a third of MobileNetV2's 14x14 depthwise time
 * (perf). With AVX-512 a row of up to 16 outputs is one vector as it lies:
 * each tap's inputs are one masked load of an input row (lanes off the row,
 * the padding, load 0 without touching memory), so nothing is copied.
 *
 * A block of 8 output rows streams its input rows top to bottom: each row's
 * three column shifts are loaded once and feed every output row whose window
 * holds it (three at stride 1). Loading per (output row, tap) instead ran at
 * half the speed: the loads, not the fmas, bound this loop. Rows above and
 * below the input are a row of zeros, so each output is still forms A and D's
 * one chain of fma in (k0, k1) order from 0, padding taps included: the same
 * bits. A column stride of 2 loads 32 inputs per shift and keeps the even
 * lanes. Only 3x3 windows without dilation take this form (the unrolled
 * block is written for them); others stay with form D.
 */

#define ROWS_BLOCK 8       /* output rows per register block */

bool fwsim_conv_plan_rows(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	if (j->form != 'A' || j->C != 1 || a->L != 1 || b->L != 1 || a->K != 3 || b->K != 3 ||
	    a->D != 1 || b->D != 1 || a->S > 2 || b->S > 2 || b->Y > 16 * CONV_ROWS_MAX_CHUNKS ||
	    j->si[4] != 1 || j->so[4] != 1 ||
	    !fwsim_cpu_avx512())
		return false;
	j->form = 'R';
	j->scratch = b->X > 0 ? b->X : 1; /* a row of zeros */
	return true;
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)

/* One plane's geometry: the input, each column chunk's taps (masks, first
 * columns) and the weights. */
typedef struct rows_plane {
	const float *x, *zero;  /* the input plane; a row of X1 zeros */
	int64_t x0, si3;        /* input rows, their pitch */
	int64_t nch;            /* column chunks */
	int nr;                 /* output rows per block */
	bool pf;                /* a plane past 16 KiB */
	int64_t pfd;            /* elements from a row to the one to prefetch */
	int64_t lo[CONV_ROWS_MAX_CHUNKS][3];       /* tap k1's first input column */
	__mmask16 km[CONV_ROWS_MAX_CHUNKS][3][2];  /* its lanes inside the row (two
					       * halves of 32 at stride 2) */
	__mmask16 om[CONV_ROWS_MAX_CHUNKS];        /* the chunk's output lanes */
} rows_plane_t;

/* nr output rows (a constant after inlining) of column chunk ch from input
 * row r0 (the first row of the first output's window) at stride s0: out rows
 * at o (pitch so3); a stored lane that is NaN or Inf leaves a 0 in *fin. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline void rows_block(const int nr, const int s0, const int s1, const rows_plane_t *c,
			      const __m512 *w, int64_t ch, int64_t r0, float *o, int64_t so3,
			      __m512i *fin)
{
	__mmask16 om = c->om[ch];
	/* the chunk's masks and columns, the rows' pointers and the prefetch
	 * offset in locals, set before the loop: read through c inside it they
	 * were reloaded per row, and the row tests were branches there (with
	 * them the 14x14 forward spent as many instructions on bookkeeping as
	 * on fmas) */
	__mmask16 km[3][2];
	int64_t lo[3];
	for (int k1 = 0; k1 < 3; k1++) {
		km[k1][0] = c->km[ch][k1][0];
		km[k1][1] = c->km[ch][k1][1];
		lo[k1] = c->lo[ch][k1];
	}
	int64_t pfd = c->pf ? nr * s0 * c->si3 : c->pfd;
	const float *rows[2 * ROWS_BLOCK + 1];
	for (int t = 0; t < (nr - 1) * s0 + 3; t++) {
		int64_t r = r0 + t;
		rows[t] = r >= 0 && r < c->x0 ? c->x + r * c->si3 : c->zero;
	}
	__m512 acc[ROWS_BLOCK];
	for (int i = 0; i < nr; i++)
		acc[i] = _mm512_setzero_ps();
	/* input row r0 + t feeds output i at k0 = t - s0 i, in t order;
	 * unrolled whole, so that which (i, k0) pairs exist is known at
	 * compile time (a loop tested them per row: 20% slower than form D) */
#pragma GCC unroll 32
	for (int t = 0; t < (nr - 1) * s0 + 3; t++) {
		const float *row = rows[t];
		/* planes past 16 KiB: the next block's rows under these columns
		 * (past the plane: the next plane's, or nothing; a prefetch
		 * never faults, and a row of the padding prefetches an
		 * address never loaded); without it a plane out of cache ran
		 * at a third of the speed: each block touches 2 lines of 17
		 * rows per chunk, which the hardware's stream prefetchers do
		 * not follow. Smaller planes: the same rows of the next plane;
		 * MobileNetV2 b96's [96, 144, 56, 56] (173 MB, from DRAM)
		 * 48 -> 20 ms, where planes in L3 lose 4%. */
		const char *pf = (const char *)(row + lo[0] + pfd);
		_mm_prefetch(pf, _MM_HINT_T0);
		_mm_prefetch(pf + 64, _MM_HINT_T0);
		if (s1 == 2)
			_mm_prefetch(pf + 128, _MM_HINT_T0);
		__m512 v[3];
		for (int k1 = 0; k1 < 3; k1++)
			v[k1] = fwsim_conv_row16(s1, km[k1], row + lo[k1]);
#pragma GCC unroll 8
		for (int i = 0; i < nr; i++) {
			int k0 = t - s0 * i;
			if (k0 < 0 || k0 > 2)
				continue;
			for (int k1 = 0; k1 < 3; k1++)
				acc[i] = _mm512_fmadd_ps(w[k0 * 3 + k1], v[k1], acc[i]);
		}
	}
	/* ~out & exponent bits is 0 exactly for NaN and Inf: the lanes' least
	 * of it over the plane, tested once at its end (a compare to a mask
	 * per row cost 7% of a 14x14 plane) */
	const __m512i ex = _mm512_set1_epi32(0x7f800000);
	for (int i = 0; i < nr; i++) {
		_mm512_mask_storeu_ps(o + i * so3, om, acc[i]);
		*fin = _mm512_mask_min_epu32(*fin, om, *fin,
					     _mm512_andnot_si512(_mm512_castps_si512(acc[i]), ex));
	}
}

/* The plane's outputs at strides (s0, s1), in blocks of nr output rows (row
 * blocks outside, so each block reads its input rows whole and in order),
 * each block across the column chunks. */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline __mmask16 rows_blocks(const int nr, const int s0, const int s1, const conv_job_t *j,
				    const rows_plane_t *c, const __m512 *w, float *dst)
{
	const conv_dim_t *a = &j->d[0];
	__m512i fin = _mm512_set1_epi32(-1);
	for (int64_t y = 0, next = 0; next < a->Y; next = y + nr) {
		/* a last block moved back to end at Y0 recomputes a few rows
		 * (the same bits) */
		y = next + nr <= a->Y ? next : a->Y - nr;
		for (int64_t ch = 0; ch < c->nch; ch++)
			rows_block(nr, s0, s1, c, w, ch, y * s0 - a->P, dst + y * j->so[3] + ch * 16,
				   j->so[3], &fin);
	}
	return _mm512_cmpeq_epi32_mask(fin, _mm512_setzero_si512());
}

/* Rows per block, c->nr: the fewest blocks of at most 8, as even as they go
 * (14 rows: two of 7, where 8 + 8 with the last moved back did 16; 9 rows:
 * 5 and 5, one of them twice). */
__attribute__((target("avx512f,avx2,fma"), always_inline))
static inline __mmask16 rows_strides(const int s0, const int s1, const conv_job_t *j,
				     const rows_plane_t *c, const __m512 *w, float *dst)
{
	switch (c->nr) {
	case 8: return rows_blocks(8, s0, s1, j, c, w, dst);
	case 7: return rows_blocks(7, s0, s1, j, c, w, dst);
	case 6: return rows_blocks(6, s0, s1, j, c, w, dst);
	case 5: return rows_blocks(5, s0, s1, j, c, w, dst);
	case 4: return rows_blocks(4, s0, s1, j, c, w, dst);
	case 3: return rows_blocks(3, s0, s1, j, c, w, dst);
	case 2: return rows_blocks(2, s0, s1, j, c, w, dst);
	default: return rows_blocks(1, s0, s1, j, c, w, dst);
	}
}

/* One (n, g, o) plane, its weights at wk; returns whether an output may be
 * NaN or Inf. */
__attribute__((target("avx512f,avx2,fma")))
static int rows_plane(const conv_job_t *j, void *geo, const float *x, int64_t next, const float *wk,
		      float *dst)
{
	rows_plane_t *c = geo;
	c->x = x;
	c->pfd = next;
	/* broadcast once per plane: 9 of the 32 vector registers */
	__m512 w[9];
	for (int k0 = 0; k0 < 3; k0++)
		for (int k1 = 0; k1 < 3; k1++)
			w[k0 * 3 + k1] = _mm512_set1_ps(wk[k0 * j->sw[3] + k1 * j->sw[4]]);
	__mmask16 bad;
	if (j->d[0].S == 1)
		bad = j->d[1].S == 1 ? rows_strides(1, 1, j, c, w, dst) : rows_strides(1, 2, j, c, w, dst);
	else
		bad = j->d[1].S == 1 ? rows_strides(2, 1, j, c, w, dst) : rows_strides(2, 2, j, c, w, dst);
	return bad != 0;
}

/* The chunks' masks and first columns, the same for every plane. */
static void rows_geometry(const conv_job_t *j, void *geo, const float *zero)
{
	rows_plane_t *c = geo;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	c->zero = zero;
	c->x0 = a->X;
	c->si3 = j->si[3];
	c->nch = (b->Y + 15) / 16;
	int64_t nb = (a->Y + 7) / 8;
	c->nr = (int)((a->Y + nb - 1) / nb);
	c->pf = a->X * j->si[3] >= 4096;
	for (int64_t ch = 0; ch < c->nch; ch++) {
		int64_t c0 = ch * 16, nv = b->Y - c0 < 16 ? b->Y - c0 : 16;
		c->om[ch] = (__mmask16)((1u << nv) - 1);
		/* tap k1's inputs lo + S1 l (l < nv) inside [0, X1) */
		for (int k1 = 0; k1 < 3; k1++) {
			int64_t lo = c0 * b->S + k1 - b->P;
			int64_t first = lo < 0 ? -lo : 0, end = b->X - lo;
			if (end > b->S * (nv - 1) + 1)
				end = b->S * (nv - 1) + 1;
			uint32_t m = first < 32 ? fwsim_conv_bits32(first, end) : 0;
			if (b->S == 2)
				m &= 0x55555555u;
			c->lo[ch][k1] = lo;
			c->km[ch][k1][0] = (__mmask16)m;
			c->km[ch][k1][1] = (__mmask16)(m >> 16);
		}
	}
}

#else
typedef int rows_plane_t;
/* never planned: fwsim_cpu_avx512() is 0 in this build */
#define rows_geometry NULL
#define rows_plane NULL
#endif

fwsim_status_t fwsim_conv_item_rows(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	return fwsim_conv_run_planes(ctx, item, slot, w, sizeof(rows_plane_t), rows_geometry, rows_plane);
}
