/* fwsim_program_t: validated copies of the per-engine instruction streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sched_pick.h"

const char *fwsim_engine_name(uint32_t e)
{
	return isa_engine_name(e);
}

const char *fwsim_status_str(fwsim_status_t s)
{
	switch (s) {
	case FWSIM_OK: return "ok";
	case FWSIM_NUM_ERR: return "numerical error";
	case FWSIM_OOB: return "out-of-bounds access";
	case FWSIM_TIMEOUT: return "timeout";
	case FWSIM_INVALID: return "invalid program or job";
	case FWSIM_DEADLOCK: return "deadlock";
	case FWSIM_NOMEM: return "out of memory";
	case NS_JOB_DEVICE_LOST: return "device lost"; /* not a libfwsim status */
	}
	return "unknown status";
}

/* Work of one instruction in element operations, for the scheduling policy. */
static double insn_work(const isa_insn_t *in)
{
	if (in->n_ap == 0 || in->ap[0].region == ISA_REGION_NONE)
		return 1;
	double w = (double)isa_ap_num_elements(&in->ap[0]);
	if (in->opcode == ISA_OP_MATMUL)
		w *= (double)in->ap[1].shape[in->ap[1].rank - 1];
	else if (in->opcode == ISA_OP_REDUCE)
		w = (double)isa_ap_num_elements(&in->ap[1]);
	else if (in->opcode == ISA_OP_CONV) /* C * K0 * K1 per output */
		w *= (double)in->ap[2].shape[2] * (double)in->ap[2].shape[3] *
		     (double)in->ap[2].shape[4];
	else if (in->opcode == ISA_OP_SELSCAT) /* K0 * K1 per window */
		w = (double)isa_ap_num_elements(&in->ap[2]) *
		    (double)in->ap[3].shape[ISA_SELSCAT_SIZE] *
		    (double)in->ap[3].shape[ISA_SELSCAT_SIZE + 1];
	return w + 1;
}

ns_status_t fwsim_program_create(const isa_insn_t *const streams[ISA_ENGINE_COUNT],
				 const uint32_t counts[ISA_ENGINE_COUNT],
				 uint32_t n_regions, fwsim_program_t **out_program)
{
	*out_program = NULL;
	if (!streams || !counts)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "fwsim_program_create: NULL streams or counts");
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		if (counts[e] && !streams[e])
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "%s engine: %u instructions but no stream",
					      fwsim_engine_name(e), counts[e]);
	fwsim_program_t *p = calloc(1, sizeof(*p));
	if (!p)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory for a program");
	p->n_regions = n_regions;
	p->pick = malloc(sizeof(*p->pick));
	if (!p->pick) {
		free(p);
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory for a program");
	}
	fwsim_sched_pick_init(p->pick);
	/* Copy first, validate the copy: the streams may sit in device memory
	 * that someone else can write (the embedded backend passes its code
	 * block), and what runs must be exactly what was checked. */
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		if (!counts[e])
			continue;
		p->insns[e] = malloc(counts[e] * sizeof(isa_insn_t));
		if (!p->insns[e]) {
			fwsim_program_destroy(p);
			return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
					      "out of memory copying %u instructions", counts[e]);
		}
		memcpy(p->insns[e], streams[e], counts[e] * sizeof(isa_insn_t));
		p->counts[e] = counts[e];
	}
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
		for (uint32_t i = 0; i < p->counts[e]; i++) {
			const isa_insn_t *in = &p->insns[e][i];
			ns_status_t st = isa_insn_validate(in, n_regions, p->counts[e]);
			if (st) {
				/* annotated before the copy it quotes is freed */
				st = ns_status_annotate(st, "%s engine insn %u (debug_id %u)",
							fwsim_engine_name(e), i, in->debug_id);
				fwsim_program_destroy(p);
				return st;
			}
			p->work[e] += insn_work(in);
		}
		if (p->counts[e])
			p->n_active++;
	}
	*out_program = p;
	return NS_OK;
}

void fwsim_program_destroy(fwsim_program_t *program)
{
	if (!program)
		return;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		free(program->insns[e]);
	if (program->pick) {
		fwsim_sched_pick_destroy(program->pick);
		free(program->pick);
	}
	free(program);
}
