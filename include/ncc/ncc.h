/* ncc public API: compile XLA HLO (text or a serialized HloModuleProto) to a NEFF, and parse, verify, optimise, query and analyze modules; with ncc_shape.h and ncc_interp.h, all that tools, frontends and the PJRT plugin may include of the compiler. */
#ifndef NCC_NCC_H
#define NCC_NCC_H

/*
 * Ownership: every buffer the compiler returns (a NEFF, a text, a JSON report) is
 * malloc'd and owned by the caller, who frees it with free() or the release
 * function named next to it. A module (ncc_module_t, opaque here) owns everything
 * reachable from it and is released with ncc_module_free().
 *
 * Errors: every fallible function returns an ncc_status_t and, when the caller
 * passes an ncc_error_t, fills it with one message that says what failed and where
 * ("FILE:LINE:COL: error: ..." for HLO text, "hlo proto: ..." with the field path for
 * protos). Nothing is logged by the library itself except the compile cache's
 * warnings, which go to the options' log stream.
 *
 * Threads: compiling different inputs on different threads is safe; a module must
 * not be used by two threads at once.
 *
 * The compiler never links the runtime or the simulator: whoever calls it times it
 * and records CompileTime through the runtime's metrics API.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ncc/ncc_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The compiler's version: part of every cache key and of the cache directory name,
 * so a new compiler never reuses an old compiler's NEFFs. Bump on any change that
 * alters emitted code. */
#define NCC_VERSION_STRING "0.1.3"

/* "neuronsim-cc 0.1.3" */
const char *ncc_version(void);

/* ------------------------------------------------------------------ status */

typedef enum ncc_status {
	NCC_OK = 0,
	NCC_ERR_PARSE = 1,       /* malformed HLO text or proto */
	NCC_ERR_VERIFY = 2,      /* well-formed but inconsistent shapes/attributes */
	NCC_ERR_NOMEM = 3,       /* allocation failed */
	NCC_ERR_INVALID = 4,     /* bad argument to an API function */
	NCC_ERR_UNSUPPORTED = 5, /* valid HLO that this compiler does not handle */
	NCC_ERR_IO = 6,          /* file could not be read/written */
	NCC_ERR_LIMIT = 7,       /* input exceeds a documented size/nesting limit */
	NCC_ERR_NOT_FOUND = 8,   /* lookup by name failed */
	NCC_ERR_INTERNAL = 9,    /* a bug in ncc */
} ncc_status_t;

/* Detailed diagnostics. msg holds the full formatted text, already prefixed with
 * "FILE:LINE:COL: error: " when a source position is known. line/col are 1-based,
 * 0 when unknown. */
#define NCC_ERROR_MSG_MAX 1024
typedef struct ncc_error {
	ncc_status_t status;
	int line;
	int col;
	char msg[NCC_ERROR_MSG_MAX];
} ncc_error_t;

/* "NCC_ERR_PARSE"-style name of st; "NCC_ERR_?" when out of range. */
const char *ncc_status_name(ncc_status_t st);

/* ----------------------------------------------------------------- options */

/* Options of one compilation. Zero-initialise and then set what you need, or call
 * ncc_compile_options_init() for the defaults. Strings are borrowed: they must
 * outlive the compile call. */
typedef struct ncc_compile_options {
	int opt_level;              /* 0: op by op, one ISA stream; 1+: passes, several engines */
	uint32_t n_cores;           /* cores of the NEFF (1..NEFF_MAX_CORES); 0 means 1. Every
				     * core runs the same program (one replica each) */
	const char *dump_dir;       /* write IR dumps here when not NULL (passes/CLI) */
	const char *model_name;     /* NEFF meta.model_name; NULL: the HloModule name */
	const char *compiler_version; /* NEFF meta.compiler_version; NULL: "ncc <version>" */
	bool embed_hlo;             /* store the HLO text in the NEFF (default true) */
	int multi_engine;           /* -1: by opt level (0 at -O0, 1 above); 0: one stream
				     * (the gpsimd engine) ; 1: each op on its own engine */
	uint64_t reserved[4];       /* zero */
} ncc_compile_options_t;

/* Defaults: -O0, one core, no dumps, HLO embedded, multi_engine by opt level. */
void ncc_compile_options_init(ncc_compile_options_t *opts);

/* The optimisation level of a compile that does not choose one (-O2, as neuronx-cc;
 * the back end's own default, ncc_compile_options_init(), is the -O0 baseline). */
#define NCC_DRIVER_DEFAULT_OPT_LEVEL 2

/*
 * Cache: the cache directory is, first that applies: none when no_cache (or, with
 * use_env, NEURON_CC_FLAGS holds "--no_cache"); cache_dir; with use_env,
 * NEURON_CC_FLAGS="--cache_dir=DIR"; default_cache_dir; else no cache. The
 * compiler command sets no default_cache_dir (its cache is opt-in); the PJRT plugin
 * sets NEURON_COMPILE_CACHE_URL or /var/tmp/neuron-compile-cache, as torch-neuronx
 * does (docs/compiler.md). The key is computed from the HLO text (for a proto: the
 * text the proto decodes to), the normalised options (ncc_driver_options_key()),
 * NCC_VERSION_STRING and the build identity (a hash of the compiler's sources made
 * at build time) before any compiling; a hit returns the stored NEFF and compiles
 * nothing.
 */
typedef struct ncc_driver_options {
	ncc_compile_options_t compile; /* back-end options (opt level, cores, dump dir) */
	const char *cache_dir;   /* cache root; NULL: from NEURON_CC_FLAGS (if use_env) */
	bool no_cache;           /* neither look up nor store */
	bool use_env;            /* read NEURON_CC_FLAGS when cache_dir is NULL */
	const char *default_cache_dir; /* used when nothing above names one; NULL: no cache */
	bool verbose;            /* debug lines (stages, timings, ignored flags) to log */
	FILE *log;               /* NULL: stderr */
	bool quiet_cache_hit;    /* no "compile cache hit" line: the caller reports hits
				  * itself (the PJRT plugin, in the Neuron SDK's words) */
} ncc_driver_options_t;

/* Defaults: ncc_compile_options_init() with opt_level NCC_DRIVER_DEFAULT_OPT_LEVEL,
 * no explicit cache dir, NEURON_CC_FLAGS read, quiet, log to stderr. */
void ncc_driver_options_init(ncc_driver_options_t *opts);

/* Writes the normalised option string that enters the cache key into buf (always
 * NUL-terminated) and returns the length it needed. Only options that change the
 * emitted NEFF are in it (not the dump directory or logging), with defaults resolved
 * (cores 0 -> 1, multi_engine -1 -> its value at that opt level). */
int ncc_driver_options_key(const ncc_driver_options_t *opts, char *buf, size_t size);

/* ----------------------------------------------------------------- compile */

#define NCC_CACHE_KEY_HEX 32 /* hex digits of an XXH3-128 key, NUL not included */
#define NCC_DRIVER_PATH_MAX 4096

/* What one compilation produced. Release with ncc_compile_result_release(). */
typedef struct ncc_compile_result {
	void *neff;              /* malloc'd NEFF bytes (8-byte aligned) */
	size_t neff_size;
	bool cache_hit;          /* true: served from the cache, nothing was compiled */
	bool cache_used;         /* a cache directory was configured and usable */
	bool cache_stored;       /* the result was written to the cache */
	bool cache_open_failed;  /* a directory was configured but could not be opened
				  * or created (warned on the log; compiled without) */
	char cache_key[NCC_CACHE_KEY_HEX + 1]; /* "" when no cache */
	char cache_path[NCC_DRIVER_PATH_MAX];  /* entry path, "" when no cache */
	/* wall-clock milliseconds per stage (0 for stages not run) */
	double ms_read, ms_parse, ms_verify, ms_passes, ms_lower, ms_total;
} ncc_compile_result_t;

/* Compiles HLO text [text, text + len). filename is used in messages (NULL:
 * "<input>"). opts NULL: ncc_driver_options_init()'s defaults. On success out is
 * filled and owns the NEFF; on failure out holds no buffer and err has the first
 * error, prefixed "FILE:LINE:COL: error: " when a position is known (parse and
 * verify errors) and containing "unsupported", the instruction, its type and source
 * line for unsupported operations (status NCC_ERR_UNSUPPORTED). A cache that cannot
 * be opened or written is a warning on the log, never a failure. */
ncc_status_t ncc_compile_text(const char *text, size_t len, const char *filename,
			      const ncc_driver_options_t *opts, ncc_compile_result_t *out,
			      ncc_error_t *err);

/* Reads path (NCC_ERR_IO naming it when it cannot) and compiles it as above. */
ncc_status_t ncc_compile_file(const char *path, const ncc_driver_options_t *opts,
			      ncc_compile_result_t *out, ncc_error_t *err);

/* Compiles a serialized xla.HloModuleProto [data, data + len) (what a framework
 * hands a PJRT plugin in the "hlo" format). It is decoded into the same IR the text
 * parser builds and goes through the same verifier, passes and back end; the NEFF
 * embeds the module's HLO text, so snapshots and replays work as for text input.
 * name is used in messages (NULL: the module's own name). A malformed or truncated
 * proto is NCC_ERR_PARSE with the field path in the message. */
ncc_status_t ncc_compile_hlo_proto(const void *data, size_t len, const char *name,
				   const ncc_driver_options_t *opts, ncc_compile_result_t *out,
				   ncc_error_t *err);

/* Frees the NEFF of r and zeroes it; safe on a zeroed or already released result. */
void ncc_compile_result_release(ncc_compile_result_t *r);

/* ------------------------------------------------------------------ modules */

/* An HLO module in the compiler's IR (opaque outside the compiler). */
typedef struct ncc_module ncc_module_t;

/* Limits that keep malformed or hostile input from exhausting memory or the stack. */
#define NCC_PARSE_MAX_INPUT (256u << 20)   /* bytes of HLO text or proto */
#define NCC_PARSE_MAX_DEPTH 64             /* nesting of tuples / braces / literals */
#define NCC_PARSE_MAX_OPERANDS (1 << 20)   /* per instruction */
#define NCC_PARSE_MAX_LITERAL_BYTES (1ull << 31) /* decoded constant size */

/* Parses HLO text [text, text + len) (need not be NUL-terminated). filename is used
 * in messages and stored in the module (NULL: "<input>"). On success *out_module is
 * a module the caller owns; the text is copied. On failure *out_module is NULL,
 * nothing leaks, and err holds "FILE:LINE:COL: error: expected X, got 'TOKEN'". The
 * result is syntactically complete but not verified: call ncc_verify() before
 * trusting shapes. */
ncc_status_t ncc_parse_hlo(const char *text, size_t len, const char *filename,
			   ncc_module_t **out_module, ncc_error_t *err);

/* Reads path and parses it (NCC_ERR_IO with a message if it cannot be read). */
ncc_status_t ncc_parse_hlo_file(const char *path, ncc_module_t **out_module, ncc_error_t *err);

/* Decodes a serialized xla.HloModuleProto into a module the caller owns, as
 * ncc_parse_hlo() does for text (not verified). name is used in messages (NULL:
 * "<proto>"). Unknown fields are skipped as protobuf requires; a field of the wrong
 * wire type, a length past the end, a reference to an unknown instruction or
 * computation id, or an unknown opcode is NCC_ERR_PARSE naming the message path
 * (e.g. "computations[2].instructions[5].shape.dimensions"). */
ncc_status_t ncc_parse_hlo_proto(const void *data, size_t len, const char *name,
				 ncc_module_t **out_module, ncc_error_t *err);

/* Checks shapes and attributes of every instruction (XLA's shape inference).
 * NCC_ERR_VERIFY with "FILE:LINE:COL: error: ..." on the first inconsistency. */
ncc_status_t ncc_verify(const ncc_module_t *m, ncc_error_t *err);

/* The module's name (the HloModule name). */
const char *ncc_module_name(const ncc_module_t *m);

/* Prints m as HLO text that ncc_parse_hlo() reads back into an equal IR, into a
 * malloc'd NUL-terminated string the caller frees with free(). */
ncc_status_t ncc_module_to_string(const ncc_module_t *m, char **out_text);

/* Frees the module and everything it owns. NULL is a no-op. */
void ncc_module_free(ncc_module_t *m);

/* One array of an entry computation's signature. */
#define NCC_SIGNATURE_MAX_RANK 16
typedef struct ncc_array_desc {
	char etype[16];        /* HLO element type name: "f32", "pred", "s64", "bf16", ... */
	int32_t rank;
	int64_t dims[NCC_SIGNATURE_MAX_RANK]; /* dims[0..rank), as written (row-major);
					       * a bounded dynamic dimension "<=N" is N */
} ncc_array_desc_t;

/* The signature of m's entry computation: its parameters in parameter-number order
 * and the leaves of its result depth first, which is the order of a compiled NEFF's
 * input and output tensors. Both arrays are malloc'd and owned by the caller (free();
 * NULL when the count is 0); on failure nothing is returned. A parameter that is not
 * an array (a tuple, token or opaque value), a token or opaque result leaf, or an
 * unbounded dynamic dimension is NCC_ERR_UNSUPPORTED naming it. Call it on a
 * verified module. */
ncc_status_t ncc_module_entry_signature(const ncc_module_t *m, ncc_array_desc_t **out_params,
					size_t *out_nparams, ncc_array_desc_t **out_results,
					size_t *out_nresults, ncc_error_t *err);

/* Runs the compile's pass pipeline on the verified module m in place, for
 * opts->opt_level (opts NULL: -O0); the result is the module the back end lowers,
 * whose instruction names (fusions) the device's error records use:
 *   all  the legalization passes: demote-f64, then buffer-donors (docs/passes.md);
 *   -O0  nothing else (op-by-op lowering of the module as written);
 *   -O1  simplify, fold, CSE, DCE, repeated until nothing changes (at most 4 rounds);
 *   -O2+ the same, then elementwise fusion and a final DCE.
 * When opts->dump_dir is set, writes the module after every pass that ran to
 * <dump_dir>/<NN>-<pass>.hlo (NN from 01; 00-input.hlo is the module before any
 * pass), as ncc_module_to_string() prints it; a dump that cannot be written is an
 * NCC_ERR_IO error. The module is verified after every pass. */
ncc_status_t ncc_run_passes(ncc_module_t *m, const ncc_compile_options_t *opts,
			    ncc_error_t *err);

/* The number of parameters of m's entry computation (0 when it has none). */
int32_t ncc_module_entry_param_count(const ncc_module_t *m);

/* The shape of entry parameter p (array, tuple, token...), pointing into m; NULL
 * when p is out of range. ncc_value_alloc() (ncc_interp.h) makes a value of it. */
const ncc_shape_t *ncc_module_entry_param_shape(const ncc_module_t *m, int32_t p);

/* What the module's input_output_alias says, per leaf of the entry result in
 * depth-first order (the order of ncc_module_entry_signature()'s results and of a
 * NEFF's outputs): the number of the entry parameter whose buffer that leaf may
 * update in place, or -1. Only aliases of a whole parameter (parameter index {})
 * count. The array is malloc'd and owned by the caller (NULL when the result has
 * no leaves). A compiled NEFF aliases a subset of these: the output and the input
 * must have the same type and size, and an input is aliased once. */
ncc_status_t ncc_module_entry_aliases(const ncc_module_t *m, int64_t **out_param_of_leaf,
				      size_t *out_nleaves, ncc_error_t *err);

/* An instruction of a module (opaque outside the compiler), as the interpreter's
 * non-finite trace returns it (ncc_interp.h). It lives as long as its module. */
typedef struct ncc_inst ncc_inst_t;

/* What messages name an instruction by. The strings point into its module. */
typedef struct ncc_inst_desc {
	const char *name;        /* unique in the module, without '%' */
	const char *opcode;      /* as written: "add", "fusion", an unknown opcode's name */
	bool is_parameter;       /* a parameter(N) of its computation */
	int hlo_line;            /* 1-based line in the module's HLO text; 0 when a pass made it */
	const char *op_type;     /* metadata op_type ("aten__log"), NULL when absent */
	const char *source_file; /* metadata source_file, NULL when absent */
	int64_t source_line;     /* metadata source_line, 0 when absent */
} ncc_inst_desc_t;

/* Fills out with inst's name, opcode, HLO line and metadata. */
void ncc_inst_describe(const ncc_inst_t *inst, ncc_inst_desc_t *out);

/* ------------------------------------------------------------------ analyze */

/* Verbosity as torch-neuronx numbers it: 2 (the default) aten level only; 1 adds
 * the HLO instruction lists. */
#define NCC_ANALYZE_VERBOSITY_DEFAULT 2

typedef struct ncc_analyze_summary {
	int64_t total;       /* counted instructions */
	int64_t supported;
	char percentage[16]; /* "97.50%" */
} ncc_analyze_summary_t;

/* Builds the torch-neuronx-style analyze report (docs/compiler-cli.md) of the
 * verified module m as a JSON text the caller frees with free(). summary (may be
 * NULL) receives the counts. Never fails because of unsupported instructions: that
 * is what the report is for. NCC_ERR_NOMEM on allocation failure. */
ncc_status_t ncc_analyze_module(const ncc_module_t *m, int verbosity, char **out_json,
				ncc_analyze_summary_t *summary, ncc_error_t *err);

/* ------------------------------------------------------------------ files */

/* Reads a whole file of at most NCC_PARSE_MAX_INPUT bytes (ns_read_file: pipes
 * too) into a malloc'd NUL-terminated buffer (*out_len excludes the NUL). On
 * failure "cannot read 'PATH': REASON" with NCC_ERR_IO (a directory says so),
 * NCC_ERR_LIMIT (over the limit: the size and the limit) or NCC_ERR_NOMEM. */
ncc_status_t ncc_read_file(const char *path, char **out_text, size_t *out_len, ncc_error_t *err);

/* Writes [data, data + size) to path atomically (temporary file in the same
 * directory, then rename), so a failed write never leaves a half NEFF behind. */
ncc_status_t ncc_write_file(const char *path, const void *data, size_t size, ncc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* NCC_NCC_H */
