/* ncc back end, emission and scheduling: puts each ISA instruction on its engine's stream with the semaphore waits that keep program order (the rule below), and emits and patches the JUMPs of control flow. */
#include <stdint.h>
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
