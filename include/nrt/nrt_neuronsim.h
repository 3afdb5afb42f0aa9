/* neuronsim extensions to the NRT API: execution error records and device memory accounting. */
#ifndef NRT_NRT_NEURONSIM_H
#define NRT_NRT_NEURONSIM_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong in an execution, resolved against the NEFF's debug map. */
typedef enum nrt_neuronsim_error_kind {
	NRT_NEURONSIM_ERROR_NONE = 0,
	NRT_NEURONSIM_ERROR_NAN = 1,      /* NRT_EXEC_COMPLETED_WITH_NUM_ERR, NaN */
	NRT_NEURONSIM_ERROR_INF = 2,      /* NRT_EXEC_COMPLETED_WITH_NUM_ERR, Inf */
	NRT_NEURONSIM_ERROR_OOB = 3,      /* NRT_EXEC_OOB */
	NRT_NEURONSIM_ERROR_TIMEOUT = 4,  /* NRT_TIMEOUT */
	NRT_NEURONSIM_ERROR_OTHER = 5,    /* invalid job, deadlock, device error */
} nrt_neuronsim_error_kind_t;

typedef struct nrt_neuronsim_exec_error {
	NRT_STATUS status;               /* what nrt_execute() returned */
	uint32_t kind;                   /* nrt_neuronsim_error_kind_t */
	uint32_t logical_nc;             /* core the failing instruction ran on */
	uint32_t engine;                 /* isa_engine_t */
	uint32_t insn_index;             /* in that engine's stream */
	uint32_t source_line;            /* 0 when unknown */
	uint32_t region;                 /* ISA region of the faulting operand/output */
	uint32_t pad;
	uint64_t first_index;            /* numerical errors: first bad flat index */
	uint64_t count;                  /* numerical errors: bad elements */
	char hlo_name[128];              /* "" when the NEFF has no debug entry */
	char op_type[64];
	char source_file[256];
	char tensor[256];                /* I/O tensor name, or "constants"/"scratch" */
	char message[512];               /* the one-line message that was logged (truncated) */
} nrt_neuronsim_exec_error_t;

/* Copies the error record of the most recent execution of model (kind NONE
 * after a successful one; NRT_INVALID if it never executed) into *out_error.
 * With several threads executing, "most recent" is whichever finished last. */
NRT_STATUS nrt_neuronsim_get_last_error(nrt_model_t *model, nrt_neuronsim_exec_error_t *out_error);

/* Device memory accounting by use, over all devices of the runtime. */
typedef enum nrt_neuronsim_mem_category {
	NRT_NEURONSIM_MEM_TENSORS = 0,    /* device-placed tensors */
	NRT_NEURONSIM_MEM_CONSTANTS = 1,  /* NEFF constants */
	NRT_NEURONSIM_MEM_CODE = 2,       /* instruction streams */
	NRT_NEURONSIM_MEM_SCRATCH = 3,    /* model scratch */
	NRT_NEURONSIM_MEM_STAGING = 4,    /* host tensors staged for an execution */
	NRT_NEURONSIM_MEM_CATEGORY_COUNT
} nrt_neuronsim_mem_category_t;

typedef struct nrt_neuronsim_mem_usage {
	uint64_t total;                  /* device memory of all devices, bytes */
	uint64_t in_use;                 /* bytes allocated now (after alignment) */
	uint64_t peak;                   /* highest in_use since nrt_init() */
	uint64_t by_category[NRT_NEURONSIM_MEM_CATEGORY_COUNT]; /* bytes now */
	uint64_t host_tensors;           /* host-placed tensor bytes (not device memory) */
} nrt_neuronsim_mem_usage_t;

NRT_STATUS nrt_neuronsim_get_mem_usage(nrt_neuronsim_mem_usage_t *out_usage);

/* Name of the backend in use: "embedded" or "kernel". */
const char *nrt_neuronsim_backend_name(void);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_NEURONSIM_H */
