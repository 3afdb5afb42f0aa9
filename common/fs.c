/* File helpers (fs.h): mkdir -p, read a whole file. */
#include "neuronsim/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ns_mkdir_p(const char *path, mode_t mode)
{
	ns_status_t st = ns_mkdir_p_status(path, mode);
	if (!st)
		return 0;
	int e = ns_status_errno(st);
	ns_status_free(st);
	errno = e ? e : ENOMEM; /* 0: the status itself could not be allocated */
	return -1;
}

ns_status_t ns_mkdir_p_status(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0)
		return ns_status_make_errno(ENAMETOOLONG, "cannot create a directory: empty path");
	if (len >= sizeof(tmp))
		return ns_status_make_errno(ENAMETOOLONG, "cannot create directory '%.64s...': the path is %zu bytes, over %d",
					    path, len, PATH_MAX - 1);
	memcpy(tmp, path, len + 1);
	/* every prefix that ends before a '/', then the whole path */
	for (char *p = tmp + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(tmp, mode) != 0 && errno != EEXIST)
			return ns_status_make_errno(errno, "cannot create directory '%s': %s", tmp,
						    strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	struct stat sb;
	if (stat(path, &sb) != 0)
		return ns_status_make_errno(errno, "cannot create directory '%s': %s", path,
					    strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return ns_status_make_errno(ENOTDIR, "'%s' is not a directory", path);
	return NS_OK;
}

/* n bytes at malloc's alignment (align 0) or at align. */
static void *alloc_aligned(size_t align, size_t n)
{
	if (!align)
		return malloc(n);
	if (n > SIZE_MAX - align)
		return NULL;
	return aligned_alloc(align, (n + align - 1) / align * align);
}

/* A failure of errno e: "cannot read 'PATH': " and the message. */
__attribute__((format(printf, 3, 4)))
static ns_status_t read_fail(int e, const char *path, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ns_status_make_errno(e, "cannot read '%s': %s", path, msg);
}

ns_status_t ns_read_file(const char *path, size_t max_size, size_t align, void **out_data,
			 size_t *out_size)
{
	return ns_read_file_ex(path, max_size, align, 0, out_data, out_size);
}

ns_status_t ns_read_file_ex(const char *path, size_t max_size, size_t align, unsigned flags,
			    void **out_data, size_t *out_size)
{
	*out_data = NULL;
	*out_size = 0;
	if (flags & NS_READ_EXACT)
		flags |= NS_READ_REGULAR;
	/* O_NONBLOCK: a FIFO that must be refused is not waited on to open */
	int fd = open(path, O_RDONLY | O_CLOEXEC | (flags & NS_READ_REGULAR ? O_NONBLOCK : 0));
	if (fd < 0)
		return read_fail(errno, path, "%s", strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		return read_fail(e, path, "%s", strerror(e));
	}
	if ((flags & NS_READ_REGULAR) && !S_ISREG(sb.st_mode)) {
		close(fd);
		return read_fail(S_ISDIR(sb.st_mode) ? EISDIR : EINVAL, path, "not a regular file%s", S_ISDIR(sb.st_mode) ? " (a directory)" : "");
	}
	if (S_ISDIR(sb.st_mode)) {
		close(fd);
		return read_fail(EISDIR, path, "it is a directory");
	}
	bool known = S_ISREG(sb.st_mode) && sb.st_size > 0;
	if (known && max_size && (uint64_t)sb.st_size > max_size) {
		close(fd);
		return read_fail(EFBIG, path, "it is %llu bytes, over the limit of %zu bytes",
				 (unsigned long long)sb.st_size, max_size);
	}
	/* Room for the bytes and the NUL; grown as we go, since st_size is 0 for
	 * pipes and /dev/stdin. A known size still reads on to the end of file:
	 * the file may have grown. With a limit, the buffer never holds more than
	 * max_size + 1 bytes, enough to tell the file went over it. */
	size_t cap = known && (uint64_t)sb.st_size < SIZE_MAX - 1 ? (size_t)sb.st_size + 1 : 65536;
	if (max_size && cap > max_size + 2)
		cap = max_size + 2;
	char *buf = alloc_aligned(align, cap);
	if (!buf) {
		close(fd);
		return read_fail(ENOMEM, path, "out of memory (%zu bytes)", cap);
	}
	size_t len = 0;
	for (;;) {
		if (len + 1 >= cap) {
			size_t ncap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
			if (max_size && ncap > max_size + 2)
				ncap = max_size + 2;
			char *nb = NULL;
			if (ncap > cap && align) {
				/* aligned_alloc and copy: realloc only keeps malloc's alignment */
				nb = alloc_aligned(align, ncap);
				if (nb) {
					memcpy(nb, buf, len);
					free(buf);
				}
			} else if (ncap > cap) {
				nb = realloc(buf, ncap);
			}
			if (!nb) {
				free(buf);
				close(fd);
				return read_fail(ENOMEM, path, "out of memory (%zu bytes read so far)", len);
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return read_fail(e, path, "%s", strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (max_size && len > max_size) {
			free(buf);
			close(fd);
			return read_fail(EFBIG, path, "more than the limit of %zu bytes", max_size);
		}
	}
	close(fd);
	if ((flags & NS_READ_EXACT) && (uint64_t)len != (uint64_t)sb.st_size) {
		free(buf);
		return read_fail(EIO, path, "it changed size while being read (%llu bytes when opened, %zu read)",
				 (unsigned long long)sb.st_size, len);
	}
	buf[len] = '\0';
	*out_data = buf;
	*out_size = len;
	return NS_OK;
}
