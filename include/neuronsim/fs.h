/* Directory helpers shared by the compiler (cache, --dump-ir), the tools and the PJRT plugin. */
#ifndef NEURONSIM_FS_H
#define NEURONSIM_FS_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* mkdir -p: creates every missing directory of path with mode (less the umask);
 * existing ones are fine. 0, or -1 with errno set (ENAMETOOLONG for an empty path
 * or one of PATH_MAX bytes or more). */
int ns_mkdir_p(const char *path, mode_t mode);

#ifdef __cplusplus
}
#endif

#endif /* NEURONSIM_FS_H */
