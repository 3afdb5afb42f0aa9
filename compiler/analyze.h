/* ncc analyze report: which HLO instructions of a module the back end supports, as torch-neuronx's analyze JSON. */
#ifndef NCC_ANALYZE_H
#define NCC_ANALYZE_H

/*
 * The report has the fields of the torch-neuronx / neuron_parallel_compile analyze
 * report (docs/compiler-cli.md has a full example):
 *
 *   {
 *     "neuronx_cc_version": "neuronsim-cc 0.1.0",
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

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Verbosity as torch-neuronx numbers it: 2 (the default) aten level only; 1 adds
 * the HLO instruction lists. */
#define NCC_ANALYZE_VERBOSITY_DEFAULT 2

typedef struct ncc_analyze_summary {
	int64_t total;       /* counted instructions */
	int64_t supported;
	char percentage[16]; /* "97.50%" */
} ncc_analyze_summary_t;

/* Builds the report of the verified module m as a JSON text the caller frees with
 * free() (indented, keys in the order above, trailing newline). summary (may be NULL)
 * receives the counts. Never fails because of unsupported instructions: that is what
 * the report is for. NCC_ERR_NOMEM on allocation failure. */
ncc_status_t ncc_analyze_module(const ncc_module_t *m, int verbosity, char **out_json,
				ncc_analyze_summary_t *summary, ncc_error_t *err);

/* Converts a PyTorch/XLA op_type ("aten__native_layer_norm") to the report spelling
 * ("aten::native_layer_norm"): the first "__" becomes "::". Writes into buf (always
 * NUL-terminated). */
void ncc_analyze_op_kind(const char *op_type, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NCC_ANALYZE_H */
