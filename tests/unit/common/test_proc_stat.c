/* Check tests of the /proc/PID/stat parser (proc_stat.h): commands with spaces and parentheses, the fields kept, malformed and missing files, CPU ticks of a process and of the machine; and a process's core list (procstats.h). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "neuronsim/proc_stat.h"
#include "neuronsim/procstats.h"

/* A command of ") (" and spaces: the fields count from the last ')'. */
START_TEST(test_parse_counts_fields_after_the_last_paren)
{
	ns_proc_stat_t s;
	const char *line = "123 (a) (b c) S 1 123 123 0 -1 4194560 100 0 0 0 7 3 0 0 20 -5 1 0 "
			   "987654 1000 50 18446744073709551615\n";
	ck_assert_int_eq(ns_proc_stat_parse(line, &s), 0);
	ck_assert_int_eq(s.state, 'S');
	ck_assert_uint_eq(s.utime, 7);
	ck_assert_uint_eq(s.stime, 3);
	ck_assert_uint_eq(s.start_time, 987654);
}
END_TEST

START_TEST(test_parse_refuses_malformed_lines)
{
	ns_proc_stat_t s = { .state = 'x', .utime = 1, .stime = 2, .start_time = 3 };
	static const char *const bad[] = {
		"",
		"123 no-parens S 1",
		"123 (cmd)",
		"123 (cmd) ",
		/* cut before field 22 */
		"123 (cmd) R 1 123 123 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0",
		/* utime not a number */
		"123 (cmd) R 1 123 123 0 -1 4194560 100 0 0 0 x7 3 0 0 20 0 1 0 9 1",
		/* start time negative */
		"123 (cmd) R 1 123 123 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 -9 1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(ns_proc_stat_parse(bad[i], &s) == -1, "accepted '%s'", bad[i]);
		ck_assert_int_eq(s.state, 'x');
		ck_assert_uint_eq(s.start_time, 3);
	}
}
END_TEST

/* This process: running, its start time as the stats files record it; a reaped
 * child's pid has no file. */
START_TEST(test_read_this_process_and_a_dead_one)
{
	ns_proc_stat_t s;
	ck_assert_int_eq(ns_proc_stat_read(getpid(), &s), 0);
	ck_assert_int_eq(s.state, 'R');
	ck_assert_uint_gt(s.start_time, 0);
	uint64_t st = 0;
	ck_assert_int_eq(procstats_proc_start_time(getpid(), &st), 0);
	ck_assert_uint_eq(st, s.start_time);
	/* utime and stime as sscanf reads them from the same kind of line */
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	unsigned long long ut, stm;
	ck_assert_int_eq(sscanf(strrchr(buf, ')') + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stm), 2);
	ck_assert_int_eq(ns_proc_stat_parse(buf, &s), 0);
	ck_assert_uint_eq(s.utime, ut);
	ck_assert_uint_eq(s.stime, stm);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	ck_assert_int_eq(ns_proc_stat_read(pid, &s), -1);
	ck_assert_int_eq(procstats_proc_start_time(pid, &st), -1);
}
END_TEST

/* A process's (utime, stime) pair and the machine's CPU line, as neuron-top
 * and neuron-monitor read them; a gone process leaves out untouched. */
START_TEST(test_cpu_ticks_of_this_process_and_the_machine)
{
	uint64_t t[2] = { 0, 0 };
	ck_assert_int_eq(ns_proc_stat_cpu_ticks(getpid(), t), 0);
	volatile double x = 0;
	for (uint64_t spin = 0; t[0] + t[1] == 0 && spin < 4000000000ull; spin++) {
		x = x + 1.0; /* burn a clock tick so the sum is positive */
		if ((spin & 0xfffff) == 0)
			ck_assert_int_eq(ns_proc_stat_cpu_ticks(getpid(), t), 0);
	}
	ck_assert_uint_gt(t[0] + t[1], 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	uint64_t gone[2] = { 7, 9 };
	ck_assert_int_eq(ns_proc_stat_cpu_ticks(pid, gone), -1);
	ck_assert_uint_eq(gone[0], 7);
	ck_assert_uint_eq(gone[1], 9);
	uint64_t sys[7] = { 0 };
	ck_assert_int_eq(ns_proc_stat_system_cpu(sys), 0);
	uint64_t sum = 0;
	for (int i = 0; i < 7; i++)
		sum += sys[i];
	ck_assert_uint_gt(sum, 0);
}
END_TEST

/* A process's cores as ranges (neuron-ls, neuron-top, neuron-monitor), the
 * text for none, and a short buffer. */
START_TEST(test_core_list_ranges)
{
	static procstats_snap_t s;
	static const uint32_t g[] = { 0, 1, 2, 3, 5, 7, 8 };
	memset(&s, 0, sizeof(s));
	char buf[64];
	ck_assert_str_eq(procstats_core_list(&s, "-", buf, sizeof(buf)), "-");
	ck_assert_str_eq(procstats_core_list(&s, "", buf, sizeof(buf)), "");
	s.n_cores = sizeof(g) / sizeof(g[0]);
	for (uint32_t i = 0; i < s.n_cores; i++)
		s.cores[i].global = g[i];
	ck_assert_str_eq(procstats_core_list(&s, "-", buf, sizeof(buf)), "0-3,5,7-8");
	s.n_cores = 1;
	ck_assert_str_eq(procstats_core_list(&s, "-", buf, sizeof(buf)), "0");
	s.n_cores = 7;
	char small[6];
	ck_assert_str_eq(procstats_core_list(&s, "-", small, sizeof(small)), "0-3,5");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proc_stat");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_parse_counts_fields_after_the_last_paren);
	tcase_add_test(tc, test_parse_refuses_malformed_lines);
	tcase_add_test(tc, test_read_this_process_and_a_dead_one);
	tcase_add_test(tc, test_cpu_ticks_of_this_process_and_the_machine);
	tcase_add_test(tc, test_core_list_ranges);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
