/* A best-fit allocator over a range of device addresses, used by backends that manage device memory themselves. */
#ifndef NRT_DEVICE_MEM_H
#define NRT_DEVICE_MEM_H

#include <pthread.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#define NRT_DMEM_ALIGN 64u

typedef struct nrt_dmem_block nrt_dmem_block_t;

/* Manages [base, base + size); thread-safe (one mutex: allocation is not on the
 * execute path except for host-tensor staging). */
typedef struct nrt_dmem {
	pthread_mutex_t lock;
	uint64_t base;
	uint64_t size;
	uint64_t in_use;
	uint64_t peak;
	uint64_t n_allocs;
	nrt_dmem_block_t *head;   /* every block, address order */
} nrt_dmem_t;

NRT_STATUS nrt_dmem_init(nrt_dmem_t *dm, uint64_t base, uint64_t size);
/* Frees every block, allocated or not. */
void nrt_dmem_fini(nrt_dmem_t *dm);
/* Best fit of size rounded up to NRT_DMEM_ALIGN. *out_handle identifies the
 * block for nrt_dmem_free. NRT_RESOURCE when no free block fits, NRT_INVALID
 * for size 0 or overflow. */
NRT_STATUS nrt_dmem_alloc(nrt_dmem_t *dm, uint64_t size, uint64_t *out_addr,
			  uint64_t *out_size, uint64_t *out_handle);
/* Returns the block and merges it with free neighbours. NRT_INVALID for a
 * handle that is not an allocated block of dm (double free included). */
NRT_STATUS nrt_dmem_free(nrt_dmem_t *dm, uint64_t handle);
void nrt_dmem_stats(nrt_dmem_t *dm, uint64_t *out_in_use, uint64_t *out_peak,
		    uint64_t *out_free_blocks);

#endif /* NRT_DEVICE_MEM_H */
