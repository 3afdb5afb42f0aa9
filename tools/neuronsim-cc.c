/* neuronsim-cc: the compiler's command line (compile HLO text to a NEFF through the compile cache; analyze operator support). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ncc/ncc.h"
#include "neuronsim/fs.h"
#include "tool_common.h"

/* Exit codes (docs/compiler-cli.md). 2, 3 and 5 mean what they mean for the other
 * neuronsim tools (docs/tools.md). */
enum {
	CC_EXIT_OK = 0,
	CC_EXIT_INTERNAL = 1,    /* out of memory or a compiler bug */
	CC_EXIT_USAGE = 2,       /* bad command line */
	CC_EXIT_INPUT = 3,       /* unreadable input, malformed HLO, verifier error */
	CC_EXIT_OUTPUT = 5,      /* the NEFF or report could not be written */
	CC_EXIT_UNSUPPORTED = 6, /* valid HLO the back end does not support */
};

static const char usage_text[] =
	"Usage:\n"
	"  neuronsim-cc compile IN.hlo [-o OUT.neff] [-O0|-O1|-O2] [--dump-ir DIR]\n"
	"                       [--cores N] [--cache-dir DIR] [--no-cache] [-v]\n"
	"  neuronsim-cc analyze IN.hlo [-o REPORT.json] [--analyze-verbosity N]\n"
	"  neuronsim-cc --help | --version\n"
	"\n"
	"Compiles XLA HLO text (as dumped by XLA_FLAGS=--xla_dump_to) into a NEFF for the\n"
	"neuronsim runtime, or reports which operators of a module are supported.\n"
	"\n"
	"compile options:\n"
	"  -o, --output FILE       NEFF to write (default: IN with .neff instead of .hlo,\n"
	"                          in the current directory)\n"
	"  -O0                     op by op, one instruction stream, no optimisation passes\n"
	"  -O1, -O2                optimisation passes, engines run concurrently\n"
	"                          (default -O2)\n"
	"  --dump-ir DIR           write the IR after each pass into DIR, created if\n"
	"                          missing (skips the cache lookup so the dumps are\n"
	"                          always produced)\n"
	"  --cores N               NeuronCores of the NEFF, 1..64 (default 1)\n"
	"  --cache-dir DIR         persistent compile cache in DIR (overrides\n"
	"                          NEURON_CC_FLAGS=\"--cache_dir=DIR\")\n"
	"  --no-cache              neither read nor write the compile cache\n"
	"  -v, --verbose           debug lines: stages, timings, cache decisions\n"
	"\n"
	"analyze options:\n"
	"  -o, --output FILE       write the JSON report to FILE (default: stdout)\n"
	"  --analyze-verbosity N   2 (default): aten operators only; 1: also the HLO\n"
	"                          instructions (\"xla\" lists)\n"
	"\n"
	"Environment:\n"
	"  NEURON_CC_FLAGS         \"--cache_dir=DIR\" enables the compile cache in DIR;\n"
	"                          other flags in it are ignored (listed with -v)\n"
	"\n"
	"Exit status: 0 success; 1 internal error or out of memory; 2 bad command line;\n"
	"3 unreadable or malformed HLO (FILE:LINE:COL: error: ...); 5 the output (NEFF,\n"
	"report, --dump-ir directory) could not be written; 6 an instruction or type is\n"
	"unsupported (the message names the instruction, its type and its source line).\n"
	"analyze exits 0 when the report was written, whether or not operators are\n"
	"unsupported.\n";

enum {
	OPT_DUMP_IR = 256,
	OPT_CORES,
	OPT_CACHE_DIR,
	OPT_NO_CACHE,
	OPT_ANALYZE_VERBOSITY,
	OPT_VERSION,
	OPT_HELP,
};

static const struct option long_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"dump-ir", required_argument, NULL, OPT_DUMP_IR},
	{"cores", required_argument, NULL, OPT_CORES},
	{"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
	{"no-cache", no_argument, NULL, OPT_NO_CACHE},
	{"analyze-verbosity", required_argument, NULL, OPT_ANALYZE_VERBOSITY},
	{"verbose", no_argument, NULL, 'v'},
	{"version", no_argument, NULL, OPT_VERSION},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "neuronsim-cc: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'neuronsim-cc --help'.\n");
	return CC_EXIT_USAGE;
}

static int exit_code_for(ncc_status_t st)
{
	switch (st) {
	case NCC_OK:
		return CC_EXIT_OK;
	case NCC_ERR_PARSE:
	case NCC_ERR_VERIFY:
	case NCC_ERR_IO:
	case NCC_ERR_LIMIT:
		return CC_EXIT_INPUT;
	case NCC_ERR_UNSUPPORTED:
		return CC_EXIT_UNSUPPORTED;
	default:
		return CC_EXIT_INTERNAL;
	}
}

/* Messages with a source position already read "FILE:LINE:COL: error: ..." (the
 * form editors and CI log parsers understand); the rest get the tool's name. */
static void print_error(const ncc_error_t *err, ncc_status_t st)
{
	const char *msg = err->msg[0] ? err->msg : ncc_status_name(st);
	if (strstr(msg, ": error: "))
		fprintf(stderr, "%s\n", msg);
	else
		fprintf(stderr, "neuronsim-cc: error: %s\n", msg);
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* IN.hlo -> IN.neff in the current directory (basename only), as compilers do. */
static void default_output(const char *in, char *buf, size_t size)
{
	const char *base = strrchr(in, '/');
	base = base ? base + 1 : in;
	size_t n = strlen(base);
	const char *dot = strrchr(base, '.');
	if (dot && dot != base)
		n = (size_t)(dot - base);
	snprintf(buf, size, "%.*s.neff", (int)n, base);
}

static int cmd_compile(const char *in, const char *out_path, const ncc_driver_options_t *o)
{
	if (o->compile.dump_dir && ns_mkdir_p(o->compile.dump_dir, 0777) != 0) {
		fprintf(stderr, "neuronsim-cc: error: cannot create the --dump-ir directory '%s': %s\n",
			o->compile.dump_dir, strerror(errno));
		return CC_EXIT_OUTPUT;
	}
	char defout[PATH_MAX];
	if (!out_path) {
		default_output(in, defout, sizeof(defout));
		out_path = defout;
	}
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	ncc_status_t st = ncc_compile_file(in, o, &r, &err);
	if (st != NCC_OK) {
		print_error(&err, st);
		return exit_code_for(st);
	}
	st = ncc_write_file(out_path, r.neff, r.neff_size, &err);
	if (st != NCC_OK) {
		print_error(&err, st);
		ncc_compile_result_release(&r);
		return CC_EXIT_OUTPUT;
	}
	if (o->verbose)
		fprintf(stderr, "neuronsim-cc: debug: wrote %s (%zu bytes) in %.2f ms%s\n", out_path,
			r.neff_size, r.ms_total, r.cache_hit ? " from the compile cache" : "");
	ncc_compile_result_release(&r);
	return CC_EXIT_OK;
}

static int cmd_analyze(const char *in, const char *out_path, int verbosity)
{
	ncc_error_t err = {0};
	ncc_module_t *m = NULL;
	ncc_status_t st = ncc_parse_hlo_file(in, &m, &err);
	if (st == NCC_OK)
		st = ncc_verify(m, &err);
	if (st != NCC_OK) {
		print_error(&err, st);
		ncc_module_free(m);
		return exit_code_for(st);
	}
	char *json = NULL;
	ncc_analyze_summary_t sum;
	st = ncc_analyze_module(m, verbosity, &json, &sum, &err);
	ncc_module_free(m);
	if (st != NCC_OK) {
		print_error(&err, st);
		return exit_code_for(st);
	}
	int rc = CC_EXIT_OK;
	if (out_path) {
		st = ncc_write_file(out_path, json, strlen(json), &err);
		if (st != NCC_OK) {
			print_error(&err, st);
			rc = CC_EXIT_OUTPUT;
		} else {
			fprintf(stderr,
				"neuronsim-cc: analyze: %s of %lld HLO instructions supported; report "
				"written to %s\n",
				sum.percentage, (long long)sum.total, out_path);
		}
	} else if (fputs(json, stdout) == EOF || fflush(stdout) != 0) {
		fprintf(stderr, "neuronsim-cc: error: cannot write the report to stdout: %s\n",
			strerror(errno));
		rc = CC_EXIT_OUTPUT;
	}
	free(json);
	return rc;
}

int main(int argc, char **argv)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	const char *out_path = NULL;
	long verbosity = NCC_ANALYZE_VERBOSITY_DEFAULT;
	bool seen_compile_only = false, seen_analyze_only = false;

	/* GNU getopt permutes, so options may come before or after the operands
	 * ("compile IN.hlo -o OUT.neff"); -O2 is -O with argument 2. */
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":o:O:vh", long_opts, NULL)) != -1) {
		long v;
		switch (c) {
		case 'o':
			out_path = optarg;
			break;
		case 'O':
			if (!parse_int(optarg, 0, 3, &v))
				return usage_error("invalid optimisation level '-O%s' (use -O0, -O1 or -O2)",
						   optarg);
			o.compile.opt_level = v > 2 ? 2 : (int)v;
			seen_compile_only = true;
			break;
		case OPT_DUMP_IR:
			o.compile.dump_dir = optarg;
			seen_compile_only = true;
			break;
		case OPT_CORES:
			if (!parse_int(optarg, 1, 64, &v))
				return usage_error("invalid --cores '%s' (a number from 1 to 64)", optarg);
			o.compile.n_cores = (uint32_t)v;
			seen_compile_only = true;
			break;
		case OPT_CACHE_DIR:
			o.cache_dir = optarg;
			seen_compile_only = true;
			break;
		case OPT_NO_CACHE:
			o.no_cache = true;
			seen_compile_only = true;
			break;
		case OPT_ANALYZE_VERBOSITY:
			if (!parse_int(optarg, 0, 2, &v))
				return usage_error("invalid --analyze-verbosity '%s' (1 or 2)", optarg);
			verbosity = v;
			seen_analyze_only = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		case OPT_VERSION: {
			/* The compiler's own version keys the compile cache. */
			char ncc[128];
			snprintf(ncc, sizeof(ncc), "compiler %s", ncc_version());
			return tool_print_version("neuronsim-cc", ncc);
		}
		case 'h':
		case OPT_HELP:
			fputs(usage_text, stdout);
			return CC_EXIT_OK;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}

	const char *const *operands = (const char *const *)argv + optind;
	int nops = argc - optind;
	if (nops == 0)
		return usage_error("%s", "missing command: 'compile' or 'analyze'");
	const char *cmd = operands[0];
	bool is_compile = strcmp(cmd, "compile") == 0;
	bool is_analyze = strcmp(cmd, "analyze") == 0;
	if (!is_compile && !is_analyze)
		return usage_error("unknown command '%s' (use 'compile' or 'analyze')", cmd);
	if (nops < 2)
		return usage_error("%s: missing input file IN.hlo", cmd);
	if (nops > 2)
		return usage_error("too many input files (one IN.hlo per run; got '%s' too)",
				   operands[2]);
	if (is_compile && seen_analyze_only)
		return usage_error("%s", "--analyze-verbosity is an option of 'analyze'");
	if (is_analyze && seen_compile_only)
		return usage_error("%s",
				   "-O, --dump-ir, --cores and the cache options belong to 'compile'");
	if (is_compile)
		return cmd_compile(operands[1], out_path, &o);
	return cmd_analyze(operands[1], out_path, (int)verbosity);
}
