/* Check tests of the public module queries (include/ncc/ncc.h): entry parameters, aliases per result leaf, instruction descriptions, the pass pipeline on a module; through the public headers only, as a tool uses them. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ncc/ncc.h"
#include "ncc/ncc_interp.h"
#include "ncc_check_parse.h"

/* ---------------------------------------------------------- parameters */

static const char params_hlo[] =
	"HloModule p\n"
	"\n"
	"ENTRY %main (a: f32[2,3], b: s32[], c: (f32[], pred[4])) -> f32[2,3] {\n"
	"  %c = (f32[], pred[4]) parameter(2)\n"
	"  %b = s32[] parameter(1)\n"
	"  ROOT %a = f32[2,3]{1,0} parameter(0)\n"
	"}\n";

START_TEST(test_entry_params_count_and_shapes_in_parameter_order)
{
	ncc_module_t *m = parse(params_hlo);
	ck_assert_int_eq(ncc_module_entry_param_count(m), 3);

	const ncc_shape_t *a = ncc_module_entry_param_shape(m, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(a->etype, NCC_F32);
	ck_assert_int_eq(a->rank, 2);
	ck_assert_int_eq(a->dims[0], 2);
	ck_assert_int_eq(a->dims[1], 3);
	const ncc_shape_t *b = ncc_module_entry_param_shape(m, 1);
	ck_assert_int_eq(b->etype, NCC_S32);
	ck_assert_int_eq(b->rank, 0);
	const ncc_shape_t *c = ncc_module_entry_param_shape(m, 2);
	ck_assert_int_eq(c->etype, NCC_TUPLE);
	ck_assert_int_eq(c->nelems, 2);
	ck_assert_int_eq(c->elems[1].etype, NCC_PRED);

	/* a value made from it has the parameter's bytes */
	ncc_value_t *v = NULL;
	ck_assert_int_eq(ncc_value_alloc(a, &v), NCC_OK);
	ck_assert_uint_eq(v->nbytes, 6 * sizeof(float));
	ncc_value_free(v);

	ck_assert_ptr_null(ncc_module_entry_param_shape(m, 3));
	ck_assert_ptr_null(ncc_module_entry_param_shape(m, -1));
	ck_assert_int_eq(ncc_module_entry_param_count(NULL), 0);
	ck_assert_ptr_null(ncc_module_entry_param_shape(NULL, 0));
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------------------- aliases */

START_TEST(test_entry_aliases_map_result_leaves_depth_first)
{
	/* root ((f32[2], f32[3]), f32[4]): leaves 0, 1, 2. {0,1} is leaf 1 and {1}
	 * leaf 2; {0,0} aliases only a part of parameter 2, which does not count. */
	ncc_module_t *m = parse(
		"HloModule a, input_output_alias={ {0,1}: (0, {}, must-alias), "
		"{1}: (1, {}, may-alias), {0,0}: (2, {0}) }\n"
		"\n"
		"ENTRY %main (x: f32[3], y: f32[4], z: (f32[2])) -> ((f32[2], f32[3]), f32[4]) {\n"
		"  %x = f32[3] parameter(0)\n"
		"  %y = f32[4] parameter(1)\n"
		"  %z = (f32[2]) parameter(2)\n"
		"  %z0 = f32[2] get-tuple-element(%z), index=0\n"
		"  %inner = (f32[2], f32[3]) tuple(%z0, %x)\n"
		"  ROOT %t = ((f32[2], f32[3]), f32[4]) tuple(%inner, %y)\n"
		"}\n");
	int64_t *map = NULL;
	size_t n = 0;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_module_entry_aliases(m, &map, &n, &err), NCC_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(map[0], -1);
	ck_assert_int_eq(map[1], 0);
	ck_assert_int_eq(map[2], 1);
	free(map);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_entry_aliases_array_root_and_no_alias)
{
	ncc_module_t *m = parse(
		"HloModule r, input_output_alias={ {}: (1, {}, must-alias) }\n"
		"\n"
		"ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {\n"
		"  %a = f32[4] parameter(0)\n"
		"  %b = f32[4] parameter(1)\n"
		"  ROOT %s = f32[4] add(%a, %b)\n"
		"}\n");
	int64_t *map = NULL;
	size_t n = 0;
	ck_assert_int_eq(ncc_module_entry_aliases(m, &map, &n, NULL), NCC_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(map[0], 1);
	free(map);
	ncc_module_free(m);

	m = parse(params_hlo);
	ck_assert_int_eq(ncc_module_entry_aliases(m, &map, &n, NULL), NCC_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(map[0], -1);
	free(map);
	ck_assert_int_eq(ncc_module_entry_aliases(m, NULL, &n, NULL), NCC_ERR_INVALID);
	ncc_module_free(m);

	/* a result without leaves: no array, nothing to free */
	m = parse("HloModule e\n\nENTRY %main () -> () {\n  ROOT %t = () tuple()\n}\n");
	map = (int64_t *)&n;
	ck_assert_int_eq(ncc_module_entry_aliases(m, &map, &n, NULL), NCC_OK);
	ck_assert_ptr_null(map);
	ck_assert_uint_eq(n, 0);
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------- instruction descriptions */

static const char nan_hlo[] =
	"HloModule n\n"
	"\n"
	"ENTRY %main (x: f32[4]) -> f32[4] {\n"
	"  %x = f32[4] parameter(0)\n"
	"  %l = f32[4] log(%x), metadata={op_type=\"aten__log\" source_file=\"m.py\" source_line=10}\n"
	"  ROOT %e = f32[4] exponential(%l)\n"
	"}\n";

START_TEST(test_inst_describe_names_the_trace_site)
{
	ncc_module_t *m = parse(nan_hlo);
	ncc_value_t *x = NULL;
	ck_assert_int_eq(ncc_value_alloc(ncc_module_entry_param_shape(m, 0), &x), NCC_OK);
	ncc_value_set_f64(x, 0, 1.0);
	ncc_value_set_f64(x, 1, -1.0); /* log(-1) is NaN */
	ncc_value_set_f64(x, 2, 2.0);
	ncc_value_set_f64(x, 3, 3.0);
	ncc_interp_trace_t tr;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_interp_trace_nonfinite(m, (const ncc_value_t *const *)&x, 1, NULL, &tr,
						    &err), NCC_OK);
	ck_assert_ptr_nonnull(tr.nan.inst);
	ncc_inst_desc_t d;
	ncc_inst_describe(tr.nan.inst, &d);
	ck_assert_str_eq(d.name, "l");
	ck_assert_str_eq(d.opcode, "log");
	ck_assert(!d.is_parameter);
	ck_assert_int_eq(d.hlo_line, 5);
	ck_assert_str_eq(d.op_type, "aten__log");
	ck_assert_str_eq(d.source_file, "m.py");
	ck_assert_int_eq(d.source_line, 10);

	/* a NaN already in the argument is blamed on the parameter, which has no metadata */
	ncc_value_set_f64(x, 1, NAN);
	ck_assert_int_eq(ncc_interp_trace_nonfinite(m, (const ncc_value_t *const *)&x, 1, NULL, &tr,
						    &err), NCC_OK);
	ncc_inst_describe(tr.nan.inst, &d);
	ck_assert_str_eq(d.name, "x");
	ck_assert_str_eq(d.opcode, "parameter");
	ck_assert(d.is_parameter);
	ck_assert_int_eq(d.hlo_line, 4);
	ck_assert_ptr_null(d.op_type);
	ck_assert_ptr_null(d.source_file);
	ck_assert_int_eq(d.source_line, 0);
	ncc_value_free(x);
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------------------------ passes */

START_TEST(test_run_passes_gives_the_module_the_back_end_lowers)
{
	ncc_module_t *m = parse(nan_hlo);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = 2;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_msg(ncc_run_passes(m, &o, &err) == NCC_OK, "%s", err.msg);
	char *text = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &text), NCC_OK);
	/* log -> exponential is one elementwise fusion at -O2 */
	ck_assert_msg(strstr(text, " fusion("), "%s", text);
	free(text);
	ck_assert_int_eq(ncc_module_entry_param_count(m), 1);
	ncc_module_free(m);
}
END_TEST

static Suite *module_query_suite(void)
{
	Suite *s = suite_create("module_query");
	TCase *tc = tcase_create("queries");
	tcase_add_test(tc, test_entry_params_count_and_shapes_in_parameter_order);
	tcase_add_test(tc, test_entry_aliases_map_result_leaves_depth_first);
	tcase_add_test(tc, test_entry_aliases_array_root_and_no_alias);
	tcase_add_test(tc, test_inst_describe_names_the_trace_site);
	tcase_add_test(tc, test_run_passes_gives_the_module_the_back_end_lowers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(module_query_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
