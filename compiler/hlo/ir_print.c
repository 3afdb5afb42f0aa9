/* ncc IR printer: modules, computations and instructions as HLO text the parser reads back (XLA's spelling). */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_lexer.h"
#include "ir_internal.h"

/* ---------------------------------------------------------------- printing */

void ncc__strbuf_vprintf(ncc_strbuf_t *b, size_t first_cap, const char *fmt, va_list ap)
{
	if (b->oom)
		return;
	for (;;) {
		va_list aq;
		va_copy(aq, ap);
		size_t room = b->cap - b->len;
		int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, aq);
		va_end(aq);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : first_cap;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *ns = ncc__realloc(b->s, cap);
		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
}

/* The printer's output buffer. */
typedef ncc_strbuf_t strbuf_t;

static void sbp(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbp(strbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ncc__strbuf_vprintf(b, 4096, fmt, ap);
	va_end(ap);
}

static void print_shape(strbuf_t *b, const ncc_shape_t *s)
{
	char small[512];
	int n = ncc_shape_to_string(s, true, small, sizeof(small));
	if ((size_t)n < sizeof(small)) {
		sbp(b, "%s", small);
		return;
	}
	char *big = ncc__malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	ncc_shape_to_string(s, true, big, (size_t)n + 1);
	sbp(b, "%s", big);
	free(big);
}

static void print_string(strbuf_t *b, const char *s)
{
	sbp(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			sbp(b, "\\%c", c);
		else if (c == '\n')
			sbp(b, "\\n");
		else if (c == '\t')
			sbp(b, "\\t");
		else if (c == '\r')
			sbp(b, "\\r");
		else
			sbp(b, "%c", c);
	}
	sbp(b, "\"");
}

/* True when s lexes as one identifier. */
static bool is_ident_text(const char *s)
{
	ncc_lexer_t lx;
	size_t n = strlen(s);
	ncc_lex_init(&lx, s, n);
	ncc_token_t t = ncc_lex_next(&lx);
	return t.kind == NCC_TOK_IDENT && t.pos == 0 && t.len == n;
}

/* True when s is one balanced {...} group the parser captures whole: a
 * backend_config like "{abc" or "{a}b" must be printed as a quoted string. */
static bool is_balanced_text(const char *s)
{
	ncc_lexer_t lx;
	size_t n = strlen(s);
	ncc_lex_init(&lx, s, n);
	return ncc_lex_skip_balanced(&lx, NCC_PARSE_MAX_DEPTH) && lx.pos == n;
}

static void print_ilist(strbuf_t *b, const ncc_ilist_t *l)
{
	sbp(b, "{");
	for (int32_t i = 0; i < l->n; i++)
		sbp(b, i ? ",%lld" : "%lld", (long long)l->v[i]);
	sbp(b, "}");
}

/* Shortest decimal that reads back to the same value of type t (F64 for doubles),
 * like XLA's own printer: "1e-05", not "9.99999975e-06". */
static void print_float_t(strbuf_t *b, double d, ncc_etype_t t)
{
	if (isnan(d)) {
		sbp(b, signbit(d) ? "-nan" : "nan");
		return;
	}
	if (isinf(d)) {
		sbp(b, d < 0 ? "-inf" : "inf");
		return;
	}
	char tb[64];
	if (d == floor(d) && fabs(d) < 1e15) {
		/* integral values as integers ("-30000", not "-3e+04"), as XLA prints them */
		sbp(b, "%s%.0f", signbit(d) && d == 0 ? "-" : "", fabs(d) * (d < 0 ? -1 : 1));
		return;
	}
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(tb, sizeof(tb), "%.*g", digits, d);
		bool same;
		if (t == NCC_F32 || t == NCC_C64)
			same = strtof(tb, NULL) == (float)d;
		else if (t == NCC_F64 || t == NCC_C128)
			same = strtod(tb, NULL) == d;
		else
			same = ncc__minifloat_encode(t, strtod(tb, NULL)) == ncc__minifloat_encode(t, d);
		if (same)
			break;
	}
	sbp(b, "%s", tb);
}

static void print_float(strbuf_t *b, double d, int digits)
{
	print_float_t(b, d, digits > 9 ? NCC_F64 : NCC_F32);
}

static void print_elem(strbuf_t *b, const ncc_literal_t *lit, int64_t i, ncc_etype_t t)
{
	size_t es = ncc_etype_storage_bytes(t);
	const uint8_t *p = lit->data + (size_t)i * es;
	if (t == NCC_PRED) {
		sbp(b, p[0] ? "true" : "false");
	} else if (ncc_etype_is_signed_int(t)) {
		sbp(b, "%lld", (long long)ncc_literal_get_i64(lit, i));
	} else if (ncc_etype_is_unsigned_int(t)) {
		sbp(b, "%llu", (unsigned long long)ncc__load_uint(p, es));
	} else if (t == NCC_C64 || t == NCC_C128) {
		/* (re, im), each part printed as its float type */
		ncc_etype_t pt = t == NCC_C64 ? NCC_F32 : NCC_F64;
		double part[2];
		for (int k = 0; k < 2; k++) {
			if (pt == NCC_F32) {
				float f;
				memcpy(&f, p + 4 * k, 4);
				part[k] = f;
			} else {
				memcpy(&part[k], p + 8 * k, 8);
			}
		}
		sbp(b, "(");
		print_float_t(b, part[0], pt);
		sbp(b, ", ");
		print_float_t(b, part[1], pt);
		sbp(b, ")");
	} else {
		print_float_t(b, ncc_literal_get_f64(lit, i), t);
	}
}

static void print_lit_dim(strbuf_t *b, const ncc_literal_t *lit, const ncc_shape_t *s, int dim,
			  int64_t *idx)
{
	sbp(b, "{");
	for (int64_t k = 0; k < s->dims[dim]; k++) {
		if (k)
			sbp(b, ", ");
		if (dim + 1 < s->rank)
			print_lit_dim(b, lit, s, dim + 1, idx);
		else
			print_elem(b, lit, (*idx)++, s->etype);
	}
	sbp(b, "}");
}

/* Prints a (sub)literal whose data starts at byte *off of lit (the leaves of a tuple
 * literal are stored back to back, each with its own element size). */
static void print_literal_rec(strbuf_t *b, const ncc_literal_t *lit, const ncc_shape_t *s,
			      int64_t *off, int depth)
{
	if (s->etype == NCC_TUPLE) {
		sbp(b, "(");
		for (int32_t i = 0; i < s->nelems && depth < 64; i++) {
			if (i)
				sbp(b, ", ");
			print_literal_rec(b, lit, &s->elems[i], off, depth + 1);
		}
		sbp(b, ")");
		return;
	}
	if (lit->elided || !lit->data) {
		if (lit->elided || ncc_shape_elements(s) != 0 || s->rank == 0) {
			if (!lit->elided && s->rank == 0)
				sbp(b, "0");
			else
				sbp(b, "{...}");
			return;
		}
	}
	/* leaves of a tuple literal share one buffer: view this leaf's part */
	ncc_literal_t view = *lit;
	size_t es = ncc_etype_storage_bytes(s->etype);
	int64_t n = ncc_shape_elements(s);
	view.etype = s->etype;
	if (n < 0 || (uint64_t)*off + (uint64_t)n * es > lit->nbytes) {
		sbp(b, "{...}"); /* not in the buffer: never read past it */
		return;
	}
	view.data = lit->data + *off;
	view.count = n;
	*off += n * (int64_t)es;
	if (s->rank == 0) {
		if (view.data)
			print_elem(b, &view, 0, s->etype);
		return;
	}
	int64_t idx = 0;
	print_lit_dim(b, &view, s, 0, &idx);
}

static void print_comp_ref(strbuf_t *b, const ncc_comp_t *c)
{
	sbp(b, "%%%s", c ? c->name : "<null>");
}

static void print_comp_list(strbuf_t *b, ncc_comp_t *const *cs, int32_t n)
{
	sbp(b, "{");
	for (int32_t i = 0; i < n; i++) {
		if (i)
			sbp(b, ", ");
		print_comp_ref(b, cs[i]);
	}
	sbp(b, "}");
}

/* ", name=%comp" when c is set. */
static void print_comp_attr(strbuf_t *b, const char *name, const ncc_comp_t *c)
{
	if (!c)
		return;
	sbp(b, ", %s=", name);
	print_comp_ref(b, c);
}

/* ", name={...}" when l is present. */
static void print_ilist_attr(strbuf_t *b, const char *name, const ncc_ilist_t *l)
{
	if (!l->present)
		return;
	sbp(b, ", %s=", name);
	print_ilist(b, l);
}

/* Field f of window={...} (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)
 * in dim d as text into buf; true when it is the field's default (size has none). */
static bool window_field(const ncc_window_dim_t *d, int f, char *buf, size_t n)
{
	switch (f) {
	case 0:
		snprintf(buf, n, "%lld", (long long)d->size);
		return false;
	case 1:
		snprintf(buf, n, "%lld", (long long)d->stride);
		return d->stride == 1;
	case 2:
		snprintf(buf, n, "%lld_%lld", (long long)d->pad_lo, (long long)d->pad_hi);
		return !d->pad_lo && !d->pad_hi;
	case 3:
		snprintf(buf, n, "%lld", (long long)d->lhs_dilation);
		return d->lhs_dilation == 1;
	case 4:
		snprintf(buf, n, "%lld", (long long)d->rhs_dilation);
		return d->rhs_dilation == 1;
	default:
		snprintf(buf, n, "%d", d->reversal ? 1 : 0);
		return !d->reversal;
	}
}

/* The inside of window={...}: size=3x3, then each other field unless it is the
 * default in every dim. */
static void print_window(strbuf_t *b, const ncc_window_t *w)
{
	static const char *const key[] = { "size", "stride", "pad", "lhs_dilate", "rhs_dilate",
					   "rhs_reversal" };
	char v[48];
	if (!w->n)
		return;
	for (int f = 0; f < 6; f++) {
		bool all_default = true;
		for (int32_t i = 0; i < w->n; i++)
			all_default &= window_field(&w->dims[i], f, v, sizeof(v));
		if (all_default)
			continue;
		sbp(b, "%s%s=", f ? " " : "", key[f]);
		for (int32_t i = 0; i < w->n; i++) {
			window_field(&w->dims[i], f, v, sizeof(v));
			sbp(b, "%s%s", i ? "x" : "", v);
		}
	}
}

static const char *cmp_dir_name(ncc_cmp_dir_t d)
{
	static const char *const n[] = { "", "EQ", "NE", "LT", "LE", "GT", "GE" };
	return (unsigned)d < 7 ? n[d] : "";
}

static void print_inst(strbuf_t *b, const ncc_inst_t *in)
{
	if (in->parent && in->parent->root == in)
		sbp(b, "ROOT ");
	sbp(b, "%%%s = ", in->name);
	print_shape(b, &in->shape);
	sbp(b, " %s(", in->op == NCC_OP_UNKNOWN && in->opname ? in->opname : ncc_opcode_name(in->op));
	if (in->op == NCC_OP_PARAMETER) {
		sbp(b, "%lld", (long long)in->parameter_number);
	} else if (in->op == NCC_OP_CONSTANT) {
		int64_t off = 0;
		print_literal_rec(b, &in->literal, &in->shape, &off, 0);
	} else {
		for (int32_t i = 0; i < in->noperands; i++) {
			if (i)
				sbp(b, ", ");
			if (i && i % 5 == 0)
				sbp(b, "/*index=%d*/", (int)i);
			print_shape(b, &in->operands[i]->shape);
			sbp(b, " %%%s", in->operands[i]->name);
		}
	}
	sbp(b, ")");
	print_ilist_attr(b, "dimensions", &in->dimensions);
	if (in->op == NCC_OP_GET_TUPLE_ELEMENT)
		sbp(b, ", index=%lld", (long long)in->tuple_index);
	if (in->op == NCC_OP_IOTA)
		sbp(b, ", iota_dimension=%lld", (long long)in->iota_dimension);
	if (in->window) {
		const ncc_window_t *w = in->window;
		sbp(b, ", window={");
		print_window(b, w);
		sbp(b, "}");
	}
	if (in->conv) {
		const ncc_conv_dnums_t *c = in->conv;
		int n = c->nspatial + 2;
		char lab[3][NCC_MAX_RANK + 1];
		for (int k = 0; k < 3; k++) {
			memset(lab[k], '?', (size_t)n);
			lab[k][n] = 0;
		}
		if (c->in_batch < n) lab[0][c->in_batch] = 'b';
		if (c->in_feature < n) lab[0][c->in_feature] = 'f';
		if (c->k_in_feature < n) lab[1][c->k_in_feature] = 'i';
		if (c->k_out_feature < n) lab[1][c->k_out_feature] = 'o';
		if (c->out_batch < n) lab[2][c->out_batch] = 'b';
		if (c->out_feature < n) lab[2][c->out_feature] = 'f';
		for (int i = 0; i < c->nspatial; i++) {
			if (c->in_spatial[i] < n) lab[0][c->in_spatial[i]] = (char)('0' + i);
			if (c->k_spatial[i] < n) lab[1][c->k_spatial[i]] = (char)('0' + i);
			if (c->out_spatial[i] < n) lab[2][c->out_spatial[i]] = (char)('0' + i);
		}
		sbp(b, ", dim_labels=%s_%s->%s", lab[0], lab[1], lab[2]);
	}
	if (in->feature_group_count != 1)
		sbp(b, ", feature_group_count=%lld", (long long)in->feature_group_count);
	if (in->batch_group_count != 1)
		sbp(b, ", batch_group_count=%lld", (long long)in->batch_group_count);
	if (in->padding) {
		sbp(b, ", padding=");
		for (int32_t i = 0; i < in->padding->n; i++) {
			const ncc_pad_dim_t *d = &in->padding->dims[i];
			sbp(b, "%s%lld_%lld", i ? "x" : "", (long long)d->lo, (long long)d->hi);
			if (d->interior)
				sbp(b, "_%lld", (long long)d->interior);
		}
	}
	if (in->slice) {
		sbp(b, ", slice={");
		for (int32_t i = 0; i < in->slice->n; i++) {
			const ncc_slice_dim_t *d = &in->slice->dims[i];
			sbp(b, "%s[%lld:%lld", i ? ", " : "", (long long)d->start, (long long)d->limit);
			if (d->stride != 1)
				sbp(b, ":%lld", (long long)d->stride);
			sbp(b, "]");
		}
		sbp(b, "}");
	}
	print_ilist_attr(b, "dynamic_slice_sizes", &in->dynamic_slice_sizes);
	if (in->dot) {
		const ncc_dot_dnums_t *d = in->dot;
		const ncc_ilist_t *l[4] = { &d->lhs_batch, &d->lhs_contracting, &d->rhs_batch,
					    &d->rhs_contracting };
		const char *nm[4] = { "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
				      "rhs_contracting_dims" };
		for (int i = 0; i < 4; i++)
			print_ilist_attr(b, nm[i], l[i]);
	}
	if (in->cmp_dir)
		sbp(b, ", direction=%s", cmp_dir_name(in->cmp_dir));
	if (in->cmp_type) {
		static const char *const n[] = { "", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" };
		sbp(b, ", type=%s", n[in->cmp_type]);
	}
	if (in->nprecision) {
		static const char *const n[] = { "default", "high", "highest" };
		sbp(b, ", operand_precision={");
		for (int32_t i = 0; i < in->nprecision; i++)
			sbp(b, "%s%s", i ? "," : "", n[in->operand_precision[i]]);
		sbp(b, "}");
	}
	if (in->gather) {
		const ncc_gather_dnums_t *g = in->gather;
		const ncc_ilist_t *l[6] = { &g->offset_dims, &g->collapsed_slice_dims,
					    &g->start_index_map, &g->operand_batching_dims,
					    &g->start_indices_batching_dims, &g->slice_sizes };
		const char *nm[6] = { "offset_dims", "collapsed_slice_dims", "start_index_map",
				      "operand_batching_dims", "start_indices_batching_dims",
				      "slice_sizes" };
		for (int i = 0; i < 6; i++) {
			if (i == 5)
				sbp(b, ", index_vector_dim=%lld", (long long)g->index_vector_dim);
			print_ilist_attr(b, nm[i], l[i]);
		}
	}
	if (in->scatter) {
		const ncc_scatter_dnums_t *s = in->scatter;
		const ncc_ilist_t *l[5] = { &s->update_window_dims, &s->inserted_window_dims,
					    &s->scatter_dims_to_operand_dims, &s->input_batching_dims,
					    &s->scatter_indices_batching_dims };
		const char *nm[5] = { "update_window_dims", "inserted_window_dims",
				      "scatter_dims_to_operand_dims", "input_batching_dims",
				      "scatter_indices_batching_dims" };
		for (int i = 0; i < 5; i++)
			print_ilist_attr(b, nm[i], l[i]);
		sbp(b, ", index_vector_dim=%lld", (long long)s->index_vector_dim);
	}
	if (in->indices_are_sorted)
		sbp(b, ", indices_are_sorted=true");
	if (in->unique_indices)
		sbp(b, ", unique_indices=true");
	print_comp_attr(b, "to_apply", in->to_apply);
	print_comp_attr(b, "condition", in->condition);
	print_comp_attr(b, "body", in->body);
	print_comp_attr(b, "select", in->select);
	print_comp_attr(b, "scatter", in->scatter_comp);
	if (in->ncalled && in->op != NCC_OP_CUSTOM_CALL) {
		sbp(b, ", calls=");
		print_comp_list(b, in->called, in->ncalled);
	} else {
		print_comp_attr(b, "calls", in->calls);
	}
	if (in->ncalled && in->op == NCC_OP_CUSTOM_CALL) {
		sbp(b, ", called_computations=");
		print_comp_list(b, in->called, in->ncalled);
	}
	if (in->nbranches) {
		if (in->branches_are_pred && in->nbranches == 2) {
			sbp(b, ", true_computation=");
			print_comp_ref(b, in->branches[0]);
			sbp(b, ", false_computation=");
			print_comp_ref(b, in->branches[1]);
		} else {
			sbp(b, ", branch_computations=");
			print_comp_list(b, in->branches, in->nbranches);
		}
	}
	if (in->fusion_kind)
		sbp(b, ", kind=%s", in->fusion_kind);
	if (in->custom_call_target) {
		sbp(b, ", custom_call_target=");
		print_string(b, in->custom_call_target);
	}
	if (in->custom_call_has_side_effect)
		sbp(b, ", custom_call_has_side_effect=true");
	if (in->api_version)
		sbp(b, ", api_version=%s", in->api_version);
	if (in->replica_groups.present) {
		const ncc_replica_groups_t *g = &in->replica_groups;
		if (g->iota_text) {
			sbp(b, ", replica_groups=%s", g->iota_text);
		} else {
			sbp(b, ", replica_groups={");
			int64_t k = 0;
			for (int32_t i = 0; i < g->ngroups; i++) {
				sbp(b, "%s{", i ? "," : "");
				for (int32_t j = 0; j < g->group_sizes[i]; j++)
					sbp(b, j ? ",%lld" : "%lld", (long long)g->ids[k++]);
				sbp(b, "}");
			}
			sbp(b, "}");
		}
	}
	if (in->channel_id)
		sbp(b, ", channel_id=%lld", (long long)in->channel_id);
	if (in->use_global_device_ids)
		sbp(b, ", use_global_device_ids=true");
	if (in->constrain_layout)
		sbp(b, ", constrain_layout=true");
	if (in->op == NCC_OP_COLLECTIVE_PERMUTE || in->op == NCC_OP_COLLECTIVE_PERMUTE_START ||
	    in->npairs) {
		sbp(b, ", source_target_pairs={");
		for (int32_t i = 0; i < in->npairs; i++)
			sbp(b, "%s{%lld,%lld}", i ? "," : "", (long long)in->pairs[2 * i],
			    (long long)in->pairs[2 * i + 1]);
		sbp(b, "}");
	}
	if (in->distribution)
		sbp(b, ", distribution=%s", in->distribution == NCC_RNG_UNIFORM ? "rng_uniform" : "rng_normal");
	if (in->rng_algorithm) {
		static const char *const n[] = { "", "rng_default", "rng_three_fry", "rng_philox" };
		sbp(b, ", algorithm=%s", n[in->rng_algorithm]);
	}
	if (in->has_epsilon) {
		sbp(b, ", epsilon=");
		print_float(b, in->epsilon, 17);
	}
	if (in->op == NCC_OP_BATCH_NORM_TRAINING || in->op == NCC_OP_BATCH_NORM_INFERENCE ||
	    in->op == NCC_OP_BATCH_NORM_GRAD || in->feature_index)
		sbp(b, ", feature_index=%lld", (long long)in->feature_index);
	if (in->is_stable)
		sbp(b, ", is_stable=true");
	if (in->fft_type)
		sbp(b, ", fft_type=%s", in->fft_type);
	print_ilist_attr(b, "fft_length", &in->fft_length);
	if (in->op == NCC_OP_REDUCE_PRECISION)
		sbp(b, ", exponent_bits=%lld, mantissa_bits=%lld", (long long)in->exponent_bits,
		    (long long)in->mantissa_bits);
	if (in->op == NCC_OP_TRIANGULAR_SOLVE)
		sbp(b, ", left_side=%s, lower=%s, unit_diagonal=%s", in->left_side ? "true" : "false",
		    in->lower ? "true" : "false", in->unit_diagonal ? "true" : "false");
	else if (in->lower)
		sbp(b, ", lower=true");
	if (in->transpose_a)
		sbp(b, ", transpose_a=%s", in->transpose_a);
	if (in->op == NCC_OP_TOPK)
		sbp(b, ", k=%lld, largest=%s", (long long)in->topk_k, in->topk_largest ? "true" : "false");
	if (in->sharding)
		sbp(b, ", sharding=%s", in->sharding);
	if (in->ncontrol_preds) {
		sbp(b, ", control-predecessors={");
		for (int32_t i = 0; i < in->ncontrol_preds; i++)
			sbp(b, "%s%%%s", i ? ", " : "", in->control_preds[i]->name);
		sbp(b, "}");
	}
	for (int32_t i = 0; i < in->nraw_attrs; i++)
		sbp(b, ", %s=%s", in->raw_attrs[i].key, in->raw_attrs[i].text);
	if (in->nfrontend_attrs) {
		sbp(b, ", frontend_attributes={");
		for (int32_t i = 0; i < in->nfrontend_attrs; i++) {
			/* a key the lexer would not read as one identifier goes in quotes
			 * (the parser takes both; keys from protos can be anything) */
			sbp(b, "%s", i ? "," : "");
			if (is_ident_text(in->frontend_attrs[i].key))
				sbp(b, "%s", in->frontend_attrs[i].key);
			else
				print_string(b, in->frontend_attrs[i].key);
			sbp(b, "=");
			print_string(b, in->frontend_attrs[i].value);
		}
		sbp(b, "}");
	}
	const ncc_metadata_t *md = &in->metadata;
	if (md->op_type || md->op_name || md->source_file || md->source_line) {
		sbp(b, ", metadata={");
		const char *sep = "";
		if (md->op_type) {
			sbp(b, "op_type=");
			print_string(b, md->op_type);
			sep = " ";
		}
		if (md->op_name) {
			sbp(b, "%sop_name=", sep);
			print_string(b, md->op_name);
			sep = " ";
		}
		if (md->source_file) {
			sbp(b, "%ssource_file=", sep);
			print_string(b, md->source_file);
			sep = " ";
		}
		if (md->source_line)
			sbp(b, "%ssource_line=%lld", sep, (long long)md->source_line);
		sbp(b, "}");
	}
	if (in->backend_config) {
		sbp(b, ", backend_config=");
		if (in->backend_config[0] == '{' && is_balanced_text(in->backend_config))
			sbp(b, "%s", in->backend_config);
		else
			print_string(b, in->backend_config);
	}
}

static void print_comp(strbuf_t *b, const ncc_comp_t *c)
{
	sbp(b, "%s%%%s ", c->is_entry ? "ENTRY " : "", c->name);
	/* signature: as parsed, or derived from the parameters and root */
	sbp(b, "(");
	if (c->nsig_params || c->has_sig_result) {
		for (int32_t i = 0; i < c->nsig_params; i++) {
			sbp(b, "%s%s: ", i ? ", " : "", c->sig_param_names[i]);
			print_shape(b, &c->sig_param_shapes[i]);
		}
		sbp(b, ") -> ");
		print_shape(b, &c->sig_result);
	} else {
		for (int32_t i = 0; i < c->nparams; i++) {
			sbp(b, "%s%s: ", i ? ", " : "", c->params[i] ? c->params[i]->name : "missing");
			if (c->params[i])
				print_shape(b, &c->params[i]->shape);
		}
		sbp(b, ") -> ");
		if (c->root)
			print_shape(b, &c->root->shape);
	}
	sbp(b, " {\n");
	for (int32_t i = 0; i < c->ninsts; i++) {
		sbp(b, "  ");
		print_inst(b, c->insts[i]);
		sbp(b, "\n");
	}
	sbp(b, "}\n");
}

static void print_module(strbuf_t *b, const ncc_module_t *m)
{
	sbp(b, "HloModule %s", m->name);
	if (m->is_scheduled)
		sbp(b, ", is_scheduled=true");
	if (m->naliases) {
		sbp(b, ", input_output_alias={ ");
		for (int32_t i = 0; i < m->naliases; i++) {
			const ncc_alias_t *a = &m->aliases[i];
			if (i)
				sbp(b, ", ");
			print_ilist(b, &a->output_index);
			sbp(b, ": (%lld, ", (long long)a->param_number);
			print_ilist(b, &a->param_index);
			if (a->kind == NCC_ALIAS_MUST)
				sbp(b, ", must-alias");
			else if (a->kind == NCC_ALIAS_MAY)
				sbp(b, ", may-alias");
			sbp(b, ")");
		}
		sbp(b, " }");
	}
	if (m->ndonors) {
		sbp(b, ", buffer_donor={ ");
		for (int32_t i = 0; i < m->ndonors; i++) {
			sbp(b, i ? ", (%lld, " : "(%lld, ", (long long)m->donors[i].param_number);
			print_ilist(b, &m->donors[i].param_index);
			sbp(b, ")");
		}
		sbp(b, " }");
	}
	if (m->entry_computation_layout)
		sbp(b, ", entry_computation_layout={%s}", m->entry_computation_layout);
	for (int32_t i = 0; i < m->nraw_attrs; i++)
		sbp(b, ", %s=%s", m->raw_attrs[i].key, m->raw_attrs[i].text);
	sbp(b, "\n");
	for (int32_t i = 0; i < m->ncomps; i++) {
		sbp(b, "\n");
		print_comp(b, m->comps[i]);
	}
}

/* The printed text of b as the caller's string ("" for none), or NCC_ERR_NOMEM. */
static ncc_status_t finish_text(strbuf_t *b, char **out_text)
{
	if (b->oom) {
		free(b->s);
		return NCC_ERR_NOMEM;
	}
	*out_text = b->s ? b->s : ncc__calloc(1, 1);
	return *out_text ? NCC_OK : NCC_ERR_NOMEM;
}

ncc_status_t ncc_module_to_string(const ncc_module_t *m, char **out_text)
{
	*out_text = NULL;
	strbuf_t b = { 0 };
	print_module(&b, m);
	return finish_text(&b, out_text);
}

ncc_status_t ncc_module_print(const ncc_module_t *m, FILE *f)
{
	char *s;
	ncc_status_t st = ncc_module_to_string(m, &s);
	if (st)
		return st;
	size_t n = strlen(s);
	bool ok = fwrite(s, 1, n, f) == n;
	free(s);
	return ok ? NCC_OK : NCC_ERR_IO;
}

ncc_status_t ncc_inst_to_string(const ncc_inst_t *inst, char **out_text)
{
	*out_text = NULL;
	strbuf_t b = { 0 };
	print_inst(&b, inst);
	return finish_text(&b, out_text);
}

