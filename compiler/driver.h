/* ncc compile pipeline: HLO text -> parse -> verify -> passes -> lower/emit NEFF, with the persistent compile cache in front. */
#ifndef NCC_DRIVER_H
#define NCC_DRIVER_H

/*
 * The one entry point the CLI (tools/neuronsim-cc.c), the tests and the benchmark use
 * to compile. It never links the runtime or the simulator: whoever calls it times it
 * and records CompileTime through the runtime's metrics API if it wants to.
 *
 * Cache: when a cache directory is configured (driver options, else
 * NEURON_CC_FLAGS="--cache_dir=DIR"), the key is computed from the raw HLO text, the
 * normalised options (ncc_driver_options_key()) and NCC_VERSION_STRING, before any
 * parsing; a hit returns the stored NEFF and does no compilation at all.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cache.h"
#include "ir.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The compiler's version: part of every cache key and of the cache directory name,
 * so a new compiler never reuses an old compiler's NEFFs. Bump on any change that
 * alters emitted code. */
#define NCC_VERSION_STRING "0.1.0"

const char *ncc_version(void); /* "neuronsim-cc 0.1.0" */

/* The optimisation level of a compile that does not choose one (-O2, as neuronx-cc;
 * the back end's own default, ncc_compile_options_init(), is the -O0 baseline). */
#define NCC_DRIVER_DEFAULT_OPT_LEVEL 2

typedef struct ncc_driver_options {
	ncc_compile_options_t compile; /* back-end options (opt level, cores, dump dir) */
	const char *cache_dir;   /* cache root; NULL: from NEURON_CC_FLAGS (if use_env) */
	bool no_cache;           /* neither look up nor store */
	bool use_env;            /* read NEURON_CC_FLAGS when cache_dir is NULL */
	bool verbose;            /* debug lines (stages, timings, ignored flags) to log */
	FILE *log;               /* NULL: stderr */
} ncc_driver_options_t;

/* Defaults: ncc_compile_options_init() with opt_level NCC_DRIVER_DEFAULT_OPT_LEVEL, no explicit cache dir, NEURON_CC_FLAGS read,
 * quiet, log to stderr. */
void ncc_driver_options_init(ncc_driver_options_t *opts);

/* Writes the normalised option string that enters the cache key into buf (always
 * NUL-terminated) and returns the length it needed. Only options that change the
 * emitted NEFF are in it (not the dump directory or logging), with defaults resolved
 * (cores 0 -> 1, multi_engine -1 -> its value at that opt level). */
int ncc_driver_options_key(const ncc_driver_options_t *opts, char *buf, size_t size);

#define NCC_DRIVER_PATH_MAX 4096

/* What one compilation produced. Release with ncc_compile_result_release(). */
typedef struct ncc_compile_result {
	void *neff;              /* malloc'd NEFF bytes (8-byte aligned) */
	size_t neff_size;
	bool cache_hit;          /* true: served from the cache, nothing was compiled */
	bool cache_used;         /* a cache directory was configured and usable */
	bool cache_stored;       /* the result was written to the cache */
	char cache_key[NCC_CACHE_KEY_HEX + 1]; /* "" when no cache */
	char cache_path[NCC_DRIVER_PATH_MAX];  /* entry path, "" when no cache */
	/* wall-clock milliseconds per stage (0 for stages not run) */
	double ms_read, ms_parse, ms_verify, ms_passes, ms_lower, ms_total;
} ncc_compile_result_t;

/* Compiles HLO text [text, text + len). filename is used in messages (NULL:
 * "<input>"). On success out is filled and owns the NEFF; on failure out holds no
 * buffer and err has the first error, prefixed "FILE:LINE:COL: error: " when a
 * position is known (parse and verify errors) and containing "unsupported", the
 * instruction, its type and source line for unsupported operations (status
 * NCC_ERR_UNSUPPORTED). A cache that cannot be opened or written is a warning on
 * the log, never a failure. */
ncc_status_t ncc_compile_text(const char *text, size_t len, const char *filename,
			      const ncc_driver_options_t *opts, ncc_compile_result_t *out,
			      ncc_error_t *err);

/* Reads path (NCC_ERR_IO naming it when it cannot) and compiles it as above. */
ncc_status_t ncc_compile_file(const char *path, const ncc_driver_options_t *opts,
			      ncc_compile_result_t *out, ncc_error_t *err);

/* Frees the NEFF of r and zeroes it; safe on a zeroed or already released result. */
void ncc_compile_result_release(ncc_compile_result_t *r);

/* Reads a whole file into a malloc'd NUL-terminated buffer (*out_len excludes the
 * NUL). NCC_ERR_IO with "cannot read 'PATH': REASON" on failure. Shared with the
 * analyze command. */
ncc_status_t ncc_read_file(const char *path, char **out_text, size_t *out_len, ncc_error_t *err);

/* Writes [data, data + size) to path atomically (temporary file in the same
 * directory, then rename), so a failed write never leaves a half NEFF behind. */
ncc_status_t ncc_write_file(const char *path, const void *data, size_t size, ncc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* NCC_DRIVER_H */
