/* ncc verifier: contractions and reductions (dot, convolution, reduce, reduce-window, select-and-scatter, batch norm). */
#include "verify_internal.h"

ncc_status_t vf_dot(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 2, "lhs", "rhs"));
	const ncc_shape_t *a = &in->operands[0]->shape, *b = &in->operands[1]->shape;
	static const ncc_dot_dnums_t none;
	const ncc_dot_dnums_t *d = in->dot ? in->dot : &none;
	CHECK(d->lhs_batch.n == d->rhs_batch.n, "lhs_batch_dims has %d entries, rhs_batch_dims %d",
	      (int)d->lhs_batch.n, (int)d->rhs_batch.n);
	CHECK(d->lhs_contracting.n == d->rhs_contracting.n,
	      "lhs_contracting_dims has %d entries, rhs_contracting_dims %d",
	      (int)d->lhs_contracting.n, (int)d->rhs_contracting.n);
	TRY(vf_check_dim_list(v, in, &d->lhs_batch, a->rank, "lhs_batch_dims"));
	TRY(vf_check_dim_list(v, in, &d->rhs_batch, b->rank, "rhs_batch_dims"));
	TRY(vf_check_dim_list(v, in, &d->lhs_contracting, a->rank, "lhs_contracting_dims"));
	TRY(vf_check_dim_list(v, in, &d->rhs_contracting, b->rank, "rhs_contracting_dims"));
	for (int32_t i = 0; i < d->lhs_batch.n; i++) {
		CHECK(!vf_in_list(&d->lhs_contracting, d->lhs_batch.v[i]),
		      "lhs dimension %lld is both batch and contracting", (long long)d->lhs_batch.v[i]);
		CHECK(!vf_in_list(&d->rhs_contracting, d->rhs_batch.v[i]),
		      "rhs dimension %lld is both batch and contracting", (long long)d->rhs_batch.v[i]);
		CHECK(a->dims[d->lhs_batch.v[i]] == b->dims[d->rhs_batch.v[i]],
		      "lhs batch dim %lld has size %lld but rhs batch dim %lld has size %lld",
		      (long long)d->lhs_batch.v[i], (long long)a->dims[d->lhs_batch.v[i]],
		      (long long)d->rhs_batch.v[i], (long long)b->dims[d->rhs_batch.v[i]]);
	}
	for (int32_t i = 0; i < d->lhs_contracting.n; i++)
		CHECK(a->dims[d->lhs_contracting.v[i]] == b->dims[d->rhs_contracting.v[i]],
		      "lhs contracting dim %lld has size %lld but rhs contracting dim %lld has size %lld",
		      (long long)d->lhs_contracting.v[i], (long long)a->dims[d->lhs_contracting.v[i]],
		      (long long)d->rhs_contracting.v[i], (long long)b->dims[d->rhs_contracting.v[i]]);
	ncc_shape_t want = ncc_shape_scalar(in->shape.etype); /* result type may be widened */
	want.has_layout = false;
	int r = 0;
	for (int32_t i = 0; i < d->lhs_batch.n; i++)
		want.dims[r++] = a->dims[d->lhs_batch.v[i]];
	for (int32_t i = 0; i < a->rank; i++)
		if (!vf_in_list(&d->lhs_batch, i) && !vf_in_list(&d->lhs_contracting, i) && r < NCC_MAX_RANK)
			want.dims[r++] = a->dims[i];
	for (int32_t i = 0; i < b->rank; i++)
		if (!vf_in_list(&d->rhs_batch, i) && !vf_in_list(&d->rhs_contracting, i)) {
			CHECK(r < NCC_MAX_RANK, "result rank exceeds %d", NCC_MAX_RANK);
			want.dims[r++] = b->dims[i];
		}
	want.rank = r;
	CHECK(in->nprecision == 0 || in->nprecision == 2, "operand_precision has %d entries, expected 2",
	      (int)in->nprecision);
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_convolution(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 2, "input", "kernel"));
	const ncc_shape_t *x = &in->operands[0]->shape, *k = &in->operands[1]->shape;
	const ncc_conv_dnums_t *c = in->conv;
	CHECK(c, "missing dim_labels=");
	int n = c->nspatial;
	CHECK(x->rank == n + 2, "input rank %d does not match dim_labels with %d spatial dims",
	      (int)x->rank, n);
	CHECK(k->rank == n + 2, "kernel rank %d does not match dim_labels with %d spatial dims",
	      (int)k->rank, n);
	CHECK(in->shape.rank == n + 2, "result rank %d does not match dim_labels with %d spatial dims",
	      (int)in->shape.rank, n);
	int32_t wn = in->window ? in->window->n : 0;
	CHECK(wn == n, "window has %d dimensions, dim_labels has %d spatial dims", (int)wn, n);
	int64_t fgc = in->feature_group_count, bgc = in->batch_group_count;
	CHECK(fgc >= 1 && bgc >= 1, "feature_group_count and batch_group_count must be >= 1");
	CHECK(fgc == 1 || bgc == 1, "feature_group_count and batch_group_count cannot both exceed 1");
	int64_t in_b = x->dims[c->in_batch], in_f = x->dims[c->in_feature];
	int64_t k_i = k->dims[c->k_in_feature], k_o = k->dims[c->k_out_feature];
	CHECK(in_f % fgc == 0, "input features %lld not divisible by feature_group_count %lld",
	      (long long)in_f, (long long)fgc);
	CHECK(in_f / fgc == k_i,
	      "input features %lld / feature_group_count %lld != kernel input features %lld",
	      (long long)in_f, (long long)fgc, (long long)k_i);
	CHECK(k_o % fgc == 0, "kernel output features %lld not divisible by feature_group_count %lld",
	      (long long)k_o, (long long)fgc);
	CHECK(in_b % bgc == 0, "input batch %lld not divisible by batch_group_count %lld",
	      (long long)in_b, (long long)bgc);
	CHECK(k_o % bgc == 0, "kernel output features %lld not divisible by batch_group_count %lld",
	      (long long)k_o, (long long)bgc);
	ncc_shape_t want = ncc_shape_scalar(in->shape.etype);
	want.rank = n + 2;
	want.dims[c->out_batch] = in_b / bgc;
	want.dims[c->out_feature] = k_o;
	for (int i = 0; i < n; i++) {
		const ncc_window_dim_t *w = &in->window->dims[i];
		CHECK(w->size == k->dims[c->k_spatial[i]],
		      "window size %lld in spatial dim %d differs from kernel size %lld",
		      (long long)w->size, i, (long long)k->dims[c->k_spatial[i]]);
		TRY(vf_window_out(v, in, x->dims[c->in_spatial[i]], w, i, &want.dims[c->out_spatial[i]]));
	}
	return vf_expect_shape(v, in, &want);
}

/* The operands of a reduce or reduce-window: N inputs of one dims, then N init
 * values, each a scalar of its input's type. *out_n = N, types[i] = input i's type. */
static ncc_status_t check_reduce_operands(vctx_t *v, const ncc_inst_t *in, int32_t *out_n,
					  ncc_etype_t *types)
{
	CHECK(in->noperands >= 2 && in->noperands % 2 == 0,
	      "expects N inputs and N init values, has %d operands", (int)in->noperands);
	int32_t n = in->noperands / 2;
	CHECK(n <= 64, "too many inputs");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	for (int32_t i = 0; i < n; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape, *init = &in->operands[n + i]->shape;
		TRY(vf_need_array(v, in, a, "input"));
		CHECK(vf_same_dims(a, a0), "inputs %s and %s differ in dimensions", vf_sh(a0), vf_sh(a));
		CHECK(vf_is_scalar(init), "init value %d must be a scalar, is %s", (int)i, vf_sh(init));
		CHECK(init->etype == a->etype, "init value %d type %s differs from input type %s", (int)i,
		      ncc_etype_name(init->etype), ncc_etype_name(a->etype));
		types[i] = a->etype;
	}
	*out_n = n;
	return NCC_OK;
}

/* The reducer over types[0..n) and the result: one array of dims' dims per reduced
 * value (of its type), a tuple of them when n > 1. */
static ncc_status_t expect_reduce_result(vctx_t *v, const ncc_inst_t *in, int32_t n,
					 const ncc_etype_t *types, const ncc_shape_t *dims)
{
	TRY(vf_check_reducer(v, in, in->to_apply, n, types));
	ncc_shape_t outs[64];
	for (int32_t i = 0; i < n; i++) {
		outs[i] = *dims;
		outs[i].etype = types[i];
	}
	ncc_shape_t want = vf_one_or_tuple(n, outs);
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_reduce(vctx_t *v, const ncc_inst_t *in)
{
	int32_t n;
	ncc_etype_t types[64];
	TRY(check_reduce_operands(v, in, &n, types));
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	CHECK(in->dimensions.present, "missing dimensions=");
	TRY(vf_check_dim_list(v, in, &in->dimensions, a0->rank, "dimensions"));
	ncc_shape_t o = ncc_shape_scalar(types[0]);
	int r = 0;
	for (int32_t d = 0; d < a0->rank; d++)
		if (!vf_in_list(&in->dimensions, d))
			o.dims[r++] = a0->dims[d];
	o.rank = r;
	return expect_reduce_result(v, in, n, types, &o);
}

ncc_status_t vf_reduce_window(vctx_t *v, const ncc_inst_t *in)
{
	int32_t n;
	ncc_etype_t types[64];
	TRY(check_reduce_operands(v, in, &n, types));
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	CHECK(in->window && in->window->n == a0->rank, "window must have %d dimensions, has %d",
	      (int)a0->rank, in->window ? (int)in->window->n : 0);
	ncc_shape_t o = ncc_shape_scalar(types[0]);
	o.rank = a0->rank;
	for (int32_t d = 0; d < a0->rank; d++)
		TRY(vf_window_out(v, in, a0->dims[d], &in->window->dims[d], d, &o.dims[d]));
	return expect_reduce_result(v, in, n, types, &o);
}

ncc_status_t vf_select_and_scatter(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 3));
	const ncc_shape_t *a = &in->operands[0]->shape, *src = &in->operands[1]->shape,
			  *init = &in->operands[2]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	TRY(vf_need_array(v, in, src, "source"));
	CHECK(vf_is_scalar(init) && init->etype == src->etype, "init value must be a %s scalar, is %s",
	      ncc_etype_name(src->etype), vf_sh(init));
	CHECK(in->window && in->window->n == a->rank, "window must have %d dimensions", (int)a->rank);
	ncc_shape_t w = ncc_shape_scalar(src->etype);
	w.rank = a->rank;
	for (int32_t d = 0; d < a->rank; d++)
		TRY(vf_window_out(v, in, a->dims[d], &in->window->dims[d], d, &w.dims[d]));
	CHECK(vf_same_dims(&w, src), "source %s does not match the windowed operand %s", vf_sh(src), vf_sh(&w));
	ncc_shape_t sa = ncc_shape_scalar(a->etype), ss = ncc_shape_scalar(src->etype),
		    pr = ncc_shape_scalar(NCC_PRED);
	const ncc_shape_t *sel[2] = { &sa, &sa }, *sct[2] = { &ss, &ss };
	TRY(vf_check_called(v, in, in->select, "select", 2, sel, &pr));
	TRY(vf_check_called(v, in, in->scatter_comp, "scatter", 2, sct, &ss));
	return vf_expect_shape(v, in, a);
}

ncc_status_t vf_batch_norm(vctx_t *v, const ncc_inst_t *in)
{
	int32_t want_ops = in->op == NCC_OP_BATCH_NORM_TRAINING ? 3 : 5;
	TRY(vf_need_operands(v, in, want_ops));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	CHECK(ncc_etype_is_float(a->etype), "operand must be floating point, is %s", ncc_etype_name(a->etype));
	CHECK(in->feature_index >= 0 && in->feature_index < a->rank,
	      "feature_index %lld out of range for rank %d", (long long)in->feature_index, (int)a->rank);
	int64_t f = a->dims[in->feature_index];
	ncc_shape_t vec = ncc_shape_array(a->etype, 1, &f);
	for (int32_t i = 1; i < want_ops; i++) {
		const ncc_shape_t *s = &in->operands[i]->shape;
		if (in->op == NCC_OP_BATCH_NORM_GRAD && i == 4) {
			CHECK(ncc_shape_equal(s, a, false), "grad_output %s must match operand %s", vf_sh(s), vf_sh(a));
			continue;
		}
		CHECK(ncc_shape_equal(s, &vec, false), "operand %d is %s, expected %s (feature dimension)",
		      (int)i, vf_sh(s), vf_sh(&vec));
	}
	if (in->op == NCC_OP_BATCH_NORM_INFERENCE)
		return vf_expect_shape(v, in, a);
	ncc_shape_t el[3] = { *a, vec, vec };
	ncc_shape_t t = vf_one_or_tuple(3, el);
	return vf_expect_shape(v, in, &t);
}

