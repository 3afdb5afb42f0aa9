/* Model I/O tensor introspection (the Neuron Runtime's nrt_experimental.h subset). */
#ifndef NRT_NRT_EXPERIMENTAL_H
#define NRT_NRT_EXPERIMENTAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a model tensor is read (input) or written (output) by the NEFF. */
typedef enum nrt_tensor_usage {
	NRT_TENSOR_USAGE_INPUT = 0,
	NRT_TENSOR_USAGE_OUTPUT,
} nrt_tensor_usage_t;

#define NRT_TENSOR_NAME_MAX 256

typedef struct nrt_tensor_info {
	char name[NRT_TENSOR_NAME_MAX]; /* NUL-terminated */
	nrt_tensor_usage_t usage;
	size_t size;                    /* bytes */
	nrt_dtype_t dtype;
	uint32_t *shape;                /* ndim entries, owned by the array */
	uint32_t ndim;
} nrt_tensor_info_t;

typedef struct nrt_tensor_info_array {
	uint64_t tensor_count;
	nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

/* Describes every I/O tensor of model, in NEFF order (inputs and outputs).
 * The caller owns *tensor_info and releases it with nrt_free_model_tensor_info();
 * it stays valid after nrt_unload(). */
NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info);

/* Number of instances of model (replicas on different cores) that can execute
 * concurrently. */
NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count);

/* Frees an array returned by nrt_get_model_tensor_info(); NULL is accepted. */
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info);

/* Called once per completed asynchronous execution (nrta_execute_schedule,
 * nrt_async.h) on the worker thread of the core that ran it, after the
 * request's status was stored and before it is reported complete: params as
 * registered, model_id the model's load index (nrt_get_model_info's model),
 * vnc the model's first core, job_id the request's sequence id, status its
 * result. The callback must not call nrt_close(). */
typedef void (*NRT_ASYNC_EXEC_STATUS_CALLBACK)(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
					       NRT_STATUS status);

/* Registers callback (NULL unregisters), replacing the previous one; params
 * may be NULL. Takes effect for requests that complete afterwards. */
NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params);

/* Blocks until every execution scheduled on core vnc (nrta_execute_schedule)
 * before the call has completed. NRT_INVALID for a core that is not visible. */
NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc);

/* Starts tracing the runtime on every visible NeuronCore: runtime calls,
 * tensor transfers, user blocks and steps (the system events of
 * docs/profiler.md), and with trace_mem every device memory allocation and
 * free (instants named device_mem_alloc/device_mem_free: category, bytes,
 * core). After nrt_init(); NRT_INVALID while a trace runs. */
NRT_STATUS nrt_trace_start(bool trace_mem);

/* Writes the events since nrt_trace_start() to filename, a Chrome trace event
 * file (gzip when the name ends in .gz), and stops tracing. NRT_INVALID when
 * no trace runs or filename is NULL, empty or in a directory that cannot be
 * written (the trace goes on then); NRT_FAILURE when the write fails (the
 * trace is stopped). A trace not stopped by nrt_close() is discarded. */
NRT_STATUS nrt_trace_stop(const char *filename);

typedef struct nrt_model_info {
	uint32_t vnc;             /* first (logical) core the model is loaded on */
	/* Fields are only ever appended. */
} nrt_model_info_t;

/* Describes model: fills the first info_size_in bytes of *info (older,
 * shorter structs are honoured) and sets *info_size_out to the bytes written. */
NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in,
			      size_t *info_size_out);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_EXPERIMENTAL_H */
