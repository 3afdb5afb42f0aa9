/* Profiling API of the Neuron Runtime (nrt_profile.h): device and system traces of a model's executions. */
#ifndef NRT_NRT_PROFILE_H
#define NRT_NRT_PROFILE_H

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording executions of model (device trace: one span per
 * instruction; system trace: runtime calls). filename is where
 * nrt_profile_stop() will write; neuronsim writes a Chrome trace event file
 * (gzip-compressed when the name ends in .gz), see docs/profiler.md. */
NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename);

/* Stops recording and writes the trace to filename. */
NRT_STATUS nrt_profile_stop(const char *filename);

/* Starts an inspection now, as NEURON_RT_INSPECT_ENABLE=1 does at nrt_init():
 * the other NEURON_RT_INSPECT_* variables (docs/env.md) are read at this call
 * and choose what is recorded and where. NRT_INVALID while an inspection runs
 * (one started by the environment included) or for a bad setting. */
NRT_STATUS nrt_inspect_begin(void);

/* Writes the running inspection to NEURON_RT_INSPECT_OUTPUT_DIR (the layout
 * nrt_close() uses, docs/profiler.md) and stops it. NRT_INVALID when none runs. */
NRT_STATUS nrt_inspect_stop(void);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_PROFILE_H */
