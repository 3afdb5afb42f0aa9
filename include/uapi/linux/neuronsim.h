/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * neuronsim kernel ABI: the client ioctls of /dev/neuronsimN (runtime) and the
 * device-side ioctls of /dev/neuronsim-fwN (firmware process). See docs/abi.md.
 *
 * Rules: fixed-width types only, 64-bit fields naturally aligned, explicit
 * padding, every struct a multiple of 8 bytes, user pointers as __u64; every
 * pad, reserved field and unknown flag must be zero or the ioctl fails with
 * -EINVAL. Timeouts are absolute CLOCK_MONOTONIC nanoseconds.
 */
#ifndef _UAPI_LINUX_NEURONSIM_H
#define _UAPI_LINUX_NEURONSIM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#if defined(__cplusplus)
extern "C" {
#endif

/*
 * ABI version. The minor is bumped for compatible additions (new ioctls,
 * params, flags, statuses); a new major is incompatible. A client checks
 * NEURONSIM_PARAM_ABI_MAJOR == NEURONSIM_ABI_MAJOR at open.
 *
 * 1.1: NEURONSIM_IOCTL_FW_ABORT_WAIT and NEURONSIM_CAP_FW_ABORT (the driver
 *      asks the firmware to stop running jobs at their deadline and when
 *      their file is closed).
 * 1.2: struct neuronsim_error_record_ext, chosen by NEURONSIM_WAIT_RECORD_EXT
 *      and NEURONSIM_COMPLETE_RECORD_EXT, and NEURONSIM_CAP_RECORD_EXT: the
 *      firmware reports the job's floating-point operations and the waiter
 *      reads them.
 */
#define NEURONSIM_ABI_MAJOR 1
#define NEURONSIM_ABI_MINOR 2

/* Engines per NeuronCore: ISA_ENGINE_COUNT of include/neuronsim/isa.h. */
#define NEURONSIM_NUM_ENGINES 5
/* Size of one instruction in bytes: equals sizeof(isa_insn_t). */
#define NEURONSIM_INSN_SIZE 496
/* Most regions one job may bind. */
#define NEURONSIM_MAX_REGIONS 1024
/* Most unreaped jobs (queued, running or finished but not waited) per file. */
#define NEURONSIM_MAX_JOBS_PER_FILE 4096
/* Length of the message in struct neuronsim_error_record, NUL included. */
#define NEURONSIM_ERROR_MSG_LEN 160

/*
 * ioctl magic 0xB9 (unassigned in the kernel's
 * Documentation/userspace-api/ioctl/ioctl-number.rst):
 * numbers 0x00-0x1f client node, 0x20-0x3f device-side node.
 */
#define NEURONSIM_IOCTL_BASE 0xB9

/**
 * enum neuronsim_param - what NEURONSIM_IOCTL_GET_PARAM returns
 * @NEURONSIM_PARAM_ABI_MAJOR: the driver's NEURONSIM_ABI_MAJOR
 * @NEURONSIM_PARAM_ABI_MINOR: the driver's NEURONSIM_ABI_MINOR
 * @NEURONSIM_PARAM_NUM_CORES: NeuronCores of this device
 * @NEURONSIM_PARAM_MEM_SIZE: device memory in bytes
 * @NEURONSIM_PARAM_CAPABILITIES: NEURONSIM_CAP_* bits
 * @NEURONSIM_PARAM_FW_ATTACHED: 1 when a firmware process is attached
 * @NEURONSIM_PARAM_NULL_HW: 1 when jobs complete at submit without firmware
 * @NEURONSIM_PARAM_DEVICE_INDEX: N of /dev/neuronsimN
 * @NEURONSIM_PARAM_MEM_ALIGN: allocation granularity and alignment in bytes
 * @NEURONSIM_PARAM_MAX_REGIONS: NEURONSIM_MAX_REGIONS
 * @NEURONSIM_PARAM_MEM_IN_USE: bytes of device memory allocated now
 */
enum neuronsim_param {
	NEURONSIM_PARAM_ABI_MAJOR = 0,
	NEURONSIM_PARAM_ABI_MINOR = 1,
	NEURONSIM_PARAM_NUM_CORES = 2,
	NEURONSIM_PARAM_MEM_SIZE = 3,
	NEURONSIM_PARAM_CAPABILITIES = 4,
	NEURONSIM_PARAM_FW_ATTACHED = 5,
	NEURONSIM_PARAM_NULL_HW = 6,
	NEURONSIM_PARAM_DEVICE_INDEX = 7,
	NEURONSIM_PARAM_MEM_ALIGN = 8,
	NEURONSIM_PARAM_MAX_REGIONS = 9,
	NEURONSIM_PARAM_MEM_IN_USE = 10
};

/* Capabilities (NEURONSIM_PARAM_CAPABILITIES). */
#define NEURONSIM_CAP_NAN_CHECK (1ULL << 0) /* NEURONSIM_JOB_CHECK_NAN/INF */
#define NEURONSIM_CAP_PROFILE (1ULL << 1)   /* NEURONSIM_JOB_PROFILE + trace */
#define NEURONSIM_CAP_FW_DEVICE (1ULL << 2) /* device-side node exists */
#define NEURONSIM_CAP_FW_ABORT (1ULL << 3)  /* NEURONSIM_IOCTL_FW_ABORT_WAIT (1.1) */
#define NEURONSIM_CAP_RECORD_EXT (1ULL << 4) /* the _RECORD_EXT flags (1.2) */

/**
 * struct neuronsim_get_param - query one device parameter
 * @param: in, an enum neuronsim_param value (NEURONSIM_PARAM_ABI_MAJOR to
 *	NEURONSIM_PARAM_MEM_IN_USE); any other value fails with -EINVAL
 * @pad: must be zero
 * @value: out, the parameter's value, as enum neuronsim_param describes it
 */
struct neuronsim_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

/**
 * struct neuronsim_mem_alloc - allocate device memory owned by this file
 * @size: in, bytes, 1 to NEURONSIM_PARAM_MEM_SIZE (else -EINVAL); rounded up
 *	to NEURONSIM_PARAM_MEM_ALIGN; -ENOMEM when no free range is that large
 * @flags: in, must be zero
 * @handle: out, handle valid in this open file only (never 0)
 * @mmap_offset: out, offset to mmap() this allocation on the same fd
 * @dev_addr: out, device address of the first byte (informational)
 */
struct neuronsim_mem_alloc {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 mmap_offset;
	__u64 dev_addr;
};

/**
 * struct neuronsim_mem_free - drop this file's handle of an allocation
 * @handle: in, from NEURONSIM_IOCTL_MEM_ALLOC on this file
 * @flags: in, must be zero
 *
 * The memory returns to the device when its last user goes: the handle,
 * every mmap() of it and every unfinished job that references it.
 */
struct neuronsim_mem_free {
	__u32 handle;
	__u32 flags;
};

/**
 * struct neuronsim_mem_info - describe one of this file's allocations
 * @handle: in, from NEURONSIM_IOCTL_MEM_ALLOC on this file
 * @flags: in, must be zero
 * @size: out, allocated bytes (rounded up)
 * @mmap_offset: out, as returned by NEURONSIM_IOCTL_MEM_ALLOC
 * @dev_addr: out, as returned by NEURONSIM_IOCTL_MEM_ALLOC
 */
struct neuronsim_mem_info {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 mmap_offset;
	__u64 dev_addr;
};

/**
 * struct neuronsim_core_reserve - reserve or release a NeuronCore
 * @core: in, core index < NEURONSIM_PARAM_NUM_CORES (else -EINVAL)
 * @flags: in, must be zero
 *
 * A core is reserved by at most one open file (reserving a core another
 * file holds fails with -EBUSY; reserving it again is a no-op); jobs are submitted only to
 * cores the file reserved. Closing the file releases its cores.
 */
struct neuronsim_core_reserve {
	__u32 core;
	__u32 flags;
};

/**
 * struct neuronsim_region - one region binding of a job (client side)
 * @handle: in, allocation of this file, or 0 for an empty region
 * @pad: must be zero
 * @offset: in, byte offset into the allocation (0 for an empty region)
 * @size: in, bytes; offset + size must not exceed the allocation
 */
struct neuronsim_region {
	__u32 handle;
	__u32 pad;
	__u64 offset;
	__u64 size;
};

/**
 * struct neuronsim_stream - one engine's instruction stream
 * @offset: in, byte offset of the first instruction in the code allocation,
 *	a multiple of 8
 * @count: in, number of NEURONSIM_INSN_SIZE-byte instructions (may be 0)
 * @pad: must be zero
 */
struct neuronsim_stream {
	__u64 offset;
	__u32 count;
	__u32 pad;
};

/* Job flags (struct neuronsim_job_submit.flags, passed to the firmware). */
#define NEURONSIM_JOB_CHECK_NAN (1U << 0) /* record NaN outputs */
#define NEURONSIM_JOB_CHECK_INF (1U << 1) /* record Inf outputs */
#define NEURONSIM_JOB_PROFILE (1U << 2)   /* write spans to the trace region */
#define NEURONSIM_JOB_FLAGS_ALL                                              \
	(NEURONSIM_JOB_CHECK_NAN | NEURONSIM_JOB_CHECK_INF |                  \
	 NEURONSIM_JOB_PROFILE)

/**
 * struct neuronsim_job_submit - queue a job on a reserved core
 * @core: in, a core this file reserved (< NEURONSIM_PARAM_NUM_CORES, else
 *	-EINVAL; a core this file did not reserve: -EACCES)
 * @flags: in, NEURONSIM_JOB_* bits, a subset of NEURONSIM_JOB_FLAGS_ALL
 *	(else -EINVAL)
 * @code_handle: in, allocation holding the instruction streams; may be 0
 *	only when every stream count is 0
 * @n_regions: in, entries at @regions_ptr, <= NEURONSIM_MAX_REGIONS
 * @regions_ptr: in, user pointer to @n_regions struct neuronsim_region; 0
 *	when @n_regions is 0
 * @deadline_ns: in, absolute CLOCK_MONOTONIC execution deadline in ns, 0 for
 *	none, never negative; the job ends with NEURONSIM_STATUS_TIMEOUT once it passes
 * @streams: in, per-engine instruction streams inside @code_handle
 * @trace: in, with NEURONSIM_JOB_PROFILE the region (offset a multiple of
 *	8, handle 0 for none) the firmware writes its
 *	profile spans to (32-byte records: __u64 start_ns, end_ns; __u32
 *	engine, insn_index, debug_id, pad; as fwsim_span_t); else all zero
 * @job_id: out, job id for NEURONSIM_IOCTL_JOB_WAIT on this file (never 0)
 * @reserved: must be zero
 */
struct neuronsim_job_submit {
	__u32 core;
	__u32 flags;
	__u32 code_handle;
	__u32 n_regions;
	__u64 regions_ptr;
	__s64 deadline_ns;
	struct neuronsim_stream streams[NEURONSIM_NUM_ENGINES];
	struct neuronsim_region trace;
	__u64 job_id;
	__u64 reserved;
};

/**
 * enum neuronsim_status - how a job ended
 * @NEURONSIM_STATUS_SUCCESS: completed
 * @NEURONSIM_STATUS_NUM_ERR: completed, a NaN/Inf was recorded
 * @NEURONSIM_STATUS_OOB: an access fell outside its region; stopped before it
 * @NEURONSIM_STATUS_TIMEOUT: the job's deadline passed
 * @NEURONSIM_STATUS_INVALID: bad program or job (see the message)
 * @NEURONSIM_STATUS_DEADLOCK: every unfinished engine waits on a semaphore
 * @NEURONSIM_STATUS_NOMEM: the firmware ran out of host memory
 * @NEURONSIM_STATUS_FW_LOST: the firmware detached or died before completing
 * @NEURONSIM_STATUS_COUNT: number of statuses
 *
 * Values 0..6 equal fwsim_status_t of firmware-sim/fwsim.h.
 */
enum neuronsim_status {
	NEURONSIM_STATUS_SUCCESS = 0,
	NEURONSIM_STATUS_NUM_ERR = 1,
	NEURONSIM_STATUS_OOB = 2,
	NEURONSIM_STATUS_TIMEOUT = 3,
	NEURONSIM_STATUS_INVALID = 4,
	NEURONSIM_STATUS_DEADLOCK = 5,
	NEURONSIM_STATUS_NOMEM = 6,
	NEURONSIM_STATUS_FW_LOST = 7,
	NEURONSIM_STATUS_COUNT = 8
};

/**
 * struct neuronsim_error_record - where and how a job failed, plus its stats
 * @status: out, enum neuronsim_status of the job
 * @engine: out, engine of the failing or first NaN/Inf instruction
 * @insn_index: out, index of that instruction in its engine's stream
 * @debug_id: out, that instruction's debug_id
 * @ap_index: out, the operand that was out of bounds, 0 for NaN/Inf (output)
 * @region: out, that operand's region index
 * @is_inf: out, numerical error: 0 NaN, 1 Inf
 * @pad: zero
 * @first_index: out, numerical error: first bad flat (row-major) element
 * @count: out, numerical error: bad elements in that output
 * @num_err_insns: out, instructions of the job that produced NaN/Inf
 * @insns_executed: out, instructions executed by all engines
 * @trace_count: out, profile spans written to the trace region
 * @trace_dropped: out, profile spans that did not fit
 * @engine_busy_ns: out, per-engine busy time in ns
 * @message: out, NUL-terminated one-line description, may be empty
 *
 * The same struct is filled by the firmware (NEURONSIM_IOCTL_FW_COMPLETE)
 * and read by the waiter (NEURONSIM_IOCTL_JOB_WAIT). Field meanings follow
 * fwsim_error_t and fwsim_job_t of firmware-sim/fwsim.h.
 */
struct neuronsim_error_record {
	__u32 status;
	__u32 engine;
	__u32 insn_index;
	__u32 debug_id;
	__u32 ap_index;
	__u32 region;
	__u32 is_inf;
	__u32 pad;
	__u64 first_index;
	__u64 count;
	__u64 num_err_insns;
	__u64 insns_executed;
	__u64 trace_count;
	__u64 trace_dropped;
	__u64 engine_busy_ns[NEURONSIM_NUM_ENGINES];
	char message[NEURONSIM_ERROR_MSG_LEN];
};

/* Fields of struct neuronsim_error_record_ext that hold a value (@valid). */
#define NEURONSIM_EXT_FLOPS (1U << 0) /* @flops */
#define NEURONSIM_EXT_VALID_ALL NEURONSIM_EXT_FLOPS

/**
 * struct neuronsim_error_record_ext - the error record and its 1.2 extension
 * @rec: the struct neuronsim_error_record of ABI 1.0, unchanged
 * @valid: NEURONSIM_EXT_* bits: the fields below that hold a value. In (from
 *	the firmware): a subset of NEURONSIM_EXT_VALID_ALL, else -EINVAL. Out
 *	(to the waiter): what the firmware reported; 0 when it completed the
 *	job with a plain record (a firmware of ABI 1.1); NEURONSIM_EXT_FLOPS
 *	with @flops 0 for a job the driver ended itself (deadline passed
 *	before it started, firmware gone, null_hw)
 * @pad: must be zero
 * @flops: with NEURONSIM_EXT_FLOPS, floating-point operations the job
 *	executed (every executed instruction counts, docs/isa.md "FLOPs");
 *	else zero
 * @reserved: must be zero
 *
 * Passed instead of struct neuronsim_error_record when
 * NEURONSIM_COMPLETE_RECORD_EXT (firmware) or NEURONSIM_WAIT_RECORD_EXT
 * (waiter) is set; only with NEURONSIM_CAP_RECORD_EXT (a driver of ABI 1.1
 * refuses the flags with -EINVAL). Either side may use either form: a plain
 * waiter of an extended completion gets @rec only, an extended waiter of a
 * plain completion gets @valid 0.
 */
struct neuronsim_error_record_ext {
	struct neuronsim_error_record rec;
	__u32 valid;
	__u32 pad;
	__u64 flops;
	__u64 reserved[2];
};

/* struct neuronsim_job_wait.flags (1.2) */
#define NEURONSIM_WAIT_RECORD_EXT (1U << 0) /* @error_ptr: an _ext record */

/**
 * struct neuronsim_job_wait - wait for a submitted job to finish
 * @job_id: in, from NEURONSIM_IOCTL_JOB_SUBMIT on this file
 * @flags: in, 0 or NEURONSIM_WAIT_RECORD_EXT (with
 *	NEURONSIM_CAP_RECORD_EXT); any other bit fails with -EINVAL
 * @pad: must be zero
 * @timeout_ns: in, absolute CLOCK_MONOTONIC deadline in ns; a deadline in
 *	the past polls
 * @status: out, enum neuronsim_status once the job finished
 * @pad2: must be zero
 * @error_ptr: in, user pointer to a struct neuronsim_error_record (with
 *	NEURONSIM_WAIT_RECORD_EXT a struct neuronsim_error_record_ext) filled
 *	on success of this ioctl, or 0
 *
 * Returns 0 when the job finished (the job id is then released), -ETIME when
 * the deadline passed first, -ERESTARTSYS/-EINTR on a signal (the deadline
 * being absolute, a restarted call waits for the same instant).
 */
struct neuronsim_job_wait {
	__u64 job_id;
	__u32 flags;
	__u32 pad;
	__s64 timeout_ns;
	__u32 status;
	__u32 pad2;
	__u64 error_ptr;
};

/* ---- device side: /dev/neuronsim-fwN, root only ---- */

/**
 * struct neuronsim_fw_attach - become this device's firmware
 * @flags: in, must be zero
 * @pad: must be zero
 * @num_cores: out, NeuronCores of the device
 * @pad2: must be zero
 * @mem_size: out, device memory in bytes; mmap() offset 0 maps all of it
 */
struct neuronsim_fw_attach {
	__u32 flags;
	__u32 pad;
	__u32 num_cores;
	__u32 pad2;
	__u64 mem_size;
};

/**
 * struct neuronsim_fw_region - one region binding as the firmware sees it
 * @addr: device address (offset into the device memory mapping)
 * @size: bytes
 *
 * Same layout as fwsim_region_t.
 */
struct neuronsim_fw_region {
	__u64 addr;
	__u64 size;
};

/**
 * struct neuronsim_fw_stream - one engine's stream as the firmware sees it
 * @addr: device address of the first instruction
 * @count: number of NEURONSIM_INSN_SIZE-byte instructions
 * @pad: zero
 */
struct neuronsim_fw_stream {
	__u64 addr;
	__u32 count;
	__u32 pad;
};

/**
 * struct neuronsim_fw_fetch - take the next runnable job
 * @flags: in, must be zero
 * @max_regions: in, entries available at @regions_ptr
 * @timeout_ns: in, absolute CLOCK_MONOTONIC deadline in ns for a job to
 *	become runnable; a deadline in the past polls
 * @regions_ptr: in, user pointer to @max_regions struct neuronsim_fw_region
 * @job_id: out, id to pass to NEURONSIM_IOCTL_FW_COMPLETE
 * @core: out, core the job runs on
 * @job_flags: out, NEURONSIM_JOB_* bits from the submitter
 * @n_regions: out, region bindings written at @regions_ptr; with -E2BIG the
 *	number needed (the job stays queued)
 * @pad: zero
 * @deadline_ns: out, absolute CLOCK_MONOTONIC execution deadline, 0 = none
 * @streams: out, per-engine instruction streams
 * @trace: out, with NEURONSIM_JOB_PROFILE the trace buffer, else zero
 *
 * A core runs one job at a time: its next job is handed out only after
 * the previous one was completed. Returns -ETIME when the deadline passed
 * without work.
 */
struct neuronsim_fw_fetch {
	__u32 flags;
	__u32 max_regions;
	__s64 timeout_ns;
	__u64 regions_ptr;
	__u64 job_id;
	__u32 core;
	__u32 job_flags;
	__u32 n_regions;
	__u32 pad;
	__s64 deadline_ns;
	struct neuronsim_fw_stream streams[NEURONSIM_NUM_ENGINES];
	struct neuronsim_fw_region trace;
};

/* struct neuronsim_fw_complete.flags (1.2) */
#define NEURONSIM_COMPLETE_RECORD_EXT (1U << 0) /* @error_ptr: an _ext record */

/**
 * struct neuronsim_fw_complete - finish a fetched job
 * @job_id: in, from NEURONSIM_IOCTL_FW_FETCH of this file
 * @status: in, enum neuronsim_status, below NEURONSIM_STATUS_COUNT (else
 *	-EINVAL)
 * @flags: in, 0 or NEURONSIM_COMPLETE_RECORD_EXT (with
 *	NEURONSIM_CAP_RECORD_EXT); any other bit fails with -EINVAL
 * @error_ptr: in, user pointer to a struct neuronsim_error_record (with
 *	NEURONSIM_COMPLETE_RECORD_EXT a struct neuronsim_error_record_ext)
 *	handed to the waiter (its status is overwritten by @status), or 0 for
 *	none
 */
struct neuronsim_fw_complete {
	__u64 job_id;
	__u32 status;
	__u32 flags;
	__u64 error_ptr;
};

/**
 * enum neuronsim_abort_reason - why the driver wants a running job stopped
 * @NEURONSIM_ABORT_DEADLINE: its deadline_ns passed
 * @NEURONSIM_ABORT_CLOSED: the file that submitted it was closed (the
 *	process exited or was killed); nobody waits for the result
 */
enum neuronsim_abort_reason {
	NEURONSIM_ABORT_DEADLINE = 1,
	NEURONSIM_ABORT_CLOSED = 2
};

/**
 * struct neuronsim_fw_abort - wait for a running job the driver wants stopped
 * @flags: in, must be zero
 * @pad: must be zero
 * @timeout_ns: in, absolute CLOCK_MONOTONIC deadline in ns for a request to
 *	come; a deadline in the past polls
 * @job_id: out, a job this file fetched and has not completed
 * @core: out, the core it runs on
 * @reason: out, enum neuronsim_abort_reason
 *
 * Each running job is reported at most once. The firmware stops it as soon
 * as it can and completes it with NEURONSIM_IOCTL_FW_COMPLETE as usual
 * (status NEURONSIM_STATUS_TIMEOUT); until then the core stays busy. So a
 * job whose instructions never end, or whose client was killed, does not
 * hold its core. Returns -ETIME when the deadline passed without a request,
 * -EPERM when this file is not the attached firmware.
 */
struct neuronsim_fw_abort {
	__u32 flags;
	__u32 pad;
	__s64 timeout_ns;
	__u64 job_id;
	__u32 core;
	__u32 reason;
};

/**
 * struct neuronsim_fw_detach - stop being the firmware
 * @flags: in, must be zero
 * @pad: must be zero
 *
 * Every queued and running job ends with NEURONSIM_STATUS_FW_LOST, as when
 * the firmware's file is closed.
 */
struct neuronsim_fw_detach {
	__u32 flags;
	__u32 pad;
};

/*
 * Direction bits. Every ioctl is _IOWR, also the five that write nothing
 * back (MEM_FREE, CORE_RESERVE, CORE_RELEASE, FW_COMPLETE, FW_DETACH),
 * where _IOW would be the accurate encoding. They stay _IOWR: _IOC_DIR is
 * part of the ioctl number, so a new direction is a new number, and these
 * numbers are ABI 1's (a client checks only the major). Renumbering would
 * break every ABI 1 client and firmware; adding _IOW aliases would make new
 * clients fail with -ENOTTY on a 1.1 driver. The driver copies exactly the
 * bytes each struct's in/out fields say, whatever the direction bits; a
 * major 2 would switch these five to _IOW.
 */

/* Client ioctls (/dev/neuronsimN). GET_PARAM also works on the device side. */
#define NEURONSIM_IOCTL_GET_PARAM                                            \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x00, struct neuronsim_get_param)
#define NEURONSIM_IOCTL_MEM_ALLOC                                            \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x01, struct neuronsim_mem_alloc)
#define NEURONSIM_IOCTL_MEM_FREE                                             \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x02, struct neuronsim_mem_free)
#define NEURONSIM_IOCTL_MEM_INFO                                             \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x03, struct neuronsim_mem_info)
#define NEURONSIM_IOCTL_CORE_RESERVE                                         \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x04, struct neuronsim_core_reserve)
#define NEURONSIM_IOCTL_CORE_RELEASE                                         \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x05, struct neuronsim_core_reserve)
#define NEURONSIM_IOCTL_JOB_SUBMIT                                           \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x06, struct neuronsim_job_submit)
#define NEURONSIM_IOCTL_JOB_WAIT                                             \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x07, struct neuronsim_job_wait)

/* Device-side ioctls (/dev/neuronsim-fwN). */
#define NEURONSIM_IOCTL_FW_ATTACH                                            \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x20, struct neuronsim_fw_attach)
#define NEURONSIM_IOCTL_FW_FETCH                                             \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x21, struct neuronsim_fw_fetch)
#define NEURONSIM_IOCTL_FW_COMPLETE                                          \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x22, struct neuronsim_fw_complete)
#define NEURONSIM_IOCTL_FW_DETACH                                            \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x23, struct neuronsim_fw_detach)
#define NEURONSIM_IOCTL_FW_ABORT_WAIT                                        \
	_IOWR(NEURONSIM_IOCTL_BASE, 0x24, struct neuronsim_fw_abort)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_LINUX_NEURONSIM_H */
