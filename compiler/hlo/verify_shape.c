/* ncc verifier: data movement (broadcast, reshape, transpose, reverse, slices, concatenate, pad, iota, gather, scatter, tuples). */
#include "verify_internal.h"

ncc_status_t vf_broadcast(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape, *r = &in->shape;
	CHECK(a->etype == r->etype, "result type %s differs from operand type %s",
	      ncc_etype_name(r->etype), ncc_etype_name(a->etype));
	CHECK(in->dimensions.present, "missing dimensions=");
	CHECK(in->dimensions.n == a->rank, "dimensions has %d entries for an operand of rank %d",
	      (int)in->dimensions.n, (int)a->rank);
	TRY(vf_check_dim_list(v, in, &in->dimensions, r->rank, "dimensions"));
	for (int32_t i = 0; i < a->rank; i++) {
		int64_t d = in->dimensions.v[i];
		/* HLO (unlike the XLA builder) has no degenerate broadcasting: sizes match */
		CHECK(a->dims[i] == r->dims[d],
		      "operand dimension %d (size %lld) maps to result dimension %lld of size %lld",
		      (int)i, (long long)a->dims[i], (long long)d, (long long)r->dims[d]);
	}
	return NCC_OK;
}

ncc_status_t vf_reshape(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_array_io(v, in, 1, "operand", NULL));
	const ncc_shape_t *a = &in->operands[0]->shape, *r = &in->shape;
	CHECK(a->etype == r->etype, "result type %s differs from operand type %s",
	      ncc_etype_name(r->etype), ncc_etype_name(a->etype));
	CHECK(ncc_shape_elements(a) == ncc_shape_elements(r),
	      "operand %s has %lld elements, result %s has %lld", vf_sh(a),
	      (long long)ncc_shape_elements(a), vf_sh(r), (long long)ncc_shape_elements(r));
	return NCC_OK;
}

ncc_status_t vf_transpose(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 1));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	CHECK(in->dimensions.present && in->dimensions.n == a->rank,
	      "dimensions must be a permutation of the operand's %d dimensions", (int)a->rank);
	TRY(vf_check_dim_list(v, in, &in->dimensions, a->rank, "dimensions"));
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		want.dims[i] = a->dims[in->dimensions.v[i]];
		want.dynamic[i] = a->dynamic[in->dimensions.v[i]];
	}
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_reverse(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 1));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	CHECK(in->dimensions.present, "missing dimensions=");
	TRY(vf_check_dim_list(v, in, &in->dimensions, a->rank, "dimensions"));
	return vf_expect_shape(v, in, a);
}

ncc_status_t vf_slice(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 1));
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	CHECK(in->slice, "missing slice=");
	CHECK(in->slice->n == a->rank, "slice has %d dimensions, operand has rank %d",
	      (int)in->slice->n, (int)a->rank);
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		const ncc_slice_dim_t *d = &in->slice->dims[i];
		CHECK(d->stride >= 1, "slice stride %lld in dimension %d must be >= 1",
		      (long long)d->stride, (int)i);
		CHECK(d->start >= 0 && d->start <= d->limit && d->limit <= a->dims[i],
		      "slice [%lld:%lld] out of bounds for dimension %d of size %lld",
		      (long long)d->start, (long long)d->limit, (int)i, (long long)a->dims[i]);
		want.dims[i] = (d->limit - d->start + d->stride - 1) / d->stride;
	}
	return vf_expect_shape(v, in, &want);
}

static ncc_status_t check_index_scalars(vctx_t *v, const ncc_inst_t *in, int32_t first, int32_t rank)
{
	CHECK(in->noperands == first + rank, "expects %d scalar index operands, has %d", (int)rank,
	      (int)(in->noperands - first));
	for (int32_t i = first; i < in->noperands; i++) {
		const ncc_shape_t *s = &in->operands[i]->shape;
		CHECK(vf_is_scalar(s) && ncc_etype_is_integral(s->etype),
		      "index operand %d must be an integer scalar, is %s", (int)i, vf_sh(s));
	}
	return NCC_OK;
}

ncc_status_t vf_dynamic_slice(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "missing operand");
	const ncc_shape_t *a = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	TRY(check_index_scalars(v, in, 1, a->rank));
	CHECK(in->dynamic_slice_sizes.present && in->dynamic_slice_sizes.n == a->rank,
	      "dynamic_slice_sizes must have %d entries", (int)a->rank);
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		int64_t s = in->dynamic_slice_sizes.v[i];
		CHECK(s >= 0 && s <= a->dims[i], "slice size %lld out of bounds for dimension %d of size %lld",
		      (long long)s, (int)i, (long long)a->dims[i]);
		want.dims[i] = s;
	}
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_dynamic_update_slice(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 2, "missing operand or update");
	const ncc_shape_t *a = &in->operands[0]->shape, *u = &in->operands[1]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	TRY(vf_need_array(v, in, u, "update"));
	TRY(check_index_scalars(v, in, 2, a->rank));
	CHECK(u->rank == a->rank && u->etype == a->etype, "update %s does not match operand %s", vf_sh(u), vf_sh(a));
	for (int32_t i = 0; i < a->rank; i++)
		CHECK(u->dims[i] <= a->dims[i], "update dimension %d (%lld) exceeds operand's (%lld)",
		      (int)i, (long long)u->dims[i], (long long)a->dims[i]);
	return vf_expect_shape(v, in, a);
}

ncc_status_t vf_concatenate(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 1, "needs at least one operand");
	const ncc_shape_t *a0 = &in->operands[0]->shape;
	TRY(vf_need_array(v, in, a0, "operand"));
	CHECK(in->dimensions.present && in->dimensions.n == 1, "dimensions must hold one dimension");
	int64_t d = in->dimensions.v[0];
	CHECK(d >= 0 && d < a0->rank, "dimension %lld out of range for rank %d", (long long)d, (int)a0->rank);
	ncc_shape_t want = *a0;
	want.has_layout = false;
	want.dims[d] = 0;
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_shape_t *a = &in->operands[i]->shape;
		TRY(vf_need_array(v, in, a, "operand"));
		CHECK(a->rank == a0->rank && a->etype == a0->etype, "operand %d %s does not match operand 0 %s",
		      (int)i, vf_sh(a), vf_sh(a0));
		for (int32_t k = 0; k < a->rank; k++)
			CHECK(k == d || a->dims[k] == a0->dims[k],
			      "operand %d differs from operand 0 in dimension %d (%lld vs %lld)", (int)i,
			      (int)k, (long long)a->dims[k], (long long)a0->dims[k]);
		want.dims[d] += a->dims[d];
	}
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_pad(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 2));
	const ncc_shape_t *a = &in->operands[0]->shape, *pv = &in->operands[1]->shape;
	TRY(vf_need_array(v, in, a, "operand"));
	CHECK(vf_is_scalar(pv) && pv->etype == a->etype, "padding value must be a %s scalar, is %s",
	      ncc_etype_name(a->etype), vf_sh(pv));
	CHECK(in->padding, "missing padding=");
	CHECK(in->padding->n == a->rank, "padding has %d dimensions, operand has rank %d",
	      (int)in->padding->n, (int)a->rank);
	ncc_shape_t want = *a;
	want.has_layout = false;
	for (int32_t i = 0; i < a->rank; i++) {
		const ncc_pad_dim_t *p = &in->padding->dims[i];
		CHECK(p->interior >= 0, "interior padding %lld in dimension %d is negative",
		      (long long)p->interior, (int)i);
		int64_t sz = a->dims[i] + p->lo + p->hi + (a->dims[i] > 0 ? (a->dims[i] - 1) * p->interior : 0);
		CHECK(sz >= 0, "padding makes dimension %d negative (%lld)", (int)i, (long long)sz);
		want.dims[i] = sz;
	}
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_iota(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 0));
	TRY(vf_need_array(v, in, &in->shape, "result"));
	CHECK(in->shape.rank >= 1, "result must have rank >= 1");
	CHECK(in->iota_dimension >= 0 && in->iota_dimension < in->shape.rank,
	      "iota_dimension %lld out of range for rank %d", (long long)in->iota_dimension,
	      (int)in->shape.rank);
	CHECK(in->shape.etype != NCC_PRED, "iota of pred");
	return NCC_OK;
}

/* The indices operand (named what) of a gather or scatter into operand a: integers,
 * index_vector_dim ivd in [0, rank], and `map` (named map_name) naming one operand
 * dim per index-vector entry. */
static ncc_status_t check_indices(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *a,
				  const ncc_shape_t *idx, const char *what, int64_t ivd,
				  const ncc_ilist_t *map, const char *map_name)
{
	TRY(vf_need_array(v, in, a, "operand"));
	TRY(vf_need_array(v, in, idx, what));
	CHECK(ncc_etype_is_integral(idx->etype), "%s must be integers, are %s", what,
	      ncc_etype_name(idx->etype));
	CHECK(ivd >= 0 && ivd <= idx->rank, "index_vector_dim %lld out of range for indices of rank %d",
	      (long long)ivd, (int)idx->rank);
	int64_t ivsize = ivd == idx->rank ? 1 : idx->dims[ivd];
	CHECK(map->n == ivsize, "%s has %d entries, index vector has %lld", map_name, (int)map->n,
	      (long long)ivsize);
	return vf_check_dim_list(v, in, map, a->rank, map_name);
}

/* The operand dims a gather/scatter window leaves out: the collapsed (inserted) ones,
 * sorted, and the batching ones. */
static ncc_status_t check_dropped_dims(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *a,
				       const ncc_ilist_t *dropped, const char *dropped_name,
				       const ncc_ilist_t *batching, const char *batching_name)
{
	TRY(vf_check_dim_list(v, in, dropped, a->rank, dropped_name));
	TRY(vf_check_dim_list(v, in, batching, a->rank, batching_name));
	CHECK(vf_sorted(dropped), "%s must be sorted", dropped_name);
	return NCC_OK;
}

/* The result of an op over n operands that returns values of their shapes (sort,
 * scatter): operand 0's shape, or the tuple of the first n operands' shapes. */
ncc_status_t vf_expect_operand_shapes(vctx_t *v, const ncc_inst_t *in, int32_t n)
{
	if (n == 1)
		return vf_expect_shape(v, in, &in->operands[0]->shape);
	CHECK(in->shape.etype == NCC_TUPLE && in->shape.nelems == n, "result must be a tuple of %d", (int)n);
	for (int32_t k = 0; k < n; k++)
		CHECK(ncc_shape_equal(&in->shape.elems[k], &in->operands[k]->shape, false),
		      "result element %d differs from operand %d", (int)k, (int)k);
	return NCC_OK;
}

ncc_status_t vf_gather(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 2));
	const ncc_shape_t *a = &in->operands[0]->shape, *idx = &in->operands[1]->shape;
	const ncc_gather_dnums_t *g = in->gather;
	CHECK(g, "missing gather dimension numbers");
	int64_t ivd = g->index_vector_dim;
	TRY(check_indices(v, in, a, idx, "start_indices", ivd, &g->start_index_map, "start_index_map"));
	TRY(check_dropped_dims(v, in, a, &g->collapsed_slice_dims, "collapsed_slice_dims",
			       &g->operand_batching_dims, "operand_batching_dims"));
	CHECK(vf_sorted(&g->offset_dims), "offset_dims must be sorted");
	CHECK(g->slice_sizes.n == a->rank, "slice_sizes has %d entries, operand has rank %d",
	      (int)g->slice_sizes.n, (int)a->rank);
	for (int32_t i = 0; i < a->rank; i++)
		CHECK(g->slice_sizes.v[i] >= 0 && g->slice_sizes.v[i] <= a->dims[i],
		      "slice_sizes[%d] = %lld out of bounds for dimension size %lld", (int)i,
		      (long long)g->slice_sizes.v[i], (long long)a->dims[i]);
	for (int32_t i = 0; i < g->collapsed_slice_dims.n; i++)
		CHECK(g->slice_sizes.v[g->collapsed_slice_dims.v[i]] <= 1,
		      "collapsed dimension %lld has slice size %lld, must be <= 1",
		      (long long)g->collapsed_slice_dims.v[i],
		      (long long)g->slice_sizes.v[g->collapsed_slice_dims.v[i]]);
	int32_t batch_rank = idx->rank - (ivd < idx->rank ? 1 : 0);
	int32_t out_rank = batch_rank + g->offset_dims.n;
	CHECK(g->offset_dims.n == a->rank - g->collapsed_slice_dims.n - g->operand_batching_dims.n,
	      "offset_dims has %d entries, expected operand rank %d - collapsed %d - batching %d",
	      (int)g->offset_dims.n, (int)a->rank, (int)g->collapsed_slice_dims.n,
	      (int)g->operand_batching_dims.n);
	CHECK(out_rank <= NCC_MAX_RANK, "result rank %d too large", (int)out_rank);
	TRY(vf_check_dim_list(v, in, &g->offset_dims, out_rank, "offset_dims"));
	ncc_shape_t want = ncc_shape_scalar(a->etype);
	want.rank = out_rank;
	int32_t oi = 0, bi = 0;
	for (int32_t i = 0; i < out_rank; i++) {
		if (vf_in_list(&g->offset_dims, i)) {
			while (oi < a->rank && (vf_in_list(&g->collapsed_slice_dims, oi) ||
						vf_in_list(&g->operand_batching_dims, oi)))
				oi++;
			want.dims[i] = g->slice_sizes.v[oi++];
		} else {
			if (bi == ivd)
				bi++;
			want.dims[i] = idx->dims[bi++];
		}
	}
	return vf_expect_shape(v, in, &want);
}

ncc_status_t vf_scatter(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->noperands >= 3 && in->noperands % 2 == 1,
	      "expects N operands, indices and N updates, has %d operands", (int)in->noperands);
	int32_t n = (in->noperands - 1) / 2;
	CHECK(n <= 64, "too many operands");
	const ncc_shape_t *a = &in->operands[0]->shape, *idx = &in->operands[n]->shape;
	const ncc_scatter_dnums_t *s = in->scatter;
	CHECK(s, "missing scatter dimension numbers");
	int64_t ivd = s->index_vector_dim;
	TRY(check_indices(v, in, a, idx, "scatter_indices", ivd, &s->scatter_dims_to_operand_dims,
			  "scatter_dims_to_operand_dims"));
	TRY(check_dropped_dims(v, in, a, &s->inserted_window_dims, "inserted_window_dims",
			       &s->input_batching_dims, "input_batching_dims"));
	CHECK(vf_sorted(&s->update_window_dims), "update_window_dims must be sorted");
	CHECK(s->update_window_dims.n + s->inserted_window_dims.n + s->input_batching_dims.n == a->rank,
	      "update_window_dims (%d) + inserted_window_dims (%d) + input_batching_dims (%d) must equal operand rank %d",
	      (int)s->update_window_dims.n, (int)s->inserted_window_dims.n,
	      (int)s->input_batching_dims.n, (int)a->rank);
	int32_t scatter_rank = idx->rank - (ivd < idx->rank ? 1 : 0);
	ncc_etype_t types[64];
	for (int32_t k = 0; k < n; k++) {
		const ncc_shape_t *op = &in->operands[k]->shape, *u = &in->operands[n + 1 + k]->shape;
		TRY(vf_need_array(v, in, op, "operand"));
		TRY(vf_need_array(v, in, u, "updates"));
		CHECK(vf_same_dims(op, a), "operands %s and %s differ", vf_sh(a), vf_sh(op));
		CHECK(u->etype == op->etype, "updates type %s differs from operand type %s",
		      ncc_etype_name(u->etype), ncc_etype_name(op->etype));
		CHECK(u->rank == scatter_rank + s->update_window_dims.n,
		      "updates rank %d, expected %d scatter dims + %d window dims", (int)u->rank,
		      (int)scatter_rank, (int)s->update_window_dims.n);
		TRY(vf_check_dim_list(v, in, &s->update_window_dims, u->rank, "update_window_dims"));
		int32_t oi = 0, bi = 0;
		for (int32_t i = 0; i < u->rank; i++) {
			if (vf_in_list(&s->update_window_dims, i)) {
				while (oi < a->rank && (vf_in_list(&s->inserted_window_dims, oi) ||
							vf_in_list(&s->input_batching_dims, oi)))
					oi++;
				CHECK(oi < a->rank && u->dims[i] <= a->dims[oi],
				      "update window dimension %d (size %lld) exceeds operand dimension %d",
				      (int)i, (long long)u->dims[i], (int)oi);
				oi++;
			} else {
				if (bi == ivd)
					bi++;
				CHECK(bi < idx->rank && u->dims[i] == idx->dims[bi],
				      "update scatter dimension %d (size %lld) does not match indices dimension %d",
				      (int)i, (long long)u->dims[i], (int)bi);
				bi++;
			}
		}
		types[k] = op->etype;
	}
	TRY(vf_check_reducer(v, in, in->to_apply, n, types));
	return vf_expect_operand_shapes(v, in, n);
}

ncc_status_t vf_tuple(vctx_t *v, const ncc_inst_t *in)
{
	CHECK(in->shape.etype == NCC_TUPLE, "result must be a tuple, is %s", vf_sh(&in->shape));
	CHECK(in->shape.nelems == in->noperands, "result tuple has %d elements, %d operands",
	      (int)in->shape.nelems, (int)in->noperands);
	for (int32_t i = 0; i < in->noperands; i++)
		CHECK(ncc_shape_equal(&in->shape.elems[i], &in->operands[i]->shape, false),
		      "tuple element %d is %s but operand %d is %s", (int)i, vf_sh(&in->shape.elems[i]),
		      (int)i, vf_sh(&in->operands[i]->shape));
	return NCC_OK;
}

ncc_status_t vf_gte(vctx_t *v, const ncc_inst_t *in)
{
	TRY(vf_need_operands(v, in, 1));
	const ncc_shape_t *t = &in->operands[0]->shape;
	CHECK(t->etype == NCC_TUPLE, "operand must be a tuple, is %s", vf_sh(t));
	CHECK(in->tuple_index >= 0 && in->tuple_index < t->nelems,
	      "index %lld out of range for a tuple of %d elements", (long long)in->tuple_index,
	      (int)t->nelems);
	return vf_expect_shape(v, in, &t->elems[in->tuple_index]);
}

