/* The Neuron Runtime public C API as implemented by neuronsim's libnrt (docs/runtime.md). */
#ifndef NRT_NRT_H
#define NRT_NRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the API these headers describe. */
#define NRT_MAJOR_VERSION 2
#define NRT_MINOR_VERSION 0

/* Opaque handles. They are not pointers to memory the caller may read: libnrt
 * hands out tagged handles so a freed or foreign handle is detected and
 * rejected with NRT_INVALID_HANDLE instead of being dereferenced. */
typedef struct nrt_model nrt_model_t;
typedef struct nrt_tensor nrt_tensor_t;
typedef struct nrt_cc_context nrt_cc_context_t;

/* Values are ABI: never renumber. */
typedef enum {
	NRT_TENSOR_PLACEMENT_DEVICE,  /* device memory of the NeuronCore's device */
	NRT_TENSOR_PLACEMENT_HOST,    /* host memory, on the device's NUMA node */
	NRT_TENSOR_PLACEMENT_VIRTUAL, /* host virtual memory (treated like HOST) */
} nrt_tensor_placement_t;

typedef enum {
	NRT_FRAMEWORK_TYPE_INVALID = 0,
	NRT_FRAMEWORK_TYPE_NO_FW = 1,
	NRT_FRAMEWORK_TYPE_TENSORFLOW,
	NRT_FRAMEWORK_TYPE_PYTORCH,
	NRT_FRAMEWORK_TYPE_MXNET,
	NRT_FRAMEWORK_TYPE_PRECHECK,
} nrt_framework_type_t;

/* Element types as the Neuron Runtime numbers them (not contiguous). */
typedef enum nrt_dtype {
	NRT_DTYPE_UNKNOWN = 0x0,
	NRT_DTYPE_INVALID = 0x0,
	NRT_DTYPE_FP8_E3 = 0xD,
	NRT_DTYPE_FP8_E4 = 0xE,
	NRT_DTYPE_FP8_E5 = 0xF,
	NRT_DTYPE_FLOAT16 = 0x7,
	NRT_DTYPE_BFLOAT16 = 0x6,
	NRT_DTYPE_FLOAT32 = 0xA,
	NRT_DTYPE_FP32R = 0xB,
	NRT_DTYPE_UINT8 = 0x3,
	NRT_DTYPE_UINT16 = 0x5,
	NRT_DTYPE_UINT32 = 0x9,
	NRT_DTYPE_UINT64 = 0x1,
	NRT_DTYPE_INT8 = 0x2,
	NRT_DTYPE_INT16 = 0x4,
	NRT_DTYPE_INT32 = 0x8,
	NRT_DTYPE_INT64 = 0xC,
} nrt_dtype_t;

/* ---- instance ---------------------------------------------------------- */

/* Instance families and sizes as the Neuron Runtime numbers them (ABI). */
enum {
	NRT_INSTANCE_UNKNOWN = 0,
	NRT_INSTANCE_INF1 = 1,
	NRT_INSTANCE_TRN1 = 2,
	NRT_INSTANCE_TRN1N = 3,
	NRT_INSTANCE_INF2 = 4,
	NRT_INSTANCE_TRN2 = 5,
	NRT_INSTANCE_TRN2N = 6,
	NRT_INSTANCE_INF2E = 7,
	NRT_INSTANCE_TRN2P = 8,
	NRT_INSTANCE_TRN2U = 9,
	NRT_INSTANCE_TRN2E = 10,
	NRT_INSTANCE_TRN2EU = 11,
	NRT_INSTANCE_TRN2AC = 12,
	NRT_INSTANCE_TRN2UAC = 13,
	NRT_INSTANCE_TRN3 = 14,
	NRT_INSTANCE_TRN3PDS98 = 15,
};

enum {
	NRT_INSTANCE_SIZE_1XL,
	NRT_INSTANCE_SIZE_2XL,
	NRT_INSTANCE_SIZE_4XL,
	NRT_INSTANCE_SIZE_6XL,
	NRT_INSTANCE_SIZE_8XL,
	NRT_INSTANCE_SIZE_24XL,
	NRT_INSTANCE_SIZE_32XL,
	NRT_INSTANCE_SIZE_48XL,
	NRT_INSTANCE_SIZE_3XL,
	NRT_INSTANCE_SIZE_UNKNOWN,
	NRT_INSTANCE_SIZE_NUM = NRT_INSTANCE_SIZE_UNKNOWN,
};

typedef struct nrt_instance_info {
	uint32_t family;          /* NRT_INSTANCE_* */
	uint32_t size;            /* NRT_INSTANCE_SIZE_* */
	char arch_name[16];       /* NUL-terminated */
	char device_revision[8];  /* NUL-terminated */
} nrt_instance_info_t;

/* Fills the first instance_info_len bytes of *info (smaller lengths from
 * older callers are honoured). neuronsim simulates NeuronCore-v2, so the
 * family is NRT_INSTANCE_TRN1 and the size follows the simulated device count
 * (docs/runtime.md). Usable before nrt_init(). */
NRT_STATUS nrt_get_instance_info(nrt_instance_info_t *info, size_t instance_info_len);

/* Reduction and collective kinds (nrt_async.h's nrta_cc_prepare). */
typedef enum nrt_op_type {
	NRT_OP_ADD = 0x0,
	NRT_OP_FMA = 0x1,
	NRT_OP_MAX = 0x2,
	NRT_OP_MIN = 0x3,
	NRT_OP_INVALID = 0xF,
} nrt_op_type_t;

typedef enum nrt_cc_op_type {
	NRT_CC_ALLGATHER,
	NRT_CC_ALLREDUCE,
	NRT_CC_REDUCESCATTER,
} nrt_cc_op_type_t;

/* ---- runtime lifetime ------------------------------------------------ */

/* Creates the runtime: reads the environment (docs/env.md), opens the devices
 * and reserves the visible NeuronCores. Calling it twice without nrt_close()
 * returns NRT_INVALID. Versions are informational and may be NULL. */
NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version);

/* Unloads every model, frees every tensor still allocated and closes the
 * devices. Handles from before become invalid; later calls return NRT_CLOSED
 * until the next nrt_init(). Must not race with other calls. */
void nrt_close(void);

/* ---- models ---------------------------------------------------------- */

/* Loads the NEFF in [neff_bytes, neff_bytes + size) (copied; the caller may free
 * it afterwards) onto nc_count NeuronCores starting at logical core start_nc.
 * start_nc = -1 picks the first core with the fewest models; nc_count = -1 uses
 * as many cores as the NEFF needs; a multiple of that loads replicas that
 * execute concurrently. *model is set only on success and is released with
 * nrt_unload(). */
NRT_STATUS nrt_load(const void *neff_bytes, size_t size, int32_t start_nc, int32_t nc_count, nrt_model_t **model);

/* Same as nrt_load(); collectives are not simulated, so the device id and count
 * must describe a single device (g_device_count <= 1). */
NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size, int32_t start_nc, int32_t nc_count,
				uint32_t g_device_id, uint32_t g_device_count, nrt_model_t **model);

/* Waits for executions of model in other threads, then frees everything the
 * load allocated. The handle is invalid afterwards. */
NRT_STATUS nrt_unload(nrt_model_t *model);

/* Number of NeuronCores model occupies (all replicas). */
NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model, uint32_t *nc_count);
NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model, uint32_t *vnc_count);

/* NeuronCores of the machine (not limited by NEURON_RT_VISIBLE_CORES or
 * NEURON_RT_NUM_CORES), and the ones this process may use. Both work before
 * nrt_init(). */
NRT_STATUS nrt_get_total_nc_count(uint32_t *nc_count);
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count);
NRT_STATUS nrt_get_visible_nc_count(uint32_t *nc_count);
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count);

/* ---- tensor sets ----------------------------------------------------- */

/* A name -> tensor map used to pass inputs and outputs to nrt_execute(). Sets
 * do not own their tensors and may be created before nrt_init(). */
typedef void nrt_tensor_set_t;

/* *result is owned by the caller and released with nrt_destroy_tensor_set(). */
NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **result);

/* Frees the set (not its tensors) and sets *tensor_set to NULL. */
void nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set);

/* Adds tensor under tensor_name (copied), replacing an earlier entry of that
 * name. The tensor must stay allocated while the set is used. */
NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t *tensor);

/* Looks tensor_name up; NRT_INVALID when the set has no such entry. */
NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t **tensor);

/* ---- execution ------------------------------------------------------- */

/* Runs model once in the calling thread. Tensors are matched to the model's
 * I/O tensors by name and must have exactly the model's size. An output that
 * aliases an input (in-place update) and is absent from output_set updates the
 * input tensor. Many threads may execute at once; executions on one core are
 * serialised. */
NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set);

/* nrt_execute() repeat_count times (>= 1), stopping at the first failure. */
NRT_STATUS nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set,
			      int repeat_count);

/* ---- tensors --------------------------------------------------------- */

/* Allocates size bytes (zero-filled) on logical core logical_nc_id (device
 * placement) or in host memory (host/virtual placement, where logical_nc_id
 * may be -1 and otherwise selects the NUMA node of that core's device). name
 * is optional and copied. Released with nrt_tensor_free(). */
NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int logical_nc_id, size_t size,
			       const char *name, nrt_tensor_t **tensor);

/* Frees *tensor (waiting for executions that use it) and sets *tensor to NULL.
 * NULL and invalid handles are ignored (and logged). */
void nrt_tensor_free(nrt_tensor_t **tensor);

/* Bounds-checked copies between a tensor and caller memory. */
NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size);
NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset, size_t size);

/* One copy between a tensor and caller memory: size bytes at offset of the
 * tensor, to or from buffer. (The SDK declares it in
 * ndl/neuron_driver_shared_tensor_batch_op.h, which nrt.h includes.) */
typedef uint64_t nrt_tensor_batch_offset_t;
typedef uint64_t nrt_tensor_batch_size_t;
typedef struct nrt_tensor_batch_op {
	nrt_tensor_batch_offset_t offset;
	nrt_tensor_batch_size_t size;
	void *buffer;
} nrt_tensor_batch_op_t;

/* num_ops copies on one tensor. */
typedef struct nrt_tensor_batch {
	const nrt_tensor_t *tensor;
	const nrt_tensor_batch_op_t *ops;
	uint32_t num_ops;
} nrt_tensor_batch_t;

/* Runs every copy of every batch (reads from the tensors into the buffers,
 * or writes the buffers into the tensors), in array order. Every batch and
 * operation is checked (handle, NULL buffer, range) before any byte moves: a
 * bad one fails the call with NRT_INVALID or NRT_INVALID_HANDLE and nothing
 * is copied. unsafe is accepted and has no effect: neuronsim never blocks
 * tensor I/O on executions (docs/runtime.md). */
NRT_STATUS nrt_tensor_read_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe);
NRT_STATUS nrt_tensor_write_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe);

/* Copies between two tensors. Two device tensors must be on the same logical
 * core (NRT_INVALID otherwise), as in the Neuron Runtime. */
NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst, size_t dst_offset,
			   size_t size);

/* Size in bytes; 0 for an invalid handle. */
size_t nrt_tensor_get_size(const nrt_tensor_t *tensor);

/* Sets size bytes at offset to (unsigned char)value. */
NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size);

/* A tensor without storage; give it some with nrt_tensor_attach_buffer(). */
NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor);

/* Makes the caller's buffer (host memory, not owned, must outlive the tensor)
 * the tensor's storage, releasing storage it owned before. */
NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size);

/* A tensor viewing [offset, offset + size) of tensor_source's storage (no
 * copy). The storage lives until the source and all its slices are freed. */
NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset, size_t size,
				     const char *name, nrt_tensor_t **tensor_slice);

/* Host address of the tensor's bytes (for device tensors: the host mapping of
 * device memory), or NULL for an invalid handle or a tensor without storage. */
void *nrt_tensor_get_va(const nrt_tensor_t *tensor);

/* ---- memory --------------------------------------------------------- */

typedef struct nrt_vnc_memory_stats {
	size_t bytes_used;        /* device memory allocated now */
	size_t bytes_limit;       /* device memory that can be allocated */
	/* Fields are only ever appended. */
} nrt_vnc_memory_stats_t;

/* Device memory of visible core vnc: bytes_used is what is allocated for
 * that core (its tensors, the code, constants and scratch of the models on it,
 * staging and snapshot copies), bytes_limit its device's memory, which the
 * device's cores share (docs/runtime.md). stats_size_in is sizeof the
 * caller's struct (older, shorter ones are honoured); *stats_size_out is set
 * to the bytes written. */
NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats, size_t stats_size_in,
				    size_t *stats_size_out);

/* ---- collectives (a single worker: neuronsim simulates one process) ---- */

typedef struct nrt_cc_comm {
	uint32_t *replica_group;  /* rank_n participants */
	uint32_t rank;            /* this worker's rank in replica_group */
	uint32_t rank_n;
	uint32_t ctx_device_id;
	uint32_t ctx_device_count;
	uint32_t vnc;
} nrt_cc_comm_t;

typedef struct nrt_tensor_list {
	nrt_tensor_t **tensors;
	size_t num_tensors;
} nrt_tensor_list_t;

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_H */
