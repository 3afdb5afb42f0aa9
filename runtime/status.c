/* Human-readable NRT_STATUS strings. */
#include "nrt/nrt_status.h"

const char *nrt_get_status_as_str(NRT_STATUS status)
{
	switch (status) {
	case NRT_SUCCESS: return "Success";
	case NRT_FAILURE: return "Non specific failure";
	case NRT_INVALID: return "Invalid argument, NEFF or tensor";
	case NRT_INVALID_HANDLE: return "Invalid (freed or foreign) handle";
	case NRT_RESOURCE: return "Failed to allocate a resource";
	case NRT_TIMEOUT: return "Operation timed out";
	case NRT_HW_ERROR: return "Hardware failure";
	case NRT_QUEUE_FULL: return "Execution queue is full";
	case NRT_LOAD_NOT_ENOUGH_NC: return "Not enough NeuronCores available to load the model";
	case NRT_UNSUPPORTED_NEFF_VERSION: return "Unsupported NEFF version";
	case NRT_FAIL_HOST_MEM_ALLOC: return "Failed to allocate host memory";
	case NRT_UNINITIALIZED: return "Runtime not initialized (call nrt_init first)";
	case NRT_CLOSED: return "Runtime already closed";
	case NRT_QUEUE_EMPTY: return "Queue is empty";
	case NRT_EXEC_UNIT_UNRECOVERABLE: return "Execution unit unrecoverable after a fatal error";
	case NRT_EXEC_BAD_INPUT: return "Invalid input submitted for execution";
	case NRT_EXEC_COMPLETED_WITH_NUM_ERR: return "Execution completed with numerical errors (produced NaN)";
	case NRT_EXEC_COMPLETED_WITH_ERR: return "Execution completed with errors";
	case NRT_EXEC_NC_BUSY: return "NeuronCore is in use";
	case NRT_EXEC_OOB: return "Out of bounds memory access during execution";
	case NRT_COLL_PENDING: return "Collective operation pending";
	case NRT_EXEC_HW_ERR_COLLECTIVES: return "Hardware error in collectives";
	case NRT_EXEC_HW_ERR_HBM_UE: return "Uncorrectable HBM error";
	case NRT_EXEC_HW_ERR_NC_UE: return "Uncorrectable NeuronCore memory error";
	case NRT_EXEC_HW_ERR_DMA_ABORT: return "DMA engine abort";
	case NRT_EXEC_SW_NQ_OVERFLOW: return "Notification queue overflow";
	case NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE: return "Repairable uncorrectable HBM error";
	case NRT_NETWORK_PROXY_FAILURE: return "Network proxy failure";
	}
	return "Unknown status";
}
