/* Lowering of control flow: while and conditional as JUMPs on a pred/index scalar in the single control stream, and call by inlining. */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

bool ncc_lower_control_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_WHILE:
		return inst->condition && inst->body;
	case NCC_OP_CONDITIONAL:
		return inst->nbranches > 0;
	case NCC_OP_CALL:
		return inst->to_apply != NULL;
	default:
		return false;
	}
}

static bool same_view(const ncc_view_t *a, const ncc_view_t *b)
{
	if (a->region != b->region || a->offset != b->offset || a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (int32_t i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] || (a->dims[i] > 1 && a->strides[i] != b->strides[i]))
			return false;
	return true;
}

/* Bytes a view can touch: [lo, hi). */
static void view_span(const ncc_view_t *v, int64_t *lo, int64_t *hi)
{
	int64_t es = (int64_t)isa_dtype_size(v->dtype), a = 0, b = 0;
	for (int32_t i = 0; i < v->rank; i++) {
		int64_t e = (v->dims[i] - 1) * v->strides[i];
		if (e < 0)
			a += e;
		else
			b += e;
	}
	*lo = (int64_t)v->offset + a * es;
	*hi = (int64_t)v->offset + (b + 1) * es;
}

static bool overlaps(const ncc_view_t *a, const ncc_view_t *b)
{
	if (a->region != b->region)
		return false;
	int64_t al, ah, bl, bh;
	view_span(a, &al, &ah);
	view_span(b, &bl, &bh);
	return al < bh && bl < ah;
}

/* Copies n result leaves into n destination buffers as a parallel assignment: a source
 * that overlaps any destination is staged in a temporary first (a loop body that
 * swaps or shifts its state). */
static ncc_status_t assign_leaves(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				  const ncc_view_t *dst, const ncc_view_t *src, int32_t n)
{
	ncc_view_t *s = malloc((size_t)(n > 0 ? n : 1) * sizeof(*s));
	if (!s)
		return NCC_ERR_NOMEM;
	ncc_status_t st = NCC_OK;
	for (int32_t i = 0; i < n && st == NCC_OK; i++) {
		s[i] = src[i];
		if (same_view(&dst[i], &src[i]))
			continue;
		bool clash = false;
		for (int32_t j = 0; j < n; j++)
			if (j != i && overlaps(&src[i], &dst[j]))
				clash = true;
		if (clash) {
			st = ncc_lower_temp_view(ctx, src[i].dtype, src[i].rank, src[i].dims, &s[i]);
			if (st == NCC_OK)
				st = ncc_lower_copy(ctx, inst, &s[i], &src[i]);
		}
	}
	for (int32_t i = 0; i < n && st == NCC_OK; i++)
		if (!same_view(&dst[i], &s[i]))
			st = ncc_lower_copy(ctx, inst, &dst[i], &s[i]);
	free(s);
	return st;
}

static ncc_status_t root_views(ncc_lower_ctx_t *ctx, const ncc_comp_t *c, ncc_view_t *out, int32_t n)
{
	ncc_lval_t *v = ncc_lower_val(ctx, c->root);
	if (!v || v->nleaves != n)
		return NCC_ERR_INTERNAL;
	memcpy(out, v->views, (size_t)n * sizeof(*out));
	return NCC_OK;
}

/* All result leaves of inst allocated (the state of a loop, a conditional's result). */
static ncc_status_t result_views(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, ncc_view_t **out, int32_t *out_n)
{
	int32_t n = ncc_lower_shape_leaves(&inst->shape);
	ncc_view_t *v = calloc((size_t)(n > 0 ? n : 1), sizeof(*v));
	if (!v)
		return NCC_ERR_NOMEM;
	for (int32_t l = 0; l < n; l++) {
		ncc_status_t st = ncc_lower_output_view(ctx, inst, l, &v[l]);
		if (st != NCC_OK) {
			free(v);
			return st;
		}
	}
	*out = v;
	*out_n = n;
	return NCC_OK;
}

static ncc_status_t operand_views(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t first,
				  int32_t count, ncc_view_t **out, int32_t *out_n)
{
	int32_t n = 0;
	for (int32_t i = first; i < first + count; i++)
		n += ncc_lower_shape_leaves(&inst->operands[i]->shape);
	ncc_view_t *v = calloc((size_t)(n > 0 ? n : 1), sizeof(*v));
	if (!v)
		return NCC_ERR_NOMEM;
	int32_t k = 0;
	for (int32_t i = first; i < first + count; i++) {
		int32_t m = ncc_lower_shape_leaves(&inst->operands[i]->shape);
		for (int32_t l = 0; l < m; l++) {
			ncc_status_t st = ncc_lower_operand_leaf(ctx, inst, i, l, &v[k++]);
			if (st != NCC_OK) {
				free(v);
				return st;
			}
		}
	}
	*out = v;
	*out_n = n;
	return NCC_OK;
}

static ncc_status_t lower_while(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t *state = NULL, *init = NULL, *res = NULL;
	int32_t n, ni;
	ncc_status_t st = result_views(ctx, inst, &state, &n);
	if (st != NCC_OK)
		return st;
	st = operand_views(ctx, inst, 0, 1, &init, &ni);
	if (st == NCC_OK && ni != n)
		st = ncc_lower_fail(ctx, inst, NCC_ERR_VERIFY, "while state has %d leaves, init %d", n, ni);
	if (st == NCC_OK)
		st = assign_leaves(ctx, inst, state, init, n);
	res = calloc((size_t)(n > 0 ? n : 1), sizeof(*res));
	if (!res)
		st = NCC_ERR_NOMEM;
	if (st != NCC_OK)
		goto out;
	/* L_cond: cond(state); if !pred goto L_end; body(state); state = root; goto L_cond */
	uint32_t l_cond = ncc_lower_next_index(ctx), jexit;
	isa_insn_t jexit_insn;
	st = ncc_lower_computation(ctx, inst->condition, state, n);
	if (st != NCC_OK)
		goto out;
	ncc_view_t pred;
	st = root_views(ctx, inst->condition, &pred, 1);
	ctx->cur = inst;
	if (st == NCC_OK)
		st = ncc_lower_jump(ctx, &pred, true, UINT32_MAX, &jexit, &jexit_insn);
	ncc_lower_release_root(ctx, inst->condition);
	if (st != NCC_OK)
		goto out;
	st = ncc_lower_computation(ctx, inst->body, state, n);
	ctx->cur = inst;
	if (st == NCC_OK)
		st = root_views(ctx, inst->body, res, n);
	if (st == NCC_OK)
		st = assign_leaves(ctx, inst, state, res, n);
	ncc_lower_release_root(ctx, inst->body);
	if (st == NCC_OK)
		st = ncc_lower_jump(ctx, NULL, false, l_cond, NULL, NULL);
	if (st == NCC_OK)
		st = ncc_lower_patch_jump(ctx, jexit, &jexit_insn, ncc_lower_next_index(ctx));
	/* a loop at the very end of the stream jumps to one past the end: give it a
	 * landing NOP so the target is a valid index */
	if (st == NCC_OK) {
		isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
		st = ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &nop, NULL);
	}
out:
	free(state);
	free(init);
	free(res);
	return st;
}

static ncc_status_t lower_branch(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t b,
				 const ncc_view_t *outv, int32_t n)
{
	ncc_view_t *args = NULL, *res = NULL;
	int32_t na;
	/* branch b takes operand b + 1 */
	ncc_status_t st = operand_views(ctx, inst, b + 1, 1, &args, &na);
	if (st != NCC_OK)
		return st;
	st = ncc_lower_computation(ctx, inst->branches[b], args, na);
	ctx->cur = inst;
	res = calloc((size_t)(n > 0 ? n : 1), sizeof(*res));
	if (!res && st == NCC_OK)
		st = NCC_ERR_NOMEM;
	if (st == NCC_OK)
		st = root_views(ctx, inst->branches[b], res, n);
	if (st == NCC_OK)
		st = assign_leaves(ctx, inst, outv, res, n);
	if (st == NCC_OK || inst->branches[b]->root)
		ncc_lower_release_root(ctx, inst->branches[b]);
	free(args);
	free(res);
	return st;
}

static ncc_status_t lower_conditional(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t *outv = NULL, sel;
	int32_t n = 0, nb = inst->nbranches;
	if (inst->noperands != nb + 1)
		return ncc_lower_fail(ctx, inst, NCC_ERR_VERIFY, "conditional needs %d operands", nb + 1);
	ncc_status_t st = result_views(ctx, inst, &outv, &n);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 0, &sel);
	uint32_t *jend = calloc((size_t)nb + 1, sizeof(uint32_t));
	uint32_t *jto = calloc((size_t)nb + 1, sizeof(uint32_t));
	isa_insn_t *jend_i = calloc((size_t)nb + 1, sizeof(isa_insn_t));
	isa_insn_t *jto_i = calloc((size_t)nb + 1, sizeof(isa_insn_t));
	if (!jend || !jto || !jend_i || !jto_i)
		st = NCC_ERR_NOMEM;
	if (st != NCC_OK)
		goto out;
	bool is_pred = sel.dtype == ISA_DT_PRED;
	/* dispatch: branch i (i < nb-1) when sel selects it; else fall through to the
	 * last branch (XLA: an out-of-range index runs the last branch; pred: true is
	 * branch 0, false branch 1) */
	for (int32_t i = 0; i < nb - 1; i++) {
		ncc_view_t cond = sel;
		if (!is_pred) {
			ncc_view_t c, k;
			memset(&k, 0, sizeof(k));
			st = ncc_lower_temp_view(ctx, ISA_DT_PRED, 0, NULL, &c);
			if (st == NCC_OK)
				st = ncc_lower_const_scalar(ctx, sel.dtype, (double)i, &k);
			ncc_view_t in[2] = { sel, k };
			if (st == NCC_OK)
				st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &c, 2, in);
			if (st != NCC_OK)
				goto out;
			cond = c;
		}
		st = ncc_lower_jump(ctx, &cond, false, UINT32_MAX, &jto[i], &jto_i[i]);
		if (st != NCC_OK)
			goto out;
	}
	st = lower_branch(ctx, inst, nb - 1, outv, n);
	if (st == NCC_OK)
		st = ncc_lower_jump(ctx, NULL, false, UINT32_MAX, &jend[nb - 1], &jend_i[nb - 1]);
	for (int32_t i = 0; i < nb - 1 && st == NCC_OK; i++) {
		st = ncc_lower_patch_jump(ctx, jto[i], &jto_i[i], ncc_lower_next_index(ctx));
		if (st == NCC_OK)
			st = lower_branch(ctx, inst, i, outv, n);
		if (st == NCC_OK)
			st = ncc_lower_jump(ctx, NULL, false, UINT32_MAX, &jend[i], &jend_i[i]);
	}
	if (st != NCC_OK)
		goto out;
	uint32_t end = ncc_lower_next_index(ctx);
	for (int32_t i = 0; i < nb && st == NCC_OK; i++)
		st = ncc_lower_patch_jump(ctx, jend[i], &jend_i[i], end);
	if (st == NCC_OK) {
		isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
		st = ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &nop, NULL);
	}
out:
	free(outv);
	free(jend);
	free(jto);
	free(jend_i);
	free(jto_i);
	return st;
}

static ncc_status_t lower_call(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t *args = NULL;
	int32_t na;
	ncc_status_t st = operand_views(ctx, inst, 0, inst->noperands, &args, &na);
	if (st != NCC_OK)
		return st;
	st = ncc_lower_computation(ctx, inst->to_apply, args, na);
	free(args);
	ctx->cur = inst;
	if (st != NCC_OK)
		return st;
	/* the call's value is the callee's root value (views keep its memory alive) */
	ncc_lval_t *rv = ncc_lower_val(ctx, inst->to_apply->root);
	for (int32_t l = 0; l < rv->nleaves && st == NCC_OK; l++)
		st = ncc_lower_set_view(ctx, inst, l, &rv->views[l]);
	ncc_lower_release_root(ctx, inst->to_apply);
	return st;
}

ncc_status_t ncc_lower_control(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	switch (inst->op) {
	case NCC_OP_WHILE:
		return lower_while(ctx, inst);
	case NCC_OP_CONDITIONAL:
		return lower_conditional(ctx, inst);
	default:
		return lower_call(ctx, inst);
	}
}
