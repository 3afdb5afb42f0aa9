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

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_PROFILE_H */
