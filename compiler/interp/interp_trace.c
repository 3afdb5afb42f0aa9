/* ncc reference interpreter, tracing mode: evaluates the entry computation one instruction at a time and reports the first instruction whose result holds a NaN or an Inf (neuron-snapshot replay). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

/*
 * Each instruction runs through ncc_interp_call() on a one-instruction
 * computation whose parameters stand for its operands, so the tracer has the
 * interpreter's exact semantics without a second evaluator. Values are kept
 * until their last use, as in ncc_interp_call(). When the first non-finite
 * result comes out of a fusion, a call, a conditional or a while loop, the
 * called computation is traced again on the same operands (a while loop
 * iteration by iteration) to name the instruction inside it.
 */

#define TRACE_MAX_DEPTH 16

typedef struct tracer {
	ncc_interp_t ip;
	ncc_interp_trace_t *out;
	/* enclosing instructions while tracing a called computation */
	int depth;
	const ncc_inst_t *stack[TRACE_MAX_DEPTH];
	int64_t iteration[TRACE_MAX_DEPTH]; /* while loops: the iteration, else -1 */
} tracer_t;

typedef struct scan {
	int64_t nan, inf;              /* counts over every float leaf */
	int32_t nan_leaf, inf_leaf;
	int64_t nan_first, inf_first;
} scan_t;

static void scan_leaf(const ncc_value_t *v, int32_t *leaf, scan_t *s)
{
	if (v->shape.etype == NCC_TUPLE) {
		for (int32_t k = 0; k < v->nelems; k++)
			if (v->elems[k])
				scan_leaf(v->elems[k], leaf, s);
		return;
	}
	int32_t me = (*leaf)++;
	if (!ncc_is_fp(v->shape.etype) || !v->data)
		return;
	int64_t n = ncc_value_elements(v);
	for (int64_t i = 0; i < n; i++) {
		double d = ncc_ld_f(v->shape.etype, v->data, i);
		if (d != d) {
			if (s->nan++ == 0) {
				s->nan_leaf = me;
				s->nan_first = i;
			}
		} else if (d - d != 0) {
			if (s->inf++ == 0) {
				s->inf_leaf = me;
				s->inf_first = i;
			}
		}
	}
}

static scan_t scan_value(const ncc_value_t *v)
{
	scan_t s = { 0, 0, 0, 0, -1, -1 };
	int32_t leaf = 0;
	if (v)
		scan_leaf(v, &leaf, &s);
	return s;
}

static bool trace_done(const tracer_t *t)
{
	return t->out->nan.inst && t->out->inf.inst;
}

static void record(tracer_t *t, ncc_interp_site_t *site, const ncc_inst_t *inst, int32_t leaf,
		   int64_t first, int64_t count)
{
	site->inst = inst;
	site->leaf = leaf;
	site->first_index = first;
	site->count = count;
	size_t o = 0;
	site->path[0] = '\0';
	for (int d = 0; d < t->depth && o < sizeof(site->path); d++) {
		if (t->iteration[d] >= 0)
			o += (size_t)snprintf(site->path + o, sizeof(site->path) - o,
					      "%s (iteration %" PRId64 ") > ", t->stack[d]->name,
					      t->iteration[d]);
		else
			o += (size_t)snprintf(site->path + o, sizeof(site->path) - o, "%s > ",
					      t->stack[d]->name);
	}
}

/* Evaluates inst on its operand values ops[0..noperands) into *out (owned). */
static ncc_status_t eval_one(tracer_t *t, const ncc_inst_t *inst, const ncc_value_t *const *ops,
			     ncc_value_t **out)
{
	int32_t n = inst->noperands;
	ncc_inst_t *params = calloc((size_t)n + 1, sizeof(*params));
	ncc_inst_t **list = calloc((size_t)n + 1, sizeof(*list));
	if (!params || !list) {
		free(params);
		free(list);
		return NCC_ERR_NOMEM;
	}
	ncc_inst_t copy = *inst;
	ncc_comp_t c;
	memset(&c, 0, sizeof(c));
	c.name = inst->parent ? inst->parent->name : "trace";
	c.module = inst->parent ? inst->parent->module : NULL;
	for (int32_t k = 0; k < n; k++) {
		params[k].name = inst->operands[k]->name;
		params[k].op = NCC_OP_PARAMETER;
		params[k].shape = inst->operands[k]->shape;
		params[k].parameter_number = k;
		params[k].parent = &c;
		params[k].line = inst->operands[k]->line;
		list[k] = &params[k];
	}
	copy.operands = list;
	copy.parent = &c;
	copy.ncontrol_preds = 0;
	list[n] = &copy;
	c.nparams = n;
	c.params = list;
	c.ninsts = n + 1;
	c.insts = list;
	c.root = &copy;
	ncc_status_t st = ncc_interp_call(&t->ip, &c, ops, n, out);
	free(params);
	free(list);
	return st;
}

static ncc_status_t trace_comp(tracer_t *t, const ncc_comp_t *c, const ncc_value_t *const *args,
			       int32_t nargs, ncc_value_t **out_root);

/* Traces inside inst (whose result first held a non-finite value) on its
 * operand values: the called computation, the taken branch, or the while loop
 * iteration by iteration. */
static ncc_status_t descend(tracer_t *t, const ncc_inst_t *inst, const ncc_value_t *const *ops,
			    bool want_nan, bool want_inf)
{
	if (t->depth >= TRACE_MAX_DEPTH)
		return NCC_OK;
	t->stack[t->depth] = inst;
	t->iteration[t->depth] = -1;
	t->depth++;
	ncc_status_t st = NCC_OK;
	switch (inst->op) {
	case NCC_OP_FUSION: case NCC_OP_CALL: {
		const ncc_comp_t *callee = inst->op == NCC_OP_CALL && inst->to_apply ? inst->to_apply
										  : inst->calls;
		if (callee)
			st = trace_comp(t, callee, ops, inst->noperands, NULL);
		break;
	}
	case NCC_OP_CONDITIONAL: {
		if (inst->nbranches < 1 || inst->noperands < 2)
			break;
		const ncc_value_t *sel = ops[0];
		int64_t b;
		/* the same choice as the interpreter's conditional */
		if (sel->shape.etype == NCC_PRED) {
			b = ((const uint8_t *)sel->data)[0] ? 0 : 1;
		} else {
			b = (int64_t)ncc_ld_u(sel->shape.etype, sel->data, 0);
			if (b < 0 || b >= inst->nbranches)
				b = inst->nbranches - 1;
		}
		if (b < inst->nbranches && inst->noperands >= b + 2)
			st = trace_comp(t, inst->branches[b], &ops[b + 1], 1, NULL);
		break;
	}
	case NCC_OP_WHILE: {
		if (!inst->condition || !inst->body || inst->noperands != 1)
			break;
		int64_t limit = t->ip.opts.max_while_iterations > 0 ? t->ip.opts.max_while_iterations
								     : 10000000;
		ncc_value_t *state = NULL;
		st = ncc_value_clone(ops[0], &state);
		for (int64_t it = 0; st == NCC_OK && it < limit && !trace_done(t); it++) {
			ncc_value_t *pred = NULL;
			const ncc_value_t *arg = state;
			st = ncc_interp_call(&t->ip, inst->condition, &arg, 1, &pred);
			if (st != NCC_OK)
				break;
			bool go = pred->shape.etype == NCC_PRED && pred->nbytes == 1 &&
				  ((const uint8_t *)pred->data)[0];
			ncc_value_free(pred);
			if (!go)
				break;
			t->iteration[t->depth - 1] = it;
			ncc_value_t *next = NULL;
			st = trace_comp(t, inst->body, &arg, 1, &next);
			ncc_value_free(state);
			state = next;
			/* stop at the iteration that produced what the loop's result holds */
			if ((!want_nan || t->out->nan.inst) && (!want_inf || t->out->inf.inst))
				break;
			if (!state)
				break;
		}
		ncc_value_free(state);
		break;
	}
	default:
		break;
	}
	t->depth--;
	return st;
}

/* Looks at inst's result v: records the first NaN / Inf site, descending into
 * called computations to name the instruction inside. */
static ncc_status_t examine(tracer_t *t, const ncc_inst_t *inst, const ncc_value_t *const *ops,
			    const ncc_value_t *v)
{
	scan_t s = scan_value(v);
	bool new_nan = s.nan && !t->out->nan.inst, new_inf = s.inf && !t->out->inf.inst;
	if (!new_nan && !new_inf)
		return NCC_OK;
	if (inst->op == NCC_OP_FUSION || inst->op == NCC_OP_CALL || inst->op == NCC_OP_CONDITIONAL ||
	    inst->op == NCC_OP_WHILE) {
		ncc_status_t st = descend(t, inst, ops, new_nan, new_inf);
		if (st != NCC_OK)
			return st;
	}
	/* not found inside (or nothing to look into): this instruction is the site */
	if (new_nan && !t->out->nan.inst)
		record(t, &t->out->nan, inst, s.nan_leaf, s.nan_first, s.nan);
	if (new_inf && !t->out->inf.inst)
		record(t, &t->out->inf, inst, s.inf_leaf, s.inf_first, s.inf);
	return NCC_OK;
}

static int32_t pos_of(const ncc_comp_t *c, const ncc_inst_t *inst, int32_t hint)
{
	for (int32_t i = hint; i >= 0; i--)
		if (c->insts[i] == inst)
			return i;
	return -1;
}

/* Traces computation c on args. With out_root, returns the root value (NULL
 * when the trace finished early because both sites were found). */
static ncc_status_t trace_comp(tracer_t *t, const ncc_comp_t *c, const ncc_value_t *const *args,
			       int32_t nargs, ncc_value_t **out_root)
{
	if (out_root)
		*out_root = NULL;
	if (!c || !c->root || c->ninsts <= 0 || nargs != c->nparams)
		return ncc_error_set(t->ip.err, NCC_ERR_INVALID, c ? c->line : 0, 0,
				     "trace: computation '%s' has no root or takes %d arguments, got %d",
				     c ? c->name : "?", c ? c->nparams : 0, nargs);
	int32_t root = pos_of(c, c->root, c->ninsts - 1);
	if (root < 0)
		return ncc_error_set(t->ip.err, NCC_ERR_INVALID, c->line, 0,
				     "trace: computation '%s': root is not in its instruction list",
				     c->name);
	ncc_value_t **vals = calloc((size_t)c->ninsts, sizeof(*vals));
	int32_t *uses = calloc((size_t)c->ninsts, sizeof(*uses));
	const ncc_value_t *small[8];
	const ncc_value_t **ops = small;
	int32_t maxops = 8;
	if (!vals || !uses) {
		free(vals);
		free(uses);
		return NCC_ERR_NOMEM;
	}
	/* live instructions only, as the interpreter runs them */
	uses[root] = 1;
	for (int32_t i = root; i >= 0; i--) {
		if (!uses[i])
			continue;
		const ncc_inst_t *in = c->insts[i];
		for (int32_t k = 0; k < in->noperands; k++) {
			int32_t p = pos_of(c, in->operands[k], i - 1);
			if (p >= 0)
				uses[p]++;
		}
	}
	ncc_status_t st = NCC_OK;
	for (int32_t i = 0; i <= root && st == NCC_OK && !trace_done(t); i++) {
		const ncc_inst_t *in = c->insts[i];
		if (!uses[i])
			continue;
		if (in->noperands > maxops) {
			const ncc_value_t **big = malloc(sizeof(*big) * (size_t)in->noperands);
			if (!big) {
				st = NCC_ERR_NOMEM;
				break;
			}
			if (ops != small)
				free(ops);
			ops = big;
			maxops = in->noperands;
		}
		for (int32_t k = 0; k < in->noperands && st == NCC_OK; k++) {
			int32_t p = pos_of(c, in->operands[k], i - 1);
			if (p < 0 || !vals[p])
				st = ncc_interp_fail(&t->ip, in, NCC_ERR_INVALID,
						     "operand %d ('%s') is not evaluated before its use", k,
						     in->operands[k]->name);
			else
				ops[k] = vals[p];
		}
		if (st != NCC_OK)
			break;
		ncc_value_t *v = NULL;
		if (in->op == NCC_OP_PARAMETER) {
			int64_t n = in->parameter_number;
			if (n < 0 || n >= nargs || !args[n]) {
				st = ncc_interp_fail(&t->ip, in, NCC_ERR_INVALID,
						     "no argument for parameter %" PRId64, n);
				break;
			}
			st = ncc_value_clone(args[n], &v);
		} else {
			st = eval_one(t, in, ops, &v);
		}
		if (st != NCC_OK)
			break;
		t->out->evaluated++;
		vals[i] = v;
		st = examine(t, in, ops, v);
		for (int32_t k = 0; k < in->noperands; k++) {
			int32_t p = pos_of(c, in->operands[k], i - 1);
			if (p >= 0 && --uses[p] == 0 && p != root) {
				ncc_value_free(vals[p]);
				vals[p] = NULL;
			}
		}
	}
	if (st == NCC_OK && out_root && vals[root] && !trace_done(t)) {
		*out_root = vals[root];
		vals[root] = NULL;
	}
	for (int32_t i = 0; i < c->ninsts; i++)
		ncc_value_free(vals[i]);
	free(vals);
	free(uses);
	if (ops != small)
		free(ops);
	return st;
}

ncc_status_t ncc_interp_trace_nonfinite(const ncc_module_t *m, const ncc_value_t *const *args,
					int32_t nargs, const ncc_interp_options_t *opts,
					ncc_interp_trace_t *out, ncc_error_t *err)
{
	ncc_error_t local;
	if (!out)
		return NCC_ERR_INVALID;
	memset(out, 0, sizeof(*out));
	out->nan.first_index = out->inf.first_index = -1;
	if (!m || !m->entry || (nargs > 0 && !args))
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0,
				     "ncc_interp_trace_nonfinite: no module, entry computation or arguments");
	tracer_t t;
	memset(&t, 0, sizeof(t));
	if (opts)
		t.ip.opts = *opts;
	t.ip.err = err ? err : &local;
	t.ip.call = ncc_interp_call;
	t.ip.err->status = NCC_OK;
	t.ip.err->msg[0] = '\0';
	t.out = out;
	/* the entry's arguments are checked as ncc_interp_run() checks them */
	const ncc_comp_t *e = m->entry;
	if (nargs != e->nparams)
		return ncc_error_set(t.ip.err, NCC_ERR_INVALID, e->line, 0,
				     "computation '%s' takes %d arguments, got %d", e->name, e->nparams,
				     nargs);
	for (int32_t k = 0; k < nargs; k++) {
		const ncc_inst_t *p = e->params[k];
		if (!p || !args[k] || args[k]->shape.etype != p->shape.etype ||
		    (p->shape.etype != NCC_TUPLE && ncc_value_elements(args[k]) != ncc_shape_count(&p->shape)))
			return ncc_error_set(t.ip.err, NCC_ERR_INVALID, p ? p->line : 0, 0,
					     "computation '%s' parameter %d: the argument's type or "
					     "element count differs", e->name, k);
	}
	ncc_status_t st = trace_comp(&t, e, args, nargs, NULL);
	ncc_interp_pool_drain(&t.ip);
	if (st != NCC_OK && t.ip.err->status == NCC_OK)
		ncc_error_set(t.ip.err, st, 0, 0, "interpreter trace: %s", ncc_status_name(st));
	return st;
}
