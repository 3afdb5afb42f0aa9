/* Lowering of elementwise HLO ops (unary, binary, ternary, compare, select, clamp, convert, bitcast-convert, copy) to ALU/ACTIVATE/COPY instructions. */
#include <string.h>

#include "lower_internal.h"

/* ALU sub-op of a unary/binary HLO op, or -1. */
static int alu_of(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_NEGATE: return ISA_ALU_NEG;
	case NCC_OP_ABS: return ISA_ALU_ABS;
	case NCC_OP_SIGN: return ISA_ALU_SIGN;
	case NCC_OP_FLOOR: return ISA_ALU_FLOOR;
	case NCC_OP_CEIL: return ISA_ALU_CEIL;
	case NCC_OP_ROUND_NEAREST_AFZ: return ISA_ALU_ROUND_AWAY;
	case NCC_OP_ROUND_NEAREST_EVEN: return ISA_ALU_ROUND_EVEN;
	case NCC_OP_EXP: return ISA_ALU_EXP;
	case NCC_OP_EXPM1: return ISA_ALU_EXPM1;
	case NCC_OP_LOG: return ISA_ALU_LOG;
	case NCC_OP_LOG1P: return ISA_ALU_LOG1P;
	case NCC_OP_SQRT: return ISA_ALU_SQRT;
	case NCC_OP_RSQRT: return ISA_ALU_RSQRT;
	case NCC_OP_TANH: return ISA_ALU_TANH;
	case NCC_OP_LOGISTIC: return ISA_ALU_LOGISTIC;
	case NCC_OP_ERF: return ISA_ALU_ERF;
	case NCC_OP_SIN: return ISA_ALU_SIN;
	case NCC_OP_COS: return ISA_ALU_COS;
	case NCC_OP_NOT: return ISA_ALU_NOT;
	case NCC_OP_IS_FINITE: return ISA_ALU_IS_FINITE;
	case NCC_OP_POPCNT: return ISA_ALU_POPCNT;
	case NCC_OP_CLZ: return ISA_ALU_CLZ;
	case NCC_OP_ADD: return ISA_ALU_ADD;
	case NCC_OP_SUBTRACT: return ISA_ALU_SUB;
	case NCC_OP_MULTIPLY: return ISA_ALU_MUL;
	case NCC_OP_DIVIDE: return ISA_ALU_DIV;
	case NCC_OP_REMAINDER: return ISA_ALU_REM;
	case NCC_OP_POWER: return ISA_ALU_POW;
	case NCC_OP_MAXIMUM: return ISA_ALU_MAX;
	case NCC_OP_MINIMUM: return ISA_ALU_MIN;
	case NCC_OP_AND: return ISA_ALU_AND;
	case NCC_OP_OR: return ISA_ALU_OR;
	case NCC_OP_XOR: return ISA_ALU_XOR;
	case NCC_OP_SHIFT_LEFT: return ISA_ALU_SHL;
	case NCC_OP_SHIFT_RIGHT_LOGICAL: return ISA_ALU_SHR_LOGICAL;
	case NCC_OP_SHIFT_RIGHT_ARITHMETIC: return ISA_ALU_SHR_ARITH;
	case NCC_OP_ATAN2: return ISA_ALU_ATAN2;
	case NCC_OP_SELECT: return ISA_ALU_SELECT;
	case NCC_OP_CLAMP: return ISA_ALU_CLAMP;
	default: return -1;
	}
}

/* Float-only ALU ops of the ISA (integers would be rejected by the validator). */
static bool float_only(int sub)
{
	switch (sub) {
	case ISA_ALU_FLOOR: case ISA_ALU_CEIL: case ISA_ALU_ROUND_AWAY: case ISA_ALU_ROUND_EVEN:
	case ISA_ALU_EXP: case ISA_ALU_EXPM1: case ISA_ALU_LOG: case ISA_ALU_LOG1P:
	case ISA_ALU_SQRT: case ISA_ALU_RSQRT: case ISA_ALU_TANH: case ISA_ALU_LOGISTIC:
	case ISA_ALU_ERF: case ISA_ALU_SIN: case ISA_ALU_COS: case ISA_ALU_IS_FINITE:
	case ISA_ALU_POW: case ISA_ALU_ATAN2:
		return true;
	default:
		return false;
	}
}

static bool int_only(int sub)
{
	return sub == ISA_ALU_SHL || sub == ISA_ALU_SHR_LOGICAL || sub == ISA_ALU_SHR_ARITH ||
	       sub == ISA_ALU_POPCNT || sub == ISA_ALU_CLZ;
}

bool ncc_lower_elementwise_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_CONVERT:
	case NCC_OP_COPY:
		return true;
	case NCC_OP_BITCAST_CONVERT:
		if (inst->noperands == 1 &&
		    ncc_etype_storage_bytes(inst->operands[0]->shape.etype) ==
			    ncc_etype_storage_bytes(inst->shape.etype))
			return true;
		*out_reason = "unsupported bitcast-convert between types of different widths";
		return false;
	case NCC_OP_COMPARE:
		return true;
	default:
		break;
	}
	int sub = alu_of(inst->op);
	if (sub < 0)
		return false;
	ncc_etype_t t = inst->op == NCC_OP_SELECT || inst->op == NCC_OP_IS_FINITE
				? inst->operands[inst->noperands - 1]->shape.etype
				: inst->shape.etype;
	bool fl = t == NCC_F32 || t == NCC_BF16 || t == NCC_F16;
	if (float_only(sub) && !fl) {
		*out_reason = "unsupported: this operation needs a floating-point element type";
		return false;
	}
	if (int_only(sub) && (fl || t == NCC_PRED)) {
		*out_reason = "unsupported: this operation needs an integer element type";
		return false;
	}
	if ((sub == ISA_ALU_AND || sub == ISA_ALU_OR || sub == ISA_ALU_XOR || sub == ISA_ALU_NOT) && fl) {
		*out_reason = "unsupported: bitwise operation on a float type";
		return false;
	}
	return true;
}

/* Operand i, broadcast when it is a scalar of a non-scalar op (clamp, select). */
static ncc_status_t operand(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t i,
			    const ncc_view_t *out, ncc_view_t *v)
{
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, i, v);
	if (st != NCC_OK)
		return st;
	if (v->rank == 0 && out->rank > 0)
		*v = ncc_view_bcast_scalar(v, out->rank, out->dims);
	return NCC_OK;
}

static int act_of(int sub)
{
	switch (sub) {
	case ISA_ALU_EXP: return ISA_ACT_EXP;
	case ISA_ALU_LOG: return ISA_ACT_LOG;
	case ISA_ALU_TANH: return ISA_ACT_TANH;
	case ISA_ALU_LOGISTIC: return ISA_ACT_LOGISTIC;
	case ISA_ALU_SQRT: return ISA_ACT_SQRT;
	case ISA_ALU_RSQRT: return ISA_ACT_RSQRT;
	default: return -1;
	}
}

ncc_status_t ncc_lower_elementwise(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t out, in[3];
	ncc_status_t st;
	if (inst->op == NCC_OP_BITCAST_CONVERT || inst->op == NCC_OP_CONVERT || inst->op == NCC_OP_COPY) {
		st = ncc_lower_operand_view(ctx, inst, 0, &in[0]);
		if (st != NCC_OK)
			return st;
		isa_dtype_t dt;
		if (ncc_lower_dtype(inst->shape.etype, &dt) != NCC_OK)
			return NCC_ERR_UNSUPPORTED;
		/* bitcast-convert (same width): the same bytes read as another type, no
		 * instruction; a same-type convert/copy is a value alias */
		if (inst->op == NCC_OP_BITCAST_CONVERT)
			in[0].dtype = dt;
		if (dt == in[0].dtype)
			return ncc_lower_set_view(ctx, inst, 0, &in[0]);
		st = ncc_lower_output_view(ctx, inst, 0, &out);
		if (st != NCC_OK)
			return st;
		return ncc_lower_copy(ctx, inst, &out, &in[0]);
	}
	st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	int sub;
	if (inst->op == NCC_OP_COMPARE) {
		switch (inst->cmp_dir) {
		case NCC_CMP_EQ: sub = ISA_ALU_CMP_EQ; break;
		case NCC_CMP_NE: sub = ISA_ALU_CMP_NE; break;
		case NCC_CMP_LT: sub = ISA_ALU_CMP_LT; break;
		case NCC_CMP_LE: sub = ISA_ALU_CMP_LE; break;
		case NCC_CMP_GT: sub = ISA_ALU_CMP_GT; break;
		case NCC_CMP_GE: sub = ISA_ALU_CMP_GE; break;
		default:
			return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					      "unsupported compare without a direction");
		}
	} else {
		sub = alu_of(inst->op);
	}
	int n = isa_alu_arity((uint32_t)sub);
	if (n != inst->noperands)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: %d operands for arity %d",
				      inst->noperands, n);
	for (int i = 0; i < n; i++) {
		st = operand(ctx, inst, i, &out, &in[i]);
		if (st != NCC_OK)
			return st;
	}
	/* Transcendentals go to the scalar engine (ACTIVATE), as on the hardware. */
	int act = n == 1 ? act_of(sub) : -1;
	if (act >= 0 && isa_dtype_is_float(out.dtype) && isa_dtype_is_float(in[0].dtype))
		return ncc_lower_act(ctx, inst, (uint32_t)act, 1.0, 0.0, &out, &in[0]);
	/* The ISA wants all ALU operands of one dtype (compares: inputs alike, output
	 * pred); HLO guarantees that except for a pred scalar select (also fine). */
	return ncc_lower_alu(ctx, inst, (uint32_t)sub, &out, n, in);
}
