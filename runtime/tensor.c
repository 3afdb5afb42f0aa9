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

static NRT_STATUS register_tensor(nrt_ctx_t *ctx, nrt_tensor_obj_t *t, nrt_tensor_t **out)
{
	uint64_t h;
	NRT_STATUS st = nrt_handle_create(&ctx->tensors, t, &h);
	if (st) {
		nrt_tensor_obj_destroy(ctx, t);
		return st;
	}
	*out = (nrt_tensor_t *)(uintptr_t)h;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int logical_nc_id, size_t size,
			       const char *name, nrt_tensor_t **tensor)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!tensor) {
		NRT_LOGE("nrt_tensor_allocate: tensor (out) is NULL");
		return NRT_INVALID;
	}
	if (size == 0) {
		NRT_LOGE("nrt_tensor_allocate: tensor '%s' has size 0", name ? name : "");
		return NRT_INVALID;
	}
	bool device = tensor_placement == NRT_TENSOR_PLACEMENT_DEVICE;
	if (!device && tensor_placement != NRT_TENSOR_PLACEMENT_HOST &&
	    tensor_placement != NRT_TENSOR_PLACEMENT_VIRTUAL) {
		NRT_LOGE("nrt_tensor_allocate: unknown placement %d", (int)tensor_placement);
		return NRT_INVALID;
	}
	if ((device && (logical_nc_id < 0 || (uint32_t)logical_nc_id >= ctx->n_cores)) ||
	    (!device && logical_nc_id < -1) || (!device && logical_nc_id >= (int)ctx->n_cores)) {
		NRT_LOGE("nrt_tensor_allocate: tensor '%s': logical NeuronCore %d is not visible "
			 "(%u visible: 0-%d)", name ? name : "", logical_nc_id, ctx->n_cores,
			 (int)ctx->n_cores - 1);
		return NRT_INVALID;
	}
	nrt_tensor_obj_t *t = calloc(1, sizeof(*t));
	nrt_storage_t *s = calloc(1, sizeof(*s));
	if (!t || !s) {
		free(t);
		free(s);
		return NRT_RESOURCE;
	}
	atomic_init(&s->refs, 1);
	s->size = size;
	s->logical_nc = logical_nc_id;
	if (device) {
		s->kind = NRT_STORAGE_DEVICE;
		s->device = ctx->cores[logical_nc_id].device;
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
		NRT_LOGE("nrt_tensor_allocate: out of %s memory for tensor '%s' (%zu bytes)",
			 device ? "device" : "host", name ? name : "", size);
		free(s);
		free(t);
		return st;
	}
	t->storage = s;
	t->size = size;
	t->placement = tensor_placement;
	set_name(t, name);
	return register_tensor(ctx, t, tensor);
}

NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!tensor)
		return NRT_INVALID;
	nrt_tensor_obj_t *t = calloc(1, sizeof(*t));
	if (!t)
		return NRT_RESOURCE;
	t->placement = NRT_TENSOR_PLACEMENT_VIRTUAL;
	set_name(t, name);
	return register_tensor(ctx, t, tensor);
}

/* Resolves a public handle; logs misuse. The caller releases the reference. */
static NRT_STATUS acquire(nrt_ctx_t *ctx, const char *func, const nrt_tensor_t *tensor,
			  nrt_tensor_obj_t **out)
{
	if (!tensor) {
		NRT_LOGE("%s: tensor is NULL", func);
		return NRT_INVALID;
	}
	void *obj;
	NRT_STATUS st = nrt_handle_acquire(&ctx->tensors, nrt_handle_of(tensor), &obj);
	if (st) {
		NRT_LOGE("%s: %p is not a live tensor (freed, or not a tensor handle)", func,
			 (const void *)tensor);
		return st;
	}
	*out = obj;
	return NRT_SUCCESS;
}

static void release(nrt_ctx_t *ctx, const nrt_tensor_t *tensor)
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
		NRT_LOGE("nrt_tensor_free: %p is not a live tensor (double free?)", (void *)*tensor);
		return;
	}
	nrt_tensor_obj_destroy(ctx, obj);
	*tensor = NULL;
}

/* offset + size must lie inside the tensor, without overflow. */
static NRT_STATUS check_range(const char *func, const nrt_tensor_obj_t *t, uint64_t offset, uint64_t size)
{
	if (!t->storage) {
		NRT_LOGE("%s: tensor '%s' has no storage (allocate_empty without attach_buffer)", func,
			 t->name);
		return NRT_INVALID;
	}
	if (offset > t->size || size > t->size - offset) {
		NRT_LOGE("%s: tensor '%s': range [%llu, +%llu) is outside its %llu bytes", func, t->name,
			 (unsigned long long)offset, (unsigned long long)size,
			 (unsigned long long)t->size);
		return NRT_INVALID;
	}
	return NRT_SUCCESS;
}

static uint8_t *bytes(const nrt_tensor_obj_t *t)
{
	return t->storage->host + t->offset;
}

NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	nrt_tensor_obj_t *t;
	if ((st = acquire(ctx, __func__, tensor, &t)))
		return st;
	if (!buf && size) {
		NRT_LOGE("nrt_tensor_read: buf is NULL");
		st = NRT_INVALID;
	} else if (!(st = check_range(__func__, t, offset, size)) && size) {
		uint64_t t0 = ns_monotonic_ns();
		memcpy(buf, bytes(t) + offset, size);
		uint64_t t1 = ns_monotonic_ns();
		nrt_metrics_transfer(false, size, t1 - t0);
		nrt_profile_transfer(false, t->name, size, t0, t1);
	}
	release(ctx, tensor);
	return st;
}

NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset, size_t size)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	nrt_tensor_obj_t *t;
	if ((st = acquire(ctx, __func__, tensor, &t)))
		return st;
	if (!buf && size) {
		NRT_LOGE("nrt_tensor_write: buf is NULL");
		st = NRT_INVALID;
	} else if (!(st = check_range(__func__, t, offset, size)) && size) {
		uint64_t t0 = ns_monotonic_ns();
		memcpy(bytes(t) + offset, buf, size);
		uint64_t t1 = ns_monotonic_ns();
		nrt_metrics_transfer(true, size, t1 - t0);
		nrt_profile_transfer(true, t->name, size, t0, t1);
	}
	release(ctx, tensor);
	return st;
}

NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	nrt_tensor_obj_t *t;
	if ((st = acquire(ctx, __func__, tensor, &t)))
		return st;
	if (!(st = check_range(__func__, t, offset, size)) && size)
		memset(bytes(t) + offset, value, size);
	release(ctx, tensor);
	return st;
}

NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst, size_t dst_offset,
			   size_t size)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	nrt_tensor_obj_t *s, *d;
	if ((st = acquire(ctx, __func__, src, &s)))
		return st;
	if ((st = acquire(ctx, __func__, dst, &d))) {
		release(ctx, src);
		return st;
	}
	if (!(st = check_range(__func__, s, src_offset, size)) &&
	    !(st = check_range(__func__, d, dst_offset, size))) {
		if (s->storage->kind == NRT_STORAGE_DEVICE && d->storage->kind == NRT_STORAGE_DEVICE &&
		    s->storage->logical_nc != d->storage->logical_nc) {
			NRT_LOGE("nrt_tensor_copy: '%s' (core %d) and '%s' (core %d): device tensors must "
				 "be on the same NeuronCore", s->name, s->storage->logical_nc, d->name,
				 d->storage->logical_nc);
			st = NRT_INVALID;
		} else if (size) {
			/* memmove: a tensor and its slice may overlap. */
			memmove(bytes(d) + dst_offset, bytes(s) + src_offset, size);
		}
	}
	release(ctx, dst);
	release(ctx, src);
	return st;
}

size_t nrt_tensor_get_size(const nrt_tensor_t *tensor)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	nrt_tensor_obj_t *t;
	if (!ctx || acquire(ctx, __func__, tensor, &t))
		return 0;
	size_t size = t->size;
	release(ctx, tensor);
	return size;
}

void *nrt_tensor_get_va(const nrt_tensor_t *tensor)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	nrt_tensor_obj_t *t;
	if (!ctx || acquire(ctx, __func__, tensor, &t))
		return NULL;
	void *va = t->storage ? bytes(t) : NULL;
	release(ctx, tensor);
	return va;
}

NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!buffer || size == 0) {
		NRT_LOGE("nrt_tensor_attach_buffer: buffer is NULL or size is 0");
		return NRT_INVALID;
	}
	nrt_tensor_obj_t *t;
	if ((st = acquire(ctx, __func__, tensor, &t)))
		return st;
	nrt_storage_t *s = calloc(1, sizeof(*s));
	if (!s) {
		release(ctx, tensor);
		return NRT_RESOURCE;
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
	release(ctx, tensor);
	nrt_storage_put(ctx, old);
	return NRT_SUCCESS;
}

NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset, size_t size,
				     const char *name, nrt_tensor_t **tensor_slice)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!tensor_slice)
		return NRT_INVALID;
	nrt_tensor_obj_t *src;
	if ((st = acquire(ctx, __func__, tensor_source, &src)))
		return st;
	if (size == 0) {
		NRT_LOGE("nrt_tensor_allocate_slice: slice '%s' has size 0", name ? name : "");
		st = NRT_INVALID;
	} else {
		st = check_range(__func__, src, offset, size);
	}
	nrt_tensor_obj_t *t = NULL;
	if (!st) {
		t = calloc(1, sizeof(*t));
		if (!t)
			st = NRT_RESOURCE;
	}
	if (!st) {
		atomic_fetch_add(&src->storage->refs, 1);
		t->storage = src->storage;
		t->offset = src->offset + offset;
		t->size = size;
		t->placement = src->placement;
		set_name(t, name);
	}
	release(ctx, tensor_source);
	return st ? st : register_tensor(ctx, t, tensor_slice);
}
