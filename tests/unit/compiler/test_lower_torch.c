/* Check tests of the ncc back end on the ops PyTorch/XLA 2.9 emits beyond the corpus (issue #12 item 7): variadic argmax/argmin reduces, select-and-scatter with any scatter combiner, XLA's general gather and scatter. Each case runs on libfwsim at -O0, -O1 and -O2 (after the passes) and is compared with the reference interpreter, plus hand-computed values where the semantics are the point. Small shapes: the whole file runs in seconds. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_parser.h"
#include "interp.h"
#include "ir.h"
#include "lower_run.h"
#include "options.h"
#include "passes.h"
#include "verify.h"

static ncc_module_t *parse(const char *text)
{
	ncc_module_t *m = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_parse_hlo(text, strlen(text), "<test>", &m, &err);
	ck_assert_msg(st == NCC_OK, "parse: %s", err.msg);
	st = ncc_verify(m, &err);
	ck_assert_msg(st == NCC_OK, "verify: %s", err.msg);
	return m;
}

/* Leaf k of a value (depth-first). */
static const ncc_value_t *value_leaf(const ncc_value_t *v, int32_t *k)
{
	if (v->shape.etype != NCC_TUPLE)
		return (*k)-- == 0 ? v : NULL;
	for (int32_t i = 0; i < v->nelems; i++) {
		const ncc_value_t *r = value_leaf(v->elems[i], k);
		if (r)
			return r;
	}
	return NULL;
}

/* The module compiled at opt (the passes first at -O1 and above, as ncc_compile
 * does) and run on the simulator with inputs in. */
static int run_at(const char *text, int opt, const void *const *in, uint32_t nin, ncc_run_t *r)
{
	ncc_module_t *m = parse(text);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = opt;
	if (opt >= 1) {
		ncc_error_t err;
		memset(&err, 0, sizeof(err));
		ncc_status_t st = ncc_run_passes(m, &o, &err);
		ck_assert_msg(st == NCC_OK, "-O%d passes: %s", opt, err.msg);
	}
	int rc = ncc_run_module_opts(m, NULL, &o, in, nin, 1, r, NULL);
	ncc_module_free(m);
	return rc;
}

/* Runs text on the interpreter with args (random from seed when args is NULL) and
 * on the device at -O0, -O1 and -O2; every output leaf must match the interpreter
 * bit for bit (exact: integer results, max/min, gathers) or within the module
 * tolerance (exact = false). */
static void device_matches_interp(const char *what, const char *text, ncc_value_t *const *args,
				  uint64_t seed, bool exact)
{
	ncc_module_t *m = parse(text);
	const ncc_comp_t *e = m->entry;
	ncc_value_t **own = NULL;
	int32_t nown = 0;
	if (!args) {
		ck_assert_int_eq(ncc_interp_random_args(m, seed, &own, &nown), NCC_OK);
		args = own;
	}
	ncc_value_t *want = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_interp_run(m, (const ncc_value_t *const *)args, e->nparams, NULL, &want,
					 &err);
	ck_assert_msg(st == NCC_OK, "%s: interp: %s", what, err.msg);
	const void *in[64];
	ck_assert_int_le(e->nparams, 64);
	for (int32_t p = 0; p < e->nparams; p++)
		in[p] = args[p]->data;
	for (int opt = 0; opt <= 2; opt++) {
		ncc_run_t r;
		int rc = run_at(text, opt, in, (uint32_t)e->nparams, &r);
		ck_assert_msg(rc == 0, "%s -O%d: %s", what, opt, r.msg);
		for (uint32_t o = 0; o < r.n_out; o++) {
			int32_t k = (int32_t)o;
			const ncc_value_t *wl = value_leaf(want, &k);
			ck_assert_ptr_nonnull(wl);
			ck_assert_uint_eq(r.out_size[o], wl->nbytes);
			if (exact) {
				for (size_t b = 0; b < wl->nbytes; b++)
					ck_assert_msg(((const uint8_t *)r.out[o])[b] == ((const uint8_t *)wl->data)[b],
						      "%s -O%d: output %u differs from the interpreter at byte %zu",
						      what, opt, o, b);
				continue;
			}
			ncc_value_t *got = NULL;
			ck_assert_int_eq(ncc_value_alloc(&wl->shape, &got), NCC_OK);
			memcpy(got->data, r.out[o], got->nbytes);
			ncc_tolerance_t tol = ncc_tolerance_for_module(wl->shape.etype);
			ncc_compare_result_t cr;
			ck_assert_msg(ncc_value_compare(wl, got, &tol, &cr), "%s -O%d: output %u: %s", what,
				      opt, o, cr.msg);
			ncc_value_free(got);
		}
		ncc_run_free(&r);
	}
	ncc_value_free(want);
	if (own)
		ncc_interp_free_args(own, nown);
	ncc_module_free(m);
}

/* The compile error of text at -O0 (the test fails when it compiles). */
static void compile_error(const char *text, char *msg, size_t len)
{
	ncc_run_t r;
	int rc = run_at(text, 0, NULL, 0, &r);
	ck_assert_msg(rc != 0, "compiled although it should not");
	snprintf(msg, len, "%s", r.msg);
	ncc_run_free(&r);
}

/* ------------------------------------------------------ variadic reduce */

/* torch_xla's minmax_func for argmax (GE) / argmin (LE) */
#define MINMAX_FUNC(NAME, VT, IT, DIR)                                                            \
	"%" NAME " (mm_lv: " VT "[], mm_li: " IT "[], mm_rv: " VT "[], mm_ri: " IT "[]) -> (" VT "[], " \
	IT "[]) {\n"                                                                                  \
	"  mm_lv = " VT "[] parameter(0)\n  mm_rv = " VT "[] parameter(2)\n"                          \
	"  mm_c = pred[] compare(mm_lv, mm_rv), direction=" DIR "\n"                                  \
	"  mm_sv = " VT "[] select(mm_c, mm_lv, mm_rv)\n"                                             \
	"  mm_eq = pred[] compare(mm_lv, mm_rv), direction=EQ\n"                                      \
	"  mm_li = " IT "[] parameter(1)\n  mm_ri = " IT "[] parameter(3)\n"                          \
	"  mm_mn = " IT "[] minimum(mm_li, mm_ri)\n  mm_si = " IT "[] select(mm_c, mm_li, mm_ri)\n"   \
	"  mm_sel = " IT "[] select(mm_eq, mm_mn, mm_si)\n"                                           \
	"  ROOT mm_t = (" VT "[], " IT "[]) tuple(mm_sv, mm_sel)\n}\n"

static const char *const k_argmax_rows =
	"HloModule m\n" MINMAX_FUNC("argmax", "f32", "s32", "GE")
	"ENTRY e {\n  x = f32[4,5] parameter(0)\n  io = s32[4,5] iota(), iota_dimension=1\n"
	"  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
	"  r = (f32[4], s32[4]) reduce(x, io, ninf, z), dimensions={1}, to_apply=%argmax\n"
	"  v = f32[4] get-tuple-element(r), index=0\n  i = s32[4] get-tuple-element(r), index=1\n"
	"  ROOT o = (f32[4], s32[4]) tuple(v, i)\n}\n";

START_TEST(test_argmax_ties_take_the_first_index)
{
	/* ties (first wins), -inf everywhere, a max at the last position, -0 == +0 */
	static const float x[20] = {
		1, 3, 3, 2, 3,
		-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
		-5, -4, -3, -2, -1,
		-0.0f, 0.0f, -1, -0.0f, -2,
	};
	static const float want_v[4] = { 3, -INFINITY, -1, 0 };
	static const int32_t want_i[4] = { 1, 0, 4, 0 };
	const void *in[1] = { x };
	for (int opt = 0; opt <= 2; opt++) {
		ncc_run_t r;
		int rc = run_at(k_argmax_rows, opt, in, 1, &r);
		ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
		ck_assert_uint_eq(r.n_out, 2);
		const float *v = r.out[0];
		const int32_t *i = r.out[1];
		for (int k = 0; k < 4; k++) {
			ck_assert_msg(v[k] == want_v[k], "-O%d row %d: value %g want %g", opt, k, v[k], want_v[k]);
			ck_assert_msg(i[k] == want_i[k], "-O%d row %d: index %d want %d", opt, k, i[k], want_i[k]);
		}
		ncc_run_free(&r);
	}
	ncc_module_t *m = parse(k_argmax_rows);
	ncc_value_t *a;
	ck_assert_int_eq(ncc_value_alloc(&m->entry->params[0]->shape, &a), NCC_OK);
	memcpy(a->data, x, sizeof(x));
	ncc_module_free(m);
	device_matches_interp("argmax rows", k_argmax_rows, &a, 0, true);
	ncc_value_free(a);
	device_matches_interp("argmax rows (random)", k_argmax_rows, NULL, 7, true);
}
END_TEST

START_TEST(test_argmax_nan_wins)
{
	/* a NaN is the max and its first position the index (torch's argmax); the
	 * interpreter folds torch_xla's comparator, which is not NaN-aware, so this is
	 * checked by hand */
	static const float x[20] = {
		1, NAN, 3, NAN, 0,
		NAN, 1, 2, 3, 4,
		1, 2, 3, 4, NAN,
		1, 2, 9, 4, 5,
	};
	const void *in[1] = { x };
	static const int32_t want_i[4] = { 1, 0, 4, 2 };
	for (int opt = 0; opt <= 2; opt++) {
		ncc_run_t r;
		int rc = run_at(k_argmax_rows, opt, in, 1, &r);
		ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
		const float *v = r.out[0];
		const int32_t *i = r.out[1];
		for (int k = 0; k < 4; k++) {
			ck_assert_msg(k == 3 ? v[k] == 9 : isnan(v[k]), "-O%d row %d: value %g", opt, k, v[k]);
			ck_assert_msg(i[k] == want_i[k], "-O%d row %d: index %d want %d", opt, k, i[k], want_i[k]);
		}
		ncc_run_free(&r);
	}
}
END_TEST

START_TEST(test_argminmax_forms)
{
	static const char *const cases[] = {
		/* argmin over dim 0 (strided reads) with an s64 index and a non-trivial init */
		"HloModule m\n" MINMAX_FUNC("amin", "f32", "s64", "LE")
		"ENTRY e {\n  x = f32[6,3] parameter(0)\n  io = s64[6,3] iota(), iota_dimension=0\n"
		"  c = f32[] constant(0.25)\n  z = s64[] constant(-1)\n"
		"  ROOT r = (f32[3], s64[3]) reduce(x, io, c, z), dimensions={0}, to_apply=%amin\n}\n",
		/* torch's argmax() of a whole tensor: reshape to 1-D, rank-0 results */
		"HloModule m\n" MINMAX_FUNC("amax", "f32", "s32", "GE")
		"ENTRY e {\n  x = f32[3,4,5] parameter(0)\n  f = f32[60] reshape(x)\n"
		"  io = s32[60] iota(), iota_dimension=0\n  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
		"  r = (f32[], s32[]) reduce(f, io, ninf, z), dimensions={0}, to_apply=%amax\n"
		"  i = s32[] get-tuple-element(r), index=1\n  ROOT o = s64[] convert(i)\n}\n",
		/* several reduced dims, bf16 values */
		"HloModule m\n" MINMAX_FUNC("amax", "bf16", "s32", "GT")
		"ENTRY e {\n  x = bf16[3,4,5] parameter(0)\n  io = s32[3,4,5] parameter(1)\n"
		"  ninf = bf16[] constant(-inf)\n  z = s32[] constant(0)\n"
		"  ROOT r = (bf16[4], s32[4]) reduce(x, io, ninf, z), dimensions={0,2}, to_apply=%amax\n}\n",
		/* integer values (few distinct: many ties), the index from a parameter */
		"HloModule m\n" MINMAX_FUNC("amax", "s32", "s32", "GE")
		"ENTRY e {\n  x = s32[5,7] parameter(0)\n  io = s32[5,7] parameter(1)\n"
		"  lo = s32[] constant(-2147483648)\n  z = s32[] constant(0)\n"
		"  ROOT r = (s32[5], s32[5]) reduce(x, io, lo, z), dimensions={1}, to_apply=%amax\n}\n",
		/* independent results: a sum and a max over the same dims */
		"HloModule m\n%sm (a: f32[], b: f32[], c: f32[], d: f32[]) -> (f32[], f32[]) {\n"
		"  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n"
		"  d = f32[] parameter(3)\n  s = f32[] add(a, c)\n  mx = f32[] maximum(d, b)\n"
		"  ROOT t = (f32[], f32[]) tuple(s, mx)\n}\n"
		"ENTRY e {\n  x = f32[4,6] parameter(0)\n  y = f32[4,6] parameter(1)\n"
		"  z = f32[] constant(0)\n  ninf = f32[] constant(-inf)\n"
		"  ROOT r = (f32[4], f32[4]) reduce(x, y, z, ninf), dimensions={1}, to_apply=%sm\n}\n",
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char what[32];
		snprintf(what, sizeof(what), "case %zu", k);
		device_matches_interp(what, cases[k], NULL, 11 + k, k != 4);
	}
}
END_TEST

START_TEST(test_variadic_reduce_unsupported_names_the_instruction)
{
	/* a comparator that is not argmax-shaped: the index is the sum */
	const char *t = "HloModule m\n%odd (a: f32[], b: s32[], c: f32[], d: s32[]) -> (f32[], s32[]) {\n"
			"  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n"
			"  d = s32[] parameter(3)\n  k = pred[] compare(a, c), direction=GE\n"
			"  v = f32[] select(k, a, c)\n  i = s32[] add(b, d)\n"
			"  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
			"ENTRY e {\n  x = f32[8] parameter(0)\n  io = s32[8] iota(), iota_dimension=0\n"
			"  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
			"  ROOT reduce.62 = (f32[], s32[]) reduce(x, io, ninf, z), dimensions={0}, to_apply=%odd\n}\n";
	char msg[1200];
	compile_error(t, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "unsupported variadic") && strstr(msg, "reduce.62"), "%s", msg);
}
END_TEST

static Suite *torch_ops_suite(void)
{
	Suite *s = suite_create("lower_torch");
	TCase *tc = tcase_create("ops");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_argmax_ties_take_the_first_index);
	tcase_add_test(tc, test_argmax_nan_wins);
	tcase_add_test(tc, test_argminmax_forms);
	tcase_add_test(tc, test_variadic_reduce_unsupported_names_the_instruction);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(torch_ops_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
