/* Batch-norm expansion: batch-norm-training, -inference and -grad become reduce, broadcast and elementwise HLO that the fusion pass turns into about three passes over the activation. */
#include <stdio.h>
#include <string.h>

#include "passes.h"

/* One expansion: the batch-norm instruction being replaced and what every
 * step needs (x's dims at the compute type, the [C] shape, the feature dim). */
typedef struct bnx {
	ncc_module_t *m;
	ncc_inst_t *bn;
	ncc_comp_t *adder;  /* the f32 add combiner of the reductions */
	ncc_etype_t ct;     /* compute type: f32 (f16/bf16 are widened) */
	ncc_shape_t xs, cs; /* x and [C] shapes at ct */
	int64_t f, C, N;    /* feature dim, features, elements per feature */
	ncc_inst_t *zero;   /* init of the sums */
	ncc_inst_t *n_c;    /* broadcast N as [C] */
} bnx_t;

/* A new instruction named after the batch norm ("<bn>.pN", so the debug map of a
 * fused step names the batch norm), with its metadata and source position, placed
 * just before it. */
static ncc_status_t add(bnx_t *b, ncc_opcode_t op, const ncc_shape_t *s, ncc_inst_t *const *ops,
			int32_t n, ncc_inst_t **out)
{
	ncc_inst_t *bn = b->bn;
	const char *name = ncc_pass_fresh_name(b->m, bn->name);
	if (!name)
		return NCC_ERR_NOMEM;
	ncc_status_t st = ncc_inst_create(bn->parent, op, s, name, ops, n, out);
	if (st)
		return st;
	(*out)->metadata = bn->metadata;
	(*out)->line = bn->line;
	(*out)->col = bn->col;
	(*out)->text = bn->text;
	ncc_comp_move_inst(bn->parent, *out, bn);
	return NCC_OK;
}

static ncc_status_t bin(bnx_t *b, ncc_opcode_t op, ncc_inst_t *x, ncc_inst_t *y, ncc_inst_t **out)
{
	ncc_inst_t *ops[2] = { x, y };
	return add(b, op, &x->shape, ops, 2, out);
}

static ncc_status_t set_dims(ncc_module_t *m, ncc_ilist_t *l, int32_t n, const int64_t *v)
{
	l->present = true;
	l->n = n;
	l->v = NULL;
	if (!n)
		return NCC_OK;
	if (!(l->v = ncc_alloc(m, sizeof(int64_t) * (size_t)n)))
		return NCC_ERR_NOMEM;
	memcpy(l->v, v, sizeof(int64_t) * (size_t)n);
	return NCC_OK;
}

/* A scalar constant v of the compute type. */
static ncc_status_t konst(bnx_t *b, double v, ncc_inst_t **out)
{
	ncc_shape_t s = ncc_shape_scalar(b->ct);
	ncc_status_t st = add(b, NCC_OP_CONSTANT, &s, NULL, 0, out);
	if (!st)
		st = ncc_literal_init(b->m, &(*out)->literal, b->ct, 1);
	if (!st)
		ncc_literal_set_f64(&(*out)->literal, 0, v);
	return st;
}

/* broadcast of a scalar (feat false) or a [C] vector along the feature dim
 * (feat true) into shape s. */
static ncc_status_t bcast(bnx_t *b, ncc_inst_t *x, const ncc_shape_t *s, bool feat,
			  ncc_inst_t **out)
{
	ncc_inst_t *ops[1] = { x };
	ncc_status_t st = add(b, NCC_OP_BROADCAST, s, ops, 1, out);
	if (st)
		return st;
	return set_dims(b->m, &(*out)->dimensions, feat ? 1 : 0, &b->f);
}

/* x as element type t (x itself when it has it). */
static ncc_status_t cvt(bnx_t *b, ncc_inst_t *x, ncc_etype_t t, ncc_inst_t **out)
{
	if (x->shape.etype == t) {
		*out = x;
		return NCC_OK;
	}
	ncc_shape_t s = x->shape;
	s.etype = t;
	ncc_inst_t *ops[1] = { x };
	return add(b, NCC_OP_CONVERT, &s, ops, 1, out);
}

/* The f32 add combiner, made once per module. */
static ncc_status_t adder(bnx_t *b, ncc_comp_t **out)
{
	if (b->adder) {
		*out = b->adder;
		return NCC_OK;
	}
	char name[64];
	int k = 0;
	do
		snprintf(name, sizeof(name), "bn_add_f32.%d", k++);
	while (ncc_module_find_comp(b->m, name));
	ncc_comp_t *c;
	ncc_status_t st = ncc_comp_create(b->m, name, false, &c);
	if (st)
		return st;
	ncc_shape_t s = ncc_shape_scalar(b->ct);
	ncc_inst_t *p[2];
	for (int i = 0; i < 2; i++) {
		char pn[48];
		snprintf(pn, sizeof(pn), "%s.p%u", i ? "rhs" : "lhs", b->m->next_id);
		if ((st = ncc_inst_create(c, NCC_OP_PARAMETER, &s, pn, NULL, 0, &p[i])))
			return st;
		p[i]->parameter_number = i;
		if ((st = ncc_comp_set_param(c, p[i])))
			return st;
	}
	char rn[48];
	snprintf(rn, sizeof(rn), "sum.p%u", b->m->next_id);
	if ((st = ncc_inst_create(c, NCC_OP_ADD, &s, rn, p, 2, &c->root)))
		return st;
	b->adder = *out = c;
	return NCC_OK;
}

/* sum of x over every dim but the feature dim: [C]. */
static ncc_status_t sum(bnx_t *b, ncc_inst_t *x, ncc_inst_t **out)
{
	ncc_comp_t *a;
	ncc_status_t st = adder(b, &a);
	if (st)
		return st;
	ncc_inst_t *ops[2] = { x, b->zero };
	if ((st = add(b, NCC_OP_REDUCE, &b->cs, ops, 2, out)))
		return st;
	int64_t dims[NCC_MAX_RANK];
	int32_t n = 0;
	for (int32_t d = 0; d < b->xs.rank; d++)
		if (d != b->f)
			dims[n++] = d;
	(*out)->to_apply = a;
	return set_dims(b->m, &(*out)->dimensions, n, dims);
}

/* rsqrt(var + epsilon), [C] */
static ncc_status_t rstd(bnx_t *b, ncc_inst_t *var, ncc_inst_t **out)
{
	ncc_inst_t *e, *eb, *ve;
	ncc_status_t st = konst(b, b->bn->epsilon, &e);
	if (!st)
		st = bcast(b, e, &b->cs, false, &eb);
	if (!st)
		st = bin(b, NCC_OP_ADD, var, eb, &ve);
	if (st)
		return st;
	ncc_inst_t *ops[1] = { ve };
	return add(b, NCC_OP_RSQRT, &b->cs, ops, 1, out);
}

/* y = (x - mean) * (rsqrt(var + eps) * scale) + offset, the interpreter's form;
 * x - mean is computed here again rather than shared with the variance so that
 * each fused loop recomputes it instead of reading a stored copy. */
static ncc_status_t normalize(bnx_t *b, ncc_inst_t *x, ncc_inst_t *mean_b, ncc_inst_t *var,
			      ncc_inst_t *scale, ncc_inst_t *offset, ncc_inst_t **out)
{
	ncc_inst_t *r, *k, *kb, *ob, *d, *dk;
	ncc_status_t st = rstd(b, var, &r);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, r, scale, &k);
	if (!st)
		st = bcast(b, k, &b->xs, true, &kb);
	if (!st)
		st = bin(b, NCC_OP_SUBTRACT, x, mean_b, &d);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, d, kb, &dk);
	if (!st)
		st = bcast(b, offset, &b->xs, true, &ob);
	if (!st)
		st = bin(b, NCC_OP_ADD, dk, ob, out);
	return st;
}

/* The operands at the compute type. */
static ncc_status_t operands_ct(bnx_t *b, ncc_inst_t **ops)
{
	ncc_status_t st = NCC_OK;
	for (int32_t i = 0; i < b->bn->noperands && !st; i++)
		st = cvt(b, b->bn->operands[i], b->ct, &ops[i]);
	return st;
}

/* batch-norm-training(x, scale, offset) -> (y, mean, var): two-pass moments
 * (mean, then the mean of (x - mean)^2) as the interpreter computes them. */
static ncc_status_t expand_training(bnx_t *b, ncc_inst_t **vals)
{
	ncc_inst_t *op[3], *s = NULL, *mean = NULL, *mb = NULL, *d = NULL, *sq = NULL, *ss = NULL,
		   *var = NULL; /* vals[1], vals[2] are NULL on failure */
	ncc_status_t st = operands_ct(b, op);
	if (!st)
		st = sum(b, op[0], &s);
	if (!st)
		st = bin(b, NCC_OP_DIVIDE, s, b->n_c, &mean);
	if (!st)
		st = bcast(b, mean, &b->xs, true, &mb);
	if (!st)
		st = bin(b, NCC_OP_SUBTRACT, op[0], mb, &d);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, d, d, &sq);
	if (!st)
		st = sum(b, sq, &ss);
	if (!st)
		st = bin(b, NCC_OP_DIVIDE, ss, b->n_c, &var);
	if (!st)
		st = normalize(b, op[0], mb, var, op[1], op[2], &vals[0]);
	vals[1] = mean;
	vals[2] = var;
	return st;
}

/* batch-norm-inference(x, scale, offset, mean, var) -> y */
static ncc_status_t expand_inference(bnx_t *b, ncc_inst_t **vals)
{
	ncc_inst_t *op[5], *mb;
	ncc_status_t st = operands_ct(b, op);
	if (!st)
		st = bcast(b, op[3], &b->xs, true, &mb);
	if (!st)
		st = normalize(b, op[0], mb, op[4], op[1], op[2], &vals[0]);
	return st;
}

/* batch-norm-grad(x, scale, mean, var, dy) -> (dx, dscale, doffset), the
 * interpreter's form: with r = rsqrt(var + eps), sdy = sum(dy) and
 * sdx = sum(dy * (x - mean)),
 *   dx = scale * r * (dy - sdy / N - (x - mean) * (r * r * sdx / N)),
 *   dscale = sdx * r, doffset = sdy. */
static ncc_status_t expand_grad(bnx_t *b, ncc_inst_t **vals)
{
	ncc_inst_t *op[5], *r = NULL, *sdy = NULL, *mb = NULL, *xm = NULL, *p = NULL, *sdx = NULL;
	ncc_inst_t *k0, *mdy, *r2, *t, *k1, *k1b, *mdyb, *k0b, *xm2, *a, *b1, *b2;
	ncc_status_t st = operands_ct(b, op);
	ncc_inst_t *x = op[0], *dy = op[4];
	if (!st)
		st = rstd(b, op[3], &r);
	if (!st)
		st = sum(b, dy, &sdy);
	if (!st)
		st = bcast(b, op[2], &b->xs, true, &mb);
	if (!st)
		st = bin(b, NCC_OP_SUBTRACT, x, mb, &xm);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, dy, xm, &p);
	if (!st)
		st = sum(b, p, &sdx);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, sdx, r, &vals[1]);
	vals[2] = sdy;
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, op[1], r, &k0);
	if (!st)
		st = bin(b, NCC_OP_DIVIDE, sdy, b->n_c, &mdy);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, r, r, &r2);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, r2, sdx, &t);
	if (!st)
		st = bin(b, NCC_OP_DIVIDE, t, b->n_c, &k1);
	if (!st)
		st = bcast(b, k1, &b->xs, true, &k1b);
	if (!st)
		st = bcast(b, mdy, &b->xs, true, &mdyb);
	if (!st)
		st = bcast(b, k0, &b->xs, true, &k0b);
	if (!st)
		st = bin(b, NCC_OP_SUBTRACT, x, mb, &xm2);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, xm2, k1b, &a);
	if (!st)
		st = bin(b, NCC_OP_SUBTRACT, dy, mdyb, &b1);
	if (!st)
		st = bin(b, NCC_OP_SUBTRACT, b1, a, &b2);
	if (!st)
		st = bin(b, NCC_OP_MULTIPLY, b2, k0b, &vals[0]);
	return st;
}

/* Whether bn is one this pass expands: a float operand of static dims with at
 * least one element per feature, no control dependencies either way. */
static bool expandable(const ncc_inst_t *bn)
{
	if (bn->ncontrol_preds || bn->noperands < 3)
		return false;
	const ncc_shape_t *s = &bn->operands[0]->shape;
	if (!ncc_shape_is_array(s) || s->rank < 1 || s->rank > NCC_MAX_RANK ||
	    bn->feature_index < 0 || bn->feature_index >= s->rank)
		return false;
	if (s->etype != NCC_F32 && s->etype != NCC_BF16 && s->etype != NCC_F16)
		return false;
	for (int32_t d = 0; d < s->rank; d++)
		if (s->dynamic[d] || s->dims[d] < 1)
			return false;
	for (int32_t k = 0; k < bn->noperands; k++)
		if (!ncc_shape_is_array(&bn->operands[k]->shape))
			return false;
	const ncc_comp_t *c = bn->parent;
	for (int32_t i = 0; i < c->ninsts; i++)
		for (int32_t k = 0; k < c->insts[i]->ncontrol_preds; k++)
			if (c->insts[i]->control_preds[k] == bn)
				return false;
	return true;
}

/* The result leaves back at the types the batch norm declared; then every
 * get-tuple-element of it reads its leaf directly, and what else uses it a
 * tuple. */
static ncc_status_t replace(bnx_t *b, ncc_inst_t **vals, int32_t n)
{
	ncc_inst_t *bn = b->bn;
	ncc_status_t st = NCC_OK;
	bool tuple = ncc_shape_is_tuple(&bn->shape);
	for (int32_t i = 0; i < n && !st; i++) {
		ncc_etype_t t = tuple ? bn->shape.elems[i].etype : bn->shape.etype;
		st = cvt(b, vals[i], t, &vals[i]);
	}
	if (st)
		return st;
	if (!tuple) {
		ncc_inst_replace_uses(bn, vals[0]);
		ncc_comp_remove_inst(bn->parent, bn);
		return NCC_OK;
	}
	ncc_comp_t *c = bn->parent;
	for (int32_t i = 0; i < c->ninsts; i++) {
		ncc_inst_t *g = c->insts[i];
		if (g->op != NCC_OP_GET_TUPLE_ELEMENT || g->noperands != 1 || g->operands[0] != bn ||
		    g->tuple_index < 0 || g->tuple_index >= n || g->ncontrol_preds)
			continue;
		bool pred = false; /* a control predecessor of something: keep it */
		for (int32_t j = 0; j < c->ninsts && !pred; j++)
			for (int32_t k = 0; k < c->insts[j]->ncontrol_preds && !pred; k++)
				pred = c->insts[j]->control_preds[k] == g;
		if (pred)
			continue;
		ncc_inst_replace_uses(g, vals[g->tuple_index]);
		ncc_comp_remove_inst(c, g);
		i--;
	}
	if (ncc_inst_use_count(bn) > 0) {
		ncc_inst_t *tp;
		if ((st = add(b, NCC_OP_TUPLE, &bn->shape, vals, n, &tp)))
			return st;
		ncc_inst_replace_uses(bn, tp);
	}
	ncc_comp_remove_inst(c, bn);
	return NCC_OK;
}

static ncc_status_t expand(bnx_t *b)
{
	ncc_inst_t *bn = b->bn;
	const ncc_shape_t *xs = &bn->operands[0]->shape;
	b->ct = NCC_F32;
	b->f = bn->feature_index;
	b->C = xs->dims[b->f];
	b->N = ncc_shape_elements(xs) / b->C;
	b->xs = *xs;
	b->xs.etype = b->ct;
	b->cs = ncc_shape_array(b->ct, 1, &b->C);
	ncc_inst_t *nk, *vals[3] = { NULL, NULL, NULL };
	ncc_status_t st = konst(b, 0.0, &b->zero);
	if (!st)
		st = konst(b, (double)b->N, &nk);
	if (!st)
		st = bcast(b, nk, &b->cs, false, &b->n_c);
	if (st)
		return st;
	switch (bn->op) {
	case NCC_OP_BATCH_NORM_TRAINING:
		st = expand_training(b, vals);
		return st ? st : replace(b, vals, 3);
	case NCC_OP_BATCH_NORM_INFERENCE:
		st = expand_inference(b, vals);
		return st ? st : replace(b, vals, 1);
	default:
		st = expand_grad(b, vals);
		return st ? st : replace(b, vals, 3);
	}
}

ncc_status_t ncc_pass_batch_norm_expand(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	if (out_changed)
		*out_changed = false;
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "batch-norm-expand: module without entry");
	bnx_t b = { .m = m };
	bool changed = false;
	/* computations made meanwhile (the combiner) hold no batch norm */
	int32_t ncomps = m->ncomps;
	for (int32_t ci = 0; ci < ncomps; ci++) {
		ncc_comp_t *c = m->comps[ci];
		for (int32_t i = 0; i < c->ninsts; i++) {
			ncc_inst_t *bn = c->insts[i];
			if ((bn->op != NCC_OP_BATCH_NORM_TRAINING && bn->op != NCC_OP_BATCH_NORM_INFERENCE &&
			     bn->op != NCC_OP_BATCH_NORM_GRAD) || !expandable(bn))
				continue;
			b.bn = bn;
			ncc_status_t st = expand(&b);
			if (st)
				return ncc_error_set(err, st, bn->line, bn->col, "batch-norm-expand: %s: %s",
						     bn->name, ncc_status_name(st));
			changed = true;
			/* the expansion went in before bn's old position, which now
			 * holds what followed it: restart past the new instructions */
			i = -1;
		}
	}
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
