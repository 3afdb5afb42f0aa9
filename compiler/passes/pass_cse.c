/* Common-subexpression elimination: one instruction per (opcode, shape, operands, attributes). */
#include <stdlib.h>
#include <string.h>

#include "hlo/map.h"
#include "passes.h"

/* Instructions that must stay distinct even when written identically:
 * random numbers, I/O, collectives, the signature, control flow, and
 * elided constants (their values are unknown). */
static bool cse_candidate(const ncc_inst_t *in)
{
	if (in->ncontrol_preds)
		return false;
	switch (in->op) {
	case NCC_OP_PARAMETER: case NCC_OP_RNG: case NCC_OP_RNG_BIT_GENERATOR:
	case NCC_OP_RNG_GET_AND_UPDATE_STATE: case NCC_OP_INFEED: case NCC_OP_OUTFEED:
	case NCC_OP_SEND: case NCC_OP_SEND_DONE: case NCC_OP_RECV: case NCC_OP_RECV_DONE:
	case NCC_OP_ALL_REDUCE: case NCC_OP_ALL_REDUCE_START: case NCC_OP_ALL_REDUCE_DONE:
	case NCC_OP_ALL_GATHER: case NCC_OP_ALL_GATHER_START: case NCC_OP_ALL_GATHER_DONE:
	case NCC_OP_REDUCE_SCATTER: case NCC_OP_ALL_TO_ALL: case NCC_OP_COLLECTIVE_BROADCAST:
	case NCC_OP_COLLECTIVE_PERMUTE: case NCC_OP_COLLECTIVE_PERMUTE_START:
	case NCC_OP_COLLECTIVE_PERMUTE_DONE: case NCC_OP_ASYNC_START: case NCC_OP_ASYNC_UPDATE:
	case NCC_OP_ASYNC_DONE: case NCC_OP_WHILE: case NCC_OP_CONDITIONAL: case NCC_OP_CALL:
	case NCC_OP_AFTER_ALL: case NCC_OP_UNKNOWN: case NCC_OP_PARTITION_ID:
	case NCC_OP_REPLICA_ID: case NCC_OP_OPTIMIZATION_BARRIER: case NCC_OP_DOMAIN:
		return false;
	case NCC_OP_CUSTOM_CALL:
		return !in->custom_call_has_side_effect;
	case NCC_OP_CONSTANT:
		/* big literals make long keys for little gain */
		return in->literal.present && !in->literal.elided && in->literal.count <= 4096;
	default:
		return true;
	}
}

/* The instruction as HLO text without its name and metadata: everything
 * that defines its value (operands are named, and names are unique). */
static ncc_status_t cse_key(ncc_inst_t *in, char **out_key)
{
	*out_key = NULL;
	ncc_metadata_t md = in->metadata;
	const char *name = in->name;
	memset(&in->metadata, 0, sizeof(in->metadata));
	in->name = "k";
	char *s = NULL;
	ncc_status_t st = ncc_inst_to_string(in, &s);
	in->metadata = md;
	in->name = name;
	if (st)
		return st;
	*out_key = s;
	return NCC_OK;
}

static ncc_status_t cse_comp(ncc_comp_t *c, bool *changed)
{
	/* key -> the first instruction with it; the keys are ours, freed at the end */
	ncc_name_map_t seen = { 0 };
	char **keys = malloc(sizeof(*keys) * (size_t)(c->ninsts ? c->ninsts : 1));
	int32_t nkeys = 0;
	if (!keys)
		return NCC_ERR_NOMEM;
	ncc_status_t st = NCC_OK;
	/* program order: operands were already replaced by their representatives
	 * when a user is keyed, so whole duplicate chains collapse in one sweep */
	for (int32_t i = 0; i < c->ninsts; i++) {
		ncc_inst_t *in = c->insts[i];
		if (!cse_candidate(in))
			continue;
		char *key;
		st = cse_key(in, &key);
		if (st)
			break;
		ncc_inst_t *rep = ncc_name_map_get(&seen, key);
		if (!rep) {
			if (!ncc_name_map_put(&seen, key, in)) {
				free(key);
				st = NCC_ERR_NOMEM;
				break;
			}
			keys[nkeys++] = key;
			continue;
		}
		free(key);
		ncc_inst_replace_uses(in, rep);
		*changed = true; /* the duplicate is now dead; DCE unlinks it */
	}
	ncc_name_map_free(&seen);
	for (int32_t k = 0; k < nkeys; k++)
		free(keys[k]);
	free(keys);
	return st;
}

ncc_status_t ncc_pass_cse(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	bool changed = false;
	if (out_changed)
		*out_changed = false;
	for (int32_t i = 0; i < m->ncomps; i++) {
		ncc_status_t st = cse_comp(m->comps[i], &changed);
		if (st)
			return ncc_error_set(err, st, 0, 0, "cse: out of memory in %s",
					     m->comps[i]->name);
	}
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
