/* The seam between libnrt and a device: one vtable per backend (embedded now, kernel later). */
#ifndef NRT_BACKEND_H
#define NRT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/device.h"
#include "neuronsim/isa.h"
#include "nrt/nrt_status.h"
#include "rt_status.h"

/* Everything above this header is backend-agnostic: device memory is always
 * reached through a host mapping (embedded: an mmap of the process; kernel: the
 * driver's mmap), programs are instruction streams uploaded into device memory
 * and referenced by jobs, and jobs run synchronously from the caller's view
 * (embedded: in the calling thread; kernel: submit + wait with the deadline). */

#define NRT_BACKEND_ABI_VERSION 1

typedef struct nrt_backend_dev nrt_backend_dev_t;       /* one opened device */
typedef struct nrt_backend_program nrt_backend_program_t; /* code bound to one core */

/* Parameters the backend takes from the runtime's configuration. */
typedef struct nrt_backend_config {
	uint64_t device_memory;   /* bytes per device (embedded; kernel: module param) */
	uint32_t cores_per_device;
	int pin_threads;
	uint32_t threads;         /* host threads per large instruction (embedded); 0 = auto */
	int cpu_isa;              /* the simulator's widest vector kernels, a fwsim_isa_t (embedded) */
} nrt_backend_config_t;

typedef struct nrt_backend_info {
	uint32_t abi_version;     /* NRT_BACKEND_ABI_VERSION the backend speaks */
	uint32_t n_cores;
	uint64_t mem_size;        /* device memory, bytes */
	uint64_t mem_in_use;      /* as the device's allocator sees it */
	uint64_t mem_peak;
	int numa_node;            /* host NUMA node nearest the device, -1 unknown */
} nrt_backend_info_t;

/* A block of device memory. Owned by whoever called mem_alloc. */
typedef struct nrt_backend_mem {
	uint64_t handle;          /* backend's id of the block (free needs it) */
	uint64_t addr;            /* device address (informational; regions name the block) */
	uint64_t size;            /* bytes reserved (>= requested, aligned) */
	uint8_t *host;            /* host mapping of [addr, addr + size) */
	uint32_t nc;              /* logical core charged for it (nrt_devmem_alloc) */
} nrt_backend_mem_t;

/* Instruction streams of one core, already copied into device memory. */
typedef struct nrt_backend_code {
	const nrt_backend_mem_t *mem;            /* block holding the streams */
	uint64_t offset[ISA_ENGINE_COUNT];       /* byte offset of each stream in mem */
	uint32_t count[ISA_ENGINE_COUNT];        /* instructions per stream */
	uint32_t n_regions;                      /* regions jobs will bind */
} nrt_backend_code_t;

/* One region binding of a job: size bytes at offset of a block from
 * mem_alloc (the block's handle, not a device address: the kernel backend
 * passes (handle, offset, size) to the driver as they are, the embedded one
 * adds the block's address). offset + size must lie inside the block, else
 * execute refuses the job (NRT_BACKEND_INVALID). An empty region (size 0)
 * may have mem NULL. */
typedef struct nrt_backend_region {
	const nrt_backend_mem_t *mem;
	uint64_t offset;
	uint64_t size;
} nrt_backend_region_t;

/* The rest of the job protocol is include/neuronsim/device.h's (the one
 * definition libfwsim and the kernel ABI share); these are its names here. */

#define NRT_BACKEND_JOB_CHECK_NAN NS_JOB_CHECK_NAN
#define NRT_BACKEND_JOB_CHECK_INF NS_JOB_CHECK_INF
#define NRT_BACKEND_JOB_PROFILE NS_JOB_PROFILE

/* One executed instruction of a profiled job; times are CLOCK_MONOTONIC ns. */
typedef ns_job_span_t nrt_backend_span_t;

/* The device trace of one job (NRT_BACKEND_JOB_PROFILE), owned by the caller.
 * Both backends fill it (kernel: through the job's trace region); a job
 * refused before it reached the device leaves recorded 0 and every out field
 * 0. Spans that do not fit in cap are counted in dropped. */
typedef struct nrt_backend_trace {
	nrt_backend_span_t *spans;              /* in: room for cap spans */
	uint64_t cap;                           /* in */
	uint64_t count;                         /* out: spans written, in no particular order */
	uint64_t dropped;                       /* out: executed instructions that did not fit */
	uint64_t engine_busy_ns[ISA_ENGINE_COUNT]; /* out: the simulator's own busy time */
	uint64_t insns_executed;                /* out */
	uint32_t recorded;                      /* out: 1 when the backend filled this */
	uint32_t pad;
} nrt_backend_trace_t;

typedef struct nrt_backend_job {
	const nrt_backend_program_t *program;
	const nrt_backend_region_t *regions;    /* n_regions bindings in device memory blocks */
	uint32_t n_regions;
	uint32_t flags;                         /* NRT_BACKEND_JOB_* */
	uint64_t deadline_ns;                   /* absolute CLOCK_MONOTONIC, 0 = none */
	nrt_backend_trace_t *trace;             /* with NRT_BACKEND_JOB_PROFILE, else NULL */
} nrt_backend_job_t;

typedef ns_job_status_t nrt_backend_status_t;
#define NRT_BACKEND_OK NS_JOB_OK
#define NRT_BACKEND_NUM_ERR NS_JOB_NUM_ERR         /* completed, NaN/Inf recorded */
#define NRT_BACKEND_OOB NS_JOB_OOB                 /* access outside a region, stopped before it */
#define NRT_BACKEND_TIMEOUT NS_JOB_TIMEOUT
#define NRT_BACKEND_INVALID NS_JOB_INVALID         /* bad program or job */
#define NRT_BACKEND_DEADLOCK NS_JOB_DEADLOCK       /* engines wait on each other forever */
#define NRT_BACKEND_NOMEM NS_JOB_NOMEM
#define NRT_BACKEND_DEVICE_LOST NS_JOB_DEVICE_LOST /* kernel: firmware died, device gone */

/* The device's error record of a job, with its FLOPs (NRT_BACKEND_FLOPS_UNKNOWN
 * from a firmware of ABI 1.1, which does not report them). */
typedef ns_job_error_t nrt_backend_error_t;
#define NRT_BACKEND_FLOPS_UNKNOWN NS_JOB_FLOPS_UNKNOWN

/* All functions are safe to call from several threads at once, except open and
 * close. Failing calls leave their out_ parameters untouched unless stated. The
 * ones that return an ns_status_t give the caller a status (rt_status.h) that
 * says why in one line and carries the NRT_STATUS; the caller passes it up to
 * the nrt_* entry point, which reports it. */
typedef struct nrt_backend_ops {
	const char *name;
	/* Opens device index (NRT_INVALID, NRT_RESOURCE, NRT_FAILURE). */
	ns_status_t (*open)(const nrt_backend_config_t *config, uint32_t index,
			    nrt_backend_dev_t **out_dev);
	/* Releases everything still allocated or reserved on dev, and dev. */
	void (*close)(nrt_backend_dev_t *dev);
	NRT_STATUS (*query)(nrt_backend_dev_t *dev, nrt_backend_info_t *out_info);
	/* size bytes, 64-byte aligned, contents unspecified. NRT_RESOURCE when full. */
	NRT_STATUS (*mem_alloc)(nrt_backend_dev_t *dev, uint64_t size, nrt_backend_mem_t *out_mem);
	void (*mem_free)(nrt_backend_dev_t *dev, const nrt_backend_mem_t *mem);
	/* Makes a block fresh from mem_alloc read as zeros, the cheapest way the
	 * backend has: embedded, whole pages go back to the kernel and fault in as
	 * zero pages when first touched (no time or memory spent on what a model
	 * never uses); kernel, nothing to do since the driver zeroes every
	 * allocation. Not for a block already in use (kernel: a no-op). */
	void (*mem_zero)(nrt_backend_dev_t *dev, const nrt_backend_mem_t *mem);
	/* Exclusive use of core by this runtime; NRT_EXEC_NC_BUSY if taken. */
	NRT_STATUS (*core_reserve)(nrt_backend_dev_t *dev, uint32_t core);
	void (*core_release)(nrt_backend_dev_t *dev, uint32_t core);
	/* Validates code for core; the code block must stay allocated until
	 * program_destroy (NRT_INVALID, NRT_RESOURCE). */
	ns_status_t (*program_create)(nrt_backend_dev_t *dev, uint32_t core,
				      const nrt_backend_code_t *code,
				      nrt_backend_program_t **out_program);
	void (*program_destroy)(nrt_backend_dev_t *dev, nrt_backend_program_t *program);
	/* Runs job on core to completion (or deadline) and fills *out_error
	 * (always, also on success). Returns the job's status. */
	nrt_backend_status_t (*execute)(nrt_backend_dev_t *dev, uint32_t core,
					const nrt_backend_job_t *job, nrt_backend_error_t *out_error);
} nrt_backend_ops_t;

/* The in-process backend over libfwsim (backend_embedded.c). */
extern const nrt_backend_ops_t nrt_backend_embedded_ops;

#endif /* NRT_BACKEND_H */
