/* ncc HLO text parser: XLA HLO text (as dumped by --xla_dump_to) -> ncc IR module. */
#ifndef NCC_HLO_PARSER_H
#define NCC_HLO_PARSER_H

#include <stddef.h>

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits that keep malformed or hostile input from exhausting memory or the stack. */
#define NCC_PARSE_MAX_INPUT (256u << 20)   /* bytes of HLO text */
#define NCC_PARSE_MAX_DEPTH 64             /* nesting of tuples / braces / literals */
#define NCC_PARSE_MAX_OPERANDS (1 << 20)   /* per instruction */
#define NCC_PARSE_MAX_LITERAL_BYTES (1ull << 31) /* decoded constant size */

/* Parses HLO text [text, text + len) (need not be NUL-terminated). filename is used
 * in messages and stored in the module (NULL: "<input>"). On success *out_module is
 * a module the caller owns (ncc_module_free()); the text is copied. On failure
 * *out_module is NULL, nothing leaks, and err (if not NULL) holds
 * "FILE:LINE:COL: error: expected X, got 'TOKEN'". Computations may be referenced
 * before they are defined. The result is syntactically complete but not verified:
 * call ncc_verify() before trusting shapes. */
ncc_status_t ncc_parse_hlo(const char *text, size_t len, const char *filename,
			   ncc_module_t **out_module, ncc_error_t *err);

/* Reads path and parses it (NCC_ERR_IO with a message if it cannot be read). */
ncc_status_t ncc_parse_hlo_file(const char *path, ncc_module_t **out_module, ncc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* NCC_HLO_PARSER_H */
