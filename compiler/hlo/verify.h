/* ncc verifier: checks an IR module's structure, shapes and attributes against HLO shape inference. */
#ifndef NCC_VERIFY_H
#define NCC_VERIFY_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ncc_verify() (include/ncc/ncc.h) checks m: structure (one entry, roots, operands
 * in the same computation and defined before use, parameters numbered 0..n-1,
 * unique names), and for every instruction its result shape and attributes against
 * XLA's shape inference, e.g. "FILE:LINE:COL: error: instruction 'dot.5': lhs
 * contracting dim 1 has size 3 but rhs contracting dim 0 has size 4". Opcodes whose
 * semantics are not modelled (custom-call, unknown, collectives' groups ...) get
 * only structural checks. */

/* Checks one instruction only (structure of its operands and its shape rules). */
ncc_status_t ncc_verify_inst(const ncc_inst_t *inst, ncc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* NCC_VERIFY_H */
