/* PJRT buffers: an nrt device tensor with an element type and dimensions; host transfers in any strided or permuted layout (f64 converted to and from the device's f32), copies between cores, deletion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_internal.h"

size_t pjrt_type_size(PJRT_Buffer_Type t)
{
	switch (t) {
	case PJRT_Buffer_Type_PRED: case PJRT_Buffer_Type_S8: case PJRT_Buffer_Type_U8:
	case PJRT_Buffer_Type_F8E5M2: case PJRT_Buffer_Type_F8E4M3FN:
	case PJRT_Buffer_Type_F8E4M3B11FNUZ: case PJRT_Buffer_Type_F8E5M2FNUZ:
	case PJRT_Buffer_Type_F8E4M3FNUZ: case PJRT_Buffer_Type_F8E4M3: case PJRT_Buffer_Type_F8E3M4:
	case PJRT_Buffer_Type_F8E8M0FNU:
		return 1;
	case PJRT_Buffer_Type_S16: case PJRT_Buffer_Type_U16: case PJRT_Buffer_Type_F16:
	case PJRT_Buffer_Type_BF16:
		return 2;
	case PJRT_Buffer_Type_S32: case PJRT_Buffer_Type_U32: case PJRT_Buffer_Type_F32:
		return 4;
	case PJRT_Buffer_Type_S64: case PJRT_Buffer_Type_U64: case PJRT_Buffer_Type_F64:
	case PJRT_Buffer_Type_C64:
		return 8;
	case PJRT_Buffer_Type_C128:
		return 16;
	default: /* INVALID, TOKEN and the sub-byte S4/U4/S2/U2/F4E2M1FN */
		return 0;
	}
}

const char *pjrt_type_name(PJRT_Buffer_Type t)
{
	static const char *const names[] = {
		"invalid", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "f32",
		"f64", "bf16", "c64", "c128", "f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz",
		"f8e4m3fnuz", "s4", "u4", "token", "s2", "u2", "f8e4m3", "f8e3m4", "f8e8m0fnu", "f4e2m1fn",
	};
	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

size_t pjrt_device_type_size(PJRT_Buffer_Type t)
{
	/* the device has no f64: the compiler computes f64 as f32 and the buffer
	 * holds f32 (docs/pjrt.md, "f64") */
	return t == PJRT_Buffer_Type_F64 ? sizeof(float) : pjrt_type_size(t);
}

static bool array_bytes(size_t esize, size_t rank, const int64_t *dims, size_t *out)
{
	size_t n = esize;
	for (size_t d = 0; d < rank; d++) {
		if (dims[d] < 0 || __builtin_mul_overflow(n, (size_t)dims[d], &n))
			return false;
	}
	*out = n;
	return true;
}

bool pjrt_array_bytes(PJRT_Buffer_Type t, size_t rank, const int64_t *dims, size_t *out)
{
	return array_bytes(pjrt_type_size(t), rank, dims, out);
}

bool pjrt_device_bytes(PJRT_Buffer_Type t, size_t rank, const int64_t *dims, size_t *out)
{
	return array_bytes(pjrt_device_type_size(t), rank, dims, out);
}

/* n f64 values from the host to the device's f32 (round to nearest even; beyond
 * f32's range: +-inf; NaN stays NaN), as XLA's f64 -> f32 convert. */
static void f64_to_f32(float *dst, const double *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (float)src[i];
}

static void f32_to_f64(double *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (double)src[i];
}

PJRT_Error *pjrt_tensor_new(pjrt_device_t *dev, size_t size, const char *name, nrt_tensor_t **out)
{
	*out = NULL;
	if (size == 0)
		return NULL;
	/* the pooled tensors of destroyed buffers may hold the memory */
	pjrt_pool_make_room(dev, size);
	NRT_STATUS st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)dev->index, size, name, out);
	if (st == NRT_RESOURCE && pjrt_pool_drain(dev))
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)dev->index, size, name, out);
	if (st != NRT_SUCCESS)
		return pjrt_error(pjrt_code_from_nrt(st),
				  "cannot allocate %zu bytes on NeuronCore %u: %s (%d)", size, dev->index,
				  nrt_get_status_as_str(st), (int)st);
	return NULL;
}

PJRT_Error *pjrt_buffer_wrap(pjrt_device_t *dev, PJRT_Buffer_Type type, size_t rank, const int64_t *dims,
			     nrt_tensor_t *tensor, PJRT_Buffer **out)
{
	pjrt_buffer_t *b = calloc(1, sizeof(*b));
	size_t nbytes = 0;
	if (!b || rank > PJRT_MAX_RANK || !pjrt_device_bytes(type, rank, dims, &nbytes)) {
		free(b);
		nrt_tensor_free(&tensor);
		return pjrt_error(rank > PJRT_MAX_RANK ? PJRT_Error_Code_UNIMPLEMENTED
						       : PJRT_Error_Code_RESOURCE_EXHAUSTED,
				  "cannot create a buffer of rank %zu", rank);
	}
	b->client = dev->client;
	b->dev = dev;
	b->type = type;
	b->rank = rank;
	if (rank)
		memcpy(b->dims, dims, rank * sizeof(int64_t));
	for (size_t i = 0; i < rank; i++)
		b->minor_to_major[i] = (int64_t)(rank - 1 - i);
	b->nbytes = nbytes;
	b->tensor = tensor;
	pthread_mutex_init(&b->lock, NULL);
	b->h = pjrt_handle_new(PJRT_KIND_BUFFER, b);
	if (!b->h) {
		pthread_mutex_destroy(&b->lock);
		nrt_tensor_free(&b->tensor);
		free(b);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of handles creating a buffer");
	}
	pjrt_client_ref(b->client);
	*out = PJRT_PTR(PJRT_Buffer, b->h);
	return NULL;
}

void pjrt_buffers_destroy(PJRT_Buffer **outv, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (!outv[k])
			continue;
		PJRT_Buffer_Destroy_Args d = { .struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
					       .buffer = outv[k] };
		PJRT_Error *e2 = pjrt_impl_Buffer_Destroy(&d);
		(void)e2;
		outv[k] = NULL;
	}
}

PJRT_Error *pjrt_buffer_wrap_error(pjrt_device_t *dev, PJRT_Buffer_Type type, size_t rank, const int64_t *dims,
				   PJRT_Error_Code code, const char *msg, PJRT_Buffer **out)
{
	char *copy = strdup(msg ? msg : "");
	if (!copy)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory creating a buffer");
	PJRT_Error *err = pjrt_buffer_wrap(dev, type, rank, dims, NULL, out);
	if (err) {
		free(copy);
		return err;
	}
	pjrt_buffer_t *b = pjrt_handle_get(PJRT_HANDLE(*out), PJRT_KIND_BUFFER);
	b->error = code;
	b->error_msg = copy;
	pjrt_handle_put(b->h);
	return NULL;
}

/* ---------------------------------------------------------- strided copies */

/* Copies the rank-dimensional array dims of esize-byte elements from src to dst,
 * element (i0, ..., in-1) being at byte offset sum(i_k * stride_k) of each.
 * Runs of contiguous innermost elements are copied with one memcpy. */
static void copy_strided(uint8_t *dst, const int64_t *dst_strides, const uint8_t *src, const int64_t *src_strides,
			 size_t rank, const int64_t *dims, size_t esize)
{
	if (rank == 0) {
		memcpy(dst, src, esize);
		return;
	}
	for (size_t d = 0; d < rank; d++)
		if (dims[d] == 0)
			return;
	size_t last = rank - 1;
	bool run = dst_strides[last] == (int64_t)esize && src_strides[last] == (int64_t)esize;
	int64_t idx[PJRT_MAX_RANK] = { 0 };
	for (;;) {
		int64_t doff = 0, soff = 0;
		for (size_t d = 0; d < last; d++) {
			doff += idx[d] * dst_strides[d];
			soff += idx[d] * src_strides[d];
		}
		if (run) {
			memcpy(dst + doff, src + soff, (size_t)dims[last] * esize);
		} else {
			for (int64_t i = 0; i < dims[last]; i++)
				memcpy(dst + doff + i * dst_strides[last], src + soff + i * src_strides[last], esize);
		}
		/* Next row: advance the odometer over dimensions 0..last-1. */
		size_t d = last;
		for (;;) {
			if (d == 0)
				return;
			d--;
			if (++idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
}

static void dense_strides(size_t rank, const int64_t *dims, size_t esize, int64_t *out)
{
	int64_t s = (int64_t)esize;
	for (size_t d = rank; d-- > 0;) {
		out[d] = s;
		s *= dims[d] > 0 ? dims[d] : 1;
	}
}

/* Byte strides of a host layout (NULL: dense row-major) for an array of that
 * shape, and the bytes it spans. Tiled layouts must have no tiles (a plain
 * dimension order); strides must be non-negative. */
static PJRT_Error *layout_strides(const PJRT_Buffer_MemoryLayout *layout, size_t rank, const int64_t *dims,
				  size_t esize, const char *fn, int64_t *strides, size_t *out_span)
{
	dense_strides(rank, dims, esize, strides);
	size_t dense = esize;
	for (size_t d = 0; d < rank; d++)
		dense *= (size_t)dims[d];
	*out_span = dense;
	if (!layout)
		return NULL;
	/* The framework does not fill struct_size of layouts: only the type and
	 * the union member are read. */
	if (layout->type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
		const PJRT_Buffer_MemoryLayout_Tiled *t = &layout->tiled;
		if (t->num_tiles != 0)
			return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
					  "%s: tiled layouts (%zu tiles) are not supported; NeuronCore "
					  "buffers are dense", fn, t->num_tiles);
		if (t->minor_to_major_size != rank || (rank && !t->minor_to_major))
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "%s: layout has %zu minor_to_major entries for a rank-%zu array",
					  fn, t->minor_to_major_size, rank);
		bool seen[PJRT_MAX_RANK] = { false };
		int64_t s = (int64_t)esize;
		for (size_t k = 0; k < rank; k++) {
			int64_t d = t->minor_to_major[k];
			if (d < 0 || (size_t)d >= rank || seen[d])
				return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
						  "%s: minor_to_major is not a permutation of 0..%zu", fn,
						  rank - 1);
			seen[d] = true;
			strides[d] = s;
			s *= dims[d] > 0 ? dims[d] : 1;
		}
		return NULL;
	}
	if (layout->type == PJRT_Buffer_MemoryLayout_Type_Strides) {
		const PJRT_Buffer_MemoryLayout_Strides *st = &layout->strides;
		if (st->num_byte_strides != rank || (rank && !st->byte_strides))
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "%s: layout has %zu byte strides for a rank-%zu array", fn,
					  st->num_byte_strides, rank);
		size_t span = esize;
		for (size_t d = 0; d < rank; d++) {
			if (st->byte_strides[d] < 0)
				return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
						  "%s: negative byte stride %lld in dimension %zu", fn,
						  (long long)st->byte_strides[d], d);
			strides[d] = st->byte_strides[d];
			if (dims[d] == 0)
				span = 0;
			else if (span)
				span += (size_t)(dims[d] - 1) * (size_t)st->byte_strides[d];
		}
		*out_span = dense ? span : 0;
		return NULL;
	}
	return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: unknown layout type %d", fn, (int)layout->type);
}

static bool is_dense(size_t rank, const int64_t *dims, const int64_t *strides, size_t esize)
{
	int64_t want[PJRT_MAX_RANK];
	dense_strides(rank, dims, esize, want);
	for (size_t d = 0; d < rank; d++)
		if (dims[d] > 1 && strides[d] != want[d])
			return false;
	return true;
}

/* -------------------------------------------------------- creating buffers */

/* The device a BufferFromHostBuffer/CreateUninitializedBuffer targets. */
static PJRT_Error *target_device(pjrt_client_t *c, PJRT_Device *device, PJRT_Memory *memory, const char *fn,
				 pjrt_device_t **out)
{
	if (memory) {
		*out = pjrt_memory_lookup(memory, c);
		if (!*out)
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "%s: %p is not a memory of this client", fn, (void *)memory);
		return NULL;
	}
	if (device) {
		*out = pjrt_device_lookup(device, c);
		if (!*out)
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "%s: %p is not a device of this client", fn, (void *)device);
		return NULL;
	}
	return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: neither device nor memory is set", fn);
}

static PJRT_Error *check_shape(PJRT_Buffer_Type type, const int64_t *dims, size_t num_dims, const char *fn,
			       size_t *out_bytes)
{
	if (pjrt_type_size(type) == 0)
		return pjrt_error((unsigned)type <= PJRT_Buffer_Type_F4E2M1FN ? PJRT_Error_Code_UNIMPLEMENTED
									       : PJRT_Error_Code_INVALID_ARGUMENT,
				  "%s: element type %s (%d) cannot be held by a neuronsim buffer", fn,
				  pjrt_type_name(type), (int)type);
	if (num_dims > PJRT_MAX_RANK)
		return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED, "%s: rank %zu is above the limit of %d", fn,
				  num_dims, PJRT_MAX_RANK);
	if (num_dims && !dims)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dims is NULL for rank %zu", fn, num_dims);
	if (!pjrt_array_bytes(type, num_dims, dims, out_bytes))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "%s: dimensions are negative or their size overflows", fn);
	return NULL;
}

PJRT_IMPL(Client_BufferFromHostBuffer)
{
	static const char fn[] = "PJRT_Client_BufferFromHostBuffer";
	PJRT_CHECK_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args, buffer);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, fn);
	PJRT_Error *err;
	pjrt_device_t *dev = NULL;
	size_t nbytes = 0, dbytes = 0, esize = pjrt_type_size(args->type);
	int64_t src_strides[PJRT_MAX_RANK] = { 0 }, dense[PJRT_MAX_RANK] = { 0 };
	uint8_t *tmp = NULL;
	float *narrow = NULL;
	nrt_tensor_t *t = NULL;
	PJRT_Event *done = NULL;
	PJRT_Buffer *buf = NULL;
	if ((err = target_device(c, args->device, args->memory, fn, &dev)) ||
	    (err = check_shape(args->type, args->dims, args->num_dims, fn, &nbytes)))
		goto out;
	if (nbytes && !args->data) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: data is NULL for %zu bytes", fn, nbytes);
		goto out;
	}
	if (args->device_layout) {
		/* Only the dense row-major device layout exists on a NeuronCore. */
		size_t span;
		int64_t dl[PJRT_MAX_RANK];
		if ((err = layout_strides(args->device_layout, args->num_dims, args->dims, esize, fn, dl, &span)))
			goto out;
		if (!is_dense(args->num_dims, args->dims, dl, esize)) {
			err = pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
					 "%s: device layouts other than dense row-major are not supported", fn);
			goto out;
		}
	}
	dense_strides(args->num_dims, args->dims, esize, dense);
	memcpy(src_strides, dense, sizeof(dense));
	if (args->num_byte_strides) {
		if (args->num_byte_strides != args->num_dims || !args->byte_strides) {
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					 "%s: %zu byte strides for a rank-%zu array", fn, args->num_byte_strides,
					 args->num_dims);
			goto out;
		}
		memcpy(src_strides, args->byte_strides, args->num_dims * sizeof(int64_t));
	}
	pjrt_device_bytes(args->type, args->num_dims, args->dims, &dbytes);
	if ((err = pjrt_tensor_new(dev, dbytes, "pjrt_buffer", &t)))
		goto out;
	if (nbytes) {
		/* The host data is copied now, whatever host_buffer_semantics says,
		 * so done_with_host_buffer is complete on return. */
		const void *src = args->data;
		if (!is_dense(args->num_dims, args->dims, src_strides, esize)) {
			tmp = malloc(nbytes);
			if (!tmp) {
				err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
				goto out;
			}
			copy_strided(tmp, dense, args->data, src_strides, args->num_dims, args->dims, esize);
			src = tmp;
		}
		if (args->type == PJRT_Buffer_Type_F64) {
			/* aligned copy: the caller's data need not be 8-byte aligned */
			size_t n = nbytes / sizeof(double);
			double *wide = tmp ? (double *)tmp : malloc(nbytes);
			narrow = malloc(dbytes);
			if (!wide || !narrow) {
				if (!tmp)
					free(wide);
				err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
				goto out;
			}
			if (!tmp)
				memcpy(wide, args->data, nbytes);
			f64_to_f32(narrow, wide, n);
			if (!tmp)
				free(wide);
			src = narrow;
		}
		NRT_STATUS st = nrt_tensor_write(t, src, 0, dbytes);
		if (st != NRT_SUCCESS) {
			err = pjrt_error(pjrt_code_from_nrt(st), "%s: nrt_tensor_write: %s", fn,
					 nrt_get_status_as_str(st));
			goto out;
		}
	}
	if ((err = pjrt_event_new(0, NULL, &done)))
		goto out;
	err = pjrt_buffer_wrap(dev, args->type, args->num_dims, args->dims, t, &buf);
	t = NULL;
	if (err)
		goto out;
	args->done_with_host_buffer = done;
	args->buffer = buf;
	done = NULL;
out:
	if (done) {
		PJRT_Event_Destroy_Args d = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = done };
		PJRT_Error *e2 = pjrt_impl_Event_Destroy(&d);
		(void)e2;
	}
	nrt_tensor_free(&t);
	free(tmp);
	free(narrow);
	pjrt_handle_put(c->h);
	return err;
}

PJRT_IMPL(Client_CreateUninitializedBuffer)
{
	static const char fn[] = "PJRT_Client_CreateUninitializedBuffer";
	PJRT_CHECK_ARGS(args, PJRT_Client_CreateUninitializedBuffer_Args, buffer);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, fn);
	PJRT_Error *err;
	pjrt_device_t *dev = NULL;
	size_t nbytes = 0;
	nrt_tensor_t *t = NULL;
	if ((err = target_device(c, args->device, args->memory, fn, &dev)) ||
	    (err = check_shape(args->shape_element_type, args->shape_dims, args->shape_num_dims, fn, &nbytes)))
		goto out;
	if (args->shape_layout) {
		size_t span;
		int64_t dl[PJRT_MAX_RANK];
		size_t esize = pjrt_type_size(args->shape_element_type);
		if ((err = layout_strides(args->shape_layout, args->shape_num_dims, args->shape_dims, esize, fn,
					  dl, &span)))
			goto out;
		if (!is_dense(args->shape_num_dims, args->shape_dims, dl, esize)) {
			err = pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
					 "%s: layouts other than dense row-major are not supported", fn);
			goto out;
		}
	}
	/* nrt tensors are zero-filled, so "uninitialised" reads as zeros. */
	pjrt_device_bytes(args->shape_element_type, args->shape_num_dims, args->shape_dims, &nbytes);
	if ((err = pjrt_tensor_new(dev, nbytes, "pjrt_buffer", &t)))
		goto out;
	err = pjrt_buffer_wrap(dev, args->shape_element_type, args->shape_num_dims, args->shape_dims, t,
			       &args->buffer);
out:
	pjrt_handle_put(c->h);
	return err;
}

/* -------------------------------------------------------- buffer functions */

#define BUFFER_GET(b, handle, fn) PJRT_GET(pjrt_buffer_t, b, PJRT_KIND_BUFFER, handle, fn)

#define BUFFER_PUT(b) pjrt_handle_put((b)->h)

PJRT_IMPL(Buffer_Destroy)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_Destroy_Args, buffer);
	PJRT_Error *err;
	pjrt_buffer_t *b = pjrt_handle_remove_arg("PJRT_Buffer_Destroy", PJRT_KIND_BUFFER, args->buffer, &err);
	if (!b)
		return err;
	pjrt_pool_put(b->dev, &b->tensor);
	pthread_mutex_destroy(&b->lock);
	pjrt_client_t *c = b->client;
	free(b->error_msg);
	free(b);
	pjrt_client_unref(c);
	return NULL;
}

PJRT_IMPL(Buffer_ElementType)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_ElementType_Args, type);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_ElementType");
	args->type = b->type;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_Dimensions)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_Dimensions_Args, num_dims);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_Dimensions");
	args->dims = b->dims;
	args->num_dims = b->rank;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_UnpaddedDimensions)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_UnpaddedDimensions_Args, num_dims);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_UnpaddedDimensions");
	args->unpadded_dims = b->dims;
	args->num_dims = b->rank;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_DynamicDimensionIndices)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_DynamicDimensionIndices_Args, num_dynamic_dims);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_DynamicDimensionIndices");
	/* Buffers are static-shaped. */
	args->dynamic_dim_indices = NULL;
	args->num_dynamic_dims = 0;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_GetMemoryLayout)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_GetMemoryLayout_Args, layout);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_GetMemoryLayout");
	memset(&args->layout, 0, sizeof(args->layout));
	args->layout.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
	args->layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
	args->layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
	args->layout.tiled.minor_to_major = b->minor_to_major;
	args->layout.tiled.minor_to_major_size = b->rank;
	args->layout.tiled.num_tiles = 0;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_OnDeviceSizeInBytes)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_OnDeviceSizeInBytes");
	args->on_device_size_in_bytes = b->nbytes;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_Device)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_Device_Args, device);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_Device");
	args->device = PJRT_PTR(PJRT_Device, b->dev->h_device);
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_Memory)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_Memory_Args, memory);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_Memory");
	args->memory = PJRT_PTR(PJRT_Memory, b->dev->h_memory);
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_Delete)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_Delete_Args, buffer);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_Delete");
	pthread_mutex_lock(&b->lock);
	pjrt_pool_put(b->dev, &b->tensor);
	b->deleted = true;
	pthread_mutex_unlock(&b->lock);
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_IsDeleted)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_IsDeleted_Args, is_deleted);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_IsDeleted");
	pthread_mutex_lock(&b->lock);
	args->is_deleted = b->deleted;
	pthread_mutex_unlock(&b->lock);
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_IsOnCpu)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_IsOnCpu");
	args->is_on_cpu = false;
	BUFFER_PUT(b);
	return NULL;
}

PJRT_IMPL(Buffer_ReadyEvent)
{
	PJRT_CHECK_ARGS(args, PJRT_Buffer_ReadyEvent_Args, event);
	BUFFER_GET(b, args->buffer, "PJRT_Buffer_ReadyEvent");
	/* Transfers and executions finish before their call returns; the output
	 * of a failed execution is ready with its error. */
	pthread_mutex_lock(&b->lock);
	PJRT_Error *err = pjrt_event_new(b->error, b->error_msg, &args->event);
	pthread_mutex_unlock(&b->lock);
	BUFFER_PUT(b);
	return err;
}

/* Why b's bytes cannot be read (b locked by the caller), or NULL. */
static PJRT_Error *unreadable(const pjrt_buffer_t *b, const char *fn)
{
	if (b->deleted)
		return pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "%s: the buffer (%s, %zu dims, core %u) was deleted or donated to an execution",
				  fn, pjrt_type_name(b->type), b->rank, b->dev->index);
	if (b->error)
		return pjrt_error(b->error, "%s", b->error_msg);
	return NULL;
}

/* A copy of b's bytes in a new tensor on dst (b locked by the caller). */
static PJRT_Error *copy_to(pjrt_buffer_t *b, pjrt_device_t *dst, const char *fn, PJRT_Buffer **out)
{
	PJRT_Error *err = unreadable(b, fn);
	if (err)
		return err;
	nrt_tensor_t *t = NULL;
	if ((err = pjrt_tensor_new(dst, b->nbytes, "pjrt_buffer", &t)))
		return err;
	if (b->nbytes) {
		NRT_STATUS st = NRT_SUCCESS;
		if (dst == b->dev) {
			st = nrt_tensor_copy(b->tensor, 0, t, 0, b->nbytes);
		} else {
			/* libnrt copies between device tensors of one core only. */
			void *tmp = malloc(b->nbytes);
			if (!tmp) {
				nrt_tensor_free(&t);
				return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
			}
			st = nrt_tensor_read(b->tensor, tmp, 0, b->nbytes);
			if (st == NRT_SUCCESS)
				st = nrt_tensor_write(t, tmp, 0, b->nbytes);
			free(tmp);
		}
		if (st != NRT_SUCCESS) {
			nrt_tensor_free(&t);
			return pjrt_error(pjrt_code_from_nrt(st), "%s: copy from core %u to core %u: %s", fn,
					  b->dev->index, dst->index, nrt_get_status_as_str(st));
		}
	}
	return pjrt_buffer_wrap(dst, b->type, b->rank, b->dims, t, out);
}

PJRT_IMPL(Buffer_CopyToDevice)
{
	static const char fn[] = "PJRT_Buffer_CopyToDevice";
	PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyToDevice_Args, dst_buffer);
	BUFFER_GET(b, args->buffer, fn);
	PJRT_Error *err;
	pjrt_device_t *dst = pjrt_device_lookup(args->dst_device, b->client);
	if (!dst) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %p is not a device of the buffer's client",
				 fn, (void *)args->dst_device);
	} else {
		pthread_mutex_lock(&b->lock);
		err = copy_to(b, dst, fn, &args->dst_buffer);
		pthread_mutex_unlock(&b->lock);
	}
	BUFFER_PUT(b);
	return err;
}

PJRT_IMPL(Buffer_CopyToMemory)
{
	static const char fn[] = "PJRT_Buffer_CopyToMemory";
	PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyToMemory_Args, dst_buffer);
	BUFFER_GET(b, args->buffer, fn);
	PJRT_Error *err;
	pjrt_device_t *dst = pjrt_memory_lookup(args->dst_memory, b->client);
	if (!dst) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %p is not a memory of the buffer's client",
				 fn, (void *)args->dst_memory);
	} else {
		pthread_mutex_lock(&b->lock);
		err = copy_to(b, dst, fn, &args->dst_buffer);
		pthread_mutex_unlock(&b->lock);
	}
	BUFFER_PUT(b);
	return err;
}

PJRT_IMPL(Buffer_ToHostBuffer)
{
	static const char fn[] = "PJRT_Buffer_ToHostBuffer";
	PJRT_CHECK_ARGS(args, PJRT_Buffer_ToHostBuffer_Args, event);
	BUFFER_GET(b, args->src, fn);
	PJRT_Error *err;
	size_t esize = pjrt_type_size(b->type), span = 0;
	int64_t strides[PJRT_MAX_RANK], dense[PJRT_MAX_RANK];
	void *tmp = NULL;
	if ((err = layout_strides(args->host_layout, b->rank, b->dims, esize, fn, strides, &span)))
		goto out;
	if (!args->dst) {
		args->dst_size = span;
		args->event = NULL;
		goto out;
	}
	if (args->dst_size < span) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				 "%s: dst_size %zu is smaller than the %zu bytes of the %s buffer", fn,
				 args->dst_size, span, pjrt_type_name(b->type));
		goto out;
	}
	pthread_mutex_lock(&b->lock);
	if ((err = unreadable(b, fn))) {
		/* nothing to read */
	} else if (b->nbytes) {
		bool direct = is_dense(b->rank, b->dims, strides, esize);
		bool wide = b->type == PJRT_Buffer_Type_F64; /* the device holds f32 */
		size_t n = b->nbytes / pjrt_device_type_size(b->type);
		if (wide) {
			/* f32 from the device, widened exactly into the dense host array */
			float *f = malloc(b->nbytes);
			tmp = malloc(n * sizeof(double));
			NRT_STATUS st = f && tmp ? nrt_tensor_read(b->tensor, f, 0, b->nbytes) : NRT_RESOURCE;
			if (st == NRT_SUCCESS)
				f32_to_f64(tmp, f, n);
			free(f);
			if (st != NRT_SUCCESS)
				err = pjrt_error(pjrt_code_from_nrt(st), "%s: nrt_tensor_read: %s", fn,
						 nrt_get_status_as_str(st));
			else if (direct)
				memcpy(args->dst, tmp, n * sizeof(double));
		} else {
			void *into = direct ? args->dst : (tmp = malloc(b->nbytes));
			NRT_STATUS st = into ? nrt_tensor_read(b->tensor, into, 0, b->nbytes) : NRT_RESOURCE;
			if (st != NRT_SUCCESS)
				err = pjrt_error(pjrt_code_from_nrt(st), "%s: nrt_tensor_read: %s", fn,
						 nrt_get_status_as_str(st));
		}
		if (!err && !direct) {
			dense_strides(b->rank, b->dims, esize, dense);
			copy_strided(args->dst, strides, tmp, dense, b->rank, b->dims, esize);
		}
	}
	pthread_mutex_unlock(&b->lock);
	if (!err)
		err = pjrt_event_new(0, NULL, &args->event);
out:
	free(tmp);
	BUFFER_PUT(b);
	return err;
}

PJRT_IMPL(Buffer_CopyRawToHost)
{
	static const char fn[] = "PJRT_Buffer_CopyRawToHost";
	PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyRawToHost_Args, event);
	BUFFER_GET(b, args->buffer, fn);
	PJRT_Error *err = NULL;
	pthread_mutex_lock(&b->lock);
	if ((err = unreadable(b, fn))) {
		/* nothing to read */
	} else if (args->offset < 0 || args->transfer_size < 0 ||
		   (uint64_t)args->offset > b->nbytes || (uint64_t)args->transfer_size > b->nbytes - (uint64_t)args->offset) {
		err = pjrt_error(PJRT_Error_Code_OUT_OF_RANGE, "%s: [%lld, +%lld) is outside the %zu-byte buffer",
				 fn, (long long)args->offset, (long long)args->transfer_size, b->nbytes);
	} else if (args->transfer_size && !args->dst) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dst is NULL", fn);
	} else if (args->transfer_size) {
		NRT_STATUS st = nrt_tensor_read(b->tensor, args->dst, (size_t)args->offset, (size_t)args->transfer_size);
		if (st != NRT_SUCCESS)
			err = pjrt_error(pjrt_code_from_nrt(st), "%s: nrt_tensor_read: %s", fn,
					 nrt_get_status_as_str(st));
	}
	pthread_mutex_unlock(&b->lock);
	if (!err)
		err = pjrt_event_new(0, NULL, &args->event);
	BUFFER_PUT(b);
	return err;
}
