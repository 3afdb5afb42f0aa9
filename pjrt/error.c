/* PJRT errors: creation with a message, the PJRT_Error_* functions, and the mapping of runtime and compiler statuses to PJRT error codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_internal.h"

typedef struct pjrt_err {
	PJRT_Error_Code code;
	size_t len;
	char msg[];
} pjrt_err_t;

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
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		n = 0;
	pjrt_err_t *e = malloc(sizeof(*e) + (size_t)n + 1);
	if (!e)
		return PJRT_PTR(PJRT_Error, OOM_HANDLE);
	e->code = code;
	vsnprintf(e->msg, (size_t)n + 1, fmt, ap);
	e->len = strlen(e->msg);
	uint64_t h = pjrt_handle_new(PJRT_KIND_ERROR, e);
	if (!h) {
		free(e);
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
	pjrt_err_t *e = pjrt_handle_get(h, PJRT_KIND_ERROR);
	if (!e)
		return false;
	/* The message lives until the error is destroyed, which the caller owns:
	 * no reference is kept past this call. */
	*out_code = e->code;
	*out_msg = e->msg;
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
	free(pjrt_handle_remove(h, PJRT_KIND_ERROR));
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
