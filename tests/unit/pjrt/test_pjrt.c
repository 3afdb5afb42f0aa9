/* Tests of libneuronsim_pjrt through its PJRT C API table, dlopen'ed as a framework does: version, clients, devices, buffers, compile, execute, donation (buffer donors too), f64 and empty arrays, serialization, errors and misuse. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncc/ncc.h"
#include "ncc/ncc_interp.h"
#include "pjrt_test_util.h"

static const char *const add_hlo =
	"HloModule add_mod\n"
	"ENTRY main {\n"
	"  p0 = f32[2,3] parameter(0)\n"
	"  p1 = f32[2,3] parameter(1)\n"
	"  ROOT s = f32[2,3] add(p0, p1)\n"
	"}\n";

/* Output 0 updates parameter 0 in place; output 1 is not aliased. */
static const char *const alias_hlo =
	"HloModule alias_mod, input_output_alias={ {0}: (0, {}, must-alias) }\n"
	"ENTRY main {\n"
	"  p0 = f32[4] parameter(0)\n"
	"  p1 = f32[4] parameter(1)\n"
	"  s = f32[4] add(p0, p1)\n"
	"  m = f32[4] multiply(p0, p1)\n"
	"  ROOT t = (f32[4], f32[4]) tuple(s, m)\n"
	"}\n";

/* 0/0 is NaN: the runtime names the instruction. */
static const char *const nan_hlo =
	"HloModule nan_mod\n"
	"ENTRY main {\n"
	"  p0 = f32[4] parameter(0)\n"
	"  ROOT nan_here = f32[4] divide(p0, p0)\n"
	"}\n";

/* ------------------------------------------------------------- version */

START_TEST(test_version_and_struct_sizes)
{
	const PJRT_Api *api = API;
	ck_assert_uint_eq(api->struct_size, PJRT_Api_STRUCT_SIZE);
	ck_assert_int_eq(api->pjrt_api_version.major_version, 0);
	ck_assert_int_eq(api->pjrt_api_version.minor_version, 75);
	ck_assert_uint_eq(api->pjrt_api_version.struct_size, PJRT_Api_Version_STRUCT_SIZE);
	/* The framework reads the table and args by offset: these are the sizes
	 * of OpenXLA's own header at version 0.75 on x86-64. */
	ck_assert_uint_eq(sizeof(PJRT_Api), 960);
	ck_assert_uint_eq(PJRT_Api_STRUCT_SIZE, 960);
	ck_assert_uint_eq(offsetof(PJRT_Api, PJRT_Client_BufferFromHostBuffer), 216);
	ck_assert_uint_eq(offsetof(PJRT_Api, PJRT_TopologyDescription_Deserialize), 952);
	ck_assert_uint_eq(PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, 120);
	ck_assert_uint_eq(PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, 80);
	ck_assert_uint_eq(PJRT_ExecuteOptions_STRUCT_SIZE, 80);
	ck_assert_uint_eq(PJRT_Client_Create_Args_STRUCT_SIZE, 88);
	ck_assert_uint_eq(PJRT_Device_MemoryStats_Args_STRUCT_SIZE, 185);
	ck_assert_uint_eq(PJRT_Buffer_MemoryLayout_STRUCT_SIZE, 76);
	ck_assert_uint_eq(PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE, 112);
	/* Every member is set. */
	const void *const *fns = (const void *const *)&api->PJRT_Error_Destroy;
	size_t n = (PJRT_Api_STRUCT_SIZE - offsetof(PJRT_Api, PJRT_Error_Destroy)) / sizeof(void *);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(fns[i] != NULL, "PJRT_Api member %zu is NULL", i);
}
END_TEST

START_TEST(test_plugin_attributes)
{
	PJRT_Plugin_Attributes_Args a = { .struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE };
	T_OK(API->PJRT_Plugin_Attributes(&a));
	ck_assert_uint_ge(a.num_attributes, 1);
	bool found = false;
	for (size_t i = 0; i < a.num_attributes; i++)
		found = found || (a.attributes[i].name_size == strlen("neuronsim_version") &&
				  memcmp(a.attributes[i].name, "neuronsim_version", a.attributes[i].name_size) == 0);
	ck_assert(found);
}
END_TEST

/* -------------------------------------------------------------- clients */

START_TEST(test_client_create_destroy)
{
	/* Options the plugin does not know are ignored. */
	int64_t list[2] = { 1, 2 };
	PJRT_NamedValue opts[2] = {
		{ .struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "some_option", .name_size = 11,
		  .type = PJRT_NamedValue_kInt64List, .int64_array_value = list, .value_size = 2 },
		{ .struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "other", .name_size = 5,
		  .type = PJRT_NamedValue_kString, .string_value = "x", .value_size = 1 },
	};
	PJRT_Client_Create_Args a = { .struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
				      .create_options = opts, .num_options = 2 };
	T_OK(API->PJRT_Client_Create(&a));
	PJRT_Client *c = a.client;
	PJRT_Client_PlatformName_Args pn = { .struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE, .client = c };
	T_OK(API->PJRT_Client_PlatformName(&pn));
	ck_assert_uint_eq(pn.platform_name_size, 9);
	ck_assert(memcmp(pn.platform_name, "neuronsim", 9) == 0);
	PJRT_Client_PlatformVersion_Args pv = { .struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE,
						.client = c };
	T_OK(API->PJRT_Client_PlatformVersion(&pv));
	ck_assert(strstr(pv.platform_version, "neuronsim") != NULL);
	PJRT_Client_ProcessIndex_Args pi = { .struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE,
					     .client = c, .process_index = 7 };
	T_OK(API->PJRT_Client_ProcessIndex(&pi));
	ck_assert_int_eq(pi.process_index, 0);
	/* No topology: UNIMPLEMENTED, which the framework tolerates. */
	PJRT_Client_TopologyDescription_Args td = { .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE,
						    .client = c };
	T_FAIL(API->PJRT_Client_TopologyDescription(&td), PJRT_Error_Code_UNIMPLEMENTED,
	       "PJRT_Client_TopologyDescription");
	T_client_destroy(c);
	/* A second client after the first is gone, and two at once. */
	PJRT_Client *c1 = T_client(), *c2 = T_client();
	T_client_destroy(c1);
	T_client_destroy(c2);
	/* A runtime that cannot start: the error says where to look. */
	setenv("NEURON_RT_VISIBLE_CORES", "999", 1);
	PJRT_Client_Create_Args bad = { .struct_size = PJRT_Client_Create_Args_STRUCT_SIZE };
	T_FAIL(API->PJRT_Client_Create(&bad), PJRT_Error_Code_INVALID_ARGUMENT, "nrt_init failed");
	ck_assert_ptr_null(bad.client);
	setenv("NEURON_RT_VISIBLE_CORES", "0-3", 1);
	T_client_destroy(T_client());
}
END_TEST

START_TEST(test_devices_and_memories)
{
	setenv("NEURON_RT_VISIBLE_CORES", "1-2", 1);
	PJRT_Client *c = T_client();
	PJRT_Client_Devices_Args da = { .struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c };
	T_OK(API->PJRT_Client_Devices(&da));
	ck_assert_uint_eq(da.num_devices, 2);
	PJRT_Device *const *devs;
	ck_assert_uint_eq(T_devices(c, &devs), 2);
	PJRT_Client_AddressableMemories_Args ma = { .struct_size = PJRT_Client_AddressableMemories_Args_STRUCT_SIZE,
						    .client = c };
	T_OK(API->PJRT_Client_AddressableMemories(&ma));
	ck_assert_uint_eq(ma.num_addressable_memories, 2);
	for (int i = 0; i < 2; i++) {
		PJRT_Device *d = devs[i];
		ck_assert_ptr_eq(d, da.devices[i]);
		PJRT_Device_GetDescription_Args g = { .struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE,
						      .device = d };
		T_OK(API->PJRT_Device_GetDescription(&g));
		PJRT_DeviceDescription_Id_Args id = { .struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
						      .device_description = g.device_description };
		T_OK(API->PJRT_DeviceDescription_Id(&id));
		ck_assert_int_eq(id.id, i);
		PJRT_DeviceDescription_ProcessIndex_Args dp = {
			.struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE,
			.device_description = g.device_description };
		T_OK(API->PJRT_DeviceDescription_ProcessIndex(&dp));
		ck_assert_int_eq(dp.process_index, 0);
		PJRT_DeviceDescription_Kind_Args k = { .struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE,
						       .device_description = g.device_description };
		T_OK(API->PJRT_DeviceDescription_Kind(&k));
		ck_assert(k.device_kind_size == 13 && memcmp(k.device_kind, "NeuronCore-v2", 13) == 0);
		PJRT_DeviceDescription_DebugString_Args ds = {
			.struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE,
			.device_description = g.device_description };
		T_OK(API->PJRT_DeviceDescription_DebugString(&ds));
		ck_assert(ds.debug_string_size > 0);
		PJRT_DeviceDescription_ToString_Args ts = {
			.struct_size = PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE,
			.device_description = g.device_description };
		T_OK(API->PJRT_DeviceDescription_ToString(&ts));
		ck_assert(strstr(ts.to_string, "NeuronCore") != NULL);
		PJRT_DeviceDescription_Attributes_Args at = {
			.struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE,
			.device_description = g.device_description };
		T_OK(API->PJRT_DeviceDescription_Attributes(&at));
		ck_assert_uint_ge(at.num_attributes, 1);
		ck_assert_int_eq(at.attributes[0].type, PJRT_NamedValue_kInt64);
		ck_assert_int_eq(at.attributes[0].int64_value, i);
		PJRT_Device_IsAddressable_Args ad = { .struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE,
						      .device = d };
		T_OK(API->PJRT_Device_IsAddressable(&ad));
		ck_assert(ad.is_addressable);
		PJRT_Device_LocalHardwareId_Args lh = { .struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE,
							.device = d };
		T_OK(API->PJRT_Device_LocalHardwareId(&lh));
		ck_assert_int_eq(lh.local_hardware_id, i);
		PJRT_Client_LookupDevice_Args ld = { .struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
						     .client = c, .id = i };
		T_OK(API->PJRT_Client_LookupDevice(&ld));
		ck_assert_ptr_eq(ld.device, d);
		PJRT_Client_LookupAddressableDevice_Args la = {
			.struct_size = PJRT_Client_LookupAddressableDevice_Args_STRUCT_SIZE, .client = c,
			.local_hardware_id = i };
		T_OK(API->PJRT_Client_LookupAddressableDevice(&la));
		ck_assert_ptr_eq(la.addressable_device, d);
		/* The one "device" memory, the default one, addressable by d only. */
		PJRT_Device_AddressableMemories_Args am = {
			.struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = d };
		T_OK(API->PJRT_Device_AddressableMemories(&am));
		ck_assert_uint_eq(am.num_memories, 1);
		PJRT_Device_DefaultMemory_Args dm = { .struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
						      .device = d };
		T_OK(API->PJRT_Device_DefaultMemory(&dm));
		ck_assert_ptr_eq(dm.memory, am.memories[0]);
		ck_assert_ptr_eq(dm.memory, ma.addressable_memories[i]);
		PJRT_Memory_Kind_Args mk = { .struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE, .memory = dm.memory };
		T_OK(API->PJRT_Memory_Kind(&mk));
		ck_assert(mk.kind_size == 6 && memcmp(mk.kind, "device", 6) == 0);
		PJRT_Memory_Kind_Id_Args mki = { .struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE,
						 .memory = dm.memory, .kind_id = 9 };
		T_OK(API->PJRT_Memory_Kind_Id(&mki));
		ck_assert_int_eq(mki.kind_id, 0);
		PJRT_Memory_Id_Args mid = { .struct_size = PJRT_Memory_Id_Args_STRUCT_SIZE, .memory = dm.memory };
		T_OK(API->PJRT_Memory_Id(&mid));
		ck_assert_int_eq(mid.id, i);
		PJRT_Memory_DebugString_Args mds = { .struct_size = PJRT_Memory_DebugString_Args_STRUCT_SIZE,
						     .memory = dm.memory };
		T_OK(API->PJRT_Memory_DebugString(&mds));
		ck_assert(mds.debug_string_size > 0);
		PJRT_Memory_ToString_Args mts = { .struct_size = PJRT_Memory_ToString_Args_STRUCT_SIZE,
						  .memory = dm.memory };
		T_OK(API->PJRT_Memory_ToString(&mts));
		ck_assert(mts.to_string_size > 0);
		PJRT_Memory_AddressableByDevices_Args mb = {
			.struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE, .memory = dm.memory };
		T_OK(API->PJRT_Memory_AddressableByDevices(&mb));
		ck_assert_uint_eq(mb.num_devices, 1);
		ck_assert_ptr_eq(mb.devices[0], d);
		PJRT_Device_MemoryStats_Args ms = { .struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE,
						    .device = d };
		T_OK(API->PJRT_Device_MemoryStats(&ms));
		ck_assert(ms.bytes_limit_is_set && ms.bytes_limit > 0);
		ck_assert(ms.peak_bytes_in_use_is_set);
		ck_assert(!ms.num_allocs_is_set);
	}
	PJRT_Client_LookupDevice_Args bad = { .struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
					      .client = c, .id = 2 };
	T_FAIL(API->PJRT_Client_LookupDevice(&bad), PJRT_Error_Code_NOT_FOUND, "id 2");
	int assign[4] = { -1, -1, -1, -1 };
	PJRT_Client_DefaultDeviceAssignment_Args dda = {
		.struct_size = PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE, .client = c, .num_replicas = 2,
		.num_partitions = 1, .default_assignment_size = 4, .default_assignment = assign };
	T_OK(API->PJRT_Client_DefaultDeviceAssignment(&dda));
	ck_assert(assign[0] == 0 && assign[1] == 1 && assign[2] == -1);
	dda.num_replicas = 3;
	T_FAIL(API->PJRT_Client_DefaultDeviceAssignment(&dda), PJRT_Error_Code_INVALID_ARGUMENT, "visible");
	T_client_destroy(c);
}
END_TEST

/* -------------------------------------------------------------- buffers */

static const PJRT_Buffer_Type all_types[] = {
	PJRT_Buffer_Type_F32, PJRT_Buffer_Type_BF16, PJRT_Buffer_Type_F16, PJRT_Buffer_Type_S32,
	PJRT_Buffer_Type_S64, PJRT_Buffer_Type_U32, PJRT_Buffer_Type_U64, PJRT_Buffer_Type_U8,
	PJRT_Buffer_Type_S8, PJRT_Buffer_Type_S16, PJRT_Buffer_Type_U16, PJRT_Buffer_Type_PRED,
	PJRT_Buffer_Type_F64, PJRT_Buffer_Type_C64, PJRT_Buffer_Type_C128, PJRT_Buffer_Type_F8E4M3FN,
};
static const size_t type_bytes[] = { 4, 2, 2, 4, 8, 4, 8, 1, 1, 2, 2, 1, 8, 8, 16, 1 };

START_TEST(test_buffer_round_trip_every_type)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	int64_t dims[3] = { 2, 3, 5 };
	for (size_t t = 0; t < sizeof(all_types) / sizeof(all_types[0]); t++) {
		size_t n = 30 * type_bytes[t];
		uint8_t src[30 * 16], dst[30 * 16];
		for (size_t i = 0; i < n; i++)
			src[i] = all_types[t] == PJRT_Buffer_Type_PRED ? (uint8_t)(i % 2) : (uint8_t)(i * 7 + t);
		memset(dst, 0xee, sizeof(dst));
		PJRT_Buffer *b = T_buffer(c, devs[0], all_types[t], dims, 3, src, NULL);
		PJRT_Buffer_ElementType_Args et = { .struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE, .buffer = b };
		T_OK(API->PJRT_Buffer_ElementType(&et));
		ck_assert_int_eq(et.type, all_types[t]);
		PJRT_Buffer_Dimensions_Args dm = { .struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE, .buffer = b };
		T_OK(API->PJRT_Buffer_Dimensions(&dm));
		ck_assert(dm.num_dims == 3 && dm.dims[0] == 2 && dm.dims[1] == 3 && dm.dims[2] == 5);
		PJRT_Buffer_UnpaddedDimensions_Args ud = { .struct_size = PJRT_Buffer_UnpaddedDimensions_Args_STRUCT_SIZE,
							   .buffer = b };
		T_OK(API->PJRT_Buffer_UnpaddedDimensions(&ud));
		ck_assert(ud.num_dims == 3 && ud.unpadded_dims[2] == 5);
		PJRT_Buffer_DynamicDimensionIndices_Args dd = {
			.struct_size = PJRT_Buffer_DynamicDimensionIndices_Args_STRUCT_SIZE, .buffer = b };
		T_OK(API->PJRT_Buffer_DynamicDimensionIndices(&dd));
		ck_assert_uint_eq(dd.num_dynamic_dims, 0);
		PJRT_Buffer_OnDeviceSizeInBytes_Args os = {
			.struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE, .buffer = b };
		T_OK(API->PJRT_Buffer_OnDeviceSizeInBytes(&os));
		/* f64 is held as f32 on the device */
		bool f64 = all_types[t] == PJRT_Buffer_Type_F64;
		ck_assert_uint_eq(os.on_device_size_in_bytes, f64 ? n / 2 : n);
		PJRT_Buffer_GetMemoryLayout_Args ml = { .struct_size = PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE,
							.buffer = b };
		T_OK(API->PJRT_Buffer_GetMemoryLayout(&ml));
		ck_assert_int_eq(ml.layout.type, PJRT_Buffer_MemoryLayout_Type_Tiled);
		ck_assert_uint_eq(ml.layout.tiled.minor_to_major_size, 3);
		ck_assert(ml.layout.tiled.minor_to_major[0] == 2 && ml.layout.tiled.minor_to_major[2] == 0);
		PJRT_Buffer_IsOnCpu_Args oc = { .struct_size = PJRT_Buffer_IsOnCpu_Args_STRUCT_SIZE, .buffer = b };
		T_OK(API->PJRT_Buffer_IsOnCpu(&oc));
		ck_assert(!oc.is_on_cpu);
		ck_assert_uint_eq(T_to_host(b, dst, sizeof(dst)), n);
		if (f64) {
			/* what the device keeps of an f64: its value rounded to f32 */
			for (size_t i = 0; i < 30; i++) {
				double x, y;
				memcpy(&x, src + 8 * i, 8);
				memcpy(&y, dst + 8 * i, 8);
				ck_assert_msg(isnan(x) ? isnan(y) : y == (double)(float)x, "f64 %zu: %g -> %g", i, x, y);
			}
		} else {
			ck_assert_msg(memcmp(src, dst, n) == 0, "type %d does not round-trip", (int)all_types[t]);
		}
		T_buffer_destroy(b);
	}
	T_client_destroy(c);
}
END_TEST

START_TEST(test_buffer_strided_and_layouts)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	/* A column-major 3x4 host array: element (i, j) at i + 3j. */
	float colmajor[12], rowmajor[12], back[12];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++) {
			colmajor[i + 3 * j] = (float)(10 * i + j);
			rowmajor[4 * i + j] = (float)(10 * i + j);
		}
	int64_t dims[2] = { 3, 4 };
	int64_t strides[2] = { 4, 12 };
	PJRT_Buffer *b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, colmajor, strides);
	T_to_host(b, back, sizeof(back));
	ck_assert(memcmp(back, rowmajor, sizeof(back)) == 0);
	/* Back out in column-major order through a Tiled layout {0, 1}. */
	int64_t m2m[2] = { 0, 1 };
	PJRT_Buffer_MemoryLayout lay = { .type = PJRT_Buffer_MemoryLayout_Type_Tiled };
	lay.tiled.minor_to_major = m2m;
	lay.tiled.minor_to_major_size = 2;
	PJRT_Buffer_ToHostBuffer_Args th = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					     .host_layout = &lay, .dst = back, .dst_size = sizeof(back) };
	T_OK(API->PJRT_Buffer_ToHostBuffer(&th));
	PJRT_Event_Destroy_Args ed = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = th.event };
	T_OK(API->PJRT_Event_Destroy(&ed));
	ck_assert(memcmp(back, colmajor, sizeof(back)) == 0);
	/* And through byte strides with padding: rows of 6 floats. */
	float padded[18];
	memset(padded, 0, sizeof(padded));
	int64_t pstrides[2] = { 24, 4 };
	PJRT_Buffer_MemoryLayout slay = { .type = PJRT_Buffer_MemoryLayout_Type_Strides };
	slay.strides.byte_strides = pstrides;
	slay.strides.num_byte_strides = 2;
	PJRT_Buffer_ToHostBuffer_Args q = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					    .host_layout = &slay };
	T_OK(API->PJRT_Buffer_ToHostBuffer(&q));
	ck_assert_uint_eq(q.dst_size, 2 * 24 + 4 * 4);
	th = (PJRT_Buffer_ToHostBuffer_Args){ .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					      .host_layout = &slay, .dst = padded, .dst_size = sizeof(padded) };
	T_OK(API->PJRT_Buffer_ToHostBuffer(&th));
	ed.event = th.event;
	T_OK(API->PJRT_Event_Destroy(&ed));
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 6; j++)
			ck_assert(padded[6 * i + j] == (j < 4 ? (float)(10 * i + j) : 0.0f));
	/* A destination too small, tiles, a bad permutation. */
	th.dst_size = sizeof(padded) - 20;
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_INVALID_ARGUMENT, "dst_size");
	int64_t tile[2] = { 8, 128 };
	size_t tile_sizes[1] = { 2 };
	lay.tiled.tile_dims = tile;
	lay.tiled.tile_dim_sizes = tile_sizes;
	lay.tiled.num_tiles = 1;
	th = (PJRT_Buffer_ToHostBuffer_Args){ .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					      .host_layout = &lay, .dst = back, .dst_size = sizeof(back) };
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_UNIMPLEMENTED, "tiled");
	int64_t bad_m2m[2] = { 1, 1 };
	lay.tiled.num_tiles = 0;
	lay.tiled.minor_to_major = bad_m2m;
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_INVALID_ARGUMENT, "permutation");
	T_buffer_destroy(b);
	/* Negative strides: data points at the last row, rows go backwards. */
	int64_t neg[2] = { -16, 4 };
	b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, rowmajor + 8, neg);
	T_to_host(b, back, sizeof(back));
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			ck_assert(back[4 * i + j] == rowmajor[4 * (2 - i) + j]);
	T_buffer_destroy(b);
	/* A wrong stride count is refused. */
	PJRT_Client_BufferFromHostBuffer_Args bad = {
		.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c, .data = rowmajor,
		.type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 2, .byte_strides = strides,
		.num_byte_strides = 1, .device = devs[0] };
	T_FAIL(API->PJRT_Client_BufferFromHostBuffer(&bad), PJRT_Error_Code_INVALID_ARGUMENT, "strides");
	T_client_destroy(c);
}
END_TEST

START_TEST(test_buffer_zero_sized)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	int64_t dims[2] = { 0, 3 };
	PJRT_Buffer *b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, NULL, NULL);
	uint8_t dst[4];
	ck_assert_uint_eq(T_to_host(b, dst, 0), 0);
	PJRT_Buffer_OnDeviceSizeInBytes_Args os = { .struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE,
						    .buffer = b };
	T_OK(API->PJRT_Buffer_OnDeviceSizeInBytes(&os));
	ck_assert_uint_eq(os.on_device_size_in_bytes, 0);
	PJRT_Buffer_CopyToDevice_Args cd = { .struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE, .buffer = b,
					     .dst_device = devs[1] };
	T_OK(API->PJRT_Buffer_CopyToDevice(&cd));
	T_buffer_destroy(cd.dst_buffer);
	PJRT_Buffer_Delete_Args del = { .struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b };
	T_OK(API->PJRT_Buffer_Delete(&del));
	ck_assert(T_is_deleted(b));
	T_buffer_destroy(b);
	/* A scalar. */
	double x = 2.5, y = 0;
	b = T_buffer(c, devs[0], PJRT_Buffer_Type_F64, NULL, 0, &x, NULL);
	ck_assert_uint_eq(T_to_host(b, &y, sizeof(y)), 8);
	ck_assert(y == 2.5);
	T_buffer_destroy(b);
	T_client_destroy(c);
}
END_TEST

static void on_ready(PJRT_Error *e, void *arg)
{
	ck_assert_ptr_null(e);
	(*(int *)arg)++;
}

START_TEST(test_buffer_copies_delete_and_events)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	ck_assert_uint_ge(T_devices(c, &devs), 2);
	int32_t v[6] = { 1, 2, 3, 4, 5, 6 }, w[6];
	int64_t dims[1] = { 6 };
	PJRT_Buffer *b = T_buffer(c, devs[0], PJRT_Buffer_Type_S32, dims, 1, v, NULL);
	/* To another core and to the same core, by device and by memory. */
	PJRT_Buffer_CopyToDevice_Args cd = { .struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE, .buffer = b,
					     .dst_device = devs[1] };
	T_OK(API->PJRT_Buffer_CopyToDevice(&cd));
	PJRT_Buffer_Device_Args bd = { .struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = cd.dst_buffer };
	T_OK(API->PJRT_Buffer_Device(&bd));
	ck_assert_ptr_eq(bd.device, devs[1]);
	memset(w, 0, sizeof(w));
	T_to_host(cd.dst_buffer, w, sizeof(w));
	ck_assert(memcmp(v, w, sizeof(v)) == 0);
	PJRT_Device_DefaultMemory_Args dm = { .struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
					      .device = devs[0] };
	T_OK(API->PJRT_Device_DefaultMemory(&dm));
	PJRT_Buffer_CopyToMemory_Args cm = { .struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE,
					     .buffer = cd.dst_buffer, .dst_memory = dm.memory };
	T_OK(API->PJRT_Buffer_CopyToMemory(&cm));
	PJRT_Buffer_Memory_Args bm = { .struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE, .buffer = cm.dst_buffer };
	T_OK(API->PJRT_Buffer_Memory(&bm));
	ck_assert_ptr_eq(bm.memory, dm.memory);
	memset(w, 0, sizeof(w));
	T_to_host(cm.dst_buffer, w, sizeof(w));
	ck_assert(memcmp(v, w, sizeof(v)) == 0);
	/* Raw reads. */
	int32_t part[2];
	PJRT_Buffer_CopyRawToHost_Args raw = { .struct_size = PJRT_Buffer_CopyRawToHost_Args_STRUCT_SIZE,
					       .buffer = b, .dst = part, .offset = 8, .transfer_size = 8 };
	T_OK(API->PJRT_Buffer_CopyRawToHost(&raw));
	PJRT_Event_Destroy_Args ed = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = raw.event };
	T_OK(API->PJRT_Event_Destroy(&ed));
	ck_assert(part[0] == 3 && part[1] == 4);
	raw.offset = 20;
	T_FAIL(API->PJRT_Buffer_CopyRawToHost(&raw), PJRT_Error_Code_OUT_OF_RANGE, NULL);
	/* Events are born ready; OnReady calls back at once with no error. */
	PJRT_Buffer_ReadyEvent_Args re = { .struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE, .buffer = b };
	T_OK(API->PJRT_Buffer_ReadyEvent(&re));
	PJRT_Event_IsReady_Args ir = { .struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE, .event = re.event };
	T_OK(API->PJRT_Event_IsReady(&ir));
	ck_assert(ir.is_ready);
	PJRT_Event_Error_Args ee = { .struct_size = PJRT_Event_Error_Args_STRUCT_SIZE, .event = re.event };
	T_OK(API->PJRT_Event_Error(&ee));
	int called = 0;
	PJRT_Event_OnReady_Args on = { .struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE, .event = re.event,
				       .callback = NULL, .user_arg = &called };
	T_FAIL(API->PJRT_Event_OnReady(&on), PJRT_Error_Code_INVALID_ARGUMENT, "callback");
	on.callback = on_ready;
	T_OK(API->PJRT_Event_OnReady(&on));
	ck_assert_int_eq(called, 1);
	ed.event = re.event;
	T_OK(API->PJRT_Event_Destroy(&ed));
	T_FAIL(API->PJRT_Event_Destroy(&ed), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Event");
	/* Delete keeps the handle, drops the bytes. */
	PJRT_Buffer_Delete_Args del = { .struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b };
	T_OK(API->PJRT_Buffer_Delete(&del));
	ck_assert(T_is_deleted(b));
	PJRT_Buffer_ToHostBuffer_Args th = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					     .dst = w, .dst_size = sizeof(w) };
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
	cd.dst_device = devs[1];
	T_FAIL(API->PJRT_Buffer_CopyToDevice(&cd), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
	T_buffer_destroy(b);
	T_buffer_destroy(cd.dst_buffer);
	T_buffer_destroy(cm.dst_buffer);
	/* Uninitialised buffers read as zeros. */
	PJRT_Client_CreateUninitializedBuffer_Args ub = {
		.struct_size = PJRT_Client_CreateUninitializedBuffer_Args_STRUCT_SIZE, .client = c, .shape_dims = dims,
		.shape_num_dims = 1, .shape_element_type = PJRT_Buffer_Type_S32, .memory = dm.memory };
	T_OK(API->PJRT_Client_CreateUninitializedBuffer(&ub));
	memset(w, 0x55, sizeof(w));
	T_to_host(ub.buffer, w, sizeof(w));
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(w[i], 0);
	T_buffer_destroy(ub.buffer);
	T_client_destroy(c);
}
END_TEST

/* ------------------------------------------------------ compile, execute */

static PJRT_Executable *exec_of(PJRT_LoadedExecutable *le)
{
	return T_executable(le);
}

START_TEST(test_compile_and_execute_add)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, add_hlo);
	PJRT_Executable *e = exec_of(le);
	PJRT_Executable_Name_Args nm = { .struct_size = PJRT_Executable_Name_Args_STRUCT_SIZE, .executable = e };
	T_OK(API->PJRT_Executable_Name(&nm));
	ck_assert(nm.executable_name_size == 7 && memcmp(nm.executable_name, "add_mod", 7) == 0);
	PJRT_Executable_NumReplicas_Args nr = { .struct_size = PJRT_Executable_NumReplicas_Args_STRUCT_SIZE,
						.executable = e };
	T_OK(API->PJRT_Executable_NumReplicas(&nr));
	ck_assert_uint_eq(nr.num_replicas, 1);
	PJRT_Executable_NumPartitions_Args np = { .struct_size = PJRT_Executable_NumPartitions_Args_STRUCT_SIZE,
						  .executable = e };
	T_OK(API->PJRT_Executable_NumPartitions(&np));
	ck_assert_uint_eq(np.num_partitions, 1);
	ck_assert_uint_eq(T_num_outputs(le), 1);
	PJRT_Executable_OutputElementTypes_Args ot = { .struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE,
						       .executable = e };
	T_OK(API->PJRT_Executable_OutputElementTypes(&ot));
	ck_assert(ot.num_output_types == 1 && ot.output_types[0] == PJRT_Buffer_Type_F32);
	PJRT_Executable_OutputDimensions_Args od = { .struct_size = PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE,
						     .executable = e };
	T_OK(API->PJRT_Executable_OutputDimensions(&od));
	ck_assert(od.num_outputs == 1 && od.dim_sizes[0] == 2 && od.dims[0] == 2 && od.dims[1] == 3);
	PJRT_Executable_OutputMemoryKinds_Args mk = { .struct_size = PJRT_Executable_OutputMemoryKinds_Args_STRUCT_SIZE,
						      .executable = e };
	T_OK(API->PJRT_Executable_OutputMemoryKinds(&mk));
	ck_assert(mk.num_outputs == 1 && mk.memory_kind_sizes[0] == 6);
	PJRT_Executable_SizeOfGeneratedCodeInBytes_Args sz = {
		.struct_size = PJRT_Executable_SizeOfGeneratedCodeInBytes_Args_STRUCT_SIZE, .executable = e };
	T_OK(API->PJRT_Executable_SizeOfGeneratedCodeInBytes(&sz));
	ck_assert_int_gt(sz.size_in_bytes, 64);
	PJRT_Executable_GetCostAnalysis_Args ca = { .struct_size = PJRT_Executable_GetCostAnalysis_Args_STRUCT_SIZE,
						    .executable = e };
	T_OK(API->PJRT_Executable_GetCostAnalysis(&ca));
	ck_assert_uint_eq(ca.num_properties, 0);
	PJRT_Executable_GetCompiledMemoryStats_Args cm = {
		.struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE, .executable = e };
	T_OK(API->PJRT_Executable_GetCompiledMemoryStats(&cm));
	ck_assert_int_eq(cm.argument_size_in_bytes, 48);
	ck_assert_int_eq(cm.output_size_in_bytes, 24);
	PJRT_Executable_Fingerprint_Args fp = { .struct_size = PJRT_Executable_Fingerprint_Args_STRUCT_SIZE,
						.executable = e };
	T_OK(API->PJRT_Executable_Fingerprint(&fp));
	ck_assert_uint_eq(fp.executable_fingerprint_size, 32);
	PJRT_LoadedExecutable_Fingerprint_Args lfp = { .struct_size = PJRT_LoadedExecutable_Fingerprint_Args_STRUCT_SIZE,
						       .executable = le };
	T_OK(API->PJRT_LoadedExecutable_Fingerprint(&lfp));
	ck_assert(memcmp(fp.executable_fingerprint, lfp.executable_fingerprint, 32) == 0);
	/* OptimizedProgram: size query, then the text back. */
	PJRT_Program prog = { .struct_size = PJRT_Program_STRUCT_SIZE };
	PJRT_Executable_OptimizedProgram_Args op = { .struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE,
						     .executable = e, .program = &prog };
	T_OK(API->PJRT_Executable_OptimizedProgram(&op));
	ck_assert_uint_eq(prog.code_size, strlen(add_hlo));
	char text[512];
	prog.code = text;
	T_OK(API->PJRT_Executable_OptimizedProgram(&op));
	ck_assert(prog.format_size == 8 && memcmp(prog.format, "hlo_text", 8) == 0);
	ck_assert(memcmp(text, add_hlo, strlen(add_hlo)) == 0);
	prog.code_size = 3;
	T_FAIL(API->PJRT_Executable_OptimizedProgram(&op), PJRT_Error_Code_INVALID_ARGUMENT, "code_size");
	PJRT_LoadedExecutable_AddressableDevices_Args lad = {
		.struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = le };
	T_OK(API->PJRT_LoadedExecutable_AddressableDevices(&lad));
	ck_assert(lad.num_addressable_devices == 1 && lad.addressable_devices[0] == devs[0]);

	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 10, 20, 30, 40, 50, 60 }, r[6];
	int64_t dims[2] = { 2, 3 };
	PJRT_Buffer *args[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, a, NULL),
				 T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, b, NULL) };
	PJRT_Buffer *out[1] = { NULL };
	/* Run through the executable's own device list (execute_device NULL). */
	T_OK(T_execute(le, NULL, args, 2, out, NULL, 0));
	T_to_host(out[0], r, sizeof(r));
	for (int i = 0; i < 6; i++)
		ck_assert(r[i] == a[i] + b[i]);
	T_buffer_destroy(out[0]);
	/* On another core, as PyTorch/XLA does (execute_device set): the NEFF is
	 * loaded there on first use; arguments must live there. */
	T_FAIL(T_execute(le, devs[1], args, 2, out, NULL, 0), PJRT_Error_Code_INVALID_ARGUMENT, "NeuronCore 0");
	PJRT_Buffer *args1[2] = { T_buffer(c, devs[1], PJRT_Buffer_Type_F32, dims, 2, b, NULL),
				  T_buffer(c, devs[1], PJRT_Buffer_Type_F32, dims, 2, b, NULL) };
	T_OK(T_execute(le, devs[1], args1, 2, out, NULL, 0));
	T_to_host(out[0], r, sizeof(r));
	for (int i = 0; i < 6; i++)
		ck_assert(r[i] == 2 * b[i]);
	T_buffer_destroy(out[0]);
	/* Argument errors. */
	T_FAIL(T_execute(le, NULL, args, 1, out, NULL, 0), PJRT_Error_Code_INVALID_ARGUMENT, "takes 2 arguments");
	int64_t other[2] = { 3, 2 };
	PJRT_Buffer *wrong = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, other, 2, a, NULL);
	PJRT_Buffer *bad[2] = { args[0], wrong };
	T_FAIL(T_execute(le, NULL, bad, 2, out, NULL, 0), PJRT_Error_Code_INVALID_ARGUMENT, "f32[3,2]");
	T_buffer_destroy(wrong);
	T_FAIL(T_execute(le, NULL, bad, 2, out, NULL, 0), PJRT_Error_Code_INVALID_ARGUMENT, "not a live PJRT_Buffer");
	/* A deleted executable refuses to run. */
	PJRT_LoadedExecutable_Delete_Args ld = { .struct_size = PJRT_LoadedExecutable_Delete_Args_STRUCT_SIZE,
						 .executable = le };
	T_OK(API->PJRT_LoadedExecutable_Delete(&ld));
	PJRT_LoadedExecutable_IsDeleted_Args lid = { .struct_size = PJRT_LoadedExecutable_IsDeleted_Args_STRUCT_SIZE,
						     .executable = le };
	T_OK(API->PJRT_LoadedExecutable_IsDeleted(&lid));
	ck_assert(lid.is_deleted);
	T_FAIL(T_execute(le, NULL, args, 2, out, NULL, 0), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
	for (int i = 0; i < 2; i++) {
		T_buffer_destroy(args[i]);
		T_buffer_destroy(args1[i]);
	}
	T_loaded_destroy(le);
	/* The PJRT_Executable outlives its loaded executable. */
	T_OK(API->PJRT_Executable_Name(&nm));
	T_executable_destroy(e);
	T_client_destroy(c);
}
END_TEST

START_TEST(test_compile_replicated)
{
	setenv("NEURON_RT_VISIBLE_CORES", "0-2", 1);
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	ck_assert_uint_eq(T_devices(c, &devs), 3);
	PJRT_Error *err;
	PJRT_LoadedExecutable *le = T_compile(c, "hlo_text", add_hlo, strlen(add_hlo), 3, &err);
	T_OK(err);
	PJRT_LoadedExecutable_AddressableDevices_Args lad = {
		.struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = le };
	T_OK(API->PJRT_LoadedExecutable_AddressableDevices(&lad));
	ck_assert_uint_eq(lad.num_addressable_devices, 3);
	float a[6] = { 1, 2, 3, 4, 5, 6 }, r[6];
	int64_t dims[2] = { 2, 3 };
	PJRT_Buffer *bufs[3][2], *outs[3][1];
	PJRT_Buffer *const *arg_lists[3];
	PJRT_Buffer **out_lists[3];
	for (int d = 0; d < 3; d++) {
		for (int i = 0; i < 2; i++)
			bufs[d][i] = T_buffer(c, devs[d], PJRT_Buffer_Type_F32, dims, 2, a, NULL);
		arg_lists[d] = bufs[d];
		out_lists[d] = outs[d];
	}
	PJRT_Event *events[3] = { NULL, NULL, NULL };
	PJRT_ExecuteOptions o = { .struct_size = PJRT_ExecuteOptions_STRUCT_SIZE };
	PJRT_LoadedExecutable_Execute_Args ex = {
		.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = le, .options = &o,
		.argument_lists = arg_lists, .num_devices = 3, .num_args = 2, .output_lists = out_lists,
		.device_complete_events = events };
	T_OK(API->PJRT_LoadedExecutable_Execute(&ex));
	for (int d = 0; d < 3; d++) {
		PJRT_Buffer_Device_Args bd = { .struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = outs[d][0] };
		T_OK(API->PJRT_Buffer_Device(&bd));
		ck_assert_ptr_eq(bd.device, devs[d]);
		T_to_host(outs[d][0], r, sizeof(r));
		ck_assert(r[5] == 12);
		T_buffer_destroy(outs[d][0]);
		PJRT_Event_Destroy_Args ed = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = events[d] };
		T_OK(API->PJRT_Event_Destroy(&ed));
		for (int i = 0; i < 2; i++)
			T_buffer_destroy(bufs[d][i]);
	}
	ex.num_devices = 2;
	T_FAIL(API->PJRT_LoadedExecutable_Execute(&ex), PJRT_Error_Code_INVALID_ARGUMENT, "3 devices");
	T_loaded_destroy(le);
	/* More replicas than cores, several partitions. */
	le = T_compile(c, "hlo_text", add_hlo, strlen(add_hlo), 4, &err);
	T_expect(err, PJRT_Error_Code_INVALID_ARGUMENT, "4 replicas", "4 replicas");
	uint8_t opts[64];
	size_t n = T_compile_options(opts, 1, 2);
	PJRT_Program p = { .struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)add_hlo,
			   .code_size = strlen(add_hlo), .format = "hlo_text", .format_size = 8 };
	PJRT_Client_Compile_Args ca = { .struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c,
					.program = &p, .compile_options = (const char *)opts,
					.compile_options_size = n };
	T_FAIL(API->PJRT_Client_Compile(&ca), PJRT_Error_Code_UNIMPLEMENTED, "partitions");
	T_client_destroy(c);
}
END_TEST

START_TEST(test_compile_errors)
{
	PJRT_Client *c = T_client();
	PJRT_Error *err;
	ck_assert_ptr_null(T_compile(c, "mlir", "module {}", 9, 1, &err));
	T_expect(err, PJRT_Error_Code_UNIMPLEMENTED, "MLIR/StableHLO", "mlir");
	T_compile(c, "stablehlo", "x", 1, 1, &err);
	T_expect(err, PJRT_Error_Code_INVALID_ARGUMENT, "unknown program format", "format");
	T_compile(c, "hlo_text", "HloModule broken\nENTRY {", 22, 1, &err);
	T_expect(err, PJRT_Error_Code_INVALID_ARGUMENT, "error", "parse error");
	T_compile(c, "hlo", "\x0a\xff\xff", 3, 1, &err);
	T_expect(err, PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto", "bad proto");
	T_compile(c, "hlo", "\x0a\x01x", 3, 1, &err);
	T_expect(err, PJRT_Error_Code_INVALID_ARGUMENT, "host_program_shape", "no program shape");
	T_compile(c, "hlo_text", "", 0, 1, &err);
	T_expect(err, PJRT_Error_Code_INVALID_ARGUMENT, "empty", "empty");
	/* A program the compiler cannot lower. */
	static const char *const tupled =
		"HloModule t\nENTRY main {\n  p = (f32[2], f32[2]) parameter(0)\n"
		"  ROOT g = f32[2] get-tuple-element(p), index=0\n}\n";
	T_compile(c, "hlo_text", tupled, strlen(tupled), 1, &err);
	T_expect(err, PJRT_Error_Code_UNIMPLEMENTED, "parameter 0", "tuple parameter");
	/* Malformed compile options. */
	PJRT_Program p = { .struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)add_hlo,
			   .code_size = strlen(add_hlo), .format = "hlo_text", .format_size = 8 };
	PJRT_Client_Compile_Args ca = { .struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c,
					.program = &p, .compile_options = "\x1a\x09", .compile_options_size = 2 };
	T_FAIL(API->PJRT_Client_Compile(&ca), PJRT_Error_Code_INVALID_ARGUMENT, "CompileOptionsProto");
	ca.compile_options_size = 0;
	ca.compile_options = NULL;
	p.struct_size = 8;
	T_FAIL(API->PJRT_Client_Compile(&ca), PJRT_Error_Code_INVALID_ARGUMENT, "struct_size");
	T_client_destroy(c);
}
END_TEST

/* Reads a Check-visible HloModuleProto of the compiler's test corpus. */
START_TEST(test_compile_hlo_proto_and_optimized_program)
{
	size_t len;
	char *pb = T_read_file(PJRT_PROTO_DIR "/mlp_train.pb", &len);
	ck_assert_msg(pb != NULL, "cannot read %s", PJRT_PROTO_DIR "/mlp_train.pb");
	PJRT_Client *c = T_client();
	PJRT_Error *err;
	PJRT_LoadedExecutable *le = T_compile(c, "hlo", pb, len, 1, &err);
	T_OK(err);
	PJRT_Executable *e = T_executable(le);
	PJRT_Program prog = { .struct_size = PJRT_Program_STRUCT_SIZE };
	PJRT_Executable_OptimizedProgram_Args op = { .struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE,
						     .executable = e, .program = &prog };
	T_OK(API->PJRT_Executable_OptimizedProgram(&op));
	char *code = malloc(prog.code_size);
	prog.code = code;
	T_OK(API->PJRT_Executable_OptimizedProgram(&op));
	ck_assert(prog.format_size == 15 && memcmp(prog.format, "hlo_with_config", 15) == 0);
	/* HloModuleProtoWithConfig: field 1 is the module, byte for byte. */
	ck_assert_uint_eq((uint8_t)code[0], 0x0a);
	uint64_t n = 0;
	size_t k = 1;
	for (int shift = 0;; shift += 7) {
		uint8_t b = (uint8_t)code[k++];
		n |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	ck_assert_uint_eq(n, len);
	ck_assert(memcmp(code + k, pb, len) == 0);
	ck_assert_uint_eq((uint8_t)code[k + len], 0x12); /* field 2: the config */
	free(code);
	ck_assert_uint_ge(T_num_outputs(le), 2);
	T_executable_destroy(e);
	T_loaded_destroy(le);
	T_client_destroy(c);
	free(pb);
}
END_TEST

/* ------------------------------------------------------------- donation */

START_TEST(test_donation_in_place)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, alias_hlo);
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, r[4];
	int64_t dims[1] = { 4 };
	PJRT_Buffer *args[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, a, NULL),
				 T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, b, NULL) };
	PJRT_Buffer *out[2] = { NULL, NULL };
	T_OK(T_execute(le, devs[0], args, 2, out, NULL, 0));
	/* Parameter 0 was donated: its buffer is deleted, output 0 has its
	 * memory and the new value; parameter 1 is intact. */
	ck_assert(T_is_deleted(args[0]));
	ck_assert(!T_is_deleted(args[1]));
	T_to_host(out[0], r, sizeof(r));
	for (int i = 0; i < 4; i++)
		ck_assert(r[i] == a[i] + b[i]);
	T_to_host(out[1], r, sizeof(r));
	for (int i = 0; i < 4; i++)
		ck_assert(r[i] == a[i] * b[i]);
	PJRT_Buffer_ToHostBuffer_Args th = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
					     .src = args[0], .dst = r, .dst_size = sizeof(r) };
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_FAILED_PRECONDITION, "donated");
	/* Running again with the donated buffer is refused. */
	PJRT_Buffer *out2[2] = { NULL, NULL };
	T_FAIL(T_execute(le, devs[0], args, 2, out2, NULL, 0), PJRT_Error_Code_FAILED_PRECONDITION, "donated");
	/* The chain a training loop makes: the output feeds the next step. */
	PJRT_Buffer *next[2] = { out[0], args[1] };
	T_OK(T_execute(le, devs[0], next, 2, out2, NULL, 0));
	ck_assert(T_is_deleted(out[0]));
	T_to_host(out2[0], r, sizeof(r));
	for (int i = 0; i < 4; i++)
		ck_assert(r[i] == a[i] + 2 * b[i]);
	for (int i = 0; i < 2; i++) {
		T_buffer_destroy(args[i]);
		T_buffer_destroy(out[i]);
		T_buffer_destroy(out2[i]);
	}
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

START_TEST(test_donation_refused_when_not_donatable)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, alias_hlo);
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, r[4];
	int64_t dims[1] = { 4 };
	PJRT_Buffer *args[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, a, NULL),
				 T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, b, NULL) };
	PJRT_Buffer *out[2] = { NULL, NULL };
	int64_t nondon[1] = { 0 };
	T_OK(T_execute(le, devs[0], args, 2, out, nondon, 1));
	ck_assert(!T_is_deleted(args[0]));
	T_to_host(args[0], r, sizeof(r));
	ck_assert(memcmp(r, a, sizeof(a)) == 0);
	T_to_host(out[0], r, sizeof(r));
	for (int i = 0; i < 4; i++)
		ck_assert(r[i] == a[i] + b[i]);
	T_buffer_destroy(out[0]);
	T_buffer_destroy(out[1]);
	/* The same buffer passed twice is not donated either. */
	PJRT_Buffer *twice[2] = { args[0], args[0] };
	T_OK(T_execute(le, devs[0], twice, 2, out, NULL, 0));
	ck_assert(!T_is_deleted(args[0]));
	T_to_host(args[0], r, sizeof(r));
	ck_assert(memcmp(r, a, sizeof(a)) == 0);
	T_to_host(out[0], r, sizeof(r));
	for (int i = 0; i < 4; i++)
		ck_assert(r[i] == 2 * a[i]);
	T_buffer_destroy(out[0]);
	T_buffer_destroy(out[1]);
	T_buffer_destroy(args[0]);
	T_buffer_destroy(args[1]);
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

/* A training step of the corpus (MLP, SGD, every weight updated in place):
 * two steps on the same batch, the second loss below the first. */
START_TEST(test_mlp_training_step)
{
	size_t len;
	char *text = T_read_file(PJRT_HLO_CORPUS "/mlp-mlp_single_final.hlo", &len);
	ck_assert_msg(text != NULL, "cannot read the corpus module");
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, text);
	ck_assert_uint_eq(T_num_outputs(le), 10);
	/* p0 -lr, p1 b1[120], p2 w1[120,784], p3 x[32,784], p4 w2[84,120], p5 b2[84],
	 * p6 w3[10,84], p7 b3[10], p8 labels s64[32]. */
	static const int64_t shapes[9][2] = { { 0 }, { 120 }, { 120, 784 }, { 32, 784 }, { 84, 120 },
					      { 84 }, { 10, 84 }, { 10 }, { 32 } };
	static const size_t ranks[9] = { 0, 1, 2, 2, 2, 1, 2, 1, 1 };
	PJRT_Buffer *args[9];
	unsigned seed = 12345;
	for (int p = 0; p < 9; p++) {
		size_t n = 1;
		for (size_t d = 0; d < ranks[p]; d++)
			n *= (size_t)shapes[p][d];
		if (p == 8) {
			int64_t *lab = malloc(n * sizeof(int64_t));
			for (size_t i = 0; i < n; i++)
				lab[i] = (int64_t)(i % 10);
			args[p] = T_buffer(c, devs[0], PJRT_Buffer_Type_S64, shapes[p], ranks[p], lab, NULL);
			free(lab);
			continue;
		}
		float *v = malloc(n * sizeof(float));
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			v[i] = ((float)((seed >> 8) & 0xffff) / 65535.0f - 0.5f) * (p == 3 ? 2.0f : 0.2f);
		}
		if (p == 0)
			v[0] = -0.1f;
		args[p] = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, shapes[p], ranks[p], v, NULL);
		free(v);
	}
	PJRT_Buffer *out[10];
	T_OK(T_execute(le, devs[0], args, 9, out, NULL, 0));
	float loss1, loss2;
	T_to_host(out[9], &loss1, sizeof(loss1));
	ck_assert_msg(isfinite(loss1) && loss1 > 0, "loss %f", loss1);
	/* The weights were donated and updated in place. */
	ck_assert(T_is_deleted(args[2]) && T_is_deleted(args[1]) && T_is_deleted(args[7]));
	ck_assert(!T_is_deleted(args[0]));
	/* Outputs 0-5 are the new weights (aliases of p2, p1, p4, p5, p6, p7),
	 * 6 and 7 the batch (p3, p8), 8 the logits, 9 the loss. */
	PJRT_Buffer *step2[9] = { args[0], out[1], out[0], out[6], out[2], out[3], out[4], out[5], out[7] };
	PJRT_Buffer *out2[10];
	T_OK(T_execute(le, devs[0], step2, 9, out2, NULL, 0));
	T_to_host(out2[9], &loss2, sizeof(loss2));
	ck_assert_msg(loss2 < loss1, "loss did not decrease: %f then %f", loss1, loss2);
	for (int p = 0; p < 9; p++)
		T_buffer_destroy(args[p]);
	for (int k = 0; k < 10; k++) {
		T_buffer_destroy(out[k]);
		T_buffer_destroy(out2[k]);
	}
	T_loaded_destroy(le);
	T_client_destroy(c);
	free(text);
}
END_TEST

START_TEST(test_nan_error_names_instruction)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, nan_hlo);
	float z[4] = { 0, 0, 0, 0 }, r[4];
	int64_t dims[1] = { 4 };
	PJRT_Buffer *args[1] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, z, NULL) };
	PJRT_Buffer *out[1] = { NULL };
	PJRT_Buffer *const *arg_lists[1] = { args };
	PJRT_Buffer **out_lists[1] = { out };
	PJRT_Event *events[1] = { NULL };
	PJRT_ExecuteOptions o = { .struct_size = PJRT_ExecuteOptions_STRUCT_SIZE };
	PJRT_LoadedExecutable_Execute_Args ex = {
		.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = le, .options = &o,
		.argument_lists = arg_lists, .num_devices = 1, .num_args = 1, .output_lists = out_lists,
		.device_complete_events = events, .execute_device = devs[0] };
	/* The launch succeeds; the failure on the device is in the completion
	 * event and in the outputs, as PJRT reports asynchronous failures. */
	T_OK(API->PJRT_LoadedExecutable_Execute(&ex));
	ck_assert_ptr_nonnull(out[0]);
	PJRT_Event_Await_Args aw = { .struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = events[0] };
	PJRT_Error *err = API->PJRT_Event_Await(&aw);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(T_code(err), PJRT_Error_Code_INTERNAL);
	const char *m = T_msg(err);
	ck_assert_msg(strstr(m, "nan_here") && strstr(m, "1003") && strstr(m, "nan_mod"), "message: %s", m);
	T_free(err);
	PJRT_Event_Destroy_Args ed = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = events[0] };
	T_OK(API->PJRT_Event_Destroy(&ed));
	PJRT_Buffer_ToHostBuffer_Args th = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = out[0],
					     .dst = r, .dst_size = sizeof(r) };
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_INTERNAL, "nan_here");
	PJRT_Buffer_ReadyEvent_Args re = { .struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE, .buffer = out[0] };
	T_OK(API->PJRT_Buffer_ReadyEvent(&re));
	PJRT_Event_Error_Args ee = { .struct_size = PJRT_Event_Error_Args_STRUCT_SIZE, .event = re.event };
	T_FAIL(API->PJRT_Event_Error(&ee), PJRT_Error_Code_INTERNAL, "NaN");
	ed.event = re.event;
	T_OK(API->PJRT_Event_Destroy(&ed));
	PJRT_Buffer_CopyToDevice_Args cd = { .struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
					     .buffer = out[0], .dst_device = devs[1] };
	T_FAIL(API->PJRT_Buffer_CopyToDevice(&cd), PJRT_Error_Code_INTERNAL, "nan_here");
	/* Executing with the errored buffer runs nothing and passes the error on. */
	PJRT_Buffer *next[1] = { out[0] }, *out2[1] = { NULL };
	T_OK(T_execute(le, devs[0], next, 1, out2, NULL, 0));
	th.src = out2[0];
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_INTERNAL, "nan_here");
	/* The input was not donated (no alias): still readable. */
	T_to_host(args[0], r, sizeof(r));
	T_buffer_destroy(out2[0]);
	T_buffer_destroy(out[0]);
	T_buffer_destroy(args[0]);
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

START_TEST(test_failed_execution_consumes_donated_input)
{
	static const char *const text =
		"HloModule nan_alias, input_output_alias={ {}: (0, {}, must-alias) }\n"
		"ENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT q = f32[4] divide(p0, p0)\n}\n";
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, text);
	float z[4] = { 0, 1, 2, 3 }, r[4];
	int64_t dims[1] = { 4 };
	PJRT_Buffer *args[1] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, z, NULL) };
	PJRT_Buffer *out[1] = { NULL };
	T_OK(T_execute(le, devs[0], args, 1, out, NULL, 0));
	/* The execution ran (and updated its input in place) before it failed:
	 * the donation stands, the output reports the failure. */
	ck_assert(T_is_deleted(args[0]));
	PJRT_Buffer_ToHostBuffer_Args th = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = out[0],
					     .dst = r, .dst_size = sizeof(r) };
	T_FAIL(API->PJRT_Buffer_ToHostBuffer(&th), PJRT_Error_Code_INTERNAL, "NaN");
	T_buffer_destroy(out[0]);
	T_buffer_destroy(args[0]);
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

typedef struct worker {
	PJRT_Client *client;
	PJRT_LoadedExecutable *le;
	PJRT_Device *dev;
	int failures;
} worker_t;

static void *worker_main(void *arg)
{
	worker_t *w = arg;
	int64_t dims[2] = { 2, 3 };
	for (int it = 0; it < 40; it++) {
		float a[6], b[6], r[6];
		for (int i = 0; i < 6; i++) {
			a[i] = (float)(it + i);
			b[i] = (float)(2 * i);
		}
		PJRT_Buffer *args[2] = { T_buffer(w->client, w->dev, PJRT_Buffer_Type_F32, dims, 2, a, NULL),
					 T_buffer(w->client, w->dev, PJRT_Buffer_Type_F32, dims, 2, b, NULL) };
		PJRT_Buffer *out[1] = { NULL };
		PJRT_Error *err = T_execute(w->le, w->dev, args, 2, out, NULL, 0);
		if (err) {
			w->failures++;
			T_free(err);
		} else {
			T_to_host(out[0], r, sizeof(r));
			for (int i = 0; i < 6; i++)
				w->failures += r[i] != a[i] + b[i];
			T_buffer_destroy(out[0]);
		}
		T_buffer_destroy(args[0]);
		T_buffer_destroy(args[1]);
	}
	return NULL;
}

/* PyTorch/XLA transfers and executes from several threads: one executable,
 * four threads on four cores, buffers made and destroyed all the time. */
START_TEST(test_threads)
{
	setenv("NEURON_RT_VISIBLE_CORES", "0-3", 1);
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	size_t n = T_devices(c, &devs);
	ck_assert_uint_ge(n, 4);
	PJRT_LoadedExecutable *le = T_compile_text(c, add_hlo);
	pthread_t th[4];
	worker_t w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker_t){ .client = c, .le = le, .dev = devs[i] };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

/* -------------------------------------------------------- serialization */

static void serialize(PJRT_LoadedExecutable *le, char **out, size_t *len)
{
	PJRT_Executable *e = T_executable(le);
	PJRT_Executable_Serialize_Args s = { .struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE, .executable = e };
	T_OK(API->PJRT_Executable_Serialize(&s));
	*len = s.serialized_bytes_size;
	*out = malloc(*len);
	memcpy(*out, s.serialized_bytes, *len);
	s.serialized_executable_deleter(s.serialized_executable);
	T_executable_destroy(e);
}

static PJRT_Error *deserialize(PJRT_Client *c, const char *bytes, size_t len, PJRT_LoadedExecutable **out)
{
	PJRT_Executable_DeserializeAndLoad_Args d = {
		.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE, .client = c,
		.serialized_executable = bytes, .serialized_executable_size = len };
	PJRT_Error *err = API->PJRT_Executable_DeserializeAndLoad(&d);
	*out = d.loaded_executable;
	return err;
}

START_TEST(test_serialize_round_trip)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, alias_hlo);
	char *bytes;
	size_t len;
	serialize(le, &bytes, &len);
	T_loaded_destroy(le);
	PJRT_LoadedExecutable *le2 = NULL;
	T_OK(deserialize(c, bytes, len, &le2));
	ck_assert_uint_eq(T_num_outputs(le2), 2);
	PJRT_Executable *e2 = T_executable(le2);
	PJRT_Executable_Name_Args nm = { .struct_size = PJRT_Executable_Name_Args_STRUCT_SIZE, .executable = e2 };
	T_OK(API->PJRT_Executable_Name(&nm));
	ck_assert(nm.executable_name_size == 9 && memcmp(nm.executable_name, "alias_mod", 9) == 0);
	T_executable_destroy(e2);
	float a[4] = { 1, 2, 3, 4 }, r[4];
	int64_t dims[1] = { 4 };
	PJRT_Buffer *args[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, a, NULL),
				 T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, a, NULL) };
	PJRT_Buffer *out[2];
	T_OK(T_execute(le2, devs[0], args, 2, out, NULL, 0));
	ck_assert(T_is_deleted(args[0])); /* aliasing survived the round trip */
	T_to_host(out[1], r, sizeof(r));
	ck_assert(r[3] == 16);
	for (int i = 0; i < 2; i++) {
		T_buffer_destroy(args[i]);
		T_buffer_destroy(out[i]);
	}
	T_loaded_destroy(le2);

	/* Corruption: every header byte flipped, every truncation of the header,
	 * a payload bit, garbage: a clean error each time. */
	PJRT_LoadedExecutable *bad = NULL;
	char *copy = malloc(len);
	for (size_t i = 0; i < 64; i++) {
		memcpy(copy, bytes, len);
		copy[i] ^= 0x5a;
		PJRT_Error *err = deserialize(c, copy, len, &bad);
		ck_assert_msg(err != NULL, "flipping byte %zu was accepted", i);
		ck_assert(T_code(err) == PJRT_Error_Code_INVALID_ARGUMENT || T_code(err) == PJRT_Error_Code_UNIMPLEMENTED);
		T_free(err);
	}
	for (size_t cut = 0; cut < len; cut += (cut < 80 ? 1 : 97)) {
		PJRT_Error *err = deserialize(c, bytes, cut, &bad);
		ck_assert_msg(err != NULL, "truncation to %zu accepted", cut);
		T_free(err);
	}
	memcpy(copy, bytes, len);
	copy[len / 2] ^= 1;
	T_FAIL(deserialize(c, copy, len, &bad), PJRT_Error_Code_INVALID_ARGUMENT, "checksum");
	T_FAIL(deserialize(c, "garbage garbage garbage garbage garbage garbage garbage garbage garbage", 71, &bad),
	       PJRT_Error_Code_INVALID_ARGUMENT, "magic");
	free(copy);
	free(bytes);
	T_client_destroy(c);
}
END_TEST

/* ------------------------------------------------------ the unimplemented */

#define UNIMPLEMENTED_LIST(X)                                                                    \
	X(Buffer_UnsafePointer) X(Buffer_IncreaseExternalReferenceCount)                         \
	X(Buffer_DecreaseExternalReferenceCount) X(Buffer_OpaqueDeviceMemoryDataPointer)         \
	X(CopyToDeviceStream_Destroy) X(CopyToDeviceStream_AddChunk) X(CopyToDeviceStream_TotalBytes) \
	X(CopyToDeviceStream_GranuleSize) X(CopyToDeviceStream_CurrentBytes)                     \
	X(TopologyDescription_Create) X(TopologyDescription_Destroy) X(TopologyDescription_PlatformName) \
	X(TopologyDescription_PlatformVersion) X(TopologyDescription_GetDeviceDescriptions)      \
	X(TopologyDescription_Serialize) X(TopologyDescription_Attributes) X(Compile)            \
	X(Client_CreateViewOfDeviceBuffer) X(Client_TopologyDescription) X(ExecuteContext_Create) \
	X(ExecuteContext_Destroy) X(AsyncHostToDeviceTransferManager_Destroy)                    \
	X(AsyncHostToDeviceTransferManager_TransferData) X(Client_CreateBuffersForAsyncHostToDevice) \
	X(AsyncHostToDeviceTransferManager_RetrieveBuffer) X(AsyncHostToDeviceTransferManager_Device) \
	X(AsyncHostToDeviceTransferManager_BufferCount) X(AsyncHostToDeviceTransferManager_BufferSize) \
	X(AsyncHostToDeviceTransferManager_SetBufferError) X(AsyncHostToDeviceTransferManager_AddMetadata) \
	X(Client_DmaMap) X(Client_DmaUnmap) X(Client_UpdateGlobalProcessInfo) X(TopologyDescription_Deserialize)

START_TEST(test_unimplemented_functions_name_themselves)
{
	/* Any args: an all-zero struct big enough for every args type. */
	static uint64_t zeros[64];
	int n = 0;
#define CALL(name)                                                                                   \
	{                                                                                            \
		memset(zeros, 0, sizeof(zeros));                                                     \
		PJRT_Error *e = API->PJRT_##name((PJRT_##name##_Args *)zeros);                        \
		T_expect(e, PJRT_Error_Code_UNIMPLEMENTED, "PJRT_" #name " is not implemented", #name); \
		e = API->PJRT_##name(NULL);                                                          \
		T_expect(e, PJRT_Error_Code_UNIMPLEMENTED, "PJRT_" #name, #name);                     \
		n++;                                                                                 \
	}
	UNIMPLEMENTED_LIST(CALL)
#undef CALL
	ck_assert_int_eq(n, 34);
}
END_TEST

/* ---------------------------------------------------------------- misuse */

/* Every implemented function that returns an error: NULL args and a
 * struct_size of 8 are refused with INVALID_ARGUMENT. */
#define IMPLEMENTED_LIST(X)                                                                          \
	X(Error_GetCode) X(Plugin_Initialize) X(Plugin_Attributes) X(Event_Destroy) X(Event_IsReady)  \
	X(Event_Error) X(Event_Await) X(Event_OnReady) X(Client_Create) X(Client_Destroy)             \
	X(Client_PlatformName) X(Client_ProcessIndex) X(Client_PlatformVersion) X(Client_Devices)     \
	X(Client_AddressableDevices) X(Client_LookupDevice) X(Client_LookupAddressableDevice)         \
	X(Client_AddressableMemories) X(Client_Compile) X(Client_DefaultDeviceAssignment)            \
	X(Client_BufferFromHostBuffer) X(DeviceDescription_Id) X(DeviceDescription_ProcessIndex)      \
	X(DeviceDescription_Attributes) X(DeviceDescription_Kind) X(DeviceDescription_DebugString)    \
	X(DeviceDescription_ToString) X(Device_GetDescription) X(Device_IsAddressable)                \
	X(Device_LocalHardwareId) X(Device_AddressableMemories) X(Device_DefaultMemory)               \
	X(Device_MemoryStats) X(Memory_Id) X(Memory_Kind) X(Memory_DebugString) X(Memory_ToString)    \
	X(Memory_AddressableByDevices) X(Executable_Destroy) X(Executable_Name)                       \
	X(Executable_NumReplicas) X(Executable_NumPartitions) X(Executable_NumOutputs)                \
	X(Executable_SizeOfGeneratedCodeInBytes) X(Executable_GetCostAnalysis)                        \
	X(Executable_OutputMemoryKinds) X(Executable_OptimizedProgram) X(Executable_Serialize)        \
	X(LoadedExecutable_Destroy) X(LoadedExecutable_GetExecutable)                                 \
	X(LoadedExecutable_AddressableDevices) X(LoadedExecutable_Delete) X(LoadedExecutable_IsDeleted) \
	X(LoadedExecutable_Execute) X(Executable_DeserializeAndLoad) X(LoadedExecutable_Fingerprint)  \
	X(Buffer_Destroy) X(Buffer_ElementType) X(Buffer_Dimensions) X(Buffer_UnpaddedDimensions)     \
	X(Buffer_DynamicDimensionIndices) X(Buffer_GetMemoryLayout) X(Buffer_OnDeviceSizeInBytes)     \
	X(Buffer_Device) X(Buffer_Memory) X(Buffer_Delete) X(Buffer_IsDeleted) X(Buffer_CopyToDevice) \
	X(Buffer_ToHostBuffer) X(Buffer_IsOnCpu) X(Buffer_ReadyEvent) X(Executable_OutputElementTypes) \
	X(Executable_OutputDimensions) X(Buffer_CopyToMemory) X(Executable_Fingerprint)               \
	X(Executable_GetCompiledMemoryStats) X(Memory_Kind_Id) X(Buffer_CopyRawToHost)               \
	X(Client_CreateUninitializedBuffer)

START_TEST(test_misuse_null_and_small_structs)
{
	static uint64_t zeros[64];
	int n = 0;
#define CALL(name)                                                                                   \
	{                                                                                            \
		T_expect(API->PJRT_##name(NULL), PJRT_Error_Code_INVALID_ARGUMENT, "is NULL", #name);  \
		memset(zeros, 0, sizeof(zeros));                                                     \
		zeros[0] = 8;                                                                        \
		PJRT_Error *e = API->PJRT_##name((PJRT_##name##_Args *)zeros);                        \
		/* Plugin_Initialize reads nothing past extension_start: 8 is too small too. */     \
		T_expect(e, PJRT_Error_Code_INVALID_ARGUMENT, "struct_size", #name);                  \
		n++;                                                                                 \
	}
	IMPLEMENTED_LIST(CALL)
#undef CALL
	ck_assert_int_eq(n, 79);
	/* The void functions survive anything. */
	API->PJRT_Error_Destroy(NULL);
	API->PJRT_Error_Message(NULL);
	PJRT_Error_Destroy_Args ed = { .struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
				       .error = (PJRT_Error *)(uintptr_t)0x1234 };
	API->PJRT_Error_Destroy(&ed);
	PJRT_Error_Message_Args em = { .struct_size = PJRT_Error_Message_Args_STRUCT_SIZE,
				       .error = (PJRT_Error *)(uintptr_t)0x1234 };
	API->PJRT_Error_Message(&em);
	ck_assert_ptr_nonnull(em.message);
}
END_TEST

START_TEST(test_misuse_stale_and_foreign_handles)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	float v[2] = { 1, 2 };
	int64_t dims[1] = { 2 };
	PJRT_Buffer *b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, v, NULL);
	T_buffer_destroy(b);
	/* The destroyed buffer, a garbage value, a handle of another kind. */
	PJRT_Buffer *bad[3] = { b, (PJRT_Buffer *)(uintptr_t)0xdeadbeef, (PJRT_Buffer *)devs[0] };
	for (int i = 0; i < 3; i++) {
		PJRT_Buffer_ElementType_Args et = { .struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE,
						    .buffer = bad[i] };
		T_FAIL(API->PJRT_Buffer_ElementType(&et), PJRT_Error_Code_INVALID_ARGUMENT, "not a live PJRT_Buffer");
		PJRT_Buffer_Destroy_Args bd = { .struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = bad[i] };
		T_FAIL(API->PJRT_Buffer_Destroy(&bd), PJRT_Error_Code_INVALID_ARGUMENT, "not a live PJRT_Buffer");
	}
	PJRT_Device_IsAddressable_Args ia = { .struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE,
					      .device = (PJRT_Device *)c };
	T_FAIL(API->PJRT_Device_IsAddressable(&ia), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Device");
	PJRT_Error_GetCode_Args gc = { .struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE,
				       .error = (PJRT_Error *)c };
	T_FAIL(API->PJRT_Error_GetCode(&gc), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Error");
	/* A buffer outlives the client that made it; the client's devices stay
	 * valid for it until it goes. */
	b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, v, NULL);
	PJRT_LoadedExecutable *le = T_compile_text(c, add_hlo);
	PJRT_Device *dev0 = devs[0]; /* the list itself belongs to the client */
	T_client_destroy(c);
	PJRT_Client_PlatformName_Args pn = { .struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE, .client = c };
	T_FAIL(API->PJRT_Client_PlatformName(&pn), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Client");
	PJRT_Client_Destroy_Args cd = { .struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c };
	T_FAIL(API->PJRT_Client_Destroy(&cd), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Client");
	float r[2];
	T_to_host(b, r, sizeof(r));
	ck_assert(r[1] == 2);
	PJRT_Buffer_Device_Args bdv = { .struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = b };
	T_OK(API->PJRT_Buffer_Device(&bdv));
	ck_assert_ptr_eq(bdv.device, dev0);
	T_buffer_destroy(b);
	T_loaded_destroy(le);
	/* The last reference is gone: now the devices are stale too. */
	ia.device = dev0;
	T_FAIL(API->PJRT_Device_IsAddressable(&ia), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Device");
	PJRT_LoadedExecutable_Destroy_Args ld = { .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
						  .executable = le };
	T_FAIL(API->PJRT_LoadedExecutable_Destroy(&ld), PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_LoadedExecutable");
}
END_TEST

/* ------------------------------------------- f64, buffer donors, empty arrays */

/* Device bytes in use on device dev (libnrt's accounting). */
static int64_t bytes_in_use(PJRT_Device *dev)
{
	PJRT_Device_MemoryStats_Args ms = { .struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE, .device = dev };
	T_OK(API->PJRT_Device_MemoryStats(&ms));
	return ms.bytes_in_use;
}

/* An AdamW-like step as torch_xla sends it: the step size a Python float (an
 * f64[] parameter), an f64 weight updated in place, f64 constants and outputs. */
static const char *const f64_hlo =
	"HloModule adamw_like, input_output_alias={ {0}: (2, {}) }\n"
	"ENTRY e {\n"
	"  lr = f64[] parameter(0)\n  g = f32[2,3] parameter(1)\n  w = f64[2,3] parameter(2)\n"
	"  g64 = f64[2,3] convert(g)\n  lrb = f64[2,3] broadcast(lr), dimensions={}\n"
	"  c = f64[] constant(0.9)\n  cb = f64[2,3] broadcast(c), dimensions={}\n"
	"  m = f64[2,3] multiply(w, cb)\n  st = f64[2,3] multiply(lrb, g64)\n"
	"  w2 = f64[2,3] subtract(m, st)\n  w2f = f32[2,3] convert(w2)\n"
	"  s = f64[] constant(2.5)\n  ROOT t = (f64[2,3], f32[2,3], f64[]) tuple(w2, w2f, s)\n}\n";

/* f64 stays f64 toward the framework (buffers, output types) and is f32 on the
 * device: results match the reference interpreter's f64 within f32 rounding. */
START_TEST(test_f64_program_within_f32_of_the_interpreter)
{
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, f64_hlo);
	PJRT_Executable *e = T_executable(le);
	PJRT_Executable_OutputElementTypes_Args ot = { .struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE,
						       .executable = e };
	T_OK(API->PJRT_Executable_OutputElementTypes(&ot));
	ck_assert(ot.num_output_types == 3 && ot.output_types[0] == PJRT_Buffer_Type_F64 &&
		  ot.output_types[1] == PJRT_Buffer_Type_F32 && ot.output_types[2] == PJRT_Buffer_Type_F64);
	T_executable_destroy(e);
	double lr = 1e-3, w[6] = { 0.123456789012345, -1.5, 3.0e-3, 7.25, -0.333333333333333, 1e30 };
	float g[6] = { 0.5f, -0.25f, 1.0f, 2.0f, -3.0f, 0.125f };
	/* the interpreter on the module as written (f64 arithmetic) */
	ncc_module_t *m = NULL;
	ncc_error_t nerr;
	memset(&nerr, 0, sizeof(nerr));
	ck_assert(ncc_parse_hlo(f64_hlo, strlen(f64_hlo), "<f64>", &m, &nerr) == NCC_OK && ncc_verify(m, &nerr) == NCC_OK);
	ncc_value_t *args[3];
	for (int a = 0; a < 3; a++)
		ck_assert_int_eq(ncc_value_alloc(ncc_module_entry_param_shape(m, a), &args[a]), NCC_OK);
	ncc_value_set_f64(args[0], 0, lr);
	for (int i = 0; i < 6; i++) {
		ncc_value_set_f64(args[1], i, g[i]);
		ncc_value_set_f64(args[2], i, w[i]);
	}
	ncc_value_t *want = NULL;
	ck_assert_msg(ncc_interp_run(m, (const ncc_value_t *const *)args, 3, NULL, &want, &nerr) == NCC_OK, "%s",
		      nerr.msg);
	int64_t dims[2] = { 2, 3 };
	PJRT_Buffer *in[3] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F64, NULL, 0, &lr, NULL),
			       T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, g, NULL),
			       T_buffer(c, devs[0], PJRT_Buffer_Type_F64, dims, 2, w, NULL) };
	PJRT_Buffer *out[3] = { NULL, NULL, NULL };
	T_OK(T_execute(le, devs[0], in, 3, out, NULL, 0));
	ck_assert(T_is_deleted(in[2])); /* the f64 weight was updated in place */
	static const PJRT_Buffer_Type types[3] = { PJRT_Buffer_Type_F64, PJRT_Buffer_Type_F32, PJRT_Buffer_Type_F64 };
	static const size_t n[3] = { 6, 6, 1 };
	for (int k = 0; k < 3; k++) {
		PJRT_Buffer_ElementType_Args et = { .struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE, .buffer = out[k] };
		T_OK(API->PJRT_Buffer_ElementType(&et));
		ck_assert_int_eq(et.type, types[k]);
		PJRT_Buffer_OnDeviceSizeInBytes_Args os = {
			.struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE, .buffer = out[k] };
		T_OK(API->PJRT_Buffer_OnDeviceSizeInBytes(&os));
		ck_assert_uint_eq(os.on_device_size_in_bytes, 4 * n[k]); /* f32 on the device */
		double got[6];
		float gotf[6];
		ck_assert_uint_eq(T_to_host(out[k], k == 1 ? (void *)gotf : (void *)got, sizeof(got)),
				  n[k] * (k == 1 ? 4 : 8));
		for (size_t i = 0; i < n[k]; i++) {
			double x = k == 1 ? (double)gotf[i] : got[i], y = ncc_value_get_f64(want->elems[k], (int64_t)i);
			ck_assert_msg(fabs(x - y) <= 1e-7 + 2e-7 * fabs(y), "output %d[%zu]: %.17g, interpreter %.17g", k,
				      i, x, y);
			if (k != 1)
				ck_assert(x == (double)(float)x); /* an f32 value, widened */
		}
	}
	double two5;
	T_to_host(out[2], &two5, sizeof(two5));
	ck_assert(two5 == 2.5);
	/* strided f64 host data in, column-major out */
	double cm[6] = { 1.0 / 3, 4, 2, 5, 3, 6 }, rm[6], back[6];
	int64_t strides[2] = { 8, 16 };
	PJRT_Buffer *b = T_buffer(c, devs[0], PJRT_Buffer_Type_F64, dims, 2, cm, strides);
	T_to_host(b, rm, sizeof(rm));
	ck_assert(rm[0] == (double)(1.0f / 3) && rm[1] == 2 && rm[3] == 4 && rm[5] == 6);
	int64_t m2m[2] = { 0, 1 };
	PJRT_Buffer_MemoryLayout lay = { .type = PJRT_Buffer_MemoryLayout_Type_Tiled };
	lay.tiled.minor_to_major = m2m;
	lay.tiled.minor_to_major_size = 2;
	PJRT_Buffer_ToHostBuffer_Args th = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b,
					     .host_layout = &lay, .dst = back, .dst_size = sizeof(back) };
	T_OK(API->PJRT_Buffer_ToHostBuffer(&th));
	PJRT_Event_Destroy_Args ed = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = th.event };
	T_OK(API->PJRT_Event_Destroy(&ed));
	ck_assert(back[0] == rm[0] && back[1] == 4 && back[2] == 2 && back[5] == 6);
	T_buffer_destroy(b);
	for (int k = 0; k < 3; k++) {
		T_buffer_destroy(in[k]);
		T_buffer_destroy(out[k]);
	}
	ncc_value_free(want);
	for (int a = 0; a < 3; a++)
		ncc_value_free(args[a]);
	ncc_module_free(m);
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

/* torch_xla 2.9's way of giving up a parameter: buffer_donor. The compiler aliases
 * the donor to the output computed from it, so the plugin updates it in place: the
 * input buffer is deleted and the output reuses its device tensor (no new device
 * memory for it); a non-donatable input gets a copy (the memory of one more). */
START_TEST(test_buffer_donor_updates_in_place)
{
	static const char *const text =
		"HloModule donor_mod, buffer_donor={ (0, {}) }\n"
		"ENTRY main {\n  g = f32[1024] parameter(1)\n  w = f32[1024] parameter(0)\n"
		"  g2 = f32[1024] add(g, g)\n  n = f32[1024] subtract(w, g)\n"
		"  ROOT t = (f32[1024], f32[1024]) tuple(g2, n)\n}\n";
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, text);
	float w[1024], g[1024], r[1024];
	for (int i = 0; i < 1024; i++) {
		w[i] = (float)i;
		g[i] = 0.5f * (float)(i % 7);
	}
	int64_t dims[1] = { 1024 };
	for (int donate = 1; donate >= 0; donate--) {
		PJRT_Buffer *in[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, w, NULL),
				       T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 1, g, NULL) };
		PJRT_Buffer *out[2] = { NULL, NULL };
		int64_t nondon[1] = { 0 };
		int64_t before = bytes_in_use(devs[0]);
		T_OK(T_execute(le, devs[0], in, 2, out, donate ? NULL : nondon, donate ? 0 : 1));
		int64_t grown = bytes_in_use(devs[0]) - before;
		/* donated: only output 0 is new device memory; else output 1 too */
		ck_assert_msg(grown == (donate ? 4096 : 8192), "donate %d: %lld bytes more", donate, (long long)grown);
		ck_assert(T_is_deleted(in[0]) == (donate == 1));
		T_to_host(out[1], r, sizeof(r));
		for (int i = 0; i < 1024; i++)
			ck_assert(r[i] == w[i] - g[i]);
		T_to_host(out[0], r, sizeof(r));
		for (int i = 0; i < 1024; i++)
			ck_assert(r[i] == 2 * g[i]);
		for (int k = 0; k < 2; k++) {
			T_buffer_destroy(in[k]);
			T_buffer_destroy(out[k]);
		}
	}
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

/* In-place outputs that read what another in-place output overwrites: the
 * updated weight and the old one returned together, two updated inputs swapped, an
 * input updated with its own transpose. The device binds each aliased output to
 * its donated input's memory, so the back end must read before it writes. */
START_TEST(test_in_place_outputs_read_inputs_before_overwriting)
{
	static const char *const texts[3] = {
		"HloModule keep_old, input_output_alias={ {0}: (0, {}) }\n"
		"ENTRY main {\n  w = f32[3,3] parameter(0)\n  g = f32[3,3] parameter(1)\n"
		"  n = f32[3,3] subtract(w, g)\n  ROOT t = (f32[3,3], f32[3,3]) tuple(n, w)\n}\n",
		"HloModule swap, input_output_alias={ {0}: (0, {}), {1}: (1, {}) }\n"
		"ENTRY main {\n  a = f32[3,3] parameter(0)\n  b = f32[3,3] parameter(1)\n"
		"  ROOT t = (f32[3,3], f32[3,3]) tuple(b, a)\n}\n",
		"HloModule self_t, input_output_alias={ {0}: (0, {}) }\n"
		"ENTRY main {\n  a = f32[3,3] parameter(0)\n  b = f32[3,3] parameter(1)\n"
		"  tr = f32[3,3] transpose(a), dimensions={1,0}\n  ROOT t = (f32[3,3], f32[3,3]) tuple(tr, b)\n}\n",
	};
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	float a[9], b[9], r[9];
	for (int i = 0; i < 9; i++) {
		a[i] = (float)(i + 1);
		b[i] = (float)(100 + 10 * i);
	}
	int64_t dims[2] = { 3, 3 };
	for (int t = 0; t < 3; t++) {
		PJRT_LoadedExecutable *le = T_compile_text(c, texts[t]);
		PJRT_Buffer *in[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, a, NULL),
				       T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, b, NULL) };
		PJRT_Buffer *out[2] = { NULL, NULL };
		T_OK(T_execute(le, devs[0], in, 2, out, NULL, 0));
		ck_assert(T_is_deleted(in[0]));
		float want0[9], want1[9];
		for (int i = 0; i < 9; i++) {
			want0[i] = t == 0 ? a[i] - b[i] : t == 1 ? b[i] : a[3 * (i % 3) + i / 3];
			want1[i] = t == 0 ? a[i] : t == 1 ? a[i] : b[i];
		}
		T_to_host(out[0], r, sizeof(r));
		ck_assert_msg(memcmp(r, want0, sizeof(r)) == 0, "case %d output 0", t);
		T_to_host(out[1], r, sizeof(r));
		ck_assert_msg(memcmp(r, want1, sizeof(r)) == 0, "case %d output 1", t);
		for (int k = 0; k < 2; k++) {
			T_buffer_destroy(in[k]);
			T_buffer_destroy(out[k]);
		}
		T_loaded_destroy(le);
	}
	T_client_destroy(c);
}
END_TEST

/* torch_xla's own training step (mlp_train.pb, an SGD step of a small MLP): its
 * buffer_donor parameters 1-4 (the weights) are donated and updated in place, the
 * batch, labels and learning rate are left alone. */
START_TEST(test_torch_xla_donors_update_in_place)
{
	size_t len;
	char *pb = T_read_file(PJRT_PROTO_DIR "/mlp_train.pb", &len);
	ck_assert_msg(pb != NULL, "cannot read %s", PJRT_PROTO_DIR "/mlp_train.pb");
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_Error *err;
	PJRT_LoadedExecutable *le = T_compile(c, "hlo", pb, len, 1, &err);
	ck_assert_msg(err == NULL, "compile: %s", err ? T_msg(err) : "");
	/* s64[5] labels, f32[4], f32[4,16], f32[16], f32[16,8], f32[5,8] batch, f32[] lr */
	static const int64_t dims[7][2] = { { 5 }, { 4 }, { 4, 16 }, { 16 }, { 16, 8 }, { 5, 8 }, { 0 } };
	static const size_t ranks[7] = { 1, 1, 2, 1, 2, 2, 0 };
	PJRT_Buffer *args[7];
	int64_t labels[5] = { 0, 1, 2, 3, 0 };
	args[0] = T_buffer(c, devs[0], PJRT_Buffer_Type_S64, dims[0], 1, labels, NULL);
	float v[128];
	for (int i = 0; i < 128; i++)
		v[i] = 0.05f * (float)((i * 37) % 17 - 8);
	for (int p = 1; p < 7; p++)
		args[p] = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims[p], ranks[p], v, NULL);
	size_t nout = T_num_outputs(le);
	ck_assert_uint_eq(nout, 13);
	PJRT_Buffer *out[13];
	T_OK(T_execute(le, devs[0], args, 7, out, NULL, 0));
	for (int p = 0; p < 7; p++)
		ck_assert_msg(T_is_deleted(args[p]) == (p >= 1 && p <= 4), "parameter %d", p);
	float loss;
	T_to_host(out[0], &loss, sizeof(loss));
	ck_assert_msg(isfinite(loss) && loss > 0, "loss %f", loss);
	for (int p = 0; p < 7; p++)
		T_buffer_destroy(args[p]);
	for (size_t k = 0; k < nout; k++)
		T_buffer_destroy(out[k]);
	T_loaded_destroy(le);
	T_client_destroy(c);
	free(pb);
}
END_TEST

/* Zero-element parameters and outputs: nothing is bound for them, the outputs are
 * empty buffers; the other outputs are computed as usual (an empty batch through a
 * linear layer, an empty slice next to real outputs, a sum over nothing). */
/* A counter of the runtime the plugin loaded (libnrt's metrics). */
static int64_t nrt_counter(const char *name)
{
	void *h = dlopen("libnrt.so.1", RTLD_NOW | RTLD_NOLOAD);
	ck_assert_msg(h, "libnrt.so.1 is not loaded: %s", dlerror());
	int64_t (*fn)(const char *) = (int64_t (*)(const char *))dlsym(h, "nrt_neuronsim_counter_value");
	ck_assert(fn);
	int64_t v = fn(name);
	dlclose(h);
	return v;
}

static int64_t pool_bytes(PJRT_Device *dev)
{
	PJRT_Device_MemoryStats_Args ms = { .struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE, .device = dev };
	T_OK(API->PJRT_Device_MemoryStats(&ms));
	ck_assert(ms.pool_bytes_is_set);
	return ms.pool_bytes;
}

/* A destroyed buffer's device tensor waits in its device's pool for the next
 * execution, whose outputs of its size take it (no zeroing, no new memory):
 * torch_xla destroys a step's gradients before the next step's execution
 * makes new ones. The outputs hold the new results, never the old ones; the
 * pool is reported as pool_bytes, not in use, and what no output took is
 * freed by the execution. An allocation that needs the pooled memory gets
 * it (a device of 1 MiB). */
START_TEST(test_destroyed_buffers_become_next_outputs)
{
	static const char *const text =
		"HloModule pool_mod\n"
		"ENTRY main {\n  x = f32[1024] parameter(0)\n  t = f32[256] parameter(1)\n"
		"  d = f32[1024] add(x, x)\n  q = f32[256] multiply(t, t)\n"
		"  ROOT r = (f32[1024], f32[256]) tuple(d, q)\n}\n";
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, text);
	int64_t dx[1] = { 1024 }, dt[1] = { 256 }, d77[1] = { 77 };
	float x[1024], t[256], r[1024], z[77] = { 0 };
	PJRT_Buffer *out[2] = { NULL, NULL };
	int64_t held = 0;
	for (int step = 0; step < 3; step++) {
		for (int i = 0; i < 1024; i++)
			x[i] = (float)(i * (step + 1));
		for (int i = 0; i < 256; i++)
			t[i] = (float)(i % 9 + step);
		PJRT_Buffer *in[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dx, 1, x, NULL),
				       T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dt, 1, t, NULL) };
		/* the step before's outputs and inputs (destroyed at its end) and
		 * an unrelated buffer: pooled */
		PJRT_Buffer *other = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, d77, 1, z, NULL);
		int64_t before = bytes_in_use(devs[0]);
		for (int k = 0; k < 2; k++)
			if (out[k])
				T_buffer_destroy(out[k]);
		T_buffer_destroy(other);
		int64_t pooled = step ? 2 * (4096 + 1024) + 308 : 308;
		ck_assert_int_eq(pool_bytes(devs[0]), pooled);
		ck_assert(bytes_in_use(devs[0]) < before);
		int64_t reused = nrt_counter("ReusedOutputBuffer");
		T_OK(T_execute(le, devs[0], in, 2, out, NULL, 0));
		/* both outputs took a pooled tensor after the first step */
		ck_assert_int_eq(nrt_counter("ReusedOutputBuffer") - reused, step ? 2 : 0);
		/* taken or freed: nothing left in the pool; in use, the inputs and
		 * the two outputs */
		ck_assert_int_eq(pool_bytes(devs[0]), 0);
		if (step == 0)
			held = bytes_in_use(devs[0]);
		else
			ck_assert_int_eq(bytes_in_use(devs[0]), held);
		T_to_host(out[0], r, sizeof(float) * 1024);
		for (int i = 0; i < 1024; i++)
			ck_assert_msg(r[i] == 2 * x[i], "step %d: element %d is %g", step, i, r[i]);
		T_to_host(out[1], r, sizeof(float) * 256);
		for (int i = 0; i < 256; i++)
			ck_assert(r[i] == t[i] * t[i]);
		for (int k = 0; k < 2; k++)
			T_buffer_destroy(in[k]);
	}
	for (int k = 0; k < 2; k++)
		T_buffer_destroy(out[k]);
	T_loaded_destroy(le);
	T_client_destroy(c);

	/* 1 MiB: a second 600 KB buffer fits only once the first one's pooled
	 * tensor is freed, which happens before the allocation (no
	 * out-of-memory report, whose table would be written to the
	 * directory) */
	char dir[] = "/tmp/pjrt_pool_XXXXXX";
	ck_assert(mkdtemp(dir));
	setenv("NEURONSIM_MEM_TABLE_DIR", dir, 1);
	setenv("NEURONSIM_DEVICE_MEMORY", "1M", 1);
	c = T_client();
	unsetenv("NEURONSIM_DEVICE_MEMORY");
	T_devices(c, &devs);
	static float big[150 * 1024];
	int64_t db[1] = { 150 * 1024 };
	PJRT_Buffer *b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, db, 1, big, NULL);
	T_buffer_destroy(b);
	ck_assert_int_eq(pool_bytes(devs[0]), (int64_t)sizeof(big));
	b = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, db, 1, big, NULL);
	ck_assert_int_eq(pool_bytes(devs[0]), 0);
	T_buffer_destroy(b);
	T_client_destroy(c);
	unsetenv("NEURONSIM_MEM_TABLE_DIR");
	char table[96];
	snprintf(table, sizeof(table), "%s/neuron_mem_table_device_0_hbm_0.log", dir);
	ck_assert_msg(access(table, F_OK) != 0, "an out-of-memory report was written");
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_zero_element_parameters_and_outputs)
{
	static const char *const text =
		"HloModule empty_io\n"
		"add { x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT xy = f32[] add(x, y) }\n"
		"ENTRY main {\n  xin = f32[0,4] parameter(0)\n  w = f32[4,3] parameter(1)\n"
		"  d = f32[0,3] dot(xin, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  sl = f32[0,3] slice(w), slice={[2:2], [0:3]}\n  z = f32[] constant(0)\n"
		"  s = f32[3] reduce(d, z), dimensions={0}, to_apply=add\n"
		"  w2 = f32[4,3] add(w, w)\n"
		"  ROOT t = (f32[0,3], f32[4,3], f32[0,3], f32[3]) tuple(d, w2, sl, s)\n}\n";
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, text);
	ck_assert_uint_eq(T_num_outputs(le), 4);
	float w[12], r[12];
	for (int i = 0; i < 12; i++)
		w[i] = (float)i;
	int64_t xd[2] = { 0, 4 }, wd[2] = { 4, 3 };
	PJRT_Buffer *in[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, xd, 2, NULL, NULL),
			       T_buffer(c, devs[0], PJRT_Buffer_Type_F32, wd, 2, w, NULL) };
	for (int rep = 0; rep < 2; rep++) {
		PJRT_Buffer *out[4] = { NULL, NULL, NULL, NULL };
		T_OK(T_execute(le, devs[0], in, 2, out, NULL, 0));
		static const int64_t want_dims[4][2] = { { 0, 3 }, { 4, 3 }, { 0, 3 }, { 3, 0 } };
		for (int k = 0; k < 4; k++) {
			PJRT_Buffer_Dimensions_Args dm = { .struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE,
							   .buffer = out[k] };
			T_OK(API->PJRT_Buffer_Dimensions(&dm));
			ck_assert_uint_eq(dm.num_dims, k == 3 ? 1 : 2);
			ck_assert(dm.dims[0] == want_dims[k][0] && (k == 3 || dm.dims[1] == want_dims[k][1]));
			ck_assert(!T_is_deleted(out[k]));
		}
		ck_assert_uint_eq(T_to_host(out[0], r, sizeof(r)), 0);
		ck_assert_uint_eq(T_to_host(out[2], r, sizeof(r)), 0);
		T_to_host(out[1], r, sizeof(r));
		for (int i = 0; i < 12; i++)
			ck_assert(r[i] == 2 * w[i]);
		T_to_host(out[3], r, sizeof(r));
		ck_assert(r[0] == 0 && r[1] == 0 && r[2] == 0);
		/* an empty output feeds the next execution as an empty argument */
		if (rep == 0) {
			PJRT_Buffer *old = in[0];
			in[0] = T_buffer(c, devs[0], PJRT_Buffer_Type_F32, xd, 2, NULL, NULL);
			T_buffer_destroy(old);
		}
		for (int k = 0; k < 4; k++)
			T_buffer_destroy(out[k]);
	}
	/* a program with no tensor at all */
	PJRT_LoadedExecutable *none = T_compile_text(c, "HloModule none\nENTRY main {\n  x = f32[0,4] parameter(0)\n"
						       "  ROOT n = f32[0,4] negate(x)\n}\n");
	PJRT_Buffer *out1[1] = { NULL };
	T_OK(T_execute(none, devs[0], in, 1, out1, NULL, 0));
	ck_assert_uint_eq(T_to_host(out1[0], r, sizeof(r)), 0);
	T_buffer_destroy(out1[0]);
	T_loaded_destroy(none);
	T_buffer_destroy(in[0]);
	T_buffer_destroy(in[1]);
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pjrt");
	TCase *tc = tcase_create("pjrt");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_version_and_struct_sizes);
	tcase_add_test(tc, test_plugin_attributes);
	tcase_add_test(tc, test_client_create_destroy);
	tcase_add_test(tc, test_devices_and_memories);
	tcase_add_test(tc, test_buffer_round_trip_every_type);
	tcase_add_test(tc, test_buffer_strided_and_layouts);
	tcase_add_test(tc, test_buffer_zero_sized);
	tcase_add_test(tc, test_buffer_copies_delete_and_events);
	tcase_add_test(tc, test_compile_and_execute_add);
	tcase_add_test(tc, test_compile_replicated);
	tcase_add_test(tc, test_compile_errors);
	tcase_add_test(tc, test_compile_hlo_proto_and_optimized_program);
	tcase_add_test(tc, test_donation_in_place);
	tcase_add_test(tc, test_donation_refused_when_not_donatable);
	tcase_add_test(tc, test_mlp_training_step);
	tcase_add_test(tc, test_nan_error_names_instruction);
	tcase_add_test(tc, test_failed_execution_consumes_donated_input);
	tcase_add_test(tc, test_f64_program_within_f32_of_the_interpreter);
	tcase_add_test(tc, test_buffer_donor_updates_in_place);
	tcase_add_test(tc, test_torch_xla_donors_update_in_place);
	tcase_add_test(tc, test_in_place_outputs_read_inputs_before_overwriting);
	tcase_add_test(tc, test_destroyed_buffers_become_next_outputs);
	tcase_add_test(tc, test_zero_element_parameters_and_outputs);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_serialize_round_trip);
	tcase_add_test(tc, test_unimplemented_functions_name_themselves);
	tcase_add_test(tc, test_misuse_null_and_small_structs);
	tcase_add_test(tc, test_misuse_stale_and_foreign_handles);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
