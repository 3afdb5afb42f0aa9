/* ncc back end, view arithmetic (with builder.c): dense views, broadcast and reshaped views, dims moved or kept, the windows of a reduce-window or select-and-scatter as views. Pure functions of views: no emission, no context. */
#include <string.h>

#include "lower_internal.h"

ncc_view_t ncc_view_dense(uint32_t region, uint64_t offset, isa_dtype_t dtype, int32_t rank,
			  const int64_t *dims)
{
	ncc_view_t v;
	memset(&v, 0, sizeof(v));
	v.region = region;
	v.offset = offset;
	v.dtype = dtype;
	v.rank = rank;
	int64_t s = 1;
	for (int32_t i = rank - 1; i >= 0; i--) {
		v.dims[i] = dims[i];
		v.strides[i] = s;
		s *= dims[i] > 0 ? dims[i] : 1;
	}
	return v;
}

bool ncc_view_is_dense(const ncc_view_t *v)
{
	int64_t s = 1;
	for (int32_t i = v->rank - 1; i >= 0; i--) {
		if (v->dims[i] == 1)
			continue;
		if (v->dims[i] == 0)
			return true;
		if (v->strides[i] != s)
			return false;
		s *= v->dims[i];
	}
	return true;
}

int64_t ncc_view_elements(const ncc_view_t *v)
{
	int64_t n = 1;
	for (int32_t i = 0; i < v->rank; i++)
		n *= v->dims[i];
	return n;
}

ncc_view_t ncc_view_bcast_scalar(const ncc_view_t *scalar, int32_t rank, const int64_t *dims)
{
	ncc_view_t v = *scalar;
	v.rank = rank;
	for (int32_t i = 0; i < NCC_MAX_RANK; i++) {
		v.dims[i] = i < rank ? dims[i] : 0;
		v.strides[i] = 0;
	}
	return v;
}

bool ncc_view_reshape(const ncc_view_t *src, int32_t rank, const int64_t *dims,
		      ncc_view_t *out_view)
{
	ncc_view_t v = *src;
	v.rank = rank;
	for (int32_t i = 0; i < NCC_MAX_RANK; i++) {
		v.dims[i] = i < rank ? dims[i] : 0;
		v.strides[i] = 0;
	}
	int64_t n = ncc_view_elements(src);
	if (n == 0) {
		*out_view = v;
		return true;
	}
	/* numpy's no-copy reshape: old dims without the size-1 ones */
	int64_t od[NCC_MAX_RANK], os[NCC_MAX_RANK];
	int32_t on = 0;
	for (int32_t i = 0; i < src->rank; i++)
		if (src->dims[i] != 1) {
			od[on] = src->dims[i];
			os[on] = src->strides[i];
			on++;
		}
	int32_t oi = 0, oj = 1, ni = 0, nj = 1;
	while (ni < rank && oi < on) {
		int64_t np = dims[ni], op = od[oi];
		while (np != op) {
			if (np < op) {
				if (nj >= rank)
					return false;
				np *= dims[nj++];
			} else {
				if (oj >= on)
					return false;
				op *= od[oj++];
			}
		}
		for (int32_t ok = oi; ok < oj - 1; ok++)
			if (os[ok] != od[ok + 1] * os[ok + 1])
				return false;
		v.strides[nj - 1] = os[oj - 1];
		for (int32_t nk = nj - 1; nk > ni; nk--)
			v.strides[nk - 1] = v.strides[nk] * dims[nk];
		ni = nj++;
		oi = oj++;
	}
	/* trailing size-1 dims: any stride */
	for (; ni < rank; ni++)
		v.strides[ni] = 0;
	*out_view = v;
	return true;
}

/* Moves dim d of v to the front (a view). */
ncc_view_t ncc_view_dim_to_front(const ncc_view_t *v, int32_t d)
{
	ncc_view_t r = *v;
	r.dims[0] = v->dims[d];
	r.strides[0] = v->strides[d];
	int32_t k = 1;
	for (int32_t i = 0; i < v->rank; i++)
		if (i != d) {
			r.dims[k] = v->dims[i];
			r.strides[k] = v->strides[i];
			k++;
		}
	return r;
}

/* Expands an output view (operand rank minus reduced dims) back to operand rank with
 * the reduced dims as size 1. */
ncc_view_t ncc_view_keep_dims(const ncc_view_t *out, const ncc_view_t *in, uint32_t mask)
{
	ncc_view_t k = *out;
	k.rank = in->rank;
	int32_t j = 0;
	for (int32_t d = 0; d < in->rank; d++) {
		if (mask & (1u << d)) {
			k.dims[d] = 1;
			k.strides[d] = 0;
		} else {
			k.dims[d] = out->dims[j];
			k.strides[d] = out->strides[j];
			j++;
		}
	}
	return k;
}

/* keep (reduced dims of size 1, stride 0) widened to the input's dims: every input
 * element sees its window's result. */
ncc_view_t ncc_view_expand_keep(const ncc_view_t *keep, const ncc_view_t *in)
{
	ncc_view_t e = *keep;
	for (int32_t d = 0; d < in->rank; d++)
		e.dims[d] = in->dims[d];
	return e;
}

/* The windows of a rank-r input as a rank-2r view [o0, w0, o1, w1, ...] (strides:
 * window stride, window dilation) with o the dims of out, and out seen as the
 * keep-dims REDUCE destination of that view ([o0, 1, o1, 1, ...]). Returns the mask
 * of the w dims. */
uint32_t ncc_lower_window_views(const ncc_window_t *win, const ncc_view_t *in,
				const ncc_view_t *out, ncc_view_t *out_windows, ncc_view_t *out_keep)
{
	ncc_view_t w = *in, keep = *out;
	w.rank = keep.rank = 2 * in->rank;
	uint32_t mask = 0;
	for (int32_t d = 0; d < in->rank; d++) {
		const ncc_window_dim_t *wd = &win->dims[d];
		w.dims[2 * d] = out->dims[d];
		w.strides[2 * d] = in->strides[d] * wd->stride;
		w.dims[2 * d + 1] = wd->size;
		w.strides[2 * d + 1] = in->strides[d] * wd->rhs_dilation;
		keep.dims[2 * d] = out->dims[d];
		keep.strides[2 * d] = out->strides[d];
		keep.dims[2 * d + 1] = 1;
		keep.strides[2 * d + 1] = 0;
		mask |= 1u << (2 * d + 1);
	}
	*out_windows = w;
	*out_keep = keep;
	return mask;
}

ncc_status_t ncc_lower_window_im2col(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				     const ncc_window_t *win, const ncc_view_t *in, const int64_t *odims,
				     int32_t ninner, const ncc_view_t *xc)
{
	int32_t r = in->rank, nout = r - ninner;
	ncc_view_t w = *in;
	w.rank = 2 * r;
	/* [o outer..., w..., o inner...] */
	for (int32_t d = 0; d < r; d++) {
		int32_t od = d < nout ? d : r + d;
		w.dims[od] = odims[d];
		w.strides[od] = in->strides[d] * win->dims[d].stride;
		w.dims[nout + d] = win->dims[d].size;
		w.strides[nout + d] = in->strides[d] * win->dims[d].rhs_dilation;
	}
	ncc_view_t dst = ncc_view_dense(xc->region, xc->offset, in->dtype, 2 * r, w.dims);
	return ncc_lower_copy(ctx, inst, &dst, &w);
}

int64_t ncc_lower_window_col_stride(const int64_t *odims, int32_t r, int32_t ninner, int64_t nk,
				    int32_t d)
{
	int64_t s = 1;
	for (int32_t q = d < r ? d + 1 : r - ninner; q < r; q++)
		s *= odims[q];
	return d < r - ninner ? s * nk : s;
}

int64_t ncc_lower_window_elements(const ncc_window_t *win)
{
	int64_t nk = 1;
	for (int32_t d = 0; d < win->n; d++)
		nk *= win->dims[d].size;
	return nk;
}

/* Bytes of a dense-windows form's im2col buffer per part (of the outer
 * output dim): it stays in the cache between its COPY and the FUSED that
 * reads it, and a large batch's windows (ResNet at b96 224x224: 690 MB) are
 * never held at once. */
#define WINDOWS_PART_BYTES (4 << 20)

int64_t ncc_lower_window_part(int64_t nk, int64_t es, int64_t outer, int64_t per)
{
	int64_t cn = WINDOWS_PART_BYTES / (nk * per * es);
	return cn < 1 ? 1 : cn > outer ? outer : cn;
}
