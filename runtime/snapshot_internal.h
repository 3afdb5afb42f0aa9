/* HLO snapshots inside libnrt: configuration, per-runtime and per-model state, and the file writer shared by snapshot*.c. */
#ifndef NRT_SNAPSHOT_INTERNAL_H
#define NRT_SNAPSHOT_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "observe.h"

/* NEURON_DUMP_HLO_SNAPSHOT's ON_NRT_ERROR family: where the copy of each
 * execution's inputs is kept until the execution is over. */
typedef enum nrt_snap_err_mode {
	NRT_SNAP_ERR_OFF = 0,
	NRT_SNAP_ERR_DEVICE = 1,  /* ON_NRT_ERROR: device memory, sum of the inputs */
	NRT_SNAP_ERR_HYBRID = 2,  /* ON_NRT_ERROR_HYBRID: device bounce buffer (largest input) + host copy */
	NRT_SNAP_ERR_CPU = 3,     /* ON_NRT_ERROR_CPU: host memory only */
} nrt_snap_err_mode_t;

/* Directory used when XLA_FLAGS has no --xla_dump_to (relative to the working directory). */
#define NRT_SNAPSHOT_DEFAULT_DIR "neuronsim-snapshots"

/* Everything read from the environment at nrt_init (docs/env.md, docs/snapshot.md). */
typedef struct nrt_snapshot_config {
	bool on_demand;              /* --xla_dump_hlo_snapshots or NEURON_DUMP_HLO_SNAPSHOT=1 */
	nrt_snap_err_mode_t err_mode;
	bool nc0_only;               /* NEURON_NC0_ONLY_SNAPSHOT */
	uint64_t rank;               /* RANK (0 when unset): "process" of the file names */
	bool all_ranks;              /* NEURONSIM_SNAPSHOT_RANK=all */
	uint64_t dump_rank;          /* NEURONSIM_SNAPSHOT_RANK: the rank that dumps on demand */
	char dir[PATH_MAX];          /* --xla_dump_to, else NRT_SNAPSHOT_DEFAULT_DIR */
} nrt_snapshot_config_t;

/* Reads NEURON_DUMP_HLO_SNAPSHOT, XLA_FLAGS, NEURON_NC0_ONLY_SNAPSHOT, RANK and
 * NEURONSIM_SNAPSHOT_RANK into *out. A bad value is an NRT_INVALID status
 * naming the variable. */
ns_status_t nrt_snapshot_config_load(nrt_snapshot_config_t *out);
/* "ON_NRT_ERROR", "ON_NRT_ERROR_HYBRID", "ON_NRT_ERROR_CPU" or "off". */
const char *nrt_snapshot_err_mode_name(nrt_snap_err_mode_t mode);

/* ctx->snapshot */
struct nrt_snapshot_state {
	nrt_snapshot_config_t cfg;
	pthread_mutex_t dir_lock;    /* creation of cfg.dir, once */
	bool dir_ready;
	atomic_bool cb_warned;       /* a bad callback answer was reported once */
	atomic_bool write_error_said; /* a lost snapshot was reported at ERROR once */
};

/* The per-instance copy of one execution's inputs (ON_NRT_ERROR modes) and
 * what the on-demand callback asked for; used under the instance's lock. */
typedef struct nrt_snap_instance {
	bool err_active;             /* ON_NRT_ERROR applies (NEURON_NC0_ONLY_SNAPSHOT filter) */
	bool on_demand;              /* on-demand dumping applies (rank and NC0 filters) */
	nrt_backend_mem_t dev;       /* DEVICE: all inputs; HYBRID: bounce buffer of the largest */
	uint8_t *host;               /* HYBRID, CPU: all inputs */
	bool copied;                 /* the copy holds the inputs of execution exec_index */
	bool want_outputs;           /* the callback asked for outputs of execution exec_index */
	uint64_t exec_index;
} nrt_snap_instance_t;

/* m->snapshot; NULL when no snapshot feature is on. */
struct nrt_model_snapshot {
	uint32_t n_instances;
	nrt_snap_instance_t *inst;   /* one per model instance */
	uint64_t *in_off;            /* per NEFF tensor: offset of an input in the copy */
	uint64_t in_total;           /* bytes of the copy (inputs, each 64-aligned) */
	uint64_t in_max;             /* largest input */
	atomic_bool stopped;         /* an execution failed under ON_NRT_ERROR: refuse the rest */
	pthread_mutex_t stop_lock;   /* the fields below */
	uint64_t stop_exec;
	NRT_STATUS stop_status;
	char stop_file[PATH_MAX + 1024]; /* "" when the snapshot could not be written */
};

/* What a file holds (also its kind in the file name and metadata). */
typedef enum nrt_snap_file_kind {
	NRT_SNAP_FILE_INPUTS = 0,    /* inputs before the execution */
	NRT_SNAP_FILE_OUTPUTS = 1,   /* outputs after it */
	NRT_SNAP_FILE_ERROR = 2,     /* inputs before, outputs after, and the error record */
} nrt_snap_file_kind_t;

/* Writes one snapshot file of execution rec of instance inst_index: the inputs
 * from inputs[i] (host bytes of NEFF input tensor i as it was before the
 * execution) and/or the outputs from rec->io, with the error record for
 * NRT_SNAP_FILE_ERROR. Creates the directory on first use. A failure (disk
 * full, unwritable directory) changes nothing else; it is logged, naming the
 * file, unless out_path is given. Returns true and the path in out_path (may
 * be NULL) when the file was written, false and the reason in out_path when it
 * was not. */
bool nrt_snapshot_dump(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec, uint32_t inst_index,
		       nrt_snap_file_kind_t kind, uint8_t *const *inputs, char *out_path,
		       size_t path_len);

#endif /* NRT_SNAPSHOT_INTERNAL_H */
