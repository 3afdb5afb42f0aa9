/* neuronsim extensions to the NRT API: error records, memory accounting, per-core
 * stats, the metrics registry, trace blocks and the HLO snapshot callback. */
#ifndef NRT_NRT_NEURONSIM_H
#define NRT_NRT_NEURONSIM_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong in an execution, resolved against the NEFF's debug map. */
typedef enum nrt_neuronsim_error_kind {
	NRT_NEURONSIM_ERROR_NONE = 0,
	NRT_NEURONSIM_ERROR_NAN = 1,      /* NRT_EXEC_COMPLETED_WITH_NUM_ERR, NaN */
	NRT_NEURONSIM_ERROR_INF = 2,      /* NRT_EXEC_COMPLETED_WITH_NUM_ERR, Inf */
	NRT_NEURONSIM_ERROR_OOB = 3,      /* NRT_EXEC_OOB */
	NRT_NEURONSIM_ERROR_TIMEOUT = 4,  /* NRT_TIMEOUT */
	NRT_NEURONSIM_ERROR_OTHER = 5,    /* invalid job, deadlock, device error */
} nrt_neuronsim_error_kind_t;

typedef struct nrt_neuronsim_exec_error {
	NRT_STATUS status;               /* what nrt_execute() returned */
	uint32_t kind;                   /* nrt_neuronsim_error_kind_t */
	uint32_t logical_nc;             /* core the failing instruction ran on */
	uint32_t engine;                 /* isa_engine_t */
	uint32_t insn_index;             /* in that engine's stream */
	uint32_t source_line;            /* 0 when unknown */
	uint32_t region;                 /* ISA region of the faulting operand/output */
	uint32_t pad;
	uint64_t first_index;            /* numerical errors: first bad flat index */
	uint64_t count;                  /* numerical errors: bad elements */
	char hlo_name[128];              /* "" when the NEFF has no debug entry */
	char op_type[64];
	char source_file[256];
	char tensor[256];                /* I/O tensor name, or "constants"/"scratch" */
	char message[512];               /* the one-line message that was logged (truncated) */
} nrt_neuronsim_exec_error_t;

/* Copies the error record of the most recent execution of model (kind NONE
 * after a successful one; NRT_INVALID if it never executed) into *out_error.
 * With several threads executing, "most recent" is whichever finished last. */
NRT_STATUS nrt_neuronsim_get_last_error(nrt_model_t *model, nrt_neuronsim_exec_error_t *out_error);

/* In-place updates of model: alias_input[i] is, for I/O tensor i in the order of
 * nrt_get_model_tensor_info(), the index of the input tensor that output i updates
 * in place (the NEFF's alias_input; nrt_execute() binds such an output to that
 * input's tensor when the output set leaves it out), or -1 (every input, and
 * outputs that alias nothing). count is the capacity of alias_input: NRT_INVALID if
 * it is smaller than the model's tensor count, or if alias_input is NULL. */
NRT_STATUS nrt_neuronsim_get_model_tensor_aliases(nrt_model_t *model, int32_t *alias_input, size_t count);

/* Device memory accounting by use, over all devices of the runtime. */
typedef enum nrt_neuronsim_mem_category {
	NRT_NEURONSIM_MEM_TENSORS = 0,    /* device-placed tensors */
	NRT_NEURONSIM_MEM_CONSTANTS = 1,  /* NEFF constants */
	NRT_NEURONSIM_MEM_CODE = 2,       /* instruction streams */
	NRT_NEURONSIM_MEM_SCRATCH = 3,    /* model scratch */
	NRT_NEURONSIM_MEM_STAGING = 4,    /* host tensors staged for an execution */
	NRT_NEURONSIM_MEM_SNAPSHOT = 5,   /* ON_NRT_ERROR(_HYBRID) input copies */
	NRT_NEURONSIM_MEM_CATEGORY_COUNT
} nrt_neuronsim_mem_category_t;

typedef struct nrt_neuronsim_mem_usage {
	uint64_t total;                  /* device memory of all devices, bytes */
	uint64_t in_use;                 /* bytes allocated now (after alignment) */
	uint64_t peak;                   /* highest in_use since nrt_init() */
	uint64_t by_category[NRT_NEURONSIM_MEM_CATEGORY_COUNT]; /* bytes now */
	uint64_t host_tensors;           /* host-placed tensor bytes (not device memory) */
	uint64_t host_snapshot;          /* ON_NRT_ERROR_HYBRID/_CPU input copies in host memory */
} nrt_neuronsim_mem_usage_t;

NRT_STATUS nrt_neuronsim_get_mem_usage(nrt_neuronsim_mem_usage_t *out_usage);

/* Name of the backend in use: "embedded" or "kernel". */
const char *nrt_neuronsim_backend_name(void);

/* ---- per-core execution counters (since nrt_init) ----------------------- */
typedef struct nrt_neuronsim_core_stats {
	uint64_t executions;             /* every nrt_execute that reached the core */
	uint64_t completed;              /* NRT_SUCCESS */
	uint64_t completed_with_err;     /* failed on the device: OOB, deadlock, device lost */
	uint64_t completed_with_num_err; /* NRT_EXEC_COMPLETED_WITH_NUM_ERR */
	uint64_t timed_out;              /* NRT_TIMEOUT */
	uint64_t incorrect_input;        /* refused before running: bad or missing tensors */
	uint64_t busy_ns;                /* wall time the core spent running jobs, the
					  * running ones included up to now */
} nrt_neuronsim_core_stats_t;

/* Counters of visible core logical_nc. NRT_INVALID for a core that is not visible. */
NRT_STATUS nrt_neuronsim_get_core_stats(uint32_t logical_nc, nrt_neuronsim_core_stats_t *out_stats);

/* ---- metrics registry (docs/metrics.md) ---------------------------------
 * One registry per process, alive from the first call to process exit (it
 * survives nrt_close, as PyTorch/XLA's does). Safe from any thread; works
 * before nrt_init, so a tool can record CompileTime before loading. */
typedef enum nrt_neuronsim_metric_unit {
	NRT_NEURONSIM_METRIC_TIME_NS = 0, /* samples are nanoseconds, printed as 001ms228.773us */
	NRT_NEURONSIM_METRIC_BYTES = 1,   /* printed as 12.50MB */
	NRT_NEURONSIM_METRIC_NUMBER = 2,  /* printed as a plain number */
} nrt_neuronsim_metric_unit_t;

/* Adds a sample to metric name (created on first use with that unit;
 * NRT_INVALID if name is NULL/empty or was created with another unit). */
NRT_STATUS nrt_neuronsim_metric_add(const char *name, nrt_neuronsim_metric_unit_t unit, double value);
/* Adds delta to counter name (created on first use). */
NRT_STATUS nrt_neuronsim_counter_add(const char *name, int64_t delta);
/* Current value of counter name (0 if it does not exist). */
int64_t nrt_neuronsim_counter_value(const char *name);
/* The report in PyTorch/XLA's metrics_report() text format. The caller frees
 * the string with free(). NULL only when out of memory. */
char *nrt_neuronsim_metrics_report(void);
/* Drops every metric and counter. */
void nrt_neuronsim_metrics_clear(void);
/* Where the runtime appends its report after every execution, instead of
 * XLA_METRICS_FILE: file is named as that variable's value is (STDOUT,
 * STDERR, the .ORDINAL suffix in a job of several processes); NULL or ""
 * makes the runtime write no report anywhere. For a framework that writes
 * XLA_METRICS_FILE itself: the PJRT plugin calls it before nrt_init, as
 * torch_xla's metrics_saver owns that file (docs/metrics.md). The step
 * numbers go on counting this process's reports. NRT_INVALID when metrics are
 * off (bad XLA_METRICS_* values), NRT_RESOURCE when out of memory. */
NRT_STATUS nrt_neuronsim_metrics_set_file(const char *file);

/* ---- profiler blocks (docs/profiler.md) ---------------------------------
 * A named span in the system trace of the calling thread, as xp.Trace("name")
 * gives; blocks nest per thread. No-ops (NRT_SUCCESS) while no trace is being
 * recorded. end without a begin on this thread is NRT_INVALID. */
NRT_STATUS nrt_neuronsim_trace_begin(const char *name);
NRT_STATUS nrt_neuronsim_trace_end(void);
/* A step marker (xp.StepTrace): an instant event "step N" on the calling thread. */
NRT_STATUS nrt_neuronsim_trace_step(uint64_t step);

/* ---- HLO snapshots (docs/snapshot.md) -----------------------------------
 * With XLA_FLAGS=--xla_dump_hlo_snapshots, the callback decides per execution
 * what to dump: it returns "inputs", "outputs", "inputs outputs" or "" (name is
 * the model's HLO module name, device the addressable device index, count the
 * model's 0-based execution count). The returned string must stay valid until
 * the next call. NULL callback restores the default, which returns "inputs". */
typedef const char *(*nrt_neuronsim_snapshot_cb_t)(const char *name, uint32_t addressable_device_index,
						     uint64_t execution_count, void *arg);
NRT_STATUS nrt_neuronsim_set_snapshot_callback(nrt_neuronsim_snapshot_cb_t cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_NEURONSIM_H */
