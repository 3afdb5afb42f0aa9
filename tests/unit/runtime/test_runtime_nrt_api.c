/* Check tests of the Neuron Runtime calls beyond execution: status names, instance and model info, per-core memory, batched tensor I/O, and an SDK-style client program. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_status.h"
#include "rt_fixture.h"
#include "sdk_client.h"
#include "test_neffs.h"

/* Every NRT_STATUS value of the SDK's nrt_status.h (2.x), by name. */
START_TEST(test_status_values_match_the_sdk)
{
	static const struct { NRT_STATUS st; int v; } sdk[] = {
		{ NRT_SUCCESS, 0 }, { NRT_FAILURE, 1 }, { NRT_INVALID, 2 }, { NRT_INVALID_HANDLE, 3 },
		{ NRT_RESOURCE, 4 }, { NRT_TIMEOUT, 5 }, { NRT_HW_ERROR, 6 }, { NRT_QUEUE_FULL, 7 },
		{ NRT_LOAD_NOT_ENOUGH_NC, 9 }, { NRT_UNSUPPORTED_NEFF_VERSION, 10 },
		{ NRT_FAIL_HOST_MEM_ALLOC, 11 }, { NRT_UNINITIALIZED, 13 }, { NRT_CLOSED, 14 },
		{ NRT_QUEUE_EMPTY, 15 }, { NRT_EXEC_UNIT_UNRECOVERABLE, 101 }, { NRT_EXEC_BAD_INPUT, 1002 },
		{ NRT_EXEC_COMPLETED_WITH_NUM_ERR, 1003 }, { NRT_EXEC_COMPLETED_WITH_ERR, 1004 },
		{ NRT_EXEC_NC_BUSY, 1005 }, { NRT_EXEC_OOB, 1006 }, { NRT_COLL_PENDING, 1100 },
		{ NRT_EXEC_HW_ERR_COLLECTIVES, 1200 }, { NRT_EXEC_HW_ERR_HBM_UE, 1201 },
		{ NRT_EXEC_HW_ERR_NC_UE, 1202 }, { NRT_EXEC_HW_ERR_DMA_ABORT, 1203 },
		{ NRT_EXEC_SW_NQ_OVERFLOW, 1204 }, { NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE, 1205 },
		{ NRT_NETWORK_PROXY_FAILURE, 1206 },
	};
	for (size_t i = 0; i < sizeof(sdk) / sizeof(sdk[0]); i++) {
		ck_assert_int_eq((int)sdk[i].st, sdk[i].v);
		ck_assert_str_ne(nrt_get_status_as_str(sdk[i].st), "Unknown status");
	}
	/* The old name of 101 still builds and means the same. */
	ck_assert_int_eq(NRT_EXEC_UNIT_DISABLED, NRT_EXEC_UNIT_UNRECOVERABLE);
	ck_assert_ptr_nonnull(strstr(nrt_get_status_as_str(NRT_EXEC_UNIT_UNRECOVERABLE), "nrecoverable"));
	ck_assert_int_eq(NRT_INSTANCE_TRN1, 2);
	ck_assert_int_eq(NRT_INSTANCE_TRN3PDS98, 15);
	ck_assert_int_eq(NRT_INSTANCE_SIZE_3XL, 8);
	ck_assert_int_eq(NRT_INSTANCE_SIZE_NUM, 9);
	ck_assert_int_eq(NRT_OP_INVALID, 0xF);
	ck_assert_int_eq(NRT_CC_REDUCESCATTER, 2);
	ck_assert_uint_eq(sizeof(nrt_tensor_batch_op_t), 24);
	ck_assert_uint_eq(sizeof(nrt_instance_info_t), 32);
}
END_TEST

START_TEST(test_instance_info)
{
	test_env_default();
	nrt_instance_info_t info;
	memset(&info, 0x55, sizeof(info));
	ck_assert_int_eq(nrt_get_instance_info(&info, sizeof(info)), NRT_SUCCESS); /* before nrt_init */
	ck_assert_uint_eq(info.family, NRT_INSTANCE_TRN1);
	ck_assert_uint_eq(info.size, NRT_INSTANCE_SIZE_2XL);
	ck_assert_str_eq(info.arch_name, "trn1");
	ck_assert_str_eq(info.device_revision, "sim");
	/* An older, shorter struct: only its bytes are written. */
	nrt_instance_info_t small;
	memset(&small, 0x55, sizeof(small));
	ck_assert_int_eq(nrt_get_instance_info(&small, 8), NRT_SUCCESS);
	ck_assert_uint_eq(small.family, NRT_INSTANCE_TRN1);
	ck_assert_uint_eq((uint8_t)small.arch_name[0], 0x55);
	ck_assert_int_eq(nrt_get_instance_info(NULL, sizeof(info)), NRT_INVALID);
	ck_assert_int_eq(nrt_get_instance_info(&info, 0), NRT_INVALID);
	setenv("NEURONSIM_NUM_DEVICES", "2", 1);
	rt_init_ok();
	ck_assert_int_eq(nrt_get_instance_info(&info, sizeof(info)), NRT_SUCCESS);
	ck_assert_uint_eq(info.size, NRT_INSTANCE_SIZE_UNKNOWN); /* no trn1 has 2 devices */
	nrt_close();
}
END_TEST

START_TEST(test_vnc_memory_stats_follow_allocations)
{
	nrt_vnc_memory_stats_t st;
	size_t n = 0;
	NRT_STATUS uninit = nrt_get_vnc_memory_stats(0, &st, sizeof(st), &n);
	ck_assert(uninit == NRT_UNINITIALIZED || uninit == NRT_CLOSED); /* CLOSED with CK_FORK=no */
	rt_init_default_ok();
	ck_assert_int_eq(nrt_get_vnc_memory_stats(1, &st, sizeof(st), &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, sizeof(st));
	/* The device's memory: NEURONSIM_DEVICE_MEMORY on the embedded backend,
	 * the module's parameter on the kernel backend; one device here. */
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_eq(st.bytes_limit, u.total);
	if (strcmp(nrt_neuronsim_backend_name(), "embedded") == 0)
		ck_assert_uint_eq(st.bytes_limit, 256u << 20);
	size_t before = st.bytes_used;
	nrt_tensor_t *t;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 1 << 20, "big", &t), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(1, &st, sizeof(st), &n), NRT_SUCCESS);
	ck_assert_uint_ge(st.bytes_used, before + (1 << 20));
	/* The cores of one device share its memory. */
	nrt_vnc_memory_stats_t st3;
	ck_assert_int_eq(nrt_get_vnc_memory_stats(3, &st3, sizeof(st3), &n), NRT_SUCCESS);
	ck_assert_uint_eq(st3.bytes_used, st.bytes_used);
	nrt_tensor_free(&t);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(1, &st, sizeof(st), &n), NRT_SUCCESS);
	ck_assert_uint_eq(st.bytes_used, before);
	/* A caller built with only the first field. */
	size_t used_only = 0;
	ck_assert_int_eq(nrt_get_vnc_memory_stats(1, (nrt_vnc_memory_stats_t *)&used_only, sizeof(size_t), &n),
			 NRT_SUCCESS);
	ck_assert_uint_eq(n, sizeof(size_t));
	ck_assert_uint_eq(used_only, before);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(4, &st, sizeof(st), &n), NRT_INVALID);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(0, NULL, sizeof(st), &n), NRT_INVALID);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(0, &st, sizeof(st), NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(0, &st, 0, &n), NRT_INVALID);
	nrt_close();
}
END_TEST

START_TEST(test_model_info)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_add(4, &sz);
	nrt_model_t *m;
	ck_assert_int_eq(nrt_load(neff, sz, 2, -1, &m), NRT_SUCCESS);
	nrt_model_info_t info = { .vnc = 99 };
	size_t n = 0;
	ck_assert_int_eq(nrt_get_model_info(m, &info, sizeof(info), &n), NRT_SUCCESS);
	ck_assert_uint_eq(info.vnc, 2);
	ck_assert_uint_eq(n, sizeof(info));
	ck_assert_int_eq(nrt_get_model_info(m, NULL, sizeof(info), &n), NRT_INVALID);
	ck_assert_int_eq(nrt_get_model_info(m, &info, sizeof(info), NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_get_model_info(NULL, &info, sizeof(info), &n), NRT_INVALID);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_model_info(m, &info, sizeof(info), &n), NRT_INVALID_HANDLE);
	free(neff);
	nrt_close();
}
END_TEST

/* Batched reads and writes over several tensors, several ranges each; a bad
 * operation anywhere fails the call before any byte moves. */
START_TEST(test_tensor_batches)
{
	rt_init_default_ok();
	nrt_tensor_t *d, *h;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "d", &d), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 32, "h", &h), NRT_SUCCESS);
	uint8_t p1[16], p2[8], p3[32];
	memset(p1, 0x11, sizeof(p1));
	memset(p2, 0x22, sizeof(p2));
	memset(p3, 0x33, sizeof(p3));
	nrt_tensor_batch_op_t dops[2] = { { 0, 16, p1 }, { 40, 8, p2 } };
	nrt_tensor_batch_op_t hops[1] = { { 0, 32, p3 } };
	nrt_tensor_batch_t w[2] = { { d, dops, 2 }, { h, hops, 1 } };
	ck_assert_int_eq(nrt_tensor_write_batch(w, 2, false), NRT_SUCCESS);
	uint8_t all[64];
	ck_assert_int_eq(nrt_tensor_read(d, all, 0, 64), NRT_SUCCESS);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(all[i], i < 16 ? 0x11 : i >= 40 && i < 48 ? 0x22 : 0);
	uint8_t r1[4], r2[8], r3[2];
	nrt_tensor_batch_op_t rd[2] = { { 14, 4, r1 }, { 40, 8, r2 } }, rh[1] = { { 30, 2, r3 } };
	nrt_tensor_batch_t r[2] = { { d, rd, 2 }, { h, rh, 1 } };
	ck_assert_int_eq(nrt_tensor_read_batch(r, 2, true), NRT_SUCCESS);
	ck_assert_uint_eq(r1[0], 0x11);
	ck_assert_uint_eq(r1[1], 0x11);
	ck_assert_uint_eq(r1[2], 0);
	ck_assert_uint_eq(r2[7], 0x22);
	ck_assert_uint_eq(r3[1], 0x33);
	ck_assert_int_eq(nrt_tensor_read_batch(NULL, 0, false), NRT_SUCCESS);

	/* The last operation of the last batch is out of range: nothing written. */
	uint8_t z[16] = { 0 };
	nrt_tensor_batch_op_t zd[1] = { { 0, 16, z } }, bad[2] = { { 0, 1, z }, { 31, 2, z } };
	nrt_tensor_batch_t wb[2] = { { d, zd, 1 }, { h, bad, 2 } };
	test_capture_begin();
	NRT_STATUS st = nrt_tensor_write_batch(wb, 2, false);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_INVALID);
	ck_assert_ptr_nonnull(strstr(log, "batch 1 op 1"));
	ck_assert_ptr_nonnull(strstr(log, "'h'"));
	free(log);
	ck_assert_int_eq(nrt_tensor_read(d, all, 0, 16), NRT_SUCCESS);
	ck_assert_uint_eq(all[0], 0x11);
	/* NULL buffer, NULL ops, NULL tensor, a freed tensor, NULL batches. */
	nrt_tensor_batch_op_t nb[1] = { { 0, 4, NULL } };
	nrt_tensor_batch_t b1[1] = { { d, nb, 1 } };
	ck_assert_int_eq(nrt_tensor_read_batch(b1, 1, false), NRT_INVALID);
	nrt_tensor_batch_t b2[1] = { { d, NULL, 1 } };
	ck_assert_int_eq(nrt_tensor_read_batch(b2, 1, false), NRT_INVALID);
	nrt_tensor_batch_t b3[1] = { { NULL, rd, 1 } };
	ck_assert_int_eq(nrt_tensor_read_batch(b3, 1, false), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_read_batch(NULL, 1, false), NRT_INVALID);
	nrt_tensor_t *gone;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "gone", &gone), NRT_SUCCESS);
	nrt_tensor_t *stale = gone;
	nrt_tensor_free(&gone);
	nrt_tensor_batch_t b4[2] = { { d, zd, 1 }, { stale, rd, 1 } };
	ck_assert_int_eq(nrt_tensor_write_batch(b4, 2, false), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_tensor_read(d, all, 0, 1), NRT_SUCCESS);
	ck_assert_uint_eq(all[0], 0x11);
	/* A freed tensor after all this is still freeable: no reference leaked. */
	nrt_tensor_free(&d);
	ck_assert_ptr_null(d);
	nrt_tensor_free(&h);
	nrt_close();
	ck_assert_int_eq(nrt_tensor_read_batch(r, 2, false), NRT_CLOSED);
}
END_TEST

/* A program written from the SDK documentation builds against include/nrt
 * and runs: sdk_client.c. */
START_TEST(test_sdk_client_program)
{
	test_env_default();
	size_t sz;
	void *neff = test_neff_add(64, &sz);
	char err[512] = "";
	int rc = sdk_client_run(neff, sz, err, sizeof(err));
	ck_assert_msg(rc == 0, "SDK client: %s", err);
	free(neff);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_nrt_api");
	TCase *tc = tcase_create("info");
	tcase_add_test(tc, test_status_values_match_the_sdk);
	tcase_add_test(tc, test_instance_info);
	tcase_add_test(tc, test_vnc_memory_stats_follow_allocations);
	tcase_add_test(tc, test_model_info);
	suite_add_tcase(s, tc);
	tc = tcase_create("batch");
	tcase_add_test(tc, test_tensor_batches);
	suite_add_tcase(s, tc);
	tc = tcase_create("client");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_sdk_client_program);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
