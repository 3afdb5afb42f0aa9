/* neuronsim-demo (`make demo`): trains a small MLP on the embedded device with
 * one NEFF per training step and checks every step against a host reference. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_mlp_neff.h"
#include "neuronsim/atomic_file.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuronsim-demo [options]\n"
	"Train a 64-128-10 MLP (relu, softmax cross-entropy, SGD, batch 32) on a fixed\n"
	"synthetic dataset. Each step is one NEFF execution on the embedded device that\n"
	"updates the weights in place; the same step runs on the host in plain C and\n"
	"the two losses must agree at every step.\n"
	"\n"
	"Options:\n"
	"  -n, --steps N        training steps (default 50)\n"
	"  -s, --seed N         seed of the dataset and initial weights (default 1)\n"
	"  -t, --tolerance T    largest allowed |device loss - host loss| (default 1e-4)\n"
	"  -w, --write-neff F   also write the training-step NEFF to file F (it runs\n"
	"                       with neuron-run too)\n"
	"  -v, --verbose        print every step\n"
	"  -h, --help           show this help\n"
	"      --version        print the version and exit\n"
	"\n"
	"Exit status: 0 losses agree and the loss fell; 1 a loss differs from the host\n"
	"reference by more than T, the loss did not fall, or an execution failed;\n"
	"2 bad command line; 4 runtime error (init, load, allocation, tensor I/O);\n"
	"5 the --write-neff file could not be written.\n";

typedef struct demo_opts {
	long steps;
	uint64_t seed;
	double tolerance;
	const char *neff_path;
	bool verbose;
} demo_opts_t;

typedef struct demo_state {
	nrt_model_t *model;
	nrt_tensor_t *t[DEMO_MLP_N_INPUTS + 1]; /* inputs, then loss */
	nrt_tensor_set_t *in_set, *out_set;
	float *x, *y;
	double *step_us;
	demo_mlp_params_t host, dev;
	bool nrt_up;
} demo_state_t;

static int parse_args(int argc, char **argv, demo_opts_t *o)
{
	static const struct option longopts[] = {
		{ "steps", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "tolerance", required_argument, NULL, 't' },
		{ "write-neff", required_argument, NULL, 'w' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (demo_opts_t){ .steps = 50, .seed = 1, .tolerance = 1e-4 };
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "n:s:t:w:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->steps = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->steps < 2 || o->steps > 1000000) {
				fprintf(stderr, "neuronsim-demo: --steps wants 2..1000000, got '%s'\n", optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 's':
			o->seed = strtoull(optarg, &end, 0);
			if (*end || end == optarg) {
				fprintf(stderr, "neuronsim-demo: --seed wants an integer, got '%s'\n", optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 't':
			o->tolerance = strtod(optarg, &end);
			if (*end || end == optarg || !(o->tolerance > 0)) {
				fprintf(stderr, "neuronsim-demo: --tolerance wants a positive number, got '%s'\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'w': o->neff_path = optarg; break;
		case 'v': o->verbose = true; break;
		case TOOL_OPT_VERSION: exit(tool_print_version("neuronsim-demo", NULL));
		case 'h': fputs(usage_text, stdout); exit(TOOL_EXIT_OK);
		default:
			fprintf(stderr, "Try 'neuronsim-demo --help'.\n");
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "neuronsim-demo: unexpected argument '%s'\nTry 'neuronsim-demo --help'.\n",
			argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	return TOOL_EXIT_OK;
}

static int alloc_params(const demo_mlp_config_t *c, demo_mlp_params_t *p)
{
	p->w1 = malloc((size_t)c->in * c->hidden * sizeof(float));
	p->b1 = malloc((size_t)c->hidden * sizeof(float));
	p->w2 = malloc((size_t)c->hidden * c->classes * sizeof(float));
	p->b2 = malloc((size_t)c->classes * sizeof(float));
	return p->w1 && p->b1 && p->w2 && p->b2 ? 0 : -1;
}

static void free_params(demo_mlp_params_t *p)
{
	free(p->w1); free(p->b1); free(p->w2); free(p->b2);
}

static void demo_release(demo_state_t *s)
{
	if (s->in_set)
		nrt_destroy_tensor_set(&s->in_set);
	if (s->out_set)
		nrt_destroy_tensor_set(&s->out_set);
	for (size_t i = 0; i < sizeof(s->t) / sizeof(s->t[0]); i++)
		if (s->t[i])
			nrt_tensor_free(&s->t[i]);
	if (s->model)
		nrt_unload(s->model);
	if (s->nrt_up)
		nrt_close();
	free(s->x);
	free(s->y);
	free(s->step_us);
	free_params(&s->host);
	free_params(&s->dev);
}

static float max_abs_diff(const float *a, const float *b, size_t n)
{
	float m = 0.0f;
	for (size_t i = 0; i < n; i++)
		m = fmaxf(m, fabsf(a[i] - b[i]));
	return m;
}

#define CHECK_NRT(call, what)                                                         \
	do {                                                                          \
		NRT_STATUS st_ = (call);                                              \
		if (st_ != NRT_SUCCESS) {                                             \
			fprintf(stderr, "neuronsim-demo: %s failed: %s\n", what,      \
				tool_status_str(st_, sbuf, sizeof(sbuf)));            \
			return TOOL_EXIT_RUNTIME;                                     \
		}                                                                     \
	} while (0)

static int demo_run(const demo_opts_t *o, demo_state_t *s)
{
	const demo_mlp_config_t cfg = demo_mlp_default_config();
	char err[512], sbuf[256];
	const size_t B = cfg.batch, I = cfg.in, H = cfg.hidden, C = cfg.classes;

	s->x = malloc(B * I * sizeof(float));
	s->y = malloc(B * C * sizeof(float));
	if (!s->x || !s->y || alloc_params(&cfg, &s->host) || alloc_params(&cfg, &s->dev)) {
		fprintf(stderr, "neuronsim-demo: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	demo_mlp_init(&cfg, o->seed, s->x, s->y, &s->host);

	void *neff;
	size_t neff_size;
	uint64_t b0 = ns_monotonic_ns();
	ns_status_t bst = demo_mlp_neff_build(&cfg, &neff, &neff_size);
	if (bst) {
		fprintf(stderr, "neuronsim-demo: %s\n", ns_status_message(bst));
		ns_status_free(bst);
		return TOOL_EXIT_RUNTIME;
	}
	uint64_t build_ns = ns_monotonic_ns() - b0;
	if (o->neff_path) {
		const char *step;
		if (atomic_file_write_whole(o->neff_path, neff, neff_size, ATOMIC_FILE_MODE_UMASK,
					    &step) != 0) {
			fprintf(stderr, "neuronsim-demo: cannot write the NEFF to %s: %s\n",
				o->neff_path, strerror(errno));
			free(neff);
			return TOOL_EXIT_OUTPUT;
		}
	}

	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		free(neff);
		fprintf(stderr, "neuronsim-demo: nrt_init failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		return TOOL_EXIT_RUNTIME;
	}
	s->nrt_up = true;
	st = nrt_load(neff, neff_size, 0, 1, &s->model);
	free(neff);
	if (st != NRT_SUCCESS) {
		s->model = NULL;
		fprintf(stderr, "neuronsim-demo: loading the MLP NEFF failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		return TOOL_EXIT_RUNTIME;
	}

	/* One device tensor per input; each weight tensor is also given as the
	 * output that aliases it, so the step updates it in place on the device. */
	const size_t bytes[DEMO_MLP_N_INPUTS + 1] = { B * I * 4, B * C * 4, I * H * 4, H * 4,
						      H * C * 4, C * 4, 4 };
	const void *init[DEMO_MLP_N_INPUTS] = { s->x, s->y, s->host.w1, s->host.b1,
						s->host.w2, s->host.b2 };
	CHECK_NRT(nrt_allocate_tensor_set(&s->in_set), "allocating the input set");
	CHECK_NRT(nrt_allocate_tensor_set(&s->out_set), "allocating the output set");
	for (int i = 0; i <= DEMO_MLP_N_INPUTS; i++) {
		const char *name = i < DEMO_MLP_N_INPUTS ? demo_mlp_input_names[i] : "loss";
		snprintf(err, sizeof(err), "allocating tensor %s (%zu bytes)", name, bytes[i]);
		CHECK_NRT(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes[i], name,
					      &s->t[i]), err);
		if (i < DEMO_MLP_N_INPUTS) {
			snprintf(err, sizeof(err), "writing tensor %s", name);
			CHECK_NRT(nrt_tensor_write(s->t[i], init[i], 0, bytes[i]), err);
			CHECK_NRT(nrt_add_tensor_to_tensor_set(s->in_set, name, s->t[i]),
				  "adding an input to the set");
		}
	}
	CHECK_NRT(nrt_add_tensor_to_tensor_set(s->out_set, "loss", s->t[DEMO_MLP_N_INPUTS]),
		  "adding loss to the output set");
	for (int i = 1; i < DEMO_MLP_N_OUTPUTS; i++)
		CHECK_NRT(nrt_add_tensor_to_tensor_set(s->out_set, demo_mlp_output_names[i],
						       s->t[1 + i]),
			  "adding an in-place weight output to the set");

	printf("neuronsim-demo: MLP %zu-%zu-%zu, batch %zu, lr %g, %ld steps, NEFF %zu bytes (built in %.2f ms)\n",
	       I, H, C, B, (double)cfg.lr, o->steps, neff_size, (double)build_ns / 1e6);

	double *step_us = s->step_us = calloc((size_t)o->steps, sizeof(double));
	if (!step_us) {
		fprintf(stderr, "neuronsim-demo: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	float first = 0.0f, last = 0.0f, worst = 0.0f;
	long worst_step = 0;
	int rc = TOOL_EXIT_OK;
	for (long k = 0; k < o->steps; k++) {
		float host_loss = demo_mlp_host_step(&cfg, s->x, s->y, &s->host);
		uint64_t e0 = ns_monotonic_ns();
		st = nrt_execute(s->model, s->in_set, s->out_set);
		step_us[k] = (double)(ns_monotonic_ns() - e0) / 1e3;
		if (st != NRT_SUCCESS) {
			nrt_neuronsim_exec_error_t rec;
			fprintf(stderr, "neuronsim-demo: step %ld: nrt_execute failed: %s\n", k,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			if (nrt_neuronsim_get_last_error(s->model, &rec) == NRT_SUCCESS &&
			    rec.message[0])
				fprintf(stderr, "neuronsim-demo: %s\n", rec.message);
			rc = TOOL_EXIT_EXEC;
			break;
		}
		float dev_loss = NAN;
		if ((st = nrt_tensor_read(s->t[DEMO_MLP_N_INPUTS], &dev_loss, 0, 4)) != NRT_SUCCESS) {
			fprintf(stderr, "neuronsim-demo: step %ld: reading the loss failed: %s\n", k,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		float d = fabsf(dev_loss - host_loss);
		if (!(d <= worst)) { /* also catches NaN */
			worst = isnan(d) ? INFINITY : d;
			worst_step = k;
		}
		if (k == 0)
			first = dev_loss;
		last = dev_loss;
		if (o->verbose || k == 0 || k == o->steps - 1 || (k + 1) % 10 == 0)
			printf("  step %4ld  loss %.6f  host %.6f  |diff| %.2e  %.1f us\n", k,
			       (double)dev_loss, (double)host_loss, (double)d, step_us[k]);
		if (!(d <= o->tolerance)) {
			fprintf(stderr,
				"neuronsim-demo: step %ld: device loss %.7f differs from the host reference %.7f by %.2e (tolerance %.1e)\n",
				k, (double)dev_loss, (double)host_loss, (double)d, o->tolerance);
			rc = TOOL_EXIT_EXEC;
			break;
		}
	}

	if (rc == TOOL_EXIT_OK) {
		/* The weights too: they went through o->steps in-place updates. */
		float wdiff = 0.0f;
		void *dst[4] = { s->dev.w1, s->dev.b1, s->dev.w2, s->dev.b2 };
		const float *ref[4] = { s->host.w1, s->host.b1, s->host.w2, s->host.b2 };
		for (int i = 0; i < 4; i++) {
			CHECK_NRT(nrt_tensor_read(s->t[2 + i], dst[i], 0, bytes[2 + i]),
				  "reading back the weights");
			wdiff = fmaxf(wdiff, max_abs_diff(dst[i], ref[i], bytes[2 + i] / 4));
		}
		double p50 = ns_quantile(step_us, (size_t)o->steps, 0.5);
		printf("summary: %ld steps, loss %.6f -> %.6f, max |device-host| loss %.2e (step %ld), "
		       "weights %.2e, %.1f us/step (p50)\n",
		       o->steps, (double)first, (double)last, (double)worst, worst_step,
		       (double)wdiff, p50);
		if (!(last < first)) {
			fprintf(stderr, "neuronsim-demo: the loss did not fall (%.6f -> %.6f)\n",
				(double)first, (double)last);
			rc = TOOL_EXIT_EXEC;
		} else if (!(wdiff <= 1e-3f)) {
			fprintf(stderr, "neuronsim-demo: device weights differ from the host reference by %.2e\n",
				(double)wdiff);
			rc = TOOL_EXIT_EXEC;
		} else {
			printf("PASS: the device matches the host reference and the loss falls\n");
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	demo_opts_t o;
	int rc = parse_args(argc, argv, &o);
	if (rc != TOOL_EXIT_OK)
		return rc;
	demo_state_t s = { 0 };
	rc = demo_run(&o, &s);
	demo_release(&s);
	return rc;
}
