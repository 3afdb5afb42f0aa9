/* Tests of backend selection and of the kernel backend's checks; device-dependent cases run where /dev/neuronsim0 exists (the QEMU guest). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_kernel.h"
#include "neuronsim/device.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "test_neffs.h"
#include "uapi/linux/neuronsim.h"

/* The NRT_STATUS of a backend's status; its message is left in buf and the
 * status freed. */
static NRT_STATUS rt_code(ns_status_t st, char *buf, size_t len)
{
	NRT_STATUS nrt = nrt_status_code(st);
	ns_status_consume_message(st, buf, len);
	return nrt;
}
#define RT_CODE(call, buf) rt_code((call), (buf), sizeof(buf))

static int have_device(void)
{
	return access("/dev/neuronsim0", R_OK | W_OK) == 0;
}

START_TEST(test_abi_same_major_is_accepted)
{
	char err[256] = "";
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_check_abi("/dev/neuronsim0", NEURONSIM_ABI_MAJOR,
						      NEURONSIM_ABI_MINOR), err), NRT_SUCCESS);
	/* a newer driver of the same major only adds things */
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_check_abi("/dev/neuronsim0", NEURONSIM_ABI_MAJOR,
						      NEURONSIM_ABI_MINOR + 3), err), NRT_SUCCESS);
	/* an older one down to 1.1 too: what 1.2 adds (the jobs' FLOPs) is
	 * used only when the driver reports NEURONSIM_CAP_RECORD_EXT */
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_check_abi("/dev/neuronsim0", NEURONSIM_ABI_MAJOR,
						      NRT_KB_MIN_ABI_MINOR), err), NRT_SUCCESS);
}
END_TEST

START_TEST(test_abi_older_than_the_minimum_is_refused)
{
	char err[256] = "", want[96];
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_check_abi("/dev/neuronsim0", NEURONSIM_ABI_MAJOR,
						      NRT_KB_MIN_ABI_MINOR - 1), err),
			 NRT_FAILURE);
	snprintf(want, sizeof(want), "driver speaks neuronsim ABI %d.%d, this runtime speaks %d.%d "
		 "(needs %d.%d or a later %d.x)", NEURONSIM_ABI_MAJOR, NRT_KB_MIN_ABI_MINOR - 1,
		 NEURONSIM_ABI_MAJOR, NEURONSIM_ABI_MINOR, NEURONSIM_ABI_MAJOR, NRT_KB_MIN_ABI_MINOR,
		 NEURONSIM_ABI_MAJOR);
	ck_assert_msg(strstr(err, want), "message: %s", err);
}
END_TEST

START_TEST(test_abi_mismatch_names_both_versions)
{
	char err[256] = "", want[64];
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_check_abi("/dev/neuronsim0", NEURONSIM_ABI_MAJOR + 1, 4), err), NRT_FAILURE);
	snprintf(want, sizeof(want), "driver speaks neuronsim ABI %d.4", NEURONSIM_ABI_MAJOR + 1);
	ck_assert_msg(strstr(err, want), "message: %s", err);
	snprintf(want, sizeof(want), "this runtime speaks %d.%d", NEURONSIM_ABI_MAJOR,
		 NEURONSIM_ABI_MINOR);
	ck_assert_msg(strstr(err, want), "message: %s", err);
	ck_assert_msg(strstr(err, "/dev/neuronsim0"), "message: %s", err);
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_check_abi("/dev/neuronsim0", 0, 9), err),
			 NRT_FAILURE);
}
END_TEST

START_TEST(test_open_missing_node_says_what_to_do)
{
	nrt_backend_config_t cfg = { .device_memory = 1u << 20, .cores_per_device = 1 };
	nrt_backend_dev_t *dev = (nrt_backend_dev_t *)0x1;
	char err[256] = "";
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_ops.open(&cfg, 63, &dev), err), NRT_FAILURE);
	ck_assert_ptr_eq(dev, (nrt_backend_dev_t *)0x1);
	/* Without a driver: load it or use the embedded backend; with one: the
	 * driver has fewer devices. */
	const char *hint = access("/dev/neuronsim0", F_OK) == 0 ? "num_devices"
								 : "NEURONSIM_BACKEND=embedded";
	ck_assert_msg(strstr(err, "/dev/neuronsim63") && strstr(err, hint), "message: %s", err);
}
END_TEST

START_TEST(test_unknown_backend_fails_init_with_message)
{
	test_env_default();
	setenv("NEURONSIM_BACKEND", "gpu", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "NEURONSIM_BACKEND=\"gpu\"") && strstr(log, "kernel"), "log: %s", log);
	free(log);
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_embedded_can_be_forced)
{
	test_env_default();
	setenv("NEURONSIM_BACKEND", "embedded", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	ck_assert_str_eq(nrt_neuronsim_backend_name(), "embedded");
	nrt_close();
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_auto_picks_the_device_when_present)
{
	test_env_default();
	setenv("NEURONSIM_BACKEND", "auto", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	ck_assert_str_eq(nrt_neuronsim_backend_name(), have_device() ? "kernel" : "embedded");
	nrt_close();
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_kernel_without_device_fails_init)
{
	if (access("/dev/neuronsim0", F_OK) == 0)
		return; /* covered where there is no driver */
	test_env_default();
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "/dev/neuronsim0") && strstr(log, "neuronsim.ko"), "log: %s", log);
	free(log);
	uint32_t n = 0;
	test_capture_begin();
	ck_assert_int_eq(nrt_get_total_nc_count(&n), NRT_FAILURE);
	free(test_capture_end());
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_kernel_more_cores_than_the_driver_fails_init)
{
	if (!have_device())
		return;
	test_env_default();
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	setenv("NEURONSIM_CORES_PER_DEVICE", "64", 1);
	test_capture_begin();
	ck_assert_int_ne(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "num_cores") && strstr(log, "NEURONSIM_CORES_PER_DEVICE"),
		      "log: %s", log);
	free(log);
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_kernel_more_devices_than_the_driver_fails_init)
{
	if (!have_device() || access("/dev/neuronsim7", F_OK) == 0)
		return;
	test_env_default();
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	setenv("NEURONSIM_NUM_DEVICES", "8", 1);
	setenv("NEURONSIM_CORES_PER_DEVICE", "1", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "num_devices") && strstr(log, "NEURONSIM_NUM_DEVICES"), "log: %s", log);
	free(log);
	unsetenv("NEURONSIM_NUM_DEVICES");
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_kernel_device_memory_caps_allocations)
{
	if (!have_device())
		return;
	test_env_default();
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	setenv("NEURONSIM_DEVICE_MEMORY", "1M", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_eq(u.total, 1u << 20);
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2u << 20, "big", &t),
			 NRT_RESOURCE);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1u << 19, "half", &t),
			 NRT_SUCCESS);
	/* driver memory is zeroed and mapped: write and read back */
	uint32_t v = 0xfeedf00d, r = 0;
	ck_assert_int_eq(nrt_tensor_read(t, &r, 0, 4), NRT_SUCCESS);
	ck_assert_uint_eq(r, 0);
	ck_assert_int_eq(nrt_tensor_write(t, &v, 4096, 4), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(t, &r, 4096, 4), NRT_SUCCESS);
	ck_assert_uint_eq(r, v);
	nrt_tensor_free(&t);
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_eq(u.in_use, 0);
	nrt_close();
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

START_TEST(test_kernel_second_runtime_cannot_take_reserved_cores)
{
	if (!have_device())
		return;
	test_env_default();
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	/* The same core through a second open file (another runtime). */
	nrt_backend_config_t cfg = { .device_memory = 1u << 20, .cores_per_device = 1 };
	nrt_backend_dev_t *dev = NULL;
	char err[256] = "";
	ck_assert_int_eq(RT_CODE(nrt_backend_kernel_ops.open(&cfg, 0, &dev), err), NRT_SUCCESS);
	ck_assert_int_eq(nrt_backend_kernel_ops.core_reserve(dev, 0), NRT_EXEC_NC_BUSY);
	nrt_backend_kernel_ops.close(dev);
	nrt_close();
	unsetenv("NEURON_RT_VISIBLE_CORES");
	unsetenv("NEURONSIM_BACKEND");
}
END_TEST

/* The job protocol's error record crosses the kernel ABI through the two
 * conversions of neuronsim/device.h: every field and the message survive the
 * round trip, flops travel in the 1.2 extension, a record without it (a
 * firmware of ABI 1.1) reads as flops unknown, and a status the ABI does not
 * know reads as invalid. */
START_TEST(test_error_record_round_trip)
{
	ns_job_error_t e = { .status = NS_JOB_OOB, .engine = 3, .insn_index = 17, .debug_id = 9,
			     .ap_index = 2, .region = 5, .is_inf = 1, .first_index = 1ull << 40,
			     .count = 77, .num_err_insns = 4, .flops = 123456789 };
	snprintf(e.message, sizeof(e.message), "ap2 out of region 5");
	struct neuronsim_error_record_ext ext;
	memset(&ext, 0xa5, sizeof(ext));
	ns_job_error_to_record(&e, &ext);
	ck_assert_uint_eq(ext.rec.status, NEURONSIM_STATUS_OOB);
	ck_assert_uint_eq(ext.rec.insn_index, 17);
	ck_assert_uint_eq(ext.rec.first_index, 1ull << 40);
	ck_assert_uint_eq(ext.rec.num_err_insns, 4);
	ck_assert_uint_eq(ext.rec.insns_executed, 0); /* the caller's */
	ck_assert_str_eq(ext.rec.message, "ap2 out of region 5");
	ck_assert_uint_eq(ext.valid, NEURONSIM_EXT_FLOPS);
	ck_assert_uint_eq(ext.flops, 123456789);
	ck_assert_uint_eq(ext.pad, 0);
	ns_job_error_t back;
	ns_job_error_from_record(&ext, NEURONSIM_STATUS_OOB, &back);
	ck_assert_int_eq(memcmp(&back, &e, sizeof(e)), 0);
	/* an ABI 1.1 firmware's plain record; the wait's status wins */
	ext.valid = 0;
	ns_job_error_from_record(&ext, NEURONSIM_STATUS_FW_LOST, &back);
	ck_assert_uint_eq(back.status, NS_JOB_DEVICE_LOST);
	ck_assert_uint_eq(back.flops, NS_JOB_FLOPS_UNKNOWN);
	ns_job_error_from_record(&ext, NEURONSIM_STATUS_COUNT, &back);
	ck_assert_uint_eq(back.status, NS_JOB_INVALID);
	/* an unterminated message is cut, not overrun */
	memset(ext.rec.message, 'x', sizeof(ext.rec.message));
	ns_job_error_from_record(&ext, 0, &back);
	ck_assert_uint_eq(strlen(back.message), sizeof(back.message) - 1);
}
END_TEST

/* Regions name (block, offset, size): a region that does not fit in its
 * block, or has no block, is refused before anything runs; one that fits
 * runs. On the embedded backend, and on the kernel one where the device is. */
static void check_region_bounds(const nrt_backend_ops_t *ops)
{
	nrt_backend_config_t cfg = { .device_memory = 1u << 20, .cores_per_device = 1 };
	nrt_backend_dev_t *dev = NULL;
	char err[256] = "";
	ck_assert_msg(RT_CODE(ops->open(&cfg, 0, &dev), err) == NRT_SUCCESS, "%s: %s", ops->name, err);
	nrt_backend_mem_t blk;
	ck_assert_int_eq(ops->mem_alloc(dev, 4096, &blk), NRT_SUCCESS);
	ck_assert_int_eq(ops->core_reserve(dev, 0), NRT_SUCCESS);
	nrt_backend_code_t code = { .mem = &blk, .n_regions = 3 };
	nrt_backend_program_t *prog = NULL;
	ck_assert_msg(RT_CODE(ops->program_create(dev, 0, &code, &prog), err) == NRT_SUCCESS, "%s", err);
	nrt_backend_region_t r[3] = { { &blk, 0, 64 }, { NULL, 0, 0 }, { &blk, 4000, 96 } };
	nrt_backend_job_t job = { .program = prog, .regions = r, .n_regions = 3 };
	nrt_backend_error_t e;
	ck_assert_int_eq(ops->execute(dev, 0, &job, &e), NRT_BACKEND_OK);
	r[2].size = 97; /* one byte past the block */
	ck_assert_int_eq(ops->execute(dev, 0, &job, &e), NRT_BACKEND_INVALID);
	ck_assert_msg(strstr(e.message, "region 2 [+4000, 97 bytes) is not inside its device memory block"),
		      "%s: %s", ops->name, e.message);
	r[2] = (nrt_backend_region_t){ NULL, 0, 8 }; /* no block */
	ck_assert_int_eq(ops->execute(dev, 0, &job, &e), NRT_BACKEND_INVALID);
	ck_assert_ptr_nonnull(strstr(e.message, "region 2 "));
	r[2] = (nrt_backend_region_t){ &blk, UINT64_MAX, 2 }; /* offset + size overflows */
	ck_assert_int_eq(ops->execute(dev, 0, &job, &e), NRT_BACKEND_INVALID);
	ops->program_destroy(dev, prog);
	ops->core_release(dev, 0);
	ops->mem_free(dev, &blk);
	ops->close(dev);
}

START_TEST(test_regions_outside_their_block_are_refused)
{
	check_region_bounds(&nrt_backend_embedded_ops);
	if (have_device())
		check_region_bounds(&nrt_backend_kernel_ops);
}
END_TEST

static Suite *backend_kernel_suite(void)
{
	Suite *s = suite_create("runtime_backend_kernel");
	TCase *tc = tcase_create("abi");
	tcase_add_test(tc, test_abi_same_major_is_accepted);
	tcase_add_test(tc, test_abi_older_than_the_minimum_is_refused);
	tcase_add_test(tc, test_abi_mismatch_names_both_versions);
	tcase_add_test(tc, test_open_missing_node_says_what_to_do);
	tcase_add_test(tc, test_error_record_round_trip);
	tcase_add_test(tc, test_regions_outside_their_block_are_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("selection");
	tcase_add_test(tc, test_unknown_backend_fails_init_with_message);
	tcase_add_test(tc, test_embedded_can_be_forced);
	tcase_add_test(tc, test_auto_picks_the_device_when_present);
	tcase_add_test(tc, test_kernel_without_device_fails_init);
	suite_add_tcase(s, tc);
	tc = tcase_create("device");
	tcase_add_test(tc, test_kernel_more_cores_than_the_driver_fails_init);
	tcase_add_test(tc, test_kernel_more_devices_than_the_driver_fails_init);
	tcase_add_test(tc, test_kernel_device_memory_caps_allocations);
	tcase_add_test(tc, test_kernel_second_runtime_cannot_take_reserved_cores);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(backend_kernel_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
