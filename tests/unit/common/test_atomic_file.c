/* atomic_file.h and its users in libnscommon (.npy, snapshots): planted symlinks are never written through, writes are whole or nothing, appends never leave a torn piece. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/fs.h"
#include "neuronsim/npy.h"
#include "neuronsim/snapshot.h"

/* The code of a call's status; its message is left in buf and the status freed. */
#define STATUS_CODE(call, buf) ns_status_consume_message((call), (buf), sizeof(buf))

/* A status of fs.h the way these checks read it: 0, or -1 with the errno it
 * kept in errno and its message in buf; the status is freed. */
static int fs_rc(ns_status_t st, char *buf, size_t len)
{
	if (!st)
		return 0;
	int e = ns_status_errno(st);
	ns_status_consume_message(st, buf, len);
	errno = e;
	return -1;
}
#define FS_RC(call, buf) fs_rc((call), (buf), sizeof(buf))

static char g_dir[64];
static char g_victim[128];
static const char k_victim_text[] = "precious: must stay as it is\n";

static const char *in_dir(const char *name)
{
	static char bufs[4][512];
	static int k;
	char *b = bufs[k++ % 4];
	snprintf(b, 512, "%s/%s", g_dir, name);
	return b;
}

/* A fresh directory with a victim file outside it (what an attacker who can
 * write the output directory would like us to clobber). */
static void setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/atomic-file-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(g_victim, sizeof(g_victim), "%s.victim", g_dir);
	FILE *f = fopen(g_victim, "w");
	ck_assert_ptr_nonnull(f);
	fputs(k_victim_text, f);
	fclose(f);
}

static char *slurp(const char *path, size_t *out_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (out_len)
		*out_len = n;
	return buf;
}

static void victim_untouched(void)
{
	char *v = slurp(g_victim, NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v, k_victim_text);
	free(v);
}

static int n_entries(void)
{
	DIR *d = opendir(g_dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void teardown(void)
{
	DIR *d = opendir(g_dir);
	if (d) {
		for (struct dirent *e; (e = readdir(d));)
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    unlink(in_dir(e->d_name)) != 0)
				rmdir(in_dir(e->d_name)); /* a test's empty directory */
		closedir(d);
	}
	rmdir(g_dir);
	unlink(g_victim);
}

static bool is_symlink(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode);
}

START_TEST(test_write_replaces_planted_symlink_at_target)
{
	const char *out = in_dir("out.bin");
	ck_assert_int_eq(symlink(g_victim, out), 0);
	const char *step = NULL;
	ck_assert_int_eq(atomic_file_write_whole(out, "new", 3, 0640, &step), 0);
	victim_untouched();
	ck_assert(!is_symlink(out));
	char *got = slurp(out, NULL);
	ck_assert_str_eq(got, "new");
	free(got);
	struct stat sb;
	ck_assert_int_eq(stat(out, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 07777, 0640);
	ck_assert_int_eq(n_entries(), 1); /* no temporary left */
}
END_TEST

START_TEST(test_failed_write_leaves_target_and_no_temporary)
{
	const char *out = in_dir("keep.txt");
	ck_assert_int_eq(atomic_file_write_whole(out, "old", 3, 0644, NULL), 0);
	/* the stream fails on flush: a directory cannot be the target */
	const char *sub = in_dir("sub");
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	const char *step = NULL;
	ck_assert_int_eq(atomic_file_write_whole(sub, "x", 1, 0644, &step), -1);
	ck_assert_str_eq(step, "rename");
	ck_assert_int_eq(n_entries(), 2); /* keep.txt and sub: no temporary */
	atomic_file_t f;
	ck_assert_int_eq(atomic_file_open(&f, out, ATOMIC_FILE_MODE_UMASK, NULL), 0);
	ck_assert_int_eq(atomic_file_write(&f, "half", 4), 0);
	atomic_file_abort(&f); /* a writer that gives up */
	char *got = slurp(out, NULL);
	ck_assert_str_eq(got, "old");
	free(got);
	ck_assert_int_eq(n_entries(), 2);
	/* a missing directory is an error naming the step */
	ck_assert_int_eq(atomic_file_write_whole(in_dir("no/such"), "x", 1, 0644, &step), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_str_eq(step, "create");
}
END_TEST

/* The old .npy writer opened "PATH.tmpPID" without O_EXCL: a symlink planted
 * there (or at the target) made neuron-run -o clobber its target. */
START_TEST(test_npy_write_never_follows_planted_symlinks)
{
	const char *out = in_dir("y.npy");
	char tmp_old[300];
	snprintf(tmp_old, sizeof(tmp_old), "%s.tmp%ld", out, (long)getpid() % 100000);
	ck_assert_int_eq(symlink(g_victim, tmp_old), 0);
	ck_assert_int_eq(symlink(g_victim, out), 0);
	const float v[3] = { 1, 2, 3 };
	uint64_t shape[1] = { 3 };
	char err[256];
	ck_assert_int_eq(STATUS_CODE(npy_write_file(out, ISA_DT_F32, 1, shape, v), err), NS_STATUS_OK);
	victim_untouched();
	ck_assert(!is_symlink(out));
	npy_array_t a;
	ck_assert_int_eq(STATUS_CODE(npy_read_file(out, &a), err), NS_STATUS_OK);
	ck_assert_uint_eq(a.nbytes, sizeof(v));
	ck_assert_mem_eq(a.data, v, sizeof(v));
	npy_array_free(&a);
	ck_assert(is_symlink(tmp_old)); /* never touched either */
}
END_TEST

START_TEST(test_snapshot_write_never_follows_planted_symlink)
{
	const char *out = in_dir("s.decomposed_hlo_snapshot");
	ck_assert_int_eq(symlink(g_victim, out), 0);
	snapshot_meta_t meta = { .module_name = "m", .kind = "inputs" };
	float x[2] = { 1, 2 };
	snapshot_tensor_t t = { .name = "x", .role = SNAPSHOT_ROLE_INPUT, .dtype = ISA_DT_F32,
				.rank = 1, .shape = { 2 }, .size = sizeof(x), .data = x,
				.alias_input = -1 };
	char err[512];
	const char hlo[] = "HloModule m";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(out, &meta, hlo, sizeof(hlo) - 1, &t, 1), err, sizeof(err)),
			 NS_STATUS_OK);
	victim_untouched();
	ck_assert(!is_symlink(out));
	struct stat sb;
	ck_assert_int_eq(stat(out, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 0777, 0600);
}
END_TEST

START_TEST(test_append_refuses_symlink_and_is_whole_or_nothing)
{
	const char *log = in_dir("metrics.txt");
	ck_assert_int_eq(symlink(g_victim, log), 0);
	ck_assert_int_eq(atomic_file_append(log, "report\n", 7, 0644, NULL), -1);
	ck_assert_int_eq(errno, ELOOP);
	victim_untouched();
	ck_assert_int_eq(unlink(log), 0);
	/* a link of ours to a character device (XLA_METRICS_FILE=/dev/stdout) is
	 * followed: written in place */
	const char *dev = in_dir("to-zero");
	ck_assert_int_eq(symlink("/dev/zero", dev), 0);
	ck_assert_int_eq(atomic_file_append(dev, "report\n", 7, 0644, NULL), 0);
	ck_assert_int_eq(unlink(dev), 0);

	/* A file size limit makes the third report hit the "disk" part way: the
	 * file must keep the two whole reports, and a later report (once there is
	 * room) must follow them, not a torn piece. */
	char report[1000];
	memset(report, 'r', sizeof(report));
	report[sizeof(report) - 1] = '\n';
	ck_assert_int_eq(atomic_file_append(log, report, sizeof(report), 0644, NULL), 0);
	ck_assert_int_eq(atomic_file_append(log, report, sizeof(report), 0644, NULL), 0);
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim = { 2500, 2500 };
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim.rlim_max = old.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	ck_assert_int_eq(atomic_file_append(log, report, sizeof(report), 0644, NULL), -1);
	ck_assert(errno == EFBIG || errno == ENOSPC);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	struct stat sb;
	ck_assert_int_eq(stat(log, &sb), 0);
	ck_assert_int_eq(sb.st_size, 2 * (off_t)sizeof(report));
	ck_assert_int_eq(atomic_file_append(log, "end\n", 4, 0644, NULL), 0);
	size_t len;
	char *got = slurp(log, &len);
	ck_assert_uint_eq(len, 2 * sizeof(report) + 4);
	ck_assert_str_eq(got + 2 * sizeof(report), "end\n");
	free(got);
}
END_TEST

START_TEST(test_umask_mode_like_open)
{
	mode_t old = umask(027);
	const char *out = in_dir("u.txt");
	ck_assert_int_eq(atomic_file_write_whole(out, "u", 1, ATOMIC_FILE_MODE_UMASK, NULL), 0);
	umask(old);
	struct stat sb;
	ck_assert_int_eq(stat(out, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 0777, 0640);
}
END_TEST

/* A device or FIFO is written in place, never renamed over: "-o /dev/null" as
 * root used to replace the device node with a regular file. Stands in here: a
 * FIFO of ours (read back) and /dev/zero through a link of ours. */
START_TEST(test_devices_and_fifos_written_in_place)
{
	const char *fifo = in_dir("pipe");
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	int rfd = open(fifo, O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(rfd, 0);
	const char *step = NULL;
	ck_assert_int_eq(atomic_file_write_whole(fifo, "through", 7, 0644, &step), 0);
	char buf[16] = "";
	ck_assert_int_eq(read(rfd, buf, sizeof(buf)), 7);
	ck_assert_mem_eq(buf, "through", 7);
	close(rfd);
	struct stat sb;
	ck_assert_int_eq(lstat(fifo, &sb), 0);
	ck_assert(S_ISFIFO(sb.st_mode)); /* still the FIFO */
	const char *link = in_dir("zero-link");
	ck_assert_int_eq(symlink("/dev/zero", link), 0);
	ck_assert_int_eq(atomic_file_write_whole(link, "x", 1, 0644, &step), 0);
	ck_assert(is_symlink(link)); /* followed, not replaced */
	ck_assert_int_eq(n_entries(), 2); /* no temporary */
}
END_TEST

/* ns_read_file: whole files and pipes, NUL after the bytes, the requested
 * alignment, and messages naming the path and what failed. */
START_TEST(test_read_file_whole_aligned_and_its_errors)
{
	const char *p = in_dir("data");
	char text[200000];
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)('a' + i % 26);
	ck_assert_int_eq(atomic_file_write_whole(p, text, sizeof(text), 0644, NULL), 0);
	void *buf;
	size_t len;
	char err[512];
	ck_assert_int_eq(FS_RC(ns_read_file(p, 0, 64, &buf, &len), err), 0);
	ck_assert_uint_eq(len, sizeof(text));
	ck_assert_mem_eq(buf, text, len);
	ck_assert_int_eq(((char *)buf)[len], 0);
	ck_assert_uint_eq((uintptr_t)buf % 64, 0);
	free(buf);
	/* exactly at the limit, then one byte over */
	ck_assert_int_eq(FS_RC(ns_read_file(p, sizeof(text), 0, &buf, &len), err), 0);
	ck_assert_uint_eq(len, sizeof(text));
	free(buf);
	ck_assert_int_eq(FS_RC(ns_read_file(p, sizeof(text) - 1, 0, &buf, &len), err), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_ptr_null(buf);
	ck_assert_ptr_nonnull(strstr(err, "it is 200000 bytes, over the limit of 199999 bytes"));
	ck_assert_ptr_nonnull(strstr(err, p));
	/* a pipe (no size up front) over the limit */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "%s.fifo", p);
	ck_assert_int_eq(mkfifo(cmd, 0600), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(cmd, O_WRONLY);
		ssize_t w = fd >= 0 ? write(fd, text, sizeof(text)) : -1;
		_exit(w == (ssize_t)sizeof(text) ? 0 : 1);
	}
	ck_assert_int_eq(FS_RC(ns_read_file(cmd, 1000, 0, &buf, &len), err), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_ptr_nonnull(strstr(err, "more than the limit of 1000 bytes"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(cmd);
	/* missing, a directory */
	ck_assert_int_eq(FS_RC(ns_read_file(in_dir("missing"), 0, 0, &buf, &len), err), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "cannot read '"));
	ck_assert_ptr_nonnull(strstr(err, "missing': No such file or directory"));
	ck_assert_int_eq(FS_RC(ns_read_file(g_dir, 0, 0, &buf, &len), err), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_ptr_nonnull(strstr(err, "': it is a directory"));
	/* empty file */
	ck_assert_int_eq(atomic_file_write_whole(p, "", 0, 0644, NULL), 0);
	ck_assert_int_eq(FS_RC(ns_read_file(p, 0, 64, &buf, &len), err), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(((char *)buf)[0], 0);
	free(buf);
}
END_TEST

/* ns_read_file_ex: NS_READ_REGULAR refuses a FIFO without waiting for a writer
 * and a directory; NS_READ_EXACT refuses bytes that are not the size the file had
 * when opened (a /proc file: regular, size 0, yet it has bytes). */
START_TEST(test_read_file_ex_regular_and_exact)
{
	const char *p = in_dir("exact");
	ck_assert_int_eq(atomic_file_write_whole(p, "0123456789", 10, 0644, NULL), 0);
	void *buf = (void *)0x1;
	size_t len;
	char err[512];
	ck_assert_int_eq(FS_RC(ns_read_file_ex(p, 0, 64, NS_READ_EXACT, &buf, &len), err), 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(buf, "0123456789", 10);
	ck_assert_uint_eq((uintptr_t)buf % 64, 0);
	free(buf);
	char fifo[600];
	snprintf(fifo, sizeof(fifo), "%s.fifo", p);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	/* no writer: without O_NONBLOCK the open would never return */
	ck_assert_int_eq(FS_RC(ns_read_file_ex(fifo, 0, 0, NS_READ_REGULAR, &buf, &len), err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(buf);
	ck_assert_ptr_nonnull(strstr(err, fifo));
	ck_assert_ptr_nonnull(strstr(err, "': not a regular file"));
	unlink(fifo);
	ck_assert_int_eq(FS_RC(ns_read_file_ex(g_dir, 0, 0, NS_READ_EXACT, &buf, &len), err), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_ptr_nonnull(strstr(err, "': not a regular file (a directory)"));
	ck_assert_int_eq(FS_RC(ns_read_file_ex("/proc/self/status", 0, 0, NS_READ_EXACT, &buf, &len), err), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_ptr_null(buf);
	ck_assert_ptr_nonnull(strstr(err, "cannot read '/proc/self/status': it changed size while "
					  "being read (0 bytes when opened, "));
	/* the same file without the flag reads as it is */
	ck_assert_int_eq(FS_RC(ns_read_file_ex("/proc/self/status", 0, 0, 0, &buf, &len), err), 0);
	ck_assert_uint_gt(len, 0);
	free(buf);
}
END_TEST

/* ns_mkdir_p_status: creates the missing directories; a failure names the
 * component that could not be made; a path that is a file is not a directory. */
START_TEST(test_mkdir_p_names_the_failing_component)
{
	char path[600], err[700];
	snprintf(path, sizeof(path), "%s/a/b/c/", g_dir);
	ck_assert_int_eq(FS_RC(ns_mkdir_p_status(path, 0700), err), 0);
	struct stat sb;
	ck_assert_int_eq(stat(in_dir("a/b/c"), &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert_int_eq(ns_mkdir_p(path, 0700), 0); /* existing ones are fine */
	/* a file where a directory should be: the first component below it fails */
	const char *file = in_dir("a/plain");
	ck_assert_int_eq(atomic_file_write_whole(file, "x", 1, 0644, NULL), 0);
	snprintf(path, sizeof(path), "%s/x/y", file);
	ck_assert_int_eq(FS_RC(ns_mkdir_p_status(path, 0700), err), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	char want[700];
	snprintf(want, sizeof(want), "cannot create directory '%s/x': Not a directory", file);
	ck_assert_str_eq(err, want);
	/* the path itself is a file */
	ck_assert_int_eq(FS_RC(ns_mkdir_p_status(file, 0700), err), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	snprintf(want, sizeof(want), "'%s' is not a directory", file);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(ns_mkdir_p(file, 0700), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	/* a directory this user may not write: the component below it is named */
	if (geteuid() != 0) {
		const char *ro = in_dir("ro");
		ck_assert_int_eq(mkdir(ro, 0500), 0);
		snprintf(path, sizeof(path), "%s/d/e", ro);
		ck_assert_int_eq(FS_RC(ns_mkdir_p_status(path, 0700), err), -1);
		ck_assert_int_eq(errno, EACCES);
		snprintf(want, sizeof(want), "cannot create directory '%s/d': Permission denied", ro);
		ck_assert_str_eq(err, want);
		chmod(ro, 0700);
	}
	ck_assert_int_eq(FS_RC(ns_mkdir_p_status("", 0700), err), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(err, "cannot create a directory: empty path");
	/* the fixture's teardown removes files and empty directories, not trees */
	unlink(file);
	rmdir(in_dir("a/b/c"));
	rmdir(in_dir("a/b"));
	rmdir(in_dir("a"));
	rmdir(in_dir("ro"));
}
END_TEST

static Suite *atomic_file_suite(void)
{
	Suite *s = suite_create("atomic_file");
	TCase *tc = tcase_create("atomic_file");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_write_replaces_planted_symlink_at_target);
	tcase_add_test(tc, test_failed_write_leaves_target_and_no_temporary);
	tcase_add_test(tc, test_npy_write_never_follows_planted_symlinks);
	tcase_add_test(tc, test_snapshot_write_never_follows_planted_symlink);
	tcase_add_test(tc, test_append_refuses_symlink_and_is_whole_or_nothing);
	tcase_add_test(tc, test_umask_mode_like_open);
	tcase_add_test(tc, test_devices_and_fifos_written_in_place);
	tcase_add_test(tc, test_read_file_whole_aligned_and_its_errors);
	tcase_add_test(tc, test_read_file_ex_regular_and_exact);
	tcase_add_test(tc, test_mkdir_p_names_the_failing_component);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(atomic_file_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
