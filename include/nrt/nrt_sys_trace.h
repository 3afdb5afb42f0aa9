/* The Neuron Runtime's system trace API (nrt_sys_trace.h): per-NeuronCore event capture fetched as JSON while the program runs. */
#ifndef NRT_NRT_SYS_TRACE_H
#define NRT_NRT_SYS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What neuronsim captures, one ring buffer per NeuronCore (docs/profiler.md,
 * "System trace fetch API"); the event types are
 *   "nrt_execute"       every execution of a model, on the model's first core
 *                       (value: the model's execution index),
 *   "nrta_tensor_op"    every request of a TENSOR_OP queue (nrt_async.h),
 *   "nrta_compute"      every request of a COMPUTE queue,
 *   "nrta_collectives"  every request of a COLLECTIVES queue
 *                       (value: the request's sequence id).
 * Capture is per process: it may start before nrt_init() and its events
 * survive nrt_close() until fetched or stopped. */

/* Capture options, opaque: allocate (defaults: 1,000,000 events per core,
 * every core and event type), set, pass to nrt_sys_trace_start(), free. */
typedef struct nrt_sys_trace_config nrt_sys_trace_config_t;

NRT_STATUS nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options);
void nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options);
void nrt_sys_trace_config_free(nrt_sys_trace_config_t *options);
/* Events a core's ring keeps; beyond, the oldest are overwritten (and counted
 * as dropped in the next fetch). 0 is taken as 1. */
void nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options, uint64_t max_events_per_nc);
/* Cores captured (logical ids, up to 4095); a disabled core gets no ring. */
void nrt_sys_trace_config_set_capture_enabled_for_nc(nrt_sys_trace_config_t *options, uint32_t nc_idx,
						     bool enabled);
/* NRT_INVALID for a name nrt_sys_trace_get_event_types() does not list. */
NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type(nrt_sys_trace_config_t *options,
								   const char *event_type, bool enabled);

/* Every event type, as a malloc'd array of malloc'd strings the caller frees
 * (each string and the array) or gives to nrt_sys_trace_free_event_types(). */
NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types, size_t *count);
void nrt_sys_trace_free_event_types(const char **event_types, size_t count);
/* The event types options enables, allocated the same way. */
NRT_STATUS nrt_sys_trace_config_get_enabled_event_types(nrt_sys_trace_config_t *options,
							const char ***event_types, size_t *count);

/* Starts capturing with options (NULL: the defaults); NRT_INVALID while a
 * capture runs. */
NRT_STATUS nrt_sys_trace_start(nrt_sys_trace_config_t *options);
/* Stops capturing and frees the rings (events not fetched are dropped);
 * NRT_INVALID when none runs. */
NRT_STATUS nrt_sys_trace_stop(void);

/* Fetch options, opaque (defaults: every core, every event). */
typedef struct nrt_sys_trace_fetch_options nrt_sys_trace_fetch_options_t;

NRT_STATUS nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options);
void nrt_sys_trace_fetch_options_set_defaults(nrt_sys_trace_fetch_options_t *options);
void nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options);
/* At most this many events of each core per fetch (the oldest first). */
void nrt_sys_trace_fetch_options_set_max_events_per_nc(nrt_sys_trace_fetch_options_t *options,
						       uint64_t max_events_per_nc);
/* Only core nc_idx. */
void nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options, uint64_t nc_idx);

/* Takes the captured events out of the rings (a fetched event is not
 * returned again) and returns them in *buffer as a NUL-terminated JSON
 * object (docs/profiler.md): {"events": [{"nc", "type", "name", "label",
 * "start_ns", "end_ns", "status", "value"}, ...] oldest first per core,
 * "dropped": {"<nc>": count, ...}}. *buffer is released with
 * nrt_sys_trace_buffer_free(); *written_size is its strlen. NRT_INVALID when
 * no capture runs. */
NRT_STATUS nrt_sys_trace_fetch_events(char **buffer, size_t *written_size,
				      const nrt_sys_trace_fetch_options_t *options);
void nrt_sys_trace_buffer_free(char *buffer);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_SYS_TRACE_H */
