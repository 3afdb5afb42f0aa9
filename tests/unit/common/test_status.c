/* Check tests of the status object (status.h): codes and messages, annotation on the way up, errno mapping, formatting, and statuses made while memory runs out. */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/status.h"

/* ---- allocation failure injection (linked with -Wl,--wrap=malloc) -------- */

static atomic_long alloc_count;
static atomic_long fail_from; /* 0 = never; else every allocation from the n-th on fails */

void *__real_malloc(size_t);
void *__wrap_malloc(size_t);

void *__wrap_malloc(size_t n)
{
	long f = atomic_load(&fail_from);
	if (f && atomic_fetch_add(&alloc_count, 1) + 1 >= f)
		return NULL;
	return __real_malloc(n);
}

static void fail_allocations_from(long n)
{
	atomic_store(&alloc_count, 0);
	atomic_store(&fail_from, n);
}

/* ---- helpers ------------------------------------------------------------- */

static ns_status_t parse_digit(const char *s, int *out)
{
	if (!s || s[0] < '0' || s[0] > '9')
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "'%s' is not a digit", s ? s : "(null)");
	*out = s[0] - '0';
	return NS_OK;
}

static ns_status_t parse_pair(const char *a, const char *b, int *out_sum)
{
	int x = 0, y = 0;
	NS_RETURN_IF_ERROR(parse_digit(a, &x));
	NS_RETURN_IF_ERROR_F(parse_digit(b, &y), "second of pair (%s, %s)", a, b);
	*out_sum = x + y;
	return NS_OK;
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_ok_is_null_and_reads_as_ok)
{
	ns_status_t st = NS_OK;
	ck_assert(ns_status_is_ok(st));
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_OK);
	ck_assert_str_eq(ns_status_message(st), "");
	ck_assert_int_eq(ns_status_errno(st), 0);
	ck_assert_ptr_null(ns_status_annotate(st, "never %s", "used"));
	char buf[16];
	ck_assert_uint_eq(ns_status_format(st, buf, sizeof(buf)), 2);
	ck_assert_str_eq(buf, "OK");
	ns_status_free(st);
	ck_assert_int_eq(ns_status_consume_code(st), NS_STATUS_OK);
}
END_TEST

START_TEST(test_make_keeps_code_and_message)
{
	ns_status_t st = ns_status_make(NS_STATUS_DATA_LOSS, "section %d: checksum %#x, want %#x", 3, 0xab, 0xcd);
	ck_assert(!ns_status_is_ok(st));
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_DATA_LOSS);
	ck_assert_str_eq(ns_status_message(st), "section 3: checksum 0xab, want 0xcd");
	ck_assert_int_eq(ns_status_errno(st), 0);
	ck_assert_int_eq(ns_status_consume_code(st), NS_STATUS_DATA_LOSS);
}
END_TEST

/* OK is not a failure code: a status made with it still fails. */
START_TEST(test_make_with_ok_code_is_unknown)
{
	ns_status_t st = ns_status_make(NS_STATUS_OK, "oops");
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_UNKNOWN);
	ns_status_free(st);
	st = ns_status_make((ns_status_code_t)99, "out of enum");
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_UNKNOWN);
	ns_status_free(st);
}
END_TEST

START_TEST(test_annotations_go_in_front_outermost_first)
{
	int sum = -1;
	ns_status_t st = parse_pair("1", "x", &sum);
	ck_assert_int_eq(sum, -1);
	st = ns_status_annotate(st, "reading %s line %d", "pairs.txt", 7);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_str_eq(ns_status_message(st), "reading pairs.txt line 7: second of pair (1, x): 'x' is not a digit");
	ns_status_free(st);

	/* NS_RETURN_IF_ERROR passes the first failure up as it is */
	st = parse_pair("y", "2", &sum);
	ck_assert_str_eq(ns_status_message(st), "'y' is not a digit");
	ns_status_free(st);

	ck_assert_ptr_null(parse_pair("4", "5", &sum));
	ck_assert_int_eq(sum, 9);
}
END_TEST

/* A layer's own code rides along and survives annotation; not on NULL or on
 * a static status. */
START_TEST(test_detail_survives_annotation)
{
	ns_status_t st = ns_status_with_detail(ns_status_make(NS_STATUS_UNIMPLEMENTED, "NEFF 9.0"), 10);
	ck_assert_int_eq(ns_status_detail(st), 10);
	st = ns_status_annotate(st, "nrt_load");
	ck_assert_int_eq(ns_status_detail(st), 10);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_UNIMPLEMENTED);
	ns_status_free(st);
	ck_assert_ptr_null(ns_status_with_detail(NS_OK, 4));
	ck_assert_int_eq(ns_status_detail(NS_OK), 0);
	fail_allocations_from(1);
	st = ns_status_with_detail(ns_status_make(NS_STATUS_ABORTED, "x"), 4);
	fail_allocations_from(0);
	ck_assert_int_eq(ns_status_detail(st), 0);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_ABORTED);
	ns_status_free(st);
}
END_TEST

START_TEST(test_errno_maps_to_canonical_codes)
{
	ns_status_t st = ns_status_make_errno(ENOENT, "cannot open '%s': %s", "a.npy", strerror(ENOENT));
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_NOT_FOUND);
	ck_assert_int_eq(ns_status_errno(st), ENOENT);
	ck_assert_str_eq(ns_status_message(st), "cannot open 'a.npy': No such file or directory");
	st = ns_status_annotate(st, "input 0");
	ck_assert_int_eq(ns_status_errno(st), ENOENT); /* the errno survives annotation */
	ns_status_free(st);

	static const struct { int e; ns_status_code_t c; } map[] = {
		{ 0, NS_STATUS_OK }, { EACCES, NS_STATUS_PERMISSION_DENIED },
		{ EPERM, NS_STATUS_PERMISSION_DENIED }, { ENOSPC, NS_STATUS_RESOURCE_EXHAUSTED },
		{ ENOMEM, NS_STATUS_RESOURCE_EXHAUSTED }, { EDQUOT, NS_STATUS_RESOURCE_EXHAUSTED },
		{ EISDIR, NS_STATUS_INVALID_ARGUMENT }, { EEXIST, NS_STATUS_ALREADY_EXISTS },
		{ ETIMEDOUT, NS_STATUS_DEADLINE_EXCEEDED }, { EINTR, NS_STATUS_UNAVAILABLE },
		{ ENOSYS, NS_STATUS_UNIMPLEMENTED }, { EIO, NS_STATUS_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		ck_assert_msg(ns_status_code_from_errno(map[i].e) == map[i].c, "errno %d", map[i].e);
}
END_TEST

START_TEST(test_format_and_copy_cut_like_snprintf)
{
	ns_status_t st = ns_status_make(NS_STATUS_NOT_FOUND, "no tensor 'x'");
	char buf[64];
	ck_assert_uint_eq(ns_status_format(st, buf, sizeof(buf)), strlen("NOT_FOUND: no tensor 'x'"));
	ck_assert_str_eq(buf, "NOT_FOUND: no tensor 'x'");
	char small[6];
	ck_assert_uint_eq(ns_status_copy_message(st, small, sizeof(small)), strlen("no tensor 'x'"));
	ck_assert_str_eq(small, "no te");
	ck_assert_uint_eq(ns_status_copy_message(st, NULL, 0), strlen("no tensor 'x'"));
	ck_assert_int_eq(ns_status_consume_message(st, buf, sizeof(buf)), NS_STATUS_NOT_FOUND);
	ck_assert_str_eq(buf, "no tensor 'x'");
	ck_assert_int_eq(ns_status_consume_message(NS_OK, buf, sizeof(buf)), NS_STATUS_OK);
	ck_assert_str_eq(buf, "");
	ck_assert_str_eq(ns_status_code_str(NS_STATUS_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
	ck_assert_str_eq(ns_status_code_str((ns_status_code_t)-1), "UNKNOWN_CODE");
	ck_assert_str_eq(ns_status_code_str(NS_STATUS_CODE_COUNT), "UNKNOWN_CODE");
}
END_TEST

/* Out of memory, making a status still fails with the right code, and the
 * static status it gets can be annotated and freed as any other. */
START_TEST(test_make_never_fails_when_memory_runs_out)
{
	fail_allocations_from(1);
	ns_status_t st = ns_status_make(NS_STATUS_PERMISSION_DENIED, "cannot open %s", "x");
	ns_status_t st2 = ns_status_make_errno(ENOSPC, "disk full");
	fail_allocations_from(0);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_PERMISSION_DENIED);
	ck_assert_str_eq(ns_status_message(st), "out of memory formatting an error message");
	ck_assert_int_eq(ns_status_code(st2), NS_STATUS_RESOURCE_EXHAUSTED);
	/* with memory back, a static status is annotated into a real one */
	st = ns_status_annotate(st, "loading %s", "m");
	ck_assert_str_eq(ns_status_message(st), "loading m: out of memory formatting an error message");
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_PERMISSION_DENIED);
	ns_status_free(st);
	ns_status_free(st2);
	ns_status_free(st2); /* static: freeing it again is harmless */
	/* errno survives reading and freeing a status */
	st = ns_status_make_errno(ENOSPC, "full");
	errno = EXDEV;
	char buf[8];
	ck_assert_int_eq(ns_status_consume_message(st, buf, sizeof(buf)), NS_STATUS_RESOURCE_EXHAUSTED);
	ck_assert_int_eq(errno, EXDEV);
}
END_TEST

/* An annotation that cannot be allocated leaves the status as it was. */
START_TEST(test_annotate_out_of_memory_keeps_the_message)
{
	ns_status_t st = ns_status_make(NS_STATUS_OUT_OF_RANGE, "index 9 of 4");
	fail_allocations_from(1);
	st = ns_status_annotate(st, "tensor %s", "w");
	fail_allocations_from(0);
	ck_assert_int_eq(ns_status_code(st), NS_STATUS_OUT_OF_RANGE);
	ck_assert_str_eq(ns_status_message(st), "index 9 of 4");
	ns_status_free(st);
}
END_TEST

/* A long message (beyond any fixed buffer) is kept whole. */
START_TEST(test_long_messages_are_whole)
{
	char big[5000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ns_status_t st = ns_status_make(NS_STATUS_INTERNAL, "%s", big);
	st = ns_status_annotate(st, "ctx");
	ck_assert_uint_eq(strlen(ns_status_message(st)), strlen("ctx: ") + sizeof(big) - 1);
	ns_status_free(st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("status");
	tcase_add_test(tc, test_ok_is_null_and_reads_as_ok);
	tcase_add_test(tc, test_make_keeps_code_and_message);
	tcase_add_test(tc, test_make_with_ok_code_is_unknown);
	tcase_add_test(tc, test_annotations_go_in_front_outermost_first);
	tcase_add_test(tc, test_detail_survives_annotation);
	tcase_add_test(tc, test_errno_maps_to_canonical_codes);
	tcase_add_test(tc, test_format_and_copy_cut_like_snprintf);
	tcase_add_test(tc, test_make_never_fails_when_memory_runs_out);
	tcase_add_test(tc, test_annotate_out_of_memory_keeps_the_message);
	tcase_add_test(tc, test_long_messages_are_whole);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
