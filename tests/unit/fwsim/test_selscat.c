/* SELSCAT (ISA 1.5) against a reference walk written out here: windows (sizes, strides, dilation, padding past the operand), layouts, every select and combiner, ties and NaN, f32, bf16 and f16, the AVX-512, AVX2 and scalar walks, 1 and 2 threads, NaN records, deadlines, out-of-window operands. */
#include "fwsim_test.h"

typedef struct sspec {
	uint64_t N, C, X[2], K[2], S[2], D[2];
	int64_t P[2];
	uint64_t Y[2];
} sspec_t;

/* Window shapes: a max-pool (3x3, stride 2, padding 1) over a plane 33 wide
 * (runs of 16 windows and a short one), 2x2 without padding, dilation 2
 * with padding on one side, windows wider than their stride (overlapping)
 * and padding past the kernel (windows with no position inside). */
static const sspec_t specs[] = {
	{ .N = 2, .C = 3, .X = { 33, 33 }, .K = { 3, 3 }, .S = { 2, 2 }, .D = { 1, 1 }, .P = { 1, 1 },
	  .Y = { 17, 17 } },
	{ .N = 1, .C = 4, .X = { 8, 20 }, .K = { 2, 2 }, .S = { 2, 2 }, .D = { 1, 1 }, .P = { 0, 0 },
	  .Y = { 4, 10 } },
	{ .N = 2, .C = 2, .X = { 9, 40 }, .K = { 3, 2 }, .S = { 1, 3 }, .D = { 2, 2 }, .P = { 2, 0 },
	  .Y = { 7, 13 } },
	{ .N = 1, .C = 2, .X = { 6, 30 }, .K = { 4, 5 }, .S = { 1, 1 }, .D = { 1, 1 }, .P = { 3, 6 },
	  .Y = { 9, 34 } },
};
#define N_SPECS (sizeof(specs) / sizeof(specs[0]))

typedef struct sjob {
	tmem_t t;
	isa_insn_t in;
} sjob_t;

/* v rounded to dt (f32, bf16 or f16), to nearest even */
static float sround(uint32_t dt, float v)
{
	return dt == ISA_DT_BF16 ? ns_bf16_to_f32(ns_f32_to_bf16(v))
	     : dt == ISA_DT_F16 ? ns_f16_to_f32(ns_f32_to_f16(v)) : v;
}

static float sget(sjob_t *j, int a, uint64_t n, uint64_t c, uint64_t y0, uint64_t y1)
{
	uint64_t idx[4] = { n, c, y0, y1 };
	const uint8_t *p = telem(&j->t, &j->in.ap[a], idx);
	uint32_t dt = j->in.ap[a].dtype;
	if (dt == ISA_DT_F32) {
		float v;
		memcpy(&v, p, 4);
		return v;
	}
	uint16_t h;
	memcpy(&h, p, 2);
	return dt == ISA_DT_BF16 ? ns_bf16_to_f32(h) : ns_f16_to_f32(h);
}

/* stores v, which dt holds exactly */
static void sset(sjob_t *j, int a, uint64_t n, uint64_t c, uint64_t y0, uint64_t y1, float v)
{
	uint64_t idx[4] = { n, c, y0, y1 };
	uint8_t *p = telem(&j->t, &j->in.ap[a], idx);
	uint32_t dt = j->in.ap[a].dtype;
	if (dt == ISA_DT_F32) {
		memcpy(p, &v, 4);
		return;
	}
	uint16_t h = dt == ISA_DT_BF16 ? ns_f32_to_bf16(v) : ns_f32_to_f16(v);
	memcpy(p, &h, 2);
}

/* The instruction for spec s in layout l (0 NCHW, 1 channels innermost via
 * transposed strides), operand values from seed with ties (0..4) and, when
 * nan, a NaN every 37 elements; source values distinct. */
static void s_build(sjob_t *j, const sspec_t *s, int l, uint32_t dt, uint32_t cmp, uint32_t op,
		    uint64_t seed, bool nan)
{
	tmem_init(&j->t);
	uint64_t xo[4] = { s->N, s->C, s->X[0], s->X[1] }, ys[4] = { s->N, s->C, s->Y[0], s->Y[1] };
	j->in = isa_insn_init(ISA_OP_SELSCAT, op);
	j->in.param = cmp;
	j->in.n_ap = 4;
	tlayout_t lay = l ? L_TRANSPOSED : L_CONTIG;
	j->in.ap[0] = tmk_ap(&j->t, 0, dt, 4, xo, lay);
	j->in.ap[1] = tmk_ap(&j->t, 1, dt, 4, xo, lay);
	j->in.ap[2] = tmk_ap(&j->t, 2, dt, 4, ys, lay);
	int64_t K[2] = { (int64_t)s->K[0], (int64_t)s->K[1] }, S[2] = { (int64_t)s->S[0], (int64_t)s->S[1] };
	int64_t D[2] = { (int64_t)s->D[0], (int64_t)s->D[1] };
	j->in.ap[3] = isa_selscat_window(K, S, D, s->P);
	uint64_t r = seed, k = 0;
	for (uint64_t n = 0; n < s->N; n++)
		for (uint64_t c = 0; c < s->C; c++)
			for (uint64_t a = 0; a < s->X[0]; a++)
				for (uint64_t b = 0; b < s->X[1]; b++, k++) {
					sset(j, 1, n, c, a, b,
					     nan && k % 37 == 5 ? NAN : (float)(trand(&r) % 5));
					sset(j, 0, n, c, a, b, op == ISA_RED_PROD ? 1.0f : 0.5f);
				}
	k = 0;
	for (uint64_t n = 0; n < s->N; n++)
		for (uint64_t c = 0; c < s->C; c++)
			for (uint64_t a = 0; a < s->Y[0]; a++)
				for (uint64_t b = 0; b < s->Y[1]; b++, k++)
					sset(j, 2, n, c, a, b, 1.0f + (float)(k % 11) * 0.25f);
}

static bool ref_keep(uint32_t cmp, float a, float b)
{
	return cmp == ISA_ALU_CMP_GE ? a >= b : cmp == ISA_ALU_CMP_GT ? a > b
	     : cmp == ISA_ALU_CMP_LE ? a <= b : a < b;
}

static float ref_op(uint32_t op, float a, float b)
{
	return op == ISA_RED_SUM ? a + b : op == ISA_RED_PROD ? a * b
	     : op == ISA_RED_MAX ? t_fmax(a, b) : t_fmin(a, b);
}

/* The reference: ap0's values after the instruction, row-major, into want;
 * each combine in f32, rounded to the dtype. */
static void s_ref(sjob_t *j, const sspec_t *s, uint32_t cmp, uint32_t op, float *want)
{
	uint64_t X0 = s->X[0], X1 = s->X[1];
	for (uint64_t n = 0; n < s->N; n++)
		for (uint64_t c = 0; c < s->C; c++) {
			float *w = want + (n * s->C + c) * X0 * X1;
			for (uint64_t a = 0; a < X0; a++)
				for (uint64_t b = 0; b < X1; b++)
					w[a * X1 + b] = sget(j, 0, n, c, a, b);
			for (uint64_t y0 = 0; y0 < s->Y[0]; y0++)
				for (uint64_t y1 = 0; y1 < s->Y[1]; y1++) {
					int64_t best = -1;
					float bv = 0;
					for (uint64_t k0 = 0; k0 < s->K[0]; k0++)
						for (uint64_t k1 = 0; k1 < s->K[1]; k1++) {
							int64_t j0 = (int64_t)(y0 * s->S[0] + k0 * s->D[0]) - s->P[0];
							int64_t j1 = (int64_t)(y1 * s->S[1] + k1 * s->D[1]) - s->P[1];
							if (j0 < 0 || j1 < 0 || j0 >= (int64_t)X0 || j1 >= (int64_t)X1)
								continue;
							float v = sget(j, 1, n, c, (uint64_t)j0, (uint64_t)j1);
							if (best < 0 || !ref_keep(cmp, bv, v)) {
								best = j0 * (int64_t)X1 + j1;
								bv = v;
							}
						}
					if (best >= 0)
						w[best] = sround(j->in.ap[0].dtype,
								 ref_op(op, w[best], sget(j, 2, n, c, y0, y1)));
				}
		}
}

/* Every output equal to the reference's, bit for bit (a NaN to a NaN). */
static void s_compare(sjob_t *j, const sspec_t *s, const float *want, const char *what)
{
	for (uint64_t n = 0, e = 0; n < s->N; n++)
		for (uint64_t c = 0; c < s->C; c++)
			for (uint64_t a = 0; a < s->X[0]; a++)
				for (uint64_t b = 0; b < s->X[1]; b++, e++) {
					float got = sget(j, 0, n, c, a, b);
					T_CHECK(memcmp(&got, &want[e], 4) == 0 || (isnan(got) && isnan(want[e])),
						"%s: out[%llu,%llu,%llu,%llu] = %g, want %g", what,
						(unsigned long long)n, (unsigned long long)c, (unsigned long long)a,
						(unsigned long long)b, got, want[e]);
				}
	ck_assert(tmem_guards_intact(&j->t));
}

static const uint32_t selects[] = { ISA_ALU_CMP_GE, ISA_ALU_CMP_GT, ISA_ALU_CMP_LE, ISA_ALU_CMP_LT };
static const uint32_t combiners[] = { ISA_RED_SUM, ISA_RED_PROD, ISA_RED_MAX, ISA_RED_MIN };

/* Each spec, both layouts, every select with a combiner (the four in turn),
 * with and without NaN: f32 on the AVX-512, AVX2 (where the CPU has them)
 * and scalar walks, bf16 and f16 (rounded at each combine), on 1 and 2
 * threads. */
START_TEST(test_selscat_matches_reference)
{
	static float want[2 * 3 * 33 * 33];
	static const fwsim_isa_t isas[] = { FWSIM_ISA_AUTO, FWSIM_ISA_AVX2, FWSIM_ISA_SCALAR };
	static const uint32_t dts[] = { ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16 };
	for (int isa = 0; isa < 5; isa++) {
		/* f32 on each walk; then bf16 and f16 (the scalar walk only) */
		uint32_t dt = dts[isa < 3 ? 0 : isa - 2];
		fwsim_set_max_isa(isas[isa < 3 ? isa : 0]);
		for (size_t i = 0; i < N_SPECS; i++)
			for (int l = 0; l < 2; l++)
				for (size_t q = 0; q < 4; q++)
					for (int nan = 0; nan < 2; nan++) {
						const sspec_t *s = &specs[i];
						ck_assert_uint_le(s->N * s->C * s->X[0] * s->X[1],
								  sizeof(want) / sizeof(want[0]));
						sjob_t j;
						s_build(&j, s, l, dt, selects[q], combiners[(q + i) % 4], 7 + i,
							nan);
						s_ref(&j, s, selects[q], combiners[(q + i) % 4], want);
						fwsim_job_t job;
						fwsim_set_threads((uint32_t)(1 + (i + q) % 2));
						fwsim_status_t st = trun1(&j.t, &j.in, ISA_ENGINE_VECTOR, 0, &job);
						fwsim_set_threads(0);
						ck_assert_msg(st == FWSIM_OK, "%s", job.error.message);
						char what[96];
						snprintf(what, sizeof(what),
							 "%s isa %d spec %zu layout %d select %zu nan %d",
							 isa_dtype_name(dt), isa, i, l, q, nan);
						s_compare(&j, s, want, what);
						tmem_free(&j.t);
					}
	}
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}
END_TEST

/* A NaN in the source reaches the output: recorded against the instruction
 * with the first flat index and the count of bad outputs. */
START_TEST(test_selscat_nan_recorded)
{
	sjob_t j;
	s_build(&j, &specs[1], 0, ISA_DT_F32, ISA_ALU_CMP_GE, ISA_RED_SUM, 3, false);
	sset(&j, 2, 0, 2, 1, 3, NAN); /* window (1, 3) of plane c = 2 */
	static float want[1 * 4 * 8 * 20];
	s_ref(&j, &specs[1], ISA_ALU_CMP_GE, ISA_RED_SUM, want);
	uint64_t first = UINT64_MAX, count = 0;
	for (uint64_t e = 0; e < sizeof(want) / sizeof(want[0]); e++)
		if (isnan(want[e])) {
			count++;
			first = first < e ? first : e;
		}
	ck_assert_uint_eq(count, 1);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&j.t, &j.in, ISA_ENGINE_VECTOR, FWSIM_JOB_CHECK_NAN, &job), FWSIM_NUM_ERR);
	ck_assert_uint_eq(job.error.first_index, first);
	ck_assert_uint_eq(job.error.count, 1);
	ck_assert_uint_eq(job.error.is_inf, 0);
	tmem_free(&j.t);
}
END_TEST

/* A long instruction stops at its deadline, inside the instruction. */
START_TEST(test_selscat_deadline)
{
	sjob_t j;
	tmem_init(&j.t);
	/* 64 planes of 64x64 windows of 31x31 positions on a stride-0 operand:
	 * minutes of work, no memory */
	uint64_t o[4] = { 64, 1, 64, 64 };
	j.in = isa_insn_init(ISA_OP_SELSCAT, ISA_RED_SUM);
	j.in.param = ISA_ALU_CMP_GE;
	j.in.n_ap = 4;
	for (int a = 0; a < 3; a++) {
		j.in.ap[a] = isa_ap_contig((uint32_t)a, 0, ISA_DT_F32, 4, o);
		j.in.ap[a].stride[0] = 0;
	}
	int64_t K[2] = { 31, 31 }, one[2] = { 1, 1 }, P[2] = { 15, 15 };
	j.in.ap[3] = isa_selscat_window(K, one, one, P);
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = &j.in };
	uint32_t n[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
	fwsim_job_t job;
	uint64_t t0 = tcpu_ns();
	ck_assert_int_eq(trun_prog(&j.t, NULL, s, n, 0, tnow_ns() + 20000000ull, &job), FWSIM_TIMEOUT);
	ck_assert_msg(strstr(job.error.message, "selscat"), "%s", job.error.message);
	ck_assert_uint_lt(tcpu_ns() - t0, 5000000000ull);
	tmem_free(&j.t);
}
END_TEST

/* An operand past its region is refused before anything is written. */
START_TEST(test_selscat_oob_refused)
{
	sjob_t j;
	s_build(&j, &specs[1], 0, ISA_DT_F32, ISA_ALU_CMP_GE, ISA_RED_SUM, 3, false);
	float before = sget(&j, 0, 0, 0, 0, 0);
	j.in.ap[2].offset = T_REGSZ - 64;
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&j.t, &j.in, ISA_ENGINE_VECTOR, 0, &job), FWSIM_OOB);
	ck_assert_uint_eq(job.error.ap_index, 2);
	ck_assert(sget(&j, 0, 0, 0, 0, 0) == before);
	tmem_free(&j.t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("selscat");
	TCase *tc = tcase_create("selscat");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_selscat_matches_reference);
	tcase_add_test(tc, test_selscat_nan_recorded);
	tcase_add_test(tc, test_selscat_deadline);
	tcase_add_test(tc, test_selscat_oob_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
