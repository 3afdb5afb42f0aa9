/* CONV form F (docs/isa.md, "CONV"): dense convolutions of stride 1 or 2 over large planes as AVX-512 register tiles over a zero-padded copy of a band of input rows (split into its stride phases), the output positions flattened along that copy's row pitch: no im2col, no sgemm. */
#include <string.h>

#include "conv.h"

/*
 * Why not form G: its products are sgemm calls (oneDNN) over an im2col band
 * that holds the input K1 times, which sgemm then reads and packs again;
 * ResNet's 3x3 64 -> 64 forward over 8 56x56 images ran 13.1 ms on one
 * thread against PyTorch's (oneDNN's direct convolution) 10.1.
 *
 * Here an item copies its band of input rows once, each row padded with
 * zeros to the pitch Wp = Y1 + (K1 - 1) D1 (the padding's columns written,
 * rows outside the input all zero). Output position (r, y1) of the band is
 * flat position q = r Wp + y1, and its tap (k0, k1) of channel c reads the
 * copy at c cs + q + k0 D0 Wp + k1 D1: for every tap a run of consecutive
 * floats, whatever the row. So 16 consecutive positions are one vector, one
 * unaligned load per tap, across row ends; the Wp - Y1 positions per row
 * past the output's end are computed and never stored (3.4% of the work at
 * 56 wide).
 *
 * With stride 2 the copy is split into phases: phase (p0, p1) holds input
 * rows i = 2 r' + p0 and columns 2 u + p1 (shifted by the padding), so tap
 * k with k D = 2 m + p reads phase p at m past the output's position, and
 * the pitch is Y1 + (K1 - 1) D1 / S1: each tap is again one run per vector
 * (its offset in a table), and the input is still copied once. The 7x7
 * stride-2 stem over 8 224x224 images ran 0.90x form G's time on one
 * thread (its im2col rows from staged phases, then sgemm).
 *
 * A tile is 8 output channels o by 48 positions (24 zmm of sums): per term
 * (c, k0, k1), three loads of the copy and 8 broadcasts of the kernel,
 * packed once per instruction so that a tile's weights are consecutive
 * ([g][8 o][c][k0][k1][8]), 18 KiB for 64 channels x 3x3, kept in L1 while
 * the copy (about 256 KiB, L2) streams past. 8 x 3 measured 176 GFLOP/s on
 * the tiles alone here, 12 x 2 within 5% of it; 6 x 4 was slower. The
 * stores put each vector's lanes into at most two output rows (Wp >= 16)
 * with masks.
 *
 * The order, which docs/isa.md states: each output is one chain of fma from
 * 0 over (c, k0, k1) in row-major order, padding terms included (their 0 x
 * w: NaN where w is NaN or Inf), subnormals read and written as zero as
 * with sgemm. The tiles' (form P's) chain with its padding terms, so the
 * same bits as theirs.
 */

#define FLAT_MR 8    /* output channels per tile */
#define FLAT_NV 3    /* vectors of 16 positions per tile */
#define FLAT_NP (16 * FLAT_NV)
/* Floats of an item's copy of its input rows: 256 KiB, an eighth of this
 * machine's L2. On the 3x3 64 -> 64 forward over 56x56 (one thread), bands
 * of 8 rows ran 5-8% slower than 16. */
#define FLAT_X_FLOATS (1 << 16)
/* The smallest planes it takes: below, the tiles of form P (small planes)
 * or form G. */
#define FLAT_MIN_PLANE 256

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)

bool fwsim_conv_plan_flat(conv_job_t *j)
{
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_gemm_t *gm = &j->gm;
	int64_t taps = a->K * b->K, ny = a->Y * b->Y;
	if (!fwsim_cpu_avx512() || a->L != 1 || b->L != 1 || a->S > 2 || b->S > 2 || taps < 2 ||
	    j->C * taps < 64 || j->O < 16 || ny < FLAT_MIN_PLANE || a->Y > INT32_MAX)
		return false;
	/* the output planes row-major (the stores' two rows per vector); none
	 * repeating (two items would write the same elements at once) */
	if ((b->Y > 1 && j->so[4] != 1) || (a->Y > 1 && j->so[3] != b->Y) ||
	    (j->O > 1 && j->so[2] < ny) || (j->N > 1 && j->so[0] == 0) || (j->G > 1 && j->so[1] == 0))
		return false;
	/* the kernel's spans (K <= 2^31 and D <= 2^32: no overflow), in rows
	 * and columns of a phase */
	if (a->K > INT32_MAX || b->K > INT32_MAX || (a->K - 1) * a->D > INT32_MAX ||
	    (b->K - 1) * b->D > INT32_MAX)
		return false;
	int64_t below = (a->K - 1) * a->D / a->S, right = (b->K - 1) * b->D / b->S;
	/* the pitch: at least a vector (a vector's lanes span two rows at most),
	 * at most 8/7 of the row (the positions computed and never stored) */
	int64_t wp = b->Y + right;
	if (wp < 16 || wp * 7 > b->Y * 8 || wp > INT32_MAX / 64)
		return false;
	/* a phase of a channel's copy: the band's input rows, then room for
	 * the last tile's loads past them (its positions past the band, never
	 * stored) */
	int64_t nph = a->S * b->S, slack = (FLAT_NP + right + 15) / 16 * 16;
	int64_t band = (FLAT_X_FLOATS / j->C / nph - slack) / wp - below;
	band = band < 1 ? 1 : band > a->Y ? a->Y : band;
	gm->nbands = (a->Y + band - 1) / band;
	gm->band = (a->Y + gm->nbands - 1) / gm->nbands; /* even bands */
	gm->rows = gm->band + below;
	if (gm->rows > ISA_CONV_SCRATCH_FLOATS / wp)
		return false;
	gm->flat_pf = (gm->rows * wp + slack + 15) / 16 * 16;
	gm->flat_cs = nph * gm->flat_pf;
	gm->flat_wp = wp;
	/* the copy, the packed kernel and the taps' offsets within the scratch
	 * bound (docs/isa.md, "Host memory"); else form G */
	int64_t nob = (j->O + FLAT_MR - 1) / FLAT_MR, nk = j->C * taps;
	if (j->C > (ISA_CONV_SCRATCH_FLOATS - 16) / gm->flat_cs ||
	    nk > ISA_CONV_SCRATCH_FLOATS / FLAT_MR / nob / j->G)
		return false;
	gm->wp = malloc((size_t)(j->G * nob * nk * FLAT_MR) * sizeof(float));
	gm->flat_off = malloc((size_t)taps * sizeof(int64_t));
	if (!gm->wp || !gm->flat_off) {
		free(gm->wp);
		free(gm->flat_off);
		gm->wp = NULL;
		gm->flat_off = NULL;
		return false;
	}
	/* tap (k0, k1): k D = m S + p reads phase (p0, p1) at m0 rows and m1
	 * columns past the output's position */
	for (int64_t k0 = 0; k0 < a->K; k0++)
		for (int64_t k1 = 0; k1 < b->K; k1++) {
			int64_t e0 = k0 * a->D, e1 = k1 * b->D;
			gm->flat_off[k0 * b->K + k1] = (e0 % a->S * b->S + e1 % b->S) * gm->flat_pf +
						       e0 / a->S * wp + e1 / b->S;
		}
	/* [g][o block][(c, k0, k1)][8 o], zero past O */
	float *d = gm->wp;
	for (int64_t g = 0; g < j->G; g++)
		for (int64_t ob = 0; ob < nob; ob++)
			for (int64_t c = 0; c < j->C; c++)
				for (int64_t k0 = 0; k0 < a->K; k0++)
					for (int64_t k1 = 0; k1 < b->K; k1++, d += FLAT_MR)
						for (int64_t i = 0; i < FLAT_MR; i++) {
							int64_t o = ob * FLAT_MR + i;
							d[i] = o < j->O ? j->w[g * j->sw[0] + o * j->sw[1] +
									       c * j->sw[2] + k0 * j->sw[3] +
									       k1 * j->sw[4]]
									: 0.0f;
						}
	gm->units = j->n_planes * (uint64_t)gm->nbands;
	j->scratch = j->C * gm->flat_cs + 16; /* 16: room to align the copy */
	j->form = 'F';
	return true;
}

/* One tile's terms: nc channels cs floats apart in the copy, nt taps at
 * offsets off from a channel's. */
typedef struct flat_walk {
	int64_t nc, cs, nt;
	const int64_t *off;
} flat_walk_t;

/* Where a tile's vectors go: vector v's lanes m0[v] at out + o0[v], lanes
 * m1[v] (the next output row's) at out + o1[v], for each o plane (ldc
 * apart). */
typedef struct flat_store {
	int64_t o0[FLAT_NV], o1[FLAT_NV];
	__mmask16 m0[FLAT_NV], m1[FLAT_NV];
} flat_store_t;

/* nb (<= 8) o by nv (<= 3) vectors of 16 positions (both constants after
 * inlining) from x (the copy at the tile's first position), weights from
 * w, stored as st says. Returns whether a stored sum is NaN or Inf (a
 * subtraction and a compare per vector: scanning the stored band again
 * took 5.6% of the 7x7 stem's time, its 1 MiB bands past L2). */
__attribute__((target("avx512f"), always_inline))
static inline bool flat_tile_nb(const int nb, const int nv, const flat_walk_t *p, const float *x,
				const float *w, float *out, int64_t ldc, const flat_store_t *st)
{
	const int64_t nc = p->nc, cs = p->cs, nt = p->nt, *off = p->off;
	__m512 s[FLAT_MR][FLAT_NV];
#pragma GCC unroll 8
	for (int i = 0; i < nb; i++)
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			s[i][v] = _mm512_setzero_ps();
	for (int64_t c = 0; c < nc; c++, x += cs)
		for (int64_t t = 0; t < nt; t++, w += FLAT_MR) {
			const float *xk = x + off[t];
			__m512 xv[FLAT_NV];
#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				xv[v] = _mm512_loadu_ps(xk + 16 * v);
#pragma GCC unroll 8
			for (int i = 0; i < nb; i++) {
				__m512 wv = _mm512_set1_ps(w[i]);
#pragma GCC unroll 3
				for (int v = 0; v < nv; v++)
					s[i][v] = _mm512_fmadd_ps(wv, xv[v], s[i][v]);
			}
		}
	__mmask16 bad = 0;
#pragma GCC unroll 3
	for (int v = 0; v < nv; v++)
#pragma GCC unroll 8
		for (int i = 0; i < nb; i++) {
			_mm512_mask_storeu_ps(out + i * ldc + st->o0[v], st->m0[v], s[i][v]);
			_mm512_mask_storeu_ps(out + i * ldc + st->o1[v], st->m1[v], s[i][v]);
			/* s - s: 0 where finite, NaN where not */
			bad |= _mm512_mask_cmp_ps_mask(st->m0[v] | st->m1[v],
						       _mm512_sub_ps(s[i][v], s[i][v]),
						       _mm512_setzero_ps(), _CMP_NEQ_UQ);
		}
	return bad != 0;
}

#define FLAT_CASE(n)                                                   \
	case n:                                                        \
		return nv == 3   ? flat_tile_nb(n, 3, p, x, w, out, ldc, st) \
		       : nv == 2 ? flat_tile_nb(n, 2, p, x, w, out, ldc, st) \
				 : flat_tile_nb(n, 1, p, x, w, out, ldc, st)

/* A tile of nb o by nv vectors (a band's last tile may need fewer than 3);
 * whether a stored sum is NaN or Inf. */
__attribute__((target("avx512f")))
static bool flat_tile(int nb, int nv, const flat_walk_t *p, const float *x, const float *w,
		      float *out, int64_t ldc, const flat_store_t *st)
{
	switch (nb) {
	FLAT_CASE(1); FLAT_CASE(2); FLAT_CASE(3); FLAT_CASE(4);
	FLAT_CASE(5); FLAT_CASE(6); FLAT_CASE(7); FLAT_CASE(8);
	default: return false;
	}
}

/* The stores of the tile at flat position q0 of a band of rows output rows
 * Y1 long, pitch wp: a vector's lanes before the row's end go to row r,
 * those past the next pitch to row r + 1 (the lanes between, and rows past
 * the band, nowhere). */
static void flat_store_plan(int64_t q0, int64_t rows, int64_t Y1, int64_t wp, flat_store_t *st)
{
	for (int v = 0; v < FLAT_NV; v++) {
		int64_t q = q0 + 16 * v, r = q / wp, col = q - r * wp, next = wp - col;
		bool in = r < rows, in1 = r + 1 < rows && next < 16;
		st->o0[v] = r * Y1 + col;
		st->o1[v] = st->o0[v] + Y1 - wp; /* lane l >= next: row r + 1, column l - next */
		st->m0[v] = (__mmask16)(in ? fwsim_conv_bits32(0, Y1 - col < 16 ? Y1 - col : 16) : 0);
		st->m1[v] = (__mmask16)(in1 ? fwsim_conv_bits32(next, next + Y1 < 16 ? next + Y1 : 16)
					    : 0);
	}
}

/* Band bi (of all planes' bands, plane-major) on kk's thread with scratch t. */
static fwsim_status_t flat_band(const conv_job_t *j, const fwsim_kargs_t *kk, float *t, uint64_t bi)
{
	const conv_gemm_t *gm = &j->gm;
	const conv_dim_t *a = &j->d[0], *b = &j->d[1];
	conv_band_t bd = fwsim_conv_band(j, bi);
	int64_t g = bd.g, n = bd.n, y0 = bd.y0, rows = bd.rows;
	int64_t wp = gm->flat_wp, cs = gm->flat_cs, nin = rows + gm->rows - gm->band;
	float *xc = (float *)(((uintptr_t)t + 63) & ~(uintptr_t)63);
	const float *x = j->in + n * j->si[0] + g * j->si[1];
	bool avx512 = fwsim_cpu_avx512();
	/* phase (p0, p1): input rows (y0 + r) S0 + p0 - P0, columns u S1 + p1 - P1 */
	for (int64_t c = 0; c < j->C; c++)
		for (int64_t p0 = 0; p0 < a->S; p0++)
			for (int64_t p1 = 0; p1 < b->S; p1++)
				fwsim_conv_gemm_rows(xc + c * cs + (p0 * b->S + p1) * gm->flat_pf, nin,
						     x + c * j->si[2], y0 * a->S + p0 - a->P, a->S, a->X,
						     j->si[3], wp, b->S, p1 - b->P, b->X, j->si[4], avx512);
	int64_t nob = (j->O + FLAT_MR - 1) / FLAT_MR, nk = j->C * a->K * b->K, npos = rows * wp;
	float *out = j->out + n * j->so[0] + g * j->so[1] + y0 * b->Y;
	int64_t ldc = j->O > 1 ? j->so[2] : 0;
	unsigned csr = fwsim_flush_begin();
	fwsim_status_t st = FWSIM_OK;
	bool bad = false;
	flat_walk_t p = { j->C, cs, a->K * b->K, gm->flat_off };
	for (int64_t ob = 0; ob < nob; ob++) {
		int nb = (int)(j->O - ob * FLAT_MR < FLAT_MR ? j->O - ob * FLAT_MR : FLAT_MR);
		if (fwsim_tick(kk, (uint64_t)(nb * npos * nk))) {
			st = FWSIM_TIMEOUT;
			break;
		}
		const float *w = gm->wp + (g * nob + ob) * nk * FLAT_MR;
		for (int64_t q = 0; q < npos; q += FLAT_NP) {
			flat_store_t sp;
			flat_store_plan(q, rows, b->Y, wp, &sp);
			int nv = (int)(npos - q >= FLAT_NP ? FLAT_NV : (npos - q + 15) / 16);
			bad |= flat_tile(nb, nv, &p, xc + q, w, out + ob * FLAT_MR * ldc, ldc, &sp);
		}
	}
	fwsim_flush_end(csr);
	if (st != FWSIM_OK || !kk->chk || !bad)
		return st;
	/* the band's outputs scanned for the record's count and first index */
	for (int64_t o = 0; o < j->O; o++)
		fwsim_numchk_block(kk->chk, out + o * ldc, (size_t)(rows * b->Y),
				   bd.flat0 + (uint64_t)(o * a->Y * b->Y));
	return FWSIM_OK;
}

fwsim_status_t fwsim_conv_item_flat(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	return fwsim_conv_run_units(ctx, item, slot, w, flat_band);
}

#else
bool fwsim_conv_plan_flat(conv_job_t *j)
{
	(void)j;
	return false;
}

fwsim_status_t fwsim_conv_item_flat(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	(void)ctx, (void)item, (void)slot, (void)w;
	return FWSIM_OK; /* never planned */
}
#endif
