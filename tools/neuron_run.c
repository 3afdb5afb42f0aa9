/* neuron-run: load a NEFF, feed it .npy or seeded random inputs, execute, write
 * the outputs as .npy files and report status and timing. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "neuronsim/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_profile.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuron-run MODEL.neff [options]\n"
	"Load MODEL.neff on the neuronsim device, execute it and save its outputs.\n"
	"\n"
	"Options:\n"
	"  -i, --input NAME=FILE.npy  value of input tensor NAME (repeatable); the .npy\n"
	"                             dtype and shape must equal the model's tensor\n"
	"  -r, --random-inputs        fill inputs without --input with seeded random\n"
	"                             values: floats uniform in [-1,1), signed ints in\n"
	"                             [-8,8), unsigned ints in [0,16)\n"
	"  -s, --seed N               seed of --random-inputs (default 0); the same\n"
	"                             seed gives the same inputs on every machine\n"
	"  -o, --output-dir DIR       write each output tensor to DIR/NAME.npy (default:\n"
	"                             the current directory; DIR is created if missing)\n"
	"  -n, --no-outputs           do not write output files\n"
	"  -R, --repeat N             execute N times (default 1) and report timing\n"
	"  -c, --cores START:COUNT    load on COUNT cores from logical core START\n"
	"                             (default -1:-1, the runtime's choice)\n"
	"  -v, --verbose              list the model's tensors and every execution time\n"
	"  -m, --metrics              print the metrics report (PyTorch/XLA format,\n"
	"                             docs/metrics.md) to stdout at exit\n"
	"  -p, --profile FILE         record a device and system trace of the executions\n"
	"                             (nrt_profile_start/stop) into FILE, Chrome trace\n"
	"                             JSON (gzip when FILE ends in .gz); summarise it\n"
	"                             with 'neuron-profile summary FILE'\n"
	"  -h, --help                 show this help\n"
	"      --version              print the version and exit\n"
	"\n"
	"Output (stdout): 'load: MS ms', one line per input and output file, 'exec:'\n"
	"timing over the repeats (p50, min, max in us) and 'status: NAME (N): text';\n"
	"with --metrics, the report follows ('Metric: NAME' and 'Counter: NAME' blocks).\n"
	"Errors go to stderr.\n"
	"\n"
	"Exit status: 0 success; 1 an execution failed (the NRT status is printed;\n"
	"after NRT_EXEC_COMPLETED_WITH_NUM_ERR the outputs are still written);\n"
	"2 bad command line (also --cores beyond the visible cores); 3 unreadable\n"
	"or rejected NEFF or .npy, or an input missing or not matching the model;\n"
	"4 runtime error (init, load, allocation, tensor I/O); 5 an output file\n"
	"could not be written.\n";

typedef struct input_arg {
	const char *name;
	const char *path;
	bool used;
} input_arg_t;

typedef struct run_opts {
	const char *model_path;
	input_arg_t *inputs;
	size_t n_inputs;
	bool random_inputs;
	uint64_t seed;
	const char *output_dir;
	bool write_outputs;
	long repeat;
	int32_t start_nc;
	int32_t nc_count;
	bool verbose;
	bool metrics;
	const char *profile;
} run_opts_t;

/* Everything the run allocated, released in one place. */
typedef struct run_state {
	nrt_model_t *model;
	nrt_tensor_info_array_t *info;
	nrt_tensor_t **tensors;
	nrt_tensor_set_t *in_set;
	nrt_tensor_set_t *out_set;
	bool nrt_up;
} run_state_t;

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "neuron-run: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'neuron-run --help'.\n");
	return TOOL_EXIT_USAGE;
}

static bool parse_i64(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int parse_args(int argc, char **argv, run_opts_t *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "random-inputs", no_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "no-outputs", no_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'R' },
		{ "cores", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "metrics", no_argument, NULL, 'm' },
		{ "profile", required_argument, NULL, 'p' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (run_opts_t){ .output_dir = ".", .write_outputs = true, .repeat = 1,
			   .start_nc = -1, .nc_count = -1 };
	o->inputs = calloc((size_t)argc, sizeof(*o->inputs));
	if (!o->inputs) {
		fprintf(stderr, "neuron-run: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	int c;
	long long v;
	while ((c = getopt_long(argc, argv, "i:rs:o:nR:c:vmp:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1])
				return usage_error("--input wants NAME=FILE.npy, got '%s'", optarg);
			*eq = '\0';
			for (size_t k = 0; k < o->n_inputs; k++)
				if (strcmp(o->inputs[k].name, optarg) == 0)
					return usage_error("--input %s given twice", optarg);
			o->inputs[o->n_inputs++] = (input_arg_t){ optarg, eq + 1, false };
			break;
		}
		case 'r': o->random_inputs = true; break;
		case 's':
			if (!parse_i64(optarg, 0, LLONG_MAX, &v))
				return usage_error("--seed wants a non-negative integer, got '%s'", optarg);
			o->seed = (uint64_t)v;
			break;
		case 'o': o->output_dir = optarg; break;
		case 'n': o->write_outputs = false; break;
		case 'R':
			if (!parse_i64(optarg, 1, 100000000, &v))
				return usage_error("--repeat wants an integer in 1..100000000, got '%s'", optarg);
			o->repeat = (long)v;
			break;
		case 'c': {
			char *colon = strchr(optarg, ':');
			long long s, n;
			if (!colon)
				return usage_error("--cores wants START:COUNT, got '%s'", optarg);
			*colon = '\0';
			if (!parse_i64(optarg, -1, 1023, &s) || !parse_i64(colon + 1, -1, 1024, &n) ||
			    n == 0) {
				*colon = ':';
				return usage_error("--cores wants START:COUNT (START >= -1, COUNT >= 1 or -1), got '%s'",
						   optarg);
			}
			o->start_nc = (int32_t)s;
			o->nc_count = (int32_t)n;
			break;
		}
		case 'v': o->verbose = true; break;
		case 'm': o->metrics = true; break;
		case 'p': o->profile = optarg; break;
		case TOOL_OPT_VERSION: exit(tool_print_version("neuron-run", NULL));
		case 'h':
			fputs(usage_text, stdout);
			exit(TOOL_EXIT_OK);
		default:
			fprintf(stderr, "Try 'neuron-run --help'.\n");
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return usage_error("%s", "missing MODEL.neff");
	if (optind + 1 < argc)
		return usage_error("unexpected argument '%s' (one model per run)", argv[optind + 1]);
	o->model_path = argv[optind];
	return TOOL_EXIT_OK;
}

static void run_state_release(run_state_t *s)
{
	if (s->in_set)
		nrt_destroy_tensor_set(&s->in_set);
	if (s->out_set)
		nrt_destroy_tensor_set(&s->out_set);
	if (s->tensors && s->info)
		for (uint64_t i = 0; i < s->info->tensor_count; i++)
			if (s->tensors[i])
				nrt_tensor_free(&s->tensors[i]);
	free(s->tensors);
	if (s->info)
		nrt_free_model_tensor_info(s->info);
	if (s->model)
		nrt_unload(s->model);
	if (s->nrt_up)
		nrt_close();
}

static void info_shape(const nrt_tensor_info_t *t, uint64_t *shape)
{
	for (uint32_t k = 0; k < t->ndim && k < NPY_MAX_RANK; k++)
		shape[k] = t->shape[k];
}

/* Loads the value of one input tensor into host memory buf (t->size bytes). */
static int prepare_input(const run_opts_t *o, const nrt_tensor_info_t *t, isa_dtype_t dt,
			 void *buf, uint64_t *rng)
{
	uint64_t shape[NPY_MAX_RANK] = { 0 };
	char want[160], got[160];
	info_shape(t, shape);
	ns_host_describe(dt, t->ndim, shape, want, sizeof(want));

	input_arg_t *arg = NULL;
	for (size_t k = 0; k < o->n_inputs; k++)
		if (strcmp(o->inputs[k].name, t->name) == 0)
			arg = &o->inputs[k];
	if (!arg) {
		if (!o->random_inputs) {
			fprintf(stderr,
				"neuron-run: input '%s' (%s) has no value: pass --input %s=FILE.npy or --random-inputs\n",
				t->name, want, t->name);
			return TOOL_EXIT_INPUT;
		}
		size_t isz = isa_dtype_size(dt);
		ns_host_fill_random(dt, buf, isz ? t->size / isz : 0, rng);
		printf("input %s: %s random (seed %" PRIu64 ")\n", t->name, want, o->seed);
		return TOOL_EXIT_OK;
	}
	arg->used = true;

	npy_array_t a;
	ns_status_t st = npy_read_file(arg->path, &a);
	if (st) {
		fprintf(stderr, "neuron-run: input '%s': %s\n", t->name, ns_status_message(st));
		ns_status_free(st);
		return TOOL_EXIT_INPUT;
	}
	ns_host_describe(a.dtype, a.rank, a.shape, got, sizeof(got));
	/* The NRT API has no boolean dtype: pred tensors appear as u8, and a
	 * numpy bool array has the same bytes. */
	bool dt_ok = a.dtype == dt || (dt == ISA_DT_U8 && a.dtype == ISA_DT_PRED);
	bool shape_ok = a.rank == t->ndim;
	for (uint32_t k = 0; shape_ok && k < a.rank; k++)
		shape_ok = a.shape[k] == shape[k];
	if (!dt_ok || !shape_ok || a.nbytes != t->size) {
		fprintf(stderr,
			"neuron-run: input '%s': %s holds %s, the model expects %s: save the array with that dtype and shape\n",
			t->name, arg->path, got, want);
		npy_array_free(&a);
		return TOOL_EXIT_INPUT;
	}
	memcpy(buf, a.data, a.nbytes);
	npy_array_free(&a);
	printf("input %s: %s from %s\n", t->name, want, arg->path);
	return TOOL_EXIT_OK;
}

/* File name of an output: tensor names may contain '/' or ':' (HLO names do),
 * which must not escape the output directory. */
static void output_path(const char *dir, const char *name, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s/", dir);
	for (const char *p = name; *p && n + 5 < len; p++)
		buf[n++] = (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20) ? '_' : *p;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		buf[n++] = '_';
	snprintf(buf + n, len - n, ".npy");
}

static int run(const run_opts_t *o, run_state_t *s)
{
	char sbuf[256];
	void *neff;
	size_t neff_size;
	int orc = tool_open_neff("neuron-run", o->model_path, &neff, &neff_size);
	if (orc != TOOL_EXIT_OK)
		return orc;
	NRT_STATUS st;
	s->nrt_up = true;

	/* Check --cores here so a bad choice reads as a command-line error, not
	 * as a NEFF that nrt_load refused. */
	uint32_t visible = 0;
	if (o->start_nc >= 0 && nrt_get_visible_nc_count(&visible) == NRT_SUCCESS) {
		uint64_t end = (uint64_t)o->start_nc + (uint64_t)(o->nc_count > 0 ? o->nc_count : 1);
		if (end > visible) {
			fprintf(stderr, "neuron-run: --cores %d:%d does not fit the %u visible NeuronCores (0-%u)\n",
				o->start_nc, o->nc_count, visible, visible ? visible - 1 : 0);
			free(neff);
			return TOOL_EXIT_USAGE;
		}
	}

	uint64_t t0 = ns_monotonic_ns();
	st = nrt_load(neff, neff_size, o->start_nc, o->nc_count, &s->model);
	uint64_t load_ns = ns_monotonic_ns() - t0;
	free(neff);
	if (st != NRT_SUCCESS) {
		s->model = NULL;
		fprintf(stderr, "neuron-run: loading %s failed: %s\n", o->model_path,
			tool_status_str(st, sbuf, sizeof(sbuf)));
		return (st == NRT_INVALID || st == NRT_UNSUPPORTED_NEFF_VERSION) ? TOOL_EXIT_INPUT
										 : TOOL_EXIT_RUNTIME;
	}
	printf("load: %s in %.3f ms\n", o->model_path, (double)load_ns / 1e6);

	st = nrt_get_model_tensor_info(s->model, &s->info);
	if (st != NRT_SUCCESS) {
		s->info = NULL;
		fprintf(stderr, "neuron-run: nrt_get_model_tensor_info failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		return TOOL_EXIT_RUNTIME;
	}
	const uint64_t n = s->info->tensor_count;
	s->tensors = calloc(n ? n : 1, sizeof(*s->tensors));
	if (!s->tensors ||
	    nrt_allocate_tensor_set(&s->in_set) != NRT_SUCCESS ||
	    nrt_allocate_tensor_set(&s->out_set) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-run: out of memory for %" PRIu64 " tensors\n", n);
		return TOOL_EXIT_RUNTIME;
	}

	if (o->verbose) {
		printf("model tensors:\n");
		for (uint64_t i = 0; i < n; i++) {
			const nrt_tensor_info_t *t = &s->info->tensor_array[i];
			uint64_t shape[NPY_MAX_RANK] = { 0 };
			info_shape(t, shape);
			printf("  %-6s %-24s %-24s %zu bytes\n",
			       t->usage == NRT_TENSOR_USAGE_INPUT ? "input" : "output", t->name,
			       ns_host_describe(tool_dtype_from_nrt(t->dtype), t->ndim, shape, sbuf,
					     sizeof(sbuf)),
			       t->size);
		}
	}

	/* Inputs first, so every input problem is reported before any execution. */
	uint64_t rng = o->seed;
	int32_t nc = o->start_nc >= 0 ? o->start_nc : 0;
	for (uint64_t i = 0; i < n; i++) {
		const nrt_tensor_info_t *t = &s->info->tensor_array[i];
		isa_dtype_t dt = tool_dtype_from_nrt(t->dtype);
		if (dt == ISA_DT_INVALID || t->ndim > NPY_MAX_RANK) {
			fprintf(stderr, "neuron-run: tensor '%s' has dtype %d / rank %u, which neuron-run cannot represent as .npy\n",
				t->name, (int)t->dtype, t->ndim);
			return TOOL_EXIT_INPUT;
		}
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, t->size, t->name,
					 &s->tensors[i]);
		if (st != NRT_SUCCESS) {
			s->tensors[i] = NULL;
			fprintf(stderr, "neuron-run: allocating %zu bytes for tensor '%s' on core %d failed: %s\n",
				t->size, t->name, nc, tool_status_str(st, sbuf, sizeof(sbuf)));
			return TOOL_EXIT_RUNTIME;
		}
		bool is_in = t->usage == NRT_TENSOR_USAGE_INPUT;
		st = nrt_add_tensor_to_tensor_set(is_in ? s->in_set : s->out_set, t->name,
						  s->tensors[i]);
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "neuron-run: adding tensor '%s' to a tensor set failed: %s\n",
				t->name, tool_status_str(st, sbuf, sizeof(sbuf)));
			return TOOL_EXIT_RUNTIME;
		}
		if (!is_in)
			continue;
		void *buf = malloc(t->size ? t->size : 1);
		if (!buf) {
			fprintf(stderr, "neuron-run: out of memory for input '%s' (%zu bytes)\n",
				t->name, t->size);
			return TOOL_EXIT_RUNTIME;
		}
		int rc = prepare_input(o, t, dt, buf, &rng);
		if (rc == TOOL_EXIT_OK && t->size) {
			st = nrt_tensor_write(s->tensors[i], buf, 0, t->size);
			if (st != NRT_SUCCESS) {
				fprintf(stderr, "neuron-run: writing input '%s' to the device failed: %s\n",
					t->name, tool_status_str(st, sbuf, sizeof(sbuf)));
				rc = TOOL_EXIT_RUNTIME;
			}
		}
		free(buf);
		if (rc)
			return rc;
	}
	for (size_t k = 0; k < o->n_inputs; k++) {
		if (o->inputs[k].used)
			continue;
		fprintf(stderr, "neuron-run: --input %s: the model has no input of that name; its inputs are:",
			o->inputs[k].name);
		for (uint64_t i = 0; i < n; i++)
			if (s->info->tensor_array[i].usage == NRT_TENSOR_USAGE_INPUT)
				fprintf(stderr, " %s", s->info->tensor_array[i].name);
		fprintf(stderr, "\n");
		return TOOL_EXIT_INPUT;
	}

	double *times = calloc((size_t)o->repeat, sizeof(double));
	if (!times) {
		fprintf(stderr, "neuron-run: out of memory for %ld timings\n", o->repeat);
		return TOOL_EXIT_RUNTIME;
	}
	if (o->profile && (st = nrt_profile_start(s->model, o->profile)) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-run: --profile %s: cannot start the profile: %s\n", o->profile,
			tool_status_str(st, sbuf, sizeof(sbuf)));
		free(times);
		return TOOL_EXIT_OUTPUT;
	}
	long done = 0;
	for (; done < o->repeat; done++) {
		uint64_t e0 = ns_monotonic_ns();
		st = nrt_execute(s->model, s->in_set, s->out_set);
		times[done] = (double)(ns_monotonic_ns() - e0) / 1e3;
		if (o->verbose)
			printf("exec %ld: %.1f us\n", done, times[done]);
		if (st != NRT_SUCCESS) {
			done++;
			break;
		}
	}
	if (o->profile) {
		NRT_STATUS pst = nrt_profile_stop(o->profile);
		if (pst != NRT_SUCCESS) {
			fprintf(stderr, "neuron-run: --profile %s: writing the trace failed: %s\n",
				o->profile, tool_status_str(pst, sbuf, sizeof(sbuf)));
			free(times);
			return TOOL_EXIT_OUTPUT;
		}
		printf("profile: %s\n", o->profile);
	}
	double p50 = ns_quantile(times, (size_t)done, 0.5);
	printf("exec: %ld run%s, p50 %.1f us, min %.1f us, max %.1f us\n", done,
	       done == 1 ? "" : "s", p50, times[0], times[done - 1]);
	free(times);
	printf("status: %s\n", tool_status_str(st, sbuf, sizeof(sbuf)));
	if (st != NRT_SUCCESS) {
		nrt_neuronsim_exec_error_t rec;
		if (nrt_neuronsim_get_last_error(s->model, &rec) == NRT_SUCCESS && rec.message[0])
			fprintf(stderr, "neuron-run: execution %ld failed: %s\n", done - 1, rec.message);
		else
			fprintf(stderr, "neuron-run: execution %ld failed: %s\n", done - 1,
				tool_status_str(st, sbuf, sizeof(sbuf)));
		/* Outputs of a run that completed with NaNs are still written: they
		 * are what one wants to look at. */
		if (st != NRT_EXEC_COMPLETED_WITH_NUM_ERR)
			return TOOL_EXIT_EXEC;
	}

	int rc = st == NRT_SUCCESS ? TOOL_EXIT_OK : TOOL_EXIT_EXEC;
	if (!o->write_outputs)
		return rc;
	if (mkdir(o->output_dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "neuron-run: cannot create output directory %s: %s\n",
			o->output_dir, strerror(errno));
		return TOOL_EXIT_OUTPUT;
	}
	for (uint64_t i = 0; i < n; i++) {
		const nrt_tensor_info_t *t = &s->info->tensor_array[i];
		if (t->usage != NRT_TENSOR_USAGE_OUTPUT)
			continue;
		void *buf = malloc(t->size ? t->size : 1);
		if (!buf) {
			fprintf(stderr, "neuron-run: out of memory for output '%s'\n", t->name);
			return TOOL_EXIT_RUNTIME;
		}
		if (t->size && (st = nrt_tensor_read(s->tensors[i], buf, 0, t->size)) != NRT_SUCCESS) {
			fprintf(stderr, "neuron-run: reading output '%s' failed: %s\n", t->name,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			free(buf);
			return TOOL_EXIT_RUNTIME;
		}
		uint64_t shape[NPY_MAX_RANK] = { 0 };
		info_shape(t, shape);
		char path[PATH_MAX];
		output_path(o->output_dir, t->name, path, sizeof(path));
		ns_status_t ns = npy_write_file(path, tool_dtype_from_nrt(t->dtype), t->ndim, shape,
						buf);
		free(buf);
		if (ns) {
			fprintf(stderr, "neuron-run: output '%s': %s\n", t->name, ns_status_message(ns));
			ns_status_free(ns);
			return TOOL_EXIT_OUTPUT;
		}
		printf("output %s: %s to %s\n", t->name,
		       ns_host_describe(tool_dtype_from_nrt(t->dtype), t->ndim, shape, sbuf,
				     sizeof(sbuf)),
		       path);
	}
	return rc;
}

int main(int argc, char **argv)
{
	run_opts_t o;
	int rc = parse_args(argc, argv, &o);
	if (rc == TOOL_EXIT_OK) {
		run_state_t s = { 0 };
		rc = run(&o, &s);
		run_state_release(&s);
		/* After the release, so the output reads are in it too. */
		if (o.metrics) {
			char *report = nrt_neuronsim_metrics_report();
			if (report)
				fputs(report, stdout);
			else
				fprintf(stderr, "neuron-run: out of memory for the metrics report\n");
			free(report);
		}
	}
	free(o.inputs);
	return rc;
}
