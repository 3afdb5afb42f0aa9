/* ncc verifier: structural checks, the call graph and the per-opcode dispatch (the checks per operation family in verify_*.c). */
#include "verify.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

static int cmp_comp_ref(const void *a, const void *b)
{
	const ncc_comp_t *x = ((const comp_ref_t *)a)->c, *y = ((const comp_ref_t *)b)->c;
	return x < y ? -1 : x > y;
}

static int32_t comp_index_v(const vctx_t *v, const ncc_comp_t *c)
{
	if (v->index) {
		comp_ref_t key = { c, 0 };
		const comp_ref_t *r = bsearch(&key, v->index, (size_t)v->m->ncomps, sizeof(key),
					      cmp_comp_ref);
		return r ? r->index : -1;
	}
	for (int32_t i = 0; i < v->m->ncomps; i++)
		if (v->m->comps[i] == c)
			return i;
	return -1;
}

ncc_status_t vf_fail(vctx_t *v, const ncc_inst_t *in, const char *fmt, ...)
{
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const char *file = v->m && v->m->filename ? v->m->filename : "<module>";
	if (!in)
		return ncc_error_set(v->err, NCC_ERR_VERIFY, 0, 0, "%s: error: %s", file, msg);
	const char *opn = in->op == NCC_OP_UNKNOWN && in->opname ? in->opname : ncc_opcode_name(in->op);
	if (in->line)
		return ncc_error_set(v->err, NCC_ERR_VERIFY, in->line, in->col,
				     "%s:%d:%d: error: instruction '%s' (%s): %s", file, in->line,
				     in->col, in->name, opn, msg);
	return ncc_error_set(v->err, NCC_ERR_VERIFY, 0, 0, "%s: error: instruction '%s' (%s): %s",
			     file, in->name, opn, msg);
}

/* short shape spelling for messages (static buffers rotate so two fit in one call) */
const char *vf_sh(const ncc_shape_t *s)
{
	static _Thread_local char bufs[4][160];
	static _Thread_local int k;
	char *b = bufs[k++ & 3];
	int n = ncc_shape_to_string(s, false, b, sizeof(bufs[0]));
	if (n >= (int)sizeof(bufs[0]))
		strcpy(b + sizeof(bufs[0]) - 4, "...");
	return b;
}

/* Checks one shape for internal consistency (any shape an instruction carries). */
static ncc_status_t check_shape(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *s,
				const char *what, int depth)
{
	CHECK(depth < 64, "%s nests tuples too deeply", what);
	if (s->etype == NCC_TUPLE) {
		CHECK(s->nelems >= 0 && (s->nelems == 0 || s->elems), "%s: malformed tuple", what);
		for (int32_t i = 0; i < s->nelems; i++)
			TRY(check_shape(v, in, &s->elems[i], what, depth + 1));
		return NCC_OK;
	}
	CHECK(s->etype > NCC_INVALID && s->etype < NCC_TUPLE, "%s has an invalid element type", what);
	CHECK(s->rank >= 0 && s->rank <= NCC_MAX_RANK, "%s has invalid rank %d", what, (int)s->rank);
	if (!ncc_etype_is_array(s->etype))
		CHECK(s->rank == 0, "%s: %s shapes have no dimensions", what, ncc_etype_name(s->etype));
	for (int i = 0; i < s->rank; i++)
		CHECK(s->dims[i] >= 0 || (s->dynamic[i] && s->dims[i] == NCC_DIM_UNBOUNDED),
		      "%s %s has a negative dimension", what, vf_sh(s));
	if (s->has_layout) {
		bool seen[NCC_MAX_RANK] = { false };
		for (int i = 0; i < s->rank; i++) {
			int32_t d = s->minor_to_major[i];
			CHECK(d >= 0 && d < s->rank && !seen[d],
			      "%s %s: layout is not a permutation of 0..%d", what, vf_sh(s), (int)s->rank - 1);
			seen[d] = true;
		}
	}
	return NCC_OK;
}

ncc_status_t vf_need_operands(vctx_t *v, const ncc_inst_t *in, int32_t n)
{
	CHECK(in->noperands == n, "expects %d operand%s, has %d", (int)n, n == 1 ? "" : "s",
	      (int)in->noperands);
	return NCC_OK;
}

ncc_status_t vf_need_array(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *s,
			          const char *what)
{
	CHECK(ncc_shape_is_array(s), "%s must be an array, is %s", what, vf_sh(s));
	return NCC_OK;
}

/* dims of a list must be unique and in [0, rank) */
ncc_status_t vf_check_dim_list(vctx_t *v, const ncc_inst_t *in, const ncc_ilist_t *l,
				      int32_t rank, const char *what)
{
	bool seen[NCC_MAX_RANK] = { false };
	for (int32_t i = 0; i < l->n; i++) {
		int64_t d = l->v[i];
		CHECK(d >= 0 && d < rank, "%s entry %lld out of range for rank %d", what, (long long)d,
		      (int)rank);
		CHECK(!seen[d], "%s repeats dimension %lld", what, (long long)d);
		seen[d] = true;
	}
	return NCC_OK;
}

/* result must equal an expected shape (dims and element type; layout ignored) */
ncc_status_t vf_expect_shape(vctx_t *v, const ncc_inst_t *in, const ncc_shape_t *want)
{
	CHECK(ncc_shape_equal(&in->shape, want, false), "result shape is %s, expected %s",
	      vf_sh(&in->shape), vf_sh(want));
	return NCC_OK;
}

/* A called computation's signature: nparams parameters of the given shapes (NULL: not
 * checked), root shape want_root (NULL: not checked). */
ncc_status_t vf_check_called(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c,
				    const char *role, int32_t nparams, const ncc_shape_t *const *pshapes,
				    const ncc_shape_t *want_root)
{
	CHECK(c, "missing %s computation", role);
	CHECK(c->nparams == nparams, "%s computation '%s' takes %d parameters, expected %d", role,
	      c->name, (int)c->nparams, (int)nparams);
	for (int32_t i = 0; pshapes && i < nparams; i++)
		if (pshapes[i] && c->params[i])
			CHECK(ncc_shape_equal(&c->params[i]->shape, pshapes[i], false),
			      "%s computation '%s' parameter %d is %s, expected %s", role, c->name,
			      (int)i, vf_sh(&c->params[i]->shape), vf_sh(pshapes[i]));
	if (want_root && c->root)
		CHECK(ncc_shape_equal(&c->root->shape, want_root, false),
		      "%s computation '%s' returns %s, expected %s", role, c->name,
		      vf_sh(&c->root->shape), vf_sh(want_root));
	return NCC_OK;
}

/* Reducer of N values: 2N scalar params (accumulators then inputs) of the given
 * element types, returning N scalars (a tuple when N > 1). */
ncc_status_t vf_check_reducer(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c,
				     int32_t n, const ncc_etype_t *types)
{
	CHECK(c, "missing to_apply computation");
	CHECK(n <= 64, "too many reduced values");
	ncc_shape_t sc[64];
	const ncc_shape_t *ps[128];
	for (int32_t i = 0; i < n; i++) {
		sc[i] = ncc_shape_scalar(types[i]);
		ps[i] = ps[n + i] = &sc[i];
	}
	ncc_shape_t root = vf_one_or_tuple(n, sc);
	return vf_check_called(v, in, c, "to_apply", 2 * n, ps, &root);
}

/* Output size of one windowed dimension (XLA's InferWindowOutputShape). */
ncc_status_t vf_window_out(vctx_t *v, const ncc_inst_t *in, int64_t insz,
			          const ncc_window_dim_t *w, int i, int64_t *out)
{
	CHECK(w->size >= 0 || w->size == 0, "window size %lld negative in dimension %d",
	      (long long)w->size, i);
	CHECK(w->stride >= 1, "window stride %lld must be >= 1 in dimension %d", (long long)w->stride, i);
	CHECK(w->lhs_dilation >= 1 && w->rhs_dilation >= 1, "window dilation must be >= 1 in dimension %d", i);
	int64_t din = insz == 0 ? 0 : (insz - 1) * w->lhs_dilation + 1;
	din += w->pad_lo + w->pad_hi;
	int64_t dwin = w->size == 0 ? 0 : (w->size - 1) * w->rhs_dilation + 1;
	*out = din < dwin || din < 0 ? 0 : (din - dwin) / w->stride + 1;
	return NCC_OK;
}

/* ------------------------------------------------------------ per opcode */

/* Exactly n operands (1 or 2), each an array (named a_name, b_name), and an array
 * result: the preamble of the elementwise, shape and contraction checks. */
ncc_status_t vf_need_array_io(vctx_t *v, const ncc_inst_t *in, int32_t n, const char *a_name,
				     const char *b_name)
{
	TRY(vf_need_operands(v, in, n));
	TRY(vf_need_array(v, in, &in->operands[0]->shape, a_name));
	if (n > 1)
		TRY(vf_need_array(v, in, &in->operands[1]->shape, b_name));
	return vf_need_array(v, in, &in->shape, "result");
}


static ncc_status_t verify_semantics(vctx_t *v, const ncc_inst_t *in)
{
	switch (in->op) {
	case NCC_OP_PARAMETER:
		TRY(vf_need_operands(v, in, 0));
		return NCC_OK;
	case NCC_OP_CONSTANT: return vf_constant(v, in);
	case NCC_OP_SELECT: return vf_select(v, in);
	case NCC_OP_CLAMP: return vf_clamp(v, in);
	case NCC_OP_BROADCAST: return vf_broadcast(v, in);
	case NCC_OP_RESHAPE: return vf_reshape(v, in);
	case NCC_OP_TRANSPOSE: return vf_transpose(v, in);
	case NCC_OP_REVERSE: return vf_reverse(v, in);
	case NCC_OP_DOT: return vf_dot(v, in);
	case NCC_OP_CONVOLUTION: return vf_convolution(v, in);
	case NCC_OP_REDUCE: return vf_reduce(v, in);
	case NCC_OP_REDUCE_WINDOW: return vf_reduce_window(v, in);
	case NCC_OP_SELECT_AND_SCATTER: return vf_select_and_scatter(v, in);
	case NCC_OP_SLICE: return vf_slice(v, in);
	case NCC_OP_DYNAMIC_SLICE: return vf_dynamic_slice(v, in);
	case NCC_OP_DYNAMIC_UPDATE_SLICE: return vf_dynamic_update_slice(v, in);
	case NCC_OP_CONCATENATE: return vf_concatenate(v, in);
	case NCC_OP_PAD: return vf_pad(v, in);
	case NCC_OP_IOTA: return vf_iota(v, in);
	case NCC_OP_GATHER: return vf_gather(v, in);
	case NCC_OP_SCATTER: return vf_scatter(v, in);
	case NCC_OP_TUPLE: return vf_tuple(v, in);
	case NCC_OP_GET_TUPLE_ELEMENT: return vf_gte(v, in);
	case NCC_OP_WHILE: return vf_while(v, in);
	case NCC_OP_CONDITIONAL: return vf_conditional(v, in);
	case NCC_OP_CALL: return vf_call_like(v, in, in->to_apply, "to_apply");
	case NCC_OP_FUSION: return vf_fusion(v, in);
	case NCC_OP_MAP: return vf_map(v, in);
	case NCC_OP_SORT: return vf_sort(v, in);
	case NCC_OP_BATCH_NORM_TRAINING:
	case NCC_OP_BATCH_NORM_INFERENCE:
	case NCC_OP_BATCH_NORM_GRAD: return vf_batch_norm(v, in);
	case NCC_OP_RNG_BIT_GENERATOR: return vf_rng_bit_generator(v, in);
	case NCC_OP_RNG: return vf_rng(v, in);
	case NCC_OP_BITCAST_CONVERT: return vf_bitcast_convert(v, in);
	case NCC_OP_ALL_REDUCE: return vf_all_reduce(v, in);
	case NCC_OP_ALL_GATHER:
	case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_ALL_TO_ALL: return vf_gather_scatter_collective(v, in);
	case NCC_OP_COLLECTIVE_PERMUTE:
	case NCC_OP_OPTIMIZATION_BARRIER:
	case NCC_OP_ADD_DEPENDENCY:
	case NCC_OP_DOMAIN:
		return vf_same_as_operand(v, in);
	case NCC_OP_AFTER_ALL:
		CHECK(in->shape.etype == NCC_TOKEN, "result must be a token, is %s", vf_sh(&in->shape));
		return NCC_OK;
	case NCC_OP_REPLICA_ID:
	case NCC_OP_PARTITION_ID:
		TRY(vf_need_operands(v, in, 0));
		CHECK(vf_is_scalar(&in->shape) && in->shape.etype == NCC_U32, "result must be u32[], is %s",
		      vf_sh(&in->shape));
		return NCC_OK;
	default:
		break;
	}
	if (ncc_opcode_is_elementwise_unary(in->op))
		return vf_unary(v, in);
	if (ncc_opcode_is_elementwise_binary(in->op))
		return vf_binary(v, in);
	/* custom-call, unknown and the rest: structural checks only */
	return NCC_OK;
}

/* Checks that every computation an instruction calls belongs to this module. */
static ncc_status_t check_callee(vctx_t *v, const ncc_inst_t *in, const ncc_comp_t *c)
{
	if (!c)
		return NCC_OK;
	CHECK(comp_index_v(v, c) >= 0, "calls computation '%s' that is not in the module", c->name);
	CHECK(c != in->parent, "calls its own computation '%s'", c->name);
	CHECK(!c->is_entry, "calls the entry computation '%s'", c->name);
	return NCC_OK;
}

static ncc_status_t verify_inst_common(vctx_t *v, const ncc_inst_t *in)
{
	TRY(check_shape(v, in, &in->shape, "result shape", 0));
	CHECK(in->noperands >= 0 && (in->noperands == 0 || in->operands), "malformed operand list");
	for (int32_t i = 0; i < in->noperands; i++) {
		const ncc_inst_t *o = in->operands[i];
		CHECK(o, "operand %d is missing", (int)i);
		CHECK(o->parent == in->parent, "operand '%s' belongs to another computation", o->name);
		CHECK(o != in, "uses itself as an operand");
	}
	TRY(check_callee(v, in, in->to_apply));
	TRY(check_callee(v, in, in->condition));
	TRY(check_callee(v, in, in->body));
	TRY(check_callee(v, in, in->calls));
	TRY(check_callee(v, in, in->select));
	TRY(check_callee(v, in, in->scatter_comp));
	for (int32_t i = 0; i < in->nbranches; i++) {
		CHECK(in->branches[i], "branch %d is missing", (int)i);
		TRY(check_callee(v, in, in->branches[i]));
	}
	for (int32_t i = 0; i < in->ncalled; i++) {
		CHECK(in->called[i], "called computation %d is missing", (int)i);
		TRY(check_callee(v, in, in->called[i]));
	}
	return verify_semantics(v, in);
}

/* ---------------------------------------------------------- call graph */

/* Callees of an instruction, in one array (at most 6 named slots + lists). */
static int32_t callees(const ncc_inst_t *in, const ncc_comp_t **out, int32_t cap)
{
	int32_t n = 0;
	const ncc_comp_t *named[6] = { in->to_apply, in->condition, in->body, in->calls,
				       in->select, in->scatter_comp };
	for (int k = 0; k < 6; k++)
		if (named[k] && n < cap)
			out[n++] = named[k];
	for (int32_t k = 0; k < in->nbranches && n < cap; k++)
		if (in->branches[k])
			out[n++] = in->branches[k];
	for (int32_t k = 0; k < in->ncalled && n < cap; k++)
		if (in->called[k])
			out[n++] = in->called[k];
	return n;
}

/* HLO computations may not call themselves, directly or through others: a cycle would
 * send the interpreter and the lowering into endless recursion. Iterative DFS so a
 * long chain of computations cannot exhaust the stack. */
static ncc_status_t check_call_cycles(vctx_t *v)
{
	const ncc_module_t *m = v->m;
	int32_t n = m->ncomps;
	uint8_t *color = ncc__calloc((size_t)(n ? n : 1), 1); /* 0 new, 1 on stack, 2 done */
	int32_t *stack_c = ncc__malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
	int32_t *stack_i = ncc__malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
	if (!color || !stack_c || !stack_i) {
		free(color);
		free(stack_c);
		free(stack_i);
		return ncc_error_set(v->err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	}
	ncc_status_t st = NCC_OK;
	for (int32_t root = 0; root < n && !st; root++) {
		if (color[root])
			continue;
		int32_t sp = 0;
		stack_c[sp] = root;
		stack_i[sp] = 0; /* next instruction to scan */
		color[root] = 1;
		sp++;
		while (sp > 0 && !st) {
			int32_t ci = stack_c[sp - 1];
			const ncc_comp_t *c = m->comps[ci];
			if (stack_i[sp - 1] >= c->ninsts) {
				color[ci] = 2;
				sp--;
				continue;
			}
			/* the instruction is rescanned after each descent; it is passed only
			 * when none of its callees is new */
			const ncc_inst_t *in = c->insts[stack_i[sp - 1]];
			const ncc_comp_t *cs[64];
			int32_t k = callees(in, cs, 64);
			bool descended = false;
			for (int32_t j = 0; j < k && !st && !descended; j++) {
				int32_t ti = comp_index_v(v, cs[j]);
				if (ti < 0)
					continue; /* reported by check_callee */
				if (color[ti] == 1)
					st = vf_fail(v, in, "calls computation '%s', which is already on the call chain (a cycle)",
						      cs[j]->name);
				else if (color[ti] == 0) {
					color[ti] = 1;
					stack_c[sp] = ti;
					stack_i[sp] = 0;
					sp++;
					descended = true;
				}
			}
			if (!descended)
				stack_i[sp - 1]++;
		}
	}
	free(color);
	free(stack_c);
	free(stack_i);
	return st;
}

ncc_status_t ncc_verify_inst(const ncc_inst_t *inst, ncc_error_t *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
	if (!inst || !inst->parent)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "no instruction");
	vctx_t v = { inst->parent->module, err, NULL };
	return verify_inst_common(&v, inst);
}

static ncc_status_t verify_module(vctx_t *v);

ncc_status_t ncc_verify(const ncc_module_t *m, ncc_error_t *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
	if (!m)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "no module");
	vctx_t vc = { m, err, NULL }, *v = &vc;
	const ncc_inst_t *in = NULL; /* for CHECK in module-level checks */
	CHECK(m->entry, "module '%s' has no entry computation", m->name);
	vc.index = ncc__malloc(sizeof(comp_ref_t) * (size_t)(m->ncomps ? m->ncomps : 1));
	if (!vc.index)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	for (int32_t i = 0; i < m->ncomps; i++) {
		vc.index[i].c = m->comps[i];
		vc.index[i].index = i;
	}
	qsort(vc.index, (size_t)m->ncomps, sizeof(comp_ref_t), cmp_comp_ref);
	ncc_status_t ist = verify_module(v);
	free(vc.index);
	return ist;
}

static ncc_status_t verify_module(vctx_t *v)
{
	const ncc_module_t *m = v->m;
	ncc_error_t *err = v->err;
	const ncc_inst_t *in = NULL; /* for CHECK in module-level checks */
	/* positions for "defined before use": ids are dense below next_id */
	int32_t *pos = ncc__malloc(sizeof(int32_t) * (size_t)(m->next_id ? m->next_id : 1));
	if (!pos)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "out of memory");
	for (uint32_t i = 0; i < m->next_id; i++)
		pos[i] = -1;
	ncc_status_t st = NCC_OK;
	bool entry_found = false;
	for (int32_t ci = 0; ci < m->ncomps && !st; ci++) {
		const ncc_comp_t *c = m->comps[ci];
		entry_found |= c == m->entry;
		if (c->ninsts == 0 || !c->root) {
			st = vf_fail(v, NULL, "computation '%s' has no root instruction", c->name);
			break;
		}
		if (c->root->parent != c) {
			st = vf_fail(v, NULL, "computation '%s': root '%s' belongs to another computation",
				      c->name, c->root->name);
			break;
		}
		for (int32_t i = 0; i < c->nparams && !st; i++) {
			const ncc_inst_t *p = c->params[i];
			if (!p || p->op != NCC_OP_PARAMETER || p->parameter_number != i || p->parent != c)
				st = vf_fail(v, p, "computation '%s': parameter %d is missing or misnumbered",
					      c->name, (int)i);
		}
		if (!st && (c->nsig_params || c->has_sig_result)) {
			if (c->nsig_params != c->nparams)
				st = vf_fail(v, NULL, "computation '%s': signature lists %d parameters, body has %d",
					      c->name, (int)c->nsig_params, (int)c->nparams);
			for (int32_t i = 0; i < c->nsig_params && !st; i++)
				if (!ncc_shape_equal(&c->sig_param_shapes[i], &c->params[i]->shape, false))
					st = vf_fail(v, c->params[i], "signature says parameter %d is %s",
						      (int)i, vf_sh(&c->sig_param_shapes[i]));
			if (!st && c->has_sig_result &&
			    !ncc_shape_equal(&c->sig_result, &c->root->shape, false))
				st = vf_fail(v, c->root, "computation '%s' signature returns %s, root is %s",
					      c->name, vf_sh(&c->sig_result), vf_sh(&c->root->shape));
		}
		for (int32_t i = 0; i < c->ninsts && !st; i++) {
			const ncc_inst_t *x = c->insts[i];
			if (!x || x->id >= m->next_id || x->parent != c) {
				st = vf_fail(v, x, "computation '%s' holds a foreign instruction", c->name);
				break;
			}
			if (x->op == NCC_OP_PARAMETER &&
			    (x->parameter_number < 0 || x->parameter_number >= c->nparams ||
			     c->params[x->parameter_number] != x)) {
				st = vf_fail(v, x, "parameter(%lld) is not registered in computation '%s'",
					      (long long)x->parameter_number, c->name);
				break;
			}
			for (int32_t k = 0; k < x->noperands && !st; k++) {
				const ncc_inst_t *o = x->operands[k];
				if (o && o->parent == c && o->id < m->next_id && pos[o->id] < 0)
					st = vf_fail(v, x, "operand '%s' is used before it is defined", o->name);
			}
			if (!st)
				st = verify_inst_common(v, x);
			pos[x->id] = i;
		}
		if (!st && pos[c->root->id] < 0)
			st = vf_fail(v, NULL, "computation '%s': root is not in its instruction list", c->name);
	}
	free(pos);
	if (st)
		return st;
	CHECK(entry_found, "entry computation is not in the module");
	TRY(check_call_cycles(v));
	/* input_output_alias refers to existing parameters and outputs */
	const ncc_comp_t *e = m->entry;
	for (int32_t i = 0; i < m->naliases; i++) {
		const ncc_alias_t *a = &m->aliases[i];
		CHECK(a->param_number >= 0 && a->param_number < e->nparams,
		      "input_output_alias: parameter %lld does not exist (entry has %d)",
		      (long long)a->param_number, (int)e->nparams);
		const ncc_shape_t *o = &e->root->shape;
		for (int32_t k = 0; k < a->output_index.n; k++) {
			CHECK(o->etype == NCC_TUPLE && a->output_index.v[k] >= 0 &&
			      a->output_index.v[k] < o->nelems,
			      "input_output_alias: output index %d is not an element of the result", (int)i);
			o = &o->elems[a->output_index.v[k]];
		}
		const ncc_shape_t *p = &e->params[a->param_number]->shape;
		for (int32_t k = 0; k < a->param_index.n; k++) {
			CHECK(p->etype == NCC_TUPLE && a->param_index.v[k] >= 0 &&
			      a->param_index.v[k] < p->nelems,
			      "input_output_alias: parameter index of alias %d is not an element", (int)i);
			p = &p->elems[a->param_index.v[k]];
		}
		CHECK(ncc_shape_equal(o, p, false),
		      "input_output_alias: output %s and parameter %lld %s differ", vf_sh(o),
		      (long long)a->param_number, vf_sh(p));
	}
	/* buffer_donor names existing parameters (elements of tuple ones), none of
	 * them also aliased (XLA's HloBufferDonorConfig::Verify) */
	for (int32_t i = 0; i < m->ndonors; i++) {
		const ncc_donor_t *d = &m->donors[i];
		CHECK(d->param_number >= 0 && d->param_number < e->nparams,
		      "buffer_donor: parameter %lld does not exist (entry has %d)",
		      (long long)d->param_number, (int)e->nparams);
		const ncc_shape_t *p = &e->params[d->param_number]->shape;
		for (int32_t k = 0; k < d->param_index.n; k++) {
			CHECK(p->etype == NCC_TUPLE && d->param_index.v[k] >= 0 &&
			      d->param_index.v[k] < p->nelems,
			      "buffer_donor: parameter index of donor %d is not an element", (int)i);
			p = &p->elems[d->param_index.v[k]];
		}
		for (int32_t a = 0; a < m->naliases; a++) {
			const ncc_alias_t *al = &m->aliases[a];
			bool same = al->param_number == d->param_number &&
				    al->param_index.n == d->param_index.n;
			for (int32_t k = 0; same && k < d->param_index.n; k++)
				same = al->param_index.v[k] == d->param_index.v[k];
			CHECK(!same, "buffer_donor: parameter %lld is also in input_output_alias",
			      (long long)d->param_number);
		}
	}
	return NCC_OK;
}

