/* Guest benchmark: nrt_execute round trip on the kernel backend vs the embedded backend, in one process; prints the ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "nsim_kb_test.h"
#include "test_neffs.h"

#define N_ELEMS 256
#define WARMUP 20

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median round trip of one nrt_execute of a small add on backend, in
 * seconds; < 0 on failure. */
static double bench_backend(const char *backend, int iters)
{
	setenv("NEURONSIM_BACKEND", backend, 1);
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
		printf("bench: nrt_init on the %s backend failed\n", backend);
		return -1;
	}
	size_t sz;
	void *neff = test_neff_add(N_ELEMS, &sz);
	nrt_model_t *m = NULL;
	NRT_STATUS st = nrt_load(neff, sz, 0, 1, &m);
	free(neff);
	nrt_tensor_t *t[3] = { 0 };
	const char *names[3] = { "a", "b", "out" };
	nrt_tensor_set_t *in = NULL, *out = NULL;
	nrt_allocate_tensor_set(&in);
	nrt_allocate_tensor_set(&out);
	for (int i = 0; i < 3 && st == NRT_SUCCESS; i++) {
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, N_ELEMS * 4, names[i], &t[i]);
		if (st == NRT_SUCCESS)
			nrt_add_tensor_to_tensor_set(i < 2 ? in : out, names[i], t[i]);
	}
	double *lat = malloc(sizeof(double) * (size_t)iters);
	double med = -1;
	for (int i = 0; i < WARMUP + iters && st == NRT_SUCCESS && lat; i++) {
		double t0 = now_s();
		st = nrt_execute(m, in, out);
		if (i >= WARMUP)
			lat[i - WARMUP] = now_s() - t0;
	}
	if (st == NRT_SUCCESS && lat) {
		qsort(lat, (size_t)iters, sizeof(double), cmp_double);
		med = lat[iters / 2];
		printf("bench: %-8s backend: nrt_execute round trip median %8.1f us, p10 %8.1f us, "
		       "p90 %8.1f us (%d runs)\n", nrt_neuronsim_backend_name(), med * 1e6,
		       lat[iters / 10] * 1e6, lat[iters * 9 / 10] * 1e6, iters);
	} else {
		printf("bench: %s backend: failed with status %d\n", backend, st);
	}
	free(lat);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	for (int i = 0; i < 3; i++)
		nrt_tensor_free(&t[i]);
	if (m)
		nrt_unload(m);
	nrt_close();
	return med;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 300;
	if (iters < 10)
		iters = 10;
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("NEURONSIM_DEVICE_MEMORY", "64M", 1);
	setenv("NEURON_RT_NUM_CORES", "1", 1);
	double emb = bench_backend("embedded", iters);
	double ker = bench_backend("kernel", iters);
	if (emb <= 0 || ker <= 0)
		return 1;
	printf("bench: kernel/embedded nrt_execute round-trip ratio %.2f (emulated guest: only the "
	       "ratio means anything)\n", ker / emb);
	return 0;
}
