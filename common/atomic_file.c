/* Whole-or-nothing file writes through an O_EXCL temporary in the target's directory (atomic_file.h). */
#include "neuronsim/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char k_suffix[] = ".tmp-XXXXXX";

static void set_step(const char **out_step, const char *step)
{
	if (out_step)
		*out_step = step;
}

/* The process umask without changing it: umask(2) can only be read by setting
 * it, which races with other threads creating files; /proc says it since 4.7. */
static mode_t current_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (f) {
		char line[128];
		unsigned m;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Umask: %o", &m) == 1) {
				fclose(f);
				return (mode_t)m;
			}
		fclose(f);
	}
	mode_t m = umask(022);
	umask(m);
	return m;
}

/* fsync of the directory holding path, so that the rename itself is durable.
 * File systems that cannot sync a directory are taken as done. */
static int sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = !slash ? strdup(".") : slash == path ? strdup("/")
							    : strndup(path, (size_t)(slash - path));
	if (!dir) {
		errno = ENOMEM;
		return -1;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	if (rc && (e == EINVAL || e == EROFS || e == ENOTSUP))
		rc = 0;
	errno = e;
	return rc;
}

static void release(atomic_file_t *f)
{
	free(f->tmp);
	free(f->path);
	f->tmp = f->path = NULL;
	f->stream = NULL;
	f->fd = -1;
	f->direct = 0;
}

static bool is_special(const struct stat *sb)
{
	return S_ISCHR(sb->st_mode) || S_ISFIFO(sb->st_mode);
}

/* A character device or FIFO at path, directly or behind a symlink that root or
 * we own, opened for writing in place; -1 when path is not one (errno then
 * untouched unless opening it failed, when it is that error and *failed is set). */
static int open_special(const char *path, bool *failed)
{
	struct stat lb, sb;
	*failed = false;
	int e = errno;
	if (lstat(path, &lb) != 0) {
		errno = e;
		return -1;
	}
	bool link = S_ISLNK(lb.st_mode);
	if (link && lb.st_uid != 0 && lb.st_uid != geteuid())
		return -1; /* someone else's link: replaced or refused, never followed */
	if (link ? stat(path, &sb) != 0 : (sb = lb, false)) {
		errno = e;
		return -1;
	}
	if (!is_special(&sb))
		return -1;
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (link ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		*failed = true;
		return -1;
	}
	/* what was opened decides: a link swapped meanwhile gets nothing written */
	if (fstat(fd, &sb) != 0 || !is_special(&sb)) {
		close(fd);
		*failed = true;
		errno = ELOOP;
		return -1;
	}
	return fd;
}

int atomic_file_open(atomic_file_t *f, const char *path, unsigned mode, const char **out_step)
{
	f->fd = -1;
	f->stream = NULL;
	f->tmp = f->path = NULL;
	f->direct = 0;
	set_step(out_step, "create");
	if (!path || !*path) {
		errno = EINVAL;
		return -1;
	}
	bool failed;
	int dfd = open_special(path, &failed);
	if (failed)
		return -1;
	if (dfd >= 0) {
		f->path = strdup(path);
		if (!f->path) {
			close(dfd);
			errno = ENOMEM;
			return -1;
		}
		f->fd = dfd;
		f->direct = 1;
		return 0;
	}
	size_t n = strlen(path);
	f->path = strdup(path);
	f->tmp = malloc(n + sizeof(k_suffix));
	if (!f->path || !f->tmp) {
		release(f);
		errno = ENOMEM;
		return -1;
	}
	memcpy(f->tmp, path, n);
	memcpy(f->tmp + n, k_suffix, sizeof(k_suffix));
	/* O_CREAT | O_EXCL under a random name, mode 0600 until chmod below */
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0) {
		int e = errno;
		release(f);
		errno = e;
		return -1;
	}
	mode_t m = mode & ATOMIC_FILE_MODE_UMASK ? 0666 & ~current_umask() : (mode_t)(mode & 07777);
	if (fchmod(f->fd, m) != 0) {
		set_step(out_step, "chmod");
		atomic_file_abort(f);
		return -1;
	}
	return 0;
}

FILE *atomic_file_stream(atomic_file_t *f)
{
	if (!f->stream && f->fd >= 0)
		f->stream = fdopen(f->fd, "wb");
	return f->stream;
}

static int write_fd(int fd, const void *data, size_t size)
{
	const char *p = data;
	while (size) {
		ssize_t w = write(fd, p, size);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		size -= (size_t)w;
	}
	return 0;
}

int atomic_file_write(atomic_file_t *f, const void *data, size_t size)
{
	if (f->stream) {
		if (size && fwrite(data, 1, size, f->stream) != size) {
			if (!errno)
				errno = EIO;
			return -1;
		}
		return 0;
	}
	return write_fd(f->fd, data, size);
}

int atomic_file_commit(atomic_file_t *f, const char **out_step)
{
	if (f->direct) {
		set_step(out_step, "write");
		int rc = f->stream ? fclose(f->stream) : close(f->fd);
		int e = errno;
		release(f);
		errno = e;
		return rc ? -1 : 0;
	}
	if (f->stream) {
		set_step(out_step, "write");
		if (fflush(f->stream) != 0 || ferror(f->stream)) {
			if (!errno)
				errno = EIO;
			goto fail;
		}
	}
	set_step(out_step, "sync");
	if (fsync(f->fd) != 0)
		goto fail;
	set_step(out_step, "close");
	int rc = f->stream ? fclose(f->stream) : close(f->fd);
	f->stream = NULL;
	f->fd = -1;
	if (rc != 0)
		goto fail;
	set_step(out_step, "rename");
	if (rename(f->tmp, f->path) != 0)
		goto fail;
	set_step(out_step, "sync the directory of");
	if (sync_dir_of(f->path) != 0) {
		/* the rename may not survive a crash: all or nothing, so it goes */
		int e = errno;
		unlink(f->path);
		release(f);
		errno = e;
		return -1;
	}
	release(f);
	return 0;
fail:
	atomic_file_abort(f);
	return -1;
}

void atomic_file_abort(atomic_file_t *f)
{
	if (!f || !f->path)
		return;
	int e = errno;
	if (f->stream)
		fclose(f->stream);
	else if (f->fd >= 0)
		close(f->fd);
	if (f->tmp)
		unlink(f->tmp);
	release(f);
	errno = e;
}

int atomic_file_write_whole(const char *path, const void *data, size_t size, unsigned mode,
			    const char **out_step)
{
	atomic_file_t f;
	if (atomic_file_open(&f, path, mode, out_step) != 0)
		return -1;
	set_step(out_step, "write");
	if (atomic_file_write(&f, data, size) != 0) {
		atomic_file_abort(&f);
		return -1;
	}
	return atomic_file_commit(&f, out_step);
}

int atomic_file_append(const char *path, const void *data, size_t size, unsigned mode,
		       const char **out_step)
{
	set_step(out_step, "create");
	mode_t m = mode & ATOMIC_FILE_MODE_UMASK ? 0666 : (mode_t)(mode & 07777);
	bool failed;
	int fd = open_special(path, &failed);
	if (failed)
		return -1;
	if (fd < 0)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, m);
	if (fd < 0)
		return -1;
	struct stat sb;
	set_step(out_step, "write");
	if (fstat(fd, &sb) != 0)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		/* a FIFO or a device: no length to restore, plain write */
		if (write_fd(fd, data, size) != 0)
			goto fail;
		return close(fd) == 0 ? 0 : -1;
	}
	/* Reserve the blocks past the end first (the size stays): on a full disk
	 * this fails before anything is written. Not every file system can. */
	if (size && fallocate(fd, FALLOC_FL_KEEP_SIZE, sb.st_size, (off_t)size) != 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
		goto fail;
	if (write_fd(fd, data, size) != 0) {
		/* Cut the torn piece off, unless someone appended after it (then the
		 * end is theirs and the file keeps what it has). */
		int e = errno;
		struct stat now;
		if (fstat(fd, &now) == 0 && now.st_size > sb.st_size &&
		    (uint64_t)now.st_size <= (uint64_t)sb.st_size + size)
			(void)!ftruncate(fd, sb.st_size);
		errno = e;
		goto fail;
	}
	set_step(out_step, "close");
	if (close(fd) != 0)
		return -1;
	return 0;
fail:
	{
		int e = errno;
		close(fd);
		errno = e;
	}
	return -1;
}
