/* PJRT devices, device descriptions and memories: one NeuronCore each, with its "device" memory. */
#include <string.h>

#include "nrt/nrt_neuronsim.h"
#include "pjrt_internal.h"

/* Every function here reads one object of a given kind; the handle reference is
 * held for the duration of the call so a concurrent client teardown waits. */
#define WITH_OBJ(kind, handle, fn, body)                                   \
	do {                                                               \
		PJRT_GET(pjrt_device_t, d, kind, handle, fn);              \
		body;                                                      \
		pjrt_handle_put(PJRT_HANDLE(handle));                      \
	} while (0)

PJRT_IMPL(DeviceDescription_Id)
{
	PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Id_Args, id);
	WITH_OBJ(PJRT_KIND_DESCRIPTION, args->device_description, "PJRT_DeviceDescription_Id",
		 args->id = (int)d->index);
	return NULL;
}

PJRT_IMPL(DeviceDescription_ProcessIndex)
{
	PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args, process_index);
	WITH_OBJ(PJRT_KIND_DESCRIPTION, args->device_description, "PJRT_DeviceDescription_ProcessIndex",
		 args->process_index = 0);
	return NULL;
}

PJRT_IMPL(DeviceDescription_Attributes)
{
	PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Attributes_Args, attributes);
	WITH_OBJ(PJRT_KIND_DESCRIPTION, args->device_description, "PJRT_DeviceDescription_Attributes",
		 args->attributes = d->attrs; args->num_attributes = 2);
	return NULL;
}

PJRT_IMPL(DeviceDescription_Kind)
{
	PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Kind_Args, device_kind_size);
	WITH_OBJ(PJRT_KIND_DESCRIPTION, args->device_description, "PJRT_DeviceDescription_Kind",
		 args->device_kind = PJRT_DEVICE_KIND;
		 args->device_kind_size = strlen(PJRT_DEVICE_KIND));
	return NULL;
}

PJRT_IMPL(DeviceDescription_DebugString)
{
	PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_DebugString_Args, debug_string_size);
	WITH_OBJ(PJRT_KIND_DESCRIPTION, args->device_description, "PJRT_DeviceDescription_DebugString",
		 args->debug_string = d->debug; args->debug_string_size = strlen(d->debug));
	return NULL;
}

PJRT_IMPL(DeviceDescription_ToString)
{
	PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_ToString_Args, to_string_size);
	WITH_OBJ(PJRT_KIND_DESCRIPTION, args->device_description, "PJRT_DeviceDescription_ToString",
		 args->to_string = d->str; args->to_string_size = strlen(d->str));
	return NULL;
}

PJRT_IMPL(Device_GetDescription)
{
	PJRT_CHECK_ARGS(args, PJRT_Device_GetDescription_Args, device_description);
	WITH_OBJ(PJRT_KIND_DEVICE, args->device, "PJRT_Device_GetDescription",
		 args->device_description = PJRT_PTR(PJRT_DeviceDescription, d->h_desc));
	return NULL;
}

PJRT_IMPL(Device_IsAddressable)
{
	PJRT_CHECK_ARGS(args, PJRT_Device_IsAddressable_Args, is_addressable);
	WITH_OBJ(PJRT_KIND_DEVICE, args->device, "PJRT_Device_IsAddressable", args->is_addressable = true);
	return NULL;
}

PJRT_IMPL(Device_LocalHardwareId)
{
	PJRT_CHECK_ARGS(args, PJRT_Device_LocalHardwareId_Args, local_hardware_id);
	WITH_OBJ(PJRT_KIND_DEVICE, args->device, "PJRT_Device_LocalHardwareId",
		 args->local_hardware_id = (int)d->index);
	return NULL;
}

PJRT_IMPL(Device_AddressableMemories)
{
	PJRT_CHECK_ARGS(args, PJRT_Device_AddressableMemories_Args, num_memories);
	WITH_OBJ(PJRT_KIND_DEVICE, args->device, "PJRT_Device_AddressableMemories",
		 args->memories = d->memories; args->num_memories = 1);
	return NULL;
}

PJRT_IMPL(Device_DefaultMemory)
{
	PJRT_CHECK_ARGS(args, PJRT_Device_DefaultMemory_Args, memory);
	WITH_OBJ(PJRT_KIND_DEVICE, args->device, "PJRT_Device_DefaultMemory",
		 args->memory = PJRT_PTR(PJRT_Memory, d->h_memory));
	return NULL;
}

PJRT_IMPL(Device_MemoryStats)
{
	PJRT_CHECK_ARGS(args, PJRT_Device_MemoryStats_Args, bytes_in_use);
	nrt_neuronsim_mem_usage_t u;
	NRT_STATUS st = NRT_SUCCESS;
	size_t pooled = 0;
	/* libnrt accounts device memory per process, over all devices; the cores
	 * of a device share its memory, so every core reports the same figures.
	 * The tensors of destroyed buffers that the next execution may take for
	 * its outputs (tensor_pool.c) are the allocator's pool, not in use. */
	WITH_OBJ(PJRT_KIND_DEVICE, args->device, "PJRT_Device_MemoryStats",
		 st = nrt_neuronsim_get_mem_usage(&u); pooled = pjrt_pool_bytes(d->client));
	if (st != NRT_SUCCESS)
		return pjrt_error(pjrt_code_from_nrt(st), "PJRT_Device_MemoryStats: %s",
				  nrt_get_status_as_str(st));
	args->bytes_in_use = (int64_t)(u.in_use > pooled ? u.in_use - pooled : 0);
#define SET(field, value)                                                             \
	do {                                                                          \
		if (PJRT_HAS_FIELD(args, PJRT_Device_MemoryStats_Args, field##_is_set)) { \
			args->field = (value);                                        \
			args->field##_is_set = true;                                  \
		}                                                                     \
	} while (0)
#define UNSET(field)                                                                  \
	do {                                                                          \
		if (PJRT_HAS_FIELD(args, PJRT_Device_MemoryStats_Args, field##_is_set)) \
			args->field##_is_set = false;                                 \
	} while (0)
	SET(peak_bytes_in_use, (int64_t)u.peak);
	UNSET(num_allocs);
	UNSET(largest_alloc_size);
	SET(bytes_limit, (int64_t)u.total);
	UNSET(bytes_reserved);
	UNSET(peak_bytes_reserved);
	UNSET(bytes_reservable_limit);
	UNSET(largest_free_block_bytes);
	SET(pool_bytes, (int64_t)pooled);
	UNSET(peak_pool_bytes);
#undef SET
#undef UNSET
	return NULL;
}

PJRT_IMPL(Memory_Id)
{
	PJRT_CHECK_ARGS(args, PJRT_Memory_Id_Args, id);
	WITH_OBJ(PJRT_KIND_MEMORY, args->memory, "PJRT_Memory_Id", args->id = (int)d->index);
	return NULL;
}

PJRT_IMPL(Memory_Kind)
{
	PJRT_CHECK_ARGS(args, PJRT_Memory_Kind_Args, kind_size);
	WITH_OBJ(PJRT_KIND_MEMORY, args->memory, "PJRT_Memory_Kind",
		 args->kind = PJRT_MEMORY_KIND; args->kind_size = strlen(PJRT_MEMORY_KIND));
	return NULL;
}

PJRT_IMPL(Memory_Kind_Id)
{
	PJRT_CHECK_ARGS(args, PJRT_Memory_Kind_Id_Args, kind_id);
	/* One kind of memory: "device", id 0 as in XLA's own plugins. */
	WITH_OBJ(PJRT_KIND_MEMORY, args->memory, "PJRT_Memory_Kind_Id", args->kind_id = 0);
	return NULL;
}

PJRT_IMPL(Memory_DebugString)
{
	PJRT_CHECK_ARGS(args, PJRT_Memory_DebugString_Args, debug_string_size);
	WITH_OBJ(PJRT_KIND_MEMORY, args->memory, "PJRT_Memory_DebugString",
		 args->debug_string = d->mem_debug; args->debug_string_size = strlen(d->mem_debug));
	return NULL;
}

PJRT_IMPL(Memory_ToString)
{
	PJRT_CHECK_ARGS(args, PJRT_Memory_ToString_Args, to_string_size);
	WITH_OBJ(PJRT_KIND_MEMORY, args->memory, "PJRT_Memory_ToString",
		 args->to_string = d->mem_str; args->to_string_size = strlen(d->mem_str));
	return NULL;
}

PJRT_IMPL(Memory_AddressableByDevices)
{
	PJRT_CHECK_ARGS(args, PJRT_Memory_AddressableByDevices_Args, num_devices);
	WITH_OBJ(PJRT_KIND_MEMORY, args->memory, "PJRT_Memory_AddressableByDevices",
		 args->devices = d->self; args->num_devices = 1);
	return NULL;
}
