/* Check tests of the ncc back end on the ops PyTorch/XLA 2.9 emits beyond the corpus (issue #12 item 7): variadic argmax/argmin reduces, select-and-scatter with any scatter combiner, XLA's general gather and scatter. Each case runs on libfwsim at -O0, -O1 and -O2 (after the passes) and is compared with the reference interpreter, plus hand-computed values where the semantics are the point. Small shapes: the whole file runs in seconds. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parser.h"
#include "interp/interp.h"
#include "hlo/ir.h"
#include "lower/lower.h"
#include "lower_run.h"
#include "options.h"
#include "passes/passes.h"
#include "hlo/verify.h"
#include "ncc_check_parse.h"

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
				/* one check per output (Check records every assertion
				 * that passes: one per byte of a 4 MB output took 6 s) */
				const uint8_t *g = r.out[o], *wb = wl->data;
				size_t b = wl->nbytes;
				if (memcmp(g, wb, wl->nbytes))
					for (b = 0; g[b] == wb[b]; b++)
						;
				if (b < wl->nbytes)
					ck_abort_msg("%s -O%d: output %u differs from the interpreter at byte %zu",
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
	/* ties (first wins), -inf everywhere, a max at the last position, -0 == +0
	 * (a +0 first: the value is REDUCE MAX's IEEE +0 of tied zeros, the
	 * comparator's fold the first of them, docs/compiler.md) */
	static const float x[20] = {
		1, 3, 3, 2, 3,
		-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
		-5, -4, -3, -2, -1,
		0.0f, -0.0f, -1, -0.0f, -2,
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

/* The driver picks the reductions' family (lower.c): one-result reduce and
 * reduce-window, the variadic reduce, batch norm, select-and-scatter; each
 * unsupported form keeps its own reason. */
START_TEST(test_reduction_family_reasons)
{
	const char *t = "HloModule m\n" MINMAX_FUNC("argmax", "f32", "s32", "GE")
			"%sub (sa: f32[], sb: f32[]) -> f32[] { sa = f32[] parameter(0)\n"
			" sb = f32[] parameter(1)\n ROOT sc = f32[] subtract(sa, sb) }\n"
			"%add (aa: f32[], ab: f32[]) -> f32[] { aa = f32[] parameter(0)\n"
			" ab = f32[] parameter(1)\n ROOT ac = f32[] add(aa, ab) }\n"
			"%ge (ga: f32[], gb: f32[]) -> pred[] { ga = f32[] parameter(0)\n"
			" gb = f32[] parameter(1)\n ROOT gc = pred[] compare(ga, gb), direction=GE }\n"
			"ENTRY e {\n  x = f32[4] parameter(0)\n  io = s32[4] iota(), iota_dimension=0\n"
			"  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n  zf = f32[] constant(0)\n"
			"  ok = f32[] reduce(x, zf), dimensions={0}, to_apply=%add\n"
			"  bad = f32[] reduce(x, zf), dimensions={0}, to_apply=%sub\n"
			"  var = (f32[], s32[]) reduce(x, io, ninf, z), dimensions={0}, to_apply=%argmax\n"
			"  varw = (f32[2], s32[2]) reduce-window(x, io, ninf, z), window={size=2 stride=2}, to_apply=%argmax\n"
			"  s = f32[2] parameter(1)\n"
			"  sas = f32[4] select-and-scatter(x, s, zf), window={size=2 stride=2}, select=%ge, scatter=%add\n"
			"  sasbad = f32[4] select-and-scatter(x, s, zf), window={size=2 stride=2}, select=%ge, scatter=%sub\n"
			"  b = f32[4,2] parameter(2)\n  f = f32[2] parameter(3)\n"
			"  bn = f32[4,2] batch-norm-inference(b, f, f, f, f), epsilon=0.001, feature_index=1\n"
			"  ROOT o = f32[] add(ok, bad)\n}\n";
	static const struct { const char *inst; const char *reason; } cases[] = {
		{ "ok", NULL },
		{ "bad", "unsupported reduction computation" },
		{ "var", NULL },
		{ "varw", "unsupported variadic (multi-operand) reduce-window" },
		{ "sas", NULL },
		{ "sasbad", "unsupported select-and-scatter scatter computation" },
		{ "bn", NULL },
	};
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_parse_hlo(t, strlen(t), "t", &m, &err) == NCC_OK, "%s", err.msg);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const ncc_inst_t *inst = ncc_comp_find_inst(m->entry, cases[i].inst);
		ck_assert_ptr_nonnull(inst);
		const char *why = NULL;
		bool ok = ncc_lower_supports(inst, &why);
		if (!cases[i].reason)
			ck_assert_msg(ok, "%s: %s", cases[i].inst, why ? why : "?");
		else
			ck_assert_msg(!ok && why && strstr(why, cases[i].reason), "%s: %s", cases[i].inst,
				      why ? why : "(supported)");
	}
	ncc_module_free(m);
}
END_TEST

/* ---------------------------------------------- select-and-scatter combiners */

#define SAS_COMPS                                                                              \
	"%ge (ge_a: f32[], ge_b: f32[]) -> pred[] { ge_a = f32[] parameter(0)\n"                  \
	" ge_b = f32[] parameter(1)\n ROOT ge_c = pred[] compare(ge_a, ge_b), direction=GE }\n"   \
	"%gt (gt_a: f32[], gt_b: f32[]) -> pred[] { gt_a = f32[] parameter(0)\n"                  \
	" gt_b = f32[] parameter(1)\n ROOT gt_c = pred[] compare(gt_a, gt_b), direction=GT }\n"   \
	"%le (le_a: f32[], le_b: f32[]) -> pred[] { le_a = f32[] parameter(0)\n"                  \
	" le_b = f32[] parameter(1)\n ROOT le_c = pred[] compare(le_a, le_b), direction=LE }\n"   \
	"%mx (mx_a: f32[], mx_b: f32[]) -> f32[] { mx_a = f32[] parameter(0)\n"                   \
	" mx_b = f32[] parameter(1)\n ROOT mx_c = f32[] maximum(mx_a, mx_b) }\n"                  \
	"%mn (mn_a: f32[], mn_b: f32[]) -> f32[] { mn_a = f32[] parameter(0)\n"                   \
	" mn_b = f32[] parameter(1)\n ROOT mn_c = f32[] minimum(mn_a, mn_b) }\n"                  \
	"%mul (mu_a: f32[], mu_b: f32[]) -> f32[] { mu_a = f32[] parameter(0)\n"                  \
	" mu_b = f32[] parameter(1)\n ROOT mu_c = f32[] multiply(mu_a, mu_b) }\n"

static void matches_with_x(const char *what, const char *text, uint64_t seed,
			   void (*fill)(float *, int64_t, int), int arg);

/* x[k] = k % 7, x[1] NaN */
static void fill_mod7_nan(float *x, int64_t n, int arg)
{
	(void)arg;
	for (int64_t k = 0; k < n; k++)
		x[k] = (float)(k % 7);
	x[1] = NAN;
}

START_TEST(test_select_and_scatter_combiners)
{
	/* torch_xla's ComputeMaxPoolIndices body: one 3x3 window, scatter=max from -inf,
	 * then "!= -inf" marks the selected position */
	static const float win[9] = { 1, 7, 7, 2, 3, 7, 0, 1, 2 };
	static const float srcv[1] = { 5 };
	const char *t0 = "HloModule m\n" SAS_COMPS
			 "ENTRY e { x = f32[1,1,3,3] parameter(0)\n s = f32[1,1,1,1] parameter(1)\n"
			 " i = f32[] constant(-inf)\n"
			 " ROOT r = f32[1,1,3,3] select-and-scatter(x, s, i), window={size=1x1x3x3 stride=1x1x2x2},"
			 " select=%ge, scatter=%mx }\n";
	const void *in[2] = { win, srcv };
	for (int opt = 0; opt <= 2; opt++) {
		ncc_run_t r;
		int rc = run_at(t0, opt, in, 2, &r);
		ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
		const float *o = r.out[0];
		for (int k = 0; k < 9; k++)
			ck_assert_msg(o[k] == (k == 1 ? 5 : -INFINITY), "-O%d: element %d is %g", opt, k, o[k]);
		ncc_run_free(&r);
	}
	/* every combiner and select, overlapping and padded windows, against the
	 * interpreter */
	static const char *const scat[] = { "mx", "mn", "mul" };
	static const char *const sel[] = { "ge", "gt", "le" };
	/* up to 64 windows take the few-windows form, more the per-offset form */
	static const char *const windows[] = {
		"window={size=1x3x3 stride=1x1x1}", /* overlapping */
		"window={size=1x3x3 stride=1x2x2 pad=0_0x1_1x1_1}", /* resnet's max-pool */
		"window={size=1x2x2 stride=1x2x2}",
		"window={size=1x3x3 stride=1x2x2 pad=0_0x1_1x1_1}", /* 128 windows */
		"window={size=1x3x3 stride=1x1x1}", /* 338 overlapping windows */
	};
	static const char *const xs[] = { "f32[2,6,6]", "f32[2,6,6]", "f32[2,6,6]", "f32[2,16,16]",
					  "f32[2,15,15]" };
	static const char *const srcs[] = { "f32[2,4,4]", "f32[2,3,3]", "f32[2,3,3]", "f32[2,8,8]",
					    "f32[2,13,13]" };
	int n = 0;
	for (size_t c = 0; c < 3; c++)
		for (size_t w = 0; w < 5; w++) {
			char text[4096];
			snprintf(text, sizeof(text),
				 "HloModule m\n%s"
				 "ENTRY e { x = %s parameter(0)\n s = %s parameter(1)\n"
				 " i = f32[] parameter(2)\n"
				 " ROOT r = %s select-and-scatter(x, s, i), %s, select=%%%s, scatter=%%%s }\n",
				 SAS_COMPS, xs[w], srcs[w], xs[w], windows[w], sel[n++ % 3], scat[c]);
			char what[64];
			snprintf(what, sizeof(what), "scatter=%s window %zu", scat[c], w);
			device_matches_interp(what, text, NULL, 100 + c * 5 + w, c != 2);
		}
	/* a NaN in a window takes part in the walk as in XLA's select-and-scatter
	 * (and the interpreter): select(current, NaN) is false, so the NaN is
	 * selected, and select(NaN, next) is false, so the next element replaces
	 * it. Window 0 of x = k % 7 (x[1] NaN) then ends on its largest element
	 * after the NaN: row 2, col 0 (6) of the one 3x3 window; row 1, col 1 (6)
	 * of the 33x33 plane's first window */
	for (int big = 0; big <= 1; big++) {
		char text[4096];
		int64_t side = big ? 33 : 3;
		snprintf(text, sizeof(text),
			 "HloModule m\n%s"
			 "ENTRY e { x = f32[1,1,%lld,%lld] parameter(0)\n s = f32[1,1,%lld,%lld] parameter(1)\n"
			 " i = f32[] constant(-inf)\n"
			 " ROOT r = f32[1,1,%lld,%lld] select-and-scatter(x, s, i), window={size=1x1x3x3 stride=1x1x2x2},"
			 " select=%%ge, scatter=%%mx }\n", SAS_COMPS, (long long)side, (long long)side,
			 (long long)(side / 2), (long long)(side / 2), (long long)side, (long long)side);
		float xv[33 * 33], sv[16 * 16];
		for (int k = 0; k < 33 * 33; k++)
			xv[k] = (float)(k % 7);
		for (int k = 0; k < 16 * 16; k++)
			sv[k] = 1;
		xv[1] = NAN; /* in the first window */
		const void *in2[2] = { xv, sv };
		for (int opt = 0; opt <= 2; opt += 2) {
			ncc_run_t r;
			int rc = run_at(text, opt, in2, 2, &r);
			ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
			const float *o = r.out[0];
			/* window 0 covers rows 0-2, cols 0-2; rows and cols 0-1 are its
			 * alone */
			int sy = big ? 1 : 2, sx = big ? 1 : 0;
			for (int y = 0; y < (big ? 2 : 3); y++)
				for (int x = 0; x < (big ? 2 : 3); x++)
					ck_assert_msg(o[y * side + x] == (y == sy && x == sx ? 1 : -INFINITY),
						      "-O%d big %d: (%d,%d) is %g", opt, big, y, x, o[y * side + x]);
			ncc_run_free(&r);
			matches_with_x(big ? "NaN window, 33x33" : "NaN window, 3x3", text, 7, fill_mod7_nan,
				       0);
		}
	}
}
END_TEST

/* bf16 and f16 max-pool gradients: one SELSCAT in the operands' dtype, each
 * combine rounded to it, against the interpreter (exact); overlapping 3x3
 * stride-2 windows, so sources that pick the same element add up. */
START_TEST(test_select_and_scatter_halves)
{
	static const char *const tmpl =
		"HloModule m\n%ge (a: T[], b: T[]) -> pred[] { a = T[] parameter(0)\n"
		" b = T[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=GE }\n"
		"%add (p: T[], q: T[]) -> T[] { p = T[] parameter(0)\n q = T[] parameter(1)\n"
		" ROOT t = T[] add(p, q) }\n"
		"ENTRY e { x = T[2,4,9,9] parameter(0)\n s = T[2,4,5,5] parameter(1)\n"
		" i = T[] parameter(2)\n ROOT r = T[2,4,9,9] select-and-scatter(x, s, i), "
		"window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, select=%ge, scatter=%add }\n";
	static const char *const dts[] = { "bf16", "f16" };
	for (int d = 0; d < 2; d++) {
		char text[2048];
		size_t n = 0;
		for (const char *c = tmpl; *c && n + 8 < sizeof(text); c++) {
			if (*c == 'T' && c[1] == '[') {
				n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", dts[d]);
				continue;
			}
			text[n++] = *c;
		}
		text[n] = 0;
		device_matches_interp(dts[d], text, NULL, 300 + (uint64_t)d, true);
	}
}
END_TEST

/* device_matches_interp (exact) on random arguments from seed, parameter 0
 * (f32) refilled by fill(x, n, arg) when fill is not NULL. */
static void matches_with_x(const char *what, const char *text, uint64_t seed,
			   void (*fill)(float *, int64_t, int), int arg)
{
	ncc_module_t *m = parse(text);
	ncc_value_t **args = NULL;
	int32_t nargs = 0;
	ck_assert_int_eq(ncc_interp_random_args(m, seed, &args, &nargs), NCC_OK);
	if (fill)
		fill(args[0]->data, ncc_value_elements(args[0]), arg);
	device_matches_interp(what, text, args, 0, true);
	for (int32_t a = 0; a < nargs; a++)
		ncc_value_free(args[a]);
	free(args);
	ncc_module_free(m);
}

/* ties everywhere: small integers */
static void fill_ties(float *x, int64_t n, int arg)
{
	(void)arg;
	for (int64_t k = 0; k < n; k++)
		x[k] = (float)(k * 7 % 3);
}

/* NaNs, small integers (ties), and in every other band of 64 elements only
 * values below (arg 0) or above (arg 1) 0.25 */
static void fill_nan_ties_bands(float *x, int64_t n, int arg)
{
	for (int64_t k = 0; k < n; k++)
		x[k] = k % 97 == 5 ? NAN : (float)(k % 5) - 2 + ((k / 64) % 2 ? (arg ? 4.0f : -4.0f) : 0.0f);
}

/* Zeros of both signs in no regular order, and every seventh value past them
 * (-1 for max, arg 0; 1 for min): most windows' result is a zero that ties
 * of +0 and -0 decide */
static void fill_signed_zeros(float *x, int64_t n, int arg)
{
	for (int64_t k = 0; k < n; k++)
		x[k] = k % 7 == 3 ? (arg ? 1.0f : -1.0f) : (k * 5 / 3) % 2 ? -0.0f : 0.0f;
}

/* The dense-windows form's sums (scatter=add, ResNet's max-pool gradient):
 * bit for bit the interpreter's, which adds in source order, with random
 * values, with ties everywhere (small integers), (the larger shape, once)
 * with a batch cut into parts of its outer dim, and NHWC (the im2col's
 * window elements inside the batch dim alone). */
START_TEST(test_select_and_scatter_add_dense)
{
	static const char *const sel[] = { "ge", "gt", "le" };
	static const char *const shapes[][3] = {
		{ "f32[2,4,16,16]", "f32[2,4,8,8]", "size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1" },
		/* 2.4 MB of windows a batch element: a part each */
		{ "f32[4,64,64,64]", "f32[4,64,32,32]", "size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1" },
		/* NHWC: the window elements inside the batch only */
		{ "f32[2,16,16,8]", "f32[2,8,8,8]", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0" },
	};
	for (size_t c = 0; c < 3; c++)
		for (size_t sh = 0; sh < 3; sh++)
			for (int ties = 0; ties <= 1; ties++) {
				if (sh == 1 && (c != 0 || ties != 0))
					continue;
				char text[4096];
				snprintf(text, sizeof(text),
					 "HloModule m\n%s"
					 "%%ad (ad_a: f32[], ad_b: f32[]) -> f32[] { ad_a = f32[] parameter(0)\n"
					 " ad_b = f32[] parameter(1)\n ROOT ad_c = f32[] add(ad_a, ad_b) }\n"
					 "ENTRY e { x = %s parameter(0)\n s = %s parameter(1)\n"
					 " i = f32[] constant(0)\n"
					 " ROOT r = %s select-and-scatter(x, s, i), window={%s},"
					 " select=%%%s, scatter=%%ad }\n",
					 SAS_COMPS, shapes[sh][0], shapes[sh][1], shapes[sh][0], shapes[sh][2], sel[c]);
				char what[64];
				snprintf(what, sizeof(what), "select=%s shape %zu ties %d", sel[c], sh, ties);
				matches_with_x(what, text, 300 + c, ties ? fill_ties : NULL, 0);
			}
}
END_TEST

/* reduce-window MAX and MIN over small windows and many outputs gather the
 * windows and fold them in a FUSED: bit for bit the interpreter's, padded
 * (with the init value), from an init that is not the identity, with NaNs and
 * ties, with zeros of both signs (IEEE maximum and minimum: +0 above -0,
 * from the other zero as init), (the larger shape, once) over a batch cut
 * into parts, and NHWC (the im2col's window elements inside the batch dim
 * alone, not inside batch and channels). */
START_TEST(test_reduce_window_dense)
{
	static const char *const comb[] = { "mx", "mn" };
	static const char *const shapes[][3] = {
		{ "f32[2,8,32,32]", "f32[2,8,16,16]", "size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1" },
		/* 2.4 MB of windows a batch element: a part each */
		{ "f32[4,64,64,64]", "f32[4,64,32,32]", "size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1" },
		/* NHWC: the window elements inside the batch only */
		{ "f32[2,32,32,8]", "f32[2,16,16,8]", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0" },
	};
	/* per values v (random, NaN ties bands, signed zeros): max's, min's */
	static const char *const inits[3][2] = { { "-inf", "inf" }, { "0.25", "0.25" }, { "-0", "0" } };
	void (*const fills[3])(float *, int64_t, int) = { NULL, fill_nan_ties_bands, fill_signed_zeros };
	for (size_t c = 0; c < 2; c++)
		for (size_t sh = 0; sh < 3; sh++)
			for (int v = 0; v < 3; v++) {
				if (sh == 1 && (c != 0 || v != 0))
					continue;
				char text[4096];
				snprintf(text, sizeof(text),
					 "HloModule m\n%s"
					 "ENTRY e { x = %s parameter(0)\n"
					 " i = f32[] constant(%s)\n"
					 " ROOT r = %s reduce-window(x, i), window={%s}, to_apply=%%%s }\n",
					 SAS_COMPS, shapes[sh][0], inits[v][c], shapes[sh][1], shapes[sh][2],
					 comb[c]);
				char what[64];
				snprintf(what, sizeof(what), "reduce-window %s shape %zu values %d", comb[c], sh, v);
				matches_with_x(what, text, 400 + c, fills[v], (int)c);
			}
}
END_TEST

/* maximum, minimum, clamp (bounds as arrays, and as scalars -0 and 6: the
 * register-held bounds of a ReLU6's form), ReLU's maximum with a broadcast 0,
 * bf16 maximum, and reduce max along rows (301 elements: the vector path and
 * a tail) and min along columns, over zeros of both signs in every order:
 * bit for bit the interpreter's IEEE maximum and minimum at -O0 (one
 * instruction each) and -O1, -O2 (fused). */
START_TEST(test_minmax_signed_zeros_match_interp)
{
	static const char *const text =
		"HloModule m\n" SAS_COMPS
		"ENTRY e { x = f32[64,301] parameter(0)\n y = f32[64,301] parameter(1)\n"
		" a = f32[64,301] maximum(x, y)\n b = f32[64,301] minimum(x, y)\n"
		" z = f32[] constant(0)\n nz = f32[] constant(-0)\n six = f32[] constant(6)\n"
		" zb = f32[64,301] broadcast(z), dimensions={}\n"
		" c = f32[64,301] clamp(y, x, zb)\n r6 = f32[64,301] clamp(nz, x, six)\n"
		" relu = f32[64,301] maximum(zb, x)\n"
		" xb = bf16[64,301] convert(x)\n yb = bf16[64,301] convert(y)\n"
		" mb = bf16[64,301] maximum(yb, xb)\n"
		" ninf = f32[] constant(-inf)\n inf = f32[] constant(inf)\n"
		" rx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=%mx\n"
		" ry = f32[301] reduce(y, inf), dimensions={0}, to_apply=%mn\n"
		" ROOT t = (f32[64,301], f32[64,301], f32[64,301], f32[64,301], f32[64,301], bf16[64,301],"
		" f32[64], f32[301]) tuple(a, b, c, r6, relu, mb, rx, ry) }\n";
	ncc_module_t *m = parse(text);
	ncc_value_t **args = NULL;
	int32_t nargs = 0;
	ck_assert_int_eq(ncc_interp_random_args(m, 77, &args, &nargs), NCC_OK);
	/* x: zeros and -1 (rows whose max is a zero), y: zeros and 1 (columns
	 * whose min is a zero), the signs of the zeros in no regular order; every
	 * other zero of y flipped, so x and y pair zeros of each sign with both */
	fill_signed_zeros(args[0]->data, ncc_value_elements(args[0]), 0);
	fill_signed_zeros(args[1]->data, ncc_value_elements(args[1]), 1);
	float *y = args[1]->data;
	for (int64_t k = 0; k < ncc_value_elements(args[1]); k += 2)
		if (y[k] == 0)
			y[k] = -y[k];
	device_matches_interp("signed zeros", text, args, 0, true);
	for (int32_t a = 0; a < nargs; a++)
		ncc_value_free(args[a]);
	free(args);
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------- torch_xla's max-pool indices loop */

static char *read_torch_hlo(const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", NCC_TORCH_HLO_DIR, name);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Replaces the first occurrence of from by to in *text (reallocated). */
static void replace_once(char **text, const char *from, const char *to)
{
	char *at = strstr(*text, from);
	ck_assert_msg(at != NULL, "'%s' not found", from);
	size_t pre = (size_t)(at - *text), nf = strlen(from), nt = strlen(to), tail = strlen(at + nf);
	char *r = malloc(pre + nt + tail + 1);
	memcpy(r, *text, pre);
	memcpy(r + pre, to, nt);
	memcpy(r + pre + nt, at + nf, tail + 1);
	free(*text);
	*text = r;
}

static int count_op(const ncc_module_t *m, ncc_opcode_t op)
{
	int n = 0;
	for (int32_t c = 0; c < m->ncomps; c++)
		for (int32_t i = 0; i < m->comps[c]->ninsts; i++)
			n += m->comps[c]->insts[i]->op == op;
	return n;
}

START_TEST(test_maxpool_indices_loop)
{
	/* F.max_pool2d(x, 3, 2, padding=1, return_indices=True): the values from a
	 * reduce-window, the indices from a while loop of select-and-scatter(ge, max)
	 * over each window; ties take the first position, as torch does */
	char *text = read_torch_hlo("maxpool_indices.hlo");
	static const float x[32] = {
		1, 5, 5, 0,   2, 9, 9, 9,   0, 0, 0, 0,   3, 1, 4, 1, /* channel 0 */
		-1, -2, -3, -4,   -5, -6, -7, -8,   -9, -8, -7, -6,   -5, -4, -3, -2,
	};
	const void *in[1] = { x };
	for (int opt = 0; opt <= 2; opt++) {
		ncc_run_t r;
		int rc = run_at(text, opt, in, 1, &r);
		ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
		const uint32_t *idx = r.out[1];
		/* brute force: window (oy, ox) covers rows 2oy-1..2oy+1, cols 2ox-1..2ox+1 */
		for (int c = 0; c < 2; c++)
			for (int oy = 0; oy < 2; oy++)
				for (int ox = 0; ox < 2; ox++) {
					float best = -INFINITY;
					int bi = -1;
					for (int y = 2 * oy - 1; y <= 2 * oy + 1; y++)
						for (int xx = 2 * ox - 1; xx <= 2 * ox + 1; xx++)
							if (y >= 0 && y < 4 && xx >= 0 && xx < 4 &&
							    x[c * 16 + y * 4 + xx] > best) {
								best = x[c * 16 + y * 4 + xx];
								bi = y * 4 + xx;
							}
					int o = c * 4 + oy * 2 + ox;
					ck_assert_msg(idx[o] == (uint32_t)bi && ((const float *)r.out[0])[o] == best,
						      "-O%d: output %d: index %u value %g, want %d %g", opt, o, idx[o],
						      ((const float *)r.out[0])[o], bi, best);
				}
		ncc_run_free(&r);
	}
	device_matches_interp("max-pool indices", text, NULL, 5, true);

	/* nothing reads the indices (resnet18's forward and backward): the passes
	 * remove the loop, the values stay */
	replace_once(&text, "->(f32[1,2,2,2]{3,2,1,0}, u32[1,2,2,2]{3,2,1,0})}", "->(f32[1,2,2,2]{3,2,1,0})}");
	replace_once(&text, "-> (f32[1,2,2,2], u32[1,2,2,2]) {", "-> (f32[1,2,2,2]) {");
	replace_once(&text, "ROOT %tuple.174 = (f32[1,2,2,2]{3,2,1,0}, u32[1,2,2,2]{3,2,1,0}) tuple("
			    "f32[1,2,2,2]{3,2,1,0} %reduce-window.13, u32[1,2,2,2]{3,2,1,0} %reshape.173)",
		     "ROOT %tuple.174 = (f32[1,2,2,2]{3,2,1,0}) tuple(f32[1,2,2,2]{3,2,1,0} %reduce-window.13)");
	ncc_module_t *m = parse(text);
	ck_assert_int_eq(count_op(m, NCC_OP_WHILE), 1);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = 2;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_run_passes(m, &o, &err), NCC_OK);
	ck_assert_int_eq(count_op(m, NCC_OP_WHILE), 0);
	ck_assert_int_eq(count_op(m, NCC_OP_SELECT_AND_SCATTER), 0);
	ncc_module_free(m);
	device_matches_interp("max-pool, indices unused", text, NULL, 6, true);
	free(text);
}
END_TEST

START_TEST(test_dead_loop_with_side_effect_kept)
{
	/* a dead loop whose body has a side-effecting custom-call stays */
	const char *t = "HloModule m\n"
			"%c (cp: (s32[], f32[4])) -> pred[] { cp = (s32[], f32[4]) parameter(0)\n"
			" ci = s32[] get-tuple-element(cp), index=0\n n = s32[] constant(3)\n"
			" ROOT lt = pred[] compare(ci, n), direction=LT }\n"
			"%b (bp: (s32[], f32[4])) -> (s32[], f32[4]) { bp = (s32[], f32[4]) parameter(0)\n"
			" bi = s32[] get-tuple-element(bp), index=0\n bv = f32[4] get-tuple-element(bp), index=1\n"
			" one = s32[] constant(1)\n nx = s32[] add(bi, one)\n"
			" fx = f32[4] custom-call(bv), custom_call_target=\"Flush\", custom_call_has_side_effect=true\n"
			" ROOT bt = (s32[], f32[4]) tuple(nx, bv) }\n"
			"ENTRY e { x = f32[4] parameter(0)\n z = s32[] constant(0)\n"
			" t = (s32[], f32[4]) tuple(z, x)\n w = (s32[], f32[4]) while(t), condition=%c, body=%b\n"
			" ROOT r = f32[4] negate(x) }\n";
	ncc_module_t *m = parse(t);
	bool changed = false;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_pass_dce(m, &changed, &err), NCC_OK);
	ck_assert_int_eq(count_op(m, NCC_OP_WHILE), 1);
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------ general gather and scatter */

/* Arguments for m: parameter p gets ints[p] (n values, repeated) when given, else
 * seeded random values. Free with ncc_interp_free_args(args, nparams). */
static ncc_value_t **make_args(const ncc_module_t *m, uint64_t seed, const int64_t *const *ints,
			       const int *nints)
{
	int32_t np = m->entry->nparams;
	ncc_value_t **a = calloc((size_t)np + 1, sizeof(*a));
	for (int32_t p = 0; p < np; p++) {
		ck_assert_int_eq(ncc_value_alloc(&m->entry->params[p]->shape, &a[p]), NCC_OK);
		if (ints && ints[p]) {
			for (int64_t i = 0; i < ncc_value_elements(a[p]); i++)
				ncc_value_set_i64(a[p], i, ints[p][i % nints[p]]);
		} else {
			ncc_value_fill_random(a[p], seed + (uint64_t)p);
		}
	}
	return a;
}

static void gs_case(const char *what, const char *text, const int64_t *const *ints, const int *nints,
		    bool exact)
{
	ncc_module_t *m = parse(text);
	ncc_value_t **a = make_args(m, 17, ints, nints);
	int32_t np = m->entry->nparams;
	ncc_module_free(m);
	device_matches_interp(what, text, a, 0, exact);
	ncc_interp_free_args(a, np);
}

#define ADD_COMB "%add (ad_a: f32[], ad_b: f32[]) -> f32[] { ad_a = f32[] parameter(0)\n" \
	" ad_b = f32[] parameter(1)\n ROOT ad_c = f32[] add(ad_a, ad_b) }\n"
#define MAX_COMB "%max (mx_a: f32[], mx_b: f32[]) -> f32[] { mx_a = f32[] parameter(0)\n" \
	" mx_b = f32[] parameter(1)\n ROOT mx_c = f32[] maximum(mx_a, mx_b) }\n"
#define SET_COMB "%set (st_a: f32[], st_b: f32[]) -> f32[] { st_a = f32[] parameter(0)\n" \
	" ROOT st_b = f32[] parameter(1) }\n"

START_TEST(test_general_gather)
{
	/* torch.gather(x, 1, idx): the index vectors are (iota, idx, iota) */
	static const int64_t g1[] = { 0, 2, 0, 0, 5, 1, 1, 0, 2, 4, 1, 3, 3, 3, 6, 2, 9, 1 };
	const int64_t *i1[2] = { NULL, g1 };
	const int n1[2] = { 0, 18 };
	gs_case("torch.gather dim 1",
		"HloModule m\nENTRY e { x = f32[5,6,7] parameter(0)\n i = u32[5,3,7,3] parameter(1)\n"
		" ROOT g = f32[5,3,7] gather(x, i), offset_dims={}, collapsed_slice_dims={0,1,2},"
		" start_index_map={0,1,2}, index_vector_dim=3, slice_sizes={1,1,1} }\n", i1, n1, true);
	/* x[i, :, j] of a transposed operand (advanced indexing, s64 pairs, some out of
	 * range: clamped) */
	static const int64_t g2[] = { 0, 6, 4, 0, 7, 2, -1, 3 };
	const int64_t *i2[2] = { NULL, g2 };
	const int n2[2] = { 0, 8 };
	gs_case("x[i, :, j]",
		"HloModule m\nENTRY e { y = f32[5,6,7] parameter(0)\n"
		" x = f32[5,7,6] transpose(y), dimensions={0,2,1}\n i = s64[4,2] parameter(1)\n"
		" ROOT g = f32[4,6] gather(x, i), offset_dims={1}, collapsed_slice_dims={0,1},"
		" start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1,6} }\n", i2, n2, true);
	/* windows on the indexed dims (dynamic-slice-like), clamped starts */
	static const int64_t g3[] = { 0, 0, 5, 7, 2, 3, -4, 6 };
	const int64_t *i3[2] = { NULL, g3 };
	const int n3[2] = { 0, 8 };
	gs_case("2x3 windows",
		"HloModule m\nENTRY e { x = f32[6,8] parameter(0)\n i = s32[4,2] parameter(1)\n"
		" ROOT g = f32[4,2,3] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={},"
		" start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,3} }\n", i3, n3, true);
	/* the index vector along dim 0, offset dims before the batch dims, a partial
	 * non-indexed window */
	static const int64_t g4[] = { 1, 4, 0, 2, 3, 1 };
	const int64_t *i4[2] = { NULL, g4 };
	const int n4[2] = { 0, 6 };
	gs_case("index vector dim 0",
		"HloModule m\nENTRY e { x = f32[5,6,4] parameter(0)\n i = s32[2,3] parameter(1)\n"
		" ROOT g = f32[3,3,3] gather(x, i), offset_dims={0,2}, collapsed_slice_dims={1},"
		" start_index_map={0,1}, index_vector_dim=0, slice_sizes={3,1,3} }\n", i4, n4, true);
	/* operand batching dims (XLA's batched gather) */
	static const int64_t g5[] = { 4, 0, 2, 1, 9, 3 };
	const int64_t *i5[2] = { NULL, g5 };
	const int n5[2] = { 0, 6 };
	gs_case("batched gather",
		"HloModule m\nENTRY e { x = f32[3,5,4] parameter(0)\n i = s32[3,2,1] parameter(1)\n"
		" ROOT g = f32[3,2,4] gather(x, i), offset_dims={2}, collapsed_slice_dims={1},"
		" operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1},"
		" index_vector_dim=2, slice_sizes={1,1,4} }\n", i5, n5, true);
	/* bf16 table, u8 indices */
	static const int64_t g6[] = { 3, 0, 2, 200 };
	const int64_t *i6[2] = { NULL, g6 };
	const int n6[2] = { 0, 4 };
	gs_case("bf16 pairs",
		"HloModule m\nENTRY e { x = bf16[4,5] parameter(0)\n i = u8[2,2] parameter(1)\n"
		" ROOT g = bf16[2] gather(x, i), offset_dims={}, collapsed_slice_dims={0,1},"
		" start_index_map={1,0}, index_vector_dim=1, slice_sizes={1,1} }\n", i6, n6, true);
}
END_TEST

START_TEST(test_general_scatter)
{
	/* scatter_add(y, 1, idx, src): pairs (iota, idx) */
	static const int64_t s1[] = { 0, 1, 0, 5, 0, 1, 1, 0, 1, 0, 1, 2, 2, 5, 2, 5, 2, 5,
				      3, 3, 3, 4, 3, 0, 4, 2, 4, 2, 4, 7 };
	const int64_t *i1[3] = { NULL, s1, NULL };
	const int n1[3] = { 0, 30, 0 };
	gs_case("scatter_add dim 1",
		"HloModule m\n" ADD_COMB "ENTRY e { y = f32[5,6] parameter(0)\n i = s64[5,3,2] parameter(1)\n"
		" u = f32[5,3] parameter(2)\n"
		" ROOT s = f32[5,6] scatter(y, i, u), update_window_dims={}, inserted_window_dims={0,1},"
		" scatter_dims_to_operand_dims={0,1}, index_vector_dim=2, to_apply=%add }\n", i1, n1, false);
	/* index_put (assign) of single elements, duplicates (the last wins), one out of
	 * range (skipped) */
	static const int64_t s2[] = { 1, 2, 3, 4, 1, 2, 5, 0 };
	const int64_t *i2[3] = { NULL, s2, NULL };
	const int n2[3] = { 0, 8, 0 };
	gs_case("index_put",
		"HloModule m\n" SET_COMB "ENTRY e { y = f32[5,6] parameter(0)\n i = s64[4,2] parameter(1)\n"
		" u = f32[4] parameter(2)\n"
		" ROOT s = f32[5,6] scatter(y, i, u), update_window_dims={}, inserted_window_dims={0,1},"
		" scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%set }\n", i2, n2, true);
	/* 2x3 update windows, max, windows that do not fit skipped */
	static const int64_t s3[] = { 0, 0, 4, 5, 5, 0, 2, 6, -1, 2, 1, 1 };
	const int64_t *i3[3] = { NULL, s3, NULL };
	const int n3[3] = { 0, 12, 0 };
	gs_case("windows",
		"HloModule m\n" MAX_COMB "ENTRY e { y = f32[6,8] parameter(0)\n i = s32[6,2] parameter(1)\n"
		" u = f32[6,2,3] parameter(2)\n"
		" ROOT s = f32[6,8] scatter(y, i, u), update_window_dims={1,2}, inserted_window_dims={},"
		" scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%max }\n", i3, n3, true);
	/* batched scatter, update window before the scatter dim */
	static const int64_t s4[] = { 2, 0, 4, 4 };
	const int64_t *i4[3] = { NULL, s4, NULL };
	const int n4[3] = { 0, 4, 0 };
	gs_case("batched scatter",
		"HloModule m\n" ADD_COMB "ENTRY e { y = f32[3,5,4] parameter(0)\n i = s32[3,2] parameter(1)\n"
		" u = f32[4,3,2] parameter(2)\n"
		" ROOT s = f32[3,5,4] scatter(y, i, u), update_window_dims={0}, inserted_window_dims={1},"
		" input_batching_dims={0}, scatter_indices_batching_dims={0},"
		" scatter_dims_to_operand_dims={1}, index_vector_dim=2, to_apply=%add }\n", i4, n4, false);
}
END_TEST

/* ------------------------------------ dynamic slices at a computed offset */

START_TEST(test_dynamic_slice_windows)
{
	static const char *const cases[] = {
		/* a small window of a big operand (starts clamped at both ends) */
		"ENTRY e { x = f32[4,6,9,9] parameter(0)\n a = s32[] parameter(1)\n b = u32[] parameter(2)\n"
		" c = s64[] parameter(3)\n ROOT d = f32[1,2,3,3] dynamic-slice(x, a, b, c, c), dynamic_slice_sizes={1,2,3,3} }",
		/* a transposed (strided) operand, u64 starts */
		"ENTRY e { y = f32[7,5] parameter(0)\n x = f32[5,7] transpose(y), dimensions={1,0}\n"
		" a = u64[] parameter(1)\n b = u64[] parameter(2)\n ROOT d = f32[2,4] dynamic-slice(x, a, b), dynamic_slice_sizes={2,4} }",
		/* a reversed operand (negative stride: the dim-by-dim form) */
		"ENTRY e { y = f32[6,5] parameter(0)\n x = f32[6,5] reverse(y), dimensions={0}\n"
		" a = s32[] parameter(1)\n b = s32[] parameter(2)\n ROOT d = f32[3,2] dynamic-slice(x, a, b), dynamic_slice_sizes={3,2} }",
		/* update windows: into a big operand, from a strided update, s8 starts */
		"ENTRY e { x = f32[3,8,8] parameter(0)\n u = f32[1,3,2] parameter(1)\n a = s8[] parameter(2)\n"
		" b = s8[] parameter(3)\n ROOT d = f32[3,8,8] dynamic-update-slice(x, u, a, b, b) }",
		"ENTRY e { x = s32[5,6] parameter(0)\n v = s32[4,2] parameter(1)\n u = s32[2,4] transpose(v), dimensions={1,0}\n"
		" a = s32[] parameter(2)\n b = s32[] parameter(3)\n ROOT d = s32[5,6] dynamic-update-slice(x, u, a, b) }",
	};
	static const int64_t big[] = { 100 }, neg[] = { -3 }, mid[] = { 2 }, one[] = { 1 };
	const int64_t *starts[][4] = {
		{ NULL, mid, big, neg }, { NULL, one, big, NULL }, { NULL, mid, big, NULL },
		{ NULL, NULL, one, big }, { NULL, NULL, neg, mid },
	};
	const int n1[4] = { 1, 1, 1, 1 };
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char text[2048], what[32];
		snprintf(text, sizeof(text), "HloModule m\n%s\n", cases[k]);
		snprintf(what, sizeof(what), "case %zu", k);
		gs_case(what, text, starts[k], n1, true);
	}
	/* the same with every start value in range (the interpreter's random args) */
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char text[2048], what[32];
		snprintf(text, sizeof(text), "HloModule m\n%s\n", cases[k]);
		snprintf(what, sizeof(what), "random case %zu", k);
		device_matches_interp(what, text, NULL, 40 + k, true);
	}
}
END_TEST

/* A loop that writes one element of its state per iteration updates it in place;
 * one that also reads the old state after the update must not. */
START_TEST(test_loop_update_in_place)
{
	static const char *const bodies[] = {
		/* in place: the state leaf's only reader is the update */
		"  ROOT bt = (s32[], f32[6]) tuple(n, u)\n",
		/* not in place: the old state is read after the update */
		"  old = f32[6] add(v, v)\n  nw = f32[6] add(u, old)\n  ROOT bt = (s32[], f32[6]) tuple(n, nw)\n",
	};
	for (int k = 0; k < 2; k++) {
		char text[2048];
		snprintf(text, sizeof(text),
			 "HloModule m\n"
			 "%%c (cp: (s32[], f32[6])) -> pred[] { cp = (s32[], f32[6]) parameter(0)\n"
			 " ci = s32[] get-tuple-element(cp), index=0\n lim = s32[] constant(6)\n"
			 " ROOT lt = pred[] compare(ci, lim), direction=LT }\n"
			 "%%b (bp: (s32[], f32[6])) -> (s32[], f32[6]) { bp = (s32[], f32[6]) parameter(0)\n"
			 "  i = s32[] get-tuple-element(bp), index=0\n  v = f32[6] get-tuple-element(bp), index=1\n"
			 "  f = f32[] convert(i)\n  r = f32[1] reshape(f)\n  u = f32[6] dynamic-update-slice(v, r, i)\n"
			 "  one = s32[] constant(1)\n  n = s32[] add(i, one)\n%s}\n"
			 "ENTRY e { x = f32[6] parameter(0)\n z = s32[] constant(0)\n"
			 " t = (s32[], f32[6]) tuple(z, x)\n w = (s32[], f32[6]) while(t), condition=%%c, body=%%b\n"
			 " ROOT o = f32[6] get-tuple-element(w), index=1 }\n", bodies[k]);
		char what[32];
		snprintf(what, sizeof(what), "loop %d", k);
		device_matches_interp(what, text, NULL, 60 + k, true);
	}
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
	tcase_add_test(tc, test_reduction_family_reasons);
	tcase_add_test(tc, test_select_and_scatter_combiners);
	tcase_add_test(tc, test_select_and_scatter_halves);
	tcase_add_test(tc, test_select_and_scatter_add_dense);
	tcase_add_test(tc, test_reduce_window_dense);
	tcase_add_test(tc, test_minmax_signed_zeros_match_interp);
	tcase_add_test(tc, test_maxpool_indices_loop);
	tcase_add_test(tc, test_dead_loop_with_side_effect_kept);
	tcase_add_test(tc, test_general_gather);
	tcase_add_test(tc, test_general_scatter);
	tcase_add_test(tc, test_dynamic_slice_windows);
	tcase_add_test(tc, test_loop_update_in_place);
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
