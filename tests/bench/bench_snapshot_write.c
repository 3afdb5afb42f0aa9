/* neuronsim-bench-snapshot-write: HLO snapshot write throughput (snapshot_write:
 * checksums, temporary file, fsync, rename, directory fsync) against a plain
 * sequential write()+fsync of the same tensor bytes to the same directory, in the
 * same run. `make bench` prints the ratio; the target is >= 0.8. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "neuronsim/snapshot.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The baseline: one file, each tensor written in one call (as the snapshot
 * writer does), then fsync. */
static int plain_write(const char *path, const snapshot_tensor_t *t, uint32_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = t[i].data;
		uint64_t left = t[i].size;
		while (left) {
			ssize_t w = write(fd, p, left > (1u << 30) ? (1u << 30) : (size_t)left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				close(fd);
				return -1;
			}
			p += w;
			left -= (uint64_t)w;
		}
	}
	int rc = fsync(fd);
	return close(fd) || rc ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	long mib = 256, rounds = 3, tensors = 16;
	int c;
	while ((c = getopt(argc, argv, "d:m:r:t:h")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'm': mib = strtol(optarg, NULL, 10); break;
		case 'r': rounds = strtol(optarg, NULL, 10); break;
		case 't': tensors = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: neuronsim-bench-snapshot-write [-d DIR] [-m MiB] [-r ROUNDS] "
				"[-t TENSORS]\n(default: $TMPDIR or /var/tmp, 256 MiB in 16 tensors, 3 rounds)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (mib < 1 || rounds < 1 || rounds > 100 || tensors < 1 || tensors > 4096 ||
	    mib * 1024 * 1024 / tensors < 4) {
		fprintf(stderr, "neuronsim-bench-snapshot-write: bad -m/-r/-t\n");
		return 2;
	}
	uint64_t total = (uint64_t)mib << 20, per = total / (uint64_t)tensors / 4 * 4;
	total = per * (uint64_t)tensors;
	uint8_t *data = malloc(total);
	snapshot_tensor_t *t = calloc((size_t)tensors, sizeof(*t));
	if (!data || !t) {
		fprintf(stderr, "neuronsim-bench-snapshot-write: cannot allocate %ld MiB\n", mib);
		return 1;
	}
	/* not zeros: no file system gets to skip them */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (uint64_t i = 0; i < total / 8; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(data + 8 * i, &x, 8);
	}
	for (long i = 0; i < tensors; i++) {
		snprintf(t[i].name, sizeof(t[i].name), "input%ld", i);
		t[i].role = SNAPSHOT_ROLE_INPUT;
		t[i].dtype = ISA_DT_F32;
		t[i].rank = 1;
		t[i].shape[0] = per / 4;
		t[i].size = per;
		t[i].data = data + (uint64_t)i * per;
		t[i].alias_input = -1;
	}
	snapshot_meta_t meta = { .module_name = "bench", .kind = "inputs", .runtime_version = "bench" };
	char snap_path[4096], plain_path[4096], err[512];
	snprintf(snap_path, sizeof(snap_path), "%s/neuronsim-bench-%d.snap", dir, (int)getpid());
	snprintf(plain_path, sizeof(plain_path), "%s/neuronsim-bench-%d.bin", dir, (int)getpid());

	double *ts = calloc((size_t)rounds, sizeof(double)), *tp = calloc((size_t)rounds, sizeof(double));
	if (!ts || !tp)
		return 1;
	/* interleaved, so both see the same state of the disk and page cache */
	for (long r = 0; r < rounds; r++) {
		double t0 = now_s();
		if (plain_write(plain_path, t, (uint32_t)tensors) != 0) {
			fprintf(stderr, "neuronsim-bench-snapshot-write: writing %s: %s\n", plain_path,
				strerror(errno));
			unlink(plain_path);
			return 1;
		}
		tp[r] = now_s() - t0;
		unlink(plain_path);
		t0 = now_s();
		if (ns_status_consume_message(snapshot_write(snap_path, &meta, NULL, 0, t, (uint32_t)tensors),
					      err, sizeof(err)) != NS_STATUS_OK) {
			fprintf(stderr, "neuronsim-bench-snapshot-write: %s\n", err);
			return 1;
		}
		ts[r] = now_s() - t0;
		unlink(snap_path);
	}
	qsort(ts, (size_t)rounds, sizeof(double), cmp_double);
	qsort(tp, (size_t)rounds, sizeof(double), cmp_double);
	double med_s = ts[rounds / 2], med_p = tp[rounds / 2];
	double mb = (double)total / 1e6;
	double ratio = (mb / med_s) / (mb / med_p);
	printf("snapshot write throughput vs a plain sequential write of the same bytes (target >= 0.8):\n");
	printf("  %s, %.0f MB in %ld tensors, median of %ld rounds\n", dir, mb, tensors, rounds);
	printf("  snapshot_write  %8.1f MB/s  (%.3f s)\n", mb / med_s, med_s);
	printf("  write+fsync     %8.1f MB/s  (%.3f s)\n", mb / med_p, med_p);
	printf("  ratio           %8.2f  %s\n", ratio, ratio >= 0.8 ? "OK" : "BELOW TARGET");
	free(ts);
	free(tp);
	free(t);
	free(data);
	return 0;
}
