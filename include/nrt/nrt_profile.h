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

/* ---- continuous device profiling ----------------------------------------
 * While it runs, every execution is device-traced and the latest one of each
 * NeuronCore kept in memory; nrt_profile_continuous_save() writes a chosen
 * core's to disk (the same Chrome trace format as nrt_profile_stop(), gzip),
 * so only the executions a program asks for cost a file. */

/* Options, opaque: allocate (defaults: output directory "./output"), set,
 * pass to start/save, free. */
typedef struct nrt_profile_continuous_options nrt_profile_continuous_options_t;

NRT_STATUS nrt_profile_continuous_options_allocate(nrt_profile_continuous_options_t **options);
NRT_STATUS nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options);
/* Where nrt_profile_continuous_save() writes (created when needed); copied. */
NRT_STATUS nrt_profile_continuous_options_set_output_dir(nrt_profile_continuous_options_t *options,
							 const char *output_dir);

/* Starts continuous profiling (options may be NULL for the defaults).
 * NRT_INVALID when it already runs or while an inspection records a device
 * profile (NEURON_RT_INSPECT_DEVICE_PROFILE). */
NRT_STATUS nrt_profile_continuous_start(nrt_profile_continuous_options_t *options);

/* Writes the latest execution on NeuronCore vnc (since the start) to a new
 * file in the options' output directory, named
 * <model>_nc<vnc>_exec<execution index>_pid<pid>_<n>.json.gz so that saves never
 * overwrite each other. Profiling goes on. NRT_INVALID when not running, for a
 * core that is not visible or that executed nothing since the start. */
NRT_STATUS nrt_profile_continuous_save(uint32_t vnc, nrt_profile_continuous_options_t *options);

/* Stops continuous profiling without saving; NRT_INVALID when not running. */
NRT_STATUS nrt_profile_continuous_stop(void);

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
