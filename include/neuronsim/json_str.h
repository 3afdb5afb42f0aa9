/* JSON strings of text that may not be UTF-8 (names and debug strings from a NEFF or a caller), for the files the runtime writes: snapshots' error records, traces. */
#ifndef NEURONSIM_JSON_STR_H
#define NEURONSIM_JSON_STR_H

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new JSON string of s (the caller's reference); when s is not valid UTF-8 (a
 * name cut in the middle of a character, binary bytes) its first 1023 bytes with
 * every non-ASCII byte as '?'. NULL only without memory. */
json_t *ns_json_string_lossy(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* NEURONSIM_JSON_STR_H */
