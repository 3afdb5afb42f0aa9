/* ncc HloModuleProto decoder: windows, convolution/dot/gather/scatter dimension numbers, padding and slices of an instruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_proto_internal.h"

/* ---------------------------------------------------------------- schema */

static const hp_fdesc_t window_fields[] = {
	{ HPF_WINDOW_DIMENSIONS, "dimensions", HP_K_LEN },
};
static const hp_fdesc_t wdim_fields[] = {
	{ HPF_WDIM_SIZE, "size", HP_K_VARINT },
	{ HPF_WDIM_STRIDE, "stride", HP_K_VARINT },
	{ HPF_WDIM_PADDING_LOW, "padding_low", HP_K_VARINT },
	{ HPF_WDIM_PADDING_HIGH, "padding_high", HP_K_VARINT },
	{ HPF_WDIM_WINDOW_DILATION, "window_dilation", HP_K_VARINT },
	{ HPF_WDIM_BASE_DILATION, "base_dilation", HP_K_VARINT },
	{ HPF_WDIM_WINDOW_REVERSAL, "window_reversal", HP_K_VARINT },
};
static const hp_fdesc_t conv_fields[] = {
	{ HPF_CONV_KERNEL_INPUT_FEATURE, "kernel_input_feature_dimension", HP_K_VARINT },
	{ HPF_CONV_KERNEL_OUTPUT_FEATURE, "kernel_output_feature_dimension", HP_K_VARINT },
	{ HPF_CONV_KERNEL_SPATIAL, "kernel_spatial_dimensions", HP_K_REP_VARINT },
	{ HPF_CONV_INPUT_BATCH, "input_batch_dimension", HP_K_VARINT },
	{ HPF_CONV_INPUT_FEATURE, "input_feature_dimension", HP_K_VARINT },
	{ HPF_CONV_OUTPUT_BATCH, "output_batch_dimension", HP_K_VARINT },
	{ HPF_CONV_OUTPUT_FEATURE, "output_feature_dimension", HP_K_VARINT },
	{ HPF_CONV_INPUT_SPATIAL, "input_spatial_dimensions", HP_K_REP_VARINT },
	{ HPF_CONV_OUTPUT_SPATIAL, "output_spatial_dimensions", HP_K_REP_VARINT },
};
static const hp_fdesc_t dot_fields[] = {
	{ HPF_DOT_LHS_CONTRACTING, "lhs_contracting_dimensions", HP_K_REP_VARINT },
	{ HPF_DOT_RHS_CONTRACTING, "rhs_contracting_dimensions", HP_K_REP_VARINT },
	{ HPF_DOT_LHS_BATCH, "lhs_batch_dimensions", HP_K_REP_VARINT },
	{ HPF_DOT_RHS_BATCH, "rhs_batch_dimensions", HP_K_REP_VARINT },
};
static const hp_fdesc_t gather_fields[] = {
	{ HPF_GATHER_OFFSET_DIMS, "offset_dims", HP_K_REP_VARINT },
	{ HPF_GATHER_COLLAPSED_SLICE_DIMS, "collapsed_slice_dims", HP_K_REP_VARINT },
	{ HPF_GATHER_START_INDEX_MAP, "start_index_map", HP_K_REP_VARINT },
	{ HPF_GATHER_INDEX_VECTOR_DIM, "index_vector_dim", HP_K_VARINT },
	{ HPF_GATHER_OPERAND_BATCHING_DIMS, "operand_batching_dims", HP_K_REP_VARINT },
	{ HPF_GATHER_START_INDICES_BATCHING_DIMS, "start_indices_batching_dims", HP_K_REP_VARINT },
};
static const hp_fdesc_t scatter_fields[] = {
	{ HPF_SCATTER_UPDATE_WINDOW_DIMS, "update_window_dims", HP_K_REP_VARINT },
	{ HPF_SCATTER_INSERTED_WINDOW_DIMS, "inserted_window_dims", HP_K_REP_VARINT },
	{ HPF_SCATTER_DIMS_TO_OPERAND_DIMS, "scatter_dims_to_operand_dims", HP_K_REP_VARINT },
	{ HPF_SCATTER_INDEX_VECTOR_DIM, "index_vector_dim", HP_K_VARINT },
	{ HPF_SCATTER_INPUT_BATCHING_DIMS, "input_batching_dims", HP_K_REP_VARINT },
	{ HPF_SCATTER_INDICES_BATCHING_DIMS, "scatter_indices_batching_dims", HP_K_REP_VARINT },
};
static const hp_fdesc_t padding_fields[] = {
	{ HPF_PADDING_DIMENSIONS, "dimensions", HP_K_LEN },
};
static const hp_fdesc_t pad_dim_fields[] = {
	{ HPF_PAD_EDGE_LOW, "edge_padding_low", HP_K_VARINT },
	{ HPF_PAD_EDGE_HIGH, "edge_padding_high", HP_K_VARINT },
	{ HPF_PAD_INTERIOR, "interior_padding", HP_K_VARINT },
};
static const hp_fdesc_t slice_fields[] = {
	{ HPF_SLICE_START, "start", HP_K_VARINT },
	{ HPF_SLICE_LIMIT, "limit", HP_K_VARINT },
	{ HPF_SLICE_STRIDE, "stride", HP_K_VARINT },
};

/* ------------------------------------------------- windows and dnums */

bool hp_window(hp_ctx_t *c, ncc_pb_reader_t r, ncc_window_t **out)
{
	ncc_window_t *w = ncc_alloc(c->m, sizeof(*w));
	if (!w)
		return hp_nomem(c);
	hp_iter_t it;
	ncc_pb_field_t f;
	int32_t n = 0;
	hp_iter_init(&it, r, HP_MSG(window_fields));
	while (hp_iter_next(c, &it, &f))
		if (++n > NCC_MAX_RANK)
			return hp_fail(c, NCC_ERR_LIMIT, "dimensions", -1, "more than %d window dimensions",
				       NCC_MAX_RANK);
	if (c->failed)
		return false;
	if (n && !(w->dims = ncc_alloc(c->m, sizeof(*w->dims) * (size_t)n)))
		return hp_nomem(c);
	int32_t k = 0;
	hp_iter_init(&it, r, HP_MSG(window_fields));
	while (hp_iter_next(c, &it, &f)) {
		ncc_window_dim_t *d = &w->dims[k];
		hp_iter_t dit;
		ncc_pb_field_t x;
		if (!hp_elem_begin(c, &f, "dimensions", k, HP_MSG(wdim_fields), &dit))
			return false;
		while (hp_iter_next(c, &dit, &x)) {
			int64_t v = (int64_t)x.value;
			switch (x.number) {
			case HPF_WDIM_SIZE: d->size = v; break;
			case HPF_WDIM_STRIDE: d->stride = v; break;
			case HPF_WDIM_PADDING_LOW: d->pad_lo = v; break;
			case HPF_WDIM_PADDING_HIGH: d->pad_hi = v; break;
			case HPF_WDIM_WINDOW_DILATION: d->rhs_dilation = v; break;
			case HPF_WDIM_BASE_DILATION: d->lhs_dilation = v; break;
			case HPF_WDIM_WINDOW_REVERSAL: d->reversal = x.value != 0; break;
			default: break;
			}
		}
		if (!hp_elem_end(c))
			return false;
		k++;
	}
	if (c->failed)
		return false;
	w->n = n;
	*out = w;
	return true;
}

/* One of the three label groups of dim_labels: the two named dimensions and the
 * spatial ones must be a permutation of 0..nspatial+1, or the printed labels would
 * not read back. */
static bool check_labels(hp_ctx_t *c, const char *what, int64_t a, int64_t b, const int64_t *sp,
			 int32_t nsp)
{
	bool seen[NCC_MAX_RANK] = { false };
	int32_t n = nsp + 2;
	int64_t all[NCC_MAX_RANK + 2];
	all[0] = a;
	all[1] = b;
	for (int32_t i = 0; i < nsp; i++)
		all[2 + i] = sp[i];
	for (int32_t i = 0; i < n; i++) {
		if (all[i] < 0 || all[i] >= n || seen[all[i]])
			return hp_fail(c, NCC_ERR_PARSE, NULL, -1,
				       "%s dimensions are not a permutation of 0..%d", what, (int)n - 1);
		seen[all[i]] = true;
	}
	return true;
}

bool hp_conv(hp_ctx_t *c, ncc_pb_reader_t r, ncc_conv_dnums_t **out)
{
	ncc_conv_dnums_t *d = ncc_alloc(c->m, sizeof(*d));
	if (!d)
		return hp_nomem(c);
	hp_msgdesc_t desc = HP_MSG(conv_fields);
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		int64_t v = (int64_t)f.value;
		switch (f.number) {
		case HPF_CONV_KERNEL_INPUT_FEATURE: d->k_in_feature = v; break;
		case HPF_CONV_KERNEL_OUTPUT_FEATURE: d->k_out_feature = v; break;
		case HPF_CONV_INPUT_BATCH: d->in_batch = v; break;
		case HPF_CONV_INPUT_FEATURE: d->in_feature = v; break;
		case HPF_CONV_OUTPUT_BATCH: d->out_batch = v; break;
		case HPF_CONV_OUTPUT_FEATURE: d->out_feature = v; break;
		default: break;
		}
	}
	if (c->failed)
		return false;
	int64_t *in, *k, *o;
	int32_t nin, nk, no;
	if (!hp_rep_i64(c, r, desc, HPF_CONV_INPUT_SPATIAL, NCC_MAX_RANK - 2, &in, &nin) ||
	    !hp_rep_i64(c, r, desc, HPF_CONV_KERNEL_SPATIAL, NCC_MAX_RANK - 2, &k, &nk) ||
	    !hp_rep_i64(c, r, desc, HPF_CONV_OUTPUT_SPATIAL, NCC_MAX_RANK - 2, &o, &no))
		return false;
	if (nin != nk || nin != no)
		return hp_fail(c, NCC_ERR_PARSE, NULL, -1,
			       "%d input, %d kernel and %d output spatial dimensions", (int)nin,
			       (int)nk, (int)no);
	d->nspatial = nin;
	for (int32_t i = 0; i < nin; i++) {
		d->in_spatial[i] = in[i];
		d->k_spatial[i] = k[i];
		d->out_spatial[i] = o[i];
	}
	if (!check_labels(c, "input", d->in_batch, d->in_feature, d->in_spatial, nin) ||
	    !check_labels(c, "kernel", d->k_in_feature, d->k_out_feature, d->k_spatial, nin) ||
	    !check_labels(c, "output", d->out_batch, d->out_feature, d->out_spatial, nin))
		return false;
	*out = d;
	return true;
}

/* XLA prints the batch lists only when not empty and the contracting ones always. */
bool hp_dot(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_dot_dnums_t **out)
{
	ncc_dot_dnums_t *d = ncc_alloc(c->m, sizeof(*d));
	if (!d)
		return hp_nomem(c);
	hp_msgdesc_t desc = HP_MSG(dot_fields);
	if (has && (!hp_rep_ilist(c, r, desc, HPF_DOT_LHS_CONTRACTING, &d->lhs_contracting) ||
		    !hp_rep_ilist(c, r, desc, HPF_DOT_RHS_CONTRACTING, &d->rhs_contracting) ||
		    !hp_rep_ilist(c, r, desc, HPF_DOT_LHS_BATCH, &d->lhs_batch) ||
		    !hp_rep_ilist(c, r, desc, HPF_DOT_RHS_BATCH, &d->rhs_batch)))
		return false;
	d->lhs_contracting.present = d->rhs_contracting.present = true;
	d->lhs_batch.present = d->lhs_batch.n > 0;
	d->rhs_batch.present = d->rhs_batch.n > 0;
	*out = d;
	return true;
}

bool hp_gather(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_gather_dnums_t **out)
{
	ncc_gather_dnums_t *g = ncc_alloc(c->m, sizeof(*g));
	if (!g)
		return hp_nomem(c);
	hp_msgdesc_t desc = HP_MSG(gather_fields);
	if (has) {
		hp_iter_t it;
		ncc_pb_field_t x;
		hp_iter_init(&it, r, desc);
		while (hp_iter_next(c, &it, &x))
			if (x.number == HPF_GATHER_INDEX_VECTOR_DIM)
				g->index_vector_dim = (int64_t)x.value;
		if (c->failed ||
		    !hp_rep_ilist(c, r, desc, HPF_GATHER_OFFSET_DIMS, &g->offset_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_GATHER_COLLAPSED_SLICE_DIMS, &g->collapsed_slice_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_GATHER_START_INDEX_MAP, &g->start_index_map) ||
		    !hp_rep_ilist(c, r, desc, HPF_GATHER_OPERAND_BATCHING_DIMS, &g->operand_batching_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_GATHER_START_INDICES_BATCHING_DIMS,
				  &g->start_indices_batching_dims))
			return false;
	}
	g->offset_dims.present = g->collapsed_slice_dims.present = g->start_index_map.present = true;
	g->operand_batching_dims.present = g->operand_batching_dims.n > 0;
	g->start_indices_batching_dims.present = g->start_indices_batching_dims.n > 0;
	*out = g;
	return true;
}

bool hp_scatter(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_scatter_dnums_t **out)
{
	ncc_scatter_dnums_t *s = ncc_alloc(c->m, sizeof(*s));
	if (!s)
		return hp_nomem(c);
	hp_msgdesc_t desc = HP_MSG(scatter_fields);
	if (has) {
		hp_iter_t it;
		ncc_pb_field_t x;
		hp_iter_init(&it, r, desc);
		while (hp_iter_next(c, &it, &x))
			if (x.number == HPF_SCATTER_INDEX_VECTOR_DIM)
				s->index_vector_dim = (int64_t)x.value;
		if (c->failed ||
		    !hp_rep_ilist(c, r, desc, HPF_SCATTER_UPDATE_WINDOW_DIMS, &s->update_window_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_SCATTER_INSERTED_WINDOW_DIMS, &s->inserted_window_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_SCATTER_DIMS_TO_OPERAND_DIMS,
				  &s->scatter_dims_to_operand_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_SCATTER_INPUT_BATCHING_DIMS, &s->input_batching_dims) ||
		    !hp_rep_ilist(c, r, desc, HPF_SCATTER_INDICES_BATCHING_DIMS,
				  &s->scatter_indices_batching_dims))
			return false;
	}
	s->update_window_dims.present = s->inserted_window_dims.present = true;
	s->scatter_dims_to_operand_dims.present = true;
	s->input_batching_dims.present = s->input_batching_dims.n > 0;
	s->scatter_indices_batching_dims.present = s->scatter_indices_batching_dims.n > 0;
	*out = s;
	return true;
}

bool hp_padding(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_padding_t **out)
{
	ncc_padding_t *p = ncc_alloc(c->m, sizeof(*p));
	if (!p || !(p->dims = ncc_alloc(c->m, sizeof(*p->dims) * NCC_MAX_RANK)))
		return hp_nomem(c);
	if (has) {
		hp_iter_t it;
		ncc_pb_field_t f;
		hp_iter_init(&it, r, HP_MSG(padding_fields));
		while (hp_iter_next(c, &it, &f)) {
			if (p->n >= NCC_MAX_RANK)
				return hp_fail(c, NCC_ERR_LIMIT, "dimensions", -1,
					       "more than %d padded dimensions", NCC_MAX_RANK);
			ncc_pad_dim_t *d = &p->dims[p->n];
			hp_iter_t dit;
			ncc_pb_field_t x;
			if (!hp_elem_begin(c, &f, "dimensions", p->n, HP_MSG(pad_dim_fields), &dit))
				return false;
			while (hp_iter_next(c, &dit, &x)) {
				if (x.number == HPF_PAD_EDGE_LOW)
					d->lo = (int64_t)x.value;
				else if (x.number == HPF_PAD_EDGE_HIGH)
					d->hi = (int64_t)x.value;
				else
					d->interior = (int64_t)x.value;
			}
			if (!hp_elem_end(c))
				return false;
			p->n++;
		}
		if (c->failed)
			return false;
	}
	*out = p;
	return true;
}

bool hp_slices(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_slice_t **out)
{
	ncc_slice_t *s = ncc_alloc(c->m, sizeof(*s));
	if (!s || !(s->dims = ncc_alloc(c->m, sizeof(*s->dims) * NCC_MAX_RANK)))
		return hp_nomem(c);
	hp_iter_t it;
	ncc_pb_field_t x;
	hp_iter_init(&it, f->msg, hp_inst_desc);
	while (hp_iter_next(c, &it, &x)) {
		if (x.number != HPF_INST_SLICE_DIMENSIONS)
			continue;
		if (s->n >= NCC_MAX_RANK)
			return hp_fail(c, NCC_ERR_LIMIT, "slice_dimensions", -1,
				       "more than %d sliced dimensions", NCC_MAX_RANK);
		ncc_slice_dim_t *d = &s->dims[s->n];
		hp_iter_t dit;
		ncc_pb_field_t y;
		if (!hp_elem_begin(c, &x, "slice_dimensions", s->n, HP_MSG(slice_fields), &dit))
			return false;
		while (hp_iter_next(c, &dit, &y)) {
			if (y.number == HPF_SLICE_START)
				d->start = (int64_t)y.value;
			else if (y.number == HPF_SLICE_LIMIT)
				d->limit = (int64_t)y.value;
			else
				d->stride = (int64_t)y.value;
		}
		if (!hp_elem_end(c))
			return false;
		s->n++;
	}
	if (c->failed)
		return false;
	*out = s;
	return true;
}
