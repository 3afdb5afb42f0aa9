/* Shared helpers of the guest tests that go through libnrt on the kernel backend (nsim_kb_*.c): EXPECT, a monotonic clock in seconds, reading and polling the device's sysfs, device tensors and the small add model they run (out = a + b on n floats, checked as 2 * i). */
#ifndef NSIM_KB_TEST_H
#define NSIM_KB_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "neuronsim/clock.h"
#include "nrt/nrt.h"
#include "test_neffs.h"

#define KB_SYSFS "/sys/class/neuronsim/neuronsim0"

/* Failed EXPECTs of this program. */
static int failures __attribute__((unused));

#define EXPECT(cond, ...)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
			failures++;                                           \
		}                                                             \
	} while (0)

static inline double now_s(void)
{
	return (double)ns_monotonic_ns() * 1e-9;
}

/* The number in sysfs file rel of the device, -1 when it cannot be read. */
static inline long sysfs_long(const char *rel)
{
	char path[256];
	snprintf(path, sizeof(path), KB_SYSFS "/%s", rel);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Polls rel until it is (want_nonzero ? nonzero : zero); the seconds it took,
 * or -1 after timeout_s. */
static inline double sysfs_wait(const char *rel, int want_nonzero, double timeout_s)
{
	double t0 = now_s(), end = t0 + timeout_s;
	while (now_s() < end) {
		long v = sysfs_long(rel);
		if (v >= 0 && (want_nonzero ? v != 0 : v == 0))
			return now_s() - t0;
		usleep(2000);
	}
	return -1;
}

/* A device tensor on core 0; exits the program when it cannot be allocated. */
static inline nrt_tensor_t *kb_tensor(const char *name, size_t bytes)
{
	nrt_tensor_t *t = NULL;
	if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes, name, &t) != NRT_SUCCESS) {
		printf("FAIL: allocating tensor %s\n", name);
		exit(1);
	}
	return t;
}

typedef struct add_model {
	nrt_model_t *m;
	nrt_tensor_t *a, *b, *out;
	nrt_tensor_set_t *in, *outs;
	uint32_t n;
} add_model_t;

/* Loads the add model of n elements on core 0 with a = b = i; exits the program
 * when it cannot be loaded. */
static inline void kb_add_setup(add_model_t *am, uint32_t n)
{
	size_t sz;
	void *neff = test_neff_add(n, &sz);
	if (nrt_load(neff, sz, 0, 1, &am->m) != NRT_SUCCESS) {
		printf("FAIL: loading the add model\n");
		exit(1);
	}
	free(neff);
	am->n = n;
	am->a = kb_tensor("a", n * 4);
	am->b = kb_tensor("b", n * 4);
	am->out = kb_tensor("out", n * 4);
	float *x = malloc(n * 4);
	for (uint32_t i = 0; i < n; i++)
		x[i] = (float)i;
	nrt_tensor_write(am->a, x, 0, n * 4);
	nrt_tensor_write(am->b, x, 0, n * 4);
	free(x);
	nrt_allocate_tensor_set(&am->in);
	nrt_allocate_tensor_set(&am->outs);
	nrt_add_tensor_to_tensor_set(am->in, "a", am->a);
	nrt_add_tensor_to_tensor_set(am->in, "b", am->b);
	nrt_add_tensor_to_tensor_set(am->outs, "out", am->out);
}

/* Runs the add model and checks out = 2 * i (NRT_FAILURE, with a FAIL line, when not). */
static inline NRT_STATUS kb_add_run(add_model_t *am)
{
	uint32_t n = am->n;
	nrt_tensor_memset(am->out, 0, 0, n * 4);
	NRT_STATUS st = nrt_execute(am->m, am->in, am->outs);
	if (st != NRT_SUCCESS)
		return st;
	float *y = malloc(n * 4);
	nrt_tensor_read(am->out, y, 0, n * 4);
	for (uint32_t i = 0; i < n; i++)
		if (y[i] != 2.0f * (float)i) {
			printf("FAIL: add: out[%u] = %g, expected %g\n", i, y[i], 2.0 * i);
			free(y);
			return NRT_FAILURE;
		}
	free(y);
	return NRT_SUCCESS;
}

static inline void kb_add_free(add_model_t *am)
{
	nrt_destroy_tensor_set(&am->in);
	nrt_destroy_tensor_set(&am->outs);
	nrt_tensor_free(&am->a);
	nrt_tensor_free(&am->b);
	nrt_tensor_free(&am->out);
	nrt_unload(am->m);
}

#endif /* NSIM_KB_TEST_H */
