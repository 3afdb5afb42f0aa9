/* Helpers of the PJRT plugin tests: dlopen of the built plugin, error checks, args structs filled as PyTorch/XLA fills them. */
#include "pjrt_test_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PJRT_PLUGIN_PATH
#error "PJRT_PLUGIN_PATH must name the built libneuronsim_pjrt.so"
#endif

const PJRT_Api *T_api(void)
{
	static const PJRT_Api *api;
	if (api)
		return api;
	void *lib = dlopen(PJRT_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib != NULL, "dlopen %s: %s", PJRT_PLUGIN_PATH, dlerror());
	const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(lib, "GetPjrtApi");
	ck_assert_msg(get != NULL, "GetPjrtApi not exported");
	api = get();
	ck_assert_ptr_nonnull(api);
	PJRT_Plugin_Initialize_Args a = { .struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE };
	PJRT_Error *e = api->PJRT_Plugin_Initialize(&a);
	ck_assert_ptr_null(e);
	return api;
}

PJRT_Error_Code T_code(PJRT_Error *err)
{
	if (!err)
		return 0;
	PJRT_Error_GetCode_Args a = { .struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = err };
	PJRT_Error *e2 = API->PJRT_Error_GetCode(&a);
	ck_assert_ptr_null(e2);
	return a.code;
}

const char *T_msg(PJRT_Error *err)
{
	if (!err)
		return "";
	PJRT_Error_Message_Args a = { .struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = err };
	API->PJRT_Error_Message(&a);
	ck_assert_ptr_nonnull(a.message);
	ck_assert_uint_eq(strlen(a.message), a.message_size);
	return a.message;
}

void T_free(PJRT_Error *err)
{
	PJRT_Error_Destroy_Args a = { .struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = err };
	API->PJRT_Error_Destroy(&a);
}

void T_expect(PJRT_Error *err, PJRT_Error_Code code, const char *substr, const char *what)
{
	ck_assert_msg(err != NULL, "%s: succeeded, expected error code %d", what, (int)code);
	const char *m = T_msg(err);
	ck_assert_msg(T_code(err) == code, "%s: code %d, expected %d (%s)", what, (int)T_code(err), (int)code, m);
	if (substr)
		ck_assert_msg(strstr(m, substr) != NULL, "%s: message '%s' lacks '%s'", what, m, substr);
	T_free(err);
}

PJRT_Client *T_client(void)
{
	PJRT_Client_Create_Args a = { .struct_size = PJRT_Client_Create_Args_STRUCT_SIZE };
	T_OK(API->PJRT_Client_Create(&a));
	ck_assert_ptr_nonnull(a.client);
	return a.client;
}

void T_client_destroy(PJRT_Client *c)
{
	PJRT_Client_Destroy_Args a = { .struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c };
	T_OK(API->PJRT_Client_Destroy(&a));
}

size_t T_devices(PJRT_Client *c, PJRT_Device *const **out)
{
	PJRT_Client_AddressableDevices_Args a = { .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE,
						  .client = c };
	T_OK(API->PJRT_Client_AddressableDevices(&a));
	*out = a.addressable_devices;
	return a.num_addressable_devices;
}

PJRT_Buffer *T_buffer(PJRT_Client *c, PJRT_Device *dev, PJRT_Buffer_Type type, const int64_t *dims, size_t rank,
		      const void *data, const int64_t *byte_strides)
{
	PJRT_Client_BufferFromHostBuffer_Args a = {
		.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
		.client = c,
		.data = data,
		.type = type,
		.dims = dims,
		.num_dims = rank,
		.byte_strides = byte_strides,
		.num_byte_strides = byte_strides ? rank : 0,
		.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
		.device = dev,
	};
	T_OK(API->PJRT_Client_BufferFromHostBuffer(&a));
	ck_assert_ptr_nonnull(a.buffer);
	ck_assert_ptr_nonnull(a.done_with_host_buffer);
	PJRT_Event_IsReady_Args r = { .struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE,
				      .event = a.done_with_host_buffer };
	T_OK(API->PJRT_Event_IsReady(&r));
	ck_assert(r.is_ready);
	PJRT_Event_Destroy_Args d = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
				      .event = a.done_with_host_buffer };
	T_OK(API->PJRT_Event_Destroy(&d));
	return a.buffer;
}

size_t T_to_host(PJRT_Buffer *b, void *dst, size_t size)
{
	PJRT_Buffer_ToHostBuffer_Args q = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = b };
	T_OK(API->PJRT_Buffer_ToHostBuffer(&q));
	ck_assert_uint_le(q.dst_size, size);
	PJRT_Buffer_ToHostBuffer_Args a = { .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
					    .src = b, .dst = dst, .dst_size = size };
	T_OK(API->PJRT_Buffer_ToHostBuffer(&a));
	ck_assert_ptr_nonnull(a.event);
	PJRT_Event_Await_Args w = { .struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = a.event };
	T_OK(API->PJRT_Event_Await(&w));
	PJRT_Event_Destroy_Args d = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = a.event };
	T_OK(API->PJRT_Event_Destroy(&d));
	return q.dst_size;
}

void T_buffer_destroy(PJRT_Buffer *b)
{
	PJRT_Buffer_Destroy_Args a = { .struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = b };
	T_OK(API->PJRT_Buffer_Destroy(&a));
}

bool T_is_deleted(PJRT_Buffer *b)
{
	PJRT_Buffer_IsDeleted_Args a = { .struct_size = PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE, .buffer = b };
	T_OK(API->PJRT_Buffer_IsDeleted(&a));
	return a.is_deleted;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	do {
		p[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		p[n++] |= v ? 0x80 : 0;
	} while (v);
	return n;
}

size_t T_compile_options(uint8_t *buf, int64_t replicas, int64_t partitions)
{
	uint8_t build[32];
	size_t n = 0;
	n += put_varint(build + n, 4 << 3 | 0); /* num_replicas */
	n += put_varint(build + n, (uint64_t)replicas);
	if (partitions) {
		n += put_varint(build + n, 5 << 3 | 0); /* num_partitions */
		n += put_varint(build + n, (uint64_t)partitions);
	}
	size_t m = 0;
	m += put_varint(buf + m, 3 << 3 | 2); /* executable_build_options */
	m += put_varint(buf + m, n);
	memcpy(buf + m, build, n);
	return m + n;
}

PJRT_LoadedExecutable *T_compile(PJRT_Client *c, const char *format, const void *code, size_t size, int replicas,
				 PJRT_Error **err)
{
	uint8_t opts[64];
	size_t opts_len = T_compile_options(opts, replicas, 1);
	PJRT_Program p = {
		.struct_size = PJRT_Program_STRUCT_SIZE,
		.code = (char *)code,
		.code_size = size,
		.format = format,
		.format_size = strlen(format),
	};
	PJRT_Client_Compile_Args a = {
		.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
		.client = c,
		.program = &p,
		.compile_options = (const char *)opts,
		.compile_options_size = opts_len,
	};
	*err = API->PJRT_Client_Compile(&a);
	return a.executable;
}

PJRT_LoadedExecutable *T_compile_text(PJRT_Client *c, const char *text)
{
	PJRT_Error *err;
	PJRT_LoadedExecutable *le = T_compile(c, "hlo_text", text, strlen(text), 1, &err);
	ck_assert_msg(err == NULL, "compile failed: %s", err ? T_msg(err) : "");
	ck_assert_ptr_nonnull(le);
	return le;
}

PJRT_Executable *T_executable(PJRT_LoadedExecutable *le)
{
	PJRT_LoadedExecutable_GetExecutable_Args a = {
		.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le };
	T_OK(API->PJRT_LoadedExecutable_GetExecutable(&a));
	return a.executable;
}

void T_loaded_destroy(PJRT_LoadedExecutable *le)
{
	PJRT_LoadedExecutable_Destroy_Args a = { .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
						 .executable = le };
	T_OK(API->PJRT_LoadedExecutable_Destroy(&a));
}

void T_executable_destroy(PJRT_Executable *e)
{
	PJRT_Executable_Destroy_Args a = { .struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE, .executable = e };
	T_OK(API->PJRT_Executable_Destroy(&a));
}

size_t T_num_outputs(PJRT_LoadedExecutable *le)
{
	PJRT_Executable *e = T_executable(le);
	PJRT_Executable_NumOutputs_Args a = { .struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE,
					      .executable = e };
	T_OK(API->PJRT_Executable_NumOutputs(&a));
	T_executable_destroy(e);
	return a.num_outputs;
}

PJRT_Error *T_execute(PJRT_LoadedExecutable *le, PJRT_Device *dev, PJRT_Buffer **args, size_t nargs,
		      PJRT_Buffer **outs, const int64_t *non_donatable, size_t n_non_donatable)
{
	PJRT_ExecuteOptions o = {
		.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE,
		.non_donatable_input_indices = non_donatable,
		.num_non_donatable_input_indices = n_non_donatable,
	};
	PJRT_Buffer *const *arg_lists[1] = { args };
	PJRT_Buffer **out_lists[1] = { outs };
	PJRT_Event *events[1] = { NULL };
	PJRT_LoadedExecutable_Execute_Args a = {
		.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
		.executable = le,
		.options = &o,
		.argument_lists = arg_lists,
		.num_devices = 1,
		.num_args = nargs,
		.output_lists = out_lists,
		.device_complete_events = events,
		.execute_device = dev,
	};
	PJRT_Error *err = API->PJRT_LoadedExecutable_Execute(&a);
	if (!err) {
		ck_assert_ptr_nonnull(events[0]);
		PJRT_Event_Destroy_Args d = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = events[0] };
		T_OK(API->PJRT_Event_Destroy(&d));
	}
	return err;
}

char *T_read_file(const char *path, size_t *out_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*out_len = (size_t)n;
	}
	return buf;
}
