/* Model I/O tensor introspection (the Neuron Runtime's nrt_experimental.h subset). */
#ifndef NRT_NRT_EXPERIMENTAL_H
#define NRT_NRT_EXPERIMENTAL_H

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

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_EXPERIMENTAL_H */
