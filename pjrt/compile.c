/* PJRT_Client_Compile: HloModuleProto ("hlo") or HLO text ("hlo_text") through the ncc compiler to a NEFF, timed and recorded as CompileTime; MLIR is refused. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "neuronsim/clock.h"
#include "neuronsim/log.h"
#include "nrt/nrt_neuronsim.h"
#include "analyze.h"
#include "pjrt_internal.h"

void pjrt_exec_parts_free(pjrt_exec_parts_t *p)
{
	free(p->name);
	free(p->program);
	free(p->optimized);
	free(p->neff);
	pjrt_signature_free(&p->sig);
	memset(p, 0, sizeof(*p));
}

/* The persistent compile cache is on by default here, in the framework layer, as
 * torch-neuronx turns it on for torch_xla's graphs (docs/pjrt.md): the directory is
 * NEURON_CC_FLAGS="--cache_dir=DIR", else NEURON_COMPILE_CACHE_URL (local paths;
 * s3:// is refused with one warning), else PJRT_DEFAULT_COMPILE_CACHE;
 * NEURON_CC_FLAGS="--no_cache" turns it off. A directory that cannot be created or
 * written is warned about once (by the compiler, on the first compile); the process
 * then compiles without the cache. */
#define PJRT_DEFAULT_COMPILE_CACHE "/var/tmp/neuron-compile-cache"

static _Atomic bool g_cache_unusable;

/* One line on stderr in torch-neuronx's log format, so that what reads its
 * compile-cache lines reads these: "YYYY-MM-DD HH:MM:SS.000mmm:  PID  INFO
 * ||COMPONENT||: message" (local time, milliseconds in six digits, as it
 * prints them). */
__attribute__((format(printf, 2, 3))) static void sdk_log(const char *component, const char *fmt, ...)
{
	char head[128], stamp[64];
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	time_t secs = tv.tv_sec;
	localtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(head, sizeof(head), "%s.%06ld:  %ld  INFO ||%s||: ", stamp, (long)(tv.tv_usec / 1000),
		 (long)getpid(), component);
	static const ns_log_sink_t sink = { .dest = NS_LOG_TO_STDERR };
	va_list ap;
	va_start(ap, fmt);
	ns_log_vwrite(&sink, NS_LOG_INFO, head, fmt, ap);
	va_end(ap);
}

/* The compile cache's lines in the Neuron SDK's words (docs/pjrt.md): its
 * directory once per process and directory ("Compile cache path", which
 * torch-neuronx prints before every compile), then per compile "Using a
 * cached neff at PATH" for a hit or "Compilation Successfully Completed for
 * model.MODULE_KEY..." for a compile it stored. */
static void log_cache(const ncc_compile_result_t *res, const char *format)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char said_root[NCC_DRIVER_PATH_MAX];
	if (!res->cache_used)
		return;
	/* The root the user chose: the entry path is ROOT/neuronsim-cc-V/MODULE_KEY/model.neff. */
	char root[NCC_DRIVER_PATH_MAX];
	snprintf(root, sizeof(root), "%s", res->cache_path);
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(root, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	pthread_mutex_lock(&lock);
	bool new_root = strcmp(said_root, root) != 0;
	if (new_root)
		snprintf(said_root, sizeof(said_root), "%s", root);
	pthread_mutex_unlock(&lock);
	if (new_root)
		sdk_log("NEURON_CACHE", "Compile cache path: %s", root);
	if (res->cache_hit)
		sdk_log("NEURON_CC_WRAPPER", "Using a cached neff at %s. Exiting with a successfully compiled graph.",
			res->cache_path);
	else if (res->cache_stored)
		sdk_log("NEURON_CC_WRAPPER", "Compilation Successfully Completed for model.MODULE_%s.%s",
			res->cache_key, strcmp(format, PJRT_FORMAT_HLO) == 0 ? "hlo_module.pb" : "hlo");
}

/* Compiles with ncc and records the compile in libnrt's metrics as a tool does:
 * CompileTime and UncachedCompile for a real compile, CachedCompile for a cache
 * hit. */
static PJRT_Error *run_ncc(const char *format, const uint8_t *code, size_t size, const char *name,
			   pjrt_exec_parts_t *parts)
{
	ncc_driver_options_t opts;
	ncc_driver_options_init(&opts);
	opts.compile.n_cores = 1;
	opts.quiet_cache_hit = true; /* log_cache says it, in the SDK's words */
	const char *url = getenv("NEURON_COMPILE_CACHE_URL");
	opts.default_cache_dir = url && url[0] ? url : PJRT_DEFAULT_COMPILE_CACHE;
	if (strncmp(opts.default_cache_dir, "s3://", 5) == 0) {
		/* the SDK's remote cache; a local directory named "s3:" would surprise */
		if (!atomic_exchange(&g_cache_unusable, true))
			pjrt_log("warning: NEURON_COMPILE_CACHE_URL=%s: S3 caches are not supported "
				 "by neuronsim (use a local directory); compiling without the cache",
				 opts.default_cache_dir);
		opts.default_cache_dir = NULL;
	}
	if (atomic_load(&g_cache_unusable))
		opts.no_cache = true;
	ncc_compile_result_t res;
	memset(&res, 0, sizeof(res));
	ncc_error_t nerr;
	memset(&nerr, 0, sizeof(nerr));
	uint64_t t0 = ns_monotonic_ns();
	ncc_status_t st = strcmp(format, PJRT_FORMAT_HLO) == 0
				  ? ncc_compile_hlo_proto(code, size, name, &opts, &res, &nerr)
				  : ncc_compile_text((const char *)code, size, name, &opts, &res, &nerr);
	uint64_t ns = ns_monotonic_ns() - t0;
	if (res.cache_open_failed)
		atomic_store(&g_cache_unusable, true);
	if (st != NCC_OK) {
		ncc_compile_result_release(&res);
		return pjrt_error(pjrt_code_from_ncc(st), "neuronsim compiler (%s): %s: %s", format,
				  ncc_status_name(st), nerr.msg[0] ? nerr.msg : "(no message)");
	}
	log_cache(&res, format);
	if (res.cache_hit) {
		nrt_neuronsim_counter_add("CachedCompile", 1);
	} else {
		nrt_neuronsim_metric_add("CompileTime", NRT_NEURONSIM_METRIC_TIME_NS, (double)ns);
		nrt_neuronsim_counter_add("UncachedCompile", 1);
	}
	if (pjrt_trace_on())
		pjrt_log("compiled '%s' (%s, %zu bytes) to a %zu-byte NEFF in %.3f ms%s", name, format, size,
			 res.neff_size, (double)ns / 1e6, res.cache_hit ? " (compile cache hit)" : "");
	parts->neff = res.neff;
	parts->neff_size = res.neff_size;
	res.neff = NULL;
	ncc_compile_result_release(&res);
	return NULL;
}

static PJRT_Buffer_Type type_from_name(const char *s)
{
	for (int t = PJRT_Buffer_Type_PRED; t <= PJRT_Buffer_Type_F4E2M1FN; t++)
		if (strcmp(pjrt_type_name((PJRT_Buffer_Type)t), s) == 0)
			return (PJRT_Buffer_Type)t;
	return PJRT_Buffer_Type_INVALID;
}

static PJRT_Error *sig_from_ncc(const ncc_array_desc_t *d, size_t n, const char *what, pjrt_array_t **out)
{
	*out = calloc(n + 1, sizeof(pjrt_array_t));
	if (!*out)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	for (size_t i = 0; i < n; i++) {
		pjrt_array_t *a = &(*out)[i];
		a->type = type_from_name(d[i].etype);
		a->rank = (uint32_t)d[i].rank;
		if (d[i].rank > PJRT_MAX_RANK || pjrt_type_size(a->type) == 0)
			return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED, "%s %zu: element type %s is not supported",
					  what, i, d[i].etype);
		memcpy(a->dims, d[i].dims, (size_t)d[i].rank * sizeof(int64_t));
		if (!pjrt_device_bytes(a->type, a->rank, a->dims, &a->nbytes))
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s %zu: dimensions overflow", what, i);
	}
	return NULL;
}

/* Name and signature of HLO text, through the compiler's parser. */
static PJRT_Error *text_info(const uint8_t *code, size_t size, pjrt_exec_parts_t *parts)
{
	ncc_module_t *m = NULL;
	ncc_error_t nerr;
	memset(&nerr, 0, sizeof(nerr));
	ncc_status_t st = ncc_parse_hlo((const char *)code, size, "<hlo_text>", &m, &nerr);
	if (st == NCC_OK)
		st = ncc_verify(m, &nerr);
	ncc_array_desc_t *params = NULL, *results = NULL;
	size_t np = 0, nr = 0;
	if (st == NCC_OK)
		st = ncc_module_entry_signature(m, &params, &np, &results, &nr, &nerr);
	PJRT_Error *err = NULL;
	if (st != NCC_OK) {
		err = pjrt_error(pjrt_code_from_ncc(st), "neuronsim compiler (hlo_text): %s: %s", ncc_status_name(st),
				 nerr.msg);
	} else {
		parts->name = strdup(ncc_module_name(m) ? ncc_module_name(m) : "hlo_text");
		if (!parts->name)
			err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	}
	if (!err)
		err = sig_from_ncc(params, np, "parameter", &parts->sig.params);
	if (!err)
		err = sig_from_ncc(results, nr, "result leaf", &parts->sig.results);
	if (!err) {
		parts->sig.n_params = np;
		parts->sig.n_results = nr;
	}
	free(params);
	free(results);
	ncc_module_free(m);
	return err;
}

static bool format_is(const char *f, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(f, want, len) == 0;
}

PJRT_Error *pjrt_program_prepare(const char *format, size_t format_len, const uint8_t *code, size_t code_size,
				 const pjrt_compile_options_t *opts, const void *neff, size_t neff_size,
				 pjrt_exec_parts_t *parts)
{
	memset(parts, 0, sizeof(*parts));
	if (format_is(format, format_len, PJRT_FORMAT_MLIR))
		return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
				  "program format 'mlir' (MLIR/StableHLO) is not supported by the neuronsim "
				  "compiler, which reads XLA HLO: send format 'hlo' (a serialized "
				  "HloModuleProto; for PyTorch/XLA leave XLA_STABLEHLO_COMPILE unset) or "
				  "'hlo_text'");
	bool proto = format_is(format, format_len, PJRT_FORMAT_HLO);
	if (!proto && !format_is(format, format_len, PJRT_FORMAT_HLO_TEXT))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "unknown program format '%.*s': the neuronsim plugin compiles 'hlo' (a "
				  "serialized HloModuleProto) and 'hlo_text'",
				  (int)(format_len > 64 ? 64 : format_len), format);
	if (code_size == 0)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "the program is empty");
	if (code_size > NCC_PARSE_MAX_INPUT)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED,
				  "the program has %zu bytes, above the compiler's limit of %u", code_size,
				  NCC_PARSE_MAX_INPUT);
	PJRT_Error *err = NULL;
	parts->format = proto ? PJRT_FORMAT_HLO : PJRT_FORMAT_HLO_TEXT;
	parts->num_replicas = opts->num_replicas;
	parts->num_partitions = opts->num_partitions;
	parts->assignment = opts->assignment;
	parts->program = malloc(code_size);
	if (!parts->program) {
		err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
		goto fail;
	}
	memcpy(parts->program, code, code_size);
	parts->program_size = code_size;
	if (proto) {
		pjrt_hlo_info_t info;
		if ((err = pjrt_hlo_proto_info(code, code_size, &info)))
			goto fail;
		/* OptimizedProgram hands back what the framework gave, wrapped as
		 * "hlo_with_config": PyTorch/XLA reads its HloModule from it. */
		err = pjrt_hlo_with_config(code, code_size, &info, opts->num_replicas, opts->num_partitions,
					   &parts->optimized, &parts->optimized_size);
		parts->optimized_format = PJRT_FORMAT_HLO_WITH_CONFIG;
		parts->name = info.name;
		parts->sig = info.sig;
		info.name = NULL;
		memset(&info.sig, 0, sizeof(info.sig));
		pjrt_hlo_info_free(&info);
		if (err)
			goto fail;
	} else {
		if ((err = text_info(code, code_size, parts)))
			goto fail;
		parts->optimized = malloc(code_size);
		if (!parts->optimized) {
			err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
			goto fail;
		}
		memcpy(parts->optimized, code, code_size);
		parts->optimized_size = code_size;
		parts->optimized_format = PJRT_FORMAT_HLO_TEXT;
	}
	if (neff) {
		parts->neff = malloc(neff_size ? neff_size : 1);
		if (!parts->neff) {
			err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
			goto fail;
		}
		memcpy(parts->neff, neff, neff_size);
		parts->neff_size = neff_size;
	} else if (pjrt_analyze_dir()) {
		/* analyze mode: a report instead of a NEFF (analyze.h) */
		if ((err = pjrt_analyze_program(parts->format, code, code_size, parts->name)))
			goto fail;
	} else if ((err = run_ncc(parts->format, code, code_size, parts->name, parts))) {
		goto fail;
	}
	return NULL;
fail:
	pjrt_exec_parts_free(parts);
	return err;
}

PJRT_IMPL(Client_Compile)
{
	static const char fn[] = "PJRT_Client_Compile";
	PJRT_CHECK_ARGS(args, PJRT_Client_Compile_Args, executable);
	const PJRT_Program *prog = args->program;
	if (!prog)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program is NULL", fn);
	if (prog->struct_size < PJRT_STRUCT_SIZE(PJRT_Program, format_size))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "%s: program->struct_size %zu is smaller than %zu", fn, prog->struct_size,
				  (size_t)PJRT_STRUCT_SIZE(PJRT_Program, format_size));
	if ((prog->code_size && !prog->code) || (prog->format_size && !prog->format) ||
	    (args->compile_options_size && !args->compile_options))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "%s: program code, format or compile_options is NULL with a size", fn);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, fn);
	pjrt_compile_options_t opts;
	pjrt_exec_parts_t parts;
	memset(&parts, 0, sizeof(parts));
	pjrt_exec_t *e = NULL;
	PJRT_Error *err = pjrt_compile_options_decode((const uint8_t *)args->compile_options,
						      args->compile_options_size, &opts);
	if (err)
		goto out_client;
	if ((err = pjrt_compile_options_check(c, &opts)) ||
	    (err = pjrt_program_prepare(prog->format ? prog->format : "", prog->format_size,
					(const uint8_t *)prog->code, prog->code_size, &opts, NULL, 0, &parts)))
		goto out;
	if ((err = pjrt_exec_create(c, &parts, &e)))
		goto out;
	if ((err = pjrt_loaded_new(e, &args->executable)))
		pjrt_exec_unref(e);
out:
	pjrt_compile_options_free(&opts);
out_client:
	pjrt_handle_put(c->h);
	return err;
}
