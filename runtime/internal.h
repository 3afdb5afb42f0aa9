/* libnrt internals shared by its source files: the context object, handles, tensors and models. */
#ifndef NRT_INTERNAL_H
#define NRT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backend.h"
#include "env.h"
#include "log.h"
#include "neuronsim/clock.h"
#include "neuronsim/neff.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "rt_status.h"

/* ---- handles ----------------------------------------------------------
 * Public handles are tagged integers, not pointers: bits 60..63 the object
 * type, 32..59 a generation, 0..31 slot index + 1. Slots live in chunks that
 * are only freed at nrt_close, and each slot's state word packs
 * (generation, alive, references) so acquire/release is lock-free and a free
 * waits for in-flight users. A freed handle (generation moved on), a handle
 * of the wrong type, or garbage is rejected without touching freed memory. */
typedef enum nrt_handle_type {
	NRT_HANDLE_TENSOR = 1,
	NRT_HANDLE_MODEL = 2,
	NRT_HANDLE_TENSOR_SET = 3, /* tensor_set.c's own table */
} nrt_handle_type_t;

#define NRT_HANDLE_CHUNK 1024u
#define NRT_HANDLE_MAX_CHUNKS 4096u /* 4M live objects of each kind */

typedef struct nrt_slot {
	_Atomic uint64_t state;  /* gen << 33 | alive << 32 | refs */
	void *_Atomic obj;
	uint32_t next_free;      /* free list, under the table lock */
} nrt_slot_t;

typedef struct nrt_handle_table {
	pthread_mutex_t lock;    /* allocation and free only */
	nrt_slot_t *_Atomic chunks[NRT_HANDLE_MAX_CHUNKS];
	uint32_t n_slots;
	uint32_t free_head;      /* index + 1, 0 = empty */
	uint32_t gen_base;       /* differs between contexts */
	nrt_handle_type_t type;
} nrt_handle_table_t;

NRT_STATUS nrt_handle_table_init(nrt_handle_table_t *t, nrt_handle_type_t type, uint32_t gen_base);
void nrt_handle_table_fini(nrt_handle_table_t *t);
/* Registers obj; the handle is returned with no reference held. */
NRT_STATUS nrt_handle_create(nrt_handle_table_t *t, void *obj, uint64_t *out_handle);
/* Takes a reference: *out_obj stays valid until nrt_handle_release. */
NRT_STATUS nrt_handle_acquire(nrt_handle_table_t *t, uint64_t handle, void **out_obj);
void nrt_handle_release(nrt_handle_table_t *t, uint64_t handle);
/* nrt_handle_acquire of a public handle argument: NULL is NRT_INVALID, "<what>
 * is NULL"; a handle that is not a live object of t keeps the table's code
 * (NRT_INVALID_HANDLE), "<handle> is not <alive>". */
ns_status_t nrt_handle_acquire_arg(nrt_handle_table_t *t, const void *handle, const char *what,
				   const char *alive, void **out_obj);
/* Makes handle invalid for new acquires, waits until current references are
 * released, recycles the slot and returns the object to the caller to free. */
NRT_STATUS nrt_handle_destroy(nrt_handle_table_t *t, uint64_t handle, void **out_obj);
/* Calls fn on every live object (at nrt_close, single-threaded). */
void nrt_handle_foreach(nrt_handle_table_t *t, void (*fn)(void *obj, uint64_t handle, void *arg), void *arg);

/* ---- context ---------------------------------------------------------- */

typedef struct nrt_device {
	nrt_backend_dev_t *dev;
	uint32_t index;
	uint32_t n_cores;
	uint64_t mem_size;
	int numa_node;
	/* this device's share of ctx->mem_by_cat, for the out-of-memory report */
	_Atomic uint64_t mem_by_cat[NRT_NEURONSIM_MEM_CATEGORY_COUNT];
} nrt_device_t;

typedef struct nrt_core {
	uint32_t device;          /* index into ctx->devices */
	uint32_t dev_core;        /* core index inside that device */
	uint32_t global;          /* physical (global) core id */
	atomic_uint n_models;     /* models with an instance here (placement heuristic) */
	/* nrt_neuronsim_core_stats_t, updated by execute.c */
	_Atomic uint64_t n_exec, n_ok, n_err, n_num_err, n_timeout, n_bad_input, busy_ns;
	/* floating-point operations the device executed for this core's jobs;
	 * flops_unknown once a backend did not count them (the kernel's) */
	_Atomic uint64_t flops;
	atomic_bool flops_unknown;
	/* Executions on the device right now, for busy time that is still being spent:
	 * how many and the sum of their start times; with busy_ns under busy_lock (a
	 * spin lock: a few instructions inside) so that a reader never counts a
	 * finishing execution twice or not at all. */
	atomic_bool busy_lock;
	uint64_t running, running_start_sum;
	/* this core's share of ctx->mem_by_cat (nrt_devmem_alloc's nc), for the
	 * process stats' per-core memory */
	_Atomic uint64_t mem_by_cat[NRT_NEURONSIM_MEM_CATEGORY_COUNT];
} nrt_core_t;


typedef struct nrt_ctx {
	nrt_config_t config;
	const nrt_backend_ops_t *ops;
	uint32_t n_devices;
	nrt_device_t *devices;
	uint32_t n_cores;         /* visible (logical) cores */
	nrt_core_t *cores;        /* logical core i */
	nrt_handle_table_t tensors;
	nrt_handle_table_t models;
	pthread_mutex_t load_lock; /* serialises core placement of nrt_load */
	/* accounting; byte counts of device memory as allocated (aligned) */
	_Atomic uint64_t mem_by_cat[NRT_NEURONSIM_MEM_CATEGORY_COUNT];
	_Atomic uint64_t mem_in_use;
	_Atomic uint64_t mem_peak;
	_Atomic uint64_t host_tensor_bytes;
	_Atomic uint64_t host_snapshot_bytes; /* snapshot input copies in host memory */
	uint64_t mem_total;
	atomic_uint n_loads;       /* models loaded so far: a model's executable index */
	/* Observer state (observe.h), each owned by its module. */
	struct nrt_snapshot_state *snapshot;
	struct nrt_stats_state *stats;
	struct nrt_profile_state *profile;
	struct nrt_async_state *async; /* async.c: the nrta_* queues and their workers */
} nrt_ctx_t;

/* The only global (ctx.c): the live runtime, or NULL / a "closed" marker. */
nrt_ctx_t *nrt_ctx_get(NRT_STATUS *out_status);
/* nrt_init's last step: makes ctx the live runtime, and its log configuration the
 * logger's. false when another runtime is live (a concurrent nrt_init). */
bool nrt_ctx_publish(nrt_ctx_t *ctx);
/* nrt_close's first step: new calls fail with NRT_CLOSED, and the logger goes
 * back to the environment's configuration. */
void nrt_ctx_unpublish(void);
/* The first step of an nrt_* call: the live runtime in *out_ctx, or a status
 * (NRT_UNINITIALIZED, NRT_CLOSED) that says to call nrt_init, for the entry
 * point to report (nrt_status_report) and *out_ctx NULL. */
ns_status_t nrt_ctx_enter(nrt_ctx_t **out_ctx);
/* NRT_INVALID unless logical NeuronCore nc is visible. */
ns_status_t nrt_ctx_check_core(const nrt_ctx_t *ctx, int64_t nc);

/* async.c: the nrta_* queues (at nrt_init), and their shutdown (at nrt_close,
 * before anything else is freed: it waits for the workers). */
ns_status_t nrt_async_init(nrt_ctx_t *ctx);
void nrt_async_fini(nrt_ctx_t *ctx);

/* A device execution on cores [first, first + n) starts at start_ns / ends. */
void nrt_core_busy_begin(nrt_ctx_t *ctx, uint32_t first, uint32_t n, uint64_t start_ns);
void nrt_core_busy_end(nrt_ctx_t *ctx, uint32_t first, uint32_t n, uint64_t start_ns,
		       uint64_t end_ns);
/* Busy time of core c up to now_ns: completed executions plus the part of the
 * running ones spent so far (utilisation is not credited only at completion). */
uint64_t nrt_core_busy_ns(nrt_core_t *c, uint64_t now_ns);

/* Device memory through the backend, with per-category accounting, on the
 * device of logical NeuronCore nc. When it does not fit (NRT_RESOURCE) the
 * error names the size, the core and the usage by category, as the Neuron
 * Runtime's report does (docs/runtime.md, "Out of device memory"). */
NRT_STATUS nrt_devmem_alloc(nrt_ctx_t *ctx, uint32_t nc, uint64_t size,
			    nrt_neuronsim_mem_category_t cat, nrt_backend_mem_t *out_mem);
void nrt_devmem_free(nrt_ctx_t *ctx, uint32_t device, nrt_neuronsim_mem_category_t cat,
		     nrt_backend_mem_t *mem);
struct nrt_instance;
/* The Neuron Runtime's per-NEFF memory log at load (TDRV, INFO): the device's
 * usage, then the instance's code, constants and scratchpad. */
void nrt_devmem_log_instance(nrt_ctx_t *ctx, const struct nrt_instance *in, uint32_t neff_cores,
			     const char *model);

/* ---- tensors ---------------------------------------------------------- */

typedef enum nrt_storage_kind {
	NRT_STORAGE_DEVICE = 0,   /* device memory (backend block) */
	NRT_STORAGE_HOST = 1,     /* host memory we allocated (libnuma or aligned) */
	NRT_STORAGE_USER = 2,     /* caller's buffer (attach_buffer) */
} nrt_storage_kind_t;

/* Shared by a tensor and its slices. */
typedef struct nrt_storage {
	atomic_uint refs;
	nrt_storage_kind_t kind;
	uint32_t device;          /* DEVICE */
	int logical_nc;           /* DEVICE: core it was allocated for; else -1 */
	nrt_backend_mem_t mem;    /* DEVICE */
	uint8_t *host;            /* host address of byte 0 (all kinds) */
	uint64_t size;
	bool numa;                /* HOST: from numa_alloc_onnode */
} nrt_storage_t;

typedef struct nrt_tensor_obj {
	nrt_storage_t *storage;   /* NULL for an empty tensor */
	uint64_t offset;          /* into storage */
	uint64_t size;
	nrt_tensor_placement_t placement;
	char name[64];
} nrt_tensor_obj_t;

void nrt_storage_put(nrt_ctx_t *ctx, nrt_storage_t *s);
/* Resolves a public tensor handle with a reference, which the caller gives
 * back with nrt_tensor_release; NULL, a freed tensor or another kind of handle
 * is a status (NRT_INVALID, NRT_INVALID_HANDLE) that says which. */
ns_status_t nrt_tensor_acquire(nrt_ctx_t *ctx, const nrt_tensor_t *tensor, nrt_tensor_obj_t **out_t);
void nrt_tensor_release(nrt_ctx_t *ctx, const nrt_tensor_t *tensor);
/* NRT_INVALID, naming the tensor, unless [offset, offset + size) lies inside
 * t's storage (without overflow). */
ns_status_t nrt_tensor_check_range(const nrt_tensor_obj_t *t, uint64_t offset, uint64_t size);
/* The bodies of nrt_tensor_read/nrt_tensor_write (write) and nrt_tensor_copy:
 * what they would report, for another entry point (the nrta_* workers) to
 * report under its own name. */
ns_status_t nrt_tensor_io_status(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size, bool write);
ns_status_t nrt_tensor_copy_status(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst,
				   size_t dst_offset, size_t size);
/* Copies size bytes between buf and t at offset, already checked, and accounts
 * the transfer (metrics, profiler): nrt_tensor_write when write, else read. */
void nrt_tensor_transfer(nrt_tensor_obj_t *t, void *buf, uint64_t offset, uint64_t size, bool write);
/* Frees a tensor object (at free or nrt_close). */
void nrt_tensor_obj_destroy(nrt_ctx_t *ctx, nrt_tensor_obj_t *t);

/* ---- models ----------------------------------------------------------- */

/* One replica of a model on neff_cores consecutive logical cores. */
typedef struct nrt_instance {
	pthread_mutex_t lock;     /* one execution of this replica at a time */
	uint32_t first_core;      /* logical */
	uint32_t device;
	nrt_backend_mem_t consts; /* region 0 */
	nrt_backend_mem_t scratch;/* region 1 */
	nrt_backend_mem_t code[NEFF_MAX_CORES];
	nrt_backend_program_t *programs[NEFF_MAX_CORES];
} nrt_instance_t;

typedef struct nrt_model_obj {
	void *neff;               /* aligned copy; the view borrows from it */
	size_t neff_size;
	neff_view_t view;
	uint32_t neff_cores;      /* cores one instance needs */
	uint32_t n_instances;
	nrt_instance_t *instances;
	atomic_uint next_instance;
	uint32_t start_nc;        /* logical */
	pthread_mutex_t err_lock;
	bool executed;
	nrt_neuronsim_exec_error_t last_error;
	uint32_t executable_id;   /* 0-based load order in this runtime (snapshot names) */
	_Atomic uint64_t n_exec;  /* executions started */
	uint8_t uuid[16];         /* random, drawn at nrt_load (neuron-monitor's uuid) */
	_Atomic uint32_t stats_slot; /* its procstats models[] index + 1, 0 when not listed */
	struct nrt_model_snapshot *snapshot; /* snapshot.c's per-model state */
} nrt_model_obj_t;

void nrt_model_obj_destroy(nrt_ctx_t *ctx, nrt_model_obj_t *m);
/* Resolves a public model handle with a reference, which the caller gives back
 * with nrt_handle_release(&ctx->models, ...); NULL or an unloaded model is a
 * status that says which. */
ns_status_t nrt_model_acquire(nrt_ctx_t *ctx, const nrt_model_t *model, nrt_model_obj_t **out_m);
/* The body of nrt_execute_repeat (execute.c), as nrt_tensor_io_status. Once the
 * execution has run, *out_code is its NRT_STATUS, exact also when memory ran
 * out making the status (which then carries only a canonical code). */
ns_status_t nrt_execute_status(nrt_model_t *model, const nrt_tensor_set_t *input_set,
			       nrt_tensor_set_t *output_set, int repeat, NRT_STATUS *out_code);

/* Maps an ISA dtype to the NRT one. */
nrt_dtype_t nrt_dtype_from_isa(uint32_t isa_dtype);

static inline uint64_t nrt_handle_of(const void *p) { return (uint64_t)(uintptr_t)p; }

#endif /* NRT_INTERNAL_H */
