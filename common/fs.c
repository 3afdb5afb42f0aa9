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

/* Sets errno to e, writes the message into err (when err_len > 0), returns -1. */
__attribute__((format(printf, 4, 5)))
static int mkdir_fail(int e, char *err, size_t err_len, const char *fmt, ...)
{
	if (err && err_len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

int ns_mkdir_p(const char *path, mode_t mode)
{
	return ns_mkdir_p_err(path, mode, NULL, 0);
}

int ns_mkdir_p_err(const char *path, mode_t mode, char *err, size_t err_len)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0)
		return mkdir_fail(ENAMETOOLONG, err, err_len, "cannot create a directory: empty path");
	if (len >= sizeof(tmp))
		return mkdir_fail(ENAMETOOLONG, err, err_len,
				  "cannot create directory '%.64s...': the path is %zu bytes, over %d",
				  path, len, PATH_MAX - 1);
	memcpy(tmp, path, len + 1);
	/* every prefix that ends before a '/', then the whole path */
	for (char *p = tmp + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(tmp, mode) != 0 && errno != EEXIST)
			return mkdir_fail(errno, err, err_len, "cannot create directory '%s': %s", tmp,
					  strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	struct stat sb;
	if (stat(path, &sb) != 0)
		return mkdir_fail(errno, err, err_len, "cannot create directory '%s': %s", path,
				  strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return mkdir_fail(ENOTDIR, err, err_len, "'%s' is not a directory", path);
	return 0;
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

/* Sets errno to e, writes "cannot read 'PATH': ..." into err, returns -1. */
__attribute__((format(printf, 5, 6)))
static int read_fail(int e, const char *path, char *err, size_t err_len, const char *fmt, ...)
{
	if (err && err_len) {
		int n = snprintf(err, err_len, "cannot read '%s': ", path);
		if (n >= 0 && (size_t)n < err_len) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(err + n, err_len - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	errno = e;
	return -1;
}

int ns_read_file(const char *path, size_t max_size, size_t align, void **out_data,
		 size_t *out_size, char *err, size_t err_len)
{
	return ns_read_file_ex(path, max_size, align, 0, out_data, out_size, err, err_len);
}

int ns_read_file_ex(const char *path, size_t max_size, size_t align, unsigned flags,
		    void **out_data, size_t *out_size, char *err, size_t err_len)
{
	*out_data = NULL;
	*out_size = 0;
	if (flags & NS_READ_EXACT)
		flags |= NS_READ_REGULAR;
	/* O_NONBLOCK: a FIFO that must be refused is not waited on to open */
	int fd = open(path, O_RDONLY | O_CLOEXEC | (flags & NS_READ_REGULAR ? O_NONBLOCK : 0));
	if (fd < 0)
		return read_fail(errno, path, err, err_len, "%s", strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		return read_fail(e, path, err, err_len, "%s", strerror(e));
	}
	if ((flags & NS_READ_REGULAR) && !S_ISREG(sb.st_mode)) {
		close(fd);
		return read_fail(S_ISDIR(sb.st_mode) ? EISDIR : EINVAL, path, err, err_len,
				 "not a regular file%s", S_ISDIR(sb.st_mode) ? " (a directory)" : "");
	}
	if (S_ISDIR(sb.st_mode)) {
		close(fd);
		return read_fail(EISDIR, path, err, err_len, "it is a directory");
	}
	bool known = S_ISREG(sb.st_mode) && sb.st_size > 0;
	if (known && max_size && (uint64_t)sb.st_size > max_size) {
		close(fd);
		return read_fail(EFBIG, path, err, err_len,
				 "it is %llu bytes, over the limit of %zu bytes",
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
		return read_fail(ENOMEM, path, err, err_len, "out of memory (%zu bytes)", cap);
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
				return read_fail(ENOMEM, path, err, err_len,
						 "out of memory (%zu bytes read so far)", len);
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
			return read_fail(e, path, err, err_len, "%s", strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (max_size && len > max_size) {
			free(buf);
			close(fd);
			return read_fail(EFBIG, path, err, err_len,
					 "more than the limit of %zu bytes", max_size);
		}
	}
	close(fd);
	if ((flags & NS_READ_EXACT) && (uint64_t)len != (uint64_t)sb.st_size) {
		free(buf);
		return read_fail(EIO, path, err, err_len,
				 "it changed size while being read (%llu bytes when opened, %zu read)",
				 (unsigned long long)sb.st_size, len);
	}
	buf[len] = '\0';
	*out_data = buf;
	*out_size = len;
	return 0;
}
