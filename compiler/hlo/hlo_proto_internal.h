/* ncc HloModuleProto decoder internals: the decoding context (field path for messages, id maps, limits) shared by hlo_proto*.c. */
#ifndef NCC_HLO_PROTO_INTERNAL_H
#define NCC_HLO_PROTO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo_proto_fields.h"
#include "ir.h"
#include "ir_internal.h"
#include "map.h"
#include "pb_reader.h"

/* ------------------------------------------------------------ messages */

/* Expected wire shape of a field, from the schema. */
typedef enum hp_kind {
	HP_K_VARINT,  /* int32, int64, uint32, uint64, bool, enum */
	HP_K_FIXED32, /* float */
	HP_K_FIXED64, /* double */
	HP_K_LEN,     /* string, bytes, message */
	HP_K_REP_VARINT,  /* repeated scalar: packed (LEN) or one VARINT per element */
	HP_K_REP_FIXED32,
	HP_K_REP_FIXED64,
} hp_kind_t;

/* One known field of a message: fields not in the message's table are skipped. */
typedef struct hp_fdesc {
	uint32_t num;
	const char *name;
	hp_kind_t kind;
} hp_fdesc_t;

typedef struct hp_msgdesc {
	const hp_fdesc_t *fields;
	size_t nfields;
} hp_msgdesc_t;

#define HP_MSG(tab) ((hp_msgdesc_t){ (tab), sizeof(tab) / sizeof((tab)[0]) })

/* Iteration over one message's known fields. */
typedef struct hp_iter {
	ncc_pb_reader_t r;
	hp_msgdesc_t desc;
} hp_iter_t;

/* ------------------------------------------------------------- context */

/* The path of the message being decoded, e.g. computations[1].instructions[7].shape;
 * deep enough for NCC_PARSE_MAX_DEPTH nested tuple shapes/literals/shardings plus
 * the fixed levels above them. */
#define HP_PATH_MAX (NCC_PARSE_MAX_DEPTH + 16)

typedef struct hp_seg {
	const char *name;
	int64_t index; /* -1: not an element of a repeated field */
	const char *label; /* e.g. the instruction's name, shown as "(%name)"; may be NULL */
} hp_seg_t;

/* A computation reference resolved once every computation is known. */
typedef struct hp_pending {
	ncc_comp_t **slot;
	int64_t id;
	int32_t comp_index, inst_index;
	const char *inst_name;
	const char *field;
} hp_pending_t;

typedef struct hp_ctx {
	ncc_module_t *m;
	ncc_error_t *err;
	const char *label; /* the caller's name for the input, or "<proto>" */
	const uint8_t *data;
	size_t len;
	bool failed;
	ncc_status_t status;
	hp_seg_t path[HP_PATH_MAX];
	int npath;
	int depth; /* nesting of recursive messages (tuple shapes, literals, shardings) */
	ncc_id_map_t insts; /* every instruction of the module by id */
	ncc_id_map_t comps; /* computations by id */
	ncc_name_map_t inst_names; /* the names in use (instruction and computation names are unique) */
	ncc_name_map_t comp_names;
	hp_pending_t *pend;
	size_t npend, cap_pend;
	int32_t comp_index; /* index of the computation being decoded, for pending refs */
	int32_t inst_index;
	char quoted[4][200]; /* hp_q()'s buffers */
	int nquoted;
} hp_ctx_t;

/* Records the first error: "LABEL: hlo proto: PATH[.field]: MESSAGE[ at byte N]".
 * field may be NULL; at < 0 omits the byte offset. Always returns false. */
bool hp_fail(hp_ctx_t *c, ncc_status_t st, const char *field, long long at, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
bool hp_nomem(hp_ctx_t *c);
/* hp_fail for a wire-format error of the reader (pb_reader.h), whose message names
 * the byte: NCC_ERR_PARSE "PATH[.field]: truncated varint at byte N". Consumes st;
 * returns false. */
bool hp_fail_pb(hp_ctx_t *c, const char *field, ns_status_t st);
/* s from the input, fit for a message: at most 60 characters, anything but printable
 * ASCII as \xNN. The result lives in c until four more calls. */
const char *hp_q(hp_ctx_t *c, const char *s);

/* Path segments (push fails with a LIMIT error past HP_PATH_MAX). */
bool hp_push(hp_ctx_t *c, const char *name, int64_t index);
void hp_pop(hp_ctx_t *c);
void hp_set_label(hp_ctx_t *c, const char *label);
/* Recursion guard for nested messages (NCC_PARSE_MAX_DEPTH). */
bool hp_enter(hp_ctx_t *c);
void hp_leave(hp_ctx_t *c);

/* Message iteration: returns the next field that is in desc (skipping unknown ones),
 * with *d its descriptor; NULL at the end or after an error (check c->failed).
 * A known field of the wrong wire type is an error. */
void hp_iter_init(hp_iter_t *it, ncc_pb_reader_t r, hp_msgdesc_t desc);
const hp_fdesc_t *hp_iter_next(hp_ctx_t *c, hp_iter_t *it, ncc_pb_field_t *f);
/* The descriptor of field number num in desc (for messages), or NULL. */
const hp_fdesc_t *hp_field_desc(hp_msgdesc_t desc, uint32_t num);

/* Sub-reader over a LEN field. */
ncc_pb_reader_t hp_sub(const hp_ctx_t *c, const ncc_pb_field_t *f);
/* One element of a repeated message field f: hp_elem_begin enters it (path
 * name[k]) and starts *it over its fields (desc); hp_elem_end leaves it, false when
 * decoding it failed. Both false on failure, with the error recorded. */
bool hp_elem_begin(hp_ctx_t *c, const ncc_pb_field_t *f, const char *name, int64_t k,
		   hp_msgdesc_t desc, hp_iter_t *it);
bool hp_elem_end(hp_ctx_t *c);

/* All values of repeated scalar field num in message r (every occurrence, packed or
 * not), as int64 in an arena array (*out NULL when empty). More than limit values is
 * NCC_ERR_LIMIT. */
bool hp_rep_i64(hp_ctx_t *c, ncc_pb_reader_t r, hp_msgdesc_t desc, uint32_t num, int64_t limit,
		int64_t **out, int32_t *out_n);
/* The same into an ncc_ilist_t (present set). */
bool hp_rep_ilist(hp_ctx_t *c, ncc_pb_reader_t r, hp_msgdesc_t desc, uint32_t num,
		  ncc_ilist_t *out);

/* A string/bytes field as an arena string, cut at the first NUL (the IR's strings
 * are NUL-terminated). */
bool hp_string(hp_ctx_t *c, const ncc_pb_field_t *f, const char **out);
/* True when [s, s+len) is a name the HLO text format can spell after '%'. */
bool hp_valid_name(const char *s, size_t len);

/* ------------------------------------------------------ a text builder */

/* Growing text for attributes the IR keeps as text (sharding, layouts, aliases). */
typedef ncc_strbuf_t hp_text_t;

void hp_text_printf(hp_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Moves the text into m's arena; NULL on OOM (then c has the error). Frees t. */
const char *hp_text_finish(hp_ctx_t *c, hp_text_t *t);
/* Integers joined by ','. */
void hp_text_ints(hp_text_t *t, const int64_t *v, int32_t n);
/* XLA's spelling of a shape with its layout, tuples with "/index=N/" comments every
 * five elements, as entry_computation_layout and operand_layout_constraints hold it. */
void hp_text_shape(hp_text_t *t, const ncc_shape_t *s, int depth);

/* ------------------------------------------------ shapes and literals */

/* Decodes an xla.ShapeProto. */
bool hp_shape(hp_ctx_t *c, ncc_pb_reader_t r, ncc_shape_t *out);
/* Deep copy of s into the arena without layouts (the computation signature form). */
bool hp_shape_no_layout(hp_ctx_t *c, const ncc_shape_t *s, ncc_shape_t *out, int depth);
/* Decodes the xla.LiteralProto of a constant of shape `shape`. */
bool hp_literal(hp_ctx_t *c, ncc_pb_reader_t r, const ncc_shape_t *shape, ncc_literal_t *out);
/* The ncc element type of an xla.PrimitiveType number; NCC_INVALID if unknown. */
ncc_etype_t hp_etype(uint64_t v);

/* --------------------------------------------------------- attributes */

/* The fields of one HloInstructionProto, as found by the first pass. Message fields
 * keep their last occurrence (protobuf would merge repeated occurrences of a singular
 * message; producers never write them twice). */
typedef struct hp_inst_fields {
	ncc_pb_reader_t msg; /* the whole instruction message */
	const char *name;
	const char *opcode;
	ncc_opcode_t op;
	bool has_shape, has_id, has_literal;
	ncc_pb_field_t shape, literal, metadata, window, conv, padding, dot, gather, scatter,
		precision, sharding, frontend, trsm, cholesky, devlist, param_replication;
	bool has_metadata, has_window, has_conv, has_padding, has_dot, has_gather, has_scatter,
		has_precision, has_sharding, has_frontend, has_trsm, has_cholesky, has_devlist,
		has_param_replication, has_epsilon;
	int64_t id, parameter_number, tuple_index, feature_group_count, batch_group_count;
	int64_t exponent_bits, mantissa_bits, feature_index, channel_id, k;
	uint64_t distribution, rng_algorithm, fft_type, api_version, schedule;
	float epsilon;
	bool is_stable, indices_are_sorted, unique_indices, constrain_layout,
		use_global_device_ids, has_side_effect, largest;
	const char *fusion_kind, *custom_call_target, *backend_config;
	const char *cmp_dir, *cmp_type;
	int32_t nslices, npairs, nreplica_groups, nooa, nlayout_shapes;
} hp_inst_fields_t;

extern const hp_msgdesc_t hp_inst_desc;

/* Descends into a field's message for the path of messages, and leaves it. */
#define HP_IN(c, name, idx) hp_push((c), (name), (idx))
#define HP_OUT(c) hp_pop(c)

/* Sub-decoders (hlo_proto_dnums.c): `has` false means the message is absent and the
 * result holds the defaults the text form implies. Each allocates its result in the
 * arena. */
bool hp_window(hp_ctx_t *c, ncc_pb_reader_t r, ncc_window_t **out);
bool hp_conv(hp_ctx_t *c, ncc_pb_reader_t r, ncc_conv_dnums_t **out);
bool hp_dot(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_dot_dnums_t **out);
bool hp_gather(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_gather_dnums_t **out);
bool hp_scatter(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_scatter_dnums_t **out);
bool hp_padding(hp_ctx_t *c, bool has, ncc_pb_reader_t r, ncc_padding_t **out);
bool hp_slices(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_slice_t **out);
/* (hlo_proto_collective.c) */
bool hp_replica_groups(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_replica_groups_t *rg);
bool hp_pairs(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_inst_t *in);
bool hp_sharding_text(hp_ctx_t *c, ncc_pb_reader_t r, hp_text_t *t);

/* Sets every attribute of inst (operands already in place) from its fields. */
bool hp_inst_attrs(hp_ctx_t *c, ncc_inst_t *inst, const hp_inst_fields_t *f);
/* Queues a computation reference for resolution at the end. */
bool hp_add_pending(hp_ctx_t *c, ncc_comp_t **slot, int64_t id, const char *inst_name,
		    const char *field);
/* Module-level frontend_attributes={...} text (raw attribute value), NULL when empty. */
bool hp_frontend_text(hp_ctx_t *c, ncc_pb_reader_t r, const char **out);

#endif /* NCC_HLO_PROTO_INTERNAL_H */
