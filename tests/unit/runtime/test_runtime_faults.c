/* SQLite-style fault injection for libnrt: the n-th host allocation fails, for n = 1, 2, ... until the call succeeds. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "rt_fixture.h"
#include "rt_alloc_fault.h"
#include "test_neffs.h"

/* Allocation failures come from rt_alloc_fault (the test is linked with
 * -Wl,--wrap for malloc, calloc, realloc, aligned_alloc and posix_memalign). */

static uint64_t in_use(void)
{
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	return u.in_use;
}

START_TEST(test_init_survives_every_allocation_failure)
{
	test_env_default();
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	for (long n = 1;; n++) {
		rt_alloc_fault_arm(n);
		NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
		int fired = rt_alloc_fault_disarm();
		if (st == NRT_SUCCESS) {
			nrt_close();
			if (!fired)
				break;
			continue; /* the failure hit something optional */
		}
		ck_assert_msg(st == NRT_RESOURCE || st == NRT_FAILURE, "n=%ld: status %d", n, st);
		/* and a clean retry works */
		ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
		nrt_close();
		ck_assert_int_lt(n, 100000);
	}
}
END_TEST

START_TEST(test_load_and_execute_survive_every_allocation_failure)
{
	test_env_default();
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	size_t sz;
	void *neff = test_neff_const_scratch(&sz);
	uint64_t base = in_use();
	nrt_model_t *m = NULL;
	long n;
	for (n = 1;; n++) {
		rt_alloc_fault_arm(n);
		NRT_STATUS st = nrt_load(neff, sz, -1, 2, &m);
		int fired = rt_alloc_fault_disarm();
		if (st == NRT_SUCCESS) {
			if (!fired)
				break;
			ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
			m = NULL;
			continue;
		}
		ck_assert_msg(st == NRT_RESOURCE, "load n=%ld: status %d", n, st);
		ck_assert_ptr_null(m);
		ck_assert_uint_eq(in_use(), base);
	}
	ck_assert_int_gt(n, 3); /* the loop did inject failures */

	float x[4] = { 1, 2, 3, 4 }, y[4];
	nrt_tensor_t *tx = NULL, *ty = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 16, "x", &tx), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "y", &ty), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(tx, x, 0, 16), NRT_SUCCESS);
	nrt_tensor_set_t *in, *out;
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in, "x", tx), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(out, "y", ty), NRT_SUCCESS);
	uint64_t with_tensors = in_use();
	for (n = 1;; n++) {
		rt_alloc_fault_arm(n);
		NRT_STATUS st = nrt_execute(m, in, out);
		int fired = rt_alloc_fault_disarm();
		if (st == NRT_SUCCESS && !fired)
			break;
		ck_assert_msg(st == NRT_SUCCESS || st == NRT_RESOURCE, "execute n=%ld: status %d", n, st);
		ck_assert_uint_eq(in_use(), with_tensors);
		ck_assert_int_lt(n, 100000);
	}
	ck_assert_int_eq(nrt_tensor_read(ty, y, 0, 16), NRT_SUCCESS);
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(y[i], 2 * (x[i] + (float)(i + 1)));

	for (n = 1;; n++) {
		nrt_tensor_info_array_t *info = NULL;
		nrt_tensor_t *t = NULL, *s = NULL;
		rt_alloc_fault_arm(n);
		NRT_STATUS a = nrt_get_model_tensor_info(m, &info);
		NRT_STATUS b = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t);
		NRT_STATUS c = b ? NRT_RESOURCE : nrt_tensor_allocate_slice(t, 0, 32, "s", &s);
		int fired = rt_alloc_fault_disarm();
		ck_assert(a == NRT_SUCCESS || (a == NRT_RESOURCE && !info));
		ck_assert(b == NRT_SUCCESS || (b == NRT_RESOURCE && !t));
		ck_assert(c == NRT_SUCCESS || (c == NRT_RESOURCE && !s));
		nrt_free_model_tensor_info(info);
		nrt_tensor_free(&s);
		nrt_tensor_free(&t);
		ck_assert_uint_eq(in_use(), with_tensors);
		if (!fired)
			break;
	}
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&ty);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	ck_assert_uint_eq(in_use(), base);
	free(neff);
	nrt_close();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime_faults");
	TCase *tc = tcase_create("faults");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_init_survives_every_allocation_failure);
	tcase_add_test(tc, test_load_and_execute_survive_every_allocation_failure);
	suite_add_tcase(s, tc);
	return rt_suite_run(s);
}
