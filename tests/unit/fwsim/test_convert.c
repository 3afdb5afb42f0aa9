/* Unit tests of the simulator's scalar conversions (firmware-sim/convert.h): float -> integer and pred, and the same rules through a COPY instruction. */
#include "fwsim_test.h"

#include "convert.h"

static const uint32_t k_int_dtypes[] = {
	ISA_DT_S8, ISA_DT_S16, ISA_DT_S32, ISA_DT_S64,
	ISA_DT_U8, ISA_DT_U16, ISA_DT_U32, ISA_DT_U64,
};
#define N_INT_DTYPES (sizeof(k_int_dtypes) / sizeof(k_int_dtypes[0]))

static float fbits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* XLA's convert to pred is x != 0, and NaN != 0 is true (docs/isa.md). */
START_TEST(test_f32_to_pred_is_nonzero_and_nan_is_true)
{
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, NAN), 1);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, -NAN), 1);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, fbits(0x7f800001u)), 1); /* signalling */
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, INFINITY), 1);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, -INFINITY), 1);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, 0.0f), 0);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, -0.0f), 0);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, fbits(1u)), 1); /* smallest subnormal */
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, 0.25f), 1);
	ck_assert_int_eq(fw_f32_to_int(ISA_DT_PRED, -3.0f), 1);
}
END_TEST

/* float -> integer: NaN is 0 in every integer type (XLA's CPU behaviour). */
START_TEST(test_f32_to_int_nan_is_zero)
{
	for (size_t k = 0; k < N_INT_DTYPES; k++) {
		ck_assert_msg(fw_f32_to_int(k_int_dtypes[k], NAN) == 0, "dtype %u", k_int_dtypes[k]);
		ck_assert_msg(fw_f32_to_int(k_int_dtypes[k], -NAN) == 0, "dtype %u", k_int_dtypes[k]);
	}
}
END_TEST

START_TEST(test_f32_to_int_truncates_and_saturates)
{
	static const struct {
		uint32_t dt;
		float v;
		int64_t want;
	} cases[] = {
		{ ISA_DT_S8, 2.9f, 2 },       { ISA_DT_S8, -2.9f, -2 },
		{ ISA_DT_S8, 300.0f, 127 },   { ISA_DT_S8, -300.0f, -128 },
		{ ISA_DT_S16, 1e6f, 32767 },  { ISA_DT_S16, -1e6f, -32768 },
		{ ISA_DT_S32, 3e9f, INT32_MAX }, { ISA_DT_S32, -3e9f, INT32_MIN },
		{ ISA_DT_S64, 1e30f, INT64_MAX }, { ISA_DT_S64, -1e30f, INT64_MIN },
		{ ISA_DT_S64, INFINITY, INT64_MAX }, { ISA_DT_S64, -INFINITY, INT64_MIN },
		{ ISA_DT_U8, -5.0f, 0 },      { ISA_DT_U8, 255.9f, 255 },  { ISA_DT_U8, 1e4f, 255 },
		{ ISA_DT_U16, 7e4f, 65535 },  { ISA_DT_U32, 5e9f, 4294967295ll },
		{ ISA_DT_U32, -1.0f, 0 },     { ISA_DT_U64, -1.0f, 0 },
		{ ISA_DT_U64, 1e30f, (int64_t)UINT64_MAX }, { ISA_DT_U64, 4096.5f, 4096 },
		{ ISA_DT_S32, -0.0f, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(fw_f32_to_int(cases[i].dt, cases[i].v) == cases[i].want,
			      "case %zu: dtype %u value %g: got %lld, want %lld", i, cases[i].dt,
			      (double)cases[i].v, (long long)fw_f32_to_int(cases[i].dt, cases[i].v),
			      (long long)cases[i].want);
}
END_TEST

/* Storing an f32 into any integer or pred element agrees with fw_f32_to_int (to the
 * element's width): the kernels' stores and direct conversions use one rule. */
START_TEST(test_store_agrees_with_conversion)
{
	static const float values[] = { 0.0f, -0.0f, 1.5f, -1.5f, 127.5f, -129.0f, 70000.0f,
					 -3e9f, 5e9f, 1e30f, INFINITY, -INFINITY, NAN, -NAN };
	uint32_t dts[N_INT_DTYPES + 1];
	memcpy(dts, k_int_dtypes, sizeof(k_int_dtypes));
	dts[N_INT_DTYPES] = ISA_DT_PRED;
	for (size_t d = 0; d < N_INT_DTYPES + 1; d++)
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			uint8_t buf[8] = { 0 };
			fw_st_f32(dts[d], buf, values[i]);
			int64_t want = fw_f32_to_int(dts[d], values[i]);
			int64_t got = tgeti(dts[d], buf);
			size_t es = isa_dtype_size(dts[d]);
			if (es < 8 && !(dts[d] == ISA_DT_S8 || dts[d] == ISA_DT_S16 || dts[d] == ISA_DT_S32))
				want &= (int64_t)((1ull << (8 * es)) - 1);
			ck_assert_msg(got == want, "dtype %u value %g: stored %lld, converted %lld", dts[d],
				      (double)values[i], (long long)got, (long long)want);
		}
}
END_TEST

/* The same rule through the simulator: a COPY f32 -> pred of NaN, Inf, +-0. */
START_TEST(test_copy_f32_to_pred_maps_nan_to_true)
{
	static const float in[] = { NAN, -NAN, INFINITY, 0.0f, -0.0f, 2.5f };
	static const uint8_t want[] = { 1, 1, 1, 0, 0, 1 };
	uint64_t n = sizeof(in) / sizeof(in[0]);
	tmem_t t;
	tmem_init(&t);
	isa_insn_t insn = isa_insn_init(ISA_OP_COPY, 0);
	insn.n_ap = 2;
	insn.ap[0] = isa_ap_contig(0, 0, ISA_DT_PRED, 1, &n);
	insn.ap[1] = isa_ap_contig(1, 0, ISA_DT_F32, 1, &n);
	memcpy(tmem_ptr(&t, 1, 0), in, sizeof(in));
	memset(tmem_ptr(&t, 0, 0), 0xee, n);
	fwsim_job_t job;
	ck_assert_int_eq(trun1(&t, &insn, ISA_ENGINE_DMA, 0, &job), FWSIM_OK);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_msg(tmem_ptr(&t, 0, 0)[i] == want[i], "element %llu (%g): got %u, want %u",
			      (unsigned long long)i, (double)in[i], tmem_ptr(&t, 0, 0)[i], want[i]);
	ck_assert(tmem_guards_intact(&t));
	tmem_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fwsim-convert");
	TCase *tc = tcase_create("convert");
	tcase_add_test(tc, test_f32_to_pred_is_nonzero_and_nan_is_true);
	tcase_add_test(tc, test_f32_to_int_nan_is_zero);
	tcase_add_test(tc, test_f32_to_int_truncates_and_saturates);
	tcase_add_test(tc, test_store_agrees_with_conversion);
	tcase_add_test(tc, test_copy_f32_to_pred_maps_nan_to_true);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
