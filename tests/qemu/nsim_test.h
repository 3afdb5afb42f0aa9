/* Shared helpers of the guest test programs: checks, ioctl wrappers, sysfs. */
#ifndef NSIM_TEST_H
#define NSIM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/neuronsim.h>

#define NSIM_DEV "/dev/neuronsim0"
#define NSIM_FW_DEV "/dev/neuronsim-fw0"
#define NSIM_SYSFS "/sys/class/neuronsim/neuronsim0"

extern int nsim_failures;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "FAIL %s:%d: %s (errno %d %s)\n",    \
				__FILE__, __LINE__, #cond, errno,            \
				strerror(errno));                            \
			nsim_failures++;                                     \
		}                                                            \
	} while (0)

/* ioctl that must fail with errno e. */
#define CHECK_ERR(e, call)                                                   \
	do {                                                                 \
		errno = 0;                                                   \
		int r_ = (call);                                             \
		if (r_ != -1 || errno != (e)) {                              \
			fprintf(stderr,                                      \
				"FAIL %s:%d: %s = %d errno %d (%s), want %s\n",\
				__FILE__, __LINE__, #call, r_, errno,        \
				strerror(errno), #e);                        \
			nsim_failures++;                                     \
		}                                                            \
	} while (0)

#define CHECK_OK(call)                                                       \
	do {                                                                 \
		errno = 0;                                                   \
		int r_ = (call);                                             \
		if (r_ != 0) {                                               \
			fprintf(stderr, "FAIL %s:%d: %s = %d errno %d (%s)\n",\
				__FILE__, __LINE__, #call, r_, errno,        \
				strerror(errno));                            \
			nsim_failures++;                                     \
		}                                                            \
	} while (0)

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int nsim_open(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "FAIL open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

static inline long long sysfs_read(const char *rel)
{
	char path[256], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), NSIM_SYSFS "/%s", rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1000;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1001;
	buf[n] = 0;
	return strtoll(buf, NULL, 0);
}

static inline uint32_t mem_alloc(int fd, uint64_t size, uint64_t *off,
				 uint64_t *addr)
{
	struct neuronsim_mem_alloc a = { .size = size };

	if (ioctl(fd, NEURONSIM_IOCTL_MEM_ALLOC, &a)) {
		fprintf(stderr, "FAIL mem_alloc %llu: %s\n",
			(unsigned long long)size, strerror(errno));
		nsim_failures++;
		return 0;
	}
	if (off)
		*off = a.mmap_offset;
	if (addr)
		*addr = a.dev_addr;
	return a.handle;
}

static inline int core_reserve(int fd, uint32_t core)
{
	struct neuronsim_core_reserve r = { .core = core };

	return ioctl(fd, NEURONSIM_IOCTL_CORE_RESERVE, &r);
}

static inline int job_wait(int fd, uint64_t id, int64_t timeout_ns,
			   uint32_t *status, struct neuronsim_error_record *rec)
{
	struct neuronsim_job_wait w = {
		.job_id = id,
		.timeout_ns = timeout_ns,
		.error_ptr = (uintptr_t)rec,
	};
	int r = ioctl(fd, NEURONSIM_IOCTL_JOB_WAIT, &w);

	if (!r && status)
		*status = w.status;
	return r;
}

#endif
