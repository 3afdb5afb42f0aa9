/* Same-dtype COPY between layouts that stream along different dims (transposes, rank 3-4 permutations, broadcast sources): the tiled path against a naive per-element reference, its NaN record, its deadline. */
#include "fwsim_test.h"

/* A copy case: dst is row-major over shape; the source is row-major over
 * the physical order perm (perm[p]: the logical dim of physical dim p), with
 * stride 0 along the logical dims of bcast (their source extent is 1). */
typedef struct cpcase {
	uint32_t rank;
	uint64_t shape[4];
	uint32_t perm[4];
	uint32_t bcast;
} cpcase_t;

static const cpcase_t cp_cases[] = {
	{ 2, { 64, 64 }, { 1, 0 }, 0 },
	{ 2, { 256, 192 }, { 1, 0 }, 0 },
	{ 2, { 37, 61 }, { 1, 0 }, 0 },      /* not a multiple of any tile */
	{ 2, { 61, 45 }, { 1, 0 }, 0 },      /* edge tiles of 29 and 13: blocks moved back */
	{ 2, { 5, 130 }, { 1, 0 }, 0 },
	{ 2, { 129, 4 }, { 1, 0 }, 0 },
	{ 3, { 3, 33, 70 }, { 0, 2, 1 }, 0 },  /* batched transpose */
	{ 3, { 17, 9, 40 }, { 2, 0, 1 }, 0 },
	{ 3, { 6, 35, 33 }, { 1, 2, 0 }, 0 },
	{ 4, { 2, 7, 9, 34 }, { 0, 3, 1, 2 }, 0 }, /* NCHW -> NHWC */
	{ 4, { 3, 34, 5, 7 }, { 0, 2, 3, 1 }, 0 }, /* NHWC -> NCHW */
	{ 4, { 5, 4, 33, 6 }, { 3, 1, 0, 2 }, 0 },
	{ 3, { 4, 40, 36 }, { 0, 2, 1 }, 1u << 0 }, /* one matrix, broadcast */
	{ 3, { 40, 5, 36 }, { 1, 2, 0 }, 1u << 1 },
	{ 2, { 40, 36 }, { 1, 0 }, 1u << 1 },       /* rows are fills */
	{ 3, { 3, 300, 3 }, { 1, 0, 2 }, 0 },      /* short rows: a tap gather */
	{ 4, { 2, 5, 70, 2 }, { 0, 2, 1, 3 }, 0 },
};

/* The source AP of c in region 1 of t, filled with random bytes. */
static isa_ap_t cp_src(tmem_t *t, const cpcase_t *c, uint32_t dt, uint64_t *seed)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = 1;
	ap.dtype = (uint8_t)dt;
	ap.rank = (uint8_t)c->rank;
	int64_t s = 1;
	for (int p = (int)c->rank - 1; p >= 0; p--) {
		uint32_t q = c->perm[p];
		ap.shape[q] = c->shape[q];
		ap.stride[q] = c->bcast >> q & 1 ? 0 : s;
		s *= c->bcast >> q & 1 ? 1 : (int64_t)c->shape[q];
	}
	uint64_t bytes = (uint64_t)s * isa_dtype_size(dt);
	ap.offset = tmem_alloc(t, 1, bytes);
	uint8_t *p = tmem_ptr(t, 1, ap.offset);
	for (uint64_t i = 0; i < bytes; i++)
		p[i] = (uint8_t)(trand(seed) >> 24);
	return ap;
}

START_TEST(test_copy_permutations_match_naive_reference)
{
	static const uint32_t dts[] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_S32,
					ISA_DT_S64, ISA_DT_U8 };
	uint64_t seed = 77;
	for (size_t ci = 0; ci < sizeof(cp_cases) / sizeof(cp_cases[0]); ci++)
		for (size_t di = 0; di < sizeof(dts) / sizeof(dts[0]); di++) {
			const cpcase_t *c = &cp_cases[ci];
			uint32_t dt = dts[di];
			size_t es = isa_dtype_size(dt);
			tmem_t t;
			tmem_init(&t);
			isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
			in.n_ap = 2;
			in.ap[1] = cp_src(&t, c, dt, &seed);
			uint64_t n = tnumel(c->rank, c->shape);
			in.ap[0] = isa_ap_contig(0, tmem_alloc(&t, 0, n * es), dt, c->rank, c->shape);
			/* the bytes right after the output: a block that runs past a
			 * tile's edge would write them */
			uint8_t *tail = tmem_ptr(&t, 0, tmem_alloc(&t, 0, 4096));
			memset(tail, 0xa5, 4096);
			fwsim_job_t job;
			ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, 0, &job), FWSIM_OK);
			for (size_t b = 0; b < 4096; b++)
				T_CHECK(tail[b] == 0xa5, "case %zu %s: byte %zu past the output written",
					ci, isa_dtype_name(dt), b);
			uint64_t idx[4];
			for (uint64_t f = 0; f < n; f++) {
				tunflat(f, c->rank, c->shape, idx);
				const uint8_t *got = telem(&t, &in.ap[0], idx);
				const uint8_t *want = telem(&t, &in.ap[1], idx);
				T_CHECK(memcmp(got, want, es) == 0, "case %zu %s: element %llu differs",
					ci, isa_dtype_name(dt), (unsigned long long)f);
			}
			ck_assert(tmem_guards_intact(&t));
			tmem_free(&t);
		}
}
END_TEST

/* NaNs met in tile order (one in a later row of the first tile, one in an
 * earlier row of the next) are counted once each and the record names the
 * smallest row-major index, as for any output. */
START_TEST(test_copy_transpose_nan_record_is_smallest_index)
{
	static const uint32_t dts[] = { ISA_DT_F32, ISA_DT_BF16 };
	for (size_t di = 0; di < 2; di++) {
		uint32_t dt = dts[di];
		size_t es = isa_dtype_size(dt);
		tmem_t t;
		tmem_init(&t);
		uint64_t sh[2] = { 100, 100 };
		isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
		in.n_ap = 2;
		in.ap[0] = isa_ap_contig(0, 0, dt, 2, sh);
		in.ap[1] = tmk_ap(&t, 1, dt, 2, sh, L_TRANSPOSED);
		uint64_t idx[2];
		for (uint64_t f = 0; f < 100 * 100; f++) {
			tunflat(f, 2, sh, idx);
			tset(dt, telem(&t, &in.ap[1], idx), (double)(f % 97) - 48);
		}
		uint64_t bad[2][2] = { { 20, 5 }, { 3, 70 } }; /* flat 2005 and 370 */
		for (int b = 0; b < 2; b++)
			tset(dt, telem(&t, &in.ap[1], bad[b]), NAN);
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job),
				 FWSIM_NUM_ERR);
		ck_assert_uint_eq(job.error.count, 2);
		ck_assert_uint_eq(job.error.first_index, 370);
		for (uint64_t f = 0; f < 100 * 100; f++) {
			tunflat(f, 2, sh, idx);
			T_CHECK(memcmp(telem(&t, &in.ap[0], idx), telem(&t, &in.ap[1], idx), es) == 0,
				"%s: element %llu differs", isa_dtype_name(dt), (unsigned long long)f);
		}
		tmem_free(&t);
	}
}
END_TEST

/* One COPY of short f32 rows: the output dense over sh (every element 2
 * apart when spaced is 1; its rows one element apart when 2, as an im2col's
 * windows clipped at an image's edge are written), the input seen through strides st (elements) from
 * element off of len floats in region 1, filled with i % mod - 50. Two NaNs
 * at input indices bad[0] and bad[1]: the NaN record must count 2 with the
 * first at flat index first, and every element must be the input's. */
static void cp_short_rows_case(uint32_t rank, const uint64_t *sh, const int64_t *st, uint64_t len,
			       uint64_t off, uint64_t mod, const uint64_t bad[2][4], uint64_t first,
			       int spaced, int id)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t n = tnumel(rank, sh);
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, tmem_alloc(&t, 0, 2 * n * 4), ISA_DT_F32, rank, sh);
	if (spaced == 1)
		for (uint32_t q = 0; q < rank; q++)
			in.ap[0].stride[q] *= 2;
	if (spaced == 2) {
		int64_t sd = (int64_t)sh[rank - 1] + 1;
		for (int q = (int)rank - 2; q >= 0; q--) {
			in.ap[0].stride[q] = sd;
			sd *= (int64_t)sh[q];
		}
	}
	isa_ap_t *a = &in.ap[1];
	memset(a, 0, sizeof(*a));
	a->region = 1;
	a->dtype = ISA_DT_F32;
	a->rank = (uint8_t)rank;
	for (uint32_t q = 0; q < rank; q++) {
		a->shape[q] = sh[q];
		a->stride[q] = st[q];
	}
	uint64_t base = tmem_alloc(&t, 1, len * 4);
	a->offset = base + off * 4;
	float *src = (float *)(void *)tmem_ptr(&t, 1, base);
	for (uint64_t i = 0; i < len; i++)
		src[i] = (float)(i % mod) - 50.0f;
	for (int b = 0; b < 2; b++)
		tset(ISA_DT_F32, telem(&t, a, bad[b]), NAN);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 2);
	ck_assert_uint_eq(job.error.first_index, first);
	uint64_t idx[4] = { 0 };
	for (uint64_t f = 0; f < n; f++) {
		tunflat(f, rank, sh, idx);
		T_CHECK(memcmp(telem(&t, &in.ap[0], idx), telem(&t, a, idx), 4) == 0,
			"case %d: element %llu differs", id, (unsigned long long)f);
	}
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}

/* Short rows (3 elements) read backwards, as a reversed 3x3 kernel is laid
 * out: the 2-D blocks of the short-row path against the reference, to a
 * dense output and to one with every element 2 apart (scanned row by row);
 * two NaNs, the later one in memory first in flat order. */
START_TEST(test_copy_short_rows_reversed_and_nan)
{
	/* [3, 20, 30, 3]: blocks of two dims; [3, 20, 3, 3]: of three (a 3 x 3
	 * block is under COPY_SHORT_BLOCK bytes), as an im2col of small images */
	for (int spaced = 0; spaced < 4; spaced++) {
		int small = spaced >= 2;
		uint64_t w = small ? 3 : 30;
		uint64_t sh[4] = { 3, 20, w, 3 };
		/* source [kh reversed, 20, w, kw reversed] over a [20][w][3][3]
		 * block; the small case's rows of w x 9 padded, so that dims 1
		 * and 2 do not merge into one of 60 */
		int64_t pitch = (int64_t)w * 9 + (small ? 5 : 0);
		int64_t st[4] = { -3, pitch, 9, -1 };
		uint64_t bad[2][4] = { { 2, 15, small ? 1 : 4, 1 }, { 1, 3, small ? 2 : 20, 0 } };
		/* element [0,0,0,0] is the block's 9th */
		cp_short_rows_case(4, sh, st, 20 * (uint64_t)pitch, 8, 101, bad,
				   ((1 * 20 + 3) * w + bad[1][2]) * 3 + 0, spaced % 2, spaced);
	}
}
END_TEST

/* Short rows whose input is transposed above them (COPY_BAND), as a 3x3
 * kernel is laid out for a convolution's GEMMs: [A, B, 9] from [B][A][9]
 * with the taps reversed (an input gradient's), [3, A, B, 3] from
 * [B][A][3][3] with both kernel dims reversed, and [3, B, 3] from [B][3][3]
 * (a forward's, kernel rows outermost: five rows of 3 along B to a gather). Against the reference, to a dense
 * output and to one with every element 2 apart, with a short last band; two
 * NaNs, the later one in memory first in flat order. */
START_TEST(test_copy_short_rows_transposed)
{
	const uint64_t A = 37, B = 70;
	/* the source: rows of A x 9 (padded by 3) per index of B, or of 9 */
	const int64_t pitch = (int64_t)A * 9 + 3;
	static const uint64_t bad[3][2][4] = { { { 30, 2, 4 }, { 5, 60, 7 } },
					       { { 2, 30, 2, 1 }, { 1, 5, 60, 0 } },
					       { { 2, 10, 1 }, { 0, 50, 2 } } };
	const uint64_t first[3] = { (5 * B + 60) * 9 + 7, ((1 * A + 5) * B + 60) * 3, 50 * 3 + 2 };
	const uint64_t sh[3][4] = { { A, B, 9 }, { 3, A, B, 3 }, { 3, B, 3 } };
	const int64_t st[3][4] = { { 9, pitch, -1 }, { -3, 9, pitch, -1 }, { 3, 9, 1 } };
	for (int v = 0; v < 6; v++) {
		int kind = v / 2;
		/* element 0: the last of the first row's taps when they are
		 * reversed; the first NaN in flat order lies later in memory than
		 * the second */
		cp_short_rows_case(kind == 1 ? 4 : 3, sh[kind], st[kind],
				   B * (uint64_t)(kind == 2 ? 9 : pitch), kind == 2 ? 0 : 8, 103,
				   bad[kind], first[kind], v % 2, v);
	}
}
END_TEST

/* Rows read at stride 2, as a max-pool's windows and a strided
 * convolution's im2col are gathered (each row's values every other element
 * of an input row): rows of 16 (two loads), 7 (one), 9 (the second load one
 * lane), and 32 and 45 (pieces of 16, the last whole or of 13), to a dense
 * and a spaced output, against the reference; two NaNs, the later one in
 * memory first in flat order, one the last element of a row. */
START_TEST(test_copy_short_rows_stride2)
{
	static const uint64_t ns[5] = { 16, 7, 9, 32, 45 };
	for (int v = 0; v < 10; v++) {
		uint64_t n = ns[v / 2];
		/* [kw, plane, ho, wo] over planes of 5 rows pairs of 2n + 2 */
		int64_t row = 2 * (int64_t)n + 2, pitch = 5 * 2 * row + 3;
		uint64_t sh[4] = { 2, 20, 5, n };
		int64_t st[4] = { 1, pitch, 2 * row, 2 };
		uint64_t bad[2][4] = { { 0, 10, 4, 0 }, { 1, 3, 2, n - 1 } };
		cp_short_rows_case(4, sh, st, 20 * (uint64_t)pitch + 8, 8, 97, bad,
				   (10 * 5 + 4) * n, v % 2, v);
	}
}
END_TEST

/* 2-D windows gathered into runs, as the im2col of a convolution copies
 * them (3x3 windows of 8x8 planes, [f][c][y0][y1] from [f][c][h][w]): rows
 * of 3 at a pitch of 8 (two loads and a permute), of 16 (a gather), a window
 * of 2x3 and of 3x2 as at an image's edge, a 4x5 window (three rows to a
 * vector, then one), 8 and 5 rows of 7 (two to a vector, the last one alone)
 * and 7 rows of 5 at a pitch of 16 (three to a gather, then one), to a dense
 * output and to rows one apart (a masked store with gaps); against the
 * reference, two NaNs, the later one in memory first in flat order, one the
 * last of its window. */
START_TEST(test_copy_short_rows_windows)
{
	static const uint64_t win[8][2] = { { 3, 3 }, { 3, 3 }, { 2, 3 }, { 3, 2 },
					    { 4, 5 }, { 8, 7 }, { 5, 7 }, { 7, 5 } };
	static const int64_t pitch[8] = { 8, 16, 8, 8, 8, 8, 8, 16 };
	for (int v = 0; v < 16; v++) {
		int k = v / 2;
		uint64_t sh[4] = { 3, 40, win[k][0], win[k][1] };
		int64_t p = pitch[k], plane = p * 8 + 3;
		int64_t st[4] = { 40 * plane + 5, plane, p, 1 };
		uint64_t bad[2][4] = { { 2, 7, win[k][0] - 1, win[k][1] - 1 }, { 0, 30, 1, 0 } };
		uint64_t first = ((0 * 40 + 30) * win[k][0] + 1) * win[k][1];
		cp_short_rows_case(4, sh, st, 3 * (uint64_t)st[0] + 8, 8, 89, bad, first,
				   v % 2 ? 2 : 0, v);
	}
}
END_TEST

/* The COPY in alone on the DMA engine, of far more elements than 200 ms
 * allow: it must stop at that deadline, within 20 s of CPU. */
static void cp_stops_at_deadline(tmem_t *t, const isa_insn_t *in)
{
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_DMA] = in };
	uint32_t n[ISA_ENGINE_COUNT] = { [ISA_ENGINE_DMA] = 1 };
	fwsim_job_t job;
	uint64_t t0 = tnow_ns(), c0 = tcpu_ns();
	ck_assert_int_eq(trun_prog(t, NULL, s, n, 0, t0 + 200000000ull, &job), FWSIM_TIMEOUT);
	uint64_t cpu = (tcpu_ns() - c0) / 1000000ull;
	ck_assert_msg(cpu < 20000, "%llu ms of CPU", (unsigned long long)cpu);
	ck_assert_msg(strstr(job.error.message, "deadline passed"), "%s", job.error.message);
}

/* Rows of unit stride on both sides, too long for the short-row path: an
 * im2col's tap-shifted rows of 55 of 56-float image rows, and rows of 700
 * (two blocks of the row path, the second one's flat offset 512 on). Each is
 * tested for NaN as it is copied; the record must still count both NaNs and
 * name the first in flat order, to a dense output, to rows one apart, and to
 * one with every element 2 apart (the staged path), and an in-place COPY
 * (the output aliasing the input element for element) must keep its values
 * and its record. */
START_TEST(test_copy_unit_rows_nan_tested_in_the_copy)
{
	for (int v = 0; v < 6; v++) {
		int im2col = v < 3;
		uint64_t w = im2col ? 55 : 700;
		int64_t pitch = im2col ? 56 : 701;
		uint64_t sh[3] = { 3, 10, w };
		int64_t st[3] = { 10 * pitch, pitch, 1 };
		uint64_t bad[2][4] = { { 2, 3, w - 1 }, { 1, 9, im2col ? 20 : 600 } };
		uint64_t first = (1 * 10 + 9) * w + bad[1][2];
		cp_short_rows_case(3, sh, st, 30 * (uint64_t)pitch + 8, im2col ? 1 : 0, 97, bad, first,
				   v % 3, v);
	}
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[2] = { 4, 300 };
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, tmem_alloc(&t, 0, 1200 * 4), ISA_DT_F32, 2, sh);
	in.ap[1] = in.ap[0];
	float *x = (float *)(void *)tmem_ptr(&t, 0, in.ap[0].offset);
	for (int i = 0; i < 1200; i++)
		x[i] = (float)i;
	x[777] = NAN;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.count, 1);
	ck_assert_uint_eq(job.error.first_index, 777);
	for (int i = 0; i < 1200; i++)
		T_CHECK(i == 777 ? isnan(x[i]) : x[i] == (float)i, "in place: element %d changed", i);
	tmem_free(&t);
}
END_TEST

/* A COPY of one value (the input all stride 0) into strided regions, as an
 * im2col buffer's padding is zeroed: border rows of 8 floats of
 * [4][3][10][8], one column of it (rows of one element at a pitch of 8), a
 * rank-1 run, and an i32 value; the elements around each region keep their
 * values. Also: a fill of 2^39 elements (stride 0 along the outer dim)
 * stops at its deadline. */
START_TEST(test_copy_fill_strided_regions)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t full[4] = { 4, 3, 10, 8 };
	float *d = (float *)(void *)tmem_ptr(&t, 0, tmem_alloc(&t, 0, 960 * 4));
	float *v = (float *)(void *)tmem_ptr(&t, 1, tmem_alloc(&t, 1, 4));
	/* regions: rows 0 and 9 (full width), column 7 of rows 2..8, all of
	 * kernel column 1 */
	static const struct { uint64_t sh[4], at[4]; } reg[] = {
		{ { 4, 3, 1, 8 }, { 0, 0, 0, 0 } },
		{ { 4, 3, 1, 8 }, { 0, 0, 9, 0 } },
		{ { 4, 3, 7, 1 }, { 0, 0, 2, 7 } },
		{ { 4, 1, 10, 8 }, { 0, 1, 0, 0 } },
	};
	for (int c = 0; c < 4; c++) {
		for (int i = 0; i < 960; i++)
			d[i] = (float)i;
		*v = c == 0 ? 0.0f : 1.5f;
		isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
		in.n_ap = 2;
		in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 4, full);
		in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 4, reg[c].sh);
		for (int q = 0; q < 4; q++) {
			in.ap[0].shape[q] = reg[c].sh[q];
			in.ap[0].offset += reg[c].at[q] * (uint64_t)in.ap[0].stride[q] * 4;
			in.ap[1].stride[q] = 0;
		}
		in.ap[1].offset = (uint64_t)((uint8_t *)v - tmem_ptr(&t, 1, 0));
		fwsim_job_t job;
		ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
		for (uint64_t i = 0; i < 960; i++) {
			uint64_t ix[4] = { i / 240, i / 80 % 3, i / 8 % 10, i % 8 };
			bool in_reg = true;
			for (int q = 0; q < 4; q++)
				in_reg &= ix[q] >= reg[c].at[q] && ix[q] < reg[c].at[q] + reg[c].sh[q];
			T_CHECK(d[i] == (in_reg ? *v : (float)i), "region %d: element %llu is %g", c,
				(unsigned long long)i, (double)d[i]);
		}
	}
	/* rank 1, i32 */
	uint64_t n1[1] = { 700 };
	int32_t *di = (int32_t *)(void *)d;
	for (int i = 0; i < 960; i++)
		di[i] = -1;
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, 8, ISA_DT_S32, 1, n1);
	in.ap[1] = isa_ap_contig(1, (uint64_t)((uint8_t *)v - tmem_ptr(&t, 1, 0)), ISA_DT_S32, 1, n1);
	in.ap[1].stride[0] = 0;
	memcpy(v, &(int32_t){ 77 }, 4);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &in, ISA_ENGINE_DMA, FWSIM_JOB_CHECK_NAN, &job), FWSIM_OK);
	for (int i = 0; i < 960; i++)
		T_CHECK(di[i] == (i >= 2 && i < 702 ? 77 : -1), "i32: element %d is %d", i, di[i]);
	ck_assert(tmem_guards_intact(&t));
	/* 2^39 elements at its deadline */
	uint64_t huge[2] = { 1ull << 30, 512 };
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 2, huge);
	in.ap[0].stride[0] = 0;
	in.ap[1] = isa_ap_contig(1, (uint64_t)((uint8_t *)v - tmem_ptr(&t, 1, 0)), ISA_DT_F32, 2, huge);
	in.ap[1].stride[0] = in.ap[1].stride[1] = 0;
	*v = 0.0f;
	cp_stops_at_deadline(&t, &in);
	tmem_free(&t);
}
END_TEST

/* A transposing copy of 2^40 elements through stride 0 (32x32 transposes
 * of the same 4 KiB, forever) stops at its deadline. */
START_TEST(test_copy_transpose_stops_at_deadline)
{
	tmem_t t;
	tmem_init(&t);
	uint64_t sh[4] = { 1u << 15, 1u << 15, 32, 32 };
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = isa_ap_contig(0, 0, ISA_DT_F32, 4, sh);
	in.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 4, sh);
	in.ap[0].stride[0] = in.ap[0].stride[1] = in.ap[1].stride[0] = in.ap[1].stride[1] = 0;
	in.ap[1].stride[2] = 1;
	in.ap[1].stride[3] = 32;
	cp_stops_at_deadline(&t, &in);
	tmem_free(&t);
}
END_TEST

Suite *copy_suite(void);
Suite *copy_suite(void)
{
	Suite *s = suite_create("fwsim-copy");
	TCase *tc = tcase_create("copy");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_copy_permutations_match_naive_reference);
	tcase_add_test(tc, test_copy_transpose_nan_record_is_smallest_index);
	tcase_add_test(tc, test_copy_transpose_stops_at_deadline);
	tcase_add_test(tc, test_copy_short_rows_reversed_and_nan);
	tcase_add_test(tc, test_copy_short_rows_transposed);
	tcase_add_test(tc, test_copy_short_rows_stride2);
	tcase_add_test(tc, test_copy_short_rows_windows);
	tcase_add_test(tc, test_copy_unit_rows_nan_tested_in_the_copy);
	tcase_add_test(tc, test_copy_fill_strided_regions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(copy_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
