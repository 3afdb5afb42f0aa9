/* Check tests of the interpreter's non-finite trace (ncc_interp_trace_nonfinite): the
 * first NaN / Inf is named at the top level, inside fusions, calls, taken branches and
 * while bodies (with the iteration), in a parameter, and nowhere when there is none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "hlo/hlo_parser.h"
#include "interp/interp.h"
#include "hlo/verify.h"
#include "ncc_check_parse.h"

/* Parameter k gets the values vals[k][0..n) (f32[n] parameters). */
static void trace(const ncc_module_t *m, int nargs, int n, const float vals[][4],
		  ncc_interp_trace_t *tr)
{
	ncc_value_t *args[4] = { 0 };
	for (int k = 0; k < nargs; k++) {
		ck_assert_int_eq(ncc_value_alloc(&m->entry->params[k]->shape, &args[k]), NCC_OK);
		ck_assert_int_eq(ncc_value_elements(args[k]), n);
		memcpy(args[k]->data, vals[k], sizeof(float) * (size_t)n);
	}
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_interp_trace_nonfinite(m, (const ncc_value_t *const *)args, nargs, NULL, tr,
						 &err) == NCC_OK, "%s", err.msg);
	for (int k = 0; k < nargs; k++)
		ncc_value_free(args[k]);
}

static const char top_hlo[] =
	"HloModule top\n\n"
	"ENTRY main {\n"
	"  p0 = f32[4] parameter(0)\n"
	"  p1 = f32[4] parameter(1)\n"
	"  e = f32[4] exponential(p1)\n"
	"  m = f32[4] multiply(p0, p0)\n"
	"  n = f32[4] negate(m)\n"
	"  l = f32[4] log(n), metadata={op_type=\"aten::log\" source_file=\"model.py\" source_line=12}\n"
	"  ROOT a = f32[4] add(l, e)\n"
	"}\n";

START_TEST(test_trace_names_top_level_nan_and_inf)
{
	ncc_module_t *m = parse(top_hlo);
	/* p0 = 0 at index 2: log(-0) = -inf there, NaN elsewhere; exp(100) = inf */
	const float vals[2][4] = { { 1, 2, 0, 3 }, { 0, 100, 0, 0 } };
	ncc_interp_trace_t tr;
	trace(m, 2, 4, vals, &tr);
	ck_assert_ptr_nonnull(tr.nan.inst);
	ck_assert_str_eq(tr.nan.inst->name, "l");
	ck_assert_str_eq(tr.nan.inst->metadata.op_type, "aten::log");
	ck_assert_int_eq(tr.nan.inst->metadata.source_line, 12);
	ck_assert_str_eq(tr.nan.path, "");
	ck_assert_int_eq(tr.nan.first_index, 0);
	ck_assert_int_eq(tr.nan.count, 3);
	/* e comes first in program order and overflows at index 1 */
	ck_assert_ptr_nonnull(tr.inf.inst);
	ck_assert_str_eq(tr.inf.inst->name, "e");
	ck_assert_int_eq(tr.inf.first_index, 1);
	ck_assert_int_eq(tr.inf.count, 1);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_trace_finds_nothing_when_finite)
{
	static const char finite_hlo[] =
		"HloModule fin\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n"
		"  m = f32[4] multiply(p0, p0)\n  ROOT l = f32[4] log(m)\n}\n";
	ncc_module_t *m = parse(finite_hlo);
	ncc_interp_trace_t tr;
	const float ok[1][4] = { { 0.5f, 1, 2, 3 } };
	trace(m, 1, 4, ok, &tr);
	ck_assert_ptr_null(tr.nan.inst);
	ck_assert_ptr_null(tr.inf.inst);
	ck_assert_int_eq(tr.nan.first_index, -1);
	ck_assert_int_eq(tr.evaluated, 3);
	/* and p0 = 0 gives -inf but no NaN */
	const float zero[1][4] = { { 0.5f, 0, 2, 3 } };
	trace(m, 1, 4, zero, &tr);
	ck_assert_ptr_null(tr.nan.inst);
	ck_assert_ptr_nonnull(tr.inf.inst);
	ck_assert_str_eq(tr.inf.inst->name, "l");
	ck_assert_int_eq(tr.inf.first_index, 1);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_trace_nan_in_parameter)
{
	ncc_module_t *m = parse(top_hlo);
	const float vals[2][4] = { { 1, NAN, 1, 1 }, { 0, 0, 0, 0 } };
	ncc_interp_trace_t tr;
	trace(m, 2, 4, vals, &tr);
	ck_assert_ptr_nonnull(tr.nan.inst);
	ck_assert_str_eq(tr.nan.inst->name, "p0");
	ck_assert_int_eq(tr.nan.inst->op, NCC_OP_PARAMETER);
	ck_assert_int_eq(tr.nan.first_index, 1);
	ncc_module_free(m);
}
END_TEST

static const char fusion_hlo[] =
	"HloModule fus\n\n"
	"fused (fp: f32[4]) -> f32[4] {\n"
	"  fp = f32[4] parameter(0)\n"
	"  c = f32[4] cosine(fp)\n"
	"  s = f32[4] sqrt(fp), metadata={op_type=\"aten::sqrt\" source_file=\"net.py\" source_line=7}\n"
	"  ROOT y = f32[4] add(c, s)\n"
	"}\n\n"
	"callee (cp: f32[4]) -> f32[4] {\n"
	"  cp = f32[4] parameter(0)\n"
	"  ROOT f = f32[4] fusion(cp), kind=kLoop, calls=fused\n"
	"}\n\n"
	"ENTRY main {\n"
	"  p0 = f32[4] parameter(0)\n"
	"  a = f32[4] abs(p0)\n"
	"  n = f32[4] negate(p0)\n"
	"  ROOT k = f32[4] call(n), to_apply=callee\n"
	"}\n";

START_TEST(test_trace_descends_into_call_and_fusion)
{
	ncc_module_t *m = parse(fusion_hlo);
	const float vals[1][4] = { { -1, 2, -3, 4 } }; /* sqrt(-2), sqrt(-4) */
	ncc_interp_trace_t tr;
	trace(m, 1, 4, vals, &tr);
	ck_assert_ptr_nonnull(tr.nan.inst);
	ck_assert_str_eq(tr.nan.inst->name, "s");
	ck_assert_str_eq(tr.nan.path, "k > f > ");
	ck_assert_str_eq(tr.nan.inst->metadata.source_file, "net.py");
	ck_assert_int_eq(tr.nan.first_index, 1);
	ck_assert_int_eq(tr.nan.count, 2);
	ncc_module_free(m);
}
END_TEST

/* A loop that halves x three times, then takes log(x - 0.2): the NaN appears in
 * iteration 2 (x = 0.125 there). */
static const char while_hlo[] =
	"HloModule loop\n\n"
	"cond (cs: (s32[], f32[4])) -> pred[] {\n"
	"  cs = (s32[], f32[4]) parameter(0)\n"
	"  ci = s32[] get-tuple-element(cs), index=0\n"
	"  lim = s32[] constant(5)\n"
	"  ROOT lt = pred[] compare(ci, lim), direction=LT\n"
	"}\n\n"
	"body (bs: (s32[], f32[4])) -> (s32[], f32[4]) {\n"
	"  bs = (s32[], f32[4]) parameter(0)\n"
	"  i = s32[] get-tuple-element(bs), index=0\n"
	"  x = f32[4] get-tuple-element(bs), index=1\n"
	"  one = s32[] constant(1)\n"
	"  i2 = s32[] add(i, one)\n"
	"  h = f32[] constant(0.5)\n"
	"  hb = f32[4] broadcast(h), dimensions={}\n"
	"  x2 = f32[4] multiply(x, hb)\n"
	"  t = f32[] constant(0.2)\n"
	"  tb = f32[4] broadcast(t), dimensions={}\n"
	"  d = f32[4] subtract(x2, tb)\n"
	"  lg = f32[4] log(d)\n"
	"  z = f32[4] multiply(lg, hb)\n"
	"  keep = f32[4] add(x2, z)\n"
	"  x3 = f32[4] subtract(keep, z)\n"
	"  ROOT r = (s32[], f32[4]) tuple(i2, x2)\n"
	"}\n\n"
	"ENTRY main {\n"
	"  p0 = f32[4] parameter(0)\n"
	"  zero = s32[] constant(0)\n"
	"  init = (s32[], f32[4]) tuple(zero, p0)\n"
	"  w = (s32[], f32[4]) while(init), condition=cond, body=body\n"
	"  ROOT out = f32[4] get-tuple-element(w), index=1\n"
	"}\n";

START_TEST(test_trace_while_names_iteration)
{
	/* The body's NaN (lg) is dead code for the loop's result: the loop result stays
	 * finite, so nothing is reported at all. */
	ncc_module_t *m = parse(while_hlo);
	const float vals[1][4] = { { 1, 1, 1, 1 } };
	ncc_interp_trace_t tr;
	trace(m, 1, 4, vals, &tr);
	ck_assert_ptr_null(tr.nan.inst);
	ncc_module_free(m);
	/* Now the state carries it: ROOT r = tuple(i2, lg-derived) */
	char *text = strdup(while_hlo);
	char *p = strstr(text, "tuple(i2, x2)");
	ck_assert_ptr_nonnull(p);
	memcpy(p, "tuple(i2, x3)", 13);
	m = parse(text);
	trace(m, 1, 4, vals, &tr);
	ck_assert_ptr_nonnull(tr.nan.inst);
	ck_assert_str_eq(tr.nan.inst->name, "lg");
	/* x: 1 -> 0.5 (log 0.3), 0.25 (log 0.05), 0.125 (log -0.075: NaN) */
	ck_assert_str_eq(tr.nan.path, "w (iteration 2) > ");
	ck_assert_int_eq(tr.nan.count, 4);
	free(text);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_trace_conditional_branch)
{
	static const char cond_hlo[] =
		"HloModule cnd\n\n"
		"tb (a: f32[4]) -> f32[4] {\n  a = f32[4] parameter(0)\n  ROOT la = f32[4] log(a)\n}\n\n"
		"fb (b: f32[4]) -> f32[4] {\n  b = f32[4] parameter(0)\n  ROOT nb = f32[4] negate(b)\n}\n\n"
		"ENTRY main {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n"
		"  z = f32[] constant(0)\n  sm = f32[] reduce(p1, z), dimensions={0}, to_apply=sum\n"
		"  c = pred[] compare(sm, z), direction=GT\n"
		"  ROOT r = f32[4] conditional(c, p0, p0), true_computation=tb, false_computation=fb\n}\n\n"
		"sum (x: f32[], y: f32[]) -> f32[] {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
		"  ROOT s = f32[] add(x, y)\n}\n";
	ncc_module_t *m = parse(cond_hlo);
	const float vals[2][4] = { { -1, 1, 1, 1 }, { 1, 1, 1, 1 } };
	ncc_interp_trace_t tr;
	trace(m, 2, 4, vals, &tr);
	ck_assert_ptr_nonnull(tr.nan.inst);
	ck_assert_str_eq(tr.nan.inst->name, "la");
	ck_assert_str_eq(tr.nan.path, "r > ");
	/* the false branch is finite */
	const float neg[2][4] = { { -1, 1, 1, 1 }, { -1, -1, -1, -1 } };
	trace(m, 2, 4, neg, &tr);
	ck_assert_ptr_null(tr.nan.inst);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_trace_rejects_bad_arguments)
{
	ncc_module_t *m = parse(top_hlo);
	ncc_interp_trace_t tr;
	ncc_error_t err = { 0 };
	ck_assert_int_eq(ncc_interp_trace_nonfinite(m, NULL, 0, NULL, &tr, &err), NCC_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "takes 2 arguments"));
	ck_assert_int_eq(ncc_interp_trace_nonfinite(NULL, NULL, 0, NULL, &tr, &err), NCC_ERR_INVALID);
	ck_assert_int_eq(ncc_interp_trace_nonfinite(m, NULL, 0, NULL, NULL, &err), NCC_ERR_INVALID);
	ncc_shape_t s = ncc_shape_array(NCC_S32, 1, (const int64_t[]){ 4 });
	ncc_value_t *bad = NULL;
	ck_assert_int_eq(ncc_value_alloc(&s, &bad), NCC_OK);
	const ncc_value_t *args[2] = { bad, bad };
	ck_assert_int_eq(ncc_interp_trace_nonfinite(m, args, 2, NULL, &tr, &err), NCC_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "parameter 0"));
	ncc_value_free(bad);
	ncc_module_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("interp_trace");
	TCase *tc = tcase_create("trace");
	tcase_add_test(tc, test_trace_names_top_level_nan_and_inf);
	tcase_add_test(tc, test_trace_finds_nothing_when_finite);
	tcase_add_test(tc, test_trace_nan_in_parameter);
	tcase_add_test(tc, test_trace_descends_into_call_and_fusion);
	tcase_add_test(tc, test_trace_while_names_iteration);
	tcase_add_test(tc, test_trace_conditional_branch);
	tcase_add_test(tc, test_trace_rejects_bad_arguments);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
