/* Buffer donors: each buffer_donor parameter is aliased (may-alias) to an output of its shape, as XLA's alias analysis does, so the caller's donated buffer is updated in place. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/*
 * PyTorch/XLA marks the parameters it gives up with buffer_donor instead of
 * input_output_alias: the compiler decides which output, if any, reuses each
 * donated buffer. The choice here is deterministic: donors in parameter order, each
 * takes, among the output leaves that have its shape (element type and dims) and are
 * not aliased yet, the one computed from that parameter in the fewest operations
 * (the first such leaf on a tie): the updated weight `w - lr * g` (one operation)
 * rather than a gradient that also depends on w through the forward pass; failing
 * that, the first unaliased output leaf of its shape; failing that, it stays a donor
 * (no alias).
 * A converted donor leaves the buffer_donor list (XLA does not allow a parameter in
 * both). Only entry outputs the back end can alias are candidates: the root itself
 * when it is an array, or an array element of a root tuple; tuple-shaped and
 * zero-element parameters are never aliased (they have no NEFF tensor).
 */

/* The candidate output leaf an alias's output path names (as emit.c reads it: {}
 * for an array root, {k} for element k of a root tuple), or -1. */
static int32_t leaf_of_path(const ncc_shape_t *s, const ncc_ilist_t *path, int32_t nout)
{
	if (s->etype != NCC_TUPLE)
		return path->n == 0 ? 0 : -1;
	if (path->n != 1 || path->v[0] < 0 || path->v[0] >= nout)
		return -1;
	return (int32_t)path->v[0];
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

ncc_status_t ncc_pass_buffer_donors(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	if (out_changed)
		*out_changed = false;
	ncc_comp_t *e = m->entry;
	if (!m->ndonors || !e || !e->root)
		return NCC_OK;
	const ncc_inst_t *root = e->root;
	const ncc_shape_t *rs = &root->shape;
	/* Candidate output leaves: array root, or the array elements of a flat root tuple
	 * (leaf numbering as the back end's: depth first; a nested tuple makes the
	 * numbering of what follows it differ from the element index, so stop there). */
	int32_t nout = 0;
	if (rs->etype != NCC_TUPLE) {
		nout = 1;
	} else {
		while (nout < rs->nelems && rs->elems[nout].etype != NCC_TUPLE)
			nout++;
	}
	int64_t *donors = malloc(((size_t)m->ndonors + 1) * sizeof(int64_t));
	bool *taken = calloc((size_t)nout + 1, sizeof(bool));
	const ncc_inst_t **producer = calloc((size_t)nout + 1, sizeof(*producer));
	int32_t *dist = malloc(((size_t)m->next_id + 1) * sizeof(int32_t));
	int32_t *chosen = malloc(((size_t)m->ndonors + 1) * sizeof(int32_t));
	ncc_status_t st = NCC_OK;
	if (!donors || !taken || !producer || !dist || !chosen) {
		st = ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "buffer-donors: out of memory");
		goto out;
	}
	for (int32_t a = 0; a < m->naliases; a++) {
		int32_t k = leaf_of_path(rs, &m->aliases[a].output_index, nout);
		if (k >= 0)
			taken[k] = true;
	}
	/* the instruction whose value each leaf is (the root, or a root tuple operand) */
	for (int32_t k = 0; k < nout; k++)
		producer[k] = root->op == NCC_OP_TUPLE && root->noperands == rs->nelems ? root->operands[k] : root;
	int32_t nd = 0;
	for (int32_t i = 0; i < m->ndonors; i++)
		if (m->donors[i].param_index.n == 0)
			donors[nd++] = m->donors[i].param_number;
	qsort(donors, (size_t)nd, sizeof(int64_t), cmp_i64);
	int32_t nchosen = 0;
	for (int32_t i = 0; i < nd; i++) {
		int64_t p = donors[i];
		chosen[i] = -1;
		if ((i > 0 && donors[i - 1] == p) || p < 0 || p >= e->nparams || !e->params[p])
			continue;
		const ncc_inst_t *pi = e->params[p];
		if (pi->shape.etype == NCC_TUPLE || ncc_shape_elements(&pi->shape) <= 0)
			continue;
		/* operations from p to each instruction computed from it (INT32_MAX: not
		 * computed from p); operands precede users in program order */
		for (uint32_t j = 0; j <= m->next_id; j++)
			dist[j] = INT32_MAX;
		for (int32_t j = 0; j < e->ninsts; j++) {
			const ncc_inst_t *in = e->insts[j];
			int32_t d = in == pi ? 0 : INT32_MAX;
			for (int32_t o = 0; o < in->noperands; o++) {
				int32_t od = dist[in->operands[o]->id];
				if (od != INT32_MAX && od + 1 < d)
					d = od + 1;
			}
			dist[in->id] = d;
		}
		int32_t any = -1, best = -1;
		for (int32_t k = 0; k < nout; k++) {
			const ncc_shape_t *ls = rs->etype == NCC_TUPLE ? &rs->elems[k] : rs;
			if (taken[k] || !ncc_shape_equal(ls, &pi->shape, false))
				continue;
			if (any < 0)
				any = k;
			int32_t d = dist[producer[k]->id];
			if (d != INT32_MAX && (best < 0 || d < dist[producer[best]->id]))
				best = k;
		}
		chosen[i] = best >= 0 ? best : any;
		if (chosen[i] >= 0) {
			taken[chosen[i]] = true;
			nchosen++;
		}
	}
	if (!nchosen)
		goto out;
	ncc_alias_t *na = ncc_alloc(m, sizeof(*na) * (size_t)(m->naliases + nchosen));
	int64_t *paths = ncc_alloc(m, sizeof(int64_t) * (size_t)nchosen);
	if (!na || !paths) {
		st = ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "buffer-donors: out of memory");
		goto out;
	}
	if (m->naliases)
		memcpy(na, m->aliases, sizeof(*na) * (size_t)m->naliases);
	int32_t n = m->naliases;
	for (int32_t i = 0; i < nd; i++) {
		if (chosen[i] < 0)
			continue;
		ncc_alias_t *a = &na[n++];
		memset(a, 0, sizeof(*a));
		a->output_index.present = true;
		if (rs->etype == NCC_TUPLE) {
			paths[n - m->naliases - 1] = chosen[i];
			a->output_index.n = 1;
			a->output_index.v = &paths[n - m->naliases - 1];
		}
		a->param_number = donors[i];
		a->param_index.present = true;
		a->kind = NCC_ALIAS_MAY;
	}
	/* donors that became aliases leave the donor list */
	int32_t kept = 0;
	for (int32_t j = 0; j < m->ndonors; j++) {
		bool conv = false;
		for (int32_t i = 0; i < nd && !conv; i++)
			conv = chosen[i] >= 0 && donors[i] == m->donors[j].param_number &&
			       m->donors[j].param_index.n == 0;
		if (!conv)
			m->donors[kept++] = m->donors[j];
	}
	m->ndonors = kept;
	m->aliases = na;
	m->naliases = n;
	if (out_changed)
		*out_changed = true;
out:
	free(donors);
	free(taken);
	free(producer);
	free(dist);
	free(chosen);
	return st;
}
