/* The runtime's observers (metrics, profiler, process stats, snapshots): what they see of an execution and where they are called. */
#ifndef NRT_OBSERVE_H
#define NRT_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* One execution as the observers see it. Filled by execute.c; valid only
 * during the hook call. */
typedef struct nrt_exec_rec {
	nrt_model_obj_t *model;
	const nrt_instance_t *instance;
	uint32_t n_tensors;          /* == model->view.meta->n_tensors */
	/* Host mapping of the device bytes I/O tensor i is bound to for this
	 * execution (its own device memory, or the staging copy of a host
	 * tensor); an aliased output points at its input's bytes. Inputs hold
	 * the pre-execution values in exec_begin, outputs the results in
	 * exec_end. NULL entries only when binding failed (incorrect input). */
	uint8_t *const *io;
	uint64_t exec_index;         /* 0-based count of this model's executions */
	uint64_t start_ns;           /* CLOCK_MONOTONIC, before binding */
	uint64_t device_start_ns;    /* first device job submitted (0 if none ran) */
	uint64_t end_ns;             /* after the last job completed */
	NRT_STATUS status;           /* what nrt_execute will return (exec_end) */
	bool ran;                    /* device jobs were submitted */
	nrt_neuronsim_exec_error_t error; /* this execution's record (exec_end) */
	/* Device trace, one per core of the instance (model->neff_cores), from
	 * nrt_profile_exec_traces(); NULL when this execution is not traced.
	 * nrt_profile_exec() takes it over and frees it. */
	nrt_backend_trace_t *traces;
	uint32_t stats_slot;         /* the models[] slot nrt_stats_exec_begin counted this
				      * execution running in (index + 1), 0 for none */
} nrt_exec_rec_t;

/* ---- snapshots (snapshot.c) ---- */
/* At nrt_init / nrt_close: reads NEURON_DUMP_HLO_SNAPSHOT, XLA_FLAGS, RANK, ... */
ns_status_t nrt_snapshot_init(nrt_ctx_t *ctx);
void nrt_snapshot_fini(nrt_ctx_t *ctx);
/* At nrt_load after the instances exist / at model destruction. */
ns_status_t nrt_snapshot_model_init(nrt_ctx_t *ctx, nrt_model_obj_t *m);
void nrt_snapshot_model_fini(nrt_ctx_t *ctx, nrt_model_obj_t *m);
/* Inputs are bound, nothing ran yet. A non-success status refuses the
 * execution (a model poisoned by an earlier failure) and is returned. */
ns_status_t nrt_snapshot_exec_begin(nrt_ctx_t *ctx, nrt_exec_rec_t *rec);
/* After the jobs (or after a refused/failed binding): dumps what is asked
 * for. Never changes rec->status; the error snapshot of a failed execution
 * says what it wrote at the end of *st, the execution's failure, so the
 * failure stays one line. */
void nrt_snapshot_exec_end(nrt_ctx_t *ctx, nrt_exec_rec_t *rec, ns_status_t *st);

/* ---- metrics (metrics.c) ---- */
void nrt_metrics_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec);
/* A tensor write (to_device) or read of bytes that took ns. */
void nrt_metrics_transfer(bool to_device, uint64_t bytes, uint64_t ns);

/* ---- process stats for neuron-top / neuron-monitor (stats.c) ---- */
ns_status_t nrt_stats_init(nrt_ctx_t *ctx);
void nrt_stats_fini(nrt_ctx_t *ctx);
/* An execution of rec->model starts (counted running in the model's entry
 * until nrt_stats_exec sees it end). */
void nrt_stats_exec_begin(nrt_ctx_t *ctx, nrt_exec_rec_t *rec);
void nrt_stats_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec);
/* A model m loaded by nrt_load (after it got its handle) / unloaded by
 * nrt_unload: the loaded-model list of neuron-monitor. */
void nrt_stats_model_load(nrt_ctx_t *ctx, nrt_model_obj_t *m);
void nrt_stats_model_unload(nrt_ctx_t *ctx, const nrt_model_obj_t *m);

/* ---- profiler (profile.c) ---- */
ns_status_t nrt_profile_init(nrt_ctx_t *ctx);
void nrt_profile_fini(nrt_ctx_t *ctx);
/* Before the jobs of an execution (rec->model and rec->instance set): the
 * trace buffers to give the jobs with NRT_BACKEND_JOB_PROFILE, or NULL when
 * this execution is not device-traced (two atomic loads when nothing is). */
nrt_backend_trace_t *nrt_profile_exec_traces(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec);
void nrt_profile_exec(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec);
/* True while system events are recorded: lets callers skip the work of one. */
bool nrt_profile_sys_on(void);
/* A runtime call on the calling thread: name a string such as "nrt_load",
 * label the model, bytes the NEFF size. */
void nrt_profile_call(const char *name, const char *label, uint64_t bytes, NRT_STATUS status,
		      uint64_t start_ns, uint64_t end_ns);
/* A tensor transfer (nrt_tensor_write when to_device, else nrt_tensor_read). */
void nrt_profile_transfer(bool to_device, const char *tensor, uint64_t bytes, uint64_t start_ns,
			  uint64_t end_ns);

/* A device memory allocation (alloc) or free of bytes on logical core nc,
 * category its use; recorded only under nrt_trace_start(true): callers test
 * nrt_profile_mem_on() first (one relaxed atomic load). */
bool nrt_profile_mem_on(void);
void nrt_profile_mem(bool alloc, uint32_t nc, const char *category, uint64_t bytes);

/* nrt_inspect_begin/stop (inspect.c): starts an inspection now with the
 * NEURON_RT_INSPECT_* settings, as NEURON_RT_INSPECT_ENABLE=1 does at nrt_init
 * (NRT_INVALID while one runs) / writes the running one as nrt_close would and
 * stops it (NRT_INVALID when none runs). They need the live runtime; func names
 * the caller in a warning and in the message of a failed write. */
ns_status_t nrt_profile_inspect_begin(const char *func);
/* The settings of an inspection begun with options (inspect.c). */
#define NRT_INSPECT_MAX_NC 4096u
typedef struct nrt_inspect_settings {
	bool record;            /* false: the inspection runs but records nothing */
	bool sys;               /* the system profile */
	unsigned dev_mode;      /* nrt_inspect_device_profile_mode_t: 0 off, 1 model, 2 session */
	unsigned first_session; /* ntrace_session_<N>.json.gz: the first free N from this */
	const uint8_t *nc_off;  /* NRT_INSPECT_MAX_NC / 8 bytes, a set bit: no device profile there */
	const char *out_dir;
} nrt_inspect_settings_t;
/* As nrt_profile_inspect_begin with s instead of the environment. */
ns_status_t nrt_profile_inspect_begin_with(const nrt_inspect_settings_t *s);
ns_status_t nrt_profile_inspect_stop(const char *func);
/* Continuous profiling (profile_continuous.c): every execution is
 * device-traced and each core's latest kept. begin: NRT_INVALID when running
 * or while an inspection records a device profile. save: writes core vnc's
 * latest execution to a new file in dir (its name in out_path). end:
 * NRT_INVALID when not running. They need the live runtime. */
ns_status_t nrt_profile_continuous_begin(void);
ns_status_t nrt_profile_continuous_write(uint32_t vnc, const char *dir, char *out_path, size_t out_len);
ns_status_t nrt_profile_continuous_end(void);

#endif /* NRT_OBSERVE_H */
