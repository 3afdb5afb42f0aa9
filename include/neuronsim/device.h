/* The job protocol between the runtime and a device, defined once: how a job
 * ended (status), what it asks for (flags), its error record, its region
 * bindings and its profile spans. libfwsim (firmware-sim/fwsim.h) and libnrt's
 * backends (runtime/backend.h) use these types; the kernel ABI
 * (include/uapi/linux/neuronsim.h) mirrors them, and the static asserts below,
 * the one place that ties the two, keep the values and layouts equal. The two
 * conversions between the error record and the ABI's are here too. */
#ifndef NEURONSIM_DEVICE_H
#define NEURONSIM_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uapi/linux/neuronsim.h"
#include "neuronsim/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a job ended (enum neuronsim_status of the ABI, value for value). */
typedef enum ns_job_status {
	NS_JOB_OK = 0,
	NS_JOB_NUM_ERR = 1,     /* completed, a numerical error (NaN/Inf) was recorded */
	NS_JOB_OOB = 2,         /* an access fell outside its region; stopped before it */
	NS_JOB_TIMEOUT = 3,     /* the deadline passed or the job was cancelled */
	NS_JOB_INVALID = 4,     /* bad program or job (message in the error record) */
	NS_JOB_DEADLOCK = 5,    /* every unfinished engine waits on a semaphore */
	NS_JOB_NOMEM = 6,       /* the device side ran out of host memory */
	NS_JOB_DEVICE_LOST = 7, /* kernel path: the firmware died or detached */
} ns_job_status_t;

/* Job flags (NEURONSIM_JOB_* of the ABI). */
#define NS_JOB_CHECK_NAN (1u << 0) /* record NaN outputs */
#define NS_JOB_CHECK_INF (1u << 1) /* record Inf outputs */
#define NS_JOB_PROFILE (1u << 2)   /* write a span per executed instruction */

#define NS_JOB_MSG_LEN 160

/* Where a failing or numerically bad instruction was, and the job's FLOPs.
 * Fields up to num_err_insns have the offsets of struct neuronsim_error_record. */
typedef struct ns_job_error {
	uint32_t status;        /* ns_job_status_t of the job */
	uint32_t engine;        /* isa_engine_t of the instruction */
	uint32_t insn_index;    /* index in its engine's stream */
	uint32_t debug_id;      /* the instruction's debug_id */
	uint32_t ap_index;      /* which operand (OOB) or 0 (the output, NaN/Inf) */
	uint32_t region;        /* that operand's region */
	uint32_t is_inf;        /* numerical error: 0 NaN, 1 Inf */
	uint32_t pad;
	uint64_t first_index;   /* numerical error: first bad flat (row-major) index */
	uint64_t count;         /* numerical error: bad elements in that output */
	uint64_t num_err_insns; /* instructions of the job that produced NaN/Inf */
	uint64_t flops;         /* floating-point operations the job executed
				 * (docs/isa.md, "FLOPs"), on success and failure;
				 * NS_JOB_FLOPS_UNKNOWN if not counted */
	char message[NS_JOB_MSG_LEN]; /* one line for OOB/INVALID/DEADLOCK/TIMEOUT,
				       * a summary for NUM_ERR, empty for OK */
} ns_job_error_t;

/* ns_job_error_t.flops when nobody counted them (a firmware of ABI 1.1). */
#define NS_JOB_FLOPS_UNKNOWN UINT64_MAX

/* One region binding: [addr, addr + size) of device memory (the firmware's
 * struct neuronsim_fw_region). */
typedef struct ns_job_region {
	uint64_t addr;
	uint64_t size;
} ns_job_region_t;

/* One executed instruction of a profiled job; times are CLOCK_MONOTONIC ns.
 * The 32-byte record neuronsim-fwd writes into a job's trace region. */
typedef struct ns_job_span {
	uint64_t start_ns;
	uint64_t end_ns;
	uint32_t engine;        /* isa_engine_t */
	uint32_t insn_index;    /* in that engine's stream */
	uint32_t debug_id;      /* the instruction's debug_id */
	uint32_t pad;
} ns_job_span_t;

/* ---- the kernel ABI mirrors the definitions above ---- */

_Static_assert(NEURONSIM_NUM_ENGINES == ISA_ENGINE_COUNT, "engine counts");
_Static_assert(NEURONSIM_INSN_SIZE == sizeof(isa_insn_t), "instruction size");
_Static_assert((int)NEURONSIM_STATUS_SUCCESS == NS_JOB_OK &&
	       (int)NEURONSIM_STATUS_NUM_ERR == NS_JOB_NUM_ERR &&
	       (int)NEURONSIM_STATUS_OOB == NS_JOB_OOB && (int)NEURONSIM_STATUS_TIMEOUT == NS_JOB_TIMEOUT &&
	       (int)NEURONSIM_STATUS_INVALID == NS_JOB_INVALID &&
	       (int)NEURONSIM_STATUS_DEADLOCK == NS_JOB_DEADLOCK &&
	       (int)NEURONSIM_STATUS_NOMEM == NS_JOB_NOMEM &&
	       (int)NEURONSIM_STATUS_FW_LOST == NS_JOB_DEVICE_LOST &&
	       (int)NEURONSIM_STATUS_COUNT == NS_JOB_DEVICE_LOST + 1, "status values");
_Static_assert(NEURONSIM_JOB_CHECK_NAN == NS_JOB_CHECK_NAN &&
	       NEURONSIM_JOB_CHECK_INF == NS_JOB_CHECK_INF &&
	       NEURONSIM_JOB_PROFILE == NS_JOB_PROFILE, "job flag values");
_Static_assert(NEURONSIM_ERROR_MSG_LEN == NS_JOB_MSG_LEN, "error message length");
#define NS_JOB_SAME_FIELD(a, b, f) (offsetof(a, f) == offsetof(b, f) && \
				    sizeof(((a *)0)->f) == sizeof(((b *)0)->f))
_Static_assert(NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, status) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, engine) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, insn_index) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, debug_id) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, ap_index) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, region) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, is_inf) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, pad) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, first_index) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, count) &&
	       NS_JOB_SAME_FIELD(ns_job_error_t, struct neuronsim_error_record, num_err_insns),
	       "error record fields up to num_err_insns");
_Static_assert(sizeof(ns_job_region_t) == sizeof(struct neuronsim_fw_region) &&
	       NS_JOB_SAME_FIELD(ns_job_region_t, struct neuronsim_fw_region, addr) &&
	       NS_JOB_SAME_FIELD(ns_job_region_t, struct neuronsim_fw_region, size),
	       "region layout");
/* struct neuronsim_job_submit's @trace documents the span record. */
_Static_assert(sizeof(ns_job_span_t) == 32 && offsetof(ns_job_span_t, end_ns) == 8 &&
	       offsetof(ns_job_span_t, engine) == 16 && offsetof(ns_job_span_t, insn_index) == 20 &&
	       offsetof(ns_job_span_t, debug_id) == 24, "trace span layout");
#undef NS_JOB_SAME_FIELD

/* The record a firmware completes a job with: e's fields and message, and
 * e->flops as the 1.2 extension. The job's statistics (insns_executed,
 * engine_busy_ns, trace_count/dropped) are the caller's to fill. */
static inline void ns_job_error_to_record(const ns_job_error_t *e,
					  struct neuronsim_error_record_ext *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(&out->rec, e, offsetof(ns_job_error_t, flops));
	memcpy(out->rec.message, e->message, sizeof(out->rec.message));
	out->rec.message[sizeof(out->rec.message) - 1] = '\0';
	out->valid = NEURONSIM_EXT_FLOPS;
	out->flops = e->flops;
}

/* The error record a waiter read (status: the wait's), as ns_job_error_t:
 * flops NS_JOB_FLOPS_UNKNOWN unless the extension holds them, a status the
 * ABI does not know as NS_JOB_INVALID. */
static inline void ns_job_error_from_record(const struct neuronsim_error_record_ext *in,
					    uint32_t status, ns_job_error_t *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out, &in->rec, offsetof(ns_job_error_t, flops));
	out->status = status < NEURONSIM_STATUS_COUNT ? status : NS_JOB_INVALID;
	out->pad = 0;
	out->flops = (in->valid & NEURONSIM_EXT_FLOPS) ? in->flops : NS_JOB_FLOPS_UNKNOWN;
	memcpy(out->message, in->rec.message, sizeof(out->message));
	out->message[sizeof(out->message) - 1] = '\0';
}

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_DEVICE_H */
