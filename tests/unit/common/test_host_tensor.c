/* Check tests of host_tensor.h (a dtype and shape as text, the seeded random fill) and quantile.h (the comparator, the quantile of samples). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/half.h"
#include "neuronsim/host_tensor.h"
#include "neuronsim/quantile.h"

START_TEST(test_describe_dtype_and_shape)
{
	char buf[64];
	const uint64_t sh[3] = { 32, 64, 1 };
	ck_assert_str_eq(ns_host_describe(ISA_DT_F32, 2, sh, buf, sizeof(buf)), "f32[32,64]");
	ck_assert_str_eq(ns_host_describe(ISA_DT_BF16, 3, sh, buf, sizeof(buf)), "bf16[32,64,1]");
	ck_assert_str_eq(ns_host_describe(ISA_DT_S32, 0, sh, buf, sizeof(buf)), "s32[]");
	/* truncated, never overrun */
	char small[8];
	memset(small, 'x', sizeof(small));
	ns_host_describe(ISA_DT_F32, 2, sh, small, 6);
	ck_assert_str_eq(small, "f32[3");
	ck_assert_int_eq(small[6], 'x');
}
END_TEST

/* The same seed gives the same bytes; every dtype stays in its documented
 * range; an unknown dtype writes nothing. */
START_TEST(test_fill_random_ranges_and_repeatability)
{
	enum { N = 4096 };
	static float f[N], g[N];
	uint64_t s1 = 42, s2 = 42;
	ns_host_fill_random(ISA_DT_F32, f, N, &s1);
	ns_host_fill_random(ISA_DT_F32, g, N, &s2);
	ck_assert_int_eq(memcmp(f, g, sizeof(f)), 0);
	ck_assert_uint_eq(s1, s2);
	int neg = 0;
	for (int i = 0; i < N; i++) {
		ck_assert(f[i] >= -1.0f && f[i] < 1.0f);
		neg += f[i] < 0;
	}
	ck_assert_int_gt(neg, N / 4);
	ck_assert_int_lt(neg, 3 * N / 4);
	uint64_t s = 7;
	static uint16_t h[N];
	ns_host_fill_random(ISA_DT_BF16, h, N, &s);
	for (int i = 0; i < N; i++) {
		float v = ns_bf16_to_f32(h[i]);
		ck_assert(v >= -1.0f && v <= 1.0f);
	}
	static int32_t i32[N];
	ns_host_fill_random(ISA_DT_S32, i32, N, &s);
	for (int i = 0; i < N; i++)
		ck_assert(i32[i] >= -8 && i32[i] < 8);
	static uint8_t u8[N];
	ns_host_fill_random(ISA_DT_U8, u8, N, &s);
	for (int i = 0; i < N; i++)
		ck_assert_uint_lt(u8[i], 16);
	ns_host_fill_random(ISA_DT_PRED, u8, N, &s);
	for (int i = 0; i < N; i++)
		ck_assert_uint_le(u8[i], 1);
	memset(u8, 0xee, 16);
	ns_host_fill_random(ISA_DT_INVALID, u8, 16, &s);
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(u8[i], 0xee);
}
END_TEST

START_TEST(test_quantile_nearest_rank)
{
	double v[] = { 5, 1, 4, 2, 3 };
	ck_assert(ns_quantile(v, 5, 0.5) == 3);
	ck_assert(v[0] == 1 && v[4] == 5); /* sorted in place */
	ck_assert(ns_quantile(v, 5, 0.0) == 1);
	ck_assert(ns_quantile(v, 5, 1.0) == 5);
	double w[] = { 4, 1, 3, 2 };
	ck_assert(ns_quantile(w, 4, 0.5) == 3); /* index round(1.5) = 2 */
	ck_assert(ns_quantile(NULL, 0, 0.5) == 0.0);
	double one[] = { -2.5 };
	ck_assert(ns_quantile(one, 1, 0.9) == -2.5);
	double c[] = { 2, -1, 2, INFINITY, -INFINITY };
	qsort(c, 5, sizeof(c[0]), ns_cmp_double);
	ck_assert(c[0] == -INFINITY && c[1] == -1 && c[2] == 2 && c[3] == 2 && c[4] == INFINITY);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("host_tensor");
	TCase *tc = tcase_create("host_tensor");
	tcase_add_test(tc, test_describe_dtype_and_shape);
	tcase_add_test(tc, test_fill_random_ranges_and_repeatability);
	tcase_add_test(tc, test_quantile_nearest_rank);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
