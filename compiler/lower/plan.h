/* Memory planner of the ncc back end: a best-fit allocator over the scratch region with reference-counted blocks, so buffers are reused once their last user is lowered. */
#ifndef NCC_PLAN_H
#define NCC_PLAN_H

#include <stdint.h>

#include "hlo/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of every scratch block: enough for any dtype and for cache lines. */
#define NCC_PLAN_ALIGN 64u

typedef struct ncc_plan_block {
	uint64_t offset;
	uint64_t size;
	int32_t refs; /* values (instruction leaves, temporaries) that point into it */
	bool live;
} ncc_plan_block_t;

/* The planner. Zero-initialise, then use; ncc_plan_free_all() releases its arrays. */
typedef struct ncc_plan {
	ncc_plan_block_t *blocks; /* every block ever allocated (index = block id) */
	int32_t nblocks, cap_blocks;
	/* free list of [offset, offset+size) ranges, sorted by offset, coalesced */
	uint64_t *free_off, *free_size;
	int32_t nfree, cap_free;
	uint64_t top;       /* end of the highest block ever placed: the scratch size */
	uint64_t live_bytes;
	uint64_t peak_live; /* statistics for the dump / docs */
} ncc_plan_t;

/* Allocates size bytes (rounded up to NCC_PLAN_ALIGN; 0 gives one alignment unit)
 * with one reference; out_block is the block id. */
ncc_status_t ncc_plan_alloc(ncc_plan_t *p, uint64_t size, int32_t *out_block);
/* Adds a reference (a view of the block's memory taken by another value). */
void ncc_plan_ref(ncc_plan_t *p, int32_t block);
/* Drops a reference; the memory returns to the free list at zero. */
void ncc_plan_unref(ncc_plan_t *p, int32_t block);
/* Writes <dir>/memory-plan.txt, one "key value" line each: scratch_bytes (the
 * high-water mark, the NEFF's scratch size) and scratch_peak_live_bytes (the most
 * bytes of blocks live at once in program order: no plan of this schedule needs
 * less), so the planner's fragmentation and a host-memory bound can be checked.
 * NCC_ERR_IO naming the file when it cannot be written. */
ncc_status_t ncc_plan_dump(const ncc_plan_t *p, const char *dir, ncc_error_t *err);
/* Frees the planner's own arrays. */
void ncc_plan_free_all(ncc_plan_t *p);

#ifdef __cplusplus
}
#endif

#endif /* NCC_PLAN_H */
