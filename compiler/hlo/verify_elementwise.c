/* ncc verifier: elementwise operations (unary, binary, select, clamp, bitcast-convert). */
#include "verify_internal.h"

ncc_status_t vf_unary(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape;
	CHECK(vf_same_dims(a, &in->shape), "operand %s and result %s differ in dimensions", vf_sh(a),
	      vf_sh(&in->shape));
	ncc_etype_t t = a->etype, r = in->shape.etype;
	bool fl = ncc_etype_is_float(t), cx = ncc_etype_is_complex(t);
	switch (in->op) {
	case NCC_OP_CONVERT:
	case NCC_OP_STOCHASTIC_CONVERT:
		return NCC_OK;
	case NCC_OP_IS_FINITE:
		CHECK(fl, "operand must be floating point, is %s", ncc_etype_name(t));
		CHECK(r == NCC_PRED, "result must be pred, is %s", ncc_etype_name(r));
		return NCC_OK;
	case NCC_OP_REAL:
	case NCC_OP_IMAG:
	case NCC_OP_ABS:
		if (cx) {
			ncc_etype_t want = t == NCC_C64 ? NCC_F32 : NCC_F64;
			CHECK(r == want, "result of a %s operand must be %s, is %s", ncc_etype_name(t),
			      ncc_etype_name(want), ncc_etype_name(r));
			return NCC_OK;
		}
		break;
	default:
		break;
	}
	CHECK(r == t, "result type %s differs from operand type %s", ncc_etype_name(r),
	      ncc_etype_name(t));
	switch (in->op) {
	case NCC_OP_EXP: case NCC_OP_EXPM1: case NCC_OP_LOG: case NCC_OP_LOG1P: case NCC_OP_SQRT:
	case NCC_OP_RSQRT: case NCC_OP_CBRT: case NCC_OP_TANH: case NCC_OP_LOGISTIC: case NCC_OP_SIN:
	case NCC_OP_COS: case NCC_OP_TAN: case NCC_OP_ERF:
		CHECK(fl || cx, "operand must be floating point or complex, is %s", ncc_etype_name(t));
		break;
	case NCC_OP_FLOOR: case NCC_OP_CEIL: case NCC_OP_ROUND_NEAREST_AFZ:
	case NCC_OP_ROUND_NEAREST_EVEN: case NCC_OP_REDUCE_PRECISION:
		CHECK(fl, "operand must be floating point, is %s", ncc_etype_name(t));
		break;
	case NCC_OP_NOT:
		CHECK(t == NCC_PRED || ncc_etype_is_integral(t), "operand must be pred or integer, is %s",
		      ncc_etype_name(t));
		break;
	case NCC_OP_POPCNT: case NCC_OP_CLZ:
		CHECK(ncc_etype_is_integral(t), "operand must be an integer, is %s", ncc_etype_name(t));
		break;
	case NCC_OP_NEGATE: case NCC_OP_ABS: case NCC_OP_SIGN:
		CHECK(t != NCC_PRED, "operand must be numeric, is pred");
		break;
	default:
		break;
	}
	return NCC_OK;
}

ncc_status_t vf_binary(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 2, "lhs", "rhs"));
	const ncc_shape_t *a = &in->operands[0]->shape, *b = &in->operands[1]->shape;
	CHECK(vf_same_dims(a, b), "operands %s and %s differ in dimensions", vf_sh(a), vf_sh(b));
	CHECK(vf_same_dims(a, &in->shape), "result %s differs in dimensions from operands %s",
	      vf_sh(&in->shape), vf_sh(a));
	ncc_etype_t t = a->etype, r = in->shape.etype;
	if (in->op == NCC_OP_STOCHASTIC_CONVERT)
		return NCC_OK;
	CHECK(a->etype == b->etype, "operand types differ: %s vs %s", ncc_etype_name(a->etype),
	      ncc_etype_name(b->etype));
	switch (in->op) {
	case NCC_OP_COMPARE:
		CHECK(r == NCC_PRED, "result must be pred, is %s", ncc_etype_name(r));
		CHECK(in->cmp_dir != NCC_CMP_NONE, "missing direction=");
		if (in->cmp_type == NCC_CMPT_FLOAT || in->cmp_type == NCC_CMPT_TOTALORDER)
			CHECK(ncc_etype_is_float(t) || ncc_etype_is_complex(t),
			      "comparison type FLOAT/TOTALORDER on %s operands", ncc_etype_name(t));
		if (in->cmp_type == NCC_CMPT_SIGNED || in->cmp_type == NCC_CMPT_UNSIGNED)
			CHECK(!ncc_etype_is_float(t), "integer comparison type on %s operands",
			      ncc_etype_name(t));
		return NCC_OK;
	case NCC_OP_COMPLEX:
		CHECK(t == NCC_F32 || t == NCC_F64, "operands must be f32 or f64, are %s", ncc_etype_name(t));
		CHECK(r == (t == NCC_F32 ? NCC_C64 : NCC_C128), "result must be %s, is %s",
		      t == NCC_F32 ? "c64" : "c128", ncc_etype_name(r));
		return NCC_OK;
	default:
		break;
	}
	CHECK(r == t, "result type %s differs from operand type %s", ncc_etype_name(r), ncc_etype_name(t));
	switch (in->op) {
	case NCC_OP_AND: case NCC_OP_OR: case NCC_OP_XOR:
		CHECK(t == NCC_PRED || ncc_etype_is_integral(t), "operands must be pred or integer, are %s",
		      ncc_etype_name(t));
		break;
	case NCC_OP_SHIFT_LEFT: case NCC_OP_SHIFT_RIGHT_ARITHMETIC: case NCC_OP_SHIFT_RIGHT_LOGICAL:
		CHECK(ncc_etype_is_integral(t), "operands must be integers, are %s", ncc_etype_name(t));
		break;
	case NCC_OP_ATAN2:
		CHECK(ncc_etype_is_float(t) || ncc_etype_is_complex(t),
		      "operands must be floating point, are %s", ncc_etype_name(t));
		break;
	case NCC_OP_ADD: case NCC_OP_SUBTRACT: case NCC_OP_MULTIPLY: case NCC_OP_DIVIDE:
	case NCC_OP_REMAINDER: case NCC_OP_POWER:
		CHECK(t != NCC_PRED || in->op == NCC_OP_ADD || in->op == NCC_OP_MULTIPLY ||
		      in->op == NCC_OP_SUBTRACT, "arithmetic on pred operands");
		break;
	default:
		break;
	}
	return NCC_OK;
}

ncc_status_t vf_select(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 3));
	const ncc_shape_t *p = &in->operands[0]->shape, *a = &in->operands[1]->shape,
			  *b = &in->operands[2]->shape;
	TRY(vf_need_array(v, in, p, "predicate"));
	CHECK(p->etype == NCC_PRED, "predicate must be pred, is %s", ncc_etype_name(p->etype));
	CHECK(ncc_shape_equal(a, b, false), "on_true %s and on_false %s differ", vf_sh(a), vf_sh(b));
	/* current XLA requires the predicate to have the operands' dimensions (the old
	 * scalar-predicate form was removed) */
	CHECK(vf_same_dims(p, a), "predicate %s does not match operands %s", vf_sh(p), vf_sh(a));
	return vf_expect_shape(v, in, a);
}

ncc_status_t vf_clamp(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 3));
	const ncc_shape_t *lo = &in->operands[0]->shape, *x = &in->operands[1]->shape,
			  *hi = &in->operands[2]->shape;
	TRY(vf_need_array(v, in, x, "operand"));
	TRY(vf_need_array(v, in, lo, "min"));
	TRY(vf_need_array(v, in, hi, "max"));
	CHECK(lo->etype == x->etype && hi->etype == x->etype, "min/operand/max types differ: %s, %s, %s",
	      ncc_etype_name(lo->etype), ncc_etype_name(x->etype), ncc_etype_name(hi->etype));
	CHECK(lo->rank == 0 || vf_same_dims(lo, x), "min %s must be scalar or match operand %s", vf_sh(lo), vf_sh(x));
	CHECK(hi->rank == 0 || vf_same_dims(hi, x), "max %s must be scalar or match operand %s", vf_sh(hi), vf_sh(x));
	return vf_expect_shape(v, in, x);
}

ncc_status_t vf_bitcast_convert(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape, *r = &in->shape;
	int ib = ncc_etype_bits(a->etype), ob = ncc_etype_bits(r->etype);
	if (ib == ob) {
		CHECK(vf_same_dims(a, r), "operand %s and result %s differ in dimensions", vf_sh(a), vf_sh(r));
	} else if (ib > ob) {
		CHECK(r->rank == a->rank + 1 && r->dims[r->rank - 1] == ib / ob,
		      "narrowing %s to %s needs a trailing dimension of %d", ncc_etype_name(a->etype),
		      ncc_etype_name(r->etype), ib / (ob ? ob : 1));
		for (int32_t i = 0; i < a->rank; i++)
			CHECK(r->dims[i] == a->dims[i], "dimension %d differs", (int)i);
	} else {
		CHECK(a->rank == r->rank + 1 && a->dims[a->rank - 1] == ob / ib,
		      "widening %s to %s needs an operand trailing dimension of %d",
		      ncc_etype_name(a->etype), ncc_etype_name(r->etype), ob / (ib ? ib : 1));
		for (int32_t i = 0; i < r->rank; i++)
			CHECK(r->dims[i] == a->dims[i], "dimension %d differs", (int)i);
	}
	return NCC_OK;
}

