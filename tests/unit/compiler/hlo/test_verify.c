/* Check tests of the verifier: a valid module passes, and each single inconsistency
 * (one edit of the text) is rejected with a message naming the instruction and line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "hlo/hlo_parser.h"
#include "hlo/ir.h"
#include "hlo/verify.h"

/* One line per instruction so that a mutation's line is easy to find. */
static const char *k_base =
	"HloModule v, input_output_alias={ {0}: (0, {}, must-alias) }\n"
	"%add (x: f32[], y: f32[]) -> f32[] {\n"
	"  %x = f32[] parameter(0)\n"
	"  %y = f32[] parameter(1)\n"
	"  ROOT %s = f32[] add(%x, %y)\n"
	"}\n"
	"%lt (a: f32[], b: f32[]) -> pred[] {\n"
	"  %a = f32[] parameter(0)\n"
	"  %b = f32[] parameter(1)\n"
	"  ROOT %c = pred[] compare(%a, %b), direction=LT\n"
	"}\n"
	"%cond (i: s32[]) -> pred[] {\n"
	"  %i = s32[] parameter(0)\n"
	"  %k = s32[] constant(4)\n"
	"  ROOT %l = pred[] compare(%i, %k), direction=LT\n"
	"}\n"
	"%body (j: s32[]) -> s32[] {\n"
	"  %j = s32[] parameter(0)\n"
	"  %one = s32[] constant(1)\n"
	"  ROOT %n = s32[] add(%j, %one)\n"
	"}\n"
	"%br (q: f32[2,3]) -> f32[2,3] {\n"
	"  ROOT %q = f32[2,3] parameter(0)\n"
	"}\n"
	"ENTRY %main (p: f32[2,3], w: f32[3,4], idx: s32[2,1]) -> (f32[2,3], f32[2,4]) {\n"
	"  %p = f32[2,3]{1,0} parameter(0)\n"
	"  %w = f32[3,4]{1,0} parameter(1)\n"
	"  %idx = s32[2,1]{1,0} parameter(2)\n"
	"  %neg = f32[2,3]{1,0} negate(%p)\n"
	"  %ci = s32[2,3]{1,0} convert(%p)\n"
	"  %sum = f32[2,3]{1,0} add(%p, %neg)\n"
	"  %cmp = pred[2,3]{1,0} compare(%p, %neg), direction=GT\n"
	"  %sel = f32[2,3]{1,0} select(%cmp, %p, %neg)\n"
	"  %zero = f32[] constant(0)\n"
	"  %c0 = s32[] constant(0)\n"
	"  %cl = f32[2,3]{1,0} clamp(%zero, %p, %p)\n"
	"  %bc = f32[4,2,3]{2,1,0} broadcast(%p), dimensions={1,2}\n"
	"  %rs = f32[3,2]{1,0} reshape(%p)\n"
	"  %tr = f32[3,2]{1,0} transpose(%p), dimensions={1,0}\n"
	"  %rev = f32[2,3]{1,0} reverse(%p), dimensions={0}\n"
	"  %dot = f32[2,4]{1,0} dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  %bdot = f32[4,2,2]{2,1,0} dot(%bc, %bc), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}\n"
	"  %img = f32[2,4,5,5]{3,2,1,0} broadcast(%zero), dimensions={}\n"
	"  %ker = f32[6,2,3,3]{3,2,1,0} broadcast(%zero), dimensions={}\n"
	"  %conv = f32[2,6,3,3]{3,2,1,0} convolution(%img, %ker), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=2\n"
	"  %red = f32[2]{0} reduce(%p, %zero), dimensions={1}, to_apply=%add\n"
	"  %rw = f32[2,2]{1,0} reduce-window(%p, %zero), window={size=1x2}, to_apply=%add\n"
	"  %sl = f32[1,2]{1,0} slice(%p), slice={[1:2], [0:3:2]}\n"
	"  %ds = f32[1,2]{1,0} dynamic-slice(%p, %c0, %c0), dynamic_slice_sizes={1,2}\n"
	"  %dus = f32[2,3]{1,0} dynamic-update-slice(%p, %sl, %c0, %c0)\n"
	"  %cat = f32[4,3]{1,0} concatenate(%p, %p), dimensions={0}\n"
	"  %pad = f32[4,7]{1,0} pad(%p, %zero), padding=1_1x0_0_2\n"
	"  %io = s32[2,3]{1,0} iota(), iota_dimension=1\n"
	"  %ga = f32[2,3]{1,0} gather(%p, %idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n"
	"  %sc = f32[2,3]{1,0} scatter(%p, %idx, %ga), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add\n"
	"  %tup = (f32[2,3]{1,0}, s32[]) tuple(%p, %c0)\n"
	"  %gte = s32[] get-tuple-element(%tup), index=1\n"
	"  %wh = s32[] while(%gte), condition=%cond, body=%body\n"
	"  %pr = pred[] constant(false)\n"
	"  %cnd = f32[2,3]{1,0} conditional(%pr, %p, %neg), true_computation=%br, false_computation=%br\n"
	"  %srt = f32[2,3]{1,0} sort(%p), dimensions={1}, to_apply=%lt\n"
	"  %f3 = f32[3]{0} broadcast(%zero), dimensions={}\n"
	"  %bn = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(%p, %f3, %f3), epsilon=0.001, feature_index=1\n"
	"  %cv = s32[2,3]{1,0} convert(%p)\n"
	"  %bcv = s32[2,3]{1,0} bitcast-convert(%p)\n"
	"  %cst = f32[2] constant({1, 2})\n"
	"  %cc = f32[7]{0} custom-call(%p), custom_call_target=\"AwsNeuronAnything\"\n"
	"  ROOT %out = (f32[2,3]{1,0}, f32[2,4]{1,0}) tuple(%sum, %dot)\n"
	"}\n";

static int line_of(const char *text, const char *needle)
{
	const char *at = strstr(text, needle);
	ck_assert_msg(at, "no '%s' in the base module", needle);
	int line = 1;
	for (const char *q = text; q < at; q++)
		line += *q == '\n';
	return line;
}

START_TEST(test_base_module_verifies)
{
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_msg(ncc_parse_hlo(k_base, strlen(k_base), "v.hlo", &m, &err) == NCC_OK, "%s", err.msg);
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
	for (int32_t i = 0; i < m->entry->ninsts; i++)
		ck_assert_msg(ncc_verify_inst(m->entry->insts[i], &err) == NCC_OK, "%s", err.msg);
	ncc_module_free(m);
}
END_TEST

typedef struct mutation {
	const char *from;     /* text in k_base (first occurrence) */
	const char *to;       /* its replacement */
	const char *fragment; /* expected in the message */
	const char *at;       /* the message names this line's first text, NULL: no line */
} mutation_t;

static const mutation_t k_mutations[] = {
	/* elementwise */
	{ "%sum = f32[2,3]{1,0} add(%p, %neg)", "%sum = f32[2,3]{1,0} add(%p, %w)",
	  "differ in dimensions", "%sum =" },
	{ "%sum = f32[2,3]{1,0} add(%p, %neg)", "%sum = f32[2,3]{1,0} add(%p, %ci)",
	  "operand types differ: f32 vs s32", "%sum =" },
	{ "%neg = f32[2,3]{1,0} negate(%p)", "%neg = f32[3,2]{1,0} negate(%p)",
	  "differ in dimensions", "%neg =" },
	{ "%neg = f32[2,3]{1,0} negate(%p)", "%neg = s32[2,3]{1,0} negate(%p)",
	  "result type s32 differs", "%neg =" },
	{ "%cmp = pred[2,3]{1,0} compare(%p, %neg), direction=GT", "%cmp = pred[2,3]{1,0} compare(%p, %neg)",
	  "missing direction", "%cmp =" },
	{ "%cmp = pred[2,3]{1,0} compare(%p, %neg), direction=GT", "%cmp = f32[2,3]{1,0} compare(%p, %neg), direction=GT",
	  "result must be pred", "%cmp =" },
	{ "%sel = f32[2,3]{1,0} select(%cmp, %p, %neg)", "%sel = f32[2,3]{1,0} select(%p, %p, %neg)",
	  "predicate must be pred", "%sel =" },
	{ "%cl = f32[2,3]{1,0} clamp(%zero, %p, %p)", "%cl = f32[2,3]{1,0} clamp(%c0, %p, %p)",
	  "types differ", "%cl =" },
	{ "%cv = s32[2,3]{1,0} convert(%p)", "%cv = s32[3,2]{1,0} convert(%p)", "differ in dimensions", "%cv =" },
	{ "%bcv = s32[2,3]{1,0} bitcast-convert(%p)", "%bcv = s16[2,3]{1,0} bitcast-convert(%p)",
	  "trailing dimension of 2", "%bcv =" },
	/* shape-changing ops */
	{ "broadcast(%p), dimensions={1,2}", "broadcast(%p), dimensions={1}", "dimensions has 1 entries", "%bc =" },
	{ "broadcast(%p), dimensions={1,2}", "broadcast(%p), dimensions={2,1}", "maps to result dimension", "%bc =" },
	{ "broadcast(%p), dimensions={1,2}", "broadcast(%p), dimensions={1,3}", "out of range", "%bc =" },
	{ "%rs = f32[3,2]{1,0} reshape(%p)", "%rs = f32[3,3]{1,0} reshape(%p)", "has 6 elements", "%rs =" },
	{ "transpose(%p), dimensions={1,0}", "transpose(%p), dimensions={1,1}", "repeats dimension 1", "%tr =" },
	{ "%tr = f32[3,2]{1,0}", "%tr = f32[2,3]{1,0}", "expected f32[3,2]", "%tr =" },
	{ "reverse(%p), dimensions={0}", "reverse(%p), dimensions={2}", "out of range", "%rev =" },
	/* dot and convolution */
	{ "%dot = f32[2,4]{1,0} dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
	  "%dot = f32[2,4]{1,0} dot(%p, %w), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
	  "lhs contracting dim 0 has size 2 but rhs contracting dim 0 has size 3", "%dot =" },
	{ "%dot = f32[2,4]{1,0} dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
	  "%dot = f32[2,4]{1,0} dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={}",
	  "lhs_contracting_dims has 1 entries, rhs_contracting_dims 0", "%dot =" },
	{ "%bdot = f32[4,2,2]{2,1,0}", "%bdot = f32[2,2,4]{2,1,0}", "expected f32[4,2,2]", "%bdot =" },
	{ "%conv = f32[2,6,3,3]{3,2,1,0}", "%conv = f32[2,6,5,5]{3,2,1,0}", "expected f32[2,6,3,3]", "%conv =" },
	{ "feature_group_count=2", "feature_group_count=4", "kernel input features", "%conv =" },
	{ "window={size=3x3 stride=2x2 pad=1_1x1_1}", "window={size=3x2 stride=2x2 pad=1_1x1_1}",
	  "differs from kernel size", "%conv =" },
	{ "dim_labels=bf01_oi01->bf01", "dim_labels=bf0_oi0->bf0", "input rank 4", "%conv =" },
	/* reductions */
	{ "%red = f32[2]{0} reduce(%p, %zero)", "%red = f32[3]{0} reduce(%p, %zero)", "expected f32[2]", "%red =" },
	{ "%red = f32[2]{0} reduce(%p, %zero)", "%red = f32[2]{0} reduce(%p, %c0)", "init value 0 type s32", "%red =" },
	{ "dimensions={1}, to_apply=%add\n  %rw", "dimensions={1}, to_apply=%lt\n  %rw", "returns pred[], expected f32[]", "%red =" },
	{ "%rw = f32[2,2]{1,0}", "%rw = f32[2,3]{1,0}", "expected f32[2,2]", "%rw =" },
	{ "window={size=1x2}, to_apply", "window={size=2}, to_apply", "window must have 2 dimensions", "%rw =" },
	/* slicing */
	{ "slice={[1:2], [0:3:2]}", "slice={[1:3], [0:3:2]}", "out of bounds for dimension 0", "%sl =" },
	{ "slice={[1:2], [0:3:2]}", "slice={[1:2]}", "slice has 1 dimensions", "%sl =" },
	{ "dynamic_slice_sizes={1,2}", "dynamic_slice_sizes={3,2}", "out of bounds for dimension 0", "%ds =" },
	{ "dynamic-slice(%p, %c0, %c0)", "dynamic-slice(%p, %c0)", "expects 2 scalar index operands", "%ds =" },
	{ "dynamic-slice(%p, %c0, %c0)", "dynamic-slice(%p, %c0, %zero)", "must be an integer scalar", "%ds =" },
	{ "dynamic-update-slice(%p, %sl, %c0, %c0)", "dynamic-update-slice(%p, %rs, %c0, %c0)",
	  "update dimension 0 (3) exceeds", "%dus =" },
	{ "concatenate(%p, %p), dimensions={0}", "concatenate(%p, %tr), dimensions={0}",
	  "differs from operand 0 in dimension 1", "%cat =" },
	{ "%cat = f32[4,3]{1,0}", "%cat = f32[2,6]{1,0}", "expected f32[4,3]", "%cat =" },
	{ "%pad = f32[4,7]{1,0}", "%pad = f32[4,5]{1,0}", "expected f32[4,7]", "%pad =" },
	{ "padding=1_1x0_0_2", "padding=1_1", "padding has 1 dimensions", "%pad =" },
	{ "iota_dimension=1", "iota_dimension=2", "iota_dimension 2 out of range", "%io =" },
	/* gather / scatter */
	{ "slice_sizes={1,3}", "slice_sizes={1,4}", "out of bounds", "%ga =" },
	{ "offset_dims={1}, collapsed_slice_dims={0}", "offset_dims={1}, collapsed_slice_dims={}",
	  "offset_dims has 1 entries", "%ga =" },
	{ "%ga = f32[2,3]{1,0}", "%ga = f32[2,2]{1,0}", "expected f32[2,3]", "%ga =" },
	{ "start_index_map={0}", "start_index_map={0,1}", "start_index_map has 2 entries", "%ga =" },
	{ "update_window_dims={1}, inserted_window_dims={0}", "update_window_dims={1}, inserted_window_dims={}",
	  "must equal operand rank 2", "%sc =" },
	{ "scatter(%p, %idx, %ga)", "scatter(%p, %idx, %cat)", "does not match indices dimension", "%sc =" },
	{ "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add", "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%lt",
	  "to_apply computation 'lt' returns pred[]", "%sc =" },
	/* tuples and control flow */
	{ "%gte = s32[] get-tuple-element(%tup), index=1", "%gte = s32[] get-tuple-element(%tup), index=2",
	  "index 2 out of range for a tuple of 2", "%gte =" },
	{ "%gte = s32[] get-tuple-element(%tup), index=1", "%gte = s32[] get-tuple-element(%tup), index=0",
	  "expected f32[2,3]", "%gte =" },
	{ "%tup = (f32[2,3]{1,0}, s32[]) tuple(%p, %c0)", "%tup = (f32[2,3]{1,0}, s32[]) tuple(%p, %zero)",
	  "tuple element 1 is s32[] but operand 1 is f32[]", "%tup =" },
	{ "condition=%cond, body=%body", "condition=%body, body=%body", "condition computation 'body' returns s32[], expected pred[]", "%wh =" },
	{ "%wh = s32[] while(%gte)", "%wh = s32[] while(%zero)", "parameter 0 is s32[], expected f32[]", "%wh =" },
	{ "conditional(%pr, %p, %neg)", "conditional(%c0, %p, %neg)", "predicate must be pred[]", "%cnd =" },
	{ "conditional(%pr, %p, %neg)", "conditional(%pr, %p, %tr)", "branch computation 'br' parameter 0", "%cnd =" },
	{ "sort(%p), dimensions={1}", "sort(%p), dimensions={}", "dimensions must hold one dimension", "%srt =" },
	{ "sort(%p), dimensions={1}, to_apply=%lt", "sort(%p), dimensions={1}, to_apply=%add", "comparator computation 'add' returns f32[]", "%srt =" },
	{ "epsilon=0.001, feature_index=1", "epsilon=0.001, feature_index=0", "expected f32[2]", "%bn =" },
	{ "epsilon=0.001, feature_index=1", "epsilon=0.001, feature_index=5", "feature_index 5 out of range", "%bn =" },
	{ "%cst = f32[2] constant({1, 2})", "%cst = f32[2] parameter(3)", "signature lists 3 parameters, body has 4", NULL },
	/* module structure */
	{ "(p: f32[2,3], w: f32[3,4], idx: s32[2,1]) -> (f32[2,3], f32[2,4])",
	  "(p: f32[2,3], w: f32[3,4], idx: s32[2,1]) -> (f32[2,3], f32[2,5])", "signature returns", "ROOT %out" },
	{ "(p: f32[2,3], w: f32[3,4], idx", "(p: f32[3,3], w: f32[3,4], idx", "signature says parameter 0 is f32[3,3]", "%p =" },
	{ "{0}: (0, {}, must-alias)", "{1}: (0, {}, must-alias)", "input_output_alias: output f32[2,4]", NULL },
	{ "{0}: (0, {}, must-alias)", "{0}: (7, {}, must-alias)", "parameter 7 does not exist", NULL },
	{ "{0}: (0, {}, must-alias)", "{5}: (0, {}, must-alias)", "not an element of the result", NULL },
	{ "%p = f32[2,3]{1,0} parameter(0)", "%p = f32[2,3]{1,1} parameter(0)", "layout is not a permutation", "%p =" },
};

START_TEST(test_mutation_rejected)
{
	const mutation_t *mu = &k_mutations[_i];
	const char *at = strstr(k_base, mu->from);
	ck_assert_msg(at, "mutation %d: '%s' not in base", _i, mu->from);
	size_t pre = (size_t)(at - k_base), fl = strlen(mu->from), tl = strlen(mu->to);
	size_t n = strlen(k_base) - fl + tl;
	char *text = malloc(n + 1);
	memcpy(text, k_base, pre);
	memcpy(text + pre, mu->to, tl);
	strcpy(text + pre + tl, at + fl);
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_msg(ncc_parse_hlo(text, n, "v.hlo", &m, &err) == NCC_OK, "mutation %d: %s", _i, err.msg);
	ncc_status_t st = ncc_verify(m, &err);
	ck_assert_msg(st == NCC_ERR_VERIFY, "mutation %d ('%s') was accepted", _i, mu->to);
	ck_assert_msg(strstr(err.msg, mu->fragment), "mutation %d: message '%s' lacks '%s'", _i, err.msg,
		      mu->fragment);
	ck_assert_msg(strncmp(err.msg, "v.hlo", 5) == 0, "%s", err.msg);
	if (mu->at) {
		int line = line_of(text, mu->at);
		char want[32];
		snprintf(want, sizeof(want), "v.hlo:%d:", line);
		ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "mutation %d: '%s' is not at line %d",
			      _i, err.msg, line);
		ck_assert_int_eq(err.line, line);
	}
	ncc_module_free(m);
	free(text);
}
END_TEST

START_TEST(test_structural_errors_in_built_modules)
{
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_int_eq(ncc_module_create("b", &m), NCC_OK);
	ck_assert_int_eq(ncc_verify(m, &err), NCC_ERR_VERIFY);
	ck_assert_msg(strstr(err.msg, "has no entry computation"), "%s", err.msg);
	ncc_comp_t *c, *other;
	ck_assert_int_eq(ncc_comp_create(m, "main", true, &c), NCC_OK);
	ck_assert_int_eq(ncc_comp_create(m, "other", false, &other), NCC_OK);
	ncc_shape_t s = ncc_shape_scalar(NCC_F32);
	ncc_inst_t *p, *q, *a;
	ck_assert_int_eq(ncc_inst_create(other, NCC_OP_PARAMETER, &s, "q", NULL, 0, &q), NCC_OK);
	ck_assert_int_eq(ncc_comp_set_param(other, q), NCC_OK);
	other->root = q;
	ck_assert_int_eq(ncc_inst_create(c, NCC_OP_PARAMETER, &s, "p", NULL, 0, &p), NCC_OK);
	ck_assert_int_eq(ncc_comp_set_param(c, p), NCC_OK);
	ncc_inst_t *ops[2] = { p, q }; /* q lives in another computation */
	ck_assert_int_eq(ncc_inst_create(c, NCC_OP_ADD, &s, "a", ops, 2, &a), NCC_OK);
	c->root = a;
	ck_assert_int_eq(ncc_verify(m, &err), NCC_ERR_VERIFY);
	ck_assert_msg(strstr(err.msg, "instruction 'a' (add): operand 'q' belongs to another computation"),
		      "%s", err.msg);
	ops[1] = p;
	ck_assert_int_eq(ncc_inst_set_operands(a, ops, 2), NCC_OK);
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
	/* the entry may not be called */
	a->op = NCC_OP_CALL;
	a->to_apply = c;
	a->noperands = 1;
	ck_assert_int_eq(ncc_verify(m, &err), NCC_ERR_VERIFY);
	ck_assert_msg(strstr(err.msg, "calls its own computation"), "%s", err.msg);
	a->to_apply = other;
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_call_cycle_rejected)
{
	/* a -> b -> a through to_apply; the parser resolves it, the verifier refuses it */
	const char *text =
		"HloModule cyc\n"
		"%a (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n"
		"  ROOT %r = f32[] map(%x, %y), to_apply=%b\n}\n"
		"%b (u: f32[], w: f32[]) -> f32[] {\n  %u = f32[] parameter(0)\n  %w = f32[] parameter(1)\n"
		"  ROOT %q = f32[] map(%u, %w), to_apply=%a\n}\n"
		"ENTRY %e (p: f32[], s: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n  %s = f32[] parameter(1)\n"
		"  ROOT %m = f32[] map(%p, %s), to_apply=%a\n}\n";
	ncc_module_t *m;
	ncc_error_t err;
	ck_assert_int_eq(ncc_parse_hlo(text, strlen(text), "c.hlo", &m, &err), NCC_OK);
	ck_assert_int_eq(ncc_verify(m, &err), NCC_ERR_VERIFY);
	ck_assert_msg(strstr(err.msg, "c.hlo:10:3: error: instruction 'q' (map): calls computation 'a', which is already on the call chain"),
		      "%s", err.msg);
	ncc_module_free(m);
}
END_TEST

static Suite *verify_suite(void)
{
	Suite *s = suite_create("verify");
	TCase *tc = tcase_create("verify");
	tcase_add_test(tc, test_base_module_verifies);
	tcase_add_loop_test(tc, test_mutation_rejected, 0,
			    (int)(sizeof(k_mutations) / sizeof(k_mutations[0])));
	tcase_add_test(tc, test_structural_errors_in_built_modules);
	tcase_add_test(tc, test_call_cycle_rejected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(verify_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
