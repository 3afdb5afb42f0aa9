/* Shared helpers of the NEFF unit tests: sample NEFFs built with the builder
 * and re-checksumming, so corruption tests reach the structural checks. */
#ifndef NEFF_TEST_UTIL_H
#define NEFF_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>

#include "neuronsim/neff.h"

/* Like ck_assert, but also usable outside a running test (Check's asserts
 * are not): suite set-up builds sample NEFFs too. */
#define NTU_REQUIRE(cond)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: required: %s\n", __FILE__,   \
				__LINE__, #cond);                             \
			abort();                                              \
		}                                                             \
	} while (0)

/* NTU_REQUIRE for a call that returns a status: prints its message. */
#define NTU_REQUIRE_OK(call)                                                  \
	do {                                                                  \
		ns_status_t ntu_st_ = (call);                                 \
		if (ntu_st_) {                                                \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#call, ns_status_message(ntu_st_));           \
			abort();                                              \
		}                                                             \
	} while (0)

/* What ntu_build_sample() puts in: the round-trip test checks every field. */
#define NTU_MODEL_NAME "sample-mlp"
#define NTU_HLO_TEXT "HloModule sample\nENTRY main { ROOT p = f32[4,8] parameter(0) }\n"
#define NTU_N_CORES 2u
#define NTU_N_TENSORS 4u
#define NTU_N_DEBUG 3u
#define NTU_SCRATCH_SIZE 4160u

/* A NEFF with every section: 2 cores, 4 tensors (one output aliases an
 * input), constants, scratch, 3 debug entries (shared strings), HLO text and
 * instructions on several engines of both cores. Caller frees. */
void *ntu_build_sample(size_t *out_size);

/* The smallest useful NEFF: 1 core, 1 tensor, one NOP, no optional sections. */
void *ntu_build_small(size_t *out_size);

/* Recomputes header.checksum from the (possibly corrupted) header fields, as a
 * careless or malicious writer would; out-of-range fields are clamped. */
void ntu_rechecksum(void *data, size_t size);

/* Parses a private exact-size copy, so ASan sees any read past size. */
ns_status_code_t ntu_parse_copy(const void *data, size_t size, char *err, size_t err_len);

#endif
