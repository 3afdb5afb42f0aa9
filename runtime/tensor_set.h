/* Tensor sets: name -> tensor handle maps passed to nrt_execute. */
#ifndef NRT_TENSOR_SET_H
#define NRT_TENSOR_SET_H

#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#define NRT_TENSOR_SET_MAGIC 0x4e52545453455421ull /* "NRTTSET!" */

typedef struct nrt_tensor_set_entry {
	char name[NRT_TENSOR_NAME_MAX];
	nrt_tensor_t *tensor;
} nrt_tensor_set_entry_t;

typedef struct nrt_tensor_set_obj {
	uint64_t magic;
	uint32_t n, cap;
	nrt_tensor_set_entry_t *entries;
} nrt_tensor_set_obj_t;

/* Validates a public set pointer (NULL, a tagged tensor/model handle or a
 * wrong magic are rejected); NULL if invalid. */
const nrt_tensor_set_obj_t *nrt_tensor_set_check(const nrt_tensor_set_t *set);
/* The tensor named name, or NULL. */
nrt_tensor_t *nrt_tensor_set_find(const nrt_tensor_set_obj_t *set, const char *name);

#endif /* NRT_TENSOR_SET_H */
