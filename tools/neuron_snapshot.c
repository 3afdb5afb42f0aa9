/* neuron-snapshot: shows what an HLO snapshot file holds (info), exports its
 * tensors as a numpy .npz (export), and replays it on the device and the
 * reference interpreter, naming the first instruction that produced a NaN
 * (replay). docs/snapshot.md describes the file and the tool. This file is the
 * dispatch; one file per subcommand: neuron_snapshot_{info,export,replay}.c. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "neuron_snapshot.h"
#include "tool_common.h"

const char nsnap_usage_text[] =
	"Usage: neuron-snapshot COMMAND FILE [options]\n"
	"Inspect, export and replay neuronsim HLO snapshot files (.snap).\n"
	"\n"
	"Commands:\n"
	"  info FILE [-j]              what the file holds: metadata, the error record,\n"
	"                              the HLO module, every tensor with dtype, shape,\n"
	"                              size and checksum; -j, --json prints it as JSON\n"
	"  export FILE --npz OUT.npz   write every tensor to a numpy .npz archive, one\n"
	"                              ROLE_NAME.npy member per tensor (np.load(OUT)\n"
	"                              ['input_input0']); options:\n"
	"      --bf16 f32|raw          bf16 tensors as float32 (default, exact) or as\n"
	"                              their raw 16-bit patterns ('<V2', view them with\n"
	"                              .view(np.uint16) or ml_dtypes.bfloat16)\n"
	"      -z, --compress          deflate the members (np.savez_compressed style)\n"
	"  replay FILE [options]       compile the embedded HLO, run it on the recorded\n"
	"                              inputs on the device and on the reference\n"
	"                              interpreter, compare both with each other and with\n"
	"                              the recorded outputs, and name the first HLO\n"
	"                              instruction that produced a NaN or an Inf; options:\n"
	"      -O, --opt-level N       compiler optimisation level 0..2 (default 2, the\n"
	"                              compiler's default; use the level the model was\n"
	"                              compiled with to get the same fused names)\n"
	"      -t, --tolerance R[,A]   relative (and absolute) float tolerance (default:\n"
	"                              the interpreter's whole-module tolerance per dtype)\n"
	"      -v, --verbose           also print the matching outputs\n"
	"  -h, --help                  show this help\n"
	"      --version               print the version and exit\n"
	"\n"
	"Exit status: 0 success (replay: device, interpreter and recorded outputs agree\n"
	"and hold no NaN or Inf); 1 replay: an output differs, the device execution\n"
	"failed, the reference interpreter ran past NEURON_RT_EXEC_TIMEOUT (default 30 s,\n"
	"0: none), or a NaN or Inf was reproduced; 2 bad command line; 3 unreadable,\n"
	"corrupt or unreplayable snapshot (no HLO, HLO that does not compile, inputs that\n"
	"do not match it); 4 runtime error; 5 the output file could not be written.\n";

int nsnap_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "neuron-snapshot: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'neuron-snapshot --help'.\n");
	return TOOL_EXIT_USAGE;
}

snapshot_t *nsnap_load(const char *path)
{
	snapshot_t *s = NULL;
	ns_status_t st = snapshot_read(path, &s);
	if (st) {
		fprintf(stderr, "neuron-snapshot: %s\n", ns_status_message(st));
		ns_status_free(st);
		return NULL;
	}
	return s;
}

/* The name after "HloModule" in the text, "" when there is none. */
void nsnap_hlo_module_name(const char *text, size_t len, char *out, size_t out_len)
{
	out[0] = '\0';
	const char *p = text, *end = text + len;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if ((size_t)(end - p) > 10 && memcmp(p, "HloModule", 9) == 0 &&
		    (p[9] == ' ' || p[9] == '\t')) {
			p += 10;
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			size_t n = 0;
			while (p + n < end && n + 1 < out_len && p[n] != ' ' && p[n] != ',' &&
			       p[n] != '\n' && p[n] != '\r' && p[n] != '\t')
				n++;
			memcpy(out, p, n);
			out[n] = '\0';
			return;
		}
		while (p < end && *p != '\n')
			p++;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return nsnap_usage_error("%s", "missing COMMAND (info, export or replay)");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(nsnap_usage_text, stdout);
		return TOOL_EXIT_OK;
	}
	if (!strcmp(cmd, "--version"))
		return tool_print_version("neuron-snapshot", NULL);
	/* getopt from the command's own arguments */
	optind = 1;
	if (!strcmp(cmd, "info"))
		return nsnap_cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return nsnap_cmd_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "replay"))
		return nsnap_cmd_replay(argc - 1, argv + 1);
	return nsnap_usage_error("unknown command '%s' (info, export or replay)", cmd);
}

