/* ncc reference interpreter: reductions and contractions (reduce, reduce-window, select-and-scatter, dot, convolution). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

/* Float reductions with add/multiply/maximum/minimum accumulate in f64 and round once
 * at the end: the oracle is as close to the exact result as it can be, and any
 * summation order of the compiled code lands within tolerance of it. */
static bool fast_float_reducer(const ncc_scalar_fn_t *fn, ncc_etype_t t)
{
	if (!ncc_is_fp(t) || fn->op == NCC_OP_UNKNOWN)
		return false;
	return fn->op == NCC_OP_ADD || fn->op == NCC_OP_MULTIPLY || fn->op == NCC_OP_MAXIMUM ||
	       fn->op == NCC_OP_MINIMUM;
}

static inline double acc_step(ncc_opcode_t op, double acc, double x)
{
	switch (op) {
	case NCC_OP_ADD: return acc + x;
	case NCC_OP_MULTIPLY: return acc * x;
	case NCC_OP_MAXIMUM:
		if (acc != acc || x != x)
			return NAN;
		return x > acc || (x == acc && !signbit(x)) ? x : acc;
	default: /* minimum */
		if (acc != acc || x != x)
			return NAN;
		return x < acc || (x == acc && signbit(x)) ? x : acc;
	}
}

/* The results of a reducer-style op: out itself (one output) or its tuple elements. */
static ncc_status_t split_results(ncc_interp_t *ip, const ncc_inst_t *inst, ncc_value_t *out,
				  int32_t n, ncc_value_t **res)
{
	if (n == 1 && out->shape.etype != NCC_TUPLE) {
		res[0] = out;
		return NCC_OK;
	}
	if (out->shape.etype != NCC_TUPLE || out->nelems != n)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "expected a tuple of %d results", n);
	for (int32_t k = 0; k < n; k++)
		res[k] = out->elems[k];
	return NCC_OK;
}

/* What reduce and reduce-window share: N inputs and N init values, the N results,
 * the element type of each (types[k] = types[N + k]) and the reducer. */
typedef struct reducer {
	int32_t nv;
	ncc_value_t *res[4];
	ncc_etype_t types[8];
	ncc_scalar_fn_t fn;
} reducer_t;

/* Checks N inputs of one element count and N scalar init values (N <= 4), finds the
 * N results (out or its elements), checks that input, init value and result k have
 * one type, and sets up the reducer (released with ncc_scalar_fn_fini()). */
static ncc_status_t reducer_start(ncc_interp_t *ip, const ncc_inst_t *inst,
				  const ncc_value_t *const *ops, ncc_value_t *out, reducer_t *rd)
{
	ncc_value_t **res = rd->res;
	ncc_etype_t *types = rd->types;
	if (inst->noperands < 2 || inst->noperands % 2 || inst->noperands > 8)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "%s needs N inputs and N init values (N <= 4)",
				       ncc_opcode_name(inst->op));
	int32_t nv = inst->noperands / 2;
	ncc_status_t st = split_results(ip, inst, out, nv, res);
	if (st != NCC_OK)
		return st;
	for (int32_t k = 0; k < nv; k++) {
		if (ops[k]->nbytes / (ncc_etype_storage_bytes(ops[k]->shape.etype) ?: 1) !=
			    (size_t)ncc_value_elements(ops[0]) ||
		    ops[nv + k]->shape.rank != 0 || ops[k]->shape.etype != res[k]->shape.etype ||
		    ops[nv + k]->shape.etype != res[k]->shape.etype)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "input %d, its init value and result disagree", k);
		types[k] = types[nv + k] = res[k]->shape.etype;
	}
	rd->nv = nv;
	return ncc_scalar_fn_init(&rd->fn, ip, inst, inst->to_apply, 2 * nv, types);
}

typedef ncc_status_t (*reducer_body_fn)(ncc_interp_t *ip, const ncc_inst_t *inst,
					const ncc_value_t *const *ops, reducer_t *rd);

/* reducer_start(), body, and the reducer released whatever the body returns. */
static ncc_status_t run_reducer(ncc_interp_t *ip, const ncc_inst_t *inst, const ncc_value_t *const *ops,
				ncc_value_t *out, reducer_body_fn body)
{
	reducer_t rd;
	ncc_status_t st = reducer_start(ip, inst, ops, out, &rd);
	if (st != NCC_OK)
		return st;
	st = body(ip, inst, ops, &rd);
	ncc_scalar_fn_fini(&rd.fn);
	return st;
}

/* One step of a general (possibly variadic) reduction: element o of the results
 * becomes fn(results..., inputs...) with the inputs' element i. */
static ncc_status_t combine_into(reducer_t *rd, int64_t o, const ncc_value_t *const *ops, int64_t i)
{
	const void *in[8] = {0};
	void *po[4];
	uint64_t tmp[4];
	void *to[4] = {&tmp[0], &tmp[1], &tmp[2], &tmp[3]};
	for (int32_t k = 0; k < rd->nv; k++) {
		size_t es = ncc_etype_storage_bytes(rd->types[k]);
		po[k] = (char *)rd->res[k]->data + o * (int64_t)es;
		in[k] = po[k];
		in[rd->nv + k] = (const char *)ops[k]->data + i * (int64_t)es;
	}
	ncc_status_t st = ncc_scalar_fn_call(&rd->fn, in, to, rd->nv);
	for (int32_t k = 0; k < rd->nv && st == NCC_OK; k++)
		memcpy(po[k], to[k], ncc_etype_storage_bytes(rd->types[k]));
	return st;
}

static ncc_status_t reduce_body(ncc_interp_t *ip, const ncc_inst_t *inst,
				const ncc_value_t *const *ops, reducer_t *rd)
{
	ncc_status_t st = NCC_OK;
	const ncc_value_t *in0 = ops[0];
	int32_t rank = in0->shape.rank;
	int64_t ost_in[NCC_MAX_RANK] = {0}; /* result stride of each input dim, 0 if reduced */
	{
		int64_t ost[NCC_MAX_RANK];
		ncc_strides(rd->res[0]->shape.rank, rd->res[0]->shape.dims, ost);
		int32_t od = 0;
		for (int32_t d = 0; d < rank; d++) {
			bool red = false;
			for (int32_t k = 0; k < inst->dimensions.n; k++)
				if (inst->dimensions.v[k] == d)
					red = true;
			if (red)
				continue;
			if (od >= rd->res[0]->shape.rank || rd->res[0]->shape.dims[od] != in0->shape.dims[d])
				return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "result dims do not match the kept input dims");
			ost_in[d] = ost[od++];
		}
		if (od != rd->res[0]->shape.rank)
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "result rank does not match the kept input dims");
	}
	int64_t on = ncc_value_elements(rd->res[0]), n = ncc_value_elements(in0);
	int64_t idx[NCC_MAX_RANK] = {0};
	ncc_etype_t t = rd->types[0];
	if (rd->nv == 1 && fast_float_reducer(&rd->fn, t)) {
		double *acc = malloc(sizeof(double) * (size_t)(on ? on : 1));
		if (!acc)
			return NCC_ERR_NOMEM;
		double init = ncc_ld_f(t, ops[1]->data, 0);
		for (int64_t o = 0; o < on; o++)
			acc[o] = init;
		/* walk the input in row-major order, the inner dim in a tight loop */
		int64_t inner = rank ? in0->shape.dims[rank - 1] : 1, ist = rank ? ost_in[rank - 1] : 0;
		for (int64_t i = 0; i < n; i += inner) {
			int64_t o = 0;
			for (int32_t d = 0; d < rank - 1; d++)
				o += idx[d] * ost_in[d];
			if (t == NCC_F32) {
				const float *x = (const float *)in0->data + i;
				if (ist == 0 && rd->fn.op == NCC_OP_ADD) {
					double s = acc[o];
					for (int64_t j = 0; j < inner; j++)
						s += x[j];
					acc[o] = s;
				} else {
					for (int64_t j = 0; j < inner; j++)
						acc[o + j * ist] = acc_step(rd->fn.op, acc[o + j * ist], x[j]);
				}
			} else {
				for (int64_t j = 0; j < inner; j++)
					acc[o + j * ist] = acc_step(rd->fn.op, acc[o + j * ist], ncc_ld_f(t, in0->data, i + j));
			}
			ncc_next_index(rank - 1, in0->shape.dims, idx);
		}
		for (int64_t o = 0; o < on; o++)
			ncc_st_fp(t, rd->res[0]->data, o, acc[o]);
		free(acc);
		return NCC_OK;
	}
	/* general path: out = init; out = f(out, x) for every x in row-major order */
	for (int32_t k = 0; k < rd->nv; k++) {
		size_t es = ncc_etype_storage_bytes(rd->types[k]);
		for (int64_t o = 0; o < on; o++)
			memcpy((char *)rd->res[k]->data + o * (int64_t)es, ops[rd->nv + k]->data, es);
	}
	for (int64_t i = 0; i < n && st == NCC_OK; i++) {
		int64_t o = 0;
		for (int32_t d = 0; d < rank; d++)
			o += idx[d] * ost_in[d];
		st = combine_into(rd, o, ops, i);
		ncc_next_index(rank, in0->shape.dims, idx);
	}
	return st;
}

ncc_status_t ncc_eval_reduce(ncc_interp_t *ip, const ncc_inst_t *inst,
			     const ncc_value_t *const *ops, ncc_value_t *out)
{
	return run_reducer(ip, inst, ops, out, reduce_body);
}

/* Input coordinate of window element k at output position o in one dim, or -1 when it
 * falls in padding or a hole of the base (lhs) dilation. */
static inline int64_t window_input(const ncc_window_dim_t *w, int64_t in_dim, int64_t o, int64_t k)
{
	int64_t bd = w->lhs_dilation > 0 ? w->lhs_dilation : 1;
	int64_t wd = w->rhs_dilation > 0 ? w->rhs_dilation : 1;
	int64_t s = w->stride > 0 ? w->stride : 1;
	int64_t p = o * s + k * wd - w->pad_lo;
	if (p < 0 || p % bd)
		return -1;
	p /= bd;
	return p < in_dim ? p : -1;
}

/* Walks the elements of one window that fall on the input (padding and holes of
 * the base dilation are skipped). */
typedef struct window_walk {
	const ncc_window_t *w;
	int32_t rank;
	const int64_t *in_dims; /* input dims */
	int64_t ist[NCC_MAX_RANK];   /* input strides */
	int64_t wdims[NCC_MAX_RANK]; /* window sizes */
	int64_t kidx[NCC_MAX_RANK];  /* the next window element */
	bool more;
} window_walk_t;

static void window_walk_init(window_walk_t *ww, const ncc_window_t *w, int32_t rank,
			     const int64_t *in_dims)
{
	ww->w = w;
	ww->rank = rank;
	ww->in_dims = in_dims;
	ncc_strides(rank, in_dims, ww->ist);
	for (int32_t d = 0; d < rank; d++)
		ww->wdims[d] = w->dims[d].size;
}

/* Starts a window (the next window_walk_next() calls walk it from its first element). */
static void window_walk_start(window_walk_t *ww)
{
	memset(ww->kidx, 0, sizeof(ww->kidx));
	ww->more = true;
	for (int32_t d = 0; d < ww->rank; d++)
		if (ww->wdims[d] <= 0)
			ww->more = false;
}

/* The flat input offset of the next window element of output position oidx that
 * falls on the input; false when the window is done. */
static bool window_walk_next(window_walk_t *ww, const int64_t *oidx, int64_t *out_off)
{
	while (ww->more) {
		int64_t off = 0;
		bool valid = true;
		for (int32_t d = 0; d < ww->rank && valid; d++) {
			int64_t p = window_input(&ww->w->dims[d], ww->in_dims[d], oidx[d], ww->kidx[d]);
			if (p < 0)
				valid = false;
			else
				off += p * ww->ist[d];
		}
		ww->more = ncc_next_index(ww->rank, ww->wdims, ww->kidx);
		if (valid) {
			*out_off = off;
			return true;
		}
	}
	return false;
}

static ncc_status_t reduce_window_body(ncc_interp_t *ip, const ncc_inst_t *inst,
				       const ncc_value_t *const *ops, reducer_t *rd)
{
	ncc_status_t st = NCC_OK;
	const ncc_value_t *in0 = ops[0];
	int32_t rank = in0->shape.rank;
	const ncc_window_t *w = inst->window;
	if (!w || w->n != rank || rd->res[0]->shape.rank != rank)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "window rank differs from the operand's");
	window_walk_t ww;
	window_walk_init(&ww, w, rank, in0->shape.dims);
	ncc_etype_t t = rd->types[0];
	bool fast = rd->nv == 1 && fast_float_reducer(&rd->fn, t);
	int64_t on = ncc_value_elements(rd->res[0]);
	int64_t oidx[NCC_MAX_RANK] = {0};
	for (int64_t o = 0; o < on && st == NCC_OK; o++) {
		double acc = fast ? ncc_ld_f(t, ops[1]->data, 0) : 0;
		for (int32_t k = 0; k < rd->nv && !fast; k++) {
			size_t es = ncc_etype_storage_bytes(rd->types[k]);
			memcpy((char *)rd->res[k]->data + o * (int64_t)es, ops[rd->nv + k]->data, es);
		}
		/* padding and dilation holes hold the init value, which the reducer must
		 * treat as its identity: skipping them is the same */
		int64_t off;
		window_walk_start(&ww);
		while (st == NCC_OK && window_walk_next(&ww, oidx, &off)) {
			if (fast)
				acc = acc_step(rd->fn.op, acc, ncc_ld_f(t, in0->data, off));
			else
				st = combine_into(rd, o, ops, off);
		}
		if (fast)
			ncc_st_fp(t, rd->res[0]->data, o, acc);
		ncc_next_index(rank, rd->res[0]->shape.dims, oidx);
	}
	return st;
}

ncc_status_t ncc_eval_reduce_window(ncc_interp_t *ip, const ncc_inst_t *inst,
				    const ncc_value_t *const *ops, ncc_value_t *out)
{
	return run_reducer(ip, inst, ops, out, reduce_window_body);
}

ncc_status_t ncc_eval_select_and_scatter(ncc_interp_t *ip, const ncc_inst_t *inst,
					 const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *a = ops[0], *src = ops[1], *init = ops[2];
	int32_t rank = a->shape.rank;
	const ncc_window_t *w = inst->window;
	ncc_etype_t t = a->shape.etype;
	if (inst->noperands != 3 || !w || w->n != rank || src->shape.rank != rank ||
	    out->shape.etype != t || src->shape.etype != t || init->shape.etype != t)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "select-and-scatter operands, window or types mismatch");
	size_t es = ncc_etype_storage_bytes(t);
	int64_t n = ncc_value_elements(out);
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)out->data + i * (int64_t)es, init->data, es);
	ncc_etype_t types[2] = {t, t};
	ncc_scalar_fn_t sel, sca;
	ncc_status_t st = ncc_scalar_fn_init(&sel, ip, inst, inst->select, 2, types);
	if (st != NCC_OK)
		return st;
	st = ncc_scalar_fn_init(&sca, ip, inst, inst->scatter_comp, 2, types);
	if (st != NCC_OK) {
		ncc_scalar_fn_fini(&sel);
		return st;
	}
	window_walk_t ww;
	window_walk_init(&ww, w, rank, a->shape.dims);
	int64_t sn = ncc_value_elements(src);
	int64_t sidx[NCC_MAX_RANK] = {0};
	for (int64_t s = 0; s < sn && st == NCC_OK; s++) {
		/* the first valid element wins unless select(current, candidate) is false */
		int64_t best = -1, off;
		window_walk_start(&ww);
		while (st == NCC_OK && window_walk_next(&ww, sidx, &off)) {
			if (best < 0) {
				best = off;
				continue;
			}
			uint8_t keep = 0;
			const void *in[2] = {(const char *)a->data + best * (int64_t)es,
					     (const char *)a->data + off * (int64_t)es};
			void *o = &keep;
			st = ncc_scalar_fn_call(&sel, in, &o, 1);
			if (st == NCC_OK && !keep)
				best = off;
		}
		if (best >= 0 && st == NCC_OK) {
			void *o = (char *)out->data + best * (int64_t)es;
			const void *in[2] = {o, (const char *)src->data + s * (int64_t)es};
			st = ncc_scalar_fn_call(&sca, in, &o, 1);
		}
		ncc_next_index(rank, src->shape.dims, sidx);
	}
	ncc_scalar_fn_fini(&sel);
	ncc_scalar_fn_fini(&sca);
	return st;
}

/* ------------------------------------------------------------ dot */

/* What a packed operand holds per element: double (floats, or mixed types), the
 * integer bits (integer dots wrap), or float (f32/bf16/f16 operands: half the memory
 * of double for large weights, exact for all three). */
typedef enum pack_kind { PACK_F64, PACK_U64, PACK_F32 } pack_kind_t;

/* Converts `inner` elements of v, the first at flat offset off and then every ist,
 * into dst as kind. */
static void pack_row(pack_kind_t kind, const ncc_value_t *v, int64_t off, int64_t ist, int64_t inner,
		     void *dst)
{
	ncc_etype_t t = v->shape.etype;
	switch (kind) {
	case PACK_F32: {
		float *p = dst;
		if (t == NCC_F32) {
			const float *s = (const float *)v->data + off;
			for (int64_t j = 0; j < inner; j++)
				p[j] = s[j * ist];
		} else {
			for (int64_t j = 0; j < inner; j++)
				p[j] = (float)ncc_ld_f(t, v->data, off + j * ist);
		}
		return;
	}
	case PACK_F64: {
		double *p = dst;
		for (int64_t j = 0; j < inner; j++)
			p[j] = ncc_ld_f(t, v->data, off + j * ist);
		return;
	}
	case PACK_U64: {
		uint64_t *p = dst;
		for (int64_t j = 0; j < inner; j++)
			p[j] = ncc_ld_u(t, v->data, off + j * ist);
		return;
	}
	}
}

/* Packs v into a dense [B][R][C] matrix (batch dims, then the `rows` dims, then the
 * `cols` dims, each group in the order given) of kind's element type; the caller
 * frees it. NULL when out of memory. */
static void *pack(const ncc_value_t *v, const int64_t *order, int32_t n, pack_kind_t kind)
{
	int64_t st[NCC_MAX_RANK], pst[NCC_MAX_RANK], dims[NCC_MAX_RANK];
	ncc_strides(v->shape.rank, v->shape.dims, st);
	for (int32_t k = 0; k < n; k++) {
		dims[k] = v->shape.dims[order[k]];
		pst[k] = st[order[k]];
	}
	size_t es = kind == PACK_F32 ? sizeof(float) : sizeof(double);
	int64_t cnt = ncc_value_elements(v);
	char *p = malloc(es * (size_t)(cnt ? cnt : 1));
	if (!p || cnt == 0)
		return p;
	/* row by row along the last packed dim */
	int64_t idx[NCC_MAX_RANK] = {0};
	int64_t inner = n ? dims[n - 1] : 1, ist = n ? pst[n - 1] : 0;
	for (int64_t i = 0; i < cnt; i += inner) {
		int64_t off = 0;
		for (int32_t k = 0; k < n - 1; k++)
			off += idx[k] * pst[k];
		pack_row(kind, v, off, ist, inner, p + (size_t)i * es);
		ncc_next_index(n - 1, dims, idx);
	}
	return p;
}

/* acc[0..N) += L[li] * R[ri .. ri + N), operands packed as kind: in uint64_t
 * (wrapping) for PACK_U64, else in double. */
static inline void dot_axpy(pack_kind_t kind, const void *L, int64_t li, const void *R, int64_t ri,
			    int64_t N, void *acc)
{
	switch (kind) {
	case PACK_U64: {
		uint64_t a = ((const uint64_t *)L)[li], *c = acc;
		const uint64_t *row = (const uint64_t *)R + ri;
		for (int64_t j = 0; j < N; j++)
			c[j] += a * row[j];
		return;
	}
	case PACK_F32: {
		double a = ((const float *)L)[li], *c = acc;
		const float *row = (const float *)R + ri;
		for (int64_t j = 0; j < N; j++)
			c[j] += a * (double)row[j];
		return;
	}
	case PACK_F64: {
		double a = ((const double *)L)[li], *c = acc;
		const double *row = (const double *)R + ri;
		for (int64_t j = 0; j < N; j++)
			c[j] += a * row[j];
		return;
	}
	}
}

static bool small_float(ncc_etype_t t)
{
	return t == NCC_F32 || t == NCC_BF16 || t == NCC_F16;
}

ncc_status_t ncc_eval_dot(ncc_interp_t *ip, const ncc_inst_t *inst,
			  const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *l = ops[0], *r = ops[1];
	const ncc_dot_dnums_t *dn = inst->dot;
	static const ncc_dot_dnums_t none;
	if (!dn)
		dn = &none;
	int32_t lr = l->shape.rank, rr = r->shape.rank;
	if (dn->lhs_batch.n != dn->rhs_batch.n || dn->lhs_contracting.n != dn->rhs_contracting.n)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "batch/contracting dim counts differ");
	int64_t lorder[NCC_MAX_RANK], rorder[NCC_MAX_RANK];
	int32_t nl = 0, nr = 0;
	int64_t B = 1, M = 1, N = 1, K = 1;
	bool used_l[NCC_MAX_RANK] = {0}, used_r[NCC_MAX_RANK] = {0};
	for (int32_t k = 0; k < dn->lhs_batch.n; k++) {
		int64_t a = dn->lhs_batch.v[k], b = dn->rhs_batch.v[k];
		if (a < 0 || a >= lr || b < 0 || b >= rr || l->shape.dims[a] != r->shape.dims[b] || used_l[a] || used_r[b])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "bad batch dims");
		used_l[a] = used_r[b] = true;
		B *= l->shape.dims[a];
		lorder[nl++] = a;
		rorder[nr++] = b;
	}
	for (int32_t k = 0; k < dn->lhs_contracting.n; k++) {
		int64_t a = dn->lhs_contracting.v[k], b = dn->rhs_contracting.v[k];
		if (a < 0 || a >= lr || b < 0 || b >= rr || l->shape.dims[a] != r->shape.dims[b] || used_l[a] || used_r[b])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "bad contracting dims");
		used_l[a] = used_r[b] = true;
		K *= l->shape.dims[a];
	}
	/* lhs packs as [B][M][K], rhs as [B][K][N] */
	int32_t obatch = nl;
	for (int32_t d = 0; d < lr; d++)
		if (!used_l[d]) {
			lorder[nl++] = d;
			M *= l->shape.dims[d];
		}
	for (int32_t k = 0; k < dn->lhs_contracting.n; k++)
		lorder[nl++] = dn->lhs_contracting.v[k];
	for (int32_t k = 0; k < dn->rhs_contracting.n; k++)
		rorder[nr++] = dn->rhs_contracting.v[k];
	for (int32_t d = 0; d < rr; d++)
		if (!used_r[d]) {
			rorder[nr++] = d;
			N *= r->shape.dims[d];
		}
	if (ncc_value_elements(out) != B * M * N || out->shape.rank != obatch + (lr - obatch - dn->lhs_contracting.n) +
							 (rr - obatch - dn->rhs_contracting.n))
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "result shape does not match batch, lhs and rhs free dims");
	ncc_etype_t lt = l->shape.etype, rt = r->shape.etype, ot = out->shape.etype;
	/* integers: products and sums wrap in the result width; floats accumulate in f64 */
	pack_kind_t kind = !ncc_is_fp(lt) && !ncc_is_fp(rt) && !ncc_is_fp(ot) ? PACK_U64
			   : small_float(lt) && small_float(rt)               ? PACK_F32
									      : PACK_F64;
	void *L = pack(l, lorder, lr, kind), *R = pack(r, rorder, rr, kind);
	void *acc = malloc(sizeof(double) * (size_t)(N ? N : 1)); /* double or uint64_t */
	ncc_status_t st = NCC_OK;
	if (!L || !R || !acc) {
		st = NCC_ERR_NOMEM;
	} else {
		for (int64_t b = 0; b < B; b++)
			for (int64_t m = 0; m < M; m++) {
				memset(acc, 0, sizeof(double) * (size_t)N);
				for (int64_t k = 0; k < K; k++)
					dot_axpy(kind, L, (b * M + m) * K + k, R, (b * K + k) * N, N, acc);
				int64_t o = (b * M + m) * N;
				for (int64_t j = 0; j < N; j++) {
					if (kind == PACK_U64)
						ncc_st_u(ot, out->data, o + j, ((const uint64_t *)acc)[j]);
					else
						ncc_st_f(ot, out->data, o + j, ((const double *)acc)[j]);
				}
			}
	}
	free(L);
	free(R);
	free(acc);
	return st;
}

/* ------------------------------------------------------------ convolution */

/* C[i * ldc + j] += sum_k A[i * ars + k * acs] * B[k * brs + j * bcs] in f64, in 4x4
 * register blocks so each loaded element feeds four multiply-adds; every element's k
 * sum runs in natural order. Used for weight-gradient convolutions (long k). */
static void gemm_f64acc(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs,
			const float *B, int64_t brs, int64_t bcs, double *C, int64_t ldc)
{
	int64_t i = 0;
	for (; i + 4 <= M; i += 4) {
		int64_t j = 0;
		for (; j + 4 <= N; j += 4) {
			double c[4][4] = {{0}};
			const float *a = A + i * ars, *b = B + j * bcs;
			for (int64_t k = 0; k < K; k++) {
				double a0 = a[k * acs], a1 = a[ars + k * acs], a2 = a[2 * ars + k * acs],
				       a3 = a[3 * ars + k * acs];
				double b0 = b[k * brs], b1 = b[k * brs + bcs], b2 = b[k * brs + 2 * bcs],
				       b3 = b[k * brs + 3 * bcs];
				c[0][0] += a0 * b0; c[0][1] += a0 * b1; c[0][2] += a0 * b2; c[0][3] += a0 * b3;
				c[1][0] += a1 * b0; c[1][1] += a1 * b1; c[1][2] += a1 * b2; c[1][3] += a1 * b3;
				c[2][0] += a2 * b0; c[2][1] += a2 * b1; c[2][2] += a2 * b2; c[2][3] += a2 * b3;
				c[3][0] += a3 * b0; c[3][1] += a3 * b1; c[3][2] += a3 * b2; c[3][3] += a3 * b3;
			}
			for (int r = 0; r < 4; r++)
				for (int q = 0; q < 4; q++)
					C[(i + r) * ldc + j + q] += c[r][q];
		}
		for (; j < N; j++)
			for (int r = 0; r < 4; r++) {
				double s = 0;
				for (int64_t k = 0; k < K; k++)
					s += (double)A[(i + r) * ars + k * acs] * B[k * brs + j * bcs];
				C[(i + r) * ldc + j] += s;
			}
	}
	for (; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;
			for (int64_t k = 0; k < K; k++)
				s += (double)A[i * ars + k * acs] * B[k * brs + j * bcs];
			C[i * ldc + j] += s;
		}
}

/* Convolution is evaluated on canonical copies: input X[batch][feature][spatial...],
 * kernel W[out][in][spatial...], as float (f32/bf16/f16 are exact in float), with f64
 * accumulation. Two loop orders compute the same sums; the choice only affects speed:
 *
 *  - per kernel offset (the usual case): for each kernel position kp, the input shifted
 *    by kp is gathered into XS[in][out_pos] (zero where the window reads padding or a
 *    dilation hole, exactly as XLA's zero padding), then acc[o][p] += W[o][i][kp] *
 *    XS[i][p] for all p: a long contiguous inner loop.
 *  - per output position (few output positions, a big kernel: the weight gradients):
 *    acc[o][p] += sum over kp of W[o][i][kp] * X[i][in_pos(p, kp)], the innermost
 *    loop running along the last kernel dim. Needs lhs dilation 1. */

typedef struct conv_geom {
	int32_t S;
	int64_t isz[NCC_MAX_RANK], ksz[NCC_MAX_RANK], osz[NCC_MAX_RANK];
	int64_t ist[NCC_MAX_RANK], kst[NCC_MAX_RANK], ost[NCC_MAX_RANK];
	int64_t IS, KS, OS;
	const ncc_window_t *win;
	/* tbl[s][k * osz[s] + o]: input index read at output o by kernel offset k, -1 for
	 * padding and dilation holes */
	int64_t *tbl[NCC_MAX_RANK];
} conv_geom_t;

/* acc[(o - o0) * OS + p] += ... for outputs o0..o1 reading input batch xb, features
 * f0..f0+KI of X (per kernel offset). xs is scratch of KI * OS floats. */
static void conv_by_offset(const conv_geom_t *g, const float *X, int64_t C, int64_t xb, int64_t f0,
			   int64_t KI, const float *Wk, int64_t o0, int64_t o1, double *acc, float *xs)
{
	int32_t S = g->S, L = S - 1;
	int64_t kidx[NCC_MAX_RANK] = {0};
	int64_t OL = S ? g->osz[L] : 1, rows = g->OS / (OL ? OL : 1);
	for (int64_t kp = 0; kp < g->KS; kp++) {
		/* gather the input read by kernel offset kp, row by row of the output */
		int64_t oidx[NCC_MAX_RANK] = {0};
		for (int64_t r = 0; r < rows && OL > 0; r++) {
			int64_t ioff = 0;
			bool valid = true;
			for (int32_t s = 0; s < L && valid; s++) {
				int64_t i = g->tbl[s][kidx[s] * g->osz[s] + oidx[s]];
				if (i < 0)
					valid = false;
				else
					ioff += i * g->ist[s];
			}
			for (int64_t ic = 0; ic < KI; ic++) {
				float *dst = xs + ic * g->OS + r * OL;
				if (!valid) {
					memset(dst, 0, sizeof(float) * (size_t)OL);
					continue;
				}
				const float *src = X + (xb * C + f0 + ic) * g->IS + ioff;
				if (S == 0) {
					dst[0] = src[0];
					continue;
				}
				const int64_t *tl = g->tbl[L] + kidx[L] * OL;
				for (int64_t ox = 0; ox < OL; ox++)
					dst[ox] = tl[ox] >= 0 ? src[tl[ox]] : 0.0f;
			}
			if (L > 0)
				ncc_next_index(L, g->osz, oidx);
		}
		/* acc[o][p] += sum_ic W[o][ic][kp] * xs[ic][p], ic in order for every element;
		 * tiles of 4 outputs x 256 positions keep the accumulators in L1 */
		const int64_t PT = 256, wst = KI * g->KS;
		for (int64_t p0 = 0; p0 < g->OS; p0 += PT) {
			int64_t pn = g->OS - p0 < PT ? g->OS - p0 : PT;
			int64_t o = o0;
			for (; o + 4 <= o1; o += 4) {
				double *restrict a0 = acc + (o - o0) * g->OS + p0, *restrict a1 = a0 + g->OS,
				       *restrict a2 = a1 + g->OS, *restrict a3 = a2 + g->OS;
				const float *w = Wk + o * wst + kp;
				for (int64_t ic = 0; ic < KI; ic++) {
					double w0 = w[ic * g->KS], w1 = w[wst + ic * g->KS], w2 = w[2 * wst + ic * g->KS],
					       w3 = w[3 * wst + ic * g->KS];
					const float *restrict x = xs + ic * g->OS + p0;
					for (int64_t p = 0; p < pn; p++) {
						double xv = x[p];
						a0[p] += w0 * xv;
						a1[p] += w1 * xv;
						a2[p] += w2 * xv;
						a3[p] += w3 * xv;
					}
				}
			}
			for (; o < o1; o++) {
				double *a = acc + (o - o0) * g->OS + p0;
				const float *w = Wk + o * wst + kp;
				for (int64_t ic = 0; ic < KI; ic++) {
					double wv = w[ic * g->KS];
					const float *x = xs + ic * g->OS + p0;
					for (int64_t p = 0; p < pn; p++)
						a[p] += wv * (double)x[p];
				}
			}
		}
		ncc_next_index(S, g->ksz, kidx);
	}
}

/* acc[((n * (o1 - o0)) + o - o0) * OS + p] for every result batch element n: the
 * kernel plane of (o, ic) is read once for all n. */
static void conv_by_position(const conv_geom_t *g, const float *X, int64_t C, int64_t xb0, int64_t ON,
			     int64_t f0, int64_t KI, const float *Wk, int64_t o0, int64_t o1, double *acc)
{
	int32_t S = g->S, L = S - 1;
	const ncc_window_dim_t *wl = &g->win->dims[L];
	int64_t sl = wl->stride > 0 ? wl->stride : 1, dl = wl->rhs_dilation > 0 ? wl->rhs_dilation : 1;
	int64_t krows = g->KS / g->ksz[L], nch = o1 - o0;
	bool full = g->OS == 1;
	for (int32_t d = 0; d < S && full; d++) {
		const ncc_window_dim_t *w = &g->win->dims[d];
		full = w->pad_lo == 0 && w->pad_hi == 0 && (w->rhs_dilation <= 1) && (w->lhs_dilation <= 1) &&
		       g->ksz[d] == g->isz[d];
	}
	if (full) {
		/* the window is the whole input: acc[n][o] = X[n][f0.., :] . W[o][:, :], one
		 * contiguous product of length KI * KS per pair */
		gemm_f64acc(ON, nch, KI * g->KS, X + (xb0 * C + f0) * g->IS, C * g->IS, 1,
			    Wk + o0 * KI * g->KS, 1, KI * g->KS, acc, nch);
		return;
	}
	for (int64_t o = o0; o < o1; o++)
		for (int64_t ic = 0; ic < KI; ic++) {
			const float *wpl = Wk + (o * KI + ic) * g->KS;
			for (int64_t n = 0; n < ON; n++) {
				const float *xpl = X + ((xb0 + n) * C + f0 + ic) * g->IS;
				double *a = acc + (n * nch + o - o0) * g->OS;
				int64_t oidx[NCC_MAX_RANK] = {0};
				for (int64_t p = 0; p < g->OS; p++) {
					/* valid range of the last kernel dim for this output position */
					int64_t base = oidx[L] * sl - wl->pad_lo; /* input index at k = 0 */
					int64_t klo = base >= 0 ? 0 : (-base + dl - 1) / dl;
					int64_t khi = g->isz[L] - 1 - base < 0 ? -1 : (g->isz[L] - 1 - base) / dl;
					if (khi > g->ksz[L] - 1)
						khi = g->ksz[L] - 1;
					int64_t kidx[NCC_MAX_RANK] = {0};
					double s = 0;
					for (int64_t kr = 0; kr < krows && klo <= khi; kr++) {
						int64_t ioff = 0, koff = 0;
						bool valid = true;
						for (int32_t d = 0; d < L && valid; d++) {
							int64_t i = g->tbl[d][kidx[d] * g->osz[d] + oidx[d]];
							if (i < 0)
								valid = false;
							ioff += i * g->ist[d];
							koff += kidx[d] * g->kst[d];
						}
						if (valid) {
							const float *x = xpl + ioff, *w = wpl + koff;
							for (int64_t k = klo; k <= khi; k++)
								s += (double)w[k] * (double)x[base + k * dl];
						}
						if (L > 0)
							ncc_next_index(L, g->ksz, kidx);
					}
					a[p] += s;
					ncc_next_index(S, g->osz, oidx);
				}
			}
		}
}

ncc_status_t ncc_eval_convolution(ncc_interp_t *ip, const ncc_inst_t *inst,
				  const ncc_value_t *const *ops, ncc_value_t *out)
{
	const ncc_value_t *x = ops[0], *kr = ops[1];
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *win = inst->window;
	static const ncc_window_t no_window;
	if (!dn)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "convolution without dim_labels");
	int32_t S = dn->nspatial;
	if (!win)
		win = &no_window;
	if (S < 0 || S > NCC_MAX_RANK - 2 || x->shape.rank != S + 2 || kr->shape.rank != S + 2 ||
	    out->shape.rank != S + 2 || win->n != S)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "ranks, dim_labels and window disagree");
	if (!small_float(x->shape.etype) || !small_float(kr->shape.etype) || !ncc_is_fp(out->shape.etype))
		return ncc_interp_fail(ip, inst, NCC_ERR_UNSUPPORTED,
				       "convolution is evaluated for f32/bf16/f16 operands only");
	int64_t fgc = inst->feature_group_count > 0 ? inst->feature_group_count : 1;
	int64_t bgc = inst->batch_group_count > 0 ? inst->batch_group_count : 1;
	int64_t Nb = x->shape.dims[dn->in_batch], C = x->shape.dims[dn->in_feature];
	int64_t KI = kr->shape.dims[dn->k_in_feature], O = kr->shape.dims[dn->k_out_feature];
	int64_t ON = out->shape.dims[dn->out_batch], OF = out->shape.dims[dn->out_feature];
	if (C != KI * fgc || O % fgc || O % bgc || Nb % bgc || ON != Nb / bgc || OF != O)
		return ncc_interp_fail(ip, inst, NCC_ERR_INVALID,
				       "feature/batch group counts do not fit: input features %" PRId64
				       ", kernel input features %" PRId64 ", outputs %" PRId64 ", groups %" PRId64 "/%" PRId64,
				       C, KI, O, fgc, bgc);
	conv_geom_t g = {.S = S, .IS = 1, .KS = 1, .OS = 1, .win = win};
	bool lhs_dilated = false;
	for (int32_t s = 0; s < S; s++) {
		g.isz[s] = x->shape.dims[dn->in_spatial[s]];
		g.ksz[s] = kr->shape.dims[dn->k_spatial[s]];
		g.osz[s] = out->shape.dims[dn->out_spatial[s]];
		if (win->dims[s].size != g.ksz[s])
			return ncc_interp_fail(ip, inst, NCC_ERR_INVALID, "window size differs from kernel dim %d", s);
		if (win->dims[s].lhs_dilation > 1)
			lhs_dilated = true;
		g.IS *= g.isz[s];
		g.KS *= g.ksz[s];
		g.OS *= g.osz[s];
	}
	ncc_strides(S, g.isz, g.ist);
	ncc_strides(S, g.ksz, g.kst);
	for (int32_t s = 0; s < S; s++) {
		g.tbl[s] = malloc(sizeof(int64_t) * (size_t)(g.ksz[s] * g.osz[s] + 1));
		if (!g.tbl[s]) {
			for (int32_t t = 0; t < s; t++)
				free(g.tbl[t]);
			return NCC_ERR_NOMEM;
		}
		for (int64_t k = 0; k < g.ksz[s]; k++)
			for (int64_t o = 0; o < g.osz[s]; o++)
				g.tbl[s][k * g.osz[s] + o] = window_input(&win->dims[s], g.isz[s], o, k);
	}
	ncc_strides(S, g.osz, g.ost);
	int64_t xorder[NCC_MAX_RANK], korder[NCC_MAX_RANK];
	xorder[0] = dn->in_batch;
	xorder[1] = dn->in_feature;
	korder[0] = dn->k_out_feature;
	korder[1] = dn->k_in_feature;
	for (int32_t s = 0; s < S; s++) {
		xorder[2 + s] = dn->in_spatial[s];
		korder[2 + s] = dn->k_spatial[s];
	}
	int64_t ofg = O / fgc, obg = O / bgc, nbg = Nb / bgc;
	/* outputs are processed in chunks that share the feature group and batch group */
	int64_t chunk = ofg, b2 = obg;
	while (b2) { /* gcd: a chunk never straddles a group boundary */
		int64_t t = chunk % b2;
		chunk = b2;
		b2 = t;
	}
	bool by_position = S > 0 && !lhs_dilated && g.OS < g.KS && ON * chunk * g.OS <= ((int64_t)1 << 23);
	float *X = pack(x, xorder, S + 2, PACK_F32), *Wk = pack(kr, korder, S + 2, PACK_F32);
	double *acc = malloc(sizeof(double) * (size_t)((by_position ? ON : 1) * chunk * g.OS + 1));
	float *xs = by_position ? NULL : malloc(sizeof(float) * (size_t)(KI * g.OS + 1));
	ncc_status_t st = NCC_OK;
	if (!X || !Wk || !acc || (!by_position && !xs)) {
		st = NCC_ERR_NOMEM;
		goto out;
	}
	/* kernel reversal flips the kernel along that dim */
	for (int32_t s = 0; s < S; s++) {
		if (!win->dims[s].reversal)
			continue;
		int64_t inner = g.kst[s];
		int64_t outer = O * KI * (g.KS / (inner * g.ksz[s]));
		for (int64_t a = 0; a < outer; a++)
			for (int64_t lo = 0, hi = g.ksz[s] - 1; lo < hi; lo++, hi--)
				for (int64_t j = 0; j < inner; j++) {
					float *p = Wk + (a * g.ksz[s] + lo) * inner + j, *q = Wk + (a * g.ksz[s] + hi) * inner + j;
					float tmp = *p;
					*p = *q;
					*q = tmp;
				}
	}
	int64_t outst[NCC_MAX_RANK];
	ncc_strides(out->shape.rank, out->shape.dims, outst);
	ncc_etype_t ot = out->shape.etype;
	for (int64_t o0 = 0; o0 < O; o0 += chunk) {
		int64_t o1 = o0 + chunk;
		int64_t grp = o0 / ofg;              /* feature group */
		int64_t xb0 = (o0 / obg) * nbg;      /* first input batch element read */
		int64_t nn = by_position ? ON : 1;   /* result batch elements per pass */
		for (int64_t n0 = 0; n0 < ON; n0 += nn) {
			memset(acc, 0, sizeof(double) * (size_t)(nn * chunk * g.OS));
			if (by_position)
				conv_by_position(&g, X, C, xb0, ON, grp * KI, KI, Wk, o0, o1, acc);
			else
				conv_by_offset(&g, X, C, xb0 + n0, grp * KI, KI, Wk, o0, o1, acc, xs);
			for (int64_t n = n0; n < n0 + nn; n++)
				for (int64_t o = o0; o < o1; o++) {
					int64_t oidx[NCC_MAX_RANK] = {0};
					int64_t base = n * outst[dn->out_batch] + o * outst[dn->out_feature];
					const double *a = acc + ((n - n0) * chunk + o - o0) * g.OS;
					for (int64_t p = 0; p < g.OS; p++) {
						int64_t off = base;
						for (int32_t s = 0; s < S; s++)
							off += oidx[s] * outst[dn->out_spatial[s]];
						ncc_st_fp(ot, out->data, off, a[p]);
						ncc_next_index(S, g.osz, oidx);
					}
				}
		}
	}
out:
	for (int32_t s = 0; s < S; s++)
		free(g.tbl[s]);
	free(acc);
	free(xs);
	free(X);
	free(Wk);
	return st;
}
