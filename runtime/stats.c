/* Process stats published for neuron-top and neuron-monitor. Placeholder until #6 lands. */
#include "observe.h"

NRT_STATUS nrt_stats_init(nrt_ctx_t *ctx) { (void)ctx; return NRT_SUCCESS; }
void nrt_stats_fini(nrt_ctx_t *ctx) { (void)ctx; }
void nrt_stats_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec) { (void)ctx; (void)rec; }
