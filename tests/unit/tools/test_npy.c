/* Check tests of the .npy reader/writer: round trips, every dtype, versions,
 * and malformed or hostile headers that must fail with a message, never crash. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "neuronsim/npy.h"

/* The code of a call's status; its message is left in buf and the status freed. */
#define STATUS_CODE(call, buf) ns_status_consume_message((call), (buf), sizeof(buf))

/* Builds a .npy image with the given version and literal header dict, padded
 * the way NumPy pads it, followed by data. */
static uint8_t *make_npy(int major, const char *dict, const void *data,
			 size_t nbytes, size_t *out_size)
{
	size_t prefix = major == 1 ? 10 : 12;
	size_t n = strlen(dict);
	size_t hlen = (n + 1 + 63 + prefix) / 64 * 64 - prefix;
	uint8_t *buf = calloc(1, prefix + hlen + nbytes);
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)major;
	buf[7] = 0;
	buf[8] = (uint8_t)hlen;
	buf[9] = (uint8_t)(hlen >> 8);
	if (major != 1) {
		buf[10] = (uint8_t)(hlen >> 16);
		buf[11] = (uint8_t)(hlen >> 24);
	}
	memcpy(buf + prefix, dict, n);
	memset(buf + prefix + n, ' ', hlen - n - 1);
	buf[prefix + hlen - 1] = '\n';
	if (nbytes)
		memcpy(buf + prefix + hlen, data, nbytes);
	*out_size = prefix + hlen + nbytes;
	return buf;
}

/* Expects dict (with nbytes of zero data) to fail with st and a message
 * containing needle, leaving the output zeroed. */
static void expect_fail(int major, const char *dict, size_t nbytes,
			ns_status_code_t st, const char *needle)
{
	size_t size;
	void *zeros = calloc(1, nbytes + 1);
	uint8_t *buf = make_npy(major, dict, zeros, nbytes, &size);
	npy_array_t a;
	memset(&a, 0x5a, sizeof(a));
	char err[256] = "";
	ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size, &a), err), st);
	ck_assert_msg(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
	ck_assert_ptr_null(a.data);
	ck_assert_int_eq(a.rank, 0);
	free(buf);
	free(zeros);
}

START_TEST(test_npy_roundtrip_f32_2d)
{
	float v[6] = { 1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e30f };
	uint64_t shape[2] = { 2, 3 };
	void *buf;
	size_t size;
	char err[256];
	ck_assert_int_eq(STATUS_CODE(npy_encode(ISA_DT_F32, 2, shape, v, &buf, &size), err), NS_STATUS_OK);
	/* NumPy's alignment promise: data starts at a multiple of 64. */
	ck_assert_uint_eq((size - sizeof(v)) % 64, 0);
	ck_assert(strstr((char *)buf + 10, "'shape': (2, 3)") != NULL);
	npy_array_t a;
	ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size, &a), err), NS_STATUS_OK);
	ck_assert_int_eq(a.dtype, ISA_DT_F32);
	ck_assert_uint_eq(a.rank, 2);
	ck_assert_uint_eq(a.shape[0], 2);
	ck_assert_uint_eq(a.shape[1], 3);
	ck_assert_uint_eq(a.count, 6);
	ck_assert_uint_eq(a.nbytes, sizeof(v));
	ck_assert_mem_eq(a.data, v, sizeof(v));
	npy_array_free(&a);
	ck_assert_ptr_null(a.data);
	free(buf);
}
END_TEST

START_TEST(test_npy_roundtrip_every_dtype)
{
	static const isa_dtype_t dts[] = { ISA_DT_F32, ISA_DT_F16, ISA_DT_BF16, ISA_DT_S32,
					   ISA_DT_S64, ISA_DT_U32, ISA_DT_U64, ISA_DT_U8,
					   ISA_DT_PRED, ISA_DT_S8, ISA_DT_S16, ISA_DT_U16 };
	uint8_t data[5 * 8];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 37 + 1);
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		const char *descr = npy_dtype_descr(dts[d]);
		ck_assert_ptr_nonnull(descr);
		ck_assert_int_eq(npy_dtype_from_descr(descr), dts[d]);
		uint64_t shape[1] = { 5 };
		void *buf;
		size_t size;
		char err[256];
		ck_assert_int_eq(STATUS_CODE(npy_encode(dts[d], 1, shape, data, &buf, &size), err), NS_STATUS_OK);
		/* A 1-tuple must keep its comma to be a tuple for Python. */
		ck_assert(strstr((char *)buf + 10, "(5,)") != NULL);
		npy_array_t a;
		ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size, &a), err), NS_STATUS_OK);
		ck_assert_int_eq(a.dtype, dts[d]);
		ck_assert_uint_eq(a.nbytes, 5 * isa_dtype_size(dts[d]));
		ck_assert_mem_eq(a.data, data, a.nbytes);
		npy_array_free(&a);
		free(buf);
	}
}
END_TEST

START_TEST(test_npy_scalar_and_empty)
{
	int64_t v = -42;
	void *buf;
	size_t size;
	char err[256];
	ck_assert_int_eq(STATUS_CODE(npy_encode(ISA_DT_S64, 0, NULL, &v, &buf, &size), err), NS_STATUS_OK);
	ck_assert(strstr((char *)buf + 10, "'shape': ()") != NULL);
	npy_array_t a;
	ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size, &a), err), NS_STATUS_OK);
	ck_assert_uint_eq(a.rank, 0);
	ck_assert_uint_eq(a.count, 1);
	ck_assert_int_eq(*(int64_t *)a.data, -42);
	npy_array_free(&a);
	free(buf);

	uint64_t shape[2] = { 3, 0 };
	ck_assert_int_eq(STATUS_CODE(npy_encode(ISA_DT_F32, 2, shape, NULL, &buf, &size), err), NS_STATUS_OK);
	ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size, &a), err), NS_STATUS_OK);
	ck_assert_uint_eq(a.count, 0);
	ck_assert_uint_eq(a.nbytes, 0);
	ck_assert_ptr_nonnull(a.data);
	npy_array_free(&a);
	free(buf);
}
END_TEST

START_TEST(test_npy_versions_2_and_3)
{
	int32_t v[2] = { 7, -7 };
	for (int major = 2; major <= 3; major++) {
		size_t size;
		uint8_t *buf = make_npy(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
					v, sizeof(v), &size);
		npy_array_t a;
		char err[256] = "";
		ck_assert_msg(STATUS_CODE(npy_parse(buf, size, &a), err) == NS_STATUS_OK, "%s", err);
		ck_assert_mem_eq(a.data, v, sizeof(v));
		npy_array_free(&a);
		free(buf);
	}
}
END_TEST

START_TEST(test_npy_accepts_numpy_spellings)
{
	/* Key order, double quotes, no trailing comma, Python 2 longs, '=' order,
	 * and the ml_dtypes bf16 spelling are all things real files contain. */
	uint16_t v[4] = { 0x3f80, 0x4000, 0xbf80, 0 };
	const char *dicts[] = {
		"{'shape': (2, 2), 'fortran_order': False, 'descr': '<V2'}",
		"{\"descr\": \"|V2\", \"fortran_order\": False, \"shape\": (2L, 2L)}",
		"{'descr':'V2','fortran_order':False,'shape':(2,2),}",
		"{'descr': '=u2', 'fortran_order': False, 'shape': (4,), }",
	};
	isa_dtype_t want[] = { ISA_DT_BF16, ISA_DT_BF16, ISA_DT_BF16, ISA_DT_U16 };
	for (size_t i = 0; i < 4; i++) {
		size_t size;
		uint8_t *buf = make_npy(1, dicts[i], v, sizeof(v), &size);
		npy_array_t a;
		char err[256] = "";
		ck_assert_msg(STATUS_CODE(npy_parse(buf, size, &a), err) == NS_STATUS_OK, "%s: %s", dicts[i], err);
		ck_assert_int_eq(a.dtype, want[i]);
		ck_assert_uint_eq(a.count, 4);
		npy_array_free(&a);
		free(buf);
	}
}
END_TEST

START_TEST(test_npy_rejects_fortran_order)
{
	expect_fail(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
		    NS_STATUS_UNIMPLEMENTED, "Fortran order");
}
END_TEST

START_TEST(test_npy_rejects_unsupported_dtypes)
{
	expect_fail(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
		    NS_STATUS_UNIMPLEMENTED, "'<f8' is not supported");
	expect_fail(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
		    NS_STATUS_UNIMPLEMENTED, "big-endian");
	expect_fail(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
		    NS_STATUS_UNIMPLEMENTED, "not supported");
	expect_fail(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
		    NS_STATUS_UNIMPLEMENTED, "structured");
	expect_fail(1, "{'descr': '<f4444444444444444444444444444444444', 'fortran_order': False, 'shape': (2,), }",
		    8, NS_STATUS_INVALID_ARGUMENT, "longer than");
}
END_TEST

START_TEST(test_npy_rejects_malformed_headers)
{
	static const struct { const char *dict; const char *needle; } cases[] = {
		{ "", "dict literal" },
		{ "[1, 2]", "dict literal" },
		{ "{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'" },
		{ "{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'" },
		{ "{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x'" },
		{ "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate" },
		{ "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "True or False" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "tuple" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", "',' or ')'" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2,", "'shape'" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", "overflows 64" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", "overflows" },
		{ "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'" },
		{ "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'" },
		{ "{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'" },
		{ "{'descr': '<f4\\n', 'fortran_order': False, 'shape': (2,)}", "escape" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after the closing" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "',' or '}'" },
		{ "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\x01", "control byte" },
		{ "{'descr': 5, 'fortran_order': False, 'shape': (2,)}", "quoted string" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t size;
		uint8_t zeros[8] = { 0 };
		uint8_t *buf = make_npy(1, cases[i].dict, zeros, 8, &size);
		npy_array_t a;
		char err[256] = "";
		ck_assert_msg(STATUS_CODE(npy_parse(buf, size, &a), err) != NS_STATUS_OK,
			      "accepted: %s", cases[i].dict);
		ck_assert_msg(strstr(err, cases[i].needle) != NULL, "case %zu: message '%s' lacks '%s'",
			      i, err, cases[i].needle);
		ck_assert_ptr_null(a.data);
		free(buf);
	}
}
END_TEST

START_TEST(test_npy_rejects_bad_prefix_and_sizes)
{
	char err[256];
	npy_array_t a;
	npy_header_t h;
	ck_assert_int_eq(STATUS_CODE(npy_parse("", 0, &a), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert(strstr(err, "magic") != NULL);
	ck_assert_int_eq(STATUS_CODE(npy_parse("\x93NUMPX\x01\x00", 8, &a), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(STATUS_CODE(npy_parse("\x93NUMPY\x04\x00\x10\x00", 10, &a), err),
			 NS_STATUS_UNIMPLEMENTED);
	ck_assert(strstr(err, "version 4.0") != NULL);
	ck_assert_int_eq(STATUS_CODE(npy_parse("\x93NUMPY\x01\x01\x10\x00", 10, &a), err),
			 NS_STATUS_UNIMPLEMENTED);
	ck_assert_int_eq(STATUS_CODE(npy_parse("\x93NUMPY\x02\x00\x10\x00", 10, &a), err),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert(strstr(err, "header length") != NULL);
	/* Header length pointing past the end of the file. */
	ck_assert_int_eq(STATUS_CODE(npy_parse("\x93NUMPY\x01\x00\xff\xff{}", 12, &a), err),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert(strstr(err, "truncated") != NULL);
	/* A 4 GiB header length from a corrupt v2 file must not be trusted. */
	ck_assert_int_eq(STATUS_CODE(npy_parse_header("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12, &h), err),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert(strstr(err, "exceeds") != NULL);
	ck_assert_int_eq(STATUS_CODE(npy_parse(NULL, 5, &a), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(STATUS_CODE(npy_parse("x", 1, NULL), err), NS_STATUS_INVALID_ARGUMENT);

	/* Data shorter and longer than the shape says. */
	float v[3] = { 1, 2, 3 };
	size_t size;
	uint8_t *buf = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
				v, sizeof(v), &size);
	ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size - 1, &a), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert(strstr(err, "truncated") != NULL);
	free(buf);
	buf = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v,
		       sizeof(v), &size);
	ck_assert_int_eq(STATUS_CODE(npy_parse(buf, size, &a), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert(strstr(err, "after the array data") != NULL);
	free(buf);
}
END_TEST

/* Every truncation of a valid file fails cleanly (run under ASan in make test). */
START_TEST(test_npy_every_truncation_fails_cleanly)
{
	int16_t v[7] = { 1, 2, 3, 4, 5, 6, 7 };
	uint64_t shape[1] = { 7 };
	void *buf;
	size_t size;
	char err[256];
	ck_assert_int_eq(STATUS_CODE(npy_encode(ISA_DT_S16, 1, shape, v, &buf, &size), err), NS_STATUS_OK);
	for (size_t n = 0; n < size; n++) {
		/* A fresh allocation of exactly n bytes so ASan sees any overread. */
		void *cut = malloc(n ? n : 1);
		memcpy(cut, buf, n);
		npy_array_t a;
		ck_assert_int_ne(STATUS_CODE(npy_parse(cut, n, &a), err), NS_STATUS_OK);
		ck_assert_ptr_null(a.data);
		free(cut);
	}
	free(buf);
}
END_TEST

/* Flipping every header byte to a few hostile values never crashes. */
START_TEST(test_npy_corrupt_bytes_never_crash)
{
	float v[4] = { 1, 2, 3, 4 };
	uint64_t shape[2] = { 2, 2 };
	void *buf;
	size_t size;
	char err[256];
	ck_assert_int_eq(STATUS_CODE(npy_encode(ISA_DT_F32, 2, shape, v, &buf, &size), err), NS_STATUS_OK);
	static const uint8_t vals[] = { 0, '\'', '(', ')', ',', '{', '}', '9', 0xff, ' ' };
	size_t hdr_end = size - sizeof(v);
	for (size_t i = 0; i < hdr_end; i++) {
		for (size_t k = 0; k < sizeof(vals); k++) {
			uint8_t *c = malloc(size);
			memcpy(c, buf, size);
			c[i] = vals[k];
			npy_array_t a;
			ns_status_code_t st = STATUS_CODE(npy_parse(c, size, &a), err);
			if (st == NS_STATUS_OK) {
				ck_assert_uint_le(a.nbytes, size);
				npy_array_free(&a);
			} else {
				ck_assert_ptr_null(a.data);
				ck_assert(err[0] != '\0');
			}
			free(c);
		}
	}
	free(buf);
}
END_TEST

START_TEST(test_npy_file_roundtrip_and_errors)
{
	char dir[] = "/tmp/npy-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/a.npy", dir);
	uint32_t v[3] = { 1, 0xffffffffu, 5 };
	uint64_t shape[2] = { 3, 1 };
	char err[256];
	ck_assert_int_eq(STATUS_CODE(npy_write_file(path, ISA_DT_U32, 2, shape, v), err), NS_STATUS_OK);
	npy_array_t a;
	ck_assert_int_eq(STATUS_CODE(npy_read_file(path, &a), err), NS_STATUS_OK);
	ck_assert_int_eq(a.dtype, ISA_DT_U32);
	ck_assert_mem_eq(a.data, v, sizeof(v));
	npy_array_free(&a);
	unlink(path);

	snprintf(path, sizeof(path), "%s/missing.npy", dir);
	ck_assert_int_eq(STATUS_CODE(npy_read_file(path, &a), err), NS_STATUS_NOT_FOUND);
	ck_assert(strstr(err, "missing.npy") != NULL);
	ns_status_t st = npy_read_file(path, &a);
	ck_assert_int_eq(ns_status_errno(st), ENOENT); /* the errno is kept for callers */
	ns_status_free(st);
	/* A parse failure is annotated with the file's path, once. */
	snprintf(path, sizeof(path), "%s/text.npy", dir);
	FILE *t = fopen(path, "w");
	ck_assert_ptr_nonnull(t);
	fputs("hello", t);
	fclose(t);
	char want[320]; /* path (256) and the message */
	snprintf(want, sizeof(want), "%s: not a .npy file (missing the \\x93NUMPY magic)", path);
	ck_assert_int_eq(STATUS_CODE(npy_read_file(path, &a), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_str_eq(err, want);
	unlink(path);
	snprintf(path, sizeof(path), "%s/no-such-dir/x.npy", dir);
	ck_assert_int_eq(STATUS_CODE(npy_write_file(path, ISA_DT_U32, 2, shape, v), err), NS_STATUS_NOT_FOUND);
	ck_assert(strstr(err, "no-such-dir") != NULL);
	/* A directory is not a .npy file; the message names it. */
	ck_assert_int_ne(STATUS_CODE(npy_read_file(dir, &a), err), NS_STATUS_OK);
	ck_assert(strstr(err, dir) != NULL);
	ck_assert_int_eq(STATUS_CODE(npy_write_file(path, ISA_DT_INVALID, 0, NULL, v), err),
			 NS_STATUS_INVALID_ARGUMENT);
	/* The final rename fails (the target is a non-empty directory): the error
	 * names both files and the temporary file is gone. */
	char sub[256], inner[300];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ck_assert_int_eq(mkdir(sub, 0777), 0);
	snprintf(inner, sizeof(inner), "%s/keep", sub);
	FILE *f = fopen(inner, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(STATUS_CODE(npy_write_file(sub, ISA_DT_U32, 2, shape, v), err), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_msg(strstr(err, "rename") != NULL, "%s", err);
	unlink(inner);
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(rmdir(dir), 0); /* fails if a temporary file was left */
}
END_TEST

static Suite *npy_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *tc = tcase_create("npy");
	tcase_add_test(tc, test_npy_roundtrip_f32_2d);
	tcase_add_test(tc, test_npy_roundtrip_every_dtype);
	tcase_add_test(tc, test_npy_scalar_and_empty);
	tcase_add_test(tc, test_npy_versions_2_and_3);
	tcase_add_test(tc, test_npy_accepts_numpy_spellings);
	tcase_add_test(tc, test_npy_rejects_fortran_order);
	tcase_add_test(tc, test_npy_rejects_unsupported_dtypes);
	tcase_add_test(tc, test_npy_rejects_malformed_headers);
	tcase_add_test(tc, test_npy_rejects_bad_prefix_and_sizes);
	tcase_add_test(tc, test_npy_every_truncation_fails_cleanly);
	tcase_add_test(tc, test_npy_corrupt_bytes_never_crash);
	tcase_add_test(tc, test_npy_file_roundtrip_and_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(npy_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
