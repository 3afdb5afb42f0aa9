/* libneuronsim_pjrt internals: the objects behind the PJRT handles, who owns what, and the helpers the plugin's files share. */
#ifndef NEURONSIM_PJRT_INTERNAL_H
#define NEURONSIM_PJRT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncc/ncc.h"
#include "nrt/nrt.h"
#include "pjrt/pjrt_c_api.h"

/*
 * Ownership and lifetime
 *
 * - Every object the framework sees (error, event, client, device, device
 *   description, memory, buffer, executable, loaded executable) is named by a
 *   handle (handle.c): a generation-checked 64-bit id cast to the opaque PJRT
 *   pointer type, never a pointer into the plugin. A destroyed, foreign or
 *   garbage handle is refused with INVALID_ARGUMENT instead of being
 *   dereferenced. While a call uses an object it holds a reference on its handle;
 *   destroying the handle waits for those calls to finish.
 * - The plugin context (pjrt_plugin_t, plugin.c) is the only global: the handle
 *   table, the trace switch and the count of clients using libnrt. The first
 *   client calls nrt_init() and the last one to go calls nrt_close() (unless the
 *   runtime was already initialised by someone else in the process, which the
 *   plugin then uses but never closes).
 * - A client (pjrt_client_t) owns its devices; each device carries its
 *   description and its one "device" memory. The client object lives while its
 *   handle or any buffer or executable refers to it (refs): PJRT_Client_Destroy
 *   drops the handle's reference, and the last reference removes the device,
 *   description and memory handles and releases the runtime.
 * - A buffer (pjrt_buffer_t) owns its nrt tensor in device memory of its core
 *   (NULL while it has no bytes: zero-sized, deleted, or donated to an
 *   execution) and holds a client reference.
 * - A compiled program (pjrt_exec_t) is shared by reference count between its
 *   PJRT_LoadedExecutable handle and the PJRT_Executable handles made from it. It
 *   owns the NEFF, the program it came from, the signature and the models loaded
 *   from the NEFF on each device, and holds a client reference.
 * - Errors and events belong to whoever received them (PJRT_Error_Destroy,
 *   PJRT_Event_Destroy). Strings and arrays returned through args live as long as
 *   the object they describe.
 */

#define PJRT_PLATFORM_NAME "neuronsim"
#define PJRT_DEVICE_KIND "NeuronCore-v2"
#define PJRT_MEMORY_KIND "device"
/* Program formats PJRT_Client_Compile accepts / OptimizedProgram returns. */
#define PJRT_FORMAT_HLO "hlo"
#define PJRT_FORMAT_HLO_TEXT "hlo_text"
#define PJRT_FORMAT_HLO_WITH_CONFIG "hlo_with_config"
#define PJRT_FORMAT_MLIR "mlir"

/* Rank limit of buffers and signatures (the NEFF itself allows 8). */
#define PJRT_MAX_RANK 16

/* ------------------------------------------------------------------ handles */

typedef enum pjrt_kind {
	PJRT_KIND_ERROR = 1,
	PJRT_KIND_EVENT,
	PJRT_KIND_CLIENT,
	PJRT_KIND_DEVICE,
	PJRT_KIND_DESCRIPTION,
	PJRT_KIND_MEMORY,
	PJRT_KIND_BUFFER,
	PJRT_KIND_EXECUTABLE,
	PJRT_KIND_LOADED,
} pjrt_kind_t;

#define PJRT_HANDLE_CHUNK 1024u
#define PJRT_HANDLE_MAX_CHUNKS 4096u

typedef struct pjrt_handle_slot {
	void *obj;
	uint32_t gen;
	uint32_t refs;                  /* calls using the object now */
	uint32_t next_free;             /* index + 1 of the next free slot, 0 = none */
	uint8_t kind;
	bool alive;
} pjrt_handle_slot_t;

typedef struct pjrt_handle_table {
	pthread_mutex_t lock;
	pthread_cond_t drained;         /* a dead slot's last reference went away */
	pjrt_handle_slot_t *chunks[PJRT_HANDLE_MAX_CHUNKS]; /* never moved or freed */
	uint32_t n_slots;
	uint32_t free_head;
	size_t live[16];                /* live handles per kind */
} pjrt_handle_table_t;

/* The plugin's one context object (plugin.c). */
typedef struct pjrt_plugin {
	pjrt_handle_table_t handles;
	pthread_mutex_t lock;           /* guards the fields below */
	bool env_read;
	int trace;                      /* NEURONSIM_PJRT_TRACE */
	int runtime_users;              /* clients alive */
	bool runtime_owned;             /* this plugin called nrt_init() */
} pjrt_plugin_t;

pjrt_plugin_t *pjrt_plugin_ctx(void);

/* A new handle for obj (not owned by the table). 0 when out of memory. */
uint64_t pjrt_handle_new(pjrt_kind_t kind, void *obj);
/* The object of a live handle of that kind, with a reference the caller drops
 * with pjrt_handle_put(); NULL for 0, dead, foreign or wrong-kind handles. */
void *pjrt_handle_get(uint64_t h, pjrt_kind_t kind);
void pjrt_handle_put(uint64_t h);
/* Kills a live handle (later gets fail), waits until no call holds it, and
 * returns its object for the caller to free; NULL if it was not live. */
void *pjrt_handle_remove(uint64_t h, pjrt_kind_t kind);
/* Live handles of a kind (tests and the leak check in docs/pjrt.md). */
size_t pjrt_handle_count(pjrt_kind_t kind);

#define PJRT_HANDLE(p) ((uint64_t)(uintptr_t)(p))
#define PJRT_PTR(type, h) ((type *)(uintptr_t)(h))

/* The PJRT type of a kind's handles ("PJRT_Buffer"), for messages. */
const char *pjrt_kind_name(pjrt_kind_t kind);
/* The error of entry point fn given a handle that is not a live one of kind:
 * INVALID_ARGUMENT, "fn: HANDLE is not a live PJRT_Buffer". */
PJRT_Error *pjrt_error_not_live(const char *fn, pjrt_kind_t kind, const void *handle);
/* The first step of an entry point fn on one object: declares type *var, the
 * object of handle (a live one of kind) with a reference the entry point drops
 * with pjrt_handle_put, and returns pjrt_error_not_live from it otherwise. */
#define PJRT_GET(type, var, kind, handle, fn)                          \
	type *var = pjrt_handle_get(PJRT_HANDLE(handle), kind);        \
	if (!var)                                                      \
		return pjrt_error_not_live(fn, kind, (const void *)(handle))
/* The handle of a *_Destroy call, removed (pjrt_handle_remove): its object for
 * the caller to free, or NULL: with *out_err NULL for a NULL handle (nothing to
 * destroy), else pjrt_error_not_live. */
void *pjrt_handle_remove_arg(const char *fn, pjrt_kind_t kind, const void *handle, PJRT_Error **out_err);

/* ------------------------------------------------------------------- errors */

/* A new error the caller returns to the framework. Never NULL: without memory
 * it is a static out-of-memory error that PJRT_Error_Destroy ignores. */
PJRT_Error *pjrt_error(PJRT_Error_Code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
PJRT_Error *pjrt_error_v(PJRT_Error_Code code, const char *fmt, va_list ap);
PJRT_Error_Code pjrt_code_from_nrt(NRT_STATUS st);
PJRT_Error_Code pjrt_code_from_ncc(ncc_status_t st);
const char *pjrt_code_name(PJRT_Error_Code code);
/* Code and message of a live error handle (false if it is not one). */
bool pjrt_error_peek(const PJRT_Error *e, PJRT_Error_Code *out_code, const char **out_msg);

/* Refuses a NULL args struct or one whose struct_size does not reach last, the
 * last field this plugin reads or writes. */
#define PJRT_CHECK_ARGS(args, T, last)                                                        \
	do {                                                                                  \
		if (!(args))                                                                  \
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s is NULL", #T); \
		if ((args)->struct_size < PJRT_STRUCT_SIZE(T, last))                          \
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,                   \
					  "%s.struct_size is %zu, smaller than %zu (the fields "  \
					  "up to '%s' that this plugin uses)",                     \
					  #T, (size_t)(args)->struct_size,                         \
					  (size_t)PJRT_STRUCT_SIZE(T, last), #last);               \
	} while (0)

/* Whether an args struct of the caller's struct_size has field (a later,
 * optional field). */
#define PJRT_HAS_FIELD(args, T, field) ((args)->struct_size >= PJRT_STRUCT_SIZE(T, field))

/* ------------------------------------------------------------------ plugin */

/* Logs "neuronsim-pjrt: ..." to stderr when NEURONSIM_PJRT_TRACE is on. */
bool pjrt_trace_on(void);
void pjrt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runtime use by clients: the first acquire initialises libnrt. */
PJRT_Error *pjrt_runtime_acquire(void);
void pjrt_runtime_release(void);

/* ------------------------------------------------------------------ clients */

typedef struct pjrt_client pjrt_client_t;

/* One visible NeuronCore. */
/* The tensors of a device's destroyed buffers, kept until the device's next
 * execution takes them for its outputs (tensor_pool.c). */
#define PJRT_POOL_MAX 1024
typedef struct pjrt_pool {
	pthread_mutex_t lock;
	uint32_t n;
	size_t bytes;                   /* sum of size[0, n) */
	nrt_tensor_t *t[PJRT_POOL_MAX];
	size_t size[PJRT_POOL_MAX];
} pjrt_pool_t;

typedef struct pjrt_device {
	pjrt_client_t *client;
	pjrt_pool_t pool;
	uint32_t index;                 /* logical core = PJRT id = local hardware id */
	uint64_t h_device, h_desc, h_memory;
	PJRT_Device *self[1];           /* the memory's AddressableByDevices list */
	PJRT_Memory *memories[1];       /* the device's AddressableMemories list */
	char debug[64], str[96], mem_debug[64], mem_str[96];
	int64_t attr_values[2];
	PJRT_NamedValue attrs[3];
	char attr_backend[16];
} pjrt_device_t;

struct pjrt_client {
	uint64_t h;
	atomic_int refs;                /* the handle's + one per buffer/executable */
	uint32_t n_devices;
	pjrt_device_t *devices;
	PJRT_Device **device_list;      /* n_devices handles */
	PJRT_Memory **memory_list;      /* n_devices handles */
	char platform_version[128];
};

void pjrt_client_ref(pjrt_client_t *c);
void pjrt_client_unref(pjrt_client_t *c);
/* The device of a live device handle that belongs to client (NULL client: any),
 * without a reference: devices live as long as their client. */
pjrt_device_t *pjrt_device_lookup(const PJRT_Device *d, const pjrt_client_t *client);
pjrt_device_t *pjrt_memory_lookup(const PJRT_Memory *m, const pjrt_client_t *client);

/* ------------------------------------------------------------------ buffers */

typedef struct pjrt_buffer {
	uint64_t h;
	pjrt_client_t *client;          /* reference */
	pjrt_device_t *dev;
	PJRT_Buffer_Type type;
	size_t rank;
	int64_t dims[PJRT_MAX_RANK];
	int64_t minor_to_major[PJRT_MAX_RANK]; /* rank-1..0: the layout GetMemoryLayout returns */
	size_t nbytes;                  /* dense row-major size on the device (f64 as f32):
					 * the tensor's size */
	pthread_mutex_t lock;           /* guards tensor and deleted */
	nrt_tensor_t *tensor;           /* owned; NULL when nbytes == 0, deleted or errored */
	bool deleted;
	PJRT_Error_Code error;          /* non-zero: the output of a failed execution, */
	char *error_msg;                /* which reading reports instead of data (owned) */
} pjrt_buffer_t;

/* Bytes of one element of type t; 0 for types a buffer cannot hold (sub-byte,
 * token, invalid). */
size_t pjrt_type_size(PJRT_Buffer_Type t);
const char *pjrt_type_name(PJRT_Buffer_Type t);
/* Dense size of an array; false on overflow or a negative dimension. */
bool pjrt_array_bytes(PJRT_Buffer_Type t, size_t rank, const int64_t *dims, size_t *out);
/* The same on the device, where f64 is held as f32 (the device has no f64; the
 * compiler computes f64 as f32): element size and dense size. */
size_t pjrt_device_type_size(PJRT_Buffer_Type t);
bool pjrt_device_bytes(PJRT_Buffer_Type t, size_t rank, const int64_t *dims, size_t *out);
/* A new device tensor of size bytes on dev (zeroed). */
PJRT_Error *pjrt_tensor_new(pjrt_device_t *dev, size_t size, const char *name, nrt_tensor_t **out);

/*
 * The output tensors of an execution are written whole by it, so the zeros
 * nrt_tensor_allocate writes into them (it hands out reused device memory
 * zeroed) are wasted: a torch_xla ResNet-18 b8 step allocates its 45 MB of
 * gradients as new outputs every step, after destroying the step before's,
 * and zeroing them was 3% of the process's time. A destroyed buffer's
 * tensor goes to its device's pool instead (pjrt_pool_put); the next
 * execution takes its outputs of the same sizes from it (pjrt_pool_take,
 * stale contents that the execution overwrites) and frees the rest
 * (pjrt_pool_drain), so the pool holds memory only between a buffer's
 * destruction and the next execution. Allocation failures drain it and
 * retry (pjrt_tensor_new). Thread-safe.
 */
void pjrt_pool_init(pjrt_device_t *dev);
/* Moves *t into dev's pool, or frees it when the pool is full; *t is NULL
 * after (nothing when it was NULL). */
void pjrt_pool_put(pjrt_device_t *dev, nrt_tensor_t **t);
/* A pooled tensor of exactly size bytes, removed from the pool, or NULL. */
nrt_tensor_t *pjrt_pool_take(pjrt_device_t *dev, size_t size);
/* Frees every pooled tensor; returns whether there was any. */
bool pjrt_pool_drain(pjrt_device_t *dev);
/* Before allocating size bytes on dev: drains the pool when the device
 * memory left is under twice that (the device's out-of-memory report would
 * name a failure that a retry after draining then hides). */
void pjrt_pool_make_room(pjrt_device_t *dev, size_t size);
/* Bytes held by the pools of all of c's devices (PJRT_Device_MemoryStats's
 * pool_bytes; not in its bytes_in_use). */
size_t pjrt_pool_bytes(const pjrt_client_t *c);
/* Wraps tensor (ownership moves in, may be NULL for zero bytes) in a new buffer
 * handle. On failure the tensor is freed. */
PJRT_Error *pjrt_buffer_wrap(pjrt_device_t *dev, PJRT_Buffer_Type type, size_t rank, const int64_t *dims,
			     nrt_tensor_t *tensor, PJRT_Buffer **out);

/* Destroys the buffers outv[0, n) that are not NULL (an execution's outputs
 * on a failure) and sets them to NULL. */
void pjrt_buffers_destroy(PJRT_Buffer **outv, size_t n);

/* A new buffer that holds an error instead of data (the outputs of an
 * execution that failed on the device, as PJRT reports asynchronous failures):
 * reading it, or executing with it, reports code and msg. */
PJRT_Error *pjrt_buffer_wrap_error(pjrt_device_t *dev, PJRT_Buffer_Type type, size_t rank, const int64_t *dims,
				   PJRT_Error_Code code, const char *msg, PJRT_Buffer **out);

/* ------------------------------------------------------------------- events */

/* A new event that is already complete (code 0: success, else that error). */
PJRT_Error *pjrt_event_new(PJRT_Error_Code code, const char *msg, PJRT_Event **out);

/* ----------------------------------------------------- protobuf, signatures */

/* One array of a signature. */
typedef struct pjrt_array {
	PJRT_Buffer_Type type;
	uint32_t rank;
	int64_t dims[PJRT_MAX_RANK];
	size_t nbytes;                  /* on the device (f64 as f32); 0: no elements, so
					 * no NEFF tensor either */
} pjrt_array_t;

typedef struct pjrt_signature {
	size_t n_params, n_results;
	pjrt_array_t *params;           /* malloc'd */
	pjrt_array_t *results;          /* malloc'd, leaves of the result depth first */
} pjrt_signature_t;

void pjrt_signature_free(pjrt_signature_t *s);

/* What the plugin uses of a serialized xla.HloModuleProto (proto.c). */
typedef struct pjrt_hlo_info {
	char *name;                     /* malloc'd */
	const uint8_t *program_shape;   /* host_program_shape bytes inside the proto */
	size_t program_shape_size;
	pjrt_signature_t sig;
} pjrt_hlo_info_t;

/* Decodes name and host_program_shape; errors name the field path. */
PJRT_Error *pjrt_hlo_proto_info(const uint8_t *data, size_t len, pjrt_hlo_info_t *out);
void pjrt_hlo_info_free(pjrt_hlo_info_t *info);
/* Serializes an xla.HloModuleProtoWithConfig around module (what the framework
 * parses in GetHloModules): the module, and a config whose
 * entry_computation_layout is the module's program shape. */
PJRT_Error *pjrt_hlo_with_config(const uint8_t *module, size_t module_len, const pjrt_hlo_info_t *info,
				 int64_t num_replicas, int64_t num_partitions, uint8_t **out, size_t *out_len);

/* What the plugin uses of a serialized xla.CompileOptionsProto (compile_options.c). */
typedef struct pjrt_compile_options {
	int64_t num_replicas;           /* 1 when unset */
	int64_t num_partitions;         /* 1 when unset */
	bool tupled_arguments;
	bool portable;
	bool spmd;
	size_t n_assignment;            /* replica -> device id, partition 0 */
	int64_t *assignment;            /* malloc'd, NULL when absent */
} pjrt_compile_options_t;

PJRT_Error *pjrt_compile_options_decode(const uint8_t *data, size_t len, pjrt_compile_options_t *out);
void pjrt_compile_options_free(pjrt_compile_options_t *o);

/* Minimal protobuf wire-format reader (proto.c). */
typedef struct pjrt_pb {
	const uint8_t *p, *end;
} pjrt_pb_t;

typedef struct pjrt_pb_field {
	uint32_t number;
	uint32_t wire;                  /* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
	uint64_t value;                 /* varint or fixed */
	const uint8_t *data;            /* wire 2 */
	size_t len;
} pjrt_pb_field_t;

/* Next field: 1, 0 at the end, -1 if malformed (groups are malformed too). */
int pjrt_pb_next(pjrt_pb_t *r, pjrt_pb_field_t *f);
/* Packed or unpacked repeated varint fields: calls fn for each value. */
bool pjrt_pb_varints(const pjrt_pb_field_t *f, bool (*fn)(uint64_t v, void *arg), void *arg);

/* --------------------------------------------------------------- executables */

typedef struct pjrt_exec {
	atomic_int refs;                /* loaded executable + each PJRT_Executable */
	pjrt_client_t *client;          /* reference */
	char *name;
	char format[16];                /* PJRT_FORMAT_HLO or PJRT_FORMAT_HLO_TEXT */
	uint8_t *program;               /* what was compiled */
	size_t program_size;
	uint8_t *optimized;             /* what OptimizedProgram returns */
	size_t optimized_size;
	char optimized_format[16];
	uint8_t *neff;
	size_t neff_size;
	int64_t num_replicas, num_partitions;
	pjrt_signature_t sig;
	int32_t *alias;                 /* per output: the input it updates in place, or -1 */
	char **in_names, **out_names;   /* the NEFF's I/O tensor names, by parameter and
					 * result leaf; NULL for a zero-element one, which
					 * has no NEFF tensor (nothing is bound for it) */
	size_t *in_sizes, *out_sizes;   /* and their sizes in bytes (0: no tensor) */
	size_t n_addr;
	PJRT_Device **addr_list;        /* addressable devices (replica order) */
	uint32_t *addr_index;           /* their logical cores */
	/* API views of the signature */
	PJRT_Buffer_Type *out_types;
	int64_t *out_dims;
	size_t *out_dim_sizes;
	const char **out_kinds;
	size_t *out_kind_sizes;
	char fingerprint[40];
	int64_t arg_bytes, out_bytes, alias_bytes;
	pthread_mutex_t lock;           /* guards models and deleted */
	nrt_model_t **models;           /* per client device, loaded on first use */
	bool deleted;                   /* PJRT_LoadedExecutable_Delete ran */
} pjrt_exec_t;

/* What a PJRT_LoadedExecutable or PJRT_Executable handle names. */
typedef struct pjrt_exec_handle {
	uint64_t h;
	pjrt_exec_t *exec;              /* one reference */
} pjrt_exec_handle_t;

void pjrt_exec_ref(pjrt_exec_t *e);
void pjrt_exec_unref(pjrt_exec_t *e);
/* The model of e on logical core dev, loading the NEFF there on first use. */
PJRT_Error *pjrt_exec_model(pjrt_exec_t *e, uint32_t dev, nrt_model_t **out);

/* What a new executable is made of; pjrt_exec_create takes ownership of the
 * malloc'd fields (also on failure) and loads the NEFF on the first addressable
 * device to check it against the signature. */
typedef struct pjrt_exec_parts {
	char *name;
	const char *format;
	uint8_t *program;
	size_t program_size;
	uint8_t *optimized;
	size_t optimized_size;
	const char *optimized_format;
	uint8_t *neff;
	size_t neff_size;
	pjrt_signature_t sig;
	int64_t num_replicas, num_partitions;
	const int64_t *assignment;      /* num_replicas device ids, or NULL: 0..n-1 */
} pjrt_exec_parts_t;

PJRT_Error *pjrt_exec_create(pjrt_client_t *client, pjrt_exec_parts_t *parts, pjrt_exec_t **out);
/* A new loaded-executable handle for e; on success it owns the caller's
 * reference of e, on failure the caller keeps it. */
PJRT_Error *pjrt_loaded_new(pjrt_exec_t *e, PJRT_LoadedExecutable **out);

/* Compiles program in format (PJRT_FORMAT_*) with the options into parts
 * (compile.c); used by PJRT_Client_Compile and by deserialisation, which passes
 * the NEFF it stored so nothing is compiled. */
PJRT_Error *pjrt_program_prepare(const char *format, size_t format_len, const uint8_t *code, size_t code_size,
				 const pjrt_compile_options_t *opts, const void *neff, size_t neff_size,
				 pjrt_exec_parts_t *parts);
void pjrt_exec_parts_free(pjrt_exec_parts_t *parts);
/* Refuses options this plugin cannot honour on client (several partitions,
 * tupled arguments, more replicas than cores, a bad device assignment). */
PJRT_Error *pjrt_compile_options_check(pjrt_client_t *client, const pjrt_compile_options_t *o);

/* ----------------------------------------------------- implemented functions */

#define PJRT_IMPL(name) PJRT_Error *pjrt_impl_##name(PJRT_##name##_Args *args)

void pjrt_impl_Error_Destroy(PJRT_Error_Destroy_Args *args);
void pjrt_impl_Error_Message(PJRT_Error_Message_Args *args);
PJRT_IMPL(Error_GetCode);
PJRT_IMPL(Plugin_Initialize);
PJRT_IMPL(Plugin_Attributes);
PJRT_IMPL(Event_Destroy);
PJRT_IMPL(Event_IsReady);
PJRT_IMPL(Event_Error);
PJRT_IMPL(Event_Await);
PJRT_IMPL(Event_OnReady);
PJRT_IMPL(Client_Create);
PJRT_IMPL(Client_Destroy);
PJRT_IMPL(Client_PlatformName);
PJRT_IMPL(Client_ProcessIndex);
PJRT_IMPL(Client_PlatformVersion);
PJRT_IMPL(Client_Devices);
PJRT_IMPL(Client_AddressableDevices);
PJRT_IMPL(Client_LookupDevice);
PJRT_IMPL(Client_LookupAddressableDevice);
PJRT_IMPL(Client_AddressableMemories);
PJRT_IMPL(Client_Compile);
PJRT_IMPL(Client_DefaultDeviceAssignment);
PJRT_IMPL(Client_BufferFromHostBuffer);
PJRT_IMPL(Client_CreateUninitializedBuffer);
PJRT_IMPL(DeviceDescription_Id);
PJRT_IMPL(DeviceDescription_ProcessIndex);
PJRT_IMPL(DeviceDescription_Attributes);
PJRT_IMPL(DeviceDescription_Kind);
PJRT_IMPL(DeviceDescription_DebugString);
PJRT_IMPL(DeviceDescription_ToString);
PJRT_IMPL(Device_GetDescription);
PJRT_IMPL(Device_IsAddressable);
PJRT_IMPL(Device_LocalHardwareId);
PJRT_IMPL(Device_AddressableMemories);
PJRT_IMPL(Device_DefaultMemory);
PJRT_IMPL(Device_MemoryStats);
PJRT_IMPL(Memory_Id);
PJRT_IMPL(Memory_Kind);
PJRT_IMPL(Memory_Kind_Id);
PJRT_IMPL(Memory_DebugString);
PJRT_IMPL(Memory_ToString);
PJRT_IMPL(Memory_AddressableByDevices);
PJRT_IMPL(Executable_Destroy);
PJRT_IMPL(Executable_Name);
PJRT_IMPL(Executable_NumReplicas);
PJRT_IMPL(Executable_NumPartitions);
PJRT_IMPL(Executable_NumOutputs);
PJRT_IMPL(Executable_SizeOfGeneratedCodeInBytes);
PJRT_IMPL(Executable_GetCostAnalysis);
PJRT_IMPL(Executable_OutputMemoryKinds);
PJRT_IMPL(Executable_OptimizedProgram);
PJRT_IMPL(Executable_Serialize);
PJRT_IMPL(Executable_OutputElementTypes);
PJRT_IMPL(Executable_OutputDimensions);
PJRT_IMPL(Executable_Fingerprint);
PJRT_IMPL(Executable_GetCompiledMemoryStats);
PJRT_IMPL(Executable_DeserializeAndLoad);
PJRT_IMPL(LoadedExecutable_Destroy);
PJRT_IMPL(LoadedExecutable_GetExecutable);
PJRT_IMPL(LoadedExecutable_AddressableDevices);
PJRT_IMPL(LoadedExecutable_Delete);
PJRT_IMPL(LoadedExecutable_IsDeleted);
PJRT_IMPL(LoadedExecutable_Execute);
PJRT_IMPL(LoadedExecutable_Fingerprint);
PJRT_IMPL(Buffer_Destroy);
PJRT_IMPL(Buffer_ElementType);
PJRT_IMPL(Buffer_Dimensions);
PJRT_IMPL(Buffer_UnpaddedDimensions);
PJRT_IMPL(Buffer_DynamicDimensionIndices);
PJRT_IMPL(Buffer_GetMemoryLayout);
PJRT_IMPL(Buffer_OnDeviceSizeInBytes);
PJRT_IMPL(Buffer_Device);
PJRT_IMPL(Buffer_Memory);
PJRT_IMPL(Buffer_Delete);
PJRT_IMPL(Buffer_IsDeleted);
PJRT_IMPL(Buffer_CopyToDevice);
PJRT_IMPL(Buffer_CopyToMemory);
PJRT_IMPL(Buffer_ToHostBuffer);
PJRT_IMPL(Buffer_CopyRawToHost);
PJRT_IMPL(Buffer_IsOnCpu);
PJRT_IMPL(Buffer_ReadyEvent);

#endif /* NEURONSIM_PJRT_INTERNAL_H */
