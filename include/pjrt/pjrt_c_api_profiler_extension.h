/* The PJRT profiler extension (OpenXLA's xla/pjrt/c/pjrt_c_api_profiler_extension.h and xla/backends/profiler/plugin/profiler_c_api.h, as of 2025-08): the table a framework's profiler drives to collect a plugin's trace. */
#ifndef PJRT_PJRT_C_API_PROFILER_EXTENSION_H
#define PJRT_PJRT_C_API_PROFILER_EXTENSION_H

/*
 * Written for neuronsim from the public definition of the two headers of the
 * XLA that PyTorch/XLA 2.9 pins (2025-08, extension version 1, plugin profiler
 * version 1). Names, struct layouts, field order and the order of the
 * PLUGIN_Profiler_Api members are the original's: the framework reads them by
 * offset. docs/pjrt.md says what the neuronsim plugin does with each call.
 *
 * How XLA's PluginTracer (xla/backends/profiler/plugin/plugin_tracer.cc) calls
 * it, which a plugin must accept:
 * - it finds PJRT_Profiler_Extension in PJRT_Api.extension_start and refuses
 *   a PLUGIN_Profiler_Api whose struct_size is not PLUGIN_Profiler_Api_STRUCT_SIZE;
 * - create, destroy, start, stop and collect_data get args whose struct_size
 *   is NOT set (stack garbage): a plugin must not check it there; the error
 *   functions' args do carry it;
 * - create's options are a serialized tensorflow.ProfileOptions;
 * - collect_data is called once with buffer NULL, and the framework then parses
 *   buffer[0, buffer_size_in_bytes) as a tensorflow.profiler.XSpace: the plugin
 *   returns its own bytes there (valid until the next collect_data or destroy).
 *   The header's documented protocol, a second call with a caller's buffer of
 *   at least buffer_size_in_bytes, copies the bytes into it.
 */

#include <stddef.h>
#include <stdint.h>

#include "pjrt/pjrt_c_api.h"

#define PROFILER_STRUCT_SIZE(struct_type, last_field) \
	(offsetof(struct_type, last_field) + sizeof(((struct_type *)0)->last_field))

#define PROFILER_DEFINE_STRUCT_TRAITS(sname, last_field) \
	typedef struct sname sname; \
	enum { sname##_STRUCT_SIZE = PROFILER_STRUCT_SIZE(sname, last_field) }

#ifdef __cplusplus
extern "C" {
#endif

/* ---- profiler_c_api.h */
#define PLUGIN_PROFILER_VERSION 1

typedef struct PLUGIN_Profiler PLUGIN_Profiler;
typedef struct PLUGIN_Profiler_Error PLUGIN_Profiler_Error;

struct PLUGIN_Profiler_Error_Destroy_Args {
	size_t struct_size;
	void* priv;
	PLUGIN_Profiler_Error* error;     /* in, may be NULL; freed */
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Error_Destroy_Args, error);

typedef void PLUGIN_Profiler_Error_Destroy(PLUGIN_Profiler_Error_Destroy_Args* args);

struct PLUGIN_Profiler_Error_Message_Args {
	size_t struct_size;
	void* priv;
	const PLUGIN_Profiler_Error* error;
	const char* message;              /* out, lives as long as error */
	size_t message_size;              /* out */
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Error_Message_Args, message_size);

typedef void PLUGIN_Profiler_Error_Message(PLUGIN_Profiler_Error_Message_Args* args);

struct PLUGIN_Profiler_Error_GetCode_Args {
	size_t struct_size;
	void* priv;
	const PLUGIN_Profiler_Error* error;
	int code;                         /* out, an absl::StatusCode (= PJRT_Error_Code) */
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Error_GetCode_Args, code);

typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Error_GetCode(PLUGIN_Profiler_Error_GetCode_Args* args);

struct PLUGIN_Profiler_Create_Args {
	size_t struct_size;
	const char* options;              /* in, serialized tensorflow.ProfileOptions */
	size_t options_size;
	PLUGIN_Profiler* profiler;        /* out */
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Create_Args, profiler);

typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Create(PLUGIN_Profiler_Create_Args* args);

struct PLUGIN_Profiler_Destroy_Args {
	size_t struct_size;
	PLUGIN_Profiler* profiler;
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Destroy_Args, profiler);

typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Destroy(PLUGIN_Profiler_Destroy_Args* args);

struct PLUGIN_Profiler_Start_Args {
	size_t struct_size;
	PLUGIN_Profiler* profiler;
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Start_Args, profiler);

typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Start(PLUGIN_Profiler_Start_Args* args);

struct PLUGIN_Profiler_Stop_Args {
	size_t struct_size;
	PLUGIN_Profiler* profiler;
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Stop_Args, profiler);

typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Stop(PLUGIN_Profiler_Stop_Args* args);

struct PLUGIN_Profiler_CollectData_Args {
	size_t struct_size;
	PLUGIN_Profiler* profiler;
	uint8_t* buffer;                  /* in/out, see above */
	size_t buffer_size_in_bytes;      /* out */
};
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_CollectData_Args, buffer_size_in_bytes);

typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_CollectData(PLUGIN_Profiler_CollectData_Args* args);

typedef struct PLUGIN_Profiler_Api {
	size_t struct_size;
	void* priv;
	PLUGIN_Profiler_Error_Destroy* error_destroy;
	PLUGIN_Profiler_Error_Message* error_message;
	PLUGIN_Profiler_Error_GetCode* error_get_code;
	PLUGIN_Profiler_Create* create;
	PLUGIN_Profiler_Destroy* destroy;
	PLUGIN_Profiler_Start* start;
	PLUGIN_Profiler_Stop* stop;
	PLUGIN_Profiler_CollectData* collect_data;
} PLUGIN_Profiler_Api;
PROFILER_DEFINE_STRUCT_TRAITS(PLUGIN_Profiler_Api, collect_data);

/* ---- pjrt_c_api_profiler_extension.h */
#define PJRT_API_PROFILER_EXTENSION_VERSION 1

typedef struct PJRT_Profiler_Extension {
	size_t struct_size;
	PJRT_Extension_Type type;         /* PJRT_Extension_Type_Profiler */
	PJRT_Extension_Base* next;
	/* NULL when the struct is used as an args extension */
	PLUGIN_Profiler_Api* profiler_api;
	/* valid only when used as an args extension */
	int64_t traceme_context_id;
} PJRT_Profiler_Extension;
PJRT_DEFINE_STRUCT_TRAITS(PJRT_Profiler_Extension, traceme_context_id);

#ifdef __cplusplus
}
#endif
#endif /* PJRT_PJRT_C_API_PROFILER_EXTENSION_H */
