/* ncc compile pipeline: cache lookup, parse, verify, passes, lowering/NEFF emission, cache store. */
#include "pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hlo/hlo_parser.h"
#include "lower/lower.h"
#include "neuronsim/atomic_file.h"
#include "neuronsim/clock.h"
#include "hlo/verify.h"

#include "passes/passes.h"

const char *ncc_version(void)
{
	return "neuronsim-cc " NCC_VERSION_STRING;
}

void ncc_driver_options_init(ncc_driver_options_t *opts)
{
	memset(opts, 0, sizeof(*opts));
	ncc_compile_options_init(&opts->compile);
	opts->compile.opt_level = NCC_DRIVER_DEFAULT_OPT_LEVEL;
	opts->use_env = true;
}

int ncc_driver_options_key(const ncc_driver_options_t *opts, char *buf, size_t size)
{
	const ncc_compile_options_t *c = &opts->compile;
	uint32_t cores = c->n_cores ? c->n_cores : 1;
	int multi = c->multi_engine >= 0 ? c->multi_engine : (c->opt_level > 0 ? 1 : 0);
	/* Names and versions are written with their lengths so that no value can
	 * imitate another field. */
	const char *name = c->model_name ? c->model_name : "";
	const char *ver = c->compiler_version ? c->compiler_version : "";
	return snprintf(buf, size, "O=%d;cores=%u;multi_engine=%d;embed_hlo=%d;name=%zu:%s;cver=%zu:%s",
			c->opt_level, cores, multi, c->embed_hlo ? 1 : 0, strlen(name), name,
			strlen(ver), ver);
}

static double now_ms(void)
{
	return (double)ns_monotonic_ns() / 1e6;
}

static FILE *drv_log(const ncc_driver_options_t *o)
{
	return o->log ? o->log : stderr;
}

ncc_status_t ncc_write_file(const char *path, const void *data, size_t size, ncc_error_t *err)
{
	/* whole or nothing, with the usual umask mode, like a file made by open();
	 * never through a symlink planted at the name (atomic_file.h) */
	const char *step;
	if (atomic_file_write_whole(path, data, size, ATOMIC_FILE_MODE_UMASK, &step) != 0)
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "cannot write '%s' (%s): %s", path, step,
				     strerror(errno));
	return NCC_OK;
}

void ncc_compile_result_release(ncc_compile_result_t *r)
{
	if (!r)
		return;
	free(r->neff);
	memset(r, 0, sizeof(*r));
}

/* Opens the configured cache (ncc.h: cache_dir, NEURON_CC_FLAGS, default_cache_dir),
 * or returns NULL (no cache; cannot open: warned and *open_failed set). */
static ncc_cache_t *driver_open_cache(const ncc_driver_options_t *o, bool *open_failed)
{
	*open_failed = false;
	if (o->no_cache)
		return NULL;
	if (o->use_env && ncc_cache_flags_no_cache(getenv("NEURON_CC_FLAGS"))) {
		if (o->verbose)
			fprintf(drv_log(o), "neuronsim-cc: debug: NEURON_CC_FLAGS has --no_cache: "
					    "compile cache off\n");
		return NULL;
	}
	char *env_dir = NULL;
	const char *dir = o->cache_dir;
	if (!dir && o->use_env) {
		env_dir = ncc_cache_dir_from_flags(getenv("NEURON_CC_FLAGS"), drv_log(o), o->verbose);
		dir = env_dir;
	}
	if (!dir)
		dir = o->default_cache_dir;
	if (!dir) {
		if (o->verbose)
			fprintf(drv_log(o), "neuronsim-cc: debug: no cache directory (--cache-dir or "
					    "NEURON_CC_FLAGS=--cache_dir=DIR): compile cache off\n");
		return NULL;
	}
	ncc_cache_config_t cfg = {
		.dir = dir,
		.compiler_version = ncc_cache_compiler_id(),
		.log = o->log,
		.verbose = o->verbose,
		.quiet_hit = o->quiet_cache_hit,
	};
	ncc_cache_t *cache = NULL;
	ncc_error_t cerr = {0};
	if (ncc_cache_open(&cfg, &cache, &cerr) != NCC_OK) {
		*open_failed = true;
		fprintf(drv_log(o), "neuronsim-cc: warning: %s; compiling without the cache\n",
			cerr.msg);
	}
	free(env_dir);
	return cache;
}

/* parse -> verify -> passes -> lower. Fills the stage timings of out. */
static ncc_status_t driver_compile(const char *text, size_t len, const char *filename,
				   const ncc_driver_options_t *o, ncc_compile_result_t *out,
				   ncc_error_t *err)
{
	ncc_module_t *m = NULL;
	double t0 = now_ms();
	ncc_status_t st = ncc_parse_hlo(text, len, filename, &m, err);
	double t1 = now_ms();
	out->ms_parse = t1 - t0;
	if (st != NCC_OK)
		return st;
	st = ncc_verify(m, err);
	double t2 = now_ms();
	out->ms_verify = t2 - t1;
	if (st != NCC_OK)
		goto done;
	/* the pipeline decides per -O level what runs (nothing at -O0) and writes the
	 * --dump-ir files */
	st = ncc_run_passes(m, &o->compile, err);
	double t3 = now_ms();
	out->ms_passes = t3 - t2;
	if (st != NCC_OK)
		goto done;
	void *neff = NULL;
	size_t size = 0;
	st = ncc_lower_module(m, &o->compile, &neff, &size, err);
	out->ms_lower = now_ms() - t3;
	if (st != NCC_OK)
		goto done;
	out->neff = neff;
	out->neff_size = size;
	if (o->verbose)
		fprintf(drv_log(o),
			"neuronsim-cc: debug: compiled %s: parse %.2f ms, verify %.2f ms, passes "
			"%.2f ms, lower %.2f ms, %zu NEFF bytes\n",
			filename, out->ms_parse, out->ms_verify, out->ms_passes, out->ms_lower, size);
done:
	ncc_module_free(m);
	return st;
}

ncc_status_t ncc_compile_text(const char *text, size_t len, const char *filename,
			      const ncc_driver_options_t *opts, ncc_compile_result_t *out,
			      ncc_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (!text && len)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_compile_text: NULL text");
	ncc_driver_options_t defaults;
	if (!opts) {
		ncc_driver_options_init(&defaults);
		opts = &defaults;
	}
	if (!filename)
		filename = "<input>";
	double t0 = now_ms();

	/* A --dump-ir request wants the passes to run and write their dumps: a cache hit
	 * would silently produce none, so dumping bypasses the lookup (it still stores). */
	ncc_cache_t *cache = driver_open_cache(opts, &out->cache_open_failed);
	if (cache) {
		char optkey[1024];
		ncc_driver_options_key(opts, optkey, sizeof(optkey));
		ncc_cache_key(ncc_cache_compiler_id(), optkey, text, len, out->cache_key);
		ncc_cache_entry_path(cache, out->cache_key, out->cache_path, sizeof(out->cache_path));
		out->cache_used = true;
		if (!opts->compile.dump_dir) {
			ncc_error_t lerr = {0};
			ncc_status_t ls = ncc_cache_lookup(cache, out->cache_key, &out->neff,
							   &out->neff_size, &lerr);
			if (ls == NCC_OK) {
				out->cache_hit = true;
				out->ms_total = now_ms() - t0;
				ncc_cache_close(cache);
				return NCC_OK;
			}
			if (ls != NCC_ERR_NOT_FOUND)
				fprintf(drv_log(opts), "neuronsim-cc: warning: %s\n", lerr.msg);
		}
	}

	ncc_status_t st = driver_compile(text, len, filename, opts, out, err);
	if (st == NCC_OK && cache) {
		ncc_error_t serr = {0};
		if (ncc_cache_store(cache, out->cache_key, out->neff, out->neff_size, &serr) == NCC_OK)
			out->cache_stored = true;
		else
			fprintf(drv_log(opts), "neuronsim-cc: warning: %s; the NEFF was compiled but not "
					       "cached\n", serr.msg);
	}
	ncc_cache_close(cache);
	if (st != NCC_OK) {
		/* keep the stage timings for the caller's report, drop everything else */
		free(out->neff);
		out->neff = NULL;
		out->neff_size = 0;
		return st;
	}
	out->ms_total = now_ms() - t0;
	return NCC_OK;
}

ncc_status_t ncc_compile_file(const char *path, const ncc_driver_options_t *opts,
			      ncc_compile_result_t *out, ncc_error_t *err)
{
	memset(out, 0, sizeof(*out));
	double t0 = now_ms();
	char *text = NULL;
	size_t len = 0;
	ncc_status_t st = ncc_read_file(path, &text, &len, err);
	if (st != NCC_OK)
		return st;
	double t1 = now_ms();
	st = ncc_compile_text(text, len, path, opts, out, err);
	free(text);
	out->ms_read = t1 - t0;
	out->ms_total += t1 - t0;
	return st;
}

ncc_status_t ncc_compile_hlo_proto(const void *data, size_t len, const char *name,
				   const ncc_driver_options_t *opts, ncc_compile_result_t *out,
				   ncc_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (!data && len)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "ncc_compile_hlo_proto: NULL data");
	double t0 = now_ms();
	ncc_module_t *m = NULL;
	ncc_status_t st = ncc_parse_hlo_proto(data, len, name, &m, err);
	if (st != NCC_OK)
		return st;
	/* The text is the module's canonical form: it keys the cache, it is what the
	 * NEFF embeds for snapshots and the minifier, and parsing it back gives the
	 * same IR (the printer's contract), so both inputs share one pipeline. */
	char *text = NULL;
	st = ncc_module_to_string(m, &text);
	char label[256];
	snprintf(label, sizeof(label), "%s", name ? name : m->name);
	ncc_module_free(m);
	if (st != NCC_OK)
		return ncc_error_set(err, st, 0, 0, "cannot print the HLO module of '%s': %s",
				     label, ncc_status_name(st));
	double t1 = now_ms();
	st = ncc_compile_text(text, strlen(text), label, opts, out, err);
	free(text);
	out->ms_read = t1 - t0;
	out->ms_total += t1 - t0;
	return st;
}
