/* The NEFF container: on-disk layout, a validating reader and a builder
 * (docs/neff.md). Implemented in common/ (libnscommon). */
#ifndef NEURONSIM_NEFF_H
#define NEURONSIM_NEFF_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "neuronsim/isa.h"
#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NEFF_MAGIC "NSIMNEFF" /* 8 bytes, no NUL */
#define NEFF_VERSION_MAJOR 1
#define NEFF_VERSION_MINOR 0
#define NEFF_ALIGN 64         /* every section starts at a multiple of this */
#define NEFF_MAX_CORES 64
#define NEFF_NAME_MAX 256     /* tensor names, NUL included (NRT_TENSOR_NAME_MAX) */
#define NEFF_MAX_TENSOR_RANK 8
#define NEFF_MAX_SECTIONS 64  /* a reader refuses larger section tables */
#define NEFF_TARGET "neuronsim-v2" /* the only meta.target this reader accepts */
/* Upper bound of any region (tensor, scratch, consts) so that offset + size
 * arithmetic in the runtime and simulator can never wrap. */
#define NEFF_MAX_REGION_SIZE (1ull << 48)

/* Feature bits. A reader refuses a NEFF with a required bit it does not know. */
#define NEFF_FEATURE_KNOWN_REQUIRED 0ull
#define NEFF_FEATURE_KNOWN_OPTIONAL 0ull

/* All integers little-endian. Structs have no implicit padding. */
typedef struct neff_header {
	char magic[8];
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_size;        /* sizeof(neff_header_t) */
	uint64_t features_required;
	uint64_t features_optional;
	uint64_t total_size;         /* size of the whole file */
	uint64_t checksum;           /* XXH64, seed 0, of bytes [header_size, total_size) */
	uint32_t section_count;
	uint32_t reserved0;          /* must be zero */
	uint64_t section_table_offset;
} neff_header_t;

typedef enum neff_section_type {
	NEFF_SECT_META = 1,    /* one neff_meta_t */
	NEFF_SECT_TENSORS = 2, /* neff_tensor_t[meta.n_tensors] */
	NEFF_SECT_CODE = 3,    /* neff_code_header_t, neff_code_stream_t table, insns */
	NEFF_SECT_CONSTS = 4,  /* raw bytes of region ISA_REGION_CONST */
	NEFF_SECT_DEBUG = 5,   /* neff_debug_header_t, entries, string pool */
	NEFF_SECT_HLO = 6,     /* HLO text the NEFF was built from (optional) */
} neff_section_type_t;

#define NEFF_SECT_F_OPTIONAL 1u /* a reader may skip it if it does not know the type */

typedef struct neff_section {
	uint32_t type;
	uint32_t flags;
	uint64_t offset;   /* from the start of the file, NEFF_ALIGN aligned */
	uint64_t size;
	uint64_t reserved; /* must be zero */
} neff_section_t;

typedef struct neff_meta {
	char model_name[128];       /* NUL-terminated */
	char compiler_version[64];  /* NUL-terminated */
	char target[32];            /* NUL-terminated, "neuronsim-v2" */
	uint32_t n_cores;           /* 1..NEFF_MAX_CORES */
	uint32_t n_tensors;         /* entries in the tensor section */
	uint64_t scratch_size;      /* bytes of region ISA_REGION_SCRATCH */
	uint32_t isa_version_major;
	uint32_t isa_version_minor;
	uint64_t reserved[4];       /* must be zero */
} neff_meta_t;

typedef enum neff_usage { NEFF_USAGE_INPUT = 0, NEFF_USAGE_OUTPUT = 1 } neff_usage_t;

typedef struct neff_tensor {
	char name[NEFF_NAME_MAX];   /* NUL-terminated, unique */
	uint32_t usage;             /* neff_usage_t */
	uint32_t dtype;             /* isa_dtype_t */
	uint32_t rank;              /* 0..NEFF_MAX_TENSOR_RANK */
	int32_t alias_input;        /* outputs: index of the input tensor it aliases
				       (updated in place), else -1 */
	uint64_t shape[NEFF_MAX_TENSOR_RANK];
	uint64_t size;              /* bytes: product(shape) * dtype size */
} neff_tensor_t;

typedef struct neff_code_header {
	uint32_t n_cores;           /* == meta.n_cores */
	uint32_t n_engines;         /* == ISA_ENGINE_COUNT */
} neff_code_header_t;

/* Followed in the section by n_cores * n_engines of these, core-major. */
typedef struct neff_code_stream {
	uint64_t offset;            /* of the first isa_insn_t, from section start, 8-aligned */
	uint32_t count;             /* instructions */
	uint32_t reserved;          /* must be zero */
} neff_code_stream_t;

typedef struct neff_debug_header {
	uint32_t n_entries;
	uint32_t strings_size;      /* bytes of the string pool after the entries */
} neff_debug_header_t;

typedef struct neff_debug_entry {
	uint32_t hlo_name;          /* string pool offsets of NUL-terminated strings */
	uint32_t op_type;
	uint32_t source_file;
	uint32_t source_line;       /* 0 when unknown */
} neff_debug_entry_t;

static_assert(sizeof(neff_header_t) == 64, "neff_header_t is part of the NEFF format");
static_assert(offsetof(neff_header_t, section_table_offset) == 56, "neff_header_t layout");
static_assert(sizeof(neff_section_t) == 32, "neff_section_t is part of the NEFF format");
static_assert(sizeof(neff_meta_t) == 280, "neff_meta_t is part of the NEFF format");
static_assert(offsetof(neff_meta_t, scratch_size) == 232, "neff_meta_t layout");
static_assert(sizeof(neff_tensor_t) == 344, "neff_tensor_t is part of the NEFF format");
static_assert(offsetof(neff_tensor_t, shape) == 272, "neff_tensor_t layout");
static_assert(sizeof(neff_code_header_t) == 8, "neff_code_header_t is part of the NEFF format");
static_assert(sizeof(neff_code_stream_t) == 16, "neff_code_stream_t is part of the NEFF format");
static_assert(sizeof(neff_debug_header_t) == 8, "neff_debug_header_t is part of the NEFF format");
static_assert(sizeof(neff_debug_entry_t) == 16, "neff_debug_entry_t is part of the NEFF format");

/* ---- reader ---------------------------------------------------------- */

/* A validated view of a NEFF; every pointer borrows from the parsed buffer. */
typedef struct neff_view {
	const neff_header_t *header;
	const neff_meta_t *meta;
	const neff_tensor_t *tensors;           /* meta->n_tensors entries */
	const isa_insn_t *code[NEFF_MAX_CORES][ISA_ENGINE_COUNT];
	uint32_t code_count[NEFF_MAX_CORES][ISA_ENGINE_COUNT];
	const uint8_t *consts;
	uint64_t consts_size;
	const neff_debug_entry_t *debug;
	uint32_t n_debug;
	const char *debug_strings;
	uint32_t debug_strings_size;
	const char *hlo_text;                   /* not NUL-terminated; NULL if absent */
	uint64_t hlo_size;
} neff_view_t;

/* Validates the NEFF in [data, data + size) (data must be 8-byte aligned,
 * else NS_STATUS_INVALID_ARGUMENT) and fills out_view with pointers into it; data must
 * outlive the view. Checks magic, version, features, size, checksum, every
 * section offset and size (overflow-safe), the layout (no overlap, no
 * unaccounted bytes), string termination, tensor sizes and aliases, debug
 * ids, and every instruction with isa_insn_validate() (regions <
 * ISA_REGION_IO0 + n_tensors); docs/neff.md lists every rule. A failure is
 * a status (status.h) with a one-line message naming the field and value:
 * NS_STATUS_INVALID_ARGUMENT (corrupt, or a bad argument), NS_STATUS_UNIMPLEMENTED
 * (unknown major version, required feature or newer ISA) or
 * NS_STATUS_RESOURCE_EXHAUSTED; out_view is then zeroed. Thread-safe;
 * allocates only temporarily. */
ns_status_t neff_parse(const void *data, size_t size, neff_view_t *out_view);

/* Debug strings of instruction debug_id; NULL pointers when out of range. */
void neff_debug_lookup(const neff_view_t *view, uint32_t debug_id,
		       const char **out_hlo_name, const char **out_op_type,
		       const char **out_source_file, uint32_t *out_source_line);

/* ---- builder --------------------------------------------------------- */

/* Builds a NEFF in memory. The functions below return a status (status.h)
 * whose message names the object and what is wrong with it ("tensor 'w_out':
 * aliases tensor 5, which does not exist (3 tensors so far)"), for the caller
 * to annotate with its own context. Every argument is validated
 * (NS_STATUS_INVALID_ARGUMENT; OUT_OF_RANGE for a patch index past the end);
 * a NEFF limit reached (region sizes, tensor or debug-entry counts) is
 * NS_STATUS_RESOURCE_EXHAUSTED; every allocation is checked (RESOURCE_EXHAUSTED
 * with ns_status_errno ENOMEM, the builder is left as it was before the call,
 * nothing leaks). A failed call changes nothing and leaves its out_
 * parameters untouched. Output is deterministic: the same calls give the same
 * bytes. Not thread-safe: one builder per thread. */
typedef struct neff_builder neff_builder_t;

/* Creates a builder for a model with n_cores cores (1..NEFF_MAX_CORES) and a
 * model name shorter than sizeof(meta.model_name); the caller frees it with
 * neff_builder_destroy(). NULL on allocation failure or invalid arguments.
 * Defaults: compiler_version "neuronsim-builder <NEFF major.minor>", target
 * NEFF_TARGET, ISA version from isa.h. */
neff_builder_t *neff_builder_create(const char *model_name, uint32_t n_cores);
/* Frees the builder and everything it owns; NULL is a no-op. */
void neff_builder_destroy(neff_builder_t *b);

/* Adds an I/O tensor; its region is ISA_REGION_IO0 + *out_index. name is
 * copied, non-empty, shorter than NEFF_NAME_MAX and unique; rank <=
 * NEFF_MAX_TENSOR_RANK (shape may be NULL when rank is 0); alias_input is -1,
 * or for an output the index of an earlier input of the same dtype and size. */
ns_status_t neff_builder_add_tensor(neff_builder_t *b, const char *name,
				    neff_usage_t usage, isa_dtype_t dtype,
				    uint32_t rank, const uint64_t *shape,
				    int32_t alias_input, uint32_t *out_index);
/* Appends constant bytes (copied; zeros when data is NULL) at an offset of
 * region ISA_REGION_CONST aligned to align (a power of 2, <= 4096). */
ns_status_t neff_builder_add_const(neff_builder_t *b, const void *data,
				   uint64_t size, uint64_t align,
				   uint64_t *out_offset);
/* Reserves scratch bytes aligned to align (power of 2, <= 4096). */
ns_status_t neff_builder_add_scratch(neff_builder_t *b, uint64_t size,
				     uint64_t align, uint64_t *out_offset);
/* Adds a debug map entry; strings are copied (NULL means ""), identical
 * strings are stored once. */
ns_status_t neff_builder_add_debug(neff_builder_t *b, const char *hlo_name,
				   const char *op_type, const char *source_file,
				   uint32_t source_line, uint32_t *out_debug_id);
/* Appends a copy of insn to the stream of (core, engine). The instruction is
 * not validated here (regions and jump targets may be added later): run
 * neff_parse() on the result to check it. */
ns_status_t neff_builder_emit(neff_builder_t *b, uint32_t core,
			      isa_engine_t engine, const isa_insn_t *insn,
			      uint32_t *out_index);
/* Replaces an emitted instruction (to patch jump targets). */
ns_status_t neff_builder_patch(neff_builder_t *b, uint32_t core,
			       isa_engine_t engine, uint32_t index,
			       const isa_insn_t *insn);
/* Sets (copies) the HLO text, replacing any previous one; NULL/0 removes it. */
ns_status_t neff_builder_set_hlo(neff_builder_t *b, const char *text,
				 size_t len);
/* version is copied; shorter than sizeof(meta.compiler_version). */
ns_status_t neff_builder_set_compiler_version(neff_builder_t *b,
					      const char *version);
/* Serialises the NEFF into a malloc'd buffer the caller frees with free().
 * The builder stays usable; finishing twice gives the same bytes. On failure
 * *out_data and *out_size are untouched. */
ns_status_t neff_builder_finish(neff_builder_t *b, void **out_data,
				size_t *out_size);

/* TEST ONLY (allocation-failure injection, SQLite style): makes the n-th
 * allocation this builder attempts from now on fail as if malloc/realloc
 * returned NULL (n = 1 is the next one); 0 disables. Not for production use. */
void neff_builder_set_alloc_fail_after(neff_builder_t *b, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_NEFF_H */
