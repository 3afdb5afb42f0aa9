/* neuronsim-bench-metrics: what the runtime's metrics cost on a corpus model, timed in the same run with recording on and off. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/compiler/ncc_e2e.h"
#include "hlo/hlo_parser.h"
#include "metrics_internal.h"
#include "ncc/ncc.h"
#include "observe.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/bench/meson.build)"
#endif

#define DEFAULT_MODULE "mlp-mini_mlp_single.hlo"
#define TARGET_PCT 1.0
#define WARMUP 300
#define ROUNDS 60          /* on/off block pairs */
#define BLOCK 200          /* executions per block */
#define DIRECT_CALLS 1000000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double min_of(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* Mean microseconds per execution over one block; negative on failure. */
static double block_us(nrt_model_t *model, nrt_tensor_set_t *in, nrt_tensor_set_t *out)
{
	double t0 = ncc_e2e_now_ms();
	for (int i = 0; i < BLOCK; i++) {
		NRT_STATUS st = nrt_execute(model, in, out);
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "neuronsim-bench-metrics: nrt_execute failed with status %d\n", (int)st);
			return -1;
		}
	}
	return (ncc_e2e_now_ms() - t0) * 1e3 / BLOCK;
}

/* What nrt_execute adds per execution when recording is on, measured alone:
 * the observer call with a realistic record, no model around it. */
static double direct_ns_per_exec(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (!ctx)
		return -1;
	nrt_exec_rec_t rec = { .ran = true, .status = NRT_SUCCESS };
	double t0 = ncc_e2e_now_ms();
	for (int i = 0; i < DIRECT_CALLS; i++) {
		rec.start_ns = (uint64_t)i * 1000;
		rec.end_ns = rec.start_ns + 500;
		nrt_metrics_exec(ctx, &rec);
	}
	return (ncc_e2e_now_ms() - t0) * 1e6 / DIRECT_CALLS;
}

int main(int argc, char **argv)
{
	char path[4096];
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("Usage: neuronsim-bench-metrics [MODULE.hlo]\n"
		       "Times a corpus module (default %s/%s) with the runtime's metrics\n"
		       "recording on and off in alternating blocks of the same run, and prints the\n"
		       "overhead (target <= %.0f%%).\n", NCC_HLO_CORPUS, DEFAULT_MODULE, TARGET_PCT);
		return 0;
	}
	if (argc > 1)
		snprintf(path, sizeof(path), "%s", argv[1]);
	else
		snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, DEFAULT_MODULE);
	/* The report to a file is opt-in and costs a file append per execution:
	 * not what this measures. */
	unsetenv("XLA_METRICS_FILE");

	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	ncc_compile_result_t res = { 0 };
	ncc_error_t err = { 0 };
	ncc_module_t *m = NULL;
	ncc_value_t **args = NULL;
	int32_t nargs = 0;
	if (ncc_compile_file(path, &o, &res, &err) != NCC_OK || ncc_parse_hlo_file(path, &m, &err) != NCC_OK ||
	    ncc_interp_random_args(m, 42, &args, &nargs) != NCC_OK) {
		fprintf(stderr, "neuronsim-bench-metrics: %s: %s\n", path, err.msg[0] ? err.msg : "cannot make inputs");
		return 1;
	}
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-metrics: nrt_init failed with status %d\n", (int)st);
		return 1;
	}
	char why[512];
	ncc_e2e_io_t io;
	if (ncc_e2e_io_from_neff(res.neff, res.neff_size, &io, why, sizeof(why)) != 0 ||
	    (uint32_t)nargs != io.n_in) {
		fprintf(stderr, "neuronsim-bench-metrics: %s: the NEFF's inputs do not match the module\n", path);
		return 1;
	}
	nrt_model_t *model = NULL;
	nrt_tensor_set_t *in_set = NULL, *out_set = NULL;
	uint32_t n = io.n_in + io.n_out;
	nrt_tensor_t **tensors = calloc(n, sizeof(*tensors));
	st = nrt_load(res.neff, res.neff_size, -1, -1, &model);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&in_set);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&out_set);
	for (uint32_t i = 0; i < n && st == NRT_SUCCESS && tensors; i++) {
		bool is_in = i < io.n_in;
		ncc_e2e_tensor_t *t = is_in ? &io.in[i] : &io.out[i - io.n_in];
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size ? t->size : 1, t->name,
					 &tensors[i]);
		if (st == NRT_SUCCESS)
			st = nrt_add_tensor_to_tensor_set(is_in ? in_set : out_set, t->name, tensors[i]);
		if (st == NRT_SUCCESS && is_in && t->size)
			st = nrt_tensor_write(tensors[i], args[i]->data, 0, t->size);
	}
	if (!tensors || st != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-metrics: setting up %s failed with status %d\n", path, (int)st);
		return 1;
	}

	for (int i = 0; i < WARMUP; i++)
		if (nrt_execute(model, in_set, out_set) != NRT_SUCCESS) {
			fprintf(stderr, "neuronsim-bench-metrics: the warm-up execution failed\n");
			return 1;
		}
	/* Alternate which mode goes first (ABBA), so a drift of the machine's speed
	 * during the run lands on both sides alike. */
	double on[ROUNDS], off[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < 2; k++) {
			bool rec_on = (k == 0) == (r % 2 == 0);
			nrt_metrics_set_recording(rec_on);
			double us = block_us(model, in_set, out_set);
			if (us < 0)
				return 1;
			(rec_on ? on : off)[r] = us;
		}
	}
	nrt_metrics_set_recording(true);
	double best_on = min_of(on, ROUNDS), best_off = min_of(off, ROUNDS);
	double med_on = median(on, ROUNDS), med_off = median(off, ROUNDS);
	double pct = (med_on / med_off - 1.0) * 100.0;
	double pct_best = (best_on / best_off - 1.0) * 100.0;
	double ns = direct_ns_per_exec();
	double pct_direct = ns / (med_off * 1e3) * 100.0;

	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	printf("neuronsim-bench-metrics: %s, %d blocks of %d executions per mode, alternating\n", base,
	       ROUNDS, BLOCK);
	printf("  execution, metrics off: median %.2f us, best %.2f us\n", med_off, best_off);
	printf("  execution, metrics on:  median %.2f us, best %.2f us\n", med_on, best_on);
	printf("  overhead: %+.2f%% (medians), %+.2f%% (best blocks)\n", pct, pct_best);
	printf("  recording alone: %.1f ns per execution = %.3f%% of the execution\n", ns, pct_direct);
	printf("  target <= %.0f%%: %s\n", TARGET_PCT,
	       pct <= TARGET_PCT ? "met" : "NOT MET (noisy machine? the recording alone is the floor)");

	for (uint32_t i = 0; i < n; i++)
		nrt_tensor_free(&tensors[i]);
	free(tensors);
	nrt_destroy_tensor_set(&in_set);
	nrt_destroy_tensor_set(&out_set);
	nrt_unload(model);
	nrt_close();
	ncc_interp_free_args(args, nargs);
	ncc_module_free(m);
	ncc_e2e_io_free(&io);
	ncc_compile_result_release(&res);
	return 0;
}
