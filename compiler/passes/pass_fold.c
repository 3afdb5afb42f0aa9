/* Constant folding: evaluates constant subgraphs (elementwise, convert, reshape, transpose, slice, concatenate) at compile time, through the interpreter. */
#include <string.h>

#include "interp/interp.h"
#include "passes.h"

/* Results bigger than this stay computed at run time: a folded constant
 * costs NEFF size and load time. */
#define FOLD_MAX_ELEMENTS 65536

/* Evaluates an instruction on constant operands through the interpreter (as
 * XLA folds with its evaluator), so that a folded constant is exactly what the
 * interpreter (the oracle of every compiler test) computes for the unfolded
 * graph: one set of semantics for signed zeros, NaN, integer corner cases,
 * conversions and data movement. shape: the result's (in's own, or a scalar for
 * a splat). */
static bool eval_inst(const ncc_inst_t *in, const ncc_literal_t *const *ops,
		      const ncc_shape_t *shape, ncc_literal_t *out)
{
	ncc_value_t *vals[8] = { NULL };
	ncc_value_t *res = NULL;
	bool ok = in->noperands <= 8;
	for (int32_t i = 0; ok && i < in->noperands; i++) {
		/* a splat view stands for its element 0 alone */
		ncc_shape_t os = ops[i]->count == 1 && in->operands[i]->shape.rank
					 ? ncc_shape_scalar(ops[i]->etype)
					 : in->operands[i]->shape;
		ok = ncc_value_from_literal(&os, ops[i], &vals[i]) == NCC_OK;
	}
	ok = ok && ncc_interp_eval_inst(in, (const ncc_value_t *const *)vals, shape, &res,
					NULL) == NCC_OK;
	ok = ok && res->shape.etype == out->etype && res->nbytes == out->nbytes;
	if (ok && out->nbytes)
		memcpy(out->data, res->data, out->nbytes);
	ncc_value_free(res);
	for (int32_t i = 0; i < in->noperands && i < 8; i++)
		ncc_value_free(vals[i]);
	return ok;
}

/* The data movement folded besides the elementwise ops (the interpreter checks
 * their attributes). */
static bool move_op(const ncc_inst_t *in)
{
	switch (in->op) {
	case NCC_OP_RESHAPE:
	case NCC_OP_TRANSPOSE:
	case NCC_OP_SLICE:
	case NCC_OP_CONCATENATE:
		return true;
	default:
		return false;
	}
}

static bool const_ok(const ncc_inst_t *x)
{
	return x->op == NCC_OP_CONSTANT && ncc_shape_is_array(&x->shape) && x->literal.present &&
	       !x->literal.elided && ncc_interp_etype_supported(x->shape.etype) &&
	       x->literal.count == ncc_shape_elements(&x->shape) &&
	       (x->literal.data || !x->literal.count);
}

/* A constant of in's shape replacing in, or NULL. */
static ncc_status_t fold_one(ncc_inst_t *in, ncc_inst_t **out)
{
	*out = NULL;
	if (!ncc_shape_is_array(&in->shape) || !ncc_interp_etype_supported(in->shape.etype) || in->ncontrol_preds ||
	    in->noperands == 0)
		return NCC_OK;
	bool ew = ncc_interp_folds_elementwise(in->op);
	if (!ew && !move_op(in))
		return NCC_OK;
	int64_t n = ncc_shape_elements(&in->shape);
	if (n < 0 || n > FOLD_MAX_ELEMENTS)
		return NCC_OK;
	ncc_module_t *m = in->parent->module;
	const ncc_literal_t *ops[8];
	ncc_literal_t views[8];
	if (in->noperands > 8)
		return NCC_OK;
	bool all_const = true, all_splat = ew;
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_inst_t *o = in->operands[i];
		all_const &= const_ok(o);
		const ncc_literal_t *l;
		if (ew && ncc_pass_splat(o, &l) && ncc_interp_etype_supported(l->etype)) {
			views[i] = *l;
			views[i].count = 1; /* element 0 stands for all */
		} else {
			all_splat = false;
		}
		ops[i] = &o->literal;
	}
	if (all_splat && !all_const) {
		/* op(broadcast(c1), broadcast(c2)) = broadcast(op(c1, c2)) */
		ncc_shape_t ss = ncc_shape_scalar(in->shape.etype);
		ncc_inst_t *c;
		ncc_status_t st = ncc_pass_new_like(in, NCC_OP_CONSTANT, &ss, NULL, 0, &c);
		if (st)
			return st;
		if ((st = ncc_literal_init(m, &c->literal, in->shape.etype, 1)))
			return st;
		const ncc_literal_t *vops[8];
		for (int32_t i = 0; i < in->noperands; i++)
			vops[i] = &views[i];
		if (!eval_inst(in, vops, &ss, &c->literal))
			return NCC_OK; /* c is dead; DCE drops it */
		if (in->shape.rank == 0) {
			*out = c;
			return NCC_OK;
		}
		ncc_inst_t *ops1[1] = { c }, *b;
		if ((st = ncc_pass_new_like(in, NCC_OP_BROADCAST, &in->shape, ops1, 1, &b)))
			return st;
		b->dimensions.present = true;
		*out = b;
		return NCC_OK;
	}
	if (!all_const)
		return NCC_OK;
	ncc_literal_t lit;
	ncc_status_t st = ncc_literal_init(m, &lit, in->shape.etype, n);
	if (st)
		return st;
	if (!eval_inst(in, ops, &in->shape, &lit))
		return NCC_OK;
	ncc_inst_t *c;
	if ((st = ncc_pass_new_like(in, NCC_OP_CONSTANT, &in->shape, NULL, 0, &c)))
		return st;
	c->literal = lit;
	*out = c;
	return NCC_OK;
}

/* Program order: a folded operand is a constant by the time its users are looked
 * at, so whole constant subgraphs fold in one sweep. */
ncc_status_t ncc_pass_fold(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	return ncc_pass_rewrite_each(m, "fold", fold_one, out_changed, err);
}
