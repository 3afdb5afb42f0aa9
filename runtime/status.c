/* NRT_STATUS: its strings, and the boundary where libnrt's internal statuses become one (internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
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

/* The canonical code that goes with an NRT_STATUS (for nrt_status_make). */
static ns_status_code_t canonical_of(NRT_STATUS nrt)
{
	switch (nrt) {
	case NRT_SUCCESS: return NS_STATUS_OK;
	case NRT_INVALID: case NRT_INVALID_HANDLE: case NRT_EXEC_BAD_INPUT:
		return NS_STATUS_INVALID_ARGUMENT;
	case NRT_RESOURCE: case NRT_FAIL_HOST_MEM_ALLOC: case NRT_QUEUE_FULL: case NRT_LOAD_NOT_ENOUGH_NC:
		return NS_STATUS_RESOURCE_EXHAUSTED;
	case NRT_TIMEOUT: return NS_STATUS_DEADLINE_EXCEEDED;
	case NRT_UNSUPPORTED_NEFF_VERSION: return NS_STATUS_UNIMPLEMENTED;
	case NRT_UNINITIALIZED: case NRT_CLOSED: return NS_STATUS_FAILED_PRECONDITION;
	case NRT_EXEC_NC_BUSY: return NS_STATUS_UNAVAILABLE;
	case NRT_EXEC_OOB: return NS_STATUS_OUT_OF_RANGE;
	default: return NS_STATUS_INTERNAL;
	}
}

ns_status_t nrt_status_make(NRT_STATUS nrt, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ns_status_t st = ns_status_vmake(canonical_of(nrt), fmt, ap);
	va_end(ap);
	return ns_status_with_detail(st, (int)nrt);
}

ns_status_t nrt_status_append(ns_status_t st, const char *fmt, ...)
{
	char more[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(more, sizeof(more), fmt, ap);
	va_end(ap);
	const char *msg = ns_status_message(st);
	ns_status_t out = ns_status_with_detail(ns_status_make(ns_status_code(st), "%s%s", msg, more),
						ns_status_detail(st));
	/* Out of memory: a static status, without st's message or detail. */
	if (strncmp(ns_status_message(out), msg, strlen(msg)) != 0 ||
	    ns_status_detail(out) != ns_status_detail(st)) {
		ns_status_free(out);
		return st;
	}
	ns_status_free(st);
	return out;
}

NRT_STATUS nrt_status_code(ns_status_t st)
{
	if (!st)
		return NRT_SUCCESS;
	if (ns_status_detail(st))
		return (NRT_STATUS)ns_status_detail(st);
	switch (ns_status_code(st)) {
	case NS_STATUS_OK: return NRT_SUCCESS;
	case NS_STATUS_INVALID_ARGUMENT: case NS_STATUS_OUT_OF_RANGE: case NS_STATUS_NOT_FOUND:
	case NS_STATUS_ALREADY_EXISTS: case NS_STATUS_DATA_LOSS:
		return NRT_INVALID;
	case NS_STATUS_RESOURCE_EXHAUSTED: return NRT_RESOURCE;
	case NS_STATUS_DEADLINE_EXCEEDED: return NRT_TIMEOUT;
	case NS_STATUS_UNIMPLEMENTED: return NRT_INVALID;
	default: return NRT_FAILURE;
	}
}

NRT_STATUS nrt_status_report(const char *where, ns_status_t st)
{
	if (!st)
		return NRT_SUCCESS;
	NRT_STATUS nrt = nrt_status_code(st);
	/* A full queue is backpressure, not a failure of the caller's. */
	nrt_log(nrt == NRT_QUEUE_FULL ? NRT_LOG_DEBUG : NRT_LOG_ERROR, "%s: %s", where, ns_status_message(st));
	ns_status_free(st);
	return nrt;
}
