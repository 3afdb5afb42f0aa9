/* Aliased outputs computed in place (compiler/lower/lower.c, update_in_place): an SGD
 * step's fusion writes the aliased output, which the runtime binds to its input's
 * memory when the caller gives no output tensor, only when every other read of the
 * input comes first; otherwise the output is computed in scratch and copied last.
 * Each case runs through libnrt with the input updated in place and is checked
 * against values computed here. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncc/ncc.h"
#include "neuronsim/isa.h"
#include "neuronsim/neff.h"
#include "nrt/nrt.h"

/* [D, D] operands: many FUSED blocks, so that a read after another block's
 * write would see it */
#define D 64
#define N (D * D)

static void *compile(const char *text, size_t *size)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	o.use_env = false;
	ncc_compile_result_t r;
	memset(&r, 0, sizeof(r));
	ncc_error_t e;
	memset(&e, 0, sizeof(e));
	ck_assert_msg(ncc_compile_text(text, strlen(text), "step.hlo", &o, &r, &e) == NCC_OK,
		      "compile: %s", e.msg);
	*size = r.neff_size;
	return r.neff;
}

/* COPY instructions whose destination is output tensor `out` (NEFF tensor index). */
static uint32_t copies_into(const void *neff, size_t size, uint32_t out)
{
	neff_view_t v;
	char msg[256];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(neff, size, &v), msg, sizeof(msg)),
			 NS_STATUS_OK);
	uint32_t n = 0;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		for (uint32_t i = 0; i < v.code_count[0][e]; i++)
			n += v.code[0][e][i].opcode == ISA_OP_COPY &&
			     v.code[0][e][i].ap[0].region == ISA_REGION_IO0 + out;
	return n;
}

static nrt_tensor_t *tensor(const char *name, const float *data)
{
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, N * sizeof(float), name,
					     &t), NRT_SUCCESS);
	if (data)
		ck_assert_int_eq(nrt_tensor_write(t, data, 0, N * sizeof(float)), NRT_SUCCESS);
	return t;
}

/* Runs a model of inputs w (updated in place: output 0 has no tensor) and x and
 * output 1 (z); returns w and z after the execution. */
static void run(const void *neff, size_t size, const float *w, const float *x, float *w_after,
		float *z)
{
	nrt_model_t *m = NULL;
	ck_assert_int_eq(nrt_load(neff, size, -1, -1, &m), NRT_SUCCESS);
	nrt_tensor_t *tw = tensor("input0", w), *tx = tensor("input1", x), *tz = tensor("output1", NULL);
	nrt_tensor_set_t *in = NULL, *out = NULL;
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in, "input0", tw), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in, "input1", tx), NRT_SUCCESS);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(out, "output1", tz), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(m, in, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(tw, w_after, 0, N * sizeof(float)), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(tz, z, 0, N * sizeof(float)), NRT_SUCCESS);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&tw);
	nrt_tensor_free(&tx);
	nrt_tensor_free(&tz);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
}

static void inputs(float *w, float *x)
{
	for (int i = 0; i < N; i++) {
		w[i] = (float)(i % 97) * 0.25f;
		x[i] = 0.5f * (float)(i % 5) - 1.0f;
	}
}

/* The step's other reads of w (z = w * x, and a transposed read) come first:
 * w' = w - 0.5 * x is written straight into w, no copy into output 0. */
START_TEST(test_update_after_every_read_is_in_place)
{
	const char *t =
		"HloModule step, input_output_alias={ {0}: (0, {}, may-alias) }\n"
		"ENTRY e { w = f32[64,64] parameter(0)\n x = f32[64,64] parameter(1)\n"
		" wt = f32[64,64] transpose(w), dimensions={1,0}\n"
		" a = f32[64,64] multiply(w, x)\n b = f32[64,64] add(a, wt)\n"
		" h = f32[] constant(0.5)\n hb = f32[64,64] broadcast(h), dimensions={}\n"
		" s = f32[64,64] multiply(hb, x)\n u = f32[64,64] subtract(w, s)\n"
		" ROOT r = (f32[64,64], f32[64,64]) tuple(u, b) }\n";
	size_t size;
	void *neff = compile(t, &size);
	ck_assert_uint_eq(copies_into(neff, size, 2), 0);
	static float w[N], x[N], wa[N], z[N];
	inputs(w, x);
	run(neff, size, w, x, wa, z);
	for (int i = 0; i < N; i++) {
		ck_assert_float_eq(wa[i], w[i] - 0.5f * x[i]);
		ck_assert_float_eq(z[i], w[i] * x[i] + w[(i % D) * D + i / D]);
	}
	free(neff);
}
END_TEST

/* A read of w after the update (z = w + w', which needs w') keeps the update in
 * scratch and copies it last: z sees the old w. */
START_TEST(test_read_after_update_keeps_the_copy)
{
	const char *t =
		"HloModule step, input_output_alias={ {0}: (0, {}, may-alias) }\n"
		"ENTRY e { w = f32[64,64] parameter(0)\n x = f32[64,64] parameter(1)\n"
		" h = f32[] constant(0.5)\n hb = f32[64,64] broadcast(h), dimensions={}\n"
		" s = f32[64,64] multiply(hb, x)\n u = f32[64,64] subtract(w, s)\n"
		" e2 = f32[64,64] exponential(u)\n z = f32[64,64] add(w, e2)\n"
		" ROOT r = (f32[64,64], f32[64,64]) tuple(u, z) }\n";
	size_t size;
	void *neff = compile(t, &size);
	ck_assert_uint_ge(copies_into(neff, size, 2), 1);
	static float w[N], x[N], wa[N], z[N];
	inputs(w, x);
	run(neff, size, w, x, wa, z);
	for (int i = 0; i < N; i++) {
		float u = w[i] - 0.5f * x[i];
		ck_assert_float_eq(wa[i], u);
		ck_assert_float_eq_tol(z[i], w[i] + expf(u), 1e-5f * (w[i] + expf(u)));
	}
	free(neff);
}
END_TEST

/* The update (a fusion) reads w transposed: an element would be read after
 * another element's write, so it is not done in place. */
START_TEST(test_transposed_read_keeps_the_copy)
{
	const char *t =
		"HloModule step, input_output_alias={ {0}: (0, {}, may-alias) }\n"
		"ENTRY e { w = f32[64,64] parameter(0)\n x = f32[64,64] parameter(1)\n"
		" wt = f32[64,64] transpose(w), dimensions={1,0}\n d = f32[64,64] subtract(wt, x)\n"
		" h = f32[] constant(0.5)\n hb = f32[64,64] broadcast(h), dimensions={}\n"
		" u = f32[64,64] multiply(d, hb)\n"
		" z = f32[64,64] multiply(x, x)\n"
		" ROOT r = (f32[64,64], f32[64,64]) tuple(u, z) }\n";
	size_t size;
	void *neff = compile(t, &size);
	ck_assert_uint_ge(copies_into(neff, size, 2), 1);
	static float w[N], x[N], wa[N], z[N];
	inputs(w, x);
	run(neff, size, w, x, wa, z);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(wa[i], (w[(i % D) * D + i / D] - x[i]) * 0.5f);
	free(neff);
}
END_TEST

/* The engine and position in its stream of the first instruction that writes
 * tensor `out` (NEFF tensor index). */
static void first_write(const void *neff, size_t size, uint32_t out, uint32_t *engine, uint32_t *pos)
{
	neff_view_t v;
	char msg[256];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(neff, size, &v), msg, sizeof(msg)),
			 NS_STATUS_OK);
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		for (uint32_t i = 0; i < v.code_count[0][e]; i++)
			if (v.code[0][e][i].n_ap > 0 && v.code[0][e][i].ap[0].region == ISA_REGION_IO0 + out) {
				*engine = e;
				*pos = i;
				return;
			}
	ck_abort_msg("no instruction writes tensor %u", out);
}

/* An update the HLO lists last (as PyTorch/XLA lists an optimizer's) is
 * lowered right after the last read of w (the product with w transposed),
 * before the work that follows it (z, from that product): it reads x while
 * it is in the cache. z still sees the old w, and w' is written in place. */
START_TEST(test_update_lowered_after_the_last_read)
{
	const char *t =
		"HloModule step, input_output_alias={ {0}: (0, {}, may-alias) }\n"
		"ENTRY e { w = f32[64,64] parameter(0)\n x = f32[64,64] parameter(1)\n"
		" h = f32[] constant(0.5)\n hb = f32[64,64] broadcast(h), dimensions={}\n"
		" wt = f32[64,64] transpose(w), dimensions={1,0}\n"
		" d = f32[64,64] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		" q = f32[] constant(0.01)\n qb = f32[64,64] broadcast(q), dimensions={}\n"
		" dq = f32[64,64] multiply(d, qb)\n z = f32[64,64] exponential(dq)\n"
		" s = f32[64,64] multiply(hb, x)\n u = f32[64,64] subtract(w, s)\n"
		" ROOT r = (f32[64,64], f32[64,64]) tuple(u, z) }\n";
	size_t size;
	void *neff = compile(t, &size);
	ck_assert_uint_eq(copies_into(neff, size, 2), 0);
	uint32_t eu, pu, ez, pz;
	first_write(neff, size, 2, &eu, &pu);
	first_write(neff, size, 3, &ez, &pz);
	ck_assert_uint_eq(eu, ez);
	ck_assert_msg(pu < pz, "the update is instruction %u, z's %u", pu, pz);
	static float w[N], x[N], wa[N], z[N];
	inputs(w, x);
	run(neff, size, w, x, wa, z);
	for (int i = 0; i < N; i++) {
		ck_assert_float_eq(wa[i], w[i] - 0.5f * x[i]);
		int r = i / D, c = i % D;
		double acc = 0;
		for (int k = 0; k < D; k++)
			acc += (double)x[r * D + k] * w[c * D + k];
		float want = expf((float)acc * 0.01f);
		ck_assert_float_eq_tol(z[i], want, 1e-4f * want);
	}
	free(neff);
}
END_TEST

int main(void)
{
	setenv("NEURONSIM_BACKEND", "embedded", 0);
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "nrt_init failed with status %d\n", (int)st);
		return 1;
	}
	Suite *s = suite_create("update_in_place");
	TCase *tc = tcase_create("update_in_place");
	tcase_add_test(tc, test_update_after_every_read_is_in_place);
	tcase_add_test(tc, test_read_after_update_keeps_the_copy);
	tcase_add_test(tc, test_transposed_read_keeps_the_copy);
	tcase_add_test(tc, test_update_lowered_after_the_last_read);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	nrt_close();
	return failed ? 1 : 0;
}
