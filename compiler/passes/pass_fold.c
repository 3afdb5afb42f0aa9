/* Constant folding: evaluates constant subgraphs (elementwise, convert, reshape, transpose, slice, concatenate) at compile time. */
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"
#include "passes.h"

/* Results bigger than this stay computed at run time: a folded constant
 * costs NEFF size and load time. */
#define FOLD_MAX_ELEMENTS 65536

/* Evaluates an elementwise instruction on constant operands through the
 * interpreter, so that a folded constant is exactly what the interpreter (the
 * oracle of every compiler test) computes for the unfolded graph: one set of
 * semantics for signed zeros, NaN, integer corner cases and conversions.
 * shape: the result's (in's own, or a scalar for a splat). */
static bool eval_elementwise(const ncc_inst_t *in, const ncc_literal_t *const *ops,
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

static void unflat(int64_t f, const ncc_shape_t *s, int64_t *idx)
{
	for (int32_t k = s->rank - 1; k >= 0; k--) {
		idx[k] = s->dims[k] ? f % s->dims[k] : 0;
		f = s->dims[k] ? f / s->dims[k] : 0;
	}
}

static int64_t flat(const int64_t *idx, const ncc_shape_t *s)
{
	int64_t f = 0;
	for (int32_t k = 0; k < s->rank; k++)
		f = f * s->dims[k] + idx[k];
	return f;
}

/* Data movement ops: out element j copies operand element src(j). */
static bool eval_move(const ncc_inst_t *in, const ncc_literal_t *const *ops, ncc_literal_t *out)
{
	size_t es = ncc_etype_storage_bytes(out->etype);
	const ncc_shape_t *os = &in->shape;
	int64_t idx[NCC_MAX_RANK], sidx[NCC_MAX_RANK];
	for (int64_t j = 0; j < out->count; j++) {
		const ncc_literal_t *src = ops[0];
		const ncc_shape_t *ss = &in->operands[0]->shape;
		int64_t f;
		unflat(j, os, idx);
		switch (in->op) {
		case NCC_OP_RESHAPE:
			f = j;
			break;
		case NCC_OP_TRANSPOSE:
			/* out dim k is operand dim perm[k] */
			for (int32_t k = 0; k < os->rank; k++)
				sidx[in->dimensions.v[k]] = idx[k];
			f = flat(sidx, ss);
			break;
		case NCC_OP_SLICE:
			for (int32_t k = 0; k < os->rank; k++)
				sidx[k] = in->slice->dims[k].start + idx[k] * in->slice->dims[k].stride;
			f = flat(sidx, ss);
			break;
		case NCC_OP_CONCATENATE: {
			int64_t d = in->dimensions.v[0], at = idx[d];
			int32_t i = 0;
			while (i + 1 < in->noperands && at >= in->operands[i]->shape.dims[d]) {
				at -= in->operands[i]->shape.dims[d];
				i++;
			}
			src = ops[i];
			ss = &in->operands[i]->shape;
			memcpy(sidx, idx, sizeof(int64_t) * (size_t)os->rank);
			sidx[d] = at;
			f = flat(sidx, ss);
			break;
		}
		default:
			return false;
		}
		if (f < 0 || f >= src->count)
			return false;
		memcpy(out->data + (size_t)j * es, src->data + (size_t)f * es, es);
	}
	return true;
}

static bool move_op(const ncc_inst_t *in)
{
	switch (in->op) {
	case NCC_OP_RESHAPE:
		return true;
	case NCC_OP_TRANSPOSE:
		return in->dimensions.present && in->dimensions.n == in->shape.rank;
	case NCC_OP_SLICE:
		return in->slice && in->slice->n == in->shape.rank;
	case NCC_OP_CONCATENATE:
		return in->dimensions.present && in->dimensions.n == 1 &&
		       in->dimensions.v[0] >= 0 && in->dimensions.v[0] < in->shape.rank;
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
	bool ew = ncc_pass_is_elementwise(in->op);
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
		if (!eval_elementwise(in, vops, &ss, &c->literal))
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
	if (!(ew ? eval_elementwise(in, ops, &in->shape, &lit) : eval_move(in, ops, &lit)))
		return NCC_OK;
	ncc_inst_t *c;
	if ((st = ncc_pass_new_like(in, NCC_OP_CONSTANT, &in->shape, NULL, 0, &c)))
		return st;
	c->literal = lit;
	*out = c;
	return NCC_OK;
}

ncc_status_t ncc_pass_fold(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	bool changed = false;
	if (out_changed)
		*out_changed = false;
	for (int32_t ci = 0; ci < m->ncomps; ci++) {
		ncc_comp_t *c = m->comps[ci];
		int32_t n = c->ninsts;
		ncc_inst_t **snap = malloc(sizeof(*snap) * (size_t)(n ? n : 1));
		if (!snap)
			return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "fold: out of memory");
		memcpy(snap, c->insts, sizeof(*snap) * (size_t)n);
		/* program order: a folded operand is a constant by the time its
		 * users are looked at, so whole constant subgraphs fold in one sweep */
		for (int32_t i = 0; i < n; i++) {
			ncc_inst_t *in = snap[i], *r;
			ncc_status_t st = fold_one(in, &r);
			if (st) {
				free(snap);
				return ncc_error_set(err, st, 0, 0, "fold: %s at '%s'",
						     ncc_status_name(st), in->name);
			}
			if (r) {
				ncc_inst_replace_uses(in, r);
				changed = true;
			}
		}
		free(snap);
	}
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
