/* Regression tests of issue #11 in the compiler: integer clamp with lo > hi on the device, the constant folder against the interpreter, elided constants and oversized shapes refused at compile time. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "hlo/hlo_parser.h"
#include "interp/interp.h"
#include "hlo/ir.h"
#include "ncc/ncc.h"
#include "lower/lower_run.h"
#include "passes/passes.h"
#include "pipeline.h"
#include "hlo/verify.h"
#include "ncc_check_parse.h"

/* Runs text's entry on the interpreter with args and returns the root value. */
static ncc_value_t *interp(const ncc_module_t *m, ncc_value_t *const *args, int32_t n)
{
	ncc_value_t *want = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_interp_run(m, (const ncc_value_t *const *)args, n, NULL, &want, &err);
	ck_assert_msg(st == NCC_OK, "interp: %s", err.msg);
	return want;
}

/* ---- item 6: integer clamp(lo, x, hi) with lo > hi is hi ---- */

static const char *const k_int_types[] = { "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64" };

/* lo > hi in the first four lanes (the result must be hi there), lo <= hi after. */
static const int64_t k_lo[8] = { 5, 100, 3, 9, 0, 2, 1, 0 };
static const int64_t k_x[8] = { 0, 50, 7, 1, 4, 1, 9, 3 };
static const int64_t k_hi[8] = { 2, 10, 1, 4, 6, 5, 3, 3 };

/* Compiles text at opt, runs it on the simulator with args and compares every byte
 * of output 0 with the interpreter's result. */
static void device_matches_interp(const char *what, const char *text, int opt,
				  ncc_value_t *const *args, int32_t nargs)
{
	ncc_module_t *m = parse(text);
	ncc_value_t *want = interp(m, args, nargs);
	const void *in[4];
	for (int32_t i = 0; i < nargs; i++)
		in[i] = args[i]->data;
	ncc_run_t r;
	int rc = ncc_run_module(NULL, text, opt, in, (uint32_t)nargs, 1, &r);
	ck_assert_msg(rc == 0, "%s -O%d: %s", what, opt, r.msg);
	ck_assert_uint_eq(r.out_size[0], want->nbytes);
	ck_assert_msg(memcmp(r.out[0], want->data, want->nbytes) == 0,
		      "%s -O%d: device differs from the interpreter", what, opt);
	ncc_run_free(&r);
	ncc_value_free(want);
	ncc_module_free(m);
}

START_TEST(test_int_clamp_lo_above_hi_is_hi)
{
	const char *t = k_int_types[_i];
	char text[1024];
	/* lo, x and hi as parameters (one ALU clamp), and constant bounds (which the
	 * passes broadcast and fuse at -O2) */
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e { lo = %s[8] parameter(0)\n x = %s[8] parameter(1)\n"
		 " hi = %s[8] parameter(2)\n ROOT c = %s[8] clamp(lo, x, hi) }\n", t, t, t, t);
	ncc_module_t *m = parse(text);
	ncc_value_t *args[3];
	const int64_t *src[3] = { k_lo, k_x, k_hi };
	for (int a = 0; a < 3; a++) {
		ck_assert_int_eq(ncc_value_alloc(&m->entry->params[a]->shape, &args[a]), NCC_OK);
		for (int i = 0; i < 8; i++)
			ncc_value_set_i64(args[a], i, src[a][i]);
	}
	/* the oracle itself: min(max(x, lo), hi) */
	ncc_value_t *want = interp(m, args, 3);
	for (int i = 0; i < 8; i++) {
		int64_t mx = k_x[i] > k_lo[i] ? k_x[i] : k_lo[i];
		ck_assert_int_eq(ncc_value_get_i64(want, i), mx < k_hi[i] ? mx : k_hi[i]);
	}
	ncc_value_free(want);
	ncc_module_free(m);
	for (int opt = 0; opt <= 2; opt += 2)
		device_matches_interp(t, text, opt, args, 3);

	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e { x = %s[8] parameter(0)\n lo = %s[] constant(7)\n"
		 " hi = %s[] constant(2)\n c = %s[8] clamp(lo, x, hi)\n"
		 " ROOT r = %s[8] add(c, x) }\n", t, t, t, t, t);
	for (int opt = 0; opt <= 2; opt += 2)
		device_matches_interp(t, text, opt, &args[1], 1);
	for (int a = 0; a < 3; a++)
		ncc_value_free(args[a]);
}
END_TEST

/* ---- item 6: the constant folder computes what the interpreter computes ---- */

/* Each module's root is a constant expression; -O2's folder must turn it into a
 * constant with the interpreter's bits (signed zeros included). */
static const char *const k_fold_cases[] = {
	"ROOT r = f32[] maximum(a, b) }", "ROOT r = f32[] maximum(b, a) }",
	"ROOT r = f32[] minimum(a, b) }", "ROOT r = f32[] minimum(b, a) }",
	"ROOT r = f32[] clamp(b, a, b) }", "ROOT r = f32[] clamp(a, b, a) }",
	"ROOT r = f32[] sign(b) }", "ROOT r = f32[] remainder(b, c) }",
	"ROOT r = f32[] round-nearest-even(h) }", "ROOT r = f32[] round-nearest-afz(h) }",
	"ROOT r = s32[] clamp(i5, i1, i2) }", "ROOT r = u8[] clamp(u200, u3, u10) }",
	"ROOT r = s32[] convert(n) }", "ROOT r = u8[] convert(big) }",
	"ROOT r = s32[] divide(i5, z) }", "ROOT r = s32[] remainder(i5, z) }",
	"ROOT r = s32[] shift-right-arithmetic(i5, i40) }",
	"ROOT r = f32[4] maximum(va, vb) }",
};

START_TEST(test_fold_agrees_with_interp)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e { a = f32[] constant(0)\n b = f32[] constant(-0)\n"
		 " c = f32[] constant(3)\n h = f32[] constant(-2.5)\n n = f32[] constant(nan)\n"
		 " big = f32[] constant(1e10)\n i5 = s32[] constant(5)\n i1 = s32[] constant(1)\n"
		 " i2 = s32[] constant(2)\n i40 = s32[] constant(40)\n z = s32[] constant(0)\n"
		 " u200 = u8[] constant(200)\n u3 = u8[] constant(3)\n u10 = u8[] constant(10)\n"
		 " va = f32[4] constant({0, -0, 1, -0})\n vb = f32[4] constant({-0, 0, -0, -0})\n"
		 " %s\n", k_fold_cases[_i]);
	ncc_module_t *m = parse(text);
	ncc_value_t *want = interp(m, NULL, 0);
	bool changed = false;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_pass_fold(m, &changed, &err), NCC_OK);
	const ncc_inst_t *r = m->entry->root;
	ck_assert_msg(r->op == NCC_OP_CONSTANT, "%s: not folded (%s)", k_fold_cases[_i],
		      ncc_opcode_name(r->op));
	ck_assert_uint_eq(r->literal.nbytes, want->nbytes);
	ck_assert_msg(memcmp(r->literal.data, want->data, want->nbytes) == 0,
		      "%s: folded bits differ from the interpreter's", k_fold_cases[_i]);
	ncc_value_free(want);
	ncc_module_free(m);
}
END_TEST

/* ---- item 5: elided constants and oversized shapes are refused ---- */

/* Compiles text at opt and expects a failure whose message holds every needle. */
static void compile_fails(const char *text, int opt, const char *const *needles, int n)
{
	ncc_run_t r;
	int rc = ncc_run_module(NULL, text, opt, NULL, 0, 1, &r);
	ck_assert_msg(rc != 0, "-O%d compiled: %.200s", opt, text);
	for (int i = 0; i < n; i++)
		ck_assert_msg(strstr(r.msg, needles[i]), "-O%d: '%s' not in: %s", opt, needles[i], r.msg);
	ncc_run_free(&r);
}

/* "c = f32[4] constant({...})" compiled to zeros and ran (the interpreter
 * refuses it, analyze said 100% supported). */
START_TEST(test_elided_constant_refused_naming_the_instruction)
{
	const char *text = "HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
			   " big_weights = f32[4] constant({...})\n"
			   " ROOT r = f32[4] add(x, big_weights) }\n";
	static const char *const needles[] = { "big_weights", "elided constant" };
	for (int opt = 0; opt <= 2; opt += 2)
		compile_fails(text, opt, needles, 2);
	ncc_module_t *m = parse(text);
	char *json = NULL;
	ncc_analyze_summary_t sum;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_analyze_module(m, 1, &json, &sum, &err), NCC_OK);
	ck_assert_int_eq(sum.total, 3);
	ck_assert_int_eq(sum.supported, 2);
	ck_assert_str_eq(sum.percentage, "66.67%");
	ck_assert_msg(strstr(json, "elided constant"), "%s", json);
	free(json);
	ncc_module_free(m);
}
END_TEST

/* A shape whose byte size overflows or exceeds what a device can address was a
 * generic "cannot add input tensor" (or worse); the error now gives the byte
 * count and the limit, for inputs, outputs and intermediate values. */
START_TEST(test_oversized_shapes_refused_with_bytes_and_limit)
{
	static const char *const over[] = { "input 'input0'", "f32[4294967296,4294967296,16]",
					    "more than 2^64 bytes", "281474976710656" };
	compile_fails("HloModule m\nENTRY e { x = f32[4294967296,4294967296,16] parameter(0)\n"
		      " ROOT n = f32[4294967296,4294967296,16] negate(x) }\n", 0, over, 4);
	static const char *const big_in[] = { "input 'input0'", "562949953421312 bytes",
					      "more than the 281474976710656 bytes" };
	compile_fails("HloModule m\nENTRY e { x = s32[140737488355328] parameter(0)\n"
		      " ROOT n = s32[140737488355328] negate(x) }\n", 0, big_in, 3);
	static const char *const big_mid[] = { "wide", "562949953421312 bytes", "2^48" };
	compile_fails("HloModule m\nENTRY e { z = f32[] constant(0)\n"
		      " wide = f32[140737488355328] broadcast(z), dimensions={}\n"
		      " ROOT s = f32[] reduce(wide, z), dimensions={0}, to_apply=add }\n"
		      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		      " ROOT c = f32[] add(a, b) }\n", 0, big_mid, 3);
	/* at the limit itself: compiles (2^46 f32 = 2^48 bytes, a broadcast view) */
	ncc_run_t r;
	const char *at = "HloModule m\nENTRY e { z = f32[] constant(1)\n"
			 " w = f32[70368744177664] broadcast(z), dimensions={}\n"
			 " ROOT s = f32[1] slice(w), slice={[0:1]} }\n";
	ck_assert_msg(ncc_run_module(NULL, at, 0, NULL, 0, 1, &r) == 0, "%s", r.msg);
	ck_assert_float_eq(((float *)r.out[0])[0], 1.0f);
	ncc_run_free(&r);
}
END_TEST

/* ---- item 4: files the compiler writes never follow planted symlinks ---- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	char *b = calloc(1, 4096);
	size_t n = fread(b, 1, 4095, f);
	b[n] = 0;
	fclose(f);
	return b;
}

START_TEST(test_outputs_and_cache_never_follow_planted_symlinks)
{
	char dir[] = "/tmp/ncc-symlink-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char victim[128], out[128];
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	FILE *vf = fopen(victim, "w");
	ck_assert_ptr_nonnull(vf);
	fputs("precious\n", vf);
	fclose(vf);
	/* neuronsim-cc -o (ncc_write_file) */
	snprintf(out, sizeof(out), "%s/model.neff", dir);
	ck_assert_int_eq(symlink(victim, out), 0);
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_write_file(out, "NEFF", 4, &err), NCC_OK);
	char *got = slurp(victim);
	ck_assert_str_eq(got, "precious\n");
	free(got);
	got = slurp(out);
	ck_assert_str_eq(got, "NEFF");
	free(got);
	/* a compile cache entry */
	char root[160];
	snprintf(root, sizeof(root), "%s/cache", dir);
	ncc_cache_config_t cfg = { .dir = root, .compiler_version = "t", .log = stderr };
	ncc_cache_t *cache = NULL;
	ck_assert_int_eq(ncc_cache_open(&cfg, &cache, &err), NCC_OK);
	char key[NCC_CACHE_KEY_HEX + 1], entry[512], edir[512];
	ncc_cache_key("t", "", "x", 1, key);
	ncc_cache_entry_path(cache, key, entry, sizeof(entry));
	snprintf(edir, sizeof(edir), "%s", entry);
	*strrchr(edir, '/') = 0;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", edir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(symlink(victim, entry), 0);
	ck_assert_int_eq(ncc_cache_store(cache, key, "NEFF2", 5, &err), NCC_OK);
	got = slurp(victim);
	ck_assert_str_eq(got, "precious\n");
	free(got);
	struct stat sb;
	ck_assert_int_eq(lstat(entry, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	ncc_cache_close(cache);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *hardening_suite(void)
{
	Suite *s = suite_create("compiler-hardening");
	TCase *tc = tcase_create("clamp");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_int_clamp_lo_above_hi_is_hi, 0,
			    (int)(sizeof(k_int_types) / sizeof(k_int_types[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("refused");
	tcase_add_test(tc, test_elided_constant_refused_naming_the_instruction);
	tcase_add_test(tc, test_oversized_shapes_refused_with_bytes_and_limit);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_test(tc, test_outputs_and_cache_never_follow_planted_symlinks);
	suite_add_tcase(s, tc);
	tc = tcase_create("fold");
	tcase_add_loop_test(tc, test_fold_agrees_with_interp, 0,
			    (int)(sizeof(k_fold_cases) / sizeof(k_fold_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hardening_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
