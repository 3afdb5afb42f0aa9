/* Compile options of the ncc back end (opt level, cores, dumps), shared by the driver, the passes and the CLI. */
#ifndef NCC_OPTIONS_H
#define NCC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* NCC_OPTIONS_H */
