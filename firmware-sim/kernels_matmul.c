/* MATMUL: f32 (and bf16/f16 converted blockwise to f32) through oneDNN's sgemm, thin products on AVX-512 through kernels_matmul_thin.c; integers by loop. */
#include <limits.h>
#include <stdatomic.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "internal.h"
#include "pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct mat {
	uint32_t dt;
	uint64_t rows, cols;
	int64_t sr, sc; /* element strides */
} mat_t;

/* sgemm's operand layouts: 'N' row-major, 'T' transposed (column-major). */
#define GEMM_N 'N'
#define GEMM_T 'T'

/*
 * One f32 GEMM, row-major, on the calling thread: oneDNN's sgemm, whose JIT
 * kernels use the CPU's widest vectors (AVX-512 where there is one: 240-260
 * GFLOP/s per core here on the convolutions' and transformers' shapes, 2x
 * OpenBLAS's AVX2 kernels that OPENBLAS_CORETYPE=Haswell holds this machine
 * to). Parallelism is the pool's (items of one product), so oneDNN's OpenMP
 * regions run on one thread. The thread count is an OpenMP setting of the
 * calling thread, which in inline mode is the application's: it is set to 1
 * around the call and restored, so neither side's setting leaks into the
 * other. (Set once per thread, an application's later setting of 2 made
 * neuronsim-bench's 1024^3 product run 2 OpenMP threads inside each of the
 * pool's 2 items: 9.9 ms against 6.6 on 2 CPUs.) oneDNN fails only on
 * allocation for the arguments blas_layout and pack produce: FWSIM_NOMEM.
 *
 * Subnormal inputs read as zero and subnormal results are flushed to zero
 * (MXCSR's DAZ and FTZ, set around the call and restored), as XLA:CPU runs
 * its kernels: x86 handles each subnormal operand or result in microcode, so
 * a transformer's attention products over softmax probabilities of 1e-40
 * ran at 7 GFLOP/s (a [32, 64, 128] x [32, 128, 128] product with half its
 * operand subnormal: 0.5 -> 90 ms). Only values under 2^-126 change.
 */
fwsim_status_t fwsim_gemm_f32(char ta, char tb, uint64_t m, uint64_t n, uint64_t k,
			       const float *a, int lda, const float *b, int ldb, float beta,
			       float *c, int ldc)
{
	int omp_threads = omp_get_max_threads();
	if (omp_threads != 1)
		omp_set_num_threads(1);
	unsigned csr = fwsim_flush_begin();
	dnnl_status_t st = dnnl_sgemm(ta, tb, (dnnl_dim_t)m, (dnnl_dim_t)n, (dnnl_dim_t)k, 1.0f, a,
				      lda, b, ldb, beta, c, ldc);
	fwsim_flush_end(csr);
	if (omp_threads != 1)
		omp_set_num_threads(omp_threads);
	return st == dnnl_success ? FWSIM_OK : FWSIM_NOMEM;
}

/* Can sgemm read this matrix in place? Row-major N needs unit column stride
 * and ld >= cols; T needs unit row stride and ld >= rows. Unit dims make
 * their stride irrelevant. */
static int blas_layout(const mat_t *m, const uint8_t *p, char *t, int *ld)
{
	if (m->dt != ISA_DT_F32 || ((uintptr_t)p & 3u) || m->rows > INT_MAX || m->cols > INT_MAX)
		return 0;
	int64_t rows = (int64_t)m->rows, cols = (int64_t)m->cols;
	if ((cols == 1 || m->sc == 1) && (rows == 1 || (m->sr >= cols && m->sr <= INT_MAX))) {
		*t = GEMM_N;
		*ld = (int)(rows == 1 ? (cols > 0 ? cols : 1) : m->sr);
		return 1;
	}
	if ((rows == 1 || m->sr == 1) && (cols == 1 || (m->sc >= rows && m->sc <= INT_MAX))) {
		*t = GEMM_T;
		*ld = (int)(cols == 1 ? (rows > 0 ? rows : 1) : m->sc);
		return 1;
	}
	return 0;
}

/* Converts a strided matrix of any float dtype into a contiguous f32 buffer,
 * walking the operand's unit-stride direction so transposed operands pack
 * with sequential reads; t and ld describe the packed layout. */
static void pack(const mat_t *m, const uint8_t *p, float *dst, char *t, int *ld)
{
	int64_t es = (int64_t)isa_dtype_size(m->dt);
	int64_t asr = m->sr < 0 ? -m->sr : m->sr, asc = m->sc < 0 ? -m->sc : m->sc;
	if (asr < asc && m->rows > 1) { /* column-major-ish: pack columns */
		for (uint64_t c = 0; c < m->cols; c++)
			fwsim_load_f32(m->dt, p + (int64_t)c * m->sc * es, m->sr * es, m->rows,
				       dst + c * m->rows);
		*t = GEMM_T;
		*ld = (int)(m->rows ? m->rows : 1);
	} else {
		for (uint64_t r = 0; r < m->rows; r++)
			fwsim_load_f32(m->dt, p + (int64_t)r * m->sr * es, m->sc * es, m->cols,
				       dst + r * m->cols);
		*t = GEMM_N;
		*ld = (int)(m->cols ? m->cols : 1);
	}
}

/* Integer matmul by loop, wrapping like the ALU. The row of ap1 is held in
 * at most FWSIM_MATMUL_MAX_ROW elements: a longer K (a stride-0 operand costs
 * no device memory) is summed in pieces. */
static fwsim_status_t matmul_int(const fwsim_kargs_t *k, uint64_t B, uint64_t M, uint64_t N,
				 uint64_t K, const int64_t *sbat)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
	uint32_t o = c->rank == 3;
	int64_t ea = (int64_t)isa_dtype_size(a->dtype), ec = (int64_t)isa_dtype_size(c->dtype);
	int uns = isa_dtype_is_unsigned(a->dtype);
	int acc = !!(in->flags & ISA_F_ACCUMULATE);
	uint64_t kc = K < FWSIM_MATMUL_MAX_ROW ? K : FWSIM_MATMUL_MAX_ROW;
	int64_t *row = malloc(kc * sizeof(*row));
	if (!row)
		return FWSIM_NOMEM;
	int64_t asb = a->stride[o + 1] * ea, bsb = b->stride[o] * ea;
	for (uint64_t bi = 0; bi < B; bi++) {
		const uint8_t *pa = k->base[1] + (int64_t)bi * sbat[1] * ea;
		const uint8_t *pb = k->base[2] + (int64_t)bi * sbat[2] * ea;
		uint8_t *pc = k->base[0] + (int64_t)bi * sbat[0] * ec;
		for (uint64_t m = 0; m < M; m++) {
			const uint8_t *pr = pa + (int64_t)m * a->stride[o] * ea;
			if (kc == K)
				fwsim_load_i64(a->dtype, pr, asb, K, row);
			for (uint64_t n = 0; n < N; n++) {
				uint8_t *dst = pc + ((int64_t)m * c->stride[o] + (int64_t)n * c->stride[o + 1]) * ec;
				uint64_t s = acc ? (uint64_t)fw_ld_i64(c->dtype, dst) : 0;
				const uint8_t *col = pb + (int64_t)n * b->stride[o + 1] * ea;
				for (uint64_t k0 = 0; k0 < K; k0 += kc) {
					uint64_t len = K - k0 < kc ? K - k0 : kc;
					if (fwsim_tick(k, len)) {
						free(row);
						return FWSIM_TIMEOUT;
					}
					if (kc != K)
						fwsim_load_i64(a->dtype, pr + (int64_t)k0 * asb, asb, len, row);
					for (uint64_t kk = 0; kk < len; kk++)
						s += (uint64_t)row[kk] *
						     (uint64_t)fw_ld_i64(b->dtype, col + (int64_t)(k0 + kk) * bsb);
				}
				fw_st_i64(c->dtype, dst, (int64_t)s, uns);
			}
		}
	}
	free(row);
	return FWSIM_OK;
}

/* K = 0: the product is 0; with ACCUMULATE the output stays as it is. */
static fwsim_status_t matmul_empty_k(const fwsim_kargs_t *k, uint64_t B, uint64_t M,
				     uint64_t N, const int64_t *sbat)
{
	static const int64_t zero[FWSIM_BLOCK];
	const isa_ap_t *c = &k->insn->ap[0];
	if (k->insn->flags & ISA_F_ACCUMULATE)
		return FWSIM_OK;
	uint32_t o = c->rank == 3;
	int64_t ec = (int64_t)isa_dtype_size(c->dtype), csb = c->stride[o + 1] * ec;
	for (uint64_t bi = 0; bi < B; bi++)
		for (uint64_t m = 0; m < M; m++) {
			uint8_t *row = k->base[0] + ((int64_t)bi * sbat[0] + (int64_t)m * c->stride[o]) * ec;
			for (uint64_t j = 0; j < N; j += FWSIM_BLOCK) {
				if (fwsim_tick(k, FWSIM_BLOCK))
					return FWSIM_TIMEOUT;
				fwsim_store_i64(c->dtype, row + (int64_t)j * csb, csb,
						N - j < FWSIM_BLOCK ? N - j : FWSIM_BLOCK, zero, 0);
			}
		}
	return FWSIM_OK;
}

/* Tile sizes for f32 sgemm: the whole product when each of the three
 * matrices has at most FWSIM_MATMUL_MAX_TILE elements, else blocks that do.
 * Packing buffers are bounded by the tile, never by the logical operand (a
 * stride-0 operand of 2^40 elements costs no device memory). */
static void matmul_tiles(uint64_t M, uint64_t N, uint64_t K, uint64_t *mt, uint64_t *nt,
			 uint64_t *kt)
{
	const uint64_t e = FWSIM_MATMUL_MAX_TILE;
	if (M <= e / K && K <= e / N && M <= e / N) {
		*mt = M;
		*nt = N;
		*kt = K;
		return;
	}
	/* K as long as the narrower of M, N (up to 2048) allows, then N, then M */
	uint64_t m0 = M < 2048 ? M : 2048, n0 = N < 2048 ? N : 2048;
	uint64_t k_lim = e / (m0 > n0 ? m0 : n0);
	*kt = K < k_lim ? K : k_lim;
	*nt = N < e / *kt ? N : e / *kt;
	uint64_t wide = *kt > *nt ? *kt : *nt;
	*mt = M < e / wide ? M : e / wide;
}

static char flip_t(char t)
{
	return t == GEMM_N ? GEMM_T : GEMM_N;
}

/* The NaN/Inf scan of an mt x nt tile stored transposed (element (r, c) at
 * v[c * ld + r]) in the row-major order of the output (N columns, the tile's
 * first element at flat0): a quick test of each stored column, and the exact
 * scan, row by row gathered, only when one may hold a bad value. */
static void scan_transposed(fwsim_numchk_t *chk, const float *v, int ld, uint64_t mt, uint64_t nt,
			    uint64_t flat0, uint64_t N)
{
	bool maybe = false;
	for (uint64_t c = 0; c < nt && !maybe; c++)
		maybe = fwsim_numchk_maybe_nonfinite(chk, v + c * (uint64_t)ld, mt);
	if (!maybe)
		return;
	float buf[FWSIM_BLOCK];
	for (uint64_t r = 0; r < mt; r++)
		for (uint64_t c0 = 0; c0 < nt; c0 += FWSIM_BLOCK) {
			size_t m = nt - c0 < FWSIM_BLOCK ? (size_t)(nt - c0) : FWSIM_BLOCK;
			for (size_t e = 0; e < m; e++)
				buf[e] = v[(c0 + e) * (uint64_t)ld + r];
			fwsim_numchk_block(chk, buf, m, flat0 + r * N + c0);
		}
}

/* Per-thread packing buffers of a split MATMUL (one per fwsim_par slot). */
typedef struct mm_scratch {
	float *ta, *tb, *tc;
	const uint8_t *packed_pb; /* tb holds this B tile packed (a broadcast B) */
	uint64_t packed_kt, packed_nt;
	char tBp;
	int ldbp;
	fwsim_numchk_t chk; /* this slot's share of the NaN/Inf scan */
} mm_scratch_t;

/* One f32 MATMUL cut into items: output tiles of Mt x Nt per batch index, each
 * computed whole (its K loop included) by one thread. */
typedef struct mm_job {
	const fwsim_kargs_t *k;
	uint64_t B, M, N, K, Mt, Nt, Kt, m_tiles, n_tiles;
	int64_t sbat[3];
	uint32_t o;
	float beta;
	bool stream;  /* C's rows go out through mm_stream_rows (mm_streams, one K tile) */
	bool thin;    /* f32 tiles in place go to fwsim_gemm_thin_f32 (whole product's shape) */
	mm_scratch_t *scr;
} mm_job_t;

/*
 * A product whose output is large and whose sums are short is bound by
 * storing C, not by its multiply-adds: sgemm's stores first read each line
 * of C from memory (write-allocate), then write it back. ResNet-18's layer-4
 * weight gradients (9 products of 512 x 512 over K = 32, 9.4 MB of C) ran
 * 1.36 ms with C in the cache and 3.1 ms after 256 MB of other traffic, as
 * in a training step. Such a product's C is computed in chunks of rows into
 * a buffer that stays in L2 and streamed out with non-temporal stores (no
 * read of the line; 20 GB/s against 8-9 for memset here): 2.07-2.1 ms, and
 * the step NEFF 88.5-91.6 -> 82-85.6 ms on one CPU. The price: C leaves the
 * cache, so the product run over and over on its own went 1.33 -> 1.7 ms.
 * Products with longer sums keep sgemm's own stores: at K = 256 each chunk
 * repacks B, and a transformer's [1024 x 256] x [256 x 1024] went 3.7 -> 4.4
 * ms in chunks of 64 rows.
 */
#define MM_STREAM_MIN_BYTES (4u << 20) /* the instruction's C: beyond L2 */
#define MM_STREAM_MAX_K 64
#define MM_STREAM_CHUNK_BYTES (512u << 10) /* one chunk of C rows in L2 */

static bool mm_streams(uint32_t dt, uint64_t B, uint64_t M, uint64_t N, uint64_t K, float beta)
{
#if defined(__x86_64__)
	return dt == ISA_DT_F32 && beta == 0 && K <= MM_STREAM_MAX_K &&
	       (double)B * (double)M * (double)N * 4 >= (double)MM_STREAM_MIN_BYTES;
#else
	(void)dt, (void)B, (void)M, (void)N, (void)K, (void)beta;
	return false;
#endif
}

#if defined(__x86_64__)
/* n floats from src to dst with non-temporal stores where dst is 16-byte
 * aligned (plain stores before and after); the caller fences. */
static void mm_stream_row(float *dst, const float *src, uint64_t n)
{
	uint64_t i = 0;
	for (; i < n && ((uintptr_t)(dst + i) & 15); i++)
		dst[i] = src[i];
	for (; i + 4 <= n; i += 4)
		_mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
	for (; i < n; i++)
		dst[i] = src[i];
}
#else
static void mm_stream_row(float *dst, const float *src, uint64_t n)
{
	memcpy(dst, src, n * sizeof(float));
}
#endif

static atomic_uint_fast64_t g_streamed_rows;

uint64_t fwsim_matmul_streamed_rows(void)
{
	return atomic_load(&g_streamed_rows);
}

/* The mt x nt tile of C at pc (rows sr floats apart) as sgemm products of
 * chunks of rows into tc (the thread's buffer, rows of nt), each scanned
 * for NaN/Inf and streamed out; A is at a, row r at a + r * ra floats. */
static fwsim_status_t mm_stream_rows(const fwsim_kargs_t *k, char tA, char tB, uint64_t mt,
				     uint64_t nt, uint64_t kt, const float *a, int lda, int64_t ra,
				     const float *b, int ldb, float *tc, float *pc, int64_t sr,
				     fwsim_numchk_t *chk, uint64_t flat0, uint64_t N)
{
	uint64_t rows = MM_STREAM_CHUNK_BYTES / 4 / nt;
	rows = rows < 1 ? 1 : rows > mt ? mt : rows;
	for (uint64_t r0 = 0; r0 < mt; r0 += rows) {
		uint64_t rr = mt - r0 < rows ? mt - r0 : rows;
		fwsim_status_t gs = fwsim_gemm_f32(tA, tB, rr, nt, kt, a + (int64_t)r0 * ra, lda, b, ldb,
						   0.0f, tc, (int)nt);
		if (gs != FWSIM_OK)
			return gs;
		for (uint64_t r = 0; r < rr; r++) {
			const float *row = tc + r * nt;
			if (chk)
				fwsim_numchk_block(chk, row, nt, flat0 + (r0 + r) * N);
			mm_stream_row(pc + (int64_t)(r0 + r) * sr, row, nt);
		}
		atomic_fetch_add_explicit(&g_streamed_rows, rr, memory_order_relaxed);
		if (fwsim_tick(k, rr * nt * kt))
			return FWSIM_TIMEOUT;
	}
#if defined(__x86_64__)
	_mm_sfence(); /* the streamed rows before the item counts as done */
#endif
	return FWSIM_OK;
}

static fwsim_status_t mm_item(void *vctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	const mm_job_t *j = vctx;
	fwsim_kargs_t kk = *j->k;
	kk.watch = w;
	const fwsim_kargs_t *k = &kk;
	const isa_insn_t *in = k->insn;
	const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
	uint32_t o = j->o;
	mm_scratch_t *s = &j->scr[slot];
	uint64_t M = j->M, N = j->N, K = j->K, Mt = j->Mt, Nt = j->Nt, Kt = j->Kt;
	uint64_t ni = item % j->n_tiles, mi = item / j->n_tiles % j->m_tiles;
	uint64_t bi = item / j->n_tiles / j->m_tiles;
	uint64_t m0 = mi * Mt, n0 = ni * Nt;
	uint64_t mt = M - m0 < Mt ? M - m0 : Mt, nt = N - n0 < Nt ? N - n0 : Nt;
	int64_t ea = (int64_t)isa_dtype_size(a->dtype), ec = (int64_t)isa_dtype_size(c->dtype);
	const uint8_t *pa0 = k->base[1] + (int64_t)bi * j->sbat[1] * ea;
	const uint8_t *pb0 = k->base[2] + (int64_t)bi * j->sbat[2] * ea;
	uint8_t *pc0 = k->base[0] + (int64_t)bi * j->sbat[0] * ec;
	uint8_t *pc = pc0 + ((int64_t)m0 * c->stride[o] + (int64_t)n0 * c->stride[o + 1]) * ec;
	mat_t mc = { c->dtype, mt, nt, c->stride[o], c->stride[o + 1] };
	char tC;
	int ldc = 1;
	float *C;
	int lay_c = blas_layout(&mc, pc, &tC, &ldc);
	int direct_c = lay_c && tC == GEMM_N;
	/* C stored column-major (a pointwise convolution's [Y, O] of an NCHW
	 * output): sgemm writes C^T = B^T A^T there, row-major. Through a tile
	 * and a strided store, MobileNetV2's 16->96 expansion over 8 112x112
	 * images spent 80% of its 32 ms storing and scanning rows of 96 */
	int swap_c = lay_c && tC == GEMM_T;
	/* f32 C in rows: chunks through tc, streamed out (no beta to load) */
	bool stream = j->stream && direct_c;
	fwsim_numchk_t tchk;
	if (k->chk) {
		tchk = *k->chk;
		tchk.count = 0;
		tchk.first = UINT64_MAX;
	}
	if ((direct_c || swap_c) && !stream) {
		C = (float *)(void *)pc;
	} else {
		if (!s->tc && !(s->tc = malloc(Mt * Nt * sizeof(float))))
			return FWSIM_NOMEM;
		C = s->tc;
		ldc = (int)nt;
		if (j->beta != 0)
			for (uint64_t r = 0; r < mt; r++)
				fwsim_load_f32(mc.dt, pc + (int64_t)r * mc.sr * ec, mc.sc * ec, nt, C + r * nt);
	}
	for (uint64_t k0 = 0; k0 < K; k0 += Kt) {
		uint64_t kt = K - k0 < Kt ? K - k0 : Kt;
		const uint8_t *pa = pa0 + ((int64_t)m0 * a->stride[o] + (int64_t)k0 * a->stride[o + 1]) * ea;
		const uint8_t *pb = pb0 + ((int64_t)k0 * b->stride[o] + (int64_t)n0 * b->stride[o + 1]) * ea;
		mat_t ma = { a->dtype, mt, kt, a->stride[o], a->stride[o + 1] };
		mat_t mb = { b->dtype, kt, nt, b->stride[o], b->stride[o + 1] };
		char tA, tB;
		int lda = 1, ldb = 1;
		const float *A, *Bm;
		if (blas_layout(&ma, pa, &tA, &lda)) {
			A = (const float *)(const void *)pa;
		} else {
			if (!s->ta && !(s->ta = malloc(Mt * Kt * sizeof(float))))
				return FWSIM_NOMEM;
			pack(&ma, pa, s->ta, &tA, &lda);
			A = s->ta;
		}
		if (blas_layout(&mb, pb, &tB, &ldb)) {
			Bm = (const float *)(const void *)pb;
		} else {
			if (!s->tb && !(s->tb = malloc(Kt * Nt * sizeof(float))))
				return FWSIM_NOMEM;
			/* a B tile shared by several items (the M tiles of one product, a
			 * broadcast B's batches) is packed once per thread */
			if (!(s->packed_pb == pb && s->packed_kt == kt && s->packed_nt == nt)) {
				pack(&mb, pb, s->tb, &s->tBp, &s->ldbp);
				s->packed_pb = K == Kt ? pb : NULL;
				s->packed_kt = kt;
				s->packed_nt = nt;
			}
			tB = s->tBp;
			ldb = s->ldbp;
			Bm = s->tb;
		}
		if (stream) {
			fwsim_status_t gs = mm_stream_rows(k, tA, tB, mt, nt, kt, A, lda,
							   tA == GEMM_N ? lda : 1, Bm, ldb, C,
							   (float *)(void *)pc, mc.sr, k->chk ? &tchk : NULL,
							   (bi * M + m0) * N + n0, N);
			if (gs != FWSIM_OK)
				return gs;
			continue;
		}
		float beta = k0 ? 1.0f : j->beta;
		fwsim_status_t gs = FWSIM_OK;
		if (j->thin && !swap_c && tA == GEMM_N && tB == GEMM_N)
			fwsim_gemm_thin_f32(mt, nt, kt, A, lda, Bm, ldb, beta != 0, C, ldc);
		else if (swap_c)
			gs = fwsim_gemm_f32(flip_t(tB), flip_t(tA), nt, mt, kt, Bm, ldb, A, lda, beta, C, ldc);
		else
			gs = fwsim_gemm_f32(tA, tB, mt, nt, kt, A, lda, Bm, ldb, beta, C, ldc);
		if (gs != FWSIM_OK)
			return gs;
		/* one tile is at most 2^33 multiply-adds (each of its matrices <=
		 * FWSIM_MATMUL_MAX_TILE) */
		if (fwsim_tick(k, mt * nt * kt))
			return FWSIM_TIMEOUT;
	}
	if (stream) {
		/* scanned chunk by chunk */
	} else if (swap_c) {
		if (k->chk)
			scan_transposed(&tchk, C, ldc, mt, nt, (bi * M + m0) * N + n0, N);
	} else {
		for (uint64_t r = 0; r < mt; r++) {
			float *row = C + r * (uint64_t)ldc;
			if (k->chk)
				fwsim_numchk_block(&tchk, row, nt, (bi * M + m0 + r) * N + n0);
			if (!direct_c)
				fwsim_store_f32(mc.dt, pc + (int64_t)r * mc.sr * ec, mc.sc * ec, nt,
						row);
		}
	}
	if (k->chk)
		fwsim_numchk_merge(&s->chk, &tchk);
	return FWSIM_OK;
}

/* The fewest rows or columns matmul_split cuts a tile to. */
#define MATMUL_MIN_CUT 128

/* Cuts the larger of the M and N tiles so that a product of at least
 * FWSIM_PAR_MIN_WORK multiply-adds has about FWSIM_PAR_ITEMS items. Shapes
 * only: the same items whatever the thread count, so each output element is
 * computed by the same sgemm call (same K order) on one thread or several. */
static void matmul_split(uint64_t B, uint64_t M, uint64_t N, uint64_t K, uint64_t *Mt, uint64_t *Nt)
{
	double work = (double)B * (double)M * (double)N * (double)K;
	if (work < (double)FWSIM_PAR_MIN_WORK)
		return;
	uint64_t tiles = B * ((M + *Mt - 1) / *Mt) * ((N + *Nt - 1) / *Nt);
	if (tiles >= FWSIM_PAR_ITEMS)
		return;
	uint64_t f = (FWSIM_PAR_ITEMS + tiles - 1) / tiles;
	/* rows in multiples of 16, columns of 64: whole sgemm micro-tiles; and
	 * never under MATMUL_MIN_CUT of either, since every tile packs the whole
	 * other operand again: a weight gradient's [192 x 3136] x [3136 x 64]
	 * cut into 64-row tiles packed its 3136 x 64 operand 3 times a product,
	 * 12.1 ms for ResNet's 3x3 64->64 weight gradient at 1 thread, 11.0 with
	 * 128-row tiles (7.7 -> 6.8 ms at 2 threads) */
	if (*Mt >= *Nt / 4 && *Mt >= 2 * MATMUL_MIN_CUT) {
		uint64_t m = (*Mt + f - 1) / f;
		m = (m + 15) & ~(uint64_t)15;
		m = m < MATMUL_MIN_CUT ? MATMUL_MIN_CUT : m;
		if (m < *Mt)
			*Mt = m;
	} else if (*Nt >= 2 * MATMUL_MIN_CUT) {
		uint64_t n = (*Nt + f - 1) / f;
		n = (n + 63) & ~(uint64_t)63;
		n = n < MATMUL_MIN_CUT ? MATMUL_MIN_CUT : n;
		if (n < *Nt)
			*Nt = n;
	}
}

fwsim_status_t fwsim_kernel_matmul(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
	uint32_t o = c->rank == 3;
	uint64_t B = o ? c->shape[0] : 1, M = c->shape[o], N = c->shape[o + 1], K = a->shape[o + 1];
	int64_t sbat[3] = { o ? c->stride[0] : 0, o ? a->stride[0] : 0, o ? b->stride[0] : 0 };
	if (B == 0 || M == 0 || N == 0)
		return FWSIM_OK;
	if (K == 0) /* empty sum; the inputs are empty and have no address */
		return matmul_empty_k(k, B, M, N, sbat);
	if (!isa_dtype_is_float(a->dtype))
		return matmul_int(k, B, M, N, K, sbat);

	mm_job_t j = { .k = k, .B = B, .M = M, .N = N, .K = K, .o = o,
		       .sbat = { sbat[0], sbat[1], sbat[2] },
		       .beta = (in->flags & ISA_F_ACCUMULATE) ? 1.0f : 0.0f };
	matmul_tiles(M, N, K, &j.Mt, &j.Nt, &j.Kt);
	matmul_split(B, M, N, K, &j.Mt, &j.Nt);
	j.stream = j.Kt == K && mm_streams(c->dtype, B, M, N, K, j.beta); /* one K block */
	j.thin = !j.stream && fwsim_gemm_thin_fits(M, N, K);
	j.m_tiles = (M + j.Mt - 1) / j.Mt;
	j.n_tiles = (N + j.Nt - 1) / j.Nt;
	mm_scratch_t scr[FWSIM_PAR_MAX_THREADS];
	memset(scr, 0, sizeof(scr));
	for (uint32_t i = 0; k->chk && i < FWSIM_PAR_MAX_THREADS; i++) {
		scr[i].chk = *k->chk;
		scr[i].chk.count = 0;
		scr[i].chk.first = UINT64_MAX;
	}
	j.scr = scr;
	fwsim_status_t st = fwsim_par_for(B * j.m_tiles * j.n_tiles, mm_item, &j, k->watch);
	for (uint32_t i = 0; i < FWSIM_PAR_MAX_THREADS; i++) {
		if (k->chk)
			fwsim_numchk_merge(k->chk, &scr[i].chk);
		free(scr[i].ta);
		free(scr[i].tb);
		free(scr[i].tc);
	}
	return st;
}
