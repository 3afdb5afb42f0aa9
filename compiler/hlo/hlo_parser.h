/* ncc HLO text parser: XLA HLO text (as dumped by --xla_dump_to) -> ncc IR module. */
#ifndef NCC_HLO_PARSER_H
#define NCC_HLO_PARSER_H

#include <stddef.h>

#include "ir.h"
#include "ncc/ncc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ncc_parse_hlo(), ncc_parse_hlo_file(), ncc_parse_hlo_proto() and the input limits
 * (NCC_PARSE_MAX_*) are public: include/ncc/ncc.h. */

#ifdef __cplusplus
}
#endif

#endif /* NCC_HLO_PARSER_H */
