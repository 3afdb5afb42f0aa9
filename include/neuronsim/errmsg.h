/* Error-message helpers shared by the readers of common/: formatting into a
 * caller's buffer, and quoting untrusted strings so a message stays one line. */
#ifndef NEURONSIM_ERRMSG_H
#define NEURONSIM_ERRMSG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Formats into err[0..err_len) when err is not NULL and err_len > 0 and
 * returns status, so a reader's failure paths are one expression:
 * `return (npy_status_t)errmsg_fail(NPY_ERR_FORMAT, err, err_len, ...)`. */
int errmsg_fail(int status, char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define ERRMSG_ESCAPE_MAX 64

/* A printable copy of s: bytes outside 0x20..0x7e and backslashes as \xNN, at
 * most max (<= ERRMSG_ESCAPE_MAX) input bytes, "..." when s is longer. */
typedef struct errmsg_escaped {
	char s[ERRMSG_ESCAPE_MAX * 4 + 4];
} errmsg_escaped_t;
errmsg_escaped_t errmsg_escape(const char *s, size_t max);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_ERRMSG_H */
