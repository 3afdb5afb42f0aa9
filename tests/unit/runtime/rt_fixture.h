/* Fixtures shared by the runtime (and neuron-profile) Check tests: running a
 * suite, nrt_init, tensor sets and per-test temporary directories. */
#ifndef RT_FIXTURE_H
#define RT_FIXTURE_H

#include <check.h>
#include <stddef.h>

#include "nrt/nrt.h"

/* Runs every test of s (which it frees) and returns the process exit status:
 * EXIT_SUCCESS when none failed. */
int rt_suite_run(Suite *s);

/* nrt_init(NO_FW) in the environment as it is; fails the test otherwise. */
void rt_init_ok(void);

/* test_env_default() then rt_init_ok(). */
void rt_init_default_ok(void);

/* A new tensor set holding n (name, tensor) pairs given as const char *,
 * nrt_tensor_t * arguments. The set does not own the tensors; the caller
 * destroys it with nrt_destroy_tensor_set(). Fails the test on error. */
nrt_tensor_set_t *rt_tensor_set_of(int n, ...);

/* An ADD model (test_neff_add: out = a + b, f32) loaded with its three
 * tensors and the tensor sets in = {a, b}, outs = {out}. Everything in it is
 * owned by it and released by rt_add_model_free(). */
typedef struct rt_add_model {
	void *neff; /* malloc'd NEFF */
	size_t size;
	nrt_model_t *m; /* NULL when not loaded */
	nrt_tensor_t *a, *b, *out;
	nrt_tensor_set_t *in, *outs;
} rt_add_model_t;

/* Builds f->in and f->outs from f->a, f->b and f->out; fails the test on error. */
void rt_add_model_sets(rt_add_model_t *f);

/* Destroys the sets, frees the tensors, unloads the model when loaded (which
 * must succeed) and frees the NEFF. */
void rt_add_model_free(rt_add_model_t *f);

/* Creates a fresh directory /tmp/<prefix>-XXXXXX and writes its path into
 * dir[len]; fails the test if it cannot. */
void rt_tmpdir_create(char *dir, size_t len, const char *prefix);

/* Removes dir and everything below it (without following links). Returns 0,
 * or -1 when something could not be removed (errno says why). */
int rt_tmpdir_remove(const char *dir);

/* "dir/name" in one of four static buffers used in turn: valid until the
 * fourth call after this one. */
const char *rt_tmpdir_path(const char *dir, const char *name);

#endif /* RT_FIXTURE_H */
