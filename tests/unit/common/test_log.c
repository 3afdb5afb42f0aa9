/* Check tests of the one log path (log.h): the line's layout on stderr and in a file, QUIET, long lines, and a log file that cannot be appended to. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "neuronsim/log.h"

/* stderr goes to a temporary file from capture_begin to capture_end, which returns it. */
static int saved_fd = -1;
static FILE *capture_file;

static void capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	ck_assert_ptr_nonnull(capture_file);
	saved_fd = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_fd, 0);
	ck_assert_int_ge(dup2(fileno(capture_file), STDERR_FILENO), 0);
}

static char *capture_end(void)
{
	fflush(stderr);
	dup2(saved_fd, STDERR_FILENO);
	close(saved_fd);
	long n = ftell(capture_file);
	char *buf = calloc(1, (size_t)n + 1);
	rewind(capture_file);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, capture_file), (size_t)n);
	fclose(capture_file);
	return buf;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	(void)n;
	fclose(f);
	return buf;
}

START_TEST(test_stderr_line_is_tag_head_message)
{
	ns_log_sink_t sink = { .dest = NS_LOG_TO_STDERR, .tag = "nrt" };
	ns_log_sink_t untagged = { .dest = NS_LOG_TO_STDERR };
	capture_begin();
	ns_log_write(&sink, NS_LOG_WARN, "WARN  TDRV: ", "device %d: %s", 3, "busy");
	ns_log_write(&untagged, NS_LOG_INFO, NULL, "plain");
	ns_log_write(&sink, NS_LOG_QUIET, "", "never written");
	ns_log_write(&sink, (ns_log_level_t)9, "", "nor this");
	char *out = capture_end();
	ck_assert_str_eq(out, "nrt: WARN  TDRV: device 3: busy\nplain\n");
	free(out);
}
END_TEST

/* A line longer than 2 KiB is cut, and still ends with its newline. */
START_TEST(test_long_lines_are_cut_whole)
{
	char big[4000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ns_log_sink_t sink = { .dest = NS_LOG_TO_STDERR, .tag = "t" };
	capture_begin();
	ns_log_write(&sink, NS_LOG_ERROR, "E ", "%s", big);
	ns_log_write(&sink, NS_LOG_ERROR, "E ", "after");
	char *out = capture_end();
	char *nl = strchr(out, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_eq((size_t)(nl - out), 2046);
	ck_assert_str_eq(nl + 1, "t: E after\n");
	free(out);
}
END_TEST

START_TEST(test_file_lines_are_appended)
{
	char dir[] = "/tmp/ns-log-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/rt.log", dir);
	ns_log_sink_t sink = { .dest = NS_LOG_TO_FILE, .tag = "nrt", .path = path };
	capture_begin();
	ns_log_write(&sink, NS_LOG_ERROR, "ERROR ", "one");
	ns_log_write(&sink, NS_LOG_DEBUG, "DEBUG ", "two %d", 2);
	char *err = capture_end();
	ck_assert_str_eq(err, "");
	free(err);
	char *text = read_file(path);
	ck_assert_str_eq(text, "nrt: ERROR one\nnrt: DEBUG two 2\n");
	free(text);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* The line is not lost when the file cannot be written: it goes to stderr,
 * after why. */
START_TEST(test_unwritable_file_falls_back_to_stderr)
{
	ns_log_sink_t sink = { .dest = NS_LOG_TO_FILE, .tag = "nrt",
			       .path = "/nonexistent-dir-of-ns-log/rt.log" };
	capture_begin();
	ns_log_write(&sink, NS_LOG_ERROR, "ERROR ", "lost? %s", "no");
	char *out = capture_end();
	ck_assert_msg(strncmp(out, "nrt: ERROR cannot append to log file /nonexistent-dir-of-ns-log/rt.log (",
			      strlen("nrt: ERROR cannot append to log file /nonexistent-dir-of-ns-log/rt.log (")) == 0,
		      "%s", out);
	ck_assert_msg(strstr(out, "No such file or directory): nrt: ERROR lost? no\n") != NULL, "%s", out);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");
	tcase_add_test(tc, test_stderr_line_is_tag_head_message);
	tcase_add_test(tc, test_long_lines_are_cut_whole);
	tcase_add_test(tc, test_file_lines_are_appended);
	tcase_add_test(tc, test_unwritable_file_falls_back_to_stderr);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
