/* nrt_tensor_read_batch / nrt_tensor_write_batch: many tensor copies in one call, all checked before any runs. */
#include <stdlib.h>

#include "internal.h"

/* Checks every batch and operation, holding a reference to each batch's
 * tensor (held[i] says whether batch i's was taken) so that none can be freed
 * between the check and the copies. */
static NRT_STATUS check_all(nrt_ctx_t *ctx, const char *func, const nrt_tensor_batch_t *batches,
			    uint64_t num_batches, bool *held)
{
	for (uint64_t i = 0; i < num_batches; i++) {
		const nrt_tensor_batch_t *b = &batches[i];
		if (!b->tensor) {
			NRT_LOGE("%s: batch %llu: tensor is NULL", func, (unsigned long long)i);
			return NRT_INVALID;
		}
		void *obj;
		NRT_STATUS st = nrt_handle_acquire(&ctx->tensors, nrt_handle_of(b->tensor), &obj);
		if (st) {
			NRT_LOGE("%s: batch %llu: %p is not a live tensor (freed, or not a tensor handle)",
				 func, (unsigned long long)i, (const void *)b->tensor);
			return st;
		}
		held[i] = true;
		const nrt_tensor_obj_t *t = obj;
		if (b->num_ops && !b->ops) {
			NRT_LOGE("%s: batch %llu (tensor '%s'): ops is NULL for %u operations", func,
				 (unsigned long long)i, t->name, b->num_ops);
			return NRT_INVALID;
		}
		for (uint32_t j = 0; j < b->num_ops; j++) {
			const nrt_tensor_batch_op_t *op = &b->ops[j];
			if (!op->size)
				continue;
			if (!t->storage) {
				NRT_LOGE("%s: batch %llu: tensor '%s' has no storage (allocate_empty "
					 "without attach_buffer)", func, (unsigned long long)i, t->name);
				return NRT_INVALID;
			}
			if (!op->buffer) {
				NRT_LOGE("%s: batch %llu op %u (tensor '%s'): buffer is NULL", func,
					 (unsigned long long)i, j, t->name);
				return NRT_INVALID;
			}
			if (op->offset > t->size || op->size > t->size - op->offset) {
				NRT_LOGE("%s: batch %llu op %u: tensor '%s': range [%llu, +%llu) is outside "
					 "its %llu bytes", func, (unsigned long long)i, j, t->name,
					 (unsigned long long)op->offset, (unsigned long long)op->size,
					 (unsigned long long)t->size);
				return NRT_INVALID;
			}
		}
	}
	return NRT_SUCCESS;
}

static NRT_STATUS batch(const char *func, const nrt_tensor_batch_t *batches, uint64_t num_batches, bool write)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(func, &st);
	if (!ctx)
		return st;
	if (!num_batches)
		return NRT_SUCCESS;
	if (!batches) {
		NRT_LOGE("%s: batches is NULL for %llu batches", func, (unsigned long long)num_batches);
		return NRT_INVALID;
	}
	if (num_batches > SIZE_MAX / sizeof(bool))
		return NRT_INVALID;
	bool *held = calloc(num_batches, sizeof(*held));
	if (!held) {
		NRT_LOGE("%s: out of host memory for %llu batches", func, (unsigned long long)num_batches);
		return NRT_RESOURCE;
	}
	st = check_all(ctx, func, batches, num_batches, held);
	/* The copies go through the single-copy calls, which account them
	 * (metrics, profiler) as the SDK's batch counts its operations. */
	for (uint64_t i = 0; !st && i < num_batches; i++) {
		const nrt_tensor_batch_t *b = &batches[i];
		for (uint32_t j = 0; !st && j < b->num_ops; j++) {
			const nrt_tensor_batch_op_t *op = &b->ops[j];
			if (!op->size)
				continue;
			st = write ? nrt_tensor_write((nrt_tensor_t *)b->tensor, op->buffer, op->offset, op->size)
				   : nrt_tensor_read(b->tensor, op->buffer, op->offset, op->size);
		}
	}
	for (uint64_t i = 0; i < num_batches; i++)
		if (held[i])
			nrt_handle_release(&ctx->tensors, nrt_handle_of(batches[i].tensor));
	free(held);
	return st;
}

NRT_STATUS nrt_tensor_read_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe)
{
	(void)unsafe; /* nothing blocks tensor I/O in neuronsim (docs/runtime.md) */
	return batch(__func__, batches, num_batches, false);
}

NRT_STATUS nrt_tensor_write_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe)
{
	(void)unsafe;
	return batch(__func__, batches, num_batches, true);
}
