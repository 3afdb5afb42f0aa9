/* neuronsim-bench-profile: the profiler's overhead on corpus models: nrt_execute time with tracing off, with the system trace and with the device trace, in the same run. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../unit/compiler/ncc_e2e.h"
#include "ncc/ncc.h"
#include "nrt/nrt_profile.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/bench/meson.build)"
#endif

/* Targets from the profiler issue. */
#define TARGET_SYSTEM 0.05
#define TARGET_DEVICE 0.15
#define ROUNDS 7
#define WARMUP 3
#define ROUND_SECONDS 0.25   /* timed executions per mode and round */
#define MAX_RUNS 5000

typedef enum mode { MODE_OFF, MODE_SYSTEM, MODE_DEVICE, MODE_COUNT } bench_mode_t;

static const char *const mode_names[MODE_COUNT] = { "off", "system trace", "device trace" };

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

/* The profiler's switches for one mode (read at nrt_init). */
static void set_mode(bench_mode_t m, const char *out_dir)
{
	if (m == MODE_OFF) {
		unsetenv("NEURON_RT_INSPECT_ENABLE");
		return;
	}
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out_dir, 1);
	setenv("NEURON_RT_INSPECT_SYSTEM_PROFILE", "1", 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", m == MODE_DEVICE ? "session" : "0", 1);
}

/* A model loaded with random inputs, ready to execute. */
typedef struct loaded {
	nrt_model_t *model;
	nrt_tensor_t **tensors;
	uint32_t n;
	nrt_tensor_set_t *in, *out;
} loaded_t;

static void unload(loaded_t *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->tensors[i])
			nrt_tensor_free(&l->tensors[i]);
	free(l->tensors);
	if (l->in)
		nrt_destroy_tensor_set(&l->in);
	if (l->out)
		nrt_destroy_tensor_set(&l->out);
	if (l->model)
		nrt_unload(l->model);
	memset(l, 0, sizeof(*l));
}

static int load(const ncc_compile_result_t *res, loaded_t *l)
{
	memset(l, 0, sizeof(*l));
	neff_view_t v;
	char err[256];
	if (ns_status_consume_message(neff_parse(res->neff, res->neff_size, &v),
				      err, sizeof(err)) != NS_STATUS_OK) {
		fprintf(stderr, "neuronsim-bench-profile: bad NEFF: %s\n", err);
		return -1;
	}
	l->n = v.meta->n_tensors;
	l->tensors = calloc(l->n ? l->n : 1, sizeof(*l->tensors));
	if (!l->tensors || nrt_load(res->neff, res->neff_size, -1, -1, &l->model) != NRT_SUCCESS ||
	    nrt_allocate_tensor_set(&l->in) != NRT_SUCCESS ||
	    nrt_allocate_tensor_set(&l->out) != NRT_SUCCESS)
		goto fail;
	uint64_t seed = 42;
	for (uint32_t i = 0; i < l->n; i++) {
		const neff_tensor_t *t = &v.tensors[i];
		size_t sz = t->size ? t->size : 1;
		if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sz, t->name, &l->tensors[i]) !=
		    NRT_SUCCESS)
			goto fail;
		if (t->usage == NEFF_USAGE_INPUT && t->size) {
			/* Small integers: valid indices for gathers, finite floats. */
			uint8_t *buf = malloc(t->size);
			if (!buf)
				goto fail;
			size_t es = isa_dtype_size(t->dtype);
			memset(buf, 0, t->size);
			for (size_t k = 0; es && k < t->size / es; k++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				if (t->dtype == ISA_DT_F32) {
					float f = (float)((seed >> 40) % 2000) / 1000.0f - 1.0f;
					memcpy(buf + k * es, &f, 4);
				} else if (!isa_dtype_is_float(t->dtype)) {
					buf[k * es] = (uint8_t)((seed >> 40) % 2);
				}
			}
			NRT_STATUS st = nrt_tensor_write(l->tensors[i], buf, 0, t->size);
			free(buf);
			if (st != NRT_SUCCESS)
				goto fail;
		}
		if (nrt_add_tensor_to_tensor_set(t->usage == NEFF_USAGE_INPUT ? l->in : l->out, t->name,
						 l->tensors[i]) != NRT_SUCCESS)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "neuronsim-bench-profile: cannot load the model or set up its tensors\n");
	unload(l);
	return -1;
}

/* One round of one mode: a runtime of its own, runs timed executions.
 * times gets runs entries (us). *close_ms gets nrt_close's time (the trace
 * write). Returns 0, or -1 with a message. */
static int round_of(const ncc_compile_result_t *res, bench_mode_t m, const char *out_dir, int runs,
		    double *times, double *close_ms)
{
	set_mode(m, out_dir);
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-profile: nrt_init failed with status %d\n", (int)st);
		return -1;
	}
	loaded_t l;
	int rc = load(res, &l);
	for (int r = 0; rc == 0 && r < WARMUP + runs; r++) {
		double t0 = now_us();
		st = nrt_execute(l.model, l.in, l.out);
		double dt = now_us() - t0;
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "neuronsim-bench-profile: nrt_execute failed with status %d\n", (int)st);
			rc = -1;
		}
		if (r >= WARMUP)
			times[r - WARMUP] = dt;
	}
	unload(&l);
	double c0 = now_us();
	nrt_close();
	*close_ms = (now_us() - c0) / 1e3;
	return rc;
}

/* Bytes of the files under dir (the traces written). */
static long long dir_bytes(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "du -sb '%s' 2>/dev/null", dir);
	FILE *p = popen(cmd, "r");
	long long n = -1;
	if (p) {
		if (fscanf(p, "%lld", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

static int bench_model(const char *path, int rounds, bool *met)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	FILE *devnull = fopen("/dev/null", "w");
	o.log = devnull;
	ncc_compile_result_t res = { 0 };
	ncc_error_t err = { 0 };
	ncc_status_t cs = ncc_compile_file(path, &o, &res, &err);
	if (devnull)
		fclose(devnull);
	if (cs != NCC_OK) {
		fprintf(stderr, "neuronsim-bench-profile: %s does not compile: %s\n", path, err.msg);
		return -1;
	}
	char out_dir[] = "/tmp/neuronsim-bench-profile-XXXXXX";
	if (!mkdtemp(out_dir)) {
		perror("neuronsim-bench-profile: mkdtemp");
		ncc_compile_result_release(&res);
		return -1;
	}

	/* Calibrate: how many executions fill ROUND_SECONDS. */
	double one[8], close_ms;
	if (round_of(&res, MODE_OFF, out_dir, 8, one, &close_ms) != 0) {
		ncc_compile_result_release(&res);
		return -1;
	}
	double per = median(one, 8);
	int runs = (int)(ROUND_SECONDS * 1e6 / (per > 1 ? per : 1));
	runs = runs < 5 ? 5 : runs > MAX_RUNS ? MAX_RUNS : runs;

	double *times = malloc((size_t)runs * sizeof(double));
	double med[MODE_COUNT][ROUNDS], ratio[MODE_COUNT][ROUNDS], close_sum[MODE_COUNT] = { 0 };
	int rc = 0;
	for (int r = 0; r < rounds && rc == 0; r++) {
		/* Rotate the order so that a drifting machine load hits every mode alike. */
		for (int k = 0; k < MODE_COUNT && rc == 0; k++) {
			bench_mode_t m = (bench_mode_t)((k + r) % MODE_COUNT);
			rc = round_of(&res, m, out_dir, runs, times, &close_ms);
			med[m][r] = median(times, runs);
			close_sum[m] += close_ms;
		}
		for (int m = 0; m < MODE_COUNT && rc == 0; m++)
			ratio[m][r] = med[m][r] / med[MODE_OFF][r];
	}
	free(times);
	unsetenv("NEURON_RT_INSPECT_ENABLE");
	long long trace_bytes = dir_bytes(out_dir);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "neuronsim-bench-profile: could not remove %s\n", out_dir);
	if (rc != 0) {
		ncc_compile_result_release(&res);
		return -1;
	}

	neff_view_t v;
	uint64_t insns = 0;
	if (ns_status_consume_message(neff_parse(res.neff, res.neff_size, &v),
				      NULL, 0) == NS_STATUS_OK)
		for (uint32_t c = 0; c < v.meta->n_cores; c++)
			for (int e = 0; e < ISA_ENGINE_COUNT; e++)
				insns += v.code_count[c][e];
	const char *base = strrchr(path, '/');
	printf("%s: %llu instructions, %d rounds x %d executions per mode (+%d warm-up)\n",
	       base ? base + 1 : path, (unsigned long long)insns, rounds, runs, WARMUP);
	printf("  %-14s %12s %10s %8s %8s %12s\n", "mode", "median_us", "overhead", "target", "result",
	       "close_ms");
	for (int m = 0; m < MODE_COUNT; m++) {
		double all[ROUNDS];
		memcpy(all, med[m], sizeof(double) * (size_t)rounds);
		double md = median(all, rounds);
		memcpy(all, ratio[m], sizeof(double) * (size_t)rounds);
		double ov = median(all, rounds) - 1.0;
		double target = m == MODE_SYSTEM ? TARGET_SYSTEM : TARGET_DEVICE;
		bool ok = ov <= target;
		if (m != MODE_OFF && !ok)
			*met = false;
		printf("  %-14s %12.2f %9.2f%% %8s %8s %12.2f\n", mode_names[m], md,
		       m == MODE_OFF ? 0.0 : 100.0 * ov,
		       m == MODE_OFF ? "-" : m == MODE_SYSTEM ? "<= 5%" : "<= 15%",
		       m == MODE_OFF ? "-" : ok ? "met" : "MISSED", close_sum[m] / rounds);
	}
	printf("  traces written: %lld bytes in all (gzip); close_ms is nrt_close, which writes them\n",
	       trace_bytes);
	ncc_compile_result_release(&res);
	return 0;
}

static const char usage_text[] =
	"Usage: neuronsim-bench-profile [--rounds N] [MODULE.hlo ...]\n"
	"Times nrt_execute on corpus modules with the profiler off, with the system trace\n"
	"(NEURON_RT_INSPECT_ENABLE=1) and with the device trace as well\n"
	"(NEURON_RT_INSPECT_DEVICE_PROFILE=session), each mode in a runtime of its own,\n"
	"interleaved over rounds; the overhead is the median over rounds of the ratio of\n"
	"median execution times to the same round with tracing off.\n"
	"Default modules: mlp-mini_mlp_single.hlo and gpt-gpt2_tp_1.hlo from the corpus.\n";

int main(int argc, char **argv)
{
	int rounds = ROUNDS;
	const char *mods[64];
	int n_mods = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
			rounds = atoi(argv[++i]);
			if (rounds < 1 || rounds > ROUNDS) {
				fprintf(stderr, "neuronsim-bench-profile: --rounds wants 1..%d\n", ROUNDS);
				return 2;
			}
			continue;
		}
		if (argv[i][0] == '-' || n_mods == 64) {
			fprintf(stderr, "neuronsim-bench-profile: unexpected argument '%s'\n%s", argv[i],
				usage_text);
			return 2;
		}
		mods[n_mods++] = argv[i];
	}
	if (!n_mods) {
		mods[n_mods++] = NCC_HLO_CORPUS "/mlp-mini_mlp_single.hlo";
		mods[n_mods++] = NCC_HLO_CORPUS "/gpt-gpt2_tp_1.hlo";
	}
	/* Random inputs may make NaNs; they are not what is measured. */
	setenv("NEURONSIM_NAN_CHECK", "0", 1);
	unsetenv("NEURON_RT_INSPECT_ENABLE");
	printf("neuronsim-bench-profile: profiler overhead on nrt_execute (targets: system trace "
	       "<= 5%%, device trace <= 15%%)\n");
	bool met = true;
	int failures = 0;
	for (int i = 0; i < n_mods; i++)
		failures += bench_model(mods[i], rounds, &met) != 0;
	printf("profiler overhead targets: %s%s\n", met ? "met" : "MISSED",
	       failures ? " (some modules did not run)" : "");
	return failures ? 1 : 0;
}
