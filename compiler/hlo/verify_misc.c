/* ncc verifier: called computations (while, conditional, call, fusion, map, sort), constants, rng and collectives. */
#include "verify_internal.h"

ncc_status_t vf_while(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 1));
	const ncc_shape_t *init = &in->operands[0]->shape, *ps[1] = { init };
	ncc_shape_t pr = ncc_shape_scalar(NCC_PRED);
	TRY(vf_check_called(v, in, in->condition, "condition", 1, ps, &pr));
	TRY(vf_check_called(v, in, in->body, "body", 1, ps, init));
	return vf_expect_shape(v, in, init);
}

ncc_status_t vf_conditional(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->nbranches >= 1, "missing branch computations");
	CHECK(in->noperands == 1 + in->nbranches, "expects %d operands (selector + one per branch), has %d",
	      (int)(1 + in->nbranches), (int)in->noperands);
	const ncc_shape_t *p = &in->operands[0]->shape;
	if (in->branches_are_pred)
		CHECK(vf_is_scalar(p) && p->etype == NCC_PRED, "predicate must be pred[], is %s", vf_sh(p));
	else
		CHECK(vf_is_scalar(p) && (p->etype == NCC_S32 || p->etype == NCC_PRED),
		      "branch index must be s32[], is %s", vf_sh(p));
	for (int32_t i = 0; i < in->nbranches; i++) {
		const ncc_shape_t *ps[1] = { &in->operands[i + 1]->shape };
		TRY(vf_check_called(v, in, in->branches[i], "branch", 1, ps, &in->shape));
	}
	return NCC_OK;
}

ncc_status_t vf_call_like(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c, const char *role)
{
	CHECK(in->noperands <= 4096, "too many operands");
	const ncc_shape_t *ps[4096];
	for (int32_t i = 0; i < in->noperands; i++)
		ps[i] = &in->operands[i]->shape;
	return vf_check_called(v, in, c, role, in->noperands, ps, &in->shape);
}

ncc_status_t vf_map(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1 && in->noperands <= 64, "expects 1..64 operands");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	ncc_shape_t sc[64];
	const ncc_shape_t *ps[64];
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape;
		TRY(vf_need_array(v, in, a, "operand"));
		CHECK(vf_same_dims(a, a0), "operands %s and %s differ in dimensions", vf_sh(a0), vf_sh(a));
		sc[i] = ncc_shape_scalar(a->etype);
		ps[i] = &sc[i];
	}
	TRY(vf_check_called(v, in, in->to_apply, "to_apply", in->noperands, ps, NULL));
	CHECK(vf_same_dims(&in->shape, a0), "result %s differs in dimensions from operands %s",
	      vf_sh(&in->shape), vf_sh(a0));
	return NCC_OK;
}

ncc_status_t vf_sort(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1 && in->noperands <= 64, "expects 1..64 operands");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a0, "operand"));
	CHECK(in->dimensions.present && in->dimensions.n == 1, "dimensions must hold one dimension");
	TRY(vf_check_dim_list(v, in, &in->dimensions, a0->rank, "dimensions"));
	ncc_shape_t sc[128];
	const ncc_shape_t *ps[128];
	int32_t n = in->noperands;
	for (int32_t i = 0; i < n; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape;
		TRY(vf_need_array(v, in, a, "operand"));
		CHECK(vf_same_dims(a, a0), "operands %s and %s differ in dimensions", vf_sh(a0), vf_sh(a));
		sc[2 * i] = sc[2 * i + 1] = ncc_shape_scalar(a->etype);
		ps[2 * i] = &sc[2 * i];
		ps[2 * i + 1] = &sc[2 * i + 1];
	}
	ncc_shape_t pr = ncc_shape_scalar(NCC_PRED);
	TRY(vf_check_called(v, in, in->to_apply, "comparator", 2 * n, ps, &pr));
	return vf_expect_operand_shapes(v, in, n);
}

ncc_status_t vf_constant(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 0));
	CHECK(in->literal.present, "constant without a literal");
	if (in->shape.etype == NCC_TUPLE)
		return NCC_OK;
	TRY(vf_need_array(v, in, &in->shape, "result"));
	CHECK(in->literal.etype == in->shape.etype, "literal type %s differs from shape type %s",
	      ncc_etype_name(in->literal.etype), ncc_etype_name(in->shape.etype));
	if (!in->literal.elided) {
		int64_t n = ncc_shape_elements(&in->shape);
		CHECK(in->literal.count == n, "literal has %lld elements, shape %s has %lld",
		      (long long)in->literal.count, vf_sh(&in->shape), (long long)n);
		CHECK(in->literal.nbytes == (size_t)n * ncc_etype_storage_bytes(in->shape.etype),
		      "literal buffer has the wrong size");
		CHECK(n == 0 || in->literal.data, "literal has no data");
	}
	return NCC_OK;
}

ncc_status_t vf_rng_bit_generator(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 1));
	const ncc_shape_t *st = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, st, "state"));
	CHECK(in->shape.etype == NCC_TUPLE && in->shape.nelems == 2,
	      "result must be a (state, bits) tuple, is %s", vf_sh(&in->shape));
	CHECK(ncc_shape_equal(&in->shape.elems[0], st, false), "result state %s differs from input state %s",
	      vf_sh(&in->shape.elems[0]), vf_sh(st));
	CHECK(ncc_shape_is_array(&in->shape.elems[1]) &&
	      (ncc_etype_is_integral(in->shape.elems[1].etype)),
	      "generated bits must be an integer array, are %s", vf_sh(&in->shape.elems[1]));
	return NCC_OK;
}

ncc_status_t vf_rng(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 2));
	CHECK(in->distribution != NCC_RNG_DIST_NONE, "missing distribution=");
	for (int i = 0; i < 2; i++) {
		const ncc_shape_t *s = &in->operands[i]->shape;
		CHECK(vf_is_scalar(s) && s->etype == in->shape.etype, "parameter %d must be a %s scalar, is %s",
		      i, ncc_etype_name(in->shape.etype), vf_sh(s));
	}
	return NCC_OK;
}

ncc_status_t vf_same_as_operand(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "missing operand");
	return vf_expect_shape(v, in, &in->operands[0]->shape);
}

ncc_status_t vf_all_reduce(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1 && in->noperands <= 64, "expects 1..64 operands");
	ncc_etype_t types[64];
	for (int32_t i = 0; i < in->noperands; i++) {
		TRY(vf_need_array(v, in, &in->operands[i]->shape, "operand"));
		types[i] = in->operands[i]->shape.etype;
	}
	/* the reducer combines one element at a time, whatever the operand count */
	TRY(vf_check_reducer(v, in, in->to_apply, 1, types));
	if (in->noperands == 1)
		return vf_expect_shape(v, in, &in->operands[0]->shape);
	CHECK(in->shape.etype == NCC_TUPLE && in->shape.nelems == in->noperands,
	      "result must be a tuple of %d", (int)in->noperands);
	return NCC_OK;
}

ncc_status_t vf_gather_scatter_collective(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "missing operand");
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	if (in->op != NCC_OP_ALL_TO_ALL || in->dimensions.present) {
		CHECK(in->dimensions.present && in->dimensions.n == 1, "dimensions must hold one dimension");
		int64_t d = in->dimensions.v[0];
		CHECK(d >= 0 && d < a->rank, "dimension %lld out of range for rank %d", (long long)d, (int)a->rank);
		if (ncc_shape_is_array(&in->shape)) {
			CHECK(in->shape.rank == a->rank, "result rank %d differs from operand rank %d",
			      (int)in->shape.rank, (int)a->rank);
			for (int32_t i = 0; i < a->rank; i++)
				CHECK(i == d || in->shape.dims[i] == a->dims[i],
				      "result differs from operand in dimension %d", (int)i);
		}
	}
	if (in->op == NCC_OP_REDUCE_SCATTER) {
		ncc_etype_t t = a->etype;
		TRY(vf_check_reducer(v, in, in->to_apply, 1, &t));
	}
	return NCC_OK;
}

ncc_status_t vf_fusion(vctx_t *v, const ncc_inst_t *in)
{
	return vf_call_like(v, in, in->calls, "fused");
}

