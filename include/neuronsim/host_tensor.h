/* Host buffers of ISA dtypes, for whoever prints or fills one outside the
 * device (the tools' inputs and messages, tests): a dtype and shape as text,
 * and a seeded random fill from the splitmix64 stream. */
#ifndef NEURONSIM_HOST_TENSOR_H
#define NEURONSIM_HOST_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "f32[32,64]" (isa_dtype_name, then the dims) into buf, truncated to len;
 * returns buf. */
const char *ns_host_describe(isa_dtype_t dt, uint32_t rank, const uint64_t *shape, char *buf,
			     size_t len);

/* Fills count elements of dtype dt at dst from the splitmix64 stream *state:
 * floats uniform in [-1, 1) (24 random bits, rounded to bf16/f16), signed
 * ints in [-8, 8), unsigned in [0, 16), pred 0/1. The same state gives the
 * same bytes on every machine. Other dtypes: nothing is written. */
void ns_host_fill_random(isa_dtype_t dt, void *dst, uint64_t count, uint64_t *state);

#ifdef __cplusplus
}
#endif

#endif /* NEURONSIM_HOST_TENSOR_H */
