/* MATMUL's thin f32 products on AVX-512F (at most 32 columns, or at most 32 rows against a wide operand beyond L2): the wide operand streamed once past register tiles, instead of sgemm's packing. */
#include <stdatomic.h>

#include "internal.h"

/*
 * A convolution over planes smaller than its kernel (ResNet-18's layer 4 on
 * 64x64 images: 8 images of 2x2 under a 3x3 of 512 channels) is lowered to
 * products with few outputs per kernel weight, whose wide operand is the
 * kernel itself:
 *
 *   forward         acc [512, 32] = W [512, 4608] x T [4608, 32]    (narrow)
 *   input gradient  G [32, 4608]  = dY' [32, 512] x W' [512, 4608]  (short)
 *
 * The kernel (9.4 MB) is read once a step, so it comes from memory. sgemm
 * packs it in blocks, reading a few hundred floats from each of many rows at
 * a time, which the hardware prefetchers follow poorly: cold, the forward
 * took 1.35-1.5 ms at best and 2.3-2.6 ms on average here, the input
 * gradient 1.3-2.1 and 2.3-2.9, against 1.0-1.15 for either with the
 * kernel in the cache.
 *
 * Narrow (n <= 32): a tile is 8 rows of A by all of B's columns, 16 zmm of
 * sums; each step of the sum broadcasts one float of each of the 8 rows and
 * loads one row of B (2 vectors; B is small and stays in L1 or L2). A is read
 * once, 8 sequential streams at a time: the forward took 1.0-1.1 ms at best
 * and 1.25-1.4 on average cold (0.96 in the cache, as sgemm). Rows of at
 * most NARROW_PREFETCH_MAX_K floats are too short for the prefetchers to
 * ramp up on, so the next tile's rows are prefetched into L2 while this one
 * runs (2 KB rows: 2.1 -> 1.65 ms on average; longer rows lost 10% to it).
 *
 * Short (m <= 32, B of at least SHORT_MIN_B_BYTES): B is read in blocks of
 * SHORT_KB rows, each block once, left to right in chunks of 48 columns; a
 * chunk (6 KiB) stays in L1 while every 8 rows of A take their sums over it
 * (24 zmm), and the first 8 rows prefetch the next chunk's lines. C (at most
 * 32 rows) stays in L2 between blocks. The input gradient took 1.2-1.25 ms
 * at best and 1.4 on average cold; in the cache it runs 10-20% slower than
 * sgemm (1.1-1.2 ms), hence the size floor.
 *
 * Every sum is one chain of fma over k ascending, from zero or, when
 * accumulating, from C's value (partial sums go through C exactly): its
 * bits depend on the shape only, not on the thread that runs it.
 * Subnormals are flushed as around sgemm.
 */
#define THIN_MAX 32
#define THIN_ROWS 8 /* rows of A per tile, both forms */
#define THIN_VECS 3 /* vectors of B per step at most (the short form's 48 columns) */
#define NARROW_PREFETCH_MAX_K 1024
#define SHORT_KB 32
#define SHORT_MIN_B_BYTES (4u << 20)

static atomic_uint_fast64_t g_thin_outputs;

uint64_t fwsim_matmul_thin_outputs(void)
{
	return atomic_load(&g_thin_outputs);
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>

bool fwsim_gemm_thin_fits(uint64_t m, uint64_t n, uint64_t k)
{
	if (k < 16 || !fwsim_cpu_avx512())
		return false;
	return n <= THIN_MAX ||
	       (m <= THIN_MAX && (double)k * (double)n * 4 >= (double)SHORT_MIN_B_BYTES);
}

/* R rows of C (ldc apart; nv vectors of lanes m) = R rows of A at a (lda
 * apart) x B (rows ldb apart) over K, from C's values when acc, else zero;
 * with next, prefetches the next R rows of A into L2, a line every other
 * step. */
__attribute__((target("avx512f"), always_inline))
static inline void thin_tile(const int R, const int nv, int64_t K, const float *a, int64_t lda,
			     const float *b, int64_t ldb, bool acc, float *c, int64_t ldc,
			     const __mmask16 *m, const float *next_a, const float *next_b)
{
	__m512 s[THIN_ROWS][THIN_VECS];
#pragma GCC unroll 8
	for (int i = 0; i < R; i++)
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			s[i][v] = acc ? _mm512_maskz_loadu_ps(m[v], c + i * ldc + 16 * v) : _mm512_setzero_ps();
	for (int64_t k = 0; k < K; k++) {
		if (next_a && !(k & 1))
			_mm_prefetch((const char *)(next_a + ((k >> 1) % R) * lda + (k & ~(int64_t)15)),
				     _MM_HINT_T1);
		if (next_b)
#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				_mm_prefetch((const char *)(next_b + k * ldb + 16 * v), _MM_HINT_T0);
		__m512 bv[THIN_VECS];
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			bv[v] = _mm512_maskz_loadu_ps(m[v], b + k * ldb + 16 * v);
#pragma GCC unroll 8
		for (int i = 0; i < R; i++) {
			__m512 av = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				s[i][v] = _mm512_fmadd_ps(av, bv[v], s[i][v]);
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < R; i++)
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			_mm512_mask_storeu_ps(c + i * ldc + 16 * v, m[v], s[i][v]);
}

#define THIN_CASE(r)                                                                           \
	case r:                                                                                \
		if (nv == 3)                                                                   \
			thin_tile(r, 3, K, a, lda, b, ldb, acc, c, ldc, m, next_a, next_b);    \
		else if (nv == 2)                                                              \
			thin_tile(r, 2, K, a, lda, b, ldb, acc, c, ldc, m, next_a, next_b);    \
		else                                                                           \
			thin_tile(r, 1, K, a, lda, b, ldb, acc, c, ldc, m, next_a, next_b);    \
		break

/* thin_tile for rows <= THIN_ROWS and nv <= THIN_VECS known at run time. */
__attribute__((target("avx512f")))
static void thin_rows(int rows, int nv, int64_t K, const float *a, int64_t lda, const float *b,
		      int64_t ldb, bool acc, float *c, int64_t ldc, const __mmask16 *m,
		      const float *next_a, const float *next_b)
{
	switch (rows) {
	THIN_CASE(1); THIN_CASE(2); THIN_CASE(3); THIN_CASE(4);
	THIN_CASE(5); THIN_CASE(6); THIN_CASE(7); THIN_CASE(8);
	default: break;
	}
}

/* The lanes of the THIN_VECS vectors over the first n columns; returns how
 * many of them hold any (the nv of thin_tile). */
static int thin_lanes(uint64_t n, __mmask16 *m)
{
	int nv = 0;
	for (int v = 0; v < THIN_VECS; v++) {
		uint64_t left = n > 16u * (uint64_t)v ? n - 16u * (uint64_t)v : 0;
		m[v] = (__mmask16)(left >= 16 ? 0xffffu : (1u << left) - 1);
		nv += left > 0;
	}
	return nv;
}

static void gemm_narrow(uint64_t m, uint64_t n, uint64_t k, const float *a, int64_t lda,
			const float *b, int64_t ldb, bool acc, float *c, int64_t ldc)
{
	__mmask16 lanes[THIN_VECS];
	int nv = thin_lanes(n, lanes);
	bool pf = k <= NARROW_PREFETCH_MAX_K;
	for (uint64_t r = 0; r < m; r += THIN_ROWS) {
		int rows = m - r < THIN_ROWS ? (int)(m - r) : THIN_ROWS;
		const float *next = pf && r + 2 * THIN_ROWS <= m ? a + (int64_t)(r + THIN_ROWS) * lda : NULL;
		thin_rows(rows, nv, (int64_t)k, a + (int64_t)r * lda, lda, b, ldb, acc,
			  c + (int64_t)r * ldc, ldc, lanes, next, NULL);
	}
}

static void gemm_short(uint64_t m, uint64_t n, uint64_t k, const float *a, int64_t lda,
		       const float *b, int64_t ldb, bool acc, float *c, int64_t ldc)
{
	const uint64_t w = 16 * THIN_VECS;
	for (uint64_t k0 = 0; k0 < k; k0 += SHORT_KB) {
		int64_t kb = (int64_t)(k - k0 < SHORT_KB ? k - k0 : SHORT_KB);
		for (uint64_t n0 = 0; n0 < n; n0 += w) {
			__mmask16 lanes[THIN_VECS];
			int nv = thin_lanes(n - n0, lanes);
			const float *bb = b + (int64_t)k0 * ldb + (int64_t)n0;
			for (uint64_t r = 0; r < m; r += THIN_ROWS) {
				int rows = m - r < THIN_ROWS ? (int)(m - r) : THIN_ROWS;
				thin_rows(rows, nv, kb, a + (int64_t)r * lda + (int64_t)k0, lda, bb, ldb,
					  acc || k0 > 0, c + (int64_t)r * ldc + (int64_t)n0, ldc, lanes, NULL,
					  r == 0 && n0 + w < n ? bb + w : NULL);
			}
		}
	}
}

void fwsim_gemm_thin_f32(uint64_t m, uint64_t n, uint64_t k, const float *a, int64_t lda,
			 const float *b, int64_t ldb, bool acc, float *c, int64_t ldc)
{
	unsigned csr = fwsim_flush_begin();
	if (n <= THIN_MAX)
		gemm_narrow(m, n, k, a, lda, b, ldb, acc, c, ldc);
	else
		gemm_short(m, n, k, a, lda, b, ldb, acc, c, ldc);
	fwsim_flush_end(csr);
	atomic_fetch_add_explicit(&g_thin_outputs, m * n, memory_order_relaxed);
}
#else
bool fwsim_gemm_thin_fits(uint64_t m, uint64_t n, uint64_t k)
{
	(void)m, (void)n, (void)k;
	return false;
}

void fwsim_gemm_thin_f32(uint64_t m, uint64_t n, uint64_t k, const float *a, int64_t lda,
			 const float *b, int64_t ldb, bool acc, float *c, int64_t ldc)
{
	(void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)acc, (void)c, (void)ldc;
}
#endif
