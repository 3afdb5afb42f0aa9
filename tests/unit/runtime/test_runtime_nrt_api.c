/* Check tests of the Neuron Runtime calls beyond execution: status names, instance and model info, per-core memory, batched tensor I/O, and an SDK-style client program. */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_status.h"
#include "nrt/nrt_sys_trace.h"
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
	/* Another core of the device: its own use, the same limit. */
	nrt_vnc_memory_stats_t st3;
	ck_assert_int_eq(nrt_get_vnc_memory_stats(3, &st3, sizeof(st3), &n), NRT_SUCCESS);
	ck_assert_uint_lt(st3.bytes_used, 1 << 20);
	ck_assert_uint_eq(st3.bytes_limit, st.bytes_limit);
	/* A model loaded on core 3 is charged to core 3 (code, constants). */
	size_t sz;
	void *neff = test_neff_add(4, &sz);
	nrt_model_t *m;
	size_t before3 = st3.bytes_used;
	ck_assert_int_eq(nrt_load(neff, sz, 3, -1, &m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(3, &st3, sizeof(st3), &n), NRT_SUCCESS);
	ck_assert_uint_gt(st3.bytes_used, before3);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_vnc_memory_stats(3, &st3, sizeof(st3), &n), NRT_SUCCESS);
	ck_assert_uint_eq(st3.bytes_used, before3);
	free(neff);
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

/* ---- the system trace API ---- */

/* Fetches with o, parses, checks the shape and returns the root. */
static json_t *fetch_json(const nrt_sys_trace_fetch_options_t *o)
{
	char *buf = NULL;
	size_t n = 0;
	ck_assert_int_eq(nrt_sys_trace_fetch_events(&buf, &n, o), NRT_SUCCESS);
	ck_assert_uint_eq(n, strlen(buf));
	json_error_t err;
	json_t *root = json_loads(buf, 0, &err);
	ck_assert_msg(root != NULL, "fetched JSON does not parse: %s: %s", err.text, buf);
	nrt_sys_trace_buffer_free(buf);
	ck_assert(json_is_array(json_object_get(root, "events")));
	ck_assert(json_is_object(json_object_get(root, "dropped")));
	return root;
}

static json_t *event_at(json_t *root, size_t i)
{
	return json_array_get(json_object_get(root, "events"), i);
}

START_TEST(test_sys_trace_capture_and_fetch)
{
	test_env_default();
	char *buf = NULL;
	size_t n;
	ck_assert_int_eq(nrt_sys_trace_fetch_events(&buf, &n, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_sys_trace_stop(), NRT_INVALID);
	const char **types;
	size_t count;
	ck_assert_int_eq(nrt_sys_trace_get_event_types(&types, &count), NRT_SUCCESS);
	ck_assert_uint_eq(count, 4);
	ck_assert_str_eq(types[0], "nrt_execute");
	ck_assert_str_eq(types[2], "nrta_compute");
	nrt_sys_trace_free_event_types(types, count);

	nrt_sys_trace_config_t *cfg;
	ck_assert_int_eq(nrt_sys_trace_config_allocate(&cfg), NRT_SUCCESS);
	nrt_sys_trace_config_set_max_events_per_nc(cfg, 3);
	nrt_sys_trace_config_set_capture_enabled_for_nc(cfg, 2, false);
	ck_assert_int_eq(nrt_sys_trace_config_set_capture_enabled_for_event_type(cfg, "nrta_tensor_op", false),
			 NRT_SUCCESS);
	ck_assert_int_eq(nrt_sys_trace_config_set_capture_enabled_for_event_type(cfg, "bogus", false), NRT_INVALID);
	ck_assert_int_eq(nrt_sys_trace_config_get_enabled_event_types(cfg, &types, &count), NRT_SUCCESS);
	ck_assert_uint_eq(count, 3);
	ck_assert_str_eq(types[1], "nrta_compute");
	nrt_sys_trace_free_event_types(types, count);

	rt_init_ok();
	size_t sz;
	void *neff = test_neff_add(16, &sz);
	nrt_model_t *m0, *m2;
	ck_assert_int_eq(nrt_load(neff, sz, 0, -1, &m0), NRT_SUCCESS);
	ck_assert_int_eq(nrt_load(neff, sz, 2, -1, &m2), NRT_SUCCESS);
	nrt_tensor_t *t[6];
	const char *names[3] = { "a", "b", "out" };
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, i < 3 ? 0 : 2, 64, names[i % 3], &t[i]),
				 NRT_SUCCESS);
	nrt_tensor_set_t *in0 = rt_tensor_set_of(2, "a", t[0], "b", t[1]), *out0 = rt_tensor_set_of(1, "out", t[2]);
	nrt_tensor_set_t *in2 = rt_tensor_set_of(2, "a", t[3], "b", t[4]), *out2 = rt_tensor_set_of(1, "out", t[5]);

	ck_assert_int_eq(nrt_sys_trace_start(cfg), NRT_SUCCESS);
	ck_assert_int_eq(nrt_sys_trace_start(cfg), NRT_INVALID);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(nrt_execute(m0, in0, out0), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(m2, in2, out2), NRT_SUCCESS); /* core 2: not captured */
	nrt_sys_trace_fetch_options_t *fo;
	ck_assert_int_eq(nrt_sys_trace_fetch_options_allocate(&fo), NRT_SUCCESS);
	nrt_sys_trace_fetch_options_set_nc_idx(fo, 0);
	json_t *root = fetch_json(fo);
	/* The ring keeps the 3 newest; 2 were overwritten. */
	ck_assert_uint_eq(json_array_size(json_object_get(root, "events")), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *e = event_at(root, i);
		ck_assert_str_eq(json_string_value(json_object_get(e, "type")), "nrt_execute");
		ck_assert_str_eq(json_string_value(json_object_get(e, "label")), "add");
		ck_assert_int_eq(json_integer_value(json_object_get(e, "nc")), 0);
		ck_assert_int_eq(json_integer_value(json_object_get(e, "value")), (json_int_t)(2 + i));
		ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 0);
		ck_assert_int_le(json_integer_value(json_object_get(e, "start_ns")),
				 json_integer_value(json_object_get(e, "end_ns")));
	}
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "dropped"), "0")), 2);
	json_decref(root);
	root = fetch_json(NULL); /* fetched events are not returned again */
	ck_assert_uint_eq(json_array_size(json_object_get(root, "events")), 0);
	ck_assert_uint_eq(json_object_size(json_object_get(root, "dropped")), 0);
	json_decref(root);

	/* An async execution: its nrt_execute and its COMPUTE request; the
	 * disabled TENSOR_OP type leaves the write out. */
	NRT_STATUS r, wr;
	nrta_seq_t seq, wseq;
	ck_assert_int_eq(nrta_execute_schedule(m0, in0, out0, 0, &r, &seq), NRT_SUCCESS);
	float one = 1;
	ck_assert_int_eq(nrta_tensor_write(t[0], &one, 0, 4, 0, &wr, &wseq), NRT_SUCCESS);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
	bool done = false;
	while (!done)
		ck_assert_int_eq(nrta_is_completed(wseq, &done), NRT_SUCCESS);
	root = fetch_json(NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "events")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(event_at(root, 0), "type")), "nrt_execute");
	ck_assert_int_eq(json_integer_value(json_object_get(event_at(root, 0), "value")), 5);
	json_t *c = event_at(root, 1);
	ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "nrta_compute");
	ck_assert_str_eq(json_string_value(json_object_get(c, "name")), "nrta_execute_schedule");
	ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(c, "value")), seq);
	json_decref(root);

	/* At most max_events_per_nc per fetch, oldest first. */
	ck_assert_int_eq(nrt_execute(m0, in0, out0), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(m0, in0, out0), NRT_SUCCESS);
	nrt_sys_trace_fetch_options_set_defaults(fo);
	nrt_sys_trace_fetch_options_set_max_events_per_nc(fo, 1);
	for (int i = 0; i < 2; i++) {
		root = fetch_json(fo);
		ck_assert_uint_eq(json_array_size(json_object_get(root, "events")), 1);
		ck_assert_int_eq(json_integer_value(json_object_get(event_at(root, 0), "value")), 6 + i);
		json_decref(root);
	}
	nrt_sys_trace_fetch_options_free(fo);
	ck_assert_int_eq(nrt_sys_trace_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_sys_trace_fetch_events(&buf, &n, NULL), NRT_INVALID);
	nrt_sys_trace_config_free(cfg);
	nrt_destroy_tensor_set(&in0);
	nrt_destroy_tensor_set(&out0);
	nrt_destroy_tensor_set(&in2);
	nrt_destroy_tensor_set(&out2);
	for (int i = 0; i < 6; i++)
		nrt_tensor_free(&t[i]);
	ck_assert_int_eq(nrt_unload(m0), NRT_SUCCESS);
	ck_assert_int_eq(nrt_unload(m2), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

/* A program written from the SDK documentation builds against include/nrt
 * and runs: sdk_client.c. */
START_TEST(test_sdk_client_program)
{
	test_env_default();
	size_t sz;
	void *neff = test_neff_add(64, &sz);
	char dir[64], err[512] = "";
	rt_tmpdir_create(dir, sizeof(dir), "nrt-sdk-client");
	int rc = sdk_client_run(neff, sz, dir, err, sizeof(err));
	ck_assert_msg(rc == 0, "SDK client: %s", err);
	free(neff);
	/* Its inspection, in the Neuron Runtime's layout. */
	char host[256], path[1024];
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	snprintf(path, sizeof(path), "%s/inspect/%s_pid_%ld/ntrace_session_0.json.gz", dir, host, (long)getpid());
	ck_assert_msg(access(path, R_OK) == 0, "no %s", path);
	snprintf(path, sizeof(path), "%s/trace.json", dir); /* its nrt_trace_stop */
	ck_assert_msg(access(path, R_OK) == 0, "no %s", path);
	ck_assert_int_eq(rt_tmpdir_remove(dir), 0);
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
	tc = tcase_create("sys_trace");
	tcase_add_test(tc, test_sys_trace_capture_and_fetch);
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
