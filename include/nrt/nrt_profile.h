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

/* Writes the running inspection to its output directory (the layout
 * nrt_close() uses, docs/profiler.md) and stops it, whether nrt_inspect_begin(),
 * nrt_inspect_begin_with_options() or the environment started it.
 * NRT_INVALID when none runs. */
NRT_STATUS nrt_inspect_stop(void);

/* ---- inspection options (nrt_inspect_begin_with_options) ----------------
 * The same inspection as nrt_inspect_begin() with its settings from an
 * options object instead of the NEURON_RT_INSPECT_* variables (which it
 * ignores). Every setter returns NRT_INVALID, with a message, for a NULL
 * options or a bad value and leaves the options unchanged then. */
typedef struct nrt_inspect_config nrt_inspect_config_t;

/* How the device profile of an inspection records executions. */
typedef enum nrt_inspect_device_profile_mode {
	NRT_INSPECT_DEVICE_PROFILE_MODE_DISABLED = 0, /* no device profile */
	NRT_INSPECT_DEVICE_PROFILE_MODE_MODEL = 1,    /* each model's first execution per instance */
	NRT_INSPECT_DEVICE_PROFILE_MODE_SESSION = 2,  /* every execution */
} nrt_inspect_device_profile_mode_t;

/* Allocates options set to the defaults (nrt_inspect_config_set_defaults);
 * free them with nrt_inspect_config_free(). */
NRT_STATUS nrt_inspect_config_allocate(nrt_inspect_config_t **options);
/* The defaults, whatever the environment says: session id 1, output directory
 * "./output", every activity type, every NeuronCore and system trace event
 * type, device profile mode MODEL, inspect and inspect-on-fail off (an
 * inspection begun with them records nothing). */
NRT_STATUS nrt_inspect_config_set_defaults(nrt_inspect_config_t *options);
/* NULL is accepted. */
NRT_STATUS nrt_inspect_config_free(nrt_inspect_config_t *options);
/* The number N of the file the inspection writes, ntrace_session_<N>.json.gz
 * (the first free one from N); non-negative. */
NRT_STATUS nrt_inspect_config_set_session_id(nrt_inspect_config_t *options, int session_id);
/* Where the inspection writes (created at nrt_inspect_begin_with_options);
 * a non-empty string, copied. */
NRT_STATUS nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options, const char *output_dir);
/* System trace ring size per NeuronCore: accepted, neuronsim's inspection
 * keeps its own bounds (docs/profiler.md); reported once at INFO when set. */
NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc(nrt_inspect_config_t *options,
							      uint64_t sys_trace_max_events_per_nc);
/* Whether executions on NeuronCore nc_idx (logical, up to 4095) are captured:
 * a disabled core's executions get no device profile. */
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options, uint32_t nc_idx,
							 bool enabled);
/* A system trace event type by name (nrt_sys_trace_get_event_types() lists
 * them; NRT_INVALID for another name): accepted, reported once at INFO when
 * one is disabled (neuronsim's inspection trace does not filter them). */
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string(nrt_inspect_config_t *options,
									const char *event_type, bool enabled);
/* Record the enabled activities from nrt_inspect_begin_with_options() to
 * nrt_inspect_stop(). Off by default. */
NRT_STATUS nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options, bool enable_inspect);
/* Device profiles of failed executions: accepted, reported once at INFO
 * (neuronsim keeps none; NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR keeps a failed
 * execution's inputs instead). Off by default. */
NRT_STATUS nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options,
							 bool enable_inspect_on_fail);
/* MODEL (the default) or SESSION, as NEURON_RT_INSPECT_DEVICE_PROFILE=model or
 * session; DISABLED turns the device profile off. NRT_INVALID for another value. */
NRT_STATUS nrt_inspect_config_set_inspect_device_profile_mode(nrt_inspect_config_t *options,
							      nrt_inspect_device_profile_mode_t device_profile_mode);
/* Enables or disables an activity type: "system_profile" (runtime calls,
 * transfers, user blocks), "device_profile" (one span per instruction),
 * "host_memory" and "cpu_util" (accepted, reported once at INFO: neuronsim
 * does not sample the host), or "all". NRT_INVALID for another name. */
NRT_STATUS nrt_inspect_config_set_activity(nrt_inspect_config_t *options, const char *activity_type,
					   bool enabled);
/* Every activity type ("all" excepted) / those options enables, as a malloc'd
 * array of malloc'd strings the caller frees (each string and the array) or
 * gives to nrt_inspect_config_free_activity_types(). */
NRT_STATUS nrt_inspect_config_get_all_activity_types(const char ***activity_types, size_t *count);
NRT_STATUS nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options,
							 const char ***activity_types, size_t *count);
void nrt_inspect_config_free_activity_types(const char **activity_types, size_t count);

/* Starts an inspection with options (NULL: the defaults, which record
 * nothing) after nrt_init(); nrt_inspect_stop() writes it. NRT_INVALID while
 * an inspection runs, while continuous profiling runs and the options ask for
 * a device profile, or when the output directory cannot be created or
 * written. The options may be changed or freed after the call. */
NRT_STATUS nrt_inspect_begin_with_options(nrt_inspect_config_t *options);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_PROFILE_H */
