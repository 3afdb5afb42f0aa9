/* ncc persistent compile cache: NEFFs on disk keyed by a hash of HLO text, normalised options and compiler version. */
#ifndef NCC_CACHE_H
#define NCC_CACHE_H

/*
 * Layout (docs/compiler-cli.md):
 *   DIR/neuronsim-cc-<VERSION>+<BUILD_ID>/MODULE_<KEY>/model.neff
 * (the pipeline passes ncc_cache_compiler_id() as the version)
 * KEY is the 32 hex digits of XXH3-128 over a domain tag, the compiler version,
 * the normalised option string and the HLO text, each length-prefixed so that no
 * two different inputs can produce the same byte stream. The version directory
 * keeps caches of several compiler versions apart, the way torch-neuronx keeps
 * neuronxcc-<version>/ directories.
 *
 * Concurrency: entries are written to a temporary file in the entry directory and
 * renamed into place, so a reader sees either no entry or a complete one; two
 * compilers of the same module both compile and the last rename wins with identical
 * bytes. Every entry read is validated with neff_parse() (checksum included), so a
 * truncated or corrupted entry is detected, removed and recompiled.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hlo/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCC_CACHE_KEY_HEX: include/ncc/ncc.h */

typedef struct ncc_cache ncc_cache_t;

/* Where log lines go. level: 0 info (always printed), 1 debug (printed when the
 * cache was opened with verbose). NULL log means stderr. */
typedef struct ncc_cache_config {
	const char *dir; /* cache root; created (mode 0777 & ~umask) if missing */
	const char *compiler_version; /* names the version directory; NULL: "unknown" */
	FILE *log;
	bool verbose;
	bool quiet_hit; /* no info line on a hit (the caller reports it) */
} ncc_cache_config_t;

/* Opens (creating directories as needed) the cache described by cfg. The caller owns
 * *out_cache and releases it with ncc_cache_close(). NCC_ERR_IO when the directory
 * cannot be created or is not writable (the message names it). */
ncc_status_t ncc_cache_open(const ncc_cache_config_t *cfg, ncc_cache_t **out_cache,
			    ncc_error_t *err);
void ncc_cache_close(ncc_cache_t *cache);

/* Computes the key of (version, options, text) into out_key (NCC_CACHE_KEY_HEX + 1
 * bytes, NUL-terminated). options is the normalised option string; NULL means "". */
void ncc_cache_key(const char *version, const char *options, const char *text, size_t len,
		   char out_key[NCC_CACHE_KEY_HEX + 1]);

/* Writes the path of the entry for key into buf (always NUL-terminated); returns the
 * length it needed, like snprintf. */
int ncc_cache_entry_path(const ncc_cache_t *cache, const char *key, char *buf, size_t size);

/* Looks key up. Hit: NCC_OK, *out_neff is a malloc'd copy the caller frees with
 * free() (8-byte aligned, validated by neff_parse), *out_size its size, and the line
 * "compile cache hit: KEY -> PATH" is logged. Miss: NCC_ERR_NOT_FOUND, outputs NULL/0.
 * A present but unreadable or invalid entry is logged, removed, and reported as a
 * miss so the caller recompiles. */
ncc_status_t ncc_cache_lookup(ncc_cache_t *cache, const char *key, void **out_neff,
			      size_t *out_size, ncc_error_t *err);

/* Stores [neff, neff + size) under key atomically (temporary file + rename). On
 * failure nothing is left behind and the error names the path; callers treat a
 * failed store as a warning, since the compilation itself succeeded. */
ncc_status_t ncc_cache_store(ncc_cache_t *cache, const char *key, const void *neff, size_t size,
			     ncc_error_t *err);

/* The compiler's identity for the cache: "NCC_VERSION_STRING+BUILD_ID", where
 * BUILD_ID is 16 hex digits of SHA-256 over the compiler's sources and headers,
 * generated at build time (compiler/meson.build, compiler/build_id.sh). It changes
 * whenever the compiler's code does, so a rebuilt compiler never reuses NEFFs of
 * another build even if NCC_VERSION_STRING was not bumped. */
const char *ncc_cache_compiler_id(void);

/* True when a NEURON_CC_FLAGS value holds "--no_cache" (torch-neuronx's spelling;
 * "--no-cache" is accepted too): the compile cache is off. NULL: false. */
bool ncc_cache_flags_no_cache(const char *flags);

/* Finds the cache directory in a NEURON_CC_FLAGS value as torch-neuronx users write
 * it: "--cache_dir=DIR", "--cache_dir DIR" (also "--cache-dir"), with shell-style
 * single/double quotes. Other flags are ignored; each is reported to log at debug
 * level when verbose. Returns a malloc'd path the caller frees, or NULL when flags is
 * NULL or names no cache directory (or on allocation failure). When the flag is
 * given several times the last one wins, as with a command line. */
char *ncc_cache_dir_from_flags(const char *flags, FILE *log, bool verbose);

#ifdef __cplusplus
}
#endif

#endif /* NCC_CACHE_H */
