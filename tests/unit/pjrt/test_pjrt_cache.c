/* Tests of the PJRT plugin's default persistent compile cache (pjrt/compile.c, docs/pjrt.md): NEURON_COMPILE_CACHE_URL moves it, NEURON_CC_FLAGS --cache_dir overrides it and --no_cache turns it off; entries are written atomically under DIR/neuronsim-cc-VERSION+BUILD/MODULE_KEY/model.neff, a second compile is a hit (logged in torch-neuronx's words and format), a corrupt entry is recompiled with a warning, an unusable directory or an s3:// URL is warned about once and never fails a compile, and concurrent compilers leave a valid entry. Every test uses its own temporary directory (never /var/tmp/neuron-compile-cache). */
#include <dirent.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pjrt_test_util.h"

static const char *const add_hlo =
	"HloModule cache_add\n"
	"ENTRY main {\n"
	"  p0 = f32[2,3] parameter(0)\n"
	"  p1 = f32[2,3] parameter(1)\n"
	"  ROOT s = f32[2,3] add(p0, p1)\n"
	"}\n";

static char g_dir[256];     /* this test's temporary directory */
static char g_errpath[300]; /* where stderr goes */

/* Each test runs in its own forked process (check's default): fresh environment,
 * fresh plugin state. stderr goes to a file the test reads back. */
static void setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/pjrt_cache_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(g_errpath, sizeof(g_errpath), "%s.stderr", g_dir);
	ck_assert_ptr_nonnull(freopen(g_errpath, "w", stderr));
	setvbuf(stderr, NULL, _IONBF, 0);
	unsetenv("NEURON_CC_FLAGS");
	setenv("NEURON_COMPILE_CACHE_URL", g_dir, 1);
}

static void teardown(void)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", g_dir, g_errpath);
	if (system(cmd) != 0)
		fprintf(stdout, "warning: could not remove %s\n", g_dir);
}

static char *stderr_text(void)
{
	fflush(stderr);
	size_t n;
	char *t = T_read_file(g_errpath, &n);
	ck_assert_ptr_nonnull(t);
	return t;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* Finds the single DIR/neuronsim-cc-*+* / MODULE_* entry directory under root;
 * returns how many entry directories there are (path: the last one). */
static int find_entries(const char *root, char *path, size_t size)
{
	int found = 0;
	DIR *d = opendir(root);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "neuronsim-cc-", 13) != 0)
			continue;
		ck_assert_msg(strchr(e->d_name, '+') != NULL, "no build id in '%s'", e->d_name);
		char vdir[600];
		snprintf(vdir, sizeof(vdir), "%s/%s", root, e->d_name);
		DIR *v = opendir(vdir);
		ck_assert_ptr_nonnull(v);
		struct dirent *m;
		while ((m = readdir(v)) != NULL) {
			if (strncmp(m->d_name, "MODULE_", 7) != 0)
				continue;
			found++;
			snprintf(path, size, "%s/%s", vdir, m->d_name);
		}
		closedir(v);
	}
	closedir(d);
	return found;
}

/* The entry directory holds model.neff and nothing else (no temporary files). */
static void assert_entry_complete(const char *entry)
{
	DIR *d = opendir(entry);
	ck_assert_ptr_nonnull(d);
	int files = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		files++;
		ck_assert_msg(strcmp(e->d_name, "model.neff") == 0, "stray file %s in %s", e->d_name, entry);
	}
	closedir(d);
	ck_assert_int_eq(files, 1);
}

static void compile_once(void)
{
	PJRT_Client *c = T_client();
	T_loaded_destroy(T_compile_text(c, add_hlo));
	T_client_destroy(c);
}

START_TEST(test_default_cache_stores_then_hits)
{
	compile_once();
	char entry[1024];
	ck_assert_int_eq(find_entries(g_dir, entry, sizeof(entry)), 1);
	assert_entry_complete(entry);
	/* torch-neuronx's lines (docs/pjrt.md): the cache directory, then the
	 * compile under the entry's key, in its log format. */
	char *t = stderr_text();
	char want[1400];
	ck_assert_int_eq(count(t, "Using a cached neff"), 0);
	snprintf(want, sizeof(want), "  %ld  INFO ||NEURON_CACHE||: Compile cache path: %s\n", (long)getpid(), g_dir);
	ck_assert_msg(count(t, want) == 1, "no '%s' in: %s", want, t);
	snprintf(want, sizeof(want), "  INFO ||NEURON_CC_WRAPPER||: Compilation Successfully Completed for model.%s.hlo\n",
		 strrchr(entry, '/') + 1);
	ck_assert_msg(count(t, want) == 1, "no '%s' in: %s", want, t);
	regex_t re;
	ck_assert_int_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.000[0-9]{3}:  [0-9]+  INFO "
				      "\\|\\|NEURON_CACHE\\|\\|: ", REG_EXTENDED | REG_NEWLINE), 0);
	ck_assert_msg(regexec(&re, t, 0, NULL, 0) == 0, "not torch-neuronx's log format: %s", t);
	regfree(&re);
	free(t);
	/* a second client (as a second run of the script would) compiles nothing */
	compile_once();
	t = stderr_text();
	snprintf(want, sizeof(want), "  INFO ||NEURON_CC_WRAPPER||: Using a cached neff at %s/model.neff. Exiting with "
		 "a successfully compiled graph.\n", entry);
	ck_assert_msg(count(t, want) == 1, "no '%s' in: %s", want, t);
	ck_assert_int_eq(count(t, "Compile cache path"), 1); /* once per process and directory */
	ck_assert_int_eq(count(t, "neuronsim-cc: compile cache hit"), 0); /* the plugin says it instead */
	free(t);
	ck_assert_int_eq(find_entries(g_dir, entry, sizeof(entry)), 1);
}
END_TEST

START_TEST(test_corrupt_entry_is_recompiled)
{
	compile_once();
	char entry[1024], neff[1100];
	ck_assert_int_eq(find_entries(g_dir, entry, sizeof(entry)), 1);
	snprintf(neff, sizeof(neff), "%s/model.neff", entry);
	size_t good_len;
	char *good = T_read_file(neff, &good_len);
	ck_assert_ptr_nonnull(good);
	/* flip bytes in the middle: the checksum no longer matches */
	FILE *f = fopen(neff, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, (long)(good_len / 2), SEEK_SET);
	fputs("CORRUPT!", f);
	fclose(f);
	compile_once();
	char *t = stderr_text();
	ck_assert_msg(strstr(t, "is corrupt") && strstr(t, "recompiling"), "no corruption warning: %s", t);
	ck_assert_int_eq(count(t, "Using a cached neff"), 0);
	free(t);
	/* recompiled and stored again: the entry is the good NEFF once more */
	size_t len;
	char *now = T_read_file(neff, &len);
	ck_assert_ptr_nonnull(now);
	ck_assert_uint_eq(len, good_len);
	ck_assert(memcmp(now, good, len) == 0);
	free(now);
	free(good);
	assert_entry_complete(entry);
}
END_TEST

START_TEST(test_no_cache_flag_turns_it_off)
{
	setenv("NEURON_CC_FLAGS", "--model-type=transformer --no_cache", 1);
	compile_once();
	compile_once();
	char entry[1024];
	ck_assert_int_eq(find_entries(g_dir, entry, sizeof(entry)), 0);
	char *t = stderr_text();
	ck_assert_int_eq(count(t, "compile cache"), 0);
	ck_assert_int_eq(count(t, "||NEURON_"), 0);
	free(t);
}
END_TEST

START_TEST(test_cache_dir_flag_overrides_url)
{
	char other[300];
	snprintf(other, sizeof(other), "%s/flagged", g_dir);
	char flags[400];
	snprintf(flags, sizeof(flags), "--cache_dir=%s", other);
	setenv("NEURON_CC_FLAGS", flags, 1);
	compile_once();
	char entry[1024];
	ck_assert_int_eq(find_entries(other, entry, sizeof(entry)), 1);
	ck_assert_int_eq(find_entries(g_dir, entry, sizeof(entry)), 0);
}
END_TEST

START_TEST(test_unusable_directory_warns_once_and_compiles)
{
	/* a regular file where the directory should be: mkdir fails even as root */
	char file[300], below[400];
	snprintf(file, sizeof(file), "%s/not-a-dir", g_dir);
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(below, sizeof(below), "%s/cache", file);
	setenv("NEURON_COMPILE_CACHE_URL", below, 1);
	compile_once();
	compile_once();
	compile_once();
	char *t = stderr_text();
	ck_assert_msg(count(t, "warning: compile cache: cannot create or write directory") == 1,
		      "expected one warning: %s", t);
	ck_assert_ptr_nonnull(strstr(t, "NEURON_COMPILE_CACHE_URL"));
	ck_assert_ptr_nonnull(strstr(t, "compiling without the cache"));
	free(t);
}
END_TEST

START_TEST(test_s3_url_is_refused_once_without_a_local_directory)
{
	ck_assert_int_eq(chdir(g_dir), 0);
	setenv("NEURON_COMPILE_CACHE_URL", "s3://bucket/neuron-cache", 1);
	compile_once();
	compile_once();
	char *t = stderr_text();
	ck_assert_msg(count(t, "S3 caches are not supported") == 1, "expected one warning: %s", t);
	free(t);
	ck_assert_int_ne(access("s3:", F_OK), 0);
}
END_TEST

START_TEST(test_concurrent_compilers_leave_a_valid_entry)
{
	enum { N = 4 };
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			PJRT_Client *c = T_client();
			PJRT_Error *err = NULL;
			PJRT_LoadedExecutable *le = T_compile(c, "hlo_text", add_hlo, strlen(add_hlo), 1, &err);
			_exit(err == NULL && le != NULL ? 0 : 1);
		}
	}
	for (int i = 0; i < N; i++) {
		int st;
		ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compiler %d failed", i);
	}
	char entry[1024];
	ck_assert_int_eq(find_entries(g_dir, entry, sizeof(entry)), 1);
	assert_entry_complete(entry);
	/* whichever rename won, the entry is whole: the next compile is a hit, no warning */
	compile_once();
	char *t = stderr_text();
	ck_assert_int_ge(count(t, "Using a cached neff at"), 1);
	ck_assert_int_eq(count(t, "is corrupt"), 0);
	free(t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pjrt_cache");
	TCase *tc = tcase_create("pjrt_cache");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_default_cache_stores_then_hits);
	tcase_add_test(tc, test_corrupt_entry_is_recompiled);
	tcase_add_test(tc, test_no_cache_flag_turns_it_off);
	tcase_add_test(tc, test_cache_dir_flag_overrides_url);
	tcase_add_test(tc, test_unusable_directory_warns_once_and_compiles);
	tcase_add_test(tc, test_s3_url_is_refused_once_without_a_local_directory);
	tcase_add_test(tc, test_concurrent_compilers_leave_a_valid_entry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
