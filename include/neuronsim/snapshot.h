/* HLO snapshot files (docs/snapshot.md): one self-describing file with metadata,
 * the HLO text, tensors and checksums; written atomically, read with validation.
 * Shared by libnrt (writer) and neuron-snapshot (reader). */
#ifndef NEURONSIM_SNAPSHOT_H
#define NEURONSIM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/isa.h"
#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SNAPSHOT_MAX_RANK 8
#define SNAPSHOT_NAME_MAX 256

/* File layout constants (docs/snapshot.md has the byte-by-byte description). */
#define SNAPSHOT_MAGIC "NSIMSNAP"        /* 8 bytes, no NUL */
#define SNAPSHOT_VERSION_MAJOR 1
#define SNAPSHOT_VERSION_MINOR 0
#define SNAPSHOT_HEADER_SIZE 128
#define SNAPSHOT_DATA_ALIGN 4096         /* start of the tensor data section */
#define SNAPSHOT_TENSOR_ALIGN 64         /* each tensor inside the data section */
#define SNAPSHOT_MAX_TENSORS (1u << 20)  /* a bigger table is refused as corrupt */
#define SNAPSHOT_MAX_META ((uint64_t)256 << 20) /* bytes of JSON metadata */

/* Failures are statuses (status.h) with a one-line message:
 *   NS_STATUS_INVALID_ARGUMENT    not a snapshot, truncated, a bad field; or a
 *                                 bad argument
 *   NS_STATUS_DATA_LOSS           a section's checksum does not match
 *   NS_STATUS_UNIMPLEMENTED       a major version this reader does not know
 *   NS_STATUS_RESOURCE_EXHAUSTED  out of memory, or ENOSPC/EDQUOT while writing
 *                                 (ns_status_errno tells them apart)
 *   the code of the errno         open/write/fsync/rename/read failed (errno
 *                                 kept: ns_status_errno) */

/* What a tensor of the file is. */
typedef enum snapshot_role {
	SNAPSHOT_ROLE_INPUT = 0,    /* an input as it was before the execution */
	SNAPSHOT_ROLE_OUTPUT = 1,   /* an output after the execution */
} snapshot_role_t;

/* "input" / "output" (the spelling of the file's tensor table), "?" otherwise. */
const char *snapshot_role_name(uint32_t role);

typedef struct snapshot_tensor {
	char name[SNAPSHOT_NAME_MAX];   /* the NEFF I/O tensor name */
	uint32_t role;                  /* snapshot_role_t */
	uint32_t dtype;                 /* isa_dtype_t */
	uint32_t rank;
	int32_t alias_input;            /* outputs: index of the input it updates in place, else -1 */
	uint64_t shape[SNAPSHOT_MAX_RANK];
	uint64_t size;                  /* bytes of data */
	const void *data;               /* writer: caller's bytes; reader: inside the loaded file */
	uint64_t checksum;              /* reader: XXH64 (seed 0) of data, verified; writer: ignored */
} snapshot_tensor_t;

/* Everything a snapshot records besides tensors. Strings are NUL-terminated;
 * the reader returns them owned by the snapshot_t. */
typedef struct snapshot_meta {
	const char *module_name;        /* HLO module / NEFF model name */
	const char *kind;               /* "inputs", "outputs", "inputs outputs" or "error" */
	uint64_t process;               /* RANK (0 when unset) */
	uint64_t executable;            /* model load index */
	uint64_t device;                /* addressable device (logical core) index */
	uint64_t execution;             /* the model's execution count */
	int64_t status;                 /* NRT_STATUS of the execution (0 before it ran) */
	const char *error_json;         /* error record as a JSON object text, or NULL */
	const char *runtime_version;    /* writer's version string */
	uint64_t wall_time_ns;          /* CLOCK_REALTIME when written */
} snapshot_meta_t;

/* Writes meta, the HLO text (hlo_size bytes, may be 0) and n tensors to path
 * atomically: a temporary file in the same directory created with mode 0600,
 * fsync, rename over path, fsync of the directory. On any failure no file is
 * left (neither path nor the temporary) and the status's message names path and
 * the reason. The temporary is "PATH.tmp-XXXXXX". Strings (tensor names, meta
 * strings) must be valid UTF-8 and error_json a JSON object text, else
 * NS_STATUS_INVALID_ARGUMENT; ENOSPC/EDQUOT give NS_STATUS_RESOURCE_EXHAUSTED.
 * errno is left at the failing call's value (0 for argument errors), and kept
 * in the status. Nothing is kept: the caller's buffers are only read during the
 * call. */
ns_status_t snapshot_write(const char *path, const snapshot_meta_t *meta,
			   const char *hlo_text, size_t hlo_size,
			   const snapshot_tensor_t *tensors, uint32_t n);

/* A loaded snapshot; tensors[i].data points into the loaded file. */
typedef struct snapshot {
	snapshot_meta_t meta;
	const char *hlo_text;           /* NUL-terminated copy */
	size_t hlo_size;
	snapshot_tensor_t *tensors;
	uint32_t n_tensors;
	uint32_t version_major, version_minor;
	void *priv;                     /* reader's storage */
	uint64_t file_size;             /* bytes of the file */
	uint64_t meta_checksum;         /* XXH64 of the JSON metadata section (verified) */
	uint64_t hlo_checksum;          /* XXH64 of the HLO text section (verified) */
} snapshot_t;

/* Reads and validates (structure, bounds, checksums) path. Caller frees with
 * snapshot_free(). On failure the status says what is wrong and where
 * ("snapshot PATH: ...", "snapshot: cannot read 'PATH': ..."). */
ns_status_t snapshot_read(const char *path, snapshot_t **out_snapshot);
/* The same on a file image in memory [data, data + size); the bytes are copied,
 * data may be freed after the call. On failure *out_snapshot is NULL. */
ns_status_t snapshot_parse(const void *data, size_t size, snapshot_t **out_snapshot);
/* Frees everything snapshot_read/snapshot_parse returned. NULL is a no-op. */
void snapshot_free(snapshot_t *snapshot);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_SNAPSHOT_H */
