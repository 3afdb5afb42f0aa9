/* Tensors: device or host storage, slices, attached buffers, bounds-checked read/write/copy/memset. */
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "observe.h"

static void set_name(nrt_tensor_obj_t *t, const char *name)
{
	snprintf(t->name, sizeof(t->name), "%s", name ? name : "");
}

static NRT_STATUS host_alloc(nrt_ctx_t *ctx, int logical_nc, uint64_t size, nrt_storage_t *s)
{
	int node = -1;
	if (logical_nc >= 0 && (uint32_t)logical_nc < ctx->n_cores)
		node = ctx->devices[ctx->cores[logical_nc].device].numa_node;
	/* Place host tensors next to the device; in-process the device is "where
	 * the caller runs", so use the caller's node. Without NUMA fall back to
	 * plain aligned memory. */
	if (node < 0 && numa_available() >= 0) {
		int cpu = sched_getcpu();
		node = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
	}
	/* Both are fresh anonymous mappings (numa_alloc_onnode is mmap + mbind):
	 * already zero, and a page costs nothing until it is first touched. */
	if (node >= 0 && numa_available() >= 0) {
		void *p = numa_alloc_onnode(size, node);
		if (p) {
			s->host = p;
			s->numa = true;
			return NRT_SUCCESS;
		}
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NRT_RESOURCE;
	s->host = p;
	s->numa = false;
	return NRT_SUCCESS;
}

void nrt_storage_put(nrt_ctx_t *ctx, nrt_storage_t *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	switch (s->kind) {
	case NRT_STORAGE_DEVICE:
		nrt_devmem_free(ctx, s->device, NRT_NEURONSIM_MEM_TENSORS, &s->mem);
		break;
	case NRT_STORAGE_HOST:
		atomic_fetch_sub(&ctx->host_tensor_bytes, s->size);
		if (s->numa)
			numa_free(s->host, s->size);
		else
			munmap(s->host, s->size);
		break;
	case NRT_STORAGE_USER:
		break;
	}
	free(s);
}

void nrt_tensor_obj_destroy(nrt_ctx_t *ctx, nrt_tensor_obj_t *t)
{
	if (!t)
		return;
	nrt_storage_put(ctx, t->storage);
	free(t);
}

static ns_status_t register_tensor(nrt_ctx_t *ctx, nrt_tensor_obj_t *t, nrt_tensor_t **out)
{
	uint64_t h;
	NRT_STATUS st = nrt_handle_create(&ctx->tensors, t, &h);
	if (st) {
		ns_status_t err = nrt_status_make(st, "tensor '%s': out of host memory for its handle", t->name);
		nrt_tensor_obj_destroy(ctx, t);
		return err;
	}
	*out = (nrt_tensor_t *)(uintptr_t)h;
	return NS_OK;
}

static ns_status_t tensor_allocate(nrt_tensor_placement_t tensor_placement, int logical_nc_id, size_t size,
				   const char *name, nrt_tensor_t **tensor)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!name)
		name = "";
	if (!tensor)
		return nrt_status_make(NRT_INVALID, "tensor (out) is NULL");
	if (size == 0)
		return nrt_status_make(NRT_INVALID, "tensor '%s' has size 0", name);
	bool device = tensor_placement == NRT_TENSOR_PLACEMENT_DEVICE;
	if (!device && tensor_placement != NRT_TENSOR_PLACEMENT_HOST &&
	    tensor_placement != NRT_TENSOR_PLACEMENT_VIRTUAL)
		return nrt_status_make(NRT_INVALID, "tensor '%s': unknown placement %d", name,
				       (int)tensor_placement);
	if ((device && (logical_nc_id < 0 || (uint32_t)logical_nc_id >= ctx->n_cores)) ||
	    (!device && logical_nc_id < -1) || (!device && logical_nc_id >= (int)ctx->n_cores))
		return nrt_status_make(NRT_INVALID, "tensor '%s': logical NeuronCore %d is not visible "
				       "(%u visible: 0-%d)", name, logical_nc_id, ctx->n_cores,
				       (int)ctx->n_cores - 1);
	nrt_tensor_obj_t *t = calloc(1, sizeof(*t));
	nrt_storage_t *s = calloc(1, sizeof(*s));
	if (!t || !s) {
		free(t);
		free(s);
		return nrt_status_make(NRT_RESOURCE, "tensor '%s': out of host memory for its descriptor",
				       name);
	}
	atomic_init(&s->refs, 1);
	s->size = size;
	s->logical_nc = logical_nc_id;
	NRT_STATUS st;
	if (device) {
		s->kind = NRT_STORAGE_DEVICE;
		s->device = ctx->cores[logical_nc_id].device;
		/* on NRT_RESOURCE nrt_devmem_alloc logged the device's memory report (TDRV) */
		st = nrt_devmem_alloc(ctx, logical_nc_id, size, NRT_NEURONSIM_MEM_TENSORS, &s->mem);
		if (st == NRT_SUCCESS) {
			s->host = s->mem.host;
			/* Device memory is reused: give callers the zeroed tensor
			 * they would get from the real runtime's fresh pages. */
			ctx->ops->mem_zero(ctx->devices[s->device].dev, &s->mem);
		}
	} else {
		s->kind = NRT_STORAGE_HOST;
		st = host_alloc(ctx, logical_nc_id, size, s);
		if (st == NRT_SUCCESS)
			atomic_fetch_add(&ctx->host_tensor_bytes, size);
	}
	if (st) {
		free(s);
		free(t);
		return nrt_status_make(st, "out of %s memory for tensor '%s' (%zu bytes)",
				       device ? "device" : "host", name, size);
	}
	t->storage = s;
	t->size = size;
	t->placement = tensor_placement;
	set_name(t, name);
	return register_tensor(ctx, t, tensor);
}

NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int logical_nc_id, size_t size,
			       const char *name, nrt_tensor_t **tensor)
{
	return nrt_status_report(__func__, tensor_allocate(tensor_placement, logical_nc_id, size, name, tensor));
}

static ns_status_t tensor_allocate_empty(const char *name, nrt_tensor_t **tensor)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!tensor)
		return nrt_status_make(NRT_INVALID, "tensor (out) is NULL");
	nrt_tensor_obj_t *t = calloc(1, sizeof(*t));
	if (!t)
		return nrt_status_make(NRT_RESOURCE, "tensor '%s': out of host memory for its descriptor",
				       name ? name : "");
	t->placement = NRT_TENSOR_PLACEMENT_VIRTUAL;
	set_name(t, name);
	return register_tensor(ctx, t, tensor);
}

NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor)
{
	return nrt_status_report(__func__, tensor_allocate_empty(name, tensor));
}

ns_status_t nrt_tensor_acquire(nrt_ctx_t *ctx, const nrt_tensor_t *tensor, nrt_tensor_obj_t **out_t)
{
	void *obj;
	NS_RETURN_IF_ERROR(nrt_handle_acquire_arg(&ctx->tensors, tensor, "tensor",
						  "a live tensor (freed, or not a tensor handle)", &obj));
	*out_t = obj;
	return NS_OK;
}

void nrt_tensor_release(nrt_ctx_t *ctx, const nrt_tensor_t *tensor)
{
	nrt_handle_release(&ctx->tensors, nrt_handle_of(tensor));
}

void nrt_tensor_free(nrt_tensor_t **tensor)
{
	if (!tensor || !*tensor)
		return;
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (!ctx) {
		/* nrt_close already freed every tensor. */
		*tensor = NULL;
		return;
	}
	void *obj;
	st = nrt_handle_destroy(&ctx->tensors, nrt_handle_of(*tensor), &obj);
	if (st) {
		nrt_status_report(__func__, nrt_status_make(st, "%p is not a live tensor (double free?)",
							    (void *)*tensor));
		return;
	}
	nrt_tensor_obj_destroy(ctx, obj);
	*tensor = NULL;
}

ns_status_t nrt_tensor_check_range(const nrt_tensor_obj_t *t, uint64_t offset, uint64_t size)
{
	if (!t->storage)
		return nrt_status_make(NRT_INVALID, "tensor '%s' has no storage (allocate_empty without "
				       "attach_buffer)", t->name);
	if (offset > t->size || size > t->size - offset)
		return nrt_status_make(NRT_INVALID, "tensor '%s': range [%llu, +%llu) is outside its %llu bytes",
				       t->name, (unsigned long long)offset, (unsigned long long)size,
				       (unsigned long long)t->size);
	return NS_OK;
}

static uint8_t *bytes(const nrt_tensor_obj_t *t)
{
	return t->storage->host + t->offset;
}

void nrt_tensor_transfer(nrt_tensor_obj_t *t, void *buf, uint64_t offset, uint64_t size, bool write)
{
	if (!size)
		return;
	uint64_t t0 = ns_monotonic_ns();
	if (write)
		memcpy(bytes(t) + offset, buf, size);
	else
		memcpy(buf, bytes(t) + offset, size);
	uint64_t t1 = ns_monotonic_ns();
	nrt_metrics_transfer(write, size, t1 - t0);
	nrt_profile_transfer(write, t->name, size, t0, t1);
}

ns_status_t nrt_tensor_io_status(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size, bool write)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *t;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	NS_RETURN_IF_ERROR(nrt_tensor_acquire(ctx, tensor, &t));
	ns_status_t st = NS_OK;
	if (!buf && size)
		st = nrt_status_make(NRT_INVALID, "tensor '%s': buf is NULL for %zu bytes", t->name, size);
	else if (!(st = nrt_tensor_check_range(t, offset, size)))
		nrt_tensor_transfer(t, buf, offset, size, write);
	nrt_tensor_release(ctx, tensor);
	return st;
}

NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size)
{
	return nrt_status_report(__func__, nrt_tensor_io_status(tensor, buf, offset, size, false));
}

NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset, size_t size)
{
	return nrt_status_report(__func__, nrt_tensor_io_status(tensor, (void *)buf, offset, size, true));
}

static ns_status_t tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *t;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	NS_RETURN_IF_ERROR(nrt_tensor_acquire(ctx, tensor, &t));
	ns_status_t st = nrt_tensor_check_range(t, offset, size);
	if (!st && size)
		memset(bytes(t) + offset, value, size);
	nrt_tensor_release(ctx, tensor);
	return st;
}

NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size)
{
	return nrt_status_report(__func__, tensor_memset(tensor, offset, value, size));
}

ns_status_t nrt_tensor_copy_status(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst, size_t dst_offset,
			       size_t size)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *s, *d;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	NS_RETURN_IF_ERROR_F(nrt_tensor_acquire(ctx, src, &s), "src");
	ns_status_t st = ns_status_annotate(nrt_tensor_acquire(ctx, dst, &d), "dst");
	if (st) {
		nrt_tensor_release(ctx, src);
		return st;
	}
	if (!(st = ns_status_annotate(nrt_tensor_check_range(s, src_offset, size), "src")) &&
	    !(st = ns_status_annotate(nrt_tensor_check_range(d, dst_offset, size), "dst"))) {
		if (s->storage->kind == NRT_STORAGE_DEVICE && d->storage->kind == NRT_STORAGE_DEVICE &&
		    s->storage->logical_nc != d->storage->logical_nc)
			st = nrt_status_make(NRT_INVALID, "'%s' (core %d) and '%s' (core %d): device tensors "
					     "must be on the same NeuronCore", s->name, s->storage->logical_nc,
					     d->name, d->storage->logical_nc);
		else if (size)
			/* memmove: a tensor and its slice may overlap. */
			memmove(bytes(d) + dst_offset, bytes(s) + src_offset, size);
	}
	nrt_tensor_release(ctx, dst);
	nrt_tensor_release(ctx, src);
	return st;
}

NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst, size_t dst_offset,
			   size_t size)
{
	return nrt_status_report(__func__, nrt_tensor_copy_status(src, src_offset, dst, dst_offset, size));
}

/* The live tensor behind a handle for the two getters, which have no status to
 * return: a failure is reported here, and they return 0 / NULL. */
static nrt_tensor_obj_t *getter_acquire(const char *func, const nrt_tensor_t *tensor, nrt_ctx_t **out_ctx)
{
	nrt_tensor_obj_t *t = NULL;
	ns_status_t st = nrt_ctx_enter(out_ctx);
	if (!st)
		st = nrt_tensor_acquire(*out_ctx, tensor, &t);
	return nrt_status_report(func, st) ? NULL : t;
}

size_t nrt_tensor_get_size(const nrt_tensor_t *tensor)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *t = getter_acquire(__func__, tensor, &ctx);
	if (!t)
		return 0;
	size_t size = t->size;
	nrt_tensor_release(ctx, tensor);
	return size;
}

void *nrt_tensor_get_va(const nrt_tensor_t *tensor)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *t = getter_acquire(__func__, tensor, &ctx);
	if (!t)
		return NULL;
	void *va = t->storage ? bytes(t) : NULL;
	nrt_tensor_release(ctx, tensor);
	return va;
}

static ns_status_t tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *t;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!buffer || size == 0)
		return nrt_status_make(NRT_INVALID, "buffer is NULL or size is 0");
	NS_RETURN_IF_ERROR(nrt_tensor_acquire(ctx, tensor, &t));
	nrt_storage_t *s = calloc(1, sizeof(*s));
	if (!s) {
		ns_status_t st = nrt_status_make(NRT_RESOURCE, "tensor '%s': out of host memory attaching "
						 "a buffer", t->name);
		nrt_tensor_release(ctx, tensor);
		return st;
	}
	atomic_init(&s->refs, 1);
	s->kind = NRT_STORAGE_USER;
	s->logical_nc = -1;
	s->host = buffer;
	s->size = size;
	nrt_storage_t *old = t->storage;
	t->storage = s;
	t->offset = 0;
	t->size = size;
	t->placement = NRT_TENSOR_PLACEMENT_VIRTUAL;
	nrt_tensor_release(ctx, tensor);
	nrt_storage_put(ctx, old);
	return NS_OK;
}

NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size)
{
	return nrt_status_report(__func__, tensor_attach_buffer(tensor, buffer, size));
}

static ns_status_t tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset, size_t size,
					 const char *name, nrt_tensor_t **tensor_slice)
{
	nrt_ctx_t *ctx;
	nrt_tensor_obj_t *src;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!name)
		name = "";
	if (!tensor_slice)
		return nrt_status_make(NRT_INVALID, "slice '%s': tensor_slice (out) is NULL", name);
	NS_RETURN_IF_ERROR(nrt_tensor_acquire(ctx, tensor_source, &src));
	ns_status_t st = NS_OK;
	if (size == 0)
		st = nrt_status_make(NRT_INVALID, "slice '%s' has size 0", name);
	else
		st = ns_status_annotate(nrt_tensor_check_range(src, offset, size), "slice '%s'", name);
	nrt_tensor_obj_t *t = NULL;
	if (!st && !(t = calloc(1, sizeof(*t))))
		st = nrt_status_make(NRT_RESOURCE, "slice '%s': out of host memory for its descriptor", name);
	if (!st) {
		atomic_fetch_add(&src->storage->refs, 1);
		t->storage = src->storage;
		t->offset = src->offset + offset;
		t->size = size;
		t->placement = src->placement;
		set_name(t, name);
	}
	nrt_tensor_release(ctx, tensor_source);
	return st ? st : register_tensor(ctx, t, tensor_slice);
}

NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset, size_t size,
				     const char *name, nrt_tensor_t **tensor_slice)
{
	return nrt_status_report(__func__, tensor_allocate_slice(tensor_source, offset, size, name, tensor_slice));
}
