/* Lowering of gpsimd work and special calls: iota, rng-bit-generator, gather/scatter (row forms), AwsNeuron custom-calls, single-replica collectives, replica-id. */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

static bool is_target(const ncc_inst_t *inst, const char *t)
{
	return inst->custom_call_target && strcmp(inst->custom_call_target, t) == 0;
}

/* Every replica group has one member (or there are none): collectives are copies. */
static bool single_replica(const ncc_inst_t *inst)
{
	const ncc_replica_groups_t *g = &inst->replica_groups;
	if (!g->present || g->ngroups == 0)
		return true;
	if (g->iota_text)
		return false;
	for (int32_t i = 0; i < g->ngroups; i++)
		if (g->group_sizes[i] > 1)
			return false;
	return true;
}

/* gather of whole slices along one operand dim d (index_select / embedding lookup /
 * take along any axis): one index per output position, every other dim taken whole. */
static bool gather_form(const ncc_inst_t *g, int64_t *out_d)
{
	const ncc_gather_dnums_t *dn = g->gather;
	if (!dn || g->noperands != 2)
		return false;
	const ncc_shape_t *op = &g->operands[0]->shape, *ix = &g->operands[1]->shape;
	if (dn->start_index_map.n != 1 || dn->operand_batching_dims.n || dn->start_indices_batching_dims.n)
		return false;
	int64_t d = dn->start_index_map.v[0];
	if (d < 0 || d >= op->rank)
		return false;
	if (dn->collapsed_slice_dims.n > 1 ||
	    (dn->collapsed_slice_dims.n == 1 && dn->collapsed_slice_dims.v[0] != d))
		return false;
	if (dn->slice_sizes.n != op->rank || dn->slice_sizes.v[d] != 1)
		return false;
	for (int32_t i = 0; i < op->rank; i++)
		if (i != d && dn->slice_sizes.v[i] != op->dims[i])
			return false;
	if (!(dn->index_vector_dim == ix->rank ||
	      (dn->index_vector_dim == ix->rank - 1 && ix->dims[ix->rank - 1] == 1)))
		return false;
	int32_t nwin = op->rank - dn->collapsed_slice_dims.n;
	if (dn->offset_dims.n != nwin)
		return false;
	*out_d = d;
	return true;
}

static int scatter_comb(const ncc_comp_t *c)
{
	if (c && c->root && c->root->op == NCC_OP_PARAMETER && c->root->parameter_number == 1)
		return ISA_RED_ASSIGN;
	return ncc_lower_combiner_of(c);
}

/* scatter of whole slices along one operand dim d (index_put / embedding gradient). */
static bool scatter_form(const ncc_inst_t *sc, int64_t *out_d)
{
	const ncc_scatter_dnums_t *dn = sc->scatter;
	if (!dn || sc->noperands != 3)
		return false;
	const ncc_shape_t *op = &sc->operands[0]->shape, *ix = &sc->operands[1]->shape,
			  *up = &sc->operands[2]->shape;
	if (dn->scatter_dims_to_operand_dims.n != 1 || dn->input_batching_dims.n ||
	    dn->scatter_indices_batching_dims.n)
		return false;
	int64_t d = dn->scatter_dims_to_operand_dims.v[0];
	if (d < 0 || d >= op->rank)
		return false;
	if (dn->inserted_window_dims.n > 1 ||
	    (dn->inserted_window_dims.n == 1 && dn->inserted_window_dims.v[0] != d))
		return false;
	if (!(dn->index_vector_dim == ix->rank ||
	      (dn->index_vector_dim == ix->rank - 1 && ix->dims[ix->rank - 1] == 1)))
		return false;
	int32_t nwin = op->rank - dn->inserted_window_dims.n;
	if (dn->update_window_dims.n != nwin)
		return false;
	/* window dims of the update, in operand order (skipping an inserted d), are whole */
	int32_t k = 0;
	for (int32_t i = 0; i < op->rank; i++) {
		if (i == d && dn->inserted_window_dims.n)
			continue;
		int64_t ud = dn->update_window_dims.v[k++];
		if (ud < 0 || ud >= up->rank || up->dims[ud] != (i == d ? 1 : op->dims[i]))
			return false;
	}
	*out_d = d;
	return true;
}

/* ---- XLA's general gather and scatter ----
 *
 * Any index vector length, partial slices (windows) on any dim, operand batching
 * dims. The operand (scatter: the output) is seen dense, row-major with element
 * strides S; every batch position b (the index dims but index_vector_dim) gets
 *     lin[b] = sum_k start_k(b) * S[start_index_map[k]] + sum_j b_j * S[batching_j]
 * (s64), the element offset of its window's first element; the table is then
 * [N, window dims...] with stride 1 along N (rows overlap) and S along the window
 * dims, so one GATHER (SCATTER) of rows [M, window...] at lin does the rest (ncc_
 * lower_rows splits window dims that do not fold). Gather starts are clamped to
 * [0, dim - slice size], as XLA does; a scatter window that does not fit is
 * skipped (lin = -1, outside the table), as XLA does. */

/* The index dims, window and batching dims of a gather or scatter, normalised. */
typedef struct gs_dnums {
	const ncc_ilist_t *map;        /* start_index_map / scatter_dims_to_operand_dims */
	const ncc_ilist_t *op_batch;   /* operand_batching_dims / input_batching_dims */
	const ncc_ilist_t *ix_batch;   /* start_indices_batching_dims / scatter_indices_batching_dims */
	const ncc_ilist_t *dropped;    /* collapsed_slice_dims / inserted_window_dims */
	const ncc_ilist_t *win;        /* offset_dims (output) / update_window_dims (updates) */
	int64_t ivd;                   /* index_vector_dim */
} gs_dnums_t;

static bool gs_dnums(const ncc_inst_t *inst, gs_dnums_t *g)
{
	if (inst->op == NCC_OP_GATHER && inst->gather) {
		const ncc_gather_dnums_t *d = inst->gather;
		*g = (gs_dnums_t){ &d->start_index_map, &d->operand_batching_dims,
				   &d->start_indices_batching_dims, &d->collapsed_slice_dims,
				   &d->offset_dims, d->index_vector_dim };
		return true;
	}
	if (inst->op == NCC_OP_SCATTER && inst->scatter) {
		const ncc_scatter_dnums_t *d = inst->scatter;
		*g = (gs_dnums_t){ &d->scatter_dims_to_operand_dims, &d->input_batching_dims,
				   &d->scatter_indices_batching_dims, &d->inserted_window_dims,
				   &d->update_window_dims, d->index_vector_dim };
		return true;
	}
	return false;
}

static bool in_ilist(const ncc_ilist_t *l, int64_t v)
{
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

/* A gather's output or a scatter's updates as rows (rows_view): v, [M, window...];
 * perm, the view with its window dims moved behind the others; tmp, v is a dense
 * temporary in perm's order (the batch dims did not fold), copied with rows_copy. */
typedef struct rows {
	ncc_view_t v, perm;
	bool tmp;
} rows_t;

static ncc_status_t rows_view(ncc_lower_ctx_t *ctx, const ncc_view_t *v, const gs_dnums_t *g, int64_t d,
			      rows_t *out);

/* Copies between the rows' temporary, when there is one, and the view it stands
 * for: out of it (a gather's result) or, with into, into it (a scatter's updates). */
static ncc_status_t rows_copy(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const rows_t *r, bool into)
{
	if (!r->tmp)
		return NCC_OK;
	ncc_view_t dense = ncc_view_dense(r->v.region, r->v.offset, r->v.dtype, r->perm.rank, r->perm.dims);
	return into ? ncc_lower_copy(ctx, inst, &dense, &r->perm) : ncc_lower_copy(ctx, inst, &r->perm, &dense);
}

/* A gather (2 operands) or single-operand scatter (3) whose dimension numbers
 * are in range, with integer indices. */
static bool general_form(const ncc_inst_t *inst)
{
	gs_dnums_t g;
	if (!gs_dnums(inst, &g) || inst->noperands != (inst->op == NCC_OP_GATHER ? 2 : 3) ||
	    inst->shape.etype == NCC_TUPLE)
		return false;
	const ncc_shape_t *op = &inst->operands[0]->shape, *ix = &inst->operands[1]->shape;
	if (!ncc_etype_is_integral(ix->etype) || g.ivd < 0 || g.ivd > ix->rank)
		return false;
	int64_t nvec = g.ivd < ix->rank ? ix->dims[g.ivd] : 1;
	if (g.map->n != nvec || g.op_batch->n != g.ix_batch->n)
		return false;
	for (int32_t k = 0; k < g.map->n; k++)
		if (g.map->v[k] < 0 || g.map->v[k] >= op->rank)
			return false;
	for (int32_t k = 0; k < g.op_batch->n; k++)
		if (g.op_batch->v[k] < 0 || g.op_batch->v[k] >= op->rank || g.ix_batch->v[k] < 0 ||
		    g.ix_batch->v[k] >= ix->rank || g.ix_batch->v[k] == g.ivd)
			return false;
	if (inst->op == NCC_OP_GATHER && inst->gather->slice_sizes.n != op->rank)
		return false;
	return true;
}

/* t (s64, dense [B]) = iota along batch dim j of B. */
static ncc_status_t iota_dim(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *t,
			     int32_t j)
{
	int64_t pre = 1, post = 1;
	for (int32_t i = 0; i < t->rank; i++) {
		if (i < j)
			pre *= t->dims[i];
		else if (i > j)
			post *= t->dims[i];
	}
	isa_insn_t in = isa_insn_init(ISA_OP_IOTA, 0);
	in.n_ap = 1;
	isa_ap_t *a = &in.ap[0];
	a->region = t->region;
	a->dtype = (uint8_t)t->dtype;
	a->offset = t->offset;
	a->rank = 3;
	a->shape[0] = (uint64_t)pre;
	a->stride[0] = t->dims[j] * post;
	a->shape[1] = (uint64_t)t->dims[j];
	a->stride[1] = post;
	a->shape[2] = (uint64_t)post;
	a->stride[2] = 1;
	in.param = 1;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &in, NULL);
}

static ncc_status_t alu_2(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t sub,
			  const ncc_view_t *dst, const ncc_view_t *a, const ncc_view_t *b)
{
	ncc_view_t in[2] = { *a, *b };
	return ncc_lower_alu(ctx, inst, sub, dst, 2, in);
}

/* lin (s64, dense over the index batch dims) for a gather (starts clamped to
 * [0, dims - wsize]) or a scatter (-1 where the window does not fit). dims: the
 * operand's, wsize: the window size per operand dim, S: its dense strides. */
static ncc_status_t gs_offsets(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const gs_dnums_t *g,
			       const int64_t *dims, const int64_t *wsize, const int64_t *S,
			       bool scatter, ncc_view_t *out_lin)
{
	ncc_view_t ix;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 1, &ix);
	if (st != NCC_OK)
		return st;
	int64_t bd[NCC_MAX_RANK];
	int32_t nb = 0, bpos[NCC_MAX_RANK]; /* index dim -> batch dim */
	for (int32_t d = 0; d < ix.rank; d++) {
		bpos[d] = d == g->ivd ? -1 : nb;
		if (d != g->ivd)
			bd[nb++] = ix.dims[d];
	}
	ncc_view_t lin, t, valid, v1, zero;
	st = ncc_lower_temp_view(ctx, ISA_DT_S64, nb, bd, &lin);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, nb, bd, &t);
	if (st == NCC_OK && scatter)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, nb, bd, &valid);
	if (st == NCC_OK && scatter)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, nb, bd, &v1);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, 0, &zero);
	if (st != NCC_OK)
		return st;
	ncc_view_t zb = ncc_view_bcast_scalar(&zero, nb, bd);
	st = ncc_lower_copy(ctx, inst, &lin, &zb);
	if (st == NCC_OK && scatter) {
		ncc_view_t one;
		st = ncc_lower_const_scalar(ctx, ISA_DT_PRED, 1, &one);
		ncc_view_t ob = ncc_view_bcast_scalar(&one, nb, bd);
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &valid, &ob);
	}
	int64_t es = (int64_t)isa_dtype_size(ix.dtype);
	for (int32_t k = 0; k < g->map->n && st == NCC_OK; k++) {
		int64_t d = g->map->v[k], hi = dims[d] - wsize[d];
		/* component k of every index vector, over the batch dims */
		ncc_view_t c = ix;
		if (g->ivd < ix.rank) {
			c.offset = (uint64_t)((int64_t)ix.offset + k * ix.strides[g->ivd] * es);
			int32_t r = 0;
			for (int32_t q = 0; q < ix.rank; q++)
				if (q != g->ivd) {
					c.dims[r] = ix.dims[q];
					c.strides[r++] = ix.strides[q];
				}
			c.rank = r;
		}
		ncc_view_t lo, hv, sv;
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, 0, &lo);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, ISA_DT_S64, (double)(hi > 0 ? hi : 0), &hv);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, ISA_DT_S64, (double)S[d], &sv);
		if (st == NCC_OK && c.dtype == ISA_DT_U64 && !scatter) {
			/* u64 starts beyond 2^63 must clamp high, not wrap negative */
			ncc_view_t hu = { 0 }, cu = { 0 };
			st = ncc_lower_const_scalar(ctx, ISA_DT_U64, (double)(hi > 0 ? hi : 0), &hu);
			if (st == NCC_OK)
				st = ncc_lower_temp_view(ctx, ISA_DT_U64, nb, bd, &cu);
			ncc_view_t hub = ncc_view_bcast_scalar(&hu, nb, bd);
			if (st == NCC_OK)
				st = alu_2(ctx, inst, ISA_ALU_MIN, &cu, &c, &hub);
			c = cu;
		}
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &t, &c);
		if (st != NCC_OK)
			break;
		ncc_view_t lob = ncc_view_bcast_scalar(&lo, nb, bd), hib = ncc_view_bcast_scalar(&hv, nb, bd);
		ncc_view_t sb = ncc_view_bcast_scalar(&sv, nb, bd);
		if (scatter) {
			/* fits: 0 <= start <= dims - wsize (hi < 0: never) */
			st = alu_2(ctx, inst, ISA_ALU_CMP_GE, &v1, &t, &lob);
			if (st == NCC_OK)
				st = alu_2(ctx, inst, ISA_ALU_AND, &valid, &valid, &v1);
			if (st == NCC_OK)
				st = alu_2(ctx, inst, hi >= 0 ? ISA_ALU_CMP_LE : ISA_ALU_CMP_LT, &v1, &t, &hib);
			if (st == NCC_OK)
				st = alu_2(ctx, inst, ISA_ALU_AND, &valid, &valid, &v1);
		} else {
			ncc_view_t in3[3] = { lob, t, hib };
			st = ncc_lower_alu(ctx, inst, ISA_ALU_CLAMP, &t, 3, in3);
		}
		if (st == NCC_OK && S[d] != 1)
			st = alu_2(ctx, inst, ISA_ALU_MUL, &t, &t, &sb);
		if (st == NCC_OK)
			st = alu_2(ctx, inst, ISA_ALU_ADD, &lin, &lin, &t);
	}
	for (int32_t k = 0; k < g->op_batch->n && st == NCC_OK; k++) {
		int64_t d = g->op_batch->v[k];
		int32_t j = bpos[g->ix_batch->v[k]];
		ncc_view_t sv;
		st = iota_dim(ctx, inst, &t, j);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, ISA_DT_S64, (double)S[d], &sv);
		ncc_view_t sb = ncc_view_bcast_scalar(&sv, nb, bd);
		if (st == NCC_OK && S[d] != 1)
			st = alu_2(ctx, inst, ISA_ALU_MUL, &t, &t, &sb);
		if (st == NCC_OK)
			st = alu_2(ctx, inst, ISA_ALU_ADD, &lin, &lin, &t);
	}
	if (st == NCC_OK && scatter) {
		ncc_view_t m1;
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, -1, &m1);
		ncc_view_t mb = ncc_view_bcast_scalar(&m1, nb, bd);
		ncc_view_t in3[3] = { valid, lin, mb };
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &lin, 3, in3);
	}
	*out_lin = lin;
	return st;
}

/* The dense operand (or output) as the [N, window dims...] table of the rows. */
static ncc_view_t gs_table(const ncc_view_t *dense, const gs_dnums_t *g, const int64_t *wsize,
			   const int64_t *S)
{
	ncc_view_t t = *dense;
	int64_t maxoff = 0;
	int32_t r = 1;
	for (int32_t d = 0; d < dense->rank; d++) {
		maxoff += (dense->dims[d] - wsize[d]) * S[d];
		if (in_ilist(g->dropped, d) || in_ilist(g->op_batch, d))
			continue;
		t.dims[r] = wsize[d];
		t.strides[r++] = S[d];
	}
	t.dims[0] = maxoff + 1;
	t.strides[0] = 1;
	if (r == 1) {
		t.dims[r] = 1;
		t.strides[r++] = 1;
	}
	t.rank = r;
	return t;
}

static ncc_status_t lower_gather_general(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const gs_dnums_t *g,
					 const ncc_view_t *op, const ncc_view_t *out)
{
	ncc_view_t dense;
	ncc_status_t st = ncc_lower_make_dense(ctx, inst, op, &dense);
	if (st != NCC_OK)
		return st;
	int64_t wsize[NCC_MAX_RANK], S[NCC_MAX_RANK];
	for (int32_t d = 0; d < dense.rank; d++) {
		wsize[d] = inst->gather->slice_sizes.v[d];
		S[d] = dense.strides[d];
	}
	ncc_view_t lin;
	st = gs_offsets(ctx, inst, g, dense.dims, wsize, S, false, &lin);
	if (st != NCC_OK)
		return st;
	rows_t rows;
	st = rows_view(ctx, out, g, -1, &rows);
	if (st != NCC_OK)
		return st;
	ncc_view_t t = gs_table(&dense, g, wsize, S);
	ncc_view_t l1 = ncc_view_dense(lin.region, lin.offset, ISA_DT_S64, 1, &rows.v.dims[0]);
	st = ncc_lower_rows(ctx, inst, -1, &t, &rows.v, &l1);
	if (st == NCC_OK)
		st = rows_copy(ctx, inst, &rows, false);
	return st;
}

/* out already holds the operand. */
static ncc_status_t lower_scatter_general(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const gs_dnums_t *g,
					  const ncc_view_t *upd, const ncc_view_t *out)
{
	/* the window size per operand dim: the update's window dims, 1 elsewhere */
	int64_t wsize[NCC_MAX_RANK], S[NCC_MAX_RANK];
	int32_t k = 0;
	for (int32_t d = 0; d < out->rank; d++) {
		S[d] = out->strides[d];
		wsize[d] = 1;
		if (in_ilist(g->dropped, d) || in_ilist(g->op_batch, d))
			continue;
		if (k < g->win->n)
			wsize[d] = upd->dims[g->win->v[k++]];
	}
	ncc_view_t lin;
	ncc_status_t st = gs_offsets(ctx, inst, g, out->dims, wsize, S, true, &lin);
	if (st != NCC_OK)
		return st;
	rows_t rows;
	st = rows_view(ctx, upd, g, -1, &rows);
	if (st == NCC_OK)
		st = rows_copy(ctx, inst, &rows, true);
	if (st != NCC_OK)
		return st;
	ncc_view_t t = gs_table(out, g, wsize, S);
	ncc_view_t l1 = ncc_view_dense(lin.region, lin.offset, ISA_DT_S64, 1, &rows.v.dims[0]);
	return ncc_lower_rows(ctx, inst, scatter_comb(inst->to_apply), &t, &rows.v, &l1);
}

bool ncc_lower_misc_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_IOTA:
		if (inst->shape.etype == NCC_PRED) {
			*out_reason = "unsupported pred iota";
			return false;
		}
		return true;
	case NCC_OP_RNG_BIT_GENERATOR:
		if (inst->shape.etype != NCC_TUPLE || inst->shape.nelems != 2 ||
		    (inst->shape.elems[1].etype != NCC_U32 && inst->shape.elems[1].etype != NCC_U64)) {
			*out_reason = "unsupported rng-bit-generator output (u32 or u64 bits only)";
			return false;
		}
		if (inst->noperands != 1 || inst->operands[0]->shape.etype != NCC_U64 ||
		    ncc_shape_elements(&inst->operands[0]->shape) != 2) {
			*out_reason = "unsupported rng-bit-generator state (u64[2] only)";
			return false;
		}
		return true;
	case NCC_OP_GATHER: {
		int64_t d;
		if (!gather_form(inst, &d) && !general_form(inst)) {
			*out_reason = "unsupported gather form (dimension numbers out of range)";
			return false;
		}
		return true;
	}
	case NCC_OP_SCATTER: {
		int64_t d;
		if (!scatter_form(inst, &d) && !general_form(inst)) {
			*out_reason = "unsupported scatter form (variadic, or dimension numbers out of range)";
			return false;
		}
		if (scatter_comb(inst->to_apply) < 0) {
			*out_reason = "unsupported scatter combiner";
			return false;
		}
		return true;
	}
	case NCC_OP_CUSTOM_CALL:
		if (is_target(inst, "AwsNeuronGelu") || is_target(inst, "AwsNeuronGeluBackward") ||
		    is_target(inst, "AwsNeuronSoftmax") || is_target(inst, "AwsNeuronSoftmaxBackward") ||
		    is_target(inst, "AwsNeuronTransferWithStaticRing") ||
		    is_target(inst, "AwsNeuronGeluApprxTanh") || is_target(inst, "AwsNeuronSilu") ||
		    is_target(inst, "AwsNeuronErf")) {
			if (inst->noperands < 1 || inst->shape.etype == NCC_TUPLE) {
				*out_reason = "unsupported custom-call signature";
				return false;
			}
			if (!is_target(inst, "AwsNeuronTransferWithStaticRing") &&
			    !ncc_etype_is_float(inst->shape.etype)) {
				*out_reason = "unsupported: this custom-call needs a floating-point element type";
				return false;
			}
			return true;
		}
		*out_reason = "unsupported custom-call target";
		return false;
	case NCC_OP_ALL_REDUCE: case NCC_OP_ALL_GATHER: case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_ALL_TO_ALL: case NCC_OP_COLLECTIVE_BROADCAST:
		if (!single_replica(inst)) {
			*out_reason = "unsupported collective over more than one replica";
			return false;
		}
		return true;
	case NCC_OP_REPLICA_ID:
	case NCC_OP_PARTITION_ID:
		return true;
	default:
		return false;
	}
}

static ncc_status_t lower_iota(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t out;
	ncc_status_t st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	/* keep the iota dim visible: fold the dims before and after it separately */
	int64_t d = inst->iota_dimension;
	int64_t pre = 1, post = 1;
	for (int32_t i = 0; i < out.rank; i++) {
		if (i < d)
			pre *= out.dims[i];
		else if (i > d)
			post *= out.dims[i];
	}
	isa_insn_t in = isa_insn_init(ISA_OP_IOTA, 0);
	in.n_ap = 1;
	isa_ap_t *a = &in.ap[0];
	a->region = out.region;
	a->dtype = (uint8_t)out.dtype;
	a->offset = out.offset;
	a->rank = out.rank == 0 ? 0 : 3;
	if (out.rank == 0) {
		in.param = 0;
		a->rank = 1;
		a->shape[0] = 1;
		a->stride[0] = 1;
		in.param = 0;
	} else {
		a->shape[0] = (uint64_t)pre;
		a->stride[0] = out.dims[d] * post;
		a->shape[1] = (uint64_t)out.dims[d];
		a->stride[1] = post;
		a->shape[2] = (uint64_t)post;
		a->stride[2] = 1;
		in.param = 1;
	}
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &in, NULL);
}

static ncc_status_t lower_rng(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t state, nstate, bits;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &state);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &nstate);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 1, &bits);
	if (st != NCC_OK)
		return st;
	if (ncc_view_elements(&state) != 2 || state.dtype != ISA_DT_U64)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
				      "unsupported rng-bit-generator state (u64[2] only)");
	ncc_view_t sd;
	st = ncc_lower_make_dense(ctx, inst, &state, &sd);
	if (st != NCC_OK)
		return st;
	int64_t two = 2, nb = ncc_view_elements(&bits);
	isa_insn_t in = isa_insn_init(ISA_OP_RNG, 0);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(bits.region, bits.offset, bits.dtype, nb ? 1 : 0, (uint64_t *)&nb);
	if (nb == 0) {
		/* no bits: the state passes through */
		return ncc_lower_copy(ctx, inst, &nstate, &sd);
	}
	ncc_view_t s1 = ncc_view_dense(sd.region, sd.offset, ISA_DT_U64, 1, &two);
	ncc_view_t s2 = ncc_view_dense(nstate.region, nstate.offset, ISA_DT_U64, 1, &two);
	if (ncc_lower_views_to_aps(1, &s1, &in.ap[1]) != NCC_OK ||
	    ncc_lower_views_to_aps(1, &s2, &in.ap[2]) != NCC_OK)
		return NCC_ERR_INTERNAL;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &in, NULL);
}

/* Index operand as a 1-D [M] view (its batch dims flattened). */
static ncc_status_t indices_1d(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t i,
			       int64_t m, ncc_view_t *out)
{
	ncc_view_t v;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, i, &v);
	if (st != NCC_OK)
		return st;
	if (!ncc_view_reshape(&v, 1, &m, out)) {
		ncc_view_t d;
		st = ncc_lower_make_dense(ctx, inst, &v, &d);
		if (st != NCC_OK)
			return st;
		*out = ncc_view_dense(d.region, d.offset, d.dtype, 1, &m);
	}
	if (out->dims[0] == 1)
		out->strides[0] = 1;
	return NCC_OK;
}

/* The view v with its window dims (g->win: offset dims, update window dims) moved
 * behind the others, the others folded into one leading dim of size m; when they
 * do not fold, a dense temporary in that order is used (out->tmp set, the caller
 * copies it back/in with rows_copy). d: the indexed dim of gather_form/scatter_form,
 * or -1; when it is not collapsed (inserted), it is a size-1 window dim of v and
 * left out of the rows. */
static ncc_status_t rows_view(ncc_lower_ctx_t *ctx, const ncc_view_t *v, const gs_dnums_t *g, int64_t d,
			      rows_t *out)
{
	bool win[NCC_MAX_RANK] = { false };
	for (int32_t i = 0; i < g->win->n; i++)
		win[g->win->v[i]] = true;
	int64_t skip = d >= 0 && g->dropped->n == 0 ? g->win->v[d] : -1;
	ncc_view_t p = *v;
	int32_t r = 0;
	int64_t m = 1;
	for (int32_t i = 0; i < v->rank; i++)
		if (!win[i]) {
			p.dims[r] = v->dims[i];
			p.strides[r++] = v->strides[i];
			m *= v->dims[i];
		}
	int32_t nb = r;
	for (int32_t i = 0; i < v->rank; i++)
		if (win[i] && i != skip) {
			p.dims[r] = v->dims[i];
			p.strides[r++] = v->strides[i];
		}
	p.rank = r;
	out->perm = p;
	/* fold the batch dims [0, nb) */
	ncc_view_t f = p;
	int64_t stride = 0;
	int32_t last = -1;
	bool ok = true;
	for (int32_t i = nb - 1; i >= 0; i--) {
		if (p.dims[i] == 1)
			continue;
		if (last < 0)
			stride = p.strides[i];
		else if (p.strides[i] != p.strides[last] * p.dims[last])
			ok = false;
		last = i;
	}
	out->tmp = !ok;
	if (!ok) {
		ncc_status_t st = ncc_lower_temp_view(ctx, v->dtype, p.rank, p.dims, &f);
		if (st != NCC_OK)
			return st;
		stride = 1;
		for (int32_t i = nb; i < p.rank; i++)
			stride *= p.dims[i];
	} else {
		f = p;
	}
	ncc_view_t o = f;
	o.rank = 1 + (r - nb);
	o.dims[0] = m;
	o.strides[0] = last < 0 && ok ? 1 : stride;
	for (int32_t i = nb; i < r; i++) {
		o.dims[1 + i - nb] = f.dims[i];
		o.strides[1 + i - nb] = f.strides[i];
	}
	if (o.rank == 1) {
		/* rank-1 rows: give them a unit row dim so the GATHER/SCATTER is [M, 1] */
		o.rank = 2;
		o.dims[1] = 1;
		o.strides[1] = 1;
	}
	out->v = o;
	return NCC_OK;
}

/* The table (operand) as [N, rest...] with the indexed dim d first; rank-1 tables get
 * a unit row dim. */
static ncc_view_t table_view(const ncc_view_t *v, int64_t d)
{
	ncc_view_t t = ncc_view_dim_to_front(v, (int32_t)d);
	if (t.rank == 1) {
		t.rank = 2;
		t.dims[1] = 1;
		t.strides[1] = 1;
	}
	return t;
}

/* gather_form and scatter_form, one index per row: the rows of v (a gather's output,
 * a scatter's updates) read from (written into) rows of table along d. A scatter's
 * table is its output, which already holds the operand. */
static ncc_status_t lower_rows_along(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const gs_dnums_t *g,
				     int64_t d, const ncc_view_t *table, const ncc_view_t *v)
{
	bool scatter = inst->op == NCC_OP_SCATTER;
	ncc_view_t idx;
	rows_t rows;
	ncc_status_t st = rows_view(ctx, v, g, d, &rows);
	if (st == NCC_OK && scatter)
		st = rows_copy(ctx, inst, &rows, true);
	if (st == NCC_OK)
		st = indices_1d(ctx, inst, 1, rows.v.dims[0], &idx);
	if (st != NCC_OK)
		return st;
	ncc_view_t t = table_view(table, d);
	st = ncc_lower_rows(ctx, inst, scatter ? scatter_comb(inst->to_apply) : -1, &t, &rows.v, &idx);
	if (st == NCC_OK && !scatter) /* the folded temporary back into the output's batch/offset order */
		st = rows_copy(ctx, inst, &rows, false);
	return st;
}

/* A gather: whole slices along one dim (gather_form) as rows, else XLA's general
 * gather. ncc_lower_misc_supports has accepted inst, so its dimension numbers are in
 * range. */
static ncc_status_t lower_gather(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t op, out;
	gs_dnums_t g;
	int64_t d;
	if (!gs_dnums(inst, &g))
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: gather without dimension numbers");
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &op);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	if (gather_form(inst, &d))
		return lower_rows_along(ctx, inst, &g, d, &op, &out);
	return lower_gather_general(ctx, inst, &g, &op, &out);
}

/* A scatter: out starts as a copy of the operand; then the same two forms. */
static ncc_status_t lower_scatter(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t op, upd, out;
	gs_dnums_t g;
	int64_t d;
	if (!gs_dnums(inst, &g))
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: scatter without dimension numbers");
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &op);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 2, &upd);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st == NCC_OK)
		st = ncc_lower_copy(ctx, inst, &out, &op);
	if (st != NCC_OK || ncc_view_elements(&upd) == 0 || ncc_view_elements(&out) == 0)
		return st;
	if (scatter_form(inst, &d))
		return lower_rows_along(ctx, inst, &g, d, &out, &upd);
	return lower_scatter_general(ctx, inst, &g, &upd, &out);
}

/* The softmax axis: backend_config holds its decimal text (negative counts from the
 * end); absent means the last dim. -1 when malformed. */
static int32_t softmax_dim(const ncc_inst_t *inst, int32_t rank)
{
	int64_t d = rank - 1;
	const char *cfg = inst->backend_config;
	if (cfg && *cfg) {
		char *end;
		long long v = strtoll(cfg, &end, 10);
		while (*end == ' ')
			end++;
		if (end == cfg || *end)
			return -1;
		d = v < 0 ? v + rank : v;
	}
	return d >= 0 && d < rank ? (int32_t)d : -1;
}

/* softmax along dim d: y = exp(x - max) / sum(exp(x - max));
 * backward(y, dy): dx = y * (dy - sum(dy * y)). */
static ncc_status_t lower_softmax(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, bool backward)
{
	ncc_view_t x, y;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &x);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &y);
	if (st != NCC_OK || ncc_view_elements(&y) == 0)
		return st;
	int32_t rank = x.rank;
	if (rank == 0)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "unsupported scalar softmax");
	int32_t d = softmax_dim(inst, rank);
	if (d < 0)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
				      "unsupported softmax backend_config '%s' (a dimension number)",
				      inst->backend_config);
	uint32_t mask = 1u << d;
	int64_t kd[NCC_MAX_RANK];
	for (int32_t i = 0; i < rank; i++)
		kd[i] = i == d ? 1 : x.dims[i];
	ncc_view_t red;
	st = ncc_lower_temp_view(ctx, x.dtype, rank, kd, &red);
	if (st != NCC_OK)
		return st;
	ncc_view_t rb = red;
	rb.dims[d] = x.dims[d];
	rb.strides[d] = 0;
	if (!backward) {
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_MAX, &red, &x, mask, false);
		ncc_view_t in2[2] = { x, rb };
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_SUB, &y, 2, in2);
		if (st == NCC_OK)
			st = ncc_lower_act(ctx, inst, ISA_ACT_EXP, 1.0, 0.0, &y, &y);
		if (st == NCC_OK)
			st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &red, &y, mask, false);
		ncc_view_t in3[2] = { y, rb };
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_DIV, &y, 2, in3);
		return st;
	}
	/* operands (y, dy), as the interpreter and torch-neuronx's kernel take them */
	ncc_view_t dy;
	st = ncc_lower_operand_view(ctx, inst, 1, &dy);
	if (st != NCC_OK)
		return st;
	ncc_view_t in[2] = { dy, x };
	st = ncc_lower_alu(ctx, inst, ISA_ALU_MUL, &y, 2, in);
	if (st == NCC_OK)
		st = ncc_lower_reduce_emit(ctx, inst, ISA_RED_SUM, &red, &y, mask, false);
	ncc_view_t in2[2] = { dy, rb };
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SUB, &y, 2, in2);
	ncc_view_t in3[2] = { y, x };
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_MUL, &y, 2, in3);
	return st;
}

static ncc_status_t lower_custom(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t x, out;
	if (is_target(inst, "AwsNeuronTransferWithStaticRing")) {
		/* a host<->device transfer marker: the value itself */
		int32_t n = ncc_lower_shape_leaves(&inst->shape);
		for (int32_t l = 0; l < n; l++) {
			ncc_status_t st = ncc_lower_operand_leaf(ctx, inst, 0, l, &x);
			if (st == NCC_OK)
				st = ncc_lower_set_view(ctx, inst, l, &x);
			if (st != NCC_OK)
				return st;
		}
		return NCC_OK;
	}
	if (is_target(inst, "AwsNeuronSoftmax"))
		return lower_softmax(ctx, inst, false);
	if (is_target(inst, "AwsNeuronSoftmaxBackward"))
		return lower_softmax(ctx, inst, true);
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &x);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	if (is_target(inst, "AwsNeuronGelu"))
		return ncc_lower_act(ctx, inst, ISA_ACT_GELU, 1.0, 0.0, &out, &x);
	if (is_target(inst, "AwsNeuronGeluApprxTanh"))
		return ncc_lower_act(ctx, inst, ISA_ACT_GELU_TANH, 1.0, 0.0, &out, &x);
	if (is_target(inst, "AwsNeuronSilu"))
		return ncc_lower_act(ctx, inst, ISA_ACT_SILU, 1.0, 0.0, &out, &x);
	if (is_target(inst, "AwsNeuronErf"))
		return ncc_lower_alu(ctx, inst, ISA_ALU_ERF, &out, 1, &x);
	/* AwsNeuronGeluBackward(x) is gelu'(x); with two operands (dy, x) it is dy*gelu'(x) */
	ncc_view_t in[2];
	if (inst->noperands >= 2) {
		in[0] = x;
		st = ncc_lower_operand_view(ctx, inst, 1, &in[1]);
		if (st != NCC_OK)
			return st;
	} else {
		ncc_view_t one;
		st = ncc_lower_const_scalar(ctx, x.dtype, 1.0, &one);
		if (st != NCC_OK)
			return st;
		in[0] = ncc_view_bcast_scalar(&one, x.rank, x.dims);
		in[1] = x;
	}
	return ncc_lower_alu(ctx, inst, ISA_ALU_GELU_GRAD, &out, 2, in);
}

ncc_status_t ncc_lower_misc(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	switch (inst->op) {
	case NCC_OP_IOTA:
		return lower_iota(ctx, inst);
	case NCC_OP_RNG_BIT_GENERATOR:
		return lower_rng(ctx, inst);
	case NCC_OP_GATHER:
		return lower_gather(ctx, inst);
	case NCC_OP_SCATTER:
		return lower_scatter(ctx, inst);
	case NCC_OP_CUSTOM_CALL:
		return lower_custom(ctx, inst);
	case NCC_OP_REPLICA_ID:
	case NCC_OP_PARTITION_ID: {
		ncc_view_t z;
		ncc_status_t st = ncc_lower_const_scalar(ctx, ISA_DT_U32, 0, &z);
		return st == NCC_OK ? ncc_lower_set_view(ctx, inst, 0, &z) : st;
	}
	default:
		/* one replica: every collective returns its operands */
		return ncc_lower_tuple(ctx, inst);
	}
}
