/* ncc IR: the in-memory form of an XLA HLO module (module, computations, instructions, shapes, attributes). */
#ifndef NCC_IR_H
#define NCC_IR_H

/*
 * Ownership model
 * ---------------
 * An ncc_module_t owns everything reachable from it: computations, instructions,
 * shapes, attribute payloads, strings and literal bytes all live in the module's
 * arena and are released at once by ncc_module_free(). Nothing inside a module is
 * freed individually; removing an instruction only unlinks it. Pointers into a module
 * are therefore valid until ncc_module_free(), and must never be stored in another
 * module (use ncc_shape_clone() to copy a tuple shape across modules).
 *
 * Every function that can fail returns ncc_status_t; results come back through out_
 * parameters, which are set to NULL/0 on failure. Detailed messages go into an
 * optional ncc_error_t supplied by the caller.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ncc/ncc.h"
#include "ncc/ncc_shape.h"
#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ncc_status_t, ncc_error_t, ncc_status_name(): include/ncc/ncc.h */

/* Fills err (if not NULL) and returns st; for use by every compiler layer. */
ncc_status_t ncc_error_set(ncc_error_t *err, ncc_status_t st, int line, int col, const char *fmt,
			   ...) __attribute__((format(printf, 5, 6)));
/* The compiler's code for a status from a layer below it (file reads, the NEFF
 * builder, the shape checks of lower/): NCC_OK for NULL, NCC_ERR_NOMEM when it is
 * ENOMEM, NCC_ERR_LIMIT for another RESOURCE_EXHAUSTED (EFBIG, a NEFF or device
 * limit), else fallback. st is not freed. */
ncc_status_t ncc_status_from_ns(ns_status_t st, ncc_status_t fallback);

/* Element types (ncc_etype_t, NCC_ETYPES) and shapes (ncc_shape_t, NCC_MAX_RANK, the
 * ncc_etype_* and ncc_shape_* queries): include/ncc/ncc_shape.h */

/* ---------------------------------------------------------------- opcodes */

/* X(ENUM, "hlo name"). Every opcode of XLA's HLO instruction set (the operation
 * semantics page plus hlo_opcode.h). Unknown names parse as NCC_OP_UNKNOWN with the
 * text kept in ncc_inst_t.opname. */
#define NCC_OPCODES(X)                                          \
	X(UNKNOWN, "unknown")                                   \
	X(ABS, "abs")                                           \
	X(ADD, "add")                                           \
	X(ADD_DEPENDENCY, "add-dependency")                     \
	X(AFTER_ALL, "after-all")                               \
	X(ALL_GATHER, "all-gather")                             \
	X(ALL_GATHER_DONE, "all-gather-done")                   \
	X(ALL_GATHER_START, "all-gather-start")                 \
	X(ALL_REDUCE, "all-reduce")                             \
	X(ALL_REDUCE_DONE, "all-reduce-done")                   \
	X(ALL_REDUCE_START, "all-reduce-start")                 \
	X(ALL_TO_ALL, "all-to-all")                             \
	X(AND, "and")                                           \
	X(ASYNC_DONE, "async-done")                             \
	X(ASYNC_START, "async-start")                           \
	X(ASYNC_UPDATE, "async-update")                         \
	X(ATAN2, "atan2")                                       \
	X(BATCH_NORM_GRAD, "batch-norm-grad")                   \
	X(BATCH_NORM_INFERENCE, "batch-norm-inference")         \
	X(BATCH_NORM_TRAINING, "batch-norm-training")           \
	X(BITCAST, "bitcast")                                   \
	X(BITCAST_CONVERT, "bitcast-convert")                   \
	X(BROADCAST, "broadcast")                               \
	X(CALL, "call")                                         \
	X(CBRT, "cbrt")                                         \
	X(CEIL, "ceil")                                         \
	X(CHOLESKY, "cholesky")                                 \
	X(CLAMP, "clamp")                                       \
	X(CLZ, "count-leading-zeros")                           \
	X(COLLECTIVE_BROADCAST, "collective-broadcast")         \
	X(COLLECTIVE_PERMUTE, "collective-permute")             \
	X(COLLECTIVE_PERMUTE_DONE, "collective-permute-done")   \
	X(COLLECTIVE_PERMUTE_START, "collective-permute-start") \
	X(COMPARE, "compare")                                   \
	X(COMPLEX, "complex")                                   \
	X(CONCATENATE, "concatenate")                           \
	X(CONDITIONAL, "conditional")                           \
	X(CONSTANT, "constant")                                 \
	X(CONVERT, "convert")                                   \
	X(CONVOLUTION, "convolution")                           \
	X(COPY, "copy")                                         \
	X(COPY_DONE, "copy-done")                               \
	X(COPY_START, "copy-start")                             \
	X(COS, "cosine")                                        \
	X(CUSTOM_CALL, "custom-call")                           \
	X(DIVIDE, "divide")                                     \
	X(DOMAIN, "domain")                                     \
	X(DOT, "dot")                                           \
	X(DYNAMIC_RESHAPE, "dynamic-reshape")                   \
	X(DYNAMIC_SLICE, "dynamic-slice")                       \
	X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice")         \
	X(ERF, "erf")                                           \
	X(EXP, "exponential")                                   \
	X(EXPM1, "exponential-minus-one")                       \
	X(FFT, "fft")                                           \
	X(FLOOR, "floor")                                       \
	X(FUSION, "fusion")                                     \
	X(GATHER, "gather")                                     \
	X(GET_DIMENSION_SIZE, "get-dimension-size")             \
	X(GET_TUPLE_ELEMENT, "get-tuple-element")               \
	X(IMAG, "imag")                                         \
	X(INFEED, "infeed")                                     \
	X(IOTA, "iota")                                         \
	X(IS_FINITE, "is-finite")                               \
	X(LOG, "log")                                           \
	X(LOG1P, "log-plus-one")                                \
	X(LOGISTIC, "logistic")                                 \
	X(MAP, "map")                                           \
	X(MAXIMUM, "maximum")                                   \
	X(MINIMUM, "minimum")                                   \
	X(MULTIPLY, "multiply")                                 \
	X(NEGATE, "negate")                                     \
	X(NOT, "not")                                           \
	X(OPTIMIZATION_BARRIER, "opt-barrier")                  \
	X(OR, "or")                                             \
	X(OUTFEED, "outfeed")                                   \
	X(PAD, "pad")                                           \
	X(PARAMETER, "parameter")                               \
	X(PARTITION_ID, "partition-id")                         \
	X(POPCNT, "popcnt")                                     \
	X(POWER, "power")                                       \
	X(REAL, "real")                                         \
	X(RECV, "recv")                                         \
	X(RECV_DONE, "recv-done")                               \
	X(REDUCE, "reduce")                                     \
	X(REDUCE_PRECISION, "reduce-precision")                 \
	X(REDUCE_SCATTER, "reduce-scatter")                     \
	X(REDUCE_WINDOW, "reduce-window")                       \
	X(REMAINDER, "remainder")                               \
	X(REPLICA_ID, "replica-id")                             \
	X(RESHAPE, "reshape")                                   \
	X(REVERSE, "reverse")                                   \
	X(RNG, "rng")                                           \
	X(RNG_BIT_GENERATOR, "rng-bit-generator")               \
	X(RNG_GET_AND_UPDATE_STATE, "rng-get-and-update-state") \
	X(ROUND_NEAREST_AFZ, "round-nearest-afz")               \
	X(ROUND_NEAREST_EVEN, "round-nearest-even")             \
	X(RSQRT, "rsqrt")                                       \
	X(SCATTER, "scatter")                                   \
	X(SELECT, "select")                                     \
	X(SELECT_AND_SCATTER, "select-and-scatter")             \
	X(SEND, "send")                                         \
	X(SEND_DONE, "send-done")                               \
	X(SET_DIMENSION_SIZE, "set-dimension-size")             \
	X(SHIFT_LEFT, "shift-left")                             \
	X(SHIFT_RIGHT_ARITHMETIC, "shift-right-arithmetic")     \
	X(SHIFT_RIGHT_LOGICAL, "shift-right-logical")           \
	X(SIGN, "sign")                                         \
	X(SIN, "sine")                                          \
	X(SLICE, "slice")                                       \
	X(SORT, "sort")                                         \
	X(SQRT, "sqrt")                                         \
	X(STOCHASTIC_CONVERT, "stochastic-convert")             \
	X(SUBTRACT, "subtract")                                 \
	X(TAN, "tan")                                           \
	X(TANH, "tanh")                                         \
	X(TOPK, "topk")                                         \
	X(TRANSPOSE, "transpose")                               \
	X(TRIANGULAR_SOLVE, "triangular-solve")                 \
	X(TUPLE, "tuple")                                       \
	X(WHILE, "while")                                       \
	X(XOR, "xor")

typedef enum ncc_opcode {
#define NCC_X_(e, s) NCC_OP_##e,
	NCC_OPCODES(NCC_X_)
#undef NCC_X_
	NCC_OP_COUNT
} ncc_opcode_t;

const char *ncc_opcode_name(ncc_opcode_t op);                 /* "add"; "unknown" */
/* Also accepts the aliases "optimization-barrier" and "clz". */
ncc_opcode_t ncc_opcode_from_name(const char *s, size_t len); /* NCC_OP_UNKNOWN if unknown */
/* Elementwise classes, per XLA's shape inference: the result has the operands'
 * dimensions; its element type is the operands' except for compare and is-finite
 * (pred), convert (any), real/imag/abs of complex (the component type) and complex.
 * bitcast-convert is not in these classes (a width change alters the dimensions). */
bool ncc_opcode_is_elementwise_unary(ncc_opcode_t op);
bool ncc_opcode_is_elementwise_binary(ncc_opcode_t op);
bool ncc_opcode_is_elementwise(ncc_opcode_t op); /* unary, binary, select, clamp, convert... */

/* ------------------------------------------------------------- attributes */

/* A list of integers; present distinguishes "dimensions={}" from "absent". */
typedef struct ncc_ilist {
	bool present;
	int32_t n;
	int64_t *v; /* arena; NULL when n == 0 */
} ncc_ilist_t;

typedef struct ncc_window_dim {
	int64_t size;
	int64_t stride;       /* default 1 */
	int64_t pad_lo;       /* default 0; may be negative */
	int64_t pad_hi;
	int64_t lhs_dilation; /* default 1 */
	int64_t rhs_dilation; /* default 1 */
	bool reversal;        /* default false */
} ncc_window_dim_t;

/* window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=0x1} */
typedef struct ncc_window {
	int32_t n;
	ncc_window_dim_t *dims; /* arena, n entries; an empty window has n == 0 */
} ncc_window_t;

/* dim_labels=bf01_oi01->bf01, parsed. Spatial dims are in the order of the digits
 * 0,1,2,... (digit k -> *_spatial[k]). */
typedef struct ncc_conv_dnums {
	int32_t nspatial;
	int64_t in_batch, in_feature;
	int64_t in_spatial[NCC_MAX_RANK];
	int64_t k_in_feature, k_out_feature; /* kernel 'i' and 'o' */
	int64_t k_spatial[NCC_MAX_RANK];
	int64_t out_batch, out_feature;
	int64_t out_spatial[NCC_MAX_RANK];
} ncc_conv_dnums_t;

typedef struct ncc_dot_dnums {
	ncc_ilist_t lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
} ncc_dot_dnums_t;

typedef struct ncc_pad_dim {
	int64_t lo, hi, interior; /* lo/hi may be negative */
} ncc_pad_dim_t;

/* padding=0_0x1_1_2 (low_high[_interior] per dimension) */
typedef struct ncc_padding {
	int32_t n;
	ncc_pad_dim_t *dims;
} ncc_padding_t;

typedef struct ncc_slice_dim {
	int64_t start, limit, stride; /* stride default 1 */
} ncc_slice_dim_t;

/* slice={[0:2], [1:5:2]} */
typedef struct ncc_slice {
	int32_t n;
	ncc_slice_dim_t *dims;
} ncc_slice_t;

typedef struct ncc_gather_dnums {
	ncc_ilist_t offset_dims, collapsed_slice_dims, start_index_map;
	ncc_ilist_t operand_batching_dims, start_indices_batching_dims;
	int64_t index_vector_dim;
	ncc_ilist_t slice_sizes;
} ncc_gather_dnums_t;

typedef struct ncc_scatter_dnums {
	ncc_ilist_t update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
	ncc_ilist_t input_batching_dims, scatter_indices_batching_dims;
	int64_t index_vector_dim;
} ncc_scatter_dnums_t;

typedef enum ncc_cmp_dir {
	NCC_CMP_NONE = 0, /* attribute absent */
	NCC_CMP_EQ, NCC_CMP_NE, NCC_CMP_LT, NCC_CMP_LE, NCC_CMP_GT, NCC_CMP_GE,
} ncc_cmp_dir_t;

typedef enum ncc_cmp_type {
	NCC_CMPT_DEFAULT = 0, /* absent: derived from the operand type */
	NCC_CMPT_FLOAT, NCC_CMPT_TOTALORDER, NCC_CMPT_SIGNED, NCC_CMPT_UNSIGNED,
} ncc_cmp_type_t;

typedef enum ncc_precision {
	NCC_PRECISION_DEFAULT = 0, NCC_PRECISION_HIGH, NCC_PRECISION_HIGHEST,
} ncc_precision_t;

/* rng distribution=rng_uniform|rng_normal; rng-bit-generator algorithm=... */
typedef enum ncc_rng_dist {
	NCC_RNG_DIST_NONE = 0, NCC_RNG_UNIFORM, NCC_RNG_NORMAL,
} ncc_rng_dist_t;

typedef enum ncc_rng_alg {
	NCC_RNG_ALG_NONE = 0, /* attribute absent */
	NCC_RNG_DEFAULT, NCC_RNG_THREE_FRY, NCC_RNG_PHILOX,
} ncc_rng_alg_t;

/* replica_groups={{0,1},{2,3}} or the iota form [2,2]<=[4] (kept in text, and
 * expanded into groups when it is a plain iota without transpose). */
typedef struct ncc_replica_groups {
	bool present;
	int32_t ngroups;
	int32_t *group_sizes; /* ngroups entries */
	int64_t *ids;         /* concatenation of all groups */
	const char *iota_text;/* "[2,2]<=[4]" when written in iota form, else NULL */
} ncc_replica_groups_t;

typedef struct ncc_kv {
	const char *key;
	const char *value; /* string values unquoted & unescaped */
} ncc_kv_t;

/* metadata={op_type="..." op_name="..." source_file="..." source_line=N}; other
 * metadata keys are tolerated and dropped. Strings are NULL when absent. */
typedef struct ncc_metadata {
	const char *op_type;
	const char *op_name;
	const char *source_file;
	int64_t source_line; /* 0 when absent */
} ncc_metadata_t;

/* Decoded constant. data holds count elements in logical row-major order (the order
 * the text lists them, independent of layout), ncc_etype_storage_bytes(etype) each,
 * host byte order: pred as 0/1 bytes, s4/u4 one byte each, bf16/f16/f8 as their raw
 * bit patterns, c64 as (float re, float im). Tuple constants store the leaves'
 * buffers back to back. elided: written as "{...}": present with no data. */
typedef struct ncc_literal {
	bool present;
	bool elided;
	ncc_etype_t etype;
	int64_t count;
	size_t nbytes;
	uint8_t *data; /* arena; NULL when elided or count == 0 */
} ncc_literal_t;

/* An attribute the parser knows to be valid HLO but the IR does not model
 * (e.g. output_to_operand_aliasing, schedule, statistics): the value text is kept
 * verbatim so the printer can write it back. */
typedef struct ncc_raw_attr {
	const char *key;
	const char *text;
} ncc_raw_attr_t;

/* ----------------------------------------------------------- the IR proper */

struct ncc_comp;
struct ncc_module;

typedef struct ncc_inst {
	const char *name;      /* unique in the module, without '%' */
	ncc_opcode_t op;
	const char *opname;    /* the opcode as written (meaningful for NCC_OP_UNKNOWN) */
	ncc_shape_t shape;     /* result shape */
	int32_t noperands;
	struct ncc_inst **operands; /* same computation */
	struct ncc_comp *parent;
	uint32_t id;           /* unique in the module; dense ids assigned in creation order */

	/* where it came from: 1-based line/col of the instruction, 0 if built by a pass;
	 * text is the whole source line (arena copy, no newline), NULL if built by a pass */
	int line;
	int col;
	const char *text;

	/* --- attributes; each absent unless its present flag / non-NULL pointer --- */
	int64_t parameter_number;     /* parameter(N) */
	int64_t tuple_index;          /* get-tuple-element index=N */
	int64_t iota_dimension;       /* iota */
	ncc_ilist_t dimensions;       /* broadcast, reduce, transpose, reverse, concatenate,
				       * sort, map, all-gather/all-to-all/reduce-scatter, ... */
	ncc_dot_dnums_t *dot;         /* dot (and the dot-like attrs of others) */
	ncc_window_t *window;         /* convolution, reduce-window, select-and-scatter */
	ncc_conv_dnums_t *conv;       /* dim_labels */
	int64_t feature_group_count;  /* default 1 */
	int64_t batch_group_count;    /* default 1 */
	ncc_padding_t *padding;       /* pad */
	ncc_slice_t *slice;           /* slice */
	ncc_ilist_t dynamic_slice_sizes;
	ncc_cmp_dir_t cmp_dir;
	ncc_cmp_type_t cmp_type;
	int32_t nprecision;
	ncc_precision_t *operand_precision; /* operand_precision={default,high} */
	ncc_gather_dnums_t *gather;
	ncc_scatter_dnums_t *scatter;
	bool indices_are_sorted;
	bool unique_indices;

	/* called computations */
	struct ncc_comp *to_apply;    /* reduce, map, scatter, sort, all-reduce, call... */
	struct ncc_comp *condition;   /* while */
	struct ncc_comp *body;        /* while */
	struct ncc_comp *calls;       /* fusion / async-start calls=%c; for a list
				       * calls={%a,%b} the first entry (all are in called) */
	struct ncc_comp *select;      /* select-and-scatter select= */
	struct ncc_comp *scatter_comp;/* select-and-scatter scatter= */
	/* conditional: branch_computations={a,b,c}; the predicate form
	 * true_computation=T, false_computation=F is stored as branches {T, F}, and
	 * branches_are_pred records which spelling was used */
	int32_t nbranches;
	struct ncc_comp **branches;
	bool branches_are_pred;
	int32_t ncalled;              /* custom-call called_computations={...}, or a
				       * calls={...} list */
	struct ncc_comp **called;

	/* custom-call */
	const char *custom_call_target;
	const char *api_version;      /* e.g. "API_VERSION_UNSPECIFIED", NULL if absent */
	bool custom_call_has_side_effect;
	const char *backend_config;   /* raw: the unquoted string or the {...} text */

	/* collectives */
	ncc_replica_groups_t replica_groups;
	int64_t channel_id;           /* 0 when absent */
	bool use_global_device_ids;
	bool constrain_layout;
	int32_t npairs;               /* collective-permute source_target_pairs={{0,1},..} */
	int64_t *pairs;               /* 2*npairs */

	/* rng */
	ncc_rng_dist_t distribution;
	ncc_rng_alg_t rng_algorithm;

	/* batch norm */
	double epsilon;
	bool has_epsilon;
	int64_t feature_index;

	/* sort / others */
	bool is_stable;
	const char *fusion_kind;      /* kLoop, kInput, kOutput, kCustom */
	const char *fft_type;         /* FFT, IFFT, RFFT, IRFFT */
	ncc_ilist_t fft_length;
	int64_t exponent_bits, mantissa_bits; /* reduce-precision */
	bool left_side, lower, unit_diagonal; /* triangular-solve, cholesky */
	const char *transpose_a;      /* NO_TRANSPOSE, TRANSPOSE, ADJOINT */
	int64_t topk_k;
	bool topk_largest;

	/* general */
	ncc_metadata_t metadata;
	int32_t nfrontend_attrs;
	ncc_kv_t *frontend_attrs;
	const char *sharding;         /* raw text between the braces, including braces */
	int32_t ncontrol_preds;
	struct ncc_inst **control_preds;
	int32_t nraw_attrs;
	ncc_raw_attr_t *raw_attrs;

	ncc_literal_t literal;        /* constant */

	/* scratch for passes/interpreter/lowering: ncc never reads or writes these
	 * after construction (zeroed by ncc_inst_create) */
	void *aux;
	int64_t aux_i;
} ncc_inst_t;

typedef struct ncc_comp {
	const char *name;  /* without '%' */
	bool is_entry;
	struct ncc_module *module;
	int32_t nparams;
	ncc_inst_t **params;   /* params[i] is parameter(i); may be NULL before all are added */
	int32_t ninsts;
	int32_t cap_insts;
	ncc_inst_t **insts;    /* in program order (operands before users in parsed input) */
	ncc_inst_t *root;
	int line;              /* source line of the header, 0 if built */
	/* the header signature "(a: f32[], ...) -> f32[]" as written, for printing */
	int32_t nsig_params;
	const char **sig_param_names;
	ncc_shape_t *sig_param_shapes;
	bool has_sig_result;
	ncc_shape_t sig_result;
	void *aux;             /* scratch for later layers, as ncc_inst_t.aux */
} ncc_comp_t;

typedef enum ncc_alias_kind {
	NCC_ALIAS_UNSPECIFIED = 0, /* "(p, {idx})" without a kind: may-alias in XLA */
	NCC_ALIAS_MAY,
	NCC_ALIAS_MUST,
} ncc_alias_kind_t;

/* input_output_alias={ {0}: (3, {}, must-alias), ... } */
typedef struct ncc_alias {
	ncc_ilist_t output_index; /* tuple index path of the output, {} for the root */
	int64_t param_number;
	ncc_ilist_t param_index;  /* index path into the parameter, usually {} */
	ncc_alias_kind_t kind;
} ncc_alias_t;

/* buffer_donor={ (1, {}), (2, {}) }: parameters the caller gives up (XLA's
 * HloBufferDonorConfig). The compiler may alias a donor to an output of the same
 * shape (ncc_pass_buffer_donors turns it into a may-alias entry). */
typedef struct ncc_donor {
	int64_t param_number;
	ncc_ilist_t param_index;  /* index path into the parameter, usually {} */
} ncc_donor_t;

typedef struct ncc_module {
	const char *name;
	const char *filename;      /* for messages; "<input>" when parsed from memory */
	const char *source;        /* copy of the whole input text, NUL-terminated */
	size_t source_len;
	int32_t ncomps;
	int32_t cap_comps;
	ncc_comp_t **comps;        /* in source order; entry is one of them */
	ncc_comp_t *entry;
	int32_t naliases;
	ncc_alias_t *aliases;
	int32_t ndonors;
	ncc_donor_t *donors;       /* buffer_donor entries (arena) */
	const char *entry_computation_layout; /* raw text inside {...}, NULL if absent */
	bool is_scheduled;
	int32_t nraw_attrs;        /* other HloModule attributes, kept verbatim */
	ncc_raw_attr_t *raw_attrs;
	uint32_t next_id;          /* next ncc_inst_t.id */
	struct ncc_arena *arena;   /* private */
} ncc_module_t;

/* ------------------------------------------------------ construction API */

/* Creates an empty module named name (copied). Release with ncc_module_free(). */
ncc_status_t ncc_module_create(const char *name, ncc_module_t **out_module);

/* Arena allocation tied to m's lifetime: zeroed, 16-byte aligned, NULL on OOM or if
 * size is absurd. Never free these individually. */
void *ncc_alloc(ncc_module_t *m, size_t size);
/* Copies [s, s+len) into the arena, NUL-terminated. */
char *ncc_strndup(ncc_module_t *m, const char *s, size_t len);
char *ncc_strdup(ncc_module_t *m, const char *s);
/* Deep copy of a shape into m's arena (tuple element arrays and layout_extra). */
ncc_status_t ncc_shape_clone(ncc_module_t *m, const ncc_shape_t *src, ncc_shape_t *out_shape);

/* Expands an iota replica-group list [g0,g1]<=[dims]T(perm) into rg->ngroups,
 * group_sizes and ids (in m's arena): ids = transpose(reshape(iota(total), dims),
 * perm) flattened, g0 groups of g1. The caller has validated it: g0 * g1 == total
 * == product of dims[0..nd), perm a permutation of nd dims (np == 0: no transpose).
 * false on allocation failure. Shared by the text parser and the proto decoder. */
bool ncc_replica_groups_from_iota(ncc_module_t *m, ncc_replica_groups_t *rg, int64_t g0,
				  int64_t g1, const int64_t *dims, int32_t nd, const int64_t *perm,
				  int32_t np, int64_t total);

/* Adds an empty computation (name copied; must be unique in the module). */
ncc_status_t ncc_comp_create(ncc_module_t *m, const char *name, bool is_entry,
			     ncc_comp_t **out_comp);

/* Appends a new instruction to c. name NULL: a unique "<opname>.<id>" is chosen.
 * shape is copied (tuple element arrays are cloned into the arena). operands (n
 * entries) must belong to c. All attributes start absent/default (group counts 1,
 * index_vector_dim 0). For NCC_OP_PARAMETER the caller sets parameter_number and
 * calls ncc_comp_set_param(). */
ncc_status_t ncc_inst_create(ncc_comp_t *c, ncc_opcode_t op, const ncc_shape_t *shape,
			     const char *name, ncc_inst_t *const *operands, int32_t n,
			     ncc_inst_t **out_inst);
/* Registers p as parameter number p->parameter_number of c (grows params). */
ncc_status_t ncc_comp_set_param(ncc_comp_t *c, ncc_inst_t *p);
/* Replaces the operand list of inst (array copied). */
ncc_status_t ncc_inst_set_operands(ncc_inst_t *inst, ncc_inst_t *const *operands, int32_t n);
/* Makes every use of old_inst in its computation (operands and root) use new_inst. */
void ncc_inst_replace_uses(ncc_inst_t *old_inst, ncc_inst_t *new_inst);
/* Unlinks inst from its computation's instruction list (memory stays in the arena).
 * The caller guarantees it has no remaining uses and is not the root. */
void ncc_comp_remove_inst(ncc_comp_t *c, ncc_inst_t *inst);
/* Moves inst to just before `before` in c's list (before NULL: to the end). */
void ncc_comp_move_inst(ncc_comp_t *c, ncc_inst_t *inst, ncc_inst_t *before);

/* Lookups by name (without '%'); NULL when absent. */
ncc_comp_t *ncc_module_find_comp(const ncc_module_t *m, const char *name);
ncc_inst_t *ncc_comp_find_inst(const ncc_comp_t *c, const char *name);
/* Number of uses of inst as an operand in its computation (+1 if it is the root). */
int32_t ncc_inst_use_count(const ncc_inst_t *inst);

/* Literal helpers: element i of an array literal read as double / int64 (with the
 * usual conversions; bf16/f16/f8 decoded). i must be < count. */
double ncc_literal_get_f64(const ncc_literal_t *lit, int64_t i);
int64_t ncc_literal_get_i64(const ncc_literal_t *lit, int64_t i);
/* Allocates an array literal of count elements of t in m's arena (zeroed). */
ncc_status_t ncc_literal_init(ncc_module_t *m, ncc_literal_t *lit, ncc_etype_t t, int64_t count);
/* Sets element i from a double (rounded/converted to the element type; bf16/f16
 * round to nearest even). */
void ncc_literal_set_f64(ncc_literal_t *lit, int64_t i, double v);

/* ------------------------------------------------------------- printing */

/* Prints m as HLO text that ncc_parse_hlo() reads back into an equal IR
 * (the --dump-ir format). */
ncc_status_t ncc_module_print(const ncc_module_t *m, FILE *f);
/* One instruction as an HLO line without leading spaces or newline; malloc'd. */
ncc_status_t ncc_inst_to_string(const ncc_inst_t *inst, char **out_text);

/* ------------------------------------------------------------ test hooks */

/* SQLite-style fault injection for tests: after ncc_test_fail_alloc_after(n), the n-th
 * heap allocation made by the IR, parser, printer or verifier fails (n >= 1); n = 0
 * disables it. ncc_test_alloc_failures() counts the failures injected so far. Process
 * global and not thread-safe: for single-threaded tests only. */
void ncc_test_fail_alloc_after(long n);
long ncc_test_alloc_failures(void);
/* The allocation functions ncc's own files use (they honour the hook above). */
void *ncc__malloc(size_t size);
void *ncc__calloc(size_t n, size_t size);
void *ncc__realloc(void *p, size_t size);
/* Room for one more element in the array arr (n elements of size elem, *cap
 * allocated): arr itself while n < *cap, else arr grown to twice *cap (first when
 * 0), *cap updated. NULL on out of memory, arr and *cap unchanged. */
void *ncc__grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first);

#ifdef __cplusplus
}
#endif

#endif /* NCC_IR_H */
