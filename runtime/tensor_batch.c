/* nrt_tensor_read_batch / nrt_tensor_write_batch: many tensor copies in one call, all checked before any runs. */
#include <stdlib.h>

#include "internal.h"

/* Checks every batch and operation, holding a reference to each batch's
 * tensor (objs[i] non-NULL when batch i's was taken) so that none can be freed
 * between the check and the copies. */
static ns_status_t check_all(nrt_ctx_t *ctx, const nrt_tensor_batch_t *batches, uint64_t num_batches,
			     nrt_tensor_obj_t **objs)
{
	for (uint64_t i = 0; i < num_batches; i++) {
		const nrt_tensor_batch_t *b = &batches[i];
		NS_RETURN_IF_ERROR_F(nrt_tensor_acquire(ctx, b->tensor, &objs[i]), "batch %llu",
				     (unsigned long long)i);
		const nrt_tensor_obj_t *t = objs[i];
		if (b->num_ops && !b->ops)
			return nrt_status_make(NRT_INVALID, "batch %llu (tensor '%s'): ops is NULL for %u "
					       "operations", (unsigned long long)i, t->name, b->num_ops);
		for (uint32_t j = 0; j < b->num_ops; j++) {
			const nrt_tensor_batch_op_t *op = &b->ops[j];
			if (!op->size)
				continue;
			if (t->storage && !op->buffer)
				return nrt_status_make(NRT_INVALID, "batch %llu op %u (tensor '%s'): buffer is NULL",
						       (unsigned long long)i, j, t->name);
			NS_RETURN_IF_ERROR_F(nrt_tensor_check_range(t, op->offset, op->size), "batch %llu op %u",
					     (unsigned long long)i, j);
		}
	}
	return NS_OK;
}

static ns_status_t batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool write)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!num_batches)
		return NS_OK;
	if (!batches)
		return nrt_status_make(NRT_INVALID, "batches is NULL for %llu batches",
				       (unsigned long long)num_batches);
	nrt_tensor_obj_t **objs = num_batches <= SIZE_MAX / sizeof(*objs) ? calloc(num_batches, sizeof(*objs)) : NULL;
	if (!objs)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for %llu batches",
				       (unsigned long long)num_batches);
	ns_status_t st = check_all(ctx, batches, num_batches, objs);
	/* Each copy is accounted (metrics, profiler) as a single nrt_tensor_read
	 * or nrt_tensor_write, as the SDK's batch counts its operations. */
	for (uint64_t i = 0; !st && i < num_batches; i++)
		for (uint32_t j = 0; j < batches[i].num_ops; j++) {
			const nrt_tensor_batch_op_t *op = &batches[i].ops[j];
			nrt_tensor_transfer(objs[i], op->buffer, op->offset, op->size, write);
		}
	for (uint64_t i = 0; i < num_batches; i++)
		if (objs[i])
			nrt_tensor_release(ctx, batches[i].tensor);
	free(objs);
	return st;
}

NRT_STATUS nrt_tensor_read_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe)
{
	(void)unsafe; /* nothing blocks tensor I/O in neuronsim (docs/runtime.md) */
	return nrt_status_report(__func__, batch(batches, num_batches, false));
}

NRT_STATUS nrt_tensor_write_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe)
{
	(void)unsafe;
	return nrt_status_report(__func__, batch(batches, num_batches, true));
}
