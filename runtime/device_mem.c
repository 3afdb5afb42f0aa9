/* Best-fit device memory allocator with coalescing and in-use/peak accounting. */
#include "device_mem.h"

#include <stdbool.h>
#include <stdlib.h>

/* Blocks tile the whole range in address order, so merging on free only looks
 * at the two neighbours. Handles are block ids checked against a live list,
 * so a stale or foreign handle is rejected instead of corrupting the list. */
struct nrt_dmem_block {
	uint64_t addr;
	uint64_t size;
	bool free;
	uint64_t id;
	nrt_dmem_block_t *prev, *next;
};

static nrt_dmem_block_t *block_new(uint64_t addr, uint64_t size)
{
	nrt_dmem_block_t *b = calloc(1, sizeof(*b));
	if (b) {
		b->addr = addr;
		b->size = size;
		b->free = true;
	}
	return b;
}

NRT_STATUS nrt_dmem_init(nrt_dmem_t *dm, uint64_t base, uint64_t size)
{
	if (size < NRT_DMEM_ALIGN)
		return NRT_INVALID;
	dm->base = base;
	dm->size = size & ~(uint64_t)(NRT_DMEM_ALIGN - 1);
	dm->in_use = dm->peak = dm->n_allocs = 0;
	dm->head = block_new(base, dm->size);
	if (!dm->head)
		return NRT_RESOURCE;
	pthread_mutex_init(&dm->lock, NULL);
	return NRT_SUCCESS;
}

void nrt_dmem_fini(nrt_dmem_t *dm)
{
	nrt_dmem_block_t *b = dm->head;
	while (b) {
		nrt_dmem_block_t *n = b->next;
		free(b);
		b = n;
	}
	dm->head = NULL;
	pthread_mutex_destroy(&dm->lock);
}

NRT_STATUS nrt_dmem_alloc(nrt_dmem_t *dm, uint64_t size, uint64_t *out_addr,
			  uint64_t *out_size, uint64_t *out_handle)
{
	if (size == 0 || size > UINT64_MAX - NRT_DMEM_ALIGN)
		return NRT_INVALID;
	uint64_t need = (size + NRT_DMEM_ALIGN - 1) & ~(uint64_t)(NRT_DMEM_ALIGN - 1);
	NRT_STATUS st = NRT_RESOURCE;
	pthread_mutex_lock(&dm->lock);
	nrt_dmem_block_t *best = NULL;
	for (nrt_dmem_block_t *b = dm->head; b; b = b->next) {
		if (b->free && b->size >= need && (!best || b->size < best->size)) {
			best = b;
			if (b->size == need)
				break;
		}
	}
	if (best) {
		if (best->size > need) {
			/* Split: the remainder stays free after the allocation. */
			nrt_dmem_block_t *rest = block_new(best->addr + need, best->size - need);
			if (!rest)
				goto out;
			rest->prev = best;
			rest->next = best->next;
			if (best->next)
				best->next->prev = rest;
			best->next = rest;
			best->size = need;
		}
		best->free = false;
		best->id = ++dm->n_allocs;
		dm->in_use += need;
		if (dm->in_use > dm->peak)
			dm->peak = dm->in_use;
		*out_addr = best->addr;
		*out_size = need;
		*out_handle = (uint64_t)(uintptr_t)best;
		st = NRT_SUCCESS;
	}
out:
	pthread_mutex_unlock(&dm->lock);
	return st;
}

NRT_STATUS nrt_dmem_free(nrt_dmem_t *dm, uint64_t handle)
{
	NRT_STATUS st = NRT_INVALID;
	pthread_mutex_lock(&dm->lock);
	nrt_dmem_block_t *b = dm->head;
	while (b && (uint64_t)(uintptr_t)b != handle)
		b = b->next;
	if (b && !b->free) {
		b->free = true;
		dm->in_use -= b->size;
		nrt_dmem_block_t *n = b->next;
		if (n && n->free) {
			b->size += n->size;
			b->next = n->next;
			if (n->next)
				n->next->prev = b;
			free(n);
		}
		nrt_dmem_block_t *p = b->prev;
		if (p && p->free) {
			p->size += b->size;
			p->next = b->next;
			if (b->next)
				b->next->prev = p;
			free(b);
		}
		st = NRT_SUCCESS;
	}
	pthread_mutex_unlock(&dm->lock);
	return st;
}

void nrt_dmem_stats(nrt_dmem_t *dm, uint64_t *out_in_use, uint64_t *out_peak,
		    uint64_t *out_free_blocks)
{
	pthread_mutex_lock(&dm->lock);
	uint64_t nfree = 0;
	for (nrt_dmem_block_t *b = dm->head; b; b = b->next)
		nfree += b->free;
	if (out_in_use)
		*out_in_use = dm->in_use;
	if (out_peak)
		*out_peak = dm->peak;
	if (out_free_blocks)
		*out_free_blocks = nfree;
	pthread_mutex_unlock(&dm->lock);
}
