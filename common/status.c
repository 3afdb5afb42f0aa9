/* The status object (status.h): one allocation holding the code and the message, and a static status per code for when memory runs out. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/status.h"

struct ns_status_obj {
	ns_status_code_t code;
	int errnum;
	int detail;           /* ns_status_with_detail, 0 for none */
	size_t len;           /* of msg */
	char *msg;            /* text[] below, or a string literal for the static ones */
	char text[];
};

#define OOM_MESSAGE "out of memory formatting an error message"

/* What ns_status_make returns when it cannot allocate: creating a status never
 * fails, and the code survives. */
#define STATIC_STATUS(c) [c] = { .code = c, .len = sizeof(OOM_MESSAGE) - 1, .msg = (char *)OOM_MESSAGE }
static struct ns_status_obj static_statuses[NS_STATUS_CODE_COUNT] = {
	STATIC_STATUS(NS_STATUS_OK), /* unused: ns_status_make turns OK into UNKNOWN */
	STATIC_STATUS(NS_STATUS_CANCELLED),
	STATIC_STATUS(NS_STATUS_UNKNOWN),
	STATIC_STATUS(NS_STATUS_INVALID_ARGUMENT),
	STATIC_STATUS(NS_STATUS_DEADLINE_EXCEEDED),
	STATIC_STATUS(NS_STATUS_NOT_FOUND),
	STATIC_STATUS(NS_STATUS_ALREADY_EXISTS),
	STATIC_STATUS(NS_STATUS_PERMISSION_DENIED),
	STATIC_STATUS(NS_STATUS_RESOURCE_EXHAUSTED),
	STATIC_STATUS(NS_STATUS_FAILED_PRECONDITION),
	STATIC_STATUS(NS_STATUS_ABORTED),
	STATIC_STATUS(NS_STATUS_OUT_OF_RANGE),
	STATIC_STATUS(NS_STATUS_UNIMPLEMENTED),
	STATIC_STATUS(NS_STATUS_INTERNAL),
	STATIC_STATUS(NS_STATUS_UNAVAILABLE),
	STATIC_STATUS(NS_STATUS_DATA_LOSS),
	STATIC_STATUS(NS_STATUS_UNAUTHENTICATED),
};

static bool is_static(ns_status_t st)
{
	return st >= static_statuses && st < static_statuses + NS_STATUS_CODE_COUNT;
}

static const char *const code_names[NS_STATUS_CODE_COUNT] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
};

const char *ns_status_code_str(ns_status_code_t code)
{
	return (unsigned)code < NS_STATUS_CODE_COUNT ? code_names[code] : "UNKNOWN_CODE";
}

ns_status_code_t ns_status_code_from_errno(int errnum)
{
	switch (errnum) {
	case 0: return NS_STATUS_OK;
	case ENOENT: return NS_STATUS_NOT_FOUND;
	case EACCES: case EPERM: return NS_STATUS_PERMISSION_DENIED;
	case ENOMEM: case ENOSPC: case EDQUOT: case EFBIG: case EMFILE: case ENFILE:
		return NS_STATUS_RESOURCE_EXHAUSTED;
	case EINVAL: case ENOTDIR: case EISDIR: case ENAMETOOLONG: return NS_STATUS_INVALID_ARGUMENT;
	case EEXIST: return NS_STATUS_ALREADY_EXISTS;
	case ETIMEDOUT: return NS_STATUS_DEADLINE_EXCEEDED;
	case EINTR: case EAGAIN: case EBUSY: return NS_STATUS_UNAVAILABLE;
	case ENOSYS: case ENOTSUP: return NS_STATUS_UNIMPLEMENTED;
	case ECANCELED: return NS_STATUS_CANCELLED;
	default: return NS_STATUS_UNKNOWN;
	}
}

/* The formatted text, then ": " and tail when tail is not NULL (an annotated
 * message), in one allocation. */
static ns_status_t status_vmake(ns_status_code_t code, int errnum, const char *tail,
				size_t tail_len, const char *fmt, va_list ap)
{
	if (code == NS_STATUS_OK || (unsigned)code >= NS_STATUS_CODE_COUNT)
		code = NS_STATUS_UNKNOWN;
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		n = 0;
	size_t sep = tail ? 2 : 0;
	size_t len = (size_t)n + sep + tail_len;
	struct ns_status_obj *st = malloc(sizeof(*st) + len + 1);
	if (!st)
		return &static_statuses[code];
	st->code = code;
	st->errnum = errnum;
	st->detail = 0;
	st->len = len;
	st->msg = st->text;
	vsnprintf(st->text, (size_t)n + 1, fmt, ap);
	if (tail) {
		memcpy(st->text + n, ": ", 2);
		memcpy(st->text + n + 2, tail, tail_len);
	}
	st->text[len] = '\0';
	return st;
}

ns_status_t ns_status_make(ns_status_code_t code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ns_status_t st = status_vmake(code, 0, NULL, 0, fmt, ap);
	va_end(ap);
	return st;
}

ns_status_t ns_status_vmake(ns_status_code_t code, const char *fmt, va_list ap)
{
	return status_vmake(code, 0, NULL, 0, fmt, ap);
}

ns_status_t ns_status_make_errno(int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ns_status_t st = status_vmake(ns_status_code_from_errno(errnum), errnum, NULL, 0, fmt, ap);
	va_end(ap);
	return st;
}

ns_status_t ns_status_annotate(ns_status_t st, const char *fmt, ...)
{
	if (!st)
		return NULL;
	va_list ap;
	va_start(ap, fmt);
	ns_status_t out = status_vmake(st->code, st->errnum, st->msg, st->len, fmt, ap);
	va_end(ap);
	if (is_static(out)) /* keep the message we had over the static one */
		return st;
	out->detail = st->detail;
	ns_status_free(st);
	return out;
}

ns_status_code_t ns_status_code(ns_status_t st)
{
	return st ? st->code : NS_STATUS_OK;
}

const char *ns_status_message(ns_status_t st)
{
	return st ? st->msg : "";
}

int ns_status_errno(ns_status_t st)
{
	return st ? st->errnum : 0;
}

ns_status_t ns_status_with_detail(ns_status_t st, int detail)
{
	if (st && !is_static(st))
		st->detail = detail;
	return st;
}

int ns_status_detail(ns_status_t st)
{
	return st && !is_static(st) ? st->detail : 0;
}

void ns_status_free(ns_status_t st)
{
	int e = errno; /* a caller may still read the failing call's errno */
	if (st && !is_static(st))
		free(st);
	errno = e;
}

ns_status_code_t ns_status_consume_code(ns_status_t st)
{
	ns_status_code_t code = ns_status_code(st);
	ns_status_free(st);
	return code;
}

size_t ns_status_format(ns_status_t st, char *buf, size_t len)
{
	int n = st ? snprintf(buf, len, "%s: %s", ns_status_code_str(st->code), st->msg)
		   : snprintf(buf, len, "OK");
	return n < 0 ? 0 : (size_t)n;
}

size_t ns_status_copy_message(ns_status_t st, char *buf, size_t len)
{
	int e = errno;
	int n = snprintf(buf, len, "%s", ns_status_message(st));
	errno = e;
	return n < 0 ? 0 : (size_t)n;
}

ns_status_code_t ns_status_consume_message(ns_status_t st, char *buf, size_t len)
{
	ns_status_copy_message(st, buf, len);
	return ns_status_consume_code(st);
}
