/* Helpers shared by the passes: instruction cloning, fresh names, splat constants, the rewrite driver of fold and simplify. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

const char *ncc_pass_fresh_name(ncc_module_t *m, const char *base)
{
	char buf[128];
	/* strip an earlier ".pN" so repeated rewrites do not grow the name */
	size_t n = strlen(base);
	const char *dot = strrchr(base, '.');
	if (dot && dot[1] == 'p' && dot[2] >= '0' && dot[2] <= '9')
		n = (size_t)(dot - base);
	if (n > 80)
		n = 80;
	snprintf(buf, sizeof(buf), "%.*s.p%u", (int)n, base, m->next_id);
	return ncc_strdup(m, buf);
}

ncc_status_t ncc_pass_clone_inst(ncc_comp_t *c, const ncc_inst_t *src, ncc_inst_t *const *operands,
				 int32_t n, ncc_inst_t **out_inst)
{
	*out_inst = NULL;
	const char *name = ncc_pass_fresh_name(c->module, src->name);
	if (!name)
		return NCC_ERR_NOMEM;
	ncc_inst_t *ni;
	ncc_status_t st = ncc_inst_create(c, src->op, &src->shape, name, operands, n, &ni);
	if (st)
		return st;
	/* Copy every attribute at once (they are immutable arena data, so sharing
	 * is safe), then restore what makes the clone its own instruction. */
	ncc_inst_t keep = *ni;
	*ni = *src;
	ni->name = keep.name;
	ni->op = keep.op;
	ni->opname = src->opname;
	ni->shape = keep.shape;
	ni->noperands = keep.noperands;
	ni->operands = keep.operands;
	ni->parent = keep.parent;
	ni->id = keep.id;
	ni->ncontrol_preds = 0;
	ni->control_preds = NULL;
	ni->aux = NULL;
	ni->aux_i = 0;
	*out_inst = ni;
	return NCC_OK;
}

static bool literal_is_splat(const ncc_literal_t *l)
{
	if (!l->present || l->elided || !l->data || l->count < 1)
		return false;
	size_t es = ncc_etype_storage_bytes(l->etype);
	if (!es || ncc_etype_is_complex(l->etype))
		return false;
	for (int64_t i = 1; i < l->count; i++)
		if (memcmp(l->data, l->data + (size_t)i * es, es))
			return false;
	return true;
}

bool ncc_pass_splat(const ncc_inst_t *x, const ncc_literal_t **out_lit)
{
	if (x->op == NCC_OP_BROADCAST && x->noperands == 1)
		x = x->operands[0];
	if (x->op != NCC_OP_CONSTANT || !ncc_shape_is_array(&x->shape) ||
	    !literal_is_splat(&x->literal))
		return false;
	if (out_lit)
		*out_lit = &x->literal;
	return true;
}

ncc_status_t ncc_pass_new_like(const ncc_inst_t *like, ncc_opcode_t op, const ncc_shape_t *shape,
			       ncc_inst_t *const *operands, int32_t n, ncc_inst_t **out_inst)
{
	ncc_comp_t *c = like->parent;
	*out_inst = NULL;
	const char *name = ncc_pass_fresh_name(c->module, ncc_opcode_name(op));
	if (!name)
		return NCC_ERR_NOMEM;
	ncc_inst_t *ni;
	ncc_status_t st = ncc_inst_create(c, op, shape, name, operands, n, &ni);
	if (st)
		return st;
	ni->metadata = like->metadata;
	ni->line = like->line;
	ni->col = like->col;
	ni->text = like->text;
	ncc_comp_move_inst(c, ni, (ncc_inst_t *)like);
	*out_inst = ni;
	return NCC_OK;
}

ncc_status_t ncc_pass_rewrite_each(ncc_module_t *m, const char *what, ncc_pass_rewrite_fn rewrite,
				   bool *out_changed, ncc_error_t *err)
{
	bool changed = false;
	if (out_changed)
		*out_changed = false;
	for (int32_t ci = 0; ci < m->ncomps; ci++) {
		ncc_comp_t *c = m->comps[ci];
		int32_t n = c->ninsts;
		ncc_inst_t **snap = malloc(sizeof(*snap) * (size_t)(n ? n : 1));
		if (!snap)
			return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: out of memory", what);
		memcpy(snap, c->insts, sizeof(*snap) * (size_t)n);
		for (int32_t i = 0; i < n; i++) {
			ncc_inst_t *in = snap[i], *r;
			ncc_status_t st = rewrite(in, &r);
			if (st) {
				free(snap);
				return ncc_error_set(err, st, 0, 0, "%s: %s at '%s'", what,
						     ncc_status_name(st), in->name);
			}
			if (r && r != in) {
				ncc_inst_replace_uses(in, r);
				changed = true;
			}
		}
		free(snap);
	}
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
