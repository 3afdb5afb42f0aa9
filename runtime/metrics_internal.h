/* Internal controls of the runtime's metrics recording (runtime/metrics.c), for the metrics benchmark; not exported from libnrt.so. */
#ifndef NRT_METRICS_INTERNAL_H
#define NRT_METRICS_INTERNAL_H

#include <stdbool.h>

/* Turns what executions and tensor transfers record on (the default) or off.
 * Off, nrt_metrics_exec() and nrt_metrics_transfer() return at once, so
 * neuronsim-bench-metrics can time the same run with and without them; the
 * public nrt_neuronsim_metric_* API keeps working either way. */
void nrt_metrics_set_recording(bool on);

#endif /* NRT_METRICS_INTERNAL_H */
