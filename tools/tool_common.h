/* Small helpers shared by the command-line tools: status names, dtype mapping
 * between the NRT API and .npy files, seeded random fill, timing. */
#ifndef NEURONSIM_TOOLS_TOOL_COMMON_H
#define NEURONSIM_TOOLS_TOOL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/clock.h"
#include "neuronsim/isa.h"
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

/* "f32[32,64]" style description of a dtype and shape. */
const char *tool_describe(isa_dtype_t dt, uint32_t rank, const uint64_t *shape,
			  char *buf, size_t len);

/* Fills count elements of dtype at dst from the splitmix64 stream *state:
 * floats uniform in [-1, 1), signed ints in [-8, 8), unsigned in [0, 16),
 * pred 0/1. The same state gives the same bytes on every machine. */
void tool_fill_random(isa_dtype_t dt, void *dst, uint64_t count, uint64_t *state);

/* Sorts v[0..n) ascending in place and returns the value at quantile q in
 * [0, 1] (nearest rank). 0 when n is 0. */
double tool_quantile(double *v, size_t n, double q);

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
