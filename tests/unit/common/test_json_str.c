/* Check tests of ns_json_string_lossy (json_str.h): UTF-8 kept as it is, other bytes as '?', long invalid text cut to 1023 bytes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/json_str.h"

START_TEST(test_valid_utf8_is_kept)
{
	json_t *j = ns_json_string_lossy("matmul.3 \xc3\xa9t\xc3\xa9");
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(j), "matmul.3 \xc3\xa9t\xc3\xa9");
	json_decref(j);
}
END_TEST

START_TEST(test_invalid_bytes_become_question_marks)
{
	/* a two-byte character cut after its first byte, then a stray 0xff */
	json_t *j = ns_json_string_lossy("ab\xc3 c\xff");
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(j), "ab? c?");
	json_decref(j);
	char *big = malloc(5000);
	ck_assert_ptr_nonnull(big);
	memset(big, 'x', 4999);
	big[4999] = '\0';
	big[10] = (char)0x80;
	j = ns_json_string_lossy(big);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(strlen(json_string_value(j)), 1023);
	ck_assert_int_eq(json_string_value(j)[10], '?');
	json_decref(j);
	free(big);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json_str");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_valid_utf8_is_kept);
	tcase_add_test(tc, test_invalid_bytes_become_question_marks);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
