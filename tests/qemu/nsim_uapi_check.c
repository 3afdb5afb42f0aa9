/* Compile-time check (host, no run) that the uapi header stands alone, has
 * the documented layout, and agrees with libfwsim and the ISA, so
 * neuronsim-fwd can pass records and regions through without conversion. */
#include <assert.h>
#include <stddef.h>

#include <linux/neuronsim.h>

#include "fwsim/fwsim.h"
#include "neuronsim/isa.h"

#define SIZE(t, n) static_assert(sizeof(struct t) == (n), #t " size")
#define OFF(t, f, n) static_assert(offsetof(struct t, f) == (n), #t "." #f)

SIZE(neuronsim_get_param, 16);
SIZE(neuronsim_mem_alloc, 32);
SIZE(neuronsim_mem_free, 8);
SIZE(neuronsim_mem_info, 32);
SIZE(neuronsim_core_reserve, 8);
SIZE(neuronsim_region, 24);
SIZE(neuronsim_stream, 16);
SIZE(neuronsim_job_submit, 152);
OFF(neuronsim_job_submit, streams, 32);
OFF(neuronsim_job_submit, trace, 112);
OFF(neuronsim_job_submit, job_id, 136);
SIZE(neuronsim_error_record, 280);
OFF(neuronsim_error_record, first_index, 32);
OFF(neuronsim_error_record, engine_busy_ns, 80);
OFF(neuronsim_error_record, message, 120);
SIZE(neuronsim_error_record_ext, 312);
OFF(neuronsim_error_record_ext, valid, 280);
OFF(neuronsim_error_record_ext, flops, 288);
SIZE(neuronsim_job_wait, 40);
SIZE(neuronsim_fw_attach, 24);
SIZE(neuronsim_fw_region, 16);
SIZE(neuronsim_fw_stream, 16);
SIZE(neuronsim_fw_fetch, 152);
OFF(neuronsim_fw_fetch, streams, 56);
SIZE(neuronsim_fw_complete, 24);
SIZE(neuronsim_fw_detach, 8);
SIZE(neuronsim_fw_abort, 32);
OFF(neuronsim_fw_abort, timeout_ns, 8);
OFF(neuronsim_fw_abort, job_id, 16);
OFF(neuronsim_fw_abort, reason, 28);

/* Agreement with the simulator. */
static_assert(NEURONSIM_INSN_SIZE == sizeof(isa_insn_t), "insn size");
static_assert(NEURONSIM_NUM_ENGINES == ISA_ENGINE_COUNT, "engines");
static_assert(sizeof(struct neuronsim_fw_region) == sizeof(fwsim_region_t) &&
	      offsetof(struct neuronsim_fw_region, size) ==
	      offsetof(fwsim_region_t, size), "region layout");
static_assert(NEURONSIM_JOB_CHECK_NAN == FWSIM_JOB_CHECK_NAN &&
	      NEURONSIM_JOB_CHECK_INF == FWSIM_JOB_CHECK_INF &&
	      NEURONSIM_JOB_PROFILE == FWSIM_JOB_PROFILE, "job flags");
static_assert((int)NEURONSIM_STATUS_SUCCESS == (int)FWSIM_OK &&
	      (int)NEURONSIM_STATUS_NUM_ERR == (int)FWSIM_NUM_ERR &&
	      (int)NEURONSIM_STATUS_OOB == (int)FWSIM_OOB &&
	      (int)NEURONSIM_STATUS_TIMEOUT == (int)FWSIM_TIMEOUT &&
	      (int)NEURONSIM_STATUS_INVALID == (int)FWSIM_INVALID &&
	      (int)NEURONSIM_STATUS_DEADLOCK == (int)FWSIM_DEADLOCK &&
	      (int)NEURONSIM_STATUS_NOMEM == (int)FWSIM_NOMEM, "statuses");
static_assert(NEURONSIM_ERROR_MSG_LEN ==
	      sizeof(((fwsim_error_t *)0)->message), "message length");
static_assert(sizeof(fwsim_span_t) == 32, "trace span: 32-byte records");
