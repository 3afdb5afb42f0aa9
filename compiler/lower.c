/* ncc back-end driver: walks the IR in program order, plans buffers, schedules ISA instructions on engines with semaphores and produces the NEFF. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"
#include "neuronsim/half.h"


/*
 * Scheduling rule
 * ---------------
 * Single-stream mode (-O0, and any module with while/conditional because a JUMP only
 * moves within its own stream): every instruction goes to the gpsimd stream and
 * program order is execution order; no semaphores are needed.
 *
 * Multi-engine mode (-O1+ without control flow): each instruction goes to the engine
 * its opcode belongs to (MATMUL tensor, ALU/REDUCE vector, ACTIVATE scalar,
 * IOTA/GATHER/SCATTER/RNG gpsimd, COPY dma). Semaphore e counts the instructions
 * completed on engine e (every instruction signals its engine's semaphore). Before an
 * instruction runs on engine a it waits, for every other engine b that emitted
 * something since a last waited on it, until sem[b] reaches b's count; the first such
 * wait rides on the instruction, the others on NOPs just before it. Every instruction
 * therefore starts after everything emitted before it has completed, which keeps the
 * sequential semantics (also for the write-after-read hazards that buffer reuse
 * creates), while work on one engine may still overlap the tail of the others.
 */

void ncc_compile_options_init(ncc_compile_options_t *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->n_cores = 1;
	opts->embed_hlo = true;
	opts->multi_engine = -1;
}

const struct ncc_compile_options *ncc_lower_options(const ncc_lower_ctx_t *ctx)
{
	return &ctx->opts;
}

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
static const ncc_shape_t *shape_leaf(const ncc_shape_t *s, int32_t k)
{
	if (s->etype != NCC_TUPLE)
		return k == 0 ? s : NULL;
	for (int32_t i = 0; i < s->nelems; i++) {
		int32_t n = ncc_lower_shape_leaves(&s->elems[i]);
		if (k < n)
			return shape_leaf(&s->elems[i], k);
		k -= n;
	}
	return NULL;
}

/* ---------------------------------------------------------------- sizes */

bool ncc_lower_leaf_too_big(const ncc_shape_t *s, char *msg, size_t msg_len)
{
	if (s->etype == NCC_TUPLE || s->rank < 0)
		return false;
	unsigned __int128 bytes = ncc_etype_storage_bytes(s->etype);
	bool overflow = false;
	for (int32_t d = 0; d < s->rank; d++) {
		if (s->dims[d] < 0)
			return false; /* unbounded dims are refused elsewhere */
		if (s->dims[d] == 0)
			return false;
		if (!overflow && __builtin_mul_overflow(bytes, (unsigned __int128)s->dims[d], &bytes))
			overflow = true;
	}
	if (!overflow && bytes <= NEFF_MAX_REGION_SIZE)
		return false;
	if (msg && msg_len) {
		char ty[256];
		ncc_shape_to_string(s, false, ty, sizeof(ty));
		if (overflow || bytes > UINT64_MAX)
			snprintf(msg, msg_len, "shape %s is more than 2^64 bytes (the byte size "
				 "overflows), beyond the %llu bytes (2^48) a device can address", ty,
				 (unsigned long long)NEFF_MAX_REGION_SIZE);
		else
			snprintf(msg, msg_len, "shape %s is %llu bytes, more than the %llu bytes (2^48) "
				 "a device can address", ty, (unsigned long long)bytes,
				 (unsigned long long)NEFF_MAX_REGION_SIZE);
	}
	return true;
}

/* ---------------------------------------------------------------- errors */

static void describe_inst(const ncc_inst_t *inst, char *buf, size_t n)
{
	char ty[256];
	ncc_shape_to_string(&inst->shape, false, ty, sizeof(ty));
	int k = snprintf(buf, n, "instruction '%s' (%s) of type %s", inst->name,
			 inst->opname ? inst->opname : ncc_opcode_name(inst->op),
			 ty);
	if (k < 0 || (size_t)k >= n)
		return;
	if (inst->metadata.source_file || inst->metadata.source_line)
		k += snprintf(buf + k, n - (size_t)k, " at source line %s:%" PRId64,
			      inst->metadata.source_file ? inst->metadata.source_file : "?",
			      inst->metadata.source_line);
	if (k >= 0 && (size_t)k < n && inst->line)
		snprintf(buf + k, n - (size_t)k, " (HLO line %d)", inst->line);
}

ncc_status_t ncc_lower_fail(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, ncc_status_t st,
			    const char *fmt, ...)
{
	char what[768], desc[640];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!ctx || !ctx->err)
		return st;
	if (ctx->err->status != NCC_OK)
		return st; /* keep the first, most precise message */
	if (!inst)
		return ncc_error_set(ctx->err, st, 0, 0, "%s: error: %s",
				     ctx->m && ctx->m->filename ? ctx->m->filename : "<input>", what);
	describe_inst(inst, desc, sizeof(desc));
	return ncc_error_set(ctx->err, st, inst->line, inst->col, "%s:%d:%d: error: %s: %s",
			     ctx->m && ctx->m->filename ? ctx->m->filename : "<input>", inst->line,
			     inst->col, what, desc);
}

/* ---------------------------------------------------------------- values */

ncc_lval_t *ncc_lower_val(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	if (!inst || inst->id >= ctx->nvals)
		return NULL;
	return &ctx->vals[inst->id];
}

static void lval_clear(ncc_lval_t *v)
{
	free(v->views);
	free(v->blocks);
	free(v->set);
	free(v->bind_out);
	memset(v, 0, sizeof(*v));
}

static ncc_status_t lval_init(ncc_lval_t *v, int32_t nleaves)
{
	lval_clear(v);
	int32_t n = nleaves > 0 ? nleaves : 1;
	v->views = calloc((size_t)n, sizeof(ncc_view_t));
	v->blocks = malloc((size_t)n * sizeof(int32_t));
	v->set = calloc((size_t)n, sizeof(bool));
	v->bind_out = malloc((size_t)n * sizeof(int32_t));
	if (!v->views || !v->blocks || !v->set || !v->bind_out) {
		lval_clear(v);
		return NCC_ERR_NOMEM;
	}
	for (int32_t i = 0; i < n; i++)
		v->blocks[i] = v->bind_out[i] = -1;
	v->nleaves = nleaves;
	v->live = true;
	return NCC_OK;
}

static void lval_release(ncc_lower_ctx_t *ctx, ncc_lval_t *v)
{
	if (!v->live)
		return;
	for (int32_t i = 0; i < v->nleaves; i++) {
		ncc_plan_unref(&ctx->plan, v->blocks[i]);
		v->blocks[i] = -1;
	}
	v->live = false;
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
	const ncc_shape_t *s = shape_leaf(&inst->shape, leaf);
	isa_dtype_t dt;
	if (!s || ncc_lower_dtype(s->etype, &dt) != NCC_OK)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "unsupported element type %s",
				      s ? ncc_etype_name(s->etype) : "?");
	if (v->bind_out[leaf] >= 0) {
		uint32_t t = ctx->out_tensor[v->bind_out[leaf]];
		v->views[leaf] = ncc_view_dense(ISA_REGION_IO0 + t, 0, dt, s->rank, s->dims);
	} else {
		int64_t n = ncc_shape_elements(s);
		if (n < 0)
			return ncc_lower_fail(ctx, inst, NCC_ERR_LIMIT, "size overflows");
		int32_t blk;
		ncc_status_t st = ncc_plan_alloc(&ctx->plan, (uint64_t)n * isa_dtype_size(dt), &blk);
		if (st != NCC_OK)
			return ncc_lower_fail(ctx, inst, st, "cannot allocate scratch for the result");
		v->blocks[leaf] = blk;
		v->views[leaf] = ncc_view_dense(ISA_REGION_SCRATCH, ctx->plan.blocks[blk].offset, dt,
						s->rank, s->dims);
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

/* ---------------------------------------------------------------- aps */

ncc_status_t ncc_lower_views_to_aps(int n, const ncc_view_t *views, isa_ap_t *out_aps)
{
	if (n < 1 || n > ISA_MAX_AP)
		return NCC_ERR_INVALID;
	int32_t rank = views[0].rank;
	int64_t dims[NCC_MAX_RANK];
	int64_t str[ISA_MAX_AP][NCC_MAX_RANK];
	int32_t r = 0;
	/* drop size-1 dims (their stride never matters) */
	for (int32_t d = 0; d < rank; d++) {
		if (views[0].dims[d] == 1)
			continue;
		dims[r] = views[0].dims[d];
		for (int k = 0; k < n; k++)
			str[k][r] = views[k].strides[d];
		r++;
	}
	/* merge d-1 and d when contiguous in every view: stride[d-1] == stride[d]*dims[d] */
	int32_t w = 0;
	for (int32_t d = 0; d < r; d++) {
		if (w > 0) {
			bool ok = true;
			for (int k = 0; k < n && ok; k++)
				ok = str[k][w - 1] == str[k][d] * dims[d];
			if (ok) {
				dims[w - 1] *= dims[d];
				for (int k = 0; k < n; k++)
					str[k][w - 1] = str[k][d];
				continue;
			}
		}
		dims[w] = dims[d];
		for (int k = 0; k < n; k++)
			str[k][w] = str[k][d];
		w++;
	}
	if (w > ISA_MAX_RANK)
		return NCC_ERR_UNSUPPORTED;
	for (int k = 0; k < n; k++) {
		isa_ap_t *a = &out_aps[k];
		memset(a, 0, sizeof(*a));
		a->region = views[k].region;
		a->dtype = (uint8_t)views[k].dtype;
		a->rank = (uint8_t)w;
		a->offset = views[k].offset;
		for (int32_t d = 0; d < w; d++) {
			a->shape[d] = (uint64_t)dims[d];
			a->stride[d] = str[k][d];
		}
	}
	return NCC_OK;
}

/* Calls fn on sub-views when the views cannot fold into ISA_MAX_RANK: fixes the
 * outermost dim (of size > 1) and recurses. */
typedef ncc_status_t (*view_op_fn)(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg,
				   int n, const isa_ap_t *aps);

static ncc_status_t for_views(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int n,
			      const ncc_view_t *views, view_op_fn fn, void *arg)
{
	if (ncc_view_elements(&views[0]) == 0)
		return NCC_OK;
	isa_ap_t aps[ISA_MAX_AP];
	ncc_status_t st = ncc_lower_views_to_aps(n, views, aps);
	if (st == NCC_OK)
		return fn(ctx, inst, arg, n, aps);
	if (st != NCC_ERR_UNSUPPORTED)
		return st;
	int32_t d = 0;
	while (d < views[0].rank && views[0].dims[d] == 1)
		d++;
	ncc_view_t sub[ISA_MAX_AP];
	for (int64_t i = 0; i < views[0].dims[d]; i++) {
		for (int k = 0; k < n; k++) {
			sub[k] = views[k];
			sub[k].offset = (uint64_t)((int64_t)views[k].offset +
						   i * views[k].strides[d] * (int64_t)isa_dtype_size(views[k].dtype));
			sub[k].dims[d] = 1;
		}
		st = for_views(ctx, inst, n, sub, fn, arg);
		if (st != NCC_OK)
			return st;
	}
	return NCC_OK;
}

static ncc_status_t emit_copy_fn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg, int n,
				 const isa_ap_t *aps)
{
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = aps[0];
	in.ap[1] = aps[1];
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_DMA, &in, NULL);
}

ncc_status_t ncc_lower_copy(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *dst,
			    const ncc_view_t *src)
{
	ncc_view_t v[2] = { *dst, *src };
	return for_views(ctx, inst, 2, v, emit_copy_fn, NULL);
}

static ncc_status_t emit_alu_fn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg, int n,
				const isa_ap_t *aps)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, *(uint32_t *)arg);
	in.n_ap = (uint8_t)n;
	for (int k = 0; k < n; k++)
		in.ap[k] = aps[k];
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &in, NULL);
}

ncc_status_t ncc_lower_alu(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t sub,
			   const ncc_view_t *dst, int n_in, const ncc_view_t *in)
{
	ncc_view_t v[ISA_MAX_AP];
	if (n_in < 1 || n_in > 3 || isa_alu_arity(sub) != n_in)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: ALU arity");
	v[0] = *dst;
	for (int k = 0; k < n_in; k++)
		v[k + 1] = in[k];
	return for_views(ctx, inst, n_in + 1, v, emit_alu_fn, &sub);
}

typedef struct act_arg {
	uint32_t func;
	double scale, bias;
} act_arg_t;

static ncc_status_t emit_act_fn(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, void *arg, int n,
				const isa_ap_t *aps)
{
	act_arg_t *a = arg;
	isa_insn_t in = isa_insn_init(ISA_OP_ACTIVATE, a->func);
	in.n_ap = 2;
	in.ap[0] = aps[0];
	in.ap[1] = aps[1];
	in.imm[0] = a->scale;
	in.imm[1] = a->bias;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_SCALAR, &in, NULL);
}

ncc_status_t ncc_lower_act(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t func,
			   double scale, double bias, const ncc_view_t *dst, const ncc_view_t *src)
{
	act_arg_t a = { func, scale, bias };
	ncc_view_t v[2] = { *dst, *src };
	return for_views(ctx, inst, 2, v, emit_act_fn, &a);
}

/* REDUCE: dst_keep has src's rank with reduced dims of size 1. Dims are folded by
 * class (kept / reduced) so the rank fits the ISA. */
ncc_status_t ncc_lower_reduce_emit(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t comb,
				   const ncc_view_t *dst_keep, const ncc_view_t *src,
				   uint32_t mask, bool accumulate)
{
	int64_t dims[NCC_MAX_RANK], ss[NCC_MAX_RANK], ds[NCC_MAX_RANK];
	bool red[NCC_MAX_RANK];
	int32_t r = 0;
	for (int32_t d = 0; d < src->rank; d++) {
		if (src->dims[d] == 1)
			continue;
		if (src->dims[d] == 0 && !(mask & (1u << d)))
			return NCC_OK; /* empty output */
		dims[r] = src->dims[d];
		ss[r] = src->strides[d];
		ds[r] = (mask & (1u << d)) ? 0 : dst_keep->strides[d];
		red[r] = (mask & (1u << d)) != 0;
		r++;
	}
	int32_t w = 0;
	for (int32_t d = 0; d < r; d++) {
		if (w > 0 && red[w - 1] == red[d] && ss[w - 1] == ss[d] * dims[d] &&
		    (red[d] || ds[w - 1] == ds[d] * dims[d])) {
			dims[w - 1] *= dims[d];
			ss[w - 1] = ss[d];
			ds[w - 1] = ds[d];
			continue;
		}
		dims[w] = dims[d];
		ss[w] = ss[d];
		ds[w] = ds[d];
		red[w] = red[d];
		w++;
	}
	if (w > ISA_MAX_RANK)
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED,
				      "unsupported reduction: rank %d after folding exceeds %d", w,
				      ISA_MAX_RANK);
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, comb);
	in.n_ap = 2;
	in.flags = accumulate ? ISA_F_ACCUMULATE : 0;
	isa_ap_t *o = &in.ap[0], *a = &in.ap[1];
	o->region = dst_keep->region;
	o->dtype = (uint8_t)dst_keep->dtype;
	o->offset = dst_keep->offset;
	a->region = src->region;
	a->dtype = (uint8_t)src->dtype;
	a->offset = src->offset;
	o->rank = a->rank = (uint8_t)w;
	uint32_t m = 0;
	for (int32_t d = 0; d < w; d++) {
		a->shape[d] = (uint64_t)dims[d];
		a->stride[d] = ss[d];
		o->shape[d] = red[d] ? 1 : (uint64_t)dims[d];
		o->stride[d] = ds[d];
		if (red[d])
			m |= 1u << d;
	}
	in.param = m;
	if (m == 0) {
		/* nothing to reduce (only size-1 dims): a plain copy, or a combine */
		if (!accumulate) {
			ncc_view_t d = *dst_keep, s = *src;
			return ncc_lower_copy(ctx, inst, &d, &s);
		}
	}
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &in, NULL);
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
	if (neff_builder_add_const(ctx->b, data, size ? size : 1, 64, &off) != NEFF_OK)
		return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_NOMEM, "cannot add a constant");
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

/* ---------------------------------------------------------------- emission */

static isa_engine_t stream_of(ncc_lower_ctx_t *ctx, isa_engine_t engine)
{
	return ctx->multi ? engine : ISA_ENGINE_GPSIMD;
}

static ncc_status_t emit_raw(ncc_lower_ctx_t *ctx, isa_engine_t e, isa_insn_t *in, uint32_t *out_index)
{
	uint32_t idx;
	/* The program runs on core 0; further cores of the NEFF are left idle because
	 * every core would otherwise write the same output tensors (no sharding yet). */
	if (neff_builder_emit(ctx->b, 0, e, in, &idx) != NEFF_OK)
		return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_NOMEM, "cannot emit an instruction");
	ctx->last_insn = *in;
	ctx->count[e]++;
	ctx->total_insns++;
	if (ctx->multi) {
		/* remember what completing this instruction implies */
		if (ctx->count[e] > ctx->kv_cap[e]) {
			uint32_t nc = ctx->kv_cap[e] ? ctx->kv_cap[e] * 2 : 256;
			void *n = realloc(ctx->kv[e], (size_t)nc * sizeof(*ctx->kv[e]));
			if (!n)
				return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_NOMEM, "out of memory");
			ctx->kv[e] = n;
			ctx->kv_cap[e] = nc;
		}
		ctx->known[e][e] = ctx->count[e];
		memcpy(ctx->kv[e][ctx->count[e] - 1], ctx->known[e], sizeof(ctx->known[e]));
	}
	if (out_index)
		*out_index = idx;
	return NCC_OK;
}

/* Byte range an access pattern can touch (as the simulator's OOB rule computes it). */
static void ap_span(const isa_ap_t *a, int64_t *lo, int64_t *hi)
{
	int64_t es = (int64_t)isa_dtype_size(a->dtype), mn = 0, mx = 0;
	for (uint32_t d = 0; d < a->rank; d++) {
		if (a->shape[d] == 0) {
			*lo = *hi = (int64_t)a->offset;
			return;
		}
		int64_t ext = (int64_t)(a->shape[d] - 1) * a->stride[d];
		if (ext < 0)
			mn += ext;
		else
			mx += ext;
	}
	*lo = (int64_t)a->offset + mn * es;
	*hi = (int64_t)a->offset + (mx + 1) * es;
}

/* Reads and writes of an instruction; false when the opcode is not analysed here
 * (e.g. FUSED, whose descriptor may name further inputs): the caller then orders it
 * after everything. */
/* The inputs of a FUSED instruction beyond ap[2..3] live in its descriptor (in the
 * constants, which the driver keeps a copy of): appended as reads. false when the
 * descriptor cannot be read back. */
static bool fused_extra(const ncc_lower_ctx_t *ctx, const isa_insn_t *in, ncc_access_t *out, int *n)
{
	const isa_ap_t *d = &in->ap[1];
	if (in->n_ap < 2 || d->region != ISA_REGION_CONST || !ctx->consts ||
	    d->offset + sizeof(isa_fused_desc_t) > ctx->consts_size)
		return false;
	isa_fused_desc_t h;
	memcpy(&h, ctx->consts + d->offset, sizeof(h));
	if (h.magic != ISA_FUSED_MAGIC || h.n_inputs > ISA_FUSED_MAX_INPUTS)
		return false;
	int direct = in->n_ap - 2;
	int extra = h.n_inputs > direct ? h.n_inputs - direct : 0;
	if (d->offset + sizeof(h) + (uint64_t)extra * sizeof(isa_ap_t) > ctx->consts_size)
		return false;
	for (int i = 0; i < extra; i++) {
		isa_ap_t a;
		memcpy(&a, ctx->consts + d->offset + sizeof(h) + (uint64_t)i * sizeof(isa_ap_t), sizeof(a));
		if (a.rank > ISA_MAX_RANK)
			return false;
		out[*n].region = a.region;
		out[*n].write = false;
		ap_span(&a, &out[*n].lo, &out[*n].hi);
		(*n)++;
	}
	return true;
}

/* The runtime may bind an aliased output tensor to its input's memory (an
 * in-place update): accesses to either must order against each other, so both
 * count as the input's region. */
static uint32_t same_memory_region(const ncc_lower_ctx_t *ctx, uint32_t region)
{
	for (uint32_t o = 0; o < ctx->n_outputs; o++)
		if (ctx->out_alias[o] >= 0 && region == ISA_REGION_IO0 + ctx->out_tensor[o])
			return ISA_REGION_IO0 + (uint32_t)ctx->in_tensor[ctx->out_alias[o]];
	return region;
}

static bool insn_accesses(const ncc_lower_ctx_t *ctx, const isa_insn_t *in, ncc_access_t *out, int *n)
{
	bool w[ISA_MAX_AP] = { false }, r[ISA_MAX_AP] = { false };
	switch (in->opcode) {
	case ISA_OP_FUSED:
		w[0] = true;
		for (int k = 1; k < in->n_ap; k++)
			r[k] = true;
		break;
	case ISA_OP_NOP:
		*n = 0;
		return true;
	case ISA_OP_MATMUL: case ISA_OP_ALU: case ISA_OP_ACTIVATE: case ISA_OP_REDUCE:
	case ISA_OP_COPY: case ISA_OP_IOTA: case ISA_OP_GATHER:
		w[0] = true;
		r[0] = (in->flags & ISA_F_ACCUMULATE) != 0;
		for (int k = 1; k < in->n_ap; k++)
			r[k] = true;
		break;
	case ISA_OP_SCATTER:
		w[0] = r[0] = r[1] = r[2] = true;
		break;
	case ISA_OP_RNG:
		w[0] = r[1] = w[2] = true;
		break;
	default:
		return false;
	}
	int k = 0;
	for (int a = 0; a < in->n_ap && a < ISA_MAX_AP; a++) {
		if (!w[a] && !r[a])
			continue;
		out[k].region = in->ap[a].region;
		out[k].write = w[a];
		ap_span(&in->ap[a], &out[k].lo, &out[k].hi);
		k++;
	}
	*n = k;
	bool ok = in->opcode != ISA_OP_FUSED || fused_extra(ctx, in, out, n);
	for (int i = 0; ok && i < *n; i++)
		out[i].region = same_memory_region(ctx, out[i].region);
	return ok;
}

/* Drops accesses every other engine already knows to be complete. */
static void prune_accesses(ncc_lower_ctx_t *ctx)
{
	uint32_t w = 0;
	for (uint32_t i = 0; i < ctx->nacc; i++) {
		const ncc_access_t *a = &ctx->acc[i];
		bool done = true;
		for (int e = 0; e < ISA_ENGINE_COUNT && done; e++)
			if (e != a->engine && ctx->known[e][a->engine] < a->seq)
				done = false;
		if (!done)
			ctx->acc[w++] = *a;
	}
	ctx->nacc = w;
}

/* Waits engine e on engine b reaching seq: on the instruction itself when its wait
 * slot is free, else on a NOP emitted just before it. */
static ncc_status_t add_wait(ncc_lower_ctx_t *ctx, isa_engine_t e, isa_insn_t *in, int b,
			     uint32_t seq)
{
	if (in->wait_sem != ISA_SEM_NONE) {
		isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
		nop.debug_id = in->debug_id;
		nop.wait_sem = in->wait_sem;
		nop.wait_value = in->wait_value;
		nop.signal_sem = (uint8_t)e;
		ncc_status_t st = emit_raw(ctx, e, &nop, NULL);
		if (st != NCC_OK)
			return st;
	}
	in->wait_sem = (uint8_t)b;
	in->wait_value = seq;
	/* everything b knew when that instruction completed is now known to e */
	const uint32_t *k = ctx->kv[b][seq - 1];
	for (int c = 0; c < ISA_ENGINE_COUNT; c++)
		if (k[c] > ctx->known[e][c])
			ctx->known[e][c] = k[c];
	return NCC_OK;
}

ncc_status_t ncc_lower_emit(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, isa_engine_t engine,
			    const isa_insn_t *insn, uint32_t *out_index)
{
	isa_insn_t in = *insn;
	const ncc_inst_t *di = inst ? inst : ctx->cur;
	uint32_t dbg = ISA_DEBUG_NONE;
	if (di) {
		ncc_status_t st = ncc_emit_debug_id(ctx, di, &dbg);
		if (st != NCC_OK)
			return st;
	}
	in.debug_id = dbg;
	isa_engine_t e = stream_of(ctx, engine);
	in.wait_sem = ISA_SEM_NONE;
	in.wait_value = 0;
	in.signal_sem = ISA_SEM_NONE;
	if (!ctx->multi)
		return emit_raw(ctx, e, &in, out_index);
	/* Dependencies: for every earlier access on another engine that conflicts with
	 * one of ours (same region, overlapping bytes, one of them a write), wait until
	 * that instruction completed, unless already known complete. */
	ncc_access_t mine[ISA_MAX_AP + ISA_FUSED_MAX_INPUTS];
	int nmine = 0;
	uint32_t need[ISA_ENGINE_COUNT] = { 0 };
	if (!insn_accesses(ctx, &in, mine, &nmine)) {
		for (int b = 0; b < ISA_ENGINE_COUNT; b++)
			need[b] = ctx->count[b];
	} else {
		for (uint32_t i = 0; i < ctx->nacc; i++) {
			const ncc_access_t *a = &ctx->acc[i];
			if (a->engine == e || a->seq <= need[a->engine] ||
			    a->seq <= ctx->known[e][a->engine])
				continue;
			for (int k = 0; k < nmine; k++)
				if ((mine[k].region == a->region || a->region == UINT32_MAX) &&
				    (mine[k].write || a->write) &&
				    mine[k].lo < a->hi && a->lo < mine[k].hi) {
					need[a->engine] = a->seq;
					break;
				}
		}
	}
	/* wait for the engine with the most implied knowledge first: its wait may
	 * make the others unnecessary */
	for (;;) {
		int best = -1;
		for (int b = 0; b < ISA_ENGINE_COUNT; b++)
			if (b != (int)e && need[b] > ctx->known[e][b] && (best < 0 || need[b] > need[best]))
				best = b;
		if (best < 0)
			break;
		ncc_status_t st = add_wait(ctx, e, &in, best, need[best]);
		if (st != NCC_OK)
			return st;
	}
	in.signal_sem = (uint8_t)e;
	ncc_status_t st = emit_raw(ctx, e, &in, out_index);
	if (st != NCC_OK)
		return st;
	if (!insn_accesses(ctx, &in, mine, &nmine)) {
		/* an unanalysed instruction: later ones must wait for it, whatever they touch */
		mine[0].region = UINT32_MAX;
		nmine = 1;
	}
	if (ctx->nacc + (uint32_t)nmine > ctx->cap_acc) {
		uint32_t nc = ctx->cap_acc ? ctx->cap_acc * 2 : 1024;
		void *n = realloc(ctx->acc, (size_t)nc * sizeof(*ctx->acc));
		if (!n)
			return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_NOMEM, "out of memory");
		ctx->acc = n;
		ctx->cap_acc = nc;
	}
	for (int k = 0; k < nmine; k++) {
		ncc_access_t a = mine[k];
		if (a.region == UINT32_MAX) {
			/* conflicts with everything: model as a write of every region */
			a.write = true;
			a.lo = INT64_MIN / 2;
			a.hi = INT64_MAX / 2;
		}
		a.engine = (uint8_t)e;
		a.seq = ctx->count[e];
		ctx->acc[ctx->nacc++] = a;
	}
	if ((ctx->count[e] & 63) == 0)
		prune_accesses(ctx);
	return NCC_OK;
}

isa_engine_t ncc_lower_control_engine(ncc_lower_ctx_t *ctx)
{
	return ISA_ENGINE_GPSIMD;
}

uint32_t ncc_lower_next_index(ncc_lower_ctx_t *ctx)
{
	return ctx->count[ISA_ENGINE_GPSIMD];
}

ncc_status_t ncc_lower_jump(ncc_lower_ctx_t *ctx, const ncc_view_t *cond, bool invert,
			    uint32_t target, uint32_t *out_index, isa_insn_t *out_insn)
{
	ncc_status_t st;
	isa_insn_t in = isa_insn_init(ISA_OP_JUMP, 0);
	in.param = target == UINT32_MAX ? 0 : target;
	if (cond) {
		in.n_ap = 1;
		ncc_view_t c = *cond;
		c.rank = 0;
		if (ncc_lower_views_to_aps(1, &c, &in.ap[0]) != NCC_OK)
			return NCC_ERR_INTERNAL;
		in.flags = invert ? ISA_F_INVERT : 0;
	}
	st = ncc_lower_emit(ctx, ctx->cur, ISA_ENGINE_GPSIMD, &in, out_index);
	if (st == NCC_OK && out_insn)
		*out_insn = ctx->last_insn;
	return st;
}

ncc_status_t ncc_lower_patch_jump(ncc_lower_ctx_t *ctx, uint32_t index, const isa_insn_t *insn,
				  uint32_t target)
{
	isa_insn_t in = *insn;
	in.param = target;
	if (neff_builder_patch(ctx->b, 0, ISA_ENGINE_GPSIMD, index, &in) != NEFF_OK)
		return ncc_lower_fail(ctx, ctx->cur, NCC_ERR_INTERNAL, "internal: cannot patch a jump");
	return NCC_OK;
}

/* ---------------------------------------------------------------- support */

bool ncc_lower_supports(const ncc_inst_t *inst, const char **out_reason)
{
	static const char *r_type = "unsupported element type";
	const char *dummy;
	if (!out_reason)
		out_reason = &dummy;
	*out_reason = NULL;
	/* every array leaf of the result and of the operands must have an ISA dtype
	 * (tokens pass through after-all and friends, handled below) */
	int32_t nl = ncc_lower_shape_leaves(&inst->shape);
	for (int32_t k = 0; k < nl; k++) {
		const ncc_shape_t *s = shape_leaf(&inst->shape, k);
		isa_dtype_t dt;
		if (s && s->etype != NCC_TUPLE && ncc_lower_dtype(s->etype, &dt) != NCC_OK) {
			*out_reason = r_type;
			return false;
		}
	}
	for (int32_t i = 0; i < inst->noperands; i++) {
		const ncc_shape_t *os = &inst->operands[i]->shape;
		int32_t n = ncc_lower_shape_leaves(os);
		for (int32_t k = 0; k < n; k++) {
			const ncc_shape_t *s = shape_leaf(os, k);
			isa_dtype_t dt;
			if (s && ncc_lower_dtype(s->etype, &dt) != NCC_OK) {
				*out_reason = r_type;
				return false;
			}
		}
	}
	for (int32_t k = 0; k < nl; k++) {
		const ncc_shape_t *s = shape_leaf(&inst->shape, k);
		if (s && ncc_lower_leaf_too_big(s, NULL, 0)) {
			*out_reason = "result larger than a device can address (2^48 bytes)";
			return false;
		}
	}
	if (ncc_lower_elementwise_supports(inst, out_reason) ||
	    ncc_lower_shape_supports(inst, out_reason) ||
	    ncc_lower_reduce_supports(inst, out_reason) ||
	    ncc_lower_dot_supports(inst, out_reason) ||
	    ncc_lower_conv_supports(inst, out_reason) ||
	    ncc_lower_misc_supports(inst, out_reason) ||
	    ncc_lower_control_supports(inst, out_reason))
		return true;
	if (inst->op == NCC_OP_FUSION)
		return true; /* the fused-loop lowering of the passes decides */
	if (!*out_reason)
		*out_reason = "unsupported operation";
	return false;
}

static ncc_lower_fn family_of(const ncc_inst_t *inst)
{
	const char *r;
	if (ncc_lower_elementwise_supports(inst, &r))
		return ncc_lower_elementwise;
	if (ncc_lower_shape_supports(inst, &r))
		return ncc_lower_shape_op;
	if (ncc_lower_reduce_supports(inst, &r))
		return ncc_lower_reduce_op;
	if (ncc_lower_dot_supports(inst, &r))
		return ncc_lower_dot;
	if (ncc_lower_conv_supports(inst, &r))
		return ncc_lower_conv;
	if (ncc_lower_misc_supports(inst, &r))
		return ncc_lower_misc;
	if (ncc_lower_control_supports(inst, &r))
		return ncc_lower_control;
	return NULL;
}

/* ---------------------------------------------------------------- walking */

static ncc_status_t lower_inst(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst)
{
	const char *reason = NULL;
	if (!ncc_lower_supports(inst, &reason)) {
		char big[600];
		for (int32_t k = 0; k < ncc_lower_shape_leaves(&inst->shape); k++) {
			const ncc_shape_t *s = shape_leaf(&inst->shape, k);
			if (s && ncc_lower_leaf_too_big(s, big, sizeof(big)))
				return ncc_lower_fail(ctx, inst, NCC_ERR_LIMIT, "%s", big);
		}
		char ty[64] = "";
		if (reason && strstr(reason, "element type")) {
			/* name the offending type */
			int32_t nl = ncc_lower_shape_leaves(&inst->shape);
			isa_dtype_t dt;
			for (int32_t k = 0; k < nl && !ty[0]; k++) {
				const ncc_shape_t *s = shape_leaf(&inst->shape, k);
				if (s && ncc_lower_dtype(s->etype, &dt) != NCC_OK)
					snprintf(ty, sizeof(ty), " %s", ncc_etype_name(s->etype));
			}
			for (int32_t i = 0; i < inst->noperands && !ty[0]; i++) {
				const ncc_shape_t *os = &inst->operands[i]->shape;
				for (int32_t k = 0; k < ncc_lower_shape_leaves(os) && !ty[0]; k++) {
					const ncc_shape_t *s = shape_leaf(os, k);
					if (s && ncc_lower_dtype(s->etype, &dt) != NCC_OK)
						snprintf(ty, sizeof(ty), " %s", ncc_etype_name(s->etype));
				}
			}
		}
		return ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "%s%s", reason, ty);
	}
	ncc_lval_t *v = ncc_lower_val(ctx, inst);
	int32_t keep_bind[1] = { v->bind_out ? v->bind_out[0] : -1 };
	int32_t *saved = NULL;
	int32_t nl = ncc_lower_shape_leaves(&inst->shape);
	if (v->bind_out && v->nleaves == nl) {
		saved = malloc((size_t)(nl > 0 ? nl : 1) * sizeof(int32_t));
		if (!saved)
			return NCC_ERR_NOMEM;
		memcpy(saved, v->bind_out, (size_t)nl * sizeof(int32_t));
	}
	int32_t pend = v->pending;
	bool pinned = v->pinned;
	ncc_status_t st = lval_init(v, nl);
	if (st != NCC_OK) {
		free(saved);
		return ncc_lower_fail(ctx, inst, st, "out of memory");
	}
	if (saved)
		memcpy(v->bind_out, saved, (size_t)nl * sizeof(int32_t));
	else if (nl == 1)
		v->bind_out[0] = keep_bind[0];
	free(saved);
	v->pending = pend;
	v->pinned = pinned;
	ctx->cur = inst;
	ctx->ntemps = 0;
	if (inst->op == NCC_OP_FUSION)
		st = ncc_lower_fusion(ctx, inst); /* lower_fusion.c (passes) */
	else {
		ncc_lower_fn fn = family_of(inst);
		st = fn ? fn(ctx, inst) : ncc_lower_fail(ctx, inst, NCC_ERR_UNSUPPORTED, "unsupported operation");
	}
	for (int32_t i = 0; i < ctx->ntemps; i++)
		ncc_plan_unref(&ctx->plan, ctx->temps[i]);
	ctx->ntemps = 0;
	if (st != NCC_OK)
		return st;
	for (int32_t k = 0; k < v->nleaves; k++)
		if (!v->set[k])
			return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
					      "internal: lowering left result leaf %d unset", k);
	/* operands whose last use this was are released */
	for (int32_t i = 0; i < inst->noperands; i++) {
		ncc_lval_t *ov = ncc_lower_val(ctx, inst->operands[i]);
		if (ov && --ov->pending <= 0 && !ov->pinned)
			lval_release(ctx, ov);
	}
	if (v->pending <= 0 && !v->pinned)
		lval_release(ctx, v); /* dead value (no users) */
	return NCC_OK;
}

ncc_status_t ncc_lower_computation(ncc_lower_ctx_t *ctx, const ncc_comp_t *c,
				   const ncc_view_t *param_views, int32_t nparam_views)
{
	const ncc_inst_t *saved_cur = ctx->cur;
	for (int32_t i = 0; i < c->ninsts; i++) {
		ncc_lval_t *v = ncc_lower_val(ctx, c->insts[i]);
		if (!v)
			return NCC_ERR_INTERNAL;
		v->pending = 0;
		v->pinned = false;
	}
	for (int32_t i = 0; i < c->ninsts; i++)
		for (int32_t j = 0; j < c->insts[i]->noperands; j++) {
			ncc_lval_t *ov = ncc_lower_val(ctx, c->insts[i]->operands[j]);
			if (ov)
				ov->pending++;
		}
	if (c->root)
		ncc_lower_val(ctx, c->root)->pinned = true;
	int32_t pv = 0;
	for (int32_t i = 0; i < c->ninsts; i++) {
		const ncc_inst_t *inst = c->insts[i];
		if (inst->op == NCC_OP_PARAMETER) {
			ncc_lval_t *v = ncc_lower_val(ctx, inst);
			int32_t nl = ncc_lower_shape_leaves(&inst->shape);
			int32_t pend = v->pending;
			bool pinned = v->pinned;
			int32_t *bind = NULL;
			if (lval_init(v, nl) != NCC_OK)
				return NCC_ERR_NOMEM;
			(void)bind;
			v->pending = pend;
			v->pinned = pinned;
			/* parameter k's leaves are at the position of k in the flattened params */
			int32_t first = 0;
			for (int64_t p = 0; p < inst->parameter_number && p < c->nparams; p++)
				first += c->params[p] ? ncc_lower_shape_leaves(&c->params[p]->shape) : 0;
			(void)pv;
			for (int32_t k = 0; k < nl; k++) {
				if (first + k >= nparam_views)
					return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL,
							      "internal: parameter leaf missing");
				ctx->cur = inst;
				ncc_status_t st = ncc_lower_set_view(ctx, inst, k, &param_views[first + k]);
				if (st != NCC_OK)
					return st;
			}
			if (v->pending <= 0 && !v->pinned)
				lval_release(ctx, v);
			continue;
		}
		ncc_status_t st = lower_inst(ctx, inst);
		if (st != NCC_OK)
			return st;
	}
	ctx->cur = saved_cur;
	return NCC_OK;
}

void ncc_lower_release_root(ncc_lower_ctx_t *ctx, const ncc_comp_t *c)
{
	ncc_lval_t *v = ncc_lower_val(ctx, c->root);
	if (v) {
		v->pinned = false;
		lval_release(ctx, v);
	}
}

static bool module_has_control(const ncc_module_t *m)
{
	for (int32_t i = 0; i < m->ncomps; i++)
		for (int32_t j = 0; j < m->comps[i]->ninsts; j++) {
			ncc_opcode_t op = m->comps[i]->insts[j]->op;
			if (op == NCC_OP_WHILE || op == NCC_OP_CONDITIONAL)
				return true;
		}
	return false;
}

/* Marks entry-root leaves that can be computed directly in their output tensor. */
static void bind_outputs(ncc_lower_ctx_t *ctx, const ncc_inst_t *root)
{
	if (root->op == NCC_OP_TUPLE) {
		int32_t k = 0;
		for (int32_t i = 0; i < root->noperands; i++) {
			const ncc_inst_t *o = root->operands[i];
			int32_t nl = ncc_lower_shape_leaves(&o->shape);
			if (nl == 1 && o->shape.etype != NCC_TUPLE && o->op != NCC_OP_PARAMETER &&
			    o->op != NCC_OP_CONSTANT && ctx->out_alias[k] < 0 &&
			    ctx->out_tensor[k] != NCC_NO_TENSOR) {
				ncc_lval_t *v = ncc_lower_val(ctx, o);
				if (v->bind_out[0] < 0)
					v->bind_out[0] = k;
			}
			k += nl;
		}
	} else if (root->shape.etype != NCC_TUPLE && root->op != NCC_OP_PARAMETER &&
		   root->op != NCC_OP_CONSTANT && ctx->out_alias[0] < 0 &&
		   ctx->out_tensor[0] != NCC_NO_TENSOR) {
		ncc_lower_val(ctx, root)->bind_out[0] = 0;
	}
}

/* Whether view v reads an input that an aliased output overwrites at the end. */
static bool reads_updated_input(const ncc_lower_ctx_t *ctx, const ncc_view_t *v)
{
	for (uint32_t o = 0; o < ctx->n_outputs; o++)
		if (ctx->out_alias[o] >= 0 &&
		    v->region == ISA_REGION_IO0 + (uint32_t)ctx->in_tensor[ctx->out_alias[o]])
			return true;
	return false;
}

/* Outputs not computed in their tensors are copied there after every other
 * instruction. An aliased output's tensor may be its input's memory (the runtime
 * binds the input when the caller gives no separate output tensor), so no copy may
 * read an input after an aliased output has overwritten it: the unaliased outputs
 * are copied first (their tensors are never an input's memory); then every aliased
 * output whose value is (a view of) an input that some aliased output updates, and
 * is not exactly the input it updates itself (that copy is an element-wise self
 * copy), is staged into scratch; only then are the aliased outputs written. Without
 * this, returning (w - g, w) with w updated in place by the first output, or swapping
 * two updated inputs, would read overwritten values. */
static ncc_status_t copy_outputs(ncc_lower_ctx_t *ctx, const ncc_comp_t *e)
{
	ncc_lval_t *rv = ncc_lower_val(ctx, e->root);
	ctx->cur = e->root;
	uint32_t n = ctx->n_outputs;
	ncc_view_t *src = malloc(((size_t)n + 1) * sizeof(*src));
	int32_t *staged = malloc(((size_t)n + 1) * sizeof(*staged));
	if (!src || !staged) {
		free(src);
		free(staged);
		return ncc_lower_fail(ctx, e->root, NCC_ERR_NOMEM, "out of memory");
	}
	ncc_status_t st = NCC_OK;
	for (uint32_t o = 0; o < n; o++) {
		src[o] = rv->views[o];
		staged[o] = -1;
	}
	for (int pass = 0; pass < 3 && st == NCC_OK; pass++) {
		for (uint32_t o = 0; o < n && st == NCC_OK; o++) {
			if (ctx->out_tensor[o] == NCC_NO_TENSOR || (pass == 0) != (ctx->out_alias[o] < 0))
				continue;
			const ncc_shape_t *s = shape_leaf(&e->root->shape, (int32_t)o);
			ncc_view_t dst = ncc_view_dense(ISA_REGION_IO0 + ctx->out_tensor[o], 0, src[o].dtype,
							s->rank, s->dims);
			if (pass == 1) {
				ncc_view_t self = ncc_view_dense(ISA_REGION_IO0 +
								 (uint32_t)ctx->in_tensor[ctx->out_alias[o]],
								 0, src[o].dtype, s->rank, s->dims);
				bool is_self = src[o].region == self.region && src[o].offset == 0 &&
					       ncc_view_is_dense(&src[o]);
				if (is_self || !reads_updated_input(ctx, &src[o]))
					continue;
				int64_t cnt = ncc_shape_elements(s);
				st = ncc_plan_alloc(&ctx->plan, (uint64_t)cnt * isa_dtype_size(src[o].dtype),
						    &staged[o]);
				if (st != NCC_OK) {
					st = ncc_lower_fail(ctx, e->root, st, "cannot allocate scratch for output %u", o);
					break;
				}
				ncc_view_t tmp = ncc_view_dense(ISA_REGION_SCRATCH, ctx->plan.blocks[staged[o]].offset,
								src[o].dtype, s->rank, s->dims);
				st = ncc_lower_copy(ctx, e->root, &tmp, &src[o]);
				src[o] = tmp;
				continue;
			}
			if (src[o].region == dst.region && src[o].offset == 0 && ncc_view_is_dense(&src[o]))
				continue;
			/* Even an aliased output that is its input unchanged is copied: the caller
			 * may bind a separate output tensor (then the copy is the result) or none
			 * (then the runtime binds the input, and the copy is an element-wise self
			 * copy). */
			st = ncc_lower_copy(ctx, e->root, &dst, &src[o]);
		}
	}
	for (uint32_t o = 0; o < n; o++)
		if (staged[o] >= 0)
			ncc_plan_unref(&ctx->plan, staged[o]);
	free(src);
	free(staged);
	return st;
}

static ncc_status_t lower_entry(ncc_lower_ctx_t *ctx)
{
	const ncc_comp_t *e = ctx->m->entry;
	ncc_status_t st = ncc_emit_io(ctx);
	if (st != NCC_OK)
		return st;
	/* bind_out must survive lval_init of the root operands: allocate records now */
	for (int32_t i = 0; i < e->ninsts; i++) {
		ncc_lval_t *v = ncc_lower_val(ctx, e->insts[i]);
		if (lval_init(v, ncc_lower_shape_leaves(&e->insts[i]->shape)) != NCC_OK)
			return NCC_ERR_NOMEM;
		v->live = false;
	}
	bind_outputs(ctx, e->root);
	/* entry parameters are the input tensors, in parameter order */
	int32_t nviews = 0;
	for (int32_t p = 0; p < e->nparams; p++)
		nviews += e->params[p] ? ncc_lower_shape_leaves(&e->params[p]->shape) : 0;
	ncc_view_t *pv = calloc((size_t)(nviews > 0 ? nviews : 1), sizeof(ncc_view_t));
	if (!pv)
		return NCC_ERR_NOMEM;
	int32_t k = 0;
	for (int32_t p = 0; p < e->nparams; p++) {
		const ncc_inst_t *pi = e->params[p];
		if (!pi)
			continue;
		isa_dtype_t dt;
		if (pi->shape.etype == NCC_TUPLE || ncc_lower_dtype(pi->shape.etype, &dt) != NCC_OK) {
			free(pv);
			ctx->cur = NULL;
			return ncc_lower_fail(ctx, pi, NCC_ERR_UNSUPPORTED,
					      "unsupported entry parameter type");
		}
		/* a zero-element parameter has no tensor: an empty view, which no
		 * instruction reads (no elements, no access) */
		uint32_t region = ctx->in_tensor[p] >= 0 ? ISA_REGION_IO0 + (uint32_t)ctx->in_tensor[p]
							  : ISA_REGION_CONST;
		pv[k] = ncc_view_dense(region, 0, dt, pi->shape.rank, pi->shape.dims);
		k++;
	}
	st = ncc_lower_computation(ctx, e, pv, nviews);
	free(pv);
	if (st != NCC_OK)
		return st;
	st = copy_outputs(ctx, e);
	if (st != NCC_OK)
		return st;
	ncc_lower_release_root(ctx, e);
	return NCC_OK;
}

ncc_status_t ncc_lower_module(const ncc_module_t *m, const ncc_compile_options_t *opts,
			      void **out_neff, size_t *out_size, ncc_error_t *err)
{
	if (out_neff)
		*out_neff = NULL;
	if (out_size)
		*out_size = 0;
	if (err) {
		err->status = NCC_OK;
		err->msg[0] = 0;
	}
	if (!m || !m->entry || !out_neff || !out_size)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_lower_module: invalid arguments");
	ncc_lower_ctx_t *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	if (opts)
		ctx->opts = *opts;
	else
		ncc_compile_options_init(&ctx->opts);
	if (ctx->opts.n_cores == 0)
		ctx->opts.n_cores = 1;
	ctx->m = m;
	ctx->err = err;
	ncc_status_t st = NCC_OK;
	if (ctx->opts.n_cores > NEFF_MAX_CORES) {
		st = ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "n_cores %u exceeds %d",
				   ctx->opts.n_cores, NEFF_MAX_CORES);
		goto out;
	}
	int me = ctx->opts.multi_engine;
	ctx->multi = (me < 0 ? ctx->opts.opt_level > 0 : me > 0) && !module_has_control(m);
	ctx->nvals = m->next_id;
	ctx->vals = calloc(ctx->nvals ? ctx->nvals : 1, sizeof(ncc_lval_t));
	ctx->debug_ids = malloc((ctx->nvals ? ctx->nvals : 1) * sizeof(uint32_t));
	char name[128];
	snprintf(name, sizeof(name), "%s", ctx->opts.model_name ? ctx->opts.model_name :
		 m->name ? m->name : "model");
	ctx->b = neff_builder_create(name, ctx->opts.n_cores);
	if (!ctx->vals || !ctx->debug_ids || !ctx->b) {
		st = ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < ctx->nvals; i++)
		ctx->debug_ids[i] = ISA_DEBUG_NONE;
	st = lower_entry(ctx);
	if (st != NCC_OK) {
		if (err && err->status == NCC_OK)
			ncc_lower_fail(ctx, ctx->cur, st, "lowering failed (%s)", ncc_status_name(st));
		goto out;
	}
	st = ncc_emit_finish(ctx, out_neff, out_size);
	if (st == NCC_OK && ctx->opts.dump_dir &&
	    (st = ncc_plan_dump(&ctx->plan, ctx->opts.dump_dir, err)) != NCC_OK) {
		free(*out_neff);
		*out_neff = NULL;
		*out_size = 0;
	}
out:
	if (ctx->vals)
		for (uint32_t i = 0; i < ctx->nvals; i++)
			lval_clear(&ctx->vals[i]);
	free(ctx->vals);
	free(ctx->debug_ids);
	free(ctx->in_tensor);
	free(ctx->out_tensor);
	free(ctx->out_alias);
	free(ctx->acc);
	free(ctx->consts);
	for (int e = 0; e < ISA_ENGINE_COUNT; e++)
		free(ctx->kv[e]);
	ncc_plan_free_all(&ctx->plan);
	neff_builder_destroy(ctx->b);
	free(ctx);
	return st;
}
