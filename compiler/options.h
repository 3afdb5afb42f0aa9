/* Compile options of the ncc back end (opt level, cores, dumps), shared by the driver, the passes and the CLI. */
#ifndef NCC_OPTIONS_H
#define NCC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "ncc/ncc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ncc_compile_options_t and ncc_compile_options_init(): include/ncc/ncc.h */

#ifdef __cplusplus
}
#endif

#endif /* NCC_OPTIONS_H */
