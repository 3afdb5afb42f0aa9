/* libfwsim's public header: simulated NeuronCores that execute ISA programs
 * against a host mapping of device memory (programs, cores, jobs, the thread
 * pool's setting). The one header of firmware-sim/ other layers may include:
 * libnrt's embedded backend uses it; knows nothing of the runtime or the
 * compiler. */
#ifndef NEURONSIM_FWSIM_H
#define NEURONSIM_FWSIM_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/device.h"
#include "neuronsim/isa.h"
#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The job protocol (status, flags, error record, region, span) is
 * include/neuronsim/device.h's, shared with libnrt and mirrored by the kernel
 * ABI; these are its names in libfwsim. FWSIM_* statuses are 0..6 (never
 * NS_JOB_DEVICE_LOST). */
typedef ns_job_status_t fwsim_status_t;
#define FWSIM_OK NS_JOB_OK
#define FWSIM_NUM_ERR NS_JOB_NUM_ERR   /* completed, a numerical error was recorded */
#define FWSIM_OOB NS_JOB_OOB           /* an access fell outside its region; stopped before it */
#define FWSIM_TIMEOUT NS_JOB_TIMEOUT   /* the job's deadline passed or it was cancelled
					  (fwsim_job_cancel); stopped between instructions
					  or inside a long one */
#define FWSIM_INVALID NS_JOB_INVALID   /* bad program or job (message in the error record) */
#define FWSIM_DEADLOCK NS_JOB_DEADLOCK /* every unfinished engine waits on a semaphore */
#define FWSIM_NOMEM NS_JOB_NOMEM

const char *fwsim_status_str(fwsim_status_t s);

/* Where a failing or numerically bad instruction was, and the job's FLOPs
 * (error.flops equals fwsim_job_t.flops). */
typedef ns_job_error_t fwsim_error_t;

/* A device-memory binding of one region: [addr, addr + size) in the job's memory. */
typedef ns_job_region_t fwsim_region_t;

/* One executed instruction, for the profiler. Times are CLOCK_MONOTONIC ns. */
typedef ns_job_span_t fwsim_span_t;

/* Caller-owned buffer the job appends spans to; spans beyond cap are counted
 * in dropped. Engines append concurrently. */
typedef struct fwsim_trace {
	fwsim_span_t *spans;
	uint64_t cap;
	uint64_t count;   /* out */
	uint64_t dropped; /* out */
} fwsim_trace_t;

/* A validated, immutable program: one instruction stream per engine. Safe to
 * share between cores and threads (the automatic scheduler's timing of its
 * executions, kept with it, has a lock of its own). */
typedef struct fwsim_program fwsim_program_t;

/* Most multiply-adds of one MATMUL: ISA_MAX_MATMUL_WORK of neuronsim/isa.h,
 * enforced by isa_insn_validate. */
#define FWSIM_MAX_MATMUL_WORK ISA_MAX_MATMUL_WORK

/* Copies and validates the streams (opcodes, operand counts, dtypes, ranks,
 * regions < n_regions, semaphores, jump targets, reserved fields, the MATMUL
 * work bound: isa_insn_validate). Caller frees
 * with fwsim_program_destroy(). A failure is a status (neuronsim/status.h) with
 * a one-line message naming the engine, instruction and fault:
 * NS_STATUS_INVALID_ARGUMENT for a bad program, NS_STATUS_RESOURCE_EXHAUSTED. */
ns_status_t fwsim_program_create(const isa_insn_t *const streams[ISA_ENGINE_COUNT],
				 const uint32_t counts[ISA_ENGINE_COUNT],
				 uint32_t n_regions, fwsim_program_t **out_program);
void fwsim_program_destroy(fwsim_program_t *program);

#define FWSIM_JOB_CHECK_NAN NS_JOB_CHECK_NAN
#define FWSIM_JOB_CHECK_INF NS_JOB_CHECK_INF
#define FWSIM_JOB_PROFILE NS_JOB_PROFILE   /* fill job->trace */

typedef struct fwsim_job {
	/* in */
	const fwsim_program_t *program;
	uint8_t *mem;                  /* host mapping of device memory */
	uint64_t mem_size;             /* the job's window: addresses < mem_size */
	const fwsim_region_t *regions; /* n_regions bindings, all inside the window */
	uint32_t n_regions;
	uint32_t flags;                /* FWSIM_JOB_* */
	uint64_t deadline_ns;          /* absolute CLOCK_MONOTONIC, 0 = none */
	fwsim_trace_t *trace;          /* with FWSIM_JOB_PROFILE, else NULL */
	uint32_t cancel;               /* 0; set only by fwsim_job_cancel() */
	uint32_t pad;
	/* out */
	fwsim_error_t error;
	uint64_t engine_busy_ns[ISA_ENGINE_COUNT];
	uint64_t insns_executed;
	uint64_t flops;                /* floating-point operations of the executed
					* instructions (docs/isa.md, "FLOPs") */
} fwsim_job_t;

typedef struct fwsim_core fwsim_core_t;

/* How a core maps a multi-engine program onto host threads (docs/isa.md,
 * "Execution policy"). A program with one busy engine always runs in the
 * calling thread. */
typedef enum fwsim_sched {
	FWSIM_SCHED_AUTO = 0,    /* threads only when two engines have enough work,
				  * two CPUs, and timing the program's executions
				  * both ways says they pay (docs/isa.md) */
	FWSIM_SCHED_INLINE = 1,  /* cooperative: all engines in the calling thread */
	FWSIM_SCHED_THREADS = 2, /* one host thread per busy engine */
} fwsim_sched_t;

/* AUTO considers threads only when the second-busiest engine has at least
 * this many element operations; below it a thread hand-off costs more than
 * it saves, and the program runs inline untimed. */
#define FWSIM_THREAD_MIN_WORK (1u << 20)

typedef struct fwsim_core_config {
	uint32_t core_index;   /* for thread names and pinning */
	int pin_threads;       /* pin engine threads with hwloc */
	uint32_t sched;        /* fwsim_sched_t; 0 = AUTO (added in ISA 1.0) */
} fwsim_core_config_t;

/* Host threads one large instruction (a MATMUL of at least 2^22 multiply-adds,
 * an ALU/ACTIVATE/COPY/FUSED/REDUCE of at least 2^18 elements, 2^20 while the
 * core's engines run on threads) may be split across, the
 * calling engine's thread included: 1 keeps all work
 * on the engine threads; 0 (the default) means the CPUs of the process's
 * affinity mask (sched_getaffinity), at most 16. Process-wide, for every core;
 * takes effect at the next instruction. The results are bit-identical for
 * every count: how an instruction is cut depends on its shape only. The pool's
 * threads block between instructions; oneDNN's sgemm runs single-threaded inside. */
void fwsim_set_threads(uint32_t n);
/* The count in effect (0 resolved to the affinity mask's CPUs). */
uint32_t fwsim_get_threads(void);

/* The widest hand-written vector kernels the simulator may use. By default
 * (FWSIM_ISA_AUTO) the CPU's widest; a lower cap runs, on this CPU, the
 * kernels a CPU without AVX-512 (FWSIM_ISA_AVX2) or without AVX2
 * (FWSIM_ISA_SCALAR) runs: the same results, at that CPU's kind of speed,
 * except MATMUL's thin products (AVX-512 only; docs/isa.md), which go back to
 * sgemm and differ within rounding.
 * A cap above what the CPU has changes nothing. Process-wide, for every core;
 * takes effect at the next instruction. (The compiler's own vectorisation of
 * the portable kernels is chosen when the library loads, whatever the cap.) */
typedef enum fwsim_isa {
	FWSIM_ISA_AUTO = 0,
	FWSIM_ISA_SCALAR = 1,
	FWSIM_ISA_AVX2 = 2,
	FWSIM_ISA_AVX512 = 3,
} fwsim_isa_t;
void fwsim_set_max_isa(fwsim_isa_t isa);
/* The cap named name (auto, avx512, avx2 or scalar, any case) in *out: 0, or
 * -1 for any other name (*out then FWSIM_ISA_AUTO). */
int fwsim_isa_from_name(const char *name, fwsim_isa_t *out);

/* Creates a core the caller destroys with fwsim_core_destroy(). config may be
 * NULL (core 0, no pinning, AUTO). Engine threads are created on the first
 * job that needs them and joined by fwsim_core_destroy(), which must not race
 * with fwsim_core_execute() on the same core. */
fwsim_status_t fwsim_core_create(const fwsim_core_config_t *config,
				 fwsim_core_t **out_core);
void fwsim_core_destroy(fwsim_core_t *core);

/* Runs job to completion on core and returns its status (also in
 * job->error.status). Jobs on one core run one at a time (a per-core lock;
 * concurrent callers are served in lock order, not strictly call order);
 * several cores run in parallel. A program with work on one engine only runs
 * in the calling thread. job->program and job->mem stay owned by the caller;
 * the error record, engine_busy_ns, insns_executed, flops and job->trace's
 * count/dropped are overwritten. */
fwsim_status_t fwsim_core_execute(fwsim_core_t *core, fwsim_job_t *job);

/* Asks a job to stop: callable from any thread, before or while
 * fwsim_core_execute() runs it (job must stay valid until that returns).
 * The engines notice it between instructions and, like the deadline, every
 * FWSIM_POLL_WORK element operations inside one; the job then ends with
 * FWSIM_TIMEOUT and a message starting "cancelled". The flag stays set: clear
 * job->cancel before running the same job struct again. */
void fwsim_job_cancel(fwsim_job_t *job);

/* Element operations between two polls of the deadline and the cancel flag
 * inside one instruction: ~20-100 us of work, one clock read per poll. */
#define FWSIM_POLL_WORK (1u << 16)

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_FWSIM_H */
