/* ncc back end, the builder's values (with builder.c): ISA dtypes of IR element types, the views (region, offset, dims, strides) that hold each instruction's result leaves, operand and result lookup, scratch temporaries and constants, tuples as their operands' leaves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"
#include "neuronsim/half.h"

/* ---------------------------------------------------------------- types */

ncc_status_t ncc_lower_dtype(ncc_etype_t t, isa_dtype_t *out_dtype)
{
	isa_dtype_t d;
	switch (t) {
	case NCC_F32: d = ISA_DT_F32; break;
	case NCC_BF16: d = ISA_DT_BF16; break;
	case NCC_F16: d = ISA_DT_F16; break;
	case NCC_S32: d = ISA_DT_S32; break;
	case NCC_S64: d = ISA_DT_S64; break;
	case NCC_U32: d = ISA_DT_U32; break;
	case NCC_U64: d = ISA_DT_U64; break;
	case NCC_U8: d = ISA_DT_U8; break;
	case NCC_PRED: d = ISA_DT_PRED; break;
	case NCC_S8: d = ISA_DT_S8; break;
	case NCC_S16: d = ISA_DT_S16; break;
	case NCC_U16: d = ISA_DT_U16; break;
	default: return NCC_ERR_UNSUPPORTED;
	}
	*out_dtype = d;
	return NCC_OK;
}

int32_t ncc_lower_shape_leaves(const ncc_shape_t *s)
{
	if (s->etype != NCC_TUPLE)
		return 1;
	int32_t n = 0;
	for (int32_t i = 0; i < s->nelems; i++)
		n += ncc_lower_shape_leaves(&s->elems[i]);
	return n;
}

/* Leaf k of a shape (depth-first). */
const ncc_shape_t *ncc_lower_shape_leaf(const ncc_shape_t *s, int32_t k)
{
	if (s->etype != NCC_TUPLE)
		return k == 0 ? s : NULL;
	for (int32_t i = 0; i < s->nelems; i++) {
		int32_t n = ncc_lower_shape_leaves(&s->elems[i]);
		if (k < n)
			return ncc_lower_shape_leaf(&s->elems[i], k);
		k -= n;
	}
	return NULL;
}

/* ---------------------------------------------------------------- sizes */

ns_status_t ncc_lower_leaf_check(const ncc_shape_t *s)
{
	if (s->etype == NCC_TUPLE || s->rank < 0)
		return NS_OK;
	unsigned __int128 bytes = ncc_etype_storage_bytes(s->etype);
	bool overflow = false;
	for (int32_t d = 0; d < s->rank; d++) {
		if (s->dims[d] < 0)
			return NS_OK; /* unbounded dims are refused elsewhere */
		if (s->dims[d] == 0)
			return NS_OK;
		if (!overflow && __builtin_mul_overflow(bytes, (unsigned __int128)s->dims[d], &bytes))
			overflow = true;
	}
	if (!overflow && bytes <= NEFF_MAX_REGION_SIZE)
		return NS_OK;
	char ty[256];
	ncc_shape_to_string(s, false, ty, sizeof(ty));
	if (overflow || bytes > UINT64_MAX)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "shape %s is more than 2^64 bytes (the byte size overflows), "
				      "beyond the %llu bytes (2^48) a device can address", ty,
				      (unsigned long long)NEFF_MAX_REGION_SIZE);
	return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
			      "shape %s is %llu bytes, more than the %llu bytes (2^48) a device can "
			      "address", ty, (unsigned long long)bytes,
			      (unsigned long long)NEFF_MAX_REGION_SIZE);
}

/* ---------------------------------------------------------------- values */

ncc_lval_t *ncc_lower_val(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	if (!inst || inst->id >= ctx->nvals)
		return NULL;
	return &ctx->vals[inst->id];
}

/* Scratch block that contains a view's memory, found by offset (views of scratch
 * always stay inside the block of their base). */
static int32_t block_of(ncc_lower_ctx_t *ctx, const ncc_view_t *v)
{
	if (v->region != ISA_REGION_SCRATCH)
		return -1;
	/* newest live block containing the offset */
	for (int32_t i = ctx->plan.nblocks - 1; i >= 0; i--) {
		const ncc_plan_block_t *b = &ctx->plan.blocks[i];
		if (b->live && v->offset >= b->offset && v->offset < b->offset + b->size)
			return i;
	}
	return -1;
}

ncc_status_t ncc_lower_operand_leaf(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t i,
				    int32_t leaf, ncc_view_t *out_view)
{
	if (i < 0 || i >= inst->noperands)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "operand %d out of range", i);
	ncc_lval_t *v = ncc_lower_val(ctx, inst->operands[i]);
	if (!v || !v->live || leaf < 0 || leaf >= v->nleaves || !v->set[leaf])
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
				      "internal: operand %d ('%s') leaf %d has no lowered value", i,
				      inst->operands[i]->name, leaf);
	*out_view = v->views[leaf];
	return NCC_OK;
}

ncc_status_t ncc_lower_operand_view(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t i,
				    ncc_view_t *out_view)
{
	return ncc_lower_operand_leaf(ctx, inst, i, 0, out_view);
}

ncc_status_t ncc_lower_output_view(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t leaf,
				   ncc_view_t *out_view)
{
	ncc_lval_t *v = ncc_lower_val(ctx, inst);
	if (!v || leaf < 0 || leaf >= v->nleaves)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: no output leaf %d", leaf);
	if (v->set[leaf]) {
		*out_view = v->views[leaf];
		return NCC_OK;
	}
	const ncc_shape_t *s = ncc_lower_shape_leaf(&inst->shape, leaf);
	isa_dtype_t dt;
	if (!s || ncc_lower_dtype(s->etype, &dt) != NCC_OK)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "unsupported element type %s",
				      s ? ncc_etype_name(s->etype) : "?");
	/* the output tensor, or scratch */
	uint32_t region = ISA_REGION_SCRATCH;
	uint64_t offset = 0;
	if (v->bind_out[leaf] >= 0) {
		region = ISA_REGION_IO0 + ctx->out_tensor[v->bind_out[leaf]];
	} else {
		int64_t n = ncc_shape_elements(s);
		if (n < 0)
			return ncc_lower_fail(ctx, inst, NCC_ERR_LIMIT, "size overflows");
		int32_t blk;
		ncc_status_t st = ncc_plan_alloc(&ctx->plan, (uint64_t)n * isa_dtype_size(dt), &blk);
		if (st != NCC_OK)
			return ncc_lower_fail(ctx, inst, st, "cannot allocate scratch for the result");
		v->blocks[leaf] = blk;
		offset = ctx->plan.blocks[blk].offset;
	}
	/* dense in the value's order or, bound through a transpose (an output's,
	 * or the one use of a convolution: bind_outputs), in the transpose's:
	 * tr[i...] = value[perm[i]...] */
	const ncc_inst_t *tr = v->bind_tr;
	const ncc_shape_t *ds = tr ? &tr->shape : s;
	ncc_view_t d = ncc_view_dense(region, offset, dt, ds->rank, ds->dims);
	v->views[leaf] = d;
	for (int32_t i = 0; tr && i < d.rank; i++) {
		int64_t p = tr->dimensions.v[i];
		v->views[leaf].dims[p] = d.dims[i];
		v->views[leaf].strides[p] = d.strides[i];
	}
	v->set[leaf] = true;
	*out_view = v->views[leaf];
	return NCC_OK;
}

ncc_status_t ncc_lower_set_view(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int32_t leaf,
				const ncc_view_t *view)
{
	ncc_lval_t *v = ncc_lower_val(ctx, inst);
	if (!v || leaf < 0 || leaf >= v->nleaves)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: no output leaf %d", leaf);
	if (v->set[leaf])
		ncc_plan_unref(&ctx->plan, v->blocks[leaf]);
	v->views[leaf] = *view;
	v->blocks[leaf] = block_of(ctx, view);
	ncc_plan_ref(&ctx->plan, v->blocks[leaf]);
	v->set[leaf] = true;
	return NCC_OK;
}

/* ---------------------------------------------------------------- memory */

ncc_status_t ncc_lower_temp_alloc(ncc_lower_ctx_t *ctx, uint64_t size, uint64_t *out_offset)
{
	if (ctx->ntemps >= NCC_MAX_TEMPS)
		return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_LIMIT, "too many temporaries");
	int32_t blk;
	ncc_status_t st = ncc_plan_alloc(&ctx->plan, size, &blk);
	if (st != NCC_OK)
		return ncc_lower_fail(ctx, ctx->cur, st, "cannot allocate a temporary");
	ctx->temps[ctx->ntemps++] = blk;
	*out_offset = ctx->plan.blocks[blk].offset;
	return NCC_OK;
}

ncc_status_t ncc_lower_temp_view(ncc_lower_ctx_t *ctx, isa_dtype_t dt, int32_t rank,
				 const int64_t *dims, ncc_view_t *out_view)
{
	int64_t n = 1;
	for (int32_t i = 0; i < rank; i++)
		n *= dims[i];
	uint64_t off;
	ncc_status_t st = ncc_lower_temp_alloc(ctx, (uint64_t)n * isa_dtype_size(dt), &off);
	if (st != NCC_OK)
		return st;
	*out_view = ncc_view_dense(ISA_REGION_SCRATCH, off, dt, rank, dims);
	return NCC_OK;
}

ncc_status_t ncc_lower_make_dense(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				  const ncc_view_t *src, ncc_view_t *out_view)
{
	if (ncc_view_is_dense(src)) {
		*out_view = *src;
		return NCC_OK;
	}
	ncc_status_t st = ncc_lower_temp_view(ctx, src->dtype, src->rank, src->dims, out_view);
	if (st != NCC_OK)
		return st;
	return ncc_lower_copy(ctx, inst, out_view, src);
}

ncc_status_t ncc_lower_add_const(ncc_lower_ctx_t *ctx, const void *data, uint64_t size,
				 uint64_t *out_offset)
{
	uint64_t off;
	ns_status_t bs = neff_builder_add_const(ctx->b, data, size ? size : 1, 64, &off);
	if (bs)
		return ncc_lower_fail_status(ctx, ctx->cur, bs, NCC_ERR_INTERNAL,
					     "cannot add a constant");
	/* keep small constants (descriptors, scalars) readable for the scheduler; large
	 * weights are never read back, so they are not copied */
	if (data && size <= 65536 && off + size <= (1ull << 30)) {
		if (off + size > ctx->consts_cap) {
			uint64_t nc = ctx->consts_cap ? ctx->consts_cap : 65536;
			while (nc < off + size)
				nc *= 2;
			uint8_t *n = realloc(ctx->consts, nc);
			if (!n)
				return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_NOMEM, "out of memory");
			memset(n + ctx->consts_cap, 0, nc - ctx->consts_cap);
			ctx->consts = n;
			ctx->consts_cap = nc;
		}
		memcpy(ctx->consts + off, data, size);
		if (off + size > ctx->consts_size)
			ctx->consts_size = off + size;
	}
	*out_offset = off;
	return NCC_OK;
}

ncc_status_t ncc_lower_const_scalar(ncc_lower_ctx_t *ctx, isa_dtype_t dt, double v,
				    ncc_view_t *out_view)
{
	uint8_t buf[8];
	memset(buf, 0, sizeof(buf));
	switch (dt) {
	case ISA_DT_F32: { float f = (float)v; memcpy(buf, &f, 4); break; }
	case ISA_DT_BF16: {
		uint16_t h = ns_f32_to_bf16((float)v);
		memcpy(buf, &h, 2);
		break;
	}
	case ISA_DT_F16: {
		uint16_t h = ns_f32_to_f16((float)v);
		memcpy(buf, &h, 2);
		break;
	}
	case ISA_DT_S32: { int32_t x = (int32_t)v; memcpy(buf, &x, 4); break; }
	case ISA_DT_U32: { uint32_t x = (uint32_t)v; memcpy(buf, &x, 4); break; }
	case ISA_DT_S64: { int64_t x = (int64_t)v; memcpy(buf, &x, 8); break; }
	case ISA_DT_U64: { uint64_t x = (uint64_t)v; memcpy(buf, &x, 8); break; }
	case ISA_DT_S16: { int16_t x = (int16_t)v; memcpy(buf, &x, 2); break; }
	case ISA_DT_U16: { uint16_t x = (uint16_t)v; memcpy(buf, &x, 2); break; }
	case ISA_DT_S8: { int8_t x = (int8_t)v; memcpy(buf, &x, 1); break; }
	case ISA_DT_U8: { uint8_t x = (uint8_t)v; memcpy(buf, &x, 1); break; }
	case ISA_DT_PRED: buf[0] = v != 0; break;
	default: return NCC_ERR_INVALID;
	}
	uint64_t off;
	ncc_status_t st = ncc_lower_add_const(ctx, buf, isa_dtype_size(dt), &off);
	if (st != NCC_OK)
		return st;
	*out_view = ncc_view_dense(ISA_REGION_CONST, off, dt, 0, NULL);
	return NCC_OK;
}

ncc_status_t ncc_lower_tuple(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	int32_t k = 0;
	for (int32_t i = 0; i < inst->noperands; i++) {
		int32_t n = ncc_lower_shape_leaves(&inst->operands[i]->shape);
		for (int32_t l = 0; l < n; l++) {
			ncc_view_t v;
			ncc_status_t st = ncc_lower_operand_leaf(ctx, inst, i, l, &v);
			if (st == NCC_OK)
				st = ncc_lower_set_view(ctx, inst, k + l, &v);
			if (st != NCC_OK)
				return st;
		}
		k += n;
	}
	return NCC_OK;
}
