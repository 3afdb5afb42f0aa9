/* Dead-code elimination: drops instructions nothing uses and computations nothing calls. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static bool has_side_effect(const ncc_inst_t *in);

/* Whether running c can matter beyond its result: it (or a computation it calls)
 * holds an instruction with a side effect. Nesting deeper than 64 counts as yes. */
static bool comp_has_side_effect(const ncc_comp_t *c, int depth)
{
	if (!c)
		return false;
	if (depth > 64)
		return true;
	for (int32_t i = 0; i < c->ninsts; i++) {
		const ncc_inst_t *in = c->insts[i];
		switch (in->op) {
		case NCC_OP_WHILE:
			if (comp_has_side_effect(in->condition, depth + 1) ||
			    comp_has_side_effect(in->body, depth + 1))
				return true;
			break;
		case NCC_OP_CONDITIONAL:
			for (int32_t k = 0; k < in->nbranches; k++)
				if (comp_has_side_effect(in->branches[k], depth + 1))
					return true;
			break;
		case NCC_OP_CALL:
			if (comp_has_side_effect(in->to_apply, depth + 1))
				return true;
			break;
		case NCC_OP_PARAMETER: /* kept for the signature only */
			break;
		default:
			if (has_side_effect(in))
				return true;
			break;
		}
	}
	return false;
}

/* Instructions whose execution matters even when their value is unused. While,
 * conditional and call count as their computations do: a dead loop whose body
 * only computes values is removed, as XLA's DCE does (a loop that would never end
 * then ends; XLA makes the same choice). */
static bool has_side_effect(const ncc_inst_t *in)
{
	switch (in->op) {
	case NCC_OP_WHILE:
		return comp_has_side_effect(in->condition, 0) || comp_has_side_effect(in->body, 0);
	case NCC_OP_CONDITIONAL:
		for (int32_t k = 0; k < in->nbranches; k++)
			if (comp_has_side_effect(in->branches[k], 0))
				return true;
		return false;
	case NCC_OP_CALL:
		return comp_has_side_effect(in->to_apply, 0);
	case NCC_OP_CUSTOM_CALL:
		return in->custom_call_has_side_effect;
	case NCC_OP_PARAMETER: /* the signature */
	case NCC_OP_INFEED: case NCC_OP_OUTFEED: case NCC_OP_SEND: case NCC_OP_SEND_DONE:
	case NCC_OP_RECV: case NCC_OP_RECV_DONE: case NCC_OP_RNG_GET_AND_UPDATE_STATE:
	case NCC_OP_ALL_REDUCE: case NCC_OP_ALL_REDUCE_START: case NCC_OP_ALL_REDUCE_DONE:
	case NCC_OP_ALL_GATHER: case NCC_OP_ALL_GATHER_START: case NCC_OP_ALL_GATHER_DONE:
	case NCC_OP_REDUCE_SCATTER: case NCC_OP_ALL_TO_ALL: case NCC_OP_COLLECTIVE_BROADCAST:
	case NCC_OP_COLLECTIVE_PERMUTE: case NCC_OP_COLLECTIVE_PERMUTE_START:
	case NCC_OP_COLLECTIVE_PERMUTE_DONE: case NCC_OP_ASYNC_START: case NCC_OP_ASYNC_UPDATE:
	case NCC_OP_ASYNC_DONE: case NCC_OP_UNKNOWN:
		return true;
	default:
		return false;
	}
}

static bool dce_comp(ncc_comp_t *c)
{
	for (int32_t i = 0; i < c->ninsts; i++)
		c->insts[i]->aux_i = 0;
	if (c->root)
		c->root->aux_i = 1;
	/* operands come before users, so one backward sweep marks everything */
	for (int32_t i = c->ninsts - 1; i >= 0; i--) {
		ncc_inst_t *in = c->insts[i];
		if (has_side_effect(in))
			in->aux_i = 1;
		if (!in->aux_i)
			continue;
		for (int32_t k = 0; k < in->noperands; k++)
			in->operands[k]->aux_i = 1;
		for (int32_t k = 0; k < in->ncontrol_preds; k++)
			in->control_preds[k]->aux_i = 1;
	}
	int32_t j = 0;
	for (int32_t i = 0; i < c->ninsts; i++)
		if (c->insts[i]->aux_i)
			c->insts[j++] = c->insts[i];
	bool changed = j != c->ninsts;
	c->ninsts = j;
	for (int32_t i = 0; i < c->ninsts; i++)
		c->insts[i]->aux_i = 0;
	return changed;
}

static void mark_comp(ncc_comp_t *c);

static void mark_ref(ncc_comp_t *c)
{
	if (c && !c->aux) {
		c->aux = c; /* reached */
		mark_comp(c);
	}
}

static void mark_comp(ncc_comp_t *c)
{
	for (int32_t i = 0; i < c->ninsts; i++) {
		const ncc_inst_t *in = c->insts[i];
		mark_ref(in->to_apply);
		mark_ref(in->condition);
		mark_ref(in->body);
		mark_ref(in->calls);
		mark_ref(in->select);
		mark_ref(in->scatter_comp);
		for (int32_t k = 0; k < in->nbranches; k++)
			mark_ref(in->branches[k]);
		for (int32_t k = 0; k < in->ncalled; k++)
			mark_ref(in->called[k]);
	}
}

ncc_status_t ncc_pass_dce(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	bool changed = false;
	if (out_changed)
		*out_changed = false;
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "dce: module without entry");
	for (int32_t i = 0; i < m->ncomps; i++)
		changed |= dce_comp(m->comps[i]);
	/* computations reachable from the entry after the instruction sweep */
	for (int32_t i = 0; i < m->ncomps; i++)
		m->comps[i]->aux = NULL;
	m->entry->aux = m->entry;
	mark_comp(m->entry);
	int32_t j = 0;
	for (int32_t i = 0; i < m->ncomps; i++) {
		ncc_comp_t *c = m->comps[i];
		if (c->aux) {
			m->comps[j++] = c;
			continue;
		}
		/* ncc_module_free() frees the pointer arrays of listed computations
		 * only: release this one's now (ir.h: they are malloc'd) */
		free(c->insts);
		free(c->params);
		c->insts = NULL;
		c->params = NULL;
		c->ninsts = c->cap_insts = c->nparams = 0;
	}
	changed |= j != m->ncomps;
	m->ncomps = j;
	for (int32_t i = 0; i < m->ncomps; i++)
		m->comps[i]->aux = NULL;
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
