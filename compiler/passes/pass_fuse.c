/* Elementwise fusion: DAGs of elementwise ops (with the broadcasts and scalar constants feeding them) become one kLoop fusion each, in the entry and in every computation the lowering emits as code (while bodies and conditions, branches, called computations). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_ctx.h"
#include "passes.h"

/* Per-instruction state while grouping (indexed by program position). */
enum { ST_FREE = 0, ST_IN_GROUP = 1, ST_FUSED = 2, ST_DUP = 3 };

typedef struct fuse_ctx {
	ncc_module_t *m;
	ncc_comp_t *c;
	int32_t n;
	ncc_inst_t **insts;   /* snapshot of the entry in program order */
	uint8_t *state;
	uint8_t *cand;
	uint8_t *extuse;      /* an operand of a fusion built already (a user the
			       * snapshot's user lists do not show) */
	uint8_t *ctl;         /* a control predecessor of some instruction */
	int32_t *ustart, *users; /* CSR lists of user positions */
	int32_t mem[NCC_FUSE_MAX_VALUES];
	int32_t nmem;
	int counter;          /* for computation names */
	const ncc_inst_t *red; /* the group's root when it is a reduce */
} fuse_ctx_t;

static int32_t pos_of(const ncc_inst_t *x) { return (int32_t)x->aux_i - 1; }

static bool same_dims(const ncc_shape_t *a, const ncc_shape_t *b)
{
	if (!ncc_shape_is_array(a) || !ncc_shape_is_array(b) || a->rank != b->rank)
		return false;
	for (int32_t k = 0; k < a->rank; k++)
		if (a->dims[k] != b->dims[k] || a->dynamic[k] || b->dynamic[k])
			return false;
	return true;
}

static bool scalar_const(const ncc_inst_t *x)
{
	return x->op == NCC_OP_CONSTANT && ncc_shape_is_array(&x->shape) && x->shape.rank == 0 &&
	       x->literal.present && !x->literal.elided && x->literal.data &&
	       ncc_lower_isa_etype(x->shape.etype) && !x->ncontrol_preds;
}

static bool compute_op(const ncc_inst_t *x)
{
	return !x->ncontrol_preds && ncc_lower_fused_op(x) >= 0;
}

/* An iota the fused loop computes from each element's index (FUSED's IOTA). */
static bool iota_op(const ncc_inst_t *x)
{
	return x->op == NCC_OP_IOTA && !x->ncontrol_preds && ncc_shape_is_array(&x->shape) &&
	       ncc_lower_isa_etype(x->shape.etype) && x->shape.etype != NCC_PRED &&
	       x->iota_dimension >= 0 && x->iota_dimension < x->shape.rank;
}

/* A reduce that can end a fused loop (FUSED's reducing form): one array
 * operand, a combiner the ISA has, no control dependencies. */
static bool fusible_reduce(const ncc_inst_t *x)
{
	return x->op == NCC_OP_REDUCE && x->noperands == 2 && !x->ncontrol_preds &&
	       ncc_shape_is_array(&x->shape) && ncc_lower_isa_etype(x->shape.etype) &&
	       ncc_shape_is_array(&x->operands[0]->shape) &&
	       x->operands[0]->shape.rank <= NCC_MAX_RANK && x->to_apply &&
	       ncc_lower_combiner_of(x->to_apply) >= 0;
}

/* Members plus distinct outside operands, if x joined the group, and a bound
 * on the FUSED inputs: each outside operand, plus one per broadcast of one
 * (the lowering gives a broadcast its own strided view). */
static void group_size(const fuse_ctx_t *f, int32_t extra, int32_t *out_values,
		       int32_t *out_params)
{
	const ncc_inst_t *outside[NCC_FUSE_MAX_VALUES * 4];
	int32_t np = 0, nb = 0, nm = f->nmem + (extra >= 0);
	for (int32_t i = 0; i < nm; i++) {
		const ncc_inst_t *x = f->insts[i < f->nmem ? f->mem[i] : extra];
		for (int32_t k = 0; k < x->noperands; k++) {
			const ncc_inst_t *o = x->operands[k];
			int32_t p = pos_of(o);
			bool member = p >= 0 && p < f->n && (f->state[p] == ST_IN_GROUP ||
							     f->state[p] == ST_DUP || p == extra);
			if (member)
				continue;
			nb += x->op == NCC_OP_BROADCAST;
			bool seen = false;
			for (int32_t j = 0; j < np && !seen; j++)
				seen = outside[j] == o;
			if (!seen && np < (int32_t)(sizeof(outside) / sizeof(outside[0])))
				outside[np++] = o;
		}
	}
	*out_values = nm + np;
	*out_params = np + nb;
}

/* Whether every user of p is in the current group. A user fused already
 * (ST_FUSED) computes its own copy of p when p is not among its fusion's
 * operands (extuse), so it no longer reads p. */
static bool all_users_in_group(const fuse_ctx_t *f, int32_t p)
{
	/* a control predecessor stays an instruction: it can only be copied */
	if (f->insts[p] == f->c->root || f->extuse[p] || f->ctl[p])
		return false;
	for (int32_t u = f->ustart[p]; u < f->ustart[p + 1]; u++)
		if (f->state[f->users[u]] != ST_IN_GROUP && f->state[f->users[u]] != ST_FUSED)
			return false;
	return true;
}

/* Whether p, taken as a root (no group is being formed: no user is
 * ST_IN_GROUP), is dead: it has users, each fused a copy of it, and nothing
 * waits on it (a control predecessor stays for DCE to judge). */
static bool absorbed(const fuse_ctx_t *f, int32_t p)
{
	return f->ustart[p] < f->ustart[p + 1] && all_users_in_group(f, p);
}

/* Whether an elementwise op p that has users outside the group is computed
 * again in the group's loop instead of being written out and read back (the
 * batch-norm output that a ReLU6 clamps in the forward pass and the backward
 * pass masks its gradient with). It must be an f32 op that the simulator
 * runs in its one-pass loops (firmware-sim/fused_tree.h: add, subtract,
 * multiply, maximum, minimum, clamp, select), where computing it again costs
 * a few vector ops per element and no pass, read at most one array of the loop's size other than
 * broadcasts, constants and iotas (so each copy reads no more bytes than
 * reading p would), and every user must be an elementwise op or a reduce
 * that can fuse it too, so that p ends up dead rather than both written out
 * and recomputed with its operand kept live longer. */
static bool worth_copying(const fuse_ctx_t *f, int32_t p, const ncc_inst_t *root)
{
	const ncc_inst_t *x = f->insts[p];
	switch (x->op) {
	case NCC_OP_ADD: case NCC_OP_SUBTRACT: case NCC_OP_MULTIPLY: case NCC_OP_MAXIMUM:
	case NCC_OP_MINIMUM: case NCC_OP_CLAMP: case NCC_OP_SELECT:
		break;
	default:
		return false;
	}
	if (x->shape.etype != NCC_F32)
		return false;
	if (x == f->c->root || f->extuse[p])
		return false;
	int32_t streamed = 0;
	for (int32_t k = 0; k < x->noperands; k++) {
		const ncc_inst_t *o = x->operands[k];
		streamed += same_dims(&o->shape, &root->shape) && o->op != NCC_OP_BROADCAST &&
			    o->op != NCC_OP_IOTA && o->op != NCC_OP_CONSTANT;
	}
	if (streamed > 1)
		return false;
	for (int32_t u = f->ustart[p]; u < f->ustart[p + 1]; u++) {
		const ncc_inst_t *y = f->insts[f->users[u]];
		if (f->state[f->users[u]] == ST_FUSED ||
		    (compute_op(y) && same_dims(&y->shape, &x->shape)) ||
		    (fusible_reduce(y) && y->operands[0] == x))
			continue;
		return false;
	}
	return true;
}

static void add_member(fuse_ctx_t *f, int32_t p, int st)
{
	f->state[p] = (uint8_t)st;
	f->mem[f->nmem++] = p;
	const ncc_inst_t *x = f->insts[p];
	/* a reduce's init stays outside: the lowering copies it into the
	 * output, which the loop then combines into */
	int32_t nops = x->op == NCC_OP_REDUCE ? 1 : x->noperands;
	for (int32_t k = 0; k < nops; k++) {
		const ncc_inst_t *o = x->operands[k];
		int32_t q = pos_of(o);
		if (q < 0 || q >= f->n)
			continue;
		/* a broadcast's operand has other dims: only a scalar constant
		 * can follow it into the loop (as an immediate) */
		if (x->op == NCC_OP_BROADCAST && !scalar_const(o))
			continue;
		f->cand[q] = 1;
	}
}

/* Decides whether candidate p joins the group rooted at root (for a reduce
 * root: at its operand, whose dims the loop runs over). */
static void consider(fuse_ctx_t *f, int32_t p, const ncc_inst_t *root)
{
	const ncc_inst_t *x = f->insts[p];
	if (f->state[p] != ST_FREE || x->ncontrol_preds)
		return;
	int st;
	if (compute_op(x) && same_dims(&x->shape, &root->shape) && all_users_in_group(f, p))
		st = ST_IN_GROUP;
	else if (compute_op(x) && same_dims(&x->shape, &root->shape) &&
		 (x->op == NCC_OP_COMPARE || x->op == NCC_OP_CONVERT))
		/* cheap to recompute, and the one-hot masks they make are as big
		 * as the loop: each consumer computes its own copy */
		st = ST_DUP;
	else if (compute_op(x) && same_dims(&x->shape, &root->shape) && worth_copying(f, p, root))
		st = ST_DUP;
	else if (x->op == NCC_OP_BROADCAST && same_dims(&x->shape, &root->shape) &&
		 ncc_lower_isa_etype(x->shape.etype) && x->dimensions.present &&
		 x->dimensions.n == x->operands[0]->shape.rank)
		st = all_users_in_group(f, p) ? ST_IN_GROUP : ST_DUP;
	else if (scalar_const(x))
		/* the reduce's init stays outside as well (a fusion parameter) */
		st = all_users_in_group(f, p) && !(f->red && f->red->operands[1] == x) ? ST_IN_GROUP
										       : ST_DUP;
	else if (iota_op(x) && same_dims(&x->shape, &root->shape))
		st = all_users_in_group(f, p) ? ST_IN_GROUP : ST_DUP;
	else
		return;
	int32_t values, params;
	group_size(f, p, &values, &params);
	if (values > NCC_FUSE_MAX_VALUES || params > NCC_FUSE_MAX_INPUTS)
		return;
	add_member(f, p, st);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Builds the fused computation and the fusion instruction for the current
 * group, and unlinks the members from the entry. */
static ncc_status_t build(fuse_ctx_t *f, ncc_inst_t *root)
{
	ncc_module_t *m = f->m;
	qsort(f->mem, (size_t)f->nmem, sizeof(int32_t), cmp_i32); /* program order */
	char name[64];
	do
		snprintf(name, sizeof(name), "fused_computation.%d", f->counter++);
	while (ncc_module_find_comp(m, name));
	ncc_comp_t *fc;
	ncc_status_t st = ncc_comp_create(m, name, false, &fc);
	if (st)
		return st;
	/* map entry value -> value inside fc */
	const ncc_inst_t *from[NCC_FUSE_MAX_VALUES * 4];
	ncc_inst_t *to[NCC_FUSE_MAX_VALUES * 4];
	ncc_inst_t *outside[NCC_FUSE_MAX_INPUTS];
	int32_t nmap = 0, np = 0;
	for (int32_t i = 0; i < f->nmem; i++) {
		ncc_inst_t *x = f->insts[f->mem[i]];
		ncc_inst_t *ops[8];
		if (x->noperands > 8)
			return NCC_ERR_INTERNAL;
		for (int32_t k = 0; k < x->noperands; k++) {
			ncc_inst_t *o = x->operands[k];
			int32_t j;
			for (j = 0; j < nmap && from[j] != o; j++)
				;
			/* a reduce's init is a parameter even when a duplicated
			 * constant of the same value is in the loop */
			if (x == root && x->op == NCC_OP_REDUCE && k == 1) {
				for (j = 0; j < nmap && !(from[j] == o && to[j]->op == NCC_OP_PARAMETER); j++)
					;
			}
			if (j == nmap) { /* an outside value: a new parameter */
				if (np >= NCC_FUSE_MAX_INPUTS)
					return NCC_ERR_INTERNAL;
				char pn[48];
				snprintf(pn, sizeof(pn), "param_%d.p%u", np, m->next_id);
				ncc_inst_t *p;
				if ((st = ncc_inst_create(fc, NCC_OP_PARAMETER, &o->shape, pn, NULL, 0, &p)))
					return st;
				p->parameter_number = np;
				if ((st = ncc_comp_set_param(fc, p)))
					return st;
				outside[np++] = o;
				from[nmap] = o;
				to[nmap++] = p;
			}
			ops[k] = to[j];
		}
		ncc_inst_t *cl;
		if ((st = ncc_pass_clone_inst(fc, x, ops, x->noperands, &cl)))
			return st;
		from[nmap] = x;
		to[nmap++] = cl;
		if (x == root)
			fc->root = cl;
	}
	ncc_inst_t *fu;
	if ((st = ncc_pass_new_like(root, NCC_OP_FUSION, &root->shape, outside, np, &fu)))
		return st;
	fu->fusion_kind = root->op == NCC_OP_REDUCE ? "kInput" : "kLoop";
	fu->calls = fc;
	ncc_inst_replace_uses(root, fu);
	if (f->ctl[pos_of(root)]) /* what waited on the root waits on the fusion */
		for (int32_t i = 0; i < f->c->ninsts; i++)
			for (int32_t k = 0; k < f->c->insts[i]->ncontrol_preds; k++)
				if (f->c->insts[i]->control_preds[k] == root)
					f->c->insts[i]->control_preds[k] = fu;
	for (int32_t i = 0; i < np; i++) {
		int32_t q = pos_of(outside[i]);
		if (q >= 0 && q < f->n)
			f->extuse[q] = 1;
	}
	for (int32_t i = 0; i < f->nmem; i++) {
		int32_t p = f->mem[i];
		if (f->state[p] == ST_IN_GROUP) {
			ncc_comp_remove_inst(f->c, f->insts[p]);
			f->state[p] = ST_FUSED;
		} else {
			f->state[p] = ST_FREE; /* a duplicated broadcast/constant stays */
		}
	}
	return NCC_OK;
}

/* Fuses the elementwise DAGs of one computation the lowering emits as code. */
static ncc_status_t fuse_comp(ncc_module_t *m, ncc_comp_t *c, int *counter, bool *out_changed)
{
	fuse_ctx_t f = { .m = m, .c = c, .counter = *counter };
	f.n = c->ninsts;
	size_t n1 = (size_t)f.n + 1;
	f.insts = malloc(sizeof(*f.insts) * n1);
	f.state = calloc(n1, 1);
	f.cand = calloc(n1, 1);
	f.extuse = calloc(n1, 1);
	f.ctl = calloc(n1, 1);
	f.ustart = calloc(n1 + 1, sizeof(int32_t));
	int32_t nuse = 0;
	for (int32_t i = 0; i < f.n; i++)
		nuse += c->insts[i]->noperands;
	f.users = malloc(sizeof(int32_t) * ((size_t)nuse + 1));
	ncc_status_t st = NCC_OK;
	bool changed = false;
	if (!f.insts || !f.state || !f.cand || !f.extuse || !f.ctl || !f.ustart || !f.users) {
		st = NCC_ERR_NOMEM;
		goto out;
	}
	memcpy(f.insts, c->insts, sizeof(*f.insts) * (size_t)f.n);
	for (int32_t i = 0; i < f.n; i++)
		f.insts[i]->aux_i = i + 1;
	for (int32_t i = 0; i < f.n; i++)
		for (int32_t k = 0; k < f.insts[i]->ncontrol_preds; k++) {
			int32_t p = pos_of(f.insts[i]->control_preds[k]);
			if (p >= 0 && p < f.n)
				f.ctl[p] = 1;
		}
	/* users of each position, as a CSR array */
	for (int32_t i = 0; i < f.n; i++)
		for (int32_t k = 0; k < f.insts[i]->noperands; k++) {
			int32_t p = pos_of(f.insts[i]->operands[k]);
			if (p >= 0 && p < f.n)
				f.ustart[p + 1]++;
		}
	for (int32_t i = 0; i < f.n; i++)
		f.ustart[i + 1] += f.ustart[i];
	{
		int32_t *fill = calloc(n1, sizeof(int32_t));
		if (!fill) {
			st = NCC_ERR_NOMEM;
			goto out;
		}
		for (int32_t i = 0; i < f.n; i++)
			for (int32_t k = 0; k < f.insts[i]->noperands; k++) {
				int32_t p = pos_of(f.insts[i]->operands[k]);
				if (p >= 0 && p < f.n)
					f.users[f.ustart[p] + fill[p]++] = i;
			}
		free(fill);
	}
	/* Roots from the end: every user of a candidate is decided before the
	 * candidate, so "all users are in the group" is known when it is asked;
	 * a member other than the root has no user outside its group, which
	 * keeps the fused graph acyclic. */
	for (int32_t r = f.n - 1; r >= 0; r--) {
		ncc_inst_t *root = f.insts[r];
		bool red = fusible_reduce(root);
		if (f.state[r] != ST_FREE || !(compute_op(root) || red))
			continue;
		if (absorbed(&f, r)) { /* each user computes its own copy */
			ncc_comp_remove_inst(c, root);
			f.state[r] = ST_FUSED;
			changed = true;
			continue;
		}
		memset(f.cand, 0, n1);
		f.nmem = 0;
		add_member(&f, r, ST_IN_GROUP);
		/* a reduce's group runs at its operand's dims */
		const ncc_inst_t *at = red ? root->operands[0] : root;
		f.red = red ? root : NULL;
		for (int32_t p = r - 1; p >= 0; p--)
			if (f.cand[p])
				consider(&f, p, at);
		int32_t ncompute = 0;
		for (int32_t i = 0; i < f.nmem; i++) {
			const ncc_inst_t *x = f.insts[f.mem[i]];
			ncompute += compute_op(x) || (red && iota_op(x) && f.state[f.mem[i]] == ST_IN_GROUP);
		}
		if (ncompute < (red ? 1 : 2)) {
			/* one op alone gains nothing over its own ALU instruction; a
			 * reduce gains once it reads an expression instead of a
			 * materialised operand */
			for (int32_t i = 0; i < f.nmem; i++)
				f.state[f.mem[i]] = ST_FREE;
			continue;
		}
		if ((st = build(&f, root)))
			goto out;
		changed = true;
	}
out:
	for (int32_t i = 0; i < f.n && f.insts; i++)
		f.insts[i]->aux_i = 0;
	free(f.insts);
	free(f.state);
	free(f.cand);
	free(f.extuse);
	free(f.ctl);
	free(f.ustart);
	free(f.users);
	*counter = f.counter;
	*out_changed |= changed;
	return st;
}

/* Whether x uses c as something other than code of its own stream: a
 * combiner (reduce, map, sort, scatter...) or a fusion's computation. */
static bool uses_as_non_code(const ncc_inst_t *x, const ncc_comp_t *c)
{
	if (x->op != NCC_OP_CALL && x->to_apply == c)
		return true;
	if (x->calls == c || x->select == c || x->scatter_comp == c)
		return true;
	for (int32_t k = 0; k < x->ncalled; k++)
		if (x->called[k] == c)
			return true;
	return false;
}

/* The computations the lowering emits as code: the entry and, transitively,
 * while conditions and bodies, conditional branches and called computations.
 * One that is also a combiner or a fusion's computation somewhere is left as
 * it is (a combiner must stay scalar code). Returns the count, -1 without
 * memory; *out is malloc'd. */
static int32_t code_comps(const ncc_module_t *m, ncc_comp_t ***out)
{
	ncc_comp_t **list = malloc(sizeof(*list) * ((size_t)m->ncomps + 1));
	if (!list)
		return -1;
	int32_t n = 0;
	list[n++] = m->entry;
	for (int32_t i = 0; i < n; i++) {
		const ncc_comp_t *c = list[i];
		for (int32_t j = 0; j < c->ninsts; j++) {
			const ncc_inst_t *x = c->insts[j];
			ncc_comp_t *sub[2] = { NULL, NULL };
			int32_t nsub = 0;
			ncc_comp_t **subs = sub;
			if (x->op == NCC_OP_WHILE) {
				sub[0] = x->condition;
				sub[1] = x->body;
				nsub = 2;
			} else if (x->op == NCC_OP_CALL) {
				sub[0] = x->to_apply;
				nsub = 1;
			} else if (x->op == NCC_OP_CONDITIONAL) {
				subs = x->branches;
				nsub = x->nbranches;
			}
			for (int32_t k = 0; k < nsub; k++) {
				ncc_comp_t *s = subs[k];
				bool seen = !s;
				for (int32_t q = 0; q < n && !seen; q++)
					seen = list[q] == s;
				if (!seen && n < m->ncomps)
					list[n++] = s;
			}
		}
	}
	/* drop the ones used otherwise anywhere in the module */
	int32_t w = 0;
	for (int32_t i = 0; i < n; i++) {
		bool other = false;
		for (int32_t q = 0; q < m->ncomps && !other; q++)
			for (int32_t j = 0; j < m->comps[q]->ninsts && !other; j++)
				other = uses_as_non_code(m->comps[q]->insts[j], list[i]);
		if (!other)
			list[w++] = list[i];
	}
	*out = list;
	return w;
}

ncc_status_t ncc_pass_fuse(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	if (out_changed)
		*out_changed = false;
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "fuse: module without entry");
	ncc_comp_t **list;
	int32_t n = code_comps(m, &list);
	if (n < 0)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "fuse: out of memory");
	/* the list is a snapshot: the fused computations built meanwhile are
	 * not code and are not visited */
	int counter = 0;
	bool changed = false;
	ncc_status_t st = NCC_OK;
	for (int32_t i = 0; i < n && !st; i++)
		st = fuse_comp(m, list[i], &counter, &changed);
	free(list);
	if (st)
		return ncc_error_set(err, st, 0, 0, "fuse: %s", ncc_status_name(st));
	if (out_changed)
		*out_changed = changed;
	return NCC_OK;
}
