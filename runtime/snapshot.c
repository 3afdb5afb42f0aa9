/* HLO snapshots: on-demand dumps (XLA_FLAGS), ON_NRT_ERROR modes and their input copies. Placeholder until #5 lands. */
#include "observe.h"

NRT_STATUS nrt_snapshot_init(nrt_ctx_t *ctx) { (void)ctx; return NRT_SUCCESS; }
void nrt_snapshot_fini(nrt_ctx_t *ctx) { (void)ctx; }
NRT_STATUS nrt_snapshot_model_init(nrt_ctx_t *ctx, nrt_model_obj_t *m) { (void)ctx; (void)m; return NRT_SUCCESS; }
void nrt_snapshot_model_fini(nrt_ctx_t *ctx, nrt_model_obj_t *m) { (void)ctx; (void)m; }
NRT_STATUS nrt_snapshot_exec_begin(nrt_ctx_t *ctx, nrt_exec_rec_t *rec) { (void)ctx; (void)rec; return NRT_SUCCESS; }
void nrt_snapshot_exec_end(nrt_ctx_t *ctx, nrt_exec_rec_t *rec) { (void)ctx; (void)rec; }
NRT_STATUS nrt_neuronsim_set_snapshot_callback(nrt_neuronsim_snapshot_cb_t cb, void *arg) { (void)cb; (void)arg; return NRT_SUCCESS; }
