/* A NaN produced inside a fused kernel is reported against the HLO instruction that produced it, at every optimisation level (issue #11 item 7): compiled with ncc at -O0/-O1/-O2, run on the embedded device through libnrt with the NaN check on, the error record names the same instruction, op_type and source line. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncc/ncc.h"
#include "ncc/ncc_interp.h"
#include "neuronsim/neff.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"

/* The NEFF has at least one FUSED instruction (-O2 fused the chain). */
static bool has_fused(const void *neff, size_t size)
{
	neff_view_t v;
	char err[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(neff, size, &v),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		for (uint32_t i = 0; i < v.code_count[0][e]; i++)
			if (v.code[0][e][i].opcode == ISA_OP_FUSED)
				return true;
	return false;
}

/* Compiles text at opt, runs it with the f32 inputs in[] (sizes n[] elements; the
 * output has n_out, copied to values when not NULL) and returns nrt_execute's status;
 * err gets the error record of the execution when there was one. */
static NRT_STATUS run_checked(const char *text, int opt, const float *const *in, const size_t *n,
			      uint32_t nin, size_t n_out, bool want_fused, nrt_neuronsim_exec_error_t *err_rec,
			      float *values)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.use_env = false;
	o.no_cache = true;
	o.compile.opt_level = opt;
	ncc_compile_result_t r;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_compile_text(text, strlen(text), "probe.hlo", &o, &r, &err);
	ck_assert_msg(st == NCC_OK, "-O%d: %s", opt, err.msg);
	if (want_fused)
		ck_assert_msg(has_fused(r.neff, r.neff_size), "-O%d: no FUSED instruction", opt);
	nrt_model_t *m = NULL;
	ck_assert_int_eq(nrt_load(r.neff, r.neff_size, -1, -1, &m), NRT_SUCCESS);
	nrt_tensor_set_t *is = NULL, *os = NULL;
	ck_assert_int_eq(nrt_allocate_tensor_set(&is), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(&os), NRT_SUCCESS);
	nrt_tensor_t *t[8] = { 0 };
	for (uint32_t i = 0; i < nin; i++) {
		char name[32];
		snprintf(name, sizeof(name), "input%u", i);
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, n[i] * 4, name, &t[i]),
				 NRT_SUCCESS);
		ck_assert_int_eq(nrt_tensor_write(t[i], in[i], 0, n[i] * 4), NRT_SUCCESS);
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(is, name, t[i]), NRT_SUCCESS);
	}
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, n_out * 4, "output0", &t[nin]),
			 NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(os, "output0", t[nin]), NRT_SUCCESS);
	NRT_STATUS es = nrt_execute(m, is, os);
	if (es != NRT_SUCCESS)
		ck_assert_int_eq(nrt_neuronsim_get_last_error(m, err_rec), NRT_SUCCESS);
	if (values)
		ck_assert_int_eq(nrt_tensor_read(t[nin], values, 0, n_out * 4), NRT_SUCCESS);
	for (uint32_t i = 0; i <= nin; i++)
		nrt_tensor_free(&t[i]);
	nrt_destroy_tensor_set(&is);
	nrt_destroy_tensor_set(&os);
	nrt_unload(m);
	ncc_compile_result_release(&r);
	return es;
}

/* run_checked, expecting the NaN record */
static void run_expect_nan(const char *text, int opt, const float *const *in, const size_t *n,
			   uint32_t nin, size_t n_out, bool want_fused, nrt_neuronsim_exec_error_t *out)
{
	NRT_STATUS es = run_checked(text, opt, in, n, nin, n_out, want_fused, out, NULL);
	ck_assert_msg(es == NRT_EXEC_COMPLETED_WITH_NUM_ERR, "-O%d: nrt_execute returned %d", opt, (int)es);
}

#define MD(OP, LINE) ", metadata={op_type=\"" OP "\" op_name=\"" OP "\" source_file=\"probe.py\" source_line=" #LINE "}"

/* torch_xla's graph of: y = torch.log(x) (line 10); z = y * s + 1 (line 11) */
static const char *const k_log_chain =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  s = f32[] parameter(0)\n"
	"  x = f32[4] parameter(1)\n"
	"  log.4 = f32[4] log(x)" MD("aten__log", 10) "\n"
	"  b = f32[4] broadcast(s), dimensions={}" MD("aten__mul", 11) "\n"
	"  multiply.6 = f32[4] multiply(log.4, b)" MD("aten__mul", 11) "\n"
	"  one = f32[] constant(1)" MD("prim__Constant", 11) "\n"
	"  ob = f32[4] broadcast(one), dimensions={}" MD("aten__add", 11) "\n"
	"  ROOT add.9 = f32[4] add(multiply.6, ob)" MD("aten__add", 11) "\n"
	"}\n";

START_TEST(test_nan_names_the_instruction_inside_the_fused_kernel)
{
	static const float s[1] = { 2 }, x[4] = { 1, -1, 2, 3 };
	const float *in[2] = { s, x };
	const size_t n[2] = { 1, 4 };
	for (int opt = 0; opt <= 2; opt++) {
		nrt_neuronsim_exec_error_t e;
		run_expect_nan(k_log_chain, opt, in, n, 2, 4, opt == 2, &e);
		ck_assert_uint_eq(e.kind, NRT_NEURONSIM_ERROR_NAN);
		ck_assert_msg(strcmp(e.hlo_name, "log.4") == 0 && strcmp(e.op_type, "aten__log") == 0 &&
				      strcmp(e.source_file, "probe.py") == 0 && e.source_line == 10,
			      "-O%d: blamed '%s' (%s) at %s:%u: %s", opt, e.hlo_name, e.op_type,
			      e.source_file, e.source_line, e.message);
		ck_assert_uint_eq(e.first_index, 1);
		ck_assert_msg(strstr(e.message, "probe.py:10"), "%s", e.message);
	}
}
END_TEST

/* exp overflows to Inf (not an error: only NaN is checked), Inf * 0 is the NaN */
static const char *const k_inf_times_zero =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  x = f32[4] parameter(0)\n"
	"  y = f32[4] parameter(1)\n"
	"  exponential.3 = f32[4] exponential(x)" MD("aten__exp", 20) "\n"
	"  multiply.5 = f32[4] multiply(exponential.3, y)" MD("aten__mul", 21) "\n"
	"  ROOT tanh.7 = f32[4] tanh(multiply.5)" MD("aten__tanh", 22) "\n"
	"}\n";

/* a NaN that comes in through an input: the first instruction that reads it */
static const char *const k_nan_input =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  x = f32[4] parameter(0)\n"
	"  y = f32[4] parameter(1)\n"
	"  abs.3 = f32[4] abs(y)" MD("aten__abs", 30) "\n"
	"  add.4 = f32[4] add(x, abs.3)" MD("aten__add", 31) "\n"
	"  ROOT negate.5 = f32[4] negate(add.4)" MD("aten__neg", 32) "\n"
	"}\n";

START_TEST(test_nan_blame_follows_the_values)
{
	static const float x[4] = { 0, 100, 1, 2 }, y[4] = { 1, 0, 1, 1 };
	const float *in[2] = { x, y };
	const size_t n[2] = { 4, 4 };
	static const float a[4] = { 1, 2, NAN, 4 }, b[4] = { 1, 1, 1, 1 };
	const float *in2[2] = { a, b };
	for (int opt = 0; opt <= 2; opt++) {
		nrt_neuronsim_exec_error_t e;
		run_expect_nan(k_inf_times_zero, opt, in, n, 2, 4, opt == 2, &e);
		ck_assert_msg(strcmp(e.hlo_name, "multiply.5") == 0 && e.source_line == 21,
			      "-O%d: blamed '%s' at line %u: %s", opt, e.hlo_name, e.source_line, e.message);
		ck_assert_uint_eq(e.first_index, 1);
		run_expect_nan(k_nan_input, opt, in2, n, 2, 4, opt == 2, &e);
		ck_assert_msg(strcmp(e.hlo_name, "add.4") == 0 && e.source_line == 31,
			      "-O%d: blamed '%s' at line %u: %s", opt, e.hlo_name, e.source_line, e.message);
		ck_assert_uint_eq(e.first_index, 2);
	}
}
END_TEST

/* torch_xla's graph of: torch.log(x).sum(1) (lines 40, 41): at -O2 the log is
 * fused into the reduction and never stored, its NaN only seen in a sum */
static const char *const k_log_sum =
	"HloModule probe\n"
	"add_f {\n"
	"  a = f32[] parameter(0)\n"
	"  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n"
	"}\n"
	"ENTRY e {\n"
	"  x = f32[4,8] parameter(0)\n"
	"  log.4 = f32[4,8] log(x)" MD("aten__log", 40) "\n"
	"  zero = f32[] constant(0)" MD("aten__sum", 41) "\n"
	"  ROOT reduce.6 = f32[4] reduce(log.4, zero), dimensions={1}, to_apply=add_f" MD("aten__sum", 41) "\n"
	"}\n";

/* Inf + -Inf made inside the sum: nothing before it produced a NaN */
static const char *const k_sum_of_infs =
	"HloModule probe\n"
	"add_f {\n"
	"  a = f32[] parameter(0)\n"
	"  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n"
	"}\n"
	"ENTRY e {\n"
	"  x = f32[4,8] parameter(0)\n"
	"  exponential.3 = f32[4,8] exponential(x)" MD("aten__exp", 50) "\n"
	"  negate.4 = f32[4,8] negate(exponential.3)" MD("aten__neg", 50) "\n"
	"  zero = f32[] constant(0)" MD("aten__sum", 51) "\n"
	"  r.5 = f32[4] reduce(exponential.3, zero), dimensions={1}, to_apply=add_f" MD("aten__sum", 51) "\n"
	"  r.6 = f32[4] reduce(negate.4, zero), dimensions={1}, to_apply=add_f" MD("aten__sum", 52) "\n"
	"  ROOT add.7 = f32[4] add(r.5, r.6)" MD("aten__add", 53) "\n"
	"}\n";

START_TEST(test_nan_blame_inside_a_fused_reduction)
{
	float x[32];
	for (int i = 0; i < 32; i++)
		x[i] = 1.0f + (float)i;
	x[1 * 8 + 3] = -1.0f; /* log(-1): row 1 */
	const float *in[1] = { x };
	const size_t n[1] = { 32 };
	for (int opt = 0; opt <= 2; opt++) {
		nrt_neuronsim_exec_error_t e;
		run_expect_nan(k_log_sum, opt, in, n, 1, 4, opt == 2, &e);
		ck_assert_uint_eq(e.kind, NRT_NEURONSIM_ERROR_NAN);
		ck_assert_msg(strcmp(e.hlo_name, "log.4") == 0 && strcmp(e.op_type, "aten__log") == 0 &&
				      e.source_line == 40,
			      "-O%d: blamed '%s' (%s) at line %u: %s", opt, e.hlo_name, e.op_type, e.source_line,
			      e.message);
	}
	/* exp(100) is Inf (only NaN is checked), the sums Inf and -Inf, their sum NaN */
	float y[32];
	for (int i = 0; i < 32; i++)
		y[i] = i == 2 * 8 + 5 ? 100.0f : 0.5f;
	const float *in2[1] = { y };
	for (int opt = 0; opt <= 2; opt++) {
		nrt_neuronsim_exec_error_t e;
		run_expect_nan(k_sum_of_infs, opt, in2, n, 1, 4, false, &e);
		ck_assert_msg(strcmp(e.hlo_name, "add.7") == 0 && e.source_line == 53,
			      "-O%d: blamed '%s' at line %u: %s", opt, e.hlo_name, e.source_line, e.message);
		ck_assert_uint_eq(e.first_index, 2);
	}
}
END_TEST

/* torch's batch_norm (line 60) expanded into reduce and fused loops at -O1/-O2:
 * a NaN read from x, and one made inside (rsqrt of a negative running
 * variance), are blamed on the batch norm, its op_type and its line; the
 * expanded instructions are named "<batch norm>.pN" */
static const char *const k_bn_train =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  x = f32[2,3,4] parameter(0)\n"
	"  s = f32[3] parameter(1)\n"
	"  o = f32[3] parameter(2)\n"
	"  batch-norm-training.5 = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, "
	"feature_index=1" MD("aten__native_batch_norm", 60) "\n"
	"  ROOT get-tuple-element.6 = f32[2,3,4] get-tuple-element(batch-norm-training.5), index=0\n"
	"}\n";

static const char *const k_bn_infer =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  x = f32[2,3] parameter(0)\n"
	"  s = f32[3] parameter(1)\n"
	"  o = f32[3] parameter(2)\n"
	"  m = f32[3] parameter(3)\n"
	"  v = f32[3] parameter(4)\n"
	"  ROOT batch-norm-inference.7 = f32[2,3] batch-norm-inference(x, s, o, m, v), epsilon=0.001, "
	"feature_index=1" MD("aten__native_batch_norm", 61) "\n"
	"}\n";

static void expect_bn_blame(const nrt_neuronsim_exec_error_t *e, int opt, const char *name,
			    unsigned line)
{
	size_t n = strlen(name);
	ck_assert_uint_eq(e->kind, NRT_NEURONSIM_ERROR_NAN);
	ck_assert_msg(strncmp(e->hlo_name, name, n) == 0 &&
			      (e->hlo_name[n] == 0 || strncmp(e->hlo_name + n, ".p", 2) == 0) &&
			      strcmp(e->op_type, "aten__native_batch_norm") == 0 &&
			      e->source_line == line,
		      "-O%d: blamed '%s' (%s) at line %u: %s", opt, e->hlo_name, e->op_type,
		      e->source_line, e->message);
}

START_TEST(test_nan_blame_in_an_expanded_batch_norm)
{
	float x[24], s[3] = { 1, 2, 3 }, o[3] = { 0, 0, 1 };
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	x[13] = NAN;
	const float *in[3] = { x, s, o };
	const size_t n[3] = { 24, 3, 3 };
	for (int opt = 0; opt <= 2; opt++) {
		nrt_neuronsim_exec_error_t e;
		run_expect_nan(k_bn_train, opt, in, n, 3, 24, opt == 2, &e);
		expect_bn_blame(&e, opt, "batch-norm-training.5", 60);
	}
	static const float xi[6] = { 1, 2, 3, 4, 5, 6 }, m[3] = { 0, 0, 0 }, v[3] = { 1, -1, 1 };
	const float *in2[5] = { xi, s, o, m, v };
	const size_t n2[5] = { 6, 3, 3, 3, 3 };
	for (int opt = 0; opt <= 2; opt++) {
		nrt_neuronsim_exec_error_t e;
		run_expect_nan(k_bn_infer, opt, in2, n2, 5, 6, opt == 2, &e);
		expect_bn_blame(&e, opt, "batch-norm-inference.7", 61);
	}
}
END_TEST

/* Stride-1 convolutions over a padded input (ResNet's 3x3), dense and
 * depthwise: an Inf in the first column of a row, and a kernel whose last
 * column is zero. No output reads that Inf through the zero weight (it would
 * be the output left of column 0), so the outputs are Inf or finite, never
 * NaN, and the NaN check must stay quiet. (The lowering once computed the
 * rows' outputs as one run over the padded width, the columns past the row's
 * end included and discarded afterwards; one of those read the Inf through
 * the zero weight, and its NaN was reported.) */
static const char *const k_conv_dense =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  x = f32[2,2,6,6] parameter(0)\n"
	"  w = f32[2,2,3,3] parameter(1)\n"
	"  ROOT convolution.3 = f32[2,2,6,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
	"dim_labels=bf01_oi01->bf01" MD("aten__convolution", 60) "\n"
	"}\n";

static const char *const k_conv_depthwise =
	"HloModule probe\n"
	"ENTRY e {\n"
	"  x = f32[2,2,6,6] parameter(0)\n"
	"  w = f32[2,1,3,3] parameter(1)\n"
	"  ROOT convolution.3 = f32[2,2,6,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
	"dim_labels=bf01_oi01->bf01, feature_group_count=2" MD("aten__convolution", 61) "\n"
	"}\n";

/* The interpreter's result of text on the inputs (f32, n[] elements each). */
static ncc_value_t *interp_result(const char *text, const float *const *in, uint32_t nin)
{
	ncc_module_t *m = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_msg(ncc_parse_hlo(text, strlen(text), "probe.hlo", &m, &err) == NCC_OK, "%s", err.msg);
	ncc_value_t *args[4] = { 0 }, *res = NULL;
	for (uint32_t i = 0; i < nin; i++) {
		ck_assert_int_eq(ncc_value_alloc(ncc_module_entry_param_shape(m, (int32_t)i), &args[i]), NCC_OK);
		for (int64_t e = 0; e < ncc_value_elements(args[i]); e++)
			ncc_value_set_f64(args[i], e, in[i][e]);
	}
	ck_assert_msg(ncc_interp_run(m, (const ncc_value_t *const *)args, (int32_t)nin, NULL, &res, &err) ==
			      NCC_OK, "%s", err.msg);
	for (uint32_t i = 0; i < nin; i++)
		ncc_value_free(args[i]);
	ncc_module_free(m);
	return res;
}

START_TEST(test_conv_padding_no_false_nan)
{
	const char *const texts[2] = { k_conv_dense, k_conv_depthwise };
	const size_t wn[2] = { 2 * 2 * 9, 2 * 9 };
	float x[2 * 2 * 36], w[2 * 2 * 9], got[2 * 2 * 36];
	for (int i = 0; i < 2 * 2 * 36; i++)
		x[i] = 0.25f * (float)(i % 5) - 0.5f;
	x[(1 * 2 + 0) * 36 + 2 * 6 + 0] = INFINITY; /* batch 1, channel 0, row 2, column 0 */
	x[(0 * 2 + 1) * 36 + 4 * 6 + 0] = -INFINITY;
	for (int i = 0; i < 2 * 2 * 9; i++)
		w[i] = i % 3 == 2 ? 0.0f : 0.5f + 0.125f * (float)(i % 4);
	for (int v = 0; v < 2; v++) {
		const float *in[2] = { x, w };
		const size_t n[2] = { 2 * 2 * 36, wn[v] };
		ncc_value_t *want = interp_result(texts[v], in, 2);
		bool any_inf = false;
		for (int64_t e = 0; e < ncc_value_elements(want); e++) {
			ck_assert(!isnan(ncc_value_get_f64(want, e))); /* the premise */
			any_inf |= isinf(ncc_value_get_f64(want, e));
		}
		ck_assert(any_inf);
		for (int opt = 0; opt <= 2; opt += 2) {
			nrt_neuronsim_exec_error_t e;
			memset(&e, 0, sizeof(e));
			NRT_STATUS es = run_checked(texts[v], opt, in, n, 2, 2 * 2 * 36, false, &e, got);
			ck_assert_msg(es == NRT_SUCCESS, "%s -O%d: nrt_execute returned %d: %s",
				      v ? "depthwise" : "dense", opt, (int)es, e.message);
			ncc_value_t *dev = NULL;
			ck_assert_int_eq(ncc_value_clone(want, &dev), NCC_OK);
			for (int64_t i = 0; i < ncc_value_elements(dev); i++)
				ncc_value_set_f64(dev, i, got[i]);
			ncc_compare_result_t cr;
			ck_assert_msg(ncc_value_compare(want, dev, NULL, &cr), "%s -O%d: %s",
				      v ? "depthwise" : "dense", opt, cr.msg);
			ncc_value_free(dev);
		}
		ncc_value_free(want);
	}
}
END_TEST

static Suite *blame_suite(void)
{
	Suite *s = suite_create("nan_blame");
	TCase *tc = tcase_create("blame");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_nan_names_the_instruction_inside_the_fused_kernel);
	tcase_add_test(tc, test_nan_blame_follows_the_values);
	tcase_add_test(tc, test_nan_blame_inside_a_fused_reduction);
	tcase_add_test(tc, test_nan_blame_in_an_expanded_batch_norm);
	tcase_add_test(tc, test_conv_padding_no_false_nan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	setenv("NEURONSIM_BACKEND", "embedded", 1);
	setenv("NEURONSIM_NAN_CHECK", "1", 1);
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 0);
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL) != NRT_SUCCESS) {
		fprintf(stderr, "nrt_init failed\n");
		return EXIT_FAILURE;
	}
	SRunner *sr = srunner_create(blame_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	nrt_close();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
