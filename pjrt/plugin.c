/* The plugin's entry point GetPjrtApi: the PJRT_Api table, the plugin context, call tracing, plugin attributes and the runtime shared by clients. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/log.h"
#include "nrt/nrt_neuronsim.h"
#include "pjrt/pjrt_c_api_profiler_extension.h"
#include "pjrt_internal.h"
#include "uapi/linux/neuronsim_version.h"

/* pjrt/profiler.c */
extern PJRT_Profiler_Extension pjrt_profiler_extension;

static pjrt_plugin_t g_plugin = {
	.handles = { .lock = PTHREAD_MUTEX_INITIALIZER, .drained = PTHREAD_COND_INITIALIZER },
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

pjrt_plugin_t *pjrt_plugin_ctx(void)
{
	return &g_plugin;
}

static void read_env(void)
{
	pthread_mutex_lock(&g_plugin.lock);
	if (!g_plugin.env_read) {
		const char *v = getenv("NEURONSIM_PJRT_TRACE");
		g_plugin.trace = v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "off") != 0 &&
				 strcasecmp(v, "false") != 0 && strcasecmp(v, "no") != 0;
		__atomic_store_n(&g_plugin.env_read, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&g_plugin.lock);
}

bool pjrt_trace_on(void)
{
	if (!__atomic_load_n(&g_plugin.env_read, __ATOMIC_ACQUIRE))
		read_env();
	return g_plugin.trace != 0;
}

void pjrt_log(const char *fmt, ...)
{
	static const ns_log_sink_t sink = { .dest = NS_LOG_TO_STDERR, .tag = "neuronsim-pjrt" };
	va_list ap;
	va_start(ap, fmt);
	ns_log_vwrite(&sink, NS_LOG_INFO, "", fmt, ap);
	va_end(ap);
}

static void trace_leave(const char *fn, PJRT_Error *e)
{
	if (!pjrt_trace_on())
		return;
	if (!e) {
		pjrt_log("%s", fn);
		return;
	}
	PJRT_Error_Code code = PJRT_Error_Code_UNKNOWN;
	const char *msg = "?";
	pjrt_error_peek(e, &code, &msg);
	pjrt_log("%s -> %s: %s", fn, pjrt_code_name(code), msg);
}

/* ----------------------------------------------------------------- runtime */

PJRT_Error *pjrt_runtime_acquire(void)
{
	PJRT_Error *err = NULL;
	pthread_mutex_lock(&g_plugin.lock);
	if (g_plugin.runtime_users == 0) {
		NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "neuronsim-pjrt", "");
		nrt_neuronsim_mem_usage_t u;
		if (st == NRT_SUCCESS) {
			g_plugin.runtime_owned = true;
		} else if (st == NRT_INVALID && nrt_neuronsim_get_mem_usage(&u) == NRT_SUCCESS) {
			/* Someone else in the process initialised libnrt: share it. */
			g_plugin.runtime_owned = false;
		} else {
			err = pjrt_error(pjrt_code_from_nrt(st),
					 "nrt_init failed: %s (%d); the runtime's error line on stderr "
					 "names the cause (docs/env.md lists its variables)",
					 nrt_get_status_as_str(st), (int)st);
		}
	}
	if (!err)
		g_plugin.runtime_users++;
	pthread_mutex_unlock(&g_plugin.lock);
	return err;
}

void pjrt_runtime_release(void)
{
	pthread_mutex_lock(&g_plugin.lock);
	if (g_plugin.runtime_users > 0 && --g_plugin.runtime_users == 0 && g_plugin.runtime_owned) {
		nrt_close();
		g_plugin.runtime_owned = false;
	}
	pthread_mutex_unlock(&g_plugin.lock);
}

/* ------------------------------------------------------------------ plugin */

PJRT_IMPL(Plugin_Initialize)
{
	PJRT_CHECK_ARGS(args, PJRT_Plugin_Initialize_Args, extension_start);
	read_env();
	return NULL;
}

static const PJRT_NamedValue plugin_attributes[] = {
	{
		.struct_size = PJRT_NamedValue_STRUCT_SIZE,
		.name = "neuronsim_version",
		.name_size = sizeof("neuronsim_version") - 1,
		.type = PJRT_NamedValue_kString,
		.string_value = NEURONSIM_VERSION,
		.value_size = sizeof(NEURONSIM_VERSION) - 1,
	},
	{
		/* The compiler's own version: it keys the compile cache. */
		.struct_size = PJRT_NamedValue_STRUCT_SIZE,
		.name = "compiler_version",
		.name_size = sizeof("compiler_version") - 1,
		.type = PJRT_NamedValue_kString,
		.string_value = NCC_VERSION_STRING,
		.value_size = sizeof(NCC_VERSION_STRING) - 1,
	},
	{
		.struct_size = PJRT_NamedValue_STRUCT_SIZE,
		.name = "program_formats",
		.name_size = sizeof("program_formats") - 1,
		.type = PJRT_NamedValue_kString,
		.string_value = "hlo,hlo_text",
		.value_size = sizeof("hlo,hlo_text") - 1,
	},
};

PJRT_IMPL(Plugin_Attributes)
{
	PJRT_CHECK_ARGS(args, PJRT_Plugin_Attributes_Args, num_attributes);
	args->attributes = plugin_attributes;
	args->num_attributes = sizeof(plugin_attributes) / sizeof(plugin_attributes[0]);
	return NULL;
}

/* ------------------------------------------------------------ the API table */

/* Every member of PJRT_Api in order: I implemented (pjrt_impl_NAME), U not. */
#define PJRT_FUNCTIONS(I, U)                        \
	I(Error_GetCode)                            \
	I(Plugin_Initialize)                        \
	I(Plugin_Attributes)                        \
	I(Event_Destroy)                            \
	I(Event_IsReady)                            \
	I(Event_Error)                              \
	I(Event_Await)                              \
	I(Event_OnReady)                            \
	I(Client_Create)                            \
	I(Client_Destroy)                           \
	I(Client_PlatformName)                      \
	I(Client_ProcessIndex)                      \
	I(Client_PlatformVersion)                   \
	I(Client_Devices)                           \
	I(Client_AddressableDevices)                \
	I(Client_LookupDevice)                      \
	I(Client_LookupAddressableDevice)           \
	I(Client_AddressableMemories)               \
	I(Client_Compile)                           \
	I(Client_DefaultDeviceAssignment)           \
	I(Client_BufferFromHostBuffer)              \
	I(DeviceDescription_Id)                     \
	I(DeviceDescription_ProcessIndex)           \
	I(DeviceDescription_Attributes)             \
	I(DeviceDescription_Kind)                   \
	I(DeviceDescription_DebugString)            \
	I(DeviceDescription_ToString)               \
	I(Device_GetDescription)                    \
	I(Device_IsAddressable)                     \
	I(Device_LocalHardwareId)                   \
	I(Device_AddressableMemories)               \
	I(Device_DefaultMemory)                     \
	I(Device_MemoryStats)                       \
	I(Memory_Id)                                \
	I(Memory_Kind)                              \
	I(Memory_DebugString)                       \
	I(Memory_ToString)                          \
	I(Memory_AddressableByDevices)              \
	I(Executable_Destroy)                       \
	I(Executable_Name)                          \
	I(Executable_NumReplicas)                   \
	I(Executable_NumPartitions)                 \
	I(Executable_NumOutputs)                    \
	I(Executable_SizeOfGeneratedCodeInBytes)    \
	I(Executable_GetCostAnalysis)               \
	I(Executable_OutputMemoryKinds)             \
	I(Executable_OptimizedProgram)              \
	I(Executable_Serialize)                     \
	I(LoadedExecutable_Destroy)                 \
	I(LoadedExecutable_GetExecutable)           \
	I(LoadedExecutable_AddressableDevices)      \
	I(LoadedExecutable_Delete)                  \
	I(LoadedExecutable_IsDeleted)               \
	I(LoadedExecutable_Execute)                 \
	I(Executable_DeserializeAndLoad)            \
	I(LoadedExecutable_Fingerprint)             \
	I(Buffer_Destroy)                           \
	I(Buffer_ElementType)                       \
	I(Buffer_Dimensions)                        \
	I(Buffer_UnpaddedDimensions)                \
	I(Buffer_DynamicDimensionIndices)           \
	I(Buffer_GetMemoryLayout)                   \
	I(Buffer_OnDeviceSizeInBytes)               \
	I(Buffer_Device)                            \
	I(Buffer_Memory)                            \
	I(Buffer_Delete)                            \
	I(Buffer_IsDeleted)                         \
	I(Buffer_CopyToDevice)                      \
	I(Buffer_ToHostBuffer)                      \
	I(Buffer_IsOnCpu)                           \
	I(Buffer_ReadyEvent)                        \
	U(Buffer_UnsafePointer)                     \
	U(Buffer_IncreaseExternalReferenceCount)    \
	U(Buffer_DecreaseExternalReferenceCount)    \
	U(Buffer_OpaqueDeviceMemoryDataPointer)     \
	U(CopyToDeviceStream_Destroy)               \
	U(CopyToDeviceStream_AddChunk)              \
	U(CopyToDeviceStream_TotalBytes)            \
	U(CopyToDeviceStream_GranuleSize)           \
	U(CopyToDeviceStream_CurrentBytes)          \
	U(TopologyDescription_Create)               \
	U(TopologyDescription_Destroy)              \
	U(TopologyDescription_PlatformName)         \
	U(TopologyDescription_PlatformVersion)      \
	U(TopologyDescription_GetDeviceDescriptions) \
	U(TopologyDescription_Serialize)            \
	U(TopologyDescription_Attributes)           \
	U(Compile)                                  \
	I(Executable_OutputElementTypes)            \
	I(Executable_OutputDimensions)              \
	I(Buffer_CopyToMemory)                      \
	U(Client_CreateViewOfDeviceBuffer)          \
	I(Executable_Fingerprint)                   \
	U(Client_TopologyDescription)               \
	I(Executable_GetCompiledMemoryStats)        \
	I(Memory_Kind_Id)                           \
	U(ExecuteContext_Create)                    \
	U(ExecuteContext_Destroy)                   \
	I(Buffer_CopyRawToHost)                     \
	U(AsyncHostToDeviceTransferManager_Destroy) \
	U(AsyncHostToDeviceTransferManager_TransferData) \
	U(Client_CreateBuffersForAsyncHostToDevice) \
	U(AsyncHostToDeviceTransferManager_RetrieveBuffer) \
	U(AsyncHostToDeviceTransferManager_Device)  \
	U(AsyncHostToDeviceTransferManager_BufferCount) \
	U(AsyncHostToDeviceTransferManager_BufferSize) \
	U(AsyncHostToDeviceTransferManager_SetBufferError) \
	U(AsyncHostToDeviceTransferManager_AddMetadata) \
	U(Client_DmaMap)                            \
	U(Client_DmaUnmap)                          \
	I(Client_CreateUninitializedBuffer)         \
	U(Client_UpdateGlobalProcessInfo)           \
	U(TopologyDescription_Deserialize)

#define WRAP_IMPL(name)                                                  \
	static PJRT_Error *wrap_##name(PJRT_##name##_Args *args)         \
	{                                                                \
		PJRT_Error *e = pjrt_impl_##name(args);                  \
		trace_leave("PJRT_" #name, e);                           \
		return e;                                                \
	}
#define WRAP_UNIMPL(name)                                                                     \
	static PJRT_Error *wrap_##name(PJRT_##name##_Args *args)                              \
	{                                                                                     \
		(void)args;                                                                   \
		PJRT_Error *e = pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,                     \
					   "PJRT_" #name " is not implemented by the neuronsim " \
					   "PJRT plugin (docs/pjrt.md lists what is)");          \
		trace_leave("PJRT_" #name, e);                                                \
		return e;                                                                     \
	}
PJRT_FUNCTIONS(WRAP_IMPL, WRAP_UNIMPL)

static void wrap_Error_Destroy(PJRT_Error_Destroy_Args *args)
{
	/* Errors are destroyed all the time: traced only with the call names of
	 * their creators, not here. */
	pjrt_impl_Error_Destroy(args);
}

static void wrap_Error_Message(PJRT_Error_Message_Args *args)
{
	pjrt_impl_Error_Message(args);
}

#define ENTRY(name) .PJRT_##name = wrap_##name,
static const PJRT_Api g_api = {
	.struct_size = PJRT_Api_STRUCT_SIZE,
	/* the extensions offered (pjrt/profiler.c; docs/pjrt.md) */
	.extension_start = (PJRT_Extension_Base *)&pjrt_profiler_extension,
	.pjrt_api_version = {
		.struct_size = PJRT_Api_Version_STRUCT_SIZE,
		.extension_start = NULL,
		.major_version = PJRT_API_MAJOR,
		.minor_version = PJRT_API_MINOR,
	},
	.PJRT_Error_Destroy = wrap_Error_Destroy,
	.PJRT_Error_Message = wrap_Error_Message,
	PJRT_FUNCTIONS(ENTRY, ENTRY)
};

/* The one exported symbol (pjrt/libneuronsim_pjrt.map). */
const PJRT_Api *GetPjrtApi(void);

const PJRT_Api *GetPjrtApi(void)
{
	read_env();
	if (pjrt_trace_on())
		pjrt_log("GetPjrtApi: PJRT C API %d.%d", PJRT_API_MAJOR, PJRT_API_MINOR);
	return &g_api;
}
