/* Runs one instruction: bounds check, deadline, kernel dispatch, NaN/Inf record, profile span. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "convert.h"
#include "internal.h"

void fwsim_job_cancel(fwsim_job_t *job)
{
	if (job)
		__atomic_store_n(&job->cancel, 1, __ATOMIC_RELAXED);
}

bool fwsim_watch_poll(fwsim_watch_t *w)
{
	w->left = FWSIM_POLL_WORK;
	if (atomic_load_explicit(w->stop, memory_order_relaxed)) {
		w->why = FWSIM_INVALID;
		return true;
	}
	if (__atomic_load_n(w->cancel, __ATOMIC_RELAXED)) {
		w->why = FWSIM_TIMEOUT;
		w->cancelled = 1;
		return true;
	}
	if (w->deadline_ns && ns_monotonic_ns() >= w->deadline_ns) {
		w->why = FWSIM_TIMEOUT;
		return true;
	}
	return false;
}

static void rec_init(fwsim_error_t *r)
{
	memset(r, 0, sizeof(*r));
	r->insn_index = UINT32_MAX;
	r->engine = UINT32_MAX;
	r->debug_id = ISA_DEBUG_NONE;
	r->region = ISA_REGION_NONE;
}

fwsim_status_t fwsim_exec_begin(fwsim_exec_t *x, fwsim_job_t *job)
{
	memset(x, 0, sizeof(*x));
	x->job = job;
	x->prog = job->program;
	rec_init(&x->fatal);
	rec_init(&x->num);
	pthread_mutex_init(&x->rec_lock, NULL);
	memset(&job->error, 0, sizeof(job->error));
	memset(job->engine_busy_ns, 0, sizeof(job->engine_busy_ns));
	job->insns_executed = 0;
	job->flops = 0;
	if (job->trace) {
		job->trace->count = 0;
		job->trace->dropped = 0;
	}
	const char *bad = NULL;
	if (!job->program)
		bad = "job has no program";
	else if (!job->mem && job->mem_size)
		bad = "job memory is NULL";
	else if (job->n_regions < job->program->n_regions)
		bad = "job binds fewer regions than the program uses";
	else if (job->n_regions && !job->regions)
		bad = "job regions is NULL";
	else if (job->flags & ~(FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF | FWSIM_JOB_PROFILE))
		bad = "unknown job flags";
	else if ((job->flags & FWSIM_JOB_PROFILE) && (!job->trace || (job->trace->cap && !job->trace->spans)))
		bad = "FWSIM_JOB_PROFILE without a trace buffer";
	if (bad) {
		x->fatal.status = FWSIM_INVALID;
		snprintf(x->fatal.message, sizeof(x->fatal.message), "%s", bad);
		atomic_store(&x->stop, 1);
		return FWSIM_INVALID;
	}
	return FWSIM_OK;
}

fwsim_status_t fwsim_exec_end(fwsim_exec_t *x)
{
	fwsim_job_t *job = x->job;
	fwsim_status_t st;
	if (x->fatal.status != FWSIM_OK) {
		job->error = x->fatal;
	} else if (x->num_err_insns) {
		job->error = x->num;
		job->error.status = FWSIM_NUM_ERR;
	} else {
		rec_init(&job->error);
		job->error.status = FWSIM_OK;
	}
	job->error.num_err_insns = x->num_err_insns;
	st = (fwsim_status_t)job->error.status;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		job->engine_busy_ns[e] = x->busy_ns[e];
		job->insns_executed += x->insns[e];
		job->flops += x->flops[e];
	}
	job->error.flops = job->flops;
	if (job->trace && (job->flags & FWSIM_JOB_PROFILE)) {
		uint64_t n = __atomic_load_n(&x->trace_next, __ATOMIC_RELAXED);
		job->trace->count = n < job->trace->cap ? n : job->trace->cap;
	}
	pthread_mutex_destroy(&x->rec_lock);
	return st;
}

void fwsim_exec_fail(fwsim_exec_t *x, fwsim_status_t st, uint32_t e, uint32_t pc,
		     uint32_t ap_index, uint32_t region, const char *fmt, ...)
{
	pthread_mutex_lock(&x->rec_lock);
	if (x->fatal.status == FWSIM_OK) {
		fwsim_error_t *r = &x->fatal;
		r->status = st;
		r->engine = e;
		r->insn_index = pc;
		r->debug_id = (e < ISA_ENGINE_COUNT && pc < x->prog->counts[e])
				      ? x->prog->insns[e][pc].debug_id : ISA_DEBUG_NONE;
		r->ap_index = ap_index;
		r->region = region;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->message, sizeof(r->message), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&x->rec_lock);
	atomic_store(&x->stop, 1);
}

/* The IOMMU of the simulated core: every operand's full extent, negative and
 * zero strides included, must lie in its region, and the region in the job's
 * window. Nothing has been written when this fails. */
static bool check_bounds(fwsim_exec_t *x, uint32_t e, uint32_t pc, const isa_insn_t *in,
			 fwsim_kargs_t *k)
{
	const fwsim_job_t *job = x->job;
	for (uint32_t i = 0; i < in->n_ap; i++) {
		const isa_ap_t *ap = &in->ap[i];
		k->base[i] = NULL;
		if (ap->region == ISA_REGION_NONE)
			continue;
		const fwsim_region_t *rg = &job->regions[ap->region];
		if (rg->size > job->mem_size || rg->addr > job->mem_size - rg->size) {
			fwsim_exec_fail(x, FWSIM_OOB, e, pc, i, ap->region,
					"%s insn %u ap%u: region %u [0x%llx, +0x%llx) outside the "
					"job's memory (0x%llx bytes)", fwsim_engine_name(e), pc, i,
					ap->region, (unsigned long long)rg->addr,
					(unsigned long long)rg->size, (unsigned long long)job->mem_size);
			return false;
		}
		__int128 lo, hi;
		if (!fwsim_ap_extent(ap, &lo, &hi))
			continue; /* no elements, no access */
		if (lo < 0 || hi > (__int128)rg->size) {
			long long slo = lo < -(__int128)INT64_MAX ? -INT64_MAX : (long long)lo;
			unsigned long long shi = hi > (__int128)UINT64_MAX ? UINT64_MAX
									 : (unsigned long long)hi;
			fwsim_exec_fail(x, FWSIM_OOB, e, pc, i, ap->region,
					"%s insn %u (%s) ap%u: bytes [%lld, %llu) outside region %u "
					"of 0x%llx bytes", fwsim_engine_name(e), pc,
					isa_opcode_name(in->opcode), i, slo, shi, ap->region,
					(unsigned long long)rg->size);
			return false;
		}
		k->base[i] = job->mem + rg->addr + ap->offset;
	}
	return true;
}

static void record_num(fwsim_exec_t *x, uint32_t e, uint32_t pc, const isa_insn_t *in,
		       const fwsim_numchk_t *c)
{
	pthread_mutex_lock(&x->rec_lock);
	if (x->num_err_insns++ == 0) {
		fwsim_error_t *r = &x->num;
		r->engine = e;
		r->insn_index = pc;
		/* a FUSED instruction names the step (the HLO instruction inside the
		 * fused kernel) that first produced the bad value */
		r->debug_id = c->blame_debug != ISA_DEBUG_NONE ? c->blame_debug : in->debug_id;
		r->ap_index = 0;
		r->region = in->ap[0].region;
		r->is_inf = (uint32_t)c->first_is_inf;
		r->first_index = c->first;
		r->count = c->count;
		snprintf(r->message, sizeof(r->message),
			 "%s insn %u (%s) wrote %llu %s value(s) to ap0, first at flat index %llu",
			 fwsim_engine_name(e), pc, isa_opcode_name(in->opcode),
			 (unsigned long long)c->count, c->first_is_inf ? "Inf" : "NaN",
			 (unsigned long long)c->first);
	}
	pthread_mutex_unlock(&x->rec_lock);
}

static bool jump_taken(const isa_insn_t *in, const fwsim_kargs_t *k)
{
	if (in->n_ap == 0 || in->ap[0].region == ISA_REGION_NONE)
		return true;
	uint32_t dt = in->ap[0].dtype;
	bool nz = isa_dtype_is_float(dt) ? fw_ld_f32(dt, k->base[0]) != 0
					 : fw_ld_i64(dt, k->base[0]) != 0;
	return nz != !!(in->flags & ISA_F_INVERT);
}

fwsim_status_t fwsim_exec_insn(fwsim_exec_t *x, uint32_t e, uint32_t pc, uint32_t *out_next)
{
	fwsim_job_t *job = x->job;
	const isa_insn_t *in = &x->prog->insns[e][pc];
	/* back to back on this engine: it starts when the previous one ended */
	uint64_t t0 = x->chain_ns[e] ? x->chain_ns[e] : ns_monotonic_ns();
	if (atomic_load_explicit(&x->stop, memory_order_relaxed))
		return FWSIM_INVALID; /* another engine failed; its status is recorded */
	uint32_t cancelled = __atomic_load_n(&job->cancel, __ATOMIC_RELAXED);
	if (cancelled || (job->deadline_ns && t0 >= job->deadline_ns)) {
		fwsim_exec_fail(x, FWSIM_TIMEOUT, e, pc, 0, ISA_REGION_NONE,
				"%s before %s insn %u (%s)",
				cancelled ? "cancelled" : "deadline passed", fwsim_engine_name(e),
				pc, isa_opcode_name(in->opcode));
		return FWSIM_TIMEOUT;
	}
	/* the first poll comes after FWSIM_POLL_WORK: a short instruction
	 * never reads the clock itself */
	fwsim_watch_t watch = { .left = FWSIM_POLL_WORK, .deadline_ns = job->deadline_ns,
				.cancel = &job->cancel, .stop = &x->stop };
	fwsim_kargs_t k = { .insn = in, .watch = &watch, .par_min_ew = x->par_min_ew };
	if (!check_bounds(x, e, pc, in, &k))
		return FWSIM_OOB;

	fwsim_numchk_t chk;
	bool check = (job->flags & (FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF)) && in->n_ap &&
		     in->opcode != ISA_OP_JUMP && isa_dtype_is_float(in->ap[0].dtype) && k.base[0];
	if (check) {
		fwsim_numchk_init(&chk, job->flags, in->ap[0].dtype);
		k.chk = &chk;
	}
	fwsim_status_t st = FWSIM_OK;
	uint32_t next = pc + 1;
	switch (in->opcode) {
	case ISA_OP_NOP: break;
	case ISA_OP_MATMUL: st = fwsim_kernel_matmul(&k); break;
	case ISA_OP_ALU: st = fwsim_kernel_alu(&k); break;
	case ISA_OP_ACTIVATE: st = fwsim_kernel_activate(&k); break;
	case ISA_OP_REDUCE: st = fwsim_kernel_reduce(&k); break;
	case ISA_OP_COPY: st = fwsim_kernel_copy(&k); break;
	case ISA_OP_IOTA: st = fwsim_kernel_iota(&k); break;
	case ISA_OP_GATHER: /* these write through raw copies: scan the result */
		st = fwsim_kernel_gather(&k);
		if (check && st == FWSIM_OK)
			st = fwsim_numchk_ap(&k, &chk, &in->ap[0], k.base[0]);
		break;
	case ISA_OP_SCATTER:
		st = fwsim_kernel_scatter(&k);
		if (check && st == FWSIM_OK)
			st = fwsim_scatter_numchk(&k, &chk);
		break;
	case ISA_OP_RNG: st = fwsim_kernel_rng(&k); break;
	case ISA_OP_FUSED: st = fwsim_exec_fused(x, e, pc, &k); break;
	case ISA_OP_CONV: st = fwsim_kernel_conv(&k); break;
	case ISA_OP_SELSCAT: /* scattered read-modify-writes: scan the result */
		st = fwsim_kernel_selscat(&k);
		if (check && st == FWSIM_OK)
			st = fwsim_numchk_ap(&k, &chk, &in->ap[0], k.base[0]);
		break;
	case ISA_OP_JUMP:
		if (jump_taken(in, &k))
			next = in->param;
		break;
	}
	if (st != FWSIM_OK && watch.why == FWSIM_INVALID)
		return FWSIM_INVALID; /* stopped by another engine's recorded error */
	if (st != FWSIM_OK && watch.why == FWSIM_TIMEOUT) {
		fwsim_exec_fail(x, FWSIM_TIMEOUT, e, pc, 0, ISA_REGION_NONE,
				"%s during %s insn %u (%s): stopped inside the instruction",
				watch.cancelled ? "cancelled" : "deadline passed", fwsim_engine_name(e),
				pc, isa_opcode_name(in->opcode));
		return FWSIM_TIMEOUT;
	}
	if (st != FWSIM_OK) {
		fwsim_exec_fail(x, st, e, pc, 0, ISA_REGION_NONE, "%s insn %u (%s): %s",
				fwsim_engine_name(e), pc, isa_opcode_name(in->opcode),
				fwsim_status_str(st));
		return st;
	}
	if (check && chk.count)
		record_num(x, e, pc, in, &chk);
	if (in->signal_sem != ISA_SEM_NONE)
		atomic_fetch_add(&x->sems[in->signal_sem], 1);

	uint64_t t1 = ns_monotonic_ns();
	x->chain_ns[e] = t1;
	x->busy_ns[e] += t1 - t0;
	x->insns[e]++;
	/* docs/isa.md, "FLOPs": the rule neuron-profile counts with too */
	x->flops[e] += in->opcode == ISA_OP_FUSED ? k.flops : isa_insn_flops(in, 0);
	if (job->flags & FWSIM_JOB_PROFILE) {
		uint64_t slot = __atomic_fetch_add(&x->trace_next, 1, __ATOMIC_RELAXED);
		if (slot < job->trace->cap) {
			fwsim_span_t *s = &job->trace->spans[slot];
			s->start_ns = t0;
			s->end_ns = t1;
			s->engine = e;
			s->insn_index = pc;
			s->debug_id = in->debug_id;
			s->pad = 0;
		} else {
			__atomic_fetch_add(&job->trace->dropped, 1, __ATOMIC_RELAXED);
		}
	}
	*out_next = next;
	return FWSIM_OK;
}
