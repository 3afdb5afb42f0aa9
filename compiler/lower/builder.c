/* ncc back end, the builder every lowering file uses (lower_ctx.h, the shared part of lower_internal.h) and that calls none of them: instructions onto the engines' streams with the semaphore waits that keep program order (the rule below), the JUMPs of control flow, access patterns from views, the COPY/ALU/ACTIVATE/REDUCE/GATHER/SCATTER builders over views, the debug map, errors and the reduction helpers several op families share. Values, scratch and constants: builder_value.c; view arithmetic: builder_view.c. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

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
	ns_status_t bs = neff_builder_emit(ctx->b, 0, e, in, &idx);
	if (bs)
		return ncc_lower_fail_status(ctx, ctx->cur, bs, NCC_ERR_INTERNAL,
					     "cannot emit an instruction");
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
	case ISA_OP_CONV: /* ap3 is the window, no memory */
		w[0] = r[1] = r[2] = true;
		break;
	case ISA_OP_SELSCAT: /* ap0 read and written; ap3 is the window */
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
	return ncc_lower_fail_status(ctx, ctx->cur,
				     neff_builder_patch(ctx->b, 0, ISA_ENGINE_GPSIMD, index, &in),
				     NCC_ERR_INTERNAL, "internal: cannot patch a jump");
}


/* ---------------------------------------------------------------- access patterns */

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

/* A copy moves every element on its own, so it may walk the dims in any order:
 * the destination's memory order (largest stride outermost), when every
 * destination dim of size > 1 has a positive stride. Dims the views list in
 * another order then fold (a transposed view into a transposed buffer is one
 * run), and the innermost dim writes the destination's densest run: a
 * convolution writing its 512x512x3x3 result through a transposed view walked
 * a 18 KB stride, 2.2 ms where the copy in memory order takes 0.2. */
ncc_status_t ncc_lower_copy(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *dst,
			    const ncc_view_t *src)
{
	ncc_view_t v[2] = { *dst, *src };
	bool positive = true;
	for (int32_t d = 0; d < dst->rank; d++)
		positive &= dst->dims[d] == 1 || dst->strides[d] > 0;
	if (positive) {
		/* insertion sort of the dims by destination stride, stable */
		for (int32_t d = 1; d < dst->rank; d++)
			for (int32_t e = d; e > 0 && v[0].strides[e - 1] < v[0].strides[e]; e--)
				for (int k = 0; k < 2; k++) {
					int64_t td = v[k].dims[e], ts = v[k].strides[e];
					v[k].dims[e] = v[k].dims[e - 1];
					v[k].strides[e] = v[k].strides[e - 1];
					v[k].dims[e - 1] = td;
					v[k].strides[e - 1] = ts;
				}
	}
	return for_views(ctx, inst, 2, v, emit_copy_fn, NULL);
}

ncc_status_t ncc_lower_copy_spread(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   const ncc_view_t *dst, const ncc_view_t *src, const int64_t *lo,
				   const int64_t *step)
{
	ncc_view_t s = *src, d = *dst;
	int64_t soff = (int64_t)src->offset, doff = (int64_t)dst->offset;
	int64_t ses = (int64_t)isa_dtype_size(src->dtype), des = (int64_t)isa_dtype_size(dst->dtype);
	for (int32_t k = 0; k < src->rank; k++) {
		int64_t i0 = lo[k] < 0 ? (-lo[k] + step[k] - 1) / step[k] : 0;
		int64_t last = dst->dims[k] - 1 - lo[k];
		int64_t i1 = last < 0 ? -1 : last / step[k];
		if (i1 > src->dims[k] - 1)
			i1 = src->dims[k] - 1;
		int64_t cnt = i1 - i0 + 1;
		if (cnt <= 0)
			return NCC_OK; /* src is cut away entirely */
		soff += i0 * src->strides[k] * ses;
		s.dims[k] = cnt;
		doff += (lo[k] + i0 * step[k]) * dst->strides[k] * des;
		d.dims[k] = cnt;
		d.strides[k] = dst->strides[k] * step[k];
	}
	s.offset = (uint64_t)soff;
	d.offset = (uint64_t)doff;
	return ncc_lower_copy(ctx, inst, &d, &s);
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

/* Whether in, an operand of an ALU op writing the dense view dst (at least
 * 64K elements), walks dst's innermost dim with a stride while another of its
 * dims is contiguous: a transpose, read one element per cache line. */
static bool alu_input_transposed(const ncc_view_t *dst, const ncc_view_t *in)
{
	int32_t r = dst->rank;
	if (r < 2 || in->rank != r || !ncc_view_is_dense(dst) || ncc_view_elements(dst) < (1 << 16) ||
	    dst->dims[r - 1] < 8)
		return false;
	int64_t si = in->strides[r - 1];
	if (si == 1 || si == 0 || si == -1)
		return false;
	for (int32_t d = 0; d < r - 1; d++)
		if (in->dims[d] >= 8 && in->strides[d] == 1)
			return true;
	return false;
}

ncc_status_t ncc_lower_alu(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t sub,
			   const ncc_view_t *dst, int n_in, const ncc_view_t *in)
{
	ncc_view_t v[ISA_MAX_AP];
	if (n_in < 1 || n_in > 3 || isa_alu_arity(sub) != n_in)
		return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: ALU arity");
	v[0] = *dst;
	for (int k = 0; k < n_in; k++) {
		v[k + 1] = in[k];
		if (!alu_input_transposed(dst, &in[k]))
			continue;
		/* a transposed operand of a large dense result is copied into the
		 * result's order first: the COPY kernel moves it in tiles, the ALU
		 * walking it strided missed the cache on every element (the
		 * transformer's scaled k^T, 262K elements: 0.54 ms) */
		ncc_view_t t;
		ncc_status_t st = ncc_lower_temp_view(ctx, in[k].dtype, dst->rank, dst->dims, &t);
		if (st == NCC_OK)
			st = ncc_lower_copy(ctx, inst, &t, &in[k]);
		if (st != NCC_OK)
			return st;
		v[k + 1] = t;
	}
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

ncc_status_t ncc_lower_fail_status(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   ns_status_t status, ncc_status_t code, const char *fmt, ...)
{
	if (!status)
		return NCC_OK;
	code = ncc_status_from_ns(status, code);
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ncc_status_t st = ncc_lower_fail(ctx, inst, code, "%s: %s", what, ns_status_message(status));
	ns_status_free(status);
	return st;
}

/* ---------------------------------------------------------------- debug map */

ncc_status_t ncc_emit_debug_id(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, uint32_t *out_id)
{
	if (inst->id < ctx->nvals && ctx->debug_ids[inst->id] != ISA_DEBUG_NONE) {
		*out_id = ctx->debug_ids[inst->id];
		return NCC_OK;
	}
	uint32_t line = inst->metadata.source_line > 0 && inst->metadata.source_line <= UINT32_MAX
				? (uint32_t)inst->metadata.source_line : 0;
	const char *op_type = inst->metadata.op_type ? inst->metadata.op_type
			      : inst->opname ? inst->opname : ncc_opcode_name(inst->op);
	char nm[NEFF_NAME_MAX];
	snprintf(nm, sizeof(nm), "%s", inst->name ? inst->name : "?");
	uint32_t id;
	ns_status_t bs = neff_builder_add_debug(ctx->b, nm, op_type, inst->metadata.source_file,
						line, &id);
	if (bs)
		return ncc_lower_fail_status(ctx, inst, bs, NCC_ERR_INTERNAL,
					     "cannot add a debug map entry");
	if (inst->id < ctx->nvals)
		ctx->debug_ids[inst->id] = id;
	*out_id = id;
	return NCC_OK;
}

ncc_status_t ncc_lower_debug_entries(ncc_lower_ctx_t *ctx, const ncc_inst_t *const *insts,
				     int32_t n, uint32_t *out_first)
{
	uint32_t first = ISA_DEBUG_NONE;
	for (int32_t k = 0; k < n; k++) {
		const ncc_inst_t *inst = insts[k];
		uint32_t line = inst->metadata.source_line > 0 && inst->metadata.source_line <= UINT32_MAX
					? (uint32_t)inst->metadata.source_line : 0;
		const char *op_type = inst->metadata.op_type ? inst->metadata.op_type
				      : inst->opname ? inst->opname : ncc_opcode_name(inst->op);
		/* the ".pN" a pass appends to a clone (ncc_pass_fresh_name) */
		const char *name = inst->name ? inst->name : "?";
		size_t len = strlen(name);
		const char *dot = strrchr(name, '.');
		if (dot && dot[1] == 'p' && dot[2] && strspn(dot + 2, "0123456789") == strlen(dot + 2))
			len = (size_t)(dot - name);
		char nm[NEFF_NAME_MAX];
		snprintf(nm, sizeof(nm), "%.*s", (int)(len < NEFF_NAME_MAX ? len : NEFF_NAME_MAX - 1), name);
		uint32_t id;
		ns_status_t bs = neff_builder_add_debug(ctx->b, nm, op_type,
							inst->metadata.source_file, line, &id);
		if (bs)
			return ncc_lower_fail_status(ctx, inst, bs, NCC_ERR_INTERNAL,
						     "cannot add a debug map entry");
		if (k == 0)
			first = id;
		else if (id != first + (uint32_t)k)
			return ncc_lower_fail(ctx, inst, NCC_ERR_INTERNAL, "internal: debug entries not consecutive");
	}
	*out_first = first;
	return NCC_OK;
}

/* ---------------------------------------------------------------- rows (GATHER, SCATTER) */

/* One GATHER (ap0[m,r] = ap1[idx[m], r]) or SCATTER (ap0[idx[m], r] op= ap1[m, r]),
 * or one per index of the row dims that do not fold into one. table: [N, rest...],
 * rows: [M, rest...] (dim 0 is the indexed dim); idx: [M]. */
ncc_status_t ncc_lower_rows(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, int scatter_op,
			    const ncc_view_t *table, const ncc_view_t *rows, const ncc_view_t *idx)
{
	/* try folding the row dims (1..rank) into one */
	int64_t r = 1;
	int64_t ts = 0, rs = 0;
	bool ok = true;
	int32_t last = -1;
	for (int32_t d = table->rank - 1; d >= 1; d--) {
		if (table->dims[d] == 1)
			continue;
		if (last < 0) {
			ts = table->strides[d];
			rs = rows->strides[d];
		} else if (table->strides[d] != table->strides[last] * table->dims[last] ||
			   rows->strides[d] != rows->strides[last] * rows->dims[last]) {
			ok = false;
			break;
		}
		r *= table->dims[d];
		last = d;
	}
	if (!ok) {
		/* split the first row dim of size > 1 and recurse */
		int32_t d = 1;
		while (table->dims[d] == 1)
			d++;
		for (int64_t i = 0; i < table->dims[d]; i++) {
			ncc_view_t t = *table, w = *rows;
			t.offset = (uint64_t)((int64_t)t.offset + i * t.strides[d] * (int64_t)isa_dtype_size(t.dtype));
			w.offset = (uint64_t)((int64_t)w.offset + i * w.strides[d] * (int64_t)isa_dtype_size(w.dtype));
			t.dims[d] = w.dims[d] = 1;
			ncc_status_t st = ncc_lower_rows(ctx, inst, scatter_op, &t, &w, idx);
			if (st != NCC_OK)
				return st;
		}
		return NCC_OK;
	}
	if (last < 0)
		ts = rs = 1;
	bool scatter = scatter_op >= 0;
	isa_insn_t in = isa_insn_init(scatter ? ISA_OP_SCATTER : ISA_OP_GATHER,
				      scatter ? (uint32_t)scatter_op : 0);
	in.n_ap = 3;
	isa_ap_t *o = &in.ap[0], *a = &in.ap[1];
	const ncc_view_t *ov = scatter ? table : rows, *av = scatter ? rows : table;
	o->region = ov->region; o->dtype = (uint8_t)ov->dtype; o->offset = ov->offset; o->rank = 2;
	o->shape[0] = (uint64_t)ov->dims[0]; o->stride[0] = ov->strides[0];
	o->shape[1] = (uint64_t)r; o->stride[1] = scatter ? ts : rs;
	a->region = av->region; a->dtype = (uint8_t)av->dtype; a->offset = av->offset; a->rank = 2;
	a->shape[0] = (uint64_t)av->dims[0]; a->stride[0] = av->strides[0];
	a->shape[1] = (uint64_t)r; a->stride[1] = scatter ? rs : ts;
	if (ncc_lower_views_to_aps(1, idx, &in.ap[2]) != NCC_OK)
		return NCC_ERR_INTERNAL;
	in.ap[2].rank = 1;
	in.ap[2].shape[0] = (uint64_t)idx->dims[0];
	in.ap[2].stride[0] = idx->strides[0];
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_GPSIMD, &in, NULL);
}

/* ---------------------------------------------------------------- reductions */

/* The REDUCE combiner of r = op(a, b) on the scalars a and b (either order), or -1. */
int ncc_lower_binary_combiner(const ncc_inst_t *r, const ncc_inst_t *a, const ncc_inst_t *b)
{
	if (r->noperands != 2 || a == b ||
	    !((r->operands[0] == a && r->operands[1] == b) || (r->operands[0] == b && r->operands[1] == a)))
		return -1;
	switch (r->op) {
	case NCC_OP_ADD: return ISA_RED_SUM;
	case NCC_OP_MULTIPLY: return ISA_RED_PROD;
	case NCC_OP_MAXIMUM: return ISA_RED_MAX;
	case NCC_OP_MINIMUM: return ISA_RED_MIN;
	case NCC_OP_AND: return ISA_RED_AND;
	case NCC_OP_OR: return ISA_RED_OR;
	default: return -1;
	}
}

/* The REDUCE combiner of a computation `(a, b) -> op(a, b)` on scalars, or -1. */
int ncc_lower_combiner_of(const ncc_comp_t *c)
{
	if (!c || !c->root || c->nparams != 2 || c->root->noperands != 2)
		return -1;
	const ncc_inst_t *r = c->root;
	const ncc_inst_t *a = r->operands[0], *b = r->operands[1];
	if (a->op != NCC_OP_PARAMETER || b->op != NCC_OP_PARAMETER)
		return -1;
	return ncc_lower_binary_combiner(r, a, b);
}

/* true when the init operand is a constant equal to the REDUCE identity, so the
 * initial copy can be skipped. */
static bool init_is_identity(const ncc_inst_t *init, int comb)
{
	if (init->op != NCC_OP_CONSTANT || !init->literal.present || init->literal.elided ||
	    init->literal.count != 1)
		return false;
	double v = ncc_literal_get_f64(&init->literal, 0);
	bool fl = ncc_etype_is_float(init->shape.etype);
	switch (comb) {
	case ISA_RED_SUM: return v == 0 && !signbit(v);
	case ISA_RED_PROD: return v == 1;
	case ISA_RED_OR: return v == 0;
	case ISA_RED_MAX: return fl && isinf(v) && v < 0;
	case ISA_RED_MIN: return fl && isinf(v) && v > 0;
	case ISA_RED_AND: return init->shape.etype == NCC_PRED && v != 0;
	default: return false;
	}
}

/* Unless the init value is the combiner's identity, copies it into every output
 * element: REDUCE with ACCUMULATE then combines into it. *out_acc says which. */
ncc_status_t ncc_lower_reduce_start(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				    const ncc_inst_t *init_inst, int comb, const ncc_view_t *init,
				    const ncc_view_t *out, bool *out_acc)
{
	*out_acc = !init_is_identity(init_inst, comb);
	if (!*out_acc)
		return NCC_OK;
	ncc_view_t b = ncc_view_bcast_scalar(init, out->rank, out->dims);
	return ncc_lower_copy(ctx, inst, out, &b);
}

ncc_status_t ncc_lower_reduce_dims(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				   const ncc_inst_t *init_inst, int comb, ncc_view_t in,
				   ncc_view_t init, ncc_view_t out)
{
	ncc_status_t st;
	uint32_t mask = 0;
	for (int32_t i = 0; i < inst->dimensions.n; i++)
		mask |= 1u << inst->dimensions.v[i];
	ncc_view_t keep = ncc_view_keep_dims(&out, &in, mask);
	bool acc;
	st = ncc_lower_reduce_start(ctx, inst, init_inst, comb, &init, &out, &acc);
	if (st != NCC_OK || ncc_view_elements(&out) == 0)
		return st;
	if (ncc_view_elements(&in) == 0) {
		if (acc)
			return NCC_OK;
		/* empty reduction without an explicit init: the identity */
		ncc_view_t b = ncc_view_bcast_scalar(&init, out.rank, out.dims);
		return ncc_lower_copy(ctx, inst, &out, &b);
	}
	return ncc_lower_reduce_emit(ctx, inst, (uint32_t)comb, &keep, &in, mask, acc);
}
