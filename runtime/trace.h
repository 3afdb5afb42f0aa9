/* The profiler's recorder: per-thread system events, device trace jobs, model tables and the Chrome trace writer (docs/profiler.md). */
#ifndef NRT_TRACE_H
#define NRT_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "neuronsim/isa.h"
#include "neuronsim/neff.h"
#include "nrt/nrt_status.h"

/* ---- system events (trace.c) ------------------------------------------
 * One process-global recorder, like the metrics registry: a user block may be
 * recorded before nrt_init (compilation) and a trace outlives the runtime
 * objects it describes. Every thread appends to its own buffer (created on
 * its first event, kept after the thread exits until the next clear), so the
 * only lock an event takes is its own thread's, which nobody else holds
 * except while a trace is being written. */

#define NRT_TRACE_NAME_MAX 64
#define NRT_TRACE_LABEL_MAX 128
/* Open user blocks per thread (nrt_neuronsim_trace_begin). */
#define NRT_TRACE_MAX_DEPTH 64
/* System events kept at most (over all threads); later ones are counted as
 * dropped. ~200 bytes each. */
#define NRT_TRACE_MAX_EVENTS (1u << 20)

typedef enum nrt_trace_kind {
	NRT_TRACE_SPAN = 0,    /* a complete event [start_ns, end_ns] */
	NRT_TRACE_INSTANT = 1, /* at start_ns (step markers) */
} nrt_trace_kind_t;

/* Which argument set a span carries in the written trace. */
typedef enum nrt_trace_cat {
	NRT_TRACE_CAT_USER = 0,     /* nrt_neuronsim_trace_begin/end */
	NRT_TRACE_CAT_RUNTIME = 1,  /* nrt_load, nrt_execute: label = model */
	NRT_TRACE_CAT_TRANSFER = 2, /* nrt_tensor_read/write: label = tensor, value = bytes */
	NRT_TRACE_CAT_STEP = 3,     /* step markers: value = step */
	NRT_TRACE_CAT_MEMORY = 4,   /* device memory (nrt_trace_start(true)): instants named
				     * device_mem_alloc/_free, label = category, value = bytes,
				     * status = the logical NeuronCore */
} nrt_trace_cat_t;

typedef struct nrt_trace_event {
	uint64_t start_ns;         /* CLOCK_MONOTONIC */
	uint64_t end_ns;
	uint64_t value;            /* bytes, step, or the execution index */
	int32_t status;            /* NRT_STATUS of a runtime call, else 0 */
	uint8_t kind;              /* nrt_trace_kind_t */
	uint8_t cat;               /* nrt_trace_cat_t */
	uint8_t has_value;         /* value is meaningful (RUNTIME: execution index) */
	uint8_t pad;
	char name[NRT_TRACE_NAME_MAX];   /* truncated, NUL-terminated */
	char label[NRT_TRACE_LABEL_MAX]; /* "" when none */
} nrt_trace_event_t;

/* Set while system events are recorded (nrt_trace_set_on). */
extern atomic_bool nrt_trace_on_flag;

static inline bool nrt_trace_on(void)
{
	return atomic_load_explicit(&nrt_trace_on_flag, memory_order_relaxed);
}

void nrt_trace_set_on(bool on);

/* Appends ev to the calling thread's buffer if recording is on. Never fails:
 * out of memory or over NRT_TRACE_MAX_EVENTS, the event is counted as dropped. */
void nrt_trace_record(const nrt_trace_event_t *ev);

/* User blocks of the calling thread. begin returns NRT_INVALID (with a
 * message) past NRT_TRACE_MAX_DEPTH open blocks; end returns NRT_INVALID when
 * the thread has no open block. Blocks are counted also while recording is
 * off, so an end always pairs with its begin; only blocks begun while
 * recording is on are recorded. */
NRT_STATUS nrt_trace_block_begin(const char *name);
NRT_STATUS nrt_trace_block_end(void);

/* Events of one thread, copied out for the writer. */
typedef struct nrt_trace_thread_events {
	uint32_t tid;                    /* kernel thread id */
	char name[32];                   /* thread name when it first recorded */
	uint64_t n;
	nrt_trace_event_t *events;       /* malloc'd; sorted by start, longer first */
} nrt_trace_thread_events_t;

typedef struct nrt_trace_snapshot {
	uint32_t n_threads;
	nrt_trace_thread_events_t *threads; /* malloc'd */
	uint64_t dropped;                /* events lost since the last clear */
} nrt_trace_snapshot_t;

/* Copies the events that start in [from_ns, to_ns] (threads without any are
 * left out). NRT_RESOURCE when out of memory (out is then empty). */
NRT_STATUS nrt_trace_snapshot(uint64_t from_ns, uint64_t to_ns, nrt_trace_snapshot_t *out);
void nrt_trace_snapshot_free(nrt_trace_snapshot_t *s);

/* Drops every recorded event and the buffers of exited threads. Open blocks
 * stay open. */
void nrt_trace_clear(void);

/* ---- model tables (trace_model.c) -------------------------------------
 * What the device trace needs of a model, copied at its first traced
 * execution so that a trace can be written after the model is unloaded. */

typedef struct nrt_trace_insn {
	uint32_t debug_id;     /* ISA_DEBUG_NONE when the NEFF has no entry */
	uint16_t opcode;       /* isa_opcode_t */
	uint16_t pad;
	uint64_t flops;        /* arithmetic operations (docs/profiler.md) */
	uint64_t bytes;        /* bytes its access patterns touch */
} nrt_trace_insn_t;

typedef struct nrt_trace_model {
	struct nrt_trace_model *next;
	uint32_t executable_id;          /* the model's load order in this runtime */
	uint32_t n_cores;
	char name[128];
	uint32_t count[NEFF_MAX_CORES][ISA_ENGINE_COUNT];
	nrt_trace_insn_t *insns[NEFF_MAX_CORES][ISA_ENGINE_COUNT];
	neff_view_t debug;               /* only the debug fields, over the copies below */
	neff_debug_entry_t *debug_entries;
	char *debug_strings;
	/* Mutable, under the profiler's lock. */
	uint32_t n_instances;
	bool *instance_traced;           /* NEURON_RT_INSPECT_DEVICE_PROFILE=model */
	uint64_t span_hint[NEFF_MAX_CORES]; /* spans one execution of core c produced */
} nrt_trace_model_t;

/* Builds the table of a model; NULL when out of memory. Free with
 * nrt_trace_model_free(). */
nrt_trace_model_t *nrt_trace_model_create(const neff_view_t *view, uint32_t executable_id,
					  uint32_t n_instances);
void nrt_trace_model_free(nrt_trace_model_t *tm);
/* Debug strings of one instruction ("" when unknown, never NULL). */
void nrt_trace_model_lookup(const nrt_trace_model_t *tm, uint32_t debug_id, const char **out_hlo,
			    const char **out_op_type, const char **out_file, uint32_t *out_line);
/* FLOPs and bytes of one instruction of view (consts holds FUSED descriptors). */
void nrt_trace_insn_cost(const isa_insn_t *in, const uint8_t *consts, uint64_t consts_size,
			 uint64_t *out_flops, uint64_t *out_bytes);

/* ---- device jobs --------------------------------------------------------
 * One core's share of one traced execution: the simulator's spans and its own
 * accounting of the same job. */
typedef struct nrt_trace_job {
	struct nrt_trace_job *next;
	const nrt_trace_model_t *model;  /* owned by the profiler, outlives the job */
	uint32_t logical_nc;             /* the core the job ran on */
	uint32_t global_nc;              /* its physical id */
	uint32_t model_core;             /* core index inside the NEFF */
	int32_t status;                  /* the execution's NRT_STATUS */
	uint64_t exec_index;
	uint64_t start_ns, end_ns;       /* first span start .. last span end */
	uint64_t exec_start_ns;          /* its nrt_execute call's start: the window's test */
	uint64_t busy_ns[ISA_ENGINE_COUNT]; /* the simulator's engine_busy_ns */
	uint64_t insns_executed;
	uint64_t dropped;                /* spans the buffer could not hold */
	uint64_t n_spans;
	nrt_backend_span_t *spans;       /* owned; sorted by start */
} nrt_trace_job_t;

void nrt_trace_job_free(nrt_trace_job_t *j);

/* ---- the writer (trace_writer.c) -------------------------------------- */

typedef struct nrt_trace_write_args {
	const char *path;
	bool gzip;                       /* else plain JSON */
	uint64_t from_ns, to_ns;         /* the window written */
	const nrt_trace_job_t *jobs;     /* list; those ending before from_ns are skipped */
	uint64_t jobs_dropped;           /* jobs not kept (span limit) */
	const char *session;             /* "nrt_profile_start" or "inspect" */
	const char *device_profile;      /* "off", "model", "session", "api" */
	const char *backend;
} nrt_trace_write_args_t;

/* Writes a Chrome trace event file (a temporary file renamed into place, so a
 * failed write leaves nothing behind). An NRT_FAILURE status naming the path
 * and the reason when it cannot be written. */
ns_status_t nrt_trace_write(const nrt_trace_write_args_t *args);

/* Creates dir and its parents (mode 0777 & ~umask). 0, or -1 with errno. */
int nrt_trace_mkdirs(const char *dir);

#endif /* NRT_TRACE_H */
