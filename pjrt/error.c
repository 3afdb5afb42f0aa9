/* PJRT errors: creation with a message, the PJRT_Error_* functions, and the mapping of runtime and compiler statuses to PJRT error codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/status.h"
#include "pjrt_internal.h"

/* A PJRT_Error's handle points at an ns_status_t (neuronsim/status.h): PJRT's
 * error codes are absl's canonical codes, the status's own, so the message is
 * made and kept by the one status type. */
_Static_assert((int)PJRT_Error_Code_UNAUTHENTICATED == (int)NS_STATUS_UNAUTHENTICATED &&
		       (int)PJRT_Error_Code_INVALID_ARGUMENT == (int)NS_STATUS_INVALID_ARGUMENT &&
		       (int)PJRT_Error_Code_RESOURCE_EXHAUSTED == (int)NS_STATUS_RESOURCE_EXHAUSTED,
	       "PJRT error codes are absl's, as ns_status_code_t");

/* Returned when even an error cannot be allocated; its handle is not in the
 * table, so PJRT_Error_Destroy recognises and ignores it. */
#define OOM_HANDLE ((uint64_t)PJRT_KIND_ERROR << 56 | 0xffffffffull)
static const char oom_msg[] = "neuronsim PJRT plugin: out of memory";

const char *pjrt_code_name(PJRT_Error_Code code)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
		"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
		"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED",
	};
	return (unsigned)code < sizeof(names) / sizeof(names[0]) ? names[code] : "UNKNOWN";
}

PJRT_Error *pjrt_error_v(PJRT_Error_Code code, const char *fmt, va_list ap)
{
	ns_status_t st = ns_status_vmake((ns_status_code_t)code, fmt, ap);
	uint64_t h = pjrt_handle_new(PJRT_KIND_ERROR, st);
	if (!h) {
		ns_status_free(st);
		return PJRT_PTR(PJRT_Error, OOM_HANDLE);
	}
	return PJRT_PTR(PJRT_Error, h);
}

PJRT_Error *pjrt_error(PJRT_Error_Code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	PJRT_Error *e = pjrt_error_v(code, fmt, ap);
	va_end(ap);
	return e;
}

bool pjrt_error_peek(const PJRT_Error *error, PJRT_Error_Code *out_code, const char **out_msg)
{
	uint64_t h = PJRT_HANDLE(error);
	if (h == OOM_HANDLE) {
		*out_code = PJRT_Error_Code_RESOURCE_EXHAUSTED;
		*out_msg = oom_msg;
		return true;
	}
	ns_status_t st = pjrt_handle_get(h, PJRT_KIND_ERROR);
	if (!st)
		return false;
	/* The message lives until the error is destroyed, which the caller owns:
	 * no reference is kept past this call. */
	*out_code = (PJRT_Error_Code)ns_status_code(st);
	*out_msg = ns_status_message(st);
	pjrt_handle_put(h);
	return true;
}

PJRT_Error_Code pjrt_code_from_nrt(NRT_STATUS st)
{
	switch (st) {
	case NRT_SUCCESS: return 0;
	case NRT_INVALID: case NRT_INVALID_HANDLE: case NRT_EXEC_BAD_INPUT:
		return PJRT_Error_Code_INVALID_ARGUMENT;
	case NRT_RESOURCE: case NRT_FAIL_HOST_MEM_ALLOC: case NRT_LOAD_NOT_ENOUGH_NC:
	case NRT_QUEUE_FULL:
		return PJRT_Error_Code_RESOURCE_EXHAUSTED;
	case NRT_TIMEOUT: return PJRT_Error_Code_DEADLINE_EXCEEDED;
	case NRT_UNSUPPORTED_NEFF_VERSION: return PJRT_Error_Code_UNIMPLEMENTED;
	case NRT_UNINITIALIZED: case NRT_CLOSED: case NRT_EXEC_UNIT_DISABLED:
		return PJRT_Error_Code_FAILED_PRECONDITION;
	case NRT_EXEC_NC_BUSY: return PJRT_Error_Code_UNAVAILABLE;
	default: return PJRT_Error_Code_INTERNAL;
	}
}

PJRT_Error_Code pjrt_code_from_ncc(ncc_status_t st)
{
	switch (st) {
	case NCC_OK: return 0;
	case NCC_ERR_PARSE: case NCC_ERR_VERIFY: case NCC_ERR_INVALID:
		return PJRT_Error_Code_INVALID_ARGUMENT;
	case NCC_ERR_NOMEM: case NCC_ERR_LIMIT: return PJRT_Error_Code_RESOURCE_EXHAUSTED;
	case NCC_ERR_UNSUPPORTED: return PJRT_Error_Code_UNIMPLEMENTED;
	case NCC_ERR_NOT_FOUND: return PJRT_Error_Code_NOT_FOUND;
	default: return PJRT_Error_Code_INTERNAL;
	}
}

void pjrt_impl_Error_Destroy(PJRT_Error_Destroy_Args *args)
{
	/* void: nothing to report a bad struct to; only the error field is read. */
	if (!args || args->struct_size < PJRT_STRUCT_SIZE(PJRT_Error_Destroy_Args, error))
		return;
	uint64_t h = PJRT_HANDLE(args->error);
	if (h == 0 || h == OOM_HANDLE)
		return;
	ns_status_free(pjrt_handle_remove(h, PJRT_KIND_ERROR));
}

void pjrt_impl_Error_Message(PJRT_Error_Message_Args *args)
{
	if (!args || args->struct_size < PJRT_STRUCT_SIZE(PJRT_Error_Message_Args, message_size))
		return;
	PJRT_Error_Code code;
	const char *msg;
	if (!pjrt_error_peek(args->error, &code, &msg)) {
		static const char bad[] = "(not a live PJRT_Error of the neuronsim plugin)";
		args->message = bad;
		args->message_size = sizeof(bad) - 1;
		return;
	}
	args->message = msg;
	args->message_size = strlen(msg);
}

PJRT_IMPL(Error_GetCode)
{
	PJRT_CHECK_ARGS(args, PJRT_Error_GetCode_Args, code);
	PJRT_Error_Code code;
	const char *msg;
	if (!pjrt_error_peek(args->error, &code, &msg))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PJRT_Error_GetCode: %p is not a live PJRT_Error", (const void *)args->error);
	args->code = code;
	return NULL;
}
