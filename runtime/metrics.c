/* The runtime's metrics: the process registry behind the public API and what executions and transfers record. Placeholder until #6 lands. */
#include <stdlib.h>
#include <string.h>

#include "observe.h"

void nrt_metrics_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec) { (void)ctx; (void)rec; }
void nrt_metrics_transfer(bool to_device, uint64_t bytes, uint64_t ns) { (void)to_device; (void)bytes; (void)ns; }
NRT_STATUS nrt_neuronsim_metric_add(const char *name, nrt_neuronsim_metric_unit_t unit, double value) { (void)name; (void)unit; (void)value; return NRT_SUCCESS; }
NRT_STATUS nrt_neuronsim_counter_add(const char *name, int64_t delta) { (void)name; (void)delta; return NRT_SUCCESS; }
int64_t nrt_neuronsim_counter_value(const char *name) { (void)name; return 0; }
char *nrt_neuronsim_metrics_report(void) { return strdup(""); }
void nrt_neuronsim_metrics_clear(void) {}
