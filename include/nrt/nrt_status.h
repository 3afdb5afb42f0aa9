/* NRT_STATUS: the status codes every libnrt call returns (values match the Neuron Runtime). */
#ifndef NRT_NRT_STATUS_H
#define NRT_NRT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Numeric values are part of the public ABI: programs written for the Neuron
 * Runtime compare against them, so they never change and new ones are only
 * appended. */
typedef enum {
	NRT_SUCCESS = 0,
	NRT_FAILURE = 1,                 /* generic failure, when nothing more precise fits */
	NRT_INVALID = 2,                 /* bad argument, corrupt NEFF, I/O name or size mismatch */
	NRT_INVALID_HANDLE = 3,          /* freed, foreign or garbage model/tensor handle */
	NRT_RESOURCE = 4,                /* out of device memory or another resource */
	NRT_TIMEOUT = 5,                 /* execution passed its deadline */
	NRT_HW_ERROR = 6,                /* the device failed */
	NRT_QUEUE_FULL = 7,              /* execution queue full */
	NRT_LOAD_NOT_ENOUGH_NC = 9,      /* not enough NeuronCores for the requested load */
	NRT_UNSUPPORTED_NEFF_VERSION = 10, /* NEFF format this runtime cannot read */
	NRT_FAIL_HOST_MEM_ALLOC = 11,    /* kept for compatibility: host allocation failed */
	NRT_UNINITIALIZED = 13,          /* called before nrt_init() */
	NRT_CLOSED = 14,                 /* called after nrt_close() */
	NRT_QUEUE_EMPTY = 15,            /* a queue had no data */

	NRT_EXEC_UNIT_UNRECOVERABLE = 101, /* execution unit hit a fatal error, unusable
					  * until the runtime is reinitialised */

	NRT_EXEC_BAD_INPUT = 1002,       /* invalid input submitted for execution */
	NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003, /* completed, but produced NaN (or Inf) */
	NRT_EXEC_COMPLETED_WITH_ERR = 1004, /* completed with another (logical) error */
	NRT_EXEC_NC_BUSY = 1005,         /* the NeuronCore is in use by someone else */
	NRT_EXEC_OOB = 1006,             /* a memory access fell outside its bounds */
	NRT_COLL_PENDING = 1100,         /* collective operation still pending */

	NRT_EXEC_HW_ERR_COLLECTIVES = 1200,
	NRT_EXEC_HW_ERR_HBM_UE = 1201,
	NRT_EXEC_HW_ERR_NC_UE = 1202,
	NRT_EXEC_HW_ERR_DMA_ABORT = 1203,
	NRT_EXEC_SW_NQ_OVERFLOW = 1204,
	NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
	NRT_NETWORK_PROXY_FAILURE = 1206,
} NRT_STATUS;

/* The name 101 had before the Neuron Runtime renamed it; kept so that older
 * programs build. */
#define NRT_EXEC_UNIT_DISABLED NRT_EXEC_UNIT_UNRECOVERABLE

/* Returns a static, human-readable description of status (never NULL; an
 * unknown value gives a generic string). Usable before nrt_init(). */
const char *nrt_get_status_as_str(NRT_STATUS status);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_STATUS_H */
