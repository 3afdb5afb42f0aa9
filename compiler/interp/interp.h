/* ncc reference interpreter, the compiler-internal part: values of literals, computations and single instructions (the public API is include/ncc/ncc_interp.h). */
#ifndef NCC_INTERP_H
#define NCC_INTERP_H

/*
 * The values, the interpreter, the comparison and the non-finite trace are public:
 * include/ncc/ncc_interp.h (docs/interp.md). What is here needs the IR's own types
 * (literals, computations, instructions) and serves the passes and the tests.
 */

#include <stdbool.h>
#include <stdint.h>

#include "hlo/ir.h"
#include "ncc/ncc_interp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A value holding a constant's literal (array or tuple constant of shape). Elided
 * literals ("{...}") are NCC_ERR_UNSUPPORTED. */
ncc_status_t ncc_value_from_literal(const ncc_shape_t *shape, const ncc_literal_t *lit,
				    ncc_value_t **out_value);
/* Same for any computation of a module (used for called computations in tests). */
ncc_status_t ncc_interp_run_comp(const ncc_comp_t *c, const ncc_value_t *const *args,
				 int32_t nargs, const ncc_interp_options_t *opts,
				 ncc_value_t **out_result, ncc_error_t *err);

/* Whether the interpreter evaluates inst (opcode, element types, custom-call target).
 * When it does not and why is not NULL, *why is a static string saying what is
 * missing. */
bool ncc_interp_supports(const ncc_inst_t *inst, const char **why);

/* Whether the interpreter computes on arrays of element type t (the constant
 * folder folds only those). */
bool ncc_interp_etype_supported(ncc_etype_t t);

/* Whether the constant folder may evaluate op with ncc_interp_eval_inst as an
 * elementwise op, splat operands included (op(broadcast(c)) = broadcast(op(c))):
 * add, exponential, compare, select, clamp, convert, ...; not map, not broadcast.
 * The same table as the interpreter's own list of elementwise ops, one column
 * further (interp_elementwise.c). */
bool ncc_interp_folds_elementwise(ncc_opcode_t op);

/* Evaluates the one instruction inst on operand values ops[0..inst->noperands)
 * (borrowed) into a new value of shape (NULL: inst's own shape; the constant folder
 * passes a scalar to evaluate a splat), with the interpreter's semantics. Only
 * instructions evaluated from their operands alone (elementwise, convert, data
 * movement, ...; not parameters, calls, map or control flow) are accepted, else
 * NCC_ERR_UNSUPPORTED. *out_value is the caller's to free with ncc_value_free(). */
ncc_status_t ncc_interp_eval_inst(const ncc_inst_t *inst, const ncc_value_t *const *ops,
				  const ncc_shape_t *shape, ncc_value_t **out_value,
				  ncc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* NCC_INTERP_H */
