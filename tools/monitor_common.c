/* The kernel devices' sysfs view and formatting helpers shared by neuron-top and neuron-monitor. */
#include "monitor_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


const char *const mon_jobs_names[MON_JOBS_COUNT] = {
	"jobs_submitted", "jobs_success", "jobs_failure", "jobs_timeout",
	"jobs_num_err", "jobs_oob", "jobs_fw_lost", "jobs_dropped",
};

const char *mon_sysfs_root(void)
{
	const char *r = getenv("NEURONSIM_SYSFS_ROOT");
	return r && *r ? r : MON_DEFAULT_SYSFS_ROOT;
}

static void note(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Keeps the first problem only. */
static void note(char *err, size_t len, const char *fmt, ...)
{
	if (err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* Reads dir/name as one text line into buf. 0, or -1 with errno. */
static int read_attr(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0) {
		errno = e;
		return -1;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A signed decimal attribute; records the first problem in err. */
static int64_t read_num(const char *dir, const char *name, char *err, size_t err_len)
{
	char buf[64];
	if (read_attr(dir, name, buf, sizeof(buf))) {
		note(err, err_len, "%s/%s: %s", dir, name, strerror(errno));
		return 0;
	}
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	if (errno || end == buf || *end) {
		note(err, err_len, "%s/%s: '%.20s' is not a number", dir, name, buf);
		return 0;
	}
	return v;
}

static uint64_t read_u64(const char *dir, const char *name, char *err, size_t err_len)
{
	int64_t v = read_num(dir, name, err, err_len);
	if (v < 0) {
		note(err, err_len, "%s/%s: negative value %lld", dir, name, (long long)v);
		return 0;
	}
	return (uint64_t)v;
}

/* "prefixN" with N decimal (no sign, no trailing characters). */
static bool parse_indexed(const char *name, const char *prefix, uint32_t *out)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) != 0 || name[pl] < '0' || name[pl] > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long v = strtoul(name + pl, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static int cmp_dev(const void *a, const void *b)
{
	const mon_kdev_t *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_core(const void *a, const void *b)
{
	const mon_kcore_t *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int read_cores(const char *dpath, mon_kdev_t *dev)
{
	DIR *d = opendir(dpath);
	if (!d) {
		note(dev->error, sizeof(dev->error), "%s: %s", dpath, strerror(errno));
		return 0;
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		uint32_t idx;
		if (!parse_indexed(e->d_name, "core", &idx))
			continue;
		if (dev->n_cores == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			mon_kcore_t *p = realloc(dev->cores, ncap * sizeof(*p));
			if (!p) {
				closedir(d);
				return -1;
			}
			dev->cores = p;
			cap = ncap;
		}
		char cpath[4096];
		if (snprintf(cpath, sizeof(cpath), "%s/%s", dpath, e->d_name) >= (int)sizeof(cpath))
			continue;
		mon_kcore_t *c = &dev->cores[dev->n_cores++];
		memset(c, 0, sizeof(*c));
		c->index = idx;
		c->reserved = read_num(cpath, "reserved", dev->error, sizeof(dev->error));
		c->owner_pid = read_num(cpath, "owner_pid", dev->error, sizeof(dev->error));
		c->queued = read_num(cpath, "queued", dev->error, sizeof(dev->error));
		c->running = read_num(cpath, "running", dev->error, sizeof(dev->error));
		for (int k = 0; k < MON_JOBS_COUNT; k++)
			c->jobs[k] = read_u64(cpath, mon_jobs_names[k], dev->error, sizeof(dev->error));
	}
	closedir(d);
	if (dev->n_cores > 1)
		qsort(dev->cores, dev->n_cores, sizeof(*dev->cores), cmp_core);
	return 0;
}

ns_status_t mon_sysfs_read(const char *root, mon_kdevs_t *out)
{
	memset(out, 0, sizeof(*out));
	out->read_ns = ns_monotonic_ns();
	DIR *d = opendir(root);
	if (!d) {
		if (errno == ENOENT)
			return NS_OK;
		return ns_status_make_errno(errno, "cannot read %s: %s", root, strerror(errno));
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		uint32_t idx;
		if (!parse_indexed(e->d_name, "neuronsim", &idx))
			continue;
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			mon_kdev_t *p = realloc(out->devs, ncap * sizeof(*p));
			if (!p)
				goto oom;
			out->devs = p;
			cap = ncap;
		}
		mon_kdev_t *dev = &out->devs[out->n++];
		memset(dev, 0, sizeof(*dev));
		dev->index = idx;
		char dpath[4096];
		if (snprintf(dpath, sizeof(dpath), "%s/%s", root, e->d_name) >= (int)sizeof(dpath)) {
			out->n--;
			continue;
		}
		if (read_attr(dpath, "abi_version", dev->abi_version, sizeof(dev->abi_version)))
			note(dev->error, sizeof(dev->error), "%s/abi_version: %s", dpath, strerror(errno));
		char *ev = dev->error;
		size_t el = sizeof(dev->error);
		dev->num_cores = read_u64(dpath, "num_cores", ev, el);
		dev->mem_size = read_u64(dpath, "mem_size", ev, el);
		dev->mem_in_use = read_u64(dpath, "mem_in_use", ev, el);
		dev->mem_peak = read_u64(dpath, "mem_peak", ev, el);
		dev->cores_reserved = read_u64(dpath, "cores_reserved", ev, el);
		dev->fw_attached = read_u64(dpath, "fw_attached", ev, el);
		dev->null_hw = read_u64(dpath, "null_hw", ev, el);
		for (int k = 0; k < MON_JOBS_COUNT; k++)
			dev->jobs[k] = read_u64(dpath, mon_jobs_names[k], ev, el);
		if (read_cores(dpath, dev))
			goto oom;
	}
	closedir(d);
	if (out->n > 1)
		qsort(out->devs, out->n, sizeof(*out->devs), cmp_dev);
	return NS_OK;
oom:
	closedir(d);
	mon_sysfs_free(out);
	return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory reading %s", root);
}

void mon_sysfs_free(mon_kdevs_t *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->devs[i].cores);
	free(d->devs);
	memset(d, 0, sizeof(*d));
}

const mon_kdev_t *mon_sysfs_find(const mon_kdevs_t *d, uint32_t idx)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->devs[i].index == idx)
			return &d->devs[i];
	return NULL;
}

const char *mon_bytes(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGTP";
	if (v < 1024) {
		snprintf(buf, len, "%lluB", (unsigned long long)v);
		return buf;
	}
	double x = (double)v / 1024.0;
	int u = 0;
	while (x >= 1024.0 && u < 4) {
		x /= 1024.0;
		u++;
	}
	snprintf(buf, len, x < 10 ? "%.2f%c" : x < 100 ? "%.1f%c" : "%.0f%c", x, units[u]);
	return buf;
}
