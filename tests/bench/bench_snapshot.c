/* neuronsim-bench-snapshot: per-execution time of corpus models with snapshots off, in each ON_NRT_ERROR mode and with on-demand input dumps, as ratios to off. */
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/compiler/ncc_e2e.h"
#include "bench_corpus.h"
#include "ncc/ncc.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/bench/meson.build)"
#endif

/* ~30 us per execution: the worst case for a per-execution cost; and ~40 ms
 * with 177 MiB of inputs: the cost of copying them. */
static const char *const default_modules[] = { "mlp-mini_mlp_single.hlo", "gpt-gpt2_tp_1.hlo" };
#define DEFAULT_ROUNDS 5
#define WARMUP 2
#define MIN_RUNS 5
#define MAX_RUNS 20000
#define BUDGET_MS 250.0 /* per mode and round, after the warm-up */

typedef struct mode {
	const char *label;
	const char *dump;      /* NEURON_DUMP_HLO_SNAPSHOT, NULL: unset */
	bool on_demand;        /* XLA_FLAGS=--xla_dump_hlo_snapshots */
} mode_t_;

static const mode_t_ modes[] = {
	{ "off", NULL, false },
	{ "ON_NRT_ERROR", "ON_NRT_ERROR", false },
	{ "ON_NRT_ERROR_HYBRID", "ON_NRT_ERROR_HYBRID", false },
	{ "ON_NRT_ERROR_CPU", "ON_NRT_ERROR_CPU", false },
	{ "on demand (inputs)", NULL, true },
};

typedef struct result {
	double median_us, min_us;
	int runs;
	uint64_t dev_copy, host_copy;
	bool ok;
} result_t;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* Small deterministic inputs: floats in [-0.05, 0.05) keep a training step
 * finite (no NaN to stop the model under ON_NRT_ERROR); integers (labels,
 * indices) 0. */
static void fill_inputs(ncc_e2e_io_t *io)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < io->n_in; i++) {
		ncc_e2e_tensor_t *t = &io->in[i];
		if (t->dtype != ISA_DT_F32)
			continue; /* zeros */
		float *f = t->data;
		for (size_t k = 0; k < t->size / sizeof(float); k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			f[k] = ((float)(s >> 40) / (float)(1u << 24) - 0.5f) * 0.1f;
		}
	}
}

static int run_mode(const mode_t_ *md, const void *neff, size_t size, ncc_e2e_io_t *io,
		    const char *dump_dir, result_t *r)
{
	memset(r, 0, sizeof(*r));
	if (md->dump)
		setenv("NEURON_DUMP_HLO_SNAPSHOT", md->dump, 1);
	else
		unsetenv("NEURON_DUMP_HLO_SNAPSHOT");
	char flags[512];
	snprintf(flags, sizeof(flags), "%s--xla_dump_to=%s", md->on_demand ? "--xla_dump_hlo_snapshots " : "",
		 dump_dir);
	setenv("XLA_FLAGS", flags, 1);
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "%s: nrt_init failed: %d\n", md->label, (int)st);
		return -1;
	}
	uint32_t n = io->n_in + io->n_out;
	nrt_tensor_t **t = calloc(n, sizeof(*t));
	double *samples = calloc(MAX_RUNS, sizeof(double));
	nrt_model_t *model = NULL;
	nrt_tensor_set_t *in = NULL, *out = NULL;
	int rc = -1;
	if (!t || !samples)
		goto out;
	if ((st = nrt_load(neff, size, -1, -1, &model)) != NRT_SUCCESS) {
		fprintf(stderr, "%s: nrt_load failed: %d\n", md->label, (int)st);
		goto out;
	}
	nrt_neuronsim_mem_usage_t u;
	nrt_neuronsim_get_mem_usage(&u);
	r->dev_copy = u.by_category[NRT_NEURONSIM_MEM_SNAPSHOT];
	r->host_copy = u.host_snapshot;
	nrt_allocate_tensor_set(&in);
	nrt_allocate_tensor_set(&out);
	for (uint32_t i = 0; i < n; i++) {
		bool is_in = i < io->n_in;
		ncc_e2e_tensor_t *d = is_in ? &io->in[i] : &io->out[i - io->n_in];
		if (!is_in && d->alias_input >= 0)
			continue; /* updated in place in its input */
		if ((st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, d->size ? d->size : 1, d->name,
					      &t[i])) != NRT_SUCCESS ||
		    (st = nrt_add_tensor_to_tensor_set(is_in ? in : out, d->name, t[i])) != NRT_SUCCESS ||
		    (is_in && d->size && (st = nrt_tensor_write(t[i], d->data, 0, d->size)) != NRT_SUCCESS)) {
			fprintf(stderr, "%s: tensor '%s': status %d\n", md->label, d->name, (int)st);
			goto out;
		}
	}
	double spent = 0;
	for (int k = 0; k < WARMUP + MAX_RUNS; k++) {
		double t0 = ncc_e2e_now_ms();
		st = nrt_execute(model, in, out);
		double dt = ncc_e2e_now_ms() - t0;
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "%s: execution %d failed with status %d\n", md->label, k, (int)st);
			goto out;
		}
		if (k < WARMUP)
			continue;
		samples[r->runs++] = dt * 1000.0;
		spent += dt;
		if (r->runs >= MIN_RUNS && spent > BUDGET_MS)
			break;
	}
	qsort(samples, (size_t)r->runs, sizeof(double), cmp_double);
	r->median_us = samples[r->runs / 2];
	r->min_us = samples[0];
	r->ok = true;
	rc = 0;
out:
	for (uint32_t i = 0; t && i < n; i++)
		if (t[i])
			nrt_tensor_free(&t[i]);
	if (in)
		nrt_destroy_tensor_set(&in);
	if (out)
		nrt_destroy_tensor_set(&out);
	if (model)
		nrt_unload(model);
	free(t);
	free(samples);
	nrt_close();
	nftw(dump_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n ? v[n / 2] : 0;
}

#define N_MODES (sizeof(modes) / sizeof(modes[0]))

/* Every mode gets a runtime of its own per round and the order rotates, so a
 * burst of load from a neighbour does not land on one mode only; a mode's
 * ratio is the median over rounds of its median / that round's "off" median. */
static int bench_module(const char *name, int rounds, const char *dump_dir)
{
	char path[4096];
	if (strchr(name, '/'))
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, name);
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	ncc_compile_result_t res;
	if (bench_compile_file("neuronsim-bench-snapshot", path, &o, &res) != 0)
		return 1;
	ncc_e2e_io_t io;
	char why[512];
	if (ncc_e2e_io_from_neff(res.neff, res.neff_size, &io, why, sizeof(why)) != 0) {
		fprintf(stderr, "neuronsim-bench-snapshot: %s: %s\n", path, why);
		ncc_compile_result_release(&res);
		return 1;
	}
	fill_inputs(&io);
	uint64_t in_bytes = 0;
	for (uint32_t i = 0; i < io.n_in; i++)
		in_bytes += io.in[i].size;
	printf("%s: %u inputs (%llu bytes), %u outputs, -O%d, %d rounds\n", name, io.n_in,
	       (unsigned long long)in_bytes, io.n_out, o.compile.opt_level, rounds);
	double med[N_MODES][64], ratio[N_MODES][64];
	result_t last[N_MODES];
	int runs[N_MODES] = { 0 };
	int failed = 0;
	memset(last, 0, sizeof(last));
	for (int rd = 0; rd < rounds && !failed; rd++) {
		double round_med[N_MODES];
		for (size_t j = 0; j < N_MODES && !failed; j++) {
			size_t k = (j + (size_t)rd) % N_MODES;
			if (run_mode(&modes[k], res.neff, res.neff_size, &io, dump_dir, &last[k]) != 0)
				failed = 1;
			round_med[k] = last[k].median_us;
			runs[k] += last[k].runs;
		}
		for (size_t k = 0; k < N_MODES && !failed; k++) {
			med[k][rd] = round_med[k];
			ratio[k][rd] = round_med[0] > 0 ? round_med[k] / round_med[0] : 0;
		}
	}
	if (!failed) {
		printf("  %-22s %12s %10s %8s %12s %12s\n", "mode", "median us", "vs off", "runs",
		       "device copy", "host copy");
		for (size_t k = 0; k < N_MODES; k++)
			printf("  %-22s %12.1f %9.2fx %8d %12llu %12llu\n", modes[k].label,
			       median_of(med[k], rounds), median_of(ratio[k], rounds), runs[k],
			       (unsigned long long)last[k].dev_copy, (unsigned long long)last[k].host_copy);
	}
	ncc_e2e_io_free(&io);
	ncc_compile_result_release(&res);
	return failed;
}

static const char usage_text[] =
	"Usage: neuronsim-bench-snapshot [--rounds N] [MODULE.hlo ...]\n"
	"Per-execution time of corpus modules (default mlp-mini_mlp_single.hlo and\n"
	"gpt-gpt2_tp_1.hlo, from " NCC_HLO_CORPUS ") with HLO snapshots\n"
	"off, NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR, _HYBRID, _CPU and on-demand input\n"
	"dumps (XLA_FLAGS=--xla_dump_hlo_snapshots, into a temporary directory), and the\n"
	"ratio of each to off; plus the input copy each mode keeps (device, host bytes).\n"
	"A MODULE with a '/' is a path. --rounds N (1..64, default 5): rounds of all modes.\n"
	"Exit status: 0, or 1 when a module could not be compiled or run.\n";

int main(int argc, char **argv)
{
	int rounds = DEFAULT_ROUNDS;
	int first = 1;
	for (; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (!strcmp(argv[first], "--rounds") && first + 1 < argc) {
			char *end;
			long v = strtol(argv[++first], &end, 10);
			if (*end || v < 1 || v > 64) {
				fprintf(stderr, "neuronsim-bench-snapshot: --rounds takes 1..64\n");
				return 2;
			}
			rounds = (int)v;
			continue;
		}
		fprintf(stderr, "neuronsim-bench-snapshot: unknown option '%s'\n%s", argv[first], usage_text);
		return 2;
	}
	if (!getenv("NEURON_RT_LOG_LEVEL"))
		setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
	setenv("NEURONSIM_BACKEND", "embedded", 0);
	char dump_dir[] = "/tmp/neuronsim-bench-snapshot-XXXXXX";
	if (!mkdtemp(dump_dir)) {
		perror("neuronsim-bench-snapshot: mkdtemp");
		return 1;
	}
	printf("neuronsim-bench-snapshot: per-execution time with HLO snapshots, median over rounds\n");
	int failed = 0;
	if (first < argc)
		for (int i = first; i < argc; i++)
			failed |= bench_module(argv[i], rounds, dump_dir);
	else
		for (size_t i = 0; i < sizeof(default_modules) / sizeof(default_modules[0]); i++)
			failed |= bench_module(default_modules[i], rounds, dump_dir);
	rmdir(dump_dir);
	return failed;
}
