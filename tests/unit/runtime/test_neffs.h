/* NEFFs built with the NEFF builder for the runtime tests, and small test helpers. */
#ifndef TEST_NEFFS_H
#define TEST_NEFFS_H

#include <stddef.h>
#include <stdint.h>

/* Each returns a malloc'd NEFF (free with free()) and its size, or aborts. */

/* out = a + b, f32[n]; debug "add.3"/"add"/"model.py":10. */
void *test_neff_add(uint64_t n, size_t *out_size);
/* y[m,n] = x[m,k] @ w[k,n], f32. */
void *test_neff_matmul(uint64_t m, uint64_t k, uint64_t n, size_t *out_size);
/* y = sqrt(x), f32[n]; debug "sqrt.7"/"sqrt"/"train.py":42. */
void *test_neff_sqrt(uint64_t n, size_t *out_size);
/* y = x + x with the output pattern starting past the end of y (f32[4]):
 * an out-of-window write. Debug "add.9"/"add"/"oob.py":7. */
void *test_neff_oob(size_t *out_size);
/* w_out = w - g, f32[n]; w_out aliases input w (in-place update). */
void *test_neff_sgd(uint64_t n, size_t *out_size);
/* y = 2 * (x + c) with c = {1, 2, 3, 4} in constants and x + c kept in
 * scratch: f32[4]. */
void *test_neff_const_scratch(size_t *out_size);
/* A gpsimd jump to itself: never finishes (for the timeout). */
void *test_neff_spin(size_t *out_size);
/* y = x + x over 2^33 f32 elements, x and y f32[1] seen through stride 0:
 * one vector instruction, about a minute of host time (issue #11, item 2). */
void *test_neff_huge_alu(size_t *out_size);
/* y = x @ x as s32 [n, n] x [n, n], x and y s32[1] seen through stride 0:
 * n^3 multiply-adds in one tensor instruction. */
void *test_neff_huge_matmul(uint64_t n, size_t *out_size);
/* out = a + b, f32[n], for a NEFF with n_cores cores (each core does it). */
void *test_neff_add_cores(uint64_t n, uint32_t n_cores, size_t *out_size);

/* y = x * x, f32[n], by a FUSED instruction the vector engine runs iters
 * times while the DMA engine loops rewriting the descriptor's n_code in
 * device memory (0xFFFF, then back to 1) until the vector engine is done. */
void *test_neff_fused_race(uint64_t n, uint32_t iters, size_t *out_size);

/* Standard environment for tests: small device memory, 1 device x 4 cores,
 * visible/num cores unset, log level ERROR. */
void test_env_default(void);

/* Redirects stderr into a temporary file until test_capture_end, which
 * returns what was written (malloc'd, NUL-terminated). */
void test_capture_begin(void);
char *test_capture_end(void);

#endif /* TEST_NEFFS_H */
