/* The optimisation passes: each rewrite, what must not be rewritten, the dump hook, and before/after equivalence on the simulator (and the reference interpreter when built in) over small modules and the corpus. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "neuronsim/half.h"
#include "hlo/hlo_parser.h"
#include "interp/interp.h"
#include "hlo/ir.h"
#include "lower/lower.h"
#include "lower/lower_run.h"
#include "neuronsim/isa.h"
#include "options.h"
#include "passes/passes.h"
#include "hlo/verify.h"
#include "corpus_split.h"
#include "ncc_check_parse.h"

#ifndef NCC_HLO_CORPUS
#define NCC_HLO_CORPUS "../shared/hlo"
#endif

/* ---- helpers ---- */

static void passes(ncc_module_t *m, int level)
{
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = level;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_run_passes(m, &o, &err);
	ck_assert_msg(st == NCC_OK, "passes: %s", err.msg);
}

static int count_op(const ncc_comp_t *c, ncc_opcode_t op)
{
	int n = 0;
	for (int32_t i = 0; i < c->ninsts; i++)
		n += c->insts[i]->op == op;
	return n;
}

static int count_fusions(const ncc_module_t *m) { return count_op(m->entry, NCC_OP_FUSION); }

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

static double tol_for(uint32_t dt)
{
	switch (dt) {
	case ISA_DT_BF16: return 2e-2;
	case ISA_DT_F16: return 2e-3;
	case ISA_DT_F32: return 1e-4;
	default: return 0;
	}
}

static double elem_f(uint32_t dt, const uint8_t *p, uint64_t i)
{
	switch (dt) {
	case ISA_DT_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
	case ISA_DT_BF16: {
		uint16_t h;
		memcpy(&h, p + 2 * i, 2);
		uint32_t u = (uint32_t)h << 16;
		float v;
		memcpy(&v, &u, 4);
		return v;
	}
	case ISA_DT_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return ns_f16_to_f32(h); }
	default: return 0;
	}
}

/* ck_assert_msg for per-element loops: a passing Check assertion records its
 * location (a write to Check's message file), and the corpus outputs have millions
 * of elements: that was most of this test's time. This one asserts only when expr
 * fails, with Check's own report. */
#define CHECK_ELEM(expr, ...)                         \
	do {                                          \
		if (!(expr))                          \
			ck_assert_msg(expr, __VA_ARGS__); \
	} while (0)

/* Compares two runs' outputs: integers and pred bit-exact, floats within a
 * relative tolerance of the type (NaN matches NaN). */
static void compare_runs(const char *what, const ncc_run_t *a, const ncc_run_t *b)
{
	ck_assert_uint_eq(a->n_out, b->n_out);
	for (uint32_t o = 0; o < a->n_out; o++) {
		ck_assert_uint_eq(a->out_size[o], b->out_size[o]);
		ck_assert_uint_eq(a->out_dtype[o], b->out_dtype[o]);
		uint32_t dt = a->out_dtype[o];
		const uint8_t *x = a->out[o], *y = b->out[o];
		if (!isa_dtype_is_float(dt)) {
			ck_assert_msg(memcmp(x, y, a->out_size[o]) == 0, "%s: output %u (%s) differs",
				      what, o, isa_dtype_name(dt));
			continue;
		}
		uint64_t n = a->out_size[o] / isa_dtype_size(dt);
		double tol = tol_for(dt);
		for (uint64_t i = 0; i < n; i++) {
			double u = elem_f(dt, x, i), v = elem_f(dt, y, i);
			if (isnan(u) && isnan(v))
				continue;
			if (isinf(u) && u == v)
				continue;
			CHECK_ELEM(fabs(u - v) <= tol * (fabs(u) > 1 ? fabs(u) : 1),
				      "%s: output %u (%s) element %llu: %.9g before, %.9g after", what,
				      o, isa_dtype_name(dt), (unsigned long long)i, u, v);
		}
	}
}

/* Runs text as written and after the passes of `level` on the simulator with
 * the same seeded inputs and the same back-end options (so the instruction
 * counts differ by the passes only) and compares the outputs. Returns the
 * executed instruction counts. */
static bool equiv_try(const char *what, const char *text, int level, uint64_t *out_before,
		      uint64_t *out_after, char *why, size_t why_len);

static void equiv(const char *what, const char *text, int level, uint64_t *out_before,
		  uint64_t *out_after)
{
	char why[1200];
	ck_assert_msg(equiv_try(what, text, level, out_before, out_after, why, sizeof(why)),
		      "%s before: %s", what, why);
}

/* As equiv(), but returns false (with the reason) when the module as written
 * does not run: the back end lacks one of its ops, nothing to compare. */
static bool equiv_try(const char *what, const char *text, int level, uint64_t *out_before,
		      uint64_t *out_after, char *why, size_t why_len)
{
	ncc_module_t *m0 = parse(text), *m1 = parse(text);
	passes(m1, level);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = level;
	ncc_run_t a, b;
	int ra = ncc_run_module_opts(m0, NULL, &o, NULL, 0, 7, &a, NULL);
	if (ra != 0) {
		snprintf(why, why_len, "%s", a.msg);
		ncc_run_free(&a);
		ncc_module_free(m0);
		ncc_module_free(m1);
		return false;
	}
	int rb = ncc_run_module_opts(m1, NULL, &o, NULL, 0, 7, &b, NULL);
	ck_assert_msg(rb == 0, "%s after: %s", what, b.msg);
	compare_runs(what, &a, &b);
	if (out_before)
		*out_before = a.insns;
	if (out_after)
		*out_after = b.insns;
	ncc_run_free(&a);
	ncc_run_free(&b);
	ncc_module_free(m0);
	ncc_module_free(m1);
	return true;
}

/* The oracle: the reference interpreter on the module before and after the
 * passes of `level`, same seeded arguments; integers bit-exact, floats within
 * the interpreter's per-op tolerance (tol_module: the whole-module one). */
static void interp_equiv(const char *what, const char *text, int level, bool tol_module)
{
	ncc_module_t *m0 = parse(text), *m1 = parse(text);
	passes(m1, level);
	ncc_value_t **args;
	int32_t nargs;
	ck_assert_int_eq(ncc_interp_random_args(m0, 11, &args, &nargs), NCC_OK);
	ncc_value_t *a = NULL, *b = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_interp_run(m0, (const ncc_value_t *const *)args, nargs, NULL, &a, &err);
	ck_assert_msg(st == NCC_OK, "%s: interp before: %s", what, err.msg);
	st = ncc_interp_run(m1, (const ncc_value_t *const *)args, nargs, NULL, &b, &err);
	ck_assert_msg(st == NCC_OK, "%s: interp after -O%d: %s", what, level, err.msg);
	ncc_compare_result_t cr;
	ncc_tolerance_t tol = ncc_tolerance_for_module(NCC_F32);
	bool eq = ncc_value_compare(a, b, tol_module ? &tol : NULL, &cr);
	ck_assert_msg(eq, "%s: -O%d changes the result: %s", what, level, cr.msg);
	ncc_value_free(a);
	ncc_value_free(b);
	ncc_interp_free_args(args, nargs);
	ncc_module_free(m0);
	ncc_module_free(m1);
}

/* ---- DCE ---- */

START_TEST(test_dce_removes_unused_and_uncalled)
{
	ncc_module_t *m = parse(
		"HloModule t\n"
		"add_c { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n"
		"ENTRY e { p0 = f32[4] parameter(0)  p1 = f32[4] parameter(1)\n"
		"  dead = f32[4] multiply(p0, p1)\n"
		"  z = f32[] constant(0)\n"
		"  deadr = f32[] reduce(p0, z), dimensions={0}, to_apply=add_c\n"
		"  ROOT r = f32[4] add(p0, p1) }\n");
	bool ch = false;
	ck_assert_int_eq(ncc_pass_dce(m, &ch, NULL), NCC_OK);
	ck_assert(ch);
	ck_assert_int_eq(m->entry->ninsts, 3); /* p0, p1, r: parameters always stay */
	ck_assert_int_eq(m->ncomps, 1);          /* add_c is no longer called */
	ck_assert_ptr_nonnull(m->entry->params[1]);
	ck_assert_int_eq(ncc_pass_dce(m, &ch, NULL), NCC_OK);
	ck_assert(!ch);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_dce_keeps_side_effects_and_unused_params)
{
	ncc_module_t *m = parse(
		"HloModule t\n"
		"ENTRY e { p0 = f32[4] parameter(0)  p1 = f32[4] parameter(1)\n"
		"  cc = f32[4] custom-call(p0), custom_call_target=\"x\", custom_call_has_side_effect=true\n"
		"  ROOT r = f32[4] negate(p0) }\n");
	ck_assert_int_eq(ncc_pass_dce(m, NULL, NULL), NCC_OK);
	ck_assert_int_eq(m->entry->ninsts, 4);
	ncc_module_free(m);
}
END_TEST

/* ---- CSE ---- */

START_TEST(test_cse_merges_duplicates_not_rng)
{
	ncc_module_t *m = parse(
		"HloModule t\n"
		"ENTRY e { p0 = f32[4] parameter(0)  p1 = f32[4] parameter(1)\n"
		"  a = f32[4] add(p0, p1), metadata={op_type=\"aten__add\" source_line=3}\n"
		"  b = f32[4] add(p0, p1), metadata={op_type=\"aten__add\" source_line=9}\n"
		"  ea = f32[4] exponential(a)  eb = f32[4] exponential(b)\n"
		"  c1 = f32[] constant(2)  c2 = f32[] constant(2)  c3 = f32[] constant(3)\n"
		"  s = u64[2] constant({1, 2})\n"
		"  r1 = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_philox\n"
		"  r2 = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_philox\n"
		"  ROOT t = (f32[4], f32[4], f32[], f32[], f32[], (u64[2], u32[4]), (u64[2], u32[4])) "
		"tuple(ea, eb, c1, c2, c3, r1, r2) }\n");
	bool ch;
	ck_assert_int_eq(ncc_pass_cse(m, &ch, NULL), NCC_OK);
	ck_assert(ch);
	ncc_inst_t *t = m->entry->root;
	ck_assert_ptr_eq(t->operands[0], t->operands[1]);   /* exp(a) == exp(b) */
	ck_assert_str_eq(t->operands[0]->operands[0]->name, "a"); /* first kept, with its metadata */
	ck_assert_int_eq(t->operands[0]->operands[0]->metadata.source_line, 3);
	ck_assert_ptr_eq(t->operands[2], t->operands[3]);   /* equal constants */
	ck_assert_ptr_ne(t->operands[2], t->operands[4]);
	ck_assert_ptr_ne(t->operands[5], t->operands[6]);   /* random bits stay distinct */
	ck_assert_int_eq(ncc_pass_dce(m, NULL, NULL), NCC_OK);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_ADD), 1);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_cse_distinguishes_attributes)
{
	ncc_module_t *m = parse(
		"HloModule t\n"
		"ENTRY e { p0 = f32[2,3] parameter(0)\n"
		"  a = f32[3,2] transpose(p0), dimensions={1,0}\n"
		"  b = f32[2,3,1] reshape(p0)\n"
		"  c = f32[2,3] slice(p0), slice={[0:2], [0:3]}\n"
		"  d = f32[1,3] slice(p0), slice={[1:2], [0:3]}\n"
		"  e1 = f32[1,3] slice(p0), slice={[0:1], [0:3]}\n"
		"  ROOT t = (f32[3,2], f32[2,3,1], f32[2,3], f32[1,3], f32[1,3]) tuple(a, b, c, d, e1) }\n");
	bool ch;
	ck_assert_int_eq(ncc_pass_cse(m, &ch, NULL), NCC_OK);
	ck_assert(!ch);
	ncc_module_free(m);
}
END_TEST

/* ---- simplification ---- */

static const char *k_simplify =
	"HloModule t\n"
	"ENTRY e { p0 = f32[2,3] parameter(0)  p1 = s32[2,3] parameter(1)  pp = pred[2,3] parameter(2)\n"
	"  z = f32[] constant(0)  zb = f32[2,3] broadcast(z), dimensions={}\n"
	"  one = f32[] constant(1)  ob = f32[2,3] broadcast(one), dimensions={}\n"
	"  iz = s32[] constant(0)  izb = s32[2,3] broadcast(iz), dimensions={}\n"
	"  a = f32[2,3] add(p0, zb)\n"
	"  b = f32[2,3] multiply(ob, a)\n"
	"  c = f32[2,3] divide(b, ob)\n"
	"  d = f32[2,3] subtract(c, zb)\n"
	"  n1 = f32[2,3] negate(d)  n2 = f32[2,3] negate(n1)\n"
	"  cv = f32[2,3] convert(n2)\n"
	"  r1 = f32[6] reshape(cv)  r2 = f32[3,2] reshape(r1)  r3 = f32[2,3] reshape(r2)\n"
	"  t1 = f32[3,2] transpose(r3), dimensions={1,0}  t2 = f32[2,3] transpose(t1), dimensions={1,0}\n"
	"  sl = f32[2,3] slice(t2), slice={[0:2], [0:3]}\n"
	"  tr = pred[] constant(true)  trb = pred[2,3] broadcast(tr), dimensions={}\n"
	"  se = f32[2,3] select(trb, sl, p0)\n"
	"  im = s32[2,3] multiply(p1, izb)\n"
	"  fm = f32[2,3] multiply(p0, zb)\n"
	"  an = pred[2,3] and(pp, trb)\n"
	"  cs = f32[2,3] constant({{5, 5, 5}, {5, 5, 5}})\n"
	"  ROOT t = (f32[2,3], s32[2,3], f32[2,3], pred[2,3], f32[2,3]) tuple(se, im, fm, an, cs) }\n";

START_TEST(test_simplify_rules)
{
	ncc_module_t *m = parse(k_simplify);
	passes(m, 1);
	ncc_inst_t *t = m->entry->root;
	/* the whole chain collapses to the parameter */
	ck_assert_str_eq(t->operands[0]->name, "p0");
	/* s32 x * 0 is 0 (a zero splat), f32 x * 0 is not (NaN * 0) */
	ck_assert_int_eq(t->operands[1]->op, NCC_OP_BROADCAST);
	ck_assert_int_eq(t->operands[2]->op, NCC_OP_MULTIPLY);
	ck_assert_str_eq(t->operands[3]->name, "pp");
	/* a splat constant becomes broadcast(scalar) */
	ck_assert_int_eq(t->operands[4]->op, NCC_OP_BROADCAST);
	ck_assert_int_eq(t->operands[4]->operands[0]->shape.rank, 0);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_RESHAPE), 0);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_TRANSPOSE), 0);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_NEGATE), 0);
	ncc_module_free(m);
	equiv("simplify", k_simplify, 1, NULL, NULL);
	interp_equiv("simplify", k_simplify, 1, false);
}
END_TEST

START_TEST(test_simplify_composes_chains)
{
	const char *text =
		"HloModule t\n"
		"ENTRY e { p0 = f32[2,3,4] parameter(0)  s = f32[] parameter(1)\n"
		"  t1 = f32[3,4,2] transpose(p0), dimensions={1,2,0}\n"
		"  t2 = f32[4,2,3] transpose(t1), dimensions={1,2,0}\n"
		"  r1 = f32[24] reshape(p0)  r2 = f32[6,4] reshape(r1)\n"
		"  b1 = f32[3] broadcast(s), dimensions={}  b2 = f32[2,3] broadcast(b1), dimensions={1}\n"
		"  rb = f32[6] reshape(b2)\n"
		"  tp = (f32[4,2,3], f32[6,4]) tuple(t2, r2)\n"
		"  g = f32[4,2,3] get-tuple-element(tp), index=0\n"
		"  ROOT t = (f32[4,2,3], f32[6,4], f32[2,3], f32[6]) tuple(g, r2, b2, rb) }\n";
	ncc_module_t *m = parse(text);
	passes(m, 1);
	ncc_inst_t *t = m->entry->root;
	ck_assert_int_eq(t->operands[0]->op, NCC_OP_TRANSPOSE); /* one transpose, of p0 */
	ck_assert_str_eq(t->operands[0]->operands[0]->name, "p0");
	ck_assert_int_eq(t->operands[0]->dimensions.v[0], 2);
	ck_assert_int_eq(t->operands[0]->dimensions.v[1], 0);
	ck_assert_int_eq(t->operands[0]->dimensions.v[2], 1);
	ck_assert_str_eq(t->operands[1]->operands[0]->name, "p0"); /* reshape of p0 */
	ck_assert_str_eq(t->operands[2]->operands[0]->name, "s");  /* broadcast of s */
	ck_assert_int_eq(t->operands[3]->op, NCC_OP_BROADCAST);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_GET_TUPLE_ELEMENT), 0);
	ncc_module_free(m);
	equiv("chains", text, 1, NULL, NULL);
	interp_equiv("chains", text, 1, false);
}
END_TEST

/* ---- folding ---- */

static const char *k_fold =
	"HloModule t\n"
	"ENTRY e { p0 = s32[4] parameter(0)\n"
	"  a = s32[4] constant({2147483647, -7, 9, 0})\n"
	"  b = s32[4] constant({1, 2, 0, 0})\n"
	"  s = s32[4] add(a, b)\n"          /* wraps */
	"  d = s32[4] divide(a, b)\n"       /* x / 0 = -1 */
	"  r = s32[4] remainder(a, b)\n"    /* x % 0 = x */
	"  f = f32[4] convert(s)\n"
	"  g = f32[4] multiply(f, f)\n"
	"  u = u8[4] convert(d)\n"
	"  c = pred[4] compare(a, b), direction=LT\n"
	"  sh = s32[4] shift-left(a, b)\n"
	"  tr = s32[2,2] reshape(r)  tt = s32[2,2] transpose(tr), dimensions={1,0}\n"
	"  sl = s32[2] slice(a), slice={[1:4:2]}\n"
	"  cc = s32[6] concatenate(sl, a), dimensions={0}\n"
	"  x = s32[4] add(p0, s)\n"
	"  h = f32[] constant(0.5)  hb = f32[4] broadcast(h), dimensions={}\n"
	"  k = f32[] constant(3)  kb = f32[4] broadcast(k), dimensions={}\n"
	"  hk = f32[4] multiply(hb, kb)\n"  /* splat fold: broadcast(1.5) */
	"  ROOT t = (s32[4], f32[4], u8[4], pred[4], s32[4], s32[2,2], s32[6], f32[4]) "
	"tuple(x, g, u, c, sh, tt, cc, hk) }\n";

START_TEST(test_fold_constant_subgraphs)
{
	ncc_module_t *m = parse(k_fold);
	passes(m, 1);
	ncc_inst_t *t = m->entry->root;
	ck_assert_int_eq(t->operands[0]->op, NCC_OP_ADD);
	ncc_inst_t *s = t->operands[0]->operands[1];
	ck_assert_int_eq(s->op, NCC_OP_CONSTANT);
	ck_assert_int_eq(ncc_literal_get_i64(&s->literal, 0), INT32_MIN); /* wrapped */
	for (int i = 1; i <= 6; i++)
		ck_assert_msg(t->operands[i]->op == NCC_OP_CONSTANT, "operand %d is %s", i,
			      ncc_opcode_name(t->operands[i]->op));
	ck_assert_int_eq(ncc_literal_get_i64(&t->operands[2]->literal, 2), 255); /* u8(-1) */
	ck_assert_int_eq(ncc_literal_get_i64(&t->operands[5]->literal, 1), 9); /* x % 0 = x */
	ck_assert_int_eq(t->operands[7]->op, NCC_OP_BROADCAST);
	ck_assert(ncc_literal_get_f64(&t->operands[7]->operands[0]->literal, 0) == 1.5);
	ncc_module_free(m);
	equiv("fold", k_fold, 1, NULL, NULL);
	interp_equiv("fold", k_fold, 1, false);
}
END_TEST

/* Folding evaluates through the interpreter (one semantics): the data movement
 * it folds (reshape, transpose, slice, concatenate) gives the interpreter's bytes,
 * NaN payloads, signalling NaNs, -0 and subnormals included, for 32-, 16- and
 * 64-bit elements. The constant's bytes are set after parsing: HLO text keeps no
 * NaN payload. */
START_TEST(test_fold_moves_bits_as_the_interpreter)
{
	static const struct { const char *type; int size; uint64_t bits[6]; } cases[] = {
		{ "f32", 4, { 0x7f800001, 0xffc00123, 0x80000000, 0x00000001, 0x7f7fffff, 0xff800000 } },
		{ "bf16", 2, { 0x7f81, 0xffc3, 0x8000, 0x0001, 0x7f7f, 0xff80 } },
		{ "f16", 2, { 0x7c01, 0xfe12, 0x8000, 0x0001, 0x7bff, 0xfc00 } },
		{ "u64", 8, { UINT64_MAX, 1ull << 63, 0, 1, 0x0123456789abcdefull, 42 } },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const char *ty = cases[k].type;
		char text[1024];
		snprintf(text, sizeof(text),
			 "HloModule t\nENTRY e { c = %s[2,3] constant({{1,2,3},{4,5,6}})\n"
			 "  tr = %s[3,2] transpose(c), dimensions={1,0}\n"
			 "  r = %s[6] reshape(tr)\n"
			 "  sl = %s[3] slice(r), slice={[1:6:2]}\n"
			 "  ROOT cc = %s[9] concatenate(sl, r), dimensions={0} }\n",
			 ty, ty, ty, ty, ty);
		ncc_module_t *m0 = parse(text), *m1 = parse(text);
		ncc_module_t *ms[2] = { m0, m1 };
		for (int i = 0; i < 2; i++) {
			ncc_inst_t *c = ncc_comp_find_inst(ms[i]->entry, "c");
			ck_assert_uint_eq(c->literal.nbytes, 6u * (size_t)cases[k].size);
			for (int e = 0; e < 6; e++) {
				uint64_t b = cases[k].bits[e];
				memcpy(c->literal.data + e * cases[k].size, &b, (size_t)cases[k].size);
			}
		}
		ncc_value_t *want = NULL;
		ncc_error_t err;
		memset(&err, 0, sizeof(err));
		ck_assert_msg(ncc_interp_run(m0, NULL, 0, NULL, &want, &err) == NCC_OK, "%s: %s", ty,
			      err.msg);
		bool changed = false;
		ck_assert_int_eq(ncc_pass_fold(m1, &changed, &err), NCC_OK);
		ck_assert(changed);
		const ncc_inst_t *root = m1->entry->root;
		ck_assert_msg(root->op == NCC_OP_CONSTANT, "%s: root is %s", ty, ncc_opcode_name(root->op));
		ck_assert_uint_eq(root->literal.nbytes, want->nbytes);
		ck_assert_msg(memcmp(root->literal.data, want->data, want->nbytes) == 0,
			      "%s: folded bytes differ from the interpreter's", ty);
		ncc_value_free(want);
		ncc_module_free(m0);
		ncc_module_free(m1);
	}
}
END_TEST

START_TEST(test_fold_leaves_elided_and_big_constants)
{
	const char *text =
		"HloModule t\n"
		"ENTRY e { c = f32[4] constant({...})\n"
		"  ROOT n = f32[4] negate(c) }\n";
	ncc_module_t *m = parse(text);
	passes(m, 1);
	ck_assert_int_eq(m->entry->root->op, NCC_OP_NEGATE);
	ncc_module_free(m);
	m = parse("HloModule t\nENTRY e { i = s32[100000] iota(), iota_dimension=0\n"
		  "  ROOT n = s32[100000] negate(i) }\n");
	passes(m, 1);
	ck_assert_int_eq(m->entry->root->op, NCC_OP_NEGATE);
	ncc_module_free(m);
}
END_TEST

/* ---- fusion ---- */

static const char *k_fuse =
	"HloModule t, input_output_alias={ {1}: (1, {}, must-alias) }\n"
	"ENTRY e { x = f32[8,16] parameter(0)  w = f32[8,16] parameter(1)  bias = f32[16] parameter(2)\n"
	"  lab = s64[8,16] parameter(3)\n"
	"  bb = f32[8,16] broadcast(bias), dimensions={1}\n"
	"  a = f32[8,16] add(x, bb), metadata={op_type=\"aten__add\" source_file=\"m.py\" source_line=10}\n"
	"  h = f32[] constant(0.5)  hb = f32[8,16] broadcast(h), dimensions={}\n"
	"  m1 = f32[8,16] multiply(a, hb)\n"
	"  t = f32[8,16] tanh(m1)\n"
	"  lf = f32[8,16] convert(lab)\n"
	"  g = f32[8,16] multiply(t, lf), metadata={op_type=\"aten__mul\" source_file=\"m.py\" source_line=12}\n"
	"  lr = f32[] constant(0.1)  lrb = f32[8,16] broadcast(lr), dimensions={}\n"
	"  gs = f32[8,16] multiply(g, lrb)\n"
	"  nw = f32[8,16] subtract(w, gs), metadata={op_type=\"aten__sub\" source_file=\"m.py\" source_line=20}\n"
	"  z = f32[] constant(0)  zb = f32[8,16] broadcast(z), dimensions={}\n"
	"  gt = pred[8,16] compare(a, zb), direction=GT\n"
	"  rl = f32[8,16] select(gt, a, zb)\n"
	"  ROOT out = (f32[8,16], f32[8,16], f32[8,16]) tuple(rl, nw, t) }\n";

START_TEST(test_fuse_elementwise_dag)
{
	ncc_module_t *m = parse(k_fuse);
	int32_t nparams = m->entry->nparams;
	passes(m, 2);
	/* a and t are used by two consumers each: they end fusions, the rest is
	 * absorbed (broadcasts and constants included) */
	ck_assert_int_ge(count_fusions(m), 2);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_TANH) + count_op(m->entry, NCC_OP_SUBTRACT) +
				 count_op(m->entry, NCC_OP_SELECT),
			 0);
	ncc_inst_t *out = m->entry->root;
	ncc_inst_t *nw = out->operands[1];
	ck_assert_int_eq(nw->op, NCC_OP_FUSION);
	ck_assert_str_eq(nw->fusion_kind, "kLoop");
	ck_assert_ptr_nonnull(nw->calls);
	ck_assert_int_eq(nw->calls->root->op, NCC_OP_SUBTRACT);
	/* the fusion carries its root's debug info */
	ck_assert_str_eq(nw->metadata.op_type, "aten__sub");
	ck_assert_int_eq(nw->metadata.source_line, 20);
	/* signature and aliasing intact */
	ck_assert_int_eq(m->entry->nparams, nparams);
	ck_assert_int_eq(m->naliases, 1);
	ck_assert_int_eq(m->aliases[0].param_number, 1);
	/* the result prints and parses back */
	char *s = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &s), NCC_OK);
	ncc_module_t *back = parse(s);
	ck_assert_int_eq(count_fusions(back), count_fusions(m));
	ncc_module_free(back);
	free(s);
	ncc_module_free(m);
	uint64_t before, after;
	equiv("fuse", k_fuse, 2, &before, &after);
	interp_equiv("fuse", k_fuse, 2, false);
	ck_assert_uint_lt(after, before);
}
END_TEST

START_TEST(test_fuse_types_and_scalar_bounds)
{
	const char *text =
		"HloModule t\n"
		"ENTRY e { x = bf16[3,5] parameter(0)  i = s32[3,5] parameter(1)  u = u8[3,5] parameter(2)\n"
		"  lo = bf16[] parameter(3)\n"
		"  xf = f32[3,5] convert(x)  e1 = f32[3,5] exponential(xf)  eb = bf16[3,5] convert(e1)\n"
		"  hi = bf16[] constant(2)\n"
		"  cl = bf16[3,5] clamp(lo, eb, hi)\n"
		"  c7 = s32[] constant(7)  c7b = s32[3,5] broadcast(c7), dimensions={}\n"
		"  ia = s32[3,5] multiply(i, c7b)  ib = s32[3,5] shift-right-arithmetic(ia, c7b)\n"
		"  uw = s32[3,5] convert(u)  ic = s32[3,5] xor(ib, uw)\n"
		"  ROOT t = (bf16[3,5], s32[3,5]) tuple(cl, ic) }\n";
	ncc_module_t *m = parse(text);
	passes(m, 2);
	ck_assert_int_eq(count_fusions(m), 2);
	ncc_module_free(m);
	equiv("types", text, 2, NULL, NULL);
	interp_equiv("types", text, 2, false);
}
END_TEST

START_TEST(test_fuse_respects_limits)
{
	/* 20 distinct inputs summed: more than one fused loop can take */
	char text[8192];
	int n = snprintf(text, sizeof(text), "HloModule t\nENTRY e {\n");
	for (int i = 0; i < 20; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "  p%d = f32[64] parameter(%d)\n", i, i);
	n += snprintf(text + n, sizeof(text) - (size_t)n, "  s1 = f32[64] add(p0, p1)\n");
	for (int i = 2; i < 20; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "  %ss%d = f32[64] add(s%d, p%d)\n",
			      i == 19 ? "ROOT " : "", i, i - 1, i);
	snprintf(text + n, sizeof(text) - (size_t)n, "}\n");
	ncc_module_t *m = parse(text);
	passes(m, 2);
	ck_assert_int_ge(count_fusions(m), 2);
	for (int32_t i = 0; i < m->entry->ninsts; i++)
		if (m->entry->insts[i]->op == NCC_OP_FUSION)
			ck_assert_int_le(m->entry->insts[i]->noperands, NCC_FUSE_MAX_INPUTS);
	ncc_module_free(m);
	equiv("limits", text, 2, NULL, NULL);
	interp_equiv("limits", text, 2, false);
}
END_TEST

/* Fusion in the computations the lowering emits as code: a while body and
 * condition, a called computation; never in a combiner. */
static const char *k_fuse_nested =
	"HloModule t\n"
	"comb { ca = f32[] parameter(0)  cb = f32[] parameter(1)  ROOT cs = f32[] add(ca, cb) }\n"
	"sq { sx = f32[8,16] parameter(0)  sy = f32[8,16] multiply(sx, sx)  sh = f32[] constant(0.5)\n"
	"  shb = f32[8,16] broadcast(sh), dimensions={}\n"
	"  ROOT sz = f32[8,16] multiply(sy, shb) }\n"
	"cond { kp = (s32[], f32[8,16]) parameter(0)  ki = s32[] get-tuple-element(kp), index=0\n"
	"  kn = s32[] constant(3)  ROOT klt = pred[] compare(ki, kn), direction=LT }\n"
	"body { bp = (s32[], f32[8,16]) parameter(0)  bi = s32[] get-tuple-element(bp), index=0\n"
	"  bv = f32[8,16] get-tuple-element(bp), index=1\n"
	"  one = s32[] constant(1)  bi1 = s32[] add(bi, one)\n"
	"  bt = f32[8,16] tanh(bv)  bc = f32[] constant(0.25)  bcb = f32[8,16] broadcast(bc), dimensions={}\n"
	"  bu = f32[8,16] multiply(bt, bcb)  bw = f32[8,16] add(bu, bv)\n"
	"  ROOT br = (s32[], f32[8,16]) tuple(bi1, bw) }\n"
	"ENTRY e { x = f32[8,16] parameter(0)  z = s32[] constant(0)\n"
	"  t0 = (s32[], f32[8,16]) tuple(z, x)\n"
	"  wl = (s32[], f32[8,16]) while(t0), condition=cond, body=body\n"
	"  v = f32[8,16] get-tuple-element(wl), index=1\n"
	"  c = f32[8,16] call(v), to_apply=sq\n"
	"  zf = f32[] constant(0)\n"
	"  ROOT r = f32[8] reduce(c, zf), dimensions={1}, to_apply=comb }\n";

START_TEST(test_fuse_in_while_body_and_call)
{
	ncc_module_t *m = parse(k_fuse_nested);
	passes(m, 2);
	const ncc_comp_t *body = ncc_module_find_comp(m, "body");
	const ncc_comp_t *sq = ncc_module_find_comp(m, "sq");
	const ncc_comp_t *comb = ncc_module_find_comp(m, "comb");
	ck_assert_ptr_nonnull(body);
	ck_assert_ptr_nonnull(sq);
	ck_assert_ptr_nonnull(comb);
	/* tanh, multiply, add of the body are one fused loop; the scalar
	 * counter add stays (one op alone) */
	ck_assert_int_eq(count_op(body, NCC_OP_FUSION), 1);
	ck_assert_int_eq(count_op(body, NCC_OP_TANH), 0);
	ck_assert_int_eq(count_op(body, NCC_OP_ADD), 1);
	ck_assert_int_eq(count_op(sq, NCC_OP_FUSION), 1);
	ck_assert_int_eq(count_op(sq, NCC_OP_MULTIPLY), 0);
	ck_assert_int_eq(count_op(comb, NCC_OP_FUSION), 0);
	char *s = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &s), NCC_OK);
	ncc_module_t *back = parse(s);
	ck_assert_int_eq(count_op(ncc_module_find_comp(back, "body"), NCC_OP_FUSION), 1);
	ncc_module_free(back);
	free(s);
	ncc_module_free(m);
	uint64_t before, after;
	equiv("fuse-nested", k_fuse_nested, 2, &before, &after);
	interp_equiv("fuse-nested", k_fuse_nested, 2, false);
	ck_assert_uint_lt(after, before);
	/* a combiner of two ops stays scalar code, even when a call uses it too */
	m = parse("HloModule t\n"
		  "comb { ca = f32[] parameter(0)  cb = f32[] parameter(1)  cs = f32[] add(ca, cb)\n"
		  "  ROOT cm = f32[] multiply(cs, ca) }\n"
		  "ENTRY e { x = f32[8] parameter(0)  y = f32[] parameter(1)  zf = f32[] constant(0)\n"
		  "  r = f32[] reduce(x, zf), dimensions={0}, to_apply=comb\n"
		  "  k = f32[] call(r, y), to_apply=comb\n"
		  "  ROOT t = (f32[], f32[]) tuple(r, k) }\n");
	passes(m, 2);
	const ncc_comp_t *cm = ncc_module_find_comp(m, "comb");
	ck_assert_ptr_nonnull(cm);
	ck_assert_int_eq(count_op(cm, NCC_OP_FUSION), 0);
	ck_assert_int_eq(count_op(cm, NCC_OP_MULTIPLY), 1);
	ncc_module_free(m);
}
END_TEST

/* Producer fusion into reductions (FUSED's reducing form): the Llama2
 * cross-entropy pattern at a small size. one_hot = compare(iota, labels) ->
 * convert -> multiply with log-probabilities -> reduce over the vocabulary;
 * the max over the vocabulary of logits - bias as well. */
static const char *k_fuse_onehot =
	"HloModule t\n"
	"add_f { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n"
	"max_f { c = f32[] parameter(0)  d = f32[] parameter(1)  ROOT m = f32[] maximum(c, d) }\n"
	"ENTRY e { logp = f32[3,5,37] parameter(0)  labels = s32[3,5] parameter(1)\n"
	"  bias = f32[37] parameter(2)\n"
	"  io = s32[3,5,37] iota(), iota_dimension=2\n"
	"  lb = s32[3,5,37] broadcast(labels), dimensions={0,1}\n"
	"  hot = pred[3,5,37] compare(io, lb), direction=EQ\n"
	"  hf = f32[3,5,37] convert(hot)\n"
	"  pr = f32[3,5,37] multiply(hf, logp)\n"
	"  z = f32[] constant(0)\n"
	"  picked = f32[3,5] reduce(pr, z), dimensions={2}, to_apply=add_f\n"
	"  bb = f32[3,5,37] broadcast(bias), dimensions={2}\n"
	"  sh = f32[3,5,37] subtract(logp, bb)\n"
	"  ninf = f32[] constant(-inf)\n"
	"  mx = f32[5] reduce(sh, ninf), dimensions={0,2}, to_apply=max_f\n"
	"  cnt = f32[37] reduce(hf, z), dimensions={0,1}, to_apply=add_f\n"
	"  ROOT out = (f32[3,5], f32[5], f32[37]) tuple(picked, mx, cnt) }\n";

START_TEST(test_fuse_reduce_producers_one_hot)
{
	ncc_module_t *m = parse(k_fuse_onehot);
	passes(m, 2);
	/* nothing of the size of logp is computed in the entry any more */
	ck_assert_int_eq(count_op(m->entry, NCC_OP_IOTA) + count_op(m->entry, NCC_OP_COMPARE) +
				 count_op(m->entry, NCC_OP_CONVERT) +
				 count_op(m->entry, NCC_OP_MULTIPLY) +
				 count_op(m->entry, NCC_OP_SUBTRACT) + count_op(m->entry, NCC_OP_REDUCE),
			 0);
	int kinput = 0;
	for (int32_t i = 0; i < m->entry->ninsts; i++) {
		const ncc_inst_t *x = m->entry->insts[i];
		if (x->op == NCC_OP_FUSION && !strcmp(x->fusion_kind, "kInput")) {
			kinput++;
			ck_assert_int_eq(x->calls->root->op, NCC_OP_REDUCE);
		}
	}
	ck_assert_int_eq(kinput, 3);
	char *s = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &s), NCC_OK);
	ncc_module_t *back = parse(s);
	ck_assert_int_eq(count_fusions(back), count_fusions(m));
	ncc_module_free(back);
	free(s);
	ncc_module_free(m);
	uint64_t before, after;
	equiv("onehot", k_fuse_onehot, 2, &before, &after);
	interp_equiv("onehot", k_fuse_onehot, 2, false);
	ck_assert_uint_lt(after, before);
}
END_TEST

/* More outputs than the simulator keeps accumulators for (2^20): the reduce
 * runs in parts; an iota along a kept dim checks each part's index start;
 * bf16 output, integer min, a kLoop with an iota, an iota of a size-1 dim. */
START_TEST(test_fuse_reduce_many_outputs_and_types)
{
	const char *text =
		"HloModule t\n"
		"add_f { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n"
		"min_i { c = s32[] parameter(0)  d = s32[] parameter(1)  ROOT m = s32[] minimum(c, d) }\n"
		"add_h { g = bf16[] parameter(0)  h = bf16[] parameter(1)  ROOT k = bf16[] add(g, h) }\n"
		"ENTRY e { x = f32[2,1100,1000] parameter(0)  w = bf16[7,1,9] parameter(1)\n"
		"  i1 = f32[2,1100,1000] iota(), iota_dimension=1\n"
		"  xi = f32[2,1100,1000] multiply(x, i1)\n"
		"  z = f32[] constant(0)\n"
		"  big = f32[1100,1000] reduce(xi, z), dimensions={0}, to_apply=add_f\n"
		"  j0 = s32[7,1,9] iota(), iota_dimension=0  j1 = s32[7,1,9] iota(), iota_dimension=1\n"
		"  j2 = s32[7,1,9] iota(), iota_dimension=2\n"
		"  t3 = s32[] constant(3)  t3b = s32[7,1,9] broadcast(t3), dimensions={}\n"
		"  jm = s32[7,1,9] multiply(j0, t3b)  js = s32[7,1,9] subtract(jm, j2)\n"
		"  ja = s32[7,1,9] add(js, j1)\n"
		"  big_i = s32[] constant(1000)\n"
		"  mi = s32[1] reduce(ja, big_i), dimensions={0,2}, to_apply=min_i\n"
		"  wf = bf16[7,1,9] exponential(w)  wn = bf16[7,1,9] negate(wf)\n"
		"  zh = bf16[] constant(0.5)\n"
		"  hs = bf16[9] reduce(wn, zh), dimensions={0,1}, to_apply=add_h\n"
		"  lp = s32[7,1,9] multiply(ja, ja)\n"
		"  ROOT out = (f32[1100,1000], s32[1], bf16[9], s32[7,1,9]) tuple(big, mi, hs, lp) }\n";
	ncc_module_t *m = parse(text);
	passes(m, 2);
	/* ja has two users: it ends a kLoop (iotas inside), and mi reduces it */
	ck_assert_int_eq(count_op(m->entry, NCC_OP_REDUCE), 1);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_IOTA), 0);
	ncc_module_free(m);
	equiv("reduce-many", text, 2, NULL, NULL);
	interp_equiv("reduce-many", text, 2, false);
	/* empty reductions give their init value at -O2 too (simplify folds
	 * them before fusion) */
	const char *empty =
		"HloModule t\n"
		"add_f { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n"
		"max_f { c = f32[] parameter(0)  d = f32[] parameter(1)  ROOT m = f32[] maximum(c, d) }\n"
		"ENTRY e { x = f32[4,0] parameter(0)  y = f32[] parameter(1)\n"
		"  ex = f32[4,0] exponential(x)  z = f32[] constant(-inf)\n"
		"  r0 = f32[4] reduce(ex, z), dimensions={1}, to_apply=max_f\n"
		"  ng = f32[4,0] negate(x)\n"
		"  r1 = f32[4] reduce(ng, y), dimensions={1}, to_apply=add_f\n"
		"  ROOT out = (f32[4], f32[4]) tuple(r0, r1) }\n";
	m = parse(empty);
	passes(m, 2);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_REDUCE), 0);
	ncc_module_free(m);
	equiv("reduce-empty", empty, 2, NULL, NULL);
	interp_equiv("reduce-empty", empty, 2, false);
}
END_TEST

/* A batch norm's output y that a ReLU6 clamps and the backward pass masks
 * its gradient with: y is computed again in both loops, each reading x (the
 * bytes of reading y), so y is never written out and the clamp is no loop
 * of its own. */
static const char *k_fuse_copy =
	"HloModule t\n"
	"ENTRY e { x = f32[2,8,5,7] parameter(0)  mean = f32[8] parameter(1)\n"
	"  sc = f32[8] parameter(2)  beta = f32[8] parameter(3)  g = f32[2,8,5,7] parameter(4)\n"
	"  mb = f32[2,8,5,7] broadcast(mean), dimensions={1}\n"
	"  sb = f32[2,8,5,7] broadcast(sc), dimensions={1}\n"
	"  bb = f32[2,8,5,7] broadcast(beta), dimensions={1}\n"
	"  d = f32[2,8,5,7] subtract(x, mb)  e = f32[2,8,5,7] multiply(d, sb)\n"
	"  y = f32[2,8,5,7] add(e, bb)\n"
	"  z = f32[] constant(0)  zb = f32[2,8,5,7] broadcast(z), dimensions={}\n"
	"  six = f32[] constant(6)  sixb = f32[2,8,5,7] broadcast(six), dimensions={}\n"
	"  r = f32[2,8,5,7] clamp(zb, y, sixb)\n"
	"  ge = pred[2,8,5,7] compare(y, zb), direction=GE\n"
	"  le = pred[2,8,5,7] compare(y, sixb), direction=LE\n"
	"  in = pred[2,8,5,7] and(ge, le)\n"
	"  dy = f32[2,8,5,7] select(in, g, zb)\n"
	"  ROOT out = (f32[2,8,5,7], f32[2,8,5,7]) tuple(r, dy) }\n";

START_TEST(test_fuse_copies_cheap_producer_into_each_consumer)
{
	ncc_module_t *m = parse(k_fuse_copy);
	passes(m, 2);
	/* two loops, the clamp's and the mask's, each reading x itself */
	ck_assert_int_eq(count_fusions(m), 2);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_CLAMP) + count_op(m->entry, NCC_OP_ADD), 0);
	const ncc_inst_t *x = m->entry->params[0];
	for (int k = 0; k < 2; k++) {
		const ncc_inst_t *f = m->entry->root->operands[k];
		ck_assert_int_eq(f->op, NCC_OP_FUSION);
		bool reads_x = false;
		for (int32_t j = 0; j < f->noperands; j++)
			reads_x |= f->operands[j] == x;
		ck_assert_msg(reads_x, "output %d does not read x", k);
	}
	ncc_module_free(m);
	equiv("fuse-copy", k_fuse_copy, 2, NULL, NULL);
	interp_equiv("fuse-copy", k_fuse_copy, 2, false);

	/* y a control predecessor of the root: copied into both loops all the
	 * same, but kept as a loop of its own that the root waits on, and the
	 * module prints and parses (the root's edge named the fused y) */
	char *ctl = strdup(k_fuse_copy);
	char *at = strstr(ctl, "tuple(r, dy) }");
	ck_assert_ptr_nonnull(at);
	char buf[2048];
	snprintf(buf, sizeof(buf), "%.*stuple(r, dy), control-predecessors={y} }\n", (int)(at - ctl), ctl);
	free(ctl);
	m = parse(buf);
	passes(m, 2);
	ck_assert_int_eq(count_fusions(m), 3);
	ck_assert_int_eq(m->entry->root->ncontrol_preds, 1);
	ck_assert_int_eq(m->entry->root->control_preds[0]->op, NCC_OP_FUSION);
	ck_assert_int_eq(m->entry->root->control_preds[0]->calls->root->op, NCC_OP_ADD);
	char *txt = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &txt), NCC_OK);
	ncc_module_free(parse(txt));
	free(txt);
	ncc_module_free(m);
	equiv("fuse-copy-ctl", buf, 2, NULL, NULL);

	/* y also read by a dot: written out anyway, so it is not computed again
	 * (x would stay live for the copies); nor is a y of two arrays (x + w,
	 * which copies would read twice) */
	const char *kept[2] = {
		"HloModule t\n"
		"ENTRY e { x = f32[4,6] parameter(0)  s = f32[6] parameter(1)  w = f32[6,3] parameter(2)\n"
		"  sb = f32[4,6] broadcast(s), dimensions={1}\n"
		"  y = f32[4,6] multiply(x, sb)  z = f32[] constant(0)\n"
		"  zb = f32[4,6] broadcast(z), dimensions={}\n"
		"  r = f32[4,6] maximum(y, zb)  n = f32[4,6] negate(y)  e = f32[4,6] exponential(n)\n"
		"  p = f32[4,3] dot(y, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  ROOT out = (f32[4,6], f32[4,6], f32[4,3]) tuple(r, e, p) }\n",
		"HloModule t\n"
		"ENTRY e { x = f32[4,6] parameter(0)  w = f32[4,6] parameter(1)\n"
		"  y = f32[4,6] add(x, w)  z = f32[] constant(0)\n"
		"  zb = f32[4,6] broadcast(z), dimensions={}\n"
		"  r = f32[4,6] maximum(y, zb)  n = f32[4,6] negate(y)  e = f32[4,6] exponential(n)\n"
		"  ROOT out = (f32[4,6], f32[4,6]) tuple(r, e) }\n",
	};
	for (int k = 0; k < 2; k++) {
		m = parse(kept[k]);
		passes(m, 2);
		/* y is one loop's output, read by the others */
		int read_y = 0;
		for (int32_t i = 0; i < m->entry->ninsts; i++) {
			const ncc_inst_t *f = m->entry->insts[i];
			for (int32_t j = 0; j < f->noperands && f->op == NCC_OP_FUSION; j++)
				read_y += f->operands[j]->op == NCC_OP_FUSION ||
					  f->operands[j]->op == NCC_OP_MULTIPLY ||
					  f->operands[j]->op == NCC_OP_ADD;
		}
		ck_assert_msg(read_y >= 1, "case %d: y computed again", k);
		ncc_module_free(m);
		equiv("fuse-kept", kept[k], 2, NULL, NULL);
	}
}
END_TEST

START_TEST(test_fuse_not_at_o1_and_nothing_at_o0)
{
	ncc_module_t *m = parse(k_fuse);
	passes(m, 1);
	ck_assert_int_eq(count_fusions(m), 0);
	ncc_module_free(m);
	m = parse(k_simplify);
	int32_t n = m->entry->ninsts;
	passes(m, 0);
	ck_assert_int_eq(m->entry->ninsts, n);
	ncc_module_free(m);
}
END_TEST


/* ---- batch-norm expansion ---- */

#define BN_MD(OP, LINE) ", metadata={op_type=\"" OP "\" op_name=\"" OP "\" source_file=\"bn.py\" source_line=" #LINE "}"

/* a training step's pair: the forward's statistics feed the backward */
static const char *k_bn_train =
	"HloModule t\n"
	"ENTRY e { x = f32[6,4,5,3] parameter(0)  s = f32[4] parameter(1)  o = f32[4] parameter(2)\n"
	"  dy = f32[6,4,5,3] parameter(3)\n"
	"  bn.1 = (f32[6,4,5,3], f32[4], f32[4]) batch-norm-training(x, s, o), epsilon=0.001, "
	"feature_index=1" BN_MD("aten__native_batch_norm", 7) "\n"
	"  y = f32[6,4,5,3] get-tuple-element(bn.1), index=0\n"
	"  m = f32[4] get-tuple-element(bn.1), index=1\n"
	"  v = f32[4] get-tuple-element(bn.1), index=2\n"
	"  g.2 = (f32[6,4,5,3], f32[4], f32[4]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, "
	"feature_index=1" BN_MD("aten__native_batch_norm_backward", 9) "\n"
	"  dx = f32[6,4,5,3] get-tuple-element(g.2), index=0\n"
	"  ds = f32[4] get-tuple-element(g.2), index=1\n"
	"  do = f32[4] get-tuple-element(g.2), index=2\n"
	"  ROOT r = (f32[6,4,5,3], f32[4], f32[4], f32[6,4,5,3], f32[4], f32[4]) "
	"tuple(y, m, v, dx, ds, do) }\n";

/* Entry instructions that read an operand with n elements: the passes over
 * the activation. */
static int full_reads(const ncc_comp_t *c, int64_t n)
{
	int k = 0;
	for (int32_t i = 0; i < c->ninsts; i++) {
		const ncc_inst_t *x = c->insts[i];
		if (x->op == NCC_OP_TUPLE)
			continue;
		bool big = false;
		for (int32_t j = 0; j < x->noperands; j++)
			big = big || (ncc_shape_is_array(&x->operands[j]->shape) &&
				      ncc_shape_elements(&x->operands[j]->shape) == n);
		k += big;
	}
	return k;
}

START_TEST(test_bn_expand_fuses_into_three_passes_each)
{
	ncc_module_t *m = parse(k_bn_train);
	passes(m, 2);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_BATCH_NORM_TRAINING) +
				 count_op(m->entry, NCC_OP_BATCH_NORM_GRAD) +
				 count_op(m->entry, NCC_OP_GET_TUPLE_ELEMENT),
			 0);
	/* forward: sum(x), sum((x - mean)^2) fused, y fused; backward: sum(dy),
	 * sum(dy * (x - mean)) fused, dx fused */
	ck_assert_int_eq(full_reads(m->entry, 6 * 4 * 5 * 3), 6);
	int kinput = 0, kloop_big = 0;
	for (int32_t i = 0; i < m->entry->ninsts; i++) {
		const ncc_inst_t *x = m->entry->insts[i];
		if (x->op == NCC_OP_FUSION && !strcmp(x->fusion_kind, "kInput"))
			kinput++;
		if (x->op == NCC_OP_FUSION && ncc_shape_elements(&x->shape) == 6 * 4 * 5 * 3)
			kloop_big++;
		if (x->op == NCC_OP_PARAMETER || x == m->entry->root)
			continue;
		/* every new instruction names its batch norm and keeps its metadata */
		bool fwd = !strncmp(x->name, "bn.1.p", 6), bwd = !strncmp(x->name, "g.2.p", 5);
		if (x->op == NCC_OP_FUSION)
			fwd = !strcmp(x->calls->root->name, "bn.1") || !strncmp(x->calls->root->name, "bn.1.p", 6),
			bwd = !strncmp(x->calls->root->name, "g.2.p", 5);
		ck_assert_msg(fwd || bwd, "%s", x->name);
		ck_assert_str_eq(x->metadata.op_type,
				 fwd ? "aten__native_batch_norm" : "aten__native_batch_norm_backward");
		ck_assert_str_eq(x->metadata.source_file, "bn.py");
		ck_assert_int_eq(x->metadata.source_line, fwd ? 7 : 9);
	}
	ck_assert_int_eq(kinput, 2);
	ck_assert_int_eq(kloop_big, 2);
	char *s = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &s), NCC_OK);
	ncc_module_free(parse(s));
	free(s);
	ncc_module_free(m);
	/* -O0 keeps them for the back end's own lowering */
	m = parse(k_bn_train);
	passes(m, 0);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_BATCH_NORM_TRAINING), 1);
	ck_assert_int_eq(count_op(m->entry, NCC_OP_BATCH_NORM_GRAD), 1);
	ncc_module_free(m);
	for (int level = 1; level <= 2; level++) {
		equiv("bn-train", k_bn_train, level, NULL, NULL);
		interp_equiv("bn-train", k_bn_train, level, true);
	}
}
END_TEST

/* Each op alone, other feature dims and ranks, bf16 and f16 (computed in f32),
 * a batch norm used whole (not through get-tuple-element) and one in a while
 * body: the simulator and the interpreter agree before and after. */
static const char *const k_bn_variants[] = {
	/* rank 2, feature dim 0 */
	"HloModule t\n"
	"ENTRY e { x = f32[5,40] parameter(0)  s = f32[5] parameter(1)  o = f32[5] parameter(2)\n"
	"  ROOT b = (f32[5,40], f32[5], f32[5]) batch-norm-training(x, s, o), epsilon=0.01, feature_index=0 }\n",
	/* rank 4, channels last */
	"HloModule t\n"
	"ENTRY e { x = f32[2,4,4,3] parameter(0)  s = f32[3] parameter(1)  o = f32[3] parameter(2)\n"
	"  b = (f32[2,4,4,3], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=3\n"
	"  y = f32[2,4,4,3] get-tuple-element(b), index=0\n"
	"  v = f32[3] get-tuple-element(b), index=2\n"
	"  ROOT r = (f32[2,4,4,3], f32[3]) tuple(y, v) }\n",
	/* inference, rank 4 */
	"HloModule t\n"
	"ENTRY e { x = f32[3,6,2,5] parameter(0)  s = f32[6] parameter(1)  o = f32[6] parameter(2)\n"
	"  m = f32[6] parameter(3)  w = f32[6] parameter(4)  v = f32[6] abs(w)\n"
	"  ROOT b = f32[3,6,2,5] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1 }\n",
	/* grad alone, rank 2 */
	"HloModule t\n"
	"ENTRY e { x = f32[64,7] parameter(0)  s = f32[7] parameter(1)  m = f32[7] parameter(2)\n"
	"  w = f32[7] parameter(3)  v = f32[7] abs(w)  dy = f32[64,7] parameter(4)\n"
	"  ROOT b = (f32[64,7], f32[7], f32[7]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index=1 }\n",
	/* bf16 training and grad, f16 inference */
	"HloModule t\n"
	"ENTRY e { x = bf16[4,3,8] parameter(0)  s = bf16[3] parameter(1)  o = bf16[3] parameter(2)\n"
	"  dy = bf16[4,3,8] parameter(3)\n"
	"  b = (bf16[4,3,8], bf16[3], bf16[3]) batch-norm-training(x, s, o), epsilon=0.01, feature_index=1\n"
	"  y = bf16[4,3,8] get-tuple-element(b), index=0\n"
	"  m = bf16[3] get-tuple-element(b), index=1\n"
	"  v = bf16[3] get-tuple-element(b), index=2\n"
	"  g = (bf16[4,3,8], bf16[3], bf16[3]) batch-norm-grad(x, s, m, v, dy), epsilon=0.01, feature_index=1\n"
	"  dx = bf16[4,3,8] get-tuple-element(g), index=0\n"
	"  ROOT r = (bf16[4,3,8], bf16[3], bf16[3], bf16[4,3,8]) tuple(y, m, v, dx) }\n",
	"HloModule t\n"
	"ENTRY e { x = f16[8,3] parameter(0)  s = f16[3] parameter(1)  o = f16[3] parameter(2)\n"
	"  m = f16[3] parameter(3)  w = f16[3] parameter(4)  v = f16[3] abs(w)\n"
	"  ROOT b = f16[8,3] batch-norm-inference(x, s, o, m, v), epsilon=0.01, feature_index=1 }\n",
	/* in a while body, twice */
	"HloModule t\n"
	"cond { cp = (s32[], f32[4,3]) parameter(0)  ci = s32[] get-tuple-element(cp), index=0\n"
	"  two = s32[] constant(2)  ROOT lt = pred[] compare(ci, two), direction=LT }\n"
	"body { bp = (s32[], f32[4,3]) parameter(0)  bi = s32[] get-tuple-element(bp), index=0\n"
	"  bx = f32[4,3] get-tuple-element(bp), index=1  one = s32[] constant(1)  j = s32[] add(bi, one)\n"
	"  s = f32[3] constant({1, 2, 0.5})  o = f32[3] constant({0, 1, -1})\n"
	"  b = (f32[4,3], f32[3], f32[3]) batch-norm-training(bx, s, o), epsilon=0.01, feature_index=1\n"
	"  y = f32[4,3] get-tuple-element(b), index=0  ROOT t = (s32[], f32[4,3]) tuple(j, y) }\n"
	"ENTRY e { x = f32[4,3] parameter(0)  z = s32[] constant(0)  t0 = (s32[], f32[4,3]) tuple(z, x)\n"
	"  w = (s32[], f32[4,3]) while(t0), condition=cond, body=body\n"
	"  ROOT r = f32[4,3] get-tuple-element(w), index=1 }\n",
};

START_TEST(test_bn_expand_variants_equivalent)
{
	const char *text = k_bn_variants[_i];
	char what[32];
	snprintf(what, sizeof(what), "bn-variant-%d", _i);
	ncc_module_t *m = parse(text);
	passes(m, 2);
	for (int32_t c = 0; c < m->ncomps; c++)
		ck_assert_int_eq(count_op(m->comps[c], NCC_OP_BATCH_NORM_TRAINING) +
					 count_op(m->comps[c], NCC_OP_BATCH_NORM_INFERENCE) +
					 count_op(m->comps[c], NCC_OP_BATCH_NORM_GRAD),
				 0);
	ncc_module_free(m);
	for (int level = 1; level <= 2; level++) {
		equiv(what, text, level, NULL, NULL);
		interp_equiv(what, text, level, true);
	}
}
END_TEST

/* ---- random elementwise modules: -O2 never changes the result ---- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Appends one line to the module text. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < cap - *len);
	*len += (size_t)n;
}

START_TEST(test_random_modules_equivalent)
{
	uint64_t seed = 0x51ed270b27a1d3f5ull + (uint64_t)_i * 977;
	static char text[65536];
	size_t len = 0;
	const size_t cap = sizeof(text);
	/* values by kind: f (f32[4,8]), b (bf16[4,8]), i (s32[4,8]), u (u8[4,8]), p (pred[4,8]) */
	char f[64][16], b[64][16], iv[64][16], u[64][16], pv[64][16];
	int nf = 0, nb = 0, ni = 0, nu = 0, np = 0, id = 0;
	put(text, cap, &len, "HloModule r%d\nENTRY e {\n", _i);
	put(text, cap, &len, "  f0 = f32[4,8] parameter(0)\n  f1 = f32[4,8] parameter(1)\n");
	put(text, cap, &len, "  i0 = s32[4,8] parameter(2)\n  p0 = pred[4,8] parameter(3)\n");
	put(text, cap, &len, "  row = f32[8] parameter(4)\n  b0 = bf16[4,8] parameter(5)\n");
	put(text, cap, &len, "  u0 = u8[4,8] parameter(6)\n");
	strcpy(f[nf++], "f0");
	strcpy(f[nf++], "f1");
	strcpy(iv[ni++], "i0");
	strcpy(pv[np++], "p0");
	strcpy(b[nb++], "b0");
	strcpy(u[nu++], "u0");
#define PICK(a, n) (a[rnd(&seed) % (uint64_t)(n)])
	int steps = 8 + (int)(rnd(&seed) % 30);
	for (int s = 0; s < steps && nf < 60 && ni < 60 && np < 60 && nb < 60 && nu < 60; s++) {
		char v[16];
		snprintf(v, sizeof(v), "v%d", id++);
		switch (rnd(&seed) % 16) {
		case 0: case 1: {
			static const char *const ops[] = { "add", "subtract", "multiply", "maximum",
							   "minimum", "divide" };
			put(text, cap, &len, "  %s = f32[4,8] %s(%s, %s)\n", v, PICK(ops, 6),
			    PICK(f, nf), PICK(f, nf));
			strcpy(f[nf++], v);
			break;
		}
		case 2: {
			static const char *const ops[] = { "tanh", "negate", "abs", "logistic",
							   "floor", "sine" };
			put(text, cap, &len, "  %s = f32[4,8] %s(%s)\n", v, PICK(ops, 6), PICK(f, nf));
			strcpy(f[nf++], v);
			break;
		}
		case 3: {
			static const char *const ops[] = { "add", "subtract", "multiply", "divide",
							   "remainder", "shift-left", "xor", "maximum",
							   "shift-right-arithmetic" };
			put(text, cap, &len, "  %s = s32[4,8] %s(%s, %s)\n", v, PICK(ops, 9),
			    PICK(iv, ni), PICK(iv, ni));
			strcpy(iv[ni++], v);
			break;
		}
		case 4: { /* broadcasts: a row, or a scalar constant */
			if (rnd(&seed) & 1) {
				put(text, cap, &len, "  %s = f32[4,8] broadcast(row), dimensions={1}\n", v);
			} else {
				put(text, cap, &len, "  c%s = f32[] constant(%d.5)\n", v,
				    (int)(rnd(&seed) % 5) - 2);
				put(text, cap, &len, "  %s = f32[4,8] broadcast(c%s), dimensions={}\n", v, v);
			}
			strcpy(f[nf++], v);
			break;
		}
		case 5: {
			static const char *const dir[] = { "LT", "GE", "EQ", "NE" };
			if (rnd(&seed) & 1)
				put(text, cap, &len, "  %s = pred[4,8] compare(%s, %s), direction=%s\n", v,
				    PICK(f, nf), PICK(f, nf), PICK(dir, 4));
			else
				put(text, cap, &len, "  %s = pred[4,8] compare(%s, %s), direction=%s\n", v,
				    PICK(iv, ni), PICK(iv, ni), PICK(dir, 4));
			strcpy(pv[np++], v);
			break;
		}
		case 6:
			put(text, cap, &len, "  %s = f32[4,8] select(%s, %s, %s)\n", v, PICK(pv, np),
			    PICK(f, nf), PICK(f, nf));
			strcpy(f[nf++], v);
			break;
		case 7:
			put(text, cap, &len, "  %s = s32[4,8] convert(%s)\n", v, PICK(f, nf));
			strcpy(iv[ni++], v);
			break;
		case 8:
			put(text, cap, &len, "  %s = f32[4,8] convert(%s)\n", v,
			    (rnd(&seed) & 1) ? PICK(iv, ni) : PICK(b, nb));
			strcpy(f[nf++], v);
			break;
		case 9:
			put(text, cap, &len, "  %s = bf16[4,8] convert(%s)\n", v, PICK(f, nf));
			strcpy(b[nb++], v);
			break;
		case 10:
			put(text, cap, &len, "  %s = bf16[4,8] multiply(%s, %s)\n", v, PICK(b, nb),
			    PICK(b, nb));
			strcpy(b[nb++], v);
			break;
		case 11: { /* identities the simplifier removes */
			put(text, cap, &len, "  z%s = f32[] constant(0)\n", v);
			put(text, cap, &len, "  zb%s = f32[4,8] broadcast(z%s), dimensions={}\n", v, v);
			put(text, cap, &len, "  %s = f32[4,8] add(%s, zb%s)\n", v, PICK(f, nf), v);
			strcpy(f[nf++], v);
			break;
		}
		case 12: /* a reshape round trip */
			put(text, cap, &len, "  r%s = f32[32] reshape(%s)\n", v, PICK(f, nf));
			put(text, cap, &len, "  %s = f32[4,8] reshape(r%s)\n", v, v);
			strcpy(f[nf++], v);
			break;
		case 13:
			put(text, cap, &len, "  %s = u8[4,8] convert(%s)\n", v, PICK(iv, ni));
			strcpy(u[nu++], v);
			break;
		case 14:
			put(text, cap, &len, "  %s = u8[4,8] add(%s, %s)\n", v, PICK(u, nu), PICK(u, nu));
			strcpy(u[nu++], v);
			break;
		default:
			put(text, cap, &len, "  %s = pred[4,8] and(%s, %s)\n", v, PICK(pv, np),
			    PICK(pv, np));
			strcpy(pv[np++], v);
			break;
		}
	}
	put(text, cap, &len,
	    "  ROOT t = (f32[4,8], s32[4,8], pred[4,8], bf16[4,8], u8[4,8]) tuple(%s, %s, %s, %s, %s)\n}\n",
	    f[nf - 1], iv[ni - 1], pv[np - 1], b[nb - 1], u[nu - 1]);
#undef PICK
	char what[32];
	snprintf(what, sizeof(what), "random module %d", _i);
	interp_equiv(what, text, 2, false);
	equiv(what, text, 2, NULL, NULL);
	if (_i == 0) { /* the test is only worth something if it fuses */
		ncc_module_t *m = parse(text);
		passes(m, 2);
		ck_assert_int_ge(count_fusions(m), 1);
		ncc_module_free(m);
	}
}
END_TEST

/* ---- the dump hook ---- */

START_TEST(test_dump_after_each_pass)
{
	char dir[] = "/tmp/ncc-passes-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ncc_module_t *m = parse(k_fuse);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = 2;
	o.dump_dir = dir;
	ck_assert_int_eq(ncc_run_passes(m, &o, NULL), NCC_OK);
	const char *want[] = { "00-input.hlo", "01-simplify.hlo", "02-fold.hlo", "03-cse.hlo",
			       "04-dce.hlo" };
	char path[512];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, want[i]);
		char *s = read_file(path);
		ck_assert_msg(s != NULL, "missing %s", path);
		ncc_module_t *back = parse(s);
		ncc_module_free(back);
		free(s);
	}
	/* the last two are the fusion and its DCE, and the fused module parses */
	DIR *d = opendir(dir);
	struct dirent *de;
	int nfiles = 0, saw_fuse = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		nfiles++;
		if (strstr(de->d_name, "-fuse.hlo")) {
			saw_fuse = 1;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			char *s = read_file(path);
			ck_assert_ptr_nonnull(strstr(s, "kind=kLoop"));
			ncc_module_free(parse(s));
			free(s);
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	ck_assert(saw_fuse);
	ck_assert_int_ge(nfiles, 7);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_dump_to_missing_dir_is_io_error)
{
	ncc_module_t *m = parse(k_fuse);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = 2;
	o.dump_dir = "/nonexistent/ncc/dumps";
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_run_passes(m, &o, &err), NCC_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/ncc/dumps/00-input.hlo"));
	ncc_module_free(m);
	ck_assert_int_eq(ncc_run_passes(NULL, &o, NULL), NCC_ERR_INVALID);
}
END_TEST

/* ---- the corpus: every module, -O1 and -O2, before == after ---- */

static const char *const k_corpus[] = {
	"misc-linear.hlo", "misc-pp_1_layers_2_graph_1.hlo", "misc-pp_1_layers_2_graph_2.hlo",
	"mlp-mini_mlp_single.hlo", "mlp-single_mlp.hlo", "mlp-mlp_single_final.hlo",
	"mlp-mlp_single_case_2.hlo", "qwb_linear_model-pp_1_layers_2.hlo", "gpt-gpt2_tp_1.hlo",
	"llama-tp_1.hlo", "bert-bert_single_graph_4.hlo", "bert-bert_single_graph_2.hlo",
	"xla-mobilenet_v2.hlo",
};
#define N_CORPUS ((int)(sizeof(k_corpus) / sizeof(k_corpus[0])))

/* Indices into k_corpus of the small and the big modules (corpus_split.h), set by
 * main() before the tests fork. */
static int g_small[N_CORPUS], g_nsmall, g_big[N_CORPUS], g_nbig;

/* Every fusion of every module lowers after -O2; with run, the module also gives
 * the same results before and after the passes (interpreter and simulator, -O1 and
 * -O2). */
static void corpus_equivalent(const char *name, bool run)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, name);
	char *text = read_file(path);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	ncc_module_t *m = parse(text);
	int32_t n0 = m->entry->ninsts;
	passes(m, 2);
	int32_t n2 = m->entry->ninsts, nf = count_fusions(m);
	/* every fusion of every module lowers (also where the run is skipped) */
	ncc_compile_options_t lo;
	ncc_compile_options_init(&lo);
	lo.opt_level = 2;
	void *neff = NULL;
	size_t nsize = 0;
	ncc_error_t lerr;
	memset(&lerr, 0, sizeof(lerr));
	ncc_status_t lst = ncc_lower_module(m, &lo, &neff, &nsize, &lerr);
	ck_assert_msg(lst == NCC_OK || (lst == NCC_ERR_UNSUPPORTED && !strstr(lerr.msg, "fusion")),
		      "%s: lowering after -O2: %s", name, lerr.msg);
	free(neff);
	ncc_module_free(m);
	/* the MobileNet step (batch 96 at 224x224) is too big to run in a unit
	 * test; the simulator run needs the back end to handle every op */
	bool too_big = strstr(name, "mobilenet") != NULL;
	char why[1200] = "too big for a unit test";
	if (!run)
		snprintf(why, sizeof(why), "a big module: runs in the 'full' suite (make test-full)");
	run = run && !too_big;
	uint64_t before = 0, after = 0, b1 = 0, a1 = 0;
	if (run) {
		interp_equiv(name, text, 1, true);
		interp_equiv(name, text, 2, true);
	}
	if (run && equiv_try(name, text, 1, &b1, &a1, why, sizeof(why))) {
		equiv(name, text, 2, &before, &after);
		fprintf(stderr, "%-36s HLO insts %4d -> %4d (%3d fusions); ISA insns run: "
			"no passes %4llu, -O1 passes %4llu, -O2 passes %4llu\n", name, n0,
			n2, nf, (unsigned long long)before, (unsigned long long)a1,
			(unsigned long long)after);
	} else {
		fprintf(stderr, "%-40s HLO insts %5d -> %5d (%3d fusions); not run: %s\n",
			name, n0, n2, nf, why);
	}
	free(text);
}

/* Default run: every module is optimised and lowered, the small ones run. */
START_TEST(test_corpus_equivalent)
{
	bool big = false;
	for (int k = 0; k < g_nbig; k++)
		big = big || g_big[k] == _i;
	corpus_equivalent(k_corpus[_i], !big);
}
END_TEST

/* The 'full' suite: the big modules run. */
START_TEST(test_corpus_big_equivalent)
{
	corpus_equivalent(k_corpus[g_big[_i]], true);
}
END_TEST

static Suite *passes_suite(void)
{
	Suite *s = suite_create("passes");
	TCase *tc = tcase_create("passes");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_dce_removes_unused_and_uncalled);
	tcase_add_test(tc, test_dce_keeps_side_effects_and_unused_params);
	tcase_add_test(tc, test_cse_merges_duplicates_not_rng);
	tcase_add_test(tc, test_cse_distinguishes_attributes);
	tcase_add_test(tc, test_simplify_rules);
	tcase_add_test(tc, test_simplify_composes_chains);
	tcase_add_test(tc, test_fold_constant_subgraphs);
	tcase_add_test(tc, test_fold_leaves_elided_and_big_constants);
	tcase_add_test(tc, test_fold_moves_bits_as_the_interpreter);
	tcase_add_test(tc, test_fuse_elementwise_dag);
	tcase_add_test(tc, test_fuse_types_and_scalar_bounds);
	tcase_add_test(tc, test_fuse_respects_limits);
	tcase_add_test(tc, test_fuse_in_while_body_and_call);
	tcase_add_test(tc, test_fuse_reduce_producers_one_hot);
	tcase_add_test(tc, test_fuse_reduce_many_outputs_and_types);
	tcase_add_test(tc, test_fuse_copies_cheap_producer_into_each_consumer);
	tcase_add_test(tc, test_fuse_not_at_o1_and_nothing_at_o0);
	tcase_add_test(tc, test_bn_expand_fuses_into_three_passes_each);
	tcase_add_loop_test(tc, test_bn_expand_variants_equivalent, 0,
			    (int)(sizeof(k_bn_variants) / sizeof(k_bn_variants[0])));
	tcase_add_loop_test(tc, test_random_modules_equivalent, 0, 60);
	tcase_add_test(tc, test_dump_after_each_pass);
	tcase_add_test(tc, test_dump_to_missing_dir_is_io_error);
	tcase_add_loop_test(tc, test_corpus_equivalent, 0, N_CORPUS);
	suite_add_tcase(s, tc);
	TCase *full = tcase_create("corpus-big");
	tcase_set_tags(full, NCC_TEST_TAG_FULL);
	tcase_set_timeout(full, 1800);
	tcase_add_loop_test(full, test_corpus_big_equivalent, 0, g_nbig);
	suite_add_tcase(s, full);
	return s;
}

int main(void)
{
	ncc_test_corpus_split(NCC_HLO_CORPUS, k_corpus, N_CORPUS, g_small, &g_nsmall, g_big, &g_nbig);
	SRunner *sr = srunner_create(passes_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
