/* Check tests of nrt_load/nrt_unload/nrt_execute on the embedded backend: results, errors, memory, threads. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/neff.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "rt_fixture.h"
#include "test_neffs.h"

static uint64_t dev_in_use(void)
{
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	return u.in_use;
}

static nrt_model_t *load(void *neff, size_t size, int start, int count)
{
	nrt_model_t *m = NULL;
	ck_assert_int_eq(nrt_load(neff, size, start, count, &m), NRT_SUCCESS);
	ck_assert_ptr_nonnull(m);
	return m;
}

static nrt_tensor_t *tensor_f32(nrt_tensor_placement_t pl, int nc, const char *name, const float *v, size_t n)
{
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(pl, nc, n * sizeof(float), name, &t), NRT_SUCCESS);
	if (v)
		ck_assert_int_eq(nrt_tensor_write(t, v, 0, n * sizeof(float)), NRT_SUCCESS);
	return t;
}

/* A loaded ADD model with its tensors on core nc. */
typedef rt_add_model_t add_fixture_t;

static void add_setup(add_fixture_t *f, uint64_t n, int nc, nrt_tensor_placement_t pl)
{
	f->neff = test_neff_add(n, &f->size);
	f->m = load(f->neff, f->size, nc, -1);
	float *av = malloc(n * sizeof(float)), *bv = malloc(n * sizeof(float));
	for (uint64_t i = 0; i < n; i++) {
		av[i] = (float)i;
		bv[i] = 0.5f * (float)i + 1;
	}
	f->a = tensor_f32(pl, nc, "a", av, n);
	f->b = tensor_f32(pl, nc, "b", bv, n);
	f->out = tensor_f32(pl, nc, "out", NULL, n);
	rt_add_model_sets(f);
	free(av);
	free(bv);
}

static void add_check(add_fixture_t *f, uint64_t n)
{
	float *o = malloc(n * sizeof(float));
	ck_assert_int_eq(nrt_tensor_read(f->out, o, 0, n * sizeof(float)), NRT_SUCCESS);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_float_eq(o[i], 1.5f * (float)i + 1);
	free(o);
}

static void add_teardown(add_fixture_t *f)
{
	rt_add_model_free(f);
}

/* ---- results ---- */

START_TEST(test_execute_add_device_tensors)
{
	rt_init_default_ok();
	add_fixture_t f;
	add_setup(&f, 1000, 0, NRT_TENSOR_PLACEMENT_DEVICE);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	add_check(&f, 1000);
	nrt_neuronsim_exec_error_t e;
	ck_assert_int_eq(nrt_neuronsim_get_last_error(f.m, &e), NRT_SUCCESS);
	ck_assert_int_eq(e.kind, NRT_NEURONSIM_ERROR_NONE);
	ck_assert_int_eq(nrt_execute_repeat(f.m, f.in, f.outs, 5), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute_repeat(f.m, f.in, f.outs, 0), NRT_INVALID);
	add_teardown(&f);
	nrt_close();
}
END_TEST

START_TEST(test_execute_add_host_tensors_are_staged)
{
	rt_init_default_ok();
	add_fixture_t f;
	add_setup(&f, 333, 1, NRT_TENSOR_PLACEMENT_HOST);
	uint64_t before = dev_in_use();
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	add_check(&f, 333);
	ck_assert_uint_eq(dev_in_use(), before); /* staging returned */
	add_teardown(&f);
	nrt_close();
}
END_TEST

START_TEST(test_execute_matmul)
{
	rt_init_default_ok();
	enum { M = 5, K = 7, N = 3 };
	size_t sz;
	void *neff = test_neff_matmul(M, K, N, &sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	float x[M * K], w[K * N], y[M * N], ref[M * N];
	for (int i = 0; i < M * K; i++)
		x[i] = (float)(i % 5) - 2;
	for (int i = 0; i < K * N; i++)
		w[i] = (float)(i % 3) * 0.5f;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float acc = 0;
			for (int k = 0; k < K; k++)
				acc += x[i * K + k] * w[k * N + j];
			ref[i * N + j] = acc;
		}
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", x, M * K);
	nrt_tensor_t *tw = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "w", w, K * N);
	nrt_tensor_t *ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", NULL, M * N);
	nrt_tensor_set_t *in = rt_tensor_set_of(2, "x", tx, "w", tw), *out = rt_tensor_set_of(1, "y", ty);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(ty, y, 0, sizeof(y)), NRT_SUCCESS);
	for (int i = 0; i < M * N; i++)
		ck_assert_float_eq_tol(y[i], ref[i], 1e-4);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&tw);
	nrt_tensor_free(&ty);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_execute_constants_and_scratch)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_const_scratch(&sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	float x[4] = { 10, 20, 30, 40 }, y[4];
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", x, 4);
	nrt_tensor_t *ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", NULL, 4);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", tx), *out = rt_tensor_set_of(1, "y", ty);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(ty, y, 0, sizeof(y)), NRT_SUCCESS);
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(y[i], 2 * (x[i] + (float)(i + 1)));
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&ty);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_execute_aliased_output_updates_input_in_place)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_sgd(8, &sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	for (int pl = 0; pl < 2; pl++) {
		float w[8], g[8], r[8];
		for (int i = 0; i < 8; i++) {
			w[i] = (float)i;
			g[i] = 0.25f;
		}
		nrt_tensor_placement_t p = pl ? NRT_TENSOR_PLACEMENT_HOST : NRT_TENSOR_PLACEMENT_DEVICE;
		nrt_tensor_t *tw = tensor_f32(p, 0, "w", w, 8);
		nrt_tensor_t *tg = tensor_f32(p, 0, "g", g, 8);
		nrt_tensor_set_t *in = rt_tensor_set_of(2, "w", tw, "g", tg), *out = rt_tensor_set_of(0);
		ck_assert_int_eq(nrt_execute_repeat(m, in, out, 3), NRT_SUCCESS);
		ck_assert_int_eq(nrt_tensor_read(tw, r, 0, sizeof(r)), NRT_SUCCESS);
		for (int i = 0; i < 8; i++)
			ck_assert_float_eq(r[i], (float)i - 0.75f);
		nrt_destroy_tensor_set(&in);
		nrt_destroy_tensor_set(&out);
		nrt_tensor_free(&tw);
		nrt_tensor_free(&tg);
	}
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

/* ---- execution errors ---- */

START_TEST(test_nan_returns_1003_with_location_and_one_log_line)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_sqrt(8, &sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	float x[8] = { 1, 4, 9, -1, 16, -2, 25, 36 }, y[8];
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", x, 8);
	nrt_tensor_t *ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", NULL, 8);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", tx), *out = rt_tensor_set_of(1, "y", ty);
	test_capture_begin();
	NRT_STATUS st = nrt_execute(m, in, out);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	ck_assert_int_eq(st, 1003);
	/* one line naming instruction, HLO name, op_type, source line, tensor, index, count */
	ck_assert_ptr_nonnull(strstr(log, "nrt: ERROR"));
	char *nl = strchr(log, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_str_eq(nl + 1, "");
	ck_assert_ptr_nonnull(strstr(log, "vector engine instruction 1"));
	ck_assert_ptr_nonnull(strstr(log, "sqrt.7"));
	ck_assert_ptr_nonnull(strstr(log, "op_type 'sqrt'"));
	ck_assert_ptr_nonnull(strstr(log, "train.py:42"));
	ck_assert_ptr_nonnull(strstr(log, "output 'y'"));
	ck_assert_ptr_nonnull(strstr(log, "flat index 3"));
	ck_assert_ptr_nonnull(strstr(log, "2 NaN"));
	free(log);
	nrt_neuronsim_exec_error_t e;
	ck_assert_int_eq(nrt_neuronsim_get_last_error(m, &e), NRT_SUCCESS);
	ck_assert_int_eq(e.status, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	ck_assert_int_eq(e.kind, NRT_NEURONSIM_ERROR_NAN);
	ck_assert_uint_eq(e.engine, ISA_ENGINE_VECTOR);
	ck_assert_uint_eq(e.insn_index, 1);
	ck_assert_str_eq(e.hlo_name, "sqrt.7");
	ck_assert_str_eq(e.op_type, "sqrt");
	ck_assert_str_eq(e.source_file, "train.py");
	ck_assert_uint_eq(e.source_line, 42);
	ck_assert_str_eq(e.tensor, "y");
	ck_assert_uint_eq(e.first_index, 3);
	ck_assert_uint_eq(e.count, 2);
	/* the execution completed: good elements are there */
	ck_assert_int_eq(nrt_tensor_read(ty, y, 0, sizeof(y)), NRT_SUCCESS);
	ck_assert_float_eq(y[2], 3);
	ck_assert(isnan(y[3]));

	/* with the check off, the same run succeeds */
	nrt_close();
	setenv("NEURONSIM_NAN_CHECK", "0", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	m = load(neff, sz, -1, -1);
	tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", x, 8);
	ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", NULL, 8);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	in = rt_tensor_set_of(1, "x", tx);
	out = rt_tensor_set_of(1, "y", ty);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_SUCCESS);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_oob_returns_1006_and_leaves_memory_intact)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_oob(&sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	float x[4] = { 1, 2, 3, 4 }, y0[4] = { 7, 7, 7, 7 }, r[4];
	/* neighbours on both sides of y, filled with a pattern */
	nrt_tensor_t *before = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "before", NULL, 64);
	nrt_tensor_t *ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", y0, 4);
	nrt_tensor_t *after = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "after", NULL, 64);
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", x, 4);
	ck_assert_int_eq(nrt_tensor_memset(before, 0, 0x5a, 256), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_memset(after, 0, 0xa5, 256), NRT_SUCCESS);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", tx), *out = rt_tensor_set_of(1, "y", ty);
	test_capture_begin();
	NRT_STATUS st = nrt_execute(m, in, out);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_EXEC_OOB);
	ck_assert_ptr_nonnull(strstr(log, "add.9"));
	ck_assert_ptr_nonnull(strstr(log, "oob.py:7"));
	free(log);
	nrt_neuronsim_exec_error_t e;
	ck_assert_int_eq(nrt_neuronsim_get_last_error(m, &e), NRT_SUCCESS);
	ck_assert_int_eq(e.kind, NRT_NEURONSIM_ERROR_OOB);
	ck_assert_str_eq(e.tensor, "y");
	ck_assert_int_eq(nrt_tensor_read(ty, r, 0, sizeof(r)), NRT_SUCCESS);
	ck_assert_mem_eq(r, y0, sizeof(r));
	uint8_t *b = nrt_tensor_get_va(before), *a = nrt_tensor_get_va(after);
	for (int i = 0; i < 256; i++) {
		ck_assert_uint_eq(b[i], 0x5a);
		ck_assert_uint_eq(a[i], 0xa5);
	}
	ck_assert_int_eq(nrt_tensor_read(tx, r, 0, sizeof(r)), NRT_SUCCESS);
	ck_assert_mem_eq(r, x, sizeof(r));
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_timeout_returns_nrt_timeout)
{
	test_env_default();
	setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	size_t sz;
	void *neff = test_neff_spin(&sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", NULL, 1);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", tx), *out = rt_tensor_set_of(0);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_TIMEOUT);
	nrt_neuronsim_exec_error_t e;
	ck_assert_int_eq(nrt_neuronsim_get_last_error(m, &e), NRT_SUCCESS);
	ck_assert_int_eq(e.kind, NRT_NEURONSIM_ERROR_TIMEOUT);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	free(neff);
	nrt_close();
}
END_TEST

/* Issue #11, item 2: one instruction's work is not bounded by its bytes
 * (stride-0 operands): the deadline was checked only between instructions, so
 * an ALU op over 2^33 elements ran 62 s past a 1 s deadline and succeeded, and
 * an s32 matmul of 2^20 x 2^20 x 2^20 never returned. Now the kernels poll the
 * deadline inside the instruction: NRT_TIMEOUT within the deadline + 1 s, on
 * either backend (on the kernel backend the driver also asks neuronsim-fwd to
 * abort the job at its deadline). */
static void expect_timeout_within_a_second(void *neff, size_t sz, const char *where)
{
	test_env_default();
	setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	nrt_model_t *m = load(neff, sz, 0, -1);
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", NULL, 1);
	nrt_tensor_t *ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", NULL, 1);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", tx), *out = rt_tensor_set_of(1, "y", ty);
	struct timespec a, b, ca, cb;
	test_capture_begin();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
	clock_gettime(CLOCK_MONOTONIC, &a);
	NRT_STATUS st = nrt_execute(m, in, out);
	clock_gettime(CLOCK_MONOTONIC, &b);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
	free(test_capture_end());
	double took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	double cpu = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9;
	ck_assert_int_eq(st, NRT_TIMEOUT);
	/* Within a second of work past the deadline, in CPU time: a loaded
	 * machine, a sanitizer build or the QEMU guest stall the wall clock for
	 * seconds. On the embedded backend the job runs in this process; on the
	 * kernel backend neuronsim-fwd runs it and only the far wall bound (the
	 * instruction alone would run a minute, or forever) says it stopped. */
	ck_assert_msg(cpu < 2.0 && took < 20.0,
		      "NRT_TIMEOUT after %.2f s (%.2f s of CPU) with a 1 s deadline", took, cpu);
	nrt_neuronsim_exec_error_t e;
	ck_assert_int_eq(nrt_neuronsim_get_last_error(m, &e), NRT_SUCCESS);
	ck_assert_int_eq(e.kind, NRT_NEURONSIM_ERROR_TIMEOUT);
	ck_assert_msg(strstr(e.message, where), "%s", e.message);
	/* the core is usable at once */
	add_fixture_t f;
	add_setup(&f, 4, 0, NRT_TENSOR_PLACEMENT_DEVICE);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	add_check(&f, 4);
	add_teardown(&f);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&ty);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	nrt_close();
}

START_TEST(test_huge_stride0_alu_times_out_within_a_second)
{
	size_t sz;
	void *neff = test_neff_huge_alu(&sz);
	expect_timeout_within_a_second(neff, sz, "during vector insn 0 (alu)");
	free(neff);
}
END_TEST

START_TEST(test_huge_stride0_int_matmul_times_out_within_a_second)
{
	/* 2^42 multiply-adds: under the load-time bound, hours of work */
	size_t sz;
	void *neff = test_neff_huge_matmul(1u << 14, &sz);
	expect_timeout_within_a_second(neff, sz, "during tensor insn 0 (matmul)");
	free(neff);
}
END_TEST

/* 2^20 x 2^20 x 2^20 (2^60 multiply-adds) is over the simulator's bound of
 * 2^44 per matmul (docs/isa.md, "Bounded work"): refused by nrt_load, with the
 * bound in the log line. */
START_TEST(test_matmul_over_the_work_bound_refused_at_load)
{
	test_env_default();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	size_t sz;
	void *neff = test_neff_huge_matmul(1u << 20, &sz);
	nrt_model_t *m = NULL;
	test_capture_begin();
	NRT_STATUS st = nrt_load(neff, sz, 0, -1, &m);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_INVALID);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(log, "more than the simulator's bound of 2^44"), "%s", log);
	free(log);
	free(neff);
	nrt_close();
}
END_TEST

/* Not in ThreadSanitizer builds: this NEFF races its own engines on device
 * memory on purpose, which TSan rightly reports as the device program's race
 * (docs/testing.md); the other builds check it stays memory-safe. */
#ifndef NEURONSIM_TSAN
/* Issue #11, item 1: the DMA engine rewrites a FUSED descriptor (n_code 1 ->
 * 0xFFFF -> 1) while the vector engine executes it. The simulator read the
 * descriptor twice (validate, then copy): a change in between copied 1 MiB into
 * a 6 KiB block. Every execution must now either compute y = x * x or stop with
 * NRT_INVALID naming the bad descriptor; never touch memory it does not own
 * (ASan runs this). The NEFF makes both engines look busy enough for the
 * threaded scheduler, and its two engines' copies overlap, so the automatic
 * scheduler's timing (docs/isa.md) runs all but a few executions on threads;
 * the inline ones end too (the DMA loop gives up its turn each round). */
START_TEST(test_fused_descriptor_rewritten_during_execution)
{
	test_env_default();
	setenv("NEURON_RT_EXEC_TIMEOUT", "20", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	enum { N = 64 };
	size_t sz;
	void *neff = test_neff_fused_race(N, 400, &sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	float x[N], y[N];
	for (int i = 0; i < N; i++)
		x[i] = (float)i - 20.0f;
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", x, N);
	nrt_tensor_t *ty = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "y", NULL, N);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", tx), *out = rt_tensor_set_of(1, "y", ty);
	int ok = 0, refused = 0;
	test_capture_begin(); /* the refusals are logged */
	for (int r = 0; r < 100; r++) {
		NRT_STATUS st = nrt_execute(m, in, out);
		if (st == NRT_SUCCESS) {
			ck_assert_int_eq(nrt_tensor_read(ty, y, 0, sizeof(y)), NRT_SUCCESS);
			for (int i = 0; i < N; i++)
				ck_assert_float_eq(y[i], x[i] * x[i]);
			ok++;
			continue;
		}
		ck_assert_int_eq(st, NRT_INVALID);
		nrt_neuronsim_exec_error_t e;
		ck_assert_int_eq(nrt_neuronsim_get_last_error(m, &e), NRT_SUCCESS);
		ck_assert_msg(strstr(e.message, "bad descriptor"), "%s", e.message);
		refused++;
	}
	free(test_capture_end());
	ck_assert_int_eq(ok + refused, 100);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&ty);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST
#endif

/* Issue #11, item 9: busy time was credited only when an execution completed,
 * so a core busy for 27 s showed 0% utilisation for 26 s (neuron-top,
 * neuron-monitor, nrt_neuronsim_get_core_stats). A running execution counts
 * as it goes: while the spin NEFF runs (until its 2 s deadline) the core's
 * busy time grows, and it ends at the execution's full length. */
typedef struct spin_arg {
	nrt_model_t *m;
	nrt_tensor_set_t *in, *out;
	NRT_STATUS st;
	atomic_int done; /* nrt_execute returned */
} spin_arg_t;

static void *spin_thread(void *p)
{
	spin_arg_t *a = p;
	a->st = nrt_execute(a->m, a->in, a->out);
	atomic_store(&a->done, 1);
	return NULL;
}

static uint64_t core_busy_ms(uint32_t nc)
{
	nrt_neuronsim_core_stats_t cs;
	ck_assert_int_eq(nrt_neuronsim_get_core_stats(nc, &cs), NRT_SUCCESS);
	return cs.busy_ns / 1000000u;
}

START_TEST(test_busy_time_counts_running_executions)
{
	test_env_default();
	setenv("NEURON_RT_EXEC_TIMEOUT", "2", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	size_t sz;
	void *neff = test_neff_spin(&sz);
	nrt_model_t *m = load(neff, sz, 0, -1);
	nrt_tensor_t *tx = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "x", NULL, 1);
	spin_arg_t a = { .m = m, .in = rt_tensor_set_of(1, "x", tx), .out = rt_tensor_set_of(0) };
	ck_assert_uint_eq(core_busy_ms(0), 0);
	pthread_t th;
	test_capture_begin();
	ck_assert_int_eq(pthread_create(&th, NULL, spin_thread, &a), 0);
	/* Two readings while the execution still runs, the second larger. Polled,
	 * not after fixed sleeps: a loaded machine that starts the execution late
	 * only makes the loop longer (it spins for 2 s once started). A reading
	 * counts only if nrt_execute had not returned after it: before the fix
	 * every such reading was 0, the whole time credited at the end. */
	uint64_t b1 = 0, b2 = 0;
	while (!atomic_load(&a.done)) {
		uint64_t b = core_busy_ms(0);
		if (atomic_load(&a.done))
			break;
		if (b1 == 0)
			b1 = b;
		else if (b > b1) {
			b2 = b;
			break;
		}
		struct timespec ms = { 0, 1000 * 1000 };
		nanosleep(&ms, NULL);
	}
	pthread_join(th, NULL);
	free(test_capture_end());
	ck_assert_int_eq(a.st, NRT_TIMEOUT);
	uint64_t b3 = core_busy_ms(0);
	ck_assert_msg(b1 > 0 && b2 > b1, "busy %llu then %llu ms while the execution ran",
		      (unsigned long long)b1, (unsigned long long)b2);
	ck_assert_msg(b3 >= b2 && b3 >= 1900 && b3 < 10000, "busy at the end %llu ms (was %llu)",
		      (unsigned long long)b3, (unsigned long long)b2);
	ck_assert_uint_eq(core_busy_ms(1), 0); /* another core stays idle */
	nrt_destroy_tensor_set(&a.in);
	nrt_destroy_tensor_set(&a.out);
	nrt_tensor_free(&tx);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

/* ---- misuse ---- */

START_TEST(test_execute_misuse)
{
	rt_init_default_ok();
	add_fixture_t f;
	add_setup(&f, 16, 0, NRT_TENSOR_PLACEMENT_DEVICE);
	ck_assert_int_eq(nrt_execute(NULL, f.in, f.outs), NRT_INVALID);
	ck_assert_int_eq(nrt_execute(f.m, NULL, f.outs), NRT_INVALID);
	ck_assert_int_eq(nrt_execute(f.m, f.in, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_execute(f.m, (nrt_tensor_set_t *)f.a, f.outs), NRT_INVALID);
	ck_assert_int_eq(nrt_execute((nrt_model_t *)f.a, f.in, f.outs), NRT_INVALID_HANDLE);
	/* missing input */
	nrt_tensor_set_t *partial = rt_tensor_set_of(1, "a", f.a);
	ck_assert_int_eq(nrt_execute(f.m, partial, f.outs), NRT_INVALID);
	/* missing output */
	nrt_tensor_set_t *empty = rt_tensor_set_of(0);
	ck_assert_int_eq(nrt_execute(f.m, f.in, empty), NRT_INVALID);
	/* wrong size, logged with both sizes */
	nrt_tensor_t *small = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "small", NULL, 15);
	nrt_tensor_set_t *bad = rt_tensor_set_of(2, "a", f.a, "b", small);
	test_capture_begin();
	NRT_STATUS st = nrt_execute(f.m, bad, f.outs);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_INVALID);
	ck_assert_ptr_nonnull(strstr(log, "'b'"));
	ck_assert_ptr_nonnull(strstr(log, "64"));
	ck_assert_ptr_nonnull(strstr(log, "60"));
	free(log);
	/* freed tensor in a set */
	nrt_tensor_t *gone = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, "gone", NULL, 16);
	nrt_tensor_set_t *stale = rt_tensor_set_of(2, "a", f.a, "b", gone);
	nrt_tensor_free(&gone);
	ck_assert_int_eq(nrt_execute(f.m, stale, f.outs), NRT_INVALID_HANDLE);
	/* empty tensor (no storage) */
	nrt_tensor_t *e;
	ck_assert_int_eq(nrt_tensor_allocate_empty("e", &e), NRT_SUCCESS);
	nrt_tensor_set_t *noback = rt_tensor_set_of(2, "a", f.a, "b", e);
	ck_assert_int_eq(nrt_execute(f.m, noback, f.outs), NRT_INVALID);
	/* nothing above changed the output */
	float o[16];
	ck_assert_int_eq(nrt_tensor_read(f.out, o, 0, sizeof(o)), NRT_SUCCESS);
	for (int i = 0; i < 16; i++)
		ck_assert_float_eq(o[i], 0);
	/* an unloaded model */
	nrt_model_t *m = f.m;
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(m, f.in, f.outs), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrt_unload(m), NRT_INVALID_HANDLE);
	nrt_tensor_info_array_t *info = NULL;
	ck_assert_int_eq(nrt_get_model_tensor_info(m, &info), NRT_INVALID_HANDLE);
	ck_assert_ptr_null(info);
	nrt_destroy_tensor_set(&partial);
	nrt_destroy_tensor_set(&empty);
	nrt_destroy_tensor_set(&bad);
	nrt_destroy_tensor_set(&stale);
	nrt_destroy_tensor_set(&noback);
	nrt_destroy_tensor_set(&f.in);
	nrt_destroy_tensor_set(&f.outs);
	free(f.neff);
	nrt_close(); /* frees the remaining tensors */
}
END_TEST

START_TEST(test_load_misuse_and_core_placement)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_add(4, &sz);
	nrt_model_t *m = (nrt_model_t *)0x1;
	ck_assert_int_eq(nrt_load(NULL, sz, -1, -1, &m), NRT_INVALID);
	ck_assert_int_eq(nrt_load(neff, 0, -1, -1, &m), NRT_INVALID);
	ck_assert_int_eq(nrt_load(neff, sz, -1, -1, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_load(neff, sz, 4, -1, &m), NRT_INVALID);
	ck_assert_int_eq(nrt_load(neff, sz, -2, -1, &m), NRT_INVALID);
	ck_assert_int_eq(nrt_load(neff, sz, 0, 0, &m), NRT_INVALID);
	ck_assert_int_eq(nrt_load(neff, sz, 3, 2, &m), NRT_LOAD_NOT_ENOUGH_NC);
	ck_assert_int_eq(nrt_load(neff, sz, 0, 5, &m), NRT_LOAD_NOT_ENOUGH_NC);
	ck_assert_ptr_eq(m, (nrt_model_t *)0x1); /* untouched on failure */
	/* each refusal is said once, at the boundary, in nrt_load's name */
	test_capture_begin();
	ck_assert_int_eq(nrt_load(neff, sz, 4, -1, &m), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_str_eq(log, "nrt: ERROR nrt_load: start_nc 4 is not a visible NeuronCore (4 visible: "
			      "0-3, or -1)\n");
	free(log);
	test_capture_begin();
	ck_assert_int_eq(nrt_load(neff, sz, 3, 2, &m), NRT_LOAD_NOT_ENOUGH_NC);
	log = test_capture_end();
	ck_assert_msg(strncmp(log, "nrt: ERROR nrt_load: model '", strlen("nrt: ERROR nrt_load: model '")) == 0 &&
		      strstr(log, "needs 2 NeuronCore(s) from core 3; 4 are visible\n") &&
		      strchr(log, '\n') == log + strlen(log) - 1, "%s", log);
	free(log);
	/* several models per core, and replicas */
	nrt_model_t *m1 = load(neff, sz, 2, -1), *m2 = load(neff, sz, 2, -1), *m4 = load(neff, sz, 0, 4);
	uint32_t n;
	ck_assert_int_eq(nrt_get_model_nc_count(m4, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(nrt_get_model_instance_count(m4, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(nrt_get_model_nc_count(m1, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(nrt_get_model_nc_count(m1, NULL), NRT_INVALID);
	/* a multi-core NEFF: nc_count must be a multiple */
	size_t sz2;
	void *neff2 = test_neff_add_cores(4, 2, &sz2);
	ck_assert_int_eq(nrt_load(neff2, sz2, 0, 3, &m), NRT_INVALID);
	nrt_model_t *mc = load(neff2, sz2, -1, -1);
	ck_assert_int_eq(nrt_get_model_nc_count(mc, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 2);
	/* every one executes */
	float av[4] = { 1, 2, 3, 4 }, o[4];
	nrt_model_t *all[] = { m1, m2, m4, mc };
	for (int i = 0; i < 4; i++) {
		nrt_tensor_t *a = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 2, "a", av, 4);
		nrt_tensor_t *out = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 2, "out", NULL, 4);
		nrt_tensor_set_t *in = rt_tensor_set_of(2, "a", a, "b", a), *os = rt_tensor_set_of(1, "out", out);
		ck_assert_int_eq(nrt_execute_repeat(all[i], in, os, 4), NRT_SUCCESS);
		ck_assert_int_eq(nrt_tensor_read(out, o, 0, sizeof(o)), NRT_SUCCESS);
		for (int k = 0; k < 4; k++)
			ck_assert_float_eq(o[k], 2 * av[k]);
		nrt_destroy_tensor_set(&in);
		nrt_destroy_tensor_set(&os);
		nrt_tensor_free(&a);
		nrt_tensor_free(&out);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(nrt_unload(all[i]), NRT_SUCCESS);
	free(neff);
	free(neff2);
	nrt_close();
}
END_TEST

START_TEST(test_bad_visible_core_for_load)
{
	test_env_default();
	setenv("NEURON_RT_VISIBLE_CORES", "2", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	size_t sz;
	void *neff = test_neff_add(4, &sz);
	nrt_model_t *m = NULL;
	ck_assert_int_eq(nrt_load(neff, sz, 1, -1, &m), NRT_INVALID); /* only logical 0 */
	m = load(neff, sz, 0, -1);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

/* ---- NEFF validation ---- */

START_TEST(test_corrupt_and_truncated_neff_invalid)
{
	rt_init_default_ok();
	size_t sz;
	uint8_t *neff = test_neff_add(4, &sz);
	uint64_t base = dev_in_use();
	nrt_model_t *m = NULL;
	/* truncated at several points */
	size_t cuts[] = { 1, 8, 63, sz / 2, sz - 1 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		test_capture_begin();
		NRT_STATUS st = nrt_load(neff, cuts[i], -1, -1, &m);
		char *log = test_capture_end();
		ck_assert_int_eq(st, NRT_INVALID);
		ck_assert_ptr_nonnull(strstr(log, "nrt_load"));
		free(log);
		ck_assert_ptr_null(m);
	}
	/* a flipped byte in the body (checksum) and in the magic */
	uint8_t *bad = malloc(sz);
	memcpy(bad, neff, sz);
	bad[sz - 3] ^= 0x40;
	test_capture_begin();
	ck_assert_int_eq(nrt_load(bad, sz, -1, -1, &m), NRT_INVALID);
	char *log = test_capture_end();
	/* the reader's message, said once, at the NRT boundary */
	char want[96];
	snprintf(want, sizeof(want), "nrt: ERROR nrt_load: invalid NEFF (%zu bytes): ", sz);
	ck_assert_msg(strncmp(log, want, strlen(want)) == 0, "%s", log);
	ck_assert_msg(strchr(log, '\n') == log + strlen(log) - 1, "one line: %s", log);
	free(log);
	memcpy(bad, neff, sz);
	bad[0] ^= 1;
	ck_assert_int_eq(nrt_load(bad, sz, -1, -1, &m), NRT_INVALID);
	ck_assert_ptr_null(m);
	ck_assert_uint_eq(dev_in_use(), base);
	free(bad);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_unknown_neff_version_unsupported)
{
	rt_init_default_ok();
	size_t sz;
	uint8_t *neff = test_neff_add(4, &sz);
	neff_header_t *h = (neff_header_t *)neff;
	h->version_major = NEFF_VERSION_MAJOR + 1;
	h->version_minor = 3;
	nrt_model_t *m = NULL;
	test_capture_begin();
	NRT_STATUS st = nrt_load(neff, sz, -1, -1, &m);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_UNSUPPORTED_NEFF_VERSION);
	char both[160];
	snprintf(both, sizeof(both), "%d.3", NEFF_VERSION_MAJOR + 1);
	ck_assert_ptr_nonnull(strstr(log, both));
	snprintf(both, sizeof(both), "%d.x", NEFF_VERSION_MAJOR);
	ck_assert_ptr_nonnull(strstr(log, both));
	/* one line: the runtime's words, then the reader's */
	snprintf(both, sizeof(both), "nrt: ERROR nrt_load: NEFF format version %d.3 is not supported: this "
		 "runtime reads %d.x (up to %d.%d): NEFF format %d.3", NEFF_VERSION_MAJOR + 1,
		 NEFF_VERSION_MAJOR, NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR, NEFF_VERSION_MAJOR + 1);
	ck_assert_msg(strncmp(log, both, strlen(both)) == 0, "%s", log);
	ck_assert_msg(strchr(log, '\n') == log + strlen(log) - 1, "one line: %s", log);
	free(log);
	ck_assert_ptr_null(m);
	free(neff);
	nrt_close();
}
END_TEST

/* ---- memory ---- */

START_TEST(test_unload_returns_device_memory)
{
	rt_init_default_ok();
	uint64_t base = dev_in_use();
	size_t sz;
	void *neff = test_neff_const_scratch(&sz);
	nrt_model_t *m = load(neff, sz, -1, 4);
	nrt_neuronsim_mem_usage_t u;
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	ck_assert_uint_gt(u.by_category[NRT_NEURONSIM_MEM_CODE], 0);
	ck_assert_uint_gt(u.by_category[NRT_NEURONSIM_MEM_CONSTANTS], 0);
	ck_assert_uint_gt(u.by_category[NRT_NEURONSIM_MEM_SCRATCH], 0);
	ck_assert_uint_gt(u.in_use, base);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	ck_assert_uint_eq(dev_in_use(), base);
	ck_assert_int_eq(nrt_neuronsim_get_mem_usage(&u), NRT_SUCCESS);
	for (int c = 0; c < NRT_NEURONSIM_MEM_CATEGORY_COUNT; c++)
		ck_assert_uint_eq(u.by_category[c], 0);
	/* load/unload many times: no growth */
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(nrt_unload(load(neff, sz, -1, -1)), NRT_SUCCESS);
	ck_assert_uint_eq(dev_in_use(), base);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_model_tensor_info)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_matmul(2, 3, 4, &sz);
	nrt_model_t *m = load(neff, sz, -1, -1);
	nrt_tensor_info_array_t *info = NULL;
	ck_assert_int_eq(nrt_get_model_tensor_info(m, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_get_model_tensor_info(m, &info), NRT_SUCCESS);
	ck_assert_uint_eq(info->tensor_count, 3);
	ck_assert_str_eq(info->tensor_array[0].name, "x");
	ck_assert_int_eq(info->tensor_array[0].usage, NRT_TENSOR_USAGE_INPUT);
	ck_assert_uint_eq(info->tensor_array[0].size, 2 * 3 * 4);
	ck_assert_int_eq(info->tensor_array[0].dtype, NRT_DTYPE_FLOAT32);
	ck_assert_uint_eq(info->tensor_array[0].ndim, 2);
	ck_assert_uint_eq(info->tensor_array[0].shape[0], 2);
	ck_assert_uint_eq(info->tensor_array[0].shape[1], 3);
	ck_assert_str_eq(info->tensor_array[2].name, "y");
	ck_assert_int_eq(info->tensor_array[2].usage, NRT_TENSOR_USAGE_OUTPUT);
	ck_assert_uint_eq(info->tensor_array[2].shape[1], 4);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	ck_assert_str_eq(info->tensor_array[1].name, "w"); /* still valid after unload */
	ck_assert_int_eq(nrt_free_model_tensor_info(info), NRT_SUCCESS);
	ck_assert_int_eq(nrt_free_model_tensor_info(NULL), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

/* ---- threads ---- */

typedef struct worker {
	nrt_model_t *m;
	int nc;
	int seed;
	int iters;
	int failures;
} worker_t;

static void *worker_main(void *arg)
{
	worker_t *w = arg;
	enum { N = 4096 };
	float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float)), *o = malloc(N * sizeof(float));
	nrt_tensor_t *ta, *tb, *to;
	nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, w->nc, N * sizeof(float), "a", &ta);
	nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, w->nc, N * sizeof(float), "b", &tb);
	nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, w->nc, N * sizeof(float), "out", &to);
	nrt_tensor_set_t *in, *out;
	nrt_allocate_tensor_set(&in);
	nrt_allocate_tensor_set(&out);
	nrt_add_tensor_to_tensor_set(in, "a", ta);
	nrt_add_tensor_to_tensor_set(in, "b", tb);
	nrt_add_tensor_to_tensor_set(out, "out", to);
	for (int it = 0; it < w->iters; it++) {
		for (int i = 0; i < N; i++) {
			a[i] = (float)(w->seed * 1000 + it);
			b[i] = (float)i;
		}
		if (nrt_tensor_write(ta, a, 0, N * sizeof(float)) || nrt_tensor_write(tb, b, 0, N * sizeof(float)) ||
		    nrt_execute(w->m, in, out) || nrt_tensor_read(to, o, 0, N * sizeof(float))) {
			w->failures++;
			continue;
		}
		for (int i = 0; i < N; i++)
			if (o[i] != a[i] + b[i]) {
				w->failures++;
				break;
			}
	}
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&ta);
	nrt_tensor_free(&tb);
	nrt_tensor_free(&to);
	free(a);
	free(b);
	free(o);
	return NULL;
}

START_TEST(test_four_threads_two_cores_correct)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_add(4096, &sz);
	nrt_model_t *m0 = load(neff, sz, 0, -1), *m1 = load(neff, sz, 1, -1);
	pthread_t th[4];
	worker_t w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker_t){ .m = i % 2 ? m1 : m0, .nc = i % 2, .seed = i + 1, .iters = 200 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	ck_assert_int_eq(nrt_unload(m0), NRT_SUCCESS);
	ck_assert_int_eq(nrt_unload(m1), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_threads_share_one_replicated_model)
{
	rt_init_default_ok();
	size_t sz;
	void *neff = test_neff_add(4096, &sz);
	nrt_model_t *m = load(neff, sz, 0, 2); /* two replicas on cores 0 and 1 */
	pthread_t th[4];
	worker_t w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker_t){ .m = m, .nc = 0, .seed = i + 1, .iters = 100 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_load_out_of_device_memory_is_clean)
{
	test_env_default();
	setenv("NEURONSIM_DEVICE_MEMORY", "1M", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	/* fill the device except for a few bytes */
	nrt_tensor_t *big = NULL;
	size_t fill = (1u << 20) - 4096 - 1024; /* 4 KiB of the device are reserved */
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, fill, "big", &big), NRT_SUCCESS);
	uint64_t base = dev_in_use();
	size_t sz;
	void *neff = test_neff_matmul(64, 64, 64, &sz);
	nrt_model_t *m = NULL;
	/* four replicas need four copies of code: does not fit */
	ck_assert_int_eq(nrt_load(neff, sz, 0, 4, &m), NRT_RESOURCE);
	ck_assert_ptr_null(m);
	ck_assert_uint_eq(dev_in_use(), base);
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 65536, "t", &t), NRT_RESOURCE);
	nrt_tensor_free(&big);
	ck_assert_uint_eq(dev_in_use(), 0);
	m = load(neff, sz, 0, 4);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	free(neff);
	nrt_close();
}
END_TEST

START_TEST(test_tensors_of_another_device_are_staged)
{
	test_env_default();
	setenv("NEURONSIM_NUM_DEVICES", "2", 1);
	setenv("NEURONSIM_CORES_PER_DEVICE", "2", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	uint32_t n;
	ck_assert_int_eq(nrt_get_total_nc_count(&n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	add_fixture_t f;
	add_setup(&f, 100, 3, NRT_TENSOR_PLACEMENT_DEVICE); /* tensors and model on device 1 */
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	add_check(&f, 100);
	/* the same tensors with a model on device 0 */
	nrt_model_t *m0 = load(f.neff, f.size, 0, -1);
	ck_assert_int_eq(nrt_tensor_memset(f.out, 0, 0, 400), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(m0, f.in, f.outs), NRT_SUCCESS);
	add_check(&f, 100);
	/* an instance may not span devices */
	nrt_model_t *m = NULL;
	size_t sz2;
	void *neff2 = test_neff_add_cores(4, 2, &sz2);
	ck_assert_int_eq(nrt_load(neff2, sz2, 1, -1, &m), NRT_LOAD_NOT_ENOUGH_NC);
	ck_assert_int_eq(nrt_unload(m0), NRT_SUCCESS);
	free(neff2);
	add_teardown(&f);
	nrt_close();
}
END_TEST

typedef struct racer {
	nrt_model_t *m;
	nrt_tensor_set_t *in, *out;
	atomic_int ok, gone, other;
} racer_t;

static void *racer_main(void *arg)
{
	racer_t *r = arg;
	for (;;) {
		NRT_STATUS st = nrt_execute(r->m, r->in, r->out);
		if (st == NRT_SUCCESS) {
			atomic_fetch_add(&r->ok, 1);
		} else if (st == NRT_INVALID_HANDLE) {
			atomic_fetch_add(&r->gone, 1);
			return NULL;
		} else {
			atomic_fetch_add(&r->other, 1);
			return NULL;
		}
	}
}

START_TEST(test_unload_waits_for_running_executions)
{
	test_env_default();
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	add_fixture_t f;
	add_setup(&f, 1 << 16, 0, NRT_TENSOR_PLACEMENT_DEVICE);
	uint64_t base = dev_in_use();
	racer_t r = { .m = f.m, .in = f.in, .out = f.outs };
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, racer_main, &r), 0);
	while (atomic_load(&r.ok) < 50)
		sched_yield();
	/* other models come and go on the same core meanwhile */
	nrt_model_t *tmp = load(f.neff, f.size, 0, -1);
	ck_assert_int_eq(nrt_unload(tmp), NRT_SUCCESS);
	ck_assert_int_eq(nrt_unload(f.m), NRT_SUCCESS);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(atomic_load(&r.gone), 3);
	ck_assert_int_eq(atomic_load(&r.other), 0);
	ck_assert_uint_lt(dev_in_use(), base);
	add_check(&f, 1 << 16);
	nrt_destroy_tensor_set(&f.in);
	nrt_destroy_tensor_set(&f.outs);
	free(f.neff);
	nrt_close();
}
END_TEST

START_TEST(test_close_releases_loaded_models_and_tensors)
{
	rt_init_default_ok();
	add_fixture_t f;
	add_setup(&f, 64, 1, NRT_TENSOR_PLACEMENT_HOST);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	test_capture_begin();
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	nrt_close(); /* warns about the model; LeakSanitizer checks the rest */
	char *log = test_capture_end();
	free(log);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_CLOSED);
	nrt_destroy_tensor_set(&f.in);
	nrt_destroy_tensor_set(&f.outs);
	free(f.neff);
	/* a fresh runtime starts from zero */
	rt_init_default_ok();
	ck_assert_uint_eq(dev_in_use(), 0);
	nrt_close();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_exec");
	TCase *tc = tcase_create("results");
	tcase_add_test(tc, test_execute_add_device_tensors);
	tcase_add_test(tc, test_execute_add_host_tensors_are_staged);
	tcase_add_test(tc, test_execute_matmul);
	tcase_add_test(tc, test_execute_constants_and_scratch);
	tcase_add_test(tc, test_execute_aliased_output_updates_input_in_place);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_nan_returns_1003_with_location_and_one_log_line);
	tcase_add_test(tc, test_oob_returns_1006_and_leaves_memory_intact);
	tcase_add_test(tc, test_timeout_returns_nrt_timeout);
	tcase_add_test(tc, test_huge_stride0_alu_times_out_within_a_second);
	tcase_add_test(tc, test_huge_stride0_int_matmul_times_out_within_a_second);
	tcase_add_test(tc, test_matmul_over_the_work_bound_refused_at_load);
#ifndef NEURONSIM_TSAN /* a device program's race on purpose: see the test */
	tcase_add_test(tc, test_fused_descriptor_rewritten_during_execution);
#endif
	tcase_add_test(tc, test_busy_time_counts_running_executions);
	suite_add_tcase(s, tc);
	tc = tcase_create("misuse");
	tcase_add_test(tc, test_execute_misuse);
	tcase_add_test(tc, test_load_misuse_and_core_placement);
	tcase_add_test(tc, test_bad_visible_core_for_load);
	tcase_add_test(tc, test_corrupt_and_truncated_neff_invalid);
	tcase_add_test(tc, test_unknown_neff_version_unsupported);
	suite_add_tcase(s, tc);
	tc = tcase_create("memory");
	tcase_add_test(tc, test_unload_returns_device_memory);
	tcase_add_test(tc, test_model_tensor_info);
	tcase_add_test(tc, test_load_out_of_device_memory_is_clean);
	tcase_add_test(tc, test_tensors_of_another_device_are_staged);
	suite_add_tcase(s, tc);
	tc = tcase_create("threads");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_four_threads_two_cores_correct);
	tcase_add_test(tc, test_threads_share_one_replicated_model);
	tcase_add_test(tc, test_unload_waits_for_running_executions);
	tcase_add_test(tc, test_close_releases_loaded_models_and_tensors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
