/* What PyTorch/XLA training graphs need of the compiler: the legalization passes (f64 computed as f32, buffer_donor parameters turned into in-place updates), torch_xla's all/any reducers, zero-element parameters and outputs left out of the NEFF. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hlo/hlo_parser.h"
#include "interp/interp.h"
#include "hlo/ir.h"
#include "lower/lower_run.h"
#include "ncc/ncc.h"
#include "neuronsim/isa.h"
#include "neuronsim/neff.h"
#include "options.h"
#include "passes/passes.h"
#include "hlo/verify.h"
#include "ncc_check_parse.h"

#ifndef NCC_PROTO_DIR
#define NCC_PROTO_DIR "tests/unit/compiler/proto"
#endif

/* ---- helpers ---- */

static ncc_status_t legalize(ncc_module_t *m, int opt, const char *dump_dir, ncc_error_t *err)
{
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = opt;
	o.dump_dir = dump_dir;
	memset(err, 0, sizeof(*err));
	return ncc_run_passes(m, &o, err);
}

static bool shape_has(const ncc_shape_t *s, ncc_etype_t t)
{
	if (s->etype == NCC_TUPLE) {
		for (int32_t i = 0; i < s->nelems; i++)
			if (shape_has(&s->elems[i], t))
				return true;
		return false;
	}
	return s->etype == t;
}

static bool module_has(const ncc_module_t *m, ncc_etype_t t)
{
	for (int32_t c = 0; c < m->ncomps; c++) {
		const ncc_comp_t *comp = m->comps[c];
		for (int32_t i = 0; i < comp->ninsts; i++)
			if (shape_has(&comp->insts[i]->shape, t))
				return true;
		for (int32_t k = 0; k < comp->nsig_params; k++)
			if (shape_has(&comp->sig_param_shapes[k], t))
				return true;
		if (comp->has_sig_result && shape_has(&comp->sig_result, t))
			return true;
	}
	return false;
}

/* Compiles text with the driver (no cache) at opt into a NEFF the caller frees. */
static void *compile(const char *text, int opt, size_t *out_size, neff_view_t *v)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.compile.opt_level = opt;
	o.no_cache = true;
	ncc_compile_result_t r;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_compile_text(text, strlen(text), "<test>", &o, &r, &err);
	ck_assert_msg(st == NCC_OK, "compile -O%d: %s", opt, err.msg);
	char emsg[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(r.neff, r.neff_size, v),
						emsg, sizeof(emsg)) == NS_STATUS_OK, "neff: %s", emsg);
	*out_size = r.neff_size;
	return r.neff;
}

static const neff_tensor_t *tensor_named(const neff_view_t *v, const char *name)
{
	for (uint32_t t = 0; t < v->meta->n_tensors; t++)
		if (strcmp(v->tensors[t].name, name) == 0)
			return &v->tensors[t];
	return NULL;
}

/* ---- f64 ---- */

/* An optimizer-like step as torch_xla sends it: a Python float as an f64[]
 * parameter, f64 constants, converts both ways, an f64 reduction (its reducer a
 * computation of its own) and f64 outputs. */
static const char k_f64_module[] =
	"HloModule adamstep, entry_computation_layout={(f64[], f32[8]{0}, f64[8]{0})->"
	"(f64[8]{0}, f32[8]{0}, f64[])}\n"
	"sum64 {\n x = f64[] parameter(0)\n y = f64[] parameter(1)\n ROOT s = f64[] add(x, y)\n}\n"
	"ENTRY e {\n"
	" lr = f64[] parameter(0)\n g = f32[8] parameter(1)\n w = f64[8] parameter(2)\n"
	" g64 = f64[8] convert(g)\n lrb = f64[8] broadcast(lr), dimensions={}\n"
	" step = f64[8] multiply(lrb, g64)\n c = f64[] constant(0.1)\n"
	" cb = f64[8] broadcast(c), dimensions={}\n decay = f64[8] multiply(w, cb)\n"
	" w2 = f64[8] subtract(w, step)\n w3 = f64[8] subtract(w2, decay)\n"
	" w3f = f32[8] convert(w3)\n ex = f64[8] exponential(w3)\n z = f64[] constant(0)\n"
	" tot = f64[] reduce(ex, z), dimensions={0}, to_apply=sum64\n"
	" ROOT t = (f64[8], f32[8], f64[]) tuple(w3, w3f, tot)\n}\n";

START_TEST(test_demote_f64_retypes_every_value)
{
	ncc_module_t *m = parse(k_f64_module);
	ck_assert(module_has(m, NCC_F64));
	ncc_error_t err;
	ck_assert_msg(legalize(m, 0, NULL, &err) == NCC_OK, "%s", err.msg);
	ck_assert(!module_has(m, NCC_F64));
	/* the constant is rounded to the nearest f32 */
	const ncc_inst_t *c = ncc_comp_find_inst(m->entry, "c");
	ck_assert_int_eq(c->literal.etype, NCC_F32);
	ck_assert(ncc_literal_get_f64(&c->literal, 0) == (double)0.1f);
	ck_assert_int_eq(m->entry->params[0]->shape.etype, NCC_F32);
	ck_assert_int_eq(ncc_comp_find_inst(m->entry, "g64")->shape.etype, NCC_F32);
	/* the layout text the printer writes says f32 too, and the module reads back */
	ck_assert_ptr_null(strstr(m->entry_computation_layout, "f64"));
	ck_assert_ptr_nonnull(strstr(m->entry_computation_layout, "(f32[], f32[8]{0}, f32[8]{0})"));
	char *text = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &text), NCC_OK);
	ck_assert_ptr_null(strstr(text, "f64"));
	ncc_module_free(parse(text));
	free(text);
	ncc_module_free(m);
}
END_TEST

/* The device runs the demoted module; the interpreter runs the f64 original: they
 * agree within f32 rounding, at -O0 and -O2. */
START_TEST(test_f64_module_runs_within_f32_of_the_interpreter)
{
	int opt = _i ? 2 : 0;
	ncc_module_t *orig = parse(k_f64_module);
	ncc_value_t *args[3];
	for (int a = 0; a < 3; a++) {
		ck_assert_int_eq(ncc_value_alloc(&orig->entry->params[a]->shape, &args[a]), NCC_OK);
		ncc_value_fill_random_range(args[a], 11 + (uint64_t)a, -1, 1);
	}
	ncc_value_set_f64(args[0], 0, 1e-3);
	ncc_value_set_f64(args[2], 3, 0.123456789012345); /* not an f32 */
	ncc_value_t *want = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_msg(ncc_interp_run(orig, (const ncc_value_t *const *)args, 3, NULL, &want, &err) == NCC_OK,
		      "%s", err.msg);
	/* the device's inputs: f64 arguments rounded to f32, as the plugin does */
	float lr = (float)ncc_value_get_f64(args[0], 0), w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (float)ncc_value_get_f64(args[2], i);
	const void *in[3] = { &lr, args[1]->data, w };
	ncc_module_t *m = parse(k_f64_module);
	ck_assert_msg(legalize(m, opt, NULL, &err) == NCC_OK, "%s", err.msg);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = opt;
	ncc_run_t r;
	ck_assert_msg(ncc_run_module_opts(m, NULL, &o, in, 3, 1, &r, NULL) == 0, "-O%d: %s", opt, r.msg);
	ck_assert_uint_eq(r.n_in, 3);
	ck_assert_uint_eq(r.n_out, 3);
	const int64_t n_out[3] = { 8, 8, 1 };
	ck_assert_int_eq(want->nelems, 3);
	for (int k = 0; k < 3; k++) {
		ck_assert_uint_eq(r.out_dtype[k], ISA_DT_F32);
		ck_assert_uint_eq(r.out_size[k], (uint64_t)n_out[k] * 4);
		const float *got = r.out[k];
		for (int64_t i = 0; i < n_out[k]; i++) {
			double e = ncc_value_get_f64(want->elems[k], i);
			ck_assert_msg(fabs((double)got[i] - e) <= 1e-6 + 4e-7 * fabs(e),
				      "-O%d output %d[%lld]: device %.9g, interpreter (f64) %.17g", opt, k,
				      (long long)i, (double)got[i], e);
		}
	}
	ncc_run_free(&r);
	ncc_value_free(want);
	for (int a = 0; a < 3; a++)
		ncc_value_free(args[a]);
	ncc_module_free(m);
	ncc_module_free(orig);
}
END_TEST

/* f64 parameters and results are f32 tensors of the NEFF; the demotion is dumped as
 * its own step, and a module without f64 dumps as before. */
START_TEST(test_f64_neff_tensors_are_f32_and_dumped)
{
	size_t size;
	neff_view_t v;
	void *neff = compile(k_f64_module, 2, &size, &v);
	ck_assert_uint_eq(v.meta->n_tensors, 6);
	for (uint32_t t = 0; t < v.meta->n_tensors; t++)
		ck_assert_msg(v.tensors[t].dtype == ISA_DT_F32, "tensor %s", v.tensors[t].name);
	ck_assert_uint_eq(tensor_named(&v, "input0")->size, 4);
	ck_assert_uint_eq(tensor_named(&v, "input2")->size, 32);
	ck_assert_uint_eq(tensor_named(&v, "output2")->size, 4);
	free(neff);

	char dir[] = "/tmp/ncc_legalize_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	ncc_module_t *m = parse(k_f64_module);
	ncc_error_t err;
	ck_assert_msg(legalize(m, 0, dir, &err) == NCC_OK, "%s", err.msg);
	ncc_module_free(m);
	snprintf(path, sizeof(path), "%s/01-demote-f64.hlo", dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	char *text = NULL;
	size_t len = 0;
	ck_assert_int_eq(ncc_read_file(path, &text, &len, &err), NCC_OK);
	ck_assert_ptr_null(strstr(text, "f64"));
	free(text);
	unlink(path);
	snprintf(path, sizeof(path), "%s/00-input.hlo", dir);
	unlink(path);
	m = parse("HloModule plain\nENTRY e { x = f32[4] parameter(0)\n ROOT n = f32[4] negate(x) }\n");
	ck_assert_msg(legalize(m, 1, dir, &err) == NCC_OK, "%s", err.msg);
	ncc_module_free(m);
	snprintf(path, sizeof(path), "%s/01-simplify.hlo", dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* What has no f32 meaning is refused naming the instruction, the module untouched. */
START_TEST(test_demote_f64_refuses_bitcasts_and_c128)
{
	static const char *const cases[][2] = {
		{ "HloModule b\nENTRY e { x = f64[4] parameter(0)\n ROOT b = s64[4] bitcast-convert(x) }\n",
		  "instruction 'b' (bitcast-convert)" },
		{ "HloModule b\nENTRY e { x = u64[4] parameter(0)\n ROOT b = f64[4] bitcast-convert(x) }\n",
		  "bitcast-convert of f64" },
		{ "HloModule c\nENTRY e { x = f64[2] parameter(0)\n y = f64[2] parameter(1)\n"
		  " ROOT c = c128[2] complex(x, y) }\n", "unsupported element type c128" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ncc_module_t *m = parse(cases[i][0]);
		ncc_error_t err;
		ck_assert_int_eq(legalize(m, 0, NULL, &err), NCC_ERR_UNSUPPORTED);
		ck_assert_msg(strstr(err.msg, cases[i][1]) && strstr(err.msg, "<test>:"), "%s", err.msg);
		ck_assert(module_has(m, NCC_F64));
		ncc_module_free(m);
		ncc_driver_options_t o;
		ncc_driver_options_init(&o);
		o.no_cache = true;
		ncc_compile_result_t r;
		ck_assert_int_eq(ncc_compile_text(cases[i][0], strlen(cases[i][0]), "<test>", &o, &r, &err),
				 NCC_ERR_UNSUPPORTED);
		ck_assert_ptr_null(r.neff);
	}
}
END_TEST

/* The analyze report judges what the compiler compiles: f64 arithmetic counts as
 * supported, and the instructions keep their own source lines. */
START_TEST(test_analyze_judges_the_demoted_module)
{
	ncc_module_t *m = parse(k_f64_module);
	char *json = NULL;
	ncc_analyze_summary_t sum;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_analyze_module(m, 1, &json, &sum, &err), NCC_OK);
	ck_assert_int_eq(sum.total, sum.supported);
	ck_assert_ptr_nonnull(strstr(json, "lr = f64[] parameter(0)"));
	free(json);
	ck_assert(module_has(m, NCC_F64)); /* the caller's module is left as it was */
	ncc_module_free(m);
	m = parse("HloModule b\nENTRY e { x = f64[4] parameter(0)\n ROOT b = s64[4] bitcast-convert(x) }\n");
	ck_assert_int_eq(ncc_analyze_module(m, 1, &json, &sum, &err), NCC_OK);
	ck_assert_int_lt(sum.supported, sum.total);
	free(json);
	ncc_module_free(m);
}
END_TEST

/* ---- buffer donors ---- */

START_TEST(test_buffer_donor_parses_prints_and_verifies)
{
	static const char text[] =
		"HloModule d, buffer_donor={ (0, {}), (2, {}) }\n"
		"ENTRY e { a = f32[4] parameter(0)\n b = f32[4] parameter(1)\n c = f32[4] parameter(2)\n"
		" ROOT r = f32[4] add(a, c) }\n";
	ncc_module_t *m = parse(text);
	ck_assert_int_eq(m->ndonors, 2);
	ck_assert(m->donors[0].param_number == 0 && m->donors[1].param_number == 2);
	char *out = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &out), NCC_OK);
	ck_assert_msg(strstr(out, "buffer_donor={ (0, {}), (2, {}) }"), "%s", out);
	ncc_module_free(parse(out));
	free(out);
	ncc_module_free(m);

	static const char *const bad[][2] = {
		{ "HloModule d, buffer_donor={ (3, {}) }\nENTRY e { a = f32[4] parameter(0)\n"
		  " ROOT r = f32[4] negate(a) }\n", "buffer_donor: parameter 3 does not exist" },
		{ "HloModule d, input_output_alias={ {}: (0, {}) }, buffer_donor={ (0, {}) }\n"
		  "ENTRY e { a = f32[4] parameter(0)\n ROOT r = f32[4] negate(a) }\n",
		  "parameter 0 is also in input_output_alias" },
	};
	for (size_t i = 0; i < 2; i++) {
		ncc_error_t err;
		memset(&err, 0, sizeof(err));
		ck_assert_int_eq(ncc_parse_hlo(bad[i][0], strlen(bad[i][0]), "<test>", &m, &err), NCC_OK);
		ck_assert_int_eq(ncc_verify(m, &err), NCC_ERR_VERIFY);
		ck_assert_msg(strstr(err.msg, bad[i][1]), "%s", err.msg);
		ncc_module_free(m);
	}
	const char *junk = "HloModule d, buffer_donor={ (x, {}) }\nENTRY e { ROOT a = f32[] parameter(0) }\n";
	ncc_error_t err;
	ck_assert_int_eq(ncc_parse_hlo(junk, strlen(junk), "<test>", &m, &err), NCC_ERR_PARSE);
}
END_TEST

/* Each donor takes the unaliased output of its shape computed from it in the fewest
 * operations, else the first unaliased one of its shape, else stays a donor; the NEFF
 * aliases follow. */
static const char k_donor_module[] =
	"HloModule d, input_output_alias={ {4}: (2, {}) }, "
	"buffer_donor={ (4, {}), (3, {}), (1, {}), (0, {}), (5, {}) }\n"
	"ENTRY e {\n w0 = f32[4] parameter(0)\n w1 = f32[4] parameter(1)\n g = f32[4] parameter(2)\n"
	" b = f32[2] parameter(3)\n s = s32[4] parameter(4)\n h = f32[4] parameter(5)\n"
	" n1 = f32[4] subtract(w1, g)\n n0 = f32[4] subtract(w0, g)\n g2 = f32[4] add(g, g)\n"
	" ROOT t = (f32[4], f32[4], f32[4], f32[2], f32[4], s32[4]) tuple(g2, n1, n0, b, g2, s)\n}\n";

START_TEST(test_buffer_donors_become_may_aliases)
{
	ncc_module_t *m = parse(k_donor_module);
	ncc_error_t err;
	ck_assert_msg(legalize(m, _i, NULL, &err) == NCC_OK, "%s", err.msg);
	/* output k -> parameter, -1 when not aliased */
	int64_t want[6] = { 5, 1, 0, 3, 2, 4 };
	int64_t got[6] = { -1, -1, -1, -1, -1, -1 };
	for (int32_t a = 0; a < m->naliases; a++) {
		const ncc_alias_t *al = &m->aliases[a];
		ck_assert_int_eq(al->output_index.n, 1);
		got[al->output_index.v[0]] = al->param_number;
		if (al->param_number != 2)
			ck_assert_int_eq(al->kind, NCC_ALIAS_MAY);
	}
	/* s32[4] s: its only output of its shape (5) is s itself, computed from it */
	for (int k = 0; k < 6; k++)
		ck_assert_msg(got[k] == want[k], "output %d aliases %lld, expected %lld", k, (long long)got[k],
			      (long long)want[k]);
	ck_assert_int_eq(m->ndonors, 0);
	ncc_module_free(m);

	/* the update (one operation from w) wins over a gradient of w's shape that comes
	 * first and depends on w through three */
	m = parse("HloModule g, buffer_donor={ (0, {}) }\nENTRY e { w = f32[4] parameter(0)\n"
		  " x = f32[4] parameter(1)\n a = f32[4] multiply(w, x)\n t = f32[4] tanh(a)\n"
		  " gr = f32[4] multiply(t, x)\n u = f32[4] subtract(w, gr)\n"
		  " ROOT r = (f32[4], f32[4]) tuple(gr, u) }\n");
	ck_assert_msg(legalize(m, 0, NULL, &err) == NCC_OK, "%s", err.msg);
	ck_assert(m->naliases == 1 && m->aliases[0].param_number == 0 && m->aliases[0].output_index.v[0] == 1);
	ncc_module_free(m);

	/* a donor without an output of its shape stays a donor */
	m = parse("HloModule d, buffer_donor={ (0, {}), (1, {}) }\nENTRY e { a = f32[4] parameter(0)\n"
		  " b = f32[3] parameter(1)\n ROOT r = f32[4] negate(a) }\n");
	ck_assert_msg(legalize(m, 0, NULL, &err) == NCC_OK, "%s", err.msg);
	ck_assert_int_eq(m->naliases, 1);
	ck_assert(m->aliases[0].param_number == 0 && m->aliases[0].output_index.n == 0);
	ck_assert(m->ndonors == 1 && m->donors[0].param_number == 1);
	char *text = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &text), NCC_OK);
	ck_assert_msg(strstr(text, "input_output_alias={ {}: (0, {}, may-alias) }") &&
		      strstr(text, "buffer_donor={ (1, {}) }"), "%s", text);
	free(text);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_buffer_donor_neff_updates_in_place)
{
	size_t size;
	neff_view_t v;
	void *neff = compile(k_donor_module, 2, &size, &v);
	int32_t want[6] = { 5, 1, 0, 3, 2, 4 };
	for (int k = 0; k < 6; k++) {
		char name[32];
		snprintf(name, sizeof(name), "output%d", k);
		const neff_tensor_t *t = tensor_named(&v, name);
		ck_assert_ptr_nonnull(t);
		ck_assert_int_eq(t->alias_input, want[k]); /* every parameter has a tensor */
	}
	free(neff);
}
END_TEST

/* torch_xla's own proto: its buffer_donor field decodes into donors, which become
 * the updated weights' in-place outputs (not the gradients of the same shapes that
 * come first in its result). */
START_TEST(test_buffer_donor_from_torch_xla_proto)
{
	size_t len = 0;
	char *data = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(ncc_read_file(NCC_PROTO_DIR "/mlp_train.pb", &data, &len, &err), NCC_OK);
	ncc_module_t *m = NULL;
	ck_assert_msg(ncc_parse_hlo_proto(data, len, NULL, &m, &err) == NCC_OK, "%s", err.msg);
	ck_assert_int_eq(m->ndonors, 4);
	ncc_module_free(m);
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	ncc_compile_result_t r;
	ck_assert_msg(ncc_compile_hlo_proto(data, len, NULL, &o, &r, &err) == NCC_OK, "%s", err.msg);
	free(data);
	neff_view_t v;
	char emsg[256];
	ck_assert(ns_status_consume_message(neff_parse(r.neff, r.neff_size, &v),
					    emsg, sizeof(emsg)) == NS_STATUS_OK);
	bool seen[8] = { false };
	int n = 0;
	for (uint32_t t = 0; t < v.meta->n_tensors; t++) {
		int32_t a = v.tensors[t].alias_input;
		if (a < 0)
			continue;
		ck_assert(a >= 1 && a <= 4 && !seen[a]);
		seen[a] = true;
		ck_assert_uint_eq(v.tensors[t].size, v.tensors[a].size);
		/* outputs 9..12 are the new weights of parameters 4..1 */
		char want[16];
		snprintf(want, sizeof(want), "output%d", 13 - a);
		ck_assert_str_eq(v.tensors[t].name, want);
		n++;
	}
	ck_assert_int_eq(n, 4);
	ncc_compile_result_release(&r);
}
END_TEST

/* ---- zero-element parameters and outputs ---- */

START_TEST(test_zero_element_io_has_no_neff_tensor)
{
	static const char text[] =
		"HloModule z, input_output_alias={ {0}: (0, {}) }\n"
		"add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y) }\n"
		"ENTRY e {\n a = f32[0,4] parameter(0)\n w = f32[4,3] parameter(1)\n"
		" n = f32[0,4] negate(a)\n d = f32[0,3] dot(a, w), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n k = f32[4,3] dot(n, d), lhs_contracting_dims={0}, "
		"rhs_contracting_dims={0}\n sl = f32[4,0] slice(w), slice={[0:4], [1:1]}\n"
		" z = f32[] constant(1)\n r = f32[3] reduce(d, z), dimensions={0}, to_apply=add\n"
		" c = f32[4,3] concatenate(sl, w), dimensions={1}\n"
		" ROOT t = (f32[0,4], f32[0,3], f32[4,3], f32[3], f32[4,3], f32[4,0]) tuple(n, d, c, r, k, sl)\n}\n";
	for (int opt = 0; opt <= 2; opt += 2) {
		size_t size;
		neff_view_t v;
		void *neff = compile(text, opt, &size, &v);
		/* parameter 1 and outputs 2..4 only, names by parameter and leaf number */
		ck_assert_uint_eq(v.meta->n_tensors, 4);
		ck_assert_str_eq(v.tensors[0].name, "input1");
		ck_assert_str_eq(v.tensors[1].name, "output2");
		ck_assert_str_eq(v.tensors[2].name, "output3");
		ck_assert_str_eq(v.tensors[3].name, "output4");
		for (uint32_t t = 1; t < 4; t++)
			ck_assert_int_eq(v.tensors[t].alias_input, -1);
		free(neff);
		float w[12];
		for (int i = 0; i < 12; i++)
			w[i] = (float)i - 5.5f;
		const void *in[1] = { w };
		ncc_run_t r;
		ck_assert_msg(ncc_run_module(NULL, text, opt, in, 1, 1, &r) == 0, "-O%d: %s", opt, r.msg);
		ck_assert(r.n_in == 1 && r.n_out == 3);
		ck_assert_int_eq(memcmp(r.out[0], w, sizeof(w)), 0);
		const float *red = r.out[1], *k = r.out[2];
		for (int i = 0; i < 3; i++)
			ck_assert(red[i] == 1.0f); /* an empty sum is the init value */
		for (int i = 0; i < 12; i++)
			ck_assert(k[i] == 0.0f); /* a dot over nothing is zero */
		ncc_run_free(&r);
	}
	/* nothing at all to move: a NEFF without tensors */
	static const char none[] = "HloModule e0\nENTRY e { a = f32[0,4] parameter(0)\n ROOT n = f32[0,4] negate(a) }\n";
	size_t size;
	neff_view_t v;
	void *neff = compile(none, 2, &size, &v);
	ck_assert_uint_eq(v.meta->n_tensors, 0);
	free(neff);
}
END_TEST

/* ---- torch_xla's all/any reducers ---- */

/* torch.all/any reduce pred with a computation that compares its parameters with
 * false and selects true/false; the simplifier reduces it to and/or, which the back
 * end runs as a REDUCE (the AdamW transformer step needs it). */
START_TEST(test_torch_all_any_reducers_run)
{
	static const char text[] =
		"HloModule allany\n"
		"AllComputation {\n x.1 = pred[] parameter(0)\n f.1 = pred[] constant(false)\n"
		" c.1 = pred[] compare(x.1, f.1), direction=NE\n y.1 = pred[] parameter(1)\n"
		" c.2 = pred[] compare(y.1, f.1), direction=NE\n a.1 = pred[] and(c.1, c.2)\n"
		" t.1 = pred[] constant(true)\n ROOT s.1 = pred[] select(a.1, t.1, f.1)\n}\n"
		"AnyComputation {\n x.2 = pred[] parameter(0)\n f.2 = pred[] constant(false)\n"
		" c.3 = pred[] compare(f.2, x.2), direction=NE\n y.2 = pred[] parameter(1)\n"
		" c.4 = pred[] compare(y.2, f.2), direction=NE\n o.2 = pred[] or(c.3, c.4)\n"
		" t.2 = pred[] constant(true)\n ROOT s.2 = pred[] select(o.2, t.2, f.2)\n}\n"
		"ENTRY e {\n m = pred[4,6] parameter(0)\n i = pred[] constant(true)\n"
		" all = pred[4] reduce(m, i), dimensions={1}, to_apply=AllComputation\n"
		" z = pred[] constant(false)\n any = pred[4] reduce(m, z), dimensions={1}, to_apply=AnyComputation\n"
		" ROOT r = (pred[4], pred[4]) tuple(all, any)\n}\n";
	/* rows: all true, one false, all false, one true */
	static const uint8_t mask[4][6] = { { 1, 1, 1, 1, 1, 1 }, { 1, 1, 0, 1, 1, 1 },
					    { 0, 0, 0, 0, 0, 0 }, { 0, 1, 0, 0, 0, 0 } };
	const void *in[1] = { mask };
	for (int opt = 1; opt <= 2; opt++) {
		ncc_module_t *m = parse(text);
		ncc_error_t err;
		ck_assert_msg(legalize(m, opt, NULL, &err) == NCC_OK, "%s", err.msg);
		const ncc_comp_t *all = ncc_module_find_comp(m, "AllComputation");
		ck_assert_int_eq(all->root->op, NCC_OP_AND);
		ck_assert_int_eq(ncc_module_find_comp(m, "AnyComputation")->root->op, NCC_OP_OR);
		ncc_compile_options_t o;
		ncc_compile_options_init(&o);
		o.opt_level = opt;
		ncc_run_t r;
		ck_assert_msg(ncc_run_module_opts(m, NULL, &o, in, 1, 1, &r, NULL) == 0, "-O%d: %s", opt, r.msg);
		const uint8_t *a = r.out[0], *y = r.out[1];
		static const uint8_t want_all[4] = { 1, 0, 0, 0 }, want_any[4] = { 1, 1, 0, 1 };
		ck_assert_int_eq(memcmp(a, want_all, 4), 0);
		ck_assert_int_eq(memcmp(y, want_any, 4), 0);
		ncc_run_free(&r);
		ncc_module_free(m);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("legalize");
	TCase *tc = tcase_create("f64");
	tcase_add_test(tc, test_demote_f64_retypes_every_value);
	tcase_add_loop_test(tc, test_f64_module_runs_within_f32_of_the_interpreter, 0, 2);
	tcase_add_test(tc, test_f64_neff_tensors_are_f32_and_dumped);
	tcase_add_test(tc, test_demote_f64_refuses_bitcasts_and_c128);
	tcase_add_test(tc, test_analyze_judges_the_demoted_module);
	suite_add_tcase(s, tc);
	tc = tcase_create("donors");
	tcase_add_test(tc, test_buffer_donor_parses_prints_and_verifies);
	tcase_add_loop_test(tc, test_buffer_donors_become_may_aliases, 0, 3);
	tcase_add_test(tc, test_buffer_donor_neff_updates_in_place);
	tcase_add_test(tc, test_buffer_donor_from_torch_xla_proto);
	suite_add_tcase(s, tc);
	tc = tcase_create("torch_reducers");
	tcase_add_test(tc, test_torch_all_any_reducers_run);
	suite_add_tcase(s, tc);
	tc = tcase_create("zero_elements");
	tcase_add_test(tc, test_zero_element_io_has_no_neff_tensor);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
