/* Lowering of data-movement HLO ops: constant, parameter-free views (broadcast, reshape, bitcast, transpose, slice, reverse), tuple/get-tuple-element, concatenate, pad. */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

bool ncc_lower_shape_supports(const ncc_inst_t *inst, const char **out_reason)
{
	switch (inst->op) {
	case NCC_OP_PARAMETER: /* bound to an input tensor or a caller's value by the driver */
		return true;
	case NCC_OP_CONSTANT:
		if (inst->shape.etype == NCC_TUPLE) {
			*out_reason = "unsupported tuple constant";
			return false;
		}
		if (inst->literal.present && inst->literal.elided) {
			/* "{...}": the text does not have the values; compiling zeros
			 * would run silently wrong */
			*out_reason = "elided constant {...}: its values are not in the HLO text "
				      "(dump the HLO with large constants printed)";
			return false;
		}
		return true;
	case NCC_OP_BROADCAST: case NCC_OP_RESHAPE: case NCC_OP_BITCAST: case NCC_OP_TRANSPOSE:
	case NCC_OP_SLICE: case NCC_OP_REVERSE: case NCC_OP_TUPLE: case NCC_OP_GET_TUPLE_ELEMENT:
	case NCC_OP_CONCATENATE: case NCC_OP_PAD: case NCC_OP_OPTIMIZATION_BARRIER:
	case NCC_OP_DYNAMIC_SLICE: case NCC_OP_DYNAMIC_UPDATE_SLICE:
		return true;
	default:
		return false;
	}
}

static ncc_status_t lower_constant(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	isa_dtype_t dt;
	if (ncc_lower_dtype(inst->shape.etype, &dt) != NCC_OK)
		return NCC_ERR_UNSUPPORTED;
	int64_t n = ncc_shape_elements(&inst->shape);
	if (n < 0)
		return ncc_lower_fail(ctx, inst, NCC_ERR_LIMIT, "constant too large");
	uint64_t bytes = (uint64_t)n * isa_dtype_size(dt);
	const ncc_literal_t *lit = &inst->literal;
	uint64_t off;
	ncc_status_t st;
	/* The IR stores literals row-major with the ISA's byte encoding for every type the
	 * ISA has (pred 0/1, raw bf16/f16 bits). An elided "{...}" constant never gets
	 * here (ncc_lower_shape_supports refuses it); a literal-less one is zeros. */
	if (lit->present && !lit->elided && lit->data && lit->nbytes == bytes &&
	    lit->etype == inst->shape.etype) {
		st = ncc_lower_add_const(ctx, lit->data, bytes, &off);
	} else if (lit->present && !lit->elided && lit->count == 1 && n > 0) {
		/* a scalar literal for an array (not produced by XLA, but cheap to allow) */
		ncc_view_t s;
		st = ncc_lower_const_scalar(ctx, dt, ncc_literal_get_f64(lit, 0), &s);
		if (st != NCC_OK)
			return st;
		ncc_view_t b = ncc_view_bcast_scalar(&s, inst->shape.rank, inst->shape.dims);
		return ncc_lower_set_view(ctx, inst, 0, &b);
	} else if (!lit->present || lit->count == 0) {
		st = ncc_lower_add_const(ctx, NULL, bytes, &off);
	} else {
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
				      "internal: literal has %zu bytes, expected %llu", lit->nbytes,
				      (unsigned long long)bytes);
	}
	if (st != NCC_OK)
		return st;
	ncc_view_t v = ncc_view_dense(ISA_REGION_CONST, off, dt, inst->shape.rank, inst->shape.dims);
	return ncc_lower_set_view(ctx, inst, 0, &v);
}

static ncc_status_t lower_reshape(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t in, v;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &in);
	if (st != NCC_OK)
		return st;
	if (ncc_view_reshape(&in, inst->shape.rank, inst->shape.dims, &v))
		return ncc_lower_set_view(ctx, inst, 0, &v);
	/* strides that cannot be reinterpreted: materialise densely */
	ncc_view_t out;
	st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	ncc_view_t outv;
	if (!ncc_view_reshape(&out, in.rank, in.dims, &outv))
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: dense reshape failed");
	return ncc_lower_copy(ctx, inst, &outv, &in);
}

static ncc_status_t lower_view_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t in, v;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &in);
	if (st != NCC_OK)
		return st;
	v = in;
	int64_t esz = (int64_t)isa_dtype_size(in.dtype);
	switch (inst->op) {
	case NCC_OP_BROADCAST:
		v.rank = inst->shape.rank;
		for (int32_t i = 0; i < NCC_MAX_RANK; i++) {
			v.dims[i] = i < v.rank ? inst->shape.dims[i] : 0;
			v.strides[i] = 0;
		}
		for (int32_t j = 0; j < inst->dimensions.n && j < in.rank; j++) {
			int64_t d = inst->dimensions.v[j];
			if (d < 0 || d >= v.rank)
				return ncc_lower_fail(ctx, inst, NCC_ERR_VERIFY, "bad broadcast dimension");
			/* a size-1 operand dim broadcast to a larger dim reads one element */
			v.strides[d] = in.dims[j] == v.dims[d] ? in.strides[j] : 0;
		}
		break;
	case NCC_OP_TRANSPOSE:
		for (int32_t i = 0; i < in.rank; i++) {
			int64_t p = inst->dimensions.v[i];
			v.dims[i] = in.dims[p];
			v.strides[i] = in.strides[p];
		}
		break;
	case NCC_OP_SLICE: {
		int64_t off = (int64_t)in.offset;
		for (int32_t i = 0; i < in.rank; i++) {
			const ncc_slice_dim_t *sd = &inst->slice->dims[i];
			int64_t stride = sd->stride > 0 ? sd->stride : 1;
			off += sd->start * in.strides[i] * esz;
			v.dims[i] = inst->shape.dims[i];
			v.strides[i] = in.strides[i] * stride;
		}
		v.offset = (uint64_t)off;
		break;
	}
	case NCC_OP_REVERSE: {
		int64_t off = (int64_t)in.offset;
		for (int32_t j = 0; j < inst->dimensions.n; j++) {
			int64_t d = inst->dimensions.v[j];
			if (in.dims[d] > 0)
				off += (in.dims[d] - 1) * in.strides[d] * esz;
			v.strides[d] = -in.strides[d];
		}
		v.offset = (uint64_t)off;
		break;
	}
	default:
		return NCC_ERR_INTERNAL;
	}
	return ncc_lower_set_view(ctx, inst, 0, &v);
}

static ncc_status_t lower_gte(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	const ncc_shape_t *ts = &inst->operands[0]->shape;
	if (ts->etype != NCC_TUPLE || inst->tuple_index < 0 || inst->tuple_index >= ts->nelems)
		return ncc_lower_fail(ctx, inst, NCC_ERR_VERIFY, "bad tuple index");
	int32_t first = 0;
	for (int64_t i = 0; i < inst->tuple_index; i++)
		first += ncc_lower_shape_leaves(&ts->elems[i]);
	int32_t n = ncc_lower_shape_leaves(&inst->shape);
	for (int32_t l = 0; l < n; l++) {
		ncc_view_t v;
		ncc_status_t st = ncc_lower_operand_leaf(ctx, inst, 0, first + l, &v);
		if (st == NCC_OK)
			st = ncc_lower_set_view(ctx, inst, l, &v);
		if (st != NCC_OK)
			return st;
	}
	return NCC_OK;
}

static ncc_status_t lower_concat(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t out;
	ncc_status_t st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	int64_t d = inst->dimensions.n > 0 ? inst->dimensions.v[0] : 0;
	int64_t pos = 0;
	int64_t esz = (int64_t)isa_dtype_size(out.dtype);
	for (int32_t i = 0; i < inst->noperands; i++) {
		ncc_view_t in;
		st = ncc_lower_operand_view(ctx, inst, i, &in);
		if (st != NCC_OK)
			return st;
		ncc_view_t dst = out;
		dst.dims[d] = in.dims[d];
		dst.offset = (uint64_t)((int64_t)out.offset + pos * out.strides[d] * esz);
		st = ncc_lower_copy(ctx, inst, &dst, &in);
		if (st != NCC_OK)
			return st;
		pos += in.dims[d];
	}
	return NCC_OK;
}

static ncc_status_t lower_pad(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t out, in, pv;
	ncc_status_t st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 0, &in);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &pv);
	if (st != NCC_OK)
		return st;
	/* fill with the padding value, then copy the operand into its strided place */
	ncc_view_t fill = ncc_view_bcast_scalar(&pv, out.rank, out.dims);
	st = ncc_lower_copy(ctx, inst, &out, &fill);
	if (st != NCC_OK)
		return st;
	int64_t lo[NCC_MAX_RANK], step[NCC_MAX_RANK];
	for (int32_t d = 0; d < in.rank; d++) {
		lo[d] = inst->padding->dims[d].lo;
		step[d] = inst->padding->dims[d].interior + 1;
	}
	return ncc_lower_copy_spread(ctx, inst, &out, &in, lo, step);
}

/* Clamped start index of a dynamic slice along one dim, as a u32/s64 scalar in a temp:
 * clamp(start, 0, limit). */
static ncc_status_t clamp_start(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t opnd,
				int64_t limit, ncc_view_t *out_idx)
{
	ncc_view_t s, lo, hi, t;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, opnd, &s);
	if (st != NCC_OK)
		return st;
	/* compute in s64 so unsigned and signed starts clamp alike */
	st = ncc_lower_temp_view(ctx, ISA_DT_S64, 0, NULL, &t);
	if (st == NCC_OK)
		st = ncc_lower_copy(ctx, inst, &t, &s);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, 0, &lo);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, (double)limit, &hi);
	if (st != NCC_OK)
		return st;
	ncc_view_t in[3] = { lo, t, hi };
	st = ncc_lower_alu(ctx, inst, ISA_ALU_CLAMP, &t, 3, in);
	*out_idx = t;
	return st;
}

/* Index vector idx[j] = start + j (s64[cnt]) for a GATHER/SCATTER along one dim. */
static ncc_status_t index_vector(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				 const ncc_view_t *start, int64_t cnt, ncc_view_t *out)
{
	ncc_status_t st = ncc_lower_temp_view(ctx, ISA_DT_S64, 1, &cnt, out);
	if (st != NCC_OK)
		return st;
	isa_insn_t io = isa_insn_init(ISA_OP_IOTA, 0);
	io.n_ap = 1;
	if (ncc_lower_views_to_aps(1, out, &io.ap[0]) != NCC_OK)
		return NCC_ERR_INTERNAL;
	io.ap[0].rank = 1;
	io.ap[0].shape[0] = (uint64_t)cnt;
	io.ap[0].stride[0] = 1;
	st = ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &io, NULL);
	if (st != NCC_OK)
		return st;
	ncc_view_t in[2] = { *out, ncc_view_bcast_scalar(start, 1, &cnt) };
	return ncc_lower_alu(ctx, inst, ISA_ALU_ADD, out, 2, in);
}

/* ---- dynamic slices as one GATHER/SCATTER at a computed element offset ----
 *
 * The window's first element is at lin = sum_d clamp(start_d, 0, dim_d - size_d)
 * x stride_d of the big view (the operand; for an update, the output), an s64
 * scalar. The window's dims (size-1 dropped, dims contiguous in both views merged)
 * split into an inner run, the rows, and outer dims whose element offsets (a
 * constant table off[M]) give the row indices idx = lin + off. The big view seen as
 * [N, inner] with stride 1 along N (rows overlap) is the GATHER table (SCATTER
 * target). Nothing but the window is read or written, however big the operand. */

#define DS_MAX_ROWS 65536 /* outer window positions beyond this: peel dim by dim */

/* lin (an s64 scalar temp) for the starts in operands first.. of inst. */
static ncc_status_t window_offset(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t first,
				  const ncc_view_t *big, const int64_t *size, ncc_view_t *out_lin)
{
	ncc_view_t lin = { 0 }, t = { 0 }, zero = { 0 }, lo;
	ncc_status_t st = ncc_lower_temp_view(ctx, ISA_DT_S64, 0, NULL, &lin);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, 0, NULL, &t);
	if (st == NCC_OK)
		st = ncc_lower_const_scalar(ctx, ISA_DT_S64, 0, &zero);
	if (st == NCC_OK)
		st = ncc_lower_copy(ctx, inst, &lin, &zero);
	lo = zero;
	for (int32_t d = 0; d < big->rank && st == NCC_OK; d++) {
		if (size[d] == big->dims[d] || big->strides[d] == 0)
			continue; /* the start is clamped to 0, or it moves nothing */
		ncc_view_t s = { 0 }, hi = { 0 }, sv = { 0 };
		st = ncc_lower_operand_view(ctx, inst, first + d, &s);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, ISA_DT_S64, (double)(big->dims[d] - size[d]), &hi);
		if (st == NCC_OK)
			st = ncc_lower_const_scalar(ctx, ISA_DT_S64, (double)big->strides[d], &sv);
		if (st == NCC_OK && s.dtype == ISA_DT_U64) {
			/* a u64 start beyond 2^63 clamps high, it must not wrap negative */
			ncc_view_t hu = { 0 }, su = { 0 };
			st = ncc_lower_const_scalar(ctx, ISA_DT_U64, (double)(big->dims[d] - size[d]), &hu);
			if (st == NCC_OK)
				st = ncc_lower_temp_view(ctx, ISA_DT_U64, 0, NULL, &su);
			ncc_view_t in2[2] = { s, hu };
			if (st == NCC_OK)
				st = ncc_lower_alu(ctx, inst, ISA_ALU_MIN, &su, 2, in2);
			s = su;
		}
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &t, &s);
		ncc_view_t in3[3] = { lo, t, hi };
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_CLAMP, &t, 3, in3);
		ncc_view_t m2[2] = { t, sv };
		if (st == NCC_OK && big->strides[d] != 1)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_MUL, &t, 2, m2);
		ncc_view_t a2[2] = { lin, t };
		if (st == NCC_OK)
			st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &lin, 2, a2);
	}
	*out_lin = lin;
	return st;
}

/* The window of `win` (dims = the window sizes) in `big` at lin: GATHER it into
 * win (scatter_op < 0) or SCATTER win into it with scatter_op. Returns
 * NCC_ERR_UNSUPPORTED (no message) when it does not apply: a big view with a
 * negative stride, more than DS_MAX_ROWS rows, or a win whose outer dims do not
 * fold (the caller peels dim by dim instead). */
static ncc_status_t window_rows(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t first_start,
				const ncc_view_t *big, const ncc_view_t *win, int scatter_op)
{
	int32_t rank = big->rank;
	for (int32_t d = 0; d < rank; d++)
		if (big->strides[d] < 0 || win->strides[d] < 0)
			return NCC_ERR_UNSUPPORTED;
	/* the window's dims, size 1 dropped, merged where contiguous in both views */
	int64_t wd[NCC_MAX_RANK], bs[NCC_MAX_RANK], ws[NCC_MAX_RANK];
	int32_t n = 0;
	for (int32_t d = 0; d < rank; d++) {
		if (win->dims[d] == 1)
			continue;
		if (n > 0 && bs[n - 1] == big->strides[d] * win->dims[d] &&
		    ws[n - 1] == win->strides[d] * win->dims[d]) {
			wd[n - 1] *= win->dims[d];
			bs[n - 1] = big->strides[d];
			ws[n - 1] = win->strides[d];
			continue;
		}
		wd[n] = win->dims[d];
		bs[n] = big->strides[d];
		ws[n] = win->strides[d];
		n++;
	}
	int64_t inner = 1, ibs = 1, iws = 1, m = 1;
	if (n > 0) {
		inner = wd[n - 1];
		ibs = bs[n - 1];
		iws = ws[n - 1];
		n--;
	}
	for (int32_t k = 0; k < n; k++)
		m *= wd[k];
	if (m > DS_MAX_ROWS)
		return NCC_ERR_UNSUPPORTED;
	/* the rows of win: its outer dims must fold into one stride */
	int64_t rstride = n > 0 ? ws[n - 1] : 1;
	for (int32_t k = n - 1; k > 0; k--)
		if (ws[k - 1] != ws[k] * wd[k])
			return NCC_ERR_UNSUPPORTED;
	int64_t size[NCC_MAX_RANK];
	for (int32_t d = 0; d < rank; d++)
		size[d] = win->dims[d];
	ncc_view_t lin, idx;
	ncc_status_t st = window_offset(ctx, inst, first_start, big, size, &lin);
	if (st != NCC_OK)
		return st;
	/* row k's offset in big: the outer index of row k, row-major */
	int64_t *off = malloc((size_t)m * sizeof(int64_t));
	if (!off)
		return ncc_lower_fail(ctx, inst, NCC_ERR_NOMEM, "out of memory");
	int64_t maxoff = 0;
	for (int64_t r = 0; r < m; r++) {
		int64_t rem = r, o = 0;
		for (int32_t k = n - 1; k >= 0; k--) {
			o += (rem % wd[k]) * bs[k];
			rem /= wd[k];
		}
		off[r] = o;
		if (o > maxoff)
			maxoff = o;
	}
	uint64_t coff;
	st = ncc_lower_add_const(ctx, off, (uint64_t)m * sizeof(int64_t), &coff);
	free(off);
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_S64, 1, &m, &idx);
	if (st != NCC_OK)
		return st;
	ncc_view_t offv = ncc_view_dense(ISA_REGION_CONST, coff, ISA_DT_S64, 1, &m);
	ncc_view_t a2[2] = { ncc_view_bcast_scalar(&lin, 1, &m), offv };
	st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &idx, 2, a2);
	if (st != NCC_OK)
		return st;
	int64_t maxlin = 0;
	for (int32_t d = 0; d < rank; d++)
		maxlin += (big->dims[d] - size[d]) * big->strides[d];
	ncc_view_t table = *big, rows = *win;
	table.rank = rows.rank = 2;
	table.dims[0] = maxlin + maxoff + 1;
	table.strides[0] = 1;
	table.dims[1] = rows.dims[1] = inner;
	table.strides[1] = ibs;
	rows.dims[0] = m;
	rows.strides[0] = rstride;
	rows.strides[1] = iws;
	return ncc_lower_rows(ctx, inst, scatter_op, &table, &rows, &idx);
}

/* dynamic-slice: the window gathered at its offset (window_rows); when that does
 * not apply, one GATHER per dim with a start (indices start..start+size-1, start
 * clamped to [0, N-size] as XLA does), through dense temporaries. */
static ncc_status_t lower_dynamic_slice(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t cur, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &cur);
	if (st == NCC_OK)
		st = ncc_lower_output_view(ctx, inst, 0, &out);
	if (st != NCC_OK)
		return st;
	int32_t rank = cur.rank;
	if (rank == 0)
		return ncc_lower_copy(ctx, inst, &out, &cur);
	if (ncc_view_elements(&out) == 0)
		return NCC_OK;
	st = window_rows(ctx, inst, 1, &cur, &out, -1);
	if (st != NCC_ERR_UNSUPPORTED)
		return st;
	for (int32_t d = 0; d < rank; d++) {
		int64_t size = inst->shape.dims[d];
		if (size == cur.dims[d])
			continue; /* whole dim: the start is clamped to 0 */
		ncc_view_t start, idx, next;
		st = clamp_start(ctx, inst, 1 + d, cur.dims[d] - size, &start);
		if (st == NCC_OK)
			st = index_vector(ctx, inst, &start, size, &idx);
		if (st != NCC_OK)
			return st;
		int64_t nd[NCC_MAX_RANK];
		for (int32_t i = 0; i < rank; i++)
			nd[i] = cur.dims[i];
		nd[d] = size;
		st = ncc_lower_temp_view(ctx, cur.dtype, rank, nd, &next);
		if (st != NCC_OK)
			return st;
		if (size > 0 && ncc_view_elements(&next) > 0) {
			ncc_view_t t = ncc_view_dim_to_front(&cur, d), w = ncc_view_dim_to_front(&next, d);
			st = ncc_lower_rows(ctx, inst, -1, &t, &w, &idx);
			if (st != NCC_OK)
				return st;
		}
		cur = next;
	}
	return ncc_lower_copy(ctx, inst, &out, &cur);
}

/* dynamic-update-slice: copy the operand, then write the update with a SCATTER
 * (assign) per dim; dims are peeled like dynamic-slice, outermost first, by
 * scattering whole update rows into a gathered window that is scattered back. To keep
 * it simple and exact we scatter along the first dim whose start matters and require
 * the other dims to be static (start clamped to a constant) or full. */
/* Whether c is used only as the body of while loops (then its parameter's leaves
 * are the loops' state buffers, which nothing outside the loop reads while the
 * body runs). */
static bool only_a_loop_body(const ncc_module_t *m, const ncc_comp_t *c)
{
	bool body = false;
	for (int32_t k = 0; k < m->ncomps; k++) {
		const ncc_comp_t *cc = m->comps[k];
		for (int32_t i = 0; i < cc->ninsts; i++) {
			const ncc_inst_t *y = cc->insts[i];
			if (y->body == c && y->op == NCC_OP_WHILE)
				body = true;
			else if (y->body == c)
				return false;
			if (y->condition == c || y->to_apply == c || y->calls == c || y->select == c ||
			    y->scatter_comp == c)
				return false;
			for (int32_t b = 0; b < y->nbranches; b++)
				if (y->branches[b] == c)
					return false;
			for (int32_t b = 0; b < y->ncalled; b++)
				if (y->called[b] == c)
					return false;
		}
	}
	return body;
}

/* A dynamic-update-slice that writes into its operand's buffer: in a while body,
 * the operand is get-tuple-element i of the body's parameter (loop state leaf i),
 * the root's element i is this instruction, and nothing else in the body reads
 * state leaf i (that get-tuple-element has this one use, no other one takes
 * element i, the parameter is only read through get-tuple-elements). The state is
 * then updated in place and the loop's state assignment copies nothing for it:
 * torch_xla's max-pool index loop writes one element of a u32[N] per iteration,
 * which otherwise cost two copies of the whole array per iteration. */
static bool dus_in_place(const ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	const ncc_comp_t *c = inst->parent;
	const ncc_inst_t *g = inst->operands[0];
	if (!c || c->is_entry || !c->root || c->root->op != NCC_OP_TUPLE || c->nparams != 1 ||
	    !c->params[0])
		return false;
	const ncc_inst_t *p = c->params[0];
	if (g->op != NCC_OP_GET_TUPLE_ELEMENT || g->noperands != 1 || g->operands[0] != p)
		return false;
	int64_t i = g->tuple_index;
	if (i < 0 || i >= c->root->noperands || c->root->operands[i] != inst)
		return false;
	for (int32_t k = 0; k < c->ninsts; k++) {
		const ncc_inst_t *x = c->insts[k];
		if (x != g && x->op == NCC_OP_GET_TUPLE_ELEMENT && x->noperands == 1 &&
		    x->operands[0] == p && x->tuple_index == i)
			return false;
		for (int32_t o = 0; o < x->noperands; o++) {
			if (x->operands[o] == g && (x != inst || o != 0))
				return false;
			if (x->operands[o] == p && x->op != NCC_OP_GET_TUPLE_ELEMENT)
				return false;
		}
	}
	return only_a_loop_body(ctx->m, c);
}

static ncc_status_t lower_dus(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	ncc_view_t op, upd, out;
	ncc_status_t st = ncc_lower_operand_view(ctx, inst, 0, &op);
	if (st == NCC_OK)
		st = ncc_lower_operand_view(ctx, inst, 1, &upd);
	if (st != NCC_OK)
		return st;
	if (dus_in_place(ctx, inst)) {
		out = op;
		st = ncc_lower_set_view(ctx, inst, 0, &out);
	} else {
		st = ncc_lower_output_view(ctx, inst, 0, &out);
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &out, &op);
	}
	if (st != NCC_OK || ncc_view_elements(&upd) == 0)
		return st;
	int32_t rank = op.rank;
	if (rank == 0)
		return ncc_lower_copy(ctx, inst, &out, &upd);
	st = window_rows(ctx, inst, 2, &out, &upd, ISA_RED_ASSIGN);
	if (st != NCC_ERR_UNSUPPORTED)
		return st;
	/* Recursive peel: window = out; for each dim d with a partial update, gather the
	 * rows [start_d, start_d + u_d) into a temp W_d; after the innermost dim, write the
	 * update, then scatter the temps back outermost last. */
	ncc_view_t win[NCC_MAX_RANK + 1], idx[NCC_MAX_RANK];
	int32_t dd[NCC_MAX_RANK];
	int32_t nw = 0;
	win[0] = out;
	for (int32_t d = 0; d < rank; d++) {
		int64_t u = upd.dims[d];
		if (u == op.dims[d])
			continue;
		ncc_view_t start, next;
		st = clamp_start(ctx, inst, 2 + d, op.dims[d] - u, &start);
		if (st == NCC_OK)
			st = index_vector(ctx, inst, &start, u, &idx[nw]);
		if (st != NCC_OK)
			return st;
		int64_t nd[NCC_MAX_RANK];
		for (int32_t i = 0; i < rank; i++)
			nd[i] = win[nw].dims[i];
		nd[d] = u;
		st = ncc_lower_temp_view(ctx, op.dtype, rank, nd, &next);
		if (st != NCC_OK)
			return st;
		ncc_view_t t = ncc_view_dim_to_front(&win[nw], d), w = ncc_view_dim_to_front(&next, d);
		st = ncc_lower_rows(ctx, inst, -1, &t, &w, &idx[nw]);
		if (st != NCC_OK)
			return st;
		dd[nw] = d;
		win[++nw] = next;
	}
	st = ncc_lower_copy(ctx, inst, &win[nw], &upd);
	for (int32_t k = nw - 1; k >= 0 && st == NCC_OK; k--) {
		ncc_view_t t = ncc_view_dim_to_front(&win[k], dd[k]), w = ncc_view_dim_to_front(&win[k + 1], dd[k]);
		st = ncc_lower_rows(ctx, inst, ISA_RED_ASSIGN, &t, &w, &idx[k]);
	}
	return st;
}

ncc_status_t ncc_lower_shape_op(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	switch (inst->op) {
	case NCC_OP_CONSTANT:
		return lower_constant(ctx, inst);
	case NCC_OP_RESHAPE:
	case NCC_OP_BITCAST:
		return lower_reshape(ctx, inst);
	case NCC_OP_BROADCAST: case NCC_OP_TRANSPOSE: case NCC_OP_SLICE: case NCC_OP_REVERSE:
		return lower_view_op(ctx, inst);
	case NCC_OP_TUPLE:
	case NCC_OP_OPTIMIZATION_BARRIER:
		return ncc_lower_tuple(ctx, inst);
	case NCC_OP_GET_TUPLE_ELEMENT:
		return lower_gte(ctx, inst);
	case NCC_OP_CONCATENATE:
		return lower_concat(ctx, inst);
	case NCC_OP_PAD:
		return lower_pad(ctx, inst);
	case NCC_OP_DYNAMIC_SLICE:
		return lower_dynamic_slice(ctx, inst);
	case NCC_OP_DYNAMIC_UPDATE_SLICE:
		return lower_dus(ctx, inst);
	default:
		return NCC_ERR_INTERNAL;
	}
}
