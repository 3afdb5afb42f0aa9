/* The profiler's state, shared by the files that record and write it
 * (profile.c, profile_trace_api.c); not for the rest of the runtime, which
 * calls the nrt_profile_* functions of observe.h. */
#ifndef NEURONSIM_RUNTIME_PROFILE_STATE_H
#define NEURONSIM_RUNTIME_PROFILE_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "nrt/nrt_profile.h"
#include "observe.h"
#include "trace.h"

/* Device spans kept at most by default (32 bytes each); see docs/profiler.md. */
#define DEFAULT_MAX_SPANS (1ull << 22)

typedef enum dev_mode {
	DEV_OFF = 0,
	DEV_MODEL = 1,   /* the first execution (after the warm-up) per model per instance */
	DEV_SESSION = 2, /* every execution */
} dev_mode_t;

typedef struct nrt_profile_state {
	/* NEURON_RT_INSPECT_* (fixed from nrt_init to nrt_close) */
	bool inspect;
	bool inspect_sys;
	dev_mode_t inspect_dev;
	uint64_t warmup;
	char out_dir[PATH_MAX];
	/* nrt_inspect_begin_with_options only (0/false otherwise): */
	bool inspect_idle;               /* running, recording nothing, writing nothing */
	unsigned inspect_first_session;  /* ntrace_session_<N>: the first free N from this */
	bool inspect_nc_filter;          /* inspect_nc_off applies */
	uint8_t inspect_nc_off[NRT_INSPECT_MAX_NC / 8]; /* a set bit: no device profile on that core */
	uint64_t inspect_start_ns;
	uint64_t max_spans;
	const char *backend;
	/* Read without the lock by every execution. */
	atomic_uint dev_mode;            /* inspect_dev while inspecting */
	_Atomic uint64_t api_model;      /* executable_id + 1 under nrt_profile_start, else 0 */
	/* Under g_prof.lock: */
	bool api_active;
	uint32_t api_model_id;
	char api_model_name[128];
	char api_file[PATH_MAX];
	uint64_t api_start_ns;
	nrt_trace_model_t *models;       /* freed at nrt_close only: jobs point at them */
	nrt_trace_job_t *jobs;
	nrt_trace_job_t **jobs_tail;
	uint64_t n_spans;
	uint64_t jobs_dropped;
	bool warned_limit;
	/* Continuous profiling (nrt_profile_continuous_*, profile_continuous.c):
	 * every execution is device-traced and the latest job of each logical
	 * core kept (owned, unlinked) until replaced, saved or stopped. */
	atomic_bool cont_on;             /* read without the lock by every execution */
	bool cont_active;                /* under g_prof.lock, as the rest below */
	nrt_trace_job_t **cont_latest;   /* cont_n entries */
	uint32_t cont_n;
	/* nrt_trace_start/stop (under g_prof.lock): the system events of every
	 * core, written by the stop. */
	bool trace_active;
	uint64_t trace_start_ns;
} nrt_profile_state_t;

/* The profiler's lock and what exists outside a runtime: user blocks may be
 * recorded before nrt_init when NEURON_RT_INSPECT_ENABLE=1 (compilation
 * usually comes first), and the runtime that starts next adopts them. */
typedef struct nrt_profile_global {
	pthread_mutex_t lock;
	nrt_profile_state_t *live;       /* the running runtime's state */
	bool pending;                    /* recording before nrt_init */
	uint64_t pending_since;
} nrt_profile_global_t;
extern nrt_profile_global_t g_prof;

/* A session running now writes the system events (g_prof.lock held). */
bool nrt_profile_sys_needed_locked(const nrt_profile_state_t *p);
/* Turns system recording on or off as the sessions need (g_prof.lock held). */
void nrt_profile_update_on_locked(void);
/* NRT_INVALID unless path names a trace file (not NULL, not empty: then the
 * message ends with missing_note, "" or "; the trace goes on") whose
 * directory part exists and is writable. */
ns_status_t nrt_profile_check_writable(const char *path, const char *missing_note);
/* The first steps of the profiler's calls: the live runtime, its profiler
 * state, and g_prof.lock, taken when they succeed; nrt_profile_leave releases
 * the lock and passes st on (return nrt_profile_leave(st)). */
ns_status_t nrt_profile_enter(nrt_ctx_t **out_ctx, nrt_profile_state_t **out_p);
ns_status_t nrt_profile_leave(ns_status_t st);
bool nrt_profile_ends_with(const char *s, const char *suffix);
/* nrt_close with a trace of nrt_trace_start running: discarded, said
 * (profile_trace_api.c; g_prof.lock held). */
void nrt_profile_trace_discard_locked(nrt_profile_state_t *p);

#endif
