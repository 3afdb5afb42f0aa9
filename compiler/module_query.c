/* Public read-only queries on a module (include/ncc/ncc.h): its name, the entry signature, parameters and aliases, and instruction descriptions for messages. */
#include "hlo/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ncc_module_name(const ncc_module_t *m)
{
	return m ? m->name : NULL;
}

static ncc_status_t sig_desc(const ncc_shape_t *s, const char *what, int64_t index,
			     ncc_array_desc_t *out, ncc_error_t *err)
{
	if (!ncc_etype_is_array(s->etype) || s->rank > NCC_SIGNATURE_MAX_RANK)
		return ncc_error_set(err, NCC_ERR_UNSUPPORTED, 0, 0,
				     "entry %s %lld is a %s: only arrays of rank <= %d can be a "
				     "signature entry", what, (long long)index,
				     s->rank > NCC_SIGNATURE_MAX_RANK ? "high-rank array"
								      : ncc_etype_name(s->etype),
				     NCC_SIGNATURE_MAX_RANK);
	memset(out, 0, sizeof(*out));
	snprintf(out->etype, sizeof(out->etype), "%s", ncc_etype_name(s->etype));
	out->rank = s->rank;
	for (int32_t d = 0; d < s->rank; d++) {
		if (s->dims[d] < 0)
			return ncc_error_set(err, NCC_ERR_UNSUPPORTED, 0, 0,
					     "entry %s %lld has an unbounded dynamic dimension %d",
					     what, (long long)index, d);
		out->dims[d] = s->dims[d];
	}
	return NCC_OK;
}

static int64_t sig_leaves(const ncc_shape_t *s)
{
	if (s->etype != NCC_TUPLE)
		return 1;
	int64_t n = 0;
	for (int32_t i = 0; i < s->nelems; i++)
		n += sig_leaves(&s->elems[i]);
	return n;
}

static ncc_status_t sig_flatten(const ncc_shape_t *s, ncc_array_desc_t *out, int64_t *k,
				ncc_error_t *err)
{
	if (s->etype != NCC_TUPLE) {
		ncc_status_t st = sig_desc(s, "result leaf", *k, &out[*k], err);
		(*k)++;
		return st;
	}
	for (int32_t i = 0; i < s->nelems; i++) {
		ncc_status_t st = sig_flatten(&s->elems[i], out, k, err);
		if (st)
			return st;
	}
	return NCC_OK;
}

ncc_status_t ncc_module_entry_signature(const ncc_module_t *m, ncc_array_desc_t **out_params,
					size_t *out_nparams, ncc_array_desc_t **out_results,
					size_t *out_nresults, ncc_error_t *err)
{
	if (!m || !out_params || !out_nparams || !out_results || !out_nresults)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_module_entry_signature: NULL argument");
	const ncc_comp_t *e = m->entry;
	if (!e || !e->root)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "module '%s' has no entry computation",
				     m->name ? m->name : "?");
	int64_t nres = sig_leaves(&e->root->shape);
	ncc_array_desc_t *params = calloc((size_t)e->nparams + 1, sizeof(*params));
	ncc_array_desc_t *res = calloc((size_t)nres + 1, sizeof(*res));
	if (!params || !res) {
		free(params);
		free(res);
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	}
	ncc_status_t st = NCC_OK;
	for (int32_t p = 0; p < e->nparams && !st; p++) {
		if (!e->params[p])
			st = ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "entry parameter %d is missing", p);
		else
			st = sig_desc(&e->params[p]->shape, "parameter", p, &params[p], err);
	}
	int64_t k = 0;
	if (!st)
		st = sig_flatten(&e->root->shape, res, &k, err);
	if (st) {
		free(params);
		free(res);
		return st;
	}
	if (e->nparams == 0) {
		free(params);
		params = NULL;
	}
	if (nres == 0) {
		free(res);
		res = NULL;
	}
	*out_params = params;
	*out_nparams = (size_t)e->nparams;
	*out_results = res;
	*out_nresults = (size_t)nres;
	return NCC_OK;
}

int32_t ncc_module_entry_param_count(const ncc_module_t *m)
{
	return m && m->entry ? m->entry->nparams : 0;
}

const ncc_shape_t *ncc_module_entry_param_shape(const ncc_module_t *m, int32_t p)
{
	if (!m || !m->entry || p < 0 || p >= m->entry->nparams || !m->entry->params[p])
		return NULL;
	return &m->entry->params[p]->shape;
}

/* The depth-first number of the result leaf at tuple index path idx of shape s, or
 * -1 when the path leaves the shape or ends at a tuple. */
static int64_t leaf_of_path(const ncc_shape_t *s, const ncc_ilist_t *idx)
{
	int64_t leaf = 0;
	for (int32_t i = 0; i < idx->n; i++) {
		if (s->etype != NCC_TUPLE || idx->v[i] < 0 || idx->v[i] >= s->nelems)
			return -1;
		for (int64_t j = 0; j < idx->v[i]; j++)
			leaf += sig_leaves(&s->elems[j]);
		s = &s->elems[idx->v[i]];
	}
	return s->etype == NCC_TUPLE ? -1 : leaf;
}

ncc_status_t ncc_module_entry_aliases(const ncc_module_t *m, int64_t **out_param_of_leaf,
				      size_t *out_nleaves, ncc_error_t *err)
{
	if (!m || !out_param_of_leaf || !out_nleaves)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_module_entry_aliases: NULL argument");
	*out_param_of_leaf = NULL;
	*out_nleaves = 0;
	const ncc_comp_t *e = m->entry;
	if (!e || !e->root)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "module '%s' has no entry computation",
				     m->name ? m->name : "?");
	int64_t n = sig_leaves(&e->root->shape);
	if (n == 0)
		return NCC_OK;
	int64_t *map = malloc((size_t)n * sizeof(*map));
	if (!map)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	for (int64_t k = 0; k < n; k++)
		map[k] = -1;
	for (int32_t a = 0; a < m->naliases; a++) {
		const ncc_alias_t *al = &m->aliases[a];
		int64_t leaf = leaf_of_path(&e->root->shape, &al->output_index);
		if (leaf >= 0 && al->param_index.n == 0 && al->param_number >= 0 &&
		    al->param_number < e->nparams)
			map[leaf] = al->param_number;
	}
	*out_param_of_leaf = map;
	*out_nleaves = (size_t)n;
	return NCC_OK;
}

void ncc_inst_describe(const ncc_inst_t *inst, ncc_inst_desc_t *out)
{
	memset(out, 0, sizeof(*out));
	out->name = inst->name;
	out->opcode = inst->opname ? inst->opname : ncc_opcode_name(inst->op);
	out->is_parameter = inst->op == NCC_OP_PARAMETER;
	out->hlo_line = inst->line;
	out->op_type = inst->metadata.op_type;
	out->source_file = inst->metadata.source_file;
	out->source_line = inst->metadata.source_line;
}
