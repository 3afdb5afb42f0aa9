/* ncc reference interpreter: the driver (computations, dispatch, tuples, while/conditional/call); the evaluators reach it only through ncc_interp_t.call, which it sets (interp_internal.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interp_internal.h"
#include "neuronsim/clock.h"

/* ------------------------------------------------------------ support table */

static bool etypes_ok(const ncc_shape_t *s)
{
	if (s->etype == NCC_TUPLE) {
		for (int32_t k = 0; k < s->nelems; k++)
			if (!etypes_ok(&s->elems[k]))
				return false;
		return true;
	}
	return s->etype == NCC_TOKEN || ncc_interp_etype_ok(s->etype);
}

bool ncc_interp_etype_supported(ncc_etype_t t)
{
	return ncc_interp_etype_ok(t);
}

bool ncc_interp_supports(const ncc_inst_t *inst, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	if (!etypes_ok(&inst->shape)) {
		*why = "element type not supported by the interpreter";
		return false;
	}
	for (int32_t k = 0; k < inst->noperands; k++)
		if (!etypes_ok(&inst->operands[k]->shape)) {
			*why = "operand element type not supported by the interpreter";
			return false;
		}
	switch (inst->op) {
	case NCC_OP_PARAMETER: case NCC_OP_CONSTANT: case NCC_OP_TUPLE:
	case NCC_OP_GET_TUPLE_ELEMENT: case NCC_OP_RESHAPE: case NCC_OP_BITCAST: case NCC_OP_COPY:
	case NCC_OP_OPTIMIZATION_BARRIER: case NCC_OP_ADD_DEPENDENCY: case NCC_OP_AFTER_ALL:
	case NCC_OP_WHILE: case NCC_OP_CONDITIONAL: case NCC_OP_CALL: case NCC_OP_FUSION:
	case NCC_OP_MAP: case NCC_OP_CONVERT: case NCC_OP_BITCAST_CONVERT:
	case NCC_OP_BROADCAST: case NCC_OP_TRANSPOSE: case NCC_OP_SLICE: case NCC_OP_CONCATENATE:
	case NCC_OP_PAD: case NCC_OP_REVERSE: case NCC_OP_IOTA: case NCC_OP_DYNAMIC_SLICE:
	case NCC_OP_DYNAMIC_UPDATE_SLICE: case NCC_OP_GATHER: case NCC_OP_SCATTER:
	case NCC_OP_REDUCE: case NCC_OP_REDUCE_WINDOW: case NCC_OP_SELECT_AND_SCATTER:
	case NCC_OP_DOT: case NCC_OP_BATCH_NORM_TRAINING:
	case NCC_OP_BATCH_NORM_INFERENCE: case NCC_OP_BATCH_NORM_GRAD:
	case NCC_OP_ALL_REDUCE: case NCC_OP_ALL_GATHER:
	case NCC_OP_REDUCE_SCATTER: case NCC_OP_ALL_TO_ALL: case NCC_OP_COLLECTIVE_PERMUTE:
	case NCC_OP_COLLECTIVE_BROADCAST: case NCC_OP_REPLICA_ID: case NCC_OP_PARTITION_ID:
	case NCC_OP_GET_DIMENSION_SIZE:
		return true;
	case NCC_OP_CONVOLUTION:
		for (int32_t k = 0; k < inst->noperands && k < 2; k++) {
			ncc_etype_t t = inst->operands[k]->shape.etype;
			if (t != NCC_F32 && t != NCC_BF16 && t != NCC_F16) {
				*why = "convolution is evaluated for f32/bf16/f16 operands only";
				return false;
			}
		}
		return true;
	case NCC_OP_RNG_BIT_GENERATOR:
		if (inst->rng_algorithm == NCC_RNG_THREE_FRY) {
			*why = "rng-bit-generator algorithm=rng_three_fry is not implemented";
			return false;
		}
		return true;
	case NCC_OP_CUSTOM_CALL:
		if (ncc_custom_call_supported(inst->custom_call_target))
			return true;
		*why = "custom-call target not known to the interpreter";
		return false;
	default:
		if (ncc_elementwise_supported(inst->op))
			return true;
		*why = "opcode not implemented by the interpreter";
		return false;
	}
}

/* ------------------------------------------------------------ evaluation */

typedef struct slot {
	ncc_value_t *v;
	bool owned;
	int32_t uses; /* remaining uses in this evaluation */
} slot_t;

typedef struct frame {
	const ncc_comp_t *comp;
	slot_t *slots;
	int32_t root_pos;
} frame_t;

/* Position of an instruction in its computation. Computations are small or visited
 * once, so a linear search from a hint is cheap; the hint is the caller's position. */
static int32_t inst_pos(const ncc_comp_t *c, const ncc_inst_t *inst, int32_t hint)
{
	for (int32_t i = hint < c->ninsts ? hint : c->ninsts - 1; i >= 0; i--)
		if (c->insts[i] == inst)
			return i;
	for (int32_t i = c->ninsts - 1; i >= 0; i--)
		if (c->insts[i] == inst)
			return i;
	return -1;
}

static bool shapes_compatible(const ncc_shape_t *want, const ncc_value_t *v)
{
	if (want->etype == NCC_TUPLE) {
		if (v->shape.etype != NCC_TUPLE || v->nelems != want->nelems)
			return false;
		for (int32_t k = 0; k < want->nelems; k++)
			if (!shapes_compatible(&want->elems[k], v->elems[k]))
				return false;
		return true;
	}
	if (v->shape.etype != want->etype || v->shape.rank != want->rank)
		return false;
	for (int32_t d = 0; d < want->rank; d++)
		if (v->shape.dims[d] != want->dims[d])
			return false;
	return true;
}

/* Whether the get-tuple-element at pos may move element `index` out of the tuple at
 * tpos: every later live user of the tuple is a get-tuple-element of another index
 * (batch-norm-training's three outputs are the common case). */
static bool gte_can_steal(const frame_t *fr, int32_t tpos, int32_t pos, int64_t index)
{
	const ncc_comp_t *c = fr->comp;
	const ncc_inst_t *t = c->insts[tpos];
	if (!fr->slots[tpos].owned || tpos == fr->root_pos)
		return false;
	for (int32_t i = pos + 1; i <= fr->root_pos; i++) {
		const ncc_inst_t *u = c->insts[i];
		if (fr->slots[i].uses == 0)
			continue;
		for (int32_t k = 0; k < u->noperands; k++) {
			if (u->operands[k] != t)
				continue;
			if (u->op != NCC_OP_GET_TUPLE_ELEMENT || u->tuple_index == index)
				return false;
		}
	}
	return true;
}

/* The value of slot s for a consumer that wants to own it: moved out when this is
 * its last use and the frame owns it, copied otherwise. */
static ncc_status_t slot_take(ncc_interp_t *ip, slot_t *s, ncc_value_t **out)
{
	if (s->owned && s->uses == 1) {
		*out = s->v;
		s->v = NULL;
		s->owned = false;
		return NCC_OK;
	}
	return ncc_ivalue_clone(ip, s->v, out);
}

static ncc_status_t eval_while(ncc_interp_t *ip, const ncc_inst_t *inst, ncc_value_t *init,
			       ncc_value_t **out)
{
	ncc_value_t *state = init;
	int64_t limit = ip->opts.max_while_iterations > 0 ? ip->opts.max_while_iterations : 10000000;
	for (int64_t it = 0;; it++) {
		ncc_value_t *pred = NULL;
		const ncc_value_t *arg = state;
		ncc_status_t st = ncc_interp_call(ip, inst->condition, &arg, 1, &pred);
		if (st != NCC_OK) {
			ncc_value_free(state);
			return st;
		}
		bool go = pred->shape.etype == NCC_PRED && pred->nbytes == 1 && ((uint8_t *)pred->data)[0];
		ncc_value_free(pred);
		if (!go)
			break;
		if (it >= limit) {
			ncc_value_free(state);
			return ncc_interp_fail(ip, inst, NCC_ERR_LIMIT,
					       "while loop ran %" PRId64 " iterations (the limit)", limit);
		}
		ncc_value_t *next = NULL;
		st = ncc_interp_call(ip, inst->body, &arg, 1, &next);
		ncc_ivalue_free(ip, state);
		if (st != NCC_OK)
			return st;
		state = next;
	}
	*out = state;
	return NCC_OK;
}

static ncc_status_t eval_conditional(ncc_interp_t *ip, const ncc_inst_t *inst,
				     const ncc_value_t *const *ops, ncc_value_t **out)
{
	const ncc_value_t *sel = ops[0];
	int64_t b;
	if (inst->nbranches < 1)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "conditional without branches");
	if (sel->shape.etype == NCC_PRED) {
		/* true -> first branch (true_computation), false -> second */
		b = ((uint8_t *)sel->data)[0] ? 0 : 1;
	} else {
		b = (int64_t)ncc_ld_u(sel->shape.etype, sel->data, 0);
		if (b < 0 || b >= inst->nbranches)
			b = inst->nbranches - 1; /* out of range selects the last branch */
	}
	if (b >= inst->nbranches || inst->noperands < b + 2)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "branch %" PRId64 " has no operand", b);
	return ncc_interp_call(ip, inst->branches[b], &ops[b + 1], 1, out);
}

static ncc_eval_fn eval_fn_for(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_CONVERT: return ncc_eval_convert;
	case NCC_OP_BITCAST_CONVERT: return ncc_eval_bitcast_convert;
	case NCC_OP_BROADCAST: return ncc_eval_broadcast;
	/* eval_inst moves the operand's buffer instead; this is ncc_interp_eval_inst's */
	case NCC_OP_RESHAPE: case NCC_OP_BITCAST: return ncc_eval_reshape;
	case NCC_OP_TRANSPOSE: return ncc_eval_transpose;
	case NCC_OP_SLICE: return ncc_eval_slice;
	case NCC_OP_CONCATENATE: return ncc_eval_concatenate;
	case NCC_OP_PAD: return ncc_eval_pad;
	case NCC_OP_REVERSE: return ncc_eval_reverse;
	case NCC_OP_IOTA: return ncc_eval_iota;
	case NCC_OP_DYNAMIC_SLICE: return ncc_eval_dynamic_slice;
	case NCC_OP_DYNAMIC_UPDATE_SLICE: return ncc_eval_dynamic_update_slice;
	case NCC_OP_GATHER: return ncc_eval_gather;
	case NCC_OP_SCATTER: return ncc_eval_scatter;
	case NCC_OP_REDUCE: return ncc_eval_reduce;
	case NCC_OP_REDUCE_WINDOW: return ncc_eval_reduce_window;
	case NCC_OP_SELECT_AND_SCATTER: return ncc_eval_select_and_scatter;
	case NCC_OP_DOT: return ncc_eval_dot;
	case NCC_OP_CONVOLUTION: return ncc_eval_convolution;
	case NCC_OP_BATCH_NORM_TRAINING: return ncc_eval_batch_norm_training;
	case NCC_OP_BATCH_NORM_INFERENCE: return ncc_eval_batch_norm_inference;
	case NCC_OP_BATCH_NORM_GRAD: return ncc_eval_batch_norm_grad;
	case NCC_OP_CUSTOM_CALL: return ncc_eval_custom_call;
	case NCC_OP_RNG_BIT_GENERATOR: return ncc_eval_rng_bit_generator;
	case NCC_OP_ALL_REDUCE: case NCC_OP_ALL_GATHER: case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_ALL_TO_ALL: case NCC_OP_COLLECTIVE_PERMUTE: case NCC_OP_COLLECTIVE_BROADCAST:
	case NCC_OP_REPLICA_ID: case NCC_OP_PARTITION_ID:
		return ncc_eval_collective;
	case NCC_OP_MAP: return ncc_eval_map;
	default:
		return ncc_elementwise_supported(op) ? ncc_eval_elementwise : NULL;
	}
}

/* Monte Carlo arithmetic for dot and convolution: a device rounds their products and
 * partial sums at the magnitude of the terms, which is far above the result's when
 * the terms cancel; perturbing the operands as they are read gives every term that
 * error (perturbing only the result would not). */
static bool contraction_perturbs_operands(const ncc_interp_t *ip, const ncc_inst_t *inst)
{
	return ip->opts.perturb_ulps > 0 && ip->scalar_depth == 0 && inst->noperands == 2 &&
	       (inst->op == NCC_OP_DOT || inst->op == NCC_OP_CONVOLUTION);
}

static ncc_status_t eval_on_perturbed_operands(ncc_interp_t *ip, const ncc_inst_t *inst,
					       ncc_eval_fn fn, const ncc_value_t *const *opv,
					       ncc_value_t *res)
{
	ncc_value_t *copy[2] = {NULL, NULL};
	ncc_status_t st = ncc_ivalue_clone(ip, opv[0], &copy[0]);
	if (st == NCC_OK)
		st = ncc_ivalue_clone(ip, opv[1], &copy[1]);
	if (st == NCC_OK) {
		ncc_ivalue_perturb(ip, copy[0]);
		ncc_ivalue_perturb(ip, copy[1]);
		st = fn(ip, inst, (const ncc_value_t *const *)copy, res);
	}
	ncc_ivalue_free(ip, copy[0]);
	ncc_ivalue_free(ip, copy[1]);
	return st;
}

/* Evaluates one instruction whose operands are in fr; the result goes to *out. */
static ncc_status_t eval_inst(ncc_interp_t *ip, frame_t *fr, int32_t pos,
			      const ncc_value_t *const *args, ncc_value_t **out)
{
	const ncc_inst_t *inst = fr->comp->insts[pos];
	ncc_status_t st;
	const char *why = NULL;
	*out = NULL;
	if (!ncc_interp_supports(inst, &why))
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED, "%s (type %s)", why,
				       ncc_etype_name(inst->shape.etype));

	if (ip->opts.deadline_ns) {
		if (ns_monotonic_ns() >= ip->opts.deadline_ns)
			return ncc_interp_fail(ip, inst, NCC_ERR_LIMIT,
					       "deadline passed before this instruction: the "
					       "evaluation ran out of its time limit");
	}

	const ncc_value_t *opv_small[8];
	const ncc_value_t **opv = opv_small;
	int32_t opos_small[8];
	int32_t *opos = opos_small;
	if (inst->noperands > 8) {
		opv = malloc(sizeof(*opv) * (size_t)inst->noperands);
		opos = malloc(sizeof(*opos) * (size_t)inst->noperands);
		if (!opv || !opos) {
			if (opv != opv_small)
				free(opv);
			if (opos != opos_small)
				free(opos);
			return NCC_ERR_NOMEM;
		}
	}
	st = NCC_OK;
	for (int32_t k = 0; k < inst->noperands; k++) {
		int32_t p = inst_pos(fr->comp, inst->operands[k], pos - 1);
		if (p < 0 || p >= pos || !fr->slots[p].v) {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
					     "operand %d ('%s') is not evaluated before its use", k,
					     inst->operands[k]->name);
			goto done;
		}
		opos[k] = p;
		opv[k] = fr->slots[p].v;
	}

	switch (inst->op) {
	case NCC_OP_PARAMETER: {
		int64_t n = inst->parameter_number;
		if (n < 0 || n >= fr->comp->nparams || !args[n]) {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "no argument for parameter %" PRId64, n);
			goto done;
		}
		/* parameters are borrowed: the caller marks the slot unowned */
		*out = (ncc_value_t *)args[n];
		goto done;
	}
	case NCC_OP_CONSTANT:
		st = ncc_value_from_literal(&inst->shape, &inst->literal, out);
		if (st == NCC_ERR_UNSUPPORTED)
			st = ncc_interp_fail(ip, inst, st, "constant is elided ({...}); its value is unknown");
		else if (st != NCC_OK)
			st = ncc_interp_fail(ip, inst, st, "constant literal does not match its shape");
		goto done;
	case NCC_OP_TUPLE: {
		ncc_value_t **elems = calloc((size_t)(inst->noperands ? inst->noperands : 1), sizeof(*elems));
		if (!elems) {
			st = NCC_ERR_NOMEM;
			goto done;
		}
		for (int32_t k = 0; k < inst->noperands && st == NCC_OK; k++) {
			slot_t *s = &fr->slots[opos[k]];
			/* a value used twice by this tuple must be copied */
			bool twice = false;
			for (int32_t j = 0; j < inst->noperands; j++)
				if (j != k && opos[j] == opos[k])
					twice = true;
			st = twice ? ncc_ivalue_clone(ip, s->v, &elems[k]) : slot_take(ip, s, &elems[k]);
			if (st == NCC_OK && !s->v) /* moved: the operand loop below must not free it */
				opv[k] = NULL;
		}
		if (st == NCC_OK)
			st = ncc_value_tuple(elems, inst->noperands, out);
		if (st != NCC_OK)
			for (int32_t k = 0; k < inst->noperands; k++)
				ncc_value_free(elems[k]);
		free(elems);
		goto done;
	}
	case NCC_OP_GET_TUPLE_ELEMENT: {
		const ncc_value_t *t = opv[0];
		int64_t i = inst->tuple_index;
		if (t->shape.etype != NCC_TUPLE || i < 0 || i >= t->nelems) {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "index %" PRId64 " out of the tuple", i);
			goto done;
		}
		slot_t *s = &fr->slots[opos[0]];
		if (t->elems[i] && ((s->owned && s->uses == 1) || gte_can_steal(fr, opos[0], pos, i))) {
			*out = t->elems[i];
			t->elems[i] = NULL; /* the rest of the tuple is freed with the slot */
		} else if (t->elems[i]) {
			st = ncc_ivalue_clone(ip, t->elems[i], out);
		} else {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INTERNAL, "tuple element %" PRId64 " was moved out", i);
		}
		goto done;
	}
	case NCC_OP_RESHAPE: case NCC_OP_BITCAST: case NCC_OP_COPY:
	case NCC_OP_OPTIMIZATION_BARRIER: case NCC_OP_ADD_DEPENDENCY: {
		if (inst->noperands < 1) {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "missing operand");
			goto done;
		}
		const ncc_value_t *src = opv[0];
		if (inst->op == NCC_OP_RESHAPE || inst->op == NCC_OP_BITCAST) {
			if (inst->shape.etype != src->shape.etype ||
			    ncc_shape_count(&inst->shape) != ncc_value_elements(src)) {
				st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
						     "element count or type differs from the operand's");
				goto done;
			}
		}
		st = slot_take(ip, &fr->slots[opos[0]], out);
		if (st == NCC_OK && (inst->op == NCC_OP_RESHAPE || inst->op == NCC_OP_BITCAST)) {
			(*out)->shape = ncc_shape_array(inst->shape.etype, inst->shape.rank, inst->shape.dims);
			(*out)->shape.has_layout = false;
		}
		goto done;
	}
	case NCC_OP_AFTER_ALL:
		st = ncc_value_alloc(&inst->shape, out);
		goto done;
	case NCC_OP_WHILE: {
		ncc_value_t *init;
		if (inst->noperands != 1 || !inst->condition || !inst->body) {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "while needs one operand, condition and body");
			goto done;
		}
		st = slot_take(ip, &fr->slots[opos[0]], &init);
		if (st == NCC_OK)
			st = eval_while(ip, inst, init, out);
		goto done;
	}
	case NCC_OP_CONDITIONAL:
		st = eval_conditional(ip, inst, opv, out);
		goto done;
	case NCC_OP_CALL: case NCC_OP_FUSION: {
		const ncc_comp_t *callee = inst->op == NCC_OP_CALL ? (inst->to_apply ? inst->to_apply : inst->calls)
								   : inst->calls;
		if (!callee) {
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "no called computation");
			goto done;
		}
		st = ncc_interp_call(ip, callee, opv, inst->noperands, out);
		goto done;
	}
	case NCC_OP_GET_DIMENSION_SIZE: {
		st = ncc_value_alloc(&inst->shape, out);
		int64_t d = inst->dimensions.n > 0 ? inst->dimensions.v[0] : -1;
		if (st == NCC_OK && (d < 0 || d >= opv[0]->shape.rank))
			st = ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "dimension out of range");
		if (st == NCC_OK)
			ncc_value_set_i64(*out, 0, opv[0]->shape.dims[d]);
		goto done;
	}
	default:
		break;
	}

	ncc_eval_fn fn = eval_fn_for(inst->op);
	if (!fn) {
		st = ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED, "opcode not implemented by the interpreter");
		goto done;
	}
	ncc_value_t *res;
	st = ncc_ivalue_alloc(ip, &inst->shape, &res);
	if (st != NCC_OK) {
		st = ncc_interp_fail(ip, inst, st, "cannot allocate the result");
		goto done;
	}
	st = contraction_perturbs_operands(ip, inst) ? eval_on_perturbed_operands(ip, inst, fn, opv, res)
						      : fn(ip, inst, opv, res);
	if (st != NCC_OK)
		ncc_ivalue_free(ip, res);
	else
		*out = res;
done:
	if (opv != opv_small)
		free(opv);
	if (opos != opos_small)
		free(opos);
	return st;
}

/* Whether inst computes new float values that a device rounds (Monte Carlo
 * arithmetic perturbs those results): arithmetic, transcendental functions,
 * reductions, dot, convolution, batch norm, custom-calls. Instructions that move,
 * select, compare or convert values, and those whose called computations are
 * evaluated (and perturbed) instruction by instruction, are exact. */
static bool rounds_result(const ncc_inst_t *inst)
{
	switch (inst->op) {
	case NCC_OP_ADD: case NCC_OP_SUBTRACT: case NCC_OP_MULTIPLY: case NCC_OP_DIVIDE:
	case NCC_OP_REMAINDER: case NCC_OP_POWER: case NCC_OP_ATAN2: case NCC_OP_SQRT:
	case NCC_OP_RSQRT: case NCC_OP_CBRT: case NCC_OP_EXP: case NCC_OP_EXPM1: case NCC_OP_LOG:
	case NCC_OP_LOG1P: case NCC_OP_LOGISTIC: case NCC_OP_TANH: case NCC_OP_ERF:
	case NCC_OP_SIN: case NCC_OP_COS: case NCC_OP_TAN: case NCC_OP_MAP:
	case NCC_OP_REDUCE: case NCC_OP_REDUCE_WINDOW: case NCC_OP_SELECT_AND_SCATTER:
	case NCC_OP_SCATTER: case NCC_OP_DOT: case NCC_OP_CONVOLUTION:
	case NCC_OP_BATCH_NORM_TRAINING: case NCC_OP_BATCH_NORM_INFERENCE:
	case NCC_OP_BATCH_NORM_GRAD:
		return true;
	case NCC_OP_CUSTOM_CALL: /* the Neuron targets but the transfer (an identity) */
		return !inst->custom_call_target ||
		       strcmp(inst->custom_call_target, "AwsNeuronTransferWithStaticRing") != 0;
	default:
		return false;
	}
}

/* Releases the operands' uses after inst at pos ran. */
static void release_operands(ncc_interp_t *ip, frame_t *fr, int32_t pos)
{
	const ncc_inst_t *inst = fr->comp->insts[pos];
	for (int32_t k = 0; k < inst->noperands; k++) {
		int32_t p = inst_pos(fr->comp, inst->operands[k], pos - 1);
		if (p < 0)
			continue;
		slot_t *s = &fr->slots[p];
		if (--s->uses <= 0) {
			if (s->owned)
				ncc_ivalue_free(ip, s->v);
			s->v = NULL;
			s->owned = false;
		}
	}
}

ncc_status_t ncc_interp_call(ncc_interp_t *ip, const ncc_comp_t *c, const ncc_value_t *const *args,
			     int32_t nargs, ncc_value_t **out)
{
	*out = NULL;
	if (!c || !c->root || c->ninsts <= 0)
		return ncc_error_set(ip->err, NCC_ERR_INVALID, 0, 0, "computation '%s' has no root",
				     c ? c->name : "?");
	if (ip->depth >= NCC_INTERP_MAX_DEPTH)
		return ncc_error_set(ip->err, NCC_ERR_LIMIT, c->line, 0,
				     "computation '%s': calls nested deeper than %d", c->name,
				     NCC_INTERP_MAX_DEPTH);
	if (nargs != c->nparams)
		return ncc_error_set(ip->err, NCC_ERR_INVALID, c->line, 0,
				     "computation '%s' takes %d arguments, got %d", c->name, c->nparams, nargs);
	for (int32_t k = 0; k < nargs; k++) {
		const ncc_inst_t *p = c->params[k];
		if (!p || !args[k] || !shapes_compatible(&p->shape, args[k])) {
			char want[256] = "?", got[256] = "?";
			if (p)
				ncc_shape_to_string(&p->shape, false, want, sizeof(want));
			if (args[k])
				ncc_shape_to_string(&args[k]->shape, false, got, sizeof(got));
			return ncc_error_set(ip->err, NCC_ERR_INVALID, p ? p->line : 0, 0,
					     "computation '%s' parameter %d: expected %s, got %s%s", c->name, k,
					     want, got, args[k] && args[k]->shape.etype == NCC_TUPLE ? " (tuple)" : "");
		}
	}

	frame_t fr = {c, calloc((size_t)c->ninsts, sizeof(slot_t)), -1};
	if (!fr.slots)
		return NCC_ERR_NOMEM;
	int32_t root_pos = inst_pos(c, c->root, c->ninsts - 1);
	if (root_pos < 0) {
		free(fr.slots);
		return ncc_error_set(ip->err, NCC_ERR_INVALID, c->line, 0,
				     "computation '%s': root is not in its instruction list", c->name);
	}
	/* only instructions the root depends on run (dead code has no observable effect);
	 * uses count the live users so every value is freed after its last use */
	fr.root_pos = root_pos;
	fr.slots[root_pos].uses = 1;
	for (int32_t i = root_pos; i >= 0; i--) {
		if (fr.slots[i].uses == 0)
			continue;
		const ncc_inst_t *inst = c->insts[i];
		for (int32_t k = 0; k < inst->noperands; k++) {
			int32_t p = inst_pos(c, inst->operands[k], i - 1);
			if (p >= 0)
				fr.slots[p].uses++;
		}
	}

	ip->depth++;
	ncc_status_t st = NCC_OK;
	for (int32_t i = 0; i <= root_pos; i++) {
		const ncc_inst_t *inst = c->insts[i];
		if (fr.slots[i].uses == 0)
			continue;
		ncc_value_t *v = NULL;
#ifdef NCC_INTERP_PROFILE
		uint64_t t0 = ns_monotonic_ns();
#endif
		st = eval_inst(ip, &fr, i, args, &v);
#ifdef NCC_INTERP_PROFILE
		double dt = (double)(ns_monotonic_ns() - t0) * 1e-9;
		if (dt > 0.05)
			fprintf(stderr, "[interp] %.3fs %s\n", dt, inst->text ? inst->text : inst->name);
#endif
		if (st != NCC_OK)
			break;
		if (ip->opts.perturb_ulps > 0 && ip->scalar_depth == 0 && rounds_result(inst))
			ncc_ivalue_perturb(ip, v);
		fr.slots[i].v = v;
		fr.slots[i].owned = inst->op != NCC_OP_PARAMETER;
		release_operands(ip, &fr, i);
	}
	ip->depth--;

	if (st == NCC_OK) {
		slot_t *r = &fr.slots[root_pos];
		if (!r->v)
			st = NCC_ERR_INTERNAL;
		else if (r->owned) {
			*out = r->v;
			r->v = NULL;
			r->owned = false;
		} else {
			st = ncc_value_clone(r->v, out);
		}
	}
	for (int32_t i = 0; i < c->ninsts; i++)
		if (fr.slots[i].owned)
			ncc_ivalue_free(ip, fr.slots[i].v);
	free(fr.slots);
	return st;
}

/* ------------------------------------------------------------ entry points */

static void init_interp(ncc_interp_t *ip, const ncc_interp_options_t *opts, ncc_error_t *err)
{
	memset(ip, 0, sizeof(*ip));
	if (opts)
		ip->opts = *opts;
	ip->perturb_state = ip->opts.perturb_seed;
	ip->err = err;
	ip->call = ncc_interp_call;
	if (err) {
		err->status = NCC_OK;
		err->msg[0] = 0;
	}
}

ncc_status_t ncc_interp_run_comp(const ncc_comp_t *c, const ncc_value_t *const *args,
				 int32_t nargs, const ncc_interp_options_t *opts,
				 ncc_value_t **out_result, ncc_error_t *err)
{
	ncc_error_t local;
	if (!out_result)
		return NCC_ERR_INVALID;
	*out_result = NULL;
	if (!c || (nargs > 0 && !args))
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_interp_run: no computation or arguments");
	ncc_interp_t ip;
	init_interp(&ip, opts, err ? err : &local);
	ncc_status_t st = ncc_interp_call(&ip, c, args, nargs, out_result);
	ncc_interp_pool_drain(&ip);
	if (st != NCC_OK && ip.err->status == NCC_OK)
		ncc_error_set(ip.err, st, 0, 0, "interpreter: %s", ncc_status_name(st));
	return st;
}

ncc_status_t ncc_interp_run(const ncc_module_t *m, const ncc_value_t *const *args, int32_t nargs,
			    const ncc_interp_options_t *opts, ncc_value_t **out_result,
			    ncc_error_t *err)
{
	if (!out_result)
		return NCC_ERR_INVALID;
	*out_result = NULL;
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_interp_run: module has no entry computation");
	return ncc_interp_run_comp(m->entry, args, nargs, opts, out_result, err);
}

ncc_status_t ncc_interp_eval_inst(const ncc_inst_t *inst, const ncc_value_t *const *ops,
				  const ncc_shape_t *shape, ncc_value_t **out_value, ncc_error_t *err)
{
	ncc_error_t local;
	if (!out_value)
		return NCC_ERR_INVALID;
	*out_value = NULL;
	if (!inst || (inst->noperands > 0 && !ops))
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_interp_eval_inst: no instruction or operands");
	const char *why = NULL;
	/* only the self-contained evaluators: no called computation, no frame */
	ncc_eval_fn fn = eval_fn_for(inst->op);
	if (!fn || inst->op == NCC_OP_MAP || !ncc_interp_supports(inst, &why))
		return ncc_error_set(err, NCC_ERR_UNSUPPORTED, 0, 0, "'%s': %s", inst->name,
				     why ? why : "not evaluated on its own");
	ncc_interp_t ip;
	init_interp(&ip, NULL, err ? err : &local);
	ncc_value_t *res;
	ncc_status_t st = ncc_ivalue_alloc(&ip, shape ? shape : &inst->shape, &res);
	if (st == NCC_OK) {
		st = fn(&ip, inst, ops, res);
		if (st == NCC_OK)
			*out_value = res;
		else
			ncc_ivalue_free(&ip, res);
	}
	ncc_interp_pool_drain(&ip);
	if (st != NCC_OK && ip.err->status == NCC_OK)
		ncc_error_set(ip.err, st, 0, 0, "interpreter: %s", ncc_status_name(st));
	return st;
}

ncc_status_t ncc_interp_random_args(const ncc_module_t *m, uint64_t seed,
				    ncc_value_t ***out_args, int32_t *out_nargs)
{
	*out_args = NULL;
	*out_nargs = 0;
	if (!m || !m->entry)
		return NCC_ERR_INVALID;
	const ncc_comp_t *c = m->entry;
	ncc_value_t **args = calloc((size_t)(c->nparams ? c->nparams : 1), sizeof(*args));
	if (!args)
		return NCC_ERR_NOMEM;
	for (int32_t k = 0; k < c->nparams; k++) {
		ncc_status_t st = c->params[k] ? ncc_value_alloc(&c->params[k]->shape, &args[k])
					       : NCC_ERR_INVALID;
		if (st != NCC_OK) {
			ncc_interp_free_args(args, c->nparams);
			return st;
		}
		ncc_value_fill_random(args[k], seed + (uint64_t)k);
	}
	*out_args = args;
	*out_nargs = c->nparams;
	return NCC_OK;
}

/* ------------------------------------------------------------ model-like arguments */

typedef enum arg_role {
	ROLE_RANDOM = 0, /* ncc_value_fill_random */
	ROLE_ONE,
	ROLE_ZERO,
	ROLE_FAN_IN,     /* uniform in +-1/sqrt(fan_in) */
	ROLE_RELU6_MAX,  /* 6 */
	ROLE_KEEP_PROB,  /* 0.8 */
} arg_role_t;

typedef struct arg_plan {
	arg_role_t role;
	int64_t fan_in;
} arg_plan_t;

/* The instruction x stands for once views and conversions are looked through. */
static const ncc_inst_t *look_through(const ncc_inst_t *x)
{
	while (x && x->noperands == 1) {
		switch (x->op) {
		case NCC_OP_RESHAPE: case NCC_OP_BITCAST: case NCC_OP_BROADCAST: case NCC_OP_TRANSPOSE:
		case NCC_OP_COPY: case NCC_OP_CONVERT: case NCC_OP_REVERSE:
			x = x->operands[0];
			continue;
		default:
			return x;
		}
	}
	return x;
}

/* Records role r for the parameter behind operand k of inst (first role wins). */
static void plan_role(arg_plan_t *plan, const ncc_comp_t *c, const ncc_inst_t *inst, int32_t k,
		      arg_role_t r, int64_t fan_in)
{
	if (k >= inst->noperands)
		return;
	const ncc_inst_t *p = look_through(inst->operands[k]);
	if (!p || p->op != NCC_OP_PARAMETER || p->parameter_number < 0 ||
	    p->parameter_number >= c->nparams || plan[p->parameter_number].role != ROLE_RANDOM)
		return;
	if (!ncc_etype_is_float(p->shape.etype))
		return;
	plan[p->parameter_number].role = r;
	plan[p->parameter_number].fan_in = fan_in;
}

static bool is_zero_scalar_constant(const ncc_inst_t *x)
{
	x = look_through(x);
	return x && x->op == NCC_OP_CONSTANT && x->shape.rank == 0 && x->literal.data &&
	       ncc_literal_get_f64(&x->literal, 0) == 0.0;
}

/* Batch norm's per-feature operands: scale 1, offset 0, mean 0, variance 1. */
static const struct {
	ncc_opcode_t op;
	int32_t operand;
	arg_role_t role;
} k_bn_roles[] = {
	{ NCC_OP_BATCH_NORM_TRAINING, 1, ROLE_ONE },  { NCC_OP_BATCH_NORM_TRAINING, 2, ROLE_ZERO },
	{ NCC_OP_BATCH_NORM_INFERENCE, 1, ROLE_ONE }, { NCC_OP_BATCH_NORM_INFERENCE, 2, ROLE_ZERO },
	{ NCC_OP_BATCH_NORM_INFERENCE, 3, ROLE_ZERO }, { NCC_OP_BATCH_NORM_INFERENCE, 4, ROLE_ONE },
	{ NCC_OP_BATCH_NORM_GRAD, 1, ROLE_ONE },      { NCC_OP_BATCH_NORM_GRAD, 2, ROLE_ZERO },
	{ NCC_OP_BATCH_NORM_GRAD, 3, ROLE_ONE },
};

static void plan_model_roles(const ncc_comp_t *c, arg_plan_t *plan)
{
	for (int32_t i = 0; i < c->ninsts; i++) {
		const ncc_inst_t *in = c->insts[i];
		for (size_t k = 0; k < sizeof(k_bn_roles) / sizeof(k_bn_roles[0]); k++)
			if (k_bn_roles[k].op == in->op)
				plan_role(plan, c, in, k_bn_roles[k].operand, k_bn_roles[k].role, 0);
		switch (in->op) {
		case NCC_OP_CONVOLUTION: {
			if (in->noperands < 2 || !in->conv)
				break;
			const ncc_shape_t *k = &in->operands[1]->shape;
			const ncc_conv_dnums_t *dn = in->conv;
			if (dn->k_in_feature < 0 || dn->k_in_feature >= k->rank)
				break;
			int64_t fan_in = k->dims[dn->k_in_feature];
			for (int32_t s = 0; s < dn->nspatial; s++)
				if (dn->k_spatial[s] >= 0 && dn->k_spatial[s] < k->rank)
					fan_in *= k->dims[dn->k_spatial[s]];
			if (fan_in > 0)
				plan_role(plan, c, in, 1, ROLE_FAN_IN, fan_in);
			break;
		}
		case NCC_OP_CLAMP: {
			/* clamp(lo, x, hi): a scalar hi over a constant-0 lo is ReLU6's 6 */
			const ncc_inst_t *hi = in->noperands == 3 ? look_through(in->operands[2]) : NULL;
			if (hi && hi->shape.rank == 0 && is_zero_scalar_constant(in->operands[0]))
				plan_role(plan, c, in, 2, ROLE_RELU6_MAX, 0);
			break;
		}
		case NCC_OP_COMPARE: {
			/* dropout: uniform < keep_prob keeps an element (then divides by it) */
			const ncc_inst_t *t = in->noperands == 2 ? look_through(in->operands[1]) : NULL;
			if (in->cmp_dir == NCC_CMP_LT && t && t->shape.rank == 0 &&
			    ncc_etype_is_float(t->shape.etype))
				plan_role(plan, c, in, 1, ROLE_KEEP_PROB, 0);
			break;
		}
		default:
			break;
		}
	}
}

ncc_status_t ncc_interp_model_args(const ncc_module_t *m, uint64_t seed,
				   ncc_value_t ***out_args, int32_t *out_nargs)
{
	ncc_status_t st = ncc_interp_random_args(m, seed, out_args, out_nargs);
	if (st != NCC_OK)
		return st;
	const ncc_comp_t *c = m->entry;
	arg_plan_t *plan = calloc((size_t)(c->nparams ? c->nparams : 1), sizeof(*plan));
	if (!plan) {
		ncc_interp_free_args(*out_args, *out_nargs);
		*out_args = NULL;
		*out_nargs = 0;
		return NCC_ERR_NOMEM;
	}
	plan_model_roles(c, plan);
	for (int32_t k = 0; k < c->nparams; k++) {
		ncc_value_t *v = (*out_args)[k];
		int64_t n = ncc_value_elements(v);
		switch (plan[k].role) {
		case ROLE_ONE: case ROLE_ZERO: case ROLE_RELU6_MAX: case ROLE_KEEP_PROB: {
			static const double value[] = {
				[ROLE_ONE] = 1.0, [ROLE_ZERO] = 0.0, [ROLE_RELU6_MAX] = 6.0,
				[ROLE_KEEP_PROB] = 0.8,
			};
			double x = value[plan[k].role];
			for (int64_t i = 0; i < n; i++)
				ncc_value_set_f64(v, i, x);
			break;
		}
		case ROLE_FAN_IN: {
			double b = 1.0 / sqrt((double)plan[k].fan_in);
			ncc_value_fill_random_range(v, seed + (uint64_t)k, -b, b);
			break;
		}
		default:
			break;
		}
	}
	free(plan);
	return NCC_OK;
}

void ncc_interp_free_args(ncc_value_t **args, int32_t nargs)
{
	if (!args)
		return;
	for (int32_t k = 0; k < nargs; k++)
		ncc_value_free(args[k]);
	free(args);
}
