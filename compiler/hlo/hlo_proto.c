/* ncc HloModuleProto decoder: serialized xla.HloModuleProto -> the ncc IR module the text parser would build for the same module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_parser.h"
#include "hlo_proto_internal.h"
#include "ir_internal.h"

/* ---------------------------------------------------------------- schema */

static const hp_fdesc_t module_fields[] = {
	{ HPF_MODULE_NAME, "name", HP_K_LEN },
	{ HPF_MODULE_ENTRY_COMPUTATION_NAME, "entry_computation_name", HP_K_LEN },
	{ HPF_MODULE_COMPUTATIONS, "computations", HP_K_LEN },
	{ HPF_MODULE_HOST_PROGRAM_SHAPE, "host_program_shape", HP_K_LEN },
	{ HPF_MODULE_ENTRY_COMPUTATION_ID, "entry_computation_id", HP_K_VARINT },
	{ HPF_MODULE_SCHEDULE, "schedule", HP_K_LEN },
	{ HPF_MODULE_INPUT_OUTPUT_ALIAS, "input_output_alias", HP_K_LEN },
	{ HPF_MODULE_DEVICE_ASSIGNMENT, "device_assignment", HP_K_LEN },
	{ HPF_MODULE_BUFFER_DONOR, "buffer_donor", HP_K_LEN },
	{ HPF_MODULE_FRONTEND_ATTRIBUTES, "frontend_attributes", HP_K_LEN },
};

static const hp_fdesc_t comp_fields[] = {
	{ HPF_COMP_NAME, "name", HP_K_LEN },
	{ HPF_COMP_INSTRUCTIONS, "instructions", HP_K_LEN },
	{ HPF_COMP_ID, "id", HP_K_VARINT },
	{ HPF_COMP_ROOT_ID, "root_id", HP_K_VARINT },
};

static const hp_fdesc_t inst_fields[] = {
	{ HPF_INST_NAME, "name", HP_K_LEN },
	{ HPF_INST_OPCODE, "opcode", HP_K_LEN },
	{ HPF_INST_SHAPE, "shape", HP_K_LEN },
	{ HPF_INST_METADATA, "metadata", HP_K_LEN },
	{ HPF_INST_LITERAL, "literal", HP_K_LEN },
	{ HPF_INST_PARAMETER_NUMBER, "parameter_number", HP_K_VARINT },
	{ HPF_INST_FUSION_KIND, "fusion_kind", HP_K_LEN },
	{ HPF_INST_TUPLE_INDEX, "tuple_index", HP_K_VARINT },
	{ HPF_INST_DIMENSIONS, "dimensions", HP_K_REP_VARINT },
	{ HPF_INST_WINDOW, "window", HP_K_LEN },
	{ HPF_INST_CONV_DNUMS, "convolution_dimension_numbers", HP_K_LEN },
	{ HPF_INST_SLICE_DIMENSIONS, "slice_dimensions", HP_K_LEN },
	{ HPF_INST_EXPONENT_BITS, "exponent_bits", HP_K_VARINT },
	{ HPF_INST_MANTISSA_BITS, "mantissa_bits", HP_K_VARINT },
	{ HPF_INST_DYNAMIC_SLICE_SIZES, "dynamic_slice_sizes", HP_K_REP_VARINT },
	{ HPF_INST_PADDING_CONFIG, "padding_config", HP_K_LEN },
	{ HPF_INST_DISTRIBUTION, "distribution", HP_K_VARINT },
	{ HPF_INST_EPSILON, "epsilon", HP_K_FIXED32 },
	{ HPF_INST_FEATURE_INDEX, "feature_index", HP_K_VARINT },
	{ HPF_INST_CHANNEL_ID, "channel_id", HP_K_VARINT },
	{ HPF_INST_CUSTOM_CALL_TARGET, "custom_call_target", HP_K_LEN },
	{ HPF_INST_DOT_DNUMS, "dot_dimension_numbers", HP_K_LEN },
	{ HPF_INST_FFT_TYPE, "fft_type", HP_K_VARINT },
	{ HPF_INST_FFT_LENGTH, "fft_length", HP_K_REP_VARINT },
	{ HPF_INST_GATHER_DNUMS, "gather_dimension_numbers", HP_K_LEN },
	{ HPF_INST_GATHER_SLICE_SIZES, "gather_slice_sizes", HP_K_REP_VARINT },
	{ HPF_INST_ID, "id", HP_K_VARINT },
	{ HPF_INST_OPERAND_IDS, "operand_ids", HP_K_REP_VARINT },
	{ HPF_INST_CONTROL_PREDECESSOR_IDS, "control_predecessor_ids", HP_K_REP_VARINT },
	{ HPF_INST_CALLED_COMPUTATION_IDS, "called_computation_ids", HP_K_REP_VARINT },
	{ HPF_INST_SHARDING, "sharding", HP_K_LEN },
	{ HPF_INST_BACKEND_CONFIG, "backend_config", HP_K_LEN },
	{ HPF_INST_SCATTER_DNUMS, "scatter_dimension_numbers", HP_K_LEN },
	{ HPF_INST_REPLICA_GROUPS, "replica_groups", HP_K_LEN },
	{ HPF_INST_FEATURE_GROUP_COUNT, "feature_group_count", HP_K_VARINT },
	{ HPF_INST_PRECISION_CONFIG, "precision_config", HP_K_LEN },
	{ HPF_INST_SOURCE_TARGET_PAIRS, "source_target_pairs", HP_K_LEN },
	{ HPF_INST_CONSTRAIN_LAYOUT, "constrain_layout", HP_K_VARINT },
	{ HPF_INST_OPERAND_SHAPES_WITH_LAYOUT, "operand_shapes_with_layout", HP_K_LEN },
	{ HPF_INST_BATCH_GROUP_COUNT, "batch_group_count", HP_K_VARINT },
	{ HPF_INST_TRIANGULAR_SOLVE_OPTIONS, "triangular_solve_options", HP_K_LEN },
	{ HPF_INST_IS_STABLE, "is_stable", HP_K_VARINT },
	{ HPF_INST_PARAMETER_REPLICATION, "parameter_replication", HP_K_LEN },
	{ HPF_INST_CHOLESKY_OPTIONS, "cholesky_options", HP_K_LEN },
	{ HPF_INST_COMPARISON_DIRECTION, "comparison_direction", HP_K_LEN },
	{ HPF_INST_CUSTOM_CALL_HAS_SIDE_EFFECT, "custom_call_has_side_effect", HP_K_VARINT },
	{ HPF_INST_INDICES_ARE_SORTED, "indices_are_sorted", HP_K_VARINT },
	{ HPF_INST_FRONTEND_ATTRIBUTES, "frontend_attributes", HP_K_LEN },
	{ HPF_INST_UNIQUE_INDICES, "unique_indices", HP_K_VARINT },
	{ HPF_INST_RNG_ALGORITHM, "rng_algorithm", HP_K_VARINT },
	{ HPF_INST_USE_GLOBAL_DEVICE_IDS, "use_global_device_ids", HP_K_VARINT },
	{ HPF_INST_COMPARISON_TYPE, "comparison_type", HP_K_LEN },
	{ HPF_INST_OUTPUT_OPERAND_ALIASING, "output_operand_aliasing", HP_K_LEN },
	{ HPF_INST_CUSTOM_CALL_SCHEDULE, "custom_call_schedule", HP_K_VARINT },
	{ HPF_INST_CUSTOM_CALL_API_VERSION, "custom_call_api_version", HP_K_VARINT },
	{ HPF_INST_K, "k", HP_K_VARINT },
	{ HPF_INST_LARGEST, "largest", HP_K_VARINT },
	{ HPF_INST_COLLECTIVE_DEVICE_LIST, "collective_device_list", HP_K_LEN },
};

const hp_msgdesc_t hp_inst_desc = { inst_fields, sizeof(inst_fields) / sizeof(inst_fields[0]) };

static const hp_fdesc_t alias_fields[] = {
	{ HPF_ALIAS_ENTRIES, "entries", HP_K_LEN },
};
static const hp_fdesc_t alias_entry_fields[] = {
	{ HPF_ALIAS_OUTPUT_SHAPE_INDEX, "output_shape_index", HP_K_REP_VARINT },
	{ HPF_ALIAS_PARAMETER_NUMBER, "parameter_number", HP_K_VARINT },
	{ HPF_ALIAS_PARAMETER_SHAPE_INDEX, "parameter_shape_index", HP_K_REP_VARINT },
	{ HPF_ALIAS_KIND, "kind", HP_K_VARINT },
};
static const hp_fdesc_t donor_fields[] = {
	{ HPF_DONOR_ENTRIES, "entries", HP_K_LEN },
};
static const hp_fdesc_t donor_entry_fields[] = {
	{ HPF_DONOR_PARAMETER_NUMBER, "parameter_number", HP_K_VARINT },
	{ HPF_DONOR_PARAMETER_SHAPE_INDEX, "parameter_shape_index", HP_K_REP_VARINT },
};
static const hp_fdesc_t devassign_fields[] = {
	{ HPF_DEVASSIGN_REPLICA_COUNT, "replica_count", HP_K_VARINT },
	{ HPF_DEVASSIGN_COMPUTATION_COUNT, "computation_count", HP_K_VARINT },
};
/* xla.ProgramShapeProto (xla_data.proto) */
static const hp_fdesc_t program_shape_fields[] = {
	{ 1, "parameters", HP_K_LEN },
	{ 2, "result", HP_K_LEN },
};

/* ----------------------------------------------------------- references */

bool hp_add_pending(hp_ctx_t *c, ncc_comp_t **slot, int64_t id, const char *inst_name,
		    const char *field)
{
	hp_pending_t *np = ncc__grow(c->pend, &c->cap_pend, c->npend, sizeof(*np), 64);
	if (!np)
		return hp_nomem(c);
	c->pend = np;
	hp_pending_t *p = &c->pend[c->npend++];
	p->slot = slot;
	p->id = id;
	p->comp_index = c->comp_index;
	p->inst_index = c->inst_index;
	p->inst_name = inst_name;
	p->field = field;
	return true;
}

static bool resolve_pending(hp_ctx_t *c)
{
	for (size_t i = 0; i < c->npend; i++) {
		hp_pending_t *p = &c->pend[i];
		ncc_comp_t *comp = ncc_id_map_get(&c->comps, p->id);
		if (comp) {
			*p->slot = comp;
			continue;
		}
		c->npath = 0;
		hp_push(c, "computations", p->comp_index);
		if (p->comp_index < c->m->ncomps)
			hp_set_label(c, c->m->comps[p->comp_index]->name);
		hp_push(c, "instructions", p->inst_index);
		hp_set_label(c, p->inst_name);
		return hp_fail(c, NCC_ERR_PARSE, p->field, -1, "unknown computation id %lld",
			       (long long)p->id);
	}
	return true;
}

/* ---------------------------------------------------------- instructions */

/* First pass over one instruction: what is there (message fields by position). */
static bool inst_scan(hp_ctx_t *c, ncc_pb_reader_t r, hp_inst_fields_t *f)
{
	memset(f, 0, sizeof(*f));
	f->msg = r;
	f->feature_group_count = 1;
	f->batch_group_count = 1;
	hp_iter_t it;
	ncc_pb_field_t x;
	hp_iter_init(&it, r, hp_inst_desc);
	while (hp_iter_next(c, &it, &x)) {
		int64_t v = (int64_t)x.value;
		switch (x.number) {
		case HPF_INST_NAME:
			if (!hp_string(c, &x, &f->name))
				return false;
			/* name the instruction in messages about its other fields */
			hp_set_label(c, f->name[0] == '%' ? f->name + 1 : f->name);
			break;
		case HPF_INST_OPCODE:
			if (!hp_string(c, &x, &f->opcode))
				return false;
			break;
		case HPF_INST_SHAPE: f->shape = x; f->has_shape = true; break;
		case HPF_INST_METADATA: f->metadata = x; f->has_metadata = true; break;
		case HPF_INST_LITERAL: f->literal = x; f->has_literal = true; break;
		case HPF_INST_PARAMETER_NUMBER: f->parameter_number = v; break;
		case HPF_INST_FUSION_KIND:
			if (!hp_string(c, &x, &f->fusion_kind))
				return false;
			break;
		case HPF_INST_TUPLE_INDEX: f->tuple_index = v; break;
		case HPF_INST_WINDOW: f->window = x; f->has_window = true; break;
		case HPF_INST_CONV_DNUMS: f->conv = x; f->has_conv = true; break;
		case HPF_INST_SLICE_DIMENSIONS: f->nslices++; break;
		case HPF_INST_EXPONENT_BITS: f->exponent_bits = (int32_t)x.value; break;
		case HPF_INST_MANTISSA_BITS: f->mantissa_bits = (int32_t)x.value; break;
		case HPF_INST_PADDING_CONFIG: f->padding = x; f->has_padding = true; break;
		case HPF_INST_DISTRIBUTION: f->distribution = x.value; break;
		case HPF_INST_EPSILON: {
			uint32_t b = (uint32_t)x.value;
			memcpy(&f->epsilon, &b, 4);
			f->has_epsilon = true;
			break;
		}
		case HPF_INST_FEATURE_INDEX: f->feature_index = v; break;
		case HPF_INST_CHANNEL_ID: f->channel_id = v; break;
		case HPF_INST_CUSTOM_CALL_TARGET:
			if (!hp_string(c, &x, &f->custom_call_target))
				return false;
			break;
		case HPF_INST_DOT_DNUMS: f->dot = x; f->has_dot = true; break;
		case HPF_INST_FFT_TYPE: f->fft_type = x.value; break;
		case HPF_INST_GATHER_DNUMS: f->gather = x; f->has_gather = true; break;
		case HPF_INST_ID: f->id = v; f->has_id = true; break;
		case HPF_INST_SHARDING: f->sharding = x; f->has_sharding = true; break;
		case HPF_INST_BACKEND_CONFIG:
			if (!hp_string(c, &x, &f->backend_config))
				return false;
			break;
		case HPF_INST_SCATTER_DNUMS: f->scatter = x; f->has_scatter = true; break;
		case HPF_INST_REPLICA_GROUPS: f->nreplica_groups++; break;
		case HPF_INST_FEATURE_GROUP_COUNT: f->feature_group_count = v; break;
		case HPF_INST_PRECISION_CONFIG: f->precision = x; f->has_precision = true; break;
		case HPF_INST_SOURCE_TARGET_PAIRS: f->npairs++; break;
		case HPF_INST_CONSTRAIN_LAYOUT: f->constrain_layout = x.value != 0; break;
		case HPF_INST_OPERAND_SHAPES_WITH_LAYOUT: f->nlayout_shapes++; break;
		case HPF_INST_BATCH_GROUP_COUNT: f->batch_group_count = v; break;
		case HPF_INST_TRIANGULAR_SOLVE_OPTIONS: f->trsm = x; f->has_trsm = true; break;
		case HPF_INST_IS_STABLE: f->is_stable = x.value != 0; break;
		case HPF_INST_PARAMETER_REPLICATION:
			f->param_replication = x;
			f->has_param_replication = true;
			break;
		case HPF_INST_CHOLESKY_OPTIONS: f->cholesky = x; f->has_cholesky = true; break;
		case HPF_INST_COMPARISON_DIRECTION:
			if (!hp_string(c, &x, &f->cmp_dir))
				return false;
			break;
		case HPF_INST_CUSTOM_CALL_HAS_SIDE_EFFECT: f->has_side_effect = x.value != 0; break;
		case HPF_INST_INDICES_ARE_SORTED: f->indices_are_sorted = x.value != 0; break;
		case HPF_INST_FRONTEND_ATTRIBUTES: f->frontend = x; f->has_frontend = true; break;
		case HPF_INST_UNIQUE_INDICES: f->unique_indices = x.value != 0; break;
		case HPF_INST_RNG_ALGORITHM: f->rng_algorithm = x.value; break;
		case HPF_INST_USE_GLOBAL_DEVICE_IDS: f->use_global_device_ids = x.value != 0; break;
		case HPF_INST_COMPARISON_TYPE:
			if (!hp_string(c, &x, &f->cmp_type))
				return false;
			break;
		case HPF_INST_OUTPUT_OPERAND_ALIASING: f->nooa++; break;
		case HPF_INST_CUSTOM_CALL_SCHEDULE: f->schedule = x.value; break;
		case HPF_INST_CUSTOM_CALL_API_VERSION: f->api_version = x.value; break;
		case HPF_INST_K: f->k = v; break;
		case HPF_INST_LARGEST: f->largest = x.value != 0; break;
		case HPF_INST_COLLECTIVE_DEVICE_LIST: f->devlist = x; f->has_devlist = true; break;
		default: break; /* repeated scalars are read where they are used */
		}
	}
	return !c->failed;
}

static bool decode_inst(hp_ctx_t *c, ncc_comp_t *comp, ncc_pb_reader_t r)
{
	hp_inst_fields_t f;
	if (!inst_scan(c, r, &f))
		return false;
	if (!f.name)
		return hp_fail(c, NCC_ERR_PARSE, "name", -1, "missing (every instruction needs a name)");
	const char *name = f.name[0] == '%' ? f.name + 1 : f.name;
	if (!hp_valid_name(name, strlen(name)))
		return hp_fail(c, NCC_ERR_PARSE, "name", -1,
			       "'%s' is not a valid HLO name ([A-Za-z0-9_.-]+)", hp_q(c, f.name));
	hp_set_label(c, name);
	if (ncc_name_map_get(&c->inst_names, name))
		return hp_fail(c, NCC_ERR_PARSE, "name", -1,
			       "instruction name '%s' is used twice in the module", name);
	if (!f.opcode)
		return hp_fail(c, NCC_ERR_PARSE, "opcode", -1, "missing");
	f.op = ncc_opcode_from_name(f.opcode, strlen(f.opcode));
	if (f.op == NCC_OP_UNKNOWN)
		return hp_fail(c, NCC_ERR_PARSE, "opcode", -1, "unknown opcode '%s'", hp_q(c, f.opcode));
	/* a parameter's name is also spelled bare, without '%', in the signature */
	if (f.op == NCC_OP_PARAMETER && !((name[0] >= 'a' && name[0] <= 'z') ||
					  (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
		return hp_fail(c, NCC_ERR_PARSE, "name", -1,
			       "parameter name '%s' must start with a letter or '_'", hp_q(c, name));
	if (!f.has_shape)
		return hp_fail(c, NCC_ERR_PARSE, "shape", -1, "missing");
	if (!f.has_id)
		return hp_fail(c, NCC_ERR_PARSE, "id", -1, "missing (operands refer to instructions by id)");
	if (ncc_id_map_get(&c->insts, f.id))
		return hp_fail(c, NCC_ERR_PARSE, "id", -1, "id %lld is used by '%s' too",
			       (long long)f.id, ((ncc_inst_t *)ncc_id_map_get(&c->insts, f.id))->name);
	ncc_shape_t shape;
	if (!hp_push(c, "shape", -1))
		return false;
	bool ok = hp_shape(c, hp_sub(c, &f.shape), &shape);
	hp_pop(c);
	if (!ok)
		return false;

	/* operands: earlier instructions of this computation */
	int64_t *ids;
	int32_t nops;
	if (!hp_rep_i64(c, r, hp_inst_desc, HPF_INST_OPERAND_IDS, NCC_PARSE_MAX_OPERANDS, &ids, &nops))
		return false;
	ncc_inst_t **ops = NULL;
	if (nops) {
		ops = ncc_alloc(c->m, sizeof(*ops) * (size_t)nops);
		if (!ops)
			return hp_nomem(c);
	}
	for (int32_t i = 0; i < nops; i++) {
		ncc_inst_t *d = ncc_id_map_get(&c->insts, ids[i]);
		if (!d)
			return hp_fail(c, NCC_ERR_PARSE, "operand_ids", -1,
				       "operand %d: unknown instruction id %lld (operands come before their users)",
				       (int)i, (long long)ids[i]);
		if (d->parent != comp)
			return hp_fail(c, NCC_ERR_PARSE, "operand_ids", -1,
				       "operand %d: id %lld is '%s' of computation '%s', not of this one",
				       (int)i, (long long)ids[i], d->name, d->parent->name);
		ops[i] = d;
	}
	if (f.op == NCC_OP_PARAMETER && nops)
		return hp_fail(c, NCC_ERR_PARSE, "operand_ids", -1, "a parameter has no operands");
	if (f.op == NCC_OP_CONSTANT && nops)
		return hp_fail(c, NCC_ERR_PARSE, "operand_ids", -1, "a constant has no operands");

	ncc_inst_t *inst;
	if (ncc_inst_create(comp, f.op, &shape, name, ops, nops, &inst) != NCC_OK)
		return hp_nomem(c);
	if (!ncc_id_map_put(&c->insts, f.id, inst) ||
	    !ncc_name_map_put(&c->inst_names, inst->name, inst))
		return hp_nomem(c);

	if (f.op == NCC_OP_PARAMETER) {
		int64_t pn = f.parameter_number;
		if (pn < 0 || pn > (1 << 20))
			return hp_fail(c, pn < 0 ? NCC_ERR_PARSE : NCC_ERR_LIMIT, "parameter_number", -1,
				       "parameter number %lld out of range", (long long)pn);
		if (pn < comp->nparams && comp->params[pn])
			return hp_fail(c, NCC_ERR_PARSE, "parameter_number", -1,
				       "parameter number %lld is used twice (also by '%s')",
				       (long long)pn, comp->params[pn]->name);
		inst->parameter_number = pn;
		if (ncc_comp_set_param(comp, inst) != NCC_OK)
			return hp_nomem(c);
	}
	if (f.op == NCC_OP_CONSTANT) {
		if (!f.has_literal)
			return hp_fail(c, NCC_ERR_PARSE, "literal", -1, "a constant needs a literal");
		if (!hp_push(c, "literal", -1))
			return false;
		ok = hp_literal(c, hp_sub(c, &f.literal), &inst->shape, &inst->literal);
		hp_pop(c);
		if (!ok)
			return false;
	}
	return hp_inst_attrs(c, inst, &f);
}

/* ---------------------------------------------------------- computations */

static bool decode_comp(hp_ctx_t *c, ncc_pb_reader_t r)
{
	hp_msgdesc_t desc = HP_MSG(comp_fields);
	const char *name = NULL;
	int64_t id = 0, root_id = 0;
	bool has_id = false, has_root = false;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number == HPF_COMP_NAME) {
			if (!hp_string(c, &f, &name))
				return false;
			hp_set_label(c, name[0] == '%' ? name + 1 : name);
		} else if (f.number == HPF_COMP_ID) {
			id = (int64_t)f.value;
			has_id = true;
		} else if (f.number == HPF_COMP_ROOT_ID) {
			root_id = (int64_t)f.value;
			has_root = true;
		}
	}
	if (c->failed)
		return false;
	if (!name)
		return hp_fail(c, NCC_ERR_PARSE, "name", -1, "missing (every computation needs a name)");
	if (name[0] == '%')
		name++;
	if (!hp_valid_name(name, strlen(name)))
		return hp_fail(c, NCC_ERR_PARSE, "name", -1,
			       "'%s' is not a valid HLO name ([A-Za-z0-9_.-]+)", hp_q(c, name));
	hp_set_label(c, name);
	if (ncc_name_map_get(&c->comp_names, name))
		return hp_fail(c, NCC_ERR_PARSE, "name", -1, "computation '%s' is defined twice", name);
	if (!has_id)
		return hp_fail(c, NCC_ERR_PARSE, "id", -1, "missing (instructions call computations by id)");
	if (ncc_id_map_get(&c->comps, id))
		return hp_fail(c, NCC_ERR_PARSE, "id", -1, "computation id %lld is used by '%s' too",
			       (long long)id, ((ncc_comp_t *)ncc_id_map_get(&c->comps, id))->name);
	ncc_comp_t *comp;
	if (ncc__comp_create_unchecked(c->m, name, false, &comp) != NCC_OK)
		return hp_nomem(c);
	if (!ncc_id_map_put(&c->comps, id, comp) ||
	    !ncc_name_map_put(&c->comp_names, comp->name, comp))
		return hp_nomem(c);

	int32_t k = 0;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number != HPF_COMP_INSTRUCTIONS)
			continue;
		if (k >= (1 << 24))
			return hp_fail(c, NCC_ERR_LIMIT, "instructions", -1, "too many instructions");
		c->inst_index = k;
		if (!hp_push(c, "instructions", k))
			return false;
		bool ok = decode_inst(c, comp, hp_sub(c, &f));
		hp_pop(c);
		if (!ok)
			return false;
		k++;
	}
	if (c->failed)
		return false;
	if (comp->ninsts == 0)
		return hp_fail(c, NCC_ERR_PARSE, "instructions", -1, "computation '%s' has no instructions",
			       comp->name);
	/* the root: root_id (proto3 cannot tell an explicit 0 from a missing field, so a
	 * root_id of 0 that names no instruction here means "not given") */
	ncc_inst_t *root = has_root ? ncc_id_map_get(&c->insts, root_id) : NULL;
	if (!has_root || root_id == 0) {
		if (!root || root->parent != comp)
			root = comp->insts[comp->ninsts - 1]; /* XLA's rule: the last one */
	} else if (!root || root->parent != comp) {
		return hp_fail(c, NCC_ERR_PARSE, "root_id", -1,
			       "root id %lld is no instruction of computation '%s'", (long long)root_id,
			       comp->name);
	}
	comp->root = root;
	for (int32_t i = 0; i < comp->nparams; i++)
		if (!comp->params[i])
			return hp_fail(c, NCC_ERR_PARSE, NULL, -1,
				       "computation '%s' has parameter(%d) missing (it has %d parameters)",
				       comp->name, (int)i, (int)comp->nparams);
	/* the signature as XLA prints it: parameter names and shapes, the root's shape,
	 * without layouts */
	comp->nsig_params = comp->nparams;
	if (comp->nparams) {
		comp->sig_param_names = ncc_alloc(c->m, sizeof(char *) * (size_t)comp->nparams);
		comp->sig_param_shapes = ncc_alloc(c->m, sizeof(ncc_shape_t) * (size_t)comp->nparams);
		if (!comp->sig_param_names || !comp->sig_param_shapes)
			return hp_nomem(c);
		for (int32_t i = 0; i < comp->nparams; i++) {
			comp->sig_param_names[i] = comp->params[i]->name;
			if (!hp_shape_no_layout(c, &comp->params[i]->shape, &comp->sig_param_shapes[i], 0))
				return false;
		}
	}
	comp->has_sig_result = true;
	return hp_shape_no_layout(c, &root->shape, &comp->sig_result, 0);
}

/* ---------------------------------------------------------------- module */

static bool decode_aliases(hp_ctx_t *c, ncc_pb_reader_t r)
{
	hp_iter_t it;
	ncc_pb_field_t f;
	int32_t n = 0;
	hp_iter_init(&it, r, HP_MSG(alias_fields));
	while (hp_iter_next(c, &it, &f))
		if (++n > (1 << 16))
			return hp_fail(c, NCC_ERR_LIMIT, "entries", -1, "more than %d aliases", 1 << 16);
	if (c->failed || !n)
		return !c->failed;
	ncc_alias_t *arr = ncc_alloc(c->m, sizeof(*arr) * (size_t)n);
	if (!arr)
		return hp_nomem(c);
	int32_t k = 0;
	hp_iter_init(&it, r, HP_MSG(alias_fields));
	while (hp_iter_next(c, &it, &f)) {
		if (!hp_push(c, "entries", k))
			return false;
		ncc_pb_reader_t er = hp_sub(c, &f);
		hp_msgdesc_t ed = HP_MSG(alias_entry_fields);
		ncc_alias_t *a = &arr[k];
		a->kind = NCC_ALIAS_MUST; /* XLA reads anything but MAY_ALIAS as must-alias */
		hp_iter_t eit;
		ncc_pb_field_t e;
		hp_iter_init(&eit, er, ed);
		while (hp_iter_next(c, &eit, &e)) {
			if (e.number == HPF_ALIAS_PARAMETER_NUMBER)
				a->param_number = (int64_t)e.value;
			else if (e.number == HPF_ALIAS_KIND && e.value == HPV_ALIAS_MAY)
				a->kind = NCC_ALIAS_MAY;
			else if (e.number == HPF_ALIAS_KIND)
				a->kind = NCC_ALIAS_MUST;
		}
		if (c->failed || !hp_rep_ilist(c, er, ed, HPF_ALIAS_OUTPUT_SHAPE_INDEX, &a->output_index) ||
		    !hp_rep_ilist(c, er, ed, HPF_ALIAS_PARAMETER_SHAPE_INDEX, &a->param_index))
			return false;
		if (a->param_number < 0)
			return hp_fail(c, NCC_ERR_PARSE, "parameter_number", -1, "negative (%lld)",
				       (long long)a->param_number);
		hp_pop(c);
		k++;
	}
	if (c->failed)
		return false;
	c->m->aliases = arr;
	c->m->naliases = n;
	return true;
}

static bool add_module_raw(hp_ctx_t *c, const char *key, const char *text)
{
	int32_t n = c->m->nraw_attrs;
	ncc_raw_attr_t *na = ncc_alloc(c->m, sizeof(*na) * (size_t)(n + 1));
	if (!na)
		return hp_nomem(c);
	if (n)
		memcpy(na, c->m->raw_attrs, sizeof(*na) * (size_t)n);
	na[n].key = key;
	na[n].text = text;
	c->m->raw_attrs = na;
	c->m->nraw_attrs = n + 1;
	return true;
}

/* buffer_donor entries into m->donors (the parser's form of
 * buffer_donor={ (1, {}), (2, {}) }). */
static bool decode_donors(hp_ctx_t *c, ncc_pb_reader_t r)
{
	hp_iter_t it;
	ncc_pb_field_t f;
	int32_t n = 0;
	hp_iter_init(&it, r, HP_MSG(donor_fields));
	while (hp_iter_next(c, &it, &f))
		if (++n > (1 << 16))
			return hp_fail(c, NCC_ERR_LIMIT, "entries", -1, "more than %d buffer donors", 1 << 16);
	if (c->failed || !n)
		return !c->failed;
	ncc_donor_t *arr = ncc_alloc(c->m, sizeof(*arr) * (size_t)n);
	if (!arr)
		return hp_nomem(c);
	int32_t k = 0;
	hp_iter_init(&it, r, HP_MSG(donor_fields));
	while (hp_iter_next(c, &it, &f)) {
		if (!hp_push(c, "entries", k))
			return false;
		ncc_pb_reader_t er = hp_sub(c, &f);
		hp_msgdesc_t ed = HP_MSG(donor_entry_fields);
		ncc_donor_t *d = &arr[k];
		hp_iter_t eit;
		ncc_pb_field_t e;
		hp_iter_init(&eit, er, ed);
		while (hp_iter_next(c, &eit, &e))
			if (e.number == HPF_DONOR_PARAMETER_NUMBER)
				d->param_number = (int64_t)e.value;
		if (c->failed || !hp_rep_ilist(c, er, ed, HPF_DONOR_PARAMETER_SHAPE_INDEX, &d->param_index))
			return false;
		if (d->param_number < 0)
			return hp_fail(c, NCC_ERR_PARSE, "parameter_number", -1, "negative (%lld)",
				       (long long)d->param_number);
		hp_pop(c);
		k++;
	}
	if (c->failed)
		return false;
	c->m->donors = arr;
	c->m->ndonors = n;
	return true;
}

/* replica_count=N, num_partitions=M (when not 1), as XLA prints its module config. */
static bool decode_device_assignment(hp_ctx_t *c, ncc_pb_reader_t r)
{
	int64_t counts[2] = { 1, 1 };
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, HP_MSG(devassign_fields));
	while (hp_iter_next(c, &it, &f))
		counts[f.number == HPF_DEVASSIGN_REPLICA_COUNT ? 0 : 1] = (int32_t)(uint32_t)f.value;
	if (c->failed)
		return false;
	static const char *const keys[2] = { "replica_count", "num_partitions" };
	for (int i = 0; i < 2; i++) {
		if (counts[i] == 1)
			continue;
		if (counts[i] < 0)
			return hp_fail(c, NCC_ERR_PARSE, keys[i], -1, "negative (%lld)",
				       (long long)counts[i]);
		char buf[24];
		snprintf(buf, sizeof(buf), "%lld", (long long)counts[i]);
		const char *text = ncc_strdup(c->m, buf);
		if (!text)
			return hp_nomem(c);
		if (!add_module_raw(c, keys[i], text))
			return false;
	}
	return true;
}

/* entry_computation_layout: the host program shape with layouts, as XLA prints it. */
static bool entry_layout(hp_ctx_t *c, bool has_host, const ncc_pb_field_t *host)
{
	hp_text_t t = { 0 };
	hp_text_printf(&t, "(");
	if (has_host) {
		if (!hp_push(c, "host_program_shape", -1))
			return false;
		ncc_pb_reader_t r = hp_sub(c, host);
		hp_iter_t it;
		ncc_pb_field_t f;
		int32_t np = 0;
		bool has_result = false;
		ncc_shape_t result;
		hp_iter_init(&it, r, HP_MSG(program_shape_fields));
		while (hp_iter_next(c, &it, &f)) {
			ncc_shape_t s;
			bool ok;
			if (f.number == 1) {
				ok = hp_push(c, "parameters", np) && hp_shape(c, hp_sub(c, &f), &s);
				hp_pop(c);
				if (!ok)
					break;
				if (np)
					hp_text_printf(&t, np % 5 == 0 ? ", /*index=%d*/" : ", ", (int)np);
				hp_text_shape(&t, &s, 0);
				np++;
			} else {
				ok = hp_push(c, "result", -1) && hp_shape(c, hp_sub(c, &f), &result);
				hp_pop(c);
				if (!ok)
					break;
				has_result = true;
			}
		}
		hp_pop(c);
		if (c->failed) {
			free(t.s);
			return false;
		}
		hp_text_printf(&t, ")->");
		if (has_result)
			hp_text_shape(&t, &result, 0);
		else
			hp_text_printf(&t, "()");
	} else {
		const ncc_comp_t *e = c->m->entry;
		for (int32_t i = 0; i < e->nparams; i++) {
			if (i)
				hp_text_printf(&t, i % 5 == 0 ? ", /*index=%d*/" : ", ", (int)i);
			hp_text_shape(&t, &e->params[i]->shape, 0);
		}
		hp_text_printf(&t, ")->");
		hp_text_shape(&t, &e->root->shape, 0);
	}
	c->m->entry_computation_layout = hp_text_finish(c, &t);
	return c->m->entry_computation_layout != NULL;
}

static bool decode_module(hp_ctx_t *c)
{
	ncc_pb_reader_t r = ncc_pb_reader(c->data, c->len);
	hp_msgdesc_t desc = HP_MSG(module_fields);
	const char *name = NULL, *entry_name = NULL;
	int64_t entry_id = 0;
	bool has_entry_id = false, has_host = false, has_alias = false, has_donor = false,
	     has_frontend = false;
	bool has_devassign = false;
	ncc_pb_field_t host, alias, donor, frontend, devassign;
	int32_t ncomps = 0;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		switch (f.number) {
		case HPF_MODULE_NAME:
			if (!hp_string(c, &f, &name))
				return false;
			break;
		case HPF_MODULE_ENTRY_COMPUTATION_NAME:
			if (!hp_string(c, &f, &entry_name))
				return false;
			break;
		case HPF_MODULE_COMPUTATIONS:
			if (ncomps >= (1 << 20))
				return hp_fail(c, NCC_ERR_LIMIT, "computations", -1, "too many computations");
			c->comp_index = ncomps;
			if (!hp_push(c, "computations", ncomps))
				return false;
			if (!decode_comp(c, hp_sub(c, &f)))
				return false;
			hp_pop(c);
			ncomps++;
			break;
		case HPF_MODULE_HOST_PROGRAM_SHAPE: host = f; has_host = true; break;
		case HPF_MODULE_ENTRY_COMPUTATION_ID:
			entry_id = (int64_t)f.value;
			has_entry_id = true;
			break;
		case HPF_MODULE_SCHEDULE: c->m->is_scheduled = true; break;
		case HPF_MODULE_INPUT_OUTPUT_ALIAS: alias = f; has_alias = true; break;
		case HPF_MODULE_BUFFER_DONOR: donor = f; has_donor = true; break;
		case HPF_MODULE_DEVICE_ASSIGNMENT: devassign = f; has_devassign = true; break;
		case HPF_MODULE_FRONTEND_ATTRIBUTES: frontend = f; has_frontend = true; break;
		default: break;
		}
	}
	if (c->failed)
		return false;
	if (name && name[0]) {
		if (name[0] == '%')
			name++;
		bool ident_start = (name[0] >= 'a' && name[0] <= 'z') ||
				   (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_';
		if (!ident_start || !hp_valid_name(name, strlen(name)))
			return hp_fail(c, NCC_ERR_PARSE, "name", -1,
				       "module name '%s' is not an HLO identifier%s", hp_q(c, name),
				       ncomps ? "" :
				       " (is this an xla.HloProto, as --xla_dump_hlo_as_proto writes? "
				       "its field 1 holds the HloModuleProto)");
		c->m->name = name;
	}
	if (ncomps == 0)
		return hp_fail(c, NCC_ERR_PARSE, "computations", -1, "the module has no computation");
	if (!resolve_pending(c))
		return false;
	/* the entry: by id, else by name, else (as XLA's text rule) the last one */
	ncc_comp_t *entry = has_entry_id ? ncc_id_map_get(&c->comps, entry_id) : NULL;
	if (!entry && entry_name && entry_name[0]) {
		entry = ncc_module_find_comp(c->m, entry_name[0] == '%' ? entry_name + 1 : entry_name);
		if (!entry)
			return hp_fail(c, NCC_ERR_PARSE, "entry_computation_name", -1,
				       "no computation is named '%s'", hp_q(c, entry_name));
	}
	if (!entry && has_entry_id && entry_id != 0)
		return hp_fail(c, NCC_ERR_PARSE, "entry_computation_id", -1,
			       "no computation has id %lld", (long long)entry_id);
	if (!entry)
		entry = c->m->comps[c->m->ncomps - 1];
	entry->is_entry = true;
	c->m->entry = entry;
	if (has_alias) {
		if (!hp_push(c, "input_output_alias", -1) || !decode_aliases(c, hp_sub(c, &alias)))
			return false;
		hp_pop(c);
	}
	if (has_donor) {
		if (!hp_push(c, "buffer_donor", -1) || !decode_donors(c, hp_sub(c, &donor)))
			return false;
		hp_pop(c);
	}
	if (!entry_layout(c, has_host, &host))
		return false;
	if (has_devassign) {
		if (!hp_push(c, "device_assignment", -1) ||
		    !decode_device_assignment(c, hp_sub(c, &devassign)))
			return false;
		hp_pop(c);
	}
	if (has_frontend) {
		const char *text = NULL;
		if (!hp_push(c, "frontend_attributes", -1) ||
		    !hp_frontend_text(c, hp_sub(c, &frontend), &text))
			return false;
		hp_pop(c);
		if (text && !add_module_raw(c, "frontend_attributes", text))
			return false;
	}
	/* a calls={a,b} list also sets calls, as the text parser does */
	for (int32_t i = 0; i < c->m->ncomps; i++) {
		ncc_comp_t *comp = c->m->comps[i];
		for (int32_t k = 0; k < comp->ninsts; k++) {
			ncc_inst_t *in = comp->insts[k];
			if (!in->calls && in->ncalled && in->op != NCC_OP_CUSTOM_CALL)
				in->calls = in->called[0];
		}
	}
	return true;
}

ncc_status_t ncc_parse_hlo_proto(const void *data, size_t len, const char *name,
				 ncc_module_t **out_module, ncc_error_t *err)
{
	*out_module = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	const char *label = name ? name : "<proto>";
	if (!data && len)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "%s: hlo proto: no input", label);
	if (len > NCC_PARSE_MAX_INPUT)
		return ncc_error_set(err, NCC_ERR_LIMIT, 0, 0,
				     "%s: hlo proto: input of %zu bytes exceeds the limit of %u bytes",
				     label, len, NCC_PARSE_MAX_INPUT);
	hp_ctx_t c;
	memset(&c, 0, sizeof(c));
	c.err = err;
	c.data = data;
	c.len = len;
	if (ncc_module_create("module", &c.m) != NCC_OK)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: hlo proto: out of memory", label);
	c.label = ncc_strdup(c.m, label);
	if (!c.label) {
		ncc_module_free(c.m);
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: hlo proto: out of memory", label);
	}
	c.m->filename = c.label;
	bool ok = decode_module(&c);
	ncc_id_map_free(&c.insts);
	ncc_id_map_free(&c.comps);
	ncc_name_map_free(&c.inst_names);
	ncc_name_map_free(&c.comp_names);
	free(c.pend);
	if (!ok) {
		ncc_module_free(c.m);
		return c.status ? c.status : NCC_ERR_PARSE;
	}
	*out_module = c.m;
	return NCC_OK;
}
