/* Lowering of select-and-scatter (the max/min-pool gradient): the support check, the few-windows form (per-window selection + one SCATTER) and the per-window-offset form (ALU steps over every window). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* The ALU op that combines the output (parameter 0) with the source (parameter 1) in
 * a select-and-scatter's scatter computation, or -1. Only commutative combiners: the
 * lowering applies the sources that select one position in window-offset order, not
 * in source order. */
static int sas_scatter_op(const ncc_comp_t *c)
{
	switch (ncc_lower_combiner_of(c)) {
	case ISA_RED_SUM: return ISA_ALU_ADD;
	case ISA_RED_PROD: return ISA_ALU_MUL;
	case ISA_RED_MAX: return ISA_ALU_MAX;
	case ISA_RED_MIN: return ISA_ALU_MIN;
	case ISA_RED_AND: return ISA_ALU_AND;
	case ISA_RED_OR: return ISA_ALU_OR;
	default: return -1;
	}
}

bool ncc_lower_select_and_scatter_supports(const ncc_inst_t *inst, const char **out_reason)
{
	const ncc_inst_t *sr = inst->select ? inst->select->root : NULL;
	if (!sr || sr->op != NCC_OP_COMPARE || sr->noperands != 2 ||
	    sr->operands[0]->op != NCC_OP_PARAMETER || sr->operands[1]->op != NCC_OP_PARAMETER ||
	    sr->operands[0]->parameter_number != 0 ||
	    !(sr->cmp_dir == NCC_CMP_GE || sr->cmp_dir == NCC_CMP_GT ||
	      sr->cmp_dir == NCC_CMP_LE || sr->cmp_dir == NCC_CMP_LT)) {
		*out_reason = "unsupported select-and-scatter select computation (only compare GE/GT/LE/LT of its parameters)";
		return false;
	}
	if (sas_scatter_op(inst->scatter_comp) < 0) {
		*out_reason = "unsupported select-and-scatter scatter computation (only add, multiply, "
			      "maximum, minimum, and, or of its parameters)";
		return false;
	}
	if (!inst->window || inst->window->n != inst->shape.rank) {
		*out_reason = "unsupported select-and-scatter window";
		return false;
	}
	return true;
}

/* The part of the padded view p that holds the unpadded value (of dims `dims`):
 * offset by the window's low padding in every dim. */
static ncc_view_t padded_interior(const ncc_view_t *p, const ncc_window_t *w, const int64_t *dims)
{
	ncc_view_t v = *p;
	int64_t off = (int64_t)p->offset, es = (int64_t)isa_dtype_size(p->dtype);
	for (int32_t d = 0; d < p->rank; d++) {
		off += w->dims[d].pad_lo * p->strides[d] * es;
		v.dims[d] = dims[d];
	}
	v.offset = (uint64_t)off;
	return v;
}

/* A select-and-scatter over at most this many windows (one in torch_xla's max-pool
 * index loop) finds each window's selected position and scatters once, in a fixed
 * number of instructions; more windows take the per-window-offset form below,
 * whose instructions each cover every window. */
#define SAS_FEW_WINDOWS 64

/* One SCATTER of the source (its windows in row-major order) into the padded
 * output po at lin (integers, one per window, in po's elements from its
 * element `first`; negative: nothing), with the scatter combiner, in source order as XLA applies
 * it. */
static ncc_status_t sas_scatter(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *po,
				int64_t first, const ncc_view_t *src, const ncc_view_t *lin)
{
	ncc_view_t sd;
	ncc_status_t st = ncc_lower_make_dense(ctx, inst, src, &sd);
	if (st != NCC_OK)
		return st;
	/* the (padded) output from its first element, one element per row */
	int64_t total = 0;
	for (int32_t d = 0; d < po->rank; d++)
		total += (po->dims[d] - 1) * po->strides[d];
	ncc_view_t table = *po, rows = sd;
	table.rank = rows.rank = 2;
	table.offset = (uint64_t)((int64_t)po->offset + first * (int64_t)isa_dtype_size(po->dtype));
	table.dims[0] = total + 1 - first;
	table.strides[0] = 1;
	table.dims[1] = rows.dims[1] = 1;
	table.strides[1] = rows.strides[1] = 1;
	rows.dims[0] = ncc_view_elements(src);
	rows.strides[0] = 1;
	return ncc_lower_rows(ctx, inst, ncc_lower_combiner_of(inst->scatter_comp), &table, &rows, lin);
}

/* The few-windows form: with X the operand's windows seen as [o0, w0, o1, w1, ...],
 *   M = REDUCE max/min over the w dims; pos = SELECT(X == M, k, LIMIT) with k the
 *   element's index in its window (a constant); sel = REDUCE MIN (first; MAX for
 *   GT/LT: last) of pos; lin = window start + offset of element sel (GATHER from a
 *   constant table), or -1 when the window has no match (NaN); SCATTER of the source
 *   into the output seen as [N, 1] at lin with the scatter combiner, in source order
 *   as XLA applies it. */
static ncc_status_t sas_few_windows(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const ncc_view_t *px, const ncc_view_t *po, const ncc_view_t *src,
				    bool is_max, bool backwards)
{
	const ncc_window_t *w = inst->window;
	int32_t rank = px->rank;
	int64_t nw = ncc_view_elements(src), nk = ncc_lower_window_elements(w);
	ncc_view_t m, wv, keep, eq, pos, sel, offs, lin, none;
	ncc_status_t st = ncc_lower_temp_view(ctx, px->dtype, rank, src->dims, &m);
	if (st != NCC_OK)
		return st;
	uint32_t mask = ncc_lower_window_views(w, px, &m, &wv, &keep);
	st = ncc_lower_reduce_emit(ctx, inst, is_max ? ISA_RED_MAX : ISA_RED_MIN, &keep, &wv, mask, false);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, wv.rank, wv.dims, &eq);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S32, wv.rank, wv.dims, &pos);
	if (st != NCC_OK)
		return st;
	ncc_view_t a[3];
	a[0] = wv; a[1] = ncc_view_expand_keep(&keep, &wv);
	st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &eq, 2, a);
	/* k per window element (row-major over the w dims), broadcast over the o dims;
	 * the element offsets in the (padded) output; the windows' starts */
	int32_t *kidx = malloc((size_t)nk * sizeof(int32_t));
	int64_t *koff = malloc((size_t)nk * sizeof(int64_t));
	int64_t *wstart = malloc((size_t)nw * sizeof(int64_t));
	if (!kidx || !koff || !wstart) {
		free(kidx);
		free(koff);
		free(wstart);
		return ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
	}
	for (int64_t k = 0; k < nk; k++) {
		int64_t rem = k, o = 0;
		for (int32_t d = rank - 1; d >= 0; d--) {
			o += (rem % w->dims[d].size) * w->dims[d].rhs_dilation * po->strides[d];
			rem /= w->dims[d].size;
		}
		kidx[k] = (int32_t)k;
		koff[k] = o;
	}
	for (int64_t q = 0; q < nw; q++) {
		int64_t rem = q, o = 0;
		for (int32_t d = rank - 1; d >= 0; d--) {
			o += (rem % src->dims[d]) * w->dims[d].stride * po->strides[d];
			rem /= src->dims[d];
		}
		wstart[q] = o;
	}
	uint64_t ck = 0, co = 0, cw = 0;
	if (st == NCC_OK)
		st = ncc_lower_add_const(ctx, kidx, (uint64_t)nk * sizeof(int32_t), &ck);
	if (st == NCC_OK)
		st = ncc_lower_add_const(ctx, koff, (uint64_t)nk * sizeof(int64_t), &co);
	if (st == NCC_OK)
		st = ncc_lower_add_const(ctx, wstart, (uint64_t)nw * sizeof(int64_t), &cw);
	free(kidx);
	free(koff);
	free(wstart);
	if (st != NCC_OK)
		return st;
	ncc_view_t kv = wv;
	kv.region = ISA_REGION_CONST;
	kv.offset = ck;
	kv.dtype = ISA_DT_S32;
	for (int32_t d = rank - 1, s = 1; d >= 0; d--) {
		kv.strides[2 * d] = 0;
		kv.strides[2 * d + 1] = s;
		s *= (int32_t)w->dims[d].size;
	}
	ncc_view_t limit;
	int32_t lim = backwards ? -1 : INT32_MAX;
	uint64_t cl;
	st = ncc_lower_add_const(ctx, &lim, sizeof(lim), &cl);
	limit = ncc_view_dense(ISA_REGION_CONST, cl, ISA_DT_S32, 0, NULL);
	a[0] = eq; a[1] = kv; a[2] = ncc_view_bcast_scalar(&limit, wv.rank, wv.dims);
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &pos, 3, a);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S32, 1, &nw, &sel);
	if (st != NCC_OK)
		return st;
	ncc_view_t selk = keep;
	selk.region = sel.region;
	selk.offset = sel.offset;
	selk.dtype = ISA_DT_S32;
	{
		/* keep's layout for a dense [src dims] s32 buffer */
		ncc_view_t d = ncc_view_dense(sel.region, sel.offset, ISA_DT_S32, rank, src->dims);
		for (int32_t k = 0; k < rank; k++) {
			selk.strides[2 * k] = d.strides[k];
			selk.strides[2 * k + 1] = 0;
		}
	}
	st = ncc_lower_reduce_emit(ctx, inst, backwards ? ISA_RED_MAX : ISA_RED_MIN, &selk, &pos, mask, false);
	int64_t two[2] = { nw, 1 };
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, 2, two, &offs);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, 1, &nw, &lin);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, 1, &nw, &none);
	if (st != NCC_OK)
		return st;
	int64_t kt[2] = { nk, 1 };
	ncc_view_t ktab = ncc_view_dense(ISA_REGION_CONST, co, ISA_DT_S64, 2, kt);
	st = ncc_lower_rows(ctx, inst, -1, &ktab, &offs, &sel);
	ncc_view_t offs1 = ncc_view_dense(offs.region, offs.offset, ISA_DT_S64, 1, &nw);
	a[0] = offs1; a[1] = ncc_view_dense(ISA_REGION_CONST, cw, ISA_DT_S64, 1, &nw);
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &lin, 2, a);
	/* a window without a match (its max is NaN): nothing is scattered */
	a[0] = sel; a[1] = ncc_view_bcast_scalar(&limit, 1, &nw);
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &none, 2, a);
	ncc_view_t m1;
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, -1, &m1);
	a[0] = none; a[1] = ncc_view_bcast_scalar(&m1, 1, &nw); a[2] = lin;
	if (st == NCC_OK)
		st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &lin, 3, a);
	return st != NCC_OK ? st : sas_scatter(ctx, inst, po, 0, src, &lin);
}

/* f32 holds every integer below this exactly: the dense-windows form's indices */
#define SAS_F32_EXACT (1 << 24)

/* The dense-windows form's FUSED walks rows of this many windows at least
 * (its IOTA makes every row a segment of its own: steps cost per row) */
#define SAS_MIN_ROW 16

/* The dense-windows form, for f32 windows of at most 13 elements (a
 * max-pool's 3x3: the program's registers) over many windows, a chunk of the source's
 * outer dim at a time:
 *   Xc [k...][o...] = the chunk's windows' elements, one COPY (an im2col of
 *   the padded operand, ncc_lower_window_im2col), so that what follows reads dense rows: the
 *   per-offset form's views step by the window stride, which the
 *   elementwise kernels gathered element by element (ResNet-18 b8's max-pool
 *   gradient, 45 such ALU steps: 8.5 ms);
 *   lin [outer][inner] = one FUSED over the windows, in f32 (vector lanes;
 *   every value an integer under 2^24, so exact): M = max (min) of the nk
 *   values Xc[k]; the offset in the padded output of the first (GT/LT: the
 *   last) k with Xc[k] >= M (<= M: only a value equal to M), -2^30 when
 *   none is (M is a NaN); plus the window's start from the chunk's first:
 *   IOTA x step over the outer dims (those whose window steps fold into one),
 *   a constant table over the inner ones; converted to s32;
 *   one SCATTER of the chunk's source into the padded output from the
 *   chunk's first window at lin, which skips negative indices (sas_scatter).
 * Each window selects the element the per-offset form selects; the sources
 * combine in source order, as XLA applies them (the per-offset form added
 * them in window-offset order, which could differ in a sum's last bit).
 * *done false (nothing
 * emitted) when the shapes do not fit (rank, dtype, indices over 2^24, rows
 * under SAS_MIN_ROW). */
static ncc_status_t sas_dense_windows(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				      const ncc_view_t *px, const ncc_view_t *po, const ncc_view_t *src,
				      bool is_max, bool backwards, bool *done)
{
	const ncc_window_t *w = inst->window;
	int32_t rank = px->rank;
	*done = false;
	int64_t nk = ncc_lower_window_elements(w);
	/* the source's dims of more than one element, and each one's window
	 * step in the padded output's elements */
	int32_t od[NCC_MAX_RANK], nod = 0;
	int64_t step[NCC_MAX_RANK];
	for (int32_t d = 0; d < rank; d++)
		if (src->dims[d] > 1) {
			step[nod] = w->dims[d].stride * po->strides[d];
			od[nod++] = d;
		}
	isa_dtype_t xt = px->dtype;
	if (nk < 1 || 2 * nk + 5 > ISA_FUSED_MAX_REGS || nod == 0 || 2 * rank > NCC_MAX_RANK ||
	    xt != ISA_DT_F32)
		return NCC_OK;
	/* outer: od[0..g), whose steps fold into one (a batch's and features'
	 * planes); inner: the rest, in a table */
	int32_t g = 1;
	while (g < nod && step[g - 1] == step[g] * src->dims[od[g]])
		g++;
	int64_t inner = 1, outer_per = 1;
	for (int32_t q = g; q < nod; q++)
		inner *= src->dims[od[q]];
	for (int32_t q = 1; q < g; q++)
		outer_per *= src->dims[od[q]];
	if (inner < SAS_MIN_ROW)
		return NCC_OK;
	int64_t es = (int64_t)isa_dtype_size(xt);
	/* the window elements between the outer and the inner dims (a
	 * max-pool's [N][C][3x3][OH][OW]): runs of inner values, nk * inner
	 * apart (g < nod: inner holds a row) */
	int32_t ninner = rank - od[g];
	/* chunks of the outermost source dim */
	int32_t c0 = od[0];
	int64_t ctot = src->dims[c0], per = ncc_view_elements(src) / ctot;
	int64_t cn = ncc_lower_window_part(nk, es, ctot, per);

	/* offsets (po's elements) of each window element, and the largest index
	 * in a chunk */
	int64_t koff[ISA_FUSED_MAX_INPUTS], kmax = 0, omax = (cn * outer_per - 1) * step[g - 1];
	for (int64_t k = 0; k < nk; k++) {
		int64_t rem = k, o = 0;
		for (int32_t d = rank - 1; d >= 0; d--) {
			o += (rem % w->dims[d].size) * w->dims[d].rhs_dilation * po->strides[d];
			rem /= w->dims[d].size;
		}
		koff[k] = o;
		kmax = o > kmax ? o : kmax;
	}
	for (int32_t q = g; q < nod; q++)
		omax += (src->dims[od[q]] - 1) * step[q];
	if (kmax + omax >= SAS_F32_EXACT)
		return NCC_OK;
	*done = true;

	/* the inner windows' starts, row-major */
	float *tab = malloc((size_t)inner * sizeof(float));
	if (!tab)
		return ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < inner; i++) {
		int64_t rem = i, o = 0;
		for (int32_t q = nod - 1; q >= g; q--) {
			o += (rem % src->dims[od[q]]) * step[q];
			rem /= src->dims[od[q]];
		}
		tab[i] = (float)o;
	}
	uint64_t ctab;
	ncc_status_t st = ncc_lower_add_const(ctx, tab, (uint64_t)inner * sizeof(float), &ctab);
	free(tab);
	/* the window buffer [k dims][chunk's o dims] and the indices [chunk's o dims] */
	ncc_view_t xbuf, lbuf;
	int64_t xd[1] = { nk * cn * per }, ld[1] = { cn * per };
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, xt, 1, xd, &xbuf);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S32, 1, ld, &lbuf);
	if (st != NCC_OK)
		return st;

	/* the program: registers 0..nk-1 the window's values, nk the table; then M, the offset, the start and
	 * one constant per window element (filled once: cached across blocks) */
	uint32_t rTab = (uint32_t)nk, rM = rTab + 1, rO = rM + 1, rS = rM + 2, rC = rM + 3;
	isa_fused_op_t code[ISA_FUSED_MAX_CODE];
	int32_t n = 0;
	uint32_t mop = is_max ? ISA_ALU_MAX : ISA_ALU_MIN;
	uint32_t cmp = is_max ? ISA_ALU_CMP_GE : ISA_ALU_CMP_LE;
	uint32_t m = 0;
	for (int64_t k = 1; k < nk; k++, m = rM)
		code[n++] = ncc_lower_fused_step(mop, rM, ISA_DT_F32, m, (uint32_t)k, 0, 0);
	code[n++] = ncc_lower_fused_step(ISA_FUSED_CONST, rO, ISA_DT_F32, 0, 0, 0, -(double)(1 << 30));
	for (int64_t j = 0; j < nk; j++) {
		/* the chosen k is the one applied last */
		int64_t k = backwards ? j : nk - 1 - j;
		uint32_t rk = rC + 1 + (uint32_t)k;
		code[n++] = ncc_lower_fused_step(cmp, rC, ISA_DT_PRED, (uint32_t)k, m, 0, 0);
		code[n++] = ncc_lower_fused_step(ISA_FUSED_CONST, rk, ISA_DT_F32, 0, 0, 0, (double)koff[k]);
		code[n++] = ncc_lower_fused_step(ISA_ALU_SELECT, rO, ISA_DT_F32, rC, rk, rO, 0);
	}
	code[n++] = ncc_lower_fused_step(ISA_FUSED_IOTA, rS, ISA_DT_F32, 0, 0, 0, 0);
	code[n++] = ncc_lower_fused_step(ISA_FUSED_CONST, rC, ISA_DT_F32, 0, 0, 0, (double)step[g - 1]);
	code[n++] = ncc_lower_fused_step(ISA_ALU_MUL, rS, ISA_DT_F32, rS, rC, 0, 0);
	code[n++] = ncc_lower_fused_step(ISA_ALU_ADD, rS, ISA_DT_F32, rS, rTab, 0, 0);
	code[n++] = ncc_lower_fused_step(ISA_ALU_ADD, rO, ISA_DT_F32, rO, rS, 0, 0);
	code[n++] = ncc_lower_fused_step(ISA_FUSED_CONVERT, rO, ISA_DT_S32, rO, 0, 0, 0);
	const ncc_inst_t *from[ISA_FUSED_MAX_CODE];
	for (int32_t q = 0; q < n; q++)
		from[q] = inst;
	uint32_t first_dbg;
	if ((st = ncc_lower_debug_entries(ctx, from, n, &first_dbg)) != NCC_OK)
		return st;
	isa_fused_desc_t h;
	memset(&h, 0, sizeof(h));
	h.magic = ISA_FUSED_MAGIC;
	h.n_inputs = (uint16_t)(nk + 1);
	h.n_code = (uint16_t)n;
	h.n_regs = (uint8_t)(rC + 1 + nk);
	h.out_reg = (uint8_t)rO;

	for (int64_t c = 0; c < ctot && st == NCC_OK; c += cn) {
		int64_t cc = ctot - c < cn ? ctot - c : cn;
		/* the chunk's source and windows */
		ncc_view_t sv = *src, wv = *px;
		sv.dims[c0] = cc;
		sv.offset = (uint64_t)((int64_t)src->offset +
				       c * src->strides[c0] * (int64_t)isa_dtype_size(src->dtype));
		int64_t first = c * step[0];
		wv.offset = (uint64_t)((int64_t)px->offset + c * w->dims[c0].stride * px->strides[c0] * es);
		if ((st = ncc_lower_window_im2col(ctx, inst, w, &wv, sv.dims, ninner, &xbuf)) != NCC_OK)
			break;
		/* the FUSED's operands: [outer, inner], dense but the table */
		int64_t cw = cc * per;
		uint64_t shp[2] = { (uint64_t)(cc * outer_per), (uint64_t)inner };
		isa_ap_t aps[1 + ISA_FUSED_MAX_INPUTS];
		aps[0] = isa_ap_contig(lbuf.region, lbuf.offset, ISA_DT_S32, 2, shp);
		int64_t ks = ncc_lower_window_col_stride(sv.dims, rank, ninner, nk, rank);
		for (int64_t k = 0; k < nk; k++) {
			aps[1 + k] = isa_ap_contig(xbuf.region, xbuf.offset + (uint64_t)(k * ks * es), xt,
						   2, shp);
			aps[1 + k].stride[0] =
				ncc_lower_window_col_stride(sv.dims, rank, ninner, nk, od[g - 1]);
		}
		aps[1 + nk] = isa_ap_contig(ISA_REGION_CONST, ctab, ISA_DT_F32, 2, shp);
		aps[1 + nk].stride[0] = 0;
		if ((st = ncc_lower_fused_insn(ctx, inst, aps, (int32_t)nk + 1, &h, code, first_dbg,
					       false)) != NCC_OK)
			break;
		ncc_view_t lin = ncc_view_dense(lbuf.region, lbuf.offset, ISA_DT_S32, 1, &cw);
		st = sas_scatter(ctx, inst, po, first, &sv, &lin);
	}
	return st;
}

/* The SELSCAT form (ISA 1.5, docs/isa.md "SELSCAT"): one float dtype (f32,
 * bf16 or f16) for operand, source, output and init, the
 * select a compare of parameter 0 with parameter 1, a sum, product, max or
 * min scatter, a window over at most two dims (size, stride, window dilation,
 * non-negative padding) whose other dims (at most two) are untouched (size 1,
 * stride 1, no padding or dilation). Then the output takes init (one COPY)
 * and one SELSCAT walks every window on the unpadded operand: no padded
 * copies, im2col, index program or SCATTER (ResNet-18 b8's max-pool gradient,
 * 11 instructions and 6.3 ms a step before). *done false (nothing emitted)
 * for anything else. */
static ncc_status_t sas_selscat(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *x,
				const ncc_view_t *src, const ncc_view_t *init, const ncc_view_t *out,
				bool *done)
{
	*done = false;
	const ncc_window_t *w = inst->window;
	const ncc_inst_t *sr = inst->select->root;
	int32_t rank = x->rank;
	uint32_t cmp, op;
	switch (sr->cmp_dir) {
	case NCC_CMP_GE: cmp = ISA_ALU_CMP_GE; break;
	case NCC_CMP_GT: cmp = ISA_ALU_CMP_GT; break;
	case NCC_CMP_LE: cmp = ISA_ALU_CMP_LE; break;
	default: cmp = ISA_ALU_CMP_LT; break;
	}
	switch (sas_scatter_op(inst->scatter_comp)) {
	case ISA_ALU_ADD: op = ISA_RED_SUM; break;
	case ISA_ALU_MUL: op = ISA_RED_PROD; break;
	case ISA_ALU_MAX: op = ISA_RED_MAX; break;
	case ISA_ALU_MIN: op = ISA_RED_MIN; break;
	default: return NCC_OK;
	}
	isa_dtype_t dt = x->dtype;
	if (sr->operands[1]->parameter_number != 1 || !isa_dtype_is_float(dt) ||
	    src->dtype != dt || out->dtype != dt || init->dtype != dt || rank > 4)
		return NCC_OK;
	/* the plane dims (untouched by the window) and the spatial ones */
	int32_t pd[2], sd[2], np = 0, ns = 0;
	for (int32_t d = 0; d < rank; d++) {
		const ncc_window_dim_t *wd = &w->dims[d];
		if (wd->lhs_dilation != 1 || wd->reversal || wd->pad_lo < 0 || wd->pad_hi < 0 ||
		    wd->size < 1 || wd->stride < 1 || wd->rhs_dilation < 1 ||
		    wd->size > ISA_CONV_MAX_WINDOW || wd->stride > ISA_CONV_MAX_WINDOW ||
		    wd->rhs_dilation > ISA_CONV_MAX_WINDOW || wd->pad_lo > ISA_CONV_MAX_WINDOW)
			return NCC_OK;
		bool plain = wd->size == 1 && wd->stride == 1 && wd->pad_lo == 0 && wd->pad_hi == 0 &&
			     src->dims[d] == x->dims[d];
		if (plain && np < 2)
			pd[np++] = d;
		else if (!plain && ns < 2)
			sd[ns++] = d;
		else if (plain && ns < 2 && np == 2)
			sd[ns++] = d; /* a third untouched dim: a size-1 window dim */
		else
			return NCC_OK;
	}
	isa_insn_t in = isa_insn_init(ISA_OP_SELSCAT, op);
	in.param = cmp;
	in.n_ap = 4;
	const ncc_view_t *vs[3] = { out, x, src };
	int64_t size[2] = { 1, 1 }, stride[2] = { 1, 1 }, dil[2] = { 1, 1 }, lo[2] = { 0, 0 };
	for (int a = 0; a < 3; a++) {
		isa_ap_t *ap = &in.ap[a];
		ap->region = vs[a]->region;
		ap->dtype = (uint8_t)dt;
		ap->offset = vs[a]->offset;
		ap->rank = 4;
		for (int i = 0; i < 4; i++) {
			/* [plane dims][spatial dims], each padded at the front with size 1 */
			int32_t d = i < 2 ? (i - (2 - np) >= 0 ? pd[i - (2 - np)] : -1)
					  : (i - 2 - (2 - ns) >= 0 ? sd[i - 2 - (2 - ns)] : -1);
			ap->shape[i] = d < 0 ? 1 : (uint64_t)vs[a]->dims[d];
			ap->stride[i] = d < 0 || ap->shape[i] == 1 ? 0 : vs[a]->strides[d];
		}
	}
	for (int i = 0; i < 2; i++) {
		int32_t s = i - (2 - ns);
		if (s < 0)
			continue;
		const ncc_window_dim_t *wd = &w->dims[sd[s]];
		size[i] = wd->size;
		stride[i] = wd->stride;
		dil[i] = wd->rhs_dilation;
		lo[i] = wd->pad_lo;
	}
	in.ap[3] = isa_selscat_window(size, stride, dil, lo);
	ns_status_t vst = isa_insn_validate(&in, ISA_REGION_NONE, 1);
	if (vst) {
		ns_status_ignore(vst); /* e.g. beyond the work bound: the other forms */
		return NCC_OK;
	}
	*done = true;
	ncc_view_t ib = ncc_view_bcast_scalar(init, rank, out->dims);
	ncc_status_t st = ncc_lower_copy(ctx, inst, out, &ib);
	if (st != NCC_OK || ncc_view_elements(src) == 0)
		return st;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &in, NULL);
}

/* select-and-scatter (max/min-pool gradient): for every window the first element
 * that the select computation prefers receives the source value, combined by the
 * scatter computation into an output initialised with init. With M the window max
 * (min), per window offset k in window order: hit = (X_k == M) and not yet taken;
 * out_k += hit ? source : 0 (add), else out_k = hit ? scatter(out_k, source) : out_k;
 * taken |= hit.
 * X_k and out_k are strided views of the padded operand/output at offset k, so each
 * step is a few ALU instructions over the whole source shape. Padding is filled with
 * -inf (+inf) so it is never chosen over a real element. */
ncc_status_t ncc_lower_select_and_scatter(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t x, src, init, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &x);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &src);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 2, &init);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	bool done;
	st = sas_selscat(ctx, inst, &x, &src, &init, &out, &done);
	if (st != NCC_OK || done)
		return st;
	int32_t rank = x.rank;
	const ncc_window_t *w = inst->window;
	int sop = sas_scatter_op(inst->scatter_comp);
	ncc_cmp_dir_t dir = inst->select->root->cmp_dir;
	bool is_max = dir == NCC_CMP_GE || dir == NCC_CMP_GT;
	/* ties: GE/LE keep the earlier element (first wins); GT/LT the later one, which we
	 * get by walking the window backwards */
	bool backwards = dir == NCC_CMP_GT || dir == NCC_CMP_LT;
	int64_t pd[NCC_MAX_RANK];
	bool padded = false;
	for (int32_t d = 0; d < rank; d++) {
		pd[d] = x.dims[d] + w->dims[d].pad_lo + w->dims[d].pad_hi;
		if (w->dims[d].pad_lo || w->dims[d].pad_hi)
			padded = true;
		if (w->dims[d].pad_lo < 0 || w->dims[d].pad_hi < 0)
			return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
					      "unsupported select-and-scatter with negative padding");
	}
	int64_t es = (int64_t)isa_dtype_size(x.dtype), oes = (int64_t)isa_dtype_size(out.dtype);
	ncc_view_t px = x, po = out;
	if (padded) {
		ncc_view_t inf, fill;
		st = ncc_lower_temp_view(ctx, x.dtype, rank, pd, &px);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, x.dtype, is_max ? -INFINITY : INFINITY, &inf);
		if (st != NCC_OK)
			return st;
		fill = ncc_view_bcast_scalar(&inf, rank, pd);
		st = ncc_lower_copy(ctx, inst, &px, &fill);
		ncc_view_t dst = padded_interior(&px, w, x.dims);
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &dst, &x);
		if (st == NCC_OK)
			st = ncc_lower_temp_view(ctx, out.dtype, rank, pd, &po);
		if (st != NCC_OK)
			return st;
	}
	ncc_view_t ib = ncc_view_bcast_scalar(&init, rank, po.dims);
	st = ncc_lower_copy(ctx, inst, &po, &ib);
	if (st != NCC_OK || ncc_view_elements(&src) == 0)
		goto crop;
	if (ncc_view_elements(&src) <= SAS_FEW_WINDOWS) {
		st = sas_few_windows(ctx, inst, &px, &po, &src, is_max, backwards);
		goto crop;
	}
	st = sas_dense_windows(ctx, inst, &px, &po, &src, is_max, backwards, &done);
	if (st != NCC_OK || done)
		goto crop;
	/* M = window max/min: the reduce-window view trick */
	ncc_view_t m, taken, hit, zero, contrib;
	st = ncc_lower_temp_view(ctx, x.dtype, rank, src.dims, &m);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, rank, src.dims, &taken);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_PRED, rank, src.dims, &hit);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, out.dtype, rank, src.dims, &contrib);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, out.dtype, 0, &zero);
	if (st != NCC_OK)
		return st;
	/* m has the source's dims, one element per window */
	ncc_view_t wv, keep;
	uint32_t mask = ncc_lower_window_views(w, &px, &m, &wv, &keep);
	int64_t nk = ncc_lower_window_elements(w);
	st = ncc_lower_reduce_emit(ctx, inst, is_max ? ISA_RED_MAX : ISA_RED_MIN, &keep, &wv, mask, false);
	if (st != NCC_OK)
		return st;
	ncc_view_t f;
	st = ncc_lower_const_scalar(ctx, ISA_DT_PRED, 0, &f);
	if (st != NCC_OK)
		return st;
	ncc_view_t fb = ncc_view_bcast_scalar(&f, rank, src.dims);
	st = ncc_lower_copy(ctx, inst, &taken, &fb);
	ncc_view_t zb = ncc_view_bcast_scalar(&zero, rank, src.dims);
	for (int64_t q = 0; q < nk && st == NCC_OK; q++) {
		int64_t kp = backwards ? nk - 1 - q : q, rem = kp, ki[NCC_MAX_RANK];
		for (int32_t d = rank - 1; d >= 0; d--) {
			ki[d] = rem % w->dims[d].size;
			rem /= w->dims[d].size;
		}
		ncc_view_t xk = px, ok = po;
		int64_t xo = (int64_t)px.offset, oo = (int64_t)po.offset;
		for (int32_t d = 0; d < rank; d++) {
			xk.dims[d] = ok.dims[d] = src.dims[d];
			xk.strides[d] = px.strides[d] * w->dims[d].stride;
			ok.strides[d] = po.strides[d] * w->dims[d].stride;
			xo += ki[d] * w->dims[d].rhs_dilation * px.strides[d] * es;
			oo += ki[d] * w->dims[d].rhs_dilation * po.strides[d] * oes;
		}
		xk.offset = (uint64_t)xo;
		ok.offset = (uint64_t)oo;
		ncc_view_t a[3];
		a[0] = xk; a[1] = m;
		st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_EQ, &hit, 2, a);
		/* hit = hit > taken (pred: hit and not taken) */
		a[0] = hit; a[1] = taken;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_CMP_GT, &hit, 2, a);
		a[0] = taken; a[1] = hit;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_OR, &taken, 2, a);
		if (sop == ISA_ALU_ADD) {
			a[0] = hit; a[1] = src; a[2] = zb;
			if (st == NCC_OK)
				st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &contrib, 3, a);
			a[0] = ok; a[1] = contrib;
			if (st == NCC_OK)
				st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &ok, 2, a);
			continue;
		}
		/* out_k = hit ? scatter(out_k, source) : out_k */
		a[0] = ok; a[1] = src;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, (uint32_t)sop, &contrib, 2, a);
		a[0] = hit; a[1] = contrib; a[2] = ok;
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_SELECT, &ok, 3, a);
	}
	if (st != NCC_OK)
		return st;
crop:
	if (st != NCC_OK || !padded)
		return st;
	ncc_view_t inner = padded_interior(&po, w, out.dims);
	return ncc_lower_copy(ctx, inst, &out, &inner);
}
