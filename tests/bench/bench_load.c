/* neuronsim-bench-load: nrt_load time of every corpus NEFF against reading the same NEFF file, in the same run (load linear in NEFF size, not in scratch size). */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_corpus.h"
#include "ncc/ncc.h"
#include "neuronsim/clock.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/bench/meson.build)"
#endif

/* issue #15 goal 2: the MobileNetV2 NEFF loads in under half a second. */
#define TARGET_MOBILENET_MS 500.0
#define MOBILENET "xla-mobilenet_v2.hlo"
#define ROUNDS 7

static double now_ms(void)
{
	return (double)ns_monotonic_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The baseline: open, read and close the NEFF file (from the page cache after
 * the first round), what any loader has to do at least. */
static double time_read(const char *path, size_t size, void *buf)
{
	double t0 = now_ms();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, (char *)buf + got, size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return got == size ? now_ms() - t0 : -1;
}

typedef struct row {
	double load_ms, read_ms;
	uint64_t scratch;
} row_t;

/* Median over ROUNDS of nrt_load (each followed by nrt_unload, not timed) and
 * of the file read, interleaved so a neighbour's burst hits both. */
static int bench_neff(const void *neff, size_t size, const char *path, row_t *r)
{
	double load[ROUNDS], rd[ROUNDS];
	void *buf = malloc(size);
	if (!buf)
		return -1;
	int rc = 0;
	for (int k = 0; k < ROUNDS && rc == 0; k++) {
		rd[k] = time_read(path, size, buf);
		nrt_model_t *model = NULL;
		double t0 = now_ms();
		NRT_STATUS st = nrt_load(neff, size, -1, -1, &model);
		load[k] = now_ms() - t0;
		if (st != NRT_SUCCESS || rd[k] < 0) {
			fprintf(stderr, "neuronsim-bench-load: %s: %s\n", path,
				st ? "nrt_load failed" : "cannot read the NEFF back");
			rc = -1;
		}
		nrt_neuronsim_mem_usage_t u;
		if (nrt_neuronsim_get_mem_usage(&u) == NRT_SUCCESS)
			r->scratch = u.by_category[NRT_NEURONSIM_MEM_SCRATCH];
		if (model)
			nrt_unload(model);
	}
	free(buf);
	if (rc)
		return rc;
	qsort(load, ROUNDS, sizeof(double), cmp_double);
	qsort(rd, ROUNDS, sizeof(double), cmp_double);
	r->load_ms = load[ROUNDS / 2];
	r->read_ms = rd[ROUNDS / 2];
	return 0;
}

int main(int argc, char **argv)
{
	char **names = NULL;
	int n = 0;
	if (argc > 1) {
		names = argv + 1;
		n = argc - 1;
	} else if (bench_list_corpus(NCC_HLO_CORPUS, &names, &n) != 0 || n == 0) {
		fprintf(stderr, "neuronsim-bench-load: no .hlo files in %s\n", NCC_HLO_CORPUS);
		return 1;
	}
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-load: nrt_init failed\n");
		return 1;
	}
	char tmpl[] = "/tmp/neuronsim-bench-load-XXXXXX";
	int tfd = mkstemp(tmpl);
	if (tfd < 0) {
		perror("neuronsim-bench-load: mkstemp");
		return 1;
	}
	close(tfd);
	printf("nrt_load vs reading the NEFF file, median of %d, same run (issue #15 goal 2)\n", ROUNDS);
	printf("%-44s %10s %10s %10s %10s %8s %10s\n", "module", "NEFF KiB", "scratch MiB", "load ms",
	       "read ms", "load/read", "load us/MiB");
	int failed = 0;
	double mobilenet_ms = -1;
	double per_mib_min = 1e300, per_mib_max = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		if (strchr(names[i], '/'))
			snprintf(path, sizeof(path), "%s", names[i]);
		else
			snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, names[i]);
		ncc_driver_options_t o;
		ncc_driver_options_init(&o);
		o.no_cache = true;
		o.use_env = false;
		ncc_compile_result_t res;
		memset(&res, 0, sizeof(res));
		ncc_error_t err;
		memset(&err, 0, sizeof(err));
		if (ncc_compile_file(path, &o, &res, &err) != NCC_OK) {
			printf("%-44s (not compiled: %s)\n", names[i], err.msg);
			continue;
		}
		FILE *f = fopen(tmpl, "wb");
		bool wrote = f && fwrite(res.neff, 1, res.neff_size, f) == res.neff_size;
		if (f)
			wrote &= fclose(f) == 0;
		row_t r = { 0 };
		if (!wrote || bench_neff(res.neff, res.neff_size, tmpl, &r) != 0) {
			failed++;
			ncc_compile_result_release(&res);
			continue;
		}
		double mib = (double)res.neff_size / (1 << 20);
		double per_mib = r.load_ms * 1000.0 / mib;
		const char *base = strrchr(names[i], '/') ? strrchr(names[i], '/') + 1 : names[i];
		printf("%-44s %10.1f %11.1f %10.3f %10.3f %8.1f %10.0f\n", base, res.neff_size / 1024.0,
		       r.scratch / 1048576.0, r.load_ms, r.read_ms, r.load_ms / r.read_ms, per_mib);
		/* Below 256 KiB fixed costs (core placement, program objects) dominate. */
		if (res.neff_size >= 256u << 10) {
			per_mib_min = per_mib < per_mib_min ? per_mib : per_mib_min;
			per_mib_max = per_mib > per_mib_max ? per_mib : per_mib_max;
		}
		if (strcmp(base, MOBILENET) == 0)
			mobilenet_ms = r.load_ms;
		ncc_compile_result_release(&res);
	}
	unlink(tmpl);
	if (per_mib_max > 0)
		printf("load per MiB of NEFF (NEFFs >= 256 KiB): %.0f-%.0f us/MiB, max/min %.1f "
		       "(linear in NEFF size: scratch size does not enter)\n", per_mib_min, per_mib_max,
		       per_mib_max / per_mib_min);
	if (mobilenet_ms >= 0)
		printf("%s: nrt_load %.1f ms, target < %.0f ms: %s\n", MOBILENET, mobilenet_ms,
		       TARGET_MOBILENET_MS, mobilenet_ms < TARGET_MOBILENET_MS ? "met" : "NOT MET");
	nrt_close();
	if (names != argv + 1) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	return failed ? 1 : 0;
}
