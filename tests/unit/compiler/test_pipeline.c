/* Check tests of the compile pipeline, the persistent compile cache and the analyze report (library level; test_cli.sh covers the CLI). */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "analyze.h"
#include "cache.h"
#include "hlo/hlo_parser.h"
#include "neuronsim/neff.h"
#include "pipeline.h"
#include "hlo/verify.h"

/* A module every back end supports: one f32 add. */
static const char k_add_hlo[] =
	"HloModule add_module\n"
	"\n"
	"ENTRY main {\n"
	"  p0 = f32[4]{0} parameter(0)\n"
	"  p1 = f32[4]{0} parameter(1)\n"
	"  ROOT r = f32[4]{0} add(p0, p1), metadata={op_type=\"aten__add\" source_file=\"m.py\" source_line=3}\n"
	"}\n";

/* The torch-neuronx tutorial's shape of failure: a complex multiply, on line 7. */
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

static char g_tmp[256];

static void make_tmpdir(void)
{
	snprintf(g_tmp, sizeof(g_tmp), "/tmp/ncc-test-pipeline-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_tmp));
}

static void rm_rf(const char *path)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

/* A small valid NEFF: what a cache entry holds, without needing the back end. */
static void *build_neff(size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("cache-test", 1);
	ck_assert_ptr_nonnull(b);
	uint64_t shape[1] = {4};
	uint32_t idx;
	ck_assert_int_eq(ns_status_consume_code(neff_builder_add_tensor(b, "in0", NEFF_USAGE_INPUT,
									ISA_DT_F32, 1, shape, -1,
									&idx)),
			 NS_STATUS_OK);
	void *data = NULL;
	ck_assert_int_eq(ns_status_consume_code(neff_builder_finish(b, &data, out_size)),
			 NS_STATUS_OK);
	neff_builder_destroy(b);
	return data;
}

/* ------------------------------------------------------------ cache keys */

START_TEST(test_cache_key_depends_on_every_input)
{
	char k1[NCC_CACHE_KEY_HEX + 1], k2[NCC_CACHE_KEY_HEX + 1];
	ncc_cache_key("1", "O=2", "abc", 3, k1);
	ncc_cache_key("1", "O=2", "abc", 3, k2);
	ck_assert_str_eq(k1, k2);
	ck_assert_uint_eq(strlen(k1), NCC_CACHE_KEY_HEX);
	ncc_cache_key("2", "O=2", "abc", 3, k2);
	ck_assert_str_ne(k1, k2);
	ncc_cache_key("1", "O=1", "abc", 3, k2);
	ck_assert_str_ne(k1, k2);
	ncc_cache_key("1", "O=2", "abd", 3, k2);
	ck_assert_str_ne(k1, k2);
	/* length prefixes: moving a byte between fields changes the key */
	ncc_cache_key("1", "O=2a", "bc", 2, k2);
	ck_assert_str_ne(k1, k2);
}
END_TEST

START_TEST(test_options_key_normalises_defaults)
{
	ncc_driver_options_t a, b;
	ncc_driver_options_init(&a);
	ncc_driver_options_init(&b);
	a.compile.opt_level = b.compile.opt_level = 2;
	a.compile.n_cores = 0;
	b.compile.n_cores = 1;
	a.compile.multi_engine = -1;
	b.compile.multi_engine = 1;
	b.compile.dump_dir = "/tmp/dumps"; /* does not change the NEFF */
	b.verbose = true;
	char ka[512], kb[512];
	ncc_driver_options_key(&a, ka, sizeof(ka));
	ncc_driver_options_key(&b, kb, sizeof(kb));
	ck_assert_str_eq(ka, kb);
	b.compile.opt_level = 0;
	ncc_driver_options_key(&b, kb, sizeof(kb));
	ck_assert_str_ne(ka, kb);
}
END_TEST

/* --------------------------------------------------- NEURON_CC_FLAGS parsing */

START_TEST(test_flags_parse_cache_dir_forms)
{
	FILE *devnull = fopen("/dev/null", "w");
	char *d;
	d = ncc_cache_dir_from_flags("--cache_dir=/a/b", devnull, true);
	ck_assert_str_eq(d, "/a/b");
	free(d);
	d = ncc_cache_dir_from_flags("  --model-type=transformer --cache_dir /c -O1 ", devnull, true);
	ck_assert_str_eq(d, "/c");
	free(d);
	d = ncc_cache_dir_from_flags("--cache_dir='/with space' --retry_failed_compilation", devnull,
				     true);
	ck_assert_str_eq(d, "/with space");
	free(d);
	d = ncc_cache_dir_from_flags("\"--cache_dir=/q\"", devnull, false);
	ck_assert_str_eq(d, "/q");
	free(d);
	d = ncc_cache_dir_from_flags("--cache_dir=/first --cache-dir=/last", devnull, false);
	ck_assert_str_eq(d, "/last");
	free(d);
	ck_assert_ptr_null(ncc_cache_dir_from_flags("--model-type=cnn-training", devnull, true));
	ck_assert_ptr_null(ncc_cache_dir_from_flags("--cache_dir=", devnull, true));
	ck_assert_ptr_null(ncc_cache_dir_from_flags("--cache_dir", devnull, true));
	ck_assert_ptr_null(ncc_cache_dir_from_flags("", devnull, true));
	ck_assert_ptr_null(ncc_cache_dir_from_flags(NULL, devnull, true));
	/* a prefix is not the flag */
	ck_assert_ptr_null(ncc_cache_dir_from_flags("--cache_dirx=/a", devnull, true));
	fclose(devnull);
}
END_TEST

/* ------------------------------------------------------------ cache store */

static ncc_cache_t *open_cache(const char *dir, FILE *log)
{
	ncc_cache_config_t cfg = {.dir = dir, .compiler_version = "test-1", .log = log};
	ncc_cache_t *c = NULL;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_cache_open(&cfg, &c, &err) == NCC_OK, "%s", err.msg);
	return c;
}

START_TEST(test_cache_store_then_lookup_roundtrip_logs_hit)
{
	make_tmpdir();
	char logbuf[4096] = "";
	FILE *log = fmemopen(logbuf, sizeof(logbuf), "w");
	ncc_cache_t *c = open_cache(g_tmp, log);
	size_t size;
	void *neff = build_neff(&size);
	char key[NCC_CACHE_KEY_HEX + 1];
	ncc_cache_key("v", "o", "text", 4, key);
	void *got = NULL;
	size_t got_size = 0;
	ck_assert_int_eq(ncc_cache_lookup(c, key, &got, &got_size, NULL), NCC_ERR_NOT_FOUND);
	ck_assert_ptr_null(got);
	ck_assert_int_eq(ncc_cache_store(c, key, neff, size, NULL), NCC_OK);
	ck_assert_int_eq(ncc_cache_lookup(c, key, &got, &got_size, NULL), NCC_OK);
	ck_assert_uint_eq(got_size, size);
	ck_assert_mem_eq(got, neff, size);
	fflush(log);
	char path[1024], line[1200];
	ncc_cache_entry_path(c, key, path, sizeof(path));
	snprintf(line, sizeof(line), "compile cache hit: %s -> %s", key, path);
	ck_assert_msg(strstr(logbuf, line), "log has no hit line: %s", logbuf);
	/* the version directory keeps compiler versions apart */
	ck_assert_ptr_nonnull(strstr(path, "/neuronsim-cc-test-1/MODULE_"));
	free(got);
	free(neff);
	ncc_cache_close(c);
	fclose(log);
	rm_rf(g_tmp);
}
END_TEST

START_TEST(test_cache_corrupt_or_truncated_entry_is_a_miss_and_removed)
{
	make_tmpdir();
	FILE *devnull = fopen("/dev/null", "w");
	ncc_cache_t *c = open_cache(g_tmp, devnull);
	size_t size;
	void *neff = build_neff(&size);
	char key[NCC_CACHE_KEY_HEX + 1], path[1024];
	ncc_cache_key("v", "o", "corrupt", 7, key);
	ncc_cache_entry_path(c, key, path, sizeof(path));
	for (int mode = 0; mode < 3; mode++) {
		ck_assert_int_eq(ncc_cache_store(c, key, neff, size, NULL), NCC_OK);
		FILE *f = fopen(path, "r+b");
		ck_assert_ptr_nonnull(f);
		if (mode == 0) { /* flip a byte the checksum covers */
			fseek(f, (long)size - 1, SEEK_SET);
			fputc(((const unsigned char *)neff)[size - 1] ^ 0x5a, f);
		} else if (mode == 1) { /* truncate */
			ck_assert_int_eq(ftruncate(fileno(f), (off_t)size / 2), 0);
		} else { /* empty */
			ck_assert_int_eq(ftruncate(fileno(f), 0), 0);
		}
		fclose(f);
		void *got = (void *)1;
		size_t got_size = 1;
		ck_assert_int_eq(ncc_cache_lookup(c, key, &got, &got_size, NULL), NCC_ERR_NOT_FOUND);
		ck_assert_ptr_null(got);
		ck_assert_uint_eq(got_size, 0);
		ck_assert_int_ne(access(path, F_OK), 0); /* removed, so the next store is clean */
	}
	free(neff);
	ncc_cache_close(c);
	fclose(devnull);
	rm_rf(g_tmp);
}
END_TEST

START_TEST(test_cache_open_fails_cleanly_on_unusable_dir)
{
	make_tmpdir();
	char file[512], dir[600];
	snprintf(file, sizeof(file), "%s/plainfile", g_tmp);
	FILE *f = fopen(file, "w");
	fclose(f);
	/* a directory under a regular file cannot exist, even for root */
	snprintf(dir, sizeof(dir), "%s/sub", file);
	ncc_cache_config_t cfg = {.dir = dir, .compiler_version = "x"};
	ncc_cache_t *c = (ncc_cache_t *)1;
	ncc_error_t err = {0};
	ck_assert_int_eq(ncc_cache_open(&cfg, &c, &err), NCC_ERR_IO);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, dir));
	rm_rf(g_tmp);
}
END_TEST

START_TEST(test_cache_rejects_bad_keys)
{
	make_tmpdir();
	ncc_cache_t *c = open_cache(g_tmp, NULL);
	void *got;
	size_t n;
	ck_assert_int_eq(ncc_cache_lookup(c, "../../etc/passwd", &got, &n, NULL), NCC_ERR_INVALID);
	ck_assert_int_eq(ncc_cache_store(c, "short", "x", 1, NULL), NCC_ERR_INVALID);
	ncc_cache_close(c);
	rm_rf(g_tmp);
}
END_TEST

/* Concurrent writers and readers of one key: a reader sees a miss or a whole,
 * valid NEFF, never a torn one (temporary file + rename). */
typedef struct race_arg {
	const char *dir;
	const char *key;
	const void *neff;
	size_t size;
	bool writer;
	int bad;
} race_arg_t;

static void *race_thread(void *p)
{
	race_arg_t *a = p;
	FILE *devnull = fopen("/dev/null", "w");
	ncc_cache_config_t cfg = {.dir = a->dir, .compiler_version = "race", .log = devnull};
	ncc_cache_t *c = NULL;
	if (ncc_cache_open(&cfg, &c, NULL) != NCC_OK) {
		a->bad++;
		fclose(devnull);
		return NULL;
	}
	for (int i = 0; i < 150; i++) {
		if (a->writer) {
			if (ncc_cache_store(c, a->key, a->neff, a->size, NULL) != NCC_OK)
				a->bad++;
		} else {
			void *got = NULL;
			size_t n = 0;
			ncc_status_t st = ncc_cache_lookup(c, a->key, &got, &n, NULL);
			if (st == NCC_OK && (n != a->size || memcmp(got, a->neff, n) != 0))
				a->bad++;
			if (st != NCC_OK && st != NCC_ERR_NOT_FOUND)
				a->bad++;
			free(got);
		}
	}
	ncc_cache_close(c);
	fclose(devnull);
	return NULL;
}

START_TEST(test_cache_concurrent_writers_and_readers_never_see_torn_entries)
{
	make_tmpdir();
	size_t size;
	void *neff = build_neff(&size);
	char key[NCC_CACHE_KEY_HEX + 1];
	ncc_cache_key("v", "o", "race", 4, key);
	pthread_t th[6];
	race_arg_t args[6];
	for (int i = 0; i < 6; i++) {
		args[i] = (race_arg_t){.dir = g_tmp, .key = key, .neff = neff, .size = size,
				       .writer = i % 2 == 0};
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_thread, &args[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(args[i].bad, 0);
	}
	/* no temporary files left behind */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test -z \"$(find '%s' -name '*.tmp-*')\"", g_tmp);
	ck_assert_int_eq(system(cmd), 0);
	free(neff);
	rm_rf(g_tmp);
}
END_TEST

/* -------------------------------------------------------------- pipeline */

START_TEST(test_pipeline_parse_error_has_position_and_no_output)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	const char *bad = "HloModule m\nENTRY e {\n  p = f32[2 parameter(0)\n}\n";
	ck_assert_int_eq(ncc_compile_text(bad, strlen(bad), "bad.hlo", &o, &r, &err), NCC_ERR_PARSE);
	ck_assert_ptr_null(r.neff);
	ck_assert_msg(strncmp(err.msg, "bad.hlo:3:", 10) == 0, "message: %s", err.msg);
	ncc_compile_result_release(&r);
}
END_TEST

START_TEST(test_pipeline_verify_error_is_reported)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	/* add of f32[4] and f32[3]: well-formed text, wrong shapes */
	const char *bad = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[3] parameter(1)\n"
			  "  ROOT r = f32[4] add(p, q)\n}\n";
	ck_assert_int_eq(ncc_compile_text(bad, strlen(bad), "v.hlo", &o, &r, &err), NCC_ERR_VERIFY);
	ck_assert_ptr_null(r.neff);
	ck_assert_ptr_nonnull(strstr(err.msg, "v.hlo:"));
}
END_TEST

START_TEST(test_pipeline_missing_file_is_io_error_naming_it)
{
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	ck_assert_int_eq(ncc_compile_file("/nonexistent/x.hlo", NULL, &r, &err), NCC_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/x.hlo"));
	ck_assert_ptr_null(r.neff);
}
END_TEST

START_TEST(test_pipeline_unsupported_type_names_instruction_and_line)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	ncc_status_t st = ncc_compile_text(k_c64_hlo, strlen(k_c64_hlo), "c64.hlo", &o, &r, &err);
	ck_assert_int_eq(st, NCC_ERR_UNSUPPORTED);
	ck_assert_ptr_null(r.neff);
	ck_assert_msg(strstr(err.msg, "unsupported") && strstr(err.msg, "c64"),
		      "message: %s", err.msg);
}
END_TEST

START_TEST(test_pipeline_cache_miss_then_hit_skips_compilation)
{
	make_tmpdir();
	char logbuf[8192] = "";
	FILE *log = fmemopen(logbuf, sizeof(logbuf), "w");
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.cache_dir = g_tmp;
	o.log = log;
	ncc_compile_result_t r1, r2;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), "add.hlo", &o, &r1, &err) ==
		      NCC_OK, "%s", err.msg);
	ck_assert(!r1.cache_hit);
	ck_assert(r1.cache_stored);
	ck_assert(r1.ms_lower > 0);
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), "add.hlo", &o, &r2, &err),
			 NCC_OK);
	ck_assert(r2.cache_hit);
	/* a hit does no compilation: no stage ran */
	ck_assert(r2.ms_parse == 0 && r2.ms_verify == 0 && r2.ms_passes == 0 && r2.ms_lower == 0);
	ck_assert_uint_eq(r1.neff_size, r2.neff_size);
	ck_assert_mem_eq(r1.neff, r2.neff, r1.neff_size);
	ck_assert_str_eq(r1.cache_key, r2.cache_key);
	fflush(log);
	ck_assert_ptr_nonnull(strstr(logbuf, "compile cache hit: "));
	ck_assert_ptr_nonnull(strstr(logbuf, r2.cache_path));
	/* other options: another key, a miss */
	ncc_compile_result_t r3;
	o.compile.opt_level = o.compile.opt_level ? 0 : 2;
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), "add.hlo", &o, &r3, &err),
			 NCC_OK);
	ck_assert(!r3.cache_hit);
	ck_assert_str_ne(r1.cache_key, r3.cache_key);
	/* quiet_cache_hit (the PJRT plugin, which says it itself): a hit, no line */
	ncc_compile_result_t r4;
	fflush(log);
	size_t before = strlen(logbuf);
	o.quiet_cache_hit = true;
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), "add.hlo", &o, &r4, &err),
			 NCC_OK);
	ck_assert(r4.cache_hit);
	fflush(log);
	ck_assert_ptr_null(strstr(logbuf + before, "compile cache hit"));
	ncc_compile_result_release(&r1);
	ncc_compile_result_release(&r2);
	ncc_compile_result_release(&r3);
	ncc_compile_result_release(&r4);
	fclose(log);
	rm_rf(g_tmp);
}
END_TEST

START_TEST(test_pipeline_reads_cache_dir_from_neuron_cc_flags)
{
	make_tmpdir();
	char flags[512];
	snprintf(flags, sizeof(flags), "--model-type=transformer --cache_dir=%s", g_tmp);
	setenv("NEURON_CC_FLAGS", flags, 1);
	FILE *devnull = fopen("/dev/null", "w");
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.log = devnull;
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err) == NCC_OK,
		      "%s", err.msg);
	ck_assert(r.cache_used);
	ck_assert_ptr_nonnull(strstr(r.cache_path, g_tmp));
	ck_assert_int_eq(access(r.cache_path, F_OK), 0);
	ncc_compile_result_release(&r);
	/* --no-cache wins over the environment */
	o.no_cache = true;
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err), NCC_OK);
	ck_assert(!r.cache_used);
	ncc_compile_result_release(&r);
	unsetenv("NEURON_CC_FLAGS");
	fclose(devnull);
	rm_rf(g_tmp);
}
END_TEST

START_TEST(test_flags_no_cache)
{
	ck_assert(ncc_cache_flags_no_cache("--no_cache"));
	ck_assert(ncc_cache_flags_no_cache("--model-type=transformer --no-cache -O1"));
	ck_assert(ncc_cache_flags_no_cache("'--no_cache'"));
	ck_assert(!ncc_cache_flags_no_cache("--no_cachex"));
	ck_assert(!ncc_cache_flags_no_cache("--cache_dir=/a"));
	/* a directory named like the flag is the value of --cache_dir, not the flag */
	ck_assert(!ncc_cache_flags_no_cache("--cache_dir --no_cache"));
	ck_assert(!ncc_cache_flags_no_cache(""));
	ck_assert(!ncc_cache_flags_no_cache(NULL));
}
END_TEST

/* The build identity: "VERSION+<16 hex>", in the version directory of every entry,
 * and part of the key (a different identity gives a different key). */
START_TEST(test_compiler_id_has_version_and_build_hash)
{
	const char *id = ncc_cache_compiler_id();
	size_t vl = strlen(NCC_VERSION_STRING);
	ck_assert_int_eq(strncmp(id, NCC_VERSION_STRING, vl), 0);
	ck_assert_int_eq(id[vl], '+');
	ck_assert_uint_eq(strlen(id + vl + 1), 16);
	for (const char *p = id + vl + 1; *p; p++)
		ck_assert_msg((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'), "%s", id);
	char a[NCC_CACHE_KEY_HEX + 1], b[NCC_CACHE_KEY_HEX + 1];
	ncc_cache_key(id, "o", k_add_hlo, strlen(k_add_hlo), a);
	ncc_cache_key(NCC_VERSION_STRING, "o", k_add_hlo, strlen(k_add_hlo), b);
	ck_assert_str_ne(a, b);
}
END_TEST

/* default_cache_dir (the PJRT plugin's default) is used when nothing else names a
 * directory; NEURON_CC_FLAGS --cache_dir overrides it and --no_cache turns it off. */
START_TEST(test_pipeline_default_cache_dir_and_its_overrides)
{
	make_tmpdir();
	char def[600], flagged[600], flags[700];
	snprintf(def, sizeof(def), "%s/default", g_tmp);
	snprintf(flagged, sizeof(flagged), "%s/flagged", g_tmp);
	FILE *devnull = fopen("/dev/null", "w");
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.log = devnull;
	o.default_cache_dir = def;
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	unsetenv("NEURON_CC_FLAGS");
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err), NCC_OK);
	ck_assert(r.cache_used && r.cache_stored && !r.cache_open_failed);
	char want[800];
	snprintf(want, sizeof(want), "%s/neuronsim-cc-%s/MODULE_%s/model.neff", def,
		 ncc_cache_compiler_id(), r.cache_key);
	ck_assert_str_eq(r.cache_path, want);
	ncc_compile_result_release(&r);
	snprintf(flags, sizeof(flags), "--cache_dir=%s", flagged);
	setenv("NEURON_CC_FLAGS", flags, 1);
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err), NCC_OK);
	ck_assert(r.cache_used && !r.cache_hit);
	ck_assert_int_eq(strncmp(r.cache_path, flagged, strlen(flagged)), 0);
	ncc_compile_result_release(&r);
	setenv("NEURON_CC_FLAGS", "--no_cache", 1);
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err), NCC_OK);
	ck_assert(!r.cache_used && !r.cache_hit);
	ncc_compile_result_release(&r);
	/* without use_env, NEURON_CC_FLAGS is not read: the default is a hit */
	o.use_env = false;
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err), NCC_OK);
	ck_assert(r.cache_hit);
	ncc_compile_result_release(&r);
	/* an unusable default is reported in the result (and warned), never fatal */
	char file[600];
	snprintf(file, sizeof(file), "%s/file", g_tmp);
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	o.default_cache_dir = file;
	ck_assert_int_eq(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err), NCC_OK);
	ck_assert(r.cache_open_failed && !r.cache_used && r.neff_size > 0);
	ncc_compile_result_release(&r);
	unsetenv("NEURON_CC_FLAGS");
	fclose(devnull);
	rm_rf(g_tmp);
}
END_TEST

START_TEST(test_pipeline_unwritable_cache_is_a_warning_not_a_failure)
{
	make_tmpdir();
	char file[512], dir[600];
	snprintf(file, sizeof(file), "%s/plainfile", g_tmp);
	FILE *f = fopen(file, "w");
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/cache", file);
	char logbuf[4096] = "";
	FILE *log = fmemopen(logbuf, sizeof(logbuf), "w");
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.cache_dir = dir;
	o.log = log;
	ncc_compile_result_t r;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_compile_text(k_add_hlo, strlen(k_add_hlo), NULL, &o, &r, &err) == NCC_OK,
		      "%s", err.msg);
	ck_assert_ptr_nonnull(r.neff);
	fflush(log);
	ck_assert_ptr_nonnull(strstr(logbuf, "warning"));
	ncc_compile_result_release(&r);
	fclose(log);
	rm_rf(g_tmp);
}
END_TEST

/* --------------------------------------------------------------- analyze */

static json_t *analyze_text(const char *text, int verbosity, ncc_analyze_summary_t *sum)
{
	ncc_module_t *m = NULL;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_parse_hlo(text, strlen(text), "t.hlo", &m, &err) == NCC_OK, "%s", err.msg);
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s", err.msg);
	char *json = NULL;
	ck_assert_int_eq(ncc_analyze_module(m, verbosity, &json, sum, &err), NCC_OK);
	ncc_module_free(m);
	json_error_t jerr;
	json_t *root = json_loads(json, 0, &jerr);
	ck_assert_msg(root != NULL, "report is not JSON: %s", jerr.text);
	free(json);
	return root;
}

START_TEST(test_analyze_lists_unsupported_c64_with_source_line)
{
	ncc_analyze_summary_t sum;
	json_t *root = analyze_text(k_c64_hlo, NCC_ANALYZE_VERBOSITY_DEFAULT, &sum);
	/* 5 instructions; convert and multiply to c64 are unsupported; the tuple
	 * carries a c64 element too, so 2 or 3 are refused depending on how the back
	 * end judges tuples: the percentage is consistent with the summary either way */
	ck_assert_int_eq(sum.total, 5);
	ck_assert(sum.supported >= 2 && sum.supported <= 3);
	char pct[16];
	snprintf(pct, sizeof(pct), "%.2f%%", 100.0 * (double)sum.supported / 5.0);
	ck_assert_str_eq(json_string_value(json_object_get(root, "support_percentage")), pct);
	json_t *sup = json_object_get(json_object_get(root, "supported_operators"), "aten");
	ck_assert_int_eq(json_integer_value(json_object_get(sup, "aten::add")), 1);
	/* bookkeeping op types are not aten operators */
	ck_assert_ptr_null(json_object_get(sup, "xla::device_data"));
	json_t *uns = json_object_get(json_object_get(root, "unsupported_operators"), "aten");
	ck_assert(json_is_array(uns));
	bool found = false;
	size_t i;
	json_t *e;
	json_array_foreach(uns, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "kind")), "aten::mul") == 0) {
			ck_assert_str_eq(json_string_value(json_object_get(e, "call")), "t.py 24");
			ck_assert_str_eq(json_string_value(json_object_get(e, "failureAt")),
					 "neuronsim-cc");
			found = true;
		}
	}
	ck_assert(found);
	/* convert and multiply share kind and call: listed once at aten level */
	ck_assert_ptr_null(json_object_get(json_object_get(root, "supported_operators"), "xla"));
	json_decref(root);
}
END_TEST

START_TEST(test_analyze_verbosity_1_adds_xla_instruction_lines)
{
	ncc_analyze_summary_t sum;
	json_t *root = analyze_text(k_c64_hlo, 1, &sum);
	json_t *sx = json_object_get(json_object_get(root, "supported_operators"), "xla");
	json_t *ux = json_object_get(json_object_get(root, "unsupported_operators"), "xla");
	ck_assert(json_is_array(sx) && json_is_array(ux));
	ck_assert_int_eq((int64_t)json_array_size(sx), sum.supported);
	ck_assert_int_eq((int64_t)(json_array_size(sx) + json_array_size(ux)), sum.total);
	bool found = false;
	size_t i;
	json_t *e;
	json_array_foreach(ux, i, e) {
		const char *t = json_string_value(json_object_get(e, "hlo_instruction"));
		if (strncmp(t, "m = c64[4]{0} multiply(c, c)", 28) == 0) {
			ck_assert_int_eq(json_integer_value(json_object_get(e, "line")), 7);
			ck_assert_str_eq(json_string_value(json_object_get(e, "aten_op")), "aten::mul");
			found = true;
		}
	}
	ck_assert(found);
	json_decref(root);
}
END_TEST

START_TEST(test_analyze_fully_supported_module_is_100_percent)
{
	ncc_analyze_summary_t sum;
	json_t *root = analyze_text(k_add_hlo, 2, &sum);
	ck_assert_str_eq(json_string_value(json_object_get(root, "support_percentage")), "100.00%");
	ck_assert_int_eq((int)json_array_size(json_object_get(
				 json_object_get(root, "unsupported_operators"), "aten")), 0);
	json_decref(root);
}
END_TEST

START_TEST(test_analyze_op_kind_spelling)
{
	char b[64];
	ncc_analyze_op_kind("aten__native_layer_norm", b, sizeof(b));
	ck_assert_str_eq(b, "aten::native_layer_norm");
	ncc_analyze_op_kind("xla___op_TransferWithStaticRingTransfer", b, sizeof(b));
	ck_assert_str_eq(b, "xla::_op_TransferWithStaticRingTransfer");
	ncc_analyze_op_kind("plain", b, sizeof(b));
	ck_assert_str_eq(b, "plain");
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("cache");
	tcase_add_test(tc, test_cache_key_depends_on_every_input);
	tcase_add_test(tc, test_options_key_normalises_defaults);
	tcase_add_test(tc, test_flags_parse_cache_dir_forms);
	tcase_add_test(tc, test_cache_store_then_lookup_roundtrip_logs_hit);
	tcase_add_test(tc, test_cache_corrupt_or_truncated_entry_is_a_miss_and_removed);
	tcase_add_test(tc, test_cache_open_fails_cleanly_on_unusable_dir);
	tcase_add_test(tc, test_cache_rejects_bad_keys);
	tcase_add_test(tc, test_cache_concurrent_writers_and_readers_never_see_torn_entries);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("pipeline");
	tcase_add_test(tc, test_pipeline_parse_error_has_position_and_no_output);
	tcase_add_test(tc, test_pipeline_verify_error_is_reported);
	tcase_add_test(tc, test_pipeline_missing_file_is_io_error_naming_it);
	tcase_add_test(tc, test_pipeline_unsupported_type_names_instruction_and_line);
	tcase_add_test(tc, test_pipeline_cache_miss_then_hit_skips_compilation);
	tcase_add_test(tc, test_pipeline_reads_cache_dir_from_neuron_cc_flags);
	tcase_add_test(tc, test_flags_no_cache);
	tcase_add_test(tc, test_compiler_id_has_version_and_build_hash);
	tcase_add_test(tc, test_pipeline_default_cache_dir_and_its_overrides);
	tcase_add_test(tc, test_pipeline_unwritable_cache_is_a_warning_not_a_failure);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("analyze");
	tcase_add_test(tc, test_analyze_lists_unsupported_c64_with_source_line);
	tcase_add_test(tc, test_analyze_verbosity_1_adds_xla_instruction_lines);
	tcase_add_test(tc, test_analyze_fully_supported_module_is_100_percent);
	tcase_add_test(tc, test_analyze_op_kind_spelling);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pipeline_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
