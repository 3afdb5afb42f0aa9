/* Check tests of the ncc back end: each HLO op lowered at -O0 (and -O1 multi-engine) and run on libfwsim, compared with hand-computed values; error paths (unsupported types, bad options); the corpus compiles and runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "hlo/hlo_parser.h"
#include "lower/lower.h"
#include "lower_run.h"
#include "conv.h" /* fwsim_conv_gemm_units, fwsim_conv_flat_units: the firmware takes what the compiler sends */
#include "neuronsim/neff.h"
#include "hlo/verify.h"
#include "corpus_split.h"
#include "interp/interp.h"
#include "passes/passes.h"

/* Runs text at -O0 and at -O1 (multi-engine) with the given inputs, checks that
 * output 0 equals want (n f32 values) within tol, at both levels. */
static void check_f32(const char *text, const void *const *in, uint32_t nin, const float *want,
		      size_t n, float tol)
{
	for (int opt = 0; opt <= 1; opt++) {
		ncc_run_t r;
		int rc = ncc_run_module(NULL, text, opt, in, nin, 1, &r);
		ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
		ck_assert_uint_eq(r.out_size[0], n * sizeof(float));
		const float *got = r.out[0];
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])) ||
					      (isnan(got[i]) && isnan(want[i])),
				      "-O%d: element %zu: got %g want %g", opt, i, got[i], want[i]);
		ncc_run_free(&r);
	}
}

static void check_bytes(const char *text, const void *const *in, uint32_t nin, uint32_t out,
			const void *want, size_t size)
{
	for (int opt = 0; opt <= 1; opt++) {
		ncc_run_t r;
		int rc = ncc_run_module(NULL, text, opt, in, nin, 1, &r);
		ck_assert_msg(rc == 0, "-O%d: %s", opt, r.msg);
		ck_assert_uint_eq(r.out_size[out], size);
		ck_assert_msg(memcmp(r.out[out], want, size) == 0, "-O%d: output %u differs", opt, out);
		ncc_run_free(&r);
	}
}

static const float k_x6[6] = { 1, -2, 3, -4, 5, 6 };
static const float k_y6[6] = { 0.5f, 2, -1, 4, 0.25f, -3 };

START_TEST(test_add_mul)
{
	const char *t = "HloModule m\n"
			"ENTRY e { x = f32[2,3] parameter(0)\n y = f32[2,3] parameter(1)\n"
			" a = f32[2,3] add(x, y)\n ROOT m = f32[2,3] multiply(a, x) }\n";
	const void *in[2] = { k_x6, k_y6 };
	float want[6];
	for (int i = 0; i < 6; i++)
		want[i] = (k_x6[i] + k_y6[i]) * k_x6[i];
	check_f32(t, in, 2, want, 6, 0);
}
END_TEST

START_TEST(test_unary)
{
	static const struct { const char *op; double (*f)(double); } ops[] = {
		{ "exponential", exp }, { "tanh", tanh }, { "sine", sin }, { "cosine", cos },
		{ "floor", floor }, { "ceil", ceil }, { "abs", fabs }, { "erf", erf },
	};
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		char t[512];
		snprintf(t, sizeof(t), "HloModule m\nENTRY e { x = f32[6] parameter(0)\n"
			 " ROOT r = f32[6] %s(x) }\n", ops[k].op);
		const void *in[1] = { k_y6 };
		float want[6];
		for (int i = 0; i < 6; i++)
			want[i] = (float)ops[k].f(k_y6[i]);
		check_f32(t, in, 1, want, 6, 1e-5f);
	}
}
END_TEST

START_TEST(test_views)
{
	/* transpose + reverse + slice + broadcast all become access patterns */
	const char *t = "HloModule m\n"
			"ENTRY e { x = f32[2,3] parameter(0)\n"
			" t = f32[3,2] transpose(x), dimensions={1,0}\n"
			" r = f32[3,2] reverse(t), dimensions={0}\n"
			" s = f32[2,2] slice(r), slice={[0:3:2], [0:2]}\n"
			" c = f32[] constant(10)\n b = f32[2,2] broadcast(c), dimensions={}\n"
			" ROOT o = f32[2,2] add(s, b) }\n";
	const void *in[1] = { k_x6 };
	/* t = [[1,-4],[-2,5],[3,6]], r = [[3,6],[-2,5],[1,-4]], s = rows 0,2 */
	float want[4] = { 13, 16, 11, 6 };
	check_f32(t, in, 1, want, 4, 0);
}
END_TEST

START_TEST(test_dot)
{
	const char *t = "HloModule m\n"
			"ENTRY e { x = f32[2,3] parameter(0)\n y = f32[3,2] parameter(1)\n"
			" ROOT d = f32[2,2] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n";
	const void *in[2] = { k_x6, k_y6 };
	float want[4];
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			want[i * 2 + j] = 0;
			for (int k = 0; k < 3; k++)
				want[i * 2 + j] += k_x6[i * 3 + k] * k_y6[k * 2 + j];
		}
	check_f32(t, in, 2, want, 4, 1e-6f);
}
END_TEST

START_TEST(test_reduce)
{
	const char *t = "HloModule m\n"
			"add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
			"ENTRY e { x = f32[2,3] parameter(0)\n z = f32[] constant(1)\n"
			" ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=add }\n";
	const void *in[1] = { k_x6 };
	float want[2] = { 1 + 1 - 2 + 3, 1 - 4 + 5 + 6 };
	check_f32(t, in, 1, want, 2, 0);
}
END_TEST

START_TEST(test_unsupported_f64)
{
	const char *t = "HloModule m\n"
			"ENTRY e { x = f32[2] parameter(0)\n"
			" c = f64[2] convert(x), metadata={op_type=\"aten__to\" source_file=\"t.py\" source_line=7}\n"
			" ROOT r = f32[2] convert(c) }\n";
	ncc_run_t r;
	ck_assert_int_eq(ncc_run_module(NULL, t, 0, NULL, 0, 1, &r), -1);
	ck_assert_msg(strstr(r.msg, "unsupported") && strstr(r.msg, "f64") && strstr(r.msg, "'c'") &&
			      strstr(r.msg, "t.py:7"),
		      "message: %s", r.msg);
}
END_TEST


/* Naive reference convolution over NCHW input, OIHW kernel (dim_labels
 * bf01_oi01->bf01) with groups, for the conv tests. */
static void ref_conv(const float *x, const float *k, float *o, int N, int C, int H, int W, int O,
		     int KH, int KW, int sh, int sw, int plh, int plw, int dh, int dw, int G,
		     int OH, int OW)
{
	int Cg = C / G, Og = O / G;
	for (int n = 0; n < N; n++)
		for (int oc = 0; oc < O; oc++)
			for (int y = 0; y < OH; y++)
				for (int xx = 0; xx < OW; xx++) {
					double acc = 0;
					int g = oc / Og;
					for (int c = 0; c < Cg; c++)
						for (int i = 0; i < KH; i++)
							for (int j = 0; j < KW; j++) {
								/* position in the lhs-dilated, padded input */
								int py = y * sh + i - plh, px = xx * sw + j - plw;
								if (py < 0 || px < 0 || py % dh || px % dw)
									continue;
								py /= dh;
								px /= dw;
								if (py >= H || px >= W)
									continue;
								acc += x[((n * C + g * Cg + c) * H + py) * W + px] *
								       k[((oc * Cg + c) * KH + i) * KW + j];
							}
					o[((n * O + oc) * OH + y) * OW + xx] = (float)acc;
				}
}

static void conv_case(int N, int C, int H, int W, int O, int KH, int KW, int sh, int sw, int plo,
		      int phi, int dil, int G)
{
	int Cg = C / G;
	int PH = (H - 1) * dil + 1 + plo + phi, PW = (W - 1) * dil + 1 + plo + phi;
	int OH = (PH - KH) / sh + 1, OW = (PW - KW) / sw + 1;
	float *x = malloc(sizeof(float) * N * C * H * W), *k = malloc(sizeof(float) * O * Cg * KH * KW);
	float *want = malloc(sizeof(float) * N * O * OH * OW);
	for (int i = 0; i < N * C * H * W; i++)
		x[i] = (float)((i * 7) % 11) - 5;
	for (int i = 0; i < O * Cg * KH * KW; i++)
		k[i] = (float)((i * 3) % 5) - 2;
	ref_conv(x, k, want, N, C, H, W, O, KH, KW, sh, sw, plo, plo, dil, dil, G, OH, OW);
	char t[1024];
	snprintf(t, sizeof(t),
		 "HloModule m\nENTRY e { x = f32[%d,%d,%d,%d] parameter(0)\n k = f32[%d,%d,%d,%d] parameter(1)\n"
		 " ROOT c = f32[%d,%d,%d,%d] convolution(x, k), window={size=%dx%d stride=%dx%d "
		 "pad=%d_%dx%d_%d lhs_dilate=%dx%d}, dim_labels=bf01_oi01->bf01, feature_group_count=%d }\n",
		 N, C, H, W, O, Cg, KH, KW, N, O, OH, OW, KH, KW, sh, sw, plo, phi, plo, phi, dil, dil, G);
	const void *in[2] = { x, k };
	check_f32(t, in, 2, want, (size_t)(N * O * OH * OW), 1e-5f);
	free(x);
	free(k);
	free(want);
}

START_TEST(test_conv)
{
	conv_case(2, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1);  /* 3x3 same padding */
	conv_case(2, 4, 6, 6, 4, 3, 3, 2, 2, 1, 1, 1, 4);  /* depthwise, stride 2 */
	conv_case(1, 4, 4, 4, 6, 1, 1, 1, 1, 0, 0, 1, 2);  /* 1x1 grouped */
	conv_case(1, 2, 3, 3, 2, 3, 3, 1, 1, 1, 2, 2, 1);  /* lhs dilation (input gradient) */
	conv_case(2, 2, 6, 6, 3, 5, 5, 1, 1, 0, 0, 1, 1);  /* big kernel: per output position */
	/* depthwise lhs dilation (the input gradient of a strided depthwise
	 * convolution) by residue classes: MobileNetV2's form on a non-square input,
	 * dilation 3 with a kernel smaller than it (classes no tap reaches are
	 * zero), a low pad beyond one dilation step */
	conv_case(2, 3, 4, 5, 3, 3, 3, 1, 1, 1, 2, 2, 3);
	conv_case(1, 4, 3, 3, 4, 2, 2, 1, 1, 0, 0, 3, 4);
	conv_case(2, 2, 5, 4, 2, 3, 3, 1, 1, 4, 1, 3, 2);
	/* flat windows (stride 1 over the padded NCHW temp): asymmetric padding, a
	 * non-square kernel and input, depthwise, grouped (not flat: im2col) */
	conv_case(2, 3, 5, 7, 4, 3, 2, 1, 1, 2, 1, 1, 1);
	conv_case(2, 4, 6, 5, 4, 3, 3, 1, 1, 1, 1, 1, 4);
	conv_case(1, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 2);
	/* a stem (few input channels, stride 2): one MATMUL with K = C * 7 * 7 */
	conv_case(2, 3, 11, 11, 5, 7, 7, 2, 2, 3, 3, 1, 1);
	conv_case(1, 1, 9, 8, 4, 3, 3, 2, 2, 1, 0, 1, 1);
}
END_TEST

/* Instructions with opcode op in the program lowered from text. */
/* The NEFF of a module's text, lowered at -O0 (*neff: the caller frees it). */
static void lower_text(const char *text, void **neff, neff_view_t *v)
{
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_int_eq(ncc_parse_hlo(text, strlen(text), "t.hlo", &m, &err), NCC_OK);
	size_t size = 0;
	ck_assert_msg(ncc_lower_module(m, NULL, neff, &size, &err) == NCC_OK, "%s", err.msg);
	char msg[256];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(*neff, size, v), msg, sizeof(msg)),
			 NS_STATUS_OK);
	ncc_module_free(m);
}

static uint32_t count_op(const char *text, uint32_t op)
{
	void *neff = NULL;
	neff_view_t v;
	lower_text(text, &neff, &v);
	uint32_t n = 0;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		for (uint32_t i = 0; i < v.code_count[0][e]; i++)
			n += v.code[0][e][i].opcode == op;
	free(neff);
	return n;
}

static uint32_t count_copies(const char *text)
{
	return count_op(text, ISA_OP_COPY);
}

/* A dense stride-1 padded 3x3 convolution (ResNet's, and the input gradient
 * of any stride-1 one) copies its input once per kernel column into T
 * [N, C, kw, rows, cols] (a zero fill first, the kernel reordered: 5 COPYs)
 * and runs one MATMUL per kernel row with K = C * 3 straight into the output:
 * no padded copy, no accumulator, no final copy. Stride 2 gathers every
 * kernel position (fill, 9, kernel: 11 COPYs) for one MATMUL. */
START_TEST(test_conv_stride1_copies_per_kernel_column)
{
	const char *s1 = "HloModule m\nENTRY e { x = f32[2,8,10,10] parameter(0)\n"
			 " k = f32[8,8,3,3] parameter(1)\n ROOT c = f32[2,8,10,10] "
			 "convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
			 "dim_labels=bf01_oi01->bf01 }\n";
	ck_assert_uint_eq(count_copies(s1), 5);
	ck_assert_uint_eq(count_op(s1, ISA_OP_MATMUL), 3);
	const char *s2 = "HloModule m\nENTRY e { x = f32[2,8,10,10] parameter(0)\n"
			 " k = f32[8,8,3,3] parameter(1)\n ROOT c = f32[2,8,5,5] "
			 "convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
			 "dim_labels=bf01_oi01->bf01 }\n";
	ck_assert_uint_eq(count_copies(s2), 11);
	ck_assert_uint_eq(count_op(s2, ISA_OP_MATMUL), 1);
}
END_TEST

/* A larger im2col buffer is zeroed where the copies leave padding only, not
 * whole: a 3x3 stride-1 convolution fills the shifted dim's first and last
 * rows and the two clipped kernel columns' edge columns (4 fills, 3 copies,
 * the kernel reordered: 8 COPYs, where the whole fill made 5); a stem's
 * 7x7 stride-2 im2col the clipped rows and columns of its taps, over 3
 * chunks of images, the third reusing the first's buffer unfilled; over 3
 * rows, two of its kernel rows read no input row at all (all padding).
 * Their values against the reference convolution. */
START_TEST(test_conv_im2col_zeroes_only_the_padding)
{
	const char *s1 = "HloModule m\nENTRY e { x = f32[2,16,24,24] parameter(0)\n"
			 " k = f32[8,16,3,3] parameter(1)\n ROOT c = f32[2,8,24,24] "
			 "convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
			 "dim_labels=bf01_oi01->bf01 }\n";
	ck_assert_uint_eq(count_copies(s1), 8);
	conv_case(2, 16, 24, 24, 8, 3, 3, 1, 1, 1, 1, 1, 1);
	conv_case(2, 3, 40, 40, 8, 7, 7, 2, 2, 3, 3, 1, 1);
	conv_case(5, 3, 112, 112, 4, 7, 7, 2, 2, 3, 3, 1, 1);
	conv_case(1, 16, 3, 512, 4, 7, 7, 2, 2, 3, 3, 1, 1);
}
END_TEST

/* Each of the n modules lowers its convolution to one CONV, no MATMUL and
 * no COPY (one_conv), or keeps the im2col GEMMs: no CONV, some MATMUL. */
static void expect_lowering(const char *const *texts, size_t n, bool one_conv)
{
	for (size_t i = 0; i < n; i++) {
		if (one_conv) {
			ck_assert_uint_eq(count_op(texts[i], ISA_OP_CONV), 1);
			ck_assert_uint_eq(count_op(texts[i], ISA_OP_MATMUL), 0);
			ck_assert_uint_eq(count_copies(texts[i]), 0);
		} else {
			ck_assert_uint_eq(count_op(texts[i], ISA_OP_CONV), 0);
			ck_assert_uint_gt(count_op(texts[i], ISA_OP_MATMUL), 0);
		}
	}
}

/* A dense convolution with output planes of 256 or more, stride 1 along its
 * first spatial dim, a product 64 deep and 16 outputs wide, is one CONV
 * (the firmware's form G: im2col bands per image in each thread's cache),
 * forward and stride-1 input gradient alike: no COPY, no MATMUL, no im2col
 * buffer; so is a stem (stride 2, 3 channels: too few to shift). Stride 2
 * along the first dim over 32 channels, smaller planes and fewer outputs
 * keep the im2col GEMMs. Values against the reference, stride 2 along the
 * second dim and the stem included. */
START_TEST(test_conv_dense_large_planes_one_conv)
{
	const char *fwd = "HloModule m\nENTRY e { x = f32[2,16,16,16] parameter(0)\n"
			  " k = f32[16,16,3,3] parameter(1)\n ROOT c = f32[2,16,16,16] "
			  "convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }\n";
	const char *dgrad = "HloModule m\nENTRY e { x = f32[2,16,16,16] parameter(0)\n"
			    " k = f32[3,3,16,16] parameter(1)\n ROOT c = f32[2,16,16,16] "
			    "convolution(x, k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1}, "
			    "dim_labels=bf01_01oi->bf01 }\n";
	const char *stem = "HloModule m\nENTRY e { x = f32[2,3,32,32] parameter(0)\n"
			   " k = f32[16,3,7,7] parameter(1)\n ROOT c = f32[2,16,16,16] convolution(x, k), "
			   "window={size=7x7 stride=2x2 pad=3_3x3_3}, dim_labels=bf01_oi01->bf01 }\n";
	const char *texts[3] = { fwd, dgrad, stem };
	expect_lowering(texts, 3, true);
	const char *kept[] = {
		"HloModule m\nENTRY e { x = f32[2,32,32,32] parameter(0)\n k = f32[16,32,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,16,15,15] parameter(0)\n k = f32[16,16,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,15,15] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,16,16,16] parameter(0)\n k = f32[8,16,3,3] parameter(1)\n"
		" ROOT c = f32[2,8,16,16] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
	};
	expect_lowering(kept, sizeof(kept) / sizeof(kept[0]), false);
	conv_case(2, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1);
	conv_case(1, 16, 20, 40, 24, 3, 3, 1, 2, 1, 1, 1, 1);
	conv_case(3, 8, 18, 17, 16, 5, 3, 1, 1, 2, 2, 1, 1);
	conv_case(2, 3, 32, 32, 16, 7, 7, 2, 2, 3, 3, 1, 1);
}
END_TEST

/* A forward convolution of smaller planes (16 to 255 outputs per plane) with
 * sums at least 256 deep (C x the taps) and at most 2048 outputs per
 * channel (N x the plane) is one CONV too (the firmware's register tiles
 * with AVX2, else form G), forward and stride-1 input gradient alike;
 * shallower sums, a plane smaller than the kernel (2x2 under a 3x3) and a
 * larger batch keep the im2col GEMMs. Values against the reference over
 * 8x8 and 4x4 planes. */
START_TEST(test_conv_dense_small_planes_one_conv)
{
	const char *fwd = "HloModule m\nENTRY e { x = f32[8,32,8,8] parameter(0)\n"
			  " k = f32[40,32,3,3] parameter(1)\n ROOT c = f32[8,40,8,8] "
			  "convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }\n";
	const char *dgrad = "HloModule m\nENTRY e { x = f32[8,32,4,4] parameter(0)\n"
			    " k = f32[3,3,40,32] parameter(1)\n ROOT c = f32[8,40,4,4] "
			    "convolution(x, k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1}, "
			    "dim_labels=bf01_01oi->bf01 }\n";
	const char *texts[2] = { fwd, dgrad };
	expect_lowering(texts, 2, true);
	const char *kept[] = {
		"HloModule m\nENTRY e { x = f32[8,28,8,8] parameter(0)\n k = f32[40,28,3,3] parameter(1)\n"
		" ROOT c = f32[8,40,8,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[8,64,2,2] parameter(0)\n k = f32[64,64,3,3] parameter(1)\n"
		" ROOT c = f32[8,64,2,2] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[40,32,8,8] parameter(0)\n k = f32[40,32,3,3] parameter(1)\n"
		" ROOT c = f32[40,40,8,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
	};
	expect_lowering(kept, sizeof(kept) / sizeof(kept[0]), false);
	conv_case(8, 32, 8, 8, 40, 3, 3, 1, 1, 1, 1, 1, 1);
	conv_case(3, 30, 4, 4, 33, 3, 3, 1, 1, 1, 1, 1, 1);
}
END_TEST

/* The compiler's conditions for sending a dense convolution to CONV repeat
 * the firmware's for forms G and P (the scratch bounds are shared, in
 * neuronsim/isa.h; the taps, depth and plane bounds are each side's): every
 * shape at a bound, on either side, that goes to CONV runs as form G or P
 * (the firmware's unit counter moves), never as a depthwise form several
 * times slower. */
START_TEST(test_conv_dense_bounds_agree_with_the_firmware)
{
	static const char *const texts[] = {
		/* forward: a 16x16 plane (256), C x taps = 64 and 63, 16 outputs */
		"HloModule m\nENTRY e { x = f32[2,64,16,16] parameter(0)\n k = f32[16,64,1,1] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,32,17,16] parameter(0)\n k = f32[16,32,2,1] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=2x1}, dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,7,18,18] parameter(0)\n k = f32[16,7,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01 }\n",
		/* stride 2 with C x K1 = 63 (a stem's route) and 66 */
		"HloModule m\nENTRY e { x = f32[2,21,33,33] parameter(0)\n k = f32[16,21,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=3x3 stride=2x2}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,22,33,33] parameter(0)\n k = f32[16,22,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=3x3 stride=2x2}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		/* smaller planes: 4x4 and 3x5 (16 and 15 outputs), sums C x taps =
		 * 256 and 240 deep (a 4x4 kernel over 8x8), outputs N x the plane
		 * = 2048 and 2112 */
		"HloModule m\nENTRY e { x = f32[2,32,6,6] parameter(0)\n k = f32[16,32,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,4,4] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,32,5,7] parameter(0)\n k = f32[16,32,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,3,5] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,16,11,11] parameter(0)\n k = f32[16,16,4,4] parameter(1)\n"
		" ROOT c = f32[2,16,8,8] convolution(x, k), window={size=4x4}, dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,15,11,11] parameter(0)\n k = f32[16,15,4,4] parameter(1)\n"
		" ROOT c = f32[2,16,8,8] convolution(x, k), window={size=4x4}, dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[32,32,8,8] parameter(0)\n k = f32[16,32,3,3] parameter(1)\n"
		" ROOT c = f32[32,16,8,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[33,32,8,8] parameter(0)\n k = f32[16,32,3,3] parameter(1)\n"
		" ROOT c = f32[33,16,8,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		/* kernel dilation 3 along the first dim, one spatial dim */
		"HloModule m\nENTRY e { x = f32[2,32,22,16] parameter(0)\n k = f32[16,32,3,3] parameter(1)\n"
		" ROOT c = f32[2,16,16,16] convolution(x, k), window={size=3x3 pad=0_0x1_1 rhs_dilate=3x1}, "
		"dim_labels=bf01_oi01->bf01 }\n",
		"HloModule m\nENTRY e { x = f32[2,32,300] parameter(0)\n k = f32[16,32,3] parameter(1)\n"
		" ROOT c = f32[2,16,298] convolution(x, k), window={size=3}, dim_labels=bf0_oi0->bf0 }\n",
		/* weight gradients: 240 and 256 taps, 16 rows per product, 2 batch
		 * entries, a stride along the first dim */
		"HloModule m\nENTRY e { x = f32[2,8,17,18] parameter(0)\n d = f32[2,16,15,16] parameter(1)\n"
		" ROOT c = f32[3,3,8,16] convolution(x, d), window={size=15x16}, "
		"dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,16,18,18] parameter(0)\n d = f32[2,16,16,16] parameter(1)\n"
		" ROOT c = f32[3,1,16,16] convolution(x, d), window={size=16x16 pad=0_0x0_0}, "
		"dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,8,18,18] parameter(0)\n d = f32[2,16,16,16] parameter(1)\n"
		" ROOT c = f32[3,3,8,16] convolution(x, d), window={size=16x16 pad=1_1x1_1}, "
		"dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,8,33,18] parameter(0)\n d = f32[2,16,16,16] parameter(1)\n"
		" ROOT c = f32[2,3,8,16] convolution(x, d), window={size=16x16 stride=2x1 pad=0_0x0_0}, "
		"dim_labels=fb01_io01->01bf }\n",
		/* a strided forward's (kernel dilation 2 along the first dim):
		 * 64 and 63 rows per product (input channels x Y1), both sent */
		"HloModule m\nENTRY e { x = f32[2,32,17,17] parameter(0)\n d = f32[2,16,8,8] parameter(1)\n"
		" ROOT c = f32[3,2,32,16] convolution(x, d), window={size=8x8 pad=1_-1x0_-1 rhs_dilate=2x2}, "
		"dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,21,17,17] parameter(0)\n d = f32[2,16,8,8] parameter(1)\n"
		" ROOT c = f32[3,3,21,16] convolution(x, d), window={size=8x8 pad=1_-1x1_-1 rhs_dilate=2x2}, "
		"dim_labels=fb01_io01->01bf }\n",
		/* 64 and 63 taps with few outputs; 64 with 2^18 outputs and 2^18 + 2048 */
		"HloModule m\nENTRY e { x = f32[2,8,10,10] parameter(0)\n d = f32[2,16,8,8] parameter(1)\n"
		" ROOT c = f32[3,3,8,16] convolution(x, d), window={size=8x8}, dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,8,9,11] parameter(0)\n d = f32[2,16,7,9] parameter(1)\n"
		" ROOT c = f32[3,3,8,16] convolution(x, d), window={size=7x9}, dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,128,10,10] parameter(0)\n d = f32[2,256,8,8] parameter(1)\n"
		" ROOT c = f32[2,4,128,256] convolution(x, d), window={size=8x8 pad=0_-1x0_1}, "
		"dim_labels=fb01_io01->01bf }\n",
		"HloModule m\nENTRY e { x = f32[2,129,10,10] parameter(0)\n d = f32[2,256,8,8] parameter(1)\n"
		" ROOT c = f32[2,4,129,256] convolution(x, d), window={size=8x8 pad=0_-1x0_1}, "
		"dim_labels=fb01_io01->01bf }\n",
	};
	uint32_t sent = 0;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		uint32_t conv = count_op(texts[i], ISA_OP_CONV);
		uint64_t units = fwsim_conv_gemm_units() + fwsim_conv_flat_units();
		ncc_run_t r;
		ck_assert_msg(ncc_run_module(NULL, texts[i], 0, NULL, 0, 1, &r) == 0, "shape %zu: %s", i, r.msg);
		ncc_run_free(&r);
		uint64_t ran = fwsim_conv_gemm_units() + fwsim_conv_flat_units() - units;
		ck_assert_msg((ran > 0) == (conv == 1), "shape %zu: %u CONV, %llu units of forms G, F and P",
			      i, conv, (unsigned long long)ran);
		sent += conv;
	}
	/* both sides of the bounds are here */
	ck_assert_uint_gt(sent, 2);
	ck_assert_uint_lt(sent, sizeof(texts) / sizeof(texts[0]));
}
END_TEST

/* The weight gradient of a 3x3 stride-1 pad-1 convolution at (ci, co, ky,
 * kx), in double: x [B, CI, H, H] and d [B, CO, H, H] row-major. */
static double wgrad3x3(const float *x, const float *d, int B, int CI, int CO, int H, int ci, int co,
		       int ky, int kx)
{
	double acc = 0;
	for (int b = 0; b < B; b++)
		for (int y = 0; y < H; y++)
			for (int xx = 0; xx < H; xx++) {
				int iy = y + ky - 1, ix = xx + kx - 1;
				if (iy >= 0 && ix >= 0 && iy < H && ix < H)
					acc += x[((b * CI + ci) * H + iy) * H + ix] *
					       d[((b * CO + co) * H + y) * H + xx];
			}
	return acc;
}

/* The weight gradient of a dense 3x3 convolution over 16x16 planes
 * (PyTorch/XLA's form: the output gradient as the kernel, 256 taps) is one
 * CONV (the firmware's form P), against the sums written out; over 8x8
 * planes (64 taps) so is one of few outputs, while one of more than 2^18
 * outputs and one over 7x7 planes keep their MATMULs, and so does a
 * pointwise one's; strided forwards' go to CONV. */
START_TEST(test_conv_dense_wgrad_one_conv)
{
	enum { B = 3, CI = 8, CO = 16, H = 16 };
	const char *t = "HloModule m\nENTRY e { x = f32[3,8,16,16] parameter(0)\n"
			" d = f32[3,16,16,16] parameter(1)\n ROOT c = f32[3,3,8,16] convolution(x, d), "
			"window={size=16x16 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }\n";
	ck_assert_uint_eq(count_op(t, ISA_OP_CONV), 1);
	ck_assert_uint_eq(count_op(t, ISA_OP_MATMUL), 0);
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[3,8,8,8] parameter(0)\n"
				   " d = f32[3,16,8,8] parameter(1)\n ROOT c = f32[3,3,8,16] convolution(x, d), "
				   "window={size=8x8 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }\n", ISA_OP_CONV), 1);
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[2,176,8,8] parameter(0)\n"
				   " d = f32[2,176,8,8] parameter(1)\n ROOT c = f32[3,3,176,176] convolution(x, d), "
				   "window={size=8x8 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }\n", ISA_OP_CONV), 0);
	/* strided forwards' (kernel dilation 2): 64 rows per product (input
	 * channels x Y1) and 63 (a stem's few channels) go to CONV alike */
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[2,32,17,17] parameter(0)\n"
				   " d = f32[2,16,8,8] parameter(1)\n ROOT c = f32[3,2,32,16] convolution(x, d), "
				   "window={size=8x8 pad=1_-1x0_-1 rhs_dilate=2x2}, dim_labels=fb01_io01->01bf }\n",
				   ISA_OP_CONV), 1);
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[2,21,17,17] parameter(0)\n"
				   " d = f32[2,16,8,8] parameter(1)\n ROOT c = f32[3,3,21,16] convolution(x, d), "
				   "window={size=8x8 pad=1_-1x1_-1 rhs_dilate=2x2}, dim_labels=fb01_io01->01bf }\n",
				   ISA_OP_CONV), 1);
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[3,8,7,7] parameter(0)\n"
				   " d = f32[3,16,7,7] parameter(1)\n ROOT c = f32[3,3,8,16] convolution(x, d), "
				   "window={size=7x7 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }\n", ISA_OP_CONV), 0);
	/* a pointwise convolution's gradient (one output position) is one product
	 * over the input as it lies: no CONV, which would copy it */
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[3,32,16,16] parameter(0)\n"
				   " d = f32[3,16,16,16] parameter(1)\n ROOT c = f32[1,1,32,16] convolution(x, d), "
				   "window={size=16x16}, dim_labels=fb01_io01->01bf }\n", ISA_OP_CONV), 0);
	static float x[B * CI * H * H], d[B * CO * H * H], want[3 * 3 * CI * CO];
	for (int i = 0; i < B * CI * H * H; i++)
		x[i] = (float)((i * 7) % 11) - 5;
	for (int i = 0; i < B * CO * H * H; i++)
		d[i] = (float)((i * 3) % 5) - 2;
	for (int ky = 0; ky < 3; ky++)
		for (int kx = 0; kx < 3; kx++)
			for (int ci = 0; ci < CI; ci++)
				for (int co = 0; co < CO; co++)
					want[((ky * 3 + kx) * CI + ci) * CO + co] =
						(float)wgrad3x3(x, d, B, CI, CO, H, ci, co, ky, kx);
	const void *in[2] = { x, d };
	check_f32(t, in, 2, want, sizeof(want) / sizeof(want[0]), 1e-5f);
}
END_TEST

/* A convolution with few output positions (ResNet-18's last stage on 64x64
 * images: 3x3 over 2x2) is one MATMUL over every image's positions
 * (conv_dense_positions): it was 512 MATMULs of K = 9, one per input channel,
 * for 512 channels. The fill, the 9 kernel positions, the copy into out. */
START_TEST(test_conv_few_positions_one_matmul)
{
	const char *t = "HloModule m\nENTRY e { x = f32[8,64,2,2] parameter(0)\n"
			" k = f32[64,64,3,3] parameter(1)\n ROOT c = f32[8,64,2,2] "
			"convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
			"dim_labels=bf01_oi01->bf01 }\n";
	ck_assert_uint_eq(count_op(t, ISA_OP_MATMUL), 1);
	ck_assert_uint_eq(count_copies(t), 11);
}
END_TEST

/* Strided kernels gather every kernel position into one buffer and run one
 * MATMUL with K = C * KH * KW (a stem's 3 colours, and 16 channels alike). */
START_TEST(test_conv_strided_one_deep_matmul)
{
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[2,3,16,16] parameter(0)\n"
				   " k = f32[8,3,7,7] parameter(1)\n ROOT c = f32[2,8,8,8] "
				   "convolution(x, k), window={size=7x7 stride=2x2 pad=3_3x3_3}, "
				   "dim_labels=bf01_oi01->bf01 }\n", ISA_OP_MATMUL), 1);
	ck_assert_uint_eq(count_op("HloModule m\nENTRY e { x = f32[2,16,10,10] parameter(0)\n"
				   " k = f32[8,16,3,3] parameter(1)\n ROOT c = f32[2,8,5,5] "
				   "convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
				   "dim_labels=bf01_oi01->bf01 }\n", ISA_OP_MATMUL), 1);
}
END_TEST

/* The weight gradient of a 3x3 convolution (PyTorch/XLA's form: the output
 * gradient as the kernel) is one MATMUL per forward batch element over the
 * input copied once per output column (fill, 3 copies, the final copy into
 * the 01bf output): there was a full im2col copy and a MATMUL per position. */
START_TEST(test_conv_weight_gradient_per_batch_element)
{
	const char *t = "HloModule m\nENTRY e { x = f32[3,8,10,10] parameter(0)\n"
			" d = f32[3,4,10,10] parameter(1)\n ROOT c = f32[3,3,8,4] convolution(x, d), "
			"window={size=10x10 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }\n";
	ck_assert_uint_eq(count_op(t, ISA_OP_MATMUL), 3);
	ck_assert_uint_eq(count_copies(t), 5);
}
END_TEST

/* The first MATMUL of a module's NEFF (its access patterns), as ap0's shape. */
static void first_matmul_shape(const char *text, uint64_t shape[3])
{
	void *neff = NULL;
	neff_view_t v;
	lower_text(text, &neff, &v);
	bool found = false;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		for (uint32_t i = 0; !found && i < v.code_count[0][e]; i++) {
			const isa_insn_t *in = &v.code[0][e][i];
			if (in->opcode != ISA_OP_MATMUL)
				continue;
			for (int d = 0; d < 3; d++)
				shape[d] = in->ap[0].shape[d];
			found = true;
		}
	ck_assert(found);
	free(neff);
}

/* A pointwise convolution of small images is one GEMM over the whole batch,
 * [O, (n, y)] = W [O, C] x X' [C, (n, y)] (the input copied channel-major,
 * the result copied into the output): it was a MATMUL batched over the
 * images with 16 rows each. Its values: test_ops_vs_interp. Larger images
 * keep the per-image GEMMs, reading both operands in place. */
START_TEST(test_conv_pointwise_small_images_one_gemm)
{
	uint64_t sh[3];
	first_matmul_shape("HloModule m\nENTRY e { x = f32[8,64,4,4] parameter(0)\n"
			   " k = f32[128,64,1,1] parameter(1)\n ROOT c = f32[8,128,4,4] "
			   "convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01 }\n", sh);
	ck_assert_uint_eq(sh[0], 1);
	ck_assert_uint_eq(sh[1], 128);
	ck_assert_uint_eq(sh[2], 8 * 16);
	first_matmul_shape("HloModule m\nENTRY e { x = f32[8,64,8,8] parameter(0)\n"
			   " k = f32[128,64,1,1] parameter(1)\n ROOT c = f32[8,128,8,8] "
			   "convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01 }\n", sh);
	ck_assert_uint_eq(sh[0], 8);
	ck_assert_uint_eq(sh[1], 64);
}
END_TEST

/* An elementwise op whose operand is transposed against a large result copies
 * that operand into the result's order first (the COPY kernel tiles a
 * transpose; the ALU walked it one element per cache line); a small one, or
 * one whose operands share the result's order, does not. */
START_TEST(test_alu_transposed_operand_copied_first)
{
	ck_assert_uint_eq(count_copies("HloModule m\nENTRY e { x = f32[256,256] parameter(0)\n"
				       " y = f32[256,256] parameter(1)\n t = f32[256,256] transpose(x), "
				       "dimensions={1,0}\n ROOT m = f32[256,256] multiply(t, y) }\n"), 1);
	ck_assert_uint_eq(count_copies("HloModule m\nENTRY e { x = f32[64,64] parameter(0)\n"
				       " y = f32[64,64] parameter(1)\n t = f32[64,64] transpose(x), "
				       "dimensions={1,0}\n ROOT m = f32[64,64] multiply(t, y) }\n"), 0);
	ck_assert_uint_eq(count_copies("HloModule m\nENTRY e { x = f32[256,256] parameter(0)\n"
				       " y = f32[256,256] parameter(1)\n"
				       " ROOT m = f32[256,256] multiply(x, y) }\n"), 0);
}
END_TEST

/* A convolution returned through a transpose (PyTorch/XLA's weight gradients)
 * is computed in the output tensor through the transposed view: its final
 * copy writes the output, and no output copy follows (6 COPYs before). Its
 * values: test_ops_vs_interp. */
START_TEST(test_conv_transposed_output_written_in_place)
{
	const char *t = "HloModule m\nENTRY e { x = f32[3,8,10,10] parameter(0)\n"
			" d = f32[3,4,10,10] parameter(1)\n c = f32[3,3,8,4] convolution(x, d), "
			"window={size=10x10 pad=1_1x1_1}, dim_labels=fb01_io01->01bf\n"
			" ROOT t = f32[4,8,3,3] transpose(c), dimensions={3,2,0,1} }\n";
	ck_assert_uint_eq(count_copies(t), 5);
	/* few positions: the MATMUL writes the output (fill, 4 taps, the kernel
	 * reordered), no copy of its result (7 COPYs before) */
	const char *f = "HloModule m\nENTRY e { x = f32[2,6,2,2] parameter(0)\n"
			" d = f32[2,5,2,2] parameter(1)\n c = f32[3,3,6,5] convolution(x, d), "
			"window={size=2x2 pad=1_1x1_1}, dim_labels=fb01_io01->01bf\n"
			" ROOT t = f32[5,6,3,3] transpose(c), dimensions={3,2,0,1} }\n";
	ck_assert_uint_eq(count_copies(f), 6);
	/* returned as it is, [kh][kw][i][o] (ResNet's 3x3 kernels are HWIO in
	 * PyTorch/XLA's step): one MATMUL per position writes its rows, no
	 * transposing copy of a result (7 COPYs before) */
	const char *h = "HloModule m\nENTRY e { x = f32[2,6,2,2] parameter(0)\n"
			" d = f32[2,5,2,2] parameter(1)\n ROOT c = f32[3,3,6,5] convolution(x, d), "
			"window={size=2x2 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }\n";
	ck_assert_uint_eq(count_copies(h), 6);
}
END_TEST

/* A convolution whose one use is a transpose, not an output (an SGD step
 * reading its weight gradient as OIHW), writes its scratch in the
 * transpose's order: the update's element-wise instructions walk every
 * operand in order (innermost stride 1, or 0 for the learning rate), where
 * they walked the gradient 30 elements apart. Then the values, against the
 * sums written out. */
START_TEST(test_conv_transposed_scratch_read_in_order)
{
	enum { B = 2, CI = 6, CO = 5, H = 4 };
	const char *t = "HloModule m\nENTRY e { x = f32[2,6,4,4] parameter(0)\n"
			" d = f32[2,5,4,4] parameter(1)\n p = f32[5,6,3,3] parameter(2)\n"
			" c = f32[3,3,6,5] convolution(x, d), window={size=4x4 pad=1_1x1_1}, "
			"dim_labels=fb01_io01->01bf\n t = f32[5,6,3,3] transpose(c), dimensions={3,2,0,1}\n"
			" h = f32[] constant(0.5)\n b = f32[5,6,3,3] broadcast(h), dimensions={}\n"
			" m = f32[5,6,3,3] multiply(t, b)\n ROOT u = f32[5,6,3,3] add(p, m) }\n";
	void *neff = NULL;
	neff_view_t v;
	lower_text(t, &neff, &v);
	uint32_t alu = 0;
	for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
		for (uint32_t i = 0; i < v.code_count[0][e]; i++) {
			const isa_insn_t *in = &v.code[0][e][i];
			if (in->opcode != ISA_OP_ALU)
				continue;
			alu++;
			for (uint32_t a = 0; a < in->n_ap; a++) {
				const isa_ap_t *ap = &in->ap[a];
				int64_t last = ap->rank ? ap->stride[ap->rank - 1] : 1;
				ck_assert_msg(last == 1 || last == 0, "ALU %u ap %u: innermost stride %lld", i,
					      a, (long long)last);
			}
		}
	ck_assert_uint_ge(alu, 2);
	free(neff);
	static float x[B * CI * H * H], d[B * CO * H * H], p[CO * CI * 9], want[CO * CI * 9];
	for (int i = 0; i < B * CI * H * H; i++)
		x[i] = (float)((i * 7) % 11) - 5;
	for (int i = 0; i < B * CO * H * H; i++)
		d[i] = (float)((i * 3) % 5) - 2;
	for (int i = 0; i < CO * CI * 9; i++)
		p[i] = (float)(i % 13);
	for (int co = 0; co < CO; co++)
		for (int ci = 0; ci < CI; ci++)
			for (int ky = 0; ky < 3; ky++)
				for (int kx = 0; kx < 3; kx++) {
					int o = ((co * CI + ci) * 3 + ky) * 3 + kx;
					want[o] = p[o] + (float)(0.5 * wgrad3x3(x, d, B, CI, CO, H, ci, co, ky, kx));
				}
	const void *in[3] = { x, d, p };
	check_f32(t, in, 3, want, sizeof(want) / sizeof(want[0]), 1e-5f);
}
END_TEST

/* The input gradient of a strided dense convolution (lhs-dilated) is one
 * MATMUL over the real output gradient and one ADD per kernel position into
 * a zeroed accumulator kept by output phase (y mod 2), then one COPY per
 * phase into the output (col2im): no dilated buffer (it was 4x the products). */
START_TEST(test_conv_strided_input_gradient_col2im)
{
	const char *t = "HloModule m\nENTRY e { x = f32[2,8,8,8] parameter(0)\n"
			" k = f32[7,7,3,8] parameter(1)\n ROOT c = f32[2,3,16,16] convolution(x, k), "
			"window={size=7x7 pad=3_4x3_4 lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01 }\n";
	ck_assert_uint_eq(count_op(t, ISA_OP_MATMUL), 1);
	ck_assert_uint_eq(count_op(t, ISA_OP_ALU), 49);
	/* the kernel reordered, the input [O][q...][n] (one GEMM for both
	 * images), the zero fill, 4 phases */
	ck_assert_uint_eq(count_copies(t), 7);
}
END_TEST

/* The input gradients of ResNet's last stages as PyTorch/XLA writes them: the
 * forward's OIHW kernel transposed to HLO layout {1,0,2,3} and its taps
 * reversed. Its (c, k...) are one run, so col2im's GEMM reads it where it
 * lies: no copy of the kernel (9.4 MB for a 512x512 3x3, 1.7-2.1 ms a step
 * each), for the strided gradient and, when the kernel outweighs G, for the
 * stride-1 one, which the im2col forms served with a reordered copy. Values:
 * test_op_cases. */
START_TEST(test_conv_input_gradient_reads_kernel_in_place)
{
#define KERNEL_01OI(o, i) \
	" p = f32[" o "," i ",3,3] parameter(1)\n t = f32[3,3," i "," o "]{1,0,2,3} transpose(p), " \
	"dimensions={2,3,1,0}\n r = f32[3,3," i "," o "]{1,0,2,3} reverse(t), dimensions={0,1}\n"
	const char *s2 = "HloModule m\nENTRY e { x = f32[2,16,2,2] parameter(0)\n" KERNEL_01OI("16", "4")
			 " ROOT c = f32[2,4,4,4] convolution(x, r), window={size=3x3 pad=1_2x1_2 "
			 "lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01 }\n";
	ck_assert_uint_eq(count_op(s2, ISA_OP_MATMUL), 1);
	/* the input [O][q...][n], the zero fill, 4 phases: no kernel copy */
	ck_assert_uint_eq(count_copies(s2), 6);
	const char *s1 = "HloModule m\nENTRY e { x = f32[2,16,2,2] parameter(0)\n" KERNEL_01OI("16", "4")
			 " ROOT c = f32[2,4,2,2] convolution(x, r), window={size=3x3 pad=1_1x1_1}, "
			 "dim_labels=bf01_01oi->bf01 }\n";
	ck_assert_uint_eq(count_op(s1, ISA_OP_MATMUL), 1);
	ck_assert_uint_eq(count_op(s1, ISA_OP_ALU), 9);
	ck_assert_uint_eq(count_copies(s1), 3);
	/* more positions than input channels (G would outweigh the kernel):
	 * the im2col form, the kernel copied */
	const char *big = "HloModule m\nENTRY e { x = f32[2,16,4,4] parameter(0)\n" KERNEL_01OI("16", "4")
			  " ROOT c = f32[2,4,4,4] convolution(x, r), window={size=3x3 pad=1_1x1_1}, "
			  "dim_labels=bf01_01oi->bf01 }\n";
	ck_assert_uint_eq(count_op(big, ISA_OP_ALU), 0);
#undef KERNEL_01OI
}
END_TEST

/* The weight gradient of a pointwise convolution (MobileNetV2's, as PyTorch/XLA
 * writes it: the window the whole input) is one accumulating MATMUL per
 * forward batch element reading both operands in place: no COPY (there were
 * two full copies). Its values: test_op_cases (against the interpreter). */
START_TEST(test_conv_pointwise_weight_gradient_in_place)
{
	const char *t = "HloModule m\nENTRY e { x = f32[3,16,8,8] parameter(0)\n"
			" d = f32[3,5,8,8] parameter(1)\n ROOT c = f32[1,1,16,5] convolution(x, d), "
			"window={size=8x8}, dim_labels=fb01_io01->01bf }\n";
	ck_assert_uint_eq(count_copies(t), 0);
	ck_assert_uint_eq(count_op(t, ISA_OP_MATMUL), 3);
	/* a short window over many features (a fully connected layer written as a
	 * convolution) keeps the one MATMUL */
	const char *fc = "HloModule m\nENTRY e { x = f32[4,256,2,2] parameter(0)\n"
			 " k = f32[10,256,2,2] parameter(1)\n ROOT c = f32[4,10,1,1] convolution(x, k), "
			 "window={size=2x2}, dim_labels=bf01_oi01->bf01 }\n";
	ck_assert_uint_eq(count_op(fc, ISA_OP_MATMUL), 1);
}
END_TEST


/* Depthwise and grouped f32 convolutions, forward and both gradients, are one
 * CONV instruction each (ISA 1.4; values: test_conv, test_op_cases), and only
 * their NEFFs say ISA 1.4: a dense convolution's stays 1.3. */
START_TEST(test_conv_grouped_is_one_conv_insn)
{
	static const char *const grouped[] = {
		"HloModule m\nENTRY e { x = f32[2,8,10,10] parameter(0)\n k = f32[8,1,3,3] parameter(1)\n"
		" ROOT c = f32[2,8,5,5] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
		"dim_labels=bf01_oi01->bf01, feature_group_count=8 }\n",
		"HloModule m\nENTRY e { x = f32[2,8,5,5] parameter(0)\n k = f32[3,3,8,1] parameter(1)\n"
		" ROOT c = f32[2,8,10,10] convolution(x, k), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, "
		"dim_labels=bf01_01oi->bf01, feature_group_count=8 }\n",
		"HloModule m\nENTRY e { x = f32[2,8,10,10] parameter(0)\n d = f32[2,8,5,5] parameter(1)\n"
		" ROOT c = f32[3,3,2,8] convolution(x, d), window={size=5x5 pad=1_0x1_0 rhs_dilate=2x2}, "
		"dim_labels=fb01_io01->01bf, batch_group_count=4 }\n",
	};
	for (size_t i = 0; i < sizeof(grouped) / sizeof(grouped[0]); i++) {
		ck_assert_uint_eq(count_op(grouped[i], ISA_OP_CONV), 1);
		ck_assert_uint_eq(count_op(grouped[i], ISA_OP_MATMUL), 0);
		ck_assert_uint_eq(count_op(grouped[i], ISA_OP_COPY), 0);
	}
	const char *dense = "HloModule m\nENTRY e { x = f32[2,8,10,10] parameter(0)\n"
			    " k = f32[8,8,3,3] parameter(1)\n ROOT c = f32[2,8,10,10] "
			    "convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }\n";
	ck_assert_uint_eq(count_op(dense, ISA_OP_CONV), 0);
	const char *texts[2] = { grouped[0], dense };
	for (int i = 0; i < 2; i++) {
		ncc_module_t *m = NULL;
		ncc_error_t err = { 0 };
		ck_assert_int_eq(ncc_parse_hlo(texts[i], strlen(texts[i]), "t.hlo", &m, &err), NCC_OK);
		void *neff = NULL;
		size_t size = 0;
		ck_assert_msg(ncc_lower_module(m, NULL, &neff, &size, &err) == NCC_OK, "%s", err.msg);
		neff_view_t v;
		char msg[256];
		ck_assert_msg(ns_status_consume_message(neff_parse(neff, size, &v), msg, sizeof(msg)) ==
			      NS_STATUS_OK, "%s", msg);
		ck_assert_uint_eq(v.meta->isa_version_minor, i == 0 ? 4 : 3);
		free(neff);
		ncc_module_free(m);
	}
}
END_TEST

static double d_add(double a, double b) { return a + b; }
static double d_sub(double a, double b) { return a - b; }
static double d_mul(double a, double b) { return a * b; }
static double d_div(double a, double b) { return a / b; }
static double d_max(double a, double b) { return a > b ? a : b; }
static double d_min(double a, double b) { return a < b ? a : b; }

START_TEST(test_binary_f32)
{
	static const struct { const char *op; double (*f)(double, double); } ops[] = {
		{ "add", d_add }, { "subtract", d_sub }, { "multiply", d_mul }, { "divide", d_div },
		{ "maximum", d_max }, { "minimum", d_min }, { "remainder", fmod }, { "power", pow },
		{ "atan2", atan2 },
	};
	static const float a[6] = { 1.5f, -2, 3, 0.5f, 5, 6 };
	static const float b[6] = { 0.5f, 2, -1, 4, 0.25f, 3 };
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		char t[512];
		snprintf(t, sizeof(t), "HloModule m\nENTRY e { x = f32[2,3] parameter(0)\n"
			 " y = f32[2,3] parameter(1)\n ROOT r = f32[2,3] %s(x, y) }\n", ops[k].op);
		const void *in[2] = { a, b };
		float want[6];
		for (int i = 0; i < 6; i++)
			want[i] = (float)ops[k].f(a[i], b[i]);
		check_f32(t, in, 2, want, 6, 1e-6f);
	}
}
END_TEST

START_TEST(test_unary_all)
{
	static const struct { const char *op; double (*f)(double); } ops[] = {
		{ "log", log }, { "log-plus-one", log1p }, { "sqrt", sqrt }, { "negate", NULL },
		{ "rsqrt", NULL }, { "logistic", NULL }, { "sign", NULL },
		{ "round-nearest-afz", round }, { "round-nearest-even", nearbyint },
		{ "exponential-minus-one", expm1 },
	};
	static const float a[6] = { 0.5f, 2.5f, 3, 1.5f, 0.25f, 7 };
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		char t[512];
		snprintf(t, sizeof(t), "HloModule m\nENTRY e { x = f32[6] parameter(0)\n"
			 " ROOT r = f32[6] %s(x) }\n", ops[k].op);
		const void *in[1] = { a };
		float want[6];
		for (int i = 0; i < 6; i++) {
			double v = a[i];
			if (ops[k].f)
				want[i] = (float)ops[k].f(v);
			else if (!strcmp(ops[k].op, "negate"))
				want[i] = (float)-v;
			else if (!strcmp(ops[k].op, "rsqrt"))
				want[i] = (float)(1 / sqrt(v));
			else if (!strcmp(ops[k].op, "logistic"))
				want[i] = (float)(1 / (1 + exp(-v)));
			else
				want[i] = v > 0 ? 1.0f : v < 0 ? -1.0f : 0.0f;
		}
		check_f32(t, in, 1, want, 6, 1e-5f);
	}
}
END_TEST

START_TEST(test_int_ops)
{
	static const int32_t a[4] = { 12, -7, 5, 255 }, b[4] = { 3, 2, 1, 4 };
	static const struct { const char *op; int32_t w[4]; } ops[] = {
		{ "and", { 12 & 3, -7 & 2, 5 & 1, 255 & 4 } },
		{ "or", { 12 | 3, -7 | 2, 5 | 1, 255 | 4 } },
		{ "xor", { 12 ^ 3, -7 ^ 2, 5 ^ 1, 255 ^ 4 } },
		{ "shift-left", { 12 << 3, (int32_t)((uint32_t)-7 << 2), 5 << 1, 255 << 4 } },
		{ "shift-right-arithmetic", { 12 >> 3, -7 >> 2, 5 >> 1, 255 >> 4 } },
		{ "shift-right-logical", { 12 >> 3, (int32_t)((uint32_t)-7 >> 2), 5 >> 1, 255 >> 4 } },
		{ "divide", { 4, -3, 5, 63 } },
		{ "remainder", { 0, -1, 0, 3 } },
		{ "maximum", { 12, 2, 5, 255 } },
	};
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		char t[512];
		snprintf(t, sizeof(t), "HloModule m\nENTRY e { x = s32[4] parameter(0)\n"
			 " y = s32[4] parameter(1)\n ROOT r = s32[4] %s(x, y) }\n", ops[k].op);
		const void *in[2] = { a, b };
		check_bytes(t, in, 2, 0, ops[k].w, sizeof(ops[k].w));
	}
	/* not, negate, abs on s32; popcnt */
	const char *t = "HloModule m\nENTRY e { x = s32[4] parameter(0)\n n = s32[4] not(x)\n"
			" g = s32[4] negate(n)\n ROOT a = s32[4] abs(g) }\n";
	const void *in[1] = { a };
	int32_t w[4];
	for (int i = 0; i < 4; i++)
		w[i] = abs(-(~a[i]));
	check_bytes(t, in, 1, 0, w, sizeof(w));
}
END_TEST

START_TEST(test_small_int_types)
{
	/* s8, s16, u16, u8 wrap at their width */
	static const int8_t a8[3] = { 100, -100, 5 }, b8[3] = { 100, -100, 7 };
	int8_t w8[3];
	for (int i = 0; i < 3; i++)
		w8[i] = (int8_t)(a8[i] + b8[i]);
	const void *in8[2] = { a8, b8 };
	check_bytes("HloModule m\nENTRY e { x = s8[3] parameter(0)\n y = s8[3] parameter(1)\n"
		    " ROOT r = s8[3] add(x, y) }\n", in8, 2, 0, w8, sizeof(w8));
	static const uint16_t a16[3] = { 65535, 2, 300 }, b16[3] = { 2, 3, 300 };
	uint16_t w16[3];
	for (int i = 0; i < 3; i++)
		w16[i] = (uint16_t)(a16[i] * b16[i]);
	const void *in16[2] = { a16, b16 };
	check_bytes("HloModule m\nENTRY e { x = u16[3] parameter(0)\n y = u16[3] parameter(1)\n"
		    " ROOT r = u16[3] multiply(x, y) }\n", in16, 2, 0, w16, sizeof(w16));
	static const int16_t s16[3] = { -32768, 7, -1 };
	int16_t ws16[3] = { -32768, -7, 1 };
	const void *ins16[1] = { s16 };
	check_bytes("HloModule m\nENTRY e { x = s16[3] parameter(0)\n"
		    " ROOT r = s16[3] negate(x) }\n", ins16, 1, 0, ws16, sizeof(ws16));
}
END_TEST

START_TEST(test_compare_select_clamp)
{
	static const float a[4] = { 1, 2, 3, NAN }, b[4] = { 2, 2, 1, 0 };
	static const struct { const char *dir; uint8_t w[4]; } dirs[] = {
		{ "EQ", { 0, 1, 0, 0 } }, { "NE", { 1, 0, 1, 1 } }, { "LT", { 1, 0, 0, 0 } },
		{ "LE", { 1, 1, 0, 0 } }, { "GT", { 0, 0, 1, 0 } }, { "GE", { 0, 1, 1, 0 } },
	};
	for (size_t k = 0; k < 6; k++) {
		char t[512];
		snprintf(t, sizeof(t), "HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
			 " y = f32[4] parameter(1)\n ROOT r = pred[4] compare(x, y), direction=%s }\n",
			 dirs[k].dir);
		const void *in[2] = { a, b };
		check_bytes(t, in, 2, 0, dirs[k].w, 4);
	}
	static const float x[4] = { -5, 0.5f, 7, 2 };
	const char *t = "HloModule m\nENTRY e { x = f32[4] parameter(0)\n lo = f32[] constant(0)\n"
			" hi = f32[] constant(3)\n c = f32[4] clamp(lo, x, hi)\n"
			" z = f32[4] broadcast(lo), dimensions={}\n p = pred[4] compare(x, z), direction=GT\n"
			" ROOT s = f32[4] select(p, c, x) }\n";
	const void *in[1] = { x };
	float want[4] = { -5, 0.5f, 3, 2 };
	check_f32(t, in, 1, want, 4, 0);
}
END_TEST

START_TEST(test_convert)
{
	static const float a[4] = { 1.7f, -2.5f, 1e10f, 3.0f };
	int32_t w[4] = { 1, -2, INT32_MAX, 3 };
	const void *in[1] = { a };
	check_bytes("HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
		    " ROOT r = s32[4] convert(x) }\n", in, 1, 0, w, sizeof(w));
	/* f32 -> bf16 -> f32 rounds to 8 bits of mantissa */
	float wb[4];
	for (int i = 0; i < 4; i++) {
		uint32_t u;
		memcpy(&u, &a[i], 4);
		u += 0x7fff + ((u >> 16) & 1);
		u &= 0xffff0000u;
		memcpy(&wb[i], &u, 4);
	}
	check_f32("HloModule m\nENTRY e { x = f32[4] parameter(0)\n b = bf16[4] convert(x)\n"
		  " ROOT r = f32[4] convert(b) }\n", in, 1, wb, 4, 0);
	/* bitcast-convert keeps the bits */
	check_bytes("HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
		    " ROOT r = u32[4] bitcast-convert(x) }\n", in, 1, 0, a, sizeof(a));
	/* pred -> f32 */
	static const uint8_t p[3] = { 1, 0, 1 };
	const void *inp[1] = { p };
	float wp[3] = { 1, 0, 1 };
	check_f32("HloModule m\nENTRY e { x = pred[3] parameter(0)\n"
		  " ROOT r = f32[3] convert(x) }\n", inp, 1, wp, 3, 0);
}
END_TEST

START_TEST(test_rank0_and_size1)
{
	static const float a = 2.5f, b = 4;
	const void *in[2] = { &a, &b };
	float w = 10;
	check_f32("HloModule m\nENTRY e { x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
		  " ROOT r = f32[] multiply(x, y) }\n", in, 2, &w, 1, 0);
	static const float c[3] = { 1, 2, 3 };
	const void *in2[1] = { c };
	float w2[6] = { 1, 2, 3, 1, 2, 3 };
	check_f32("HloModule m\nENTRY e { x = f32[1,3,1] parameter(0)\n"
		  " r = f32[3] reshape(x)\n b = f32[2,1,3] broadcast(r), dimensions={2}\n"
		  " ROOT o = f32[2,1,3] add(b, b) }\n", in2, 1, (float[6]){ 2, 4, 6, 2, 4, 6 }, 6, 0);
	(void)w2;
}
END_TEST

START_TEST(test_reduce_kinds)
{
	static const float a[6] = { 1, -2, 3, -4, 5, 6 };
	static const struct { const char *op; const char *init; float w[2]; } ops[] = {
		{ "maximum", "-inf", { 3, 6 } }, { "minimum", "inf", { -2, -4 } },
		{ "multiply", "1", { -6, -120 } }, { "add", "0", { 2, 7 } },
		{ "maximum", "4", { 4, 6 } },
	};
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		char t[768];
		snprintf(t, sizeof(t), "HloModule m\n"
			 "f { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] %s(a, b) }\n"
			 "ENTRY e { x = f32[2,3] parameter(0)\n z = f32[] constant(%s)\n"
			 " ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=f }\n",
			 ops[k].op, ops[k].init);
		const void *in[1] = { a };
		check_f32(t, in, 1, ops[k].w, 2, 0);
	}
	/* and/or over pred, reducing the outer dim */
	static const uint8_t p[6] = { 1, 0, 1, 1, 1, 0 };
	const void *inp[1] = { p };
	uint8_t wand[3] = { 1, 0, 0 }, wor[3] = { 1, 1, 1 };
	check_bytes("HloModule m\nf { a = pred[] parameter(0)\n b = pred[] parameter(1)\n"
		    " ROOT s = pred[] and(a, b) }\nENTRY e { x = pred[2,3] parameter(0)\n"
		    " z = pred[] constant(true)\n ROOT r = pred[3] reduce(x, z), dimensions={0}, to_apply=f }\n",
		    inp, 1, 0, wand, 3);
	check_bytes("HloModule m\nf { a = pred[] parameter(0)\n b = pred[] parameter(1)\n"
		    " ROOT s = pred[] or(a, b) }\nENTRY e { x = pred[2,3] parameter(0)\n"
		    " z = pred[] constant(false)\n ROOT r = pred[3] reduce(x, z), dimensions={0}, to_apply=f }\n",
		    inp, 1, 0, wor, 3);
}
END_TEST

START_TEST(test_large_reduction)
{
	/* 2^20 elements into one scalar: the f64 accumulation of the REDUCE keeps it exact */
	enum { N = 1 << 20 };
	float *a = malloc(sizeof(float) * N);
	double sum = 0;
	for (int i = 0; i < N; i++) {
		a[i] = (float)(i % 7) * 0.25f;
		sum += a[i];
	}
	const void *in[1] = { a };
	float w = (float)sum;
	check_f32("HloModule m\nf { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT s = f32[] add(a, b) }\nENTRY e { x = f32[1024,1024] parameter(0)\n"
		  " z = f32[] constant(0)\n ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=f }\n",
		  in, 1, &w, 1, 1e-6f);
	free(a);
}
END_TEST

START_TEST(test_reduce_window)
{
	/* 2x2 max pool, stride 2, on a 4x4 image padded by one on the high side */
	static const float a[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	const void *in[1] = { a };
	float w[4] = { 6, 8, 14, 16 };
	check_f32("HloModule m\nf { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT s = f32[] maximum(a, b) }\nENTRY e { x = f32[1,4,4] parameter(0)\n"
		  " z = f32[] constant(-inf)\n ROOT r = f32[1,2,2] reduce-window(x, z), "
		  "window={size=1x2x2 stride=1x2x2}, to_apply=f }\n", in, 1, w, 4, 0);
	/* 3-wide sum window, stride 1, padding 1_1: overlapping windows */
	float w2[4] = { 1 + 2, 1 + 2 + 3, 2 + 3 + 4, 3 + 4 };
	check_f32("HloModule m\nf { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT s = f32[] add(a, b) }\nENTRY e { x = f32[4] parameter(0)\n"
		  " z = f32[] constant(0)\n ROOT r = f32[4] reduce-window(x, z), "
		  "window={size=3 pad=1_1}, to_apply=f }\n", in, 1, w2, 4, 0);
}
END_TEST

START_TEST(test_data_movement)
{
	static const float a[6] = { 1, 2, 3, 4, 5, 6 }, b[2] = { 7, 8 };
	const void *in[2] = { a, b };
	/* concatenate along dim 1: [[1,2,3,7],[4,5,6,8]] */
	float wc[8] = { 1, 2, 3, 7, 4, 5, 6, 8 };
	check_f32("HloModule m\nENTRY e { x = f32[2,3] parameter(0)\n y = f32[2] parameter(1)\n"
		  " r = f32[2,1] reshape(y)\n ROOT c = f32[2,4] concatenate(x, r), dimensions={1} }\n",
		  in, 2, wc, 8, 0);
	/* pad: lo 1, hi -1 (crop), interior 1 on dim 1 */
	float wp[2 * 5] = { 0, 1, 0, 2, 0, 0, 4, 0, 5, 0 };
	check_f32("HloModule m\nENTRY e { x = f32[2,3] parameter(0)\n z = f32[] constant(0)\n"
		  " ROOT p = f32[2,5] pad(x, z), padding=0_0x1_-1_1 }\n", in, 1, wp, 10, 0);
	/* reshape of a transposed (non-dense) view needs a copy */
	float wr[6] = { 1, 4, 2, 5, 3, 6 };
	check_f32("HloModule m\nENTRY e { x = f32[2,3] parameter(0)\n"
		  " t = f32[3,2] transpose(x), dimensions={1,0}\n ROOT r = f32[6] reshape(t) }\n",
		  in, 1, wr, 6, 0);
	/* strided slice of a reversed dim */
	float ws[2] = { 6, 4 };
	check_f32("HloModule m\nENTRY e { x = f32[2,3] parameter(0)\n"
		  " v = f32[2,3] reverse(x), dimensions={1}\n s = f32[1,2] slice(v), slice={[1:2], [0:3:2]}\n"
		  " ROOT r = f32[2] reshape(s) }\n", in, 1, ws, 2, 0);
}
END_TEST

START_TEST(test_dot_batch)
{
	/* [B=2, K=3, M=2] x [B=2, N=2, K=3] -> [2, 2, 2], lhs and rhs both transposed */
	float l[12], r[12], w[8];
	for (int i = 0; i < 12; i++) {
		l[i] = (float)(i % 5) - 2;
		r[i] = (float)(i % 3) + 0.5f;
	}
	for (int bb = 0; bb < 2; bb++)
		for (int m = 0; m < 2; m++)
			for (int n = 0; n < 2; n++) {
				float acc = 0;
				for (int k = 0; k < 3; k++)
					acc += l[bb * 6 + k * 2 + m] * r[bb * 6 + n * 3 + k];
				w[bb * 4 + m * 2 + n] = acc;
			}
	const void *in[2] = { l, r };
	check_f32("HloModule m\nENTRY e { x = f32[2,3,2] parameter(0)\n y = f32[2,2,3] parameter(1)\n"
		  " ROOT d = f32[2,2,2] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
		  "rhs_batch_dims={0}, rhs_contracting_dims={2} }\n", in, 2, w, 8, 1e-6f);
}
END_TEST

START_TEST(test_dynamic_slices)
{
	static const float a[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	static const int32_t i1 = 1, i5 = 5;
	const void *in[3] = { a, &i1, &i5 };
	/* [3,4] at (1, 5 -> clamped to 2), size [2,2]: rows 1-2, cols 2-3 */
	float w[4] = { 6, 7, 10, 11 };
	check_f32("HloModule m\nENTRY e { x = f32[3,4] parameter(0)\n i = s32[] parameter(1)\n"
		  " j = s32[] parameter(2)\n ROOT d = f32[2,2] dynamic-slice(x, i, j), "
		  "dynamic_slice_sizes={2,2} }\n", in, 3, w, 4, 0);
	static const float u[2] = { -1, -2 };
	const void *in2[4] = { a, u, &i1, &i5 };
	float w2[12];
	memcpy(w2, a, sizeof(a));
	w2[1 * 4 + 2] = -1;
	w2[1 * 4 + 3] = -2;
	check_f32("HloModule m\nENTRY e { x = f32[3,4] parameter(0)\n u = f32[1,2] parameter(1)\n"
		  " i = s32[] parameter(2)\n j = s32[] parameter(3)\n"
		  " ROOT d = f32[3,4] dynamic-update-slice(x, u, i, j) }\n", in2, 4, w2, 12, 0);
}
END_TEST

START_TEST(test_gather_scatter)
{
	static const float tab[8] = { 0, 1, 10, 11, 20, 21, 30, 31 };
	static const uint32_t idx[3] = { 2, 0, 9 };
	const void *in[2] = { tab, idx };
	float w[6] = { 20, 21, 0, 1, 30, 31 }; /* 9 clamps to the last row */
	check_f32("HloModule m\nENTRY e { t = f32[4,2] parameter(0)\n i = u32[3] parameter(1)\n"
		  " ROOT g = f32[3,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
		  "start_index_map={0}, index_vector_dim=1, slice_sizes={1,2} }\n", in, 2, w, 6, 0);
	static const int64_t sidx[3] = { 1, 1, 7 };
	static const float upd[6] = { 1, 2, 3, 4, 5, 6 };
	const void *in2[3] = { tab, sidx, upd };
	float w2[8];
	memcpy(w2, tab, sizeof(tab));
	w2[2] += 1 + 3;
	w2[3] += 2 + 4; /* index 7 is out of range: skipped */
	check_f32("HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT sum = f32[] add(a, b) }\nENTRY e { t = f32[4,2] parameter(0)\n"
		  " i = s64[3,1] parameter(1)\n u = f32[3,2] parameter(2)\n"
		  " ROOT s = f32[4,2] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, "
		  "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add }\n", in2, 3, w2, 8, 0);
}
END_TEST

START_TEST(test_iota_rng)
{
	float w[6] = { 0, 1, 2, 0, 1, 2 };
	check_f32("HloModule m\nENTRY e { ROOT i = f32[2,3] iota(), iota_dimension=1 }\n", NULL, 0,
		  w, 6, 0);
	int32_t wi[6] = { 0, 0, 0, 1, 1, 1 };
	check_bytes("HloModule m\nENTRY e { ROOT i = s32[2,3] iota(), iota_dimension=0 }\n", NULL, 0,
		    0, wi, sizeof(wi));
	/* rng-bit-generator: deterministic, advances the state, bits differ per element */
	static const uint64_t state[2] = { 42, 0 };
	const void *in[1] = { state };
	ncc_run_t r;
	const char *t = "HloModule m\nENTRY e { s = u64[2] parameter(0)\n"
			" ROOT r = (u64[2], u32[4,4]) rng-bit-generator(s), algorithm=rng_default }\n";
	ck_assert_msg(ncc_run_module(NULL, t, 0, in, 1, 1, &r) == 0, "%s", r.msg);
	const uint64_t *ns = r.out[0];
	const uint32_t *bits = r.out[1];
	ck_assert_uint_eq(ns[0], 42);
	ck_assert_uint_ne(ns[1], 0);
	ck_assert_uint_ne(bits[0], bits[1]);
	ncc_run_free(&r);
}
END_TEST

static void ref_bn(const float *x, int n, int c, const float *scale, const float *off, float eps,
		   float *y, float *mean, float *var)
{
	for (int j = 0; j < c; j++) {
		double m = 0, v = 0;
		for (int i = 0; i < n; i++)
			m += x[i * c + j];
		m /= n;
		for (int i = 0; i < n; i++)
			v += (x[i * c + j] - m) * (x[i * c + j] - m);
		v /= n;
		mean[j] = (float)m;
		var[j] = (float)v;
		for (int i = 0; i < n; i++)
			y[i * c + j] = (float)((x[i * c + j] - m) / sqrt(v + eps) * scale[j] + off[j]);
	}
}

START_TEST(test_batch_norm)
{
	static const float x[8] = { 1, 2, 3, 5, -1, 0, 4, 4 }; /* [4, 2], feature 1 */
	static const float sc[2] = { 2, 0.5f }, of[2] = { 1, -1 };
	float y[8], mean[2], var[2];
	ref_bn(x, 4, 2, sc, of, 0.001f, y, mean, var);
	const void *in[3] = { x, sc, of };
	const char *t = "HloModule m\nENTRY e { x = f32[4,2] parameter(0)\n s = f32[2] parameter(1)\n"
			" o = f32[2] parameter(2)\n ROOT b = (f32[4,2], f32[2], f32[2]) "
			"batch-norm-training(x, s, o), epsilon=0.001, feature_index=1 }\n";
	for (int opt = 0; opt <= 1; opt++) {
		ncc_run_t r;
		ck_assert_msg(ncc_run_module(NULL, t, opt, in, 3, 1, &r) == 0, "%s", r.msg);
		for (int i = 0; i < 8; i++)
			ck_assert_msg(fabsf(((float *)r.out[0])[i] - y[i]) < 1e-4f, "y[%d]", i);
		for (int j = 0; j < 2; j++) {
			ck_assert(fabsf(((float *)r.out[1])[j] - mean[j]) < 1e-5f);
			ck_assert(fabsf(((float *)r.out[2])[j] - var[j]) < 1e-5f);
		}
		ncc_run_free(&r);
	}
	/* inference with the same statistics gives the same y */
	const void *in2[5] = { x, sc, of, mean, var };
	check_f32("HloModule m\nENTRY e { x = f32[4,2] parameter(0)\n s = f32[2] parameter(1)\n"
		  " o = f32[2] parameter(2)\n m = f32[2] parameter(3)\n v = f32[2] parameter(4)\n"
		  " ROOT b = f32[4,2] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1 }\n",
		  in2, 5, y, 8, 1e-4f);
	/* grad: compare with the closed form */
	static const float dy[8] = { 0.5f, -1, 2, 0, 1, 1, -0.5f, 3 };
	float dx[8], ds[2], db[2];
	for (int j = 0; j < 2; j++) {
		double inv = 1 / sqrt(var[j] + 0.001), sdy = 0, sdyx = 0;
		for (int i = 0; i < 4; i++) {
			double xh = (x[i * 2 + j] - mean[j]) * inv;
			sdy += dy[i * 2 + j];
			sdyx += dy[i * 2 + j] * xh;
		}
		db[j] = (float)sdy;
		ds[j] = (float)sdyx;
		for (int i = 0; i < 4; i++) {
			double xh = (x[i * 2 + j] - mean[j]) * inv;
			dx[i * 2 + j] = (float)(sc[j] * inv / 4 * (4 * dy[i * 2 + j] - sdy - xh * sdyx));
		}
	}
	const void *in3[5] = { x, sc, mean, var, dy };
	const char *tg = "HloModule m\nENTRY e { x = f32[4,2] parameter(0)\n s = f32[2] parameter(1)\n"
			 " m = f32[2] parameter(2)\n v = f32[2] parameter(3)\n d = f32[4,2] parameter(4)\n"
			 " ROOT b = (f32[4,2], f32[2], f32[2]) batch-norm-grad(x, s, m, v, d), "
			 "epsilon=0.001, feature_index=1 }\n";
	ncc_run_t r;
	ck_assert_msg(ncc_run_module(NULL, tg, 0, in3, 5, 1, &r) == 0, "%s", r.msg);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(fabsf(((float *)r.out[0])[i] - dx[i]) < 1e-4f, "dx[%d] %g vs %g", i,
			      ((float *)r.out[0])[i], dx[i]);
	for (int j = 0; j < 2; j++) {
		ck_assert(fabsf(((float *)r.out[1])[j] - ds[j]) < 1e-4f);
		ck_assert(fabsf(((float *)r.out[2])[j] - db[j]) < 1e-4f);
	}
	ncc_run_free(&r);
}
END_TEST

START_TEST(test_control_flow)
{
	/* while: sum 0..4 with a counter; the body swaps nothing but uses both leaves */
	const char *t = "HloModule m\n"
			"cond { cp = (s32[], f32[2]) parameter(0)\n ci = s32[] get-tuple-element(cp), index=0\n"
			" cn = s32[] constant(5)\n ROOT cc = pred[] compare(ci, cn), direction=LT }\n"
			"body { p = (s32[], f32[2]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
			" a = f32[2] get-tuple-element(p), index=1\n one = s32[] constant(1)\n"
			" j = s32[] add(i, one)\n f = f32[] convert(i)\n b = f32[2] broadcast(f), dimensions={}\n"
			" s = f32[2] add(a, b)\n ROOT bt = (s32[], f32[2]) tuple(j, s) }\n"
			"ENTRY e { x = f32[2] parameter(0)\n z = s32[] constant(0)\n"
			" t = (s32[], f32[2]) tuple(z, x)\n w = (s32[], f32[2]) while(t), condition=cond, body=body\n"
			" ROOT r = f32[2] get-tuple-element(w), index=1 }\n";
	static const float x[2] = { 1, 2 };
	const void *in[1] = { x };
	float w[2] = { 11, 12 };
	check_f32(t, in, 1, w, 2, 0);
	/* a loop whose body swaps its two state leaves (parallel assignment) */
	const char *ts = "HloModule m\n"
			 "cond { cp = (s32[], f32[], f32[]) parameter(0)\n ci = s32[] get-tuple-element(cp), index=0\n"
			 " cn = s32[] constant(3)\n ROOT cc = pred[] compare(ci, cn), direction=LT }\n"
			 "body { p = (s32[], f32[], f32[]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
			 " a = f32[] get-tuple-element(p), index=1\n b = f32[] get-tuple-element(p), index=2\n"
			 " one = s32[] constant(1)\n j = s32[] add(i, one)\n ROOT bt = (s32[], f32[], f32[]) tuple(j, b, a) }\n"
			 "ENTRY e { x = f32[] parameter(0)\n y = f32[] parameter(1)\n z = s32[] constant(0)\n"
			 " t = (s32[], f32[], f32[]) tuple(z, x, y)\n w = (s32[], f32[], f32[]) while(t), condition=cond, body=body\n"
			 " ROOT r = f32[] get-tuple-element(w), index=1 }\n";
	static const float a = 1, b = 2;
	const void *in2[2] = { &a, &b };
	float w2 = 2; /* three swaps */
	check_f32(ts, in2, 2, &w2, 1, 0);
	/* conditional, pred form and index form */
	const char *tc = "HloModule m\n"
			 "t { ta = f32[2] parameter(0)\n ROOT tn = f32[2] negate(ta) }\n"
			 "f { fa = f32[2] parameter(0)\n ROOT fn = f32[2] add(fa, fa) }\n"
			 "ENTRY e { p = pred[] parameter(0)\n x = f32[2] parameter(1)\n"
			 " ROOT c = f32[2] conditional(p, x, x), true_computation=t, false_computation=f }\n";
	static const uint8_t pt = 1, pf = 0;
	const void *inc[2] = { &pt, x };
	check_f32(tc, inc, 2, (float[2]){ -1, -2 }, 2, 0);
	inc[0] = &pf;
	check_f32(tc, inc, 2, (float[2]){ 2, 4 }, 2, 0);
	const char *ti = "HloModule m\n"
			 "b0 { a0 = f32[2] parameter(0)\n ROOT n0 = f32[2] negate(a0) }\n"
			 "b1 { a1 = f32[2] parameter(0)\n ROOT n1 = f32[2] add(a1, a1) }\n"
			 "b2 { a2 = f32[2] parameter(0)\n ROOT n2 = f32[2] multiply(a2, a2) }\n"
			 "ENTRY e { i = s32[] parameter(0)\n x = f32[2] parameter(1)\n"
			 " ROOT c = f32[2] conditional(i, x, x, x), branch_computations={b0, b1, b2} }\n";
	static const int32_t i0 = 0, i1 = 1, i7 = 7;
	const void *ini[2] = { &i0, x };
	check_f32(ti, ini, 2, (float[2]){ -1, -2 }, 2, 0);
	ini[0] = &i1;
	check_f32(ti, ini, 2, (float[2]){ 2, 4 }, 2, 0);
	ini[0] = &i7; /* out of range: the last branch */
	check_f32(ti, ini, 2, (float[2]){ 1, 4 }, 2, 0);
	/* call inlines */
	check_f32("HloModule m\nsq { a = f32[2] parameter(0)\n ROOT n = f32[2] multiply(a, a) }\n"
		  "ENTRY e { x = f32[2] parameter(0)\n ROOT c = f32[2] call(x), to_apply=sq }\n",
		  in, 1, (float[2]){ 1, 4 }, 2, 0);
}
END_TEST

START_TEST(test_custom_calls_collectives)
{
	static const float x[4] = { -1, 0, 0.5f, 2 };
	const void *in[1] = { x };
	float wg[4], wgb[4], ws[4];
	double se = 0, mx = 2;
	for (int i = 0; i < 4; i++) {
		wg[i] = (float)(0.5 * x[i] * (1 + erf(x[i] / sqrt(2))));
		double pdf = exp(-0.5 * x[i] * x[i]) / sqrt(2 * M_PI);
		wgb[i] = (float)(0.5 * (1 + erf(x[i] / sqrt(2))) + x[i] * pdf);
		se += exp(x[i] - mx);
	}
	for (int i = 0; i < 4; i++)
		ws[i] = (float)(exp(x[i] - mx) / se);
	check_f32("HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
		  " ROOT g = f32[4] custom-call(x), custom_call_target=\"AwsNeuronGelu\" }\n", in, 1, wg, 4, 1e-5f);
	check_f32("HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
		  " ROOT g = f32[4] custom-call(x), custom_call_target=\"AwsNeuronGeluBackward\" }\n", in, 1, wgb,
		  4, 1e-5f);
	check_f32("HloModule m\nENTRY e { x = f32[1,4] parameter(0)\n"
		  " ROOT g = f32[1,4] custom-call(x), custom_call_target=\"AwsNeuronSoftmax\" }\n", in, 1, ws,
		  4, 1e-5f);
	check_f32("HloModule m\nENTRY e { x = f32[4] parameter(0)\n"
		  " ROOT g = f32[4] custom-call(x), custom_call_target=\"AwsNeuronTransferWithStaticRing\" }\n",
		  in, 1, x, 4, 0);
	check_f32("HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT sum = f32[] add(a, b) }\nENTRY e { x = f32[4] parameter(0)\n"
		  " r = f32[4] all-reduce(x), replica_groups={}, to_apply=add\n"
		  " g = f32[4] all-gather(r), replica_groups={{0}}, dimensions={0}\n"
		  " ROOT s = f32[4] reduce-scatter(g), replica_groups={{0}}, dimensions={0}, to_apply=add }\n",
		  in, 1, x, 4, 0);
}
END_TEST

/* With a dump directory the back end writes its plan's figures; the NEFF is
 * the same with or without it, and a missing directory is an I/O error. */
START_TEST(test_memory_plan_dump)
{
	const char *t = "HloModule m\n"
			"ENTRY e { x = f32[1024] parameter(0)\n"
			" a = f32[1024] exponential(x)\n b = f32[1024] add(a, a)\n"
			" c = f32[1024] multiply(b, a)\n ROOT d = f32[1024] subtract(c, x) }\n";
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_int_eq(ncc_parse_hlo(t, strlen(t), "t.hlo", &m, &err), NCC_OK);
	char dir[] = "/tmp/ncc-plan-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	void *plain = NULL, *neff = NULL;
	size_t plain_size = 0, size = 0;
	ck_assert_int_eq(ncc_lower_module(m, &o, &plain, &plain_size, &err), NCC_OK);
	o.dump_dir = dir;
	ck_assert_int_eq(ncc_lower_module(m, &o, &neff, &size, &err), NCC_OK);
	ck_assert_uint_eq(size, plain_size);
	ck_assert_int_eq(memcmp(neff, plain, size), 0);
	neff_view_t v;
	char msg[256], path[512], key[64];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(neff, size, &v),
						   msg, sizeof(msg)), NS_STATUS_OK);
	snprintf(path, sizeof(path), "%s/memory-plan.txt", dir);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	unsigned long long scratch = 0, live = 0, val;
	int keys = 0;
	while (fscanf(f, "%63s %llu", key, &val) == 2) {
		keys++;
		if (!strcmp(key, "scratch_bytes"))
			scratch = val;
		else if (!strcmp(key, "scratch_peak_live_bytes"))
			live = val;
	}
	fclose(f);
	unlink(path);
	rmdir(dir);
	ck_assert_int_eq(keys, 2);
	ck_assert_uint_eq(scratch, v.meta->scratch_size);
	/* at least two f32[1024] temporaries are live at once (a with b or c) */
	ck_assert_uint_ge(live, 2 * 4096);
	ck_assert_uint_le(live, scratch);
	free(neff);
	o.dump_dir = "/nonexistent/ncc/plan";
	neff = (void *)1;
	ck_assert_int_eq(ncc_lower_module(m, &o, &neff, &size, &err), NCC_ERR_IO);
	ck_assert_ptr_null(neff);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/ncc/plan/memory-plan.txt"));
	free(plain);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_neff_tables)
{
	/* input names from neff_input_names, aliasing, debug map from metadata, HLO text */
	const char *t = "HloModule m, input_output_alias={ {0}: (1, {}, must-alias) }\n"
			"ENTRY e { x = f32[2] parameter(0), frontend_attributes={neff_input_names=\"input7\"}\n"
			" w = f32[2] parameter(1)\n"
			" s = f32[2] subtract(w, x), metadata={op_type=\"aten__sub\" op_name=\"sub\" "
			"source_file=\"train.py\" source_line=42}\n"
			" ROOT t = (f32[2], f32[2]) tuple(s, x) }\n";
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_int_eq(ncc_parse_hlo(t, strlen(t), "t.hlo", &m, &err), NCC_OK);
	void *neff = NULL;
	size_t size = 0;
	ck_assert_int_eq(ncc_lower_module(m, NULL, &neff, &size, &err), NCC_OK);
	neff_view_t v;
	char msg[256];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(neff, size, &v),
						   msg, sizeof(msg)), NS_STATUS_OK);
	ck_assert_uint_eq(v.meta->n_tensors, 4);
	ck_assert_str_eq(v.tensors[0].name, "input7");
	ck_assert_str_eq(v.tensors[1].name, "input1");
	ck_assert_str_eq(v.tensors[2].name, "output0");
	ck_assert_int_eq(v.tensors[2].alias_input, 1);
	ck_assert_int_eq(v.tensors[3].alias_input, -1);
	ck_assert_ptr_nonnull(v.hlo_text);
	ck_assert_uint_eq(v.hlo_size, strlen(t));
	bool found = false;
	for (uint32_t i = 0; i < v.n_debug; i++) {
		const char *hn, *ot, *sf;
		uint32_t sl;
		neff_debug_lookup(&v, i, &hn, &ot, &sf, &sl);
		if (!strcmp(hn, "s")) {
			ck_assert_str_eq(ot, "aten__sub");
			ck_assert_str_eq(sf, "train.py");
			ck_assert_uint_eq(sl, 42);
			found = true;
		}
	}
	ck_assert(found);
	free(neff);
	/* the aliased output is computed in scratch and copied last: run it */
	static const float x[2] = { 1, 2 }, w[2] = { 10, 20 };
	const void *in[2] = { x, w };
	ncc_run_t r;
	ck_assert_msg(ncc_run_module(m, NULL, 0, in, 2, 1, &r) == 0, "%s", r.msg);
	ck_assert(((float *)r.out[0])[1] == 18 && ((float *)r.out[1])[0] == 1);
	ncc_run_free(&r);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_errors)
{
	ncc_error_t err = { 0 };
	void *neff = (void *)1;
	size_t size = 1;
	ck_assert_int_eq(ncc_lower_module(NULL, NULL, &neff, &size, &err), NCC_ERR_INVALID);
	ck_assert_ptr_null(neff);
	ck_assert_uint_eq(size, 0);
	/* complex and unsupported ops name the instruction and its line */
	static const struct { const char *text; const char *want; } cases[] = {
		{ "HloModule m\nENTRY e { x = f32[2] parameter(0)\n y = f32[2] parameter(1)\n"
		  " c = c64[2] complex(x, y)\n ROOT r = f32[2] real(c) }\n", "c64" },
		{ "HloModule m\nENTRY e { x = f32[2] parameter(0)\n"
		  " ROOT f = f32[2] cbrt(x) }\n", "'f'" },
		{ "HloModule m\nENTRY e { x = f64[2] parameter(0)\n"
		  " ROOT f = f64[2] negate(x) }\n", "f64" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ncc_run_t r;
		ck_assert_int_eq(ncc_run_module(NULL, cases[i].text, 0, NULL, 0, 1, &r), -1);
		ck_assert_msg(strstr(r.msg, "unsupported") && strstr(r.msg, cases[i].want) &&
				      (strstr(r.msg, ":3:") || strstr(r.msg, ":2:")),
			      "case %zu: %s", i, r.msg);
	}
	/* ncc_lower_supports agrees */
	ncc_module_t *m = NULL;
	ck_assert_int_eq(ncc_parse_hlo(cases[0].text, strlen(cases[0].text), "x", &m, &err), NCC_OK);
	const char *reason = NULL;
	ncc_inst_t *c = ncc_comp_find_inst(m->entry, "c");
	ck_assert(!ncc_lower_supports(c, &reason));
	ck_assert_ptr_nonnull(strstr(reason, "unsupported"));
	ck_assert(ncc_lower_supports(ncc_comp_find_inst(m->entry, "x"), NULL));
	ncc_module_free(m);
}
END_TEST

START_TEST(test_select_and_scatter)
{
	/* max-pool gradient: 2x2 windows, stride 2, on a 4x4 input; ties pick the first */
	static const float x[16] = { 1, 5, 2, 2, 3, 0, 2, 1, 0, 0, 9, 1, 0, 0, 1, 9 };
	static const float g[4] = { 10, 20, 30, 40 };
	float w[16] = { 0 };
	w[1] = 10;  /* max 5 */
	w[2] = 20;  /* first of the tied 2s */
	w[8] = 30;  /* all zero: the first */
	w[10] = 40; /* 9 at (2,2) comes before 9 at (3,3) */
	const void *in[2] = { x, g };
	const char *t = "HloModule m\nge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
			" ROOT c = pred[] compare(a, b), direction=GE }\n"
			"add { p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT s = f32[] add(p, q) }\n"
			"ENTRY e { x = f32[4,4] parameter(0)\n g = f32[2,2] parameter(1)\n z = f32[] constant(0)\n"
			" ROOT r = f32[4,4] select-and-scatter(x, g, z), window={size=2x2 stride=2x2}, "
			"select=ge, scatter=add }\n";
	check_f32(t, in, 2, w, 16, 0);
	/* overlapping 3-wide windows with padding 1: contributions add up */
	static const float x1[4] = { 1, 3, 2, 0 };
	static const float g1[4] = { 1, 2, 4, 8 };
	/* windows: [pad,1,3]->3 (idx1) [1,3,2]->3 [3,2,0]->3 [2,0,pad]->2 (idx2) */
	float w1[4] = { 0, 1 + 2 + 4, 8, 0 };
	const void *in1[2] = { x1, g1 };
	check_f32("HloModule m\nge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT c = pred[] compare(a, b), direction=GE }\n"
		  "add { p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT s = f32[] add(p, q) }\n"
		  "ENTRY e { x = f32[4] parameter(0)\n g = f32[4] parameter(1)\n z = f32[] constant(0)\n"
		  " ROOT r = f32[4] select-and-scatter(x, g, z), window={size=3 pad=1_1}, "
		  "select=ge, scatter=add }\n", in1, 2, w1, 4, 0);
}
END_TEST

#define SAS_GE_ADD                                                                         \
	"HloModule m\nge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"                  \
	" ROOT c = pred[] compare(a, b), direction=GE }\n"                                     \
	"add { p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT s = f32[] add(p, q) }\n"

/* A max-pool gradient over two spatial dims (NCHW or channels last) is one
 * init COPY and one SELSCAT: no padded copies, im2col, index program or
 * SCATTER; a window over three dims keeps those forms. Planes are split
 * among threads, each plane's windows in order: 1 and 2 threads give the
 * sums written out here, ties to the first largest. (Every combiner and
 * select against the interpreter: test_lower_torch.) */
START_TEST(test_select_and_scatter_one_selscat)
{
	const char *nchw = SAS_GE_ADD
		"ENTRY e { x = f32[4,8,33,33] parameter(0)\n g = f32[4,8,17,17] parameter(1)\n"
		" z = f32[] constant(0)\n ROOT r = f32[4,8,33,33] select-and-scatter(x, g, z), "
		"window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, select=ge, scatter=add }\n";
	const char *nhwc = SAS_GE_ADD
		"ENTRY e { x = f32[2,9,9,4] parameter(0)\n g = f32[2,5,5,4] parameter(1)\n"
		" z = f32[] constant(0)\n ROOT r = f32[2,9,9,4] select-and-scatter(x, g, z), "
		"window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, select=ge, scatter=add }\n";
	const char *three = SAS_GE_ADD
		"ENTRY e { x = f32[2,6,6,6] parameter(0)\n g = f32[2,3,3,3] parameter(1)\n"
		" z = f32[] constant(0)\n ROOT r = f32[2,6,6,6] select-and-scatter(x, g, z), "
		"window={size=1x2x2x2 stride=1x2x2x2}, select=ge, scatter=add }\n";
	const char *texts[2] = { nchw, nhwc };
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(count_op(texts[i], ISA_OP_SELSCAT), 1);
		ck_assert_uint_eq(count_op(texts[i], ISA_OP_SCATTER), 0);
		ck_assert_uint_eq(count_op(texts[i], ISA_OP_FUSED), 0);
		ck_assert_uint_eq(count_copies(texts[i]), 1);
	}
	ck_assert_uint_eq(count_op(three, ISA_OP_SELSCAT), 0);
	ck_assert_uint_gt(count_op(three, ISA_OP_SCATTER), 0);
	/* values with ties (0..4): the first largest of each window wins */
	static float x[4 * 8 * 33 * 33], g[4 * 8 * 17 * 17], want[4 * 8 * 33 * 33];
	uint32_t seed = 12345;
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)((seed >> 16) % 5);
	}
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		g[i] = (float)(i % 13) - 6.0f;
	memset(want, 0, sizeof(want));
	for (int p = 0; p < 32; p++)
		for (int y0 = 0; y0 < 17; y0++)
			for (int y1 = 0; y1 < 17; y1++) {
				int best = -1;
				for (int k0 = 0; k0 < 3; k0++)
					for (int k1 = 0; k1 < 3; k1++) {
						int j0 = 2 * y0 - 1 + k0, j1 = 2 * y1 - 1 + k1;
						if (j0 < 0 || j0 >= 33 || j1 < 0 || j1 >= 33)
							continue;
						int at = (p * 33 + j0) * 33 + j1;
						if (best < 0 || !(x[best] >= x[at]))
							best = at;
					}
				want[best] += g[(p * 17 + y0) * 17 + y1];
			}
	const void *in[2] = { x, g };
	ncc_run_t r[2];
	for (int t = 0; t < 2; t++) {
		fwsim_set_threads((uint32_t)t + 1);
		ck_assert_msg(ncc_run_module(NULL, nchw, 1, in, 2, 5, &r[t]) == 0, "%s", r[t].msg);
		ck_assert_uint_eq(r[t].out_size[0], sizeof(want));
		ck_assert(memcmp(r[t].out[0], want, sizeof(want)) == 0);
	}
	fwsim_set_threads(0);
	ncc_run_free(&r[0]);
	ncc_run_free(&r[1]);
}
END_TEST

START_TEST(test_gather_scatter_axes)
{
	/* take along dim 1 of a [2,4] table with [3] indices; output [2,3] keeps the
	 * table's dim 0 first (offset_dims={0}), the batch dim last */
	static const float tab[8] = { 0, 1, 2, 3, 10, 11, 12, 13 };
	static const int32_t idx[3] = { 3, 0, 3 };
	const void *in[2] = { tab, idx };
	float w[6] = { 3, 0, 3, 13, 10, 13 };
	check_f32("HloModule m\nENTRY e { t = f32[2,4] parameter(0)\n i = s32[3] parameter(1)\n"
		  " ROOT g = f32[2,3] gather(t, i), offset_dims={0}, collapsed_slice_dims={1}, "
		  "start_index_map={1}, index_vector_dim=1, slice_sizes={2,1} }\n", in, 2, w, 6, 0);
	/* 2-D index batch, non-collapsed slice dim (size-1 offset dim) */
	static const int64_t idx2[4] = { 1, 0, 0, 1 };
	const void *in2[2] = { tab, idx2 };
	float w2[8] = { 10, 11, 12, 13, 0, 1, 2, 3 };
	float w2b[16];
	for (int a = 0; a < 4; a++)
		memcpy(&w2b[a * 4], &tab[idx2[a] * 4], 4 * sizeof(float));
	(void)w2;
	check_f32("HloModule m\nENTRY e { t = f32[2,4] parameter(0)\n i = s64[2,2] parameter(1)\n"
		  " ROOT g = f32[2,2,1,4] gather(t, i), offset_dims={2,3}, collapsed_slice_dims={}, "
		  "start_index_map={0}, index_vector_dim=2, slice_sizes={1,4} }\n", in2, 2, w2b, 16, 0);
	/* scatter-max along dim 1 with updates [rows, batch] */
	static const int32_t sidx[2] = { 2, 2 };
	static const float upd[4] = { 5, 1, 20, 30 }; /* [2 rows, 2 updates] */
	const void *in3[3] = { tab, sidx, upd };
	float w3[8] = { 0, 1, 5, 3, 10, 11, 30, 13 };
	check_f32("HloModule m\nmx { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		  " ROOT c = f32[] maximum(a, b) }\nENTRY e { t = f32[2,4] parameter(0)\n"
		  " i = s32[2] parameter(1)\n u = f32[2,2] parameter(2)\n"
		  " ROOT s = f32[2,4] scatter(t, i, u), update_window_dims={0}, inserted_window_dims={1}, "
		  "scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=mx }\n", in3, 3, w3, 8, 0);
	/* the llama form: assign whole [1,4] rows of a [3,1,4]-shaped cache at a s32[1] index */
	static const float cache[12] = { 0 };
	static const int32_t pos = 2;
	static const float row[4] = { 1, 2, 3, 4 };
	const void *in4[3] = { cache, &pos, row };
	float w4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 };
	check_f32("HloModule m\nas { a = f32[] parameter(0)\n ROOT b = f32[] parameter(1) }\n"
		  "ENTRY e { t = f32[3,1,4] parameter(0)\n i = s32[1] parameter(1)\n"
		  " u = f32[1,1,4] parameter(2)\n"
		  " ROOT s = f32[3,1,4] scatter(t, i, u), update_window_dims={1,2}, inserted_window_dims={0}, "
		  "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=as }\n", in4, 3, w4, 12, 0);
}
END_TEST

START_TEST(test_errors_more)
{
	ncc_error_t err = { 0 };
	const char *t = "HloModule m\nENTRY e { x = f32[2] parameter(0)\n ROOT n = f32[2] negate(x) }\n";
	ncc_module_t *m = NULL;
	ck_assert_int_eq(ncc_parse_hlo(t, strlen(t), "t", &m, &err), NCC_OK);
	void *neff = NULL;
	size_t size = 0;
	/* missing out parameters and too many cores are invalid arguments */
	ck_assert_int_eq(ncc_lower_module(m, NULL, NULL, &size, &err), NCC_ERR_INVALID);
	ncc_compile_options_t o;
	ncc_compile_options_init(&o);
	o.n_cores = NEFF_MAX_CORES + 1;
	ck_assert_int_eq(ncc_lower_module(m, &o, &neff, &size, &err), NCC_ERR_INVALID);
	ck_assert_ptr_null(neff);
	ck_assert_ptr_nonnull(strstr(err.msg, "n_cores"));
	/* several cores: valid NEFF, the program on core 0 */
	o.n_cores = 2;
	ck_assert_int_eq(ncc_lower_module(m, &o, &neff, &size, &err), NCC_OK);
	neff_view_t v;
	char msg[256];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(neff, size, &v),
						   msg, sizeof(msg)), NS_STATUS_OK);
	ck_assert_uint_eq(v.meta->n_cores, 2);
	free(neff);
	/* no HLO text when asked, a model name and compiler version when given */
	o.n_cores = 1;
	o.embed_hlo = false;
	o.model_name = "my-model";
	o.compiler_version = "ncc-test 9";
	ck_assert_int_eq(ncc_lower_module(m, &o, &neff, &size, &err), NCC_OK);
	ck_assert_int_eq(ns_status_consume_message(neff_parse(neff, size, &v),
						   msg, sizeof(msg)), NS_STATUS_OK);
	ck_assert_ptr_null(v.hlo_text);
	ck_assert_str_eq(v.meta->model_name, "my-model");
	ck_assert_str_eq(v.meta->compiler_version, "ncc-test 9");
	free(neff);
	ncc_module_free(m);
	/* tuple-shaped entry parameters are refused, naming the parameter */
	const char *tp = "HloModule m\nENTRY e { p = (f32[2], f32[2]) parameter(0)\n"
			 " ROOT g = f32[2] get-tuple-element(p), index=0 }\n";
	ncc_run_t r;
	ck_assert_int_eq(ncc_run_module(NULL, tp, 0, NULL, 0, 1, &r), -1);
	ck_assert_msg(strstr(r.msg, "unsupported") && strstr(r.msg, "'p'"), "%s", r.msg);
	/* an unsupported custom-call target and a multi-replica collective */
	const char *tc = "HloModule m\nENTRY e { x = f32[2] parameter(0)\n"
			 " ROOT c = f32[2] custom-call(x), custom_call_target=\"MyKernel\" }\n";
	ck_assert_int_eq(ncc_run_module(NULL, tc, 0, NULL, 0, 1, &r), -1);
	ck_assert_msg(strstr(r.msg, "unsupported custom-call target"), "%s", r.msg);
	const char *tr = "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
			 " ROOT s = f32[] add(a, b) }\nENTRY e { x = f32[2] parameter(0)\n"
			 " ROOT c = f32[2] all-reduce(x), replica_groups={{0,1}}, to_apply=add }\n";
	ck_assert_int_eq(ncc_run_module(NULL, tr, 0, NULL, 0, 1, &r), -1);
	ck_assert_msg(strstr(r.msg, "more than one replica"), "%s", r.msg);
}
END_TEST

/* ncc_lower_supports accepts every instruction of the corpus (what analyze reports
 * as 100% supported). */
START_TEST(test_corpus_supported)
{
	static const char *files[] = {
		"mlp-mini_mlp_single.hlo", "mlp-single_mlp.hlo", "mlp-mlp_single_final.hlo",
		"mlp-mlp_single_case_2.hlo", "misc-linear.hlo", "misc-pp_1_layers_2_graph_1.hlo",
		"misc-pp_1_layers_2_graph_2.hlo", "qwb_linear_model-pp_1_layers_2.hlo",
		"gpt-gpt2_tp_1.hlo", "llama-tp_1.hlo", "bert-bert_single_graph_2.hlo",
		"bert-bert_single_graph_4.hlo", "xla-mobilenet_v2.hlo",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, files[i]);
		ncc_module_t *m = NULL;
		ncc_error_t err = { 0 };
		ck_assert_msg(ncc_parse_hlo_file(path, &m, &err) == NCC_OK, "%s", err.msg);
		for (int32_t c = 0; c < m->ncomps; c++)
			for (int32_t k = 0; k < m->comps[c]->ninsts; k++) {
				const char *why = NULL;
				const ncc_inst_t *inst = m->comps[c]->insts[k];
				ck_assert_msg(ncc_lower_supports(inst, &why), "%s: %s: %s", files[i],
					      inst->name, why);
			}
		ncc_module_free(m);
	}
}
END_TEST

#ifndef NCC_HLO_CORPUS
#define NCC_HLO_CORPUS "../shared/hlo"
#endif

/* The corpus modules that run here (the MobileNetV2 step only compiles: its
 * training step needs ~9 GB of scratch). */
static const char *const k_run_corpus[] = {
	"mlp-mini_mlp_single.hlo", "mlp-single_mlp.hlo", "mlp-mlp_single_final.hlo",
	"mlp-mlp_single_case_2.hlo", "misc-linear.hlo", "misc-pp_1_layers_2_graph_1.hlo",
	"misc-pp_1_layers_2_graph_2.hlo", "qwb_linear_model-pp_1_layers_2.hlo",
	"gpt-gpt2_tp_1.hlo", "llama-tp_1.hlo", "bert-bert_single_graph_2.hlo",
	"bert-bert_single_graph_4.hlo",
};
#define N_RUN_CORPUS ((int)(sizeof(k_run_corpus) / sizeof(k_run_corpus[0])))

/* Indices into k_run_corpus of the small modules (the default run) and of the big
 * ones (the 'full' suite; corpus_split.h), set by main() before the tests fork. */
static int g_small[N_RUN_CORPUS], g_nsmall, g_big[N_RUN_CORPUS], g_nbig;

/* A corpus module compiles, runs on the simulator without error, and gives the
 * same bytes with one stream (-O0) and with the multi-engine semaphore schedule
 * (-O1 lowering, no passes). */
static void corpus_runs(const char *file)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, file);
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_parse_hlo_file(path, &m, &err) == NCC_OK, "%s", err.msg);
	ncc_run_t r0, r1;
	int rc = ncc_run_module(m, NULL, 0, NULL, 0, 7, &r0);
	ck_assert_msg(rc == 0, "%s -O0: %s", file, r0.msg);
	rc = ncc_run_module(m, NULL, 1, NULL, 0, 7, &r1);
	ck_assert_msg(rc == 0, "%s -O1: %s", file, r1.msg);
	ck_assert_uint_eq(r0.n_out, r1.n_out);
	for (uint32_t o = 0; o < r0.n_out; o++) {
		ck_assert_uint_eq(r0.out_size[o], r1.out_size[o]);
		ck_assert_msg(memcmp(r0.out[o], r1.out[o], r0.out_size[o]) == 0,
			      "%s: output %u differs between schedules", file, o);
	}
	ncc_run_free(&r0);
	ncc_run_free(&r1);
	ncc_module_free(m);
}

START_TEST(test_corpus_runs)
{
	corpus_runs(k_run_corpus[g_small[_i]]);
}
END_TEST

START_TEST(test_corpus_big_runs)
{
	corpus_runs(k_run_corpus[g_big[_i]]);
}
END_TEST

/* The largest module only compiles here (its training step needs ~9 GB of scratch):
 * its NEFF must be valid. */
START_TEST(test_corpus_mobilenet_compiles)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, "xla-mobilenet_v2.hlo");
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_parse_hlo_file(path, &m, &err) == NCC_OK, "%s", err.msg);
	void *neff = NULL;
	size_t size = 0;
	ck_assert_msg(ncc_lower_module(m, NULL, &neff, &size, &err) == NCC_OK, "%s", err.msg);
	neff_view_t v;
	char msg[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(neff, size, &v),
						msg, sizeof(msg)) == NS_STATUS_OK, "%s", msg);
	free(neff);
	ncc_module_free(m);
}
END_TEST


/* Leaf k of a value (depth-first). */
static const ncc_value_t *value_leaf(const ncc_value_t *v, int32_t *k)
{
	if (v->shape.etype != NCC_TUPLE)
		return (*k)-- == 0 ? v : NULL;
	for (int32_t i = 0; i < v->nelems; i++) {
		const ncc_value_t *r = value_leaf(v->elems[i], k);
		if (r)
			return r;
	}
	return NULL;
}

/* Runs m on the simulator and on the reference interpreter with the same seeded
 * inputs and compares every output leaf with the interpreter's module tolerance.
 * Returns the number of mismatching leaves; msg gets the first. Outputs named in
 * skip_leaf_mask (bit k) are not compared (e.g. random bits). */
static int compare_with_interp(const ncc_module_t *m, int opt, uint64_t seed, char *msg,
			       size_t msg_len)
{
	const ncc_comp_t *e = m->entry;
	ncc_value_t **args = calloc((size_t)e->nparams + 1, sizeof(*args));
	const void **in = calloc((size_t)e->nparams + 1, sizeof(*in));
	int bad = 0;
	msg[0] = 0;
	for (int32_t p = 0; p < e->nparams; p++) {
		ck_assert_int_eq(ncc_value_alloc(&e->params[p]->shape, &args[p]), NCC_OK);
		/* small positive-and-negative floats, small integers (valid indices) */
		ncc_value_fill_random(args[p], seed + (uint64_t)p);
		in[p] = args[p]->data;
	}
	ncc_value_t *want = NULL;
	ncc_error_t err = { 0 };
	ncc_status_t st = ncc_interp_run(m, (const ncc_value_t *const *)args, e->nparams, NULL,
					 &want, &err);
	ck_assert_msg(st == NCC_OK, "interp: %s", err.msg);
	ncc_run_t r;
	int rc = ncc_run_module(m, NULL, opt, in, (uint32_t)e->nparams, seed, &r);
	ck_assert_msg(rc == 0, "%s", r.msg);
	for (uint32_t o = 0; o < r.n_out; o++) {
		int32_t k = (int32_t)o;
		const ncc_value_t *wl = value_leaf(want, &k);
		ck_assert_ptr_nonnull(wl);
		ncc_value_t *got = NULL;
		ck_assert_int_eq(ncc_value_alloc(&wl->shape, &got), NCC_OK);
		ck_assert_uint_eq(got->nbytes, r.out_size[o]);
		memcpy(got->data, r.out[o], got->nbytes);
		ncc_tolerance_t tol = ncc_tolerance_for_module(wl->shape.etype);
		ncc_compare_result_t cr;
		if (!ncc_value_compare(wl, got, &tol, &cr)) {
			if (!bad)
				snprintf(msg, msg_len, "output %u: %s", o, cr.msg);
			bad++;
		}
		ncc_value_free(got);
	}
	ncc_run_free(&r);
	ncc_value_free(want);
	for (int32_t p = 0; p < e->nparams; p++)
		ncc_value_free(args[p]);
	free(args);
	free(in);
	return bad;
}


/* One module per HLO op (and per interesting shape/type), random inputs, compared
 * with the reference interpreter at -O0 and -O1. */
START_TEST(test_ops_vs_interp)
{
	static const char *const add_c = "add { add_a = f32[] parameter(0)\n add_b = f32[] parameter(1)\n ROOT add_s = f32[] add(add_a, add_b) }\n";
	static const char *const max_c = "mx { mx_a = f32[] parameter(0)\n mx_b = f32[] parameter(1)\n ROOT mx_s = f32[] maximum(mx_a, mx_b) }\n";
	char buf[4096];
	static const char *bodies[] = {
		/* elementwise f32, bf16, f16, ints, rank 0, size-1 dims */
		"ENTRY e { x = f32[3,4] parameter(0)\n y = f32[3,4] parameter(1)\n a = f32[3,4] add(x, y)\n s = f32[3,4] subtract(a, y)\n m = f32[3,4] multiply(s, x)\n d = f32[3,4] divide(m, y)\n ROOT r = f32[3,4] maximum(d, x) }",
		"ENTRY e { x = bf16[2,1,5] parameter(0)\n y = bf16[2,1,5] parameter(1)\n a = bf16[2,1,5] multiply(x, y)\n ROOT r = bf16[2,1,5] tanh(a) }",
		"ENTRY e { x = f16[7] parameter(0)\n e = f16[7] exponential(x)\n ROOT r = f16[7] negate(e) }",
		"ENTRY e { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT r = f32[] power(x, y) }",
		"ENTRY e { x = s32[6] parameter(0)\n y = s32[6] parameter(1)\n a = s32[6] and(x, y)\n o = s32[6] or(a, y)\n ROOT r = s32[6] xor(o, x) }",
		"ENTRY e { x = s8[6] parameter(0)\n y = s8[6] parameter(1)\n ROOT r = s8[6] multiply(x, y) }",
		"ENTRY e { x = u16[6] parameter(0)\n y = u16[6] parameter(1)\n ROOT r = u16[6] shift-left(x, y) }",
		"ENTRY e { x = s16[6] parameter(0)\n y = s16[6] parameter(1)\n ROOT r = s16[6] remainder(x, y) }",
		"ENTRY e { x = u32[6] parameter(0)\n y = u32[6] parameter(1)\n ROOT r = u32[6] shift-right-logical(x, y) }",
		"ENTRY e { x = s64[6] parameter(0)\n y = s64[6] parameter(1)\n ROOT r = s64[6] shift-right-arithmetic(x, y) }",
		"ENTRY e { x = u8[6] parameter(0)\n ROOT r = u8[6] not(x) }",
		"ENTRY e { x = f32[8] parameter(0)\n a = f32[8] abs(x)\n l = f32[8] log(a)\n p = f32[8] log-plus-one(a)\n q = f32[8] sqrt(a)\n r1 = f32[8] rsqrt(a)\n s1 = f32[8] add(l, p)\n s2 = f32[8] add(q, r1)\n ROOT r = f32[8] add(s1, s2) }",
		"ENTRY e { x = f32[8] parameter(0)\n a = f32[8] sign(x)\n b = f32[8] floor(x)\n c = f32[8] ceil(x)\n d = f32[8] round-nearest-afz(x)\n e2 = f32[8] round-nearest-even(x)\n f = f32[8] logistic(x)\n g = f32[8] erf(x)\n h = f32[8] sine(x)\n i = f32[8] cosine(x)\n t = (f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8]) tuple(a, b, c, d, e2, f, g, h, i)\n ROOT r = (f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8]) tuple(a, b, c, d, e2, f, g, h, i) }",
		"ENTRY e { x = f32[8] parameter(0)\n y = f32[8] parameter(1)\n c = pred[8] compare(x, y), direction=LT\n s = f32[8] select(c, x, y)\n lo = f32[] constant(-0.5)\n hi = f32[] constant(0.5)\n ROOT r = f32[8] clamp(lo, s, hi) }",
		"ENTRY e { x = f32[8] parameter(0)\n i = s32[8] convert(x)\n b = bf16[8] convert(x)\n u = u32[8] bitcast-convert(x)\n ROOT r = (s32[8], bf16[8], u32[8]) tuple(i, b, u) }",
		/* data movement */
		"ENTRY e { x = f32[2,3,4] parameter(0)\n t = f32[4,2,3] transpose(x), dimensions={2,0,1}\n r = f32[8,3] reshape(t)\n v = f32[8,3] reverse(r), dimensions={0,1}\n ROOT s = f32[3,2] slice(v), slice={[1:7:2], [0:3:2]} }",
		"ENTRY e { x = f32[3] parameter(0)\n b = f32[2,3,4] broadcast(x), dimensions={1}\n y = f32[2,3,4] parameter(1)\n ROOT r = f32[2,3,4] add(b, y) }",
		"ENTRY e { x = f32[2,3] parameter(0)\n y = f32[2,2] parameter(1)\n z = f32[2,1] parameter(2)\n ROOT c = f32[2,6] concatenate(x, y, z), dimensions={1} }",
		"ENTRY e { x = f32[3,4] parameter(0)\n z = f32[] parameter(1)\n ROOT p = f32[6,6] pad(x, z), padding=1_2x-1_0_1 }",
		"ENTRY e { x = f32[5,6] parameter(0)\n i = s32[] parameter(1)\n j = s32[] parameter(2)\n ROOT d = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3} }",
		"ENTRY e { x = f32[5,6] parameter(0)\n u = f32[2,3] parameter(1)\n i = s32[] parameter(2)\n j = s32[] parameter(3)\n ROOT d = f32[5,6] dynamic-update-slice(x, u, i, j) }",
		"ENTRY e { ROOT i = s32[3,5] iota(), iota_dimension=1 }",
		/* dot */
		"ENTRY e { x = f32[4,3] parameter(0)\n y = f32[5,3] parameter(1)\n ROOT d = f32[4,5] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={1} }",
		"ENTRY e { x = f32[2,3,4,5] parameter(0)\n y = f32[2,5,3,6] parameter(1)\n ROOT d = f32[2,3,4,6] dot(x, y), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1} }",
		"ENTRY e { x = bf16[8,16] parameter(0)\n y = bf16[16,4] parameter(1)\n ROOT d = f32[8,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0} }",
		"ENTRY e { x = s32[3,4] parameter(0)\n y = s32[4,2] parameter(1)\n ROOT d = s32[3,2] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0} }",
		/* reductions */
		"%s ENTRY e { x = f32[4,5,6] parameter(0)\n z = f32[] constant(0)\n ROOT r = f32[5] reduce(x, z), dimensions={0,2}, to_apply=add }",
		"%s ENTRY e { x = f32[300,700] parameter(0)\n z = f32[] constant(0)\n ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add }",
		"%s ENTRY e { x = f32[1,4,6,6] parameter(0)\n z = f32[] constant(-inf)\n ROOT r = f32[1,4,3,3] reduce-window(x, z), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=mx }",
		/* nn */
		"ENTRY e { x = f32[2,3,6,6] parameter(0)\n k = f32[4,3,3,3] parameter(1)\n ROOT c = f32[2,4,3,3] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[2,6,6,4] parameter(0)\n k = f32[3,3,1,4] parameter(1)\n ROOT c = f32[2,6,6,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4 }",
		"ENTRY e { x = f32[4,2,5,5] parameter(0)\n k = f32[4,3,3,3] parameter(1)\n ROOT c = f32[2,3,3,3] convolution(x, k), window={size=3x3}, dim_labels=fb01_io01->bf01 }",
		"ENTRY e { x = f32[4,3,5,5] parameter(0)\n k = f32[4,3,3,3] parameter(1)\n ROOT c = f32[2,4,3,3] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01, batch_group_count=2 }",
		"ENTRY e { x = f32[4,3,5,5] parameter(0)\n k = f32[4,3,2,2] parameter(1)\n ROOT c = f32[2,4,4,4] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01, batch_group_count=2 }",
		"ENTRY e { x = f32[4,3,5,5] parameter(0)\n k = f32[4,3,4,4] parameter(1)\n ROOT c = f32[2,4,2,2] convolution(x, k), window={size=4x4}, dim_labels=bf01_oi01->bf01, batch_group_count=2 }",
		"ENTRY e { x = f32[2,4,6,6] parameter(0)\n k = f32[4,1,5,5] parameter(1)\n ROOT c = f32[2,4,2,2] convolution(x, k), window={size=5x5}, dim_labels=bf01_oi01->bf01, feature_group_count=4 }",
		/* pointwise (1x1) convolutions: one MATMUL in place, strided fallback */
		"ENTRY e { x = f32[2,3,4,4] parameter(0)\n k = f32[5,3,1,1] parameter(1)\n ROOT c = f32[2,5,4,4] convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[2,4,4,3] parameter(0)\n k = f32[1,1,3,5] parameter(1)\n ROOT c = f32[2,4,4,5] convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f }",
		"ENTRY e { x = f32[2,3,5,5] parameter(0)\n k = f32[5,3,1,1] parameter(1)\n ROOT c = f32[2,5,3,3] convolution(x, k), window={size=1x1 stride=2x2}, dim_labels=bf01_oi01->bf01 }",
		/* the MobileNetV2 backward forms: input gradient of a strided depthwise conv,
		 * weight gradient (activation map as the kernel) of a strided one */
		"ENTRY e { x = f32[2,4,3,3] parameter(0)\n k = f32[3,3,4,1] parameter(1)\n ROOT c = f32[2,4,6,6] convolution(x, k), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01, feature_group_count=4 }",
		"ENTRY e { x = f32[2,4,6,6] parameter(0)\n k = f32[2,4,3,3] parameter(1)\n ROOT c = f32[3,3,1,4] convolution(x, k), window={size=3x3 pad=1_0x1_0 rhs_dilate=2x2}, dim_labels=fb01_io01->01bf, batch_group_count=4 }",
		"ENTRY e { x = f32[2,3,6,6] parameter(0)\n k = f32[2,4,6,6] parameter(1)\n ROOT c = f32[1,1,3,4] convolution(x, k), window={size=6x6}, dim_labels=fb01_io01->01bf }",
		/* grouped forms as one CONV (ISA 1.4): 1-d with a reversed kernel, NHWC
		 * input gradient, the weight gradient of a grouped convolution (batch
		 * groups of two channels) */
		"ENTRY e { x = f32[2,6,9] parameter(0)\n k = f32[6,2,3] parameter(1)\n ROOT c = f32[2,6,5] convolution(x, k), window={size=3 stride=2 pad=1_1 rhs_reversal=1}, dim_labels=bf0_oi0->bf0, feature_group_count=3 }",
		"ENTRY e { x = f32[2,3,3,4] parameter(0)\n k = f32[3,3,4,1] parameter(1)\n ROOT c = f32[2,6,6,4] convolution(x, k), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f, feature_group_count=4 }",
		"ENTRY e { x = f32[2,8,6,6] parameter(0)\n k = f32[2,8,6,6] parameter(1)\n ROOT c = f32[3,3,2,8] convolution(x, k), window={size=6x6 pad=1_1x1_1}, dim_labels=fb01_io01->01bf, batch_group_count=4 }",
		/* dense GEMM forms (lower_conv.c conv_dense_gemm, conv_dense_col2im):
		 * ResNet's 3x3 weight gradient (output columns copied, rows shifted), a
		 * stem's (rhs-dilated: every position copied), a strided input gradient
		 * with uneven padding, a reversed kernel, a negative pad, 1-D and 3-D */
		"ENTRY e { x = f32[3,5,7,6] parameter(0)\n d = f32[3,4,7,6] parameter(1)\n ROOT c = f32[3,3,5,4] convolution(x, d), window={size=7x6 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }",
		"ENTRY e { x = f32[2,3,11,11] parameter(0)\n d = f32[2,4,6,6] parameter(1)\n ROOT c = f32[4,4,3,4] convolution(x, d), window={size=6x6 pad=2_1x2_1 rhs_dilate=2x2}, dim_labels=fb01_io01->01bf }",
		"ENTRY e { x = f32[2,4,5,4] parameter(0)\n k = f32[5,5,3,4] parameter(1)\n ROOT c = f32[2,3,10,7] convolution(x, k), window={size=5x5 pad=2_3x2_2 lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[2,3,6,7] parameter(0)\n k = f32[4,3,3,2] parameter(1)\n ROOT c = f32[2,4,6,6] convolution(x, k), window={size=3x2 pad=1_1x0_0 rhs_reversal=1x1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[2,3,8,8] parameter(0)\n k = f32[4,3,3,3] parameter(1)\n ROOT c = f32[2,4,6,7] convolution(x, k), window={size=3x3 pad=-1_1x1_0 rhs_dilate=1x1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[2,3,9] parameter(0)\n k = f32[4,3,3] parameter(1)\n ROOT c = f32[2,4,9] convolution(x, k), window={size=3 pad=1_1}, dim_labels=bf0_oi0->bf0 }",
		"ENTRY e { x = f32[1,2,4,5,5] parameter(0)\n k = f32[3,2,3,3,3] parameter(1)\n ROOT c = f32[1,3,4,5,5] convolution(x, k), window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=bf012_oi012->bf012 }",
		"ENTRY e { x = f32[2,3,6,6] parameter(0)\n k = f32[4,3,3,3] parameter(1)\n ROOT c = f32[2,6,6,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->b01f }",
		/* im2col buffers over 4 MiB: chunks of one batch element, two buffers
		 * in turn (the third chunk reuses the first's zeros) */
		"ENTRY e { x = f32[3,40,72,72] parameter(0)\n k = f32[4,40,3,3] parameter(1)\n ROOT c = f32[3,4,72,72] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[3,40,72,72] parameter(0)\n d = f32[3,4,72,72] parameter(1)\n ROOT c = f32[3,3,40,4] convolution(x, d), window={size=72x72 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }",
		/* few output positions (conv_dense_positions): ResNet's last stage at 2x2,
		 * its input gradient (reversed 01oi kernel: W' copied), strided and
		 * dilated with a crop, an NHWC bf16 output, two chunks of images */
		"ENTRY e { x = f32[3,6,2,2] parameter(0)\n k = f32[5,6,3,3] parameter(1)\n ROOT c = f32[3,5,2,2] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[3,6,2,2] parameter(0)\n k = f32[3,3,4,6] parameter(1)\n r = f32[3,3,4,6] reverse(k), dimensions={0,1}\n ROOT c = f32[3,4,2,2] convolution(x, r), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[2,3,9,7] parameter(0)\n k = f32[5,3,3,2] parameter(1)\n ROOT c = f32[2,5,2,2] convolution(x, k), window={size=3x2 stride=3x2 pad=1_-1x0_0 rhs_dilate=2x3}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[2,4,3,3] parameter(0)\n k = f32[4,4,3,3] parameter(1)\n ROOT c = bf16[2,3,3,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->b01f }",
		"ENTRY e { x = f32[16,2048,2,2] parameter(0)\n k = f32[3,2048,3,3] parameter(1)\n ROOT c = f32[16,3,2,2] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }",
		/* input gradients reading a {1,0,2,3} reversed kernel in place (col2im):
		 * strided over 2x2, stride 1 over 2x2 and 4x4 (G folded over the
		 * images), strided with an uneven crop, and a G of over 4 MiB (per
		 * image) */
		"ENTRY e { x = f32[3,16,2,2] parameter(0)\n p = f32[16,5,3,3] parameter(1)\n t = f32[3,3,5,16]{1,0,2,3} transpose(p), dimensions={2,3,1,0}\n r = f32[3,3,5,16]{1,0,2,3} reverse(t), dimensions={0,1}\n ROOT c = f32[3,5,4,4] convolution(x, r), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[3,16,2,2] parameter(0)\n p = f32[16,5,3,3] parameter(1)\n t = f32[3,3,5,16]{1,0,2,3} transpose(p), dimensions={2,3,1,0}\n r = f32[3,3,5,16]{1,0,2,3} reverse(t), dimensions={0,1}\n ROOT c = f32[3,5,2,2] convolution(x, r), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[2,40,4,4] parameter(0)\n p = f32[40,6,3,3] parameter(1)\n t = f32[3,3,6,40]{1,0,2,3} transpose(p), dimensions={2,3,1,0}\n r = f32[3,3,6,40]{1,0,2,3} reverse(t), dimensions={0,1}\n ROOT c = f32[2,6,4,4] convolution(x, r), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[2,8,3,4] parameter(0)\n p = f32[8,3,3,2] parameter(1)\n t = f32[3,2,3,8]{1,0,2,3} transpose(p), dimensions={2,3,1,0}\n r = f32[3,2,3,8]{1,0,2,3} reverse(t), dimensions={0,1}\n ROOT c = f32[2,3,5,7] convolution(x, r), window={size=3x2 pad=1_1x0_1 lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[2,4,48,48] parameter(0)\n p = f32[4,8,3,3] parameter(1)\n t = f32[3,3,8,4]{1,0,2,3} transpose(p), dimensions={2,3,1,0}\n r = f32[3,3,8,4]{1,0,2,3} reverse(t), dimensions={0,1}\n ROOT c = f32[2,8,96,96] convolution(x, r), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=bf01_01oi->bf01 }",
		/* the firmware's thin products (kernels_matmul_thin.c, on AVX-512):
		 * a forward over 2x2 planes whose GEMM has 16 columns (narrow), and
		 * an input gradient whose folded col2im GEMM is 8 rows against a
		 * 4.7 MB kernel read in place (short) */
		"ENTRY e { x = f32[4,256,2,2] parameter(0)\n k = f32[64,256,3,3] parameter(1)\n ROOT c = f32[4,64,2,2] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[2,512,2,2] parameter(0)\n p = f32[512,256,3,3] parameter(1)\n t = f32[3,3,256,512]{1,0,2,3} transpose(p), dimensions={2,3,1,0}\n r = f32[3,3,256,512]{1,0,2,3} reverse(t), dimensions={0,1}\n ROOT c = f32[2,256,2,2] convolution(x, r), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01oi->bf01 }",
		/* 4x4 positions (the third stage's), forward and input gradient */
		"ENTRY e { x = f32[3,6,4,4] parameter(0)\n k = f32[5,6,3,3] parameter(1)\n ROOT c = f32[3,5,4,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[3,6,4,4] parameter(0)\n k = f32[3,3,4,6] parameter(1)\n r = f32[3,3,4,6] reverse(k), dimensions={0,1}\n ROOT c = f32[3,4,4,4] convolution(x, r), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01oi->bf01 }",
		/* its weight gradient into an HWIO output (a MATMUL per position
		 * writing the output's rows), in one chunk and in three */
		"ENTRY e { x = f32[3,6,2,2] parameter(0)\n d = f32[3,5,2,2] parameter(1)\n ROOT c = f32[3,3,6,5] convolution(x, d), window={size=2x2 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }",
		"ENTRY e { x = f32[64,1000,2,2] parameter(0)\n d = f32[64,5,2,2] parameter(1)\n ROOT c = f32[3,3,1000,5] convolution(x, d), window={size=2x2 pad=1_1x1_1}, dim_labels=fb01_io01->01bf }",
		/* pointwise weight gradient: per-batch MATMULs in place; transposed x */
		"ENTRY e { x = f32[3,16,8,8] parameter(0)\n d = f32[3,5,8,8] parameter(1)\n ROOT c = f32[1,1,16,5] convolution(x, d), window={size=8x8}, dim_labels=fb01_io01->01bf }",
		"ENTRY e { x = f32[16,3,8,8] parameter(0)\n d = f32[3,5,8,8] parameter(1)\n ROOT c = f32[1,1,16,5] convolution(x, d), window={size=8x8}, dim_labels=bf01_io01->01bf }",
		/* an ALU operand transposed against a large result, copied into the
		 * result's order first (alu_input_transposed) */
		"ENTRY e { x = f32[64,2,512] parameter(0)\n y = f32[512,2,64] parameter(1)\n t = f32[512,2,64] transpose(x), dimensions={2,1,0}\n ROOT m = f32[512,2,64] multiply(t, y) }",
		/* integer and pred reductions of a fused row (fwsim_red_fold_i64):
		 * all(x < 0.99), any(x > 0.99), a wrapping s32 sum and an unsigned max */
		"andc { an0 = pred[] parameter(0)\n an1 = pred[] parameter(1)\n ROOT an2 = pred[] and(an0, an1) }\norc { or0 = pred[] parameter(0)\n or1 = pred[] parameter(1)\n ROOT or2 = pred[] or(or0, or1) }\nENTRY e { x = f32[4,5,200] parameter(0)\n t = pred[] constant(true)\n f = pred[] constant(false)\n h = f32[] constant(0.99)\n hb = f32[4,5,200] broadcast(h), dimensions={}\n c = pred[4,5,200] compare(x, hb), direction=LT\n ra = pred[4,5] reduce(c, t), dimensions={2}, to_apply=andc\n g = f32[] constant(0.99)\n gb = f32[4,5,200] broadcast(g), dimensions={}\n c2 = pred[4,5,200] compare(x, gb), direction=GT\n ro = pred[4,5] reduce(c2, f), dimensions={2}, to_apply=orc\n ROOT r = (pred[4,5], pred[4,5]) tuple(ra, ro) }",
		"sumi { si0 = s32[] parameter(0)\n si1 = s32[] parameter(1)\n ROOT si2 = s32[] add(si0, si1) }\nmaxu { mu0 = u32[] parameter(0)\n mu1 = u32[] parameter(1)\n ROOT mu2 = u32[] maximum(mu0, mu1) }\nENTRY e { x = s32[6,70] parameter(0)\n k = s32[] constant(3)\n kb = s32[6,70] broadcast(k), dimensions={}\n m = s32[6,70] multiply(x, kb)\n z = s32[] constant(0)\n rs = s32[6] reduce(m, z), dimensions={1}, to_apply=sumi\n u = u32[6,70] bitcast-convert(m)\n uz = u32[] constant(0)\n ru = u32[6] reduce(u, uz), dimensions={1}, to_apply=maxu\n ROOT r = (s32[6], u32[6]) tuple(rs, ru) }",
		/* pointwise convolutions of small images, the batch folded into one
		 * GEMM (ncc_lower_conv_dense_folded): forward (into scratch), strided,
		 * the input gradient's form (01oi kernel), the weight gradient */
		"ENTRY e { x = f32[3,6,4,4] parameter(0)\n k = f32[5,6,1,1] parameter(1)\n c = f32[3,5,4,4] convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01\n ROOT r = f32[3,5,4,4] negate(c) }",
		"ENTRY e { x = f32[3,6,7,7] parameter(0)\n k = f32[5,6,1,1] parameter(1)\n ROOT c = f32[3,5,4,4] convolution(x, k), window={size=1x1 stride=2x2}, dim_labels=bf01_oi01->bf01 }",
		"ENTRY e { x = f32[3,6,4,4] parameter(0)\n k = f32[1,1,5,6] parameter(1)\n r = f32[1,1,5,6] reverse(k), dimensions={0,1}\n ROOT c = f32[3,5,4,4] convolution(x, r), window={size=1x1}, dim_labels=bf01_01oi->bf01 }",
		"ENTRY e { x = f32[3,6,4,4] parameter(0)\n d = f32[3,5,4,4] parameter(1)\n ROOT c = f32[1,1,6,5] convolution(x, d), window={size=4x4}, dim_labels=fb01_io01->01bf }",
		/* convolutions returned through a transpose (PyTorch/XLA's weight
		 * gradients), computed in the output tensor (bind_outputs): the
		 * per-image, few-position and forward paths; a reader of the
		 * transpose (the SGD update); the convolution also returned
		 * itself (bound directly, the transpose copied); two transposes
		 * of one convolution (the first binds it) */
		"ENTRY e { x = f32[3,5,7,6] parameter(0)\n d = f32[3,4,7,6] parameter(1)\n w = f32[4,5,3,3] parameter(2)\n c = f32[3,3,5,4] convolution(x, d), window={size=7x6 pad=1_1x1_1}, dim_labels=fb01_io01->01bf\n t = f32[4,5,3,3] transpose(c), dimensions={3,2,0,1}\n u = f32[4,5,3,3] subtract(w, t)\n ROOT r = (f32[4,5,3,3], f32[4,5,3,3]) tuple(t, u) }",
		"ENTRY e { x = f32[2,6,2,2] parameter(0)\n d = f32[2,5,2,2] parameter(1)\n c = f32[3,3,6,5] convolution(x, d), window={size=2x2 pad=1_1x1_1}, dim_labels=fb01_io01->01bf\n t = f32[5,6,3,3] transpose(c), dimensions={3,2,0,1}\n ROOT r = (f32[5,6,3,3], f32[3,3,6,5]) tuple(t, c) }",
		"ENTRY e { x = f32[2,3,6,6] parameter(0)\n k = f32[4,3,3,3] parameter(1)\n c = f32[2,4,6,6] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n t = f32[6,4,2,6] transpose(c), dimensions={3,1,0,2}\n t2 = f32[2,6,6,4] transpose(c), dimensions={0,2,3,1}\n ROOT r = (f32[6,4,2,6], f32[2,6,6,4]) tuple(t, t2) }",
		"ENTRY e { x = f32[2,4,4,3] parameter(0)\n s = f32[3] parameter(1)\n o = f32[3] parameter(2)\n ROOT b = (f32[2,4,4,3], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=3 }",
		"ENTRY e { x = f16[4,3] parameter(0)\n s = f16[3] parameter(1)\n o = f16[3] parameter(2)\n ROOT b = (f16[4,3], f16[3], f16[3]) batch-norm-training(x, s, o), epsilon=0.01, feature_index=1 }",
		"ENTRY e { x = bf16[4,3] parameter(0)\n s = bf16[3] parameter(1)\n o = bf16[3] parameter(2)\n m = bf16[3] parameter(3)\n v = bf16[3] parameter(4)\n a = bf16[3] abs(v)\n ROOT b = bf16[4,3] batch-norm-inference(x, s, o, m, a), epsilon=0.01, feature_index=1 }",
		"ENTRY e { x = f32[4,16] parameter(0)\n ROOT g = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronGelu\" }",
		"ENTRY e { x = f32[4,16] parameter(0)\n ROOT g = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronGeluBackward\" }",
		"ENTRY e { x = f32[4,16] parameter(0)\n a = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronSoftmax\"\n b = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronSoftmax\", backend_config=\"0\"\n d = f32[4,16] parameter(1)\n c = f32[4,16] custom-call(a, d), custom_call_target=\"AwsNeuronSoftmaxBackward\"\n ROOT t = (f32[4,16], f32[4,16], f32[4,16]) tuple(a, b, c) }",
		"ENTRY e { x = f32[4,16] parameter(0)\n a = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronSilu\"\n b = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronErf\"\n c = f32[4,16] custom-call(x), custom_call_target=\"AwsNeuronGeluApprxTanh\"\n ROOT t = (f32[4,16], f32[4,16], f32[4,16]) tuple(a, b, c) }",
		"ENTRY e { s = u64[2] parameter(0)\n ROOT r = (u64[2], u32[3,5]) rng-bit-generator(s), algorithm=rng_default }",
		"ENTRY e { s = u64[2] parameter(0)\n ROOT r = (u64[2], u64[7]) rng-bit-generator(s), algorithm=rng_philox }",
		"ENTRY e { t = f32[10,3] parameter(0)\n i = s32[4] parameter(1)\n ROOT g = f32[4,3] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3} }",
		"%s ENTRY e { t = f32[10,3] parameter(0)\n i = s64[4,1] parameter(1)\n u = f32[4,3] parameter(2)\n ROOT s = f32[10,3] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add }",
	};
	int failed = 0;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		int k = snprintf(buf, sizeof(buf), "HloModule m\n%s%s", add_c, max_c);
		if (strncmp(bodies[i], "%s ", 3) == 0)
			snprintf(buf + k, sizeof(buf) - (size_t)k, "%s\n", bodies[i] + 3);
		else
			snprintf(buf + k, sizeof(buf) - (size_t)k, "%s\n", bodies[i]);
		ncc_module_t *m = NULL;
		ncc_error_t err = { 0 };
		ck_assert_msg(ncc_parse_hlo(buf, strlen(buf), "<op>", &m, &err) == NCC_OK, "case %zu: %s", i,
			      err.msg);
		ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "case %zu: %s", i, err.msg);
		for (int opt = 0; opt <= 1; opt++) {
			char msg[1024];
			int bad = compare_with_interp(m, opt, 3 + i, msg, sizeof(msg));
			if (bad) {
				fprintf(stderr, "op case %zu -O%d: %s\n", i, opt, msg);
				failed++;
			}
		}
		ncc_module_free(m);
	}
	ck_assert_msg(failed == 0, "%d op cases differ from the interpreter", failed);
}
END_TEST

/* A corpus module that runs here matches the reference interpreter at -O0, with
 * the multi-engine schedule (-O1) and after the passes (-O2). */
static void corpus_vs_interp(const char *file)
{
	int failed = 0;
	char path[1024], msg[1024];
	snprintf(path, sizeof(path), "%s/%s", NCC_HLO_CORPUS, file);
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_parse_hlo_file(path, &m, &err) == NCC_OK, "%s", err.msg);
	for (int opt = 0; opt <= 1; opt++) {
		int bad = compare_with_interp(m, opt, 11, msg, sizeof(msg));
		if (bad) {
			fprintf(stderr, "%s -O%d: %d outputs differ: %s\n", file, opt, bad, msg);
			failed++;
		}
	}
	/* -O2: the passes (fusion into FUSED instructions) and the multi-engine
	 * schedule together */
	ncc_compile_options_t po;
	ncc_compile_options_init(&po);
	po.opt_level = 2;
	ck_assert_msg(ncc_run_passes(m, &po, &err) == NCC_OK, "%s: %s", file, err.msg);
	int bad = compare_with_interp(m, 2, 11, msg, sizeof(msg));
	if (bad) {
		fprintf(stderr, "%s -O2: %d outputs differ: %s\n", file, bad, msg);
		failed++;
	}
	ncc_module_free(m);
	ck_assert_msg(failed == 0, "%s: %d runs differ from the interpreter", file, failed);
}

START_TEST(test_corpus_vs_interp)
{
	corpus_vs_interp(k_run_corpus[g_small[_i]]);
}
END_TEST

START_TEST(test_corpus_big_vs_interp)
{
	corpus_vs_interp(k_run_corpus[g_big[_i]]);
}
END_TEST

static Suite *lower_suite(void)
{
	Suite *s = suite_create("lower");
	TCase *tc = tcase_create("ops");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_add_mul);
	tcase_add_test(tc, test_unary);
	tcase_add_test(tc, test_views);
	tcase_add_test(tc, test_dot);
	tcase_add_test(tc, test_reduce);
	tcase_add_test(tc, test_unsupported_f64);
	tcase_add_test(tc, test_conv);
	tcase_add_test(tc, test_conv_stride1_copies_per_kernel_column);
	tcase_add_test(tc, test_conv_weight_gradient_per_batch_element);
	tcase_add_test(tc, test_conv_transposed_output_written_in_place);
	tcase_add_test(tc, test_conv_transposed_scratch_read_in_order);
	tcase_add_test(tc, test_conv_pointwise_small_images_one_gemm);
	tcase_add_test(tc, test_alu_transposed_operand_copied_first);
	tcase_add_test(tc, test_conv_strided_input_gradient_col2im);
	tcase_add_test(tc, test_conv_input_gradient_reads_kernel_in_place);
	tcase_add_test(tc, test_conv_strided_one_deep_matmul);
	tcase_add_test(tc, test_conv_dense_large_planes_one_conv);
	tcase_add_test(tc, test_conv_dense_wgrad_one_conv);
	tcase_add_test(tc, test_conv_dense_small_planes_one_conv);
	tcase_add_test(tc, test_conv_dense_bounds_agree_with_the_firmware);
	tcase_add_test(tc, test_conv_few_positions_one_matmul);
	tcase_add_test(tc, test_conv_im2col_zeroes_only_the_padding);
	tcase_add_test(tc, test_conv_pointwise_weight_gradient_in_place);
	tcase_add_test(tc, test_conv_grouped_is_one_conv_insn);
	tcase_add_test(tc, test_errors_more);
	tcase_add_test(tc, test_gather_scatter_axes);
	tcase_add_test(tc, test_select_and_scatter);
	tcase_add_test(tc, test_select_and_scatter_one_selscat);
	tcase_add_test(tc, test_binary_f32);
	tcase_add_test(tc, test_unary_all);
	tcase_add_test(tc, test_int_ops);
	tcase_add_test(tc, test_small_int_types);
	tcase_add_test(tc, test_compare_select_clamp);
	tcase_add_test(tc, test_convert);
	tcase_add_test(tc, test_rank0_and_size1);
	tcase_add_test(tc, test_reduce_kinds);
	tcase_add_test(tc, test_large_reduction);
	tcase_add_test(tc, test_reduce_window);
	tcase_add_test(tc, test_data_movement);
	tcase_add_test(tc, test_dot_batch);
	tcase_add_test(tc, test_dynamic_slices);
	tcase_add_test(tc, test_gather_scatter);
	tcase_add_test(tc, test_iota_rng);
	tcase_add_test(tc, test_batch_norm);
	tcase_add_test(tc, test_control_flow);
	tcase_add_test(tc, test_custom_calls_collectives);
	tcase_add_test(tc, test_neff_tables);
	tcase_add_test(tc, test_memory_plan_dump);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	TCase *tcc = tcase_create("corpus");
	tcase_set_timeout(tcc, 600);
	tcase_add_loop_test(tcc, test_corpus_runs, 0, g_nsmall);
	tcase_add_test(tcc, test_corpus_mobilenet_compiles);
	tcase_add_test(tcc, test_corpus_supported);
	tcase_add_loop_test(tcc, test_corpus_vs_interp, 0, g_nsmall);
	tcase_add_test(tc, test_ops_vs_interp);
	suite_add_tcase(s, tcc);
	/* the big modules: the 'full' suite (corpus_split.h) */
	TCase *full = tcase_create("corpus-big");
	tcase_set_tags(full, NCC_TEST_TAG_FULL);
	tcase_set_timeout(full, 1800);
	tcase_add_loop_test(full, test_corpus_big_runs, 0, g_nbig);
	tcase_add_loop_test(full, test_corpus_big_vs_interp, 0, g_nbig);
	suite_add_tcase(s, full);
	return s;
}

int main(void)
{
	ncc_test_corpus_split(NCC_HLO_CORPUS, k_run_corpus, N_RUN_CORPUS, g_small, &g_nsmall, g_big,
			      &g_nbig);
	SRunner *sr = srunner_create(lower_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
