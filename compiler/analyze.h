/* ncc analyze report: which HLO instructions of a module the back end supports, as torch-neuronx's analyze JSON. */
#ifndef NCC_ANALYZE_H
#define NCC_ANALYZE_H

/*
 * The report has the fields of the torch-neuronx / neuron_parallel_compile analyze
 * report (docs/compiler-cli.md has a full example):
 *
 *   {
 *     "neuronx_cc_version": "neuronsim-cc 0.1.1",
 *     "support_percentage": "97.50%",            supported / counted instructions
 *     "supported_operators": {
 *       "aten": { "aten::mul": 12, ... },         per metadata op_type "aten__mul"
 *       "xla": [ "<HLO text line>", ... ]         verbosity <= 1 only
 *     },
 *     "unsupported_operators": {
 *       "aten": [ { "kind": "aten::mul", "failureAt": "neuronsim-cc",
 *                   "call": "model.py 24" } ],
 *       "xla": [ { "hlo_instruction": "<HLO text line>", "aten_op": "aten::mul",
 *                  "reason": "...", "line": 12 } ]   verbosity <= 1 only
 *     }
 *   }
 *
 * Counted instructions: every instruction of the entry computation and of the
 * computations it runs as control flow (while body/condition, conditional branches,
 * call), since those are what the device executes. Scalar computations applied by
 * reduce, scatter, sort ... are part of their caller's support decision
 * (ncc_lower_supports, the one definition of "supported").
 */

#include <stdbool.h>

#include "hlo/ir.h"
#include "ncc/ncc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ncc_analyze_module(), its summary and NCC_ANALYZE_VERBOSITY_DEFAULT: include/ncc/ncc.h */

/* Converts a PyTorch/XLA op_type ("aten__native_layer_norm") to the report spelling
 * ("aten::native_layer_norm"): the first "__" becomes "::". Writes into buf (always
 * NUL-terminated). */
void ncc_analyze_op_kind(const char *op_type, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NCC_ANALYZE_H */
