/* neuronsim-train (`make demo`): compiles a PyTorch/XLA training-step HLO module,
 * runs it for several steps on the embedded device with the weights updated in
 * place, and checks every step against the reference interpreter. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncc/ncc.h"
#include "ncc/ncc_interp.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuronsim-train [options] MODULE.hlo\n"
	"Compile an XLA HLO training step (as PyTorch/XLA dumps it, with\n"
	"input_output_alias for the updated weights), run it for N steps on the\n"
	"device with the aliased parameters updated in place, and run the same steps\n"
	"on the reference interpreter. Every step's loss must agree, and the loss\n"
	"must fall.\n"
	"\n"
	"Options:\n"
	"  -n, --steps N        training steps (default 20)\n"
	"  -s, --seed N         seed of the random parameters (default 1); parameter k\n"
	"                       gets seed + k, as the compiler tests do; the aliased\n"
	"                       (updated) parameters are the weights and start uniform\n"
	"                       in +-1/sqrt(fan_in), fan_in being their last dimension\n"
	"  -S, --set P=V        set every element of parameter P to V (repeatable),\n"
	"                       e.g. --set 0=-0.1 for a learning-rate parameter\n"
	"  -l, --loss K         the output leaf holding the loss (default: the first\n"
	"                       f32 scalar output)\n"
	"  -t, --tolerance T    relative loss tolerance per step (default 1e-3)\n"
	"  -O, --opt-level N    compiler optimisation level 0..2 (default 2)\n"
	"  -v, --verbose        print every step\n"
	"  -h, --help           show this help\n"
	"      --version        print the version and exit\n"
	"\n"
	"The compile cache is used when NEURON_CC_FLAGS=\"--cache_dir=DIR\" is set.\n"
	"Exit status: 0 the losses agree and the loss fell; 1 a loss differs, the\n"
	"loss did not fall, or an execution failed; 2 bad command line; 3 the module\n"
	"does not compile or is not a training step; 4 runtime error.\n";

#define MAX_SETS 16

typedef struct train_opts {
	const char *path;
	long steps;
	uint64_t seed;
	int nsets;
	long set_param[MAX_SETS];
	double set_value[MAX_SETS];
	long loss_leaf;
	double tolerance;
	int opt_level;
	bool verbose;
} train_opts_t;

typedef struct train {
	ncc_module_t *m;
	ncc_value_t **args;       /* interpreter parameters, updated by each step */
	int32_t nargs;
	int64_t *leaf_alias;      /* result leaf -> the parameter it updates, or -1 */
	size_t nleaves;
	int32_t naliased;         /* result leaves that update a parameter */
	nrt_model_t *model;
	nrt_tensor_info_array_t *info;
	nrt_tensor_t **tensors;   /* one per NEFF I/O tensor, info order */
	nrt_tensor_set_t *in_set, *out_set;
	int32_t *out_alias;       /* output leaf -> aliased parameter, or -1 */
	uint32_t n_in, n_out;
} train_t;

static int parse_args(int argc, char **argv, train_opts_t *o)
{
	static const struct option longopts[] = {
		{ "steps", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "set", required_argument, NULL, 'S' },
		{ "loss", required_argument, NULL, 'l' },
		{ "tolerance", required_argument, NULL, 't' },
		{ "opt-level", required_argument, NULL, 'O' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (train_opts_t){ .steps = 20, .seed = 1, .loss_leaf = -1,
			     .tolerance = 1e-3, .opt_level = 2 };
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "n:s:S:l:t:O:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->steps = strtol(optarg, &end, 10);
			if (*end || o->steps < 2 || o->steps > 100000)
				goto bad;
			break;
		case 's':
			o->seed = strtoull(optarg, &end, 10);
			if (*end)
				goto bad;
			break;
		case 'S': {
			if (o->nsets == MAX_SETS)
				goto bad;
			o->set_param[o->nsets] = strtol(optarg, &end, 10);
			if (end == optarg || *end != '=' || o->set_param[o->nsets] < 0)
				goto bad;
			char *v = end + 1;
			o->set_value[o->nsets] = strtod(v, &end);
			if (end == v || *end)
				goto bad;
			o->nsets++;
			break;
		}
		case 'l':
			o->loss_leaf = strtol(optarg, &end, 10);
			if (*end || o->loss_leaf < 0)
				goto bad;
			break;
		case 't':
			o->tolerance = strtod(optarg, &end);
			if (*end || !(o->tolerance > 0))
				goto bad;
			break;
		case 'O':
			o->opt_level = (int)strtol(optarg, &end, 10);
			if (*end || o->opt_level < 0 || o->opt_level > 2)
				goto bad;
			break;
		case 'v':
			o->verbose = true;
			break;
		case TOOL_OPT_VERSION: exit(tool_print_version("neuronsim-train", NULL));
		case 'h':
			fputs(usage_text, stdout);
			exit(TOOL_EXIT_OK);
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	o->path = argv[optind];
	return 0;
bad:
	fprintf(stderr, "neuronsim-train: bad value '%s' for option -%c\n", optarg, c);
usage:
	fputs("Try 'neuronsim-train --help'.\n", stderr);
	return -1;
}

static const ncc_value_t *leaf(const ncc_value_t *v, uint32_t k)
{
	return v->shape.etype == NCC_TUPLE ? v->elems[k] : v;
}

static uint32_t n_leaves(const ncc_value_t *v)
{
	return v->shape.etype == NCC_TUPLE ? (uint32_t)v->nelems : 1;
}

/* Compiles the module and parses it again for the interpreter (which runs the
 * module as written, before any pass). */
static int compile(const train_opts_t *o, train_t *t, ncc_compile_result_t *res)
{
	ncc_driver_options_t dopts;
	ncc_error_t err = { 0 };
	ncc_driver_options_init(&dopts);
	dopts.compile.opt_level = o->opt_level;
	uint64_t t0 = ns_monotonic_ns();
	/* A "compile" block in the system trace (NEURON_RT_INSPECT_ENABLE=1 keeps
	 * blocks recorded before nrt_init, docs/profiler.md). */
	nrt_neuronsim_trace_begin("compile");
	ncc_status_t cs = ncc_compile_file(o->path, &dopts, res, &err);
	nrt_neuronsim_trace_end();
	if (cs != NCC_OK) {
		fprintf(stderr, "neuronsim-train: %s\n", err.msg);
		return TOOL_EXIT_INPUT;
	}
	/* The compiler does not link the runtime: its caller records the compile
	 * (docs/metrics.md). As in torch_xla, CompileTime counts real compiles;
	 * a cache hit only counts CachedCompile. */
	if (res->cache_hit) {
		nrt_neuronsim_counter_add("CachedCompile", 1);
	} else {
		nrt_neuronsim_counter_add("UncachedCompile", 1);
		nrt_neuronsim_metric_add("CompileTime", NRT_NEURONSIM_METRIC_TIME_NS,
					 (double)(ns_monotonic_ns() - t0));
	}
	if (ncc_parse_hlo_file(o->path, &t->m, &err) != NCC_OK ||
	    ncc_verify(t->m, &err) != NCC_OK) {
		fprintf(stderr, "neuronsim-train: %s\n", err.msg);
		return TOOL_EXIT_INPUT;
	}
	if (ncc_module_entry_aliases(t->m, &t->leaf_alias, &t->nleaves, &err) != NCC_OK) {
		fprintf(stderr, "neuronsim-train: %s\n", err.msg);
		return TOOL_EXIT_RUNTIME;
	}
	for (size_t k = 0; k < t->nleaves; k++)
		t->naliased += t->leaf_alias[k] >= 0;
	if (t->naliased == 0) {
		fprintf(stderr, "neuronsim-train: %s has no input_output_alias: it is not a "
			"training step that updates its weights in place\n", o->path);
		return TOOL_EXIT_INPUT;
	}
	if (ncc_interp_random_args(t->m, o->seed, &t->args, &t->nargs) != NCC_OK) {
		fprintf(stderr, "neuronsim-train: cannot make the random parameters\n");
		return TOOL_EXIT_RUNTIME;
	}
	/* The aliased parameters are the weights: start them as torch.nn.Linear
	 * does, uniform in +-1/sqrt(fan_in), so the first losses are sensible. */
	for (size_t k = 0; k < t->nleaves; k++) {
		int64_t p = t->leaf_alias[k];
		ncc_value_t *w = p >= 0 && p < t->nargs ? t->args[p] : NULL;
		if (!w || w->shape.etype == NCC_TUPLE || !ncc_etype_is_float(w->shape.etype) ||
		    w->shape.rank < 1)
			continue;
		double scale = 1.0 / sqrt((double)w->shape.dims[w->shape.rank - 1]);
		int64_t n = ncc_shape_elements(&w->shape);
		for (int64_t e = 0; e < n; e++)
			ncc_value_set_f64(w, e, ncc_value_get_f64(w, e) * scale);
	}
	for (int i = 0; i < o->nsets; i++) {
		long p = o->set_param[i];
		if (p >= t->nargs || t->args[p]->shape.etype == NCC_TUPLE) {
			fprintf(stderr, "neuronsim-train: --set %ld: the module has %d array "
				"parameters (0..%d)\n", p, t->nargs, t->nargs - 1);
			return TOOL_EXIT_USAGE;
		}
		int64_t n = ncc_shape_elements(&t->args[p]->shape);
		for (int64_t e = 0; e < n; e++)
			ncc_value_set_f64(t->args[p], e, o->set_value[i]);
	}
	return 0;
}

/* Loads the NEFF, allocates one device tensor per I/O tensor and writes the
 * initial parameters. Aliased outputs are left out of the output set: the
 * runtime then updates their inputs in place. */
static int load(const ncc_compile_result_t *res, train_t *t)
{
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
	if (st == NRT_SUCCESS)
		st = nrt_load(res->neff, res->neff_size, -1, -1, &t->model);
	if (st == NRT_SUCCESS)
		st = nrt_get_model_tensor_info(t->model, &t->info);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&t->in_set);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&t->out_set);
	if (st != NRT_SUCCESS) {
		char buf[160];
		fprintf(stderr, "neuronsim-train: loading the NEFF failed: %s\n",
			tool_status_str(st, buf, sizeof(buf)));
		return TOOL_EXIT_RUNTIME;
	}
	uint64_t n = t->info->tensor_count;
	t->tensors = calloc(n, sizeof(*t->tensors));
	t->out_alias = calloc(n, sizeof(*t->out_alias));
	if (!t->tensors || !t->out_alias)
		return TOOL_EXIT_RUNTIME;
	for (size_t k = 0; k < t->nleaves && k < n; k++)
		t->out_alias[k] = (int32_t)t->leaf_alias[k] + 1;
	for (uint64_t i = 0; i < n; i++) {
		const nrt_tensor_info_t *ti = &t->info->tensor_array[i];
		bool in = ti->usage == NRT_TENSOR_USAGE_INPUT;
		uint32_t k = in ? t->n_in++ : t->n_out++;
		if (!in && t->out_alias[k])
			continue; /* updated in place through its input */
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name,
					 &t->tensors[i]);
		if (st == NRT_SUCCESS)
			st = nrt_add_tensor_to_tensor_set(in ? t->in_set : t->out_set, ti->name,
							  t->tensors[i]);
		if (st == NRT_SUCCESS && in) {
			if (k >= (uint32_t)t->nargs || t->args[k]->nbytes != ti->size) {
				fprintf(stderr, "neuronsim-train: NEFF input '%s' does not match "
					"parameter %u of the module\n", ti->name, k);
				return TOOL_EXIT_INPUT;
			}
			st = nrt_tensor_write(t->tensors[i], t->args[k]->data, 0, ti->size);
		}
		if (st != NRT_SUCCESS) {
			char buf[160];
			fprintf(stderr, "neuronsim-train: tensor '%s': %s\n", ti->name,
				tool_status_str(st, buf, sizeof(buf)));
			return TOOL_EXIT_RUNTIME;
		}
	}
	return 0;
}

/* The device's loss of this step: output leaf k, read back from its tensor, or
 * from the aliased input's tensor when it is updated in place. */
static int device_loss(train_t *t, uint32_t k, double *out)
{
	uint32_t o = 0;
	for (uint64_t i = 0; i < t->info->tensor_count; i++) {
		const nrt_tensor_info_t *ti = &t->info->tensor_array[i];
		if (ti->usage != NRT_TENSOR_USAGE_OUTPUT || o++ != k)
			continue;
		float f;
		if (!t->tensors[i] || ti->size != 4 ||
		    nrt_tensor_read(t->tensors[i], &f, 0, 4) != NRT_SUCCESS)
			return -1;
		*out = ti->dtype == NRT_DTYPE_FLOAT32 ? f : NAN;
		return 0;
	}
	return -1;
}

/* Feeds the interpreter's aliased outputs back as its next parameters. */
static int interp_step(train_t *t, ncc_value_t **out_result)
{
	ncc_error_t err = { 0 };
	if (ncc_interp_run(t->m, (const ncc_value_t *const *)t->args, t->nargs, NULL,
			   out_result, &err) != NCC_OK) {
		fprintf(stderr, "neuronsim-train: interpreter: %s\n", err.msg);
		return -1;
	}
	for (uint32_t k = 0; k < n_leaves(*out_result); k++) {
		int32_t p = t->out_alias[k] - 1;
		if (p < 0)
			continue;
		ncc_value_t *next;
		if (ncc_value_clone(leaf(*out_result, k), &next) != NCC_OK)
			return -1;
		ncc_value_free(t->args[p]);
		t->args[p] = next;
	}
	return 0;
}

static int pick_loss_leaf(const train_opts_t *o, const ncc_value_t *result, uint32_t *out)
{
	for (uint32_t k = 0; k < n_leaves(result); k++) {
		const ncc_value_t *l = leaf(result, k);
		bool scalar = l->shape.etype == NCC_F32 && ncc_shape_elements(&l->shape) == 1;
		if (o->loss_leaf >= 0 ? (long)k == o->loss_leaf : scalar) {
			if (!scalar)
				break;
			*out = k;
			return 0;
		}
	}
	fprintf(stderr, "neuronsim-train: no f32 scalar loss output%s; choose one with "
		"--loss K\n", o->loss_leaf >= 0 ? " at that index" : "");
	return -1;
}

static void train_release(train_t *t)
{
	if (t->info) {
		for (uint64_t i = 0; i < t->info->tensor_count; i++)
			if (t->tensors && t->tensors[i])
				nrt_tensor_free(&t->tensors[i]);
		nrt_free_model_tensor_info(t->info);
	}
	if (t->in_set)
		nrt_destroy_tensor_set(&t->in_set);
	if (t->out_set)
		nrt_destroy_tensor_set(&t->out_set);
	if (t->model)
		nrt_unload(t->model);
	nrt_close();
	if (t->args)
		ncc_interp_free_args(t->args, t->nargs);
	ncc_module_free(t->m);
	free(t->leaf_alias);
	free(t->tensors);
	free(t->out_alias);
}

static int run(const train_opts_t *o, train_t *t, const ncc_compile_result_t *res)
{
	double first = 0, last = 0, max_rel = 0, *dev_us = calloc((size_t)o->steps, sizeof(double));
	double interp_ms = 0;
	uint32_t loss_leaf = 0;
	int rc = TOOL_EXIT_OK;
	if (!dev_us)
		return TOOL_EXIT_RUNTIME;
	for (long s = 0; s < o->steps; s++) {
		uint64_t t0 = ns_monotonic_ns();
		NRT_STATUS st = nrt_execute(t->model, t->in_set, t->out_set);
		uint64_t t1 = ns_monotonic_ns();
		dev_us[s] = (double)(t1 - t0) / 1e3;
		if (st != NRT_SUCCESS) {
			char buf[160];
			fprintf(stderr, "neuronsim-train: step %ld: nrt_execute: %s\n", s,
				tool_status_str(st, buf, sizeof(buf)));
			rc = TOOL_EXIT_EXEC;
			break;
		}
		ncc_value_t *ref = NULL;
		if (interp_step(t, &ref) != 0) {
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		interp_ms += (double)(ns_monotonic_ns() - t1) / 1e6;
		double dev, host;
		if ((s == 0 && pick_loss_leaf(o, ref, &loss_leaf) != 0) ||
		    device_loss(t, loss_leaf, &dev) != 0) {
			ncc_value_free(ref);
			rc = TOOL_EXIT_INPUT;
			break;
		}
		host = ncc_value_get_f64(leaf(ref, loss_leaf), 0);
		ncc_value_free(ref);
		double rel = fabs(dev - host) / fmax(fabs(host), 1e-6);
		max_rel = fmax(max_rel, rel);
		if (s == 0)
			first = dev;
		last = dev;
		if (o->verbose || s == 0 || s == o->steps - 1 || (s + 1) % 5 == 0)
			printf("  step %4ld  loss %.6f  interpreter %.6f  rel diff %.1e  %.1f us\n",
			       s, dev, host, rel, dev_us[s]);
		if (!(rel <= o->tolerance)) {
			fprintf(stderr, "neuronsim-train: step %ld: device loss %.9g differs from "
				"the interpreter's %.9g by %.2e (tolerance %.1e)\n", s, dev, host,
				rel, o->tolerance);
			rc = TOOL_EXIT_EXEC;
			break;
		}
	}
	if (rc == TOOL_EXIT_OK) {
		printf("summary: %ld steps, loss %.6f -> %.6f, max rel diff vs interpreter "
		       "%.1e, device %.1f us/step (p50), interpreter %.2f ms/step; compile "
		       "%.1f ms%s\n", o->steps, first, last, max_rel,
		       ns_quantile(dev_us, (size_t)o->steps, 0.5), interp_ms / (double)o->steps,
		       res->ms_total, res->cache_hit ? " (cache hit)" : "");
		if (!(last < first)) {
			fprintf(stderr, "neuronsim-train: the loss did not fall (%.6f -> %.6f); "
				"check the learning-rate parameter (--set)\n", first, last);
			rc = TOOL_EXIT_EXEC;
		} else {
			printf("PASS: the device matches the reference interpreter at every step "
			       "and the loss falls\n");
		}
	}
	free(dev_us);
	return rc;
}

int main(int argc, char **argv)
{
	train_opts_t o;
	train_t t = { 0 };
	ncc_compile_result_t res = { 0 };
	if (parse_args(argc, argv, &o) != 0)
		return TOOL_EXIT_USAGE;
	int rc = compile(&o, &t, &res);
	if (rc == 0) {
		printf("neuronsim-train: %s: %d parameters, %d aliased, NEFF %zu bytes, "
		       "compiled in %.1f ms%s\n", o.path, t.nargs, t.naliased,
		       res.neff_size, res.ms_total, res.cache_hit ? " (cache hit)" : "");
		rc = load(&res, &t);
	}
	if (rc == 0)
		rc = run(&o, &t, &res);
	train_release(&t);
	ncc_compile_result_release(&res);
	return rc;
}
