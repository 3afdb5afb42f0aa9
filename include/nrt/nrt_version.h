/* Runtime version query (same layout as the Neuron Runtime's nrt_version.h). */
#ifndef NRT_NRT_VERSION_H
#define NRT_NRT_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_VERSION_DETAIL_LEN 128
#define GIT_HASH_LEN 64

typedef struct nrt_version {
	uint64_t rt_major;
	uint64_t rt_minor;
	uint64_t rt_patch;
	uint64_t rt_maintenance;
	char rt_detail[RT_VERSION_DETAIL_LEN]; /* NUL-terminated description */
	char git_hash[GIT_HASH_LEN];           /* NUL-terminated, may be empty */
} nrt_version_t;

/* Fills the first size bytes of *ver (size is normally sizeof(nrt_version_t),
 * smaller sizes from older callers are honoured). Usable before nrt_init(). */
NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_VERSION_H */
