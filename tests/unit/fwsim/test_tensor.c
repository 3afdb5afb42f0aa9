/* REDUCE, MATMUL, IOTA, GATHER, SCATTER and RNG against scalar references. */
#include <dirent.h>
#include <sys/resource.h>
#include <xmmintrin.h>

#include "fwsim_test.h"
#include "internal.h"

static const uint32_t num_dtypes[] = {
	ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_S32, ISA_DT_S64, ISA_DT_U32,
	ISA_DT_U64, ISA_DT_U8, ISA_DT_S8, ISA_DT_S16, ISA_DT_U16,
};
#define N_NUM (sizeof(num_dtypes) / sizeof(num_dtypes[0]))

static void fill(tmem_t *t, const isa_ap_t *ap, uint64_t *seed, int small)
{
	uint64_t n = isa_ap_num_elements(ap), idx[ISA_MAX_RANK] = { 0 };
	for (uint64_t f = 0; f < n; f++) {
		tunflat(f, ap->rank, ap->shape, idx);
		uint8_t *p = telem(t, ap, idx);
		int64_t r = (int64_t)(trand(seed) % 17) - 8;
		if (isa_dtype_is_float(ap->dtype))
			tset(ap->dtype, p, small ? (double)r / 4 : (double)r);
		else if (ap->dtype == ISA_DT_PRED)
			tseti(ap->dtype, p, r & 1);
		else
			tseti(ap->dtype, p, small ? r : (int64_t)trand(seed));
	}
}

/* ---- REDUCE ---- */
static void check_reduce(uint32_t op, uint32_t dt, uint32_t rank, const uint64_t *shape,
			 uint32_t mask, int accumulate, tlayout_t lin, tlayout_t lout)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t oshape[ISA_MAX_RANK] = { 0 };
	for (uint32_t k = 0; k < rank; k++)
		oshape[k] = (mask >> k & 1) ? 1 : shape[k];
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, op);
	in.n_ap = 2;
	in.param = mask;
	in.flags = accumulate ? ISA_F_ACCUMULATE : 0;
	in.ap[0] = tmk_ap(&t, 0, dt, rank, oshape, lout);
	in.ap[1] = tmk_ap(&t, 1, dt, rank, shape, lin);
	uint64_t seed = 5 + op * 3 + dt + mask;
	/* sums of small values stay exact in every float dtype; prod of +-1/2.. */
	fill(&t, &in.ap[1], &seed, 1);
	fill(&t, &in.ap[0], &seed, 1);
	uint64_t nout = tnumel(rank, oshape), nin = tnumel(rank, shape), idx[ISA_MAX_RANK] = { 0 };
	double *want = calloc(nout + 1, sizeof(double));
	int64_t *wanti = calloc(nout + 1, sizeof(int64_t));
	int fl = isa_dtype_is_float(dt);
	int uns = dt == ISA_DT_U8 || dt == ISA_DT_U16 || dt == ISA_DT_U32 || dt == ISA_DT_U64 || dt == ISA_DT_PRED;
	for (uint64_t o = 0; o < nout; o++) {
		tunflat(o, rank, oshape, idx);
		const uint8_t *p = telem(&t, &in.ap[0], idx);
		if (accumulate) {
			want[o] = tget(dt, p);
			wanti[o] = tgeti(dt, p);
		} else {
			want[o] = op == ISA_RED_PROD ? 1 : op == ISA_RED_MAX ? -INFINITY : op == ISA_RED_MIN ? INFINITY : 0;
			wanti[o] = op == ISA_RED_PROD ? 1 : op == ISA_RED_AND ? -1 : 0;
			if (op == ISA_RED_MAX || op == ISA_RED_MIN) {
				uint32_t b = (uint32_t)isa_dtype_size(dt) * 8;
				uint64_t m = b == 64 ? UINT64_MAX : (1ull << b) - 1;
				if (op == ISA_RED_MAX)
					wanti[o] = uns ? 0 : -(int64_t)(m >> 1) - 1;
				else
					wanti[o] = uns ? (int64_t)m : (int64_t)(m >> 1);
			}
		}
	}
	for (uint64_t f = 0; f < nin; f++) {
		tunflat(f, rank, shape, idx);
		double v = tget(dt, telem(&t, &in.ap[1], idx));
		int64_t vi = tgeti(dt, telem(&t, &in.ap[1], idx));
		uint64_t o = 0;
		for (uint32_t k = 0; k < rank; k++)
			o = o * oshape[k] + ((mask >> k & 1) ? 0 : idx[k]);
		switch (op) {
		case ISA_RED_SUM: want[o] += v; wanti[o] = (int64_t)((uint64_t)wanti[o] + (uint64_t)vi); break;
		case ISA_RED_PROD: want[o] *= v; wanti[o] = (int64_t)((uint64_t)wanti[o] * (uint64_t)vi); break;
		case ISA_RED_MAX: want[o] = fmax(want[o], v);
			wanti[o] = uns ? ((uint64_t)vi > (uint64_t)wanti[o] ? vi : wanti[o]) : (vi > wanti[o] ? vi : wanti[o]); break;
		case ISA_RED_MIN: want[o] = fmin(want[o], v);
			wanti[o] = uns ? ((uint64_t)vi < (uint64_t)wanti[o] ? vi : wanti[o]) : (vi < wanti[o] ? vi : wanti[o]); break;
		case ISA_RED_AND: wanti[o] &= vi; break;
		case ISA_RED_OR: wanti[o] |= vi; break;
		}
	}
	fwsim_job_t job;
	ck_assert_msg(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job) == FWSIM_OK, "%s", job.error.message);
	uint32_t bits = (uint32_t)isa_dtype_size(dt) * 8;
	for (uint64_t o = 0; o < nout; o++) {
		tunflat(o, rank, oshape, idx);
		const uint8_t *p = telem(&t, &in.ap[0], idx);
		if (fl) {
			double w = want[o], g = tget(dt, p);
			double tol = (dt == ISA_DT_F32 ? 1e-5 : dt == ISA_DT_BF16 ? 1.0 / 64 : 1.0 / 512) * (fabs(w) + 1);
			T_CHECK(fabs(g - w) <= tol || (isinf(w) && g == w), "reduce %u %s mask %x out %llu: got %g want %g",
				      op, isa_dtype_name(dt), mask, (unsigned long long)o, g, w);
		} else {
			int64_t w = wanti[o];
			if (dt == ISA_DT_PRED)
				w = w != 0;
			else if (bits < 64) {
				uint64_t u = (uint64_t)w & ((1ull << bits) - 1);
				if (!uns && (u >> (bits - 1)))
					u |= ~((1ull << bits) - 1);
				w = (int64_t)u;
			}
			T_CHECK(tgeti(dt, p) == w, "reduce %u %s mask %x out %llu: got %lld want %lld", op,
				      isa_dtype_name(dt), mask, (unsigned long long)o, (long long)tgeti(dt, p), (long long)w);
		}
	}
	free(want);
	free(wanti);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}

START_TEST(test_reduce_ops_dtypes_axes)
{
	uint64_t shape[3] = { 4, 3, 600 };
	uint64_t shape_small[3] = { 5, 1, 7 };
	uint32_t op = (uint32_t)_i;
	for (size_t d = 0; d < N_NUM + 1; d++) {
		uint32_t dt = d < N_NUM ? num_dtypes[d] : ISA_DT_PRED;
		int intlike = !isa_dtype_is_float(dt);
		if ((op == ISA_RED_AND || op == ISA_RED_OR) != 0 && !intlike)
			continue;
		if (dt == ISA_DT_PRED && op != ISA_RED_AND && op != ISA_RED_OR)
			continue;
		for (uint32_t mask = 0; mask < 8; mask++) {
			const uint64_t *sh = mask & 1 ? shape_small : shape;
			if (op == ISA_RED_PROD && isa_dtype_is_float(dt))
				sh = shape_small; /* keep float products in range */
			check_reduce(op, dt, 3, sh, mask, mask == 5, (tlayout_t)((mask + d) % L_COUNT == L_BCAST0 ? L_STRIDED : (mask + d) % L_COUNT),
				     (tlayout_t)(mask % 4));
		}
	}
	/* rank 0 (a copy) and an empty reduced dim (identity) */
	uint64_t empty[2] = { 3, 0 };
	static const uint32_t edts[4] = { ISA_DT_F32, ISA_DT_S32, ISA_DT_U8, ISA_DT_S16 };
	for (int e = op == ISA_RED_AND || op == ISA_RED_OR ? 1 : 0; e < 4; e++)
		check_reduce(op, edts[e], 2, empty, 2, 0, L_CONTIG, L_CONTIG);
	check_reduce(op, ISA_DT_S32, 0, NULL, 0, 0, L_CONTIG, L_CONTIG);
}
END_TEST

/* ---- MATMUL ---- */
static void check_matmul(uint32_t adt, uint32_t cdt, uint64_t B, uint64_t M, uint64_t K, uint64_t N,
			 tlayout_t la, tlayout_t lb, tlayout_t lc, int accumulate, int bcast_b)
{
	tmem_t t;
	tmem_init(&t);
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.flags = accumulate ? ISA_F_ACCUMULATE : 0;
	uint32_t rank = B ? 3 : 2;
	uint64_t sc[3] = { B, M, N }, sa[3] = { B, M, K }, sb[3] = { B, K, N };
	uint64_t *pc = B ? sc : sc + 1, *pa = B ? sa : sa + 1, *pb = B ? sb : sb + 1;
	in.ap[0] = tmk_ap(&t, 0, cdt, rank, pc, lc);
	in.ap[1] = tmk_ap(&t, 1, adt, rank, pa, la);
	in.ap[2] = tmk_ap(&t, 2, adt, rank, pb, bcast_b ? L_BCAST0 : lb);
	uint64_t seed = 11 + M * 7 + K + N;
	fill(&t, &in.ap[1], &seed, 1);
	fill(&t, &in.ap[2], &seed, 1);
	fill(&t, &in.ap[0], &seed, 1);
	uint64_t nb = B ? B : 1, idx[3] = { 0 };
	double *want = calloc(nb * M * N + 1, sizeof(double));
	int64_t *wanti = calloc(nb * M * N + 1, sizeof(int64_t));
	for (uint64_t b = 0; b < nb; b++)
		for (uint64_t m = 0; m < M; m++)
			for (uint64_t n = 0; n < N; n++) {
				uint64_t ic[3] = { b, m, n };
				uint64_t *icp = B ? ic : ic + 1;
				double s = accumulate ? tget(cdt, telem(&t, &in.ap[0], icp)) : 0;
				int64_t si = accumulate ? tgeti(cdt, telem(&t, &in.ap[0], icp)) : 0;
				for (uint64_t k = 0; k < K; k++) {
					uint64_t ia[3] = { b, m, k }, ib[3] = { b, k, n };
					const uint8_t *xa = telem(&t, &in.ap[1], B ? ia : ia + 1);
					const uint8_t *xb = telem(&t, &in.ap[2], B ? ib : ib + 1);
					s += tget(adt, xa) * tget(adt, xb);
					si = (int64_t)((uint64_t)si + (uint64_t)tgeti(adt, xa) * (uint64_t)tgeti(adt, xb));
				}
				want[(b * M + m) * N + n] = s;
				wanti[(b * M + m) * N + n] = si;
			}
	fwsim_job_t job;
	ck_assert_msg(trun1(&t, &in, ISA_ENGINE_TENSOR, 0, &job) == FWSIM_OK, "%s", job.error.message);
	for (uint64_t f = 0; f < nb * M * N; f++) {
		tunflat(f, rank, pc, idx);
		const uint8_t *p = telem(&t, &in.ap[0], idx);
		if (isa_dtype_is_float(cdt)) {
			double g = tget(cdt, p), w = want[f];
			double tol = (cdt == ISA_DT_F32 ? 1e-5 : cdt == ISA_DT_BF16 ? 1.0 / 64 : 1.0 / 512) * (fabs(w) + 1);
			T_CHECK(fabs(g - w) <= tol, "matmul %s->%s B%llu M%llu K%llu N%llu lay %d%d%d elem %llu: got %g want %g",
				      isa_dtype_name(adt), isa_dtype_name(cdt), (unsigned long long)B, (unsigned long long)M,
				      (unsigned long long)K, (unsigned long long)N, la, lb, lc, (unsigned long long)f, g, w);
		} else {
			uint32_t bits = (uint32_t)isa_dtype_size(cdt) * 8;
			uint64_t u = (uint64_t)wanti[f];
			if (bits < 64) {
				u &= (1ull << bits) - 1;
				if (cdt != ISA_DT_U8 && cdt != ISA_DT_U16 && cdt != ISA_DT_U32 && (u >> (bits - 1)))
					u |= ~((1ull << bits) - 1);
			}
			ck_assert_msg(tgeti(cdt, p) == (int64_t)u, "int matmul elem %llu: got %lld want %lld",
				      (unsigned long long)f, (long long)tgeti(cdt, p), (long long)u);
		}
	}
	free(want);
	free(wanti);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}

START_TEST(test_matmul_f32_layouts_batch_accumulate)
{
	for (int la = 0; la < 4; la++)
		for (int lb = 0; lb < 4; lb++)
			check_matmul(ISA_DT_F32, ISA_DT_F32, (la + lb) % 2 ? 3 : 0, 17, 33, 9,
				     (tlayout_t)la, (tlayout_t)lb, (tlayout_t)((la * 3 + lb) % 4), (la + lb) % 3 == 0, 0);
	check_matmul(ISA_DT_F32, ISA_DT_F32, 4, 8, 16, 8, L_CONTIG, L_CONTIG, L_CONTIG, 0, 1); /* batch broadcast */
	check_matmul(ISA_DT_F32, ISA_DT_F32, 0, 1, 1, 1, L_CONTIG, L_CONTIG, L_CONTIG, 1, 0);
	check_matmul(ISA_DT_F32, ISA_DT_F32, 0, 1, 50, 1, L_TRANSPOSED, L_STRIDED, L_CONTIG, 0, 0);
	check_matmul(ISA_DT_F32, ISA_DT_F32, 0, 64, 128, 96, L_TRANSPOSED, L_TRANSPOSED, L_CONTIG, 0, 0);
	check_matmul(ISA_DT_F32, ISA_DT_F32, 0, 5, 0, 4, L_CONTIG, L_CONTIG, L_CONTIG, 0, 0); /* K = 0 */
	check_matmul(ISA_DT_F32, ISA_DT_F32, 0, 5, 0, 4, L_CONTIG, L_CONTIG, L_CONTIG, 1, 0);
}
END_TEST

/* Subnormals in a float MATMUL read as zero and subnormal results become
 * zero (kernels_matmul.c, gemm_f32): A [8, 64] with every other element a
 * subnormal gives the bits of A with those zeroed, B's subnormal column
 * likewise (a subnormal row times 2^100 gives 0, not 2^-34); a row of
 * 2^-70 x 2^-70 products (exactly 2^-140 each, subnormal) sums to +0; and
 * the calling thread's MXCSR is as it was. */
START_TEST(test_matmul_subnormals_flush_to_zero)
{
	enum { M = 8, K = 64, N = 16 };
	tmem_t t;
	tmem_init(&t);
	uint64_t sa[2] = { M, K }, sb[2] = { K, N }, sc[2] = { M, N };
	isa_insn_t in[2];
	for (int v = 0; v < 2; v++) {
		in[v] = isa_insn_init(ISA_OP_MATMUL, 0);
		in[v].n_ap = 3;
		in[v].ap[0] = tmk_ap(&t, 0, ISA_DT_F32, 2, sc, L_CONTIG);
		in[v].ap[1] = tmk_ap(&t, 1, ISA_DT_F32, 2, sa, L_CONTIG);
		in[v].ap[2] = tmk_ap(&t, 2, ISA_DT_F32, 2, sb, L_CONTIG);
	}
	float *a[2], *b[2];
	for (int v = 0; v < 2; v++) {
		a[v] = (float *)(void *)tmem_ptr(&t, 1, in[v].ap[1].offset);
		b[v] = (float *)(void *)tmem_ptr(&t, 2, in[v].ap[2].offset);
	}
	for (int i = 0; i < M * K; i++) {
		float x = (float)((i * 37) % 19) * 0.25f - 2.0f;
		a[0][i] = i % 2 ? ldexpf(1.0f + (float)(i % 5), -140) : x; /* subnormal */
		a[1][i] = i % 2 ? 0.0f : x;
	}
	for (int i = 0; i < K * N; i++) {
		float x = (float)((i * 13) % 23) * 0.5f - 5.0f;
		b[0][i] = i % N == 3 ? -ldexpf(1.0f, -130) : x;
		b[1][i] = i % N == 3 ? 0.0f : x;
	}
	/* row 5 of A: 2^-70, column 7 of B: 2^-70 (their products subnormal);
	 * row 6 of A all subnormal, column 9 of B 2^100 (products of 2^-40 if
	 * the subnormals counted) */
	for (int k = 0; k < K; k++) {
		a[0][5 * K + k] = a[1][5 * K + k] = ldexpf(1.0f, -70);
		b[0][k * N + 7] = b[1][k * N + 7] = ldexpf(1.0f, -70);
		a[0][6 * K + k] = ldexpf(1.0f, -140);
		a[1][6 * K + k] = 0.0f;
		b[0][k * N + 9] = b[1][k * N + 9] = ldexpf(1.0f, 100);
	}
	unsigned csr = _mm_getcsr();
	fwsim_job_t job;
	for (int v = 0; v < 2; v++)
		ck_assert_msg(trun1(&t, &in[v], ISA_ENGINE_TENSOR, 0, &job) == FWSIM_OK, "%s", job.error.message);
	ck_assert_uint_eq(_mm_getcsr(), csr);
	const float *c0 = (const float *)(const void *)tmem_ptr(&t, 0, in[0].ap[0].offset);
	const float *c1 = (const float *)(const void *)tmem_ptr(&t, 0, in[1].ap[0].offset);
	ck_assert_int_eq(memcmp(c0, c1, sizeof(float) * M * N), 0);
	ck_assert(c0[5 * N + 7] == 0.0f && !signbit(c0[5 * N + 7]));
	ck_assert(c0[6 * N + 9] == 0.0f);
	tmem_free(&t);
}
END_TEST

/* C stored column-major is written in place (sgemm computes C^T = B^T A^T
 * there); its NaN/Inf scan still reports in C's row-major order: a NaN in
 * row 17 of A makes row 17 of C bad (30 values from flat 17 * 30), one in
 * column 5 of B column 5 of C (40 values, the first at flat 5), both 69. */
START_TEST(test_matmul_transposed_output_nan_record)
{
	for (int which = 0; which < 3; which++) {
		tmem_t t;
		tmem_init(&t);
		isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
		in.n_ap = 3;
		uint64_t sc[2] = { 40, 30 }, sa[2] = { 40, 8 }, sb[2] = { 8, 30 };
		in.ap[0] = tmk_ap(&t, 0, ISA_DT_F32, 2, sc, L_TRANSPOSED);
		in.ap[1] = tmk_ap(&t, 1, ISA_DT_F32, 2, sa, L_CONTIG);
		in.ap[2] = tmk_ap(&t, 2, ISA_DT_F32, 2, sb, L_CONTIG);
		uint64_t seed = 3;
		fill(&t, &in.ap[1], &seed, 1);
		fill(&t, &in.ap[2], &seed, 1);
		float *a = (float *)(void *)tmem_ptr(&t, 1, in.ap[1].offset);
		float *b = (float *)(void *)tmem_ptr(&t, 2, in.ap[2].offset);
		if (which != 1)
			a[17 * 8 + 3] = NAN;
		if (which != 0)
			b[6 * 30 + 5] = NAN;
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_TENSOR, FWSIM_JOB_CHECK_NAN, &job),
				 FWSIM_NUM_ERR);
		ck_assert_uint_eq(job.error.count, which == 0 ? 30 : which == 1 ? 40 : 69);
		ck_assert_uint_eq(job.error.first_index, which == 0 ? 17 * 30 : 5);
		/* the good values, at their transposed places */
		uint64_t idx[2] = { 2, 7 };
		double want = 0;
		for (uint32_t k = 0; k < 8; k++)
			want += (double)a[2 * 8 + k] * (double)b[k * 30 + 7];
		ck_assert(fabs(tget(ISA_DT_F32, telem(&t, &in.ap[0], idx)) - want) <=
			  1e-5 * (fabs(want) + 1));
		ck_assert(tmem_guards_intact(&t));
		tmem_free(&t);
	}
}
END_TEST

START_TEST(test_matmul_half_and_int)
{
	static const uint32_t fl[3] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16 };
	for (int a = 1; a < 3; a++)
		for (int c = 0; c < 3; c++)
			check_matmul(fl[a], fl[c], (a + c) % 2 ? 2 : 0, 13, 20, 11, (tlayout_t)c, (tlayout_t)(a + c),
				     (tlayout_t)(c % 4), c == 1, 0);
	check_matmul(ISA_DT_S32, ISA_DT_S32, 2, 5, 7, 3, L_CONTIG, L_TRANSPOSED, L_CONTIG, 1, 0);
	check_matmul(ISA_DT_S8, ISA_DT_S32, 0, 5, 7, 3, L_REVERSED, L_CONTIG, L_STRIDED, 0, 0);
	check_matmul(ISA_DT_U8, ISA_DT_U32, 0, 4, 9, 6, L_CONTIG, L_CONTIG, L_CONTIG, 0, 0);
	check_matmul(ISA_DT_S64, ISA_DT_S64, 0, 3, 4, 5, L_CONTIG, L_CONTIG, L_CONTIG, 0, 0);
}
END_TEST

/* ---- host scratch bounded by tiles, not by logical sizes (issue #11) ---- */

/* A job window of size bytes with regions 0..3 of a quarter each. */
typedef struct bigmem {
	uint8_t *mem;
	uint64_t size;
	fwsim_region_t regions[T_NREG];
} bigmem_t;

static void bigmem_init(bigmem_t *b, uint64_t size)
{
	b->size = size;
	b->mem = calloc(1, size);
	ck_assert_ptr_nonnull(b->mem);
	for (uint32_t r = 0; r < T_NREG; r++)
		b->regions[r] = (fwsim_region_t){ r * (size / T_NREG), size / T_NREG };
}

static fwsim_status_t bigmem_run(bigmem_t *b, const isa_insn_t *in, uint32_t e, uint32_t flags,
				 fwsim_job_t *job)
{
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { 0 };
	uint32_t n[ISA_ENGINE_COUNT] = { 0 };
	s[e] = in;
	n[e] = 1;
	fwsim_program_t *p = NULL;
	char err[200];
	ck_assert_msg(ns_status_consume_message(fwsim_program_create(s, n, T_NREG, &p),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	memset(job, 0, sizeof(*job));
	*job = (fwsim_job_t){ .program = p, .mem = b->mem, .mem_size = b->size,
			      .regions = b->regions, .n_regions = T_NREG, .flags = flags };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_status_t st = fwsim_core_execute(core, job);
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	return st;
}

static float *bm_f32(bigmem_t *b, uint32_t r, uint64_t off)
{
	return (float *)(void *)(b->mem + b->regions[r].addr + off);
}

/* Reductions with more outputs than FWSIM_REDUCE_MAX_ACC (2^20) accumulators
 * run in row-major pieces: same values, NaN record indexed over the whole
 * output, ACCUMULATE and a reduced dim before the split dim included. */
START_TEST(test_reduce_in_pieces_matches_reference)
{
	bigmem_t b;
	bigmem_init(&b, 128u << 20);
	const uint64_t n = 2100000;
	/* sum over dim 1 of a[n, 2] -> o[n, 1] (3 pieces along dim 0) */
	uint64_t sa[2] = { n, 2 }, so[2] = { n, 1 };
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
	in.n_ap = 2;
	in.param = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, so);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa);
	float *a = bm_f32(&b, 1, 0), *o = bm_f32(&b, 0, 0);
	for (uint64_t i = 0; i < 2 * n; i++)
		a[i] = (float)(i % 13);
	a[2 * 1500000 + 1] = NAN; /* output 1500000, in the second piece */
	fwsim_job_t job;
	ck_assert_int_eq(bigmem_run(&b, &in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, 1500000);
	ck_assert_uint_eq(job.error.count, 1);
	for (uint64_t i = 0; i < n; i++)
		if (i != 1500000)
			T_CHECK(o[i] == a[2 * i] + a[2 * i + 1], "o[%llu] = %g", (unsigned long long)i, o[i]);
	/* max over dim 0 of a[2, m] -> o[1, m] with ACCUMULATE: the reduced dim
	 * comes before the split dim */
	const uint64_t m = 1100000;
	uint64_t sa2[2] = { 2, m }, so2[2] = { 1, m };
	in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_MAX);
	in.n_ap = 2;
	in.param = 1;
	in.flags = ISA_F_ACCUMULATE;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, so2);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa2);
	for (uint64_t i = 0; i < 2 * m; i++)
		a[i] = (float)((i * 7) % 11);
	for (uint64_t i = 0; i < m; i++)
		o[i] = (float)(i % 5) + 3;
	ck_assert_int_eq(bigmem_run(&b, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	for (uint64_t i = 0; i < m; i++) {
		float w = fmaxf(fmaxf(a[i], a[m + i]), (float)(i % 5) + 3);
		T_CHECK(o[i] == w, "o[%llu] = %g want %g", (unsigned long long)i, o[i], w);
	}
	free(b.mem);
}
END_TEST

/* The order of a float sum is part of REDUCE's contract (the interpreter and
 * the corpus tolerances rely on it): rows in blocks of 512, each block into 8
 * partial double sums (element i into sum i % 8, a tail past the last 8 into
 * sum 0) added as a tree onto the running value; an outer-dim sum adds each
 * input row into its accumulators in row order. Contiguous f32 (read in place)
 * and strided f32 (gathered first) give these bits exactly. */
static double ref_block_sum(const float *v, size_t n, double init)
{
	double s[8] = { 0 };
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int l = 0; l < 8; l++)
			s[l] += v[i + l];
	for (; i < n; i++)
		s[0] += v[i];
	return init + (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
}

/* Small values of many magnitudes and pairs of +-2^60 that cancel along
 * the last dim and along dim 0 (rank 3: in some rows, along dim 0 and dim 1
 * too; a row holding a cancelling pair has a sum rounded to 2^8, the others
 * not): what survives is the rounding of the partial
 * sums, so another order of additions gives other bits. */
static void fill_order_sensitive(tmem_t *t, const isa_ap_t *a, uint64_t *seed)
{
	uint64_t idx[ISA_MAX_RANK];
	uint32_t rank = a->rank;
	for (uint64_t f = 0; f < tnumel(rank, a->shape); f++) {
		tunflat(f, rank, a->shape, idx);
		uint64_t r = idx[0], c = idx[rank - 1];
		double m = ldexp((double)(trand(seed) >> 40) / 16777216.0 - 0.5,
				 (int)(trand(seed) % 41) - 20), big = 0x1p60;
		if (rank == 2 ? c == 5 || c == 700 : idx[1] == 2 && c == 1)
			m = big;
		else if (rank == 2 ? c == 1298 || c == 200 : idx[1] == 2 && c == 201)
			m = -big;
		else if (rank == 3 && c == 2 && (idx[1] == 0 || idx[1] == 4))
			m = idx[1] == 0 ? big : -big; /* dim 1 */
		else if (rank == 3 && c == 3 && r != 1 && idx[1] != 2)
			m = r == 0 ? big : -big;
		else if (rank == 2 && c % 14 == 1 && r != 1)
			m = r == 0 ? big : -big;
		else if (rank == 2 && c % 14 == 8 && r != 1)
			m = r == 0 ? -big : big;
		tset(ISA_DT_F32, telem(t, a, idx), m);
	}
}

START_TEST(test_reduce_f32_sum_order_bit_exact)
{
	static const uint64_t R = 3, C = 1301; /* 2 whole blocks, a tail of 277 */
	for (int strided = 0; strided < 2; strided++) {
		tmem_t t;
		tmem_init(&t);
		uint64_t sa[2] = { R, C }, so_in[2] = { R, 1 }, so_out[2] = { 1, C };
		isa_ap_t a = tmk_ap(&t, 1, ISA_DT_F32, 2, sa, strided ? L_STRIDED : L_CONTIG);
		uint64_t seed = 99, idx[2];
		float *row = malloc(C * sizeof(float));
		fill_order_sensitive(&t, &a, &seed);
		/* inner-dim sums: one per row */
		isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
		in.n_ap = 2;
		in.param = 2;
		in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, so_in);
		in.ap[1] = a;
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
		for (uint64_t r = 0; r < R; r++) {
			for (uint64_t c = 0; c < C; c++) {
				idx[0] = r;
				idx[1] = c;
				row[c] = (float)tget(ISA_DT_F32, telem(&t, &a, idx));
			}
			double acc = 0;
			for (uint64_t j = 0; j < C; j += 512)
				acc = ref_block_sum(row + j, C - j < 512 ? C - j : 512, acc);
			float want = (float)acc, got;
			memcpy(&got, tmem_ptr(&t, 0, 4 * r), 4);
			ck_assert_msg(memcmp(&got, &want, 4) == 0, "%s row %llu: %a, want %a",
				      strided ? "strided" : "contiguous", (unsigned long long)r, got, want);
		}
		/* outer-dim sums: one per column, rows added in order */
		in.param = 1;
		in.ap[0] = isa_ap_contig(2, 0, ISA_DT_F32, 2, so_out);
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
		for (uint64_t c = 0; c < C; c++) {
			double acc = 0;
			for (uint64_t r = 0; r < R; r++) {
				idx[0] = r;
				idx[1] = c;
				acc += (float)tget(ISA_DT_F32, telem(&t, &a, idx));
			}
			float want = (float)acc, got;
			memcpy(&got, tmem_ptr(&t, 2, 4 * c), 4);
			T_CHECK(memcmp(&got, &want, 4) == 0, "%s column %llu: %a, want %a",
				strided ? "strided" : "contiguous", (unsigned long long)c, got, want);
		}
		free(row);
		tmem_free(&t);
	}
}
END_TEST

/* Sums of short rows (one block each: contiguous ones are summed two rows at
 * a time) keep the order too: every row its own output, outputs shared by consecutive rows
 * (a reduced dim 1) and by rows apart (a reduced dim 0), an odd row count. */
START_TEST(test_reduce_f32_short_rows_bit_exact)
{
	static const uint64_t sh[3] = { 3, 5, 203 };
	static const uint32_t masks[3] = { 4, 5, 6 };
	for (int strided = 0; strided < 2; strided++)
		for (int mi = 0; mi < 3; mi++) {
			uint32_t mask = masks[mi];
			tmem_t t;
			tmem_init(&t);
			/* rows of 203, 208 element steps apart so no two rows merge into
			 * one longer row; elements 1 (in place) or 3 apart */
			int64_t e = strided ? 3 : 1;
			isa_ap_t a = isa_ap_contig(1, tmem_alloc(&t, 1, 15 * 208 * 4 * (uint64_t)e),
						   ISA_DT_F32, 3, sh);
			a.stride[0] = 5 * 208 * e;
			a.stride[1] = 208 * e;
			a.stride[2] = e;
			uint64_t seed = 5 + (uint64_t)mi, idx[3], osh[3];
			fill_order_sensitive(&t, &a, &seed);
			for (int q = 0; q < 3; q++)
				osh[q] = mask >> q & 1 ? 1 : sh[q];
			isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
			in.n_ap = 2;
			in.param = mask;
			in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 3, osh);
			in.ap[1] = a;
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
			double want[15] = { 0 };
			float row[203];
			for (uint64_t r = 0; r < 15; r++) {
				idx[0] = r / 5;
				idx[1] = r % 5;
				for (idx[2] = 0; idx[2] < 203; idx[2]++)
					row[idx[2]] = (float)tget(ISA_DT_F32, telem(&t, &a, idx));
				uint64_t o = (mask & 1 ? 0 : idx[0]) * osh[1] + (mask & 2 ? 0 : idx[1]);
				want[o] = ref_block_sum(row, 203, want[o]);
			}
			for (uint64_t o = 0; o < osh[0] * osh[1]; o++) {
				float w = (float)want[o], g;
				memcpy(&g, tmem_ptr(&t, 0, 4 * o), 4);
				ck_assert_msg(memcmp(&g, &w, 4) == 0, "%s mask %u out %llu: %a, want %a",
					      strided ? "strided" : "contiguous", mask, (unsigned long long)o, g, w);
			}
			tmem_free(&t);
		}
}
END_TEST

/* fwsim_red_fold_rows_f64 (a reducing FUSED's segment of short rows, one
 * accumulator per row) folds each row as fwsim_red_block_f64 does, bit for
 * bit: sums two rows at a time with the same 8 partial sums; odd row counts,
 * rows shorter and longer than 8, accumulators 1 and 3 apart or one for all
 * (step 0: rows in turn), values of many magnitudes with +-2^60 pairs that
 * cancel, a NaN, and MAX. */
START_TEST(test_reduce_fold_rows_as_blocks)
{
	static const size_t lens[5] = { 1, 7, 8, 16, 49 };
	static const int64_t steps[3] = { 1, 3, 0 };
	float v[9 * 49];
	uint64_t seed = 77;
	for (size_t i = 0; i < 9 * 49; i++)
		v[i] = (float)ldexp((double)(trand(&seed) >> 40) / 16777216.0 - 0.5,
				    (int)(trand(&seed) % 41) - 20);
	v[3] = 0x1p60f;
	v[60] = -0x1p60f;
	v[61] = 0x1p60f;
	for (int op = 0; op < 2; op++)
		for (int li = 0; li < 5; li++)
			for (int si = 0; si < 3; si++)
				for (size_t rows = 1; rows <= 9; rows++)
					for (int nan = 0; nan < 2; nan++) {
						uint32_t rop = op ? ISA_RED_MAX : ISA_RED_SUM;
						size_t rl = lens[li];
						int64_t st = steps[si];
						float w[9 * 49];
						memcpy(w, v, sizeof(w));
						if (nan)
							w[rl * (rows / 2)] = NAN;
						fwsim_acc_t got[27], want[27];
						for (int q = 0; q < 27; q++)
							got[q].d = want[q].d = 0.25 * q - 1.0;
						fwsim_red_fold_rows_f64(rop, got, st, w, rl, rows);
						for (size_t r = 0; r < rows; r++)
							want[(int64_t)r * st].d = fwsim_red_block_f64(
								rop, w + r * rl, rl, want[(int64_t)r * st].d);
						for (int q = 0; q < 27; q++)
							ck_assert_msg(memcmp(&got[q], &want[q], sizeof(got[q])) == 0,
								      "op %u rows %zu of %zu step %lld acc %d: %a, want %a",
								      rop, rows, rl, (long long)st, q, got[q].d,
								      want[q].d);
					}
}
END_TEST

/* f32 MAX/MIN along the last dim, bit for bit the in-order chain of
 * t_fmax/t_fmin from the identity (the first NaN kept): rows of 7 to 600
 * elements with the extremum in the vector part, in the tail, or zeros of
 * both signs (+0 the max, -0 the min), two NaN payloads (the first wins), and
 * ACCUMULATE onto an existing NaN or an equal value. The kernel takes vector
 * max/min where that gives the chain's bits. */
static float chain_minmax(int max, float init, const float *v, size_t n)
{
	float r = init;
	for (size_t i = 0; i < n; i++)
		r = max ? t_fmax(r, v[i]) : t_fmin(r, v[i]);
	return r;
}

START_TEST(test_reduce_minmax_rows_bit_exact)
{
	static const uint64_t lens[] = { 7, 8, 9, 16, 29, 32, 47, 100, 128, 600 };
	const uint32_t rows = 9;
	for (int max = 0; max < 2; max++)
		for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
			for (int acc = 0; acc < 2; acc++) {
				uint64_t n = lens[li], sh[2] = { rows, n }, osh[2] = { rows, 1 };
				tmem_t t;
				tmem_init(&t);
				isa_ap_t a = isa_ap_contig(1, tmem_alloc(&t, 1, rows * n * 4), ISA_DT_F32, 2, sh);
				isa_ap_t o = isa_ap_contig(0, tmem_alloc(&t, 0, rows * 4), ISA_DT_F32, 2, osh);
				float *v = (float *)(void *)tmem_ptr(&t, 1, a.offset);
				float *out = (float *)(void *)tmem_ptr(&t, 0, o.offset), init[9];
				uint64_t seed = 77 + n * 2 + (uint64_t)max;
				for (uint64_t i = 0; i < rows * n; i++)
					v[i] = (float)((int64_t)(trand(&seed) % 2001) - 1000) / 8;
				float qnan1, qnan2;
				uint32_t b1 = 0x7fc00001u, b2 = 0xffc00002u;
				memcpy(&qnan1, &b1, 4);
				memcpy(&qnan2, &b2, 4);
				float big = max ? 1e30f : -1e30f;
				v[1 * n + n - 1] = big;                       /* row 1: extremum in the tail */
				v[2 * n + 3] = big;                           /* row 2: in the vector part */
				for (uint64_t i = 0; i < n; i++)              /* rows 3, 4: signed zeros */
					v[3 * n + i] = i % 3 ? -0.0f : 0.0f, v[4 * n + i] = i % 2 ? 0.0f : -0.0f;
				v[4 * n + n / 2] = max ? -1 : 1;
				v[5 * n + n / 3] = qnan1;                     /* row 5: two NaNs */
				v[5 * n + n - 1] = qnan2;
				v[6 * n + n - 1] = qnan2;                     /* row 6: a NaN in the tail */
				for (uint64_t i = 0; i < n; i++)              /* row 7: all equal */
					v[7 * n + i] = 2.5f;
				for (uint32_t r = 0; r < rows; r++) {
					init[r] = !acc ? (max ? -INFINITY : INFINITY)
						  : r == 8 ? qnan1 : r == 7 ? 2.5f : r == 3 ? -0.0f : (float)r - 4;
					out[r] = init[r];
				}
				isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, max ? ISA_RED_MAX : ISA_RED_MIN);
				in.n_ap = 2;
				in.param = 2;
				in.flags = acc ? ISA_F_ACCUMULATE : 0;
				in.ap[0] = o;
				in.ap[1] = a;
				fwsim_job_t job;
				ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
				for (uint32_t r = 0; r < rows; r++) {
					float w = chain_minmax(max, init[r], v + r * n, n);
					ck_assert_msg(memcmp(&out[r], &w, 4) == 0, "%s n %llu acc %d row %u: %a, want %a",
						      max ? "max" : "min", (unsigned long long)n, acc, r, out[r], w);
				}
				tmem_free(&t);
			}
}
END_TEST

/* Row r's element i of the signed-zero REDUCE test, as f32: +0 then -0s, -0
 * then +0s, the same with the odd one last, alternating, all -0, all +0, and
 * values past the zeros (-1 for max, 1 for min) with one +0 and one -0. */
static float zero_row(int max, uint32_t r, uint64_t i, uint64_t n)
{
	static const float pz = 0.0f, nz = -0.0f;
	switch (r) {
	case 0: return i == 0 ? pz : nz;
	case 1: return i == 0 ? nz : pz;
	case 2: return i == n - 1 ? pz : nz;
	case 3: return i == n - 1 ? nz : pz;
	case 4: return i % 2 ? pz : nz;
	case 5: return nz;
	case 6: return pz;
	default: return i == n / 3 ? pz : i == 2 * n / 3 ? nz : max ? -1.0f : 1.0f;
	}
}

/* Reduces the rows of zero_row (f32 or bf16) by MAX or MIN into one value
 * each, from the identity or (acc) from +0 or -0, and checks every bit: along
 * the last dim of [8, n], or (outer) along the outer dim of [n, 8]. */
static void check_reduce_zeros(int max, uint32_t dt, int outer, uint64_t n, int acc)
{
	const uint32_t rows = 8;
	int bf = dt == ISA_DT_BF16;
	size_t es = isa_dtype_size(dt);
	uint64_t sh[2] = { rows, n }, osh[2] = { rows, 1 };
	if (outer) {
		sh[0] = n, sh[1] = rows;
		osh[0] = 1, osh[1] = rows;
	}
	tmem_t t;
	tmem_init(&t);
	isa_ap_t a = isa_ap_contig(1, tmem_alloc(&t, 1, rows * n * es), dt, 2, sh);
	isa_ap_t o = isa_ap_contig(0, tmem_alloc(&t, 0, rows * es), dt, 2, osh);
	uint8_t *v = tmem_ptr(&t, 1, a.offset), *out = tmem_ptr(&t, 0, o.offset);
	float init[8];
	for (uint32_t r = 0; r < rows; r++) {
		init[r] = !acc ? (max ? -INFINITY : INFINITY) : (r / 2) % 2 ? -0.0f : 0.0f;
		for (uint64_t i = 0; i <= n; i++) {
			/* element i of row r, then (i = n) the output's initial value */
			uint32_t u = ns_f32_bits(i < n ? zero_row(max, r, i, n) : init[r]);
			uint8_t *p = i == n ? out + r * es : v + (outer ? i * rows + r : r * n + i) * es;
			if (bf)
				*(uint16_t *)(void *)p = (uint16_t)(u >> 16);
			else
				*(uint32_t *)(void *)p = u;
		}
	}
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, max ? ISA_RED_MAX : ISA_RED_MIN);
	in.n_ap = 2;
	in.param = outer ? 1 : 2;
	in.flags = acc ? ISA_F_ACCUMULATE : 0;
	in.ap[0] = o;
	in.ap[1] = a;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	for (uint32_t r = 0; r < rows; r++) {
		float w = init[r];
		for (uint64_t i = 0; i < n; i++)
			w = max ? t_fmax(w, zero_row(max, r, i, n)) : t_fmin(w, zero_row(max, r, i, n));
		uint32_t got = bf ? (uint32_t)((uint16_t *)(void *)out)[r] << 16
				  : ((uint32_t *)(void *)out)[r];
		ck_assert_msg(got == ns_f32_bits(w), "%s %s %s n %llu acc %d row %u: 0x%08x, want 0x%08x",
			      max ? "max" : "min", isa_dtype_name(dt), outer ? "outer" : "rows",
			      (unsigned long long)n, acc, r, got, ns_f32_bits(w));
	}
	tmem_free(&t);
}

/* REDUCE MAX and MIN of f32 and bf16 over zeros of both signs are the IEEE
 * maximum and minimum, +0 and -0 whatever their order: along the last dim
 * (rows of 3 to 600: the vector max/min from 8 on, four accumulators from
 * 32, the tail) and along the outer dim (8 accumulators side by side, one
 * vector loop), from the identity or (ACCUMULATE) from +0 or -0. */
START_TEST(test_reduce_minmax_signed_zeros_ieee)
{
	static const uint64_t lens[] = { 3, 7, 8, 9, 16, 29, 32, 47, 100, 128, 600 };
	for (int max = 0; max < 2; max++)
		for (int bf = 0; bf < 2; bf++)
			for (int outer = 0; outer < 2; outer++)
				for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
					for (int acc = 0; acc < 2; acc++)
						check_reduce_zeros(max, bf ? ISA_DT_BF16 : ISA_DT_F32, outer,
								   lens[li], acc);
}
END_TEST

/* A max-pool's window as a REDUCE (3x3 windows of stride 2 over a 4x21x21
 * plane, the window's dims innermost and reduced) walks the window outside
 * the outputs (reduce_window_order): the same inputs in the same order per
 * output. MAX and MIN of f32 bit for bit the in-order chain over NaN payloads
 * and signed-zero ties, s32 SUM and MAX exact, with and without ACCUMULATE. */
START_TEST(test_reduce_window_bit_exact)
{
	static const uint32_t cases[4][2] = { { ISA_RED_MAX, ISA_DT_F32 }, { ISA_RED_MIN, ISA_DT_F32 },
					      { ISA_RED_SUM, ISA_DT_S32 }, { ISA_RED_MAX, ISA_DT_S32 } };
	for (int c = 0; c < 4; c++)
		for (int acc = 0; acc < 2; acc++) {
			uint32_t op = cases[c][0], dt = cases[c][1];
			tmem_t t;
			tmem_init(&t);
			const uint64_t P = 21 * 21;
			uint64_t sh[5] = { 4, 9, 9, 3, 3 }, osh[5] = { 4, 9, 9, 1, 1 };
			isa_ap_t a = isa_ap_contig(1, tmem_alloc(&t, 1, 4 * P * 4), dt, 5, sh);
			int64_t st[5] = { (int64_t)P, 42, 2, 21, 1 };
			memcpy(a.stride, st, sizeof(st));
			isa_ap_t o = isa_ap_contig(0, tmem_alloc(&t, 0, 4 * 81 * 4), dt, 5, osh);
			uint32_t *v = (uint32_t *)(void *)tmem_ptr(&t, 1, a.offset);
			uint32_t *ov = (uint32_t *)(void *)tmem_ptr(&t, 0, o.offset), init[324];
			uint64_t seed = 31 + (uint64_t)(c * 2 + acc);
			static const uint32_t fspecial[4] = { 0x00000000u, 0x80000000u, 0x7fc00011u, 0xffc00022u };
			for (uint64_t i = 0; i < 4 * P; i++) {
				uint64_t r = trand(&seed);
				if (dt == ISA_DT_F32) {
					float f = (float)((int64_t)(r >> 8) % 7 - 3);
					memcpy(&v[i], &f, 4);
					if (r % 11 == 0)
						v[i] = fspecial[(r >> 4) % 4];
				} else {
					v[i] = (uint32_t)(int32_t)((int64_t)(r >> 8) % 2001 - 1000);
				}
			}
			for (uint32_t e = 0; e < 324; e++) {
				float f = (float)(e % 5) - 2;
				init[e] = dt == ISA_DT_F32 ? 0 : (uint32_t)(e % 7);
				if (dt == ISA_DT_F32)
					memcpy(&init[e], &f, 4);
				if (!acc) /* the identity: -inf, +inf, 0, INT32_MIN */
					init[e] = dt == ISA_DT_F32 ? (op == ISA_RED_MAX ? 0xff800000u : 0x7f800000u)
								   : (op == ISA_RED_MAX ? 0x80000000u : 0u);
				ov[e] = init[e];
			}
			isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, op);
			in.n_ap = 2;
			in.param = 3u << 3;
			in.flags = acc ? ISA_F_ACCUMULATE : 0;
			in.ap[0] = o;
			in.ap[1] = a;
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
			for (uint32_t e = 0; e < 324; e++) {
				uint64_t ch = e / 81, oy = e / 9 % 9, ox = e % 9;
				uint32_t w = init[e];
				for (uint64_t ky = 0; ky < 3; ky++)
					for (uint64_t kx = 0; kx < 3; kx++) {
						uint32_t x = v[ch * P + (oy * 2 + ky) * 21 + ox * 2 + kx];
						if (dt == ISA_DT_F32) {
							float fa = ns_bits_f32(w), fb = ns_bits_f32(x);
							w = ns_f32_bits(op == ISA_RED_MAX ? t_fmax(fa, fb) : t_fmin(fa, fb));
						} else if (op == ISA_RED_SUM) {
							w += x;
						} else {
							w = (int32_t)x > (int32_t)w ? x : w;
						}
					}
				ck_assert_msg(ov[e] == w, "case %d acc %d output %u: 0x%08x, want 0x%08x", c, acc, e,
					      ov[e], w);
			}
			tmem_free(&t);
		}
}
END_TEST

/* Matmuls whose packing buffers would exceed FWSIM_MATMUL_MAX_TILE run in
 * tiles: M tiles of a packed bf16/f32 product, K tiles accumulating into C
 * (exact here), and the NaN record's first index over the whole output. */
START_TEST(test_matmul_tiled_matches_reference)
{
	bigmem_t b;
	bigmem_init(&b, 16u << 20);
	static const uint32_t dts[2] = { ISA_DT_BF16, ISA_DT_F32 };
	const uint64_t M = 3000, K = 1500, N = 3;
	for (int d = 0; d < 2; d++) {
		uint32_t dt = dts[d];
		/* A[m][k] = x[m + k] (a Hankel view: 4.5M logical elements over 4499
		 * real ones, packed), B contiguous, C contiguous f32 */
		uint64_t sa[2] = { M, K }, sb[2] = { K, N }, sc[2] = { M, N };
		isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
		in.n_ap = 3;
		in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sc);
		in.ap[1] = isa_ap_contig(1, 0, dt, 2, sa);
		in.ap[1].stride[0] = 1;
		in.ap[1].stride[1] = 1;
		in.ap[2] = isa_ap_contig(2, 0, dt, 2, sb);
		uint8_t *x = b.mem + b.regions[1].addr, *y = b.mem + b.regions[2].addr;
		uint64_t es = isa_dtype_size(dt);
		for (uint64_t i = 0; i < M + K; i++)
			tset(dt, x + i * es, (double)((int)(i % 9) - 4) / 4);
		for (uint64_t i = 0; i < K * N; i++)
			tset(dt, y + i * es, (double)((int)(i % 7) - 3) / 2);
		tset(dt, x + 4000 * es, NAN); /* rows 2501..2999: both M tiles */
		fwsim_job_t job;
		ck_assert_int_eq(bigmem_run(&b, &in, ISA_ENGINE_TENSOR, FWSIM_JOB_CHECK_NAN, &job),
				 FWSIM_NUM_ERR);
		ck_assert_uint_eq(job.error.first_index, 2501 * N);
		ck_assert_uint_eq(job.error.count, 499 * N);
		const float *c = bm_f32(&b, 0, 0);
		for (uint64_t m = 0; m < 2501; m++)
			for (uint64_t n = 0; n < N; n++) {
				double w = 0;
				for (uint64_t k = 0; k < K; k++)
					w += tget(dt, x + (m + k) * es) * tget(dt, y + (k * N + n) * es);
				T_CHECK(fabs(c[m * N + n] - w) <= 1e-3 * (fabs(w) + 1),
					      "%s c[%llu][%llu] = %g want %g", isa_dtype_name(dt),
					      (unsigned long long)m, (unsigned long long)n, c[m * N + n], w);
			}
	}
	/* K = 3 * 2^20 of ones, broadcast (stride 0): two K tiles, ACCUMULATE
	 * onto 5; every partial sum is an exact integer below 2^24 */
	const uint64_t K2 = 3u << 20;
	uint64_t sa[2] = { 2, K2 }, sb[2] = { K2, 2 }, sc[2] = { 2, 2 };
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.flags = ISA_F_ACCUMULATE;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sc);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa);
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sb);
	for (int i = 0; i < 2; i++)
		in.ap[1].stride[i] = in.ap[2].stride[i] = 0;
	*bm_f32(&b, 1, 0) = 1;
	*bm_f32(&b, 2, 0) = 1;
	for (int i = 0; i < 4; i++)
		bm_f32(&b, 0, 0)[i] = 5;
	fwsim_job_t job;
	ck_assert_int_eq(bigmem_run(&b, &in, ISA_ENGINE_TENSOR, 0, &job), FWSIM_OK);
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(bm_f32(&b, 0, 0)[i], 5.0f + (float)K2);
	free(b.mem);
}
END_TEST

/* One thin product (kernels_matmul_thin.c) of C [m x n] (rows ldc apart) =
 * A [m x k] (lda) x B [k x n] (ldb), plus C when acc, in bigmem b, and the
 * outputs the thin kernels computed while it ran. */
typedef struct thin_case {
	uint64_t m, n, k, lda, ldb, ldc;
	int acc;
} thin_case_t;

static uint64_t thin_run(bigmem_t *b, const thin_case_t *tc, uint32_t flags, fwsim_status_t want_st,
			 fwsim_job_t *job)
{
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.flags = tc->acc ? ISA_F_ACCUMULATE : 0;
	uint64_t sc[2] = { tc->m, tc->n }, sa[2] = { tc->m, tc->k }, sb[2] = { tc->k, tc->n };
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, sc);
	in.ap[0].stride[0] = (int64_t)tc->ldc;
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa);
	in.ap[1].stride[0] = (int64_t)tc->lda;
	in.ap[2] = isa_ap_contig(2, 0, ISA_DT_F32, 2, sb);
	in.ap[2].stride[0] = (int64_t)tc->ldb;
	uint64_t outs0 = fwsim_matmul_thin_outputs();
	ck_assert_int_eq(bigmem_run(b, &in, ISA_ENGINE_TENSOR, flags, job), want_st);
	return fwsim_matmul_thin_outputs() - outs0;
}

/* Thin products, narrow (at most 32 columns: 1, 16, 17, 32; 8-row tiles
 * and tails; sums of 16 to 1100, with and without prefetching the next
 * tile) and short (19 and 32 rows against a 300 x 4621 B of 5.5 MB, in 48-
 * column chunks with a 13-column tail and 32-row blocks of the sum), with
 * padded rows, from zero or accumulating: on AVX-512 each output is the
 * chain of fmaf over k ascending, bit for bit, from 0 or from C (the kernel
 * computed every output); the floats between C's rows keep their bytes; a NaN in
 * A's row 5 fails row 5 of C only. A short product whose B fits in L2
 * (32 x 512 x 512) and any product with the ISA capped at AVX2 keep sgemm
 * (no thin outputs), within rounding of the same sums. */
START_TEST(test_matmul_thin_products_fma_chain)
{
	static const thin_case_t cases[] = {
		{ 21, 1, 16, 20, 3, 2, 0 },          { 8, 16, 40, 41, 16, 19, 1 },
		{ 37, 17, 600, 600, 20, 17, 0 },     { 19, 32, 1100, 1103, 32, 35, 1 },
		{ 32, 4621, 300, 300, 4621, 4630, 0 }, { 19, 4621, 300, 301, 4624, 4621, 1 },
		{ 32, 512, 512, 512, 512, 512, 0 },  { 37, 17, 600, 600, 20, 17, 1 },
	};
	const int n_cases = (int)(sizeof(cases) / sizeof(cases[0]));
	bigmem_t b;
	bigmem_init(&b, 64u << 20);
	for (int ci = 0; ci < n_cases; ci++) {
		const thin_case_t *tc = &cases[ci];
		bool capped = ci == n_cases - 1;
		bool sgemm = capped || ci == n_cases - 2 || !fwsim_cpu_avx512();
		fwsim_set_max_isa(capped ? FWSIM_ISA_AVX2 : FWSIM_ISA_AUTO);
		float *c = bm_f32(&b, 0, 0), *a = bm_f32(&b, 1, 0), *bb = bm_f32(&b, 2, 0);
		for (uint64_t i = 0; i < tc->m * tc->lda; i++)
			a[i] = (float)((int)((i * 37) % 19) - 9) * 0.125f;
		for (uint64_t i = 0; i < tc->k * tc->ldb; i++)
			bb[i] = (float)((int)((i * 13) % 23) - 11) * 0.0625f;
		for (uint64_t i = 0; i < tc->m * tc->ldc; i++)
			c[i] = i % tc->ldc < tc->n ? (float)((int)(i % 7) - 3) * 0.5f : -7.0f;
		float *want = malloc(tc->m * tc->n * sizeof(float));
		ck_assert_ptr_nonnull(want);
		for (uint64_t r = 0; r < tc->m; r++)
			for (uint64_t j = 0; j < tc->n; j++) {
				float s = tc->acc ? c[r * tc->ldc + j] : 0.0f;
				for (uint64_t q = 0; q < tc->k; q++)
					s = fmaf(a[r * tc->lda + q], bb[q * tc->ldb + j], s);
				want[r * tc->n + j] = s;
			}
		fwsim_job_t job;
		uint64_t outs = thin_run(&b, tc, FWSIM_JOB_CHECK_NAN, FWSIM_OK, &job);
		ck_assert_msg(outs == (sgemm ? 0 : tc->m * tc->n), "case %d: %llu thin outputs", ci,
			      (unsigned long long)outs);
		for (uint64_t r = 0; r < tc->m; r++) {
			for (uint64_t j = 0; j < tc->n; j++) {
				float g = c[r * tc->ldc + j], w = want[r * tc->n + j];
				if (sgemm)
					T_CHECK(fabsf(g - w) <= 1e-4f * (fabsf(w) + 1), "case %d c[%llu][%llu] = %g want %g",
						ci, (unsigned long long)r, (unsigned long long)j, g, w);
				else
					T_CHECK(memcmp(&g, &w, 4) == 0, "case %d c[%llu][%llu] = %a want %a (fma chain)",
						ci, (unsigned long long)r, (unsigned long long)j, g, w);
			}
			for (uint64_t j = tc->n; j < tc->ldc; j++)
				ck_assert_msg(c[r * tc->ldc + j] == -7.0f, "case %d: gap of row %llu written", ci,
					      (unsigned long long)r);
		}
		a[5 * tc->lda + tc->k / 2] = NAN;
		thin_run(&b, tc, FWSIM_JOB_CHECK_NAN, FWSIM_NUM_ERR, &job);
		ck_assert_uint_eq(job.error.count, tc->n);
		ck_assert_uint_eq(job.error.first_index, 5 * tc->n);
		free(want);
	}
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
	free(b.mem);
}
END_TEST

/* The threads of this process (entries of /proc/self/task). */
static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* OpenMP's thread count is a setting of the calling thread, which in
 * inline mode is the application's: a MATMUL runs oneDNN's sgemm on that
 * thread alone (the pool is the parallelism) and leaves the setting as it
 * found it. The application sets 3 after a first product (as neuronsim-bench
 * did before timing sgemm itself): the second product starts no OpenMP
 * team (no new thread) and the setting is still 3 afterwards. */
START_TEST(test_matmul_keeps_the_callers_openmp_setting)
{
	fwsim_set_threads(1);
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 256, 256 };
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = tmk_ap(&t, 0, ISA_DT_F32, 2, sh, L_CONTIG);
	in.ap[1] = tmk_ap(&t, 1, ISA_DT_F32, 2, sh, L_CONTIG);
	in.ap[2] = tmk_ap(&t, 2, ISA_DT_F32, 2, sh, L_CONTIG);
	uint64_t seed = 9;
	fill(&t, &in.ap[1], &seed, 1);
	fill(&t, &in.ap[2], &seed, 1);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_TENSOR, 0, &job), FWSIM_OK);
	omp_set_num_threads(3);
	int before = task_count();
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_TENSOR, 0, &job), FWSIM_OK);
	ck_assert_int_eq(task_count(), before);
	ck_assert_int_eq(omp_get_max_threads(), 3);
	tmem_free(&t);
	fwsim_set_threads(0);
}
END_TEST

static long maxrss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Issue #11, item 3: a few bytes of device memory behind stride-0 operands
 * made the simulator size its host scratch by logical element counts (a REDUCE
 * to 2^24 outputs allocated and filled 128 MiB, a MATMUL packed 256 MiB).
 * docs/isa.md bounds the scratch of one instruction at 48 MiB; the peak RSS
 * of this process must not grow by more than that. */
START_TEST(test_host_scratch_bounded_for_stride0_operands)
{
	bigmem_t b;
	bigmem_init(&b, 1u << 20);
	long before = maxrss_kib();
	/* REDUCE: a[2^24, 2] -> o[2^24, 1], both stride 0 (one element each) */
	uint64_t sa[2] = { 1u << 24, 2 }, so[2] = { 1u << 24, 1 };
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, ISA_RED_SUM);
	in.n_ap = 2;
	in.param = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, so);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 2, sa);
	for (int i = 0; i < 2; i++)
		in.ap[0].stride[i] = in.ap[1].stride[i] = 0;
	*bm_f32(&b, 1, 0) = 1.5f;
	fwsim_job_t job;
	ck_assert_int_eq(bigmem_run(&b, &in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OK);
	ck_assert_float_eq(*bm_f32(&b, 0, 0), 3.0f);
	/* MATMUL: bf16 A[2^13, 2^13] and B[2^13, 1], stride 0, into C[2^13, 1]
	 * (2^26 logical elements of A: 256 MiB packed as f32) */
	uint64_t ma[2] = { 1u << 13, 1u << 13 }, mb[2] = { 1u << 13, 1 }, mc[2] = { 1u << 13, 1 };
	in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(0, 64, ISA_DT_F32, 2, mc);
	in.ap[1] = isa_ap_contig(1, 64, ISA_DT_BF16, 2, ma);
	in.ap[2] = isa_ap_contig(2, 64, ISA_DT_BF16, 2, mb);
	for (int i = 0; i < 2; i++)
		in.ap[1].stride[i] = in.ap[2].stride[i] = 0;
	tset(ISA_DT_BF16, b.mem + b.regions[1].addr + 64, 0.5);
	tset(ISA_DT_BF16, b.mem + b.regions[2].addr + 64, 0.25);
	ck_assert_int_eq(bigmem_run(&b, &in, ISA_ENGINE_TENSOR, 0, &job), FWSIM_OK);
	ck_assert_float_eq(bm_f32(&b, 0, 64)[0], 1024.0f); /* 2^13 * 0.125 */
	long grew = maxrss_kib() - before;
	ck_assert_msg(grew < 64 * 1024, "peak RSS grew by %ld KiB", grew);
	free(b.mem);
}
END_TEST

/* ---- IOTA ---- */
START_TEST(test_iota_every_dtype_and_dim)
{
	for (size_t d = 0; d < N_NUM; d++)
		for (uint32_t dim = 0; dim < 3; dim++) {
			tmem_t t;
			tmem_init(&t);
			uint32_t dt = num_dtypes[d];
			uint64_t shape[3] = { 3, 4, 600 }, idx[3];
			isa_insn_t in = isa_insn_init(ISA_OP_IOTA, 0);
			in.n_ap = 1;
			in.param = dim;
			in.imm[0] = 2;
			in.ap[0] = tmk_ap(&t, 0, dt, 3, shape, (tlayout_t)((d + dim) % 4));
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_GPSIMD, 0, &job), FWSIM_OK);
			for (uint64_t f = 0; f < 3 * 4 * 600; f++) {
				tunflat(f, 3, shape, idx);
				double w = (double)(idx[dim] + 2);
				if (dt == ISA_DT_U8 || dt == ISA_DT_S8)
					w = (double)(isa_dtype_size(dt) == 1 ? (dt == ISA_DT_U8 ? (uint8_t)(idx[dim] + 2) : (int8_t)(idx[dim] + 2)) : w);
				double g = tget(dt, telem(&t, &in.ap[0], idx));
				if (dt == ISA_DT_BF16 && w > 256)
					ck_assert(fabs(g - w) <= w / 128);
				else
					T_CHECK(g == w, "iota %s dim %u: got %g want %g", isa_dtype_name(dt), dim, g, w);
			}
			tmem_free(&t);
		}
}
END_TEST

/* ---- GATHER / SCATTER ---- */
START_TEST(test_gather_clamps_indices)
{
	static const uint32_t idts[] = { ISA_DT_S32, ISA_DT_S64, ISA_DT_U8, ISA_DT_U32, ISA_DT_S8 };
	for (size_t d = 0; d < N_NUM; d++)
		for (size_t q = 0; q < 5; q++) {
			tmem_t t;
			tmem_init(&t);
			uint32_t dt = num_dtypes[d];
			uint64_t N = 10, M = 12, R = 5;
			uint64_t so[2] = { M, R }, st[2] = { N, R }, si[1] = { M };
			isa_insn_t in = isa_insn_init(ISA_OP_GATHER, 0);
			in.n_ap = 3;
			in.ap[0] = tmk_ap(&t, 0, dt, 2, so, (tlayout_t)(d % 4));
			in.ap[1] = tmk_ap(&t, 1, dt, 2, st, (tlayout_t)((d + q) % 4));
			in.ap[2] = tmk_ap(&t, 2, idts[q], 1, si, (tlayout_t)(q % 4));
			uint64_t seed = 3 + d * 5 + q;
			fill(&t, &in.ap[1], &seed, 0);
			int64_t ivals[12] = { 0, 9, 10, 3, -1, 200, 5, 5, 1, 127, -128, 2 };
			for (uint64_t m = 0; m < M; m++)
				tseti(idts[q], telem(&t, &in.ap[2], &m), ivals[m]);
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_GPSIMD, 0, &job), FWSIM_OK);
			for (uint64_t m = 0; m < M; m++) {
				int64_t iv = tgeti(idts[q], telem(&t, &in.ap[2], &m));
				int uns = idts[q] == ISA_DT_U8 || idts[q] == ISA_DT_U32;
				uint64_t row = (!uns && iv < 0) ? 0 : (uint64_t)iv >= N ? N - 1 : (uint64_t)iv;
				for (uint64_t r = 0; r < R; r++) {
					uint64_t io[2] = { m, r }, it[2] = { row, r };
					T_CHECK(!memcmp(telem(&t, &in.ap[0], io), telem(&t, &in.ap[1], it), isa_dtype_size(dt)),
						"row %llu element %llu", (unsigned long long)m, (unsigned long long)r);
				}
			}
			tmem_free(&t);
		}
}
END_TEST

START_TEST(test_scatter_combiners_skip_out_of_range)
{
	for (uint32_t op = 0; op < ISA_RED_END; op++)
		for (size_t d = 0; d < N_NUM; d++) {
			uint32_t dt = num_dtypes[d];
			if ((op == ISA_RED_AND || op == ISA_RED_OR) && isa_dtype_is_float(dt))
				continue;
			tmem_t t;
			tmem_init(&t);
			uint64_t N = 6, M = 9, R = 4;
			uint64_t so[2] = { N, R }, su[2] = { M, R }, si[1] = { M };
			isa_insn_t in = isa_insn_init(ISA_OP_SCATTER, op);
			in.n_ap = 3;
			in.ap[0] = tmk_ap(&t, 0, dt, 2, so, (tlayout_t)(d % 4));
			in.ap[1] = tmk_ap(&t, 1, dt, 2, su, (tlayout_t)((d + op) % 4));
			in.ap[2] = tmk_ap(&t, 2, ISA_DT_S32, 1, si, L_CONTIG);
			uint64_t seed = 17 + d + op * 100;
			fill(&t, &in.ap[0], &seed, 1);
			fill(&t, &in.ap[1], &seed, 1);
			int64_t ivals[9] = { 0, 2, 2, -1, 6, 5, 0, 100, 3 };
			for (uint64_t m = 0; m < M; m++)
				tseti(ISA_DT_S32, telem(&t, &in.ap[2], &m), ivals[m]);
			double want[6][4];
			int64_t wanti[6][4];
			for (uint64_t n = 0; n < N; n++)
				for (uint64_t r = 0; r < R; r++) {
					uint64_t io[2] = { n, r };
					want[n][r] = tget(dt, telem(&t, &in.ap[0], io));
					wanti[n][r] = tgeti(dt, telem(&t, &in.ap[0], io));
				}
			for (uint64_t m = 0; m < M; m++) {
				if (ivals[m] < 0 || ivals[m] >= (int64_t)N)
					continue;
				for (uint64_t r = 0; r < R; r++) {
					uint64_t iu[2] = { m, r };
					double u = tget(dt, telem(&t, &in.ap[1], iu));
					int64_t ui = tgeti(dt, telem(&t, &in.ap[1], iu));
					double *w = &want[ivals[m]][r];
					int64_t *wi = &wanti[ivals[m]][r];
					switch (op) {
					case ISA_RED_SUM: *w += u; *wi = (int64_t)((uint64_t)*wi + (uint64_t)ui); break;
					case ISA_RED_PROD: *w *= u; *wi = (int64_t)((uint64_t)*wi * (uint64_t)ui); break;
					case ISA_RED_MAX: *w = fmax(*w, u); *wi = (dt == ISA_DT_U64 ? (uint64_t)ui > (uint64_t)*wi : ui > *wi) ? ui : *wi; break;
					case ISA_RED_MIN: *w = fmin(*w, u); *wi = (dt == ISA_DT_U64 ? (uint64_t)ui < (uint64_t)*wi : ui < *wi) ? ui : *wi; break;
					case ISA_RED_AND: *wi &= ui; break;
					case ISA_RED_OR: *wi |= ui; break;
					case ISA_RED_ASSIGN: *w = u; *wi = ui; break;
					}
				}
			}
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_GPSIMD, 0, &job), FWSIM_OK);
			for (uint64_t n = 0; n < N; n++)
				for (uint64_t r = 0; r < R; r++) {
					uint64_t io[2] = { n, r };
					const uint8_t *p = telem(&t, &in.ap[0], io);
					if (isa_dtype_is_float(dt)) {
						ck_assert_msg(fabs(tget(dt, p) - want[n][r]) <= 1e-2 * (fabs(want[n][r]) + 1),
							      "scatter %u %s", op, isa_dtype_name(dt));
					} else {
						uint8_t buf[8];
						tseti(dt, buf, wanti[n][r]); /* wrap to width */
						ck_assert_msg(tgeti(dt, p) == tgeti(dt, buf), "scatter %u %s [%llu,%llu]: got %lld want %lld",
							      op, isa_dtype_name(dt), (unsigned long long)n, (unsigned long long)r,
							      (long long)tgeti(dt, p), (long long)tgeti(dt, buf));
					}
				}
			tmem_free(&t);
		}
}
END_TEST

/* One-element f32 rows (a max-pool gradient's SCATTER) take their own loop:
 * the same bits as applying the updates one by one in order, duplicates
 * combining, out-of-range and negative indices skipped, strided operands,
 * more updates than a block. */
START_TEST(test_scatter_f32_elements_in_order)
{
	static const uint32_t ops[] = { ISA_RED_SUM, ISA_RED_PROD, ISA_RED_MAX, ISA_RED_MIN };
	for (size_t q = 0; q < 4; q++)
		for (int lay = 0; lay < 2; lay++) {
			tmem_t t;
			tmem_init(&t);
			uint64_t N = 37, M = 3000, R = 1;
			uint64_t so[2] = { N, R }, su[2] = { M, R }, si[1] = { M };
			isa_insn_t in = isa_insn_init(ISA_OP_SCATTER, ops[q]);
			in.n_ap = 3;
			tlayout_t l = lay ? L_STRIDED : L_CONTIG;
			in.ap[0] = tmk_ap(&t, 0, ISA_DT_F32, 2, so, l);
			in.ap[1] = tmk_ap(&t, 1, ISA_DT_F32, 2, su, l);
			in.ap[2] = tmk_ap(&t, 2, ISA_DT_S64, 1, si, l);
			float want[37];
			for (uint64_t n = 0; n < N; n++) {
				uint64_t io[2] = { n, 0 };
				want[n] = 0.5f + (float)n / 8;
				memcpy(telem(&t, &in.ap[0], io), &want[n], 4);
			}
			for (uint64_t m = 0; m < M; m++) {
				uint64_t iu[2] = { m, 0 };
				/* values near 1 keep the products finite; a NaN for MAX/MIN */
				float u = m == 1234 ? NAN : 1.0f + (float)((m * 7919) % 101) / 1000.0f;
				int64_t iv = (int64_t)((m * 31) % 45) - 4; /* -4..40: some out of range */
				memcpy(telem(&t, &in.ap[1], iu), &u, 4);
				tseti(ISA_DT_S64, telem(&t, &in.ap[2], &m), iv);
				if (iv < 0 || iv >= (int64_t)N)
					continue;
				float *w = &want[iv];
				*w = ops[q] == ISA_RED_SUM ? *w + u : ops[q] == ISA_RED_PROD ? *w * u
				   : ops[q] == ISA_RED_MAX ? (*w != *w ? *w : u != u ? u : *w > u ? *w : u)
				   : (*w != *w ? *w : u != u ? u : *w < u ? *w : u);
			}
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_GPSIMD, 0, &job), FWSIM_OK);
			for (uint64_t n = 0; n < N; n++) {
				uint64_t io[2] = { n, 0 };
				float got;
				memcpy(&got, telem(&t, &in.ap[0], io), 4);
				ck_assert_msg(!memcmp(&got, &want[n], 4), "op %u layout %d row %llu: %a, want %a",
					      ops[q], lay, (unsigned long long)n, got, want[n]);
			}
			tmem_free(&t);
		}
}
END_TEST

/* SCATTER MAX and MIN of floats over zeros of both signs: each table
 * element combined with its updates in order, bit for bit t_fmax/t_fmin of
 * (table, update): +0 above -0 whichever is the table's, NaN from either
 * with the table's bits when both are NaN. f32 rows of one element (their
 * own loop) and of five, bf16 rows of five. */
START_TEST(test_scatter_minmax_signed_zeros_ieee)
{
	static const struct { uint32_t dt; uint64_t R; } cases[3] = {
		{ ISA_DT_F32, 1 }, { ISA_DT_F32, 5 }, { ISA_DT_BF16, 5 },
	};
	for (int max = 0; max < 2; max++)
		for (int c = 0; c < 3; c++) {
			uint32_t dt = cases[c].dt;
			uint64_t N = 8, M = 40, R = cases[c].R;
			uint64_t so[2] = { N, R }, su[2] = { M, R }, si[1] = { M };
			tmem_t t;
			tmem_init(&t);
			isa_insn_t in = isa_insn_init(ISA_OP_SCATTER, max ? ISA_RED_MAX : ISA_RED_MIN);
			in.n_ap = 3;
			in.ap[0] = tmk_ap(&t, 0, dt, 2, so, L_CONTIG);
			in.ap[1] = tmk_ap(&t, 1, dt, 2, su, L_CONTIG);
			in.ap[2] = tmk_ap(&t, 2, ISA_DT_S32, 1, si, L_CONTIG);
			float want[8][5];
			for (uint64_t q = 0; q < N * R + M * R; q++) {
				/* the table's elements, then the updates' */
				int upd = q >= N * R;
				uint64_t f = upd ? q - N * R : q, idx[2] = { f / R, f % R };
				float v = ((f * 7 + f / 3) >> 1) & 1 ? -0.0f : 0.0f;
				/* f32 column 0: the last two updates are NaNs, into
				 * row 6 (holding +0) and row 7 (holding another NaN) */
				if (dt == ISA_DT_F32 && idx[1] == 0) {
					if (!upd && idx[0] >= N - 2)
						v = idx[0] == N - 1 ? ns_bits_f32(0x7fc00011u) : 0.0f;
					if (upd && idx[0] >= M - 2)
						v = ns_bits_f32(0x7fc00022u);
				}
				uint32_t u = ns_f32_bits(v);
				uint8_t *p = telem(&t, &in.ap[upd], idx);
				if (dt == ISA_DT_F32)
					memcpy(p, &u, 4);
				else
					*(uint16_t *)(void *)p = (uint16_t)(u >> 16);
				if (upd) {
					float *w = &want[idx[0] % N][idx[1]];
					*w = max ? t_fmax(*w, v) : t_fmin(*w, v);
				} else {
					want[idx[0]][idx[1]] = v;
				}
			}
			for (uint64_t m = 0; m < M; m++)
				tseti(ISA_DT_S32, telem(&t, &in.ap[2], &m), (int64_t)(m % N));
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_GPSIMD, 0, &job), FWSIM_OK);
			for (uint64_t n = 0; n < N; n++)
				for (uint64_t r = 0; r < R; r++) {
					uint64_t io[2] = { n, r };
					const uint8_t *p = telem(&t, &in.ap[0], io);
					uint32_t got = dt == ISA_DT_F32 ? *(const uint32_t *)(const void *)p
								   : (uint32_t)*(const uint16_t *)(const void *)p << 16;
					ck_assert_msg(got == ns_f32_bits(want[n][r]),
						      "%s %s R %llu [%llu, %llu]: 0x%08x, want 0x%08x",
						      max ? "max" : "min", isa_dtype_name(dt), (unsigned long long)R,
						      (unsigned long long)n, (unsigned long long)r, got,
						      ns_f32_bits(want[n][r]));
				}
			tmem_free(&t);
		}
}
END_TEST

/* ---- RNG ---- */
static void philox_ref(uint64_t key, uint64_t ctr, uint32_t out[4])
{
	uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
	uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
	for (int r = 0; r < 10; r++) {
		uint64_t p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
		c0 = n0; c1 = n1; c2 = n2; c3 = n3;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

START_TEST(test_rng_philox_known_answer_and_state)
{
	/* Random123 known-answer test: philox4x32_10, ctr = 0, key = 0 */
	uint32_t o[4];
	philox_ref(0, 0, o);
	ck_assert_uint_eq(o[0], 0x6627e8d5u);
	ck_assert_uint_eq(o[1], 0xe169c58du);
	ck_assert_uint_eq(o[2], 0xbc57ac4cu);
	ck_assert_uint_eq(o[3], 0x9b00dbd8u);
	for (int dtc = 0; dtc < 2; dtc++) {
		uint32_t dt = dtc ? ISA_DT_U64 : ISA_DT_U32;
		tmem_t t;
		tmem_init(&t);
		uint64_t shape[2] = { 7, 5 }, s2[1] = { 2 };
		isa_insn_t in = isa_insn_init(ISA_OP_RNG, 0);
		in.n_ap = 3;
		in.ap[0] = tmk_ap(&t, 0, dt, 2, shape, dtc ? L_TRANSPOSED : L_CONTIG);
		in.ap[1] = tmk_ap(&t, 1, ISA_DT_U64, 1, s2, L_CONTIG);
		in.ap[2] = in.ap[1]; /* in-place state update */
		uint64_t state[2] = { 0x123456789abcdefull, 41 };
		memcpy(tmem_ptr(&t, 1, in.ap[1].offset), state, 16);
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_GPSIMD, 0, &job), FWSIM_OK);
		uint64_t idx[2];
		for (uint64_t f = 0; f < 35; f++) {
			tunflat(f, 2, shape, idx);
			uint64_t per = dtc ? 2 : 4;
			philox_ref(state[0], state[1] + f / per, o);
			uint64_t w = dtc ? ((uint64_t)o[2 * (f % 2)] | (uint64_t)o[2 * (f % 2) + 1] << 32) : o[f % 4];
			ck_assert_uint_eq((uint64_t)tgeti(dt, telem(&t, &in.ap[0], idx)) & (dtc ? UINT64_MAX : 0xffffffffu), w);
		}
		uint64_t ns[2];
		memcpy(ns, tmem_ptr(&t, 1, in.ap[1].offset), 16);
		ck_assert_uint_eq(ns[0], state[0]);
		ck_assert_uint_eq(ns[1], state[1] + (dtc ? 18 : 9));
		tmem_free(&t);
	}
}
END_TEST

static Suite *tensor_suite(void)
{
	Suite *s = suite_create("fwsim-tensor");
	TCase *tc = tcase_create("tensor");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_reduce_ops_dtypes_axes, 0, ISA_RED_ASSIGN);
	tcase_add_test(tc, test_reduce_fold_rows_as_blocks);
	tcase_add_test(tc, test_matmul_f32_layouts_batch_accumulate);
	tcase_add_test(tc, test_matmul_half_and_int);
	tcase_add_test(tc, test_matmul_transposed_output_nan_record);
	tcase_add_test(tc, test_matmul_subnormals_flush_to_zero);
	tcase_add_test(tc, test_reduce_in_pieces_matches_reference);
	tcase_add_test(tc, test_reduce_f32_sum_order_bit_exact);
	tcase_add_test(tc, test_reduce_f32_short_rows_bit_exact);
	tcase_add_test(tc, test_reduce_minmax_rows_bit_exact);
	tcase_add_test(tc, test_reduce_minmax_signed_zeros_ieee);
	tcase_add_test(tc, test_reduce_window_bit_exact);
	tcase_add_test(tc, test_matmul_tiled_matches_reference);
	tcase_add_test(tc, test_matmul_thin_products_fma_chain);
	tcase_add_test(tc, test_matmul_keeps_the_callers_openmp_setting);
	tcase_add_test(tc, test_host_scratch_bounded_for_stride0_operands);
	tcase_add_test(tc, test_iota_every_dtype_and_dim);
	tcase_add_test(tc, test_gather_clamps_indices);
	tcase_add_test(tc, test_scatter_combiners_skip_out_of_range);
	tcase_add_test(tc, test_scatter_f32_elements_in_order);
	tcase_add_test(tc, test_scatter_minmax_signed_zeros_ieee);
	tcase_add_test(tc, test_rng_philox_known_answer_and_state);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tensor_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
