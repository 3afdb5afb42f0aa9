/* ncc reference interpreter: data movement (broadcast, transpose, slice, concatenate, pad, reverse, iota, dynamic slices, gather, scatter). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

/* dst (dense, row-major over dims) [j] = src[src_off + sum idx[d] * src_strides[d]]:
 * the one loop behind broadcast, transpose, slice and reverse. */
static void strided_copy(size_t es, int32_t rank, const int64_t *dims, const void *src,
			 int64_t src_off, const int64_t *src_strides, void *dst)
{
	for (int32_t d = 0; d < rank; d++)
		if (dims[d] == 0)
			return;
	if (rank == 0) {
		memcpy(dst, (const char *)src + src_off * (int64_t)es, es);
		return;
	}
	int64_t idx[NCC_MAX_RANK] = {0};
	int64_t inner = dims[rank - 1], ist = src_strides[rank - 1];
	int64_t o = 0;
	for (;;) {
		int64_t off = src_off;
		for (int32_t d = 0; d < rank - 1; d++)
			off += idx[d] * src_strides[d];
		switch (es) {
		case 1: {
			const uint8_t *s = (const uint8_t *)src + off;
			uint8_t *t = (uint8_t *)dst + o;
			for (int64_t j = 0; j < inner; j++)
				t[j] = s[j * ist];
			break;
		}
		case 2: {
			const uint16_t *s = (const uint16_t *)src + off;
			uint16_t *t = (uint16_t *)dst + o;
			for (int64_t j = 0; j < inner; j++)
				t[j] = s[j * ist];
			break;
		}
		case 4: {
			const uint32_t *s = (const uint32_t *)src + off;
			uint32_t *t = (uint32_t *)dst + o;
			if (ist == 0) { /* broadcast along the inner dim */
				uint32_t x = s[0];
				for (int64_t j = 0; j < inner; j++)
					t[j] = x;
			} else if (ist == 1) {
				memcpy(t, s, (size_t)inner * 4);
			} else {
				for (int64_t j = 0; j < inner; j++)
					t[j] = s[j * ist];
			}
			break;
		}
		default: {
			const uint64_t *s = (const uint64_t *)src + off;
			uint64_t *t = (uint64_t *)dst + o;
			for (int64_t j = 0; j < inner; j++)
				t[j] = s[j * ist];
			break;
		}
		}
		o += inner;
		int32_t d = rank - 2;
		for (; d >= 0; d--) {
			if (++idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
		if (d < 0)
			return;
	}
}

static bool same_etype(const ncc_value_t *a, const ncc_value_t *out)
{
	return a->shape.etype == out->shape.etype;
}

ncc_status_t ncc_eval_broadcast(ncc_interp_t *ip, const ncc_inst_t *inst,
				const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	const ncc_ilist_t *dl = &inst->dimensions;
	if (!same_etype(a, out) || dl->n != a->shape.rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
				       "dimensions={...} must list one result dim per operand dim");
	int64_t ast[NCC_MAX_RANK], st[NCC_MAX_RANK] = {0};
	ncc_strides(a->shape.rank, a->shape.dims, ast);
	for (int32_t k = 0; k < dl->n; k++) {
		int64_t d = dl->v[k];
		if (d < 0 || d >= out->shape.rank || out->shape.dims[d] != a->shape.dims[k])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand dim %d does not match result dim %" PRId64, k, d);
		st[d] = a->shape.dims[k] == 1 ? 0 : ast[k];
	}
	strided_copy(ncc_etype_storage_bytes(out->shape.etype), out->shape.rank, out->shape.dims,
		     a->data, 0, st, out->data);
	return NCC_OK;
}

ncc_status_t ncc_eval_reshape(ncc_interp_t *ip, const ncc_inst_t *inst,
			      const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	if (!same_etype(a, out) || ncc_value_elements(a) != ncc_value_elements(out))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
				       "element count or type differs from the operand's");
	if (out->nbytes)
		memcpy(out->data, a->data, out->nbytes);
	return NCC_OK;
}

ncc_status_t ncc_eval_transpose(ncc_interp_t *ip, const ncc_inst_t *inst,
				const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	const ncc_ilist_t *p = &inst->dimensions;
	if (!same_etype(a, out) || p->n != a->shape.rank || out->shape.rank != a->shape.rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "permutation rank mismatch");
	int64_t ast[NCC_MAX_RANK], st[NCC_MAX_RANK];
	ncc_strides(a->shape.rank, a->shape.dims, ast);
	for (int32_t d = 0; d < p->n; d++) {
		if (p->v[d] < 0 || p->v[d] >= a->shape.rank || a->shape.dims[p->v[d]] != out->shape.dims[d])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "bad permutation entry %d", d);
		st[d] = ast[p->v[d]];
	}
	strided_copy(ncc_etype_storage_bytes(out->shape.etype), out->shape.rank, out->shape.dims,
		     a->data, 0, st, out->data);
	return NCC_OK;
}

ncc_status_t ncc_eval_slice(ncc_interp_t *ip, const ncc_inst_t *inst,
			    const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	const ncc_slice_t *sl = inst->slice;
	if (!same_etype(a, out) || !sl || sl->n != a->shape.rank || out->shape.rank != a->shape.rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "slice={...} rank mismatch");
	int64_t ast[NCC_MAX_RANK], st[NCC_MAX_RANK], off = 0;
	ncc_strides(a->shape.rank, a->shape.dims, ast);
	for (int32_t d = 0; d < sl->n; d++) {
		const ncc_slice_dim_t *s = &sl->dims[d];
		int64_t stride = s->stride > 0 ? s->stride : 1;
		int64_t cnt = s->limit > s->start ? (s->limit - s->start + stride - 1) / stride : 0;
		if (s->start < 0 || s->limit > a->shape.dims[d] || cnt != out->shape.dims[d])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "slice of dim %d out of range", d);
		off += s->start * ast[d];
		st[d] = ast[d] * stride;
	}
	strided_copy(ncc_etype_storage_bytes(out->shape.etype), out->shape.rank, out->shape.dims,
		     a->data, off, st, out->data);
	return NCC_OK;
}

ncc_status_t ncc_eval_reverse(ncc_interp_t *ip, const ncc_inst_t *inst,
			      const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	if (!same_etype(a, out) || ncc_value_elements(a) != ncc_value_elements(out))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "shape mismatch");
	int64_t st[NCC_MAX_RANK], off = 0;
	ncc_strides(a->shape.rank, a->shape.dims, st);
	for (int32_t k = 0; k < inst->dimensions.n; k++) {
		int64_t d = inst->dimensions.v[k];
		if (d < 0 || d >= a->shape.rank)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "dimension %" PRId64 " out of range", d);
		if (st[d] > 0 && a->shape.dims[d] > 0) { /* a dim listed twice reverses once */
			off += (a->shape.dims[d] - 1) * st[d];
			st[d] = -st[d];
		}
	}
	strided_copy(ncc_etype_storage_bytes(out->shape.etype), out->shape.rank, out->shape.dims,
		     a->data, off, st, out->data);
	return NCC_OK;
}

ncc_status_t ncc_eval_concatenate(ncc_interp_t *ip, const ncc_inst_t *inst,
				  const ncc_value_t *const *ops, ncc_value_t *out)
{
	if (inst->dimensions.n != 1)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "concatenate needs dimensions={d}");
	int64_t c = inst->dimensions.v[0];
	int32_t rank = out->shape.rank;
	if (c < 0 || c >= rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "dimension out of range");
	size_t es = ncc_etype_storage_bytes(out->shape.etype);
	int64_t outer = 1, inner = 1, total = 0;
	for (int32_t d = 0; d < c; d++)
		outer *= out->shape.dims[d];
	for (int32_t d = (int32_t)c + 1; d < rank; d++)
		inner *= out->shape.dims[d];
	for (int32_t k = 0; k < inst->noperands; k++) {
		const ncc_value_t *a = ops[k];
		if (!same_etype(a, out) || a->shape.rank != rank)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand %d type or rank differs", k);
		for (int32_t d = 0; d < rank; d++)
			if (d != c && a->shape.dims[d] != out->shape.dims[d])
				return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand %d dim %d differs", k, d);
		total += a->shape.dims[c];
	}
	if (total != out->shape.dims[c])
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "sizes along dim %" PRId64 " do not add up", c);
	int64_t row = out->shape.dims[c] * inner; /* elements per outer index in the result */
	int64_t at = 0;
	for (int32_t k = 0; k < inst->noperands; k++) {
		const ncc_value_t *a = ops[k];
		int64_t chunk = a->shape.dims[c] * inner;
		for (int64_t o = 0; o < outer && chunk > 0; o++)
			memcpy((char *)out->data + (o * row + at) * (int64_t)es,
			       (const char *)a->data + o * chunk * (int64_t)es, (size_t)chunk * es);
		at += chunk;
	}
	return NCC_OK;
}

ncc_status_t ncc_eval_pad(ncc_interp_t *ip, const ncc_inst_t *inst,
			  const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0], *pv = ops[1];
	const ncc_padding_t *pd = inst->padding;
	int32_t rank = a->shape.rank;
	if (!same_etype(a, out) || !same_etype(pv, out) || pv->shape.rank != 0 || !pd || pd->n != rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "padding={...} or padding value mismatch");
	size_t es = ncc_etype_storage_bytes(out->shape.etype);
	for (int32_t d = 0; d < rank; d++) {
		const ncc_pad_dim_t *p = &pd->dims[d];
		int64_t n = a->shape.dims[d];
		int64_t want = p->lo + p->hi + n + (n > 0 ? (n - 1) * p->interior : 0);
		if (p->interior < 0 || want != out->shape.dims[d])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "padded size of dim %d is %" PRId64
					       ", result has %" PRId64, d, want, out->shape.dims[d]);
	}
	int64_t n = ncc_value_elements(out);
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)out->data + i * (int64_t)es, pv->data, es);
	int64_t m = ncc_value_elements(a);
	if (m == 0)
		return NCC_OK;
	int64_t ost[NCC_MAX_RANK], idx[NCC_MAX_RANK] = {0};
	ncc_strides(rank, out->shape.dims, ost);
	/* each operand element lands at lo + i * (interior + 1); negative padding drops
	 * the elements that fall outside the result */
	for (int64_t i = 0; i < m; i++) {
		int64_t off = 0;
		bool in = true;
		for (int32_t d = 0; d < rank; d++) {
			int64_t p = pd->dims[d].lo + idx[d] * (pd->dims[d].interior + 1);
			if (p < 0 || p >= out->shape.dims[d]) {
				in = false;
				break;
			}
			off += p * ost[d];
		}
		if (in)
			memcpy((char *)out->data + off * (int64_t)es, (const char *)a->data + i * (int64_t)es, es);
		ncc_next_index(rank, a->shape.dims, idx);
	}
	return NCC_OK;
}

ncc_status_t ncc_eval_iota(ncc_interp_t *ip, const ncc_inst_t *inst,
			   const ncc_value_t *const *ops, ncc_value_t *out)
{
	int32_t rank = out->shape.rank;
	int64_t dim = inst->iota_dimension;
	if (rank == 0 || dim < 0 || dim >= rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "iota_dimension out of range");
	int64_t st[NCC_MAX_RANK];
	ncc_strides(rank, out->shape.dims, st);
	int64_t n = ncc_value_elements(out);
	ncc_etype_t t = out->shape.etype;
	for (int64_t i = 0; i < n; i++) {
		int64_t v = (i / st[dim]) % out->shape.dims[dim];
		if (ncc_is_fp(t))
			ncc_st_fp(t, out->data, i, (double)v);
		else
			ncc_st_u(t, out->data, i, (uint64_t)v);
	}
	return NCC_OK;
}

/* Start index k of a dynamic slice, clamped so the slice of size `size` fits in dim. */
static int64_t clamp_start(const ncc_value_t *idx, int64_t dim, int64_t size)
{
	ncc_etype_t t = idx->shape.etype;
	int64_t v = ncc_etype_is_unsigned_int(t) && ncc_ld_u(t, idx->data, 0) > (uint64_t)INT64_MAX
			    ? INT64_MAX : (int64_t)ncc_ld_u(t, idx->data, 0);
	if (v > dim - size)
		v = dim - size;
	if (v < 0)
		v = 0;
	return v;
}

ncc_status_t ncc_eval_dynamic_slice(ncc_interp_t *ip, const ncc_inst_t *inst,
				    const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0];
	int32_t rank = a->shape.rank;
	if (!same_etype(a, out) || inst->noperands != rank + 1 || out->shape.rank != rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "dynamic-slice needs one scalar start index per dim");
	int64_t st[NCC_MAX_RANK], off = 0;
	ncc_strides(rank, a->shape.dims, st);
	for (int32_t d = 0; d < rank; d++) {
		if (ops[d + 1]->shape.rank != 0 || !ncc_etype_is_integral(ops[d + 1]->shape.etype) ||
		    out->shape.dims[d] > a->shape.dims[d])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "bad start index or size for dim %d", d);
		off += clamp_start(ops[d + 1], a->shape.dims[d], out->shape.dims[d]) * st[d];
	}
	strided_copy(ncc_etype_storage_bytes(out->shape.etype), rank, out->shape.dims, a->data, off, st,
		     out->data);
	return NCC_OK;
}

ncc_status_t ncc_eval_dynamic_update_slice(ncc_interp_t *ip, const ncc_inst_t *inst,
					   const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0], *u = ops[1];
	int32_t rank = a->shape.rank;
	if (!same_etype(a, out) || !same_etype(u, out) || inst->noperands != rank + 2 ||
	    u->shape.rank != rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
				       "dynamic-update-slice needs operand, update and one start index per dim");
	memcpy(out->data, a->data, out->nbytes);
	int64_t st[NCC_MAX_RANK], start[NCC_MAX_RANK];
	ncc_strides(rank, a->shape.dims, st);
	for (int32_t d = 0; d < rank; d++) {
		if (ops[d + 2]->shape.rank != 0 || !ncc_etype_is_integral(ops[d + 2]->shape.etype) ||
		    u->shape.dims[d] > a->shape.dims[d])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "bad start index or size for dim %d", d);
		start[d] = clamp_start(ops[d + 2], a->shape.dims[d], u->shape.dims[d]);
	}
	int64_t m = ncc_value_elements(u);
	size_t es = ncc_etype_storage_bytes(out->shape.etype);
	int64_t idx[NCC_MAX_RANK] = {0};
	for (int64_t i = 0; i < m; i++) {
		int64_t off = 0;
		for (int32_t d = 0; d < rank; d++)
			off += (start[d] + idx[d]) * st[d];
		memcpy((char *)out->data + off * (int64_t)es, (const char *)u->data + i * (int64_t)es, es);
		ncc_next_index(rank, u->shape.dims, idx);
	}
	return NCC_OK;
}

static bool in_list(const ncc_ilist_t *l, int64_t v)
{
	for (int32_t k = 0; k < l->n; k++)
		if (l->v[k] == v)
			return true;
	return false;
}

/* Reads the index vector of start_indices at the batch position `bidx` (indices over
 * the dims of `si` other than index_vector_dim, in order) into vec[0..nvec). */
static void read_index_vector(const ncc_value_t *si, int64_t ivd, const int64_t *bidx,
			      int64_t *vec, int32_t nvec)
{
	int32_t rank = si->shape.rank;
	int64_t st[NCC_MAX_RANK];
	ncc_strides(rank, si->shape.dims, st);
	int64_t base = 0;
	int32_t b = 0;
	for (int32_t d = 0; d < rank; d++) {
		if (d == ivd)
			continue;
		base += bidx[b++] * st[d];
	}
	for (int32_t k = 0; k < nvec; k++) {
		int64_t off = base + (ivd < rank ? k * st[ivd] : 0);
		ncc_etype_t t = si->shape.etype;
		uint64_t u = ncc_ld_u(t, si->data, off);
		vec[k] = ncc_etype_is_unsigned_int(t) && u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
	}
}

/* The index mapping gather and scatter share (their dimension numbers under one set
 * of names): where in the operand the window of an element of the output (gather) or
 * of the updates (scatter) starts. */
typedef struct gs_index {
	const ncc_value_t *si;       /* start_indices / scatter_indices */
	int64_t ivd;                 /* index_vector_dim */
	int32_t nvec;                /* the index vector's length, at most NCC_MAX_RANK * 4 */
	int32_t arank;               /* the operand's rank */
	const ncc_ilist_t *win;      /* offset_dims / update_window_dims */
	const ncc_ilist_t *map;      /* start_index_map / scatter_dims_to_operand_dims */
	const ncc_ilist_t *op_batch; /* operand_batching_dims / input_batching_dims */
	const ncc_ilist_t *ix_batch; /* start_indices_batching_dims / scatter_indices_batching_dims */
} gs_index_t;

/* start[0..NCC_MAX_RANK): the window's start in the operand (before a gather clamps
 * it or a scatter checks that it fits) for the element at idx of a value of rank
 * `rank`. */
static void gs_start(const gs_index_t *x, int32_t rank, const int64_t *idx, int64_t *start)
{
	int64_t bidx[NCC_MAX_RANK], full_b[NCC_MAX_RANK], vec[NCC_MAX_RANK * 4];
	int32_t nb = 0;
	for (int32_t d = 0; d < rank; d++)
		if (!in_list(x->win, d))
			bidx[nb++] = idx[d];
	/* batch position per index dim (index_vector_dim excluded) */
	int32_t b = 0;
	for (int32_t d = 0; d < x->si->shape.rank; d++)
		full_b[d] = d == x->ivd ? 0 : bidx[b++];
	read_index_vector(x->si, x->ivd, bidx, vec, x->nvec);
	memset(start, 0, NCC_MAX_RANK * sizeof(*start));
	for (int32_t k = 0; k < x->nvec; k++) {
		int64_t d = x->map->v[k];
		if (d >= 0 && d < x->arank)
			start[d] = vec[k];
	}
	for (int32_t k = 0; k < x->op_batch->n; k++) {
		int64_t d = x->op_batch->v[k];
		int64_t sd = x->ix_batch->v[k];
		if (d >= 0 && d < x->arank && sd >= 0 && sd < x->si->shape.rank)
			start[d] = full_b[sd];
	}
}

ncc_status_t ncc_eval_gather(ncc_interp_t *ip, const ncc_inst_t *inst,
			     const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0], *si = ops[1];
	const ncc_gather_dnums_t *g = inst->gather;
	if (!g || !same_etype(a, out) || !ncc_etype_is_integral(si->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "gather needs dimension numbers and integer indices");
	int32_t arank = a->shape.rank, orank = out->shape.rank;
	int64_t ivd = g->index_vector_dim;
	int32_t nvec = ivd < si->shape.rank ? (int32_t)si->shape.dims[ivd] : 1;
	if (g->slice_sizes.n != arank || g->start_index_map.n != nvec || ivd < 0 || ivd > si->shape.rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "slice_sizes/start_index_map/index_vector_dim mismatch");
	/* operand dims that appear in the result as offset dims, in order */
	int64_t offset_operand_dim[NCC_MAX_RANK];
	int32_t noff = 0;
	for (int32_t d = 0; d < arank; d++)
		if (!in_list(&g->collapsed_slice_dims, d) && !in_list(&g->operand_batching_dims, d))
			offset_operand_dim[noff++] = d;
	if (noff != g->offset_dims.n)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "offset_dims count mismatch");
	int64_t ast[NCC_MAX_RANK];
	ncc_strides(arank, a->shape.dims, ast);
	size_t es = ncc_etype_storage_bytes(out->shape.etype);
	int64_t n = ncc_value_elements(out);
	int64_t oidx[NCC_MAX_RANK] = {0};
	if (nvec > NCC_MAX_RANK * 4)
		return ncc_interp_fail(ip, inst, NCC_ERR_LIMIT, "index vector too long");
	const gs_index_t x = { si, ivd, nvec, arank, &g->offset_dims, &g->start_index_map,
			       &g->operand_batching_dims, &g->start_indices_batching_dims };
	for (int64_t i = 0; i < n; i++) {
		int64_t start[NCC_MAX_RANK];
		gs_start(&x, orank, oidx, start);
		int64_t off = 0;
		for (int32_t d = 0; d < arank; d++) {
			int64_t s = start[d], hi = a->shape.dims[d] - g->slice_sizes.v[d];
			if (s > hi) /* starts are clamped so the whole slice is in bounds */
				s = hi;
			if (s < 0)
				s = 0;
			start[d] = s;
		}
		for (int32_t k = 0; k < noff; k++)
			start[offset_operand_dim[k]] += oidx[g->offset_dims.v[k]];
		for (int32_t d = 0; d < arank; d++)
			off += start[d] * ast[d];
		memcpy((char *)out->data + i * (int64_t)es, (const char *)a->data + off * (int64_t)es, es);
		ncc_next_index(orank, out->shape.dims, oidx);
	}
	return NCC_OK;
}

ncc_status_t ncc_eval_scatter(ncc_interp_t *ip, const ncc_inst_t *inst,
			      const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_scatter_dnums_t *s = inst->scatter;
	if (!s || inst->noperands < 3 || inst->noperands % 2 != 1)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "scatter needs operands, indices and updates");
	int32_t nv = (inst->noperands - 1) / 2;
	if (nv > 4)
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED, "scatter of more than 4 operands");
	const ncc_value_t *si = ops[nv];
	ncc_value_t *res[4];
	if (nv == 1) {
		res[0] = out;
	} else {
		if (out->shape.etype != NCC_TUPLE || out->nelems != nv)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "variadic scatter must return a tuple");
		for (int32_t k = 0; k < nv; k++)
			res[k] = out->elems[k];
	}
	for (int32_t k = 0; k < nv; k++) {
		if (ops[k]->nbytes != res[k]->nbytes || ops[k]->shape.etype != res[k]->shape.etype ||
		    ops[nv + 1 + k]->shape.etype != res[k]->shape.etype)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "operand %d and result differ", k);
		memcpy(res[k]->data, ops[k]->data, res[k]->nbytes);
	}
	if (!ncc_etype_is_integral(si->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "scatter indices must be integers");
	const ncc_value_t *u0 = ops[nv + 1];
	int32_t arank = res[0]->shape.rank, urank = u0->shape.rank;
	int64_t ivd = s->index_vector_dim;
	int32_t nvec = ivd < si->shape.rank ? (int32_t)si->shape.dims[ivd] : 1;
	if (ivd < 0 || ivd > si->shape.rank || s->scatter_dims_to_operand_dims.n != nvec)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "scatter_dims_to_operand_dims/index_vector_dim mismatch");
	/* operand dims covered by update window dims, in order */
	int64_t win_operand_dim[NCC_MAX_RANK];
	int32_t nwin = 0;
	for (int32_t d = 0; d < arank; d++)
		if (!in_list(&s->inserted_window_dims, d) && !in_list(&s->input_batching_dims, d))
			win_operand_dim[nwin++] = d;
	if (nwin != s->update_window_dims.n)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "update_window_dims count mismatch");
	int64_t wsize[NCC_MAX_RANK];
	for (int32_t d = 0; d < arank; d++)
		wsize[d] = 1;
	for (int32_t k = 0; k < nwin; k++) {
		int64_t ud = s->update_window_dims.v[k];
		if (ud < 0 || ud >= urank)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "update_window_dims out of range");
		wsize[win_operand_dim[k]] = u0->shape.dims[ud];
	}
	ncc_etype_t types[8];
	for (int32_t k = 0; k < nv; k++) {
		types[k] = res[k]->shape.etype;
		types[nv + k] = res[k]->shape.etype;
	}
	ncc_scalar_fn_t fn;
	ncc_status_t st = ncc_scalar_fn_init(&fn, ip, inst, inst->to_apply, 2 * nv, types);
	if (st != NCC_OK)
		return st;
	int64_t ast[NCC_MAX_RANK];
	ncc_strides(arank, res[0]->shape.dims, ast);
	int64_t m = ncc_value_elements(u0);
	int64_t uidx[NCC_MAX_RANK] = {0};
	if (nvec > NCC_MAX_RANK * 4) {
		ncc_scalar_fn_fini(&fn);
		return ncc_interp_fail(ip, inst, NCC_ERR_LIMIT, "index vector too long");
	}
	const gs_index_t x = { si, ivd, nvec, arank, &s->update_window_dims,
			       &s->scatter_dims_to_operand_dims, &s->input_batching_dims,
			       &s->scatter_indices_batching_dims };
	for (int64_t i = 0; i < m && st == NCC_OK; i++) {
		int64_t start[NCC_MAX_RANK];
		gs_start(&x, urank, uidx, start);
		/* an update whose full window does not fit in the operand is skipped */
		bool fits = true;
		for (int32_t d = 0; d < arank; d++)
			if (start[d] < 0 || start[d] > res[0]->shape.dims[d] - wsize[d])
				fits = false;
		if (fits) {
			int64_t off = 0;
			for (int32_t k = 0; k < nwin; k++)
				start[win_operand_dim[k]] += uidx[s->update_window_dims.v[k]];
			for (int32_t d = 0; d < arank; d++)
				off += start[d] * ast[d];
			const void *in[8];
			void *o[4];
			for (int32_t k = 0; k < nv; k++) {
				size_t es = ncc_etype_storage_bytes(types[k]);
				o[k] = (char *)res[k]->data + off * (int64_t)es;
				in[k] = o[k];
				in[nv + k] = (const char *)ops[nv + 1 + k]->data + i * (int64_t)es;
			}
			if (nv == 1) {
				st = ncc_scalar_fn_call(&fn, in, o, 1);
			} else {
				/* results are staged: every combiner input is read before any write */
				uint64_t tmp[4];
				void *to[4] = {&tmp[0], &tmp[1], &tmp[2], &tmp[3]};
				st = ncc_scalar_fn_call(&fn, in, to, nv);
				for (int32_t k = 0; k < nv && st == NCC_OK; k++)
					memcpy(o[k], to[k], ncc_etype_storage_bytes(types[k]));
			}
		}
		ncc_next_index(urank, u0->shape.dims, uidx);
	}
	ncc_scalar_fn_fini(&fn);
	return st;
}
