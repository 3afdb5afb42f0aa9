/* Small helpers shared by the command-line tools: exit codes, NRT status
 * names, the NRT dtype of an ISA one, --version. What is not tool-specific
 * (describing and filling host tensors, quantiles) is common's:
 * neuronsim/host_tensor.h, neuronsim/quantile.h. */
#ifndef NEURONSIM_TOOLS_TOOL_COMMON_H
#define NEURONSIM_TOOLS_TOOL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/clock.h"
#include "neuronsim/host_tensor.h"
#include "neuronsim/isa.h"
#include "neuronsim/quantile.h"
#include "nrt/nrt.h"

/* Exit codes shared by the tools (docs/tools.md). */
enum {
	TOOL_EXIT_OK = 0,
	TOOL_EXIT_EXEC = 1,    /* nrt_execute failed, or the demo's check failed */
	TOOL_EXIT_USAGE = 2,   /* bad command line */
	TOOL_EXIT_INPUT = 3,   /* unreadable/mismatched NEFF or .npy input */
	TOOL_EXIT_RUNTIME = 4, /* nrt_init, nrt_load, allocation or tensor I/O failed */
	TOOL_EXIT_OUTPUT = 5,  /* writing an output file failed */
};

/* "NRT_INVALID" for NRT_INVALID; "NRT_STATUS_<n>" style text for unknown values
 * is left to the caller: returns NULL then. */
const char *tool_status_name(NRT_STATUS st);

/* Formats "NAME (number): description" into buf and returns buf. */
const char *tool_status_str(NRT_STATUS st, char *buf, size_t len);

/* The isa dtype with the same element encoding as an NRT dtype, or
 * ISA_DT_INVALID. */
isa_dtype_t tool_dtype_from_nrt(nrt_dtype_t dt);

/* A tool's start on a NEFF file: reads it (64-byte aligned, for nrt_load)
 * and calls nrt_init. TOOL_EXIT_OK with *out_neff for the caller to free
 * (and nrt_close to call), or, after printing "prog: why" on stderr,
 * TOOL_EXIT_INPUT (unreadable file) or TOOL_EXIT_RUNTIME (nrt_init failed;
 * the bytes are freed). */
int tool_open_neff(const char *prog, const char *path, void **out_neff, size_t *out_size);

/* getopt_long value of --version (long only: -v and -V mean other things in
 * some tools). */
#define TOOL_OPT_VERSION 0x100

/* Prints the GNU-style version text of tool prog ("neuron-ls (neuronsim)
 * 0.1.0", then the formats it speaks) on stdout for --version; every tool's
 * --version calls it, and the man pages (help2man) are made from it. extra, if
 * not NULL, is one more line (a component's own version). Returns
 * TOOL_EXIT_OK. Defined in tool_version.c: tools that do not link libnrt
 * (neuron-top, neuron-monitor, neuron-profile, neuronsim-cc) use it too. */
int tool_print_version(const char *prog, const char *extra);

#endif /* NEURONSIM_TOOLS_TOOL_COMMON_H */
