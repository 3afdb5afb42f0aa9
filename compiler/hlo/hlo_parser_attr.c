/* ncc HLO text parser: an instruction's attributes (the dispatch by name, integer lists, called computations, metadata, frontend attributes, enums, verbatim values). */
#include "hlo_parser_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------- attributes */

bool tp_parse_ilist(parser_t *p, ncc_ilist_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting a list of integers"))
		return false;
	int64_t *v = NULL;
	int32_t n = 0, cap = 0;
	bool ok = true;
	if (p->tok.kind != NCC_TOK_RBRACE) {
		for (;;) {
			if (n == cap) {
				int32_t nc = cap ? cap * 2 : 8;
				if (!(ok = tp_grow(p, &v, sizeof(*v), (size_t)nc, 1 << 22, "list of integers")))
					break;
				cap = nc;
			}
			if (!(ok = tp_parse_int(p, &v[n], "integer")))
				break;
			n++;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	if (ok)
		ok = tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in list of integers");
	if (ok && n) {
		out->v = ncc_alloc(p->m, sizeof(int64_t) * (size_t)n);
		if (!out->v)
			ok = tp_nomem(p);
		else
			memcpy(out->v, v, sizeof(int64_t) * (size_t)n);
	}
	free(v);
	if (!ok)
		return false;
	out->present = true;
	out->n = n;
	return true;
}

static bool add_pending(parser_t *p, ncc_comp_t **slot)
{
	if (p->tok.kind != NCC_TOK_NAME && p->tok.kind != NCC_TOK_IDENT)
		return tp_expected(p, "computation name");
	pending_ref_t *np = ncc__grow(p->pend, &p->cap_pend, p->npend, sizeof(*np), 64);
	if (!np)
		return tp_nomem(p);
	p->pend = np;
	pending_ref_t *r = &p->pend[p->npend];
	r->slot = slot;
	r->line = p->tok.line;
	r->col = p->tok.col;
	r->name = tp_tok_dup(p, &p->tok);
	if (!r->name)
		return false;
	p->npend++;
	tp_next(p);
	return true;
}

static bool parse_comp_list(parser_t *p, ncc_comp_t ***out, int32_t *out_n)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting a list of computations"))
		return false;
	/* count first so the slots can live in the arena and never move */
	ncc_lexer_t save = p->lx;
	ncc_token_t stok = p->tok;
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_NAME || p->tok.kind == NCC_TOK_IDENT) {
		n++;
		tp_next(p);
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
		if (n > 1 << 16)
			return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many computations");
	}
	p->lx = save;
	p->tok = stok;
	ncc_comp_t **arr = n ? ncc_alloc(p->m, sizeof(*arr) * (size_t)n) : NULL;
	if (n && !arr)
		return tp_nomem(p);
	for (int32_t i = 0; i < n; i++) {
		if (!add_pending(p, &arr[i]))
			return false;
		if (i + 1 < n)
			tp_next(p); /* the comma */
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in list of computations"))
		return false;
	*out = arr;
	*out_n = n;
	return true;
}

/* Any value kept verbatim: a balanced {...}/(...)/[...] group, a string (with its
 * quotes), or a raw word. */
bool tp_capture_raw(parser_t *p, const char **out)
{
	size_t start = p->tok.pos;
	if (p->tok.kind == NCC_TOK_LBRACE || p->tok.kind == NCC_TOK_LPAREN ||
	    p->tok.kind == NCC_TOK_LSQUARE) {
		ncc_lex_reset_to(&p->lx, &p->tok);
		if (!ncc_lex_skip_balanced(&p->lx, NCC_PARSE_MAX_DEPTH))
			return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				          "unbalanced brackets in attribute value");
		size_t end = p->lx.pos;
		p->prev_end = end;
		p->tok = ncc_lex_next(&p->lx);
		*out = ncc_strndup(p->m, p->lx.src + start, end - start);
		return *out ? true : tp_nomem(p);
	}
	if (p->tok.kind == NCC_TOK_STRING) {
		*out = ncc_strndup(p->m, p->lx.src + start, p->tok.len + 2);
		tp_next(p);
		return *out ? true : tp_nomem(p);
	}
	ncc_token_t w;
	if (!tp_raw_word(p, &w, "attribute value"))
		return false;
	*out = ncc_strndup(p->m, w.text, w.len);
	return *out ? true : tp_nomem(p);
}

/* Makes room for element n of an arena array that grows by doubling: the capacity is
 * implied by n (4, 8, 16, ...), so appends cost O(1) amortised arena space. */
bool tp_arena_append_room(parser_t *p, void *arr, int32_t n, size_t elem)
{
	if (n >= (1 << 24))
		return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many entries");
	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return true; /* still room */
	size_t cap = n == 0 ? 4 : (size_t)n * 2;
	void *na = ncc_alloc(p->m, elem * cap);
	if (!na)
		return tp_nomem(p);
	if (n)
		memcpy(na, *(void **)arr, elem * (size_t)n);
	*(void **)arr = na;
	return true;
}

bool tp_add_raw_attr(parser_t *p, ncc_raw_attr_t **arr, int32_t *n, const ncc_token_t *key)
{
	const char *text = NULL;
	if (!tp_capture_raw(p, &text))
		return false;
	if (!tp_arena_append_room(p, arr, *n, sizeof(**arr)))
		return false;
	ncc_raw_attr_t *na = *arr;
	na[*n].key = ncc_strndup(p->m, key->text, key->len);
	na[*n].text = text;
	if (!na[*n].key)
		return tp_nomem(p);
	(*n)++;
	return true;
}

static bool parse_metadata(parser_t *p, ncc_metadata_t *md)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting metadata"))
		return false;
	while (p->tok.kind == NCC_TOK_IDENT) {
		ncc_token_t key = p->tok;
		tp_next(p);
		if (!tp_expect(p, NCC_TOK_EQUAL, "'=' in metadata"))
			return false;
		bool ok;
		if (tp_tok_is(&key, "op_type"))
			ok = tp_parse_string(p, &md->op_type, "string for op_type");
		else if (tp_tok_is(&key, "op_name"))
			ok = tp_parse_string(p, &md->op_name, "string for op_name");
		else if (tp_tok_is(&key, "source_file"))
			ok = tp_parse_string(p, &md->source_file, "string for source_file");
		else if (tp_tok_is(&key, "source_line"))
			ok = tp_parse_int(p, &md->source_line, "integer for source_line");
		else {
			/* other metadata (profile_type, deduplicated_name, stack_frame_id, ...):
			 * well-formed values are skipped */
			const char *ignored = NULL;
			ok = tp_capture_raw(p, &ignored);
		}
		if (!ok)
			return false;
		tp_accept(p, NCC_TOK_COMMA);
	}
	return tp_expect(p, NCC_TOK_RBRACE, "metadata field or '}'");
}

static bool parse_frontend_attrs(parser_t *p, ncc_inst_t *inst)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting frontend_attributes"))
		return false;
	ncc_kv_t kv[256];
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_IDENT || p->tok.kind == NCC_TOK_STRING) {
		if (n >= 256)
			return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
				          "more than 256 frontend attributes");
		if (p->tok.kind == NCC_TOK_STRING) {
			if (!tp_parse_string(p, &kv[n].key, "key"))
				return false;
		} else {
			if (!(kv[n].key = tp_tok_dup(p, &p->tok)))
				return false;
			tp_next(p);
		}
		if (!tp_expect(p, NCC_TOK_EQUAL, "'=' in frontend_attributes"))
			return false;
		if (p->tok.kind == NCC_TOK_STRING) {
			if (!tp_parse_string(p, &kv[n].value, "string value"))
				return false;
		} else if (!tp_capture_raw(p, &kv[n].value)) {
			return false;
		}
		n++;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in frontend_attributes"))
		return false;
	if (n) {
		inst->frontend_attrs = ncc_alloc(p->m, sizeof(ncc_kv_t) * (size_t)n);
		if (!inst->frontend_attrs)
			return tp_nomem(p);
		memcpy(inst->frontend_attrs, kv, sizeof(ncc_kv_t) * (size_t)n);
	}
	inst->nfrontend_attrs = n;
	return true;
}

static bool parse_enum(parser_t *p, const char *const *names, int n, int first, int *out,
		       const char *what)
{
	if (p->tok.kind == NCC_TOK_IDENT)
		for (int i = 0; i < n; i++)
			if (p->tok.len == strlen(names[i]) &&
			    strncasecmp(p->tok.text, names[i], p->tok.len) == 0) {
				*out = first + i;
				tp_next(p);
				return true;
			}
	return tp_expected(p, what);
}

static bool parse_precision(parser_t *p, ncc_inst_t *inst)
{
	static const char *const names[] = { "default", "high", "highest" };
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting operand_precision"))
		return false;
	ncc_precision_t v[64];
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_IDENT && n < 64) {
		int e = 0;
		if (!parse_enum(p, names, 3, 0, &e, "precision (default, high, highest)"))
			return false;
		v[n++] = (ncc_precision_t)e;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "precision or '}'"))
		return false;
	if (n) {
		inst->operand_precision = ncc_alloc(p->m, sizeof(*v) * (size_t)n);
		if (!inst->operand_precision)
			return tp_nomem(p);
		memcpy(inst->operand_precision, v, sizeof(*v) * (size_t)n);
	}
	inst->nprecision = n;
	return true;
}

static bool parse_control_preds(parser_t *p, ncc_inst_t *inst)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting control-predecessors"))
		return false;
	ncc_inst_t *v[256];
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_NAME || p->tok.kind == NCC_TOK_IDENT) {
		if (n >= 256)
			return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many control predecessors");
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)p->tok.len, p->tok.text);
		ncc_inst_t *d = ncc_name_map_get(&p->insts, name);
		if (!d)
			return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				          "control predecessor '%s' is not defined before its use", name);
		v[n++] = d;
		tp_next(p);
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in control-predecessors"))
		return false;
	if (n) {
		inst->control_preds = ncc_alloc(p->m, sizeof(*v) * (size_t)n);
		if (!inst->control_preds)
			return tp_nomem(p);
		memcpy(inst->control_preds, v, sizeof(*v) * (size_t)n);
	}
	inst->ncontrol_preds = n;
	return true;
}

static ncc_dot_dnums_t *dot_of(parser_t *p, ncc_inst_t *inst)
{
	if (!inst->dot && !(inst->dot = ncc_alloc(p->m, sizeof(*inst->dot))))
		tp_nomem(p);
	return inst->dot;
}

static ncc_gather_dnums_t *gather_of(parser_t *p, ncc_inst_t *inst)
{
	if (!inst->gather && !(inst->gather = ncc_alloc(p->m, sizeof(*inst->gather))))
		tp_nomem(p);
	return inst->gather;
}

static ncc_scatter_dnums_t *scatter_of(parser_t *p, ncc_inst_t *inst)
{
	if (!inst->scatter && !(inst->scatter = ncc_alloc(p->m, sizeof(*inst->scatter))))
		tp_nomem(p);
	return inst->scatter;
}

/* Attributes kept verbatim: valid HLO that the IR does not model. */
static const char *const raw_attr_names[] = {
	"output_to_operand_aliasing", "schedule", "statistics", "outfeed_config",
	"infeed_config", "domain", "operand_layout_constraints", "origin", "is_host_transfer",
	"outfeed_shape", "async_execution_thread", "result_accuracy", "split_dimension",
	"slice_sizes_are_static", "dynamic_slice_sizes_are_static", "padding_type",
	"serialized_hlo_module", "literal", "custom_call_schedule", "kind_name",
	"source_target_pairs_v2", "backend_config_v2", "mode", "dimension", "largest_v2",
	"known_trip_count", "output_layout", "original_value", "parameter_replication",
	"sparsity", "async_group_id", "is_cross_program_prefetch",
	"cross_program_prefetch_index", "wait_on_operation_queues", "result_layout",
	"precision_config", "ragged_all_to_all_config",
};

bool tp_parse_attr(parser_t *p, ncc_inst_t *inst)
{
	ncc_token_t key = p->tok;
	if (key.kind != NCC_TOK_IDENT)
		return tp_expected(p, "attribute name");
	tp_next(p);
	if (!tp_expect(p, NCC_TOK_EQUAL, "'=' after attribute name"))
		return false;
#define K(s) tp_tok_is(&key, s)
	if (K("dimensions"))
		return tp_parse_ilist(p, &inst->dimensions);
	if (K("metadata"))
		return parse_metadata(p, &inst->metadata);
	if (K("index"))
		return tp_parse_nonneg(p, &inst->tuple_index, "tuple index");
	if (K("iota_dimension"))
		return tp_parse_nonneg(p, &inst->iota_dimension, "iota dimension");
	if (K("to_apply"))
		return add_pending(p, &inst->to_apply);
	if (K("condition"))
		return add_pending(p, &inst->condition);
	if (K("body"))
		return add_pending(p, &inst->body);
	if (K("select"))
		return add_pending(p, &inst->select);
	if (K("scatter"))
		return add_pending(p, &inst->scatter_comp);
	if (K("calls")) {
		if (p->tok.kind == NCC_TOK_LBRACE) {
			if (!parse_comp_list(p, &inst->called, &inst->ncalled))
				return false;
			/* calls stays pending-resolved through called[0] after resolution */
			return true;
		}
		return add_pending(p, &inst->calls);
	}
	if (K("called_computations"))
		return parse_comp_list(p, &inst->called, &inst->ncalled);
	if (K("branch_computations")) {
		inst->branches_are_pred = false;
		return parse_comp_list(p, &inst->branches, &inst->nbranches);
	}
	if (K("true_computation") || K("false_computation")) {
		if (!inst->branches) {
			inst->branches = ncc_alloc(p->m, sizeof(*inst->branches) * 2);
			if (!inst->branches)
				return tp_nomem(p);
			inst->nbranches = 2;
			inst->branches_are_pred = true;
		} else if (!inst->branches_are_pred) {
			return tp_fail_at(p, NCC_ERR_PARSE, key.line, key.col,
				          "true/false_computation mixed with branch_computations");
		}
		return add_pending(p, &inst->branches[K("true_computation") ? 0 : 1]);
	}
	if (K("lhs_batch_dims") || K("rhs_batch_dims") || K("lhs_contracting_dims") ||
	    K("rhs_contracting_dims")) {
		ncc_dot_dnums_t *d = dot_of(p, inst);
		if (!d)
			return false;
		return tp_parse_ilist(p, K("lhs_batch_dims") ? &d->lhs_batch :
				      K("rhs_batch_dims") ? &d->rhs_batch :
				      K("lhs_contracting_dims") ? &d->lhs_contracting : &d->rhs_contracting);
	}
	if (K("window"))
		return tp_parse_window(p, inst);
	if (K("dim_labels"))
		return tp_parse_dim_labels(p, inst);
	if (K("feature_group_count"))
		return tp_parse_int(p, &inst->feature_group_count, "feature_group_count");
	if (K("batch_group_count"))
		return tp_parse_int(p, &inst->batch_group_count, "batch_group_count");
	if (K("padding"))
		return tp_parse_padding(p, inst);
	if (K("slice"))
		return tp_parse_slice(p, inst);
	if (K("dynamic_slice_sizes"))
		return tp_parse_ilist(p, &inst->dynamic_slice_sizes);
	if (K("direction")) {
		static const char *const n[] = { "EQ", "NE", "LT", "LE", "GT", "GE" };
		int e = 0;
		if (!parse_enum(p, n, 6, NCC_CMP_EQ, &e, "comparison direction (EQ, NE, LT, LE, GT, GE)"))
			return false;
		inst->cmp_dir = (ncc_cmp_dir_t)e;
		return true;
	}
	if (K("type")) {
		static const char *const n[] = { "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" };
		int e = 0;
		if (!parse_enum(p, n, 4, NCC_CMPT_FLOAT, &e,
				"comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)"))
			return false;
		inst->cmp_type = (ncc_cmp_type_t)e;
		return true;
	}
	if (K("operand_precision"))
		return parse_precision(p, inst);
	if (K("offset_dims") || K("collapsed_slice_dims") || K("start_index_map") ||
	    K("operand_batching_dims") || K("start_indices_batching_dims") || K("slice_sizes")) {
		ncc_gather_dnums_t *g = gather_of(p, inst);
		if (!g)
			return false;
		return tp_parse_ilist(p, K("offset_dims") ? &g->offset_dims :
				      K("collapsed_slice_dims") ? &g->collapsed_slice_dims :
				      K("start_index_map") ? &g->start_index_map :
				      K("operand_batching_dims") ? &g->operand_batching_dims :
				      K("start_indices_batching_dims") ? &g->start_indices_batching_dims :
				      &g->slice_sizes);
	}
	if (K("update_window_dims") || K("inserted_window_dims") ||
	    K("scatter_dims_to_operand_dims") || K("input_batching_dims") ||
	    K("scatter_indices_batching_dims")) {
		ncc_scatter_dnums_t *s = scatter_of(p, inst);
		if (!s)
			return false;
		return tp_parse_ilist(p, K("update_window_dims") ? &s->update_window_dims :
				      K("inserted_window_dims") ? &s->inserted_window_dims :
				      K("scatter_dims_to_operand_dims") ? &s->scatter_dims_to_operand_dims :
				      K("input_batching_dims") ? &s->input_batching_dims :
				      &s->scatter_indices_batching_dims);
	}
	if (K("index_vector_dim")) {
		int64_t v;
		if (!tp_parse_nonneg(p, &v, "index_vector_dim"))
			return false;
		if (inst->op == NCC_OP_SCATTER) {
			ncc_scatter_dnums_t *s = scatter_of(p, inst);
			if (!s)
				return false;
			s->index_vector_dim = v;
		} else {
			ncc_gather_dnums_t *g = gather_of(p, inst);
			if (!g)
				return false;
			g->index_vector_dim = v;
		}
		return true;
	}
	if (K("indices_are_sorted"))
		return tp_parse_bool(p, &inst->indices_are_sorted);
	if (K("unique_indices"))
		return tp_parse_bool(p, &inst->unique_indices);
	if (K("custom_call_target"))
		return tp_parse_string(p, &inst->custom_call_target, "string for custom_call_target");
	if (K("api_version")) {
		if (p->tok.kind != NCC_TOK_IDENT)
			return tp_expected(p, "api version (API_VERSION_...)");
		inst->api_version = tp_tok_dup(p, &p->tok);
		tp_next(p);
		return inst->api_version != NULL;
	}
	if (K("custom_call_has_side_effect"))
		return tp_parse_bool(p, &inst->custom_call_has_side_effect);
	if (K("backend_config")) {
		if (p->tok.kind == NCC_TOK_STRING)
			return tp_parse_string(p, &inst->backend_config, "backend_config");
		if (p->tok.kind == NCC_TOK_LBRACE)
			return tp_capture_raw(p, &inst->backend_config);
		return tp_expected(p, "string or {...} for backend_config");
	}
	if (K("replica_groups"))
		return tp_parse_replica_groups(p, &inst->replica_groups);
	if (K("channel_id"))
		return tp_parse_nonneg(p, &inst->channel_id, "channel id");
	if (K("use_global_device_ids"))
		return tp_parse_bool(p, &inst->use_global_device_ids);
	if (K("constrain_layout"))
		return tp_parse_bool(p, &inst->constrain_layout);
	if (K("source_target_pairs"))
		return tp_parse_pairs(p, inst);
	if (K("distribution")) {
		static const char *const n[] = { "rng_uniform", "rng_normal" };
		int e = 0;
		if (!parse_enum(p, n, 2, NCC_RNG_UNIFORM, &e, "rng_uniform or rng_normal"))
			return false;
		inst->distribution = (ncc_rng_dist_t)e;
		return true;
	}
	if (K("algorithm") && inst->op != NCC_OP_RNG_BIT_GENERATOR && inst->op != NCC_OP_RNG)
		/* dot/convolution algorithm=dot_bf16_bf16_f32 and the like: kept verbatim */
		return tp_add_raw_attr(p, &inst->raw_attrs, &inst->nraw_attrs, &key);
	if (K("algorithm")) {
		static const char *const n[] = { "rng_default", "rng_three_fry", "rng_philox" };
		int e = 0;
		if (!parse_enum(p, n, 3, NCC_RNG_DEFAULT, &e,
				"rng algorithm (rng_default, rng_three_fry, rng_philox)"))
			return false;
		inst->rng_algorithm = (ncc_rng_alg_t)e;
		return true;
	}
	if (K("epsilon")) {
		inst->has_epsilon = true;
		return tp_parse_double(p, &inst->epsilon, "number for epsilon");
	}
	if (K("feature_index"))
		return tp_parse_nonneg(p, &inst->feature_index, "feature index");
	if (K("is_stable"))
		return tp_parse_bool(p, &inst->is_stable);
	if (K("frontend_attributes"))
		return parse_frontend_attrs(p, inst);
	if (K("sharding"))
		return tp_capture_raw(p, &inst->sharding);
	if (K("control-predecessors"))
		return parse_control_preds(p, inst);
	if (K("kind")) {
		if (p->tok.kind != NCC_TOK_IDENT)
			return tp_expected(p, "fusion kind (kLoop, kInput, kOutput, kCustom)");
		inst->fusion_kind = tp_tok_dup(p, &p->tok);
		tp_next(p);
		return inst->fusion_kind != NULL;
	}
	if (K("fft_type") || K("transpose_a")) {
		if (p->tok.kind != NCC_TOK_IDENT)
			return tp_expected(p, "identifier");
		const char *v = tp_tok_dup(p, &p->tok);
		tp_next(p);
		if (K("fft_type"))
			inst->fft_type = v;
		else
			inst->transpose_a = v;
		return v != NULL;
	}
	if (K("fft_length"))
		return tp_parse_ilist(p, &inst->fft_length);
	if (K("exponent_bits"))
		return tp_parse_nonneg(p, &inst->exponent_bits, "exponent_bits");
	if (K("mantissa_bits"))
		return tp_parse_nonneg(p, &inst->mantissa_bits, "mantissa_bits");
	if (K("left_side"))
		return tp_parse_bool(p, &inst->left_side);
	if (K("lower"))
		return tp_parse_bool(p, &inst->lower);
	if (K("unit_diagonal"))
		return tp_parse_bool(p, &inst->unit_diagonal);
	if (K("k"))
		return tp_parse_nonneg(p, &inst->topk_k, "k");
	if (K("largest"))
		return tp_parse_bool(p, &inst->topk_largest);
#undef K
	for (size_t i = 0; i < sizeof(raw_attr_names) / sizeof(raw_attr_names[0]); i++)
		if (tp_tok_is(&key, raw_attr_names[i]))
			return tp_add_raw_attr(p, &inst->raw_attrs, &inst->nraw_attrs, &key);
	/* an opcode we do not know may carry attributes we do not know: keep them, so
	 * the module still parses and analyze can report the opcode */
	if (inst->op == NCC_OP_UNKNOWN)
		return tp_add_raw_attr(p, &inst->raw_attrs, &inst->nraw_attrs, &key);
	return tp_fail_at(p, NCC_ERR_PARSE, key.line, key.col, "unknown attribute '%.*s' on '%s'",
		          (int)(key.len > 60 ? 60 : key.len), key.text, inst->name);
}

