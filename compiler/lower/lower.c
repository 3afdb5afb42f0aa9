/* ncc back-end driver: walks the IR in program order (each instruction to the lowering of its family, values released after their last use), lowers the called computations of while, conditional and call in place, binds the entry's parameters and outputs to the NEFF's tensors and produces the NEFF. The builder the families share: builder.c (instructions, streams, debug map, errors), builder_value.c (values, scratch, constants). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

void ncc_compile_options_init(ncc_compile_options_t *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->n_cores = 1;
	opts->embed_hlo = true;
	opts->multi_engine = -1;
}

const struct ncc_compile_options *ncc_lower_options(const ncc_lower_ctx_t *ctx)
{
	return &ctx->opts;
}

/* ---------------------------------------------------------------- errors */

/* ---------------------------------------------------------------- value lifetimes */

static void lval_clear(ncc_lval_t *v)
{
	free(v->views);
	free(v->blocks);
	free(v->set);
	free(v->bind_out);
	memset(v, 0, sizeof(*v));
}

static ncc_status_t lval_init(ncc_lval_t *v, int32_t nleaves)
{
	lval_clear(v);
	int32_t n = nleaves > 0 ? nleaves : 1;
	v->views = calloc((size_t)n, sizeof(ncc_view_t));
	v->blocks = malloc((size_t)n * sizeof(int32_t));
	v->set = calloc((size_t)n, sizeof(bool));
	v->bind_out = malloc((size_t)n * sizeof(int32_t));
	if (!v->views || !v->blocks || !v->set || !v->bind_out) {
		lval_clear(v);
		return NCC_ERR_NOMEM;
	}
	for (int32_t i = 0; i < n; i++)
		v->blocks[i] = v->bind_out[i] = -1;
	v->nleaves = nleaves;
	v->live = true;
	return NCC_OK;
}

static void lval_release(ncc_lower_ctx_t *ctx, ncc_lval_t *v)
{
	if (!v->live)
		return;
	for (int32_t i = 0; i < v->nleaves; i++) {
		ncc_plan_unref(&ctx->plan, v->blocks[i]);
		v->blocks[i] = -1;
	}
	v->live = false;
}

/* ---------------------------------------------------------------- support */

/* The reductions' families: reduce and reduce-window with one result
 * (lower_reduce.c), the variadic reduce (lower_reduce_variadic.c), batch norm
 * (lower_batch_norm.c), select-and-scatter (lower_select_scatter.c); NULL with
 * *out_reason set when the op is theirs but not supported. */
static ncc_lower_fn reduction_family(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_REDUCE:
	case NCC_OP_REDUCE_WINDOW:
		if (inst->shape.etype == NCC_TUPLE) {
			if (inst->op == NCC_OP_REDUCE_WINDOW) {
				*out_reason = "unsupported variadic (multi-operand) reduce-window";
				return NULL;
			}
			return ncc_lower_variadic_reduce_supports(inst, out_reason)
				       ? ncc_lower_variadic_reduce : NULL;
		}
		return ncc_lower_reduce_supports(inst, out_reason) ? ncc_lower_reduce_op : NULL;
	case NCC_OP_BATCH_NORM_TRAINING:
	case NCC_OP_BATCH_NORM_INFERENCE:
	case NCC_OP_BATCH_NORM_GRAD:
		return ncc_lower_batch_norm;
	case NCC_OP_SELECT_AND_SCATTER:
		return ncc_lower_select_and_scatter_supports(inst, out_reason)
			       ? ncc_lower_select_and_scatter : NULL;
	default:
		return NULL;
	}
}

bool ncc_lower_supports(const ncc_inst_t *inst, const char **out_reason)
{
	static const char *r_type = "unsupported element type";
	const char *dummy;
	if (!out_reason)
		out_reason = &dummy;
	*out_reason = NULL;
	/* every array leaf of the result and of the operands must have an ISA dtype
	 * (tokens pass through after-all and friends, handled below) */
	int32_t nl = ncc_lower_shape_leaves(&inst->shape);
	for (int32_t k = 0; k < nl; k++) {
		const ncc_shape_t *s = ncc_lower_shape_leaf(&inst->shape, k);
		isa_dtype_t dt;
		if (s && s->etype != NCC_TUPLE && ncc_lower_dtype(s->etype, &dt) != NCC_OK) {
			*out_reason = r_type;
			return false;
		}
	}
	for (int32_t i = 0; i < inst->noperands; i++) {
		const ncc_shape_t *os = &inst->operands[i]->shape;
		int32_t n = ncc_lower_shape_leaves(os);
		for (int32_t k = 0; k < n; k++) {
			const ncc_shape_t *s = ncc_lower_shape_leaf(os, k);
			isa_dtype_t dt;
			if (s && ncc_lower_dtype(s->etype, &dt) != NCC_OK) {
				*out_reason = r_type;
				return false;
			}
		}
	}
	for (int32_t k = 0; k < nl; k++) {
		const ncc_shape_t *s = ncc_lower_shape_leaf(&inst->shape, k);
		if (s && ns_status_consume_code(ncc_lower_leaf_check(s)) != NS_STATUS_OK) {
			*out_reason = "result larger than a device can address (2^48 bytes)";
			return false;
		}
	}
	if (ncc_lower_elementwise_supports(inst, out_reason) ||
	    ncc_lower_shape_supports(inst, out_reason) ||
	    reduction_family(inst, out_reason) != NULL ||
	    ncc_lower_dot_supports(inst, out_reason) ||
	    ncc_lower_conv_supports(inst, out_reason) ||
	    ncc_lower_misc_supports(inst, out_reason) ||
	    ncc_lower_control_supports(inst, out_reason))
		return true;
	if (inst->op == NCC_OP_FUSION)
		return true; /* the fused-loop lowering of the passes decides */
	if (!*out_reason)
		*out_reason = "unsupported operation";
	return false;
}

static ncc_lower_fn family_of(const ncc_inst_t *inst)
{
	const char *r;
	ncc_lower_fn fn;
	if (ncc_lower_elementwise_supports(inst, &r))
		return ncc_lower_elementwise;
	if (ncc_lower_shape_supports(inst, &r))
		return ncc_lower_shape_op;
	if ((fn = reduction_family(inst, &r)))
		return fn;
	if (ncc_lower_dot_supports(inst, &r))
		return ncc_lower_dot;
	if (ncc_lower_conv_supports(inst, &r))
		return ncc_lower_conv;
	if (ncc_lower_misc_supports(inst, &r))
		return ncc_lower_misc;
	if (ncc_lower_control_supports(inst, &r))
		return ncc_lower_control;
	return NULL;
}

/* ---------------------------------------------------------------- walking */

static ncc_status_t lower_inst(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	const char *reason = NULL;
	if (!ncc_lower_supports(inst, &reason)) {
		for (int32_t k = 0; k < ncc_lower_shape_leaves(&inst->shape); k++) {
			const ncc_shape_t *s = ncc_lower_shape_leaf(&inst->shape, k);
			ns_status_t big = s ? ncc_lower_leaf_check(s) : NS_OK;
			if (big) {
				ncc_status_t st = ncc_lower_fail(ctx, inst, NCC_ERR_LIMIT, "%s",
								 ns_status_message(big));
				ns_status_free(big);
				return st;
			}
		}
		char ty[64] = "";
		if (reason && strstr(reason, "element type")) {
			/* name the offending type */
			int32_t nl = ncc_lower_shape_leaves(&inst->shape);
			isa_dtype_t dt;
			for (int32_t k = 0; k < nl && !ty[0]; k++) {
				const ncc_shape_t *s = ncc_lower_shape_leaf(&inst->shape, k);
				if (s && ncc_lower_dtype(s->etype, &dt) != NCC_OK)
					snprintf(ty, sizeof(ty), " %s", ncc_etype_name(s->etype));
			}
			for (int32_t i = 0; i < inst->noperands && !ty[0]; i++) {
				const ncc_shape_t *os = &inst->operands[i]->shape;
				for (int32_t k = 0; k < ncc_lower_shape_leaves(os) && !ty[0]; k++) {
					const ncc_shape_t *s = ncc_lower_shape_leaf(os, k);
					if (s && ncc_lower_dtype(s->etype, &dt) != NCC_OK)
						snprintf(ty, sizeof(ty), " %s", ncc_etype_name(s->etype));
				}
			}
		}
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "%s%s", reason, ty);
	}
	ncc_lval_t *v = ncc_lower_val(ctx, inst);
	int32_t keep_bind[1] = { v->bind_out ? v->bind_out[0] : -1 };
	const ncc_inst_t *keep_tr = v->bind_tr;
	int32_t *saved = NULL;
	int32_t nl = ncc_lower_shape_leaves(&inst->shape);
	if (v->bind_out && v->nleaves == nl) {
		saved = malloc((size_t)(nl > 0 ? nl : 1) * sizeof(int32_t));
		if (!saved)
			return NCC_ERR_NOMEM;
		memcpy(saved, v->bind_out, (size_t)nl * sizeof(int32_t));
	}
	int32_t pend = v->pending;
	bool pinned = v->pinned;
	ncc_status_t st = lval_init(v, nl);
	if (st != NCC_OK) {
		free(saved);
		return ncc_lower_fail(ctx, inst, st, "out of memory");
	}
	if (saved)
		memcpy(v->bind_out, saved, (size_t)nl * sizeof(int32_t));
	else if (nl == 1)
		v->bind_out[0] = keep_bind[0];
	free(saved);
	v->bind_tr = keep_tr;
	v->pending = pend;
	v->pinned = pinned;
	ctx->cur = inst;
	ctx->ntemps = 0;
	if (inst->op == NCC_OP_FUSION)
		st = ncc_lower_fusion(ctx, inst); /* lower_fusion.c (passes) */
	else {
		ncc_lower_fn fn = family_of(inst);
		st = fn ? fn(ctx, inst) : ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "unsupported operation");
	}
	for (int32_t i = 0; i < ctx->ntemps; i++)
		ncc_plan_unref(&ctx->plan, ctx->temps[i]);
	ctx->ntemps = 0;
	if (st != NCC_OK)
		return st;
	for (int32_t k = 0; k < v->nleaves; k++)
		if (!v->set[k])
			return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
					      "internal: lowering left result leaf %d unset", k);
	/* operands whose last use this was are released */
	for (int32_t i = 0; i < inst->noperands; i++) {
		ncc_lval_t *ov = ncc_lower_val(ctx, inst->operands[i]);
		if (ov && --ov->pending <= 0 && !ov->pinned)
			lval_release(ctx, ov);
	}
	if (v->pending <= 0 && !v->pinned)
		lval_release(ctx, v); /* dead value (no users) */
	return NCC_OK;
}

/* ncc_lower_computation, its instructions lowered in the order `order` (a
 * permutation of c->insts that keeps operands before their users). */
static ncc_status_t lower_computation_in(ncc_lower_ctx_t *ctx, const ncc_comp_t *c,
					 ncc_inst_t *const *order, const ncc_view_t *param_views,
					 int32_t nparam_views)
{
	const ncc_inst_t *saved_cur = ctx->cur;
	for (int32_t i = 0; i < c->ninsts; i++) {
		ncc_lval_t *v = ncc_lower_val(ctx, c->insts[i]);
		if (!v)
			return NCC_ERR_INTERNAL;
		v->pending = 0;
		v->pinned = false;
	}
	for (int32_t i = 0; i < c->ninsts; i++)
		for (int32_t j = 0; j < c->insts[i]->noperands; j++) {
			ncc_lval_t *ov = ncc_lower_val(ctx, c->insts[i]->operands[j]);
			if (ov)
				ov->pending++;
		}
	if (c->root)
		ncc_lower_val(ctx, c->root)->pinned = true;
	int32_t pv = 0;
	for (int32_t i = 0; i < c->ninsts; i++) {
		const ncc_inst_t *inst = order[i];
		if (inst->op == NCC_OP_PARAMETER) {
			ncc_lval_t *v = ncc_lower_val(ctx, inst);
			int32_t nl = ncc_lower_shape_leaves(&inst->shape);
			int32_t pend = v->pending;
			bool pinned = v->pinned;
			int32_t *bind = NULL;
			if (lval_init(v, nl) != NCC_OK)
				return NCC_ERR_NOMEM;
			(void)bind;
			v->pending = pend;
			v->pinned = pinned;
			/* parameter k's leaves are at the position of k in the flattened params */
			int32_t first = 0;
			for (int64_t p = 0; p < inst->parameter_number && p < c->nparams; p++)
				first += c->params[p] ? ncc_lower_shape_leaves(&c->params[p]->shape) : 0;
			(void)pv;
			for (int32_t k = 0; k < nl; k++) {
				if (first + k >= nparam_views)
					return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
							      "internal: parameter leaf missing");
				ctx->cur = inst;
				ncc_status_t st = ncc_lower_set_view(ctx, inst, k, &param_views[first + k]);
				if (st != NCC_OK)
					return st;
			}
			if (v->pending <= 0 && !v->pinned)
				lval_release(ctx, v);
			continue;
		}
		ncc_status_t st = lower_inst(ctx, inst);
		if (st != NCC_OK)
			return st;
	}
	ctx->cur = saved_cur;
	return NCC_OK;
}

ncc_status_t ncc_lower_computation(ncc_lower_ctx_t *ctx, const ncc_comp_t *c,
				   const ncc_view_t *param_views, int32_t nparam_views)
{
	return lower_computation_in(ctx, c, c->insts, param_views, nparam_views);
}

void ncc_lower_release_root(ncc_lower_ctx_t *ctx, const ncc_comp_t *c)
{
	ncc_lval_t *v = ncc_lower_val(ctx, c->root);
	if (v) {
		v->pinned = false;
		lval_release(ctx, v);
	}
}

static bool module_has_control(const ncc_module_t *m)
{
	for (int32_t i = 0; i < m->ncomps; i++)
		for (int32_t j = 0; j < m->comps[i]->ninsts; j++) {
			ncc_opcode_t op = m->comps[i]->insts[j]->op;
			if (op == NCC_OP_WHILE || op == NCC_OP_CONDITIONAL)
				return true;
		}
	return false;
}

/* Whether entry-root leaf o (instruction leaf) can be computed in its output tensor. */
static bool output_bindable(const ncc_lower_ctx_t *ctx, const ncc_inst_t *leaf, int32_t o)
{
	return ncc_lower_shape_leaves(&leaf->shape) == 1 && leaf->shape.etype != NCC_TUPLE &&
	       leaf->op != NCC_OP_PARAMETER && leaf->op != NCC_OP_CONSTANT && ctx->out_alias[o] < 0 &&
	       ctx->out_tensor[o] != NCC_NO_TENSOR;
}

/* Marks entry-root leaves that can be computed directly in their output tensor;
 * then, for a leaf that is a transpose of a convolution not bound itself, the
 * convolution, through the transpose: it writes its result in the permuted
 * order, so the output needs no transposing copy and its readers see the
 * output's row-major order (PyTorch/XLA returns each weight gradient as a
 * transpose of the convolution that computes it, and its SGD update reads the
 * transpose: 17 of ResNet-18's 125 ms step went to those copies and to
 * element-wise updates walking a transposed gradient). A convolution's
 * lowering takes any output strides. */
static void bind_leaf(ncc_lower_ctx_t *ctx, const ncc_inst_t *o, int32_t k, int pass)
{
	if (!output_bindable(ctx, o, k))
		return;
	ncc_lval_t *v = ncc_lower_val(ctx, o);
	const ncc_inst_t *x = o->noperands == 1 ? o->operands[0] : NULL;
	if (pass == 0 && v->bind_out[0] < 0) {
		v->bind_out[0] = k;
	} else if (pass == 1 && o->op == NCC_OP_TRANSPOSE && v->bind_out[0] == k && x &&
		   x->op == NCC_OP_CONVOLUTION && output_bindable(ctx, x, k) &&
		   ncc_lower_val(ctx, x)->bind_out[0] < 0) {
		ncc_lval_t *xv = ncc_lower_val(ctx, x);
		xv->bind_out[0] = k;
		xv->bind_tr = o;
	}
}

/* Ops whose value is never a view of an operand's memory (their own result). */
static bool fresh_value(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_FUSION: case NCC_OP_CONVOLUTION: case NCC_OP_DOT: case NCC_OP_REDUCE:
	case NCC_OP_REDUCE_WINDOW: case NCC_OP_SELECT_AND_SCATTER: case NCC_OP_BATCH_NORM_TRAINING:
	case NCC_OP_BATCH_NORM_GRAD: case NCC_OP_BATCH_NORM_INFERENCE: case NCC_OP_CONCATENATE:
	case NCC_OP_PAD:
		return true;
	default:
		/* elementwise ops but the value aliases (same-type convert and copy) */
		return ncc_opcode_is_elementwise(op) && op != NCC_OP_CONVERT && op != NCC_OP_COPY &&
		       op != NCC_OP_BITCAST_CONVERT;
	}
}

/* Whether fusion v reads operand j only element by element at its output's
 * index (never broadcast, reshaped or transposed inside the fused computation). */
static bool fusion_reads_in_step(const ncc_inst_t *v, int32_t j)
{
	const ncc_comp_t *fc = v->calls;
	if (!fc || !fc->root || fc->root->op == NCC_OP_REDUCE || j >= fc->nparams || !fc->params[j])
		return false;
	const ncc_inst_t *pj = fc->params[j];
	for (int32_t i = 0; i < fc->ninsts; i++) {
		const ncc_inst_t *u = fc->insts[i];
		for (int32_t k = 0; k < u->noperands; k++)
			if (u->operands[k] == pj && !ncc_opcode_is_elementwise(u->op))
				return false;
	}
	return ncc_shape_equal(&pj->shape, &v->shape, false);
}

/* Whether aliased output k (the update of parameter p, e.g. an SGD step) can
 * be computed in place: v, its value, a loop fusion reading p only element by
 * element at its own index, and every other read of p's memory (through any
 * view of it) lowered before v. The runtime may bind the output to p's memory,
 * so computing v there writes p: each element is read before it is written
 * (one FUSED instruction), the readers before come first in program order, and
 * the engines order against them (same_memory_region). Otherwise the output
 * is copied at the end, 8 ms of ResNet-18's step (45 MB of weights). */
static bool update_in_place(const ncc_lower_ctx_t *ctx, const ncc_comp_t *e, const ncc_inst_t *v,
			    int32_t k, int32_t *out_after)
{
	int32_t a = ctx->out_alias[k];
	if (a < 0 || a >= e->nparams || !e->params[a] || ctx->out_tensor[k] == NCC_NO_TENSOR ||
	    v->op != NCC_OP_FUSION || ncc_lower_shape_leaves(&v->shape) != 1 ||
	    !ncc_shape_equal(&v->shape, &e->params[a]->shape, false))
		return false;
	bool *view = calloc((size_t)ctx->nvals + 1, sizeof(bool)); /* by id: may alias p's memory */
	if (!view)
		return false;
	bool ok = true, seen = false;
	int32_t after = -1; /* the last of v's operands and of the other reads of p */
	for (int32_t i = 0; i < e->ninsts && ok; i++) {
		const ncc_inst_t *u = e->insts[i];
		if (u->id >= ctx->nvals) {
			ok = false;
			break;
		}
		/* parameters are bound first whatever their place (lower_entry) */
		for (int32_t j = 0; j < v->noperands && !seen; j++)
			if (v->operands[j] == u && u->op != NCC_OP_PARAMETER)
				after = i;
		if (u == e->params[a]) {
			view[u->id] = true;
			continue;
		}
		bool reads = false;
		for (int32_t j = 0; j < u->noperands; j++) {
			const ncc_inst_t *x = u->operands[j];
			if (x->id >= ctx->nvals || !view[x->id])
				continue;
			reads = true;
			if (u == v)
				ok = ok && x == e->params[a] && fusion_reads_in_step(v, j);
		}
		if (u == v)
			seen = true;
		else if (reads && seen)
			ok = false; /* a read of p after v (the root tuple when p is returned) */
		else if (reads)
			after = i;
		if (u != v && reads && !fresh_value(u->op))
			view[u->id] = true;
	}
	free(view);
	*out_after = after;
	return ok && seen;
}

/*
 * A convolution whose one use is a transpose, and not an output: its scratch
 * is laid out in the transpose's row-major order and the convolution writes
 * it through the permuted view (a convolution's lowering takes any output
 * strides), so the transpose's readers walk it in order. PyTorch/XLA's SGD
 * step reads each weight gradient through such a transpose ([K0, K1, I, O]
 * as [O, I, K0, K1]); ResNet-18's three 512-channel updates each walked 9.4
 * MB of gradient 1 MB apart per element, 3.4-4.5 ms apiece.
 */
static void bind_transposed_scratch(ncc_lower_ctx_t *ctx, const ncc_comp_t *e)
{
	for (int32_t i = 0; i < e->ninsts; i++) {
		const ncc_inst_t *t = e->insts[i];
		const ncc_inst_t *x = t->op == NCC_OP_TRANSPOSE && t->noperands == 1 ? t->operands[0] : NULL;
		/* the root counts as a use (ncc_inst_use_count): a returned
		 * convolution is left to bind_leaf */
		if (!x || x->op != NCC_OP_CONVOLUTION || t->shape.rank != x->shape.rank ||
		    ncc_lower_shape_leaves(&x->shape) != 1 || x->shape.etype == NCC_TUPLE ||
		    ncc_inst_use_count(x) != 1)
			continue;
		ncc_lval_t *xv = ncc_lower_val(ctx, x);
		if (xv->bind_out[0] < 0 && !xv->bind_tr)
			xv->bind_tr = t;
	}
}

/* Binds the entry's outputs to their tensors; after[i] (entry instruction
 * i), for an update computed in place, is the position it may be lowered
 * right after (update_in_place), else -1. */
static void bind_outputs(ncc_lower_ctx_t *ctx, const ncc_inst_t *root, int32_t *after)
{
	const ncc_comp_t *e = ctx->m->entry;
	for (int32_t i = 0; i < e->ninsts; i++)
		after[i] = -1;
	if (root->op == NCC_OP_TUPLE && e->root == root) {
		int32_t k = 0;
		for (int32_t i = 0; i < root->noperands; i++) {
			const ncc_inst_t *o = root->operands[i];
			ncc_lval_t *v = ncc_lower_val(ctx, o);
			int32_t uses = 0, at = -1;
			for (int32_t j = 0; j < root->noperands; j++)
				uses += root->operands[j] == o;
			if (uses == 1 && v->bind_out[0] < 0 && update_in_place(ctx, e, o, k, &at)) {
				v->bind_out[0] = k;
				for (int32_t j = 0; j < e->ninsts; j++)
					if (e->insts[j] == o)
						after[j] = at;
			}
			k += ncc_lower_shape_leaves(&o->shape);
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		if (root->op != NCC_OP_TUPLE) {
			bind_leaf(ctx, root, 0, pass);
			continue;
		}
		int32_t k = 0;
		for (int32_t i = 0; i < root->noperands; i++) {
			bind_leaf(ctx, root->operands[i], k, pass);
			k += ncc_lower_shape_leaves(&root->operands[i]->shape);
		}
	}
	bind_transposed_scratch(ctx, e);
}

/* Whether view v reads an input that an aliased output overwrites at the end. */
static bool reads_updated_input(const ncc_lower_ctx_t *ctx, const ncc_view_t *v)
{
	for (uint32_t o = 0; o < ctx->n_outputs; o++)
		if (ctx->out_alias[o] >= 0 &&
		    v->region == ISA_REGION_IO0 + (uint32_t)ctx->in_tensor[ctx->out_alias[o]])
			return true;
	return false;
}

/* Outputs not computed in their tensors are copied there after every other
 * instruction. An aliased output's tensor may be its input's memory (the runtime
 * binds the input when the caller gives no separate output tensor), so no copy may
 * read an input after an aliased output has overwritten it: the unaliased outputs
 * are copied first (their tensors are never an input's memory); then every aliased
 * output whose value is (a view of) an input that some aliased output updates, and
 * is not exactly the input it updates itself (that copy is an element-wise self
 * copy), is staged into scratch; only then are the aliased outputs written. Without
 * this, returning (w - g, w) with w updated in place by the first output, or swapping
 * two updated inputs, would read overwritten values. */
static ncc_status_t copy_outputs(ncc_lower_ctx_t *ctx, const ncc_comp_t *e)
{
	ncc_lval_t *rv = ncc_lower_val(ctx, e->root);
	ctx->cur = e->root;
	uint32_t n = ctx->n_outputs;
	ncc_view_t *src = malloc(((size_t)n + 1) * sizeof(*src));
	int32_t *staged = malloc(((size_t)n + 1) * sizeof(*staged));
	if (!src || !staged) {
		free(src);
		free(staged);
		return ncc_lower_fail(ctx, e->root, NCC_ERR_NOMEM, "out of memory");
	}
	ncc_status_t st = NCC_OK;
	for (uint32_t o = 0; o < n; o++) {
		src[o] = rv->views[o];
		staged[o] = -1;
	}
	for (int pass = 0; pass < 3 && st == NCC_OK; pass++) {
		for (uint32_t o = 0; o < n && st == NCC_OK; o++) {
			if (ctx->out_tensor[o] == NCC_NO_TENSOR || (pass == 0) != (ctx->out_alias[o] < 0))
				continue;
			const ncc_shape_t *s = ncc_lower_shape_leaf(&e->root->shape, (int32_t)o);
			ncc_view_t dst = ncc_view_dense(ISA_REGION_IO0 + ctx->out_tensor[o], 0, src[o].dtype,
							s->rank, s->dims);
			if (pass == 1) {
				ncc_view_t self = ncc_view_dense(ISA_REGION_IO0 +
								 (uint32_t)ctx->in_tensor[ctx->out_alias[o]],
								 0, src[o].dtype, s->rank, s->dims);
				bool is_self = src[o].region == self.region && src[o].offset == 0 &&
					       ncc_view_is_dense(&src[o]);
				if (is_self || !reads_updated_input(ctx, &src[o]))
					continue;
				int64_t cnt = ncc_shape_elements(s);
				st = ncc_plan_alloc(&ctx->plan, (uint64_t)cnt * isa_dtype_size(src[o].dtype),
						    &staged[o]);
				if (st != NCC_OK) {
					st = ncc_lower_fail(ctx, e->root, st, "cannot allocate scratch for output %u", o);
					break;
				}
				ncc_view_t tmp = ncc_view_dense(ISA_REGION_SCRATCH, ctx->plan.blocks[staged[o]].offset,
								src[o].dtype, s->rank, s->dims);
				st = ncc_lower_copy(ctx, e->root, &tmp, &src[o]);
				src[o] = tmp;
				continue;
			}
			if (src[o].region == dst.region && src[o].offset == 0 && ncc_view_is_dense(&src[o]))
				continue;
			/* Even an aliased output that is its input unchanged is copied: the caller
			 * may bind a separate output tensor (then the copy is the result) or none
			 * (then the runtime binds the input, and the copy is an element-wise self
			 * copy). */
			st = ncc_lower_copy(ctx, e->root, &dst, &src[o]);
		}
	}
	for (uint32_t o = 0; o < n; o++)
		if (staged[o] >= 0)
			ncc_plan_unref(&ctx->plan, staged[o]);
	free(src);
	free(staged);
	return st;
}

static ncc_status_t lower_entry(ncc_lower_ctx_t *ctx)
{
	const ncc_comp_t *e = ctx->m->entry;
	ncc_status_t st = ncc_emit_io(ctx);
	if (st != NCC_OK)
		return st;
	/* bind_out must survive lval_init of the root operands: allocate records now */
	for (int32_t i = 0; i < e->ninsts; i++) {
		ncc_lval_t *v = ncc_lower_val(ctx, e->insts[i]);
		if (lval_init(v, ncc_lower_shape_leaves(&e->insts[i]->shape)) != NCC_OK)
			return NCC_ERR_NOMEM;
		v->live = false;
	}
	/* updates computed in place go right after their last operand and the
	 * last other read of their input (update_in_place), not where the HLO
	 * lists them (PyTorch/XLA puts an optimizer's updates after the whole
	 * backward pass): the gradient is then still in the cache (ResNet-18's
	 * 512-channel kernels, 9.4 MB each: 2.0-2.2 -> 1.8-2.0 ms an update) */
	size_t n = (size_t)(e->ninsts > 0 ? e->ninsts : 1);
	int32_t *after = malloc(n * sizeof(int32_t)), *head = malloc(n * sizeof(int32_t));
	int32_t *next = malloc(n * sizeof(int32_t));
	ncc_inst_t **order = malloc(n * sizeof(*order));
	if (!after || !head || !next || !order) {
		free(after);
		free(head);
		free(next);
		free(order);
		return NCC_ERR_NOMEM;
	}
	bind_outputs(ctx, e->root, after);
	/* the updates to go after each instruction, in their order: a list per
	 * instruction through head and next */
	for (int32_t i = 0; i < e->ninsts; i++)
		head[i] = next[i] = -1;
	for (int32_t j = e->ninsts - 1; j >= 0; j--)
		if (after[j] >= 0) {
			next[j] = head[after[j]];
			head[after[j]] = j;
		}
	/* the parameters first: binding one emits nothing, and an update may
	 * read one PyTorch/XLA lists late (the learning rate) */
	int32_t no = 0;
	for (int32_t i = 0; i < e->ninsts; i++)
		if (e->insts[i]->op == NCC_OP_PARAMETER)
			order[no++] = e->insts[i];
	for (int32_t i = 0; i < e->ninsts; i++) {
		if (after[i] < 0 && e->insts[i]->op != NCC_OP_PARAMETER)
			order[no++] = e->insts[i];
		for (int32_t j = head[i]; j >= 0; j = next[j])
			order[no++] = e->insts[j];
	}
	free(after);
	free(head);
	free(next);
	/* entry parameters are the input tensors, in parameter order */
	int32_t nviews = 0;
	for (int32_t p = 0; p < e->nparams; p++)
		nviews += e->params[p] ? ncc_lower_shape_leaves(&e->params[p]->shape) : 0;
	ncc_view_t *pv = calloc((size_t)(nviews > 0 ? nviews : 1), sizeof(ncc_view_t));
	if (!pv) {
		free(order);
		return NCC_ERR_NOMEM;
	}
	int32_t k = 0;
	for (int32_t p = 0; p < e->nparams; p++) {
		const ncc_inst_t *pi = e->params[p];
		if (!pi)
			continue;
		isa_dtype_t dt;
		if (pi->shape.etype == NCC_TUPLE || ncc_lower_dtype(pi->shape.etype, &dt) != NCC_OK) {
			free(pv);
			free(order);
			ctx->cur = NULL;
			return ncc_lower_fail(ctx, pi, NCC_ERR_UNSUPPORTED,
					      "unsupported entry parameter type");
		}
		/* a zero-element parameter has no tensor: an empty view, which no
		 * instruction reads (no elements, no access) */
		uint32_t region = ctx->in_tensor[p] >= 0 ? ISA_REGION_IO0 + (uint32_t)ctx->in_tensor[p]
							  : ISA_REGION_CONST;
		pv[k] = ncc_view_dense(region, 0, dt, pi->shape.rank, pi->shape.dims);
		k++;
	}
	st = lower_computation_in(ctx, e, order, pv, nviews);
	free(pv);
	free(order);
	if (st != NCC_OK)
		return st;
	st = copy_outputs(ctx, e);
	if (st != NCC_OK)
		return st;
	ncc_lower_release_root(ctx, e);
	return NCC_OK;
}

ncc_status_t ncc_lower_module(const ncc_module_t *m, const ncc_compile_options_t *opts,
			      void **out_neff, size_t *out_size, ncc_error_t *err)
{
	if (out_neff)
		*out_neff = NULL;
	if (out_size)
		*out_size = 0;
	if (err) {
		err->status = NCC_OK;
		err->msg[0] = 0;
	}
	if (!m || !m->entry || !out_neff || !out_size)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_lower_module: invalid arguments");
	ncc_lower_ctx_t *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	if (opts)
		ctx->opts = *opts;
	else
		ncc_compile_options_init(&ctx->opts);
	if (ctx->opts.n_cores == 0)
		ctx->opts.n_cores = 1;
	ctx->m = m;
	ctx->err = err;
	ncc_status_t st = NCC_OK;
	if (ctx->opts.n_cores > NEFF_MAX_CORES) {
		st = ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "n_cores %u exceeds %d",
				   ctx->opts.n_cores, NEFF_MAX_CORES);
		goto out;
	}
	int me = ctx->opts.multi_engine;
	ctx->multi = (me < 0 ? ctx->opts.opt_level > 0 : me > 0) && !module_has_control(m);
	ctx->nvals = m->next_id;
	ctx->vals = calloc(ctx->nvals ? ctx->nvals : 1, sizeof(ncc_lval_t));
	ctx->debug_ids = malloc((ctx->nvals ? ctx->nvals : 1) * sizeof(uint32_t));
	char name[128];
	snprintf(name, sizeof(name), "%s", ctx->opts.model_name ? ctx->opts.model_name :
		 m->name ? m->name : "model");
	ctx->b = neff_builder_create(name, ctx->opts.n_cores);
	if (!ctx->vals || !ctx->debug_ids || !ctx->b) {
		st = ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < ctx->nvals; i++)
		ctx->debug_ids[i] = ISA_DEBUG_NONE;
	st = lower_entry(ctx);
	if (st != NCC_OK) {
		if (err && err->status == NCC_OK)
			ncc_lower_fail(ctx, ctx->cur, st, "lowering failed (%s)", ncc_status_name(st));
		goto out;
	}
	st = ncc_emit_finish(ctx, out_neff, out_size);
	if (st == NCC_OK && ctx->opts.dump_dir &&
	    (st = ncc_plan_dump(&ctx->plan, ctx->opts.dump_dir, err)) != NCC_OK) {
		free(*out_neff);
		*out_neff = NULL;
		*out_size = 0;
	}
out:
	if (ctx->vals)
		for (uint32_t i = 0; i < ctx->nvals; i++)
			lval_clear(&ctx->vals[i]);
	free(ctx->vals);
	free(ctx->debug_ids);
	free(ctx->in_tensor);
	free(ctx->out_tensor);
	free(ctx->out_alias);
	free(ctx->acc);
	free(ctx->consts);
	for (int e = 0; e < ISA_ENGINE_COUNT; e++)
		free(ctx->kv[e]);
	ncc_plan_free_all(&ctx->plan);
	neff_builder_destroy(ctx->b);
	free(ctx);
	return st;
}

/* ---------------------------------------------------------------- control flow
 *
 * while and conditional as JUMPs on a pred/index scalar in the single control
 * stream, and call by inlining: they lower their called computations through
 * ncc_lower_computation() above, so they live with the walk. */

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

/* A NOP after a loop or conditional: one at the very end of the stream jumps to one
 * past the end, and this gives the jump a valid index to land on. */
static ncc_status_t landing_nop(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &nop, NULL);
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
	if (st == NCC_OK)
		st = landing_nop(ctx, inst);
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
	if (st == NCC_OK)
		st = landing_nop(ctx, inst);
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
