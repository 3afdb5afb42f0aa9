/* neuron-profile: runs a NEFF under the profiler (capture), presents its Chrome trace in the Neuron tool's formats (view) or as neuronsim's tables (summary). docs/profiler.md describes the tool. This file is the command line and the dispatch; one file per subcommand: neuron_profile_{capture,view,summary}.c, and reading a trace: neuron_profile_trace.c. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuron_profile.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuron-profile capture -n NEFF -s PROFILE [--ignore-exec-errors] [NAME FILE.npy]...\n"
	"       neuron-profile view -s PROFILE | -d DIR [-n NEFF] [--output-format FORMAT]\n"
	"                           [--output-file FILE] [--top N] [--warmup N]\n"
	"       neuron-profile summary TRACE [--top N] [--warmup N]\n"
	"       neuron-profile --help | --version\n"
	"\n"
	"capture: load NEFF on NeuronCore 0, execute it once with a device and system\n"
	"  trace (nrt_profile_start/stop) and write the trace to PROFILE (Chrome trace\n"
	"  event JSON, gzip when PROFILE ends in .gz). Inputs are all zeros unless given\n"
	"  as NAME FILE.npy pairs; a failed execution is an error unless\n"
	"  --ignore-exec-errors (the profile is written either way).\n"
	"view: read a profile (-s), or every trace under DIR (-d: a capture's or\n"
	"  NEURON_RT_INSPECT_OUTPUT_DIR's), and present it as --output-format:\n"
	"    summary-text  the summary metrics (name value), then the tables below\n"
	"                  (default)\n"
	"    summary-json  the summary metrics as JSON: {\"summary\": [{...}]}\n"
	"    json          the summary and every trace event: {\"summary\": [...],\n"
	"                  \"traceEvents\": [...]}, to --output-file or stdout\n"
	"    perfetto      the trace as Chrome/Perfetto JSON for ui.perfetto.dev, to\n"
	"                  --output-file (default ntff.perfetto.json)\n"
	"  -n NEFF is accepted for the Neuron tool's command lines and checked to be\n"
	"  readable; the trace names the instructions itself.\n"
	"summary TRACE: the tables alone (neuronsim's command; view's summary-text\n"
	"  prints them too):\n"
	"  - the top HLO instructions and the top HLO ops (op_type) by device time, with\n"
	"    their FLOPs and achieved GFLOP/s;\n"
	"  - per core and engine: busy time, the share of the time the core ran jobs,\n"
	"    and the simulator's own busy time for the same jobs;\n"
	"  - the largest idle gaps between two instructions of an engine in one job\n"
	"    (time it waited on another engine).\n"
	"  A trace of several executions (neuron-run -R N --profile) holds each\n"
	"  model's first one, which pays first-touch costs (page faults, kernels\n"
	"  generated on first use): a note says when it took over 1.5x the others'\n"
	"  median, and --warmup N leaves each model's first N executions out.\n"
	"A TRACE or PROFILE is what libnrt writes (nrt_profile_stop, neuron-run\n"
	"--profile, capture, NEURON_RT_INSPECT_ENABLE=1): Chrome trace event JSON,\n"
	"plain or gzip-compressed.\n"
	"\n"
	"Options:\n"
	"  -n, --neff FILE          capture: the NEFF to run; view: accepted, checked\n"
	"  -s, --session-file FILE  the profile to write (capture) or read (view)\n"
	"  -d, --session-dir DIR    view: every trace under DIR\n"
	"      --ignore-exec-errors capture: a failed execution is not an error\n"
	"      --output-format F    view: summary-text, summary-json, json, perfetto\n"
	"      --output-file FILE   view: where json and perfetto go\n"
	"      --top N              rows per table (default 10; summary also takes -n N)\n"
	"      --warmup N           the tables leave out each model's first N\n"
	"                           executions (default 0)\n"
	"  -h, --help               show this help\n"
	"      --version            print the version and exit\n"
	"\n"
	"Exit status: 0 success; 1 capture's execution failed; 2 bad command line; 3 the\n"
	"NEFF, an input or the trace cannot be read; 4 the runtime failed; 5 an output\n"
	"file could not be written.\n";

/* An option's integer value in lo..hi; false (with a message naming the
 * option) otherwise. */
static bool parse_int(const char *opt, const char *arg, long lo, long hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		fprintf(stderr, "neuron-profile: %s wants an integer in %ld..%ld, got '%s'\n", opt, lo,
			hi, arg);
		return false;
	}
	*out = (int)v;
	return true;
}

static bool parse_top(const char *arg, int *out)
{
	return parse_int("--top", arg, 1, 100000, out);
}

enum { OPT_IGNORE_EXEC = 0x200, OPT_FORMAT, OPT_OUTPUT, OPT_TOP, OPT_WARMUP };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, OPT_TOP },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "neff", required_argument, NULL, 'n' },
		{ "neff-path", required_argument, NULL, 'n' },
		{ "session-file", required_argument, NULL, 's' },
		{ "session-dir", required_argument, NULL, 'd' },
		{ "ignore-exec-errors", no_argument, NULL, OPT_IGNORE_EXEC },
		{ "output-format", required_argument, NULL, OPT_FORMAT },
		{ "output-file", required_argument, NULL, OPT_OUTPUT },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int top = 10, warmup = 0;
	bool have_warmup = false;
	const char *cmd = NULL, *neff = NULL, *session = NULL, *dir = NULL, *format = NULL, *output = NULL;
	bool ignore = false;
	char **operands = calloc((size_t)argc + 1, sizeof(*operands));
	int n_operands = 0;
	if (!operands) {
		fprintf(stderr, "neuron-profile: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	/* Options anywhere; the operands are the command and its arguments. */
	while (optind < argc) {
		int c = getopt_long(argc, argv, "+n:s:d:h", longopts, NULL);
		if (c == -1) {
			const char *arg = argv[optind++];
			if (!cmd)
				cmd = arg;
			else
				operands[n_operands++] = (char *)arg;
			continue;
		}
		switch (c) {
		case TOOL_OPT_VERSION: free(operands); return tool_print_version("neuron-profile", NULL);
		case 'h': fputs(usage_text, stdout); free(operands); return 0;
		case 'n': neff = optarg; break;
		case 's': session = optarg; break;
		case 'd': dir = optarg; break;
		case OPT_IGNORE_EXEC: ignore = true; break;
		case OPT_FORMAT: format = optarg; break;
		case OPT_OUTPUT: output = optarg; break;
		case OPT_TOP:
			if (!parse_top(optarg, &top))
				goto usage;
			break;
		case OPT_WARMUP:
			if (!parse_int("--warmup", optarg, 0, 1000000000, &warmup))
				goto usage;
			have_warmup = true;
			break;
		default: goto usage;
		}
	}
	int rc;
	if (!cmd) {
		fprintf(stderr, "neuron-profile: missing command (capture, view or summary)\n");
		goto usage;
	} else if (strcmp(cmd, "summary") == 0) {
		/* neuronsim's command: -n is --top here, as before capture/view existed */
		if (neff && !parse_top(neff, &top))
			goto usage;
		if (!n_operands) {
			fprintf(stderr, "neuron-profile: summary needs a TRACE file\n");
			goto usage;
		}
		if (n_operands > 1) {
			fprintf(stderr, "neuron-profile: unexpected argument '%s' (one trace file)\n", operands[1]);
			goto usage;
		}
		if (session || dir || format || output || ignore) {
			fprintf(stderr, "neuron-profile: summary takes one TRACE file, --top N and --warmup N "
				"(-s, -d, --output-* and --ignore-exec-errors are capture's and view's)\n");
			goto usage;
		}
		rc = nprof_summary(operands[0], top, warmup);
	} else if (strcmp(cmd, "capture") == 0) {
		if (!neff || !session) {
			fprintf(stderr, "neuron-profile: capture needs -n NEFF and -s PROFILE\n");
			goto usage;
		}
		if (have_warmup) {
			fprintf(stderr, "neuron-profile: --warmup is view's and summary's (capture "
				"executes once)\n");
			goto usage;
		}
		if (n_operands % 2 || dir || format || output) {
			fprintf(stderr, "neuron-profile: capture's inputs are NAME FILE.npy pairs%s\n",
				dir || format || output ? "; -d, --output-format and --output-file are view's" : "");
			goto usage;
		}
		capture_opts_t co = { neff, session, ignore, operands, n_operands / 2 };
		rc = nprof_capture(&co);
	} else if (strcmp(cmd, "view") == 0) {
		if (n_operands || ignore) {
			fprintf(stderr, "neuron-profile: view takes no operands and no --ignore-exec-errors: name "
				"the profile with -s PROFILE or -d DIR\n");
			goto usage;
		}
		view_opts_t vo = { neff, session, dir, format ? format : "summary-text", output, top,
				   warmup };
		rc = nprof_view(&vo);
	} else {
		fprintf(stderr, "neuron-profile: unknown command '%s' (capture, view or summary)\n", cmd);
		goto usage;
	}
	free(operands);
	return rc;
usage:
	free(operands);
	fprintf(stderr, "Try 'neuron-profile --help'.\n");
	return TOOL_EXIT_USAGE;
}
