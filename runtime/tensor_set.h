/* Tensor sets: name -> tensor handle maps passed to nrt_execute. */
#ifndef NRT_TENSOR_SET_H
#define NRT_TENSOR_SET_H

#include <pthread.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

typedef struct nrt_tensor_set_entry {
	char name[NRT_TENSOR_NAME_MAX];
	nrt_tensor_t *tensor;
} nrt_tensor_set_entry_t;

typedef struct nrt_tensor_set_obj {
	pthread_mutex_t lock; /* entries, n, cap */
	uint32_t n, cap;
	nrt_tensor_set_entry_t *entries;
} nrt_tensor_set_obj_t;

/* Public sets are generation-checked handles (handle.c) in a table of their own
 * that lives as long as the process: sets are usable before nrt_init and after
 * nrt_close. Acquire takes a reference (NULL for NULL, a destroyed set, a tensor
 * or model handle, garbage); nrt_destroy_tensor_set waits until every reference
 * is released. */
const nrt_tensor_set_obj_t *nrt_tensor_set_acquire(const nrt_tensor_set_t *set);
void nrt_tensor_set_release(const nrt_tensor_set_t *set);
/* The tensor named name, or NULL (takes the set's lock). */
nrt_tensor_t *nrt_tensor_set_find(const nrt_tensor_set_obj_t *set, const char *name);

#endif /* NRT_TENSOR_SET_H */
