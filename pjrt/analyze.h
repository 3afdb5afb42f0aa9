/* Analyze mode of the plugin (NEURONSIM_PJRT_ANALYZE=DIR): compile writes each graph's analyze report instead of a NEFF, execute hands back zero-filled outputs without running anything. */
#ifndef NEURONSIM_PJRT_ANALYZE_H
#define NEURONSIM_PJRT_ANALYZE_H

#include "pjrt_internal.h"

/*
 * torch-neuronx's `neuron_parallel_compile --command analyze` extracts the graphs of
 * a training script without running them on the device; neuronsim-analyze
 * (frontends/torch, docs/torch.md) runs the script with NEURONSIM_PJRT_ANALYZE set
 * and aggregates the per-graph reports this file writes. An executable made in
 * this mode has no NEFF (e->neff == NULL): that is how the execute path knows.
 * The values the script computes in this mode are meaningless (all zeros).
 */

/* The report directory, or NULL when analyze mode is off (read once). */
const char *pjrt_analyze_dir(void);

/* Parses and verifies the program (PJRT_FORMAT_HLO or _HLO_TEXT), runs
 * ncc_analyze_module() on it and writes DIR/PID-NNNNNN-MODULE.json (docs/torch.md,
 * "Analyze for training"). A program the compiler cannot parse or verify is
 * recorded with its error and is not a failure: the script goes on. Only an
 * unwritable report directory or no memory is an error. */
PJRT_Error *pjrt_analyze_program(const char *format, const uint8_t *code, size_t size, const char *name);

/* Fills what pjrt_exec_create otherwise learns from the loaded NEFF (output
 * sizes, no in-place updates) and gives the executable a fingerprint of its
 * program. Nothing is loaded. */
PJRT_Error *pjrt_analyze_exec_init(pjrt_exec_t *e);

/* An "execution" in analyze mode: every output of e becomes a new zero-filled
 * buffer on dev; the arguments are left alone and nothing runs. */
PJRT_Error *pjrt_analyze_run(pjrt_exec_t *e, pjrt_device_t *dev, PJRT_Buffer **outv);

#endif /* NEURONSIM_PJRT_ANALYZE_H */
