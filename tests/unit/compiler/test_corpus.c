/* Corpus end-to-end test: every module of ../shared/hlo parses, verifies, compiles (-O0 and default), runs on the embedded device and matches the reference interpreter. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parser.h"
#include "ncc_e2e.h"
#include "pipeline.h"
#include "hlo/verify.h"
#include "corpus_split.h"

/*
 * One Check test case per module, named after the file, with two tests: -O0 (op by
 * op) and the driver's default level. A module the back end cannot compile fails
 * with the compiler's own message ("unsupported ..."), it is never skipped: the
 * corpus is the definition of done.
 *
 * Inputs: ncc_interp_model_args(module, SEED): parameter k filled from seed
 * SEED + k, floats uniform in [-1, 1), integers in [0, NCC_RANDOM_INT_MAX] (so labels
 * and indices hit real rows of the corpus' gathers and one-hots), pred 0/1, except
 * the parameters whose role the module shows, which get what a freshly initialised
 * model sees: batch-norm scale 1 and offset 0, convolution kernels uniform in
 * +-1/sqrt(fan_in), ReLU6's upper bound 6 (only MobileNetV2 has such parameters; with
 * a random bound in [-1, 1) every ReLU6 output is one constant and every later layer
 * has zero variance). The same bytes go to the device (NEFF input k is parameter k)
 * and to the reference interpreter, which runs the module as written (no passes). A
 * failure reproduces with the same seed.
 *
 * Comparison: NEFF output o is leaf o of the root tuple (depth-first); each is
 * compared with ncc_value_compare() under ncc_tolerance_for_module() of its element
 * type (docs/interp.md), i.e. |device - reference| <= atol * scale + rtol * |ref|
 * with scale = max(1, max |ref| of that output):
 *   f32   rtol 1e-3, atol 1e-4   (a training step chains hundreds of ops; device
 *                                 kernels reorder sums: BLAS matmul, vector reductions)
 *   bf16  rtol 5e-2, atol 5e-2   (8-bit mantissa)
 *   f16   rtol 1e-2, atol 5e-3
 *   integers and pred: exact, bit for bit.
 * A float output outside that tolerance gets the sensitivity allowance of
 * ncc_e2e.h: it may differ by 16 times as much as two reference runs whose every
 * arithmetic result is moved by up to 16 ulps differ from the exact one (Monte
 * Carlo arithmetic; docs/interp.md, "Numerical sensitivity"). Only MobileNetV2 needs
 * it: its weight gradients flow back through 35 ReLU6 masks, and a pre-activation
 * within rounding distance of 0 flips a mask on one side and not on the other, so the
 * reference itself moves by about 1% when its inputs move by one ulp. The 12 other
 * modules match within the module tolerance alone (the test prints how many outputs
 * of each module needed the allowance). The runtime is closed before those extra
 * reference runs, so the simulated device memory is not held during them.
 * NaN matches NaN (random inputs make some in optimizer steps: the runtime's NaN
 * check is turned off for that reason), an infinity matches the same infinity. The
 * failure message names the output, its shape, the first differing element and
 * both values.
 *
 * MobileNetV2 runs at 64x64 by default: the module is the same training step with
 * every spatial size scaled by 2/7 (224 -> 64, ..., 7 -> 2; shapes and the windows of
 * the weight-gradient convolutions), re-verified, printed and compiled from that
 * text. At 224x224 and batch 96 the step keeps 7.5 GB of forward activations alive
 * for its backward pass (in any schedule, without rematerialisation), so the device
 * scratch and the reference both need about that much; at 64x64 the test needs
 * 1.35 GB and ~16 s per level in a release build. The 'full' suite runs the module
 * as written at the default level too (10.5 GB, about 3 minutes);
 * NCC_CORPUS_MOBILENET=full runs it as written everywhere.
 *
 * Which runs are the default: the test case named after a module runs it at the
 * default level (-O2); the one named "<module> (full)" is tagged for the 'full'
 * suite (make test-full, tests/meson.build) and runs it at -O0, and MobileNetV2 also
 * at 224x224. Sanitizer builds tag their big modules' default-level case too
 * (corpus_split.h): MobileNetV2 alone took 2 minutes per level there, and the small
 * modules reach the same code.
 *
 * Runtime: the embedded backend (NEURONSIM_BACKEND=embedded unless set), execution
 * deadline raised to 900 s (NEURON_RT_EXEC_TIMEOUT, unless set) for the full-size
 * MobileNetV2 step. Run one module with CK_RUN_CASE=<file name> (and CK_RUN_CASE="<file
 * name> (full)").
 */

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/unit/compiler/meson.build)"
#endif

#define SEED 1234
/* The corpus described in ../shared/hlo/SOURCES.md; fewer means a wrong path. */
#define CORPUS_MIN_MODULES 13

static char *g_names[256];
static char g_full_names[256][300]; /* the names of the 'full' suite's test cases */
static int g_n;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_mobilenet(const char *name)
{
	return strstr(name, "mobilenet") != NULL;
}

/* MobileNetV2 at its own 224x224 only when asked for (memory, see above). */
static bool mobilenet_full(void)
{
	const char *e = getenv("NCC_CORPUS_MOBILENET");
	return e && strcmp(e, "full") == 0;
}

/* The spatial sizes of the 224x224 MobileNetV2 step and what they become at 64x64:
 * 224 / 2^k -> 64 / 2^k, which keeps every stride-2 size relation and the parity
 * the backward convolutions' paddings depend on. */
static int64_t scaled_spatial(int64_t d)
{
	static const int64_t from[] = {224, 112, 56, 28, 14, 7}, to[] = {64, 32, 16, 8, 4, 2};
	for (size_t k = 0; k < sizeof(from) / sizeof(from[0]); k++)
		if (d == from[k])
			return to[k];
	return d;
}

/* NCHW activations: the spatial dims are 2 and 3 of the rank-4 shapes (the only
 * place the 224-family sizes occur in the module; channels and batch never match). */
static void scale_shape(ncc_shape_t *s)
{
	if (s->etype == NCC_TUPLE) {
		for (int32_t k = 0; k < s->nelems; k++)
			scale_shape(&s->elems[k]);
		return;
	}
	if (s->rank == 4)
		for (int32_t d = 2; d < 4; d++)
			s->dims[d] = scaled_spatial(s->dims[d]);
}

/* Rewrites m in place to the 64x64 step and returns its text (caller frees), after
 * ncc_verify() has checked every shape relation again. */
static char *mobilenet_at_64(ncc_module_t *m, ncc_error_t *err)
{
	for (int32_t c = 0; c < m->ncomps; c++) {
		ncc_comp_t *comp = m->comps[c];
		for (int32_t i = 0; i < comp->nsig_params; i++)
			scale_shape(&comp->sig_param_shapes[i]);
		if (comp->has_sig_result)
			scale_shape(&comp->sig_result);
		for (int32_t i = 0; i < comp->ninsts; i++) {
			ncc_inst_t *in = comp->insts[i];
			scale_shape(&in->shape);
			/* weight gradients: the "kernel" window is an activation map */
			if (in->op == NCC_OP_CONVOLUTION && in->window)
				for (int32_t d = 0; d < in->window->n; d++)
					in->window->dims[d].size = scaled_spatial(in->window->dims[d].size);
		}
	}
	m->entry_computation_layout = NULL; /* layouts only; the shapes say it all */
	if (ncc_verify(m, err) != NCC_OK)
		return NULL;
	char *text = NULL;
	if (ncc_module_to_string(m, &text) != NCC_OK)
		return NULL;
	return text;
}

static void list_corpus(void)
{
	DIR *d = opendir(NCC_HLO_CORPUS);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && g_n < 256) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".hlo") == 0)
			g_names[g_n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(g_names, (size_t)g_n, sizeof(g_names[0]), cmp_str);
}

static void run_module_variant(int idx, int opt_level, bool full_size)
{
	const char *name = g_names[idx];
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, name);
	char *text = NULL;
	size_t len = 0;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_read_file(path, &text, &len, &err) == NCC_OK, "%s", err.msg);

	/* the reference side works on the module as written (no passes) */
	ncc_module_t *m = NULL;
	ck_assert_msg(ncc_parse_hlo(text, len, path, &m, &err) == NCC_OK, "%s: parse: %s", name,
		      err.msg);
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s: verify: %s", name, err.msg);
	const char *variant = "";
	if (is_mobilenet(name) && !full_size && !mobilenet_full()) {
		/* both sides get the rescaled module, re-read from its text */
		char *small = mobilenet_at_64(m, &err);
		ck_assert_msg(small != NULL, "%s: the 64x64 variant does not verify: %s", name, err.msg);
		free(text);
		ncc_module_free(m);
		text = small;
		len = strlen(text);
		ck_assert_msg(ncc_parse_hlo(text, len, path, &m, &err) == NCC_OK && ncc_verify(m, &err) == NCC_OK,
			      "%s: the 64x64 variant does not read back: %s", name, err.msg);
		variant = " (at 64x64)";
	}

	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.compile.opt_level = opt_level;
	o.no_cache = true;
	ncc_compile_result_t res;
	double t0 = ncc_e2e_now_ms();
	ncc_status_t st = ncc_compile_text(text, len, path, &o, &res, &err);
	free(text);
	ck_assert_msg(st == NCC_OK, "%s%s -O%d does not compile (%s): %s", name, variant, opt_level,
		      ncc_status_name(st), err.msg);

	/* NaN from random inputs (log/sqrt of negatives in an optimizer step) is
	 * computed on both sides and compared; it must not abort the execution. */
	setenv("NEURONSIM_NAN_CHECK", "0", 1);
	setenv("NEURONSIM_BACKEND", "embedded", 0);
	/* the full-size MobileNetV2 step runs for a minute on the simulator: the
	 * runtime's 30 s default deadline is for interactive use */
	setenv("NEURON_RT_EXEC_TIMEOUT", "900", 0);
	NRT_STATUS nst = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	ck_assert_msg(nst == NRT_SUCCESS, "nrt_init failed with status %d", (int)nst);
	char why[2048] = "";
	int32_t sensitive = 0;
	ncc_e2e_check_t check;
	int rc = ncc_e2e_run(m, res.neff, res.neff_size, SEED, 1, NULL, NULL, &check, why, sizeof(why));
	/* the simulated device memory goes back before the perturbed reference runs */
	nrt_close();
	ncc_compile_result_release(&res);
	if (rc == 2)
		rc = ncc_e2e_finish(&check, &sensitive, why, sizeof(why));
	else
		ncc_e2e_check_free(&check);
	ncc_module_free(m);
	fprintf(stderr, "corpus %s%s -O%d: %.1f s, %d output(s) within the sensitivity allowance only\n",
		name, variant, opt_level, (ncc_e2e_now_ms() - t0) / 1e3, (int)sensitive);
	ck_assert_msg(rc == 0, "%s%s -O%d: %s", name, variant, opt_level, why);
}

static void run_module(int idx, int opt_level)
{
	run_module_variant(idx, opt_level, false);
}

START_TEST(test_corpus_is_present)
{
	ck_assert_msg(g_n >= CORPUS_MIN_MODULES, "found %d .hlo modules in %s, expected at least %d",
		      g_n, NCC_HLO_CORPUS, CORPUS_MIN_MODULES);
}
END_TEST

START_TEST(test_module_O0)
{
	run_module(_i, 0);
}
END_TEST

START_TEST(test_module_default_level)
{
	run_module(_i, NCC_DRIVER_DEFAULT_OPT_LEVEL);
}
END_TEST

/* MobileNetV2 at its own 224x224, at the default level (the 'full' suite). */
START_TEST(test_mobilenet_full_size)
{
	run_module_variant(_i, NCC_DRIVER_DEFAULT_OPT_LEVEL, true);
}
END_TEST

/* The default run compiles every module at the default level (-O2), runs it and
 * compares it with the interpreter, MobileNetV2 at 64x64. The 'full' suite
 * (test cases tagged NCC_TEST_TAG_FULL) adds every module at -O0 and MobileNetV2
 * at 224x224. Sanitizer builds leave their big modules (corpus_split.h) to the
 * 'full' suite at both levels: MobileNetV2 alone took 2 minutes per level there. */
int main(void)
{
	list_corpus();
	Suite *s = suite_create("corpus");
	TCase *tc = tcase_create("corpus");
	tcase_add_test(tc, test_corpus_is_present);
	suite_add_tcase(s, tc);
	for (int i = 0; i < g_n; i++) {
		bool big = NCC_TEST_SANITIZED && ncc_test_corpus_is_big(NCC_HLO_CORPUS, g_names[i]);
		/* the test cases are named after the module so a failure says which */
		tc = tcase_create(g_names[i]);
		tcase_set_timeout(tc, 900);
		if (big)
			tcase_set_tags(tc, NCC_TEST_TAG_FULL);
		tcase_add_loop_test(tc, test_module_default_level, i, i + 1);
		suite_add_tcase(s, tc);
		snprintf(g_full_names[i], sizeof(g_full_names[i]), "%s (full)", g_names[i]);
		tc = tcase_create(g_full_names[i]);
		tcase_set_timeout(tc, 900);
		tcase_set_tags(tc, NCC_TEST_TAG_FULL);
		tcase_add_loop_test(tc, test_module_O0, i, i + 1);
		if (is_mobilenet(g_names[i]) && !NCC_TEST_SANITIZED)
			tcase_add_loop_test(tc, test_mobilenet_full_size, i, i + 1);
		suite_add_tcase(s, tc);
	}
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_VERBOSE);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	for (int i = 0; i < g_n; i++)
		free(g_names[i]);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
