/* File helpers shared by the compiler (cache, --dump-ir, HLO input), the tools and the PJRT plugin: mkdir -p, read a whole file. */
#ifndef NEURONSIM_FS_H
#define NEURONSIM_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mkdir -p: creates every missing directory of path with mode (less the umask);
 * existing ones are fine. 0, or -1 with errno set (ENAMETOOLONG for an empty path
 * or one of PATH_MAX bytes or more, ENOTDIR when path exists and is not a
 * directory, else mkdir's or stat's). */
int ns_mkdir_p(const char *path, mode_t mode);
/* ns_mkdir_p as a status (errno kept) whose message names the component that
 * failed: "cannot create directory 'A/B': Permission denied" for path A/B/C, or
 * "'PATH' is not a directory". */
ns_status_t ns_mkdir_p_status(const char *path, mode_t mode);

/* Reads the whole file at path (a regular file, or a pipe such as /dev/stdin,
 * whose size is not known up front) into a new buffer *out_data of *out_size
 * bytes, followed by a NUL that *out_size does not count, so text can be parsed
 * in place. align 0 gives malloc's alignment, else a power of two the buffer
 * starts at (64 for NEFFs); max_size 0 is no limit. Free *out_data with free().
 * A failure's status keeps the errno (ns_status_errno: EISDIR, EFBIG over
 * max_size, ENOMEM, or open's and read's) and says what failed and on which
 * path: "cannot read 'PATH': No such file or directory", "...: it is a
 * directory", "...: it is N bytes, over the limit of M bytes". */
ns_status_t ns_read_file(const char *path, size_t max_size, size_t align, void **out_data,
			 size_t *out_size);

/* ns_read_file with flags for files that must be what was written whole (a
 * cached NEFF, a snapshot): NS_READ_REGULAR refuses anything but a regular file
 * ("...: not a regular file", errno EINVAL, EISDIR for a directory; a FIFO is not
 * waited on); NS_READ_EXACT (implies REGULAR) fails with EIO when the bytes read
 * are not the size the file had when opened ("...: it changed size while being
 * read (N bytes when opened, M read)"), a file truncated or appended to under
 * the reader. */
#define NS_READ_REGULAR 0x1u
#define NS_READ_EXACT 0x2u
ns_status_t ns_read_file_ex(const char *path, size_t max_size, size_t align, unsigned flags,
			    void **out_data, size_t *out_size);

#ifdef __cplusplus
}
#endif

#endif /* NEURONSIM_FS_H */
