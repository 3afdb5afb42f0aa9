/* Tests of the two public API additions the PJRT plugin relies on: ncc_module_entry_signature and nrt_neuronsim_get_model_tensor_aliases. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ncc/ncc.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"

static const char *const alias_hlo =
	"HloModule alias_mod, input_output_alias={ {1}: (0, {}, must-alias) }\n"
	"ENTRY main {\n"
	"  p0 = f32[4] parameter(0)\n"
	"  p1 = s32[2,3] parameter(1)\n"
	"  n = f32[4] negate(p0)\n"
	"  a = f32[4] add(p0, p0)\n"
	"  ROOT t = (s32[2,3], f32[4], f32[4]) tuple(p1, a, n)\n"
	"}\n";

static ncc_module_t *parse(const char *text)
{
	ncc_module_t *m = NULL;
	ncc_error_t err;
	ck_assert_int_eq(ncc_parse_hlo(text, strlen(text), NULL, &m, &err), NCC_OK);
	ck_assert_int_eq(ncc_verify(m, &err), NCC_OK);
	return m;
}

START_TEST(test_entry_signature)
{
	static const char *const text =
		"HloModule sig\n"
		"ENTRY main {\n"
		"  p0 = pred[] parameter(0)\n"
		"  p1 = bf16[2,3,4] parameter(1)\n"
		"  c = f32[] constant(1)\n"
		"  inner = (pred[], f32[]) tuple(p0, c)\n"
		"  one = (f32[]) tuple(c)\n"
		"  ROOT t = ((pred[], f32[]), bf16[2,3,4], (f32[])) tuple(inner, p1, one)\n"
		"}\n";
	ncc_module_t *m = parse(text);
	ncc_array_desc_t *params = NULL, *results = NULL;
	size_t np = 9, nr = 9;
	ncc_error_t err;
	ck_assert_int_eq(ncc_module_entry_signature(m, &params, &np, &results, &nr, &err), NCC_OK);
	ck_assert_uint_eq(np, 2);
	ck_assert_str_eq(params[0].etype, "pred");
	ck_assert_int_eq(params[0].rank, 0);
	ck_assert_str_eq(params[1].etype, "bf16");
	ck_assert(params[1].rank == 3 && params[1].dims[0] == 2 && params[1].dims[2] == 4);
	/* Result leaves depth first. */
	ck_assert_uint_eq(nr, 4);
	ck_assert_str_eq(results[0].etype, "pred");
	ck_assert_str_eq(results[1].etype, "f32");
	ck_assert_str_eq(results[2].etype, "bf16");
	ck_assert_str_eq(results[3].etype, "f32");
	free(params);
	free(results);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_entry_signature_refuses_tuple_parameter)
{
	static const char *const text =
		"HloModule t\nENTRY main {\n  p = (f32[2], f32[2]) parameter(0)\n"
		"  ROOT g = f32[2] get-tuple-element(p), index=0\n}\n";
	ncc_module_t *m = parse(text);
	ncc_array_desc_t *params = (ncc_array_desc_t *)0x1, *results = (ncc_array_desc_t *)0x1;
	size_t np = 7, nr = 7;
	ncc_error_t err;
	ck_assert_int_eq(ncc_module_entry_signature(m, &params, &np, &results, &nr, &err), NCC_ERR_UNSUPPORTED);
	ck_assert(strstr(err.msg, "parameter 0") != NULL);
	/* Outputs untouched on failure. */
	ck_assert(params == (ncc_array_desc_t *)0x1 && np == 7);
	ck_assert_int_eq(ncc_module_entry_signature(NULL, &params, &np, &results, &nr, &err), NCC_ERR_INVALID);
	ncc_module_free(m);
	/* No parameters, a scalar result. */
	m = parse("HloModule s\nENTRY main {\n  ROOT c = s64[] constant(3)\n}\n");
	ck_assert_int_eq(ncc_module_entry_signature(m, &params, &np, &results, &nr, &err), NCC_OK);
	ck_assert(np == 0 && params == NULL && nr == 1 && results[0].rank == 0);
	ck_assert_str_eq(results[0].etype, "s64");
	free(results);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_model_tensor_aliases)
{
	int32_t alias[8];
	ck_assert_int_eq(nrt_neuronsim_get_model_tensor_aliases(NULL, alias, 8), NRT_UNINITIALIZED);
	ncc_driver_options_t opts;
	ncc_driver_options_init(&opts);
	opts.no_cache = true;
	ncc_compile_result_t res;
	ncc_error_t err;
	ck_assert_int_eq(ncc_compile_text(alias_hlo, strlen(alias_hlo), NULL, &opts, &res, &err), NCC_OK);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_model_t *model = NULL;
	ck_assert_int_eq(nrt_load(res.neff, res.neff_size, 0, -1, &model), NRT_SUCCESS);
	nrt_tensor_info_array_t *info = NULL;
	ck_assert_int_eq(nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
	ck_assert_uint_eq(info->tensor_count, 5);
	for (int i = 0; i < 8; i++)
		alias[i] = 77;
	ck_assert_int_eq(nrt_neuronsim_get_model_tensor_aliases(model, alias, 4), NRT_INVALID);
	ck_assert_int_eq(alias[0], 77);
	ck_assert_int_eq(nrt_neuronsim_get_model_tensor_aliases(model, NULL, 8), NRT_INVALID);
	ck_assert_int_eq(nrt_neuronsim_get_model_tensor_aliases(model, alias, 8), NRT_SUCCESS);
	/* Inputs p0, p1; outputs: s32 passthrough, a (aliases p0), n. */
	ck_assert_int_eq(alias[0], -1);
	ck_assert_int_eq(alias[1], -1);
	ck_assert_int_eq(alias[2], -1);
	ck_assert_int_eq(alias[3], 0);
	ck_assert_int_eq(alias[4], -1);
	ck_assert_int_eq(alias[5], 77);
	ck_assert_int_eq(info->tensor_array[3].usage, NRT_TENSOR_USAGE_OUTPUT);
	nrt_free_model_tensor_info(info);
	ck_assert_int_eq(nrt_unload(model), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_get_model_tensor_aliases(model, alias, 8), NRT_INVALID_HANDLE);
	nrt_close();
	ncc_compile_result_release(&res);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pjrt_apis");
	TCase *tc = tcase_create("apis");
	tcase_add_test(tc, test_entry_signature);
	tcase_add_test(tc, test_entry_signature_refuses_tuple_parameter);
	tcase_add_test(tc, test_model_tensor_aliases);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
