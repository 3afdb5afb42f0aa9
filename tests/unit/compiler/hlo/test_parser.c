/* Check tests of the HLO parser and printer: the whole corpus, each syntax feature and
 * attribute, literal decoding, round trips, and malformed input (never a crash). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "hlo/hlo_lexer.h"
#include "hlo/hlo_parser.h"
#include "hlo/ir.h"
#include "hlo/verify.h"

#ifndef NCC_HLO_CORPUS
#define NCC_HLO_CORPUS "../shared/hlo"
#endif

/* ---- helpers ------------------------------------------------------------ */

static ncc_module_t *parse_ok(const char *text)
{
	ncc_module_t *m = NULL;
	ncc_error_t err;
	ncc_status_t st = ncc_parse_hlo(text, strlen(text), "t.hlo", &m, &err);
	ck_assert_msg(st == NCC_OK, "parse failed: %s\n--- input:\n%s", err.msg, text);
	ck_assert_ptr_nonnull(m);
	return m;
}

static ncc_module_t *parse_verify_ok(const char *text)
{
	ncc_module_t *m = parse_ok(text);
	ncc_error_t err;
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "verify failed: %s", err.msg);
	return m;
}

/* Parses text expecting failure; checks "t.hlo:LINE:COL: error:" and a fragment. */
static void parse_fails(const char *text, int line, int col, const char *fragment)
{
	ncc_module_t *m = (ncc_module_t *)0x1;
	ncc_error_t err;
	ncc_status_t st = ncc_parse_hlo(text, strlen(text), "t.hlo", &m, &err);
	ck_assert_msg(st != NCC_OK, "parse unexpectedly succeeded:\n%s", text);
	ck_assert_ptr_null(m);
	if (getenv("NCC_TEST_SHOW_ERRORS")) /* to review messages when adding cases */
		fprintf(stderr, "want %d:%d got %s\n", line, col, err.msg);
	char want[64];
	snprintf(want, sizeof(want), "t.hlo:%d:%d: error: ", line, col);
	if (getenv("NCC_TEST_SHOW_ERRORS"))
		return;
	ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "message '%s' does not start with '%s'",
		      err.msg, want);
	ck_assert_int_eq(err.line, line);
	ck_assert_int_eq(err.col, col);
	if (fragment)
		ck_assert_msg(strstr(err.msg, fragment), "message '%s' lacks '%s'", err.msg, fragment);
}

static ncc_inst_t *find(ncc_module_t *m, const char *name)
{
	for (int32_t i = 0; i < m->ncomps; i++) {
		ncc_inst_t *x = ncc_comp_find_inst(m->comps[i], name);
		if (x)
			return x;
	}
	ck_abort_msg("no instruction '%s'", name);
	return NULL;
}

static void ilist_is(const ncc_ilist_t *l, int n, const int64_t *v)
{
	ck_assert(l->present);
	ck_assert_int_eq(l->n, n);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(l->v[i], v[i]);
}
#define ILIST(l, ...)                                                          \
	do {                                                                   \
		const int64_t v_[] = { __VA_ARGS__ };                          \
		ilist_is((l), (int)(sizeof(v_) / sizeof(v_[0])), v_);          \
	} while (0)

/* Deep comparison of two modules' IR (names, opcodes, shapes with layouts, operands
 * by name, called computations, literals, the main attributes). */
static void shapes_same(const ncc_shape_t *a, const ncc_shape_t *b)
{
	ck_assert(ncc_shape_equal(a, b, true));
}

static void comp_ref_same(const ncc_comp_t *a, const ncc_comp_t *b)
{
	ck_assert((a == NULL) == (b == NULL));
	if (a)
		ck_assert_str_eq(a->name, b->name);
}

static void ilist_same(const ncc_ilist_t *a, const ncc_ilist_t *b)
{
	ck_assert_int_eq(a->present, b->present);
	ck_assert_int_eq(a->n, b->n);
	for (int32_t i = 0; i < a->n; i++)
		ck_assert_int_eq(a->v[i], b->v[i]);
}

static void modules_same(const ncc_module_t *a, const ncc_module_t *b)
{
	ck_assert_str_eq(a->name, b->name);
	ck_assert_int_eq(a->ncomps, b->ncomps);
	ck_assert_str_eq(a->entry->name, b->entry->name);
	ck_assert_int_eq(a->naliases, b->naliases);
	for (int32_t i = 0; i < a->naliases; i++) {
		ilist_same(&a->aliases[i].output_index, &b->aliases[i].output_index);
		ilist_same(&a->aliases[i].param_index, &b->aliases[i].param_index);
		ck_assert_int_eq(a->aliases[i].param_number, b->aliases[i].param_number);
		ck_assert_int_eq(a->aliases[i].kind, b->aliases[i].kind);
	}
	for (int32_t c = 0; c < a->ncomps; c++) {
		const ncc_comp_t *x = a->comps[c], *y = b->comps[c];
		ck_assert_str_eq(x->name, y->name);
		ck_assert_int_eq(x->ninsts, y->ninsts);
		ck_assert_int_eq(x->nparams, y->nparams);
		ck_assert_str_eq(x->root->name, y->root->name);
		for (int32_t i = 0; i < x->ninsts; i++) {
			const ncc_inst_t *p = x->insts[i], *q = y->insts[i];
			ck_assert_str_eq(p->name, q->name);
			ck_assert_int_eq(p->op, q->op);
			shapes_same(&p->shape, &q->shape);
			ck_assert_int_eq(p->noperands, q->noperands);
			for (int32_t k = 0; k < p->noperands; k++)
				ck_assert_str_eq(p->operands[k]->name, q->operands[k]->name);
			ilist_same(&p->dimensions, &q->dimensions);
			comp_ref_same(p->to_apply, q->to_apply);
			comp_ref_same(p->calls, q->calls);
			ck_assert_int_eq(p->tuple_index, q->tuple_index);
			ck_assert_int_eq(p->parameter_number, q->parameter_number);
			ck_assert_int_eq(p->cmp_dir, q->cmp_dir);
			ck_assert_int_eq(p->feature_group_count, q->feature_group_count);
			ck_assert((p->window == NULL) == (q->window == NULL));
			if (p->window) {
				ck_assert_int_eq(p->window->n, q->window->n);
				ck_assert(memcmp(p->window->dims, q->window->dims,
						 sizeof(ncc_window_dim_t) * (size_t)p->window->n) == 0);
			}
			ck_assert((p->conv == NULL) == (q->conv == NULL));
			if (p->conv)
				ck_assert(memcmp(p->conv, q->conv, sizeof(*p->conv)) == 0);
			ck_assert((p->dot == NULL) == (q->dot == NULL));
			if (p->dot) {
				ilist_same(&p->dot->lhs_contracting, &q->dot->lhs_contracting);
				ilist_same(&p->dot->rhs_batch, &q->dot->rhs_batch);
			}
			ck_assert_int_eq(p->literal.present, q->literal.present);
			ck_assert_int_eq(p->literal.elided, q->literal.elided);
			ck_assert_int_eq((long)p->literal.nbytes, (long)q->literal.nbytes);
			if (p->literal.nbytes)
				ck_assert(memcmp(p->literal.data, q->literal.data, p->literal.nbytes) == 0);
			ck_assert((p->metadata.op_type == NULL) == (q->metadata.op_type == NULL));
			if (p->metadata.op_type)
				ck_assert_str_eq(p->metadata.op_type, q->metadata.op_type);
			ck_assert_int_eq(p->metadata.source_line, q->metadata.source_line);
			ck_assert_int_eq(p->nfrontend_attrs, q->nfrontend_attrs);
			if (p->custom_call_target)
				ck_assert_str_eq(p->custom_call_target, q->custom_call_target);
		}
	}
}

/* print -> parse -> compare IR, and print again -> same text */
static void round_trip(const ncc_module_t *m)
{
	char *t1, *t2;
	ck_assert_int_eq(ncc_module_to_string(m, &t1), NCC_OK);
	ncc_module_t *m2;
	ncc_error_t err;
	ck_assert_msg(ncc_parse_hlo(t1, strlen(t1), "printed", &m2, &err) == NCC_OK,
		      "re-parse failed: %s", err.msg);
	modules_same(m, m2);
	ck_assert_int_eq(ncc_module_to_string(m2, &t2), NCC_OK);
	ck_assert_str_eq(t1, t2);
	free(t1);
	free(t2);
	ncc_module_free(m2);
}

/* ---- the corpus ---------------------------------------------------------- */

START_TEST(test_corpus_parses_verifies_round_trips)
{
	DIR *d = opendir(NCC_HLO_CORPUS);
	ck_assert_msg(d, "cannot open the HLO corpus at %s", NCC_HLO_CORPUS);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".hlo") != 0)
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, e->d_name);
		ncc_module_t *m;
		ncc_error_t err;
		ck_assert_msg(ncc_parse_hlo_file(path, &m, &err) == NCC_OK, "%s", err.msg);
		ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
		/* every instruction knows its line, and its text starts with its name */
		for (int32_t c = 0; c < m->ncomps; c++)
			for (int32_t i = 0; i < m->comps[c]->ninsts; i++) {
				const ncc_inst_t *x = m->comps[c]->insts[i];
				ck_assert_int_gt(x->line, 0);
				ck_assert_ptr_nonnull(x->text);
				ck_assert_msg(strstr(x->text, x->name), "%s: text '%s'", x->name, x->text);
				ck_assert(x->op != NCC_OP_UNKNOWN);
			}
		round_trip(m);
		ncc_module_free(m);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 13);
}
END_TEST

START_TEST(test_corpus_details)
{
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_int_eq(ncc_parse_hlo_file(NCC_HLO_CORPUS "/mlp-mini_mlp_single.hlo", &m, &err), NCC_OK);
	ck_assert_str_eq(m->name, "SyncTensorsGraph.142");
	ck_assert_int_eq(m->naliases, 4);
	ck_assert_int_eq(m->aliases[0].output_index.n, 1);
	ck_assert_int_eq(m->aliases[0].output_index.v[0], 0);
	ck_assert_int_eq(m->aliases[0].param_number, 3);
	ck_assert_int_eq(m->aliases[0].kind, NCC_ALIAS_MUST);
	ck_assert_str_eq(m->entry->name, "SyncTensorsGraph.142");
	ck_assert_int_eq(m->entry->nparams, 5);
	ncc_inst_t *p3 = find(m, "p3.15");
	ck_assert_int_eq(p3->op, NCC_OP_PARAMETER);
	ck_assert_int_eq(p3->parameter_number, 3);
	ck_assert_int_eq(p3->nfrontend_attrs, 1);
	ck_assert_str_eq(p3->frontend_attrs[0].key, "neff_input_names");
	ck_assert_str_eq(p3->frontend_attrs[0].value, "input3");
	ck_assert_str_eq(p3->metadata.op_type, "xla__device_data");
	ck_assert_int_eq(p3->metadata.source_line, 1158);
	ck_assert_int_eq(p3->line, 28);
	ck_assert_int_eq(p3->col, 3);
	ncc_inst_t *c = find(m, "constant.46");
	ck_assert_int_eq(c->shape.etype, NCC_S64);
	ck_assert_int_eq(ncc_literal_get_i64(&c->literal, 0), -100);
	ncc_module_free(m);

	ck_assert_int_eq(ncc_parse_hlo_file(NCC_HLO_CORPUS "/xla-mobilenet_v2.hlo", &m, &err), NCC_OK);
	ck_assert_ptr_nonnull(m->entry_computation_layout);
	ncc_inst_t *cv = find(m, "convolution.47");
	ck_assert_int_eq(cv->feature_group_count, 32);
	ck_assert_int_eq(cv->window->n, 2);
	ck_assert_int_eq(cv->window->dims[0].size, 3);
	ck_assert_int_eq(cv->window->dims[1].pad_hi, 1);
	ck_assert_int_eq(cv->conv->in_feature, 1);
	ck_assert_int_eq(cv->conv->k_out_feature, 0);
	ncc_module_free(m);
}
END_TEST

/* ---- syntax features ----------------------------------------------------- */

START_TEST(test_bare_names_no_entry_no_signature_no_root)
{
	ncc_module_t *m = parse_verify_ok(
		"HloModule m\n"
		"add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  add = f32[] add(x, y)\n}\n"
		"main {\n  a = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
		"  r = f32[] reduce(a, z), dimensions={0}, to_apply=add\n}\n");
	ck_assert_int_eq(m->ncomps, 2);
	ck_assert_str_eq(m->entry->name, "main"); /* the last computation */
	ck_assert(m->entry->is_entry);
	ck_assert_str_eq(m->comps[0]->root->name, "add"); /* the last instruction */
	ncc_inst_t *r = find(m, "r");
	ck_assert_ptr_eq(r->to_apply, m->comps[0]);
	ck_assert(!r->shape.has_layout);
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_forward_reference_to_computation)
{
	ncc_module_t *m = parse_verify_ok(
		"HloModule m\n"
		"ENTRY %main (a: f32[4]) -> f32[] {\n  %a = f32[4]{0} parameter(0)\n"
		"  %z = f32[] constant(0)\n"
		"  ROOT %r = f32[] reduce(f32[4]{0} %a, f32[] %z), dimensions={0}, to_apply=%sum\n}\n"
		"%sum (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
		"  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n");
	ck_assert_str_eq(m->entry->name, "main");
	ck_assert_ptr_eq(find(m, "r")->to_apply, ncc_module_find_comp(m, "sum"));
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_tuple_shapes_layouts_dynamic)
{
	ncc_module_t *m = parse_ok(
		"HloModule m, is_scheduled=true, replica_count=1\n"
		"ENTRY e {\n"
		"  p = (f32[2,3]{1,0}, s32[], /*index=2*/(pred[4]{0}, token[])) parameter(0)\n"
		"  t = f32[8,128]{1,0:T(8,128)} parameter(1)\n"
		"  s = f32[16]{0:S(1)} parameter(2)\n"
		"  d = f32[<=4,?]{1,0} parameter(3)\n"
		"  g = (pred[4]{0}, token[]) get-tuple-element(p), index=2\n"
		"  ROOT r = f32[2,3]{0,1} get-tuple-element((f32[2,3]{1,0}, s32[], (pred[4]{0}, token[])) p), index=0\n"
		"}\n");
	ck_assert(m->is_scheduled);
	ck_assert_int_eq(m->nraw_attrs, 1);
	ck_assert_str_eq(m->raw_attrs[0].key, "replica_count");
	ncc_inst_t *p = find(m, "p");
	ck_assert_int_eq(p->shape.etype, NCC_TUPLE);
	ck_assert_int_eq(p->shape.nelems, 3);
	ck_assert_int_eq(p->shape.elems[2].etype, NCC_TUPLE);
	ck_assert_int_eq(p->shape.elems[2].elems[1].etype, NCC_TOKEN);
	ncc_inst_t *t = find(m, "t");
	ck_assert_str_eq(t->shape.layout_extra, "T(8,128)");
	ck_assert_int_eq(t->shape.minor_to_major[0], 1);
	ck_assert_str_eq(find(m, "s")->shape.layout_extra, "S(1)");
	ncc_inst_t *d = find(m, "d");
	ck_assert(d->shape.dynamic[0] && d->shape.dynamic[1]);
	ck_assert_int_eq(d->shape.dims[0], 4);
	ck_assert_int_eq(d->shape.dims[1], NCC_DIM_UNBOUNDED);
	ncc_inst_t *r = find(m, "r");
	ck_assert_int_eq(r->shape.minor_to_major[0], 0);
	ck_assert_int_eq(r->tuple_index, 0);
	char buf[128];
	ncc_shape_to_string(&p->shape, true, buf, sizeof(buf));
	ck_assert_str_eq(buf, "(f32[2,3]{1,0}, s32[], (pred[4]{0}, token[]))");
	ncc_shape_to_string(&d->shape, true, buf, sizeof(buf));
	ck_assert_str_eq(buf, "f32[<=4,?]{1,0}");
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_instruction_text_and_positions)
{
	const char *text = "HloModule m\n\nENTRY e {\n  %a = f32[2]{0} parameter(0)\n"
			   "  ROOT %n = f32[2]{0} negate(f32[2]{0} %a), metadata={op_type=\"aten__neg\" source_file=\"x.py\" source_line=7}\n}\n";
	ncc_module_t *m = parse_verify_ok(text);
	ncc_inst_t *n = find(m, "n");
	ck_assert_int_eq(n->line, 5);
	ck_assert_int_eq(n->col, 3);
	ck_assert_str_eq(n->text, "ROOT %n = f32[2]{0} negate(f32[2]{0} %a), metadata={op_type=\"aten__neg\" source_file=\"x.py\" source_line=7}");
	ck_assert_str_eq(n->metadata.source_file, "x.py");
	ck_assert_ptr_null(n->metadata.op_name);
	ck_assert_int_eq(m->entry->line, 3);
	char *s;
	ck_assert_int_eq(ncc_inst_to_string(n, &s), NCC_OK);
	ck_assert_str_eq(s, "ROOT %n = f32[2]{0} negate(f32[2]{0} %a), metadata={op_type=\"aten__neg\" source_file=\"x.py\" source_line=7}");
	free(s);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_unknown_opcode_is_kept)
{
	ncc_module_t *m = parse_verify_ok("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"
					  "  ROOT b = f32[2] frobnicate(a), knob={1,2}, dial=3x3, dimensions={0}\n}\n");
	ncc_inst_t *b = find(m, "b");
	ck_assert_int_eq(b->op, NCC_OP_UNKNOWN);
	ck_assert_str_eq(b->opname, "frobnicate");
	ck_assert_int_eq(b->nraw_attrs, 2);
	ck_assert_str_eq(b->raw_attrs[0].key, "knob");
	ck_assert_str_eq(b->raw_attrs[0].text, "{1,2}");
	ck_assert_str_eq(b->raw_attrs[1].text, "3x3");
	ck_assert(b->dimensions.present);
	ck_assert_str_eq(b->text, "ROOT b = f32[2] frobnicate(a), knob={1,2}, dial=3x3, dimensions={0}");
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_opcode_table)
{
	/* every opcode name maps back to itself; aliases too */
	for (int i = 1; i < NCC_OP_COUNT; i++) {
		const char *n = ncc_opcode_name((ncc_opcode_t)i);
		ck_assert_int_eq(ncc_opcode_from_name(n, strlen(n)), i);
	}
	ck_assert_int_eq(ncc_opcode_from_name("optimization-barrier", 20), NCC_OP_OPTIMIZATION_BARRIER);
	ck_assert_int_eq(ncc_opcode_from_name("nope", 4), NCC_OP_UNKNOWN);
	for (int t = NCC_PRED; t < NCC_TUPLE; t++) {
		const char *n = ncc_etype_name((ncc_etype_t)t);
		ck_assert_int_eq(ncc_etype_from_name(n, strlen(n)), t);
	}
	ck_assert_int_eq(ncc_etype_from_name("tuple", 5), NCC_INVALID);
	ck_assert_int_eq(ncc_etype_storage_bytes(NCC_BF16), 2);
	ck_assert_int_eq(ncc_etype_storage_bytes(NCC_S4), 1);
	ck_assert_int_eq(ncc_etype_storage_bytes(NCC_C128), 16);
}
END_TEST

START_TEST(test_jax_style_optimized_dump)
{
	/* the shape of a post-optimization dump from JAX/XLA:GPU or XLA:CPU */
	ncc_module_t *m = parse_verify_ok(
		"HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0})->(f32[8]{0}, f32[])}, allow_spmd_sharding_propagation_to_output={true}, frontend_attributes={fingerprint_before_lhs=\"abc\"}\n"
		"\n"
		"%region_0.4 (Arg_0.5: f32[], Arg_1.6: f32[]) -> f32[] {\n"
		"  %Arg_0.5 = f32[] parameter(0), metadata={op_name=\"jit(f)/jit(main)/reduce_sum[axes=(0,)]\" stack_frame_id=1}\n"
		"  %Arg_1.6 = f32[] parameter(1)\n"
		"  ROOT %add.7 = f32[] add(f32[] %Arg_0.5, f32[] %Arg_1.6), metadata={op_name=\"x\" deduplicated_name=\"y\" scheduling_name=\"add.7\"}\n"
		"}\n"
		"\n"
		"%fused_computation (param_0: f32[8]) -> f32[8] {\n"
		"  %param_0 = f32[8]{0} parameter(0)\n"
		"  ROOT %multiply.0 = f32[8]{0} multiply(f32[8]{0} %param_0, f32[8]{0} %param_0)\n"
		"}\n"
		"\n"
		"ENTRY %main.10 (Arg_0.1: f32[8]) -> (f32[8], f32[]) {\n"
		"  %Arg_0.1 = f32[8]{0} parameter(0), parameter_replication={false}, sharding={replicated}\n"
		"  %fusion = f32[8]{0} fusion(f32[8]{0} %Arg_0.1), kind=kLoop, calls=%fused_computation, backend_config={\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[],\"fusion_backend_config\":{\"kind\":\"__loop_fusion\"}}\n"
		"  %ob = f32[8]{0} opt-barrier(f32[8]{0} %fusion)\n"
		"  %constant.2 = f32[] constant(0)\n"
		"  %reduce.3 = f32[] reduce(f32[8]{0} %ob, f32[] %constant.2), dimensions={0}, to_apply=%region_0.4, statistics={visualizing_index=1}\n"
		"  ROOT %tuple = (f32[8]{0}, f32[]) tuple(f32[8]{0} %fusion, f32[] %reduce.3)\n"
		"}\n");
	ncc_inst_t *f = find(m, "fusion");
	ck_assert_int_eq(f->op, NCC_OP_FUSION);
	ck_assert_str_eq(f->fusion_kind, "kLoop");
	ck_assert_str_eq(f->calls->name, "fused_computation");
	ck_assert_ptr_nonnull(strstr(f->backend_config, "__loop_fusion"));
	ck_assert_int_eq(find(m, "ob")->op, NCC_OP_OPTIMIZATION_BARRIER);
	ck_assert_str_eq(find(m, "Arg_0.5")->metadata.op_name, "jit(f)/jit(main)/reduce_sum[axes=(0,)]");
	ck_assert(m->is_scheduled);
	ck_assert_int_eq(m->nraw_attrs, 2);
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

/* ---- attributes ---------------------------------------------------------- */

static const char *k_attrs =
	"HloModule attrs, input_output_alias={ {0}: (0, {}, must-alias), {1}: (1, {}, may-alias), {2}: (2, {}) }, entry_computation_layout={(f32[2,3]{1,0})->f32[3,2]{1,0}}\n"
	"%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %m = f32[] maximum(%a, %b)\n}\n"
	"%ge (a.1: f32[], b.1: f32[]) -> pred[] {\n  %a.1 = f32[] parameter(0)\n  %b.1 = f32[] parameter(1)\n  ROOT %c.1 = pred[] compare(%a.1, %b.1), direction=GE, type=TOTALORDER\n}\n"
	"%lt (a.2: f32[], b.2: f32[]) -> pred[] {\n  %a.2 = f32[] parameter(0)\n  %b.2 = f32[] parameter(1)\n  ROOT %c.2 = pred[] compare(%a.2, %b.2), direction=LT\n}\n"
	"%cond (s: s32[]) -> pred[] {\n  %s = s32[] parameter(0)\n  %k = s32[] constant(10)\n  ROOT %lt.1 = pred[] compare(%s, %k), direction=LT\n}\n"
	"%body (s.1: s32[]) -> s32[] {\n  %s.1 = s32[] parameter(0)\n  %one = s32[] constant(1)\n  ROOT %inc = s32[] add(%s.1, %one)\n}\n"
	"%br0 (x.0: f32[2,3]) -> f32[2,3] {\n  ROOT %x.0 = f32[2,3] parameter(0)\n}\n"
	"%br1 (x.1: f32[2,3]) -> f32[2,3] {\n  %x.1 = f32[2,3] parameter(0)\n  ROOT %n.1 = f32[2,3] negate(%x.1)\n}\n"
	"ENTRY %main (p: f32[2,3], q: f32[3,4], i: s32[2,1], u: u64[2]) -> (f32[2,3], f32[3,4], s32[2,1]) {\n"
	"  %p = f32[2,3]{1,0} parameter(0), sharding={devices=[2,1]0,1}\n"
	"  %q = f32[3,4]{1,0} parameter(1)\n"
	"  %i = s32[2,1]{1,0} parameter(2)\n"
	"  %u = u64[2]{0} parameter(3)\n"
	"  %bc = f32[4,2,3]{2,1,0} broadcast(%p), dimensions={1,2}\n"
	"  %dot = f32[2,4]{1,0} dot(%p, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}, algorithm=dot_bf16_bf16_f32\n"
	"  %zero = f32[] constant(0)\n"
	"  %bdot = f32[4,2,2]{2,1,0} dot(%bc, %bc), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}\n"
	"  %img = f32[1,2,5,5]{3,2,1,0} broadcast(%zero), dimensions={}\n"
	"  %ker = f32[4,1,3,3]{3,2,1,0} broadcast(%zero), dimensions={}\n"
	"  %conv = f32[1,4,3,3]{3,2,1,0} convolution(%img, %ker), window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1}, dim_labels=bf01_oi01->bf01, feature_group_count=2\n"
	"  %pad = f32[4,8]{1,0} pad(%p, %zero), padding=1_1x-1_2_2\n"
	"  %sl = f32[1,2]{1,0} slice(%p), slice={[0:1], [0:3:2]}\n"
	"  %c0 = s32[] constant(0)\n"
	"  %ds = f32[1,2]{1,0} dynamic-slice(%p, %c0, %c0), dynamic_slice_sizes={1,2}\n"
	"  %cmp = pred[2,3]{1,0} compare(%p, %p), direction=NE, type=FLOAT\n"
	"  %ninf = f32[] constant(-inf)\n"
	"  %rw = f32[2,2]{1,0} reduce-window(%p, %ninf), window={size=1x2}, to_apply=%max\n"
	"  %io = s32[2,3]{1,0} iota(), iota_dimension=1\n"
	"  %cc = f32[2,3]{1,0} custom-call(%p), custom_call_target=\"AwsNeuronGelu\", api_version=API_VERSION_UNSPECIFIED, backend_config=\"cfg\\\"q\", custom_call_has_side_effect=true\n"
	"  %cc2 = f32[2,3]{1,0} custom-call(%p), custom_call_target=\"x\", backend_config={\"a\":{\"b\":1}}, output_to_operand_aliasing={{}: (0, {})}\n"
	"  %ga = f32[2,1,3]{2,1,0} gather(%p, %i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true\n"
	"  %upd = f32[2,3]{1,0} broadcast(%zero), dimensions={}\n"
	"  %sc = f32[2,3]{1,0} scatter(%p, %i, %upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=%max\n"
	"  %ar = f32[2,3]{1,0} all-reduce(%p), replica_groups={{0,1},{2,3}}, channel_id=5, use_global_device_ids=true, to_apply=%max\n"
	"  %ag = f32[4,3]{1,0} all-gather(%p), replica_groups=[2,2]<=[4], dimensions={0}\n"
	"  %ag2 = f32[4,3]{1,0} all-gather(%p), replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}\n"
	"  %cp = f32[2,3]{1,0} collective-permute(%p), source_target_pairs={{0,1},{1,0}}\n"
	"  %a0 = f32[] constant(0)\n  %a1 = f32[] constant(1)\n"
	"  %rng = f32[2,3]{1,0} rng(%a0, %a1), distribution=rng_uniform\n"
	"  %rbg = (u64[2]{0}, u32[2,3]{1,0}) rng-bit-generator(%u), algorithm=rng_philox\n"
	"  %sc1 = f32[3]{0} broadcast(%zero), dimensions={}\n"
	"  %bn = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(%p, %sc1, %sc1), epsilon=0.001, feature_index=1\n"
	"  %srt = f32[2,3]{1,0} sort(%p), dimensions={1}, is_stable=true, to_apply=%lt\n"
	"  %init = s32[] constant(0)\n"
	"  %wh = s32[] while(%init), condition=%cond, body=%body\n"
	"  %pr = pred[] constant(true)\n"
	"  %cond1 = f32[2,3]{1,0} conditional(%pr, %p, %p), true_computation=%br0, false_computation=%br1\n"
	"  %cond2 = f32[2,3]{1,0} conditional(%c0, %p, %p), branch_computations={%br0, %br1}\n"
	"  %cat = f32[4,3]{1,0} concatenate(%p, %p), dimensions={0}\n"
	"  %tr = f32[3,2]{0,1} transpose(%p), dimensions={1,0}, frontend_attributes={_xla_a=\"1\",b=\"two\"}, control-predecessors={%cat}\n"
	"  %rev = f32[2,3]{1,0} reverse(%p), dimensions={0,1}\n"
	"  ROOT %out = (f32[2,3]{1,0}, f32[3,4]{1,0}, s32[2,1]{1,0}) tuple(%rev, %q, %i)\n"
	"}\n";

START_TEST(test_every_attribute)
{
	ncc_module_t *m = parse_verify_ok(k_attrs);
	ck_assert_int_eq(m->naliases, 3);
	ck_assert_int_eq(m->aliases[1].kind, NCC_ALIAS_MAY);
	ck_assert_int_eq(m->aliases[2].kind, NCC_ALIAS_UNSPECIFIED);
	ck_assert_str_eq(m->entry_computation_layout, "(f32[2,3]{1,0})->f32[3,2]{1,0}");
	ck_assert_str_eq(find(m, "p")->sharding, "{devices=[2,1]0,1}");
	ILIST(&find(m, "bc")->dimensions, 1, 2);
	ncc_inst_t *x = find(m, "dot");
	ILIST(&x->dot->lhs_contracting, 1);
	ILIST(&x->dot->rhs_contracting, 0);
	ck_assert(!x->dot->lhs_batch.present);
	ck_assert_int_eq(x->nprecision, 2);
	ck_assert_int_eq(x->operand_precision[0], NCC_PRECISION_HIGHEST);
	ck_assert_int_eq(x->nraw_attrs, 1);
	ck_assert_str_eq(x->raw_attrs[0].text, "dot_bf16_bf16_f32");
	x = find(m, "bdot");
	ILIST(&x->dot->lhs_batch, 0);
	ILIST(&x->dot->rhs_batch, 0);
	x = find(m, "conv");
	ck_assert_int_eq(x->window->n, 2);
	ck_assert_int_eq(x->window->dims[1].stride, 2);
	ck_assert_int_eq(x->window->dims[0].pad_lo, 1);
	ck_assert_int_eq(x->conv->nspatial, 2);
	ck_assert_int_eq(x->conv->in_batch, 0);
	ck_assert_int_eq(x->conv->in_spatial[1], 3);
	ck_assert_int_eq(x->conv->k_in_feature, 1);
	ck_assert_int_eq(x->feature_group_count, 2);
	x = find(m, "pad");
	ck_assert_int_eq(x->padding->n, 2);
	ck_assert_int_eq(x->padding->dims[1].lo, -1);
	ck_assert_int_eq(x->padding->dims[1].hi, 2);
	ck_assert_int_eq(x->padding->dims[1].interior, 2);
	ck_assert_int_eq(x->padding->dims[0].interior, 0);
	x = find(m, "sl");
	ck_assert_int_eq(x->slice->dims[1].stride, 2);
	ck_assert_int_eq(x->slice->dims[0].limit, 1);
	ILIST(&find(m, "ds")->dynamic_slice_sizes, 1, 2);
	x = find(m, "cmp");
	ck_assert_int_eq(x->cmp_dir, NCC_CMP_NE);
	ck_assert_int_eq(x->cmp_type, NCC_CMPT_FLOAT);
	ck_assert_int_eq(find(m, "io")->iota_dimension, 1);
	x = find(m, "cc");
	ck_assert_str_eq(x->custom_call_target, "AwsNeuronGelu");
	ck_assert_str_eq(x->api_version, "API_VERSION_UNSPECIFIED");
	ck_assert_str_eq(x->backend_config, "cfg\"q");
	ck_assert(x->custom_call_has_side_effect);
	x = find(m, "cc2");
	ck_assert_str_eq(x->backend_config, "{\"a\":{\"b\":1}}");
	ck_assert_int_eq(x->nraw_attrs, 1);
	ck_assert_str_eq(x->raw_attrs[0].key, "output_to_operand_aliasing");
	x = find(m, "ga");
	ILIST(&x->gather->offset_dims, 1, 2);
	ILIST(&x->gather->start_index_map, 0);
	ILIST(&x->gather->slice_sizes, 1, 3);
	ck_assert_int_eq(x->gather->index_vector_dim, 1);
	ck_assert(x->indices_are_sorted);
	x = find(m, "sc");
	ILIST(&x->scatter->update_window_dims, 1);
	ILIST(&x->scatter->inserted_window_dims, 0);
	ck_assert_int_eq(x->scatter->index_vector_dim, 1);
	ck_assert(x->unique_indices);
	x = find(m, "ar");
	ck_assert_int_eq(x->replica_groups.ngroups, 2);
	ck_assert_int_eq(x->replica_groups.ids[3], 3);
	ck_assert_int_eq(x->channel_id, 5);
	ck_assert(x->use_global_device_ids);
	x = find(m, "ag");
	ck_assert_str_eq(x->replica_groups.iota_text, "[2,2]<=[4]");
	ck_assert_int_eq(x->replica_groups.ngroups, 2);
	ck_assert_int_eq(x->replica_groups.ids[2], 2);
	x = find(m, "ag2"); /* [2,2]<=[2,2]T(1,0): groups {0,2},{1,3} */
	ck_assert_int_eq(x->replica_groups.ids[0], 0);
	ck_assert_int_eq(x->replica_groups.ids[1], 2);
	ck_assert_int_eq(x->replica_groups.ids[2], 1);
	x = find(m, "cp");
	ck_assert_int_eq(x->npairs, 2);
	ck_assert_int_eq(x->pairs[2], 1);
	ck_assert_int_eq(find(m, "rng")->distribution, NCC_RNG_UNIFORM);
	ck_assert_int_eq(find(m, "rbg")->rng_algorithm, NCC_RNG_PHILOX);
	x = find(m, "bn");
	ck_assert(x->has_epsilon);
	ck_assert(fabs(x->epsilon - 0.001) < 1e-12);
	ck_assert_int_eq(x->feature_index, 1);
	x = find(m, "srt");
	ck_assert(x->is_stable);
	ck_assert_str_eq(x->to_apply->name, "lt");
	x = find(m, "wh");
	ck_assert_str_eq(x->condition->name, "cond");
	ck_assert_str_eq(x->body->name, "body");
	x = find(m, "cond1");
	ck_assert(x->branches_are_pred);
	ck_assert_str_eq(x->branches[0]->name, "br0");
	ck_assert_str_eq(x->branches[1]->name, "br1");
	x = find(m, "cond2");
	ck_assert(!x->branches_are_pred);
	ck_assert_int_eq(x->nbranches, 2);
	x = find(m, "tr");
	ck_assert_int_eq(x->nfrontend_attrs, 2);
	ck_assert_str_eq(x->frontend_attrs[1].value, "two");
	ck_assert_int_eq(x->ncontrol_preds, 1);
	ck_assert_str_eq(x->control_preds[0]->name, "cat");
	ck_assert_int_eq(find(m, "c.1")->cmp_type, NCC_CMPT_TOTALORDER);
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

/* ---- literals ------------------------------------------------------------ */

static ncc_literal_t *lit_of(ncc_module_t *m, const char *name) { return &find(m, name)->literal; }

START_TEST(test_literals_all_types)
{
	ncc_module_t *m = parse_verify_ok(
		"HloModule lits\nENTRY e {\n"
		"  pt = pred[] constant(true)\n  pf = pred[2] constant({false, true})\n"
		"  s8 = s8[2] constant({-128, 127})\n  u8 = u8[] constant(255)\n"
		"  s16 = s16[] constant(-32768)\n  u16 = u16[] constant(65535)\n"
		"  s64 = s64[] constant(-9223372036854775808)\n  u64 = u64[] constant(18446744073709551615)\n"
		"  u32 = u32[] constant(4294967295)\n  s4 = s4[2] constant({-8, 7})\n  u4 = u4[] constant(15)\n"
		"  f16 = f16[] constant(1.5)\n  bf = bf16[3] constant({-2.5, 1e+30, 0.1})\n"
		"  f32 = f32[2,2] constant({ { 1, -inf }, { nan, 0x1.8p1 } })\n"
		"  nanp = f32[2] constant({nan(0x7fffff), -nan(0x1)})\n"
		"  f64 = f64[] constant(0.1)\n  c64 = c64[] constant((1, -2))\n"
		"  e8 = f8e4m3fn[2] constant({448, -0.5})\n  e5 = f8e5m2[] constant(-inf)\n"
		"  big = f32[1000,1000]{1,0} constant({...})\n  z = f32[0] constant({})\n"
		"  r3 = s32[2,1,2] constant({ { {1, 2} }, { {3, 4} } })\n"
		"  ROOT t = () tuple()\n}\n");
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "pt"), 0), 1);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "pf"), 1), 1);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "s8"), 0), -128);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "u8"), 0), 255);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "s16"), 0), -32768);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "u16"), 0), 65535);
	ck_assert(ncc_literal_get_i64(lit_of(m, "s64"), 0) == INT64_MIN);
	uint64_t u;
	memcpy(&u, lit_of(m, "u64")->data, 8);
	ck_assert(u == UINT64_MAX);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "u32"), 0), 4294967295ll);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "s4"), 0), -8);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "s4"), 1), 7);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "u4"), 0), 15);
	ck_assert(ncc_literal_get_f64(lit_of(m, "f16"), 0) == 1.5);
	uint16_t h;
	memcpy(&h, lit_of(m, "f16")->data, 2);
	ck_assert_int_eq(h, 0x3e00);
	ck_assert(ncc_literal_get_f64(lit_of(m, "bf"), 0) == -2.5);
	memcpy(&h, lit_of(m, "bf")->data, 2);
	ck_assert_int_eq(h, 0xc020);
	memcpy(&h, lit_of(m, "bf")->data + 4, 2);
	ck_assert_int_eq(h, 0x3dcd); /* 0.1 rounds to nearest even */
	ncc_literal_t *f = lit_of(m, "f32");
	ck_assert_int_eq(f->count, 4);
	ck_assert(ncc_literal_get_f64(f, 0) == 1);
	ck_assert(isinf(ncc_literal_get_f64(f, 1)) && ncc_literal_get_f64(f, 1) < 0);
	ck_assert(isnan(ncc_literal_get_f64(f, 2)));
	ck_assert(ncc_literal_get_f64(f, 3) == 3.0);
	ck_assert(ncc_literal_get_f64(lit_of(m, "f64"), 0) == 0.1);
	ck_assert(isnan(ncc_literal_get_f64(lit_of(m, "nanp"), 1)));
	float c[2];
	memcpy(c, lit_of(m, "c64")->data, 8);
	ck_assert(c[0] == 1 && c[1] == -2);
	ck_assert(ncc_literal_get_f64(lit_of(m, "e8"), 0) == 448);
	ck_assert(ncc_literal_get_f64(lit_of(m, "e8"), 1) == -0.5);
	ck_assert(isinf(ncc_literal_get_f64(lit_of(m, "e5"), 0)));
	ncc_literal_t *big = lit_of(m, "big");
	ck_assert(big->elided);
	ck_assert_ptr_null(big->data);
	ck_assert_int_eq(big->count, 1000000);
	ck_assert_int_eq(lit_of(m, "z")->count, 0);
	ck_assert_int_eq(ncc_literal_get_i64(lit_of(m, "r3"), 3), 4);
	round_trip(m);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_literal_set_get)
{
	ncc_module_t *m;
	ck_assert_int_eq(ncc_module_create("x", &m), NCC_OK);
	ncc_literal_t l;
	ck_assert_int_eq(ncc_literal_init(m, &l, NCC_BF16, 3), NCC_OK);
	ncc_literal_set_f64(&l, 0, 1.0);
	ncc_literal_set_f64(&l, 1, -INFINITY);
	ncc_literal_set_f64(&l, 2, 3.14159);
	ck_assert(ncc_literal_get_f64(&l, 0) == 1.0);
	ck_assert(isinf(ncc_literal_get_f64(&l, 1)));
	ck_assert(fabs(ncc_literal_get_f64(&l, 2) - 3.140625) < 1e-9);
	ck_assert_int_eq(ncc_literal_init(m, &l, NCC_F16, 2), NCC_OK);
	ncc_literal_set_f64(&l, 0, 65504);
	ncc_literal_set_f64(&l, 1, 1e-7); /* subnormal */
	ck_assert(ncc_literal_get_f64(&l, 0) == 65504);
	ck_assert(fabs(ncc_literal_get_f64(&l, 1) - 1.1920929e-07) < 1e-12);
	ncc_module_free(m);
}
END_TEST

/* ---- construction API ---------------------------------------------------- */

START_TEST(test_build_and_print)
{
	ncc_module_t *m;
	ck_assert_int_eq(ncc_module_create("built", &m), NCC_OK);
	ncc_comp_t *c;
	ck_assert_int_eq(ncc_comp_create(m, "main", true, &c), NCC_OK);
	ck_assert_int_eq(ncc_comp_create(m, "main", false, &c), NCC_ERR_INVALID);
	c = m->entry;
	int64_t d[2] = { 2, 3 };
	ncc_shape_t s = ncc_shape_array(NCC_F32, 2, d);
	ncc_inst_t *p, *n, *a;
	ck_assert_int_eq(ncc_inst_create(c, NCC_OP_PARAMETER, &s, "x", NULL, 0, &p), NCC_OK);
	p->parameter_number = 0;
	ck_assert_int_eq(ncc_comp_set_param(c, p), NCC_OK);
	ck_assert_int_eq(ncc_inst_create(c, NCC_OP_NEGATE, &s, NULL, &p, 1, &n), NCC_OK);
	ncc_inst_t *ops[2] = { n, p };
	ck_assert_int_eq(ncc_inst_create(c, NCC_OP_ADD, &s, "sum", ops, 2, &a), NCC_OK);
	c->root = a;
	ncc_error_t err;
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
	ck_assert_int_eq(ncc_inst_use_count(p), 2);
	ncc_inst_replace_uses(n, p);
	ck_assert_int_eq(ncc_inst_use_count(n), 0);
	ncc_comp_remove_inst(c, n);
	ck_assert_int_eq(c->ninsts, 2);
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
	char *t;
	ck_assert_int_eq(ncc_module_to_string(m, &t), NCC_OK);
	ck_assert_msg(strstr(t, "ROOT %sum = f32[2,3]{1,0} add(f32[2,3]{1,0} %x, f32[2,3]{1,0} %x)"), "%s", t);
	ncc_module_t *m2 = parse_verify_ok(t);
	ncc_module_free(m2);
	free(t);
	/* moving the root before its operand breaks "defined before use" */
	ncc_comp_move_inst(c, a, p);
	ck_assert_int_eq(ncc_verify(m, &err), NCC_ERR_VERIFY);
	ck_assert_msg(strstr(err.msg, "before it is defined"), "%s", err.msg);
	ncc_module_free(m);
}
END_TEST

/* ---- malformed input ------------------------------------------------------ */

static const char *k_small =
	"HloModule small, input_output_alias={ {1}: (0, {}, must-alias) }\n"
	"%add (x: f32[], y: f32[]) -> f32[] {\n"
	"  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n"
	"  ROOT %s = f32[] add(f32[] %x, f32[] %y)\n}\n"
	"ENTRY %main (p: f32[2,3]) -> (f32[2], f32[2,3]) {\n"
	"  %p = f32[2,3]{1,0} parameter(0), metadata={op_type=\"t\" source_line=3}\n"
	"  %c = f32[] constant(-1.5e-3)\n"
	"  %r = f32[2]{0} reduce(f32[2,3]{1,0} %p, f32[] %c), dimensions={1}, to_apply=%add\n"
	"  ROOT %t = (f32[2]{0}, f32[2,3]{1,0}) tuple(%r, %p)\n"
	"}\n";

START_TEST(test_truncation_at_every_token_boundary)
{
	ncc_module_t *m = parse_verify_ok(k_small);
	ncc_module_free(m);
	/* every token end of the small module, and every byte too: no prefix but the
	 * whole text is a module; errors point inside the prefix */
	size_t len = strlen(k_small);
	ncc_lexer_t lx;
	ncc_lex_init(&lx, k_small, len);
	int tokens = 0;
	for (;;) {
		ncc_token_t t = ncc_lex_next(&lx);
		if (t.kind == NCC_TOK_EOF)
			break;
		tokens++;
	}
	ck_assert_int_gt(tokens, 100);
	for (size_t n = 0; n < len - 2; n++) {
		ncc_error_t err;
		ncc_status_t st = ncc_parse_hlo(k_small, n, "t.hlo", &m, &err);
		if (st == NCC_OK) {
			/* only a prefix that ends with the first computation's '}' is a module */
			size_t e = n;
			while (e > 0 && (k_small[e - 1] == '\n' || k_small[e - 1] == ' '))
				e--;
			ck_assert_msg(e > 0 && k_small[e - 1] == '}' && k_small[e - 2] == '\n',
				      "prefix %zu parsed", n);
			ck_assert_str_eq(m->entry->name, "add");
			ncc_module_free(m);
			continue;
		}
		ck_assert_msg(st == NCC_ERR_PARSE, "prefix %zu: status %d", n, st);
		ck_assert_ptr_null(m);
		ck_assert_msg(strstr(err.msg, "t.hlo:") == err.msg && strstr(err.msg, ": error: "),
			      "prefix %zu: '%s'", n, err.msg);
		ck_assert_int_ge(err.line, 1);
		ck_assert_int_ge(err.col, 1);
		int lines = 1;
		for (size_t k = 0; k < n; k++)
			lines += k_small[k] == '\n';
		ck_assert_int_le(err.line, lines);
	}
}
END_TEST

START_TEST(test_error_messages)
{
	parse_fails("", 1, 1, "expected 'HloModule', got end of input");
	parse_fails("HloModul m", 1, 1, "expected 'HloModule', got 'HloModul'");
	parse_fails("HloModule m\nENTRY e {\n  a = f33[2] parameter(0)\n}\n", 3, 7,
		    "expected element type (f32, bf16, s32, pred, ...), got 'f33'");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2 parameter(0)\n}\n", 3, 13,
		    "expected ']' or ',' in dimensions, got 'parameter'");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0), bogus={1}\n}\n", 3, 28,
		    "unknown attribute 'bogus' on 'a'");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] negate(zz)\n}\n", 4, 21,
		    "operand 'zz' is not defined");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  a = f32[2] negate(a)\n}\n", 4, 3,
		    "defined twice");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
		    "  r = f32[] reduce(a, z), dimensions={0}, to_apply=%nowhere\n}\n", 5, 52,
		    "unknown computation 'nowhere'");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0), dimensions=\"x\"\n}\n", 3, 39,
		    "expected '{' starting a list of integers, got '\"x\"'");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0), dimensions={1,x}\n}\n", 3, 42,
		    "expected integer, got 'x'");
	parse_fails("HloModule m\nENTRY e {\n  c = s8[] constant(300)\n}\n", 3, 21, "out of range for s8");
	parse_fails("HloModule m\nENTRY e {\n  c = f32[3] constant({1, 2})\n}\n", 3, 23,
		    "literal has 2 elements in dimension 0, the shape says 3");
	parse_fails("HloModule m\nENTRY e {\n  c = f32[1] constant({1, 2})\n}\n", 3, 27,
		    "more than 1 elements");
	parse_fails("HloModule m\nENTRY e {\n  c = pred[] constant(2)\n}\n", 3, 23, "pred value");
	parse_fails("HloModule m\nENTRY e {\n  c = s32[] constant(1.5)\n}\n", 3, 22, "expected integer literal");
	parse_fails("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n",
		    4, 3, "second ROOT");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[] parameter(1)\n}\n", 2, 7, "parameter(0) missing");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(0)\n}\n", 4, 3,
		    "parameter number 0 is used twice");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2,3]{1} parameter(0)\n}\n", 3, 15,
		    "layout has 1 entries but the shape has rank 2");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0), window={size=3x stride=1}\n}\n",
		    3, 44, "malformed window size");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0), dim_labels=bf01_oi0->bf01\n}\n",
		    3, 42, "malformed dim_labels");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0), padding=1_1x\n}\n", 3, 39,
		    "padding");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0), direction=XX\n}\n", 3, 41,
		    "comparison direction");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0), metadata={op_type=\"x}\n}\n",
		    3, 49, "unterminated string");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0) /* open\n}\n", 3, 30,
		    "unterminated comment");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0)\n  @\n}\n", 4, 3,
		    "expected instruction name, got '@'");
	parse_fails("HloModule m\nENTRY e {\n}\n", 2, 7, "has no instructions");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[99999999999999999999] parameter(0)\n}\n", 3, 11,
		    "out of range");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[-1] parameter(0)\n}\n", 3, 11, "negative");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] parameter(0)\n}\n",
		    3, 43, "rank exceeds the limit of 16");
	parse_fails("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0)\n}\nENTRY f {\n  b = f32[] parameter(0)\n}\n",
		    5, 1, "second ENTRY");
}
END_TEST

START_TEST(test_nesting_limit)
{
	/* deeply nested tuple shapes hit the depth limit, not the stack */
	size_t depth = 100000;
	char *s = malloc(depth * 2 + 200);
	size_t o = (size_t)sprintf(s, "HloModule m\nENTRY e {\n  a = ");
	for (size_t i = 0; i < depth; i++)
		s[o++] = '(';
	strcpy(s + o, "f32[]");
	o += 5;
	for (size_t i = 0; i < depth; i++)
		s[o++] = ')';
	strcpy(s + o, " parameter(0)\n}\n");
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_int_eq(ncc_parse_hlo(s, strlen(s), "t.hlo", &m, &err), NCC_ERR_LIMIT);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err.msg, "nesting deeper than"), "%s", err.msg);
	free(s);
	/* a huge claimed constant with tiny text is refused before allocating */
	const char *big = "HloModule m\nENTRY e {\n  c = f32[100000,100000] constant({1})\n}\n";
	ck_assert_int_eq(ncc_parse_hlo(big, strlen(big), "t.hlo", &m, &err), NCC_ERR_PARSE);
	ck_assert_msg(strstr(err.msg, "larger than the remaining input"), "%s", err.msg);
}
END_TEST

START_TEST(test_embedded_nul_and_garbage)
{
	const char text[] = "HloModule m\nENTRY e {\n  a = f32[2]\0 parameter(0)\n}\n";
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_int_eq(ncc_parse_hlo(text, sizeof(text) - 1, "t.hlo", &m, &err), NCC_ERR_PARSE);
	ck_assert_int_eq(err.line, 3);
	ck_assert_msg(strstr(err.msg, "\\x00"), "%s", err.msg);
	unsigned char junk[256];
	for (int i = 0; i < 256; i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	ck_assert_int_ne(ncc_parse_hlo((const char *)junk, sizeof(junk), NULL, &m, NULL), NCC_OK);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(ncc_parse_hlo_file("/nonexistent/x.hlo", &m, &err), NCC_ERR_IO);
	ck_assert_msg(strstr(err.msg, "/nonexistent/x.hlo"), "%s", err.msg);
}
END_TEST

/* The one mapping from a lower layer's status onto the compiler's codes (file
 * reads, the NEFF builder, the size checks of lower/). */
START_TEST(test_status_from_lower_layers)
{
	ck_assert_int_eq(ncc_status_from_ns(NS_OK, NCC_ERR_IO), NCC_OK);
	const struct {
		ns_status_t st;
		ncc_status_t want;
	} cases[] = {
		{ ns_status_make_errno(ENOMEM, "no memory"), NCC_ERR_NOMEM },
		{ ns_status_make_errno(EFBIG, "file too big"), NCC_ERR_LIMIT },
		{ ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "NEFF limit"), NCC_ERR_LIMIT },
		{ ns_status_make_errno(ENOENT, "no such file"), NCC_ERR_IO },
		{ ns_status_make(NS_STATUS_INVALID_ARGUMENT, "bad"), NCC_ERR_IO },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(ncc_status_from_ns(cases[i].st, NCC_ERR_IO), cases[i].want);
		ns_status_free(cases[i].st);
	}
}
END_TEST

/* SQLite's habit: make the n-th allocation fail for n = 1, 2, ... until the operation
 * succeeds; every failure must be NCC_ERR_NOMEM with nothing returned (and, under
 * ASan, nothing leaked). */
START_TEST(test_allocation_failures_are_clean)
{
	const char *texts[] = { k_small, k_attrs };
	for (size_t t = 0; t < 2; t++) {
		const char *text = texts[t];
		ncc_module_t *m = NULL;
		ncc_error_t err;
		long n;
		for (n = 1;; n++) {
			long before = ncc_test_alloc_failures();
			ncc_test_fail_alloc_after(n);
			m = (ncc_module_t *)0x1;
			ncc_status_t st = ncc_parse_hlo(text, strlen(text), "t.hlo", &m, &err);
			ncc_test_fail_alloc_after(0);
			if (ncc_test_alloc_failures() == before) {
				ck_assert_msg(st == NCC_OK, "%s", err.msg);
				break;
			}
			ck_assert_msg(st == NCC_ERR_NOMEM, "allocation %ld: status %d: %s", n, st, err.msg);
			ck_assert_ptr_null(m);
		}
		ck_assert_int_gt(n, 10);
		for (n = 1;; n++) {
			long before = ncc_test_alloc_failures();
			ncc_test_fail_alloc_after(n);
			char *s = (char *)0x1;
			ncc_status_t st = ncc_module_to_string(m, &s);
			ncc_status_t vst = ncc_verify(m, &err);
			ncc_test_fail_alloc_after(0);
			if (ncc_test_alloc_failures() == before) {
				ck_assert_int_eq(st, NCC_OK);
				ck_assert_int_eq(vst, NCC_OK);
				free(s);
				break;
			}
			if (st != NCC_OK)
				ck_assert_ptr_null(s);
			else
				free(s);
			ck_assert(st == NCC_ERR_NOMEM || vst == NCC_ERR_NOMEM);
		}
		ncc_module_free(m);
	}
}
END_TEST

static Suite *parser_suite(void)
{
	Suite *s = suite_create("hlo_parser");
	TCase *tc = tcase_create("parser");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_corpus_parses_verifies_round_trips);
	tcase_add_test(tc, test_corpus_details);
	tcase_add_test(tc, test_bare_names_no_entry_no_signature_no_root);
	tcase_add_test(tc, test_forward_reference_to_computation);
	tcase_add_test(tc, test_tuple_shapes_layouts_dynamic);
	tcase_add_test(tc, test_instruction_text_and_positions);
	tcase_add_test(tc, test_unknown_opcode_is_kept);
	tcase_add_test(tc, test_jax_style_optimized_dump);
	tcase_add_test(tc, test_opcode_table);
	tcase_add_test(tc, test_every_attribute);
	tcase_add_test(tc, test_literals_all_types);
	tcase_add_test(tc, test_literal_set_get);
	tcase_add_test(tc, test_build_and_print);
	tcase_add_test(tc, test_truncation_at_every_token_boundary);
	tcase_add_test(tc, test_error_messages);
	tcase_add_test(tc, test_nesting_limit);
	tcase_add_test(tc, test_embedded_nul_and_garbage);
	tcase_add_test(tc, test_allocation_failures_are_clean);
	tcase_add_test(tc, test_status_from_lower_layers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(parser_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
