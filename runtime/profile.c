/* The profiler: system and device traces written as Chrome trace events. Placeholder until #6 lands. */
#include "nrt/nrt_profile.h"
#include "observe.h"

NRT_STATUS nrt_profile_init(nrt_ctx_t *ctx) { (void)ctx; return NRT_SUCCESS; }
void nrt_profile_fini(nrt_ctx_t *ctx) { (void)ctx; }
void nrt_profile_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec) { (void)ctx; (void)rec; }
NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename) { (void)model; (void)filename; return NRT_SUCCESS; }
NRT_STATUS nrt_profile_stop(const char *filename) { (void)filename; return NRT_SUCCESS; }
NRT_STATUS nrt_neuronsim_trace_begin(const char *name) { (void)name; return NRT_SUCCESS; }
NRT_STATUS nrt_neuronsim_trace_end(void) { return NRT_SUCCESS; }
NRT_STATUS nrt_neuronsim_trace_step(uint64_t step) { (void)step; return NRT_SUCCESS; }
