/* Algebraic simplification: local rewrites that remove or shorten work without changing values. */
#include <string.h>

#include "passes.h"

/* Same element type and dims (layouts are not values: ncc computes in
 * logical row-major order). */
static bool same_dims(const ncc_shape_t *a, const ncc_shape_t *b)
{
	if (!ncc_shape_is_array(a) || !ncc_shape_is_array(b) || a->etype != b->etype ||
	    a->rank != b->rank)
		return false;
	for (int32_t k = 0; k < a->rank; k++)
		if (a->dims[k] != b->dims[k] || a->dynamic[k] || b->dynamic[k])
			return false;
	return true;
}

/* x is a splat (constant or broadcast of one) equal to v. -0.0 counts as 0:
 * x + -0 and x - 0 are exact, x + +0 differs from x only in the sign of a zero. */
static bool splat_is(const ncc_inst_t *x, double v)
{
	const ncc_literal_t *l;
	if (!ncc_pass_splat(x, &l))
		return false;
	if (ncc_etype_is_float(l->etype))
		return ncc_literal_get_f64(l, 0) == v;
	if (ncc_etype_is_integral(l->etype) || l->etype == NCC_PRED)
		return ncc_literal_get_i64(l, 0) == (int64_t)v;
	return false;
}

#define new_like ncc_pass_new_like

static ncc_status_t set_dims(ncc_module_t *m, ncc_ilist_t *l, int32_t n, const int64_t *v)
{
	l->present = true;
	l->n = n;
	l->v = NULL;
	if (n) {
		l->v = ncc_alloc(m, sizeof(int64_t) * (size_t)n);
		if (!l->v)
			return NCC_ERR_NOMEM;
		memcpy(l->v, v, sizeof(int64_t) * (size_t)n);
	}
	return NCC_OK;
}

/* broadcast(s) of a scalar s into like's shape (dimensions={}). */
static ncc_status_t bcast_scalar(const ncc_inst_t *like, ncc_inst_t *s, ncc_inst_t **out)
{
	ncc_inst_t *ops[1] = { s };
	ncc_status_t st = new_like(like, NCC_OP_BROADCAST, &like->shape, ops, 1, out);
	if (st)
		return st;
	return set_dims(like->parent->module, &(*out)->dimensions, 0, NULL);
}

/* A splat constant of several elements as broadcast(scalar constant): the
 * constant shrinks to one element and the broadcast costs no instruction. */
static ncc_status_t splat_const(ncc_inst_t *in, ncc_inst_t **out)
{
	const ncc_literal_t *l = &in->literal;
	ncc_shape_t ss = ncc_shape_scalar(in->shape.etype);
	ncc_inst_t *s;
	ncc_status_t st = new_like(in, NCC_OP_CONSTANT, &ss, NULL, 0, &s);
	if (st)
		return st;
	st = ncc_literal_init(in->parent->module, &s->literal, l->etype, 1);
	if (st)
		return st;
	memcpy(s->literal.data, l->data, ncc_etype_storage_bytes(l->etype));
	return bcast_scalar(in, s, out);
}

static bool identity_perm(const ncc_ilist_t *p)
{
	for (int32_t k = 0; k < p->n; k++)
		if (p->v[k] != k)
			return false;
	return true;
}

/* Returns in *out the instruction that replaces in (an existing one or a new
 * one placed before it), or NULL when no rule applies. */
static ncc_status_t simplify_one(ncc_inst_t *in, ncc_inst_t **out)
{
	*out = NULL;
	ncc_module_t *m = in->parent->module;
	ncc_inst_t *a = in->noperands > 0 ? in->operands[0] : NULL;
	ncc_inst_t *b = in->noperands > 1 ? in->operands[1] : NULL;
	if (in->ncontrol_preds)
		return NCC_OK;
	if (in->op == NCC_OP_GET_TUPLE_ELEMENT) {
		/* get-tuple-element(tuple(...), i) is the i-th operand */
		if (a && a->op == NCC_OP_TUPLE && in->tuple_index >= 0 &&
		    in->tuple_index < a->noperands &&
		    ncc_shape_equal(&a->operands[in->tuple_index]->shape, &in->shape, false))
			*out = a->operands[in->tuple_index];
		return NCC_OK;
	}
	if (!ncc_shape_is_array(&in->shape))
		return NCC_OK;
	bool is_int = ncc_etype_is_integral(in->shape.etype);
	switch (in->op) {
	case NCC_OP_ADD:
		if (in->shape.etype == NCC_PRED)
			break;
		if (splat_is(b, 0) && same_dims(&a->shape, &in->shape))
			*out = a;
		else if (splat_is(a, 0) && same_dims(&b->shape, &in->shape))
			*out = b;
		break;
	case NCC_OP_SUBTRACT:
		if (in->shape.etype != NCC_PRED && splat_is(b, 0))
			*out = a;
		break;
	case NCC_OP_MULTIPLY:
		if (in->shape.etype == NCC_PRED)
			break;
		if (splat_is(b, 1))
			*out = a;
		else if (splat_is(a, 1))
			*out = b;
		/* x * 0 = 0 only for integers: floats have NaN * 0 and Inf * 0 */
		else if (is_int && splat_is(b, 0))
			*out = b;
		else if (is_int && splat_is(a, 0))
			*out = a;
		break;
	case NCC_OP_DIVIDE:
		if (in->shape.etype != NCC_PRED && splat_is(b, 1))
			*out = a;
		break;
	case NCC_OP_AND:
		if (in->shape.etype == NCC_PRED && splat_is(b, 1))
			*out = a;
		else if (in->shape.etype == NCC_PRED && splat_is(a, 1))
			*out = b;
		break;
	case NCC_OP_OR: case NCC_OP_XOR:
		if (splat_is(b, 0))
			*out = a;
		else if (splat_is(a, 0))
			*out = b;
		break;
	case NCC_OP_NEGATE: case NCC_OP_NOT:
		if (a->op == in->op && a->noperands == 1)
			*out = a->operands[0];
		break;
	case NCC_OP_CONVERT:
	case NCC_OP_BITCAST_CONVERT:
		if (a->shape.etype == in->shape.etype)
			*out = a;
		break;
	case NCC_OP_COPY:
		break; /* kept: the back end may rely on it to break aliasing */
	case NCC_OP_RESHAPE:
		if (same_dims(&a->shape, &in->shape)) {
			*out = a;
		} else if (a->op == NCC_OP_RESHAPE) {
			if (same_dims(&a->operands[0]->shape, &in->shape)) {
				*out = a->operands[0];
			} else {
				ncc_inst_t *ops[1] = { a->operands[0] };
				return new_like(in, NCC_OP_RESHAPE, &in->shape, ops, 1, out);
			}
		} else if (a->op == NCC_OP_BROADCAST && a->operands[0]->shape.rank == 0) {
			return bcast_scalar(in, a->operands[0], out);
		}
		break;
	case NCC_OP_TRANSPOSE:
		if (!in->dimensions.present || in->dimensions.n != in->shape.rank)
			break;
		if (identity_perm(&in->dimensions) && same_dims(&a->shape, &in->shape)) {
			*out = a;
		} else if (a->op == NCC_OP_TRANSPOSE && a->dimensions.n == in->dimensions.n) {
			/* out dim k = a dim p2[k] = x dim p1[p2[k]] */
			int64_t p[NCC_MAX_RANK];
			for (int32_t k = 0; k < in->dimensions.n; k++)
				p[k] = a->dimensions.v[in->dimensions.v[k]];
			ncc_inst_t *x = a->operands[0];
			ncc_ilist_t tmp = { true, in->dimensions.n, p };
			if (identity_perm(&tmp) && same_dims(&x->shape, &in->shape)) {
				*out = x;
			} else {
				ncc_inst_t *ops[1] = { x };
				ncc_status_t st = new_like(in, NCC_OP_TRANSPOSE, &in->shape, ops, 1, out);
				if (st)
					return st;
				return set_dims(m, &(*out)->dimensions, tmp.n, p);
			}
		} else if (a->op == NCC_OP_BROADCAST && a->operands[0]->shape.rank == 0) {
			return bcast_scalar(in, a->operands[0], out);
		}
		break;
	case NCC_OP_BROADCAST:
		if (!in->dimensions.present)
			break;
		if (same_dims(&a->shape, &in->shape) && identity_perm(&in->dimensions)) {
			*out = a;
		} else if (a->op == NCC_OP_BROADCAST && a->dimensions.present &&
			   a->dimensions.n == a->operands[0]->shape.rank) {
			/* x dim k -> a dim d1[k] -> out dim d2[d1[k]] */
			ncc_inst_t *x = a->operands[0];
			int64_t d[NCC_MAX_RANK];
			for (int32_t k = 0; k < a->dimensions.n; k++)
				d[k] = in->dimensions.v[a->dimensions.v[k]];
			ncc_inst_t *ops[1] = { x };
			ncc_status_t st = new_like(in, NCC_OP_BROADCAST, &in->shape, ops, 1, out);
			if (st)
				return st;
			return set_dims(m, &(*out)->dimensions, a->dimensions.n, d);
		}
		break;
	case NCC_OP_SELECT: {
		const ncc_literal_t *l;
		ncc_inst_t *c = in->operands[2];
		if (b == c)
			*out = b;
		else if (ncc_pass_splat(a, &l) && l->etype == NCC_PRED &&
			 same_dims(&b->shape, &in->shape) && same_dims(&c->shape, &in->shape))
			*out = ncc_literal_get_i64(l, 0) ? b : c;
		/* select(p, true, false) is p (torch_xla's all/any reducers end so) */
		else if (in->shape.etype == NCC_PRED && splat_is(b, 1) && splat_is(c, 0))
			*out = a;
		break;
	}
	case NCC_OP_COMPARE:
		/* for pred x: x != false and x == true are x (torch_xla's all/any
		 * reducers compare their pred parameters so; then the reducer is a
		 * plain and/or the back end recognises) */
		if (a->shape.etype != NCC_PRED || b->shape.etype != NCC_PRED)
			break;
		if ((in->cmp_dir == NCC_CMP_NE && splat_is(b, 0)) || (in->cmp_dir == NCC_CMP_EQ && splat_is(b, 1)))
			*out = a;
		else if ((in->cmp_dir == NCC_CMP_NE && splat_is(a, 0)) ||
			 (in->cmp_dir == NCC_CMP_EQ && splat_is(a, 1)))
			*out = b;
		break;
	case NCC_OP_SLICE: {
		if (!in->slice || in->slice->n != a->shape.rank)
			break;
		bool full = true;
		for (int32_t k = 0; k < in->slice->n && full; k++)
			full = in->slice->dims[k].start == 0 && in->slice->dims[k].stride == 1 &&
			       in->slice->dims[k].limit == a->shape.dims[k];
		if (full && same_dims(&a->shape, &in->shape))
			*out = a;
		break;
	}
	case NCC_OP_PAD: {
		if (!in->padding)
			break;
		bool none = true;
		for (int32_t k = 0; k < in->padding->n && none; k++)
			none = !in->padding->dims[k].lo && !in->padding->dims[k].hi &&
			       !in->padding->dims[k].interior;
		if (none && same_dims(&a->shape, &in->shape))
			*out = a;
		break;
	}
	case NCC_OP_CONCATENATE:
		if (in->noperands == 1 && same_dims(&a->shape, &in->shape))
			*out = a;
		break;
	case NCC_OP_CONSTANT:
		if (in->shape.rank > 0 && ncc_shape_elements(&in->shape) >= 2 &&
		    ncc_pass_splat(in, NULL) && !ncc_etype_is_complex(in->shape.etype))
			return splat_const(in, out);
		break;
	default:
		break;
	}
	if (*out && !same_dims(&(*out)->shape, &in->shape))
		*out = NULL; /* a rule must never change the value's type */
	return NCC_OK;
}

static ncc_status_t simplify_inst(ncc_inst_t *in, ncc_inst_t **out)
{
	*out = NULL;
	if (in->op == NCC_OP_PARAMETER)
		return NCC_OK;
	return simplify_one(in, out);
}

ncc_status_t ncc_pass_simplify(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	return ncc_pass_rewrite_each(m, "simplify", simplify_inst, out_changed, err);
}
