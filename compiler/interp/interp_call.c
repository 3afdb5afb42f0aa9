/* ncc reference interpreter: called scalar computations, the runner the evaluators share (reduce, reduce-window, scatter, select-and-scatter, sort, map) and map itself. A computation other than one binary op of its parameters is evaluated by the driver through ncc_interp_t.call. */
#include <string.h>

#include "interp_internal.h"

ncc_status_t ncc_scalar_fn_init(ncc_scalar_fn_t *fn, ncc_interp_t *ip, const ncc_inst_t *user,
				const ncc_comp_t *comp, int32_t nargs, const ncc_etype_t *arg_types)
{
	memset(fn, 0, sizeof(*fn));
	fn->ip = ip;
	fn->user = user;
	fn->comp = comp;
	fn->op = NCC_OP_UNKNOWN;
	if (!comp || !comp->root)
		return ncc_interp_fail(ip, user, NCC_ERR_INVALID, "missing called computation");
	if (nargs > 8 || nargs != comp->nparams)
		return ncc_interp_fail(ip, user, NCC_ERR_INVALID,
				       "called computation '%s' takes %d parameters, expected %d",
				       comp->name, comp->nparams, nargs);
	fn->nargs = nargs;
	const ncc_inst_t *r = comp->root;
	if (nargs == 2 && r->noperands == 2 && r->shape.rank == 0 && r->op != NCC_OP_COMPARE &&
	    ncc_opcode_is_elementwise_binary(r->op) && ncc_elementwise_supported(r->op) &&
	    r->operands[0]->op == NCC_OP_PARAMETER && r->operands[1]->op == NCC_OP_PARAMETER &&
	    r->operands[0] != r->operands[1] && r->shape.etype == arg_types[0] &&
	    r->shape.etype == arg_types[1]) {
		fn->op = r->op;
		fn->swapped = r->operands[0]->parameter_number == 1;
		return NCC_OK;
	}
	for (int32_t k = 0; k < nargs; k++) {
		ncc_shape_t s = ncc_shape_scalar(arg_types[k]);
		ncc_status_t st = ncc_value_alloc(&s, &fn->args[k]);
		if (st != NCC_OK) {
			ncc_scalar_fn_fini(fn);
			return st;
		}
	}
	return NCC_OK;
}

void ncc_scalar_fn_fini(ncc_scalar_fn_t *fn)
{
	for (int32_t k = 0; k < 8; k++) {
		ncc_value_free(fn->args[k]);
		fn->args[k] = NULL;
	}
}

ncc_status_t ncc_scalar_fn_call(ncc_scalar_fn_t *fn, const void *const *in, void *const *out,
				int32_t nout)
{
	if (fn->op != NCC_OP_UNKNOWN) {
		ncc_etype_t t = fn->comp->root->shape.etype;
		const void *a = in[fn->swapped ? 1 : 0], *b = in[fn->swapped ? 0 : 1];
		ncc_binary_elem(fn->op, t, a, 0, b, 0, out[0], 0);
		return NCC_OK;
	}
	for (int32_t k = 0; k < fn->nargs; k++)
		memcpy(fn->args[k]->data, in[k], fn->args[k]->nbytes);
	ncc_value_t *r = NULL;
	fn->ip->scalar_depth++;
	ncc_status_t st = fn->ip->call(fn->ip, fn->comp, (const ncc_value_t *const *)fn->args,
					 fn->nargs, &r);
	fn->ip->scalar_depth--;
	if (st != NCC_OK)
		return st;
	if (r->shape.etype == NCC_TUPLE) {
		if (r->nelems < nout) {
			ncc_value_free(r);
			return ncc_interp_fail(fn->ip, fn->user, NCC_ERR_INVALID,
					       "called computation returns %d values, expected %d", r->nelems, nout);
		}
		for (int32_t k = 0; k < nout; k++)
			memcpy(out[k], r->elems[k]->data, r->elems[k]->nbytes);
	} else {
		if (nout != 1 || r->nbytes == 0) {
			ncc_value_free(r);
			return ncc_interp_fail(fn->ip, fn->user, NCC_ERR_INVALID,
					       "called computation returns one value, expected %d", nout);
		}
		memcpy(out[0], r->data, r->nbytes);
	}
	ncc_value_free(r);
	return NCC_OK;
}

ncc_status_t ncc_eval_map(ncc_interp_t *ip, const ncc_inst_t *inst,
			  const ncc_value_t *const *ops, ncc_value_t *out)
{
	int32_t n = inst->noperands;
	if (n > 8)
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED, "map with more than 8 operands");
	ncc_etype_t types[8];
	for (int32_t k = 0; k < n; k++)
		types[k] = ops[k]->shape.etype;
	ncc_scalar_fn_t fn;
	ncc_status_t st = ncc_scalar_fn_init(&fn, ip, inst, inst->to_apply, n, types);
	if (st != NCC_OK)
		return st;
	int64_t cnt = ncc_value_elements(out);
	size_t oes = ncc_etype_storage_bytes(out->shape.etype);
	for (int64_t i = 0; i < cnt && st == NCC_OK; i++) {
		const void *in[8];
		for (int32_t k = 0; k < n; k++)
			in[k] = (const char *)ops[k]->data + i * (int64_t)ncc_etype_storage_bytes(types[k]);
		void *o = (char *)out->data + i * (int64_t)oes;
		st = ncc_scalar_fn_call(&fn, in, &o, 1);
	}
	ncc_scalar_fn_fini(&fn);
	return st;
}
