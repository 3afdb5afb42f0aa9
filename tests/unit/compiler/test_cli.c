/* Check tests of the neuronsim-cc command line: compile, compile cache (miss, hit, corrupt entry), analyze JSON, usage and malformed-input errors. */
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "neuronsim/neff.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/unit/compiler/meson.build)"
#endif

static const char *g_cc;   /* the neuronsim-cc under test ($NEURONSIM_CC) */
static char g_dir[256];    /* per-test scratch directory */
static char g_out[1 << 16], g_err[1 << 16]; /* last run's stdout / stderr */

/* The torch-neuronx tutorial's failure shape: complex values from an aten::mul. */
static const char k_c64_hlo[] =
	"HloModule fft_module\n"
	"\n"
	"ENTRY main {\n"
	"  p0 = f32[4]{0} parameter(0), metadata={op_type=\"xla__device_data\" source_file=\"t.py\" source_line=1}\n"
	"  a = f32[4]{0} add(p0, p0), metadata={op_type=\"aten__add\" source_file=\"t.py\" source_line=22}\n"
	"  c = c64[4]{0} convert(a), metadata={op_type=\"aten__mul\" source_file=\"t.py\" source_line=24}\n"
	"  m = c64[4]{0} multiply(c, c), metadata={op_type=\"aten__mul\" source_file=\"t.py\" source_line=24}\n"
	"  ROOT r = (f32[4]{0}, c64[4]{0}) tuple(a, m)\n"
	"}\n";

static const char k_f64_hlo[] =
	"HloModule f64_module\n"
	"ENTRY main {\n"
	"  p0 = f32[8]{0} parameter(0)\n"
	"  d = f64[8]{0} convert(p0), metadata={op_type=\"aten__to\" source_file=\"d.py\" source_line=9}\n"
	"  ROOT n = f64[8]{0} negate(d)\n"
	"}\n";

static const char k_f64_bitcast_hlo[] =
	"HloModule f64_bits\n"
	"ENTRY main {\n"
	"  p0 = f64[8]{0} parameter(0)\n"
	"  ROOT b = s64[8]{0} bitcast-convert(p0), metadata={op_type=\"aten__view\" source_file=\"d.py\" source_line=3}\n"
	"}\n";

static void slurp(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Runs neuronsim-cc with the NULL-terminated arguments in g_dir, stdout and stderr
 * captured into g_out / g_err. Returns the exit status; a death by signal fails the
 * test on the spot (malformed input must never crash the compiler). */
static int run_cc(const char *env, ...)
{
	const char *argv[64];
	int argc = 0;
	argv[argc++] = g_cc;
	va_list ap;
	va_start(ap, env);
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL && argc < 63)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	char outp[512], errp[512];
	snprintf(outp, sizeof(outp), "%s/.stdout", g_dir);
	snprintf(errp, sizeof(errp), "%s/.stderr", g_dir);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (chdir(g_dir) != 0)
			_exit(126);
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fo, 1);
		dup2(fe, 2);
		unsetenv("NEURON_CC_FLAGS");
		if (env)
			putenv((char *)env);
		execv(g_cc, (char *const *)argv);
		_exit(127);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	slurp(outp, g_out, sizeof(g_out));
	slurp(errp, g_err, sizeof(g_err));
	ck_assert_msg(!WIFSIGNALED(status), "neuronsim-cc died of signal %d; stderr: %s",
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0, g_err);
	return WEXITSTATUS(status);
}

static void write_file(const char *name, const void *data, size_t size)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	FILE *f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, size, f), size);
	fclose(f);
}

static void *read_all(const char *path, size_t *out_size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = NULL;
	ck_assert_int_eq(posix_memalign(&buf, 64, (size_t)n + 1), 0);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*out_size = (size_t)n;
	return buf;
}

static void assert_valid_neff(const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	size_t n = 0;
	void *d = read_all(p, &n);
	ck_assert_msg(d != NULL, "%s was not written", p);
	neff_view_t v;
	char why[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(d, n, &v),
						why, sizeof(why)) == NS_STATUS_OK, "%s: %s", p, why);
	free(d);
}

static void setup(void)
{
	g_cc = getenv("NEURONSIM_CC");
	ck_assert_msg(g_cc != NULL, "set NEURONSIM_CC to the neuronsim-cc binary");
	snprintf(g_dir, sizeof(g_dir), "/tmp/ncc-test-cli-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", g_dir);
}

#define CORPUS(name) NCC_HLO_CORPUS "/" name
#define SMALL_MODULE CORPUS("misc-linear.hlo")

/* ----------------------------------------------------------------- usage */

START_TEST(test_help_and_version)
{
	ck_assert_int_eq(run_cc(NULL, "--help", NULL), 0);
	const char *words[] = {"compile IN.hlo", "analyze IN.hlo", "-O0", "--dump-ir", "--cores",
			       "--cache-dir", "--no-cache", "--analyze-verbosity", "NEURON_CC_FLAGS",
			       "Exit status"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		ck_assert_msg(strstr(g_out, words[i]), "--help does not mention %s", words[i]);
	ck_assert_int_eq(run_cc(NULL, "--version", NULL), 0);
	ck_assert_ptr_nonnull(strstr(g_out, "neuronsim-cc "));
}
END_TEST

START_TEST(test_usage_errors_exit_2)
{
	ck_assert_int_eq(run_cc(NULL, NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "frobnicate", "x.hlo", NULL), 2);
	ck_assert_ptr_nonnull(strstr(g_err, "frobnicate"));
	ck_assert_int_eq(run_cc(NULL, "compile", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--bogus", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "-O7", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cores", "0", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cores", "x", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "-o", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "compile", "a.hlo", "b.hlo", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "analyze", SMALL_MODULE, "--cache-dir", "/tmp", NULL), 2);
	ck_assert_int_eq(run_cc(NULL, "analyze", SMALL_MODULE, "--analyze-verbosity", "9", NULL), 2);
}
END_TEST

/* --------------------------------------------------------------- compile */

START_TEST(test_compile_writes_valid_neff_at_each_level)
{
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "-o", "o2.neff", NULL) == 0, "%s", g_err);
	assert_valid_neff("o2.neff");
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "-O0", "-o", "o0.neff", NULL) == 0, "%s",
		      g_err);
	assert_valid_neff("o0.neff");
	ck_assert_msg(run_cc(NULL, "compile", "-O1", SMALL_MODULE, "--output=o1.neff", NULL) == 0, "%s",
		      g_err);
	assert_valid_neff("o1.neff");
	/* default output name: IN.neff in the current directory */
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "--no-cache", NULL) == 0, "%s", g_err);
	assert_valid_neff("misc-linear.neff");
}
END_TEST

START_TEST(test_compile_dump_ir_writes_files)
{
	char dump[512];
	/* a missing directory is created */
	snprintf(dump, sizeof(dump), "%s/dumps/sub", g_dir);
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "-O2", "--dump-ir", dump, "-o", "d.neff",
			     NULL) == 0, "%s", g_err);
	assert_valid_neff("d.neff");
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "test -n \"$(ls -A '%s')\"", dump);
	ck_assert_msg(system(cmd) == 0, "--dump-ir wrote nothing into %s", dump);
	/* a directory that cannot be created: exit 5, the path named */
	write_file("plain", "x", 1);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--dump-ir", "plain/sub", "-o", "e.neff",
				NULL), 5);
	ck_assert_ptr_nonnull(strstr(g_err, "plain/sub"));
}
END_TEST

START_TEST(test_compile_cores_option)
{
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "--cores", "2", "-o", "c2.neff", NULL) == 0,
		      "%s", g_err);
	char p[512];
	snprintf(p, sizeof(p), "%s/c2.neff", g_dir);
	size_t n;
	void *d = read_all(p, &n);
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(d, n, &v), NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(v.meta->n_cores, 2);
	free(d);
}
END_TEST

START_TEST(test_compile_output_unwritable_exits_5)
{
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "-o", "/nonexistent-dir/x.neff", NULL), 5);
	ck_assert_ptr_nonnull(strstr(g_err, "/nonexistent-dir/x.neff"));
}
END_TEST

/* ----------------------------------------------------------------- cache */

/* "compile cache hit: KEY -> PATH": returns PATH (static), or NULL. */
static const char *hit_path(void)
{
	static char path[1024];
	const char *h = strstr(g_err, "compile cache hit: ");
	if (!h)
		return NULL;
	const char *arrow = strstr(h, " -> ");
	if (!arrow)
		return NULL;
	arrow += 4;
	size_t n = strcspn(arrow, "\n");
	snprintf(path, sizeof(path), "%.*s", (int)n, arrow);
	return path;
}

START_TEST(test_cache_miss_then_hit_without_compiling)
{
	char cache[512];
	snprintf(cache, sizeof(cache), "%s/cache", g_dir);
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-v", "-o", "a.neff",
			     NULL) == 0, "%s", g_err);
	ck_assert_ptr_null(strstr(g_err, "compile cache hit"));
	ck_assert_msg(strstr(g_err, "debug: compiled "), "a miss compiles: %s", g_err);
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-v", "-o", "b.neff",
			     NULL) == 0, "%s", g_err);
	const char *p = hit_path();
	ck_assert_msg(p != NULL, "no hit line: %s", g_err);
	ck_assert_int_eq(access(p, R_OK), 0);
	ck_assert_msg(strstr(g_err, "debug: compiled ") == NULL, "a hit must not compile: %s", g_err);
	/* same bytes either way */
	char pa[512], pb[512];
	snprintf(pa, sizeof(pa), "%s/a.neff", g_dir);
	snprintf(pb, sizeof(pb), "%s/b.neff", g_dir);
	size_t na, nb;
	void *a = read_all(pa, &na), *b = read_all(pb, &nb);
	ck_assert_uint_eq(na, nb);
	ck_assert_mem_eq(a, b, na);
	free(a);
	free(b);
	/* a different opt level is a different entry */
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "-O0", "--cache-dir", cache, "-o",
				"c.neff", NULL), 0);
	ck_assert_ptr_null(strstr(g_err, "compile cache hit"));
	/* --no-cache: neither read nor written */
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--no-cache", "--cache-dir", cache,
				"-o", "d.neff", NULL), 0);
	ck_assert_ptr_null(strstr(g_err, "compile cache hit"));
}
END_TEST

START_TEST(test_cache_dir_from_neuron_cc_flags)
{
	static char env[700];
	snprintf(env, sizeof(env), "NEURON_CC_FLAGS=--model-type=transformer --cache_dir=%s/envcache "
				   "--retry_failed_compilation", g_dir);
	ck_assert_msg(run_cc(env, "compile", SMALL_MODULE, "-v", "-o", "a.neff", NULL) == 0, "%s", g_err);
	/* the other flags are tolerated and noted at debug level */
	ck_assert_ptr_nonnull(strstr(g_err, "--model-type=transformer"));
	ck_assert_int_eq(run_cc(env, "compile", SMALL_MODULE, "-o", "b.neff", NULL), 0);
	const char *p = hit_path();
	ck_assert_msg(p && strstr(p, "/envcache/"), "no hit under envcache: %s", g_err);
}
END_TEST

START_TEST(test_cache_corrupt_entry_is_recompiled)
{
	char cache[512];
	snprintf(cache, sizeof(cache), "%s/cache", g_dir);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-o", "a.neff",
				NULL), 0);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-o", "a.neff",
				NULL), 0);
	char entry[1024];
	ck_assert_ptr_nonnull(hit_path());
	snprintf(entry, sizeof(entry), "%s", hit_path());
	/* damage the entry: garbage in the middle */
	FILE *f = fopen(entry, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, 200, SEEK_SET);
	fputs("garbage garbage garbage", f);
	fclose(f);
	ck_assert_msg(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-o", "b.neff",
			     NULL) == 0, "%s", g_err);
	ck_assert_msg(strstr(g_err, "corrupt"), "corruption not reported: %s", g_err);
	ck_assert_ptr_null(strstr(g_err, "compile cache hit"));
	assert_valid_neff("b.neff");
	/* the recompiled entry replaced the bad one */
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-o", "c.neff",
				NULL), 0);
	ck_assert_ptr_nonnull(hit_path());
	/* an empty entry file is handled the same way */
	ck_assert_int_eq(truncate(entry, 0), 0);
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", cache, "-o", "d.neff",
				NULL), 0);
	ck_assert_ptr_nonnull(strstr(g_err, "corrupt"));
	assert_valid_neff("d.neff");
}
END_TEST


/* Eight compilers of the same module into one cache at once: all succeed, the entry
 * is valid and no temporary file is left behind. */
START_TEST(test_cache_concurrent_compilers_do_not_corrupt_it)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && for i in 1 2 3 4 5 6 7 8; do '%s' compile '%s' --cache-dir cache "
		 "-o out$i.neff 2>err$i.txt || echo FAIL$i >> fails.txt & done; wait; "
		 "test ! -e fails.txt && test -z \"$(find cache -name '*.tmp-*')\"",
		 g_dir, g_cc, SMALL_MODULE);
	ck_assert_int_eq(system(cmd), 0);
	for (int i = 1; i <= 8; i++) {
		char name[32];
		snprintf(name, sizeof(name), "out%d.neff", i);
		assert_valid_neff(name);
	}
	ck_assert_int_eq(run_cc(NULL, "compile", SMALL_MODULE, "--cache-dir", "cache", "-o", "z.neff",
				NULL), 0);
	ck_assert_ptr_nonnull(hit_path());
}
END_TEST

/* --------------------------------------------------------------- analyze */

static json_t *load_report(const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	json_error_t jerr;
	json_t *root = json_load_file(p, 0, &jerr);
	ck_assert_msg(root != NULL, "%s is not JSON: %s (line %d)", p, jerr.text, jerr.line);
	return root;
}

START_TEST(test_analyze_reports_unsupported_c64_with_source_line)
{
	write_file("c64.hlo", k_c64_hlo, strlen(k_c64_hlo));
	ck_assert_msg(run_cc(NULL, "analyze", "c64.hlo", "-o", "report.json", NULL) == 0, "%s", g_err);
	json_t *root = load_report("report.json");
	const char *pct = json_string_value(json_object_get(root, "support_percentage"));
	ck_assert_ptr_nonnull(pct);
	ck_assert_ptr_nonnull(strchr(pct, '%'));
	ck_assert_str_ne(pct, "100.00%");
	json_t *uns = json_object_get(json_object_get(root, "unsupported_operators"), "aten");
	bool found = false;
	size_t i;
	json_t *e;
	json_array_foreach(uns, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "kind")), "aten::mul") == 0 &&
		    strcmp(json_string_value(json_object_get(e, "call")), "t.py 24") == 0)
			found = true;
	}
	ck_assert_msg(found, "aten::mul at t.py 24 not listed");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(json_object_get(root, "supported_operators"), "aten"),
				 "aten::add")), 1);
	json_decref(root);

	/* verbosity 1: the HLO instruction lines, to stdout */
	ck_assert_int_eq(run_cc(NULL, "analyze", "c64.hlo", "--analyze-verbosity", "1", NULL), 0);
	json_error_t jerr;
	root = json_loads(g_out, 0, &jerr);
	ck_assert_msg(root != NULL, "stdout report is not JSON: %s", jerr.text);
	json_t *ux = json_object_get(json_object_get(root, "unsupported_operators"), "xla");
	found = false;
	json_array_foreach(ux, i, e) {
		const char *t = json_string_value(json_object_get(e, "hlo_instruction"));
		if (t && strstr(t, "c64[4]{0} multiply(c, c)"))
			found = true;
	}
	ck_assert_msg(found, "xla list lacks the c64 multiply: %s", g_out);
	ck_assert(json_is_array(json_object_get(json_object_get(root, "supported_operators"), "xla")));
	json_decref(root);
}
END_TEST

START_TEST(test_analyze_corpus_module_is_fully_supported)
{
	ck_assert_int_eq(run_cc(NULL, "analyze", SMALL_MODULE, "-o", "r.json", NULL), 0);
	json_t *root = load_report("r.json");
	ck_assert_str_eq(json_string_value(json_object_get(root, "support_percentage")), "100.00%");
	json_t *aten = json_object_get(json_object_get(root, "supported_operators"), "aten");
	ck_assert(json_object_size(aten) > 0);
	json_decref(root);
}
END_TEST

START_TEST(test_compile_unsupported_types_exit_6_naming_instruction)
{
	write_file("c64.hlo", k_c64_hlo, strlen(k_c64_hlo));
	ck_assert_int_eq(run_cc(NULL, "compile", "c64.hlo", "-o", "x.neff", NULL), 6);
	ck_assert_msg(strstr(g_err, "unsupported") && strstr(g_err, "c64"), "stderr: %s", g_err);
	/* the back end names the first instruction it refuses ('c', 'm' or the root
	 * tuple 'r' that returns c64) and its HLO line */
	ck_assert_msg(strstr(g_err, "'c'") || strstr(g_err, "'m'") || strstr(g_err, "'r'"),
		      "instruction not named: %s", g_err);
	ck_assert_msg(strstr(g_err, "line"), "source line not given: %s", g_err);
	char p[512];
	snprintf(p, sizeof(p), "%s/x.neff", g_dir);
	ck_assert_int_ne(access(p, F_OK), 0); /* no half output */

	/* f64 is computed as f32 (the demote-f64 pass), but its bits cannot be
	 * reinterpreted as an integer's */
	write_file("f64.hlo", k_f64_hlo, strlen(k_f64_hlo));
	ck_assert_msg(run_cc(NULL, "compile", "f64.hlo", "-o", "y.neff", NULL) == 0, "stderr: %s", g_err);
	write_file("f64b.hlo", k_f64_bitcast_hlo, strlen(k_f64_bitcast_hlo));
	ck_assert_int_eq(run_cc(NULL, "compile", "f64b.hlo", "-o", "z.neff", NULL), 6);
	ck_assert_msg(strstr(g_err, "unsupported") && strstr(g_err, "f64") && strstr(g_err, "'b'") &&
			      strstr(g_err, "line"), "stderr: %s", g_err);
}
END_TEST

/* -------------------------------------------------------- malformed input */

START_TEST(test_malformed_hlo_gives_position_and_exit_3)
{
	static const struct {
		const char *name;
		const char *text;
	} cases[] = {
		{"empty.hlo", ""},
		{"noentry.hlo", "HloModule m\n"},
		{"unclosed.hlo", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"},
		{"badop.hlo", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] add(p, q)\n}\n"},
		{"badshape.hlo", "HloModule m\nENTRY e {\n  ROOT p = f32[2,,3] parameter(0)\n}\n"},
		{"verify.hlo", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[3] negate(p)\n}\n"},
		{"binary.hlo", "\x7f" "ELF\x01\x02\x00\xff\xfe garbage"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file(cases[i].name, cases[i].text, strlen(cases[i].text));
		for (int cmd = 0; cmd < 2; cmd++) {
			int rc = run_cc(NULL, cmd ? "analyze" : "compile", cases[i].name, "-o", "out", NULL);
			ck_assert_msg(rc == 3, "%s: exit %d, stderr: %s", cases[i].name, rc, g_err);
			/* FILE:LINE:COL: error: for everything the parser/verifier positions */
			char prefix[256];
			snprintf(prefix, sizeof(prefix), "%s:", cases[i].name);
			ck_assert_msg(strstr(g_err, prefix) && strstr(g_err, "error"), "%s: stderr: %s",
				      cases[i].name, g_err);
		}
	}
	ck_assert_int_eq(run_cc(NULL, "compile", "missing.hlo", NULL), 3);
	ck_assert_ptr_nonnull(strstr(g_err, "missing.hlo"));
	ck_assert_int_eq(run_cc(NULL, "compile", ".", NULL), 3);
}
END_TEST

START_TEST(test_truncated_corpus_module_never_crashes)
{
	size_t n;
	char *text = read_all(SMALL_MODULE, &n);
	ck_assert_ptr_nonnull(text);
	/* every 331st prefix: exit codes are 0 (a prefix can still be a module), 3 or 6,
	 * never a crash or an internal error */
	for (size_t cut = 1; cut < n; cut += 331) {
		write_file("cut.hlo", text, cut);
		int rc = run_cc(NULL, "compile", "cut.hlo", "--no-cache", "-o", "cut.neff", NULL);
		ck_assert_msg(rc == 0 || rc == 3 || rc == 6, "prefix %zu: exit %d: %s", cut, rc, g_err);
	}
	free(text);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("neuronsim-cc");
	TCase *tc = tcase_create("usage");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_help_and_version);
	tcase_add_test(tc, test_usage_errors_exit_2);
	suite_add_tcase(s, tc);
	tc = tcase_create("compile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_compile_writes_valid_neff_at_each_level);
	tcase_add_test(tc, test_compile_dump_ir_writes_files);
	tcase_add_test(tc, test_compile_cores_option);
	tcase_add_test(tc, test_compile_output_unwritable_exits_5);
	tcase_add_test(tc, test_compile_unsupported_types_exit_6_naming_instruction);
	suite_add_tcase(s, tc);
	tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_cache_miss_then_hit_without_compiling);
	tcase_add_test(tc, test_cache_dir_from_neuron_cc_flags);
	tcase_add_test(tc, test_cache_corrupt_entry_is_recompiled);
	tcase_add_test(tc, test_cache_concurrent_compilers_do_not_corrupt_it);
	suite_add_tcase(s, tc);
	tc = tcase_create("analyze");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_analyze_reports_unsupported_c64_with_source_line);
	tcase_add_test(tc, test_analyze_corpus_module_is_fully_supported);
	suite_add_tcase(s, tc);
	tc = tcase_create("malformed");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_malformed_hlo_gives_position_and_exit_3);
	tcase_add_test(tc, test_truncated_corpus_module_never_crashes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cli_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
