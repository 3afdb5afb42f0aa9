/* Public API of the ncc back end: lowering an IR module to ISA code and emitting the NEFF. */
#ifndef NCC_LOWER_H
#define NCC_LOWER_H

#include <stdbool.h>
#include <stddef.h>

#include "hlo/ir.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lowers the verified module m to a NEFF with opts (NULL: defaults). On success
 * *out_neff is a malloc'd buffer of *out_size bytes that the caller frees with free().
 * On failure both are set to NULL/0 and err (if not NULL) says why; an unsupported
 * instruction gives NCC_ERR_UNSUPPORTED and a message containing "unsupported", the
 * instruction name, its type and its source line. m is not modified. */
ncc_status_t ncc_lower_module(const ncc_module_t *m, const ncc_compile_options_t *opts,
			      void **out_neff, size_t *out_size, ncc_error_t *err);

/* The single definition of what the back end supports: true when inst (an
 * instruction of any computation of a module) can be lowered. When false and
 * out_reason is not NULL, *out_reason is a static string saying why (e.g.
 * "unsupported element type f64"). Used by the analyze report. */
bool ncc_lower_supports(const ncc_inst_t *inst, const char **out_reason);

#ifdef __cplusplus
}
#endif

#endif /* NCC_LOWER_H */
