/* Check tests of libnrt's lifetime, environment, status strings, tensors and tensor sets. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_version.h"
#include "rt_fixture.h"
#include "test_neffs.h"

/* ---- status values and strings ---- */

START_TEST(test_status_values_match_nrt)
{
	ck_assert_int_eq(NRT_SUCCESS, 0);
	ck_assert_int_eq(NRT_FAILURE, 1);
	ck_assert_int_eq(NRT_INVALID, 2);
	ck_assert_int_eq(NRT_INVALID_HANDLE, 3);
	ck_assert_int_eq(NRT_RESOURCE, 4);
	ck_assert_int_eq(NRT_TIMEOUT, 5);
	ck_assert_int_eq(NRT_HW_ERROR, 6);
	ck_assert_int_eq(NRT_QUEUE_FULL, 7);
	ck_assert_int_eq(NRT_LOAD_NOT_ENOUGH_NC, 9);
	ck_assert_int_eq(NRT_UNSUPPORTED_NEFF_VERSION, 10);
	ck_assert_int_eq(NRT_FAIL_HOST_MEM_ALLOC, 11);
	ck_assert_int_eq(NRT_UNINITIALIZED, 13);
	ck_assert_int_eq(NRT_CLOSED, 14);
	ck_assert_int_eq(NRT_EXEC_BAD_INPUT, 1002);
	ck_assert_int_eq(NRT_EXEC_COMPLETED_WITH_NUM_ERR, 1003);
	ck_assert_int_eq(NRT_EXEC_COMPLETED_WITH_ERR, 1004);
	ck_assert_int_eq(NRT_EXEC_NC_BUSY, 1005);
	ck_assert_int_eq(NRT_EXEC_OOB, 1006);
	ck_assert_int_eq(NRT_TENSOR_PLACEMENT_DEVICE, 0);
	ck_assert_int_eq(NRT_TENSOR_PLACEMENT_HOST, 1);
	ck_assert_int_eq(NRT_TENSOR_PLACEMENT_VIRTUAL, 2);
	ck_assert_int_eq(NRT_DTYPE_FLOAT32, 0xA);
	ck_assert_int_eq(NRT_DTYPE_BFLOAT16, 0x6);
	ck_assert_int_eq(NRT_TENSOR_USAGE_OUTPUT, 1);
}
END_TEST

START_TEST(test_status_strings_distinct_and_never_null)
{
	ck_assert_ptr_nonnull(nrt_get_status_as_str((NRT_STATUS)12345));
	ck_assert_str_ne(nrt_get_status_as_str(NRT_EXEC_OOB),
			 nrt_get_status_as_str(NRT_EXEC_COMPLETED_WITH_NUM_ERR));
	ck_assert_ptr_nonnull(strstr(nrt_get_status_as_str(NRT_EXEC_COMPLETED_WITH_NUM_ERR), "NaN"));
}
END_TEST

START_TEST(test_version)
{
	nrt_version_t v;
	ck_assert_int_eq(nrt_get_version(&v, sizeof(v)), NRT_SUCCESS);
	ck_assert_int_eq(v.rt_major, NRT_MAJOR_VERSION);
	ck_assert_int_eq(nrt_get_version(NULL, sizeof(v)), NRT_INVALID);
}
END_TEST

/* ---- lifetime ---- */

START_TEST(test_calls_before_init_return_uninitialized)
{
	test_env_default();
	nrt_tensor_t *t = NULL;
	nrt_model_t *m = NULL;
	char neff[64] = { 0 };
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_UNINITIALIZED);
	ck_assert_ptr_null(t);
	ck_assert_int_eq(nrt_load(neff, sizeof(neff), -1, -1, &m), NRT_UNINITIALIZED);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(nrt_unload((nrt_model_t *)0x1), NRT_UNINITIALIZED);
	ck_assert_int_eq(nrt_execute(NULL, NULL, NULL), NRT_UNINITIALIZED);
	nrt_close(); /* harmless */
	/* documented to work before nrt_init */
	uint32_t n = 0;
	ck_assert_int_eq(nrt_get_total_nc_count(&n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	setenv("NEURON_RT_VISIBLE_CORES", "1-2", 1);
	ck_assert_int_eq(nrt_get_visible_nc_count(&n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 2);
}
END_TEST

START_TEST(test_calls_after_close_return_closed)
{
	rt_init_default_ok();
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_SUCCESS);
	nrt_close();
	float x = 0;
	ck_assert_int_eq(nrt_tensor_read(t, &x, 0, sizeof(x)), NRT_CLOSED);
	nrt_tensor_t *t2 = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t2), NRT_CLOSED);
	/* and a new runtime does not accept handles of the old one */
	rt_init_default_ok();
	ck_assert_int_eq(nrt_tensor_read(t, &x, 0, sizeof(x)), NRT_INVALID_HANDLE);
	nrt_close();
}
END_TEST

START_TEST(test_double_init_is_invalid)
{
	rt_init_default_ok();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
	nrt_close();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_INVALID, "", ""), NRT_INVALID);
}
END_TEST

/* ---- environment ---- */

START_TEST(test_visible_cores_ranges)
{
	test_env_default();
	static const struct { const char *v; uint32_t n; } cases[] = {
		{ "0-3", 4 }, { "1", 1 }, { "0,2", 2 }, { "3, 0-1", 3 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("NEURON_RT_VISIBLE_CORES", cases[i].v, 1);
		ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
		uint32_t n = 0, total = 0;
		ck_assert_int_eq(nrt_get_visible_nc_count(&n), NRT_SUCCESS);
		ck_assert_int_eq(nrt_get_total_nc_count(&total), NRT_SUCCESS);
		ck_assert_uint_eq(n, cases[i].n);
		ck_assert_uint_eq(total, 4);
		nrt_close();
	}
}
END_TEST

START_TEST(test_bad_env_values_fail_init_with_message)
{
	static const struct { const char *var, *val; NRT_STATUS st; } cases[] = {
		{ "NEURON_RT_VISIBLE_CORES", "4", NRT_INVALID },
		{ "NEURON_RT_VISIBLE_CORES", "2-1", NRT_INVALID },
		{ "NEURON_RT_VISIBLE_CORES", "a", NRT_INVALID },
		{ "NEURON_RT_VISIBLE_CORES", "0,0", NRT_INVALID },
		{ "NEURON_RT_VISIBLE_CORES", "1-", NRT_INVALID },
		{ "NEURON_RT_NUM_CORES", "x", NRT_INVALID },
		{ "NEURON_RT_NUM_CORES", "-2", NRT_INVALID },
		{ "NEURON_RT_NUM_CORES", "5", NRT_RESOURCE },
		{ "NEURON_RT_EXEC_TIMEOUT", "-1", NRT_INVALID },
		{ "NEURON_RT_LOG_LEVEL", "LOUD", NRT_INVALID },
		{ "NEURONSIM_DEVICE_MEMORY", "12Q", NRT_INVALID },
		{ "NEURONSIM_NAN_CHECK", "maybe", NRT_INVALID },
		{ "NEURONSIM_CORES_PER_DEVICE", "0", NRT_INVALID },
		{ "NEURONSIM_BACKEND", "fpga", NRT_INVALID },
		{ "NEURONSIM_THREADS", "17", NRT_INVALID },
		{ "NEURONSIM_THREADS", "two", NRT_INVALID },
		{ "NEURONSIM_CPU_ISA", "sse2", NRT_INVALID },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		test_env_default();
		setenv(cases[i].var, cases[i].val, 1);
		test_capture_begin();
		NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
		char *log = test_capture_end();
		ck_assert_msg(st == cases[i].st, "%s=%s: status %d", cases[i].var, cases[i].val, st);
		ck_assert_msg(strstr(log, cases[i].var) && strstr(log, cases[i].val),
			      "message for %s=%s does not name both: %s", cases[i].var, cases[i].val, log);
		ck_assert_ptr_nonnull(strstr(log, "nrt: ERROR"));
		free(log);
		/* nothing is left behind: a good init works */
		test_env_default();
		ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
		nrt_close();
	}
}
END_TEST

START_TEST(test_num_cores_limits_visible)
{
	test_env_default();
	setenv("NEURON_RT_NUM_CORES", "2", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
	uint32_t n;
	ck_assert_int_eq(nrt_get_visible_nc_count(&n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 2);
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, 64, "t", &t), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "t", &t), NRT_SUCCESS);
	nrt_tensor_free(&t);
	nrt_close();
	setenv("NEURON_RT_NUM_CORES", "0", 1); /* 0 means all */
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_visible_nc_count(&n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	nrt_close();
}
END_TEST

START_TEST(test_log_level_info_shows_info)
{
	test_env_default();
	setenv("NEURON_RT_LOG_LEVEL", "info", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
	nrt_close();
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "nrt: INFO"));
	free(log);
	setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
	nrt_close();
	log = test_capture_end();
	ck_assert_ptr_null(strstr(log, "INFO"));
	free(log);
}
END_TEST

/* ---- tensors ---- */

START_TEST(test_tensor_roundtrip_device_and_host)
{
	rt_init_default_ok();
	nrt_tensor_placement_t pl[] = { NRT_TENSOR_PLACEMENT_DEVICE, NRT_TENSOR_PLACEMENT_HOST,
					NRT_TENSOR_PLACEMENT_VIRTUAL };
	for (int p = 0; p < 3; p++) {
		nrt_tensor_t *t = NULL;
		ck_assert_int_eq(nrt_tensor_allocate(pl[p], p == 0 ? 1 : -1, 1000, "t", &t), NRT_SUCCESS);
		ck_assert_uint_eq(nrt_tensor_get_size(t), 1000);
		uint8_t buf[1000], back[1000];
		/* allocated zeroed */
		ck_assert_int_eq(nrt_tensor_read(t, back, 0, sizeof(back)), NRT_SUCCESS);
		for (int i = 0; i < 1000; i++)
			ck_assert_uint_eq(back[i], 0);
		for (int i = 0; i < 1000; i++)
			buf[i] = (uint8_t)(i * 7);
		ck_assert_int_eq(nrt_tensor_write(t, buf, 0, sizeof(buf)), NRT_SUCCESS);
		ck_assert_int_eq(nrt_tensor_read(t, back, 0, sizeof(back)), NRT_SUCCESS);
		ck_assert_mem_eq(buf, back, sizeof(buf));
		uint8_t *va = nrt_tensor_get_va(t);
		ck_assert_ptr_nonnull(va);
		ck_assert_mem_eq(va, buf, sizeof(buf));
		ck_assert_int_eq(nrt_tensor_memset(t, 10, 0xab, 5), NRT_SUCCESS);
		ck_assert_uint_eq(va[9], buf[9]);
		ck_assert_uint_eq(va[10], 0xab);
		ck_assert_uint_eq(va[14], 0xab);
		ck_assert_uint_eq(va[15], buf[15]);
		nrt_tensor_free(&t);
		ck_assert_ptr_null(t);
	}
	nrt_close();
}
END_TEST

/* Device memory is reused: a big tensor in the block another one freed reads
 * as zeros while its neighbours, which share the partial pages at its ends,
 * keep their bytes; _i 0: 8 MiB (cleared with memset on the embedded
 * backend), 1: 64 MiB (whole pages dropped, the partial pages cleared). */
START_TEST(test_tensor_reused_device_memory_is_zeroed)
{
	rt_init_default_ok();
	const size_t small = 100, big = (_i ? (64u << 20) : (8u << 20)) + 100;
	nrt_tensor_t *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, small, "a", &a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, big, "b", &b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, small, "c", &c), NRT_SUCCESS);
	uint8_t *va = nrt_tensor_get_va(a), *vb = nrt_tensor_get_va(b), *vc = nrt_tensor_get_va(c);
	/* On the embedded backend neither end of b is page aligned, so both ends
	 * share a page with a neighbour (the partial-page path of its zeroing);
	 * the kernel backend's blocks are page-aligned and the driver zeroes them.
	 * Either way d must read as zeros and a, c keep their bytes. */
	if (strcmp(nrt_neuronsim_backend_name(), "embedded") == 0) {
		ck_assert_uint_ne((uintptr_t)vb % 4096, 0);
		ck_assert_uint_ne((uintptr_t)(vb + big) % 4096, 0);
	}
	memset(va, 0xa5, small);
	memset(vb, 0xab, big);
	memset(vc, 0xcd, small);
	nrt_tensor_free(&b);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, big, "d", &d), NRT_SUCCESS);
	uint8_t *vd = nrt_tensor_get_va(d);
	if (strcmp(nrt_neuronsim_backend_name(), "embedded") == 0)
		ck_assert_ptr_eq(vd, vb); /* the same block, or this tests nothing */
	size_t nonzero = 0;
	for (size_t i = 0; i < big; i++)
		nonzero += vd[i] != 0;
	ck_assert_uint_eq(nonzero, 0);
	for (size_t i = 0; i < small; i++) {
		ck_assert_uint_eq(va[i], 0xa5);
		ck_assert_uint_eq(vc[i], 0xcd);
	}
	nrt_tensor_free(&a);
	nrt_tensor_free(&c);
	nrt_tensor_free(&d);
	nrt_close();
}
END_TEST

/* The VmFlags line of the mapping of /proc/self/smaps that holds va, and
 * that mapping's start; false when no mapping holds it. */
static bool smaps_flags_of(const void *va, uintptr_t *start, char *flags, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	ck_assert_ptr_nonnull(f);
	char line[4096];
	bool in = false, found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = (uintptr_t)va >= lo && (uintptr_t)va < hi;
			*start = lo;
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(flags, len, "%s", line + 8);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* The embedded backend's device memory asks for transparent huge pages
 * (MADV_HUGEPAGE: smaps' "hg" flag) from a 2 MiB boundary, where the kernel
 * has THP: the kernels' strided walks missed the TLB on 4 KiB pages. */
START_TEST(test_device_memory_asks_for_huge_pages)
{
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
		return; /* a kernel without THP: the hint is refused, small pages */
	rt_init_default_ok();
	if (strcmp(nrt_neuronsim_backend_name(), "embedded") != 0) {
		nrt_close();
		return; /* the driver's memory is the kernel's to map */
	}
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8u << 20, "t", &t), NRT_SUCCESS);
	uint8_t *va = nrt_tensor_get_va(t);
	memset(va, 1, 8u << 20);
	uintptr_t start = 0;
	char flags[256];
	ck_assert(smaps_flags_of(va, &start, flags, sizeof(flags)));
	ck_assert_msg(strstr(flags, " hg") != NULL, "device memory's VmFlags:%s", flags);
	ck_assert_uint_eq(start % (2u << 20), 0);
	nrt_tensor_free(&t);
	nrt_close();
}
END_TEST

START_TEST(test_tensor_bounds_checked)
{
	rt_init_default_ok();
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_SUCCESS);
	uint8_t buf[128];
	ck_assert_int_eq(nrt_tensor_read(t, buf, 0, 65), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_read(t, buf, 1, 64), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_read(t, buf, 65, 0), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_write(t, buf, SIZE_MAX, 2), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_write(t, buf, 2, SIZE_MAX), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_memset(t, UINT64_MAX, 0, 1), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_read(t, NULL, 0, 4), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_write(t, NULL, 0, 4), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_read(t, buf, 64, 0), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(t, buf, 0, 64), NRT_SUCCESS);
	nrt_tensor_free(&t);
	nrt_close();
}
END_TEST

START_TEST(test_tensor_allocate_misuse)
{
	rt_init_default_ok();
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 0, "t", &t), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 4, 64, "t", &t), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, -1, 64, "t", &t), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_allocate((nrt_tensor_placement_t)7, 0, 64, "t", &t), NRT_INVALID);
	ck_assert_ptr_null(t);
	/* more than the device has: 256M of device memory */
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 512u << 20, "big", &t),
			 NRT_RESOURCE);
	ck_assert_ptr_null(t);
	nrt_close();
}
END_TEST

START_TEST(test_freed_and_foreign_tensor_handles_rejected)
{
	rt_init_default_ok();
	nrt_tensor_t *t = NULL, *copy;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_SUCCESS);
	copy = t;
	nrt_tensor_free(&t);
	ck_assert_ptr_null(t);
	uint8_t buf[4];
	ck_assert_int_eq(nrt_tensor_read(copy, buf, 0, 4), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_tensor_write(copy, buf, 0, 4), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_tensor_memset(copy, 0, 0, 4), NRT_INVALID_HANDLE);
	ck_assert_uint_eq(nrt_tensor_get_size(copy), 0);
	ck_assert_ptr_null(nrt_tensor_get_va(copy));
	/* double free is detected and harmless */
	nrt_tensor_free(&copy);
	ck_assert_ptr_nonnull(copy);
	/* a new tensor in the recycled slot is not reachable through the stale handle */
	nrt_tensor_t *t2 = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t2", &t2), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(copy, buf, 0, 4), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_tensor_read(t2, buf, 0, 4), NRT_SUCCESS);
	/* garbage and NULL */
	ck_assert_int_eq(nrt_tensor_read((nrt_tensor_t *)0x1234, buf, 0, 4), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_tensor_read(NULL, buf, 0, 4), NRT_INVALID);
	/* a model handle is not a tensor */
	size_t sz;
	void *neff = test_neff_add(4, &sz);
	nrt_model_t *m = NULL;
	ck_assert_int_eq(nrt_load(neff, sz, -1, -1, &m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read((nrt_tensor_t *)m, buf, 0, 4), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_unload((nrt_model_t *)t2), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_tensor_free(&t2);
	nrt_close();
}
END_TEST

START_TEST(test_tensor_copy_rules)
{
	rt_init_default_ok();
	nrt_tensor_t *a, *b, *c, *h;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "a", &a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "b", &b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "c", &c), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 64, "h", &h), NRT_SUCCESS);
	uint8_t src[64], out[64];
	for (int i = 0; i < 64; i++)
		src[i] = (uint8_t)i;
	ck_assert_int_eq(nrt_tensor_write(a, src, 0, 64), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_copy(a, 8, b, 0, 56), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(b, out, 0, 56), NRT_SUCCESS);
	ck_assert_mem_eq(out, src + 8, 56);
	ck_assert_int_eq(nrt_tensor_copy(a, 8, b, 0, 57), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_copy(a, 0, b, 9, 56), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_copy(a, 0, c, 0, 64), NRT_INVALID); /* different cores */
	ck_assert_int_eq(nrt_tensor_copy(a, 0, h, 0, 64), NRT_SUCCESS);  /* device -> host */
	ck_assert_int_eq(nrt_tensor_copy(h, 0, c, 0, 64), NRT_SUCCESS);  /* host -> device */
	ck_assert_int_eq(nrt_tensor_read(c, out, 0, 64), NRT_SUCCESS);
	ck_assert_mem_eq(out, src, 64);
	ck_assert_int_eq(nrt_tensor_copy(NULL, 0, c, 0, 64), NRT_INVALID);
	nrt_tensor_free(&a);
	nrt_tensor_free(&b);
	nrt_tensor_free(&c);
	nrt_tensor_free(&h);
	nrt_close();
}
END_TEST

START_TEST(test_tensor_slice_and_attach)
{
	rt_init_default_ok();
	nrt_tensor_t *t, *s, *e;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 256, "t", &t), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate_slice(t, 64, 64, "s", &s), NRT_SUCCESS);
	ck_assert_uint_eq(nrt_tensor_get_size(s), 64);
	ck_assert_ptr_eq(nrt_tensor_get_va(s), (uint8_t *)nrt_tensor_get_va(t) + 64);
	ck_assert_int_eq(nrt_tensor_allocate_slice(t, 200, 64, "bad", &e), NRT_INVALID);
	ck_assert_int_eq(nrt_tensor_allocate_slice(t, 0, 0, "bad", &e), NRT_INVALID);
	uint32_t v = 0xdeadbeef, r = 0;
	ck_assert_int_eq(nrt_tensor_write(s, &v, 0, 4), NRT_SUCCESS);
	/* the slice keeps the storage alive after its source is freed */
	nrt_neuronsim_mem_usage_t u;
	nrt_tensor_free(&t);
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_ge(u.by_category[NRT_NEURONSIM_MEM_TENSORS], 256);
	ck_assert_int_eq(nrt_tensor_read(s, &r, 0, 4), NRT_SUCCESS);
	ck_assert_uint_eq(r, v);
	nrt_tensor_free(&s);
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_eq(u.by_category[NRT_NEURONSIM_MEM_TENSORS], 0);
	ck_assert_uint_eq(u.in_use, 0);
	ck_assert_uint_ge(u.peak, 256);

	ck_assert_int_eq(nrt_tensor_allocate_empty("e", &e), NRT_SUCCESS);
	ck_assert_ptr_null(nrt_tensor_get_va(e));
	ck_assert_int_eq(nrt_tensor_read(e, &r, 0, 4), NRT_INVALID);
	uint32_t buf[4] = { 1, 2, 3, 4 };
	ck_assert_int_eq(nrt_tensor_attach_buffer(e, buf, sizeof(buf)), NRT_SUCCESS);
	ck_assert_ptr_eq(nrt_tensor_get_va(e), buf);
	ck_assert_int_eq(nrt_tensor_read(e, &r, 8, 4), NRT_SUCCESS);
	ck_assert_uint_eq(r, 3);
	ck_assert_int_eq(nrt_tensor_attach_buffer(e, NULL, 4), NRT_INVALID);
	nrt_tensor_free(&e);
	ck_assert_uint_eq(buf[0], 1); /* caller's buffer untouched by free */
	nrt_close();
}
END_TEST

START_TEST(test_close_frees_leftover_tensors)
{
	rt_init_default_ok();
	nrt_tensor_t *t;
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 4096, "leak", &t),
				 NRT_SUCCESS);
	nrt_close(); /* LeakSanitizer checks the rest */
}
END_TEST

/* ---- tensor sets ---- */

START_TEST(test_tensor_set_api)
{
	nrt_tensor_set_t *set = NULL;
	/* sets are plain containers: usable before nrt_init */
	ck_assert_int_eq(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(NULL), NRT_INVALID);
	nrt_tensor_t *a = (nrt_tensor_t *)0x1000, *b = (nrt_tensor_t *)0x2000, *got = NULL;
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, "a", a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, "b", b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_tensor_from_tensor_set(set, "a", &got), NRT_SUCCESS);
	ck_assert_ptr_eq(got, a);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, "a", b), NRT_SUCCESS); /* replace */
	ck_assert_int_eq(nrt_get_tensor_from_tensor_set(set, "a", &got), NRT_SUCCESS);
	ck_assert_ptr_eq(got, b);
	ck_assert_int_eq(nrt_get_tensor_from_tensor_set(set, "zz", &got), NRT_INVALID);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(NULL, "a", a), NRT_INVALID);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, NULL, a), NRT_INVALID);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, "", a), NRT_INVALID);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, "a", NULL), NRT_INVALID);
	char longname[300];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, longname, a), NRT_INVALID);
	for (int i = 0; i < 100; i++) { /* growth */
		char name[16];
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(set, name, a), NRT_SUCCESS);
	}
	ck_assert_int_eq(nrt_get_tensor_from_tensor_set(set, "t99", &got), NRT_SUCCESS);
	/* something that is not a set */
	int not_a_set[8] = { 0 };
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(not_a_set, "a", a), NRT_INVALID);
	nrt_destroy_tensor_set(&set);
	ck_assert_ptr_null(set);
	nrt_destroy_tensor_set(&set); /* NULL is fine */
	nrt_destroy_tensor_set(NULL);
}
END_TEST

/* Issue #11: a second destroy through a copy of the handle read freed memory
 * (and, once the block was reused, destroyed someone else's set). Sets are
 * generation-checked handles now: a stale one is refused everywhere. */
START_TEST(test_tensor_set_stale_handle_rejected)
{
	nrt_tensor_set_t *s1 = NULL, *s2 = NULL;
	nrt_tensor_t *a = (nrt_tensor_t *)0x1000, *got = NULL;
	ck_assert_int_eq(nrt_allocate_tensor_set(&s1), NRT_SUCCESS);
	nrt_tensor_set_t *stale = s1;
	nrt_destroy_tensor_set(&s1);
	ck_assert_ptr_null(s1);
	/* a new set takes the freed slot (it took the freed heap block before) */
	ck_assert_int_eq(nrt_allocate_tensor_set(&s2), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(s2, "a", a), NRT_SUCCESS);
	test_capture_begin();
	nrt_destroy_tensor_set(&stale);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(stale, "b", a), NRT_INVALID);
	ck_assert_int_eq(nrt_get_tensor_from_tensor_set(stale, "a", &got), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(stale); /* left alone: it names nothing */
	ck_assert_msg(strstr(log, "nrt_destroy_tensor_set") && strstr(log, "not a tensor set"),
		      "log: %s", log);
	free(log);
	/* s2 is untouched */
	ck_assert_int_eq(nrt_get_tensor_from_tensor_set(s2, "a", &got), NRT_SUCCESS);
	ck_assert_ptr_eq(got, a);

	/* nrt_execute refuses a destroyed set before touching the model */
	rt_init_default_ok();
	rt_add_model_t f = { 0 };
	f.neff = test_neff_add(4, &f.size);
	ck_assert_int_eq(nrt_load(f.neff, f.size, -1, -1, &f.m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "a", &f.a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "b", &f.b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "out", &f.out), NRT_SUCCESS);
	rt_add_model_sets(&f);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	nrt_tensor_set_t *stale_in = f.in;
	nrt_destroy_tensor_set(&f.in);
	test_capture_begin();
	ck_assert_int_eq(nrt_execute(f.m, stale_in, f.outs), NRT_INVALID);
	free(test_capture_end());
	rt_add_model_free(&f);
	nrt_destroy_tensor_set(&s2);
	nrt_close();
}
END_TEST

/* The log lines of a capture that are at level ERROR (any component). */
static int error_lines(const char *log)
{
	int n = 0;
	for (const char *p = log; (p = strstr(p, "nrt: ERROR")); p++)
		n++;
	return n;
}

/* Runs call under a capture and checks that it returns want and logs exactly
 * one ERROR line, which names the entry point and contains what. */
#define CHECK_ONCE(call, want, entry, what)                                                       \
	do {                                                                                      \
		test_capture_begin();                                                             \
		NRT_STATUS st_ = (call);                                                          \
		char *log_ = test_capture_end();                                                  \
		ck_assert_msg(st_ == (want), "%s: status %d, want %d", #call, st_, (int)(want));  \
		ck_assert_msg(error_lines(log_) == 1, "%s: %d error lines, want 1:\n%s", #call,   \
			      error_lines(log_), log_);                                           \
		ck_assert_msg(strstr(log_, entry ": ") && strstr(log_, what), "%s: log: %s", #call, \
			      log_);                                                              \
		free(log_);                                                                       \
	} while (0)

/* Issue #10 item 4: a failure is made where it happens, passed up, and logged
 * once, by the entry point the caller called. */
START_TEST(test_a_failure_is_logged_once)
{
	CHECK_ONCE(nrt_tensor_write(NULL, "", 0, 0), NRT_UNINITIALIZED, "nrt_tensor_write", "nrt_init");
	test_env_default();
	setenv("NEURONSIM_NAN_CHECK", "maybe", 1);
	CHECK_ONCE(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_INVALID, "nrt_init", "NEURONSIM_NAN_CHECK");
	/* The core-list parser's and the log configuration's failures, made
	 * below nrt_env_load, come out once with the variable named. */
	test_env_default();
	setenv("NEURON_RT_VISIBLE_CORES", "2,0-2", 1);
	CHECK_ONCE(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_INVALID, "nrt_init",
		   "NEURON_RT_VISIBLE_CORES=\"2,0-2\" is invalid: core 2 is listed twice");
	test_env_default();
	setenv("NEURON_RT_LOG_LEVEL_TDRV", "LOUD", 1);
	CHECK_ONCE(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_INVALID, "nrt_init",
		   "NEURON_RT_LOG_LEVEL_TDRV=\"LOUD\" is invalid: expected ERROR");
	unsetenv("NEURON_RT_LOG_LEVEL_TDRV");
	rt_init_default_ok();
	CHECK_ONCE(nrt_profile_stop(NULL), NRT_INVALID, "nrt_profile_stop", "nrt_profile_start first");
	rt_add_model_t f = { 0 };
	f.neff = test_neff_add(4, &f.size);
	ck_assert_int_eq(nrt_load(f.neff, f.size, -1, -1, &f.m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "a", &f.a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 16, "b", &f.b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "out", &f.out), NRT_SUCCESS);
	rt_add_model_sets(&f);
	uint8_t buf[32] = { 0 };

	CHECK_ONCE(nrt_tensor_write(f.a, buf, 8, 16), NRT_INVALID, "nrt_tensor_write", "'a'");
	CHECK_ONCE(nrt_tensor_read(f.b, NULL, 0, 4), NRT_INVALID, "nrt_tensor_read", "buf is NULL");
	CHECK_ONCE(nrt_tensor_copy(f.a, 0, f.b, 4, 16), NRT_INVALID, "nrt_tensor_copy", "dst: tensor 'b'");
	nrt_tensor_batch_op_t ops[2] = { { 0, 4, buf }, { 12, 8, buf } };
	nrt_tensor_batch_t batch[1] = { { f.b, ops, 2 } };
	CHECK_ONCE(nrt_tensor_write_batch(batch, 1, false), NRT_INVALID, "nrt_tensor_write_batch",
		   "batch 0 op 1");
	nrt_tensor_t *s = NULL;
	CHECK_ONCE(nrt_tensor_allocate_slice(f.a, 12, 8, "s", &s), NRT_INVALID, "nrt_tensor_allocate_slice",
		   "slice 's'");
	CHECK_ONCE(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 9, 4, "far", &s), NRT_INVALID,
		   "nrt_tensor_allocate", "'far'");
	/* out is 8 bytes, the model's output 16 */
	CHECK_ONCE(nrt_execute(f.m, f.in, f.outs), NRT_INVALID, "nrt_execute", "'out'");
	nrt_tensor_t *stale = f.out;
	nrt_tensor_free(&f.out);
	CHECK_ONCE(nrt_execute_repeat(f.m, f.in, f.outs, 2), NRT_INVALID_HANDLE, "nrt_execute_repeat",
		   "not a live tensor");
	CHECK_ONCE(nrt_execute(f.m, f.in, NULL), NRT_INVALID, "nrt_execute", "output_set");
	CHECK_ONCE(nrt_execute_repeat(f.m, f.in, f.outs, 0), NRT_INVALID, "nrt_execute_repeat", "repeat_count 0");
	CHECK_ONCE(nrt_tensor_memset(stale, 0, 0, 4), NRT_INVALID_HANDLE, "nrt_tensor_memset",
		   "not a live tensor");
	/* nrta_cc_prepare logged the size lookup's failure and then its own */
	uint32_t group[1] = { 0 };
	nrt_cc_comm_t comm = { .replica_group = group, .rank = 0, .rank_n = 1, .ctx_device_id = 0,
			       .ctx_device_count = 1, .vnc = 0 };
	nrt_tensor_t *ins[1] = { f.a }, *outs[1] = { stale };
	nrt_tensor_list_t il = { ins, 1 }, ol = { outs, 1 };
	nrt_cc_context_t *cc = NULL;
	CHECK_ONCE(nrta_cc_prepare(&comm, &il, &ol, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &cc),
		   NRT_INVALID, "nrta_cc_prepare", "tensor pair 0: output: ");
	ck_assert_ptr_null(cc);
	rt_add_model_free(&f);

	/* an execution that fails on the device: the one line is nrt_execute's */
	size_t size;
	void *neff = test_neff_sqrt(4, &size);
	nrt_model_t *m = NULL;
	nrt_tensor_t *x = NULL, *y = NULL;
	ck_assert_int_eq(nrt_load(neff, size, -1, -1, &m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "x", &x), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "y", &y), NRT_SUCCESS);
	float neg[4] = { 1, -1, 4, -4 };
	ck_assert_int_eq(nrt_tensor_write(x, neg, 0, sizeof(neg)), NRT_SUCCESS);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", x), *out = rt_tensor_set_of(1, "y", y);
	CHECK_ONCE(nrt_execute(m, in, out), NRT_EXEC_COMPLETED_WITH_NUM_ERR, "nrt_execute", "sqrt.7");
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&x);
	nrt_tensor_free(&y);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_api");
	TCase *tc = tcase_create("status");
	tcase_add_test(tc, test_status_values_match_nrt);
	tcase_add_test(tc, test_status_strings_distinct_and_never_null);
	tcase_add_test(tc, test_version);
	suite_add_tcase(s, tc);
	tc = tcase_create("lifetime");
	tcase_add_test(tc, test_calls_before_init_return_uninitialized);
	tcase_add_test(tc, test_calls_after_close_return_closed);
	tcase_add_test(tc, test_double_init_is_invalid);
	suite_add_tcase(s, tc);
	tc = tcase_create("env");
	tcase_add_test(tc, test_visible_cores_ranges);
	tcase_add_test(tc, test_bad_env_values_fail_init_with_message);
	tcase_add_test(tc, test_num_cores_limits_visible);
	tcase_add_test(tc, test_log_level_info_shows_info);
	suite_add_tcase(s, tc);
	tc = tcase_create("tensor");
	tcase_add_test(tc, test_tensor_roundtrip_device_and_host);
	tcase_add_loop_test(tc, test_tensor_reused_device_memory_is_zeroed, 0, 2);
	tcase_add_test(tc, test_device_memory_asks_for_huge_pages);
	tcase_add_test(tc, test_tensor_bounds_checked);
	tcase_add_test(tc, test_tensor_allocate_misuse);
	tcase_add_test(tc, test_freed_and_foreign_tensor_handles_rejected);
	tcase_add_test(tc, test_tensor_copy_rules);
	tcase_add_test(tc, test_tensor_slice_and_attach);
	tcase_add_test(tc, test_close_frees_leftover_tensors);
	tcase_add_test(tc, test_tensor_set_api);
	tcase_add_test(tc, test_tensor_set_stale_handle_rejected);
	tcase_add_test(tc, test_a_failure_is_logged_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
