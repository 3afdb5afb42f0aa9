/* Test helper: compile HLO with the ncc back end and execute the NEFF on libfwsim (see lower_run.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwsim/fwsim.h"
#include "hlo/hlo_parser.h"
#include "lower/lower.h"
#include "lower_run.h"
#include "neuronsim/half.h"
#include "neuronsim/neff.h"

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Small values keep exp/log/products in range; integers stay small and
 * non-negative so that they make sense as indices too. */
static void fill_random(void *buf, uint32_t dt, uint64_t n, uint64_t *s)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = rng_next(s);
		float f = (float)((double)(r % 2001) / 1000.0 - 1.0);
		switch (dt) {
		case ISA_DT_F32: ((float *)buf)[i] = f; break;
		case ISA_DT_BF16: {
			uint32_t u;
			memcpy(&u, &f, 4);
			((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
			break;
		}
		case ISA_DT_F16: ((uint16_t *)buf)[i] = ns_f32_to_f16(f); break;
		case ISA_DT_S32: ((int32_t *)buf)[i] = (int32_t)(r % 4); break;
		case ISA_DT_U32: ((uint32_t *)buf)[i] = (uint32_t)(r % 4); break;
		case ISA_DT_S64: ((int64_t *)buf)[i] = (int64_t)(r % 4); break;
		case ISA_DT_U64: ((uint64_t *)buf)[i] = r; break;
		case ISA_DT_PRED: ((uint8_t *)buf)[i] = (uint8_t)(r & 1); break;
		case ISA_DT_U8: case ISA_DT_S8: ((uint8_t *)buf)[i] = (uint8_t)(r % 4); break;
		case ISA_DT_S16: case ISA_DT_U16: ((uint16_t *)buf)[i] = (uint16_t)(r % 4); break;
		default: break;
		}
	}
}

void ncc_run_free(ncc_run_t *r)
{
	for (uint32_t i = 0; i < NCC_RUN_MAX_IO; i++)
		free(r->out[i]);
	memset(r->out, 0, sizeof(r->out));
}

int ncc_run_module_opts(const ncc_module_t *m, const char *text, const ncc_compile_options_t *o,
			const void *const *inputs, uint32_t n_inputs, uint64_t seed, ncc_run_t *r,
			void **out_inputs)
{
	memset(r, 0, sizeof(*r));
	ncc_module_t *own = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	if (!m) {
		if (ncc_parse_hlo(text, strlen(text), "<test>", &own, &err) != NCC_OK) {
			snprintf(r->msg, sizeof(r->msg), "parse: %s", err.msg);
			return -1;
		}
		m = own;
	}
	void *neff = NULL;
	size_t size = 0;
	ncc_status_t st = ncc_lower_module(m, o, &neff, &size, &err);
	ncc_module_free(own);
	if (st != NCC_OK) {
		snprintf(r->msg, sizeof(r->msg), "lower: %s", err.msg);
		return -1;
	}
	int rc = -1;
	neff_view_t v;
	char emsg[256];
	uint8_t *mem = NULL;
	fwsim_program_t *prog = NULL;
	fwsim_core_t *core = NULL;
	if (ns_status_consume_message(neff_parse(neff, size, &v),
				      emsg, sizeof(emsg)) != NS_STATUS_OK) {
		snprintf(r->msg, sizeof(r->msg), "neff_parse: %s", emsg);
		goto out;
	}
	uint32_t nt = v.meta->n_tensors;
	uint32_t nreg = 2 + nt;
	fwsim_region_t *reg = calloc(nreg, sizeof(*reg));
	uint64_t top = 0;
#define PLACE(i, sz) do { reg[i].addr = top; reg[i].size = (sz); top += ((sz) + 63) & ~63ull; if (!(sz)) top += 64; } while (0)
	PLACE(0, v.consts_size);
	PLACE(1, v.meta->scratch_size);
	for (uint32_t t = 0; t < nt; t++)
		PLACE(2 + t, v.tensors[t].size);
	mem = calloc(1, top + 64);
	if (!mem || !reg) {
		snprintf(r->msg, sizeof(r->msg), "out of memory (%llu bytes)", (unsigned long long)top);
		free(reg);
		goto out;
	}
	if (v.consts_size)
		memcpy(mem + reg[0].addr, v.consts, v.consts_size);
	/* scratch is filled with NaN-ish garbage so that reads of unwritten memory show */
	memset(mem + reg[1].addr, 0x7f, v.meta->scratch_size);
	r->scratch = v.meta->scratch_size;
	uint64_t s = seed ? seed : 0x9e3779b97f4a7c15ull;
	uint32_t in_i = 0;
	for (uint32_t t = 0; t < nt; t++) {
		const neff_tensor_t *te = &v.tensors[t];
		uint64_t n = te->size / isa_dtype_size(te->dtype);
		if (te->usage == NEFF_USAGE_INPUT) {
			if (in_i >= NCC_RUN_MAX_IO) {
				snprintf(r->msg, sizeof(r->msg), "more than %d inputs", NCC_RUN_MAX_IO);
				free(reg);
				goto out;
			}
			r->in_size[in_i] = te->size;
			r->in_dtype[in_i] = te->dtype;
			if (in_i < n_inputs && inputs && inputs[in_i])
				memcpy(mem + reg[2 + t].addr, inputs[in_i], te->size);
			else
				fill_random(mem + reg[2 + t].addr, te->dtype, n, &s);
			if (out_inputs) {
				out_inputs[in_i] = malloc(te->size + 1);
				memcpy(out_inputs[in_i], mem + reg[2 + t].addr, te->size);
			}
			in_i++;
		} else {
			memset(mem + reg[2 + t].addr, 0x7f, te->size);
		}
	}
	r->n_in = in_i;
	const isa_insn_t *streams[ISA_ENGINE_COUNT];
	uint32_t counts[ISA_ENGINE_COUNT];
	for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
		streams[e] = v.code[0][e];
		counts[e] = v.code_count[0][e];
	}
	if (ns_status_consume_message(fwsim_program_create(streams, counts, nreg, &prog),
				      emsg, sizeof(emsg)) != NS_STATUS_OK) {
		snprintf(r->msg, sizeof(r->msg), "fwsim_program_create: %s", emsg);
		free(reg);
		goto out;
	}
	/* NCC_TEST_SCHED=threads runs every multi-engine program on engine threads (a
	 * missing semaphore then shows as a race, not only as a wrong order) */
	fwsim_core_config_t cfg = { 0 };
	const char *sched = getenv("NCC_TEST_SCHED");
	if (sched && !strcmp(sched, "threads"))
		cfg.sched = FWSIM_SCHED_THREADS;
	else if (sched && !strcmp(sched, "inline"))
		cfg.sched = FWSIM_SCHED_INLINE;
	/* NEURONSIM_CPU_ISA=avx2 or scalar runs the kernels of a CPU without
	 * AVX-512 or AVX2 (docs/env.md) */
	fwsim_isa_t isa;
	if (fwsim_isa_from_name(getenv("NEURONSIM_CPU_ISA"), &isa) == 0)
		fwsim_set_max_isa(isa);
	fwsim_core_create(&cfg, &core);
	fwsim_job_t job;
	memset(&job, 0, sizeof(job));
	job.program = prog;
	job.mem = mem;
	job.mem_size = top + 64;
	job.regions = reg;
	job.n_regions = nreg;
	fwsim_status_t fs = fwsim_core_execute(core, &job);
	r->fwsim_status = fs;
	r->insns = job.insns_executed;
	if (fs != FWSIM_OK) {
		snprintf(r->msg, sizeof(r->msg), "fwsim: %s: %s (engine %u insn %u debug %u)",
			 fwsim_status_str(fs), job.error.message, job.error.engine, job.error.insn_index,
			 job.error.debug_id);
		free(reg);
		goto out;
	}
	uint32_t oi = 0;
	for (uint32_t t = 0; t < nt; t++) {
		const neff_tensor_t *te = &v.tensors[t];
		if (te->usage != NEFF_USAGE_OUTPUT || oi >= NCC_RUN_MAX_IO)
			continue;
		r->out[oi] = malloc(te->size + 1);
		memcpy(r->out[oi], mem + reg[2 + t].addr, te->size);
		r->out_size[oi] = te->size;
		r->out_dtype[oi] = te->dtype;
		oi++;
	}
	r->n_out = oi;
	free(reg);
	rc = 0;
out:
	if (core)
		fwsim_core_destroy(core);
	fwsim_program_destroy(prog);
	free(mem);
	free(neff);
	return rc;
}

int ncc_run_module(const ncc_module_t *m, const char *text, int opt, const void *const *inputs,
		   uint32_t n_inputs, uint64_t seed, ncc_run_t *out)
{
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.opt_level = opt;
	return ncc_run_module_opts(m, text, &o, inputs, n_inputs, seed, out, NULL);
}
