/* Test helper of the back-end tests: compiles HLO text with ncc_lower_module and runs the NEFF on libfwsim directly (no runtime), inputs and outputs as host buffers. */
#ifndef NCC_TEST_LOWER_RUN_H
#define NCC_TEST_LOWER_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "hlo/ir.h"
#include "options.h"

typedef struct ncc_run {
	uint32_t n_in, n_out;
#define NCC_RUN_MAX_IO 1024
	void *out[NCC_RUN_MAX_IO];        /* malloc'd output buffers (tensor table order) */
	uint64_t out_size[NCC_RUN_MAX_IO];
	uint32_t out_dtype[NCC_RUN_MAX_IO];
	uint64_t in_size[NCC_RUN_MAX_IO];
	uint32_t in_dtype[NCC_RUN_MAX_IO];
	char msg[1200];       /* compile or run error */
	int fwsim_status;
	uint64_t insns;
	uint64_t scratch;
} ncc_run_t;

/* Compiles m (or text when m is NULL) at opt level opt and runs it with inputs
 * (n_in host buffers of the tensor table's sizes; NULL entries are filled from
 * seed with small random values). Returns 0 on success, -1 (msg set) on failure.
 * Free with ncc_run_free. */
int ncc_run_module(const ncc_module_t *m, const char *text, int opt, const void *const *inputs,
		   uint32_t n_inputs, uint64_t seed, ncc_run_t *out);
/* Same with an explicit options struct (opt ignored). */
int ncc_run_module_opts(const ncc_module_t *m, const char *text, const ncc_compile_options_t *o,
			const void *const *inputs, uint32_t n_inputs, uint64_t seed, ncc_run_t *out,
			void **out_inputs);
void ncc_run_free(ncc_run_t *r);

#endif
