/* ncc HloModuleProto decoder: an HloInstructionProto's attribute fields -> the IR attributes the text parser sets for XLA's printed form of the same instruction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_proto_internal.h"

/* ---------------------------------------------------------------- schema */

static const hp_fdesc_t metadata_fields[] = {
	{ HPF_META_OP_TYPE, "op_type", HP_K_LEN },
	{ HPF_META_OP_NAME, "op_name", HP_K_LEN },
	{ HPF_META_SOURCE_FILE, "source_file", HP_K_LEN },
	{ HPF_META_SOURCE_LINE, "source_line", HP_K_VARINT },
};
static const hp_fdesc_t frontend_fields[] = {
	{ HPF_FRONTEND_MAP, "map", HP_K_LEN },
};
static const hp_fdesc_t map_entry_fields[] = {
	{ HPF_MAP_KEY, "key", HP_K_LEN },
	{ HPF_MAP_VALUE, "value", HP_K_LEN },
};
static const hp_fdesc_t precision_fields[] = {
	{ HPF_PRECISION_OPERAND_PRECISION, "operand_precision", HP_K_REP_VARINT },
	{ HPF_PRECISION_ALGORITHM, "algorithm", HP_K_VARINT },
};
static const hp_fdesc_t trsm_fields[] = {
	{ HPF_TRSM_LEFT_SIDE, "left_side", HP_K_VARINT },
	{ HPF_TRSM_LOWER, "lower", HP_K_VARINT },
	{ HPF_TRSM_UNIT_DIAGONAL, "unit_diagonal", HP_K_VARINT },
	{ HPF_TRSM_TRANSPOSE_A, "transpose_a", HP_K_VARINT },
};
static const hp_fdesc_t cholesky_fields[] = {
	{ HPF_CHOLESKY_LOWER, "lower", HP_K_VARINT },
};
static const hp_fdesc_t param_replication_fields[] = {
	{ HPF_PARAM_REPLICATION_LEAVES, "replicated_at_leaf_buffers", HP_K_REP_VARINT },
};
static const hp_fdesc_t ooa_fields[] = {
	{ HPF_OOA_OUTPUT_SHAPE_INDEX, "output_shape_index", HP_K_REP_VARINT },
	{ HPF_OOA_OPERAND_INDEX, "operand_index", HP_K_VARINT },
	{ HPF_OOA_OPERAND_SHAPE_INDEX, "operand_shape_index", HP_K_REP_VARINT },
};


static bool add_raw(hp_ctx_t *c, ncc_inst_t *in, const char *key, const char *text)
{
	int32_t n = in->nraw_attrs;
	ncc_raw_attr_t *na = ncc_alloc(c->m, sizeof(*na) * (size_t)(n + 1));
	if (!na)
		return hp_nomem(c);
	if (n)
		memcpy(na, in->raw_attrs, sizeof(*na) * (size_t)n);
	na[n].key = key;
	na[n].text = text;
	in->raw_attrs = na;
	in->nraw_attrs = n + 1;
	return true;
}

static bool is_ident(const char *s)
{
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return false;
	return hp_valid_name(s, strlen(s));
}

/* -------------------------------------------------------------- metadata */

static bool decode_metadata(hp_ctx_t *c, ncc_pb_reader_t r, ncc_metadata_t *md)
{
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, HP_MSG(metadata_fields));
	while (hp_iter_next(c, &it, &f)) {
		const char *s = NULL;
		switch (f.number) {
		case HPF_META_OP_TYPE:
		case HPF_META_OP_NAME:
		case HPF_META_SOURCE_FILE:
			if (!hp_string(c, &f, &s))
				return false;
			/* proto3 strings are empty when unset; the text leaves them out */
			if (!s[0])
				s = NULL;
			if (f.number == HPF_META_OP_TYPE)
				md->op_type = s;
			else if (f.number == HPF_META_OP_NAME)
				md->op_name = s;
			else
				md->source_file = s;
			break;
		case HPF_META_SOURCE_LINE:
			md->source_line = (int32_t)(uint32_t)f.value;
			break;
		default:
			break;
		}
	}
	return !c->failed;
}

/* ---------------------------------------------------- frontend attributes */

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const ncc_kv_t *)a)->key, ((const ncc_kv_t *)b)->key);
}

/* The map's entries sorted by key, the last of duplicate keys winning (protobuf map
 * semantics), as XLA prints them. */
static bool decode_frontend(hp_ctx_t *c, ncc_pb_reader_t r, ncc_kv_t **out, int32_t *out_n)
{
	*out = NULL;
	*out_n = 0;
	hp_iter_t it;
	ncc_pb_field_t f;
	int32_t n = 0;
	hp_iter_init(&it, r, HP_MSG(frontend_fields));
	while (hp_iter_next(c, &it, &f))
		if (++n > 256)
			return hp_fail(c, NCC_ERR_LIMIT, "map", -1, "more than 256 frontend attributes");
	if (c->failed || !n)
		return !c->failed;
	ncc_kv_t *kv = ncc_alloc(c->m, sizeof(*kv) * (size_t)n);
	if (!kv)
		return hp_nomem(c);
	int32_t k = 0;
	hp_iter_init(&it, r, HP_MSG(frontend_fields));
	while (hp_iter_next(c, &it, &f)) {
		hp_iter_t eit;
		ncc_pb_field_t e;
		if (!hp_elem_begin(c, &f, "map", k, HP_MSG(map_entry_fields), &eit))
			return false;
		kv[k].key = kv[k].value = "";
		while (hp_iter_next(c, &eit, &e))
			if (!hp_string(c, &e, e.number == HPF_MAP_KEY ? &kv[k].key : &kv[k].value))
				return false;
		if (!hp_elem_end(c))
			return false;
		k++;
	}
	if (c->failed)
		return false;
	/* stable order for duplicates: a later entry replaces an earlier one */
	int32_t m = 0;
	for (int32_t i = 0; i < n; i++) {
		int32_t j;
		for (j = 0; j < m && strcmp(kv[j].key, kv[i].key) != 0; j++)
			;
		kv[j] = kv[i];
		if (j == m)
			m++;
	}
	qsort(kv, (size_t)m, sizeof(*kv), kv_cmp);
	*out = kv;
	*out_n = m;
	return true;
}

static void text_string(hp_text_t *t, const char *s)
{
	hp_text_printf(t, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			hp_text_printf(t, "\\%c", ch);
		else if (ch == '\n')
			hp_text_printf(t, "\\n");
		else if (ch == '\t')
			hp_text_printf(t, "\\t");
		else if (ch == '\r')
			hp_text_printf(t, "\\r");
		else
			hp_text_printf(t, "%c", ch);
	}
	hp_text_printf(t, "\"");
}

bool hp_frontend_text(hp_ctx_t *c, ncc_pb_reader_t r, const char **out)
{
	*out = NULL;
	ncc_kv_t *kv;
	int32_t n;
	if (!decode_frontend(c, r, &kv, &n))
		return false;
	if (!n)
		return true;
	hp_text_t t = { 0 };
	hp_text_printf(&t, "{");
	for (int32_t i = 0; i < n; i++) {
		if (i)
			hp_text_printf(&t, ",");
		if (is_ident(kv[i].key))
			hp_text_printf(&t, "%s", kv[i].key);
		else
			text_string(&t, kv[i].key);
		hp_text_printf(&t, "=");
		text_string(&t, kv[i].value);
	}
	hp_text_printf(&t, "}");
	*out = hp_text_finish(c, &t);
	return *out != NULL;
}

/* ------------------------------------------------------- precision config */

static const char *const algorithm_names[] = {
	NULL, "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum", "dot_f16_f16_f16",
	"dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32", "dot_bf16_bf16_f32_x3",
	"dot_bf16_bf16_f32_x6", "dot_tf32_tf32_f32", "dot_tf32_tf32_f32_x3", "dot_f32_f32_f32",
	"dot_f64_f64_f64", "dot_bf16_bf16_f32_x9",
};

static bool decode_precision(hp_ctx_t *c, ncc_pb_reader_t r, ncc_inst_t *in)
{
	hp_msgdesc_t desc = HP_MSG(precision_fields);
	int64_t *v;
	int32_t n;
	uint64_t alg = 0;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f))
		if (f.number == HPF_PRECISION_ALGORITHM)
			alg = f.value;
	if (c->failed || !hp_rep_i64(c, r, desc, HPF_PRECISION_OPERAND_PRECISION, 64, &v, &n))
		return false;
	bool any = false;
	for (int32_t i = 0; i < n; i++) {
		if (v[i] < HPV_PRECISION_DEFAULT || v[i] > HPV_PRECISION_HIGHEST)
			return hp_fail(c, NCC_ERR_PARSE, "operand_precision", -1,
				       "unknown precision %lld", (long long)v[i]);
		any |= v[i] != HPV_PRECISION_DEFAULT;
	}
	/* XLA prints operand_precision only when one is not the default */
	if (any) {
		in->operand_precision = ncc_alloc(c->m, sizeof(ncc_precision_t) * (size_t)n);
		if (!in->operand_precision)
			return hp_nomem(c);
		for (int32_t i = 0; i < n; i++)
			in->operand_precision[i] = (ncc_precision_t)v[i];
		in->nprecision = n;
	}
	if (alg >= sizeof(algorithm_names) / sizeof(algorithm_names[0]))
		return hp_fail(c, NCC_ERR_PARSE, "algorithm", -1, "unknown algorithm %llu",
			       (unsigned long long)alg);
	if (alg)
		return add_raw(c, in, "algorithm", algorithm_names[alg]);
	return true;
}

/* ------------------------------------------------------------- the rest */

/* The decimal XLA prints for a float epsilon, read back as the text parser does: the
 * shortest digits that give the float again (1e-05, not 9.99999974738e-06). */
static double float_as_printed(float v)
{
	if (!isfinite(v))
		return v;
	char buf[48];
	for (int d = 1; d <= 9; d++) {
		snprintf(buf, sizeof(buf), "%.*g", d, (double)v);
		if (strtof(buf, NULL) == v)
			return strtod(buf, NULL);
	}
	return v;
}

static const char *cmp_type_name_default(ncc_etype_t t)
{
	if (ncc_etype_is_float(t) || ncc_etype_is_complex(t))
		return "FLOAT";
	if (ncc_etype_is_signed_int(t))
		return "SIGNED";
	return "UNSIGNED"; /* unsigned integers and pred */
}

static bool decode_compare(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_inst_t *in)
{
	static const char *const dirs[] = { "EQ", "NE", "LT", "LE", "GT", "GE" };
	static const char *const types[] = { "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" };
	if (f->cmp_dir && f->cmp_dir[0]) {
		int i;
		for (i = 0; i < 6 && strcmp(f->cmp_dir, dirs[i]) != 0; i++)
			;
		if (i == 6)
			return hp_fail(c, NCC_ERR_PARSE, "comparison_direction", -1,
				       "unknown direction '%s' (EQ, NE, LT, LE, GT, GE)", hp_q(c, f->cmp_dir));
		in->cmp_dir = (ncc_cmp_dir_t)(NCC_CMP_EQ + i);
	}
	if (f->cmp_type && f->cmp_type[0]) {
		int i;
		for (i = 0; i < 4 && strcmp(f->cmp_type, types[i]) != 0; i++)
			;
		if (i == 4)
			return hp_fail(c, NCC_ERR_PARSE, "comparison_type", -1,
				       "unknown comparison type '%s' (FLOAT, TOTALORDER, SIGNED, UNSIGNED)",
				       hp_q(c, f->cmp_type));
		/* XLA prints type= only when it is not the default of the operands' type */
		ncc_etype_t et = in->noperands ? in->operands[0]->shape.etype : NCC_INVALID;
		if (et == NCC_INVALID || strcmp(types[i], cmp_type_name_default(et)) != 0)
			in->cmp_type = (ncc_cmp_type_t)(NCC_CMPT_FLOAT + i);
	}
	return true;
}

static bool decode_called(hp_ctx_t *c, ncc_inst_t *in, const hp_inst_fields_t *f)
{
	int64_t *ids;
	int32_t n;
	if (!hp_rep_i64(c, f->msg, hp_inst_desc, HPF_INST_CALLED_COMPUTATION_IDS, 1 << 16, &ids, &n))
		return false;
	if (!n)
		return true;
	const char *fld = "called_computation_ids";
	switch (in->op) {
	case NCC_OP_WHILE:
	case NCC_OP_SELECT_AND_SCATTER:
		if (n != 2)
			return hp_fail(c, NCC_ERR_PARSE, fld, -1, "%s calls two computations, not %d",
				       ncc_opcode_name(in->op), (int)n);
		/* XLA keeps a while's body first: called_computations() = {body, condition} */
		if (in->op == NCC_OP_WHILE)
			return hp_add_pending(c, &in->body, ids[0], in->name, fld) &&
			       hp_add_pending(c, &in->condition, ids[1], in->name, fld);
		return hp_add_pending(c, &in->select, ids[0], in->name, fld) &&
		       hp_add_pending(c, &in->scatter_comp, ids[1], in->name, fld);
	case NCC_OP_CALL:
	case NCC_OP_MAP:
	case NCC_OP_REDUCE_WINDOW:
	case NCC_OP_REDUCE:
	case NCC_OP_ALL_REDUCE:
	case NCC_OP_ALL_REDUCE_START:
	case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_SCATTER:
	case NCC_OP_SORT:
		if (n != 1)
			return hp_fail(c, NCC_ERR_PARSE, fld, -1, "%s calls one computation, not %d",
				       ncc_opcode_name(in->op), (int)n);
		return hp_add_pending(c, &in->to_apply, ids[0], in->name, fld);
	case NCC_OP_CONDITIONAL:
		in->branches = ncc_alloc(c->m, sizeof(*in->branches) * (size_t)n);
		if (!in->branches)
			return hp_nomem(c);
		in->nbranches = n;
		/* XLA spells a pred-selected pair true_computation/false_computation */
		in->branches_are_pred = n == 2 && in->noperands &&
					in->operands[0]->shape.etype == NCC_PRED;
		for (int32_t i = 0; i < n; i++)
			if (!hp_add_pending(c, &in->branches[i], ids[i], in->name, fld))
				return false;
		return true;
	default:
		break;
	}
	if (n == 1 && in->op != NCC_OP_CUSTOM_CALL)
		return hp_add_pending(c, &in->calls, ids[0], in->name, fld);
	in->called = ncc_alloc(c->m, sizeof(*in->called) * (size_t)n);
	if (!in->called)
		return hp_nomem(c);
	in->ncalled = n;
	for (int32_t i = 0; i < n; i++)
		if (!hp_add_pending(c, &in->called[i], ids[i], in->name, fld))
			return false;
	return true;
}

static bool decode_control_preds(hp_ctx_t *c, ncc_inst_t *in, const hp_inst_fields_t *f)
{
	int64_t *ids;
	int32_t n;
	if (!hp_rep_i64(c, f->msg, hp_inst_desc, HPF_INST_CONTROL_PREDECESSOR_IDS, 256, &ids, &n))
		return false;
	if (!n)
		return true;
	in->control_preds = ncc_alloc(c->m, sizeof(*in->control_preds) * (size_t)n);
	if (!in->control_preds)
		return hp_nomem(c);
	for (int32_t i = 0; i < n; i++) {
		ncc_inst_t *d = ncc_id_map_get(&c->insts, ids[i]);
		if (!d || d == in || d->parent != in->parent)
			return hp_fail(c, NCC_ERR_PARSE, "control_predecessor_ids", -1,
				       "id %lld is no earlier instruction of this computation",
				       (long long)ids[i]);
		in->control_preds[i] = d;
	}
	in->ncontrol_preds = n;
	return true;
}

static void shape_index_text(hp_text_t *t, const int64_t *v, int32_t n)
{
	hp_text_printf(t, "{");
	hp_text_ints(t, v, n);
	hp_text_printf(t, "}");
}

/* output_to_operand_aliasing={{}: (0, {}), {1}: (1, {})} */
static bool decode_ooa(hp_ctx_t *c, ncc_inst_t *in, const hp_inst_fields_t *f)
{
	hp_text_t t = { 0 };
	hp_text_printf(&t, "{");
	hp_iter_t it;
	ncc_pb_field_t x;
	int32_t k = 0;
	hp_iter_init(&it, f->msg, hp_inst_desc);
	while (hp_iter_next(c, &it, &x)) {
		if (x.number != HPF_INST_OUTPUT_OPERAND_ALIASING)
			continue;
		if (!HP_IN(c, "output_operand_aliasing", k))
			break;
		ncc_pb_reader_t r = hp_sub(c, &x);
		hp_msgdesc_t desc = HP_MSG(ooa_fields);
		int64_t opnd = 0, *oi, *pi;
		int32_t noi, npi;
		hp_iter_t ait;
		ncc_pb_field_t y;
		hp_iter_init(&ait, r, desc);
		while (hp_iter_next(c, &ait, &y))
			if (y.number == HPF_OOA_OPERAND_INDEX)
				opnd = (int64_t)y.value;
		if (c->failed || !hp_rep_i64(c, r, desc, HPF_OOA_OUTPUT_SHAPE_INDEX, 64, &oi, &noi) ||
		    !hp_rep_i64(c, r, desc, HPF_OOA_OPERAND_SHAPE_INDEX, 64, &pi, &npi))
			break;
		HP_OUT(c);
		if (k)
			hp_text_printf(&t, ", ");
		shape_index_text(&t, oi, noi);
		hp_text_printf(&t, ": (%lld, ", (long long)opnd);
		shape_index_text(&t, pi, npi);
		hp_text_printf(&t, ")");
		k++;
	}
	hp_text_printf(&t, "}");
	if (c->failed) {
		free(t.s);
		return false;
	}
	const char *text = hp_text_finish(c, &t);
	return text && add_raw(c, in, "output_to_operand_aliasing", text);
}

/* operand_layout_constraints={f32[2]{0}, f32[3]{0}} */
static bool decode_layout_constraints(hp_ctx_t *c, ncc_inst_t *in, const hp_inst_fields_t *f)
{
	hp_text_t t = { 0 };
	hp_text_printf(&t, "{");
	hp_iter_t it;
	ncc_pb_field_t x;
	int32_t k = 0;
	hp_iter_init(&it, f->msg, hp_inst_desc);
	while (hp_iter_next(c, &it, &x)) {
		if (x.number != HPF_INST_OPERAND_SHAPES_WITH_LAYOUT)
			continue;
		ncc_shape_t s;
		bool ok = HP_IN(c, "operand_shapes_with_layout", k) && hp_shape(c, hp_sub(c, &x), &s);
		HP_OUT(c);
		if (!ok)
			break;
		if (k)
			hp_text_printf(&t, ", ");
		hp_text_shape(&t, &s, 0);
		k++;
	}
	hp_text_printf(&t, "}");
	if (c->failed) {
		free(t.s);
		return false;
	}
	const char *text = hp_text_finish(c, &t);
	return text && add_raw(c, in, "operand_layout_constraints", text);
}

static bool decode_param_replication(hp_ctx_t *c, ncc_inst_t *in, ncc_pb_reader_t r)
{
	int64_t *v;
	int32_t n;
	if (!hp_rep_i64(c, r, HP_MSG(param_replication_fields), HPF_PARAM_REPLICATION_LEAVES, 1 << 16,
			&v, &n))
		return false;
	if (!n)
		return true;
	hp_text_t t = { 0 };
	hp_text_printf(&t, "{");
	for (int32_t i = 0; i < n; i++)
		hp_text_printf(&t, "%s%s", i ? "," : "", v[i] ? "true" : "false");
	hp_text_printf(&t, "}");
	const char *text = hp_text_finish(c, &t);
	return text && add_raw(c, in, "parameter_replication", text);
}

static bool decode_trsm(hp_ctx_t *c, ncc_inst_t *in, ncc_pb_reader_t r)
{
	static const char *const names[] = { NULL, "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT" };
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, HP_MSG(trsm_fields));
	while (hp_iter_next(c, &it, &f)) {
		switch (f.number) {
		case HPF_TRSM_LEFT_SIDE: in->left_side = f.value != 0; break;
		case HPF_TRSM_LOWER: in->lower = f.value != 0; break;
		case HPF_TRSM_UNIT_DIAGONAL: in->unit_diagonal = f.value != 0; break;
		case HPF_TRSM_TRANSPOSE_A:
			if (f.value > 3)
				return hp_fail(c, NCC_ERR_PARSE, "transpose_a", -1, "unknown value %llu",
					       (unsigned long long)f.value);
			in->transpose_a = names[f.value];
			break;
		default: break;
		}
	}
	return !c->failed;
}

/* ----------------------------------------------------------- the mapping */

static bool has_dimensions_attr(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_BROADCAST:
	case NCC_OP_CONCATENATE:
	case NCC_OP_REDUCE:
	case NCC_OP_REVERSE:
	case NCC_OP_SORT:
	case NCC_OP_TRANSPOSE:
	case NCC_OP_MAP:
	case NCC_OP_ALL_GATHER:
	case NCC_OP_ALL_GATHER_START:
	case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_GET_DIMENSION_SIZE:
	case NCC_OP_SET_DIMENSION_SIZE:
		return true;
	default:
		return false;
	}
}

static bool is_collective(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_ALL_GATHER:
	case NCC_OP_ALL_GATHER_START:
	case NCC_OP_ALL_REDUCE:
	case NCC_OP_ALL_REDUCE_START:
	case NCC_OP_ALL_TO_ALL:
	case NCC_OP_REDUCE_SCATTER:
	case NCC_OP_COLLECTIVE_BROADCAST:
		return true;
	default:
		return false;
	}
}

/* Runs a sub-decoder inside message field `name` of the instruction. */
#define IN_FIELD(name, call)                                  \
	do {                                                  \
		if (!HP_IN(c, (name), -1))                    \
			return false;                         \
		bool ok_ = (call);                            \
		HP_OUT(c);                                    \
		if (!ok_)                                     \
			return false;                         \
	} while (0)

bool hp_inst_attrs(hp_ctx_t *c, ncc_inst_t *in, const hp_inst_fields_t *f)
{
	ncc_opcode_t op = in->op;
	ncc_pb_reader_t none = ncc_pb_reader(NULL, 0);

	/* dimensions: the iota's one dimension, or the list XLA prints for its opcode */
	ncc_ilist_t dims;
	if (!hp_rep_ilist(c, f->msg, hp_inst_desc, HPF_INST_DIMENSIONS, &dims))
		return false;
	if (op == NCC_OP_IOTA) {
		if (dims.n != 1)
			return hp_fail(c, NCC_ERR_PARSE, "dimensions", -1,
				       "iota needs exactly one dimension, has %d", (int)dims.n);
		if (dims.v[0] < 0)
			return hp_fail(c, NCC_ERR_PARSE, "dimensions", -1, "negative iota dimension %lld",
				       (long long)dims.v[0]);
		in->iota_dimension = dims.v[0];
	} else if (has_dimensions_attr(op) || dims.n) {
		in->dimensions = dims;
	}
	if (op == NCC_OP_GET_TUPLE_ELEMENT) {
		if (f->tuple_index < 0)
			return hp_fail(c, NCC_ERR_PARSE, "tuple_index", -1, "negative (%lld)",
				       (long long)f->tuple_index);
		in->tuple_index = f->tuple_index;
	}
	if (!decode_called(c, in, f))
		return false;

	/* each field counts on the opcodes XLA reads it for (HloInstruction::
	 * CreateFromProto); elsewhere it is ignored as XLA ignores it */
	bool conv_like = op == NCC_OP_CONVOLUTION || op == NCC_OP_CUSTOM_CALL;
	if ((f->has_window && op == NCC_OP_CUSTOM_CALL) || op == NCC_OP_CONVOLUTION ||
	    op == NCC_OP_REDUCE_WINDOW || op == NCC_OP_SELECT_AND_SCATTER)
		IN_FIELD("window", hp_window(c, f->has_window ? hp_sub(c, &f->window) : none,
						 &in->window));
	if (f->has_conv && conv_like)
		IN_FIELD("convolution_dimension_numbers", hp_conv(c, hp_sub(c, &f->conv), &in->conv));
	if (conv_like) {
		in->feature_group_count = f->feature_group_count;
		in->batch_group_count = f->batch_group_count;
	}
	if (op == NCC_OP_PAD) {
		IN_FIELD("padding_config", hp_padding(c, f->has_padding,
							  f->has_padding ? hp_sub(c, &f->padding) : none,
							  &in->padding));
		/* "padding=" needs at least one dimension to be spelled */
		if (in->padding->n == 0)
			return hp_fail(c, NCC_ERR_UNSUPPORTED, "padding_config", -1,
				       "a pad without padded dimensions has no text form");
	}
	if (op == NCC_OP_SLICE && !hp_slices(c, f, &in->slice))
		return false;
	if (op == NCC_OP_DYNAMIC_SLICE &&
	    !hp_rep_ilist(c, f->msg, hp_inst_desc, HPF_INST_DYNAMIC_SLICE_SIZES, &in->dynamic_slice_sizes))
		return false;
	if (op == NCC_OP_DOT)
		IN_FIELD("dot_dimension_numbers",
			 hp_dot(c, f->has_dot, f->has_dot ? hp_sub(c, &f->dot) : none, &in->dot));
	if (op == NCC_OP_GATHER) {
		IN_FIELD("gather_dimension_numbers",
			 hp_gather(c, f->has_gather, f->has_gather ? hp_sub(c, &f->gather) : none,
				       &in->gather));
		/* slice_sizes={...}: a field of the instruction itself */
		if (!hp_rep_ilist(c, f->msg, hp_inst_desc, HPF_INST_GATHER_SLICE_SIZES,
				  &in->gather->slice_sizes))
			return false;
	}
	if (op == NCC_OP_SCATTER)
		IN_FIELD("scatter_dimension_numbers",
			 hp_scatter(c, f->has_scatter, f->has_scatter ? hp_sub(c, &f->scatter) : none,
					&in->scatter));
	if (op == NCC_OP_GATHER || op == NCC_OP_SCATTER)
		in->indices_are_sorted = f->indices_are_sorted;
	if (op == NCC_OP_SCATTER)
		in->unique_indices = f->unique_indices;
	if (op == NCC_OP_COMPARE && !decode_compare(c, f, in))
		return false;
	if (f->has_precision && (op == NCC_OP_DOT || conv_like))
		IN_FIELD("precision_config", decode_precision(c, hp_sub(c, &f->precision), in));

	/* custom calls and fusions */
	if (op == NCC_OP_FUSION && f->fusion_kind && f->fusion_kind[0]) {
		if (!is_ident(f->fusion_kind))
			return hp_fail(c, NCC_ERR_PARSE, "fusion_kind", -1,
				       "'%s' is not a fusion kind (kLoop, kInput, kOutput, kCustom)",
				       hp_q(c, f->fusion_kind));
		in->fusion_kind = f->fusion_kind;
	}
	if (op == NCC_OP_CUSTOM_CALL) {
		static const char *const api[] = { "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL",
						   "API_VERSION_STATUS_RETURNING",
						   "API_VERSION_STATUS_RETURNING_UNIFIED",
						   "API_VERSION_TYPED_FFI" };
		static const char *const sched[] = { NULL, "SCHEDULE_LATEST", "SCHEDULE_EARLIEST" };
		in->custom_call_target = f->custom_call_target ? f->custom_call_target : "";
		in->custom_call_has_side_effect = f->has_side_effect;
		if (f->api_version > HPV_API_VERSION_TYPED_FFI)
			return hp_fail(c, NCC_ERR_PARSE, "custom_call_api_version", -1,
				       "unknown api version %llu", (unsigned long long)f->api_version);
		/* XLA leaves out the default API_VERSION_ORIGINAL */
		if (f->api_version != HPV_API_VERSION_ORIGINAL)
			in->api_version = api[f->api_version];
		/* raw attributes in the order XLA prints them */
		if (f->constrain_layout && !decode_layout_constraints(c, in, f))
			return false;
		if (f->nooa && !decode_ooa(c, in, f))
			return false;
		if (f->schedule > HPV_SCHEDULE_EARLIEST)
			return hp_fail(c, NCC_ERR_PARSE, "custom_call_schedule", -1,
				       "unknown schedule %llu", (unsigned long long)f->schedule);
		if (f->schedule && !add_raw(c, in, "schedule", sched[f->schedule]))
			return false;
	}
	if (op == NCC_OP_FUSION && f->nooa && !decode_ooa(c, in, f))
		return false;
	if (f->backend_config && f->backend_config[0])
		in->backend_config = f->backend_config;

	/* collectives */
	if (is_collective(op)) {
		if (!hp_replica_groups(c, f, &in->replica_groups))
			return false;
		in->replica_groups.present = true;
		in->use_global_device_ids = f->use_global_device_ids;
		in->constrain_layout = f->constrain_layout;
	}
	in->channel_id = f->channel_id > 0 ? f->channel_id : 0;
	if ((op == NCC_OP_COLLECTIVE_PERMUTE || op == NCC_OP_COLLECTIVE_PERMUTE_START) &&
	    !hp_pairs(c, f, in))
		return false;

	/* rng */
	if (op == NCC_OP_RNG) {
		if (f->distribution != HPV_RNG_UNIFORM && f->distribution != HPV_RNG_NORMAL)
			return hp_fail(c, NCC_ERR_PARSE, "distribution", -1, "unknown distribution %llu",
				       (unsigned long long)f->distribution);
		in->distribution = f->distribution == HPV_RNG_UNIFORM ? NCC_RNG_UNIFORM : NCC_RNG_NORMAL;
	}
	if (op == NCC_OP_RNG_BIT_GENERATOR) {
		if (f->rng_algorithm > HPV_RNG_PHILOX)
			return hp_fail(c, NCC_ERR_PARSE, "rng_algorithm", -1, "unknown algorithm %llu",
				       (unsigned long long)f->rng_algorithm);
		in->rng_algorithm = (ncc_rng_alg_t)(NCC_RNG_DEFAULT + (int)f->rng_algorithm);
	}

	/* batch norm, sort, fft, reduce-precision, linear algebra, topk */
	if (op == NCC_OP_BATCH_NORM_TRAINING || op == NCC_OP_BATCH_NORM_INFERENCE ||
	    op == NCC_OP_BATCH_NORM_GRAD) {
		in->has_epsilon = true;
		in->epsilon = float_as_printed(f->epsilon);
		if (f->feature_index < 0)
			return hp_fail(c, NCC_ERR_PARSE, "feature_index", -1, "negative (%lld)",
				       (long long)f->feature_index);
		in->feature_index = f->feature_index;
	}
	if (op == NCC_OP_SORT)
		in->is_stable = f->is_stable;
	if (op == NCC_OP_FFT) {
		static const char *const ft[] = { "FFT", "IFFT", "RFFT", "IRFFT" };
		if (f->fft_type > 3)
			return hp_fail(c, NCC_ERR_PARSE, "fft_type", -1, "unknown fft type %llu",
				       (unsigned long long)f->fft_type);
		in->fft_type = ft[f->fft_type];
		if (!hp_rep_ilist(c, f->msg, hp_inst_desc, HPF_INST_FFT_LENGTH, &in->fft_length))
			return false;
	}
	if (op == NCC_OP_REDUCE_PRECISION) {
		if (f->exponent_bits < 0 || f->mantissa_bits < 0)
			return hp_fail(c, NCC_ERR_PARSE,
				       f->exponent_bits < 0 ? "exponent_bits" : "mantissa_bits", -1,
				       "negative");
		in->exponent_bits = f->exponent_bits;
		in->mantissa_bits = f->mantissa_bits;
	}
	if (f->has_trsm && op == NCC_OP_TRIANGULAR_SOLVE)
		IN_FIELD("triangular_solve_options", decode_trsm(c, in, hp_sub(c, &f->trsm)));
	if (f->has_cholesky && op == NCC_OP_CHOLESKY) {
		hp_iter_t it;
		ncc_pb_field_t x;
		if (!HP_IN(c, "cholesky_options", -1))
			return false;
		hp_iter_init(&it, hp_sub(c, &f->cholesky), HP_MSG(cholesky_fields));
		while (hp_iter_next(c, &it, &x))
			in->lower = x.value != 0;
		HP_OUT(c);
		if (c->failed)
			return false;
	}
	if (op == NCC_OP_TOPK) {
		if (f->k < 0)
			return hp_fail(c, NCC_ERR_PARSE, "k", -1, "negative (%lld)", (long long)f->k);
		in->topk_k = f->k;
		in->topk_largest = f->largest;
	}

	/* general */
	if (f->has_sharding) {
		hp_text_t t = { 0 };
		if (!HP_IN(c, "sharding", -1))
			return false;
		bool ok = hp_sharding_text(c, hp_sub(c, &f->sharding), &t);
		HP_OUT(c);
		if (!ok) {
			free(t.s);
			return false;
		}
		if (!(in->sharding = hp_text_finish(c, &t)))
			return false;
	}
	if (!decode_control_preds(c, in, f))
		return false;
	if (f->has_param_replication && op == NCC_OP_PARAMETER)
		IN_FIELD("parameter_replication",
			 decode_param_replication(c, in, hp_sub(c, &f->param_replication)));
	if (f->has_frontend)
		IN_FIELD("frontend_attributes",
			 decode_frontend(c, hp_sub(c, &f->frontend), &in->frontend_attrs,
					 &in->nfrontend_attrs));
	if (f->has_metadata)
		IN_FIELD("metadata", decode_metadata(c, hp_sub(c, &f->metadata), &in->metadata));
	return true;
}
