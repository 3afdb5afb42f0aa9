/* The internal status of every layer: NULL for success, else an object carrying a canonical code and a message made where the failure happened, annotated on its way up. */
#ifndef NEURONSIM_STATUS_H
#define NEURONSIM_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Canonical codes (absl's and IREE's set, the same numbers), so a layer's
 * statuses map onto its own API's codes in one table (the NRT boundary maps
 * them onto NRT_STATUS). What each means here:
 *   INVALID_ARGUMENT   a bad argument, or input data that is malformed (not a
 *                      .npy file, a corrupt header, a value out of its domain)
 *   NOT_FOUND          a file, name or object that does not exist (ENOENT)
 *   PERMISSION_DENIED  EACCES, EPERM
 *   RESOURCE_EXHAUSTED out of memory, out of disk space, a limit reached
 *   FAILED_PRECONDITION the state does not allow it (not initialised, closed)
 *   OUT_OF_RANGE       an index or size past the end (truncated data)
 *   UNIMPLEMENTED      valid input this code does not handle (a newer format
 *                      version, a dtype without a spelling)
 *   DATA_LOSS          a checksum does not match
 *   UNAVAILABLE        an I/O error worth retrying (EINTR, EAGAIN, EBUSY)
 *   UNKNOWN            any other errno */
typedef enum ns_status_code {
	NS_STATUS_OK = 0,
	NS_STATUS_CANCELLED = 1,
	NS_STATUS_UNKNOWN = 2,
	NS_STATUS_INVALID_ARGUMENT = 3,
	NS_STATUS_DEADLINE_EXCEEDED = 4,
	NS_STATUS_NOT_FOUND = 5,
	NS_STATUS_ALREADY_EXISTS = 6,
	NS_STATUS_PERMISSION_DENIED = 7,
	NS_STATUS_RESOURCE_EXHAUSTED = 8,
	NS_STATUS_FAILED_PRECONDITION = 9,
	NS_STATUS_ABORTED = 10,
	NS_STATUS_OUT_OF_RANGE = 11,
	NS_STATUS_UNIMPLEMENTED = 12,
	NS_STATUS_INTERNAL = 13,
	NS_STATUS_UNAVAILABLE = 14,
	NS_STATUS_DATA_LOSS = 15,
	NS_STATUS_UNAUTHENTICATED = 16,
	NS_STATUS_CODE_COUNT
} ns_status_code_t;

/* Opaque. NULL is success: `if (st)` tests for failure, and a function that
 * returns ns_status_t hands the caller ownership of what it returns, which the
 * caller passes up (annotated or not), or ends with ns_status_free,
 * ns_status_ignore or ns_status_consume_code. A status belongs to one thread at
 * a time. */
typedef struct ns_status_obj *ns_status_t;

#define NS_OK ((ns_status_t)NULL)

/* A new failure with code (not NS_STATUS_OK: that gives NS_STATUS_UNKNOWN) and a
 * printf message, which is the whole text users will see: say what failed, on
 * what, and why. Never fails: when memory runs out, the result is one of the
 * static statuses (the code kept, the message "out of memory formatting an error
 * message" in place of the lost one), which free and annotate accept as any other. */
ns_status_t ns_status_make(ns_status_code_t code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* ns_status_make for a wrapper that has its own va_list. */
ns_status_t ns_status_vmake(ns_status_code_t code, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* ns_status_make with the code mapped from errnum (ns_status_code_from_errno),
 * errnum kept (ns_status_errno). The message is only fmt's: put strerror in it
 * where users should see it. */
ns_status_t ns_status_make_errno(int errnum, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Adds context in front of the message as a failure goes up, "CONTEXT: MESSAGE"
 * (a caller says what it was doing: "loading model 'mlp'"). Consumes st and
 * returns the annotated status (NULL stays NULL, and fmt is not used). When
 * memory runs out, st comes back unannotated. */
ns_status_t ns_status_annotate(ns_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* NS_STATUS_OK for NULL. */
ns_status_code_t ns_status_code(ns_status_t st);
/* The message, "" for NULL; valid until st is freed or annotated. */
const char *ns_status_message(ns_status_t st);
/* The errno a status was made from (ns_status_make_errno), else 0. */
int ns_status_errno(ns_status_t st);
/* A layer's own, finer code carried beside the canonical one (libnrt keeps its
 * NRT_STATUS there: NRT_UNSUPPORTED_NEFF_VERSION, NRT_EXEC_OOB, ...), so that its
 * API boundary returns the exact code; annotation keeps it. Returns st; a NULL
 * or static status (out of memory) is returned as it is, and then reads 0. */
ns_status_t ns_status_with_detail(ns_status_t st, int detail);
/* The layer's code set with ns_status_with_detail, else 0. */
int ns_status_detail(ns_status_t st);
static inline bool ns_status_is_ok(ns_status_t st) { return st == NULL; }

/* Frees st. NULL and the static statuses are fine. This and the functions that
 * read a status leave errno as it was, for callers of APIs that also set it. */
void ns_status_free(ns_status_t st);
/* ns_status_free, said where a failure is deliberately dropped (a cleanup
 * path that already reports another one, a best-effort write). */
static inline void ns_status_ignore(ns_status_t st) { ns_status_free(st); }
/* Frees st and returns its code: for a caller that only branches on it. */
ns_status_code_t ns_status_consume_code(ns_status_t st);

/* "INVALID_ARGUMENT", ...; "UNKNOWN_CODE" outside the enum. */
const char *ns_status_code_str(ns_status_code_t code);
/* The code an errno maps to: ENOENT NOT_FOUND, EACCES/EPERM PERMISSION_DENIED,
 * ENOMEM/ENOSPC/EDQUOT/EFBIG/EMFILE/ENFILE RESOURCE_EXHAUSTED, EINVAL/ENOTDIR/
 * EISDIR/ENAMETOOLONG INVALID_ARGUMENT, EEXIST ALREADY_EXISTS, ETIMEDOUT
 * DEADLINE_EXCEEDED, EINTR/EAGAIN/EBUSY UNAVAILABLE, ENOSYS/ENOTSUP
 * UNIMPLEMENTED, ECANCELED CANCELLED, 0 OK, anything else UNKNOWN. */
ns_status_code_t ns_status_code_from_errno(int errnum);

/* Writes "CODE: MESSAGE" ("OK" for NULL) into buf (always NUL-terminated when
 * len > 0, cut when too long) and returns the length it needed, as snprintf. */
size_t ns_status_format(ns_status_t st, char *buf, size_t len);
/* Copies the message alone into buf, as ns_status_format: for the layers whose
 * API still hands out (err, err_len) buffers. */
size_t ns_status_copy_message(ns_status_t st, char *buf, size_t len);
/* ns_status_copy_message, then frees st and returns its code: where a caller
 * keeps the message in a buffer (an (err, err_len) API, a test's check). */
ns_status_code_t ns_status_consume_message(ns_status_t st, char *buf, size_t len);

/* Returns from the calling function (which returns ns_status_t) when expr
 * fails, passing the status up unchanged. */
#define NS_RETURN_IF_ERROR(expr)                   \
	do {                                       \
		ns_status_t ns_status_rie_ = (expr);  \
		if (ns_status_rie_)                \
			return ns_status_rie_;     \
	} while (0)

/* The same, annotated with a printf context first. */
#define NS_RETURN_IF_ERROR_F(expr, ...)                                     \
	do {                                                                \
		ns_status_t ns_status_rie_ = (expr);                        \
		if (ns_status_rie_)                                         \
			return ns_status_annotate(ns_status_rie_, __VA_ARGS__); \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_STATUS_H */
