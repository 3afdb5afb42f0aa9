/* Error-message helpers shared by the readers of common/: quoting untrusted
 * strings so a message stays one line. (Failures themselves are statuses:
 * status.h.) */
#ifndef NEURONSIM_ERRMSG_H
#define NEURONSIM_ERRMSG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

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
