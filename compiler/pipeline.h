/* ncc compile pipeline (include/ncc/ncc.h: ncc_compile_text/file/hlo_proto): HLO text -> parse -> verify -> passes -> lower/emit NEFF, with the persistent compile cache in front. */
#ifndef NCC_PIPELINE_H
#define NCC_PIPELINE_H

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

#include "ncc/ncc.h"
#include "cache.h"
#include "hlo/ir.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything the pipeline offers is public: include/ncc/ncc.h (ncc_compile_text,
 * ncc_compile_hlo_proto, options, results, ncc_write_file; ncc_read_file lives in
 * hlo_parser.c). */

#ifdef __cplusplus
}
#endif

#endif /* NCC_PIPELINE_H */
