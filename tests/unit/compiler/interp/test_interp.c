/* Check tests of the ncc reference interpreter: hand-computed results per op, integer edge cases, and every corpus module. */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlo/hlo_parser.h"
#include "interp/interp.h"
#include "neuronsim/half.h"
#include "hlo/verify.h"
#include "corpus_split.h"
#include "ncc_check_parse.h"

/* ------------------------------------------------------------ helpers */

/* An array value of type t filled from vals (converted like convert). */
static ncc_value_t *arr(ncc_etype_t t, int32_t rank, const int64_t *dims, const double *vals)
{
	ncc_shape_t s = ncc_shape_array(t, rank, dims);
	ncc_value_t *v = NULL;
	ck_assert_int_eq(ncc_value_alloc(&s, &v), NCC_OK);
	int64_t n = ncc_value_elements(v);
	for (int64_t i = 0; vals && i < n; i++)
		ncc_value_set_f64(v, i, vals[i]);
	return v;
}

static ncc_value_t *arr_i(ncc_etype_t t, int32_t rank, const int64_t *dims, const int64_t *vals)
{
	ncc_shape_t s = ncc_shape_array(t, rank, dims);
	ncc_value_t *v = NULL;
	ck_assert_int_eq(ncc_value_alloc(&s, &v), NCC_OK);
	int64_t n = ncc_value_elements(v);
	for (int64_t i = 0; vals && i < n; i++)
		ncc_value_set_i64(v, i, vals[i]);
	return v;
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})
#define I(...) ((const int64_t[]){__VA_ARGS__})

/* Parses text, runs its entry on args (freed here) and returns the result. */
static ncc_value_t *run(const char *text, int32_t nargs, ncc_value_t **args)
{
	ncc_module_t *m = parse(text);
	ncc_value_t *r = NULL;
	ncc_error_t err = {0};
	ncc_status_t st = ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &r, &err);
	ck_assert_msg(st == NCC_OK, "interp failed (%s): %s", ncc_status_name(st), err.msg);
	for (int32_t k = 0; k < nargs; k++)
		ncc_value_free(args[k]);
	ncc_module_free(m);
	return r;
}

/* Expects a run to fail with st; returns nothing, checks the message names `needle`. */
static void run_fails(const char *text, int32_t nargs, ncc_value_t **args, ncc_status_t want,
		      const char *needle)
{
	ncc_module_t *m = parse(text);
	ncc_value_t *r = (ncc_value_t *)0x1;
	ncc_error_t err = {0};
	ncc_status_t st = ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &r, &err);
	ck_assert_int_eq(st, want);
	ck_assert_ptr_null(r);
	if (needle)
		ck_assert_msg(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
	for (int32_t k = 0; k < nargs; k++)
		ncc_value_free(args[k]);
	ncc_module_free(m);
}

static void expect_f(const ncc_value_t *v, const double *want, int64_t n, double tol)
{
	ck_assert_int_eq(ncc_value_elements(v), n);
	for (int64_t i = 0; i < n; i++) {
		double got = ncc_value_get_f64(v, i);
		if (isnan(want[i]))
			ck_assert_msg(isnan(got), "element %" PRId64 ": expected NaN, got %.9g", i, got);
		else if (isinf(want[i]))
			ck_assert_msg(got == want[i], "element %" PRId64 ": expected %g, got %.9g", i, want[i], got);
		else
			ck_assert_msg(fabs(got - want[i]) <= tol * (1 + fabs(want[i])),
				      "element %" PRId64 ": expected %.9g, got %.9g", i, want[i], got);
	}
}

static void expect_i(const ncc_value_t *v, const int64_t *want, int64_t n)
{
	ck_assert_int_eq(ncc_value_elements(v), n);
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(ncc_value_get_i64(v, i) == want[i], "element %" PRId64 ": expected %" PRId64
			      ", got %" PRId64, i, want[i], ncc_value_get_i64(v, i));
}

static void expect_dims(const ncc_value_t *v, ncc_etype_t t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(v->shape.etype, t);
	ck_assert_int_eq(v->shape.rank, rank);
	for (int32_t d = 0; d < rank; d++)
		ck_assert_int_eq(v->shape.dims[d], dims[d]);
}

/* one binary op on two vectors of type ty */
static ncc_value_t *binop(const char *op, const char *ty, ncc_etype_t t, int64_t n,
			  const double *a, const double *b)
{
	char text[512];
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  a = %s[%" PRId64 "] parameter(0)\n  b = %s[%" PRId64 "] parameter(1)\n"
		 "  ROOT r = %s[%" PRId64 "] %s(a, b)\n}\n", ty, n, ty, n, ty, n, op);
	ncc_value_t *args[2] = {arr(t, 1, D(n), a), arr(t, 1, D(n), b)};
	return run(text, 2, args);
}

static ncc_value_t *binop_i(const char *op, const char *ty, ncc_etype_t t, int64_t n,
			    const int64_t *a, const int64_t *b)
{
	char text[512];
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  a = %s[%" PRId64 "] parameter(0)\n  b = %s[%" PRId64 "] parameter(1)\n"
		 "  ROOT r = %s[%" PRId64 "] %s(a, b)\n}\n", ty, n, ty, n, ty, n, op);
	ncc_value_t *args[2] = {arr_i(t, 1, D(n), a), arr_i(t, 1, D(n), b)};
	return run(text, 2, args);
}

static ncc_value_t *unop(const char *op, const char *ty, const char *rty, ncc_etype_t t, int64_t n,
			 const double *a)
{
	char text[512];
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  a = %s[%" PRId64 "] parameter(0)\n  ROOT r = %s[%" PRId64 "] %s(a)\n}\n",
		 ty, n, rty, n, op);
	ncc_value_t *args[1] = {arr(t, 1, D(n), a)};
	return run(text, 1, args);
}

/* ------------------------------------------------------------ values */

START_TEST(test_value_alloc_clone_free)
{
	ncc_value_t *v = arr(NCC_F32, 2, D(2, 3), F(1, 2, 3, 4, 5, 6));
	ck_assert_int_eq(v->nbytes, 24);
	ncc_value_t *c = NULL;
	ck_assert_int_eq(ncc_value_clone(v, &c), NCC_OK);
	ck_assert_int_eq(memcmp(c->data, v->data, 24), 0);
	ck_assert_ptr_ne(c->data, v->data);
	ncc_value_free(v);
	ncc_value_free(c);
	ncc_value_free(NULL);
	/* rank 0 and zero-size arrays */
	ncc_value_t *s = arr(NCC_BF16, 0, NULL, F(1.5));
	ck_assert_int_eq(s->nbytes, 2);
	ck_assert_int_eq(((uint16_t *)s->data)[0], 0x3fc0);
	ncc_value_free(s);
	ncc_value_t *z = arr(NCC_F32, 2, D(0, 4), NULL);
	ck_assert_int_eq(z->nbytes, 0);
	ck_assert_ptr_null(z->data);
	ncc_value_free(z);
	/* pred stored as one byte 0/1 */
	ncc_value_t *p = arr(NCC_PRED, 1, D(3), F(0, 2, -1));
	ck_assert_int_eq(((uint8_t *)p->data)[0], 0);
	ck_assert_int_eq(((uint8_t *)p->data)[1], 1);
	ck_assert_int_eq(((uint8_t *)p->data)[2], 1);
	ncc_value_free(p);
	ncc_shape_t tok = ncc_shape_scalar(NCC_C64);
	ncc_value_t *bad = (ncc_value_t *)0x1;
	ck_assert_int_eq(ncc_value_alloc(&tok, &bad), NCC_OK); /* c64 has storage: allocatable */
	ncc_value_free(bad);
	ncc_shape_t inv = ncc_shape_scalar(NCC_OPAQUE);
	ck_assert_int_eq(ncc_value_alloc(&inv, &bad), NCC_ERR_INVALID);
	ck_assert_ptr_null(bad);
}
END_TEST

START_TEST(test_random_fill_is_deterministic_and_in_range)
{
	ncc_value_t *a = arr(NCC_F32, 1, D(1000), NULL), *b = arr(NCC_F32, 1, D(1000), NULL);
	ncc_value_fill_random(a, 7);
	ncc_value_fill_random(b, 7);
	ck_assert_int_eq(memcmp(a->data, b->data, a->nbytes), 0);
	ncc_value_fill_random(b, 8);
	ck_assert_int_ne(memcmp(a->data, b->data, a->nbytes), 0);
	double mn = 2, mx = -2;
	for (int i = 0; i < 1000; i++) {
		double x = ncc_value_get_f64(a, i);
		mn = fmin(mn, x);
		mx = fmax(mx, x);
	}
	ck_assert(mn >= -1.0 && mx < 1.0 && mn < -0.9 && mx > 0.9);
	ncc_value_t *h = arr(NCC_BF16, 1, D(4096), NULL);
	ncc_value_fill_random(h, 3);
	for (int i = 0; i < 4096; i++) {
		double x = ncc_value_get_f64(h, i);
		ck_assert(x >= -1.0 && x < 1.0);
	}
	ncc_value_t *n = arr(NCC_S64, 1, D(1000), NULL), *p = arr(NCC_PRED, 1, D(1000), NULL);
	ncc_value_fill_random(n, 1);
	ncc_value_fill_random(p, 1);
	int ones = 0;
	for (int i = 0; i < 1000; i++) {
		int64_t x = ncc_value_get_i64(n, i);
		ck_assert(x >= 0 && x <= NCC_RANDOM_INT_MAX);
		ck_assert(((uint8_t *)p->data)[i] <= 1);
		ones += ((uint8_t *)p->data)[i];
	}
	ck_assert(ones > 400 && ones < 600);
	ncc_value_t *q = arr(NCC_F32, 1, D(1000), NULL), *ii = arr(NCC_S32, 1, D(1000), NULL);
	ncc_value_fill_random_range(q, 4, 0, 1);
	ncc_value_fill_random_range(ii, 4, -3, 3);
	bool lo_hit = false, hi_hit = false;
	for (int i = 0; i < 1000; i++) {
		double x = ncc_value_get_f64(q, i);
		ck_assert(x >= 0 && x < 1);
		int64_t k = ncc_value_get_i64(ii, i);
		ck_assert(k >= -3 && k <= 3);
		lo_hit |= k == -3;
		hi_hit |= k == 3;
	}
	ck_assert(lo_hit && hi_hit);
	ncc_value_free(q);
	ncc_value_free(ii);
	ncc_value_free(a);
	ncc_value_free(b);
	ncc_value_free(h);
	ncc_value_free(n);
	ncc_value_free(p);
}
END_TEST

START_TEST(test_compare_tolerances_and_messages)
{
	ncc_value_t *e = arr(NCC_F32, 1, D(4), F(1, 2, NAN, INFINITY));
	ncc_value_t *a = arr(NCC_F32, 1, D(4), F(1.00005, 2, NAN, INFINITY));
	ncc_compare_result_t r;
	ck_assert(ncc_value_compare(e, a, NULL, &r));
	ck_assert_int_eq(r.mismatches, 0);
	ck_assert_int_eq(r.first_index, -1);
	ncc_value_set_f64(a, 1, 2.01);
	ck_assert(!ncc_value_compare(e, a, NULL, &r));
	ck_assert_int_eq(r.first_index, 1);
	ck_assert_int_eq(r.mismatches, 1);
	ck_assert_msg(strstr(r.msg, "element 1 [1]"), "%s", r.msg);
	ncc_tolerance_t loose = {0.1, 0};
	ck_assert(ncc_value_compare(e, a, &loose, &r));
	ncc_value_set_f64(a, 2, 0);
	ck_assert(!ncc_value_compare(e, a, &loose, &r));
	ck_assert_int_eq(r.first_index, 2);
	ncc_value_free(a);
	/* integers are exact */
	ncc_value_t *ie = arr_i(NCC_S32, 2, D(2, 2), I(1, 2, 3, 4)), *ia = arr_i(NCC_S32, 2, D(2, 2), I(1, 2, 3, 5));
	ck_assert(!ncc_value_compare(ie, ia, &loose, &r));
	ck_assert_int_eq(r.first_index, 3);
	ck_assert_msg(strstr(r.msg, "[1,1]") && strstr(r.msg, "expected 4, got 5"), "%s", r.msg);
	/* shapes must agree */
	ncc_value_t *other = arr(NCC_F32, 1, D(3), F(1, 2, 3));
	ck_assert(!ncc_value_compare(e, other, NULL, &r));
	ck_assert_msg(strstr(r.msg, "shape"), "%s", r.msg);
	/* tolerance table */
	ck_assert(ncc_tolerance_for(NCC_BF16).rtol > ncc_tolerance_for(NCC_F32).rtol);
	ck_assert(ncc_tolerance_for(NCC_F16).rtol > ncc_tolerance_for(NCC_F32).rtol);
	ck_assert(ncc_tolerance_for(NCC_S32).rtol == 0 && ncc_tolerance_for(NCC_S32).atol == 0);
	ncc_value_free(e);
	ncc_value_free(ie);
	ncc_value_free(ia);
	ncc_value_free(other);
}
END_TEST

START_TEST(test_compare_tuples)
{
	ncc_value_t *x[2] = {arr(NCC_F32, 1, D(2), F(1, 2)), arr_i(NCC_S64, 0, NULL, I(5))};
	ncc_value_t *y[2] = {arr(NCC_F32, 1, D(2), F(1, 2)), arr_i(NCC_S64, 0, NULL, I(6))};
	ncc_value_t *tx, *ty;
	ck_assert_int_eq(ncc_value_tuple(x, 2, &tx), NCC_OK);
	ck_assert_int_eq(ncc_value_tuple(y, 2, &ty), NCC_OK);
	ncc_compare_result_t r;
	ck_assert(!ncc_value_compare(tx, ty, NULL, &r));
	ck_assert_int_eq(r.first_leaf, 1);
	ck_assert_int_eq(r.first_index, 0);
	ncc_value_free(tx);
	ncc_value_free(ty);
}
END_TEST

START_TEST(test_layout_conversion)
{
	/* f32[2,3]{0,1}: column-major; physical order a00 a10 a01 a11 a02 a12 */
	ncc_value_t *v = arr(NCC_F32, 2, D(2, 3), F(0, 1, 2, 10, 11, 12));
	ncc_shape_t l = ncc_shape_array(NCC_F32, 2, D(2, 3));
	l.has_layout = true;
	l.minor_to_major[0] = 0;
	l.minor_to_major[1] = 1;
	float phys[6];
	ck_assert_int_eq(ncc_value_to_physical(v, &l, phys), NCC_OK);
	const float want[6] = {0, 10, 1, 11, 2, 12};
	for (int i = 0; i < 6; i++)
		ck_assert(phys[i] == want[i]);
	ncc_value_t *w = arr(NCC_F32, 2, D(2, 3), NULL);
	ck_assert_int_eq(ncc_value_from_physical(w, &l, phys), NCC_OK);
	ck_assert_int_eq(memcmp(v->data, w->data, 24), 0);
	l.minor_to_major[1] = 0; /* not a permutation */
	ck_assert_int_eq(ncc_value_to_physical(v, &l, phys), NCC_ERR_INVALID);
	ncc_shape_t other = ncc_shape_array(NCC_F32, 2, D(3, 2));
	ck_assert_int_eq(ncc_value_to_physical(v, &other, phys), NCC_ERR_INVALID);
	ncc_value_free(v);
	ncc_value_free(w);
}
END_TEST

/* ------------------------------------------------------------ elementwise */

START_TEST(test_float_binary_ops)
{
	ncc_value_t *r = binop("add", "f32", NCC_F32, 3, F(1, -2.5, 1e30), F(2, 0.5, 1e30));
	expect_f(r, F(3, -2, 2e30), 3, 1e-7);
	ncc_value_free(r);
	r = binop("divide", "f32", NCC_F32, 3, F(1, -1, 0), F(4, 0, 0));
	expect_f(r, F(0.25, -INFINITY, NAN), 3, 0);
	ncc_value_free(r);
	r = binop("maximum", "f32", NCC_F32, 3, F(1, NAN, -0.0), F(2, 1, 0));
	expect_f(r, F(2, NAN, 0), 3, 0);
	ck_assert(!signbit(ncc_value_get_f64(r, 2)));
	ncc_value_free(r);
	r = binop("minimum", "f32", NCC_F32, 3, F(1, 1, -0.0), F(2, NAN, 0));
	expect_f(r, F(1, NAN, 0), 3, 0);
	ck_assert(signbit(ncc_value_get_f64(r, 2)));
	ncc_value_free(r);
	/* a NaN result is the operand's own (x's when it is one, else y's):
	 * a negative NaN and one with a payload keep their bits, as on the
	 * device and XLA:CPU */
	const char *mm[2] = { "maximum", "minimum" };
	for (int k = 0; k < 2; k++) {
		float nneg = ns_bits_f32(0xffc00000u), npay = ns_bits_f32(0x7fc01234u);
		r = binop(mm[k], "f32", NCC_F32, 3, F(nneg, 1, nneg), F(2, npay, npay));
		const float *rv = r->data;
		ck_assert_uint_eq(ns_f32_bits(rv[0]), 0xffc00000u);
		ck_assert_uint_eq(ns_f32_bits(rv[1]), 0x7fc01234u);
		ck_assert_uint_eq(ns_f32_bits(rv[2]), 0xffc00000u);
		ncc_value_free(r);
	}
	r = binop("remainder", "f32", NCC_F32, 3, F(5.5, -5.5, 5), F(2, 2, -3));
	expect_f(r, F(1.5, -1.5, 2), 3, 0);
	ncc_value_free(r);
	r = binop("power", "f32", NCC_F32, 3, F(2, 9, 0), F(10, 0.5, 0));
	expect_f(r, F(1024, 3, 1), 3, 1e-7);
	ncc_value_free(r);
	r = binop("subtract", "bf16", NCC_BF16, 2, F(1, 3), F(0.5, 1));
	expect_f(r, F(0.5, 2), 2, 0);
	ncc_value_free(r);
	r = binop("atan2", "f32", NCC_F32, 2, F(1, -1), F(1, -1));
	expect_f(r, F(M_PI / 4, -3 * M_PI / 4), 2, 1e-7);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_bf16_and_f16_round_to_nearest_even)
{
	/* 1 + 2^-8 is a tie between 1 and 1 + 2^-7 in bf16: rounds to even (1) */
	ncc_value_t *r = binop("add", "bf16", NCC_BF16, 3, F(1, 1, 256), F(0x1p-8, 0x3p-8, 1));
	expect_f(r, F(1, 1 + 0x1p-6, 256), 3, 0);
	ncc_value_free(r);
	/* f16: 2048 + 1 is a tie between 2048 and 2050 -> 2048; 1 + 2^-11 -> 1 */
	r = binop("add", "f16", NCC_F16, 3, F(2048, 1, 65504), F(1, 0x1p-11, 65504));
	expect_f(r, F(2048, 1, INFINITY), 3, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_float_unary_ops)
{
	ncc_value_t *r = unop("exponential", "f32", "f32", NCC_F32, 3, F(0, 1, -INFINITY));
	expect_f(r, F(1, M_E, 0), 3, 1e-7);
	ncc_value_free(r);
	r = unop("log", "f32", "f32", NCC_F32, 3, F(1, 0, -1));
	expect_f(r, F(0, -INFINITY, NAN), 3, 0);
	ncc_value_free(r);
	r = unop("round-nearest-even", "f32", "f32", NCC_F32, 4, F(0.5, 1.5, 2.5, -2.5));
	expect_f(r, F(0, 2, 2, -2), 4, 0);
	ncc_value_free(r);
	r = unop("round-nearest-afz", "f32", "f32", NCC_F32, 4, F(0.5, 1.5, 2.5, -2.5));
	expect_f(r, F(1, 2, 3, -3), 4, 0);
	ncc_value_free(r);
	r = unop("sign", "f32", "f32", NCC_F32, 4, F(-3, 0, 2, NAN));
	expect_f(r, F(-1, 0, 1, NAN), 4, 0);
	ncc_value_free(r);
	r = unop("rsqrt", "f32", "f32", NCC_F32, 2, F(4, 0));
	expect_f(r, F(0.5, INFINITY), 2, 1e-7);
	ncc_value_free(r);
	r = unop("logistic", "f32", "f32", NCC_F32, 2, F(0, 100));
	expect_f(r, F(0.5, 1), 2, 1e-7);
	ncc_value_free(r);
	r = unop("tanh", "f32", "f32", NCC_F32, 2, F(0, 20));
	expect_f(r, F(0, 1), 2, 1e-7);
	ncc_value_free(r);
	r = unop("floor", "f32", "f32", NCC_F32, 2, F(-1.5, 1.5));
	expect_f(r, F(-2, 1), 2, 0);
	ncc_value_free(r);
	r = unop("ceil", "f32", "f32", NCC_F32, 2, F(-1.5, 1.5));
	expect_f(r, F(-1, 2), 2, 0);
	ncc_value_free(r);
	r = unop("abs", "f32", "f32", NCC_F32, 2, F(-1.5, 1.5));
	expect_f(r, F(1.5, 1.5), 2, 0);
	ncc_value_free(r);
	r = unop("negate", "f32", "f32", NCC_F32, 1, F(1.5));
	expect_f(r, F(-1.5), 1, 0);
	ncc_value_free(r);
	r = unop("sqrt", "f32", "f32", NCC_F32, 2, F(9, -1));
	expect_f(r, F(3, NAN), 2, 0);
	ncc_value_free(r);
	r = unop("erf", "f32", "f32", NCC_F32, 2, F(0, 1));
	expect_f(r, F(0, 0.8427007929497149), 2, 1e-7);
	ncc_value_free(r);
	r = unop("cosine", "f32", "f32", NCC_F32, 1, F(0));
	expect_f(r, F(1), 1, 0);
	ncc_value_free(r);
	r = unop("sine", "f32", "f32", NCC_F32, 1, F(M_PI / 2));
	expect_f(r, F(1), 1, 1e-7);
	ncc_value_free(r);
	r = unop("log-plus-one", "f32", "f32", NCC_F32, 1, F(1e-10));
	expect_f(r, F(1e-10), 1, 1e-7);
	ncc_value_free(r);
	r = unop("is-finite", "f32", "pred", NCC_F32, 4, F(1, INFINITY, NAN, -INFINITY));
	expect_i(r, I(1, 0, 0, 0), 4);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_integer_division_edge_cases)
{
	ncc_value_t *r = binop_i("divide", "s32", NCC_S32, 5, I(7, -7, 5, INT32_MIN, 0),
				 I(2, 2, 0, -1, 0));
	expect_i(r, I(3, -3, -1, INT32_MIN, -1), 5);
	ncc_value_free(r);
	r = binop_i("remainder", "s32", NCC_S32, 5, I(7, -7, 5, INT32_MIN, -3), I(2, 2, 0, -1, 0));
	expect_i(r, I(1, -1, 5, 0, -3), 5);
	ncc_value_free(r);
	r = binop_i("divide", "u32", NCC_U32, 2, I(7, 9), I(0, 2));
	expect_i(r, I(0xffffffff, 4), 2);
	ncc_value_free(r);
	r = binop_i("remainder", "u32", NCC_U32, 1, I(9), I(0));
	expect_i(r, I(9), 1);
	ncc_value_free(r);
	r = binop_i("divide", "s64", NCC_S64, 2, I(INT64_MIN, 1), I(-1, 0));
	expect_i(r, I(INT64_MIN, -1), 2);
	ncc_value_free(r);
	r = binop_i("remainder", "s64", NCC_S64, 1, I(INT64_MIN), I(-1));
	expect_i(r, I(0), 1);
	ncc_value_free(r);
	r = binop_i("divide", "s8", NCC_S8, 2, I(-128, 100), I(-1, 0));
	expect_i(r, I(-128, -1), 2);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_integer_wraparound_and_minmax)
{
	ncc_value_t *r = binop_i("add", "s8", NCC_S8, 2, I(127, -128), I(1, -1));
	expect_i(r, I(-128, 127), 2);
	ncc_value_free(r);
	r = binop_i("multiply", "s32", NCC_S32, 1, I(65536), I(65536));
	expect_i(r, I(0), 1);
	ncc_value_free(r);
	r = binop_i("subtract", "u8", NCC_U8, 1, I(0), I(1));
	expect_i(r, I(255), 1);
	ncc_value_free(r);
	r = binop_i("maximum", "u32", NCC_U32, 1, I(0xffffffff), I(1));
	expect_i(r, I(0xffffffff), 1);
	ncc_value_free(r);
	r = binop_i("maximum", "s32", NCC_S32, 1, I(-1), I(1));
	expect_i(r, I(1), 1);
	ncc_value_free(r);
	r = binop_i("power", "s32", NCC_S32, 4, I(2, 3, 2, -1), I(10, 0, -1, -3));
	expect_i(r, I(1024, 1, 0, -1), 4);
	ncc_value_free(r);
	r = binop_i("and", "u8", NCC_U8, 1, I(0xf0), I(0x3c));
	expect_i(r, I(0x30), 1);
	ncc_value_free(r);
	r = binop_i("xor", "s32", NCC_S32, 1, I(-1), I(5));
	expect_i(r, I(-6), 1);
	ncc_value_free(r);
	r = binop_i("or", "pred", NCC_PRED, 2, I(0, 1), I(0, 0));
	expect_i(r, I(0, 1), 2);
	ncc_value_free(r);
	/* abs/negate of INT_MIN wrap */
	ncc_value_t *args[1] = {arr_i(NCC_S32, 1, D(2), I(INT32_MIN, -5))};
	r = run("HloModule m\nENTRY e {\n  a = s32[2] parameter(0)\n  n = s32[2] negate(a)\n"
		"  b = s32[2] abs(a)\n  ROOT t = (s32[2], s32[2]) tuple(n, b)\n}\n", 1, args);
	expect_i(r->elems[0], I(INT32_MIN, 5), 2);
	expect_i(r->elems[1], I(INT32_MIN, 5), 2);
	ncc_value_free(r);
	ncc_value_t *args2[1] = {arr_i(NCC_U32, 1, D(3), I(0, 1, 0xffffffff))};
	r = run("HloModule m\nENTRY e {\n  a = u32[3] parameter(0)\n  c = u32[3] count-leading-zeros(a)\n"
		"  p = u32[3] popcnt(a)\n  n = u32[3] not(a)\n  ROOT t = (u32[3], u32[3], u32[3]) tuple(c, p, n)\n}\n",
		1, args2);
	expect_i(r->elems[0], I(32, 31, 0), 3);
	expect_i(r->elems[1], I(0, 1, 32), 3);
	expect_i(r->elems[2], I(0xffffffff, 0xfffffffe, 0), 3);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_shifts_with_out_of_range_amounts)
{
	ncc_value_t *r = binop_i("shift-left", "s32", NCC_S32, 4, I(1, 1, 1, 3), I(31, 32, -1, 1));
	expect_i(r, I(INT32_MIN, 0, 0, 6), 4);
	ncc_value_free(r);
	r = binop_i("shift-right-logical", "s32", NCC_S32, 4, I(-1, -1, 8, -8), I(28, 32, 40, -2));
	expect_i(r, I(15, 0, 0, 0), 4);
	ncc_value_free(r);
	r = binop_i("shift-right-arithmetic", "s32", NCC_S32, 4, I(-8, -8, 8, -1), I(1, 33, 33, -1));
	expect_i(r, I(-4, -1, 0, -1), 4);
	ncc_value_free(r);
	r = binop_i("shift-right-logical", "u32", NCC_U32, 2, I(0x80000000, 0x80000000), I(31, 32));
	expect_i(r, I(1, 0), 2);
	ncc_value_free(r);
	r = binop_i("shift-right-arithmetic", "u8", NCC_U8, 2, I(0x80, 0x80), I(1, 9));
	expect_i(r, I(0xc0, 0xff), 2);
	ncc_value_free(r);
	r = binop_i("shift-left", "u64", NCC_U64, 2, I(1, 1), I(63, 64));
	expect_i(r, I(INT64_MIN, 0), 2);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_convert_rules)
{
	/* float -> int: truncate toward zero, saturate, NaN -> 0 */
	ncc_value_t *r = unop("convert", "f32", "s32", NCC_F32, 7, F(2.7, -2.7, 1e10, -1e10, NAN, INFINITY, -0.5));
	expect_i(r, I(2, -2, INT32_MAX, INT32_MIN, 0, INT32_MAX, 0), 7);
	ncc_value_free(r);
	r = unop("convert", "f32", "u8", NCC_F32, 4, F(-3, 300, 255.9, 17.2));
	expect_i(r, I(0, 255, 255, 17), 4);
	ncc_value_free(r);
	r = unop("convert", "f32", "s64", NCC_F32, 2, F(1e30, -1e30));
	expect_i(r, I(INT64_MAX, INT64_MIN), 2);
	ncc_value_free(r);
	/* int -> int wraps */
	ncc_value_t *a1[1] = {arr_i(NCC_S32, 1, D(3), I(300, -1, 128))};
	r = run("HloModule m\nENTRY e {\n  a = s32[3] parameter(0)\n  ROOT r = s8[3] convert(a)\n}\n", 1, a1);
	expect_i(r, I(44, -1, -128), 3);
	ncc_value_free(r);
	ncc_value_t *a2[1] = {arr_i(NCC_S32, 1, D(2), I(-1, 5))};
	r = run("HloModule m\nENTRY e {\n  a = s32[2] parameter(0)\n  ROOT r = u64[2] convert(a)\n}\n", 1, a2);
	ck_assert_uint_eq((uint64_t)ncc_value_get_i64(r, 0), UINT64_MAX);
	ncc_value_free(r);
	/* to pred: != 0; from pred: 0/1 */
	r = unop("convert", "f32", "pred", NCC_F32, 4, F(0, 0.5, -0.0, NAN));
	expect_i(r, I(0, 1, 0, 1), 4);
	ncc_value_free(r);
	ncc_value_t *a3[1] = {arr_i(NCC_PRED, 1, D(2), I(1, 0))};
	r = run("HloModule m\nENTRY e {\n  a = pred[2] parameter(0)\n  ROOT r = f32[2] convert(a)\n}\n", 1, a3);
	expect_f(r, F(1, 0), 2, 0);
	ncc_value_free(r);
	/* f32 -> bf16 rounds to nearest even; u32 -> f32 rounds */
	r = unop("convert", "f32", "bf16", NCC_F32, 3, F(1 + 0x1p-8, 1 + 0x3p-8, 1e39 /* inf in f32 */));
	expect_f(r, F(1, 1 + 0x1p-6, INFINITY), 3, 0);
	ncc_value_free(r);
	ncc_value_t *a4[1] = {arr_i(NCC_U32, 1, D(1), I(0xffffffff))};
	r = run("HloModule m\nENTRY e {\n  a = u32[1] parameter(0)\n  ROOT r = f32[1] convert(a)\n}\n", 1, a4);
	expect_f(r, F(4294967296.0), 1, 0);
	ncc_value_free(r);
	/* bitcast-convert keeps the bits */
	ncc_value_t *a5[1] = {arr(NCC_F32, 1, D(1), F(1.0))};
	r = run("HloModule m\nENTRY e {\n  a = f32[1] parameter(0)\n  ROOT r = u32[1] bitcast-convert(a)\n}\n", 1, a5);
	expect_i(r, I(0x3f800000), 1);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_compare_directions_and_total_order)
{
	ncc_value_t *args[2] = {arr(NCC_F32, 1, D(4), F(1, NAN, -0.0, INFINITY)),
				arr(NCC_F32, 1, D(4), F(2, NAN, 0.0, NAN))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
			     "  lt = pred[4] compare(a, b), direction=LT\n"
			     "  ne = pred[4] compare(a, b), direction=NE\n"
			     "  eq = pred[4] compare(a, b), direction=EQ\n"
			     "  to = pred[4] compare(a, b), direction=LT, type=TOTALORDER\n"
			     "  ROOT t = (pred[4], pred[4], pred[4], pred[4]) tuple(lt, ne, eq, to)\n}\n", 2, args);
	expect_i(r->elems[0], I(1, 0, 0, 0), 4);
	expect_i(r->elems[1], I(1, 1, 0, 1), 4);
	expect_i(r->elems[2], I(0, 0, 1, 0), 4);
	expect_i(r->elems[3], I(1, 0, 1, 1), 4); /* -0 < +0, inf < NaN */
	ncc_value_free(r);
	ncc_value_t *a2[2] = {arr_i(NCC_U32, 1, D(2), I(0xffffffff, 1)), arr_i(NCC_U32, 1, D(2), I(1, 1))};
	r = run("HloModule m\nENTRY e {\n  a = u32[2] parameter(0)\n  b = u32[2] parameter(1)\n"
		"  ROOT g = pred[2] compare(a, b), direction=GT\n}\n", 2, a2);
	expect_i(r, I(1, 0), 2);
	ncc_value_free(r);
	ncc_value_t *a3[2] = {arr_i(NCC_S64, 1, D(2), I(-1, 3)), arr_i(NCC_S64, 1, D(2), I(1, 3))};
	r = run("HloModule m\nENTRY e {\n  a = s64[2] parameter(0)\n  b = s64[2] parameter(1)\n"
		"  ROOT g = pred[2] compare(a, b), direction=GE\n}\n", 2, a3);
	expect_i(r, I(0, 1), 2);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_select_and_clamp)
{
	ncc_value_t *args[3] = {arr_i(NCC_PRED, 1, D(3), I(1, 0, 1)), arr(NCC_F32, 1, D(3), F(1, 2, 3)),
				arr(NCC_F32, 1, D(3), F(-1, -2, -3))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  p = pred[3] parameter(0)\n  a = f32[3] parameter(1)\n"
			     "  b = f32[3] parameter(2)\n  ROOT s = f32[3] select(p, a, b)\n}\n", 3, args);
	expect_f(r, F(1, -2, 3), 3, 0);
	ncc_value_free(r);
	ncc_value_t *a2[1] = {arr(NCC_F32, 1, D(4), F(-5, 0.5, 9, NAN))};
	r = run("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  lo = f32[] constant(0)\n"
		"  hi = f32[] constant(6)\n  ROOT c = f32[4] clamp(lo, x, hi)\n}\n", 1, a2);
	expect_f(r, F(0, 0.5, 6, NAN), 4, 0);
	ncc_value_free(r);
	ncc_value_t *a3[1] = {arr_i(NCC_S32, 1, D(3), I(-5, 3, 9))};
	r = run("HloModule m\nENTRY e {\n  x = s32[3] parameter(0)\n  lo = s32[3] constant({0, 0, 0})\n"
		"  hi = s32[3] constant({6, 6, 6})\n  ROOT c = s32[3] clamp(lo, x, hi)\n}\n", 1, a3);
	expect_i(r, I(0, 3, 6), 3);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_map)
{
	ncc_value_t *args[2] = {arr(NCC_F32, 1, D(3), F(1, 2, 3)), arr(NCC_F32, 1, D(3), F(4, 5, 6))};
	ncc_value_t *r = run("HloModule m\nf {\n  fx = f32[] parameter(0)\n  fy = f32[] parameter(1)\n"
			     "  fm = f32[] multiply(fx, fy)\n  ROOT fa = f32[] add(fm, fx)\n}\n"
			     "ENTRY e {\n  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n"
			     "  ROOT r = f32[3] map(a, b), dimensions={0}, to_apply=f\n}\n", 2, args);
	expect_f(r, F(5, 12, 21), 3, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_rank0_and_size1_elementwise)
{
	ncc_value_t *args[2] = {arr(NCC_F32, 0, NULL, F(1.5)), arr(NCC_F32, 3, D(1, 1, 1), F(2))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[1,1,1] parameter(1)\n"
			     "  s = f32[] multiply(a, a)\n  ab = f32[1,1,1] broadcast(a), dimensions={}\n"
			     "  t = f32[1,1,1] add(ab, b)\n  ROOT o = (f32[], f32[1,1,1]) tuple(s, t)\n}\n", 2, args);
	expect_dims(r->elems[0], NCC_F32, 0, NULL);
	expect_f(r->elems[0], F(2.25), 1, 0);
	expect_dims(r->elems[1], NCC_F32, 3, D(1, 1, 1));
	expect_f(r->elems[1], F(3.5), 1, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_fusion_and_arguments_are_not_modified)
{
	ncc_module_t *m = parse("HloModule m\n"
				"fc {\n  fa = f32[2] parameter(0)\n  fb = f32[2] parameter(1)\n  fm = f32[2] multiply(fa, fb)\n"
				"  ROOT fr = f32[2] add(fm, fa)\n}\n"
				"ENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n"
				"  f = f32[2] fusion(a, b), kind=kLoop, calls=fc\n"
				"  i = s32[] constant(1)\n  nine = f32[] constant(9)\n  u = f32[1] reshape(nine)\n"
				"  d = f32[2] dynamic-update-slice(a, f32[1] u, s32[] i)\n"
				"  ROOT o = (f32[2], f32[2], f32[2]) tuple(f, d, a)\n}\n");
	ncc_value_t *a = arr(NCC_F32, 1, D(2), F(1, 2)), *b = arr(NCC_F32, 1, D(2), F(3, 4));
	const ncc_value_t *args[2] = {a, b};
	ncc_value_t *r = NULL;
	ncc_error_t err = {0};
	ck_assert_int_eq(ncc_interp_run(m, args, 2, NULL, &r, &err), NCC_OK);
	expect_f(r->elems[0], F(4, 10), 2, 0);
	expect_f(r->elems[1], F(1, 9), 2, 0);
	expect_f(r->elems[2], F(1, 2), 2, 0);
	ck_assert_ptr_ne(r->elems[2]->data, a->data); /* the result owns its data */
	expect_f(a, F(1, 2), 2, 0);                   /* arguments are borrowed, never written */
	expect_f(b, F(3, 4), 2, 0);
	ncc_value_free(r);
	ncc_value_free(a);
	ncc_value_free(b);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_supports_reports_gaps)
{
	ncc_module_t *m = parse("HloModule m\nENTRY e {\n  x = s32[1,1,3,3] parameter(0)\n  k = s32[1,1,2,2] parameter(1)\n"
				"  c = s32[1,1,2,2] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01\n"
				"  s = u64[2] constant({1, 2})\n"
				"  g = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry\n"
				"  ROOT t = (s32[1,1,2,2], (u64[2], u32[4])) tuple(c, g)\n}\n");
	const char *why = NULL;
	ck_assert(!ncc_interp_supports(ncc_comp_find_inst(m->entry, "c"), &why));
	ck_assert_ptr_nonnull(strstr(why, "convolution"));
	ck_assert(!ncc_interp_supports(ncc_comp_find_inst(m->entry, "g"), &why));
	ck_assert_ptr_nonnull(strstr(why, "three_fry"));
	ck_assert(ncc_interp_supports(ncc_comp_find_inst(m->entry, "s"), &why));
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------------------ data movement */

START_TEST(test_broadcast_reshape_transpose)
{
	ncc_value_t *args[1] = {arr(NCC_F32, 1, D(3), F(1, 2, 3))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[3] parameter(0)\n"
			     "  b = f32[2,3] broadcast(a), dimensions={1}\n"
			     "  c = f32[3,2] broadcast(a), dimensions={0}\n"
			     "  s = f32[] constant(7)\n  d = f32[2,1] broadcast(s), dimensions={}\n"
			     "  t = f32[3,2] transpose(b), dimensions={1,0}\n"
			     "  r = f32[6] reshape(t)\n"
			     "  ROOT o = (f32[2,3], f32[3,2], f32[2,1], f32[6]) tuple(b, c, d, r)\n}\n", 1, args);
	expect_f(r->elems[0], F(1, 2, 3, 1, 2, 3), 6, 0);
	expect_f(r->elems[1], F(1, 1, 2, 2, 3, 3), 6, 0);
	expect_f(r->elems[2], F(7, 7), 2, 0);
	expect_f(r->elems[3], F(1, 1, 2, 2, 3, 3), 6, 0);
	expect_dims(r->elems[3], NCC_F32, 1, D(6));
	ncc_value_free(r);
	/* rank-3 transpose */
	double v[24];
	for (int i = 0; i < 24; i++)
		v[i] = i;
	ncc_value_t *a2[1] = {arr(NCC_S32, 3, D(2, 3, 4), v)};
	r = run("HloModule m\nENTRY e {\n  a = s32[2,3,4] parameter(0)\n"
		"  ROOT t = s32[4,2,3] transpose(a), dimensions={2,0,1}\n}\n", 1, a2);
	/* t[i,j,k] = a[j,k,i] */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				ck_assert_int_eq(ncc_value_get_i64(r, (i * 2 + j) * 3 + k), j * 12 + k * 4 + i);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_slice_concat_reverse_iota)
{
	double v[12];
	for (int i = 0; i < 12; i++)
		v[i] = i;
	ncc_value_t *args[1] = {arr(NCC_F32, 2, D(3, 4), v)};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[3,4] parameter(0)\n"
			     "  s = f32[2,2] slice(a), slice={[1:3], [0:4:2]}\n"
			     "  s2 = f32[3,2] slice(a), slice={[0:3], [2:4]}\n"
			     "  c = f32[3,6] concatenate(a, s2), dimensions={1}\n"
			     "  v = f32[3,4] reverse(a), dimensions={0,1}\n"
			     "  i = s32[2,3] iota(), iota_dimension=1\n"
			     "  ROOT o = (f32[2,2], f32[3,6], f32[3,4], s32[2,3]) tuple(s, c, v, i)\n}\n", 1, args);
	expect_f(r->elems[0], F(4, 6, 8, 10), 4, 0);
	expect_f(r->elems[1], F(0, 1, 2, 3, 2, 3, 4, 5, 6, 7, 6, 7, 8, 9, 10, 11, 10, 11), 18, 0);
	expect_f(r->elems[2], F(11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 12, 0);
	expect_i(r->elems[3], I(0, 1, 2, 0, 1, 2), 6);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_pad_negative_and_interior)
{
	ncc_value_t *args[1] = {arr(NCC_F32, 2, D(2, 3), F(1, 2, 3, 4, 5, 6))};
	/* dim 0: lo 1, hi 0, interior 1 -> 4 rows; dim 1: lo -1, hi 2, interior 0 -> 4 cols */
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  z = f32[] constant(-1)\n"
			     "  ROOT p = f32[4,4] pad(a, z), padding=1_0_1x-1_2\n}\n", 1, args);
	expect_f(r, F(-1, -1, -1, -1, 2, 3, -1, -1, -1, -1, -1, -1, 5, 6, -1, -1), 16, 0);
	ncc_value_free(r);
	/* the corpus form: pad a size-1 dim up to 128 */
	ncc_value_t *a2[1] = {arr(NCC_F32, 3, D(1, 1, 2), F(3, 4))};
	r = run("HloModule m\nENTRY e {\n  a = f32[1,1,2] parameter(0)\n  z = f32[] constant(0)\n"
		"  ROOT p = f32[1,3,2] pad(a, z), padding=0_0x0_2x0_0\n}\n", 1, a2);
	expect_f(r, F(3, 4, 0, 0, 0, 0), 6, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_dynamic_slice_clamps_start_indices)
{
	double v[12];
	for (int i = 0; i < 12; i++)
		v[i] = i;
	ncc_value_t *args[3] = {arr(NCC_F32, 2, D(3, 4), v), arr_i(NCC_S32, 0, NULL, I(2)),
				arr_i(NCC_S32, 0, NULL, I(-5))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[3,4] parameter(0)\n  i = s32[] parameter(1)\n"
			     "  j = s32[] parameter(2)\n"
			     "  ROOT d = f32[2,2] dynamic-slice(a, i, j), dynamic_slice_sizes={2,2}\n}\n", 3, args);
	expect_f(r, F(4, 5, 8, 9), 4, 0); /* start (2,-5) clamps to (1,0) */
	ncc_value_free(r);
	ncc_value_t *a2[4] = {arr(NCC_F32, 2, D(3, 4), v), arr(NCC_F32, 2, D(2, 2), F(-1, -2, -3, -4)),
			      arr_i(NCC_U32, 0, NULL, I(7)), arr_i(NCC_U32, 0, NULL, I(1))};
	r = run("HloModule m\nENTRY e {\n  a = f32[3,4] parameter(0)\n  u = f32[2,2] parameter(1)\n"
		"  i = u32[] parameter(2)\n  j = u32[] parameter(3)\n"
		"  ROOT d = f32[3,4] dynamic-update-slice(a, u, i, j)\n}\n", 4, a2);
	expect_f(r, F(0, 1, 2, 3, 4, -1, -2, 7, 8, -3, -4, 11), 12, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_gather_embedding_like_corpus)
{
	/* bert: gather(f32[V,16], u32[N]) offset_dims={1} collapsed_slice_dims={0}
	 * start_index_map={0} index_vector_dim=1 slice_sizes={1,16}; an index past the
	 * end clamps to the last row */
	double tab[12];
	for (int i = 0; i < 12; i++)
		tab[i] = i;
	ncc_value_t *args[2] = {arr(NCC_F32, 2, D(4, 3), tab), arr_i(NCC_U32, 1, D(3), I(2, 0, 9))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  t = f32[4,3] parameter(0)\n  i = u32[3] parameter(1)\n"
			     "  ROOT g = f32[3,3] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
			     "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n}\n", 2, args);
	expect_f(r, F(6, 7, 8, 0, 1, 2, 9, 10, 11), 9, 0);
	ncc_value_free(r);
	/* 2-d index vectors, window 2x2 kept */
	double v[16];
	for (int i = 0; i < 16; i++)
		v[i] = i;
	ncc_value_t *a2[2] = {arr(NCC_F32, 2, D(4, 4), v), arr_i(NCC_S32, 2, D(2, 2), I(0, 0, 2, 1))};
	r = run("HloModule m\nENTRY e {\n  t = f32[4,4] parameter(0)\n  i = s32[2,2] parameter(1)\n"
		"  ROOT g = f32[2,2,2] gather(t, i), offset_dims={1,2}, collapsed_slice_dims={}, "
		"start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}\n}\n", 2, a2);
	expect_f(r, F(0, 1, 4, 5, 9, 10, 13, 14), 8, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_scatter_add_and_assign_like_corpus)
{
	/* bert embedding gradient: duplicates accumulate, out-of-range rows are skipped */
	ncc_value_t *args[3] = {arr(NCC_F32, 2, D(3, 2), F(0, 0, 0, 0, 0, 0)),
				arr_i(NCC_S64, 2, D(4, 1), I(1, 0, 1, 3)),
				arr(NCC_F32, 2, D(4, 2), F(1, 2, 3, 4, 5, 6, 7, 8))};
	ncc_value_t *r = run("HloModule m\nadd {\n  p0 = f32[] parameter(0)\n  p1 = f32[] parameter(1)\n"
			     "  ROOT s = f32[] add(p0, p1)\n}\n"
			     "ENTRY e {\n  o = f32[3,2] parameter(0)\n  i = s64[4,1] parameter(1)\n"
			     "  u = f32[4,2] parameter(2)\n"
			     "  ROOT sc = f32[3,2] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0}, "
			     "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n", 3, args);
	expect_f(r, F(3, 4, 6, 8, 0, 0), 6, 0);
	ncc_value_free(r);
	/* llama KV-cache update: assign computation, s32[1] index, window {1,2} */
	ncc_value_t *a2[3] = {arr(NCC_F32, 2, D(3, 2), F(0, 0, 0, 0, 0, 0)), arr_i(NCC_S32, 1, D(1), I(2)),
			      arr(NCC_F32, 2, D(1, 2), F(7, 8))};
	r = run("HloModule m\nassign {\n  p0 = f32[] parameter(0)\n  ROOT p1 = f32[] parameter(1)\n}\n"
		"ENTRY e {\n  o = f32[3,2] parameter(0)\n  i = s32[1] parameter(1)\n  u = f32[1,2] parameter(2)\n"
		"  ROOT sc = f32[3,2] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0}, "
		"scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=assign\n}\n", 3, a2);
	expect_f(r, F(0, 0, 0, 0, 7, 8), 6, 0);
	ncc_value_free(r);
}
END_TEST

/* ------------------------------------------------------------ reductions */

static const char *k_add_f32 = "add {\n  ra = f32[] parameter(0)\n  rb = f32[] parameter(1)\n  ROOT rs = f32[] add(ra, rb)\n}\n";

START_TEST(test_reduce_dims_rank0_and_size1)
{
	double v[24];
	for (int i = 0; i < 24; i++)
		v[i] = i;
	char text[1024];
	snprintf(text, sizeof(text),
		 "HloModule m\n%s"
		 "mx {\n  ma = f32[] parameter(0)\n  mb = f32[] parameter(1)\n  ROOT ms = f32[] maximum(ma, mb)\n}\n"
		 "ENTRY e {\n  a = f32[2,3,4] parameter(0)\n  z = f32[] constant(0)\n  ni = f32[] constant(-inf)\n"
		 "  r02 = f32[3] reduce(a, z), dimensions={0,2}, to_apply=add\n"
		 "  all = f32[] reduce(a, z), dimensions={0,1,2}, to_apply=add\n"
		 "  m = f32[2,4] reduce(a, ni), dimensions={1}, to_apply=mx\n"
		 "  none = f32[2,3,4] reduce(a, z), dimensions={}, to_apply=add\n"
		 "  ROOT t = (f32[3], f32[], f32[2,4], f32[2,3,4]) tuple(r02, all, m, none)\n}\n", k_add_f32);
	ncc_value_t *args[1] = {arr(NCC_F32, 3, D(2, 3, 4), v)};
	ncc_value_t *r = run(text, 1, args);
	/* r02[j] = sum_{i,k} (12i + 4j + k) = 2*(6) ... computed: 4*(0+12) + 8*4j + 2*6 */
	expect_f(r->elems[0], F(60, 92, 124), 3, 0);
	expect_f(r->elems[1], F(276), 1, 0);
	expect_dims(r->elems[1], NCC_F32, 0, NULL);
	expect_f(r->elems[2], F(8, 9, 10, 11, 20, 21, 22, 23), 8, 0);
	expect_f(r->elems[3], v, 24, 0);
	ncc_value_free(r);
	/* size-1 dims everywhere */
	snprintf(text, sizeof(text),
		 "HloModule m\n%sENTRY e {\n  a = f32[1,1,1] parameter(0)\n  z = f32[] constant(1)\n"
		 "  ROOT r = f32[1] reduce(a, z), dimensions={0,2}, to_apply=add\n}\n", k_add_f32);
	ncc_value_t *a2[1] = {arr(NCC_F32, 3, D(1, 1, 1), F(5))};
	r = run(text, 1, a2);
	expect_f(r, F(6), 1, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_reduce_large_sum_matches_f64)
{
	const int64_t n = 1000000;
	ncc_value_t *a = arr(NCC_F32, 1, D(n), NULL);
	ncc_value_fill_random(a, 99);
	/* Kahan-compensated f64 reference */
	double s = 0, c = 0;
	for (int64_t i = 0; i < n; i++) {
		double y = ncc_value_get_f64(a, i) - c, t = s + y;
		c = (t - s) - y;
		s = t;
	}
	char text[512];
	snprintf(text, sizeof(text), "HloModule m\n%sENTRY e {\n  a = f32[1000000] parameter(0)\n"
		 "  z = f32[] constant(0)\n  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add\n}\n",
		 k_add_f32);
	ncc_value_t *args[1] = {a};
	ncc_value_t *r = run(text, 1, args);
	ck_assert_msg(fabs(ncc_value_get_f64(r, 0) - s) <= 1e-6 * fabs(s) + 1e-6, "sum %.9g vs %.9g",
		      ncc_value_get_f64(r, 0), s);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_reduce_integer_and_variadic_argmax)
{
	ncc_value_t *args[1] = {arr_i(NCC_S32, 2, D(2, 3), I(3, -7, 5, 1, 9, 9))};
	ncc_value_t *r = run("HloModule m\nmn {\n  na = s32[] parameter(0)\n  nb = s32[] parameter(1)\n"
			     "  ROOT ns = s32[] minimum(na, nb)\n}\n"
			     "ENTRY e {\n  a = s32[2,3] parameter(0)\n  z = s32[] constant(2147483647)\n"
			     "  ROOT r = s32[2] reduce(a, z), dimensions={1}, to_apply=mn\n}\n", 1, args);
	expect_i(r, I(-7, 1), 2);
	ncc_value_free(r);
	/* argmax: (value, index) pairs, first index wins ties */
	ncc_value_t *a2[1] = {arr(NCC_F32, 2, D(2, 3), F(3, 7, 5, 9, 1, 9))};
	r = run("HloModule m\nam {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n"
		"  bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n"
		"  gt = pred[] compare(av, bv), direction=GT\n  eq = pred[] compare(av, bv), direction=EQ\n"
		"  lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n"
		"  keep = pred[] or(gt, tie)\n  v = f32[] select(keep, av, bv)\n  i = s32[] select(keep, ai, bi)\n"
		"  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
		"ENTRY e {\n  a = f32[2,3] parameter(0)\n  io = s32[2,3] iota(), iota_dimension=1\n"
		"  ni = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
		"  ROOT r = (f32[2], s32[2]) reduce(a, io, ni, z), dimensions={1}, to_apply=am\n}\n", 1, a2);
	expect_f(r->elems[0], F(7, 9), 2, 0);
	expect_i(r->elems[1], I(1, 0), 2);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_reduce_window_pooling)
{
	double v[16];
	for (int i = 0; i < 16; i++)
		v[i] = i;
	char text[1024];
	snprintf(text, sizeof(text),
		 "HloModule m\n%smx {\n  ma = f32[] parameter(0)\n  mb = f32[] parameter(1)\n  ROOT ms = f32[] maximum(ma, mb)\n}\n"
		 "ENTRY e {\n  a = f32[4,4] parameter(0)\n  ni = f32[] constant(-inf)\n  z = f32[] constant(0)\n"
		 "  mp = f32[2,2] reduce-window(a, ni), window={size=2x2 stride=2x2}, to_apply=mx\n"
		 "  sp = f32[3,3] reduce-window(a, z), window={size=2x2 stride=2x2 pad=1_1x1_1}, to_apply=add\n"
		 "  ROOT t = (f32[2,2], f32[3,3]) tuple(mp, sp)\n}\n", k_add_f32);
	ncc_value_t *args[1] = {arr(NCC_F32, 2, D(4, 4), v)};
	ncc_value_t *r = run(text, 1, args);
	expect_f(r->elems[0], F(5, 7, 13, 15), 4, 0);
	expect_f(r->elems[1], F(0, 3, 3, 12, 30, 18, 12, 27, 15), 9, 0);
	ncc_value_free(r);
	/* base dilation: [1,2,3] dilated by 2 -> [1,_,2,_,3]; window 2 stride 1 sums holes as 0 */
	snprintf(text, sizeof(text),
		 "HloModule m\n%sENTRY e {\n  a = f32[3] parameter(0)\n  z = f32[] constant(0)\n"
		 "  ROOT w = f32[4] reduce-window(a, z), window={size=2 lhs_dilate=2}, to_apply=add\n}\n", k_add_f32);
	ncc_value_t *a2[1] = {arr(NCC_F32, 1, D(3), F(1, 2, 3))};
	r = run(text, 1, a2);
	expect_f(r, F(1, 2, 2, 3), 4, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_select_and_scatter_maxpool_grad)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "HloModule m\n%sge {\n  ga = f32[] parameter(0)\n  gb = f32[] parameter(1)\n"
		 "  ROOT gc = pred[] compare(ga, gb), direction=GE\n}\n"
		 "ENTRY e {\n  a = f32[4] parameter(0)\n  s = f32[2] parameter(1)\n  z = f32[] constant(0)\n"
		 "  ROOT r = f32[4] select-and-scatter(a, s, z), window={size=2 stride=2}, select=ge, scatter=add\n}\n",
		 k_add_f32);
	ncc_value_t *args[2] = {arr(NCC_F32, 1, D(4), F(1, 5, 7, 7)), arr(NCC_F32, 1, D(2), F(10, 20))};
	ncc_value_t *r = run(text, 2, args);
	expect_f(r, F(0, 10, 20, 0), 4, 0); /* ties keep the first element */
	ncc_value_free(r);
	/* overlapping windows accumulate */
	snprintf(text, sizeof(text),
		 "HloModule m\n%sge {\n  ga = f32[] parameter(0)\n  gb = f32[] parameter(1)\n"
		 "  ROOT gc = pred[] compare(ga, gb), direction=GE\n}\n"
		 "ENTRY e {\n  a = f32[3] parameter(0)\n  s = f32[2] parameter(1)\n  z = f32[] constant(0)\n"
		 "  ROOT r = f32[3] select-and-scatter(a, s, z), window={size=2 stride=1}, select=ge, scatter=add\n}\n",
		 k_add_f32);
	ncc_value_t *a2[2] = {arr(NCC_F32, 1, D(3), F(1, 9, 2)), arr(NCC_F32, 1, D(2), F(1, 2))};
	r = run(text, 2, a2);
	expect_f(r, F(0, 3, 0), 3, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_dot_matmul_batch_and_vector)
{
	ncc_value_t *args[2] = {arr(NCC_F32, 2, D(2, 3), F(1, 2, 3, 4, 5, 6)),
				arr(NCC_F32, 2, D(3, 2), F(7, 8, 9, 10, 11, 12))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[3,2] parameter(1)\n"
			     "  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
			     2, args);
	expect_f(r, F(58, 64, 139, 154), 4, 0);
	ncc_value_free(r);
	/* contracting lhs dim 0 (the corpus' transposed-gradient form) */
	ncc_value_t *a2[2] = {arr(NCC_F32, 2, D(3, 2), F(1, 4, 2, 5, 3, 6)),
			      arr(NCC_F32, 2, D(2, 3), F(7, 9, 11, 8, 10, 12))};
	r = run("HloModule m\nENTRY e {\n  a = f32[3,2] parameter(0)\n  b = f32[2,3] parameter(1)\n"
		"  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n}\n", 2, a2);
	expect_f(r, F(58, 64, 139, 154), 4, 0);
	ncc_value_free(r);
	/* batch dims */
	ncc_value_t *a3[2] = {arr(NCC_F32, 3, D(2, 1, 2), F(1, 2, 3, 4)), arr(NCC_F32, 3, D(2, 2, 1), F(5, 6, 7, 8))};
	r = run("HloModule m\nENTRY e {\n  a = f32[2,1,2] parameter(0)\n  b = f32[2,2,1] parameter(1)\n"
		"  ROOT d = f32[2,1,1] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
		"lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n", 2, a3);
	expect_f(r, F(17, 53), 2, 0);
	ncc_value_free(r);
	/* vector . vector -> scalar, bf16 operands with an f32 result, s32 */
	ncc_value_t *a4[2] = {arr(NCC_BF16, 1, D(3), F(1, 2, 3)), arr(NCC_BF16, 1, D(3), F(4, 5, 6))};
	r = run("HloModule m\nENTRY e {\n  a = bf16[3] parameter(0)\n  b = bf16[3] parameter(1)\n"
		"  ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n", 2, a4);
	expect_f(r, F(32), 1, 0);
	ncc_value_free(r);
	ncc_value_t *a5[2] = {arr_i(NCC_S32, 1, D(2), I(65536, 3)), arr_i(NCC_S32, 1, D(2), I(65536, 4))};
	r = run("HloModule m\nENTRY e {\n  a = s32[2] parameter(0)\n  b = s32[2] parameter(1)\n"
		"  ROOT d = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n", 2, a5);
	expect_i(r, I(12), 1); /* 2^32 wraps to 0 */
	ncc_value_free(r);
}
END_TEST

/* Direct evaluation of XLA's convolution definition (NCHW / OIHW / NCHW, 2-d), as an
 * independent check of the interpreter's loops. */
static void conv_ref(const float *x, int64_t N, int64_t C, int64_t H, int64_t W, const float *k, int64_t O,
		     int64_t KI, int64_t KH, int64_t KW, const int64_t *stride, const int64_t *plo,
		     const int64_t *ld, const int64_t *rd, int64_t fgc, int64_t bgc, float *out,
		     int64_t OH, int64_t OW)
{
	int64_t ON = N / bgc;
	for (int64_t n = 0; n < ON; n++)
		for (int64_t o = 0; o < O; o++)
			for (int64_t oy = 0; oy < OH; oy++)
				for (int64_t ox = 0; ox < OW; ox++) {
					double s = 0;
					int64_t g = o / (O / fgc), b = (o / (O / bgc)) * (N / bgc) + n;
					for (int64_t ic = 0; ic < KI; ic++)
						for (int64_t ky = 0; ky < KH; ky++)
							for (int64_t kx = 0; kx < KW; kx++) {
								int64_t py = oy * stride[0] + ky * rd[0] - plo[0];
								int64_t px = ox * stride[1] + kx * rd[1] - plo[1];
								if (py < 0 || px < 0 || py % ld[0] || px % ld[1])
									continue;
								py /= ld[0];
								px /= ld[1];
								if (py >= H || px >= W)
									continue;
								s += (double)x[((b * C + g * KI + ic) * H + py) * W + px] *
								     k[((o * KI + ic) * KH + ky) * KW + kx];
							}
					out[((n * O + o) * OH + oy) * OW + ox] = (float)s;
				}
}

static void check_conv(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW,
		       int64_t sy, int64_t sx, int64_t ply, int64_t phy, int64_t plx, int64_t phx, int64_t ldy,
		       int64_t ldx, int64_t rdy, int64_t rdx, int64_t fgc, int64_t bgc)
{
	int64_t KI = C / fgc;
	int64_t eh = (H - 1) * ldy + 1 + ply + phy, ew = (W - 1) * ldx + 1 + plx + phx;
	int64_t OH = (eh - ((KH - 1) * rdy + 1)) / sy + 1, OW = (ew - ((KW - 1) * rdx + 1)) / sx + 1;
	ncc_value_t *x = arr(NCC_F32, 4, D(N, C, H, W), NULL), *k = arr(NCC_F32, 4, D(O, KI, KH, KW), NULL);
	ncc_value_fill_random(x, 1);
	ncc_value_fill_random(k, 2);
	float *want = calloc((size_t)(N / bgc * O * OH * OW), sizeof(float));
	conv_ref(x->data, N, C, H, W, k->data, O, KI, KH, KW, D(sy, sx), D(ply, plx), D(ldy, ldx), D(rdy, rdx),
		 fgc, bgc, want, OH, OW);
	char text[1024];
	snprintf(text, sizeof(text),
		 "HloModule m\nENTRY e {\n  x = f32[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "] parameter(0)\n"
		 "  k = f32[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "] parameter(1)\n"
		 "  ROOT c = f32[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "] convolution(x, k), "
		 "window={size=%" PRId64 "x%" PRId64 " stride=%" PRId64 "x%" PRId64 " pad=%" PRId64 "_%" PRId64 "x%" PRId64
		 "_%" PRId64 " lhs_dilate=%" PRId64 "x%" PRId64 " rhs_dilate=%" PRId64 "x%" PRId64 "}, "
		 "dim_labels=bf01_oi01->bf01, feature_group_count=%" PRId64 ", batch_group_count=%" PRId64 "\n}\n",
		 N, C, H, W, O, KI, KH, KW, N / bgc, O, OH, OW, KH, KW, sy, sx, ply, phy, plx, phx, ldy, ldx, rdy, rdx,
		 fgc, bgc);
	ncc_value_t *args[2] = {x, k};
	ncc_value_t *r = run(text, 2, args);
	expect_dims(r, NCC_F32, 4, D(N / bgc, O, OH, OW));
	for (int64_t i = 0; i < N / bgc * O * OH * OW; i++)
		ck_assert_msg(fabs(ncc_value_get_f64(r, i) - want[i]) <= 1e-5 * (1 + fabs(want[i])),
			      "conv element %" PRId64 ": %.9g vs %.9g", i, ncc_value_get_f64(r, i), want[i]);
	ncc_value_free(r);
	free(want);
}

START_TEST(test_convolution_against_definition)
{
	check_conv(2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);   /* same padding */
	check_conv(2, 3, 7, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);   /* stride 2 */
	check_conv(1, 6, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 6, 1);   /* depthwise */
	check_conv(1, 4, 5, 5, 8, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 2, 1);   /* 2 groups, 4 outputs each */
	check_conv(2, 3, 4, 4, 3, 3, 3, 1, 1, 1, 2, 1, 2, 2, 2, 1, 1, 1, 1);   /* lhs dilation (input grad) */
	check_conv(2, 2, 6, 6, 2, 2, 2, 1, 1, 1, 0, 1, 0, 1, 1, 2, 2, 1, 1);   /* rhs dilation */
	check_conv(4, 2, 5, 5, 4, 5, 5, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 4);   /* batch groups (depthwise weight grad) */
	check_conv(3, 2, 1, 1, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1);   /* 1x1 spatial */
	check_conv(1, 1, 3, 3, 1, 3, 3, 1, 1, -1, 1, 0, 0, 1, 1, 1, 1, 1, 1);  /* negative padding */
}
END_TEST

START_TEST(test_convolution_dim_labels_and_reversal)
{
	/* the mobilenet backward form: kernel 01oi reversed by a separate reverse op equals
	 * window reversal; compare NHWC-labelled conv against the NCHW one */
	ncc_value_t *x = arr(NCC_F32, 4, D(1, 4, 4, 2), NULL), *k = arr(NCC_F32, 4, D(3, 3, 2, 3), NULL);
	ncc_value_fill_random(x, 5);
	ncc_value_fill_random(k, 6);
	ncc_value_t *x2, *k2;
	ck_assert_int_eq(ncc_value_clone(x, &x2), NCC_OK);
	ck_assert_int_eq(ncc_value_clone(k, &k2), NCC_OK);
	ncc_value_t *args[2] = {x, k};
	ncc_value_t *a = run("HloModule m\nENTRY e {\n  x = f32[1,4,4,2] parameter(0)\n  k = f32[3,3,2,3] parameter(1)\n"
			     "  ROOT c = f32[1,4,4,3] convolution(x, k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1}, "
			     "dim_labels=b01f_01io->b01f\n}\n", 2, args);
	ncc_value_t *args2[2] = {x2, k2};
	ncc_value_t *b = run("HloModule m\nENTRY e {\n  x = f32[1,4,4,2] parameter(0)\n  k = f32[3,3,2,3] parameter(1)\n"
			     "  xt = f32[1,2,4,4] transpose(x), dimensions={0,3,1,2}\n"
			     "  kr = f32[3,3,2,3] reverse(k), dimensions={0,1}\n"
			     "  kt = f32[3,2,3,3] transpose(kr), dimensions={3,2,0,1}\n"
			     "  c = f32[1,3,4,4] convolution(xt, kt), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
			     "  ROOT t = f32[1,4,4,3] transpose(c), dimensions={0,2,3,1}\n}\n", 2, args2);
	ncc_compare_result_t cr;
	ck_assert_msg(ncc_value_compare(b, a, NULL, &cr), "%s", cr.msg);
	ncc_value_free(a);
	ncc_value_free(b);
}
END_TEST

/* ------------------------------------------------------------ control flow */

START_TEST(test_while_loop_sums)
{
	ncc_value_t *args[1] = {arr_i(NCC_S32, 0, NULL, I(10))};
	ncc_value_t *r = run("HloModule m\n"
			     "cond {\n  cs = (s32[], s32[], s32[]) parameter(0)\n  ci = s32[] get-tuple-element(cs), index=0\n"
			     "  cn = s32[] get-tuple-element(cs), index=2\n  ROOT cc = pred[] compare(ci, cn), direction=LT\n}\n"
			     "body {\n  bs = (s32[], s32[], s32[]) parameter(0)\n  bi = s32[] get-tuple-element(bs), index=0\n"
			     "  ba = s32[] get-tuple-element(bs), index=1\n  bn = s32[] get-tuple-element(bs), index=2\n"
			     "  one = s32[] constant(1)\n  i1 = s32[] add(bi, one)\n  a1 = s32[] add(ba, i1)\n"
			     "  ROOT bt = (s32[], s32[], s32[]) tuple(i1, a1, bn)\n}\n"
			     "ENTRY e {\n  n = s32[] parameter(0)\n  z = s32[] constant(0)\n"
			     "  init = (s32[], s32[], s32[]) tuple(z, z, n)\n"
			     "  w = (s32[], s32[], s32[]) while(init), condition=cond, body=body\n"
			     "  ROOT r = s32[] get-tuple-element(w), index=1\n}\n", 1, args);
	expect_i(r, I(55), 1);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_while_iteration_limit)
{
	ncc_module_t *m = parse("HloModule m\ncond {\n  cs = s32[] parameter(0)\n  ROOT ct = pred[] constant(true)\n}\n"
				"body {\n  ROOT bs = s32[] parameter(0)\n}\n"
				"ENTRY e {\n  z = s32[] constant(0)\n  ROOT w = s32[] while(z), condition=cond, body=body\n}\n");
	ncc_interp_options_t o = {.max_while_iterations = 100};
	ncc_value_t *r = (ncc_value_t *)0x1;
	ncc_error_t err = {0};
	ck_assert_int_eq(ncc_interp_run(m, NULL, 0, &o, &r, &err), NCC_ERR_LIMIT);
	ck_assert_ptr_null(r);
	ck_assert_msg(strstr(err.msg, "'w'"), "%s", err.msg);
	ncc_module_free(m);
}
END_TEST

START_TEST(test_conditional_and_call)
{
	const char *text = "HloModule m\n"
			   "neg {\n  nx = f32[] parameter(0)\n  ROOT nn = f32[] negate(nx)\n}\n"
			   "dbl {\n  dx = f32[] parameter(0)\n  ROOT dd = f32[] add(dx, dx)\n}\n"
			   "ENTRY e {\n  p = pred[] parameter(0)\n  i = s32[] parameter(1)\n  x = f32[] parameter(2)\n"
			   "  a = f32[] conditional(p, x, x), true_computation=neg, false_computation=dbl\n"
			   "  b = f32[] conditional(i, x, x), branch_computations={neg, dbl}\n"
			   "  c = f32[] call(x), to_apply=dbl\n"
			   "  ROOT t = (f32[], f32[], f32[]) tuple(a, b, c)\n}\n";
	ncc_value_t *args[3] = {arr_i(NCC_PRED, 0, NULL, I(1)), arr_i(NCC_S32, 0, NULL, I(7)),
				arr(NCC_F32, 0, NULL, F(3))};
	ncc_value_t *r = run(text, 3, args);
	expect_f(r->elems[0], F(-3), 1, 0);
	expect_f(r->elems[1], F(6), 1, 0); /* out-of-range index runs the last branch */
	expect_f(r->elems[2], F(6), 1, 0);
	ncc_value_free(r);
	ncc_value_t *a2[3] = {arr_i(NCC_PRED, 0, NULL, I(0)), arr_i(NCC_S32, 0, NULL, I(0)),
			      arr(NCC_F32, 0, NULL, F(3))};
	r = run(text, 3, a2);
	expect_f(r->elems[0], F(6), 1, 0);
	expect_f(r->elems[1], F(-3), 1, 0);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_tuple_and_get_tuple_element_share_values)
{
	ncc_value_t *args[1] = {arr(NCC_F32, 1, D(2), F(1, 2))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  t = (f32[2], f32[2]) tuple(a, a)\n"
			     "  x = f32[2] get-tuple-element(t), index=0\n  y = f32[2] get-tuple-element(t), index=1\n"
			     "  s = f32[2] add(x, y)\n  ROOT o = (f32[2], (f32[2], f32[2])) tuple(s, t)\n}\n", 1, args);
	ck_assert_int_eq(r->nelems, 2);
	expect_f(r->elems[0], F(2, 4), 2, 0);
	expect_f(r->elems[1]->elems[0], F(1, 2), 2, 0);
	expect_f(r->elems[1]->elems[1], F(1, 2), 2, 0);
	ncc_value_free(r);
}
END_TEST

/* ------------------------------------------------------------ nn ops */

START_TEST(test_batch_norm_training_inference_grad)
{
	/* x[2,2] feature_index=1: feature 0 = {1,3}, feature 1 = {2,6} */
	ncc_value_t *args[3] = {arr(NCC_F32, 2, D(2, 2), F(1, 2, 3, 6)), arr(NCC_F32, 1, D(2), F(1, 2)),
				arr(NCC_F32, 1, D(2), F(0, 1))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  x = f32[2,2] parameter(0)\n  s = f32[2] parameter(1)\n"
			     "  o = f32[2] parameter(2)\n  ROOT b = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), "
			     "epsilon=0, feature_index=1\n}\n", 3, args);
	expect_f(r->elems[1], F(2, 4), 2, 1e-7);
	expect_f(r->elems[2], F(1, 4), 2, 1e-7);
	expect_f(r->elems[0], F(-1, -1, 1, 3), 4, 1e-6);
	ncc_value_free(r);
	ncc_value_t *a2[5] = {arr(NCC_F32, 2, D(2, 2), F(1, 2, 3, 6)), arr(NCC_F32, 1, D(2), F(1, 2)),
			      arr(NCC_F32, 1, D(2), F(0, 1)), arr(NCC_F32, 1, D(2), F(2, 4)),
			      arr(NCC_F32, 1, D(2), F(1, 4))};
	r = run("HloModule m\nENTRY e {\n  x = f32[2,2] parameter(0)\n  s = f32[2] parameter(1)\n"
		"  o = f32[2] parameter(2)\n  m = f32[2] parameter(3)\n  v = f32[2] parameter(4)\n"
		"  ROOT b = f32[2,2] batch-norm-inference(x, s, o, m, v), epsilon=0, feature_index=1\n}\n", 5, a2);
	expect_f(r, F(-1, -1, 1, 3), 4, 1e-6);
	ncc_value_free(r);
	/* grad: dy = 1 everywhere -> grad_offset = N, grad_scale = sum(xhat) = 0, grad_x = 0 */
	ncc_value_t *a3[5] = {arr(NCC_F32, 2, D(2, 2), F(1, 2, 3, 6)), arr(NCC_F32, 1, D(2), F(1, 2)),
			      arr(NCC_F32, 1, D(2), F(2, 4)), arr(NCC_F32, 1, D(2), F(1, 4)),
			      arr(NCC_F32, 2, D(2, 2), F(1, 1, 1, 3))};
	r = run("HloModule m\nENTRY e {\n  x = f32[2,2] parameter(0)\n  s = f32[2] parameter(1)\n"
		"  m = f32[2] parameter(2)\n  v = f32[2] parameter(3)\n  dy = f32[2,2] parameter(4)\n"
		"  ROOT g = (f32[2,2], f32[2], f32[2]) batch-norm-grad(x, s, m, v, dy), epsilon=0, feature_index=1\n}\n",
		5, a3);
	/* feature 0: xhat = {-1, 1}, dy = {1, 1}: dscale 0, doffset 2, dx 0.
	 * feature 1: xhat = {-1, 1}, dy = {1, 3}: doffset 4, dscale 2,
	 *   dx = g*rstd*(dy - mean(dy) - xhat*mean(dy*xhat)) = 2*0.5*({1,3} - 2 - {-1,1}*1) = {0, 0} */
	expect_f(r->elems[1], F(0, 2), 2, 1e-7);
	expect_f(r->elems[2], F(2, 4), 2, 1e-7);
	expect_f(r->elems[0], F(0, 0, 0, 0), 4, 1e-7);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_custom_calls_gelu_softmax_transfer)
{
	ncc_value_t *args[1] = {arr(NCC_F32, 2, D(2, 3), F(1, 2, 3, 0, 0, -1))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
			     "  g = f32[2,3] custom-call(x), custom_call_target=\"AwsNeuronGelu\", api_version=API_VERSION_UNSPECIFIED\n"
			     "  t = f32[2,3] custom-call(x), custom_call_target=\"AwsNeuronGeluApprxTanh\"\n"
			     "  d = f32[2,3] custom-call(x), custom_call_target=\"AwsNeuronGeluBackward\"\n"
			     "  s = f32[2,3] custom-call(x), custom_call_target=\"AwsNeuronSoftmax\", backend_config=\"1\"\n"
			     "  s0 = f32[2,3] custom-call(x), custom_call_target=\"AwsNeuronSoftmax\", backend_config=\"0\"\n"
			     "  r = f32[2,3] custom-call(x), custom_call_target=\"AwsNeuronTransferWithStaticRing\"\n"
			     "  ROOT o = (f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) tuple(g, t, d, s, s0, r)\n}\n",
			     1, args);
	expect_f(r->elems[0], F(0.8413447460685429, 1.9544997361036416, 2.99595030590511, 0, 0, -0.15865525393145707),
		 6, 1e-6);
	/* tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
	for (int i = 0; i < 6; i++) {
		double x = ncc_value_get_f64(r->elems[5], i);
		double want = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
		ck_assert(fabs(ncc_value_get_f64(r->elems[1], i) - want) < 1e-6);
		/* backward: numeric derivative of the erf form */
		double h = 1e-4, gp = 0.5 * (x + h) * (1 + erf((x + h) / sqrt(2))), gm = 0.5 * (x - h) * (1 + erf((x - h) / sqrt(2)));
		ck_assert_msg(fabs(ncc_value_get_f64(r->elems[2], i) - (gp - gm) / (2 * h)) < 1e-5, "gelu' at %g", x);
	}
	double e1 = exp(1), e2 = exp(2), e3 = exp(3), sa = e1 + e2 + e3, sb = 2 + exp(-1);
	expect_f(r->elems[3], F(e1 / sa, e2 / sa, e3 / sa, 1 / sb, 1 / sb, exp(-1) / sb), 6, 1e-6);
	expect_f(r->elems[4], F(e1 / (e1 + 1), e2 / (e2 + 1), e3 / (e3 + exp(-1)), 1 / (e1 + 1), 1 / (e2 + 1),
				exp(-1) / (e3 + exp(-1))), 6, 1e-6);
	expect_f(r->elems[5], F(1, 2, 3, 0, 0, -1), 6, 0);
	ncc_value_free(r);
	/* softmax backward with operands (y, dL/dy) and the default (last) dim */
	ncc_value_t *a2[2] = {arr(NCC_F32, 1, D(3), F(0.2, 0.3, 0.5)), arr(NCC_F32, 1, D(3), F(1, 2, 3))};
	r = run("HloModule m\nENTRY e {\n  y = f32[3] parameter(0)\n  g = f32[3] parameter(1)\n"
		"  ROOT d = f32[3] custom-call(y, g), custom_call_target=\"AwsNeuronSoftmaxBackward\"\n}\n", 2, a2);
	/* s = 0.2 + 0.6 + 1.5 = 2.3 */
	expect_f(r, F(0.2 * (1 - 2.3), 0.3 * (2 - 2.3), 0.5 * (3 - 2.3)), 3, 1e-6);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_rng_bit_generator_philox)
{
	/* Random123 known answer: philox4x32-10, counter 0, key 0 */
	ncc_value_t *args[1] = {arr_i(NCC_U64, 1, D(2), I(0, 0))};
	ncc_value_t *r = run("HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n"
			     "  ROOT g = (u64[2], u32[2,3]) rng-bit-generator(s), algorithm=rng_default\n}\n", 1, args);
	const uint32_t *b = r->elems[1]->data;
	ck_assert_uint_eq(b[0], 0x6627e8d5u);
	ck_assert_uint_eq(b[1], 0xe169c58du);
	ck_assert_uint_eq(b[2], 0xbc57ac4cu);
	ck_assert_uint_eq(b[3], 0x9b00dbd8u);
	/* 6 numbers use 2 counter blocks; the key is kept */
	expect_i(r->elems[0], I(0, 2), 2);
	uint32_t b4 = b[4];
	ncc_value_free(r);
	/* block 1 of counter 0 is block 0 of counter 1 */
	ncc_value_t *a2[1] = {arr_i(NCC_U64, 1, D(2), I(0, 1))};
	r = run("HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n"
		"  ROOT g = (u64[2], u32[1]) rng-bit-generator(s), algorithm=rng_philox\n}\n", 1, a2);
	ck_assert_uint_eq(((uint32_t *)r->elems[1]->data)[0], b4);
	expect_i(r->elems[0], I(0, 2), 2);
	ncc_value_free(r);
}
END_TEST

START_TEST(test_collectives_over_one_replica)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "HloModule m\n%sENTRY e {\n  x = f32[4] parameter(0)\n"
		 "  a = f32[4] all-reduce(x), replica_groups={{0}}, to_apply=add\n"
		 "  g = f32[4] all-gather(x), replica_groups={{0}}, dimensions={0}\n"
		 "  r = f32[4] reduce-scatter(x), replica_groups={{0}}, dimensions={0}, to_apply=add\n"
		 "  id = u32[] replica-id()\n"
		 "  ROOT t = (f32[4], f32[4], f32[4], u32[]) tuple(a, g, r, id)\n}\n", k_add_f32);
	ncc_value_t *args[1] = {arr(NCC_F32, 1, D(4), F(1, 2, 3, 4))};
	ncc_value_t *r = run(text, 1, args);
	for (int k = 0; k < 3; k++)
		expect_f(r->elems[k], F(1, 2, 3, 4), 4, 0);
	expect_i(r->elems[3], I(0), 1);
	ncc_value_free(r);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(test_errors_name_the_instruction)
{
	/* complex types are not evaluated */
	run_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT c = c64[2] complex(a, a), "
		  "metadata={op_type=\"aten__complex\" source_file=\"model.py\" source_line=12}\n}\n",
		  1, (ncc_value_t *[]){arr(NCC_F32, 1, D(2), F(1, 2))}, NCC_ERR_UNSUPPORTED, "'c'");
	/* unknown custom-call target */
	run_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"
		  "  ROOT c = f32[2] custom-call(a), custom_call_target=\"SomethingElse\"\n}\n",
		  1, (ncc_value_t *[]){arr(NCC_F32, 1, D(2), F(1, 2))}, NCC_ERR_UNSUPPORTED, "custom-call");
	/* wrong argument shape and count */
	run_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] negate(a)\n}\n",
		  1, (ncc_value_t *[]){arr(NCC_F32, 1, D(3), F(1, 2, 3))}, NCC_ERR_INVALID, "parameter 0");
	run_fails("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] negate(a)\n}\n",
		  0, NULL, NCC_ERR_INVALID, "takes 1 arguments");
	/* an elided constant has no value */
	run_fails("HloModule m\nENTRY e {\n  ROOT c = f32[3] constant({...})\n}\n", 0, NULL, NCC_ERR_UNSUPPORTED,
		  "elided");
	const char *why = NULL;
	ncc_module_t *m = parse("HloModule m\nENTRY e {\n  a = f32[8] parameter(0)\n  ROOT f = c64[8] fft(a), fft_type=RFFT, fft_length={8}\n}\n");
	ck_assert(!ncc_interp_supports(m->entry->root, &why));
	ck_assert_ptr_nonnull(why);
	ck_assert(ncc_interp_supports(m->entry->params[0], &why));
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------------------ corpus */

static const char *corpus_dir(void)
{
	const char *d = getenv("NCC_HLO_CORPUS");
	if (d && *d)
		return d;
#ifdef NCC_HLO_CORPUS
	return NCC_HLO_CORPUS;
#else
	return "../shared/hlo";
#endif
}

static bool shapes_match(const ncc_shape_t *s, const ncc_value_t *v)
{
	if (s->etype == NCC_TUPLE) {
		if (v->shape.etype != NCC_TUPLE || v->nelems != s->nelems)
			return false;
		for (int32_t k = 0; k < s->nelems; k++)
			if (!shapes_match(&s->elems[k], v->elems[k]))
				return false;
		return true;
	}
	return ncc_shape_equal(s, &v->shape, false);
}

/* Sanitizer builds run several times slower (NCC_TEST_SANITIZED, corpus_split.h):
 * budgets scale and the 9 GB mobilenet run is left to the plain build. */

/* Time budget of one corpus module: base seconds, times NCC_INTERP_BUDGET_SCALE
 * (default 1; 5 under sanitizers) for slow or shared machines. */
static double budget(double base)
{
	const char *e = getenv("NCC_INTERP_BUDGET_SCALE");
	double k = e && atof(e) > 0 ? atof(e) : (NCC_TEST_SANITIZED ? 5 : 1);
	return base * k;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_corpus_file(const char *name, double budget_s)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", corpus_dir(), name);
	ncc_module_t *m = NULL;
	ncc_error_t err = {0};
	ncc_status_t st = ncc_parse_hlo_file(path, &m, &err);
	ck_assert_msg(st == NCC_OK, "%s: %s", path, err.msg);
	st = ncc_verify(m, &err);
	ck_assert_msg(st == NCC_OK, "%s: %s", path, err.msg);
	ncc_value_t **args = NULL;
	int32_t nargs = 0;
	ck_assert_int_eq(ncc_interp_random_args(m, 1234, &args, &nargs), NCC_OK);
	ncc_value_t *r = NULL;
	double t0 = now_s();
	st = ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &r, &err);
	double dt = now_s() - t0;
	ck_assert_msg(st == NCC_OK, "%s: %s", name, err.msg);
	ck_assert_msg(shapes_match(&m->entry->root->shape, r), "%s: result shape differs from the root's", name);
	/* determinism: the same inputs give the same bytes */
	fprintf(stderr, "corpus %-40s %7.2f s\n", name, dt);
	ck_assert_msg(dt <= budget_s, "%s took %.1f s (budget %.0f s)", name, dt, budget_s);
	ncc_value_free(r);
	ncc_interp_free_args(args, nargs);
	ncc_module_free(m);
}

/* The corpus' .hlo files but MobileNetV2 (its own test), sorted; main() splits
 * them into small (the default run) and big (the 'full' suite; corpus_split.h)
 * before the tests fork. */
static char *g_files[256];
static int g_nfiles, g_small[256], g_nsmall, g_big[256], g_nbig;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_corpus(void)
{
	DIR *d = opendir(corpus_dir());
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && g_nfiles < 256) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 4, ".hlo") || strstr(e->d_name, "mobilenet"))
			continue;
		g_files[g_nfiles++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(g_files, (size_t)g_nfiles, sizeof(g_files[0]), cmp_name);
	ncc_test_corpus_split(corpus_dir(), (const char *const *)g_files, g_nfiles, g_small, &g_nsmall,
			      g_big, &g_nbig);
}

START_TEST(test_corpus_is_present)
{
	ck_assert_msg(g_nfiles >= 12, "found %d .hlo modules besides MobileNetV2 in %s (set NCC_HLO_CORPUS)",
		      g_nfiles, corpus_dir());
}
END_TEST

START_TEST(test_corpus_modules_run)
{
	run_corpus_file(g_files[g_small[_i]], budget(120));
}
END_TEST

START_TEST(test_corpus_big_modules_run)
{
	run_corpus_file(g_files[g_big[_i]], budget(120));
}
END_TEST

START_TEST(test_corpus_mobilenet_runs)
{
	if (getenv("NCC_INTERP_SKIP_MOBILENET") || NCC_TEST_SANITIZED) {
		fprintf(stderr, "corpus mobilenet skipped (%s)\n",
			NCC_TEST_SANITIZED ? "sanitizer build" : "NCC_INTERP_SKIP_MOBILENET");
		return;
	}
	run_corpus_file("xla-mobilenet_v2.hlo", budget(600));
}
END_TEST

START_TEST(test_corpus_results_are_deterministic)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", corpus_dir(), "mlp-mlp_single_case_2.hlo");
	ncc_module_t *m = NULL;
	ncc_error_t err = {0};
	ck_assert_int_eq(ncc_parse_hlo_file(path, &m, &err), NCC_OK);
	ncc_value_t **args = NULL, *r1 = NULL, *r2 = NULL;
	int32_t nargs = 0;
	ck_assert_int_eq(ncc_interp_random_args(m, 5, &args, &nargs), NCC_OK);
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &r1, &err), NCC_OK);
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &r2, &err), NCC_OK);
	ncc_compare_result_t cr;
	ncc_tolerance_t exact = {0, 0};
	ck_assert_msg(ncc_value_compare(r1, r2, &exact, &cr), "%s", cr.msg);
	ncc_value_free(r1);
	ncc_value_free(r2);
	ncc_interp_free_args(args, nargs);
	ncc_module_free(m);
}
END_TEST

/* ------------------------------------------------------------ model-like arguments, Monte Carlo arithmetic */

/* A small training-step-like module: conv + batch norm + ReLU6 with its bound as a
 * parameter, dropout with its keep probability as a parameter, and parameters of no
 * recognised role (a bias, an s32 label). */
static const char *const k_model_hlo =
	"HloModule model\n"
	"ENTRY e {\n"
	"  x = f32[2,3,5,5] parameter(0)\n"
	"  w = f32[4,3,3,3] parameter(1)\n"
	"  gamma = f32[4] parameter(2)\n"
	"  beta = f32[4] parameter(3)\n"
	"  hi = f32[] parameter(4)\n"
	"  keep = f32[] parameter(5)\n"
	"  bias = f32[4] parameter(6)\n"
	"  label = s32[2] parameter(7)\n"
	"  c = f32[2,4,5,5] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
	"  bn = (f32[2,4,5,5], f32[4], f32[4]) batch-norm-training(c, gamma, beta), epsilon=1e-5, feature_index=1\n"
	"  y = f32[2,4,5,5] get-tuple-element(bn), index=0\n"
	"  zero = f32[] constant(0)\n"
	"  lo = f32[2,4,5,5] broadcast(zero), dimensions={}\n"
	"  hib = f32[2,4,5,5] broadcast(hi), dimensions={}\n"
	"  r = f32[2,4,5,5] clamp(lo, y, hib)\n"
	"  kb = f32[2,4,5,5] broadcast(keep), dimensions={}\n"
	"  m = pred[2,4,5,5] compare(y, kb), direction=LT\n"
	"  bb = f32[2,4,5,5] broadcast(bias), dimensions={1}\n"
	"  sum = f32[2,4,5,5] add(r, bb)\n"
	"  ROOT t = (f32[2,4,5,5], pred[2,4,5,5], s32[2]) tuple(sum, m, label)\n"
	"}\n";

START_TEST(test_model_args_follow_parameter_roles)
{
	ncc_module_t *m = parse(k_model_hlo);
	ncc_value_t **args = NULL, **rnd = NULL;
	int32_t nargs = 0, nrnd = 0;
	ck_assert_int_eq(ncc_interp_model_args(m, 77, &args, &nargs), NCC_OK);
	ck_assert_int_eq(ncc_interp_random_args(m, 77, &rnd, &nrnd), NCC_OK);
	ck_assert_int_eq(nargs, 8);
	ck_assert_int_eq(nrnd, 8);
	/* the kernel: uniform in +-1/sqrt(fan_in), fan_in = 3 input features * 3x3 */
	double b = 1.0 / sqrt(27.0), lo = 1, hi = -1;
	for (int64_t i = 0; i < ncc_value_elements(args[1]); i++) {
		double w = ncc_value_get_f64(args[1], i);
		ck_assert_msg(w >= -b && w < b, "kernel element %lld = %g outside +-%g", (long long)i, w, b);
		lo = fmin(lo, w);
		hi = fmax(hi, w);
	}
	ck_assert_msg(hi - lo > b, "kernel values do not spread over the range: [%g, %g]", lo, hi);
	for (int64_t i = 0; i < 4; i++) {
		ck_assert(ncc_value_get_f64(args[2], i) == 1.0); /* batch-norm scale */
		ck_assert(ncc_value_get_f64(args[3], i) == 0.0); /* offset */
	}
	ck_assert(ncc_value_get_f64(args[4], 0) == 6.0);      /* ReLU6 bound */
	ck_assert(ncc_value_get_f64(args[5], 0) == 0.8f);     /* dropout keep probability */
	/* no role: the same bytes as ncc_interp_random_args */
	for (int32_t k = 0; k < 8; k++) {
		bool role = k >= 1 && k <= 5;
		ck_assert_int_eq(args[k]->nbytes, rnd[k]->nbytes);
		ck_assert_msg((memcmp(args[k]->data, rnd[k]->data, args[k]->nbytes) == 0) == !role,
			      "parameter %d: %s", (int)k, role ? "kept its random fill" : "was changed");
	}
	ncc_interp_free_args(args, nargs);
	ncc_interp_free_args(rnd, nrnd);
	ncc_module_free(m);
}
END_TEST

/* A bound over a lower bound that is not the constant 0, or a "greater than"
 * compare, is no ReLU6 and no dropout: those keep their random values. */
START_TEST(test_model_args_leave_other_scalars_random)
{
	ncc_module_t *m = parse("HloModule m\n"
				"ENTRY e {\n"
				"  x = f32[4] parameter(0)\n"
				"  a = f32[] parameter(1)\n"
				"  b = f32[] parameter(2)\n"
				"  one = f32[] constant(1)\n"
				"  c = f32[4] clamp(one, x, a)\n"
				"  bb = f32[4] broadcast(b), dimensions={}\n"
				"  g = pred[4] compare(x, bb), direction=GT\n"
				"  ROOT t = (f32[4], pred[4]) tuple(c, g)\n"
				"}\n");
	ncc_value_t **args = NULL, **rnd = NULL;
	int32_t nargs = 0, nrnd = 0;
	ck_assert_int_eq(ncc_interp_model_args(m, 3, &args, &nargs), NCC_OK);
	ck_assert_int_eq(ncc_interp_random_args(m, 3, &rnd, &nrnd), NCC_OK);
	for (int32_t k = 0; k < nargs; k++)
		ck_assert_int_eq(memcmp(args[k]->data, rnd[k]->data, args[k]->nbytes), 0);
	ncc_interp_free_args(args, nargs);
	ncc_interp_free_args(rnd, nrnd);
	ncc_module_free(m);
}
END_TEST

/* Units in the last place between two finite f32 values of one sign. */
static int64_t ulps_apart(float a, float b)
{
	int32_t ia, ib;
	memcpy(&ia, &a, 4);
	memcpy(&ib, &b, 4);
	return ia > ib ? (int64_t)ia - ib : (int64_t)ib - ia;
}

START_TEST(test_perturbation_moves_arithmetic_results_by_at_most_n_ulps)
{
	/* add and exp are perturbed; the select, reshape and negate after them are exact */
	ncc_module_t *m = parse("HloModule m\n"
				"ENTRY e {\n"
				"  x = f32[1000] parameter(0)\n"
				"  y = f32[1000] parameter(1)\n"
				"  p = pred[1000] parameter(2)\n"
				"  s = f32[1000] add(x, y)\n"
				"  e = f32[1000] exponential(s)\n"
				"  sel = f32[1000] select(p, e, x)\n"
				"  n = f32[1000] negate(sel)\n"
				"  ROOT r = f32[10,100] reshape(n)\n"
				"}\n");
	ncc_value_t **args = NULL;
	int32_t nargs = 0;
	ck_assert_int_eq(ncc_interp_random_args(m, 9, &args, &nargs), NCC_OK);
	for (int64_t i = 0; i < 100; i++) /* exact zeros stay zero */
		ncc_value_set_f64(args[1], i, -ncc_value_get_f64(args[0], i));
	ncc_value_t *exact = NULL, *p1 = NULL, *p2 = NULL, *p3 = NULL;
	ncc_error_t err = {0};
	ncc_interp_options_t o = {0};
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &exact, &err), NCC_OK);
	o.perturb_ulps = 3;
	o.perturb_seed = 42;
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, &o, &p1, &err), NCC_OK);
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, &o, &p2, &err), NCC_OK);
	o.perturb_seed = 43;
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, &o, &p3, &err), NCC_OK);
	/* the same seed gives the same bytes, another seed other bytes */
	ck_assert_int_eq(memcmp(p1->data, p2->data, p1->nbytes), 0);
	ck_assert_int_ne(memcmp(p1->data, p3->data, p1->nbytes), 0);
	const float *ex = exact->data, *pe = p1->data;
	int64_t moved = 0;
	for (int64_t i = 0; i < 1000; i++) {
		bool taken = ncc_value_get_f64(args[2], i) != 0;
		int64_t d = ulps_apart(ex[i], pe[i]);
		if (!taken) /* select took x: no arithmetic on that path */
			ck_assert_msg(d == 0, "element %lld moved by %lld ulps without arithmetic", (long long)i,
				      (long long)d);
		else if (i < 100) /* exp(0) = 1: the zero sum stayed exact, exp moved by <= 3 */
			ck_assert_msg(d <= 3, "element %lld moved by %lld ulps", (long long)i, (long long)d);
		else /* two perturbed ops: the sum (<= 3 ulps, amplified by exp's condition |s| <= 2) and exp */
			ck_assert_msg(d <= 3 + 3 * 2 + 1, "element %lld moved by %lld ulps", (long long)i,
				      (long long)d);
		moved += d != 0;
	}
	ck_assert_msg(moved > 300, "only %lld elements moved", (long long)moved);
	ncc_value_free(exact);
	ncc_value_free(p1);
	ncc_value_free(p2);
	ncc_value_free(p3);
	ncc_interp_free_args(args, nargs);
	ncc_module_free(m);
}
END_TEST

/* A dot's terms are perturbed at their own magnitude: when they cancel, the result
 * moves by far more ulps of itself than the result perturbation alone allows. */
START_TEST(test_perturbation_of_contractions_follows_the_terms)
{
	ncc_module_t *m = parse("HloModule m\n"
				"ENTRY e {\n"
				"  a = f32[64,3] parameter(0)\n"
				"  b = f32[3] parameter(1)\n"
				"  ROOT d = f32[64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
				"}\n");
	ncc_value_t *args[2] = {arr(NCC_F32, 2, D(64, 3), NULL), arr(NCC_F32, 1, D(3), F(1, 1, 1))};
	for (int64_t r = 0; r < 64; r++) { /* 1e6 + 1 - 1e6 = 1 */
		ncc_value_set_f64(args[0], 3 * r, 1e6);
		ncc_value_set_f64(args[0], 3 * r + 1, 1);
		ncc_value_set_f64(args[0], 3 * r + 2, -1e6);
	}
	ncc_value_t *exact = NULL, *pert = NULL;
	ncc_error_t err = {0};
	ncc_interp_options_t o = {.perturb_ulps = 2, .perturb_seed = 7};
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, 2, NULL, &exact, &err), NCC_OK);
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, 2, &o, &pert, &err), NCC_OK);
	/* the arguments themselves are not modified */
	ck_assert(ncc_value_get_f64(args[0], 0) == 1e6);
	int64_t far = 0;
	for (int64_t r = 0; r < 64; r++) {
		float e = ((const float *)exact->data)[r], p = ((const float *)pert->data)[r];
		ck_assert(e == 1.0f);
		/* each 1e6 term moves by <= 2 ulps of 1e6 (0.0625) through a and by 1e6 * 2
		 * ulps of 1 (1.19e-7) through b; the middle term and the result by ~1e-7 */
		ck_assert_msg(fabs(p - 1.0) <= 2 * (2 * 0.0625 + 1e6 * 2 * 1.1920929e-7) + 1e-5,
			      "row %lld: %.9g", (long long)r, (double)p);
		far += ulps_apart(e, p) > 2 + 2;
	}
	ck_assert_msg(far > 16, "only %lld of 64 results moved beyond the result's own ulps", (long long)far);
	ncc_value_free(exact);
	ncc_value_free(pert);
	ncc_value_free(args[0]);
	ncc_value_free(args[1]);
	ncc_module_free(m);
}
END_TEST

/* Batch norm's per-feature statistics are perturbed as one value each, so a feature's
 * outputs move together, and a reduce's reducer runs exact per element. */
START_TEST(test_perturbation_of_batch_norm_and_reduce)
{
	ncc_module_t *m = parse("HloModule m\n"
				"add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n"
				"ENTRY e {\n"
				"  x = f32[64,2] parameter(0)\n"
				"  g = f32[2] parameter(1)\n"
				"  o = f32[2] parameter(2)\n"
				"  bn = (f32[64,2], f32[2], f32[2]) batch-norm-training(x, g, o), epsilon=1e-3, feature_index=1\n"
				"  mean = f32[2] get-tuple-element(bn), index=1\n"
				"  z = f32[] constant(0)\n"
				"  sum = f32[2] reduce(x, z), dimensions={0}, to_apply=add\n"
				"  ROOT t = (f32[2], f32[2]) tuple(mean, sum)\n"
				"}\n");
	ncc_value_t **args = NULL;
	int32_t nargs = 0;
	ck_assert_int_eq(ncc_interp_random_args(m, 5, &args, &nargs), NCC_OK);
	ncc_value_t *exact = NULL, *pert = NULL;
	ncc_error_t err = {0};
	ncc_interp_options_t o = {.perturb_ulps = 2, .perturb_seed = 1};
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &exact, &err), NCC_OK);
	ck_assert_int_eq(ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, &o, &pert, &err), NCC_OK);
	for (int32_t leaf = 0; leaf < 2; leaf++)
		for (int64_t c = 0; c < 2; c++) {
			float a = ((const float *)exact->elems[leaf]->data)[c];
			float b = ((const float *)pert->elems[leaf]->data)[c];
			/* the mean: its statistic (2 ulps) and the stored output (2 ulps) */
			ck_assert_msg(ulps_apart(a, b) <= (leaf == 0 ? 4 : 2), "leaf %d feature %lld: %.9g vs %.9g",
				      (int)leaf, (long long)c, (double)a, (double)b);
		}
	ncc_value_free(exact);
	ncc_value_free(pert);
	ncc_interp_free_args(args, nargs);
	ncc_module_free(m);
}
END_TEST

static Suite *interp_suite(void)
{
	Suite *s = suite_create("interp");
	TCase *tc = tcase_create("values");
	tcase_add_test(tc, test_value_alloc_clone_free);
	tcase_add_test(tc, test_random_fill_is_deterministic_and_in_range);
	tcase_add_test(tc, test_compare_tolerances_and_messages);
	tcase_add_test(tc, test_compare_tuples);
	tcase_add_test(tc, test_layout_conversion);
	tcase_add_test(tc, test_model_args_follow_parameter_roles);
	tcase_add_test(tc, test_model_args_leave_other_scalars_random);
	tcase_add_test(tc, test_perturbation_moves_arithmetic_results_by_at_most_n_ulps);
	tcase_add_test(tc, test_perturbation_of_contractions_follows_the_terms);
	tcase_add_test(tc, test_perturbation_of_batch_norm_and_reduce);
	suite_add_tcase(s, tc);

	tc = tcase_create("elementwise");
	tcase_add_test(tc, test_float_binary_ops);
	tcase_add_test(tc, test_bf16_and_f16_round_to_nearest_even);
	tcase_add_test(tc, test_float_unary_ops);
	tcase_add_test(tc, test_integer_division_edge_cases);
	tcase_add_test(tc, test_integer_wraparound_and_minmax);
	tcase_add_test(tc, test_shifts_with_out_of_range_amounts);
	tcase_add_test(tc, test_convert_rules);
	tcase_add_test(tc, test_compare_directions_and_total_order);
	tcase_add_test(tc, test_select_and_clamp);
	tcase_add_test(tc, test_map);
	tcase_add_test(tc, test_rank0_and_size1_elementwise);
	tcase_add_test(tc, test_fusion_and_arguments_are_not_modified);
	tcase_add_test(tc, test_supports_reports_gaps);
	suite_add_tcase(s, tc);

	tc = tcase_create("shape");
	tcase_add_test(tc, test_broadcast_reshape_transpose);
	tcase_add_test(tc, test_slice_concat_reverse_iota);
	tcase_add_test(tc, test_pad_negative_and_interior);
	tcase_add_test(tc, test_dynamic_slice_clamps_start_indices);
	tcase_add_test(tc, test_gather_embedding_like_corpus);
	tcase_add_test(tc, test_scatter_add_and_assign_like_corpus);
	suite_add_tcase(s, tc);

	tc = tcase_create("reduce");
	tcase_add_test(tc, test_reduce_dims_rank0_and_size1);
	tcase_add_test(tc, test_reduce_large_sum_matches_f64);
	tcase_add_test(tc, test_reduce_integer_and_variadic_argmax);
	tcase_add_test(tc, test_reduce_window_pooling);
	tcase_add_test(tc, test_select_and_scatter_maxpool_grad);
	tcase_add_test(tc, test_dot_matmul_batch_and_vector);
	tcase_add_test(tc, test_convolution_against_definition);
	tcase_add_test(tc, test_convolution_dim_labels_and_reversal);
	suite_add_tcase(s, tc);

	tc = tcase_create("control");
	tcase_add_test(tc, test_while_loop_sums);
	tcase_add_test(tc, test_while_iteration_limit);
	tcase_add_test(tc, test_conditional_and_call);
	tcase_add_test(tc, test_tuple_and_get_tuple_element_share_values);
	suite_add_tcase(s, tc);

	tc = tcase_create("nn");
	tcase_add_test(tc, test_batch_norm_training_inference_grad);
	tcase_add_test(tc, test_custom_calls_gelu_softmax_transfer);
	tcase_add_test(tc, test_rng_bit_generator_philox);
	tcase_add_test(tc, test_collectives_over_one_replica);
	tcase_add_test(tc, test_errors_name_the_instruction);
	suite_add_tcase(s, tc);

	tc = tcase_create("corpus");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_corpus_is_present);
	tcase_add_loop_test(tc, test_corpus_modules_run, 0, g_nsmall);
	tcase_add_test(tc, test_corpus_results_are_deterministic);
	suite_add_tcase(s, tc);

	/* the big modules and the full-size MobileNetV2 (~9 GB): the 'full' suite */
	tc = tcase_create("corpus-big");
	tcase_set_tags(tc, NCC_TEST_TAG_FULL);
	tcase_set_timeout(tc, 1800);
	tcase_add_loop_test(tc, test_corpus_big_modules_run, 0, g_nbig);
	tcase_add_test(tc, test_corpus_mobilenet_runs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	list_corpus();
	SRunner *sr = srunner_create(interp_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	for (int i = 0; i < g_nfiles; i++)
		free(g_files[i]);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
