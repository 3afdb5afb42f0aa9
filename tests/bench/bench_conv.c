/* neuronsim-bench-conv: the device side of `make bench`'s convolution benchmark
 * (tests/bench/bench_conv.py). Compiles one HLO module, loads it on the embedded
 * device, runs it once on the given inputs and writes its output, then times
 * executions on request so the driver can interleave them with the CPU library's. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/clock.h"
#include "neuronsim/fs.h"
#include "bench_corpus.h"
#include "ncc/ncc.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"

#define MAX_IO 256
#define MAX_REPS 100000

static const char usage[] =
	"usage: neuronsim-bench-conv MODULE.hlo [--out OUT.f32] [IN.f32 ...]\n"
	"Compiles MODULE.hlo, loads it on the embedded device, writes each IN file (raw\n"
	"bytes, in parameter order; parameters without a file are zeros) to its input,\n"
	"executes once and writes the first output's raw bytes to OUT. Prints READY,\n"
	"then for each line N read from stdin executes N times and prints the fastest\n"
	"and the median execution time in microseconds. Exits at end of input.\n";

typedef struct bench {
	nrt_model_t *model;
	nrt_tensor_set_t *in, *out;
	nrt_tensor_t *t[2 * MAX_IO];
	uint32_t n_in, n_out;
	size_t out_size;
} bench_t;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void bench_free(bench_t *b)
{
	for (uint32_t i = 0; i < 2 * MAX_IO; i++)
		if (b->t[i])
			nrt_tensor_free(&b->t[i]);
	if (b->in)
		nrt_destroy_tensor_set(&b->in);
	if (b->out)
		nrt_destroy_tensor_set(&b->out);
	if (b->model)
		nrt_unload(b->model);
}

/* Sets up the model's tensors from the NEFF's table; input i gets the bytes of
 * files[i] (its size must match) or zeros. */
static int bench_setup(bench_t *b, const ncc_compile_result_t *res, char **files, int nfiles)
{
	NRT_STATUS st = nrt_load(res->neff, res->neff_size, -1, -1, &b->model);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-conv: nrt_load failed with status %d\n", (int)st);
		return -1;
	}
	nrt_tensor_info_array_t *info = NULL;
	if ((st = nrt_get_model_tensor_info(b->model, &info)) != NRT_SUCCESS ||
	    nrt_allocate_tensor_set(&b->in) != NRT_SUCCESS ||
	    nrt_allocate_tensor_set(&b->out) != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-conv: cannot set up tensors (status %d)\n", (int)st);
		return -1;
	}
	int rc = 0;
	for (uint64_t i = 0; i < info->tensor_count && rc == 0; i++) {
		const nrt_tensor_info_t *ti = &info->tensor_array[i];
		bool is_in = ti->usage == NRT_TENSOR_USAGE_INPUT;
		uint32_t slot = is_in ? b->n_in : MAX_IO + b->n_out;
		if ((is_in ? b->n_in : b->n_out) >= MAX_IO) {
			fprintf(stderr, "neuronsim-bench-conv: more than %d %ss\n", MAX_IO,
				is_in ? "input" : "output");
			rc = -1;
			break;
		}
		size_t size = ti->size ? ti->size : 1;
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, ti->name, &b->t[slot]);
		if (st == NRT_SUCCESS)
			st = nrt_add_tensor_to_tensor_set(is_in ? b->in : b->out, ti->name, b->t[slot]);
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "neuronsim-bench-conv: tensor '%s': status %d\n", ti->name, (int)st);
			rc = -1;
			break;
		}
		if (!is_in) {
			if (b->n_out++ == 0)
				b->out_size = ti->size;
			continue;
		}
		if ((int)b->n_in < nfiles) {
			void *data = NULL;
			size_t got = 0;
			ns_status_t rst = ns_read_file(files[b->n_in], ti->size + 1, 0, &data, &got);
			if (rst) {
				fprintf(stderr, "neuronsim-bench-conv: %s\n", ns_status_message(rst));
				ns_status_free(rst);
				rc = -1;
			} else if (got != ti->size) {
				fprintf(stderr, "neuronsim-bench-conv: %s has %zu bytes, input '%s' takes %zu\n",
					files[b->n_in], got, ti->name, (size_t)ti->size);
				rc = -1;
			} else if ((st = nrt_tensor_write(b->t[slot], data, 0, got)) != NRT_SUCCESS) {
				fprintf(stderr, "neuronsim-bench-conv: writing '%s': status %d\n", ti->name,
					(int)st);
				rc = -1;
			}
			free(data);
		}
		b->n_in++;
	}
	nrt_free_model_tensor_info(info);
	return rc;
}

static int bench_exec(bench_t *b)
{
	NRT_STATUS st = nrt_execute(b->model, b->in, b->out);
	if (st == NRT_SUCCESS)
		return 0;
	nrt_neuronsim_exec_error_t rec;
	if (nrt_neuronsim_get_last_error(b->model, &rec) == NRT_SUCCESS && rec.message[0])
		fprintf(stderr, "neuronsim-bench-conv: nrt_execute failed with status %d: %s\n", (int)st,
			rec.message);
	else
		fprintf(stderr, "neuronsim-bench-conv: nrt_execute failed with status %d\n", (int)st);
	return -1;
}

static int write_output(bench_t *b, const char *path)
{
	void *data = malloc(b->out_size ? b->out_size : 1);
	if (!data || !b->n_out ||
	    nrt_tensor_read(b->t[MAX_IO], data, 0, b->out_size) != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-conv: cannot read the output back\n");
		free(data);
		return -1;
	}
	const char *step = NULL;
	int rc = atomic_file_write_whole(path, data, b->out_size, 0644, &step);
	if (rc != 0)
		fprintf(stderr, "neuronsim-bench-conv: cannot write %s (%s failed)\n", path,
			step ? step : "write");
	free(data);
	return rc;
}

int main(int argc, char **argv)
{
	const char *module = NULL, *out_path = NULL;
	char *files[MAX_IO];
	int nfiles = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			out_path = argv[++i];
		} else if (!module) {
			module = argv[i];
		} else if (nfiles < MAX_IO) {
			files[nfiles++] = argv[i];
		} else {
			fprintf(stderr, "neuronsim-bench-conv: more than %d input files\n", MAX_IO);
			return 2;
		}
	}
	if (!module) {
		fputs(usage, stderr);
		return 2;
	}
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	ncc_compile_result_t res;
	if (bench_compile_file("neuronsim-bench-conv", module, &o, &res) != 0)
		return 1;
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-conv: nrt_init failed\n");
		ncc_compile_result_release(&res);
		return 1;
	}
	bench_t b;
	memset(&b, 0, sizeof(b));
	double *samples = calloc(MAX_REPS, sizeof(double));
	int rc = 1;
	if (!samples || bench_setup(&b, &res, files, nfiles) != 0 || bench_exec(&b) != 0 ||
	    (out_path && write_output(&b, out_path) != 0))
		goto out;
	printf("READY\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		long n = strtol(line, NULL, 10);
		if (n < 1 || n > MAX_REPS) {
			fprintf(stderr, "neuronsim-bench-conv: expected a repetition count 1..%d, got '%s'\n",
				MAX_REPS, line);
			goto out;
		}
		for (long r = 0; r < n; r++) {
			uint64_t t0 = ns_monotonic_ns();
			if (bench_exec(&b) != 0)
				goto out;
			samples[r] = (double)(ns_monotonic_ns() - t0) / 1e3;
		}
		qsort(samples, (size_t)n, sizeof(double), cmp_double);
		printf("%.3f %.3f\n", samples[0], samples[n / 2]);
		fflush(stdout);
	}
	rc = 0;
out:
	bench_free(&b);
	free(samples);
	nrt_close();
	ncc_compile_result_release(&res);
	return rc;
}
