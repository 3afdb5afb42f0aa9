/* The profiler's copy of a model: debug strings and per-instruction FLOPs and bytes, computed once from the NEFF. */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static uint64_t elems(const isa_ap_t *ap)
{
	if (ap->region == ISA_REGION_NONE)
		return 0;
	uint64_t n = isa_ap_num_elements(ap);
	return n == UINT64_MAX ? 0 : n;
}

static uint64_t ap_bytes(const isa_ap_t *ap)
{
	return elems(ap) * isa_dtype_size(ap->dtype);
}

/* FLOPs per output element of a FUSED program (the simulator's rule,
 * isa_fused_flops_per_elem), and the bytes of its inputs beyond ap[2..3]; 0
 * when the descriptor cannot be read (the simulator would refuse the
 * instruction anyway). */
static void fused_cost(const isa_insn_t *in, const uint8_t *consts, uint64_t consts_size,
		       uint64_t *out_per_elem, uint64_t *out_extra_bytes)
{
	*out_per_elem = 0;
	*out_extra_bytes = 0;
	const isa_ap_t *d = &in->ap[1];
	if (in->n_ap < 2 || d->region != ISA_REGION_CONST || !consts)
		return;
	uint64_t len = elems(d);
	if (d->offset > consts_size || len > consts_size - d->offset || len < sizeof(isa_fused_desc_t))
		return;
	const uint8_t *p = consts + d->offset;
	isa_fused_desc_t h;
	memcpy(&h, p, sizeof(h));
	if (h.magic != ISA_FUSED_MAGIC || h.n_inputs > ISA_FUSED_MAX_INPUTS ||
	    h.n_code > ISA_FUSED_MAX_CODE || isa_fused_desc_size(h.n_inputs, h.n_code) > len)
		return;
	uint8_t in_dt[ISA_FUSED_MAX_INPUTS] = { 0 };
	uint32_t n_ap = in->n_ap < ISA_MAX_AP ? in->n_ap : ISA_MAX_AP;
	for (uint32_t i = 0; i < h.n_inputs && i < ISA_FUSED_DIRECT && 2 + i < n_ap; i++)
		in_dt[i] = (uint8_t)in->ap[2 + i].dtype;
	p += sizeof(h);
	for (uint32_t i = ISA_FUSED_DIRECT; i < h.n_inputs; i++, p += sizeof(isa_ap_t)) {
		isa_ap_t ap;
		memcpy(&ap, p, sizeof(ap));
		*out_extra_bytes += ap_bytes(&ap);
		in_dt[i] = (uint8_t)ap.dtype;
	}
	isa_fused_op_t code[ISA_FUSED_MAX_CODE];
	memcpy(code, p, h.n_code * sizeof(isa_fused_op_t));
	*out_per_elem = isa_fused_flops_per_elem(code, h.n_code, in_dt, h.n_inputs);
}

void nrt_trace_insn_cost(const isa_insn_t *in, const uint8_t *consts, uint64_t consts_size,
			 uint64_t *out_flops, uint64_t *out_bytes)
{
	uint64_t bytes = 0, per_elem = 0;
	uint32_t n_ap = in->n_ap < ISA_MAX_AP ? in->n_ap : ISA_MAX_AP;
	for (uint32_t i = 0; i < n_ap; i++)
		bytes += ap_bytes(&in->ap[i]);
	switch (in->opcode) {
	case ISA_OP_MATMUL:
	case ISA_OP_REDUCE:
		if (in->flags & ISA_F_ACCUMULATE)
			bytes += ap_bytes(&in->ap[0]); /* read as well as written */
		break;
	case ISA_OP_FUSED: {
		uint64_t extra;
		fused_cost(in, consts, consts_size, &per_elem, &extra);
		/* ap1 is the descriptor, not data. */
		bytes = bytes - ap_bytes(&in->ap[1]) + extra;
		break;
	}
	default:
		break;
	}
	/* One rule with the simulator's job counter (docs/isa.md, "FLOPs"). */
	*out_flops = isa_insn_flops(in, per_elem);
	*out_bytes = bytes;
}

void nrt_trace_model_free(nrt_trace_model_t *tm)
{
	if (!tm)
		return;
	for (uint32_t c = 0; c < NEFF_MAX_CORES; c++)
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
			free(tm->insns[c][e]);
	free(tm->debug_entries);
	free(tm->debug_strings);
	free(tm->instance_traced);
	free(tm);
}

nrt_trace_model_t *nrt_trace_model_create(const neff_view_t *view, uint32_t executable_id,
					  uint32_t n_instances)
{
	nrt_trace_model_t *tm = calloc(1, sizeof(*tm));
	if (!tm)
		return NULL;
	tm->executable_id = executable_id;
	tm->n_cores = view->meta->n_cores;
	memcpy(tm->name, view->meta->model_name, sizeof(tm->name));
	tm->name[sizeof(tm->name) - 1] = '\0';
	tm->n_instances = n_instances;
	tm->instance_traced = calloc(n_instances ? n_instances : 1, sizeof(bool));
	if (!tm->instance_traced)
		goto err;
	for (uint32_t c = 0; c < tm->n_cores && c < NEFF_MAX_CORES; c++) {
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
			uint32_t n = view->code_count[c][e];
			tm->count[c][e] = n;
			tm->span_hint[c] += n;
			if (!n)
				continue;
			nrt_trace_insn_t *t = calloc(n, sizeof(*t));
			if (!t)
				goto err;
			tm->insns[c][e] = t;
			for (uint32_t i = 0; i < n; i++) {
				const isa_insn_t *in = &view->code[c][e][i];
				t[i].debug_id = in->debug_id;
				t[i].opcode = in->opcode;
				nrt_trace_insn_cost(in, view->consts, view->consts_size, &t[i].flops,
						    &t[i].bytes);
			}
		}
	}
	/* The debug map, copied so the trace can be written after an unload. */
	if (view->n_debug) {
		tm->debug_entries = malloc(view->n_debug * sizeof(*tm->debug_entries));
		tm->debug_strings = malloc(view->debug_strings_size ? view->debug_strings_size : 1);
		if (!tm->debug_entries || !tm->debug_strings)
			goto err;
		memcpy(tm->debug_entries, view->debug, view->n_debug * sizeof(*tm->debug_entries));
		memcpy(tm->debug_strings, view->debug_strings, view->debug_strings_size);
		tm->debug.debug = tm->debug_entries;
		tm->debug.n_debug = view->n_debug;
		tm->debug.debug_strings = tm->debug_strings;
		tm->debug.debug_strings_size = view->debug_strings_size;
	}
	return tm;
err:
	nrt_trace_model_free(tm);
	return NULL;
}

void nrt_trace_model_lookup(const nrt_trace_model_t *tm, uint32_t debug_id, const char **out_hlo,
			    const char **out_op_type, const char **out_file, uint32_t *out_line)
{
	const char *hlo = NULL, *op = NULL, *file = NULL;
	uint32_t line = 0;
	if (tm->debug.n_debug)
		neff_debug_lookup(&tm->debug, debug_id, &hlo, &op, &file, &line);
	*out_hlo = hlo ? hlo : "";
	*out_op_type = op ? op : "";
	*out_file = file ? file : "";
	*out_line = line;
}
