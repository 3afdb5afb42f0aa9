/* Per-process runtime statistics in shared memory (docs/monitor.md): the file
 * layout libnrt publishes (runtime/stats.c) and the reader the tools share
 * (common/procstats.c: neuron-top, neuron-monitor, neuron-ls). */
#ifndef NEURONSIM_PROCSTATS_H
#define NEURONSIM_PROCSTATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the file ------------------------------------------------------------
 * One regular file per initialised runtime, DIR/neuronsim-stats.UID.PID with
 * DIR = $NEURONSIM_STATS_DIR or /dev/shm, mode 0600, exactly
 * sizeof(procstats_file_t) bytes, created at nrt_init and unlinked at
 * nrt_close. Native byte order (the readers run on the same machine).
 *
 * Identity fields are written before state becomes PROCSTATS_STATE_LIVE and
 * never change afterwards. Counters (v[], cores[].v[], cores[].mem[] and
 * models[] but models[].running, a single word stored on its own) are
 * covered by the
 * seqlock seq: writers of the owning process take writer_lock, make seq odd,
 * store, make seq even; a reader copies them between two loads of seq and
 * retries while it is odd or changed, so it never sees a half-written update.
 * Latency slots carry their own sequence number instead (a reader copying the
 * whole ring would never finish between two executions of a busy process). */

#define PROCSTATS_MAGIC 0x535453504d49534eull /* "NSIMPSTS" little-endian */
#define PROCSTATS_VERSION 4                   /* any layout change bumps it; readers
					       * skip a file of another version
					       * (3: PROCSTATS_CORE_FLOPS; 4: a
					       * model's uuid and running) */
#define PROCSTATS_FILE_PREFIX "neuronsim-stats."
#define PROCSTATS_DEFAULT_DIR "/dev/shm"
#define PROCSTATS_MAX_CORES 256               /* NRT_MAX_CORES */
#define PROCSTATS_LAT_RING 1024               /* latencies of the last executions */
#define PROCSTATS_TAG_MAX 256                 /* NEURON_PROCESS_TAG, NUL included */
#define PROCSTATS_MAX_MODELS 64               /* loaded models listed (more are counted) */
#define PROCSTATS_MODEL_NAME_MAX 128          /* the NEFF's model name, NUL included */

typedef enum procstats_state {
	PROCSTATS_STATE_INIT = 0,   /* being created: skip it */
	PROCSTATS_STATE_LIVE = 1,   /* the runtime is up */
	PROCSTATS_STATE_CLOSED = 2, /* nrt_close ran (the file is unlinked right after) */
} procstats_state_t;

/* Process-wide counters, indexes into procstats_file_t.v[]. Execution
 * outcomes and error kinds count since nrt_init; memory values are the
 * current ones (refreshed at least every PROCSTATS_REFRESH_MS). */
enum {
	/* execution_summary: every execution lands in exactly one of these */
	PROCSTATS_EXECUTIONS = 0,
	PROCSTATS_COMPLETED,              /* NRT_SUCCESS */
	PROCSTATS_COMPLETED_WITH_ERR,     /* failed on the device, or on the host after binding */
	PROCSTATS_COMPLETED_WITH_NUM_ERR, /* NRT_EXEC_COMPLETED_WITH_NUM_ERR */
	PROCSTATS_TIMED_OUT,              /* NRT_TIMEOUT */
	PROCSTATS_INCORRECT_INPUT,        /* refused before running: bad or missing tensors */
	PROCSTATS_FAILED_TO_QUEUE,        /* nrt_execute never queues: always 0 */
	/* error_summary: every failed execution lands in exactly one of these */
	PROCSTATS_ERR_GENERIC,            /* incorrect input, timeouts */
	PROCSTATS_ERR_NUMERICAL,          /* NaN/Inf */
	PROCSTATS_ERR_TRANSIENT,          /* simulated memory has no ECC: always 0 */
	PROCSTATS_ERR_MODEL,              /* the program faulted: OOB, deadlock, invalid job */
	PROCSTATS_ERR_RUNTIME,            /* host-side failure: out of device memory, ... */
	PROCSTATS_ERR_HARDWARE,           /* device lost (firmware gone) */
	/* numerical errors by kind */
	PROCSTATS_NUM_NAN,
	PROCSTATS_NUM_INF,
	/* device memory in bytes by category (same order as nrt_neuronsim_mem_category_t) */
	PROCSTATS_MEM_TENSORS,
	PROCSTATS_MEM_CONSTANTS,
	PROCSTATS_MEM_CODE,
	PROCSTATS_MEM_SCRATCH,
	PROCSTATS_MEM_STAGING,
	PROCSTATS_MEM_SNAPSHOT,           /* ON_NRT_ERROR(_HYBRID) input copies */
	PROCSTATS_MEM_IN_USE,
	PROCSTATS_MEM_PEAK,
	/* host memory in bytes */
	PROCSTATS_HOST_TENSORS,
	PROCSTATS_HOST_SNAPSHOT,          /* ON_NRT_ERROR_HYBRID/_CPU input copies */
	PROCSTATS_LAT_HEAD,               /* executions recorded in lat[]: the newest slot's index */
	PROCSTATS_MODELS_LOADED,          /* models loaded now, listed in models[] or not */
	PROCSTATS_MODELS_UNLISTED,        /* of those, the ones models[] had no room for */
	PROCSTATS_HEARTBEAT_NS,           /* CLOCK_MONOTONIC of the last refresh */
	PROCSTATS_COUNT
};
#define PROCSTATS_MEM_FIRST PROCSTATS_MEM_TENSORS
#define PROCSTATS_MEM_CATEGORIES 6
#define PROCSTATS_ERR_FIRST PROCSTATS_ERR_GENERIC
#define PROCSTATS_ERR_KINDS 6

/* Per visible core, indexes into procstats_core_t.v[]: a copy of the
 * runtime's core counters (nrt_neuronsim_get_core_stats). */
enum {
	PROCSTATS_CORE_EXECUTIONS = 0,
	PROCSTATS_CORE_COMPLETED,
	PROCSTATS_CORE_COMPLETED_WITH_ERR,
	PROCSTATS_CORE_COMPLETED_WITH_NUM_ERR,
	PROCSTATS_CORE_TIMED_OUT,
	PROCSTATS_CORE_INCORRECT_INPUT,
	PROCSTATS_CORE_BUSY_NS,           /* wall time spent running jobs */
	PROCSTATS_CORE_FLOPS,             /* floating-point operations executed (docs/isa.md,
					   * "FLOPs"), PROCSTATS_FLOPS_UNKNOWN when the
					   * backend does not count them (kernel) */
	PROCSTATS_CORE_COUNT
};

#define PROCSTATS_FLOPS_UNKNOWN UINT64_MAX

/* How often the owning process refreshes memory and the heartbeat. */
#define PROCSTATS_REFRESH_MS 100

typedef struct procstats_core {
	uint32_t global;                  /* physical core id */
	uint32_t device;                  /* device index */
	uint32_t dev_core;                /* core inside that device */
	uint32_t pad;
	_Atomic uint64_t v[8];            /* PROCSTATS_CORE_* (seqlock) */
	/* device memory charged to this core (the core an allocation was made
	 * for), by category as v[PROCSTATS_MEM_FIRST...] (seqlock) */
	_Atomic uint64_t mem[8];
} procstats_core_t;

/* One loaded model (seqlock). Its instances sit on n_instances * neff_cores
 * consecutive visible cores from logical core first_core; every instance
 * holds the same device memory (mem_*: constants and scratch on the
 * instance's first core, code on each of its cores). running is outside the
 * seqlock: executions of the model in progress now (nrt_execute entered, not
 * yet returned), added and taken one at a time so a reader needs no retry. */
typedef struct procstats_model {
	_Atomic uint64_t id;              /* the model's load index + 1 (nrt_load order); 0: free slot */
	_Atomic uint64_t first_core;      /* logical */
	_Atomic uint64_t neff_cores;
	_Atomic uint64_t n_instances;
	_Atomic uint64_t mem_constants;   /* per instance, bytes */
	_Atomic uint64_t mem_code;
	_Atomic uint64_t mem_scratch;
	_Atomic uint64_t name[PROCSTATS_MODEL_NAME_MAX / 8]; /* NUL-padded bytes */
	_Atomic uint64_t uuid[2];         /* 16 random bytes drawn at nrt_load (a version 4
					   * UUID), in byte order */
	_Atomic uint64_t running;         /* executions in progress (not seqlocked) */
} procstats_model_t;

/* One execution's latency. index is the execution's 1-based number in the
 * process, stored last; 0 while the slot is being written. */
typedef struct procstats_lat {
	_Atomic uint64_t index;
	_Atomic uint64_t total_ns;        /* nrt_execute entry to completion */
	_Atomic uint64_t device_ns;       /* first job submitted to completion; UINT64_MAX if none ran */
} procstats_lat_t;

typedef struct procstats_file {
	/* identity (constant once live) */
	uint64_t magic;                   /* PROCSTATS_MAGIC */
	uint32_t version;                 /* PROCSTATS_VERSION */
	uint32_t size;                    /* sizeof(procstats_file_t) */
	_Atomic uint32_t state;           /* procstats_state_t */
	uint32_t pid;
	uint32_t uid;
	uint32_t n_cores;                 /* visible cores; cores[0..n_cores) are valid */
	uint32_t n_devices;
	uint32_t pad0;
	uint64_t start_time;              /* field 22 of /proc/PID/stat: tells a reused pid apart */
	uint64_t init_ns;                 /* CLOCK_MONOTONIC at nrt_init */
	uint64_t mem_total;               /* device memory of all devices, bytes */
	char backend[16];                 /* "embedded" / "kernel" */
	char comm[32];                    /* program name (/proc/PID/comm) */
	char tag[PROCSTATS_TAG_MAX];      /* NEURON_PROCESS_TAG, "" when unset */
	/* counters */
	_Atomic uint32_t writer_lock;     /* the owner's writers only; readers never touch it */
	uint32_t pad1;
	_Atomic uint64_t seq;             /* seqlock over v[] and cores[].v[] */
	_Atomic uint64_t v[PROCSTATS_COUNT];
	procstats_core_t cores[PROCSTATS_MAX_CORES];
	procstats_lat_t lat[PROCSTATS_LAT_RING]; /* execution i is in lat[(i - 1) % RING] */
	procstats_model_t models[PROCSTATS_MAX_MODELS]; /* in no order; id 0 = free */
} procstats_file_t;

/* ---- shared helpers (writer and readers) ---------------------------------- */

/* $NEURONSIM_STATS_DIR when set and non-empty, else PROCSTATS_DEFAULT_DIR. */
const char *procstats_dir(void);

/* DIR/neuronsim-stats.UID.PID into buf; -1 if it does not fit. */
int procstats_path(char *buf, size_t len, const char *dir, uid_t uid, pid_t pid);

/* Field 22 (starttime) of /proc/PID/stat. 0 on success, -1 if unreadable. */
int procstats_proc_start_time(pid_t pid, uint64_t *out_start_time);

/* ---- reader ---------------------------------------------------------------- */

/* The reader's outcomes are statuses (status.h), each with a one-line reason:
 *   NULL                          read
 *   NS_STATUS_NOT_FOUND           stale: the owner is gone (dead, pid reused,
 *                                 closed) or the file was removed
 *   NS_STATUS_UNAVAILABLE         skipped: still being created, or of a newer or
 *                                 older layout
 *   NS_STATUS_INVALID_ARGUMENT    not a stats file: wrong name, size, owner, magic
 *                                 or fields
 *   NS_STATUS_ABORTED             busy: the seqlock never settled (owner stopped
 *                                 mid-update?); reading again may succeed
 *   NS_STATUS_RESOURCE_EXHAUSTED  out of memory
 *   the code of the errno         open/stat/map/readdir failed (errno kept) */

/* One execution's latency as read. */
typedef struct procstats_lat_sample {
	uint64_t index;
	uint64_t total_ns;
	uint64_t device_ns;               /* UINT64_MAX: nothing ran on the device */
} procstats_lat_sample_t;

/* One listed model as read (procstats_model_t). */
typedef struct procstats_model_info {
	uint64_t id;                      /* load index + 1 */
	uint32_t first_core;              /* logical: an index into procstats_snap_t.cores */
	uint32_t neff_cores, n_instances;
	uint64_t mem_constants, mem_code, mem_scratch; /* per instance */
	uint64_t running;                 /* executions in progress when read */
	uint8_t uuid[16];
	char name[PROCSTATS_MODEL_NAME_MAX];
} procstats_model_info_t;

/* The model's uuid as the Neuron tools print it: 32 lower-case hex digits,
 * no dashes, into buf (at least PROCSTATS_UUID_STR bytes). */
#define PROCSTATS_UUID_STR 33
void procstats_uuid_str(const uint8_t uuid[16], char *buf);

/* A consistent copy of one process's file, plain (non-atomic) values. */
typedef struct procstats_snap {
	uint32_t pid;
	uint32_t uid;
	uint32_t n_cores;
	uint32_t n_devices;
	uint64_t start_time;
	uint64_t init_ns;
	uint64_t mem_total;
	uint64_t read_ns;                 /* CLOCK_MONOTONIC when the counters were copied */
	char backend[16];
	char comm[32];
	char tag[PROCSTATS_TAG_MAX];      /* NEURON_PROCESS_TAG, else the pid in decimal */
	uint64_t v[PROCSTATS_COUNT];
	struct {
		uint32_t global, device, dev_core;
		uint64_t v[PROCSTATS_CORE_COUNT];
		uint64_t mem[PROCSTATS_MEM_CATEGORIES]; /* as procstats_core_t.mem */
	} cores[PROCSTATS_MAX_CORES];
	uint32_t n_models;                /* listed models in models[], by ascending id */
	procstats_model_info_t models[PROCSTATS_MAX_MODELS];
	uint32_t n_lat;                   /* valid samples in lat[], ascending index */
	procstats_lat_sample_t lat[PROCSTATS_LAT_RING];
} procstats_snap_t;

/* Reads the stats file at path into *out (untouched unless it returns NULL).
 * Checks the owner: the file's uid must match its name and header, the pid
 * must be alive with the recorded start time. Anything else is one of the
 * statuses above. Not thread-safe: it guards the copy against the file
 * shrinking underneath (SIGBUS) with a process-wide handler. */
ns_status_t procstats_read_file(const char *path, procstats_snap_t *out);

/* The processes found by procstats_scan, sorted by pid. */
typedef struct procstats_list {
	procstats_snap_t *procs;          /* n entries; free with procstats_list_free */
	size_t n;
	size_t n_stale;                   /* files of dead processes seen (removed when asked) */
	size_t n_skipped;                 /* unreadable, invalid, busy or foreign files */
	char first_skip[256];             /* reason of the first skipped file, "" if none */
} procstats_list_t;

/* Flags of procstats_scan. */
#define PROCSTATS_SCAN_REMOVE_STALE 1u /* unlink stale files we own */

/* Reads every stats file in dir (a process's own file is skipped when
 * exclude_pid is its pid; pass 0 to keep all). *out is filled on success; on
 * failure (dir unreadable: the errno's code; out of memory) the status says why
 * and *out is empty. Free with procstats_list_free. */
ns_status_t procstats_scan(const char *dir, unsigned flags, pid_t exclude_pid,
			   procstats_list_t *out);
void procstats_list_free(procstats_list_t *list);

/* The latency samples of s with index > after (at most the ring's worth),
 * into total[] and device[] (device only for samples that ran; n_device may
 * be smaller than n_total). The arrays need PROCSTATS_LAT_RING entries. */
void procstats_latencies(const procstats_snap_t *s, uint64_t after, double *total_s, size_t *n_total,
			 double *device_s, size_t *n_device);

/* Sorts v[0..n) ascending and returns the value at quantile q in [0, 1]
 * (nearest rank); 0 when n is 0. */
double procstats_quantile(double *v, size_t n, double q);

/* The global ids of the cores of s as ranges, "0-3" or "0,2,5-6", into buf
 * (truncated to len), or none when it has no cores; returns buf. */
const char *procstats_core_list(const procstats_snap_t *s, const char *none, char *buf,
				size_t len);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_PROCSTATS_H */
